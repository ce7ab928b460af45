/* Unit tests of the context profiler (runtime-lite/src/context.c, MCDNN
 * section 4.1.2): the report equals a brute-force count of the window on
 * random streams (every n, share, dominance and threshold), the ring
 * forgets the oldest input, the warm-up, the hysteresis and tie stability
 * (no switching at every input), `changed`, the share of a given class set,
 * the class set of a specialised variant by label and its cascade's gate,
 * and bad parameters. */
#include "testutil_impl.h"
#include "rtl.h"
#include "internal.h" /* functions librtl no longer exports (issue 38) */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static uint32_t urand(uint32_t n)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)((rng >> 11) % n);
}

static rtl_context_profiler *make(uint32_t classes, uint32_t window, uint32_t min_samples, double h)
{
    rtl_context_params q = {.classes = classes, .window = window, .min_samples = min_samples, .hysteresis = h};
    rtl_err e;
    rtl_context_profiler *p = rtl_context_profiler_new(&q, &e);
    if (!p) fail_msg("%s", e.msg);
    return p;
}

static void observe(rtl_context_profiler *p, uint32_t c)
{
    rtl_err e;
    if (rtl_context_observe(p, c, &e) != 0) fail_msg("%s", e.msg);
}

static rtl_context report(rtl_context_profiler *p)
{
    rtl_context r;
    rtl_err e;
    if (rtl_profile_context(p, &r, &e) != 0) fail_msg("%s", e.msg);
    return r;
}

static int cmp_desc(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x < y) - (x > y);
}

/* Random streams (uniform, and dominated by a few classes) against a count
 * of the last `window` inputs kept here: every report equals it. */
static void matches_brute_force(void **state)
{
    (void)state;
    static const uint32_t windows[] = {1, 7, 50, 100, 333};
    for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
        uint32_t W = windows[w], C = 48;
        rtl_context_profiler *p = make(C, W, W > 20 ? 20 : W, 0);
        uint32_t *hist = calloc(100000, sizeof *hist);
        uint32_t cnt[48];
        for (uint32_t t = 0; t < 3000; t++) {
            /* phases: uniform, then 7 classes at ~80%, then 14 at ~95% */
            uint32_t c = t < 1000 ? urand(C) : t < 2000 ? (urand(100) < 80 ? urand(7) : urand(C))
                                                        : (urand(100) < 95 ? 20 + urand(14) : urand(C));
            hist[t] = c;
            observe(p, c);
            rtl_context r = report(p);
            uint32_t fill = t + 1 < W ? t + 1 : W;
            memset(cnt, 0, sizeof cnt);
            for (uint32_t k = t + 1 - fill; k <= t; k++) cnt[hist[k]]++;
            assert_int_equal(r.samples, fill);
            assert_int_equal(r.seen, t + 1);
            qsort(cnt, C, sizeof *cnt, cmp_desc);
            static const uint32_t ns[] = {7, 14, 21};
            static const double ps[] = {0.6, 0.7, 0.8, 0.9, 0.95};
            int best = -1;
            for (int i = 0; i < 3; i++) {
                uint32_t s = 0;
                for (uint32_t k = 0; k < ns[i]; k++) s += cnt[k];
                double share = (double)s / fill;
                assert_true(fabs(r.top_share[i] - share) < 1e-12);
                if (best < 0 && fill >= (W > 20 ? 20 : W) && share >= 0.6) best = i;
            }
            assert_int_equal(r.dominated, best >= 0);
            if (best >= 0) {
                assert_int_equal(r.n, ns[best]);
                double pr = 0;
                for (int j = 0; j < 5; j++)
                    if (r.top_share[best] >= ps[j]) pr = ps[j];
                assert_true(r.p == pr);
                /* the listed classes hold the reported share: the top share, or
                 * (a context kept while it holds, ties) less but at least p */
                assert_true(fabs(rtl_context_share(p, r.classes, r.nclasses) - r.share) < 1e-12);
                assert_true(r.share <= r.top_share[best] + 1e-12 && r.share >= r.p - 1e-12);
            } else {
                assert_int_equal(r.n, 21);
                assert_true(r.p == 0);
            }
            /* classes listed most frequent first, each with its count */
            for (uint32_t k = 0; k < r.nclasses; k++) {
                assert_int_equal(r.counts[k], (uint32_t)(rtl_context_share(p, &r.classes[k], 1) * fill + 0.5));
                if (!r.dominated) assert_true(r.counts[k] > 0); /* a kept context may list a class gone */
                if (k) assert_true(r.counts[k] <= r.counts[k - 1]);
            }
        }
        free(hist);
        rtl_context_profiler_free(p);
    }
}

/* The ring: the oldest input leaves a full window; reset empties it. */
static void window_slides(void **state)
{
    (void)state;
    rtl_context_params q = {.classes = 10, .window = 4, .n = {1, 2}, .p = {0.6, 1}};
    rtl_err e;
    rtl_context_profiler *p = rtl_context_profiler_new(&q, &e);
    assert_non_null(p);
    for (uint32_t c = 0; c < 4; c++) observe(p, c); /* 0 1 2 3 */
    rtl_context r = report(p);
    assert_false(r.dominated);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.nclasses, 2);
    assert_int_equal(r.classes[0], 0); /* ties: the lower index first */
    assert_int_equal(r.classes[1], 1);
    assert_true(r.share == 0.5 && r.top_share[0] == 0.25);
    observe(p, 5), observe(p, 5); /* 2 3 5 5 */
    r = report(p);
    assert_true(r.dominated && r.changed);
    assert_int_equal(r.n, 2);
    assert_true(r.p == 0.6 && r.share == 0.75);
    assert_int_equal(r.classes[0], 5);
    assert_int_equal(r.counts[0], 2);
    assert_int_equal(r.classes[1], 2);
    observe(p, 5), observe(p, 5); /* 5 5 5 5 */
    r = report(p);
    assert_true(r.dominated && r.changed && r.n == 1 && r.p == 1);
    assert_int_equal(r.nclasses, 1); /* only classes that occur are listed */
    r = report(p);
    assert_false(r.changed); /* the same report again */
    assert_true(rtl_context_share(p, (const uint32_t[]){5, 5, 9, 1000}, 4) == 1); /* repeats once, out of range nothing */
    rtl_context_reset(p);
    r = report(p);
    assert_false(r.dominated || r.changed);
    assert_int_equal(r.samples, 0);
    assert_int_equal(r.seen, 0);
    assert_true(rtl_context_share(p, (const uint32_t[]){5}, 1) == 0);
    assert_int_equal(rtl_context_observe(p, 10, &e), -1);
    assert_non_null(strstr(e.msg, "class 10 is out of range"));
    rtl_context_profiler_params(p, &q);
    assert_int_equal(q.min_samples, 4); /* default: a full window */
    rtl_context_profiler_free(p);
}

/* Never dominated before min_samples inputs (default: a full window). */
static void warm_up(void **state)
{
    (void)state;
    rtl_context_profiler *p = make(48, 100, 0, 0);
    for (int i = 0; i < 99; i++) {
        observe(p, 3);
        assert_false(report(p).dominated);
    }
    observe(p, 3);
    rtl_context r = report(p);
    assert_true(r.dominated && r.changed);
    assert_int_equal(r.n, 7);
    assert_true(r.p == 0.95);
    rtl_context_profiler_free(p);
}

/* A share that wavers around a threshold: without hysteresis the report
 * flips at every step; with it the context stays until its classes fall
 * below p minus the margin. A tie for the last place does not change the
 * reported classes. */
static void hysteresis_and_ties(void **state)
{
    (void)state;
    for (int h = 0; h < 2; h++) {
        rtl_context_params q = {.classes = 10, .window = 10, .n = {1}, .p = {0.6}, .hysteresis = h ? 0.15 : 0};
        rtl_context_profiler *p = rtl_context_profiler_new(&q, NULL);
        assert_non_null(p);
        /* class 0 holds 0.6; then each input alternately takes one 0 out
         * and puts one back: 0.5, 0.6, 0.5, ... */
        static const uint32_t seq[] = {0, 9, 0, 9, 0, 9, 0, 9, 0, 0};
        for (int i = 0; i < 10; i++) observe(p, seq[i]);
        assert_true(report(p).dominated);
        int flips = 0, was = 1;
        for (int i = 0; i < 9; i++) {
            observe(p, i % 2 ? 0 : 9);
            rtl_context r = report(p);
            assert_true(fabs(r.share - (i % 2 ? 0.6 : 0.5)) < 1e-12);
            flips += r.dominated != was;
            assert_int_equal(r.changed, r.dominated != was);
            was = r.dominated;
        }
        assert_int_equal(flips, h ? 0 : 9);
        rtl_context_profiler_free(p);
    }
    /* ties: {1, 2} reported; a third class reaching their count (the fresh
     * top two by index would be {0, 1}) does not change the classes */
    rtl_context_params q = {.classes = 10, .window = 10, .n = {2}, .p = {0.6}};
    rtl_context_profiler *p = rtl_context_profiler_new(&q, NULL);
    static const uint32_t seq[] = {9, 9, 1, 1, 1, 2, 2, 2, 0, 0};
    for (int i = 0; i < 10; i++) observe(p, seq[i]);
    rtl_context r = report(p);
    assert_true(r.dominated && r.classes[0] == 1 && r.classes[1] == 2);
    observe(p, 0); /* {0: 3, 1: 3, 2: 3} */
    r = report(p);
    assert_true(r.dominated && !r.changed && r.classes[0] == 1 && r.classes[1] == 2);
    observe(p, 0); /* drops a 9: {0: 4, 1: 3, 2: 3}; {1, 2} still hold 0.6 */
    r = report(p);
    assert_true(r.dominated && !r.changed && r.share == 0.6 && r.top_share[0] == 0.7);
    observe(p, 0); /* drops a 1: {1, 2} hold 0.5: {0, 2} now */
    r = report(p);
    assert_true(r.dominated && r.changed && r.classes[0] == 0 && r.classes[1] == 2);
    rtl_context_profiler_free(p);
    /* a strictly better (n, p) replaces the kept one */
    rtl_context_params q2 = {.classes = 10, .window = 10, .n = {2, 4}, .p = {0.6, 0.9}, .hysteresis = 0.2};
    p = rtl_context_profiler_new(&q2, NULL);
    static const uint32_t s2[] = {0, 1, 2, 3, 0, 1, 2, 3, 4, 5};
    for (int i = 0; i < 10; i++) observe(p, s2[i]);
    r = report(p);
    assert_true(r.dominated && r.n == 4 && r.p == 0.6);
    for (int i = 0; i < 8; i++) observe(p, i % 2);
    r = report(p);
    assert_true(r.dominated && r.changed && r.n == 2 && r.p == 0.6); /* 0.8: a smaller n */
    rtl_context_profiler_free(p);
}

static void bad_parameters(void **state)
{
    (void)state;
    rtl_err e;
    struct {
        rtl_context_params q;
        const char *msg;
    } bad[] = {
        {{.classes = 0}, "classes 0 is out of range"},
        {{.classes = RTL_CONTEXT_MAX_CLASSES + 1}, "out of range"},
        {{.classes = 5, .window = RTL_CONTEXT_MAX_WINDOW + 1}, "window"},
        {{.classes = 5, .window = 10, .min_samples = 11}, "exceeds the window"},
        {{.classes = 5, .n = {7, 7}}, "n values must increase"},
        {{.classes = 5, .n = {7, 0, 14}}, "n values must increase"},
        {{.classes = 5, .n = {RTL_CONTEXT_MAX_N + 1}}, "n 65 is out of range"},
        {{.classes = 5, .p = {0.9, 0.6}}, "p thresholds must increase"},
        {{.classes = 5, .p = {0.6, 1.5}}, "must lie in (0, 1]"},
        {{.classes = 5, .p = {-0.5, 0.6}}, "must lie in (0, 1]"},
        {{.classes = 5, .hysteresis = 0.6}, "hysteresis"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        assert_null(rtl_context_profiler_new(&bad[i].q, &e));
        if (!strstr(e.msg, bad[i].msg)) fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, bad[i].msg);
    }
    assert_null(rtl_context_profiler_new(NULL, &e));
    rtl_context_params q = {.classes = 5};
    rtl_context_profiler *p = rtl_context_profiler_new(&q, &e);
    rtl_context_profiler_params(p, &q);
    assert_int_equal(q.window, 100);
    assert_int_equal(q.n[0], 7);
    assert_int_equal(q.n[2], 21);
    assert_int_equal(q.n[3], 0);
    assert_true(q.p[0] == 0.6 && q.p[4] == 0.95);
    rtl_context_profiler_free(p);
    rtl_context_profiler_free(NULL);
}

#define SHA "0000000000000000000000000000000000000000000000000000000000000000"
#define F(id) "\"files\":[{\"role\":\"cfg\",\"path\":\"variants/" id "/variant.cfg\",\"size\":1,\"sha256\":\"" SHA "\"}],"
#define COST "\"cost\":{\"macs\":1000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1},"

/* The classes of a specialised variant: its task's labels but "other",
 * found among the generic task's labels by name. */
static void variant_classes(void **state)
{
    (void)state;
    const char *m =
        "{\"schema\":1,\"catalog\":\"t-ctx\",\"model\":\"t\",\"version\":1,"
        "\"tasks\":{\"ctx\":{\"classes\":3,\"labels\":[\"c\",\"other\",\"a\"]},"
        "\"bad\":{\"classes\":2,\"labels\":[\"zz\",\"other\"]}},"
        "\"variants\":["
        "{\"id\":\"spec\",\"technique\":\"specialised\",\"task\":\"ctx\",\"parent\":\"base\",\"depends_on\":[],"
        "\"description\":\"\"," F("spec") "\"accuracy\":{}," COST
        "\"technique_fields\":{\"context\":{\"n\":2,\"p\":0.7,\"other_class\":1},\"cascade\":{\"partner\":\"base\",\"gate\":0.8}}},"
        "{\"id\":\"nop\",\"technique\":\"specialised\",\"task\":\"bad\",\"parent\":\"base\",\"depends_on\":[],"
        "\"description\":\"\"," F("nop") "\"accuracy\":{}," COST
        "\"technique_fields\":{\"context\":{\"other_class\":1},\"cascade\":{\"partner\":\"base\"}}},"
        "{\"id\":\"base\",\"technique\":\"base\",\"task\":\"ctx\",\"parent\":null,\"depends_on\":[],"
        "\"description\":\"\"," F("base") "\"accuracy\":{}," COST "\"technique_fields\":{}}]}";
    rtl_err e;
    rtl_catalog *cat = rtl_catalog_parse(m, strlen(m), NULL, &e);
    if (!cat) fail_msg("%s", e.msg);
    static const char *const labels[] = {"a", "b", "c", "d"};
    uint32_t cls[4];
    size_t n = 0;
    double p = 0;
    if (rtl_variant_context(cat, rtl_catalog_find(cat, "spec"), labels, 4, cls, 4, &n, &p, &e) != 0)
        fail_msg("%s", e.msg);
    assert_int_equal(n, 2);
    assert_int_equal(cls[0], 2);
    assert_int_equal(cls[1], 0);
    assert_true(p == 0.7);
    assert_true(rtl_variant_cascade_gate(rtl_catalog_find(cat, "spec")) == 0.8);
    assert_true(rtl_variant_cascade_gate(rtl_catalog_find(cat, "nop")) == 0); /* none: MCDNN's cascade */
    assert_true(rtl_variant_cascade_gate(rtl_catalog_find(cat, "base")) == 0);
    assert_int_equal(rtl_variant_context(cat, rtl_catalog_find(cat, "spec"), labels, 4, cls, 1, &n, &p, &e), -1);
    assert_non_null(strstr(e.msg, "room for 1"));
    assert_int_equal(rtl_variant_context(cat, rtl_catalog_find(cat, "nop"), labels, 4, cls, 4, &n, &p, &e), -1);
    assert_non_null(strstr(e.msg, "'zz' is not a class of the generic task"));
    assert_int_equal(rtl_variant_context(cat, rtl_catalog_find(cat, "base"), labels, 4, cls, 4, &n, &p, &e), -1);
    assert_non_null(strstr(e.msg, "not specialised"));
    rtl_catalog_close(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_brute_force), cmocka_unit_test(window_slides),
        cmocka_unit_test(warm_up),             cmocka_unit_test(hysteresis_and_ties),
        cmocka_unit_test(bad_parameters),      cmocka_unit_test(variant_classes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
