/* Unit tests of the split planner (runtime-lite/src/plan.c): the shortest
 * path and the budgeted search equal an exhaustive search over every
 * placement on random graphs (seeded), the cost of a placement matches a
 * hand computation of JointDNN's radio model, and bad inputs are errors. */
#include "testutil_impl.h"
#include "rtl.h"
#include "internal.h" /* functions librtl no longer exports (issue 38) */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static void random_graph(rtl_layer_cost *l, int n)
{
    for (int i = 0; i < n; i++) {
        memset(&l[i], 0, sizeof l[i]);
        l[i].index = i;
        l[i].host_ms = urand() * 10;
        l[i].input_bytes = i ? l[i - 1].output_bytes : (uint64_t)(urand() * 200000) + 4;
        l[i].output_bytes = (uint64_t)(urand() * 200000) + 4;
        l[i].cut_before = i == 0 || urand() < 0.7;
    }
}

/* The exhaustive optimum: -1 when no placement meets the budget. */
static int brute(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k, enum rtl_goal g,
                 const rtl_budget *b, double *best)
{
    int found = -1;
    for (uint32_t mask = 0; mask < (1u << n); mask++) {
        rtl_plan p = {.layers = n};
        for (int i = 0; i < n; i++) p.on_cloud[i] = (mask >> i) & 1;
        if (rtl_plan_evaluate(l, n, t, k, &p, NULL) != 0) continue;
        if (b && ((b->energy_mj > 0 && p.energy_mj > b->energy_mj) || (b->cloud_ms >= 0 && p.cloud_ms > b->cloud_ms) ||
                  (b->deadline_ms > 0 && p.latency_ms > b->deadline_ms)))
            continue;
        double v = g == RTL_GOAL_ENERGY ? p.energy_mj : p.latency_ms;
        if (found < 0 || v < *best) *best = v;
        found = 0;
    }
    return found;
}

static void shortest_path_is_optimal(void **state)
{
    (void)state;
    const char *links[] = {"3g", "4g", "wifi"};
    for (int c = 0; c < 300; c++) {
        int n = 1 + (int)(urand() * 12);
        rtl_layer_cost l[16];
        random_graph(l, n);
        rtl_link k = *rtl_link_preset(links[c % 3]);
        k.rtt_ms = urand() < 0.5 ? 0 : urand() * 100;
        rtl_target t = {.device_factor = 0.5 + urand() * 10, .cloud_factor = 0.1 + urand(),
                        .device_mw = urand() * 8000, .wait_mw = urand() * 500};
        for (int g = 0; g < RTL_GOAL_COUNT; g++) {
            rtl_plan p;
            double want;
            assert_int_equal(brute(l, n, &t, &k, (enum rtl_goal)g, NULL, &want), 0);
            assert_int_equal(rtl_plan_best(l, n, &t, &k, (enum rtl_goal)g, NULL, &p, NULL), 0);
            double got = g == RTL_GOAL_ENERGY ? p.energy_mj : p.latency_ms;
            if (fabs(got - want) > 1e-9 * (1 + want)) fail_msg("case %d goal %d: planner %.12g, exhaustive %.12g", c, g, got, want);
        }
    }
}

static void budgets_are_exact(void **state)
{
    (void)state;
    int feasible = 0, infeasible = 0;
    for (int c = 0; c < 300; c++) {
        int n = 1 + (int)(urand() * 10);
        rtl_layer_cost l[16];
        random_graph(l, n);
        rtl_link k = *rtl_link_preset(c % 2 ? "4g" : "wifi");
        rtl_target t = {.device_factor = 1 + urand() * 8, .cloud_factor = 0.2 + urand(), .device_mw = 5000,
                        .wait_mw = urand() * 300};
        rtl_plan dev, cloud;
        assert_int_equal(rtl_plan_split(l, n, &t, &k, n, &dev, NULL), 0);
        assert_int_equal(rtl_plan_split(l, n, &t, &k, 0, &cloud, NULL), 0);
        /* budgets between the extremes, so some bind */
        rtl_budget b = {.energy_mj = urand() < 0.5 ? 0 : (0.3 + urand()) * fmax(dev.energy_mj, cloud.energy_mj),
                        .cloud_ms = urand() < 0.5 ? -1 : urand() * cloud.cloud_ms,
                        .deadline_ms = urand() < 0.5 ? 0 : (0.3 + urand()) * fmax(dev.latency_ms, cloud.latency_ms)};
        for (int g = 0; g < RTL_GOAL_COUNT; g++) {
            rtl_plan p;
            rtl_err e;
            double want = 0;
            int bf = brute(l, n, &t, &k, (enum rtl_goal)g, &b, &want);
            int rc = rtl_plan_best(l, n, &t, &k, (enum rtl_goal)g, &b, &p, &e);
            assert_int_equal(rc, bf);
            if (rc != 0) {
                assert_non_null(strstr(e.msg, "no placement meets the budget"));
                infeasible++;
                continue;
            }
            feasible++;
            double got = g == RTL_GOAL_ENERGY ? p.energy_mj : p.latency_ms;
            if (fabs(got - want) > 1e-9 * (1 + want)) fail_msg("case %d goal %d: planner %.12g, exhaustive %.12g", c, g, got, want);
            assert_true(b.energy_mj <= 0 || p.energy_mj <= b.energy_mj + 1e-9);
            assert_true(b.cloud_ms < 0 || p.cloud_ms <= b.cloud_ms + 1e-9);
            assert_true(b.deadline_ms <= 0 || p.latency_ms <= b.deadline_ms + 1e-9);
        }
    }
    /* the random budgets exercised both outcomes */
    assert_true(feasible > 50);
    assert_true(infeasible > 5);
}

/* Two layers, the second on the cloud: by hand. */
static void cost_by_hand(void **state)
{
    (void)state;
    rtl_layer_cost l[2] = {{.host_ms = 2, .input_bytes = 1000, .output_bytes = 125000, .cut_before = 1},
                           {.host_ms = 4, .input_bytes = 125000, .output_bytes = 40, .cut_before = 1}};
    const rtl_link *g = rtl_link_preset("4g");
    assert_non_null(g);
    assert_true(g->up_mbps == 5.85 && g->down_mbps == 13.76 && g->alpha_up_mw == 438.39 &&
                g->alpha_down_mw == 51.97 && g->beta_mw == 1288.04);
    rtl_link k = *g;
    k.rtt_ms = 10;
    rtl_target t = {.device_factor = 3, .cloud_factor = 0.5, .device_mw = 2000, .wait_mw = 100};
    rtl_plan p = {.layers = 2, .on_cloud = {0, 1}};
    assert_int_equal(rtl_plan_evaluate(l, 2, &t, &k, &p, NULL), 0);
    double up = 125000 * 8 / (5.85 * 1e3), down = 40 * 8 / (13.76 * 1e3);
    double lat = 6 + up + 5 + 2 + down + 5;
    double mj = (2000 * 6 + (438.39 * 5.85 + 1288.04) * up + 1288.04 * 5 + 100 * 2 + (51.97 * 13.76 + 1288.04) * down +
                 1288.04 * 5) / 1e3;
    assert_true(fabs(p.latency_ms - lat) < 1e-9);
    assert_true(fabs(p.energy_mj - mj) < 1e-9);
    assert_int_equal(p.bytes_up, 125000);
    assert_int_equal(p.bytes_down, 40);
    assert_int_equal(p.transfers, 2);
    assert_true(fabs(p.cloud_ms - 2) < 1e-12);
    /* the device side uses the CPU-based time where it is known */
    l[0].host_cpu_ms = 1;
    assert_int_equal(rtl_plan_evaluate(l, 2, &t, &k, &p, NULL), 0);
    assert_true(fabs(p.device_ms - 3) < 1e-12);
    assert_true(fabs(p.latency_ms - (lat - 3)) < 1e-9);
}

static void bad_inputs(void **state)
{
    (void)state;
    rtl_layer_cost l[3] = {{.host_ms = 1, .input_bytes = 4, .output_bytes = 4, .cut_before = 1},
                           {.host_ms = 1, .input_bytes = 4, .output_bytes = 4, .cut_before = 0},
                           {.host_ms = 1, .input_bytes = 4, .output_bytes = 4, .cut_before = 1}};
    rtl_link k = *rtl_link_preset("wifi");
    rtl_target t = {.device_factor = 1, .cloud_factor = 1};
    rtl_plan p;
    rtl_err e;
    assert_int_equal(rtl_plan_split(l, 3, &t, &k, 1, &p, &e), -1);
    assert_non_null(strstr(e.msg, "no cut is possible"));
    assert_int_equal(rtl_plan_split(l, 3, &t, &k, 4, &p, &e), -1);
    t.device_factor = 0;
    assert_int_equal(rtl_plan_best(l, 3, &t, &k, RTL_GOAL_LATENCY, NULL, &p, &e), -1);
    assert_non_null(strstr(e.msg, "factors must be > 0"));
    t.device_factor = 1;
    k.up_mbps = 0;
    assert_int_equal(rtl_plan_best(l, 3, &t, &k, RTL_GOAL_LATENCY, NULL, &p, &e), -1);
    assert_null(rtl_link_preset("5g"));
    /* the best plan never moves at the impossible cut */
    k = *rtl_link_preset("wifi");
    t.device_factor = 1000;
    assert_int_equal(rtl_plan_best(l, 3, &t, &k, RTL_GOAL_LATENCY, NULL, &p, &e), 0);
    assert_int_equal(p.on_cloud[0], p.on_cloud[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shortest_path_is_optimal),
        cmocka_unit_test(budgets_are_exact),
        cmocka_unit_test(cost_by_hand),
        cmocka_unit_test(bad_inputs),
    };
    int rc = cmocka_run_group_tests_name("rtl_plan", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
