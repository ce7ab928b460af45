/* bench.h: the measurements behind `trainer bench` (bench.c; the verb
 * parses, calls trn_bench and prints): a network's forward and training
 * step on random data, its layers' times, the products of one step on the
 * default and the portable GEMM, the machine's ceiling (bench_peak.h) and
 * its memory bandwidth, and the forward's bounds. Nothing is printed. */
#ifndef TRN_BENCH_H
#define TRN_BENCH_H

#include "trn.h"
#include "bench_peak.h"

/* One layer: forward (and, in the training step, backward) seconds summed
 * over the timed runs, its kind, MACs per image and parameters. */
typedef struct trn_bench_layer {
    trn_layer_kind kind;
    double tf, tb;
    double macs, params;
    int passes; /* products per image in a step: 3, or 2 where no gradient flows on */
} trn_bench_layer;

typedef struct trn_bench_result {
    int layers;                 /* the network's */
    trn_net_totals tot;         /* at batch 1 (the forward's network) */
    long long forward_batch, train_batch;
    double forward_s;           /* summed over the timed forwards */
    double f_ips, f_gf;         /* forward images/s and GFLOPS */
    trn_bench_layer *fwd;       /* [layers]: the forward's */
    double other_flops, fc_bytes; /* the forward's non-connected FLOPs, connected weight bytes */
    int trained;
    double train_s, t_ips, t_gf, conv_gf, conv_share;
    trn_bench_layer *step;      /* [layers]: the training step's */
    int gemm_calls, gemm_shapes; /* -1 calls: not measured */
    double gemm_openblas, gemm_portable;
    trn_gemm_info gemm;
    bp_ceiling ceiling;
    bp_fma fma;
    double copy_gbps;
    double fwd_s, bound, vs_bound, seq_bound; /* the forward against its bounds (0: unknown) */
} trn_bench_result;

typedef struct trn_bench_opts {
    const trn_cfg *cfg;
    long long forward_batch, batch; /* batch 0: the cfg's */
    long long iterations;           /* timed runs of each, after one warm-up */
    long long sgemm;                /* the ceiling's N (0: not measured) */
    long long copy_mib;             /* the copy's size (0: not measured) */
    int train, gemm;                /* measure the training step; and its products */
    /* after the forward is measured (r holds it), when not NULL */
    void (*forward_done)(void *ctx, const trn_bench_result *r);
    /* after the timed training steps, with the network and its batch, when
     * not NULL (trainer bench --layers: the kernels' report); -1 stops */
    int (*after_steps)(void *ctx, trn_net *net, const float *x, const float *y, int steps, trn_err *err);
    void *ctx;
} trn_bench_opts;

/* Measures what o asks for (the threads, determinism and Winograd switch
 * as the caller set them). -1 with err. */
int trn_bench(const trn_bench_opts *o, trn_bench_result *r, trn_err *err) TRN_MUST_CHECK;
void trn_bench_result_free(trn_bench_result *r);

#endif
