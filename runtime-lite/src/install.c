/*
 * install.c: rtl_install, from a signed archive to a current installed copy.
 *
 * Order of work (each step only starts when the one before succeeded):
 *  1. verify: parse the .minisig, find the pinned key with its key id, hash
 *     the archive (BLAKE2b-512, streamed), verify the signature and the global
 *     signature, check the untrusted comment, and read the signed catalog
 *     id, version and manifest SHA-256 from the trusted comment. Nothing has
 *     been written yet.
 *  2. lock the store; refuse a version not newer than the current copy
 *     (unless allow_downgrade); remove leftovers of crashed installs.
 *  3. extract into catalogs/<id>/.staging-<pid>/, reading the archive a
 *     second time: manifest.json must come first and match the SHA-256 of
 *     the signed trusted comment; every other entry must be a regular file
 *     named by the manifest, once, with a safe path, the manifest's size and
 *     SHA-256. So every byte installed is covered by the verified signature
 *     (signature -> manifest SHA-256 -> file SHA-256), whatever the second
 *     read returns, and the archive is hashed once with BLAKE2b (step 1),
 *     not again here. Files are created with O_EXCL and O_NOFOLLOW below the
 *     staging folder only, fsynced, and made read-only. At the end every
 *     manifest file must have been seen, and the archive must still be the
 *     file that was verified (same device, inode, size, modification and
 *     change times: a write in between fails the install).
 *  4. fsync every file and folder of the staging tree, rename it to
 *     v<N>.<k>, fsync the catalog
 *     folder; then replace STATE (temporary file, fsync, rename, fsync), the
 *     one atomic switch: before it the old copy is current, after it the new
 *     one, and both are complete on disk at every moment.
 *  5. remove copies STATE no longer names.
 * Any failure before the switch removes the staging folder (and the catalog
 * folder when this install created it), so nothing else has changed.
 *
 * rtl_install_objects (rtl pull's delta path) runs the same steps from a
 * manifest in memory and a source of its files instead of an archive: step
 * 1 verifies only the global signature over the trusted comment (there is
 * no archive to hash), step 3 writes the manifest (checked against the
 * trusted comment's SHA-256) and then every file of the manifest, each
 * checked for its size and SHA-256 while it is copied; steps 2, 4 and 5
 * are shared.
 */
#include "tarzst.h"
#include "catalog.h"
#include "install.h"
#include "store.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

struct job {
    rtl_store *s;
    const char *archive;
    int fd;                         /* the archive */
    struct stat st;                 /* the archive as it was verified */
    uint8_t hash[RTL_HASH_BYTES];   /* its verified BLAKE2b-512 */
    char *sig_text;
    size_t sig_len;
    rtl_signature sig;
    char key_id[17];
    rtl_sig_info info;
    int catfd, created_catdir;
    struct rtl_state state;
    uint64_t current_version;
    char staging[32];
    int stagefd;
    rtl_catalog *cat;               /* the new manifest */
    unsigned char *seen;            /* per cat->by_path entry */
    uint64_t bytes;
    /* rtl_install_objects: the manifest and where its files come from */
    const char *manifest;
    size_t manifest_len;
    int (*open_object)(void *user, const struct rtl_file *f, rtl_err *err);
    void *open_user;
};

/* Step 1. */
static int verify(struct job *j, const char *sigpath, rtl_err *err)
{
    rtl_pubkey *keys = NULL;
    size_t nkeys = 0, k = 0;
    trn_err te;
    /* the archive first: a missing archive is named as such, not its .minisig */
    int probe = trn_open_input(j->archive, &te);
    if (probe < 0) return rtl_err_from_trn(err, &te);
    close(probe);
    if (rtl_read_small(sigpath, RTL_SIG_FILE_MAX, &j->sig_text, &j->sig_len, err) != 0) return -1;
    if (rtl_sig_parse(j->sig_text, j->sig_len, &j->sig, err) != 0) return rtl_err_prefix(err, "%s", sigpath);
    if (rtl_keys_load(j->s, &keys, &nkeys, err) != 0) return -1;
    rtl_keynum_hex(j->sig.keynum, j->key_id);
    while (k < nkeys && memcmp(keys[k].keynum, j->sig.keynum, RTL_KEYNUM_BYTES) != 0) k++;
    int rc = -1;
    if (k == nkeys) {
        rtl_errf(err, "%s is signed by key %s, which is not pinned on this device (keys folder %s)",
                 j->archive, j->key_id, j->s->keys_dir);
    } else if ((j->fd = trn_open_input(j->archive, &te)) < 0) {
        rtl_err_from_trn(err, &te);
    } else if (fstat(j->fd, &j->st) != 0 || !S_ISREG(j->st.st_mode)) {
        rtl_errf(err, "%s is not a regular file", j->archive);
    } else if (rtl_hash_fd(j->fd, j->hash, err) != 0) {
        rtl_err_prefix(err, "%s", j->archive);
    } else if (rtl_sig_verify_hash(&j->sig, &keys[k], j->hash, err) != 0) {
        rtl_err_prefix(err, "signature check of %s failed", j->archive);
    } else if (rtl_untrusted_check(&j->sig, err) != 0 || rtl_trusted_parse(j->sig.trusted, &j->info, err) != 0) {
        rtl_err_prefix(err, "%s", sigpath);
    } else {
        rc = 0;
    }
    free(keys);
    if (rc == 0) {
        rtl_log(j->s, RTL_LOG_INFO, "%s: signature verified: catalog %s version %" PRIu64 ", key %s",
                j->archive, j->info.catalog, j->info.version, j->key_id);
        if (j->info.development_key)
            rtl_log(j->s, RTL_LOG_WARN, "catalog %s is signed by a DEVELOPMENT key (%s): a production "
                    "device must not pin it", j->info.catalog, j->key_id);
    }
    return rc;
}

/* Step 2 (with the store lock held). */
static int check_version(struct job *j, const rtl_install_options *opt, rtl_err *err)
{
    j->catfd = rtl_catdir_open(j->s, j->info.catalog, 1, &j->created_catdir, err);
    if (j->catfd < 0) return -1;
    if (rtl_state_read(j->catfd, &j->state, err) != 0) return rtl_err_prefix(err, "catalog %s", j->info.catalog);
    if (!j->state.current[0]) return 0;
    j->current_version = rtl_copy_version(j->s, j->catfd, j->info.catalog, j->state.current);
    if (j->info.version <= j->current_version && !(opt && opt->allow_downgrade))
        return rtl_errf(err, "%s holds catalog %s version %" PRIu64 ", which is not newer than the installed "
                        "version %" PRIu64 "; refusing a downgrade (an operator may pass --allow-downgrade)",
                        j->archive, j->info.catalog, j->info.version, j->current_version);
    return 0;
}

/* write(2) until all n bytes are out; -1 with errno set. */
static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Creates the folders of `path` below the staging folder, then the file
 * itself (exclusive, read-only once closed). Returns an fd or -1. */
static int create_file(struct job *j, const char *path, rtl_err *err)
{
    char buf[RTL_PATH_MAX + 1];
    snprintf(buf, sizeof buf, "%s", path);
    int dfd = dup(j->stagefd);
    char *p = buf;
    for (char *slash; dfd >= 0 && (slash = strchr(p, '/')); p = slash + 1) {
        *slash = '\0';
        if (mkdirat(dfd, p, 0755) != 0 && errno != EEXIST) {
            rtl_errf(err, "cannot create the folder of %s: %s", path, strerror(errno));
            close(dfd);
            return -1;
        }
        int next = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(dfd);
        dfd = next;
    }
    if (dfd < 0) return rtl_errf(err, "cannot open the folder of %s: %s", path, strerror(errno));
    int fd = openat(dfd, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    int e = errno;
    close(dfd);
    if (fd < 0) return rtl_errf(err, "cannot create %s in the staging folder: %s", path, strerror(e));
    return fd;
}

/* Closes a written file after starting its write-back; sync_tree fsyncs it
 * later, once every file is written, so the disk works while the next files
 * are hashed instead of the install waiting on each file in turn. */
static int finish_file(int fd, const char *path, rtl_err *err)
{
#ifdef SYNC_FILE_RANGE_WRITE
    sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint: its failure changes nothing */
#endif
    if (close(fd) != 0) return rtl_errf(err, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

static int fsync_at(int dirfd, const char *path, int flags, rtl_err *err)
{
    int fd = openat(dirfd, path, flags | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return rtl_errf(err, "cannot open %s in the staging folder: %s", path, strerror(errno));
    int rc = rtl_fsync_fd(fd, path, err);
    close(fd);
    return rc;
}

/* An add-on (its manifest names a "base": a catalog id and version, e.g.
 * a specialised model built for this device's context) installs only on
 * top of that catalog at exactly that version: its variants name that
 * catalog's as parent or cascade partner. Checked before anything of the
 * add-on is written. */
static int check_base(struct job *j, rtl_err *err)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(j->cat->root, "base");
    if (!b) return 0;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(b, "catalog");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(b, "version");
    if (!cJSON_IsString(id) || !cJSON_IsNumber(ver) || ver->valuedouble < 1)
        return rtl_errf(err, "manifest.json: \"base\" needs a catalog id and a version");
    uint64_t want = (uint64_t)ver->valuedouble, have = 0;
    rtl_err e2;
    int fd = rtl_catdir_open(j->s, id->valuestring, 0, NULL, &e2);
    if (fd >= 0) {
        struct rtl_state st;
        if (rtl_state_read(fd, &st, &e2) == 0 && st.current[0])
            have = rtl_copy_version(j->s, fd, id->valuestring, st.current);
        close(fd);
    }
    if (have == want) return 0;
    if (!have)
        return rtl_errf(err, "%s is an add-on of catalog %s version %" PRIu64 ", which is not installed: install "
                        "that catalog first (nothing was changed)", j->archive, id->valuestring, want);
    return rtl_errf(err, "%s is an add-on of catalog %s version %" PRIu64 ", but version %" PRIu64 " is installed: "
                    "get the add-on built for version %" PRIu64 " (nothing was changed)", j->archive,
                    id->valuestring, want, have, have);
}

/* Checks manifest.json (json, len bytes) against the signed SHA-256 and
 * fields, parses it into j->cat and writes it into the staging folder. */
static int accept_manifest(struct job *j, const char *json, size_t got, rtl_err *err)
{
    uint8_t sha[RTL_SHA256_BYTES];
    rtl_sha256_buf(json, got, sha);
    int rc = -1;
    if (memcmp(sha, j->info.manifest_sha256, sizeof sha) != 0) {
        rtl_errf(err, "manifest.json does not match the manifest-sha256 of the signed trusted comment");
    } else if (!(j->cat = rtl_catalog_parse(json, got, NULL, err))) {
        /* err is filled */
    } else if (strcmp(j->cat->id, j->info.catalog) != 0 || j->cat->version != j->info.version ||
               (j->info.model[0] && strcmp(j->cat->model, j->info.model) != 0)) {
        rtl_errf(err, "the manifest says catalog %s version %" PRIu64 " model %s but the signature says "
                 "catalog %s version %" PRIu64 " model %s", j->cat->id, j->cat->version, j->cat->model,
                 j->info.catalog, j->info.version, j->info.model[0] ? j->info.model : "(any)");
    } else if (check_base(j, err) != 0) {
        /* err is filled */
    } else if (!(j->seen = calloc(j->cat->nfiles ? j->cat->nfiles : 1, 1))) {
        rtl_errf(err, "out of memory");
    } else {
        int fd = create_file(j, "manifest.json", err);
        if (fd >= 0 && (write_all(fd, json, got) != 0 ? rtl_errf(err, "cannot write manifest.json: %s",
                                                                 strerror(errno)) : 0) == 0 &&
            finish_file(fd, "manifest.json", err) == 0)
            rc = 0;
        else if (fd >= 0)
            close(fd);
    }
    return rc;
}

/* The first entry: manifest.json, matching the signed SHA-256 and fields. */
static int read_manifest(struct job *j, struct archive *a, struct rtl_ar_src *src, rtl_err *err)
{
    struct archive_entry *e;
    int r = rtl_ar_next(a, src, &e, err);
    if (r < 0) return -1;
    if (r == 0) return rtl_errf(err, "the archive holds no entry");
    const char *name = archive_entry_pathname(e);
    if (!name || strcmp(name, "manifest.json") != 0)
        return rtl_errf(err, "the first entry is '%s', not manifest.json", name ? name : "(no name)");
    const char *kind = rtl_ar_entry_kind(e);
    if (kind) return rtl_errf(err, "manifest.json is %s, not a regular file", kind);
    la_int64_t size = archive_entry_size(e);
    if (!archive_entry_size_is_set(e) || size < 0 || size > RTL_MANIFEST_MAX)
        return rtl_errf(err, "manifest.json is larger than the %u bytes the runtime accepts", RTL_MANIFEST_MAX);
    char *json = malloc((size_t)size + 1);
    if (!json) return rtl_errf(err, "out of memory for manifest.json");
    size_t got = 0;
    la_ssize_t n;
    while (got < (size_t)size && (n = archive_read_data(a, json + got, (size_t)size - got)) > 0) got += (size_t)n;
    if (got != (size_t)size) {
        free(json);
        return rtl_errf(err, "manifest.json ends after %zu of its %lld bytes: %s", got, (long long)size,
                        archive_error_string(a) ? archive_error_string(a) : "truncated archive");
    }
    int rc = accept_manifest(j, json, got, err);
    free(json);
    return rc;
}

/* Refuses an install that cannot fit (so it fails before filling the disk). */
static int check_space(struct job *j, rtl_err *err)
{
    uint64_t need = 0;
    for (size_t i = 0; i < j->cat->nfiles; i++) need += j->cat->by_path[i]->size;
    struct statvfs vfs;
    if (fstatvfs(j->catfd, &vfs) != 0) return 0; /* unknown: let writes report it */
    uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (need > avail)
        return rtl_errf(err, "catalog %s needs %" PRIu64 " bytes but only %" PRIu64 " are free in %s/catalogs",
                        j->cat->id, need, avail, j->s->root);
    return 0;
}

/* Index in cat->by_path of the file at path, or -1. */
static long file_index(const rtl_catalog *cat, const char *path)
{
    const struct rtl_file *f = rtl_catalog_lookup(cat, path);
    if (!f) return -1;
    size_t lo = 0, hi = cat->nfiles;
    while (lo < hi) { /* by_path is sorted: find f's slot */
        size_t mid = (lo + hi) / 2;
        if (cat->by_path[mid] == f) return (long)mid;
        if (strcmp(cat->by_path[mid]->path, path) < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* One entry after the manifest. */
static int extract_entry(struct job *j, struct archive *a, struct archive_entry *e, unsigned char *buf,
                         size_t bufsize, rtl_err *err)
{
    const char *name = archive_entry_pathname(e);
    if (!name) return rtl_errf(err, "an entry has no name");
    const char *kind = rtl_ar_entry_kind(e);
    if (kind) {
        const char *target = archive_entry_hardlink(e) ? archive_entry_hardlink(e) : archive_entry_symlink(e);
        return rtl_errf(err, "entry '%s' is %s%s%s%s: catalog archives hold regular files only", name, kind,
                        target ? " to '" : "", target ? target : "", target ? "'" : "");
    }
    if (rtl_path_check(name, err) != 0) return rtl_err_prefix(err, "unsafe entry name");
    if (strcmp(name, "manifest.json") == 0) return rtl_errf(err, "entry 'manifest.json' appears twice");
    long idx = file_index(j->cat, name);
    if (idx < 0) return rtl_errf(err, "entry '%s' is not a file of the manifest", name);
    const struct rtl_file *f = j->cat->by_path[idx];
    if (j->seen[idx]) return rtl_errf(err, "entry '%s' appears twice", name);
    j->seen[idx] = 1;
    if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0 || (uint64_t)archive_entry_size(e) != f->size)
        return rtl_errf(err, "entry '%s' is %lld bytes but the manifest says %" PRIu64, name,
                        (long long)archive_entry_size(e), f->size);
    int fd = create_file(j, name, err);
    if (fd < 0) return -1;
    rtl_sha256 st;
    rtl_sha256_init(&st);
    uint64_t total = 0;
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, bufsize)) > 0) {
        total += (uint64_t)n;
        if (total > f->size) break;
        rtl_sha256_update(&st, buf, (size_t)n);
        if (write_all(fd, buf, (size_t)n) != 0) {
            close(fd);
            return rtl_errf(err, "cannot write %s: %s", name, strerror(errno));
        }
    }
    if (n < 0 || total != f->size) {
        close(fd);
        return rtl_errf(err, "entry '%s' ends after %" PRIu64 " of its %" PRIu64 " bytes: %s", name, total, f->size,
                        n < 0 && archive_error_string(a) ? archive_error_string(a) : "truncated archive");
    }
    uint8_t sha[RTL_SHA256_BYTES];
    rtl_sha256_final(&st, sha);
    if (memcmp(sha, f->sha256, sizeof sha) != 0) {
        close(fd);
        return rtl_errf(err, "entry '%s': its SHA-256 differs from the manifest", name);
    }
    if (finish_file(fd, name, err) != 0) return -1;
    j->bytes += f->size;
    RTL_CRASH_POINT("file-written");
    return 0;
}

/* fsyncs every file and folder of the staging tree, then the staging folder
 * itself (by_path is sorted, so the files of a folder are adjacent). */
static int sync_tree(struct job *j, rtl_err *err)
{
    if (fsync_at(j->stagefd, "manifest.json", O_RDONLY, err) != 0 ||
        fsync_at(j->stagefd, "catalog.minisig", O_RDONLY, err) != 0)
        return -1;
    for (size_t i = j->cat->nfiles; i-- > 0;) {
        if (fsync_at(j->stagefd, j->cat->by_path[i]->path, O_RDONLY, err) != 0) return -1;
        char dir[RTL_PATH_MAX + 1];
        snprintf(dir, sizeof dir, "%s", j->cat->by_path[i]->path);
        for (char *slash; (slash = strrchr(dir, '/'));) {
            *slash = '\0';
            /* each folder once: skip it while the previous file shares it */
            if (i > 0 && strncmp(j->cat->by_path[i - 1]->path, dir, strlen(dir)) == 0 &&
                j->cat->by_path[i - 1]->path[strlen(dir)] == '/')
                break;
            if (fsync_at(j->stagefd, dir, O_RDONLY | O_DIRECTORY, err) != 0) return -1;
        }
    }
    return rtl_fsync_fd(j->stagefd, "the staging folder", err);
}

/* The staging folder of step 3. */
static int make_staging(struct job *j, rtl_err *err)
{
    snprintf(j->staging, sizeof j->staging, ".staging-%ld", (long)getpid());
    if (rtl_remove_tree(j->catfd, j->staging, err) != 0) return -1;
    if (mkdirat(j->catfd, j->staging, 0755) != 0 ||
        (j->stagefd = openat(j->catfd, j->staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return rtl_errf(err, "cannot create the staging folder %s/catalogs/%s/%s: %s", j->s->root,
                        j->info.catalog, j->staging, strerror(errno));
    RTL_CRASH_POINT("staging-created");
    return 0;
}

/* The end of step 3: the signature beside the manifest, then every file and
 * folder of the staging tree fsynced. */
static int finish_staging(struct job *j, rtl_err *err)
{
    int fd = create_file(j, "catalog.minisig", err);
    if (fd < 0) return -1;
    if (write_all(fd, j->sig_text, j->sig_len) != 0) {
        close(fd);
        return rtl_errf(err, "cannot write catalog.minisig: %s", strerror(errno));
    }
    if (finish_file(fd, "catalog.minisig", err) != 0 || sync_tree(j, err) != 0) return -1;
    RTL_CRASH_POINT("staging-synced");
    return 0;
}

/* Step 3. */
static int extract(struct job *j, rtl_err *err)
{
    if (make_staging(j, err) != 0) return -1;
    if (lseek(j->fd, 0, SEEK_SET) != 0) return rtl_errf(err, "cannot rewind %s: %s", j->archive, strerror(errno));
    struct rtl_ar_src *src = calloc(1, sizeof *src);
    unsigned char *buf = malloc(1 << 16);
    if (!src || !buf) {
        free(src);
        free(buf);
        return rtl_errf(err, "out of memory");
    }
    src->fd = j->fd;
    int rc = -1;
    struct archive *a = rtl_ar_open(src, err);
    if (a && read_manifest(j, a, src, err) == 0 && check_space(j, err) == 0) {
        RTL_CRASH_POINT("manifest-written");
        struct archive_entry *e;
        int r;
        while ((r = rtl_ar_next(a, src, &e, err)) > 0)
            if (extract_entry(j, a, e, buf, 1 << 16, err) != 0) break;
        if (r == 0) rc = 0;
    }
    if (a) archive_read_free(a);
    for (size_t i = 0; rc == 0 && i < j->cat->nfiles; i++)
        if (!j->seen[i])
            rc = rtl_errf(err, "the archive lacks '%s', which the manifest lists", j->cat->by_path[i]->path);
    struct stat now;
    if (rc == 0 && (fstat(j->fd, &now) != 0 || now.st_dev != j->st.st_dev || now.st_ino != j->st.st_ino ||
                    now.st_size != j->st.st_size || now.st_mtim.tv_sec != j->st.st_mtim.tv_sec ||
                    now.st_mtim.tv_nsec != j->st.st_mtim.tv_nsec || now.st_ctim.tv_sec != j->st.st_ctim.tv_sec ||
                    now.st_ctim.tv_nsec != j->st.st_ctim.tv_nsec))
        rc = rtl_errf(err, "%s changed while it was being installed (written to after its signature was "
                      "verified)", j->archive);
    free(src);
    free(buf);
    if (rc != 0) return rtl_err_prefix(err, "%s", j->archive);
    return finish_staging(j, err);
}

/* Step 4: name the copy, then switch STATE to it. */
static int commit(struct job *j, char *name, size_t size, rtl_err *err)
{
    struct stat st;
    for (unsigned k = 1;; k++) {
        snprintf(name, size, "v%" PRIu64 ".%u", j->info.version, k);
        if (fstatat(j->catfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) break;
        if (k == 1000000) return rtl_errf(err, "no free name for the new copy in catalog %s", j->info.catalog);
    }
    if (renameat(j->catfd, j->staging, j->catfd, name) != 0)
        return rtl_errf(err, "cannot rename the staging folder to %s: %s", name, strerror(errno));
    j->staging[0] = '\0';
    if (rtl_fsync_fd(j->catfd, "the catalog folder", err) != 0) return -1;
    RTL_CRASH_POINT("copy-renamed");
    struct rtl_state next;
    snprintf(next.current, sizeof next.current, "%s", name);
    snprintf(next.previous, sizeof next.previous, "%s", j->state.current);
    if (rtl_state_write(j->catfd, &next, err) != 0) return -1;
    RTL_CRASH_POINT("switched");
    return 0;
}

/* Steps 2 to 5 of job j, whose signature step 1 verified; extract_fn does
 * step 3. Frees what j holds. */
static int run_job(struct job *j, int (*extract_fn)(struct job *, rtl_err *), const rtl_install_options *options,
                   rtl_installed *out, rtl_err *err)
{
    rtl_store *s = j->s;
    char name[RTL_COPY_NAME_MAX];
    int locked = 0, switched = 0, rc = -1;
    if (rtl_store_lock(s, err) != 0) goto out;
    locked = 1;
    RTL_CRASH_POINT("locked");
    if (check_version(j, options, err) != 0) goto out;
    rtl_gc(s, j->catfd, j->info.catalog);
    if (extract_fn(j, err) != 0) goto out;
    if (commit(j, name, sizeof name, err) != 0) goto out;
    switched = 1;
    rtl_log(s, RTL_LOG_INFO, "catalog %s version %" PRIu64 ": %zu files, %" PRIu64 " bytes installed as %s%s%s",
            j->info.catalog, j->info.version, j->cat->nfiles, j->bytes, name,
            j->state.current[0] ? "; previous copy " : "", j->state.current);
    rtl_gc(s, j->catfd, j->info.catalog);
    struct rtl_state now;
    rc = 0;
    if (out && (rtl_state_read(j->catfd, &now, err) != 0 || rtl_describe(s, j->catfd, j->info.catalog, &now, out, err) != 0))
        rc = rtl_err_prefix(err, "installed, but cannot describe the result");
out:
    if (rc != 0 && !switched) {
        rtl_err keep;
        if (j->stagefd >= 0) close(j->stagefd);
        j->stagefd = -1;
        if (j->catfd >= 0 && j->staging[0] && rtl_remove_tree(j->catfd, j->staging, &keep) != 0)
            rtl_log(s, RTL_LOG_WARN, "cannot remove the staging folder %s: %s", j->staging, keep.msg);
        if (j->created_catdir && unlinkat(s->catalogs_fd, j->info.catalog, AT_REMOVEDIR) != 0)
            rtl_log(s, RTL_LOG_WARN, "cannot remove the new catalog folder %s: %s", j->info.catalog, strerror(errno));
    }
    if (j->stagefd >= 0) close(j->stagefd);
    if (j->catfd >= 0) close(j->catfd);
    if (j->fd >= 0) close(j->fd);
    if (locked) rtl_store_unlock(s);
    rtl_catalog_close(j->cat);
    free(j->seen);
    free(j->sig_text);
    return rc;
}

int rtl_install(rtl_store *s, const char *archive, const char *sigpath, const rtl_install_options *options,
                rtl_installed *out, rtl_err *err)
{
    struct job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.archive = archive;
    j.fd = j.catfd = j.stagefd = -1;
    if (verify(&j, sigpath, err) != 0) {
        if (j.fd >= 0) close(j.fd);
        free(j.sig_text);
        return -1;
    }
    return run_job(&j, extract, options, out, err);
}

/* ---- installing from a manifest and its files (rtl pull) ----------------- */

/* Step 1 without the archive: the signature's trusted comment, by the
 * global signature, against the pinned keys. */
static int verify_comment(struct job *j, rtl_err *err)
{
    rtl_pubkey *keys = NULL;
    size_t nkeys = 0, k = 0;
    if (rtl_sig_parse(j->sig_text, j->sig_len, &j->sig, err) != 0) return rtl_err_prefix(err, "%s signature", j->archive);
    if (rtl_keys_load(j->s, &keys, &nkeys, err) != 0) return -1;
    rtl_keynum_hex(j->sig.keynum, j->key_id);
    while (k < nkeys && memcmp(keys[k].keynum, j->sig.keynum, RTL_KEYNUM_BYTES) != 0) k++;
    int rc = -1;
    if (k == nkeys)
        rtl_errf(err, "%s is signed by key %s, which is not pinned on this device (keys folder %s)", j->archive,
                 j->key_id, j->s->keys_dir);
    else if (rtl_sig_verify_comment(&j->sig, &keys[k], err) != 0)
        rtl_err_prefix(err, "signature check of %s failed", j->archive);
    else if (rtl_untrusted_check(&j->sig, err) != 0 || rtl_trusted_parse(j->sig.trusted, &j->info, err) != 0)
        rtl_err_prefix(err, "%s signature", j->archive);
    else
        rc = 0;
    free(keys);
    if (rc == 0 && j->info.development_key)
        rtl_log(j->s, RTL_LOG_WARN, "catalog %s is signed by a DEVELOPMENT key (%s): a production device must not "
                "pin it", j->info.catalog, j->key_id);
    return rc;
}

/* One file of the manifest from the object source, checked as an archive
 * entry is (size, SHA-256) while it is copied. */
static int copy_object(struct job *j, const struct rtl_file *f, unsigned char *buf, size_t bufsize, rtl_err *err)
{
    int in = j->open_object(j->open_user, f, err);
    if (in < 0) return -1;
    int fd = create_file(j, f->path, err);
    if (fd < 0) {
        close(in);
        return -1;
    }
    rtl_sha256 st;
    rtl_sha256_init(&st);
    uint64_t total = 0;
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, bufsize)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || (total += (uint64_t)n) > f->size) break;
        rtl_sha256_update(&st, buf, (size_t)n);
        if (write_all(fd, buf, (size_t)n) != 0) {
            rc = rtl_errf(err, "cannot write %s: %s", f->path, strerror(errno));
            break;
        }
    }
    close(in);
    uint8_t sha[RTL_SHA256_BYTES];
    rtl_sha256_final(&st, sha);
    if (rc == 0 && n < 0) rc = rtl_errf(err, "%s: read failed: %s", f->path, strerror(errno));
    else if (rc == 0 && total != f->size)
        rc = rtl_errf(err, "%s: %" PRIu64 "%s bytes where the manifest says %" PRIu64, f->path, total,
                      total > f->size ? " or more" : "", f->size);
    else if (rc == 0 && memcmp(sha, f->sha256, sizeof sha) != 0)
        rc = rtl_errf(err, "%s: its SHA-256 differs from the manifest", f->path);
    if (rc != 0) {
        close(fd);
        return -1;
    }
    if (finish_file(fd, f->path, err) != 0) return -1;
    j->bytes += f->size;
    RTL_CRASH_POINT("file-written");
    return 0;
}

/* Step 3 from a manifest in memory and the object source. */
static int extract_objects(struct job *j, rtl_err *err)
{
    if (make_staging(j, err) != 0) return -1;
    if (accept_manifest(j, j->manifest, j->manifest_len, err) != 0 || check_space(j, err) != 0)
        return rtl_err_prefix(err, "%s", j->archive);
    RTL_CRASH_POINT("manifest-written");
    unsigned char *buf = malloc(1 << 16);
    if (!buf) return rtl_errf(err, "out of memory");
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < j->cat->nfiles; i++) rc = copy_object(j, j->cat->by_path[i], buf, 1 << 16, err);
    free(buf);
    if (rc != 0) return rtl_err_prefix(err, "%s", j->archive);
    return finish_staging(j, err);
}

int rtl_install_objects(rtl_store *s, const struct rtl_objects_source *src, const rtl_install_options *options,
                        rtl_installed *out, uint64_t *bytes, rtl_err *err)
{
    struct job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.archive = src->what;
    j.fd = j.catfd = j.stagefd = -1;
    j.manifest = src->manifest;
    j.manifest_len = src->manifest_len;
    j.open_object = src->open_object;
    j.open_user = src->user;
    if (!(j.sig_text = malloc(src->sig_len + 1))) return rtl_errf(err, "out of memory");
    memcpy(j.sig_text, src->sig_text, src->sig_len);
    j.sig_len = src->sig_len;
    if (verify_comment(&j, err) != 0) {
        free(j.sig_text);
        return -1;
    }
    int rc = run_job(&j, extract_objects, options, out, err);
    if (bytes) *bytes = j.bytes;
    return rc;
}
