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
 *   flip FILE OFFSET [MASK] XORs the byte at OFFSET with MASK (default 1), in
 *                           place; running it twice restores the file
 *   flip-each FILE MASK OFFSETS -- CMD...
 *                           for each offset of the comma list OFFSETS (or
 *                           "all"): flip it, run CMD (output discarded),
 *                           flip it back; prints "survived OFFSET" for each
 *                           change CMD still accepted (exit 0), then a count
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>
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

static int flip(const char *path, long off, int mask)
{
    FILE *f = fopen(path, "r+b");
    int c = f && fseek(f, off, SEEK_SET) == 0 ? fgetc(f) : EOF;
    if (c == EOF || fseek(f, off, SEEK_SET) != 0 || fputc(c ^ mask, f) == EOF || fclose(f) != 0) {
        fprintf(stderr, "cannot flip byte %ld of %s\n", off, path);
        return 1;
    }
    return 0;
}

static int run_quiet(char **cmd)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        dup2(null, 2);
        execvp(cmd[0], cmd);
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int flip_each(const char *path, int mask, const char *offsets, char **cmd)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    long tried = 0, survived = 0, crashed = 0;
    const char *p = offsets;
    for (long i = 0;; i++) {
        long off;
        if (!strcmp(offsets, "all")) {
            if (i >= size) break;
            off = i;
        } else {
            if (!*p) break;
            off = strtol(p, (char **)&p, 10);
            if (*p == ',') p++;
        }
        if (flip(path, off, mask)) return 1;
        int rc = run_quiet(cmd);
        if (flip(path, off, mask)) return 1;
        tried++;
        if (rc == 0) printf("survived %ld\n", off), survived++;
        if (rc >= 128) printf("crashed %ld (status %d)\n", off, rc), crashed++;
    }
    printf("tried %ld survived %ld crashed %ld\n", tried, survived, crashed);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 7 && !strcmp(argv[1], "flip-each") && !strcmp(argv[5], "--"))
        return flip_each(argv[2], (int)strtol(argv[3], NULL, 0), argv[4], argv + 6);
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "flip"))
        return flip(argv[2], strtol(argv[3], NULL, 10), argc == 5 ? (int)strtol(argv[4], NULL, 0) : 1);
    if (argc == 4 && !strcmp(argv[1], "bytes")) return bytes(strtoull(argv[2], NULL, 10), strtoll(argv[3], NULL, 10));
    if (argc >= 3 && !strcmp(argv[1], "tar")) return tar(argv[2], 1, argc - 3, argv + 3);
    if (argc >= 3 && !strcmp(argv[1], "tar-raw")) return tar(argv[2], 0, argc - 3, argv + 3);
    fprintf(stderr, "usage: catalog_testtool bytes SEED N | tar OUT ENTRY... | tar-raw OUT ENTRY... | flip FILE OFFSET [MASK]\n");
    return 2;
}
