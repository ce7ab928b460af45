/*
 * batchnorm.c: batch normalisation inside convolutional and connected
 * layers, with Darknet's arithmetic: the variance of the batch uses the
 * n-1 divisor, normalising divides by sqrt(var) + 1e-6, the backward uses
 * sqrt(var + 1e-5) and the biased-variance derivative (Darknet's
 * backward_batchnorm_layer), and the rolling statistics move by
 * 0.99 * old + 0.01 * batch after every training forward.
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
    bn->x_norm = trn_net_alloc_floats(net, n);
    if (!bn->mean || !bn->variance || !bn->mean_delta || !bn->variance_delta || !bn->x ||
        !bn->x_norm)
        return -1;
    return 0;
}

void trn_bn_free(trn_bn *bn, trn_net *net)
{
    trn_net_release(net, bn->mean);
    trn_net_release(net, bn->variance);
    trn_net_release(net, bn->mean_delta);
    trn_net_release(net, bn->variance_delta);
    trn_net_release(net, bn->x);
    trn_net_release(net, bn->x_norm);
}

/* rolling = 0.99 * rolling + 0.01 * batch, skipping frozen channels. */
static void roll(float *rolling, const float *batch, const float *mask, int c)
{
    for (int k = 0; k < c; k++) {
        if (mask && mask[k] == 0) continue;
        rolling[k] *= 0.99f;
        rolling[k] += 0.01f * batch[k];
    }
}

void trn_bn_forward(trn_bn *bn, trn_net *net, float *out, trn_param *biases, trn_param *scales,
                    trn_param *rmean, trn_param *rvar, int train)
{
    const trn_backend *be = net->be;
    int batch = net->batch, c = bn->c, sp = bn->spatial;
    size_t n = (size_t)batch * c * sp;
    if (train) {
        be->copy(be, n, out, bn->x);
        be->mean(be, out, batch, c, sp, bn->mean);
        be->variance(be, out, bn->mean, batch, c, sp, bn->variance);
        roll(rmean->data, bn->mean, rmean->mask, c);
        roll(rvar->data, bn->variance, rvar->mask, c);
        be->normalize(be, out, bn->mean, bn->variance, batch, c, sp);
        be->copy(be, n, out, bn->x_norm);
    } else {
        be->normalize(be, out, rmean->data, rvar->data, batch, c, sp);
    }
    be->scale_bias(be, out, scales->data, batch, c, sp);
    be->add_bias(be, out, biases->data, batch, c, sp);
}

#ifndef TRN_INFER_ONLY
void trn_bn_backward(trn_bn *bn, trn_net *net, float *delta, trn_param *biases, trn_param *scales)
{
    const trn_backend *be = net->be;
    int batch = net->batch, c = bn->c, sp = bn->spatial;
    be->backward_bias(be, biases->update, delta, batch, c, sp);
    be->backward_scale(be, scales->update, bn->x_norm, delta, batch, c, sp);
    be->scale_bias(be, delta, scales->data, batch, c, sp);
    be->bn_backward(be, bn->x, bn->mean, bn->variance, batch, c, sp, bn->mean_delta,
                    bn->variance_delta, delta);
}
#endif
