/* tarzst.h: reading catalog archives through libarchive (private). */
#ifndef RTL_TARZST_H
#define RTL_TARZST_H

#include "internal.h"

#include <archive.h>
#include <archive_entry.h>

/* The source of an archive reader: a file descriptor read from its current
 * offset. */
struct rtl_ar_src {
    int fd;
    uint64_t offset;      /* bytes read so far */
    int read_errno;       /* errno of a failed read(), or 0 */
    unsigned char buf[1 << 16];
};

/* Opens a reader for tar archives compressed with zstd over src (src->fd
 * set by the caller; the rest is initialised here).
 * Returns NULL and fills err on failure. */
struct archive *rtl_ar_open(struct rtl_ar_src *src, rtl_err *err);

/* Next header. Returns 1 with *entry set, 0 at the end of the archive, or -1
 * with err naming the byte offset reached and libarchive's reason. The first
 * call also checks that the archive is a tar compressed with zstd. */
int rtl_ar_next(struct archive *a, struct rtl_ar_src *src, struct archive_entry **entry, rtl_err *err);

/* The kind of a non-regular entry in words ("a symbolic link", ...), or NULL
 * for a regular file. */
const char *rtl_ar_entry_kind(struct archive_entry *e);

#endif
