/*
 * catalog_testtool.c: helpers for the catalog and runtime-lite tests (never
 * installed):
 *   bytes SEED N            N pseudo-random bytes (xorshift64*) on stdout, the
 *                           same for the same SEED: fixture weight files
 *   tar OUT ENTRY...        a tar.zst (pax) with exactly these entries, in
 *                           this order, so tests can craft hostile archives:
 *     f:NAME=FILE           regular file with FILE's content
 *     d:NAME                folder
 *     l:NAME=TARGET         symbolic link
 *     h:NAME=TARGET         hard link
 *     c:NAME  b:NAME        character / block device
 *     p:NAME                fifo
 *   tar-raw OUT ENTRY...    the same without compression
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bytes(uint64_t seed, long long n)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    unsigned char buf[4096];
    while (n > 0) {
        size_t k = n < (long long)sizeof buf ? (size_t)n : sizeof buf;
        for (size_t i = 0; i < k; i++) {
            x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
            buf[i] = (unsigned char)((x * 0x2545F4914F6CDD1Dull) >> 56);
        }
        if (fwrite(buf, 1, k, stdout) != k) return 1;
        n -= (long long)k;
    }
    return 0;
}

static int add(struct archive *a, const char *spec)
{
    char kind = spec[0];
    if (!kind || spec[1] != ':') {
        fprintf(stderr, "bad entry '%s'\n", spec);
        return -1;
    }
    char name[4096];
    snprintf(name, sizeof name, "%s", spec + 2);
    char *eq = strchr(name, '=');
    const char *arg = NULL;
    if (eq) *eq = '\0', arg = eq + 1;
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_mtime(e, 0, 0);
    archive_entry_set_perm(e, 0644);
    char *data = NULL;
    long size = 0;
    switch (kind) {
    case 'f': {
        FILE *f = arg ? fopen(arg, "rb") : NULL;
        if (!f) {
            fprintf(stderr, "cannot read %s\n", arg ? arg : "(none)");
            archive_entry_free(e);
            return -1;
        }
        fseek(f, 0, SEEK_END);
        size = ftell(f);
        rewind(f);
        data = malloc((size_t)size + 1);
        if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) size = -1;
        fclose(f);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, size);
        break;
    }
    case 'd': archive_entry_set_filetype(e, AE_IFDIR); archive_entry_set_perm(e, 0755); break;
    case 'l': archive_entry_set_filetype(e, AE_IFLNK); archive_entry_set_symlink(e, arg ? arg : ""); break;
    case 'h': archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_hardlink(e, arg ? arg : ""); break;
    case 'c': archive_entry_set_filetype(e, AE_IFCHR); archive_entry_set_rdev(e, 0x0103); break;
    case 'b': archive_entry_set_filetype(e, AE_IFBLK); archive_entry_set_rdev(e, 0x0800); break;
    case 'p': archive_entry_set_filetype(e, AE_IFIFO); break;
    default:
        fprintf(stderr, "unknown entry kind '%c'\n", kind);
        archive_entry_free(e);
        return -1;
    }
    int rc = size < 0 || archive_write_header(a, e) != ARCHIVE_OK ||
             (size > 0 && archive_write_data(a, data, (size_t)size) != size) ? -1 : 0;
    if (rc) fprintf(stderr, "cannot add %s: %s\n", name, archive_error_string(a));
    free(data);
    archive_entry_free(e);
    return rc;
}

static int tar(const char *out, int zstd, int n, char **specs)
{
    struct archive *a = archive_write_new();
    if ((zstd && archive_write_add_filter_zstd(a) != ARCHIVE_OK) || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_open_filename(a, out) != ARCHIVE_OK) {
        fprintf(stderr, "cannot write %s: %s\n", out, archive_error_string(a));
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (add(a, specs[i]) != 0) return 1;
    if (archive_write_close(a) != ARCHIVE_OK) return 1;
    archive_write_free(a);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "bytes")) return bytes(strtoull(argv[2], NULL, 10), strtoll(argv[3], NULL, 10));
    if (argc >= 3 && !strcmp(argv[1], "tar")) return tar(argv[2], 1, argc - 3, argv + 3);
    if (argc >= 3 && !strcmp(argv[1], "tar-raw")) return tar(argv[2], 0, argc - 3, argv + 3);
    fprintf(stderr, "usage: catalog_testtool bytes SEED N | tar OUT ENTRY... | tar-raw OUT ENTRY...\n");
    return 2;
}
