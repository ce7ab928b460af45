/* SHA-256 of runtime-lite (sha256.c): the engine this CPU selects (x86 SHA
 * extensions, the ARMv8 crypto extension under qemu-aarch64, or libsodium)
 * against libsodium's portable code and FIPS 180-4's examples, on every
 * length up to a few blocks, split at every point, and on a large buffer. */
#include "testutil_impl.h"
#include "sha256.h"

#include <stdlib.h>
#include <string.h>

static void hex(const uint8_t *d, char out[65]) { rtl_sha256_hex(d, out); }

static void known_answers(void **state)
{
    (void)state;
    static const struct {
        const char *msg, *sha;
    } kat[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    printf("# sha256 engine: %s\n", rtl_sha256_engine());
    for (int portable = 0; portable < 2; portable++) {
        rtl_sha256_force_portable(portable);
        for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
            uint8_t d[32];
            char h[65];
            rtl_sha256_buf(kat[i].msg, strlen(kat[i].msg), d);
            hex(d, h);
            assert_string_equal(h, kat[i].sha);
        }
    }
    rtl_sha256_force_portable(0);
}

/* Every length 0..300 (padding across one and two blocks), each fed in two
 * pieces split at every point, and in pieces of 1..7 bytes. */
static void every_length_and_split(void **state)
{
    (void)state;
    uint8_t msg[300];
    for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i * 131 + 7);
    for (size_t n = 0; n <= sizeof msg; n++) {
        uint8_t want[32], got[32];
        crypto_hash_sha256(want, msg, n);
        for (size_t cut = 0; cut <= n; cut += n < 140 ? 1 : 13) {
            rtl_sha256 s;
            rtl_sha256_init(&s);
            rtl_sha256_update(&s, msg, cut);
            rtl_sha256_update(&s, msg + cut, n - cut);
            rtl_sha256_final(&s, got);
            assert_memory_equal(got, want, 32);
        }
        rtl_sha256 s;
        rtl_sha256_init(&s);
        for (size_t off = 0, step = 1; off < n; off += step, step = step % 7 + 1)
            rtl_sha256_update(&s, msg + off, off + step <= n ? step : n - off);
        rtl_sha256_final(&s, got);
        assert_memory_equal(got, want, 32);
    }
}

static void large_buffer(void **state)
{
    (void)state;
    size_t n = (3u << 20) + 17;
    uint8_t *b = malloc(n), want[32], got[32];
    assert_non_null(b);
    uint32_t x = 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        b[i] = (uint8_t)(x >> 24);
    }
    crypto_hash_sha256(want, b, n);
    rtl_sha256_buf(b, n, got);
    assert_memory_equal(got, want, 32);
    rtl_sha256_force_portable(1);
    assert_string_equal(rtl_sha256_engine(), "libsodium (portable)");
    rtl_sha256_buf(b, n, got);
    assert_memory_equal(got, want, 32);
    rtl_sha256_force_portable(0);
    free(b);
}

int main(void)
{
    if (sodium_init() < 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_answers),
        cmocka_unit_test(every_length_and_split),
        cmocka_unit_test(large_buffer),
    };
    int rc = cmocka_run_group_tests_name("rtl_sha256", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
