/*
 * validate.c: checking a manifest (catalog/manifest.schema.json describes
 * the format) beyond what a schema can say: cross-references between its
 * parts and, when a root folder is given, the files it names.
 */
#include "cat.h"

#include <math.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vctx {
    cat_report_fn report;
    void *user;
    int count;
};

static void problem(struct vctx *v, const char *ptr, const char *fmt, ...) TRN_PRINTF(3, 4);
static void problem(struct vctx *v, const char *ptr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cat_vreportf(v->report, v->user, &v->count, ptr, fmt, ap);
    va_end(ap);
}

static const char *str(const cJSON *o, const char *k)
{
    return cat_json_str(o, k, NULL);
}

static const cJSON *find_id(const cJSON *arr, const char *id)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        const char *x = str(e, "id");
        if (x && id && !strcmp(x, id)) return e;
    }
    return NULL;
}

static int in_strings(const cJSON *arr, const char *s)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
        if (cJSON_IsString(e) && !strcmp(e->valuestring, s)) return 1;
    return 0;
}

/* Depth-first search for a dependency cycle through variant index i. */
static int cyclic(const cJSON *variants, int i, unsigned char *mark)
{
    if (mark[i] == 1) return 1;
    if (mark[i] == 2) return 0;
    mark[i] = 1;
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(variants, i), "depends_on")) {
        int k = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, variants) {
            const char *id = str(e, "id");
            if (id && cJSON_IsString(d) && !strcmp(id, d->valuestring) && cyclic(variants, k, mark)) return 1;
            k++;
        }
    }
    mark[i] = 2;
    return 0;
}

static void check_accuracy(struct vctx *v, const cJSON *tasks, const cJSON *var, const char *ptr)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(var, "accuracy")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(tasks, a->string);
        char p[256];
        snprintf(p, sizeof p, "%.100s/accuracy/%.100s", ptr, a->string);
        if (!t) {
            problem(v, p, "task '%s' is not among the manifest's tasks", a->string);
            continue;
        }
        const cJSON *classes = cJSON_GetObjectItemCaseSensitive(t, "classes");
        int has5 = cJSON_GetObjectItemCaseSensitive(a, "top5") != NULL;
        if (cJSON_IsNumber(classes) && classes->valuedouble > 5 && !has5)
            problem(v, p, "task '%s' has %g classes, so top5 is required", a->string, classes->valuedouble);
        if (cJSON_IsNumber(classes) && classes->valuedouble <= 5 && has5)
            problem(v, p, "task '%s' has only %g classes: top5 is meaningless there", a->string, classes->valuedouble);
        static const char *const fk[][2] = {{"top1", "top1_ci"}, {"top5", "top5_ci"}};
        const cJSON *img = cJSON_GetObjectItemCaseSensitive(a, "images");
        for (size_t q = 0; q < 2; q++) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(a, fk[q][0]);
            const cJSON *ci = cJSON_GetObjectItemCaseSensitive(a, fk[q][1]);
            if (!ci || !cJSON_IsNumber(f) || !cJSON_IsNumber(img) || img->valuedouble < 1 ||
                cJSON_GetArraySize(ci) != 2)
                continue;
            double lo, hi, k = f->valuedouble * img->valuedouble + 0.5;
            trn_wilson((uint64_t)(k > img->valuedouble ? img->valuedouble : k), (uint64_t)img->valuedouble, &lo, &hi);
            double slo = cJSON_GetArrayItem(ci, 0)->valuedouble, shi = cJSON_GetArrayItem(ci, 1)->valuedouble;
            if (fabs(slo - lo) > 2e-6 || fabs(shi - hi) > 2e-6)
                problem(v, p, "%s [%g, %g] is not the 95%% Wilson interval of %s %g over %g images ([%.6f, %.6f])",
                        fk[q][1], slo, shi, fk[q][0], f->valuedouble, img->valuedouble, lo, hi);
        }
    }
}

/* The fields of technique_fields that name other variants. */
static void check_technique(struct vctx *v, const cJSON *var, const char *ptr)
{
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(var, "technique_fields");
    const cJSON *deps = cJSON_GetObjectItemCaseSensitive(var, "depends_on");
    const char *partner = str(cJSON_GetObjectItemCaseSensitive(tf, "cascade"), "partner");
    const char *trunk = str(cJSON_GetObjectItemCaseSensitive(tf, "head"), "trunk");
    char p[256];
    if (partner && !in_strings(deps, partner)) {
        snprintf(p, sizeof p, "%.200s/technique_fields/cascade/partner", ptr);
        problem(v, p, "cascade partner '%s' must be listed in depends_on", partner);
    }
    if (trunk && !in_strings(deps, trunk)) {
        snprintf(p, sizeof p, "%.200s/technique_fields/head/trunk", ptr);
        problem(v, p, "trunk '%s' must be listed in depends_on", trunk);
    }
    const cJSON *frags = cJSON_GetObjectItemCaseSensitive(tf, "fragments"), *f;
    int i = 0;
    cJSON_ArrayForEach(f, frags) {
        const cJSON *d;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(f, "depends_on")) {
            if (cJSON_IsString(d) && !find_id(frags, d->valuestring) && !in_strings(deps, d->valuestring)) {
                snprintf(p, sizeof p, "%.200s/technique_fields/fragments/%d", ptr, i);
                problem(v, p, "fragment dependency '%s' is neither a fragment of this variant nor in its depends_on",
                        d->valuestring);
            }
        }
        i++;
    }
}

/* The file of var with role, or NULL. */
static const cJSON *role_file(const cJSON *var, const char *role)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(var, "files"))
        if (!strcmp(str(f, "role"), role)) return f;
    return NULL;
}

/* A fragment (fragment_of): its trunk is a whole variant of this catalog,
 * at this version, in depends_on, whose weights file is the one named by
 * trunk_sha256; it has a fragment file and a cfg. */
static void check_fragment(struct vctx *v, const cJSON *m, const cJSON *var, const char *ptr)
{
    const cJSON *fo = cJSON_GetObjectItemCaseSensitive(var, "fragment_of");
    if (!fo) return;
    const char *trunk = str(fo, "trunk");
    const cJSON *tv = find_id(cJSON_GetObjectItemCaseSensitive(m, "variants"), trunk);
    const cJSON *tw = tv ? role_file(tv, "weights") : NULL;
    double version = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(m, "version"));
    char p[256];
    snprintf(p, sizeof p, "%.200s/fragment_of", ptr);
    if (!tv)
        problem(v, p, "trunk '%s' is not a variant of this catalog: the fragment cannot run without it", trunk);
    else if (!tw || cJSON_GetObjectItemCaseSensitive(tv, "fragment_of"))
        problem(v, p, "trunk '%s' is not stored whole (it has no weights file of its own)", trunk);
    else if (strcmp(str(tw, "sha256"), str(fo, "trunk_sha256")))
        problem(v, p, "trunk_sha256 is not that of trunk '%s''s weights file (%s): the fragment was cut from "
                "another build of its trunk", trunk, str(tw, "path"));
    if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fo, "version")) != version)
        problem(v, p, "version %g, but the trunk is in this catalog, of version %g",
                cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(fo, "version")), version);
    if (trunk && !in_strings(cJSON_GetObjectItemCaseSensitive(var, "depends_on"), trunk))
        problem(v, p, "trunk '%s' must be listed in depends_on", trunk);
    if (!role_file(var, "fragment") || !role_file(var, "cfg") || role_file(var, "weights"))
        problem(v, p, "a fragment has a file with role fragment and one with role cfg, and none with role weights");
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void check_files(struct vctx *v, const cJSON *variants, const char *root)
{
    size_t n = 0, cap = 0;
    const char **paths = NULL;
    const cJSON *var;
    int vi = 0;
    cJSON_ArrayForEach(var, variants) {
        const char *id = str(var, "id");
        char prefix[128];
        snprintf(prefix, sizeof prefix, "variants/%s/", id ? id : "?");
        const cJSON *f;
        int fi = 0;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(var, "files")) {
            char p[128];
            snprintf(p, sizeof p, "/variants/%d/files/%d", vi, fi++);
            const char *path = str(f, "path"), *sha = str(f, "sha256");
            const cJSON *size = cJSON_GetObjectItemCaseSensitive(f, "size");
            if (!path) continue;
            if (strncmp(path, prefix, strlen(prefix)) != 0) problem(v, p, "path '%s' is not under %s", path, prefix);
            if (n == cap) {
                const char **g = realloc(paths, (cap = cap ? 2 * cap : 64) * sizeof *g);
                if (!g) break;
                paths = g;
            }
            paths[n++] = path;
            if (!root) continue;
            char full[4096];
            uint8_t got[RTL_SHA256_BYTES];
            char hex[65];
            uint64_t bytes;
            rtl_err re;
            snprintf(full, sizeof full, "%s/%s", root, path);
            if (rtl_sha256_file(full, got, &bytes, &re) != 0) {
                problem(v, p, "%s", re.msg);
                continue;
            }
            rtl_sha256_hex(got, hex);
            if (cJSON_IsNumber(size) && (double)bytes != size->valuedouble)
                problem(v, p, "%s is %" PRIu64 " bytes, the manifest says %.0f", full, bytes, size->valuedouble);
            else if (sha && strcmp(hex, sha) != 0)
                problem(v, p, "%s has SHA-256 %s, the manifest says %s", full, hex, sha);
        }
        vi++;
    }
    if (n) qsort(paths, n, sizeof *paths, cmp_paths);
    for (size_t i = 1; i < n; i++) {
        size_t la = strlen(paths[i - 1]);
        if (!strcmp(paths[i - 1], paths[i])) problem(v, "/variants", "file '%s' is listed twice", paths[i]);
        else if (!strncmp(paths[i - 1], paths[i], la) && paths[i][la] == '/')
            problem(v, "/variants", "'%s' is a file and also the folder of '%s'", paths[i - 1], paths[i]);
    }
    free(paths);
}

int cat_validate(cat_schema *schema, const cJSON *m, const char *root, cat_report_fn report, void *user,
                 trn_err *err)
{
    int n = cat_schema_validate(schema, "manifest.schema.json", m, report, user, err);
    if (n != 0) return n; /* cross-checks assume the structure is right */
    struct vctx v = {report, user, 0};
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(m, "tasks");
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(m, "targets");
    const cJSON *variants = cJSON_GetObjectItemCaseSensitive(m, "variants");
    const cJSON *winnowed = cJSON_GetObjectItemCaseSensitive(m, "winnowed");
    /* An add-on's variants may name the base catalog's variants. */
    const cJSON *base_ids = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "base"), "variants");
    char p[256];
    const cJSON *t;
    cJSON_ArrayForEach(t, tasks) {
        const cJSON *classes = cJSON_GetObjectItemCaseSensitive(t, "classes");
        int labels = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "labels"));
        snprintf(p, sizeof p, "/tasks/%s", t->string);
        if (classes->valuedouble != labels)
            problem(&v, p, "classes is %g but there are %d labels", classes->valuedouble, labels);
    }
    int nv = cJSON_GetArraySize(variants);
    unsigned char *mark = calloc((size_t)nv + 1, 1);
    int i = 0;
    const cJSON *var;
    cJSON_ArrayForEach(var, variants) {
        const char *id = str(var, "id"), *task = str(var, "task"), *parent = str(var, "parent");
        snprintf(p, sizeof p, "/variants/%d", i);
        if (find_id(variants, id) != var) problem(&v, p, "variant id '%s' appears twice", id);
        if (find_id(winnowed, id)) problem(&v, p, "variant '%s' is also listed as winnowed", id);
        if (!cJSON_GetObjectItemCaseSensitive(tasks, task)) problem(&v, p, "task '%s' is not among the tasks", task);
        if (parent && !find_id(variants, parent) && !find_id(winnowed, parent) && !in_strings(base_ids, parent))
            problem(&v, p, "parent '%s' is neither a variant nor a winnowed one%s", parent,
                    base_ids ? " nor one of the base catalog's" : "");
        const cJSON *d;
        cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(var, "depends_on")) {
            if (!strcmp(d->valuestring, id)) problem(&v, p, "variant '%s' depends on itself", id);
            else if (in_strings(base_ids, d->valuestring) && !find_id(variants, d->valuestring))
                ; /* a variant of the base catalog an add-on extends */
            else if (!find_id(variants, d->valuestring))
                problem(&v, p, "depends on '%s', which is not a variant of the catalog", d->valuestring);
        }
        if (mark && cyclic(variants, i, mark)) {
            problem(&v, p, "variant '%s' is part of a dependency cycle", id);
            memset(mark, 0, (size_t)nv + 1);
        }
        check_accuracy(&v, tasks, var, p);
        check_technique(&v, var, p);
        check_fragment(&v, m, var, p);
        const cJSON *est = cJSON_GetObjectItemCaseSensitive(var, "estimates");
        cJSON_ArrayForEach(t, targets)
            if (!cJSON_GetObjectItemCaseSensitive(est, t->string)) problem(&v, p, "no estimate for target '%s'", t->string);
        cJSON_ArrayForEach(t, est)
            if (!cJSON_GetObjectItemCaseSensitive(targets, t->string))
                problem(&v, p, "an estimate for '%s', which is not among the targets", t->string);
        i++;
    }
    free(mark);
    i = 0;
    cJSON_ArrayForEach(var, winnowed) {
        snprintf(p, sizeof p, "/winnowed/%d", i++);
        const char *id = str(var, "id"), *by = str(var, "dominated_by");
        if (find_id(winnowed, id) != var) problem(&v, p, "winnowed id '%s' appears twice", id);
        if (!find_id(variants, by)) problem(&v, p, "dominated_by '%s' is not a variant of the catalog", by);
        if (!cJSON_GetObjectItemCaseSensitive(tasks, str(var, "task")))
            problem(&v, p, "task '%s' is not among the tasks", str(var, "task"));
    }
    check_files(&v, variants, root);
    return v.count;
}
