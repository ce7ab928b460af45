/*
 * pack.c: the catalog archive, written deterministically through libarchive.
 *
 * Format (read by runtime-lite/src/tarzst.c and install.c): a POSIX pax tar
 * (libarchive's "pax restricted" writer: ustar headers, with pax extended
 * headers only for what ustar cannot hold, e.g. long names), compressed
 * with zstd. Entries: manifest.json first, then the files in the order given
 * (sorted by archive path by cat_build), each a regular file with mode 0644,
 * uid/gid 0, uname/gname "root", mtime = SOURCE_DATE_EPOCH and no other
 * time; no folder entries. Nothing depends on the machine, the clock, the
 * user or the process, so the same inputs give the same bytes.
 */
#include "cat.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct archive_entry *entry_for(const char *path, uint64_t size, int64_t mtime)
{
    struct archive_entry *e = archive_entry_new();
    if (!e) return NULL;
    archive_entry_set_pathname(e, path);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    archive_entry_set_uname(e, "root");
    archive_entry_set_gname(e, "root");
    archive_entry_set_mtime(e, (time_t)mtime, 0);
    return e;
}

static int add_file(struct archive *a, const struct cat_pack_file *f, int64_t mtime, unsigned char *buf,
                    size_t bufsize, trn_err *err)
{
    int fd = trn_open_input(f->source, err);
    if (fd < 0) return -1;
    struct archive_entry *e = entry_for(f->archive_path, f->size, mtime);
    if (!e || archive_write_header(a, e) != ARCHIVE_OK) {
        archive_entry_free(e);
        close(fd);
        return trn_errf(err, "%s: cannot write its header: %s", f->archive_path, archive_error_string(a));
    }
    archive_entry_free(e);
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    uint64_t total = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, buf, bufsize);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = trn_errf(err, "%s: read failed at byte offset %llu: %s", f->source, (unsigned long long)total,
                          strerror(errno));
            break;
        }
        if (r == 0) break;
        total += (uint64_t)r;
        if (total > f->size) break;
        crypto_hash_sha256_update(&st, buf, (size_t)r);
        if (archive_write_data(a, buf, (size_t)r) != r) {
            rc = trn_errf(err, "%s: cannot write it into the archive: %s", f->archive_path, archive_error_string(a));
            break;
        }
    }
    close(fd);
    uint8_t sha[32];
    crypto_hash_sha256_final(&st, sha);
    if (rc == 0 && (total != f->size || memcmp(sha, f->sha256, sizeof sha) != 0))
        rc = trn_errf(err, "%s changed after the manifest was made (size or SHA-256 differs); build again", f->source);
    return rc;
}

int cat_pack(const char *archive, const char *manifest_text, const struct cat_pack_file *files, size_t n,
             int64_t mtime, int level, trn_err *err)
{
    if (level < 1 || level > 19) return trn_errf(err, "zstd level %d is outside 1..19", level);
    trn_atomic at;
    if (trn_atomic_open(&at, archive, err) != 0) return -1;
    struct archive *a = archive_write_new();
    unsigned char *buf = malloc(1 << 16);
    char lv[8];
    snprintf(lv, sizeof lv, "%d", level);
    int rc = 0;
    if (!a || !buf) {
        rc = trn_errf(err, "out of memory");
    } else if (archive_write_add_filter_zstd(a) != ARCHIVE_OK ||
               archive_write_set_filter_option(a, "zstd", "compression-level", lv) != ARCHIVE_OK ||
               archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
               /* no zero padding after the zstd frame: plain zstd -d reads it */
               archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
               archive_write_open_FILE(a, at.f) != ARCHIVE_OK) {
        rc = trn_errf(err, "cannot start a tar.zst writer: %s", archive_error_string(a));
    } else {
        size_t mlen = strlen(manifest_text);
        struct archive_entry *e = entry_for("manifest.json", mlen, mtime);
        if (!e || archive_write_header(a, e) != ARCHIVE_OK ||
            archive_write_data(a, manifest_text, mlen) != (la_ssize_t)mlen)
            rc = trn_errf(err, "cannot write manifest.json into the archive: %s", archive_error_string(a));
        archive_entry_free(e);
        for (size_t i = 0; rc == 0 && i < n; i++) rc = add_file(a, &files[i], mtime, buf, 1 << 16, err);
        if (rc == 0 && archive_write_close(a) != ARCHIVE_OK)
            rc = trn_errf(err, "cannot finish the archive: %s", archive_error_string(a));
    }
    if (a) archive_write_free(a);
    free(buf);
    if (rc != 0) {
        trn_atomic_abort(&at);
        return trn_err_prefix(err, "%s", archive);
    }
    return trn_atomic_commit(&at, err);
}
