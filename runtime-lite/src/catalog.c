/*
 * catalog.c: manifest.json as the runtime reads it, and the accessors of
 * rtl.h over it.
 *
 * The full format is specified by catalog/manifest.schema.json and checked at
 * build time by `catalog validate`; the device re-checks here, strictly, only
 * what it relies on (it never trusts the build side to be right):
 *   { "schema": 1, "catalog": ID, "model": ID, "version": N >= 1,
 *     "tasks": { NAME: { "classes": N, "labels": [STRING...] } ... },
 *     "variants": [ { "id": ID, "technique": STRING, "task": NAME,
 *                     "parent": ID|null, "depends_on": [ID...],
 *                     "description": STRING,
 *                     "files": [ { "role": STRING, "path": PATH,
 *                                  "size": N, "sha256": HEX64 } ... ],
 *                     "accuracy": { NAME: { "top1": x, "top5": x } },
 *                     "cost": { "macs": N, "params": N, "weight_bytes": N,
 *                               "peak_activation_bytes": N, ... },
 *                     "technique_fields": { ... } } ... ], ... }
 * with unique variant ids, depends_on naming variants of the manifest, every
 * file path of variant V under "variants/V/", and no path twice or inside
 * another file's path.
 */
#include "catalog.h"
#include "sha256.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int rtl_path_check(const char *path, rtl_err *err)
{
    size_t n = strlen(path);
    if (n == 0) return rtl_errf(err, "empty path");
    if (n > RTL_PATH_MAX) return rtl_errf(err, "path '%.80s...' is longer than %d bytes", path, RTL_PATH_MAX);
    if (path[0] == '/') return rtl_errf(err, "'%s' is an absolute path", path);
    const char *p = path;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) return rtl_errf(err, "'%s' has an empty path component", path);
        if (len == 2 && p[0] == '.' && p[1] == '.') return rtl_errf(err, "'%s' contains '..'", path);
        if (p[0] == '.') return rtl_errf(err, "'%s' has a component starting with '.'", path);
        for (size_t i = 0; i < len; i++) {
            char c = p[i];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-'))
                return rtl_errf(err, "'%s' contains the character 0x%02x (allowed: A-Z a-z 0-9 _ . - /)",
                                path, (unsigned char)c);
        }
        p += len;
        if (*p == '/') {
            p++;
            if (!*p) return rtl_errf(err, "'%s' ends with '/'", path);
        }
    }
    return 0;
}

/* The string at key of o ("" for an absent or null one when nullable), or
 * NULL with err naming `where`. */
static const char *str_field(const cJSON *o, const char *key, int nullable, rtl_err *err, const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (nullable && (!v || cJSON_IsNull(v))) return "";
    if (!cJSON_IsString(v)) {
        rtl_errf(err, "manifest: %s: \"%s\" is missing or not a string", where, key);
        return NULL;
    }
    return v->valuestring;
}

int rtl_json_u64(const cJSON *o, const char *key, uint64_t *out, rtl_err *err, const char *doc, const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return rtl_errf(err, "%s: %s: \"%s\" is missing or not a non-negative integer", doc, where, key);
    *out = (uint64_t)v->valuedouble;
    return 0;
}

static int u64_field(const cJSON *o, const char *key, uint64_t *out, rtl_err *err, const char *where)
{
    return rtl_json_u64(o, key, out, err, "manifest", where);
}

static int cmp_file_path(const void *a, const void *b)
{
    return strcmp((*(struct rtl_file *const *)a)->path, (*(struct rtl_file *const *)b)->path);
}

/* dir + "/" + path in a new string (path alone when dir is NULL). */
static char *join(const char *dir, const char *path)
{
    size_t a = dir ? strlen(dir) : 0, b = strlen(path);
    char *s = malloc(a + b + 2);
    if (!s) return NULL;
    if (a) {
        memcpy(s, dir, a);
        s[a++] = '/';
    }
    memcpy(s + a, path, b + 1);
    return s;
}

/* v's files: role, path (safe, under variants/<id>/), size, SHA-256. */
static int parse_files(rtl_catalog *cat, struct rtl_variant *v, const cJSON *files, rtl_err *err)
{
    char where[128];
    if (!cJSON_IsArray(files) || cJSON_GetArraySize(files) == 0)
        return rtl_errf(err, "manifest: variant '%s': \"files\" is missing or empty", v->id);
    v->nfiles = (size_t)cJSON_GetArraySize(files);
    v->files = calloc(v->nfiles, sizeof *v->files);
    if (!v->files) return rtl_errf(err, "manifest: out of memory");
    char prefix[RTL_ID_MAX + 16];
    snprintf(prefix, sizeof prefix, "variants/%s/", v->id);
    size_t i = 0;
    const cJSON *f;
    cJSON_ArrayForEach(f, files) {
        struct rtl_file *rf = &v->files[i];
        snprintf(where, sizeof where, "variant '%s' file %zu", v->id, i);
        const char *sha;
        if (!cJSON_IsObject(f)) return rtl_errf(err, "manifest: %s is not an object", where);
        if (!(rf->role = str_field(f, "role", 0, err, where)) || !(rf->path = str_field(f, "path", 0, err, where)) ||
            !(sha = str_field(f, "sha256", 0, err, where)) || u64_field(f, "size", &rf->size, err, where) != 0)
            return -1;
        if (rtl_path_check(rf->path, err) != 0) return rtl_err_prefix(err, "manifest: %s", where);
        if (strncmp(rf->path, prefix, strlen(prefix)) != 0)
            return rtl_errf(err, "manifest: %s: path '%s' is not under '%s'", where, rf->path, prefix);
        if (rtl_unhex(sha, rf->sha256, RTL_SHA256_BYTES) != 0)
            return rtl_errf(err, "manifest: %s: sha256 is not 64 lower-case hex digits", where);
        if (!(rf->abs = join(cat->dir, rf->path))) return rtl_errf(err, "manifest: out of memory");
        rf->variant = v;
        i++;
    }
    cat->nfiles += v->nfiles;
    return 0;
}

/* fragment_of (may be absent): {trunk, version, cut, trunk_sha256}. */
static int parse_fragment(struct rtl_variant *v, const cJSON *fo, rtl_err *err, const char *where)
{
    if (!fo) return 0;
    char w[160];
    snprintf(w, sizeof w, "%s fragment_of", where);
    const char *sha;
    uint64_t cut;
    if (!(v->trunk = str_field(fo, "trunk", 0, err, w)) || !(sha = str_field(fo, "trunk_sha256", 0, err, w)) ||
        u64_field(fo, "version", &v->trunk_version, err, w) != 0 || u64_field(fo, "cut", &cut, err, w) != 0)
        return -1;
    if (cut < 1 || cut > 1000000) return rtl_errf(err, "manifest: %s: cut %" PRIu64 " is not a layer", w, cut);
    v->cut = (int)cut;
    if (rtl_unhex(sha, v->trunk_sha256, RTL_SHA256_BYTES) != 0)
        return rtl_errf(err, "manifest: %s: trunk_sha256 is not 64 lower-case hex digits", w);
    return 0;
}

const struct rtl_file *rtl_variant_role_file(const struct rtl_variant *v, const char *role)
{
    for (size_t i = 0; i < v->nfiles; i++)
        if (!strcmp(v->files[i].role, role)) return &v->files[i];
    return NULL;
}

/* A fragment runs only on its trunk: a whole variant of this catalog, of
 * this version, whose weights file is the one the fragment was cut from. */
static int check_fragment(const rtl_catalog *cat, const struct rtl_variant *v, rtl_err *err)
{
    const struct rtl_variant *t = rtl_catalog_find(cat, v->trunk);
    const struct rtl_file *w = t ? rtl_variant_role_file(t, "weights") : NULL;
    if (!rtl_variant_role_file(v, "fragment") || !rtl_variant_role_file(v, "cfg"))
        return rtl_errf(err, "manifest: variant '%s' is a fragment without a file of role fragment and one of "
                        "role cfg", v->id);
    if (!t)
        return rtl_errf(err, "variant '%s' is a fragment of trunk '%s' (catalog %s version %" PRIu64 "), which "
                        "this catalog does not hold: it cannot run without it (nothing was changed)", v->id,
                        v->trunk, cat->id, v->trunk_version);
    if (v->trunk_version != cat->version)
        return rtl_errf(err, "variant '%s' is a fragment of trunk '%s' of version %" PRIu64 ", but this catalog "
                        "is version %" PRIu64 ": get the catalog built with it (nothing was changed)", v->id,
                        v->trunk, v->trunk_version, cat->version);
    if (!w || t->trunk)
        return rtl_errf(err, "variant '%s' is a fragment of '%s', which is not stored whole", v->id, v->trunk);
    if (memcmp(w->sha256, v->trunk_sha256, RTL_SHA256_BYTES) != 0)
        return rtl_errf(err, "variant '%s' is a fragment of another build of trunk '%s' (its trunk_sha256 is not "
                        "that of %s): refused (nothing was changed)", v->id, v->trunk, w->path);
    return 0;
}

/* One variant object into v; its strings stay owned by cat->root. */
static int parse_variant(rtl_catalog *cat, struct rtl_variant *v, const cJSON *o, size_t idx, rtl_err *err)
{
    char where[96];
    snprintf(where, sizeof where, "variant %zu", idx);
    if (!cJSON_IsObject(o)) return rtl_errf(err, "manifest: %s is not an object", where);
    if (!(v->id = str_field(o, "id", 0, err, where))) return -1;
    if (!rtl_id_ok(v->id)) return rtl_errf(err, "manifest: %s: id '%s' is not a valid id", where, v->id);
    snprintf(where, sizeof where, "variant '%s'", v->id);
    if (!(v->technique = str_field(o, "technique", 0, err, where)) ||
        !(v->task = str_field(o, "task", 0, err, where)) ||
        !(v->parent = str_field(o, "parent", 1, err, where)) ||
        !(v->description = str_field(o, "description", 1, err, where)))
        return -1;
    if (!v->parent[0]) v->parent = NULL;
    const cJSON *deps = cJSON_GetObjectItemCaseSensitive(o, "depends_on");
    if (deps && !cJSON_IsArray(deps)) return rtl_errf(err, "manifest: %s: \"depends_on\" is not an array", where);
    v->ndeps = deps ? (size_t)cJSON_GetArraySize(deps) : 0;
    if (v->ndeps && !(v->deps = calloc(v->ndeps, sizeof *v->deps))) return rtl_errf(err, "manifest: out of memory");
    size_t i = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, deps) {
        if (!cJSON_IsString(d)) return rtl_errf(err, "manifest: %s: depends_on holds a non-string", where);
        v->deps[i++] = d->valuestring;
    }
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(o, "cost");
    static const char *const cost_keys[] = {"macs", "params", "weight_bytes", "peak_activation_bytes"};
    _Static_assert(sizeof cost_keys / sizeof cost_keys[0] == RTL_COST_COUNT, "one key per rtl_cost");
    if (!cJSON_IsObject(cost)) return rtl_errf(err, "manifest: %s: \"cost\" is missing", where);
    for (int c = 0; c < RTL_COST_COUNT; c++)
        if (u64_field(cost, cost_keys[c], &v->cost[c], err, where) != 0) return -1;
    v->accuracy = cJSON_GetObjectItemCaseSensitive(o, "accuracy");
    v->latency = cJSON_GetObjectItemCaseSensitive(o, "latency");
    v->estimates = cJSON_GetObjectItemCaseSensitive(o, "estimates");
    if ((v->latency && !cJSON_IsObject(v->latency)) || (v->estimates && !cJSON_IsObject(v->estimates)))
        return rtl_errf(err, "manifest: %s: \"latency\" or \"estimates\" is not an object", where);
    if (parse_fragment(v, cJSON_GetObjectItemCaseSensitive(o, "fragment_of"), err, where) != 0) return -1;
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(o, "technique_fields");
    v->fields_json = tf ? cJSON_PrintUnformatted(tf) : strdup("{}");
    if (!v->fields_json) return rtl_errf(err, "manifest: out of memory");
    return parse_files(cat, v, cJSON_GetObjectItemCaseSensitive(o, "files"), err);
}

/* The tasks object: every task's labels, in manifest order. */
static int parse_tasks(rtl_catalog *cat, const cJSON *tasks, rtl_err *err)
{
    if (!cJSON_IsObject(tasks)) return rtl_errf(err, "manifest: \"tasks\" is missing or not an object");
    cat->ntasks = (size_t)cJSON_GetArraySize(tasks);
    if (cat->ntasks && (!(cat->tasks = calloc(cat->ntasks, sizeof *cat->tasks)) ||
                        !(cat->task_names = calloc(cat->ntasks, sizeof *cat->task_names))))
        return rtl_errf(err, "manifest: out of memory");
    size_t i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tasks) {
        struct rtl_task *rt = &cat->tasks[i++];
        rt->name = cat->task_names[i - 1] = t->string;
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(t, "labels");
        if (!cJSON_IsArray(labels))
            return rtl_errf(err, "manifest: task '%s': \"labels\" is missing or not an array", rt->name);
        rt->nlabels = (size_t)cJSON_GetArraySize(labels);
        if (rt->nlabels && !(rt->labels = calloc(rt->nlabels, sizeof *rt->labels)))
            return rtl_errf(err, "manifest: out of memory");
        size_t k = 0;
        const cJSON *l;
        cJSON_ArrayForEach(l, labels) {
            if (!cJSON_IsString(l)) return rtl_errf(err, "manifest: task '%s': a label is not a string", rt->name);
            rt->labels[k++] = l->valuestring;
        }
    }
    return 0;
}

/* Cross-references: unique ids, dependencies that exist, paths unique and
 * none inside another file's path (a file cannot also be a folder). */
static int check_refs(rtl_catalog *cat, rtl_err *err)
{
    for (size_t i = 0; i < cat->nvariants; i++) {
        const struct rtl_variant *v = &cat->variants[i];
        if (rtl_catalog_find(cat, v->id) != v)
            return rtl_errf(err, "manifest: variant id '%s' appears twice", v->id);
        /* An add-on's variants may depend on the base catalog's, which
         * its manifest lists ("base": {"variants"}). */
        const cJSON *base_ids = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cat->root, "base"), "variants"), *b;
        for (size_t d = 0; d < v->ndeps; d++) {
            int in_base = 0;
            cJSON_ArrayForEach(b, base_ids) in_base |= cJSON_IsString(b) && !strcmp(b->valuestring, v->deps[d]);
            if (!in_base && !rtl_catalog_find(cat, v->deps[d]))
                return rtl_errf(err, "manifest: variant '%s' depends on '%s', which is not in the manifest",
                                v->id, v->deps[d]);
        }
    }
    for (size_t i = 0; i < cat->nvariants; i++)
        if (cat->variants[i].trunk && check_fragment(cat, &cat->variants[i], err) != 0) return -1;
    if (cat->nfiles > RTL_FILES_MAX)
        return rtl_errf(err, "manifest: %zu files is more than the %d the runtime accepts", cat->nfiles, RTL_FILES_MAX);
    cat->by_path = calloc(cat->nfiles ? cat->nfiles : 1, sizeof *cat->by_path);
    if (!cat->by_path) return rtl_errf(err, "manifest: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < cat->nvariants; i++)
        for (size_t f = 0; f < cat->variants[i].nfiles; f++) cat->by_path[k++] = &cat->variants[i].files[f];
    qsort(cat->by_path, cat->nfiles, sizeof *cat->by_path, cmp_file_path);
    for (size_t i = 1; i < cat->nfiles; i++) {
        const char *a = cat->by_path[i - 1]->path, *b = cat->by_path[i]->path;
        size_t la = strlen(a);
        if (strcmp(a, b) == 0) return rtl_errf(err, "manifest: file '%s' is listed twice", a);
        if (strncmp(a, b, la) == 0 && b[la] == '/')
            return rtl_errf(err, "manifest: '%s' is a file and also the folder of '%s'", a, b);
    }
    return 0;
}

rtl_catalog *rtl_catalog_parse(const char *json, size_t len, const char *dir, rtl_err *err)
{
    if (len > RTL_MANIFEST_MAX) {
        rtl_errf(err, "manifest: %zu bytes is larger than the %u the runtime accepts", len, RTL_MANIFEST_MAX);
        return NULL;
    }
    rtl_catalog *cat = calloc(1, sizeof *cat);
    if (!cat) {
        rtl_errf(err, "manifest: out of memory");
        return NULL;
    }
    cat->lock_fd = -1;
    rtl_sha256_buf(json, len, cat->manifest_sha256); /* what a split request pins (peer.c) */
    cat->dir = strdup(dir ? dir : "");
    const char *end = NULL;
    cat->root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    while (cat->root && end < json + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    if (!cat->dir || !cat->root || end != json + len) {
        if (!cat->dir) rtl_errf(err, "manifest: out of memory");
        else if (end && end >= json && end <= json + len)
            rtl_errf(err, "manifest: JSON syntax error at byte offset %zu", (size_t)(end - json));
        else rtl_errf(err, "manifest: not valid JSON");
        rtl_catalog_close(cat);
        return NULL;
    }
    if (!dir) {
        free(cat->dir);
        cat->dir = NULL;
    }
    const cJSON *root = cat->root, *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *variants = cJSON_GetObjectItemCaseSensitive(root, "variants");
    int ok = 0;
    if (!cJSON_IsObject(root)) rtl_errf(err, "manifest: the top level is not an object");
    else if (rtl_json_unique_keys(root, "manifest", err) != 0)
        ;
    else if (!cJSON_IsNumber(schema) || schema->valuedouble != 1)
        rtl_errf(err, "manifest: \"schema\" is not 1: this runtime reads manifest schema 1 only");
    else if (!(cat->id = str_field(root, "catalog", 0, err, "top level")) ||
             !(cat->model = str_field(root, "model", 0, err, "top level")) ||
             u64_field(root, "version", &cat->version, err, "top level") != 0)
        ;
    else if (!rtl_id_ok(cat->id) || !rtl_id_ok(cat->model))
        rtl_errf(err, "manifest: catalog '%s' or model '%s' is not a valid id", cat->id, cat->model);
    else if (cat->version == 0) rtl_errf(err, "manifest: version 0 (versions start at 1)");
    else if (parse_tasks(cat, cJSON_GetObjectItemCaseSensitive(root, "tasks"), err) != 0)
        ;
    else if (!cJSON_IsArray(variants) || cJSON_GetArraySize(variants) == 0)
        rtl_errf(err, "manifest: \"variants\" is missing or empty");
    else
        ok = 1;
    if (ok) {
        cat->nvariants = (size_t)cJSON_GetArraySize(variants);
        cat->variants = calloc(cat->nvariants, sizeof *cat->variants);
        if (!cat->variants) {
            rtl_errf(err, "manifest: out of memory");
            ok = 0;
        }
        size_t i = 0;
        const cJSON *v;
        cJSON_ArrayForEach(v, variants) {
            if (!ok || parse_variant(cat, &cat->variants[i], v, i, err) != 0) {
                ok = 0;
                break;
            }
            i++;
        }
    }
    if (ok && check_refs(cat, err) != 0) ok = 0;
    if (!ok) {
        rtl_catalog_close(cat);
        return NULL;
    }
    return cat;
}

void rtl_shared_maps_free(rtl_catalog *cat)
{
    for (size_t i = 0; i < cat->nmaps; i++) munmap(cat->maps[i].map, cat->maps[i].len);
    free(cat->maps);
    cat->maps = NULL;
    cat->nmaps = 0;
}

void rtl_catalog_close(rtl_catalog *cat)
{
    if (!cat) return;
    rtl_shared_maps_free(cat);
    for (size_t i = 0; cat->variants && i < cat->nvariants; i++) {
        struct rtl_variant *v = &cat->variants[i];
        for (size_t f = 0; v->files && f < v->nfiles; f++) free(v->files[f].abs);
        free(v->files);
        free(v->deps);
        free(v->fields_json);
    }
    for (size_t i = 0; cat->tasks && i < cat->ntasks; i++) free(cat->tasks[i].labels);
    free(cat->tasks);
    free(cat->task_names);
    free(cat->variants);
    free(cat->by_path);
    free(cat->dir);
    free(cat->profile_path);
    cJSON_Delete(cat->root);
    if (cat->lock_fd >= 0) close(cat->lock_fd);
    free(cat);
}

struct rtl_file *rtl_catalog_lookup(const rtl_catalog *cat, const char *path)
{
    size_t lo = 0, hi = cat->nfiles;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(cat->by_path[mid]->path, path);
        if (c == 0) return cat->by_path[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const char *rtl_catalog_id(const rtl_catalog *cat) { return cat->id; }
const char *rtl_catalog_model(const rtl_catalog *cat) { return cat->model; }
uint64_t rtl_catalog_version(const rtl_catalog *cat) { return cat->version; }
const char *rtl_catalog_dir(const rtl_catalog *cat) { return cat->dir ? cat->dir : ""; }
size_t rtl_catalog_task_count(const rtl_catalog *cat) { return cat->ntasks; }

const char *rtl_catalog_task_name(const rtl_catalog *cat, size_t i)
{
    return i < cat->ntasks ? cat->tasks[i].name : NULL;
}

const char *const *rtl_catalog_task_labels(const rtl_catalog *cat, const char *name, size_t *n)
{
    for (size_t i = 0; i < cat->ntasks; i++)
        if (strcmp(cat->tasks[i].name, name) == 0) {
            if (n) *n = cat->tasks[i].nlabels;
            return cat->tasks[i].labels;
        }
    if (n) *n = 0;
    return NULL;
}

size_t rtl_catalog_variant_count(const rtl_catalog *cat) { return cat->nvariants; }

int rtl_catalog_describe(const rtl_catalog *cat, rtl_catalog_info *out, size_t out_size, rtl_err *err)
{
    rtl_catalog_info in;
    memset(&in, 0, sizeof in); /* the padding too: callers may compare bytes */
    in.id = cat->id;
    in.model = cat->model;
    in.version = cat->version;
    in.dir = rtl_catalog_dir(cat);
    in.task_count = cat->ntasks;
    in.task_names = cat->task_names;
    in.variant_count = cat->nvariants;
    return rtl_describe_copy(out, out_size, &in, sizeof in, RTL_CATALOG_INFO_V1, "rtl_catalog_info", err);
}

const rtl_variant *rtl_catalog_variant_at(const rtl_catalog *cat, size_t i)
{
    return i < cat->nvariants ? &cat->variants[i] : NULL;
}

const rtl_variant *rtl_catalog_find(const rtl_catalog *cat, const char *id)
{
    for (size_t i = 0; i < cat->nvariants; i++)
        if (strcmp(cat->variants[i].id, id) == 0) return &cat->variants[i];
    return NULL;
}

const char *rtl_variant_id(const rtl_variant *v) { return v->id; }
const char *rtl_variant_technique(const rtl_variant *v) { return v->technique; }
const char *rtl_variant_task(const rtl_variant *v) { return v->task; }
const char *rtl_variant_parent(const rtl_variant *v) { return v->parent; }
const char *rtl_variant_description(const rtl_variant *v) { return v->description; }
size_t rtl_variant_depends_count(const rtl_variant *v) { return v->ndeps; }
const char *rtl_variant_depends_at(const rtl_variant *v, size_t i) { return i < v->ndeps ? v->deps[i] : NULL; }
size_t rtl_variant_file_count(const rtl_variant *v) { return v->nfiles; }
const char *rtl_variant_file_role(const rtl_variant *v, size_t i) { return i < v->nfiles ? v->files[i].role : NULL; }
const char *rtl_variant_file_path(const rtl_variant *v, size_t i) { return i < v->nfiles ? v->files[i].abs : NULL; }
uint64_t rtl_variant_file_size(const rtl_variant *v, size_t i) { return i < v->nfiles ? v->files[i].size : 0; }
const char *rtl_variant_fields_json(const rtl_variant *v) { return v->fields_json; }

const char *rtl_variant_file(const rtl_variant *v, const char *role)
{
    for (size_t i = 0; i < v->nfiles; i++)
        if (strcmp(v->files[i].role, role) == 0) return v->files[i].abs;
    return NULL;
}

uint64_t rtl_variant_cost(const rtl_variant *v, enum rtl_cost which)
{
    return (unsigned)which < RTL_COST_COUNT ? v->cost[which] : 0;
}

int rtl_variant_accuracy(const rtl_variant *v, const char *task, double *top1, double *top5)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(v->accuracy, task ? task : v->task);
    const cJSON *t1 = cJSON_GetObjectItemCaseSensitive(a, "top1");
    const cJSON *t5 = cJSON_GetObjectItemCaseSensitive(a, "top5");
    if (top1) *top1 = cJSON_IsNumber(t1) ? t1->valuedouble : -1;
    if (top5) *top5 = cJSON_IsNumber(t5) ? t5->valuedouble : -1;
    return cJSON_IsNumber(t1) ? 0 : -1;
}

/* The number at key of o, or `def` when absent or not a number. */
static double num_or(const cJSON *o, const char *key, double def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : def;
}

static const char *str_or(const cJSON *o, const char *key, const char *def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : def;
}

int rtl_latency_from_json(const cJSON *o, const char *variant, const char *where, rtl_latency *out,
                          rtl_err *err)
{
    memset(out, 0, sizeof *out);
    const cJSON *med = cJSON_GetObjectItemCaseSensitive(o, "ms_median");
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(o, "runs");
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(med) || !cJSON_IsNumber(runs) || med->valuedouble < 0 ||
        runs->valuedouble < 1 || runs->valuedouble > 4294967295.0)
        return rtl_errf(err, "variant '%s': latency on '%s' lacks ms_median or runs", variant, where);
    snprintf(out->variant, sizeof out->variant, "%s", variant);
    snprintf(out->where, sizeof out->where, "%s", where);
    snprintf(out->source, sizeof out->source, "%s", str_or(o, "source", "measured"));
    snprintf(out->machine, sizeof out->machine, "%s", str_or(o, "machine", ""));
    out->threads = (int)num_or(o, "threads", 0);
    out->batch = (int)num_or(o, "batch", 1);
    out->warmup = (uint32_t)num_or(o, "warmup", 0);
    out->runs = (uint32_t)runs->valuedouble;
    out->ms_median = med->valuedouble;
    out->ms_mean = num_or(o, "ms_mean", med->valuedouble);
    out->measured_at = (int64_t)num_or(o, "measured_at", -1);
    out->catalog_version = (uint64_t)num_or(o, "catalog_version", 0);
    out->gap_ms = num_or(o, "gap_ms", 0);
    return 0;
}

int rtl_variant_latency(const rtl_variant *v, const char *where, rtl_latency *out, rtl_err *err)
{
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(v->latency, where);
    if (!o) return rtl_errf(err, "variant '%s' has no latency measured on '%s'", v->id, where);
    return rtl_latency_from_json(o, v->id, where, out, err);
}

size_t rtl_variant_estimate_count(const rtl_variant *v)
{
    return v->estimates ? (size_t)cJSON_GetArraySize(v->estimates) : 0;
}

int rtl_variant_describe(const rtl_variant *v, rtl_variant_info *out, size_t out_size, rtl_err *err)
{
    rtl_variant_info in;
    memset(&in, 0, sizeof in); /* the padding too: callers may compare bytes */
    in.id = rtl_variant_id(v);
    in.technique = rtl_variant_technique(v);
    in.task = rtl_variant_task(v);
    in.parent = rtl_variant_parent(v);
    in.file_count = rtl_variant_file_count(v);
    in.macs = v->cost[RTL_COST_MACS];
    in.params = v->cost[RTL_COST_PARAMS];
    in.weight_bytes = v->cost[RTL_COST_WEIGHT_BYTES];
    in.peak_activation_bytes = v->cost[RTL_COST_PEAK_ACTIVATION_BYTES];
    in.estimate_count = rtl_variant_estimate_count(v);
    return rtl_describe_copy(out, out_size, &in, sizeof in, RTL_VARIANT_INFO_V1, "rtl_variant_info", err);
}

int rtl_variant_estimate_at(const rtl_variant *v, size_t i, rtl_estimate *out)
{
    const cJSON *e = i < rtl_variant_estimate_count(v) ? cJSON_GetArrayItem(v->estimates, (int)i) : NULL;
    if (!cJSON_IsObject(e) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "ms"))) return -1;
    out->target = e->string;
    out->method = str_or(e, "method", "");
    out->bound = str_or(e, "bound", "");
    out->ms = num_or(e, "ms", -1);
    out->mj = num_or(e, "mj", -1);
    out->compute_unit = str_or(e, "compute_unit", "");
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(e, "cpu");
    out->cpu_ms = cJSON_IsObject(cpu) ? num_or(cpu, "ms", -1) : -1;
    out->cpu_mj = cJSON_IsObject(cpu) ? num_or(cpu, "mj", -1) : -1;
    out->cpu_unit = cJSON_IsObject(cpu) ? str_or(cpu, "compute_unit", "") : "";
    return 0;
}
