/*
 * conv.c: the [convolutional] layer (Darknet's convolutional_layer.c).
 *
 * Keys: filters (1), size (1), stride (1), pad (0: when 1, padding =
 * size/2), padding (0), groups (1), batch_normalize (0), activation
 * (logistic). Output: filters x oh x ow, oh = (h + 2*padding - size) /
 * stride + 1. Parameters in file order: biases (filters), [scales,
 * rolling_mean, rolling_variance], weights (filters, c/groups*size*size).
 *
 * Forward per image and group: out (m, oh*ow) = W (m, k) . col (k, oh*ow)
 * with m = filters/groups, k = c/groups*size*size, col the im2col of the
 * group's input channels (the input itself for a 1x1, stride 1, unpadded
 * convolution). Then batch-norm or bias, then the activation.
 *
 * Images are taken in chunks: the im2col of `chunk` images side by side
 * makes one wide GEMM (n = chunk*oh*ow columns), which OpenBLAS runs much
 * closer to its peak than one narrow GEMM per image; its (m, chunk, oh*ow)
 * result is regrouped to (chunk, m, oh*ow) by swap12. The chunk is as
 * large as the batch allows within CONV_WS floats of workspace. A 1x1
 * convolution (its input is its own im2col) and grouped convolutions go
 * image by image.
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

/* Workspace floats the chunked path may use (64 MiB). */
#define CONV_WS (16u << 20)

typedef struct conv_state {
    int n, size, stride, pad, groups, bn;
    int direct; /* 1x1, stride 1, no padding: the input is its own im2col */
    int chunk;  /* images per GEMM; 0: image by image */
    trn_bn norm;
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
    if (!s->direct) l->workspace = (size_t)k * np;
    if (!s->direct && s->groups == 1 && b->net->batch > 1) {
        /* col (k, chunk*np) and the GEMM result (n, chunk*np) */
        size_t per = ((size_t)k + (size_t)s->n) * np;
        size_t chunk = CONV_WS / per;
        if (chunk > (size_t)b->net->batch) chunk = (size_t)b->net->batch;
        if (chunk >= 2) {
            s->chunk = (int)chunk;
            l->workspace = chunk * per;
        }
    }
    if (trn_build_param(b, l, TRN_PARAM_BIASES, 1, s->n, err)) return -1;
    if (s->bn && (trn_build_param(b, l, TRN_PARAM_SCALES, 1, s->n, err) ||
                  trn_build_param(b, l, TRN_PARAM_ROLLING_MEAN, 1, s->n, err) ||
                  trn_build_param(b, l, TRN_PARAM_ROLLING_VARIANCE, 1, s->n, err)))
        return -1;
    if (trn_build_param(b, l, TRN_PARAM_WEIGHTS, s->n, k, err)) return -1;
    if (s->bn && !b->net->opts.infer_only)
        return trn_build_account(b, 2ull * b->net->batch * s->n * l->out.h * l->out.w,
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
}

static trn_param *weights(trn_net *net, const trn_layer *l)
{
    return trn_lparam(net, l, l->param_count - 1);
}

/* The images of one chunk: nb = how many start at b0, col (k, nb*np) =
 * their im2col side by side (in the workspace); returns nb. */
static int chunk_im2col(const trn_layer *l, trn_net *net, int b0, float *col)
{
    const conv_state *s = l->priv;
    int np = l->out.h * l->out.w, nb = net->batch - b0 < s->chunk ? net->batch - b0 : s->chunk;
    size_t in_img = (size_t)l->in.c * l->in.h * l->in.w;
    for (int j = 0; j < nb; j++)
        net->be->im2col(net->be, l->input + (b0 + j) * in_img, l->in.c, l->in.h, l->in.w, s->size,
                        s->stride, s->pad, col + (size_t)j * np, nb * np);
    return nb;
}

/* Chunked forward: out (B, m, np) for m = filters, k = c*size*size. */
static void forward_chunked(trn_layer *l, trn_net *net, const float *w)
{
    const conv_state *s = l->priv;
    const trn_backend *be = net->be;
    int m = l->out.c, k = l->in.c * s->size * s->size, np = l->out.h * l->out.w;
    int kf = l->full_in.c * s->size * s->size; /* W's row length */
    for (int b0 = 0; b0 < net->batch; b0 += s->chunk) {
        float *col = net->workspace, *res = col + (size_t)k * s->chunk * np;
        int nb = chunk_im2col(l, net, b0, col), ld = nb * np;
        /* res (m, nb, np) = W (m, k) . col */
        be->gemm(be, 0, 0, m, ld, k, 1, w, kf, col, ld, 0, res, ld);
        be->swap12(be, res, l->output + (size_t)b0 * m * np, m, nb, np);
    }
}

static void conv_forward(trn_layer *l, trn_net *net, int train)
{
    conv_state *s = l->priv;
    const trn_backend *be = net->be;
    int g = s->groups, m = l->out.c / g, cg = l->in.c / g;
    int k = cg * s->size * s->size, n = l->out.h * l->out.w;
    int kf = l->full_in.c / g * s->size * s->size; /* W's row length */
    const float *w = weights(net, l)->data;
    if (s->chunk) {
        forward_chunked(l, net, w);
    } else {
        for (int b = 0; b < net->batch; b++)
            for (int j = 0; j < g; j++) {
                /* im (cg, h, w) -> out (m, oh*ow) */
                const float *im = l->input + ((size_t)b * g + j) * cg * l->in.h * l->in.w;
                float *out = l->output + ((size_t)b * g + j) * m * n;
                const float *col = im;
                if (!s->direct) {
                    be->im2col(be, im, cg, l->in.h, l->in.w, s->size, s->stride, s->pad, net->workspace, n);
                    col = net->workspace;
                }
                be->gemm(be, 0, 0, m, n, k, 1, w + (size_t)j * m * kf, kf, col, n, 0, out, n);
            }
    }
    if (s->bn)
        trn_bn_forward(&s->norm, net, l->output, trn_lparam(net, l, P_BIASES),
                       trn_lparam(net, l, P_SCALES), trn_lparam(net, l, P_MEAN),
                       trn_lparam(net, l, P_VAR), train);
    else
        be->add_bias(be, l->output, trn_lparam(net, l, P_BIASES)->data, net->batch, l->out.c, n);
    be->activate(be, l->output, (size_t)net->batch * l->outputs, l->act);
}

#ifndef TRN_INFER_ONLY
/* Chunked backward: dW (m, k) += D (m, nb*np) . col^T, dcol = W^T . D. */
static void backward_chunked(trn_layer *l, trn_net *net, trn_param *w)
{
    const conv_state *s = l->priv;
    const trn_backend *be = net->be;
    int m = l->out.c, k = l->in.c * s->size * s->size, np = l->out.h * l->out.w;
    int kf = l->full_in.c * s->size * s->size; /* W's row length */
    size_t in_img = (size_t)l->in.c * l->in.h * l->in.w;
    for (int b0 = 0; b0 < net->batch; b0 += s->chunk) {
        float *col = net->workspace, *d = col + (size_t)k * s->chunk * np;
        int nb = chunk_im2col(l, net, b0, col), ld = nb * np;
        /* d (m, nb, np) from delta (nb, m, np) */
        be->swap12(be, l->delta + (size_t)b0 * m * np, d, nb, m, np);
        be->gemm(be, 0, 1, m, k, ld, 1, d, ld, col, ld, 1, w->update, kf);
        if (!l->in_delta) continue;
        /* dcol (k, nb*np) = W^T (k, m) . d, scattered back image by image */
        be->gemm(be, 1, 0, k, ld, m, 1, w->data, kf, d, ld, 0, col, ld);
        for (int j = 0; j < nb; j++)
            be->col2im(be, col + (size_t)j * np, ld, l->in.c, l->in.h, l->in.w, s->size, s->stride,
                       s->pad, l->in_delta + (b0 + j) * in_img);
    }
}

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
    be->gradient(be, l->output, (size_t)net->batch * l->outputs, l->act, l->delta);
    trn_param *bias = trn_lparam(net, l, P_BIASES);
    if (s->bn)
        trn_bn_backward(&s->norm, net, l->delta, bias, trn_lparam(net, l, P_SCALES));
    else
        be->backward_bias(be, bias->update, l->delta, net->batch, l->out.c, n);
    trn_param *w = weights(net, l);
    if (s->chunk) {
        backward_chunked(l, net, w);
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
