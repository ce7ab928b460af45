/* rtl_cli.h: what the files of the `rtl` program share (private). */
#ifndef RTL_CLI_H
#define RTL_CLI_H

#include "rtl.h"
#include "clikit.h"

#include <stdio.h>

/* -q: errors and warnings only. */
extern int quiet;

/* The options of the commands (their tables point into this). */
struct cmd_opts {
    int allow_downgrade, json;
    long long top, runs, warmup, threads; /* defaults 5, 20, 3, 0 (keep) */
    double alpha; /* early exits' knob; -1: the model's default (1) */
    double gap_ms; /* rtl profile: idle time before each timed run (0) */
};
#define CMD_OPTS_DEFAULTS {.top = 5, .runs = 20, .warmup = 3, .alpha = -1}

/* Prints "rtl: error: MSG" and returns 1. */
int fail(const rtl_err *err);

/* An input file opened for reading (mode "r" or "rb") through
 * rtl_open_input: a FIFO, folder or device is refused at once with what it
 * is. NULL with the reason in err. */
FILE *open_input(const char *path, const char *mode, rtl_err *err);

/* Variant `variant` of installed catalog `id`, opened with `threads`
 * compute threads (0: keep), and its catalog in *cat (both to close). NULL
 * after printing the error (fail's). */
rtl_model *open_variant(rtl_store *s, const char *id, const char *variant, long long threads, rtl_catalog **cat);
/* m's rtl_model_info (rtl_model_describe with this rtl.h's size: it cannot
 * fail). */
rtl_model_info model_info(const rtl_model *m);
/* cat's rtl_catalog_info and v's rtl_variant_info (as model_info). */
rtl_catalog_info catalog_info(const rtl_catalog *cat);
rtl_variant_info variant_info(const rtl_variant *v);
/* 1 when m's layers may be cut before layer s (0..layers: its layer cost's
 * cut_before; the last cut always). */
int model_cut_ok(const rtl_model *m, int s);

/* Parses a command's options with the kit (v's option table, whose rows
 * point into the command's struct cmd_opts) and checks that it got between
 * lo and hi operands, which it moves to the end of argv. Returns the index
 * of the first operand, or -1 after printing the help (*rc 0) or a usage
 * error: the reason, then the help (*rc 2). */
int sub_opts(int argc, char **argv, const ck_verb *v, int lo, int hi, int *rc);
/* sub_opts() for the commands that parsed with getopt_long (pull, plan,
 * serve): a unique prefix of a long option of v's table ("--pre" or
 * "--pre=V") is that option, as getopt_long took it. The words go into a
 * new array *av (free it; the strings stay argv's), the operands last from
 * the index returned. */
int sub_opts_abbrev(int argc, char **argv, const ck_verb *v, int lo, int hi, int *rc, char ***av);

/* Commands of rtl_run_cli.c. s is NULL when only --help is asked for. */
int cmd_run(rtl_store *s, int argc, char **argv);
int cmd_profile(rtl_store *s, int argc, char **argv);
/* rtl_pull_cli.c */
int cmd_pull(rtl_store *s, int argc, char **argv);
/* Commands of rtl_offload_cli.c: plan, serve, peer-keygen, run --split. */
int cmd_plan(rtl_store *s, int argc, char **argv);
int cmd_serve(rtl_store *s, int argc, char **argv);
int cmd_peer_keygen(rtl_store *s, int argc, char **argv);
int cmd_run_split(rtl_store *s, int argc, char **argv);
/* rtl_tasks_cli.c: run --task (several tasks, shared trunks). */
int cmd_run_tasks(rtl_store *s, int argc, char **argv);
/* 1 when run's arguments name --task. */
int run_wants_tasks(int argc, char **argv);
/* rtl_gtdp_cli.c: run --workers (MeDNN's GTDP over rtl serve workers). */
int cmd_run_gtdp(rtl_store *s, int argc, char **argv);
/* 1 when run's arguments ask for split execution (--split, --peer). */
int run_wants_split(int argc, char **argv);

/* rtl_stream_cli.c: the inputs of stream and context: image files, folders
 * (their regular files, sorted) and @LIST files. add_inputs prints its
 * error and returns -1. */
struct inputs {
    char **p;
    size_t n, cap;
};
int add_inputs(struct inputs *in, const char *arg);
void inputs_free(struct inputs *in);

/* rtl_context_cli.c: `rtl context`, and the context profiler's options and
 * the specialised models that run, stream and context share. */
int cmd_context(rtl_store *s, int argc, char **argv);
struct ctx_cli {
    long long window, min_samples;
    double hysteresis;
    const char *n, *p;       /* "7,14,21", "0.6,..."; NULL: the profiler's defaults */
};
#define CTX_CLI_DEFAULTS {.window = 100, .hysteresis = 0.05}
/* The option rows (a struct ctx_cli c in scope). */
#define CTX_CLI_OPTS(c)                                                                                          \
    {"--window", "W", CK_INT, &(c).window, 1, RTL_CONTEXT_MAX_WINDOW,                                            \
     "the profiler's sliding window: the last W answers (default 100)"},                                          \
    {"--min-samples", "N", CK_INT, &(c).min_samples, 1, RTL_CONTEXT_MAX_WINDOW,                                   \
     "never dominated, no specialised model used, before N answers (default: W)"},                                \
    {"--n", "LIST", CK_STR, &(c).n, 0, 0, "the n tried, increasing (default 7,14,21; at most 64)"},               \
    {"--p", "LIST", CK_STR, &(c).p, 0, 0, "the thresholds p, increasing (default 0.6,0.7,0.8,0.9,0.95)"},         \
    {"--hysteresis", "H", CK_REAL, &(c).hysteresis, 0, 0.5,                                                       \
     "a context (or specialised model) in use stays down to its p minus H (default 0.05)"}
/* The profiler's parameters for classes classes; -1 with err on a bad list. */
int ctx_params(const struct ctx_cli *c, uint32_t classes, rtl_context_params *q, rtl_err *err);

/* A runner's options for run, stream and context: threads, --context and
 * the profiler's options, warnings printed (unless -q); -1 with err on a
 * bad list of the profiler's. */
int runner_options(const struct ctx_cli *cc, int context, long long threads, rtl_runner_options *ro,
                   rtl_err *err);
/* The index of label among labels[0..n), or n when absent. */
size_t label_index(const char *const *labels, size_t n, const char *label);
/* The report's classes as a JSON array of labels. */
void ctx_print_classes(const rtl_context *r, const char *const *labels, FILE *f);

/* The latency table of `rtl inspect`: build host, this device (profile of
 * an installed catalog), estimates. Prints nothing when there is none. */
void print_latencies(const rtl_catalog *cat);

/* For the peer paths (rtl serve, rtl run --workers, --split/--peer), which
 * allocate a few MB per request (frames, activations): glibc's default
 * hands such blocks back to the kernel when freed and faults them in again
 * on the next request; kept instead (up to 256 MB free). A GTDP forward of
 * AlexNet's trunk over one worker cost the device 11 ms of CPU beside
 * 5.6 ms with this (tests/bench/rtl_gtdp.sh). The other commands keep the
 * default, which returns memory to a small device sooner. */
void keep_freed_memory(void);
/* Milliseconds of the monotonic clock. */
double now_ms(void);
/* The median of v[0..n) (n >= 1; the mean of the middle two for even n);
 * sorts v. */
double median(double *v, long long n);

/* rtl_json.c: an answer's classes as a JSON array of {"index", "label",
 * "probability"} (NULL when out of memory). */
struct cJSON *top_json(const rtl_class *top, size_t n);
/* rtl_json.c: appends {"image", "error"} (an image that got no answer, and
 * why) to the results array of `rtl run --json` (nothing when NULL). */
void image_error_json(struct cJSON *results, const char *image, const char *msg);
/* rtl_json.c: `rtl list --json` and `rtl inspect --json`; 0, or 1 after an
 * error message. */
int print_installed_json(const rtl_installed *list, size_t n);
int print_catalog_json(const rtl_catalog *cat);

#endif
