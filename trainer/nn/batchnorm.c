/*
 * batchnorm.c: batch normalisation inside convolutional and connected
 * layers, with Darknet's arithmetic: the variance of the batch uses the
 * n-1 divisor, normalising divides by sqrt(var) + 1e-6, the backward uses
 * sqrt(var + 1e-5) and the biased-variance derivative (Darknet's
 * backward_batchnorm_layer), and the rolling statistics move by
 * 0.99 * old + 0.01 * batch after every training forward (or, while
 * trn_net_bn_average has set k > 0, become the mean of the k batches
 * averaged so far: old + (batch - old) / k).
 *
 * The passes are fused (backend.h: bn_apply, bn_backward_act): the layer's
 * product writes the pre-normalisation values straight into bn->x, one
 * pass writes the activated output, and the backward recomputes the
 * normalised values from bn->x instead of keeping a copy.
 */
#include "net.h"

int trn_bn_alloc(trn_bn *bn, trn_net *net, int c, int spatial, int training)
{
    bn->c = c;
    bn->spatial = spatial;
    if (!training) return 0;
    size_t n = (size_t)net->batch * c * spatial;
    bn->mean = trn_net_alloc_floats(net, (size_t)c);
    bn->variance = trn_net_alloc_floats(net, (size_t)c);
    bn->mean_delta = trn_net_alloc_floats(net, (size_t)c);
    bn->variance_delta = trn_net_alloc_floats(net, (size_t)c);
    bn->x = trn_net_alloc_floats(net, n);
    if (!bn->mean || !bn->variance || !bn->mean_delta || !bn->variance_delta || !bn->x) return -1;
    return 0;
}

void trn_bn_free(trn_bn *bn, trn_net *net)
{
    trn_net_release(net, bn->mean);
    trn_net_release(net, bn->variance);
    trn_net_release(net, bn->mean_delta);
    trn_net_release(net, bn->variance_delta);
    trn_net_release(net, bn->x);
}

float *trn_bn_input(trn_bn *bn, float *out, int train)
{
    return train && bn->x ? bn->x : out;
}

/* rolling = 0.99 * rolling + 0.01 * batch, or with n > 0 the running mean
 * rolling + (batch - rolling) / n, skipping frozen channels. */
static void roll(float *rolling, const float *batch, const float *mask, int c, uint64_t n)
{
    for (int k = 0; k < c; k++) {
        if (mask && mask[k] == 0) continue;
        if (n) {
            rolling[k] += (batch[k] - rolling[k]) / (float)n;
            continue;
        }
        rolling[k] *= 0.99f;
        rolling[k] += 0.01f * batch[k];
    }
}

void trn_bn_forward(trn_bn *bn, trn_net *net, const float *x, float *out, trn_param *biases,
                    trn_param *scales, trn_param *rmean, trn_param *rvar, int train, trn_activation act)
{
    const trn_backend *be = net->be;
    int batch = net->batch, c = bn->c, sp = bn->spatial;
    if (train && bn->x) {
        be->mean(be, x, batch, c, sp, bn->mean);
        be->variance(be, x, bn->mean, batch, c, sp, bn->variance);
        roll(rmean->data, bn->mean, rmean->mask, c, net->bn_average);
        roll(rvar->data, bn->variance, rvar->mask, c, net->bn_average);
        be->bn_apply(be, x, bn->mean, bn->variance, scales->data, biases->data, batch, c, sp, act, out);
    } else {
        be->bn_apply(be, x, rmean->data, rvar->data, scales->data, biases->data, batch, c, sp, act, out);
    }
}

#ifndef TRN_INFER_ONLY
void trn_bn_backward(trn_bn *bn, trn_net *net, const float *y, trn_activation act, float *delta,
                     trn_param *biases, trn_param *scales)
{
    const trn_backend *be = net->be;
    be->bn_backward_act(be, y, act, bn->x, bn->mean, bn->variance, scales->data, net->batch, bn->c,
                        bn->spatial, biases->update, scales->update, bn->mean_delta, bn->variance_delta,
                        delta);
}
#endif
