/* sha256.h: SHA-256 for installing and verifying catalogs (private; see
 * sha256.c). */
#ifndef RTL_SHA256_H
#define RTL_SHA256_H

#include "internal.h"

#include <sodium.h>

/* A running hash. Either the CPU's SHA instructions work on h/buf, or
 * libsodium's portable code on `sodium`, chosen at init. */
typedef struct rtl_sha256 {
    int hw;
    uint32_t h[8];
    uint64_t bytes;      /* hashed so far */
    uint8_t buf[64];     /* a partial block */
    size_t nbuf;
    crypto_hash_sha256_state sodium;
} rtl_sha256;

void rtl_sha256_init(rtl_sha256 *s);
void rtl_sha256_update(rtl_sha256 *s, const void *p, size_t n);
void rtl_sha256_final(rtl_sha256 *s, uint8_t out[RTL_SHA256_BYTES]);
/* One buffer at once. */
void rtl_sha256_buf(const void *p, size_t n, uint8_t out[RTL_SHA256_BYTES]);

/* For the tests: 1 makes later rtl_sha256_init calls use the portable code
 * whatever the CPU has; 0 restores the detection. Not thread-safe. */
void rtl_sha256_force_portable(int on);

#endif
