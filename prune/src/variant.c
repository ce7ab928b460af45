/*
 * variant.c: what every technique shares: the networks that hold a
 * variant, copying unchanged layers from the base (warm start), and writing
 * the variant folder.
 *
 * The folder (the contract with mk/variants.mk):
 *   variant.cfg   Darknet cfg text
 *   init.weights  Darknet .weights (version 0.2.0): the weights to start
 *                 training from, or the final ones when none follows
 *   meta.json     {"technique": "rewrite"|"svd"|"mimic", "parent": "base",
 *                  "description": "...", "technique_fields": {...}
 *                  [, "measured": {...}: seconds and the like, which differ
 *                  between runs and stay out of the manifest]}
 */
#include "prn_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void prn_net_opts(trn_net_opts *o, uint64_t seed)
{
    trn_net_opts_defaults(o);
    o->batch = 1;
    o->infer_only = 1;
    o->seed = seed;
}

trn_net *prn_net_like(const trn_cfg *cfg, const trn_net *src, int batch, int infer_only, uint64_t seed,
                      int keep_seen, trn_err *err)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = batch;
    o.infer_only = infer_only;
    o.seed = seed;
    trn_net *n = trn_net_create(cfg, &o, err);
    if (!n) return NULL;
    int ns, nd;
    const trn_param *ps = trn_net_params(src, &ns), *pd = trn_net_params(n, &nd);
    if (ns != nd) {
        trn_net_free(n);
        trn_errf(err, "internal: parameter tables differ (%d, %d)", ns, nd);
        return NULL;
    }
    for (int k = 0; k < nd; k++) memcpy(pd[k].data, ps[k].data, pd[k].count * sizeof(float));
    if (keep_seen) trn_net_set_seen(n, trn_net_seen(src));
    return n;
}

int prn_check_cfg(const trn_cfg *cfg, trn_err *err)
{
    trn_cfg *proxy = prn_cfg_proxy(cfg, err);
    if (!proxy) return trn_err_prefix(err, "variant");
    trn_net_opts o;
    prn_net_opts(&o, 0);
    o.external_params = 1;
    trn_net *net = trn_net_create(proxy, &o, err);
    trn_cfg_free(proxy);
    if (!net) return trn_err_prefix(err, "the variant cannot be built");
    trn_net_free(net);
    return 0;
}

cJSON *prn_json_ints(const int *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *x = cJSON_CreateNumber(v[i]);
        if (!x || !cJSON_AddItemToArray(a, x)) {
            cJSON_Delete(x);
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}

double prn_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

double prn_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

char *prn_strdupf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s) return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int prn_appendf(char **s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    size_t old = *s ? strlen(*s) : 0;
    char *t = n >= 0 ? realloc(*s, old + (size_t)n + 1) : NULL;
    if (!t) {
        free(*s);
        *s = NULL;
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(t + old, (size_t)n + 1, fmt, ap);
    va_end(ap);
    *s = t;
    return 0;
}

void prn_variant_free(prn_variant *v)
{
    if (!v) return;
    free(v->description);
    trn_cfg_free(v->cfg);
    trn_net_free(v->net);
    cJSON_Delete(v->fields);
    cJSON_Delete(v->measured);
    memset(v, 0, sizeof *v);
}

/* The slice [*first, *first + *count) of the parameter table that belongs
 * to layer i (count 0 when it has none). */
static void layer_params(const trn_param *t, int np, int i, int *first, int *count)
{
    *first = 0;
    *count = 0;
    for (int k = 0; k < np; k++)
        if (t[k].layer == i) {
            if (!*count) *first = k;
            (*count)++;
        }
}

/* 1 when dst's layer b is src's layer a with fewer filters or outputs and/or
 * a prefix of its input channels (the same kind, kernel, groups and
 * spatial input size), so that its parameters are a sub-block of a's. */
static int is_slice(const trn_layer_info *a, const trn_layer_info *b)
{
    if (a->kind != b->kind) return 0;
    if (b->in.h != a->in.h || b->in.w != a->in.w || b->in.c > a->in.c) return 0;
    if (a->kind == TRN_LAYER_CONVOLUTIONAL)
        return b->size == a->size && b->groups == 1 && a->groups == 1 &&
               b->filters <= a->filters && b->batch_normalize == a->batch_normalize;
    if (a->kind == TRN_LAYER_CONNECTED)
        return b->out.c * b->out.h * b->out.w <= a->out.c * a->out.h * a->out.w &&
               b->batch_normalize == a->batch_normalize;
    return 0;
}

/* Copies the overlapping block of a (rows, cols) parameter: the first
 * d->rows rows (filters or outputs), of each its first d->cols columns.
 * A convolution's row is (channels, size, size) and a connected layer's
 * row over a (c, h, w) input is (c, h, w), so the first columns are the
 * first input channels; per-filter vectors are (1, count): a prefix. */
static void copy_block(const trn_param *s, const trn_param *d)
{
    for (int r = 0; r < d->rows; r++)
        memcpy(d->data + (size_t)r * d->cols, s->data + (size_t)r * s->cols,
               (size_t)d->cols * sizeof(float));
}

/* Whether channel k of dst layer j's output is channel k of its base
 * layer's output, for every k it has (order[j]), given the same for the
 * layers before it. A convolution or connected layer orders its outputs
 * by its own filters; pooling, dropout, softmax, crop and cost layers
 * pass their input's order through; a route keeps it when every source
 * but the last has its base channel count (the sources are concatenated);
 * a shortcut when both its inputs keep it. */
static int keeps_order(const trn_net *src, const trn_net *dst, const int *inv, const char *order,
                       int j)
{
    trn_layer_info b;
    trn_net_layer_info(dst, j, &b);
    int prev = j == 0 ? 1 : order[j - 1];
    switch (trn_kind_desc_get(b.kind)->channels) { /* the engine's kind table */
    case TRN_CHANNELS_OWN:
        return 1;
    case TRN_CHANNELS_CONCAT:
        for (int k = 0; k < b.n_from; k++) {
            int f = b.from[k];
            if (f < 0 || f >= j || !order[f]) return 0;
            if (k < b.n_from - 1) {
                trn_layer_info fd, fs;
                trn_net_layer_info(dst, f, &fd);
                if (inv[f] < 0) return 0;
                trn_net_layer_info(src, inv[f], &fs);
                if (fd.out.c != fs.out.c) return 0;
            }
        }
        return 1;
    case TRN_CHANNELS_ADD:
        return prev && b.n_from > 0 && b.from[0] >= 0 && b.from[0] < j && order[b.from[0]];
    case TRN_CHANNELS_PASS:
    default:
        return prev;
    }
}

cJSON *prn_copy_layers(const trn_net *src, trn_net *dst, const int *map, trn_err *err)
{
    int nps, npd;
    const trn_param *ps = trn_net_params(src, &nps);
    const trn_param *pd = trn_net_params(dst, &npd);
    int nd = trn_net_layers(dst), nsrc = trn_net_layers(src);
    char *copied = calloc((size_t)nd, 1); /* 1 copied, 2 sliced */
    char *order = calloc((size_t)nd, 1);
    int *inv = malloc((size_t)nd * sizeof *inv);
    cJSON *res = cJSON_CreateObject(), *c = cJSON_CreateArray(), *z = cJSON_CreateArray();
    cJSON *sl = cJSON_CreateArray();
    if (!copied || !order || !inv || !res || !c || !z || !sl) goto oom;
    cJSON_AddItemToObject(res, "copied", c);
    cJSON_AddItemToObject(res, "sliced", sl);
    cJSON_AddItemToObject(res, "initialised", z);
    for (int j = 0; j < nd; j++) inv[j] = -1;
    for (int i = 0; i < nsrc; i++)
        if (map[i] >= 0 && map[i] < nd) inv[map[i]] = i;
    for (int j = 0; j < nd; j++) {
        int i = inv[j];
        order[j] = (char)(i >= 0 && keeps_order(src, dst, inv, order, j));
        if (i < 0) continue;
        int fs, ns, fd, nn;
        layer_params(ps, nps, i, &fs, &ns);
        layer_params(pd, npd, j, &fd, &nn);
        trn_layer_info a, b;
        trn_net_layer_info(src, i, &a);
        trn_net_layer_info(dst, j, &b);
        if (ns == 0 || ns != nn || a.kind != b.kind) continue;
        int same = 1, roles = 1;
        for (int k = 0; k < ns && roles; k++) {
            roles = ps[fs + k].role == pd[fd + k].role;
            same = same && roles && ps[fs + k].rows == pd[fd + k].rows &&
                   ps[fs + k].cols == pd[fd + k].cols && ps[fs + k].count == pd[fd + k].count;
        }
        int input_order = j == 0 || order[j - 1];
        if (same) {
            for (int k = 0; k < ns; k++)
                memcpy(pd[fd + k].data, ps[fs + k].data, ps[fs + k].count * sizeof(float));
            copied[j] = 1;
        } else if (roles && is_slice(&a, &b) && (b.in.c == a.in.c || input_order)) {
            /* A sub-block: the first filters (outputs) and, within each, the
             * first input channels, which are the base's first channels. */
            for (int k = 0; k < ns; k++)
                copy_block(&ps[fs + k], &pd[fd + k]);
            copied[j] = 2;
        }
    }
    for (int j = 0; j < nd; j++) {
        int f, n;
        layer_params(pd, npd, j, &f, &n);
        if (!n) continue;
        cJSON *x = cJSON_CreateNumber(j);
        if (!x) goto oom;
        cJSON_AddItemToArray(copied[j] == 1 ? c : copied[j] == 2 ? sl : z, x);
    }
    free(copied);
    free(order);
    free(inv);
    return res;
oom:
    free(copied);
    free(order);
    free(inv);
    if (res) {
        cJSON_Delete(res);
    } else {
        cJSON_Delete(c);
        cJSON_Delete(z);
        cJSON_Delete(sl);
    }
    trn_errf(err, "out of memory");
    return NULL;
}

/* dir/name into buf. */
static const char *join(char *buf, size_t size, const char *dir, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
    return buf;
}

int prn_variant_write(const prn_variant *v, const char *dir, trn_err *err)
{
    char a[4200];
    char *json = NULL;
    int rc = -1;
    if (strlen(dir) > 4000) return trn_errf(err, "--out %.60s...: path too long", dir);
    if (trn_mkdir_p(dir, err) != 0) return -1;
    /* No meta.json while the files it describes change: make waits for it. */
    if (unlink(join(a, sizeof a, dir, "meta.json")) != 0 && errno != ENOENT)
        return trn_errf(err, "cannot remove the old %s: %s", a, strerror(errno));
    cJSON *meta = cJSON_CreateObject();
    if (!meta || !cJSON_AddStringToObject(meta, "technique", v->technique) ||
        !cJSON_AddStringToObject(meta, "parent", v->parent ? v->parent : "base") ||
        !cJSON_AddStringToObject(meta, "description", v->description ? v->description : "")) {
        cJSON_Delete(meta);
        return trn_errf(err, "out of memory");
    }
    cJSON *fields = v->fields ? cJSON_Duplicate(v->fields, 1) : cJSON_CreateObject();
    if (!fields || !cJSON_AddItemToObject(meta, "technique_fields", fields)) {
        cJSON_Delete(fields);
        cJSON_Delete(meta);
        return trn_errf(err, "out of memory");
    }
    cJSON *measured = v->measured ? cJSON_Duplicate(v->measured, 1) : NULL;
    if (v->measured && (!measured || !cJSON_AddItemToObject(meta, "measured", measured))) {
        cJSON_Delete(measured);
        cJSON_Delete(meta);
        return trn_errf(err, "out of memory");
    }
    json = cJSON_Print(meta);
    cJSON_Delete(meta);
    if (!json || prn_appendf(&json, "\n") != 0) {
        free(json);
        return trn_errf(err, "out of memory");
    }
    /* each file as every output is written (trn_atomic_open: a link is
     * followed, a device written in place); meta.json last, so a variant
     * whose writing failed has none and make does not take it */
    if (trn_cfg_write(v->cfg, join(a, sizeof a, dir, "variant.cfg"), err) == 0 &&
        trn_weights_save(v->net, join(a, sizeof a, dir, "init.weights"), err) == 0 &&
        trn_write_file_atomic(join(a, sizeof a, dir, "meta.json"), json, strlen(json), err) == 0)
        rc = 0;
    free(json);
    return rc;
}
