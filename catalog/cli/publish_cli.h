/* publish_cli.h: `catalog publish` (publish_cli.c), dispatched by
 * catalog_cli.c; returns the exit status (0, 1 failure, 2 bad usage). */
#ifndef PUBLISH_CLI_H
#define PUBLISH_CLI_H

int cat_cli_publish(int argc, char **argv);

#endif /* PUBLISH_CLI_H */
