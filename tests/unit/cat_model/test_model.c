/* Unit tests of the catalog's model code: winnowing, the roofline estimate,
 * deterministic JSON output, key files and signing, the variants table and
 * catalog pack's run. */
#include "testutil_impl.h"
#include "cat.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A variant measured on 1,000,000 images: intervals about +-0.001, so these
 * tests decide by the costs and clear accuracy differences; VN gives n. */
#define VN(i, t, m, b, a, n) {.id = i, .task = t, .macs = m, .weight_bytes = b, .top1 = a, .images = n}
#define V(id, task, macs, bytes, top1) VN(id, task, macs, bytes, top1, 1000000)
#define CAP(m, b, a, n) {.macs = m, .weight_bytes = b, .top1 = a, .images = n}

static void wilson_known_values(void **state)
{
    (void)state;
    double lo, hi;
    trn_wilson(50, 100, &lo, &hi); /* the textbook example: 0.4038 to 0.5962 */
    assert_true(fabs(lo - 0.403832) < 1e-6 && fabs(hi - 0.596168) < 1e-6);
    trn_wilson(0, 10, &lo, &hi);   /* no success: [0, 0.2775] */
    assert_true(lo == 0 && fabs(hi - 0.277533) < 1e-6);
    trn_wilson(10, 10, &lo, &hi);
    assert_true(fabs(lo - 0.722467) < 1e-6 && fabs(hi - 1) < 1e-12);
    trn_wilson(1234, 1440, &lo, &hi); /* 85.69% on the default test split: +-1.8 points */
    assert_true(fabs(lo - 0.837910) < 1e-6 && fabs(hi - 0.874080) < 1e-6);
    trn_wilson(3, 0, &lo, &hi);
    assert_true(lo == 0 && hi == 1);
}

/* The case the issue names: svd-8x8x (68.1%) beside svd-8x8x-ft (91.7%) at
 * identical costs; the old rule (strictly fewer of both) kept both. */
static void winnow_equal_costs_clearly_worse_is_dropped(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        VN("svd-8x8x", "t", 12123392, 372364, 0.681, 1440),
        VN("svd-8x8x-ft", "t", 12123392, 372364, 0.917, 1440),
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 2, &e), 1);
    assert_int_equal(v[0].dropped, 1);
    assert_int_equal(v[0].dominated_by, 1);
    assert_int_equal(v[1].dropped, 0);
    assert_true(v[0].hi < v[1].lo);
}

/* A head (MCDNN's task head: trunk + a small classifier) falls only to a
 * head on its own trunk: an identity head on a texture-first trunk stays
 * beside a cheaper identity network that would drop any other variant. */
static void winnow_heads_fall_only_to_heads_on_their_trunk(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        VN("rw-s1h1", "identity", 2800000, 200000, 0.932, 1440),
        VN("head-identity", "identity", 12195840, 662100, 0.926, 1440),
        VN("head-identity-b", "identity", 12195840, 662100, 0.700, 1440),
        VN("head-identity-c", "identity", 12195840, 662100, 0.700, 1440),
        VN("base", "identity", 12195840, 662100, 0.937, 1440),
    };
    v[1].trunk = "tf";
    v[2].trunk = "tf";
    v[3].trunk = "other";
    trn_err e;
    assert_int_equal(cat_winnow(v, 5, &e), 2);
    assert_int_equal(v[1].dropped, 0); /* rw-s1h1 would drop a plain variant here */
    assert_int_equal(v[2].dropped, 1); /* the better head on the same trunk drops it */
    assert_string_equal(v[v[2].dominated_by].id, "head-identity");
    assert_int_equal(v[3].dropped, 0); /* a lone head on its trunk stays */
    assert_int_equal(v[4].dropped, 1); /* the base: dropped by rw-s1h1, as before */
    assert_string_equal(v[v[4].dominated_by].id, "rw-s1h1");
}

/* Equal costs, accuracies inside each other's noise: neither dominates. */
static void winnow_equal_costs_within_noise_keeps_both(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        VN("a", "t", 1000, 1000, 0.850, 1440),
        VN("b", "t", 1000, 1000, 0.862, 1440), /* +1.2 points: intervals overlap */
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 2, &e), 0);
    assert_int_equal(v[0].dominated_by, -1);
    assert_int_equal(v[1].dominated_by, -1);
}

/* Cheaper at an accuracy not clearly worse dominates; cheaper but clearly
 * worse does not; costlier never does, however accurate. */
static void winnow_cheaper_not_clearly_worse(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        VN("big", "t", 4000, 4000, 0.870, 1440),
        VN("small-noise", "t", 1000, 4000, 0.860, 1440), /* fewer MACs, -1 point: inside the noise */
        VN("tiny-worse", "t", 500, 500, 0.700, 1440),    /* much cheaper, clearly worse */
        VN("huge-better", "t", 9000, 9000, 0.990, 1440), /* clearly better, costlier: not dominated */
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 4, &e), 1);
    assert_int_equal(v[0].dropped, 1);
    assert_int_equal(v[0].dominated_by, 1);
    assert_int_equal(v[1].dropped, 0);
    assert_int_equal(v[2].dropped, 0);
    assert_int_equal(v[3].dropped, 0);
}

/* The rule (issue 14 item 3), clause by clause: "B dominates A when
 * B has no more MACs and no more weight bytes than A and either clearly
 * better accuracy (intervals apart) or fewer of at least one cost at
 * accuracy that is not clearly worse". */
static void winnow_rule_clause_by_clause(void **state)
{
    (void)state;
    /* fewer weight bytes alone (equal MACs) is enough, inside the noise */
    struct cat_wv a[] = {
        VN("a", "t", 1000, 4000, 0.850, 1440),
        VN("b-fewer-bytes", "t", 1000, 3000, 0.840, 1440),
    };
    trn_err e;
    assert_int_equal(cat_winnow(a, 2, &e), 1);
    assert_int_equal(a[0].dominated_by, 1);
    assert_true(a[1].hi >= a[0].lo); /* the premise: not clearly worse */
    /* fewer MACs but more bytes: no dominance either way, however accurate */
    struct cat_wv b[] = {
        VN("a", "t", 1000, 1000, 0.700, 1440),
        VN("b-trade", "t", 500, 2000, 0.950, 1440),
    };
    assert_int_equal(cat_winnow(b, 2, &e), 0);
    /* equal costs: only intervals apart decide, in either direction */
    struct cat_wv c[] = {
        VN("base", "t", 12195840, 662080, 0.829, 1440),
        VN("descendant", "t", 12195840, 662080, 0.880, 1440), /* +5.1 points: apart */
    };
    assert_int_equal(cat_winnow(c, 2, &e), 1);
    assert_int_equal(c[0].dominated_by, 1);
    assert_true(c[0].hi < c[1].lo);
    /* fewer of both but clearly worse: no dominance */
    struct cat_wv d[] = {
        VN("a", "t", 1000, 1000, 0.850, 1440),
        VN("b-cheap-worse", "t", 900, 900, 0.800, 1440),
    };
    assert_int_equal(cat_winnow(d, 2, &e), 0);
    assert_true(d[1].hi < d[0].lo);
}

/* Not transitive: a dominates b, b dominates c, a does not dominate c
 * (a is clearly worse than c). Decided against kept variants only: b is
 * dropped, so nothing kept dominates c and c stays. */
static void winnow_chains_in_the_noise_stop_at_kept_variants(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        VN("c", "t", 3000, 3000, 0.880, 1440),
        VN("b", "t", 2000, 2000, 0.860, 1440),
        VN("a", "t", 1000, 1000, 0.840, 1440),
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 3, &e), 1);
    assert_int_equal(v[1].dropped, 1);
    assert_int_equal(v[1].dominated_by, 2);
    assert_int_equal(v[0].dropped, 0);
    assert_int_equal(v[2].dropped, 0);
    assert_true(v[2].hi < v[0].lo); /* the premise: a is clearly worse than c */
}

static void winnow_is_strict(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        V("a", "t", 100, 100, 0.8),
        V("more-bytes", "t", 100, 200, 0.9),  /* clearly better: a does not dominate it */
        V("same-costs", "t", 100, 100, 0.8),  /* equal costs, equal top-1: neither dominates */
        V("fewer-bytes", "t", 200, 50, 0.5),  /* fewer bytes than a: not dominated by a */
        V("other-task", "u", 900, 900, 0.1),  /* nothing else in task u */
        V("no-accuracy", "t", 900, 900, -1),
        V("worse", "t", 300, 300, 0.6),       /* dominated by a (and by more-bytes) */
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 7, &e), 1);
    for (int i = 0; i < 6; i++) {
        if (v[i].dropped) fail_msg("%s was dropped", v[i].id);
        assert_int_equal(v[i].dominated_by, -1);
    }
    assert_int_equal(v[6].dropped, 1);
    assert_int_equal(v[6].dominated_by, 1); /* the best kept dominator: highest top-1 */
}

static void winnow_records_an_undominated_dominator(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        V("mid", "t", 200, 200, 0.7),  /* dominated by best */
        V("low", "t", 300, 300, 0.6),  /* dominated by mid and by best */
        V("best", "t", 100, 100, 0.9),
        V("also", "t", 150, 150, 0.8), /* dominated by best */
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 4, &e), 3);
    assert_int_equal(v[1].dominated_by, 2); /* best, not mid (mid is dominated itself) */
    assert_int_equal(v[0].dominated_by, 2);
}

static void winnow_keeps_dependencies_transitively(void **state)
{
    (void)state;
    const char *const top_deps[] = {"mid"}, *const mid_deps[] = {"low"}, *const bad_deps[] = {"ghost"};
    struct cat_wv v[] = {
        V("best", "t", 100, 100, 0.9),
        V("mid", "t", 200, 200, 0.7),
        V("low", "t", 300, 300, 0.6),
        V("top", "u", 10, 10, 0.5),
    };
    v[3].deps = top_deps, v[3].ndeps = 1;
    v[1].deps = mid_deps, v[1].ndeps = 1;
    trn_err e;
    assert_int_equal(cat_winnow(v, 4, &e), 0);
    assert_int_equal(v[1].needed_by, 3);
    assert_int_equal(v[2].needed_by, 1);
    assert_int_equal(v[1].dominated_by, 0); /* still recorded as dominated */
    v[3].deps = bad_deps;
    assert_int_equal(cat_winnow(v, 4, &e), -1);
    assert_non_null(strstr(e.msg, "ghost"));
}

/* A multi-capacity (nested) variant is one unit (issue 15): its full
 * capacity dominated by the base does not drop it while a smaller capacity
 * is not dominated; its capacities drop no independent variant; it is
 * dropped only when every capacity is dominated by a kept plain variant. */
static void winnow_nested_capacities_are_one_unit(void **state)
{
    (void)state;
    /* The default catalog's shape: the full capacity at the base's costs but
     * clearly worse; the smallest capacity cheaper than every other variant. */
    struct cat_wcap caps[] = {
        CAP(1000, 500, 0.60, 1440), CAP(4000, 2000, 0.70, 1440), CAP(12000, 6600, 0.75, 1440),
    };
    struct cat_wv v[] = {
        VN("base", "t", 12000, 6600, 0.83, 1440),
        VN("nested", "t", 12000, 6600, 0.75, 1440),
        VN("mid", "t", 5000, 2500, 0.69, 1440),  /* capacity 2 is cheaper and not clearly worse */
    };
    v[1].caps = caps, v[1].ncaps = 3;
    trn_err e;
    assert_int_equal(cat_winnow(v, 3, &e), 0);
    assert_int_equal(v[1].dropped, 0);
    assert_int_equal(v[1].dominated_by, -1);
    assert_int_equal(v[2].dropped, 0);            /* capacities dominate nothing */
    assert_int_equal(v[2].dominated_by, -1);
    /* Without its capacities the same figures drop it (the old behaviour). */
    v[1].caps = NULL, v[1].ncaps = 0;
    assert_int_equal(cat_winnow(v, 3, &e), 1);
    assert_int_equal(v[1].dropped, 1);
    assert_int_equal(v[1].dominated_by, 0);
    /* Every capacity dominated by a kept plain variant: dropped as a whole. */
    struct cat_wcap poor[] = {CAP(6000, 3000, 0.40, 1440), CAP(12000, 6600, 0.45, 1440)};
    struct cat_wv w[] = {
        VN("base", "t", 12000, 6600, 0.83, 1440),
        VN("small", "t", 5000, 2500, 0.70, 1440),
        VN("nested", "t", 12000, 6600, 0.45, 1440),
    };
    w[2].caps = poor, w[2].ncaps = 2;
    assert_int_equal(cat_winnow(w, 3, &e), 1);
    assert_int_equal(w[2].dropped, 1);
    assert_true(w[2].dominated_by == 0 || w[2].dominated_by == 1);
    assert_int_equal(w[0].dropped, 0);
    assert_int_equal(w[1].dropped, 0);
    /* A capacity without accuracy keeps the unit (nothing can dominate it). */
    struct cat_wcap unmeasured[] = {CAP(6000, 3000, -1, 0), CAP(12000, 6600, 0.45, 1440)};
    w[2].caps = unmeasured;
    assert_int_equal(cat_winnow(w, 3, &e), 0);
    assert_int_equal(w[2].dropped, 0);
}

/* McNemar's exact two-sided p-values; the expected values were computed
 * independently with exact integer arithmetic (Python: 2 * sum(comb(n, i)
 * for i <= min(b, c)) / 2**n, capped at 1). */
static void mcnemar_known_values(void **state)
{
    (void)state;
    static const struct { uint64_t b, c; double p; } t[] = {
        {10, 2, 0.03857421875},   {2, 10, 0.03857421875}, {0, 0, 1},
        {5, 5, 1},                {0, 7, 0.015625},       {1, 0, 1},
        {60, 40, 0.05688793364098079},                    {100, 60, 0.001953728034064342},
        {66, 25, 2.0283289208145566e-05},                 {600, 500, 0.0028195449914364275},
        {5000, 4700, 0.0023966033625776252},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        double p = trn_mcnemar_p(t[i].b, t[i].c);
        if (fabs(p - t[i].p) > 1e-9 * fmax(1, t[i].p * 1e3) || fabs(p - t[i].p) > 1e-6 * t[i].p)
            fail_msg("b=%llu c=%llu: p %.12g, expected %.12g", (unsigned long long)t[i].b,
                     (unsigned long long)t[i].c, p, t[i].p);
    }
}

/* Per-image correctness of two models on n images: both right on the first
 * `both`, then only a right on `only_a`, then only b on `only_b`, the rest
 * both wrong. */
static void paired(unsigned char *a, unsigned char *b, size_t n, size_t both, size_t only_a, size_t only_b)
{
    for (size_t i = 0; i < n; i++) {
        a[i] = i < both + only_a;
        b[i] = i < both || (i >= both + only_a && i < both + only_a + only_b);
    }
}

/* The synthetic catalog's case (issue 34): flexdnn 91.8% (1322 of 1440)
 * beside smcd-8x 89.0% (1282 of 1440) at fewer MACs and bytes. Their
 * Wilson intervals touch, so the interval rule drops flexdnn as "not
 * clearly worse"; on the same images flexdnn alone answers 50 that smcd-8x
 * misses against 10 the other way (p = 1.6e-7): clearly better, kept, with
 * smcd-8x recorded as its challenger and the paired figures. */
static void winnow_paired_flexdnn_vs_smcd8x(void **state)
{
    (void)state;
    static unsigned char cf[1440], cs[1440];
    paired(cf, cs, 1440, 1272, 50, 10);
    struct cat_wv v[] = {
        VN("flexdnn", "identity", 2640000, 340000, 1322.0 / 1440, 1440),
        VN("smcd-8x", "identity", 1400000, 160000, 1282.0 / 1440, 1440),
    };
    trn_err e;
    /* without per-image data: the intervals decide (they overlap) */
    assert_int_equal(cat_winnow(v, 2, &e), 1);
    assert_int_equal(v[0].dropped, 1);
    assert_true(v[1].hi >= v[0].lo);
    assert_int_equal(v[0].cmp.paired, 0);
    v[0].img = (struct cat_wimg){cf, 1440, 42};
    v[1].img = (struct cat_wimg){cs, 1440, 42};
    assert_int_equal(cat_winnow(v, 2, &e), 0);
    assert_int_equal(v[0].dropped, 0);
    assert_int_equal(v[0].dominated_by, -1);
    assert_int_equal(v[0].challenger, 1);
    const struct cat_wcmp *c = &v[0].cmp;
    assert_int_equal(c->paired, 1);
    assert_int_equal(c->images, 1440);
    assert_int_equal(c->only_a, 10); /* a: the challenger, smcd-8x */
    assert_int_equal(c->only_b, 50);
    assert_true(fabs(c->diff - (-40.0 / 1440)) < 1e-12);
    assert_true(c->p < 0.05 && fabs(c->p - trn_mcnemar_p(10, 50)) < 1e-15);
    assert_true(c->b_better && !c->a_better);
    /* another image list (or count): not paired, the intervals decide */
    v[1].img.list = 43;
    assert_int_equal(cat_winnow(v, 2, &e), 1);
    assert_int_equal(v[0].cmp.paired, 0);
}

/* The paired test decides both ways: at equal costs a 1.2-point difference
 * inside overlapping intervals is clearly worse when the discordant pairs
 * say so (20 against 3: p = 0.0003); a cheaper variant 1 point down with
 * 100 against 114 discordant images (p = 0.37) is not clearly worse and
 * drops the dearer one. */
static void winnow_paired_decides_where_intervals_cannot(void **state)
{
    (void)state;
    static unsigned char ca[1440], cb[1440];
    paired(cb, ca, 1440, 1221, 20, 3); /* b: 1241, a: 1224 */
    struct cat_wv v[] = {
        VN("a", "t", 1000, 1000, 1224.0 / 1440, 1440),
        VN("b", "t", 1000, 1000, 1241.0 / 1440, 1440),
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 2, &e), 0); /* intervals overlap: both kept */
    v[0].img = (struct cat_wimg){ca, 1440, 7};
    v[1].img = (struct cat_wimg){cb, 1440, 7};
    assert_int_equal(cat_winnow(v, 2, &e), 1);
    assert_int_equal(v[0].dropped, 1);
    assert_int_equal(v[0].dominated_by, 1);
    assert_true(v[0].cmp.paired && v[0].cmp.p < 0.001 && v[0].cmp.only_a == 20 && v[0].cmp.only_b == 3);
    static unsigned char cbig[1440], csmall[1440];
    paired(cbig, csmall, 1440, 1100, 114, 100);
    struct cat_wv w[] = {
        VN("big", "t", 4000, 4000, 1214.0 / 1440, 1440),
        VN("small", "t", 1000, 4000, 1200.0 / 1440, 1440),
    };
    w[0].img = (struct cat_wimg){cbig, 1440, 7};
    w[1].img = (struct cat_wimg){csmall, 1440, 7};
    assert_int_equal(cat_winnow(w, 2, &e), 1);
    assert_int_equal(w[0].dominated_by, 1);
    assert_true(w[0].cmp.paired && w[0].cmp.p > 0.05 && !w[0].cmp.a_better && !w[0].cmp.b_better);
}

/* catalog pack --keep: a dominated variant kept by request stays, its
 * dominator still recorded; nothing else changes. */
static void winnow_kept_by_request(void **state)
{
    (void)state;
    struct cat_wv v[] = {
        V("big", "t", 4000, 4000, 0.70),
        V("small", "t", 1000, 1000, 0.90),
        V("mid", "t", 2000, 2000, 0.60),
    };
    trn_err e;
    assert_int_equal(cat_winnow(v, 3, &e), 2);
    v[0].keep = 1;
    assert_int_equal(cat_winnow(v, 3, &e), 1);
    assert_int_equal(v[0].dropped, 0);
    assert_int_equal(v[0].dominated_by, 1);
    assert_int_equal(v[2].dropped, 1);
}

/* A capacity is a point on the curve: it leaves the Pareto front only
 * when a kept plain variant at no more cost is clearly better (paired);
 * a cheaper variant that is merely not clearly worse leaves it on the front
 * (a plain variant at those figures would be dropped). The comparison of
 * each capacity is recorded. */
static void winnow_capacities_on_the_front(void **state)
{
    (void)state;
    static unsigned char cc[1440], cs[1440], cb[1440], cn[1440];
    paired(cs, cc, 1440, 1150, 40, 30);  /* small 1190 vs capacity 1 1180: p = 0.28 */
    paired(cb, cn, 1440, 1200, 100, 10); /* base 1300 vs capacity 2 1210: clearly better */
    struct cat_wcap caps[] = {CAP(6000, 3000, 1180.0 / 1440, 1440), CAP(12000, 6600, 1210.0 / 1440, 1440)};
    caps[0].img = (struct cat_wimg){cc, 1440, 9};
    caps[1].img = (struct cat_wimg){cn, 1440, 9};
    struct cat_wv v[] = {
        VN("base", "t", 12000, 6600, 1300.0 / 1440, 1440),
        VN("small", "t", 5000, 2500, 1190.0 / 1440, 1440),
        VN("nested", "t", 12000, 6600, 1210.0 / 1440, 1440),
    };
    v[0].img = (struct cat_wimg){cb, 1440, 9};
    v[1].img = (struct cat_wimg){cs, 1440, 9};
    v[2].caps = caps, v[2].ncaps = 2;
    trn_err e;
    assert_int_equal(cat_winnow(v, 3, &e), 0);
    assert_int_equal(v[2].dropped, 0);
    assert_int_equal(caps[0].dominated_by, -1);
    assert_int_equal(caps[0].challenger, 1);
    assert_true(caps[0].cmp.paired && caps[0].cmp.only_a == 40 && caps[0].cmp.only_b == 30 && caps[0].cmp.p > 0.05);
    assert_int_equal(caps[1].dominated_by, 0);
    assert_true(caps[1].cmp.paired && caps[1].cmp.a_better);
    /* the same capacity as a plain variant: dropped by small */
    struct cat_wv w[] = {
        VN("small", "t", 5000, 2500, 1190.0 / 1440, 1440),
        VN("plain", "t", 6000, 3000, 1180.0 / 1440, 1440),
    };
    w[0].img = v[1].img;
    w[1].img = caps[0].img;
    assert_int_equal(cat_winnow(w, 2, &e), 1);
    assert_int_equal(w[1].dominated_by, 0);
    /* kept by request: a unit every capacity of which is off the front
     * (small now clearly better than everything: the base goes too) */
    v[1].top1 = 0.99, v[1].images = 0, v[1].img.correct = NULL;
    assert_int_equal(cat_winnow(v, 3, &e), 2);
    assert_int_equal(v[2].dropped, 1);
    v[2].keep = 1;
    assert_int_equal(cat_winnow(v, 3, &e), 1);
    assert_int_equal(v[2].dropped, 0);
    assert_int_equal(v[2].dominated_by, 1);
}

static double field(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k)->valuedouble;
}

static void roofline(void **state)
{
    (void)state;
    /* 1 GFLOPS, 1 GB/s, 2 W: 1e9 MACs = 2e9 FLOP = 2 s; bytes 4e8 + 2 x 1e8 */
    cJSON *target = cJSON_Parse("{\"peak_gflops\":1,\"memory_bandwidth_gbps\":1,\"power_w\":2}");
    cJSON *cost = cJSON_Parse("{\"macs\":1e9,\"weight_bytes\":4e8,\"peak_activation_bytes\":1,"
                              "\"layers\":[{\"output_bytes\":6e7},{\"output_bytes\":4e7}]}");
    trn_err e;
    cJSON *est = cat_estimate(cost, target, &e);
    assert_non_null(est);
    assert_true(fabs(field(est, "ms") - 2000) < 1e-9);
    assert_true(fabs(field(est, "mj") - 4000) < 1e-9);
    assert_true(fabs(field(est, "mbytes") - 600) < 1e-9);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(est, "bound")->valuestring, "compute");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(est, "source")->valuestring, "estimate");
    cJSON_Delete(est);
    cJSON_Delete(cost);
    /* few MACs, many bytes: memory bound; no layer table: 2 x peak activations */
    cost = cJSON_Parse("{\"macs\":1,\"weight_bytes\":1e9,\"peak_activation_bytes\":5e8,\"layers\":[]}");
    est = cat_estimate(cost, target, &e);
    assert_true(fabs(field(est, "ms") - 2000) < 1e-9);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(est, "bound")->valuestring, "memory");
    cJSON_Delete(est);
    cJSON_Delete(cost);
    cost = cJSON_Parse("{\"macs\":1}");
    assert_null(cat_estimate(cost, target, &e));
    cJSON_Delete(cost);
    cJSON_Delete(target);
    /* the built-in profiles load, one per Jetson, and each has its sources */
    cJSON *all = cat_targets_load(NULL, &e);
    assert_non_null(all);
    assert_int_equal(cJSON_GetArraySize(all), 4);
    const cJSON *t;
    cJSON_ArrayForEach(t, all) assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "sources")) > 0);
    cJSON_Delete(all);
}

static void json_output_is_canonical(void **state)
{
    (void)state;
    cJSON *a = cJSON_Parse("{\"b\":1,\"a\":{\"z\":[3,{\"y\":1,\"x\":2}],\"c\":null}}");
    cJSON *b = cJSON_Parse("{\"a\":{\"c\":null,\"z\":[3,{\"x\":2,\"y\":1}]},\"b\":1}");
    char *sa = cat_json_print(a), *sb = cat_json_print(b);
    assert_string_equal(sa, sb);
    assert_true(strstr(sa, "\"a\"") < strstr(sa, "\"b\""));
    assert_true(strstr(sa, "\"x\"") < strstr(sa, "\"y\""));
    assert_true(strstr(sa, "[3,") != NULL); /* arrays keep their order */
    assert_int_equal(sa[strlen(sa) - 1], '\n');
    free(sa);
    free(sb);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

static void keys_and_signatures(void **state)
{
    (void)state;
    char pub[512], sec[512], epub[512], esec[512], file[512], sig[512];
    const char *d = test_tmpdir();
    snprintf(pub, sizeof pub, "%s/k.pub", d);
    snprintf(sec, sizeof sec, "%s/k.key", d);
    snprintf(epub, sizeof epub, "%s/e.pub", d);
    snprintf(esec, sizeof esec, "%s/e.key", d);
    snprintf(file, sizeof file, "%s/data", d);
    snprintf(sig, sizeof sig, "%s/data.minisig", d);
    trn_err e;
    char id[17];
    assert_int_equal(cat_keygen(pub, sec, NULL, CAT_KDF_NONE, 1, 0, id, &e), 0);
    assert_int_equal(cat_keygen(pub, sec, NULL, CAT_KDF_NONE, 1, 0, id, &e), -1); /* no overwrite */
    assert_non_null(strstr(e.msg, "--force"));
    struct stat st;
    assert_int_equal(stat(sec, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(cat_keygen(epub, esec, "pw", CAT_KDF_INTERACTIVE, 0, 0, NULL, &e), 0);
    assert_int_equal(cat_keygen(epub, esec, NULL, CAT_KDF_INTERACTIVE, 0, 1, NULL, &e), -1);

    cat_seckey *k = cat_seckey_load(sec, NULL, &e);
    assert_non_null(k);
    assert_int_equal(cat_seckey_is_development(k), 1);
    assert_null(cat_seckey_load(esec, NULL, &e));
    assert_non_null(strstr(e.msg, "encrypted"));
    assert_null(cat_seckey_load(esec, "wrong", &e));
    assert_non_null(strstr(e.msg, "wrong passphrase"));
    cat_seckey *ek = cat_seckey_load(esec, "pw", &e);
    assert_non_null(ek);
    assert_int_equal(cat_seckey_is_development(ek), 0);

    assert_int_equal(trn_write_file_atomic(file, "some catalog", 12, &e), 0);
    assert_int_equal(cat_sign_file(ek, file, "trusted words", "signature from minisign secret key", sig, &e), 0);
    rtl_pubkey keys[2];
    rtl_err re;
    assert_int_equal(rtl_pubkey_load(pub, &keys[0], &re), 0);
    assert_int_equal(rtl_pubkey_load(epub, &keys[1], &re), 0);
    rtl_pubkey derived;
    cat_seckey_pubkey(ek, &derived);
    assert_memory_equal(&derived, &keys[1], sizeof derived);
    rtl_signature s;
    size_t used = 9;
    assert_int_equal(rtl_sig_load(sig, &s, &re), 0);
    assert_int_equal(rtl_sig_verify_file(&s, keys, 2, file, &used, &re), 0);
    assert_int_equal(used, 1);
    assert_int_equal(rtl_sig_verify_file(&s, keys, 1, file, NULL, &re), -1);
    assert_non_null(strstr(re.msg, "not a trusted key"));
    /* signing twice gives the same bytes (Ed25519 is deterministic) */
    char *one, *two;
    size_t n1, n2;
    assert_int_equal(trn_read_file(sig, 0, &one, &n1, &e), 0);
    assert_int_equal(cat_sign_file(ek, file, "trusted words", "signature from minisign secret key", sig, &e), 0);
    assert_int_equal(trn_read_file(sig, 0, &two, &n2, &e), 0);
    assert_true(n1 == n2 && memcmp(one, two, n1) == 0);
    free(one);
    free(two);
    assert_int_equal(cat_sign_file(ek, file, "two\nlines", "x", sig, &e), -1);
    cat_seckey_free(k);
    cat_seckey_free(ek);

    /* a damaged key file is refused with a reason */
    char *text;
    size_t len;
    assert_int_equal(trn_read_file(sec, 0, &text, &len, &e), 0);
    char *b64 = strchr(text, '\n') + 1;
    b64[100] = b64[100] == 'A' ? 'B' : 'A'; /* inside the Ed25519 seed */
    assert_int_equal(trn_write_file_atomic(sec, text, len, &e), 0);
    free(text);
    assert_null(cat_seckey_load(sec, NULL, &e));
    assert_non_null(strstr(e.msg, "damaged"));
}

static void passphrase_sources(void **state)
{
    (void)state;
    char path[512], out[64];
    trn_err e;
    snprintf(path, sizeof path, "%s/pw", test_tmpdir());
    assert_int_equal(trn_write_file_atomic(path, "s3cret\nignored\n", 15, &e), 0);
    assert_int_equal(cat_passphrase(path, NULL, out, sizeof out, &e), 0);
    assert_string_equal(out, "s3cret");
    setenv("CAT_TEST_PW", "from-env", 1);
    assert_int_equal(cat_passphrase(NULL, "CAT_TEST_PW", out, sizeof out, &e), 0);
    assert_string_equal(out, "from-env");
    assert_int_equal(cat_passphrase(NULL, "CAT_TEST_UNSET_PW", out, sizeof out, &e), -1);
    assert_int_equal(cat_passphrase(path, "CAT_TEST_PW", out, sizeof out, &e), -1);
    assert_int_equal(trn_write_file_atomic(path, "\n", 1, &e), 0);
    assert_int_equal(cat_passphrase(path, NULL, out, sizeof out, &e), -1);
}

static void roofline_cpu_beside_gpu(void **state)
{
    (void)state;
    /* GPU 10 GFLOPS, CPU 1 GFLOPS, both 1 GB/s: 1e9 MACs = 2e9 FLOP -> 200 ms on the
     * GPU (compute), 2000 ms on the CPU; 2e8 bytes -> 200 ms of memory on both */
    cJSON *target = cJSON_Parse("{\"peak_gflops\":10,\"memory_bandwidth_gbps\":1,\"power_w\":2,"
                                "\"compute_unit\":\"GPU: test\",\"cpu\":{\"compute_unit\":\"CPU: test\","
                                "\"peak_gflops\":1,\"memory_bandwidth_gbps\":1,\"power_w\":3}}");
    cJSON *cost = cJSON_Parse("{\"macs\":1e9,\"weight_bytes\":1e8,\"peak_activation_bytes\":5e7,\"layers\":[]}");
    trn_err e;
    cJSON *est = cat_estimate(cost, target, &e);
    assert_non_null(est);
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(est, "cpu");
    assert_non_null(cpu);
    assert_true(fabs(field(est, "ms") - 200) < 1e-9);
    assert_true(fabs(field(cpu, "ms") - 2000) < 1e-9);
    assert_true(fabs(field(cpu, "mj") - 6000) < 1e-9);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(est, "compute_unit")->valuestring, "GPU: test");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cpu, "compute_unit")->valuestring, "CPU: test");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cpu, "bound")->valuestring, "compute");
    cJSON_Delete(est);
    /* a cpu object without its figures is an error, not a silent zero */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItemCaseSensitive(target, "cpu"), "peak_gflops");
    assert_null(cat_estimate(cost, target, &e));
    assert_non_null(strstr(e.msg, "cpu"));
    cJSON_Delete(cost);
    cJSON_Delete(target);
    /* every built-in profile names its GPU and models its CPU, slower than the GPU */
    cJSON *all = cat_targets_load(NULL, &e), *t;
    assert_non_null(all);
    cJSON_ArrayForEach(t, all) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(t, "cpu");
        assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "compute_unit")));
        assert_non_null(c);
        assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "compute_unit")), "CPU"));
        assert_true(field(c, "peak_gflops") > 0 && field(c, "peak_gflops") < field(t, "peak_gflops"));
    }
    cJSON_Delete(all);
}

static int overlap(const struct cat_box *a, const struct cat_box *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

static void labels_never_overlap(void **state)
{
    (void)state;
    /* 30 points crowded into a 40 x 20 px patch, then 10 spread out */
    struct cat_label l[40];
    char names[40][24];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], i < 30 ? "crowded-variant-%d" : "alone-%d", i);
        l[i] = (struct cat_label){.text = names[i]};
        l[i].px = i < 30 ? 300 + (i * 7) % 40 : 100 + 50 * (i - 30);
        l[i].py = i < 30 ? 200 + (i * 3) % 20 : (i % 2 ? 100 : 380);
    }
    struct cat_box area = {80, 50, 620, 440};
    size_t omitted = cat_place_labels(l, 40, area);
    size_t placed = 0;
    for (int i = 0; i < 40; i++) {
        if (!l[i].placed) continue;
        placed++;
        struct cat_box b = cat_label_box(l[i].x, l[i].y, l[i].text);
        assert_true(b.x0 == l[i].box.x0 && b.y1 == l[i].box.y1);
        assert_true(b.x0 >= area.x0 && b.x1 <= area.x1 && b.y0 >= area.y0 && b.y1 <= area.y1);
        for (int j = 0; j < i; j++)
            if (l[j].placed && overlap(&l[i].box, &l[j].box))
                fail_msg("labels %s and %s overlap", l[i].text, l[j].text);
    }
    assert_int_equal(placed + omitted, 40);
    int lone = 0;
    for (int i = 30; i < 40; i++) lone += l[i].placed;
    assert_true(lone >= 8); /* the crowd's leaders may take one or two lone spots */
    assert_true(placed >= 30);                               /* and most crowded ones */
    /* a label next to its point: the first choice, right of it, no leader */
    struct cat_label one = {.text = "x", .px = 200, .py = 200};
    assert_int_equal(cat_place_labels(&one, 1, area), 0);
    assert_true(one.placed && !one.leader && one.x == 207 && one.y == 195);
}

/* DIR/ID/variant.json with text (the folder made). */
static void put_variant(const char *dir, const char *id, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, id);
    mkdir(dir, 0755);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/%s/variant.json", dir, id);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void count_bad(void *ctx, const trn_err *e)
{
    (*(int *)ctx)++;
    assert_non_null(strstr(e->msg, "zz/variant.json"));
}

/* The variants table: base first then by id (folders starting with '.'
 * and unreadable variant.json left out, the latter told), connected-layer
 * parameters summed, reductions and the change of top-1 against the base
 * in the JSON, null where a row has none; without a base no reductions;
 * a folder without a variant is refused, naming it. */
static void variants_table(void **state)
{
    (void)state;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/variants", test_tmpdir());
    put_variant(dir, "svd-b", "{\"id\":\"svd-b\",\"technique\":\"svd\",\"cost\":{\"macs\":900,\"params\":0}}");
    put_variant(dir, "base", "{\"id\":\"base\",\"technique\":\"base\",\"cost\":{\"macs\":1000,\"params\":500,"
                             "\"layers\":[{\"type\":\"connected\",\"params\":300},{\"type\":\"connected\",\"params\":"
                             "20},{\"type\":\"convolutional\",\"params\":180}]},\"accuracy\":{\"identity\":{\"top1\":0.9,"
                             "\"images\":100,\"top1_ci\":[0.82,0.95]}},\"latency\":{\"build-host\":{\"ms_median\":1.5}}}");
    put_variant(dir, "rw-a", "{\"id\":\"rw-a\",\"technique\":\"rewrite\",\"cost\":{\"macs\":400,\"params\":200,"
                             "\"layers\":[{\"type\":\"connected\",\"params\":80}]},\"accuracy\":{\"identity\":{\"top1\":0.85}}}");
    put_variant(dir, ".old", "{\"id\":\"old\"}");
    put_variant(dir, "zz", "{\"id\": broken");
    cat_variant_rows r;
    trn_err e;
    int bad = 0;
    if (cat_variants_read(dir, &r, count_bad, &bad, &e)) fail_msg("%s", e.msg);
    assert_int_equal(bad, 1);
    assert_int_equal(r.n, 3);
    assert_ptr_equal(r.base, &r.v[0]);
    assert_string_equal(r.v[1].id, "rw-a");
    assert_string_equal(r.v[2].id, "svd-b");
    assert_true(r.v[0].fc_params == 320 && r.v[0].has_ms && r.v[0].ms == 1.5 && r.v[0].lo == 0.82);
    assert_true(r.v[1].has_top1 && r.v[1].lo == -1 && !r.v[1].has_ms && !r.v[2].has_top1);
    cJSON *j = cat_variants_json(&r);
    const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "variants"), 1);
    assert_true(fabs(cJSON_GetObjectItem(a, "macs_reduction")->valuedouble - 2.5) < 1e-12);
    assert_true(fabs(cJSON_GetObjectItem(a, "fc_reduction")->valuedouble - 4) < 1e-12);
    assert_true(fabs(cJSON_GetObjectItem(a, "top1_change_points")->valuedouble + 5) < 1e-9);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(a, "top1_ci")) && cJSON_IsNull(cJSON_GetObjectItem(a, "images")));
    const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "variants"), 2);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(b, "fc_reduction")) && cJSON_IsNull(cJSON_GetObjectItem(b, "top1")));
    cJSON_Delete(j);
    cat_variant_rows_free(&r);
    /* without a base: no reductions, no change */
    snprintf(dir, sizeof dir, "%s/no-base", test_tmpdir());
    put_variant(dir, "rw-a", "{\"id\":\"rw-a\",\"cost\":{\"macs\":400},\"accuracy\":{\"t\":{\"top1\":0.5}}}");
    if (cat_variants_read(dir, &r, NULL, NULL, &e)) fail_msg("%s", e.msg);
    assert_null(r.base);
    j = cat_variants_json(&r);
    a = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "variants"), 0);
    assert_string_equal(cJSON_GetObjectItem(a, "technique")->valuestring, "?");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(a, "macs_reduction")) &&
                cJSON_IsNull(cJSON_GetObjectItem(a, "top1_change_points")));
    cJSON_Delete(j);
    cat_variant_rows_free(&r);
    /* a folder without variants, and none at all */
    snprintf(dir, sizeof dir, "%s/none", test_tmpdir());
    mkdir(dir, 0755);
    assert_int_equal(cat_variants_read(dir, &r, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "holds no <id>/variant.json"));
    assert_int_equal(r.n, 0);
    snprintf(dir, sizeof dir, "%s/nope", test_tmpdir());
    assert_int_equal(cat_variants_read(dir, &r, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "cannot open"));
}

/* A fixture variant under dir: variant.cfg, variant.weights (bytes
 * bytes) and variant.json with its costs and accuracy on 20000 images. */
static void pack_variant(const char *dir, const char *id, double macs, int bytes, double top1)
{
    char path[1200], text[2048];
    snprintf(text, sizeof text,
             "{\"schema\":1,\"id\":\"%s\",\"model\":\"tinynet\",\"technique\":\"%s\",\"parent\":%s,\"depends_on\":[],"
             "\"description\":\"fixture %s\",\"task\":\"identity\",\"files\":[{\"role\":\"cfg\",\"path\":\"variant.cfg\"},"
             "{\"role\":\"weights\",\"path\":\"variant.weights\"}],\"accuracy\":{\"identity\":{\"split\":\"test\","
             "\"images\":20000,\"top1\":%g}},\"cost\":{\"macs\":%g,\"params\":%d,\"weight_bytes\":%d,"
             "\"peak_activation_bytes\":65536,\"layers\":[{\"index\":0,\"type\":\"convolutional\",\"output\":[16,32,32],"
             "\"macs\":%g,\"params\":%d,\"output_bytes\":65536}]},\"technique_fields\":{}}",
             id, strcmp(id, "base") ? "pruned" : "base", strcmp(id, "base") ? "\"base\"" : "null", id, top1, macs,
             bytes / 4, bytes, macs, bytes / 4);
    put_variant(dir, id, text);
    snprintf(path, sizeof path, "%s/%s/variant.cfg", dir, id);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[net]\nbatch=1\nwidth=32\nheight=32\nchannels=3\n\n[convolutional]\nfilters=16\nsize=3\npad=1\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/%s/variant.weights", dir, id);
    assert_non_null(f = fopen(path, "w"));
    for (int i = 0; i < bytes; i++) fputc(i * 7 + (int)strlen(id), f);
    fclose(f);
}

static void count_warning(void *user, const char *text)
{
    int *n = user;
    n[0]++;
    n[1] += strstr(text, "created now") != NULL;
}

static void count_problem(void *user, const char *ptr, const char *msg)
{
    (void)ptr, (void)msg;
    (*(int *)user)++;
}

static int file_size(const char *dir, const char *name)
{
    char path[1200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (int)st.st_size : -1;
}

/* catalog pack's run: with a key the archive, its signature, manifest.json
 * and winnowed.json (the dominated variant dropped), the packed bytes the
 * files'; without one a development key made once with its warning, then
 * reused; a variant that does not read fails before anything is made; the
 * add-on's base manifest read back, a file that is none refused. */
static void pack_catalog_run(void **state)
{
    (void)state;
    char root[1024], vdir[1100], out[1100], pub[1100], sec[1100], names[1100];
    snprintf(root, sizeof root, "%s/pack", test_tmpdir());
    assert_int_equal(mkdir(root, 0755), 0);
    snprintf(vdir, sizeof vdir, "%s/variants", root);
    pack_variant(vdir, "base", 7e8, 600, 0.80);
    pack_variant(vdir, "slim", 3e8, 200, 0.78);
    pack_variant(vdir, "worse", 5e8, 400, 0.70); /* dominated by slim */
    snprintf(names, sizeof names, "%s/identity.names", root);
    FILE *f = fopen(names, "w");
    assert_non_null(f);
    fputs("a\nb\nc\n", f);
    fclose(f);
    snprintf(pub, sizeof pub, "%s/k.pub", root);
    snprintf(sec, sizeof sec, "%s/k.key", root);
    trn_err e;
    if (cat_keygen(pub, sec, NULL, CAT_KDF_NONE, 0, 0, NULL, &e)) fail_msg("%s", e.msg);
    cat_seckey *key = cat_seckey_load(sec, NULL, &e);
    assert_non_null(key);
    struct cat_task_labels task = {"identity", names};
    int warnings[2] = {0, 0}, problems = 0;
    snprintf(out, sizeof out, "%s/out", root);
    struct cat_pack_catalog_options o = {
        .build = {.variants_dir = vdir, .version = 3, .seed = 42, .source_date_epoch = 1700000000, .tasks = &task,
                  .ntasks = 1, .no_targets = 1},
        .out_dir = out, .key = key, .zstd_level = 3, .report = count_problem, .user = warnings,
        .warn = count_warning};
    o.user = &problems;
    struct cat_pack_catalog_result r;
    if (cat_pack_catalog(&o, &r, &e)) fail_msg("%s", e.msg);
    assert_null(r.dev_key);
    assert_non_null(strstr(r.archive, "/out/catalog-tinynet-3.tar.zst"));
    assert_true(file_size(out, "catalog-tinynet-3.tar.zst") > 0 && file_size(out, "catalog-tinynet-3.tar.zst.minisig") > 0);
    assert_true(file_size(out, "manifest.json") > 0 && file_size(out, "winnowed.json") > 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.built.manifest, "variants")), 2);
    const cJSON *dropped = cJSON_GetArrayItem(cJSON_GetObjectItem(r.built.winnowed, "dropped"), 0);
    assert_string_equal(cJSON_GetObjectItem(dropped, "id")->valuestring, "worse");
    uint64_t sum = 0;
    for (size_t i = 0; i < r.built.nfiles; i++) sum += r.built.files[i].size;
    assert_true(r.bytes == sum && r.bytes > 800);
    cat_pack_catalog_result_free(&r);
    cat_seckey_free(key);
    /* without a key: a development key, made once */
    snprintf(out, sizeof out, "%s/dev", root);
    o.key = NULL, o.user = warnings;
    for (int run = 0; run < 2; run++) {
        if (cat_pack_catalog(&o, &r, &e)) fail_msg("%s", e.msg);
        assert_non_null(r.dev_key);
        assert_true(cat_seckey_is_development(r.dev_key));
        cat_pack_catalog_result_free(&r);
    }
    assert_int_equal(warnings[0], 2);
    assert_int_equal(warnings[1], 1);
    assert_true(file_size(out, "devkey/catalog-dev.pub") > 0);
    /* a variant that does not read: nothing made */
    snprintf(vdir, sizeof vdir, "%s/broken", root);
    put_variant(vdir, "base", "{\"schema\":1");
    snprintf(out, sizeof out, "%s/never", root);
    o.build.variants_dir = vdir;
    problems = 0, o.user = &problems;
    assert_int_equal(cat_pack_catalog(&o, &r, &e), -1);
    assert_true(problems > 0);
    assert_int_equal(file_size(root, "never"), -1);
    /* the add-on's base */
    snprintf(out, sizeof out, "%s/out/manifest.json", root);
    cJSON *base;
    if (cat_addon_base_read(out, &base, &e)) fail_msg("%s", e.msg);
    assert_string_equal(cJSON_GetObjectItem(base, "catalog")->valuestring, "tinynet");
    cJSON_Delete(base);
    assert_int_equal(cat_addon_base_read(names, &base, &e), -1);
    assert_null(base);
    assert_non_null(strstr(e.msg, "not a catalog manifest"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(winnow_is_strict),
        cmocka_unit_test(winnow_records_an_undominated_dominator),
        cmocka_unit_test(winnow_keeps_dependencies_transitively),
        cmocka_unit_test(winnow_nested_capacities_are_one_unit),
        cmocka_unit_test(wilson_known_values),
        cmocka_unit_test(mcnemar_known_values),
        cmocka_unit_test(winnow_paired_flexdnn_vs_smcd8x),
        cmocka_unit_test(winnow_paired_decides_where_intervals_cannot),
        cmocka_unit_test(winnow_kept_by_request),
        cmocka_unit_test(winnow_capacities_on_the_front),
        cmocka_unit_test(winnow_equal_costs_clearly_worse_is_dropped),
        cmocka_unit_test(winnow_equal_costs_within_noise_keeps_both),
        cmocka_unit_test(winnow_heads_fall_only_to_heads_on_their_trunk),
        cmocka_unit_test(winnow_cheaper_not_clearly_worse),
        cmocka_unit_test(winnow_chains_in_the_noise_stop_at_kept_variants),
        cmocka_unit_test(winnow_rule_clause_by_clause),
        cmocka_unit_test(roofline),
        cmocka_unit_test(roofline_cpu_beside_gpu),
        cmocka_unit_test(labels_never_overlap),
        cmocka_unit_test(json_output_is_canonical),
        cmocka_unit_test(keys_and_signatures),
        cmocka_unit_test(passphrase_sources),
        cmocka_unit_test(variants_table),
        cmocka_unit_test(pack_catalog_run),
    };
    int rc = cmocka_run_group_tests_name("cat_model", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
