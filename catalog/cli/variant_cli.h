/* variant_cli.h: the variant-stage commands of `catalog` (variant_cli.c),
 * dispatched by catalog_cli.c. Each takes the arguments after the command
 * name (argv[0] is the command) and returns the exit status: 0 on success,
 * 1 on failure, 2 on bad usage. */
#ifndef VARIANT_CLI_H
#define VARIANT_CLI_H

#include "cat.h"

int cat_cli_cost(int argc, char **argv);
int cat_cli_profile(int argc, char **argv);
int cat_cli_describe(int argc, char **argv);
int cat_cli_variants(int argc, char **argv);

/* Usage errors of command argv[0] (catalog_cli.c): "catalog CMD: REASON",
 * then the command's help, on stderr; each returns 2. cat_usage_opt takes
 * getopt's ':' (missing value) or '?' (unknown option); cat_usage_args says
 * that the operands are not `what`. */
int cat_usage(char **argv, const char *help, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int cat_usage_opt(char **argv, const char *help, int c);
int cat_usage_args(int argc, char **argv, const char *help, const char *what);

#endif /* VARIANT_CLI_H */
