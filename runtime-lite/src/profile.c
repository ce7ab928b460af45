/*
 * profile.c: latencies measured on this device (`rtl profile`), kept beside
 * the installed copies of a catalog, and the description of this machine.
 *
 * ROOT/catalogs/<id>/profile.json (never inside a copy: copies are signed
 * and never modified):
 *   { "schema": 1, "catalog": ID,
 *     "entries": [ { "variant": ID, "files_sha256": HEX64,
 *                    "where": "device", "source": "measured",
 *                    "machine": STRING, "threads": N, "batch": 1,
 *                    "warmup": N, "runs": N >= 1,
 *                    "ms_median": x, "ms_mean": x,
 *                    "measured_at": UNIX_TIME, "catalog_version": N,
 *                    "gap_ms": x (only when > 0: idle time before each
 *                    timed run, `rtl profile --gap-ms`) } ... ] }
 * files_sha256 is the SHA-256 of the lines "<path>\t<sha256 hex>\n" of the
 * variant's files in manifest order: an entry counts for a variant only
 * while its files are the ones measured, across catalog versions. Entries
 * are sorted by variant, then threads. The file is replaced atomically
 * (trn_write_file_atomic: temporary file, fsync, rename, fsync of the
 * folder) while an exclusive flock on ROOT/catalogs/<id> is held, so two
 * profilers never lose each other's entries; readers need no lock.
 */
#include "catalog.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/utsname.h>
#include <unistd.h>

#define PROFILE_MAX (4u << 20)

/* The hex SHA-256 that ties an entry to v's files (see the top). */
static void files_digest(const rtl_variant *v, char hex[65])
{
    rtl_sha256 st;
    rtl_sha256_init(&st);
    for (size_t i = 0; i < v->nfiles; i++) {
        char sha[65];
        rtl_sha256_hex(v->files[i].sha256, sha);
        rtl_sha256_update(&st, v->files[i].path, strlen(v->files[i].path));
        rtl_sha256_update(&st, "\t", 1);
        rtl_sha256_update(&st, sha, 64);
        rtl_sha256_update(&st, "\n", 1);
    }
    uint8_t d[RTL_SHA256_BYTES];
    rtl_sha256_final(&st, d);
    rtl_sha256_hex(d, hex);
}

/* Reads and checks cat's profile. *root gets the parsed document (NULL when
 * there is no profile yet), which the caller deletes. */
static int profile_read(const rtl_catalog *cat, cJSON **root, rtl_err *err)
{
    *root = NULL;
    if (!cat->profile_path)
        return rtl_errf(err, "catalog %s was not opened from a store: it has no device profile", cat->id);
    char *text;
    size_t len;
    trn_err e;
    if (access(cat->profile_path, F_OK) != 0 && errno == ENOENT) return 0;
    if (trn_read_file(cat->profile_path, PROFILE_MAX, &text, &len, &e) != 0) return rtl_err_from_trn(err, &e);
    const char *end = NULL;
    cJSON *r = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    free(text);
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(r, "entries");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(r, "schema");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(r, "catalog");
    if (!cJSON_IsObject(r) || !cJSON_IsNumber(schema) || schema->valuedouble != 1 || !cJSON_IsString(id) ||
        strcmp(id->valuestring, cat->id) != 0 || !cJSON_IsArray(entries)) {
        cJSON_Delete(r);
        return rtl_errf(err, "%s is damaged (not a schema 1 profile of catalog %s): remove it and run "
                        "rtl profile again", cat->profile_path, cat->id);
    }
    const cJSON *en;
    cJSON_ArrayForEach(en, entries) {
        rtl_latency lat;
        rtl_err e2;
        const cJSON *var = cJSON_GetObjectItemCaseSensitive(en, "variant");
        const cJSON *dig = cJSON_GetObjectItemCaseSensitive(en, "files_sha256");
        if (!cJSON_IsString(var) || !cJSON_IsString(dig) ||
            rtl_latency_from_json(en, var->valuestring, "device", &lat, &e2) != 0) {
            cJSON_Delete(r);
            return rtl_errf(err, "%s is damaged (an entry lacks variant, files_sha256, ms_median or runs): "
                            "remove it and run rtl profile again", cat->profile_path);
        }
    }
    *root = r;
    return 0;
}

int rtl_profile_get(const rtl_catalog *cat, const char *id, rtl_latency *out, size_t max, size_t *n,
                    rtl_err *err)
{
    *n = 0;
    const rtl_variant *v = rtl_catalog_find(cat, id);
    if (!v) return rtl_errf(err, "catalog %s has no variant '%s'", cat->id, id);
    cJSON *root;
    if (profile_read(cat, &root, err) != 0) return -1;
    char digest[65];
    files_digest(v, digest);
    const cJSON *en;
    cJSON_ArrayForEach(en, cJSON_GetObjectItemCaseSensitive(root, "entries")) {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(en, "variant")->valuestring, id) != 0 ||
            strcmp(cJSON_GetObjectItemCaseSensitive(en, "files_sha256")->valuestring, digest) != 0)
            continue;
        rtl_latency lat;
        if (rtl_latency_from_json(en, id, "device", &lat, err) != 0) break; /* checked on reading */
        /* insertion by measured_at, newest first */
        size_t k = *n < max ? *n : max;
        while (k > 0 && out[k - 1].measured_at < lat.measured_at) {
            if (k < max) out[k] = out[k - 1];
            k--;
        }
        if (k < max) out[k] = lat;
        (*n)++;
    }
    cJSON_Delete(root);
    return 0;
}

/* One entry's JSON object. */
static cJSON *entry_json(const rtl_latency *l, const char *digest)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    int ok = cJSON_AddStringToObject(o, "variant", l->variant) &&
             cJSON_AddStringToObject(o, "files_sha256", digest) &&
             cJSON_AddStringToObject(o, "where", "device") &&
             cJSON_AddStringToObject(o, "source", "measured") &&
             cJSON_AddStringToObject(o, "machine", l->machine) &&
             cJSON_AddNumberToObject(o, "threads", l->threads) &&
             cJSON_AddNumberToObject(o, "batch", l->batch) &&
             cJSON_AddNumberToObject(o, "warmup", l->warmup) &&
             cJSON_AddNumberToObject(o, "runs", l->runs) &&
             cJSON_AddNumberToObject(o, "ms_median", l->ms_median) &&
             cJSON_AddNumberToObject(o, "ms_mean", l->ms_mean) &&
             cJSON_AddNumberToObject(o, "measured_at", (double)l->measured_at) &&
             cJSON_AddNumberToObject(o, "catalog_version", (double)l->catalog_version) &&
             (!(l->gap_ms > 0) || cJSON_AddNumberToObject(o, "gap_ms", l->gap_ms));
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static int cmp_entries(const void *a, const void *b)
{
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    int c = strcmp(cJSON_GetObjectItemCaseSensitive(x, "variant")->valuestring,
                   cJSON_GetObjectItemCaseSensitive(y, "variant")->valuestring);
    if (c) return c;
    double tx = cJSON_GetObjectItemCaseSensitive(x, "threads")->valuedouble;
    double ty = cJSON_GetObjectItemCaseSensitive(y, "threads")->valuedouble;
    return (tx > ty) - (tx < ty);
}

/* Whether entry en (of the profile) is replaced by new[0..n) or belongs to
 * no variant of cat any more. */
static int entry_dropped(const rtl_catalog *cat, const cJSON *en, const rtl_latency *lat, size_t n)
{
    const char *var = cJSON_GetObjectItemCaseSensitive(en, "variant")->valuestring;
    const char *dig = cJSON_GetObjectItemCaseSensitive(en, "files_sha256")->valuestring;
    const cJSON *th = cJSON_GetObjectItemCaseSensitive(en, "threads");
    const rtl_variant *v = rtl_catalog_find(cat, var);
    char digest[65];
    if (!v) return 1;
    files_digest(v, digest);
    if (strcmp(digest, dig) != 0) return 1;
    for (size_t i = 0; i < n; i++)
        if (strcmp(lat[i].variant, var) == 0 && cJSON_IsNumber(th) && th->valuedouble == lat[i].threads) return 1;
    return 0;
}

/* The merged profile as text (new entries, and the kept old ones, sorted). */
static char *profile_merge(const rtl_catalog *cat, const cJSON *old, const rtl_latency *lat, size_t n,
                           rtl_err *err)
{
    size_t nold = old ? (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(old, "entries")) : 0;
    cJSON **all = calloc(nold + n + 1, sizeof *all);
    cJSON *root = cJSON_CreateObject(), *entries = NULL;
    char *text = NULL;
    size_t k = 0;
    if (!all || !root) goto oom;
    for (size_t i = 0; i < n; i++) {
        char digest[65];
        files_digest(rtl_catalog_find(cat, lat[i].variant), digest);
        if (!(all[k++] = entry_json(&lat[i], digest))) goto oom;
    }
    const cJSON *en;
    cJSON_ArrayForEach(en, cJSON_GetObjectItemCaseSensitive(old, "entries")) {
        if (entry_dropped(cat, en, lat, n)) continue;
        if (!(all[k++] = cJSON_Duplicate(en, 1))) goto oom;
    }
    qsort(all, k, sizeof *all, cmp_entries);
    if (!cJSON_AddNumberToObject(root, "schema", 1) || !cJSON_AddStringToObject(root, "catalog", cat->id) ||
        !(entries = cJSON_AddArrayToObject(root, "entries")))
        goto oom;
    for (size_t i = 0; i < k; i++) {
        cJSON_AddItemToArray(entries, all[i]);
        all[i] = NULL;
    }
    text = cJSON_Print(root);
    if (!text) goto oom;
    free(all);
    cJSON_Delete(root);
    return text;
oom:
    for (size_t i = 0; all && i < k; i++) cJSON_Delete(all[i]);
    free(all);
    cJSON_Delete(root);
    rtl_errf(err, "out of memory");
    return NULL;
}

int rtl_profile_save(rtl_catalog *cat, const rtl_latency *lat, size_t n, rtl_err *err)
{
    if (!cat->profile_path)
        return rtl_errf(err, "catalog %s was not opened from a store: it has no device profile", cat->id);
    for (size_t i = 0; i < n; i++) {
        if (!rtl_catalog_find(cat, lat[i].variant))
            return rtl_errf(err, "catalog %s has no variant '%s'", cat->id, lat[i].variant);
        if (lat[i].runs < 1 || !(lat[i].ms_median >= 0) || !(lat[i].ms_mean >= 0) || lat[i].threads < 1)
            return rtl_errf(err, "variant '%s': a measurement needs runs >= 1, threads >= 1 and times >= 0",
                            lat[i].variant);
    }
    char folder[4096];
    snprintf(folder, sizeof folder, "%.*s", (int)(strrchr(cat->profile_path, '/') - cat->profile_path),
             cat->profile_path);
    int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return rtl_errf(err, "cannot open %s: %s", folder, strerror(errno));
    if (flock(fd, LOCK_EX) != 0) {
        int e = errno;
        close(fd);
        return rtl_errf(err, "cannot lock %s: %s", folder, strerror(e));
    }
    cJSON *old;
    int rc = -1;
    if (profile_read(cat, &old, err) == 0) {
        char *text = profile_merge(cat, old, lat, n, err);
        trn_err e;
        if (text && trn_write_file_atomic(cat->profile_path, text, strlen(text), &e) != 0)
            rtl_err_from_trn(err, &e);
        else if (text)
            rc = 0;
        free(text);
        cJSON_Delete(old);
    }
    close(fd); /* releases the lock */
    return rc;
}

/* The first line of `path` that starts with `key` (then blanks and ':'), its
 * value into out; or the whole first line when key is NULL. 0 when found. */
static int read_line_value(const char *path, const char *key, char *out, size_t size)
{
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[512];
    int rc = -1;
    while (rc != 0 && fgets(line, sizeof line, f)) {
        const char *v = line;
        if (key) {
            size_t k = strlen(key);
            if (strncmp(line, key, k) != 0) continue;
            v = line + k;
            while (*v == ' ' || *v == '\t') v++;
            if (*v++ != ':') continue;
            while (*v == ' ') v++;
        }
        snprintf(out, size, "%.*s", (int)strcspn(v, "\n"), v);
        rc = out[0] ? 0 : -1;
        if (!key) break;
    }
    fclose(f);
    return rc;
}

void rtl_machine_describe(char *out, size_t size)
{
    char host[128] = "unknown-host", model[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "unknown-host");
    host[sizeof host - 1] = '\0';
    /* a board (Jetson: "NVIDIA Jetson Nano Developer Kit"; NUL-terminated) */
    if (read_line_value("/proc/device-tree/model", NULL, model, sizeof model) != 0 &&
        read_line_value("/proc/cpuinfo", "model name", model, sizeof model) != 0 &&
        read_line_value("/proc/cpuinfo", "Hardware", model, sizeof model) != 0)
        snprintf(model, sizeof model, "unknown model");
    struct utsname u;
    if (uname(&u) != 0) snprintf(u.machine, sizeof u.machine, "unknown");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(out, size, "%s: %s, %s, %ld cores", host, model, u.machine, cores < 1 ? 1L : cores);
}

/* Every output of rtl (rtl simulate --svg, rtl serve --port-file) goes
 * through the engine's writer, as the profile does, and its inputs through
 * its reader's check (rtl.h). */
int rtl_write_file(const char *path, const void *buf, size_t len, rtl_err *err)
{
    trn_err e;
    return trn_write_file_atomic(path, buf, len, &e) != 0 ? rtl_err_from_trn(err, &e) : 0;
}

int rtl_open_input(const char *path, rtl_err *err)
{
    trn_err e;
    int fd = trn_open_input(path, &e);
    if (fd < 0) rtl_err_from_trn(err, &e);
    return fd;
}
