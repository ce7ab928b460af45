/*
 * cpu_winograd.c: the CPU backend's inference forward of 3x3 stride-1
 * convolutions by Winograd's minimal filtering F(2x2, 3x3) (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
 *
 * Each 2x2 block of outputs of a filter is computed from the 4x4 block of
 * input under it as Y = A^T [ sum over channels of (G g G^T) .* (B^T d B) ] A:
 * 16 multiplies per channel where the direct product takes 36 (2.25x fewer).
 * The sum over channels of the 16 element-wise products is 16 matrix
 * products, one per position xi of the 4x4 transformed block:
 *   M[xi] (filters, tiles) = U[xi] (filters, c) . V[xi] (c, tiles)
 * with U = G g G^T the transformed filters and V = B^T d B the transformed
 * input tiles (every image of the batch side by side); OpenBLAS computes
 * them through the table's gemm, like every other product of the backend.
 *
 * Plan: the input transform of the whole batch (or of groups of images
 * when that is large: WG_V_FLOATS) once, spread over the channels; then
 * blocks of WG_MB filters, one pool item each: the item transforms its
 * filters' weights into a buffer of its thread (G g G^T every forward, from
 * the weights as they are: nothing is cached, so weights written through
 * any pointer are always seen; the transform reads each weight once, like
 * the direct product, and costs 1/20 of the block's products at alexnet's
 * shapes), runs the 16 products, and writes its outputs through the output
 * transform, then the bias and the activation (add_bias then activate, as
 * the direct path).
 *
 * Rounding: another summation than the direct product's (the transforms
 * add and subtract inputs before the products), so the results differ from
 * it by rounding: ||winograd - direct|| / ||direct|| about 1e-7 on random
 * data (test_kernels.c bounds it by 1e-5). Used only where the caller says
 * the forward is an inference's (trn_conv_shape.infer: training keeps the
 * im2col product its backward is the adjoint of), never in the portable
 * determinism mode, and not at all after trn_set_winograd(0).
 *
 * Determinism: the groups, the filter blocks and the gemm calls depend on
 * the shape only; a channel's input transform is the same whichever thread
 * runs it. The same bytes for any thread count.
 */
#include "cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__OPTIMIZE__) && defined(__GNUC__) && !defined(__clang__)
/* Vectorise the loops (the results do not change: no -ffast-math, and
 * -ffp-contract=off holds). */
#pragma GCC optimize("O3")
#endif

/* Filters per pool item. */
#define WG_MB 32
/* The transformed input of a group of images, at most this many floats
 * (images of more than that alone use the direct product). */
#define WG_V_FLOATS ((size_t)4 << 20)
/* Shapes worth it: at least this many input channels and filters (the
 * products' depth and height). */
#define WG_MIN_C 32
#define WG_MIN_M 32

/* The 16 matrices of U, V and M lie this many floats apart: their size
 * rounded up to a cache line, plus one line. Without the extra line, sizes
 * of a multiple of 4 KiB (32 filters x 384 channels) put the 16 rows that
 * a transform writes or reads together into one set of the L1 cache. */
static size_t spaced(size_t floats) { return (floats + 15) / 16 * 16 + 16; }

static atomic_int wg_off;

void trn_set_winograd(int on) { atomic_store(&wg_off, !on); }
int trn_winograd(void) { return !atomic_load(&wg_off); }

static _Thread_local struct {
    float *p;
    size_t n;
} wg_tls[3];

/* Slot 0: the caller's transformed input; 1: an item's U; 2: an item's M
 * (or a channel's padded plane). NULL when out of memory. */
static float *wg_scratch(int slot, size_t n)
{
    if (wg_tls[slot].n < n) {
        free(wg_tls[slot].p);
        void *p = NULL;
        if (posix_memalign(&p, 64, (n ? n : 1) * sizeof(float)) != 0) p = NULL;
        wg_tls[slot].p = p;
        wg_tls[slot].n = p ? n : 0;
    }
    return wg_tls[slot].p;
}

typedef struct wgctx {
    const trn_backend *be;
    const trn_conv_shape *s;
    int oh, ow, th, tw, t;   /* output size, tiles per column and row, tiles per image */
    int b0, nb, n;           /* the group: images b0 .. b0+nb-1, n = nb*t columns */
    const float *in, *w, *bias;
    int ldw;
    trn_activation act;
    float *out, *v;          /* v: V[xi] (c, n), 16 of them */
    int runs;
    atomic_int fail;         /* an item could not get its buffers */
} wgctx;

/* ---- the input transform: V = B^T d B ------------------------------------ */

static void input_channel(const wgctx *x, int ch, float *pl)
{
    const trn_conv_shape *s = x->s;
    int ph = 2 * x->th + 2, pw = 2 * x->tw + 2, pad = s->pad;
    size_t cn = spaced((size_t)s->c * x->n);
    for (int j = 0; j < x->nb; j++) {
        const float *im = x->in + ((size_t)(x->b0 + j) * s->c + ch) * s->h * s->w;
        /* the plane with its zero padding, to 2*th+2 x 2*tw+2 */
        for (int y = 0; y < ph; y++) {
            float *d = pl + (size_t)y * pw;
            int iy = y - pad;
            if (iy < 0 || iy >= s->h) {
                memset(d, 0, (size_t)pw * sizeof *d);
                continue;
            }
            int x0 = pad < pw ? pad : pw, x1 = pad + s->w < pw ? pad + s->w : pw;
            memset(d, 0, (size_t)x0 * sizeof *d);
            memcpy(d + x0, im + (size_t)iy * s->w, (size_t)(x1 - x0) * sizeof *d);
            if (x1 < pw) memset(d + x1, 0, (size_t)(pw - x1) * sizeof *d);
        }
        float *v = x->v + (size_t)ch * x->n + (size_t)j * x->t;
        for (int ty = 0; ty < x->th; ty++) {
            const float *r0 = pl + (size_t)(2 * ty) * pw, *r1 = r0 + pw, *r2 = r1 + pw, *r3 = r2 + pw;
            for (int tx = 0; tx < x->tw; tx++) {
                float t[4][4];
                for (int i = 0; i < 4; i++) { /* B^T d: the rows */
                    int c = 2 * tx + i;
                    t[0][i] = r0[c] - r2[c];
                    t[1][i] = r1[c] + r2[c];
                    t[2][i] = r2[c] - r1[c];
                    t[3][i] = r1[c] - r3[c];
                }
                size_t at = (size_t)ty * x->tw + tx;
                for (int i = 0; i < 4; i++) { /* then . B: the columns */
                    v[(size_t)(4 * i + 0) * cn + at] = t[i][0] - t[i][2];
                    v[(size_t)(4 * i + 1) * cn + at] = t[i][1] + t[i][2];
                    v[(size_t)(4 * i + 2) * cn + at] = t[i][2] - t[i][1];
                    v[(size_t)(4 * i + 3) * cn + at] = t[i][1] - t[i][3];
                }
            }
        }
    }
}

static void input_run(void *p, int r)
{
    wgctx *x = p;
    int c0 = (int)((long long)x->s->c * r / x->runs), c1 = (int)((long long)x->s->c * (r + 1) / x->runs);
    float *pl = wg_scratch(2, (size_t)(2 * x->th + 2) * (2 * x->tw + 2));
    if (!pl) {
        atomic_store(&x->fail, 1);
        return;
    }
    for (int ch = c0; ch < c1; ch++) input_channel(x, ch, pl);
}

/* ---- a block of filters: U = G g G^T, the products, Y = A^T M A ---------- */

static void filter_block(void *p, int j)
{
    wgctx *x = p;
    const trn_conv_shape *s = x->s;
    int f0 = j * WG_MB, f1 = f0 + WG_MB < s->m ? f0 + WG_MB : s->m, mb = f1 - f0, c = s->c, n = x->n;
    size_t uc = spaced((size_t)mb * c), vn = spaced((size_t)c * n), mn = spaced((size_t)mb * n);
    float *u = wg_scratch(1, 16 * uc), *mm = wg_scratch(2, 16 * mn);
    if (!u || !mm) {
        atomic_store(&x->fail, 1);
        return;
    }
    for (int f = 0; f < mb; f++) {
        const float *wf = x->w + (size_t)(f0 + f) * x->ldw;
        for (int ch = 0; ch < c; ch++) {
            const float *g = wf + (size_t)ch * 9;
            float t[4][3];
            for (int i = 0; i < 3; i++) { /* G g: the columns */
                t[0][i] = g[i];
                t[1][i] = (g[i] + g[3 + i] + g[6 + i]) * 0.5f;
                t[2][i] = (g[i] - g[3 + i] + g[6 + i]) * 0.5f;
                t[3][i] = g[6 + i];
            }
            float *uf = u + (size_t)f * c + ch;
            for (int i = 0; i < 4; i++) { /* then . G^T: the rows */
                uf[(size_t)(4 * i + 0) * uc] = t[i][0];
                uf[(size_t)(4 * i + 1) * uc] = (t[i][0] + t[i][1] + t[i][2]) * 0.5f;
                uf[(size_t)(4 * i + 2) * uc] = (t[i][0] - t[i][1] + t[i][2]) * 0.5f;
                uf[(size_t)(4 * i + 3) * uc] = t[i][2];
            }
        }
    }
    trn_cpu_gemm_whole = 1; /* the blocks run side by side: one OpenBLAS call per product */
    for (int xi = 0; xi < 16; xi++)
        x->be->gemm(x->be, 0, 0, mb, n, c, 1, u + xi * uc, c, x->v + xi * vn, n, 0, mm + xi * mn, n);
    trn_cpu_gemm_whole = 0;
    int np = x->oh * x->ow;
    for (int f = 0; f < mb; f++)
        for (int b = 0; b < x->nb; b++) {
            float *o = x->out + ((size_t)(x->b0 + b) * s->m + f0 + f) * np;
            const float *mf = mm + (size_t)f * n + (size_t)b * x->t;
            for (int ty = 0; ty < x->th; ty++)
                for (int tx = 0; tx < x->tw; tx++) {
                    const float *q = mf + (size_t)ty * x->tw + tx;
                    float m[16], t[2][4];
                    for (int i = 0; i < 16; i++) m[i] = q[(size_t)i * mn];
                    for (int i = 0; i < 4; i++) { /* A^T M: the rows */
                        t[0][i] = m[i] + m[4 + i] + m[8 + i];
                        t[1][i] = m[4 + i] - m[8 + i] - m[12 + i];
                    }
                    int oy = 2 * ty, ox = 2 * tx;
                    for (int i = 0; i < 2 && oy + i < x->oh; i++) { /* then . A: the columns */
                        float *d = o + (size_t)(oy + i) * x->ow + ox;
                        d[0] = t[i][0] + t[i][1] + t[i][2];
                        if (ox + 1 < x->ow) d[1] = t[i][1] - t[i][2] - t[i][3];
                    }
                }
            if (x->bias || x->act != TRN_ACT_LINEAR)
                trn_cpu_bias_act(o, np, x->bias ? x->bias[f0 + f] : 0, x->bias != NULL, x->act);
        }
}

int trn_cpu_winograd(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                     trn_activation act, float *out)
{
    if (!s->infer || !trn_winograd() || trn_determinism() == TRN_DET_PORTABLE) return -1;
    if (s->ks != 3 || s->stride != 1 || s->c < WG_MIN_C || s->m < WG_MIN_M) return -1;
    wgctx x = {be, s, 0, 0, 0, 0, 0, 0, 0, 0, in, w, bias, ldw, act, out, NULL, 0, 0};
    atomic_init(&x.fail, 0);
    x.oh = s->h + 2 * s->pad - 2, x.ow = s->w + 2 * s->pad - 2;
    if (x.oh < 1 || x.ow < 1) return -1;
    x.th = (x.oh + 1) / 2, x.tw = (x.ow + 1) / 2, x.t = x.th * x.tw;
    size_t per = (size_t)16 * s->c * x.t; /* V's floats per image */
    if (per > WG_V_FLOATS) return -1;
    int group = (int)(WG_V_FLOATS / per);
    if (group > s->batch) group = s->batch;
    size_t vfloats = 16 * spaced((size_t)s->c * group * x.t);
    int runs = 4 * trn_threads();
    x.runs = runs < s->c ? runs : s->c;
    for (x.b0 = 0; x.b0 < s->batch; x.b0 += group) {
        x.nb = s->batch - x.b0 < group ? s->batch - x.b0 : group;
        x.n = x.nb * x.t;
        if (!(x.v = wg_scratch(0, vfloats))) return -1;
        trn_parallel_for(x.runs, input_run, &x);
        if (!atomic_load(&x.fail)) trn_parallel_for((s->m + WG_MB - 1) / WG_MB, filter_block, &x);
        /* a block without its buffers: the direct path computes it all */
        if (atomic_load(&x.fail)) return -1;
    }
    return 0;
}
