/* sched_testutil.h: the scheduler tests' option, task, scheduler and
 * budget makers (tests/unit/rtl_sched and tests/unit/rtl_sim). Include
 * after testutil_impl.h and rtl.h. */
#ifndef SCHED_TESTUTIL_H
#define SCHED_TESTUTIL_H

#include <stdio.h>

static inline rtl_sched_option opt(const char *id, double top1, double ms, double mj, double cloud_ms, uint64_t bytes)
{
    rtl_sched_option o = {.capacity = -1, .trunk = -1, .partner = -1, .top1 = top1, .device_ms = ms,
                          .device_mj = mj, .cloud_ms = cloud_ms, .bytes = bytes};
    snprintf(o.variant, sizeof o.variant, "%s", id);
    return o;
}

static inline int add_task(rtl_sched *s, const char *name, rtl_sched_option *o, size_t n)
{
    rtl_sched_task t = {.options = o, .n = n};
    snprintf(t.name, sizeof t.name, "%s", name);
    snprintf(t.task, sizeof t.task, "%s", name);
    rtl_err e;
    int k = rtl_sched_add_task(s, &t, &e);
    if (k < 0) fail_msg("%s", e.msg);
    return k;
}

static inline rtl_sched *new_sched(enum rtl_policy p)
{
    rtl_sched_config c = {.policy = p};
    rtl_err e;
    rtl_sched *s = rtl_sched_new(&c, &e);
    assert_non_null(s);
    return s;
}

static inline void set_budget(rtl_sched *s, double mj, double usd, double horizon, double now)
{
    rtl_sched_budget b = {.energy_mj = mj, .cloud_usd = usd, .horizon_s = horizon};
    assert_int_equal(rtl_sched_set_budget(s, &b, now, NULL), 0);
}

#endif
