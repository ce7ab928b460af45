/* import.h: what the importers share (import.c) and their entry points
 * (cifar.c, mnist.c, folder.c). */
#ifndef DS_IMPORT_H
#define DS_IMPORT_H

#include "ds.h"

/* Moves round(frac * n) of the n images whose split is `from` to split
 * `to`, chosen by a seeded shuffle (generator stream `stream` of seed).
 * -1 only when out of memory. */
int ds_imp_carve(uint8_t *split, size_t count, int from, int to, double frac, uint64_t seed,
                 uint64_t stream, trn_err *err);

/* Reads a names file (one class name per line; blank lines and surrounding
 * spaces ignored) into task t of `classes` labels (made label-safe with
 * ds_label_from_name). Errors name the file and line. */
int ds_imp_read_names(const char *path, const char *task, int classes, ds_task *t, trn_err *err);

/* The set name: o->name, else `fallback` made label-safe. */
int ds_imp_name(const ds_import_opts *o, const char *fallback, char out[DS_LABEL_MAX + 1], trn_err *err);

int ds_imp_cifar(const char *src, int hundred, const ds_import_opts *o, ds_write_result *res, trn_err *err);
/* fashion_mnist 1: Fashion-MNIST's class names and attribute tasks. */
int ds_imp_mnist(const char *src, int fashion_mnist, const ds_import_opts *o, ds_write_result *res,
                 trn_err *err);
int ds_imp_folder(const char *src, const ds_import_opts *o, ds_write_result *res, trn_err *err);

#endif
