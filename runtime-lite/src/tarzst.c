/*
 * tarzst.c: catalog archives as the runtime reads them.
 *
 * Format (written by `catalog pack`, catalog/src/pack.c): a POSIX pax tar
 * compressed with zstd. The first entry is manifest.json; then one regular
 * file per file of the manifest, at its manifest path, sorted. Nothing else:
 * no folders, links, devices or fifos. Only the tar formats and the zstd
 * filter are enabled in the reader, so no other decoder ever sees the bytes.
 */
#include "tarzst.h"
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static la_ssize_t src_read(struct archive *a, void *user, const void **buf)
{
    struct rtl_ar_src *src = user;
    for (;;) {
        ssize_t r = read(src->fd, src->buf, sizeof src->buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            src->read_errno = errno;
            archive_set_error(a, errno, "read failed at byte offset %" PRIu64, src->offset);
            return -1;
        }
        src->offset += (uint64_t)r;
        *buf = src->buf;
        return r;
    }
}

struct archive *rtl_ar_open(struct rtl_ar_src *src, rtl_err *err)
{
    src->offset = 0;
    src->read_errno = 0;
    struct archive *a = archive_read_new();
    if (!a) {
        rtl_errf(err, "out of memory for an archive reader");
        return NULL;
    }
    if (archive_read_support_filter_zstd(a) != ARCHIVE_OK || archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_open(a, src, NULL, src_read, NULL) != ARCHIVE_OK) {
        rtl_errf(err, "cannot read the archive: %s", archive_error_string(a) ? archive_error_string(a)
                                                                              : "unknown libarchive error");
        archive_read_free(a);
        return NULL;
    }
    return a;
}

int rtl_ar_next(struct archive *a, struct rtl_ar_src *src, struct archive_entry **entry, rtl_err *err)
{
    int first = archive_file_count(a) == 0;
    int r = archive_read_next_header(a, entry);
    if (r == ARCHIVE_EOF) return 0;
    if (r != ARCHIVE_OK) {
        const char *why = archive_error_string(a);
        return rtl_errf(err, "damaged archive near compressed byte offset %" PRIu64 ": %s", src->offset,
                        why ? why : "unreadable header");
    }
    if (first) {
        if (archive_filter_count(a) < 2 || archive_filter_code(a, 0) != ARCHIVE_FILTER_ZSTD)
            return rtl_errf(err, "the archive is not compressed with zstd (catalog archives are .tar.zst)");
        if ((archive_format(a) & ARCHIVE_FORMAT_BASE_MASK) != ARCHIVE_FORMAT_TAR)
            return rtl_errf(err, "the archive is not a tar archive");
    }
    return 1;
}

const char *rtl_ar_entry_kind(struct archive_entry *e)
{
    if (archive_entry_hardlink(e)) return "a hard link";
    switch (archive_entry_filetype(e)) {
    case AE_IFREG: return archive_entry_symlink(e) ? "a symbolic link" : NULL;
    case AE_IFLNK: return "a symbolic link";
    case AE_IFDIR: return "a folder";
    case AE_IFCHR: return "a character device";
    case AE_IFBLK: return "a block device";
    case AE_IFIFO: return "a fifo";
    case AE_IFSOCK: return "a socket";
    default: return "an entry of unknown type";
    }
}

int rtl_archive_manifest(const char *path, char **json, size_t *len, rtl_err *err)
{
    *json = NULL;
    *len = 0;
    struct rtl_ar_src *src = calloc(1, sizeof *src);
    if (!src) return rtl_errf(err, "out of memory");
    trn_err te;
    src->fd = trn_open_input(path, &te);
    if (src->fd < 0) {
        free(src);
        return rtl_err_from_trn(err, &te);
    }
    int rc = -1, next = -1;
    struct archive *a = rtl_ar_open(src, err);
    struct archive_entry *e = NULL;
    char *buf = NULL;
    if (!a) {
        /* err is filled */
    } else if ((next = rtl_ar_next(a, src, &e, err)) <= 0) {
        if (next == 0) rtl_errf(err, "the archive is empty");
    } else if (strcmp(archive_entry_pathname(e) ? archive_entry_pathname(e) : "", "manifest.json") != 0) {
        rtl_errf(err, "the first entry is '%s', not manifest.json", archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    } else if (rtl_ar_entry_kind(e) || archive_entry_size(e) < 0 || archive_entry_size(e) > RTL_MANIFEST_MAX) {
        rtl_errf(err, "manifest.json is not a regular file of at most %u bytes", RTL_MANIFEST_MAX);
    } else if (!(buf = malloc((size_t)archive_entry_size(e) + 1))) {
        rtl_errf(err, "out of memory for manifest.json");
    } else {
        size_t want = (size_t)archive_entry_size(e), got = 0;
        while (got < want) {
            la_ssize_t r = archive_read_data(a, buf + got, want - got);
            if (r <= 0) break;
            got += (size_t)r;
        }
        if (got != want) {
            rtl_errf(err, "manifest.json ends after %zu of its %zu bytes: %s", got, want,
                     archive_error_string(a) ? archive_error_string(a) : "truncated archive");
        } else {
            buf[want] = '\0';
            *json = buf;
            *len = want;
            buf = NULL;
            rc = 0;
        }
    }
    free(buf);
    if (a) archive_read_free(a);
    close(src->fd);
    free(src);
    if (rc != 0) return rtl_err_prefix(err, "%s", path);
    return 0;
}
