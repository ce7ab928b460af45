/* Unit tests of datasets/ image files: PNG encoding, checked PNG and JPEG
 * decoding (damage reported with its byte offset), resizing. Fixtures are
 * made here with stb_image_write. */
#include "testutil_impl.h"
#include "ds_testutil.h"

#include <stdlib.h>
#include <string.h>

#include <stb/stb_image_write.h>

/* A w x h x c test pattern. */
static void pattern(ds_pixels *p, int w, int h, int c)
{
    trn_err err;
    assert_int_equal(ds_pixels_reserve(p, w, h, c, &err), 0);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++) p->data[(y * w + x) * c + k] = (uint8_t)(x * 7 + y * 13 + k * 50);
}

static struct t_mem jpeg_of(const ds_pixels *p)
{
    struct t_mem m = {NULL, 0};
    assert_true(stbi_write_jpg_to_func(t_mem_put, &m, p->w, p->h, p->c, p->data, 95) != 0);
    return m;
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Offset of the first chunk of the given type in a PNG. */
static size_t png_chunk(const uint8_t *b, size_t n, const char *type)
{
    for (size_t off = 8; off + 8 <= n; off += 12 + be32(b + off))
        if (!memcmp(b + off + 4, type, 4)) return off;
    fail_msg("no %s chunk", type);
    return 0;
}

static void png_round_trip(void **state)
{
    (void)state;
    trn_err err;
    for (int c = 1; c <= 4; c++) {
        ds_pixels p = {0}, q = {0};
        pattern(&p, 13, 7, c);
        uint8_t *png, *png2;
        size_t len, len2;
        assert_int_equal(ds_png_encode(&p, &png, &len, &err), 0);
        assert_int_equal(ds_png_encode(&p, &png2, &len2, &err), 0);
        assert_true(len == len2 && !memcmp(png, png2, len)); /* deterministic */
        assert_int_equal(ds_image_decode(png, len, "p.png", 0, &q, &err), 0);
        assert_int_equal(q.w, 13);
        assert_int_equal(q.h, 7);
        assert_int_equal(q.c, c);
        assert_memory_equal(q.data, p.data, (size_t)13 * 7 * c);
        free(png);
        free(png2);
        ds_pixels_free(&p);
        ds_pixels_free(&q);
    }
}

static void png_damage_has_offsets(void **state)
{
    (void)state;
    trn_err err;
    ds_pixels p = {0}, q = {0};
    pattern(&p, 16, 16, 3);
    uint8_t *png;
    size_t len;
    assert_int_equal(ds_png_encode(&p, &png, &len, &err), 0);
    size_t idat = png_chunk(png, len, "IDAT");

    /* Truncated inside IDAT. */
    assert_int_equal(ds_image_decode(png, idat + 20, "t.png", 0, &q, &err), -1);
    char want[128];
    TPATH(want, "t.png: PNG file ends at byte offset %zu inside chunk 'IDAT' that starts at byte offset %zu",
          idat + 20, idat);
    assert_non_null(strstr(err.msg, want));
    /* Truncated after a whole chunk: no IEND. */
    assert_int_equal(ds_image_decode(png, idat, "t.png", 0, &q, &err), -1);
    assert_non_null(strstr(err.msg, "no IEND"));

    /* A flipped bit in the pixel data: the CRC names the chunk and offset. */
    uint8_t *bad = malloc(len);
    memcpy(bad, png, len);
    bad[idat + 10] ^= 0x40;
    assert_int_equal(ds_image_decode(bad, len, "c.png", 0, &q, &err), -1);
    TPATH(want, "c.png: byte offset %zu: CRC mismatch in chunk 'IDAT'", idat + 8 + be32(png + idat));
    assert_non_null(strstr(err.msg, want));

    /* Damaged signature. */
    memcpy(bad, png, len);
    bad[5] = 'X';
    assert_int_equal(ds_image_decode(bad, len, "s.png", 0, &q, &err), -1);
    assert_non_null(strstr(err.msg, "s.png: byte offset 4"));
    /* Not an image at all. */
    assert_int_equal(ds_image_decode((const uint8_t *)"hello world", 11, "h.txt", 0, &q, &err), -1);
    assert_non_null(strstr(err.msg, "h.txt: byte offset 0: neither a PNG, a JPEG nor a BMP"));
    free(bad);
    free(png);
    ds_pixels_free(&p);
    ds_pixels_free(&q);
}

static void jpeg_decode_and_damage(void **state)
{
    (void)state;
    trn_err err;
    ds_pixels p = {0}, q = {0};
    pattern(&p, 24, 16, 3);
    struct t_mem m = jpeg_of(&p);
    assert_int_equal(ds_image_decode(m.p, m.n, "a.jpg", 0, &q, &err), 0);
    assert_int_equal(q.w, 24);
    assert_int_equal(q.h, 16);
    int maxd = 0; /* lossy, but close at quality 95 */
    for (size_t i = 0; i < (size_t)24 * 16 * 3; i++) {
        int d = abs((int)q.data[i] - (int)p.data[i]);
        if (d > maxd) maxd = d;
    }
    assert_true(maxd < 40);
    /* Grey output on request. */
    assert_int_equal(ds_image_decode(m.p, m.n, "a.jpg", 1, &q, &err), 0);
    assert_int_equal(q.c, 1);

    /* Truncated inside the entropy-coded data (before EOI). */
    assert_int_equal(ds_image_decode(m.p, m.n - 10, "t.jpg", 0, &q, &err), -1);
    char want[128];
    TPATH(want, "t.jpg: JPEG file ends at byte offset %zu inside the entropy-coded image data", m.n - 10);
    assert_non_null(strstr(err.msg, want));
    /* Truncated inside the first segment's header. */
    assert_int_equal(ds_image_decode(m.p, 5, "h.jpg", 0, &q, &err), -1);
    assert_non_null(strstr(err.msg, "h.jpg: JPEG file ends at byte offset 5"));
    /* A segment marker overwritten. */
    uint8_t *bad = malloc(m.n);
    memcpy(bad, m.p, m.n);
    size_t seg2 = 2 + 2 + ((size_t)bad[4] << 8 | bad[5]); /* after SOI and the first segment */
    bad[seg2] = 0x12;
    assert_int_equal(ds_image_decode(bad, m.n, "m.jpg", 0, &q, &err), -1);
    TPATH(want, "m.jpg: byte offset %zu: expected a JPEG marker", seg2);
    assert_non_null(strstr(err.msg, want));
    free(bad);
    free(m.p);
    ds_pixels_free(&p);
    ds_pixels_free(&q);
}

static void resize(void **state)
{
    (void)state;
    trn_err err;
    ds_pixels p = {0}, q = {0};
    assert_int_equal(ds_pixels_reserve(&p, 40, 20, 3, &err), 0);
    memset(p.data, 200, (size_t)40 * 20 * 3);
    assert_int_equal(ds_pixels_resize(&p, 10, 10, &q, &err), 0);
    assert_int_equal(q.w, 10);
    assert_int_equal(q.h, 10);
    assert_int_equal(q.c, 3);
    for (int i = 0; i < 300; i++) assert_true(abs(q.data[i] - 200) <= 1);
    assert_int_equal(ds_pixels_reserve(&p, 0, 5, 3, &err), -1);
    assert_int_equal(ds_pixels_reserve(&p, 5, 5, 5, &err), -1);
    ds_pixels_free(&p);
    ds_pixels_free(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(png_round_trip),
        cmocka_unit_test(png_damage_has_offsets),
        cmocka_unit_test(jpeg_decode_and_damage),
        cmocka_unit_test(resize),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
