/*
 * portable.h: the kernels of DETERMINISM=portable (private; portable.c).
 *
 * trn_pgemm computes every output element as one chain of fused
 * multiply-adds in a fixed k order,
 *     acc = +0; for p = 0 .. k-1: acc = fma(op(A)[i][p], op(B)[p][j], acc)
 *     C[i][j] = beta == 0 ? alpha * acc : alpha * acc + beta * C[i][j]
 * (the last line unfused), whatever the ISA, vector width, tiling or thread
 * count: fma is exactly rounded by IEEE 754, so AVX-512, AVX2+FMA, NEON and
 * the scalar fmaf() fallback produce the same bits.
 *
 * trn_expf .. trn_pow are the transcendental functions the trainer uses. In
 * the default mode they are libm's; in the portable mode our own (double
 * precision polynomials after exact range reduction, then rounded to
 * float), because libm's results are allowed to differ between
 * architectures and versions (glibc picks other code paths where the CPU
 * has fma). Accuracy of ours: within 2 ulp of double before the final
 * rounding, i.e. correctly rounded floats in all but rare ties.
 */
#ifndef TRN_PORTABLE_H
#define TRN_PORTABLE_H

/* C (m, n) = alpha * op(A) op(B) + beta * C, as the backend's gemm slot;
 * runs on the pool (any tiling gives the same bits). */
void trn_pgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
               const float *b, int ldb, float beta, float *c, int ldc);

/* The micro-kernels: TRN_PK_AUTO picks the widest the CPU has. Tests
 * force each one to prove that all give the same bits. */
typedef enum trn_pk { TRN_PK_AUTO, TRN_PK_SCALAR, TRN_PK_AVX2, TRN_PK_AVX512, TRN_PK_NEON,
                      TRN_PK_COUNT } trn_pk;
/* Forces kernel k for later calls; returns 0, or -1 (nothing changed)
 * when this CPU or build lacks it. */
int trn_pgemm_force(trn_pk k);
/* The kernel in use now (never TRN_PK_AUTO). */
trn_pk trn_pgemm_kernel(void);
const char *trn_pk_name(trn_pk k);

/* Mode-dependent math (libm in the default mode, ours in the portable). */
float trn_expf(float x);
float trn_logf(float x);
float trn_cosf(float x);
float trn_tanhf(float x);
float trn_powf(float x, float y);
double trn_exp(double x);
double trn_pow(double x, double y);

#endif /* TRN_PORTABLE_H */
