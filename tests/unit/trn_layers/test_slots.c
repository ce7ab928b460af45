/*
 * Every slot of the backend table, table-driven: one row per kernel slot
 * (its name, its offset in trn_backend, a check that runs the CPU table's
 * kernel and the reference table's (the oracle) on the same random inputs
 * and compares). A _Static_assert ties the row count to the number of
 * slots, so a new slot does not compile until it has a row; a run-time
 * check ties the offsets to the struct (every slot once, in order).
 *
 * Tolerance: 1e-5 relative norm error (the CPU table may sum in another
 * order: OpenBLAS, threads); test_kernels.c holds the stricter per-kernel
 * cases (exact equality where the operations are the same).
 */
#include "testutil.h"
#include "testlib_trn.h"

#include "backend.h"

#include <stddef.h>

static const trn_backend *cpu, *ref;

static float *rnd(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    tl_fill_uniform(x, n, seed, lo, hi);
    return x;
}

static void close_enough(const char *slot, const float *a, const float *b, size_t n)
{
    double e = tl_relerr(a, b, n);
    if (!(e <= 1e-5)) fail_msg("slot %s: cpu and ref differ, rel.err %.2e over %zu floats", slot, e, n);
}

enum { B = 2, C = 3, H = 7, W = 6, SP = H * W, N = B * C * SP };

static void t_alloc(const trn_backend *be, float *out)
{
    float *p = be->alloc(be, N * sizeof *p);
    assert_non_null(p);
    memcpy(out, p, N * sizeof *p); /* zeroed */
    be->release(be, p);
}
static void t_release(const trn_backend *be, float *out)
{
    be->release(be, NULL); /* a no-op, as free(NULL) */
    float *p = be->alloc(be, 4);
    assert_non_null(p);
    be->release(be, p);
    out[0] = 1;
}
static void t_upload(const trn_backend *be, float *out)
{
    float *x = rnd(N, 1, -2, 2);
    be->upload(be, out, x, N);
    free(x);
}
static void t_download(const trn_backend *be, float *out)
{
    float *x = rnd(N, 2, -2, 2);
    be->download(be, out, x, N);
    free(x);
}
static void t_gemm(const trn_backend *be, float *out)
{
    int m = 5, n = 7, k = 9;
    float *a = rnd((size_t)m * (k + 2), 3, -1, 1), *b = rnd((size_t)k * n, 4, -1, 1);
    memset(out, 0, (size_t)m * n * sizeof *out);
    be->gemm(be, 0, 0, m, n, k, 1, a, k + 2, b, n, 0, out, n);
    free(a), free(b);
}
static void t_im2col(const trn_backend *be, float *out)
{
    float *im = rnd(C * SP, 5, -1, 1);
    int oh = (H + 2 - 3) / 1 + 1, ow = (W + 2 - 3) / 1 + 1;
    memset(out, 0, (size_t)C * 9 * oh * ow * sizeof *out);
    be->im2col(be, im, C, H, W, 3, 1, 1, out, oh * ow);
    free(im);
}
static void t_col2im(const trn_backend *be, float *out)
{
    int oh = (H + 2 - 3) / 2 + 1, ow = (W + 2 - 3) / 2 + 1;
    float *col = rnd((size_t)C * 9 * oh * ow, 6, -1, 1);
    memset(out, 0, C * SP * sizeof *out);
    be->col2im(be, col, oh * ow, C, H, W, 3, 2, 1, out);
    free(col);
}
/* conv: 2 images of 3x7x6, 4 filters of 3x3 (W rows 2 floats apart more
 * than k), padding 1, stride 1 and 2. */
enum { CM = 4, CK = C * 9, CLD = CK + 2 };
static void t_conv(const trn_backend *be, float *out)
{
    float *in = rnd(N, 60, -1, 1), *w = rnd(CM * CLD, 61, -1, 1), *bias = rnd(CM, 62, -1, 1);
    trn_conv_shape s = {B, C, H, W, CM, 3, 1, 1, 0, NULL};
    be->conv(be, &s, in, w, CLD, bias, TRN_ACT_LEAKY, out);
    s.stride = 2;
    be->conv(be, &s, in, w, CLD, NULL, TRN_ACT_LINEAR, out + B * CM * SP);
    free(in), free(w), free(bias);
}
static void t_conv_dw(const trn_backend *be, float *out)
{
    float *in = rnd(N, 63, -1, 1), *d = rnd(B * CM * SP, 64, -1, 1);
    for (int i = 0; i < CM * CLD; i++) out[i] = 0.5f;
    trn_conv_shape s = {B, C, H, W, CM, 3, 1, 1, 0, NULL};
    be->conv_dw(be, &s, in, d, out, CLD);
    free(in), free(d);
}
static void t_conv_dx(const trn_backend *be, float *out)
{
    float *w = rnd(CM * CLD, 65, -1, 1), *d = rnd(B * CM * SP, 66, -1, 1);
    for (int i = 0; i < N; i++) out[i] = -0.25f;
    trn_conv_shape s = {B, C, H, W, CM, 3, 2, 1, 0, NULL};
    be->conv_dx(be, &s, d, w, CLD, out);
    free(w), free(d);
}
static void t_swap12(const trn_backend *be, float *out)
{
    float *x = rnd(N, 7, -1, 1);
    be->swap12(be, x, out, B, C, SP);
    free(x);
}
static void t_fill(const trn_backend *be, float *out) { be->fill(be, N, 0.375f, out); }
static void t_copy(const trn_backend *be, float *out)
{
    float *x = rnd(N, 8, -1, 1);
    be->copy(be, N, x, out);
    free(x);
}
static void t_axpy(const trn_backend *be, float *out)
{
    float *x = rnd(N, 9, -1, 1), *y = rnd(N, 10, -1, 1);
    be->axpy(be, N, -0.7f, x, y);
    memcpy(out, y, N * sizeof *y);
    free(x), free(y);
}
static void t_scal(const trn_backend *be, float *out)
{
    float *x = rnd(N, 11, -1, 1);
    be->scal(be, N, 1.5f, x);
    memcpy(out, x, N * sizeof *x);
    free(x);
}
static void t_activate(const trn_backend *be, float *out)
{
    for (int a = 0; a < TRN_ACT_COUNT; a++) {
        float *x = rnd(SP, 12 + a, -3, 3);
        be->activate(be, x, SP, (trn_activation)a);
        memcpy(out + a * SP, x, SP * sizeof *x);
        free(x);
    }
}
static void t_gradient(const trn_backend *be, float *out)
{
    for (int a = 0; a < TRN_ACT_COUNT; a++) {
        float *y = rnd(SP, 40 + a, -3, 3), *d = rnd(SP, 70 + a, -1, 1);
        ref->activate(ref, y, SP, (trn_activation)a); /* a valid output of f */
        be->gradient(be, y, SP, (trn_activation)a, d);
        memcpy(out + a * SP, d, SP * sizeof *d);
        free(y), free(d);
    }
}
static void t_add_bias(const trn_backend *be, float *out)
{
    float *b = rnd(C, 13, -1, 1), *x = rnd(N, 14, -1, 1);
    be->add_bias(be, x, b, B, C, SP);
    memcpy(out, x, N * sizeof *x);
    free(b), free(x);
}
static void t_scale_bias(const trn_backend *be, float *out)
{
    float *s = rnd(C, 15, -1, 1), *x = rnd(N, 16, -1, 1);
    be->scale_bias(be, x, s, B, C, SP);
    memcpy(out, x, N * sizeof *x);
    free(s), free(x);
}
static void t_backward_bias(const trn_backend *be, float *out)
{
    float *d = rnd(N, 17, -1, 1);
    for (int k = 0; k < C; k++) out[k] = 0.25f;
    be->backward_bias(be, out, d, B, C, SP);
    free(d);
}
static void t_backward_scale(const trn_backend *be, float *out)
{
    float *xn = rnd(N, 18, -1, 1), *d = rnd(N, 19, -1, 1);
    for (int k = 0; k < C; k++) out[k] = -0.5f;
    be->backward_scale(be, out, xn, d, B, C, SP);
    free(xn), free(d);
}
static void t_mean(const trn_backend *be, float *out)
{
    float *x = rnd(N, 20, -1, 3);
    be->mean(be, x, B, C, SP, out);
    free(x);
}
static void t_variance(const trn_backend *be, float *out)
{
    float *x = rnd(N, 21, -1, 3), m[C];
    ref->mean(ref, x, B, C, SP, m);
    be->variance(be, x, m, B, C, SP, out);
    free(x);
}
static void t_normalize(const trn_backend *be, float *out)
{
    float *x = rnd(N, 22, -1, 3), m[C], v[C];
    ref->mean(ref, x, B, C, SP, m);
    ref->variance(ref, x, m, B, C, SP, v);
    be->normalize(be, x, m, v, B, C, SP);
    memcpy(out, x, N * sizeof *x);
    free(x);
}
static void t_bn_backward(const trn_backend *be, float *out)
{
    float *x = rnd(N, 23, -1, 3), *d = rnd(N, 24, -1, 1), m[C], v[C];
    ref->mean(ref, x, B, C, SP, m);
    ref->variance(ref, x, m, B, C, SP, v);
    be->bn_backward(be, x, m, v, B, C, SP, out, out + C, d);
    memcpy(out + 2 * C, d, N * sizeof *d);
    free(x), free(d);
}
static void t_bn_apply(const trn_backend *be, float *out)
{
    float *x = rnd(N, 67, -1, 3), m[C], v[C], *sc = rnd(C, 68, 0.5f, 2), *b = rnd(C, 69, -1, 1);
    ref->mean(ref, x, B, C, SP, m);
    ref->variance(ref, x, m, B, C, SP, v);
    be->bn_apply(be, x, m, v, sc, b, B, C, SP, TRN_ACT_LEAKY, out);
    be->bn_apply(be, x, m, v, sc, b, B, C, SP, TRN_ACT_LOGISTIC, x); /* in place */
    memcpy(out + N, x, N * sizeof *x);
    free(x), free(sc), free(b);
}
static void t_bn_backward_act(const trn_backend *be, float *out)
{
    float *x = rnd(N, 70, -1, 3), *d = rnd(N, 71, -1, 1), m[C], v[C], *sc = rnd(C, 72, 0.5f, 2);
    float *b = rnd(C, 73, -1, 1), *y = malloc(N * sizeof *y);
    ref->mean(ref, x, B, C, SP, m);
    ref->variance(ref, x, m, B, C, SP, v);
    ref->bn_apply(ref, x, m, v, sc, b, B, C, SP, TRN_ACT_TANH, y);
    for (int k = 0; k < 2 * C; k++) out[k] = 0.125f;
    be->bn_backward_act(be, y, TRN_ACT_TANH, x, m, v, sc, B, C, SP, out, out + C, out + 2 * C, out + 3 * C, d);
    memcpy(out + 4 * C, d, N * sizeof *d);
    free(x), free(d), free(sc), free(b), free(y);
}
static void t_bias_gradient(const trn_backend *be, float *out)
{
    float *y = rnd(N, 74, -3, 3), *d = rnd(N, 75, -1, 1);
    ref->activate(ref, y, N, TRN_ACT_ELU);
    for (int k = 0; k < C; k++) out[k] = -0.75f;
    be->bias_gradient(be, y, TRN_ACT_ELU, B, C, SP, out, d);
    memcpy(out + C, d, N * sizeof *d);
    free(y), free(d);
}
enum { PS = 3, PST = 2, PP = 1, POH = (H + PP - PS) / PST + 1, POW = (W + PP - PS) / PST + 1,
       PN = B * C * POH * POW };
static void t_maxpool(const trn_backend *be, float *out)
{
    float *in = rnd(N, 25, -1, 1);
    int idx[PN];
    be->maxpool(be, in, B, C, H, W, PS, PST, PP, POH, POW, out, idx);
    for (int i = 0; i < PN; i++) out[PN + i] = (float)idx[i];
    free(in);
}
static void t_maxpool_backward(const trn_backend *be, float *out)
{
    float *in = rnd(N, 26, -1, 1), *d = rnd(PN, 27, -1, 1), o[PN];
    int idx[PN];
    ref->maxpool(ref, in, B, C, H, W, PS, PST, PP, POH, POW, o, idx);
    memset(out, 0, N * sizeof *out);
    be->maxpool_backward(be, d, idx, B * C, POH * POW, out);
    free(in), free(d);
}
static void t_avgpool(const trn_backend *be, float *out)
{
    float *in = rnd(N, 28, -1, 1);
    be->avgpool(be, in, B, C, SP, out);
    free(in);
}
static void t_avgpool_backward(const trn_backend *be, float *out)
{
    float *d = rnd(B * C, 29, -1, 1);
    for (int i = 0; i < N; i++) out[i] = 0.125f;
    be->avgpool_backward(be, d, B, C, SP, out);
    free(d);
}
static void t_softmax(const trn_backend *be, float *out)
{
    float *in = rnd(N, 30, -4, 4);
    be->softmax(be, in, B, C * SP, 3, 0.5f, out);
    free(in);
}
static float *probs(uint64_t seed)
{
    float *p = rnd(N, seed, 0.01f, 1);
    return p;
}
static void t_loss(const trn_backend *be, float *out, int which)
{
    float *p = probs(31 + which), *t = rnd(N, 35 + which, 0, 1);
    for (int i = 0; i < N; i += 3) t[i] = 0; /* zero truths: the softmax rule's 0 */
    void (*f)(const trn_backend *, size_t, const float *, const float *, float *, float *) =
        which == 0 ? be->softmax_xent : which == 1 ? be->l2 : which == 2 ? be->l1 : be->smooth_l1;
    f(be, N, p, t, out, out + N);
    free(p), free(t);
}
static void t_softmax_xent(const trn_backend *be, float *out) { t_loss(be, out, 0); }
static void t_l2(const trn_backend *be, float *out) { t_loss(be, out, 1); }
static void t_l1(const trn_backend *be, float *out) { t_loss(be, out, 2); }
static void t_smooth_l1(const trn_backend *be, float *out) { t_loss(be, out, 3); }
static void t_shortcut(const trn_backend *be, float *out)
{
    /* add (B, 5, 14, 12) sampled onto out (B, C, H, W) */
    size_t na = (size_t)B * 5 * 14 * 12;
    float *add = rnd(na, 39, -1, 1), *o = rnd(N, 40, -1, 1);
    be->shortcut(be, B, 12, 14, 5, add, W, H, C, 0.5f, 2, o);
    memcpy(out, o, N * sizeof *o);
    free(add), free(o);
}
static void t_crop(const trn_backend *be, float *out)
{
    float *in = rnd(N, 41, 0, 1);
    be->crop(be, in, B, C, H, W, 4, 3, 2, 1, 0, 2, -1, out);
    be->crop(be, in, B, C, H, W, 4, 3, 1, 2, 1, 1, 0, out + B * C * 12);
    free(in);
}
static void t_dropout(const trn_backend *be, float *out)
{
    float *x = rnd(N, 42, -1, 1), *r = rnd(N, 43, 0, 1);
    be->dropout(be, x, r, N, 0.3f, 1 / 0.7f);
    memcpy(out, x, N * sizeof *x);
    free(x), free(r);
}
static void t_sgd(const trn_backend *be, float *out)
{
    float *w = rnd(N, 44, -1, 1), *u = rnd(N, 45, -1, 1), *mask = rnd(N, 46, 0, 1);
    for (int i = 0; i < N; i++) mask[i] = mask[i] < 0.3f ? 0 : 1;
    be->sgd(be, w, u, mask, N, -0.001f, 0.01f, 0.9f);
    be->sgd(be, w, u, NULL, N, 0, 0.02f, 0.5f);
    memcpy(out, w, N * sizeof *w);
    memcpy(out + N, u, N * sizeof *u);
    free(w), free(u), free(mask);
}

typedef struct slot_row {
    const char *name;
    size_t offset;                                     /* offsetof(trn_backend, slot) */
    void (*run)(const trn_backend *be, float *out);    /* writes at most OUT floats */
} slot_row;

#define ROW(s) {#s, offsetof(trn_backend, s), t_##s}
static const slot_row slots[] = {
    ROW(alloc),          ROW(release),        ROW(upload),       ROW(download),
    ROW(gemm),           ROW(im2col),         ROW(col2im),       ROW(conv),
    ROW(conv_dw),        ROW(conv_dx),        ROW(swap12),
    ROW(fill),           ROW(copy),           ROW(axpy),         ROW(scal),
    ROW(activate),       ROW(gradient),       ROW(add_bias),     ROW(scale_bias),
    ROW(backward_bias),  ROW(backward_scale), ROW(mean),         ROW(variance),
    ROW(normalize),      ROW(bn_backward),    ROW(bn_apply),     ROW(bn_backward_act),
    ROW(bias_gradient),  ROW(maxpool),        ROW(maxpool_backward),
    ROW(avgpool),        ROW(avgpool_backward), ROW(softmax),    ROW(softmax_xent),
    ROW(l2),             ROW(l1),             ROW(smooth_l1),    ROW(shortcut),
    ROW(crop),           ROW(dropout),        ROW(sgd),
};
/* trn_backend is its name and then kernel pointers only: one row each. */
#define SLOT_COUNT ((sizeof(trn_backend) - offsetof(trn_backend, alloc)) / sizeof(void (*)(void)))
_Static_assert(sizeof slots / sizeof *slots == SLOT_COUNT,
               "a trn_backend slot has no row in the oracle table (tests/unit/trn_layers/test_slots.c)");

enum { OUT = 8 * N + 64 }; /* the largest check writes C*9*H*W floats (im2col) */

static void every_slot_matches_reference(void **state)
{
    (void)state;
    /* The rows name every slot once, in struct order. */
    for (size_t i = 0; i < SLOT_COUNT; i++) {
        size_t want = offsetof(trn_backend, alloc) + i * sizeof(void (*)(void));
        if (slots[i].offset != want) fail_msg("row %zu (%s) is not slot %zu", i, slots[i].name, i);
    }
    for (size_t i = 0; i < SLOT_COUNT; i++) {
        void *pc, *pr;
        memcpy(&pc, (const char *)cpu + slots[i].offset, sizeof pc);
        memcpy(&pr, (const char *)ref + slots[i].offset, sizeof pr);
        if (!pc || !pr) fail_msg("slot %s is NULL in the %s table", slots[i].name, pc ? "ref" : "cpu");
        float *o1 = calloc(OUT, sizeof *o1), *o2 = calloc(OUT, sizeof *o2);
        slots[i].run(cpu, o1);
        slots[i].run(ref, o2);
        close_enough(slots[i].name, o1, o2, OUT);
        /* the check must write something: an all-zero output proves nothing */
        int any = 0;
        for (int k = 0; k < OUT && !any; k++) any = o2[k] != 0;
        if (!any && strcmp(slots[i].name, "alloc") != 0)
            fail_msg("slot %s: the check wrote nothing", slots[i].name);
        free(o1), free(o2);
    }
    printf("# %zu backend slots checked against the reference\n", (size_t)SLOT_COUNT);
}

/* Appends the slot table test to t; returns how many. */
int slot_tests(struct CMUnitTest *t);
int slot_tests(struct CMUnitTest *t)
{
    cpu = trn_backend_get(TRN_BACKEND_CPU);
    ref = trn_backend_get(TRN_BACKEND_REF);
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_slot_matches_reference)};
    memcpy(t, tests, sizeof tests);
    return (int)(sizeof tests / sizeof *tests);
}
