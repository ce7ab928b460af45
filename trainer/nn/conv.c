/*
 * conv.c: the [convolutional] layer (Darknet's convolutional_layer.c).
 *
 * Keys: filters (1), size (1), stride (1), pad (0: when 1, padding =
 * size/2), padding (0), groups (1), batch_normalize (0), activation
 * (logistic). Output: filters x oh x ow, oh = (h + 2*padding - size) /
 * stride + 1. Parameters in file order: biases (filters), [scales,
 * rolling_mean, rolling_variance], weights (filters, c/groups*size*size).
 *
 * Forward: out (m, oh*ow) = W (m, k) . col per image and group, with m =
 * filters/groups, k = c/groups*size*size, col the im2col of the group's
 * input channels. Then batch-norm or bias, then the activation. One group
 * (the usual case) goes to the backend's convolution kernels, whole
 * batches at a time (backend.h: conv, conv_dw, conv_dx; the CPU's cut the
 * products into tiles that stay in cache, cpu_conv.c), with the bias and
 * the activation applied by the kernel, or batch norm's fused passes
 * (batchnorm.c); grouped convolutions go image by image through im2col and
 * gemm (the input itself is the im2col of a 1x1, stride 1, unpadded one).
 *
 * A channel-prefix capacity (a smaller model nested in this one) computes
 * only the first filters from the first input channels: the same GEMM with
 * fewer rows and a k over fewer channels, reading W through its leading
 * dimension (lda stays the full row length), so no weights are copied.
 */
#include "net.h"

#include <stdlib.h>

static const char *const conv_keys[] = {"filters", "size", "stride", "pad", "padding", "groups",
                                        "batch_normalize", "activation", NULL};

typedef struct conv_state {
    int n, size, stride, pad, groups, bn;
    int direct; /* 1x1, stride 1, no padding: the input is its own im2col */
    trn_bn norm;
    trn_conv_prep prep;   /* a borrowed network's inference: prepared weights (backend.h) */
    uint64_t prep_borrow; /* of the network's borrow number ... */
} conv_state;

enum { P_BIASES, P_SCALES, P_MEAN, P_VAR };

static int conv_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    conv_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    int pad;
    if (trn_build_int(b, "filters", 1, 1, 1 << 16, &s->n, err) ||
        trn_build_int(b, "size", 1, 1, 1 << 10, &s->size, err) ||
        trn_build_int(b, "stride", 1, 1, 1 << 10, &s->stride, err) ||
        trn_build_int(b, "pad", 0, 0, 1, &pad, err) ||
        trn_build_int(b, "padding", 0, 0, 1 << 10, &s->pad, err) ||
        trn_build_int(b, "groups", 1, 1, 1 << 16, &s->groups, err) ||
        trn_build_int(b, "batch_normalize", 0, 0, 1, &s->bn, err) ||
        trn_build_activation(b, "logistic", &l->act, err))
        return -1;
    if (pad) s->pad = s->size / 2;
    trn_shape in = l->in;
    if (in.c % s->groups || s->n % s->groups)
        return trn_build_fail(b, "groups", err, "groups=%d must divide the %d input channels "
                              "and the %d filters", s->groups, in.c, s->n);
    if (in.h + 2 * s->pad < s->size || in.w + 2 * s->pad < s->size)
        return trn_build_fail(b, "size", err, "a %dx%d kernel does not fit the %dx%d input "
                              "padded by %d", s->size, s->size, in.h, in.w, s->pad);
    l->out = (trn_shape){s->n, trn_conv_out(in.h, s->pad, s->size, s->stride),
                         trn_conv_out(in.w, s->pad, s->size, s->stride)};
    if (s->bn && !b->net->opts.infer_only && (uint64_t)b->net->batch * l->out.h * l->out.w < 2)
        return trn_build_fail(b, "batch_normalize", err, "batch normalisation needs at least 2 "
                              "values per channel to train (batch %d, output %dx%d)",
                              b->net->batch, l->out.h, l->out.w);
    s->direct = s->size == 1 && s->stride == 1 && s->pad == 0;
    int k = in.c / s->groups * s->size * s->size;
    size_t np = (size_t)l->out.h * l->out.w;
    if (!s->direct && s->groups > 1) l->workspace = (size_t)k * np;
    if (trn_build_param(b, l, TRN_PARAM_BIASES, 1, s->n, err)) return -1;
    if (s->bn && (trn_build_param(b, l, TRN_PARAM_SCALES, 1, s->n, err) ||
                  trn_build_param(b, l, TRN_PARAM_ROLLING_MEAN, 1, s->n, err) ||
                  trn_build_param(b, l, TRN_PARAM_ROLLING_VARIANCE, 1, s->n, err)))
        return -1;
    if (trn_build_param(b, l, TRN_PARAM_WEIGHTS, s->n, k, err)) return -1;
    if (s->bn && !b->net->opts.infer_only)
        return trn_build_account(b, (uint64_t)b->net->batch * s->n * l->out.h * l->out.w,
                                 "batch-norm buffers", err);
    return 0;
}

static int conv_alloc(trn_layer *l, trn_net *net, trn_err *err)
{
    conv_state *s = l->priv;
    if (s->bn && trn_bn_alloc(&s->norm, net, s->n, l->out.h * l->out.w, !net->opts.infer_only))
        return trn_errf(err, "out of memory for layer %d's batch-norm buffers", l->index);
    return 0;
}

static void conv_destroy(trn_layer *l, trn_net *net)
{
    conv_state *s = l->priv;
    if (s && s->bn) trn_bn_free(&s->norm, net);
    if (s) trn_conv_prep_clear(&s->prep);
}

/* The prepared weights an inference forward may keep: a borrowed
 * network's weights are unchanged until it borrows again. */
static trn_conv_prep *prep_of(conv_state *s, const trn_net *net, int train)
{
    if (train || !net->borrowed) return NULL;
    if (s->prep_borrow != net->borrows) {
        s->prep.ready = 0;
        s->prep_borrow = net->borrows;
    }
    return &s->prep;
}

static trn_param *weights(trn_net *net, const trn_layer *l)
{
    return trn_lparam(net, l, l->param_count - 1);
}

/* The geometry of the whole batch, one group. */
static trn_conv_shape shape_of(const trn_layer *l, const trn_net *net, int infer)
{
    const conv_state *s = l->priv;
    return (trn_conv_shape){net->batch, l->in.c, l->in.h, l->in.w, l->out.c, s->size, s->stride, s->pad, infer, NULL};
}

static void conv_forward(trn_layer *l, trn_net *net, int train)
{
    conv_state *s = l->priv;
    const trn_backend *be = net->be;
    int g = s->groups, m = l->out.c / g, cg = l->in.c / g;
    int k = cg * s->size * s->size, n = l->out.h * l->out.w;
    int kf = l->full_in.c / g * s->size * s->size; /* W's row length */
    const float *w = weights(net, l)->data, *bias = trn_lparam(net, l, P_BIASES)->data;
    /* batch norm: the product goes to its input buffer, bias and activation come after */
    float *out = s->bn ? trn_bn_input(&s->norm, l->output, train) : l->output;
    if (g == 1) {
        trn_conv_shape sh = shape_of(l, net, !train);
        sh.prep = prep_of(s, net, train);
        be->conv(be, &sh, l->input, w, kf, s->bn ? NULL : bias, s->bn ? TRN_ACT_LINEAR : l->act, out);
    } else {
        for (int b = 0; b < net->batch; b++)
            for (int j = 0; j < g; j++) {
                /* im (cg, h, w) -> out (m, oh*ow) */
                const float *im = l->input + ((size_t)b * g + j) * cg * l->in.h * l->in.w;
                float *o = out + ((size_t)b * g + j) * m * n;
                const float *col = im;
                if (!s->direct) {
                    be->im2col(be, im, cg, l->in.h, l->in.w, s->size, s->stride, s->pad, net->workspace, n);
                    col = net->workspace;
                }
                be->gemm(be, 0, 0, m, n, k, 1, w + (size_t)j * m * kf, kf, col, n, 0, o, n);
            }
        if (!s->bn) {
            be->add_bias(be, out, bias, net->batch, l->out.c, n);
            be->activate(be, out, (size_t)net->batch * l->outputs, l->act);
        }
    }
    if (s->bn)
        trn_bn_forward(&s->norm, net, out, l->output, trn_lparam(net, l, P_BIASES),
                       trn_lparam(net, l, P_SCALES), trn_lparam(net, l, P_MEAN),
                       trn_lparam(net, l, P_VAR), train, l->act);
}

#ifndef TRN_INFER_ONLY
/* Darknet's backward_convolutional_layer, except that a 1x1 convolution
 * adds its input gradient like every other case (Darknet overwrites the
 * previous layer's delta there). */
static void conv_backward(trn_layer *l, trn_net *net)
{
    conv_state *s = l->priv;
    const trn_backend *be = net->be;
    int g = s->groups, m = l->out.c / g, cg = l->in.c / g;
    int k = cg * s->size * s->size, n = l->out.h * l->out.w;
    int kf = l->full_in.c / g * s->size * s->size; /* W's row length */
    trn_param *bias = trn_lparam(net, l, P_BIASES);
    if (s->bn)
        trn_bn_backward(&s->norm, net, l->output, l->act, l->delta, bias, trn_lparam(net, l, P_SCALES));
    else
        be->bias_gradient(be, l->output, l->act, net->batch, l->out.c, n, bias->update, l->delta);
    trn_param *w = weights(net, l);
    if (g == 1) {
        trn_conv_shape sh = shape_of(l, net, 0);
        be->conv_dw(be, &sh, l->input, l->delta, w->update, kf);
        if (l->in_delta) be->conv_dx(be, &sh, l->delta, w->data, kf, l->in_delta);
        return;
    }
    for (int b = 0; b < net->batch; b++)
        for (int j = 0; j < g; j++) {
            /* d (m, oh*ow); col (k, oh*ow); dW (m, k) += d . col^T */
            const float *d = l->delta + ((size_t)b * g + j) * m * n;
            size_t ioff = ((size_t)b * g + j) * cg * l->in.h * l->in.w;
            const float *col = l->input + ioff;
            if (!s->direct) {
                be->im2col(be, col, cg, l->in.h, l->in.w, s->size, s->stride, s->pad, net->workspace, n);
                col = net->workspace;
            }
            be->gemm(be, 0, 1, m, k, n, 1, d, n, col, n, 1, w->update + (size_t)j * m * kf, kf);
            if (!l->in_delta) continue;
            /* dcol (k, oh*ow) = W^T . d, then scattered back to the image. */
            const float *wj = w->data + (size_t)j * m * kf;
            if (s->direct) {
                be->gemm(be, 1, 0, k, n, m, 1, wj, kf, d, n, 1, l->in_delta + ioff, n);
            } else {
                be->gemm(be, 1, 0, k, n, m, 1, wj, kf, d, n, 0, net->workspace, n);
                be->col2im(be, net->workspace, n, cg, l->in.h, l->in.w, s->size, s->stride, s->pad,
                           l->in_delta + ioff);
            }
        }
}
#endif

static void conv_describe(const trn_layer *l, trn_layer_info *info)
{
    const conv_state *s = l->priv;
    uint64_t out = l->outputs;
    info->filters = l->out.c;
    info->size = s->size;
    info->stride = s->stride;
    info->pad = s->pad;
    info->groups = s->groups;
    info->batch_normalize = s->bn;
    info->macs = out * (uint64_t)(l->in.c / s->groups) * s->size * s->size;
    info->bias_ops = out;
    info->bn_ops = s->bn ? 2 * out : 0;
    info->act_ops = l->act == TRN_ACT_LINEAR ? 0 : out;
    /* the active capacity's parameters: biases [+ BN] and the W block */
    info->params = (uint64_t)l->out.c * (s->bn ? 4 : 1) +
                   (uint64_t)l->out.c * (l->in.c / s->groups) * s->size * s->size;
}

/* Capacity: the first `filters` filters over the active input channels;
 * a grouped convolution computes whole or not at all. */
static int conv_capacity(trn_layer *l, trn_net *net, int filters, trn_err *err)
{
    (void)net;
    conv_state *s = l->priv;
    if (s->groups > 1 && (filters || l->in.c != l->full_in.c))
        return trn_errf(err, "a grouped convolution (groups=%d) has no channel-prefix capacity",
                        s->groups);
    l->out = l->full_out;
    if (filters) l->out.c = filters;
    s->norm.c = l->out.c;
    return 0;
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_conv_kind = {
    .desc = {.kind = TRN_LAYER_CONVOLUTIONAL,
             .name = "convolutional",
             .aliases = (const char *const[]){"conv", NULL},
             .channels = TRN_CHANNELS_OWN},
    .keys = conv_keys,
    .setup = conv_setup,
    .alloc = conv_alloc,
    .forward = conv_forward,
    .backward = TRN_TRAIN_FN(conv_backward),
    .describe = conv_describe,
    .destroy = conv_destroy,
    .capacity = conv_capacity,
};
