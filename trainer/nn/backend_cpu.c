/*
 * backend_cpu.c: the CPU backend. OpenBLAS for the matrix products, loops
 * written to vectorise and spread over trn_threads() threads for the
 * memory-bound kernels that show up in profiles (im2col, col2im,
 * activations, batch-norm passes); the reference kernels for the rest.
 * Every kernel computes what its reference twin computes (tests compare
 * them with stated tolerances).
 */
#include "backend_ref.h"
#include "portable.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Work below this many floats is not worth waking threads for. */
#define PAR_MIN 32768

static void *cpu_alloc(TRN_BE, size_t bytes)
{
    /* 64-byte aligned for vector loads; zeroed like the reference. */
    size_t n = (bytes + 63) / 64 * 64;
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
    memset(p, 0, n ? n : 64);
    return p;
}

static void cpu_release(TRN_BE, void *p) { free(p); }

/* ---- gemm: fixed tiles, one single-threaded OpenBLAS call each --------
 *
 * OpenBLAS's own threading cuts M or N into one range per thread, and an
 * element's value depends on where the range edges fall: with the Haswell
 * and Zen kernels an element at a panel edge goes through another micro-
 * kernel path (another summation order) than the same element inside a
 * panel, so the bytes changed with the thread count. Here OpenBLAS runs
 * single-threaded (threads.c) and the output is cut into tiles whose size
 * depends on the shape only (m, n, k), never on the thread count; each tile
 * is one cblas call, and our pool runs the tiles. Every output element is
 * thus computed by the same call with the same arguments whatever THREADS
 * is. */

/* A tile holds about this many multiply-adds, and at least 256 columns
 * (enough to amortise packing A and the call: smaller tiles cost up to 35%
 * on AlexNet's products at one thread), at most GEMM_TILE_M rows (a taller
 * output is cut into rows of half that). Measured at one thread on
 * alexnet.cfg's training products: 0.96x the time of whole OpenBLAS calls. */
#define GEMM_TILE_MACS ((size_t)1 << 24)
#define GEMM_TILE_MIN_N 256
#define GEMM_TILE_M 512

typedef struct gemmctx {
    int ta, tb, m, n, k, lda, ldb, ldc, tm, tn, tiles_n;
    float alpha, beta;
    const float *a, *b;
    float *c;
} gemmctx;

static void gemm_tile(void *p, int t)
{
    const gemmctx *g = p;
    int i0 = t / g->tiles_n * g->tm, j0 = t % g->tiles_n * g->tn;
    int mm = g->m - i0 < g->tm ? g->m - i0 : g->tm;
    int nn = g->n - j0 < g->tn ? g->n - j0 : g->tn;
    /* op(A) rows i0.., op(B) columns j0.. */
    const float *a = g->ta ? g->a + i0 : g->a + (size_t)i0 * g->lda;
    const float *b = g->tb ? g->b + (size_t)j0 * g->ldb : g->b + j0;
    cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans,
                mm, nn, g->k, g->alpha, a, g->lda, b, g->ldb, g->beta,
                g->c + (size_t)i0 * g->ldc + j0, g->ldc);
}

static void cpu_gemm(TRN_BE, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    trn_blas_single_thread();
    if (k <= 0) {
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) c[(size_t)i * ldc + j] *= beta;
        return;
    }
    if (trn_determinism() == TRN_DET_PORTABLE) {
        trn_pgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* A single row or column is a matrix-vector product: OpenBLAS's gemm
     * would copy (pack) the whole matrix first, gemv streams it once (the
     * connected layers at batch 1). Single-threaded: one call, one order. */
    if (m == 1) {
        /* c (1, n) = alpha * a (1, k) . op(B) (k, n); a's stride is lda when transposed */
        cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? n : k, tb ? k : n, alpha,
                    b, ldb, a, ta ? lda : 1, beta, c, 1);
        return;
    }
    if (n == 1) {
        /* c (m, 1) = alpha * op(A) (m, k) . b (k, 1); b's stride is ldb unless transposed */
        cblas_sgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, ta ? k : m, ta ? m : k, alpha,
                    a, lda, b, tb ? 1 : ldb, beta, c, ldc);
        return;
    }
    gemmctx g = {ta, tb, m, n, k, lda, ldb, ldc, 0, 0, 0, alpha, beta, a, b, c};
    g.tm = m <= GEMM_TILE_M ? m : GEMM_TILE_M / 2;
    size_t tn = GEMM_TILE_MACS / ((size_t)g.tm * (size_t)k);
    tn = (tn + 63) / 64 * 64; /* whole 64-column panels: the edges fall alike */
    if (tn < GEMM_TILE_MIN_N) tn = GEMM_TILE_MIN_N;
    g.tn = tn >= (size_t)n ? n : (int)tn;
    g.tiles_n = (n + g.tn - 1) / g.tn;
    int tiles = (m + g.tm - 1) / g.tm * g.tiles_n;
    if (tiles == 1)
        gemm_tile(&g, 0);
    else
        trn_parallel_for(tiles, gemm_tile, &g);
}

/* ---- im2col / col2im: one channel per item ---------------------------- */

typedef struct colctx {
    const float *src;
    float *dst;
    int c, h, w, ks, stride, pad, oh, ow, ldcol;
} colctx;

static void im2col_channel(void *p, int ch)
{
    const colctx *x = p;
    int h = x->h, w = x->w, ks = x->ks, s = x->stride, pad = x->pad, oh = x->oh, ow = x->ow;
    const float *im = x->src + (size_t)ch * h * w;
    for (int ky = 0; ky < ks; ky++)
        for (int kx = 0; kx < ks; kx++) {
            float *col = x->dst + (((size_t)ch * ks + ky) * ks + kx) * x->ldcol;
            /* Output columns whose input column is inside the image:
             * x0 <= ox < x1 with 0 <= ox*s + kx - pad < w. */
            int x0 = pad - kx > 0 ? (pad - kx + s - 1) / s : 0;
            int x1 = w + pad - kx > 0 ? (w + pad - kx + s - 1) / s : 0;
            if (x1 > ow) x1 = ow;
            if (x0 > x1) x0 = x1;
            for (int oy = 0; oy < oh; oy++) {
                float *row = col + (size_t)oy * ow;
                int iy = oy * s + ky - pad;
                if (iy < 0 || iy >= h) {
                    memset(row, 0, (size_t)ow * sizeof *row);
                    continue;
                }
                /* in[ox] is the input under output column ox (ox >= x0). */
                const float *in = im + (size_t)iy * w;
                int base = kx - pad;
                for (int ox = 0; ox < x0; ox++) row[ox] = 0;
                if (s == 1 && x1 > x0)
                    memcpy(row + x0, in + x0 + base, (size_t)(x1 - x0) * sizeof *row);
                else
                    for (int ox = x0; ox < x1; ox++) row[ox] = in[ox * s + base];
                for (int ox = x1; ox < ow; ox++) row[ox] = 0;
            }
        }
}

static void cpu_im2col(TRN_BE, const float *im, int c, int h, int w, int ks, int stride, int pad, float *col,
                       int ldcol)
{
    colctx x = {im, col, c, h, w, ks, stride, pad, trn_conv_out(h, pad, ks, stride),
                trn_conv_out(w, pad, ks, stride), ldcol};
    if ((size_t)c * ks * ks * x.oh * x.ow < PAR_MIN)
        for (int ch = 0; ch < c; ch++) im2col_channel(&x, ch);
    else
        trn_parallel_for(c, im2col_channel, &x);
}

#ifndef TRN_INFER_ONLY
static void col2im_channel(void *p, int ch)
{
    const colctx *x = p;
    int h = x->h, w = x->w, ks = x->ks, s = x->stride, pad = x->pad, oh = x->oh, ow = x->ow;
    float *im = x->dst + (size_t)ch * h * w;
    for (int ky = 0; ky < ks; ky++)
        for (int kx = 0; kx < ks; kx++) {
            const float *col = x->src + (((size_t)ch * ks + ky) * ks + kx) * x->ldcol;
            int x0 = pad - kx > 0 ? (pad - kx + s - 1) / s : 0;
            int x1 = w + pad - kx > 0 ? (w + pad - kx + s - 1) / s : 0;
            if (x1 > ow) x1 = ow;
            if (x0 > x1) x0 = x1;
            for (int oy = 0; oy < oh; oy++) {
                int iy = oy * s + ky - pad;
                if (iy < 0 || iy >= h) continue;
                const float *row = col + (size_t)oy * ow;
                float *out = im + (size_t)iy * w;
                int base = kx - pad;
                for (int ox = x0; ox < x1; ox++) out[ox * s + base] += row[ox];
            }
        }
}

static void cpu_col2im(TRN_BE, const float *col, int ldcol, int c, int h, int w, int ks, int stride, int pad,
                       float *im)
{
    colctx x = {col, im, c, h, w, ks, stride, pad, trn_conv_out(h, pad, ks, stride),
                trn_conv_out(w, pad, ks, stride), ldcol};
    if ((size_t)c * ks * ks * x.oh * x.ow < PAR_MIN)
        for (int ch = 0; ch < c; ch++) col2im_channel(&x, ch);
    else
        trn_parallel_for(c, col2im_channel, &x);
}
#endif

typedef struct swapctx {
    const float *src;
    float *dst;
    int a, b, n;
} swapctx;

static void swap_row(void *p, int i)
{
    const swapctx *x = p;
    for (int j = 0; j < x->b; j++)
        memcpy(x->dst + ((size_t)j * x->a + i) * x->n, x->src + ((size_t)i * x->b + j) * x->n,
               (size_t)x->n * sizeof(float));
}

static void cpu_swap12(TRN_BE, const float *src, float *dst, int a, int b, int n)
{
    swapctx x = {src, dst, a, b, n};
    if ((size_t)a * b * n < PAR_MIN)
        for (int i = 0; i < a; i++) swap_row(&x, i);
    else
        trn_parallel_for(a, swap_row, &x);
}

/* ---- max pooling: one (image, channel) plane per item ------------------ */

typedef struct poolctx {
    const float *in;
    float *out;
    int *idx;
    int h, w, size, stride, off, oh, ow;
} poolctx;

/* The reference's comparisons in the reference's order (per output: window
 * rows, then window columns, the first strict maximum wins), done a whole
 * output row at a time so that the inner loop runs over outputs. */
static void maxpool_plane(void *p, int plane)
{
    const poolctx *x = p;
    const float *in = x->in + (size_t)plane * x->h * x->w;
    float *out = x->out + (size_t)plane * x->oh * x->ow;
    int *idx = x->idx ? x->idx + (size_t)plane * x->oh * x->ow : NULL;
    int base = plane * x->h * x->w, s = x->stride, ow = x->ow;
    for (int oy = 0; oy < x->oh; oy++) {
        float *best = out + (size_t)oy * ow;
        int *bi = idx ? idx + (size_t)oy * ow : NULL;
        for (int ox = 0; ox < ow; ox++) best[ox] = -FLT_MAX;
        if (bi)
            for (int ox = 0; ox < ow; ox++) bi[ox] = -1;
        for (int n = 0; n < x->size; n++) {
            int iy = x->off + oy * s + n;
            if (iy < 0 || iy >= x->h) continue;
            const float *row = in + (size_t)iy * x->w;
            for (int m = 0; m < x->size; m++) {
                /* outputs whose column off + ox*s + m lies inside the row */
                int c0 = x->off + m, lo = c0 < 0 ? (-c0 + s - 1) / s : 0;
                int hi = x->w - c0 > 0 ? (x->w - c0 + s - 1) / s : 0;
                if (hi > ow) hi = ow;
                int at = base + iy * x->w + c0;
                if (bi) {
                    for (int ox = lo; ox < hi; ox++) {
                        float v = row[c0 + ox * s], b = best[ox];
                        int take = v > b, cur = bi[ox];
                        best[ox] = take ? v : b;
                        bi[ox] = cur + take * (at + ox * s - cur);
                    }
                } else {
                    for (int ox = lo; ox < hi; ox++) {
                        float v = row[c0 + ox * s], b = best[ox];
                        best[ox] = v > b ? v : b;
                    }
                }
            }
        }
    }
}

static void cpu_maxpool(TRN_BE, const float *in, int batch, int c, int h, int w, int size, int stride,
                        int pad, int oh, int ow, float *out, int *idx)
{
    poolctx x = {in, out, idx, h, w, size, stride, -pad / 2, oh, ow};
    int planes = batch * c;
    if ((size_t)planes * oh * ow * size * size < PAR_MIN)
        for (int i = 0; i < planes; i++) maxpool_plane(&x, i);
    else
        trn_parallel_for(planes, maxpool_plane, &x);
}

/* ---- element-wise ----------------------------------------------------- */

#define CHUNK 16384

typedef struct ewctx {
    float *x;
    const float *y;
    size_t n;
    trn_activation a;
} ewctx;

static void activate_range(float *x, size_t n, trn_activation a)
{
    switch (a) {
    case TRN_ACT_LINEAR: return;
    case TRN_ACT_RELU: /* x * (x > 0), as Darknet: -0 for negative x */
        for (size_t i = 0; i < n; i++) x[i] = x[i] * (float)(x[i] > 0);
        return;
    case TRN_ACT_LEAKY:
        for (size_t i = 0; i < n; i++) x[i] = x[i] > 0 ? x[i] : 0.1f * x[i];
        return;
    default:
        for (size_t i = 0; i < n; i++) x[i] = trn_activate1(x[i], a);
        return;
    }
}

static void activate_chunk(void *p, int i)
{
    const ewctx *c = p;
    size_t lo = (size_t)i * CHUNK, hi = lo + CHUNK < c->n ? lo + CHUNK : c->n;
    activate_range(c->x + lo, hi - lo, c->a);
}

static void cpu_activate(TRN_BE, float *x, size_t n, trn_activation a)
{
    if (a == TRN_ACT_LINEAR) return;
    ewctx c = {x, NULL, n, a};
    if (n < PAR_MIN)
        activate_range(x, n, a);
    else
        trn_parallel_for((int)((n + CHUNK - 1) / CHUNK), activate_chunk, &c);
}

#ifndef TRN_INFER_ONLY
static void gradient_range(const float *y, size_t n, trn_activation a, float *d)
{
    switch (a) {
    case TRN_ACT_LINEAR: return;
    case TRN_ACT_RELU:
        for (size_t i = 0; i < n; i++) d[i] *= (float)(y[i] > 0);
        return;
    case TRN_ACT_LEAKY:
        for (size_t i = 0; i < n; i++) d[i] *= y[i] > 0 ? 1.0f : 0.1f;
        return;
    default:
        for (size_t i = 0; i < n; i++) d[i] *= trn_gradient1(y[i], a);
        return;
    }
}

static void gradient_chunk(void *p, int i)
{
    const ewctx *c = p;
    size_t lo = (size_t)i * CHUNK, hi = lo + CHUNK < c->n ? lo + CHUNK : c->n;
    gradient_range(c->y + lo, hi - lo, c->a, c->x + lo);
}

static void cpu_gradient(TRN_BE, const float *y, size_t n, trn_activation a, float *delta)
{
    if (a == TRN_ACT_LINEAR) return;
    ewctx c = {delta, y, n, a};
    if (n < PAR_MIN)
        gradient_range(y, n, a, delta);
    else
        trn_parallel_for((int)((n + CHUNK - 1) / CHUNK), gradient_chunk, &c);
}
#endif

static void cpu_axpy(TRN_BE, size_t n, float a, const float *x, float *y)
{
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

static void cpu_add_bias(TRN_BE, float *x, const float *b, int batch, int c, int spatial)
{
    for (int i = 0; i < batch; i++)
        for (int k = 0; k < c; k++) {
            float *p = x + ((size_t)i * c + k) * spatial, v = b[k];
            for (int s = 0; s < spatial; s++) p[s] += v;
        }
}

static void cpu_scale_bias(TRN_BE, float *x, const float *sc, int batch, int c, int spatial)
{
    for (int i = 0; i < batch; i++)
        for (int k = 0; k < c; k++) {
            float *p = x + ((size_t)i * c + k) * spatial, v = sc[k];
            for (int s = 0; s < spatial; s++) p[s] *= v;
        }
}

#ifndef TRN_INFER_ONLY
typedef struct sgdctx {
    float *w, *u;
    const float *mask;
    size_t n;
    float decay, rate, momentum;
    const trn_backend *be;
} sgdctx;

static void sgd_chunk(void *p, int i)
{
    const sgdctx *c = p;
    size_t lo = (size_t)i * CHUNK, hi = lo + CHUNK < c->n ? lo + CHUNK : c->n;
    trn_ref_sgd(c->be, c->w + lo, c->u + lo, c->mask ? c->mask + lo : NULL, hi - lo, c->decay, c->rate,
                c->momentum);
}

/* One pass over w and u instead of Darknet's three (same float
 * operations per element), spread over the threads. */
static void cpu_sgd(TRN_BE, float *w, float *u, const float *mask, size_t n, float decay, float rate,
                    float momentum)
{
    sgdctx c = {w, u, mask, n, decay, rate, momentum, be};
    if (n < PAR_MIN)
        trn_ref_sgd(be, w, u, mask, n, decay, rate, momentum);
    else
        trn_parallel_for((int)((n + CHUNK - 1) / CHUNK), sgd_chunk, &c);
}
#endif

const trn_backend trn_backend_cpu = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = trn_ref_upload,
    .download = trn_ref_upload,
    .gemm = cpu_gemm,
    .im2col = cpu_im2col,
    .col2im = TRN_TRAIN_FN(cpu_col2im),
    .swap12 = cpu_swap12,
    .fill = trn_ref_fill,
    .copy = trn_ref_copy,
    .axpy = cpu_axpy,
    .scal = trn_ref_scal,
    .activate = cpu_activate,
    .gradient = TRN_TRAIN_FN(cpu_gradient),
    .add_bias = cpu_add_bias,
    .scale_bias = cpu_scale_bias,
    .backward_bias = TRN_TRAIN_FN(trn_ref_backward_bias),
    .backward_scale = TRN_TRAIN_FN(trn_ref_backward_scale),
    .mean = TRN_TRAIN_FN(trn_ref_mean),
    .variance = TRN_TRAIN_FN(trn_ref_variance),
    .normalize = trn_ref_normalize,
    .bn_backward = TRN_TRAIN_FN(trn_ref_bn_backward),
    .maxpool = cpu_maxpool,
    .maxpool_backward = TRN_TRAIN_FN(trn_ref_maxpool_backward),
    .avgpool = trn_ref_avgpool,
    .avgpool_backward = TRN_TRAIN_FN(trn_ref_avgpool_backward),
    .softmax = trn_ref_softmax,
    .softmax_xent = TRN_TRAIN_FN(trn_ref_softmax_xent),
    .l2 = TRN_TRAIN_FN(trn_ref_l2),
    .l1 = TRN_TRAIN_FN(trn_ref_l1),
    .smooth_l1 = TRN_TRAIN_FN(trn_ref_smooth_l1),
    .shortcut = trn_ref_shortcut,
    .crop = trn_ref_crop,
    .dropout = TRN_TRAIN_FN(trn_ref_dropout),
    .sgd = TRN_TRAIN_FN(cpu_sgd),
};
