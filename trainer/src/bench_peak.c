/*
 * bench_peak.c: `trainer bench`'s machine ceiling (contracts in
 * bench_peak.h). Issue 37: a bar judged against OpenBLAS as loaded cannot
 * tell a fast program from a slow one where OpenBLAS itself runs its SSE3
 * kernels (a VM with a masked CPUID model); the ceiling is the best any
 * path here reaches.
 */
#include "bench_peak.h"

#include "backend.h"
#include "portable.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *ramp(size_t n, float step)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    for (size_t i = 0; x && i < n; i++) x[i] = (float)(i % 17) * step - 0.5f;
    return x;
}

/* One n x n x n product: OpenBLAS with its own threading on trn_threads()
 * threads (the library keeps it single-threaded otherwise), or ours. */
static double product_gflops(int n, int reps, int own)
{
    size_t nn = (size_t)n * n;
    float *a = ramp(nn, 0.0625f), *b = ramp(nn, 0.03125f), *c = calloc(nn ? nn : 1, sizeof *c);
    double best = 0;
    trn_blas_single_thread();
    if (!own) openblas_set_num_threads(trn_threads());
    for (int r = 0; a && b && c && r <= reps; r++) {
        double t0 = now_s();
        if (own)
            trn_pgemm(0, 0, n, n, n, 1, a, n, b, n, 0, c, n);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double g = 2.0 * n * n * (double)n / (now_s() - t0) / 1e9;
        if (r && g > best) best = g; /* the first run warms up */
    }
    if (!own) openblas_set_num_threads(1);
    free(a), free(b), free(c);
    return best;
}

void bp_measure_ceiling(int n, int reps, bp_ceiling *out)
{
    trn_gemm_info in;
    trn_gemm_info_get(&in);
    memset(out, 0, sizeof *out);
    out->openblas = product_gflops(n, reps, 0);
    out->openblas_features = out->openblas;
    if (strcmp(in.openblas_core, in.cpu_core) != 0 && trn_blas_force_core(in.cpu_core) == 0) {
        out->openblas_features = product_gflops(n, reps, 0);
        trn_blas_force_core(in.openblas_core);
    }
    out->own = product_gflops(n, reps, 1);
    out->ceiling = out->openblas;
    snprintf(out->path, sizeof out->path, "openblas-%s", in.openblas_core);
    if (out->openblas_features > out->ceiling) {
        out->ceiling = out->openblas_features;
        snprintf(out->path, sizeof out->path, "openblas-%s", in.cpu_core);
    }
    if (out->own > out->ceiling) {
        out->ceiling = out->own;
        snprintf(out->path, sizeof out->path, "own-%s", trn_pk_name(trn_pgemm_kernel()));
    }
}

/* ---- register-resident multiply-add loops ------------------------------ */

#define FMA_ITERS 2000000 /* per item */
#define FMA_ACCS 12       /* independent chains: latency 4 x 2 ports, and more */

typedef struct fmajob {
    int isa;
    volatile float sink;
} fmajob;

enum { ISA_AVX512, ISA_AVX2, ISA_SSE, ISA_NEON, ISA_COUNT };
static const int isa_lanes[ISA_COUNT] = {16, 8, 4, 4};

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float loop_avx512(void)
{
    __m512 c[FMA_ACCS], a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    for (int i = 0; i < FMA_ACCS; i++) c[i] = _mm512_set1_ps((float)i);
    for (long it = 0; it < FMA_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < FMA_ACCS; i++) c[i] = _mm512_fmadd_ps(c[i], a, b);
    float s = 0;
    for (int i = 0; i < FMA_ACCS; i++) s += _mm512_reduce_add_ps(c[i]);
    return s;
}

__attribute__((target("avx2,fma"))) static float loop_avx2(void)
{
    __m256 c[FMA_ACCS], a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    for (int i = 0; i < FMA_ACCS; i++) c[i] = _mm256_set1_ps((float)i);
    for (long it = 0; it < FMA_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < FMA_ACCS; i++) c[i] = _mm256_fmadd_ps(c[i], a, b);
    float s = 0, v[8];
    for (int i = 0; i < FMA_ACCS; i++) {
        _mm256_storeu_ps(v, c[i]);
        for (int j = 0; j < 8; j++) s += v[j];
    }
    return s;
}

static float loop_sse(void)
{
    __m128 c[FMA_ACCS], a = _mm_set1_ps(0.999999f), b = _mm_set1_ps(1e-7f);
    for (int i = 0; i < FMA_ACCS; i++) c[i] = _mm_set1_ps((float)i);
    for (long it = 0; it < FMA_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < FMA_ACCS; i++) c[i] = _mm_add_ps(_mm_mul_ps(c[i], a), b);
    float s = 0, v[4];
    for (int i = 0; i < FMA_ACCS; i++) {
        _mm_storeu_ps(v, c[i]);
        for (int j = 0; j < 4; j++) s += v[j];
    }
    return s;
}
#endif

#if defined(__aarch64__)
static float loop_neon(void)
{
    float32x4_t c[FMA_ACCS], a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
    for (int i = 0; i < FMA_ACCS; i++) c[i] = vdupq_n_f32((float)i);
    for (long it = 0; it < FMA_ITERS; it++)
#pragma GCC unroll 12
        for (int i = 0; i < FMA_ACCS; i++) c[i] = vfmaq_f32(b, c[i], a);
    float s = 0;
    for (int i = 0; i < FMA_ACCS; i++) s += vaddvq_f32(c[i]);
    return s;
}
#endif

static void fma_item(void *p, int i)
{
    fmajob *j = p;
    (void)i;
    float s = 0;
#if defined(__x86_64__)
    s = j->isa == ISA_AVX512 ? loop_avx512() : j->isa == ISA_AVX2 ? loop_avx2() : loop_sse();
#elif defined(__aarch64__)
    s = loop_neon();
#endif
    j->sink = s;
}

/* Best of 3 rounds of 2 items per thread; 0 when the CPU lacks the ISA. */
static double fma_gflops(int isa)
{
#if defined(__x86_64__)
    if (isa == ISA_NEON) return 0;
    if (isa == ISA_AVX512 && !__builtin_cpu_supports("avx512f")) return 0;
    if (isa == ISA_AVX2 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0;
#elif defined(__aarch64__)
    if (isa != ISA_NEON) return 0;
#else
    return 0;
#endif
    fmajob j = {isa, 0};
    int items = 2 * trn_threads();
    double best = 0, flops = 2.0 * isa_lanes[isa] * FMA_ACCS * (double)FMA_ITERS * items;
    for (int r = 0; r < 3; r++) {
        double t0 = now_s();
        trn_parallel_for(items, fma_item, &j);
        double g = flops / (now_s() - t0) / 1e9;
        if (g > best) best = g;
    }
    return best;
}

void bp_measure_fma(bp_fma *out)
{
    out->avx512 = fma_gflops(ISA_AVX512);
    out->avx2 = fma_gflops(ISA_AVX2);
    out->sse = fma_gflops(ISA_SSE);
    out->neon = fma_gflops(ISA_NEON);
}
