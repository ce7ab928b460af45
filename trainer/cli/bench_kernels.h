/* bench_kernels.h: `trainer bench --layers`'s per-layer, per-kernel timer
 * (private to trainer/cli). */
#ifndef TRN_BENCH_KERNELS_H
#define TRN_BENCH_KERNELS_H

#include "trn.h"
#include "backend.h"

#include <stdio.h>

/* Runs `steps` training steps (forward, backward, update) on x, y through
 * a timing copy of the network's backend and prints, per layer and pass,
 * the milliseconds per step of every kind of kernel (and the GFLOPS of the
 * products), then the totals per kernel. -1 with err on failure. */
int bk_run(trn_net *net, const float *x, const float *y, int steps, FILE *out, trn_err *err);

#endif
