/*
 * cost.c: the [cost] layer (Darknet's cost_layer.c, CPU path).
 *
 * Keys: type (sse; also L1 and smooth), scale (1). In a training forward
 * with truth its output holds the per-value error (as Darknet stores it)
 * and its delta truth - input (or the L1/smooth forms); the backward adds
 * scale * delta to the input's delta. A [cost] layer is never the
 * network's output: that is the last layer before it (Darknet's
 * get_network_output_layer).
 */
#include "net.h"

#include <stdlib.h>
#include <string.h>

static const char *const cost_keys[] = {"type", "scale", NULL};

typedef enum cost_type { COST_SSE, COST_L1, COST_SMOOTH } cost_type;

typedef struct cost_state {
    cost_type type;
    float scale;
} cost_state;

static int cost_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    cost_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    const char *t = trn_build_str(b, "type", "sse");
    if (strcmp(t, "sse") == 0)
        s->type = COST_SSE;
    else if (strcmp(t, "L1") == 0)
        s->type = COST_L1;
    else if (strcmp(t, "smooth") == 0)
        s->type = COST_SMOOTH;
    else
        return trn_build_fail(b, "type", err, "cost type '%.40s' is not supported (use sse, L1 "
                              "or smooth)", t);
    if (trn_build_float(b, "scale", 1, -1e6f, 1e6f, &s->scale, err)) return -1;
    if (b->index == 0)
        return trn_build_fail(b, NULL, err, "a [cost] layer needs a layer before it");
    l->out = l->in;
    return 0;
}

static void cost_forward(trn_layer *l, trn_net *net, int train)
{
    cost_state *s = l->priv;
    const trn_backend *be = net->be;
    l->has_cost = 0;
    if (!train || !net->truth_in || l->inputs != trn_net_outputs(net)) return;
    size_t n = (size_t)net->batch * l->inputs;
    if (s->type == COST_L1)
        be->l1(be, n, l->input, net->truth, l->delta, l->output);
    else if (s->type == COST_SMOOTH)
        be->smooth_l1(be, n, l->input, net->truth, l->delta, l->output);
    else
        be->l2(be, n, l->input, net->truth, l->delta, l->output);
    trn_layer_set_cost(l, l->output, n);
}

#ifndef TRN_INFER_ONLY
static void cost_backward(trn_layer *l, trn_net *net)
{
    cost_state *s = l->priv;
    if (l->in_delta && l->has_cost)
        net->be->axpy(net->be, (size_t)net->batch * l->inputs, s->scale, l->delta, l->in_delta);
}
#endif

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_cost_kind = {
    .desc = {.kind = TRN_LAYER_COST,
             .name = "cost",
             .aliases = (const char *const[]){NULL},
             .channels = TRN_CHANNELS_PASS,
             .is_loss = 1},
    .keys = cost_keys,
    .setup = cost_setup,
    .forward = cost_forward,
    .backward = TRN_TRAIN_FN(cost_backward),
};
