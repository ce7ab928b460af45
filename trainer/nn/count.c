/*
 * count.c: counted costs of one forward (trn_net_count_forward), the
 * engine's public MAC counting. The network's backend table is replaced,
 * for one forward, by a copy whose gemm adds m*n*k to the layer the engine
 * is running (net->running, set by trn_layer_run) and then calls the real
 * gemm, so the forward computes what a plain one computes.
 *
 * The gemm slot carries no context argument, so the wrapper finds its
 * counter through a thread-local pointer set only while the counted
 * forward runs: the layers call gemm from the forward's own thread.
 */
#include "net.h"

#include <string.h>

typedef struct counter {
    const trn_backend *inner;
    const trn_net *net;
    trn_forward_counts *out;
    int n;
} counter;
static _Thread_local counter *counting;

static void counting_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                          const float *b, int ldb, float beta, float *c, int ldc)
{
    counter *ct = counting;
    uint64_t macs = (uint64_t)m * (uint64_t)n * (uint64_t)k;
    int l = ct->net->running;
    if (l >= 0 && l < ct->n)
        ct->out->layer_macs[l] += macs;
    else
        ct->out->outside_macs += macs;
    ct->out->gemm_calls++;
    ct->inner->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int trn_net_count_forward(trn_net *net, const float *x, trn_forward_counts *counts, trn_err *err)
{
    if (!counts || !counts->layer_macs)
        return trn_errf(err, "trn_net_count_forward: no array for the per-layer counts");
    if (counting)
        return trn_errf(err, "trn_net_count_forward: already counting on this thread");
    memset(counts->layer_macs, 0, (size_t)net->n * sizeof *counts->layer_macs);
    counts->outside_macs = 0;
    counts->gemm_calls = 0;
    counter ct = {net->be, net, counts, net->n};
    trn_backend wrapped = *net->be;
    wrapped.gemm = counting_gemm;
    net->be = &wrapped;
    counting = &ct;
    int rc = trn_net_forward(net, x, err);
    counting = NULL;
    net->be = ct.inner;
    return rc;
}
