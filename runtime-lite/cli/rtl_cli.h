/* rtl_cli.h: what the files of the `rtl` program share (private). */
#ifndef RTL_CLI_H
#define RTL_CLI_H

#include "rtl.h"

/* -q: errors and warnings only. */
extern int quiet;

/* Options a command may accept (sub_opts' `accepted` mask). */
enum {
    OPT_DOWNGRADE = 1 << 0, /* --allow-downgrade */
    OPT_TOP = 1 << 1,       /* --top K */
    OPT_JSON = 1 << 2,      /* --json */
    OPT_RUNS = 1 << 3,      /* --runs N */
    OPT_WARMUP = 1 << 4,    /* --warmup N */
    OPT_THREADS = 1 << 5,   /* --threads N */
};

struct cmd_opts {
    int allow_downgrade, json;
    long top, runs, warmup, threads; /* defaults 5, 20, 3, 0 (keep) */
};

/* Prints "rtl: error: MSG" and returns 1. */
int fail(const rtl_err *err);

/* Parses a command's options (those in `accepted`; o may be NULL when none
 * take a value) and checks that it got between lo and hi arguments.
 * Returns the index of the first argument, or -1 after printing the help
 * (*rc 0) or a usage error (*rc 2). */
int sub_opts(int argc, char **argv, const char *help, unsigned accepted, struct cmd_opts *o, int lo, int hi,
             int *rc);

/* Commands of rtl_run_cli.c. s is NULL when only --help is asked for. */
int cmd_run(rtl_store *s, int argc, char **argv);
int cmd_profile(rtl_store *s, int argc, char **argv);
/* rtl_pull_cli.c */
int cmd_pull(rtl_store *s, int argc, char **argv);

/* The latency table of `rtl inspect`: build host, this device (profile of
 * an installed catalog), estimates. Prints nothing when there is none. */
void print_latencies(const rtl_catalog *cat);

/* rtl_json.c: `rtl list --json` and `rtl inspect --json`; 0, or 1 after an
 * error message. */
int print_installed_json(const rtl_installed *list, size_t n);
int print_catalog_json(const rtl_catalog *cat);

#endif
