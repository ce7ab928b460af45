/* sched_nest.c: NestDNN's runtime scheduler (the thesis, docs/papers.md;
 * section 3.4.3, L362-417) and the fixed knee model of its evaluation.
 *
 * Cost (3.2): C(m, u, v) = max(0, A_min(v) - A(m)) + alpha max(0, L(m)/u - L_max(v))
 * with A in percentage points and L in milliseconds (the thesis leaves the
 * units, and so alpha's scale, open: docs/targets.md 1.10). u is the compute
 * share of task v, allocated in units du = 1% by a greedy:
 *  - MinTotalCost (3.3): each unit goes to the (task, descendant) pair of
 *    the largest cost decrease. Fix: the text says "the smallest cost
 *    increase"; giving a task more compute never increases a cost, so the
 *    greedy step that lowers the sum most is the largest decrease, over
 *    (v, m_v) jointly.
 *  - MinMaxCost (3.4): the unit goes to the task of the highest cost,
 *    which then takes its best descendant m_v = argmin C(m, u_v, v).
 * Both respect the memory cap sum S(m_v) <= S_max (the thesis states it in
 * (3.3)/(3.4) but its greedy never uses it: a descendant that would break
 * it is not a candidate). Cost at u = 0 is infinite (L/u): every running
 * task first gets one unit (fix: the text starts "from scratch" without
 * saying how an empty share is costed). Options of a task: its nested
 * capacities when it has any (NestDNN's descendants), else all its options.
 *
 * Caching (L417): the thesis resumes from a cached partial allocation;
 * here a plan is cached per set of running tasks (and budget), and a set
 * seen before reuses its plan whole (a complete re-plan when it is new). */
#include "sched_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NEST_CACHE 32

struct nest_cache {
    uint64_t key[SCHED_MAX_TASKS / 64];
    int option[SCHED_MAX_TASKS];
    double share[SCHED_MAX_TASKS];
    int valid;
};

void sched_nest_free(rtl_sched *s) { free(s->ncache); }

void sched_nest_forget(rtl_sched *s)
{
    if (s->ncache) memset(s->ncache, 0, NEST_CACHE * sizeof *s->ncache);
}

static int uses(const rtl_sched_task *t, size_t o)
{
    int nested = 0;
    for (size_t i = 0; i < t->n; i++) nested |= t->options[i].capacity >= 0;
    return !nested || t->options[o].capacity >= 0;
}

/* Cost (3.2) of option m of task v with share u. */
static double cost(const rtl_sched *s, const rtl_sched_task *t, int m, double u)
{
    const rtl_sched_option *o = &t->options[m];
    double acc = fmax(0, 100 * (t->a_min - o->top1));
    if (u <= 0) return INFINITY;
    return acc + s->c.nest_alpha * fmax(0, o->device_ms / u - t->l_max_ms);
}

void sched_nest_plan(rtl_sched *s)
{
    s->nest_dirty = 0;
    int run[SCHED_MAX_TASKS], n = 0;
    for (size_t i = 0; i < s->ntasks; i++) {
        s->tasks[i].nest_option = -1;
        s->tasks[i].nest_share = 0;
        if (s->tasks[i].active) run[n++] = (int)i;
    }
    if (!n) /* nobody marked running: every task runs */
        for (size_t i = 0; i < s->ntasks; i++) run[n++] = (int)i;
    if (!n) return;
    uint64_t key[SCHED_MAX_TASKS / 64] = {0};
    for (int i = 0; i < n; i++) key[run[i] / 64] |= 1ull << (run[i] % 64);
    if (!s->ncache) s->ncache = calloc(NEST_CACHE, sizeof *s->ncache);
    if (s->ncache)
        for (int c = 0; c < NEST_CACHE; c++)
            if (s->ncache[c].valid && !memcmp(s->ncache[c].key, key, sizeof key)) {
                for (int i = 0; i < n; i++) {
                    s->tasks[run[i]].nest_option = s->ncache[c].option[run[i]];
                    s->tasks[run[i]].nest_share = s->ncache[c].share[run[i]];
                }
                return;
            }
    const int units = 100; /* du = 1% */
    int u[SCHED_MAX_TASKS], m[SCHED_MAX_TASKS];
    uint64_t cap = s->b.memory_bytes, used = 0;
    int left = units;
    /* one unit each, with the cheapest-cost descendant that fits memory */
    for (int i = 0; i < n; i++) {
        const rtl_sched_task *t = &s->tasks[run[i]].t;
        m[i] = -1;
        u[i] = left > 0 ? 1 : 0;
        left -= u[i];
        double best = INFINITY;
        for (size_t o = 0; o < t->n; o++) {
            if (!uses(t, o) || (cap && used + t->options[o].bytes > cap)) continue;
            double c = cost(s, t, (int)o, u[i] / (double)units);
            if (m[i] < 0 || c < best || (c == best && t->options[o].bytes < t->options[m[i]].bytes))
                best = c, m[i] = (int)o;
        }
        if (m[i] >= 0) used += t->options[m[i]].bytes;
    }
    while (left > 0) {
        int bi = -1, bm = -1;
        double bgain = -INFINITY;
        for (int i = 0; i < n; i++) {
            if (m[i] < 0) continue;
            const rtl_sched_task *t = &s->tasks[run[i]].t;
            double now = cost(s, t, m[i], u[i] / (double)units);
            uint64_t others = used - t->options[m[i]].bytes;
            if (sched_policy(s)->nest_max) {
                /* the task of the highest cost takes the unit */
                if (bi < 0 || now > bgain) bgain = now, bi = i;
                continue;
            }
            for (size_t o = 0; o < t->n; o++) {
                if (!uses(t, o) || (cap && others + t->options[o].bytes > cap)) continue;
                double gain = now - cost(s, t, (int)o, (u[i] + 1) / (double)units);
                /* ties (costs already 0): the more accurate descendant */
                if (gain > bgain + 1e-12 ||
                    (gain > bgain - 1e-12 && bi == i && t->options[o].top1 > t->options[bm].top1))
                    bgain = gain, bi = i, bm = (int)o;
            }
        }
        if (bi < 0) break;
        const rtl_sched_task *t = &s->tasks[run[bi]].t;
        u[bi]++;
        left--;
        if (sched_policy(s)->nest_max) {
            uint64_t others = used - t->options[m[bi]].bytes;
            double best = INFINITY;
            bm = m[bi];
            for (size_t o = 0; o < t->n; o++) {
                if (!uses(t, o) || (cap && others + t->options[o].bytes > cap)) continue;
                double c = cost(s, t, (int)o, u[bi] / (double)units);
                /* ties: the more accurate descendant */
                if (c < best || (c == best && t->options[o].top1 > t->options[bm].top1)) best = c, bm = (int)o;
            }
        }
        used = used - t->options[m[bi]].bytes + t->options[bm].bytes;
        m[bi] = bm;
    }
    struct nest_cache *slot = s->ncache ? &s->ncache[s->ncache_next++ % NEST_CACHE] : NULL;
    if (slot) {
        memset(slot, 0, sizeof *slot);
        memcpy(slot->key, key, sizeof key);
        slot->valid = 1;
    }
    for (int i = 0; i < n; i++) {
        s->tasks[run[i]].nest_option = m[i];
        s->tasks[run[i]].nest_share = u[i] / (double)units;
        if (slot) slot->option[run[i]] = m[i], slot->share[run[i]] = u[i] / (double)units;
    }
}

/* The knee of a task's accuracy-latency curve (device): on the Pareto
 * front (faster or more accurate), the point farthest from the chord
 * between its two ends, both axes scaled to 0..1 (the "kneedle" rule;
 * NestDNN's baseline is "the model located at the knee" of Fig 3.6,
 * which the thesis picks by eye). Among the nested capacities when the
 * task has any: the baseline is the same descendant run as a fixed model;
 * with `any`, among every standalone option (MCDNN's traces: the best
 * fixed model a device could ship, nested capacities included). */
int sched_knee(const rtl_sched_task *t, int any)
{
    int front[512], n = 0;
    for (size_t i = 0; i < t->n && n < 512; i++) {
        const rtl_sched_option *a = &t->options[i];
        if (a->context_n > 0 || a->trunk >= 0 || (!any && !uses(t, i))) continue; /* standalone only */
        int dominated = 0;
        for (size_t j = 0; j < t->n && !dominated; j++) {
            const rtl_sched_option *b = &t->options[j];
            if (j == i || b->context_n > 0 || b->trunk >= 0 || (!any && !uses(t, j))) continue;
            dominated = (b->device_ms <= a->device_ms && b->top1 >= a->top1) &&
                        (b->device_ms < a->device_ms || b->top1 > a->top1 || j < i);
        }
        if (!dominated) front[n++] = (int)i;
    }
    if (!n) return 0;
    int lo = front[0], hi = front[0];
    for (int i = 0; i < n; i++) {
        if (t->options[front[i]].device_ms < t->options[lo].device_ms) lo = front[i];
        if (t->options[front[i]].device_ms > t->options[hi].device_ms) hi = front[i];
    }
    double x0 = t->options[lo].device_ms, x1 = t->options[hi].device_ms;
    double y0 = t->options[lo].top1, y1 = t->options[hi].top1;
    if (x1 <= x0 || y1 <= y0) return hi;
    int best = hi;
    double bd = -1;
    for (int i = 0; i < n; i++) {
        double x = (t->options[front[i]].device_ms - x0) / (x1 - x0);
        double y = (t->options[front[i]].top1 - y0) / (y1 - y0);
        double d = y - x; /* distance above the chord y = x, up to a constant */
        if (d > bd) bd = d, best = front[i];
    }
    return best;
}
