/* Unit tests of rtl pull's server-free parts (also run on the device build
 * under qemu-aarch64): the signed index (parsing, the trusted comment, expiry
 * and replay), URL joining, and resumable transfers of rtl_http_get_file over
 * file:// URLs (a prefix held, a prefix longer than the file, a short file,
 * a missing file, every block seen in order by the sink). The transfers over
 * HTTP against a real server are tests/integration/rtl_pull.sh. */
#include "testutil_impl.h"
#include "catalog.h"
#include "http.h"
#include "pull.h"
#include "rtl.h"
#include "internal.h" /* functions librtl no longer exports (issue 38) */

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char SHA[] = "a52b38e420c770324dbae41d5dbc5d4986ca6f575f27f49eaca209e2970e4e00";

/* An index text with one or two catalogs; fields can be replaced. */
static void index_text(char *out, size_t size, const char *channel, const char *serial, const char *expires,
                       const char *second, const char *archive, const char *version, const char *msize)
{
    snprintf(out, size,
             "{\"schema\":1,\"channel\":\"%s\",\"serial\":%s,\"issued\":100,\"expires\":%s,\"catalogs\":["
             "{\"catalog\":\"alexnet\",\"version\":%s,\"archive\":\"%s\",\"signature\":\"alexnet/a.minisig\","
             "\"size\":1234,\"manifest_sha256\":\"%s\",\"manifest_size\":%s}%s]}",
             channel, serial, expires, version, archive, SHA, msize, second);
}

static void index_parses(void **state)
{
    (void)state;
    char text[2048];
    struct rtl_index ix;
    rtl_err err;
    index_text(text, sizeof text, "stable", "7", "2000000000",
               ",{\"catalog\":\"vgg\",\"version\":3,\"archive\":\"vgg/v.tar.zst\",\"signature\":\"vgg/v.minisig\","
               "\"size\":5,\"manifest_sha256\":\"a52b38e420c770324dbae41d5dbc5d4986ca6f575f27f49eaca209e2970e4e00\","
               "\"manifest_size\":9}",
               "alexnet/catalog-alexnet-5.tar.zst", "5", "300");
    assert_int_equal(rtl_index_parse(text, strlen(text), &ix, &err), 0);
    assert_string_equal(ix.channel, "stable");
    assert_int_equal(ix.serial, 7);
    assert_int_equal(ix.expires, 2000000000);
    assert_int_equal(ix.n, 2);
    assert_string_equal(ix.entries[0].catalog, "alexnet");
    assert_int_equal(ix.entries[0].version, 5);
    assert_int_equal(ix.entries[0].size, 1234);
    assert_int_equal(ix.entries[0].manifest_size, 300);
    assert_string_equal(ix.entries[0].archive, "alexnet/catalog-alexnet-5.tar.zst");
    assert_int_equal(ix.entries[0].manifest_sha256[0], 0xa5);
    assert_string_equal(ix.entries[1].catalog, "vgg");
    rtl_index_free(&ix);
}

/* A complete second entry for catalog id. */
#define ENTRY(id)                                                                                                   \
    ",{\"catalog\":\"" id "\",\"version\":3,\"archive\":\"v/v.tar.zst\",\"signature\":\"v/v.minisig\",\"size\":5," \
    "\"manifest_sha256\":\"a52b38e420c770324dbae41d5dbc5d4986ca6f575f27f49eaca209e2970e4e00\",\"manifest_size\":9}"

static void index_refuses(void **state)
{
    (void)state;
    static const struct {
        const char *channel, *serial, *expires, *second, *archive, *version, *msize, *message;
    } bad[] = {
        {"stable", "1", "5", "", "../etc/passwd", "1", "3", "contains '..'"},
        {"stable", "1", "5", "", "/abs/a.tar.zst", "1", "3", "absolute path"},
        {"stable", "1", "5", "", "a/.hidden", "1", "3", "starting with '.'"},
        {"stable", "1", "5", "", "a b", "1", "3", "contains the character"},
        {"stable", "1", "5", "", "a/a.tar.zst", "0", "3", "version 0"},
        {"stable", "1", "5", "", "a/a.tar.zst", "-1", "3", "\"version\" is missing or not a non-negative integer"},
        {"stable", "1", "5", "", "a/a.tar.zst", "1.5", "3", "\"version\" is missing or not a non-negative integer"},
        {"stable", "1", "5", "", "a/a.tar.zst", "1", "0", "manifest_size 0 is outside"},
        {"stable", "1", "5", "", "a/a.tar.zst", "1", "99999999999", "is outside"},
        {"Stable!", "1", "5", "", "a/a.tar.zst", "1", "3", "channel 'Stable!' is not a valid id"},
        {"stable", "\"1\"", "5", "", "a/a.tar.zst", "1", "3", "\"serial\" is missing"},
        {"stable", "1", "null", "", "a/a.tar.zst", "1", "3", "\"expires\" is missing"},
        {"stable", "1", "5", ENTRY("alexnet"), "a/a.tar.zst", "1", "3", "not sorted by id or 'alexnet' appears twice"},
        {"stable", "1", "5", ENTRY("aa"), "a/a.tar.zst", "1", "3", "not sorted"},
        {"stable", "1", "5", ",7", "a/a.tar.zst", "1", "3", "catalogs[1] is not an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[2048];
        struct rtl_index ix;
        rtl_err err = {{0}};
        index_text(text, sizeof text, bad[i].channel, bad[i].serial, bad[i].expires, bad[i].second, bad[i].archive,
                   bad[i].version, bad[i].msize);
        if (rtl_index_parse(text, strlen(text), &ix, &err) == 0) fail_msg("case %zu accepted: %s", i, text);
        if (!strstr(err.msg, bad[i].message)) fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].message);
    }
    struct rtl_index ix;
    rtl_err err;
    const char *texts[] = {"", "{", "[]", "{\"schema\":2}", "{\"schema\":1,\"channel\":\"s\"} x"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        assert_int_equal(rtl_index_parse(texts[i], strlen(texts[i]), &ix, &err), -1);
    char *big = calloc(RTL_INDEX_MAX + 2, 1);
    assert_non_null(big);
    memset(big, ' ', RTL_INDEX_MAX + 1);
    assert_int_equal(rtl_index_parse(big, RTL_INDEX_MAX + 1, &ix, &err), -1);
    assert_non_null(strstr(err.msg, "more than"));
    free(big);
}

/* Every byte of a valid index replaced by each of a few values (and the
 * index cut at every length): the parser never crashes, and what it accepts
 * is still a well-formed index (paths checked, sorted, bounded). */
static void index_mutations(void **state)
{
    (void)state;
    char text[2048];
    index_text(text, sizeof text, "stable", "7", "2000000000", ENTRY("vgg"), "alexnet/a.tar.zst", "5", "300");
    size_t n = strlen(text), accepted = 0, refused = 0;
    static const char values[] = {'\0', '"', '\\', '{', ']', '.', '/', '9', '-', 'x', (char)0xff};
    char *m = malloc(n + 1);
    assert_non_null(m);
    for (size_t i = 0; i < n; i++) {
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(m, text, n + 1);
            m[i] = values[v];
            struct rtl_index ix;
            rtl_err err = {{0}};
            if (rtl_index_parse(m, n, &ix, &err) == 0) {
                accepted++;
                for (size_t k = 0; k < ix.n; k++) {
                    rtl_err e2;
                    assert_int_equal(rtl_path_check(ix.entries[k].archive, &e2), 0);
                    assert_true(ix.entries[k].manifest_size > 0 && ix.entries[k].version > 0);
                    if (k) assert_true(strcmp(ix.entries[k - 1].catalog, ix.entries[k].catalog) < 0);
                }
                rtl_index_free(&ix);
            } else {
                refused++;
                assert_true(err.msg[0] != '\0');
            }
        }
        struct rtl_index ix;
        rtl_err err;
        assert_int_equal(rtl_index_parse(text, i, &ix, &err), -1); /* every strict prefix is refused */
    }
    printf("# %zu mutated indexes accepted, %zu refused\n", accepted, refused);
    assert_true(refused > accepted);
    free(m);
}

static void index_expiry_and_replay(void **state)
{
    (void)state;
    char text[2048];
    struct rtl_index ix;
    rtl_err err;
    index_text(text, sizeof text, "stable", "7", "1000", "", "a/a.tar.zst", "1", "3");
    assert_int_equal(rtl_index_parse(text, strlen(text), &ix, &err), 0);
    const char *tc = "index:stable\tserial:7\texpires:1000";
    assert_int_equal(rtl_index_check(&ix, tc, 999, 0, &err), 0);
    assert_int_equal(rtl_index_check(&ix, tc, 999, 7, &err), 0); /* the same index again */
    assert_int_equal(rtl_index_check(&ix, tc, 1000, 0, &err), -1);
    assert_non_null(strstr(err.msg, "expired at 1970-01-01 00:16:40 UTC"));
    assert_non_null(strstr(err.msg, "frozen"));
    assert_int_equal(rtl_index_check(&ix, tc, 999, 8, &err), -1);
    assert_non_null(strstr(err.msg, "has serial 7, older than serial 8"));
    assert_non_null(strstr(err.msg, "replaying"));
    static const char *const wrong[] = {"index:beta\tserial:7\texpires:1000", "index:stable\tserial:8\texpires:1000",
                                        "index:stable\tserial:7\texpires:2000", "serial:7\texpires:1000",
                                        "hashed\tcatalog:alexnet\tversion:7\tmanifest-sha256:00"};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        if (rtl_index_check(&ix, wrong[i], 0, 0, &err) == 0) fail_msg("trusted comment %zu accepted", i);
    }
    rtl_index_free(&ix);
}

/* The validity and serial step an index states, and the device's caps. */
static void index_limits(void **state)
{
    (void)state;
    struct rtl_index ix;
    rtl_err err;
    const char *ok = "{\"schema\":1,\"channel\":\"stable\",\"serial\":50,\"issued\":100,\"expires\":1000,"
                     "\"max_validity\":900,\"max_serial_step\":10,\"catalogs\":[]}";
    assert_int_equal(rtl_index_parse(ok, strlen(ok), &ix, &err), 0);
    assert_int_equal(ix.max_validity, 900);
    assert_int_equal(ix.max_serial_step, 10);
    const char *tc = "index:stable\tserial:50\texpires:1000";
    assert_int_equal(rtl_index_check(&ix, tc, 500, 40, &err), 0);  /* a step of 10 */
    assert_int_equal(rtl_index_check(&ix, tc, 500, 39, &err), -1); /* 11 */
    assert_non_null(strstr(err.msg, "more than 10 above serial 39"));
    assert_non_null(strstr(err.msg, "its max_serial_step"));
    assert_int_equal(rtl_index_check(&ix, tc, 500, 0, &err), 0);   /* a first index: the device's cap only */
    ix.max_validity = 899;
    assert_int_equal(rtl_index_check(&ix, tc, 500, 40, &err), -1);
    assert_non_null(strstr(err.msg, "valid for 900 s from its issue, more than the 899 s allowed (its max_validity)"));
    /* 100 years and a serial of 2^53, stating nothing: the device's caps */
    ix.max_validity = ix.max_serial_step = 0;
    ix.expires = 100 + 100ll * 365 * 86400;
    char tc2[128];
    snprintf(tc2, sizeof tc2, "index:stable\tserial:50\texpires:%lld", (long long)ix.expires);
    assert_int_equal(rtl_index_check(&ix, tc2, 500, 40, &err), -1);
    assert_non_null(strstr(err.msg, "this device's cap of 366 days"));
    ix.expires = 1000;
    ix.serial = 9007199254740992ull;
    assert_int_equal(rtl_index_check(&ix, "index:stable\tserial:9007199254740992\texpires:1000", 500, 40, &err), -1);
    assert_non_null(strstr(err.msg, "would block every later index"));
    assert_int_equal(rtl_index_check(&ix, "index:stable\tserial:9007199254740992\texpires:1000", 500, 0, &err), -1);
    rtl_index_free(&ix);
}

/* A key twice in one object, anywhere in the tree, is refused. */
static void index_duplicate_keys(void **state)
{
    (void)state;
    struct rtl_index ix;
    rtl_err err;
    static const char *const dup[] = {
        "{\"schema\":1,\"channel\":\"stable\",\"serial\":5,\"serial\":9,\"issued\":1,\"expires\":9,\"catalogs\":[]}",
        "{\"schema\":1,\"channel\":\"stable\",\"serial\":5,\"issued\":1,\"expires\":9,\"catalogs\":[],\"catalogs\":[]}",
        "{\"schema\":1,\"channel\":\"stable\",\"serial\":5,\"issued\":1,\"expires\":9,\"catalogs\":[{\"catalog\":\"a\","
        "\"catalog\":\"b\"}]}",
        "{\"schema\":1,\"channel\":\"stable\",\"serial\":5,\"issued\":1,\"expires\":9,\"catalogs\":[],\"x\":[[{\"k\":1,"
        "\"j\":2,\"k\":3}]]}"};
    for (size_t i = 0; i < sizeof dup / sizeof dup[0]; i++) {
        assert_int_equal(rtl_index_parse(dup[i], strlen(dup[i]), &ix, &err), -1);
        assert_non_null(strstr(err.msg, "appears twice in one object"));
    }
    const char *fine = "{\"schema\":1,\"channel\":\"stable\",\"serial\":5,\"issued\":1,\"expires\":9,\"catalogs\":[],"
                       "\"x\":[{\"k\":1},{\"k\":2}]}";
    assert_int_equal(rtl_index_parse(fine, strlen(fine), &ix, &err), 0);
    rtl_index_free(&ix);
    /* the manifest's reader refuses them too */
    const char *m = "{\"schema\":1,\"catalog\":\"a\",\"catalog\":\"b\",\"model\":\"m\",\"version\":1}";
    assert_null(rtl_catalog_parse(m, strlen(m), NULL, &err));
    assert_non_null(strstr(err.msg, "manifest: the key \"catalog\" appears twice"));
}

/* The index signature's untrusted comment: minisign's default or the one
 * catalog publish writes, nothing else. */
static void index_untrusted_comment(void **state)
{
    (void)state;
    rtl_signature sig;
    rtl_err err;
    memset(&sig, 0, sizeof sig);
    for (int i = 0; i < RTL_KEYNUM_BYTES; i++) sig.keynum[i] = (uint8_t)(i + 1);
    char want[RTL_COMMENT_MAX];
    assert_int_equal(rtl_index_untrusted_expected("stable", 7, sig.keynum, 0, want, sizeof want, &err), 0);
    snprintf(sig.untrusted, sizeof sig.untrusted, "%s", want);
    assert_int_equal(rtl_index_untrusted_check(&sig, "stable", 7, &err), 0);
    assert_int_equal(rtl_index_untrusted_expected("stable", 7, sig.keynum, 1, want, sizeof want, &err), 0);
    assert_non_null(strstr(want, "by DEVELOPMENT key"));
    snprintf(sig.untrusted, sizeof sig.untrusted, "%s", want);
    assert_int_equal(rtl_index_untrusted_check(&sig, "stable", 7, &err), 0);
    snprintf(sig.untrusted, sizeof sig.untrusted, "signature from minisign secret key");
    assert_int_equal(rtl_index_untrusted_check(&sig, "stable", 7, &err), 0);
    static const char *const bad[] = {"signature of index stable serial 8 by key 0807060504030201",
                                      "signature of index beta serial 7 by key 0807060504030201",
                                      "trusted release, verified by the vendor"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(sig.untrusted, sizeof sig.untrusted, "%s", bad[i]);
        assert_int_equal(rtl_index_untrusted_check(&sig, "stable", 7, &err), -1);
        assert_non_null(strstr(err.msg, "the signature file was edited"));
    }
}

static void url_join(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(rtl_url_join("http://h/pub", "index.json", out, sizeof out), 0);
    assert_string_equal(out, "http://h/pub/index.json");
    assert_int_equal(rtl_url_join("http://h/pub///", "a/b", out, sizeof out), 0);
    assert_string_equal(out, "http://h/pub/a/b");
    assert_int_equal(rtl_url_join("http://h/a-very-long-base-url-that-does-not-fit", "index.json", out, 32), -1);
}

struct seen {
    uint64_t next;
    int out_of_order;
    size_t blocks;
};

static void sink_data(void *user, uint64_t off, const void *p, size_t n)
{
    struct seen *s = user;
    (void)p;
    if (off != s->next) s->out_of_order = 1;
    s->next = off + n;
    s->blocks++;
}

static void write_file(const char *path, const unsigned char *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    fclose(f);
}

static size_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (size_t)st.st_size : (size_t)-1;
}

static void resumable_transfers(void **state)
{
    (void)state;
    const char *d = test_tmpdir();
    char src[512], url[600], root[512];
    enum { N = 3 << 20 };
    unsigned char *data = malloc(N);
    assert_non_null(data);
    for (size_t i = 0; i < N; i++) data[i] = (unsigned char)(i * 131 + (i >> 13));
    snprintf(src, sizeof src, "%s/src.bin", d);
    write_file(src, data, N);
    snprintf(url, sizeof url, "file://%s", src);
    snprintf(root, sizeof root, "%s/root", d);
    rtl_err err;
    rtl_store *s = rtl_store_open(&(rtl_store_config){.root = root}, &err);
    assert_non_null(s);
    rtl_pull_options o = {.retries = -1};
    struct rtl_http h;
    assert_int_equal(rtl_http_open(&h, s, &o, &err), 0);
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    char part[600];
    snprintf(part, sizeof part, "%s/x.part", d);

    /* from nothing */
    struct seen seen = {0};
    struct rtl_http_sink sink = {sink_data, &seen};
    assert_int_equal(rtl_http_get_file(&h, url, dfd, "x.part", N, &sink, &err), 0);
    assert_int_equal(file_size(part), N);
    assert_int_equal(h.received, N);
    assert_int_equal(seen.next, N);
    assert_false(seen.out_of_order);

    /* a prefix is held: only the rest is read */
    assert_int_equal(truncate(part, 1000000), 0);
    uint64_t before = h.received;
    seen = (struct seen){.next = 1000000};
    assert_int_equal(rtl_http_get_file(&h, url, dfd, "x.part", N, &sink, &err), 0);
    assert_int_equal(h.received - before, N - 1000000);
    assert_false(seen.out_of_order);
    FILE *f = fopen(part, "rb");
    unsigned char *back = malloc(N);
    assert_int_equal(fread(back, 1, N, f), N);
    fclose(f);
    assert_memory_equal(back, data, N);

    /* the whole file held: nothing is read */
    before = h.received;
    assert_int_equal(rtl_http_get_file(&h, url, dfd, "x.part", N, NULL, &err), 0);
    assert_int_equal(h.received, before);

    /* more than the file held: it starts over */
    write_file(part, data, N);
    f = fopen(part, "ab");
    fputs("junk", f);
    fclose(f);
    assert_int_equal(rtl_http_get_file(&h, url, dfd, "x.part", N, NULL, &err), 0);
    assert_int_equal(file_size(part), N);

    /* the source is shorter than expected: an error, the prefix kept */
    unlink(part);
    assert_int_equal(rtl_http_get_file(&h, url, dfd, "x.part", N + 10, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "where 3145738 were expected"));
    assert_int_equal(file_size(part), N);

    /* the source is longer than expected: refused at the first byte too many */
    unlink(part);
    assert_int_equal(rtl_http_get_file(&h, url, dfd, "x.part", N - 10, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "more than the 3145718 bytes expected"));
    assert_true(file_size(part) <= N - 10);

    /* a missing source */
    char missing[600];
    snprintf(missing, sizeof missing, "file://%s/none.bin", d);
    assert_int_equal(rtl_http_get_file(&h, missing, dfd, "y.part", 10, NULL, &err), RTL_HTTP_NOT_FOUND);
    char *buf;
    size_t len;
    assert_int_equal(rtl_http_get_mem(&h, missing, 100, &buf, &len, &err), RTL_HTTP_NOT_FOUND);

    /* into memory, bounded */
    assert_int_equal(rtl_http_get_mem(&h, url, N, &buf, &len, &err), 0);
    assert_int_equal(len, N);
    assert_memory_equal(buf, data, N);
    free(buf);
    assert_int_equal(rtl_http_get_mem(&h, url, N - 1, &buf, &len, &err), -1);
    assert_non_null(strstr(err.msg, "more than"));

    close(dfd);
    rtl_http_close(&h);
    rtl_store_close(s);
    free(back);
    free(data);
}

static void pull_refuses_bad_input(void **state)
{
    (void)state;
    char root[512];
    snprintf(root, sizeof root, "%s/root2", test_tmpdir());
    rtl_err err;
    rtl_store *s = rtl_store_open(&(rtl_store_config){.root = root}, &err);
    assert_non_null(s);
    rtl_pull_result r;
    assert_int_equal(rtl_pull(s, "ftp://x/", NULL, &r, &err), -1);
    assert_non_null(strstr(err.msg, "not an http://, https:// or file:// URL"));
    rtl_pull_result_free(&r);
    rtl_pull_options o = {.catalog = "Bad Id"};
    assert_int_equal(rtl_pull(s, "file:///nonexistent", &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "not a valid catalog id"));
    rtl_pull_result_free(&r);
    /* no pinned key: nothing is fetched */
    assert_int_equal(rtl_pull(s, "file:///nonexistent", NULL, &r, &err), -1);
    assert_non_null(strstr(err.msg, "no pinned public key"));
    assert_int_equal(r.bytes_fetched, 0);
    rtl_pull_result_free(&r);
    rtl_store_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(index_parses),
        cmocka_unit_test(index_refuses),
        cmocka_unit_test(index_mutations),
        cmocka_unit_test(index_expiry_and_replay),
        cmocka_unit_test(index_limits),
        cmocka_unit_test(index_duplicate_keys),
        cmocka_unit_test(index_untrusted_comment),
        cmocka_unit_test(url_join),
        cmocka_unit_test(resumable_transfers),
        cmocka_unit_test(pull_refuses_bad_input),
    };
    int rc = cmocka_run_group_tests_name("rtl_pull", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
