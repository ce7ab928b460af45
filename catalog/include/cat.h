/*
 * cat.h: the catalog library (libcat), the build side of catalogs: key
 * generation and signing, the manifest and its JSON Schema, winnowing,
 * target estimates, deterministic packing, inspection and the report. The
 * one public header of catalog/; every exported name starts with cat_/CAT_.
 *
 * Conventions (as in trn.h, whose error buffer and I/O helpers it uses):
 * - Library code never exits and never prints; a failing function returns -1
 *   (NULL for constructors) and fills the caller's trn_err.
 * - Returned objects are owned by the caller and freed with the matching
 *   free function.
 * - Same inputs give the same bytes out: JSON keys are sorted, archives carry
 *   fixed metadata, Ed25519 signatures are deterministic.
 * Verification of signatures lives in runtime-lite (rtl.h), which devices
 * link; this library adds what only the build side does.
 */
#ifndef CAT_H
#define CAT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "rtl.h"
#include "rtl_sign.h"
#include "trn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CAT_VERSION "0.1.0"

/* ---- keys and signing (catalog/src/keys.c) ----------------------------------- */

/* How a new secret key file is protected: not at all, or encrypted with a
 * key derived from a passphrase by scrypt at minisign's "interactive" cost
 * (fast: test and CI keys) or "sensitive" cost (minisign's default: about a
 * second and 1 GiB of memory). */
enum cat_kdf {
    CAT_KDF_NONE,
    CAT_KDF_INTERACTIVE,
    CAT_KDF_SENSITIVE,
    CAT_KDF_COUNT
};

typedef struct cat_seckey cat_seckey;

/* Writes a new key pair: pub (minisign public key file) and sec (minisign
 * secret key file, mode 0600, encrypted unless kdf is CAT_KDF_NONE, in which
 * case passphrase must be NULL). Refuses to replace existing files unless
 * force. development marks the key (in both files' comments) as one devices
 * must never trust. key_id (may be NULL) gets the new key id. */
int cat_keygen(const char *pub, const char *sec, const char *passphrase, enum cat_kdf kdf, int development,
               int force, char key_id[17], trn_err *err);

/* Loads a minisign secret key file (unencrypted, or scrypt-encrypted with
 * passphrase). A wrong passphrase is reported as such. */
cat_seckey *cat_seckey_load(const char *path, const char *passphrase, trn_err *err);
void cat_seckey_free(cat_seckey *key);
void cat_seckey_pubkey(const cat_seckey *key, rtl_pubkey *out);
int cat_seckey_is_development(const cat_seckey *key);

/* The passphrase from the first line of `file`, or from environment
 * variable `env` (exactly one of them non-NULL). Never prompts. */
int cat_passphrase(const char *file, const char *env, char *out, size_t size, trn_err *err);

/* Signs the file at path (prehashed, algorithm ED) with the given comments
 * and writes the .minisig to sig_path atomically. The signature is checked
 * with the key's public half before it is written. */
int cat_sign_file(const cat_seckey *key, const char *path, const char *trusted, const char *untrusted,
                  const char *sig_path, trn_err *err);

/* Signs a catalog archive: the trusted comment carries the catalog id,
 * version, model and manifest SHA-256 read from the archive's manifest, the
 * timestamp is the manifest's SOURCE_DATE_EPOCH (so signing is
 * deterministic), and the untrusted comment is the one rtl derives from
 * them. */
int cat_sign_archive(const cat_seckey *key, const char *archive, const char *sig_path, trn_err *err);

/* Fills info from the manifest inside archive (catalog, version, model,
 * SHA-256 of manifest.json, timestamp, file name). */
int cat_archive_info(const char *archive, rtl_sig_info *info, trn_err *err);

/* Verifies archive against sig with any of keys[0..n): the signature, the
 * global signature, the untrusted comment, and, when the trusted comment
 * carries catalog fields, that they match the archive's manifest. *info
 * (may be NULL) gets them; *has_fields says whether there were any. */
int cat_verify(const char *archive, const char *sig_path, const rtl_pubkey *keys, size_t n, rtl_sig_info *info,
               int *has_fields, trn_err *err) TRN_MUST_CHECK;

/* ---- the publish folder devices pull from (catalog/src/publish.c) --------- */

struct cat_publish_options {
    const char *archive;       /* the catalog to publish; NULL: only re-sign the index */
    const char *sig;           /* its signature; NULL: archive + ".minisig" */
    const char *dest;          /* the publish folder */
    const cat_seckey *key;     /* signs the index (and must have signed the archive) */
    const char *channel;       /* NULL: the index's, or "stable" for a new one */
    int64_t now;               /* issue time (Unix) */
    int64_t valid_for;         /* seconds until the index expires (> 0) */
    uint64_t serial;           /* 0: the index's + 1 */
    int objects;               /* 1: write objects/ (the per-file layout) */
    int allow_downgrade;       /* 1: publish an older version or a lower serial */
    int64_t max_validity;      /* the longest validity devices accept from this channel,
                                * recorded in the signed index; 0: the index's, else 90 days */
    uint64_t max_serial_step;  /* how far above the serial a device accepted last the next
                                * may be, recorded likewise; 0: the index's, else 1000000 */
};

struct cat_publish_result {
    char channel[RTL_ID_MAX + 1];
    char catalog[RTL_ID_MAX + 1];   /* "" when only the index was re-signed */
    uint64_t version, serial, objects;
    int64_t expires;
};

/* Publishes into o->dest (layout at the top of publish.c): the archive's
 * manifest and files under objects/ by SHA-256, the archive and signature
 * under <id>/, then index.json (this catalog's entry replaced, a new serial
 * and expiry) and its signature. Refuses an archive not signed by o->key. */
int cat_publish(const struct cat_publish_options *o, struct cat_publish_result *res, trn_err *err);

/* ---- JSON helpers (catalog/src/json.c) ------------------------------------- */

/* Parses JSON text of len bytes; anything but white space after the value
 * is an error. On error *error_offset (may be NULL) gets where it is. */
cJSON *cat_json_parse(const char *text, size_t len, size_t *error_offset);
/* Parses a JSON file; errors name the file, line, column and byte offset. */
cJSON *cat_json_load(const char *path, size_t max, trn_err *err);
/* Sorts the keys of every object in the tree (bytewise), so printing gives
 * the same bytes for the same content. */
void cat_json_sort(cJSON *item);
/* Prints with sorted keys and tabs (cJSON's format) plus a final newline;
 * the caller frees. */
char *cat_json_print(cJSON *item);
/* The number / string at key k of object o (o may be NULL), or dflt when it
 * is absent or of another type. */
double cat_json_num(const cJSON *o, const char *k, double dflt);
const char *cat_json_str(const cJSON *o, const char *k, const char *dflt);

/* ---- JSON Schema (catalog/src/schema.c) --------------------------------------
 * The subset of JSON Schema 2020-12 that catalog/manifest.schema.json and
 * catalog/variant.schema.json use: type, enum, const, properties, required,
 * additionalProperties, propertyNames, minProperties, maxProperties, items,
 * minItems, maxItems, uniqueItems, minimum, maximum, exclusiveMinimum,
 * exclusiveMaximum, minLength, maxLength, pattern (POSIX extended), $ref (to
 * "#/json/pointer" or "other.schema.json#/json/pointer"), $defs, allOf,
 * anyOf, oneOf, not, if/then/else; annotations are ignored. A schema that
 * uses any other keyword is refused, so nothing is silently unchecked. */

typedef struct cat_schema cat_schema;

/* Receives one violation: the JSON pointer of the offending value and why. */
typedef void (*cat_report_fn)(void *user, const char *pointer, const char *msg);

/* Formats a message and passes it to report (when not NULL) with the
 * pointer ptr, counting it in *count (when not NULL). */
void cat_vreportf(cat_report_fn report, void *user, int *count, const char *ptr, const char *fmt, va_list ap);
void cat_reportf(cat_report_fn report, void *user, int *count, const char *ptr, const char *fmt, ...)
    TRN_PRINTF(5, 6);

/* A registry of schema documents, empty. */
cat_schema *cat_schema_new(void);
/* Adds document text under name (e.g. "manifest.schema.json"). */
int cat_schema_add(cat_schema *s, const char *name, const char *text, size_t len, trn_err *err);
/* The built-in registry: the manifest and variant schemas compiled in. */
cat_schema *cat_schema_builtin(trn_err *err);
void cat_schema_free(cat_schema *s);

/* Validates instance against document `name`. Returns the number of
 * violations (0: valid), each passed to report (may be NULL), or -1 when the
 * schema itself is broken (err says how). */
int cat_schema_validate(cat_schema *s, const char *name, const cJSON *instance, cat_report_fn report,
                        void *user, trn_err *err);

/* ---- target device profiles and estimates (catalog/src/targets.c) -------------- */

/* Loads target profiles: every *.json of dir, or the built-in set when dir
 * is NULL, as an object {id: profile} (id = file name without .json). */
cJSON *cat_targets_load(const char *dir, trn_err *err);
/* The roofline estimate of one variant's cost object on one profile
 * (schema $defs/estimate); NULL when cost lacks what is needed. */
cJSON *cat_estimate(const cJSON *cost, const cJSON *target, trn_err *err);

/* ---- winnowing (catalog/src/winnow.c) ------------------------------------------ */

/* Per-image correctness on a test split (trn_preds), for the paired test. */
struct cat_wimg {
    const unsigned char *correct; /* images entries, 1 where right; NULL: none recorded */
    uint64_t images;
    uint64_t list;                /* trn_preds' list hash: equal on the same images */
};

/* One comparison of two accuracies, dominator (or challenger) a against b:
 * McNemar's exact test on the same images where both have per-image
 * correctness of the same image list, else their 95% Wilson intervals. */
struct cat_wcmp {
    int paired;             /* 1: McNemar on the same images; 0: intervals */
    uint64_t images;        /* paired: images compared */
    uint64_t only_a, only_b;/* paired: images only a / only b got right */
    double diff;            /* a's top-1 minus b's */
    double p;               /* paired: two-sided exact p-value; else -1 */
    int a_better, b_better; /* clearly better at the 5% level (paired) or intervals apart */
};

/* One capacity of a multi-capacity variant, as winnowing sees it. */
struct cat_wcap {
    uint64_t macs, weight_bytes;
    double top1;            /* < 0: not measured (the unit is then kept) */
    uint64_t images;        /* 0: unknown */
    struct cat_wimg img;
    /* results */
    long dominated_by;      /* a kept plain variant clearly better at no more cost, or -1 */
    long challenger;        /* not dominated: the best kept plain variant at no more cost, or -1 */
    struct cat_wcmp cmp;    /* dominated_by's (else challenger's) comparison with the capacity */
};

struct cat_wv {
    const char *id, *task;
    uint64_t macs, weight_bytes;
    double top1;            /* < 0: no accuracy for its task (never dropped) */
    uint64_t images;        /* the test split's size behind top1 (0: unknown) */
    const char *const *deps;
    size_t ndeps;
    /* A multi-capacity (nested) variant: its capacities, judged one by one
     * (ncaps 0: a plain variant). The variant's own macs/weight_bytes/top1
     * (its full capacity) are then not what decides. */
    struct cat_wcap *caps;
    size_t ncaps;
    /* results */
    int dropped;            /* 1: dominated and needed by no kept variant */
    long dominated_by;      /* index of the dominating variant, or -1 */
    long needed_by;         /* dominated but kept because this one depends on it, or -1 */
    double lo, hi;          /* top1's 95% Wilson interval (the point itself when images is 0) */
    /* A head (technique head): its trunk's variant id, else NULL. Only a
     * head on the same trunk can drop it (see cat_winnow). */
    const char *trunk;
    struct cat_wimg img;    /* per-image correctness behind top1 (correct NULL: none) */
    int keep;               /* 1: kept by request (catalog pack --keep), never dropped */
    long challenger;        /* kept and not dominated: the best kept variant at no more
                             * cost that could have dominated it, or -1 (none) */
    struct cat_wcmp cmp;    /* dominated_by's (else challenger's) comparison with it */
};

/* The comparison of a against b (see struct cat_wcmp). */
struct cat_wcmp cat_compare(const struct cat_wimg *a, double a_top1, double a_lo, double a_hi,
                            const struct cat_wimg *b, double b_top1, double b_lo, double b_hi);

/* Marks the variants to drop. Accuracy is a measurement: A is clearly
 * better than B when, on the same test images, McNemar's exact test on the
 * images only one of them gets right rejects equal accuracy at the 5% level
 * in A's favour (both have per-image correctness of the same image list,
 * img); without that pairing, when A's 95% Wilson interval lies entirely
 * above B's. B dominates A (same task, both measured) when B has no more
 * MACs and no more weight bytes than A and either
 *   - clearly better accuracy, or
 *   - fewer MACs or fewer weight bytes at accuracy that is not clearly worse.
 * That relation is not transitive (small steps inside the noise chain up),
 * so the decision is made in one deterministic pass, cheapest first (MACs,
 * then bytes, then higher top-1, then id; every dominator comes before what
 * it dominates in that order): a variant is dropped when a variant already
 * kept dominates it, unless it is kept by request (keep). The dominator
 * recorded is the best kept one (highest top-1, then fewest MACs, fewest
 * bytes, smallest id), with the comparison in cmp; a kept variant records
 * its challenger instead (the best kept variant at no more cost, or -1).
 * Dominated variants that a kept variant depends on (transitively) are kept.
 * A head (trunk set: MCDNN's task head on a shared trunk, whose cost beside
 * that trunk's other tasks is the head alone) is dropped only by a head on
 * the same trunk, never by a whole network of another trunk: that one
 * would answer its task alone, but not in the trunk's fan-out.
 * A multi-capacity variant (ncaps > 0: NestDNN's nested model, one weights
 * file switched in place) is judged capacity by capacity, each a point on
 * the curve: a capacity is off the Pareto front when a kept plain variant
 * with no more MACs and no more weight bytes is clearly better; the variant
 * is dropped only when every capacity is off the front, never for its full
 * capacity alone; its capacities drop no other variant. A dropped unit's
 * dominated_by is its largest capacity's; a kept unit has none.
 * Returns the number dropped, or -1 (err) when a dependency names no variant
 * or memory runs out. */
int cat_winnow(struct cat_wv *v, size_t n, trn_err *err);

/* Adds "top1_ci" and "top5_ci" (the 95% Wilson interval [lo, hi] of top1 and
 * top5 over "images", rounded to 6 decimals) to an accuracy object that lacks
 * them. 0, or -1 when memory runs out. */
int cat_accuracy_add_intervals(cJSON *accuracy);

/* ---- the manifest (catalog/src/manifest.c, validate.c) --------------------------- */

struct cat_task_labels {
    const char *task;
    const char *path;       /* a .names/labels file: one label per line */
};

struct cat_build_options {
    const char *variants_dir;   /* folder of variant folders (variant.json + files) */
    const char *catalog;        /* catalog id; NULL: the model */
    const char *model;          /* NULL: taken from the variants (all must agree) */
    uint64_t version;           /* 0: source_date_epoch */
    int64_t seed;               /* < 0: unknown (null) */
    int64_t source_date_epoch;  /* < 0: newest mtime of the inputs */
    const struct cat_task_labels *tasks;
    size_t ntasks;
    const char *targets_dir;    /* NULL: built-in profiles */
    int no_targets;             /* 1: no targets, no estimates */
    const char *const *keep;    /* ids kept out of winnowing on purpose (--keep) */
    size_t nkeep;
    const cJSON *base;          /* NULL; or the manifest of the catalog this one
                                 * is an add-on of: the manifest gets "base"
                                 * {catalog, version, variants} and its variants
                                 * may name that catalog's as parent, trunk or
                                 * cascade partner */
};

/* One file to pack: its archive path and where it is now. */
struct cat_pack_file {
    char *archive_path;
    char *source;
    uint64_t size;            /* packed bytes: the source's less skip_len */
    uint8_t sha256[32];       /* of the packed bytes */
    uint64_t skip_off, skip_len; /* bytes of source left out (a fragment's trunk), 0 0: none */
};

/* ---- fragments (catalog/src/fragment.c) ---------------------------------------- */

/* When the weights file w->source of a variant whose cfg is cfg_path holds,
 * after its header, the same parameter bytes of layers 0..cut-1 as the
 * trunk's weights file: w becomes the fragment (skip_off, skip_len, size and
 * sha256 set) and 1 is returned; 0 when they differ or cut is not inside
 * the network (w unchanged: the variant stays whole); -1 with err when a
 * file cannot be read or the cfg does not build. */
int cat_fragment_plan(const char *cfg_path, struct cat_pack_file *w, const char *trunk_weights, int cut, trn_err *err);
/* Writes variant id of the catalog whose manifest.json is `manifest` (its
 * files beside it: an unpacked archive or an installed copy) as a whole
 * Darknet network, out_dir/<id>.cfg and out_dir/<id>.weights; a fragment's
 * weights are put back together from its trunk's (catalog export --darknet).
 * Every file read is checked against the manifest's size and SHA-256. */
int cat_export_darknet(const char *manifest, const char *id, const char *out_dir, trn_err *err);

struct cat_built {
    cJSON *manifest;            /* sorted, schema-valid */
    cJSON *winnowed;            /* winnowed.json: rule, dropped (the manifest's "winnowed"),
                                 * kept_because_needed, kept_by_request, kept (each kept
                                 * variant's decision) */
    cJSON *decisions;           /* object: id -> the kept variant's "winnowing" decision */
    struct cat_pack_file *files;/* sorted by archive path */
    size_t nfiles;
    char *source_date_epoch_from; /* "SOURCE_DATE_EPOCH" or "newest input mtime" */
};

/* Reads the variant folders, checks each variant.json against
 * catalog/variant.schema.json and the contract, hashes every file, winnows,
 * computes estimates and builds the manifest, which is validated before it
 * is returned. Every problem found is passed to report; the return is -1
 * when there was any. */
int cat_build(const struct cat_build_options *o, struct cat_built *out, cat_report_fn report, void *user,
              trn_err *err);
void cat_built_free(struct cat_built *b);

/* ---- packing a catalog (catalog/src/pack_catalog.c; `catalog pack`) -------- */

/* The manifest of the catalog an add-on extends (catalog pack --addon-of):
 * a catalog's manifest.json (catalog, version and variants), not itself an
 * add-on. *base (the caller deletes it) on success; -1 with err naming
 * path and what to give instead. */
int cat_addon_base_read(const char *path, cJSON **base, trn_err *err);

struct cat_pack_catalog_options {
    struct cat_build_options build;
    const char *out_dir;
    const cat_seckey *key;   /* NULL: the development key under dev_key_dir */
    const char *dev_key_dir; /* NULL: OUT_DIR/devkey; the key is made there once */
    int zstd_level;
    cat_report_fn report;    /* every problem cat_build finds */
    void *user;
    /* the development key's warning (lines, each ending in a newline) */
    void (*warn)(void *user, const char *text);
};
struct cat_pack_catalog_result {
    struct cat_built built;
    char archive[4096], signature[4200];
    cat_seckey *dev_key; /* the development key that signed, or NULL */
    uint64_t bytes;      /* the packed files' */
};
/* cat_build, then (nothing is made before every variant was read) OUT_DIR,
 * the development key when no key is given (with its warning), the
 * archive, its signature, manifest.json and winnowed.json. A failure
 * removes what this run made. -1 with err. */
int cat_pack_catalog(const struct cat_pack_catalog_options *o, struct cat_pack_catalog_result *r, trn_err *err);
void cat_pack_catalog_result_free(struct cat_pack_catalog_result *r);

/* Checks a manifest: the schema, then cross-references (ids, dependencies,
 * tasks, targets, top5 where classes > 5, file paths), then, when root is
 * not NULL, every file's size and SHA-256 under root. Returns the number of
 * problems (each reported), or -1 when it could not check (err). */
int cat_validate(cat_schema *schema, const cJSON *manifest, const char *root, cat_report_fn report, void *user,
                 trn_err *err);

/* ---- packing (catalog/src/pack.c) --------------------------------------------- */

/* Writes the archive atomically: pax tar, zstd at `level`, manifest.json
 * first then files in order, every entry a regular file with mode 0644,
 * uid/gid 0, user/group "root", mtime `mtime`. Each file is hashed again
 * while it is packed and must still match the manifest. */
int cat_pack(const char *archive, const char *manifest_text, const struct cat_pack_file *files, size_t n,
             int64_t mtime, int level, trn_err *err);

/* ---- report (catalog/src/report.c) -------------------------------------------- */

/* Writes <base>.report.md and the Pareto plots <base>.pareto-macs.svg and
 * <base>.pareto-bytes.svg (top-1 against MACs and against weight bytes) of
 * the task with the most variants, <base>.<task>.pareto-*.svg of the other
 * tasks, for the manifest; base is a path without extension. */
int cat_report(const cJSON *manifest, const char *base, trn_err *err);
/* As cat_report, plus BASE.report.html (one self-contained file: the
 * plots inline, no network) and, when metrics_dir is not NULL, each
 * variant's training curve BASE.curve-<id>.svg from
 * metrics_dir/<id>/train/variant.metrics.jsonl where that exists (kept and
 * winnowed variants). */
int cat_report_ex(const cJSON *manifest, const char *base, const char *metrics_dir, trn_err *err);

/* SVG text of a Pareto plot of the manifest's variants (and winnowed ones,
 * hollow) of task `task`: top-1 against "macs" or "weight_bytes". */
char *cat_pareto_svg(const cJSON *manifest, const char *task, const char *axis, trn_err *err);

/* Plot labels: a box in SVG px (y down), a label's text, its point, and
 * where cat_place_labels put it (x, y: the text's left baseline). */
struct cat_box {
    double x0, y0, x1, y1;
};
struct cat_label {
    const char *text;
    double px, py;
    int placed, leader;
    double x, y;
    struct cat_box box;
};
/* The box an 11 px sans-serif label at baseline (x, y) is taken to cover. */
struct cat_box cat_label_box(double x, double y, const char *text);
/* Places labels in order, each at the first candidate position around its
 * point whose box overlaps no earlier label (nor, if possible, any point's
 * marker) and lies inside area; returns how many fit nowhere (placed 0). */
size_t cat_place_labels(struct cat_label *labels, size_t n, struct cat_box area);

/* SVG text of the training curve of variant `id` from its metrics log
 * (JSON lines of trainer train: batch, avg_loss, val_top1, val_lo, val_hi):
 * running loss and validation top-1 with its 95% interval against the
 * update. NULL with err when the log holds no line. */
char *cat_curve_svg(const char *id, const char *jsonl, size_t len, trn_err *err);

/* ---- machine-readable views (catalog/src/pareto.c) --------------------------- */

/* The Pareto fronts of the manifest's kept variants with a measured top-1:
 * {"catalog","version","fronts":[{"task","target" (null for the costs of
 * the variant itself),"cost" ("macs", "weight_bytes", "gpu_ms", "cpu_ms"),
 * "compute_unit" (targets only),"front":[{"id","technique","cost","top1",
 * "top5"}]}]}, sorted by cost, each entry more accurate than every cheaper
 * one. only_task / only_target (NULL: all) select; one that the catalog
 * does not have is an error. */
cJSON *cat_pareto(const cJSON *manifest, const char *only_task, const char *only_target, trn_err *err);

/* The variants table of `catalog inspect` as JSON: {"catalog","version",
 * "model","variants":[{"id","technique","task","top1","top5","macs",
 * "params","weight_bytes","peak_activation_bytes","ms_build_host",
 * "estimates":{TARGET: the manifest's estimate}}],"winnowed":[{"id",
 * "technique","task","macs","weight_bytes","top1","dominated_by"}]};
 * null for what is unknown. */
cJSON *cat_inspect_json(const cJSON *manifest, trn_err *err);

/* ---- cost model (catalog/src/costmodel.c) --------------------------------------
 * docs/design.md's cost convention computed from cfg text alone (its own shape
 * arithmetic, Darknet's output-size rules): see the top of costmodel.c. */

/* One layer's costs, per image. */
typedef struct cat_layer_cost {
    int index;
    char type[16];           /* canonical section type ("convolutional", ...) */
    int output[3];           /* c, h, w */
    uint64_t macs, params, output_bytes;
    uint64_t bias_ops, bn_ops, act_ops, pool_ops;
} cat_layer_cost;

typedef struct cat_cost {
    int n;                   /* layers */
    cat_layer_cost *layers;
    int input[3];            /* c, h, w of the network input */
    uint64_t macs, params, weight_bytes, peak_activation_bytes;
    uint64_t bias_ops, bn_ops, act_ops, pool_ops;
} cat_cost;

/* The costs of cfg's network. -1 with an error naming file:line for an
 * unknown section, a bad value or an impossible shape. out is freed with
 * cat_cost_free (also after an error: then it is empty). */
int cat_cost_model(const trn_cfg *cfg, cat_cost *out, trn_err *err);
void cat_cost_free(cat_cost *c);
/* The cost model's own list of section types (its independent kind list,
 * aliases included): entry i, with *canonical set to the kind's canonical
 * name; NULL past the end. A test checks it against the engine's kind
 * table (trn_kind_desc_get). */
const char *cat_cost_section_type(int i, const char **canonical);
/* {"macs", "params", "weight_bytes", "peak_activation_bytes", "bias_ops",
 * "bn_ops", "act_ops", "pool_ops", "layers": [...]}, the "cost" object of
 * variant.json; NULL when out of memory. */
cJSON *cat_cost_json(const cat_cost *c);
/* {"index", "type", "output": [c, h, w], "macs", "params", "output_bytes",
 * "bias_ops", "bn_ops", "act_ops", "pool_ops"}; NULL when out of memory. */
cJSON *cat_cost_layer_json(const cat_layer_cost *l);

/* ---- profiler (catalog/src/profile.c) ------------------------------------------ */

typedef struct cat_profile_opts {
    int runs;    /* timed forwards (30) */
    int warmup;  /* untimed forwards before them (3) */
    int threads; /* compute threads (1) */
} cat_profile_opts;
void cat_profile_opts_defaults(cat_profile_opts *o);

/* Measures the network cfg_path + weights_path on this machine (format of
 * the result at the top of profile.c: "cost", "latency", "counted"). Sets
 * the process-wide thread count to o->threads. NULL on error. */
cJSON *cat_profile(const char *cfg_path, const char *weights_path, const cat_profile_opts *o,
                   trn_err *err);
/* "CPU model (arch, N cores)" of this machine, for latency records. */
void cat_machine_name(char *buf, size_t size);

/* ---- variant.json (catalog/src/describe.c) ------------------------------------- */

typedef struct cat_describe_opts {
    const char *dir;        /* the variant folder (holds variant.cfg, variant.weights) */
    const char *id, *model, *task;
    const char *eval;       /* eval.json of `trainer valid --json` */
    const char *profile;    /* profile.json of `catalog profile` */
    const char *meta;       /* meta.json of prune, or NULL with technique */
    const char *technique;  /* "base" when there is no meta.json */
} cat_describe_opts;

/* Writes dir/variant.json atomically after checking it against the built-in
 * variant schema; -1 with the first violation or the unreadable input. */
int cat_describe(const cat_describe_opts *o, trn_err *err);

/* ---- ONNX export (onnx_export.c, onnx_net.c, onnx_graph.c) ------------------ */

/* `catalog export --onnx`: the variants of a variants folder as ONNX models
 * (opset 13, float32, NCHW, batch 1; catalog/README.md, "ONNX export"). */
typedef struct cat_onnx_options {
    const char *variants;      /* VARIANTS_DIR: one folder per variant */
    const char *const *ids;    /* the variants to export; nids 0: all */
    size_t nids;
    const char *out;           /* the folder to write into; NULL: each variant's own
                                * folder, listed in its variant.json (role "onnx") */
    int bn_explicit;           /* 1: batch norm as nodes; 0: folded into the weights */
    void (*wrote)(void *user, const char *path, const char *what); /* each file written */
    void *user;
} cat_onnx_options;
/* -1 with a message naming the variant and, for a layer that ONNX cannot
 * express here, its index, kind and cfg file:line. */
int cat_onnx_export(const cat_onnx_options *o, trn_err *err);

/* ---- the variants table (catalog/src/variants.c; `catalog variants`) ------- */

/* One variant of a variants folder, from its variant.json: costs (the
 * connected layers' parameters apart), the first task's top-1 with its 95%
 * Wilson interval (lo -1 when absent) and test size, and the build host's
 * median batch-1 latency. */
typedef struct cat_variant_row {
    char id[72], technique[24];
    double macs, params, fc_params, top1, ms, lo, hi, images;
    int has_top1, has_ms;
} cat_variant_row;
typedef struct cat_variant_rows {
    cat_variant_row *v;
    size_t n;
    const cat_variant_row *base; /* the variant `base` (v[0]), or NULL */
} cat_variant_rows;
/* Every DIR/<id>/variant.json as a row, `base` first, then by id. A
 * variant.json that cannot be read is told to bad(ctx, its error), when
 * not NULL, and left out. -1 with err when DIR cannot be opened, holds no
 * variant.json that reads, or memory runs out; r is then empty. */
int cat_variants_read(const char *dir, cat_variant_rows *r, void (*bad)(void *ctx, const trn_err *e), void *ctx,
                      trn_err *err);
/* {"variants":[{"id","technique","macs","macs_reduction","params",
 * "fc_params","fc_reduction","top1","top1_ci","images",
 * "top1_change_points","ms_build_host"}]}, reductions and change against
 * the base, null where there is none. NULL when out of memory. */
cJSON *cat_variants_json(const cat_variant_rows *r);
void cat_variant_rows_free(cat_variant_rows *r);

/* ---- built-in files (generated from the JSON files of catalog/) -------------- */

struct cat_embedded {
    const char *name;       /* e.g. "manifest.schema.json", "targets/jetson-nano.json" */
    const char *data;       /* NUL-terminated */
    size_t len;
};
extern const struct cat_embedded cat_embedded_files[];
extern const size_t cat_embedded_count;
/* The embedded file called name, or NULL. */
const struct cat_embedded *cat_embedded_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* CAT_H */
