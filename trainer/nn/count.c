/*
 * count.c: counted costs of one forward (trn_net_count_forward), the
 * engine's public MAC counting. The network's backend table is replaced,
 * for one forward, by a copy whose gemm adds m*n*k to the layer the engine
 * is running (net->running, set by trn_layer_run) and whose conv adds its
 * products' batch*m*oh*ow*k, then calls the real kernel (the inner table's,
 * which runs its own products: a kernel's tiles are not counted twice), so
 * the forward computes what a plain one computes.
 *
 * The wrapping table is the first member of the counter, so the wrapper
 * finds its counter from the table it is called through (every kernel's
 * first argument), with no global state; the other slots are the inner
 * table's own, called with the wrapping table, whose ctx is the inner's.
 */
#include "net.h"

#include <string.h>

typedef struct counter {
    trn_backend be; /* first: the table the layers call during the count */
    const trn_backend *inner;
    const trn_net *net;
    trn_forward_counts *out;
    int n;
} counter;

/* One GEMM or convolution call of macs multiply-adds, on the layer running
 * now (outside any layer when none runs). */
static void count_call(const counter *ct, uint64_t macs)
{
    int l = ct->net->running;
    if (l >= 0 && l < ct->n)
        ct->out->layer_macs[l] += macs;
    else
        ct->out->outside_macs += macs;
    ct->out->gemm_calls++;
}

static void counting_gemm(const trn_backend *be, int ta, int tb, int m, int n, int k, float alpha,
                          const float *a, int lda, const float *b, int ldb, float beta, float *c,
                          int ldc)
{
    const counter *ct = (const counter *)be;
    uint64_t macs = (uint64_t)m * (uint64_t)n * (uint64_t)k;
    count_call(ct, macs);
    ct->inner->gemm(ct->inner, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void counting_conv(const trn_backend *be, const trn_conv_shape *s, const float *in, const float *w, int ldw,
                          const float *bias, trn_activation act, float *out)
{
    const counter *ct = (const counter *)be;
    uint64_t macs = (uint64_t)s->batch * (uint64_t)s->m * (uint64_t)trn_conv_out(s->h, s->pad, s->ks, s->stride) *
                    (uint64_t)trn_conv_out(s->w, s->pad, s->ks, s->stride) * (uint64_t)s->c * (uint64_t)s->ks *
                    (uint64_t)s->ks;
    count_call(ct, macs);
    ct->inner->conv(ct->inner, s, in, w, ldw, bias, act, out);
}

int trn_net_count_forward(trn_net *net, const float *x, trn_forward_counts *counts, trn_err *err)
{
    if (!counts || !counts->layer_macs)
        return trn_errf(err, "trn_net_count_forward: no array for the per-layer counts");
    memset(counts->layer_macs, 0, (size_t)net->n * sizeof *counts->layer_macs);
    counts->outside_macs = 0;
    counts->gemm_calls = 0;
    counter ct = {*net->be, net->be, net, counts, net->n};
    ct.be.gemm = counting_gemm;
    ct.be.conv = counting_conv;
    net->be = &ct.be;
    int rc = trn_net_forward(net, x, err);
    net->be = ct.inner;
    return rc;
}
