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
int cat_cli_export(int argc, char **argv);

#endif /* VARIANT_CLI_H */
