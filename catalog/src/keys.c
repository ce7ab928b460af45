/*
 * keys.c: minisign key pairs: generation and secret key files.
 *
 * Secret key file (as minisign writes it; only the build side ever holds one):
 *   untrusted comment: <text>
 *   base64( SeckeyStruct )                                         158 bytes
 *     "Ed" | kdf[2] | "B2" | salt[32] | opslimit_le[8] | memlimit_le[8] |
 *     keynum[8] | sk[64] | chk[32]
 *   kdf is "Sc" (scrypt) or "\0\0" (none). With "Sc", the 104 bytes
 *   keynum|sk|chk are XORed with scrypt-salsa208-sha256(passphrase, salt,
 *   opslimit, memlimit) output of the same length.
 *   sk is the Ed25519 secret key: 32-byte seed then the 32-byte public key.
 *   chk = BLAKE2b-256("Ed" | keynum | sk); minisign leaves it zero in
 *   unencrypted keys, so zero is accepted there (and sk is checked against
 *   its seed instead); we always write it.
 * Public key file: see runtime-lite/src/sig.c.
 *
 * Key material comes from libsodium's system CSPRNG (randombytes_buf): keys
 * must be unpredictable, so this is the one place where output is not a
 * function of a seed.
 */
#include "cat.h"

#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SK_BLOB 158
#define SK_SECRET_OFF 54 /* keynum|sk|chk start here */
#define SK_SECRET_LEN 104
#define KDF_MEM_MAX (2ull << 30)
#define DEV_MARK "DEVELOPMENT"
#define PASS_LINE_MAX 1024

struct cat_seckey {
    uint8_t keynum[RTL_KEYNUM_BYTES];
    uint8_t sk[crypto_sign_SECRETKEYBYTES];
    int development;
};

_Static_assert(2 + 2 + 2 + crypto_pwhash_scryptsalsa208sha256_SALTBYTES + 8 + 8 == SK_SECRET_OFF, "layout");
_Static_assert(RTL_KEYNUM_BYTES + crypto_sign_SECRETKEYBYTES + 32 == SK_SECRET_LEN, "layout");

static void le64_store(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t le64_load(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* chk over "Ed" | keynum | sk. */
static void key_chk(const uint8_t *keynum, const uint8_t *sk, uint8_t out[32])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, (const unsigned char *)"Ed", 2);
    crypto_generichash_update(&st, keynum, RTL_KEYNUM_BYTES);
    crypto_generichash_update(&st, sk, crypto_sign_SECRETKEYBYTES);
    crypto_generichash_final(&st, out, 32);
}

/* XORs the secret part of blob with the scrypt stream of passphrase. */
static int kdf_xor(uint8_t *blob, const char *passphrase, trn_err *err)
{
    uint64_t ops = le64_load(blob + 38), mem = le64_load(blob + 46);
    if (mem > KDF_MEM_MAX)
        return trn_errf(err, "the key asks scrypt for %" PRIu64 " bytes of memory; refusing more than %llu", mem,
                        KDF_MEM_MAX);
    uint8_t *stream = sodium_malloc(SK_SECRET_LEN);
    if (!stream) return trn_errf(err, "out of memory");
    int rc = crypto_pwhash_scryptsalsa208sha256(stream, SK_SECRET_LEN, passphrase, strlen(passphrase), blob + 6,
                                                (unsigned long long)ops, (size_t)mem);
    if (rc == 0)
        for (int i = 0; i < SK_SECRET_LEN; i++) blob[SK_SECRET_OFF + i] ^= stream[i];
    sodium_free(stream);
    if (rc != 0) return trn_errf(err, "scrypt key derivation failed (out of memory?)");
    return 0;
}

static int write_key_file(const char *path, const char *comment, const uint8_t *blob, size_t len, int secret,
                          trn_err *err)
{
    char b64[sodium_base64_ENCODED_LEN(SK_BLOB, sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(b64, sizeof b64, blob, len, sodium_base64_VARIANT_ORIGINAL);
    trn_atomic a;
    if (trn_atomic_open(&a, path, err) != 0) return -1;
    /* before any byte is written, so the secret is never readable by others */
    if (secret && a.tmp[0] && fchmod(fileno(a.f), 0600) != 0) {
        trn_errf(err, "cannot restrict the permissions of %s: %s", trn_atomic_name(&a), strerror(errno));
        trn_atomic_abort(&a);
        return -1;
    }
    fprintf(a.f, "untrusted comment: %s\n%s\n", comment, b64);
    sodium_memzero(b64, sizeof b64);
    return trn_atomic_commit(&a, err);
}

int cat_keygen(const char *pub, const char *sec, const char *passphrase, enum cat_kdf kdf, int development,
               int force, char key_id[17], trn_err *err)
{
    if (sodium_init() < 0) return trn_errf(err, "libsodium failed to initialise");
    if ((unsigned)kdf >= CAT_KDF_COUNT) return trn_errf(err, "unknown key protection %d", (int)kdf);
    if ((kdf == CAT_KDF_NONE) != (passphrase == NULL))
        return trn_errf(err, kdf == CAT_KDF_NONE ? "a passphrase was given for an unencrypted key"
                                                 : "an encrypted key needs a passphrase");
    if (passphrase && !passphrase[0]) return trn_errf(err, "the passphrase is empty");
    struct stat st;
    if (!force && (stat(pub, &st) == 0 || stat(sec, &st) == 0))
        return trn_errf(err, "%s already exists; pass --force to replace the key pair",
                        stat(sec, &st) == 0 ? sec : pub);
    uint8_t *blob = sodium_malloc(SK_BLOB);
    if (!blob) return trn_errf(err, "out of memory");
    memset(blob, 0, SK_BLOB);
    uint8_t pubblob[2 + RTL_KEYNUM_BYTES + RTL_PUBKEY_BYTES];
    uint8_t *keynum = blob + SK_SECRET_OFF, *sk = keynum + RTL_KEYNUM_BYTES, *chk = sk + crypto_sign_SECRETKEYBYTES;
    memcpy(blob, "Ed", 2);
    memcpy(blob + 4, "B2", 2);
    randombytes_buf(keynum, RTL_KEYNUM_BYTES);
    memcpy(pubblob, "Ed", 2);
    memcpy(pubblob + 2, keynum, RTL_KEYNUM_BYTES);
    crypto_sign_keypair(pubblob + 2 + RTL_KEYNUM_BYTES, sk);
    key_chk(keynum, sk, chk);
    char id[17];
    rtl_keynum_hex(keynum, id);
    int rc = 0;
    if (kdf != CAT_KDF_NONE) {
        memcpy(blob + 2, "Sc", 2);
        randombytes_buf(blob + 6, crypto_pwhash_scryptsalsa208sha256_SALTBYTES);
        le64_store(blob + 38, kdf == CAT_KDF_SENSITIVE ? crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_SENSITIVE
                                                       : crypto_pwhash_scryptsalsa208sha256_OPSLIMIT_INTERACTIVE);
        le64_store(blob + 46, kdf == CAT_KDF_SENSITIVE ? crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_SENSITIVE
                                                       : crypto_pwhash_scryptsalsa208sha256_MEMLIMIT_INTERACTIVE);
        rc = kdf_xor(blob, passphrase, err);
    }
    char sc[128], pc[128];
    snprintf(sc, sizeof sc, "%s secret key %s%s",
             development ? "catalog " DEV_MARK : kdf != CAT_KDF_NONE ? "minisign encrypted" : "minisign unencrypted",
             id, development ? " - devices must not trust it" : "");
    snprintf(pc, sizeof pc, "%s public key %s%s", development ? "catalog " DEV_MARK : "minisign", id,
             development ? " - devices must not trust it" : "");
    if (rc == 0) rc = write_key_file(sec, sc, blob, SK_BLOB, 1, err);
    if (rc == 0) rc = write_key_file(pub, pc, pubblob, sizeof pubblob, 0, err);
    sodium_free(blob);
    if (rc == 0 && key_id) memcpy(key_id, id, 17);
    return rc;
}

cat_seckey *cat_seckey_load(const char *path, const char *passphrase, trn_err *err)
{
    if (sodium_init() < 0) {
        trn_errf(err, "libsodium failed to initialise");
        return NULL;
    }
    char *text = NULL;
    size_t len = 0;
    if (trn_read_file(path, 4096, &text, &len, err) != 0) return NULL;
    cat_seckey *key = sodium_malloc(sizeof *key);
    uint8_t *blob = sodium_malloc(SK_BLOB);
    char *nl = strchr(text, '\n');
    char *b64 = nl ? nl + 1 : NULL;
    size_t got = 0;
    const char *end = NULL;
    int ok = 0;
    if (b64) b64[strcspn(b64, "\r\n")] = '\0';
    if (!key || !blob) {
        trn_errf(err, "out of memory");
    } else if (strncmp(text, "untrusted comment: ", 19) != 0 || !b64) {
        trn_errf(err, "%s: not a minisign secret key file (line 1 must be an untrusted comment)", path);
    } else if (sodium_base642bin(blob, SK_BLOB, b64, strlen(b64), NULL, &got, &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
               got != SK_BLOB || *end) {
        trn_errf(err, "%s: line 2 is not base64 of a %d-byte secret key", path, SK_BLOB);
    } else if (memcmp(blob, "Ed", 2) != 0 || memcmp(blob + 4, "B2", 2) != 0) {
        trn_errf(err, "%s: unsupported signature or checksum algorithm", path);
    } else if (memcmp(blob + 2, "Sc", 2) == 0 && !passphrase) {
        trn_errf(err, "%s is encrypted: give its passphrase (--passphrase-file or --passphrase-env)", path);
    } else if (memcmp(blob + 2, "Sc", 2) != 0 && memcmp(blob + 2, "\0\0", 2) != 0) {
        trn_errf(err, "%s: unsupported key derivation function", path);
    } else if (memcmp(blob + 2, "Sc", 2) == 0 && kdf_xor(blob, passphrase, err) != 0) {
        trn_err_prefix(err, "%s", path);
    } else {
        const uint8_t *keynum = blob + SK_SECRET_OFF, *sk = keynum + RTL_KEYNUM_BYTES;
        const uint8_t *chk = sk + crypto_sign_SECRETKEYBYTES;
        uint8_t want[32], zero[32] = {0}, pk[32], sk2[64];
        key_chk(keynum, sk, want);
        crypto_sign_seed_keypair(pk, sk2, sk);
        int encrypted = memcmp(blob + 2, "Sc", 2) == 0;
        if (memcmp(chk, want, 32) != 0 && (encrypted || memcmp(chk, zero, 32) != 0))
            trn_errf(err, encrypted ? "%s: wrong passphrase" : "%s: checksum mismatch (the key file is damaged)", path);
        else if (sodium_memcmp(sk2, sk, 64) != 0)
            trn_errf(err, "%s: the secret key does not match its own public half (damaged key file)", path);
        else {
            memcpy(key->keynum, keynum, RTL_KEYNUM_BYTES);
            memcpy(key->sk, sk, sizeof key->sk);
            key->development = strstr(text, DEV_MARK) != NULL && strstr(text, DEV_MARK) < b64;
            ok = 1;
        }
        sodium_memzero(sk2, sizeof sk2);
    }
    if (blob) sodium_free(blob);
    sodium_memzero(text, len);
    free(text);
    if (!ok) {
        if (key) sodium_free(key);
        return NULL;
    }
    return key;
}

void cat_seckey_free(cat_seckey *key)
{
    if (key) sodium_free(key);
}

void cat_seckey_pubkey(const cat_seckey *key, rtl_pubkey *out)
{
    memcpy(out->keynum, key->keynum, RTL_KEYNUM_BYTES);
    memcpy(out->pk, key->sk + 32, RTL_PUBKEY_BYTES);
}

int cat_seckey_is_development(const cat_seckey *key)
{
    return key->development;
}

int cat_passphrase(const char *file, const char *env, char *out, size_t size, trn_err *err)
{
    if (!file == !env) return trn_errf(err, "give exactly one of a passphrase file and a passphrase variable");
    if (env) {
        const char *v = getenv(env);
        if (!v || !*v) return trn_errf(err, "environment variable %s is not set or empty", env);
        if (strlen(v) >= size) return trn_errf(err, "the passphrase in %s is too long", env);
        strcpy(out, v);
        return 0;
    }
    /* fopen, not a whole-file read: a pipe (--passphrase-file <(...)) works */
    FILE *f = fopen(file, "r");
    if (!f) return trn_errf(err, "cannot open %s for reading: %s", file, strerror(errno));
    char line[PASS_LINE_MAX];
    int rc = 0;
    if (!fgets(line, sizeof line, f)) rc = trn_errf(err, "%s: empty, no passphrase on its first line", file);
    fclose(f);
    if (rc == 0) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0]) rc = trn_errf(err, "%s: the first line (the passphrase) is empty", file);
        else if (strlen(line) >= size) rc = trn_errf(err, "%s: the passphrase is too long", file);
        else strcpy(out, line);
    }
    sodium_memzero(line, sizeof line);
    return rc;
}

int cat_sign_file(const cat_seckey *key, const char *path, const char *trusted, const char *untrusted,
                  const char *sig_path, trn_err *err)
{
    if (strpbrk(trusted, "\r\n") || strpbrk(untrusted, "\r\n"))
        return trn_errf(err, "a comment contains a line break");
    if (strlen(trusted) >= RTL_TRUSTED_MAX || strlen(untrusted) >= RTL_COMMENT_MAX)
        return trn_errf(err, "a comment is too long");
    rtl_err re;
    uint8_t hash[RTL_HASH_BYTES];
    if (rtl_hash_file(path, hash, &re) != 0) return trn_errf(err, "%s", re.msg);
    uint8_t blob[2 + RTL_KEYNUM_BYTES + RTL_SIG_BYTES], global[RTL_SIG_BYTES];
    memcpy(blob, "ED", 2);
    memcpy(blob + 2, key->keynum, RTL_KEYNUM_BYTES);
    crypto_sign_detached(blob + 2 + RTL_KEYNUM_BYTES, NULL, hash, sizeof hash, key->sk);
    size_t tlen = strlen(trusted);
    unsigned char *msg = malloc(RTL_SIG_BYTES + tlen);
    if (!msg) return trn_errf(err, "out of memory");
    memcpy(msg, blob + 2 + RTL_KEYNUM_BYTES, RTL_SIG_BYTES);
    memcpy(msg + RTL_SIG_BYTES, trusted, tlen);
    crypto_sign_detached(global, NULL, msg, RTL_SIG_BYTES + tlen, key->sk);
    free(msg);
    char b1[sodium_base64_ENCODED_LEN(sizeof blob, sodium_base64_VARIANT_ORIGINAL)];
    char b2[sodium_base64_ENCODED_LEN(sizeof global, sodium_base64_VARIANT_ORIGINAL)];
    sodium_bin2base64(b1, sizeof b1, blob, sizeof blob, sodium_base64_VARIANT_ORIGINAL);
    sodium_bin2base64(b2, sizeof b2, global, sizeof global, sodium_base64_VARIANT_ORIGINAL);
    size_t cap = strlen(untrusted) + tlen + sizeof b1 + sizeof b2 + 64;
    char *text = malloc(cap);
    if (!text) return trn_errf(err, "out of memory");
    int n = snprintf(text, cap, "untrusted comment: %s\n%s\ntrusted comment: %s\n%s\n", untrusted, b1, trusted, b2);
    /* check what was made with the public half before anyone relies on it */
    rtl_signature sig;
    rtl_pubkey pk;
    cat_seckey_pubkey(key, &pk);
    if (rtl_sig_parse(text, (size_t)n, &sig, &re) != 0 || rtl_sig_verify_hash(&sig, &pk, hash, &re) != 0) {
        free(text);
        return trn_errf(err, "internal error: the new signature does not verify: %s", re.msg);
    }
    int rc = trn_write_file_atomic(sig_path, text, (size_t)n, err);
    free(text);
    return rc;
}
