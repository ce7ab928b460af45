/*
 * image.c: 8-bit pixel buffers, PNG encoding, and checked PNG/JPEG decoding.
 *
 * Before libtrn's trn_image_decode (stb_image) decodes a file, its framing
 * is walked here so that damage is reported with a byte offset (the decoder
 * mostly says what failed, not where):
 *
 * PNG: the 8-byte signature 89 50 4E 47 0D 0A 1A 0A, then chunks of
 *   length (4 bytes, big-endian, <= 2^31-1), type (4 ASCII letters),
 *   data (length bytes), CRC-32 of type and data (4 bytes, big-endian).
 *   The first chunk is IHDR (13 bytes), the last IEND; bytes after IEND are
 *   ignored.
 * JPEG: FF D8 (SOI), then segments FF xx, each but the standalone markers
 *   (RSTn D0-D7, TEM 01) followed by a big-endian length that counts itself;
 *   after SOS (FF DA) comes entropy-coded data in which FF is followed by 00
 *   or a RSTn marker, up to the next marker; FF D9 (EOI) ends the image.
 *   Fill bytes (FF FF ...) before a marker are allowed.
 */
#include "ds.h"
#include "fsdir.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <stb/stb_image_resize.h>
#include <stb/stb_image_write.h>

int ds_pixels_reserve(ds_pixels *p, int w, int h, int c, trn_err *err)
{
    if (w < 1 || h < 1 || c < 1 || c > 4 || w > 65535 || h > 65535)
        return trn_errf(err, "bad image size %dx%dx%d", w, h, c);
    size_t need = (size_t)w * (size_t)h * (size_t)c;
    if (need > p->cap) {
        uint8_t *d = realloc(p->data, need);
        if (!d) return trn_errf(err, "out of memory for a %dx%dx%d image", w, h, c);
        p->data = d;
        p->cap = need;
    }
    p->w = w;
    p->h = h;
    p->c = c;
    return 0;
}

void ds_pixels_free(ds_pixels *p)
{
    if (!p) return;
    free(p->data);
    memset(p, 0, sizeof *p);
}

static void png_put(void *ctx, void *data, int size)
{
    if (size > 0) ds_buf_put(ctx, data, (size_t)size);
}

int ds_png_encode(const ds_pixels *p, uint8_t **buf, size_t *len, trn_err *err)
{
    /* stb_image_write's own deflate at its default level: the same pixels
     * always give the same bytes. */
    ds_buf m = {0};
    if (!stbi_write_png_to_func(png_put, &m, p->w, p->h, p->c, p->data, p->w * p->c) || m.oom) {
        ds_buf_free(&m);
        return trn_errf(err, "cannot encode a %dx%dx%d PNG (out of memory?)", p->w, p->h, p->c);
    }
    *buf = (uint8_t *)m.p;
    *len = m.n;
    return 0;
}

/* ---- PNG framing ---------------------------------------------------------- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc32(const uint8_t *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};

/* Walks the chunks; *data_off gets the offset of the first IDAT chunk. */
static int png_walk(const uint8_t *b, size_t n, const char *name, size_t *data_off, trn_err *err)
{
    if (n < sizeof png_sig) return trn_errf(err, "%s: PNG file ends at byte offset %zu, inside the signature", name, n);
    size_t off = sizeof png_sig;
    int first = 1;
    *data_off = 0;
    for (;;) {
        if (off + 8 > n)
            return trn_errf(err, "%s: PNG file ends at byte offset %zu, inside a chunk header "
                            "(no IEND chunk: the file is truncated)", name, n);
        uint32_t len = be32(b + off);
        const uint8_t *type = b + off + 4;
        char tname[5];
        for (int i = 0; i < 4; i++) tname[i] = type[i] >= 32 && type[i] < 127 ? (char)type[i] : '?';
        tname[4] = '\0';
        if (len > 0x7fffffffu)
            return trn_errf(err, "%s: byte offset %zu: chunk '%s' declares %u bytes, more than "
                            "PNG allows (the file is corrupt)", name, off, tname, len);
        for (int i = 0; i < 4; i++)
            if (!((type[i] >= 'a' && type[i] <= 'z') || (type[i] >= 'A' && type[i] <= 'Z')))
                return trn_errf(err, "%s: byte offset %zu: bad chunk type bytes %02x %02x %02x %02x "
                                "(the file is corrupt)", name, off + 4, type[0], type[1], type[2], type[3]);
        if (first && (memcmp(type, "IHDR", 4) || len != 13))
            return trn_errf(err, "%s: byte offset %zu: the first chunk must be a 13-byte IHDR, "
                            "found '%s' of %u bytes", name, off, tname, len);
        first = 0;
        if ((uint64_t)off + 12 + len > n)
            return trn_errf(err, "%s: PNG file ends at byte offset %zu inside chunk '%s' that "
                            "starts at byte offset %zu and needs %u more bytes (truncated file)",
                            name, n, tname, off, (unsigned)(off + 12 + len - n));
        uint32_t want = be32(b + off + 8 + len), got = crc32(type, 4 + (size_t)len);
        if (want != got)
            return trn_errf(err, "%s: byte offset %zu: CRC mismatch in chunk '%s' (stored %08x, "
                            "computed %08x): the data of this chunk is damaged",
                            name, off + 8 + len, tname, want, got);
        if (!memcmp(type, "IDAT", 4) && !*data_off) *data_off = off;
        if (!memcmp(type, "IEND", 4)) break;
        off += 12 + (size_t)len;
    }
    if (!*data_off) return trn_errf(err, "%s: PNG file has no IDAT chunk (no image data)", name);
    return 0;
}

/* ---- JPEG framing ---------------------------------------------------------- */

static int jpeg_walk(const uint8_t *b, size_t n, const char *name, size_t *data_off, trn_err *err)
{
    size_t off = 2;
    *data_off = 0;
    for (;;) {
        if (off >= n)
            return trn_errf(err, "%s: JPEG file ends at byte offset %zu before the end-of-image "
                            "marker (truncated file)", name, n);
        if (b[off] != 0xff)
            return trn_errf(err, "%s: byte offset %zu: expected a JPEG marker (0xFF), found "
                            "0x%02x (the file is corrupt)", name, off, b[off]);
        while (off + 1 < n && b[off + 1] == 0xff) off++; /* fill bytes */
        if (off + 2 > n)
            return trn_errf(err, "%s: JPEG file ends at byte offset %zu inside a marker "
                            "(truncated file)", name, n);
        uint8_t m = b[off + 1];
        if (m == 0xd9) break; /* EOI */
        if (m == 0x00 || m == 0xd8)
            return trn_errf(err, "%s: byte offset %zu: invalid JPEG marker 0xFF%02X", name, off, m);
        if ((m >= 0xd0 && m <= 0xd7) || m == 0x01) {
            off += 2;
            continue;
        }
        if (off + 4 > n)
            return trn_errf(err, "%s: JPEG file ends at byte offset %zu inside the length of "
                            "segment 0xFF%02X (truncated file)", name, n, m);
        size_t len = (size_t)b[off + 2] << 8 | b[off + 3];
        if (len < 2)
            return trn_errf(err, "%s: byte offset %zu: segment 0xFF%02X has length %zu, less "
                            "than its own 2 length bytes (the file is corrupt)", name, off + 2, m, len);
        if (off + 2 + len > n)
            return trn_errf(err, "%s: JPEG file ends at byte offset %zu inside segment 0xFF%02X "
                            "that starts at byte offset %zu and needs %zu more bytes (truncated "
                            "file)", name, n, m, off, off + 2 + len - n);
        off += 2 + len;
        if (m == 0xda) { /* SOS: entropy-coded data up to the next real marker */
            if (!*data_off) *data_off = off;
            for (;;) {
                if (off + 1 >= n)
                    return trn_errf(err, "%s: JPEG file ends at byte offset %zu inside the "
                                    "entropy-coded image data, before the end-of-image marker "
                                    "(truncated file)", name, n);
                if (b[off] == 0xff && b[off + 1] != 0x00 && !(b[off + 1] >= 0xd0 && b[off + 1] <= 0xd7) &&
                    b[off + 1] != 0xff)
                    break;
                off++;
            }
        }
    }
    if (!*data_off) return trn_errf(err, "%s: JPEG file has no scan (SOS) segment: no image data", name);
    return 0;
}

int ds_image_decode(const uint8_t *buf, size_t len, const char *name, int channels,
                    ds_pixels *out, trn_err *err)
{
    size_t data_off = 0;
    const char *kind;
    if (len >= 8 && !memcmp(buf, png_sig, 8)) {
        kind = "PNG";
        if (png_walk(buf, len, name, &data_off, err) != 0) return -1;
    } else if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) {
        kind = "JPEG";
        if (jpeg_walk(buf, len, name, &data_off, err) != 0) return -1;
    } else if (len >= 2 && buf[0] == 'B' && buf[1] == 'M') {
        /* BMP, as trainer and rtl read it: the file header's pixel-data
         * offset must lie inside the file; stb_image checks the rest. */
        kind = "BMP";
        if (len < 26)
            return trn_errf(err, "%s: a BMP file of %zu bytes is shorter than its headers (26 bytes at least)", name, len);
        data_off = (size_t)buf[10] | (size_t)buf[11] << 8 | (size_t)buf[12] << 16 | (size_t)buf[13] << 24;
        if (data_off < 26 || data_off >= len)
            return trn_errf(err, "%s: byte offset 10: the BMP pixel data offset %zu is outside the file "
                            "(%zu bytes)", name, data_off, len);
    } else {
        if (len >= 8 && !memcmp(buf, png_sig, 4))
            return trn_errf(err, "%s: byte offset 4: damaged PNG signature", name);
        return trn_errf(err, "%s: byte offset 0: neither a PNG, a JPEG nor a BMP file (it starts with "
                        "%02x %02x %02x %02x)", name, len > 0 ? buf[0] : 0, len > 1 ? buf[1] : 0,
                        len > 2 ? buf[2] : 0, len > 3 ? buf[3] : 0);
    }
    if (channels < 0 || channels > 4) return trn_errf(err, "%s: bad channel count %d", name, channels);
    /* The framing is sound: libtrn's decoder (the project's one stb_image,
     * with its own guards and size limits) reads the pixels. */
    trn_image im;
    trn_err e;
    if (trn_image_decode(buf, len, name, channels, &im, &e) != 0)
        return trn_errf(err, "%s: cannot decode the %s image data that starts at byte offset %zu "
                        "(%s)", name, kind, data_off, e.msg);
    int rc = ds_pixels_reserve(out, im.w, im.h, im.c, err);
    if (rc == 0) { /* (c, h, w) floats k/255 -> (h, w, c) bytes k */
        size_t plane = (size_t)im.w * im.h;
        for (int k = 0; k < im.c; k++)
            for (size_t i = 0; i < plane; i++)
                out->data[i * im.c + k] = (uint8_t)(int)(im.data[k * plane + i] * 255.0f + 0.5f);
    } else {
        trn_err_prefix(err, "%s", name);
    }
    trn_image_free(&im);
    return rc;
}

int ds_pixels_resize(const ds_pixels *src, int w, int h, ds_pixels *dst, trn_err *err)
{
    if (ds_pixels_reserve(dst, w, h, src->c, err) != 0) return -1;
    if (!stbir_resize_uint8(src->data, src->w, src->h, 0, dst->data, w, h, 0, src->c))
        return trn_errf(err, "cannot resize a %dx%d image to %dx%d", src->w, src->h, w, h);
    return 0;
}
