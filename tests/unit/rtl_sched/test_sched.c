/* Unit tests of the scheduler (runtime-lite/src/sched*.c): MCDNN's
 * per-request budgets by hand, totals never overrun (seeded random
 * budgets, every policy), budgets changed between requests hold from the
 * next one, refusals with reasons, LRU paging, trunk sharing,
 * specialisation by the context window, NestDNN's greedy, the knee, the
 * catalog's options (the trace simulator's tests: tests/unit/rtl_sim). */
#include "testutil_impl.h"
#include "rtl.h"
#include "internal.h" /* functions librtl no longer exports (issue 38) */
#include "rtl_sched/sched_testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* The catalog of manifest text m (unsigned), or the test fails naming why. */
static rtl_catalog *parsed_catalog(const char *m)
{
    rtl_err e;
    rtl_catalog *cat = rtl_catalog_parse(m, strlen(m), NULL, &e);
    if (!cat) fail_msg("%s", e.msg);
    return cat;
}

static void policy_table(void **state)
{
    (void)state;
    for (int p = 0; p < RTL_POLICY_COUNT; p++) {
        const rtl_policy_info *i = rtl_policy_get(p);
        assert_non_null(i);
        assert_true(strlen(i->summary) > 10);
        assert_int_equal(rtl_policy_find(i->name), p);
        for (int q = 0; q < p; q++) assert_string_not_equal(i->name, rtl_policy_get(q)->name);
    }
    assert_null(rtl_policy_get(RTL_POLICY_COUNT));
    assert_int_equal(rtl_policy_find("fastest"), -1);
    assert_string_equal(rtl_loc_name(RTL_LOC_SPLIT), "split");
}

/* Each row's behaviour holds: a policy runs tasks only where its row's
 * locations allow (random options and budgets, split and cloud offered);
 * a paced row spreads an energy budget over the horizon (2.5 mJ per
 * request: option b of 2 mJ) where an unpaced one takes the most accurate
 * (d, 8 mJ); a planned row gives a task one option while nothing changes. */
static void policy_rows_hold(void **state)
{
    (void)state;
    for (int p = 0; p < RTL_POLICY_COUNT; p++) {
        const rtl_policy_info *row = rtl_policy_get(p);
        assert_true(row->locations != 0 && row->locations < (1u << RTL_LOC_COUNT));
        unsigned used = 0;
        for (int round = 0; round < 20; round++) {
            rtl_sched *s = new_sched(p);
            rtl_sched_option o[4];
            for (int i = 0; i < 4; i++) {
                o[i] = opt("v", urand(), 0.5 + urand() * 20, urand() * 50, 5 + urand() * 50, (uint64_t)(urand() * 4e6));
                o[i].split_frac = urand() < 0.5 ? 0 : 0.2 + 0.6 * urand();
            }
            add_task(s, "t", o, 4);
            rtl_sched_budget b = {.energy_mj = urand() < 0.5 ? -1 : urand() * 500, .cloud_usd = urand() * 1e-3,
                                  .horizon_s = 100};
            assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
            int first = -2;
            for (int i = 0; i < 50; i++) {
                rtl_sched_decision d;
                assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, -1, &d, NULL), 0);
                if (d.option < 0) continue;
                if (!((row->locations >> d.loc) & 1u))
                    fail_msg("policy %s ran at %s, outside its row's locations", row->name, rtl_loc_name(d.loc));
                used |= 1u << d.loc;
                if (row->planned && b.energy_mj < 0) {
                    if (first == -2) first = d.option;
                    assert_int_equal(d.option, first);
                }
            }
            rtl_sched_free(s);
        }
        assert_true(used != 0);
        if (row->planned || !((row->locations >> RTL_LOC_DEVICE) & 1u)) continue;
        rtl_sched *s = new_sched(p);
        rtl_sched_option o[4] = {opt("a", 0.5, 1, 1, -1, 0), opt("b", 0.6, 2, 2, -1, 0), opt("c", 0.7, 4, 4, -1, 0),
                                 opt("d", 0.8, 8, 8, -1, 0)};
        add_task(s, "t", o, 4);
        set_budget(s, 2500, -1, 1000, 0);
        rtl_sched_decision d;
        assert_int_equal(rtl_sched_decide(s, 0, 0, 0, -1, &d, NULL), 0);
        if (d.option != (row->paced ? 1 : 3))
            fail_msg("policy %s (paced %d): first option %d, want %d", row->name, row->paced, d.option, row->paced ? 1 : 3);
        rtl_sched_free(s);
    }
}

/* One task at one request per second, alone on the device: f_n = 1,
 * sum f^2 = 1, so RESPERREQ(e) = e / T: the most accurate option within
 * e/T per request; the budget is spread over the horizon, never overrun. */
static void resperreq_by_hand(void **state)
{
    (void)state;
    rtl_sched *s = new_sched(RTL_POLICY_MCDNN);
    rtl_sched_option o[4] = {opt("a", 0.5, 1, 1, -1, 0), opt("b", 0.6, 2, 2, -1, 0), opt("c", 0.7, 4, 4, -1, 0),
                             opt("d", 0.8, 8, 8, -1, 0)};
    add_task(s, "t", o, 4);
    set_budget(s, 2500, -1, 1000, 0); /* 2.5 mJ per request over 1000 requests */
    rtl_sched_decision d;
    double used = 0;
    int counts[4] = {0};
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, -1, &d, NULL), 0);
        assert_true(d.option >= 0);
        if (i == 0) assert_int_equal(d.option, 1);
        assert_int_equal(d.loc, RTL_LOC_DEVICE);
        counts[d.option]++;
        used += d.energy_mj;
    }
    assert_true(used <= 2500 + 1e-9);
    assert_true(used >= 0.9 * 2500); /* what is saved early is spent later */
    /* the first request has e/T = 2.5: option b (2 mJ); it stays near there */
    assert_true(counts[1] > 500);
    rtl_sched_budget b;
    rtl_sched_get_budget(s, &b);
    assert_true(fabs(b.energy_mj - (2500 - used)) < 1e-6);
    rtl_sched_free(s);
}

/* Totals are hard limits for every policy, on random budgets and options. */
static void totals_never_overrun(void **state)
{
    (void)state;
    for (int round = 0; round < 40; round++)
        for (int p = 0; p < RTL_POLICY_COUNT; p++) {
            rtl_sched *s = new_sched(p);
            int tasks = 1 + (int)(urand() * 4);
            for (int k = 0; k < tasks; k++) {
                rtl_sched_option o[6];
                int n = 1 + (int)(urand() * 6);
                for (int i = 0; i < n; i++)
                    o[i] = opt("v", urand(), 0.5 + urand() * 20, urand() * 50, urand() < 0.3 ? -1 : 5 + urand() * 50,
                               (uint64_t)(urand() * 4e6));
                add_task(s, "t", o, (size_t)n);
            }
            double E = urand() * 2000, C = urand() * 1e-3;
            rtl_sched_budget b = {.energy_mj = E, .cloud_usd = C, .horizon_s = 200,
                                  .memory_bytes = urand() < 0.5 ? 0 : (uint64_t)(urand() * 8e6)};
            assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
            double e = 0, c = 0;
            for (int i = 0; i < 400; i++) {
                rtl_sched_decision d;
                assert_int_equal(rtl_sched_decide(s, (int)(urand() * tasks), i * 0.5, (uint64_t)i, -1, &d, NULL), 0);
                if (d.option < 0) {
                    assert_true(strstr(d.reason, "refused") != NULL);
                    continue;
                }
                e += d.energy_mj, c += d.cloud_usd;
            }
            assert_true(e <= E + 1e-6);
            assert_true(c <= C + 1e-12);
            rtl_sched_free(s);
        }
}

/* A budget set between two requests holds from the next request on. */
static void budget_change_next_request(void **state)
{
    (void)state;
    for (int p = 0; p < RTL_POLICY_COUNT; p++) {
        if (p == RTL_POLICY_CLOUD_ONLY) continue;
        rtl_sched *s = new_sched(p);
        rtl_sched_option o[3] = {opt("big", 0.9, 40, 10, 30, 1000), opt("mid", 0.8, 10, 3, 25, 500),
                                 opt("small", 0.6, 2, 1, 25, 100)};
        add_task(s, "t", o, 3);
        rtl_sched_budget b = {.energy_mj = -1, .cloud_usd = -1, .horizon_s = 100};
        assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
        rtl_sched_decision d;
        for (int i = 0; i < 5; i++) assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, -1, &d, NULL), 0);
        if (p != RTL_POLICY_KNEE && p != RTL_POLICY_NEST_TOTAL && p != RTL_POLICY_NEST_MAX) {
            assert_int_equal(d.option, 0); /* unconstrained: the most accurate */
        }
        b.latency_ms = 12;
        b.disconnected = 1;
        assert_int_equal(rtl_sched_set_budget(s, &b, 5, NULL), 0);
        assert_int_equal(rtl_sched_decide(s, 0, 5, 5, -1, &d, NULL), 0);
        if (d.option >= 0) {
            assert_true(d.latency_ms <= 12);
            assert_int_equal(d.loc, RTL_LOC_DEVICE);
        } else {
            assert_true(strstr(d.reason, "latency") != NULL);
        }
        if (p == RTL_POLICY_MCDNN || p == RTL_POLICY_DEVICE_ONLY) {
            if (d.option != 1) fail_msg("policy %s: option %d (%s)", rtl_policy_get(p)->name, d.option, d.reason);
        }
        b.memory_bytes = 150; /* only "small" fits */
        b.latency_ms = 0;
        assert_int_equal(rtl_sched_set_budget(s, &b, 6, NULL), 0);
        assert_int_equal(rtl_sched_decide(s, 0, 6, 6, -1, &d, NULL), 0);
        if ((p == RTL_POLICY_MCDNN || p == RTL_POLICY_DEVICE_ONLY || p == RTL_POLICY_NEST_TOTAL) && d.option != 2)
            fail_msg("policy %s: option %d (%s)", rtl_policy_get(p)->name, d.option, d.reason);
        rtl_sched_free(s);
    }
}

/* Budgets nothing can meet: a refusal per request that says why. */
static void refusals(void **state)
{
    (void)state;
    rtl_sched *s = new_sched(RTL_POLICY_MCDNN);
    rtl_sched_option o[2] = {opt("a", 0.7, 10, 5, 30, 100), opt("b", 0.8, 20, 9, 40, 200)};
    add_task(s, "faces", o, 2);
    rtl_sched_budget b = {.energy_mj = -1, .cloud_usd = -1, .horizon_s = 10, .latency_ms = 1};
    assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
    rtl_sched_decision d;
    assert_int_equal(rtl_sched_decide(s, 0, 0, 0, -1, &d, NULL), 0);
    assert_int_equal(d.option, -1);
    assert_non_null(strstr(d.reason, "faces"));
    assert_non_null(strstr(d.reason, "latency budget"));
    b.latency_ms = 0, b.energy_mj = 0, b.disconnected = 1;
    assert_int_equal(rtl_sched_set_budget(s, &b, 1, NULL), 0);
    assert_int_equal(rtl_sched_decide(s, 0, 1, 1, -1, &d, NULL), 0);
    assert_int_equal(d.option, -1);
    assert_non_null(strstr(d.reason, "energy budget is spent"));
    assert_non_null(strstr(d.reason, "disconnected"));
    /* bad arguments are errors, not refusals */
    rtl_err e;
    assert_int_equal(rtl_sched_decide(s, 7, 0, 0, -1, &d, &e), -1);
    assert_non_null(strstr(e.msg, "no task 7"));
    b.horizon_s = 0;
    assert_int_equal(rtl_sched_set_budget(s, &b, 1, &e), -1);
    rtl_sched_option bad = opt("x", 1.5, 1, 1, 1, 1);
    rtl_sched_task t = {.options = &bad, .n = 1};
    assert_int_equal(rtl_sched_add_task(s, &t, &e), -1);
    rtl_sched_free(s);
}

/* Task "t" of the two options o[0] (source "estimate", a roofline bound)
 * and o[1] (source "device", measured). */
static void add_estimate_and_device(rtl_sched *s, rtl_sched_option o[2])
{
    snprintf(o[0].source, sizeof o[0].source, "estimate");
    snprintf(o[1].source, sizeof o[1].source, "device");
    add_task(s, "t", o, 2);
}

/* A latency budget met only by a roofline estimate (a lower bound) is not
 * "met": the option is refused, with the reason, unless the configuration
 * lets estimates meet budgets (a simulation); a measured option meets it. */
static void estimate_does_not_meet_budget(void **state)
{
    (void)state;
    for (int trust = 0; trust < 2; trust++) {
        rtl_sched_config c = {.policy = RTL_POLICY_MCDNN, .estimates_meet_budgets = trust};
        rtl_sched *s = rtl_sched_new(&c, NULL);
        assert_non_null(s);
        rtl_sched_option o[2] = {opt("est", 0.8, 0.045, 1, -1, 0), opt("slow", 0.7, 2, 1, -1, 0)};
        add_estimate_and_device(s, o);
        rtl_sched_budget b = {.energy_mj = -1, .cloud_usd = -1, .horizon_s = 10, .latency_ms = 0.05};
        assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
        rtl_sched_decision d;
        assert_int_equal(rtl_sched_decide(s, 0, 0, 0, -1, &d, NULL), 0);
        if (trust) {
            assert_int_equal(d.option, 0);
            assert_string_equal(d.source, "estimate");
        } else {
            assert_int_equal(d.option, -1);
            assert_non_null(strstr(d.reason, "met only by roofline lower bounds"));
        }
        /* without a latency budget the estimate serves, and says what it is */
        b.latency_ms = 0;
        assert_int_equal(rtl_sched_set_budget(s, &b, 1, NULL), 0);
        assert_int_equal(rtl_sched_decide(s, 0, 1, 1, -1, &d, NULL), 0);
        assert_int_equal(d.option, 0);
        assert_string_equal(d.source, "estimate");
        /* a budget the measured option meets: it serves, not the estimate */
        b.latency_ms = 3;
        assert_int_equal(rtl_sched_set_budget(s, &b, 2, NULL), 0);
        assert_int_equal(rtl_sched_decide(s, 0, 2, 2, -1, &d, NULL), 0);
        assert_int_equal(d.option, trust ? 0 : 1);
        assert_string_equal(d.source, trust ? "estimate" : "device");
        rtl_sched_free(s);
    }
}

/* rtl_sched_account: an executed request's measured time replaces the
 * prediction, so the next decision under a latency budget uses it (the
 * 0.045 ms estimate that ran in 0.45 ms no longer meets 0.1 ms), and the
 * energy charged scales with it. */
static void accounting_changes_next_decision(void **state)
{
    (void)state;
    rtl_sched_config c = {.policy = RTL_POLICY_MCDNN, .estimates_meet_budgets = 1};
    rtl_sched *s = rtl_sched_new(&c, NULL);
    assert_non_null(s);
    rtl_sched_option o[2] = {opt("fast", 0.8, 0.045, 1, -1, 0), opt("small", 0.6, 0.08, 2, -1, 0)};
    add_estimate_and_device(s, o);
    rtl_sched_budget b = {.energy_mj = 1000, .cloud_usd = -1, .horizon_s = 1e6, .latency_ms = 0.1};
    assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
    rtl_sched_decision d;
    assert_int_equal(rtl_sched_decide(s, 0, 0, 0, -1, &d, NULL), 0);
    assert_int_equal(d.option, 0);
    rtl_sched_budget before, after;
    rtl_sched_get_budget(s, &before);
    rtl_sched_account(s, &d, 0.45);
    rtl_sched_get_budget(s, &after);
    assert_true(fabs((before.energy_mj - after.energy_mj) - 9) < 1e-9); /* 1 mJ charged, 10 mJ measured */
    const rtl_sched_task *t = rtl_sched_task_at(s, 0);
    assert_true(fabs(t->options[0].device_ms - 0.45) < 1e-12);
    assert_string_equal(t->options[0].source, "device");
    assert_int_equal(rtl_sched_decide(s, 0, 1, 1, -1, &d, NULL), 0);
    assert_int_equal(d.option, 1); /* the measured 0.45 ms is over the budget */
    assert_string_equal(d.source, "device");
    /* not accounted: a refusal, a bad time, an unknown task */
    rtl_sched_decision r = d;
    r.option = -1;
    rtl_sched_account(s, &r, 5);
    rtl_sched_account(s, &d, NAN);
    r = d, r.task = 9;
    rtl_sched_account(s, &r, 5);
    assert_true(fabs(t->options[1].device_ms - 0.08) < 1e-12);
    rtl_sched_free(s);
}

/* Device memory holds two models: a third task evicts the least recently
 * used one. */
static void lru_paging(void **state)
{
    (void)state;
    rtl_sched *s = new_sched(RTL_POLICY_DEVICE_ONLY);
    for (int k = 0; k < 3; k++) {
        rtl_sched_option o = opt("m", 0.7, 5, 1, -1, 1000);
        add_task(s, k == 0 ? "a" : k == 1 ? "b" : "c", &o, 1);
    }
    rtl_sched_budget b = {.energy_mj = -1, .cloud_usd = -1, .horizon_s = 100, .memory_bytes = 2000};
    assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
    rtl_sched_decision d;
    assert_int_equal(rtl_sched_decide(s, 0, 0, 0, -1, &d, NULL), 0);
    assert_int_equal(d.paged_in, 1);
    assert_int_equal(rtl_sched_decide(s, 1, 1, 1, -1, &d, NULL), 0);
    assert_int_equal(d.paged_in, 1);
    assert_int_equal(d.paged_out, 0);
    assert_int_equal(rtl_sched_decide(s, 0, 2, 2, -1, &d, NULL), 0); /* a is used again: b is the LRU */
    assert_int_equal(d.hit, 1);
    assert_int_equal(d.paged_in, 0);
    assert_int_equal(rtl_sched_decide(s, 2, 3, 3, -1, &d, NULL), 0);
    assert_int_equal(d.paged_in, 1);
    assert_int_equal(d.paged_out, 1);
    assert_int_equal(rtl_sched_decide(s, 0, 4, 4, -1, &d, NULL), 0); /* a stayed */
    assert_int_equal(d.hit, 1);
    assert_int_equal(rtl_sched_decide(s, 1, 5, 5, -1, &d, NULL), 0); /* b was evicted */
    assert_int_equal(d.hit, 0);
    assert_int_equal(d.paged_in, 1);
    /* a model larger than the memory budget is never loaded */
    b.memory_bytes = 500;
    assert_int_equal(rtl_sched_set_budget(s, &b, 6, NULL), 0);
    assert_int_equal(rtl_sched_decide(s, 0, 6, 6, -1, &d, NULL), 0);
    assert_int_equal(d.option, -1);
    assert_non_null(strstr(d.reason, "memory"));
    rtl_sched_free(s);
}

/* Two heads on one trunk: the second request of a frame reuses the
 * trunk's output (MCDNN's sharing); no-sharing pays the trunk twice. */
static void trunk_sharing(void **state)
{
    (void)state;
    for (int p = RTL_POLICY_MCDNN; p <= RTL_POLICY_NO_SHARING; p += RTL_POLICY_NO_SHARING) {
        rtl_sched *s = new_sched(p);
        rtl_sched_trunk t = {.variant = "trunk", .device_ms = 20, .device_mj = 10, .cloud_ms = 5, .bytes = 5000};
        assert_int_equal(rtl_sched_add_trunk(s, &t, NULL), 0);
        for (int k = 0; k < 2; k++) {
            rtl_sched_option o = opt("head", 0.9, 1, 0.5, -1, 100);
            o.trunk = 0;
            add_task(s, k ? "g" : "r", &o, 1);
        }
        set_budget(s, -1, -1, 100, 0);
        rtl_sched_decision a, b;
        assert_int_equal(rtl_sched_decide(s, 0, 0, 42, -1, &a, NULL), 0);
        assert_int_equal(rtl_sched_decide(s, 1, 0, 42, -1, &b, NULL), 0);
        assert_int_equal(a.shared_trunk, 0);
        assert_true(a.latency_ms >= 21 - 1e-9);
        if (p == RTL_POLICY_MCDNN) {
            assert_int_equal(b.shared_trunk, 1);
            assert_true(b.energy_mj < 1); /* the head (and its page-in), not the trunk */
        } else {
            assert_int_equal(b.shared_trunk, 0);
            assert_true(b.energy_mj >= 10.5);
        }
        /* the next frame runs the trunk again */
        assert_int_equal(rtl_sched_decide(s, 0, 1, 43, -1, &a, NULL), 0);
        assert_int_equal(a.shared_trunk, 0);
        rtl_sched_free(s);
    }
}

/* A specialised (7, 0.9) model serves only while the window is
 * dominated by 7 classes; no-special never uses it. */
static void specialisation(void **state)
{
    (void)state;
    for (int p = RTL_POLICY_MCDNN; p <= RTL_POLICY_NO_SPECIAL; p += RTL_POLICY_NO_SPECIAL) {
        rtl_sched *s = new_sched(p);
        rtl_sched_option o[2] = {opt("generic", 0.7, 10, 5, -1, 100), opt("spec", 0.9, 10, 5, -1, 100)};
        o[1].context_n = 7, o[1].context_p = 0.9, o[1].partner = 0;
        add_task(s, "faces", o, 2);
        set_budget(s, -1, -1, 1000, 0);
        rtl_sched_decision d;
        for (int i = 0; i < 200; i++) /* 20 classes, uniform: top 7 hold about a third */
            assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, i % 20, &d, NULL), 0);
        assert_int_equal(d.option, 0);
        for (int i = 200; i < 400; i++) /* 19 in 20 of the window from 7 classes */
            assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, i % 20 == 0 ? 15 : i % 7, &d, NULL), 0);
        assert_int_equal(rtl_sched_decide(s, 0, 400, 400, 3, &d, NULL), 0);
        assert_int_equal(d.option, p == RTL_POLICY_MCDNN ? 1 : 0);
        if (p == RTL_POLICY_MCDNN) /* the cascade: the partner's cost on the "other" share */
            assert_true(d.energy_mj > 5 && d.energy_mj < 5 + 5 * 0.1 + 1e-9);
        rtl_sched_free(s);
    }
}

/* The window is context.c's profiler (no second one with its own limit of
 * 21 classes): a specialised option of n = 30 is taken, and serves once
 * 30 classes hold its p of the window (classes up to 99 seen). */
static void specialisation_wide(void **state)
{
    (void)state;
    rtl_sched *s = new_sched(RTL_POLICY_MCDNN);
    rtl_sched_option o[3] = {opt("generic", 0.7, 10, 5, -1, 100), opt("spec30", 0.9, 10, 5, -1, 100),
                             opt("spec7", 0.95, 10, 5, -1, 100)};
    o[1].context_n = 30, o[1].context_p = 0.9, o[1].partner = 0;
    o[2].context_n = 7, o[2].context_p = 0.9, o[2].partner = 0;
    add_task(s, "faces", o, 3);
    set_budget(s, -1, -1, 1000, 0);
    rtl_sched_decision d;
    for (int i = 0; i < 200; i++) /* 100 classes, uniform */
        assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, i % 100, &d, NULL), 0);
    assert_int_equal(d.option, 0);
    for (int i = 200; i < 400; i++) /* 30 classes, uniform: no 7 of them hold 0.9 */
        assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, i % 30, &d, NULL), 0);
    assert_int_equal(d.option, 1);
    rtl_sched_option bad = opt("spec65", 0.9, 10, 5, -1, 100);
    bad.context_n = RTL_CONTEXT_MAX_N + 1, bad.context_p = 0.9;
    rtl_sched_task t = {.options = &bad, .n = 1};
    rtl_err e;
    assert_int_equal(rtl_sched_add_task(s, &t, &e), -1);
    assert_non_null(strstr(e.msg, "n 1..64"));
    rtl_sched_free(s);
}

/* NestDNN's greedy: shares sum to 1, the memory cap holds, alpha = 0
 * takes the most accurate descendant, a large alpha meets L_max. */
static void nest_greedy(void **state)
{
    (void)state;
    for (int p = RTL_POLICY_NEST_TOTAL; p <= RTL_POLICY_NEST_MAX; p++)
        for (int a = 0; a < 2; a++) {
            rtl_sched_config c = {.policy = p, .nest_alpha = a ? 1000 : 0};
            rtl_sched *s = rtl_sched_new(&c, NULL);
            for (int k = 0; k < 3; k++) {
                rtl_sched_option o[5];
                for (int i = 0; i < 5; i++) {
                    o[i] = opt("nested", 0.6 + 0.05 * i, 2 + 4 * i, 1 + i, -1, (uint64_t)(100 * (i + 1)));
                    o[i].capacity = i;
                }
                add_task(s, "app", o, 5);
                assert_int_equal(rtl_sched_set_goal(s, k, 0.8, 40, NULL), 0);
                assert_int_equal(rtl_sched_set_active(s, k, 1, NULL), 0);
            }
            rtl_sched_budget b = {.energy_mj = -1, .cloud_usd = -1, .horizon_s = 100, .memory_bytes = a ? 1200 : 1500};
            assert_int_equal(rtl_sched_set_budget(s, &b, 0, NULL), 0);
            double share = 0;
            uint64_t mem = 0;
            for (int k = 0; k < 3; k++) {
                rtl_sched_decision d;
                assert_int_equal(rtl_sched_decide(s, k, 0, 0, -1, &d, NULL), 0);
                assert_true(d.option >= 0);
                share += d.share;
                mem += 100 * (uint64_t)(d.option + 1);
                if (a && d.latency_ms > 40 + 0.01) /* a huge alpha: L_max is met (+ the page-in) */
                    fail_msg("%s: task %d: option %d share %g latency %g", rtl_policy_get(p)->name, k, d.option,
                             d.share, d.latency_ms);
                else if (!a && d.top1 < 0.8 - 1e-9) /* alpha 0: accuracy alone (3 x 500 bytes fit) */
                    fail_msg("%s: task %d: option %d top1 %g share %g", rtl_policy_get(p)->name, k, d.option, d.top1,
                             d.share);
            }
            assert_true(share <= 1 + 1e-9 && share >= 0.99);
            assert_true(mem <= (a ? 1200u : 1500u));
            /* one app stops: the plan changes, the others may grow */
            assert_int_equal(rtl_sched_set_active(s, 2, 0, NULL), 0);
            rtl_sched_decision d;
            assert_int_equal(rtl_sched_decide(s, 0, 1, 1, -1, &d, NULL), 0);
            assert_true(d.share >= 0.45);
            rtl_sched_free(s);
        }
}

/* The knee of a curve with a clear elbow, and the fixed-knee policy. */
static void knee(void **state)
{
    (void)state;
    rtl_sched *s = new_sched(RTL_POLICY_KNEE);
    rtl_sched_option o[5] = {opt("a", 0.50, 1, 1, -1, 1), opt("b", 0.80, 2, 2, -1, 1), opt("c", 0.84, 5, 5, -1, 1),
                             opt("d", 0.86, 10, 10, -1, 1), opt("e", 0.40, 9, 9, -1, 1)};
    add_task(s, "t", o, 5);
    set_budget(s, -1, -1, 100, 0);
    rtl_sched_decision d;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, -1, &d, NULL), 0);
        assert_int_equal(d.option, 1);
    }
    rtl_sched_free(s);
    /* a nested model beside independent variants: NestDNN's baseline is its
     * knee capacity; MCDNN's strawman (knee_any) the knee of them all */
    rtl_sched_option m[5] = {opt("nest", 0.45, 1, 1, -1, 1), opt("nest", 0.50, 3, 3, -1, 1),
                             opt("nest", 0.51, 10, 10, -1, 1), opt("rw", 0.82, 2, 2, -1, 1),
                             opt("svd", 0.88, 10, 10, -1, 1)};
    m[0].capacity = 1, m[1].capacity = 2, m[2].capacity = 3;
    for (int any = 0; any < 2; any++) {
        rtl_sched_config c = {.policy = RTL_POLICY_KNEE, .knee_any = any};
        s = rtl_sched_new(&c, NULL);
        add_task(s, "t", m, 5);
        set_budget(s, -1, -1, 100, 0);
        assert_int_equal(rtl_sched_decide(s, 0, 0, 0, -1, &d, NULL), 0);
        assert_int_equal(d.option, any ? 3 : 1);
        rtl_sched_free(s);
    }
}

#define SHA "0000000000000000000000000000000000000000000000000000000000000000"
#define F(id) "\"files\":[{\"role\":\"cfg\",\"path\":\"variants/" id "/variant.cfg\",\"size\":1,\"sha256\":\"" SHA "\"}],"

/* Options from a manifest: capacities, alphas, a head's trunk, a cascade. */
static void catalog_options(void **state)
{
    (void)state;
    const char *m =
        "{\"schema\":1,\"catalog\":\"t\",\"model\":\"t\",\"version\":1,"
        "\"tasks\":{\"identity\":{\"classes\":3,\"labels\":[\"a\",\"b\",\"c\"]},\"shape\":{\"classes\":2,\"labels\":[\"x\",\"y\"]},"
        "\"ctx\":{\"classes\":2,\"labels\":[\"a\",\"other\"]}},"
        "\"variants\":["
        "{\"id\":\"base\",\"technique\":\"base\",\"task\":\"identity\",\"parent\":null,\"depends_on\":[],\"description\":\"\","
        "" F("base") "\"accuracy\":{\"identity\":{\"top1\":0.8,\"images\":1000}},"
        "\"cost\":{\"macs\":1000000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1,"
        "\"layers\":[{\"type\":\"convolutional\",\"macs\":750000},{\"type\":\"connected\",\"macs\":250000}]},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":4,\"runs\":3}},\"technique_fields\":{}},"
        "{\"id\":\"nested\",\"technique\":\"nested\",\"task\":\"identity\",\"parent\":\"base\",\"depends_on\":[],"
        "\"description\":\"\"," F("nested") "\"accuracy\":{\"identity\":{\"top1\":0.75}},"
        "\"cost\":{\"macs\":1000000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1},"
        "\"estimates\":{\"jetson-nano\":{\"ms\":1,\"mj\":2,\"cpu\":{\"ms\":10,\"mj\":20}}},"
        "\"technique_fields\":{\"capacities\":[{\"capacity\":0,\"macs\":500000,\"weight_bytes\":1000,\"top1\":0.6},"
        "{\"capacity\":1,\"macs\":1000000,\"weight_bytes\":4000,\"top1\":0.75}]}},"
        "{\"id\":\"exit\",\"technique\":\"early-exit\",\"task\":\"identity\",\"parent\":\"base\",\"depends_on\":[],"
        "\"description\":\"\"," F("exit") "\"accuracy\":{\"identity\":{\"top1\":0.79}},"
        "\"cost\":{\"macs\":1000000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":4,\"runs\":3}},"
        "\"technique_fields\":{\"alpha_profile\":[{\"alpha\":0.5,\"top1\":0.7,\"expected_macs\":250000},"
        "{\"alpha\":1,\"top1\":0.79,\"expected_macs\":500000}]}},"
        "{\"id\":\"spec\",\"technique\":\"specialised\",\"task\":\"identity\",\"parent\":\"base\",\"depends_on\":[\"base\"],"
        "\"description\":\"\"," F("spec") "\"accuracy\":{\"identity\":{\"top1\":0.9}},"
        "\"cost\":{\"macs\":1000000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":4,\"runs\":3}},"
        "\"technique_fields\":{\"context\":{\"n\":2,\"p\":0.9},\"cascade\":{\"partner\":\"base\",\"on\":\"other\"}}},"
        /* a representative context's model: its own task, its partner answers another: no option */
        "{\"id\":\"spec-ctx\",\"technique\":\"specialised\",\"task\":\"ctx\",\"parent\":\"base\",\"depends_on\":[\"base\"],"
        "\"description\":\"\"," F("spec-ctx") "\"accuracy\":{\"ctx\":{\"top1\":0.9}},"
        "\"cost\":{\"macs\":1000000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":4,\"runs\":3}},"
        "\"technique_fields\":{\"context\":{\"n\":1,\"p\":0.9},\"cascade\":{\"partner\":\"base\",\"on\":\"other\"}}},"
        "{\"id\":\"trunk\",\"technique\":\"trunk\",\"task\":\"identity\",\"parent\":\"base\",\"depends_on\":[],"
        "\"description\":\"\"," F("trunk") "\"accuracy\":{},"
        "\"cost\":{\"macs\":900000,\"params\":1,\"weight_bytes\":3000,\"peak_activation_bytes\":1},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":3,\"runs\":3}},\"technique_fields\":{}},"
        "{\"id\":\"head\",\"technique\":\"head\",\"task\":\"shape\",\"parent\":\"trunk\",\"depends_on\":[\"trunk\"],"
        "\"description\":\"\"," F("head") "\"accuracy\":{\"shape\":{\"top1\":0.95}},"
        "\"cost\":{\"macs\":1000,\"params\":1,\"weight_bytes\":100,\"peak_activation_bytes\":1},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":0.1,\"runs\":3}},"
        "\"technique_fields\":{\"head\":{\"trunk\":\"trunk\",\"from_layer\":3}}}]}";
    rtl_err e;
    rtl_catalog *cat = parsed_catalog(m);
    rtl_sched *s = new_sched(RTL_POLICY_MCDNN);
    rtl_sched_source src = {.device_mw = 1000};
    if (rtl_sched_add_catalog(s, cat, NULL, NULL, &src, &e) != 0) fail_msg("%s", e.msg);
    assert_int_equal(rtl_sched_task_count(s), 2); /* not ctx: its one option's partner answers identity */
    const rtl_sched_task *id = rtl_sched_task_at(s, 0), *sh = rtl_sched_task_at(s, 1);
    assert_string_equal(id->task, "identity");
    assert_int_equal(id->n, 1 + 2 + 2 + 1); /* base, 2 capacities, 2 alphas, spec */
    const rtl_sched_option *o = id->options;
    assert_string_equal(o[0].variant, "base");
    assert_string_equal(o[0].source, "build-host");
    assert_int_equal(o[0].images, 1000);
    assert_true(fabs(o[0].device_mj - 4) < 1e-9); /* 4 ms at 1000 mW */
    assert_true(fabs(o[0].split_frac - 0.75) < 1e-9);
    assert_int_equal(o[1].capacity, 1);
    assert_int_equal(o[2].capacity, 2);
    assert_string_equal(o[1].source, "estimate");
    assert_true(fabs(o[1].device_ms - 5) < 1e-9 && fabs(o[1].device_mj - 10) < 1e-9); /* half the MACs of the CPU's 10 ms */
    assert_int_equal(o[2].bytes, 4000);
    assert_true(o[3].alpha == 0.5 && fabs(o[3].device_ms - 1) < 1e-9);
    assert_int_equal(o[5].context_n, 2);
    assert_int_equal(o[5].partner, 0);
    assert_int_equal(sh->n, 1);
    assert_int_equal(sh->options[0].trunk, 0);
    assert_int_equal(rtl_sched_add_catalog(s, cat, "colour", "x", &src, &e), -1);
    assert_non_null(strstr(e.msg, "no task colour"));
    assert_int_equal(rtl_sched_add_catalog(s, cat, "ctx", "x", &src, &e), -1);
    assert_non_null(strstr(e.msg, "no variant of task ctx"));
    rtl_sched_free(s);
    rtl_catalog_close(cat);
}

/* A representative context's cascade (its own task ctx, prune specialise's
 * scores) is an option of the task its partner answers: its classes by
 * label among that task's, its gains measured over the partner (in
 * context: 95/100 against 85/100; elsewhere: (160-95)/100 against
 * (165-85)/100), serving while its classes hold p of the window. */
static void catalog_cascade_option(void **state)
{
    (void)state;
    const char *m =
        "{\"schema\":1,\"catalog\":\"t\",\"model\":\"t\",\"version\":1,"
        "\"tasks\":{\"identity\":{\"classes\":4,\"labels\":[\"a\",\"b\",\"c\",\"d\"]},"
        "\"ctx\":{\"classes\":3,\"labels\":[\"d\",\"b\",\"other\"]}},"
        "\"variants\":["
        "{\"id\":\"base\",\"technique\":\"base\",\"task\":\"identity\",\"parent\":null,\"depends_on\":[],\"description\":\"\","
        "" F("base") "\"accuracy\":{\"identity\":{\"top1\":0.8,\"images\":1000}},"
        "\"cost\":{\"macs\":1000000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":4,\"runs\":3}},\"technique_fields\":{}},"
        "{\"id\":\"spec-ctx\",\"technique\":\"specialised\",\"task\":\"ctx\",\"parent\":\"base\",\"depends_on\":[\"base\"],"
        "\"description\":\"\"," F("spec-ctx") "\"accuracy\":{\"ctx\":{\"top1\":0.9}},"
        "\"cost\":{\"macs\":1000000,\"params\":1,\"weight_bytes\":4000,\"peak_activation_bytes\":1},"
        "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":4,\"runs\":3}},"
        "\"technique_fields\":{\"context\":{\"n\":2,\"p\":0.8,\"other_class\":2},"
        "\"cascade\":{\"partner\":\"base\",\"on\":\"other\"},"
        "\"cascade_in_context\":{\"images\":100,\"correct\":95},\"generic_in_context\":{\"images\":100,\"correct\":85},"
        "\"overall\":{\"images\":200,\"correct\":160},\"generic_on_stream\":{\"images\":200,\"correct\":165}}}]}";
    rtl_err e;
    rtl_catalog *cat = parsed_catalog(m);
    rtl_sched_source src = {.device_mw = 1000};
    for (int p = RTL_POLICY_MCDNN; p <= RTL_POLICY_NO_SPECIAL; p += RTL_POLICY_NO_SPECIAL) {
        rtl_sched *s = new_sched(p);
        if (rtl_sched_add_catalog(s, cat, "identity", NULL, &src, &e) != 0) fail_msg("%s", e.msg);
        const rtl_sched_task *t = rtl_sched_task_at(s, 0);
        assert_int_equal(t->n, 2);
        const rtl_sched_option *c = &t->options[1];
        assert_string_equal(c->variant, "spec-ctx");
        assert_int_equal(c->partner, 0);
        assert_int_equal(c->context_nclasses, 2);
        assert_int_equal(c->context_classes[0], 3); /* d */
        assert_int_equal(c->context_classes[1], 1); /* b */
        assert_true(fabs(c->gain_in - 0.10) < 1e-9 && fabs(c->gain_out - (0.65 - 0.80)) < 1e-9);
        assert_true(fabs(c->top1 - 0.8) < 1e-9); /* outside its context: its partner's */
        set_budget(s, -1, -1, 1000, 0);
        rtl_sched_decision d;
        for (int i = 0; i < 200; i++) /* uniform over a..d: b and d hold half */
            assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, i % 4, &d, NULL), 0);
        assert_int_equal(d.option, 0);
        for (int i = 200; i < 300; i++) /* 9 in 10 of the window b or d */
            assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, i % 10 == 0 ? 0 : (i % 2 ? 1 : 3), &d, NULL), 0);
        if (p == RTL_POLICY_MCDNN) {
            assert_int_equal(d.option, 1);
            assert_true(fabs(d.top1 - (0.8 + 0.9 * 0.10 + 0.1 * -0.15)) < 1e-9);
        } else {
            assert_int_equal(d.option, 0);
            assert_true(fabs(d.top1 - 0.8) < 1e-9);
        }
        rtl_sched_free(s);
    }
    rtl_catalog_close(cat);
}

/* Water-filling (the fix in resperreq): task A asks every second, B every
 * fourth; the budget is 1.4 mJ per request. The printed RESPERREQ gives A
 * e/T f_A / sum f^2 = 1.65 mJ and B 0.41 mJ (below every option): A's
 * best within 1.65 costs 1.25, and the 0.4 it leaves would pile up to the
 * horizon's end. Counted at what it spends, A leaves B 2.0 mJ: B runs b
 * (or c, near the end, with what is left). */
static void waterfill_by_hand(void **state)
{
    (void)state;
    rtl_sched *s = new_sched(RTL_POLICY_MCDNN);
    rtl_sched_option o[3] = {opt("a", 0.5, 1, 0.5, -1, 0), opt("b", 0.8, 2, 1.25, -1, 0), opt("c", 0.88, 8, 5.3, -1, 0)};
    add_task(s, "A", o, 3);
    add_task(s, "B", o, 3);
    set_budget(s, 1.4 * 1250, -1, 1000, 0);
    rtl_sched_decision d;
    double used = 0;
    int b_runs_b = 0, b_n = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(rtl_sched_decide(s, 0, i, (uint64_t)i, -1, &d, NULL), 0);
        assert_true(d.option >= 0);
        used += d.energy_mj;
        if (i % 4) continue;
        assert_int_equal(rtl_sched_decide(s, 1, i, (uint64_t)i, -1, &d, NULL), 0);
        assert_true(d.option >= 0);
        used += d.energy_mj;
        if (i >= 100) b_n++, b_runs_b += d.option >= 1;
    }
    assert_true(used <= 1.4 * 1250 + 1e-9);
    assert_true(b_runs_b > 0.9 * b_n);
    rtl_sched_free(s);
}


int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(policy_table),       cmocka_unit_test(policy_rows_hold), cmocka_unit_test(resperreq_by_hand),
        cmocka_unit_test(totals_never_overrun), cmocka_unit_test(budget_change_next_request),
        cmocka_unit_test(refusals),           cmocka_unit_test(lru_paging),
        cmocka_unit_test(estimate_does_not_meet_budget), cmocka_unit_test(accounting_changes_next_decision),
        cmocka_unit_test(trunk_sharing),      cmocka_unit_test(specialisation), cmocka_unit_test(specialisation_wide),
        cmocka_unit_test(nest_greedy),        cmocka_unit_test(knee),
        cmocka_unit_test(catalog_options),    cmocka_unit_test(catalog_cascade_option),    cmocka_unit_test(waterfill_by_hand),
    };
    int rc = cmocka_run_group_tests_name("rtl_sched", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
