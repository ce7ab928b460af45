/*
 * peer.c: `rtl serve` (rtl_server_*), its client (rtl_peer_*) and the
 * split runner (rtl_offload_run). Protocol and byte layouts: frame.c.
 *
 * Server: one poll(2) thread owns every socket and every session's crypto
 * state; one worker thread runs the model pieces (forward passes of a
 * process run one at a time anyway: model.c). Per connection:
 *  - reading: the handshake (72 then 24 bytes), then frames: 4 bytes of
 *    length, checked before any byte of the body is buffered against
 *    RTL_PEER_PREAUTH_FRAME until the connection's first frame has opened
 *    (authenticated: only then may it be larger), then against max_frame;
 *    then the body; memory per connection is bounded by max_frame (one
 *    frame in, one reply out), and all connections' frames together by
 *    max_memory (a frame that would pass it waits for memory, its
 *    deadline running);
 *  - sources: at most max_per_source connections at once from one
 *    address, and at most handshake_rate new ones a second from it (a
 *    token bucket per address, bursts of twice that): those beyond are
 *    closed at accept, before any work, so that a storm of connections
 *    from one address cannot take every slot;
 *  - one request at a time: after a request the server reads nothing more
 *    from that connection until its reply is written (backpressure: TCP
 *    holds the rest), so the worker's queue holds at most one job per
 *    connection, and connections are at most max_clients;
 *  - deadlines, each counted from the start of what it bounds (never from
 *    the last byte read, which a device sending a byte now and then would
 *    keep moving): the handshake (handshake_ms from the accept), the
 *    handshake and the first frame together (handshake_ms + frame_ms from
 *    the accept), each frame (frame_ms from its first byte), a reply the
 *    client does not read (frame_ms from when it could be sent); an idle
 *    authenticated connection closes after idle_ms without a byte;
 *  - a bad frame (tampered, replayed, truncated, oversized, malformed)
 *    closes that connection with a logged reason; the others go on.
 * Stop: when stop_fd becomes readable the listener closes, requests already
 * read are answered, then every connection closes (bounded by frame_ms).
 *
 * Hooks (rtl_serve_hooks): a host-side tool may move a request's arrival
 * and its reply's departure later and wait after a computation (rtl serve
 * --emulate and --slowdown: runtime-lite/sim/emulate.c); librtl emulates
 * nothing itself.
 */
#include "catalog.h"
#include "frame.h"
#include "store.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- keys ----------------------------------------------------------------- */

int rtl_peer_keygen(rtl_peer_key *out, rtl_err *err)
{
    if (sodium_init() < 0) return rtl_errf(err, "libsodium cannot start");
    crypto_kx_keypair(out->pk, out->sk);
    return 0;
}

/* Writes text to path, created exclusively with mode. */
static int write_new(const char *path, const char *text, mode_t mode, rtl_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return rtl_errf(err, "cannot create %s: %s%s", path, strerror(errno),
                        errno == EEXIST ? " (remove it first: keys are never replaced)" : "");
    size_t n = strlen(text);
    ssize_t w = write(fd, text, n);
    int bad = w != (ssize_t)n || fsync(fd) != 0;
    if (close(fd) != 0) bad = 1;
    if (bad) {
        unlink(path);
        return rtl_errf(err, "cannot write %s", path);
    }
    return 0;
}

int rtl_peer_key_save(const rtl_peer_key *k, const char *path, rtl_err *err)
{
    char p[4096], hex[65], line[80];
    if (snprintf(p, sizeof p, "%s.key", path) >= (int)sizeof p) return rtl_errf(err, "path too long: %s", path);
    rtl_hex(k->sk, 32, hex);
    snprintf(line, sizeof line, "%s\n", hex);
    if (write_new(p, line, 0600, err) != 0) return -1;
    snprintf(p, sizeof p, "%s.pub", path);
    rtl_hex(k->pk, 32, hex);
    snprintf(line, sizeof line, "%s\n", hex);
    if (write_new(p, line, 0644, err) != 0) {
        char q[4096];
        snprintf(q, sizeof q, "%s.key", path);
        unlink(q);
        return -1;
    }
    sodium_memzero(line, sizeof line);
    return 0;
}

/* 64 hex digits and an optional newline from file path into out. */
static int read_hex32(const char *path, uint8_t out[32], rtl_err *err)
{
    char *buf;
    size_t len;
    if (rtl_read_small(path, 256, &buf, &len, err) != 0) return -1;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = '\0';
    int rc = len == 64 && rtl_unhex(buf, out, 32) == 0 ? 0 : -1;
    sodium_memzero(buf, len);
    free(buf);
    if (rc) return rtl_errf(err, "%s: not a peer key (64 hex digits on one line; rtl peer-keygen makes them)", path);
    return 0;
}

int rtl_peer_key_load(const char *path, int secret, rtl_peer_key *out, rtl_err *err)
{
    memset(out, 0, sizeof *out);
    if (sodium_init() < 0) return rtl_errf(err, "libsodium cannot start");
    if (!secret) return read_hex32(path, out->pk, err);
    char p[4096 + 8], stem[4096];
    size_t n = strlen(path);
    if (n >= sizeof stem) return rtl_errf(err, "path too long: %s", path);
    snprintf(stem, sizeof stem, "%s", path);
    if (n > 4 && !strcmp(path + n - 4, ".key")) stem[n - 4] = '\0'; /* the key file itself */
    else if (n > 4 && !strcmp(path + n - 4, ".pub"))
        return rtl_errf(err, "%s is a public key: give the secret key file, %.*s.key", path, (int)(n - 4), path);
    snprintf(p, sizeof p, "%s.key", stem);
    if (read_hex32(p, out->sk, err) != 0) return -1;
    snprintf(p, sizeof p, "%s.pub", stem);
    if (read_hex32(p, out->pk, err) != 0) return -1;
    uint8_t derived[32];
    crypto_scalarmult_base(derived, out->sk);
    if (sodium_memcmp(derived, out->pk, 32) != 0)
        return rtl_errf(err, "%s.pub is not the public half of %s.key", stem, stem);
    return 0;
}

/* ---- the server ------------------------------------------------------------- */

enum rstate { R_HELLO, R_HDR, R_LEN, R_BODY };

struct conn {
    int fd;                 /* -1: free slot */
    uint64_t gen;           /* slot generation: stale worker results are dropped */
    char who[64];
    enum rstate r;
    uint8_t hello[RTLP_CLIENT_HELLO];
    uint8_t *in;            /* current read target */
    size_t have, need;
    uint32_t flen;          /* ciphertext bytes of the frame being read */
    int authed;             /* a frame of this session has opened */
    size_t mem;             /* bytes of max_memory this connection holds */
    char ip[48];            /* its address, without the port */
    rtlp_session s;
    int busy;               /* a request is with the worker or waiting for its arrival time */
    uint8_t *job_plain;     /* request waiting for its arrival time (rtl_serve_hooks) */
    size_t job_len;
    struct held *held;      /* its last part answer, for a held request (frame.c) */
    double job_at;
    uint8_t *out;           /* sealed reply being written */
    size_t out_len, out_off;
    double send_at;
    double t_open, t_frame, t_active;
};

/* A worker's last part answer on a connection: the next request on it may
 * name it as part of its input (a held request), and consumes it. */
struct held {
    char catalog[RTL_ID_MAX + 1], variant[RTL_ID_MAX + 1];
    int32_t geom[5]; /* block (its last layer), rows r0, r1, channels c0, c1 */
    float *y;        /* channels x rows x the block's width */
    size_t n;        /* floats */
};

static void held_free(struct held *h)
{
    if (!h) return;
    free(h->y);
    free(h);
}

struct job {
    size_t slot;
    uint64_t gen;
    uint8_t *plain;  /* request plaintext (owned) */
    size_t len;
    uint8_t *frame;  /* the reply's sealed frame (owned), set by the worker */
    size_t frame_len, sent; /* its bytes, those the worker sent */
    struct held *held, *answer; /* the connection's held answer (taken), this job's (to keep) */
    double at;       /* when it arrived (read and opened; or when a hook said) */
    struct job *next;
};

struct cached {
    char catalog[RTL_ID_MAX + 1], variant[RTL_ID_MAX + 1];
    rtl_catalog *cat;
    rtl_model *m;
};
#define CACHE_MAX 8
#define SOURCES 64          /* addresses whose handshake rate is followed */
#define MAX_FRAME_FLOOR (1u << 20)

struct rtl_server {
    rtl_store *store;
    rtl_peer_key key;
    uint8_t (*allowed)[32];
    size_t n_allowed;
    rtl_serve_options o;
    rtl_serve_hooks hooks;  /* o.hooks' copy (none: all NULL) */
    int lfd, port;
    int wake[2];            /* worker -> poll thread */
    struct conn *conns;
    uint64_t gen;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct job *todo, *todo_tail, *done;
    int stopping;
    pthread_t worker;
    int worker_started;
    struct cached cache[CACHE_MAX];
    size_t ncache;
    rtl_server_stats stats;
    uint64_t mem;           /* bytes of max_memory held (poll thread only) */
    struct bucket {         /* handshake_rate: recent sources' token buckets */
        char ip[48];
        double tokens, at;
    } buckets[SOURCES];
    double refusal_logged;  /* when a refusal at accept was last logged */
    uint64_t refusals_quiet; /* refusals since, not logged */
};

static void slog(rtl_server *s, enum rtl_log_level lv, const char *fmt, ...) RTL_PRINTF(3, 4);
static void slog(rtl_server *s, enum rtl_log_level lv, const char *fmt, ...)
{
    if (!s->store || !s->store->log) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->store->log(s->store->log_user, lv, msg);
}

uint32_t rtl_server_max_frame(rtl_store *store, char *why, size_t whylen)
{
    rtl_installed *in = NULL;
    size_t n = 0;
    uint64_t peak = 0;
    rtl_err err;
    if (whylen) why[0] = '\0';
    if (rtl_list(store, &in, &n, &err) != 0) return 0;
    for (size_t i = 0; i < n; i++) {
        rtl_catalog *cat = rtl_catalog_open(store, in[i].catalog, &err);
        for (size_t k = 0; cat && k < rtl_catalog_variant_count(cat); k++) {
            const rtl_variant *v = rtl_catalog_variant_at(cat, k);
            uint64_t b = rtl_variant_cost(v, RTL_COST_PEAK_ACTIVATION_BYTES);
            if (b <= peak) continue;
            peak = b;
            snprintf(why, whylen, "variant %s of catalog %s version %" PRIu64 ": peak activation %" PRIu64 " bytes",
                     rtl_variant_id(v), in[i].catalog, in[i].version, b);
        }
        rtl_catalog_close(cat);
    }
    free(in);
    if (!peak) return 0;
    /* no request or reply carries more floats than the largest activation;
     * half again and 64 KiB for the headers, the ids and a GTDP part's
     * rows that overlap */
    uint64_t f = peak + peak / 2 + (64u << 10);
    return f > (1u << 30) ? 1u << 30 : f < MAX_FRAME_FLOOR ? MAX_FRAME_FLOOR : (uint32_t)f;
}

/* s->o's limits, the defaults filled in; -1 with err when one is out of range. */
static int server_limits(rtl_server *s, rtl_err *err)
{
    rtl_serve_options *o = &s->o;
    if (!o->max_clients) o->max_clients = 128;
    if (!o->max_per_source) o->max_per_source = 64;
    if (o->handshake_rate == 0) o->handshake_rate = 50;
    if (!o->max_frame) {
        char why[512];
        o->max_frame = rtl_server_max_frame(s->store, why, sizeof why);
        if (o->max_frame) slog(s, RTL_LOG_INFO, "frames up to %" PRIu32 " bytes (--max-frame: from %s)", o->max_frame, why);
        else o->max_frame = MAX_FRAME_FLOOR;
    }
    if (!o->max_memory) o->max_memory = (uint64_t)o->max_frame * 8 > (64u << 20) ? (uint64_t)o->max_frame * 8 : 64u << 20;
    if (!o->handshake_ms) o->handshake_ms = 5000;
    if (!o->frame_ms) o->frame_ms = 30000;
    if (!o->idle_ms) o->idle_ms = 60000;
    if (o->max_clients < 1 || o->max_clients > 4096 || o->max_per_source < 1 || o->handshake_ms < 0 ||
        o->frame_ms < 0 || o->idle_ms < 0 || o->max_frame > (1u << 30) || !(o->handshake_rate > 0))
        return rtl_errf(err, "bad server limits: clients 1..4096, per source >= 1, frames up to 1 GiB, a handshake "
                             "rate > 0, times >= 0");
    if (o->max_memory < 2 * (uint64_t)o->max_frame + 2 * RTL_PEER_PREAUTH_FRAME)
        return rtl_errf(err, "a memory cap of %" PRIu64 " bytes does not hold one frame of %" PRIu32
                             " bytes (twice: received and opened); raise --max-memory or lower --max-frame",
                        o->max_memory, o->max_frame);
    return 0;
}

rtl_server *rtl_server_open(rtl_store *store, const rtl_peer_key *server_key, const rtl_peer_key *allowed,
                            size_t n_allowed, const rtl_serve_options *o, rtl_err *err)
{
    if (sodium_init() < 0) {
        rtl_errf(err, "libsodium cannot start");
        return NULL;
    }
    rtl_server *s = calloc(1, sizeof *s);
    if (!s) {
        rtl_errf(err, "out of memory");
        return NULL;
    }
    s->store = store;
    s->key = *server_key;
    s->lfd = s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (o) s->o = *o;
    if (server_limits(s, err) != 0) goto fail;
    if (s->o.hooks) s->hooks = *s->o.hooks;
    if (!(s->allowed = malloc((n_allowed ? n_allowed : 1) * 32))) goto oom;
    for (size_t i = 0; i < n_allowed; i++) memcpy(s->allowed[i], allowed[i].pk, 32);
    s->n_allowed = n_allowed;
    if (!(s->conns = calloc((size_t)s->o.max_clients, sizeof *s->conns))) goto oom;
    for (int i = 0; i < s->o.max_clients; i++) s->conns[i].fd = -1;
    if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        rtl_errf(err, "pipe: %s", strerror(errno));
        goto fail;
    }
    const char *host = s->o.host ? s->o.host : "127.0.0.1";
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai;
    char port[16];
    if (s->o.port < 0 || s->o.port > 65535) {
        rtl_errf(err, "port %d is not in 0..65535", s->o.port);
        goto fail;
    }
    snprintf(port, sizeof port, "%d", s->o.port);
    int gai = getaddrinfo(host, port, &hints, &ai);
    if (gai != 0) {
        rtl_errf(err, "cannot resolve %s: %s", host, gai_strerror(gai));
        goto fail;
    }
    s->lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    if (s->lfd >= 0) setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s->lfd < 0 || bind(s->lfd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(s->lfd, 64) != 0) {
        rtl_errf(err, "cannot listen on %s port %d: %s", host, s->o.port, strerror(errno));
        freeaddrinfo(ai);
        goto fail;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    getsockname(s->lfd, (struct sockaddr *)&sa, &sl);
    s->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                             : ((struct sockaddr_in *)&sa)->sin_port);
    return s;
oom:
    rtl_errf(err, "out of memory");
fail:
    rtl_server_close(s);
    return NULL;
}

int rtl_server_port(const rtl_server *s) { return s->port; }

void rtl_server_get_stats(const rtl_server *s, rtl_server_stats *out)
{
    pthread_mutex_lock((pthread_mutex_t *)&s->mu);
    *out = s->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&s->mu);
}

static void job_free(struct job *j)
{
    free(j->plain);
    free(j->frame);
    held_free(j->held);
    held_free(j->answer);
    free(j);
}

static void free_jobs(struct job *j)
{
    while (j) {
        struct job *n = j->next;
        job_free(j);
        j = n;
    }
}

void rtl_server_close(rtl_server *s)
{
    if (!s) return;
    for (int i = 0; s->conns && i < s->o.max_clients; i++) {
        struct conn *c = &s->conns[i];
        if (c->fd >= 0) close(c->fd);
        free(c->in);
        free(c->out);
        free(c->job_plain);
        held_free(c->held);
        sodium_memzero(&c->s, sizeof c->s);
    }
    free(s->conns);
    for (size_t i = 0; i < s->ncache; i++) {
        rtl_model_close(s->cache[i].m);
        rtl_catalog_close(s->cache[i].cat);
    }
    free_jobs(s->todo);
    free_jobs(s->done);
    if (s->lfd >= 0) close(s->lfd);
    if (s->wake[0] >= 0) close(s->wake[0]), close(s->wake[1]);
    free(s->allowed);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    sodium_memzero(&s->key, sizeof s->key);
    free(s);
}

/* The model for catalog/variant, opened on first use (worker thread only). */
static rtl_model *cached_model(rtl_server *s, const char *catalog, const char *variant, rtl_err *err)
{
    for (size_t i = 0; i < s->ncache; i++)
        if (!strcmp(s->cache[i].catalog, catalog) && !strcmp(s->cache[i].variant, variant)) return s->cache[i].m;
    rtl_catalog *cat = rtl_catalog_open(s->store, catalog, err);
    if (!cat) return NULL;
    rtl_model_options mo = {.threads = s->o.threads};
    rtl_model *m = rtl_model_open(cat, variant, &mo, err);
    if (!m) {
        rtl_catalog_close(cat);
        return NULL;
    }
    if (s->ncache == CACHE_MAX) { /* drop the oldest */
        rtl_model_close(s->cache[0].m);
        rtl_catalog_close(s->cache[0].cat);
        memmove(s->cache, s->cache + 1, (CACHE_MAX - 1) * sizeof *s->cache);
        s->ncache--;
    }
    struct cached *c = &s->cache[s->ncache++];
    snprintf(c->catalog, sizeof c->catalog, "%s", catalog);
    snprintf(c->variant, sizeof c->variant, "%s", variant);
    c->cat = cat;
    c->m = m;
    return m;
}

static double cpu_ms(void);

/* A part request's input rows in_r0..in_r1 of every channel, read where
 * they lie (rtl_gtdp_compute_part_rows): a held request's rows in its held
 * answer from there, the others from the message in order. */
struct req_rows {
    const uint8_t *msg;    /* the message's floats (little-endian, unaligned) */
    const struct held *h;  /* NULL: a plain part request, every row in the message */
    int a, b_a, w, lo, hi; /* input rows a..a+b_a, their width; rows lo..hi of the held channels are held */
    int hc0, hc1, hr0, hn; /* the held answer's channels, first row and row count */
};

static void req_row(void *arg, int c, int iy, float *dst)
{
    const struct req_rows *r = arg;
    size_t w = (size_t)r->w;
    int in_h = r->h && c >= r->hc0 && c < r->hc1;
    if (in_h && iy >= r->lo && iy < r->hi) {
        memcpy(dst, r->h->y + ((size_t)(c - r->hc0) * (size_t)r->hn + (size_t)(iy - r->hr0)) * w, w * sizeof *dst);
        return;
    }
    int held_rows = r->hi > r->lo ? r->hi - r->lo : 0, rows = r->b_a;
    int before = !r->h ? 0 : (c < r->hc0 ? 0 : (c < r->hc1 ? c : r->hc1) - r->hc0); /* held channels before c */
    size_t off = (size_t)c * (size_t)rows - (size_t)before * (size_t)held_rows;
    off += (size_t)(iy - r->a) - (in_h && iy >= r->hi ? (size_t)held_rows : 0);
    rtlp_floats_get(r->msg + off * w * 4, (uint32_t)w, dst);
}

/* A held request's input: checks that h is the answer it names and that
 * the message carries the other rows; 0 with r and *n (the input's
 * floats), or -1 with err. */
static int held_input(rtl_model *m, const rtlp_request *rq, const struct held *h, struct req_rows *r, size_t *n,
                      rtl_err *err)
{
    rtl_gtdp_layer g;
    const int32_t *hg = rq->hgeom;
    int a = rq->geom[4], b = rq->geom[5];
    if (!h || strcmp(h->catalog, rq->catalog) || strcmp(h->variant, rq->variant) || memcmp(h->geom, hg, sizeof h->geom))
        return rtl_errf(err, "the request names an answer of block %d (rows %d..%d x channels %d..%d) this connection "
                        "does not hold", hg[0], hg[1], hg[2], hg[3], hg[4]);
    /* the held answer is of block hg[0] = first - 1 (frame.c checks), of
     * this model: its map is this block's input */
    if (rtl_gtdp_model_layer(m, rq->first, &g) != 0 || hg[2] > g.h_in || hg[4] > g.c_in ||
        h->n != (size_t)(hg[2] - hg[1]) * (size_t)(hg[4] - hg[3]) * (size_t)g.w_in || a < 0 || b > g.h_in || a >= b)
        return rtl_errf(err, "layer %d: the held answer is not a part of this block's input", rq->first);
    size_t w = (size_t)g.w_in;
    int lo, hi;
    size_t want = rtlp_held_floats(g.c_in, g.w_in, a, b, hg, &lo, &hi);
    if (rq->count != want)
        return rtl_errf(err, "layer %d: the held request carries %u floats, its rows and held answer need %zu",
                        rq->first, rq->count, want);
    *r = (struct req_rows){.msg = rq->floats, .h = h, .a = a, .b_a = b - a, .w = g.w_in, .lo = lo, .hi = hi,
                           .hc0 = hg[3], .hc1 = hg[4], .hr0 = hg[1], .hn = hg[2] - hg[1]};
    *n = (size_t)g.c_in * (size_t)(b - a) * w;
    return 0;
}

/* 1 with err when the request is not for exactly the catalog m was opened
 * from (its version and manifest hash; a request that names none is from a
 * device older than this peer), else 0. */
static int catalog_differs(const rtl_model *m, const rtlp_request *rq, rtl_err *err)
{
    const rtl_catalog *cat = rtl_model_catalog(m);
    char here[17], there[17];
    if (!rq->pinned)
        return rtl_errf(err, "the request does not name the version of catalog %s (a device older than this peer, "
                             "which has version %" PRIu64 "): update the device's rtl", cat->id, cat->version),
               1;
    if (cat->version == rq->pin.version && !memcmp(cat->manifest_sha256, rq->pin.manifest, RTL_SHA256_BYTES)) return 0;
    rtl_hex(cat->manifest_sha256, 8, here);
    rtl_hex(rq->pin.manifest, 8, there);
    if (cat->version != rq->pin.version)
        return rtl_errf(err, "peer has %s version %" PRIu64 ", this device %" PRIu64, cat->id, cat->version,
                        rq->pin.version),
               1;
    return rtl_errf(err, "peer has %s version %" PRIu64 " with another manifest (sha256 %s..., this device's %s...)",
                    cat->id, cat->version, here, there),
           1;
}

/* Runs one request (already parsed once by the poll thread). A part is
 * computed from the request's opened bytes (and its held answer) with no
 * copy in between; the reply is built in its frame and sealed there on
 * this thread, and sent from here when the socket takes it (no departure
 * hook), so that the device has it without waiting for the poll thread:
 * the poll thread leaves a busy connection alone (it neither reads,
 * writes, seals nor closes it until it collects the job). */
static void run_job(rtl_server *s, struct job *j)
{
    double c0 = cpu_ms(), w0 = rtl_now_ms();
    rtlp_request rq;
    char why[256];
    rtl_err err = {{0}};
    float *x = NULL;
    const float *y = NULL;
    float *part_out = NULL;
    size_t ny = 0;
    int ok = 0, status = RTLP_STATUS_FAILED;
    if (rtlp_parse_request(j->plain, j->len, &rq, why, sizeof why) != 0) {
        snprintf(err.msg, sizeof err.msg, "%s", why);
    } else {
        rtl_model *m = cached_model(s, rq.catalog, rq.variant, &err);
        if (m && catalog_differs(m, &rq, &err)) m = NULL, status = RTLP_STATUS_CATALOG;
        size_t nx = rq.count;
        struct req_rows rr = {.msg = rq.floats, .a = rq.geom[4], .b_a = rq.geom[5] - rq.geom[4]};
        if (!m) {
        } else if (rq.part && rq.held && held_input(m, &rq, j->held, &rr, &nx, &err) != 0) {
        } else if (rq.part) {
            rtl_gtdp_part q = {.r0 = rq.geom[0], .r1 = rq.geom[1], .c0 = rq.geom[2], .c1 = rq.geom[3],
                               .in_r0 = rq.geom[4], .in_r1 = rq.geom[5], .cr0 = rq.geom[6], .cr1 = rq.geom[7]};
            rtl_gtdp_layer g;
            if (rtl_gtdp_model_layer(m, rq.first, &g) != 0) {
                snprintf(err.msg, sizeof err.msg, "layer %d is not a convolutional layer GTDP splits", rq.first);
            } else if (rq.last != g.last) {
                snprintf(err.msg, sizeof err.msg, "layers %d..%d: GTDP's block at layer %d here is %d..%d", rq.first,
                         rq.last, rq.first, g.index, g.last);
            } else if (q.r0 < 0 || q.r1 > g.h || q.r0 >= q.r1 || q.c0 < 0 || q.c1 > g.c || q.c0 >= q.c1) {
                snprintf(err.msg, sizeof err.msg, "layer %d: bad part %d..%d x %d..%d", rq.first, q.r0, q.r1, q.c0,
                         q.c1);
            } else if (!(part_out = malloc((size_t)(q.r1 - q.r0) * (q.c1 - q.c0) * g.w * sizeof *part_out))) {
                snprintf(err.msg, sizeof err.msg, "out of memory");
            } else if ((rr.w = g.w_in),
                       rtl_gtdp_compute_part_rows(m, rq.first, &q, nx, req_row, &rr, part_out, &err) == 0) {
                ok = 1;
                y = part_out;
                ny = (size_t)(q.r1 - q.r0) * (q.c1 - q.c0) * g.w;
                /* kept for the next request on this connection: its whole
                 * rows (a part cut at convolution rows holds the pool
                 * windows at its ends only in part: those rows are the
                 * device's, merged) */
                int f0, f1;
                rtl_gtdp_whole_rows(&g, &q, &f0, &f1);
                if (f1 > f0 && (j->answer = calloc(1, sizeof *j->answer))) {
                    snprintf(j->answer->catalog, sizeof j->answer->catalog, "%s", rq.catalog);
                    snprintf(j->answer->variant, sizeof j->answer->variant, "%s", rq.variant);
                    int32_t hg[5] = {g.last, f0, f1, q.c0, q.c1};
                    memcpy(j->answer->geom, hg, sizeof hg);
                    j->answer->n = (size_t)(f1 - f0) * (q.c1 - q.c0) * g.w;
                    if (f0 == q.r0 && f1 == q.r1) {
                        j->answer->y = part_out;
                        part_out = NULL;
                    } else if ((j->answer->y = malloc(j->answer->n * sizeof(float)))) {
                        rtl_gtdp_rows_of(part_out, q.c1 - q.c0, q.r1 - q.r0, g.w, f0 - q.r0, f1 - q.r0,
                                         j->answer->y);
                    } else {
                        free(j->answer);
                        j->answer = NULL;
                    }
                }
            }
        } else if (!(x = malloc((rq.count ? rq.count : 1) * sizeof *x))) {
            snprintf(err.msg, sizeof err.msg, "out of memory");
        } else {
            rtlp_floats_get(rq.floats, rq.count, x);
            ok = rtl_model_run_range(m, rq.first, rq.last, x, rq.count, &y, &ny, &err) == 0;
        }
    }
    size_t n = 0;
    uint32_t id = j->len >= 8 ? (uint32_t)j->plain[4] | (uint32_t)j->plain[5] << 8 | (uint32_t)j->plain[6] << 16 |
                                    (uint32_t)j->plain[7] << 24
                              : 0;
    j->frame = ok ? rtlp_build_reply_at(RTLP_PLAIN_AT, RTLP_ABYTES - 1, rq.id, 0, y, (uint32_t)ny, NULL, &n)
                  : rtlp_build_reply_at(RTLP_PLAIN_AT, RTLP_ABYTES - 1, id, (uint8_t)status, NULL, 0, err.msg, &n);
    j->frame_len = n + RTLP_LEN_BYTES + RTLP_ABYTES;
    if (!ok) slog(s, RTL_LOG_WARN, "request failed: %s", err.msg);
    free(x);
    free(part_out);
    held_free(j->held);
    j->held = NULL;
    if (!ok) {
        held_free(j->answer);
        j->answer = NULL;
    }
    /* the wall time counts from when the request arrived, not from when
     * the computation began (a hook that paces a slower machine: a device
     * of its own would not wait for a core that others on this one hold) */
    if (s->hooks.computed)
        s->hooks.computed(s->hooks.ctx, cpu_ms() - c0, rtl_now_ms() - (j->at > 0 && j->at <= w0 ? j->at : w0));
    struct conn *c = &s->conns[j->slot];
    if (!j->frame || c->fd < 0 || c->gen != j->gen) return;
    rtlp_seal(&c->s, j->frame + RTLP_PLAIN_AT, n, j->frame);
    if (s->hooks.leaves) return; /* the poll thread sends it at the hook's time */
    while (j->sent < j->frame_len) {
        ssize_t w = send(c->fd, j->frame + j->sent, j->frame_len - j->sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w <= 0) break; /* the rest, or the error, is the poll thread's */
        j->sent += (size_t)w;
    }
}

static void *worker_main(void *arg)
{
    rtl_server *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->todo && !s->stopping) pthread_cond_wait(&s->cv, &s->mu);
        if (!s->todo) break;
        struct job *j = s->todo;
        s->todo = j->next;
        if (!s->todo) s->todo_tail = NULL;
        pthread_mutex_unlock(&s->mu);
        run_job(s, j);
        pthread_mutex_lock(&s->mu);
        j->next = s->done;
        s->done = j;
        char b = 1;
        ssize_t w = write(s->wake[1], &b, 1);
        (void)w;
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* max_memory: charges n bytes to c; -1 when they would pass the cap. */
static int mem_charge(rtl_server *s, struct conn *c, size_t n)
{
    if (s->mem + n > s->o.max_memory) return -1;
    s->mem += n;
    c->mem += n;
    return 0;
}

static void mem_release(rtl_server *s, struct conn *c)
{
    s->mem -= c->mem;
    c->mem = 0;
}

static void conn_close(rtl_server *s, struct conn *c, const char *reason)
{
    if (reason) slog(s, RTL_LOG_INFO, "connection %s closed: %s", c->who, reason);
    mem_release(s, c);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c->job_plain);
    held_free(c->held);
    sodium_memzero(&c->s, sizeof c->s);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

static void conn_bad(rtl_server *s, struct conn *c, const char *reason)
{
    pthread_mutex_lock(&s->mu);
    s->stats.closed_bad_frame++;
    pthread_mutex_unlock(&s->mu);
    conn_close(s, c, reason);
}

/* Sets the next read: need bytes into a buffer of that size. */
static int expect(struct conn *c, size_t need)
{
    free(c->in);
    c->in = malloc(need ? need : 1);
    c->have = 0;
    c->need = need;
    return c->in ? 0 : -1;
}

/* A connection refused at accept: logged at most once a second (a storm
 * would flood the log otherwise), with how many went unlogged. */
static void refuse(rtl_server *s, int fd, const char *who, const char *why)
{
    close(fd);
    pthread_mutex_lock(&s->mu);
    s->stats.refused_limit++;
    pthread_mutex_unlock(&s->mu);
    double t = rtl_now_ms();
    if (t - s->refusal_logged < 1000) {
        s->refusals_quiet++;
        return;
    }
    slog(s, RTL_LOG_WARN, "connection %s refused: %s (and %" PRIu64 " more refused in the last second)", who, why,
         s->refusals_quiet);
    s->refusal_logged = t;
    s->refusals_quiet = 0;
}

/* 1 when ip may open a connection now: under max_per_source, and a token
 * of its handshake_rate bucket left (taken). */
static int source_ok(rtl_server *s, const char *ip, char *why, size_t whylen)
{
    int open = 0;
    for (int i = 0; i < s->o.max_clients; i++) open += s->conns[i].fd >= 0 && !strcmp(s->conns[i].ip, ip);
    if (open >= s->o.max_per_source) {
        snprintf(why, whylen, "%d connections from %s already (--max-per-source)", open, ip);
        return 0;
    }
    double t = rtl_now_ms(), burst = 2 * s->o.handshake_rate;
    struct bucket *b = NULL, *oldest = &s->buckets[0];
    for (int i = 0; i < SOURCES && !b; i++) {
        if (!strcmp(s->buckets[i].ip, ip)) b = &s->buckets[i];
        else if (s->buckets[i].at < oldest->at) oldest = &s->buckets[i];
    }
    if (!b) { /* a new source takes the least recently seen one's place */
        b = oldest;
        snprintf(b->ip, sizeof b->ip, "%s", ip);
        b->tokens = burst;
        b->at = t;
    }
    b->tokens += (t - b->at) / 1000 * s->o.handshake_rate;
    if (b->tokens > burst) b->tokens = burst;
    b->at = t;
    if (b->tokens < 1) {
        snprintf(why, whylen, "more than %g new connections a second from %s (--handshake-rate)",
                 s->o.handshake_rate, ip);
        return 0;
    }
    b->tokens -= 1;
    return 1;
}

static void do_accept(rtl_server *s)
{
    for (int k = 0; k < 64; k++) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof sa;
        int fd = accept4(s->lfd, (struct sockaddr *)&sa, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        int slot = -1;
        for (int i = 0; i < s->o.max_clients && slot < 0; i++)
            if (s->conns[i].fd < 0) slot = i;
        char who[64] = "?", ip[48] = "?", why[160];
        if (sa.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, ip, sizeof ip);
            snprintf(who, sizeof who, "%s:%u", ip, ntohs(((struct sockaddr_in *)&sa)->sin_port));
        } else if (sa.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, ip, sizeof ip);
            snprintf(who, sizeof who, "[%s]:%u", ip, ntohs(((struct sockaddr_in6 *)&sa)->sin6_port));
        }
        if (!source_ok(s, ip, why, sizeof why)) {
            refuse(s, fd, who, why);
            continue;
        }
        if (slot < 0) {
            slog(s, RTL_LOG_WARN, "connection %s refused: %d clients already (--max-clients)", who, s->o.max_clients);
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = &s->conns[slot];
        memset(c, 0, sizeof *c);
        c->fd = fd;
        c->gen = ++s->gen;
        snprintf(c->who, sizeof c->who, "%s", who);
        snprintf(c->ip, sizeof c->ip, "%s", ip);
        c->r = R_HELLO;
        c->t_open = c->t_active = rtl_now_ms();
        if (expect(c, RTLP_CLIENT_HELLO) != 0) {
            conn_close(s, c, "out of memory");
            continue;
        }
        pthread_mutex_lock(&s->mu);
        s->stats.accepted++;
        pthread_mutex_unlock(&s->mu);
    }
}

static int key_allowed(const rtl_server *s, const uint8_t pk[32])
{
    int found = 0;
    for (size_t i = 0; i < s->n_allowed; i++) found |= sodium_memcmp(s->allowed[i], pk, 32) == 0;
    return found;
}

/* Queues c's request for the worker. */
static int submit(rtl_server *s, struct conn *c)
{
    struct job *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->slot = (size_t)(c - s->conns);
    j->gen = c->gen;
    j->plain = c->job_plain;
    j->len = c->job_len;
    j->at = c->job_at;
    j->held = c->held; /* every request consumes it */
    c->held = NULL;
    c->job_plain = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->todo_tail) s->todo_tail->next = j;
    else s->todo = j;
    s->todo_tail = j;
    s->stats.requests++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* The frame body's buffer, when max_memory has room for it twice (received
 * and opened): 1 when allocated, 0 when it waits for room, -1 when out of
 * memory. */
static int body_buffer(rtl_server *s, struct conn *c)
{
    if (mem_charge(s, c, 2 * (size_t)c->flen) != 0) return 0;
    return expect(c, c->flen) == 0 ? 1 : -1;
}

/* Answers a device's ready frame with one of the server's, so that the
 * device learns at connect time whether it pinned this server's key. The
 * frame is small: a socket's buffer takes it whole. */
static int send_ready(struct conn *c)
{
    uint8_t m[RTLP_READY_BYTES], f[RTLP_LEN_BYTES + RTLP_READY_BYTES + RTLP_ABYTES];
    rtlp_build_ready(m);
    rtlp_seal(&c->s, m, sizeof m, f);
    return send(c->fd, f, sizeof f, MSG_NOSIGNAL) == (ssize_t)sizeof f ? 0 : -1;
}

/* A whole unit has been read into c->in: act on it. */
static void on_unit(rtl_server *s, struct conn *c)
{
    char why[256];
    switch (c->r) {
    case R_HELLO: {
        uint8_t cst[32], ceph[32];
        memcpy(c->hello, c->in, RTLP_CLIENT_HELLO);
        if (rtlp_parse_client_hello(c->hello, cst, ceph, why, sizeof why) != 0) return conn_bad(s, c, why);
        if (!key_allowed(s, cst)) {
            char hex[65];
            rtl_hex(cst, 32, hex);
            pthread_mutex_lock(&s->mu);
            s->stats.refused_key++;
            pthread_mutex_unlock(&s->mu);
            snprintf(why, sizeof why, "unknown device key %.16s... (not in the allow-list)", hex);
            return conn_close(s, c, why);
        }
        uint8_t reply[RTLP_SERVER_HELLO];
        if (rtlp_server_accept(&s->key, c->hello, &c->s, reply, why, sizeof why) != 0) return conn_bad(s, c, why);
        /* the reply is small: a fresh socket's buffer takes it whole */
        if (send(c->fd, reply, sizeof reply, MSG_NOSIGNAL) != (ssize_t)sizeof reply) return conn_close(s, c, "cannot send the hello");
        c->r = R_HDR;
        if (expect(c, RTLP_HEADER) != 0) return conn_close(s, c, "out of memory");
        return;
    }
    case R_HDR:
        if (rtlp_server_rx_start(&c->s, c->in) != 0) return conn_bad(s, c, "bad stream header");
        slog(s, RTL_LOG_INFO, "connection %s: session open (protocol %d, %s); its first frame authenticates the device",
             c->who, c->s.version, c->s.version == 2 ? "AES-256-GCM" : "XChaCha20-Poly1305");
        c->r = R_LEN;
        if (expect(c, RTLP_LEN_BYTES) != 0) return conn_close(s, c, "out of memory");
        return;
    case R_LEN:
        if (rtlp_frame_len(c->in, c->authed ? s->o.max_frame : RTL_PEER_PREAUTH_FRAME, &c->flen, why, sizeof why) != 0) {
            char r2[400];
            snprintf(r2, sizeof r2, "%s%s", c->authed ? "" : "before the device's first authenticated frame: ", why);
            return conn_bad(s, c, r2);
        }
        c->r = R_BODY;
        free(c->in);
        c->in = NULL; /* allocated when max_memory has room (body_buffer) */
        int got = body_buffer(s, c);
        if (got < 0) return conn_close(s, c, "out of memory");
        if (got == 0)
            slog(s, RTL_LOG_INFO, "connection %s: its frame of %" PRIu32 " bytes waits for memory (%" PRIu64 " of "
                 "--max-memory %" PRIu64 " bytes held)", c->who, c->flen, s->mem, s->o.max_memory);
        return;
    case R_BODY: {
        uint8_t *plain = malloc(c->flen - RTLP_ABYTES);
        if (!plain) return conn_close(s, c, "out of memory");
        if (rtlp_open(&c->s, c->in, c->flen, plain) != 0) {
            free(plain);
            return conn_bad(s, c, "frame failed authentication (tampered, replayed, reordered or not from "
                                  "this session; or the device pinned another server key)");
        }
        rtlp_request rq;
        size_t n = c->flen - RTLP_ABYTES;
        int ready = rtlp_parse_ready(plain, n, why, sizeof why);
        if (!c->authed) slog(s, RTL_LOG_INFO, "connection %s: device authenticated (its first frame opened)", c->who);
        c->authed = 1;
        if (ready != 0) {
            free(plain);
            if (ready < 0) return conn_bad(s, c, why);
            mem_release(s, c);
            if (send_ready(c) != 0) return conn_close(s, c, "cannot answer the device's ready frame");
            c->r = R_LEN;
            if (expect(c, RTLP_LEN_BYTES) != 0) return conn_close(s, c, "out of memory");
            return;
        }
        if (rtlp_parse_request(plain, n, &rq, why, sizeof why) != 0) {
            free(plain);
            char r2[300];
            snprintf(r2, sizeof r2, "malformed request: %s", why);
            return conn_bad(s, c, r2);
        }
        c->job_plain = plain;
        c->job_len = n;
        c->busy = 1;
        /* arrived: when its last byte is here, or later by the hook */
        double done = rtl_now_ms();
        c->job_at = s->hooks.arrived ? s->hooks.arrived(s->hooks.ctx, c->t_frame, done, c->flen + RTLP_LEN_BYTES)
                                     : done;
        c->r = R_LEN;
        if (expect(c, RTLP_LEN_BYTES) != 0) return conn_close(s, c, "out of memory");
        return;
    }
    }
}

static void do_read(rtl_server *s, struct conn *c)
{
    for (int k = 0; k < 16 && c->fd >= 0 && !c->busy && c->in; k++) {
        ssize_t r = read(c->fd, c->in + c->have, c->need - c->have);
        if (r == 0) {
            if (c->have || c->r == R_BODY) return conn_bad(s, c, "connection ended inside a frame (truncated)");
            return conn_close(s, c, c->r == R_LEN ? "closed by the device" : "closed during the handshake");
        }
        if (r < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            char why[128];
            snprintf(why, sizeof why, "read: %s", strerror(errno));
            return conn_close(s, c, why);
        }
        double t = rtl_now_ms();
        if (c->have == 0 && c->r == R_LEN) c->t_frame = t;
        c->t_active = t;
        c->have += (size_t)r;
        if (c->have == c->need) on_unit(s, c);
    }
}

static void do_write(rtl_server *s, struct conn *c)
{
    while (c->out && c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return;
            char why[128];
            snprintf(why, sizeof why, "write: %s", strerror(errno));
            return conn_close(s, c, why);
        }
        c->out_off += (size_t)w;
        c->t_active = rtl_now_ms();
    }
    if (c->out) {
        free(c->out);
        c->out = NULL;
        c->busy = 0;
        mem_release(s, c);
        pthread_mutex_lock(&s->mu);
        s->stats.replies++;
        pthread_mutex_unlock(&s->mu);
    }
}

/* Takes the worker's finished jobs: seals each reply for its connection. */
static void collect(rtl_server *s)
{
    char b[64];
    while (read(s->wake[0], b, sizeof b) > 0) {
    }
    pthread_mutex_lock(&s->mu);
    struct job *j = s->done;
    s->done = NULL;
    pthread_mutex_unlock(&s->mu);
    while (j) {
        struct job *n = j->next;
        struct conn *c = &s->conns[j->slot];
        if (c->fd >= 0 && c->gen == j->gen && j->frame) {
            mem_release(s, c); /* the request's, now freed; the reply's until it is written */
            c->mem = j->frame_len;
            s->mem += j->frame_len;
            held_free(c->held);
            c->held = j->answer;
            j->answer = NULL;
            c->out = j->frame;
            j->frame = NULL;
            c->out_len = j->frame_len;
            c->out_off = j->sent;
            double ready = rtl_now_ms();
            c->send_at = s->hooks.leaves ? s->hooks.leaves(s->hooks.ctx, ready, c->out_len) : ready;
            c->t_active = rtl_now_ms();
            if (c->out_off == c->out_len) do_write(s, c); /* sent by the worker: done */
        } else if (c->fd >= 0 && c->gen == j->gen) {
            conn_close(s, c, "out of memory building a reply");
        }
        job_free(j);
        j = n;
    }
}

int rtl_server_run(rtl_server *s, int stop_fd, rtl_err *err)
{
    int n = s->o.max_clients;
    struct pollfd *pf = calloc((size_t)n + 3, sizeof *pf);
    int *map = calloc((size_t)n + 3, sizeof *map);
    if (!pf || !map) {
        free(pf), free(map);
        return rtl_errf(err, "out of memory");
    }
    if (pthread_create(&s->worker, NULL, worker_main, s) != 0) {
        free(pf), free(map);
        return rtl_errf(err, "cannot start the worker thread");
    }
    s->worker_started = 1;
    slog(s, RTL_LOG_INFO, "serving on port %d (protocol %d..%d, %zu device keys allowed)", s->port, RTLP_VERSION_MIN,
         rtlp_best_version(), s->n_allowed);
    int stopping = 0;
    double stop_by = 0;
    for (;;) {
        double t = rtl_now_ms(), next = t + 1000;
        int np = 0;
        pf[np] = (struct pollfd){.fd = s->wake[0], .events = POLLIN}, map[np++] = -1;
        if (!stopping) {
            pf[np] = (struct pollfd){.fd = stop_fd, .events = POLLIN}, map[np++] = -2;
            pf[np] = (struct pollfd){.fd = s->lfd, .events = POLLIN}, map[np++] = -3;
        }
        int open = 0;
        for (int i = 0; i < n; i++) {
            struct conn *c = &s->conns[i];
            if (c->fd < 0) continue;
            /* timeouts */
            if (c->r <= R_HDR && t - c->t_open > s->o.handshake_ms) {
                conn_bad(s, c, "handshake timed out");
                continue;
            }
            if (!c->authed && !c->busy && t - c->t_open > (double)s->o.handshake_ms + s->o.frame_ms) {
                conn_bad(s, c, "no authenticated frame within --handshake-timeout + --frame-timeout of connecting");
                continue;
            }
            if (!c->busy && c->r >= R_LEN && (c->have || c->r == R_BODY) && t - c->t_frame > s->o.frame_ms) {
                conn_bad(s, c, "frame timed out (a frame must end within --frame-timeout of its first byte)");
                continue;
            }
            if (c->r == R_BODY && !c->in && body_buffer(s, c) < 0) {
                conn_close(s, c, "out of memory");
                continue;
            }
            if (c->out && t >= c->send_at && t - c->send_at > s->o.frame_ms) {
                conn_close(s, c, "the device does not read its reply");
                continue;
            }
            if (c->authed && !c->busy && !c->have && c->r == R_LEN && t - c->t_active > s->o.idle_ms) {
                conn_close(s, c, "idle");
                continue;
            }
            if (stopping && !c->busy) {
                conn_close(s, c, "server stopping");
                continue;
            }
            if (c->job_plain) { /* waiting for its arrival time (a hook's) */
                if (t >= c->job_at) {
                    if (submit(s, c) != 0) {
                        conn_close(s, c, "out of memory");
                        continue;
                    }
                } else if (c->job_at < next) next = c->job_at;
            }
            open++;
            short ev = 0;
            if (!c->busy && c->in) ev = POLLIN; /* a frame waiting for memory is not read meanwhile */
            else if (c->out) {
                if (t >= c->send_at) ev = POLLOUT;
                else if (c->send_at < next) next = c->send_at;
            }
            if (ev || (!c->busy && c->in)) {
                pf[np] = (struct pollfd){.fd = c->fd, .events = ev}, map[np++] = i;
            }
        }
        if (stopping && (open == 0 || t > stop_by)) break;
        int wait = (int)(next - t) + 1;
        if (wait < 0) wait = 0;
        int r = poll(pf, (nfds_t)np, wait);
        if (r < 0 && errno != EINTR) {
            slog(s, RTL_LOG_WARN, "poll: %s", strerror(errno));
            break;
        }
        for (int k = 0; r > 0 && k < np; k++) {
            if (!pf[k].revents) continue;
            if (map[k] == -1) collect(s);
            else if (map[k] == -2) {
                stopping = 1;
                stop_by = rtl_now_ms() + s->o.frame_ms;
                close(s->lfd);
                s->lfd = -1;
                slog(s, RTL_LOG_INFO, "stopping: answering the requests already read, then closing");
            } else if (map[k] == -3) do_accept(s);
            else {
                struct conn *c = &s->conns[map[k]];
                if (c->fd < 0) continue;
                if (pf[k].revents & POLLOUT) do_write(s, c);
                else if (pf[k].revents & (POLLIN | POLLHUP | POLLERR)) {
                    if (!c->busy) do_read(s, c);
                }
            }
        }
    }
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->worker, NULL);
    s->worker_started = 0;
    for (int i = 0; i < n; i++)
        if (s->conns[i].fd >= 0) conn_close(s, &s->conns[i], "server stopped");
    free(pf);
    free(map);
    slog(s, RTL_LOG_INFO, "stopped");
    return 0;
}

/* ---- the client --------------------------------------------------------------- */

struct rtl_peer {
    int fd;
    rtlp_session s;
    uint32_t next_id;
    int held;          /* the server holds the answer to the last request: */
    int32_t hgeom[5];  /* its block (last layer), rows, channels */
};

/* Waits until fd is ready for events or deadline (absolute ms); -1 with err. */
static int wait_fd(int fd, short events, double deadline, const char *what, rtl_err *err)
{
    for (;;) {
        double left = deadline - rtl_now_ms();
        if (left <= 0) return rtl_errf(err, "the peer timed out (%s)", what);
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)left + 1);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return rtl_errf(err, "poll: %s", strerror(errno));
    }
}

static int send_all(int fd, const uint8_t *b, size_t n, double deadline, rtl_err *err)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(fd, b + off, n - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return rtl_errf(err, "the peer failed while sending: %s", strerror(errno));
        if (wait_fd(fd, POLLOUT, deadline, "sending", err) != 0) return -1;
    }
    return 0;
}

static int recv_all(int fd, uint8_t *b, size_t n, double deadline, rtl_err *err)
{
    size_t off = 0;
    while (off < n) {
        ssize_t r = recv(fd, b + off, n - off, 0);
        if (r > 0) {
            off += (size_t)r;
            continue;
        }
        if (r == 0) return rtl_errf(err, "the peer closed the connection");
        if (errno != EAGAIN && errno != EINTR) return rtl_errf(err, "the peer failed while receiving: %s", strerror(errno));
        if (wait_fd(fd, POLLIN, deadline, "waiting for the reply", err) != 0) return -1;
    }
    return 0;
}

/* The device's first frame, a ready message, and the server's answer, one
 * too: a server that cannot open the device's frame derived other keys
 * (the pinned key is not its key) and closes; one whose answer does not
 * open here is not the pinned server either. */
static int ready_exchange(rtl_peer *p, double deadline, rtl_err *err)
{
    uint8_t m[RTLP_READY_BYTES], f[RTLP_LEN_BYTES + RTLP_READY_BYTES + RTLP_ABYTES], plain[RTLP_READY_BYTES + 1];
    uint32_t flen = 0;
    char why[256];
    rtlp_build_ready(m);
    rtlp_seal(&p->s, m, sizeof m, f);
    if (send_all(p->fd, f, sizeof f, deadline, err) != 0) return -1;
    if (recv_all(p->fd, f, RTLP_LEN_BYTES, deadline, err) != 0) {
        if (strstr(err->msg, "closed"))
            return rtl_errf(err, "the server closed the connection at this device's first frame: its key is not the "
                                 "one pinned (--peer-key names another server's public key; the server's log says "
                                 "'failed authentication')");
        return -1;
    }
    if (rtlp_frame_len(f, RTLP_READY_BYTES, &flen, why, sizeof why) != 0 ||
        flen != RTLP_READY_BYTES + RTLP_ABYTES || recv_all(p->fd, f + RTLP_LEN_BYTES, flen, deadline, err) != 0 ||
        rtlp_open(&p->s, f + RTLP_LEN_BYTES, flen, plain) != 0 || rtlp_parse_ready(plain, RTLP_READY_BYTES, why, sizeof why) != 1)
        return rtl_errf(err, "the server's first frame does not authenticate: it is not the server whose key is "
                             "pinned (--peer-key), or the link is tampered with");
    return 0;
}

rtl_peer *rtl_peer_connect(const char *host, int port, const rtl_peer_key *me,
                           const unsigned char server_pk[RTL_PEER_PK_BYTES], int timeout_ms, rtl_err *err)
{
    if (sodium_init() < 0) {
        rtl_errf(err, "libsodium cannot start");
        return NULL;
    }
    double deadline = rtl_now_ms() + (timeout_ms > 0 ? timeout_ms : 5000);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *ai;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int gai = getaddrinfo(host, ps, &hints, &ai);
    if (gai != 0) {
        rtl_errf(err, "cannot resolve peer %s: %s", host, gai_strerror(gai));
        return NULL;
    }
    rtl_peer *p = calloc(1, sizeof *p);
    if (!p) {
        freeaddrinfo(ai);
        rtl_errf(err, "out of memory");
        return NULL;
    }
    p->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int rc = p->fd < 0 ? -1 : connect(p->fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rc != 0 && errno == EINPROGRESS) {
        if (wait_fd(p->fd, POLLOUT, deadline, "connecting", err) != 0) goto fail;
        int e = 0;
        socklen_t el = sizeof e;
        getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &e, &el);
        if (e) {
            rtl_errf(err, "cannot connect to peer %s:%d: %s", host, port, strerror(e));
            goto fail;
        }
    } else if (rc != 0) {
        rtl_errf(err, "cannot connect to peer %s:%d: %s", host, port, strerror(errno));
        goto fail;
    }
    int one = 1;
    setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint8_t hello[RTLP_CLIENT_HELLO], reply[RTLP_SERVER_HELLO], hdr[RTLP_HEADER];
    unsigned char epk[32], esk[32];
    char why[256];
    rtlp_client_hello(me, epk, esk, hello);
    if (send_all(p->fd, hello, sizeof hello, deadline, err) != 0 ||
        recv_all(p->fd, reply, sizeof reply, deadline, err) != 0) {
        rtl_err_prefix(err,
                       "handshake with %s:%d (is this device's key in the server's allow-list? does the server speak "
                       "protocol version %d, offered here? its log says why it closed)",
                       host, port, hello[4]);
        goto fail;
    }
    rc = rtlp_client_finish(me, epk, esk, server_pk, hello, reply, &p->s, hdr, why, sizeof why);
    sodium_memzero(esk, sizeof esk);
    if (rc != 0) {
        rtl_errf(err, "handshake with %s:%d: %s", host, port, why);
        goto fail;
    }
    if (send_all(p->fd, hdr, sizeof hdr, deadline, err) != 0 || ready_exchange(p, deadline, err) != 0) {
        rtl_err_prefix(err, "handshake with %s:%d", host, port);
        goto fail;
    }
    return p;
fail:
    rtl_peer_close(p);
    return NULL;
}

void rtl_peer_close(rtl_peer *p)
{
    if (!p) return;
    if (p->fd >= 0) close(p->fd);
    sodium_memzero(&p->s, sizeof p->s);
    free(p);
}

/* The plain API's input and answer: copied from x, into out. */
struct plain_io {
    const float *x;
    size_t n;
    float *out;
};
static void plain_fill(void *ctx, uint8_t *dst)
{
    const struct plain_io *c = ctx;
    rtlp_floats_put(dst, c->x, (uint32_t)c->n);
}
static void plain_take(void *ctx, const uint8_t *src, uint32_t count)
{
    const struct plain_io *c = ctx;
    rtlp_floats_get(src, count, c->out);
}

/* One request and its reply: the request's header and floats (io->fill)
 * written straight into the frame and sealed in place, the reply opened in
 * place and its floats handed to io->take. */
static int peer_call(rtl_peer *p, const rtl_model *m, int first, int last, const int32_t *geom,
                     const int32_t *hgeom, size_t n, const rtl_part_io *io, size_t cap, size_t *nout, int deadline_ms,
                     rtl_err *err)
{
    const rtl_catalog *cat = rtl_model_catalog(m);
    const char *catalog = cat->id, *variant = rtl_variant_id(rtl_model_variant(m));
    rtlp_pin pin = {.version = cat->version};
    memcpy(pin.manifest, cat->manifest_sha256, sizeof pin.manifest);
    double deadline = rtl_now_ms() + (deadline_ms > 0 ? deadline_ms : 30000);
    p->held = 0; /* every request consumes the server's held answer */
    if (p->fd < 0) return rtl_errf(err, "the peer connection is closed");
    if (n > RTLP_MAX_FLOATS) return rtl_errf(err, "%zu floats exceed the protocol's %u", n, RTLP_MAX_FLOATS);
    uint32_t id = ++p->next_id;
    size_t hl = rtlp_request_header(NULL, id, catalog, variant, &pin, first, last, geom, hgeom, (uint32_t)n);
    if (!hl) return rtl_errf(err, "catalog or variant id too long");
    size_t plen = hl + n * 4;
    uint8_t *frame = malloc(plen + RTLP_LEN_BYTES + RTLP_ABYTES);
    int rc = -1;
    uint8_t *body = NULL;
    if (!frame) {
        rtl_errf(err, "out of memory");
        goto done;
    }
    uint8_t *plain = frame + RTLP_PLAIN_AT;
    rtlp_request_header(plain, id, catalog, variant, &pin, first, last, geom, hgeom, (uint32_t)n);
#define STAMP(k) (io->t ? (void)(io->t[k] = rtl_now_ms()) : (void)0)
    io->fill(io->ctx, plain + hl);
    STAMP(RTL_IO_T_FILLED);
    rtlp_seal(&p->s, plain, plen, frame);
    STAMP(RTL_IO_T_SEALED);
    if (send_all(p->fd, frame, plen + RTLP_LEN_BYTES + RTLP_ABYTES, deadline, err) != 0) goto done;
    STAMP(RTL_IO_T_SENT);
    uint8_t hdr[RTLP_LEN_BYTES];
    uint32_t flen;
    char why[256];
    if (recv_all(p->fd, hdr, sizeof hdr, deadline, err) != 0) goto done;
    STAMP(RTL_IO_T_REPLY);
    if (rtlp_frame_len(hdr, (uint32_t)(cap * 4 + 4096), &flen, why, sizeof why) != 0) {
        rtl_errf(err, "bad reply from the peer: %s", why);
        goto done;
    }
    if (!(body = malloc(flen))) {
        rtl_errf(err, "out of memory");
        goto done;
    }
    if (recv_all(p->fd, body, flen, deadline, err) != 0) goto done;
    STAMP(RTL_IO_T_RECEIVED);
    uint8_t *rp = body + 1; /* opened in place */
    if (rtlp_open(&p->s, body, flen, rp) != 0) {
        rtl_errf(err, "the peer's reply failed authentication");
        goto done;
    }
    STAMP(RTL_IO_T_OPENED);
    rtlp_reply r;
    if (rtlp_parse_reply(rp, flen - RTLP_ABYTES, &r, why, sizeof why) != 0) {
        rtl_errf(err, "bad reply from the peer: %s", why);
        goto done;
    }
    if (r.id != id) {
        rtl_errf(err, "the peer answered request %u, not %u", r.id, id);
        goto done;
    }
    if (r.status != 0) { /* status 2: another catalog version, the message says which */
        rtl_errf(err, "%s%s", r.status == RTLP_STATUS_CATALOG ? "" : "the peer could not run it: ", r.message);
        goto done;
    }
    if (r.count > cap) {
        rtl_errf(err, "the peer answered %u floats, at most %zu were expected", r.count, cap);
        goto done;
    }
    io->take(io->ctx, r.floats, r.count);
    STAMP(RTL_IO_T_PLACED);
#undef STAMP
    *nout = r.count;
    rc = 0;
    if (geom) { /* a part's answer: the server keeps it for the next request */
        int32_t hg[5] = {last, geom[0], geom[1], geom[2], geom[3]};
        memcpy(p->hgeom, hg, sizeof hg);
        p->held = 1;
    }
done:
    if (rc != 0 && p->fd >= 0) {
        close(p->fd);
        p->fd = -1;
    }
    free(frame);
    free(body);
    return rc;
}

int rtl_peer_run(rtl_peer *p, const rtl_model *m, int first, int last, const float *x, size_t n, float *out,
                 size_t cap, size_t *nout, int deadline_ms, rtl_err *err)
{
    struct plain_io c = {x, n, out};
    rtl_part_io io = {plain_fill, plain_take, &c, NULL};
    return peer_call(p, m, first, last, NULL, NULL, n, &io, cap, nout, deadline_ms, err);
}

int rtl_peer_run_part(rtl_peer *p, const rtl_model *m, int first, int last, const rtl_gtdp_part *q, const float *x,
                      size_t n, float *out, size_t cap, size_t *nout, int deadline_ms, rtl_err *err)
{
    struct plain_io c = {x, n, out};
    rtl_part_io io = {plain_fill, plain_take, &c, NULL};
    return rtl_peer_run_part_io(p, m, first, last, q, NULL, n, &io, cap, nout, deadline_ms, err);
}

int rtl_peer_run_part_io(rtl_peer *p, const rtl_model *m, int first, int last, const rtl_gtdp_part *q,
                         const int32_t *hgeom, size_t n, const rtl_part_io *io, size_t cap, size_t *nout,
                         int deadline_ms, rtl_err *err)
{
    int32_t geom[8] = {q->r0, q->r1, q->c0, q->c1, q->in_r0, q->in_r1, q->cr0, q->cr1};
    return peer_call(p, m, first, last, geom, hgeom, n, io, cap, nout, deadline_ms, err);
}

void rtl_peer_set_held(rtl_peer *p, const int32_t hgeom[5])
{
    if (!p) return;
    p->held = hgeom != NULL && p->held;
    if (p->held) memcpy(p->hgeom, hgeom, sizeof p->hgeom);
}

int rtl_peer_held(const rtl_peer *p, int32_t hgeom[5])
{
    if (!p || p->fd < 0 || !p->held) return 0;
    memcpy(hgeom, p->hgeom, sizeof p->hgeom);
    return 1;
}

/* ---- the split runner ---------------------------------------------------------- */

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* 1 when every one of n floats is finite. */
static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* Layers i..j on the peer: its answer received into reply (not into the
 * input, which a fallback needs as it was) and checked before use: exactly
 * the floats cut j + 1 carries, every one finite. 0, or -1 with why. */
static int offload_piece(rtl_model *m, rtl_peer *peer, int i, int j, const float *in, size_t have, float *reply,
                         int left, rtl_err *why)
{
    size_t want = rtl_model_cut_floats(m, j + 1), got = 0;
    if (rtl_peer_run(peer, m, i, j, in, have, reply, want, &got, left, why) != 0)
        return -1;
    if (got != want)
        return rtl_errf(why, "the peer answered %zu floats where layer %d's output has %zu (not used)", got, j, want);
    if (!all_finite(reply, got))
        return rtl_errf(why, "the peer's answer holds a NaN or an infinity (not used)");
    return 0;
}

int rtl_offload_run(rtl_model *m, const rtl_plan *plan, rtl_peer *peer, const float *x, const rtl_offload_hooks *hooks,
                    int deadline_ms, rtl_offload_result *res, rtl_err *err)
{
    int n = rtl_model_layers(m);
    memset(res, 0, sizeof *res);
    if (!plan || plan->layers != n)
        return rtl_errf(err, "the plan has %d layers, the variant %d", plan ? plan->layers : -1, n);
    size_t maxf = rtl_model_cut_floats(m, 0);
    for (int i = 1; i <= n; i++)
        if (rtl_model_cut_floats(m, i) > maxf) maxf = rtl_model_cut_floats(m, i);
    float *buf = malloc(maxf * sizeof *buf), *reply = peer ? malloc(maxf * sizeof *reply) : NULL;
    if (!buf || (peer && !reply)) {
        free(buf);
        free(reply);
        return rtl_errf(err, "out of memory");
    }
    memcpy(buf, x, rtl_model_cut_floats(m, 0) * sizeof *buf);
    size_t have = rtl_model_cut_floats(m, 0);
    double t0 = rtl_now_ms(), dead = t0 + (deadline_ms > 0 ? deadline_ms : 30000);
    int rc = 0, cloud_layers = 0, device_layers = 0;
    for (int i = 0; i < n && rc == 0;) {
        int j = i, cloud = plan->on_cloud[i] && !res->fell_back && peer;
        while (j + 1 < n && plan->on_cloud[j + 1] == plan->on_cloud[i]) j++;
        if (cloud) {
            rtl_err pe = {{0}};
            int left = (int)(dead - rtl_now_ms());
            if (left > 0 && offload_piece(m, peer, i, j, buf, have, reply, left, &pe) == 0) {
                float *t = buf; /* the checked answer is the next piece's input */
                buf = reply, reply = t;
                have = rtl_model_cut_floats(m, j + 1);
                cloud_layers += j - i + 1;
                i = j + 1;
                continue;
            }
            if (left <= 0) snprintf(pe.msg, sizeof pe.msg, "the deadline of %d ms passed", deadline_ms);
            res->fell_back = 1;
            snprintf(res->reason, sizeof res->reason, "%s", pe.msg);
            /* buf still holds what crossed cut i: finish here from it */
        }
        if (!plan->on_cloud[i] || res->fell_back || !peer) {
            if (res->fell_back) j = n - 1; /* everything left runs here */
            const float *y;
            size_t ny;
            double d0 = rtl_now_ms(), c0 = cpu_ms();
            rc = rtl_model_run_range(m, i, j, buf, have, &y, &ny, err);
            if (rc != 0) break;
            if (hooks && hooks->device_piece) hooks->device_piece(hooks->ctx, m, i, j, cpu_ms() - c0, rtl_now_ms() - d0);
            memcpy(buf, y, ny * sizeof *buf);
            have = ny;
            device_layers += j - i + 1;
            i = j + 1;
        }
    }
    res->ms = rtl_now_ms() - t0;
    res->ran_on_cloud = cloud_layers;
    snprintf(res->where, sizeof res->where, "%s",
             res->fell_back ? "device (fallback)" : !cloud_layers ? "device" : !device_layers ? "cloud" : "split");
    if (rc == 0) rc = rtl_model_set_output(m, buf, have, err);
    free(buf);
    free(reply);
    return rc;
}
