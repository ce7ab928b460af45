/*
 * prune_cli.h: what the `prune` verbs share (private to prune/cli/).
 */
#ifndef PRUNE_CLI_H
#define PRUNE_CLI_H

#include "prn.h"

#define PRN_CLI_MAX_SET 32

typedef struct prn_cli_opts {
    const char *cfg, *weights, *spec, *out, *data, *from, *to, *with;
    const char *set[PRN_CLI_MAX_SET];
    int nset;
    uint64_t seed;
    int have_seed;
    int threads; /* 1 unless --threads */
    int help;
} prn_cli_opts;

/* Parses "--name value" / "--name=value" options among `known` (NULL-
 * terminated names without dashes); --help sets o->help and stops. -1 on
 * an unknown option, a missing value, a bad number or a repeated option. */
int prn_cli_parse(int argc, char **argv, const char *const *known, prn_cli_opts *o, trn_err *err);
/* -1 naming the first option of `names` that was not given. */
int prn_cli_require(const prn_cli_opts *o, const char *verb, const char *const *names, trn_err *err);
/* The base network of cfg (inference only, `batch` images per forward)
 * with its weights loaded. NULL on error. */
trn_net *prn_cli_load_base(const trn_cfg *cfg, const char *weights, int batch, trn_err *err);
/* Writes the variant folder and prints one line about it. */
int prn_cli_finish(prn_variant *v, const char *out, trn_err *err);
const char *prn_cli_usage_mimic(void);

/* The mimic verb (mimic_cli.c). */
int prn_cli_mimic(int argc, char **argv, trn_err *err);

#endif /* PRUNE_CLI_H */
