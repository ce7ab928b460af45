/*
 * http.c: the transfers of rtl pull, over libcurl (easy interface, one
 * handle per pull so the connection is kept alive between files).
 *
 * Bounds: every transfer has a maximum size known before it starts (the
 * index's and the manifest's sizes, or a fixed cap for small files), a
 * connect time-out and a stall time-out (below 1 KiB/s, or a quarter of a
 * lower bandwidth limit, for timeout_s seconds ends a try: a server cannot
 * hold a pull by dripping bytes), a deadline (timeout plus its size at the
 * minimum rate, from its first try: a server sending just above the stall
 * limit cannot hold it for hours), the pull's own deadline, and a bounded
 * number of tries with exponential backoff. Only
 * http, https and file URLs are followed (also across redirects, at most 5).
 * Nothing a server sends is trusted: the caller checks every byte against a
 * signature, the manifest or the index before using it.
 *
 * libcurl is linked dynamically (libcurl.so.4, the distribution's; see
 * runtime-lite/README.md) and only calls that libcurl 7.68 (Ubuntu 20.04,
 * the base of Jetson Linux 35) already has are used.
 */
#define CURL_DISABLE_DEPRECATION 1 /* CURLOPT_PROTOCOLS: the _STR form needs 7.85 */
#include "http.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_RETRIES 4
#define DEFAULT_BACKOFF_MS 500
#define MAX_BACKOFF_MS 60000
#define DEFAULT_TIMEOUT_S 30
#define DEFAULT_MIN_RATE 16384
#define DEFAULT_DEADLINE_S (6 * 3600)

/* The state of one try. */
struct xfer {
    struct rtl_http *h;
    const char *url;
    int file;               /* 1: file:// (no status codes; ranges are honoured) */
    /* memory target */
    char *buf;
    size_t len, cap, max;
    /* file target */
    int fd;
    uint64_t off;           /* bytes the file holds */
    uint64_t start;         /* the offset this try asked for */
    uint64_t size;          /* the size the file must reach */
    int checked;            /* the status and Content-Range were looked at */
    int too_big;            /* the server sent more than allowed */
    int io_errno;           /* a write failed */
    long status;
    int64_t range_start;    /* from Content-Range, -1 when absent */
    const struct rtl_http_sink *sink;
    /* the bandwidth limit of this try */
    double t0_ms;           /* when the try began (rtl_now_ms) */
    uint64_t got;           /* body bytes of this try */
    /* deadlines */
    double deadline_ms;     /* this file's (rtl_now_ms) */
    int deadline_hit;       /* 1: this file's passed, 2: the pull's */
};

int rtl_url_join(const char *base, const char *rel, char *out, size_t size)
{
    size_t b = strlen(base);
    while (b > 0 && base[b - 1] == '/') b--;
    int n = snprintf(out, size, "%.*s/%s", (int)b, base, rel);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

int rtl_http_open(struct rtl_http *h, rtl_store *s, const rtl_pull_options *o, rtl_err *err)
{
    memset(h, 0, sizeof *h);
    h->s = s;
    h->o = o;
    static int global_done;
    if (!global_done) { /* not thread-safe, as curl_global_init itself */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) return rtl_errf(err, "libcurl failed to initialise");
        global_done = 1;
    }
    if (!(h->curl = curl_easy_init())) return rtl_errf(err, "libcurl failed to initialise a transfer");
    h->t0_ms = rtl_now_ms();
    h->deadline_ms = h->t0_ms + 1e3 * (o && o->deadline_s ? o->deadline_s : DEFAULT_DEADLINE_S);
    return 0;
}

static unsigned timeout_s(const struct rtl_http *h)
{
    return h->o && h->o->timeout_s ? h->o->timeout_s : DEFAULT_TIMEOUT_S;
}

static uint64_t min_rate(const struct rtl_http *h)
{
    uint64_t r = h->o && h->o->min_bytes_per_s ? h->o->min_bytes_per_s : DEFAULT_MIN_RATE;
    uint64_t limit = h->o ? h->o->max_bytes_per_s : 0;
    if (limit && r > limit / 2) r = limit / 2 ? limit / 2 : 1;
    return r;
}

/* The deadline of a transfer of size bytes starting now. */
static double file_deadline(const struct rtl_http *h, uint64_t size)
{
    return rtl_now_ms() + 1e3 * ((double)timeout_s(h) + (double)size / (double)min_rate(h));
}

/* Which deadline has passed (1: the file's, 2: the pull's), or 0. */
static int deadline_passed(const struct rtl_http *h, double file_ms)
{
    double now = rtl_now_ms();
    return now > h->deadline_ms ? 2 : now > file_ms ? 1 : 0;
}

static int deadline_error(const struct rtl_http *h, int which, const char *url, uint64_t have, uint64_t size,
                          rtl_err *err)
{
    if (which == 2)
        return rtl_errf(err, "%s: the pull's deadline of %.0f s passed (--deadline): stopping; the %" PRIu64 " bytes "
                        "of this file held are kept for the next pull", url, (h->deadline_ms - h->t0_ms) / 1e3, have);
    return rtl_errf(err, "%s: not complete within its deadline of %u s plus %" PRIu64 " bytes at the minimum rate of "
                    "%" PRIu64 " bytes/s (--timeout, --min-rate): the server or the link is too slow; the %" PRIu64
                    " bytes held are kept for the next pull", url, timeout_s(h), size, min_rate(h), have);
}

/* libcurl's progress callback (at least once a second, also while no byte
 * arrives): ends the try at a deadline, and reports a file's progress. */
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    struct xfer *x = user;
    if ((x->deadline_hit = deadline_passed(x->h, x->deadline_ms))) return 1;
    const rtl_pull_options *o = x->h->o;
    if (x->fd >= 0 && o && o->progress) {
        rtl_pull_progress pr = {.url = x->url, .done = x->off, .size = x->size, .received = x->h->received,
                                .elapsed_s = (rtl_now_ms() - x->h->t0_ms) / 1e3};
        o->progress(o->progress_user, &pr);
    }
    return 0;
}

void rtl_http_close(struct rtl_http *h)
{
    if (h->curl) curl_easy_cleanup(h->curl);
    h->curl = NULL;
}

/* "Content-Range: bytes A-B/T": A, or -1. */
static size_t on_header(char *p, size_t size, size_t n, void *user)
{
    struct xfer *x = user;
    size_t len = size * n;
    if (len > 14 && strncasecmp(p, "content-range:", 14) == 0) {
        const char *q = p + 14;
        while (q < p + len && (*q == ' ' || *q == '\t')) q++;
        if (q + 6 <= p + len && strncmp(q, "bytes ", 6) == 0) {
            char *end;
            unsigned long long a = strtoull(q + 6, &end, 10);
            if (end > q + 6 && end < p + len && *end == '-') x->range_start = (int64_t)a;
        }
    } else if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        x->range_start = -1; /* a new response (after a redirect or 100) */
    }
    return len;
}

/* The bandwidth limit, enforced here rather than by libcurl's own (which
 * lets a transfer run well over the limit at its start): after each block
 * the receiver sleeps until the try's average is at most the limit. As the
 * receive buffer is kept small (SO_RCVBUF, set_rcvbuf), the sender is held
 * back too, so the limit holds on the link, not just in this process. */
static void throttle(struct xfer *x, size_t len)
{
    uint64_t rate = x->h->o ? x->h->o->max_bytes_per_s : 0;
    x->got += len;
    if (!rate) return;
    double elapsed = (rtl_now_ms() - x->t0_ms) / 1e3;
    double ahead = (double)x->got / (double)rate - elapsed;
    if (ahead <= 0) return;
    struct timespec t = {(time_t)ahead, (long)((ahead - (double)(time_t)ahead) * 1e9)};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

static int set_rcvbuf(void *user, curl_socket_t fd, curlsocktype purpose)
{
    struct rtl_http *h = user;
    if (purpose == CURLSOCKTYPE_IPCXN && h->o && h->o->max_bytes_per_s) {
        int size = h->o->max_bytes_per_s / 4 < 16384 ? 16384 : h->o->max_bytes_per_s / 4 > 262144 ? 262144
                                                                                                  : (int)(h->o->max_bytes_per_s / 4);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size); /* a hint: its failure changes nothing */
    }
    return CURL_SOCKOPT_OK;
}

static size_t on_mem(char *p, size_t size, size_t n, void *user)
{
    struct xfer *x = user;
    size_t len = size * n;
    x->h->received += len;
    throttle(x, len);
    if (x->len + len > x->max) {
        x->too_big = 1;
        return 0;
    }
    if (x->len + len + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        while (cap < x->len + len + 1) cap *= 2;
        if (cap > x->max + 1) cap = x->max + 1;
        char *b = realloc(x->buf, cap);
        if (!b) {
            x->io_errno = ENOMEM;
            return 0;
        }
        x->buf = b;
        x->cap = cap;
    }
    memcpy(x->buf + x->len, p, len);
    x->len += len;
    return len;
}

static int pwrite_all(int fd, const char *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static size_t on_file(char *p, size_t size, size_t n, void *user)
{
    struct xfer *x = user;
    size_t len = size * n;
    x->h->received += len;
    throttle(x, len);
    if (!x->checked) {
        x->checked = 1;
        if (!x->file) curl_easy_getinfo(x->h->curl, CURLINFO_RESPONSE_CODE, &x->status);
        int ranged = x->file ? 1 : x->status == 206;
        if (x->start > 0 && (!ranged || x->range_start != (int64_t)x->start) && !x->file) {
            /* the server ignored the range (or answered another one): the
             * body is the whole file, so the file starts over */
            if (ranged) {
                x->io_errno = EPROTO;
                return 0;
            }
            if (ftruncate(x->fd, 0) != 0) {
                x->io_errno = errno;
                return 0;
            }
            x->off = x->start = 0;
            rtl_log(x->h->s, RTL_LOG_INFO, "the server ignored the range request: fetching the whole file");
        }
    }
    if (x->off + len > x->size) {
        x->too_big = 1;
        return 0;
    }
    if (pwrite_all(x->fd, p, len, x->off) != 0) {
        x->io_errno = errno ? errno : EIO;
        return 0;
    }
    if (x->sink) x->sink->data(x->sink->user, x->off, p, len);
    x->off += len;
    return len;
}

/* Sets what every try shares. */
static void setup(struct rtl_http *h, const char *url, struct xfer *x)
{
    CURL *c = h->curl;
    const rtl_pull_options *o = h->o;
    long timeout = (long)timeout_s(h);
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS | CURLPROTO_FILE));
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout);
    /* a stall: below 1 KiB/s (a quarter of a lower bandwidth limit) for
     * timeout seconds, so a server dripping bytes cannot hold a pull */
    uint64_t rate = o ? o->max_bytes_per_s : 0;
    long low = rate && rate / 4 < 1024 ? (long)(rate / 4 ? rate / 4 : 1) : 1024;
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, low);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, timeout);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "rtl/" RTL_VERSION);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, NULL); /* bytes as stored: sizes are checked */
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 1024L * 1024); /* fewer, larger writes (libcurl caps it at its maximum) */
    if (o && o->max_bytes_per_s) {
        curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, set_rcvbuf);
        curl_easy_setopt(c, CURLOPT_SOCKOPTDATA, h);
        curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 16384L);
    }
    if (o && o->cacert) curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    x->url = url;
    x->file = strncmp(url, "file:", 5) == 0;
    x->t0_ms = rtl_now_ms();
}

/* Whether a failed try is worth another: the network or the server may
 * come back; a 4xx, a file too large or a local error will not. */
static int transient(CURLcode rc, long status)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
#if LIBCURL_VERSION_NUM >= 0x073100
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
#endif
        return 1;
    case CURLE_HTTP_RETURNED_ERROR:
        return status >= 500 || status == 408 || status == 429;
    default:
        return 0;
    }
}

static void backoff(struct rtl_http *h, int attempt)
{
    unsigned ms = h->o && h->o->backoff_ms ? h->o->backoff_ms : DEFAULT_BACKOFF_MS;
    for (int i = 1; i < attempt && ms < MAX_BACKOFF_MS; i++) ms *= 2;
    if (ms > MAX_BACKOFF_MS) ms = MAX_BACKOFF_MS;
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

static int max_tries(const struct rtl_http *h)
{
    int r = h->o ? h->o->retries : 0;
    return 1 + (r < 0 ? 0 : r == 0 ? DEFAULT_RETRIES : r);
}

/* Describes a failed try into err. */
static int try_error(struct xfer *x, CURLcode rc, const char *url, const char *what_max, rtl_err *err)
{
    if (x->deadline_hit) return deadline_error(x->h, x->deadline_hit, url, x->off, x->size ? x->size : x->max, err);
    if (x->too_big) return rtl_errf(err, "%s: the server sent more than %s", url, what_max);
    if (x->io_errno == EPROTO)
        return rtl_errf(err, "%s: the server answered another range than the one asked for", url);
    if (x->io_errno) return rtl_errf(err, "%s: cannot store what was received: %s", url, strerror(x->io_errno));
    if (rc == CURLE_HTTP_RETURNED_ERROR) return rtl_errf(err, "%s: the server answered HTTP %ld", url, x->status);
    return rtl_errf(err, "%s: %s", url, curl_easy_strerror(rc));
}

int rtl_http_get_mem(struct rtl_http *h, const char *url, size_t max, char **buf, size_t *len, rtl_err *err)
{
    *buf = NULL;
    *len = 0;
    int tries = max_tries(h);
    char maxs[48];
    snprintf(maxs, sizeof maxs, "%zu bytes", max);
    double deadline = file_deadline(h, max);
    for (int attempt = 1;; attempt++) {
        int late = deadline_passed(h, deadline);
        if (late) return deadline_error(h, late, url, 0, max, err);
        struct xfer x = {.h = h, .max = max, .fd = -1, .range_start = -1, .deadline_ms = deadline};
        setup(h, url, &x);
        curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_mem);
        CURLcode rc = curl_easy_perform(h->curl);
        if (!x.file) curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &x.status);
        if (rc == CURLE_OK) {
            if (!x.buf && !(x.buf = malloc(1))) return rtl_errf(err, "out of memory");
            x.buf[x.len] = '\0';
            *buf = x.buf;
            *len = x.len;
            return 0;
        }
        free(x.buf);
        if ((rc == CURLE_HTTP_RETURNED_ERROR && (x.status == 404 || x.status == 410)) ||
            (x.file && rc == CURLE_FILE_COULDNT_READ_FILE))
            return RTL_HTTP_NOT_FOUND;
        try_error(&x, rc, url, maxs, err);
        if (!transient(rc, x.status) || x.too_big || attempt >= tries) return -1;
        h->retries++;
        rtl_log(h->s, RTL_LOG_WARN, "%s; trying again (%d of %d)", err->msg, attempt + 1, tries);
        backoff(h, attempt);
    }
}

int rtl_http_get_file(struct rtl_http *h, const char *url, int dirfd, const char *part, uint64_t size,
                      const struct rtl_http_sink *sink, rtl_err *err)
{
    int fd = openat(dirfd, part, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return rtl_errf(err, "cannot open the download file %s: %s", part, strerror(errno));
    int tries = max_tries(h), rc = -1;
    char maxs[48];
    snprintf(maxs, sizeof maxs, "the %" PRIu64 " bytes expected", size);
    double deadline = file_deadline(h, size);
    for (int attempt = 1;; attempt++) {
        struct stat st;
        if (fstat(fd, &st) != 0) {
            rc = rtl_errf(err, "cannot examine %s: %s", part, strerror(errno));
            break;
        }
        uint64_t have = (uint64_t)st.st_size;
        if (have > size) { /* not a prefix of this file: start over */
            if (ftruncate(fd, 0) != 0) {
                rc = rtl_errf(err, "cannot truncate %s: %s", part, strerror(errno));
                break;
            }
            have = 0;
        }
        if (have == size) {
            rc = 0;
            break;
        }
        int late = deadline_passed(h, deadline);
        if (late) {
            rc = deadline_error(h, late, url, have, size, err);
            break;
        }
        struct xfer x = {.h = h, .fd = fd, .off = have, .start = have, .size = size, .range_start = -1, .sink = sink,
                         .deadline_ms = deadline};
        setup(h, url, &x);
        curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, on_file);
        char range[48];
        if (have > 0) {
            snprintf(range, sizeof range, "%" PRIu64 "-", have);
            curl_easy_setopt(h->curl, CURLOPT_RANGE, range);
            rtl_log(h->s, RTL_LOG_INFO, "resuming %s at byte %" PRIu64 " of %" PRIu64, url, have, size);
        }
        CURLcode cc = curl_easy_perform(h->curl);
        if (!x.file) curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &x.status);
        if (cc == CURLE_OK && x.off == size) {
            rc = 0;
            break;
        }
        if (cc == CURLE_OK) { /* a complete response, but short: the server's file is not this one */
            rc = rtl_errf(err, "%s: the server sent %" PRIu64 " bytes where %" PRIu64 " were expected (a "
                          "truncated or different file)", url, x.off, size);
            break;
        }
        if ((cc == CURLE_HTTP_RETURNED_ERROR && (x.status == 404 || x.status == 410)) ||
            (x.file && cc == CURLE_FILE_COULDNT_READ_FILE)) {
            rc = RTL_HTTP_NOT_FOUND;
            break;
        }
        if (cc == CURLE_HTTP_RETURNED_ERROR && x.status == 416) {
            rc = rtl_errf(err, "%s: the server's file is shorter than the %" PRIu64 " bytes already held "
                          "(a truncated or different file)", url, have);
            break;
        }
        try_error(&x, cc, url, maxs, err);
        if (!transient(cc, x.status) || x.too_big || x.io_errno || x.deadline_hit || attempt >= tries) {
            rc = -1;
            break;
        }
        h->retries++;
        rtl_log(h->s, RTL_LOG_WARN, "%s; %" PRIu64 " of %" PRIu64 " bytes held, trying again (%d of %d)", err->msg,
                x.off, size, attempt + 1, tries);
        backoff(h, attempt);
    }
    close(fd);
    return rc;
}
