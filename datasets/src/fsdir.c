/* fsdir.c: removing, comparing and atomically publishing folders. */
#include "fsdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ds_fs_join(char out[DS_PATH_MAX], const char *a, const char *b, trn_err *err)
{
    int n = snprintf(out, DS_PATH_MAX, "%s/%s", a, b);
    if (n < 0 || n >= DS_PATH_MAX) return trn_errf(err, "path too long: %.80s/%.80s", a, b);
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = flag == FTW_DP ? rmdir(path) : unlink(path);
    return rc != 0 && errno != ENOENT ? errno : 0;
}

int ds_fs_rm_rf(const char *path, trn_err *err)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        return trn_errf(err, "cannot remove %s: %s", path, strerror(errno));
    }
    int rc = nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
    if (rc != 0)
        return trn_errf(err, "cannot remove %s: %s", path, strerror(rc > 0 ? rc : errno));
    return 0;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **ds_fs_list(const char *path, size_t *n, trn_err *err)
{
    DIR *d = opendir(path);
    *n = 0;
    if (!d) {
        trn_errf(err, "cannot open folder %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 64;
    char **v = malloc(cap * sizeof *v);
    struct dirent *e;
    while (v && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (*n == cap) {
            char **nv = realloc(v, 2 * cap * sizeof *nv);
            if (!nv) {
                for (size_t i = 0; i < *n; i++) free(v[i]);
                free(v);
                v = NULL;
                break;
            }
            v = nv;
            cap *= 2;
        }
        if (!(v[*n] = strdup(e->d_name))) {
            for (size_t i = 0; i < *n; i++) free(v[i]);
            free(v);
            v = NULL;
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (!v) {
        trn_errf(err, "%s: out of memory listing the folder", path);
        return NULL;
    }
    qsort(v, *n, sizeof *v, cmp_name);
    return v;
}

void ds_fs_free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n && v; i++) free(v[i]);
    free(v);
}

static int same_file(const char *a, const char *b, off_t size, trn_err *err)
{
    int same = 1;
    FILE *fa = trn_fopen(a, "rb", err), *fb = fa ? trn_fopen(b, "rb", err) : NULL;
    if (!fa || !fb) {
        if (fa) fclose(fa);
        return -1;
    }
    char ba[65536], bb[65536];
    for (off_t left = size; left > 0 && same == 1;) {
        size_t k = left > (off_t)sizeof ba ? sizeof ba : (size_t)left;
        if (trn_fread_exact(fa, ba, k, a, err) != 0 || trn_fread_exact(fb, bb, k, b, err) != 0) {
            same = -1;
            break;
        }
        if (memcmp(ba, bb, k)) same = 0;
        left -= (off_t)k;
    }
    fclose(fa);
    fclose(fb);
    return same;
}

int ds_fs_same_tree(const char *a, const char *b, trn_err *err)
{
    struct stat sa, sb;
    if (lstat(a, &sa) != 0) return trn_errf(err, "cannot read %s: %s", a, strerror(errno));
    if (lstat(b, &sb) != 0) return errno == ENOENT ? 0 : trn_errf(err, "cannot read %s: %s", b, strerror(errno));
    if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT)) return 0;
    if (S_ISREG(sa.st_mode))
        return sa.st_size != sb.st_size ? 0 : same_file(a, b, sa.st_size, err);
    if (S_ISLNK(sa.st_mode)) {
        char la[DS_PATH_MAX], lb[DS_PATH_MAX];
        ssize_t na = readlink(a, la, sizeof la - 1), nb = readlink(b, lb, sizeof lb - 1);
        if (na < 0 || nb < 0) return trn_errf(err, "cannot read the link %s: %s", na < 0 ? a : b, strerror(errno));
        return na == nb && !memcmp(la, lb, (size_t)na);
    }
    if (!S_ISDIR(sa.st_mode)) return 0;
    size_t na, nb;
    char **va = ds_fs_list(a, &na, err);
    if (!va) return -1;
    char **vb = ds_fs_list(b, &nb, err);
    if (!vb) {
        ds_fs_free_list(va, na);
        return -1;
    }
    int same = na == nb;
    for (size_t i = 0; i < na && same == 1; i++) {
        char pa[DS_PATH_MAX], pb[DS_PATH_MAX];
        if (strcmp(va[i], vb[i])) {
            same = 0;
            break;
        }
        if (ds_fs_join(pa, a, va[i], err) != 0 || ds_fs_join(pb, b, vb[i], err) != 0) {
            same = -1;
            break;
        }
        same = ds_fs_same_tree(pa, pb, err);
    }
    ds_fs_free_list(va, na);
    ds_fs_free_list(vb, nb);
    return same;
}

static int parent_of(const char *path, char out[DS_PATH_MAX])
{
    snprintf(out, DS_PATH_MAX, "%s", path);
    char *s = strrchr(out, '/');
    if (!s) strcpy(out, ".");
    else if (s == out) out[1] = '\0';
    else *s = '\0';
    return 0;
}

static int sync_tree(const char *path, trn_err *err)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return trn_errf(err, "cannot open %s: %s", path, strerror(errno));
    int rc = syncfs(fd);
    int e = errno;
    close(fd);
    if (rc != 0) return trn_errf(err, "cannot flush %s to disk: %s", path, strerror(e));
    return 0;
}

int ds_fs_publish(const char *tmp, const char *dst, int *unchanged, trn_err *err)
{
    *unchanged = 0;
    char parent[DS_PATH_MAX];
    parent_of(dst, parent);
    if (sync_tree(tmp, err) != 0) return -1;
    struct stat st;
    if (lstat(dst, &st) != 0) {
        if (errno != ENOENT) return trn_errf(err, "cannot read %s: %s", dst, strerror(errno));
        if (rename(tmp, dst) != 0)
            return trn_errf(err, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
        return trn_fsync_dir(parent, err);
    }
    int same = ds_fs_same_tree(tmp, dst, err);
    if (same < 0) return -1;
    if (same) {
        *unchanged = 1;
        return ds_fs_rm_rf(tmp, err);
    }
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_EXCHANGE) == 0) {
        if (trn_fsync_dir(parent, err) != 0) return -1;
        return ds_fs_rm_rf(tmp, err); /* tmp now holds the old tree */
    }
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return trn_errf(err, "cannot exchange %s and %s: %s", tmp, dst, strerror(errno));
    /* No atomic exchange here: move the old tree aside first. A kill in
     * between leaves no tree at dst (so it is built again), never a part. */
    char old[DS_PATH_MAX];
    if (snprintf(old, sizeof old, "%s.old.%ld", tmp, (long)getpid()) >= (int)sizeof old)
        return trn_errf(err, "path too long: %s", tmp);
    if (rename(dst, old) != 0) return trn_errf(err, "cannot rename %s to %s: %s", dst, old, strerror(errno));
    if (rename(tmp, dst) != 0) {
        int e = errno;
        (void)rename(old, dst); /* best effort: put the old tree back */
        return trn_errf(err, "cannot rename %s to %s: %s", tmp, dst, strerror(e));
    }
    if (trn_fsync_dir(parent, err) != 0) return -1;
    return ds_fs_rm_rf(old, err);
}

int ds_fs_make_tmp(const char *dst, char tmp[DS_PATH_MAX], trn_err *err)
{
    char parent[DS_PATH_MAX];
    parent_of(dst, parent);
    const char *base = strrchr(dst, '/');
    base = base ? base + 1 : dst;
    if (!*base) return trn_errf(err, "bad output folder '%s'", dst);
    if (trn_mkdir_p(parent, err) != 0) return -1;

    /* Remove what killed runs left: ".<base>.tmp.<pid>" of a dead pid. */
    char prefix[DS_PATH_MAX];
    snprintf(prefix, sizeof prefix, ".%s.tmp.", base);
    size_t plen = strlen(prefix), n;
    char **names = ds_fs_list(parent, &n, err);
    if (!names) return -1;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(names[i], prefix, plen)) continue;
        char *end;
        long pid = strtol(names[i] + plen, &end, 10);
        if (end == names[i] + plen || pid <= 0) continue;
        if (*end && strncmp(end, ".old.", 5)) continue;
        if (pid != (long)getpid() && kill((pid_t)pid, 0) == 0) continue; /* alive */
        if (pid != (long)getpid() && errno == EPERM) continue;
        char p[DS_PATH_MAX];
        if (ds_fs_join(p, parent, names[i], err) != 0 || ds_fs_rm_rf(p, err) != 0) {
            ds_fs_free_list(names, n);
            return -1;
        }
    }
    ds_fs_free_list(names, n);

    if (snprintf(tmp, DS_PATH_MAX, "%s/%s%ld", parent, prefix, (long)getpid()) >= DS_PATH_MAX)
        return trn_errf(err, "path too long: %s", dst);
    if (mkdir(tmp, 0755) != 0) return trn_errf(err, "cannot create %s: %s", tmp, strerror(errno));
    return 0;
}

int ds_fs_write(const char *path, const void *buf, size_t len, trn_err *err)
{
    FILE *f = trn_fopen(path, "wb", err);
    if (!f) return -1;
    int ok = fwrite(buf, 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (!ok) {
        unlink(path);
        return trn_errf(err, "cannot write %s: %s", path, strerror(errno));
    }
    return 0;
}

/* Makes room for n more bytes (and a NUL); 0 or -1 (b->oom set). */
static int buf_reserve(ds_buf *b, size_t n)
{
    if (b->oom) return -1;
    if (b->n + n < b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap <= b->n + n) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
        b->oom = 1;
        return -1;
    }
    b->p = np;
    b->cap = cap;
    return 0;
}

void ds_buf_put(ds_buf *b, const void *data, size_t n)
{
    if (buf_reserve(b, n) != 0) return;
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

void ds_buf_printf(ds_buf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        if (buf_reserve(b, (size_t)k) != 0) return;
    }
}

int ds_buf_write(const ds_buf *b, const char *path, trn_err *err)
{
    if (b->oom) return trn_errf(err, "%s: out of memory while building the file", path);
    return ds_fs_write(path, b->p ? b->p : "", b->n, err);
}

void ds_buf_free(ds_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
