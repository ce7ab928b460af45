/*
 * The CPU backend's kernels against the reference backend (the oracle),
 * on shapes that exercise every path: transposes and leading dimensions
 * larger than the rows (channel-prefix capacities), strided and padded
 * im2col/col2im, every activation and its gradient, the batch-norm
 * passes, pooling and the loss kernels.
 *
 * Tolerances: 1e-5 relative norm error for kernels whose summation order
 * differs (gemm: OpenBLAS blocks and vectorises, the reference sums in
 * double); exact equality for kernels that do the same float operations
 * in the same order (copies, im2col, col2im per element, activations).
 */
#include "testutil.h"
#include "testlib_trn.h"

#include "backend.h"
#include "cpu.h"

#include <malloc.h>
#include <pthread.h>

static const trn_backend *cpu, *ref;

static float *rnd(size_t n, uint64_t seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    tl_fill_uniform(x, n, seed, -2, 2);
    return x;
}

static float *fdup(const float *x, size_t n)
{
    float *y = malloc((n ? n : 1) * sizeof *y);
    memcpy(y, x, n * sizeof *y);
    return y;
}

static void gemm_matches_reference(void **state)
{
    (void)state;
    struct { int ta, tb, m, n, k, extra; float alpha, beta; } cases[] = {
        {0, 0, 7, 9, 5, 0, 1, 0},    {0, 1, 7, 9, 5, 3, 1, 1},   {1, 0, 16, 33, 40, 0, 0.5f, 1},
        {1, 1, 3, 4, 70, 2, 1, 0.25f}, {0, 0, 64, 169, 288, 16, 1, 0}, {0, 0, 1, 1, 1, 0, 1, 0},
        /* matrix-vector shapes (gemv): every transpose, strided vectors */
        {0, 0, 1, 33, 17, 2, 1, 0},  {0, 1, 1, 33, 17, 3, 1, 1},  {1, 0, 1, 33, 17, 4, 0.5f, 1},
        {1, 1, 1, 33, 17, 1, 1, 0},  {0, 0, 29, 1, 17, 2, 1, 0.5f}, {0, 1, 29, 1, 17, 3, 1, 0},
        {1, 0, 29, 1, 17, 5, 1, 1},  {1, 1, 29, 1, 17, 2, 2, 0},
        /* a few rows times a wide B^T (the connected layers' forward at small
         * batches: C^T = B . A^T in tiles of 256 rows of B), a last partial tile */
        {0, 1, 16, 700, 90, 3, 1, 0}, {0, 1, 3, 513, 40, 0, 0.5f, 1}, {0, 1, 32, 257, 17, 1, 1, 0.25f},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int ta = cases[c].ta, tb = cases[c].tb, m = cases[c].m, n = cases[c].n, k = cases[c].k;
        /* Leading dimensions exceed the used width by `extra`. */
        int lda = (ta ? m : k) + cases[c].extra, ldb = (tb ? k : n) + cases[c].extra;
        int ldc = n + cases[c].extra;
        size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb, nc = (size_t)m * ldc;
        float *a = rnd(na, 1 + c), *b = rnd(nb, 2 + c), *c1 = rnd(nc, 3 + c), *c2 = fdup(c1, nc);
        cpu->gemm(cpu, ta, tb, m, n, k, cases[c].alpha, a, lda, b, ldb, cases[c].beta, c1, ldc);
        ref->gemm(ref, ta, tb, m, n, k, cases[c].alpha, a, lda, b, ldb, cases[c].beta, c2, ldc);
        double e = tl_relerr(c1, c2, nc);
        printf("# gemm %c%c %dx%dx%d ld+%d: rel.err %.1e\n", ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k,
               cases[c].extra, e);
        assert_true(e <= 1e-5);
        free(a), free(b), free(c1), free(c2);
    }
}

static void im2col_col2im_match_reference(void **state)
{
    (void)state;
    struct { int c, h, w, ks, stride, pad; } cases[] = {
        {3, 8, 8, 3, 1, 1}, {2, 9, 7, 3, 2, 1}, {4, 11, 11, 5, 2, 2}, {3, 227, 227, 11, 4, 0},
        {1, 5, 5, 1, 2, 0}, {2, 6, 6, 1, 1, 1}, {3, 4, 4, 3, 3, 2},  {64, 28, 28, 3, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int c = cases[i].c, h = cases[i].h, w = cases[i].w, ks = cases[i].ks, s = cases[i].stride,
            p = cases[i].pad;
        int oh = (h + 2 * p - ks) / s + 1, ow = (w + 2 * p - ks) / s + 1;
        size_t nim = (size_t)c * h * w, ncol = (size_t)c * ks * ks * oh * ow;
        /* Written as the second of three images side by side (ldcol). */
        int n = oh * ow, ld = 3 * n;
        float *im = rnd(nim, 10 + i), *c1 = rnd(3 * ncol, 20), *c2 = fdup(c1, 3 * ncol);
        cpu->im2col(cpu, im, c, h, w, ks, s, p, c1 + n, ld);
        ref->im2col(ref, im, c, h, w, ks, s, p, c2 + n, ld);
        assert_memory_equal(c1, c2, 3 * ncol * sizeof *c1);
        float *i1 = rnd(nim, 30 + i), *i2 = fdup(i1, nim);
        cpu->col2im(cpu, c1 + n, ld, c, h, w, ks, s, p, i1);
        ref->col2im(ref, c1 + n, ld, c, h, w, ks, s, p, i2);
        double e = tl_relerr(i1, i2, nim);
        assert_true(e <= 1e-6);
        /* swap12 twice is the identity; once it matches the reference. */
        float *s1 = rnd(ncol, 40), *s2 = rnd(ncol, 41);
        cpu->swap12(cpu, c1 + n, s1, c, ks * ks, n);
        ref->swap12(ref, c1 + n, s2, c, ks * ks, n);
        assert_memory_equal(s1, s2, ncol * sizeof *s1);
        cpu->swap12(cpu, s1, s2, ks * ks, c, n);
        assert_memory_equal(s2, c1 + n, ncol * sizeof *s2);
        free(im), free(c1), free(c2), free(i1), free(i2), free(s1), free(s2);
    }
}

static void activations_match_reference(void **state)
{
    (void)state;
    size_t n = 70001; /* big enough for the threaded path, odd for the tail */
    for (int a = 0; a < TRN_ACT_COUNT; a++) {
        float *x1 = rnd(n, 40 + a), *x2 = fdup(x1, n);
        for (size_t i = 0; i < 64; i++) x1[i] = x2[i] = (float)i / 8 - 4; /* kinks, exact values */
        cpu->activate(cpu, x1, n, a);
        ref->activate(ref, x2, n, a);
        assert_memory_equal(x1, x2, n * sizeof *x1);
        float *d1 = rnd(n, 50 + a), *d2 = fdup(d1, n);
        cpu->gradient(cpu, x1, n, a, d1);
        ref->gradient(ref, x2, n, a, d2);
        assert_memory_equal(d1, d2, n * sizeof *d1);
        free(x1), free(x2), free(d1), free(d2);
    }
}

static void channel_kernels_match_reference(void **state)
{
    (void)state;
    int batch = 3, c = 5, sp = 37;
    size_t n = (size_t)batch * c * sp;
    float *x = rnd(n, 60), *b = rnd(c, 61);
    float *x1 = fdup(x, n), *x2 = fdup(x, n);
    cpu->add_bias(cpu, x1, b, batch, c, sp);
    ref->add_bias(ref, x2, b, batch, c, sp);
    assert_memory_equal(x1, x2, n * sizeof *x1);
    cpu->scale_bias(cpu, x1, b, batch, c, sp);
    ref->scale_bias(ref, x2, b, batch, c, sp);
    assert_memory_equal(x1, x2, n * sizeof *x1);
    float m1[5], m2[5], v1[5], v2[5];
    cpu->mean(cpu, x, batch, c, sp, m1);
    ref->mean(ref, x, batch, c, sp, m2);
    assert_true(tl_relerr(m1, m2, 5) <= 1e-6);
    cpu->variance(cpu, x, m2, batch, c, sp, v1);
    ref->variance(ref, x, m2, batch, c, sp, v2);
    assert_true(tl_relerr(v1, v2, 5) <= 1e-6);
    float *y1 = fdup(x, n), *y2 = fdup(x, n);
    cpu->normalize(cpu, y1, m2, v2, batch, c, sp);
    ref->normalize(ref, y2, m2, v2, batch, c, sp);
    assert_true(tl_relerr(y1, y2, n) <= 1e-6);
    float db1[5] = {0}, db2[5] = {0};
    cpu->backward_bias(cpu, db1, x, batch, c, sp);
    ref->backward_bias(ref, db2, x, batch, c, sp);
    assert_true(tl_relerr(db1, db2, 5) <= 1e-6);
    float md1[5], md2[5], vd1[5], vd2[5];
    float *d1 = rnd(n, 62), *d2 = fdup(d1, n);
    cpu->bn_backward(cpu, x, m2, v2, batch, c, sp, md1, vd1, d1);
    ref->bn_backward(ref, x, m2, v2, batch, c, sp, md2, vd2, d2);
    assert_true(tl_relerr(d1, d2, n) <= 1e-6);
    free(x), free(b), free(x1), free(x2), free(y1), free(y2), free(d1), free(d2);
}

/* The convolution kernels (the CPU's cut into tiles, several images per
 * weights-gradient product, partial sums in lanes, 1x1 without im2col,
 * one image cut into row ranges or into blocks of filters) against the reference's plain loops, and
 * the same bytes for 1 and 3 threads. */
static void conv_kernels_match_reference_for_any_threads(void **state)
{
    (void)state;
    struct { int batch, c, h, w, m, ks, stride, pad, extra; } cases[] = {
        {5, 3, 32, 32, 32, 5, 1, 2, 0}, {9, 48, 8, 8, 48, 3, 1, 1, 5}, {3, 16, 9, 9, 8, 1, 1, 0, 2},
        {1, 3, 67, 67, 16, 11, 4, 0, 0}, {2, 64, 12, 12, 20, 5, 1, 2, 1}, {2, 4, 5, 5, 6, 3, 2, 2, 0},
        {17, 6, 7, 7, 5, 3, 1, 1, 3},
        /* more filters than positions at a small batch: blocks of filters */
        {1, 8, 5, 5, 64, 3, 1, 1, 2}, {2, 4, 4, 4, 50, 1, 1, 0, 0}, {1, 6, 4, 4, 16, 3, 1, 1, 0},
        /* batch 1, fewer filters than positions: two wide row ranges of unequal heights */
        {1, 16, 27, 27, 32, 5, 1, 2, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        trn_conv_shape s = {cases[i].batch, cases[i].c, cases[i].h, cases[i].w, cases[i].m, cases[i].ks,
                            cases[i].stride, cases[i].pad, 0, NULL};
        int oh = (s.h + 2 * s.pad - s.ks) / s.stride + 1, ow = (s.w + 2 * s.pad - s.ks) / s.stride + 1;
        int k = s.c * s.ks * s.ks, ldw = k + cases[i].extra;
        size_t nin = (size_t)s.batch * s.c * s.h * s.w, nout = (size_t)s.batch * s.m * oh * ow;
        size_t nw = (size_t)s.m * ldw;
        float *in = rnd(nin, 80 + i), *w = rnd(nw, 90 + i), *bias = rnd((size_t)s.m, 100 + i);
        float *d = rnd(nout, 110 + i), *dw0 = rnd(nw, 120 + i), *dx0 = rnd(nin, 130 + i);
        float *o[3], *dw[3], *dx[3]; /* ref, cpu at 1 thread, cpu at 3 threads */
        for (int v = 0; v < 3; v++) {
            const trn_backend *be = v ? cpu : ref;
            trn_set_threads(v == 2 ? 3 : 1);
            o[v] = malloc(nout * sizeof *o[v]), dw[v] = fdup(dw0, nw), dx[v] = fdup(dx0, nin);
            be->conv(be, &s, in, w, ldw, bias, TRN_ACT_LEAKY, o[v]);
            be->conv_dw(be, &s, in, d, dw[v], ldw);
            be->conv_dx(be, &s, d, w, ldw, dx[v]);
        }
        double eo = tl_relerr(o[1], o[0], nout), ew = tl_relerr(dw[1], dw[0], nw), ex = tl_relerr(dx[1], dx[0], nin);
        printf("# conv %dx%dx%dx%d m %d ks %d/%d pad %d: rel.err out %.1e dw %.1e dx %.1e\n", s.batch, s.c, s.h,
               s.w, s.m, s.ks, s.stride, s.pad, eo, ew, ex);
        assert_true(eo <= 1e-5 && ew <= 1e-5 && ex <= 1e-5);
        assert_memory_equal(o[1], o[2], nout * sizeof *o[1]);
        assert_memory_equal(dw[1], dw[2], nw * sizeof *dw[1]);
        assert_memory_equal(dx[1], dx[2], nin * sizeof *dx[1]);
        for (int v = 0; v < 3; v++) free(o[v]), free(dw[v]), free(dx[v]);
        free(in), free(w), free(bias), free(d), free(dw0), free(dx0);
    }
    trn_set_threads(0);
}

/* The inference forward of 3x3 and 5x5 stride-1 convolutions by Winograd's
 * F(2x2, 3x3) and F(2x2, 5x5) (cpu_winograd.c) against the reference's
 * plain loops: within 1e-5 relative norm error (2e-7 and 4e-7 measured:
 * the transforms add inputs before the products, another rounding than the
 * direct sum); the same
 * bytes for 1 and 3 threads; odd output sizes (a last tile half outside),
 * padding 0..2, several images side by side, W's rows longer than k. With
 * trn_set_winograd(0), in the portable mode and for a training forward
 * (infer 0) the direct product's exact bytes. */
static void winograd_matches_reference_for_any_threads(void **state)
{
    (void)state;
    /* the last three strided: space-to-depth, then a 3x3 Winograd
     * (alexnet.cfg's conv1 11x11 stride 4 on 3 channels, with padding, and
     * a 5x5 stride 2; 96 filters: 6 blocks of 16) */
    struct { int batch, c, h, w, m, ks, pad, extra, stride; } cases[] = {
        {1, 32, 13, 13, 40, 3, 1, 0, 1}, {3, 48, 6, 5, 33, 3, 0, 2, 1}, {2, 32, 9, 9, 64, 3, 2, 0, 1},
        {1, 64, 4, 7, 32, 3, 1, 5, 1}, {1, 32, 11, 11, 48, 5, 2, 0, 1}, {2, 40, 8, 9, 33, 5, 1, 3, 1},
        {1, 32, 6, 6, 32, 5, 0, 0, 1}, {1, 3, 35, 35, 96, 11, 0, 0, 4}, {2, 3, 27, 30, 33, 11, 2, 3, 4},
        {1, 8, 15, 14, 32, 5, 1, 1, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        trn_conv_shape s = {cases[i].batch, cases[i].c, cases[i].h, cases[i].w, cases[i].m, cases[i].ks,
                            cases[i].stride, cases[i].pad, 1, NULL};
        trn_conv_shape direct = s;
        direct.infer = 0;
        int oh = (s.h + 2 * s.pad - s.ks) / s.stride + 1, ow = (s.w + 2 * s.pad - s.ks) / s.stride + 1,
            ldw = s.c * s.ks * s.ks + cases[i].extra;
        size_t nin = (size_t)s.batch * s.c * s.h * s.w, nout = (size_t)s.batch * s.m * oh * ow;
        size_t nw = (size_t)s.m * ldw;
        float *in = rnd(nin, 140 + i), *w = rnd(nw, 150 + i), *bias = rnd((size_t)s.m, 160 + i);
        float *o[6]; /* ref, winograd at 1 and 3 threads, direct, winograd off, portable */
        for (int v = 0; v < 6; v++) o[v] = malloc(nout * sizeof *o[v]);
        trn_set_threads(1);
        ref->conv(ref, &s, in, w, ldw, bias, TRN_ACT_LEAKY, o[0]);
        cpu->conv(cpu, &s, in, w, ldw, bias, TRN_ACT_LEAKY, o[1]);
        cpu->conv(cpu, &direct, in, w, ldw, bias, TRN_ACT_LEAKY, o[3]);
        trn_set_winograd(0);
        cpu->conv(cpu, &s, in, w, ldw, bias, TRN_ACT_LEAKY, o[4]);
        trn_set_winograd(1);
        trn_set_threads(3);
        cpu->conv(cpu, &s, in, w, ldw, bias, TRN_ACT_LEAKY, o[2]);
        trn_set_determinism(TRN_DET_PORTABLE);
        float *p0 = malloc(nout * sizeof *p0);
        cpu->conv(cpu, &direct, in, w, ldw, bias, TRN_ACT_LEAKY, p0);
        cpu->conv(cpu, &s, in, w, ldw, bias, TRN_ACT_LEAKY, o[5]);
        trn_set_determinism(TRN_DET_DEFAULT);
        double e = tl_relerr(o[1], o[0], nout);
        printf("# winograd %dx%dx%dx%d m %d ks %d stride %d pad %d: rel.err %.1e\n", s.batch, s.c, s.h, s.w, s.m, s.ks,
               s.stride, s.pad, e);
        assert_true(e <= 1e-5);
        assert_memory_equal(o[1], o[2], nout * sizeof *o[1]);
        assert_memory_equal(o[3], o[4], nout * sizeof *o[1]);
        assert_memory_equal(p0, o[5], nout * sizeof *o[1]);
        assert_true(memcmp(o[1], o[3], nout * sizeof *o[1]) != 0); /* it did run */
        for (int v = 0; v < 6; v++) free(o[v]);
        free(p0), free(in), free(w), free(bias);
    }
    trn_set_threads(0);
}

/* A strided inference convolution whose space-to-depth shape Winograd
 * declines (3 channels: 12 after space-to-depth, below its minimum; the
 * catalog's rw-s1s1h1 conv1) is the direct product's exact bytes: fwd_s2d
 * gives up on the shape alone (trn_cpu_winograd_applies), before its
 * regrouping. Its 3x3 counterpart of 32 channels and filters does apply. */
static void s2d_declined_by_shape_is_the_direct_product(void **state)
{
    (void)state;
    trn_conv_shape s = {1, 3, 32, 32, 16, 5, 2, 1, 1, NULL}, direct = s, s2 = {1, 12, 17, 17, 16, 3, 1, 0, 1, NULL};
    direct.infer = 0;
    assert_false(trn_cpu_winograd_applies(&s2));
    s2.c = s2.m = 32;
    assert_true(trn_cpu_winograd_applies(&s2));
    int oh = (s.h + 2 * s.pad - s.ks) / s.stride + 1;
    size_t nin = (size_t)s.c * s.h * s.w, nout = (size_t)s.m * oh * oh, nw = (size_t)s.m * s.c * s.ks * s.ks;
    float *in = rnd(nin, 170), *w = rnd(nw, 171), *bias = rnd((size_t)s.m, 172);
    float *o = malloc(nout * sizeof *o), *d = malloc(nout * sizeof *d), *r = malloc(nout * sizeof *r);
    ref->conv(ref, &s, in, w, s.c * s.ks * s.ks, bias, TRN_ACT_RELU, r);
    cpu->conv(cpu, &s, in, w, s.c * s.ks * s.ks, bias, TRN_ACT_RELU, o);
    cpu->conv(cpu, &direct, in, w, s.c * s.ks * s.ks, bias, TRN_ACT_RELU, d);
    assert_memory_equal(o, d, nout * sizeof *o);
    assert_true(tl_relerr(o, r, nout) <= 1e-6);
    free(o), free(d), free(r), free(in), free(w), free(bias);
}

/* Prepared weights (trn_conv_prep, backend.h): the forward that makes them
 * and the forwards that read them give the bytes of a forward without
 * them, at 1 and 3 threads (3x3, 5x5, space-to-depth 11x11 stride 4, and
 * a batch in groups of images); once made they are read instead of the
 * weights at that pointer (scribbled over in place, which a borrowed
 * network's never are: the output stays), and weights at another pointer
 * make them again. */
static void prepared_filters_give_the_same_bytes(void **state)
{
    (void)state;
    struct { int batch, c, h, w, m, ks, stride, pad; } cases[] = {
        {1, 32, 13, 13, 40, 3, 1, 1}, {1, 32, 11, 11, 48, 5, 1, 2}, {1, 3, 35, 35, 96, 11, 4, 0},
        {40, 48, 30, 30, 33, 3, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        trn_conv_prep p = {0};
        trn_conv_shape s = {cases[i].batch, cases[i].c, cases[i].h, cases[i].w, cases[i].m, cases[i].ks,
                            cases[i].stride, cases[i].pad, 1, NULL}, sp = s;
        sp.prep = &p;
        int oh = (s.h + 2 * s.pad - s.ks) / s.stride + 1, ow = (s.w + 2 * s.pad - s.ks) / s.stride + 1,
            ldw = s.c * s.ks * s.ks;
        size_t nin = (size_t)s.batch * s.c * s.h * s.w, nout = (size_t)s.batch * s.m * oh * ow, nw = (size_t)s.m * ldw;
        float *in = rnd(nin, 180 + i), *w = rnd(nw, 190 + i), *bias = rnd((size_t)s.m, 200 + i);
        float *o[4];
        for (int v = 0; v < 4; v++) o[v] = malloc(nout * sizeof *o[v]);
        trn_set_threads(1);
        cpu->conv(cpu, &s, in, w, ldw, bias, TRN_ACT_LEAKY, o[0]);
        cpu->conv(cpu, &sp, in, w, ldw, bias, TRN_ACT_LEAKY, o[1]);
        assert_true(p.ready);
        trn_set_threads(3);
        cpu->conv(cpu, &sp, in, w, ldw, bias, TRN_ACT_LEAKY, o[2]);
        assert_memory_equal(o[0], o[1], nout * sizeof *o[0]);
        assert_memory_equal(o[0], o[2], nout * sizeof *o[0]);
        float *w2 = rnd(nw, 210 + i);
        memcpy(w, w2, nw * sizeof *w); /* in place: the prepared filters are read */
        cpu->conv(cpu, &sp, in, w, ldw, bias, TRN_ACT_LEAKY, o[3]);
        assert_memory_equal(o[0], o[3], nout * sizeof *o[0]);
        cpu->conv(cpu, &sp, in, w2, ldw, bias, TRN_ACT_LEAKY, o[1]); /* another pointer: made again */
        cpu->conv(cpu, &s, in, w2, ldw, bias, TRN_ACT_LEAKY, o[2]);
        assert_memory_equal(o[1], o[2], nout * sizeof *o[0]);
        assert_true(memcmp(o[0], o[1], nout * sizeof *o[0]) != 0);
        trn_conv_prep_clear(&p);
        assert_null(p.u);
        for (int v = 0; v < 4; v++) free(o[v]);
        free(in), free(w), free(w2), free(bias);
    }
    trn_set_threads(0);
}

/* The fused batch-norm passes against the reference, and the same bytes
 * for 1 and 3 threads. */
static void fused_bn_kernels_match_reference_for_any_threads(void **state)
{
    (void)state;
    struct { int batch, c, sp; trn_activation a; } cases[] = {
        {64, 32, 1024, TRN_ACT_RELU}, {7, 5, 37, TRN_ACT_LEAKY}, {16, 300, 1, TRN_ACT_LOGISTIC}, {3, 4, 64, TRN_ACT_LINEAR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int batch = cases[i].batch, c = cases[i].c, sp = cases[i].sp;
        trn_activation a = cases[i].a;
        size_t n = (size_t)batch * c * sp;
        float *x = rnd(n, 140 + i), *sc = rnd((size_t)c, 150 + i), *b = rnd((size_t)c, 160 + i);
        float *m = malloc((size_t)c * sizeof *m), *v = malloc((size_t)c * sizeof *v);
        ref->mean(ref, x, batch, c, sp, m);
        ref->variance(ref, x, m, batch, c, sp, v);
        float *y[3], *d[3], *p[3]; /* p: db, ds, mean_delta, variance_delta */
        float *d0 = rnd(n, 170 + i);
        for (int k = 0; k < 3; k++) {
            const trn_backend *be = k ? cpu : ref;
            trn_set_threads(k == 2 ? 3 : 1);
            y[k] = malloc(n * sizeof *y[k]), d[k] = fdup(d0, n), p[k] = calloc(4 * (size_t)c, sizeof *p[k]);
            be->bn_apply(be, x, m, v, sc, b, batch, c, sp, a, y[k]);
            be->bn_backward_act(be, y[0], a, x, m, v, sc, batch, c, sp, p[k], p[k] + c, p[k] + 2 * c, p[k] + 3 * c,
                                d[k]);
        }
        double ey = tl_relerr(y[1], y[0], n), ed = tl_relerr(d[1], d[0], n), ep = tl_relerr(p[1], p[0], 4 * (size_t)c);
        printf("# bn %dx%dx%d act %d: rel.err out %.1e delta %.1e sums %.1e\n", batch, c, sp, (int)a, ey, ed, ep);
        assert_true(ey <= 1e-6 && ed <= 1e-5 && ep <= 1e-5);
        assert_memory_equal(y[1], y[2], n * sizeof *y[1]);
        assert_memory_equal(d[1], d[2], n * sizeof *d[1]);
        assert_memory_equal(p[1], p[2], 4 * (size_t)c * sizeof *p[1]);
        for (int k = 0; k < 3; k++) free(y[k]), free(d[k]), free(p[k]);
        free(x), free(sc), free(b), free(m), free(v), free(d0);
    }
    trn_set_threads(0);
}

static void pooling_and_losses_match_reference(void **state)
{
    (void)state;
    /* Every geometry the CPU's paths take (flat rows with and without the
     * pick of every s-th, the per-row passes, plain loops), on inputs full
     * of ties (as after a ReLU: zeros and a few repeated values) where the
     * first maximum in row-major order must win, and on plain random ones. */
    struct { int h, w, size, stride, pad; } g[] = {
        {9, 7, 3, 2, 2}, {30, 30, 3, 2, 2}, {13, 13, 3, 2, 2}, {7, 7, 3, 2, 2}, {8, 8, 2, 2, 1},
        {8, 8, 2, 2, 0}, {6, 9, 3, 1, 2}, {10, 12, 3, 3, 4}, {5, 6, 4, 2, 5}, {55, 55, 3, 2, 0},
        {100, 100, 3, 2, 2}, {4, 4, 1, 1, 0},
    };
    for (size_t q = 0; q < 2 * sizeof g / sizeof *g; q++) {
        int batch = 2, c = 3, h = g[q / 2].h, w = g[q / 2].w, size = g[q / 2].size, stride = g[q / 2].stride,
            pad = g[q / 2].pad, ties = (int)(q % 2);
        int oh = (h + pad - size) / stride + 1, ow = (w + pad - size) / stride + 1;
        size_t nin = (size_t)batch * c * h * w, nout = (size_t)batch * c * oh * ow;
        float *in = rnd(nin, 60 + q), *o1 = rnd(nout, 71), *o2 = rnd(nout, 72);
        /* ties: zeros of both signs (a ReLU makes -0 from a negative
         * input times 0), so that the first maximum's sign bit shows */
        for (size_t i = 0; ties && i < nin; i++)
            in[i] = in[i] < 0 ? (in[i] < -0.5f ? -0.0f : 0.0f) : (float)(int)(in[i] * 1.5f);
        int *i1 = malloc(nout * sizeof *i1), *i2 = malloc(nout * sizeof *i2);
        float *o3 = rnd(nout, 73);
        cpu->maxpool(cpu, in, batch, c, h, w, size, stride, pad, oh, ow, o1, i1);
        ref->maxpool(ref, in, batch, c, h, w, size, stride, pad, oh, ow, o2, i2);
        assert_memory_equal(o1, o2, nout * sizeof *o1);
        assert_memory_equal(i1, i2, nout * sizeof *i1);
        /* values only (an inference keeps no indexes: its own path) */
        for (int t = 1; t <= 3; t += 2) {
            trn_set_threads(t);
            cpu->maxpool(cpu, in, batch, c, h, w, size, stride, pad, oh, ow, o3, NULL);
            assert_memory_equal(o3, o2, nout * sizeof *o3);
        }
        trn_set_threads(0);
        free(in), free(o1), free(o2), free(o3), free(i1), free(i2);
    }
    /* The backward's scatter (planes side by side on the pool) against the
     * reference's, on ties (several outputs adding into one input, in
     * order): the same bytes at 1 and 3 threads. */
    {
        int pb = 8, pc = 20, ph = 30, pw = 30, oh = 15, ow = 15;
        size_t nin = (size_t)pb * pc * ph * pw, nout = (size_t)pb * pc * oh * ow;
        float *in = rnd(nin, 74), *o = malloc(nout * sizeof *o), *d = rnd(nout, 75);
        for (size_t i = 0; i < nin; i++) in[i] = in[i] < 0 ? 0 : (float)(int)(in[i] * 1.5f);
        int *ix = malloc(nout * sizeof *ix);
        ref->maxpool(ref, in, pb, pc, ph, pw, 3, 2, 2, oh, ow, o, ix);
        float *gd[3];
        for (int v = 0; v < 3; v++) {
            const trn_backend *be = v ? cpu : ref;
            trn_set_threads(v == 2 ? 3 : 1);
            gd[v] = fdup(in, nin);
            be->maxpool_backward(be, d, ix, pb * pc, oh * ow, gd[v]);
        }
        trn_set_threads(0);
        assert_memory_equal(gd[0], gd[1], nin * sizeof *gd[0]);
        assert_memory_equal(gd[0], gd[2], nin * sizeof *gd[0]);
        for (int v = 0; v < 3; v++) free(gd[v]);
        free(in), free(o), free(d), free(ix);
    }
    int batch = 2, c = 3, h = 9, w = 7;
    size_t nin = (size_t)batch * c * h * w;
    float *in = rnd(nin, 70);
    float *s1 = rnd(nin, 73), *s2 = fdup(s1, nin);
    cpu->softmax(cpu, in, batch, c * h * w, 3, 0.5f, s1);
    ref->softmax(ref, in, batch, c * h * w, 3, 0.5f, s2);
    assert_true(tl_relerr(s1, s2, nin) <= 1e-6);
    free(in), free(s1), free(s2);
}

static void *grab_scratch(void *arg)
{
    size_t n = *(const size_t *)arg;
    float *p = trn_cpu_scratch(TRN_SCRATCH_FEW, n);
    if (p) p[n - 1] = 1;
    return p;
}

/* A thread's scratch buffers are freed when the thread exits (they stayed
 * behind before: LeakSanitizer found rtl serve's workers' at SIGTERM). 64
 * MB is mmapped by malloc, so it shows in mallinfo2's hblkhd; under
 * AddressSanitizer mallinfo2 says nothing and LeakSanitizer checks it. */
static void scratch_freed_when_its_thread_exits(void **state)
{
    (void)state;
    size_t n = (size_t)16 << 20;
    struct mallinfo2 before = mallinfo2();
    pthread_t t;
    void *got = NULL;
    assert_int_equal(pthread_create(&t, NULL, grab_scratch, &n), 0);
    assert_int_equal(pthread_join(t, &got), 0);
    assert_non_null(got);
    struct mallinfo2 after = mallinfo2();
    assert_true(after.hblkhd < before.hblkhd + n * sizeof(float));
}

/* Appends the kernel tests to t; returns how many. */
int kernel_tests(struct CMUnitTest *t);
int kernel_tests(struct CMUnitTest *t)
{
    cpu = trn_backend_get(TRN_BACKEND_CPU);
    ref = trn_backend_get(TRN_BACKEND_REF);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gemm_matches_reference),
        cmocka_unit_test(im2col_col2im_match_reference),
        cmocka_unit_test(activations_match_reference),
        cmocka_unit_test(channel_kernels_match_reference),
        cmocka_unit_test(pooling_and_losses_match_reference),
        cmocka_unit_test(conv_kernels_match_reference_for_any_threads),
        cmocka_unit_test(winograd_matches_reference_for_any_threads),
        cmocka_unit_test(s2d_declined_by_shape_is_the_direct_product),
        cmocka_unit_test(prepared_filters_give_the_same_bytes),
        cmocka_unit_test(scratch_freed_when_its_thread_exits),
        cmocka_unit_test(fused_bn_kernels_match_reference_for_any_threads),
    };
    memcpy(t, tests, sizeof tests);
    return (int)(sizeof tests / sizeof *tests);
}
