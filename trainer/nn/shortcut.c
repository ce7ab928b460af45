/*
 * shortcut.c: the [shortcut] layer (Darknet's shortcut_layer.c): the
 * previous layer's output plus an earlier layer's, then an activation.
 *
 * Keys: from (required; negative is relative), activation (linear), alpha
 * (1), beta (1). out = alpha * input + beta * from on the overlap Darknet's
 * shortcut_cpu samples (shapes may differ by an integer factor); outside
 * it the input passes unchanged. The backward adds alpha * delta to the
 * input's delta and beta * delta (sampled back) to from's delta.
 */
#include "net.h"

#include <stdlib.h>

static const char *const shortcut_keys[] = {"from", "activation", "alpha", "beta", NULL};

typedef struct shortcut_state {
    int from;
    float alpha, beta;
} shortcut_state;

static int shortcut_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    shortcut_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    int from[1];
    int n = trn_build_ints(b, "from", from, 1, err);
    if (n < 0) return -1;
    if (n == 0) return trn_build_fail(b, NULL, err, "key 'from' is required");
    if (trn_build_activation(b, "linear", &l->act, err) ||
        trn_build_float(b, "alpha", 1, -1e6f, 1e6f, &s->alpha, err) ||
        trn_build_float(b, "beta", 1, -1e6f, 1e6f, &s->beta, err))
        return -1;
    int j = from[0] < 0 ? b->index + from[0] : from[0];
    if (j < 0 || j >= b->index)
        return trn_build_fail(b, "from", err, "from=%d names layer %d, which is not before "
                              "this layer (%d)", from[0], j, b->index);
    s->from = j;
    trn_shape f = b->layers[j].out, in = l->in;
    /* Darknet asserts these (shortcut_cpu): one integer factor on both sides. */
    int stride = f.w / in.w, sample = in.w / f.w;
    if (stride != f.h / in.h || sample != in.h / f.h)
        return trn_build_fail(b, "from", err, "layer %d's output %dx%d and the input %dx%d do "
                              "not differ by one integer factor", j, f.h, f.w, in.h, in.w);
    l->out = in;
    return 0;
}

static void shortcut_forward(trn_layer *l, trn_net *net, int train)
{
    (void)train;
    shortcut_state *s = l->priv;
    const trn_backend *be = net->be;
    const trn_layer *f = &net->layers[s->from];
    size_t n = (size_t)net->batch * l->outputs;
    be->copy(be, n, l->input, l->output);
    be->shortcut(be, net->batch, f->out.w, f->out.h, f->out.c, f->output, l->out.w, l->out.h,
                 l->out.c, s->alpha, s->beta, l->output);
    be->activate(be, l->output, n, l->act);
}

#ifndef TRN_INFER_ONLY
static void shortcut_backward(trn_layer *l, trn_net *net)
{
    shortcut_state *s = l->priv;
    const trn_backend *be = net->be;
    trn_layer *f = &net->layers[s->from];
    size_t n = (size_t)net->batch * l->outputs;
    be->gradient(be, l->output, n, l->act, l->delta);
    if (l->in_delta) be->axpy(be, n, s->alpha, l->delta, l->in_delta);
    if (f->delta)
        be->shortcut(be, net->batch, l->out.w, l->out.h, l->out.c, l->delta, f->out.w, f->out.h,
                     f->out.c, 1, s->beta, f->delta);
}
#endif

static void shortcut_describe(const trn_layer *l, trn_layer_info *info)
{
    const shortcut_state *s = l->priv;
    info->n_from = 1;
    info->from[0] = s->from;
    info->bias_ops = l->outputs;
    info->act_ops = l->act == TRN_ACT_LINEAR ? 0 : l->outputs;
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_shortcut_kind = {
    .desc = {.kind = TRN_LAYER_SHORTCUT,
             .name = "shortcut",
             .aliases = (const char *const[]){NULL},
             .refs_key = "from",
             .channels = TRN_CHANNELS_ADD},
    .keys = shortcut_keys,
    .setup = shortcut_setup,
    .forward = shortcut_forward,
    .backward = TRN_TRAIN_FN(shortcut_backward),
    .describe = shortcut_describe,
};
