/*
 * rtl.h: runtime-lite, the device library (the one public header of
 * runtime-lite/; every exported name starts with rtl_ or RTL_).
 *
 * What it does today: installing signed catalog archives into a store on
 * the device (signatures verified before extract, safe entries only,
 * anti-rollback, atomic switch, rollback), read access to
 * installed catalogs (variants, their files, costs and latencies), loading
 * and running variants (models), and measuring their latency on the device.
 *
 * Conventions, for every function below:
 * - The library never exits and never prints. A function that can fail
 *   returns 0 on success and -1 on failure (NULL for constructors) and fills
 *   the caller's rtl_err (which may be NULL) with one message that says what
 *   was wrong, where, and what to do. Progress and warnings go to the
 *   rtl_log_fn callback of the store, when one is set.
 * - Objects returned by open/parse functions are owned by the caller and freed
 *   with the matching close/free function. Strings returned by accessors
 *   belong to the object and live as long as it does.
 * - Verification functions are marked RTL_MUST_CHECK: ignoring their result
 *   is a compile error under -Werror.
 * - Structures passed in carry no hidden state; new fields are only ever
 *   appended (zero-initialise them: zero is always the default), and the
 *   opaque types (rtl_store, rtl_catalog, rtl_variant, rtl_model) grow
 *   behind accessors, so techniques can be added without breaking callers.
 */
#ifndef RTL_H
#define RTL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RTL_VERSION "0.2.0"

#if defined(__GNUC__)
#define RTL_API __attribute__((visibility("default")))
#define RTL_MUST_CHECK __attribute__((warn_unused_result))
#else
#define RTL_API
#define RTL_MUST_CHECK
#endif

/* ---- errors and messages ----------------------------------------------- */

#define RTL_ERR_MAX 1024

/* One error message, filled by the function that failed. */
typedef struct rtl_err {
    char msg[RTL_ERR_MAX];
} rtl_err;

enum rtl_log_level {
    RTL_LOG_INFO,
    RTL_LOG_WARN,
    RTL_LOG_LEVEL_COUNT
};

/* Receives progress and warnings (one line, no newline). */
typedef void (*rtl_log_fn)(void *user, enum rtl_log_level level, const char *msg);

/* Writes len bytes to path as every program writes its outputs
 * (trn_atomic_open of the engine): a regular file, or one that does not
 * exist, through a temporary file in the same folder renamed over it; a
 * symbolic link followed (the file it names replaced, the link kept); a
 * FIFO, device or socket written in place (/dev/full: "No space left on
 * device"); a folder refused. */
RTL_API int rtl_write_file(const char *path, const void *buf, size_t len, rtl_err *err) RTL_MUST_CHECK;

/* Opens path for reading as every program opens its input files
 * (trn_open_input of the engine): a regular file only; a FIFO, folder,
 * device or socket is refused at once, saying what it is (never a hang
 * on a FIFO). The file descriptor (O_CLOEXEC), or -1 with the reason. */
RTL_API int rtl_open_input(const char *path, rtl_err *err) RTL_MUST_CHECK;

#define RTL_ID_MAX 64          /* catalog, model and variant ids */

/* ---- signatures and hashes ------------------------------------------------
 * librtl verifies every catalog and index it installs itself (rtl_install,
 * rtl_pull, rtl_verify_installed), so an application needs none of the
 * minisign, trusted-comment and SHA-256 helpers: they are declared in
 * rtl_sign.h, the formats librtl shares with the publisher (the catalog
 * tool), linked from librtl.a and not exported by librtl.so. */

/* What computes SHA-256 on this CPU: "x86 SHA extensions", "ARMv8 crypto
 * extension" (detected at run time) or "libsodium (portable)". */
RTL_API const char *rtl_sha256_engine(void);

/* ---- archives ----------------------------------------------------------- */

/* Reads manifest.json, which must be the first entry of the catalog archive
 * at path (tar, zstd), into a new NUL-terminated buffer the caller frees.
 * Nothing else of the archive is read. */
RTL_API int rtl_archive_manifest(const char *path, char **json, size_t *len, rtl_err *err);

/* ---- the store: catalogs installed on this device -------------------------
 * A store is a folder (the install root) that holds:
 *   keys/NAME.pub               pinned public keys (or config.keys_dir)
 *   catalogs/<id>/STATE         which installed copy is current and previous
 *   catalogs/<id>/v<N>.<k>/     installed catalogs (manifest.json, variants/,
 *                               catalog.minisig), never modified once named
 * See runtime-lite/README.md for the crash-safety argument. */

typedef struct rtl_store rtl_store;

typedef struct rtl_store_config {
    const char *root;      /* the install root (required) */
    const char *keys_dir;  /* pinned keys; NULL: <root>/keys */
    rtl_log_fn log;        /* NULL: messages are dropped */
    void *log_user;
} rtl_store_config;

/* Opens (and creates when missing) the store. */
RTL_API rtl_store *rtl_store_open(const rtl_store_config *config, rtl_err *err);
RTL_API void rtl_store_close(rtl_store *store);

typedef struct rtl_install_options {
    int allow_downgrade;   /* 1: install a version not newer than the current one */
} rtl_install_options;

/* One installed catalog: what STATE names as current (and previous). */
typedef struct rtl_installed {
    char catalog[RTL_ID_MAX + 1];
    char model[RTL_ID_MAX + 1];
    uint64_t version;
    int has_previous;
    uint64_t previous_version;
    char dir[4096];        /* absolute path of the current copy */
    char key_id[17];       /* the key that signed it */
} rtl_installed;

/* Installs the catalog archive at `archive` with its detached signature at
 * `sig`: verifies the signature against the pinned keys before extracting
 * anything, refuses a version not newer than the installed one (unless
 * options->allow_downgrade), extracts into a staging folder refusing every
 * unsafe entry, checks sizes and SHA-256 against the manifest, fsyncs, and
 * switches atomically; the copy that was current becomes the previous one.
 * On failure nothing outside the staging folder has changed and the staging
 * folder is removed. *out (may be NULL) describes the new install. */
RTL_API int rtl_install(rtl_store *store, const char *archive, const char *sig,
                        const rtl_install_options *options, rtl_installed *out,
                        rtl_err *err) RTL_MUST_CHECK;

/* Verifies the previous copy of catalog `id`, then makes it current again
 * (and the current one previous), atomically; then removes what STATE no
 * longer names (leftovers of interrupted installs). */
RTL_API int rtl_rollback(rtl_store *store, const char *id, rtl_installed *out,
                         rtl_err *err) RTL_MUST_CHECK;

/* Lists installed catalogs, sorted by id, into a new array the caller frees
 * with free(). */
RTL_API int rtl_list(rtl_store *store, rtl_installed **out, size_t *n, rtl_err *err);

/* Re-verifies the current copy of catalog `id`: its stored signature's trusted
 * comment against the pinned keys, the manifest against the signed SHA-256,
 * and every file's size and SHA-256 against the manifest. */
RTL_API int rtl_verify_installed(rtl_store *store, const char *id, rtl_err *err) RTL_MUST_CHECK;

/* ---- pulling catalogs over the air (libcurl) ------------------------------
 * A publish folder (written by `catalog publish`, served by any static web
 * server, or read from a file:// folder) holds:
 *   index.json, index.json.minisig   the latest version of every catalog,
 *                                    signed, with a serial and an expiry time
 *   <id>/<archive>, <archive>.minisig  each catalog archive and signature
 *   objects/<sha256>                 manifests and files by their SHA-256
 * rtl_pull verifies the index with the pinned keys (refusing an expired one
 * and one older than the newest this device accepted: freeze and replay),
 * then, per catalog with a newer version, the signature's trusted comment
 * (which pins the manifest's SHA-256), fetches the manifest and only the
 * files this device does not hold, checks each against the manifest, and
 * installs through the store's usual atomic switch. Without objects/ it
 * fetches the whole archive and installs it as rtl_install does. Partial
 * downloads live in ROOT/pull/ (never where the store reads) and are
 * resumed by the next pull (format at the top of runtime-lite/src/pull.c). */

/* Where a transfer of rtl_pull stands, for a progress display (the library
 * prints nothing itself). */
typedef struct rtl_pull_progress {
    const char *url;             /* the file being fetched */
    uint64_t done, size;         /* bytes of it held now (resumed ones included), its size */
    uint64_t received;           /* body bytes this pull received so far, every transfer */
    double elapsed_s;            /* since the pull began */
} rtl_pull_progress;

/* What a device accepts from a signed index whatever it states: a validity
 * (expires minus issued) of at most 366 days, a serial at most 2^32 above
 * the last one it accepted. An index's own max_validity and
 * max_serial_step (catalog publish --max-validity, --max-serial-step)
 * bound it more tightly. */
#define RTL_INDEX_VALIDITY_CAP_S (366ull * 86400)
#define RTL_INDEX_STEP_CAP (1ull << 32)

typedef struct rtl_pull_options {
    const char *catalog;         /* only this catalog id; NULL: every one the index lists */
    int check_only;              /* 1: verify the index and compare versions; fetch nothing more */
    int fetch_only;              /* 1: fetch and verify into ROOT/pull/, install nothing */
    int whole_archive;           /* 1: fetch the archive even when objects/ exists */
    int allow_downgrade;         /* as rtl_install_options */
    uint64_t max_bytes_per_s;    /* receive bandwidth limit; 0: none */
    int retries;                 /* tries after the first per transfer; 0: 4, -1: none */
    unsigned backoff_ms;         /* wait before the first retry, doubling (at most 60 s); 0: 500 */
    unsigned timeout_s;          /* connect time-out, and how long a transfer may stay below
                                  * 1 KiB/s (a quarter of max_bytes_per_s if lower); 0: 30 */
    const char *cacert;          /* CA bundle for https://; NULL: the system's */
    const char *channel;         /* the channel to follow on the first pull (recorded in
                                  * ROOT/pull/channel; later pulls must name the same one);
                                  * NULL: the recorded one, else the first index's */
    uint64_t min_bytes_per_s;    /* each file's deadline is timeout_s plus its size at this
                                  * rate (counted from its first try); 0: 16 KiB/s (half of
                                  * max_bytes_per_s when that is lower) */
    unsigned deadline_s;         /* the whole pull's deadline; 0: 6 hours */
    void (*progress)(void *user, const rtl_pull_progress *p); /* NULL: none; called often */
    void *progress_user;
} rtl_pull_options;

/* What happened to one catalog of the index. */
typedef struct rtl_pull_item {
    char catalog[RTL_ID_MAX + 1];
    uint64_t installed_version;  /* 0: not installed before */
    uint64_t index_version;      /* what the index offers */
    int update;                  /* 1: index_version is newer (or a downgrade was allowed) */
    int installed;               /* 1: installed by this pull */
    int fetched;                 /* 1: fetched and verified (fetch_only) */
    int whole_archive;           /* 1: went through the archive, not objects/ */
    uint64_t bytes_fetched;      /* body bytes received for its manifest and files, or its
                                  * archive (its signature is counted in the total only) */
    uint64_t bytes_reused;       /* bytes of files not received by this pull: taken from the
                                  * installed copy, or fetched by an earlier (killed or
                                  * --fetch-only) pull */
    size_t files_fetched, files_reused;
} rtl_pull_item;

typedef struct rtl_pull_result {
    char channel[RTL_ID_MAX + 1];
    uint64_t serial;             /* of the index accepted */
    int64_t expires;             /* its expiry (Unix time) */
    uint64_t bytes_fetched;      /* body bytes received in all, index included */
    unsigned retries;            /* transfers retried after a transient failure */
    rtl_pull_item *items;        /* n of them, index order; free with rtl_pull_result_free */
    size_t n;
} rtl_pull_result;

/* Pulls from the publish folder at url (http://, https:// or file://) into
 * store. options may be NULL. *out (may be NULL) is filled as far as the pull
 * got, also on failure (free it with rtl_pull_result_free either way). One
 * failing catalog does not stop the others; the call fails if any failed
 * (err names the first). */
RTL_API int rtl_pull(rtl_store *store, const char *url, const rtl_pull_options *options, rtl_pull_result *out,
                     rtl_err *err) RTL_MUST_CHECK;
RTL_API void rtl_pull_result_free(rtl_pull_result *r);

/* ---- catalogs and their variants (for loaders) ----------------------------- */

typedef struct rtl_catalog rtl_catalog;
typedef struct rtl_variant rtl_variant;

/* Opens the current copy of installed catalog `id`. While it is open, that
 * copy is never removed by later installs (a shared lock on it). */
RTL_API rtl_catalog *rtl_catalog_open(rtl_store *store, const char *id, rtl_err *err);
/* Parses a manifest held in memory; file paths are resolved against dir (may
 * be NULL: paths stay relative). No signature is checked here. */
RTL_API rtl_catalog *rtl_catalog_parse(const char *json, size_t len, const char *dir, rtl_err *err);
RTL_API void rtl_catalog_close(rtl_catalog *cat);

/* What catalog cat is: the answer of rtl_catalog_describe. Versioned by
 * its size as rtl_model_info is (below): fields are only ever appended
 * (RTL_CATALOG_INFO_V1 is this first layout's size), the caller passes
 * sizeof *out, and the library fills the fields both know and zeroes the
 * caller's ones it does not know. Strings and arrays belong to the catalog
 * and live as long as it is open. */
typedef struct rtl_catalog_info {
    const char *id;                /* the catalog's id */
    const char *model;             /* the model its variants derive from */
    uint64_t version;              /* its version (rtl_install refuses older ones) */
    const char *dir;               /* the folder its files are in ("" when parsed without one) */
    size_t task_count;             /* tasks (label sets), in manifest order */
    const char *const *task_names; /* their names (rtl_catalog_task_labels: each one's labels) */
    size_t variant_count;          /* variants 0..variant_count-1 of rtl_catalog_variant_at */
} rtl_catalog_info;
#define RTL_CATALOG_INFO_V1 (offsetof(rtl_catalog_info, variant_count) + sizeof(size_t))

/* Fills out (out_size = sizeof *out; at least RTL_CATALOG_INFO_V1). -1
 * with err when out_size is smaller. */
RTL_API int rtl_catalog_describe(const rtl_catalog *cat, rtl_catalog_info *out, size_t out_size, rtl_err *err);

/* Labels of task `name`; *n gets their count; NULL when the task is unknown. */
RTL_API const char *const *rtl_catalog_task_labels(const rtl_catalog *cat, const char *name, size_t *n);

/* Variant i (< rtl_catalog_info.variant_count), in manifest order. */
RTL_API const rtl_variant *rtl_catalog_variant_at(const rtl_catalog *cat, size_t i);
/* NULL when no variant has that id. */
RTL_API const rtl_variant *rtl_catalog_find(const rtl_catalog *cat, const char *id);

/* What variant v is: the answer of rtl_variant_describe, versioned by its
 * size as rtl_catalog_info is (RTL_VARIANT_INFO_V1). Strings belong to the
 * catalog. Costs are the manifest's (the catalog tool's cost model). */
typedef struct rtl_variant_info {
    const char *id;               /* unique within the catalog */
    const char *technique;        /* "base", "svd", "nested", "early-exit", "head", ... */
    const char *task;             /* the task whose labels its outputs are */
    const char *parent;           /* the variant it derives from; NULL: none */
    size_t file_count;            /* its files (rtl_variant_file finds one by role) */
    uint64_t macs;                /* multiply-accumulates of one image */
    uint64_t params;              /* parameters */
    uint64_t weight_bytes;        /* bytes of its weights file(s) */
    uint64_t peak_activation_bytes; /* the largest activation of one image */
    size_t estimate_count;        /* estimates 0..estimate_count-1 of rtl_variant_estimate_at */
} rtl_variant_info;
#define RTL_VARIANT_INFO_V1 (offsetof(rtl_variant_info, estimate_count) + sizeof(size_t))

/* Fills out (out_size = sizeof *out; at least RTL_VARIANT_INFO_V1). -1
 * with err when out_size is smaller. */
RTL_API int rtl_variant_describe(const rtl_variant *v, rtl_variant_info *out, size_t out_size, rtl_err *err);

/* Path of the first file with `role` ("cfg", "weights", ...), or NULL. */
RTL_API const char *rtl_variant_file(const rtl_variant *v, const char *role);
/* Accuracy measured for task (NULL: the variant's own task); -1 when the
 * manifest has none (top5 is -1 where classes <= 5). */
RTL_API int rtl_variant_accuracy(const rtl_variant *v, const char *task, double *top1, double *top5);

/* ---- latency: measured figures and estimates ------------------------------
 * Latency is measured, never computed, on the machine it is reported for
 * ("where": "build-host" in the manifest, "device" for `rtl profile` on this
 * device), or estimated from a device profile by the catalog tool, and the
 * two are never mixed: estimates have their own type below. */

typedef struct rtl_latency {
    char variant[RTL_ID_MAX + 1];
    char where[RTL_ID_MAX + 1];   /* "build-host", "device", ... */
    char source[16];              /* always "measured" */
    char machine[256];            /* what it was measured on */
    int threads;                  /* compute threads */
    int batch;                    /* images per run (1) */
    uint32_t warmup;              /* untimed runs first (0 when unknown) */
    uint32_t runs;                /* timed runs */
    double ms_median, ms_mean;
    int64_t measured_at;          /* Unix time; -1 when unknown */
    uint64_t catalog_version;     /* the catalog version measured (0: unknown) */
    double gap_ms;                /* idle time before each timed run (0: back to back) */
} rtl_latency;

/* The manifest's measured latency of v on `where` (e.g. "build-host");
 * -1 (err may be NULL) when the manifest has none. */
RTL_API int rtl_variant_latency(const rtl_variant *v, const char *where, rtl_latency *out, rtl_err *err);

/* An estimate of the catalog tool for one target device profile. */
typedef struct rtl_estimate {
    const char *target;   /* target profile id, e.g. "jetson-nano" */
    const char *method;   /* e.g. "roofline-1" */
    const char *bound;    /* "compute" or "memory" ("" when absent) */
    double ms;            /* estimated latency at batch 1 */
    double mj;            /* estimated energy per image; -1 when absent */
    const char *compute_unit;     /* the unit modelled, e.g. "GPU: 128 Maxwell CUDA
                                   * cores at 921.6 MHz" ("" when absent) */
    double cpu_ms, cpu_mj;        /* the same estimate for the device's CPU cores,
                                   * the path this runtime takes today; -1 when absent */
    const char *cpu_unit;         /* the CPU modelled ("" when absent) */
} rtl_estimate;

/* Estimate i of v (i < rtl_variant_info.estimate_count), in manifest
 * order; -1 when i is out of range. Strings belong to the catalog. */
RTL_API int rtl_variant_estimate_at(const rtl_variant *v, size_t i, rtl_estimate *out);

/* ---- device profile: latencies measured on this device --------------------
 * `rtl profile` keeps them beside the installed copies, in
 * ROOT/catalogs/<id>/profile.json (format in runtime-lite/src/profile.c),
 * never inside a copy (copies are signed and never modified). Each entry is
 * tied to the SHA-256 of the variant's files, so it stays valid across
 * catalog versions that leave a variant unchanged and is ignored once the
 * variant changes. Only catalogs opened with rtl_catalog_open have one. */

/* Records measurements (where = "device") of variants of cat, replacing
 * earlier entries of the same variant and thread count and dropping entries
 * that match no variant of cat any more. The file is rewritten atomically
 * (temporary file, fsync, rename) under an exclusive lock on the catalog's
 * folder, so concurrent profilers never lose each other's entries. */
RTL_API int rtl_profile_save(rtl_catalog *cat, const rtl_latency *lat, size_t n, rtl_err *err);

/* The device measurements of variant `id` that match its current files,
 * newest first, into out[0..max); *n gets how many there are (may exceed
 * max). No profile yet is not an error (*n = 0); a damaged profile is. */
RTL_API int rtl_profile_get(const rtl_catalog *cat, const char *id, rtl_latency *out, size_t max,
                            size_t *n, rtl_err *err);

/* One line describing this machine for measurements: host name, board or
 * CPU model (/proc/device-tree/model, else /proc/cpuinfo), architecture
 * and online cores, e.g. "jetson1: NVIDIA Jetson Nano Developer Kit,
 * aarch64, 4 cores". */
RTL_API void rtl_machine_describe(char *out, size_t size);

/* ---- models: loading and running variants ---------------------------------
 *
 * A model is a variant of an open catalog made ready to run. Opening it
 * parses its cfg into a network (the trainer's forward code, compiled into
 * librtl without its training parts), maps its weights file read-only and
 * checks the file against the manifest (size) and the cfg (header and the
 * exact byte count the layers need) before anything runs. The parameters
 * point into the mapping: nothing is copied, and only the pages a forward
 * touches become resident. Installed copies are never modified, so the
 * mapping stays valid while the model is open.
 *
 * Plain variants (one cfg and one weights file: techniques base, rewrite,
 * svd, mimic, pruned) and nested ones load today. A model is built from parts (one network
 * each, over one mapping), so the other techniques fit the same calls:
 *  - multi-capacity (nested, loads today): one part over one mapping,
 *    whose channel-prefix capacity rtl_model_set_capacity switches in place;
 *  - shared trunks (head): the trunk is a part the catalog loads once and
 *    lends to every head model; a call taking several models runs it once
 *    per input and fans its output out to the heads;
 *  - cascades (specialised): a specialised variant opens alone here (its
 *    n classes and "other"); run through a runner (rtl_runner_run, below),
 *    its partner answers when it answers "other", and the result names the
 *    variant that answered;
 *  - early exits: the exits are parts reading an inner layer's output.
 * Opening a variant of another technique today fails, naming it.
 *
 * Threads: every model has its own compute engine (its own pool of
 * threads and settings; OpenBLAS runs single-threaded inside it), so
 * forward passes of different models run side by side from different
 * threads with no lock between them, each giving the bytes it gives alone.
 * One model is used by one thread at a time. */

typedef struct rtl_model rtl_model;

typedef struct rtl_model_options {
    int threads;   /* > 0: the model's compute threads, for every layer; 0: chosen
                    * per layer from its work, all online cores at most (a
                    * layer of w operations gets w / 2^20 threads, at least 1:
                    * small layers run on one). The bytes never depend on it */
    int async_paging; /* nested models: 0 (default) = rtl_model_set_capacity
                       * makes the madvise calls itself; 1 = a pager thread
                       * of the model makes them after the call returns */
} rtl_model_options;

/* Whether this runtime can load variant v (its technique): 0, or -1 with
 * err (may be NULL) saying why not. Files are not checked here. */
RTL_API int rtl_variant_loadable(const rtl_variant *v, rtl_err *err);

/* Opens variant `id` of cat (options may be NULL). The catalog must stay
 * open while the model is. Errors name the variant and the file: a missing
 * variant (with the ids there are), a technique not supported yet, a cfg
 * the network builder refuses (file:line), a weights file whose size differs
 * from the manifest, or whose header or length does not fit the cfg (byte
 * offset), a network whose outputs differ from the task's label count. */
RTL_API rtl_model *rtl_model_open(rtl_catalog *cat, const char *id, const rtl_model_options *options,
                                  rtl_err *err);
RTL_API void rtl_model_close(rtl_model *m);

/* The last switch (rtl_model_info.last_switch): page_in/page_out = bytes of parameters added/dropped
 * (what the manifest's page_in_bytes/page_out_bytes state), advised_in/out
 * = the bytes of the whole pages advised: paging out, the pages holding
 * only dropped parameters; paging in, the pages holding added parameters
 * and none the smaller capacity uses (those are resident already), with
 * gaps of up to 4 such resident pages merged into one call. */
typedef struct rtl_switch_bytes {
    uint64_t page_in, page_out, advised_in, advised_out;
} rtl_switch_bytes;
/* What model m is and where it stands now: the answer of
 * rtl_model_describe. Versioned by its size: fields are only ever appended
 * (RTL_MODEL_INFO_V1 is this first layout's size), the caller passes
 * sizeof *out, and the library fills the fields both know and zeroes the
 * caller's ones it does not know (an application built against a newer
 * rtl.h than the librtl it runs on reads 0 there: 0 is always "none").
 * Pointers belong to the model (the variant to its catalog) and live as
 * long as it does. */
typedef struct rtl_model_info {
    const rtl_variant *variant;   /* the variant it runs */
    int c, h, w;                  /* the input one run takes: (c, h, w) floats */
    size_t input_size;            /* c * h * w floats */
    size_t classes;               /* outputs of a run (rtl_model_top gives their labels) */
    int layers;                   /* L: layers 0..L-1 of split execution (rtl_model_layer_cost) */
    int capacities;               /* nested: capacities 1..capacities; 0 for other techniques */
    int capacity;                 /* nested: the current capacity (the largest at open); 0 otherwise */
    rtl_switch_bytes last_switch; /* nested: what the last rtl_model_set_capacity paged (below) */
    int exits;                    /* early-exit: its exits; 0 for other techniques */
    const int *exit_layers;       /* exit j reads trunk layer exit_layers[j], j < exits; NULL: none */
    int exit_taken;               /* the last run's answer: exit 0..exits-1, or exits for the
                                   * trunk's own output; -1 before a run (0 after a run of a
                                   * model without exits) */
} rtl_model_info;
#define RTL_MODEL_INFO_V1 (offsetof(rtl_model_info, exit_taken) + sizeof(int))

/* Fills out (out_size = sizeof *out; at least RTL_MODEL_INFO_V1). -1 with
 * err when out_size is smaller. */
RTL_API int rtl_model_describe(const rtl_model *m, rtl_model_info *out, size_t out_size, rtl_err *err);

/* Multi-capacity (nested) models (technique "nested"): one network over one
 * mapping, capacity k (1 = the smallest) a channel prefix per layer from the
 * manifest's technique_fields.capacities[].channel_index. A model opens at
 * its largest capacity (rtl_model_info.capacities; 0 for other
 * techniques). Switches in place: an upgrade advises the kernel to page in only the
 * added parameter ranges (madvise WILLNEED), a downgrade releases only the
 * dropped ones (MADV_DONTNEED, keeping pages shared with parameters still
 * in use); nothing is reloaded or copied, nothing allocated (each pair of
 * capacities' page ranges is computed at open). Runs after it compute
 * capacity k exactly as the separately built smaller network would. The
 * madvise calls are made inside the call, or with
 * rtl_model_options.async_paging by the model's pager thread after the
 * call returns (rtl_model_paging_wait waits for them); the mapping is
 * read-only, so a run never depends on when they are made. */
RTL_API int rtl_model_set_capacity(rtl_model *m, int k, rtl_err *err) RTL_MUST_CHECK;
/* What the paging of a nested model has done since open: transitions
 * applied (switches made before the pager woke count as one, from the
 * first to the last), page ranges advised and the system calls that
 * advised them (one process_madvise per transition where the kernel takes
 * it, else one madvise per range), parameter bytes and whole-page bytes
 * paged in and out, the time spent in those calls (busy_ms) and when the
 * last transition finished (done_ms, CLOCK_MONOTONIC milliseconds). */
typedef struct rtl_paging_stats {
    uint64_t transitions, ranges, syscalls;
    uint64_t page_in, page_out, advised_in, advised_out;
    double busy_ms, done_ms;
} rtl_paging_stats;
/* Blocks until the pager has advised the pages of the current capacity;
 * *out (may be NULL) its totals. Returns 1 when a pager thread pages, 0
 * when the caller's thread does (no async_paging, or not a nested model). */
RTL_API int rtl_model_paging_wait(rtl_model *m, rtl_paging_stats *out);

/* Runs the model on one input x, (c, h, w) as rtl_model_info says. */
RTL_API int rtl_model_run(rtl_model *m, const float *x, rtl_err *err) RTL_MUST_CHECK;
/* Decodes the image file at path (PNG, JPEG or BMP; errors name the file),
 * applies the evaluation preprocessing of `trainer predict` (scale to cover
 * the input, centred crop: trn_image_load_input) and runs the model. */
RTL_API int rtl_model_run_image(rtl_model *m, const char *path, rtl_err *err) RTL_MUST_CHECK;

/* The output of the last successful run: rtl_model_info.classes floats (class
 * probabilities: catalog variants end with [softmax]), owned by the model
 * and valid until its next run or close; NULL before the first run. */
RTL_API const float *rtl_model_output(const rtl_model *m);

/* Early-exit variants (technique early-exit, FlexDNN): a run evaluates the
 * exits in trunk order and stops at the first whose confidence
 * Conf(y) = 1 + (1/log C) sum y_c log y_c exceeds alpha times its lossless
 * threshold; the trunk's layers already run are never run again. */
/* The exits, the layers they read and which one answered the last run are
 * rtl_model_info's exits, exit_layers and exit_taken. */
/* The knob T = alpha * T_lossless (default 1; the manifest's alpha profile
 * gives accuracy and expected MACs per alpha). -1 with err for a model
 * without exits or an alpha that is not a number >= 0. */
RTL_API int rtl_model_set_alpha(rtl_model *m, float alpha, rtl_err *err) RTL_MUST_CHECK;

typedef struct rtl_class {
    size_t index;        /* class index */
    float prob;          /* its output */
    const char *label;   /* the task's label (owned by the catalog) */
} rtl_class;

/* The k classes with the highest outputs of the last run, best first (ties:
 * the lower index first, as `trainer predict`), into out[0..k); *n gets
 * min(k, classes). -1 before the first run. */
RTL_API int rtl_model_top(const rtl_model *m, size_t k, rtl_class *out, size_t *n, rtl_err *err);

/* Measures batch-1 latency: `warmup` untimed runs, then `runs` (>= 1) timed
 * runs of rtl_model_run on x, each timed alone with a monotonic clock, each
 * after gap_ms (>= 0; 0: back to back) of sleep: the latency of requests
 * that arrive at a frame rate (a run after the core idled, its caches
 * taken by whatever ran meanwhile). x NULL uses the model's own input
 * buffer: the image rtl_model_run_image decoded last, or the x of an
 * earlier measurement, zeros at first. Fills out: where "device", source
 * "measured", machine (rtl_machine_describe), threads, runs, median and
 * mean, the time and the catalog version. */
RTL_API int rtl_model_measure_paced(rtl_model *m, const float *x, uint32_t warmup, uint32_t runs, double gap_ms,
                                    rtl_latency *out, rtl_err *err) RTL_MUST_CHECK;

/* ---- split execution (runtime-lite/src/model.c) ---------------------------
 *
 * A model's layers 0..L-1 (L = rtl_model_info.layers) can run in pieces: a cut
 * s in 0..L means layers 0..s-1 ran, and what crosses the cut is layer
 * s-1's output (the input when s = 0; the final output when s = L). A cut
 * is possible when no layer at or after s reads the output of a layer
 * before s-1 (a route or shortcut across it); cuts 0 and L always are. */

typedef struct rtl_layer_cost {
    int index;
    char kind[24];           /* section type, e.g. "convolutional" */
    uint64_t macs;           /* per image, the cost model's convention */
    uint64_t output_bytes;   /* float32 output of one image */
    uint64_t input_bytes;    /* what crosses the cut before it (float32) */
    int cut_before;          /* 1: cut index is possible */
    double host_ms;          /* measured on this machine by rtl_model_profile_layers
                              * (wall time, median), 0 until then */
    double host_cpu_ms;      /* host_ms scaled by the calling thread's CPU time of
                              * the whole forwards over their wall time: what the
                              * planner multiplies by device_factor (the device
                              * model of rtl_offload_run), 0: use host_ms */
} rtl_layer_cost;

/* Layer i's costs (i in 0..rtl_model_info.layers-1); -1 when i is out of
 * range. Whether cut i is possible is its cut_before (cut L always is). */
RTL_API int rtl_model_layer_cost(const rtl_model *m, int i, rtl_layer_cost *out);
/* Decodes the image at path into x (rtl_model_info.input_size floats) with the
 * preprocessing of rtl_model_run_image, without running anything. */
RTL_API int rtl_model_image_input(const rtl_model *m, const char *path, float *x, rtl_err *err) RTL_MUST_CHECK;
/* Measures every layer's forward time on this machine: `runs` forwards of x
 * (NULL: the model's own input buffer), per-layer medians kept in the
 * model (rtl_layer_cost.host_ms). */
RTL_API int rtl_model_profile_layers(rtl_model *m, const float *x, uint32_t runs, rtl_err *err) RTL_MUST_CHECK;

/* ---- several tasks on one input: shared trunks (runtime-lite/src/tasks.c) --
 *
 * MCDNN section 4.1.3: a head variant (technique "head", written by `prune
 * retarget`) is its parent's layers 0..from_layer-1 (the trunk, frozen,
 * byte for byte the parent's) plus head layers trained for another task.
 * Asked for several tasks on one input, the runtime runs each shared trunk
 * once and fans its output out to every head (and to the parent's own
 * upper layers when the parent is asked too). */


/* Runs models[0..n) on one input x (rtl_model_info.input_size floats, the
 * same for all): heads with the same parent and from_layer share one run of
 * their trunk, which the parent itself supplies when it is among the
 * models (its upper layers then run on the same trunk output); every other
 * model runs whole. After return, each model's rtl_model_output is its
 * answer. *trunk_runs (may be NULL) receives the trunk forwards done. -1
 * with err naming the model when the inputs differ in size or a run fails. */
RTL_API int rtl_model_run_tasks(rtl_model *const *models, size_t n, const float *x, size_t *trunk_runs,
                                rtl_err *err) RTL_MUST_CHECK;

/* ---- cascades and add-ons ---------------------------------------------------
 *
 * A specialised variant (prune specialise, MCDNN 4.1.2) answers n classes
 * of a context and "other"; on "other" its cascade partner (usually the
 * generic base model) answers. An add-on catalog (catalog pack --addon-of)
 * holds such variants for one device's context and depends on the catalog
 * it extends by id and exact version; rtl_install refuses it when that
 * catalog is not installed at that version. A runner (rtl_runner_*, below)
 * runs the cascades; rtl_runner_specialised names each specialised model's
 * partner. */

/* ---- the context profiler (runtime-lite/src/context.c) ---------------------
 *
 * MCDNN section 4.1.2: a stream of classified inputs is (n, p)-dominated
 * when its n most frequent classes account for at least a fraction p of
 * it. The profiler keeps the classes of the last `window` inputs (a ring
 * and one count per class, both allocated once: window + classes 32-bit
 * words, nothing allocated afterwards) and reports, for the n and p of its
 * parameters (docs/design.md: n in 7, 14, 21; p in 0.6, 0.7, 0.8, 0.9, 0.95),
 * the smallest n whose top classes reach a threshold, the largest
 * threshold they reach and which classes they are: what a device asks the
 * build side to specialise for (`make specialise CLASSES=...`), and what
 * decides whether an installed specialised model (an add-on) serves. */

#define RTL_CONTEXT_MAX_N 64      /* the largest n of a profiler */
#define RTL_CONTEXT_MAX_LEVELS 8  /* n values and p thresholds a profiler tries, each */
#define RTL_CONTEXT_MAX_WINDOW (1u << 20)
#define RTL_CONTEXT_MAX_CLASSES (1u << 20)

typedef struct rtl_context_params {
    uint32_t classes;        /* class indices 0..classes-1 (1..RTL_CONTEXT_MAX_CLASSES; required) */
    uint32_t window;         /* the last `window` inputs (0: 100; at most RTL_CONTEXT_MAX_WINDOW) */
    uint32_t min_samples;    /* never dominated while the window holds fewer (0: a full window) */
    uint32_t n[RTL_CONTEXT_MAX_LEVELS];  /* the n tried, increasing, 1..RTL_CONTEXT_MAX_N (all 0: 7, 14, 21) */
    double p[RTL_CONTEXT_MAX_LEVELS];    /* the thresholds, increasing, in (0, 1] (all 0: 0.6 .. 0.95) */
    double hysteresis;       /* a context reported stays while its classes hold at least its p minus
                              * this (0..0.5; 0: none), unless a smaller n or a higher p holds */
} rtl_context_params;

typedef struct rtl_context {
    int dominated;           /* 1: the window is (n, p)-dominated, for the n, p and classes below */
    int changed;             /* 1: dominated, n, p or the classes differ from the previous report */
    uint32_t n;              /* dominated: the smallest n of the parameters that reaches a threshold;
                              * else the largest n tried (its top classes are listed) */
    double p;                /* dominated: the largest threshold those classes reach; else 0 */
    double share;            /* the share of the window the n classes hold */
    uint32_t nclasses;       /* classes listed below: the n, fewer when fewer occur in the window */
    uint32_t samples;        /* inputs in the window now */
    uint64_t seen;           /* inputs observed since creation or reset */
    uint32_t classes[RTL_CONTEXT_MAX_N]; /* the classes, most frequent first (ties: lower index) */
    uint32_t counts[RTL_CONTEXT_MAX_N];  /* their counts in the window */
    double top_share[RTL_CONTEXT_MAX_LEVELS]; /* per n of the parameters: its top classes' share */
} rtl_context;

typedef struct rtl_context_profiler rtl_context_profiler;

/* The parameters in force (defaults filled in). */
RTL_API void rtl_context_profiler_params(const rtl_context_profiler *p, rtl_context_params *out);
/* Adds one classified input of class cls (the answer, not the truth: a
 * device does not know the truth); the oldest leaves a full window. O(1),
 * never allocates. -1 with err when cls >= classes (nothing changes). */
RTL_API int rtl_context_observe(rtl_context_profiler *p, uint32_t cls, rtl_err *err) RTL_MUST_CHECK;
/* Reports the window into out (MCDNN's (n, p)-dominance; see
 * rtl_context). It remembers the report (for `changed` and the
 * hysteresis), so it is not const. O(classes x largest n). */
RTL_API int rtl_profile_context(rtl_context_profiler *p, rtl_context *out, rtl_err *err);


/* ---- the split planner (runtime-lite/src/plan.c) --------------------------
 *
 * JointDNN's formulation: a graph over (layer, location) with location
 * device or cloud; an edge into (i, loc) costs layer i's compute at loc,
 * plus the transfer of what crosses the cut before it when the location
 * changes (upload device->cloud, download cloud->device); the input starts
 * on the device and the answer must end there. Costs are latency or device
 * energy. Unconstrained goals are a shortest path; budgets (device energy,
 * cloud time, deadline) are an exact search over Pareto labels of
 * (latency, energy, cloud time) per node, which the small graph allows. */

typedef struct rtl_link {
    char name[32];
    double up_mbps, down_mbps;   /* throughput, megabits per second */
    double rtt_ms;               /* round-trip time; half is charged to each transfer */
    double alpha_up_mw;          /* radio power per Mbps of upload (paper's alpha_u) */
    double alpha_down_mw;        /* per Mbps of download (alpha_d) */
    double beta_mw;              /* radio base power (beta) */
} rtl_link;

/* The links of JointDNN's Table 3 (3g, 4g, wifi; RTT 0, as the paper's
 * model) by name, or NULL. */
RTL_API const rtl_link *rtl_link_preset(const char *name);

typedef struct rtl_target {
    double device_factor;   /* device layer time = host_cpu_ms (else host_ms) * device_factor (> 0) */
    double cloud_factor;    /* cloud layer time = host_ms * cloud_factor (> 0) */
    double device_mw;       /* device power while computing */
    double wait_mw;         /* device power while the cloud computes (the paper leaves it open) */
} rtl_target;

enum rtl_goal { RTL_GOAL_LATENCY, RTL_GOAL_ENERGY, RTL_GOAL_COUNT };

typedef struct rtl_budget {
    double energy_mj;       /* <= 0: none */
    double cloud_ms;        /* cloud compute time; < 0: none (0 forbids the cloud) */
    double deadline_ms;     /* <= 0: none */
} rtl_budget;

#define RTL_PLAN_MAX_LAYERS 256

typedef struct rtl_plan {
    int layers;
    unsigned char on_cloud[RTL_PLAN_MAX_LAYERS]; /* per layer: 0 device, 1 cloud */
    double latency_ms, energy_mj, cloud_ms, device_ms, transfer_ms;
    uint64_t bytes_up, bytes_down;
    int transfers;
} rtl_plan;

/* The best placement for goal under budget (NULL: none): -1 with err when
 * no placement meets the budget. Layer costs need host_ms. */
RTL_API int rtl_plan_best(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k,
                          enum rtl_goal goal, const rtl_budget *budget, rtl_plan *out, rtl_err *err);
/* The placement "layers 0..s-1 on the device, the rest on the cloud". */
RTL_API int rtl_plan_split(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k, int s,
                           rtl_plan *out, rtl_err *err);

/* ---- GTDP: one layer spread over several workers (runtime-lite/src/gtdp.c) --
 *
 * MeDNN's greedy two-dimensional partition: each convolutional layer's
 * output (rows x output channels) is split recursively over the workers in
 * proportion to their speed, by rows or by channels, choosing the split
 * tree with the least predicted time; the device sends each worker the
 * input rows its part needs (with the kernel's halo) and assembles the
 * parts. rtl plan --workers prints it. */

#define RTL_GTDP_MAX_WORKERS 8

typedef struct rtl_gtdp_worker {
    double speed;   /* relative to this host: part time = layer host time x share / speed */
    double mbps;    /* its link (both directions) */
    double rtt_ms;  /* charged once per part */
} rtl_gtdp_worker;

typedef struct rtl_gtdp_layer {
    int index;
    int c_in, h_in, w_in, c, h, w, size, stride, pad; /* pad: pixels; c, h, w: the block's output */
    uint64_t macs;
    double ms;      /* the whole block's time on this host */
    /* A max pool fused after the convolution (pool_size 0: none): the
     * block is layers index..last, its output the pool's; conv_h, conv_w:
     * the convolution's output (== h, w without a pool). */
    int last, conv_h, conv_w, pool_size, pool_stride, pool_pad;
    /* A part's compute time fitted on this host by rtl_gtdp_calibrate
     * (fitted 0: the built-in approximation, see rtl_gtdp_part_cost): at
     * speed 1, ms = fit[0] r c + fit[1] r + fit[2] c + fit[3], r the part's
     * share of the convolution's rows, c of its output channels. */
    int fitted;
    double fit[4];
    /* The cuts the planner may make in this block: RTL_GTDP_ROWS,
     * RTL_GTDP_CHANNELS, or 0 for both; rtl_gtdp_model_layer fills it
     * with what rtl_gtdp_set_dims chose for the block (0 if nothing). */
    int dims;
} rtl_gtdp_layer;
#define RTL_GTDP_ROWS 1
#define RTL_GTDP_CHANNELS 2

typedef struct rtl_gtdp_part {
    int worker;
    int r0, r1, c0, c1;       /* output rows and channels [r0,r1) x [c0,c1) */
    int in_r0, in_r1;         /* the input rows it reads */
    int cr0, cr1;             /* a block with a fused max pool cut at convolution rows: the
                               * convolution rows [cr0, cr1) it computes, its rows r0..r1 the
                               * block rows whose pool windows meet them; a window it holds only
                               * in part is pooled over its rows and merged by max with the other
                               * parts' on the device. 0, 0: the windows of r0..r1, whole */
    uint64_t in_bytes, out_bytes;
    double compute_ms, transfer_ms, ms;
} rtl_gtdp_part;

typedef struct rtl_gtdp_layer_plan {
    int layer, nparts;
    rtl_gtdp_part parts[RTL_GTDP_MAX_WORKERS];
    double ms;                /* predicted: the slowest part */
    uint64_t bytes;           /* moved between the device and the workers */
} rtl_gtdp_layer_plan;

/* GTDP's plan of layer l over n workers. -1 with err on bad workers/layer. */
RTL_API int rtl_gtdp_plan_layer(const rtl_gtdp_layer *l, const rtl_gtdp_worker *w, int n,
                                rtl_gtdp_layer_plan *out, rtl_err *err);
/* The reference: n equal row bands, worker i the i-th. */
RTL_API int rtl_gtdp_plan_equal(const rtl_gtdp_layer *l, const rtl_gtdp_worker *w, int n,
                                rtl_gtdp_layer_plan *out, rtl_err *err);
/* The same, and 0 only when the block can be split: the model can be cut
 * before it and after it (no route or shortcut crosses it). */
RTL_API int rtl_gtdp_model_split(const rtl_model *m, int i, rtl_gtdp_layer *out);
/* Times parts of every block of m that GTDP can split, computed here the
 * way a worker computes them (rtl_gtdp_compute_part with the copies of a
 * request and its reply; CPU time of this thread, median of reps), and
 * fits each block's part cost (rtl_gtdp_layer.fit); rtl_gtdp_model_layer
 * carries the fit from then on. Costs about 3.5 (reps + 1) forwards. */
RTL_API int rtl_gtdp_calibrate(rtl_model *m, int reps, rtl_err *err);

/* ---- the peer: running model suffixes on a server (src/peer.c, frame.c) ----
 *
 * Protocol (versions 1 and 2; byte layouts at the top of src/frame.c): a
 * TCP connection starts with a handshake that authenticates both sides by
 * their static X25519 keys (the device pins the server's, the server
 * allow-lists devices') and mixes in fresh ephemeral keys (crypto_kx), so
 * every session has new keys; then every message is one length-prefixed
 * frame: crypto_secretstream_xchacha20poly1305 (version 1) or AES-256-GCM
 * numbered per direction (version 2, negotiated in the handshake where
 * both CPUs have AES-NI); a replayed, reordered, tampered or truncated
 * frame fails. */

#define RTL_PEER_PK_BYTES 32
#define RTL_PEER_SK_BYTES 32

typedef struct rtl_peer_key {
    unsigned char pk[RTL_PEER_PK_BYTES];
    unsigned char sk[RTL_PEER_SK_BYTES];   /* zero when only the public half is known */
} rtl_peer_key;

/* A new random key pair. */
RTL_API int rtl_peer_keygen(rtl_peer_key *out, rtl_err *err);
/* Key files: "PATH.pub" holds the public key as 64 hex digits and a
 * newline, "PATH.key" the secret one (mode 0600). Save refuses to replace
 * existing files. */
RTL_API int rtl_peer_key_save(const rtl_peer_key *k, const char *path, rtl_err *err) RTL_MUST_CHECK;
/* Loads a key pair (secret = 1) from its secret key file PATH, "X.key",
 * and "X.pub" beside it (the older form, PATH = X, still works), or a
 * public key from its file PATH (secret = 0). Both take the file that
 * rtl peer-keygen wrote. */
RTL_API int rtl_peer_key_load(const char *path, int secret, rtl_peer_key *out, rtl_err *err) RTL_MUST_CHECK;

/* What a host-side tool may hook into a server, e.g. link and speed
 * emulation (rtl serve --emulate, --slowdown: runtime-lite/sim/, the
 * build host's rtl only; librtl emulates nothing). Each may be NULL; times
 * are rtl_now_ms()'s. arrived: when a request, whose frame's first byte
 * came at first and last at last, bytes long with its length prefix,
 * counts as arrived (it is computed from then on; at least last). computed:
 * called on the compute thread after each request's computation with its
 * CPU time and the wall time since it arrived; it may wait (the reply
 * waits with it). leaves: when a reply of bytes ready at ready may be sent
 * (the server's poll thread sends it then; without this hook the compute
 * thread sends it at once). */
typedef struct rtl_serve_hooks {
    void *ctx;
    double (*arrived)(void *ctx, double first, double last, size_t bytes);
    void (*computed)(void *ctx, double cpu_ms, double wall_ms);
    double (*leaves)(void *ctx, double ready, size_t bytes);
} rtl_serve_hooks;

typedef struct rtl_serve_options {
    const char *host;            /* address to bind (NULL: 127.0.0.1) */
    int port;                    /* 0: any free port (see rtl_server_port) */
    int max_clients;             /* 0: 128 */
    uint32_t max_frame;          /* largest frame accepted after a connection's first authenticated
                                  * frame, bytes (0: derived from the installed models when the server
                                  * opens: rtl_server_max_frame; before that frame, at most
                                  * RTL_PEER_PREAUTH_FRAME) */
    int handshake_ms;            /* the handshake must end within this of the connection's start, and
                                  * its first authenticated frame within this + frame_ms (0: 5000) */
    int frame_ms;                /* a frame must end within this of its first byte (0: 30000) */
    int idle_ms;                 /* idle connections close after (0: 60000) */
    int threads;                 /* compute threads of each model served (rtl_model_options.threads) */
    const struct rtl_serve_hooks *hooks; /* NULL: none (copied when the server opens) */
    int max_per_source;          /* connections at once from one address (0: 64) */
    double handshake_rate;       /* new connections a second from one address, bursts of twice as many
                                  * (0: 50); those beyond are closed at once */
    uint64_t max_memory;         /* all connections' frame buffers together, bytes (0: 8 x max_frame,
                                  * at least 64 MiB); a frame that would pass it waits */
} rtl_serve_options;

/* The largest frame a connection may send before its first authenticated
 * frame (the device's first frame, rtl_peer_connect's, is far smaller). */
#define RTL_PEER_PREAUTH_FRAME 4096u


typedef struct rtl_server rtl_server;

/* Binds and listens; runs nothing yet. allowed: n device public keys. */
RTL_API rtl_server *rtl_server_open(rtl_store *store, const rtl_peer_key *server_key, const rtl_peer_key *allowed,
                                    size_t n_allowed, const rtl_serve_options *o, rtl_err *err);
RTL_API int rtl_server_port(const rtl_server *s);
/* Serves until stop_fd becomes readable (e.g. a pipe a SIGTERM handler
 * writes to): then stops accepting, finishes the requests it holds, and
 * returns 0. Log lines (one per connection event, with the reason when a
 * connection is closed) go to the store's log callback. */
RTL_API int rtl_server_run(rtl_server *s, int stop_fd, rtl_err *err);
RTL_API void rtl_server_close(rtl_server *s);

typedef struct rtl_server_stats {
    uint64_t accepted, refused_key, closed_bad_frame, requests, replies, errors;
    uint64_t refused_limit; /* connections refused by max_per_source or handshake_rate */
} rtl_server_stats;
RTL_API void rtl_server_get_stats(const rtl_server *s, rtl_server_stats *out);

typedef struct rtl_peer rtl_peer;

/* Connects to host:port and runs the handshake as device `me`, pinning
 * server_pk; timeout_ms bounds the connect and the handshake. */
RTL_API rtl_peer *rtl_peer_connect(const char *host, int port, const rtl_peer_key *me,
                                   const unsigned char server_pk[RTL_PEER_PK_BYTES], int timeout_ms,
                                   rtl_err *err);
RTL_API void rtl_peer_close(rtl_peer *p);


/* The steps of a part's call on the device (rtl_gtdp_part_rec.t): its
 * thread given the part; its request's floats written into the frame, the
 * frame sealed, sent; the reply's first bytes here, all of it here,
 * opened, its answer placed in the map. */
enum {
    RTL_IO_T_START,
    RTL_IO_T_FILLED,
    RTL_IO_T_SEALED,
    RTL_IO_T_SENT,
    RTL_IO_T_REPLY,
    RTL_IO_T_RECEIVED,
    RTL_IO_T_OPENED,
    RTL_IO_T_PLACED,
    RTL_IO_T_N
};

/* One part of a run as the device saw it (rtl_gtdp_stats.rec): the
 * plan's predicted compute and transfer, the wall time from the block's
 * start here until its worker's answer was here, and when each step of its
 * call ended (ms from the block's start; 0 for a step not reached). */
typedef struct rtl_gtdp_part_rec {
    int layer, worker;
    double compute_ms, transfer_ms, wall_ms;
    double t[RTL_IO_T_N];
    size_t sent, answered; /* floats */
} rtl_gtdp_part_rec;
#define RTL_GTDP_MAX_REC 256

/* A piece of a run's forward on the device (rtl_gtdp_stats.blk): a split
 * block (layers layer..last over the workers) or layers the device runs
 * itself (device = 1); ms from the forward's start. */
typedef struct rtl_gtdp_block_rec {
    int layer, last, device;
    double start_ms, end_ms;
} rtl_gtdp_block_rec;
#define RTL_GTDP_MAX_BLK 64

typedef struct rtl_gtdp_stats {
    int split_layers;        /* blocks (a convolution, with its max pool) spread over the workers */
    int parts;               /* parts sent */
    int recomputed;          /* parts whose worker failed, computed here instead */
    uint64_t bytes;          /* floats moved both ways, as bytes */
    int held;                /* parts sent without the input rows their worker held */
    char last_failure[256];  /* why the last failed part failed */
    int nrec;                /* the answered parts of this run (the first RTL_GTDP_MAX_REC) */
    rtl_gtdp_part_rec rec[RTL_GTDP_MAX_REC];
    int nblk;                /* the pieces of this run (the first RTL_GTDP_MAX_BLK) */
    rtl_gtdp_block_rec blk[RTL_GTDP_MAX_BLK];
    double total_ms;         /* the whole forward, output set */
} rtl_gtdp_stats;

/* What a run's records (rtl_gtdp_stats.rec, .blk) say beyond the plan:
 * the host-side tool's rtl_gtdp_part_overhead, _block_ms, _fit_parts,
 * _block_extra (runtime-lite/sim/rtl_sim.h), no part of librtl. */
/* Restricts the cuts GTDP's planner may make in the block starting at
 * layer (dims: RTL_GTDP_ROWS, RTL_GTDP_CHANNELS, 0: both, the default),
 * for every later plan of m (rtl_gtdp_run, rtl_gtdp_model_layer); layer
 * -1: every block. rtl run --workers chooses it per block from forwards
 * measured over the workers (rtl_gtdp_cli.c). -1 with err on a bad layer
 * or dims. */
RTL_API int rtl_gtdp_set_dims(rtl_model *m, int layer, int dims, rtl_err *err);
/* What a host-side tool may hook into every later rtl_gtdp_run of m (h is
 * copied; NULL: none), e.g. rtl run --part-cpus, which emulates several
 * devices on one machine by pinning the device's part threads
 * (runtime-lite/sim/emulate.c, the build host's rtl only; librtl pins
 * nothing itself). Each may be NULL. part_cpu: the CPU (-1: none) that the
 * device's thread running worker's part (its request sealed and sent, its
 * reply opened and placed) is to run on; a part whose CPU no other part
 * has may poll while it waits for a hand-over. enter_cpu: called on that
 * thread before its part when part_cpu named a CPU. leave: called on
 * rtl_gtdp_run's calling thread (it runs the last part) before it
 * returns. -1 with err when out of memory. */
typedef struct rtl_gtdp_hooks {
    void *ctx;
    int (*part_cpu)(void *ctx, int worker);
    void (*enter_cpu)(void *ctx, int cpu);
    void (*leave)(void *ctx);
} rtl_gtdp_hooks;
RTL_API int rtl_gtdp_set_hooks(rtl_model *m, const rtl_gtdp_hooks *h, rtl_err *err);

/* One forward of m on x (rtl_model_info.input_size floats) with every
 * convolutional layer between possible cuts spread by GTDP over the
 * workers peers[0..n) (their speeds and links w[]; a NULL peer is down).
 * The device runs the other layers and assembles the parts. A worker that
 * fails (gone, timeout after deadline_ms, an error) has its part computed
 * here and gets no more parts: its connection is closed and peers[i] set to
 * NULL; with no worker left everything runs here. flags: RTL_GTDP_EQUAL
 * replaces GTDP's plan by equal row bands (the reference it is measured
 * against; GTDP's where a layer has fewer rows than workers);
 * RTL_GTDP_RESEND sends every part its whole input, even the rows its
 * worker holds as its answer of the block before (by default those are not
 * sent again: frame.c, held request). The answer is rtl_model_output's. */
#define RTL_GTDP_EQUAL 1
#define RTL_GTDP_RESEND 2
RTL_API int rtl_gtdp_run(rtl_model *m, rtl_peer **peers, const rtl_gtdp_worker *w, int n, const float *x,
                         int deadline_ms, int flags, rtl_gtdp_stats *st, rtl_err *err) RTL_MUST_CHECK;

/* What a host-side tool may hook into rtl_offload_run (NULL: none), e.g.
 * rtl run --split --device-factor F, which paces the device pieces as a
 * device F times slower would (runtime-lite/sim/emulate.c, the build
 * host's rtl only; librtl paces nothing itself). device_piece: called on
 * the calling thread after each piece of layers first..last ran here, with
 * the thread's CPU time and the wall time the piece took; it may wait. */
typedef struct rtl_offload_hooks {
    void *ctx;
    void (*device_piece)(void *ctx, const rtl_model *m, int first, int last, double cpu_ms, double wall_ms);
} rtl_offload_hooks;

/* Runs model m on x by plan: device pieces here, cloud pieces through peer
 * (NULL: none, everything runs here). When the peer fails, the rest runs
 * on the device from the last activation held. hooks: above (NULL: none).
 * The result is rtl_model_output's. */
typedef struct rtl_offload_result {
    int ran_on_cloud;            /* layers the cloud ran */
    int fell_back;               /* 1: the peer failed and the device finished */
    char where[64];              /* "device", "cloud", "split", "device (fallback)" */
    char reason[RTL_ERR_MAX];    /* why it fell back */
    double ms;                   /* wall time */
} rtl_offload_result;
RTL_API int rtl_offload_run(rtl_model *m, const rtl_plan *plan, rtl_peer *peer, const float *x,
                            const rtl_offload_hooks *hooks, int deadline_ms, rtl_offload_result *res,
                            rtl_err *err) RTL_MUST_CHECK;


/* ---- the scheduler (src/sched.c, sched_nest.c, sched_catalog.c, sched_sim.c)
 *
 * Applications register tasks; each task has options (a variant of an
 * installed catalog at one capacity or alpha, with its costs) and, per
 * request, rtl_sched_decide picks one option and a location (device,
 * split, cloud) under the budgets of that moment, pages models in and out
 * (LRU per location) and charges the predicted costs. The policy is one of
 * a table: MCDNN's Algorithm 1 (mcdnn-mobisys16 section 4.2, with the
 * printed errors fixed, each fix a comment in sched.c), NestDNN's
 * MinTotalCost and MinMaxCost (thesis section 3.4.3, sched_nest.c) and the
 * strawmen the papers compare against. Budgets change at any moment
 * (rtl_sched_set_budget) and hold from the next decision on. The scheduler
 * holds no clock: callers pass the time of each request. */

enum rtl_loc { RTL_LOC_DEVICE, RTL_LOC_SPLIT, RTL_LOC_CLOUD, RTL_LOC_COUNT };
/* "device", "split", "cloud" */
RTL_API const char *rtl_loc_name(enum rtl_loc l);

enum rtl_policy {
    RTL_POLICY_MCDNN,        /* Algorithm 1: per-request budgets, LRU paging, device/split/cloud */
    RTL_POLICY_NEST_TOTAL,   /* NestDNN MinTotalCost (greedy, du = 1%) */
    RTL_POLICY_NEST_MAX,     /* NestDNN MinMaxCost */
    RTL_POLICY_DEVICE_ONLY,  /* most accurate on the device, no pacing */
    RTL_POLICY_CLOUD_ONLY,   /* most accurate on the cloud, no pacing */
    RTL_POLICY_NO_SHARING,   /* MCDNN; each head runs and holds its own trunk */
    RTL_POLICY_NO_SPECIAL,   /* MCDNN without specialised variants */
    RTL_POLICY_KNEE,         /* one fixed model per task: the knee of its accuracy/latency curve */
    RTL_POLICY_COUNT
};
typedef struct rtl_policy_info {
    const char *name;        /* "mcdnn", "nest-total", ... (the CLI's names) */
    const char *summary;
    unsigned locations;      /* where it may run a task: bit 1u << RTL_LOC_x per location */
    int paced;               /* 1: MCDNN's per-request budgets spread the energy and cloud budgets over
                                the horizon; 0: it spends without pacing (the strawmen) */
    int planned;             /* 1: one option per task, planned for the running tasks (the knee,
                                NestDNN's compute shares); 0: chosen per request (MCDNN's cache) */
} rtl_policy_info;
/* The policy table's row p (NULL when out of range); by name (-1: none).
 * Each row carries its behaviour (runtime-lite/src/sched.c, policies[]);
 * adding a policy: runtime-lite/README.md, "Adding a policy". */
RTL_API const rtl_policy_info *rtl_policy_get(enum rtl_policy p);
RTL_API int rtl_policy_find(const char *name);

/* One choice for a task. Costs are per request at 100% compute. */
typedef struct rtl_sched_option {
    char variant[RTL_ID_MAX + 1];
    int capacity;            /* nested: rtl_model_set_capacity's k (1 = the first of capacities[]); -1: not */
    double alpha;            /* early-exit knob; 0: no exits */
    double top1;             /* accuracy in [0, 1] */
    uint32_t images;         /* test images behind top1 (0: unknown) */
    double device_ms, device_mj;  /* on the device */
    double cloud_ms;         /* on the cloud, input transfer included; < 0: cannot */
    double split_frac;       /* t_n: share of device_ms before the split point; 0: no split */
    uint64_t bytes;          /* device memory when loaded (its trunk apart) */
    int trunk;               /* index of a shared trunk (rtl_sched_add_trunk); -1: none */
    int context_n;           /* specialised: its (n, p); 0: generic */
    double context_p;
    int partner;             /* specialised: option index of the cascade partner; -1 */
    /* specialised, when its classes are known (nclasses > 0): it serves
     * while they hold a share q >= context_p of the task's window (else:
     * while the top context_n classes do), and its accuracy is then its
     * partner's top1 + q gain_in + (1 - q) gain_out (top1 unused): the
     * cascade's measured gains over its partner on the context's frames
     * and on the rest (prune specialise's cascade_in_context against
     * generic_in_context, on the context's test stream) */
    uint32_t context_classes[RTL_CONTEXT_MAX_N];
    size_t context_nclasses;
    double gain_in, gain_out;
    char source[16];         /* where device_ms comes from: "device", "estimate", "build-host" */
} rtl_sched_option;

/* A shared trunk (MCDNN's sharing): run once per frame for all the heads
 * on it, held once in memory. */
typedef struct rtl_sched_trunk {
    char variant[RTL_ID_MAX + 1];
    double device_ms, device_mj, cloud_ms;
    uint64_t bytes;
} rtl_sched_trunk;

typedef struct rtl_sched_task {
    char name[RTL_ID_MAX + 1];      /* the application's name for it */
    char task[RTL_ID_MAX + 1];      /* the catalog's task */
    rtl_sched_option *options;      /* copied */
    size_t n;
    double a_min;            /* NestDNN's A_min (0..1) */
    double l_max_ms;         /* NestDNN's L_max */
} rtl_sched_task;

typedef struct rtl_sched_budget {
    uint64_t memory_bytes;   /* device memory for models; 0: unlimited */
    double latency_ms;       /* per request; 0: none */
    double energy_mj;        /* device energy left for the horizon; < 0: none */
    double cloud_usd;        /* cloud money left for the horizon; < 0: none */
    double horizon_s;        /* the horizon ends this long after the budget is set */
    int disconnected;        /* 1: no cloud */
    double link_factor;      /* cloud latency multiplier for the link (0: 1) */
} rtl_sched_budget;

typedef struct rtl_sched_config {
    enum rtl_policy policy;
    double usd_per_cloud_s;  /* 0: MCDNN's 1.8e-4 */
    double load_mj_per_mb;   /* device energy to page in a MB (0: 2) */
    double load_ms_per_mb;   /* time to page in a MB (0: 5) */
    double miss_ms;          /* acceptable miss latency (load + run; 0: 1000) */
    double nest_alpha;       /* NestDNN's alpha (< 0: 0) */
    double camera_fps;       /* NestDNN frame rate cap (0: 30) */
    int context_window;      /* requests in the class-frequency window (0: 100) */
    int knee_any;            /* knee policy: 1: the knee of every standalone option (MCDNN's fixed-model
                                strawman); 0: of a nested model's capacities when the task has one
                                (NestDNN's baseline), else of every standalone option */
    int estimates_meet_budgets; /* 1: a roofline estimate (option source "estimate", a lower bound) may
                                meet the latency budget (a simulation, which has nothing else); 0 (a
                                runtime): only a measured latency meets it, and an option known only by
                                its estimate is refused under a latency budget (the reason says so) */
} rtl_sched_config;

typedef struct rtl_sched_decision {
    int task, option;        /* option -1: refused (reason says why) */
    enum rtl_loc loc;
    double top1, latency_ms, energy_mj, cloud_usd;
    double share;            /* NestDNN compute share u (1 for other policies) */
    int hit;                 /* 1: served from the cache */
    int paged_in, paged_out; /* models loaded and evicted by this decision */
    int shared_trunk;        /* 1: the trunk's output was reused */
    char reason[192];
    double load_ms, load_mj; /* of latency_ms and energy_mj: paging in (0 when nothing was) */
    char source[16];         /* where latency_ms's compute part comes from: the option's source
                                ("device": measured on this device, "build-host": measured on the
                                build host, "estimate": a roofline lower bound) */
} rtl_sched_decision;

typedef struct rtl_sched rtl_sched;

RTL_API rtl_sched *rtl_sched_new(const rtl_sched_config *c, rtl_err *err);
RTL_API void rtl_sched_free(rtl_sched *s);
/* Registers an application's task; its index, or -1. */
RTL_API int rtl_sched_add_task(rtl_sched *s, const rtl_sched_task *t, rtl_err *err);
RTL_API const rtl_sched_task *rtl_sched_task_at(const rtl_sched *s, size_t i);
/* The budgets from time now (seconds) on: what is left and until when. */
RTL_API int rtl_sched_set_budget(rtl_sched *s, const rtl_sched_budget *b, double now, rtl_err *err);
RTL_API void rtl_sched_get_budget(const rtl_sched *s, rtl_sched_budget *b);
/* NestDNN's per-task goals: A_min (0..1) and L_max (ms). */
RTL_API int rtl_sched_set_goal(rtl_sched *s, int task, double a_min, double l_max_ms, rtl_err *err);
/* NestDNN: which tasks run concurrently (a change re-plans the shares). */
RTL_API int rtl_sched_set_active(rtl_sched *s, int task, int active, rtl_err *err);
/* One request of task at time now on frame `frame` (requests of one frame
 * share trunk outputs); cls: the class the frame holds when known (the
 * context profiler's window), -1 otherwise. Fills d and charges its
 * predicted costs. A refusal is d->option = -1 and returns 0; -1 is for
 * bad arguments only. */
RTL_API int rtl_sched_decide(rtl_sched *s, int task, double now, uint64_t frame, int cls,
                             rtl_sched_decision *d, rtl_err *err);

/* Options of a catalog's variants for task (NULL: every task the catalog
 * has; one rtl_sched_task per task name, appended to *tasks, *n grows).
 * Latency: this device's profile, else the estimate for target (CPU
 * figures), else the build host's measurement; energy: the estimate's, else
 * latency times device_mw. Nested variants give one option per capacity,
 * early-exit variants one per alpha of their profile, heads a trunk. */
typedef struct rtl_sched_source {
    const char *target;      /* estimate target (NULL: "jetson-nano") */
    double device_mw;        /* power while computing (0: 5000) */
    double cloud_gflops;     /* cloud speed for cloud_ms (0: 3500, a K20c) */
    double uplink_mbps;      /* input upload (0: 18.88, WiFi of JointDNN Table 3) */
    double rtt_ms;           /* (0: 20) */
    int loadable_only;       /* 1: only variants this runtime can load (rtl_variant_loadable) */
} rtl_sched_source;
RTL_API int rtl_sched_add_catalog(rtl_sched *s, const rtl_catalog *cat, const char *task, const char *app,
                                  const rtl_sched_source *src, rtl_err *err);

/* ---- the runner (runtime-lite/src/runner.c) ---------------------------------
 *
 * What an application runs a catalog through: variants are opened on
 * their first request and stay open (warm), a specialised variant with its
 * cascade partner (in the catalog, or in the catalog the add-on extends,
 * installed at its version); several tasks run with their heads on one
 * trunk (rtl_runner_set_tasks). With options.context, each task's answers go
 * through a context profiler, and while a specialised model installed for
 * the task (the catalog's own, or an installed add-on's built for the
 * catalog's version) matches the window and its partner is the variant
 * asked for, it answers first through its cascade: on its "other" class,
 * or a probability under its cascade's gate, the partner answers.
 * rtl_runner_serve is the scheduled executor: the scheduler decides, the
 * runner pages the chosen model in (opens it; capacity and alpha switched
 * in place), runs it, feeds the measured time back (rtl_sched_account) and
 * after a frame's last task closes the models no slot of the scheduler
 * holds while the open ones exceed its memory budget, least recently used
 * first (the others stay open, warm: a switch back is not a reload). A runner, its models and its catalog are used by one thread at a
 * time; the catalog (and store) must outlive it. */

typedef struct rtl_runner rtl_runner;

typedef struct rtl_runner_options {
    int threads;             /* as rtl_model_options.threads */
    int context;             /* 1: profile answers, cascade through matching specialised models */
    rtl_context_params context_params; /* the profiler's (classes: the task's label count) */
    int dry_run;             /* rtl_runner_serve decides only: nothing opened or run */
    int no_feedback;         /* rtl_runner_serve: keep the predictions (no rtl_sched_account) */
    /* warnings (a specialised model or an add-on that is not used, and why);
     * NULL: none are reported */
    void (*warn)(void *arg, const char *msg);
    void *warn_arg;
} rtl_runner_options;

/* A runner over cat (store st may be NULL: no add-ons then); options may
 * be NULL (defaults: zeros). */
RTL_API rtl_runner *rtl_runner_new(rtl_store *st, rtl_catalog *cat, const rtl_runner_options *options,
                                   rtl_err *err);
RTL_API void rtl_runner_free(rtl_runner *r);

typedef struct rtl_runner_request {
    const char *variant;
    int capacity;            /* > 0: run this capacity of a nested variant (an error for another) */
    double alpha;            /* >= 0: the early-exit knob (an error without exits); < 0: keep */
    const char *image;       /* PNG, JPEG or BMP, preprocessed as rtl_model_run_image's */
} rtl_runner_request;

typedef struct rtl_runner_result {
    const rtl_model *model;  /* the model that answered (rtl_model_top, _exit_taken); NULL: none */
    const char *answered_by; /* its variant's id */
    char cascade[2 * RTL_ID_MAX + 2]; /* context: "CATALOG/VARIANT" of the specialised model
                                       * that ran first; "" when none did */
    double ms;               /* the runs' time (image decoding apart); a dry run: the prediction */
    int cold;                /* the variant was opened for this request */
    int bad_input;           /* the error is the image's (it could not be read) */
    int switched;            /* context: the specialised model in use changed at this request */
    double share, p;         /* context: its classes' share of the window, and its p */
    uint32_t samples;        /* context: answers in the window before this one */
} rtl_runner_result;

/* Opens q's variant (when it is not open) and sets its knobs, without
 * running anything: the errors a request of it would give, at once;
 * *model (may be NULL) the model. With options.context, also the variant's
 * task's profiler and specialised models, and a specialised variant is
 * refused (it always runs as a cascade: give its partner). */
RTL_API int rtl_runner_prepare(rtl_runner *r, const rtl_runner_request *q, const rtl_model **model,
                               rtl_err *err) RTL_MUST_CHECK;
/* Runs q (its variant, a cascade when specialised or when a specialised
 * model matches the context) on q->image into *res. -1 with err, and
 * res->bad_input when the image could not be read. */
RTL_API int rtl_runner_run(rtl_runner *r, const rtl_runner_request *q, rtl_runner_result *res,
                           rtl_err *err) RTL_MUST_CHECK;
/* One request of the scheduler's task on image at time now of frame
 * (rtl_sched_decide), executed: *d the decision (d->option < 0: refused,
 * res->model NULL, 0 returned; d->task -1: the decision itself failed),
 * *res its run. */
RTL_API int rtl_runner_serve(rtl_runner *r, rtl_sched *s, int task, double now, uint64_t frame, const char *image,
                             rtl_sched_decision *d, rtl_runner_result *res, rtl_err *err) RTL_MUST_CHECK;
/* With options.context: the profiler over task's answers (made on first
 * use; answers from elsewhere may be observed into it), NULL with err. */
RTL_API rtl_context_profiler *rtl_runner_profiler(rtl_runner *r, const char *task, rtl_err *err);
/* The specialised models for task: the i-th into *out; 1, or 0 past the
 * last, -1 with err. */
typedef struct rtl_specialised {
    char catalog[RTL_ID_MAX + 1], variant[RTL_ID_MAX + 1], partner[RTL_ID_MAX + 1];
    const uint32_t *classes; /* the task's class indices it answers (n of them) */
    size_t n;
    double p;                /* its context share (0.6 when its manifest has none) */
    double share;            /* its classes' share of the window now */
    int matches;             /* 1: the window matches it (the best of any partner) */
    int in_use;              /* 1: it answers first now */
} rtl_specialised;
RTL_API int rtl_runner_specialised(rtl_runner *r, const char *task, size_t i, rtl_specialised *out, rtl_err *err);

/* Several tasks on one input (MCDNN 4.1.3, shared trunks): for each of
 * tasks[0..n) the variant that answers it, opened: a head (prune
 * retarget) whose parent answers another of the tasks, so that their
 * trunk runs once, else the task's most accurate variant that is not a
 * head, else its most accurate head; models (may be NULL) gets them, in
 * the tasks' order (owned by the runner, valid until the next call or
 * rtl_runner_free). -1 with err naming a task the catalog lacks (and its
 * tasks) or one without a variant this runtime can load. */
#define RTL_RUNNER_MAX_TASKS 32
RTL_API int rtl_runner_set_tasks(rtl_runner *r, const char *const *tasks, size_t n, rtl_model **models,
                                 rtl_err *err) RTL_MUST_CHECK;
/* Runs the tasks set on image: each shared trunk once, its output fanned
 * out to its heads (rtl_model_run_tasks); each model's rtl_model_output
 * is then its task's answer, *trunk_runs (may be NULL) the trunk forwards. */
RTL_API int rtl_runner_run_tasks(rtl_runner *r, const char *image, size_t *trunk_runs, rtl_err *err) RTL_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif /* RTL_H */
