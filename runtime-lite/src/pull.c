/*
 * pull.c: rtl_pull, catalogs over the air: a signed index, then per catalog
 * the signature, the manifest and only the files this device lacks (or the
 * whole archive), installed through the store's atomic switch.
 *
 * The publish folder (written by `catalog publish`, catalog/src/publish.c):
 *   index.json          {"schema": 1, "channel": ID, "serial": N,
 *                        "issued": T, "expires": T,
 *                        "max_validity": S, "max_serial_step": N,
 *                        "catalogs": [{"catalog": ID, "version": N,
 *                          "archive": PATH, "signature": PATH, "size": N,
 *                          "manifest_sha256": HEX64, "manifest_size": N}]}
 *                       (T: Unix time; PATH: below the folder, checked as an
 *                       archive entry name is; catalogs sorted by id;
 *                       max_*, optional: the most expires - issued and
 *                       serial - the last accepted serial the device takes,
 *                       at most RTL_INDEX_VALIDITY_CAP_S, RTL_INDEX_STEP_CAP)
 *   index.json.minisig  its minisign signature by a pinned key; the trusted
 *                       comment is "index:<channel>\tserial:<N>\texpires:<T>"
 *   <PATH>              each archive and its .minisig (as catalog pack wrote)
 *   objects/<sha256>    manifest.json and every file of each catalog, named
 *                       by the lower-case hex SHA-256 of its content
 *
 * What the device trusts, in order: the index only once it is of the
 * channel the device follows, its signature verifies with a key pinned for
 * that channel (rtl_keys_load_channel) and its untrusted comment is
 * minisign's or catalog publish's, no object in it names a key twice, it
 * has not expired (freeze attack: a server holding an old index back), its
 * serial is not below the highest one this device accepted for the channel
 * (replay) nor more than its serial step above, and its validity is within
 * its max_validity; a catalog's signature only
 * once its global signature verifies with a pinned key and its trusted
 * comment names the catalog, version and manifest SHA-256 the index names;
 * the manifest only with that SHA-256; each file only with the manifest's
 * size and SHA-256 (checked when fetched and again while installing). The
 * archive path is verified by rtl_install as a local archive is.
 *
 * The device's side, ROOT/pull/ (nothing in the store ever reads it):
 *   .lock                        flock'ed by a pull: one at a time
 *   channel                      "channel NAME": the channel this device follows
 *                                (--channel on the first pull, else the first
 *                                index's); an index of another is refused
 *   seen-<channel>               "serial N": the highest index serial accepted
 *   objects/<sha256>.part        a file being fetched; the next pull resumes it
 *   objects/<sha256>             a fetched file whose SHA-256 matched
 *   archives/<id>-<N>.tar.zst.part   an archive being fetched
 *   archives/<id>-<N>.tar.zst(.minisig)  a fetched archive (verified when
 *                                installed: rtl_install)
 * Fetched files are removed once their catalog is installed. A partial file
 * is never installed: it is renamed to its final name only when its size and
 * SHA-256 are right, and the installer checks them again.
 */
#include "pull.h"
#include "catalog.h"
#include "http.h"
#include "install.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define URL_MAX 4096

/* ---- hashing while downloading ---------------------------------------------
 * A second thread hashes each block as it arrives (SHA-256 for files,
 * BLAKE2b-512 for archives), so verifying a download costs little wall time
 * beyond the download itself. The receiving thread copies each block into
 * one of SH_SLOTS buffers and waits only when all are full. A download that
 * does not arrive in one piece from offset 0 (a resumed one) is hashed by
 * reading the file back instead (`broken`). */

#define SH_SLOTS 4
#define SH_SLOT_BYTES (1u << 20)

struct sh {
    int blake;                      /* 1: BLAKE2b-512, 0: SHA-256 */
    rtl_sha256 sha;
    crypto_generichash_state b2;
    uint64_t next;                  /* the offset the next block must have */
    int broken, started;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *buf[SH_SLOTS];
    size_t len[SH_SLOTS];
    unsigned head, tail;            /* filled: tail..head-1 (mod SH_SLOTS), counts */
    int done;
};

static void *sh_main(void *arg)
{
    struct sh *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (h->head == h->tail && !h->done) pthread_cond_wait(&h->cv, &h->mu);
        if (h->head == h->tail) break;
        unsigned i = h->tail % SH_SLOTS;
        pthread_mutex_unlock(&h->mu);
        if (h->blake) crypto_generichash_update(&h->b2, h->buf[i], h->len[i]);
        else rtl_sha256_update(&h->sha, h->buf[i], h->len[i]);
        pthread_mutex_lock(&h->mu);
        h->tail++;
        pthread_cond_broadcast(&h->cv);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* Starts the hashing thread over the caller's SH_SLOTS buffers of
 * SH_SLOT_BYTES (kept across files: fresh ones would cost a page fault per
 * 4 KiB); 0, or -1 when it cannot (then the file is read back at the end). */
static int sh_start(struct sh *h, int blake, unsigned char **slots)
{
    memset(h, 0, sizeof *h);
    h->blake = blake;
    if (blake) crypto_generichash_init(&h->b2, NULL, 0, RTL_HASH_BYTES);
    else rtl_sha256_init(&h->sha);
    for (int i = 0; i < SH_SLOTS; i++)
        if (!(h->buf[i] = slots ? slots[i] : NULL)) h->broken = 1;
    if (h->broken || pthread_mutex_init(&h->mu, NULL) != 0) return h->broken = 1, -1;
    if (pthread_cond_init(&h->cv, NULL) != 0 || pthread_create(&h->th, NULL, sh_main, h) != 0) {
        pthread_mutex_destroy(&h->mu);
        return h->broken = 1, -1;
    }
    h->started = 1;
    return 0;
}

static void sh_data(void *user, uint64_t off, const void *p, size_t n)
{
    struct sh *h = user;
    if (h->broken || !h->started) return;
    if (off != h->next) { /* a resume or a restart: read the file back at the end */
        h->broken = 1;
        return;
    }
    h->next += n;
    const unsigned char *q = p;
    while (n) {
        size_t k = n < SH_SLOT_BYTES ? n : SH_SLOT_BYTES;
        pthread_mutex_lock(&h->mu);
        while (h->head - h->tail == SH_SLOTS) pthread_cond_wait(&h->cv, &h->mu);
        unsigned i = h->head % SH_SLOTS;
        pthread_mutex_unlock(&h->mu);
        memcpy(h->buf[i], q, k); /* the slot is the producer's until head moves */
        h->len[i] = k;
        pthread_mutex_lock(&h->mu);
        h->head++;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
        q += k;
        n -= k;
    }
}

/* Stops the thread; the digest into out (64 bytes for BLAKE2b, 32 for
 * SHA-256) and 0, or -1 when the stream was not whole (read the file). */
static int sh_finish(struct sh *h, uint8_t *out, uint64_t *size)
{
    if (h->started) {
        pthread_mutex_lock(&h->mu);
        h->done = 1;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->th, NULL);
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
    }
    if (h->broken || !h->started) return -1;
    if (h->blake) crypto_generichash_final(&h->b2, out, RTL_HASH_BYTES);
    else rtl_sha256_final(&h->sha, out);
    if (size) *size = h->next;
    return 0;
}

/* ---- the pull ------------------------------------------------------------- */

struct pull {
    rtl_store *s;
    const char *url;
    const rtl_pull_options *o;
    struct rtl_http http;
    int dirfd, objfd, arcfd, lockfd;
    rtl_pubkey *keys;          /* those of the channel followed (rtl_keys_load_channel) */
    size_t nkeys;
    char keys_where[4200];     /* where they are, for messages */
    char channel[RTL_ID_MAX + 1]; /* the channel this device follows ("" until known) */
    int channel_stored;        /* 1: read from ROOT/pull/channel */
    unsigned char *slots[SH_SLOTS];   /* the hashing thread's buffers */
};

/* The key of keys[] with the signature's id, or NULL with err. */
static const rtl_pubkey *pinned(const struct pull *p, const rtl_signature *sig, const char *what, rtl_err *err)
{
    for (size_t k = 0; k < p->nkeys; k++)
        if (memcmp(p->keys[k].keynum, sig->keynum, RTL_KEYNUM_BYTES) == 0) return &p->keys[k];
    char id[17];
    rtl_keynum_hex(sig->keynum, id);
    rtl_errf(err, "%s is signed by key %s, which is not pinned on this device for channel %s (%s): refusing it",
             what, id, p->channel, p->keys_where);
    return NULL;
}

static int open_sub(int dirfd, const char *name, rtl_err *err)
{
    if (mkdirat(dirfd, name, 0700) != 0 && errno != EEXIST) return rtl_errf(err, "cannot create %s: %s", name, strerror(errno));
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return rtl_errf(err, "cannot open %s: %s", name, strerror(errno));
    return fd;
}

/* Writes text to name below dirfd atomically (temporary, fsync, rename,
 * fsync of the folder). */
static int write_atomic(int dirfd, const char *name, const char *text, size_t len, rtl_err *err)
{
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", name);
    int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return rtl_errf(err, "cannot create %s: %s", tmp, strerror(errno));
    ssize_t w = write(fd, text, len);
    int bad = w != (ssize_t)len || fsync(fd) != 0;
    int e = errno;
    close(fd);
    if (bad || renameat(dirfd, tmp, dirfd, name) != 0) {
        if (!bad) e = errno;
        unlinkat(dirfd, tmp, 0);
        return rtl_errf(err, "cannot write %s: %s", name, strerror(e));
    }
    return rtl_fsync_fd(dirfd, "ROOT/pull", err);
}

/* ROOT/pull/NAME, a one-line state file, into buf (NUL-terminated): 1 when
 * read, 0 when it does not exist, -1 with err when it cannot be opened or
 * read. */
static int read_state(struct pull *p, const char *name, char *buf, size_t size, rtl_err *err)
{
    buf[0] = '\0';
    int fd = openat(p->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : rtl_errf(err, "cannot open %s/pull/%s: %s", p->s->root, name, strerror(errno));
    ssize_t r = read(fd, buf, size - 1);
    int e = errno;
    close(fd);
    if (r < 0) return rtl_errf(err, "cannot read %s/pull/%s: %s", p->s->root, name, strerror(e));
    buf[r] = '\0';
    return 1;
}

/* The serial this device accepted last on CHANNEL (ROOT/pull/seen-CHANNEL)
 * into *seen: 0 when there is none. -1 with err when the file cannot be
 * read or is damaged: the replay check fails closed, since accepting any
 * serial there would let an old index through. */
static int seen_serial(struct pull *p, const char *channel, uint64_t *seen, rtl_err *err)
{
    char name[RTL_ID_MAX + 8], buf[64];
    snprintf(name, sizeof name, "seen-%s", channel);
    *seen = 0;
    int got = read_state(p, name, buf, sizeof buf, err);
    if (got <= 0) return got;
    if (sscanf(buf, "serial %" SCNu64, seen) != 1)
        return rtl_errf(err, "%s/pull/%s is damaged (it must read \"serial N\"): this device cannot tell an old index "
                        "from a new one; write the serial it accepted last into it, or remove it to accept the "
                        "next index as this channel's first", p->s->root, name);
    return 0;
}

/* The channel recorded in ROOT/pull/channel ("channel NAME") into
 * p->channel; 0 when there is none. */
static int stored_channel(struct pull *p, rtl_err *err)
{
    char buf[RTL_ID_MAX + 32], name[RTL_ID_MAX + 2] = "";
    int got = read_state(p, "channel", buf, sizeof buf, err);
    if (got <= 0) return got;
    if (sscanf(buf, "channel %65s", name) != 1 || !rtl_id_ok(name))
        return rtl_errf(err, "%s/pull/channel is damaged (it must read \"channel NAME\"): write the channel this "
                        "device follows into it, or remove it and pull with --channel NAME", p->s->root);
    snprintf(p->channel, sizeof p->channel, "%s", name);
    p->channel_stored = 1;
    return 0;
}

/* The channel an index's signature claims is the one this device follows
 * (or, on the first pull, becomes it); then the keys of that channel. */
static int follow_channel(struct pull *p, const rtl_signature *sig, const char *url, rtl_err *err)
{
    char claimed[RTL_ID_MAX + 2];
    if (!rtl_tc_field(sig->trusted, "index", claimed, sizeof claimed) || !rtl_id_ok(claimed))
        return rtl_errf(err, "%s.minisig: the trusted comment names no valid channel (it is not the signature of "
                        "an index: sign indexes with catalog publish)", url);
    const char *want = p->channel[0] ? p->channel : p->o->channel ? p->o->channel : claimed;
    if (strcmp(claimed, want) != 0)
        return rtl_errf(err, "%s is the index of channel '%s', but this device follows channel '%s' (%s): refusing "
                        "it. To move the device to channel '%s', remove %s/pull/channel and pull with --channel %s",
                        url, claimed, want, p->channel_stored ? "recorded in ROOT/pull/channel" : "--channel",
                        claimed, p->s->root, claimed);
    if (want != p->channel) memcpy(p->channel, want, strlen(want) + 1); /* an id: it fits */
    free(p->keys);
    p->keys = NULL;
    return rtl_keys_load_channel(p->s, p->channel, &p->keys, &p->nkeys, p->keys_where, sizeof p->keys_where, err);
}

/* ROOT/pull/channel: the channel of the first index this device accepted
 * (or --channel's). */
static int record_channel(struct pull *p, rtl_err *err)
{
    char line[RTL_ID_MAX + 32];
    int n = snprintf(line, sizeof line, "channel %s\n", p->channel);
    if (write_atomic(p->dirfd, "channel", line, (size_t)n, err) != 0) return -1;
    rtl_log(p->s, RTL_LOG_INFO, "this device now follows channel %s (recorded in %s/pull/channel)", p->channel,
            p->s->root);
    return 0;
}

/* Fetches and verifies the index; records its serial. */
static int fetch_index(struct pull *p, struct rtl_index *ix, rtl_err *err)
{
    char url[URL_MAX];
    char *text = NULL, *sigtext = NULL;
    size_t len, slen;
    rtl_signature sig;
    int rc = -1, r;
    if (rtl_url_join(p->url, "index.json.minisig", url, sizeof url) != 0) return rtl_errf(err, "the URL is too long");
    if ((r = rtl_http_get_mem(&p->http, url, RTL_SIG_FILE_MAX, &sigtext, &slen, err)) != 0) {
        if (r == RTL_HTTP_NOT_FOUND) rtl_errf(err, "%s: not found: is %s a publish folder (catalog publish)?", url, p->url);
        return -1;
    }
    rtl_url_join(p->url, "index.json", url, sizeof url);
    if ((r = rtl_http_get_mem(&p->http, url, RTL_INDEX_MAX, &text, &len, err)) != 0) {
        if (r == RTL_HTTP_NOT_FOUND) rtl_errf(err, "%s: not found", url);
        goto out;
    }
    uint8_t hash[RTL_HASH_BYTES];
    const rtl_pubkey *key;
    if (rtl_sig_parse(sigtext, slen, &sig, err) != 0) {
        rtl_err_prefix(err, "%s.minisig", url);
        goto out;
    }
    if (follow_channel(p, &sig, url, err) != 0 || !(key = pinned(p, &sig, url, err))) goto out;
    if (sodium_init() < 0) {
        rtl_errf(err, "libsodium failed to initialise");
        goto out;
    }
    crypto_generichash(hash, sizeof hash, (const unsigned char *)text, len, NULL, 0);
    if (rtl_sig_verify_hash(&sig, key, hash, err) != 0) {
        rtl_err_prefix(err, "%s: refusing it", url);
        goto out;
    }
    if (rtl_index_parse(text, len, ix, err) != 0) goto out;
    uint64_t seen;
    if (seen_serial(p, ix->channel, &seen, err) != 0 ||
        rtl_index_check(ix, sig.trusted, (int64_t)time(NULL), seen, err) != 0 ||
        rtl_index_untrusted_check(&sig, ix->channel, ix->serial, err) != 0 ||
        (!p->channel_stored && record_channel(p, err) != 0)) {
        rtl_err_prefix(err, "%s", url);
        rtl_index_free(ix);
        goto out;
    }
    if (ix->serial > seen) {
        char name[RTL_ID_MAX + 8], line[48];
        snprintf(name, sizeof name, "seen-%s", ix->channel);
        int n = snprintf(line, sizeof line, "serial %" PRIu64 "\n", ix->serial);
        if (write_atomic(p->dirfd, name, line, (size_t)n, err) != 0) {
            rtl_index_free(ix);
            goto out;
        }
    }
    RTL_CRASH_POINT("pull-index-accepted");
    char exp[48];
    rtl_utc(ix->expires, exp, sizeof exp);
    rtl_log(p->s, RTL_LOG_INFO, "index of channel %s, serial %" PRIu64 ", valid until %s: %zu catalog%s", ix->channel,
            ix->serial, exp, ix->n, ix->n == 1 ? "" : "s");
    rc = 0;
out:
    free(text);
    free(sigtext);
    return rc;
}

/* The version of catalog id installed here (0: none), as install sees it. */
static uint64_t installed_version(rtl_store *s, const char *id)
{
    int fd = rtl_catdir_open(s, id, 0, NULL, NULL);
    if (fd < 0) return 0;
    struct rtl_state st;
    uint64_t v = 0;
    if (rtl_state_read(fd, &st, NULL) == 0 && st.current[0]) v = rtl_copy_version(s, fd, id, st.current);
    close(fd);
    return v;
}

/* What one catalog's pull works with. */
struct one {
    struct pull *p;
    const struct rtl_index_entry *e;
    rtl_pull_item *it;
    char *sig;                 /* the catalog's .minisig text */
    size_t sig_len;
    rtl_sig_info info;
    rtl_catalog *cur;          /* the installed copy (shared lock), or NULL */
    const struct rtl_file **cur_by_sha;
    size_t ncur;
    int archive_again;         /* 1: the archive was fetched again from byte 0 */
};

static int cmp_file_sha(const void *a, const void *b)
{
    return memcmp((*(const struct rtl_file *const *)a)->sha256, (*(const struct rtl_file *const *)b)->sha256,
                  RTL_SHA256_BYTES);
}

/* A file of the installed copy with this content, or NULL. */
static const struct rtl_file *held(const struct one *c, const uint8_t sha[RTL_SHA256_BYTES], uint64_t size)
{
    size_t lo = 0, hi = c->ncur;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int d = memcmp(c->cur_by_sha[mid]->sha256, sha, RTL_SHA256_BYTES);
        if (d == 0) return c->cur_by_sha[mid]->size == size ? c->cur_by_sha[mid] : NULL;
        if (d < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* The catalog's signature: fetched, its trusted comment verified with a
 * pinned key and naming what the index names. */
static int fetch_sig(struct one *c, rtl_err *err)
{
    char url[URL_MAX];
    rtl_signature sig;
    const rtl_pubkey *key;
    if (rtl_url_join(c->p->url, c->e->signature, url, sizeof url) != 0) return rtl_errf(err, "the URL is too long");
    int r = rtl_http_get_mem(&c->p->http, url, RTL_SIG_FILE_MAX, &c->sig, &c->sig_len, err);
    if (r == RTL_HTTP_NOT_FOUND) return rtl_errf(err, "%s: not found, although the index names it", url);
    if (r != 0) return -1;
    if (rtl_sig_parse(c->sig, c->sig_len, &sig, err) != 0) return rtl_err_prefix(err, "%s", url);
    if (!(key = pinned(c->p, &sig, url, err))) return -1;
    if (rtl_sig_verify_comment(&sig, key, err) != 0 || rtl_untrusted_check(&sig, err) != 0 ||
        rtl_trusted_parse(sig.trusted, &c->info, err) != 0)
        return rtl_err_prefix(err, "%s: refusing it", url);
    if (strcmp(c->info.catalog, c->e->catalog) != 0 || c->info.version != c->e->version ||
        memcmp(c->info.manifest_sha256, c->e->manifest_sha256, RTL_SHA256_BYTES) != 0)
        return rtl_errf(err, "%s is the signature of catalog %s version %" PRIu64 ", not of the catalog %s version "
                        "%" PRIu64 " (and manifest) the index names: refusing it", url, c->info.catalog,
                        c->info.version, c->e->catalog, c->e->version);
    return 0;
}

/* Refuses a download that cannot fit beside what the folder holds. */
static int check_room(int dirfd, uint64_t need, rtl_err *err)
{
    struct statvfs v;
    if (fstatvfs(dirfd, &v) != 0) return 0;
    uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
    if (need > avail)
        return rtl_errf(err, "the download needs %" PRIu64 " bytes but only %" PRIu64 " are free in ROOT/pull", need,
                        avail);
    return 0;
}

/* A file this pull did not receive (an earlier pull fetched it): reused. */
static int count_reused(struct one *c, uint64_t size)
{
    c->it->files_reused++;
    c->it->bytes_reused += size;
    return 0;
}

/* What fetch_object_once returns beside 0, -1 and RTL_HTTP_NOT_FOUND: a
 * file resumed from a .part an earlier pull left did not hash right. */
#define RESUMED_BAD 2

static int fetch_object_once(struct one *c, const uint8_t sha[RTL_SHA256_BYTES], uint64_t size, rtl_err *err)
{
    char hex[65], rel[80], url[URL_MAX], part[80];
    rtl_hex(sha, RTL_SHA256_BYTES, hex);
    uint8_t got[RTL_SHA256_BYTES];
    uint64_t n = 0;
    int fd = openat(c->p->objfd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) { /* fetched by an earlier pull: checked again (it was not fsynced) */
        int ok = rtl_sha256_fd(fd, got, &n, NULL) == 0 && n == size && memcmp(got, sha, RTL_SHA256_BYTES) == 0;
        close(fd);
        if (ok) return count_reused(c, size);
        unlinkat(c->p->objfd, hex, 0);
    }
    snprintf(rel, sizeof rel, "objects/%s", hex);
    snprintf(part, sizeof part, "%s.part", hex);
    if (rtl_url_join(c->p->url, rel, url, sizeof url) != 0) return rtl_errf(err, "the URL is too long");
    struct stat st;
    uint64_t held = fstatat(c->p->objfd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 ? (uint64_t)st.st_size : 0;
    uint64_t before = c->p->http.received;
    struct sh hs;
    sh_start(&hs, 0, c->p->slots[0] ? c->p->slots : NULL);
    struct rtl_http_sink sink = {sh_data, &hs};
    int r = rtl_http_get_file(&c->p->http, url, c->p->objfd, part, size, &sink, err);
    /* streamed only when this pull received the whole file from offset 0
     * (a .part already complete receives nothing: it is read back) */
    int streamed = sh_finish(&hs, got, &n) == 0 && n == size;
    c->it->bytes_fetched += c->p->http.received - before;
    if (r != 0) return r;
    if (!streamed) {
        fd = openat(c->p->objfd, part, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || rtl_sha256_fd(fd, got, &n, err) != 0) {
            if (fd >= 0) close(fd);
            return rtl_errf(err, "cannot read back %s: %s", part, strerror(errno));
        }
        close(fd);
    }
    if (n != size || memcmp(got, sha, RTL_SHA256_BYTES) != 0) {
        unlinkat(c->p->objfd, part, 0);
        if (held && held <= size && !streamed) {
            rtl_log(c->p->s, RTL_LOG_INFO, "%s: the %" PRIu64 " bytes an earlier pull left in ROOT/pull/objects/%s "
                    "did not complete to the file the signed manifest names (damaged or altered on this device, or "
                    "the server's file changed since); fetching it again from byte 0", url, held, part);
            return RESUMED_BAD;
        }
        return rtl_errf(err, "%s: the file received differs from the one the signed manifest names (SHA-256 "
                        "differs): the server sent an altered or damaged file; refusing it, nothing installed", url);
    }
    /* no fsync: a file damaged by a power cut fails the check above next time */
    if (renameat(c->p->objfd, part, c->p->objfd, hex) != 0)
        return rtl_errf(err, "cannot keep %s: %s", hex, strerror(errno));
    RTL_CRASH_POINT("pull-object-kept");
    if (c->p->http.received == before) return count_reused(c, size); /* a complete .part: nothing received */
    c->it->files_fetched++;
    return 0;
}

/* objects/<hex> fetched (resumably) and its SHA-256 checked; 0, -1 or
 * RTL_HTTP_NOT_FOUND. A resumed file that does not hash right is fetched
 * once more, whole, before the server is blamed. */
static int fetch_object(struct one *c, const uint8_t sha[RTL_SHA256_BYTES], uint64_t size, rtl_err *err)
{
    int r = fetch_object_once(c, sha, size, err);
    return r == RESUMED_BAD ? fetch_object_once(c, sha, size, err) : r;
}

/* The object source of rtl_install_objects: a fetched file, else the
 * installed copy's file with that content. */
static int open_object(void *user, const struct rtl_file *f, rtl_err *err)
{
    struct one *c = user;
    char hex[65];
    rtl_hex(f->sha256, RTL_SHA256_BYTES, hex);
    int fd = openat(c->p->objfd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT) {
        if (fd < 0) rtl_errf(err, "cannot open the fetched %s: %s", hex, strerror(errno));
        return fd;
    }
    const struct rtl_file *h = held(c, f->sha256, f->size);
    if (!h) return rtl_errf(err, "%s: neither fetched nor held by the installed copy", f->path);
    fd = open(h->abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return rtl_errf(err, "cannot open the installed %s: %s", h->abs, strerror(errno));
    return fd;
}

/* The delta path: manifest and missing files from objects/, then install.
 * RTL_HTTP_NOT_FOUND when the server has no objects for this catalog. */
static int pull_objects(struct one *c, rtl_err *err)
{
    struct pull *p = c->p;
    char hex[65];
    rtl_hex(c->e->manifest_sha256, RTL_SHA256_BYTES, hex);
    int r = fetch_object(c, c->e->manifest_sha256, c->e->manifest_size, err);
    if (r != 0) return r;
    int fd = openat(p->objfd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char *json = malloc(c->e->manifest_size + 1);
    ssize_t got = fd >= 0 && json ? pread(fd, json, c->e->manifest_size, 0) : -1;
    if (fd >= 0) close(fd);
    if (got != (ssize_t)c->e->manifest_size) {
        free(json);
        return rtl_errf(err, "cannot read the fetched manifest %s", hex);
    }
    rtl_catalog *m = rtl_catalog_parse(json, (size_t)got, NULL, err);
    int rc = -1;
    if (!m) {
        rtl_err_prefix(err, "%s: the signed manifest", c->e->catalog);
        goto out;
    }
    uint64_t need = 0;
    for (size_t i = 0; i < m->nfiles; i++) {
        const struct rtl_file *f = m->by_path[i];
        if (held(c, f->sha256, f->size)) {
            c->it->files_reused++;
            c->it->bytes_reused += f->size;
        } else {
            need += f->size;
        }
    }
    if (check_room(p->objfd, need, err) != 0) goto out;
    rtl_log(p->s, RTL_LOG_INFO, "catalog %s version %" PRIu64 ": %zu files, %zu held here (%" PRIu64
            " bytes), fetching up to %" PRIu64 " bytes", c->e->catalog, c->e->version, m->nfiles, c->it->files_reused,
            c->it->bytes_reused, need);
    for (size_t i = 0; i < m->nfiles; i++) {
        const struct rtl_file *f = m->by_path[i];
        if (held(c, f->sha256, f->size)) continue;
        if ((r = fetch_object(c, f->sha256, f->size, err)) != 0) {
            if (r == RTL_HTTP_NOT_FOUND) rc = r;
            goto out;
        }
    }
    if (p->o->fetch_only) {
        c->it->fetched = 1;
        rc = 0;
        goto out;
    }
    char what[URL_MAX];
    snprintf(what, sizeof what, "catalog %s version %" PRIu64 " from %s", c->e->catalog, c->e->version, p->url);
    struct rtl_objects_source src = {.what = what, .sig_text = c->sig, .sig_len = c->sig_len, .manifest = json,
                                      .manifest_len = (size_t)got, .open_object = open_object, .user = c};
    rtl_install_options io = {.allow_downgrade = p->o->allow_downgrade};
    if (rtl_install_objects(p->s, &src, &io, NULL, NULL, err) != 0) goto out;
    c->it->installed = 1;
    rc = 0;
    /* what was fetched for this catalog is installed: drop it */
    unlinkat(p->objfd, hex, 0);
    for (size_t i = 0; i < m->nfiles; i++) {
        rtl_hex(m->by_path[i]->sha256, RTL_SHA256_BYTES, hex);
        unlinkat(p->objfd, hex, 0);
    }
out:
    rtl_catalog_close(m);
    free(json);
    return rc;
}

static int pull_archive(struct one *c, rtl_err *err);

/* An archive completed from what an earlier pull left did not verify: once
 * per pull, it is fetched again from byte 0 before the server is blamed. */
static int archive_again(struct one *c, const char *url, rtl_err *err)
{
    if (c->archive_again) return -1;
    c->archive_again = 1;
    rtl_log(c->p->s, RTL_LOG_INFO, "%s: the archive completed from what an earlier pull left in ROOT/pull/archives "
            "does not verify (damaged or altered on this device, or the server's file changed since): fetching it "
            "again from byte 0", url);
    c->it->files_fetched = 0;
    return pull_archive(c, err);
}

/* The whole archive, then rtl_install. */
static int pull_archive(struct one *c, rtl_err *err)
{
    struct pull *p = c->p;
    char name[RTL_ID_MAX + 64], part[RTL_ID_MAX + 72], signame[RTL_ID_MAX + 72], url[URL_MAX], path[URL_MAX],
        sigpath[URL_MAX];
    snprintf(name, sizeof name, "%s-%" PRIu64 ".tar.zst", c->e->catalog, c->e->version);
    snprintf(part, sizeof part, "%s.part", name);
    snprintf(signame, sizeof signame, "%s.minisig", name);
    snprintf(path, sizeof path, "%s/pull/archives/%s", p->s->root, name);
    snprintf(sigpath, sizeof sigpath, "%s/pull/archives/%s", p->s->root, signame);
    if (rtl_url_join(p->url, c->e->archive, url, sizeof url) != 0) return rtl_errf(err, "the URL is too long");
    c->it->whole_archive = 1;
    uint8_t hash[RTL_HASH_BYTES];
    int hashed = 0;
    struct stat st;
    /* bytes an earlier pull left: if they do not verify, the archive is fetched again whole */
    int left = fstatat(p->arcfd, part, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_size > 0;
    if (fstatat(p->arcfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size == c->e->size)
        left = 1;
    else {
        if (check_room(p->arcfd, c->e->size, err) != 0) return -1;
        uint64_t before = p->http.received;
        struct sh hs;
        if (p->o->fetch_only) sh_start(&hs, 1, p->slots[0] ? p->slots : NULL);
        struct rtl_http_sink sink = {sh_data, &hs};
        int r = rtl_http_get_file(&p->http, url, p->arcfd, part, c->e->size, p->o->fetch_only ? &sink : NULL, err);
        uint64_t streamed = 0;
        if (p->o->fetch_only) hashed = sh_finish(&hs, hash, &streamed) == 0 && streamed == c->e->size;
        c->it->bytes_fetched += p->http.received - before;
        if (r == RTL_HTTP_NOT_FOUND) return rtl_errf(err, "%s: not found, although the index names it", url);
        if (r != 0) return -1;
        /* no fsync: rtl_install verifies the whole archive; one that does not verify is dropped */
        if (renameat(p->arcfd, part, p->arcfd, name) != 0)
            return rtl_errf(err, "cannot keep %s: %s", name, strerror(errno));
        RTL_CRASH_POINT("pull-archive-kept");
        c->it->files_fetched++;
    }
    if (write_atomic(p->arcfd, signame, c->sig, c->sig_len, err) != 0) return -1;
    if (p->o->fetch_only) {
        /* verify now, so that a fetched archive is a verified one */
        rtl_signature sig;
        const rtl_pubkey *key;
        int rc = 0;
        if (!hashed) {
            int fd = openat(p->arcfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            rc = fd < 0 ? rtl_errf(err, "cannot open %s: %s", path, strerror(errno)) : rtl_hash_fd(fd, hash, err);
            if (fd >= 0) close(fd);
        }
        if (rc == 0 && rtl_sig_parse(c->sig, c->sig_len, &sig, err) == 0 && (key = pinned(p, &sig, url, err)) &&
            rtl_sig_verify_hash(&sig, key, hash, err) == 0) {
            c->it->fetched = 1;
            return 0;
        }
        unlinkat(p->arcfd, name, 0);
        if (left) return archive_again(c, url, err);
        return rtl_err_prefix(err, "%s: refusing it", url);
    }
    rtl_install_options io = {.allow_downgrade = p->o->allow_downgrade};
    if (rtl_install(p->s, path, sigpath, &io, NULL, err) != 0) {
        /* an archive that does not verify is dropped, so the next pull fetches it again */
        rtl_signature sig;
        const rtl_pubkey *key;
        rtl_err e2;
        if (rtl_hash_file(path, hash, &e2) != 0 || rtl_sig_parse(c->sig, c->sig_len, &sig, &e2) != 0 ||
            !(key = pinned(p, &sig, url, &e2)) || rtl_sig_verify_hash(&sig, key, hash, &e2) != 0) {
            unlinkat(p->arcfd, name, 0);
            if (left) return archive_again(c, url, err);
        }
        return -1;
    }
    c->it->installed = 1;
    unlinkat(p->arcfd, name, 0);
    unlinkat(p->arcfd, signame, 0);
    return 0;
}

static int pull_one(struct pull *p, const struct rtl_index_entry *e, rtl_pull_item *it, rtl_err *err)
{
    snprintf(it->catalog, sizeof it->catalog, "%s", e->catalog);
    it->index_version = e->version;
    it->installed_version = installed_version(p->s, e->catalog);
    it->update = e->version > it->installed_version || (p->o->allow_downgrade && e->version != it->installed_version);
    if (!it->update) {
        if (e->version < it->installed_version)
            rtl_log(p->s, RTL_LOG_WARN, "catalog %s: the index offers version %" PRIu64 ", older than the installed "
                    "version %" PRIu64 "; ignoring it", e->catalog, e->version, it->installed_version);
        else
            rtl_log(p->s, RTL_LOG_INFO, "catalog %s: version %" PRIu64 " is installed: up to date", e->catalog,
                    e->version);
        /* finish what a killed install left (as the next install would) */
        rtl_err busy;
        int fd;
        if (!p->o->check_only && rtl_store_lock(p->s, &busy) == 0) {
            if ((fd = rtl_catdir_open(p->s, e->catalog, 0, NULL, NULL)) >= 0) {
                rtl_gc(p->s, fd, e->catalog);
                close(fd);
            }
            rtl_store_unlock(p->s);
        }
        return 0;
    }
    if (p->o->check_only) return 0;
    struct one c = {.p = p, .e = e, .it = it};
    int rc = fetch_sig(&c, err);
    if (rc == 0 && it->installed_version) {
        rtl_err ignore;
        c.cur = rtl_catalog_open(p->s, e->catalog, &ignore); /* a damaged copy lends nothing */
        if (c.cur && c.cur->nfiles && (c.cur_by_sha = malloc(c.cur->nfiles * sizeof *c.cur_by_sha))) {
            for (size_t i = 0; i < c.cur->nfiles; i++) c.cur_by_sha[i] = c.cur->by_path[i];
            c.ncur = c.cur->nfiles;
            qsort(c.cur_by_sha, c.ncur, sizeof *c.cur_by_sha, cmp_file_sha);
        }
    }
    if (rc == 0 && !p->o->whole_archive) {
        rc = pull_objects(&c, err);
        if (rc == RTL_HTTP_NOT_FOUND) {
            rtl_log(p->s, RTL_LOG_INFO, "catalog %s: the server has no per-file layout (%s); fetching the whole "
                    "archive", e->catalog, err->msg);
            it->files_fetched = it->files_reused = 0;
            it->bytes_reused = 0;
        }
    }
    if ((rc == 0 && p->o->whole_archive) || rc == RTL_HTTP_NOT_FOUND) rc = pull_archive(&c, err);
    if (rc != 0) rtl_err_prefix(err, "catalog %s", e->catalog);
    else if (it->installed)
        rtl_log(p->s, RTL_LOG_INFO, "catalog %s: version %" PRIu64 " installed (%" PRIu64 " bytes fetched, %" PRIu64
                " reused)", e->catalog, e->version, it->bytes_fetched, it->bytes_reused);
    free(c.cur_by_sha);
    rtl_catalog_close(c.cur);
    free(c.sig);
    return rc;
}

void rtl_pull_result_free(rtl_pull_result *r)
{
    if (!r) return;
    free(r->items);
    r->items = NULL;
    r->n = 0;
}

int rtl_pull(rtl_store *s, const char *url, const rtl_pull_options *options, rtl_pull_result *out, rtl_err *err)
{
    rtl_pull_options defaults = {0};
    const rtl_pull_options *o = options ? options : &defaults;
    rtl_pull_result local;
    rtl_pull_result *res = out ? out : &local;
    memset(res, 0, sizeof *res);
    if (!url || !(strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0 || strncmp(url, "file://", 7) == 0))
        return rtl_errf(err, "'%s' is not an http://, https:// or file:// URL of a publish folder", url ? url : "");
    if (strlen(url) > URL_MAX - 400) return rtl_errf(err, "the URL is longer than %d bytes", URL_MAX - 400);
    if (o->catalog && !rtl_id_ok(o->catalog)) return rtl_errf(err, "'%s' is not a valid catalog id", o->catalog);
    if (o->channel && !rtl_id_ok(o->channel)) return rtl_errf(err, "'%s' is not a valid channel id", o->channel);
    struct pull p = {.s = s, .url = url, .o = o, .dirfd = -1, .objfd = -1, .arcfd = -1, .lockfd = -1};
    struct rtl_index ix = {0};
    int rc = -1;
    if ((p.dirfd = open_sub(s->root_fd, "pull", err)) < 0) {
        rtl_err_prefix(err, "%s", s->root);
        goto out;
    }
    p.lockfd = openat(p.dirfd, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (p.lockfd < 0 || flock(p.lockfd, LOCK_EX | LOCK_NB) != 0) {
        rtl_errf(err, "another rtl pull is running on %s (it holds %s/pull/.lock); try again when it has finished",
                 s->root, s->root);
        goto out;
    }
    if ((p.objfd = open_sub(p.dirfd, "objects", err)) < 0 || (p.arcfd = open_sub(p.dirfd, "archives", err)) < 0 ||
        stored_channel(&p, err) != 0 || rtl_keys_load(s, &p.keys, &p.nkeys, err) != 0 || /* none: fetch nothing */
        rtl_http_open(&p.http, s, o, err) != 0)
        goto out;
    if (p.channel_stored && o->channel && strcmp(o->channel, p.channel) != 0) {
        rtl_errf(err, "--channel %s, but this device follows channel '%s' (recorded in %s/pull/channel): to move "
                 "it to channel '%s', remove that file and pull again with --channel %s", o->channel, p.channel,
                 s->root, o->channel, o->channel);
        goto out;
    }
    for (int i = 0; i < SH_SLOTS && (i == 0 || p.slots[i - 1]); i++) p.slots[i] = malloc(SH_SLOT_BYTES);
    if (!p.slots[SH_SLOTS - 1]) /* without them, downloads are read back to be hashed */
        for (int i = 0; i < SH_SLOTS; i++) free(p.slots[i]), p.slots[i] = NULL;
    if (fetch_index(&p, &ix, err) != 0) goto out;
    snprintf(res->channel, sizeof res->channel, "%s", ix.channel);
    res->serial = ix.serial;
    res->expires = ix.expires;
    if (!(res->items = calloc(ix.n ? ix.n : 1, sizeof *res->items))) {
        rtl_errf(err, "out of memory");
        goto out;
    }
    rc = 0;
    int found = 0;
    for (size_t i = 0; i < ix.n; i++) {
        if (o->catalog && strcmp(o->catalog, ix.entries[i].catalog) != 0) continue;
        found = 1;
        rtl_err one;
        rtl_pull_item *it = &res->items[res->n++];
        if (pull_one(&p, &ix.entries[i], it, &one) != 0) {
            /* the first failure is err's (the caller prints it); later ones are logged */
            if (rc == 0 && err) *err = one;
            else rtl_log(s, RTL_LOG_WARN, "%s", one.msg);
            rc = -1;
        }
    }
    if (o->catalog && !found)
        rc = rtl_errf(err, "the index of channel %s at %s has no catalog '%s'", ix.channel, url, o->catalog);
out:
    res->bytes_fetched = p.http.received;
    res->retries = p.http.retries;
    rtl_http_close(&p.http);
    rtl_index_free(&ix);
    for (int i = 0; i < SH_SLOTS; i++) free(p.slots[i]);
    free(p.keys);
    if (p.objfd >= 0) close(p.objfd);
    if (p.arcfd >= 0) close(p.arcfd);
    if (p.lockfd >= 0) close(p.lockfd);
    if (p.dirfd >= 0) close(p.dirfd);
    if (!out) rtl_pull_result_free(&local);
    return rc;
}
