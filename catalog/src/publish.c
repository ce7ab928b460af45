/*
 * publish.c: the publish folder that devices pull from (`catalog publish`,
 * `make publish`), a layout any static web server can serve:
 *
 *   DEST/index.json            the latest version of every catalog, with a
 *                              serial and an expiry time (format at the top
 *                              of runtime-lite/src/pull.c, which reads it)
 *   DEST/index.json.minisig    its signature; trusted comment
 *                              "index:<channel>\tserial:<N>\texpires:<T>"
 *   DEST/<id>/<archive>        each catalog archive and its .minisig, as
 *   DEST/<id>/<archive>.minisig  catalog pack wrote them
 *   DEST/objects/<sha256>      manifest.json and every file of every
 *                              archive, named by the hex SHA-256 of its
 *                              content (shared between versions: a file that
 *                              did not change is stored once)
 *
 * Every file is written to a temporary name and renamed. The index is
 * written last (then its signature), so a device never sees an index naming
 * an archive or object that is not there yet; a device that reads the index
 * and the signature across a publish sees a mismatch, refuses, and the next
 * pull succeeds. Old archives and objects stay (devices may be mid-way
 * through them); removing them is the operator's choice.
 */
#include "cat.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INDEX_MAX (1u << 20)

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

/* Streams the current entry of a into objects/<sha256> (temporary file,
 * fsync, rename; an object already there is kept). *size and sha get the
 * entry's. */
static int store_object(struct archive *a, const char *objdir, const char *name, unsigned char *buf, size_t bufsize,
                        uint8_t sha[32], uint64_t *size, trn_err *err)
{
    char tmp[4300], final[4300], hex[65];
    snprintf(tmp, sizeof tmp, "%s/.tmp-%ld", objdir, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return trn_errf(err, "cannot create %s: %s", tmp, strerror(errno));
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    uint64_t total = 0;
    la_ssize_t n;
    int rc = 0;
    while ((n = archive_read_data(a, buf, bufsize)) > 0) {
        crypto_hash_sha256_update(&st, buf, (size_t)n);
        total += (uint64_t)n;
        if (write_all(fd, buf, (size_t)n) != 0) {
            rc = trn_errf(err, "cannot write %s: %s", tmp, strerror(errno));
            break;
        }
    }
    if (rc == 0 && n < 0) rc = trn_errf(err, "%s: cannot read it from the archive: %s", name, archive_error_string(a));
    if (rc == 0 && fsync(fd) != 0) rc = trn_errf(err, "cannot fsync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == 0) rc = trn_errf(err, "cannot write %s: %s", tmp, strerror(errno));
    crypto_hash_sha256_final(&st, sha);
    sodium_bin2hex(hex, sizeof hex, sha, 32);
    snprintf(final, sizeof final, "%s/%s", objdir, hex);
    if (rc == 0 && rename(tmp, final) != 0) rc = trn_errf(err, "cannot rename %s to %s: %s", tmp, final, strerror(errno));
    if (rc != 0) unlink(tmp);
    *size = total;
    return rc;
}

/* Every entry of the archive into objects/; the manifest's size into
 * *manifest_size (it must be the first entry, with the signed SHA-256). */
static int store_objects(const char *archive, const char *objdir, const uint8_t manifest_sha[32],
                         uint64_t *manifest_size, uint64_t *nobjects, trn_err *err)
{
    *manifest_size = 0;
    struct archive *a = archive_read_new();
    unsigned char *buf = malloc(1 << 16);
    int rc = 0;
    if (!a || !buf) rc = trn_errf(err, "out of memory");
    else if (archive_read_support_filter_zstd(a) != ARCHIVE_OK || archive_read_support_format_tar(a) != ARCHIVE_OK ||
             archive_read_open_filename(a, archive, 1 << 16) != ARCHIVE_OK)
        rc = trn_errf(err, "%s: cannot read it: %s", archive, archive_error_string(a));
    struct archive_entry *e;
    int r = 0;
    for (uint64_t i = 0; rc == 0 && (r = archive_read_next_header(a, &e)) == ARCHIVE_OK; i++) {
        const char *name = archive_entry_pathname(e);
        if (archive_entry_filetype(e) != AE_IFREG)
            rc = trn_errf(err, "%s: entry '%s' is not a regular file", archive, name ? name : "?");
        uint8_t sha[32];
        uint64_t size = 0;
        if (rc == 0) rc = store_object(a, objdir, name ? name : "?", buf, 1 << 16, sha, &size, err);
        if (rc == 0 && i == 0) {
            if (!name || strcmp(name, "manifest.json") != 0 || memcmp(sha, manifest_sha, 32) != 0)
                rc = trn_errf(err, "%s: the first entry is not the signed manifest.json", archive);
            *manifest_size = size;
        }
        (*nobjects)++;
    }
    if (rc == 0 && r != ARCHIVE_EOF) rc = trn_errf(err, "%s: %s", archive, archive_error_string(a));
    if (a) archive_read_free(a);
    free(buf);
    return rc;
}

/* Copies src to dst atomically. */
static int copy_atomic(const char *src, const char *dst, trn_err *err)
{
    int in = trn_open_input(src, err);
    if (in < 0) return -1;
    trn_atomic at;
    if (trn_atomic_open(&at, dst, err) != 0) {
        close(in);
        return -1;
    }
    char buf[1 << 16];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || fwrite(buf, 1, (size_t)n, at.f) != (size_t)n) {
            rc = trn_errf(err, "cannot copy %s to %s: %s", src, dst, strerror(errno));
            break;
        }
    }
    close(in);
    if (rc != 0) {
        trn_atomic_abort(&at);
        return -1;
    }
    return trn_atomic_commit(&at, err);
}

/* An id as rtl_id_ok checks it: ^[a-z0-9][a-z0-9_.-]{0,63}$. */
static int channel_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RTL_ID_MAX || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9'))) return 0;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}

static cJSON *new_index(const char *channel)
{
    cJSON *ix = cJSON_CreateObject();
    if (!ix) return NULL;
    cJSON_AddNumberToObject(ix, "schema", 1);
    cJSON_AddStringToObject(ix, "channel", channel);
    cJSON_AddNumberToObject(ix, "serial", 0);
    cJSON_AddNumberToObject(ix, "issued", 0);
    cJSON_AddNumberToObject(ix, "expires", 0);
    cJSON_AddItemToObject(ix, "catalogs", cJSON_CreateArray());
    return ix;
}

static void set_num(cJSON *o, const char *k, double v)
{
    cJSON *n = cJSON_CreateNumber(v);
    if (cJSON_GetObjectItemCaseSensitive(o, k)) cJSON_ReplaceItemInObjectCaseSensitive(o, k, n);
    else cJSON_AddItemToObject(o, k, n);
}

/* The catalogs array sorted by id (insertion sort: few entries). */
static void sort_catalogs(cJSON *arr)
{
    int n = cJSON_GetArraySize(arr);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            const char *a = cat_json_str(cJSON_GetArrayItem(arr, j - 1), "catalog", "");
            const char *b = cat_json_str(cJSON_GetArrayItem(arr, j), "catalog", "");
            if (strcmp(a, b) <= 0) break;
            cJSON *item = cJSON_DetachItemFromArray(arr, j);
            cJSON_InsertItemInArray(arr, j - 1, item);
        }
}

static int publish(const struct cat_publish_options *o, struct cat_publish_result *res, trn_err *err);

#define DEFAULT_MAX_VALIDITY (90 * 86400)
#define DEFAULT_MAX_SERIAL_STEP 1000000

/* The index's max_validity and max_serial_step: the options', else the
 * index's own, else the defaults; the new expiry and serial within them. */
static int index_limits(cJSON *ix, const struct cat_publish_options *o, uint64_t old, uint64_t serial, trn_err *err)
{
    double v = o->max_validity ? (double)o->max_validity : cat_json_num(ix, "max_validity", DEFAULT_MAX_VALIDITY);
    double step = o->max_serial_step ? (double)o->max_serial_step
                                     : cat_json_num(ix, "max_serial_step", DEFAULT_MAX_SERIAL_STEP);
    if (step > (double)RTL_INDEX_STEP_CAP)
        return trn_errf(err, "--max-serial-step %.0f is more than devices accept (2^32)", step);
    if (v > RTL_INDEX_VALIDITY_CAP_S)
        return trn_errf(err, "--max-validity %.0f s is more than devices accept (%llu s: 366 days)", v,
                        (unsigned long long)RTL_INDEX_VALIDITY_CAP_S);
    if ((double)o->valid_for > v)
        return trn_errf(err, "--valid-for %" PRId64 " s is more than the channel's max_validity of %.0f s: devices "
                        "would refuse the index (raise --max-validity, or publish a shorter validity)",
                        o->valid_for, v);
    if (old && serial > old && (double)(serial - old) > step && !o->allow_downgrade)
        return trn_errf(err, "serial %" PRIu64 " is more than the channel's max_serial_step of %.0f above %" PRIu64
                        ": devices would refuse the index (raise --max-serial-step)", serial, step, old);
    set_num(ix, "max_validity", v);
    set_num(ix, "max_serial_step", step);
    return 0;
}

/* Removes what a failed publish made of a DEST that did not exist before
 * (folders only: emptied ones; a file left means something is worth a look). */
static void undo_dest(const char *dest, const char *catalog)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/objects", dest);
    rmdir(p);
    if (catalog && catalog[0]) {
        snprintf(p, sizeof p, "%s/%s", dest, catalog);
        rmdir(p);
    }
    rmdir(dest);
}

int cat_publish(const struct cat_publish_options *o, struct cat_publish_result *res, trn_err *err)
{
    struct stat st;
    int fresh = stat(o->dest, &st) != 0;
    if (o->archive && stat(o->archive, &st) != 0)
        return trn_errf(err, "cannot read the archive %s: %s", o->archive, strerror(errno));
    int rc = publish(o, res, err);
    if (rc != 0 && fresh) undo_dest(o->dest, res->catalog);
    return rc;
}

static int publish(const struct cat_publish_options *o, struct cat_publish_result *res, trn_err *err)
{
    memset(res, 0, sizeof *res);
    char path[4200], sig[4200], objdir[4200], ixpath[4200], ixsig[4200], tmpix[4200], tmpsig[4200];
    rtl_pubkey pk;
    cat_seckey_pubkey(o->key, &pk);
    if (o->valid_for <= 0) return trn_errf(err, "the validity of the index must be at least 1 second");
    if (trn_mkdir_p(o->dest, err) != 0) return -1;
    snprintf(objdir, sizeof objdir, "%s/objects", o->dest);
    snprintf(ixpath, sizeof ixpath, "%s/index.json", o->dest);
    snprintf(ixsig, sizeof ixsig, "%s/index.json.minisig", o->dest);

    /* the index so far */
    cJSON *ix = NULL;
    struct stat st;
    if (stat(ixpath, &st) == 0) {
        if (!(ix = cat_json_load(ixpath, INDEX_MAX, err))) return trn_err_prefix(err, "the existing index");
        const cJSON *ch = cJSON_GetObjectItemCaseSensitive(ix, "channel");
        if (!cJSON_IsString(ch) || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(ix, "catalogs"))) {
            cJSON_Delete(ix);
            return trn_errf(err, "%s is not an index written by catalog publish", ixpath);
        }
        if (o->channel && strcmp(o->channel, ch->valuestring) != 0) {
            trn_errf(err, "%s is the index of channel '%s', not '%s': publish each channel into its own folder",
                     ixpath, ch->valuestring, o->channel);
            cJSON_Delete(ix);
            return -1;
        }
    } else if (!o->archive) {
        return trn_errf(err, "%s has no index.json to refresh: publish an archive first", o->dest);
    } else if (!(ix = new_index(o->channel ? o->channel : "stable"))) {
        return trn_errf(err, "out of memory");
    }
    snprintf(res->channel, sizeof res->channel, "%s", cat_json_str(ix, "channel", ""));
    int rc = 0;
    if (!channel_ok(res->channel)) rc = trn_errf(err, "channel '%s' is not a valid id", res->channel);

    if (rc == 0 && o->archive) {
        rtl_sig_info info;
        int has_fields = 0;
        char sigsrc[4200];
        snprintf(sigsrc, sizeof sigsrc, "%s.minisig", o->archive);
        const char *sigin = o->sig ? o->sig : sigsrc;
        if (cat_verify(o->archive, sigin, &pk, 1, &info, &has_fields, err) != 0) {
            rc = trn_err_prefix(err, "not publishing %s (it must be signed by the key that signs the index)",
                                o->archive);
        } else if (!has_fields) {
            rc = trn_errf(err, "%s: its signature carries no catalog fields (sign it with catalog pack or sign)",
                          sigin);
        }
        if (rc == 0) snprintf(res->catalog, sizeof res->catalog, "%s", info.catalog);
        uint64_t msize = 0;
        if (rc == 0 && o->objects) {
            if (trn_mkdir_p(objdir, err) != 0 ||
                store_objects(o->archive, objdir, info.manifest_sha256, &msize, &res->objects, err) != 0)
                rc = -1;
        } else if (rc == 0) {
            char *json;
            size_t len;
            rtl_err re;
            if (rtl_archive_manifest(o->archive, &json, &len, &re) != 0) rc = trn_errf(err, "%s", re.msg);
            else free(json), msize = len;
        }
        const char *base = strrchr(o->archive, '/');
        base = base ? base + 1 : o->archive;
        char rel[600], relsig[700], dir[4200];
        snprintf(rel, sizeof rel, "%s/%s", info.catalog, base);
        snprintf(relsig, sizeof relsig, "%s.minisig", rel);
        snprintf(dir, sizeof dir, "%s/%s", o->dest, info.catalog);
        snprintf(path, sizeof path, "%s/%s", o->dest, rel);
        snprintf(sig, sizeof sig, "%s/%s", o->dest, relsig);
        if (rc == 0 && stat(o->archive, &st) != 0) rc = trn_errf(err, "cannot stat %s: %s", o->archive, strerror(errno));
        if (rc == 0 && (trn_mkdir_p(dir, err) != 0 || copy_atomic(o->archive, path, err) != 0 ||
                        copy_atomic(sigin, sig, err) != 0))
            rc = -1;
        if (rc == 0) {
            cJSON *cats = cJSON_GetObjectItemCaseSensitive(ix, "catalogs"), *entry = NULL, *c;
            cJSON_ArrayForEach(c, cats) if (strcmp(cat_json_str(c, "catalog", ""), info.catalog) == 0) entry = c;
            if (entry && cat_json_num(entry, "version", 0) > (double)info.version && !o->allow_downgrade) {
                rc = trn_errf(err, "the index already offers catalog %s version %.0f, newer than %" PRIu64 " "
                              "(--allow-downgrade to publish an older one)", info.catalog,
                              cat_json_num(entry, "version", 0), info.version);
            } else {
                if (!entry) {
                    entry = cJSON_CreateObject();
                    cJSON_AddItemToArray(cats, entry);
                }
                char hex[65];
                sodium_bin2hex(hex, sizeof hex, info.manifest_sha256, 32);
                cJSON *fresh = cJSON_CreateObject();
                cJSON_AddStringToObject(fresh, "catalog", info.catalog);
                cJSON_AddNumberToObject(fresh, "version", (double)info.version);
                cJSON_AddStringToObject(fresh, "archive", rel);
                cJSON_AddStringToObject(fresh, "signature", relsig);
                cJSON_AddNumberToObject(fresh, "size", (double)st.st_size);
                cJSON_AddStringToObject(fresh, "manifest_sha256", hex);
                cJSON_AddNumberToObject(fresh, "manifest_size", (double)msize);
                cJSON_ReplaceItemViaPointer(cats, entry, fresh);
                sort_catalogs(cats);
                snprintf(res->catalog, sizeof res->catalog, "%s", info.catalog);
                res->version = info.version;
            }
        }
    }

    /* serial, times, then the index and its signature */
    uint64_t old = (uint64_t)cat_json_num(ix, "serial", 0);
    res->serial = o->serial ? o->serial : old + 1;
    if (rc == 0 && res->serial <= old && !o->allow_downgrade)
        rc = trn_errf(err, "serial %" PRIu64 " is not above the index's %" PRIu64 ": devices would refuse it as a "
                      "replay", res->serial, old);
    res->expires = o->now + o->valid_for;
    if (rc == 0) rc = index_limits(ix, o, old, res->serial, err);
    set_num(ix, "serial", (double)res->serial);
    set_num(ix, "issued", (double)o->now);
    set_num(ix, "expires", (double)res->expires);
    cat_json_sort(ix);
    char *text = rc == 0 ? cat_json_print(ix) : NULL;
    cJSON_Delete(ix);
    if (rc != 0) return -1;
    if (!text) return trn_errf(err, "out of memory");
    char trusted[256], untrusted[256];
    snprintf(trusted, sizeof trusted, "index:%s\tserial:%" PRIu64 "\texpires:%" PRId64, res->channel, res->serial,
             res->expires);
    rtl_index_untrusted_expected(res->channel, res->serial, pk.keynum, cat_seckey_is_development(o->key), untrusted,
                                 sizeof untrusted, NULL);
    snprintf(tmpix, sizeof tmpix, "%s/.index.json.tmp", o->dest);
    snprintf(tmpsig, sizeof tmpsig, "%s/.index.json.minisig.tmp", o->dest);
    rc = trn_write_file_atomic(tmpix, text, strlen(text), err);
    free(text);
    if (rc == 0) rc = cat_sign_file(o->key, tmpix, trusted, untrusted, tmpsig, err);
    if (rc == 0 && (rename(tmpix, ixpath) != 0 || rename(tmpsig, ixsig) != 0))
        rc = trn_errf(err, "cannot rename the new index into %s: %s", o->dest, strerror(errno));
    if (rc == 0) rc = trn_fsync_dir(o->dest, err);
    if (rc != 0) {
        unlink(tmpix);
        unlink(tmpsig);
    }
    return rc;
}
