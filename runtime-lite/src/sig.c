/*
 * sig.c: minisign public keys and detached signatures: parse and verify.
 *
 * Formats (as minisign writes them; binary blobs are base64 with the standard
 * alphabet and '=' padding, one per line; lines end in "\n", "\r\n" is read):
 *
 *   public key file (.pub)
 *     untrusted comment: <text>
 *     base64( "Ed" | keynum[8] | ed25519_pk[32] )                  42 bytes
 *
 *   signature file (.minisig)
 *     untrusted comment: <text>                    not signed
 *     base64( "ED" | keynum[8] | sig[64] )                          74 bytes
 *         sig = Ed25519(sk, BLAKE2b-512(file))
 *     trusted comment: <text>                      one line, printable, tab ok
 *     base64( global_sig[64] )
 *         global_sig = Ed25519(sk, sig[64] || trusted comment text)
 *
 * keynum: 8 random bytes naming the key pair, shown as the 16 upper-case hex
 * digits of its little-endian value. Algorithm "Ed" (legacy: Ed25519 over the
 * whole file, which must then be read whole) is refused: catalogs are large
 * and are hashed as a stream. The secret key format is written and read by
 * the catalog tool only (catalog/src/keys.c): devices never hold one.
 */
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define UNTRUSTED_PREFIX "untrusted comment: "
#define TRUSTED_PREFIX "trusted comment: "
#define MINISIGN_DEFAULT_COMMENT "signature from minisign secret key"
#define PUBKEY_BLOB 42
#define SIG_BLOB 74
#define KEY_FILE_MAX 4096

_Static_assert(sizeof(((rtl_pubkey *)0)->keynum) + sizeof(((rtl_pubkey *)0)->pk) + 2 == PUBKEY_BLOB,
               "public key blob layout");
_Static_assert(RTL_SIG_BYTES == crypto_sign_BYTES && RTL_PUBKEY_BYTES == crypto_sign_PUBLICKEYBYTES,
               "Ed25519 sizes");
_Static_assert(RTL_HASH_BYTES == crypto_generichash_BYTES_MAX, "BLAKE2b-512");

/* Splits text[0..len) into at most `max` lines (without their "\n" or
 * "\r\n"), NUL-terminated in place of the newline. Returns the number of
 * lines, or -1 when there are more (a last line without "\n" counts). */
static int split_lines(char *text, size_t len, char **lines, size_t *lens, int max)
{
    int n = 0;
    size_t start = 0;
    while (start < len) {
        size_t end = start;
        while (end < len && text[end] != '\n') end++;
        if (n == max) return -1;
        size_t l = end - start;
        if (l > 0 && text[start + l - 1] == '\r') l--;
        text[start + l] = '\0';
        lines[n] = text + start;
        lens[n] = l;
        n++;
        start = end + 1;
    }
    return n;
}

/* Decodes exactly `want` bytes of canonical base64 (libsodium refuses stray
 * characters and non-zero padding bits, so one spelling per blob). */
static int b64_exact(const char *s, size_t len, uint8_t *out, size_t want)
{
    /* libsodium's decoder reads a char with bit 7 set as the same char
     * without it; refuse such bytes first so every byte counts */
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
              c == '='))
            return -1;
    }
    size_t got = 0;
    const char *end = NULL;
    if (sodium_base642bin(out, want, s, len, NULL, &got, &end, sodium_base64_VARIANT_ORIGINAL) != 0)
        return -1;
    return (got == want && end == s + len) ? 0 : -1;
}

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* One-line printable text: no control characters but tab. */
static int printable(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f) return 0;
    }
    return 1;
}

void rtl_keynum_hex(const uint8_t keynum[RTL_KEYNUM_BYTES], char out[17])
{
    uint64_t v = 0;
    for (int i = RTL_KEYNUM_BYTES - 1; i >= 0; i--) v = v << 8 | keynum[i];
    snprintf(out, 17, "%016" PRIX64, v);
}

static int pubkey_blob(const char *b64, size_t len, rtl_pubkey *out, rtl_err *err)
{
    uint8_t blob[PUBKEY_BLOB];
    if (b64_exact(b64, len, blob, sizeof blob) != 0)
        return rtl_errf(err, "the public key is not valid base64 of %d bytes; expected the second "
                        "line of a minisign .pub file", PUBKEY_BLOB);
    if (memcmp(blob, "Ed", 2) != 0)
        return rtl_errf(err, "the public key is for algorithm '%c%c', not Ed25519 ('Ed')",
                        blob[0] >= 0x20 && blob[0] < 0x7f ? blob[0] : '?',
                        blob[1] >= 0x20 && blob[1] < 0x7f ? blob[1] : '?');
    memcpy(out->keynum, blob + 2, RTL_KEYNUM_BYTES);
    memcpy(out->pk, blob + 2 + RTL_KEYNUM_BYTES, RTL_PUBKEY_BYTES);
    return 0;
}

int rtl_pubkey_parse(const char *text, size_t len, rtl_pubkey *out, rtl_err *err)
{
    if (len > KEY_FILE_MAX) return rtl_errf(err, "public key: %zu bytes is too long for a key", len);
    if (memchr(text, '\0', len)) return rtl_errf(err, "public key: contains a NUL byte");
    char buf[KEY_FILE_MAX + 1];
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *lines[2];
    size_t lens[2];
    int n = split_lines(buf, len, lines, lens, 2);
    if (n < 1) return rtl_errf(err, "public key: empty, or more than two lines");
    if (n == 1) return pubkey_blob(lines[0], lens[0], out, err);
    if (!has_prefix(lines[0], UNTRUSTED_PREFIX))
        return rtl_errf(err, "public key: line 1 does not start with \"" UNTRUSTED_PREFIX "\"");
    if (pubkey_blob(lines[1], lens[1], out, err) != 0) return rtl_err_prefix(err, "public key: line 2");
    return 0;
}

int rtl_read_small(const char *path, size_t max, char **buf, size_t *len, rtl_err *err)
{
    trn_err e;
    if (trn_read_file(path, max, buf, len, &e) != 0) return rtl_err_from_trn(err, &e);
    return 0;
}

int rtl_pubkey_load(const char *path, rtl_pubkey *out, rtl_err *err)
{
    char *buf;
    size_t len;
    if (rtl_read_small(path, KEY_FILE_MAX, &buf, &len, err) != 0) return -1;
    int rc = rtl_pubkey_parse(buf, len, out, err);
    free(buf);
    if (rc != 0) return rtl_err_prefix(err, "%s", path);
    return 0;
}

int rtl_sig_parse(const char *text, size_t len, rtl_signature *out, rtl_err *err)
{
    memset(out, 0, sizeof *out);
    if (len > RTL_SIG_FILE_MAX) return rtl_errf(err, "signature: %zu bytes is too long for a signature file", len);
    if (memchr(text, '\0', len)) return rtl_errf(err, "signature: contains a NUL byte");
    char *buf = malloc(len + 1);
    if (!buf) return rtl_errf(err, "signature: out of memory");
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *lines[4];
    size_t lens[4];
    int rc = -1;
    int n = split_lines(buf, len, lines, lens, 4);
    uint8_t blob[SIG_BLOB];
    if (n < 0) {
        rtl_errf(err, "signature: text after line 4 (a .minisig file has exactly four lines)");
    } else if (n < 4) {
        rtl_errf(err, "signature: only %d lines (a .minisig file has four)", n);
    } else if (!has_prefix(lines[0], UNTRUSTED_PREFIX)) {
        rtl_errf(err, "signature: line 1 does not start with \"" UNTRUSTED_PREFIX "\"");
    } else if (lens[0] - strlen(UNTRUSTED_PREFIX) >= RTL_COMMENT_MAX || !printable(lines[0], lens[0])) {
        rtl_errf(err, "signature: line 1: the untrusted comment is too long or not printable");
    } else if (b64_exact(lines[1], lens[1], blob, sizeof blob) != 0) {
        rtl_errf(err, "signature: line 2 is not valid base64 of %d bytes", SIG_BLOB);
    } else if (memcmp(blob, "Ed", 2) == 0) {
        rtl_errf(err, "signature: line 2: legacy algorithm 'Ed' (whole file); sign with a current "
                 "minisign (prehashed 'ED', the default) or with catalog sign");
    } else if (memcmp(blob, "ED", 2) != 0) {
        rtl_errf(err, "signature: line 2: unknown signature algorithm (expected 'ED')");
    } else if (!has_prefix(lines[2], TRUSTED_PREFIX)) {
        rtl_errf(err, "signature: line 3 does not start with \"" TRUSTED_PREFIX "\"");
    } else if (lens[2] - strlen(TRUSTED_PREFIX) >= RTL_TRUSTED_MAX) {
        rtl_errf(err, "signature: line 3: the trusted comment is longer than %d bytes", RTL_TRUSTED_MAX - 1);
    } else if (!printable(lines[2], lens[2])) {
        rtl_errf(err, "signature: line 3: the trusted comment contains control characters");
    } else if (b64_exact(lines[3], lens[3], out->global_sig, RTL_SIG_BYTES) != 0) {
        rtl_errf(err, "signature: line 4 is not valid base64 of %d bytes (the global signature)",
                 RTL_SIG_BYTES);
    } else {
        memcpy(out->keynum, blob + 2, RTL_KEYNUM_BYTES);
        memcpy(out->sig, blob + 2 + RTL_KEYNUM_BYTES, RTL_SIG_BYTES);
        snprintf(out->untrusted, sizeof out->untrusted, "%s", lines[0] + strlen(UNTRUSTED_PREFIX));
        snprintf(out->trusted, sizeof out->trusted, "%s", lines[2] + strlen(TRUSTED_PREFIX));
        rc = 0;
    }
    free(buf);
    return rc;
}

int rtl_sig_load(const char *path, rtl_signature *out, rtl_err *err)
{
    char *buf;
    size_t len;
    if (rtl_read_small(path, RTL_SIG_FILE_MAX, &buf, &len, err) != 0) return -1;
    int rc = rtl_sig_parse(buf, len, out, err);
    free(buf);
    if (rc != 0) return rtl_err_prefix(err, "%s", path);
    return 0;
}

enum digest { DIGEST_BLAKE2B, DIGEST_SHA256, DIGEST_COUNT };

/* Streams fd from its offset to EOF through one of the two digests. */
static int digest_fd(int fd, enum digest kind, uint8_t *out, uint64_t *size, rtl_err *err)
{
    if (sodium_init() < 0) return rtl_errf(err, "libsodium failed to initialise");
    crypto_generichash_state b2;
    rtl_sha256 sha;
    if (kind == DIGEST_BLAKE2B) crypto_generichash_init(&b2, NULL, 0, RTL_HASH_BYTES);
    else rtl_sha256_init(&sha);
    unsigned char buf[1 << 16];
    uint64_t off = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return rtl_errf(err, "read failed at byte offset %" PRIu64 ": %s", off, strerror(errno));
        if (r == 0) break;
        if (kind == DIGEST_BLAKE2B) crypto_generichash_update(&b2, buf, (size_t)r);
        else rtl_sha256_update(&sha, buf, (size_t)r);
        off += (uint64_t)r;
    }
    if (kind == DIGEST_BLAKE2B) crypto_generichash_final(&b2, out, RTL_HASH_BYTES);
    else rtl_sha256_final(&sha, out);
    if (size) *size = off;
    return 0;
}

static int digest_file(const char *path, enum digest kind, uint8_t *out, uint64_t *size, rtl_err *err)
{
    trn_err te;
    int fd = trn_open_input(path, &te);
    if (fd < 0) return rtl_err_from_trn(err, &te);
    struct stat st;
    int rc = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ? rtl_errf(err, "not a regular file")
                                                         : digest_fd(fd, kind, out, size, err);
    close(fd);
    if (rc != 0) return rtl_err_prefix(err, "%s", path);
    return 0;
}

int rtl_hash_fd(int fd, uint8_t out[RTL_HASH_BYTES], rtl_err *err)
{
    return digest_fd(fd, DIGEST_BLAKE2B, out, NULL, err);
}

int rtl_hash_file(const char *path, uint8_t out[RTL_HASH_BYTES], rtl_err *err)
{
    return digest_file(path, DIGEST_BLAKE2B, out, NULL, err);
}

int rtl_sha256_fd(int fd, uint8_t out[RTL_SHA256_BYTES], uint64_t *size, rtl_err *err)
{
    return digest_fd(fd, DIGEST_SHA256, out, size, err);
}

int rtl_sha256_file(const char *path, uint8_t out[RTL_SHA256_BYTES], uint64_t *size, rtl_err *err)
{
    return digest_file(path, DIGEST_SHA256, out, size, err);
}

int rtl_sig_verify_comment(const rtl_signature *sig, const rtl_pubkey *key, rtl_err *err)
{
    if (sodium_init() < 0) return rtl_errf(err, "libsodium failed to initialise");
    char a[17], b[17];
    if (memcmp(sig->keynum, key->keynum, RTL_KEYNUM_BYTES) != 0) {
        rtl_keynum_hex(sig->keynum, a);
        rtl_keynum_hex(key->keynum, b);
        return rtl_errf(err, "the signature was made by key %s but the public key is %s", a, b);
    }
    size_t tlen = strnlen(sig->trusted, sizeof sig->trusted);
    unsigned char msg[RTL_SIG_BYTES + RTL_TRUSTED_MAX];
    memcpy(msg, sig->sig, RTL_SIG_BYTES);
    memcpy(msg + RTL_SIG_BYTES, sig->trusted, tlen);
    if (crypto_sign_verify_detached(sig->global_sig, msg, RTL_SIG_BYTES + tlen, key->pk) != 0)
        return rtl_errf(err, "the trusted comment does not match the global signature (the "
                        "signature file was modified)");
    return 0;
}

int rtl_sig_verify_hash(const rtl_signature *sig, const rtl_pubkey *key,
                        const uint8_t hash[RTL_HASH_BYTES], rtl_err *err)
{
    if (sodium_init() < 0) return rtl_errf(err, "libsodium failed to initialise");
    if (memcmp(sig->keynum, key->keynum, RTL_KEYNUM_BYTES) != 0) return rtl_sig_verify_comment(sig, key, err);
    if (crypto_sign_verify_detached(sig->sig, hash, RTL_HASH_BYTES, key->pk) != 0)
        return rtl_errf(err, "the file does not match the signature (the file or the signature "
                        "was modified)");
    return rtl_sig_verify_comment(sig, key, err);
}

int rtl_sig_verify_file(const rtl_signature *sig, const rtl_pubkey *keys, size_t n,
                        const char *path, size_t *used, rtl_err *err)
{
    size_t k = 0;
    while (k < n && memcmp(keys[k].keynum, sig->keynum, RTL_KEYNUM_BYTES) != 0) k++;
    if (k == n) {
        char id[17], list[RTL_ERR_MAX / 2] = "";
        rtl_keynum_hex(sig->keynum, id);
        for (size_t i = 0; i < n && strlen(list) + 20 < sizeof list; i++) {
            char h[17];
            rtl_keynum_hex(keys[i].keynum, h);
            strcat(list, i ? ", " : "");
            strcat(list, h);
        }
        return rtl_errf(err, "%s is signed by key %s, which is not a trusted key (trusted: %s)",
                        path, id, n ? list : "none");
    }
    uint8_t hash[RTL_HASH_BYTES];
    if (rtl_hash_file(path, hash, err) != 0) return -1;
    if (rtl_sig_verify_hash(sig, &keys[k], hash, err) != 0) return rtl_err_prefix(err, "%s", path);
    if (used) *used = k;
    return 0;
}

/* ---- the catalog's trusted comment ------------------------------------- */

enum tc_field { TC_CATALOG, TC_VERSION, TC_MODEL, TC_MANIFEST, TC_TIMESTAMP, TC_FILE, TC_KEY, TC_COUNT };
static const char *const tc_names[] = {"catalog", "version", "model", "manifest-sha256",
                                       "timestamp", "file", "key"};
_Static_assert(sizeof tc_names / sizeof tc_names[0] == TC_COUNT, "one name per trusted field");

/* Parses a decimal integer of at most 19 digits without sign or leading zero. */
static int parse_u63(const char *s, size_t len, uint64_t *out)
{
    if (len == 0 || len > 18 || (len > 1 && s[0] == '0')) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int rtl_trusted_parse(const char *trusted, rtl_sig_info *out, rtl_err *err)
{
    memset(out, 0, sizeof *out);
    out->timestamp = -1;
    int seen[TC_COUNT] = {0};
    const char *p = trusted;
    while (*p) {
        const char *end = strchr(p, '\t');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        if (colon) {
            size_t klen = (size_t)(colon - p), vlen = len - klen - 1;
            const char *v = colon + 1;
            char val[256];
            int f = 0;
            while (f < TC_COUNT && !(strlen(tc_names[f]) == klen && !strncmp(p, tc_names[f], klen))) f++;
            if (f < TC_COUNT) {
                if (seen[f]++) return rtl_errf(err, "trusted comment: field '%s' appears twice", tc_names[f]);
                if (vlen >= sizeof val)
                    return rtl_errf(err, "trusted comment: field '%s' is too long", tc_names[f]);
                memcpy(val, v, vlen);
                val[vlen] = '\0';
                uint64_t u;
                switch ((enum tc_field)f) {
                case TC_CATALOG:
                case TC_MODEL:
                    if (!rtl_id_ok(val))
                        return rtl_errf(err, "trusted comment: %s '%s' is not a valid id "
                                        "([a-z0-9][a-z0-9_.-]*, at most %d characters)",
                                        tc_names[f], val, RTL_ID_MAX);
                    strcpy(f == TC_CATALOG ? out->catalog : out->model, val);
                    break;
                case TC_VERSION:
                    if (parse_u63(val, vlen, &out->version) != 0)
                        return rtl_errf(err, "trusted comment: version '%s' is not a decimal integer", val);
                    break;
                case TC_MANIFEST:
                    if (rtl_unhex(val, out->manifest_sha256, RTL_SHA256_BYTES) != 0)
                        return rtl_errf(err, "trusted comment: manifest-sha256 is not 64 lower-case hex digits");
                    break;
                case TC_TIMESTAMP:
                    if (parse_u63(val, vlen, &u) != 0)
                        return rtl_errf(err, "trusted comment: timestamp '%s' is not a decimal integer", val);
                    out->timestamp = (int64_t)u;
                    break;
                case TC_FILE:
                    if (vlen >= sizeof out->file) return rtl_errf(err, "trusted comment: file name too long");
                    strcpy(out->file, val);
                    break;
                case TC_KEY:
                    if (strcmp(val, "development") != 0)
                        return rtl_errf(err, "trusted comment: unknown key kind '%s'", val);
                    out->development_key = 1;
                    break;
                case TC_COUNT:
                    break;
                }
            }
        }
        p += len;
        if (*p == '\t') p++;
    }
    const char *missing[3];
    int nm = 0;
    if (!seen[TC_CATALOG]) missing[nm++] = "catalog";
    if (!seen[TC_VERSION]) missing[nm++] = "version";
    if (!seen[TC_MANIFEST]) missing[nm++] = "manifest-sha256";
    if (nm)
        return rtl_errf(err, "trusted comment has no %s%s%s%s%s field%s: it was not written by "
                        "catalog sign (sign with catalog sign, or pass minisign -t with these fields)",
                        missing[0], nm > 1 ? (nm > 2 ? ", " : " or ") : "", nm > 1 ? missing[1] : "",
                        nm > 2 ? " or " : "", nm > 2 ? missing[2] : "", nm > 1 ? "s" : "");
    return 0;
}

int rtl_trusted_format(const rtl_sig_info *info, char *out, size_t size, rtl_err *err)
{
    if (!rtl_id_ok(info->catalog) || (info->model[0] && !rtl_id_ok(info->model)))
        return rtl_errf(err, "trusted comment: catalog '%s' or model '%s' is not a valid id",
                        info->catalog, info->model);
    if (strpbrk(info->file, "\t\r\n"))
        return rtl_errf(err, "trusted comment: the file name contains a tab or newline");
    char sha[65], ts[32] = "";
    rtl_sha256_hex(info->manifest_sha256, sha);
    if (info->timestamp >= 0) snprintf(ts, sizeof ts, "timestamp:%" PRId64 "\t", info->timestamp);
    int n = snprintf(out, size, "%s%s%s%shashed\tcatalog:%s\tversion:%" PRIu64 "%s%s\tmanifest-sha256:%s%s",
                     ts, info->file[0] ? "file:" : "", info->file, info->file[0] ? "\t" : "",
                     info->catalog, info->version, info->model[0] ? "\tmodel:" : "", info->model, sha,
                     info->development_key ? "\tkey:development" : "");
    if (n < 0 || (size_t)n >= size) return rtl_errf(err, "trusted comment: longer than %zu bytes", size);
    return 0;
}

int rtl_untrusted_expected(const rtl_sig_info *info, const uint8_t keynum[RTL_KEYNUM_BYTES],
                           char *out, size_t size, rtl_err *err)
{
    char id[17];
    rtl_keynum_hex(keynum, id);
    int n = snprintf(out, size, "signature of catalog %s version %" PRIu64 " by %skey %s%s", info->catalog,
                     info->version, info->development_key ? "DEVELOPMENT " : "", id,
                     info->development_key ? " - devices must not trust it" : "");
    if (n < 0 || (size_t)n >= size) return rtl_errf(err, "untrusted comment: longer than %zu bytes", size);
    return 0;
}

int rtl_untrusted_check(const rtl_signature *sig, rtl_err *err)
{
    if (strcmp(sig->untrusted, MINISIGN_DEFAULT_COMMENT) == 0) return 0;
    rtl_sig_info info;
    char want[RTL_COMMENT_MAX];
    if (rtl_trusted_parse(sig->trusted, &info, NULL) != 0 ||
        rtl_untrusted_expected(&info, sig->keynum, want, sizeof want, NULL) != 0)
        return rtl_errf(err, "the untrusted comment '%.200s' is not minisign's default and the trusted "
                        "comment has no catalog fields to check it against", sig->untrusted);
    if (strcmp(sig->untrusted, want) != 0)
        return rtl_errf(err, "the untrusted comment '%.200s' does not match the signed fields (expected "
                        "'%.200s'): the signature file was edited", sig->untrusted, want);
    return 0;
}

int rtl_index_untrusted_expected(const char *channel, uint64_t serial, const uint8_t keynum[RTL_KEYNUM_BYTES],
                                 int development_key, char *out, size_t size, rtl_err *err)
{
    char id[17];
    rtl_keynum_hex(keynum, id);
    int n = snprintf(out, size, "signature of index %s serial %" PRIu64 " by %skey %s", channel, serial,
                     development_key ? "DEVELOPMENT " : "", id);
    if (n < 0 || (size_t)n >= size) return rtl_errf(err, "untrusted comment: longer than %zu bytes", size);
    return 0;
}

int rtl_index_untrusted_check(const rtl_signature *sig, const char *channel, uint64_t serial, rtl_err *err)
{
    if (strcmp(sig->untrusted, MINISIGN_DEFAULT_COMMENT) == 0) return 0;
    char want[2][RTL_COMMENT_MAX];
    for (int dev = 0; dev < 2; dev++) {
        if (rtl_index_untrusted_expected(channel, serial, sig->keynum, dev, want[dev], sizeof want[dev], err) != 0)
            return -1;
        if (strcmp(sig->untrusted, want[dev]) == 0) return 0;
    }
    return rtl_errf(err, "the untrusted comment '%.200s' does not match the signed fields (expected '%.200s'): the "
                    "signature file was edited", sig->untrusted, want[0]);
}
