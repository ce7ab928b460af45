/*
 * rtl_sign.h: the signature, trusted-comment and hash formats librtl
 * shares with the publisher of catalogs (the catalog tool: keys, sign,
 * publish, manifest). Not part of librtl's application API: an
 * application installs, pulls and re-verifies through rtl.h (rtl_install,
 * rtl_pull, rtl_verify_installed), which check every signature
 * themselves. These functions live in librtl.a (global rtl_ names, as
 * every librtl function there), are hidden in librtl.so, and this header
 * is not installed (issue 38 item 1: a minimal device API).
 * Conventions are rtl.h's.
 */
#ifndef RTL_SIGN_H
#define RTL_SIGN_H

#include "rtl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- minisign signatures --------------------------------------------------
 * Keys and signatures in minisign's formats (see runtime-lite/src/sig.c for
 * the byte layouts). Only prehashed signatures (algorithm "ED": Ed25519 over
 * the BLAKE2b-512 hash of the file) are accepted, so files are hashed as a
 * stream and never read whole. */

#define RTL_KEYNUM_BYTES 8
#define RTL_PUBKEY_BYTES 32
#define RTL_SIG_BYTES 64
#define RTL_HASH_BYTES 64      /* BLAKE2b-512 */
#define RTL_SHA256_BYTES 32
#define RTL_COMMENT_MAX 1024   /* untrusted comment, prefix excluded */
#define RTL_TRUSTED_MAX 8192   /* trusted comment, prefix excluded */

typedef struct rtl_pubkey {
    uint8_t keynum[RTL_KEYNUM_BYTES];
    uint8_t pk[RTL_PUBKEY_BYTES];
} rtl_pubkey;

typedef struct rtl_signature {
    uint8_t keynum[RTL_KEYNUM_BYTES];
    uint8_t sig[RTL_SIG_BYTES];        /* over BLAKE2b-512(file) */
    uint8_t global_sig[RTL_SIG_BYTES]; /* over sig || trusted */
    char untrusted[RTL_COMMENT_MAX];
    char trusted[RTL_TRUSTED_MAX];
} rtl_signature;

/* Parses a public key: the text of a minisign .pub file (comment line, then
 * the base64 line) or the bare base64 string alone (minisign -P). */
int rtl_pubkey_parse(const char *text, size_t len, rtl_pubkey *out, rtl_err *err);
/* Reads and parses a .pub file; errors name the file. */
int rtl_pubkey_load(const char *path, rtl_pubkey *out, rtl_err *err);
/* The key id as minisign prints it: 16 upper-case hex digits. */
void rtl_keynum_hex(const uint8_t keynum[RTL_KEYNUM_BYTES], char out[17]);

/* Parses the text of a .minisig file; errors name the line. */
int rtl_sig_parse(const char *text, size_t len, rtl_signature *out, rtl_err *err);
int rtl_sig_load(const char *path, rtl_signature *out, rtl_err *err);

/* BLAKE2b-512 of the file at path, read in blocks. */
int rtl_hash_file(const char *path, uint8_t out[RTL_HASH_BYTES], rtl_err *err);

/* Verifies sig against one key: the key ids match, sig signs `hash`, and the
 * global signature signs sig || trusted comment. The message says which of
 * the three failed. */
int rtl_sig_verify_hash(const rtl_signature *sig, const rtl_pubkey *key,
                        const uint8_t hash[RTL_HASH_BYTES], rtl_err *err) RTL_MUST_CHECK;
/* Hashes the file at path and verifies sig with whichever of keys[0..n) has
 * the signature's key id; *used (may be NULL) gets that key's index. */
int rtl_sig_verify_file(const rtl_signature *sig, const rtl_pubkey *keys, size_t n,
                        const char *path, size_t *used, rtl_err *err) RTL_MUST_CHECK;

/* ---- the catalog's trusted comment ----------------------------------------
 * Catalog signatures carry, in the signed trusted comment, tab-separated
 * key:value fields (order free, unknown keys ignored, a repeated key is an
 * error):
 *   timestamp:<SOURCE_DATE_EPOCH>  file:<archive name>  hashed
 *   catalog:<id>  version:<N>  model:<model>  manifest-sha256:<64 hex>
 *   key:development   (only when signed by a development key)
 * catalog, version and manifest-sha256 are required by rtl_install: they let
 * the device refuse an old version before extracting anything and re-verify
 * an installed catalog (manifest, then every file) without the archive. */
typedef struct rtl_sig_info {
    char catalog[RTL_ID_MAX + 1];
    char model[RTL_ID_MAX + 1];   /* "" when absent */
    char file[256];               /* "" when absent */
    uint64_t version;
    int64_t timestamp;            /* -1 when absent */
    uint8_t manifest_sha256[RTL_SHA256_BYTES];
    int development_key;          /* 1: "key:development" was present */
} rtl_sig_info;

/* Parses the catalog fields of a trusted comment. */
int rtl_trusted_parse(const char *trusted, rtl_sig_info *out, rtl_err *err) RTL_MUST_CHECK;
/* Formats info as a trusted comment into out (size bytes). */
int rtl_trusted_format(const rtl_sig_info *info, char *out, size_t size, rtl_err *err);
/* The untrusted comment catalog tools write for a signature: it is derived
 * from the trusted comment and the key id, so it can be checked although the
 * signature does not cover it (a misleading label is refused). */
int rtl_untrusted_expected(const rtl_sig_info *info, const uint8_t keynum[RTL_KEYNUM_BYTES],
                           char *out, size_t size, rtl_err *err);
/* Accepts sig's untrusted comment when it is the one derived above or
 * minisign's default ("signature from minisign secret key"). */
int rtl_untrusted_check(const rtl_signature *sig, rtl_err *err) RTL_MUST_CHECK;
/* rtl_untrusted_expected for the signature of a publish folder's index.json
 * (trusted comment "index:<channel>\tserial:<N>\texpires:<T>"): catalog
 * publish writes "signature of index <channel> serial <N> by [DEVELOPMENT
 * ]key <ID>"; rtl_pull checks it. */
int rtl_index_untrusted_expected(const char *channel, uint64_t serial, const uint8_t keynum[RTL_KEYNUM_BYTES],
                                 int development_key, char *out, size_t size, rtl_err *err);

/* SHA-256 and size of the file at path, read in blocks. */
int rtl_sha256_file(const char *path, uint8_t out[RTL_SHA256_BYTES], uint64_t *size, rtl_err *err);

/* SHA-256 in lower-case hex (65 bytes with the NUL). */
void rtl_sha256_hex(const uint8_t sha[RTL_SHA256_BYTES], char out[65]);

#ifdef __cplusplus
}
#endif

#endif
