/*
 * tasks.c: several tasks on one input with shared trunks (rtl_model_run_tasks
 * of rtl.h; MCDNN section 4.1.3, "the router fans one trunk output to
 * dependent fragments").
 *
 * A head variant's layers 0..from_layer-1 are its parent's (prune retarget
 * copies them; catalog pack stores the head as a fragment that borrows them
 * from the parent's weights, catalog/README.md, Fragments; a specialised
 * fragment likewise from its cut). So a trunk computed by the parent, or by
 * any one head of the group, is the trunk of every head of the group: each
 * head then runs only its layers from_layer..end (rtl_model_run_range) on
 * that output.
 */
#include "internal.h"
#include "techniques.h"
#include "catalog.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int rtl_variant_head(const rtl_variant *v, char *parent_buf, size_t psize, int *from_layer, rtl_err *err)
{
    if (strcmp(rtl_variant_technique(v), TECHNIQUE_HEAD) != 0)
        return rtl_errf(err, "variant '%s' is not a head (technique %s)", rtl_variant_id(v),
                        rtl_variant_technique(v));
    const char *parent = rtl_variant_parent(v);
    cJSON *f = cJSON_Parse(rtl_variant_fields_json(v) ? rtl_variant_fields_json(v) : "{}");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(f, "head");
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(h, "from_layer");
    int ok = parent && cJSON_IsNumber(from) && from->valuedouble >= 1 && from->valuedouble < 1e6;
    if (ok) *from_layer = (int)from->valuedouble;
    cJSON_Delete(f);
    if (!ok)
        return rtl_errf(err, "variant '%s': a head needs a parent and technique_fields.head.from_layer "
                        "in the manifest", rtl_variant_id(v));
    if (strlen(parent) >= psize) return rtl_errf(err, "variant '%s': parent id too long", rtl_variant_id(v));
    memcpy(parent_buf, parent, strlen(parent) + 1);
    return 0;
}

/* The trunk a model shares with others and the first layer of its own: a
 * head's parent and from_layer, a fragment's (a specialised model stored
 * on its trunk: its cascade's first stage) trunk and cut; -1 for others. */
static int shares_trunk(const rtl_variant *v, char *parent, size_t psize, int *from)
{
    if (!v->trunk) return rtl_variant_head(v, parent, psize, from, NULL);
    if (strlen(v->trunk) >= psize) return -1;
    memcpy(parent, v->trunk, strlen(v->trunk) + 1);
    *from = v->cut;
    return 0;
}

struct member {
    int head;         /* 1: a head with a trunk */
    char parent[128];
    int from;         /* first head layer */
    int done;
    int member;       /* in the group being answered */
};

int rtl_model_run_tasks(rtl_model *const *models, size_t n, const float *x, size_t *trunk_runs, rtl_err *err)
{
    if (trunk_runs) *trunk_runs = 0;
    if (n == 0) return 0;
    struct member *mb = calloc(n, sizeof *mb);
    if (!mb) return rtl_errf(err, "out of memory");
    size_t in = rtl_model_input_size(models[0]);
    float *buf = NULL;
    size_t bufn = 0;
    int rc = -1;
    for (size_t i = 0; i < n; i++) {
        const rtl_variant *v = rtl_model_variant(models[i]);
        if (rtl_model_input_size(models[i]) != in) {
            rtl_errf(err, "variant '%s' takes %zu input floats, variant '%s' %zu: the tasks of one input "
                     "need models of one input size", rtl_variant_id(v), rtl_model_input_size(models[i]),
                     rtl_variant_id(rtl_model_variant(models[0])), in);
            goto out;
        }
        mb[i].head = shares_trunk(v, mb[i].parent, sizeof mb[i].parent, &mb[i].from) == 0 &&
                     mb[i].from < rtl_model_layers(models[i]) && rtl_model_cut_ok(models[i], mb[i].from);
    }
    for (size_t i = 0; i < n; i++) {
        if (mb[i].done || !mb[i].head) continue;
        /* The group of i: the heads with i's parent, whatever their first
         * layer, and the parent itself when it is asked and not yet
         * answered. The runner computes the trunk: the parent, else the
         * head that starts highest (its layers below are the parent's). */
        rtl_model *runner = models[i];
        int top = mb[i].from;
        size_t parent = n;
        for (size_t k = 0; k < n; k++) {
            if (mb[k].done || k == i) continue;
            if (!strcmp(rtl_variant_id(rtl_model_variant(models[k])), mb[i].parent)) {
                if (parent == n) parent = k;
            } else if (mb[k].head && !strcmp(mb[k].parent, mb[i].parent) && mb[k].from > top) {
                top = mb[k].from;
                runner = models[k];
            }
        }
        if (parent < n) runner = models[parent];
        /* Members: every head of the group whose cut the runner can feed;
         * the others run alone below. */
        for (size_t k = 0; k < n; k++) {
            mb[k].member = 0;
            if (mb[k].done || !mb[k].head || strcmp(mb[k].parent, mb[i].parent)) continue;
            int f = mb[k].from;
            if (f < rtl_model_layers(runner) && rtl_model_cut_ok(runner, f) &&
                rtl_model_cut_floats(runner, f) == rtl_model_cut_floats(models[k], f))
                mb[k].member = 1;
        }
        if (!mb[i].member) {
            /* the runner cannot feed i: i computes its own trunk */
            runner = models[i];
            parent = n;
            for (size_t k = 0; k < n; k++) {
                mb[k].member = !mb[k].done && mb[k].head && !strcmp(mb[k].parent, mb[i].parent) &&
                               mb[k].from <= mb[i].from && rtl_model_cut_ok(runner, mb[k].from) &&
                               rtl_model_cut_floats(runner, mb[k].from) == rtl_model_cut_floats(models[k], mb[k].from);
            }
        }
        /* The trunk once, from its lowest cut up: at each members' cut,
         * its output (copied: the runner goes on from it) feeds them. */
        const float *cur = x;
        size_t curn = in;
        int prev = 0;
        for (;;) {
            int f = -1;
            for (size_t k = 0; k < n; k++)
                if (mb[k].member && !mb[k].done && (f < 0 || mb[k].from < f)) f = mb[k].from;
            if (f < 0) break;
            const float *t;
            size_t tn;
            if (f > prev) {
                if (rtl_model_run_range(runner, prev, f - 1, cur, curn, &t, &tn, err) != 0) goto out;
                if (tn > bufn) {
                    float *g = realloc(buf, tn * sizeof *buf);
                    if (!g) {
                        rtl_errf(err, "out of memory");
                        goto out;
                    }
                    buf = g;
                    bufn = tn;
                }
                memcpy(buf, t, tn * sizeof *buf);
                cur = buf;
                curn = tn;
                prev = f;
            }
            for (size_t k = 0; k < n; k++) {
                if (!mb[k].member || mb[k].done || mb[k].from != f) continue;
                rtl_model *m = models[k];
                const float *o;
                size_t on;
                if (rtl_model_run_range(m, f, rtl_model_layers(m) - 1, cur, curn, &o, &on, err) != 0) goto out;
                mb[k].done = 1;
            }
        }
        if (trunk_runs) (*trunk_runs)++;
        if (parent < n && !mb[parent].done) {
            rtl_model *m = models[parent];
            const float *o;
            size_t on;
            if (rtl_model_run_range(m, prev, rtl_model_layers(m) - 1, cur, curn, &o, &on, err) != 0) goto out;
            mb[parent].done = 1;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (!mb[i].done && rtl_model_run(models[i], x, err) != 0) goto out;
    rc = 0;
out:
    free(mb);
    free(buf);
    return rc;
}

int rtl_variant_cascade(const rtl_variant *v, char *partner, size_t psize, int *other_class, rtl_err *err)
{
    if (strcmp(rtl_variant_technique(v), TECHNIQUE_SPECIALISED) != 0)
        return rtl_errf(err, "variant '%s' is not specialised (technique %s)", rtl_variant_id(v),
                        rtl_variant_technique(v));
    cJSON *f = cJSON_Parse(rtl_variant_fields_json(v) ? rtl_variant_fields_json(v) : "{}");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "cascade"), "partner");
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "context"), "other_class");
    int ok = cJSON_IsString(p) && cJSON_IsNumber(o) && o->valuedouble >= 0 && strlen(p->valuestring) < psize;
    if (ok) {
        memcpy(partner, p->valuestring, strlen(p->valuestring) + 1);
        *other_class = (int)o->valuedouble;
    }
    cJSON_Delete(f);
    if (!ok)
        return rtl_errf(err, "variant '%s': a specialised model needs technique_fields.cascade.partner and "
                        "context.other_class in the manifest", rtl_variant_id(v));
    return 0;
}

double rtl_variant_cascade_gate(const rtl_variant *v)
{
    if (strcmp(rtl_variant_technique(v), TECHNIQUE_SPECIALISED) != 0) return 0;
    cJSON *f = cJSON_Parse(rtl_variant_fields_json(v) ? rtl_variant_fields_json(v) : "{}");
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(f, "cascade"), "gate");
    double gate = cJSON_IsNumber(g) && g->valuedouble > 0 && g->valuedouble < 1 ? g->valuedouble : 0;
    cJSON_Delete(f);
    return gate;
}

int rtl_catalog_base(const rtl_catalog *cat, const char **id, uint64_t *version)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(cat->root, "base");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(b, "catalog");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(b, "version");
    if (!cJSON_IsString(c) || !cJSON_IsNumber(v)) return 0;
    *id = c->valuestring;
    *version = (uint64_t)v->valuedouble;
    return 1;
}
