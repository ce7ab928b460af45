/*
 * portable.c: DETERMINISM=portable's GEMM and math (contracts in portable.h).
 *
 * This file is compiled with -ffp-contract=off like the rest (config.mk):
 * every fused multiply-add below is written out (an intrinsic or fmaf),
 * and no other expression is fused, on any ISA.
 *
 * GEMM blocking: an item of the pool is one block of output rows (a
 * multiple of the kernel's MR) by PG_NB columns. It packs its rows of
 * op(A) into MR-row panels (p-major: k x MR) and its columns of op(B) into
 * NR-column panels (k x NR), zero-padded at the edges, then runs the
 * MR x NR micro-kernel over the whole k for each panel pair. k is never
 * split, so every element is one fma chain in order p = 0 .. k-1.
 */
#include "backend.h"
#include "portable.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

/* ---- micro-kernels: acc (MR x NR, row-major) = A panel x B panel ------- */

#define PK_MAX_MR 8
#define PK_MAX_NR 32

typedef void (*pk_fn)(int k, const float *ap, const float *bp, float *acc);

static void pk_scalar(int k, const float *ap, const float *bp, float *acc)
{
    /* MR 4, NR 4 */
    float c[4][4] = {{0}};
    for (int p = 0; p < k; p++)
        for (int r = 0; r < 4; r++)
            for (int j = 0; j < 4; j++) c[r][j] = fmaf(ap[p * 4 + r], bp[p * 4 + j], c[r][j]);
    memcpy(acc, c, sizeof c);
}

#if defined(__x86_64__)
/* MR 6, NR 16: 12 ymm accumulators. */
__attribute__((target("avx2,fma"))) static void pk_avx2(int k, const float *ap, const float *bp,
                                                        float *acc)
{
    __m256 c[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++) c[r][0] = c[r][1] = _mm256_setzero_ps();
    for (int p = 0; p < k; p++) {
        __m256 b0 = _mm256_loadu_ps(bp + p * 16), b1 = _mm256_loadu_ps(bp + p * 16 + 8);
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++) {
            __m256 a = _mm256_broadcast_ss(ap + p * 6 + r);
            c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++) {
        _mm256_storeu_ps(acc + r * 16, c[r][0]);
        _mm256_storeu_ps(acc + r * 16 + 8, c[r][1]);
    }
}

/* MR 8, NR 32: 16 zmm accumulators. */
__attribute__((target("avx512f"))) static void pk_avx512(int k, const float *ap, const float *bp,
                                                         float *acc)
{
    __m512 c[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) c[r][0] = c[r][1] = _mm512_setzero_ps();
    for (int p = 0; p < k; p++) {
        __m512 b0 = _mm512_loadu_ps(bp + p * 32), b1 = _mm512_loadu_ps(bp + p * 32 + 16);
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            __m512 a = _mm512_set1_ps(ap[p * 8 + r]);
            c[r][0] = _mm512_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm512_fmadd_ps(a, b1, c[r][1]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        _mm512_storeu_ps(acc + r * 32, c[r][0]);
        _mm512_storeu_ps(acc + r * 32 + 16, c[r][1]);
    }
}
#endif

#if defined(__aarch64__)
/* MR 8, NR 8: 16 q-register accumulators. vfmaq_f32(c, a, b) = c + a*b fused. */
static void pk_neon(int k, const float *ap, const float *bp, float *acc)
{
    float32x4_t c[8][2];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) c[r][0] = c[r][1] = vdupq_n_f32(0);
    for (int p = 0; p < k; p++) {
        float32x4_t b0 = vld1q_f32(bp + p * 8), b1 = vld1q_f32(bp + p * 8 + 4);
#pragma GCC unroll 8
        for (int r = 0; r < 8; r++) {
            float32x4_t a = vdupq_n_f32(ap[p * 8 + r]);
            c[r][0] = vfmaq_f32(c[r][0], a, b0);
            c[r][1] = vfmaq_f32(c[r][1], a, b1);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        vst1q_f32(acc + r * 8, c[r][0]);
        vst1q_f32(acc + r * 8 + 4, c[r][1]);
    }
}
#endif

static const struct {
    const char *name;
    pk_fn fn;
    int mr, nr;
} pk_table[] = {
    [TRN_PK_AUTO] = {"auto", NULL, 0, 0},
    [TRN_PK_SCALAR] = {"scalar", pk_scalar, 4, 4},
#if defined(__x86_64__)
    [TRN_PK_AVX2] = {"avx2", pk_avx2, 6, 16},
    [TRN_PK_AVX512] = {"avx512", pk_avx512, 8, 32},
#else
    [TRN_PK_AVX2] = {"avx2", NULL, 0, 0},
    [TRN_PK_AVX512] = {"avx512", NULL, 0, 0},
#endif
#if defined(__aarch64__)
    [TRN_PK_NEON] = {"neon", pk_neon, 8, 8},
#else
    [TRN_PK_NEON] = {"neon", NULL, 0, 0},
#endif
};
_Static_assert(sizeof pk_table / sizeof pk_table[0] == TRN_PK_COUNT, "one row per kernel");

static int pk_available(trn_pk k)
{
    if (k <= TRN_PK_AUTO || k >= TRN_PK_COUNT || !pk_table[k].fn) return 0;
#if defined(__x86_64__)
    if (k == TRN_PK_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (k == TRN_PK_AVX512) return __builtin_cpu_supports("avx512f");
#endif
    return 1;
}

static atomic_int pk_current; /* TRN_PK_AUTO until first use */

trn_pk trn_pgemm_kernel(void)
{
    int k = atomic_load(&pk_current);
    if (k != TRN_PK_AUTO) return (trn_pk)k;
    k = pk_available(TRN_PK_AVX512) ? TRN_PK_AVX512
        : pk_available(TRN_PK_AVX2) ? TRN_PK_AVX2
        : pk_available(TRN_PK_NEON) ? TRN_PK_NEON
                                    : TRN_PK_SCALAR;
    atomic_store(&pk_current, k);
    return (trn_pk)k;
}

int trn_pgemm_force(trn_pk k)
{
    if (k == TRN_PK_AUTO) {
        atomic_store(&pk_current, TRN_PK_AUTO);
        return 0;
    }
    if (!pk_available(k)) return -1;
    atomic_store(&pk_current, k);
    return 0;
}

const char *trn_pk_name(trn_pk k)
{
    return k >= 0 && k < TRN_PK_COUNT ? pk_table[k].name : "?";
}

/* ---- the blocked product ---------------------------------------------- */

#define PG_NB 256 /* columns per item */

typedef struct pgctx {
    int ta, tb, m, n, k, lda, ldb, ldc, mb, items_n;
    float alpha, beta;
    const float *a, *b;
    float *c;
    pk_fn fn;
    int mr, nr;
    int failed; /* an item could not allocate: computed unblocked instead */
} pgctx;

/* One element the slow way, the same fma chain (used when out of memory). */
static float pg_dot(const pgctx *g, int i, int j)
{
    float acc = 0;
    for (int p = 0; p < g->k; p++) {
        float x = g->ta ? g->a[(size_t)p * g->lda + i] : g->a[(size_t)i * g->lda + p];
        float y = g->tb ? g->b[(size_t)j * g->ldb + p] : g->b[(size_t)p * g->ldb + j];
        acc = fmaf(x, y, acc);
    }
    return acc;
}

static void pg_store(const pgctx *g, float *c, float acc)
{
    *c = g->beta == 0 ? g->alpha * acc : g->alpha * acc + g->beta * *c;
}

static void pg_item(void *p, int t)
{
    const pgctx *g = p;
    int i0 = t / g->items_n * g->mb, j0 = t % g->items_n * PG_NB;
    int mm = g->m - i0 < g->mb ? g->m - i0 : g->mb;
    int nn = g->n - j0 < PG_NB ? g->n - j0 : PG_NB;
    int mr = g->mr, nr = g->nr, k = g->k;
    int gm = (mm + mr - 1) / mr, gn = (nn + nr - 1) / nr;
    float *ap = NULL, *bp = NULL;
    if (posix_memalign((void **)&ap, 64, (size_t)gm * mr * k * sizeof *ap) != 0) ap = NULL;
    if (posix_memalign((void **)&bp, 64, (size_t)gn * nr * k * sizeof *bp) != 0) bp = NULL;
    if (!ap || !bp) {
        free(ap);
        free(bp);
        for (int i = i0; i < i0 + mm; i++)
            for (int j = j0; j < j0 + nn; j++)
                pg_store(g, g->c + (size_t)i * g->ldc + j, pg_dot(g, i, j));
        return;
    }
    /* ap[gi][p][r] = op(A)[i0 + gi*mr + r][p], zero past the edge */
    for (int gi = 0; gi < gm; gi++)
        for (int r = 0; r < mr; r++) {
            int i = i0 + gi * mr + r;
            float *dst = ap + (size_t)gi * mr * k + r;
            if (i >= i0 + mm)
                for (int q = 0; q < k; q++) dst[(size_t)q * mr] = 0;
            else if (g->ta)
                for (int q = 0; q < k; q++) dst[(size_t)q * mr] = g->a[(size_t)q * g->lda + i];
            else
                for (int q = 0; q < k; q++) dst[(size_t)q * mr] = g->a[(size_t)i * g->lda + q];
        }
    /* bp[gj][p][c] = op(B)[p][j0 + gj*nr + c], zero past the edge */
    for (int gj = 0; gj < gn; gj++) {
        float *dst = bp + (size_t)gj * nr * k;
        int jb = j0 + gj * nr, w = j0 + nn - jb < nr ? j0 + nn - jb : nr;
        for (int q = 0; q < k; q++) {
            float *row = dst + (size_t)q * nr;
            if (g->tb)
                for (int c = 0; c < w; c++) row[c] = g->b[(size_t)(jb + c) * g->ldb + q];
            else
                memcpy(row, g->b + (size_t)q * g->ldb + jb, (size_t)w * sizeof *row);
            for (int c = w; c < nr; c++) row[c] = 0;
        }
    }
    float acc[PK_MAX_MR * PK_MAX_NR];
    for (int gj = 0; gj < gn; gj++)
        for (int gi = 0; gi < gm; gi++) {
            g->fn(k, ap + (size_t)gi * mr * k, bp + (size_t)gj * nr * k, acc);
            int ib = i0 + gi * mr, jb = j0 + gj * nr;
            int h = i0 + mm - ib < mr ? i0 + mm - ib : mr;
            int w = j0 + nn - jb < nr ? j0 + nn - jb : nr;
            for (int r = 0; r < h; r++)
                for (int c = 0; c < w; c++)
                    pg_store(g, g->c + (size_t)(ib + r) * g->ldc + jb + c, acc[r * nr + c]);
        }
    free(ap);
    free(bp);
}

void trn_pgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
               const float *b, int ldb, float beta, float *c, int ldc)
{
    if (m <= 0 || n <= 0) return;
    trn_pk kind = trn_pgemm_kernel();
    pgctx g = {ta, tb, m, n, k < 0 ? 0 : k, lda, ldb, ldc, 0, 0, alpha, beta, a, b, c,
               pk_table[kind].fn, pk_table[kind].mr, pk_table[kind].nr, 0};
    /* Row blocks of about 96 rows, a multiple of MR (the tiling changes no
     * bit; it only spreads the work). */
    g.mb = m <= 128 ? m : (96 + g.mr - 1) / g.mr * g.mr;
    g.items_n = (n + PG_NB - 1) / PG_NB;
    int items = (m + g.mb - 1) / g.mb * g.items_n;
    trn_parallel_for(items, pg_item, &g);
}

/* ---- math: exact range reduction, then a polynomial in double ---------- */

#define LN2_HI 6.93147180369123816490e-01 /* fdlibm: low 32 bits zero */
#define LN2_LO 1.90821492927058770002e-10
#define PIO2_1 1.57079632673412561417e+00 /* fdlibm: first 33 bits of pi/2 */
#define PIO2_1T 6.07710050650619224932e-11

/* e^x: x = k ln2 + r, |r| <= ln2/2, Taylor to r^13 (error < 1e-17). */
static double p_exp(double x)
{
    if (x != x) return x;
    if (x > 709.78) return HUGE_VAL;
    if (x < -745.2) return 0.0;
    double kd = rint(x * 1.44269504088896338700);
    double r = (x - kd * LN2_HI) - kd * LN2_LO;
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return ldexp(p, (int)kd);
}

/* log x: x = 2^e m, m in [sqrt(1/2), sqrt(2)), s = (m-1)/(m+1),
 * log m = 2 (s + s^3/3 + ... + s^21/21) (error < 1e-17). */
static double p_log(double x)
{
    if (x != x || x < 0) return NAN;
    if (x == 0) return -HUGE_VAL;
    if (x == HUGE_VAL) return x;
    int e;
    double m = frexp(x, &e);
    if (m < 0.70710678118654752440) {
        m *= 2;
        e--;
    }
    double s = (m - 1) / (m + 1), s2 = s * s;
    double p = 1.0 / 21;
    p = p * s2 + 1.0 / 19;
    p = p * s2 + 1.0 / 17;
    p = p * s2 + 1.0 / 15;
    p = p * s2 + 1.0 / 13;
    p = p * s2 + 1.0 / 11;
    p = p * s2 + 1.0 / 9;
    p = p * s2 + 1.0 / 7;
    p = p * s2 + 1.0 / 5;
    p = p * s2 + 1.0 / 3;
    p = p * s2 + 1.0;
    double lm = 2 * s * p;
    return e * LN2_HI + (e * LN2_LO + lm);
}

/* sin and cos of |r| <= pi/4: Taylor to r^17 and r^18. */
static double p_sin_k(double r)
{
    double r2 = r * r, p = -1.0 / 355687428096000.0;
    p = p * r2 + 1.0 / 1307674368000.0;
    p = p * r2 - 1.0 / 6227020800.0;
    p = p * r2 + 1.0 / 39916800.0;
    p = p * r2 - 1.0 / 362880.0;
    p = p * r2 + 1.0 / 5040.0;
    p = p * r2 - 1.0 / 120.0;
    p = p * r2 + 1.0 / 6.0;
    return r - r * r2 * p;
}

static double p_cos_k(double r)
{
    double r2 = r * r, p = 1.0 / 6402373705728000.0;
    p = p * r2 - 1.0 / 20922789888000.0;
    p = p * r2 + 1.0 / 87178291200.0;
    p = p * r2 - 1.0 / 479001600.0;
    p = p * r2 + 1.0 / 3628800.0;
    p = p * r2 - 1.0 / 40320.0;
    p = p * r2 + 1.0 / 720.0;
    p = p * r2 - 1.0 / 24.0;
    p = p * r2 + 0.5;
    return 1 - r2 * p;
}

/* cos x: x = q pi/2 + r (two-part pi/2: exact enough for |x| < 1e5,
 * deterministic for any x). */
static double p_cos(double x)
{
    if (x != x || x == HUGE_VAL || x == -HUGE_VAL) return NAN;
    double q = rint(x * 0.63661977236758134308);
    double r = (x - q * PIO2_1) - q * PIO2_1T;
    long long n = (long long)fmod(q, 4.0);
    if (n < 0) n += 4;
    switch (n) {
    case 0: return p_cos_k(r);
    case 1: return -p_sin_k(r);
    case 2: return -p_cos_k(r);
    default: return p_sin_k(r);
    }
}

static double p_tanh(double x)
{
    double ax = x < 0 ? -x : x;
    if (x != x) return x;
    double t;
    if (ax > 20) t = 1;
    else if (ax < 1e-4) t = ax - ax * ax * ax / 3;
    else t = 1 - 2 / (p_exp(2 * ax) + 1);
    return x < 0 ? -t : t;
}

static double p_pow(double x, double y)
{
    if (y == 0 || x == 1) return 1;
    if (x != x || y != y) return NAN;
    if (x == 0) return y > 0 ? 0.0 : HUGE_VAL;
    if (x < 0) {
        if (floor(y) != y) return NAN;
        double r = p_exp(y * p_log(-x));
        return fmod(y, 2.0) != 0 ? -r : r;
    }
    return p_exp(y * p_log(x));
}

static int portable(void) { return trn_determinism() == TRN_DET_PORTABLE; }

float trn_expf(float x) { return portable() ? (float)p_exp(x) : expf(x); }
float trn_logf(float x) { return portable() ? (float)p_log(x) : logf(x); }
float trn_cosf(float x) { return portable() ? (float)p_cos(x) : cosf(x); }
float trn_tanhf(float x) { return portable() ? (float)p_tanh(x) : tanhf(x); }
float trn_powf(float x, float y) { return portable() ? (float)p_pow(x, y) : powf(x, y); }
double trn_exp(double x) { return portable() ? p_exp(x) : exp(x); }
double trn_pow(double x, double y) { return portable() ? p_pow(x, y) : pow(x, y); }
