/* cli.h: what the verbs of `trainer` share (private to trainer/cli). */
#ifndef TRN_CLI_H
#define TRN_CLI_H

#include "trn.h"

#include <stdio.h>

/* Each verb: returns the process exit status (0 ok, 1 error, 2 usage),
 * having printed its own errors. */
int cli_train(int argc, char **argv);
int cli_valid(int argc, char **argv);
int cli_predict(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);

/* Parses a whole number in [lo, hi] for option `name`; prints an error
 * and returns -1 when it is not one. */
int cli_num(const char *verb, const char *name, const char *s, long long lo, long long hi,
            long long *out);
/* Prints "trainer VERB: error: MSG" to stderr. Returns 1. */
int cli_fail(const char *verb, const char *fmt, ...) TRN_PRINTF(2, 3);
/* Prints the usage error and the hint to run --help. Returns 2. */
int cli_usage(const char *verb, const char *fmt, ...) TRN_PRINTF(2, 3);

/* --set key=value overrides of the [net] section, collected in order. */
typedef struct cli_sets {
    const char *kv[64];
    int n;
} cli_sets;
struct ck_list;
/* Adds every --set key=value of `set` (the option's list) in order; -1
 * after the usage message for one that is not key=value or one too many. */
int cli_add_sets(cli_sets *s, const char *verb, const struct ck_list *set);
/* A verb whose cfg may be given as --cfg or as its one operand: *cfg
 * becomes the operand when --cfg was not given; both given is a usage
 * error (2, printed), else 0. */
int cli_cfg_operand(const char *verb, const char **cfg, const char *operand);
/* Reads the cfg and applies the overrides; NULL (error printed) on failure. */
trn_cfg *cli_cfg(const char *verb, const char *path, const cli_sets *sets);
/* The --set values judged against the cfg's [net] section before any work
 * (a bad key or value is a usage error): 0, 2 after the usage message, 1
 * when the cfg cannot be read. */
int cli_check_sets(const char *verb, const char *path, const cli_sets *sets);

/* THREADS: --threads, else the THREADS environment variable, else all
 * cores. Returns -1 (error printed) on a bad value. */
int cli_threads(const char *verb, const char *opt);
/* --determinism MODE, else (when called with NULL and no option was given)
 * the DETERMINISM environment variable: "default" or "portable" (trn.h).
 * cli_threads calls it with NULL. Returns -1 (usage printed) on a bad value. */
int cli_determinism(const char *verb, const char *opt);
/* The help text of the --determinism MODE option (train, valid, predict,
 * bench). */
#define CLI_DETERMINISM_DOC                                                     \
    "default (OpenBLAS: the same bytes for any thread count on one CPU kind)\n" \
    "or portable (our own kernels: the same bytes on x86-64 and aarch64,\n"     \
    "slower); default: DETERMINISM, else default"

/* The file name without folder and extension, e.g. "alexnet" for
 * "recipes/alexnet/base.cfg" -> "base". */
void cli_basename(const char *path, char *out, size_t size);

#endif
