/* fsdir.h: folder helpers of datasets/ (fsdir.c): building a folder under a
 * temporary name and putting it in place atomically. */
#ifndef DS_FSDIR_H
#define DS_FSDIR_H

#include "ds.h"

/* Removes path and everything under it (symbolic links are removed, never
 * followed). A missing path is fine. */
int ds_fs_rm_rf(const char *path, trn_err *err);

/* Compares two trees: 1 when they hold the same names, types, file bytes
 * and link targets; 0 when they differ; -1 on a read error. */
int ds_fs_same_tree(const char *a, const char *b, trn_err *err);

/* Puts the complete folder tmp in place of dst (same file system):
 * - dst absent: tmp is renamed to dst;
 * - dst the same tree as tmp: tmp is removed, dst is untouched and
 *   *unchanged is set to 1;
 * - otherwise tmp and dst are exchanged atomically (renameat2
 *   RENAME_EXCHANGE; where the file system lacks it, dst is first renamed
 *   aside) and the old tree is removed.
 * Data is flushed (syncfs) and the parent folder fsynced before return. */
int ds_fs_publish(const char *tmp, const char *dst, int *unchanged, trn_err *err);

/* Creates a fresh temporary folder "<parent>/.<base>.tmp.<pid>" for
 * building `dst`, after removing those that dead processes left behind
 * (never trusted, since only complete folders are renamed into place). */
int ds_fs_make_tmp(const char *dst, char tmp[DS_PATH_MAX], trn_err *err);

/* The entry names of a folder (without . and ..), sorted by strcmp; *n gets
 * the count. Free with ds_fs_free_list. NULL on error. */
char **ds_fs_list(const char *path, size_t *n, trn_err *err);
void ds_fs_free_list(char **v, size_t n);

/* Writes a buffer to a new file (the folder it is in is published later). */
int ds_fs_write(const char *path, const void *buf, size_t len, trn_err *err);

/* path = a "/" b, checked for length. */
int ds_fs_join(char out[DS_PATH_MAX], const char *a, const char *b, trn_err *err);

/* A growing buffer of text or bytes. An allocation failure is remembered
 * and reported by ds_buf_write (or seen in oom). */
typedef struct ds_buf {
    char *p;
    size_t n, cap;
    int oom;
} ds_buf;

void ds_buf_printf(ds_buf *b, const char *fmt, ...) TRN_PRINTF(2, 3);
/* Appends n bytes. */
void ds_buf_put(ds_buf *b, const void *data, size_t n);
/* Writes the buffer to path (ds_fs_write); -1 also when an append failed. */
int ds_buf_write(const ds_buf *b, const char *path, trn_err *err);
void ds_buf_free(ds_buf *b);

#endif
