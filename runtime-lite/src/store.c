/*
 * store.c: the install root on the device: opening it, its lock, the STATE
 * file of each catalog, pinned keys, reading and verifying installed copies,
 * listing, rollback and garbage collection.
 *
 * Layout of the root (every name below is created by this file or install.c):
 *   .lock                      flock'ed exclusively by install and rollback
 *   keys/NAME.pub              pinned public keys (minisign format)
 *   catalogs/<id>/STATE        which copies are current and previous
 *   catalogs/<id>/STATE.tmp    a STATE being written (removed by GC)
 *   catalogs/<id>/profile.json latencies measured on this device (profile.c;
 *                              a leftover profile.json.tmp.<pid> is removed
 *                              by GC)
 *   catalogs/<id>/.staging-<pid>/   an install in progress (removed by GC)
 *   catalogs/<id>/v<N>.<k>/    an installed copy of version N (k makes the
 *                              name unique): manifest.json, catalog.minisig
 *                              (the signature it was installed with) and the
 *                              files of the manifest; never modified once
 *                              renamed into place
 *
 * STATE is text, written whole to STATE.tmp, fsynced, renamed over STATE,
 * and the folder fsynced:
 *   # rtl STATE ...comment lines...
 *   current v<N>.<k>
 *   previous v<N>.<k>          (absent when there is none)
 * A copy that STATE does not name is garbage, removed by the next install.
 */
#include "store.h"
#include "catalog.h"
#include "sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_MAX 4096

void rtl_log(const rtl_store *s, enum rtl_log_level level, const char *fmt, ...)
{
    if (!s->log) return;
    char msg[RTL_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->log(s->log_user, level, msg);
}

int rtl_fsync_fd(int fd, const char *what, rtl_err *err)
{
    if (fsync(fd) != 0 && errno != EINVAL) return rtl_errf(err, "cannot fsync %s: %s", what, strerror(errno));
    return 0;
}

rtl_store *rtl_store_open(const rtl_store_config *config, rtl_err *err)
{
    if (!config || !config->root || !config->root[0]) {
        rtl_errf(err, "no install root given");
        return NULL;
    }
    rtl_store *s = calloc(1, sizeof *s);
    if (!s) {
        rtl_errf(err, "out of memory");
        return NULL;
    }
    s->root_fd = s->catalogs_fd = s->lock_fd = -1;
    s->log = config->log;
    s->log_user = config->log_user;
    if (mkdir(config->root, 0755) != 0 && errno != EEXIST) {
        rtl_errf(err, "cannot create the install root %s: %s%s", config->root, strerror(errno),
                 errno == ENOENT ? " (create its parent folder first)" : "");
        goto fail;
    }
    s->root = realpath(config->root, NULL);
    if (!s->root || (s->root_fd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rtl_errf(err, "cannot open the install root %s: %s", config->root, strerror(errno));
        goto fail;
    }
    if ((mkdirat(s->root_fd, "catalogs", 0755) != 0 && errno != EEXIST) ||
        (s->catalogs_fd = openat(s->root_fd, "catalogs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        rtl_errf(err, "cannot open %s/catalogs: %s", s->root, strerror(errno));
        goto fail;
    }
    if (config->keys_dir) {
        s->keys_dir = strdup(config->keys_dir);
    } else {
        if (mkdirat(s->root_fd, "keys", 0755) != 0 && errno != EEXIST) {
            rtl_errf(err, "cannot create %s/keys: %s", s->root, strerror(errno));
            goto fail;
        }
        if (asprintf(&s->keys_dir, "%s/keys", s->root) < 0) s->keys_dir = NULL;
    }
    if (!s->keys_dir) {
        rtl_errf(err, "out of memory");
        goto fail;
    }
    return s;
fail:
    rtl_store_close(s);
    return NULL;
}

void rtl_store_close(rtl_store *s)
{
    if (!s) return;
    rtl_store_unlock(s);
    if (s->catalogs_fd >= 0) close(s->catalogs_fd);
    if (s->root_fd >= 0) close(s->root_fd);
    free(s->root);
    free(s->keys_dir);
    free(s);
}

int rtl_store_lock(rtl_store *s, rtl_err *err)
{
    s->lock_fd = openat(s->root_fd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (s->lock_fd < 0) return rtl_errf(err, "cannot open %s/.lock: %s", s->root, strerror(errno));
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(s->lock_fd);
        s->lock_fd = -1;
        if (e == EWOULDBLOCK)
            return rtl_errf(err, "another install or rollback is running on %s (it holds %s/.lock); "
                            "try again when it has finished", s->root, s->root);
        return rtl_errf(err, "cannot lock %s/.lock: %s", s->root, strerror(e));
    }
    return 0;
}

void rtl_store_unlock(rtl_store *s)
{
    if (s->lock_fd >= 0) close(s->lock_fd);
    s->lock_fd = -1;
}

int rtl_catdir_open(rtl_store *s, const char *id, int create, int *created, rtl_err *err)
{
    if (created) *created = 0;
    if (!rtl_id_ok(id)) return rtl_errf(err, "'%s' is not a valid catalog id", id);
    if (create) {
        if (mkdirat(s->catalogs_fd, id, 0755) == 0) {
            if (created) *created = 1;
            if (rtl_fsync_fd(s->catalogs_fd, "the catalogs folder", err) != 0) return -1;
        } else if (errno != EEXIST) {
            return rtl_errf(err, "cannot create %s/catalogs/%s: %s", s->root, id, strerror(errno));
        }
    }
    int fd = openat(s->catalogs_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return rtl_errf(err, "catalog '%s' is not installed in %s", id, s->root);
        return rtl_errf(err, "cannot open %s/catalogs/%s: %s", s->root, id, strerror(errno));
    }
    return fd;
}

/* "v<N>.<k>" with decimal N and k. */
static int copy_name_ok(const char *s)
{
    if (s[0] != 'v' || strlen(s) >= RTL_COPY_NAME_MAX) return 0;
    const char *p = s + 1;
    int digits = 0, dots = 0;
    for (; *p; p++) {
        if (*p == '.') {
            if (!digits || dots++) return 0;
            digits = 0;
        } else if (*p >= '0' && *p <= '9') {
            digits++;
        } else {
            return 0;
        }
    }
    return dots == 1 && digits > 0;
}

int rtl_state_read(int dirfd, struct rtl_state *st, rtl_err *err)
{
    memset(st, 0, sizeof *st);
    int fd = openat(dirfd, "STATE", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        return rtl_errf(err, "cannot open STATE: %s", strerror(errno));
    }
    char buf[STATE_MAX + 1];
    size_t len = 0;
    for (;;) {
        ssize_t r = read(fd, buf + len, STATE_MAX - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return rtl_errf(err, "cannot read STATE: %s", strerror(e));
        }
        if (r == 0 || (len += (size_t)r) == STATE_MAX) break;
    }
    close(fd);
    if (len == STATE_MAX) return rtl_errf(err, "STATE is larger than %d bytes: it is damaged", STATE_MAX);
    buf[len] = '\0';
    int line = 0;
    for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        line++;
        if (l[0] == '#') continue;
        char key[16], name[RTL_COPY_NAME_MAX];
        _Static_assert(RTL_COPY_NAME_MAX == 48, "the sscanf width below is RTL_COPY_NAME_MAX - 1");
        if (sscanf(l, "%15s %47s", key, name) != 2 || !copy_name_ok(name))
            return rtl_errf(err, "STATE line %d is damaged: '%.80s'", line, l);
        if (strcmp(key, "current") == 0) snprintf(st->current, sizeof st->current, "%s", name);
        else if (strcmp(key, "previous") == 0) snprintf(st->previous, sizeof st->previous, "%s", name);
        else return rtl_errf(err, "STATE line %d: unknown key '%s'", line, key);
    }
    if (!st->current[0] && st->previous[0]) return rtl_errf(err, "STATE names a previous copy but no current one");
    return 0;
}

int rtl_state_write(int dirfd, const struct rtl_state *st, rtl_err *err)
{
    char buf[256];
    int n = snprintf(buf, sizeof buf,
                     "# rtl STATE: written atomically by rtl install and rtl rollback; do not edit\n"
                     "current %s\n%s%s%s", st->current, st->previous[0] ? "previous " : "", st->previous,
                     st->previous[0] ? "\n" : "");
    int fd = openat(dirfd, "STATE.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return rtl_errf(err, "cannot create STATE.tmp: %s", strerror(errno));
    if (write(fd, buf, (size_t)n) != n || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, "STATE.tmp", 0);
        return rtl_errf(err, "cannot write STATE.tmp: %s", strerror(e));
    }
    close(fd);
    RTL_CRASH_POINT("state-tmp-synced");
    if (renameat(dirfd, "STATE.tmp", dirfd, "STATE") != 0) {
        int e = errno;
        unlinkat(dirfd, "STATE.tmp", 0);
        return rtl_errf(err, "cannot rename STATE.tmp to STATE: %s", strerror(e));
    }
    RTL_CRASH_POINT("state-renamed");
    return rtl_fsync_fd(dirfd, "the catalog folder", err);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in the folder dirfd (or path when dirfd < 0), skipping "."
 * and ".."; the caller frees each name and the array. */
static int list_dir(int dirfd, const char *path, char ***names, size_t *n, rtl_err *err)
{
    *names = NULL;
    *n = 0;
    int fd = dirfd >= 0 ? dup(dirfd) : open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return rtl_errf(err, "cannot read the folder %s: %s", path, strerror(errno));
    }
    rewinddir(d);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            char **grown = realloc(*names, cap * sizeof *grown);
            if (!grown) break;
            *names = grown;
        }
        if (!((*names)[*n] = strdup(de->d_name))) break;
        (*n)++;
    }
    int failed = de != NULL;
    closedir(d);
    if (failed) {
        for (size_t i = 0; i < *n; i++) free((*names)[i]);
        free(*names);
        *names = NULL;
        *n = 0;
        return rtl_errf(err, "out of memory listing %s", path);
    }
    if (*n) qsort(*names, *n, sizeof **names, cmp_str);
    return 0;
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
}

/* Appends every *.pub of the folder dir to *keys (*n of them). A folder
 * that does not exist adds nothing when optional. */
static int load_pubs(const char *dir, int optional, rtl_pubkey **keys, size_t *n, rtl_err *err)
{
    char **names;
    size_t nn;
    struct stat st;
    if (optional && stat(dir, &st) != 0 && errno == ENOENT) return 0;
    if (list_dir(-1, dir, &names, &nn, err) != 0) return rtl_err_prefix(err, "pinned keys");
    rtl_pubkey *k = realloc(*keys, (*n + nn + 1) * sizeof *k);
    int rc = k ? 0 : rtl_errf(err, "out of memory");
    if (k) *keys = k;
    for (size_t i = 0; rc == 0 && i < nn; i++) {
        size_t l = strlen(names[i]);
        if (names[i][0] == '.' || l < 5 || strcmp(names[i] + l - 4, ".pub") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (rtl_pubkey_load(path, &k[*n], err) != 0) rc = rtl_err_prefix(err, "pinned key");
        else (*n)++;
    }
    free_names(names, nn);
    return rc;
}

static int keys_done(rtl_store *s, int rc, rtl_pubkey **keys, size_t *n, rtl_err *err)
{
    if (rc == 0 && *n == 0)
        rc = rtl_errf(err, "no pinned public key in %s: copy the catalog signer's .pub file there "
                      "(never a development key on a production device)", s->keys_dir);
    if (rc != 0) {
        free(*keys);
        *keys = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

int rtl_keys_load(rtl_store *s, rtl_pubkey **keys, size_t *n, rtl_err *err)
{
    *keys = NULL;
    *n = 0;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/channels", s->keys_dir);
    int rc = load_pubs(s->keys_dir, 0, keys, n, err);
    if (rc == 0) rc = load_pubs(sub, 1, keys, n, err);
    return keys_done(s, rc, keys, n, err);
}

int rtl_keys_load_channel(rtl_store *s, const char *channel, rtl_pubkey **keys, size_t *n, char *where, size_t size,
                          rtl_err *err)
{
    *keys = NULL;
    *n = 0;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/channels/%s.pub", s->keys_dir, channel);
    if (stat(path, &st) != 0) {
        snprintf(where, size, "keys folder %s", s->keys_dir);
        return keys_done(s, load_pubs(s->keys_dir, 0, keys, n, err), keys, n, err);
    }
    snprintf(where, size, "the key of channel %s: %s", channel, path);
    if (!(*keys = calloc(1, sizeof **keys))) return rtl_errf(err, "out of memory");
    if (rtl_pubkey_load(path, *keys, err) != 0) {
        free(*keys);
        *keys = NULL;
        return rtl_err_prefix(err, "the pinned key of channel %s", channel);
    }
    *n = 1;
    return 0;
}

int rtl_remove_tree(int dirfd, const char *name, rtl_err *err)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 0;
        return rtl_errf(err, "cannot stat %s: %s", name, strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return rtl_errf(err, "cannot open %s: %s", name, strerror(errno));
        char **names;
        size_t n;
        int rc = list_dir(fd, name, &names, &n, err);
        for (size_t i = 0; rc == 0 && i < n; i++) rc = rtl_remove_tree(fd, names[i], err);
        free_names(names, n);
        close(fd);
        if (rc != 0) return rtl_err_prefix(err, "%s", name);
        if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0) return rtl_errf(err, "cannot remove %s: %s", name, strerror(errno));
        return 0;
    }
    if (unlinkat(dirfd, name, 0) != 0) return rtl_errf(err, "cannot remove %s: %s", name, strerror(errno));
    return 0;
}

void rtl_gc(rtl_store *s, int dirfd, const char *id)
{
    struct rtl_state st;
    rtl_err err;
    if (rtl_state_read(dirfd, &st, &err) != 0) {
        rtl_log(s, RTL_LOG_WARN, "catalog %s: not cleaning up: %s", id, err.msg);
        return;
    }
    char **names;
    size_t n;
    if (list_dir(dirfd, id, &names, &n, &err) != 0) return;
    for (size_t i = 0; i < n; i++) {
        const char *nm = names[i];
        int stale = strncmp(nm, ".staging-", 9) == 0 || strcmp(nm, "STATE.tmp") == 0 ||
                    strncmp(nm, RTL_PROFILE_NAME ".tmp.", sizeof RTL_PROFILE_NAME + 4) == 0;
        int copy = copy_name_ok(nm) && strcmp(nm, st.current) != 0 && strcmp(nm, st.previous) != 0;
        if (!stale && !copy) continue;
        if (copy) {
            /* a reader holds a shared lock on a copy it has open */
            int fd = openat(dirfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
                rtl_log(s, RTL_LOG_INFO, "catalog %s: keeping %s for now: a reader has it open", id, nm);
                close(fd);
                continue;
            }
            if (fd >= 0) close(fd);
        }
        if (rtl_remove_tree(dirfd, nm, &err) != 0)
            rtl_log(s, RTL_LOG_WARN, "catalog %s: cannot remove %s: %s", id, nm, err.msg);
        else
            rtl_log(s, RTL_LOG_INFO, "catalog %s: removed %s", id, nm);
        RTL_CRASH_POINT("gc-removed");
    }
    free_names(names, n);
    if (rtl_fsync_fd(dirfd, "the catalog folder", &err) != 0) rtl_log(s, RTL_LOG_WARN, "catalog %s: %s", id, err.msg);
}

/* Opens `path` (components separated by '/') below dirfd without following
 * a symbolic link anywhere on the way. Returns an fd or -1 with errno set. */
static int open_beneath(int dirfd, const char *path, int flags)
{
    char buf[RTL_PATH_MAX + 1];
    if (strlen(path) > RTL_PATH_MAX) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(buf, path);
    int fd = dup(dirfd);
    char *p = buf;
    for (char *slash; fd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
        *slash = '\0';
        int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(fd);
        errno = e;
        fd = next;
    }
    if (fd < 0) return -1;
    int r = openat(fd, p, flags | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

/* Reads a whole small file below dirfd (manifest, signature). */
static int read_beneath(int dirfd, const char *path, size_t max, char **buf, size_t *len, rtl_err *err)
{
    int fd = open_beneath(dirfd, path, O_RDONLY);
    if (fd < 0) return rtl_errf(err, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        close(fd);
        return rtl_errf(err, "%s is not a regular file of at most %zu bytes", path, max);
    }
    char *b = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (b && got < (size_t)st.st_size) {
        ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (!b || got != (size_t)st.st_size) {
        free(b);
        return rtl_errf(err, "cannot read %s", path);
    }
    b[got] = '\0';
    *buf = b;
    *len = got;
    return 0;
}

rtl_catalog *rtl_copy_open(rtl_store *s, int dirfd, const char *id, const char *name, int lock, rtl_err *err)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        rtl_errf(err, "catalog %s: cannot open its copy %s: %s", id, name, strerror(errno));
        return NULL;
    }
    if (lock && flock(fd, LOCK_SH) != 0) {
        rtl_errf(err, "catalog %s: cannot lock %s: %s", id, name, strerror(errno));
        close(fd);
        return NULL;
    }
    char *json, dir[4096];
    size_t len;
    if (read_beneath(fd, "manifest.json", RTL_MANIFEST_MAX, &json, &len, err) != 0) {
        close(fd);
        rtl_err_prefix(err, "catalog %s (copy %s)", id, name);
        return NULL;
    }
    snprintf(dir, sizeof dir, "%s/catalogs/%s/%s", s->root, id, name);
    rtl_catalog *cat = rtl_catalog_parse(json, len, dir, err);
    free(json);
    if (!cat) {
        close(fd);
        rtl_err_prefix(err, "catalog %s (copy %s)", id, name);
        return NULL;
    }
    if (lock) cat->lock_fd = fd;
    else close(fd);
    if (asprintf(&cat->profile_path, "%s/catalogs/%s/" RTL_PROFILE_NAME, s->root, id) < 0) {
        cat->profile_path = NULL;
        rtl_catalog_close(cat);
        rtl_errf(err, "out of memory");
        return NULL;
    }
    return cat;
}

/* Every entry below dirfd (path `rel`) must be a folder on the way to a
 * manifest file, a manifest file, or one of the two top-level files. */
static int check_tree(const rtl_catalog *cat, int dirfd, const char *rel, size_t *nfiles, rtl_err *err)
{
    char **names;
    size_t n;
    if (list_dir(dirfd, rel[0] ? rel : ".", &names, &n, err) != 0) return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char path[RTL_PATH_MAX + 2];
        int len = snprintf(path, sizeof path, "%s%s%s", rel, rel[0] ? "/" : "", names[i]);
        struct stat st;
        if (len > RTL_PATH_MAX || fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = rtl_errf(err, "cannot examine %s", path);
        } else if (S_ISDIR(st.st_mode)) {
            int fd = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = fd < 0 ? rtl_errf(err, "cannot open %s", path) : check_tree(cat, fd, path, nfiles, err);
            if (fd >= 0) close(fd);
        } else if (!S_ISREG(st.st_mode)) {
            rc = rtl_errf(err, "%s is not a regular file", path);
        } else if (rel[0] || (strcmp(path, "manifest.json") != 0 && strcmp(path, "catalog.minisig") != 0)) {
            if (!rtl_catalog_lookup(cat, path)) rc = rtl_errf(err, "%s is not a file of the manifest", path);
            else (*nfiles)++;
        }
    }
    free_names(names, n);
    return rc;
}

int rtl_copy_verify(rtl_store *s, int dirfd, const char *id, const char *name, rtl_err *err)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return rtl_errf(err, "catalog %s: cannot open its copy %s: %s", id, name, strerror(errno));
    rtl_pubkey *keys = NULL;
    size_t nkeys = 0, k = 0, nfiles = 0;
    char *text = NULL, *json = NULL;
    size_t len, jlen;
    rtl_signature sig;
    rtl_sig_info info;
    rtl_catalog *cat = NULL;
    uint8_t sha[RTL_SHA256_BYTES];
    int rc = -1;
    if (read_beneath(fd, "catalog.minisig", RTL_SIG_FILE_MAX, &text, &len, err) != 0 ||
        rtl_sig_parse(text, len, &sig, err) != 0 || rtl_keys_load(s, &keys, &nkeys, err) != 0)
        goto out;
    while (k < nkeys && memcmp(keys[k].keynum, sig.keynum, RTL_KEYNUM_BYTES) != 0) k++;
    if (k == nkeys) {
        char h[17];
        rtl_keynum_hex(sig.keynum, h);
        rtl_errf(err, "it was signed by key %s, which is no longer pinned in %s", h, s->keys_dir);
        goto out;
    }
    if (rtl_sig_verify_comment(&sig, &keys[k], err) != 0 || rtl_trusted_parse(sig.trusted, &info, err) != 0 ||
        read_beneath(fd, "manifest.json", RTL_MANIFEST_MAX, &json, &jlen, err) != 0)
        goto out;
    rtl_sha256_buf(json, jlen, sha);
    if (memcmp(sha, info.manifest_sha256, sizeof sha) != 0) {
        rtl_errf(err, "manifest.json differs from the one the signature names (it was modified)");
        goto out;
    }
    if (!(cat = rtl_catalog_parse(json, jlen, NULL, err))) goto out;
    if (strcmp(cat->id, id) != 0 || strcmp(info.catalog, id) != 0 || cat->version != info.version) {
        rtl_errf(err, "the copy holds catalog %s version %" PRIu64 " but is installed as %s", cat->id,
                 cat->version, id);
        goto out;
    }
    for (size_t i = 0; i < cat->nfiles; i++) {
        const struct rtl_file *f = cat->by_path[i];
        int ffd = open_beneath(fd, f->path, O_RDONLY);
        uint8_t got[RTL_SHA256_BYTES];
        uint64_t size;
        struct stat st;
        if (ffd < 0) {
            rtl_errf(err, "%s: %s", f->path, strerror(errno));
            goto out;
        }
        int bad = fstat(ffd, &st) != 0 || !S_ISREG(st.st_mode) || rtl_sha256_fd(ffd, got, &size, NULL) != 0;
        close(ffd);
        if (bad) {
            rtl_errf(err, "%s: cannot read it as a regular file", f->path);
            goto out;
        }
        if (size != f->size) {
            rtl_errf(err, "%s: %" PRIu64 " bytes where the manifest says %" PRIu64, f->path, size, f->size);
            goto out;
        }
        if (memcmp(got, f->sha256, sizeof got) != 0) {
            rtl_errf(err, "%s: SHA-256 differs from the manifest (the file was modified)", f->path);
            goto out;
        }
    }
    if (check_tree(cat, fd, "", &nfiles, err) != 0) goto out;
    if (nfiles != cat->nfiles) {
        rtl_errf(err, "%zu files of the manifest found while walking the copy, %zu expected", nfiles, cat->nfiles);
        goto out;
    }
    rc = 0;
out:
    if (rc != 0) rtl_err_prefix(err, "catalog %s (copy %s)", id, name);
    rtl_catalog_close(cat);
    free(keys);
    free(text);
    free(json);
    close(fd);
    return rc;
}

uint64_t rtl_copy_version(rtl_store *s, int dirfd, const char *id, const char *name)
{
    rtl_err err;
    rtl_catalog *cat = rtl_copy_open(s, dirfd, id, name, 0, &err);
    if (cat) {
        uint64_t v = cat->version;
        rtl_catalog_close(cat);
        return v;
    }
    rtl_log(s, RTL_LOG_WARN, "%s; taking its version from its name", err.msg);
    return strtoull(name + 1, NULL, 10); /* copy_name_ok: "v<N>.<k>" */
}

int rtl_describe(rtl_store *s, int dirfd, const char *id, const struct rtl_state *st, rtl_installed *out,
                    rtl_err *err)
{
    memset(out, 0, sizeof *out);
    rtl_catalog *cat = rtl_copy_open(s, dirfd, id, st->current, 0, err);
    if (!cat) return -1;
    snprintf(out->catalog, sizeof out->catalog, "%s", cat->id);
    snprintf(out->model, sizeof out->model, "%s", cat->model);
    snprintf(out->dir, sizeof out->dir, "%s", cat->dir);
    out->version = cat->version;
    rtl_catalog_close(cat);
    if (st->previous[0]) {
        out->has_previous = 1;
        out->previous_version = rtl_copy_version(s, dirfd, id, st->previous);
    }
    char *text = NULL, path[RTL_COPY_NAME_MAX + 32];
    size_t len;
    rtl_signature sig;
    snprintf(path, sizeof path, "%s/catalog.minisig", st->current);
    if (read_beneath(dirfd, path, RTL_SIG_FILE_MAX, &text, &len, err) == 0 && rtl_sig_parse(text, len, &sig, err) == 0)
        rtl_keynum_hex(sig.keynum, out->key_id);
    else
        snprintf(out->key_id, sizeof out->key_id, "?");
    free(text);
    return 0;
}

int rtl_list(rtl_store *s, rtl_installed **out, size_t *n, rtl_err *err)
{
    *out = NULL;
    *n = 0;
    char **names;
    size_t nn;
    if (list_dir(s->catalogs_fd, "catalogs", &names, &nn, err) != 0) return -1;
    rtl_installed *list = calloc(nn ? nn : 1, sizeof *list);
    int rc = list ? 0 : rtl_errf(err, "out of memory");
    for (size_t i = 0; rc == 0 && i < nn; i++) {
        if (!rtl_id_ok(names[i])) continue;
        struct rtl_state st;
        int fd = rtl_catdir_open(s, names[i], 0, NULL, err);
        if (fd < 0) {
            rc = -1;
            break;
        }
        if (rtl_state_read(fd, &st, err) != 0) rc = rtl_err_prefix(err, "catalog %s", names[i]);
        else if (st.current[0]) rc = rtl_describe(s, fd, names[i], &st, &list[(*n)++], err);
        close(fd);
    }
    free_names(names, nn);
    if (rc != 0) {
        free(list);
        *n = 0;
        return -1;
    }
    *out = list;
    return 0;
}

int rtl_verify_installed(rtl_store *s, const char *id, rtl_err *err)
{
    struct rtl_state st;
    int fd = rtl_catdir_open(s, id, 0, NULL, err);
    if (fd < 0) return -1;
    int rc = rtl_state_read(fd, &st, err);
    if (rc == 0 && !st.current[0]) rc = rtl_errf(err, "catalog '%s' is not installed (no current copy)", id);
    if (rc == 0) rc = rtl_copy_verify(s, fd, id, st.current, err);
    close(fd);
    return rc;
}

int rtl_rollback(rtl_store *s, const char *id, rtl_installed *out, rtl_err *err)
{
    if (rtl_store_lock(s, err) != 0) return -1;
    struct rtl_state st, next;
    int rc = -1, fd = rtl_catdir_open(s, id, 0, NULL, err);
    if (fd < 0) goto out;
    if (rtl_state_read(fd, &st, err) != 0) goto out;
    if (!st.previous[0]) {
        rtl_errf(err, "catalog '%s' has no previous copy to roll back to", id);
        goto out;
    }
    if (rtl_copy_verify(s, fd, id, st.previous, err) != 0) {
        rtl_err_prefix(err, "not rolling back");
        goto out;
    }
    RTL_CRASH_POINT("rollback-verified");
    snprintf(next.current, sizeof next.current, "%s", st.previous);
    snprintf(next.previous, sizeof next.previous, "%s", st.current);
    if (rtl_state_write(fd, &next, err) != 0) goto out;
    RTL_CRASH_POINT("rollback-switched");
    rtl_log(s, RTL_LOG_INFO, "catalog %s: rolled back from %s to %s", id, st.current, st.previous);
    rtl_gc(s, fd, id);
    rc = out ? rtl_describe(s, fd, id, &next, out, err) : 0;
out:
    if (fd >= 0) close(fd);
    rtl_store_unlock(s);
    return rc;
}

rtl_catalog *rtl_catalog_open(rtl_store *s, const char *id, rtl_err *err)
{
    int fd = rtl_catdir_open(s, id, 0, NULL, err);
    if (fd < 0) return NULL;
    rtl_catalog *cat = NULL;
    /* an install may retire the copy between reading STATE and opening it */
    for (int attempt = 0; !cat && attempt < 3; attempt++) {
        struct rtl_state st;
        if (rtl_state_read(fd, &st, err) != 0) break;
        if (!st.current[0]) {
            rtl_errf(err, "catalog '%s' is not installed (no current copy)", id);
            break;
        }
        cat = rtl_copy_open(s, fd, id, st.current, 1, err);
    }
    close(fd);
    return cat;
}
