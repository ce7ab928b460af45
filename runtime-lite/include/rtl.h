/*
 * rtl.h: runtime-lite, the device library (the one public header of
 * runtime-lite/; every exported name starts with rtl_ or RTL_).
 *
 * What it does today: minisign signatures (parse, verify), installing signed
 * catalog archives into a store on the device (verify before extract, safe
 * entries only, anti-rollback, atomic switch, rollback), and read access to
 * installed catalogs (variants and the paths of their files) for a loader.
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
 *   appended, and the opaque types (rtl_store, rtl_catalog, rtl_variant) grow
 *   behind accessors, so a loader can be added without breaking callers.
 */
#ifndef RTL_H
#define RTL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RTL_VERSION "0.1.0"

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

/* ---- minisign signatures --------------------------------------------------
 * Keys and signatures in minisign's formats (see runtime-lite/src/sig.c for
 * the byte layouts). Only prehashed signatures (algorithm "ED": Ed25519 over
 * the BLAKE2b-512 hash of the file) are accepted, so files are hashed as a
 * stream and never read whole. */

#define RTL_KEYNUM_BYTES 8
#define RTL_PUBKEY_BYTES 32
#define RTL_SIG_BYTES 64
#define RTL_HASH_BYTES 64      /* BLAKE2b-512 */
#define RTL_SHA256_BYTES 32
#define RTL_COMMENT_MAX 1024   /* untrusted comment, prefix excluded */
#define RTL_TRUSTED_MAX 8192   /* trusted comment, prefix excluded */
#define RTL_ID_MAX 64          /* catalog, model and variant ids */

typedef struct rtl_pubkey {
    uint8_t keynum[RTL_KEYNUM_BYTES];
    uint8_t pk[RTL_PUBKEY_BYTES];
} rtl_pubkey;

typedef struct rtl_signature {
    uint8_t keynum[RTL_KEYNUM_BYTES];
    uint8_t sig[RTL_SIG_BYTES];        /* over BLAKE2b-512(file) */
    uint8_t global_sig[RTL_SIG_BYTES]; /* over sig || trusted */
    char untrusted[RTL_COMMENT_MAX];
    char trusted[RTL_TRUSTED_MAX];
} rtl_signature;

/* Parses a public key: the text of a minisign .pub file (comment line, then
 * the base64 line) or the bare base64 string alone (minisign -P). */
RTL_API int rtl_pubkey_parse(const char *text, size_t len, rtl_pubkey *out, rtl_err *err);
/* Reads and parses a .pub file; errors name the file. */
RTL_API int rtl_pubkey_load(const char *path, rtl_pubkey *out, rtl_err *err);
/* The key id as minisign prints it: 16 upper-case hex digits. */
RTL_API void rtl_keynum_hex(const uint8_t keynum[RTL_KEYNUM_BYTES], char out[17]);

/* Parses the text of a .minisig file; errors name the line. */
RTL_API int rtl_sig_parse(const char *text, size_t len, rtl_signature *out, rtl_err *err);
RTL_API int rtl_sig_load(const char *path, rtl_signature *out, rtl_err *err);

/* BLAKE2b-512 of everything readable from fd (from its current offset to
 * EOF) or of the file at path, read in blocks. */
RTL_API int rtl_hash_fd(int fd, uint8_t out[RTL_HASH_BYTES], rtl_err *err);
RTL_API int rtl_hash_file(const char *path, uint8_t out[RTL_HASH_BYTES], rtl_err *err);

/* Verifies sig against one key: the key ids match, sig signs `hash`, and the
 * global signature signs sig || trusted comment. The message says which of
 * the three failed. */
RTL_API int rtl_sig_verify_hash(const rtl_signature *sig, const rtl_pubkey *key,
                                const uint8_t hash[RTL_HASH_BYTES], rtl_err *err) RTL_MUST_CHECK;
/* Verifies only the global signature (trusted comment), for a file that is
 * no longer at hand (an installed catalog keeps its .minisig). */
RTL_API int rtl_sig_verify_comment(const rtl_signature *sig, const rtl_pubkey *key,
                                   rtl_err *err) RTL_MUST_CHECK;
/* Hashes the file at path and verifies sig with whichever of keys[0..n) has
 * the signature's key id; *used (may be NULL) gets that key's index. */
RTL_API int rtl_sig_verify_file(const rtl_signature *sig, const rtl_pubkey *keys, size_t n,
                                const char *path, size_t *used, rtl_err *err) RTL_MUST_CHECK;

/* ---- the catalog's trusted comment ----------------------------------------
 * Catalog signatures carry, in the signed trusted comment, tab-separated
 * key:value fields (order free, unknown keys ignored, a repeated key is an
 * error):
 *   timestamp:<SOURCE_DATE_EPOCH>  file:<archive name>  hashed
 *   catalog:<id>  version:<N>  model:<model>  manifest-sha256:<64 hex>
 *   key:development   (only when signed by a development key)
 * catalog, version and manifest-sha256 are required by rtl_install: they let
 * the device refuse an old version before extracting anything and re-verify
 * an installed catalog (manifest, then every file) without the archive. */
typedef struct rtl_sig_info {
    char catalog[RTL_ID_MAX + 1];
    char model[RTL_ID_MAX + 1];   /* "" when absent */
    char file[256];               /* "" when absent */
    uint64_t version;
    int64_t timestamp;            /* -1 when absent */
    uint8_t manifest_sha256[RTL_SHA256_BYTES];
    int development_key;          /* 1: "key:development" was present */
} rtl_sig_info;

/* Parses the catalog fields of a trusted comment. */
RTL_API int rtl_trusted_parse(const char *trusted, rtl_sig_info *out, rtl_err *err) RTL_MUST_CHECK;
/* Formats info as a trusted comment into out (size bytes). */
RTL_API int rtl_trusted_format(const rtl_sig_info *info, char *out, size_t size, rtl_err *err);
/* The untrusted comment catalog tools write for a signature: it is derived
 * from the trusted comment and the key id, so it can be checked although the
 * signature does not cover it (a misleading label is refused). */
RTL_API int rtl_untrusted_expected(const rtl_sig_info *info, const uint8_t keynum[RTL_KEYNUM_BYTES],
                                   char *out, size_t size, rtl_err *err);
/* Accepts sig's untrusted comment when it is the one derived above or
 * minisign's default ("signature from minisign secret key"). */
RTL_API int rtl_untrusted_check(const rtl_signature *sig, rtl_err *err) RTL_MUST_CHECK;

/* SHA-256 and size of everything readable from fd (from its offset to EOF),
 * or of the file at path, read in blocks. */
RTL_API int rtl_sha256_fd(int fd, uint8_t out[RTL_SHA256_BYTES], uint64_t *size, rtl_err *err);
RTL_API int rtl_sha256_file(const char *path, uint8_t out[RTL_SHA256_BYTES], uint64_t *size, rtl_err *err);

/* SHA-256 in lower-case hex (65 bytes with the NUL). */
RTL_API void rtl_sha256_hex(const uint8_t sha[RTL_SHA256_BYTES], char out[65]);

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

RTL_API const char *rtl_catalog_id(const rtl_catalog *cat);
RTL_API const char *rtl_catalog_model(const rtl_catalog *cat);
RTL_API uint64_t rtl_catalog_version(const rtl_catalog *cat);
/* The folder the catalog's files are in ("" when parsed without one). */
RTL_API const char *rtl_catalog_dir(const rtl_catalog *cat);

/* Tasks (label sets): names and their labels, in manifest order. */
RTL_API size_t rtl_catalog_task_count(const rtl_catalog *cat);
RTL_API const char *rtl_catalog_task_name(const rtl_catalog *cat, size_t i);
/* Labels of task `name`; *n gets their count; NULL when the task is unknown. */
RTL_API const char *const *rtl_catalog_task_labels(const rtl_catalog *cat, const char *name, size_t *n);

RTL_API size_t rtl_catalog_variant_count(const rtl_catalog *cat);
RTL_API const rtl_variant *rtl_catalog_variant_at(const rtl_catalog *cat, size_t i);
/* NULL when no variant has that id. */
RTL_API const rtl_variant *rtl_catalog_find(const rtl_catalog *cat, const char *id);

RTL_API const char *rtl_variant_id(const rtl_variant *v);
RTL_API const char *rtl_variant_technique(const rtl_variant *v);
RTL_API const char *rtl_variant_task(const rtl_variant *v);
RTL_API const char *rtl_variant_parent(const rtl_variant *v); /* NULL: none */
RTL_API const char *rtl_variant_description(const rtl_variant *v);
RTL_API size_t rtl_variant_depends_count(const rtl_variant *v);
RTL_API const char *rtl_variant_depends_at(const rtl_variant *v, size_t i);

RTL_API size_t rtl_variant_file_count(const rtl_variant *v);
RTL_API const char *rtl_variant_file_role(const rtl_variant *v, size_t i);
/* Path of file i: the catalog folder joined with its archive path. */
RTL_API const char *rtl_variant_file_path(const rtl_variant *v, size_t i);
RTL_API uint64_t rtl_variant_file_size(const rtl_variant *v, size_t i);
/* Path of the first file with `role` ("cfg", "weights", ...), or NULL. */
RTL_API const char *rtl_variant_file(const rtl_variant *v, const char *role);

enum rtl_cost {
    RTL_COST_MACS,
    RTL_COST_PARAMS,
    RTL_COST_WEIGHT_BYTES,
    RTL_COST_PEAK_ACTIVATION_BYTES,
    RTL_COST_COUNT
};
RTL_API uint64_t rtl_variant_cost(const rtl_variant *v, enum rtl_cost which);
/* Accuracy measured for task (NULL: the variant's own task); -1 when the
 * manifest has none (top5 is -1 where classes <= 5). */
RTL_API int rtl_variant_accuracy(const rtl_variant *v, const char *task, double *top1, double *top5);
/* The variant's technique_fields object as compact JSON text ("{}" when
 * absent): capacities, exits, fragments, context and cascade live there
 * until loaders grow typed accessors for them. */
RTL_API const char *rtl_variant_fields_json(const rtl_variant *v);

#ifdef __cplusplus
}
#endif
#endif /* RTL_H */
