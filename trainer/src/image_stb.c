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
#include "data.h"

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
