/*
 * cpu_conv.c: the CPU backend's convolutions (trn_backend's conv, conv_dw
 * and conv_dx; contracts in backend.h).
 *
 * The product is cut into tiles that stay in cache: a tile is a range of
 * output rows of one image (or, for the weights gradient of small images,
 * several whole images side by side), its im2col (k x cols floats) is
 * written into a buffer of the thread that runs it, and one gemm call
 * through the table the kernel was called with computes it at once, while
 * that buffer is hot, then the bias and the activation are applied to the
 * tile's output. The former plan wrote the im2col of a whole chunk of the
 * batch (k x chunk*oh*ow floats, tens of MB) and OpenBLAS read it back from
 * memory: with the few filters of the small networks (m = 32..48) the
 * product was bound by that traffic, not by the arithmetic.
 *
 * Determinism: the tiles, the gemm calls and their arguments depend on the
 * shape only (never on the thread count), and a pool item computes what it
 * computes whichever thread runs it. The weights gradient sums over every
 * image: its tiles are dealt, in order, to a fixed number of lanes (a
 * function of the shape); lane 0 accumulates into dw, lane g > 0 into its
 * own partial sum, and the partials are added to dw in lane order after
 * all lanes are done. The input gradient is one pool item per image (an
 * image's tiles scatter into overlapping rows, in tile order).
 *
 * Buffers are per thread (grown on demand, kept for the next call). When
 * one cannot be had, the tile is computed by plain loops instead (same
 * values up to rounding, slow).
 */
#include "backend_ref.h"
#include "cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__OPTIMIZE__) && defined(__GNUC__) && !defined(__clang__)
/* Vectorise the loops (the results do not change: no -ffast-math, and
 * -ffp-contract=off holds). */
#pragma GCC optimize("O3")
#endif

/* A tile's im2col holds about this many floats (within L2), and at least
 * 4*m columns (each gemm call packs W again) and 64. */
#define COL_FLOATS ((size_t)128 << 10)
/* At least this many tiles per forward when the shape allows. */
#define MIN_TILES 8
/* A forward with fewer tiles than that (batch 1 of alexnet.cfg) is cut
 * into few wide items instead: a power of two of them, at least 2 and at
 * most WIDE_MAX, each of at least WIDE_MACS multiply-adds where the shape
 * allows (a function of the shape only, like every plan here). */
#define WIDE_MACS ((double)(1 << 27))
#define WIDE_MAX 16
/* The weights gradient: at most DW_LANES lanes, their partial sums within
 * DW_FLOATS floats. */
#define DW_LANES 16
#define DW_FLOATS ((size_t)1 << 20)
/* Work below this many floats is not worth waking threads for. */
#define PAR_MIN 32768

/* ---- per-thread buffers -------------------------------------------------- */

static _Thread_local struct {
    float *p;
    size_t n;
} scratch_tls[TRN_SCRATCH_SLOTS];
static _Thread_local int scratch_held; /* this thread's exit frees its buffers */

/* A thread's buffers die with it: a key whose destructor frees them runs
 * when a thread that allocated one exits (the engine's pool, a server's
 * workers, helper threads kept with a model and stopped with it). Without
 * it every such thread left its buffers behind (LeakSanitizer: rtl serve's
 * workers at SIGTERM). If the key cannot be made the buffers stay, as
 * before. */
static pthread_key_t scratch_key;
static int scratch_key_ok;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_release(void *unused)
{
    (void)unused;
    for (int i = 0; i < TRN_SCRATCH_SLOTS; i++) {
        free(scratch_tls[i].p);
        scratch_tls[i].p = NULL;
        scratch_tls[i].n = 0;
    }
    scratch_held = 0;
}

static void scratch_key_make(void) { scratch_key_ok = pthread_key_create(&scratch_key, scratch_release) == 0; }

float *trn_cpu_scratch(int slot, size_t n)
{
    if (scratch_tls[slot].n < n) {
        if (!scratch_held) {
            (void)pthread_once(&scratch_once, scratch_key_make);
            scratch_held = scratch_key_ok && pthread_setspecific(scratch_key, &scratch_held) == 0;
        }
        free(scratch_tls[slot].p);
        void *p = NULL;
        if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)) != 0) p = NULL;
        scratch_tls[slot].p = p;
        scratch_tls[slot].n = p ? n : 0;
    }
    return scratch_tls[slot].p;
}

/* Slot 0: the caller's (partial sums); slot 1: a tile's; slot 2: a tile's
 * padded input rows. */
static float *scratch(int slot, size_t n)
{
    static const int slots[] = {TRN_SCRATCH_CONV_SUMS, TRN_SCRATCH_CONV_TILE, TRN_SCRATCH_CONV_ROWS};
    return trn_cpu_scratch(slots[slot], n);
}

/* ---- the plan ------------------------------------------------------------ */

typedef struct plan {
    const trn_conv_shape *s;
    int oh, ow, np, k, direct;
    int rows, tiles_img; /* output rows per tile of one image; tiles per image */
    size_t img_in;       /* floats per input image */
} plan;

static void make_plan(const trn_conv_shape *s, plan *p, int split_rows)
{
    p->s = s;
    p->oh = trn_conv_out(s->h, s->pad, s->ks, s->stride);
    p->ow = trn_conv_out(s->w, s->pad, s->ks, s->stride);
    p->np = p->oh * p->ow;
    p->k = s->c * s->ks * s->ks;
    p->direct = s->ks == 1 && s->stride == 1 && s->pad == 0;
    p->img_in = (size_t)s->c * s->h * s->w;
    size_t cols = COL_FLOATS / (size_t)(p->k > 0 ? p->k : 1);
    if (cols < (size_t)4 * s->m) cols = (size_t)4 * s->m;
    if (cols < 64) cols = 64;
    size_t rows = cols / (size_t)p->ow;
    if (rows < 1) rows = 1;
    if (rows > (size_t)p->oh) rows = (size_t)p->oh;
    /* enough tiles to share out when the batch is small */
    int want = (MIN_TILES + s->batch - 1) / s->batch;
    if (want > 1 && split_rows) {
        size_t r = ((size_t)p->oh + (size_t)want - 1) / (size_t)want;
        if (r < rows) rows = r;
    }
    /* as many tiles, of even heights */
    p->tiles_img = (int)(((size_t)p->oh + rows - 1) / rows);
    p->rows = (p->oh + p->tiles_img - 1) / p->tiles_img;
    p->tiles_img = (p->oh + p->rows - 1) / p->rows;
}

/* The wide items of a small forward (WIDE_MACS). */
static int wide_items(const plan *p)
{
    double macs = (double)p->s->m * (double)p->np * (double)p->k;
    int n = 2;
    while (n < WIDE_MAX && macs / (2.0 * n) >= WIDE_MACS) n *= 2;
    return n;
}

/* Tiles of one image: `items` ranges of output rows, of even heights. */
static void plan_rows(plan *p, int items)
{
    if (items > p->oh) items = p->oh;
    if (items < 1) items = 1;
    p->rows = (p->oh + items - 1) / items;
    p->tiles_img = (p->oh + p->rows - 1) / p->rows;
}

/* ---- im2col / col2im of a range of output rows --------------------------- */

typedef struct colrows {
    const plan *p;
    const float *src;
    float *dst;
    int r0, r1, ldcol;
    float *padded; /* stride 1: c x hr x wp, the tile's input rows with their zero padding */
    int iy0, hr, wp;
} colrows;

/* Stride 1 goes through the tile's input rows zero-padded (rows iy0 ..
 * iy0+hr-1, pad zeros each side): every row of col is then one straight
 * copy of ow floats, with no edge to test. */
static int staged(const plan *p, int r0, int r1, colrows *x)
{
    if (p->s->stride != 1) return 0;
    x->iy0 = r0 - p->s->pad;
    x->hr = r1 - r0 + p->s->ks - 1;
    x->wp = p->s->w + 2 * p->s->pad;
    x->padded = scratch(2, (size_t)p->s->c * x->hr * x->wp);
    return x->padded != NULL;
}

static inline void copy_row(float *restrict d, const float *restrict s, int n)
{
    switch (n) { /* the common widths as fixed-size copies */
    case 8: memcpy(d, s, 8 * sizeof *d); return;
    case 16: memcpy(d, s, 16 * sizeof *d); return;
    case 32: memcpy(d, s, 32 * sizeof *d); return;
    default: memcpy(d, s, (size_t)n * sizeof *d); return;
    }
}

static inline void add_row(float *restrict d, const float *restrict s, int n)
{
    for (int i = 0; i < n; i++) d[i] += s[i];
}

static void im2col_staged_channel(void *v, int ch)
{
    const colrows *x = v;
    const plan *p = x->p;
    int h = p->s->h, w = p->s->w, ks = p->s->ks, pad = p->s->pad, ow = p->ow, wp = x->wp;
    const float *im = x->src + (size_t)ch * h * w;
    float *pd = x->padded + (size_t)ch * x->hr * wp;
    for (int y = 0; y < x->hr; y++) {
        float *d = pd + (size_t)y * wp;
        int iy = x->iy0 + y;
        if (iy < 0 || iy >= h) {
            memset(d, 0, (size_t)wp * sizeof *d);
            continue;
        }
        for (int i = 0; i < pad; i++) d[i] = d[pad + w + i] = 0;
        memcpy(d + pad, im + (size_t)iy * w, (size_t)w * sizeof *d);
    }
    /* Rows of up to 16 (32) floats as one fixed 16 (32) float copy where
     * the excess stays inside this call's segment of the col row (later
     * rows overwrite it) and the read inside the channel's padded rows:
     * one vector move instead of a call to memcpy. */
    const float *pend = pd + (size_t)x->hr * wp;
    size_t seg = (size_t)(x->r1 - x->r0) * ow;
    int wide = ow <= 16 ? 16 : ow <= 32 ? 32 : 0;
    for (int ky = 0; ky < ks; ky++)
        for (int kx = 0; kx < ks; kx++) {
            float *row = x->dst + (((size_t)ch * ks + ky) * ks + kx) * x->ldcol;
            for (int oy = x->r0; oy < x->r1; oy++) {
                size_t at = (size_t)(oy - x->r0) * ow;
                const float *src = pd + (size_t)(oy - x->r0 + ky) * wp + kx;
                if (wide && at + (size_t)wide <= seg && src + wide <= pend)
                    copy_row(row + at, src, wide);
                else
                    copy_row(row + at, src, ow);
            }
        }
}

/* Columns ox in [*x0, *x1) of kernel column kx read inside the image. */
static void inside(const plan *p, int kx, int *x0, int *x1)
{
    int s = p->s->stride, pad = p->s->pad, w = p->s->w;
    int a = pad - kx > 0 ? (pad - kx + s - 1) / s : 0;
    int b = w + pad - kx > 0 ? (w + pad - kx + s - 1) / s : 0;
    if (b > p->ow) b = p->ow;
    if (a > b) a = b;
    *x0 = a, *x1 = b;
}

static void im2col_rows_channel(void *v, int ch)
{
    const colrows *x = v;
    const plan *p = x->p;
    int h = p->s->h, w = p->s->w, ks = p->s->ks, s = p->s->stride, pad = p->s->pad, ow = p->ow;
    const float *im = x->src + (size_t)ch * h * w;
    for (int ky = 0; ky < ks; ky++)
        for (int kx = 0; kx < ks; kx++) {
            float *row = x->dst + (((size_t)ch * ks + ky) * ks + kx) * x->ldcol;
            int x0, x1;
            inside(p, kx, &x0, &x1);
            for (int oy = x->r0; oy < x->r1; oy++) {
                float *d = row + (size_t)(oy - x->r0) * ow;
                int iy = oy * s + ky - pad;
                if (iy < 0 || iy >= h) {
                    for (int ox = 0; ox < ow; ox++) d[ox] = 0;
                    continue;
                }
                const float *in = im + (size_t)iy * w; /* in[ox*s + base]: under column ox */
                int base = kx - pad;
                for (int ox = 0; ox < x0; ox++) d[ox] = 0;
                if (s == 1)
                    for (int ox = x0; ox < x1; ox++) d[ox] = in[ox + base];
                else
                    for (int ox = x0; ox < x1; ox++) d[ox] = in[ox * s + base];
                for (int ox = x1; ox < ow; ox++) d[ox] = 0;
            }
        }
}

/* fn(ctx, ch) for every channel, on the pool in a few runs of adjacent
 * channels (CHANNEL_RUNS per thread) rather than one item per channel:
 * a channel's rows of col (or its plane of im) end inside a cache line that
 * the next channel's begins, and items dealt one channel at a time sent
 * those lines back and forth between the cores (alexnet.cfg conv3-5 at
 * batch 1: im2col 250-280 us a layer in 384 items on 2 threads, 150-190
 * us in 2..8 runs). Every channel is still written by one call, the same
 * floats in the same order: the bytes do not depend on the runs. */
#define CHANNEL_RUNS 4

typedef struct chanruns {
    void (*fn)(void *, int);
    void *ctx;
    int c, runs;
} chanruns;

static void channel_run(void *v, int j)
{
    const chanruns *r = v;
    int c0 = (int)((long long)r->c * j / r->runs), c1 = (int)((long long)r->c * (j + 1) / r->runs);
    for (int ch = c0; ch < c1; ch++) r->fn(r->ctx, ch);
}

void trn_cpu_by_channel_runs(int c, void (*fn)(void *, int), void *ctx)
{
    int runs = CHANNEL_RUNS * trn_threads();
    chanruns r = {fn, ctx, c, runs < c ? runs : c};
    trn_parallel_for(r.runs, channel_run, &r);
}

/* col (k, (r1-r0)*ow), rows ldcol apart = the im2col of rows [r0, r1) of im;
 * spread over the channels when called outside a pool job. */
static void im2col_rows(const plan *p, const float *im, int r0, int r1, float *col, int ldcol)
{
    colrows x = {p, im, col, r0, r1, ldcol, NULL, 0, 0, 0};
    void (*fn)(void *, int) = staged(p, r0, r1, &x) ? im2col_staged_channel : im2col_rows_channel;
    if ((size_t)p->k * (size_t)(r1 - r0) * (size_t)p->ow < PAR_MIN)
        for (int ch = 0; ch < p->s->c; ch++) fn(&x, ch);
    else
        trn_cpu_by_channel_runs(p->s->c, fn, &x);
}

#ifndef TRN_INFER_ONLY
static void col2im_rows_channel(void *v, int ch)
{
    const colrows *x = v;
    const plan *p = x->p;
    int h = p->s->h, w = p->s->w, ks = p->s->ks, s = p->s->stride, pad = p->s->pad, ow = p->ow;
    float *im = x->dst + (size_t)ch * h * w;
    for (int ky = 0; ky < ks; ky++)
        for (int kx = 0; kx < ks; kx++) {
            const float *row = x->src + (((size_t)ch * ks + ky) * ks + kx) * x->ldcol;
            int x0, x1;
            inside(p, kx, &x0, &x1);
            for (int oy = x->r0; oy < x->r1; oy++) {
                int iy = oy * s + ky - pad;
                if (iy < 0 || iy >= h) continue;
                const float *d = row + (size_t)(oy - x->r0) * ow;
                float *out = im + (size_t)iy * w;
                int base = kx - pad;
                if (s == 1)
                    for (int ox = x0; ox < x1; ox++) out[ox + base] += d[ox];
                else
                    for (int ox = x0; ox < x1; ox++) out[ox * s + base] += d[ox];
            }
        }
}

/* Stride 1: the channel's rows of col summed into its zero-padded rows,
 * in (ky, kx, oy) order, then the inside added to im. */
static void col2im_staged_channel(void *v, int ch)
{
    const colrows *x = v;
    const plan *p = x->p;
    int h = p->s->h, w = p->s->w, ks = p->s->ks, pad = p->s->pad, ow = p->ow, wp = x->wp;
    float *im = x->dst + (size_t)ch * h * w;
    float *pd = x->padded + (size_t)ch * x->hr * wp;
    memset(pd, 0, (size_t)x->hr * wp * sizeof *pd);
    for (int ky = 0; ky < ks; ky++)
        for (int kx = 0; kx < ks; kx++) {
            const float *row = x->src + (((size_t)ch * ks + ky) * ks + kx) * x->ldcol;
            for (int oy = x->r0; oy < x->r1; oy++)
                add_row(pd + (size_t)(oy - x->r0 + ky) * wp + kx, row + (size_t)(oy - x->r0) * ow, ow);
        }
    for (int y = 0; y < x->hr; y++) {
        int iy = x->iy0 + y;
        if (iy >= 0 && iy < h) add_row(im + (size_t)iy * w, pd + (size_t)y * wp + pad, w);
    }
}

/* im += the adjoint of im2col_rows. */
static void col2im_rows(const plan *p, const float *col, int ldcol, int r0, int r1, float *im)
{
    colrows x = {p, col, im, r0, r1, ldcol, NULL, 0, 0, 0};
    void (*fn)(void *, int) = staged(p, r0, r1, &x) ? col2im_staged_channel : col2im_rows_channel;
    if ((size_t)p->k * (size_t)(r1 - r0) * (size_t)p->ow < PAR_MIN)
        for (int ch = 0; ch < p->s->c; ch++) fn(&x, ch);
    else
        trn_cpu_by_channel_runs(p->s->c, fn, &x);
}
#endif

/* ---- plain loops, for a tile whose buffer could not be had -------------- */

static float col_at(const plan *p, const float *im, int r, int pos)
{
    int ks = p->s->ks, kx = r % ks, ky = r / ks % ks, ch = r / (ks * ks);
    int iy = pos / p->ow * p->s->stride + ky - p->s->pad, ix = pos % p->ow * p->s->stride + kx - p->s->pad;
    return iy >= 0 && iy < p->s->h && ix >= 0 && ix < p->s->w ? im[((size_t)ch * p->s->h + iy) * p->s->w + ix] : 0;
}

/* out (m, cols at ldo) = W . col(im) over positions [q0, q1) */
static void plain_fwd(const plan *p, const float *im, const float *w, int ldw, int q0, int q1, float *out, int ldo)
{
    for (int f = 0; f < p->s->m; f++)
        for (int q = q0; q < q1; q++) {
            float acc = 0;
            for (int r = 0; r < p->k; r++) acc += w[(size_t)f * ldw + r] * col_at(p, im, r, q);
            out[(size_t)f * ldo + q - q0] = acc;
        }
}

#ifndef TRN_INFER_ONLY
/* dw (m, k) += d (m, positions [q0, q1) at ldd) . col(im)^T */
static void plain_dw(const plan *p, const float *im, const float *d, int ldd, int q0, int q1, float *dw, int lddw)
{
    for (int f = 0; f < p->s->m; f++)
        for (int r = 0; r < p->k; r++) {
            float acc = 0;
            for (int q = q0; q < q1; q++) acc += d[(size_t)f * ldd + q - q0] * col_at(p, im, r, q);
            dw[(size_t)f * lddw + r] += acc;
        }
}

/* im += col2im(W^T . d) over positions [q0, q1) */
static void plain_dx(const plan *p, const float *d, int ldd, const float *w, int ldw, int q0, int q1, float *im)
{
    int ks = p->s->ks;
    for (int r = 0; r < p->k; r++) {
        int kx = r % ks, ky = r / ks % ks, ch = r / (ks * ks);
        for (int q = q0; q < q1; q++) {
            int iy = q / p->ow * p->s->stride + ky - p->s->pad, ix = q % p->ow * p->s->stride + kx - p->s->pad;
            if (iy < 0 || iy >= p->s->h || ix < 0 || ix >= p->s->w) continue;
            float acc = 0;
            for (int f = 0; f < p->s->m; f++) acc += w[(size_t)f * ldw + r] * d[(size_t)f * ldd + q - q0];
            im[((size_t)ch * p->s->h + iy) * p->s->w + ix] += acc;
        }
    }
}
#endif

/* One tile's product: whole (one OpenBLAS call, cpu.h) when the caller's
 * tiles run side by side on the pool, which depends on the shape only. */
static void tile_gemm(int whole, const trn_backend *be, int ta, int tb, int m, int n, int k, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc)
{
    trn_cpu_gemm_whole = whole;
    be->gemm(be, ta, tb, m, n, k, 1, a, lda, b, ldb, beta, c, ldc);
    trn_cpu_gemm_whole = 0;
}

/* ---- forward ------------------------------------------------------------- */

typedef struct fwdctx {
    const trn_backend *be;
    plan p;
    const float *in, *w, *bias;
    int ldw;
    trn_activation act;
    float *out;
    int whole; /* the tiles (or blocks of filters) run side by side */
} fwdctx;

static void fwd_tile(void *v, int t)
{
    const fwdctx *x = v;
    const plan *p = &x->p;
    const trn_conv_shape *s = p->s;
    int b = t / p->tiles_img, r0 = t % p->tiles_img * p->rows;
    int r1 = r0 + p->rows < p->oh ? r0 + p->rows : p->oh, cols = (r1 - r0) * p->ow;
    const float *im = x->in + (size_t)b * p->img_in;
    float *out = x->out + (size_t)b * s->m * p->np + (size_t)r0 * p->ow;
    if (p->direct) {
        tile_gemm(x->whole, x->be, 0, 0, s->m, cols, p->k, x->w, x->ldw, im + (size_t)r0 * p->ow, p->np, 0, out, p->np);
    } else {
        float *col = scratch(1, (size_t)p->k * cols);
        if (col) {
            im2col_rows(p, im, r0, r1, col, cols);
            tile_gemm(x->whole, x->be, 0, 0, s->m, cols, p->k, x->w, x->ldw, col, cols, 0, out, p->np);
        } else {
            plain_fwd(p, im, x->w, x->ldw, r0 * p->ow, r1 * p->ow, out, p->np);
        }
    }
    /* the epilogue, on the tile while it is in cache */
    for (int f = 0; f < s->m && (x->bias || x->act != TRN_ACT_LINEAR); f++)
        trn_cpu_bias_act(out + (size_t)f * p->np, cols, x->bias ? x->bias[f] : 0, x->bias != NULL, x->act);
}

/* A small batch of large layers (as many filters as output positions or
 * more, so W is the larger operand): per image, its whole im2col once,
 * then `items` blocks of filters side by side (each gemm call packs its
 * block of W and the im2col); cutting the positions instead would pack all
 * of W per tile. */

typedef struct mblockctx {
    const fwdctx *x;
    const float *col;
    int ldcol, mb;
    float *out; /* the image's output */
} mblockctx;

static void fwd_mblock(void *v, int j)
{
    const mblockctx *c = v;
    const fwdctx *x = c->x;
    const plan *p = &x->p;
    int f0 = j * c->mb, f1 = f0 + c->mb < p->s->m ? f0 + c->mb : p->s->m;
    float *out = c->out + (size_t)f0 * p->np;
    tile_gemm(x->whole, x->be, 0, 0, f1 - f0, p->np, p->k, x->w + (size_t)f0 * x->ldw, x->ldw, c->col, c->ldcol, 0, out,
                p->np);
    for (int f = f0; f < f1 && (x->bias || x->act != TRN_ACT_LINEAR); f++)
        trn_cpu_bias_act(c->out + (size_t)f * p->np, p->np, x->bias ? x->bias[f] : 0, x->bias != NULL, x->act);
}

static int fwd_by_filters(fwdctx *x, int items)
{
    const plan *p = &x->p;
    const trn_conv_shape *s = p->s;
    int mb = (s->m + items - 1) / items;
    mb = (mb + 15) / 16 * 16;
    float *col = p->direct ? NULL : scratch(1, (size_t)p->k * p->np);
    if (!p->direct && !col) return -1;
    for (int b = 0; b < s->batch; b++) {
        const float *im = x->in + (size_t)b * p->img_in;
        mblockctx c = {x, p->direct ? im : col, p->np, mb, x->out + (size_t)b * s->m * p->np};
        x->whole = (s->m + mb - 1) / mb > 1;
        if (!p->direct) im2col_rows(p, im, 0, p->oh, col, p->np);
        trn_parallel_for((s->m + mb - 1) / mb, fwd_mblock, &c);
    }
    return 0;
}

/* A strided inference convolution by space-to-depth, then Winograd: with
 * stride st and kb = ceil(ks / st), out = the stride-1 kb x kb correlation
 * of S (st*st*c channels, S[(c*st + ry)*st + rx][Y][X] = in[c][st*Y + ry -
 * pad][st*X + rx - pad], zero outside) with the filters padded to kb*st
 * taps and regrouped the same way (W2[f][(c*st + ry)*st + rx][by][bx] =
 * w[f][c][by*st + ry][bx*st + rx], zero past ks). alexnet.cfg's conv1
 * (11x11 stride 4 on 3 channels) becomes a 3x3 on 48 channels: 1.19x the
 * multiplies of the direct product, then F(2x2, 3x3)'s 2.25x fewer, and no
 * im2col. Equal to the direct product up to rounding, like Winograd. */
typedef struct s2dctx {
    const trn_conv_shape *s;
    const float *in;
    float *S;
    int sh, sw;
} s2dctx;

static void s2d_channel(void *v, int ch2)
{
    const s2dctx *x = v;
    const trn_conv_shape *s = x->s;
    int st = s->stride, c = ch2 / (st * st), ry = ch2 / st % st, rx = ch2 % st;
    size_t img = (size_t)s->c * st * st * x->sh * x->sw;
    for (int b = 0; b < s->batch; b++) {
        const float *src = x->in + ((size_t)b * s->c + c) * s->h * s->w;
        float *d = x->S + (size_t)b * img + (size_t)ch2 * x->sh * x->sw;
        for (int y = 0; y < x->sh; y++) {
            int iy = st * y + ry - s->pad;
            for (int X = 0; X < x->sw; X++) {
                int ix = st * X + rx - s->pad;
                d[(size_t)y * x->sw + X] = iy >= 0 && iy < s->h && ix >= 0 && ix < s->w
                                               ? src[(size_t)iy * s->w + ix] : 0.0f;
            }
        }
    }
}

/* The largest stride fwd_s2d takes (kb = 3 taps of up to S2D_ST_MAX each). */
#define S2D_ST_MAX 8

/* w2 (m, c*st*st*kb*kb) = w regrouped as fwd_s2d says: for each channel
 * c, its st*st*kb*kb floats of w2 read tap at[t] of its ks*ks (or zero
 * where at[t] < 0), written in order. */
static void s2d_weights(const trn_conv_shape *s, int kb, const float *w, int ldw, float *w2)
{
    int st = s->stride, kk = kb * kb, per = st * st * kk, at[S2D_ST_MAX * S2D_ST_MAX * 9];
    for (int ry = 0; ry < st; ry++)
        for (int rx = 0; rx < st; rx++)
            for (int by = 0; by < kb; by++)
                for (int bx = 0; bx < kb; bx++) {
                    int ky = by * st + ry, kx = bx * st + rx;
                    at[(ry * st + rx) * kk + by * kb + bx] = ky < s->ks && kx < s->ks ? ky * s->ks + kx : -1;
                }
    size_t kc = (size_t)s->ks * s->ks;
    for (int f = 0; f < s->m; f++)
        for (int c = 0; c < s->c; c++) {
            const float *src = w + (size_t)f * ldw + (size_t)c * kc;
            float *d = w2 + ((size_t)f * s->c + c) * per;
            for (int t = 0; t < per; t++) d[t] = at[t] >= 0 ? src[at[t]] : 0.0f;
        }
}

static int fwd_s2d(const trn_backend *be, const trn_conv_shape *s, const float *in, const float *w, int ldw,
                   const float *bias, trn_activation act, float *out)
{
    int st = s->stride, kb = (s->ks + st - 1) / st;
    if (!trn_cpu_winograd_allowed(s)) return -1;
    if (st < 2 || st > S2D_ST_MAX || kb != 3 || (kb * st) * (kb * st) * 2 > 3 * s->ks * s->ks) return -1;
    int oh = trn_conv_out(s->h, s->pad, s->ks, st), ow = trn_conv_out(s->w, s->pad, s->ks, st);
    if (oh < 1 || ow < 1) return -1;
    int c2 = s->c * st * st, kk = kb * kb;
    s2dctx x = {s, in, NULL, oh + kb - 1, ow + kb - 1};
    trn_conv_shape s2 = {s->batch, c2, x.sh, x.sw, s->m, kb, 1, 0, 1, s->prep};
    /* a shape Winograd declines (too few channels) goes to the direct
     * product before any regrouping (rw-s1s1h1's conv1: 3 channels) */
    if (!trn_cpu_winograd_applies(&s2)) return -1;
    size_t img = (size_t)c2 * x.sh * x.sw, nw = (size_t)s->m * c2 * kk;
    if ((double)img * s->batch > (double)(16 << 20)) return -1;
    if (!(x.S = scratch(0, img * (size_t)s->batch + nw))) return -1;
    float *w2 = x.S + img * (size_t)s->batch;
    if (!s->prep || !s->prep->ready) s2d_weights(s, kb, w, ldw, w2); /* else Winograd does not read them */
    trn_cpu_by_channel_runs(c2, s2d_channel, &x);
    return trn_cpu_winograd(be, &s2, x.S, w2, c2 * kk, bias, act, out);
}

void trn_cpu_conv(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                  trn_activation act, float *out)
{
    if (s->batch <= 0 || s->m <= 0) return;
    if (s->prep) trn_cpu_prep_key(s->prep, s, w, ldw);
    if (fwd_s2d(be, s, in, w, ldw, bias, act, out) == 0 || trn_cpu_winograd(be, s, in, w, ldw, bias, act, out) == 0)
        return;
    fwdctx x = {be, {0}, in, w, bias, ldw, act, out, 0};
    make_plan(s, &x.p, 0);
    if (s->batch * x.p.tiles_img < MIN_TILES) {
        /* Few tiles (batch 1): a few wide items per image, by filters or
         * by output rows. Two items of alexnet.cfg's batch-1 shapes, one
         * per thread, ran at 176..190 GFLOPS where the 7..10 tiles in
         * L2 of before ran 93..148 (2 threads, OpenBLAS 0.3.21 on the
         * 2-core EPYC; the sgemm yardstick 191). */
        int items = wide_items(&x.p);
        if (s->m >= x.p.np && s->m >= 2 * 16 && fwd_by_filters(&x, items) == 0) return;
        plan_rows(&x.p, items);
    } else {
        make_plan(s, &x.p, 1);
    }
    int tiles = s->batch * x.p.tiles_img;
    x.whole = tiles > 1;
    if (tiles == 1)
        fwd_tile(&x, 0);
    else
        trn_parallel_for(tiles, fwd_tile, &x);
}

#ifndef TRN_INFER_ONLY
/* ---- weights gradient ------------------------------------------------------ */

typedef struct dwctx {
    const trn_backend *be;
    plan p;
    const float *in, *delta;
    float *dw, *partial; /* lane g > 0 sums into partial + (g-1)*m*k */
    int lddw, ipt, tiles, lanes, whole;
} dwctx;

static void dw_lane(void *v, int g)
{
    const dwctx *x = v;
    const plan *p = &x->p;
    const trn_conv_shape *s = p->s;
    int t0 = (int)((long long)x->tiles * g / x->lanes), t1 = (int)((long long)x->tiles * (g + 1) / x->lanes);
    float *dst = g ? x->partial + (size_t)(g - 1) * s->m * p->k : x->dw;
    int ldd_dst = g ? p->k : x->lddw;
    float beta = g ? 0 : 1;
    for (int t = t0; t < t1; t++, beta = 1) {
        if (x->ipt == 1) {
            /* rows [r0, r1) of image b */
            int b = t / p->tiles_img, r0 = t % p->tiles_img * p->rows;
            int r1 = r0 + p->rows < p->oh ? r0 + p->rows : p->oh, cols = (r1 - r0) * p->ow;
            const float *im = x->in + (size_t)b * p->img_in;
            const float *d = x->delta + (size_t)b * s->m * p->np + (size_t)r0 * p->ow;
            if (p->direct) {
                tile_gemm(x->whole, x->be, 0, 1, s->m, p->k, cols, d, p->np, im + (size_t)r0 * p->ow, p->np, beta, dst,
                            ldd_dst);
                continue;
            }
            float *col = scratch(1, (size_t)p->k * cols);
            if (!col) {
                if (beta == 0)
                    for (int f = 0; f < s->m; f++) memset(dst + (size_t)f * ldd_dst, 0, (size_t)p->k * sizeof *dst);
                plain_dw(p, im, d, p->np, r0 * p->ow, r1 * p->ow, dst, ldd_dst);
                continue;
            }
            im2col_rows(p, im, r0, r1, col, cols);
            tile_gemm(x->whole, x->be, 0, 1, s->m, p->k, cols, d, p->np, col, cols, beta, dst, ldd_dst);
        } else {
            /* whole images b0 .. b0+nb-1 side by side */
            int b0 = t * x->ipt, nb = s->batch - b0 < x->ipt ? s->batch - b0 : x->ipt, cols = nb * p->np;
            float *col = scratch(1, ((size_t)p->k + (size_t)s->m) * cols);
            if (!col) {
                if (beta == 0)
                    for (int f = 0; f < s->m; f++) memset(dst + (size_t)f * ldd_dst, 0, (size_t)p->k * sizeof *dst);
                for (int j = 0; j < nb; j++)
                    plain_dw(p, x->in + (size_t)(b0 + j) * p->img_in, x->delta + (size_t)(b0 + j) * s->m * p->np,
                             p->np, 0, p->np, dst, ldd_dst);
                continue;
            }
            float *d = col + (size_t)p->k * cols;
            for (int j = 0; j < nb; j++) {
                im2col_rows(p, x->in + (size_t)(b0 + j) * p->img_in, 0, p->oh, col + (size_t)j * p->np, cols);
                for (int f = 0; f < s->m; f++)
                    memcpy(d + (size_t)f * cols + (size_t)j * p->np, x->delta + ((size_t)(b0 + j) * s->m + f) * p->np,
                           (size_t)p->np * sizeof *d);
            }
            tile_gemm(x->whole, x->be, 0, 1, s->m, p->k, cols, d, cols, col, cols, beta, dst, ldd_dst);
        }
    }
}

void trn_cpu_conv_dw(TRN_BE, const trn_conv_shape *s, const float *in, const float *delta, float *dw, int lddw)
{
    if (s->batch <= 0 || s->m <= 0) return;
    dwctx x = {be, {0}, in, delta, dw, NULL, lddw, 1, 0, 1, 0};
    make_plan(s, &x.p, 1);
    const plan *p = &x.p;
    /* Small images (one tile each): several side by side per product. */
    if (p->tiles_img == 1 && !p->direct) {
        size_t cols = COL_FLOATS / (size_t)p->k;
        if (cols < (size_t)4 * s->m) cols = (size_t)4 * s->m;
        x.ipt = (int)(cols / (size_t)p->np);
        if (x.ipt < 1) x.ipt = 1;
        if (x.ipt > s->batch) x.ipt = s->batch;
    }
    x.tiles = x.ipt == 1 ? s->batch * p->tiles_img : (s->batch + x.ipt - 1) / x.ipt;
    size_t mk = (size_t)s->m * (size_t)p->k;
    size_t lanes = DW_FLOATS / (mk ? mk : 1);
    if (lanes > DW_LANES) lanes = DW_LANES;
    if (lanes > (size_t)x.tiles) lanes = (size_t)x.tiles;
    if (lanes < 1) lanes = 1;
    x.lanes = (int)lanes;
    if (x.lanes > 1 && !(x.partial = scratch(0, (size_t)(x.lanes - 1) * mk))) x.lanes = 1;
    x.whole = x.lanes > 1;
    if (x.lanes == 1)
        dw_lane(&x, 0);
    else
        trn_parallel_for(x.lanes, dw_lane, &x);
    /* the lanes' partial sums, in lane order */
    for (int g = 1; g < x.lanes; g++) {
        const float *part = x.partial + (size_t)(g - 1) * mk;
        for (int f = 0; f < s->m; f++) {
            float *o = dw + (size_t)f * lddw;
            const float *q = part + (size_t)f * p->k;
            for (int r = 0; r < p->k; r++) o[r] += q[r];
        }
    }
}

/* ---- input gradient --------------------------------------------------------- */

typedef struct dxctx {
    const trn_backend *be;
    plan p;
    const float *delta, *w;
    int ldw;
    float *in_delta;
    int whole;
} dxctx;

static void dx_image(void *v, int b)
{
    const dxctx *x = v;
    const plan *p = &x->p;
    const trn_conv_shape *s = p->s;
    float *im = x->in_delta + (size_t)b * p->img_in;
    for (int t = 0; t < p->tiles_img; t++) {
        int r0 = t * p->rows, r1 = r0 + p->rows < p->oh ? r0 + p->rows : p->oh, cols = (r1 - r0) * p->ow;
        const float *d = x->delta + (size_t)b * s->m * p->np + (size_t)r0 * p->ow;
        if (p->direct) {
            tile_gemm(x->whole, x->be, 1, 0, p->k, cols, s->m, x->w, x->ldw, d, p->np, 1, im + (size_t)r0 * p->ow, p->np);
            continue;
        }
        float *col = scratch(1, (size_t)p->k * cols);
        if (!col) {
            plain_dx(p, d, p->np, x->w, x->ldw, r0 * p->ow, r1 * p->ow, im);
            continue;
        }
        tile_gemm(x->whole, x->be, 1, 0, p->k, cols, s->m, x->w, x->ldw, d, p->np, 0, col, cols);
        col2im_rows(p, col, cols, r0, r1, im);
    }
}

void trn_cpu_conv_dx(TRN_BE, const trn_conv_shape *s, const float *delta, const float *w, int ldw, float *in_delta)
{
    if (s->batch <= 0 || s->m <= 0) return;
    /* Whole products per image only with 64 filters or more (the gemm's
     * depth): base.cfg's conv2 input gradient (800x169x32) ran 1.2x slower
     * in one call than in rows of 256, alexnet.cfg's (k 256..384) 1.1x
     * faster (one thread, CPU time). */
    dxctx x = {be, {0}, delta, w, ldw, in_delta, s->batch > 1 && s->m >= 64};
    make_plan(s, &x.p, 1);
    if (s->batch == 1)
        dx_image(&x, 0);
    else
        trn_parallel_for(s->batch, dx_image, &x);
}
#endif
