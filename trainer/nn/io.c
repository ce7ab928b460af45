/* io.c: checked reads and atomic writes (temporary file, fsync, rename). */
#include "nn.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *trn_file_kind(unsigned mode)
{
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a folder";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

int trn_open_input(const char *path, trn_err *err)
{
    /* O_NONBLOCK: opening a FIFO without a writer returns at once */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return trn_errf(err, "cannot open %s for reading: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return trn_errf(err, "cannot open %s for reading: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return trn_errf(err, "%s is %s, not a regular file: give the file itself", path,
                        trn_file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

FILE *trn_fopen(const char *path, const char *mode, trn_err *err)
{
    if (mode[0] == 'r' && !strchr(mode, '+')) {
        int fd = trn_open_input(path, err);
        if (fd < 0) return NULL;
        FILE *f = fdopen(fd, mode);
        if (!f) {
            trn_errf(err, "cannot open %s for reading: %s", path, strerror(errno));
            close(fd);
        }
        return f;
    }
    FILE *f = fopen(path, mode);
    if (!f)
        trn_errf(err, "cannot open %s for %s: %s", path,
                 mode[0] == 'r' ? "reading" : "writing", strerror(errno));
    return f;
}

int trn_fread_exact(FILE *f, void *buf, size_t n, const char *name, trn_err *err)
{
    long off = ftell(f);
    size_t got = fread(buf, 1, n, f);
    if (got == n) return 0;
    if (ferror(f))
        return trn_errf(err, "%s: read error at byte offset %ld: %s", name,
                        off < 0 ? -1L : off + (long)got, strerror(errno));
    return trn_errf(err, "%s: file ends at byte offset %ld, %zu more bytes were expected",
                    name, off < 0 ? -1L : off + (long)got, n - got);
}

FILE *trn_fopen_sized(const char *path, size_t *size, trn_err *err)
{
    FILE *f = trn_fopen(path, "rb", err);
    if (!f) return NULL;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        trn_errf(err, "%s: not a regular file", path);
        return NULL;
    }
    *size = (size_t)st.st_size;
    return f;
}

int trn_read_file(const char *path, size_t max_len, char **buf, size_t *len, trn_err *err)
{
    *buf = NULL;
    *len = 0;
    size_t n;
    FILE *f = trn_fopen_sized(path, &n, err);
    if (!f) return -1;
    if (max_len && n > max_len) {
        fclose(f);
        return trn_errf(err, "%s: %zu bytes is larger than the limit of %zu bytes", path, n, max_len);
    }
    char *b = malloc(n + 1);
    if (!b) {
        fclose(f);
        return trn_errf(err, "%s: out of memory for %zu bytes", path, n);
    }
    if (trn_fread_exact(f, b, n, path, err) != 0) {
        free(b);
        fclose(f);
        return -1;
    }
    fclose(f);
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

int trn_mkdir_p(const char *path, trn_err *err)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return trn_errf(err, "cannot create directory '%s': bad path", path);
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return trn_errf(err, "cannot create directory %s: %s", tmp, strerror(errno));
            *p = c;
            if (c == '\0') break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return trn_errf(err, "cannot create directory %s: a file of that name is in the way", path);
    return 0;
}

int trn_fsync_dir(const char *dir, trn_err *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return trn_errf(err, "cannot open directory %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL)
        return trn_errf(err, "cannot fsync directory %s: %s", dir, strerror(e));
    return 0;
}

/* The file a write to path lands in: path itself, or the file its chain of
 * symbolic links names (which need not exist yet), into out. */
static int write_target(const char *path, char *out, size_t n, trn_err *err)
{
    if (strlen(path) >= n) return trn_errf(err, "path too long: %.100s...", path);
    strcpy(out, path);
    for (int hops = 0; hops < 40; hops++) {
        struct stat st;
        if (lstat(out, &st) != 0) {
            if (errno == ENOENT) return 0;
            return trn_errf(err, "cannot write %s: %s", path, strerror(errno));
        }
        if (!S_ISLNK(st.st_mode)) return 0;
        char link[4096];
        ssize_t k = readlink(out, link, sizeof link - 1);
        if (k < 0) return trn_errf(err, "cannot read the link %s: %s", out, strerror(errno));
        link[k] = '\0';
        char *slash = strrchr(out, '/');
        size_t keep = link[0] == '/' || !slash ? 0 : (size_t)(slash - out) + 1;
        if (keep + (size_t)k >= n) return trn_errf(err, "path too long: %.100s...", path);
        memmove(out + keep, link, (size_t)k + 1);
    }
    return trn_errf(err, "cannot write %s: %s", path, strerror(ELOOP));
}

/* A FIFO, device or socket: written in place (nothing to rename over it). */
static int open_direct(trn_atomic *a, trn_err *err)
{
    int fd = open(a->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return trn_errf(err, "cannot open %s for writing: %s", a->path, strerror(errno));
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        close(fd);
        return trn_errf(err, "cannot open %s: %s", a->path, strerror(errno));
    }
    return 0;
}

/* Where trn_atomic_open writes: a FIFO, device or socket in place (opened
 * through path, so /dev/stdout works); a folder is refused; otherwise the
 * regular file that path or its symbolic links name, which need not exist. */
static int choose_target(trn_atomic *a, const char *path, trn_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) return trn_errf(err, "cannot write %s: %s", path, strerror(errno));
        return write_target(path, a->path, sizeof a->path, err);
    }
    if (S_ISDIR(st.st_mode)) return trn_errf(err, "cannot write %s: it is a folder; give a file name", path);
    if (!S_ISREG(st.st_mode)) {
        if (strlen(path) >= sizeof a->path) return trn_errf(err, "path too long: %.100s...", path);
        strcpy(a->path, path);
        return open_direct(a, err);
    }
    return write_target(path, a->path, sizeof a->path, err);
}

int trn_atomic_open(trn_atomic *a, const char *path, trn_err *err)
{
    memset(a, 0, sizeof *a);
    if (choose_target(a, path, err) != 0) return -1;
    if (a->f) return 0;
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp.%ld", a->path, (long)getpid());
    int fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return trn_errf(err, "cannot create %s: %s", a->tmp, strerror(errno));
    a->f = fdopen(fd, "wb");
    if (!a->f) {
        close(fd);
        unlink(a->tmp);
        return trn_errf(err, "cannot open %s: %s", a->tmp, strerror(errno));
    }
    return 0;
}

void trn_atomic_abort(trn_atomic *a)
{
    if (a->f) fclose(a->f);
    a->f = NULL;
    if (a->tmp[0]) unlink(a->tmp);
    a->tmp[0] = '\0';
}

/* Commit of a FIFO, device or socket: flush and close, errors reported. */
static int commit_direct(trn_atomic *a, trn_err *err)
{
    int bad = fflush(a->f) != 0 || ferror(a->f);
    int e = errno;
    if (fclose(a->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    a->f = NULL;
    return bad ? trn_errf(err, "cannot write %s: %s", a->path, strerror(e)) : 0;
}

int trn_atomic_commit(trn_atomic *a, trn_err *err)
{
    if (!a->f) return trn_errf(err, "%s: internal error: commit without open", a->path);
    if (!a->tmp[0]) return commit_direct(a, err);
    if (fflush(a->f) != 0 || ferror(a->f) || fsync(fileno(a->f)) != 0) {
        trn_errf(err, "cannot write %s: %s", a->tmp, strerror(errno));
        trn_atomic_abort(a);
        return -1;
    }
    if (fclose(a->f) != 0) {
        a->f = NULL;
        trn_errf(err, "cannot write %s: %s", a->tmp, strerror(errno));
        trn_atomic_abort(a);
        return -1;
    }
    a->f = NULL;
    if (rename(a->tmp, a->path) != 0) {
        trn_errf(err, "cannot rename %s to %s: %s", a->tmp, a->path, strerror(errno));
        trn_atomic_abort(a);
        return -1;
    }
    a->tmp[0] = '\0';
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", a->path);
    return trn_fsync_dir(dirname(dir), err);
}

int trn_write_file_atomic(const char *path, const void *buf, size_t len, trn_err *err)
{
    trn_atomic a;
    if (trn_atomic_open(&a, path, err) != 0) return -1;
    if (len && fwrite(buf, 1, len, a.f) != len) {
        trn_errf(err, "cannot write %s: %s", trn_atomic_name(&a), strerror(errno));
        trn_atomic_abort(&a);
        return -1;
    }
    return trn_atomic_commit(&a, err);
}
