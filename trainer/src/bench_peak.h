/* bench_peak.h: `trainer bench`'s machine ceiling (private to trainer/cli):
 * the best large single-precision product any path on this machine
 * reaches, and the cores' peak multiply-add throughput per ISA level. */
#ifndef TRN_BENCH_PEAK_H
#define TRN_BENCH_PEAK_H

#include "trn.h"

/* The products behind the ceiling, each n x n x n on all trn_threads()
 * threads, best of reps after a warm-up, in GFLOPS (0: not measured):
 * OpenBLAS with the core type it runs now (as loaded, or as gemm_path.c
 * set it), OpenBLAS with the core type the CPU's features call for
 * (switched for the measurement where it differs, then back), and our own
 * packed kernels (trn_pgemm, the widest this CPU has). ceiling is the
 * largest; path names it ("openblas", "openblas-<core>", "own-<kernel>"). */
typedef struct bp_ceiling {
    double openblas, openblas_features, own, ceiling;
    char path[48];
} bp_ceiling;
void bp_measure_ceiling(int n, int reps, bp_ceiling *out);

/* Peak GFLOPS of register-resident multiply-add loops on all trn_threads()
 * threads, per ISA level this CPU has (0 where it lacks it): AVX-512 and
 * AVX2 FMA (2 FLOPs per lane), SSE multiply then add (2 FLOPs per lane);
 * NEON FMA on aarch64. For information: no bar is judged against it. */
typedef struct bp_fma {
    double avx512, avx2, sse, neon;
} bp_fma;
void bp_measure_fma(bp_fma *out);

#endif
