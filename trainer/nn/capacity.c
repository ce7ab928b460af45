/*
 * capacity.c: nested capacities (NestDNN's multi-capacity model, and what
 * pruning slices): every layer computes on an active prefix of its input
 * and output channels.
 *
 * trn_net_set_capacity walks the layers in order: a layer's active input is
 * its predecessor's active output (the network input stays whole); kinds
 * with their own channels (convolutional, connected) take the number of
 * filters they keep from the caller, the others derive theirs through
 * their ops' capacity hook (route: the concatenation of its sources'
 * prefixes) or pass their input's channels through. Activations of a
 * reduced layer are stored packed, (batch, active outputs), in the full
 * buffers, so every kernel downstream reads exactly what a separately
 * built smaller network's layer would read; weight-bearing layers read the
 * first rows and columns of their (full) weight matrices through the
 * GEMM's leading dimension. Parameters, weights files and buffers keep the
 * full sizes: a capacity switch allocates nothing and copies nothing.
 */
#include "net.h"

#include <stdlib.h>
#include <string.h>

static int apply(trn_net *net, const int *filters, trn_err *err)
{
    trn_shape in = net->in;
    for (int i = 0; i < net->n; i++) {
        trn_layer *l = &net->layers[i];
        int f = filters ? filters[i] : 0;
        int own = l->ops->desc.channels == TRN_CHANNELS_OWN;
        if (f < 0 || (f && !own && f != l->full_out.c) || (own && f > l->full_out.c))
            return trn_errf(err, "layer %d (%s): capacity %d filters is out of range (%s)", i,
                            l->type, f, own ? "1 up to the layer's filters, or 0 for all"
                                            : "this kind has no filters of its own: 0");
        if (f == l->full_out.c) f = 0;
        l->in = in;
        l->inputs = (size_t)in.c * in.h * in.w;
        if (l->ops->capacity) {
            if (l->ops->capacity(l, net, f, err) != 0)
                return trn_err_prefix(err, "layer %d (%s)", i, l->type);
        } else {
            l->out = l->full_out;
            l->out.c = in.c;
        }
        l->outputs = (size_t)l->out.c * l->out.h * l->out.w;
        l->cap_filters = f;
        in = l->out;
    }
    return 0;
}

int trn_net_set_capacity(trn_net *net, const int *filters, trn_err *err)
{
    /* No allocation for networks of up to 256 layers (the runtime's switch
     * path): the previous capacity, to restore it on a refusal. */
    int stack[256];
    int *old = net->n <= 256 ? stack : malloc((size_t)net->n * sizeof *old);
    if (!old) return trn_errf(err, "out of memory");
    for (int i = 0; i < net->n; i++) old[i] = net->layers[i].cap_filters;
    int rc = apply(net, filters, err);
    if (rc != 0) {
        trn_err keep;
        apply(net, old, &keep); /* the previous capacity was valid */
    }
    if (old != stack) free(old);
    return rc;
}

void trn_net_capacity(const trn_net *net, int *filters)
{
    for (int i = 0; i < net->n; i++) {
        const trn_layer *l = &net->layers[i];
        filters[i] = l->ops->desc.channels == TRN_CHANNELS_OWN ? l->out.c : 0;
    }
}

int trn_net_full_filters(const trn_net *net, int i)
{
    if (i < 0 || i >= net->n) return -1;
    const trn_layer *l = &net->layers[i];
    return l->ops->desc.channels == TRN_CHANNELS_OWN ? l->full_out.c : 0;
}

/* Copies the (rows, cols) top-left block between row-major matrices with
 * row lengths lds (src) and ldd (dst). */
static void block(float *dst, size_t ldd, const float *src, size_t lds, size_t rows, size_t cols)
{
    for (size_t r = 0; r < rows; r++) memcpy(dst + r * ldd, src + r * lds, cols * sizeof *dst);
}

/* small: a network whose full shapes are big's active ones. to_small: copy
 * big's active prefix into small's parameters, else small's into big's. */
static int transfer(trn_net *small, trn_net *big, int to_small, trn_err *err)
{
    if (small->n != big->n)
        return trn_errf(err, "%s has %d layers, %s %d: not the same network", small->name,
                        small->n, big->name, big->n);
    for (int i = 0; i < big->n; i++) {
        const trn_layer *s = &small->layers[i], *b = &big->layers[i];
        if (s->ops != b->ops || s->param_count != b->param_count ||
            s->full_out.c != b->out.c || s->full_in.c != b->in.c || s->full_out.h != b->out.h ||
            s->full_out.w != b->out.w)
            return trn_errf(err, "layer %d: %s's %s %dx%dx%d -> %dx%dx%d is not %s's active "
                            "%s %dx%dx%d -> %dx%dx%d", i, small->name, s->type, s->full_in.c,
                            s->full_in.h, s->full_in.w, s->full_out.c, s->full_out.h,
                            s->full_out.w, big->name, b->type, b->in.c, b->in.h, b->in.w,
                            b->out.c, b->out.h, b->out.w);
        for (int k = 0; k < b->param_count; k++) {
            trn_param *ps = &small->params[s->param_first + k];
            trn_param *pb = &big->params[b->param_first + k];
            if (ps->role != pb->role || ps->rows > pb->rows || ps->cols > pb->cols)
                return trn_errf(err, "layer %d: parameter %s (%dx%d) does not fit in %s (%dx%d)",
                                i, trn_param_role_name(ps->role), ps->rows, ps->cols,
                                trn_param_role_name(pb->role), pb->rows, pb->cols);
            if (!ps->data || !pb->data)
                return trn_errf(err, "layer %d: parameters not loaded", i);
            if (to_small)
                block(ps->data, (size_t)ps->cols, pb->data, (size_t)pb->cols, (size_t)ps->rows,
                      (size_t)ps->cols);
            else
                block(pb->data, (size_t)pb->cols, ps->data, (size_t)ps->cols, (size_t)ps->rows,
                      (size_t)ps->cols);
        }
    }
    return 0;
}

int trn_net_copy_capacity(trn_net *dst, const trn_net *src, trn_err *err)
{
    if (dst->borrowed) return trn_errf(err, "%s: its parameters are borrowed (read-only)", dst->name);
    return transfer(dst, (trn_net *)src, 1, err);
}

int trn_net_embed_capacity(trn_net *dst, const trn_net *src, trn_err *err)
{
    if (dst->borrowed) return trn_errf(err, "%s: its parameters are borrowed (read-only)", dst->name);
    return transfer((trn_net *)src, dst, 0, err);
}

/* ---- per-capacity vectors -------------------------------------------------- */

/* The active entries of parameter p (a vector with a role in roles), else 0. */
static size_t vector_len(const trn_net *net, const trn_param *p, unsigned roles)
{
    if (p->role == TRN_PARAM_WEIGHTS || !(roles & (1u << p->role))) return 0;
    return (size_t)net->layers[p->layer].out.c;
}

size_t trn_net_vectors_count(const trn_net *net, unsigned roles)
{
    size_t n = 0;
    for (int i = 0; i < net->np; i++) n += vector_len(net, &net->params[i], roles);
    return n;
}

void trn_net_vectors_get(const trn_net *net, unsigned roles, float *dst)
{
    for (int i = 0; i < net->np; i++) {
        size_t n = vector_len(net, &net->params[i], roles);
        if (n) memcpy(dst, net->params[i].data, n * sizeof *dst);
        dst += n;
    }
}

int trn_net_vectors_put(trn_net *net, unsigned roles, const float *src, trn_err *err)
{
    if (net->borrowed || !net->param_block)
        return trn_errf(err, "%s: its parameters are borrowed or external (read-only): bind them instead",
                        net->name);
    for (int i = 0; i < net->np; i++) {
        size_t n = vector_len(net, &net->params[i], roles);
        if (n) memcpy(net->params[i].data, src, n * sizeof *src);
        src += n;
    }
    return 0;
}

int trn_net_vectors_bind(trn_net *net, unsigned roles, const float *src, trn_err *err)
{
    if (!net->borrowed)
        return trn_errf(err, "%s: only a network whose parameters are borrowed can bind them", net->name);
    if (!net->home) {
        if (!(net->home = malloc((size_t)(net->np ? net->np : 1) * sizeof *net->home)))
            return trn_errf(err, "out of memory");
        for (int i = 0; i < net->np; i++) net->home[i] = net->params[i].data;
    }
    for (int i = 0; i < net->np; i++) {
        size_t n = vector_len(net, &net->params[i], roles);
        if (!n) continue;
        net->params[i].data = src ? (float *)(uintptr_t)src : net->home[i];
        if (src) src += n;
    }
    return 0;
}
