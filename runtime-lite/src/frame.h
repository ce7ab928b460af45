/* frame.h: the peer protocol's handshake, frames and messages (private to
 * librtl; layouts at the top of frame.c). */
#ifndef RTL_FRAME_H
#define RTL_FRAME_H

#include "internal.h"

#include <sodium.h>

#define RTLP_VERSION 2     /* the newest this build speaks (2: AES-256-GCM where the CPU has AES-NI) */
#define RTLP_VERSION_MIN 1 /* the oldest it still accepts (1: XChaCha20-Poly1305) */
#define RTLP_CLIENT_HELLO 72
#define RTLP_SERVER_HELLO 64
#define RTLP_HEADER crypto_secretstream_xchacha20poly1305_HEADERBYTES /* 24 */
#define RTLP_ABYTES crypto_secretstream_xchacha20poly1305_ABYTES     /* 17 */
#define RTLP_LEN_BYTES 4
#define RTLP_MSG_REQUEST 1
#define RTLP_MSG_REPLY 2
#define RTLP_STATUS_FAILED 1  /* a reply's status: the request failed */
#define RTLP_STATUS_CATALOG 2 /* the server holds another version of the catalog */
#define RTLP_MSG_READY 3   /* the device's first frame: 4 bytes, "u8 3 | u8 0 | u16 0" */
#define RTLP_READY_BYTES 4
#define RTLP_MAX_FLOATS (64u << 20) /* no message carries more floats */

/* A session: each direction's key and cipher state. version 1 (and 0, a
 * session set up by hand): the secretstream states; 2: AES-256-GCM with
 * the frame's number in its direction as the nonce. */
typedef struct rtlp_session {
    crypto_secretstream_xchacha20poly1305_state tx, rx;
    unsigned char txk[32], rxk[32];
    int version;
    uint64_t tx_n, rx_n; /* version 2: frames sealed, frames opened */
    crypto_aead_aes256gcm_state tx_gcm, rx_gcm;
} rtlp_session;

/* The newest protocol version this host can speak: 2 where libsodium has
 * AES-256-GCM on this CPU (AES-NI and PCLMUL), else 1. */
int rtlp_best_version(void);
/* Starts version 2's ciphers of s from its keys (s->version = 2). 0, or -1
 * when this CPU has no AES-256-GCM. */
int rtlp_session_gcm(rtlp_session *s);

/* Client: fills hello (RTLP_CLIENT_HELLO bytes) and a fresh ephemeral pair;
 * offers protocol version (0: rtlp_best_version()). */
int rtlp_client_hello(const rtl_peer_key *me, unsigned char eph_pk[32], unsigned char eph_sk[32],
                      uint8_t hello[RTLP_CLIENT_HELLO]);
int rtlp_client_hello_v(const rtl_peer_key *me, unsigned char eph_pk[32], unsigned char eph_sk[32],
                        uint8_t hello[RTLP_CLIENT_HELLO], int version);
/* Server: parses a client hello: magic, version, both public keys. -1 with
 * why (a reason for the log). */
int rtlp_parse_client_hello(const uint8_t hello[RTLP_CLIENT_HELLO], uint8_t static_pk[32], uint8_t eph_pk[32],
                            char *why, size_t whylen);
/* Server: derives the session keys from the client hello and a fresh
 * ephemeral pair, starts its sending stream and fills its reply (magic,
 * version, ephemeral public key, stream header). */
int rtlp_server_accept(const rtl_peer_key *server, const uint8_t hello[RTLP_CLIENT_HELLO], rtlp_session *s,
                       uint8_t reply[RTLP_SERVER_HELLO], char *why, size_t whylen);
/* Client: checks the server's reply, derives the keys (pinning server_pk),
 * starts its receiving stream and its sending one (header to send: hdr). */
int rtlp_client_finish(const rtl_peer_key *me, const unsigned char eph_pk[32], const unsigned char eph_sk[32],
                       const unsigned char server_pk[32], const uint8_t hello[RTLP_CLIENT_HELLO],
                       const uint8_t reply[RTLP_SERVER_HELLO], rtlp_session *s, uint8_t hdr[RTLP_HEADER],
                       char *why, size_t whylen);
/* Server: starts its receiving stream from the client's header. */
int rtlp_server_rx_start(rtlp_session *s, const uint8_t hdr[RTLP_HEADER]);

/* The ciphertext length in a frame's 4-byte header, checked: at least
 * RTLP_ABYTES + 1 and at most max_plain + RTLP_ABYTES. */
int rtlp_frame_len(const uint8_t hdr[RTLP_LEN_BYTES], uint32_t max_plain, uint32_t *len, char *why, size_t whylen);
/* Seals plain (n bytes) into out: 4-byte length + ciphertext; out must
 * hold n + RTLP_LEN_BYTES + RTLP_ABYTES. In place when plain is out +
 * RTLP_PLAIN_AT. */
void rtlp_seal(rtlp_session *s, const uint8_t *plain, size_t n, uint8_t *out);
/* Opens ciphertext c (len bytes, without the length) into plain (len -
 * RTLP_ABYTES bytes; in place when plain is c + 1). -1 when it fails authentication (tampered, replayed,
 * reordered, or from another session). */
int rtlp_open(rtlp_session *s, const uint8_t *c, size_t len, uint8_t *plain);

/* The catalog a request is for, exactly: its version and the SHA-256 of its
 * manifest.json (a peer holding any other refuses it). */
typedef struct rtlp_pin {
    uint64_t version;
    uint8_t manifest[RTL_SHA256_BYTES];
} rtlp_pin;

/* A request, parsed: pointers into the message. */
typedef struct rtlp_request {
    uint32_t id;
    char catalog[RTL_ID_MAX + 1], variant[RTL_ID_MAX + 1];
    int pinned;            /* flag bit 8: pin follows the variant id */
    rtlp_pin pin;
    int32_t first, last;
    uint32_t count;
    const uint8_t *floats; /* count little-endian float32, unaligned */
    int part;              /* 1: a GTDP part of layer `first` (== last) */
    int32_t geom[8];       /* part: output rows r0, r1, channels c0, c1, input rows in_r0, in_r1, and
                            * (flag bit 4) convolution rows cr0, cr1 (else 0, 0) */
    int held;              /* part with held input (flag byte 2) */
    int32_t hgeom[5];      /* held: the block (its last layer) whose answer the worker holds, and that
                            * answer's rows r0, r1 and channels c0, c1 */
} rtlp_request;

typedef struct rtlp_reply {
    uint32_t id;
    uint8_t status;        /* 0: ok */
    uint32_t count;
    const uint8_t *floats;
    char message[512];     /* status != 0 */
} rtlp_reply;

/* 1 when the message of n bytes at b is a ready message (RTLP_MSG_READY),
 * 0 when it is of another type, -1 with why when it is a malformed one. */
int rtlp_parse_ready(const uint8_t *b, size_t n, char *why, size_t whylen);
/* Fills b (RTLP_READY_BYTES) with a ready message. */
void rtlp_build_ready(uint8_t b[RTLP_READY_BYTES]);

/* Parses a request or a reply message of n bytes. -1 with why. */
int rtlp_parse_request(const uint8_t *b, size_t n, rtlp_request *out, char *why, size_t whylen);
int rtlp_parse_reply(const uint8_t *b, size_t n, rtlp_reply *out, char *why, size_t whylen);
/* Encodes into a new buffer (*n bytes) the caller frees; NULL when out of
 * memory. */
uint8_t *rtlp_build_request(uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                            int32_t first, int32_t last, const float *x, uint32_t count, size_t *n);
/* A GTDP part request (flag byte 1 = 1; layers first..last: the block;
 * geom: 6 int32 after the count, and when geom[7] > geom[6] flag bit 4 and
 * the convolution rows geom[6], geom[7] after them). */
uint8_t *rtlp_build_part_request(uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                                 int32_t first, int32_t last, const int32_t geom[8], const float *x, uint32_t count,
                                 size_t *n);
/* The same with held input (flag byte 2, hgeom: 5 int32 after geom; NULL:
 * a plain part request). */
uint8_t *rtlp_build_held_request(uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                                 int32_t first, int32_t last, const int32_t geom[8], const int32_t hgeom[5],
                                 const float *x, uint32_t count, size_t *n);
/* A reply (status 0: count floats x; otherwise the error message), *n
 * bytes, at offset pre of a new buffer of pre + *n + post bytes (the
 * buffer returned, NULL when out of memory; a reply sealed in place: pre =
 * RTLP_PLAIN_AT, post = RTLP_ABYTES - 1). */
uint8_t *rtlp_build_reply_at(size_t pre, size_t post, uint32_t id, uint8_t status, const float *x, uint32_t count,
                             const char *message, size_t *n);
/* A request's bytes before its floats (a part: geom; held: hgeom too),
 * written at b when b is not NULL; its length, or 0 when an id is too long.
 * The floats (count little-endian float32) follow. */
size_t rtlp_request_header(uint8_t *b, uint32_t id, const char *catalog, const char *variant, const rtlp_pin *pin,
                           int32_t first, int32_t last, const int32_t *geom, const int32_t *hgeom, uint32_t count);
/* Where rtlp_seal reads its plaintext to seal in place: frame + this. */
#define RTLP_PLAIN_AT (RTLP_LEN_BYTES + 1)

#endif
