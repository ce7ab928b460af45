/*
 * maxpool.c: the [maxpool] layer (Darknet's maxpool_layer.c).
 *
 * Keys: stride (1), size (stride), padding (size - 1). Darknet's geometry:
 * padding is the total over both sides, windows start at -padding/2, and
 * the output side is (m + padding - size) / stride + 1. Positions outside
 * the input are ignored (not zeros). The backward routes each output's
 * delta to the input that won the window.
 */
#include "net.h"

#include <stdlib.h>

static const char *const maxpool_keys[] = {"size", "stride", "padding", NULL};

typedef struct maxpool_state {
    int size, stride, pad;
    int *idx; /* (batch, outputs) argmax input index, when training */
} maxpool_state;

static int maxpool_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    maxpool_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    if (trn_build_int(b, "stride", 1, 1, 1 << 10, &s->stride, err) ||
        trn_build_int(b, "size", s->stride, 1, 1 << 10, &s->size, err) ||
        trn_build_int(b, "padding", s->size - 1, 0, 1 << 10, &s->pad, err))
        return -1;
    if (l->in.h + s->pad < s->size || l->in.w + s->pad < s->size)
        return trn_build_fail(b, "size", err, "a %dx%d window does not fit the %dx%d input "
                              "with padding %d", s->size, s->size, l->in.h, l->in.w, s->pad);
    if ((s->pad + 1) / 2 >= s->size)
        return trn_build_fail(b, "padding", err, "padding=%d leaves windows with no input "
                              "(use padding < 2*size - 1)", s->pad);
    l->out = (trn_shape){l->in.c, (l->in.h + s->pad - s->size) / s->stride + 1,
                         (l->in.w + s->pad - s->size) / s->stride + 1};
    if (!b->net->opts.infer_only)
        return trn_build_account(b, (uint64_t)b->net->batch * l->out.c * l->out.h * l->out.w,
                                 "max-pool indexes", err);
    return 0;
}

static int maxpool_alloc(trn_layer *l, trn_net *net, trn_err *err)
{
    maxpool_state *s = l->priv;
    if (net->opts.infer_only) return 0;
    s->idx = calloc((size_t)net->batch * l->outputs, sizeof *s->idx);
    if (!s->idx) return trn_errf(err, "out of memory for layer %d", l->index);
    return 0;
}

static void maxpool_destroy(trn_layer *l, trn_net *net)
{
    (void)net;
    maxpool_state *s = l->priv;
    if (s) free(s->idx);
}

static void maxpool_forward(trn_layer *l, trn_net *net, int train)
{
    (void)train;
    maxpool_state *s = l->priv;
    net->be->maxpool(net->be, l->input, net->batch, l->in.c, l->in.h, l->in.w, s->size, s->stride, s->pad,
                     l->out.h, l->out.w, l->output, s->idx);
}

#ifndef TRN_INFER_ONLY
static void maxpool_backward(trn_layer *l, trn_net *net)
{
    maxpool_state *s = l->priv;
    if (l->in_delta)
        net->be->maxpool_backward(net->be, l->delta, s->idx, net->batch * l->out.c, l->out.h * l->out.w,
                                  l->in_delta);
}
#endif

static void maxpool_describe(const trn_layer *l, trn_layer_info *info)
{
    const maxpool_state *s = l->priv;
    info->size = s->size;
    info->stride = s->stride;
    info->pad = s->pad;
    info->pool_ops = (uint64_t)l->outputs * s->size * s->size;
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_maxpool_kind = {
    .desc = {.kind = TRN_LAYER_MAXPOOL,
             .name = "maxpool",
             .aliases = (const char *const[]){"max", NULL},
             .channels = TRN_CHANNELS_PASS},
    .import_reruns_forward = 1,
    .keys = maxpool_keys,
    .setup = maxpool_setup,
    .alloc = maxpool_alloc,
    .forward = maxpool_forward,
    .backward = TRN_TRAIN_FN(maxpool_backward),
    .describe = maxpool_describe,
    .destroy = maxpool_destroy,
};
