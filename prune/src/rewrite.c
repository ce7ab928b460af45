/*
 * rewrite.c: MCDNN's static rewrites (section 4.1.1, rules 1-4) at the cfg
 * level, and the warm start of the rewritten network from the base.
 *
 * Spec grammar in prn.h. Selectors are resolved against the base, except
 * the '~' ones (conv~k, fc~k, local~k), which rank the layers of the
 * network as rewritten by the earlier ops of the same spec: MCDNN applies
 * its rewrites "to a small set of heuristically selected layers in
 * sequence", so after a stride x2 the most expensive layer may be another
 * one. A removal moves later layers, so the ops carry base indexes through
 * a map (base layer -> current layer).
 *
 * Base weights of a cfg with [local] layers (which the trainer cannot
 * build) are read through the proxy network: the Darknet file is copied
 * with each [local] layer's block (out_h*out_w*filters biases, then the
 * weights) replaced by zeros of the proxy convolution's size, and never
 * copied into the variant.
 */
#include "prn_impl.h"
#include "techniques.h"

#include <stdlib.h>
#include <string.h>

#define MAX_OPS 3

typedef enum op_kind { OP_STRIDE2, OP_HALF, OP_FCDIV, OP_LOCAL2CONV, OP_REMOVE, OP_KIND_COUNT } op_kind;

static const char *const op_names[] = {
    [OP_STRIDE2] = "stride2", [OP_HALF] = "half", [OP_FCDIV] = "fcdiv",
    [OP_LOCAL2CONV] = "local2conv", [OP_REMOVE] = "remove",
};
_Static_assert(sizeof op_names / sizeof *op_names == OP_KIND_COUNT, "an op has no name");

static const char *const op_help =
    "rewrites are stride2:SEL, half:SEL, fcdivF:SEL (F = 2, 4, 8, 16 or 32), local2conv:SEL and "
    "remove:SEL, at most 3 joined by '+', e.g. stride2:conv#1+half:conv#2+fcdiv4:fc#1";

typedef struct op {
    op_kind kind;
    int factor;     /* fcdiv */
    char text[96];  /* the op as written */
    const char *sel;
    int layer;      /* base layer */
} op;

/* Parses "name:SEL" into o. */
static int parse_op(const char *text, size_t len, op *o, trn_err *err)
{
    if (len >= sizeof o->text)
        return trn_errf(err, "'%.40s...' is too long for a rewrite; %s", text, op_help);
    memcpy(o->text, text, len);
    o->text[len] = 0;
    char *colon = strchr(o->text, ':');
    if (!colon) return trn_errf(err, "'%s' has no ':' before its layer selector; %s", o->text, op_help);
    *colon = 0;
    o->sel = colon + 1;
    const char *name = o->text;
    o->factor = 0;
    if (strncmp(name, "fcdiv", 5) == 0) {
        o->kind = OP_FCDIV;
        const char *f = name + 5;
        o->factor = !strcmp(f, "2") ? 2 : !strcmp(f, "4") ? 4 : !strcmp(f, "8") ? 8
                  : !strcmp(f, "16") ? 16 : !strcmp(f, "32") ? 32 : 0;
        if (!o->factor) {
            *colon = ':';
            return trn_errf(err, "'%s': the factor of fcdiv must be 2, 4, 8, 16 or 32", o->text);
        }
    } else {
        int k = 0;
        while (k < OP_KIND_COUNT && (k == OP_FCDIV || strcmp(name, op_names[k]) != 0)) k++;
        if (k == OP_KIND_COUNT) {
            trn_errf(err, "unknown rewrite '%s' in '%s:%s'; %s", name, name, colon + 1, op_help);
            *colon = ':';
            return -1;
        }
        o->kind = (op_kind)k;
    }
    *colon = ':';
    o->sel = colon + 1;
    return 0;
}

/* The integer value of key in section s (def when absent). */
static int get_int(const trn_cfg *cfg, int s, const char *key, int def)
{
    const char *v = trn_cfg_get(cfg, s, key);
    return v ? atoi(v) : def;
}

/* Turns section s of cfg ([local]) into a [convolutional] with the same
 * keys (Darknet's [local] keys all mean the same in [convolutional]). */
static int local_to_conv(trn_cfg *cfg, int s, trn_err *err)
{
    trn_cfg *keep = trn_cfg_new("local", err);
    if (!keep) return -1;
    int rc = -1;
    if (trn_cfg_insert_section(keep, 0, "local", err) < 0) goto out;
    for (int k = 0; k < trn_cfg_keys(cfg, s); k++)
        if (trn_cfg_set(keep, 0, trn_cfg_key(cfg, s, k), trn_cfg_value(cfg, s, k), err)) goto out;
    if (trn_cfg_remove_section(cfg, s, err) || trn_cfg_insert_section(cfg, s, "convolutional", err) < 0)
        goto out;
    for (int k = 0; k < trn_cfg_keys(keep, 0); k++)
        if (trn_cfg_set(cfg, s, trn_cfg_key(keep, 0, k), trn_cfg_value(keep, 0, k), err)) goto out;
    rc = 0;
out:
    trn_cfg_free(keep);
    return rc;
}

/* Applies one resolved op to cfg (layers renumbered through map). Adds a
 * description and a JSON record. */
static int apply_op(trn_cfg *cfg, const prn_plan *plan, op *o, int *map, char **desc, cJSON *ops,
                    trn_err *err)
{
    const prn_layer *l = prn_plan_layer(plan, o->layer);
    int cur = map[o->layer];
    if (cur < 0)
        return trn_errf(err, "'%s': layer L%d was removed by an earlier rewrite", o->text,
                        o->layer);
    int s = cur + 1;
    const char *cur_type = trn_cfg_section_type(cfg, s);
    prn_kind kind = prn_section_kind(cur_type);
    int want_spatial = o->kind == OP_STRIDE2 || o->kind == OP_HALF || o->kind == OP_REMOVE;
    if (want_spatial && kind != PRN_KIND_CONV && kind != PRN_KIND_LOCAL)
        return trn_errf(err, "'%s': L%d is a [%s] layer; %s applies to [convolutional] and "
                        "[local] layers", o->text, o->layer, cur_type, op_names[o->kind]);
    if (o->kind == OP_FCDIV && kind != PRN_KIND_CONNECTED)
        return trn_errf(err, "'%s': L%d is a [%s] layer; fcdiv applies to [connected] layers",
                        o->text, o->layer, cur_type);
    if (o->kind == OP_LOCAL2CONV && kind != PRN_KIND_LOCAL)
        return trn_errf(err, "'%s': L%d is a [%s] layer; local2conv applies to [local] layers",
                        o->text, o->layer, cur_type);
    cJSON *rec = cJSON_CreateObject();
    if (!rec || !cJSON_AddItemToArray(ops, rec)) {
        cJSON_Delete(rec);
        return trn_errf(err, "out of memory");
    }
    cJSON_AddStringToObject(rec, "op", o->kind == OP_FCDIV ? "fcdiv" : op_names[o->kind]);
    cJSON_AddStringToObject(rec, "selector", o->sel);
    cJSON_AddNumberToObject(rec, "layer", o->layer);
    cJSON_AddStringToObject(rec, "type", cur_type);
    int before, after;
    switch (o->kind) {
    case OP_STRIDE2:
        before = get_int(cfg, s, "stride", 1);
        after = before * 2;
        if (trn_cfg_setf(cfg, s, "stride", err, "%d", after)) return -1;
        cJSON_AddNumberToObject(rec, "stride_before", before);
        cJSON_AddNumberToObject(rec, "stride_after", after);
        return prn_appendf(desc, "%sstride x2 on L%d %s (%d -> %d)", *desc ? "; " : "", o->layer,
                           o->sel, before, after) ? trn_errf(err, "out of memory") : 0;
    case OP_HALF:
        before = get_int(cfg, s, "filters", 1);
        after = before / 2;
        if (after < 1)
            return trn_errf(err, "'%s': L%d has %d filter(s); halving leaves none", o->text,
                            o->layer, before);
        if (trn_cfg_setf(cfg, s, "filters", err, "%d", after)) return -1;
        cJSON_AddNumberToObject(rec, "filters_before", before);
        cJSON_AddNumberToObject(rec, "filters_after", after);
        return prn_appendf(desc, "%sfilters /2 on L%d %s (%d -> %d)", *desc ? "; " : "",
                           o->layer, o->sel, before, after) ? trn_errf(err, "out of memory") : 0;
    case OP_FCDIV:
        if (l->classifier)
            return trn_errf(err, "'%s': L%d is the final classifier (its output is the class "
                            "count); choose another connected layer (fc#k excludes it)", o->text,
                            o->layer);
        before = get_int(cfg, s, "output", 1);
        after = before / o->factor;
        if (after < 1)
            return trn_errf(err, "'%s': L%d has %d outputs; /%d leaves none", o->text, o->layer,
                            before, o->factor);
        if (trn_cfg_setf(cfg, s, "output", err, "%d", after)) return -1;
        cJSON_AddNumberToObject(rec, "factor", o->factor);
        cJSON_AddNumberToObject(rec, "output_before", before);
        cJSON_AddNumberToObject(rec, "output_after", after);
        return prn_appendf(desc, "%soutput /%d on L%d %s (%d -> %d)", *desc ? "; " : "",
                           o->factor, o->layer, o->sel, before, after) ? trn_errf(err, "out of memory") : 0;
    case OP_LOCAL2CONV:
        if (local_to_conv(cfg, s, err)) return -1;
        return prn_appendf(desc, "%slocal -> convolutional on L%d %s", *desc ? "; " : "",
                           o->layer, o->sel) ? trn_errf(err, "out of memory") : 0;
    case OP_REMOVE: {
        int n = trn_cfg_sections(cfg) - 1;
        int *m2 = malloc((size_t)n * sizeof *m2);
        if (!m2) return trn_errf(err, "out of memory");
        if (prn_cfg_splice(cfg, cur, cur, NULL, 0, 0, 0, m2, err) != 0) {
            free(m2);
            return trn_err_prefix(err, "'%s': cannot remove L%d", o->text, o->layer);
        }
        for (int j = 0; j < prn_plan_layers(plan); j++)
            if (map[j] >= 0) map[j] = m2[map[j]];
        free(m2);
        return prn_appendf(desc, "%sremoved L%d %s", *desc ? "; " : "", o->layer, o->sel) ? trn_errf(err, "out of memory") : 0;
    }
    case OP_KIND_COUNT:
        break;
    }
    return trn_errf(err, "internal: unknown rewrite");
}

/* Resolves a '~' selector against cur, the cfg as rewritten so far, and
 * returns the base layer it stands for (map: base layer -> current layer).
 * -1 with an error when the selector does not resolve. */
static int select_current(const trn_cfg *cur, const prn_plan *base, const int *map,
                          const char *sel, trn_err *err)
{
    prn_plan *p = prn_plan_create(cur, err);
    if (!p) return -1;
    int layer = prn_select(p, sel, err);
    prn_plan_free(p);
    if (layer < 0) return -1;
    for (int j = 0; j < prn_plan_layers(base); j++)
        if (map[j] == layer) return j;
    return trn_errf(err, "%s: L%d of the rewritten network is not a layer of the base", sel,
                    layer);
}

int prn_rewrite_cfg(const trn_cfg *cfg, const prn_plan *plan, const char *spec, trn_cfg **out,
                    int *map, char **desc, cJSON **ops_out, trn_err *err)
{
    op ops[MAX_OPS];
    int nops = 0;
    *out = NULL;
    if (!spec || !*spec) return trn_errf(err, "empty rewrite spec; %s", op_help);
    for (const char *p = spec;;) {
        const char *plus = strchr(p, '+');
        size_t len = plus ? (size_t)(plus - p) : strlen(p);
        if (nops == MAX_OPS)
            return trn_errf(err, "spec '%.200s' has more than %d rewrites", spec, MAX_OPS);
        if (len == 0) return trn_errf(err, "spec '%.200s' has an empty rewrite; %s", spec, op_help);
        if (parse_op(p, len, &ops[nops], err) != 0) return trn_err_prefix(err, "spec '%.200s'", spec);
        nops++;
        if (!plus) break;
        p = plus + 1;
    }
    for (int k = 0; k < nops; k++)
        if (!strchr(ops[k].sel, '~') && (ops[k].layer = prn_select(plan, ops[k].sel, err)) < 0)
            return trn_err_prefix(err, "spec '%.200s', rewrite '%s'", spec, ops[k].text);
    trn_cfg *c = trn_cfg_clone(cfg, err);
    cJSON *jops = cJSON_CreateArray();
    char *d = NULL;
    if (!c || !jops) {
        trn_cfg_free(c);
        cJSON_Delete(jops);
        return trn_errf(err, "out of memory");
    }
    for (int j = 0; j < prn_plan_layers(plan); j++) map[j] = j;
    for (int k = 0; k < nops; k++) {
        if (strchr(ops[k].sel, '~') && (ops[k].layer = select_current(c, plan, map,
                                                                        ops[k].sel, err)) < 0) {
            trn_err_prefix(err, "spec '%.200s', rewrite '%s'", spec, ops[k].text);
            goto fail;
        }
        if (apply_op(c, plan, &ops[k], map, &d, jops, err) != 0) {
            trn_err_prefix(err, "spec '%.200s'", spec);
            goto fail;
        }
    }
    if (!d) {
        trn_errf(err, "out of memory");
        goto fail;
    }
    if (prn_check_cfg(c, err) != 0) {
        trn_err_prefix(err, "spec '%.200s'", spec);
        goto fail;
    }
    *out = c;
    if (desc)
        *desc = d;
    else
        free(d);
    if (ops_out)
        *ops_out = jops;
    else
        cJSON_Delete(jops);
    return 0;
fail:
    trn_cfg_free(c);
    cJSON_Delete(jops);
    free(d);
    return -1;
}

/* The proxy network of a [local] cfg with the base weights file loaded
 * (local blocks zeroed, see the top of the file). NULL on error. */
static trn_net *load_local_base(const trn_cfg *cfg, const prn_plan *plan, const char *path,
                                trn_err *err)
{
    trn_cfg *proxy = prn_cfg_proxy(cfg, err);
    if (!proxy) return NULL;
    trn_net_opts o;
    prn_net_opts(&o, 0);
    trn_net *net = trn_net_create(proxy, &o, err);
    trn_cfg_free(proxy);
    char *file = NULL, *buf = NULL;
    size_t len;
    if (!net || trn_read_file(path, 0, &file, &len, err) != 0) goto fail;
    if (len < 16) {
        trn_errf(err, "%s: %zu bytes is too short for a Darknet weights header", path, len);
        goto fail;
    }
    int32_t ver[2];
    memcpy(ver, file, sizeof ver);
    size_t header = trn_weights_header_bytes(ver[0], ver[1]);
    size_t need = header, proxy_bytes = header;
    for (int i = 0; i < prn_plan_layers(plan); i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        need += prn_plan_layer(plan, i)->params * 4;
        proxy_bytes += info.params * 4;
    }
    if (len != need) {
        trn_errf(err, "%s: %zu bytes, but %s needs %zu (a %zu-byte header and the parameters "
                 "of every layer, [local] layers included)", path, len, trn_cfg_name(cfg), need,
                 header);
        goto fail;
    }
    if (!(buf = calloc(proxy_bytes, 1))) {
        trn_errf(err, "out of memory");
        goto fail;
    }
    memcpy(buf, file, header);
    size_t in = header, outp = header;
    for (int i = 0; i < prn_plan_layers(plan); i++) {
        const prn_layer *l = prn_plan_layer(plan, i);
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        if (l->kind != PRN_KIND_LOCAL) memcpy(buf + outp, file + in, l->params * 4);
        in += l->params * 4;
        outp += info.params * 4;
    }
    if (trn_weights_load_mem(net, buf, proxy_bytes, 0, path, err) != 0) goto fail;
    free(file);
    free(buf);
    return net;
fail:
    free(file);
    free(buf);
    trn_net_free(net);
    return NULL;
}

int prn_rewrite(const trn_cfg *cfg, const trn_net *base, const char *base_weights,
                const char *spec, uint64_t seed, prn_variant *out, trn_err *err)
{
    memset(out, 0, sizeof *out);
    prn_plan *plan = prn_plan_create(cfg, err);
    if (!plan) return -1;
    int n = prn_plan_layers(plan);
    int *map = malloc((size_t)n * sizeof *map), *copy_map = malloc((size_t)n * sizeof *map);
    cJSON *ops = NULL, *copies = NULL;
    trn_net *local_base = NULL;
    int rc = -1;
    if (!map || !copy_map) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (prn_rewrite_cfg(cfg, plan, spec, &out->cfg, map, &out->description, &ops, err) != 0)
        goto out;
    for (int s = 1; s < trn_cfg_sections(out->cfg); s++)
        if (prn_section_kind(trn_cfg_section_type(out->cfg, s)) == PRN_KIND_LOCAL) {
            char where[600];
            trn_errf(err, "spec '%.200s': the variant keeps the [local] layer of %s, which the "
                     "trainer cannot build or train; add local2conv for it", spec,
                     trn_cfg_where(out->cfg, s, NULL, where, sizeof where));
            goto out;
        }
    if (!base) {
        if (!base_weights) {
            trn_errf(err, "internal: no base network and no weights file");
            goto out;
        }
        if (!(base = local_base = load_local_base(cfg, plan, base_weights, err))) goto out;
    }
    if (trn_net_layers(base) != n) {
        trn_errf(err, "the base network has %d layers but %s has %d", trn_net_layers(base),
                 trn_cfg_name(cfg), n);
        goto out;
    }
    trn_net_opts o;
    prn_net_opts(&o, seed);
    if (!(out->net = trn_net_create(out->cfg, &o, err))) goto out;
    for (int i = 0; i < n; i++)
        copy_map[i] = prn_plan_layer(plan, i)->kind == PRN_KIND_LOCAL ? -1 : map[i];
    if (!(copies = prn_copy_layers(base, out->net, copy_map, err))) goto out;
    out->technique = TECHNIQUE_REWRITE;
    out->fields = copies;
    copies = NULL;
    cJSON_AddStringToObject(out->fields, "spec", spec);
    cJSON_AddItemToObject(out->fields, "rewrites", ops);
    ops = NULL;
    cJSON_AddNumberToObject(out->fields, "seed", (double)seed);
    cJSON_AddItemToObject(out->fields, "layer_map", prn_json_ints(map, n));
    char *d = prn_strdupf("rewrite %s: %s", spec, out->description);
    if (!d) {
        trn_errf(err, "out of memory");
        goto out;
    }
    free(out->description);
    out->description = d;
    rc = 0;
out:
    if (rc != 0) prn_variant_free(out);
    cJSON_Delete(ops);
    cJSON_Delete(copies);
    trn_net_free(local_base);
    prn_plan_free(plan);
    free(map);
    free(copy_map);
    return rc;
}
