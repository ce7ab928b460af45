/*
 * sha256.c: SHA-256 (FIPS 180-4) with the CPU's SHA instructions where it
 * has them, else libsodium's portable implementation.
 *
 * Installing a catalog hashes every byte of every file, and libsodium's
 * SHA-256 is portable C (about 85 MB/s on the build machine, where the x86
 * SHA extensions reach over 1 GB/s; Jetson CPUs have the ARMv8 crypto
 * extension). The instructions are detected at run time (cpuid; the
 * kernel's AT_HWCAP on aarch64), so one binary runs everywhere.
 *
 * Only the compression of 64-byte blocks differs between the engines; the
 * buffering and padding below are shared. Both block functions keep the
 * eight state words in two vectors and compute four rounds per message
 * vector W[t..t+3] + K[t..t+3]:
 *   x86:    SHA256RNDS2 does two rounds on (ABEF, CDGH) with the two low
 *           words of its third operand; SHA256MSG1/MSG2 (with the W[t-7]
 *           term added in between) give the next four message words.
 *   ARMv8:  SHA256H/SHA256H2 do four rounds on (ABCD, EFGH);
 *           SHA256SU0/SU1 give the next four message words.
 * The unit tests compare every engine with libsodium on many lengths and
 * split points, on x86 and on aarch64 (under qemu).
 */
#include "sha256.h"

#include <pthread.h>
#include <string.h>

/* The round constants: the first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes (FIPS 180-4, 4.2.2). */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* The initial state: the first 32 bits of the fractional parts of the
 * square roots of the first 8 primes (5.3.3). */
static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

/* Compresses n 64-byte blocks at p into h[8]. */
typedef void (*blocks_fn)(uint32_t h[8], const uint8_t *p, size_t n);

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_ENGINE 1
#define ENGINE_NAME "x86 SHA extensions"

__attribute__((target("sha,sse4.1"))) static void blocks_hw(uint32_t h[8], const uint8_t *p, size_t n)
{
    /* lane 3 first: abef = (A, B, E, F), cdgh = (C, D, G, H) from lane 3 down */
    __m128i abef = _mm_set_epi32((int)h[0], (int)h[1], (int)h[4], (int)h[5]);
    __m128i cdgh = _mm_set_epi32((int)h[2], (int)h[3], (int)h[6], (int)h[7]);
    /* big-endian words: reverse the bytes of each 32-bit lane */
    const __m128i bswap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    for (; n; n--, p += 64) {
        __m128i abef0 = abef, cdgh0 = cdgh, m[4];
        for (int i = 0; i < 4; i++) m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++) {
            /* m[g % 4] is W[4g..4g+3]; from group 4 on it is computed from
             * the four vectors before it (oldest first) */
            if (g >= 4) {
                __m128i w0 = m[g % 4], w1 = m[(g + 1) % 4], w2 = m[(g + 2) % 4], w3 = m[(g + 3) % 4];
                __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(w0, w1), _mm_alignr_epi8(w3, w2, 4));
                m[g % 4] = _mm_sha256msg2_epu32(t, w3);
            }
            __m128i wk = _mm_add_epi32(m[g % 4], _mm_loadu_si128((const __m128i *)&K[4 * g]));
            /* two rounds with the low words, two with the high ones; each
             * returns the new ABEF, and the old ABEF is the new CDGH */
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    uint32_t a[4], c[4];
    _mm_storeu_si128((__m128i *)a, abef); /* a[3] = A, a[2] = B, a[1] = E, a[0] = F */
    _mm_storeu_si128((__m128i *)c, cdgh);
    h[0] = a[3], h[1] = a[2], h[4] = a[1], h[5] = a[0];
    h[2] = c[3], h[3] = c[2], h[6] = c[1], h[7] = c[0];
}

static int cpu_has_sha(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 29) & 1; /* CPUID.(EAX=7,ECX=0):EBX.SHA */
}

#elif defined(__aarch64__)
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>
#define HAVE_ENGINE 1
#define ENGINE_NAME "ARMv8 crypto extension"

__attribute__((target("+crypto"))) static void blocks_hw(uint32_t h[8], const uint8_t *p, size_t n)
{
    uint32x4_t abcd = vld1q_u32(h), efgh = vld1q_u32(h + 4);
    for (; n; n--, p += 64) {
        uint32x4_t abcd0 = abcd, efgh0 = efgh, m[4];
        for (int i = 0; i < 4; i++) m[i] = vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p + 16 * i)));
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++) {
            if (g >= 4) /* W[4g..] from the four vectors before it, oldest first */
                m[g % 4] = vsha256su1q_u32(vsha256su0q_u32(m[g % 4], m[(g + 1) % 4]), m[(g + 2) % 4],
                                           m[(g + 3) % 4]);
            uint32x4_t wk = vaddq_u32(m[g % 4], vld1q_u32(&K[4 * g]));
            uint32x4_t prev = abcd; /* SHA256H2 takes ABCD as it was before SHA256H */
            abcd = vsha256hq_u32(abcd, efgh, wk);
            efgh = vsha256h2q_u32(efgh, prev, wk);
        }
        abcd = vaddq_u32(abcd, abcd0);
        efgh = vaddq_u32(efgh, efgh0);
    }
    vst1q_u32(h, abcd);
    vst1q_u32(h + 4, efgh);
}

static int cpu_has_sha(void)
{
    return (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
}
#endif

static blocks_fn hw_blocks; /* NULL: the CPU has no SHA instructions */
static int force_portable;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
#ifdef HAVE_ENGINE
    if (cpu_has_sha()) hw_blocks = blocks_hw;
#endif
}

const char *rtl_sha256_engine(void)
{
    pthread_once(&detect_once, detect);
#ifdef HAVE_ENGINE
    if (hw_blocks && !force_portable) return ENGINE_NAME;
#endif
    return "libsodium (portable)";
}

void rtl_sha256_force_portable(int on) { force_portable = on; }

void rtl_sha256_init(rtl_sha256 *s)
{
    pthread_once(&detect_once, detect);
    memset(s, 0, sizeof *s);
    s->hw = hw_blocks && !force_portable;
    if (s->hw) memcpy(s->h, H0, sizeof H0);
    else crypto_hash_sha256_init(&s->sodium);
}

void rtl_sha256_update(rtl_sha256 *s, const void *data, size_t n)
{
    if (!s->hw) {
        crypto_hash_sha256_update(&s->sodium, data, n);
        return;
    }
    const uint8_t *p = data;
    s->bytes += n;
    if (s->nbuf) {
        size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, take);
        s->nbuf += take;
        p += take;
        n -= take;
        if (s->nbuf < 64) return;
        hw_blocks(s->h, s->buf, 1);
        s->nbuf = 0;
    }
    if (n >= 64) {
        hw_blocks(s->h, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void rtl_sha256_final(rtl_sha256 *s, uint8_t out[RTL_SHA256_BYTES])
{
    if (!s->hw) {
        crypto_hash_sha256_final(&s->sodium, out);
        return;
    }
    /* 0x80, zeros up to 56 mod 64, the length in bits as 64-bit big endian */
    uint64_t bits = s->bytes * 8;
    uint8_t pad[72] = {0x80};
    size_t npad = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
    for (int i = 0; i < 8; i++) pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
    rtl_sha256_update(s, pad, npad + 8);
    for (int i = 0; i < 8; i++)
        for (int k = 0; k < 4; k++) out[4 * i + k] = (uint8_t)(s->h[i] >> (24 - 8 * k));
}

void rtl_sha256_buf(const void *p, size_t n, uint8_t out[RTL_SHA256_BYTES])
{
    rtl_sha256 s;
    rtl_sha256_init(&s);
    rtl_sha256_update(&s, p, n);
    rtl_sha256_final(&s, out);
}
