/*
 * rtl_frame_fuzz: libFuzzer harness for the peer protocol's parsers
 * (runtime-lite/src/frame.c), built with ASan and UBSan by `make fuzz`.
 * The first input byte picks what the rest is fed to:
 *   0  a request message (rtlp_parse_request): whole, part or held part; a
 *      parsed request is built again and must parse to the same fields
 *   1  a reply message (rtlp_parse_reply), and as a ready message
 *      (rtlp_parse_ready)
 *   2  a stream of frames, as the server reads them: 4-byte length checked
 *      by rtlp_frame_len, then the body opened by a session whose peer
 *      sealed a valid frame first (so the open path runs both ways); the
 *      next byte's low bit picks protocol version 1 or 2 (AES-256-GCM)
 *   3  a client hello (rtlp_parse_client_hello) and the server's accept
 */
#include "frame.h"

#include <stdlib.h>
#include <string.h>

static rtl_peer_key server;
static int ready;

static void setup(void)
{
    if (ready) return;
    if (sodium_init() < 0) abort();
    unsigned char seed[32] = {1};
    crypto_kx_seed_keypair(server.pk, server.sk, seed);
    ready = 1;
}

/* Two sessions keyed alike: a sends, b receives; protocol version 2
 * (AES-256-GCM) when gcm and this CPU has it, else version 1. */
static void pair(rtlp_session *a, rtlp_session *b, int gcm)
{
    memset(a, 0, sizeof *a);
    memset(b, 0, sizeof *b);
    for (int i = 0; i < 32; i++) a->txk[i] = b->rxk[i] = a->rxk[i] = b->txk[i] = (unsigned char)i;
    uint8_t hdr[RTLP_HEADER];
    crypto_secretstream_xchacha20poly1305_init_push(&a->tx, hdr, a->txk);
    if (crypto_secretstream_xchacha20poly1305_init_pull(&b->rx, hdr, b->rxk) != 0) abort();
    if (gcm && rtlp_best_version() >= 2 && (rtlp_session_gcm(a) != 0 || rtlp_session_gcm(b) != 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1) return 0;
    uint8_t mode = data[0] % 4;
    const uint8_t *b = data + 1;
    size_t n = size - 1;
    char why[256];
    if (mode == 0) {
        rtlp_request r;
        if (rtlp_parse_request(b, n, &r, why, sizeof why) == 0) {
            float *x = malloc((r.count ? r.count : 1) * sizeof *x);
            rtlp_floats_get(r.floats, r.count, x);
            size_t m;
            const rtlp_pin *pin = r.pinned ? &r.pin : NULL;
            uint8_t *again =
                r.held   ? rtlp_build_held_request(r.id, r.catalog, r.variant, pin, r.first, r.last, r.geom, r.hgeom,
                                                   x, r.count, &m)
                : r.part ? rtlp_build_part_request(r.id, r.catalog, r.variant, pin, r.first, r.last, r.geom, x, r.count,
                                                   &m)
                         : rtlp_build_request(r.id, r.catalog, r.variant, pin, r.first, r.last, x, r.count, &m);
            rtlp_request r2;
            if (!again || rtlp_parse_request(again, m, &r2, why, sizeof why) != 0 || r2.id != r.id ||
                strcmp(r2.catalog, r.catalog) || strcmp(r2.variant, r.variant) || r2.first != r.first ||
                r2.last != r.last || r2.count != r.count || memcmp(r2.floats, r.floats, (size_t)r.count * 4) ||
                r2.part != r.part || r2.held != r.held || (r.part && memcmp(r2.geom, r.geom, sizeof r.geom)) ||
                (r.held && memcmp(r2.hgeom, r.hgeom, sizeof r.hgeom)) || r2.pinned != r.pinned ||
                memcmp(&r2.pin, &r.pin, sizeof r.pin))
                abort();
            free(again);
            free(x);
        }
    } else if (mode == 1) {
        rtlp_reply r;
        if (rtlp_parse_ready(b, n, why, sizeof why) == 1 && n != RTLP_READY_BYTES) abort();
        if (rtlp_parse_reply(b, n, &r, why, sizeof why) == 0 && r.status == 0) {
            float *x = malloc((r.count ? r.count : 1) * sizeof *x);
            rtlp_floats_get(r.floats, r.count, x);
            free(x);
        }
    } else if (mode == 2) {
        rtlp_session a, s;
        pair(&a, &s, n > 0 && (b[0] & 1)); /* the first byte's low bit: which version */
        /* a valid first frame, then the fuzzer's bytes as further frames */
        uint8_t plain[8] = {1, 0, 0, 0, 1, 2, 3, 4}, frame[8 + RTLP_LEN_BYTES + RTLP_ABYTES], out[8];
        rtlp_seal(&a, plain, sizeof plain, frame);
        uint32_t len;
        if (rtlp_frame_len(frame, 4096, &len, why, sizeof why) != 0 || rtlp_open(&s, frame + 4, len, out) != 0 ||
            memcmp(out, plain, sizeof plain))
            abort();
        /* sealed and opened in place (the coordinator's way) */
        uint8_t f2[sizeof frame];
        memcpy(f2 + RTLP_PLAIN_AT, plain, sizeof plain);
        rtlp_seal(&a, f2 + RTLP_PLAIN_AT, sizeof plain, f2);
        if (rtlp_frame_len(f2, 4096, &len, why, sizeof why) != 0 || rtlp_open(&s, f2 + 4, len, f2 + 5) != 0 ||
            memcmp(f2 + 5, plain, sizeof plain))
            abort();
        size_t p = 0;
        while (n - p >= RTLP_LEN_BYTES) {
            if (rtlp_frame_len(b + p, 4096, &len, why, sizeof why) != 0) break;
            p += RTLP_LEN_BYTES;
            if (n - p < len) break; /* truncated: the server waits, then times out */
            uint8_t *pl = malloc(len - RTLP_ABYTES);
            if (rtlp_open(&s, b + p, len, pl) == 0) abort(); /* nobody without the key forges a frame */
            free(pl);
            p += len;
        }
    } else {
        if (n < RTLP_CLIENT_HELLO) return 0;
        uint8_t st[32], eph[32], reply[RTLP_SERVER_HELLO];
        rtlp_session s;
        if (rtlp_parse_client_hello(b, st, eph, why, sizeof why) == 0)
            (void)rtlp_server_accept(&server, b, &s, reply, why, sizeof why);
    }
    return 0;
}
