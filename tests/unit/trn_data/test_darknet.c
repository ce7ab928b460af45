/* Differential: libtrn's image operations against Darknet's own (libdarknet,
 * run as the separate program tests/darknet/image_ref.c that `make test`
 * builds into $TESTD/darknet), on an image written by the test. Resize, crop, flip and the
 * evaluation preprocessing must agree bit for bit; HSV, distortion and the
 * rotations to 1e-6 (Darknet mixes double and float the same way, but a
 * compiler may order the double terms differently). Where Darknet computes
 * a NaN hue for a grey pixel, ours is 0. */
#include "tdata.h"

#include <math.h>
#include <unistd.h>

static float *read_ref(const char *dir, const char *op, int *w, int *h, int *c)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.f32", dir, op);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    int hdr[3];
    assert_int_equal(fread(hdr, sizeof hdr, 1, f), 1);
    *w = hdr[0];
    *h = hdr[1];
    *c = hdr[2];
    size_t n = (size_t)hdr[0] * hdr[1] * hdr[2];
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    assert_int_equal(fread(v, sizeof *v, n, f), n);
    fclose(f);
    return v;
}

/* Compares ours (w, h, c) with Darknet's file for `op`. */
static void same(const char *dir, const char *op, const float *ours, int w, int h, int c, float tol)
{
    int rw, rh, rc;
    float *ref = read_ref(dir, op, &rw, &rh, &rc);
    assert_int_equal(rw, w);
    assert_int_equal(rh, h);
    assert_int_equal(rc, c);
    size_t n = (size_t)w * h * c;
    float worst = 0;
    for (size_t i = 0; i < n; i++) {
        float d = isnan(ref[i]) ? fabsf(ours[i]) : fabsf(ours[i] - ref[i]);
        if (d > worst) worst = d;
    }
    if (!(worst <= tol)) {
        print_error("%s: max difference %g from Darknet, tolerance %g\n", op, worst, tol);
        fail();
    }
    free(ref);
}

void image_matches_darknet(void **state)
{
    (void)state;
    const char *testd = getenv("TESTD");
    char ref[1024];
    snprintf(ref, sizeof ref, "%s/darknet/image_ref", testd ? testd : "");
    if (!testd || access(ref, X_OK) != 0) {
        TEST_SKIP("%s is not built: run through make test", ref);
        return;
    }
    /* 11x9 RGB with a grey pixel and a pure red one. */
    int W = 11, H = 9;
    unsigned char *p = fx_pattern(W, H, 3, 17);
    memset(p + (2 * W + 3) * 3, 128, 3);
    p[(4 * W + 5) * 3] = 255, p[(4 * W + 5) * 3 + 1] = 0, p[(4 * W + 5) * 3 + 2] = 0;
    const char *png = fx_path("dn/in.png");
    fx_write_image(png, "png", W, H, 3, p);
    free(p);
    char out[1024], cmd[3200];
    snprintf(out, sizeof out, "%s", fx_path("dn"));
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", ref, png, out);
    assert_int_equal(system(cmd), 0);

    trn_err e;
    trn_image im;
    assert_int_equal(trn_image_load(png, 3, &im, &e), 0);
    same(out, "load", im.data, W, H, 3, 0);

    trn_image r;
    assert_int_equal(trn_image_alloc(&r, 7, 5, 3, &e), 0);
    trn_image_resize(&im, &r);
    same(out, "resize", r.data, 7, 5, 3, 0);
    trn_image_free(&r);

    float ev[6 * 6 * 3];
    trn_image_eval_into(&im, 6, 6, ev);
    same(out, "eval", ev, 6, 6, 3, 0);

    assert_int_equal(trn_image_alloc(&r, 6, 4, 3, &e), 0);
    trn_image_crop(&im, -2, 3, &r);
    same(out, "crop", r.data, 6, 4, 3, 0);
    trn_image_free(&r);

    trn_image t;
    assert_int_equal(trn_image_alloc(&t, W, H, 3, &e), 0);
    memcpy(t.data, im.data, sizeof(float) * W * H * 3);
    trn_image_flip(&t);
    same(out, "flip", t.data, W, H, 3, 0);

    memcpy(t.data, im.data, sizeof(float) * W * H * 3);
    trn_image_rgb_to_hsv(&t);
    same(out, "hsv", t.data, W, H, 3, 1e-6f);

    memcpy(t.data, im.data, sizeof(float) * W * H * 3);
    trn_image_distort(&t, 0.1f, 1.5f, 0.7f);
    same(out, "distort", t.data, W, H, 3, 1e-6f);

    trn_image_rotate(&im, 0.5f, &t);
    same(out, "rotate", t.data, W, H, 3, 1e-6f);
    trn_image_free(&t);

    trn_affine a;
    trn_affine_init(&a, &im);
    a.rad = 0.3f;
    a.scale = 1.3f;
    a.dx = 1.5f;
    a.dy = -2.f;
    a.aspect = 1.2f;
    float rc[8 * 8 * 3];
    trn_image_affine(&im, &a, 8, 8, rc);
    same(out, "rotcrop", rc, 8, 8, 3, 1e-6f);
    trn_image_free(&im);
}
