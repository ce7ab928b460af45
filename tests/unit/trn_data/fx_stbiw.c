/* fx_stbiw.c: the test fixtures' image encoder (stb_image_write, static).
 * Its JPEG writer left-shifts negative ints; trainer/build.mk builds this
 * one file with -fno-sanitize=shift so that fixture code does not trip
 * UBSan. The decoders under test are built with every sanitizer on. */
#include "tdata.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#define STBI_WRITE_NO_STDIO
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_image_write.h>

typedef struct membuf {
    unsigned char *p;
    size_t len, cap;
} membuf;

static void mem_write(void *ctx, void *data, int size)
{
    membuf *m = ctx;
    if (m->len + (size_t)size > m->cap) {
        m->cap = (m->len + (size_t)size) * 2;
        m->p = realloc(m->p, m->cap);
        assert_non_null(m->p);
    }
    memcpy(m->p + m->len, data, (size_t)size);
    m->len += (size_t)size;
}

unsigned char *fx_encode_image(const char *fmt, int w, int h, int c, const unsigned char *px,
                               size_t *len)
{
    membuf m = {0};
    int ok;
    if (strcmp(fmt, "png") == 0) ok = stbi_write_png_to_func(mem_write, &m, w, h, c, px, w * c);
    else if (strcmp(fmt, "bmp") == 0) ok = stbi_write_bmp_to_func(mem_write, &m, w, h, c, px);
    else ok = stbi_write_jpg_to_func(mem_write, &m, w, h, c, px, 95);
    assert_true(ok);
    *len = m.len;
    return m.p;
}
