/* Augmentation: the neutral settings reproduce the image, flips are mirror
 * images, and the same generator state gives the same bytes. */
#include "tdata.h"

#include <math.h>

static trn_image pattern_image(int w, int h, int c, int seed)
{
    trn_image im;
    trn_err e;
    assert_int_equal(trn_image_alloc(&im, w, h, c, &e), 0);
    unsigned char *p = fx_pattern(w, h, c, seed);
    for (int k = 0; k < c; k++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                im.data[((size_t)k * h + y) * w + x] = p[((size_t)y * w + x) * c + k] / 255.f;
    free(p);
    return im;
}

void augment_identity_and_flip(void **state)
{
    (void)state;
    trn_image src = pattern_image(8, 8, 3, 5);
    trn_augment a;
    trn_augment_defaults(&a);
    a.min_crop = a.max_crop = 8; /* scale 1, no slack to shift in */
    a.flip = 0;
    float out[8 * 8 * 3];
    for (uint64_t s = 0; s < 8; s++) {
        trn_rng r;
        trn_rng_seed(&r, s);
        trn_augment_image(&src, &a, 8, 8, &r, out);
        assert_memory_equal(out, src.data, sizeof out);
    }
    /* flip=1: each output is the image or its mirror, and both happen. */
    a.flip = 1;
    trn_image mirror = pattern_image(8, 8, 3, 5);
    trn_image_flip(&mirror);
    int seen[2] = {0, 0};
    for (uint64_t s = 0; s < 32; s++) {
        trn_rng r;
        trn_rng_seed(&r, s);
        trn_augment_image(&src, &a, 8, 8, &r, out);
        int same = memcmp(out, src.data, sizeof out) == 0;
        int flipped = memcmp(out, mirror.data, sizeof out) == 0;
        assert_true(same != flipped);
        seen[flipped]++;
    }
    assert_true(seen[0] > 0 && seen[1] > 0);
    trn_image_free(&mirror);
    trn_image_free(&src);
}

void augment_same_seed_same_bytes(void **state)
{
    (void)state;
    trn_image src = pattern_image(20, 14, 3, 9);
    trn_augment a;
    trn_augment_defaults(&a);
    a.angle = 15;
    a.aspect = 1.3f;
    a.hue = .1f;
    a.saturation = 1.5f;
    a.exposure = 1.5f;
    a.jitter = .2f;
    a.min_crop = 10;
    a.max_crop = 24;
    enum { W = 12, H = 10, N = W * H * 3 };
    float a1[N], a2[N], b1[N];
    trn_rng r1, r2, r3;
    trn_rng_seed(&r1, 77);
    trn_rng_seed(&r2, 77);
    trn_rng_seed(&r3, 78);
    trn_augment_image(&src, &a, W, H, &r1, a1);
    trn_augment_image(&src, &a, W, H, &r2, a2);
    trn_augment_image(&src, &a, W, H, &r3, b1);
    assert_memory_equal(a1, a2, sizeof a1);
    assert_memory_not_equal(a1, b1, sizeof a1);
    /* The generators advanced identically, and distortion keeps [0, 1]. */
    assert_true(trn_rng_u64(&r1) == trn_rng_u64(&r2));
    for (int i = 0; i < N; i++) assert_true(a1[i] >= 0 && a1[i] <= 1);
    /* Many seeds: every value stays in [0, 1] and the outputs vary. */
    int distinct = 0;
    for (uint64_t s = 0; s < 20; s++) {
        trn_rng r;
        trn_rng_seed(&r, 1000 + s);
        trn_augment_image(&src, &a, W, H, &r, b1);
        for (int i = 0; i < N; i++) assert_true(b1[i] >= 0 && b1[i] <= 1);
        distinct += memcmp(a1, b1, sizeof a1) != 0;
    }
    assert_int_equal(distinct, 20);
    /* A one-channel image: hue and saturation do not apply, exposure does. */
    trn_image g = pattern_image(9, 9, 1, 2);
    float o1[81], o2[81];
    trn_rng_seed(&r1, 5);
    trn_rng_seed(&r2, 5);
    trn_augment_image(&g, &a, 9, 9, &r1, o1);
    trn_augment_image(&g, &a, 9, 9, &r2, o2);
    assert_memory_equal(o1, o2, sizeof o1);
    trn_image_free(&g);
    trn_image_free(&src);
}

void augment_check_rejects_bad_keys(void **state)
{
    (void)state;
    trn_augment a;
    trn_err e;
    trn_augment_defaults(&a);
    assert_int_equal(trn_augment_check(&a, "x.cfg [net]", &e), 0);
    a.angle = 200;
    assert_int_equal(trn_augment_check(&a, "x.cfg [net]", &e), -1);
    assert_err_has(e, "x.cfg [net]: angle=200");
    trn_augment_defaults(&a);
    a.saturation = NAN;
    assert_int_equal(trn_augment_check(&a, "net", &e), -1);
    assert_err_has(e, "saturation");
    trn_augment_defaults(&a);
    a.jitter = .5f;
    assert_int_equal(trn_augment_check(&a, "net", &e), -1);
    assert_err_has(e, "jitter");
    trn_augment_defaults(&a);
    a.min_crop = 300;
    a.max_crop = 200;
    assert_int_equal(trn_augment_check(&a, "net", &e), -1);
    assert_err_has(e, "min_crop=300");
    trn_augment_defaults(&a);
    a.flip = 2;
    assert_int_equal(trn_augment_check(&a, "net", &e), -1);
    assert_err_has(e, "flip=2");
}
