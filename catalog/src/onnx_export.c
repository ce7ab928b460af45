/*
 * onnx_export.c: `catalog export --onnx`: variant folders (catalog/README.md,
 * "Input: the variant folders") as ONNX models (opset 13, float32, NCHW,
 * batch 1, input "input"), written with protobuf-c against ONNX's own
 * onnx.proto (onnx_graph.c), layer by layer as the engine computes them
 * (onnx_net.c):
 *
 *   any whole network   <id>.onnx, output "probs" (the last layer, flattened)
 *   nested              <id>.cap<K>.onnx per capacity K of
 *                       technique_fields.capacities (1 = the smallest, as
 *                       `rtl run --capacity K`): the network of that
 *                       capacity's channel prefixes with their weights
 *   early-exit          <id>.onnx: the trunk ("probs") and per exit J
 *                       "exit<J>_probs" and "exit<J>_conf", the confidence
 *                       the thresholds compare, Conf(y) = 1 + (1 / log C)
 *                       sum_c y_c log y_c clamped to [0, 1] (trn_confidence)
 *   heads on a trunk    besides each head's own <id>.onnx, <parent>.tasks.onnx:
 *                       the parent once and each head's layers from its
 *                       from_layer on the parent's outputs, one output per
 *                       task (named by the task; by the variant id where a
 *                       task repeats)
 *
 * Without an output folder the files go into each variant's folder and its
 * variant.json lists them (role "onnx"), so `catalog pack` packs them and
 * the manifest carries their sizes and hashes (`make catalog ONNX=1`).
 */
#include "cat.h"
#include "techniques.h"
#include "onnx_export.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One variant folder being exported. */
struct ovar {
    char dir[4096];
    cJSON *json;
    const char *id, *technique, *task;
};

static const char *role_file(const struct ovar *v, const char *role, char *buf, size_t size)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(v->json, "files")) {
        if (strcmp(cat_json_str(f, "role", ""), role) == 0) {
            snprintf(buf, size, "%s/%s", v->dir, cat_json_str(f, "path", ""));
            return buf;
        }
    }
    return NULL;
}

static trn_net_opts infer_opts(void)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    return o;
}

/* The variant's network (files cfg and weights) and its cfg. */
static trn_net *load_net(const struct ovar *v, trn_cfg **cfg, trn_err *err)
{
    char cp[4200], wp[4200];
    if (!role_file(v, "cfg", cp, sizeof cp) || !role_file(v, "weights", wp, sizeof wp)) {
        trn_errf(err, "%s/variant.json lists no cfg or no weights file", v->dir);
        return NULL;
    }
    trn_net_opts o = infer_opts();
    if (!(*cfg = trn_cfg_read(cp, err))) return NULL;
    trn_net *net = trn_net_create(*cfg, &o, err);
    if (net && trn_weights_load(net, wp, err) != 0) {
        trn_net_free(net);
        net = NULL;
    }
    if (!net) {
        trn_cfg_free(*cfg);
        *cfg = NULL;
    }
    return net;
}

/* ---- writing ------------------------------------------------------------ */

struct outbox {
    const cat_onnx_options *o;
    cJSON *written; /* {variant id: [file names]} */
};

static int out_path(const struct outbox *ob, const struct ovar *v, const char *name, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s/%s", ob->o->out ? ob->o->out : v->dir, name);
    return n > 0 && (size_t)n < size ? 0 : -1;
}

static int finish(struct outbox *ob, const struct ovar *v, ox_graph *g, const char *name, const char *what,
                  trn_err *err)
{
    char path[4400];
    if (out_path(ob, v, name, path, sizeof path) != 0) return trn_errf(err, "path too long for %s", name);
    if (ox_write(g, path, err) != 0) return -1;
    cJSON *list = cJSON_GetObjectItemCaseSensitive(ob->written, v->id);
    if (!list && (list = cJSON_CreateArray()) && !cJSON_AddItemToObject(ob->written, v->id, list)) {
        cJSON_Delete(list);
        list = NULL;
    }
    cJSON *item = list ? cJSON_CreateString(name) : NULL;
    if (!item || !cJSON_AddItemToArray(list, item)) {
        cJSON_Delete(item);
        return trn_errf(err, "%s: out of memory while listing it in %s's variant.json", path, v->id);
    }
    if (ob->o->wrote) ob->o->wrote(ob->o->user, path, what);
    return 0;
}

/* net as a graph of its own: input "input", output "probs" (plus what
 * `more` adds), written as `name`. */
typedef int (*more_fn)(ox_emit *e, void *arg, trn_err *err);

static int write_net(struct outbox *ob, const struct ovar *v, const trn_cfg *cfg, const trn_net *net,
                     const char *name, const char *what, const char *output, more_fn more, void *arg, trn_err *err)
{
    int L = trn_net_layers(net), rc = -1;
    ox_graph *g = ox_new(v->id);
    ox_t *t = calloc((size_t)L, sizeof *t), in;
    if (!g || !t) {
        trn_errf(err, "out of memory exporting %s", v->id);
        goto out;
    }
    ox_emit e = {g, net, cfg, "", ob->o->bn_explicit, t};
    ox_emit_input(&e, &in, "input");
    if (ox_emit_layers(&e, 0, &in, err) != 0) goto out;
    ox_emit_output(&e, &t[L - 1], output ? output : "probs");
    if (more && more(&e, arg, err) != 0) goto out;
    rc = finish(ob, v, g, name, what, err);
out:
    if (rc) trn_err_prefix(err, "variant %s", v->id);
    free(t);
    ox_free(g);
    return rc;
}

/* ---- early exits ------------------------------------------------------------ */

/* Conf(p) of the (1, C) probabilities p as output `name`, (1, 1). */
static void emit_confidence(ox_emit *e, const char *p, int classes, const char *name)
{
    ox_graph *g = e->g;
    const char *m = ox_fmt(g, "%s_max", name), *l = ox_fmt(g, "%s_log", name), *pl = ox_fmt(g, "%s_plogp", name);
    const char *s = ox_fmt(g, "%s_sum", name), *k = ox_fmt(g, "%s_scaled", name), *a = ox_fmt(g, "%s_plus1", name);
    int64_t axes[1] = {1}, d[2] = {1, 1};
    ox_node(g, "Max", m, 2, p, ox_scalar(g, 1e-30f)); /* y log y -> 0 at y = 0, as the engine skips it */
    ox_node(g, "Log", l, 1, m);
    ox_node(g, "Mul", pl, 2, p, l);
    ox_attr_int(g, ox_node(g, "ReduceSum", s, 2, pl, ox_int64s(g, ox_fmt(g, "%s_axes", name), axes, 1)), "keepdims", 1);
    ox_node(g, "Mul", k, 2, s, ox_scalar(g, (float)(1.0 / log((double)classes))));
    ox_node(g, "Add", a, 2, k, ox_scalar(g, 1));
    ox_node(g, "Clip", name, 3, a, ox_scalar(g, 0), ox_scalar(g, 1));
    ox_output(g, name, d, 2);
}

struct exits_arg {
    trn_exits *x;
    const trn_cfg *cfg;
};

static int emit_exits(ox_emit *trunk, void *arg, trn_err *err)
{
    struct exits_arg *a = arg;
    for (int j = 0; j < trn_exits_count(a->x); j++) {
        const trn_net *bn = trn_exit_net(a->x, j);
        int L = trn_net_layers(bn), rc = -1;
        size_t classes = trn_net_outputs(bn);
        ox_t *t = calloc((size_t)L, sizeof *t);
        if (!t) return trn_errf(err, "out of memory");
        ox_emit e = {trunk->g, bn, a->cfg, ox_fmt(trunk->g, "exit%d_", j), trunk->bn_explicit, t};
        if (classes < 2) trn_errf(err, "exit %d has %zu outputs: a confidence needs 2 classes or more", j, classes);
        else if (trn_exit_measure(a->x, j) != TRN_CONF_ENTROPY)
            trn_errf(err, "confidence=%s: the ONNX export writes the entropy confidence only (exit%d_conf); "
                     "derive the exits with confidence=entropy to export them", trn_conf_measure_name(trn_exit_measure(a->x, j)), j);
        else if (ox_emit_layers(&e, 0, &trunk->t[trn_exit_at(a->x, j)], err) == 0) {
            const char *p = ox_emit_output(&e, &t[L - 1], ox_fmt(trunk->g, "exit%d_probs", j));
            emit_confidence(&e, p, (int)classes, ox_fmt(trunk->g, "exit%d_conf", j));
            rc = 0;
        }
        free(t);
        if (rc) return trn_err_prefix(err, "exit %d", j);
    }
    return 0;
}

static int export_exits(struct outbox *ob, const struct ovar *v, const trn_cfg *cfg, const trn_net *net,
                        trn_err *err)
{
    char cp[4200], wp[4200];
    if (!role_file(v, "exits_cfg", cp, sizeof cp) || !role_file(v, "exits_weights", wp, sizeof wp))
        return trn_errf(err, "variant %s (early-exit) lists no exits_cfg or exits_weights file", v->id);
    trn_net_opts o = infer_opts();
    trn_cfg *xc = trn_cfg_read(cp, err);
    trn_exits *x = xc ? trn_exits_load(net, cp, wp, &o, err) : NULL;
    struct exits_arg a = {x, xc};
    char name[300];
    snprintf(name, sizeof name, "%s.onnx", v->id);
    int rc = x ? write_net(ob, v, cfg, net, name, "trunk and exits", NULL, emit_exits, &a, err) : -1;
    trn_exits_free(x);
    trn_cfg_free(xc);
    return rc;
}

/* ---- nested capacities --------------------------------------------------- */

/* The network of capacity `cap` (a technique_fields.capacities entry) of
 * full, built from cfg with the active filter counts, with its weights. */
static trn_net *capacity_net(const trn_cfg *cfg, trn_net *full, const cJSON *cap, trn_cfg **sub_cfg, trn_err *err)
{
    int L = trn_net_layers(full);
    int *f = calloc((size_t)L, sizeof *f);
    trn_net *sub = NULL;
    *sub_cfg = NULL;
    if (!f) return trn_errf(err, "out of memory"), NULL;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cap, "channel_index")) {
        int l = (int)cat_json_num(c, "layer", -1), ch = (int)cat_json_num(c, "channels", -1);
        if (l < 0 || l >= L || ch < 0) {
            trn_errf(err, "a channel_index entry is not {layer 0..%d, channels}", L - 1);
            goto out;
        }
        f[l] = ch;
    }
    trn_net_opts o = infer_opts();
    if (trn_net_set_capacity(full, f, err) != 0 || !(*sub_cfg = trn_cfg_clone(cfg, err))) goto out;
    for (int i = 0; i < L; i++) {
        trn_layer_info in;
        trn_net_layer_info(full, i, &in);
        const char *key = in.kind == TRN_LAYER_CONVOLUTIONAL ? "filters" : in.kind == TRN_LAYER_CONNECTED ? "output" : NULL;
        if (key && trn_cfg_setf(*sub_cfg, i + 1, key, err, "%d", in.out.c) != 0) goto out;
    }
    if ((sub = trn_net_create(*sub_cfg, &o, err)) && trn_net_copy_capacity(sub, full, err) != 0) {
        trn_net_free(sub);
        sub = NULL;
    }
out:
    free(f);
    if (trn_net_set_capacity(full, NULL, NULL) != 0) { /* the full network again */ }
    return sub;
}

/* v's batch-norm vectors per capacity (technique_fields.bn_per_capacity:
 * the capacity_bn file, prune/README.md "Freeze-&-grow"), read whole and
 * its header checked; *buf NULL when v has none (the earlier format). */
static int read_capacity_bn(const struct ovar *v, int ncap, char **buf, size_t *len, unsigned *roles, trn_err *err)
{
    char path[4200];
    *buf = NULL;
    if (!cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v->json, "technique_fields"),
                                          "bn_per_capacity"))
        return 0;
    if (!role_file(v, "capacity_bn", path, sizeof path))
        return trn_errf(err, "variant %s (nested): technique_fields.bn_per_capacity but no capacity_bn file in "
                        "variant.json", v->id);
    if (trn_read_file(path, 64u << 20, buf, len, err) != 0) return -1;
    int32_t h[3];
    if (*len >= 16) memcpy(h, *buf + 4, 12);
    if (*len < 16 || memcmp(*buf, "CPBN", 4) != 0 || h[0] != 1 || h[1] != ncap - 1) {
        free(*buf);
        *buf = NULL;
        return trn_errf(err, "%s: not a capacity_bn file of version 1 for %d capacities", path, ncap);
    }
    *roles = (unsigned)h[2];
    return 0;
}

static int export_nested(struct outbox *ob, const struct ovar *v, const trn_cfg *cfg, trn_net *net, trn_err *err)
{
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v->json, "technique_fields"),
                                                         "capacities");
    if (!cJSON_IsArray(caps) || cJSON_GetArraySize(caps) < 1)
        return trn_errf(err, "variant %s (nested): technique_fields.capacities is missing or empty", v->id);
    int ncap = cJSON_GetArraySize(caps), rc = 0;
    char *bn;
    size_t bn_len, off = 16;
    unsigned roles = 0;
    if (read_capacity_bn(v, ncap, &bn, &bn_len, &roles, err) != 0) return -1;
    for (int k = 0; k < ncap && rc == 0; k++) {
        trn_cfg *sc;
        trn_net *sub = capacity_net(cfg, net, cJSON_GetArrayItem(caps, k), &sc, err);
        char name[300], what[64];
        snprintf(name, sizeof name, "%s.cap%d.onnx", v->id, k + 1);
        snprintf(what, sizeof what, "capacity %d", k + 1);
        size_t n = sub && bn && k < ncap - 1 ? trn_net_vectors_count(sub, roles) * sizeof(float) : 0;
        if (n && off + n > bn_len)
            rc = trn_errf(err, "the capacity_bn file ends inside capacity %d's vectors", k + 1);
        else if (n && trn_net_vectors_put(sub, roles, (const float *)(const void *)(bn + off), err) != 0)
            rc = -1;
        off += n;
        if (rc == 0) rc = sub ? write_net(ob, v, sc, sub, name, what, NULL, NULL, NULL, err) : -1;
        trn_net_free(sub);
        trn_cfg_free(sc);
        if (rc) rc = trn_err_prefix(err, "variant %s, capacity %d", v->id, k + 1);
    }
    if (rc == 0 && bn && off != bn_len)
        rc = trn_errf(err, "variant %s: the capacity_bn file holds %zu bytes, its capacities' vectors %zu", v->id,
                      bn_len, off);
    free(bn);
    return rc;
}

static int export_variant(struct outbox *ob, const struct ovar *v, trn_err *err)
{
    trn_cfg *cfg = NULL;
    trn_net *net = load_net(v, &cfg, err);
    if (!net) return trn_err_prefix(err, "variant %s", v->id);
    char name[300];
    snprintf(name, sizeof name, "%s.onnx", v->id);
    int rc;
    if (strcmp(v->technique, TECHNIQUE_NESTED) == 0) rc = export_nested(ob, v, cfg, net, err);
    else if (strcmp(v->technique, TECHNIQUE_EARLY_EXIT) == 0) rc = export_exits(ob, v, cfg, net, err);
    else rc = write_net(ob, v, cfg, net, name, "network", NULL, NULL, NULL, err);
    trn_net_free(net);
    trn_cfg_free(cfg);
    return rc;
}

/* ---- heads on a shared trunk ---------------------------------------------- */

struct head {
    const struct ovar *v;
    trn_cfg *cfg;
    trn_net *net;
    int from;
};

/* The output name of task `task` of variant `id`: the task, unless another
 * member of the group has it. */
static const char *task_output(ox_graph *g, const struct ovar *const *members, int n, const struct ovar *v)
{
    for (int k = 0; k < n; k++)
        if (members[k] != v && strcmp(members[k]->task, v->task) == 0) return ox_fmt(g, "%s", v->id);
    return ox_fmt(g, "%s", v->task);
}

static int emit_head(ox_emit *pe, struct head *h, const struct ovar *const *members, int n, trn_err *err)
{
    int L = trn_net_layers(h->net), rc = -1;
    ox_t *t = calloc((size_t)L, sizeof *t);
    if (!t) return trn_errf(err, "out of memory");
    ox_emit e = {pe->g, h->net, h->cfg, ox_fmt(pe->g, "%s_", h->v->id), pe->bn_explicit, t};
    if (h->from < 1 || h->from >= L || h->from > trn_net_layers(pe->net)) {
        trn_errf(err, "technique_fields.head.from_layer %d is not a layer of both the head and its trunk", h->from);
        goto out;
    }
    for (int i = 0; i < h->from; i++) {
        trn_layer_info in;
        trn_net_layer_info(h->net, i, &in);
        t[i] = pe->t[i];
        if (in.out.c != t[i].shape.c || in.out.h != t[i].shape.h || in.out.w != t[i].shape.w) {
            trn_errf(err, "its layer %d differs in shape from its trunk's: not a head of that trunk", i);
            goto out;
        }
    }
    if (ox_emit_layers(&e, h->from, NULL, err) == 0) {
        ox_emit_output(&e, &t[L - 1], task_output(pe->g, members, n, h->v));
        rc = 0;
    }
out:
    free(t);
    return rc ? trn_err_prefix(err, "head %s", h->v->id) : 0;
}

struct group {
    struct head *heads;
    int n;
    const struct ovar *const *members; /* the parent first, then the heads */
};

static int emit_group(ox_emit *pe, void *arg, trn_err *err)
{
    struct group *gr = arg;
    for (int k = 0; k < gr->n; k++)
        if (emit_head(pe, &gr->heads[k], gr->members, gr->n + 1, err) != 0) return -1;
    return 0;
}

/* <parent>.tasks.onnx: the parent and every head of vs[] whose parent it is. */
static int export_group(struct outbox *ob, const struct ovar *parent, const struct ovar *vs, size_t nv, trn_err *err)
{
    struct head *hs = calloc(nv, sizeof *hs);
    const struct ovar **members = calloc(nv + 1, sizeof *members);
    struct group gr = {hs, 0, members};
    trn_cfg *pcfg = NULL;
    trn_net *pnet = NULL;
    int rc = -1;
    if (!hs || !members) {
        trn_errf(err, "out of memory");
        goto out;
    }
    members[0] = parent;
    for (size_t i = 0; i < nv; i++) {
        const char *p = cat_json_str(vs[i].json, "parent", "");
        if (strcmp(vs[i].technique, TECHNIQUE_HEAD) != 0 || strcmp(p, parent->id) != 0) continue;
        struct head *h = &hs[gr.n];
        h->v = &vs[i];
        h->from = (int)cat_json_num(cJSON_GetObjectItemCaseSensitive(
                                        cJSON_GetObjectItemCaseSensitive(vs[i].json, "technique_fields"), "head"),
                                    "from_layer", -1);
        members[++gr.n] = &vs[i];
        if (!(h->net = load_net(&vs[i], &h->cfg, err))) goto out;
    }
    if (!(pnet = load_net(parent, &pcfg, err))) goto out;
    char name[300];
    snprintf(name, sizeof name, "%s.tasks.onnx", parent->id);
    /* the parent's own output is named by its task, like the heads' */
    ox_graph *ng = ox_new("names");
    const char *pout = ng ? task_output(ng, members, gr.n + 1, parent) : NULL;
    rc = pout ? write_net(ob, parent, pcfg, pnet, name, "shared trunk and heads", pout, emit_group, &gr, err)
              : trn_errf(err, "out of memory");
    ox_free(ng);
out:
    for (int k = 0; k < gr.n; k++) {
        trn_net_free(hs[k].net);
        trn_cfg_free(hs[k].cfg);
    }
    trn_net_free(pnet);
    trn_cfg_free(pcfg);
    free(hs);
    free(members);
    return rc;
}

/* ---- the variant folders ---------------------------------------------------- */

static int selected(const cat_onnx_options *o, const char *id)
{
    if (!o->nids) return 1;
    for (size_t i = 0; i < o->nids; i++)
        if (strcmp(o->ids[i], id) == 0) return 1;
    return 0;
}

static int load_variants(const char *dir, struct ovar **out, size_t *n, trn_err *err)
{
    struct dirent **ents;
    int ne = scandir(dir, &ents, NULL, alphasort);
    if (ne < 0) return trn_errf(err, "cannot list %s: not a folder of variant folders", dir);
    struct ovar *vs = calloc((size_t)ne + 1, sizeof *vs);
    size_t k = 0;
    int rc = vs ? 0 : trn_errf(err, "out of memory");
    for (int i = 0; i < ne; i++) {
        char p[4200];
        if (rc == 0 && ents[i]->d_name[0] != '.') {
            snprintf(vs[k].dir, sizeof vs[k].dir, "%s/%s", dir, ents[i]->d_name);
            snprintf(p, sizeof p, "%s/variant.json", vs[k].dir);
            FILE *f = fopen(p, "r");
            if (f) {
                fclose(f);
                if (!(vs[k].json = cat_json_load(p, 64 << 20, err))) rc = -1;
                else {
                    vs[k].id = cat_json_str(vs[k].json, "id", ents[i]->d_name);
                    vs[k].technique = cat_json_str(vs[k].json, "technique", "");
                    vs[k].task = cat_json_str(vs[k].json, "task", "");
                    k++;
                }
            }
        }
        free(ents[i]);
    }
    free(ents);
    *out = vs;
    *n = k;
    if (rc == 0 && k == 0) rc = trn_errf(err, "%s holds no variant folder (a folder with variant.json)", dir);
    return rc;
}

/* variant.json of v lists exactly the files written for it (role onnx). */
static int list_files(const struct ovar *v, const cJSON *names, trn_err *err)
{
    cJSON *files = cJSON_GetObjectItemCaseSensitive(v->json, "files"), *f, *next;
    for (f = files ? files->child : NULL; f; f = next) {
        next = f->next;
        if (strcmp(cat_json_str(f, "role", ""), "onnx") == 0) cJSON_Delete(cJSON_DetachItemViaPointer(files, f));
    }
    const cJSON *nm;
    cJSON_ArrayForEach(nm, names) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "role", "onnx");
        cJSON_AddStringToObject(e, "path", nm->valuestring);
        cJSON_AddItemToArray(files, e);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/variant.json", v->dir);
    cat_json_sort(v->json);
    char *text = cat_json_print(v->json);
    if (!text) return trn_errf(err, "out of memory writing %s", path);
    int rc = trn_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

int cat_onnx_export(const cat_onnx_options *o, trn_err *err)
{
    struct ovar *vs = NULL;
    size_t nv = 0;
    struct outbox ob = {o, cJSON_CreateObject()};
    int rc = ob.written ? load_variants(o->variants, &vs, &nv, err) : trn_errf(err, "out of memory");
    if (rc == 0 && o->out) rc = trn_mkdir_p(o->out, err);
    for (size_t i = 0; i < o->nids && rc == 0; i++) {
        size_t k = 0;
        while (k < nv && strcmp(vs[k].id, o->ids[i]) != 0) k++;
        if (k == nv) rc = trn_errf(err, "no variant '%s' in %s", o->ids[i], o->variants);
    }
    for (size_t i = 0; i < nv && rc == 0; i++)
        if (selected(o, vs[i].id)) rc = export_variant(&ob, &vs[i], err);
    /* the shared trunks: every selected variant that some head names as parent */
    for (size_t i = 0; i < nv && rc == 0; i++) {
        int heads = 0;
        for (size_t k = 0; k < nv; k++)
            heads += strcmp(vs[k].technique, TECHNIQUE_HEAD) == 0 && selected(o, vs[k].id) &&
                     strcmp(cat_json_str(vs[k].json, "parent", ""), vs[i].id) == 0;
        if (heads && selected(o, vs[i].id)) rc = export_group(&ob, &vs[i], vs, nv, err);
    }
    for (size_t i = 0; i < nv && rc == 0 && !o->out; i++)
        if (selected(o, vs[i].id))
            rc = list_files(&vs[i], cJSON_GetObjectItemCaseSensitive(ob.written, vs[i].id), err);
    for (size_t i = 0; i < nv; i++) cJSON_Delete(vs[i].json);
    free(vs);
    cJSON_Delete(ob.written);
    return rc;
}
