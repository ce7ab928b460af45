/* Images: decoding, resize, crop, flip, HSV, distortion, rotation, the
 * affine crop and the evaluation preprocessing, on cases small enough to
 * compute by hand. */
#include "tdata.h"

#include <math.h>

/* Pixel (x, y) of channel k. */
static float px(const trn_image *im, int x, int y, int k)
{
    return im->data[((size_t)k * im->h + y) * im->w + x];
}

static trn_image make(int w, int h, int c, const float *v)
{
    trn_image im;
    trn_err e;
    assert_int_equal(trn_image_alloc(&im, w, h, c, &e), 0);
    if (v) memcpy(im.data, v, sizeof(float) * (size_t)w * h * c);
    return im;
}

void image_decode_png_bmp_exact(void **state)
{
    (void)state;
    const char *fmts[] = {"png", "bmp"};
    for (int f = 0; f < 2; f++) {
        for (int c = 3; c <= 4; c++) {
            if (f == 1 && c == 4) continue; /* stb writes BMP as RGB only */
            unsigned char *p = fx_pattern(5, 3, c, 7);
            const char *path = fx_path("dec/%d.%s", c, fmts[f]);
            fx_write_image(path, fmts[f], 5, 3, c, p);
            trn_image im;
            trn_err e;
            assert_int_equal(trn_image_load(path, 0, &im, &e), 0);
            assert_int_equal(im.w, 5);
            assert_int_equal(im.h, 3);
            assert_int_equal(im.c, c);
            for (int y = 0; y < 3; y++)
                for (int x = 0; x < 5; x++)
                    for (int k = 0; k < c; k++)
                        assert_true(px(&im, x, y, k) == (float)(p[(y * 5 + x) * c + k] / 255.));
            trn_image_free(&im);
            free(p);
        }
    }
}

void image_decode_jpeg_close(void **state)
{
    (void)state;
    /* A smooth image survives JPEG at quality 95 within a few levels. */
    int w = 16, h = 16;
    unsigned char *p = malloc((size_t)w * h * 3);
    for (int i = 0; i < w * h; i++) {
        p[i * 3] = 200;
        p[i * 3 + 1] = (unsigned char)(100 + (i % w) * 2);
        p[i * 3 + 2] = 30;
    }
    const char *path = fx_path("dec/smooth.jpg");
    fx_write_image(path, "jpg", w, h, 3, p);
    trn_image im;
    trn_err e;
    assert_int_equal(trn_image_load(path, 3, &im, &e), 0);
    assert_int_equal(im.w, w);
    assert_int_equal(im.c, 3);
    float worst = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int k = 0; k < 3; k++) {
                float d = fabsf(px(&im, x, y, k) - p[(y * w + x) * 3 + k] / 255.f);
                if (d > worst) worst = d;
            }
    assert_true(worst < 6 / 255.f);
    trn_image_free(&im);
    free(p);
}

void image_decode_channel_conversion(void **state)
{
    (void)state;
    trn_err e;
    trn_image im;
    /* Grey -> RGB replicates. */
    unsigned char g[6] = {0, 51, 102, 153, 204, 255};
    const char *gp = fx_path("conv/grey.png");
    fx_write_image(gp, "png", 3, 2, 1, g);
    assert_int_equal(trn_image_load(gp, 3, &im, &e), 0);
    assert_int_equal(im.c, 3);
    for (int k = 0; k < 3; k++) assert_true(px(&im, 2, 1, k) == 1.0f && px(&im, 1, 0, k) == 0.2f);
    trn_image_free(&im);
    /* RGBA -> RGB drops alpha; -> 4 keeps it. */
    unsigned char rgba[8] = {10, 20, 30, 40, 50, 60, 70, 80};
    const char *ap = fx_path("conv/rgba.png");
    fx_write_image(ap, "png", 2, 1, 4, rgba);
    assert_int_equal(trn_image_load(ap, 3, &im, &e), 0);
    assert_int_equal(im.c, 3);
    assert_true(px(&im, 1, 0, 2) == (float)(70 / 255.));
    trn_image_free(&im);
    assert_int_equal(trn_image_load(ap, 0, &im, &e), 0);
    assert_int_equal(im.c, 4);
    assert_true(px(&im, 1, 0, 3) == (float)(80 / 255.));
    trn_image_free(&im);
    /* RGB -> grey by stb_image's integer luma (77 r + 150 g + 29 b) >> 8. */
    unsigned char rgb[3] = {200, 100, 50};
    const char *rp = fx_path("conv/rgb.png");
    fx_write_image(rp, "png", 1, 1, 3, rgb);
    assert_int_equal(trn_image_load(rp, 1, &im, &e), 0);
    assert_int_equal(im.c, 1);
    assert_true(px(&im, 0, 0, 0) == (float)(((77 * 200 + 150 * 100 + 29 * 50) >> 8) / 255.));
    trn_image_free(&im);
    assert_int_equal(trn_image_load(rp, 5, &im, &e), -1);
    assert_err_has(e, "5 channels");
}

void image_decode_errors_name_file(void **state)
{
    (void)state;
    trn_err e;
    trn_image im;
    const char *garbage = fx_path("err/garbage.png");
    fx_write_text(garbage, "this is not an image at all");
    assert_int_equal(trn_image_load(garbage, 3, &im, &e), -1);
    assert_null(im.data);
    assert_err_has(e, garbage);
    const char *empty = fx_path("err/empty.jpg");
    fx_write_bytes(empty, "", 0);
    assert_int_equal(trn_image_load(empty, 3, &im, &e), -1);
    assert_err_has(e, empty);
    assert_err_has(e, "empty");
    assert_int_equal(trn_image_load(fx_path("err/missing.png"), 3, &im, &e), -1);
    assert_err_has(e, "missing.png");
    assert_err_has(e, "cannot open");
    /* Truncated BMP and JPEG are refused, not decoded with black or grey. */
    unsigned char *p = fx_pattern(8, 8, 3, 1);
    const char *fmts[] = {"bmp", "jpg", "png"};
    for (int f = 0; f < 3; f++) {
        size_t len;
        unsigned char *b = fx_encode_image(fmts[f], 8, 8, 3, p, &len);
        const char *path = fx_path("err/cut.%s", fmts[f]);
        fx_write_bytes(path, b, len - 20);
        assert_int_equal(trn_image_load(path, 3, &im, &e), -1);
        assert_err_has(e, path);
        free(b);
    }
    free(p);
}

/* The signature and IHDR chunk of an 8-bit RGB PNG that claims w x h (stb_image
 * does not check chunk CRCs, so none is computed). */
static size_t png_header(unsigned char *b, uint32_t w, uint32_t h)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    memcpy(b, sig, 8);
    unsigned char ihdr[25] = {0, 0, 0, 13, 'I', 'H', 'D', 'R'};
    for (int i = 0; i < 4; i++) {
        ihdr[8 + i] = (unsigned char)(w >> (24 - 8 * i));
        ihdr[12 + i] = (unsigned char)(h >> (24 - 8 * i));
    }
    ihdr[16] = 8; /* bit depth */
    ihdr[17] = 2; /* RGB */
    memcpy(b + 8, ihdr, sizeof ihdr);
    return 8 + sizeof ihdr;
}

void image_decode_limits_before_alloc(void **state)
{
    (void)state;
    trn_err e;
    trn_image im;
    unsigned char b[64];
    /* 10000 x 10000 = 100M pixels: each side is within stb_image's limit,
     * the pixel count is not within ours: refused on the header. */
    size_t n = png_header(b, 10000, 10000);
    assert_int_equal(trn_image_decode(b, n, "huge.png", 3, &im, &e), -1);
    assert_null(im.data);
    assert_err_has(e, "huge.png");
    assert_err_has(e, "outside the limits");
    /* A side over stb_image's limit (ours too). */
    n = png_header(b, 20000, 2);
    assert_int_equal(trn_image_decode(b, n, "wide.png", 3, &im, &e), -1);
    assert_err_has(e, "wide.png");
    /* A BMP that claims more rows than its bytes hold. */
    memset(b, 0, 54);
    b[0] = 'B';
    b[1] = 'M';
    b[10] = 54;
    b[14] = 40;
    b[18] = 100; /* 100 x 100 */
    b[22] = 100;
    b[26] = 1;
    b[28] = 24;
    assert_int_equal(trn_image_decode(b, 54, "short.bmp", 3, &im, &e), -1);
    assert_err_has(e, "short.bmp");
    assert_err_has(e, "truncated");
    assert_int_equal(trn_image_alloc(&im, 20000, 1, 3, &e), -1);
    assert_err_has(e, "limits");
    assert_int_equal(trn_image_alloc(&im, 0, 5, 3, &e), -1);
}

void image_resize_hand_cases(void **state)
{
    (void)state;
    /* 2x2 -> 3x3: corners map to corners, the rest is bilinear. */
    float v[4] = {0, 1, 2, 3};
    trn_image src = make(2, 2, 1, v), dst = make(3, 3, 1, NULL);
    trn_image_resize(&src, &dst);
    float want[9] = {0, .5f, 1, 1, 1.5f, 2, 2, 2.5f, 3};
    assert_true(fx_max_diff(dst.data, want, 9) == 0);
    trn_image_free(&dst);
    /* 4x1 -> 2x1: scale 3, so the two ends. */
    float r[4] = {0, 1, 2, 3};
    trn_image row = make(4, 1, 1, r), two = make(2, 1, 1, NULL);
    trn_image_resize(&row, &two);
    assert_true(two.data[0] == 0 && two.data[1] == 3);
    /* 4x1 -> 1x1: Darknet's last column (its formula divides by zero). */
    trn_image one = make(1, 1, 1, NULL);
    trn_image_resize(&row, &one);
    assert_true(one.data[0] == 3);
    /* Same size is the identity, per channel. */
    float w6[12] = {.1f, .2f, .3f, .4f, .5f, .6f, .7f, .8f, .9f, 1, 0, .25f};
    trn_image s2 = make(3, 2, 2, w6), d2 = make(3, 2, 2, NULL);
    trn_image_resize(&s2, &d2);
    assert_memory_equal(s2.data, d2.data, sizeof w6);
    /* A region equals the same window of the whole resized image. */
    trn_image big = make(3, 3, 1, NULL);
    trn_image_resize(&src, &big);
    float win[4];
    trn_image_resize_region(&src, 3, 3, 1, 1, 2, 2, win);
    float want_win[4] = {1.5f, 2, 2.5f, 3};
    assert_true(fx_max_diff(win, want_win, 4) == 0);
    trn_image_free(&big);
    trn_image_free(&s2);
    trn_image_free(&d2);
    trn_image_free(&one);
    trn_image_free(&two);
    trn_image_free(&row);
    trn_image_free(&src);
}

void image_crop_clamps(void **state)
{
    (void)state;
    float v[6] = {0, 1, 2, 3, 4, 5}; /* 3 wide, 2 high */
    trn_image src = make(3, 2, 1, v), dst = make(2, 2, 1, NULL);
    trn_image_crop(&src, 1, 0, &dst);
    float a[4] = {1, 2, 4, 5};
    assert_true(fx_max_diff(dst.data, a, 4) == 0);
    trn_image_crop(&src, 2, 1, &dst); /* past the corner: the edge repeats */
    float b[4] = {5, 5, 5, 5};
    assert_true(fx_max_diff(dst.data, b, 4) == 0);
    trn_image_crop(&src, -1, 0, &dst); /* before the first column: it repeats */
    float c[4] = {0, 0, 3, 3};
    assert_true(fx_max_diff(dst.data, c, 4) == 0);
    trn_image_free(&dst);
    trn_image_free(&src);
}

void image_flip_mirrors(void **state)
{
    (void)state;
    float v[6] = {1, 2, 3, 4, 5, 6}; /* 3x1, 2 channels */
    trn_image im = make(3, 1, 2, v);
    trn_image_flip(&im);
    float want[6] = {3, 2, 1, 6, 5, 4};
    assert_true(fx_max_diff(im.data, want, 6) == 0);
    trn_image_flip(&im);
    assert_true(fx_max_diff(im.data, v, 6) == 0);
    trn_image_free(&im);
}

void image_hsv_known_colours(void **state)
{
    (void)state;
    /* 6 pixels: red, green, blue, grey, black, orange; planes R, G, B. */
    float v[18] = {1, 0, 0, .5f, 0, 1, /* R */
                   0, 1, 0, .5f, 0, .5f, /* G */
                   0, 0, 1, .5f, 0, 0};  /* B */
    trn_image im = make(6, 1, 3, v);
    trn_image_rgb_to_hsv(&im);
    float want[18] = {0, 1 / 3.f, 2 / 3.f, 0, 0, 1 / 12.f, /* H */
                      1, 1, 1, 0, 0, 1,                    /* S */
                      1, 1, 1, .5f, 0, 1};                 /* V */
    assert_true(fx_max_diff(im.data, want, 18) < 1e-6f);
    trn_image_hsv_to_rgb(&im);
    assert_true(fx_max_diff(im.data, v, 18) < 1e-6f);
    /* Hue 1.0 is red again (Darknet's sector 6 would give magenta). */
    float h1[3] = {1, 1, 1};
    trn_image one = make(1, 1, 3, h1);
    trn_image_hsv_to_rgb(&one);
    float red[3] = {1, 0, 0};
    assert_true(fx_max_diff(one.data, red, 3) < 1e-6f);
    trn_image_free(&one);
    trn_image_free(&im);
}

void image_distort_semantics(void **state)
{
    (void)state;
    float red[3] = {1, 0, 0};
    trn_image im = make(1, 1, 3, red);
    trn_image_distort(&im, 1 / 3.f, 1, 1); /* hue + 120 degrees: green */
    float green[3] = {0, 1, 0};
    assert_true(fx_max_diff(im.data, green, 3) < 1e-6f);
    trn_image_distort(&im, -0.5f, 1, 1); /* 1/3 - 1/2 wraps to 5/6: magenta */
    float magenta[3] = {1, 0, 1};
    assert_true(fx_max_diff(im.data, magenta, 3) < 1e-6f);
    trn_image_free(&im);
    /* Saturation 0 gives grey at the value; exposure scales and clamps. */
    float o[3] = {.8f, .4f, 0};
    im = make(1, 1, 3, o);
    trn_image_distort(&im, 0, 0, 1);
    float grey[3] = {.8f, .8f, .8f};
    assert_true(fx_max_diff(im.data, grey, 3) < 1e-6f);
    trn_image_free(&im);
    im = make(1, 1, 3, o);
    trn_image_distort(&im, 0, 1, 2);
    float bright[3] = {1, .8f, 0};
    assert_true(fx_max_diff(im.data, bright, 3) < 1e-6f);
    trn_image_free(&im);
    /* One channel: only the exposure applies. */
    float g[2] = {.3f, .9f};
    im = make(2, 1, 1, g);
    trn_image_distort(&im, .4f, 3, 2);
    float gw[2] = {.6f, 1};
    assert_true(fx_max_diff(im.data, gw, 2) < 1e-6f);
    trn_image_free(&im);
}

void image_rotate_quarter_and_half(void **state)
{
    (void)state;
    /* 4x4, value x + 4 y; Darknet rotates about (w/2, h/2) = (2, 2). */
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = (float)i;
    trn_image src = make(4, 4, 1, v), dst = make(4, 4, 1, NULL);
    trn_image_rotate(&src, (float)M_PI, &dst);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            /* Output (x, y) reads (4 - x, 4 - y): zero on the first row and column. */
            float want = (x == 0 || y == 0) ? 0 : v[(4 - y) * 4 + (4 - x)];
            assert_true(fabsf(px(&dst, x, y, 0) - want) < 1e-5f);
        }
    trn_image_rotate(&src, (float)(M_PI / 2), &dst);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            /* Output (x, y) reads (4 - y, x). */
            float want = y == 0 ? 0 : v[x * 4 + (4 - y)];
            assert_true(fabsf(px(&dst, x, y, 0) - want) < 1e-5f);
        }
    trn_image_rotate(&src, 0, &dst);
    assert_true(fx_max_diff(src.data, dst.data, 16) == 0);
    trn_image_free(&dst);
    trn_image_free(&src);
}

void image_affine_zoom_and_window(void **state)
{
    (void)state;
    float v[16];
    for (int i = 0; i < 16; i++) v[i] = (float)i; /* x + 4 y */
    trn_image src = make(4, 4, 1, v);
    trn_affine a;
    trn_affine_init(&a, &src);
    float out[16];
    trn_image_affine(&src, &a, 4, 4, out); /* the identity */
    assert_true(fx_max_diff(out, v, 16) == 0);
    /* Scale 2 into 2x2: output x reads (x - 1) / 2 + 2; bilinear reproduces
     * the linear ramp exactly. */
    a.scale = 2;
    float z[4];
    trn_image_affine(&src, &a, 2, 2, z);
    float want[4] = {1.5f + 6, 2 + 6, 1.5f + 8, 2 + 8};
    assert_true(fx_max_diff(z, want, 4) < 1e-6f);
    /* A shift by dx = 2 source pixels (scale 1) moves the window right. */
    trn_affine_init(&a, &src);
    a.dx = 2;
    trn_image_affine(&src, &a, 2, 2, z);
    float shifted[4] = {7, 0, 11, 0}; /* reads x = 3, 4 (outside); y = 1, 2 */
    assert_true(fx_max_diff(z, shifted, 4) < 1e-6f);
    /* A window leaves only columns 2..3. */
    trn_affine_init(&a, &src);
    a.bx0 = 2;
    trn_image_affine(&src, &a, 4, 4, out);
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) assert_true(out[y * 4 + x] == (x < 2 ? 0 : v[y * 4 + x]));
    trn_image_free(&src);
}

void image_eval_resize_min_centre_crop(void **state)
{
    (void)state;
    /* 4 wide, 2 high into 2x2: shorter side is already 2, so no resize and
     * the centred window is columns 1..2. */
    float v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    trn_image src = make(4, 2, 1, v);
    float out[4];
    trn_image_eval_into(&src, 2, 2, out);
    float want[4] = {1, 2, 5, 6};
    assert_true(fx_max_diff(out, want, 4) == 0);
    /* 2 wide, 4 high into 2x2: rows 1..2. */
    trn_image tall = make(2, 4, 1, v);
    trn_image_eval_into(&tall, 2, 2, out);
    float wt[4] = {2, 3, 4, 5};
    assert_true(fx_max_diff(out, wt, 4) == 0);
    /* 2x2 into 3x3 is a plain resize. */
    float s[4] = {0, 1, 2, 3};
    trn_image sq = make(2, 2, 1, s), r = make(3, 3, 1, NULL);
    float up[9];
    trn_image_eval_into(&sq, 3, 3, up);
    trn_image_resize(&sq, &r);
    assert_true(fx_max_diff(up, r.data, 9) == 0);
    /* 6x3 into 2x2: shorter side 3 -> 2, the other (6 * 2) / 3 = 4, then the
     * centred 2x2 of the 4x2 resize. */
    float w6[18];
    for (int i = 0; i < 18; i++) w6[i] = (float)(i % 6);
    trn_image wide = make(6, 3, 1, w6), mid = make(4, 2, 1, NULL);
    trn_image_resize(&wide, &mid);
    trn_image_eval_into(&wide, 2, 2, out);
    float wm[4] = {mid.data[1], mid.data[2], mid.data[5], mid.data[6]};
    assert_true(fx_max_diff(out, wm, 4) == 0);
    assert_true(fabsf(out[0] - 5 / 3.f) < 1e-6f);
    trn_image_free(&mid);
    trn_image_free(&wide);
    trn_image_free(&r);
    trn_image_free(&sq);
    trn_image_free(&tall);
    trn_image_free(&src);
}

void image_load_input_matches_eval(void **state)
{
    (void)state;
    unsigned char *p = fx_pattern(9, 5, 3, 3);
    const char *path = fx_path("input/a.png");
    fx_write_image(path, "png", 9, 5, 3, p);
    free(p);
    trn_err e;
    trn_image im;
    assert_int_equal(trn_image_load(path, 3, &im, &e), 0);
    float a[4 * 4 * 3], b[4 * 4 * 3];
    trn_image_eval_into(&im, 4, 4, a);
    assert_int_equal(trn_image_load_input(path, 4, 4, 3, b, &e), 0);
    assert_memory_equal(a, b, sizeof a);
    trn_image_free(&im);
    /* One channel asked: the grey conversion, then the same preprocessing. */
    float g[16];
    assert_int_equal(trn_image_load_input(path, 4, 4, 1, g, &e), 0);
    for (int i = 0; i < 16; i++) assert_true(g[i] >= 0 && g[i] <= 1);
    assert_int_equal(trn_image_load_input(path, 0, 4, 3, b, &e), -1);
    assert_err_has(e, "input size");
}
