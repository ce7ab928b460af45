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
 *                  "description": "...", "technique_fields": {...}}
 */
#include "prn_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void prn_net_opts(trn_net_opts *o, uint64_t seed)
{
    trn_net_opts_defaults(o);
    o->batch = 1;
    o->infer_only = 1;
    o->seed = seed;
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

cJSON *prn_copy_layers(const trn_net *src, trn_net *dst, const int *map, trn_err *err)
{
    int nps, npd;
    const trn_param *ps = trn_net_params(src, &nps);
    const trn_param *pd = trn_net_params(dst, &npd);
    int nd = trn_net_layers(dst);
    char *copied = calloc((size_t)nd, 1);
    cJSON *res = cJSON_CreateObject(), *c = cJSON_CreateArray(), *z = cJSON_CreateArray();
    if (!copied || !res || !c || !z) goto oom;
    cJSON_AddItemToObject(res, "copied", c);
    cJSON_AddItemToObject(res, "initialised", z);
    for (int i = 0; i < trn_net_layers(src); i++) {
        int j = map[i];
        if (j < 0 || j >= nd) continue;
        int fs, ns, fd, nn;
        layer_params(ps, nps, i, &fs, &ns);
        layer_params(pd, npd, j, &fd, &nn);
        trn_layer_info a, b;
        trn_net_layer_info(src, i, &a);
        trn_net_layer_info(dst, j, &b);
        if (ns == 0 || ns != nn || a.kind != b.kind) continue;
        int same = 1;
        for (int k = 0; k < ns && same; k++)
            same = ps[fs + k].role == pd[fd + k].role && ps[fs + k].rows == pd[fd + k].rows &&
                   ps[fs + k].cols == pd[fd + k].cols && ps[fs + k].count == pd[fd + k].count;
        if (!same) continue;
        for (int k = 0; k < ns; k++)
            memcpy(pd[fd + k].data, ps[fs + k].data, ps[fs + k].count * sizeof(float));
        copied[j] = 1;
    }
    for (int j = 0; j < nd; j++) {
        int f, n;
        layer_params(pd, npd, j, &f, &n);
        if (!n) continue;
        cJSON *x = cJSON_CreateNumber(j);
        if (!x) goto oom;
        cJSON_AddItemToArray(copied[j] ? c : z, x);
    }
    free(copied);
    return res;
oom:
    free(copied);
    if (res) {
        cJSON_Delete(res);
    } else {
        cJSON_Delete(c);
        cJSON_Delete(z);
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
    static const char *const final[3] = {"variant.cfg", "init.weights", "meta.json"};
    static const char *const temp[3] = {".variant.cfg.new", ".init.weights.new", ".meta.json.new"};
    char a[4200], b[4200];
    char *json = NULL;
    int rc = -1;
    if (strlen(dir) > 4000) return trn_errf(err, "--out %.60s...: path too long", dir);
    if (trn_mkdir_p(dir, err) != 0) return -1;
    /* No meta.json while the files it describes change: make waits for it. */
    if (unlink(join(a, sizeof a, dir, "meta.json")) != 0 && errno != ENOENT)
        return trn_errf(err, "cannot remove the old %s: %s", a, strerror(errno));
    cJSON *meta = cJSON_CreateObject();
    if (!meta || !cJSON_AddStringToObject(meta, "technique", v->technique) ||
        !cJSON_AddStringToObject(meta, "parent", "base") ||
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
    json = cJSON_Print(meta);
    cJSON_Delete(meta);
    if (!json || prn_appendf(&json, "\n") != 0) {
        free(json);
        return trn_errf(err, "out of memory");
    }
    if (trn_cfg_write(v->cfg, join(a, sizeof a, dir, temp[0]), err) != 0 ||
        trn_weights_save(v->net, join(a, sizeof a, dir, temp[1]), err) != 0 ||
        trn_write_file_atomic(join(a, sizeof a, dir, temp[2]), json, strlen(json), err) != 0)
        goto out;
    for (int i = 0; i < 3; i++)
        if (rename(join(a, sizeof a, dir, temp[i]), join(b, sizeof b, dir, final[i])) != 0) {
            trn_errf(err, "cannot rename %s to %s: %s", a, b, strerror(errno));
            goto out;
        }
    rc = trn_fsync_dir(dir, err);
out:
    if (rc != 0)
        for (int i = 0; i < 3; i++) unlink(join(a, sizeof a, dir, temp[i]));
    free(json);
    return rc;
}
