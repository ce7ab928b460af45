/*
 * costmodel.c: the cost model of docs/design.md ("Cost model"), computed from
 * cfg text alone: its own shape arithmetic, independent of the trainer's
 * network code, so that the profiler (profile.c), which measures a running
 * network, checks it and is checked by it.
 *
 * Per layer, per image (batch 1):
 *   output    c x h x w, Darknet's rules: convolution floor((M + 2p - K)
 *             / s) + 1 per side (p = size/2 when pad=1, else padding);
 *             [maxpool] (M + padding - size) / stride + 1 with padding
 *             defaulting to size - 1; [local] (M - (pad ? 1 : size)) /
 *             stride + 1; [avgpool] c x 1 x 1; [connected] output x 1 x 1;
 *             [crop] c x crop_height x crop_width; [route] the channel
 *             concatenation; the rest keep their input's shape
 *   macs      multiply-accumulates of the convolution / matrix product only
 *   params    floats in the .weights file: biases, BN (scales, rolling mean,
 *             rolling variance), weights; [local] out_h*out_w*filters
 *             biases and as many filters of c*size*size weights
 *   bias_ops  additions of biases (and of [shortcut]'s second input)
 *   bn_ops    2 per output value of a batch-normalised layer
 *   act_ops   1 per output value of a non-linear activation ([softmax]
 *             counts one per value)
 *   pool_ops  comparisons/additions of pooling: [maxpool] size^2 per
 *             output, [avgpool] one per input value
 *   output_bytes  float32 output
 * Totals add the layers; weight bytes are params x 4 (float32).
 *
 * Peak live activation bytes (batch 1): the network input and every
 * layer's output is a buffer, except [dropout], which works in place on
 * its input's buffer (as in Darknet). A buffer lives from the step that
 * writes it to the last step that reads it: each layer reads the output
 * before it (a [route] reads only the layers it lists), [route] and
 * [shortcut] also read the layers they name. The peak is the largest sum
 * of live buffers over the steps.
 */
#include "cat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef enum cm_kind {
    CM_CONV, CM_CONNECTED, CM_LOCAL, CM_MAXPOOL, CM_AVGPOOL, CM_DROPOUT, CM_CROP, CM_SOFTMAX,
    CM_COST, CM_ROUTE, CM_SHORTCUT, CM_EXIT, CM_KIND_COUNT
} cm_kind;

static const struct {
    const char *type;
    cm_kind kind;
} cm_types[] = {
    {"convolutional", CM_CONV}, {"conv", CM_CONV},        {"connected", CM_CONNECTED},
    {"conn", CM_CONNECTED},     {"local", CM_LOCAL},      {"maxpool", CM_MAXPOOL},
    {"max", CM_MAXPOOL},        {"avgpool", CM_AVGPOOL},  {"avg", CM_AVGPOOL},
    {"dropout", CM_DROPOUT},    {"crop", CM_CROP},        {"softmax", CM_SOFTMAX},
    {"soft", CM_SOFTMAX},       {"cost", CM_COST},        {"route", CM_ROUTE},
    {"shortcut", CM_SHORTCUT},  {"exit", CM_EXIT},
};

static const char *const cm_names[] = {
    [CM_CONV] = "convolutional", [CM_CONNECTED] = "connected", [CM_LOCAL] = "local",
    [CM_MAXPOOL] = "maxpool",    [CM_AVGPOOL] = "avgpool",     [CM_DROPOUT] = "dropout",
    [CM_CROP] = "crop",          [CM_SOFTMAX] = "softmax",     [CM_COST] = "cost",
    [CM_ROUTE] = "route",        [CM_SHORTCUT] = "shortcut",    [CM_EXIT] = "exit",
};
_Static_assert(sizeof cm_names / sizeof *cm_names == CM_KIND_COUNT, "a kind has no name");

const char *cat_cost_section_type(int i, const char **canonical)
{
    if (i < 0 || (size_t)i >= sizeof cm_types / sizeof *cm_types) return NULL;
    if (canonical) *canonical = cm_names[cm_types[i].kind];
    return cm_types[i].type;
}

/* Reading one section: integer keys with defaults, errors at file:line. */
typedef struct cm_sec {
    const trn_cfg *cfg;
    int s;
    trn_err *err;
} cm_sec;

static int cm_int(const cm_sec *x, const char *key, int def, int lo, int *out)
{
    const char *v = trn_cfg_get(x->cfg, x->s, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (end == v || *end || errno || n < lo || n > (1 << 24)) {
        char where[600];
        return trn_errf(x->err, "%s: [%s]: %s=%.40s is not an integer in %d..%d",
                        trn_cfg_where(x->cfg, x->s, key, where, sizeof where),
                        trn_cfg_section_type(x->cfg, x->s), key, v, lo, 1 << 24);
    }
    *out = (int)n;
    return 0;
}

static int cm_fail(const cm_sec *x, const char *key, const char *msg)
{
    char where[600];
    return trn_errf(x->err, "%s: [%s]: %s", trn_cfg_where(x->cfg, x->s, key, where, sizeof where),
                    trn_cfg_section_type(x->cfg, x->s), msg);
}

/* Whether the activation key names a non-linear activation (the default
 * of conv, connected and local is logistic; of shortcut, linear). */
static int nonlinear(const cm_sec *x, const char *def)
{
    const char *a = trn_cfg_get(x->cfg, x->s, "activation");
    return strcmp(a ? a : def, "linear") != 0;
}

/* Comma-separated layer references, resolved to absolute indexes < i. */
static int cm_refs(const cm_sec *x, const char *key, int i, int *out, int max)
{
    const char *v = trn_cfg_get(x->cfg, x->s, key);
    if (!v) return cm_fail(x, NULL, "a layer reference key is missing (route: layers=, shortcut: from=)");
    int n = 0;
    for (const char *p = v;;) {
        char *end;
        errno = 0;
        long r = strtol(p, &end, 10);
        if (end == p || errno || (*end && *end != ',') || n == max)
            return cm_fail(x, key, "not a list of layer indexes");
        long j = r < 0 ? i + r : r;
        if (j < 0 || j >= i) return cm_fail(x, key, "names a layer that is not before this one");
        out[n++] = (int)j;
        if (!*end) break;
        p = end + 1;
    }
    return n;
}

#define CM_MAX_REFS 32

int cat_cost_model(const trn_cfg *cfg, cat_cost *out, trn_err *err)
{
    memset(out, 0, sizeof *out);
    int ns = trn_cfg_sections(cfg);
    const char *t0 = ns ? trn_cfg_section_type(cfg, 0) : NULL;
    if (!t0 || (strcmp(t0, "net") && strcmp(t0, "network")))
        return trn_errf(err, "%s: a network cfg starts with [net]", trn_cfg_name(cfg));
    cm_sec x = {cfg, 0, err};
    int in_c, in_h, in_w;
    if (cm_int(&x, "channels", 0, 1, &in_c) || cm_int(&x, "height", 0, 1, &in_h) ||
        cm_int(&x, "width", 0, 1, &in_w))
        return -1;
    if (!trn_cfg_get(cfg, 0, "channels") || !trn_cfg_get(cfg, 0, "height") ||
        !trn_cfg_get(cfg, 0, "width"))
        return cm_fail(&x, NULL, "width, height and channels are required");
    int n = ns - 1;
    if (n < 1) return trn_errf(err, "%s: the cfg has no layer", trn_cfg_name(cfg));
    cat_layer_cost *L = calloc((size_t)n, sizeof *L);
    int *owner = malloc((size_t)(n + 1) * sizeof *owner), *last = malloc((size_t)(n + 1) * sizeof *last);
    if (!L || !owner || !last) {
        free(L);
        free(owner);
        free(last);
        return trn_errf(err, "out of memory");
    }
    out->layers = L;
    out->n = n;
    out->input[0] = in_c;
    out->input[1] = in_h;
    out->input[2] = in_w;
    /* Buffer b: 0 the input, i + 1 layer i's output; owner[] follows the
     * in-place [dropout]; last[] is the last step reading a buffer. */
    owner[0] = 0;
    last[0] = -1;
    int c = in_c, h = in_h, w = in_w;
    for (int i = 0; i < n; i++) {
        x.s = i + 1;
        const char *type = trn_cfg_section_type(cfg, x.s);
        int k = 0, nk = (int)(sizeof cm_types / sizeof *cm_types);
        while (k < nk && strcmp(cm_types[k].type, type) != 0) k++;
        if (k == nk) {
            cm_fail(&x, NULL, "this section is not a layer kind the cost model knows "
                              "(convolutional, connected, local, maxpool, avgpool, dropout, crop, "
                              "softmax, cost, route, shortcut)");
            goto fail;
        }
        cm_kind kind = cm_types[k].kind;
        cat_layer_cost *l = &L[i];
        l->index = i;
        snprintf(l->type, sizeof l->type, "%s", cm_names[kind]);
        int oc = c, oh = h, ow = w, reads_prev = 1, nref = 0, refs[CM_MAX_REFS];
        uint64_t in_vals = (uint64_t)c * h * w;
        int filters, size, stride, pad, padding, groups, bn, out_n;
        switch (kind) {
        case CM_CONV:
            if (cm_int(&x, "filters", 1, 1, &filters) || cm_int(&x, "size", 1, 1, &size) ||
                cm_int(&x, "stride", 1, 1, &stride) || cm_int(&x, "pad", 0, 0, &pad) ||
                cm_int(&x, "padding", 0, 0, &padding) || cm_int(&x, "groups", 1, 1, &groups) ||
                cm_int(&x, "batch_normalize", 0, 0, &bn))
                goto fail;
            if (pad) padding = size / 2;
            if (c % groups || filters % groups) {
                cm_fail(&x, "groups", "groups must divide the input channels and the filters");
                goto fail;
            }
            if (h + 2 * padding < size || w + 2 * padding < size) {
                cm_fail(&x, "size", "the kernel does not fit the padded input");
                goto fail;
            }
            oc = filters;
            oh = (h + 2 * padding - size) / stride + 1;
            ow = (w + 2 * padding - size) / stride + 1;
            l->macs = (uint64_t)oc * oh * ow * (uint64_t)(c / groups) * size * size;
            l->params = (uint64_t)filters * (1 + (bn ? 3 : 0)) +
                        (uint64_t)filters * (uint64_t)(c / groups) * size * size;
            l->bias_ops = (uint64_t)oc * oh * ow;
            l->bn_ops = bn ? 2 * l->bias_ops : 0;
            l->act_ops = nonlinear(&x, "logistic") ? l->bias_ops : 0;
            break;
        case CM_LOCAL:
            if (cm_int(&x, "filters", 1, 1, &filters) || cm_int(&x, "size", 1, 1, &size) ||
                cm_int(&x, "stride", 1, 1, &stride) || cm_int(&x, "pad", 0, 0, &pad))
                goto fail;
            if (h < (pad ? 1 : size) || w < (pad ? 1 : size)) {
                cm_fail(&x, "size", "the kernel does not fit the input");
                goto fail;
            }
            oc = filters;
            oh = (h - (pad ? 1 : size)) / stride + 1;
            ow = (w - (pad ? 1 : size)) / stride + 1;
            l->macs = (uint64_t)oc * oh * ow * (uint64_t)c * size * size;
            l->params = (uint64_t)oc * oh * ow + l->macs;
            l->bias_ops = (uint64_t)oc * oh * ow;
            l->act_ops = nonlinear(&x, "logistic") ? l->bias_ops : 0;
            break;
        case CM_CONNECTED:
            if (cm_int(&x, "output", 1, 1, &out_n) || cm_int(&x, "batch_normalize", 0, 0, &bn))
                goto fail;
            oc = out_n;
            oh = ow = 1;
            l->macs = in_vals * (uint64_t)out_n;
            l->params = (uint64_t)out_n * (1 + (bn ? 3 : 0)) + in_vals * (uint64_t)out_n;
            l->bias_ops = (uint64_t)out_n;
            l->bn_ops = bn ? 2 * l->bias_ops : 0;
            l->act_ops = nonlinear(&x, "logistic") ? l->bias_ops : 0;
            break;
        case CM_MAXPOOL:
            if (cm_int(&x, "stride", 1, 1, &stride) || cm_int(&x, "size", stride, 1, &size) ||
                cm_int(&x, "padding", size - 1, 0, &padding))
                goto fail;
            if (h + padding < size || w + padding < size) {
                cm_fail(&x, "size", "the window does not fit the input");
                goto fail;
            }
            oh = (h + padding - size) / stride + 1;
            ow = (w + padding - size) / stride + 1;
            l->pool_ops = (uint64_t)oc * oh * ow * size * size;
            break;
        case CM_AVGPOOL:
            oh = ow = 1;
            l->pool_ops = in_vals;
            break;
        case CM_CROP: {
            int ch, cw;
            if (cm_int(&x, "crop_height", 1, 1, &ch) || cm_int(&x, "crop_width", 1, 1, &cw)) goto fail;
            if (ch > h || cw > w) {
                cm_fail(&x, "crop_height", "the crop is larger than the input");
                goto fail;
            }
            oh = ch;
            ow = cw;
            break;
        }
        case CM_SOFTMAX:
            l->act_ops = in_vals;
            break;
        case CM_DROPOUT:
        case CM_COST:
        case CM_EXIT: /* an early exit's first layer: a pass-through (trainer/nn/exit.c) */
            break;
        case CM_ROUTE:
            if ((nref = cm_refs(&x, "layers", i, refs, CM_MAX_REFS)) < 0) goto fail;
            reads_prev = 0;
            oc = 0;
            for (int r = 0; r < nref; r++) {
                const cat_layer_cost *s = &L[refs[r]];
                if (r && (s->output[1] != oh || s->output[2] != ow)) {
                    cm_fail(&x, "layers", "routed layers must have the same height and width");
                    goto fail;
                }
                oc += s->output[0];
                oh = s->output[1];
                ow = s->output[2];
            }
            break;
        case CM_SHORTCUT:
            if ((nref = cm_refs(&x, "from", i, refs, 1)) < 0) goto fail;
            l->bias_ops = in_vals;
            l->act_ops = nonlinear(&x, "linear") ? in_vals : 0;
            break;
        case CM_KIND_COUNT:
            goto fail;
        }
        l->output[0] = oc;
        l->output[1] = oh;
        l->output[2] = ow;
        l->output_bytes = (uint64_t)oc * oh * ow * sizeof(float);
        /* Buffers: reads, then the layer's own output. */
        owner[i + 1] = kind == CM_DROPOUT || kind == CM_EXIT ? owner[i] : i + 1;
        last[i + 1] = -1;
        if (reads_prev && last[owner[i]] < i) last[owner[i]] = i;
        for (int r = 0; r < nref; r++)
            if (last[owner[refs[r] + 1]] < i) last[owner[refs[r] + 1]] = i;
        if (last[owner[i + 1]] < i) last[owner[i + 1]] = i;
        c = oc;
        h = oh;
        w = ow;
        out->macs += l->macs;
        out->params += l->params;
        out->bias_ops += l->bias_ops;
        out->bn_ops += l->bn_ops;
        out->act_ops += l->act_ops;
        out->pool_ops += l->pool_ops;
    }
    out->weight_bytes = out->params * sizeof(float);
    for (int step = 0; step < n; step++) {
        uint64_t live = 0;
        for (int b = 0; b <= n; b++) {
            if (owner[b] != b || b - 1 > step || last[b] < step) continue;
            live += b ? L[b - 1].output_bytes : (uint64_t)in_c * in_h * in_w * sizeof(float);
        }
        if (live > out->peak_activation_bytes) out->peak_activation_bytes = live;
    }
    free(owner);
    free(last);
    return 0;
fail:
    free(owner);
    free(last);
    cat_cost_free(out);
    return -1;
}

void cat_cost_free(cat_cost *c)
{
    if (!c) return;
    free(c->layers);
    memset(c, 0, sizeof *c);
}

/* Adds key = v (an integer) to o; 0, or -1 when out of memory. */
static int add_u64(cJSON *o, const char *key, uint64_t v)
{
    return cJSON_AddNumberToObject(o, key, (double)v) ? 0 : -1;
}

cJSON *cat_cost_layer_json(const cat_layer_cost *l)
{
    cJSON *o = cJSON_CreateObject();
    int shape[3] = {l->output[0], l->output[1], l->output[2]};
    if (!o || !cJSON_AddNumberToObject(o, "index", l->index) ||
        !cJSON_AddStringToObject(o, "type", l->type) ||
        !cJSON_AddItemToObject(o, "output", cJSON_CreateIntArray(shape, 3)) ||
        add_u64(o, "macs", l->macs) || add_u64(o, "params", l->params) ||
        add_u64(o, "output_bytes", l->output_bytes) || add_u64(o, "bias_ops", l->bias_ops) ||
        add_u64(o, "bn_ops", l->bn_ops) || add_u64(o, "act_ops", l->act_ops) ||
        add_u64(o, "pool_ops", l->pool_ops)) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *cat_cost_json(const cat_cost *c)
{
    cJSON *o = cJSON_CreateObject(), *layers = cJSON_CreateArray();
    if (!o || !layers || add_u64(o, "macs", c->macs) || add_u64(o, "params", c->params) ||
        add_u64(o, "weight_bytes", c->weight_bytes) ||
        add_u64(o, "peak_activation_bytes", c->peak_activation_bytes) ||
        add_u64(o, "bias_ops", c->bias_ops) || add_u64(o, "bn_ops", c->bn_ops) ||
        add_u64(o, "act_ops", c->act_ops) || add_u64(o, "pool_ops", c->pool_ops))
        goto oom;
    for (int i = 0; i < c->n; i++) {
        cJSON *l = cat_cost_layer_json(&c->layers[i]);
        if (!l || !cJSON_AddItemToArray(layers, l)) {
            cJSON_Delete(l);
            goto oom;
        }
    }
    if (!cJSON_AddItemToObject(o, "layers", layers)) goto oom;
    return o;
oom:
    cJSON_Delete(o);
    cJSON_Delete(layers);
    return NULL;
}
