/*
 * cpu_winograd.c: the CPU backend's inference forward of 3x3 and 5x5
 * stride-1 convolutions by Winograd's minimal filtering F(2x2, 3x3) and
 * F(2x2, 5x5) (Lavin and Gray, "Fast Algorithms for Convolutional Neural
 * Networks", 2016).
 *
 * Each 2x2 block of outputs of a filter is computed from the 4x4 (6x6)
 * block of input under it as
 * Y = A^T [ sum over channels of (G g G^T) .* (B^T d B) ] A: 16 (36)
 * multiplies per channel where the direct product takes 36 (100): 2.25x
 * (2.8x) fewer. The sum over channels of the 16 (36) element-wise products
 * is as many matrix products, one per position xi of the transformed block:
 *   M[xi] (filters, tiles) = U[xi] (filters, c) . V[xi] (c, tiles)
 * with U = G g G^T the transformed filters and V = B^T d B the transformed
 * input tiles (every image of the batch side by side); OpenBLAS computes
 * them through the table's gemm, like every other product of the backend.
 *
 * Plan: the input transform of the whole batch (or of groups of images
 * when that is large: WG_V_FLOATS) once, spread over the channels; then
 * blocks of WG_MB filters, one pool item each: the item transforms its
 * filters' weights into a buffer of its thread (G g G^T every forward, from
 * the weights as they are, so weights written through any pointer are
 * always seen; the transform reads each weight once, like the direct
 * product, and costs 1/10 (3x3) to 1/4 (5x5) of the block's products at
 * alexnet's shapes, up to a third of the catalog's small layers at batch
 * 1) or, where the caller passes a trn_conv_prep (a borrowed network's
 * layer, whose weights do not change), into it once and reads them there
 * on later forwards; runs the 16 (36) products, and writes its outputs through the output
 * transform, then the bias and the activation (add_bias then activate, as
 * the direct path).
 *
 * Rounding: another summation than the direct product's (the transforms
 * add and subtract inputs before the products), so the results differ from
 * it by rounding: ||winograd - direct|| / ||direct|| about 2e-7 (3x3) and
 * 1.5e-6 (5x5) on random data (test_kernels.c bounds it by 1e-5). Used only where the caller says
 * the forward is an inference's (trn_conv_shape.infer: training keeps the
 * im2col product its backward is the adjoint of), never in the portable
 * determinism mode, and not at all on an engine whose Winograd switch is
 * off (trn_engine_set_winograd; trn_set_winograd for the default one).
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

/* The transforms in one version per x86-64 vector width (GCC's generic
 * vectors then run as one AVX operation instead of two SSE ones), picked
 * at load time: the same IEEE operations in the same order (nothing fused:
 * -ffp-contract=off), so the same bytes. */
/* Not under ThreadSanitizer: the clones' resolvers run while the dynamic
 * linker relocates, before its runtime is up, and crash in its hooks. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && !defined(__SANITIZE_THREAD__)
#define WG_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define WG_CLONES
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

int trn_cpu_winograd_allowed(const trn_conv_shape *s)
{
    return s->infer && trn_winograd() && trn_determinism() != TRN_DET_PORTABLE;
}

/* Slot 0: the caller's transformed input; 1: an item's U; 2: an item's M
 * (or a channel's padded plane); 3: the caller's M of every block. NULL
 * when out of memory. */
static float *wg_scratch(int slot, size_t n)
{
    static const int slots[] = {TRN_SCRATCH_WG_V, TRN_SCRATCH_WG_U, TRN_SCRATCH_WG_M, TRN_SCRATCH_WG_MALL};
    return trn_cpu_scratch(slots[slot], n);
}

typedef struct wgctx {
    const trn_backend *be;
    const trn_conv_shape *s;
    int r, nt, nx;           /* the filter's size r (3 or 5), the tile's nt = r + 1, nx = nt*nt matrices */
    int oh, ow, th, tw, t;   /* output size, tiles per column and row, tiles per image */
    int b0, nb, n;           /* the group: images b0 .. b0+nb-1, n = nb*t columns */
    const float *in, *w, *bias;
    int ldw;
    trn_activation act;
    float *out, *v;          /* v: V[xi] (c, n), nx of them */
    int mb;                  /* filters per block */
    float *pu;               /* the prepared filters (s->prep), block j at pu + j*pstride; NULL: none */
    size_t pstride;
    int pready;              /* pu holds them: no block transforms its filters */
    float *mall;             /* every block's M (run_blocks), block j's at j*nx*mn; NULL: none */
    size_t mn;
    atomic_int fail;         /* an item could not get its buffers */
} wgctx;

/* F(2x2, 5x5): Toom-Cook at the points 0, 1, -1, 2, -2 and infinity (6x6
 * tiles, 36 multiplies per 2x2 outputs and channel where the direct
 * product takes 100). Derived exactly (rationals) and checked: Y = A^T
 * [(G g G^T) .* (B^T d B)] A equals the 5x5 correlation. The transforms
 * below skip the zero coefficients and run over a row of tiles at once
 * (over channels for G), so that they vectorise. */
#define N5 6
static const float BT5[N5][N5] = {
    {4, 0, -5, 0, 1, 0}, {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
    {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1},
};
static const float G5[N5][5] = {
    {1.0f / 4, 0, 0, 0, 0},
    {-1.0f / 6, -1.0f / 6, -1.0f / 6, -1.0f / 6, -1.0f / 6},
    {-1.0f / 6, 1.0f / 6, -1.0f / 6, 1.0f / 6, -1.0f / 6},
    {1.0f / 24, 1.0f / 12, 1.0f / 6, 1.0f / 3, 2.0f / 3},
    {1.0f / 24, -1.0f / 12, 1.0f / 6, -1.0f / 3, 2.0f / 3},
    {0, 0, 0, 0, 1},
};
static const float AT5[2][N5] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 1}};

/* ---- the input transform: V = B^T d B ------------------------------------ */

/* 8 lanes (GCC's generic vectors: two SSE or one AVX operation); loaded
 * and stored through memcpy (no alignment assumed). */
typedef float v8 __attribute__((vector_size(32)));
#define LANES 8
static inline void ld8(v8 *v, const float *p) { memcpy(v, p, sizeof *v); }
/* The first n lanes of v to p (all 8 as one vector store). */
static inline void store(float *p, const v8 *v, int n)
{
    if (n == LANES)
        memcpy(p, v, sizeof *v);
    else
        memcpy(p, v, (size_t)n * sizeof(float));
}

/* F(2x2, 5x5): one row of tiles (ty) of the padded plane pl (rows pw
 * floats apart, readable LANES tiles past tw) into v (tile tx at
 * v[xi*cn + tx]), LANES tiles at a time. */
WG_CLONES static void input_row5(const float *pl, int pw, int tw, float *v, size_t cn)
{
    for (int t0 = 0; t0 < tw; t0 += LANES) {
        int nt = tw - t0 < LANES ? tw - t0 : LANES;
        /* column l of tile t0+q in row k: pl[k*pw + 2*(t0+q) + l], as the
         * even and odd columns from 2*t0 */
        v8 d[N5][N5];
        for (int k = 0; k < N5; k++) {
            float e[LANES + 3], o[LANES + 3];
            const float *row = pl + (size_t)k * pw + 2 * t0;
            for (int q = 0; q < LANES + 3; q++) e[q] = row[2 * q], o[q] = row[2 * q + 1];
#pragma GCC unroll 3
            for (int l = 0; l < N5; l += 2) ld8(&d[k][l], e + l / 2), ld8(&d[k][l + 1], o + l / 2);
        }
        v8 t[N5][N5];
#pragma GCC unroll 6
        for (int i = 0; i < N5; i++) /* B^T d: the rows */
#pragma GCC unroll 6
            for (int l = 0; l < N5; l++) {
                v8 a = {0};
#pragma GCC unroll 6
                for (int k = 0; k < N5; k++)
                    if (BT5[i][k] != 0) a += BT5[i][k] * d[k][l];
                t[i][l] = a;
            }
#pragma GCC unroll 6
        for (int i = 0; i < N5; i++) /* then . B: the columns */
#pragma GCC unroll 6
            for (int j = 0; j < N5; j++) {
                v8 a = {0};
#pragma GCC unroll 6
                for (int l = 0; l < N5; l++)
                    if (BT5[j][l] != 0) a += BT5[j][l] * t[i][l];
                store(v + (size_t)(i * N5 + j) * cn + t0, &a, nt);
            }
    }
}

/* The padded plane's width: its columns, then zeros for input_row5's
 * reads of LANES tiles past the row's last. */
static int plane_w(const wgctx *x) { return 2 * (x->tw + LANES) + x->r - 1; }

WG_CLONES static void input_channel(const wgctx *x, int ch, float *pl)
{
    const trn_conv_shape *s = x->s;
    int ph = 2 * x->th + x->r - 1, pw = plane_w(x), pad = s->pad;
    size_t cn = spaced((size_t)s->c * x->n);
    for (int j = 0; j < x->nb; j++) {
        const float *im = x->in + ((size_t)(x->b0 + j) * s->c + ch) * s->h * s->w;
        /* the plane with its zero padding, to 2*th+r-1 x 2*tw+r-1 */
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
        if (x->r == 5) {
            for (int ty = 0; ty < x->th; ty++)
                input_row5(pl + (size_t)(2 * ty) * pw, pw, x->tw, v + (size_t)ty * x->tw, cn);
            continue;
        }
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

/* Channel ch's input transform, with a padded plane of the thread (the
 * F(2x2, 5x5) row's temporaries after it). */
static void input_one(void *p, int ch)
{
    wgctx *x = p;
    float *pl = wg_scratch(2, (size_t)(2 * x->th + x->r - 1) * plane_w(x));
    if (!pl) {
        atomic_store(&x->fail, 1);
        return;
    }
    input_channel(x, ch, pl);
}

/* ---- a block of filters: U = G g G^T, the products, Y = A^T M A ---------- */

/* F(2x2, 5x5): filter wf's c channels (25 floats apart) into u (channel ch
 * of matrix xi at u[xi*uc + ch]), LANES channels at a time. */
WG_CLONES static void filter5(const float *wf, int c, float *u, size_t uc)
{
    for (int c0 = 0; c0 < c; c0 += LANES) {
        int nc = c - c0 < LANES ? c - c0 : LANES;
        v8 g[25];
        if (nc < LANES) memset(g, 0, sizeof g);
        for (int q = 0; q < nc; q++)
            for (int e = 0; e < 25; e++) g[e][q] = wf[(size_t)(c0 + q) * 25 + e];
        v8 t[N5][5];
#pragma GCC unroll 6
        for (int i = 0; i < N5; i++) /* G g: the columns */
#pragma GCC unroll 5
            for (int l = 0; l < 5; l++) {
                v8 a = {0};
#pragma GCC unroll 5
                for (int k = 0; k < 5; k++)
                    if (G5[i][k] != 0) a += G5[i][k] * g[k * 5 + l];
                t[i][l] = a;
            }
#pragma GCC unroll 6
        for (int i = 0; i < N5; i++) /* then . G^T: the rows */
#pragma GCC unroll 6
            for (int j = 0; j < N5; j++) {
                v8 a = {0};
#pragma GCC unroll 5
                for (int l = 0; l < 5; l++)
                    if (G5[j][l] != 0) a += G5[j][l] * t[i][l];
                store(u + (size_t)(i * N5 + j) * uc + c0, &a, nc);
            }
    }
}

/* F(2x2, 5x5): one row of tiles of a filter's M (tile tx of matrix xi at
 * m[xi*mn + tx], readable LANES tiles past tw) into its two output rows o
 * (ow floats each; only the first when rows is 1), LANES tiles at a time. */
WG_CLONES static void output_row5(const float *m, size_t mn, int tw, float *o, int ow, int rows)
{
    for (int t0 = 0; t0 < tw; t0 += LANES) {
        v8 s[2][N5];
#pragma GCC unroll 2
        for (int i = 0; i < 2; i++) /* A^T M: the rows */
#pragma GCC unroll 6
            for (int l = 0; l < N5; l++) {
                v8 a = {0};
#pragma GCC unroll 6
                for (int k = 0; k < N5; k++)
                    if (AT5[i][k] != 0) {
                        v8 q;
                        ld8(&q, m + (size_t)(k * N5 + l) * mn + t0);
                        a += AT5[i][k] * q;
                    }
                s[i][l] = a;
            }
        for (int i = 0; i < 2 && i < rows; i++) { /* then . A: the columns */
            v8 y[2];
#pragma GCC unroll 2
            for (int j = 0; j < 2; j++) {
                v8 a = {0};
#pragma GCC unroll 6
                for (int l = 0; l < N5; l++)
                    if (AT5[j][l] != 0) a += AT5[j][l] * s[i][l];
                y[j] = a;
            }
            float *d = o + (size_t)i * ow;
            for (int q = 0; q < LANES && 2 * (t0 + q) < ow; q++) {
                d[2 * (t0 + q)] = y[0][q];
                if (2 * (t0 + q) + 1 < ow) d[2 * (t0 + q) + 1] = y[1][q];
            }
        }
    }
}

/* F(2x2, 3x3): one row of tiles of a filter's M (tile tx of matrix xi at
 * m[xi*mn + tx], readable LANES tiles past tw) into its two output rows o
 * (only the first when rows is 1), LANES tiles at a time: the same
 * operations per output as one tile at a time. */
WG_CLONES static void output_row3(const float *m, size_t mn, int tw, float *o, int ow, int rows)
{
    for (int t0 = 0; t0 < tw; t0 += LANES) {
        v8 q[16], t[2][4];
        for (int i = 0; i < 16; i++) ld8(&q[i], m + (size_t)i * mn + t0);
        for (int i = 0; i < 4; i++) { /* A^T M: the rows */
            t[0][i] = q[i] + q[4 + i] + q[8 + i];
            t[1][i] = q[4 + i] - q[8 + i] - q[12 + i];
        }
        for (int i = 0; i < 2 && i < rows; i++) { /* then . A: the columns */
            v8 y0 = t[i][0] + t[i][1] + t[i][2], y1 = t[i][1] - t[i][2] - t[i][3];
            float *d = o + (size_t)i * ow;
            for (int k = 0; k < LANES && 2 * (t0 + k) < ow; k++) {
                d[2 * (t0 + k)] = y0[k];
                if (2 * (t0 + k) + 1 < ow) d[2 * (t0 + k) + 1] = y1[k];
            }
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define WG_AVX2 1

/* F(2x2, 3x3) on x86-64 with AVX2: G g G^T of 8 channels at a time: the 8 channels' 9 taps (72
 * floats in a row) transposed in registers (an 8x8 transpose of the first
 * 8 taps of each channel, the 9th gathered by scalar loads), then the
 * transform on 8 lanes, each result stored as one vector. The same
 * operations per element as the scalar loop, so the same bytes. Returns
 * how many channels it did (a multiple of 8). 2.7x faster than the scalar
 * loop (32 filters x 384 channels: 21 against 56 us at one thread, CPU
 * time); that loop was 8% of a batch-1 alexnet.cfg forward's samples. */
__attribute__((target("avx2"))) static int filter3_avx2(const float *wf, int c, float *u, size_t uc)
{
    const __m256 half = _mm256_set1_ps(0.5f);
    int ch = 0;
    for (; ch + 8 <= c; ch += 8) {
        const float *g = wf + (size_t)ch * 9;
        __m256 r0 = _mm256_loadu_ps(g), r1 = _mm256_loadu_ps(g + 9), r2 = _mm256_loadu_ps(g + 18),
               r3 = _mm256_loadu_ps(g + 27), r4 = _mm256_loadu_ps(g + 36), r5 = _mm256_loadu_ps(g + 45),
               r6 = _mm256_loadu_ps(g + 54), r7 = _mm256_loadu_ps(g + 63);
        __m256 a0 = _mm256_unpacklo_ps(r0, r1), a1 = _mm256_unpackhi_ps(r0, r1), a2 = _mm256_unpacklo_ps(r2, r3),
               a3 = _mm256_unpackhi_ps(r2, r3), a4 = _mm256_unpacklo_ps(r4, r5), a5 = _mm256_unpackhi_ps(r4, r5),
               a6 = _mm256_unpacklo_ps(r6, r7), a7 = _mm256_unpackhi_ps(r6, r7);
        __m256 b0 = _mm256_shuffle_ps(a0, a2, 0x44), b1 = _mm256_shuffle_ps(a0, a2, 0xee),
               b2 = _mm256_shuffle_ps(a1, a3, 0x44), b3 = _mm256_shuffle_ps(a1, a3, 0xee),
               b4 = _mm256_shuffle_ps(a4, a6, 0x44), b5 = _mm256_shuffle_ps(a4, a6, 0xee),
               b6 = _mm256_shuffle_ps(a5, a7, 0x44), b7 = _mm256_shuffle_ps(a5, a7, 0xee);
        __m256 gv[9];
        gv[0] = _mm256_permute2f128_ps(b0, b4, 0x20);
        gv[1] = _mm256_permute2f128_ps(b1, b5, 0x20);
        gv[2] = _mm256_permute2f128_ps(b2, b6, 0x20);
        gv[3] = _mm256_permute2f128_ps(b3, b7, 0x20);
        gv[4] = _mm256_permute2f128_ps(b0, b4, 0x31);
        gv[5] = _mm256_permute2f128_ps(b1, b5, 0x31);
        gv[6] = _mm256_permute2f128_ps(b2, b6, 0x31);
        gv[7] = _mm256_permute2f128_ps(b3, b7, 0x31);
        gv[8] = _mm256_setr_ps(g[8], g[17], g[26], g[35], g[44], g[53], g[62], g[71]);
        __m256 t[4][3];
        for (int i = 0; i < 3; i++) {
            t[0][i] = gv[i];
            t[1][i] = _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(gv[i], gv[3 + i]), gv[6 + i]), half);
            t[2][i] = _mm256_mul_ps(_mm256_add_ps(_mm256_sub_ps(gv[i], gv[3 + i]), gv[6 + i]), half);
            t[3][i] = gv[6 + i];
        }
        float *uf = u + ch;
        for (int i = 0; i < 4; i++) {
            _mm256_storeu_ps(uf + (size_t)(4 * i + 0) * uc, t[i][0]);
            _mm256_storeu_ps(uf + (size_t)(4 * i + 1) * uc,
                             _mm256_mul_ps(_mm256_add_ps(_mm256_add_ps(t[i][0], t[i][1]), t[i][2]), half));
            _mm256_storeu_ps(uf + (size_t)(4 * i + 2) * uc,
                             _mm256_mul_ps(_mm256_add_ps(_mm256_sub_ps(t[i][0], t[i][1]), t[i][2]), half));
            _mm256_storeu_ps(uf + (size_t)(4 * i + 3) * uc, t[i][2]);
        }
    }
    return ch;
}

static int have_avx2(void)
{
    static atomic_int known; /* 0 unknown, 1 no, 2 yes */
    int k = atomic_load(&known);
    if (!k) {
        __builtin_cpu_init();
        k = __builtin_cpu_supports("avx2") ? 2 : 1;
        atomic_store(&known, k);
    }
    return k == 2;
}
#endif

/* U = G g G^T of filters f0 .. f0+mb-1 into u (its nx matrices uc apart). */
static void filter_transform(const wgctx *x, int f0, int mb, float *u, size_t uc)
{
    int c = x->s->c;
    for (int f = 0; f < mb && x->r == 5; f++)
        filter5(x->w + (size_t)(f0 + f) * x->ldw, c, u + (size_t)f * c, uc);
    for (int f = 0; f < mb && x->r == 3; f++) {
        const float *wf = x->w + (size_t)(f0 + f) * x->ldw;
        int ch = 0;
#ifdef WG_AVX2
        if (have_avx2()) ch = filter3_avx2(wf, c, u + (size_t)f * c, uc);
#endif
        for (; ch < c; ch++) {
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
}

/* The products of block j (its mb filters' U at u, uc apart) for the
 * positions xi in [xi0, xi1): M[xi] (mb, n) at mm + xi*mn. */
static void block_products(const wgctx *x, int mb, const float *u, size_t uc, int xi0, int xi1, float *mm,
                           size_t mn)
{
    size_t vn = spaced((size_t)x->s->c * x->n);
    trn_cpu_gemm_whole = 1; /* the items run side by side: one OpenBLAS call per product */
    for (int xi = xi0; xi < xi1; xi++)
        x->be->gemm(x->be, 0, 0, mb, x->n, x->s->c, 1, u + xi * uc, x->s->c, x->v + xi * vn, x->n, 0, mm + xi * mn,
                    x->n);
    trn_cpu_gemm_whole = 0;
}

/* Filter f's outputs from its row of M (mf, the nx matrices mn apart):
 * Y = A^T M A, then the bias and the activation. */
static void filter_output(const wgctx *x, int f, const float *mf, size_t mn)
{
    int np = x->oh * x->ow;
    for (int b = 0; b < x->nb; b++) {
        float *o = x->out + ((size_t)(x->b0 + b) * x->s->m + f) * np;
        const float *mb = mf + (size_t)b * x->t;
        for (int ty = 0; ty < x->th && x->r == 5; ty++)
            output_row5(mb + (size_t)ty * x->tw, mn, x->tw, o + (size_t)(2 * ty) * x->ow, x->ow, x->oh - 2 * ty);
        for (int ty = 0; ty < x->th && x->r == 3; ty++)
            output_row3(mb + (size_t)ty * x->tw, mn, x->tw, o + (size_t)(2 * ty) * x->ow, x->ow, x->oh - 2 * ty);
        if (x->bias || x->act != TRN_ACT_LINEAR)
            trn_cpu_bias_act(o, np, x->bias ? x->bias[f] : 0, x->bias != NULL, x->act);
    }
}

static void filter_block(void *p, int j)
{
    wgctx *x = p;
    const trn_conv_shape *s = x->s;
    int f0 = j * x->mb, f1 = f0 + x->mb < s->m ? f0 + x->mb : s->m, mb = f1 - f0, c = s->c, n = x->n;
    int nx = x->nx;
    size_t uc = spaced((size_t)mb * c), mn = spaced((size_t)mb * n);
    float *u = x->pu ? x->pu + (size_t)j * x->pstride : wg_scratch(1, nx * uc), *mm = wg_scratch(2, nx * mn);
    if (!u || !mm) {
        atomic_store(&x->fail, 1);
        return;
    }
    if (!x->pready) filter_transform(x, f0, mb, u, uc);
    block_products(x, mb, u, uc, 0, nx, mm, mn);
    for (int f = 0; f < mb; f++) filter_output(x, f0 + f, mm + (size_t)f * n, mn);
}

/* With the filters prepared (x->pu), the work of a few blocks is cut finer
 * for the pool: each product M[xi] of each block is an item, then each
 * run of WG_OUT_F filters' output transform (a batch-1 forward of the
 * catalog's small layers has one or two blocks: one or two items for two
 * threads). Every product and every filter's outputs are computed by the
 * same calls as filter_block's, so the same bytes. M of every block lies
 * in one buffer of the caller (x->mall, block j's at j * nx * x->mn). */
#define WG_OUT_F 8

static void prep_block(void *p, int j)
{
    wgctx *x = p;
    int f0 = j * x->mb, mb = f0 + x->mb < x->s->m ? x->mb : x->s->m - f0;
    filter_transform(x, f0, mb, x->pu + (size_t)j * x->pstride, spaced((size_t)mb * x->s->c));
}

static void product_item(void *p, int it)
{
    wgctx *x = p;
    int j = it / x->nx, xi = it % x->nx, f0 = j * x->mb, mb = f0 + x->mb < x->s->m ? x->mb : x->s->m - f0;
    block_products(x, mb, x->pu + (size_t)j * x->pstride, spaced((size_t)mb * x->s->c), xi, xi + 1,
                   x->mall + (size_t)j * x->nx * x->mn, x->mn);
}

static void output_item(void *p, int it)
{
    wgctx *x = p;
    for (int f = it * WG_OUT_F; f < (it + 1) * WG_OUT_F && f < x->s->m; f++) {
        int j = f / x->mb;
        filter_output(x, f, x->mall + (size_t)j * x->nx * x->mn + (size_t)(f - j * x->mb) * x->n, x->mn);
    }
}

/* The blocks of the group, by filter_block, or by the finer items where
 * the filters are prepared and every block's M has a buffer. */
static void run_blocks(wgctx *x, int blocks)
{
    x->mn = spaced((size_t)x->mb * x->n);
    x->mall = x->pu ? wg_scratch(3, (size_t)blocks * x->nx * x->mn) : NULL;
    if (!x->mall) {
        trn_parallel_for(blocks, filter_block, x);
        return;
    }
    if (!x->pready) trn_parallel_for(blocks, prep_block, x);
    x->pready = 1;
    trn_parallel_for(blocks * x->nx, product_item, x);
    trn_parallel_for((x->s->m + WG_OUT_F - 1) / WG_OUT_F, output_item, x);
}

/* At most this many prepared floats per layer (4 MiB; 1.8x (3x3) to 1.4x
 * (5x5) the layer's weights): a larger layer derives its filters per
 * forward, where they cost the least against its products. */
#define PREP_MAX ((size_t)1 << 20)

void trn_conv_prep_clear(trn_conv_prep *p)
{
    free(p->u);
    memset(p, 0, sizeof *p);
}

void trn_cpu_prep_key(trn_conv_prep *p, const trn_conv_shape *s, const float *w, int ldw)
{
    if (p->w == w && p->ldw == ldw && p->c == s->c && p->m == s->m && p->ks == s->ks && p->stride == s->stride)
        return;
    p->ready = 0;
    p->w = w, p->ldw = ldw, p->c = s->c, p->m = s->m, p->ks = s->ks, p->stride = s->stride;
}

/* x's prepared filters in s->prep, when there is one and they fit:
 * nblocks blocks of nx matrices of up to x->mb filters. */
static void prep_attach(wgctx *x, int nblocks)
{
    trn_conv_prep *p = x->s->prep;
    if (!p) return;
    size_t stride = (size_t)x->nx * spaced((size_t)x->mb * x->s->c), need = stride * (size_t)nblocks;
    if (need > PREP_MAX) return;
    if (p->cap < need) {
        free(p->u);
        p->ready = 0;
        p->cap = 0;
        if (!(p->u = malloc(need * sizeof *p->u))) return;
        p->cap = need;
    }
    x->pu = p->u, x->pstride = stride, x->pready = p->ready;
}

int trn_cpu_winograd_applies(const trn_conv_shape *s)
{
    if (!trn_cpu_winograd_allowed(s)) return 0;
    if ((s->ks != 3 && s->ks != 5) || s->stride != 1 || s->c < WG_MIN_C || s->m < WG_MIN_M) return 0;
    int oh = s->h + 2 * s->pad - s->ks + 1, ow = s->w + 2 * s->pad - s->ks + 1;
    return oh >= 1 && ow >= 1 &&
           (size_t)(s->ks + 1) * (s->ks + 1) * s->c * ((oh + 1) / 2) * ((ow + 1) / 2) <= WG_V_FLOATS;
}

int trn_cpu_winograd(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                     trn_activation act, float *out)
{
    if (!trn_cpu_winograd_applies(s)) return -1;
    wgctx x = {be, s, s->ks, s->ks + 1, (s->ks + 1) * (s->ks + 1), 0, 0, 0, 0, 0, 0, 0, 0, in, w, bias, ldw, act,
               out, NULL, 0, NULL, 0, 0, NULL, 0, 0};
    atomic_init(&x.fail, 0);
    x.oh = s->h + 2 * s->pad - s->ks + 1, x.ow = s->w + 2 * s->pad - s->ks + 1;
    x.th = (x.oh + 1) / 2, x.tw = (x.ow + 1) / 2, x.t = x.th * x.tw;
    size_t per = (size_t)x.nx * s->c * x.t; /* V's floats per image, at most WG_V_FLOATS */
    int group = (int)(WG_V_FLOATS / per);
    if (group > s->batch) group = s->batch;
    size_t vfloats = (size_t)x.nx * spaced((size_t)s->c * group * x.t);
    /* blocks of WG_MB filters; an odd count below 8 (alexnet.cfg's conv1
     * by space-to-depth: 96 filters, 3 blocks, 2 + 1 on 2 threads) as
     * twice as many blocks of 16 or more (a function of the shape only) */
    int nb = (s->m + WG_MB - 1) / WG_MB;
    x.mb = WG_MB;
    if (nb % 2 && nb > 1 && nb < 8) x.mb = ((s->m + 2 * nb - 1) / (2 * nb) + 15) / 16 * 16;
    int blocks = (s->m + x.mb - 1) / x.mb;
    prep_attach(&x, blocks);
    for (x.b0 = 0; x.b0 < s->batch; x.b0 += group) {
        x.nb = s->batch - x.b0 < group ? s->batch - x.b0 : group;
        x.n = x.nb * x.t;
        if (!(x.v = wg_scratch(0, vfloats))) return -1;
        trn_cpu_by_channel_runs(s->c, input_one, &x);
        if (!atomic_load(&x.fail)) run_blocks(&x, blocks);
        /* a block without its buffers: the direct path computes it all */
        if (atomic_load(&x.fail)) return -1;
        x.pready = x.pu != NULL; /* the next group's blocks read them */
    }
    if (x.pu) s->prep->ready = 1;
    return 0;
}
