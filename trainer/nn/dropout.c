/*
 * dropout.c: the [dropout] layer (Darknet's dropout_layer.c).
 *
 * Key: probability (0.5). Works in place, as in Darknet: its output and
 * delta are its input's buffers, so the layer before sees the dropped
 * values (which matters only to that layer's activation gradient, and not
 * at all for relu/leaky/linear). In training each value is kept with
 * probability 1 - p and scaled by 1/(1 - p); the uniform draws come from
 * the network's seed, `seen` and the layer index. Identity in inference.
 */
#include "net.h"

#include <stdlib.h>

static const char *const dropout_keys[] = {"probability", NULL};

typedef struct dropout_state {
    float p, scale;
    float *rand; /* (batch, inputs) uniform draws of the last training forward */
} dropout_state;

static int dropout_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    dropout_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    if (trn_build_float(b, "probability", 0.5f, 0, 0.999f, &s->p, err)) return -1;
    s->scale = (float)(1.0 / (1.0 - s->p));
    l->out = l->in;
    l->output_aliased = 1;
    if (!b->net->opts.infer_only)
        return trn_build_account(b, (uint64_t)b->net->batch * l->inputs, "dropout draws", err);
    return 0;
}

static int dropout_alloc(trn_layer *l, trn_net *net, trn_err *err)
{
    dropout_state *s = l->priv;
    if (net->opts.infer_only) return 0;
    s->rand = calloc((size_t)net->batch * l->inputs, sizeof *s->rand);
    if (!s->rand) return trn_errf(err, "out of memory for layer %d", l->index);
    return 0;
}

static void dropout_destroy(trn_layer *l, trn_net *net)
{
    (void)net;
    dropout_state *s = l->priv;
    if (s) free(s->rand);
}

static void dropout_forward(trn_layer *l, trn_net *net, int train)
{
    dropout_state *s = l->priv;
    if (!train || !s->rand) return;
    size_t n = (size_t)net->batch * l->inputs;
    if (l->fixed_rand && l->fixed_rand_n == n) {
        for (size_t i = 0; i < n; i++) s->rand[i] = l->fixed_rand[i];
    } else {
        trn_rng r = trn_net_layer_rng(net, l);
        for (size_t i = 0; i < n; i++) s->rand[i] = trn_rng_uniform(&r);
    }
    net->be->dropout(net->be, l->output, s->rand, n, s->p, s->scale);
}

#ifndef TRN_INFER_ONLY
static void dropout_backward(trn_layer *l, trn_net *net)
{
    dropout_state *s = l->priv;
    if (l->delta) net->be->dropout(net->be, l->delta, s->rand, (size_t)net->batch * l->inputs, s->p, s->scale);
}
#endif

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_dropout_kind = {
    .desc = {.kind = TRN_LAYER_DROPOUT,
             .name = "dropout",
             .aliases = (const char *const[]){NULL},
             .channels = TRN_CHANNELS_PASS},
    .keys = dropout_keys,
    .setup = dropout_setup,
    .alloc = dropout_alloc,
    .forward = dropout_forward,
    .backward = TRN_TRAIN_FN(dropout_backward),
    .destroy = dropout_destroy,
};
