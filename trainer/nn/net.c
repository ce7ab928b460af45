/*
 * net.c: building a network from a cfg (the [net] section, layer sections
 * through their kinds' ops), its buffers and parameter table, per-layer
 * information and costs, and the inference forward.
 *
 * Keys and defaults follow Darknet's parser.c; the differences (strict
 * values, required keys, rejected shapes) are listed in trainer/README.md.
 */
#include "net.h"

#include <errno.h>
#include <time.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BYTES (32ull << 30)
/* No tensor may hold 2^31 floats or more: kernels index with int where
 * Darknet does. */
#define MAX_TENSOR ((1ull << 31) - 1)

/* The kind table: the rows of the kind files, in TRN_LAYER_KINDS order. */
static const trn_layer_ops *const kind_ops[] = {
#define TRN_KIND_PTR_(KIND, file) [TRN_LAYER_##KIND] = &trn_##file##_kind,
    TRN_LAYER_KINDS(TRN_KIND_PTR_)
#undef TRN_KIND_PTR_
};
_Static_assert(sizeof kind_ops / sizeof *kind_ops == TRN_LAYER_KIND_COUNT,
               "a layer kind has no row in the kind table");

const trn_kind_desc *trn_kind_desc_get(trn_layer_kind k)
{
    return (unsigned)k < TRN_LAYER_KIND_COUNT ? &kind_ops[k]->desc : NULL;
}

const char *trn_layer_kind_name(trn_layer_kind k)
{
    return (unsigned)k < TRN_LAYER_KIND_COUNT ? kind_ops[k]->desc.name : "?";
}

int trn_kind_of_section(const char *type)
{
    for (int k = 0; type && k < TRN_LAYER_KIND_COUNT; k++) {
        const trn_kind_desc *d = &kind_ops[k]->desc;
        if (strcmp(type, d->name) == 0) return k;
        for (const char *const *a = d->aliases; a && *a; a++)
            if (strcmp(type, *a) == 0) return k;
    }
    return -1;
}

/* "a, b, c": the kinds' canonical names, for messages. */
static const char *supported_kinds(char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < TRN_LAYER_KIND_COUNT && len < size; k++)
        len += (size_t)snprintf(buf + len, size - len, "%s%s", k ? ", " : "",
                                kind_ops[k]->desc.name);
    return buf;
}

/* Darknet sections this trainer does not implement (a clearer message than
 * "unknown"). */
static const char *const darknet_only_sections[] = {
    "local", "deconvolutional", "deconv", "activation", "logistic", "l2norm", "crnn",
    "gru", "lstm", "rnn", "region", "yolo", "iseg", "detection", "normalization", "lrn",
    "batchnorm", "reorg", "upsample", NULL,
};

/* Keys every layer section may hold. */
static const char *const common_keys[] = {"learning_rate", "stopbackward", "dontload", "dontsave",
                                          NULL};
/* Darknet keys that are accepted by Darknet but not implemented here. */
static const char *const darknet_only_keys[] = {
    "truth", "onlyforward", "numload", "dontloadscales", "smooth", "binary", "xnor", "flipped",
    "dot", "tree", "spatial", "ratio", "noobj", "thresh", "inputs", "time_steps", "notruth",
    "random", "adam", "B1", "B2", "eps", "max_ratio", "min_ratio", "center", "clip", NULL,
};

static const char *const net_keys[] = {
    "batch", "subdivisions", "width", "height", "channels", "momentum", "decay",
    "learning_rate", "policy", "steps", "scales", "step", "gamma", "power", "burn_in",
    "max_batches", "scale", "angle", "hue", "saturation", "exposure", "aspect", "jitter",
    "min_crop", "max_crop", "flip", "distill_alpha", "distill_temperature", "distill_cfg",
    "distill_weights", "lasso_filter", "lasso_channel", "lasso_shape", NULL,
};

static int in_list(const char *const *list, const char *s)
{
    for (; list && *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* ---- typed getters ------------------------------------------------------ */

const char *trn_build_where(trn_build *b, const char *key, char *buf, size_t size)
{
    return trn_cfg_where(b->cfg, b->section, key, buf, size);
}

int trn_build_fail(trn_build *b, const char *key, trn_err *err, const char *fmt, ...)
{
    char where[600], msg[TRN_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    trn_build_where(b, key, where, sizeof where);
    return trn_errf(err, "%s: [%s]: %s", where, trn_cfg_section_type(b->cfg, b->section), msg);
}

static const char *find_value(trn_build *b, const char *key)
{
    int n = trn_cfg_keys(b->cfg, b->section);
    for (int k = 0; k < n; k++)
        if (strcmp(trn_cfg_key(b->cfg, b->section, k), key) == 0) {
            if (k < (int)sizeof b->used) b->used[k] = 1;
            return trn_cfg_value(b->cfg, b->section, k);
        }
    return NULL;
}

int trn_build_int(trn_build *b, const char *key, int def, int lo, int hi, int *out, trn_err *err)
{
    const char *v = find_value(b, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno)
        return trn_build_fail(b, key, err, "%s=%.40s is not an integer", key, v);
    if (x < lo || x > hi)
        return trn_build_fail(b, key, err, "%s=%ld is out of range: use %d..%d", key, x, lo, hi);
    *out = (int)x;
    return 0;
}

int trn_build_float(trn_build *b, const char *key, float def, float lo, float hi, float *out,
                    trn_err *err)
{
    const char *v = find_value(b, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    float x = strtof(v, &end);
    if (end == v || *end || errno || !isfinite(x))
        return trn_build_fail(b, key, err, "%s=%.40s is not a number", key, v);
    if (x < lo || x > hi)
        return trn_build_fail(b, key, err, "%s=%g is out of range: use %g..%g", key, x, lo, hi);
    *out = x;
    return 0;
}

const char *trn_build_str(trn_build *b, const char *key, const char *def)
{
    const char *v = find_value(b, key);
    return v ? v : def;
}

int trn_build_ints(trn_build *b, const char *key, int *out, int max, trn_err *err)
{
    const char *v = find_value(b, key);
    if (!v) return 0;
    int n = 0;
    const char *p = v;
    for (;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < -1000000 || x > 1000000 || (*end && *end != ','))
            return trn_build_fail(b, key, err, "%s=%.60s is not a comma-separated list of integers",
                                  key, v);
        if (n == max)
            return trn_build_fail(b, key, err, "%s lists more than %d values", key, max);
        out[n++] = (int)x;
        if (!*end) break;
        p = end + 1;
    }
    return n;
}

int trn_build_activation(trn_build *b, const char *def, trn_activation *out, trn_err *err)
{
    const char *v = trn_build_str(b, "activation", def);
    int a = trn_activation_parse(v);
    if (a < 0) {
        char names[400] = "";
        for (int i = 0; i < TRN_ACT_COUNT; i++) {
            strcat(names, i ? ", " : "");
            strcat(names, trn_activation_name(i));
        }
        return trn_build_fail(b, "activation", err, "unknown activation '%.40s' (known: %s)", v,
                              names);
    }
    *out = (trn_activation)a;
    return 0;
}

int trn_build_account(trn_build *b, uint64_t floats, const char *what, trn_err *err)
{
    if (floats > MAX_TENSOR)
        return trn_build_fail(b, NULL, err, "%s needs %llu floats, more than the limit of 2^31-1: "
                              "the shapes are too large", what, (unsigned long long)floats);
    uint64_t limit = b->net->opts.max_bytes ? b->net->opts.max_bytes : DEFAULT_MAX_BYTES;
    b->bytes += floats * sizeof(float);
    if (b->bytes > limit)
        return trn_build_fail(b, NULL, err, "the network needs more than %llu MiB (%s): reduce "
                              "the batch or the layer sizes",
                              (unsigned long long)(limit >> 20), what);
    return 0;
}

int trn_build_param(trn_build *b, trn_layer *l, trn_param_role role, int rows, int cols,
                    trn_err *err)
{
    uint64_t count = (uint64_t)rows * (uint64_t)cols;
    int training = !b->net->opts.infer_only;
    int updated = training && role != TRN_PARAM_ROLLING_MEAN && role != TRN_PARAM_ROLLING_VARIANCE;
    if (trn_build_account(b, count * (updated ? 2 : 1), "a parameter array", err) != 0) return -1;
    if (b->nparams == b->cap) {
        int cap = b->cap ? b->cap * 2 : 64;
        trn_param *p = realloc(b->params, (size_t)cap * sizeof *p);
        if (!p) return trn_errf(err, "out of memory");
        b->params = p;
        b->cap = cap;
    }
    if (l->param_count == 0) l->param_first = b->nparams;
    l->param_count++;
    b->params[b->nparams++] = (trn_param){
        .layer = l->index, .role = role, .count = (size_t)count, .rows = rows, .cols = cols,
        .offset = -1,
    };
    return 0;
}

/* ---- [net] --------------------------------------------------------------- */

static int parse_net_section(trn_build *b, trn_net *net, trn_err *err)
{
    trn_net_config *c = &net->cfg;
    int batch;
    if (trn_build_int(b, "batch", 1, 1, 1 << 20, &batch, err) ||
        trn_build_int(b, "subdivisions", 1, 1, 1 << 20, &c->subdivisions, err) ||
        trn_build_float(b, "learning_rate", 0.001f, 0, 1e6f, &c->learning_rate, err) ||
        trn_build_float(b, "momentum", 0.9f, 0, 1e3f, &c->momentum, err) ||
        trn_build_float(b, "decay", 0.0001f, 0, 1e3f, &c->decay, err) ||
        trn_build_int(b, "height", 0, 0, 1 << 16, &c->h, err) ||
        trn_build_int(b, "width", 0, 0, 1 << 16, &c->w, err) ||
        trn_build_int(b, "channels", 0, 0, 1 << 16, &c->c, err))
        return -1;
    if (batch < c->subdivisions)
        return trn_build_fail(b, "batch", err, "batch=%d is smaller than subdivisions=%d: each "
                              "forward would see no image", batch, c->subdivisions);
    c->batch = batch / c->subdivisions;
    const char *miss = !c->h ? "height" : !c->w ? "width" : !c->c ? "channels" : NULL;
    if (miss)
        return trn_build_fail(b, NULL, err, "key '%s' is required (the network input is "
                              "height x width x channels)", miss);
    if (trn_build_int(b, "max_crop", c->w * 2, 0, 1 << 20, &c->max_crop, err) ||
        trn_build_int(b, "min_crop", c->w, 0, 1 << 20, &c->min_crop, err) ||
        trn_build_float(b, "angle", 0, -360, 360, &c->angle, err) ||
        trn_build_float(b, "aspect", 1, 0, 100, &c->aspect, err) ||
        trn_build_float(b, "saturation", 1, 0, 100, &c->saturation, err) ||
        trn_build_float(b, "exposure", 1, 0, 100, &c->exposure, err) ||
        trn_build_float(b, "hue", 0, 0, 1, &c->hue, err) ||
        trn_build_float(b, "jitter", 0, 0, 1, &c->jitter, err) ||
        trn_build_int(b, "flip", 1, 0, 1, &c->flip, err) ||
        trn_build_int(b, "burn_in", 0, 0, 1 << 30, &c->burn_in, err) ||
        trn_build_float(b, "power", 4, -1e3f, 1e3f, &c->power, err))
        return -1;
    const char *pol = trn_build_str(b, "policy", "constant");
    c->policy = TRN_POLICY_COUNT;
    for (int p = 0; p < TRN_POLICY_COUNT; p++)
        if (strcmp(pol, trn_policy_name(p)) == 0) c->policy = p;
    if (c->policy == TRN_POLICY_COUNT)
        return trn_build_fail(b, "policy", err, "unknown policy '%.40s' (known: constant, step, "
                              "steps, exp, poly, sigmoid)", pol);
    if (trn_build_int(b, "step", 1, 1, 1 << 30, &c->step, err) ||
        trn_build_float(b, "scale", 1, -1e6f, 1e6f, &c->scale, err) ||
        trn_build_float(b, "gamma", 1, -1e6f, 1e6f, &c->gamma, err))
        return -1;
    if (trn_build_float(b, "distill_alpha", 0, 0, 1, &c->distill_alpha, err) ||
        trn_build_float(b, "distill_temperature", 1, 0.01f, 100, &c->distill_temperature, err) ||
        trn_build_float(b, "lasso_filter", 0, 0, 1e3f, &c->lasso_filter, err) ||
        trn_build_float(b, "lasso_channel", 0, 0, 1e3f, &c->lasso_channel, err) ||
        trn_build_float(b, "lasso_shape", 0, 0, 1e3f, &c->lasso_shape, err))
        return -1;
    static const char *const dk[2] = {"distill_cfg", "distill_weights"};
    char *dv[2] = {c->distill_cfg, c->distill_weights};
    for (int k = 0; k < 2; k++) {
        const char *v = trn_build_str(b, dk[k], "");
        if (strlen(v) >= sizeof c->distill_cfg)
            return trn_build_fail(b, dk[k], err, "the path is longer than %zu bytes", sizeof c->distill_cfg - 1);
        strcpy(dv[k], v);
    }
    if (c->distill_alpha > 0 && (!c->distill_cfg[0] || !c->distill_weights[0]))
        return trn_build_fail(b, "distill_alpha", err, "distill_alpha=%g needs the teacher: set distill_cfg "
                              "and distill_weights", c->distill_alpha);
    int64_t maxb = 0;
    {
        int mb;
        if (trn_build_int(b, "max_batches", 0, 0, 2000000000, &mb, err)) return -1;
        maxb = mb;
    }
    c->max_batches = maxb;
    if (c->policy == TRN_POLICY_POLY && maxb == 0)
        return trn_build_fail(b, "policy", err, "policy=poly needs max_batches > 0");
    const char *st = trn_build_str(b, "steps", NULL), *sc = trn_build_str(b, "scales", NULL);
    if (c->policy == TRN_POLICY_STEPS || st || sc) {
        if (!st || !sc)
            return trn_build_fail(b, st ? "steps" : "scales", err,
                                  "policy=steps needs both steps and scales");
        int n = 1;
        for (const char *p = st; *p; p++) n += *p == ',';
        int ns = 1;
        for (const char *p = sc; *p; p++) ns += *p == ',';
        if (n != ns)
            return trn_build_fail(b, "scales", err, "steps has %d values but scales has %d", n, ns);
        net->steps_store = calloc((size_t)n, sizeof(int));
        net->scales_store = calloc((size_t)n, sizeof(float));
        if (!net->steps_store || !net->scales_store) return trn_errf(err, "out of memory");
        if (trn_build_ints(b, "steps", net->steps_store, n, err) < 0) return -1;
        const char *p = sc;
        for (int i = 0; i < n; i++) {
            char *end;
            float v = strtof(p, &end);
            if (end == p || !isfinite(v) || (*end && *end != ','))
                return trn_build_fail(b, "scales", err, "scales=%.60s is not a comma-separated "
                                      "list of numbers", sc);
            net->scales_store[i] = v;
            p = end + 1;
        }
        c->num_steps = n;
        c->steps = net->steps_store;
        c->scales = net->scales_store;
    }
    return 0;
}

/* Every key of the section must be known: to the kind (or [net]) or be one
 * of the common layer keys. */
static int check_keys(trn_build *b, const char *const *keys, int is_net, trn_err *err)
{
    int n = trn_cfg_keys(b->cfg, b->section);
    if (n > (int)sizeof b->used)
        return trn_build_fail(b, NULL, err, "the section has %d keys, more than %d", n,
                              (int)sizeof b->used);
    for (int k = 0; k < n; k++) {
        const char *key = trn_cfg_key(b->cfg, b->section, k);
        if (in_list(keys, key) || (!is_net && in_list(common_keys, key))) continue;
        char where[600];
        trn_cfg_where(b->cfg, b->section, key, where, sizeof where);
        const char *type = trn_cfg_section_type(b->cfg, b->section);
        if (in_list(darknet_only_keys, key))
            return trn_errf(err, "%s: [%s]: key '%s' is a Darknet key this trainer does not "
                            "support: remove it", where, type, key);
        char known[600] = "";
        for (const char *const *p = keys; p && *p; p++) {
            if (strlen(known) + strlen(*p) + 3 >= sizeof known) break;
            strcat(known, known[0] ? ", " : "");
            strcat(known, *p);
        }
        return trn_errf(err, "%s: [%s]: unknown key '%s' (known here: %s%s%s)", where, type, key,
                        known[0] ? known : "none", is_net ? "" : "; and on every layer: ",
                        is_net ? "" : "learning_rate, stopbackward, dontload, dontsave");
    }
    return 0;
}

static int setup_layer(trn_build *b, trn_layer *l, trn_err *err)
{
    const char *type = trn_cfg_section_type(b->cfg, b->section);
    int kind = trn_kind_of_section(type);
    if (kind < 0) {
        char names[512];
        if (strcmp(type, "net") == 0 || strcmp(type, "network") == 0)
            return trn_build_fail(b, NULL, err, "a second [%s] section: only the first section "
                                  "may be [net]", type);
        if (in_list(darknet_only_sections, type))
            return trn_build_fail(b, NULL, err, "this Darknet layer is not supported by this "
                                  "trainer (supported: %s)", supported_kinds(names, sizeof names));
        return trn_build_fail(b, NULL, err, "unknown section type (supported: %s)",
                              supported_kinds(names, sizeof names));
    }
    l->ops = kind_ops[kind];
    snprintf(l->type, sizeof l->type, "%s", type);
    l->line = trn_cfg_section_line(b->cfg, b->section);
    l->section = b->section;
    l->has_delta = 1;
    l->act = TRN_ACT_LINEAR;
    if (check_keys(b, l->ops->keys, 0, err) != 0) return -1;
    if (trn_build_float(b, "learning_rate", 1, -1e6f, 1e6f, &l->lr_scale, err) ||
        trn_build_int(b, "stopbackward", 0, 0, 1, &l->stopbackward, err) ||
        trn_build_int(b, "dontload", 0, 0, 1, &l->dontload, err) ||
        trn_build_int(b, "dontsave", 0, 0, 1, &l->dontsave, err))
        return -1;
    l->inputs = (size_t)l->in.c * l->in.h * l->in.w;
    if (l->ops->setup(l, b, err) != 0) return -1;
    if (l->out.c < 1 || l->out.h < 1 || l->out.w < 1)
        return trn_build_fail(b, NULL, err, "the output shape %dx%dx%d is empty", l->out.c,
                              l->out.h, l->out.w);
    uint64_t outputs = (uint64_t)l->out.c * l->out.h * l->out.w;
    if (outputs * (uint64_t)b->net->batch > MAX_TENSOR)
        return trn_build_fail(b, NULL, err, "the output %dx%dx%d times batch %d is too large",
                              l->out.c, l->out.h, l->out.w, b->net->batch);
    l->outputs = (size_t)outputs;
    l->full_in = l->in;
    l->full_out = l->out;
    l->full_inputs = l->inputs;
    l->full_outputs = l->outputs;
    if (!l->output_aliased) {
        int deltas = !b->net->opts.infer_only && l->has_delta;
        if (trn_build_account(b, outputs * b->net->batch * (deltas ? 2 : 1), "the layer output",
                              err) != 0)
            return -1;
    }
    return 0;
}

/* ---- create ------------------------------------------------------------- */

void trn_net_opts_defaults(trn_net_opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = TRN_BACKEND_CPU;
}

float *trn_net_alloc_floats(trn_net *net, size_t n)
{
    return net->be->alloc(net->be, n * sizeof(float));
}

void trn_net_release(trn_net *net, void *p)
{
    if (p) net->be->release(net->be, p);
}

void trn_net_reseed(trn_net *net, uint64_t seed)
{
    trn_rng root;
    net->opts.seed = seed;
    trn_rng_seed(&root, seed);
    net->rng_init = trn_rng_fork(&root, 1);
    net->rng_train = trn_rng_fork(&root, 2);
}

uint64_t trn_net_seed(const trn_net *net) { return net->opts.seed; }

trn_rng trn_net_layer_rng(const trn_net *net, const trn_layer *l)
{
    trn_rng step = trn_rng_fork(&net->rng_train, net->seen / (uint64_t)net->batch);
    return trn_rng_fork(&step, (uint64_t)l->index);
}

/* Darknet's initial values: conv weights scale*N(0,1), connected weights
 * scale*U(-1,1), scale = sqrt(2 / fan-in); biases and rolling statistics
 * 0; BN scales 1. */
static void init_params(trn_net *net)
{
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        const trn_layer *l = &net->layers[p->layer];
        if (p->role == TRN_PARAM_SCALES) {
            for (size_t j = 0; j < p->count; j++) p->data[j] = 1;
        } else if (p->role == TRN_PARAM_WEIGHTS) {
            trn_rng r = trn_rng_fork(&net->rng_init, (uint64_t)p->layer);
            float scale = sqrtf(2.0f / (float)p->cols);
            for (size_t j = 0; j < p->count; j++)
                p->data[j] = l->ops->init_uniform
                                 ? scale * trn_rng_range(&r, -1, 1)
                                 : scale * trn_rng_normal(&r);
        }
    }
}

/* Whether parameter p gets an update array (not the rolling statistics,
 * and only when the network trains). */
static int has_update(const trn_net *net, const trn_param *p)
{
    return !net->opts.infer_only && p->role != TRN_PARAM_ROLLING_MEAN &&
           p->role != TRN_PARAM_ROLLING_VARIANCE;
}

/* Whether net allocates a layer's buffers when a forward first runs it
 * (trn_net_opts.lazy_buffers; inference only). */
static int lazy_buffers(const trn_net *net) { return net->opts.lazy_buffers && net->opts.infer_only; }

/* Layer i's output buffer (and delta, training), unless it has one; an
 * aliased output is its input's, so the layer below gets its own first. */
static int layer_output(trn_net *net, int i, trn_err *err)
{
    trn_layer *l = &net->layers[i];
    if (l->output) return 0;
    if (l->output_aliased) {
        if (i && layer_output(net, i - 1, err) != 0) return -1;
        l->output = i ? net->layers[i - 1].output : net->input;
        l->delta = i ? net->layers[i - 1].delta : NULL;
        return 0;
    }
    size_t n = (size_t)net->batch * l->outputs;
    if (!(l->output = trn_net_alloc_floats(net, n))) return trn_errf(err, "out of memory for layer %d's output", i);
    if (!net->opts.infer_only && l->has_delta && !(l->delta = trn_net_alloc_floats(net, n)))
        return trn_errf(err, "out of memory for layer %d's delta", i);
    return 0;
}

/* Layers first..last ready to run: their input and output buffers, the
 * workspace when one needs it, their own state (ops->alloc), each once. */
static int layers_ready(trn_net *net, int first, int last, trn_err *err)
{
    for (int i = first; i <= last; i++) {
        trn_layer *l = &net->layers[i];
        if (l->ready) continue;
        if ((i && layer_output(net, i - 1, err) != 0) || layer_output(net, i, err) != 0) return -1;
        trn_layer_info li; /* a route's or shortcut's other sources */
        trn_net_layer_info(net, i, &li);
        for (int k = 0; k < li.n_from; k++)
            if (layer_output(net, li.from[k], err) != 0) return -1;
        l->input = i ? net->layers[i - 1].output : net->input;
        l->in_delta = i ? net->layers[i - 1].delta : NULL;
        if (l->workspace && !net->workspace &&
            !(net->workspace = trn_net_alloc_floats(net, net->workspace_floats)))
            return trn_errf(err, "out of memory for a %zu-float workspace", net->workspace_floats);
        if (l->ops->alloc && l->ops->alloc(l, net, err) != 0) return -1;
        l->ready = 1;
    }
    return 0;
}

static int alloc_net(trn_net *net, trn_err *err)
{
    int training = !net->opts.infer_only;
    size_t total = 0, upd = 0;
    for (int i = 0; i < net->np; i++) {
        total += net->params[i].count;
        if (has_update(net, &net->params[i])) upd += net->params[i].count;
    }
    net->param_floats = total;
    if (!net->opts.external_params) {
        net->param_block = trn_net_alloc_floats(net, total);
        if (!net->param_block) return trn_errf(err, "out of memory for %zu parameters", total);
    }
    if (training && upd) {
        net->update_block = trn_net_alloc_floats(net, upd);
        if (!net->update_block) return trn_errf(err, "out of memory for %zu parameters", upd);
    }
    size_t off = 0, uoff = 0;
    int64_t foff = 20;
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        p->data = net->param_block ? net->param_block + off : NULL;
        off += p->count;
        if (has_update(net, p)) {
            p->update = net->update_block + uoff;
            uoff += p->count;
        }
        if (!net->layers[p->layer].dontsave) {
            p->offset = foff;
            foff += (int64_t)p->count * 4;
        }
    }
    size_t in = (size_t)net->batch * trn_net_inputs(net);
    net->input = trn_net_alloc_floats(net, in);
    if (!net->input) return trn_errf(err, "out of memory for the input");
    for (int i = 0; i < net->n; i++)
        if (net->layers[i].workspace > net->workspace_floats) net->workspace_floats = net->layers[i].workspace;
    if (training) {
        size_t t = (size_t)net->batch * trn_net_outputs(net);
        if (!(net->truth = trn_net_alloc_floats(net, t))) return trn_errf(err, "out of memory");
    }
    if (!lazy_buffers(net) && layers_ready(net, 0, net->n - 1, err) != 0) return -1;
    net->params_ready = !net->opts.external_params;
    if (net->params_ready) init_params(net);
    return 0;
}

int trn_net_check_net_section(const trn_cfg *cfg, trn_err *err)
{
    if (trn_cfg_sections(cfg) < 1) return trn_errf(err, "%s: no [net] section", trn_cfg_name(cfg));
    const char *t0 = trn_cfg_section_type(cfg, 0);
    if (strcmp(t0, "net") != 0 && strcmp(t0, "network") != 0) return 0; /* trn_net_create says why */
    trn_net *net = calloc(1, sizeof *net);
    if (!net) return trn_errf(err, "out of memory");
    trn_net_opts_defaults(&net->opts);
    snprintf(net->name, sizeof net->name, "%s", trn_cfg_name(cfg));
    trn_build b = {.cfg = cfg, .net = net};
    int rc = check_keys(&b, net_keys, 1, err) != 0 || parse_net_section(&b, net, err) != 0 ? -1 : 0;
    free(net->steps_store);
    free(net->scales_store);
    free(net);
    return rc;
}

trn_net *trn_net_create(const trn_cfg *cfg, const trn_net_opts *opts, trn_err *err)
{
    trn_net *net = calloc(1, sizeof *net);
    if (net) net->running = -1;
    if (!net) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    if (opts)
        net->opts = *opts;
    else
        trn_net_opts_defaults(&net->opts);
    snprintf(net->name, sizeof net->name, "%s", trn_cfg_name(cfg));
    trn_build b = {.cfg = cfg, .net = net};
    if (!(net->be = trn_backend_get(net->opts.backend))) {
        trn_errf(err, "%s: unknown backend %d", net->name, (int)net->opts.backend);
        goto fail;
    }
    if (net->opts.external_params && !net->opts.infer_only) {
        trn_errf(err, "%s: external parameters need an inference-only network", net->name);
        goto fail;
    }
    if (net->opts.batch < 0 || net->opts.batch > (1 << 20)) {
        trn_errf(err, "%s: batch %d is out of range (1..%d)", net->name, net->opts.batch, 1 << 20);
        goto fail;
    }
    int ns = trn_cfg_sections(cfg);
    if (ns < 1) {
        trn_errf(err, "%s: no sections: a network cfg starts with [net]", net->name);
        goto fail;
    }
    const char *t0 = trn_cfg_section_type(cfg, 0);
    if (strcmp(t0, "net") != 0 && strcmp(t0, "network") != 0) {
        char where[600];
        trn_errf(err, "%s: the first section is [%s]; a network cfg starts with [net]",
                 trn_cfg_where(cfg, 0, NULL, where, sizeof where), t0);
        goto fail;
    }
    if (check_keys(&b, net_keys, 1, err) != 0 || parse_net_section(&b, net, err) != 0) goto fail;
    net->batch = net->opts.batch > 0 ? net->opts.batch : net->cfg.batch;
    net->in = (trn_shape){net->cfg.c, net->cfg.h, net->cfg.w};
    if ((uint64_t)net->cfg.c * net->cfg.h * net->cfg.w * net->batch > MAX_TENSOR) {
        trn_build_fail(&b, NULL, err, "the input %dx%dx%d times batch %d is too large",
                       net->cfg.c, net->cfg.h, net->cfg.w, net->batch);
        goto fail;
    }
    if (ns < 2) {
        trn_errf(err, "%s: the cfg has a [net] section but no layer", net->name);
        goto fail;
    }
    net->n = ns - 1;
    net->layers = calloc((size_t)net->n, sizeof *net->layers);
    if (!net->layers) {
        trn_errf(err, "out of memory");
        goto fail;
    }
    b.layers = net->layers;
    trn_shape in = net->in;
    for (int i = 0; i < net->n; i++) {
        trn_layer *l = &net->layers[i];
        memset(b.used, 0, sizeof b.used);
        b.section = i + 1;
        b.index = i;
        l->index = i;
        l->in = in;
        if (setup_layer(&b, l, err) != 0) goto fail;
        in = l->out;
    }
    net->np = b.nparams;
    net->params = b.params;
    b.params = NULL;
    /* Everything accounted for: input, truth and workspace. */
    size_t ws = 0;
    for (int i = 0; i < net->n; i++)
        if (net->layers[i].workspace > ws) ws = net->layers[i].workspace;
    b.section = 0;
    if (trn_build_account(&b, ws, "the convolution workspace", err) != 0 ||
        trn_build_account(&b, (uint64_t)net->batch * trn_net_inputs(net) * 2, "the input", err))
        goto fail;
    trn_net_reseed(net, net->opts.seed);
    if (alloc_net(net, err) != 0) {
        trn_err_prefix(err, "%s", net->name);
        goto fail;
    }
    return net;
fail:
    free(b.params);
    trn_net_free(net);
    return NULL;
}

void trn_net_free(trn_net *net)
{
    if (!net) return;
    for (int i = 0; net->layers && i < net->n; i++) {
        trn_layer *l = &net->layers[i];
        if (l->ops && l->ops->destroy) l->ops->destroy(l, net);
        free(l->priv);
        free(l->fixed_rand);
        if (!l->output_aliased) {
            trn_net_release(net, l->output);
            trn_net_release(net, l->delta);
        }
    }
    if (net->be) {
        trn_net_release(net, net->param_block);
        trn_net_release(net, net->update_block);
        trn_net_release(net, net->input);
        trn_net_release(net, net->truth);
        trn_net_release(net, net->workspace);
    }
    for (int i = 0; net->params && i < net->np; i++) free(net->params[i].mask);
    free(net->params);
    free(net->home);
    free(net->layers);
    free(net->steps_store);
    free(net->scales_store);
    free(net);
}

trn_net *trn_net_load(const char *cfg_path, const char *weights_path, const trn_net_opts *opts,
                      trn_err *err)
{
    trn_cfg *cfg = trn_cfg_read(cfg_path, err);
    if (!cfg) return NULL;
    trn_net *net = trn_net_create(cfg, opts, err);
    trn_cfg_free(cfg);
    if (net && weights_path && trn_weights_load(net, weights_path, err) != 0) {
        trn_net_free(net);
        return NULL;
    }
    return net;
}

/* ---- accessors and information ---------------------------------------- */

const trn_net_config *trn_net_get_config(const trn_net *net) { return &net->cfg; }
int trn_net_batch(const trn_net *net) { return net->batch; }
int trn_net_layers(const trn_net *net) { return net->n; }
trn_shape trn_net_input_shape(const trn_net *net) { return net->in; }
size_t trn_net_inputs(const trn_net *net) { return (size_t)net->in.c * net->in.h * net->in.w; }
uint64_t trn_net_seen(const trn_net *net) { return net->seen; }
void trn_net_set_seen(trn_net *net, uint64_t seen) { net->seen = seen; }

/* Darknet's get_network_output_layer: the last layer that is not [cost]. */
static const trn_layer *output_layer(const trn_net *net)
{
    int i = net->n - 1;
    while (i > 0 && net->layers[i].ops->desc.is_loss) i--;
    return &net->layers[i];
}

size_t trn_net_outputs(const trn_net *net) { return output_layer(net)->outputs; }
const float *trn_net_output(const trn_net *net) { return output_layer(net)->output; }

const float *trn_net_layer_output(const trn_net *net, int i)
{
    return (i >= 0 && i < net->n) ? net->layers[i].output : NULL;
}

const trn_param *trn_net_params(const trn_net *net, int *n)
{
    if (n) *n = net->np;
    return net->params;
}

const trn_param *trn_net_param(const trn_net *net, int layer, trn_param_role role)
{
    for (int k = 0; k < net->np; k++)
        if (net->params[k].layer == layer && net->params[k].role == role) return &net->params[k];
    return NULL;
}

int trn_net_set_mask(trn_net *net, int p, const float *mask, trn_err *err)
{
    if (p < 0 || p >= net->np)
        return trn_errf(err, "no parameter %d (the network has %d)", p, net->np);
    trn_param *x = &net->params[p];
    if (!mask) {
        free(x->mask);
        x->mask = NULL;
        return 0;
    }
    if (!x->mask && !(x->mask = malloc(x->count * sizeof *x->mask)))
        return trn_errf(err, "out of memory for a mask of %zu values", x->count);
    for (size_t i = 0; i < x->count; i++) x->mask[i] = mask[i] != 0 ? 1.0f : 0.0f;
    return 0;
}

int trn_net_layer_info(const trn_net *net, int i, trn_layer_info *info)
{
    if (i < 0 || i >= net->n) return -1;
    const trn_layer *l = &net->layers[i];
    memset(info, 0, sizeof *info);
    info->index = i;
    info->kind = l->ops->desc.kind;
    info->type = l->type;
    info->section = l->section;
    info->line = l->line;
    info->in = l->in;
    info->out = l->out;
    info->activation = l->act;
    for (int k = 0; k < l->param_count; k++)
        info->params += net->params[l->param_first + k].count;
    info->output_bytes = (uint64_t)l->outputs * sizeof(float);
    if (l->ops->describe) l->ops->describe(l, info);
    return 0;
}

/* Peak live activation bytes at batch 1: a buffer (the input, or a layer's
 * own output) is live from the step that writes it to the last step that
 * reads it; dropout works in place on its input's buffer. */
static uint64_t peak_activation(const trn_net *net)
{
    int n = net->n;
    int *owner = malloc((size_t)(n + 1) * sizeof *owner);
    int *last = malloc((size_t)(n + 1) * sizeof *last);
    if (!owner || !last) {
        free(owner);
        free(last);
        return 0;
    }
    /* Buffer b: 0 = the network input, i + 1 = layer i's output. */
    owner[0] = 0;
    for (int i = 0; i < n; i++) owner[i + 1] = net->layers[i].output_aliased ? owner[i] : i + 1;
    for (int b = 0; b <= n; b++) last[b] = b - 1;
    for (int i = 0; i < n; i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        if (!net->layers[i].ops->desc.ignores_previous && owner[i] >= 0) {
            if (last[owner[i]] < i) last[owner[i]] = i;
        }
        for (int k = 0; k < info.n_from; k++) {
            int b = owner[info.from[k] + 1];
            if (last[b] < i) last[b] = i;
        }
        if (last[owner[i + 1]] < i) last[owner[i + 1]] = i;
    }
    uint64_t peak = 0;
    for (int i = 0; i < n; i++) {
        uint64_t live = 0;
        for (int b = 0; b <= n; b++) {
            if (owner[b] != b) continue;
            int first = b - 1; /* the step that writes buffer b (-1: before layer 0) */
            if (first <= i && i <= last[b]) {
                uint64_t floats = b ? net->layers[b - 1].outputs : trn_net_inputs(net);
                live += floats * sizeof(float);
            }
        }
        if (live > peak) peak = live;
    }
    free(owner);
    free(last);
    return peak;
}

int trn_net_layer_traffic(const trn_net *net, int i, trn_layer_traffic *t)
{
    if (i < 0 || i >= net->n) return -1;
    const trn_layer *l = &net->layers[i];
    memset(t, 0, sizeof *t);
    if (l->output_aliased) return 0;
    /* The shapes and parameters trn_net_layer_info reports (the active
     * capacity's). */
    trn_layer_info info, src;
    trn_net_layer_info(net, i, &info);
    uint64_t floats = l->ops->desc.ignores_previous ? 0 : (uint64_t)info.in.c * info.in.h * info.in.w;
    for (int k = 0; k < info.n_from; k++) {
        trn_net_layer_info(net, info.from[k], &src);
        floats += (uint64_t)src.out.c * src.out.h * src.out.w;
    }
    floats += info.params;
    t->read_bytes = floats * sizeof(float);
    t->write_bytes = (uint64_t)info.out.c * info.out.h * info.out.w * sizeof(float);
    return 0;
}

uint64_t trn_net_traffic_bytes(const trn_net *net)
{
    uint64_t sum = 0;
    for (int i = 0; i < net->n; i++) {
        trn_layer_traffic t;
        trn_net_layer_traffic(net, i, &t);
        sum += t.read_bytes + t.write_bytes;
    }
    return sum;
}

void trn_net_get_totals(const trn_net *net, trn_net_totals *t)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < net->n; i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        t->params += info.params;
        t->macs += info.macs;
        t->bias_ops += info.bias_ops;
        t->bn_ops += info.bn_ops;
        t->act_ops += info.act_ops;
        t->pool_ops += info.pool_ops;
    }
    t->weight_bytes = t->params * sizeof(float);
    t->peak_activation_bytes = peak_activation(net);
    t->traffic_bytes = trn_net_traffic_bytes(net);
}

const trn_backend *trn_net_swap_backend(trn_net *net, const trn_backend *be)
{
    const trn_backend *old = net->be;
    net->be = be;
    return old;
}

int trn_net_running_layer(const trn_net *net) { return net->running; }

/* ---- forward ------------------------------------------------------------ */

int trn_net_forward_upto(trn_net *net, const float *x, int last, trn_err *err)
{
    if (!net->params_ready)
        return trn_errf(err, "%s: the network has no parameters yet: load a weights buffer "
                        "first", net->name);
    if (last < 0 || last >= net->n)
        return trn_errf(err, "%s: no layer %d (the network has %d)", net->name, last, net->n);
    if (layers_ready(net, 0, last, err) != 0) return trn_err_prefix(err, "%s", net->name);
    net->be->upload(net->be, net->input, x, (size_t)net->batch * trn_net_inputs(net));
    net->train = 0;
    net->truth_in = NULL;
    for (int i = 0; i <= last; i++) trn_layer_run(net, &net->layers[i], 0, 0);
    return 0;
}

int trn_net_forward_range(trn_net *net, int first, int last, const float *x, trn_err *err)
{
    if (!net->params_ready)
        return trn_errf(err, "%s: the network has no parameters yet: load a weights buffer "
                        "first", net->name);
    if (first < 0 || last < first || last >= net->n)
        return trn_errf(err, "%s: no layer range %d..%d (the network has %d layers)", net->name, first, last,
                        net->n);
    if ((first && layer_output(net, first - 1, err) != 0) || layers_ready(net, first, last, err) != 0)
        return trn_err_prefix(err, "%s", net->name);
    float *dst = first ? net->layers[first - 1].output : net->input;
    size_t n = (size_t)net->batch * (first ? net->layers[first - 1].outputs : trn_net_inputs(net));
    net->be->upload(net->be, dst, x, n);
    net->train = 0;
    net->truth_in = NULL;
    for (int i = first; i <= last; i++) trn_layer_run(net, &net->layers[i], 0, 0);
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

void trn_layer_set_cost(trn_layer *l, const float *loss, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += loss[i];
    l->cost = (float)sum;
    l->has_cost = 1;
}

/* The threads layer l runs on: the engine's setting, or where the engine
 * chooses, from the layer's work for the whole batch (backend.h). */
static int layer_threads(const trn_net *net, const trn_layer *l)
{
    trn_engine *e = net->opts.engine ? net->opts.engine : trn_engine_default();
    if (!trn_engine_threads_chosen(e)) return 0;
    trn_layer_info info;
    trn_net_layer_info(net, (int)(l - net->layers), &info);
    uint64_t work = info.macs + info.bias_ops + info.bn_ops + info.act_ops + info.pool_ops;
    return trn_engine_layer_threads(e, work * (uint64_t)net->batch);
}

void trn_layer_run(trn_net *net, trn_layer *l, int backward, int train)
{
    double t0 = net->profile ? now_s() : 0;
    net->running = (int)(l - net->layers);
    trn_engine_scope was = trn_engine_enter(net->opts.engine, layer_threads(net, l));
    if (backward)
        l->ops->backward(l, net);
    else
        l->ops->forward(l, net, train);
    trn_engine_leave(was);
    net->running = -1;
    if (net->profile) *(backward ? &l->t_backward : &l->t_forward) += now_s() - t0;
}

void trn_net_profile(trn_net *net, int on)
{
    net->profile = on;
    for (int i = 0; on && i < net->n; i++) net->layers[i].t_forward = net->layers[i].t_backward = 0;
}

int trn_net_layer_time(const trn_net *net, int i, double *forward_s, double *backward_s)
{
    if (i < 0 || i >= net->n) return -1;
    if (forward_s) *forward_s = net->layers[i].t_forward;
    if (backward_s) *backward_s = net->layers[i].t_backward;
    return 0;
}

int trn_net_forward(trn_net *net, const float *x, trn_err *err)
{
    return trn_net_forward_upto(net, x, net->n - 1, err);
}

int trn_layer_fix_random(trn_net *net, int i, const float *values, size_t n, trn_err *err)
{
    if (i < 0 || i >= net->n) return trn_errf(err, "no layer %d", i);
    trn_layer *l = &net->layers[i];
    float *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return trn_errf(err, "out of memory");
    memcpy(v, values, n * sizeof *v);
    free(l->fixed_rand);
    l->fixed_rand = v;
    l->fixed_rand_n = n;
    return 0;
}

int trn_layer_import_output(trn_net *net, int i, const float *values, size_t n, trn_err *err)
{
    if (i < 0 || i >= net->n) return trn_errf(err, "no layer %d", i);
    trn_layer *l = &net->layers[i];
    if (n != (size_t)net->batch * l->outputs)
        return trn_errf(err, "layer %d has %zu outputs, not %zu", i, (size_t)net->batch * l->outputs, n);
    if (l->ops->import_reruns_forward) l->ops->forward(l, net, 1);
    net->be->upload(net->be, l->output, values, n);
    return 0;
}
