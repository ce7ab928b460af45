/* rtl_cli.h: what the files of the `rtl` program share (private). */
#ifndef RTL_CLI_H
#define RTL_CLI_H

#include "rtl.h"
#include "clikit.h"

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

/* Variant `variant` of installed catalog `id`, opened with `threads`
 * compute threads (0: keep), and its catalog in *cat (both to close). NULL
 * after printing the error (fail's). */
rtl_model *open_variant(rtl_store *s, const char *id, const char *variant, long long threads, rtl_catalog **cat);

/* Parses a command's options with the kit (v's option table, whose rows
 * point into the command's struct cmd_opts) and checks that it got between
 * lo and hi operands, which it moves to the end of argv. Returns the index
 * of the first operand, or -1 after printing the help (*rc 0) or a usage
 * error: the reason, then the help (*rc 2). */
int sub_opts(int argc, char **argv, const ck_verb *v, int lo, int hi, int *rc);

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

/* The latency table of `rtl inspect`: build host, this device (profile of
 * an installed catalog), estimates. Prints nothing when there is none. */
void print_latencies(const rtl_catalog *cat);

/* rtl_json.c: `rtl list --json` and `rtl inspect --json`; 0, or 1 after an
 * error message. */
int print_installed_json(const rtl_installed *list, size_t n);
int print_catalog_json(const rtl_catalog *cat);

#endif
