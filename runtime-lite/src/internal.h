/* internal.h: what the runtime-lite sources share and do not export (every
 * name here has hidden visibility in librtl.so). */
#ifndef RTL_INTERNAL_H
#define RTL_INTERNAL_H

#include "rtl.h"
#include "rtl_sign.h"
#include "nn.h"

#include <stdarg.h>

#if defined(__GNUC__)
#define RTL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RTL_PRINTF(f, a)
#endif

/* Lets context profiler p count classes 0..classes-1 (no change when it
 * already does), its window kept: for a user that learns the classes as
 * they come (the scheduler, sched.c). -1 with err past
 * RTL_CONTEXT_MAX_CLASSES or out of memory (p unchanged). */
int rtl_context_grow(rtl_context_profiler *p, uint32_t classes, rtl_err *err);
/* Once exported, now librtl's own: the runner (runner.c) runs cascades,
 * matches contexts and feeds the scheduler its measured costs, so an
 * application calls rtl_runner_* instead (issue 38: a minimal device API).
 * The unit tests still test them directly. */
/* The cascade's gate of specialised v (technique_fields.cascade.gate): its
 * answer stands only at a probability >= the gate, lower ones fall through
 * to the partner like "other"; 0 (MCDNN's cascade: "other" alone) when v
 * has none or is not specialised. */
double rtl_variant_cascade_gate(const rtl_variant *v);
/* When cat is an add-on: the id and version of the catalog it extends; 1.
 * 0 when it is not an add-on. */
int rtl_catalog_base(const rtl_catalog *cat, const char **id, uint64_t *version);
/* Inputs in the window now. */
uint32_t rtl_context_samples(const rtl_context_profiler *p);
/* The share of the window held by classes[0..n) (repeats count once,
 * indices >= classes count nothing); 0 for an empty window. */
double rtl_context_share(const rtl_context_profiler *p, const uint32_t *classes, size_t n);
/* When v is specialised (catalog cat): the classes it answers (its task's
 * labels but its "other" class), as indices among labels[0..nlabels) (the
 * generic task's labels, by name) into classes[0..cap), their count in *n,
 * and its context's p (technique_fields.context.p; 0 when absent) in *p.
 * -1 with err when v is not specialised, one of its labels is not among
 * labels, or cap is too small. */
int rtl_variant_context(const rtl_catalog *cat, const rtl_variant *v, const char *const *labels,
                                size_t nlabels, uint32_t *classes, size_t cap, size_t *n, double *p,
                                rtl_err *err) RTL_MUST_CHECK;
/* The class of an answer of task (the device's classifier's, not the
 * truth; an index among the task's labels) into its class-frequency window,
 * as rtl_sched_decide's cls; nothing for a class < 0 or no such task.
 * rtl_runner_serve feeds it each answer. */
void rtl_sched_observe(rtl_sched *s, int task, int cls);
/* The option of task cached at location loc now; -1: none. */
int rtl_sched_cached(const rtl_sched *s, int task, enum rtl_loc loc);
/* Feeds back the measured cost of an executed decision d: measured_ms is
 * the device compute time of d's option (paging in excluded). The option's
 * device latency becomes measured_ms (source "device"), its device energy
 * scales with it, and the energy charged for d is corrected, so the next
 * decisions use the measured figure. Accounted: device decisions of options
 * without a trunk or a cascade partner (another's time is in theirs). */
void rtl_sched_account(rtl_sched *s, const rtl_sched_decision *d, double measured_ms);
/* Empties the window and forgets the last report. */
void rtl_context_reset(rtl_context_profiler *p);
/* Adds a trunk; its index, or -1. */
int rtl_sched_add_trunk(rtl_sched *s, const rtl_sched_trunk *t, rtl_err *err);
size_t rtl_sched_task_count(const rtl_sched *s);
/* The variant's technique_fields object as compact JSON text ("{}" when
 * absent): capacities, exits, fragments, context and cascade live there
 * until loaders grow typed accessors for them. */
const char *rtl_variant_fields_json(const rtl_variant *v);

/* Also librtl's own since the runner (issue 38): an application's
 * profiler is the runner's (rtl_runner_profiler), its timings are
 * rtl_model_measure_paced's, split runs go through rtl_offload_run; the
 * tests and tools still call these. */
/* A profiler with params (copied; NULL fields take their defaults). NULL
 * with err on a bad parameter or no memory. */
rtl_context_profiler *rtl_context_profiler_new(const rtl_context_params *params, rtl_err *err);
void rtl_context_profiler_free(rtl_context_profiler *p);
/* Floats crossing cut s (input, layer s-1's output): 0 when s is out of range. */
size_t rtl_model_cut_floats(const rtl_model *m, int s);
/* Runs layers first..last on x (the floats crossing cut `first`, n of them)
 * and points *out at layer last's output (*nout floats, owned by the model,
 * valid until its next run). Both cuts must be possible. When last is the
 * final layer the result is also rtl_model_output's. */
int rtl_model_run_range(rtl_model *m, int first, int last, const float *x, size_t n,
                                const float **out, size_t *nout, rtl_err *err) RTL_MUST_CHECK;
/* Measures batch-1 latency: `warmup` untimed runs, then `runs` (>= 1) timed
 * runs of rtl_model_run on x, each timed alone with a monotonic clock. x
 * NULL uses the model's own input buffer: the image rtl_model_run_image
 * decoded last, or the x of an earlier measurement, zeros at first. Fills
 * out: where "device", source "measured", machine (rtl_machine_describe),
 * threads, runs, median and mean, the time and the catalog version. */
int rtl_model_measure(rtl_model *m, const float *x, uint32_t warmup, uint32_t runs,
                              rtl_latency *out, rtl_err *err) RTL_MUST_CHECK;
/* Bytes of weights mapped for this model (the sum over its parts). */
uint64_t rtl_model_mapped_bytes(const rtl_model *m);
/* Fills p's input rows, bytes and times for worker w (p's rectangle set). */
void rtl_gtdp_part_cost(const rtl_gtdp_layer *l, const rtl_gtdp_worker *w, rtl_gtdp_part *p);

/* Fine-grained calls only librtl and its tests make (issue 38: a minimal
 * device API). */
/* rtl_untrusted_check's for an index's signature (rtl_pull checks it). */
int rtl_index_untrusted_check(const rtl_signature *sig, const char *channel, uint64_t serial,
                              rtl_err *err) RTL_MUST_CHECK;
/* The model's alpha (rtl_model_set_alpha's). */
float rtl_model_alpha(const rtl_model *m);
/* The cost of a given placement (on_cloud per layer; p->layers set) under
 * target and link; fills p's figures. -1 when a location change falls on
 * an impossible cut. */
int rtl_plan_evaluate(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k, rtl_plan *p,
                      rtl_err *err);
/* The task's label of class k of m's output (NULL when out of range). */
const char *rtl_model_label(const rtl_model *m, size_t k);

/* A model's single facts, librtl's own since rtl_model_describe answers
 * them in one struct (issue 38: a minimal device API); see rtl_model_info
 * for their meaning. */
const rtl_variant *rtl_model_variant(const rtl_model *m);
void rtl_model_input_shape(const rtl_model *m, int *c, int *h, int *w);
size_t rtl_model_input_size(const rtl_model *m);
size_t rtl_model_classes(const rtl_model *m);
int rtl_model_capacities(const rtl_model *m);
int rtl_model_capacity(const rtl_model *m);
void rtl_model_switch_bytes(const rtl_model *m, rtl_switch_bytes *out);
int rtl_model_exits(const rtl_model *m);
int rtl_model_exit_taken(const rtl_model *m);
/* The trunk layer exit j reads (-1 when out of range). */
int rtl_model_exit_layer(const rtl_model *m, int j);
int rtl_model_layers(const rtl_model *m);
/* 1 when cut s (0..layers) is possible. */
int rtl_model_cut_ok(const rtl_model *m, int s);

/* When v is specialised: its cascade partner's id (into partner, psize
 * bytes) and the index of its "other" class; 0. -1 with err (may be NULL)
 * otherwise. librtl's own since the runner runs cascades
 * (rtl_runner_specialised names the partner). */
int rtl_variant_cascade(const rtl_variant *v, char *partner, size_t psize, int *other_class, rtl_err *err);

/* A catalog's single facts, librtl's own since rtl_catalog_describe
 * answers them in one struct (see rtl_catalog_info). */
const char *rtl_catalog_id(const rtl_catalog *cat);
const char *rtl_catalog_model(const rtl_catalog *cat);
uint64_t rtl_catalog_version(const rtl_catalog *cat);
const char *rtl_catalog_dir(const rtl_catalog *cat);
size_t rtl_catalog_task_count(const rtl_catalog *cat);
const char *rtl_catalog_task_name(const rtl_catalog *cat, size_t i);
size_t rtl_catalog_variant_count(const rtl_catalog *cat);

/* A variant's single facts, librtl's own since rtl_variant_describe
 * answers them in one struct (see rtl_variant_info). */
enum rtl_cost {
    RTL_COST_MACS,
    RTL_COST_PARAMS,
    RTL_COST_WEIGHT_BYTES,
    RTL_COST_PEAK_ACTIVATION_BYTES,
    RTL_COST_COUNT
};
const char *rtl_variant_id(const rtl_variant *v);
const char *rtl_variant_technique(const rtl_variant *v);
const char *rtl_variant_task(const rtl_variant *v);
const char *rtl_variant_parent(const rtl_variant *v); /* NULL: none */
size_t rtl_variant_file_count(const rtl_variant *v);
uint64_t rtl_variant_cost(const rtl_variant *v, enum rtl_cost which);
size_t rtl_variant_estimate_count(const rtl_variant *v);

/* The tail of an extensible describe struct (rtl_model_describe and its
 * kind): copies full (full_size bytes, the library's layout) into out as
 * far as out_size reaches and zeroes out past full_size; -1 with err
 * naming what when out_size < min_size (the first layout's size). */
int rtl_describe_copy(void *out, size_t out_size, const void *full, size_t full_size, size_t min_size,
                      const char *what, rtl_err *err);

/* Formats a message into err (err may be NULL). Returns -1, so that error
 * paths read `return rtl_errf(err, "...")`. */
int rtl_errf(rtl_err *err, const char *fmt, ...) RTL_PRINTF(2, 3);
/* Prefixes the message already in err with "prefix: ". Returns -1. */
int rtl_err_prefix(rtl_err *err, const char *fmt, ...) RTL_PRINTF(2, 3);

/* Copies a message of the trainer's code (compiled into librtl) into err.
 * Returns -1. */
int rtl_err_from_trn(rtl_err *err, const trn_err *e);

/* Milliseconds on CLOCK_MONOTONIC (timings, deadlines). */
double rtl_now_ms(void);
/* qsort's order of doubles, ascending (medians of timings). */
int rtl_cmp_double(const void *a, const void *b);
/* The median of v[0..n-1] (sorted in place by it); 0 when n is 0. */
double rtl_median(double *v, size_t n);

/* Lower-case hex of n bytes into out (2n+1 bytes); parse back (0 or -1). */
void rtl_hex(const uint8_t *bytes, size_t n, char *out);
int rtl_unhex(const char *hex, uint8_t *out, size_t n);

/* Largest .minisig file (four lines). */
#define RTL_SIG_FILE_MAX (RTL_COMMENT_MAX + RTL_TRUSTED_MAX + 512)

/* Reads a whole regular file of at most max bytes into a new NUL-terminated
 * buffer the caller frees (key and signature files): trn_read_file. */
int rtl_read_small(const char *path, size_t max, char **buf, size_t *len, rtl_err *err);

/* Refuses a parsed JSON document (a cJSON tree) in which an object has two
 * members of one name (json.c): every signed document the device reads goes
 * through it. what names the document in the message. */
struct cJSON;
int rtl_json_unique_keys(const struct cJSON *node, const char *what, rtl_err *err);

/* An id of catalogs, models and variants: ^[a-z0-9][a-z0-9_.-]{0,63}$. */
int rtl_id_ok(const char *s);

/* Crash points for the crash-safety test: in the test build of the runtime
 * (compiled with -DRTL_CRASH_POINTS=1) the Nth point reached, N taken from
 * the environment variable RTL_CRASH_AT, kills the process with SIGKILL, and
 * RTL_CRASH_TRACE=1 names each point on stderr. In every other build the
 * macro is empty and the environment is never read. */
#if defined(RTL_CRASH_POINTS) && RTL_CRASH_POINTS
void rtl_crash_point(const char *name);
#define RTL_CRASH_POINT(name) rtl_crash_point(name)
#else
#define RTL_CRASH_POINT(name) ((void)0)
#endif

/* The id of the catalog model m belongs to (for the peer's requests). */
const char *rtl_model_catalog_id(const rtl_model *m);
/* The catalog m was opened from. */
const rtl_catalog *rtl_model_catalog(const rtl_model *m);

/* The engine network of m's first part (GTDP reads layer geometry and
 * parameters from it). */
trn_net *rtl_model_net(const rtl_model *m);
/* GTDP's per-model cache of part networks (gtdp.c), freed with the model. */
struct rtl_gtdp_cache;
struct rtl_gtdp_cache **rtl_model_gtdp_cache(rtl_model *m);
/* A cascade's fall-through on a fragment's trunk (MCDNN: the first stage
 * computed once): after rtl_model_run of frag, a fragment cut from trunk's
 * variant, runs trunk's layers from the cut on frag's output there, so the
 * trunk's answer costs only its upper layers. 1 when done (trunk's output
 * is its answer), 0 when frag is not a fragment of trunk's variant or the
 * cut does not fit (the caller runs trunk whole), -1 with err. */
int rtl_model_run_from_fragment(rtl_model *trunk, const rtl_model *frag, rtl_err *err);
const struct rtl_gtdp_cache *rtl_model_gtdp_cache_get(const rtl_model *m);
/* The peer's server holds its answer to the last request on this
 * connection when that was a part that succeeded: 1 with its block (last
 * layer), rows r0, r1 and channels c0, c1 in hgeom, else 0 (peer.c). */
int rtl_peer_held(const rtl_peer *p, int32_t hgeom[5]);
/* A part whose request is written and whose answer is read in place
 * (GTDP's coordinator): fill writes the request's n floats as wire bytes
 * (little-endian float32, rtlp_floats_put) at dst, straight into the
 * frame that is then sealed in place; take reads the answer's count floats
 * (wire bytes at src, in the reply opened in place). hgeom: a held request
 * (rtl_peer_held), or NULL. No copy of the input or the answer between. */
typedef struct rtl_part_io {
    void (*fill)(void *ctx, uint8_t *dst);
    void (*take)(void *ctx, const uint8_t *src, uint32_t count);
    void *ctx;
    /* when set: rtl_now_ms() at each step of the call (RTL_IO_T_*) */
    double *t;
} rtl_part_io;
int rtl_peer_run_part_io(rtl_peer *p, const rtl_model *m, int first, int last,
                         const rtl_gtdp_part *q, const int32_t *hgeom, size_t n, const rtl_part_io *io, size_t cap,
                         size_t *nout, int deadline_ms, rtl_err *err);
/* count floats to and from the wire's little-endian float32 bytes (one
 * memcpy on a little-endian host): frame.c. */
void rtlp_floats_put(uint8_t *b, const float *x, uint32_t count);
void rtlp_floats_get(const uint8_t *b, uint32_t count, float *out);
/* What a held request carries (frame.c; both ends of the wire use it):
 * its input rows a..b of every one of c_in channels (w floats each), less
 * the rows lo..hi that the held answer (hgeom: rows hg[1]..hg[2] of
 * channels hg[3]..hg[4]) has of its channels; lo and hi set (hi <= lo: no
 * overlap); returns the floats the message carries. */
size_t rtlp_held_floats(int c_in, int w, int a, int b, const int32_t hg[5], int *lo, int *hi);
void rtl_gtdp_cache_free(struct rtl_gtdp_cache *c);
/* The rows of part q of block l whose pool windows it computes whole
 * ([*f0, *f1), within r0..r1; all of them unless q is cut at convolution
 * rows): what its worker keeps as its held answer. */
void rtl_gtdp_whole_rows(const rtl_gtdp_layer *l, const rtl_gtdp_part *q, int *f0, int *f1);
/* Copies rows [a, b) of every channel of the c x h x w map x into slab
 * (c x (b - a) x w; gtdp.c). */
void rtl_gtdp_rows_of(const float *x, int c, int h, int w, int a, int b, float *slab);
/* After a part call: the answer the server now holds is hgeom (a part cut
 * at convolution rows: its whole rows); NULL: none. */
void rtl_peer_set_held(rtl_peer *p, const int32_t hgeom[5]);
/* rtl_gtdp_compute_part with its input rows (q->in_r0..in_r1, n floats in
 * all, checked as there) read where they lie: row(ctx, c, iy, dst) writes
 * input channel c's row iy (w_in floats) at dst, straight into the part
 * network's padded input (a worker reads them from the request's opened
 * bytes and its held answer: no copy in between). */
int rtl_gtdp_compute_part_rows(rtl_model *m, int layer, const rtl_gtdp_part *q, size_t n,
                               void (*row)(void *arg, int c, int iy, float *dst), void *arg, float *out,
                               rtl_err *err);
/* The engine m's networks run on (model.c): GTDP's part networks run on it
 * too. */
trn_engine *rtl_model_engine(const rtl_model *m);

/* Makes y (n floats: the classes) the model's output, as a split run's
 * answer; -1 when n is not the class count. */
int rtl_model_set_output(rtl_model *m, const float *y, size_t n, rtl_err *err);


/* ---- librtl's own, once exported (issue 38 item 1: nothing outside
 * librtl called them; rtl_api_budget.sh counts the rest) ---------------- */
/* BLAKE2b-512 of everything readable from fd (from its current offset to
 * EOF), read in blocks (rtl_hash_file's). */
int rtl_hash_fd(int fd, uint8_t out[RTL_HASH_BYTES], rtl_err *err);
/* Verifies only the global signature (trusted comment), for a file that is
 * no longer at hand (an installed catalog keeps its .minisig). */
int rtl_sig_verify_comment(const rtl_signature *sig, const rtl_pubkey *key,
                           rtl_err *err) RTL_MUST_CHECK;
/* SHA-256 and size of everything readable from fd (from its offset to EOF),
 * read in blocks (rtl_sha256_file's). */
int rtl_sha256_fd(int fd, uint8_t out[RTL_SHA256_BYTES], uint64_t *size, rtl_err *err);
const char *rtl_variant_description(const rtl_variant *v);
size_t rtl_variant_depends_count(const rtl_variant *v);
const char *rtl_variant_depends_at(const rtl_variant *v, size_t i);
const char *rtl_variant_file_role(const rtl_variant *v, size_t i);
/* Path of file i: the catalog folder joined with its archive path. */
const char *rtl_variant_file_path(const rtl_variant *v, size_t i);
uint64_t rtl_variant_file_size(const rtl_variant *v, size_t i);
/* When v is a head: its parent's id (copied into parent_buf, psize bytes) and *from_layer (the first head layer); 0.
 * -1 with err (may be NULL) when v is not a head or its fields lack them. */
int rtl_variant_head(const rtl_variant *v, char *parent_buf, size_t psize, int *from_layer,
                     rtl_err *err);
/* Layer i of m as a GTDP block (its time: rtl_model_profile_layers'): the
 * convolution, with the max pool right after it when nothing else reads
 * the convolution's output; -1 when layer i is not an ungrouped
 * convolutional layer. */
int rtl_gtdp_model_layer(const rtl_model *m, int i, rtl_gtdp_layer *out);
/* The largest request or reply any variant of the catalogs installed in
 * store can need (its peak activation, with headroom), bytes: what
 * rtl serve takes for max_frame when none is given; *why names the variant
 * (a line for the log). 0 when no catalog is installed. */
uint32_t rtl_server_max_frame(rtl_store *store, char *why, size_t whylen);
/* Asks the peer to run layers first..last of m's variant on x (n floats
 * crossing cut `first`); the answer (layer last's output) goes into
 * out[0..cap), *nout floats. The request names m's catalog exactly (its
 * version and its manifest's SHA-256): a peer holding another version
 * refuses it, and err then names both versions. Fails when the deadline
 * (ms from now) passes; after any failure the connection is unusable
 * (close it). */
int rtl_peer_run(rtl_peer *p, const rtl_model *m, int first, int last, const float *x, size_t n,
                 float *out, size_t cap, size_t *nout, int deadline_ms, rtl_err *err) RTL_MUST_CHECK;
/* GTDP part q of the block of layers first..last (a convolution, and its
 * fused max pool when last = first + 1: rtl_gtdp_model_layer; x: input
 * rows q->in_r0..in_r1, all channels, n floats) computed by the peer: its
 * rows x channels in out. */
int rtl_peer_run_part(rtl_peer *p, const rtl_model *m, int first, int last, const rtl_gtdp_part *q,
                      const float *x, size_t n, float *out, size_t cap, size_t *nout, int deadline_ms,
                      rtl_err *err) RTL_MUST_CHECK;
/* Computes GTDP part q of m's layer here (what a worker runs); x as above,
 * out receives (c1-c0) x (r1-r0) x w floats. */
int rtl_gtdp_compute_part(rtl_model *m, int layer, const rtl_gtdp_part *q, const float *x, size_t n,
                          float *out, rtl_err *err) RTL_MUST_CHECK;

#endif
