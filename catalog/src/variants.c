/*
 * variants.c: the variants table of a variants folder (cat_variants_read,
 * cat_variants_json; `catalog variants`): one row per <id>/variant.json,
 * reductions and top-1 change against the variant `base`.
 */
#include "cat.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `base` first, then by id. */
static int row_cmp(const void *a, const void *b)
{
    const cat_variant_row *x = a, *y = b;
    int xb = !strcmp(x->id, "base"), yb = !strcmp(y->id, "base");
    if (xb != yb) return yb - xb;
    return strcmp(x->id, y->id);
}

/* The first task's top-1, interval and test size, and the build host's
 * median latency. */
static void fill_measured(cat_variant_row *r, const cJSON *v)
{
    const cJSON *acc = cJSON_GetObjectItem(v, "accuracy");
    if (acc && acc->child && cJSON_IsNumber(cJSON_GetObjectItem(acc->child, "top1"))) {
        r->top1 = cat_json_num(acc->child, "top1", 0);
        r->has_top1 = 1;
        r->images = cat_json_num(acc->child, "images", 0);
        const cJSON *ci = cJSON_GetObjectItem(acc->child, "top1_ci");
        r->lo = cJSON_GetArraySize(ci) == 2 ? cJSON_GetArrayItem(ci, 0)->valuedouble : -1;
        r->hi = cJSON_GetArraySize(ci) == 2 ? cJSON_GetArrayItem(ci, 1)->valuedouble : -1;
    }
    const cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(v, "latency"), "build-host");
    if (cJSON_IsNumber(cJSON_GetObjectItem(lat, "ms_median"))) {
        r->ms = cat_json_num(lat, "ms_median", 0);
        r->has_ms = 1;
    }
}

static void fill_row(cat_variant_row *r, const cJSON *v)
{
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", cat_json_str(v, "id", "?"));
    snprintf(r->technique, sizeof r->technique, "%s", cat_json_str(v, "technique", "?"));
    const cJSON *cost = cJSON_GetObjectItem(v, "cost");
    r->macs = cat_json_num(cost, "macs", 0);
    r->params = cat_json_num(cost, "params", 0);
    const cJSON *l;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(cost, "layers"))
        if (!strcmp(cat_json_str(l, "type", ""), "connected")) r->fc_params += cat_json_num(l, "params", 0);
    fill_measured(r, v);
}

/* Room for one more row. -1 when out of memory. */
static int grow_rows(cat_variant_rows *r, size_t *cap)
{
    if (r->n < *cap) return 0;
    size_t nc = *cap ? 2 * *cap : 16;
    cat_variant_row *nr = realloc(r->v, nc * sizeof *nr);
    if (!nr) return -1;
    r->v = nr;
    *cap = nc;
    return 0;
}

int cat_variants_read(const char *dir, cat_variant_rows *r, void (*bad)(void *ctx, const trn_err *e), void *ctx,
                      trn_err *err)
{
    *r = (cat_variant_rows){0};
    DIR *d = opendir(dir);
    if (!d) return trn_errf(err, "cannot open %s: %s", dir, strerror(errno));
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s/variant.json", dir, e->d_name);
        FILE *probe = fopen(path, "rb");
        if (!probe) continue;
        fclose(probe);
        trn_err ve;
        cJSON *v = cat_json_load(path, 64u << 20, &ve);
        if (!v) {
            if (bad) bad(ctx, &ve);
            continue;
        }
        if (grow_rows(r, &cap)) rc = trn_errf(err, "out of memory");
        else fill_row(&r->v[r->n++], v);
        cJSON_Delete(v);
    }
    closedir(d);
    if (rc == 0 && r->n == 0) rc = trn_errf(err, "%s holds no <id>/variant.json", dir);
    if (rc != 0) {
        cat_variant_rows_free(r);
        return -1;
    }
    qsort(r->v, r->n, sizeof *r->v, row_cmp);
    r->base = !strcmp(r->v[0].id, "base") ? &r->v[0] : NULL;
    return 0;
}

/* a / b, or null without a base or with b 0. */
static cJSON *ratio(const cat_variant_row *base, double a, double b)
{
    return base && b > 0 ? cJSON_CreateNumber(a / b) : cJSON_CreateNull();
}

static cJSON *row_json(const cat_variant_row *r, const cat_variant_row *base)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "technique", r->technique);
    cJSON_AddNumberToObject(o, "macs", r->macs);
    cJSON_AddItemToObject(o, "macs_reduction", ratio(base, base ? base->macs : 0, r->macs));
    cJSON_AddNumberToObject(o, "params", r->params);
    cJSON_AddNumberToObject(o, "fc_params", r->fc_params);
    cJSON_AddItemToObject(o, "fc_reduction", ratio(base, base ? base->fc_params : 0, r->fc_params));
    cJSON_AddItemToObject(o, "top1", r->has_top1 ? cJSON_CreateNumber(r->top1) : cJSON_CreateNull());
    cJSON *ci = r->has_top1 && r->lo >= 0 ? cJSON_CreateArray() : cJSON_CreateNull();
    if (cJSON_IsArray(ci)) {
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(r->lo));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(r->hi));
    }
    cJSON_AddItemToObject(o, "top1_ci", ci);
    cJSON_AddItemToObject(o, "images", r->has_top1 && r->images > 0 ? cJSON_CreateNumber(r->images)
                                                                    : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "top1_change_points", base && base->has_top1 && r->has_top1
                                                       ? cJSON_CreateNumber(100 * (r->top1 - base->top1))
                                                       : cJSON_CreateNull());
    cJSON_AddItemToObject(o, "ms_build_host", r->has_ms ? cJSON_CreateNumber(r->ms) : cJSON_CreateNull());
    return o;
}

cJSON *cat_variants_json(const cat_variant_rows *r)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "variants");
    for (size_t i = 0; arr && i < r->n; i++) cJSON_AddItemToArray(arr, row_json(&r->v[i], r->base));
    if (arr) return doc;
    cJSON_Delete(doc);
    return NULL;
}

void cat_variant_rows_free(cat_variant_rows *r)
{
    free(r->v);
    *r = (cat_variant_rows){0};
}
