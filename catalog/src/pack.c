/*
 * pack.c: the catalog archive, written deterministically through libarchive.
 *
 * Format (read by runtime-lite/src/tarzst.c and install.c): a POSIX pax tar
 * (libarchive's "pax restricted" writer: ustar headers, with pax extended
 * headers only for what ustar cannot hold, e.g. long names), compressed
 * with zstd into one frame that carries its content checksum (XXH64, so
 * `zstd -t`, tar and any zstd reader reject a flipped byte even without
 * the signature), single-threaded so the bytes never depend on the
 * machine. Entries: manifest.json first, then the files in the order given
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
#include <zstd.h>

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

/* Hashes and writes the n bytes b read at source offset *at, less those
 * in f's skipped range; *total counts the bytes kept. */
static int put_kept(struct archive *a, crypto_hash_sha256_state *st, const struct cat_pack_file *f,
                    const unsigned char *b, size_t n, uint64_t *at, uint64_t *total)
{
    uint64_t s = f->skip_off, e = f->skip_off + f->skip_len, pos = *at;
    *at += n;
    for (size_t i = 0; i < n;) {
        size_t len = n - i;
        if (pos + i < s && pos + i + len > s) len = (size_t)(s - pos - i);
        if (pos + i >= s && pos + i < e) { /* inside the skipped range */
            i += (size_t)(e - pos - i) < len ? (size_t)(e - pos - i) : len;
            continue;
        }
        if (*total + len > f->size) { /* grew since it was hashed: add_file says so */
            *total += len;
            return 0;
        }
        crypto_hash_sha256_update(st, b + i, len);
        if (archive_write_data(a, b + i, len) != (la_ssize_t)len) return -1;
        *total += len;
        i += len;
    }
    return 0;
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
    uint64_t total = 0, at = 0;
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
        if (put_kept(a, &st, f, buf, (size_t)r, &at, &total) != 0) {
            rc = trn_errf(err, "%s: cannot write it into the archive: %s", f->archive_path, archive_error_string(a));
            break;
        }
        if (total > f->size) break;
    }
    close(fd);
    uint8_t sha[32];
    crypto_hash_sha256_final(&st, sha);
    if (rc == 0 && (total != f->size || memcmp(sha, f->sha256, sizeof sha) != 0))
        rc = trn_errf(err, "%s changed after the manifest was made (size or SHA-256 differs); build again", f->source);
    return rc;
}

/* The zstd stream: libarchive hands it the tar bytes (its own zstd filter
 * cannot set the checksum flag), it compresses them into the archive file. */
struct zsink {
    ZSTD_CCtx *cctx;
    FILE *f;
    unsigned char *out;
    size_t out_size;
    const char *error; /* first failure, for the message */
};

/* Compresses in (all of it with ZSTD_e_continue, or to the frame's end with
 * ZSTD_e_end) and writes what comes out. 0 or -1 (z->error set). */
static int zsink_push(struct zsink *z, const void *data, size_t len, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer in = {data, len, 0};
    for (;;) {
        ZSTD_outBuffer out = {z->out, z->out_size, 0};
        size_t left = ZSTD_compressStream2(z->cctx, &out, &in, mode);
        if (ZSTD_isError(left)) {
            z->error = ZSTD_getErrorName(left);
            return -1;
        }
        if (out.pos && fwrite(z->out, 1, out.pos, z->f) != out.pos) {
            z->error = strerror(errno);
            return -1;
        }
        if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) return 0;
    }
}

static la_ssize_t zsink_write(struct archive *a, void *user, const void *buf, size_t len)
{
    struct zsink *z = user;
    if (zsink_push(z, buf, len, ZSTD_e_continue) != 0) {
        archive_set_error(a, EIO, "zstd: %s", z->error);
        return -1;
    }
    return (la_ssize_t)len;
}

int cat_pack(const char *archive, const char *manifest_text, const struct cat_pack_file *files, size_t n,
             int64_t mtime, int level, trn_err *err)
{
    if (level < 1 || level > 19) return trn_errf(err, "zstd level %d is outside 1..19", level);
    trn_atomic at;
    if (trn_atomic_open(&at, archive, err) != 0) return -1;
    struct archive *a = archive_write_new();
    unsigned char *buf = malloc(1 << 16);
    struct zsink z = {ZSTD_createCCtx(), at.f, NULL, ZSTD_CStreamOutSize(), NULL};
    z.out = malloc(z.out_size);
    int rc = 0;
    if (!a || !buf || !z.cctx || !z.out) {
        rc = trn_errf(err, "out of memory");
    } else if (ZSTD_isError(ZSTD_CCtx_setParameter(z.cctx, ZSTD_c_compressionLevel, level)) ||
               ZSTD_isError(ZSTD_CCtx_setParameter(z.cctx, ZSTD_c_checksumFlag, 1)) ||
               ZSTD_isError(ZSTD_CCtx_setParameter(z.cctx, ZSTD_c_nbWorkers, 0))) {
        rc = trn_errf(err, "cannot set up the zstd compressor (level %d)", level);
    } else if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
               /* no zero padding after the tar: plain zstd -d gives the tar */
               archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
               archive_write_open(a, &z, NULL, zsink_write, NULL) != ARCHIVE_OK) {
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
        if (rc == 0 && zsink_push(&z, NULL, 0, ZSTD_e_end) != 0)
            rc = trn_errf(err, "cannot finish the zstd frame: %s", z.error);
    }
    if (a) archive_write_free(a);
    ZSTD_freeCCtx(z.cctx);
    free(z.out);
    free(buf);
    if (rc != 0) {
        trn_atomic_abort(&at);
        return trn_err_prefix(err, "%s", archive);
    }
    return trn_atomic_commit(&at, err);
}
