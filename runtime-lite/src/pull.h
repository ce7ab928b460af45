/* pull.h: the signed index of a publish folder (private; see pull.c, where
 * the format is described; exposed for the unit tests). */
#ifndef RTL_PULL_H
#define RTL_PULL_H

#include "internal.h"

/* Largest index.json the runtime accepts. */
#define RTL_INDEX_MAX (1u << 20)



struct rtl_index_entry {
    char catalog[RTL_ID_MAX + 1];
    uint64_t version;
    char archive[256];            /* path below the publish folder */
    char signature[256];
    uint64_t size;                /* of the archive */
    uint8_t manifest_sha256[RTL_SHA256_BYTES];
    uint64_t manifest_size;
};

struct rtl_index {
    char channel[RTL_ID_MAX + 1];
    uint64_t serial;
    int64_t issued, expires;
    uint64_t max_validity;         /* seconds from issued to expires its publisher allows; 0: not stated */
    uint64_t max_serial_step;      /* how far above the last accepted serial the next may be; 0: not stated */
    struct rtl_index_entry *entries;   /* sorted by catalog id */
    size_t n;
};

/* Parses index.json (no signature check here). */
int rtl_index_parse(const char *json, size_t len, struct rtl_index *out, rtl_err *err) RTL_MUST_CHECK;
void rtl_index_free(struct rtl_index *ix);

/* Checks what the signature of an index says against the index and the
 * device's memory: the trusted comment names the same channel, serial and
 * expiry as the index; the index has not expired at `now`; its serial is
 * not lower than `seen` (the highest this device accepted) nor more than
 * its serial step above it; its validity is within its max_validity (and
 * the caps above). The messages say "expired", "replayed", "valid for" or
 * "serial step" and what to do. */
int rtl_index_check(const struct rtl_index *ix, const char *trusted, int64_t now, uint64_t seen,
                    rtl_err *err) RTL_MUST_CHECK;

/* "YYYY-MM-DD HH:MM:SS UTC" of Unix time t into out. */
void rtl_utc(int64_t t, char *out, size_t size);
/* The value of "key:" in a tab-separated trusted comment into out, or NULL. */
const char *rtl_tc_field(const char *tc, const char *key, char *out, size_t size);

#endif
