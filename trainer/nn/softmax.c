/*
 * softmax.c: the [softmax] layer (Darknet's softmax_layer.c, without
 * hierarchy trees).
 *
 * Keys: groups (1: it must divide the inputs), temperature (1), noloss
 * (0). The output has the input's shape. In a training forward whose
 * truth matches the layer's size, the layer computes Darknet's
 * cross-entropy: loss = -log p where the truth is non-zero, delta =
 * truth - p (the temperature does not enter the gradient, as in Darknet).
 * With distillation targets (trn_net_set_soft_targets) the loss mixes in
 * the KL divergence to a teacher's softened outputs (trn.h says how); with
 * group weights (trn_net_set_group_weights, multi-task training) each
 * group's loss and delta are scaled by its weight.
 */
#include "net.h"
#include "portable.h"

#include <math.h>
#include <stdlib.h>

static const char *const softmax_keys[] = {"groups", "temperature", "noloss", NULL};

typedef struct softmax_state {
    int groups, noloss;
    float temperature;
    float *loss; /* (batch, inputs) per-value loss of the last training forward */
    float *pt;   /* (batch, inputs) softmax(logits / T) for distillation */
} softmax_state;

static int softmax_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    softmax_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    if (trn_build_int(b, "groups", 1, 1, 1 << 24, &s->groups, err) ||
        trn_build_float(b, "temperature", 1, 1e-6f, 1e6f, &s->temperature, err) ||
        trn_build_int(b, "noloss", 0, 0, 1, &s->noloss, err))
        return -1;
    if (l->inputs % (size_t)s->groups)
        return trn_build_fail(b, "groups", err, "groups=%d does not divide the %zu inputs",
                              s->groups, l->inputs);
    l->out = l->in;
    if (!b->net->opts.infer_only)
        return trn_build_account(b, (uint64_t)b->net->batch * l->inputs, "the loss buffer", err);
    return 0;
}

static int softmax_alloc(trn_layer *l, trn_net *net, trn_err *err)
{
    softmax_state *s = l->priv;
    if (net->opts.infer_only) return 0;
    if (!(s->loss = trn_net_alloc_floats(net, (size_t)net->batch * l->inputs)) ||
        !(s->pt = trn_net_alloc_floats(net, (size_t)net->batch * l->inputs)))
        return trn_errf(err, "out of memory for layer %d", l->index);
    return 0;
}

static void softmax_destroy(trn_layer *l, trn_net *net)
{
    softmax_state *s = l->priv;
    if (s) {
        trn_net_release(net, s->loss);
        trn_net_release(net, s->pt);
    }
}

static void softmax_forward(trn_layer *l, trn_net *net, int train)
{
    softmax_state *s = l->priv;
    const trn_backend *be = net->be;
    size_t n = (size_t)net->batch * l->inputs;
    be->softmax(be, l->input, net->batch, (int)l->inputs, s->groups, s->temperature, l->output);
    l->has_cost = 0;
    if (!train || !net->truth_in || s->noloss || l->outputs != trn_net_outputs(net)) return;
    be->softmax_xent(be, n, l->output, net->truth, l->delta, s->loss);
    float a = net->cfg.distill_alpha;
    if (net->soft && a > 0) {
        /* Knowledge distillation (trn_net_set_soft_targets): the label
         * term scaled by 1 - a, plus a * T^2 * KL(q || p_T), whose negative
         * gradient in the logits is a * T * (q - p_T). Computed here on
         * host memory: a GPU backend needs this as a kernel. */
        float t = net->cfg.distill_temperature;
        be->softmax(be, l->input, net->batch, (int)l->inputs, s->groups, t, s->pt);
        const float *q = net->soft;
        for (size_t i = 0; i < n; i++) {
            float kl = q[i] > 0 ? q[i] * (trn_logf(q[i]) - trn_logf(s->pt[i] > 1e-30f ? s->pt[i] : 1e-30f)) : 0;
            l->delta[i] = (1 - a) * l->delta[i] + a * t * (q[i] - s->pt[i]);
            s->loss[i] = (1 - a) * s->loss[i] + a * t * t * kl;
        }
    }
    if (net->group_w) {
        /* Multi-task loss weights (trn_net_set_group_weights): group g's
         * loss and delta times w[g]. Host memory, as distillation. */
        size_t gs = l->inputs / (size_t)s->groups;
        for (size_t i = 0; i < n; i++) {
            float w = net->group_w[(i % l->inputs) / gs];
            l->delta[i] *= w;
            s->loss[i] *= w;
        }
    }
    trn_layer_set_cost(l, s->loss, n);
}

#ifndef TRN_INFER_ONLY
static void softmax_backward(trn_layer *l, trn_net *net)
{
    if (l->in_delta) net->be->axpy(net->be, (size_t)net->batch * l->inputs, 1, l->delta, l->in_delta);
}
#endif

static void softmax_describe(const trn_layer *l, trn_layer_info *info)
{
    const softmax_state *s = l->priv;
    info->groups = s->groups;
    info->act_ops = l->outputs;
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_softmax_kind = {
    .desc = {.kind = TRN_LAYER_SOFTMAX,
             .name = "softmax",
             .aliases = (const char *const[]){"soft", NULL},
             .channels = TRN_CHANNELS_PASS},
    .keys = softmax_keys,
    .setup = softmax_setup,
    .alloc = softmax_alloc,
    .forward = softmax_forward,
    .backward = TRN_TRAIN_FN(softmax_backward),
    .describe = softmax_describe,
    .destroy = softmax_destroy,
};
