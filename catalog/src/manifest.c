/*
 * manifest.c: from a folder of variant folders to a manifest (cat_build).
 *
 * Input (the contract with the variant stage, catalog/README.md): every
 * sub-folder <id>/ of the variants folder holds variant.json
 * (catalog/variant.schema.json) and the files it lists, at paths relative to
 * the folder. Output: manifest.json as catalog/manifest.schema.json
 * describes it, the list of files to pack (archive path
 * "variants/<id>/<path>"), and the winnowing record.
 */
#include "cat.h"
#include "techniques.h"

#include <math.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VARIANT_JSON_MAX (64u << 20)
#define LABELS_MAX (16u << 20)

/* Report wrapper that prefixes each pointer with a file name. */
struct prefixed {
    cat_report_fn report;
    void *user;
    const char *file;
    int count;
};

static void prefixed_report(void *u, const char *ptr, const char *msg)
{
    struct prefixed *p = u;
    p->count++;
    if (!p->report) return;
    char where[4200];
    snprintf(where, sizeof where, "%s%s%s", p->file, ptr && ptr[0] ? ": " : "", ptr ? ptr : "");
    p->report(p->user, where, msg);
}

static void say(struct prefixed *p, const char *ptr, const char *fmt, ...) TRN_PRINTF(3, 4);
static void say(struct prefixed *p, const char *ptr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cat_vreportf(prefixed_report, p, NULL, ptr, fmt, ap);
    va_end(ap);
}

struct input {
    char *dir;              /* the variant folder */
    cJSON *json;            /* its variant.json */
    const char *id;
    struct cat_pack_file *files;
    size_t nfiles;
    int64_t newest_mtime;
};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **sorted_subdirs(const char *dir, size_t *n, trn_err *err)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d) {
        trn_errf(err, "cannot read the variants folder %s", dir);
        return NULL;
    }
    char **names = NULL;
    struct dirent *de;
    size_t cap = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (*n == cap) {
            char **g = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *g);
            if (!g) break;
            names = g;
        }
        if (!(names[*n] = strdup(de->d_name))) break;
        (*n)++;
    }
    closedir(d);
    if (names) qsort(names, *n, sizeof *names, cmp_name);
    return names ? names : calloc(1, sizeof *names);
}

static void input_free(struct input *in)
{
    for (size_t i = 0; i < in->nfiles; i++) {
        free(in->files[i].archive_path);
        free(in->files[i].source);
    }
    free(in->files);
    free(in->dir);
    cJSON_Delete(in->json);
}

/* Reads one variant folder: variant.json against the schema and the
 * contract, then every file it lists (size, SHA-256). */
static int read_variant(cat_schema *schema, const char *dir, const char *name, const char *model, struct input *in,
                        struct prefixed *rep, trn_err *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/variant.json", dir) >= (int)sizeof path)
        return trn_errf(err, "%s: path too long", dir);
    struct prefixed local = {rep->report, rep->user, path, 0};
    struct stat st;
    if (stat(path, &st) != 0) {
        say(&local, NULL, "missing: every variant folder holds a variant.json");
        rep->count += local.count;
        return 0;
    }
    in->newest_mtime = st.st_mtime;
    trn_err jerr;
    if (!(in->json = cat_json_load(path, VARIANT_JSON_MAX, &jerr))) {
        say(&local, NULL, "%s", jerr.msg);
        rep->count += local.count;
        return 0;
    }
    if (cat_schema_validate(schema, "variant.schema.json", in->json, prefixed_report, &local, err) < 0) return -1;
    if (local.count) {
        rep->count += local.count;
        return 0;
    }
    in->id = cJSON_GetObjectItemCaseSensitive(in->json, "id")->valuestring;
    const char *vmodel = cJSON_GetObjectItemCaseSensitive(in->json, "model")->valuestring;
    if (strcmp(in->id, name) != 0) say(&local, "/id", "id '%s' differs from the folder name '%s'", in->id, name);
    if (model && strcmp(vmodel, model) != 0) say(&local, "/model", "model '%s', but the catalog is of model '%s'", vmodel, model);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(in->json, "files"), *f;
    in->files = calloc((size_t)cJSON_GetArraySize(files), sizeof *in->files);
    if (!in->files) return trn_errf(err, "out of memory");
    int i = 0;
    cJSON_ArrayForEach(f, files) {
        const char *rel = cJSON_GetObjectItemCaseSensitive(f, "path")->valuestring;
        char ptr[32], src[4096], arch[512];
        snprintf(ptr, sizeof ptr, "/files/%d", i++);
        if (snprintf(src, sizeof src, "%s/%s", dir, rel) >= (int)sizeof src ||
            snprintf(arch, sizeof arch, "variants/%s/%s", in->id, rel) >= (int)sizeof arch)
            return trn_errf(err, "%s/%s: path too long", dir, rel);
        for (size_t k = 0; k < in->nfiles; k++)
            if (!strcmp(in->files[k].archive_path, arch)) say(&local, ptr, "'%s' is listed twice", rel);
        struct cat_pack_file *pf = &in->files[in->nfiles];
        rtl_err re;
        if (lstat(src, &st) != 0 || !S_ISREG(st.st_mode)) {
            say(&local, ptr, "%s is missing or not a regular file", src);
            continue;
        }
        if (rtl_sha256_file(src, pf->sha256, &pf->size, &re) != 0) {
            say(&local, ptr, "%s", re.msg);
            continue;
        }
        if (st.st_mtime > in->newest_mtime) in->newest_mtime = st.st_mtime;
        if (!(pf->archive_path = strdup(arch)) || !(pf->source = strdup(src))) return trn_errf(err, "out of memory");
        in->nfiles++;
    }
    rep->count += local.count;
    return 0;
}

/* Labels of a .names file: one per line, blank lines skipped. */
static cJSON *read_labels(const char *path, trn_err *err)
{
    char *text;
    size_t len;
    if (trn_read_file(path, LABELS_MAX, &text, &len, err) != 0) return NULL;
    cJSON *arr = cJSON_CreateArray();
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); arr && l; l = strtok_r(NULL, "\n", &save)) {
        l[strcspn(l, "\r")] = '\0';
        if (l[0]) cJSON_AddItemToArray(arr, cJSON_CreateString(l));
    }
    free(text);
    if (!arr) trn_errf(err, "out of memory");
    else if (cJSON_GetArraySize(arr) == 0) {
        cJSON_Delete(arr);
        trn_errf(err, "%s holds no label", path);
        return NULL;
    }
    return arr;
}

static double top1_of(const cJSON *v)
{
    const char *task = cJSON_GetObjectItemCaseSensitive(v, "task")->valuestring;
    const cJSON *t1 = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), task), "top1");
    return cJSON_IsNumber(t1) ? t1->valuedouble : -1;
}

static uint64_t images_of(const cJSON *v)
{
    const char *task = cJSON_GetObjectItemCaseSensitive(v, "task")->valuestring;
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), task), "images");
    return cJSON_IsNumber(n) && n->valuedouble >= 1 ? (uint64_t)n->valuedouble : 0;
}

static uint64_t cost_of(const cJSON *v, const char *k)
{
    return (uint64_t)cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "cost"), k)->valuedouble;
}

static void add_copy(cJSON *to, const char *key, const cJSON *from, const char *fallback)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, key);
    cJSON_AddItemToObject(to, key, v ? cJSON_Duplicate(v, 1) : cJSON_Parse(fallback));
}

/* One manifest variant from its input. */
static cJSON *manifest_variant(const struct input *in, const cJSON *targets, trn_err *err)
{
    cJSON *v = cJSON_CreateObject(), *files = cJSON_CreateArray(), *est = cJSON_CreateObject();
    if (!v || !files || !est) {
        cJSON_Delete(v);
        cJSON_Delete(files);
        cJSON_Delete(est);
        trn_errf(err, "out of memory");
        return NULL;
    }
    static const char *const copied[] = {"id", "technique", "parent", "depends_on", "description", "task",
                                         "accuracy", "cost"};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) add_copy(v, copied[i], in->json, "null");
    cJSON *acc;
    cJSON_ArrayForEach(acc, cJSON_GetObjectItemCaseSensitive(v, "accuracy"))
        if (cat_accuracy_add_intervals(acc) != 0) {
            cJSON_Delete(v);
            cJSON_Delete(files);
            cJSON_Delete(est);
            trn_errf(err, "out of memory");
            return NULL;
        }
    add_copy(v, "latency", in->json, "{}");
    add_copy(v, "technique_fields", in->json, "{}");
    if (cJSON_GetObjectItemCaseSensitive(in->json, "fragment_of")) add_copy(v, "fragment_of", in->json, "null");
    const cJSON *f;
    size_t k = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(in->json, "files")) {
        const struct cat_pack_file *pf = &in->files[k++];
        char hex[65];
        rtl_sha256_hex(pf->sha256, hex);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "role", cJSON_GetObjectItemCaseSensitive(f, "role")->valuestring);
        cJSON_AddStringToObject(e, "path", pf->archive_path);
        cJSON_AddNumberToObject(e, "size", (double)pf->size);
        cJSON_AddStringToObject(e, "sha256", hex);
        cJSON_AddItemToArray(files, e);
    }
    cJSON_AddItemToObject(v, "files", files);
    const cJSON *t;
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(in->json, "cost");
    cJSON_ArrayForEach(t, targets) {
        cJSON *e = cat_estimate(cost, t, err);
        if (!e) {
            cJSON_Delete(est);
            cJSON_Delete(v);
            return NULL;
        }
        cJSON_AddItemToObject(est, t->string, e);
    }
    cJSON_AddItemToObject(v, "estimates", est);
    return v;
}

/* The index of in's file with role, or -1. */
static int role_index(const struct input *in, const char *role)
{
    const cJSON *f;
    int k = 0;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(in->json, "files")) {
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(f, "role")->valuestring, role)) return k;
        k++;
    }
    return -1;
}

/* The first layer of a head's or specialised variant's own (technique_fields
 * head.from_layer or from_layer), or 0 for any other variant. */
static int own_layers_from(const cJSON *v)
{
    const char *t = cJSON_GetObjectItemCaseSensitive(v, "technique")->valuestring;
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(v, "technique_fields");
    const cJSON *from = !strcmp(t, "head") ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tf, "head"), "from_layer")
                        : !strcmp(t, "specialised") ? cJSON_GetObjectItemCaseSensitive(tf, "from_layer") : NULL;
    return cJSON_IsNumber(from) && from->valuedouble >= 1 && from->valuedouble < 1e6 ? (int)from->valuedouble : 0;
}

/* The kept variant with id, or -1. */
static int kept_index(const struct input *ins, size_t n, const unsigned char *keep, const char *id)
{
    for (size_t j = 0; id && j < n; j++)
        if (keep[j] && !strcmp(ins[j].id, id)) return (int)j;
    return -1;
}

/* Adds id to v's depends_on (made if absent) unless it is there: a
 * fragment cannot load without its trunk, whether or not the variant named
 * it (a specialised model of a cheaper variant lists its cascade partner,
 * not the variant it was cut from). */
static int depend_on(cJSON *v, const char *id)
{
    cJSON *deps = cJSON_GetObjectItemCaseSensitive(v, "depends_on");
    if (!cJSON_IsArray(deps)) {
        cJSON_DeleteItemFromObjectCaseSensitive(v, "depends_on");
        if (!(deps = cJSON_AddArrayToObject(v, "depends_on"))) return -1;
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, deps)
        if (cJSON_IsString(d) && !strcmp(d->valuestring, id)) return 0;
    cJSON *s = cJSON_CreateString(id);
    return s && cJSON_AddItemToArray(deps, s) ? 0 : -1;
}

/* Stores in as a fragment on its parent ins[j] (fragment.c) when its
 * layers below the cut are the parent's: its weights file becomes
 * fragment.weights (role "fragment") and its variant.json gains
 * "fragment_of". */
static int make_fragment(struct input *in, const struct input *trunk, int cut, uint64_t version, trn_err *err)
{
    int w = role_index(in, "weights"), c = role_index(in, "cfg"), t = role_index(trunk, "weights");
    if (w < 0 || c < 0 || t < 0) return 0;
    int rc = cat_fragment_plan(in->files[c].source, &in->files[w], trunk->files[t].source, cut, err);
    if (rc <= 0) return rc;
    char arch[512], hex[65];
    snprintf(arch, sizeof arch, "variants/%s/fragment.weights", in->id);
    char *a = strdup(arch);
    cJSON *fo = cJSON_CreateObject();
    cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(in->json, "files"), w);
    if (!a || !fo || !cJSON_ReplaceItemInObjectCaseSensitive(f, "role", cJSON_CreateString("fragment")) ||
        depend_on(in->json, trunk->id) < 0) {
        free(a);
        cJSON_Delete(fo);
        return trn_errf(err, "out of memory");
    }
    free(in->files[w].archive_path);
    in->files[w].archive_path = a;
    rtl_sha256_hex(trunk->files[t].sha256, hex);
    cJSON_AddStringToObject(fo, "trunk", trunk->id);
    cJSON_AddNumberToObject(fo, "version", (double)version);
    cJSON_AddNumberToObject(fo, "cut", cut);
    cJSON_AddStringToObject(fo, "trunk_sha256", hex);
    cJSON_AddItemToObject(in->json, "fragment_of", fo);
    return 1;
}

/* Every kept head and specialised variant whose parent is kept whole is
 * stored as a fragment on it. */
static int make_fragments(struct input *ins, size_t n, const unsigned char *keep, uint64_t version, trn_err *err)
{
    for (size_t i = 0; i < n; i++) {
        int cut = keep[i] ? own_layers_from(ins[i].json) : 0;
        int j = cut ? kept_index(ins, n, keep, cat_json_str(ins[i].json, "parent", NULL)) : -1;
        if (j < 0 || own_layers_from(ins[j].json)) continue;
        if (make_fragment(&ins[i], &ins[j], cut, version, err) < 0) return -1;
    }
    return 0;
}

static int cmp_pack_file(const void *a, const void *b)
{
    return strcmp(((const struct cat_pack_file *)a)->archive_path, ((const struct cat_pack_file *)b)->archive_path);
}

void cat_built_free(struct cat_built *b)
{
    if (!b) return;
    cJSON_Delete(b->manifest);
    cJSON_Delete(b->winnowed);
    cJSON_Delete(b->decisions);
    for (size_t i = 0; i < b->nfiles; i++) {
        free(b->files[i].archive_path);
        free(b->files[i].source);
    }
    free(b->files);
    free(b->source_date_epoch_from);
    memset(b, 0, sizeof *b);
}

/* The tasks object: a label set for every task a kept variant names. */
static cJSON *build_tasks(const struct cat_build_options *o, struct input *ins, size_t n, const unsigned char *keep,
                          struct prefixed *rep, trn_err *err)
{
    cJSON *tasks = cJSON_CreateObject();
    for (size_t i = 0; i < o->ntasks && tasks; i++) {
        cJSON *labels = read_labels(o->tasks[i].path, err);
        if (!labels) {
            cJSON_Delete(tasks);
            return NULL;
        }
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "classes", cJSON_GetArraySize(labels));
        cJSON_AddItemToObject(t, "labels", labels);
        cJSON_AddItemToObject(tasks, o->tasks[i].task, t);
    }
    for (size_t i = 0; i < n && tasks; i++) {
        if (!keep[i]) continue;
        const char *task = cJSON_GetObjectItemCaseSensitive(ins[i].json, "task")->valuestring;
        if (!cJSON_GetObjectItemCaseSensitive(tasks, task))
            say(rep, "", "variant %s is for task '%s': give its labels with --task %s=FILE.names", ins[i].id, task, task);
        const cJSON *a;
        cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(ins[i].json, "accuracy"))
            if (strcmp(a->string, task) && !cJSON_GetObjectItemCaseSensitive(tasks, a->string))
                say(rep, "", "variant %s reports accuracy on task '%s': give its labels with --task %s=FILE.names",
                    ins[i].id, a->string, a->string);
    }
    if (!tasks) trn_errf(err, "out of memory");
    return tasks;
}

/* Winnows the inputs: keep[i] says which stay; the record goes to out. */
/* 1 when id is a variant of the base catalog an add-on extends. */
static int in_base(const cJSON *base, const char *id)
{
    const cJSON *bv;
    cJSON_ArrayForEach(bv, cJSON_GetObjectItemCaseSensitive(base, "variants"))
        if (!strcmp(cat_json_str(bv, "id", ""), id)) return 1;
    return 0;
}

#define WBUFS 65 /* per-image arrays of one variant: its own and up to 64 capacities' */

/* Per-image correctness from a predictions file (trn_preds) named by
 * variant.json's "predictions", checked against the accuracy it stands for
 * (split, images, top-1). *buf owns the array; a problem goes to rep. */
static void load_img(const struct input *in, const char *rel, const char *ptr, const char *split, uint64_t images,
                     double top1, struct cat_wimg *img, unsigned char **buf, struct prefixed *rep)
{
    char path[4096];
    trn_preds p;
    trn_err e;
    snprintf(path, sizeof path, "%s/%s", in->dir, rel);
    if (trn_preds_read(path, &p, &e) != 0) {
        say(rep, ptr, "%s", e.msg);
        return;
    }
    uint64_t right = trn_preds_correct(&p);
    if (images && p.images != images)
        say(rep, ptr, "%s holds %llu images but the accuracy it stands for was measured on %llu: evaluate again",
            path, (unsigned long long)p.images, (unsigned long long)images);
    else if (split && strcmp(split, trn_split_name(p.split)))
        say(rep, ptr, "%s is of the %s split but the accuracy it stands for of the %s split: evaluate again", path,
            trn_split_name(p.split), split);
    else if (top1 >= 0 && fabs((double)right - top1 * (double)p.images) > 0.5 + 1e-6 * (double)p.images)
        say(rep, ptr, "%s has %llu of %llu images right, but the accuracy it stands for says top-1 %.6f: evaluate "
            "again", path, (unsigned long long)right, (unsigned long long)p.images, top1);
    else if ((*buf = malloc(p.images ? p.images : 1))) {
        for (uint64_t k = 0; k < p.images; k++) (*buf)[k] = p.truth[k] == p.pred[k];
        *img = (struct cat_wimg){*buf, p.images, p.list};
    }
    trn_preds_free(&p);
}

/* A number rounded to 6 significant digits (so the manifest's bytes do not
 * depend on the last bits of exp and log). */
static double sig6(double x)
{
    char b[32];
    snprintf(b, sizeof b, "%.6g", x);
    return strtod(b, NULL);
}

/* {"against", "method", "difference" (this top-1 minus against's), "p",
 * "images", "only_this", "only_against", "verdict"} from c (a: against, b:
 * this). */
static cJSON *test_json(const struct cat_wcmp *c, const char *against)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "against", against);
    cJSON_AddStringToObject(t, "method", c->paired ? "mcnemar-exact" : "wilson-intervals");
    cJSON_AddNumberToObject(t, "difference", round(-c->diff * 1e6) / 1e6);
    if (c->paired) {
        cJSON_AddNumberToObject(t, "p", sig6(c->p));
        cJSON_AddNumberToObject(t, "images", (double)c->images);
        cJSON_AddNumberToObject(t, "only_this", (double)c->only_b);
        cJSON_AddNumberToObject(t, "only_against", (double)c->only_a);
    }
    cJSON_AddStringToObject(t, "verdict", c->b_better ? "clearly better" : c->a_better ? "clearly worse" : "no clear difference");
    return t;
}

/* The winnowing decision of a kept variant (the manifest's "winnowing"). */
static cJSON *decision_json(const struct cat_wv *wv, size_t i)
{
    const struct cat_wv *v = &wv[i];
    cJSON *d = cJSON_CreateObject();
    const char *why = v->keep ? "kept by request" : v->needed_by >= 0 ? "needed by another variant" :
                      v->top1 < 0 ? "no accuracy measured" : v->ncaps ? "a capacity on the front" :
                      v->challenger >= 0 ? "not dominated" : "no variant at no more cost";
    cJSON_AddStringToObject(d, "reason", why);
    if (v->needed_by >= 0) cJSON_AddStringToObject(d, "needed_by", wv[v->needed_by].id);
    long against = v->dominated_by >= 0 ? v->dominated_by : v->challenger;
    if (!v->ncaps && against >= 0) {
        if (v->dominated_by >= 0) cJSON_AddStringToObject(d, "dominated_by", wv[against].id);
        cJSON_AddItemToObject(d, "test", test_json(&v->cmp, wv[against].id));
    }
    if (v->ncaps) {
        cJSON *caps = cJSON_AddArrayToObject(d, "capacities");
        for (size_t k = 0; k < v->ncaps; k++) {
            const struct cat_wcap *c = &v->caps[k];
            cJSON *o = cJSON_CreateObject();
            long a = c->dominated_by >= 0 ? c->dominated_by : c->challenger;
            cJSON_AddNumberToObject(o, "capacity", (double)(k + 1));
            cJSON_AddBoolToObject(o, "on_front", c->dominated_by < 0);
            if (a >= 0) cJSON_AddItemToObject(o, "test", test_json(&c->cmp, wv[a].id));
            cJSON_AddItemToArray(caps, o);
        }
    }
    return d;
}

/* The record of a dropped variant (manifest "winnowed"). */
static cJSON *dropped_json(const struct cat_wv *wv, size_t i, const char *technique)
{
    const struct cat_wv *v = &wv[i], *by = &wv[v->dominated_by];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "id", v->id);
    cJSON_AddStringToObject(e, "task", v->task);
    cJSON_AddStringToObject(e, "dominated_by", by->id);
    cJSON_AddStringToObject(e, "technique", technique);
    cJSON_AddNumberToObject(e, "macs", (double)v->macs);
    cJSON_AddNumberToObject(e, "weight_bytes", (double)v->weight_bytes);
    cJSON_AddNumberToObject(e, "top1", v->top1);
    cJSON_AddItemToObject(e, "top1_ci", cJSON_CreateDoubleArray((const double[]){round(v->lo * 1e6) / 1e6, round(v->hi * 1e6) / 1e6}, 2));
    cJSON_AddNumberToObject(e, "by_macs", (double)by->macs);
    cJSON_AddNumberToObject(e, "by_weight_bytes", (double)by->weight_bytes);
    cJSON_AddNumberToObject(e, "by_top1", by->top1);
    cJSON_AddItemToObject(e, "by_top1_ci", cJSON_CreateDoubleArray((const double[]){round(by->lo * 1e6) / 1e6, round(by->hi * 1e6) / 1e6}, 2));
    cJSON_AddItemToObject(e, "test", test_json(&v->cmp, by->id));
    return e;
}

/* The winnowing view of input i (costs, accuracy, dependencies, head trunk,
 * capacities, per-image data). deps/caps/bufs hold what it points to. */
static int describe_input(struct input *ins, size_t n, size_t i, const cJSON *base, struct cat_wv *w,
                          const char ***deps, struct cat_wcap **caps, unsigned char **bufs, struct prefixed *rep,
                          trn_err *err)
{
    const cJSON *v = ins[i].json, *d;
    w->id = ins[i].id;
    w->task = cJSON_GetObjectItemCaseSensitive(v, "task")->valuestring;
    /* an early-exit variant costs its expected MACs per input at the
     * default alpha (describe.c), not its trunk's, and its weight bytes
     * are the trunk's and the exits' */
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(v, "cost");
    const cJSON *xm = cJSON_GetObjectItemCaseSensitive(cost, "expected_macs");
    w->macs = cJSON_IsNumber(xm) ? (uint64_t)xm->valuedouble : cost_of(v, "macs");
    const cJSON *xw = cJSON_GetObjectItemCaseSensitive(cost, "exits_weight_bytes");
    w->weight_bytes = cost_of(v, "weight_bytes") + (cJSON_IsNumber(xw) ? (uint64_t)xw->valuedouble : 0);
    w->top1 = top1_of(v);
    w->images = images_of(v);
    const cJSON *dl = cJSON_GetObjectItemCaseSensitive(v, "depends_on");
    if (!(*deps = calloc((size_t)cJSON_GetArraySize(dl) + 1, sizeof **deps))) return trn_errf(err, "out of memory");
    /* An add-on's dependencies on its base catalog's variants are met
     * there (the device checks the base at install). */
    cJSON_ArrayForEach(d, dl) {
        int local = 0;
        for (size_t k = 0; k < n; k++) local |= !strcmp(ins[k].id, d->valuestring);
        if (local || !base || !in_base(base, d->valuestring)) (*deps)[w->ndeps++] = d->valuestring;
    }
    w->deps = *deps;
    const char *technique = cJSON_GetObjectItemCaseSensitive(v, "technique")->valuestring;
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(v, "parent");
    if (!strcmp(technique, TECHNIQUE_HEAD) && cJSON_IsString(par)) w->trunk = par->valuestring;
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), w->task);
    const cJSON *pr = cJSON_GetObjectItemCaseSensitive(v, "predictions");
    struct prefixed local = {rep->report, rep->user, ins[i].dir, 0};
    if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(pr, "path")) && w->top1 >= 0)
        load_img(&ins[i], cat_json_str(pr, "path", ""), "/predictions/path", cat_json_str(acc, "split", NULL),
                 w->images, w->top1, &w->img, &bufs[0], &local);
    /* A nested variant's capacities: judged one by one (cat.h). */
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "technique_fields"),
                                                       "capacities"), *c;
    if (!strcmp(technique, TECHNIQUE_NESTED) && cJSON_GetArraySize(cl) > 0) {
        if (!(*caps = calloc((size_t)cJSON_GetArraySize(cl), sizeof **caps))) return trn_errf(err, "out of memory");
        cJSON_ArrayForEach(c, cl) {
            struct cat_wcap *k = &(*caps)[w->ncaps++];
            const cJSON *test = cJSON_GetObjectItemCaseSensitive(c, "test"), *cp;
            k->macs = (uint64_t)cat_json_num(c, "macs", 0);
            k->weight_bytes = (uint64_t)cat_json_num(c, "weight_bytes", 0);
            k->top1 = cat_json_num(test, "top1", cat_json_num(c, "top1", -1));
            double im = cat_json_num(test, "images", 0);
            k->images = im >= 1 ? (uint64_t)im : 0;
            int pos = 0;
            cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(pr, "capacities")) {
                char ptr[64];
                snprintf(ptr, sizeof ptr, "/predictions/capacities/%d", pos++);
                if (cat_json_num(cp, "capacity", 0) == cat_json_num(c, "capacity", -1) && k->top1 >= 0 && w->ncaps < WBUFS)
                    load_img(&ins[i], cat_json_str(cp, "path", ""), ptr, cat_json_str(test, "split", NULL), k->images,
                             k->top1, &k->img, &bufs[w->ncaps], &local);
            }
        }
        w->caps = *caps;
    }
    rep->count += local.count;
    return 0;
}

static int winnow(struct input *ins, size_t n, unsigned char *keep, struct cat_built *out,
                  const struct cat_build_options *o, struct prefixed *rep, trn_err *err)
{
    struct cat_wv *wv = calloc(n ? n : 1, sizeof *wv);
    const char ***deps = calloc(n ? n : 1, sizeof *deps);
    struct cat_wcap **caps = calloc(n ? n : 1, sizeof *caps);
    unsigned char **bufs = calloc((n ? n : 1) * WBUFS, sizeof *bufs);
    int rc = wv && deps && caps && bufs ? 0 : trn_errf(err, "out of memory");
    int before = rep->count;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = describe_input(ins, n, i, o->base, &wv[i], &deps[i], &caps[i], bufs + i * WBUFS, rep, err);
    for (size_t k = 0; rc == 0 && k < o->nkeep; k++) {
        size_t i = 0;
        while (i < n && strcmp(wv[i].id, o->keep[k])) i++;
        if (i < n) wv[i].keep = 1;
        else say(rep, NULL, "--keep %s: no variant folder %s/ holds that variant", o->keep[k], o->keep[k]);
    }
    if (rc == 0 && rep->count == before && cat_winnow(wv, n, err) < 0) rc = -1;
    cJSON *dropped = cJSON_CreateArray(), *needed = cJSON_CreateArray(), *requested = cJSON_CreateArray();
    cJSON *kept = cJSON_CreateArray();
    out->decisions = cJSON_CreateObject();
    for (size_t i = 0; rc == 0 && rep->count == before && i < n; i++) {
        keep[i] = !wv[i].dropped;
        if (wv[i].dropped) {
            cJSON_AddItemToArray(dropped, dropped_json(wv, i, cJSON_GetObjectItemCaseSensitive(ins[i].json, "technique")->valuestring));
            continue;
        }
        cJSON *dj = decision_json(wv, i);
        cJSON_AddItemToObject(out->decisions, wv[i].id, dj);
        cJSON *e = cJSON_Duplicate(dj, 1);
        cJSON_AddStringToObject(e, "id", wv[i].id);
        cJSON_AddStringToObject(e, "task", wv[i].task);
        cJSON_AddItemToArray(kept, e);
        if (wv[i].keep) cJSON_AddItemToArray(requested, cJSON_CreateString(wv[i].id));
        if (wv[i].needed_by >= 0) {
            cJSON *ne = cJSON_CreateObject();
            cJSON_AddStringToObject(ne, "id", wv[i].id);
            cJSON_AddStringToObject(ne, "task", wv[i].task);
            cJSON_AddStringToObject(ne, "dominated_by", wv[wv[i].dominated_by].id);
            cJSON_AddStringToObject(ne, "needed_by", wv[wv[i].needed_by].id);
            cJSON_AddItemToArray(needed, ne);
        }
    }
    out->winnowed = cJSON_CreateObject();
    cJSON_AddStringToObject(out->winnowed, "rule",
                            "B dominates A (same task) when B has no more MACs and no more weight bytes and either "
                            "a clearly better top-1 or fewer MACs or weight bytes at a top-1 not clearly worse; "
                            "clearly better: McNemar's exact test on the same test images at the 5% level (95% "
                            "Wilson intervals apart where a variant has no per-image record); decided cheapest "
                            "first, a variant is dropped when a kept variant dominates it, unless it is kept by "
                            "request or a kept variant depends on it; a nested variant is kept while any capacity "
                            "is on the front (no kept variant at no more cost clearly better)");
    cJSON_AddItemToObject(out->winnowed, "dropped", dropped);
    cJSON_AddItemToObject(out->winnowed, "kept_because_needed", needed);
    cJSON_AddItemToObject(out->winnowed, "kept_by_request", requested);
    cJSON_AddItemToObject(out->winnowed, "kept", kept);
    for (size_t i = 0; deps && i < n; i++) free(deps[i]);
    for (size_t i = 0; caps && i < n; i++) free(caps[i]);
    for (size_t i = 0; bufs && i < n * WBUFS; i++) free(bufs[i]);
    free(bufs);
    free(deps);
    free(caps);
    free(wv);
    return rc;
}

int cat_build(const struct cat_build_options *o, struct cat_built *out, cat_report_fn report, void *user,
              trn_err *err)
{
    memset(out, 0, sizeof *out);
    struct prefixed rep = {report, user, o->variants_dir, 0};
    size_t n = 0;
    char **names = sorted_subdirs(o->variants_dir, &n, err);
    if (!names) return -1;
    struct input *ins = calloc(n ? n : 1, sizeof *ins);
    unsigned char *keep = calloc(n ? n : 1, 1);
    cat_schema *schema = cat_schema_builtin(err);
    cJSON *targets = NULL, *tasks = NULL, *variants = NULL;
    int rc = ins && keep && schema ? 0 : -1;
    if (rc == 0 && n == 0) {
        say(&rep, NULL, "holds no variant folder");
    }
    const char *model = o->model;
    int64_t newest = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", o->variants_dir, names[i]);
        ins[i].dir = strdup(dir);
        rc = read_variant(schema, dir, names[i], model, &ins[i], &rep, err);
        if (!model && ins[i].json && ins[i].id)
            model = cJSON_GetObjectItemCaseSensitive(ins[i].json, "model")->valuestring;
        if (ins[i].newest_mtime > newest) newest = ins[i].newest_mtime;
    }
    if (rc == 0 && rep.count == 0) rc = winnow(ins, n, keep, out, o, &rep, err);
    if (rc == 0 && rep.count == 0) {
        int64_t sde = o->source_date_epoch >= 0 ? o->source_date_epoch : newest;
        uint64_t version = o->version ? o->version : (uint64_t)sde;
        out->source_date_epoch_from = strdup(o->source_date_epoch >= 0 ? "SOURCE_DATE_EPOCH" : "newest input mtime");
        if (version == 0) rc = trn_errf(err, "no version: give --version N (or SOURCE_DATE_EPOCH)");
        if (rc == 0) rc = make_fragments(ins, n, keep, version, err);
        if (rc == 0 && !(targets = o->no_targets ? cJSON_CreateObject() : cat_targets_load(o->targets_dir, err))) rc = -1;
        if (rc == 0 && !(tasks = build_tasks(o, ins, n, keep, &rep, err))) rc = -1;
        if (rc == 0 && !(variants = cJSON_CreateArray())) rc = trn_errf(err, "out of memory");
        size_t nfiles = 0;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (!keep[i]) continue;
            cJSON *v = manifest_variant(&ins[i], targets, err);
            if (!v) rc = -1;
            else cJSON_AddItemToArray(variants, v);
            const cJSON *dj = cJSON_GetObjectItemCaseSensitive(out->decisions, ins[i].id);
            if (v && dj) cJSON_AddItemToObject(v, "winnowing", cJSON_Duplicate(dj, 1));
            nfiles += ins[i].nfiles;
        }
        if (rc == 0 && rep.count == 0) {
            cJSON *m = out->manifest = cJSON_CreateObject(), *build = cJSON_CreateObject();
            cJSON_AddNumberToObject(m, "schema", 1);
            cJSON_AddStringToObject(m, "catalog", o->catalog ? o->catalog : model);
            cJSON_AddStringToObject(m, "model", model);
            cJSON_AddNumberToObject(m, "version", (double)version);
            cJSON_AddStringToObject(build, "toolchain", "catalog " CAT_VERSION);
#if defined(__clang__)
            cJSON_AddStringToObject(build, "compiler", "clang " __clang_version__);
#elif defined(__GNUC__)
            cJSON_AddStringToObject(build, "compiler", "gcc " __VERSION__);
#else
            cJSON_AddStringToObject(build, "compiler", "unknown");
#endif
            /* The products' path on this CPU (the machine that trained the
             * variants in `make catalog`): the bytes depend on it. */
            char gemm[256];
            trn_gemm_describe(gemm, sizeof gemm);
            cJSON_AddStringToObject(build, "gemm", gemm);
            if (o->seed >= 0) cJSON_AddNumberToObject(build, "seed", (double)o->seed);
            else cJSON_AddNullToObject(build, "seed");
            cJSON_AddNumberToObject(build, "source_date_epoch", (double)sde);
            cJSON_AddItemToObject(m, "build", build);
            cJSON_AddItemToObject(m, "tasks", tasks);
            cJSON_AddItemToObject(m, "targets", targets);
            cJSON_AddItemToObject(m, "variants", variants);
            cJSON_AddItemToObject(m, "winnowed", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(out->winnowed, "dropped"), 1));
            if (o->base) {
                cJSON *b = cJSON_AddObjectToObject(m, "base"), *ids = cJSON_CreateArray();
                const cJSON *bv;
                cJSON_AddStringToObject(b, "catalog", cat_json_str(o->base, "catalog", ""));
                cJSON_AddNumberToObject(b, "version",
                                        cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o->base, "version")));
                cJSON_ArrayForEach(bv, cJSON_GetObjectItemCaseSensitive(o->base, "variants"))
                    cJSON_AddItemToArray(ids, cJSON_CreateString(cat_json_str(bv, "id", "")));
                cJSON_AddItemToObject(b, "variants", ids);
            }
            tasks = targets = variants = NULL;
            cat_json_sort(m);
            struct prefixed self = {report, user, "the new manifest", 0};
            int bad = cat_validate(schema, m, NULL, prefixed_report, &self, err);
            if (bad < 0) rc = -1;
            rep.count += bad > 0 ? bad : 0;
            out->files = calloc(nfiles ? nfiles : 1, sizeof *out->files);
            for (size_t i = 0; rc == 0 && out->files && i < n; i++) {
                if (!keep[i]) continue;
                for (size_t k = 0; k < ins[i].nfiles; k++) { /* move, not copy */
                    out->files[out->nfiles++] = ins[i].files[k];
                    ins[i].files[k].archive_path = ins[i].files[k].source = NULL;
                }
            }
            if (!out->files) rc = trn_errf(err, "out of memory");
            else qsort(out->files, out->nfiles, sizeof *out->files, cmp_pack_file);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (ins) input_free(&ins[i]);
        free(names[i]);
    }
    free(names);
    free(ins);
    free(keep);
    cJSON_Delete(targets);
    cJSON_Delete(tasks);
    cJSON_Delete(variants);
    cat_schema_free(schema);
    if (rc == 0 && rep.count) rc = trn_errf(err, "%d problem%s in the variants (listed above)", rep.count,
                                            rep.count == 1 ? "" : "s");
    if (rc != 0) cat_built_free(out);
    return rc;
}
