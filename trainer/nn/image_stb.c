/*
 * image_stb.c: trn_image_decode, the one stb_image implementation of the
 * project (PNG, JPEG and BMP only; the other formats are compiled out, which
 * also keeps their decoders away from untrusted files).
 *
 * It is compiled with STB_IMAGE_STATIC, so no stbi_ symbol leaves this
 * object and libtrn links beside libdarknet (which exports its own
 * stbi_load) without a clash. That makes stb_image declare a few entry
 * points of the compiled-out formats static without defining them, which
 * GCC reports at the end of the translation unit; so -Wunused-function is
 * off for this file, which holds nothing else but trn_image_decode.
 */
#include "nn.h"

#include <limits.h>
#include <string.h>

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS TRN_IMAGE_MAX_SIDE
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_image.h>

/* Checks made before stb_image sees the bytes.
 *
 * stb_image is lenient where we want an error: a BMP that ends early
 * decodes with its missing rows black, a JPEG that ends early with its
 * missing blocks grey. A truncated file in a data set is a broken file, so
 * both are refused.
 *
 * stb_image 2.27 (Debian 12's libstb-dev) also writes past its Huffman
 * tables when a JPEG DHT segment declares more than 256 codes (fixed
 * upstream in 2.28); the JPEG walk below refuses such tables first. */
static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

static int check_bmp(const unsigned char *b, size_t len, const char *name, trn_err *err)
{
    if (len < 30) return 0; /* stb_image refuses it */
    /* Uncompressed rows of ((w * bpp + 31) / 32) * 4 bytes from the offset in
     * the file header; other layouts are left to stb_image. */
    uint32_t off = le32(b + 10), hsz = le32(b + 14);
    int64_t w, h;
    unsigned bpp;
    if (hsz == 12) {
        w = le16(b + 18);
        h = le16(b + 20);
        bpp = le16(b + 24);
    } else {
        w = (int32_t)le32(b + 18);
        h = (int32_t)le32(b + 22);
        bpp = le16(b + 28);
    }
    if (h < 0) h = -h;
    if (w > 0 && w <= TRN_IMAGE_MAX_SIDE && h > 0 && h <= TRN_IMAGE_MAX_SIDE &&
        (bpp == 1 || bpp == 4 || bpp == 8 || bpp == 16 || bpp == 24 || bpp == 32)) {
        int64_t need = (int64_t)off + (w * bpp + 31) / 32 * 4 * h;
        if ((int64_t)len < need)
            return trn_errf(err, "%s: truncated BMP: its header needs %lld bytes, the file has "
                            "%zu", name, (long long)need, len);
    }
    return 0;
}

/* Walks the JPEG segments the way stb_image reads them: bytes other than
 * 0xFF between segments are skipped, a marker is 0xFF (any number of them)
 * and a code, standalone codes have no length, and entropy-coded data after
 * a start-of-scan runs to the next 0xFF that is not followed by 0x00 or a
 * restart code. i is the offset after the start-of-image marker. */
static int check_jpeg(const unsigned char *b, size_t len, size_t i, const char *name,
                      trn_err *err)
{
    for (;;) {
        while (i < len && b[i] != 0xFF) i++;
        while (i < len && b[i] == 0xFF) i++;
        if (i >= len) break;
        unsigned m = b[i++];
        if (m == 0xD9) return 0; /* end of image */
        if (m == 0x00 || m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7)) continue;
        if (i + 2 > len) break;
        size_t seg = (size_t)b[i] << 8 | b[i + 1];
        if (seg < 2)
            return trn_errf(err, "%s: corrupt JPEG: segment 0xFF%02X at byte offset %zu has "
                            "length %zu", name, m, i - 2, seg);
        if (i + seg > len) break;
        if (m == 0xC4) {
            /* DHT: tables of (class/id, 16 code counts, the symbols). Like
             * stb_image, read tables while the segment has bytes left, even
             * when a table runs past its end (bytes past the file read 0). */
            size_t t = i + 2, end = i + seg;
            while (t < end) {
                size_t n = 0;
                for (size_t k = t + 1; k < t + 17; k++) n += k < len ? b[k] : 0;
                if (n > 256)
                    return trn_errf(err, "%s: corrupt JPEG: a Huffman table at byte offset %zu "
                                    "declares %zu codes (at most 256)", name, t, n);
                t += 17 + n;
            }
        }
        i += seg;
        if (m == 0xDA) {
            while (i + 1 < len &&
                   !(b[i] == 0xFF && b[i + 1] != 0x00 && !(b[i + 1] >= 0xD0 && b[i + 1] <= 0xD7)))
                i++;
        }
    }
    return trn_errf(err, "%s: truncated JPEG: the file ends before its end-of-image marker", name);
}

static int check_bytes(const unsigned char *b, size_t len, const char *name, trn_err *err)
{
    if (len >= 2 && b[0] == 'B' && b[1] == 'M') return check_bmp(b, len, name, err);
    if (len >= 1 && b[0] == 0xFF) {
        /* stb_image's start-of-image test: 0xFF, any further 0xFF, 0xD8. */
        size_t i = 1;
        while (i < len && b[i] == 0xFF) i++;
        if (i < len && b[i] == 0xD8) return check_jpeg(b, len, i + 1, name, err);
    }
    return 0;
}

int trn_image_decode(const void *buf, size_t len, const char *name, int channels,
                     trn_image *out, trn_err *err)
{
    memset(out, 0, sizeof *out);
    if (channels < 0 || channels > 4)
        return trn_errf(err, "%s: cannot convert to %d channels (use 1, 2, 3 or 4)", name, channels);
    if (len == 0) return trn_errf(err, "%s: empty file, not an image", name);
    if (len > (size_t)TRN_IMAGE_MAX_FILE || len > INT_MAX)
        return trn_errf(err, "%s: %zu bytes is larger than the image file limit of %ld bytes",
                        name, len, (long)TRN_IMAGE_MAX_FILE);
    if (check_bytes(buf, len, name, err) != 0) return -1;
    /* The header first: absurd dimensions are refused before stb_image
     * allocates anything for the pixels. */
    int w = 0, h = 0, n = 0;
    if (!stbi_info_from_memory(buf, (int)len, &w, &h, &n))
        return trn_errf(err, "%s: not a readable PNG, JPEG or BMP image (%s)", name,
                        stbi_failure_reason());
    if (!trn_image_size_ok(w, h, n))
        return trn_errf(err, "%s: header says %dx%d pixels with %d channels, outside the limits "
                        "(sides 1..%d, at most %ld pixels); the file is corrupt or too large",
                        name, w, h, n, TRN_IMAGE_MAX_SIDE, (long)TRN_IMAGE_MAX_PIXELS);
    int w2 = 0, h2 = 0, n2 = 0;
    unsigned char *px = stbi_load_from_memory(buf, (int)len, &w2, &h2, &n2, channels);
    if (!px)
        return trn_errf(err, "%s: corrupt %dx%d image data (%s)", name, w, h, stbi_failure_reason());
    if (w2 != w || h2 != h) {
        stbi_image_free(px);
        return trn_errf(err, "%s: header says %dx%d but the data decodes as %dx%d (corrupt file)",
                        name, w, h, w2, h2);
    }
    int c = channels ? channels : n2;
    if (trn_image_alloc(out, w, h, c, err) != 0) {
        stbi_image_free(px);
        return trn_err_prefix(err, "%s", name);
    }
    /* px is (h, w, c) interleaved bytes; out is (c, h, w). The value is
     * Darknet's (float)byte / 255. (a double division, rounded once). */
    size_t plane = (size_t)w * h;
    for (int k = 0; k < c; k++) {
        float *dst = out->data + k * plane;
        const unsigned char *src = px + k;
        for (size_t i = 0; i < plane; i++) dst[i] = (float)((double)src[i * c] / 255.);
    }
    stbi_image_free(px);
    return 0;
}
