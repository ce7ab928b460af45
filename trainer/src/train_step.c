/*
 * train_step.c: training forward, backward, SGD update and the
 * learning-rate policies, with Darknet's semantics (network.c:
 * forward_network, backward_network, update_network, get_current_rate,
 * train_network_datum). Not part of the TRN_INFER_ONLY flavour.
 */
#include "net.h"
#include "trn.h"
#include "portable.h"

#include <math.h>
#include <stdlib.h>

int trn_net_forward_train(trn_net *net, const float *x, const float *truth, trn_err *err)
{
    if (net->opts.infer_only)
        return trn_errf(err, "%s: an inference-only network cannot train", net->name);
    const trn_backend *be = net->be;
    be->upload(be, net->input, x, (size_t)net->batch * trn_net_inputs(net));
    net->truth_in = truth;
    if (truth) be->upload(be, net->truth, truth, (size_t)net->batch * trn_net_outputs(net));
    net->train = 1;
    /* Darknet clears every delta before the layer's forward. */
    for (int i = 0; i < net->n; i++) {
        trn_layer *l = &net->layers[i];
        if (l->delta && !l->output_aliased) be->fill(be, (size_t)net->batch * l->outputs, 0, l->delta);
    }
    int costs = 0;
    float sum = 0;
    for (int i = 0; i < net->n; i++) {
        trn_layer *l = &net->layers[i];
        trn_layer_run(net, l, 0, 1);
        if (l->has_cost) {
            sum += l->cost;
            costs++;
        }
    }
    for (int i = 0; i < net->n; i++) {
        trn_layer *l = &net->layers[i];
        free(l->fixed_rand);
        l->fixed_rand = NULL;
        l->fixed_rand_n = 0;
    }
    net->cost = costs ? sum / costs : 0;
    return 0;
}

int trn_net_backward(trn_net *net, trn_err *err)
{
    if (!net->train) return trn_errf(err, "%s: backward needs a training forward first", net->name);
    for (int i = net->n - 1; i >= 0; i--) {
        trn_layer *l = &net->layers[i];
        if (l->stopbackward) break;
        if (l->ops->backward && l->delta) trn_layer_run(net, l, 1, 1);
    }
    return 0;
}

uint64_t trn_net_current_batch(const trn_net *net)
{
    return net->seen / ((uint64_t)net->batch * net->cfg.subdivisions);
}

float trn_net_rate(const trn_net *net)
{
    const trn_net_config *c = &net->cfg;
    uint64_t b = trn_net_current_batch(net);
    float lr = c->learning_rate;
    if (b < (uint64_t)c->burn_in) return lr * trn_powf((float)b / c->burn_in, c->power);
    switch (c->policy) {
    case TRN_POLICY_CONSTANT: return lr;
    case TRN_POLICY_STEP: return lr * trn_powf(c->scale, (float)(b / (uint64_t)c->step));
    case TRN_POLICY_STEPS:
        for (int i = 0; i < c->num_steps; i++) {
            if ((int64_t)c->steps[i] > (int64_t)b) return lr;
            lr *= c->scales[i];
        }
        return lr;
    case TRN_POLICY_EXP: return lr * trn_powf(c->gamma, (float)b);
    case TRN_POLICY_POLY: return lr * trn_powf(1 - (float)b / (float)c->max_batches, c->power);
    case TRN_POLICY_SIG:
        return lr * (float)(1.0 / (1.0 + trn_exp(c->gamma * ((double)b - c->step))));
    case TRN_POLICY_COUNT: break;
    }
    return lr;
}

void trn_net_update(trn_net *net)
{
    const trn_net_config *c = &net->cfg;
    float rate = trn_net_rate(net);
    int batch = net->batch * c->subdivisions;
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        if (!p->update) continue;
        float lr = rate * net->layers[p->layer].lr_scale;
        /* Darknet: weights decay (u -= decay*B*w), every array steps
         * (x += lr/B*u), and the update array keeps momentum (u *= m). */
        float decay = p->role == TRN_PARAM_WEIGHTS ? -c->decay * batch : 0;
        net->be->sgd(net->be, p->data, p->update, p->mask, p->count, decay, lr / batch, c->momentum);
    }
    trn_lasso_prox(net, rate);
}

int trn_net_train_step(trn_net *net, const float *x, const float *truth, float *loss, trn_err *err)
{
    net->seen += (uint64_t)net->batch;
    if (trn_net_forward_train(net, x, truth, err) != 0 || trn_net_backward(net, err) != 0) {
        net->seen -= (uint64_t)net->batch;
        return -1;
    }
    if ((net->seen / (uint64_t)net->batch) % (uint64_t)net->cfg.subdivisions == 0)
        trn_net_update(net);
    if (loss) *loss = net->cost / net->batch;
    return 0;
}

void trn_net_bn_average(trn_net *net, uint64_t k) { net->bn_average = k; }

void trn_net_set_soft_targets(trn_net *net, const float *q) { net->soft = q; }

void trn_net_set_group_weights(trn_net *net, const float *w) { net->group_w = w; }

float trn_net_cost(const trn_net *net) { return net->cost; }

const float *trn_net_layer_delta(const trn_net *net, int i)
{
    return (i >= 0 && i < net->n) ? net->layers[i].delta : NULL;
}
