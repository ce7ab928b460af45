/*
 * pareto.c: the machine-readable views of a manifest: the variants table
 * of `catalog inspect --json` and the Pareto fronts of `catalog pareto`.
 *
 * A Pareto front of a task against one cost: the kept variants of the task
 * with a measured top-1, sorted by the cost (ties: higher top-1 first,
 * then id), keeping each one more accurate than every cheaper one (the
 * dashed line of the report's plots). Costs: "macs" and "weight_bytes" per
 * task, and per target "gpu_ms" and "cpu_ms", the roofline estimates of
 * the target's GPU and CPU (targets.c); the winnowed variants are not on
 * any front (they are not in the archive).
 */
#include "cat.h"

#include <stdlib.h>
#include <string.h>

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static cJSON *num_or_null(double v)
{
    return v >= 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static cJSON *out_of_memory(cJSON *doc, trn_err *err)
{
    cJSON_Delete(doc);
    trn_errf(err, "out of memory");
    return NULL;
}

/* The object both views start with: the catalog's id and version (NULL
 * when out of memory; the cJSON_Add* functions take a NULL object). */
static cJSON *catalog_doc(const cJSON *m, trn_err *err)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc) return out_of_memory(NULL, err);
    cJSON_AddStringToObject(doc, "catalog", cat_json_str(m, "catalog", ""));
    cJSON_AddNumberToObject(doc, "version", cat_json_num(m, "version", 0));
    return doc;
}

struct fpt {
    const cJSON *v;
    double cost, top1;
};

static int cmp_fpt(const void *a, const void *b)
{
    const struct fpt *p = a, *q = b;
    if (p->cost != q->cost) return p->cost < q->cost ? -1 : 1;
    if (p->top1 != q->top1) return p->top1 > q->top1 ? -1 : 1;
    return strcmp(cat_json_str(p->v, "id", ""), cat_json_str(q->v, "id", ""));
}

/* The cost of v: "macs", "weight_bytes", or an estimate's ms ("gpu_ms",
 * "cpu_ms" of target); -1 when unknown. */
static double cost_of(const cJSON *v, const char *cost, const char *target)
{
    if (!target) return cat_json_num(get(v, "cost"), cost, -1);
    const cJSON *e = get(get(v, "estimates"), target);
    if (!strcmp(cost, "cpu_ms")) e = get(e, "cpu");
    return cat_json_num(e, "ms", -1);
}

static cJSON *front(const cJSON *m, const char *task, const char *cost, const char *target, trn_err *err)
{
    const cJSON *variants = get(m, "variants"), *v;
    size_t n = 0, cap = (size_t)cJSON_GetArraySize(variants) + 1;
    struct fpt *p = calloc(cap, sizeof *p);
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_CreateArray();
    if (!p || !o || !arr) {
        free(p);
        cJSON_Delete(o);
        cJSON_Delete(arr);
        trn_errf(err, "out of memory");
        return NULL;
    }
    cJSON_ArrayForEach(v, variants) {
        if (strcmp(cat_json_str(v, "task", ""), task)) continue;
        double t1 = cat_json_num(get(get(v, "accuracy"), task), "top1", -1), c = cost_of(v, cost, target);
        if (t1 < 0 || c < 0) continue;
        p[n++] = (struct fpt){v, c, t1};
    }
    qsort(p, n, sizeof *p, cmp_fpt);
    cJSON_AddStringToObject(o, "task", task);
    if (target) cJSON_AddStringToObject(o, "target", target);
    else cJSON_AddNullToObject(o, "target");
    cJSON_AddStringToObject(o, "cost", cost);
    if (target) {
        const cJSON *t = get(get(m, "targets"), target);
        const char *unit = !strcmp(cost, "cpu_ms") ? cat_json_str(get(t, "cpu"), "compute_unit", "CPU")
                                                   : cat_json_str(t, "compute_unit", "GPU");
        cJSON_AddStringToObject(o, "compute_unit", unit);
    }
    double best = -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i].top1 <= best) continue;
        best = p[i].top1;
        cJSON *e = cJSON_CreateObject();
        const cJSON *acc = get(get(p[i].v, "accuracy"), task);
        cJSON_AddStringToObject(e, "id", cat_json_str(p[i].v, "id", ""));
        cJSON_AddStringToObject(e, "technique", cat_json_str(p[i].v, "technique", ""));
        cJSON_AddNumberToObject(e, "cost", p[i].cost);
        cJSON_AddNumberToObject(e, "top1", p[i].top1);
        cJSON_AddItemToObject(e, "top5", num_or_null(cat_json_num(acc, "top5", -1)));
        cJSON_AddItemToArray(arr, e);
    }
    free(p);
    cJSON_AddItemToObject(o, "front", arr);
    return o;
}

cJSON *cat_pareto(const cJSON *m, const char *only_task, const char *only_target, trn_err *err)
{
    cJSON *doc = catalog_doc(m, err), *fronts = cJSON_AddArrayToObject(doc, "fronts");
    if (!fronts) return out_of_memory(doc, err);
    const cJSON *t, *g;
    int tasks = 0, targets = 0;
    cJSON_ArrayForEach(t, get(m, "tasks")) {
        if (only_task && strcmp(only_task, t->string)) continue;
        tasks++;
        static const char *const costs[] = {"macs", "weight_bytes"};
        for (int c = 0; c < 2 && !only_target; c++) {
            cJSON *f = front(m, t->string, costs[c], NULL, err);
            if (!f) return cJSON_Delete(doc), NULL;
            cJSON_AddItemToArray(fronts, f);
        }
        cJSON_ArrayForEach(g, get(m, "targets")) {
            if (only_target && strcmp(only_target, g->string)) continue;
            targets++;
            for (int c = 0; c < 1 + (get(g, "cpu") != NULL); c++) {
                cJSON *f = front(m, t->string, c ? "cpu_ms" : "gpu_ms", g->string, err);
                if (!f) return cJSON_Delete(doc), NULL;
                cJSON_AddItemToArray(fronts, f);
            }
        }
    }
    if (only_task && !tasks) {
        trn_errf(err, "the catalog has no task '%s'", only_task);
        return cJSON_Delete(doc), NULL;
    }
    if (only_target && !targets) {
        trn_errf(err, "the catalog has no target '%s'", only_target);
        return cJSON_Delete(doc), NULL;
    }
    return doc;
}

cJSON *cat_inspect_json(const cJSON *m, trn_err *err)
{
    cJSON *doc = catalog_doc(m, err);
    cJSON_AddStringToObject(doc, "model", cat_json_str(m, "model", ""));
    cJSON *vars = cJSON_AddArrayToObject(doc, "variants"), *win = cJSON_AddArrayToObject(doc, "winnowed");
    if (!vars || !win) return out_of_memory(doc, err);
    const cJSON *v, *e;
    cJSON_ArrayForEach(v, get(m, "variants")) {
        const char *task = cat_json_str(v, "task", "");
        const cJSON *cost = get(v, "cost"), *acc = get(get(v, "accuracy"), task), *lat = get(v, "latency");
        cJSON *o = cJSON_CreateObject(), *est = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", cat_json_str(v, "id", ""));
        cJSON_AddStringToObject(o, "technique", cat_json_str(v, "technique", ""));
        cJSON_AddStringToObject(o, "task", task);
        cJSON_AddItemToObject(o, "top1", num_or_null(cat_json_num(acc, "top1", -1)));
        cJSON_AddItemToObject(o, "top5", num_or_null(cat_json_num(acc, "top5", -1)));
        static const char *const costs[] = {"macs", "params", "weight_bytes", "peak_activation_bytes"};
        for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++)
            cJSON_AddItemToObject(o, costs[k], num_or_null(cat_json_num(cost, costs[k], -1)));
        cJSON_AddItemToObject(o, "ms_build_host", num_or_null(cat_json_num(get(lat, "build-host"), "ms_median", -1)));
        cJSON_ArrayForEach(e, get(v, "estimates")) cJSON_AddItemToObject(est, e->string, cJSON_Duplicate(e, 1));
        cJSON_AddItemToObject(o, "estimates", est);
        cJSON_AddItemToArray(vars, o);
    }
    cJSON_ArrayForEach(v, get(m, "winnowed")) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", cat_json_str(v, "id", ""));
        cJSON_AddStringToObject(o, "technique", cat_json_str(v, "technique", ""));
        cJSON_AddStringToObject(o, "task", cat_json_str(v, "task", ""));
        cJSON_AddItemToObject(o, "macs", num_or_null(cat_json_num(v, "macs", -1)));
        cJSON_AddItemToObject(o, "weight_bytes", num_or_null(cat_json_num(v, "weight_bytes", -1)));
        cJSON_AddItemToObject(o, "top1", num_or_null(cat_json_num(v, "top1", -1)));
        cJSON_AddStringToObject(o, "dominated_by", cat_json_str(v, "dominated_by", ""));
        cJSON_AddItemToArray(win, o);
    }
    return doc;
}
