/*
 * backend_cpu.c: the CPU backend. OpenBLAS for the matrix products, loops
 * written to vectorise and spread over trn_threads() threads for the
 * memory-bound kernels that show up in profiles (im2col, col2im,
 * activations, batch-norm passes); the reference kernels for the rest.
 * Every kernel computes what its reference twin computes (tests compare
 * them with stated tolerances).
 */
#include "backend_ref.h"
#include "cpu.h"
#include "portable.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__OPTIMIZE__) && defined(__GNUC__) && !defined(__clang__)
/* Vectorise the loops (the results do not change: no -ffast-math, and
 * -ffp-contract=off holds). */
#pragma GCC optimize("O3")
#endif

/* The hot element-wise loops in one version per x86-64 vector width,
 * picked at load time; each computes the same values (IEEE operations in
 * the same order, nothing fused or reassociated). */
/* Not under ThreadSanitizer: the clones' resolvers run while the dynamic
 * linker relocates, before its runtime is up, and crash in its hooks. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && !defined(__SANITIZE_THREAD__)
#define VEC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VEC_CLONES
#endif

/* Work below this many floats is not worth waking threads for. */
#define PAR_MIN 32768
/* Floats per pool item of the chunked loops (element-wise, max pooling's
 * backward). */
#define CHUNK 16384

/* 64-byte aligned for vector loads; zeroed like the reference. Through
 * calloc, so that a large buffer comes zeroed from the kernel and its pages
 * become resident only when written: a network that runs only from a layer
 * on (a fragment on a shared trunk, librtl) never holds its lower layers'
 * outputs. The pointer calloc returned is kept just below the buffer. */
static void *cpu_alloc(TRN_BE, size_t bytes)
{
    size_t n = (bytes + 63) / 64 * 64;
    unsigned char *raw = calloc(1, (n ? n : 64) + 64 + sizeof raw);
    if (!raw) return NULL;
    unsigned char *p = (unsigned char *)(((uintptr_t)raw + sizeof raw + 63) / 64 * 64);
    memcpy(p - sizeof raw, &raw, sizeof raw);
    return p;
}

static void cpu_release(TRN_BE, void *p)
{
    if (!p) return;
    void *raw;
    memcpy(&raw, (unsigned char *)p - sizeof raw, sizeof raw);
    free(raw);
}

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

/* y (len) = alpha * op(M) x + beta * y, M's rows (trans: its columns) being
 * the outputs, in slices of `slice` outputs. */
#define GEMV_SLICE_MACS ((size_t)1 << 19)

typedef struct gemvctx {
    int trans, len, k;
    float alpha;
    const float *mat;
    int ldm;
    const float *x;
    int incx;
    float beta;
    float *y;
    int incy, slice;
} gemvctx;

static void gemv_slice(void *p, int t)
{
    const gemvctx *v = p;
    int o = t * v->slice, len = v->len - o < v->slice ? v->len - o : v->slice;
    /* outputs o .. o+len-1: rows of M, or its columns when transposed */
    if (v->trans)
        cblas_sgemv(CblasRowMajor, CblasTrans, v->k, len, v->alpha, v->mat + o, v->ldm, v->x, v->incx, v->beta,
                    v->y + (size_t)o * v->incy, v->incy);
    else
        cblas_sgemv(CblasRowMajor, CblasNoTrans, len, v->k, v->alpha, v->mat + (size_t)o * v->ldm, v->ldm, v->x,
                    v->incx, v->beta, v->y + (size_t)o * v->incy, v->incy);
}

_Thread_local int trn_cpu_gemm_whole;

/* A few rows times a wide transposed B (the connected layers' forward at
 * small batches, W stored (outputs, inputs)): OpenBLAS packs B^T slowly
 * there (its rows become the short side of its panels). C^T = B . A^T
 * reads B in its own layout: each tile of FEW_TN rows of B is one call into
 * a per-thread (FEW_TN, m) buffer, transposed into C. Measured at one
 * thread on alexnet.cfg's fc6 at batch 16 (m 16, n 4096, k 9216): 1.4x
 * faster than the tiles of the plain product. Tiles depend on the shape
 * only. */
#define FEW_M 32
#define FEW_TN 256

static void few_tile(void *p, int t)
{
    const gemmctx *g = p;
    int j0 = t * FEW_TN, nn = g->n - j0 < FEW_TN ? g->n - j0 : FEW_TN;
    float *t_ = trn_cpu_scratch(TRN_SCRATCH_FEW, (size_t)FEW_TN * (size_t)g->m);
    if (!t_) { /* the plain product of the tile */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, g->m, nn, g->k, g->alpha, g->a, g->lda,
                    g->b + (size_t)j0 * g->ldb, g->ldb, g->beta, g->c + j0, g->ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nn, g->m, g->k, g->alpha, g->b + (size_t)j0 * g->ldb, g->ldb,
                g->a, g->lda, 0, t_, g->m);
    for (int i = 0; i < g->m; i++) {
        float *c = g->c + (size_t)i * g->ldc + j0;
        if (g->beta == 0)
            for (int j = 0; j < nn; j++) c[j] = t_[(size_t)j * g->m + i];
        else
            for (int j = 0; j < nn; j++) c[j] = g->beta * c[j] + t_[(size_t)j * g->m + i];
    }
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
    /* The portable mode, or a shape the default mode's path runs on our
     * kernels (an OpenBLAS core without FMA: gemm_path.c). */
    if (trn_determinism() == TRN_DET_PORTABLE || trn_gemm_own(m, n)) {
        trn_pgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    /* A single row or column is a matrix-vector product: OpenBLAS's gemm
     * would copy (pack) the whole matrix first, gemv streams it once (the
     * connected layers at batch 1). The output vector is cut into slices
     * of about GEMV_SLICE_MACS multiply-adds (a function of the shape),
     * one single-threaded gemv call each, run on our pool: the weights
     * stream in from memory on every core. */
    if (m == 1 || n == 1) {
        gemvctx v;
        if (m == 1) /* c (1, n) = alpha * a (1, k) . op(B) (k, n); a's stride is lda when transposed */
            v = (gemvctx){!tb, n, k, alpha, b, ldb, a, ta ? lda : 1, beta, c, 1, 0};
        else /* c (m, 1) = alpha * op(A) (m, k) . b (k, 1); b's stride is ldb unless transposed */
            v = (gemvctx){ta, m, k, alpha, a, lda, b, tb ? 1 : ldb, beta, c, ldc, 0};
        size_t slice = GEMV_SLICE_MACS / (size_t)k;
        slice = (slice + 15) / 16 * 16;
        if (slice < 16) slice = 16;
        v.slice = slice >= (size_t)v.len ? v.len : (int)slice;
        int slices = (v.len + v.slice - 1) / v.slice;
        if (slices == 1)
            gemv_slice(&v, 0);
        else
            trn_parallel_for(slices, gemv_slice, &v);
        return;
    }
    gemmctx g = {ta, tb, m, n, k, lda, ldb, ldc, 0, 0, 0, alpha, beta, a, b, c};
    if (!ta && tb && m <= FEW_M && n > FEW_TN && !trn_cpu_gemm_whole) {
        int tiles = (n + FEW_TN - 1) / FEW_TN;
        trn_parallel_for(tiles, few_tile, &g);
        return;
    }
    if (trn_cpu_gemm_whole) { /* a convolution's tile, already one pool item (cpu.h) */
        g.tm = m, g.tn = n, g.tiles_n = 1;
        gemm_tile(&g, 0);
        return;
    }
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

/* The same choices in two passes: per input row, the first strict maximum
 * of each output's window columns (value and index in the plane); then per
 * output, the first strict maximum of those over the window rows. The first (row,
 * column) holding the window's maximum wins either way (values start at
 * -FLT_MAX and only a strictly larger one replaces the best). */
#define SEP_MAX 4096 /* h x ow of a plane the two passes hold on the stack */

VEC_CLONES static void maxpool_rows(const poolctx *x, const float *in, float *hb, int *hc)
{
    int w = x->w, s = x->stride, ow = x->ow, off = x->off, size = x->size;
    /* every window start off+j, j < nx, contiguously; then every s-th */
    int nx = (ow - 1) * s + 1;
    float tv[SEP_MAX];
    int tc[SEP_MAX];
    for (int iy = 0; iy < x->h; iy++) {
        const float *restrict row = in + (size_t)iy * w;
        float *restrict v = tv;
        int *restrict vc = tc;
        for (int j = 0; j < nx; j++) v[j] = -FLT_MAX, vc[j] = -1;
        for (int m = 0; m < size; m++) {
            int c0 = off + m, lo = c0 < 0 ? -c0 : 0, hi = w - c0 < nx ? w - c0 : nx;
            for (int j = lo; j < hi; j++) {
                float a = row[c0 + j], bv = v[j];
                int take = a > bv, bcv = vc[j];
                v[j] = take ? a : bv;
                vc[j] = bcv + take * (c0 + j - bcv);
            }
        }
        float *restrict b = hb + (size_t)iy * ow;
        int *restrict bc = hc + (size_t)iy * ow;
        for (int ox = 0; ox < ow; ox++) b[ox] = v[ox * s], bc[ox] = iy * w + vc[ox * s];
    }
}

/* The column pass: per output, the first strict maximum over its window's
 * rows of the row pass's maxima v (rows wr floats apart, output ox at
 * v[ox * step] of a row) and their indexes vc in the plane. */
static inline __attribute__((always_inline)) void pick_cols(const poolctx *x, const float *v, const int *vc, int wr,
                                                            int step, int base, float *out, int *idx)
{
    int s = x->stride, ow = x->ow, off = x->off;
    for (int oy = 0; oy < x->oh; oy++) {
        float *restrict best = out + (size_t)oy * ow;
        int *restrict bi = idx ? idx + (size_t)oy * ow : NULL;
        for (int ox = 0; ox < ow; ox++) best[ox] = -FLT_MAX;
        if (bi)
            for (int ox = 0; ox < ow; ox++) bi[ox] = -1;
        for (int n = 0; n < x->size; n++) {
            int iy = off + oy * s + n;
            if (iy < 0 || iy >= x->h) continue;
            const float *restrict b = v + (size_t)iy * wr;
            if (bi) {
                const int *restrict bc = vc + (size_t)iy * wr;
                for (int ox = 0; ox < ow; ox++) {
                    float a = b[ox * step], bv = best[ox];
                    int c = bc[ox * step], take = a > bv, ob = bi[ox];
                    best[ox] = take ? a : bv;
                    bi[ox] = ob + take * (base + c - ob);
                }
            } else
                for (int ox = 0; ox < ow; ox++) best[ox] = b[ox * step] > best[ox] ? b[ox * step] : best[ox];
        }
    }
}

/* Its two instances: rows of one maximum per output (step 1: contiguous
 * loads), and the flat row pass's rows of w, every stride-th read. */
VEC_CLONES static void maxpool_cols(const poolctx *x, const float *v, const int *vc, int wr, int base, float *out,
                                    int *idx)
{
    pick_cols(x, v, vc, wr, 1, base, out, idx);
}

VEC_CLONES static void maxpool_cols_strided(const poolctx *x, const float *v, const int *vc, int base, float *out,
                                            int *idx)
{
    pick_cols(x, v, vc, x->w, x->stride, base, out, idx);
}

/* The row pass over the whole plane as one flat run (h*w floats within
 * FLAT_MAX): v[i] = the first strict maximum of in[i + off + m], m < size,
 * and vc[i] its index in the plane, for every i whose window stays inside
 * the plane; then the positions whose window crosses a row's edge (the
 * first -off and the last off+size-1 of each row) again with the row's
 * bounds. The same choices as maxpool_rows (per row, columns in order,
 * strict >), in one long vector loop instead of one short loop per row;
 * the column pass reads every s-th of v. */
#define FLAT_MAX 8192

/* The row pass at every s-th position i = s*q only (s = 1: all of them;
 * s > 1 when it divides the width: the positions the column pass reads),
 * into hv[q] and hc[q]: the flat run, then the positions whose window
 * crosses a row's edge again with the row's bounds, in that order at each
 * position. The same values and indexes at every position it computes,
 * whatever s; s > 1 skips the s-1 of every s positions nobody reads (max
 * pooling's row pass was 4..5% of base.cfg's step at one thread). Its two
 * instances below: s = 1 (contiguous loads) and the layer's stride. */
static inline __attribute__((always_inline)) void flat_rows(const poolctx *x, int s, const float *restrict in,
                                                            float *restrict hv, int *restrict hc)
{
    int w = x->w, n = x->h * w, off = x->off, size = x->size, nq = n / s;
    int lo = off < 0 ? -off : 0, hi = n - (off + size - 1 > 0 ? off + size - 1 : 0);
    int q0 = (lo + s - 1) / s, q1 = hi > 0 ? (hi + s - 1) / s : 0;
    if (q1 > nq) q1 = nq;
    for (int q = 0; q < nq; q++) hv[q] = -FLT_MAX, hc[q] = -1;
    for (int m = 0; m < size; m++) {
        int c0 = off + m;
        for (int q = q0; q < q1; q++) {
            float a = in[s * q + c0], bv = hv[q];
            int take = a > bv, bcv = hc[q];
            hv[q] = take ? a : bv;
            hc[q] = bcv + take * (s * q + c0 - bcv);
        }
    }
    int e0 = lo < w ? lo : w, e1 = w - (off + size - 1 > 0 ? off + size - 1 : 0);
    if (e1 < e0) e1 = e0;
    /* the picked columns jq (j = s*jq) outside [e0, e1): jq < a and jq >= b */
    int ws = w / s, a = e1 > e0 ? (e0 + s - 1) / s : ws, b = e1 > e0 ? (e1 + s - 1) / s : ws;
    for (int iy = 0; iy < x->h; iy++) {
        const float *row = in + (size_t)iy * w;
        for (int jq = 0; jq < ws; jq++) {
            if (jq == a) jq = b;
            if (jq >= ws) break;
            int j = jq * s;
            float bv = -FLT_MAX;
            int bc = -1;
            for (int m = 0; m < size; m++) {
                int c = off + m + j;
                if (c >= 0 && c < w && row[c] > bv) bv = row[c], bc = iy * w + c;
            }
            hv[iy * ws + jq] = bv, hc[iy * ws + jq] = bc;
        }
    }
}

VEC_CLONES static void maxpool_flat_rows(const poolctx *x, const float *in, float *v, int *vc)
{
    flat_rows(x, 1, in, v, vc);
}

VEC_CLONES static void maxpool_flat_rows_picked(const poolctx *x, const float *in, float *hv, int *hc)
{
    flat_rows(x, x->stride, in, hv, hc);
}

static void maxpool_plane_flat(void *p, int plane)
{
    const poolctx *x = p;
    float v[FLAT_MAX];
    int vc[FLAT_MAX];
    int base = plane * x->h * x->w;
    float *out = x->out + (size_t)plane * x->oh * x->ow;
    int *idx = x->idx ? x->idx + (size_t)plane * x->oh * x->ow : NULL;
    if (x->w % x->stride == 0 && x->stride > 1) {
        float hv[FLAT_MAX / 2];
        int hc[FLAT_MAX / 2];
        maxpool_flat_rows_picked(x, x->in + (size_t)base, hv, hc);
        maxpool_cols(x, hv, hc, x->w / x->stride, base, out, idx);
        return;
    }
    maxpool_flat_rows(x, x->in + (size_t)base, v, vc);
    maxpool_cols_strided(x, v, vc, base, out, idx);
}

static void maxpool_plane_sep(void *p, int plane)
{
    const poolctx *x = p;
    float hb[SEP_MAX];
    int hc[SEP_MAX];
    const float *in = x->in + (size_t)plane * x->h * x->w;
    maxpool_rows(x, in, hb, hc);
    maxpool_cols(x, hb, hc, x->ow, plane * x->h * x->w, x->out + (size_t)plane * x->oh * x->ow,
                 x->idx ? x->idx + (size_t)plane * x->oh * x->ow : NULL);
}

/* Values only (an inference: no indexes kept), per plane: the row pass
 * at the picked window starts only (ox * s, strided loads), then the column
 * pass over rows of ow maxima. The same comparisons in the same order per
 * output as the passes above (window columns per row, then window rows,
 * strict >, from -FLT_MAX), so the same bytes (signed zeros, NaNs
 * included); without the indexes' selects and without the s-1 of every s
 * row positions nobody reads: pool1-3 of alexnet.cfg 3.5x faster at
 * one thread (trainer/README.md, Speed). */
#define VAL_MAX 8192 /* h x ow held on the stack */
#define VAL_PAR_MIN ((size_t)1 << 20)

/* Z window taps S apart (compile-time constants in the instances below, so
 * that each output's taps stay in registers): one row (or, with a row
 * pitch as S's unit, one column) of outputs, the taps in order, strict >. */
static inline __attribute__((always_inline)) void val_line(const float *restrict in, float *restrict out, int n,
                                                           int ow, int off, int S, int Z, int step, int pitch)
{
    /* outputs whose taps off + ox*S + m, m < Z, all lie in [0, n) */
    int ia = off < 0 ? (-off + S - 1) / S : 0, ib = n - Z - off >= 0 ? (n - Z - off) / S + 1 : 0;
    if (ib > ow) ib = ow;
    if (ia > ib) ia = ib;
    for (int ox = 0; ox < ow; ox++) {
        if (ox == ia) ox = ib;
        if (ox >= ow) break;
        float t = -FLT_MAX;
        for (int m = 0; m < Z; m++) {
            int c = off + ox * S + m;
            if (c >= 0 && c < n) t = in[(size_t)c * pitch] > t ? in[(size_t)c * pitch] : t;
        }
        out[(size_t)ox * step] = t;
    }
    for (int ox = ia; ox < ib; ox++) {
        const float *a = in + (size_t)(off + ox * S) * pitch;
        float t = -FLT_MAX;
        for (int m = 0; m < Z; m++) t = a[(size_t)m * pitch] > t ? a[(size_t)m * pitch] : t;
        out[(size_t)ox * step] = t;
    }
}

static inline __attribute__((always_inline)) void val_plane(const poolctx *x, const float *restrict in,
                                                            float *restrict hv, float *restrict out, int S, int Z)
{
    int w = x->w, h = x->h, ow = x->ow, oh = x->oh, off = x->off;
    /* the row pass: every input row's window maxima at the picked starts */
    for (int iy = 0; iy < h; iy++) val_line(in + (size_t)iy * w, hv + (size_t)iy * ow, w, ow, off, S, Z, 1, 1);
    /* the column pass, a row of outputs at a time: window rows in order */
    int ia = off < 0 ? (-off + S - 1) / S : 0, ib = h - Z - off >= 0 ? (h - Z - off) / S + 1 : 0;
    if (ib > oh) ib = oh;
    if (ia > ib) ia = ib;
    for (int oy = 0; oy < oh; oy++) {
        float *restrict o = out + (size_t)oy * ow;
        if (oy >= ia && oy < ib) {
            const float *r = hv + (size_t)(off + oy * S) * ow;
            for (int ox = 0; ox < ow; ox++) {
                float t = -FLT_MAX;
                for (int n = 0; n < Z; n++) t = r[(size_t)n * ow + ox] > t ? r[(size_t)n * ow + ox] : t;
                o[ox] = t;
            }
            continue;
        }
        for (int ox = 0; ox < ow; ox++) o[ox] = -FLT_MAX;
        for (int n = 0; n < Z; n++) {
            int iy = off + oy * S + n;
            if (iy < 0 || iy >= h) continue;
            const float *r = hv + (size_t)iy * ow;
            for (int ox = 0; ox < ow; ox++) o[ox] = r[ox] > o[ox] ? r[ox] : o[ox];
        }
    }
}

VEC_CLONES static void val_plane_3_2(const poolctx *x, const float *in, float *hv, float *out)
{
    val_plane(x, in, hv, out, 2, 3);
}

VEC_CLONES static void val_plane_2_2(const poolctx *x, const float *in, float *hv, float *out)
{
    val_plane(x, in, hv, out, 2, 2);
}

VEC_CLONES static void val_plane_any(const poolctx *x, const float *in, float *hv, float *out)
{
    val_plane(x, in, hv, out, x->stride, x->size);
}

static void maxpool_plane_val(void *p, int plane)
{
    const poolctx *x = p;
    float hv[VAL_MAX];
    const float *in = x->in + (size_t)plane * x->h * x->w;
    float *out = x->out + (size_t)plane * x->oh * x->ow;
    if (x->size == 3 && x->stride == 2)
        val_plane_3_2(x, in, hv, out);
    else if (x->size == 2 && x->stride == 2)
        val_plane_2_2(x, in, hv, out);
    else
        val_plane_any(x, in, hv, out);
}

static void cpu_maxpool(TRN_BE, const float *in, int batch, int c, int h, int w, int size, int stride,
                        int pad, int oh, int ow, float *out, int *idx)
{
    poolctx x = {in, out, idx, h, w, size, stride, -pad / 2, oh, ow};
    int planes = batch * c;
    void (*fn)(void *, int) =
        !idx && (size_t)h * ow <= VAL_MAX && size > 1 ? maxpool_plane_val
        : (size_t)h * w <= FLAT_MAX && size > 1 && (size_t)(ow - 1) * stride < (size_t)w
            ? maxpool_plane_flat
        : (size_t)h * ow <= SEP_MAX && (size_t)(ow - 1) * stride + 1 <= SEP_MAX && size > 1 ? maxpool_plane_sep
                                                                                            : maxpool_plane;
    /* the values-only path does ~10 comparisons a ns: below VAL_PAR_MIN
     * (alexnet.cfg's batch-1 pools: 0.06 ms for pool1 on one thread) a
     * pool wake-up costs more than it saves */
    size_t work = (size_t)planes * oh * ow * size * size;
    if (work < PAR_MIN || (fn == maxpool_plane_val && work < VAL_PAR_MIN))
        for (int i = 0; i < planes; i++) fn(&x, i);
    else
        trn_parallel_for(planes, fn, &x);
}

#ifndef TRN_INFER_ONLY
/* The reference's scatter, planes side by side (each plane's outputs add
 * into its own input plane, in the reference's order): one pool item per
 * run of planes of about CHUNK outputs. */
typedef struct poolbackctx {
    const float *delta;
    const int *idx;
    int planes, per_plane, per_item;
    float *in_delta;
} poolbackctx;

static void maxpool_back_item(void *p, int it)
{
    const poolbackctx *x = p;
    int p0 = it * x->per_item, p1 = p0 + x->per_item < x->planes ? p0 + x->per_item : x->planes;
    size_t lo = (size_t)p0 * x->per_plane;
    trn_ref_maxpool_backward(NULL, x->delta + lo, x->idx + lo, p1 - p0, x->per_plane, x->in_delta);
}

static void cpu_maxpool_backward(TRN_BE, const float *delta, const int *idx, int planes, int per_plane,
                                 float *in_delta)
{
    size_t n = (size_t)planes * (size_t)per_plane;
    if (n < PAR_MIN || planes < 2 || per_plane <= 0) {
        trn_ref_maxpool_backward(be, delta, idx, planes, per_plane, in_delta);
        return;
    }
    poolbackctx x = {delta, idx, planes, per_plane, 0, in_delta};
    x.per_item = (int)(CHUNK / (size_t)per_plane);
    if (x.per_item < 1) x.per_item = 1;
    trn_parallel_for((planes + x.per_item - 1) / x.per_item, maxpool_back_item, &x);
}
#endif

/* ---- element-wise ----------------------------------------------------- */

typedef struct ewctx {
    float *x;
    const float *y;
    size_t n;
    trn_activation a;
} ewctx;

VEC_CLONES static void activate_range(float *x, size_t n, trn_activation a)
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

/* fill: chunks on the pool (a training step zeroes every layer's delta:
 * ~2% of a base.cfg step on one thread). */
typedef struct fillctx {
    float *x;
    size_t n;
    float v;
} fillctx;

static void fill_chunk(void *p, int i)
{
    const fillctx *c = p;
    size_t lo = (size_t)i * CHUNK, hi = lo + CHUNK < c->n ? lo + CHUNK : c->n;
    trn_ref_fill(NULL, hi - lo, c->v, c->x + lo);
}

static void cpu_fill(TRN_BE, size_t n, float v, float *x)
{
    fillctx c = {x, n, v};
    if (n < PAR_MIN)
        trn_ref_fill(be, n, v, x);
    else
        trn_parallel_for((int)((n + CHUNK - 1) / CHUNK), fill_chunk, &c);
}

VEC_CLONES static void add_range(float *x, size_t n, float b)
{
    for (size_t i = 0; i < n; i++) x[i] += b;
}

void trn_cpu_bias_act(float *x, int n, float b, int has_bias, trn_activation act)
{
    if (has_bias) add_range(x, (size_t)n, b);
    activate_range(x, (size_t)n, act);
}

#ifndef TRN_INFER_ONLY
VEC_CLONES static void gradient_range(const float *y, size_t n, trn_activation a, float *d)
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


/* ---- batch norm and the per-channel sums ----------------------------------
 *
 * A channel's values are batch blocks of `spatial` floats. Its sums are
 * taken in double in 8 lanes, value s of every block into lane s % 8, the
 * lanes added pairwise at the end: the same order whatever the vector
 * width or the thread count (the reference sums in one chain; the two
 * differ by rounding only). One pool item per channel. */

#define LANES 8

typedef struct chanctx {
    const float *x, *y, *mean, *var, *scale, *bias;
    float *out, *db, *ds, *md, *vd, *delta;
    int batch, c, spatial;
    trn_activation act;
} chanctx;

#ifndef TRN_INFER_ONLY
static double lanes_total(const double *a)
{
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static void run_channels(chanctx *x, void (*fn)(void *, int))
{
    if ((size_t)x->batch * x->c * x->spatial < PAR_MIN)
        for (int k = 0; k < x->c; k++) fn(x, k);
    else
        trn_parallel_for(x->c, fn, x);
}

VEC_CLONES static void sum_channel(const float *x, int batch, int c, int k, int sp, const float *mean,
                                   double *out)
{
    double a[LANES] = {0};
    float m = mean ? *mean : 0;
    for (int i = 0; i < batch; i++) {
        const float *p = x + ((size_t)i * c + k) * sp;
        int s = 0;
        if (mean) {
            for (; s + LANES <= sp; s += LANES)
                for (int j = 0; j < LANES; j++) {
                    double d = p[s + j] - m;
                    a[j] += d * d;
                }
            for (; s < sp; s++) {
                double d = p[s] - m;
                a[s % LANES] += d * d;
            }
        } else {
            for (; s + LANES <= sp; s += LANES)
                for (int j = 0; j < LANES; j++) a[j] += p[s + j];
            for (; s < sp; s++) a[s % LANES] += p[s];
        }
    }
    *out = lanes_total(a);
}

static void mean_channel(void *p, int k)
{
    chanctx *x = p;
    double sum;
    sum_channel(x->x, x->batch, x->c, k, x->spatial, NULL, &sum);
    x->out[k] = (float)(sum / ((double)x->batch * x->spatial));
}

static void cpu_mean(TRN_BE, const float *x, int batch, int c, int spatial, float *mean)
{
    chanctx cx = {.x = x, .out = mean, .batch = batch, .c = c, .spatial = spatial};
    run_channels(&cx, mean_channel);
}

static void variance_channel(void *p, int k)
{
    chanctx *x = p;
    double sum;
    sum_channel(x->x, x->batch, x->c, k, x->spatial, x->mean + k, &sum);
    x->out[k] = (float)(sum / ((double)x->batch * x->spatial - 1));
}

static void cpu_variance(TRN_BE, const float *x, const float *mean, int batch, int c, int spatial, float *var)
{
    chanctx cx = {.x = x, .mean = mean, .out = var, .batch = batch, .c = c, .spatial = spatial};
    run_channels(&cx, variance_channel);
}
#endif

/* bn_apply on one block of a channel: the operations of normalize,
 * scale_bias, add_bias and activate, in that order. */
VEC_CLONES static void apply_block(const float *x, float *out, int n, float mean, float d, float sc, float b)
{
    for (int s = 0; s < n; s++) {
        float v = (x[s] - mean) / d;
        v = v * sc;
        out[s] = v + b;
    }
}

static void apply_image(void *p, int i)
{
    chanctx *x = p;
    for (int k = 0; k < x->c; k++) {
        size_t o = ((size_t)i * x->c + k) * x->spatial;
        float d = sqrtf(x->var[k]) + 0.000001f;
        apply_block(x->x + o, x->out + o, x->spatial, x->mean[k], d, x->scale[k], x->bias[k]);
    }
    activate_range(x->out + (size_t)i * x->c * x->spatial, (size_t)x->c * x->spatial, x->act);
}

static void cpu_bn_apply(TRN_BE, const float *x, const float *mean, const float *var, const float *scale,
                         const float *bias, int batch, int c, int spatial, trn_activation act, float *out)
{
    chanctx cx = {.x = x, .mean = mean, .var = var, .scale = scale, .bias = bias, .out = out,
                  .batch = batch, .c = c, .spatial = spatial, .act = act};
    if ((size_t)batch * c * spatial < PAR_MIN)
        for (int i = 0; i < batch; i++) apply_image(&cx, i);
    else
        trn_parallel_for(batch, apply_image, &cx);
}

#ifndef TRN_INFER_ONLY
/* One channel of bn_backward_act. Pass 1 (per value, in the reference's
 * order of operations): delta *= f'(y); db += delta; ds += delta * xnorm;
 * delta *= scale; md += delta; vd += delta * (x - mean). Pass 2: Darknet's
 * normalize_delta. */
VEC_CLONES static void bn_back_block(const float *y, const float *x, float *delta, int n, trn_activation act,
                                     float mean, float d, float sc, double *a)
{
    double *db = a, *ds = a + LANES, *md = a + 2 * LANES, *vd = a + 3 * LANES;
    int s = 0;
    if (act == TRN_ACT_RELU || act == TRN_ACT_LINEAR || act == TRN_ACT_LEAKY) {
        for (; s + LANES <= n; s += LANES)
            for (int j = 0; j < LANES; j++) {
                float g = act == TRN_ACT_RELU ? (float)(y[s + j] > 0)
                          : act == TRN_ACT_LEAKY ? (y[s + j] > 0 ? 1.0f : 0.1f)
                                                 : 1.0f;
                float dy = delta[s + j] * g, xm = x[s + j] - mean, xn = xm / d, d2 = dy * sc;
                db[j] += dy;
                ds[j] += (double)dy * xn;
                md[j] += d2;
                vd[j] += (double)d2 * xm;
                delta[s + j] = d2;
            }
    }
    for (; s < n; s++) {
        float dy = act == TRN_ACT_LINEAR ? delta[s] : delta[s] * trn_gradient1(y[s], act);
        float xm = x[s] - mean, xn = xm / d, d2 = dy * sc;
        int j = s % LANES;
        db[j] += dy;
        ds[j] += (double)dy * xn;
        md[j] += d2;
        vd[j] += (double)d2 * xm;
        delta[s] = d2;
    }
}

VEC_CLONES static void bn_delta_block(const float *x, float *delta, int n, float mean, double inv, double vd2,
                                      double md, double m)
{
    for (int s = 0; s < n; s++) delta[s] = (float)(delta[s] * inv + vd2 * (x[s] - mean) / m + md / m);
}

static void bn_backward_channel(void *p, int k)
{
    chanctx *x = p;
    double a[4 * LANES] = {0};
    float d = sqrtf(x->var[k]) + 0.000001f;
    for (int i = 0; i < x->batch; i++) {
        size_t o = ((size_t)i * x->c + k) * x->spatial;
        bn_back_block(x->y + o, x->x + o, x->delta + o, x->spatial, x->act, x->mean[k], d, x->scale[k], a);
    }
    x->db[k] += (float)lanes_total(a);
    x->ds[k] += (float)lanes_total(a + LANES);
    x->md[k] = (float)(lanes_total(a + 2 * LANES) * (-1.0 / sqrt(x->var[k] + .00001f)));
    x->vd[k] = (float)(lanes_total(a + 3 * LANES) * -.5 * trn_pow(x->var[k] + .00001f, -1.5));
    double m = (double)x->batch * x->spatial, inv = 1.0 / sqrt(x->var[k] + .00001f);
    for (int i = 0; i < x->batch; i++) {
        size_t o = ((size_t)i * x->c + k) * x->spatial;
        bn_delta_block(x->x + o, x->delta + o, x->spatial, x->mean[k], inv, x->vd[k] * 2.0, x->md[k], m);
    }
}

static void cpu_bn_backward_act(TRN_BE, const float *y, trn_activation act, const float *x, const float *mean,
                                const float *var, const float *scale, int batch, int c, int spatial, float *db,
                                float *ds, float *mean_delta, float *var_delta, float *delta)
{
    chanctx cx = {.x = x, .y = y, .mean = mean, .var = var, .scale = scale, .db = db, .ds = ds,
                  .md = mean_delta, .vd = var_delta, .delta = delta, .batch = batch, .c = c,
                  .spatial = spatial, .act = act};
    run_channels(&cx, bn_backward_channel);
}

static void bias_gradient_channel(void *p, int k)
{
    chanctx *x = p;
    double a[LANES] = {0};
    for (int i = 0; i < x->batch; i++) {
        size_t o = ((size_t)i * x->c + k) * x->spatial;
        float *d = x->delta + o;
        gradient_range(x->y + o, (size_t)x->spatial, x->act, d);
        int s = 0;
        for (; s + LANES <= x->spatial; s += LANES)
            for (int j = 0; j < LANES; j++) a[j] += d[s + j];
        for (; s < x->spatial; s++) a[s % LANES] += d[s];
    }
    x->db[k] += (float)lanes_total(a);
}

static void cpu_bias_gradient(TRN_BE, const float *y, trn_activation act, int batch, int c, int spatial, float *db,
                              float *delta)
{
    chanctx cx = {.y = y, .db = db, .delta = delta, .batch = batch, .c = c, .spatial = spatial, .act = act};
    run_channels(&cx, bias_gradient_channel);
}
#endif

#ifndef TRN_INFER_ONLY
typedef struct sgdctx {
    float *w, *u;
    const float *mask;
    size_t n;
    float decay, rate, momentum;
    const trn_backend *be;
} sgdctx;

/* The reference's operations without a mask, vectorised. */
VEC_CLONES static void sgd_range(float *w, float *u, size_t n, float decay, float rate, float momentum)
{
    if (decay != 0)
        for (size_t i = 0; i < n; i++) {
            float v = u[i] + decay * w[i];
            w[i] += rate * v;
            u[i] = v * momentum;
        }
    else
        for (size_t i = 0; i < n; i++) {
            w[i] += rate * u[i];
            u[i] *= momentum;
        }
}

static void sgd_chunk(void *p, int i)
{
    const sgdctx *c = p;
    size_t lo = (size_t)i * CHUNK, hi = lo + CHUNK < c->n ? lo + CHUNK : c->n;
    if (c->mask)
        trn_ref_sgd(c->be, c->w + lo, c->u + lo, c->mask + lo, hi - lo, c->decay, c->rate, c->momentum);
    else
        sgd_range(c->w + lo, c->u + lo, hi - lo, c->decay, c->rate, c->momentum);
}

/* One pass over w and u instead of Darknet's three (same float
 * operations per element), spread over the threads. */
static void cpu_sgd(TRN_BE, float *w, float *u, const float *mask, size_t n, float decay, float rate,
                    float momentum)
{
    sgdctx c = {w, u, mask, n, decay, rate, momentum, be};
    int chunks = (int)((n + CHUNK - 1) / CHUNK);
    if (n < PAR_MIN)
        for (int i = 0; i < chunks; i++) sgd_chunk(&c, i);
    else
        trn_parallel_for(chunks, sgd_chunk, &c);
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
    .conv = trn_cpu_conv,
    .conv_dw = TRN_TRAIN_FN(trn_cpu_conv_dw),
    .conv_dx = TRN_TRAIN_FN(trn_cpu_conv_dx),
    .swap12 = cpu_swap12,
    .fill = cpu_fill,
    .copy = trn_ref_copy,
    .axpy = cpu_axpy,
    .scal = trn_ref_scal,
    .activate = cpu_activate,
    .gradient = TRN_TRAIN_FN(cpu_gradient),
    .add_bias = cpu_add_bias,
    .scale_bias = cpu_scale_bias,
    .backward_bias = TRN_TRAIN_FN(trn_ref_backward_bias),
    .backward_scale = TRN_TRAIN_FN(trn_ref_backward_scale),
    .mean = TRN_TRAIN_FN(cpu_mean),
    .variance = TRN_TRAIN_FN(cpu_variance),
    .normalize = trn_ref_normalize,
    .bn_backward = TRN_TRAIN_FN(trn_ref_bn_backward),
    .bn_apply = cpu_bn_apply,
    .bn_backward_act = TRN_TRAIN_FN(cpu_bn_backward_act),
    .bias_gradient = TRN_TRAIN_FN(cpu_bias_gradient),
    .maxpool = cpu_maxpool,
    .maxpool_backward = TRN_TRAIN_FN(cpu_maxpool_backward),
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
