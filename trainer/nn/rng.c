/* rng.c: xoshiro256** (Blackman & Vigna), seeded through splitmix64. */
#include "nn.h"
#include "portable.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void trn_rng_seed(trn_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

trn_rng trn_rng_fork(const trn_rng *r, uint64_t stream)
{
    /* Mix the parent's state with the stream number. The parent is not
     * advanced: forks of the same parent state with the same stream number
     * are identical, whichever thread takes them and in whatever order. */
    uint64_t x = r->s[0] ^ rotl(r->s[1], 17) ^ rotl(r->s[2], 31) ^ rotl(r->s[3], 47);
    x ^= splitmix64(&stream);
    trn_rng f;
    trn_rng_seed(&f, x);
    return f;
}

uint64_t trn_rng_u64(trn_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float trn_rng_uniform(trn_rng *r)
{
    /* 24 high bits: every value is exactly representable and < 1. */
    return (float)(trn_rng_u64(r) >> 40) * (1.0f / 16777216.0f);
}

float trn_rng_range(trn_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * trn_rng_uniform(r);
}

uint64_t trn_rng_below(trn_rng *r, uint64_t n)
{
    /* Lemire's rejection: unbiased for every n > 0. */
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t x = trn_rng_u64(r);
        unsigned __int128 m = (unsigned __int128)x * n;
        if ((uint64_t)m >= threshold) return (uint64_t)(m >> 64);
    }
}

float trn_rng_normal(trn_rng *r)
{
    float u1 = trn_rng_uniform(r), u2 = trn_rng_uniform(r);
    if (u1 < 1e-12f) u1 = 1e-12f;
    return sqrtf(-2.0f * trn_logf(u1)) * trn_cosf(6.28318530717958647692f * u2);
}
