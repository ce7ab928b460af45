/*
 * cpu.h: what the CPU backend's files share (private): the convolutions
 * of cpu_conv.c and the element-wise helpers of backend_cpu.c.
 * Contracts: the matching members of trn_backend (backend.h).
 */
#ifndef TRN_CPU_H
#define TRN_CPU_H

#include "net.h"

void trn_cpu_conv(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                  trn_activation act, float *out);
void trn_cpu_conv_dw(TRN_BE, const trn_conv_shape *s, const float *in, const float *delta, float *dw, int lddw);
void trn_cpu_conv_dx(TRN_BE, const trn_conv_shape *s, const float *delta, const float *w, int ldw, float *in_delta);

/* The forward by Winograd's F(2x2, 3x3) or F(2x2, 5x5) (cpu_winograd.c)
 * where it applies (s->infer, 3x3 or 5x5 stride 1, the shape worth it, trn_winograd() on, not the
 * portable mode): 0 when it computed out, -1 when the caller must use the
 * direct product (out may then hold anything). */
int trn_cpu_winograd(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                     trn_activation act, float *out);
/* Whether trn_cpu_winograd computes a convolution of shape s (rather than
 * answering -1 before any work, on the shape and the settings alone). */
int trn_cpu_winograd_applies(const trn_conv_shape *s);
/* Keeps s->prep's filters if they were made from w, ldw and s's channels,
 * filters, size and stride; otherwise marks them to be made again. */
void trn_cpu_prep_key(trn_conv_prep *p, const trn_conv_shape *s, const float *w, int ldw);
/* Whether a convolution may be computed by another algorithm than its
 * im2col product (Winograd, space-to-depth then Winograd): an inference's
 * forward (s->infer), trn_winograd() on, not the portable mode. */
int trn_cpu_winograd_allowed(const trn_conv_shape *s);
/* fn(ctx, ch) for every channel ch < c, on the pool in a few runs of
 * adjacent channels (cpu_conv.c): each channel by one call, whichever
 * thread runs it. */
void trn_cpu_by_channel_runs(int c, void (*fn)(void *, int), void *ctx);

/* Set (non-zero) by a convolution around the gemm of one of its tiles when
 * the tiles themselves run side by side on the pool (a function of the
 * shape only, never of the thread count): cpu_gemm then makes one OpenBLAS
 * call of the whole tile instead of cutting it again into sub-tiles that
 * the pool would run one after the other anyway (each sub-tile packed its
 * operand again: up to 15% of alexnet.cfg's products). Thread-local, so
 * a wrapping table's gemm (timing, counting) passes it through. */
extern _Thread_local int trn_cpu_gemm_whole;

/* Per-thread scratch buffers of the CPU backend (cpu_conv.c), 64-byte
 * aligned, kept and grown per thread; each user has slots of its own, so
 * that one never reuses another's buffer while it is in use. NULL when out
 * of memory. */
enum {
    TRN_SCRATCH_CONV_SUMS,   /* a convolution's caller: partial sums */
    TRN_SCRATCH_CONV_TILE,   /* a convolution's tile: its im2col */
    TRN_SCRATCH_CONV_ROWS,   /* a convolution's tile: its padded input rows */
    TRN_SCRATCH_WG_V,        /* Winograd's caller: the transformed input */
    TRN_SCRATCH_WG_U,        /* a Winograd item: the transformed filters */
    TRN_SCRATCH_WG_M,        /* a Winograd item: the products (or a channel's padded plane) */
    TRN_SCRATCH_WG_MALL,     /* Winograd's caller: every block's products */
    TRN_SCRATCH_FEW,         /* a product with few rows: a tile of the transposed product */
    TRN_SCRATCH_SLOTS
};
float *trn_cpu_scratch(int slot, size_t n);

/* x[i] = act(x[i] + b) for i < n (without the bias when has_bias is 0):
 * add_bias's and activate's operations on one row. */
void trn_cpu_bias_act(float *x, int n, float b, int has_bias, trn_activation act);

#endif /* TRN_CPU_H */
