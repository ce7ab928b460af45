/*
 * bench.c: the measurements behind `trainer bench` (trn_bench, bench.h):
 * images/s and GFLOPS of the forward (batch 1 by default) and of a
 * training step (forward + backward + update) on random data, every
 * layer's time, the convolution layers' effective GFLOPS inside the
 * training step, and the machine's ceiling as the yardstick: the best
 * N x N product any path reaches (bench_peak.c), beside OpenBLAS as
 * loaded, and its copy bandwidth. With the training step also the products
 * of one step, shape by shape: the default (OpenBLAS) gemm against the
 * portable one (portable.c) on the same shapes and threads, in the same
 * run. Nothing is printed.
 */
#include "bench.h"

#include "backend.h"
#include "portable.h"

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

/* ---- the measurements --------------------------------------------------- */

/* Every layer's kind, MACs per image and parameters, and its forward and
 * backward seconds so far. */
static trn_bench_layer *layer_table(trn_net *net)
{
    int n = trn_net_layers(net);
    trn_bench_layer *t = calloc((size_t)(n ? n : 1), sizeof *t);
    for (int i = 0; t && i < n; i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        trn_net_layer_time(net, i, &t[i].tf, &t[i].tb);
        t[i] = (trn_bench_layer){in.kind, t[i].tf, t[i].tb, (double)in.macs, (double)in.params,
                                 trn_net_layer_delta(net, i - 1) ? 3 : 2};
    }
    return t;
}

/* The forward at forward_batch images: its time over the timed runs (the
 * layers profiled after the warm-up), and the two phases' work for the
 * bound of one after the other: the FLOPs of the layers other than the
 * connected ones and the connected layers' weight bytes (each weight read
 * once per forward at batch 1). */
static int bench_forward(const trn_bench_opts *o, trn_net_opts *no, trn_bench_result *r, trn_err *err)
{
    no->batch = (int)o->forward_batch;
    no->infer_only = 1;
    trn_net *net = trn_net_create(o->cfg, no, err);
    if (!net) return -1;
    trn_net_get_totals(net, &r->tot);
    r->layers = trn_net_layers(net);
    long long fb = r->forward_batch = o->forward_batch, iters = o->iterations;
    float *x = random_floats((size_t)fb * trn_net_inputs(net), 3, 0, 1);
    double t = 0;
    trn_err e;
    for (long long k = 0; k <= iters && x; k++) {
        if (k == 1) trn_net_profile(net, 1);
        double t0 = now_s();
        if (trn_net_forward(net, x, &e) != 0) break;
        if (k) t += now_s() - t0;
    }
    r->fwd = layer_table(net);
    for (int i = 0; r->fwd && i < r->layers; i++) {
        if (r->fwd[i].kind == TRN_LAYER_CONNECTED) r->fc_bytes += 4.0 * r->fwd[i].params;
        else r->other_flops += 2.0 * r->fwd[i].macs * (double)fb;
    }
    free(x);
    trn_net_free(net);
    if (!r->fwd) return trn_errf(err, "out of memory");
    r->forward_s = t;
    r->f_ips = t > 0 ? (double)fb * iters / t : 0;
    r->f_gf = r->f_ips * 2.0 * r->tot.macs / 1e9;
    return 0;
}

/* One more step with the products recorded, then each shape replayed
 * (bench_kernels' gemm_shapes) on the default and the portable gemm. */
static void bench_products(const trn_bench_opts *o, trn_net *net, const float *x, const float *y,
                           trn_bench_result *r)
{
    trn_err e;
    rec.inner = trn_net_swap_backend(net, NULL);
    trn_backend recording = *rec.inner;
    recording.gemm = rec_gemm;
    trn_net_swap_backend(net, &recording);
    int stepped = trn_net_train_step(net, x, y, NULL, &e) == 0;
    trn_net_swap_backend(net, rec.inner);
    if (stepped && !rec.oom)
        r->gemm_calls = gemm_shapes((int)(o->iterations < 3 ? 3 : o->iterations), &r->gemm_openblas,
                                    &r->gemm_portable);
    r->gemm_shapes = rec.n;
    free(rec.s);
    rec.s = NULL, rec.n = rec.cap = rec.oom = 0;
}

/* The training step's rates: images/s, GFLOPS (3x the forward's), and the
 * convolutions' FLOPs per image in a step (forward, weight gradient and,
 * except where no gradient flows on, input gradient) over their time. */
static void train_rates(const trn_bench_opts *o, trn_bench_result *r)
{
    double conv_flops = 0, conv_t = 0, t = r->train_s;
    long long b = r->train_batch, iters = o->iterations;
    for (int i = 0; i < r->layers; i++) {
        if (r->step[i].kind != TRN_LAYER_CONVOLUTIONAL) continue;
        conv_flops += 2.0 * r->step[i].macs * r->step[i].passes;
        conv_t += r->step[i].tf + r->step[i].tb;
    }
    r->t_ips = t > 0 ? (double)b * iters / t : 0;
    r->t_gf = r->t_ips * 2.0 * r->tot.macs * 3 / 1e9;
    r->conv_gf = conv_t > 0 ? conv_flops * b * iters / conv_t / 1e9 : 0;
    r->conv_share = t > 0 ? conv_t / t : 0;
}

/* Training steps at `batch` images (the cfg's by default) on random input
 * and one-hot labels; the layer times are those of the timed steps only. */
static int bench_train(const trn_bench_opts *o, trn_net_opts *no, trn_bench_result *r, trn_err *err)
{
    no->batch = (int)o->batch;
    no->infer_only = 0;
    trn_net *net = trn_net_create(o->cfg, no, err);
    if (!net) return -1;
    int b = trn_net_batch(net), rc = 0;
    r->train_batch = b;
    size_t nx = (size_t)b * trn_net_inputs(net), ny = (size_t)b * trn_net_outputs(net);
    float *tx = random_floats(nx, 4, 0, 1), *ty = calloc(ny ? ny : 1, sizeof *ty);
    for (int k = 0; k < b && ty; k++) ty[(size_t)k * trn_net_outputs(net) + (size_t)k % trn_net_outputs(net)] = 1;
    double t = 0;
    for (long long k = 0; rc == 0 && k <= o->iterations && tx && ty; k++) {
        if (k == 1) trn_net_profile(net, 1);
        double t0 = now_s();
        rc = trn_net_train_step(net, tx, ty, NULL, err);
        if (k) t += now_s() - t0;
    }
    trn_net_profile(net, 0);
    r->train_s = t;
    if (rc == 0 && o->after_steps && tx && ty) rc = o->after_steps(o->ctx, net, tx, ty, (int)o->iterations, err);
    if (rc == 0 && o->gemm && tx && ty) bench_products(o, net, tx, ty, r);
    if (rc == 0 && !(r->step = layer_table(net))) rc = trn_errf(err, "out of memory");
    if (rc == 0) r->trained = 1, train_rates(o, r);
    free(tx), free(ty);
    trn_net_free(net);
    return rc;
}

/* The ceiling, the cores' peak multiply-adds and the copy rate; the
 * forward's bound: its FLOPs at the ceiling or its weights (read once per
 * forward) at the copy rate, whichever is slower; and the bound of a
 * forward whose convolutions run at the ceiling and whose connected layers
 * then stream their weights at the copy rate, one after the other (nothing
 * overlaps them in a forward at batch 1). */
static void bench_yardsticks(const trn_bench_opts *o, trn_bench_result *r)
{
    trn_gemm_info_get(&r->gemm);
    if (o->sgemm) bp_measure_ceiling((int)o->sgemm, 3, &r->ceiling);
    if (o->sgemm) bp_measure_fma(&r->fma);
    double sgf = r->ceiling.ceiling, cbw = r->copy_gbps = o->copy_mib ? copy_gbps((int)o->copy_mib, COPY_REPS) : 0;
    double fb = (double)r->forward_batch;
    r->fwd_s = r->f_ips > 0 ? fb / r->f_ips : 0;
    if (sgf > 0) r->bound = 2.0 * r->tot.macs * fb / (sgf * 1e9);
    if (cbw > 0 && r->tot.weight_bytes / (cbw * 1e9) > r->bound) r->bound = r->tot.weight_bytes / (cbw * 1e9);
    r->vs_bound = r->bound > 0 ? r->fwd_s / r->bound : 0;
    r->seq_bound = sgf > 0 && cbw > 0 ? r->other_flops / (sgf * 1e9) + r->fc_bytes / (cbw * 1e9) : 0;
}

int trn_bench(const trn_bench_opts *o, trn_bench_result *r, trn_err *err)
{
    memset(r, 0, sizeof *r);
    r->gemm_calls = -1;
    trn_net_opts no;
    trn_net_opts_defaults(&no);
    if (bench_forward(o, &no, r, err)) return -1;
    if (o->forward_done) o->forward_done(o->ctx, r);
    if (o->train && bench_train(o, &no, r, err)) {
        trn_bench_result_free(r);
        return -1;
    }
    bench_yardsticks(o, r);
    return 0;
}

void trn_bench_result_free(trn_bench_result *r)
{
    free(r->fwd);
    free(r->step);
    r->fwd = r->step = NULL;
}
