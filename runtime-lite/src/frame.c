/*
 * frame.c: the peer protocol, versions 1 and 2 (rtl serve <-> rtl run
 * --peer, --workers). They differ only in the frames' cipher: version 2
 * (AES-256-GCM, about 1.5x faster than version 1's XChaCha20-Poly1305 with
 * libsodium on a CPU with AES-NI) is offered by a client whose CPU has it
 * and chosen by a server whose CPU has it too; otherwise version 1.
 *
 * Keys: every side has a static X25519 key pair (rtl_peer_key; crypto_kx).
 * The device pins the server's public key; the server allow-lists device
 * public keys.
 *
 * Handshake (plaintext; integers big-endian):
 *   C -> S  72 bytes  "RTLP" | u8 version offered (1 or 2) | u8 role (1) |
 *                     u16 0 | client static pk (32) | client ephemeral pk (32)
 *           The server closes the connection here when the static key is
 *           not allow-listed (logged: "unknown device key"), or when it
 *           does not speak the version offered (logged: "protocol version
 *           V, this server speaks ..."; a server older than version 2
 *           refuses a client offering 2 so), before any other work.
 *   S -> C  64 bytes  "RTLP" | u8 version chosen (<= offered) | u8 role (2) |
 *                     u16 0 | server ephemeral pk (32) | stream header S->C (24)
 *   C -> S  24 bytes  stream header C->S
 *   (version 2 sends the same stream headers and does not use them)
 *   C -> S  a frame holding a ready message (below): the device's first
 *           frame, which authenticates it (a key without its secret half
 *           fails here). Until a connection's first frame has opened, the
 *           server accepts no frame longer than RTL_PEER_PREAUTH_FRAME and
 *           allocates nothing larger for it; a device older than this
 *           sends a request first, refused when larger.
 * Session keys: crypto_kx session keys of the ephemeral pair (k_e) and of
 * the static pair (k_s); h = BLAKE2b-256(client hello | server ephemeral
 * pk), and for version 2 also | u8 version chosen (so the choice is
 * authenticated: a changed version byte gives other keys, whose first
 * frame fails); each direction's key = BLAKE2b-256 keyed by k_s's key of that
 * direction over (k_e's key | h). Only the holders of the static secret
 * keys can derive them (authentication: a device key without its secret
 * half fails at its first frame, before any model work); the ephemeral
 * keys make every session's keys new (a recorded session replayed to the
 * server does not decrypt).
 *
 * Frames (both directions, after the handshake):
 *   version 1: u32 length L | L bytes of
 *   crypto_secretstream_xchacha20poly1305 output (plaintext L - 17 bytes,
 *   tag MESSAGE). The stream's state advances per frame, so a replayed,
 *   reordered, dropped, tampered or truncated frame fails authentication.
 *   version 2: u32 length L | u8 0 (authenticated, not encrypted) |
 *   crypto_aead_aes256gcm ciphertext of L - 17 bytes | its 16-byte tag; the
 *   nonce is the frame's number in its direction (u64 little-endian, then 4
 *   zero bytes; each direction has its own key), so the same frames fail.
 *   Both: L - 17 plaintext bytes; L is bounded by the receiver's limit.
 *
 * Messages (a frame's plaintext; integers little-endian):
 *   request  u8 1 | u8 0 | u16 0 | u32 id | u8 n | catalog id (n) | u8 m |
 *            variant id (m) | i32 first | i32 last | u32 count |
 *            count float32 (what crosses cut `first`)
 *   pinned   flag bit 8 (of any kind below too): after the variant id,
 *            u64 version | 32 bytes SHA-256 of manifest.json: the
 *            catalog the device runs, exactly. A server refuses a request
 *            without it, and one whose catalog differs from the one it
 *            holds (reply status 2, the message naming both versions);
 *            rtl_peer_connect's devices always send it.
 *   part     u8 1 | u8 1 | u16 0 | ... as a request, first..last the
 *            GTDP block (a convolution, last = first + 1 with its fused
 *            max pool) | then i32 r0, r1, c0, c1, in_r0, in_r1 | count
 *            float32 (input rows in_r0..in_r1 of the layer, all channels):
 *            a GTDP part (gtdp.c); the reply carries the block's output
 *            rows r0..r1 x channels c0..c1
 *   held     u8 1 | u8 2 | u16 0 | ... as a part | then i32 hl, hr0, hr1,
 *            hc0, hc1 | count float32: a part whose input the worker
 *            partly holds: its answer to the previous request on this
 *            connection, a part of block hl (= first - 1) of rows
 *            hr0..hr1 x channels hc0..hc1, which is the layer's input
 *            there. The floats are the input rows in_r0..in_r1 of every
 *            channel (channel by channel, row by row) less those rows of
 *            channels hc0..hc1 within hr0..hr1. A worker holds its last
 *            part answer per connection, until the next request on it
 *            (of a part cut at convolution rows: its whole rows only).
 *   conv     flag byte 1 or 2 with bit 4 (5, 6): a part or held part of a
 *            block with a max pool (last = first + 1) cut at convolution
 *            rows: after the geometry (and the held geometry) i32 cr0, cr1
 *            (0 <= cr0 < cr1), the convolution rows it computes; r0..r1
 *            are the pooled rows whose windows meet them, a window met
 *            only in part pooled over its rows there (the device merges
 *            the parts' by max) | count float32 as above.
 *   reply    u8 2 | u8 status | u16 0 | u32 id | status 0: u32 count |
 *            count float32 (layer last's output); else u16 n | message (n)
 *            (status 1: the request failed; 2: another catalog version)
 *   ready    u8 3 | u8 0 | u16 0: the device's first frame; no reply
 * A connection carries one request at a time: the next is sent after the
 * reply (the server reads nothing more from a client until it has replied,
 * which is the backpressure).
 */
#include "frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t magic[4] = {'R', 'T', 'L', 'P'};
_Static_assert(RTLP_ABYTES == 1 + crypto_aead_aes256gcm_ABYTES, "version 2's frame overhead is version 1's");

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -1)

int rtlp_best_version(void) { return crypto_aead_aes256gcm_is_available() ? 2 : 1; }

int rtlp_session_gcm(rtlp_session *s)
{
    if (!crypto_aead_aes256gcm_is_available() || crypto_aead_aes256gcm_beforenm(&s->tx_gcm, s->txk) != 0 ||
        crypto_aead_aes256gcm_beforenm(&s->rx_gcm, s->rxk) != 0)
        return -1;
    s->version = 2;
    s->tx_n = s->rx_n = 0;
    return 0;
}

int rtlp_client_hello_v(const rtl_peer_key *me, unsigned char eph_pk[32], unsigned char eph_sk[32],
                        uint8_t hello[RTLP_CLIENT_HELLO], int version)
{
    crypto_kx_keypair(eph_pk, eph_sk);
    memcpy(hello, magic, 4);
    hello[4] = (uint8_t)(version >= RTLP_VERSION_MIN && version <= RTLP_VERSION ? version : rtlp_best_version());
    hello[5] = 1;
    hello[6] = hello[7] = 0;
    memcpy(hello + 8, me->pk, 32);
    memcpy(hello + 40, eph_pk, 32);
    return 0;
}

int rtlp_client_hello(const rtl_peer_key *me, unsigned char eph_pk[32], unsigned char eph_sk[32],
                      uint8_t hello[RTLP_CLIENT_HELLO])
{
    return rtlp_client_hello_v(me, eph_pk, eph_sk, hello, 0);
}

int rtlp_parse_client_hello(const uint8_t hello[RTLP_CLIENT_HELLO], uint8_t static_pk[32], uint8_t eph_pk[32],
                            char *why, size_t whylen)
{
    if (memcmp(hello, magic, 4) != 0) return WHY("not the rtl peer protocol (bad magic)");
    if (hello[4] < RTLP_VERSION_MIN || hello[4] > RTLP_VERSION)
        return WHY("protocol version %u, this server speaks %u..%u", hello[4], RTLP_VERSION_MIN, RTLP_VERSION);
    if (hello[5] != 1 || hello[6] || hello[7]) return WHY("bad hello (role or reserved bytes)");
    memcpy(static_pk, hello + 8, 32);
    memcpy(eph_pk, hello + 40, 32);
    return 0;
}

/* The transcript hash h (version 2: with the version chosen). */
static void transcript(const uint8_t hello[RTLP_CLIENT_HELLO], const uint8_t server_eph[32], uint8_t version,
                       uint8_t h[32])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, hello, RTLP_CLIENT_HELLO);
    crypto_generichash_update(&st, server_eph, 32);
    if (version >= 2) crypto_generichash_update(&st, &version, 1);
    crypto_generichash_final(&st, h, 32);
}

/* key = BLAKE2b-256(key = ks, ke | h) */
static void mix(const uint8_t ks[32], const uint8_t ke[32], const uint8_t h[32], uint8_t out[32])
{
    uint8_t m[64];
    memcpy(m, ke, 32);
    memcpy(m + 32, h, 32);
    crypto_generichash(out, 32, m, 64, ks, 32);
    sodium_memzero(m, sizeof m);
}

int rtlp_server_accept(const rtl_peer_key *server, const uint8_t hello[RTLP_CLIENT_HELLO], rtlp_session *s,
                       uint8_t reply[RTLP_SERVER_HELLO], char *why, size_t whylen)
{
    uint8_t cst[32], ceph[32], epk[32], esk[32], h[32], rxe[32], txe[32], rxs[32], txs[32];
    if (rtlp_parse_client_hello(hello, cst, ceph, why, whylen) != 0) return -1;
    crypto_kx_keypair(epk, esk);
    int bad = crypto_kx_server_session_keys(rxe, txe, epk, esk, ceph) != 0 ||
              crypto_kx_server_session_keys(rxs, txs, server->pk, server->sk, cst) != 0;
    sodium_memzero(esk, sizeof esk);
    if (bad) return WHY("key exchange failed (a weak public key)");
    uint8_t v = hello[4] >= 2 && rtlp_best_version() >= 2 ? 2 : 1;
    transcript(hello, epk, v, h);
    memset(s, 0, sizeof *s);
    mix(rxs, rxe, h, s->rxk);
    mix(txs, txe, h, s->txk);
    sodium_memzero(rxe, 32), sodium_memzero(txe, 32), sodium_memzero(rxs, 32), sodium_memzero(txs, 32);
    s->version = 1;
    if (v == 2 && rtlp_session_gcm(s) != 0) return WHY("AES-256-GCM does not start");
    memcpy(reply, magic, 4);
    reply[4] = v;
    reply[5] = 2;
    reply[6] = reply[7] = 0;
    memcpy(reply + 8, epk, 32);
    crypto_secretstream_xchacha20poly1305_init_push(&s->tx, reply + 40, s->txk);
    return 0;
}

int rtlp_client_finish(const rtl_peer_key *me, const unsigned char eph_pk[32], const unsigned char eph_sk[32],
                       const unsigned char server_pk[32], const uint8_t hello[RTLP_CLIENT_HELLO],
                       const uint8_t reply[RTLP_SERVER_HELLO], rtlp_session *s, uint8_t hdr[RTLP_HEADER],
                       char *why, size_t whylen)
{
    uint8_t h[32], rxe[32], txe[32], rxs[32], txs[32];
    if (memcmp(reply, magic, 4) != 0) return WHY("the server does not speak the rtl peer protocol");
    if (reply[4] < RTLP_VERSION_MIN || reply[4] > hello[4])
        return WHY("the server chose protocol version %u, this device offered %u", reply[4], hello[4]);
    if (reply[5] != 2 || reply[6] || reply[7]) return WHY("bad server hello");
    if (crypto_kx_client_session_keys(rxe, txe, eph_pk, eph_sk, reply + 8) != 0 ||
        crypto_kx_client_session_keys(rxs, txs, me->pk, me->sk, server_pk) != 0)
        return WHY("key exchange failed (a weak public key)");
    transcript(hello, reply + 8, reply[4], h);
    memset(s, 0, sizeof *s);
    mix(rxs, rxe, h, s->rxk);
    mix(txs, txe, h, s->txk);
    sodium_memzero(rxe, 32), sodium_memzero(txe, 32), sodium_memzero(rxs, 32), sodium_memzero(txs, 32);
    s->version = 1;
    if (reply[4] == 2 && rtlp_session_gcm(s) != 0) return WHY("AES-256-GCM does not start on this device");
    /* a server without the pinned key's secret half derives other keys:
     * its stream header then fails here or its first frame fails to open */
    if (crypto_secretstream_xchacha20poly1305_init_pull(&s->rx, reply + 40, s->rxk) != 0)
        return WHY("bad stream header from the server");
    crypto_secretstream_xchacha20poly1305_init_push(&s->tx, hdr, s->txk);
    return 0;
}

int rtlp_server_rx_start(rtlp_session *s, const uint8_t hdr[RTLP_HEADER])
{
    return crypto_secretstream_xchacha20poly1305_init_pull(&s->rx, hdr, s->rxk) != 0 ? -1 : 0;
}

int rtlp_frame_len(const uint8_t hdr[RTLP_LEN_BYTES], uint32_t max_plain, uint32_t *len, char *why, size_t whylen)
{
    uint32_t l = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
    if (l < RTLP_ABYTES + 1) return WHY("frame of %u bytes is shorter than its authentication tag", l);
    if (l - RTLP_ABYTES > max_plain)
        return WHY("frame of %u bytes exceeds the limit of %u", l, max_plain + RTLP_ABYTES);
    *len = l;
    return 0;
}

/* Version 2's nonce: frame number n, little-endian, then zeros. */
static void gcm_nonce(uint64_t n, uint8_t out[crypto_aead_aes256gcm_NPUBBYTES])
{
    memset(out, 0, crypto_aead_aes256gcm_NPUBBYTES);
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)(n >> (8 * i));
}

void rtlp_seal(rtlp_session *s, const uint8_t *plain, size_t n, uint8_t *out)
{
    uint32_t l = (uint32_t)(n + RTLP_ABYTES);
    out[0] = (uint8_t)(l >> 24), out[1] = (uint8_t)(l >> 16), out[2] = (uint8_t)(l >> 8), out[3] = (uint8_t)l;
    if (s->version == 2) {
        uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES];
        gcm_nonce(s->tx_n++, nonce);
        out[4] = 0;
        crypto_aead_aes256gcm_encrypt_afternm(out + 5, NULL, plain, n, out + 4, 1, NULL, nonce, &s->tx_gcm);
        return;
    }
    crypto_secretstream_xchacha20poly1305_push(&s->tx, out + 4, NULL, plain, n, NULL, 0,
                                               crypto_secretstream_xchacha20poly1305_TAG_MESSAGE);
}

int rtlp_open(rtlp_session *s, const uint8_t *c, size_t len, uint8_t *plain)
{
    unsigned char tag;
    if (len < RTLP_ABYTES) return -1;
    if (s->version == 2) {
        uint8_t nonce[crypto_aead_aes256gcm_NPUBBYTES];
        if (c[0] != 0) return -1;
        gcm_nonce(s->rx_n, nonce);
        if (crypto_aead_aes256gcm_decrypt_afternm(plain, NULL, NULL, c + 1, len - 1, c, 1, nonce, &s->rx_gcm) != 0)
            return -1;
        s->rx_n++;
        return 0;
    }
    if (crypto_secretstream_xchacha20poly1305_pull(&s->rx, plain, NULL, &tag, c, len, NULL, 0) != 0) return -1;
    return tag == crypto_secretstream_xchacha20poly1305_TAG_MESSAGE ? 0 : -1;
}

static uint32_t get32(const uint8_t *b) { return b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24; }
static void put32(uint8_t *b, uint32_t v) { b[0] = (uint8_t)v, b[1] = (uint8_t)(v >> 8), b[2] = (uint8_t)(v >> 16), b[3] = (uint8_t)(v >> 24); }

/* count floats as little-endian float32 at b (the wire order): one copy on
 * a little-endian host, byte by byte elsewhere. */
void rtlp_floats_put(uint8_t *b, const float *x, uint32_t count)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (count) memcpy(b, x, (size_t)count * 4);
#else
    for (uint32_t i = 0; i < count; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        put32(b + 4 * (size_t)i, u);
    }
#endif
}

/* An id of n bytes at b into out (NUL-terminated), checked. */
static int get_id(const uint8_t *b, size_t n, char *out, const char *what, char *why, size_t whylen)
{
    if (n == 0 || n > RTL_ID_MAX) return WHY("%s id of %zu bytes", what, n);
    memcpy(out, b, n);
    out[n] = '\0';
    if (!rtl_id_ok(out)) return WHY("%s id with characters outside [a-z0-9_.-]", what);
    return 0;
}

int rtlp_parse_request(const uint8_t *b, size_t n, rtlp_request *out, char *why, size_t whylen)
{
    size_t p = 8;
    if (n < 9) return WHY("request of %zu bytes is too short", n);
    if (b[0] != RTLP_MSG_REQUEST) return WHY("message type %u where a request was expected", b[0]);
    uint8_t fl = b[1] & ~8;
    if ((fl & ~4) > 2 || fl == 4 || b[2] || b[3]) return WHY("request with nonzero reserved bytes");
    out->part = (fl & 3) != 0;
    out->held = (fl & 3) == 2;
    out->pinned = (b[1] & 8) != 0;
    int conv = (fl & 4) != 0;
    out->geom[6] = out->geom[7] = 0;
    out->id = get32(b + 4);
    size_t cn = b[p++];
    if (n - p < cn + 1) return WHY("request ends inside the catalog id");
    if (get_id(b + p, cn, out->catalog, "catalog", why, whylen) != 0) return -1;
    p += cn;
    size_t vn = b[p++];
    if (n - p < vn) return WHY("request ends inside the variant id");
    if (get_id(b + p, vn, out->variant, "variant", why, whylen) != 0) return -1;
    p += vn;
    memset(&out->pin, 0, sizeof out->pin);
    if (out->pinned) {
        if (n - p < 8 + RTL_SHA256_BYTES) return WHY("request ends inside its catalog version");
        out->pin.version = get32(b + p) | (uint64_t)get32(b + p + 4) << 32;
        memcpy(out->pin.manifest, b + p + 8, RTL_SHA256_BYTES);
        p += 8 + RTL_SHA256_BYTES;
    }
    if (n - p < 12) return WHY("request ends inside its layer range");
    out->first = (int32_t)get32(b + p);
    out->last = (int32_t)get32(b + p + 4);
    out->count = get32(b + p + 8);
    p += 12;
    if (out->first < 0 || out->last < out->first) return WHY("bad layer range %d..%d", out->first, out->last);
    if (out->part) {
        if (out->last > out->first + 1)
            return WHY("a part request names a layer or a layer and its pool, not %d..%d", out->first, out->last);
        if (n - p < 24) return WHY("part request ends inside its geometry");
        for (int k = 0; k < 6; k++) out->geom[k] = (int32_t)get32(b + p + 4 * (size_t)k);
        p += 24;
        if (out->held) {
            if (n - p < 20) return WHY("held part request ends inside its held geometry");
            for (int k = 0; k < 5; k++) out->hgeom[k] = (int32_t)get32(b + p + 4 * (size_t)k);
            p += 20;
            if (out->hgeom[0] != out->first - 1 || out->hgeom[1] < 0 || out->hgeom[1] >= out->hgeom[2] ||
                out->hgeom[3] < 0 || out->hgeom[3] >= out->hgeom[4])
                return WHY("held part request with a bad held block %d, rows %d..%d x channels %d..%d",
                           out->hgeom[0], out->hgeom[1], out->hgeom[2], out->hgeom[3], out->hgeom[4]);
        }
        if (conv) {
            if (out->last != out->first + 1) return WHY("convolution rows in a part without a pool");
            if (n - p < 8) return WHY("part request ends inside its convolution rows");
            out->geom[6] = (int32_t)get32(b + p), out->geom[7] = (int32_t)get32(b + p + 4);
            p += 8;
            if (out->geom[6] < 0 || out->geom[6] >= out->geom[7])
                return WHY("part request with convolution rows %d..%d", out->geom[6], out->geom[7]);
        }
    }
    if (out->count > RTLP_MAX_FLOATS) return WHY("request with %u floats (at most %u)", out->count, RTLP_MAX_FLOATS);
    if ((n - p) / 4 != out->count || (n - p) % 4)
        return WHY("request says %u floats but carries %zu bytes", out->count, n - p);
    out->floats = b + p;
    return 0;
}

int rtlp_parse_ready(const uint8_t *b, size_t n, char *why, size_t whylen)
{
    if (n < 1 || b[0] != RTLP_MSG_READY) return 0;
    if (n != RTLP_READY_BYTES || b[1] || b[2] || b[3]) return WHY("malformed ready message (%zu bytes)", n);
    return 1;
}

void rtlp_build_ready(uint8_t b[RTLP_READY_BYTES]) { b[0] = RTLP_MSG_READY, b[1] = b[2] = b[3] = 0; }

int rtlp_parse_reply(const uint8_t *b, size_t n, rtlp_reply *out, char *why, size_t whylen)
{
    if (n < 10) return WHY("reply of %zu bytes is too short", n);
    if (b[0] != RTLP_MSG_REPLY) return WHY("message type %u where a reply was expected", b[0]);
    if (b[2] || b[3]) return WHY("reply with nonzero reserved bytes");
    out->status = b[1];
    out->id = get32(b + 4);
    out->message[0] = '\0';
    out->count = 0;
    out->floats = NULL;
    if (out->status == 0) {
        if (n < 12) return WHY("reply ends inside its count");
        out->count = get32(b + 8);
        if (out->count > RTLP_MAX_FLOATS) return WHY("reply with %u floats", out->count);
        if ((n - 12) / 4 != out->count || (n - 12) % 4)
            return WHY("reply says %u floats but carries %zu bytes", out->count, n - 12);
        out->floats = b + 12;
        return 0;
    }
    size_t m = (size_t)b[8] | (size_t)b[9] << 8;
    if (n - 10 != m) return WHY("reply message of %zu bytes in %zu", m, n - 10);
    if (m >= sizeof out->message) m = sizeof out->message - 1;
    for (size_t i = 0; i < m; i++) out->message[i] = (b[10 + i] >= 32 && b[10 + i] < 127) ? (char)b[10 + i] : '?';
    out->message[m] = '\0';
    return 0;
}

size_t rtlp_request_header(uint8_t *b, uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                           int32_t first, int32_t last, const int32_t *geom, const int32_t *hgeom, uint32_t count)
{
    size_t cn = strlen(catalog), vn = strlen(variant);
    if (cn > RTL_ID_MAX || vn > RTL_ID_MAX) return 0;
    if (!geom) hgeom = NULL;
    int conv = geom && geom[7] > geom[6];
    size_t len = 8 + 1 + cn + 1 + vn + (pin ? 8 + RTL_SHA256_BYTES : 0) + 12 + (geom ? 24 : 0) + (hgeom ? 20 : 0) +
                 (conv ? 8 : 0);
    if (!b) return len;
    size_t p = 0;
    b[p++] = RTLP_MSG_REQUEST;
    b[p++] = (uint8_t)((hgeom ? 2 : geom ? 1 : 0) | (conv ? 4 : 0) | (pin ? 8 : 0)), b[p++] = 0, b[p++] = 0;
    put32(b + p, id), p += 4;
    b[p++] = (uint8_t)cn, memcpy(b + p, catalog, cn), p += cn;
    b[p++] = (uint8_t)vn, memcpy(b + p, variant, vn), p += vn;
    if (pin) {
        put32(b + p, (uint32_t)pin->version), put32(b + p + 4, (uint32_t)(pin->version >> 32)), p += 8;
        memcpy(b + p, pin->manifest, RTL_SHA256_BYTES), p += RTL_SHA256_BYTES;
    }
    put32(b + p, (uint32_t)first), put32(b + p + 4, (uint32_t)last), put32(b + p + 8, count), p += 12;
    for (int k = 0; geom && k < 6; k++) put32(b + p, (uint32_t)geom[k]), p += 4;
    for (int k = 0; hgeom && k < 5; k++) put32(b + p, (uint32_t)hgeom[k]), p += 4;
    for (int k = 6; conv && k < 8; k++) put32(b + p, (uint32_t)geom[k]), p += 4;
    return len;
}

static uint8_t *build_request(uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                              int32_t first, int32_t last, const int32_t *geom, const int32_t *hgeom, const float *x,
                              uint32_t count, size_t *n)
{
    size_t h = rtlp_request_header(NULL, id, catalog, variant, pin, first, last, geom, hgeom, count);
    if (!h) return NULL;
    size_t len = h + (size_t)count * 4;
    uint8_t *b = malloc(len);
    if (!b) return NULL;
    rtlp_request_header(b, id, catalog, variant, pin, first, last, geom, hgeom, count);
    rtlp_floats_put(b + h, x, count);
    *n = len;
    return b;
}

uint8_t *rtlp_build_request(uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                            int32_t first, int32_t last, const float *x, uint32_t count, size_t *n)
{
    return build_request(id, catalog, variant, pin, first, last, NULL, NULL, x, count, n);
}

uint8_t *rtlp_build_part_request(uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                                 int32_t first, int32_t last, const int32_t geom[8], const float *x, uint32_t count,
                                 size_t *n)
{
    return build_request(id, catalog, variant, pin, first, last, geom, NULL, x, count, n);
}

uint8_t *rtlp_build_held_request(uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                                 int32_t first, int32_t last, const int32_t geom[8], const int32_t hgeom[5],
                                 const float *x, uint32_t count, size_t *n)
{
    return build_request(id, catalog, variant, pin, first, last, geom, hgeom, x, count, n);
}

uint8_t *rtlp_build_reply_at(size_t pre, size_t post, uint32_t id, uint8_t status, const float *x, uint32_t count,
                             const char *message, size_t *n)
{
    size_t m = message ? strlen(message) : 0;
    if (m > 500) m = 500;
    size_t len = status == 0 ? 12 + (size_t)count * 4 : 10 + m;
    uint8_t *buf = malloc(pre + len + post), *b = buf + pre;
    if (!buf) return NULL;
    b[0] = RTLP_MSG_REPLY, b[1] = status, b[2] = b[3] = 0;
    put32(b + 4, id);
    if (status == 0) {
        put32(b + 8, count);
        rtlp_floats_put(b + 12, x, count);
    } else {
        b[8] = (uint8_t)m, b[9] = (uint8_t)(m >> 8);
        memcpy(b + 10, message, m);
    }
    *n = len;
    return buf;
}

void rtlp_floats_get(const uint8_t *b, uint32_t count, float *out)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (count) memcpy(out, b, (size_t)count * 4);
#else
    for (uint32_t i = 0; i < count; i++) {
        uint32_t u = get32(b + 4 * (size_t)i);
        memcpy(&out[i], &u, 4);
    }
#endif
}

size_t rtlp_held_floats(int c_in, int w, int a, int b, const int32_t hg[5], int *lo, int *hi)
{
    *lo = hg[1] > a ? hg[1] : a;
    *hi = hg[2] < b ? hg[2] : b;
    size_t rows = *hi > *lo ? (size_t)(*hi - *lo) : 0;
    return ((size_t)c_in * (size_t)(b - a) - (size_t)(hg[4] - hg[3]) * rows) * (size_t)w;
}
