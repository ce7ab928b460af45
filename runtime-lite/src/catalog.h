/* catalog.h: the parsed manifest as the runtime holds it (private). */
#ifndef RTL_CATALOG_H
#define RTL_CATALOG_H

#include "internal.h"

#include <cjson/cJSON.h>

/* Largest manifest.json the runtime accepts, and the most files. */
#define RTL_MANIFEST_MAX (16u << 20)
#define RTL_FILES_MAX 100000
#define RTL_PATH_MAX 255

struct rtl_file {
    const char *role;
    const char *path;      /* archive path, e.g. "variants/base/variant.cfg" */
    char *abs;             /* dir + "/" + path (or path when no dir) */
    uint64_t size;
    uint8_t sha256[RTL_SHA256_BYTES];
    const struct rtl_variant *variant;
};

struct rtl_variant {
    const char *id, *technique, *task, *parent, *description;
    const char **deps;
    size_t ndeps;
    struct rtl_file *files;
    size_t nfiles;
    uint64_t cost[RTL_COST_COUNT];
    const cJSON *accuracy;
    const cJSON *latency;    /* {where: measured figures} or NULL */
    const cJSON *estimates;  /* {target: estimate} or NULL */
    char *fields_json;
    /* A fragment (manifest "fragment_of"): its file with role "fragment"
     * holds the parameters of layers cut.. only; layers 0..cut-1 are those of
     * trunk's weights file (catalog/README.md, Fragments). NULL when whole. */
    const char *trunk;
    uint64_t trunk_version;
    int cut;
    uint8_t trunk_sha256[RTL_SHA256_BYTES];
};

/* A weights file mapped once for every model of a catalog that reads it
 * (model.c: a trunk and the fragments on it). */
struct rtl_shared_map {
    const struct rtl_file *file;
    void *map;
    size_t len;
    int refs;
};

struct rtl_task {
    const char *name;
    const char **labels;
    size_t nlabels;
};

struct rtl_catalog {
    cJSON *root;           /* owns every string above */
    const char *id, *model;
    uint64_t version;
    uint8_t manifest_sha256[RTL_SHA256_BYTES]; /* of the manifest.json parsed */
    char *dir;
    struct rtl_task *tasks;
    size_t ntasks;
    const char **task_names; /* [ntasks]: tasks[i].name (rtl_catalog_info) */
    struct rtl_variant *variants;
    size_t nvariants;
    struct rtl_file **by_path; /* every file, sorted by path */
    size_t nfiles;
    int lock_fd;           /* shared lock on an installed copy, or -1 */
    char *profile_path;    /* ROOT/catalogs/<id>/profile.json for an installed
                            * copy opened from a store, else NULL */
    struct rtl_shared_map *maps; /* model.c's shared mappings */
    size_t nmaps;
};

/* The file of v with role, or NULL. */
const struct rtl_file *rtl_variant_role_file(const struct rtl_variant *v, const char *role);
/* Unmaps what is left of cat's shared mappings (rtl_catalog_close). */
void rtl_shared_maps_free(rtl_catalog *cat);

/* Reads one measured-latency object ({ms_median, runs, ms_mean, machine,
 * threads, batch, warmup, measured_at, catalog_version, source}) into out;
 * ms_median and runs are required. */
int rtl_latency_from_json(const cJSON *o, const char *variant, const char *where, rtl_latency *out,
                          rtl_err *err);

/* Looks a file up by its archive path; NULL when the manifest has none. */
struct rtl_file *rtl_catalog_lookup(const rtl_catalog *cat, const char *path);

/* Checks an archive entry name or manifest path: relative, components of
 * [A-Za-z0-9_.-] not starting with '.', no empty component, at most
 * RTL_PATH_MAX bytes. Fills err with what is wrong. */
int rtl_path_check(const char *path, rtl_err *err);

/* Reads o[key], a non-negative integer that a double holds exactly (below
 * 2^53), into out; else an error "DOC: WHERE: "KEY" is missing or not a
 * non-negative integer". */
int rtl_json_u64(const cJSON *o, const char *key, uint64_t *out, rtl_err *err, const char *doc, const char *where);

#endif
