/*
 * DETERMINISM=portable: every micro-kernel this CPU has (scalar fmaf,
 * AVX2+FMA, AVX-512, NEON) gives the bits of one fma chain per element in
 * k order, for any shape, transpose, alpha, beta and thread count; our
 * exp/log/cos/tanh/pow stay within 2 ulp of libm (and are libm's in the
 * default mode); a tiny training run gives the same bytes at 1 and 3
 * threads. With TRN_PORTABLE_WEIGHTS=path the run's weights are copied
 * there: tests/integration/trn_portable_cross.sh compares the x86-64 and
 * the aarch64 (qemu-user) files.
 */
#include "testutil_impl.h"
#include "testlib_trn.h"

#include "backend.h"
#include "portable.h"

/* The oracle: one fma chain per element, written out. */
static void chain_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                       const float *b, int ldb, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0;
            for (int p = 0; p < k; p++)
                acc = fmaf(ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p],
                           tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j], acc);
            float *o = c + (size_t)i * ldc + j;
            *o = beta == 0 ? alpha * acc : alpha * acc + beta * *o;
        }
}

/* (fmax in a loop makes aarch64 GCC 12 crash: vect_transform_reduction) */
static void worst_of(double *w, double v)
{
    if (v > *w || v != v) *w = v != v ? INFINITY : v;
}

static void fill(trn_rng *r, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = trn_rng_range(r, -1, 1);
}

static void kernels_match_the_fma_chain(void **state)
{
    (void)state;
    static const int shapes[][3] = {{1, 1, 1},   {3, 5, 7},    {7, 33, 65},  {13, 70, 129},
                                    {32, 300, 75}, {130, 40, 17}, {9, 257, 3}, {200, 520, 31}};
    trn_rng r;
    trn_rng_seed(&r, 3);
    int tested = 0;
    for (int kind = TRN_PK_SCALAR; kind < TRN_PK_COUNT; kind++) {
        if (trn_pgemm_force((trn_pk)kind) != 0) {
            printf("# kernel %s: not on this CPU or build\n", trn_pk_name((trn_pk)kind));
            continue;
        }
        tested++;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int t = 0; t < 4; t++) {
                int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], ta = t & 1, tb = t >> 1;
                int lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 1, ldc = n + 2;
                float alpha = t == 3 ? 0.5f : 1, beta = t == 1 ? 0.25f : t == 2 ? 1 : 0;
                size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb,
                       nc = (size_t)m * ldc;
                float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4),
                      *want = malloc(nc * 4);
                fill(&r, a, na);
                fill(&r, b, nb);
                fill(&r, c, nc);
                memcpy(want, c, nc * 4);
                chain_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
                trn_set_threads(1 + (int)(s % 3));
                trn_pgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
                if (memcmp(c, want, nc * 4) != 0)
                    fail_msg("kernel %s, %dx%dx%d ta %d tb %d: other bits than the fma chain",
                             trn_pk_name((trn_pk)kind), m, n, k, ta, tb);
                free(a);
                free(b);
                free(c);
                free(want);
            }
    }
    trn_pgemm_force(TRN_PK_AUTO);
    trn_set_threads(0);
    printf("# %d kernels checked; in use: %s\n", tested, trn_pk_name(trn_pgemm_kernel()));
    assert_true(tested >= 2); /* the scalar one and this ISA's vector one at least */
}

/* The backend's gemm goes through trn_pgemm in portable mode only. */
static void the_mode_selects_the_gemm(void **state)
{
    (void)state;
    int m = 20, n = 150, k = 300;
    float *a = malloc((size_t)m * k * 4), *b = malloc((size_t)k * n * 4), *c1 = calloc((size_t)m * n, 4),
          *c2 = calloc((size_t)m * n, 4);
    trn_rng r;
    trn_rng_seed(&r, 5);
    fill(&r, a, (size_t)m * k);
    fill(&r, b, (size_t)k * n);
    trn_set_determinism(TRN_DET_PORTABLE);
    assert_int_equal(trn_determinism(), TRN_DET_PORTABLE);
    trn_backend_cpu.gemm(&trn_backend_cpu, 0, 0, m, n, k, 1, a, k, b, n, 0, c1, n);
    chain_gemm(0, 0, m, n, k, 1, a, k, b, n, 0, c2, n);
    assert_memory_equal(c1, c2, (size_t)m * n * 4);
    trn_set_determinism(TRN_DET_DEFAULT);
    trn_backend_cpu.gemm(&trn_backend_cpu, 0, 0, m, n, k, 1, a, k, b, n, 0, c1, n);
    double worst = 0;
    for (int i = 0; i < m * n; i++) worst_of(&worst, fabs((double)c1[i] - c2[i]));
    assert_true(worst < 1e-4); /* OpenBLAS: another order, same product */
    assert_int_equal(trn_det_parse("portable"), TRN_DET_PORTABLE);
    assert_int_equal(trn_det_parse("default"), TRN_DET_DEFAULT);
    assert_int_equal(trn_det_parse("fast"), -1);
    free(a);
    free(b);
    free(c1);
    free(c2);
}

static double ulps(float got, float want)
{
    if (got == want || (isnan(got) && isnan(want))) return 0;
    if (isinf(got) || isinf(want)) return 1e9;
    int e;
    frexpf(want, &e);
    return fabs((double)got - want) / ldexp(1.0, e - 24);
}

/* Ours against libm over sweeps: within 2 ulp; special values exact. */
static void math_is_close_to_libm(void **state)
{
    (void)state;
    double worst[5] = {0};
    trn_set_determinism(TRN_DET_PORTABLE);
    for (int i = 0; i <= 200000; i++) {
        float x = -87 + 174 * (float)i / 200000;          /* exp's float range */
        float y = ldexpf(1 + (float)(i % 1000) / 1000, i / 1000 - 100); /* 2^-100 .. 2^100 */
        float u = 6.2831853f * (float)i / 200000;          /* Box-Muller's angles */
        float t = -12 + 24 * (float)i / 200000;
        worst_of(&worst[0], ulps(trn_expf(x), expf(x)));
        worst_of(&worst[1], ulps(trn_logf(y), logf(y)));
        worst_of(&worst[2], fabs((double)trn_cosf(u) - cosf(u)) / 5.96e-8); /* absolute near 0 */
        worst_of(&worst[3], ulps(trn_tanhf(t), tanhf(t)));
        float b = 0.01f + (float)(i % 997) / 100, p = -3 + (float)(i % 613) / 100;
        worst_of(&worst[4], ulps(trn_powf(b, p), powf(b, p)));
    }
    printf("# worst error against libm: exp %.2f ulp, log %.2f ulp, cos %.2f x 2^-24, tanh %.2f "
           "ulp, pow %.2f ulp\n", worst[0], worst[1], worst[2], worst[3], worst[4]);
    for (int f = 0; f < 5; f++) assert_true(worst[f] <= 2);
    assert_true(trn_expf(-INFINITY) == 0 && isinf(trn_expf(INFINITY)) && isnan(trn_expf(NAN)));
    assert_true(trn_logf(1) == 0 && isinf(trn_logf(0)) && isnan(trn_logf(-1)));
    assert_true(trn_cosf(0) == 1 && trn_tanhf(30) == 1 && trn_tanhf(-30) == -1);
    assert_true(trn_powf(0, 2) == 0 && trn_powf(5, 0) == 1 && trn_powf(-2, 3) == -8);
    assert_true(fabs(trn_exp(1) - M_E) < 1e-15);
    assert_true(fabs(trn_pow(4, -1.5) - 0.125) < 1e-16);
    trn_set_determinism(TRN_DET_DEFAULT);
    for (int i = 0; i < 1000; i++) {
        float x = -20 + (float)i / 25;
        assert_true(trn_expf(x) == expf(x) && trn_tanhf(x) == tanhf(x));
    }
}

/* A tiny net that uses every libm function the trainer calls: the
 * initialiser's Box-Muller (log, cos), logistic (exp), softmax (exp), the
 * cross-entropy (log), batch norm's backward (pow), the poly policy
 * (pow). */
static const char *cfg =
    "[net]\nbatch=8\nsubdivisions=1\nheight=10\nwidth=10\nchannels=3\n"
    "learning_rate=0.05\nmomentum=0.9\ndecay=0.0005\nburn_in=3\npolicy=poly\npower=2\n"
    "max_batches=12\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nbatch_normalize=1\nfilters=12\nsize=3\npad=1\nactivation=logistic\n"
    "[connected]\noutput=16\nactivation=tanh\n"
    "[dropout]\nprobability=0.2\n"
    "[connected]\noutput=5\nactivation=linear\n"
    "[softmax]\n";

static int next_batch(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    (void)ctx;
    (void)err;
    trn_rng r;
    trn_rng_seed(&r, 1000 + index);
    for (int i = 0; i < 8 * 3 * 10 * 10; i++) x[i] = trn_rng_range(&r, 0, 1);
    memset(y, 0, 8 * 5 * sizeof *y);
    for (int b = 0; b < 8; b++) {
        int k = (int)trn_rng_below(&r, 5);
        y[b * 5 + k] = 1;
        for (int i = 0; i < 20; i++) x[b * 300 + k * 20 + i] += 1; /* learnable */
    }
    return 0;
}

static void train_portable(const char *dir, int threads)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.seed = 77;
    trn_set_determinism(TRN_DET_PORTABLE);
    trn_set_threads(threads);
    trn_net *net = tl_net(cfg, &o);
    assert_non_null(net);
    trn_train_opts t = {.next_batch = next_batch, .backup_dir = dir, .base = "p"};
    trn_err e;
    if (trn_train(net, &t, &e) != 0) fail_msg("%s", e.msg);
    trn_net_free(net);
    trn_set_threads(0);
    trn_set_determinism(TRN_DET_DEFAULT);
}

static void portable_training_bytes(void **state)
{
    (void)state;
    char d1[512], d3[512], w1[600], w3[600];
    snprintf(d1, sizeof d1, "%s", tl_path("p1"));
    snprintf(d3, sizeof d3, "%s", tl_path("p3"));
    train_portable(d1, 1);
    train_portable(d3, 3);
    snprintf(w1, sizeof w1, "%s/p.weights", d1);
    snprintf(w3, sizeof w3, "%s/p.weights", d3);
    assert_true(tl_same_file(w1, w3));
    const char *out = getenv("TRN_PORTABLE_WEIGHTS");
    if (out && *out) {
        size_t len;
        char *buf = tl_read(w1, &len);
        assert_non_null(buf);
        assert_int_equal(tl_write(out, buf, len), 0);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernels_match_the_fma_chain),
        cmocka_unit_test(the_mode_selects_the_gemm),
        cmocka_unit_test(math_is_close_to_libm),
        cmocka_unit_test(portable_training_bytes),
    };
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    int rc = cmocka_run_group_tests_name("trn_portable", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
