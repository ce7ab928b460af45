/*
 * bench_kernels.c: `trainer bench --layers`'s kernel timer. For a few
 * training steps the network computes through a copy of its backend table
 * whose every kernel slot times the call and charges it to the layer the
 * engine is running (trn_net_running_layer) and to the pass (forward or
 * backward), then calls the real kernel: where a step's time goes, per
 * layer and per kernel (the product split into forward, backward-data and
 * backward-weights by the array it writes: an update array is a weights
 * gradient).
 *
 * Only calls made by the stepping thread outside another timed kernel are
 * timed (a kernel that runs tiles on the pool and calls gemm per tile is
 * timed once, as a whole); calls from pool threads pass straight through.
 */
#include "bench_kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* What a kernel is charged as. */
enum {
    K_GEMM_F, K_GEMM_BD, K_GEMM_BW, K_CONV_F, K_CONV_BD, K_CONV_BW, K_IM2COL, K_COL2IM, K_SWAP,
    K_BN, K_BIAS, K_ACT, K_POOL, K_FILL, K_SGD, K_OTHER, K_COUNT
};
static const char *const kname[K_COUNT] = {
    [K_GEMM_F] = "gemm", [K_GEMM_BD] = "gemm-data", [K_GEMM_BW] = "gemm-weights",
    [K_CONV_F] = "conv", [K_CONV_BD] = "conv-data", [K_CONV_BW] = "conv-weights",
    [K_IM2COL] = "im2col", [K_COL2IM] = "col2im", [K_SWAP] = "swap12", [K_BN] = "batchnorm",
    [K_BIAS] = "bias", [K_ACT] = "activation", [K_POOL] = "pool", [K_FILL] = "fill/copy",
    [K_SGD] = "sgd", [K_OTHER] = "other",
};

typedef struct cell {
    double t, flops;
    long calls;
} cell;

static struct {
    trn_backend be; /* the table the network computes through */
    const trn_backend *inner;
    trn_net *net;
    int layers;
    cell *cells; /* (layers + 1) x 2 passes x K_COUNT; row `layers`: outside any layer */
    pthread_t owner;
    int depth;
    int backward;
    const trn_param *params;
    int np;
} kt;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int kt_begin(void)
{
    if (!pthread_equal(pthread_self(), kt.owner) || kt.depth) return 0;
    kt.depth = 1;
    return 1;
}

static void kt_end(int kind, double t0, double flops)
{
    double t = now_s() - t0;
    int l = trn_net_running_layer(kt.net);
    if (l < 0 || l >= kt.layers) l = kt.layers;
    cell *c = &kt.cells[((size_t)l * 2 + (size_t)kt.backward) * K_COUNT + kind];
    c->t += t;
    c->flops += flops;
    c->calls++;
    kt.depth = 0;
}

#define TIMED(kind, flops, call)                                                                   \
    do {                                                                                           \
        int on_ = kt_begin();                                                                      \
        double t0_ = on_ ? now_s() : 0;                                                            \
        call;                                                                                      \
        if (on_) kt_end(kind, t0_, flops);                                                         \
    } while (0)

/* Writes into an update array: a weights (or bias) gradient. */
static int is_update(const float *c)
{
    for (int i = 0; i < kt.np; i++)
        if (kt.params[i].update && c >= kt.params[i].update && c < kt.params[i].update + kt.params[i].count)
            return 1;
    return 0;
}

static void t_gemm(TRN_BE, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                   const float *b, int ldb, float beta, float *c, int ldc)
{
    int kind = !kt.backward ? K_GEMM_F : is_update(c) ? K_GEMM_BW : K_GEMM_BD;
    TIMED(kind, 2.0 * m * n * (double)k,
          kt.inner->gemm(kt.inner, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

static double conv_flops(const trn_conv_shape *s)
{
    double oh = (s->h + 2 * s->pad - s->ks) / s->stride + 1, ow = (s->w + 2 * s->pad - s->ks) / s->stride + 1;
    return 2.0 * s->batch * s->m * oh * ow * s->c * s->ks * s->ks;
}

static void t_conv(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                   trn_activation act, float *out)
{
    TIMED(K_CONV_F, conv_flops(s), kt.inner->conv(kt.inner, s, in, w, ldw, bias, act, out));
}

static void t_conv_dw(TRN_BE, const trn_conv_shape *s, const float *in, const float *delta, float *dw, int lddw)
{
    TIMED(K_CONV_BW, conv_flops(s), kt.inner->conv_dw(kt.inner, s, in, delta, dw, lddw));
}

static void t_conv_dx(TRN_BE, const trn_conv_shape *s, const float *delta, const float *w, int ldw, float *in_delta)
{
    TIMED(K_CONV_BD, conv_flops(s), kt.inner->conv_dx(kt.inner, s, delta, w, ldw, in_delta));
}

/* The other slots: (name, kind, parameters after be, arguments after be). */
#define SLOT(name, kind, params, args)                                                             \
    static void t_##name params { TIMED(kind, 0, kt.inner->name args); }
#define P(...) (TRN_BE, __VA_ARGS__)
#define A(...) (kt.inner, __VA_ARGS__)
SLOT(im2col, K_IM2COL, P(const float *im, int c, int h, int w, int ks, int s, int pad, float *col, int ld),
     A(im, c, h, w, ks, s, pad, col, ld))
SLOT(col2im, K_COL2IM, P(const float *col, int ld, int c, int h, int w, int ks, int s, int pad, float *im),
     A(col, ld, c, h, w, ks, s, pad, im))
SLOT(swap12, K_SWAP, P(const float *src, float *dst, int a, int b, int n), A(src, dst, a, b, n))
SLOT(fill, K_FILL, P(size_t n, float v, float *x), A(n, v, x))
SLOT(copy, K_FILL, P(size_t n, const float *x, float *y), A(n, x, y))
SLOT(axpy, K_OTHER, P(size_t n, float a, const float *x, float *y), A(n, a, x, y))
SLOT(scal, K_OTHER, P(size_t n, float a, float *x), A(n, a, x))
SLOT(activate, K_ACT, P(float *x, size_t n, trn_activation a), A(x, n, a))
SLOT(gradient, K_ACT, P(const float *y, size_t n, trn_activation a, float *d), A(y, n, a, d))
SLOT(add_bias, K_BIAS, P(float *x, const float *b, int batch, int c, int sp), A(x, b, batch, c, sp))
SLOT(scale_bias, K_BN, P(float *x, const float *s, int batch, int c, int sp), A(x, s, batch, c, sp))
SLOT(backward_bias, K_BIAS, P(float *db, const float *d, int batch, int c, int sp), A(db, d, batch, c, sp))
SLOT(backward_scale, K_BN, P(float *ds, const float *xn, const float *d, int batch, int c, int sp),
     A(ds, xn, d, batch, c, sp))
SLOT(mean, K_BN, P(const float *x, int batch, int c, int sp, float *m), A(x, batch, c, sp, m))
SLOT(variance, K_BN, P(const float *x, const float *m, int batch, int c, int sp, float *v),
     A(x, m, batch, c, sp, v))
SLOT(normalize, K_BN, P(float *x, const float *m, const float *v, int batch, int c, int sp),
     A(x, m, v, batch, c, sp))
SLOT(bn_backward, K_BN,
     P(const float *x, const float *m, const float *v, int batch, int c, int sp, float *md, float *vd, float *d),
     A(x, m, v, batch, c, sp, md, vd, d))
SLOT(bn_apply, K_BN,
     P(const float *x, const float *m, const float *v, const float *sc, const float *b, int batch, int c, int sp,
       trn_activation a, float *out),
     A(x, m, v, sc, b, batch, c, sp, a, out))
SLOT(bn_backward_act, K_BN,
     P(const float *y, trn_activation a, const float *x, const float *m, const float *v, const float *sc, int batch,
       int c, int sp, float *db, float *ds, float *md, float *vd, float *d),
     A(y, a, x, m, v, sc, batch, c, sp, db, ds, md, vd, d))
SLOT(bias_gradient, K_BIAS, P(const float *y, trn_activation a, int batch, int c, int sp, float *db, float *d),
     A(y, a, batch, c, sp, db, d))
SLOT(maxpool, K_POOL,
     P(const float *in, int batch, int c, int h, int w, int size, int s, int pad, int oh, int ow, float *out,
       int *idx),
     A(in, batch, c, h, w, size, s, pad, oh, ow, out, idx))
SLOT(maxpool_backward, K_POOL, P(const float *d, const int *idx, int planes, int pp, float *in_d),
     A(d, idx, planes, pp, in_d))
SLOT(avgpool, K_POOL, P(const float *in, int batch, int c, int sp, float *out), A(in, batch, c, sp, out))
SLOT(avgpool_backward, K_POOL, P(const float *d, int batch, int c, int sp, float *in_d), A(d, batch, c, sp, in_d))
SLOT(softmax, K_OTHER, P(const float *in, int batch, int n, int g, float t, float *out), A(in, batch, n, g, t, out))
SLOT(softmax_xent, K_OTHER, P(size_t n, const float *p, const float *t, float *d, float *e), A(n, p, t, d, e))
SLOT(l2, K_OTHER, P(size_t n, const float *p, const float *t, float *d, float *e), A(n, p, t, d, e))
SLOT(l1, K_OTHER, P(size_t n, const float *p, const float *t, float *d, float *e), A(n, p, t, d, e))
SLOT(smooth_l1, K_OTHER, P(size_t n, const float *p, const float *t, float *d, float *e), A(n, p, t, d, e))
SLOT(shortcut, K_OTHER,
     P(int batch, int w1, int h1, int c1, const float *add, int w2, int h2, int c2, float s1, float s2, float *out),
     A(batch, w1, h1, c1, add, w2, h2, c2, s1, s2, out))
SLOT(crop, K_OTHER,
     P(const float *in, int batch, int c, int h, int w, int oh, int ow, int dh, int dw, int flip, float scale,
       float trans, float *out),
     A(in, batch, c, h, w, oh, ow, dh, dw, flip, scale, trans, out))
SLOT(dropout, K_OTHER, P(float *x, const float *r, size_t n, float p, float scale), A(x, r, n, p, scale))
SLOT(sgd, K_SGD, P(float *w, float *u, const float *mask, size_t n, float decay, float rate, float mom),
     A(w, u, mask, n, decay, rate, mom))

int bk_run(trn_net *net, const float *x, const float *y, int steps, FILE *out, trn_err *err)
{
    memset(&kt, 0, sizeof kt);
    kt.net = net;
    kt.layers = trn_net_layers(net);
    kt.cells = calloc((size_t)(kt.layers + 1) * 2 * K_COUNT, sizeof *kt.cells);
    if (!kt.cells) return trn_errf(err, "out of memory");
    kt.owner = pthread_self();
    kt.params = trn_net_params(net, &kt.np);
    kt.inner = trn_net_swap_backend(net, NULL);
    kt.be = *kt.inner;
#define SET(name) kt.be.name = kt.inner->name ? t_##name : NULL
    SET(gemm), SET(conv), SET(conv_dw), SET(conv_dx), SET(im2col), SET(col2im), SET(swap12), SET(fill);
    SET(copy), SET(axpy), SET(scal), SET(activate), SET(gradient), SET(add_bias), SET(scale_bias);
    SET(backward_bias), SET(backward_scale), SET(mean), SET(variance), SET(normalize), SET(bn_backward);
    SET(bn_apply), SET(bn_backward_act), SET(bias_gradient), SET(maxpool), SET(maxpool_backward);
    SET(avgpool), SET(avgpool_backward), SET(softmax), SET(softmax_xent), SET(l2), SET(l1), SET(smooth_l1);
    SET(shortcut), SET(crop), SET(dropout), SET(sgd);
#undef SET
    trn_net_swap_backend(net, &kt.be);
    int rc = 0;
    double total = 0;
    for (int s = 0; s < steps && rc == 0; s++) {
        /* the step's passes, as trn_net_train_step runs them */
        double t0 = now_s();
        kt.backward = 0;
        rc = trn_net_forward_train(net, x, y, err);
        kt.backward = 1;
        if (rc == 0) rc = trn_net_backward(net, err);
        if (rc == 0) trn_net_update(net);
        total += now_s() - t0;
    }
    trn_net_swap_backend(net, kt.inner);
    if (rc == 0) {
        double ktotal = 0;
        fprintf(out, "kernels of a training step, ms per step (GFLOPS of the products):\n");
        for (int l = 0; l <= kt.layers; l++)
            for (int p = 0; p < 2; p++) {
                const cell *row = &kt.cells[((size_t)l * 2 + (size_t)p) * K_COUNT];
                double sum = 0;
                for (int k = 0; k < K_COUNT; k++) sum += row[k].t;
                if (sum <= 0) continue;
                ktotal += sum;
                if (l < kt.layers) {
                    trn_layer_info in;
                    trn_net_layer_info(net, l, &in);
                    fprintf(out, "  layer %2d %-13s %-8s %7.2f ms:", l, trn_layer_kind_name(in.kind),
                            p ? "backward" : "forward", 1e3 * sum / steps);
                } else {
                    fprintf(out, "  %-22s %-8s %7.2f ms:", "outside layers", p ? "update" : "forward",
                            1e3 * sum / steps);
                }
                for (int k = 0; k < K_COUNT; k++) {
                    if (row[k].t * 1e3 / steps < 0.005) continue;
                    fprintf(out, " %s %.2f", kname[k], 1e3 * row[k].t / steps);
                    if (row[k].flops > 0) fprintf(out, " (%.1f)", row[k].flops / row[k].t / 1e9);
                }
                fprintf(out, "\n");
            }
        /* totals per kernel over the step */
        fprintf(out, "  all layers, ms per step:");
        for (int k = 0; k < K_COUNT; k++) {
            double t = 0, f = 0;
            for (int l = 0; l <= kt.layers; l++)
                for (int p = 0; p < 2; p++) {
                    t += kt.cells[((size_t)l * 2 + (size_t)p) * K_COUNT + k].t;
                    f += kt.cells[((size_t)l * 2 + (size_t)p) * K_COUNT + k].flops;
                }
            if (t * 1e3 / steps < 0.005) continue;
            fprintf(out, " %s %.2f", kname[k], 1e3 * t / steps);
            if (f > 0) fprintf(out, " (%.1f)", f / t / 1e9);
        }
        fprintf(out, "; untimed %.2f of %.2f\n", 1e3 * (total - ktotal) / steps, 1e3 * total / steps);
    }
    free(kt.cells);
    kt.cells = NULL;
    return rc;
}
