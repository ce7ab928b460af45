/* Unit tests of the engine's traffic model (trn_net_layer_traffic,
 * trn_net_traffic_bytes): per-layer bytes read and written, hand-computed
 * for one network with every way a layer reads (previous layer,
 * parameters, other layers, only other layers, in place); and the backend
 * seam's context: every kernel gets the table it is called through. */
#include "testutil_impl.h"
#include "testlib_trn.h"

#include "backend.h"

static void traffic_per_layer(void **state)
{
    (void)state;
    trn_net *net = tl_net("[net]\nbatch=2\nheight=8\nwidth=8\nchannels=3\n"
                          "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=relu\n" /* 0 */
                          "[dropout]\nprobability=0.5\n"                                  /* 1 */
                          "[convolutional]\nfilters=4\nsize=1\nactivation=linear\n"       /* 2 */
                          "[shortcut]\nfrom=0\nactivation=linear\n"                       /* 3 */
                          "[route]\nlayers=0,2\n"                                         /* 4 */
                          "[maxpool]\nsize=2\nstride=2\n",                                /* 5 */
                          NULL);
    assert_non_null(net);
    /* Floats at batch 1: reads (input + others + parameters), writes. */
    const uint64_t reads[] = {192 + 4 * 3 * 9 + 4, 0, 256 + 16 + 4, 256 + 256, 256 + 256, 512};
    const uint64_t writes[] = {256, 0, 256, 256, 512, 128};
    uint64_t sum = 0;
    for (int i = 0; i < 6; i++) {
        trn_layer_traffic t;
        assert_int_equal(trn_net_layer_traffic(net, i, &t), 0);
        if (t.read_bytes != 4 * reads[i] || t.write_bytes != 4 * writes[i])
            fail_msg("layer %d: read %llu written %llu bytes, expected %llu and %llu", i,
                     (unsigned long long)t.read_bytes, (unsigned long long)t.write_bytes,
                     (unsigned long long)(4 * reads[i]), (unsigned long long)(4 * writes[i]));
        sum += 4 * (reads[i] + writes[i]);
    }
    assert_true(trn_net_traffic_bytes(net) == sum);
    assert_true(sum == 4 * 3524);
    trn_net_totals tot;
    trn_net_get_totals(net, &tot);
    assert_true(tot.traffic_bytes == sum);
    trn_layer_traffic t;
    assert_int_equal(trn_net_layer_traffic(net, 6, &t), -1);
    assert_int_equal(trn_net_layer_traffic(net, -1, &t), -1);
    trn_net_free(net);
}

/* A table that wraps the CPU one: its gemm and activate check that they
 * get this table (and through it its ctx), then call the CPU kernels. The
 * convolution kernels call gemm per tile from the pool's threads: the
 * counts are atomic. */
typedef struct wrapped {
    trn_backend be;
    int gemms, activates, wrong;
} wrapped;
static void w_gemm(const trn_backend *be, int ta, int tb, int m, int n, int k, float alpha,
                   const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc)
{
    wrapped *w = (wrapped *)be->ctx;
    __atomic_fetch_add(&w->gemms, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&w->wrong, be != &w->be, __ATOMIC_RELAXED);
    trn_backend_cpu.gemm(&trn_backend_cpu, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void w_activate(const trn_backend *be, float *x, size_t n, trn_activation a)
{
    wrapped *w = (wrapped *)be->ctx;
    w->activates++;
    w->wrong += be != &w->be;
    trn_backend_cpu.activate(&trn_backend_cpu, x, n, a);
}

static void kernels_get_their_table(void **state)
{
    (void)state;
    trn_net *net = tl_net(tl_all_kinds, NULL);
    assert_non_null(net);
    tl_randomize(net, 7);
    size_t in = trn_net_inputs(net), outs = trn_net_outputs(net);
    int batch = trn_net_batch(net);
    float *x = malloc((size_t)batch * in * sizeof *x), *y = calloc((size_t)batch * outs, sizeof *y);
    tl_fill_uniform(x, (size_t)batch * in, 3, 0, 1);
    tl_one_hot(y, batch, (int)outs, 4);
    trn_err e;
    assert_int_equal(trn_net_forward(net, x, &e), 0);
    float *plain = malloc((size_t)batch * outs * sizeof *plain);
    memcpy(plain, trn_net_output(net), (size_t)batch * outs * sizeof *plain);
    wrapped w = {.be = trn_backend_cpu};
    w.be.ctx = &w;
    w.be.gemm = w_gemm;
    w.be.activate = w_activate;
    const trn_backend *old = trn_net_swap_backend(net, &w.be);
    assert_int_equal(trn_net_forward(net, x, &e), 0);
    assert_memory_equal(plain, trn_net_output(net), (size_t)batch * outs * sizeof *plain);
    int fwd = w.gemms;
    assert_true(fwd > 0 && w.activates > 0);
    assert_int_equal(trn_net_train_step(net, x, y, NULL, &e), 0);
    assert_true(w.gemms > 2 * fwd); /* the backward's products too */
    assert_int_equal(w.wrong, 0);
    assert_ptr_equal(trn_net_swap_backend(net, old), &w.be);
    free(x), free(y), free(plain);
    trn_net_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traffic_per_layer),
        cmocka_unit_test(kernels_get_their_table),
    };
    int rc = cmocka_run_group_tests_name("trn_count", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
