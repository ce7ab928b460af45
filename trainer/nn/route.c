/*
 * route.c: the [route] layer (Darknet's route_layer.c): the channel-wise
 * concatenation of earlier layers' outputs.
 *
 * Key: layers (required): comma-separated indexes, negative ones relative
 * to this layer (-1 is the layer before). All must have the same height
 * and width (Darknet would flatten mismatched ones; here that is an
 * error). The backward adds each slice of delta to its source's delta.
 */
#include "net.h"

#include <stdlib.h>

#define ROUTE_MAX TRN_MAX_FROM

static const char *const route_keys[] = {"layers", NULL};

typedef struct route_state {
    int n;
    int from[ROUTE_MAX];
} route_state;

static int route_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    route_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    int n = trn_build_ints(b, "layers", s->from, ROUTE_MAX, err);
    if (n < 0) return -1;
    if (n == 0) return trn_build_fail(b, NULL, err, "key 'layers' is required");
    s->n = n;
    trn_shape out = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        int j = s->from[i] < 0 ? b->index + s->from[i] : s->from[i];
        if (j < 0 || j >= b->index)
            return trn_build_fail(b, "layers", err, "layers=%d names layer %d, which is not "
                                  "before this layer (%d)", s->from[i], j, b->index);
        s->from[i] = j;
        trn_shape o = b->layers[j].out;
        if (i == 0) {
            out = o;
        } else if (o.h != out.h || o.w != out.w) {
            return trn_build_fail(b, "layers", err, "layer %d's output is %dx%d but layer %d's "
                                  "is %dx%d: routed layers must have the same height and width",
                                  j, o.h, o.w, s->from[0], out.h, out.w);
        } else if ((int64_t)out.c + o.c > (1 << 24)) {
            return trn_build_fail(b, "layers", err, "the routed layers have more than %d channels",
                                  1 << 24);
        } else {
            out.c += o.c;
        }
    }
    l->out = out;
    return 0;
}

static void route_forward(trn_layer *l, trn_net *net, int train)
{
    (void)train;
    route_state *s = l->priv;
    size_t off = 0;
    for (int i = 0; i < s->n; i++) {
        const trn_layer *src = &net->layers[s->from[i]];
        for (int b = 0; b < net->batch; b++)
            net->be->copy(net->be, src->outputs, src->output + (size_t)b * src->outputs,
                          l->output + (size_t)b * l->outputs + off);
        off += src->outputs;
    }
}

#ifndef TRN_INFER_ONLY
static void route_backward(trn_layer *l, trn_net *net)
{
    route_state *s = l->priv;
    size_t off = 0;
    for (int i = 0; i < s->n; i++) {
        const trn_layer *src = &net->layers[s->from[i]];
        if (src->delta)
            for (int b = 0; b < net->batch; b++)
                net->be->axpy(net->be, src->outputs, 1, l->delta + (size_t)b * l->outputs + off,
                              src->delta + (size_t)b * src->outputs);
        off += src->outputs;
    }
}
#endif

static void route_describe(const trn_layer *l, trn_layer_info *info)
{
    const route_state *s = l->priv;
    info->n_from = s->n;
    for (int i = 0; i < s->n; i++) info->from[i] = s->from[i];
}

/* Capacity: the concatenation of the sources' active prefixes, which is a
 * prefix of the full concatenation only when every source but the last is
 * whole (a layer reading the route takes the first columns of its
 * weights). */
static int route_capacity(trn_layer *l, trn_net *net, int filters, trn_err *err)
{
    (void)filters;
    route_state *s = l->priv;
    l->out = l->full_out;
    l->out.c = 0;
    for (int i = 0; i < s->n; i++) {
        const trn_layer *src = &net->layers[s->from[i]];
        if (i < s->n - 1 && src->out.c != src->full_out.c)
            return trn_errf(err, "source layer %d keeps %d of its %d channels: only the last "
                            "source of a route may be reduced (the active channels must stay a "
                            "prefix)", s->from[i], src->out.c, src->full_out.c);
        l->out.c += src->out.c;
    }
    return 0;
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_route_kind = {
    .desc = {.kind = TRN_LAYER_ROUTE,
             .name = "route",
             .aliases = (const char *const[]){NULL},
             .refs_key = "layers",
             .channels = TRN_CHANNELS_CONCAT,
             .ignores_previous = 1},
    .keys = route_keys,
    .setup = route_setup,
    .forward = route_forward,
    .backward = TRN_TRAIN_FN(route_backward),
    .describe = route_describe,
    .capacity = route_capacity,
};
