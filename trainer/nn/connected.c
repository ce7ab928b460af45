/*
 * connected.c: the [connected] layer (Darknet's connected_layer.c).
 *
 * Keys: output (1), activation (logistic), batch_normalize (0). The input
 * is flattened (c*h*w); the output is output x 1 x 1. Parameters in file
 * order: biases (output), weights (output, inputs), [scales, rolling_mean,
 * rolling_variance].
 *
 * Forward: out (batch, output) = in (batch, inputs) . W^T, then batch-norm
 * (over the batch, one position per channel) or bias, then the activation.
 */
#include "net.h"

#include <stdlib.h>

static const char *const connected_keys[] = {"output", "activation", "batch_normalize", NULL};

typedef struct connected_state {
    int bn;
    trn_bn norm;
} connected_state;

enum { P_BIASES, P_WEIGHTS, P_SCALES, P_MEAN, P_VAR };

static int connected_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    connected_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    int out;
    if (trn_build_int(b, "output", 1, 1, 1 << 24, &out, err) ||
        trn_build_int(b, "batch_normalize", 0, 0, 1, &s->bn, err) ||
        trn_build_activation(b, "logistic", &l->act, err))
        return -1;
    l->out = (trn_shape){out, 1, 1};
    if ((uint64_t)out * l->inputs > (1ull << 31) - 1)
        return trn_build_fail(b, "output", err, "%d outputs x %zu inputs is too many weights",
                              out, l->inputs);
    if (s->bn && b->net->batch < 2 && !b->net->opts.infer_only)
        return trn_build_fail(b, "batch_normalize", err, "batch normalisation of a connected "
                              "layer needs a batch of at least 2 images to train");
    if (trn_build_param(b, l, TRN_PARAM_BIASES, 1, out, err) ||
        trn_build_param(b, l, TRN_PARAM_WEIGHTS, out, (int)l->inputs, err))
        return -1;
    if (s->bn && (trn_build_param(b, l, TRN_PARAM_SCALES, 1, out, err) ||
                  trn_build_param(b, l, TRN_PARAM_ROLLING_MEAN, 1, out, err) ||
                  trn_build_param(b, l, TRN_PARAM_ROLLING_VARIANCE, 1, out, err)))
        return -1;
    if (s->bn && !b->net->opts.infer_only)
        return trn_build_account(b, (uint64_t)b->net->batch * out, "batch-norm buffers", err);
    return 0;
}

static int connected_alloc(trn_layer *l, trn_net *net, trn_err *err)
{
    connected_state *s = l->priv;
    if (s->bn && trn_bn_alloc(&s->norm, net, l->out.c, 1, !net->opts.infer_only))
        return trn_errf(err, "out of memory for layer %d's batch-norm buffers", l->index);
    return 0;
}

static void connected_destroy(trn_layer *l, trn_net *net)
{
    connected_state *s = l->priv;
    if (s && s->bn) trn_bn_free(&s->norm, net);
}

static void connected_forward(trn_layer *l, trn_net *net, int train)
{
    connected_state *s = l->priv;
    const trn_backend *be = net->be;
    int m = net->batch, n = (int)l->outputs, k = (int)l->inputs, kf = (int)l->full_inputs;
    float *out = s->bn ? trn_bn_input(&s->norm, l->output, train) : l->output;
    be->gemm(be, 0, 1, m, n, k, 1, l->input, k, trn_lparam(net, l, P_WEIGHTS)->data, kf, 0, out, n);
    if (s->bn) {
        trn_bn_forward(&s->norm, net, out, l->output, trn_lparam(net, l, P_BIASES),
                       trn_lparam(net, l, P_SCALES), trn_lparam(net, l, P_MEAN),
                       trn_lparam(net, l, P_VAR), train, l->act);
    } else {
        be->add_bias(be, l->output, trn_lparam(net, l, P_BIASES)->data, m, n, 1);
        be->activate(be, l->output, (size_t)m * n, l->act);
    }
}

#ifndef TRN_INFER_ONLY
static void connected_backward(trn_layer *l, trn_net *net)
{
    connected_state *s = l->priv;
    const trn_backend *be = net->be;
    int m = net->batch, n = (int)l->outputs, k = (int)l->inputs, kf = (int)l->full_inputs;
    trn_param *bias = trn_lparam(net, l, P_BIASES), *w = trn_lparam(net, l, P_WEIGHTS);
    if (s->bn)
        trn_bn_backward(&s->norm, net, l->output, l->act, l->delta, bias, trn_lparam(net, l, P_SCALES));
    else
        be->bias_gradient(be, l->output, l->act, m, n, 1, bias->update, l->delta);
    /* dW (n, k) += delta^T (n, m) . in (m, k) */
    be->gemm(be, 1, 0, n, k, m, 1, l->delta, n, l->input, k, 1, w->update, kf);
    /* din (m, k) += delta (m, n) . W (n, k) */
    if (l->in_delta) be->gemm(be, 0, 0, m, k, n, 1, l->delta, n, w->data, kf, 1, l->in_delta, k);
}
#endif

static void connected_describe(const trn_layer *l, trn_layer_info *info)
{
    const connected_state *s = l->priv;
    info->filters = l->out.c;
    info->batch_normalize = s->bn;
    info->macs = (uint64_t)l->inputs * l->outputs;
    info->bias_ops = l->outputs;
    info->bn_ops = s->bn ? 2 * (uint64_t)l->outputs : 0;
    info->act_ops = l->act == TRN_ACT_LINEAR ? 0 : l->outputs;
    info->params = (uint64_t)l->outputs * (s->bn ? 4 : 1) + (uint64_t)l->inputs * l->outputs;
}

/* Capacity: the first `filters` outputs over the active inputs (a prefix
 * of the flattened input, since channels are its outer dimension). */
static int connected_capacity(trn_layer *l, trn_net *net, int filters, trn_err *err)
{
    (void)net;
    (void)err;
    connected_state *s = l->priv;
    l->out = l->full_out;
    if (filters) l->out.c = filters;
    s->norm.c = l->out.c;
    return 0;
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_connected_kind = {
    .desc = {.kind = TRN_LAYER_CONNECTED,
             .name = "connected",
             .aliases = (const char *const[]){"conn", NULL},
             .channels = TRN_CHANNELS_OWN},
    .init_uniform = 1,
    .weights_transposed = 1,
    .keys = connected_keys,
    .setup = connected_setup,
    .alloc = connected_alloc,
    .forward = connected_forward,
    .backward = TRN_TRAIN_FN(connected_backward),
    .describe = connected_describe,
    .destroy = connected_destroy,
    .capacity = connected_capacity,
};
