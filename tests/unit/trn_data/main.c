/* Unit tests of the trainer's data part: images, augmentation, data sets,
 * the loader, and the fuzz tests of the decoders and parsers. This file
 * holds the fixtures (images written with stb_image_write) and main. */
#include "testutil_impl.h"
#include "tdata.h"

#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>

const char *fx_path(const char *fmt, ...)
{
    static char bufs[8][1024];
    static int next;
    char *b = bufs[next++ & 7];
    int n = snprintf(b, sizeof bufs[0], "%s/", test_tmpdir());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, sizeof bufs[0] - (size_t)n, fmt, ap);
    va_end(ap);
    return b;
}

static void mkdirs_for(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0755);
            *p = '/';
        }
}

void fx_write_bytes(const char *path, const void *buf, size_t len)
{
    mkdirs_for(path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void fx_write_text(const char *path, const char *text)
{
    fx_write_bytes(path, text, strlen(text));
}

void fx_write_image(const char *path, const char *fmt, int w, int h, int c,
                    const unsigned char *px)
{
    size_t len;
    unsigned char *b = fx_encode_image(fmt, w, h, c, px, &len);
    fx_write_bytes(path, b, len);
    free(b);
}

unsigned char *fx_pattern(int w, int h, int c, int seed)
{
    unsigned char *p = malloc((size_t)w * h * c);
    assert_non_null(p);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < c; k++)
                p[((size_t)y * w + x) * c + k] = (unsigned char)((seed + 37 * y + 11 * x + 101 * k) & 255);
    return p;
}

float fx_max_diff(const float *a, const float *b, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= m)) m = d;
    }
    return m;
}

int main(void)
{
#define TDATA_ENTRY(name) cmocka_unit_test(name),
    const struct CMUnitTest tests[] = {TDATA_TESTS(TDATA_ENTRY)};
    int rc = cmocka_run_group_tests_name("trn_data", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
