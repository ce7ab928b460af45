/*
 * nn.h: the forward engine (trainer/nn/), a Darknet-compatible CNN forward
 * pass shared by the trainer and the device runtime: errors, random numbers,
 * checked I/O, threads, the cfg object model, networks, parameters, weights
 * files, forward and images. Every exported name starts with trn_ or TRN_.
 * Training, data sets, augmentation, the loader and checkpoints are the
 * trainer's (trn.h, which includes this header); a build with
 * -DTRN_INFER_ONLY sees none of them (trn.h stops such a build).
 *
 * Conventions, for every function below:
 * - Library code never exits. A function that can fail returns 0 on success
 *   and -1 on failure (or NULL for constructors) and fills the caller's
 *   trn_err with one message that says what, where (file:line for text,
 *   byte offset for binary) and what to do.
 * - Random numbers come from a trn_rng the caller owns and seeds.
 * - Objects returned by the create, open and load functions are owned by the
 *   caller and freed with the matching free or close function.
 */
#ifndef TRN_NN_H
#define TRN_NN_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRN_VERSION "0.1.0"

#if defined(__GNUC__)
#define TRN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TRN_MUST_CHECK __attribute__((warn_unused_result))
#else
#define TRN_PRINTF(f, a)
#define TRN_MUST_CHECK
#endif

/* ---- errors ------------------------------------------------------------ */

#define TRN_ERR_MAX 1024

/* One error message, filled by the function that failed. */
typedef struct trn_err {
    char msg[TRN_ERR_MAX];
} trn_err;

/* Formats a message into err (err may be NULL). Returns -1, so that error
 * paths can be written `return trn_errf(err, "...")`. */
int trn_errf(trn_err *err, const char *fmt, ...) TRN_PRINTF(2, 3);

/* Prefixes the message already in err with "prefix: ". Returns -1. */
int trn_err_prefix(trn_err *err, const char *fmt, ...) TRN_PRINTF(2, 3);

/* The two functions above on any message buffer of `size` bytes: the one
 * implementation of formatting and prefixing, shared with runtime-lite,
 * whose public rtl_err has the same shape under its own name. */
void trn_msg_vformat(char *msg, size_t size, const char *fmt, va_list ap) TRN_PRINTF(3, 0);
void trn_msg_vprefix(char *msg, size_t size, const char *fmt, va_list ap) TRN_PRINTF(3, 0);

/* ---- random numbers ------------------------------------------------------ */

/* xoshiro256** seeded through splitmix64: small, fast, and the same stream on
 * every platform. Never shared between threads: fork one per thread or per
 * sample with trn_rng_fork so results do not depend on the thread count. */
typedef struct trn_rng {
    uint64_t s[4];
} trn_rng;

void trn_rng_seed(trn_rng *r, uint64_t seed);
/* A generator for sub-stream `stream` of r's seed, independent of how many
 * numbers r has produced: trn_rng_fork(r, i) is the same for the same seed. */
trn_rng trn_rng_fork(const trn_rng *r, uint64_t stream);
uint64_t trn_rng_u64(trn_rng *r);
/* Uniform in [0, 1). */
float trn_rng_uniform(trn_rng *r);
/* Uniform in [lo, hi). */
float trn_rng_range(trn_rng *r, float lo, float hi);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t trn_rng_below(trn_rng *r, uint64_t n);
/* Standard normal (Box-Muller). */
float trn_rng_normal(trn_rng *r);

/* ---- checked I/O ------------------------------------------------------- */

/* fopen that reports "cannot open PATH for MODE: strerror" in err. A read
 * mode opens regular files only: a FIFO, device, socket or folder is refused
 * at once with a message saying what it is (never a hang on a FIFO). */
FILE *trn_fopen(const char *path, const char *mode, trn_err *err);

/* trn_fopen(path, "rb") that also gives the file's size in *size. */
FILE *trn_fopen_sized(const char *path, size_t *size, trn_err *err);

/* The file descriptor of regular file path opened for reading (O_CLOEXEC),
 * or -1 with "cannot open PATH: ..." or "PATH is a FIFO (named pipe), not a
 * regular file ..." in err. Opening never blocks. */
int trn_open_input(const char *path, trn_err *err);

/* "a FIFO (named pipe)", "a folder", "a character device", ... for st_mode. */
const char *trn_file_kind(unsigned mode);

/* Reads exactly n bytes; a short read is an error naming the file `name` and
 * the byte offset where data ran out. */
int trn_fread_exact(FILE *f, void *buf, size_t n, const char *name, trn_err *err) TRN_MUST_CHECK;

/* Reads a whole file into a new buffer (NUL-terminated, the NUL not counted
 * in *len). The caller frees *buf. max_len bounds the size (0: no bound). */
int trn_read_file(const char *path, size_t max_len, char **buf, size_t *len, trn_err *err) TRN_MUST_CHECK;

/* Creates a directory and its parents (mode 0755); existing ones are fine. */
int trn_mkdir_p(const char *path, trn_err *err);

/* Atomic file replacement: write to a temporary file beside `path`, then
 * trn_atomic_commit flushes, fsyncs, renames over `path` and fsyncs the
 * directory, so readers see the old file or the whole new one, never a part.
 * A symbolic link is followed: the file it names is replaced, the link
 * stays. A FIFO, device or socket is written in place, never replaced (tmp
 * is then empty; /dev/full fails at commit with ENOSPC); a folder is refused.
 * trn_atomic_abort removes the temporary file. Exactly one of commit/abort
 * must follow a successful open; commit aborts by itself when it fails.
 * Every output file of every program goes through these. */
typedef struct trn_atomic {
    FILE *f;
    char path[4096];
    char tmp[4096 + 32];
} trn_atomic;

/* The file being written now (the temporary one, or path when in place). */
static inline const char *trn_atomic_name(const trn_atomic *a) { return a->tmp[0] ? a->tmp : a->path; }

int trn_atomic_open(trn_atomic *a, const char *path, trn_err *err) TRN_MUST_CHECK;
int trn_atomic_commit(trn_atomic *a, trn_err *err) TRN_MUST_CHECK;
void trn_atomic_abort(trn_atomic *a);
/* The three steps for a buffer already in memory. */
int trn_write_file_atomic(const char *path, const void *buf, size_t len, trn_err *err) TRN_MUST_CHECK;

/* fsync a directory (after renaming into it). */
int trn_fsync_dir(const char *dir, trn_err *err);

/* ---- the engine: threads, determinism mode, kernel switches ------------- */

/* What reproducible means (see trainer/README.md, Determinism):
 *   TRN_DET_DEFAULT   OpenBLAS and libm: the fastest; identical bytes for
 *                     any thread count on one CPU kind (OpenBLAS kernel set)
 *   TRN_DET_PORTABLE  our own fixed-order GEMM (explicit fma) and our own
 *                     exp/log/pow/cos/tanh: identical bytes across CPU kinds
 *                     (x86-64 with FMA or without, aarch64); slower */
typedef enum trn_det_mode { TRN_DET_DEFAULT, TRN_DET_PORTABLE, TRN_DET_COUNT } trn_det_mode;

/* An engine: the state a network's kernels run with, its own thread pool
 * (workers start on first use, sleep between jobs and end with the
 * engine), thread count, determinism mode and Winograd switch. A network
 * runs on the engine trn_net_opts.engine names (the caller keeps it alive
 * longer than the network), or on the process's default engine. Networks
 * on different engines run side by side from different threads with no
 * lock between them; two threads may share an engine too (a job that
 * finds its pool busy runs on its caller's thread alone). Results never
 * depend on the thread count or on which engine runs a network with the
 * same settings.
 *
 * Threads: n > 0 uses n threads (OpenBLAS itself runs single-threaded,
 * its threaded partitioning changes result bits with the thread count:
 * the pool runs each product as fixed tiles, one OpenBLAS call each);
 * n <= 0 (the default) chooses per layer from its work, all online cores
 * at most (trn_engine_layer_threads, backend.h: a layer too small to gain
 * from more threads runs on fewer). trn_engine_threads gives the most it
 * uses (>= 1).
 * Winograd: 3x3 and 5x5 stride-1 convolutions of inference forwards by
 * Winograd's F(2x2, 3x3) and F(2x2, 5x5) on the CPU where the shape is
 * worth it (trainer/README.md): on by default; 0 turns it off (the im2col
 * product, as in training). The results differ from the direct product's
 * by rounding. */
typedef struct trn_engine trn_engine;
/* A new engine with the defaults; NULL when out of memory. */
trn_engine *trn_engine_new(void);
/* Ends its workers and frees it (no network may be running on it; the
 * default engine is never freed). */
void trn_engine_free(trn_engine *e);
/* The process's default engine: the networks whose opts name none. */
trn_engine *trn_engine_default(void);
void trn_engine_set_threads(trn_engine *e, int n);
int trn_engine_threads(const trn_engine *e);
void trn_engine_set_determinism(trn_engine *e, trn_det_mode m);
trn_det_mode trn_engine_determinism(const trn_engine *e);
void trn_engine_set_winograd(trn_engine *e, int on);
int trn_engine_winograd(const trn_engine *e);

/* The default engine's settings (the trainer's and prune's callers). The
 * readers give the calling thread's current engine's (the default one
 * outside a network's layer); trn_threads gives the threads the running
 * layer uses. */
void trn_set_threads(int n);
int trn_threads(void);
void trn_set_determinism(trn_det_mode m);
trn_det_mode trn_determinism(void);
void trn_set_winograd(int on);
int trn_winograd(void);
/* Parses "default" or "portable"; -1 for anything else. */
int trn_det_parse(const char *s);

/* The default mode's GEMM path on this CPU (gemm_path.c), chosen once
 * before the first product from the CPU's features (never its model name)
 * and OPENBLAS_CORETYPE: OpenBLAS is told the core type the features call
 * for when its own load-time pick is below them (a masked CPUID model) and
 * OPENBLAS_CORETYPE is unset; where the core in use has no FMA kernels,
 * the products run on our own packed kernels. The strings are static. */
typedef struct trn_gemm_info {
    const char *cpu_isa;         /* "avx512", "avx2+fma", "avx", "sse"; "generic" off x86-64 */
    const char *cpu_core;        /* the OpenBLAS core type the features call for */
    const char *openblas_loaded; /* the core type OpenBLAS picked at load */
    const char *openblas_core;   /* the core type in use */
    int explicit_core;           /* OPENBLAS_CORETYPE was set (and respected) */
    int switched;                /* openblas_core was set here (masked CPUID) */
    int below;                   /* openblas_core is below the CPU's ISA */
    int own_products;            /* products (rows and columns > 1) on our kernels */
    const char *products;        /* "openblas", or our kernel: "avx512", "avx2" */
} trn_gemm_info;
void trn_gemm_info_get(trn_gemm_info *out);
/* One line for build records: "cpu avx512; OpenBLAS SkylakeX (loaded as
 * Prescott); products openblas". Returns snprintf's count. */
int trn_gemm_describe(char *buf, size_t size);

/* ---- cfg object model ------------------------------------------------------ *
 *
 * A Darknet .cfg file held in memory: an ordered list of sections ("[net]",
 * "[convolutional]", ...), each an ordered list of key=value pairs. Every
 * section and key keeps the file:line it came from, so that errors found
 * later (while building a network) can name it. Text is read as Darknet
 * reads it: all blanks (space, tab) inside a line are removed, lines
 * starting with '#' or ';' and empty lines are comments. Unlike Darknet, a
 * line without '=', an empty key or value, a key before the first section
 * and a key given twice in one section are errors naming file:line.
 * Comment lines are kept with the section or key they precede and written
 * back by trn_cfg_format, so a rewritten cfg keeps its documentation.
 *
 * Section 0 is the [net] section of a network cfg; layer i of a network is
 * section i + 1. Section types are stored without brackets ("net",
 * "convolutional"); Darknet's aliases ([conv], [max], ...) are kept as
 * written and understood by trn_net_create. */
typedef struct trn_cfg trn_cfg;

/* Reads and parses a cfg file (at most 16 MiB). NULL on error. */
trn_cfg *trn_cfg_read(const char *path, trn_err *err);
/* Parses cfg text of len bytes; `name` stands for the file in messages. */
trn_cfg *trn_cfg_parse(const char *text, size_t len, const char *name, trn_err *err);
/* An empty cfg (no section) named `name`. */
trn_cfg *trn_cfg_new(const char *name, trn_err *err);
/* A deep copy. NULL when out of memory. */
trn_cfg *trn_cfg_clone(const trn_cfg *cfg, trn_err *err);
void trn_cfg_free(trn_cfg *cfg);

/* The name given at read/parse time (the path for trn_cfg_read). */
const char *trn_cfg_name(const trn_cfg *cfg);
int trn_cfg_sections(const trn_cfg *cfg);
/* Section s's type without brackets, NULL when s is out of range. */
const char *trn_cfg_section_type(const trn_cfg *cfg, int s);
/* The line of section s's header; 0 for sections inserted by a program. */
int trn_cfg_section_line(const trn_cfg *cfg, int s);
/* The first section of `type` at index >= from, or -1. */
int trn_cfg_find_section(const trn_cfg *cfg, const char *type, int from);

/* Keys of section s, in order: count, then the k-th key, value, line (0
 * when set by a program). Out-of-range indexes give 0 / NULL. */
int trn_cfg_keys(const trn_cfg *cfg, int s);
const char *trn_cfg_key(const trn_cfg *cfg, int s, int k);
const char *trn_cfg_value(const trn_cfg *cfg, int s, int k);
int trn_cfg_key_line(const trn_cfg *cfg, int s, int k);
/* The value of `key` in section s, NULL when absent. */
const char *trn_cfg_get(const trn_cfg *cfg, int s, const char *key);
/* "file:line" of key in section s (or of the section when key is NULL or
 * absent), "file (set by program)" for line 0, written into buf. */
const char *trn_cfg_where(const trn_cfg *cfg, int s, const char *key, char *buf, size_t size);

/* Sets key=value in section s: replaces the value of an existing key (its
 * line is kept), or appends the key. Keys and values are stored without
 * blanks, as Darknet reads them; both must be non-empty and free of '=',
 * '[', '#', ';' (key) or newlines. -1 on a bad argument or out of memory. */
int trn_cfg_set(trn_cfg *cfg, int s, const char *key, const char *value, trn_err *err);
int trn_cfg_setf(trn_cfg *cfg, int s, const char *key, trn_err *err, const char *fmt, ...)
    TRN_PRINTF(5, 6);
/* Removes key from section s. Returns 1 if it was there, 0 if not. */
int trn_cfg_unset(trn_cfg *cfg, int s, const char *key);
/* Inserts an empty section of `type` (no brackets) before section `at`
 * (at == trn_cfg_sections() appends). Returns the new section's index, -1
 * on error. */
int trn_cfg_insert_section(trn_cfg *cfg, int at, const char *type, trn_err *err);
/* Removes section s and its keys. -1 when s is out of range. */
int trn_cfg_remove_section(trn_cfg *cfg, int s, trn_err *err);

/* The cfg as text ("[type]" lines, "key=value" lines, comments, a blank
 * line between sections); parsing it gives the same sections and keys.
 * Returns a new NUL-terminated string the caller frees; NULL when out of
 * memory. len (may be NULL) receives its length. */
char *trn_cfg_format(const trn_cfg *cfg, size_t *len);
/* trn_cfg_format written atomically (temporary file, fsync, rename). */
int trn_cfg_write(const trn_cfg *cfg, const char *path, trn_err *err) TRN_MUST_CHECK;

/* ---- networks ---------------------------------------------------------------- */

/* The most layers one layer reads ([route] layers=...). */
#define TRN_MAX_FROM 32

/* The layer-kind registry, one line per kind: X(KIND, file) makes the value
 * TRN_LAYER_<KIND> and names the row trn_<file>_kind that the kind's own
 * file trainer/nn/<file>.c defines (its name, aliases, refs, channel rule
 * and ops). This line is the only place outside that file that names the
 * kind (trainer/README.md: "Adding a layer kind"). The order is the enum's. */
#define TRN_LAYER_KINDS(X)      \
    X(CONVOLUTIONAL, conv)      \
    X(CONNECTED, connected)     \
    X(MAXPOOL, maxpool)         \
    X(AVGPOOL, avgpool)         \
    X(DROPOUT, dropout)         \
    X(CROP, crop)               \
    X(SOFTMAX, softmax)         \
    X(COST, cost)               \
    X(ROUTE, route)             \
    X(SHORTCUT, shortcut)       \
    X(EXIT, exit)

typedef enum trn_layer_kind {
#define TRN_KIND_ENUM_(KIND, file) TRN_LAYER_##KIND,
    TRN_LAYER_KINDS(TRN_KIND_ENUM_)
#undef TRN_KIND_ENUM_
    TRN_LAYER_KIND_COUNT
} trn_layer_kind;
/* The canonical section type ("convolutional", ...); "?" when invalid. */
const char *trn_layer_kind_name(trn_layer_kind k);

/* How a kind's output channels relate to its inputs' (what a derivation
 * that reorders or removes channels must know). */
typedef enum trn_channel_rule {
    TRN_CHANNELS_OWN,    /* ordered by the layer's own filters/outputs */
    TRN_CHANNELS_PASS,   /* its input's channels, in their order */
    TRN_CHANNELS_CONCAT, /* its sources' channels, concatenated in order */
    TRN_CHANNELS_ADD,    /* its input's, element-wise with another layer's */
} trn_channel_rule;

/* The layer-kind table, one row per kind (each row lives in its kind's
 * file): the one place that names a kind (section type and Darknet's
 * aliases), the cfg key naming the other layers it reads (NULL: only the
 * previous layer), whether it reads the previous layer at all, whether it
 * is a loss, and its channel rule. The engine builds from it, prune and
 * the CLIs ask it; catalog's cost model keeps its own list as an
 * independent oracle, and a test checks that list against this table. */
typedef struct trn_kind_desc {
    trn_layer_kind kind;
    const char *name;            /* canonical section type */
    const char *const *aliases;  /* other section types, NULL-terminated (never NULL) */
    const char *refs_key;        /* "layers" (route), "from" (shortcut) or NULL */
    trn_channel_rule channels;
    int ignores_previous;        /* 1: reads only its refs, not the previous layer (route) */
    int is_loss;                 /* 1: a loss after the output ([cost]); not the output layer */
    int branch_head;             /* 1: only the first layer of a side branch ([exit]: an
                                  * early-exit branch, exit.c); never inside a network */
} trn_kind_desc;
/* Row k; NULL when k is not a kind. */
const trn_kind_desc *trn_kind_desc_get(trn_layer_kind k);
/* The kind of a section type (name or alias); -1 when none. */
int trn_kind_of_section(const char *type);

/* Darknet's activations, with its formulas (trainer/README.md). */
typedef enum trn_activation {
    TRN_ACT_LINEAR,
    TRN_ACT_RELU,
    TRN_ACT_LEAKY,
    TRN_ACT_LOGISTIC,
    TRN_ACT_TANH,
    TRN_ACT_ELU,
    TRN_ACT_RAMP,
    TRN_ACT_LOGGY,
    TRN_ACT_RELIE,
    TRN_ACT_PLSE,
    TRN_ACT_HARDTAN,
    TRN_ACT_LHTAN,
    TRN_ACT_SELU,
    TRN_ACT_STAIR,
    TRN_ACT_COUNT
} trn_activation;
const char *trn_activation_name(trn_activation a);
/* The activation named s, or -1. */
int trn_activation_parse(const char *s);

/* Darknet's learning-rate policies ("random" is not supported: it would
 * draw from an unseeded global generator). */
typedef enum trn_policy {
    TRN_POLICY_CONSTANT,
    TRN_POLICY_STEP,
    TRN_POLICY_STEPS,
    TRN_POLICY_EXP,
    TRN_POLICY_POLY,
    TRN_POLICY_SIG,
    TRN_POLICY_COUNT
} trn_policy;
const char *trn_policy_name(trn_policy p);

/* Compute backends behind the kernel seam (trainer/nn/backend.h). */
typedef enum trn_backend_kind {
    TRN_BACKEND_CPU, /* OpenBLAS gemm and tuned loops: the default */
    TRN_BACKEND_REF, /* naive loops: the oracle the tests compare against */
    TRN_BACKEND_KIND_COUNT
} trn_backend_kind;

/* A tensor shape of one image: channels, height, width. */
typedef struct trn_shape {
    int c, h, w;
} trn_shape;

/* The [net] section, resolved with Darknet's defaults. */
typedef struct trn_net_config {
    int batch;         /* images per forward/backward: cfg batch / subdivisions */
    int subdivisions;  /* forwards per weight update */
    int w, h, c;       /* network input */
    float learning_rate, momentum, decay;
    trn_policy policy;
    int burn_in;
    float power;       /* poly, and the burn_in ramp */
    float gamma;       /* exp, sig */
    float scale;       /* step */
    int step;          /* step, sig */
    int num_steps;     /* steps: batch numbers and their scales */
    const int *steps;
    const float *scales;
    int64_t max_batches; /* 0: no limit */
    /* Augmentation keys, handed to the data loader (Darknet's meaning). */
    float angle, aspect, hue, saturation, exposure, jitter;
    int min_crop, max_crop, flip;
    /* Knowledge distillation (a training-only [net] extension: Darknet
     * reports these keys as unused and loads the cfg). distill_alpha > 0
     * mixes a teacher's temperature-softened outputs into the loss; the
     * teacher is distill_cfg + distill_weights (see trn_train). */
    float distill_alpha, distill_temperature;
    char distill_cfg[1024], distill_weights[1024];
    /* Group lasso (MeDNN's SMCD, a training-only [net] extension: Darknet
     * reports the keys as unused). The penalty weights of the filter-,
     * channel- and shape-wise groups of every [convolutional] layer;
     * 0 (the default) turns a group kind off. trainer/README.md. */
    float lasso_filter, lasso_channel, lasso_shape;
} trn_net_config;

typedef struct trn_net_opts {
    int batch;           /* > 0: images per forward instead of the cfg's */
    int infer_only;      /* 1: forward in inference mode only; no training buffers */
    int external_params; /* 1: no parameter memory is allocated; a borrowed
                          * trn_weights_load_mem supplies it (needs infer_only) */
    trn_backend_kind backend;
    uint64_t seed;       /* initial weights and training randomness */
    uint64_t max_bytes;  /* refuse networks whose buffers need more (0: 32 GiB) */
    trn_engine *engine;  /* the engine it runs on (NULL: the default one) */
    int lazy_buffers;    /* 1 (with infer_only): a layer's output and state buffers are
                          * allocated when a forward first runs it, so a network run only
                          * from a layer on (a fragment fed by its shared trunk, librtl)
                          * holds none for the layers below (their trn_net_layer_output
                          * is NULL until then); 0: all at trn_net_create */
} trn_net_opts;
/* batch 0, training buffers, CPU backend, seed 0, max_bytes 0, the default engine,
 * every buffer at creation. */
void trn_net_opts_defaults(trn_net_opts *o);

typedef struct trn_net trn_net;

/* Builds a network from a cfg (which the network does not keep: it may be
 * freed after). Parameters start as Darknet initialises them (He-scaled
 * normal conv weights, uniform connected weights, zero biases, unit BN
 * scales, zero rolling statistics), drawn from opts->seed. Every unknown
 * section or key, bad value, missing required key or impossible shape is
 * an error naming file:line and the key. NULL on error. opts may be NULL
 * (defaults). */
trn_net *trn_net_create(const trn_cfg *cfg, const trn_net_opts *opts, trn_err *err);
/* Checks cfg's [net] section alone, as trn_net_create would (every key
 * known, every value in range), without building a layer: the trainer's
 * --set values are judged with it before any work. 0, or -1 with err. */
int trn_net_check_net_section(const trn_cfg *cfg, trn_err *err);
/* trn_cfg_read + trn_net_create (+ trn_weights_load when weights != NULL). */
trn_net *trn_net_load(const char *cfg_path, const char *weights_path, const trn_net_opts *opts,
                      trn_err *err);
void trn_net_free(trn_net *net);

const trn_net_config *trn_net_get_config(const trn_net *net);
int trn_net_batch(const trn_net *net);
int trn_net_layers(const trn_net *net);
trn_shape trn_net_input_shape(const trn_net *net);
/* Floats per image of the input (c*h*w) and of the last layer's output. */
size_t trn_net_inputs(const trn_net *net);
size_t trn_net_outputs(const trn_net *net);

/* One layer, for `trainer info`, the cost model and the variant stage.
 * Costs are per image, by the convention of docs/design.md: MACs of the
 * convolution/matrix product only; bias adds, batch-norm, activation and
 * pooling operations listed separately. */
typedef struct trn_layer_info {
    int index;
    trn_layer_kind kind;
    const char *type;     /* section type as written, e.g. "conv" or "convolutional" */
    int section;          /* cfg section (index + 1) */
    int line;             /* line of the section header, 0 if built in memory */
    trn_shape in, out;
    trn_activation activation;
    int filters, size, stride, pad, groups, batch_normalize; /* 0 where not applicable */
    int n_from;           /* route: the layers it reads; shortcut: 1 */
    int from[TRN_MAX_FROM]; /* absolute layer indexes, all n_from of them */
    uint64_t params;      /* floats in the weights file: weights, biases, BN */
    uint64_t macs;
    uint64_t bias_ops, bn_ops, act_ops, pool_ops;
    uint64_t output_bytes; /* float32 output of one image */
} trn_layer_info;
int trn_net_layer_info(const trn_net *net, int i, trn_layer_info *info);

typedef struct trn_net_totals {
    uint64_t params, macs, bias_ops, bn_ops, act_ops, pool_ops;
    uint64_t weight_bytes;          /* params as float32 */
    uint64_t peak_activation_bytes; /* largest live set of outputs at batch 1 */
    uint64_t traffic_bytes;         /* trn_net_traffic_bytes */
} trn_net_totals;
void trn_net_get_totals(const trn_net *net, trn_net_totals *t);

/* Modelled compulsory memory traffic of layer i in one batch-1 inference
 * forward: the bytes of the tensors it reads (its input, or for a kind
 * that ignores the previous layer only the layers it reads, the other
 * layers it reads, and all its parameters) and of the output it writes,
 * each tensor counted once: a lower bound on what any implementation
 * moves (caches, im2col copies and re-reads come on top). A layer whose
 * output is its input's buffer (dropout) moves none at inference. -1 if
 * i is invalid. */
typedef struct trn_layer_traffic {
    uint64_t read_bytes, write_bytes;
} trn_layer_traffic;
int trn_net_layer_traffic(const trn_net *net, int i, trn_layer_traffic *t);
/* The sum over the layers (read + write). */
uint64_t trn_net_traffic_bytes(const trn_net *net);

/* ---- capacities (nested channel prefixes) -------------------------------- *
 *
 * NestDNN's nested capacities (and what pruning slices): every layer
 * computes on an active prefix of its input and output channels. filters
 * has trn_net_layers(net) entries: for a convolutional or connected layer
 * the number of its first filters (outputs) that stay active, 0 for all;
 * 0 for every other kind (pools, softmax, dropout, crop, cost, shortcut
 * pass their input's channels; a route concatenates its sources' active
 * prefixes, and refuses a reduced source other than its last, whose
 * channels would no longer form a prefix). The network input stays whole.
 * NULL restores the full network. Forward, backward, trn_net_layer_info
 * (shapes, params, MACs) and trn_net_get_totals then describe the active
 * network, which computes bit for bit what a separately built network
 * with the sliced weights (trn_net_copy_capacity) computes. Nothing is
 * allocated or copied; the parameters and weights files keep the full
 * sizes. On error the previous capacity stays. */
int trn_net_set_capacity(trn_net *net, const int *filters, trn_err *err) TRN_MUST_CHECK;
/* The active filters per layer (0 for kinds without filters of their own). */
void trn_net_capacity(const trn_net *net, int *filters);
/* Layer i's filters as built (0 for kinds without filters of their own;
 * -1 when i is invalid). */
int trn_net_full_filters(const trn_net *net, int i);
/* dst, a network built as src's active capacity (its layers' shapes are
 * src's active ones), receives src's active parameter slices. */
int trn_net_copy_capacity(trn_net *dst, const trn_net *src, trn_err *err) TRN_MUST_CHECK;
/* The reverse: src's parameters (src built as dst's active capacity) are
 * written into dst's active slices; the rest of dst is unchanged. */
int trn_net_embed_capacity(trn_net *dst, const trn_net *src, trn_err *err) TRN_MUST_CHECK;
/* Per-capacity vectors (NestDNN's batch norm kept per capacity): the
 * active prefixes, at the current capacity, of the vector parameters
 * (biases, scales, rolling statistics) whose role is in `roles` (a mask of
 * 1u << trn_param_role), concatenated in table order. This layout is the
 * format of a nested model's per-capacity file (prune/README.md). */
size_t trn_net_vectors_count(const trn_net *net, unsigned roles);
/* Copies them out of the network (dst: trn_net_vectors_count floats). */
void trn_net_vectors_get(const trn_net *net, unsigned roles, float *dst);
/* Writes src into them (not into a borrowed network). */
int trn_net_vectors_put(trn_net *net, unsigned roles, const float *src, trn_err *err) TRN_MUST_CHECK;
/* A borrowed network (trn_weights_load_mem with borrow): points them at
 * consecutive slices of src in the current capacity's layout
 * (trn_net_vectors_count floats, which must stay valid while bound); src
 * NULL points every parameter back into the buffer it was loaded from.
 * Allocates once, at the first call; nothing is copied. A slice holds only
 * the current capacity's entries: after setting a larger capacity, bind
 * again (or with NULL) before any forward. */
int trn_net_vectors_bind(trn_net *net, unsigned roles, const float *src, trn_err *err) TRN_MUST_CHECK;

/* ---- parameters (llm.c-style table) -------------------------------------- *
 *
 * Every parameter array of the network lives in one allocation, in the order
 * of a Darknet .weights file (per layer in cfg order: convolutional =
 * biases, [scales, rolling_mean, rolling_variance], weights; connected =
 * biases, weights, [scales, rolling_mean, rolling_variance]). The table
 * lists them; weights I/O, SVD, pruning and freezing are loops over it. */
typedef enum trn_param_role {
    TRN_PARAM_BIASES,
    TRN_PARAM_SCALES,
    TRN_PARAM_ROLLING_MEAN,
    TRN_PARAM_ROLLING_VARIANCE,
    TRN_PARAM_WEIGHTS,
    TRN_PARAM_ROLE_COUNT
} trn_param_role;
const char *trn_param_role_name(trn_param_role r);

typedef struct trn_param {
    int layer;
    trn_param_role role;
    size_t count;
    int rows, cols;   /* data is (rows, cols): convolutional weights (filters,
                       * c/groups*size*size), connected weights (outputs,
                       * inputs); vectors (1, count) */
    float *data;      /* count floats (read-only when borrowed) */
    float *update;    /* Darknet's *_updates (accumulated negative gradient,
                       * then momentum); NULL for rolling statistics and in
                       * inference-only networks */
    float *mask;      /* NULL, or count 0/1 values: elements at 0 are frozen
                       * (get no update); see trn_net_set_mask */
    int64_t offset;   /* byte offset in a file written by trn_weights_save,
                       * -1 for a layer with dontsave */
} trn_param;

/* The table: *n entries, valid for the network's lifetime. Data may be
 * written through the pointers (not when borrowed). */
const trn_param *trn_net_params(const trn_net *net, int *n);
/* The entry of layer's parameter with role, or NULL when it has none. */
const trn_param *trn_net_param(const trn_net *net, int layer, trn_param_role role);
/* Freezes elements of parameter p where mask[i] == 0 (mask: count values;
 * NULL unfreezes). Frozen elements get no update, decay included, and a
 * frozen rolling statistic is not updated by training forwards. */
int trn_net_set_mask(trn_net *net, int p, const float *mask, trn_err *err);

/* ---- weights files ---------------------------------------------------------- *
 *
 * Darknet .weights: int32 major, minor, revision; then `seen` as uint64 when
 * major*10+minor >= 2 (and both < 1000), else as int32; then the parameter
 * arrays as float32 in table order (connected weights transposed when
 * major or minor > 1000). Saving writes version 0.2.0 with a 64-bit seen.
 * A file too short for the network, or with bytes after the last layer, is
 * an error naming the byte offset. */
int trn_weights_load(trn_net *net, const char *path, trn_err *err) TRN_MUST_CHECK;
/* From len bytes at buf (`name` for messages). borrow == 0 copies;
 * borrow == 1 points the parameters into buf, which must stay valid and
 * unchanged for the network's lifetime, be 4-byte aligned and belong to an
 * inference-only network (runtime-lite maps weights files this way). */
int trn_weights_load_mem(trn_net *net, const void *buf, size_t len, int borrow, const char *name,
                         trn_err *err) TRN_MUST_CHECK;
int trn_weights_save(const trn_net *net, const char *path, trn_err *err) TRN_MUST_CHECK;
/* Fragments (a head or specialised model stored as the layers from `cut` on,
 * beside its trunk; catalog/README.md, Fragments). trn_weights_prefix_bytes:
 * the bytes of the parameter arrays of layers 0..cut-1, which a fragment
 * leaves to its trunk. trn_weights_borrow_fragment: borrows (as
 * trn_weights_load_mem with borrow 1) the parameters of layers 0..cut-1
 * from trunk, a .weights file whose arrays begin with those bytes (its
 * later layers are not read), and those of layers cut.. from frag, a
 * .weights header followed by exactly their arrays. */
size_t trn_weights_prefix_bytes(const trn_net *net, int cut);
int trn_weights_borrow_fragment(trn_net *net, int cut, const void *trunk, size_t tlen, const char *tname,
                                const void *frag, size_t flen, const char *fname, trn_err *err) TRN_MUST_CHECK;
/* Darknet's header rule, for anything that reads a .weights header itself:
 * the header's size (16 or 20 bytes) given its first two int32s, and
 * whether connected weights are stored transposed. Defined for every
 * major/minor pair (no overflow on hostile values). */
size_t trn_weights_header_bytes(int32_t major, int32_t minor);
int trn_weights_header_transposed(int32_t major, int32_t minor);
/* The byte size of a file trn_weights_save writes. */
size_t trn_weights_bytes(const trn_net *net);
/* Images trained on (Darknet's `seen`, saved in the header). */
uint64_t trn_net_seen(const trn_net *net);
void trn_net_set_seen(trn_net *net, uint64_t seen);
/* The seed of the network's random draws (opts.seed, or a checkpoint's). */
uint64_t trn_net_seed(const trn_net *net);

/* ---- forward ---------------------------------------------------------------- */

/* Inference forward of x, (batch, c, h, w). The result stays in the network
 * until the next forward: trn_net_output is (batch, outputs). */
int trn_net_forward(trn_net *net, const float *x, trn_err *err) TRN_MUST_CHECK;
/* Forward through layers 0..last only (trunks, early exits). */
int trn_net_forward_upto(trn_net *net, const float *x, int last, trn_err *err) TRN_MUST_CHECK;
/* Forward through layers first..last only, x being layer first-1's output
 * (batch, its out shape), or the network input when first == 0: the pieces
 * of a split execution (runtime-lite's planner). Layers first..last must not
 * read outputs of layers before first-1 (a route or shortcut across the
 * cut): the caller checks that with trn_net_layer_info. */
int trn_net_forward_range(trn_net *net, int first, int last, const float *x, trn_err *err) TRN_MUST_CHECK;
const float *trn_net_output(const trn_net *net);
/* Layer i's output, (batch, out.c, out.h, out.w); NULL if i is invalid. */
const float *trn_net_layer_output(const trn_net *net, int i);

/* Counted costs of one batch-1 style forward of x (what `catalog profile`
 * reports): every matrix product the layers call adds m*n*k MACs to the
 * layer that is running when it is called (attributed by the engine, not
 * guessed from pointers); products called outside any layer go to
 * `outside_macs`. `layer_macs` is the caller's array of trn_net_layers(net)
 * entries (overwritten). The network computes exactly what a plain forward
 * computes (the counting wraps the backend's gemm and calls it). */
typedef struct trn_forward_counts {
    uint64_t *layer_macs;
    uint64_t outside_macs;
    uint64_t gemm_calls;
} trn_forward_counts;
int trn_net_count_forward(trn_net *net, const float *x, trn_forward_counts *counts, trn_err *err)
    TRN_MUST_CHECK;

/* Per-layer wall time: while on, every forward (and backward) adds its
 * seconds per layer; turning it on clears the sums. */
void trn_net_profile(trn_net *net, int on);
/* The sums of layer i; -1 if i is invalid. */
int trn_net_layer_time(const trn_net *net, int i, double *forward_s, double *backward_s);



/* ======================================================================
 * data: images, augmentation, Darknet classifier data sets, the batch
 * loader (image.c, image_stb.c, augment.c, dataset.c, loader.c; see
 * trainer/README.md, section Data)
 * ====================================================================== */

/* ---- early exits (exit.c) ------------------------------------------------- *
 *
 * FlexDNN's early exits (trainer/README.md, Early exits): exit branches
 * reading inner layers of a trunk network, from an exits cfg (an optional
 * [net] of training keys, then per exit an [exit] section with at=LAYER and
 * threshold=T followed by the branch's layers) and an exits weights file
 * (the branches' .weights files concatenated in exit order). */

/* Conf(y) = 1 + (1 / log C) sum_c y_c log y_c of a probability vector of
 * `classes` values, clamped to [0, 1] (thesis eq. 4.1). */
float trn_confidence(const float *y, int classes);
/* The confidence measures an [exit] may name (confidence=NAME): the one
 * above (entropy, the default), the top probability (max), the top less the
 * second (margin); each in [0, 1]. */
typedef enum trn_conf_measure { TRN_CONF_ENTROPY, TRN_CONF_MAX, TRN_CONF_MARGIN } trn_conf_measure;
float trn_confidence_by(trn_conf_measure m, const float *y, int classes);
/* Its name to the measure: 0, or -1 for a name not listed. */
int trn_conf_measure_parse(const char *name, trn_conf_measure *m);
const char *trn_conf_measure_name(trn_conf_measure m);

typedef struct trn_exits trn_exits;
/* Builds the branches of cfg over trunk (each a network of its own, made
 * with opts; its [net] input is its trunk layer's output). Errors name
 * file:line. NULL on error. */
trn_exits *trn_exits_create(const trn_net *trunk, const trn_cfg *cfg, const trn_net_opts *opts,
                            trn_err *err);
/* trn_cfg_read + trn_exits_create (+ the weights when weights_path != NULL). */
trn_exits *trn_exits_load(const trn_net *trunk, const char *cfg_path, const char *weights_path,
                          const trn_net_opts *opts, trn_err *err);
void trn_exits_free(trn_exits *x);
int trn_exits_count(const trn_exits *x);
/* Exit j's trunk layer (-1 when j is out of range), threshold, network. */
int trn_exit_at(const trn_exits *x, int j);
float trn_exit_threshold(const trn_exits *x, int j);
trn_net *trn_exit_net(const trn_exits *x, int j);
int trn_exit_set_threshold(trn_exits *x, int j, float t, trn_err *err);
/* Exit j's confidence measure (its [exit]'s confidence=, entropy if none). */
trn_conf_measure trn_exit_measure(const trn_exits *x, int j);
/* The exits weights file: its size, loading (borrow as trn_weights_load_mem)
 * and saving (atomically). */
size_t trn_exits_weights_bytes(const trn_exits *x);
int trn_exits_weights_load_mem(trn_exits *x, const void *buf, size_t len, int borrow, const char *name,
                               trn_err *err) TRN_MUST_CHECK;
int trn_exits_weights_load(trn_exits *x, const char *path, trn_err *err) TRN_MUST_CHECK;
int trn_exits_weights_save(const trn_exits *x, const char *path, trn_err *err) TRN_MUST_CHECK;

typedef struct trn_exit_result {
    int exit;          /* the exit that answered, 0..count-1; count: the trunk's last layer */
    const float *probs; /* its probabilities (owned by the networks, valid until their next forward) */
    float confidence;  /* Conf of probs */
    int trunk_last;    /* the last trunk layer that ran */
} trn_exit_result;
/* One input x through trunk and exits (both batch 1): the trunk runs up to
 * each exit's layer in turn (never redoing a layer), the exit's branch runs,
 * and it answers when Conf > alpha * its threshold; otherwise the trunk
 * finishes and answers. */
int trn_exits_forward(trn_net *trunk, trn_exits *x, const float *in, float alpha, trn_exit_result *r,
                      trn_err *err) TRN_MUST_CHECK;

/* ---- images (image.c: no training code, runtime-lite compiles it too) -- */

/* A float image, data is (c, h, w): data[(k*h + y)*w + x], values in [0, 1]
 * for decoded pixels. */
typedef struct trn_image {
    int w, h, c;
    float *data;
} trn_image;

/* Decoding limits, checked on the header before any pixel is allocated. */
#define TRN_IMAGE_MAX_SIDE 16384                 /* pixels per side */
#define TRN_IMAGE_MAX_PIXELS (64L * 1024 * 1024) /* w * h */
#define TRN_IMAGE_MAX_FILE (256L * 1024 * 1024)  /* bytes of an image file */

/* Whether w x h x c is within the limits above (and c <= 64). */
int trn_image_size_ok(long w, long h, long c);
/* Allocates a w x h x c image of zeros (w, h, c >= 1, w*h within the limits
 * above). Returns -1 on a bad size or out of memory; im is then empty. */
int trn_image_alloc(trn_image *im, int w, int h, int c, trn_err *err);
/* Frees im->data and empties im (NULL-safe, idempotent). */
void trn_image_free(trn_image *im);

/* Decodes a PNG, JPEG or BMP file into a new image. channels 0 keeps the
 * file's channel count; 1..4 converts (grey <-> RGB, alpha added or dropped,
 * grey from RGB by stb_image's luma weights). Errors name the file: cannot
 * read, unknown or corrupt format, dimensions over the limits. */
int trn_image_load(const char *path, int channels, trn_image *out, trn_err *err);
/* The same from a buffer in memory; `name` is used in messages. */
int trn_image_decode(const void *buf, size_t len, const char *name, int channels,
                     trn_image *out, trn_err *err);

/* Bilinear resize with Darknet's resize_image arithmetic (corners map to
 * corners: x_src = x * (src.w-1)/(dst.w-1)). dst is allocated by the caller
 * with dst->c == src->c and the wanted w, h. */
void trn_image_resize(const trn_image *src, trn_image *dst);
/* The window (ox, oy, out_w, out_h) of src resized to (rw, rh), written to
 * out (c, out_h, out_w) without building the whole resized image. */
void trn_image_resize_region(const trn_image *src, int rw, int rh, int ox, int oy,
                             int out_w, int out_h, float *out);
/* dst (allocated by the caller, dst->c == src->c) = the window of src at
 * (dx, dy) of dst's size; coordinates outside src are clamped to the edge
 * (Darknet's crop_image). */
void trn_image_crop(const trn_image *src, int dx, int dy, trn_image *dst);
/* Mirrors im left to right, in place. */
void trn_image_flip(trn_image *im);
/* In place, on channels 0..2 (c >= 3): h, s, v in [0, 1] (h = hue / 360). */
void trn_image_rgb_to_hsv(trn_image *im);
void trn_image_hsv_to_rgb(trn_image *im);
/* Darknet's distort_image: saturation *= dsat, value *= dexp, hue += dhue
 * (wrapped into [0, 1]), back to RGB, clamped to [0, 1]. On images with
 * fewer than 3 channels only the exposure applies (to channel 0). */
void trn_image_distort(trn_image *im, float dhue, float dsat, float dexp);
/* dst (caller-allocated, same size and c as src) = src rotated by rad
 * radians about its centre, bilinear, zeros outside src. */
void trn_image_rotate(const trn_image *src, float rad, trn_image *dst);

/* The geometric transform of Darknet's rotate_crop_image: an output pixel
 * (x, y) of a w x h window reads src at
 *   u = (x - w/2) / scale * aspect + dx / scale * aspect
 *   v = (y - h/2) / scale + dy / scale
 *   src_x = cos(rad) * u - sin(rad) * v + cx
 *   src_y = sin(rad) * u + cos(rad) * v + cy
 * bilinearly, zeros outside the window [bx0, bx1) x [by0, by1) of src.
 * trn_affine_init gives Darknet's case: centre (src.w/2, src.h/2), the
 * window the whole image; the jitter augmentation moves both. */
typedef struct trn_affine {
    float rad, scale, aspect, dx, dy;
    float cx, cy;
    int bx0, by0, bx1, by1;
} trn_affine;
/* Identity-like defaults for src: rad 0, scale 1, aspect 1, dx = dy = 0,
 * centre and window from src. */
void trn_affine_init(trn_affine *a, const trn_image *src);
/* out is (src->c, h, w). */
void trn_image_affine(const trn_image *src, const trn_affine *a, int w, int h, float *out);

/* Evaluation preprocessing, no randomness (Darknet's validate_classifier_
 * single): scale src, keeping its aspect ratio, so that it just covers
 * w x h (for a square network: the shorter side becomes w), then take the
 * centred w x h window. out is (src->c, h, w). */
void trn_image_eval_into(const trn_image *src, int w, int h, float *out);
/* Loads `path` with c channels and writes the evaluation preprocessing of
 * it to out, (c, h, w). What `trainer predict/valid` and `rtl run` feed a
 * network. Errors as trn_image_load. */
int trn_image_load_input(const char *path, int w, int h, int c, float *out, trn_err *err);

#ifdef __cplusplus
}
#endif
#endif /* TRN_NN_H */
