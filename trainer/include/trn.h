/*
 * trn.h: the trainer library, a Darknet-compatible CNN library (the one public
 * header of trainer/; every exported name starts with trn_ or TRN_).
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
#ifndef TRN_H
#define TRN_H

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

/* fopen that reports "cannot open PATH for MODE: strerror" in err. */
FILE *trn_fopen(const char *path, const char *mode, trn_err *err);

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
 * trn_atomic_abort removes the temporary file. Exactly one of commit/abort
 * must follow a successful open; commit aborts by itself when it fails. */
typedef struct trn_atomic {
    FILE *f;
    char path[4096];
    char tmp[4096 + 32];
} trn_atomic;

int trn_atomic_open(trn_atomic *a, const char *path, trn_err *err) TRN_MUST_CHECK;
int trn_atomic_commit(trn_atomic *a, trn_err *err) TRN_MUST_CHECK;
void trn_atomic_abort(trn_atomic *a);
/* The three steps for a buffer already in memory. */
int trn_write_file_atomic(const char *path, const void *buf, size_t len, trn_err *err) TRN_MUST_CHECK;

/* fsync a directory (after renaming into it). */
int trn_fsync_dir(const char *dir, trn_err *err);

#ifdef __cplusplus
}
#endif
#endif /* TRN_H */
