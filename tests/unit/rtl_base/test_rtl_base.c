/* Unit tests of runtime-lite's base: minisign parsing and verification, the
 * trusted comment, entry-name safety and the manifest the device reads.
 * Signatures are made here with libsodium directly, in minisign's layout,
 * so these tests do not depend on the catalog side. */
#include "testutil_impl.h"
#include "catalog.h"
#include "rtl.h"
#include "internal.h" /* functions librtl no longer exports (issue 38) */

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

struct keypair {
    uint8_t keynum[8], pk[32], sk[64];
};

static void make_key(struct keypair *k, uint8_t seed)
{
    uint8_t s[32];
    memset(s, seed, sizeof s);
    crypto_sign_seed_keypair(k->pk, k->sk, s);
    for (int i = 0; i < 8; i++) k->keynum[i] = (uint8_t)(seed + i);
}

static void pubkey_text(const struct keypair *k, char *out, size_t size)
{
    uint8_t blob[42];
    memcpy(blob, "Ed", 2);
    memcpy(blob + 2, k->keynum, 8);
    memcpy(blob + 10, k->pk, 32);
    char b64[100];
    sodium_bin2base64(b64, sizeof b64, blob, sizeof blob, sodium_base64_VARIANT_ORIGINAL);
    snprintf(out, size, "untrusted comment: test key\n%s\n", b64);
}

/* A .minisig over `msg` in minisign's layout; alg "ED" hashes, "Ed" not. */
static void sig_text(const struct keypair *k, const char *alg, const char *msg, const char *untrusted,
                     const char *trusted, char *out, size_t size)
{
    uint8_t hash[64], blob[74], global[64];
    crypto_generichash(hash, sizeof hash, (const uint8_t *)msg, strlen(msg), NULL, 0);
    memcpy(blob, alg, 2);
    memcpy(blob + 2, k->keynum, 8);
    if (!strcmp(alg, "ED")) crypto_sign_detached(blob + 10, NULL, hash, sizeof hash, k->sk);
    else crypto_sign_detached(blob + 10, NULL, (const uint8_t *)msg, strlen(msg), k->sk);
    uint8_t gm[64 + 512];
    memcpy(gm, blob + 10, 64);
    memcpy(gm + 64, trusted, strlen(trusted));
    crypto_sign_detached(global, NULL, gm, 64 + strlen(trusted), k->sk);
    char b1[120], b2[100];
    sodium_bin2base64(b1, sizeof b1, blob, sizeof blob, sodium_base64_VARIANT_ORIGINAL);
    sodium_bin2base64(b2, sizeof b2, global, sizeof global, sodium_base64_VARIANT_ORIGINAL);
    snprintf(out, size, "untrusted comment: %s\n%s\ntrusted comment: %s\n%s\n", untrusted, b1, trusted, b2);
}

static void hash_of(const char *msg, uint8_t out[64])
{
    crypto_generichash(out, 64, (const uint8_t *)msg, strlen(msg), NULL, 0);
}

static void pubkey_roundtrip(void **state)
{
    (void)state;
    struct keypair k;
    make_key(&k, 3);
    char text[256];
    pubkey_text(&k, text, sizeof text);
    rtl_pubkey pk;
    rtl_err e;
    assert_int_equal(rtl_pubkey_parse(text, strlen(text), &pk, &e), 0);
    assert_memory_equal(pk.pk, k.pk, 32);
    assert_memory_equal(pk.keynum, k.keynum, 8);
    /* the bare base64 line is accepted too (minisign -P) */
    char *line = strchr(text, '\n') + 1;
    assert_int_equal(rtl_pubkey_parse(line, strlen(line) - 1, &pk, &e), 0);
    /* the key id is the little-endian value of keynum in upper-case hex */
    char hex[17], want[17];
    rtl_keynum_hex(k.keynum, hex);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | k.keynum[i];
    snprintf(want, sizeof want, "%016llX", (unsigned long long)v);
    assert_string_equal(hex, want);
    /* a wrong algorithm, a short blob, a missing comment prefix */
    char bad[256];
    strcpy(bad, text);
    char *b64 = strchr(bad, '\n') + 1;
    b64[0] = 'A'; /* changes the first byte, part of "Ed" */
    assert_int_equal(rtl_pubkey_parse(bad, strlen(bad), &pk, &e), -1);
    assert_int_equal(rtl_pubkey_parse("untrusted comment: x\nRWQ=\n", 24, &pk, &e), -1);
    assert_non_null(strstr(e.msg, "base64"));
    strcpy(bad, text);
    bad[0] = 'U';
    assert_int_equal(rtl_pubkey_parse(bad, strlen(bad), &pk, &e), -1);
}

static void sig_verifies_and_names_failures(void **state)
{
    (void)state;
    struct keypair k, other;
    make_key(&k, 5);
    make_key(&other, 9);
    char text[1024], pkt[256];
    const char *msg = "catalog bytes";
    sig_text(&k, "ED", msg, "signature from minisign secret key", "timestamp:1\tfile:x", text, sizeof text);
    rtl_signature sig;
    rtl_pubkey pk, opk;
    rtl_err e;
    pubkey_text(&k, pkt, sizeof pkt);
    assert_int_equal(rtl_pubkey_parse(pkt, strlen(pkt), &pk, &e), 0);
    pubkey_text(&other, pkt, sizeof pkt);
    assert_int_equal(rtl_pubkey_parse(pkt, strlen(pkt), &opk, &e), 0);
    assert_int_equal(rtl_sig_parse(text, strlen(text), &sig, &e), 0);
    assert_string_equal(sig.trusted, "timestamp:1\tfile:x");
    uint8_t h[64];
    hash_of(msg, h);
    assert_int_equal(rtl_sig_verify_hash(&sig, &pk, h, &e), 0);
    assert_int_equal(rtl_untrusted_check(&sig, &e), 0);

    hash_of("catalog byteS", h);
    assert_int_equal(rtl_sig_verify_hash(&sig, &pk, h, &e), -1);
    assert_non_null(strstr(e.msg, "does not match the signature"));
    hash_of(msg, h);
    assert_int_equal(rtl_sig_verify_hash(&sig, &opk, h, &e), -1);
    assert_non_null(strstr(e.msg, "was made by key"));
    sig.trusted[0] = 'T';
    assert_int_equal(rtl_sig_verify_hash(&sig, &pk, h, &e), -1);
    assert_non_null(strstr(e.msg, "trusted comment"));
    /* the legacy algorithm is refused at parse time */
    sig_text(&k, "Ed", msg, "x", "t", text, sizeof text);
    assert_int_equal(rtl_sig_parse(text, strlen(text), &sig, &e), -1);
    assert_non_null(strstr(e.msg, "legacy"));
}

/* Every single-byte change of a signature file must make it fail to parse
 * or to verify (base64 decoding is canonical, so even padding bits count);
 * untrusted-comment changes are caught by rtl_untrusted_check. */
static void every_byte_of_a_signature_matters(void **state)
{
    (void)state;
    struct keypair k;
    make_key(&k, 7);
    rtl_sig_info info = {.catalog = "cat", .model = "m", .version = 4, .timestamp = 9};
    char trusted[512], untrusted[256], text[1024];
    rtl_err e;
    assert_int_equal(rtl_trusted_format(&info, trusted, sizeof trusted, &e), 0);
    assert_int_equal(rtl_untrusted_expected(&info, k.keynum, untrusted, sizeof untrusted, &e), 0);
    sig_text(&k, "ED", "payload", untrusted, trusted, text, sizeof text);
    char pkt[256];
    rtl_pubkey pk;
    pubkey_text(&k, pkt, sizeof pkt);
    assert_int_equal(rtl_pubkey_parse(pkt, strlen(pkt), &pk, &e), 0);
    uint8_t h[64];
    hash_of("payload", h);
    rtl_signature sig;
    assert_int_equal(rtl_sig_parse(text, strlen(text), &sig, &e), 0);
    assert_int_equal(rtl_sig_verify_hash(&sig, &pk, h, &e), 0);
    assert_int_equal(rtl_untrusted_check(&sig, &e), 0);
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit++) {
            char t[1024];
            memcpy(t, text, n + 1);
            t[i] ^= (char)(1 << bit);
            int ok = rtl_sig_parse(t, n, &sig, &e) == 0 && rtl_sig_verify_hash(&sig, &pk, h, &e) == 0 &&
                     rtl_untrusted_check(&sig, &e) == 0;
            if (ok) fail_msg("flipping bit %d of byte %zu ('%c') still verifies", bit, i, text[i]);
        }
    }
}

static void trusted_comment_fields(void **state)
{
    (void)state;
    rtl_sig_info in = {.catalog = "alexnet", .model = "alexnet", .version = 1700000000, .timestamp = 1700000000,
                       .development_key = 1};
    strcpy(in.file, "catalog-alexnet-1700000000.tar.zst");
    for (int i = 0; i < 32; i++) in.manifest_sha256[i] = (uint8_t)(i * 7);
    char t[1024];
    rtl_err e;
    rtl_sig_info out;
    assert_int_equal(rtl_trusted_format(&in, t, sizeof t, &e), 0);
    assert_int_equal(rtl_trusted_parse(t, &out, &e), 0);
    assert_string_equal(out.catalog, in.catalog);
    assert_string_equal(out.model, in.model);
    assert_string_equal(out.file, in.file);
    assert_true(out.version == in.version && out.timestamp == in.timestamp && out.development_key == 1);
    assert_memory_equal(out.manifest_sha256, in.manifest_sha256, 32);

    static const struct {
        const char *text, *why;
    } bad[] = {
        {"catalog:a\tversion:1", "manifest-sha256"},
        {"timestamp:1\tfile:x\thashed", "catalog, version or manifest-sha256"},
        {"catalog:a\tcatalog:b\tversion:1\tmanifest-sha256:" "0000000000000000000000000000000000000000000000000000000000000000", "twice"},
        {"catalog:A\tversion:1\tmanifest-sha256:" "0000000000000000000000000000000000000000000000000000000000000000", "valid id"},
        {"catalog:a\tversion:01\tmanifest-sha256:" "0000000000000000000000000000000000000000000000000000000000000000", "version"},
        {"catalog:a\tversion:-1\tmanifest-sha256:" "0000000000000000000000000000000000000000000000000000000000000000", "version"},
        {"catalog:a\tversion:1\tmanifest-sha256:" "000000000000000000000000000000000000000000000000000000000000000A", "hex"},
        {"catalog:a\tversion:1\tmanifest-sha256:00", "hex"},
        {"catalog:a\tversion:1\tkey:production\tmanifest-sha256:" "0000000000000000000000000000000000000000000000000000000000000000", "key kind"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        e.msg[0] = '\0';
        if (rtl_trusted_parse(bad[i].text, &out, &e) != -1) fail_msg("accepted: %s", bad[i].text);
        if (!strstr(e.msg, bad[i].why)) fail_msg("'%s': message '%s' lacks '%s'", bad[i].text, e.msg, bad[i].why);
    }
}

static void untrusted_comment_is_bound(void **state)
{
    (void)state;
    rtl_signature s;
    memset(&s, 0, sizeof s);
    rtl_err e;
    strcpy(s.untrusted, "signature from minisign secret key");
    strcpy(s.trusted, "anything");
    assert_int_equal(rtl_untrusted_check(&s, &e), 0);
    strcpy(s.untrusted, "signature from the production key");
    assert_int_equal(rtl_untrusted_check(&s, &e), -1);
    rtl_sig_info info = {.catalog = "c", .version = 2, .timestamp = -1};
    assert_int_equal(rtl_trusted_format(&info, s.trusted, sizeof s.trusted, &e), 0);
    assert_int_equal(rtl_untrusted_expected(&info, s.keynum, s.untrusted, sizeof s.untrusted, &e), 0);
    assert_int_equal(rtl_untrusted_check(&s, &e), 0);
    s.keynum[0] ^= 1; /* the comment names a different key now */
    assert_int_equal(rtl_untrusted_check(&s, &e), -1);
    assert_non_null(strstr(e.msg, "edited"));
}

static void entry_names(void **state)
{
    (void)state;
    static const char *const good[] = {"manifest.json", "variants/base/variant.cfg", "a/b_c-d.e/F9"};
    static const char *const bad[] = {"",       "/etc/passwd", "../x",      "variants/../../x", "a//b", "a/",
                                      "./a",    "a/.hidden",   "a/b c",     "a\\b",             "..",   "a/..",
                                      "é",      "a\nb"};
    rtl_err e;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) assert_int_equal(rtl_path_check(good[i], &e), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (rtl_path_check(bad[i], &e) != -1) fail_msg("accepted unsafe name '%s'", bad[i]);
    char longname[400];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(rtl_path_check(longname, &e), -1);
}

#define SHA0 "0000000000000000000000000000000000000000000000000000000000000000"
#define FILE_OF(v, name) "{\"role\":\"cfg\",\"path\":\"variants/" v "/" name "\",\"size\":3,\"sha256\":\"" SHA0 "\"}"
#define COST "\"cost\":{\"macs\":10,\"params\":2,\"weight_bytes\":8,\"peak_activation_bytes\":4}"

static int describe_catalog(const void *o, void *out, size_t size, rtl_err *e)
{
    return rtl_catalog_describe(o, out, size, e);
}

static int describe_variant(const void *o, void *out, size_t size, rtl_err *e)
{
    return rtl_variant_describe(o, out, size, e);
}

/* A describe call's struct is versioned by its size: shorter than the
 * first layout (v1 bytes) is refused and writes nothing; exactly v1 fills
 * those bytes alone (a caller built against the first rtl.h); a larger
 * struct (a newer rtl.h) gets what this library knows and zeros past it. */
static void describe_is_versioned(int (*describe)(const void *, void *, size_t, rtl_err *), const void *obj,
                                  size_t v1, size_t now)
{
    unsigned char full[256], buf[256 + 32];
    rtl_err e;
    assert_true(now <= sizeof full && v1 <= now);
    assert_int_equal(describe(obj, full, now, &e), 0);
    memset(buf, 0x5a, sizeof buf);
    assert_int_equal(describe(obj, buf, v1 - 1, &e), -1);
    assert_non_null(strstr(e.msg, "needed"));
    for (size_t i = 0; i < sizeof buf; i++) assert_int_equal(buf[i], 0x5a);
    assert_int_equal(describe(obj, buf, v1, &e), 0);
    assert_memory_equal(buf, full, v1);
    for (size_t i = v1; i < sizeof buf; i++) assert_int_equal(buf[i], 0x5a);
    assert_int_equal(describe(obj, buf, now + 32, &e), 0);
    assert_memory_equal(buf, full, now);
    for (size_t i = now; i < now + 32; i++) assert_int_equal(buf[i], 0);
}

static void manifest_checks(void **state)
{
    (void)state;
    char good[2048];
    snprintf(good, sizeof good,
             "{\"schema\":1,\"catalog\":\"c\",\"model\":\"m\",\"version\":7,"
             "\"tasks\":{\"t\":{\"classes\":2,\"labels\":[\"x\",\"y\"]}},\"variants\":["
             "{\"id\":\"a\",\"technique\":\"base\",\"task\":\"t\",\"parent\":null,\"depends_on\":[],"
             "\"files\":[" FILE_OF("a", "f") "],\"accuracy\":{\"t\":{\"top1\":0.5}}," COST "},"
             "{\"id\":\"b\",\"technique\":\"svd\",\"task\":\"t\",\"parent\":\"a\",\"depends_on\":[\"a\"],"
             "\"files\":[" FILE_OF("b", "g/h") "]," COST ",\"technique_fields\":{\"svd\":{\"rank\":3}}}]}");
    rtl_err e;
    rtl_catalog *cat = rtl_catalog_parse(good, strlen(good), "/root", &e);
    if (!cat) fail_msg("%s", e.msg);
    rtl_catalog_info ci;
    assert_int_equal(rtl_catalog_describe(cat, &ci, sizeof ci, &e), 0);
    assert_true(!strcmp(ci.id, "c") && !strcmp(ci.model, "m") && ci.version == 7 && !strcmp(ci.dir, "/root"));
    assert_int_equal(ci.task_count, 1);
    assert_string_equal(ci.task_names[0], "t");
    assert_int_equal(ci.variant_count, 2);
    describe_is_versioned(describe_catalog, cat, RTL_CATALOG_INFO_V1, sizeof ci);
    const rtl_variant *b = rtl_catalog_find(cat, "b");
    assert_non_null(b);
    rtl_variant_info vi;
    assert_int_equal(rtl_variant_describe(b, &vi, sizeof vi, &e), 0);
    assert_true(!strcmp(vi.id, "b") && !strcmp(vi.technique, "svd") && !strcmp(vi.task, "t"));
    assert_string_equal(vi.parent, "a");
    assert_int_equal(vi.file_count, 1);
    assert_true(vi.macs == 10 && vi.params == 2 && vi.weight_bytes == 8 && vi.peak_activation_bytes == 4);
    assert_int_equal(vi.estimate_count, 0);
    describe_is_versioned(describe_variant, b, RTL_VARIANT_INFO_V1, sizeof vi);
    assert_int_equal(rtl_variant_describe(rtl_catalog_find(cat, "a"), &vi, sizeof vi, &e), 0);
    assert_null(vi.parent);
    assert_string_equal(rtl_variant_file(b, "cfg"), "/root/variants/b/g/h");
    assert_string_equal(rtl_variant_fields_json(b), "{\"svd\":{\"rank\":3}}");
    double t1, t5;
    assert_int_equal(rtl_variant_accuracy(rtl_catalog_find(cat, "a"), NULL, &t1, &t5), 0);
    assert_true(t1 == 0.5 && t5 < 0);
    size_t nl;
    assert_non_null(rtl_catalog_task_labels(cat, "t", &nl));
    assert_int_equal(nl, 2);
    assert_non_null(rtl_catalog_lookup(cat, "variants/a/f"));
    assert_null(rtl_catalog_lookup(cat, "variants/a/g"));
    rtl_catalog_close(cat);

    /* each of these edits of the good manifest must be refused, saying why */
    static const struct {
        const char *from, *to, *why;
    } edits[] = {
        {"\"schema\":1", "\"schema\":2", "schema"},
        {"\"version\":7", "\"version\":0", "version 0"},
        {"\"version\":7", "\"version\":7.5", "integer"},
        {"\"catalog\":\"c\"", "\"catalog\":\"../c\"", "valid id"},
        {"\"depends_on\":[\"a\"]", "\"depends_on\":[\"z\"]", "not in the manifest"},
        {"variants/b/g/h", "variants/a/f", "not under"},
        {"variants/b/g/h", "variants/b/../a/f", ".."},
        {"variants/b/g/h", "/etc/passwd", "absolute"},
        {"\"size\":3", "\"size\":-3", "non-negative"},
        {SHA0 "\"}],\"acc", "00\"}],\"acc", "hex"},
        {"\"files\":[{", "\"files\":[], \"x\":[{", "empty"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char bad[2048];
        const char *at = strstr(good, edits[i].from);
        assert_non_null(at);
        snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - good), good, edits[i].to, at + strlen(edits[i].from));
        e.msg[0] = '\0';
        rtl_catalog *c2 = rtl_catalog_parse(bad, strlen(bad), NULL, &e);
        if (c2) fail_msg("edit %zu (%s -> %s) was accepted", i, edits[i].from, edits[i].to);
        if (!strstr(e.msg, edits[i].why)) fail_msg("edit %zu: message '%s' lacks '%s'", i, e.msg, edits[i].why);
    }
    /* the same id twice (its file moved along, so only the id is wrong) */
    char dup[2048];
    const char *id = strstr(good, "\"id\":\"b\""), *path = strstr(good, "variants/b/g/h");
    snprintf(dup, sizeof dup, "%.*s\"id\":\"a\"%.*svariants/a/g/h%s", (int)(id - good), good,
             (int)(path - id - 8), id + 8, path + 14);
    assert_null(rtl_catalog_parse(dup, strlen(dup), NULL, &e));
    assert_non_null(strstr(e.msg, "appears twice"));
    /* a path that is a file and the folder of another */
    char clash[2048];
    const char *at = strstr(good, "variants/b/g/h");
    snprintf(clash, sizeof clash, "%.*svariants/b/g\",\"size\":3,\"sha256\":\"" SHA0 "\"},"
             "{\"role\":\"x\",\"path\":\"variants/b/g/h%s", (int)(at - good), good, at + strlen("variants/b/g/h"));
    assert_null(rtl_catalog_parse(clash, strlen(clash), NULL, &e));
    assert_non_null(strstr(e.msg, "also the folder"));
    assert_null(rtl_catalog_parse("{\"schema\":1,", 12, NULL, &e));
    assert_non_null(strstr(e.msg, "byte offset"));
    char trailing[2100];
    snprintf(trailing, sizeof trailing, "%s {", good);
    assert_null(rtl_catalog_parse(trailing, strlen(trailing), NULL, &e));
    assert_non_null(strstr(e.msg, "byte offset"));
}

int main(void)
{
    if (sodium_init() < 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pubkey_roundtrip),
        cmocka_unit_test(sig_verifies_and_names_failures),
        cmocka_unit_test(every_byte_of_a_signature_matters),
        cmocka_unit_test(trusted_comment_fields),
        cmocka_unit_test(untrusted_comment_is_bound),
        cmocka_unit_test(entry_names),
        cmocka_unit_test(manifest_checks),
    };
    int rc = cmocka_run_group_tests_name("rtl_base", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
