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

/* x[i] = act(x[i] + b) for i < n (without the bias when has_bias is 0):
 * add_bias's and activate's operations on one row. */
void trn_cpu_bias_act(float *x, int n, float b, int has_bias, trn_activation act);

#endif /* TRN_CPU_H */
