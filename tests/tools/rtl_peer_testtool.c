/*
 * rtl_peer_testtool: drives `rtl serve` the way a misbehaving or a very
 * busy device would (tests/integration/rtl_offload.sh). It links
 * runtime-lite's objects directly, so it can build frames by hand.
 *
 *   rtl_peer_testtool ROOT CATALOG VARIANT PORT SERVER.pub DEVKEY MODE [ARGS]
 * MODE:
 *   good                one request through a good connection; the answer
 *                       equals the local one within 1e-5
 *   unknown-key OTHERKEY   a handshake with a key not in the allow-list is
 *                       closed before the server says anything
 *   tamper | truncate | replay | replay-session | oversize | garbage
 *                       a bad connection beside a good one: the bad one is
 *                       closed by the server, the good one is still served
 *   good-v1             the same offering protocol version 1 (an older
 *                       device): the server answers in version 1
 *   version-tamper      (where this CPU speaks version 2) the server's
 *                       hello changed to say version 1: the session's keys
 *                       differ, its first frame fails and the server closes
 *   version-unknown     a hello offering version 9 is closed by the server
 *   concurrent N K      N connections at once, K requests each (random
 *                       inputs and cuts): every answer arrives and equals its
 *                       own local result
 *   drip N SECONDS LIMIT SRC   N connections from address SRC that handshake
 *                       with the device's public key only (no secret half:
 *                       they cannot seal a frame), then start a frame and
 *                       send one byte of it a second for SECONDS: exit 0
 *                       when the server closes every one within LIMIT s
 *   hold N LEN SECONDS SRC PID   N such connections, each declaring a frame
 *                       of LEN bytes (and sending none of it), held
 *                       SECONDS; prints how many the server kept and its
 *                       VmRSS and VmHWM (process PID) in kB while they are
 *   storm SECONDS SRC   for SECONDS, from address SRC, as many connections
 *                       as it can make: half of them say nothing, half send
 *                       a hello with an unknown key; each kept open until
 *                       the server closes it (at most 512 at once)
 *   fake-server HOW PORTFILE   a lying peer: DEVKEY is the server's key pair
 *                       (SERVER.pub and PORT unused); listens on a free port
 *                       (written to PORTFILE), handshakes with one device,
 *                       answers its first request with the honest answer
 *                       spoiled (HOW: short, one float fewer; long, one
 *                       more; nan, one float NaN; inf, one infinite; zero,
 *                       no float) and exits
 * Prints one line; exit 0 when the claim holds, 1 otherwise.
 */
#include "catalog.h"
#include "frame.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *catalog_id, *variant_id;
static int port;
static rtl_peer_key me;
static uint8_t server_pk[32];
static rtl_model *model;
static rtl_model_info minfo; /* model's */
static rtl_catalog *cat;
static rtl_store *st;

static void close_all(void)
{
    rtl_model_close(model);
    rtl_catalog_close(cat);
    rtl_store_close(st);
}
static int layers;

static int die(const char *fmt, const char *a)
{
    printf("FAIL: ");
    printf(fmt, a);
    printf("\n");
    return 1;
}

static int tcp_connect(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) return -1;
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static int xsend(int fd, const void *b, size_t n) { return send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1; }

static int xrecv(int fd, void *b, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r = recv(fd, (uint8_t *)b + off, n - off, 0);
        if (r <= 0) return -1;
        off += (size_t)r;
    }
    return 0;
}

/* A handshaken connection; the bytes it sent go to log (may be NULL). */
struct conn {
    int fd;
    rtlp_session s;
    uint8_t sent[RTLP_CLIENT_HELLO + RTLP_HEADER];
};

static int offer_version;  /* 0: the best this CPU speaks */
static int tamper_version; /* the server hello's version byte changed to this (0: not) */

/* The device's first frame (a ready message) and the server's answer. */
static int ready(struct conn *c)
{
    uint8_t m[RTLP_READY_BYTES], f[RTLP_LEN_BYTES + RTLP_READY_BYTES + RTLP_ABYTES], plain[RTLP_READY_BYTES + 1];
    char why[256];
    rtlp_build_ready(m);
    rtlp_seal(&c->s, m, sizeof m, f);
    if (xsend(c->fd, f, sizeof f) != 0 || xrecv(c->fd, f, sizeof f) != 0) return -1;
    return rtlp_open(&c->s, f + RTLP_LEN_BYTES, sizeof f - RTLP_LEN_BYTES, plain) == 0 &&
                   rtlp_parse_ready(plain, RTLP_READY_BYTES, why, sizeof why) == 1
               ? 0
               : -1;
}

static int handshake(struct conn *c, const rtl_peer_key *key)
{
    uint8_t hello[RTLP_CLIENT_HELLO], reply[RTLP_SERVER_HELLO], hdr[RTLP_HEADER];
    unsigned char epk[32], esk[32];
    char why[256];
    c->fd = tcp_connect();
    if (c->fd < 0) return -1;
    rtlp_client_hello_v(key, epk, esk, hello, offer_version);
    if (xsend(c->fd, hello, sizeof hello) != 0 || xrecv(c->fd, reply, sizeof reply) != 0) return -1;
    if (tamper_version) reply[4] = (uint8_t)tamper_version;
    if (rtlp_client_finish(key, epk, esk, server_pk, hello, reply, &c->s, hdr, why, sizeof why) != 0) return -1;
    memcpy(c->sent, hello, sizeof hello);
    memcpy(c->sent + sizeof hello, hdr, sizeof hdr);
    return xsend(c->fd, hdr, sizeof hdr) == 0 ? ready(c) : -1;
}

/* A sealed request frame (new buffer, *n bytes). */
static uint8_t *request_frame(struct conn *c, uint32_t id, int first, const float *x, size_t nx, size_t *n)
{
    size_t pl;
    rtlp_pin pin = {.version = cat->version};
    memcpy(pin.manifest, cat->manifest_sha256, sizeof pin.manifest);
    uint8_t *plain = rtlp_build_request(id, catalog_id, variant_id, &pin, first, layers - 1, x, (uint32_t)nx, &pl);
    uint8_t *f = malloc(pl + RTLP_LEN_BYTES + RTLP_ABYTES);
    rtlp_seal(&c->s, plain, pl, f);
    free(plain);
    *n = pl + RTLP_LEN_BYTES + RTLP_ABYTES;
    return f;
}

/* Reads one reply into out; -1 when the connection ends. */
static int read_reply(struct conn *c, uint32_t id, float *out, size_t cap, size_t *nout)
{
    uint8_t h[4];
    uint32_t len;
    char why[256];
    if (xrecv(c->fd, h, 4) != 0 || rtlp_frame_len(h, 1u << 24, &len, why, sizeof why) != 0) return -1;
    uint8_t *body = malloc(len), *plain = malloc(len);
    int rc = -1;
    rtlp_reply r;
    if (xrecv(c->fd, body, len) == 0 && rtlp_open(&c->s, body, len, plain) == 0 &&
        rtlp_parse_reply(plain, len - RTLP_ABYTES, &r, why, sizeof why) == 0 && r.id == id && r.status == 0 &&
        r.count <= cap) {
        rtlp_floats_get(r.floats, r.count, out);
        *nout = r.count;
        rc = 0;
    }
    free(body);
    free(plain);
    return rc;
}

/* 1 when the server closes fd (EOF or reset) within 10 s, without sending. */
static int closed_by_server(int fd)
{
    uint8_t b[256];
    ssize_t r = recv(fd, b, sizeof b, 0);
    return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* 1 when the model may be cut before layer s (its layer cost's cut_before). */
static int cut_ok(int s)
{
    rtl_layer_cost lc;
    return rtl_model_layer_cost(model, s, &lc) == 0 && lc.cut_before;
}

/* Random input, a random possible cut s; fills the activation crossing s
 * and the local answer. */
static void make_case(uint64_t seed, int *s, float **act, size_t *nact, float *expect)
{
    size_t in = minfo.input_size;
    float *x = malloc(in * sizeof *x);
    for (size_t i = 0; i < in; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(seed >> 40) / (float)(1 << 24);
    }
    int cut;
    do {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        cut = (int)((seed >> 33) % (uint64_t)layers);
    } while (!cut_ok(cut));
    rtl_err err;
    const float *y;
    size_t ny;
    *nact = rtl_model_cut_floats(model, cut);
    *act = malloc(*nact * sizeof **act);
    if (cut == 0) memcpy(*act, x, in * sizeof *x);
    else if (rtl_model_run_range(model, 0, cut - 1, x, in, &y, &ny, &err) == 0) memcpy(*act, y, ny * sizeof *y);
    if (rtl_model_run_range(model, cut, layers - 1, *act, *nact, &y, &ny, &err) == 0)
        memcpy(expect, y, ny * sizeof *y);
    *s = cut;
    free(x);
}

/* One good request on c; 0 when the answer equals the local one. */
static int good_request(struct conn *c, uint32_t id, uint64_t seed)
{
    size_t classes = minfo.classes, nact, got;
    float expect[1024], out[1024], *act;
    int s;
    make_case(seed, &s, &act, &nact, expect);
    size_t n;
    uint8_t *f = request_frame(c, id, s, act, nact, &n);
    int rc = xsend(c->fd, f, n) == 0 && read_reply(c, id, out, 1024, &got) == 0 && got == classes ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < classes; i++)
        if (fabsf(out[i] - expect[i]) > 1e-5f) rc = -1;
    free(f);
    free(act);
    return rc;
}

/* One precomputed request (the model is used by the main thread only). */
struct rcase {
    int s;
    float *act;
    size_t nact;
    float ex[1024];
};

struct worker {
    int t, k, ok, lost, wrong;
    struct rcase *cases;
};

static void *conc(void *arg)
{
    struct worker *w = arg;
    struct conn c;
    if (handshake(&c, &me) != 0) {
        w->lost = w->k;
        return NULL;
    }
    for (int r = 0; r < w->k; r++) {
        size_t classes = minfo.classes, got, n;
        float out[1024];
        struct rcase *rc = &w->cases[r];
        uint32_t id = (uint32_t)(w->t * 1000 + r + 1);
        uint8_t *f = request_frame(&c, id, rc->s, rc->act, rc->nact, &n);
        if (xsend(c.fd, f, n) != 0 || read_reply(&c, id, out, 1024, &got) != 0 || got != classes) w->lost++;
        else {
            int same = 1;
            for (size_t i = 0; i < classes; i++) same &= fabsf(out[i] - rc->ex[i]) <= 1e-5f;
            if (same) w->ok++;
            else w->wrong++;
        }
        free(f);
    }
    close(c.fd);
    return NULL;
}

/* A TCP connection from address src (NULL: any), non-blocking when nb. */
static int connect_from(const char *src, int nb)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nb ? SOCK_NONBLOCK : 0), 0);
    struct sockaddr_in from = {.sin_family = AF_INET}, sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0) return -1;
    if (src && (inet_pton(AF_INET, src, &from.sin_addr) != 1 || bind(fd, (struct sockaddr *)&from, sizeof from) != 0)) {
        close(fd);
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && !(nb && errno == EINPROGRESS)) {
        close(fd);
        return -1;
    }
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* A handshake with the device's public key and nothing else: the hello,
 * the server's, and 24 bytes of stream header (random: without the secret
 * half no key follows). The fd, or -1 when the server refused. */
static int keyless_handshake(const char *src)
{
    uint8_t hello[RTLP_CLIENT_HELLO], reply[RTLP_SERVER_HELLO], hdr[RTLP_HEADER];
    unsigned char epk[32], esk[32];
    int fd = connect_from(src, 0);
    rtlp_client_hello(&me, epk, esk, hello);
    randombytes_buf(hdr, sizeof hdr);
    if (fd < 0 || xsend(fd, hello, sizeof hello) != 0 || xrecv(fd, reply, sizeof reply) != 0 ||
        xsend(fd, hdr, sizeof hdr) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    return fd;
}

static void put_len(uint8_t h[4], uint32_t len)
{
    h[0] = (uint8_t)(len >> 24), h[1] = (uint8_t)(len >> 16), h[2] = (uint8_t)(len >> 8), h[3] = (uint8_t)len;
}

/* 1 when the server has closed fd (EOF, reset), without waiting. */
static int gone(int fd)
{
    uint8_t b[64];
    ssize_t r = recv(fd, b, sizeof b, MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* drip N SECONDS LIMIT SRC (see the top). */
static int drip(int n, double seconds, double limit, const char *src)
{
    int fd[256], nfd = 0, refused = 0;
    double closed_at[256], t0 = rtl_now_ms();
    for (int i = 0; i < n && i < 256; i++) {
        int f = keyless_handshake(src);
        if (f < 0) {
            refused++;
            continue;
        }
        uint8_t h[4];
        put_len(h, 1000); /* within what an unauthenticated connection may send */
        xsend(f, h, 4);
        closed_at[nfd] = -1;
        fd[nfd++] = f;
    }
    for (double t = 0, next = 0; t < seconds * 1000; t = rtl_now_ms() - t0) {
        int tick = t >= next; /* a byte a second; watched every 50 ms */
        if (tick) next += 1000;
        for (int i = 0; i < nfd; i++) {
            if (closed_at[i] >= 0) continue;
            uint8_t b = 0x55;
            if (gone(fd[i]) || (tick && send(fd[i], &b, 1, MSG_NOSIGNAL) != 1)) closed_at[i] = t / 1000;
        }
        usleep(50000);
    }
    int closed = 0, late = 0;
    double last = 0;
    for (int i = 0; i < nfd; i++) {
        if (closed_at[i] >= 0) closed++;
        if (closed_at[i] < 0 || closed_at[i] > limit) late++;
        if (closed_at[i] > last) last = closed_at[i];
        close(fd[i]);
    }
    printf("%s: %d connections dripping a byte a second for %g s (%d refused at connect): %d closed by the server, "
           "the last after %.1f s (limit %g s)\n",
           late || !nfd ? "FAIL" : "ok", nfd, seconds, refused, closed, last, limit);
    return late || !nfd ? 1 : 0;
}

/* VmRSS and VmHWM of process pid, kB. */
static void mem_of(int pid, long *rss, long *hwm)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    *rss = *hwm = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6)) *rss = atol(line + 6);
        if (!strncmp(line, "VmHWM:", 6)) *hwm = atol(line + 6);
    }
    if (f) fclose(f);
}

/* hold N LEN SECONDS SRC PID (see the top). */
static int hold(int n, uint32_t len, double seconds, const char *src, int pid)
{
    int *fd = calloc((size_t)n, sizeof *fd), nfd = 0;
    long rss0, hwm0, rss, hwm;
    mem_of(pid, &rss0, &hwm0);
    for (int i = 0; i < n; i++) {
        int f = keyless_handshake(src);
        if (f < 0) continue;
        uint8_t h[4];
        put_len(h, len);
        xsend(f, h, 4);
        fd[nfd++] = f;
    }
    usleep((useconds_t)(seconds * 1e6));
    int kept = 0;
    for (int i = 0; i < nfd; i++) kept += !gone(fd[i]);
    mem_of(pid, &rss, &hwm);
    for (int i = 0; i < nfd; i++) close(fd[i]);
    free(fd);
    printf("hold: %d of %d connections handshaken, each declaring a frame of %u bytes; %d still open after %g s; "
           "server VmRSS %ld kB (before: %ld kB), VmHWM %ld kB\n", nfd, n, len, kept, seconds, rss, rss0, hwm);
    return 0;
}

/* storm SECONDS SRC (see the top). */
static int storm(double seconds, const char *src)
{
    int fd[512] = {0}, nfd = 0;
    long made = 0, failed = 0;
    double t0 = rtl_now_ms();
    while (rtl_now_ms() - t0 < seconds * 1000) {
        for (int i = 0; i < nfd;) /* those the server closed make room */
            if (gone(fd[i])) close(fd[i]), fd[i] = fd[--nfd];
            else i++;
        if (nfd == 512) {
            close(fd[0]);
            fd[0] = fd[--nfd];
        }
        int f = connect_from(src, 1);
        if (f < 0) {
            failed++;
            usleep(1000);
            continue;
        }
        if (made++ % 2) { /* a hello with an unknown key */
            rtl_peer_key k;
            rtl_err err;
            uint8_t hello[RTLP_CLIENT_HELLO];
            unsigned char epk[32], esk[32];
            struct pollfd p = {.fd = f, .events = POLLOUT};
            if (rtl_peer_keygen(&k, &err) == 0 && poll(&p, 1, 100) == 1) {
                rtlp_client_hello(&k, epk, esk, hello);
                (void)send(f, hello, sizeof hello, MSG_NOSIGNAL);
            }
        }
        fd[nfd++] = f;
    }
    for (int i = 0; i < nfd; i++) close(fd[i]);
    printf("ok: a storm of %ld connections in %g s (%ld failed to connect)\n", made, seconds, failed);
    return 0;
}

/* The honest answer to request rq, spoiled as how says; *n floats. */
static float *spoiled_answer(const rtlp_request *rq, const char *how, uint32_t *n)
{
    float *x = malloc((rq->count ? rq->count : 1) * sizeof *x), *y = NULL;
    const float *a;
    size_t na;
    rtl_err err;
    rtlp_floats_get(rq->floats, rq->count, x);
    if (rtl_model_run_range(model, rq->first, rq->last, x, rq->count, &a, &na, &err) == 0 &&
        (y = calloc(na + 1, sizeof *y))) {
        memcpy(y, a, na * sizeof *y);
        *n = (uint32_t)na;
        if (!strcmp(how, "short")) *n -= 1;
        else if (!strcmp(how, "long")) *n += 1;
        else if (!strcmp(how, "nan")) y[na / 2] = NAN;
        else if (!strcmp(how, "inf")) y[0] = INFINITY;
        else if (!strcmp(how, "zero")) *n = 0;
    }
    free(x);
    return y;
}

/* Reads one frame of c's session into a new buffer (its plaintext, *n
 * bytes); NULL when the connection ends or the frame fails. */
static uint8_t *read_frame(struct conn *c, size_t *n)
{
    uint8_t h[4];
    uint32_t len;
    char why[256];
    if (xrecv(c->fd, h, 4) != 0 || rtlp_frame_len(h, 1u << 26, &len, why, sizeof why) != 0) return NULL;
    uint8_t *body = malloc(len), *plain = malloc(len);
    if (xrecv(c->fd, body, len) != 0 || rtlp_open(&c->s, body, len, plain) != 0) {
        free(plain);
        plain = NULL;
    }
    free(body);
    *n = len - RTLP_ABYTES;
    return plain;
}

/* fake-server HOW PORTFILE (see the top). */
static int fake_server(const char *how, const char *portfile)
{
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 4) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &sl) != 0)
        return die("%s", "cannot listen");
    FILE *f = fopen(portfile, "w");
    if (!f || fprintf(f, "%d\n", ntohs(sa.sin_port)) < 0 || fclose(f) != 0) return die("cannot write %s", portfile);
    struct conn c = {.fd = accept(lfd, NULL, NULL)};
    uint8_t hello[RTLP_CLIENT_HELLO], reply[RTLP_SERVER_HELLO], hdr[RTLP_HEADER];
    char why[256];
    if (c.fd < 0 || xrecv(c.fd, hello, sizeof hello) != 0 ||
        rtlp_server_accept(&me, hello, &c.s, reply, why, sizeof why) != 0 || xsend(c.fd, reply, sizeof reply) != 0 ||
        xrecv(c.fd, hdr, sizeof hdr) != 0 || rtlp_server_rx_start(&c.s, hdr) != 0)
        return die("%s", "the device's handshake failed");
    size_t n;
    uint8_t *plain = read_frame(&c, &n), m[RTLP_READY_BYTES], rf[RTLP_LEN_BYTES + RTLP_READY_BYTES + RTLP_ABYTES];
    if (!plain || rtlp_parse_ready(plain, n, why, sizeof why) != 1) return die("%s", "no ready frame came");
    free(plain);
    rtlp_build_ready(m);
    rtlp_seal(&c.s, m, sizeof m, rf);
    if (xsend(c.fd, rf, sizeof rf) != 0) return die("%s", "cannot answer the ready frame");
    plain = read_frame(&c, &n);
    rtlp_request rq;
    if (!plain || rtlp_parse_request(plain, n, &rq, why, sizeof why) != 0) return die("%s", "no request came");
    uint32_t count = 0;
    float *y = spoiled_answer(&rq, how, &count);
    size_t len;
    uint8_t *out = y ? rtlp_build_reply_at(RTLP_PLAIN_AT, RTLP_ABYTES - 1, rq.id, 0, y, count, NULL, &len) : NULL;
    if (!out) return die("%s", "cannot compute the answer");
    rtlp_seal(&c.s, out + RTLP_PLAIN_AT, len, out);
    int rc = xsend(c.fd, out, len + RTLP_LEN_BYTES + RTLP_ABYTES);
    printf("%s: answered layers %d..%d with %u floats (%s)\n", rc ? "FAIL" : "ok", rq.first, rq.last, count, how);
    uint8_t b[64];
    while (recv(c.fd, b, sizeof b, 0) > 0) { /* until the device closes */
    }
    free(out), free(y), free(plain);
    close(c.fd), close(lfd);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: rtl_peer_testtool ROOT CATALOG VARIANT PORT SERVER.pub DEVKEY MODE [ARGS]\n");
        return 2;
    }
    catalog_id = argv[2], variant_id = argv[3], port = atoi(argv[4]);
    const char *mode = argv[7];
    rtl_err err;
    rtl_peer_key spk;
    memset(&spk, 0, sizeof spk);
    int fake = !strcmp(mode, "fake-server");
    if ((!fake && rtl_peer_key_load(argv[5], 0, &spk, &err) != 0) || rtl_peer_key_load(argv[6], 1, &me, &err) != 0)
        return die("%s", err.msg);
    memcpy(server_pk, spk.pk, 32);
    rtl_store_config cfg = {.root = argv[1]};
    atexit(close_all);
    st = rtl_store_open(&cfg, &err);
    cat = st ? rtl_catalog_open(st, catalog_id, &err) : NULL;
    model = cat ? rtl_model_open(cat, variant_id, NULL, &err) : NULL;
    if (!model) return die("%s", err.msg);
    if (rtl_model_describe(model, &minfo, sizeof minfo, &err) != 0) return die("%s", err.msg);
    layers = minfo.layers;
    signal(SIGPIPE, SIG_IGN);
    if (fake) return argc < 10 ? die("%s", "fake-server needs HOW PORTFILE") : fake_server(argv[8], argv[9]);
    if (!strcmp(mode, "drip"))
        return argc < 12 ? die("%s", "drip needs N SECONDS LIMIT SRC")
                         : drip(atoi(argv[8]), atof(argv[9]), atof(argv[10]), argv[11]);
    if (!strcmp(mode, "hold"))
        return argc < 13 ? die("%s", "hold needs N LEN SECONDS SRC PID")
                         : hold(atoi(argv[8]), (uint32_t)strtoul(argv[9], NULL, 10), atof(argv[10]), argv[11],
                                atoi(argv[12]));
    if (!strcmp(mode, "storm"))
        return argc < 10 ? die("%s", "storm needs SECONDS SRC") : storm(atof(argv[8]), argv[9]);

    if (!strcmp(mode, "good") || !strcmp(mode, "good-v1")) {
        struct conn c;
        offer_version = !strcmp(mode, "good-v1") ? 1 : 0;
        int want = offer_version ? 1 : rtlp_best_version();
        if (handshake(&c, &me) != 0 || good_request(&c, 1, 42) != 0) return die("%s", "no good answer");
        if (c.s.version != want) {
            printf("FAIL: the session speaks protocol %d, not %d\n", c.s.version, want);
            return 1;
        }
        printf("ok: a good request in protocol %d (%s) is answered with the local result\n", c.s.version,
               c.s.version == 2 ? "AES-256-GCM" : "XChaCha20-Poly1305");
        return 0;
    }
    if (!strcmp(mode, "version-tamper")) {
        if (rtlp_best_version() < 2) {
            printf("ok: skipped (this CPU speaks protocol 1 only: nothing to downgrade)\n");
            return 0;
        }
        struct conn c;
        tamper_version = 1;
        /* the handshake's ready frame is the session's first */
        if (handshake(&c, &me) == 0) return die("%s", "the server answered a session whose version byte was changed");
        if (c.fd < 0) return die("%s", "cannot connect");
        if (!closed_by_server(c.fd)) return die("%s", "the server kept a session whose version byte was changed");
        printf("ok: a changed version byte in the server's hello: other keys, the first frame fails, closed\n");
        return 0;
    }
    if (!strcmp(mode, "version-unknown")) {
        int fd = tcp_connect();
        uint8_t hello[RTLP_CLIENT_HELLO];
        unsigned char epk[32], esk[32];
        rtlp_client_hello(&me, epk, esk, hello);
        hello[4] = 9;
        if (fd < 0 || xsend(fd, hello, sizeof hello) != 0) return die("%s", "cannot connect");
        if (!closed_by_server(fd)) return die("%s", "the server answered a hello of protocol version 9");
        printf("ok: a hello of protocol version 9 is closed\n");
        return 0;
    }
    if (!strcmp(mode, "unknown-key")) {
        rtl_peer_key other;
        if (argc < 9 || rtl_peer_key_load(argv[8], 1, &other, &err) != 0) return die("%s", "unknown-key needs OTHERKEY");
        int fd = tcp_connect();
        uint8_t hello[RTLP_CLIENT_HELLO];
        unsigned char epk[32], esk[32];
        rtlp_client_hello(&other, epk, esk, hello);
        if (fd < 0 || xsend(fd, hello, sizeof hello) != 0) return die("%s", "cannot connect");
        if (!closed_by_server(fd)) return die("%s", "the server answered an unknown key");
        printf("ok: an unknown device key is closed before the server says anything\n");
        return 0;
    }
    if (!strcmp(mode, "concurrent")) {
        int n = argc > 8 ? atoi(argv[8]) : 64, k = argc > 9 ? atoi(argv[9]) : 4;
        if (n < 1 || n > 1024 || k < 1) return die("%s", "bad N or K");
        pthread_t *th = calloc((size_t)n, sizeof *th);
        struct worker *w = calloc((size_t)n, sizeof *w);
        for (int t = 0; t < n; t++) {
            w[t] = (struct worker){.t = t, .k = k, .cases = calloc((size_t)k, sizeof(struct rcase))};
            for (int r = 0; r < k; r++)
                make_case(((uint64_t)t << 20) + (uint64_t)r + 1, &w[t].cases[r].s, &w[t].cases[r].act,
                          &w[t].cases[r].nact, w[t].cases[r].ex);
        }
        for (int t = 0; t < n; t++) {
            pthread_create(&th[t], NULL, conc, &w[t]);
        }
        int ok = 0, lost = 0, wrong = 0;
        for (int t = 0; t < n; t++) {
            pthread_join(th[t], NULL);
            ok += w[t].ok, lost += w[t].lost, wrong += w[t].wrong;
        }
        for (int t = 0; t < n; t++) {
            for (int r = 0; r < k; r++) free(w[t].cases[r].act);
            free(w[t].cases);
        }
        free(th);
        free(w);
        printf("%s: %d clients x %d requests: %d answered right, %d lost, %d wrong\n",
               ok == n * k ? "ok" : "FAIL", n, k, ok, lost, wrong);
        return ok == n * k ? 0 : 1;
    }

    /* attacks: a good connection first, then the bad one, then the good one
     * is used again */
    struct conn good, bad;
    if (handshake(&good, &me) != 0 || good_request(&good, 1, 1) != 0) return die("%s", "the good connection failed");
    size_t n;
    if (!strcmp(mode, "garbage")) {
        bad.fd = tcp_connect();
        uint8_t junk[RTLP_CLIENT_HELLO];
        memset(junk, 'A', sizeof junk);
        if (bad.fd < 0 || xsend(bad.fd, junk, sizeof junk) != 0) return die("%s", "cannot connect");
    } else if (!strcmp(mode, "replay-session")) {
        /* a whole recorded session (hello, header, a request) sent again */
        struct conn rec;
        if (handshake(&rec, &me) != 0) return die("%s", "cannot connect");
        size_t nin = rtl_model_cut_floats(model, 0);
        float *zeros = calloc(nin, sizeof *zeros);
        uint8_t *f = request_frame(&rec, 7, 0, zeros, nin, &n);
        free(zeros);
        if (xsend(rec.fd, f, n) != 0) return die("%s", "send");
        float out[1024];
        size_t got;
        if (read_reply(&rec, 7, out, 1024, &got) != 0) return die("%s", "the recorded request was not answered");
        close(rec.fd);
        bad.fd = tcp_connect();
        uint8_t reply[RTLP_SERVER_HELLO];
        if (bad.fd < 0 || xsend(bad.fd, rec.sent, RTLP_CLIENT_HELLO) != 0 || xrecv(bad.fd, reply, sizeof reply) != 0 ||
            xsend(bad.fd, rec.sent + RTLP_CLIENT_HELLO, RTLP_HEADER) != 0 || xsend(bad.fd, f, n) != 0)
            return die("%s", "cannot replay");
        free(f);
    } else {
        if (handshake(&bad, &me) != 0) return die("%s", "cannot connect");
        size_t nact = rtl_model_cut_floats(model, 0);
        float *act = calloc(nact, sizeof *act);
        uint8_t *f = request_frame(&bad, 9, 0, act, nact, &n);
        if (!strcmp(mode, "tamper")) {
            f[n / 2] ^= 0x01;
            xsend(bad.fd, f, n);
        } else if (!strcmp(mode, "truncate")) {
            xsend(bad.fd, f, n / 2);
            shutdown(bad.fd, SHUT_WR);
        } else if (!strcmp(mode, "replay")) {
            float out[1024];
            size_t got;
            if (xsend(bad.fd, f, n) != 0 || read_reply(&bad, 9, out, 1024, &got) != 0)
                return die("%s", "the first copy was not answered");
            xsend(bad.fd, f, n);
        } else if (!strcmp(mode, "oversize")) {
            uint8_t h[4] = {0x7f, 0xff, 0xff, 0xff};
            xsend(bad.fd, h, 4);
        } else return die("unknown mode %s", mode);
        free(f);
        free(act);
    }
    if (!closed_by_server(bad.fd)) return die("the server kept a connection after '%s'", mode);
    if (good_request(&good, 2, 2) != 0) return die("the good connection was not served after '%s'", mode);
    printf("ok: '%s' closed that connection; the other one is still served\n", mode);
    return 0;
}
