/*
 * onnx_net.c: one engine network (trainer/nn) as ONNX nodes, layer by layer,
 * with the engine's own inference arithmetic (trainer/README.md):
 *
 *   [convolutional]  Conv (kernel, stride, symmetric padding, groups); batch
 *                    norm folded into the weights and biases (k = scale /
 *                    (sqrt(var) + 1e-6): the engine divides by sqrt(var) plus
 *                    1e-6, not by sqrt(var + eps) as ONNX's
 *                    BatchNormalization), or with --bn explicit as
 *                    Sub/Div/Mul/Add nodes computing exactly that
 *   [connected]      Flatten (C, H, W order, the engine's) then Gemm with the
 *                    (outputs, inputs) weights transposed; batch norm likewise
 *   [maxpool]        MaxPool with explicit pads: the engine's padding is the
 *                    total of both sides, windows start at -padding/2, so the
 *                    pads are padding/2 before and the rest after, and the
 *                    output side is (m + padding - size) / stride + 1 (checked)
 *   [avgpool]        GlobalAveragePool
 *   [softmax]        Softmax over each of `groups` slices of the flattened
 *                    input, of input / temperature
 *   [route]          Concat of its sources over channels
 *   [shortcut]       alpha * input + beta * from (same shapes only)
 *   [crop]           the centred window (the engine at inference) as Slice,
 *                    then 2x - 1 unless noadjust
 *   [dropout], [cost], [exit]   identity at inference
 *   activations      Darknet's formulas (leaky's slope 0.1, relie 0.01, ...);
 *                    stair is refused (a floor of halves has no exact ONNX form
 *                    here)
 *
 * Anything else is refused with the layer's index, section and file:line.
 */
#include "onnx_export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The section of cfg that built layer `info` (found by its line, so it
 * works for branch networks built from part of a cfg), or -1. */
static int section_of(const trn_cfg *cfg, const trn_layer_info *info)
{
    if (!cfg) return -1;
    if (info->line > 0)
        for (int s = 0; s < trn_cfg_sections(cfg); s++)
            if (trn_cfg_section_line(cfg, s) == info->line) return s;
    return info->section < trn_cfg_sections(cfg) ? info->section : -1;
}

static float cfg_float(const ox_emit *e, const trn_layer_info *info, const char *key, float dflt)
{
    const char *v = trn_cfg_get(e->cfg, section_of(e->cfg, info), key);
    return v ? strtof(v, NULL) : dflt;
}

static int refuse(const ox_emit *e, const trn_layer_info *info, trn_err *err, const char *why)
{
    return trn_errf(err, "cannot express layer %d [%s] (%s:%d) in ONNX: %s; export refused", info->index,
                    info->type, e->cfg ? trn_cfg_name(e->cfg) : "?", info->line, why);
}

/* t as a 4-D (1, c, h, w) tensor. */
static const char *as4d(ox_emit *e, const ox_t *t)
{
    if (t->rank == 4) return t->name;
    int64_t dims[4] = {1, t->shape.c, t->shape.h, t->shape.w};
    const char *out = ox_fmt(e->g, "%s_4d", t->name);
    if (ox_has(e->g, out)) return out; /* another reader made it (a route, a head on a shared trunk) */
    ox_node(e->g, "Reshape", out, 2, t->name, ox_int64s(e->g, ox_fmt(e->g, "%s_shape4", t->name), dims, 4));
    return out;
}

/* t as a 2-D (1, c*h*w) tensor. */
static const char *as2d(ox_emit *e, const ox_t *t)
{
    if (t->rank == 2) return t->name;
    const char *out = ox_fmt(e->g, "%s_flat", t->name);
    if (ox_has(e->g, out)) return out;
    ox_attr_int(e->g, ox_node(e->g, "Flatten", out, 1, t->name), "axis", 1);
    return out;
}

/* Clip(x, lo, hi) */
static const char *clip(ox_emit *e, const char *x, float lo, float hi, const char *out)
{
    ox_node(e->g, "Clip", out, 3, x, ox_scalar(e->g, lo), ox_scalar(e->g, hi));
    return out;
}

/* a + k * (x - c) where c = Clip(x, lo, hi): the slopes outside [lo, hi]. */
static const char *leak_outside(ox_emit *e, const char *x, const char *c, const char *a, float k, const char *out)
{
    const char *d = ox_fmt(e->g, "%s_out", out), *kd = ox_fmt(e->g, "%s_kout", out);
    ox_node(e->g, "Sub", d, 2, x, c);
    ox_node(e->g, "Mul", kd, 2, d, ox_scalar(e->g, k));
    ox_node(e->g, "Add", out, 2, a, kd);
    return out;
}

/* Darknet's activation `act` of x; `base` names the result. */
static const char *activate(ox_emit *e, const char *x, trn_activation act, const char *base, const trn_layer_info *info,
                            trn_err *err)
{
    ox_graph *g = e->g;
    const char *y = ox_fmt(g, "%s_%s", base, trn_activation_name(act));
    const char *t1 = ox_fmt(g, "%s_a", y), *t2 = ox_fmt(g, "%s_b", y);
    switch (act) {
    case TRN_ACT_LINEAR: return x;
    case TRN_ACT_RELU: ox_node(g, "Relu", y, 1, x); return y;
    case TRN_ACT_LEAKY: ox_attr_float(g, ox_node(g, "LeakyRelu", y, 1, x), "alpha", 0.1f); return y;
    case TRN_ACT_RELIE: ox_attr_float(g, ox_node(g, "LeakyRelu", y, 1, x), "alpha", 0.01f); return y;
    case TRN_ACT_LOGISTIC: ox_node(g, "Sigmoid", y, 1, x); return y;
    case TRN_ACT_TANH: ox_node(g, "Tanh", y, 1, x); return y;
    case TRN_ACT_ELU: ox_attr_float(g, ox_node(g, "Elu", y, 1, x), "alpha", 1.0f); return y;
    case TRN_ACT_SELU: {
        ox_node_t *n = ox_node(g, "Selu", y, 1, x);
        ox_attr_float(g, n, "alpha", 1.6732f);
        ox_attr_float(g, n, "gamma", 1.0507f);
        return y;
    }
    case TRN_ACT_HARDTAN: return clip(e, x, -1, 1, y);
    case TRN_ACT_RAMP: /* relu(x) + 0.1 x */
        ox_node(g, "Relu", t1, 1, x);
        ox_node(g, "Mul", t2, 2, x, ox_scalar(g, 0.1f));
        ox_node(g, "Add", y, 2, t1, t2);
        return y;
    case TRN_ACT_LOGGY: /* 2 sigmoid(x) - 1 */
        ox_node(g, "Sigmoid", t1, 1, x);
        ox_node(g, "Mul", t2, 2, t1, ox_scalar(g, 2));
        ox_node(g, "Sub", y, 2, t2, ox_scalar(g, 1));
        return y;
    case TRN_ACT_PLSE: { /* clip(0.125 x + 0.5, 0, 1) + 0.01 (x - clip(x, -4, 4)) */
        const char *lin = ox_fmt(g, "%s_lin", y), *lin2 = ox_fmt(g, "%s_lin2", y);
        ox_node(g, "Mul", lin, 2, x, ox_scalar(g, 0.125f));
        ox_node(g, "Add", lin2, 2, lin, ox_scalar(g, 0.5f));
        return leak_outside(e, x, clip(e, x, -4, 4, t2), clip(e, lin2, 0, 1, t1), 0.01f, y);
    }
    case TRN_ACT_LHTAN: { /* clip(x, 0, 1) + 0.001 (x - clip(x, 0, 1)) */
        const char *c = clip(e, x, 0, 1, t1);
        return leak_outside(e, x, c, c, 0.001f, y);
    }
    case TRN_ACT_STAIR:
    case TRN_ACT_COUNT: break;
    }
    refuse(e, info, err, "activation 'stair' has no ONNX form in this exporter");
    return NULL;
}

/* The parameter of layer i with role r: count floats, or NULL. */
static const float *param(const ox_emit *e, int i, trn_param_role r, size_t count)
{
    const trn_param *p = trn_net_param(e->net, i, r);
    return p && p->count == count ? p->data : NULL;
}

/* Weights (rows x cols) and biases with batch norm folded: row k scaled by
 * scale_k / (sqrt(var_k) + 1e-6), bias_k - mean_k * that. */
static int fold_bn(const ox_emit *e, const trn_layer_info *info, int rows, size_t cols, float *w, float *b)
{
    const float *sc = param(e, info->index, TRN_PARAM_SCALES, (size_t)rows);
    const float *mu = param(e, info->index, TRN_PARAM_ROLLING_MEAN, (size_t)rows);
    const float *var = param(e, info->index, TRN_PARAM_ROLLING_VARIANCE, (size_t)rows);
    if (!sc || !mu || !var) return -1;
    for (int k = 0; k < rows; k++) {
        float f = sc[k] / (sqrtf(var[k]) + 0.000001f);
        for (size_t j = 0; j < cols; j++) w[(size_t)k * cols + j] *= f;
        b[k] = b[k] - mu[k] * f;
    }
    return 0;
}

/* The explicit batch norm of y (rows channels, rank 4 or 2): ((y - mean) /
 * (sqrt(var) + 1e-6)) * scale + bias, as the engine computes it. */
static const char *explicit_bn(ox_emit *e, const trn_layer_info *info, const char *y, int rows, int rank,
                               const char *base)
{
    static const trn_param_role roles[3] = {TRN_PARAM_ROLLING_MEAN, TRN_PARAM_SCALES, TRN_PARAM_BIASES};
    static const char *const names[3] = {"mean", "scale", "bias"};
    int64_t dims[3] = {rows, 1, 1}, d2[2] = {1, rows};
    const char *c[3];
    for (int r = 0; r < 3; r++) {
        const float *v = param(e, info->index, roles[r], (size_t)rows);
        if (!v) return NULL;
        c[r] = ox_floats(e->g, ox_fmt(e->g, "%s_bn_%s", base, names[r]), rank == 4 ? dims : d2, rank == 4 ? 3 : 2, v);
    }
    const float *var = param(e, info->index, TRN_PARAM_ROLLING_VARIANCE, (size_t)rows);
    float *den = var ? malloc((size_t)rows * sizeof *den) : NULL;
    if (!den) return NULL;
    for (int k = 0; k < rows; k++) den[k] = sqrtf(var[k]) + 0.000001f;
    const char *dn = ox_floats(e->g, ox_fmt(e->g, "%s_bn_den", base), rank == 4 ? dims : d2, rank == 4 ? 3 : 2, den);
    free(den);
    const char *s1 = ox_fmt(e->g, "%s_bn_c", base), *s2 = ox_fmt(e->g, "%s_bn_n", base);
    const char *s3 = ox_fmt(e->g, "%s_bn_s", base), *out = ox_fmt(e->g, "%s_bn", base);
    ox_node(e->g, "Sub", s1, 2, y, c[0]);
    ox_node(e->g, "Div", s2, 2, s1, dn);
    ox_node(e->g, "Mul", s3, 2, s2, c[1]);
    ox_node(e->g, "Add", out, 2, s3, c[2]);
    return out;
}

/* Conv or Gemm's weights and biases (batch norm folded unless explicit). */
static int weights_of(ox_emit *e, const trn_layer_info *info, int rows, size_t cols, float **w, float **b, trn_err *err)
{
    const float *pw = param(e, info->index, TRN_PARAM_WEIGHTS, (size_t)rows * cols);
    const float *pb = param(e, info->index, TRN_PARAM_BIASES, (size_t)rows);
    if (!pw || !pb) return refuse(e, info, err, "its parameters do not match its shape");
    *w = malloc((size_t)rows * cols * sizeof **w);
    *b = malloc((size_t)rows * sizeof **b);
    if (!*w || !*b) return trn_errf(err, "out of memory exporting layer %d", info->index);
    memcpy(*w, pw, (size_t)rows * cols * sizeof **w);
    memcpy(*b, pb, (size_t)rows * sizeof **b);
    if (info->batch_normalize && !e->bn_explicit && fold_bn(e, info, rows, cols, *w, *b) != 0)
        return refuse(e, info, err, "its batch-norm parameters do not match its shape");
    return 0;
}

static int emit_conv(ox_emit *e, const trn_layer_info *info, const ox_t *src, ox_t *out, trn_err *err)
{
    int f = info->out.c, cg = info->in.c / info->groups, k = info->size, p = info->pad;
    float *w = NULL, *b = NULL;
    int rc = weights_of(e, info, f, (size_t)cg * k * k, &w, &b, err);
    const char *base = ox_fmt(e->g, "%sl%d_conv", e->prefix, info->index), *y = base;
    if (rc == 0) {
        int64_t wd[4] = {f, cg, k, k}, bd[1] = {f}, ks[2] = {k, k}, st[2] = {info->stride, info->stride};
        int64_t pads[4] = {p, p, p, p};
        const char *wn = ox_floats(e->g, ox_fmt(e->g, "%s_w", base), wd, 4, w);
        int bias = !(info->batch_normalize && e->bn_explicit);
        if (!bias) y = ox_fmt(e->g, "%s_raw", base);
        ox_node_t *n = bias ? ox_node(e->g, "Conv", y, 3, as4d(e, src), wn, ox_floats(e->g, ox_fmt(e->g, "%s_b", base), bd, 1, b))
                            : ox_node(e->g, "Conv", y, 2, as4d(e, src), wn);
        ox_attr_ints(e->g, n, "kernel_shape", ks, 2);
        ox_attr_ints(e->g, n, "strides", st, 2);
        ox_attr_ints(e->g, n, "pads", pads, 4);
        ox_attr_int(e->g, n, "group", info->groups);
        if (!bias && !(y = explicit_bn(e, info, y, f, 4, base)))
            rc = refuse(e, info, err, "its batch-norm parameters do not match its shape");
    }
    free(w);
    free(b);
    if (rc) return rc;
    *out = (ox_t){activate(e, y, info->activation, base, info, err), 4, info->out};
    return out->name ? 0 : -1;
}

static int emit_connected(ox_emit *e, const trn_layer_info *info, const ox_t *src, ox_t *out, trn_err *err)
{
    int m = info->out.c;
    size_t n = (size_t)info->in.c * info->in.h * info->in.w;
    float *w = NULL, *b = NULL;
    int rc = weights_of(e, info, m, n, &w, &b, err);
    const char *base = ox_fmt(e->g, "%sl%d_fc", e->prefix, info->index), *y = base;
    if (rc == 0) {
        int64_t wd[2] = {m, (int64_t)n}, bd[1] = {m};
        const char *wn = ox_floats(e->g, ox_fmt(e->g, "%s_w", base), wd, 2, w);
        const char *bn = ox_floats(e->g, ox_fmt(e->g, "%s_b", base), bd, 1, b);
        int bias = !(info->batch_normalize && e->bn_explicit);
        if (!bias) {
            float *zero = calloc((size_t)m, sizeof *zero);
            if (!zero) rc = trn_errf(err, "out of memory exporting layer %d", info->index);
            else bn = ox_floats(e->g, ox_fmt(e->g, "%s_b0", base), bd, 1, zero);
            free(zero);
            y = ox_fmt(e->g, "%s_raw", base);
        }
        ox_attr_int(e->g, ox_node(e->g, "Gemm", y, 3, as2d(e, src), wn, bn), "transB", 1);
        if (rc == 0 && !bias && !(y = explicit_bn(e, info, y, m, 2, base)))
            rc = refuse(e, info, err, "its batch-norm parameters do not match its shape");
    }
    free(w);
    free(b);
    if (rc) return rc;
    *out = (ox_t){activate(e, y, info->activation, base, info, err), 2, info->out};
    return out->name ? 0 : -1;
}

static int emit_maxpool(ox_emit *e, const trn_layer_info *info, const ox_t *src, ox_t *out, trn_err *err)
{
    int s = info->size, st = info->stride, p = info->pad, a = p / 2, z = p - p / 2;
    if (a >= s || z >= s) return refuse(e, info, err, "its padding is not smaller than its window");
    if ((info->in.h + a + z - s) / st + 1 != info->out.h || (info->in.w + a + z - s) / st + 1 != info->out.w)
        return refuse(e, info, err, "ONNX's MaxPool output size differs from the engine's");
    int64_t ks[2] = {s, s}, sd[2] = {st, st}, pads[4] = {a, a, z, z};
    const char *y = ox_fmt(e->g, "%sl%d_maxpool", e->prefix, info->index);
    ox_node_t *n = ox_node(e->g, "MaxPool", y, 1, as4d(e, src));
    ox_attr_ints(e->g, n, "kernel_shape", ks, 2);
    ox_attr_ints(e->g, n, "strides", sd, 2);
    ox_attr_ints(e->g, n, "pads", pads, 4);
    *out = (ox_t){y, 4, info->out};
    return 0;
}

static int emit_softmax(ox_emit *e, const trn_layer_info *info, const ox_t *src, ox_t *out)
{
    int groups = (int)cfg_float(e, info, "groups", 1);
    float temp = cfg_float(e, info, "temperature", 1);
    int64_t n = (int64_t)info->in.c * info->in.h * info->in.w;
    const char *base = ox_fmt(e->g, "%sl%d_softmax", e->prefix, info->index), *x = as2d(e, src);
    if (groups > 1) {
        int64_t d[3] = {1, groups, n / groups};
        const char *r = ox_fmt(e->g, "%s_groups", base);
        ox_node(e->g, "Reshape", r, 2, x, ox_int64s(e->g, ox_fmt(e->g, "%s_gshape", base), d, 3));
        x = r;
    }
    if (temp != 1) {
        const char *d = ox_fmt(e->g, "%s_t", base);
        ox_node(e->g, "Div", d, 2, x, ox_scalar(e->g, temp));
        x = d;
    }
    const char *y = groups > 1 ? ox_fmt(e->g, "%s_g", base) : base;
    ox_attr_int(e->g, ox_node(e->g, "Softmax", y, 1, x), "axis", groups > 1 ? 2 : 1);
    if (groups > 1) {
        int64_t d[2] = {1, n};
        ox_node(e->g, "Reshape", base, 2, y, ox_int64s(e->g, ox_fmt(e->g, "%s_shape", base), d, 2));
    }
    *out = (ox_t){base, 2, info->out};
    return 0;
}

static int emit_route(ox_emit *e, const trn_layer_info *info, ox_t *out)
{
    if (info->n_from == 1) {
        *out = e->t[info->from[0]];
        return 0;
    }
    const char *y = ox_fmt(e->g, "%sl%d_route", e->prefix, info->index), *in[TRN_MAX_FROM];
    for (int k = 0; k < info->n_from; k++) in[k] = as4d(e, &e->t[info->from[k]]);
    ox_attr_int(e->g, ox_node_list(e->g, "Concat", y, info->n_from, in), "axis", 1);
    *out = (ox_t){y, 4, info->out};
    return 0;
}

static int emit_shortcut(ox_emit *e, const trn_layer_info *info, const ox_t *src, ox_t *out, trn_err *err)
{
    const ox_t *f = &e->t[info->from[0]];
    if (f->shape.c != info->in.c || f->shape.h != info->in.h || f->shape.w != info->in.w)
        return refuse(e, info, err, "it adds a layer of another shape (strided or sub-sampled shortcut)");
    float alpha = cfg_float(e, info, "alpha", 1), beta = cfg_float(e, info, "beta", 1);
    const char *base = ox_fmt(e->g, "%sl%d_shortcut", e->prefix, info->index);
    const char *a = as4d(e, src), *b = as4d(e, f);
    if (alpha != 1) ox_node(e->g, "Mul", ox_fmt(e->g, "%s_a", base), 2, a, ox_scalar(e->g, alpha)), a = ox_fmt(e->g, "%s_a", base);
    if (beta != 1) ox_node(e->g, "Mul", ox_fmt(e->g, "%s_b", base), 2, b, ox_scalar(e->g, beta)), b = ox_fmt(e->g, "%s_b", base);
    ox_node(e->g, "Add", base, 2, a, b);
    *out = (ox_t){activate(e, base, info->activation, base, info, err), 4, info->out};
    return out->name ? 0 : -1;
}

static int emit_crop(ox_emit *e, const trn_layer_info *info, const ox_t *src, ox_t *out)
{
    int dh = (info->in.h - info->out.h) / 2, dw = (info->in.w - info->out.w) / 2;
    int64_t st[2] = {dh, dw}, en[2] = {dh + info->out.h, dw + info->out.w}, ax[2] = {2, 3};
    const char *base = ox_fmt(e->g, "%sl%d_crop", e->prefix, info->index), *y = base;
    int adjust = !cfg_float(e, info, "noadjust", 0);
    if (adjust) y = ox_fmt(e->g, "%s_win", base);
    ox_node(e->g, "Slice", y, 4, as4d(e, src), ox_int64s(e->g, ox_fmt(e->g, "%s_st", base), st, 2),
            ox_int64s(e->g, ox_fmt(e->g, "%s_en", base), en, 2), ox_int64s(e->g, ox_fmt(e->g, "%s_ax", base), ax, 2));
    if (adjust) {
        const char *m = ox_fmt(e->g, "%s_x2", base);
        ox_node(e->g, "Mul", m, 2, y, ox_scalar(e->g, 2));
        ox_node(e->g, "Sub", base, 2, m, ox_scalar(e->g, 1));
    }
    *out = (ox_t){base, 4, info->out};
    return 0;
}

static int emit_layer(ox_emit *e, const trn_layer_info *info, const ox_t *src, ox_t *out, trn_err *err)
{
    switch (info->kind) {
    case TRN_LAYER_CONVOLUTIONAL: return emit_conv(e, info, src, out, err);
    case TRN_LAYER_CONNECTED: return emit_connected(e, info, src, out, err);
    case TRN_LAYER_MAXPOOL: return emit_maxpool(e, info, src, out, err);
    case TRN_LAYER_AVGPOOL: {
        const char *y = ox_fmt(e->g, "%sl%d_avgpool", e->prefix, info->index);
        ox_node(e->g, "GlobalAveragePool", y, 1, as4d(e, src));
        *out = (ox_t){y, 4, info->out};
        return 0;
    }
    case TRN_LAYER_SOFTMAX: return emit_softmax(e, info, src, out);
    case TRN_LAYER_ROUTE: return emit_route(e, info, out);
    case TRN_LAYER_SHORTCUT: return emit_shortcut(e, info, src, out, err);
    case TRN_LAYER_CROP: return emit_crop(e, info, src, out);
    case TRN_LAYER_DROPOUT:
    case TRN_LAYER_COST:
    case TRN_LAYER_EXIT: *out = *src; out->shape = info->out; return 0;
    case TRN_LAYER_KIND_COUNT: break;
    }
    return refuse(e, info, err, "its kind has no ONNX form in this exporter");
}

int ox_emit_layers(ox_emit *e, int first, const ox_t *input, trn_err *err)
{
    int L = trn_net_layers(e->net);
    for (int i = first; i < L; i++) {
        trn_layer_info info;
        if (trn_net_layer_info(e->net, i, &info) != 0) return trn_errf(err, "layer %d: no layer info", i);
        const ox_t *src = i == 0 ? input : &e->t[i - 1];
        if (emit_layer(e, &info, src, &e->t[i], err) != 0) return -1;
    }
    return 0;
}

const char *ox_emit_output(ox_emit *e, const ox_t *t, const char *name)
{
    int64_t d[2] = {1, (int64_t)t->shape.c * t->shape.h * t->shape.w};
    ox_node(e->g, "Identity", name, 1, as2d(e, t));
    ox_output(e->g, name, d, 2);
    return name;
}

void ox_emit_input(ox_emit *e, ox_t *in, const char *name)
{
    trn_shape s = trn_net_input_shape(e->net);
    int64_t d[4] = {1, s.c, s.h, s.w};
    ox_input(e->g, name, d, 4);
    *in = (ox_t){name, 4, s};
}
