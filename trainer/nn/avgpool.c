/*
 * avgpool.c: the [avgpool] layer (Darknet's avgpool_layer.c): the global
 * average of every channel; c x h x w -> c x 1 x 1. No keys.
 */
#include "net.h"

static int avgpool_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    (void)b;
    (void)err;
    l->out = (trn_shape){l->in.c, 1, 1};
    return 0;
}

static void avgpool_forward(trn_layer *l, trn_net *net, int train)
{
    (void)train;
    net->be->avgpool(net->be, l->input, net->batch, l->in.c, l->in.h * l->in.w, l->output);
}

#ifndef TRN_INFER_ONLY
static void avgpool_backward(trn_layer *l, trn_net *net)
{
    if (l->in_delta)
        net->be->avgpool_backward(net->be, l->delta, net->batch, l->in.c, l->in.h * l->in.w, l->in_delta);
}
#endif

static void avgpool_describe(const trn_layer *l, trn_layer_info *info)
{
    info->pool_ops = l->inputs;
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_avgpool_kind = {
    .desc = {.kind = TRN_LAYER_AVGPOOL,
             .name = "avgpool",
             .aliases = (const char *const[]){"avg", NULL},
             .channels = TRN_CHANNELS_PASS},
    .keys = NULL,
    .setup = avgpool_setup,
    .forward = avgpool_forward,
    .backward = TRN_TRAIN_FN(avgpool_backward),
    .describe = avgpool_describe,
};
