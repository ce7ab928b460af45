/*
 * cli_bench.c: `trainer bench`: images/s and GFLOPS of the forward (batch
 * 1 by default) and of a training step (forward + backward + update) on
 * random data, the convolution layers' effective GFLOPS inside the
 * training step, and the machine's ceiling as the yardstick: the best N x N
 * product any path reaches (bench_peak.c), beside OpenBLAS as loaded.
 * With the training step also the products of one step, shape by shape:
 * the default (OpenBLAS) gemm against the portable one (portable.c) on the
 * same shapes and threads, in the same run.
 */
#include "cli.h"
#include "clikit.h"

#include "backend.h"
#include "bench_kernels.h"
#include "bench_peak.h"
#include "portable.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Rounds of the memory yardsticks after the warm-up (the best counts:
 * another process's traffic only ever slows a round down). */
#define COPY_REPS 10

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *random_floats(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) return NULL;
    trn_rng r;
    trn_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = trn_rng_range(&r, lo, hi);
    return x;
}

/* The memory bandwidth yardstick: a copy of `mb` MiB into another buffer,
 * cut into 1 MiB pieces spread over the threads; bytes read plus bytes
 * written per second (STREAM's convention for its copy), best of `reps`
 * after a warm-up. Both buffers are written first (every page faulted in
 * before the clock starts). On x86-64 the copy stores with non-temporal
 * (streaming) stores, as STREAM's copy does when compiled for bandwidth:
 * the bytes counted are then the bytes that move. memcpy of a 1 MiB piece
 * stores through the cache, and each destination line is first read (a
 * write-allocate): 3 bytes moved per 2 counted, and how much of that the
 * caches absorbed changed from run to run (23..39 GB/s on the 2-core EPYC
 * in one evening; under load 5..6, interleaved, memcpy 12..20 GB/s and
 * the streaming copy 30..34). */
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct copyctx {
    const char *src;
    char *dst;
    size_t piece, n;
} copyctx;

static void copy_piece(void *p, int i)
{
    const copyctx *c = p;
    size_t lo = (size_t)i * c->piece, len = c->n - lo < c->piece ? c->n - lo : c->piece;
#if defined(__SSE2__)
    /* The buffers are 64-byte aligned and the pieces whole MiB (the last
     * one a multiple of 64 bytes too), so every access is an aligned
     * 16-byte one and nothing is left over. */
    const __m128i *s = (const __m128i *)(const void *)(c->src + lo);
    __m128i *d = (__m128i *)(void *)(c->dst + lo);
    for (size_t j = 0; j + 4 <= len / 16; j += 4) {
        __m128i x0 = _mm_load_si128(s + j), x1 = _mm_load_si128(s + j + 1);
        __m128i x2 = _mm_load_si128(s + j + 2), x3 = _mm_load_si128(s + j + 3);
        _mm_stream_si128(d + j, x0);
        _mm_stream_si128(d + j + 1, x1);
        _mm_stream_si128(d + j + 2, x2);
        _mm_stream_si128(d + j + 3, x3);
    }
    _mm_sfence();
#else
    memcpy(c->dst + lo, c->src + lo, len);
#endif
}

static double copy_gbps(int mb, int reps)
{
    size_t n = (size_t)mb << 20;
    void *src = NULL, *dst = NULL;
    if (posix_memalign(&src, 64, n) != 0) src = NULL;
    if (posix_memalign(&dst, 64, n) != 0) dst = NULL;
    double best = 0;
    if (src && dst) {
        memset(src, 1, n);
        memset(dst, 2, n);
        copyctx c = {src, dst, (size_t)1 << 20, n};
        int pieces = (int)((n + c.piece - 1) / c.piece);
        for (int r = 0; r <= reps; r++) {
            double t0 = now_s();
            trn_parallel_for(pieces, copy_piece, &c);
            double g = 2.0 * (double)n / (now_s() - t0) / 1e9;
            if (r && g > best) best = g; /* the first round warms up */
        }
    }
    free(src), free(dst);
    return best;
}

/* ---- the forward's layers against the yardsticks ------------------------ */

typedef struct fwd_layer {
    trn_layer_kind kind;
    double t;            /* seconds per forward */
    double flops, bytes; /* per forward; bytes: the weights */
} fwd_layer;

/* Every layer's forward time; a convolution's against its FLOPs at the
 * ceiling, a connected layer's against its weight bytes (each read once
 * per forward) at the copy rate; then the sums by kind and the time
 * outside the layers. */
static void print_fwd_layers(const fwd_layer *fl, int n, long long fb, double fwd_s, double sgf, double cbw)
{
    double conv = 0, conv_at = 0, fc = 0, fc_at = 0, rest = 0;
    printf("forward  batch %3lld, layer by layer (ms per forward; at the yardstick: the time at the ceiling\n"
           "         of its FLOPs, or at the copy rate of its weight bytes for a connected layer):\n", fb);
    for (int i = 0; i < n; i++) {
        const fwd_layer *l = &fl[i];
        printf("  layer %2d %-14s forward %8.2f ms", i, trn_layer_kind_name(l->kind), 1e3 * l->t);
        if (l->kind == TRN_LAYER_CONNECTED) {
            double at = cbw > 0 ? l->bytes / (cbw * 1e9) : 0;
            printf("  %7.1f MB of weights: %6.2f GB/s read (at the copy rate %.2f ms: %.2fx)", 1e-6 * l->bytes,
                   l->t > 0 ? l->bytes / l->t / 1e9 : 0, 1e3 * at, at > 0 ? l->t / at : 0);
            fc += l->t, fc_at += at;
        } else if (l->flops > 0) {
            double at = sgf > 0 ? l->flops / (sgf * 1e9) : 0;
            printf("  %7.2f GFLOPS (at the ceiling %.2f ms: %.2fx)", l->t > 0 ? l->flops / l->t / 1e9 : 0, 1e3 * at,
                   at > 0 ? l->t / at : 0);
            if (l->kind == TRN_LAYER_CONVOLUTIONAL)
                conv += l->t, conv_at += at;
            else
                rest += l->t;
        } else {
            rest += l->t;
        }
        printf("\n");
    }
    printf("  convolutions %.2f ms (%.2f at the ceiling), connected %.2f ms (%.2f at the copy rate), "
           "the other layers %.2f ms, outside the layers %.2f ms, of %.2f ms\n",
           1e3 * conv, 1e3 * conv_at, 1e3 * fc, 1e3 * fc_at, 1e3 * rest, 1e3 * (fwd_s - conv - fc - rest), 1e3 * fwd_s);
}

/* ---- the training step's products, shape by shape ---------------------- */

typedef struct gshape {
    int ta, tb, m, n, k, beta;
    int count;
} gshape;

static struct {
    const trn_backend *inner;
    gshape *s;
    int n, cap, oom;
    pthread_mutex_t mu;
} rec = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The convolution kernels call gemm per tile from the pool's threads. */
static void rec_gemm(TRN_BE, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc)
{
    pthread_mutex_lock(&rec.mu);
    int i = 0;
    while (i < rec.n && !(rec.s[i].ta == ta && rec.s[i].tb == tb && rec.s[i].m == m &&
                          rec.s[i].n == n && rec.s[i].k == k && rec.s[i].beta == (beta != 0)))
        i++;
    if (i == rec.n && rec.n == rec.cap) {
        gshape *g = realloc(rec.s, (size_t)(rec.cap * 2 + 16) * sizeof *g);
        if (g) rec.s = g, rec.cap = rec.cap * 2 + 16;
    }
    if (i < rec.cap) {
        if (i == rec.n) rec.s[rec.n++] = (gshape){ta, tb, m, n, k, beta != 0, 0};
        rec.s[i].count++;
    } else {
        rec.oom = 1;
    }
    pthread_mutex_unlock(&rec.mu);
    rec.inner->gemm(rec.inner, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* Replays the recorded calls: every call of a step is one item of a pool
 * job (the products of a step run side by side, as the convolutions'
 * tiles do), each writing its own part of c. */
typedef struct replay {
    const int *shape;    /* the call's shape */
    const size_t *c_off; /* its output's offset in c */
    const float *a, *b;
    float *c;
} replay;

static void replay_call(void *p, int i)
{
    const replay *r = p;
    const gshape *g = &rec.s[r->shape[i]];
    trn_backend_cpu.gemm(&trn_backend_cpu, g->ta, g->tb, g->m, g->n, g->k, 1, r->a, g->ta ? g->m : g->k, r->b,
                         g->tb ? g->k : g->n, g->beta ? 1 : 0, r->c + r->c_off[i], g->n);
}

/* Times the recorded calls (each shape as often as a step calls it) with
 * the default gemm and with the portable one, interleaved, best of `reps`;
 * GFLOPS of each into *openblas and *portable. Returns the calls per
 * step, or -1 when out of memory. */
static int gemm_shapes(int reps, double *openblas, double *portable)
{
    size_t big = 0, cs = 0;
    int calls = 0;
    double flops = 0;
    for (int i = 0; i < rec.n; i++) {
        gshape *g = &rec.s[i];
        size_t need = (size_t)g->m * g->k + (size_t)g->k * g->n;
        if (need > big) big = need;
        calls += g->count;
        cs += (size_t)g->m * g->n * g->count;
        flops += 2.0 * g->m * g->n * (double)g->k * g->count;
    }
    float *buf = random_floats(big, 9, -1, 1), *c = calloc(cs ? cs : 1, sizeof *c);
    int *shape = malloc((calls ? calls : 1) * sizeof *shape);
    size_t *off = malloc((calls ? calls : 1) * sizeof *off);
    if (!buf || !c || !shape || !off) {
        free(buf), free(c), free(shape), free(off);
        return -1;
    }
    for (int i = 0, q = 0; i < rec.n; i++)
        for (int j = 0; j < rec.s[i].count; j++, q++) {
            shape[q] = i;
            off[q] = q ? off[q - 1] + (size_t)rec.s[shape[q - 1]].m * rec.s[shape[q - 1]].n : 0;
        }
    replay r = {shape, off, buf, buf, c};
    double best[2] = {0, 0};
    trn_det_mode was = trn_determinism();
    for (int rep = 0; rep <= reps; rep++)
        for (int mode = 0; mode < 2; mode++) {
            trn_set_determinism(mode ? TRN_DET_PORTABLE : TRN_DET_DEFAULT);
            double t0 = now_s();
            trn_parallel_for(calls, replay_call, &r);
            double gf = flops / (now_s() - t0) / 1e9;
            if (rep && gf > best[mode]) best[mode] = gf; /* the first round warms up */
        }
    trn_set_determinism(was);
    free(buf), free(c), free(shape), free(off);
    *openblas = best[0];
    *portable = best[1];
    return calls;
}

/* The GEMM path this process runs (gemm_path.c), with a warning when
 * OpenBLAS's core type is below what the CPU's features call for. */
static void print_gemm_path(const trn_gemm_info *g)
{
    printf("blas     OpenBLAS core type %s (picked at load: %s%s); the CPU's features (%s) call for %s; "
           "products on %s\n",
           g->openblas_core, g->openblas_loaded, g->explicit_core ? ", by OPENBLAS_CORETYPE" : "", g->cpu_isa,
           g->cpu_core, g->products);
    if (g->below)
        printf("WARNING: OpenBLAS runs its %s kernels, below this CPU's ISA (%s)%s\n", g->openblas_core, g->cpu_isa,
               g->explicit_core ? ": OPENBLAS_CORETYPE is set; unset it unless this OpenBLAS crashes without it" : "");
}

/* The ceiling, what it is the best of, and the cores' peak multiply-adds. */
static void print_ceiling(const bp_ceiling *c, const bp_fma *f, const trn_gemm_info *g, long long n)
{
    printf("ceiling  %lldx%lldx%lld: %7.2f GFLOPS (%s, %d threads): the best of OpenBLAS as loaded (%s) %.2f, "
           "OpenBLAS %s %.2f, our %s kernels %.2f\n",
           n, n, n, c->ceiling, c->path, trn_threads(), g->openblas_core, c->openblas, g->cpu_core,
           c->openblas_features, trn_pk_name(trn_pgemm_kernel()), c->own);
    printf("peak     multiply-adds in registers, %d threads: AVX-512 %.1f, AVX2+FMA %.1f, SSE %.1f, NEON %.1f GFLOPS "
           "(0: not on this CPU; for information)\n",
           trn_threads(), f->avx512, f->avx2, f->sse, f->neon);
}

int cli_bench(int argc, char **argv)
{
    const char *cfg = NULL, *threads = NULL, *operand = NULL;
    ck_list set = {.n = 0};
    long long fb = 1, batch = 0, iters = 5, sg = 2048, copy_mb = 256;
    int json = 0, no_train = 0, layers = 0, no_gemm = 0, no_winograd = 0, rc0;
    const char *det = NULL;
    const ck_opt opts[] = {
        {"--cfg", "FILE", CK_STR, &cfg, 0, 0, "the network (Darknet cfg); may be given without --cfg"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "override a [net] key first (repeatable)"},
        {"--forward-batch", "N", CK_INT, &fb, 1, 4096, "images per forward (default 1)"},
        {"--batch", "N", CK_INT, &batch, 1, 4096, "images per training step"},
        {"--iterations", "N", CK_INT, &iters, 1, 100000, "timed repetitions of each (default 5; one warm-up run first)"},
        {"--sgemm", "N", CK_INT, &sg, 0, 16384, "size of the ceiling's product (default 2048; 0: skip)"},
        {"--copy", "MIB", CK_INT, &copy_mb, 0, 65536,
         "size of the memory-bandwidth yardstick, a copy of MIB MiB (default 256; 0: skip)"},
        {"--no-train", NULL, CK_FLAG, &no_train, 0, 0, "skip the training step (and the gemm shapes)"},
        {"--no-gemm", NULL, CK_FLAG, &no_gemm, 0, 0, "skip the gemm shapes"},
        {"--no-winograd", NULL, CK_FLAG, &no_winograd, 0, 0,
         "inference forwards without Winograd's F(2x2, 3x3) and F(2x2, 5x5)\n"
         "(trn_set_winograd(0)): "
         "every convolution by its im2col product, as in training"},
        {"--layers", NULL, CK_FLAG, &layers, 0, 0,
         "print every layer's forward time against the yardsticks (a\n"
         "convolution's FLOPs at the ceiling, a connected layer's weight\n"
         "bytes at the copy rate), every layer's forward and backward time\n"
         "in the step, and where it goes: every kernel's time per layer and pass"},
        {"--threads", "N", CK_STR, &threads, 0, 0, "threads (default: THREADS, else all cores)"},
        {"--determinism", "MODE", CK_STR, &det, 0, 0, CLI_DETERMINISM_DOC},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object: forward_images_per_s, forward_gflops,\n"
         "train_images_per_s, train_gflops, conv_train_gflops, sgemm_gflops\n"
         "(OpenBLAS as loaded), ceiling_gflops, ceiling_path,\n"
         "openblas_features_gflops, own_gflops, fma_avx512_gflops,\n"
         "fma_avx2_gflops, fma_sse_gflops, fma_neon_gflops, cpu_isa, cpu_core,\n"
         "openblas_loaded, openblas_core, openblas_below, openblas_explicit, products,\n"
         "copy_gbps, weight_bytes, forward_bound_s, forward_vs_bound,\n"
         "forward_seq_bound_s (the phases one after the other, below),\n"
         "gemm_calls, gemm_openblas_gflops, gemm_portable_gflops, gemm_kernel"},
        {0},
    };
    const ck_verb verb = {
        "bench", NULL, cli_bench, "[--cfg] FILE.cfg [OPTIONS]",
        "Measures on random input and random weights (nothing is read or written):\n"
        "  forward   inference at --forward-batch images (default 1)\n"
        "  train     training steps (forward, backward, update) at --batch images\n"
        "            (default: the cfg's batch / subdivisions), with the convolution\n"
        "            layers' effective GFLOPS (their forward and backward FLOPs over their time)\n"
        "  ceiling   the best single-precision N x N x N product on all threads (--sgemm N,\n"
        "            default 2048; 0: skip) of OpenBLAS as loaded, OpenBLAS with the core\n"
        "            type the CPU's features call for, and our own kernels; the peak\n"
        "            multiply-add rate per ISA level (for information); the OpenBLAS core\n"
        "            type in use, with a warning when it is below the CPU's ISA\n"
        "  copy      memory bandwidth: a copy of --copy MiB (default 256; 0: skip), read plus\n"
        "            written bytes per second; the forward's bound is the larger of its\n"
        "            FLOPs at the ceiling and its weight bytes at the copy rate; printed\n"
        "            beside it (not a bar): the other layers' FLOPs at the ceiling plus\n"
        "            the connected layers' weight bytes at the copy rate, one after the other\n"
        "  gemm      the matrix products of one training step, shape by shape (their\n"
        "            total GFLOPS): OpenBLAS (default mode) against the portable GEMM\n",
        opts, NULL,
    };
    if (ck_parse("trainer", &verb, argc, argv, &operand, 1, &rc0) < 0) return rc0;
    if (operand && cfg) return cli_usage("bench", "unexpected argument '%s' (the cfg is given by --cfg)", operand);
    if (!cfg) cfg = operand;
    int train = !no_train;
    cli_sets sets = {0};
    for (int i = 0; i < set.n; i++)
        if (cli_add_set(&sets, "bench", set.v[i])) return 2;
    if (!cfg) return cli_usage("bench", "no cfg given");
    int setrc = cli_check_sets("bench", cfg, &sets);
    if (setrc) return setrc;
    if (cli_determinism("bench", det)) return 2;
    if (cli_threads("bench", threads)) return 2;
    trn_set_winograd(!no_winograd);
    trn_cfg *c = cli_cfg("bench", cfg, &sets);
    if (!c) return 1;
    trn_err e;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = (int)fb;
    o.infer_only = 1;
    trn_net *net = trn_net_create(c, &o, &e);
    if (!net) {
        trn_cfg_free(c);
        return cli_fail("bench", "%s", e.msg);
    }
    trn_net_totals tot;
    trn_net_get_totals(net, &tot);
    size_t nin = (size_t)fb * trn_net_inputs(net);
    float *x = random_floats(nin, 3, 0, 1);
    double t = 0;
    for (long long r = 0; r <= iters && x; r++) {
        if (r == 1) trn_net_profile(net, 1);
        double t0 = now_s();
        if (trn_net_forward(net, x, &e) != 0) break;
        if (r) t += now_s() - t0;
    }
    /* For the bound of the two phases one after the other: the FLOPs of the
     * layers other than the connected ones, and the connected layers' weight
     * bytes (each weight is read once per forward at batch 1). */
    double other_flops = 0, fc_bytes = 0;
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        if (in.kind == TRN_LAYER_CONNECTED)
            fc_bytes += 4.0 * (double)in.params;
        else
            other_flops += 2.0 * (double)in.macs * (double)fb;
    }
    /* The forward's layers, printed against the yardsticks once they are
     * measured (below). */
    int nfl = layers && !json ? trn_net_layers(net) : 0;
    fwd_layer *fl = nfl ? calloc((size_t)nfl, sizeof *fl) : NULL;
    for (int i = 0; fl && i < nfl; i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        trn_net_layer_time(net, i, &fl[i].t, NULL);
        fl[i].t /= (double)iters;
        fl[i].kind = in.kind;
        fl[i].flops = 2.0 * (double)in.macs * (double)fb;
        fl[i].bytes = 4.0 * (double)in.params;
    }
    free(x);
    trn_net_free(net);
    double f_ips = t > 0 ? (double)fb * iters / t : 0, f_gf = f_ips * 2.0 * tot.macs / 1e9;
    if (!json)
        printf("forward  batch %3lld: %9.2f images/s  %7.2f GFLOPS  (%lld runs, %.3f s each)\n", fb,
               f_ips, f_gf, iters, iters ? t / iters : 0);
    double t_ips = 0, t_gf = 0, conv_gf = 0, conv_share = 0, g_ob = 0, g_pg = 0;
    int gcalls = -1;
    long long train_b = 0;
    if (train) {
        o.batch = (int)batch;
        o.infer_only = 0;
        net = trn_net_create(c, &o, &e);
        if (!net) {
            trn_cfg_free(c);
            return cli_fail("bench", "%s", e.msg);
        }
        int b = trn_net_batch(net);
        train_b = b;
        size_t nx = (size_t)b * trn_net_inputs(net), ny = (size_t)b * trn_net_outputs(net);
        float *tx = random_floats(nx, 4, 0, 1), *ty = calloc(ny ? ny : 1, sizeof *ty);
        for (int k = 0; k < b && ty; k++) ty[(size_t)k * trn_net_outputs(net) + (size_t)k % trn_net_outputs(net)] = 1;
        t = 0;
        for (long long r = 0; r <= iters && tx && ty; r++) {
            if (r == 1) trn_net_profile(net, 1);
            double t0 = now_s();
            if (trn_net_train_step(net, tx, ty, NULL, &e) != 0) {
                free(tx), free(ty), trn_net_free(net), trn_cfg_free(c);
                return cli_fail("bench", "%s", e.msg);
            }
            if (r) t += now_s() - t0;
        }
        /* The layer times are those of the timed steps only. */
        trn_net_profile(net, 0);
        if (layers && !json && tx && ty && bk_run(net, tx, ty, (int)iters, stdout, &e) != 0) {
            free(tx), free(ty), trn_net_free(net), trn_cfg_free(c);
            return cli_fail("bench", "%s", e.msg);
        }
        /* One more step with the products recorded. */
        rec.inner = trn_net_swap_backend(net, NULL);
        trn_backend recording = *rec.inner;
        recording.gemm = rec_gemm;
        trn_net_swap_backend(net, &recording);
        int stepped = !no_gemm && tx && ty && trn_net_train_step(net, tx, ty, NULL, &e) == 0;
        trn_net_swap_backend(net, rec.inner);
        if (stepped && !rec.oom) gcalls = gemm_shapes((int)(iters < 3 ? 3 : iters), &g_ob, &g_pg);
        /* Convolution FLOPs per image in a step: forward, weight gradient
         * and (except where no gradient flows on) input gradient. */
        double conv_flops = 0, conv_t = 0, layers_t = 0;
        for (int i = 0; i < trn_net_layers(net); i++) {
            trn_layer_info in;
            trn_net_layer_info(net, i, &in);
            double tf, tb;
            trn_net_layer_time(net, i, &tf, &tb);
            int passes = trn_net_layer_delta(net, i - 1) ? 3 : 2;
            layers_t += tf + tb;
            if (layers && !json)
                printf("  layer %2d %-14s forward %8.2f ms  backward %8.2f ms  %7.2f GFLOPS\n", i,
                       trn_layer_kind_name(in.kind), 1e3 * tf / iters, 1e3 * tb / iters,
                       tf + tb > 0 ? 2.0 * in.macs * passes * b * iters / (tf + tb) / 1e9 : 0);
            if (in.kind != TRN_LAYER_CONVOLUTIONAL) continue;
            conv_flops += 2.0 * in.macs * passes;
            conv_t += tf + tb;
        }
        if (layers && !json)
            printf("  update and the rest  %8.2f ms\n", 1e3 * (t - layers_t) / iters);
        t_ips = t > 0 ? (double)b * iters / t : 0;
        t_gf = t_ips * 2.0 * tot.macs * 3 / 1e9;
        conv_gf = conv_t > 0 ? conv_flops * b * iters / conv_t / 1e9 : 0;
        conv_share = t > 0 ? conv_t / t : 0;
        if (!json)
            printf("train    batch %3d: %9.2f images/s  %7.2f GFLOPS  (%lld steps, %.3f s each); "
                   "convolutions %.2f GFLOPS, %.0f%% of the step\n",
                   b, t_ips, t_gf, iters, iters ? t / iters : 0, conv_gf, 100 * conv_share);
        if (!json && gcalls > 0)
            printf("gemm     %d products of one step (%d shapes): OpenBLAS %.2f GFLOPS, portable "
                   "%.2f GFLOPS (%s kernel) = %.0f%%, %d threads\n",
                   gcalls, rec.n, g_ob, g_pg, trn_pk_name(trn_pgemm_kernel()),
                   g_ob > 0 ? 100 * g_pg / g_ob : 0, trn_threads());
        free(tx), free(ty);
        trn_net_free(net);
    }
    free(rec.s);
    trn_cfg_free(c);
    trn_gemm_info gi;
    trn_gemm_info_get(&gi);
    if (!json) print_gemm_path(&gi);
    bp_ceiling ceil = {0};
    bp_fma fma = {0};
    if (sg) bp_measure_ceiling((int)sg, 3, &ceil);
    if (sg) bp_measure_fma(&fma);
    double sgf = ceil.ceiling;
    if (!json && sg) print_ceiling(&ceil, &fma, &gi, sg);
    double cbw = copy_mb ? copy_gbps((int)copy_mb, COPY_REPS) : 0;
    /* The forward's bound: its FLOPs at the ceiling or its weights
     * (read once per forward) at the copy rate, whichever is slower. */
    double fwd_s = f_ips > 0 ? (double)fb / f_ips : 0, bound = 0;
    if (sgf > 0) bound = 2.0 * tot.macs * fb / (sgf * 1e9);
    if (cbw > 0 && tot.weight_bytes / (cbw * 1e9) > bound) bound = tot.weight_bytes / (cbw * 1e9);
    double vs_bound = bound > 0 ? fwd_s / bound : 0;
    /* The bound of a forward whose convolutions run at the ceiling and
     * whose connected layers then stream their weights at the copy rate,
     * one after the other (nothing overlaps them in a forward at batch 1):
     * reported beside the bar, not judged. */
    double seq_bound = sgf > 0 && cbw > 0 ? other_flops / (sgf * 1e9) + fc_bytes / (cbw * 1e9) : 0;
    if (!json && copy_mb)
        printf("copy     %lld MiB: %7.2f GB/s read + written (%d threads)\n", copy_mb, cbw, trn_threads());
    if (fl) print_fwd_layers(fl, nfl, fb, fb / (f_ips > 0 ? f_ips : 1), sgf, cbw);
    free(fl);
    if (!json && bound > 0)
        printf("forward  batch %3lld: %.3f ms against its bound %.3f ms (%.1f MFLOP at the ceiling, "
               "%.1f MB of weights at the copy rate): %.2fx\n",
               fb, 1e3 * fwd_s, 1e3 * bound, 2e-6 * tot.macs * fb, 1e-6 * tot.weight_bytes, vs_bound);
    if (!json && seq_bound > 0)
        printf("forward  batch %3lld: one phase after the other (%.1f MFLOP of other layers at the ceiling, then "
               "%.1f MB of connected weights at the copy rate): %.3f ms = %.2fx the bound; this forward: %.2fx that\n",
               fb, 1e-6 * other_flops, 1e-6 * fc_bytes, 1e3 * seq_bound, bound > 0 ? seq_bound / bound : 0,
               fwd_s / seq_bound);
    if (json)
        printf("{\"forward_batch\":%lld,\"forward_images_per_s\":%.4f,\"forward_gflops\":%.4f,"
               "\"train_batch\":%lld,\"train_images_per_s\":%.4f,\"train_gflops\":%.4f,"
               "\"conv_train_gflops\":%.4f,\"conv_share\":%.4f,\"sgemm_n\":%lld,\"sgemm_gflops\":%.4f,"
               "\"copy_mib\":%lld,\"copy_gbps\":%.4f,\"weight_bytes\":%llu,\"forward_bound_s\":%.6g,"
               "\"forward_vs_bound\":%.4f,\"forward_seq_bound_s\":%.6g,"
               "\"threads\":%d,\"determinism\":\"%s\",\"gemm_calls\":%d,\"gemm_openblas_gflops\":%.4f,"
               "\"gemm_portable_gflops\":%.4f,\"gemm_kernel\":\"%s\","
               "\"ceiling_gflops\":%.4f,\"ceiling_path\":\"%s\",\"openblas_features_gflops\":%.4f,"
               "\"own_gflops\":%.4f,\"fma_avx512_gflops\":%.4f,\"fma_avx2_gflops\":%.4f,"
               "\"fma_sse_gflops\":%.4f,\"fma_neon_gflops\":%.4f,\"cpu_isa\":\"%s\",\"cpu_core\":\"%s\","
               "\"openblas_loaded\":\"%s\",\"openblas_core\":\"%s\",\"openblas_below\":%d,"
               "\"openblas_explicit\":%d,\"products\":\"%s\"}\n",
               fb, f_ips, f_gf, train_b, t_ips, t_gf, conv_gf, conv_share, sg, ceil.openblas, copy_mb, cbw,
               (unsigned long long)tot.weight_bytes, bound, vs_bound, seq_bound, trn_threads(),
               trn_determinism() == TRN_DET_PORTABLE ? "portable" : "default", gcalls, g_ob, g_pg,
               trn_pk_name(trn_pgemm_kernel()), sgf, ceil.path, ceil.openblas_features, ceil.own, fma.avx512,
               fma.avx2, fma.sse, fma.neon, gi.cpu_isa, gi.cpu_core, gi.openblas_loaded, gi.openblas_core, gi.below,
               gi.explicit_core, gi.products);
    return 0;
}
