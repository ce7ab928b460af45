/* http.h: the transfers of rtl pull over libcurl (private; see http.c). */
#ifndef RTL_HTTP_H
#define RTL_HTTP_H

#include "store.h"

/* One client: a curl handle reused for every transfer of a pull (one
 * connection kept alive), the pull's options and its counters. */
struct rtl_http {
    void *curl;                       /* CURL * */
    rtl_store *s;                     /* for log lines */
    const rtl_pull_options *o;
    uint64_t received;                /* body bytes received, every transfer */
    unsigned retries;                 /* tries that failed and were retried */
    double t0_ms, deadline_ms;        /* when the pull began, and its deadline (rtl_now_ms) */
};

/* Sees every block written to the file of rtl_http_get_file, with the file
 * offset it was written at (a restart from zero shows as offset 0 again),
 * e.g. to hash the file while it arrives. */
struct rtl_http_sink {
    void (*data)(void *user, uint64_t offset, const void *p, size_t n);
    void *user;
};

/* What a transfer ended with, beside 0 (done) and -1 (failed, err filled). */
#define RTL_HTTP_NOT_FOUND 1          /* 404 or 410 (file:// without the file) */

int rtl_http_open(struct rtl_http *h, rtl_store *s, const rtl_pull_options *o, rtl_err *err);
void rtl_http_close(struct rtl_http *h);

/* GETs url into a new buffer (NUL-terminated, the caller frees) of at most
 * max bytes; more is an error. Retries transient failures (connection
 * refused or reset, time-outs, 5xx) with backoff. Returns 0, -1 or
 * RTL_HTTP_NOT_FOUND. Every transfer ends, with a message saying which, at
 * the pull's deadline or at its own: timeout_s plus its size (max here) at
 * the minimum rate (options), counted from its first try. */
int rtl_http_get_mem(struct rtl_http *h, const char *url, size_t max, char **buf, size_t *len, rtl_err *err);

/* GETs url into the file `part` below dirfd, which may already hold a
 * prefix from an earlier, interrupted transfer: only the rest is requested
 * (Range: bytes=N-), every received byte is written at once, and a server
 * that ignores the range (200 instead of 206) restarts the file from zero.
 * The file must end up exactly `size` bytes long: a server sending more is
 * refused at the first byte too many, one sending less leaves the prefix for
 * the next pull and fails. Transient failures are retried with backoff, each
 * try resuming where the last one stopped. Returns 0, -1 or
 * RTL_HTTP_NOT_FOUND. The caller verifies the content. */
int rtl_http_get_file(struct rtl_http *h, const char *url, int dirfd, const char *part, uint64_t size,
                      const struct rtl_http_sink *sink, rtl_err *err);

/* base + "/" + rel into out (one '/' between them). -1 when too long. */
int rtl_url_join(const char *base, const char *rel, char *out, size_t size);

#endif
