/*
 * clikit.h: the command-line kit of the five programs (trainer, dataset,
 * prune, catalog, rtl). A program is a table: its name, version, summary,
 * usage text and verbs (name, one-line summary, function, option table).
 * ck_main() does what every program does alike:
 *   PROG, PROG --help | -h | help [VERB | --help], PROG --version | version,
 *   PROG --man (its manual page in roff, generated from the same tables and
 *   help texts), PROG VERB ARGS..., an unknown verb (a one-line reason, the
 *   usage, exit 2),
 * and checks every write to standard output before it exits (a full disk or
 * a closed pipe is exit 1 with the reason, never a silent 0).
 *
 * A verb's option table (ck_opt, ended by a {0} row) is what ck_parse()
 * accepts and what ck_help() and the manual page list: adding an option is
 * one row. Verbs without a table print their own help text for VERB --help;
 * the manual page then holds that text as printed.
 *
 * CLI code only: it prints and the program exits with what it returns.
 */
#ifndef CLIKIT_H
#define CLIKIT_H

#include <stdio.h>

/* Exit statuses: 0 ok, 1 failure, 2 usage error. */
enum { CK_OK = 0, CK_FAIL = 1, CK_USAGE = 2 };

typedef enum ck_type {
    CK_FLAG,   /* no value: *(int *)dst = 1 */
    CK_STR,    /* *(const char **)dst = value */
    CK_INT,    /* *(long long *)dst = whole number in [lo, hi] */
    CK_REAL,   /* *(double *)dst = real number in [lo, hi] */
    CK_LIST,   /* appended to a ck_list (repeatable) */
} ck_type;

typedef struct ck_list {
    const char *v[64];
    int n;
} ck_list;

typedef struct ck_opt {
    const char *name;  /* "--cfg"; "-o|--out" gives a short alias */
    const char *arg;   /* "FILE", or NULL for a flag */
    ck_type type;
    void *dst;         /* filled by ck_parse() (may be NULL for doc-only rows) */
    double lo, hi;     /* bounds of CK_INT and CK_REAL */
    const char *doc;   /* one line (more lines after '\n', indented in the help) */
} ck_opt;

typedef struct ck_verb {
    const char *name;
    const char *summary;             /* one line, for the verb list and the manual */
    int (*run)(int argc, char **argv); /* argv[0] is the verb; returns the exit status */
    const char *synopsis;            /* with an option table: "[OPTIONS] FILE" */
    const char *about;               /* with an option table: text above the options */
    const ck_opt *opts;              /* option table, or NULL: the verb prints its help */
    const char *notes;               /* with an option table: text below the options, or NULL */
} ck_verb;

/* A verb that parses its own options and prints its own help. */
#define CK_VERB(name, summary, run) {(name), (summary), (run), NULL, NULL, NULL, NULL}

typedef struct ck_prog {
    const char *name;
    const char *version;
    const char *summary;             /* one line: the NAME line of the manual */
    void (*usage)(FILE *out);        /* the program's usage text (PROG --help) */
    const ck_verb *verbs;
    int nverbs;
    void (*version_extra)(FILE *out); /* printed after "PROG VERSION", or NULL */
    const char *globals;              /* global options text for the manual, or NULL */
    const char *verb_word;            /* what the program calls a verb ("command"), NULL: "verb" */
    const char *const *man_more;      /* NULL-terminated "VERB ARG... --help" lines: the help of a
                                         verb in another mode (its own options), printed in VERB's
                                         section of the manual after its help; NULL: none */
    const char *examples;             /* the manual's EXAMPLES section (preformatted), or NULL */
} ck_prog;

/* Runs the program: see the top of this file. Returns the exit status. */
int ck_main(const ck_prog *p, int argc, char **argv);

/* ck_main() without the final stdout check, for programs that parse global
 * options first (argv[0] is then the verb or a help/version word). */
int ck_dispatch(const ck_prog *p, int argc, char **argv);

/* Flushes and closes standard output; on a write error prints
 * "PROG: error: cannot write the output: REASON" and returns 1 (or rc when
 * rc is already non-zero). Returns rc otherwise. */
int ck_finish(const char *prog, int rc);

/* A usage error: "PROG VERB: REASON" then the hint to run --help, on stderr.
 * Returns CK_USAGE. verb may be NULL. */
int ck_usage(const char *prog, const char *verb, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A usage error of verb v: "PROG VERB: REASON", its usage line and the hint
 * to run --help, on stderr. Returns CK_USAGE. */
int ck_usage_of(const char *prog, const ck_verb *v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* getopt_long's abbreviations for a verb that took them before the kit:
 * copies argv[0..argc) into av (room for 2 * argc words) with each "--pre"
 * or "--pre=V" that is the unique prefix of one of v's long option names
 * written as that name (and V as the next word); exact names, ambiguous
 * prefixes, words after "--" and options' values stay as they are, for
 * ck_parse to judge. Returns the words in av. */
int ck_abbrev(const ck_verb *v, int argc, char **argv, char **av);
/* Parses argv[1..argc-1] of a verb against its table. Operands (words not
 * starting with '-', or every word after "--") are stored in order into
 * operands (at most max_operands; more is a usage error). "--name=value"
 * and "--name value" both work. --help/-h prints ck_help() and returns -1
 * with *rc = 0. A usage error prints its reason and returns -1 with
 * *rc = 2. Returns the number of operands otherwise. */
int ck_parse(const char *prog, const ck_verb *v, int argc, char **argv, const char **operands,
             int max_operands, int *rc);
/* ck_parse for a verb of exactly one operand, named `what` in the usage
 * error "WHAT is missing" (ck_usage) when it is not given: 0 with *operand
 * set, or 1 when the verb must return *rc at once (0 after --help, 2 after
 * a usage error). */
int ck_parse_one(const char *prog, const ck_verb *v, int argc, char **argv, const char **operand,
                 const char *what, int *rc);

/* Prints s to f as a JSON string: quoted, '"' and '\\' escaped, control
 * characters as \\u00XX, other bytes as they are (UTF-8 passes through). */
void ck_json_str(FILE *f, const char *s);

/* Prints the help of a verb with an option table. */
void ck_help(const char *prog, const ck_verb *v, FILE *out);

/* Prints the manual page (man(7) roff) of the program. */
int ck_man(const ck_prog *p, FILE *out);

#endif
