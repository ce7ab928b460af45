/* sched.c: rtl_sched, one decision per request under live budgets.
 *
 * MCDNN's Algorithm 1 (MCDNN section 4.2,
 * docs/papers.md) as docs/design.md adopts it, the strawmen of its section 5.2 (device-only,
 * cloud-only, no-sharing, no-specialisation) and the fixed knee model of
 * NestDNN's evaluation; NestDNN's own policies are planned in sched_nest.c.
 *
 * The model cache has three locations (device, split, cloud). Device memory
 * holds the models cached on the device, the device fragments of split
 * models (split_frac of their bytes) and every trunk a cached head uses,
 * counted once; the cloud's memory is not limited. Eviction is LRU per
 * location (MCDNN's CACHEEVICT), among the models of other tasks.
 *
 * Budgets: memory, latency per request and connectivity are hard limits,
 * checked at every decision (a cached model that breaks them is not a hit),
 * so a budget set between two requests holds from the next one on. Energy
 * and cloud money are what is left for the horizon: the total is a hard
 * limit (never overrun: a request whose cost exceeds what is left is
 * refused), and MCDNN paces its per-request share (RESPERREQ). */
#include "sched_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the policy table: one row per policy, with its behaviour ---------------
 * (adding a policy: runtime-lite/README.md, "Adding a policy") */
static void decide_mcdnn(rtl_sched *s, struct sched_task *k, double now, uint64_t frame, rtl_sched_decision *d);
static void decide_knee(rtl_sched *s, struct sched_task *k, double now, uint64_t frame, rtl_sched_decision *d);
static void decide_nest(rtl_sched *s, struct sched_task *k, double now, uint64_t frame, rtl_sched_decision *d);

#define LOC(l) (1u << RTL_LOC_##l)
#define ANYWHERE (LOC(DEVICE) | LOC(SPLIT) | LOC(CLOUD))
static const struct sched_policy policies[RTL_POLICY_COUNT] = {
    /* {name, summary, locations, paced, planned}, shares trunks, specialised, nest_max, decide */
    [RTL_POLICY_MCDNN] = {{"mcdnn", "MCDNN Algorithm 1: per-request budgets, LRU paging, device/split/cloud",
                           ANYWHERE, 1, 0}, 1, 1, 0, decide_mcdnn},
    [RTL_POLICY_NEST_TOTAL] = {{"nest-total", "NestDNN MinTotalCost: greedy compute shares (du = 1%), capacities",
                                LOC(DEVICE), 0, 1}, 1, 1, 0, decide_nest},
    [RTL_POLICY_NEST_MAX] = {{"nest-max", "NestDNN MinMaxCost: greedy, the costliest task first",
                              LOC(DEVICE), 0, 1}, 1, 1, 1, decide_nest},
    [RTL_POLICY_DEVICE_ONLY] = {{"device-only", "strawman: the most accurate variant on the device, no pacing",
                                 LOC(DEVICE), 0, 0}, 1, 1, 0, decide_mcdnn},
    [RTL_POLICY_CLOUD_ONLY] = {{"cloud-only", "strawman: the most accurate variant on the cloud, no pacing",
                                LOC(CLOUD), 0, 0}, 1, 1, 0, decide_mcdnn},
    [RTL_POLICY_NO_SHARING] = {{"no-sharing", "MCDNN without sharing: every head runs and holds its own trunk",
                                ANYWHERE, 1, 0}, 0, 1, 0, decide_mcdnn},
    [RTL_POLICY_NO_SPECIAL] = {{"no-special", "MCDNN without specialised variants", ANYWHERE, 1, 0}, 1, 0, 0,
                               decide_mcdnn},
    [RTL_POLICY_KNEE] = {{"knee", "one fixed model per task (the knee of accuracy vs latency), on the device",
                          LOC(DEVICE), 0, 1}, 1, 1, 0, decide_knee},
};
#undef ANYWHERE
#undef LOC

const rtl_policy_info *rtl_policy_get(enum rtl_policy p)
{
    return (unsigned)p < RTL_POLICY_COUNT ? &policies[p].info : NULL;
}

int rtl_policy_find(const char *name)
{
    for (int p = 0; name && p < RTL_POLICY_COUNT; p++)
        if (!strcmp(policies[p].info.name, name)) return p;
    return -1;
}

const struct sched_policy *sched_policy(const rtl_sched *s)
{
    return &policies[s->c.policy]; /* checked by rtl_sched_new */
}

const char *rtl_loc_name(enum rtl_loc l)
{
    static const char *n[RTL_LOC_COUNT] = {"device", "split", "cloud"};
    return (unsigned)l < RTL_LOC_COUNT ? n[l] : "none";
}

rtl_sched *rtl_sched_new(const rtl_sched_config *c, rtl_err *err)
{
    if (!c || (unsigned)c->policy >= RTL_POLICY_COUNT) return rtl_errf(err, "scheduler: unknown policy"), NULL;
    if (c->usd_per_cloud_s < 0 || c->load_mj_per_mb < 0 || c->load_ms_per_mb < 0 || c->miss_ms < 0 ||
        c->camera_fps < 0 || c->context_window < 0)
        return rtl_errf(err, "scheduler: a negative setting (prices, load costs, miss latency, fps, window)"), NULL;
    rtl_sched *s = calloc(1, sizeof *s);
    if (!s) return rtl_errf(err, "scheduler: out of memory"), NULL;
    s->c = *c;
    if (s->c.usd_per_cloud_s == 0) s->c.usd_per_cloud_s = 1.8e-4; /* MCDNN section 5.2 (AWS GPU) */
    if (s->c.load_mj_per_mb == 0) s->c.load_mj_per_mb = 2;
    if (s->c.load_ms_per_mb == 0) s->c.load_ms_per_mb = 5;
    if (s->c.miss_ms == 0) s->c.miss_ms = 1000;
    if (s->c.nest_alpha < 0) s->c.nest_alpha = 0;
    if (s->c.camera_fps == 0) s->c.camera_fps = 30;
    if (s->c.context_window == 0) s->c.context_window = 100;
    s->b.energy_mj = -1;
    s->b.cloud_usd = -1;
    s->b.horizon_s = 36000;  /* MCDNN: T "initialized to 10 hours" */
    s->energy_left = -1;
    s->usd_left = -1;
    s->horizon_end = 36000;
    s->nest_dirty = 1;
    return s;
}

void rtl_sched_free(rtl_sched *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->ntasks; i++) {
        free(s->tasks[i].t.options);
        rtl_context_profiler_free(s->tasks[i].prof);
    }
    for (int l = 0; l < RTL_LOC_COUNT; l++) free(s->trunk_frame[l]);
    sched_nest_free(s);
    free(s->tasks);
    free(s->trunks);
    free(s);
}

int rtl_sched_add_trunk(rtl_sched *s, const rtl_sched_trunk *t, rtl_err *err)
{
    if (!s || !t) return rtl_errf(err, "scheduler: no trunk");
    if (!(t->device_ms >= 0) || !(t->device_mj >= 0))
        return rtl_errf(err, "scheduler: trunk %s: negative or unknown cost", t->variant);
    rtl_sched_trunk *n = realloc(s->trunks, (s->ntrunks + 1) * sizeof *n);
    if (!n) return rtl_errf(err, "scheduler: out of memory");
    s->trunks = n;
    for (int l = 0; l < RTL_LOC_COUNT; l++) {
        uint64_t *f = realloc(s->trunk_frame[l], (s->ntrunks + 1) * sizeof *f);
        if (!f) return rtl_errf(err, "scheduler: out of memory");
        s->trunk_frame[l] = f;
        f[s->ntrunks] = 0;
    }
    s->trunks[s->ntrunks] = *t;
    return (int)s->ntrunks++;
}

/* The context profiler of task k (context.c) when one of its options is
 * specialised: its levels are the options' distinct n. */
static int task_profiler(const rtl_sched *s, struct sched_task *k, rtl_err *err)
{
    for (size_t i = 0; i < k->t.n; i++) {
        uint32_t n = (uint32_t)k->t.options[i].context_n;
        int j = 0;
        while (j < k->nlev && k->lev_n[j] < n) j++;
        if (!n || (j < k->nlev && k->lev_n[j] == n)) continue;
        if (k->nlev == RTL_CONTEXT_MAX_LEVELS)
            return rtl_errf(err, "scheduler: task %s: more than %d different context n among its options", k->t.name,
                            RTL_CONTEXT_MAX_LEVELS);
        memmove(&k->lev_n[j + 1], &k->lev_n[j], (size_t)(k->nlev - j) * sizeof *k->lev_n);
        k->lev_n[j] = n;
        k->nlev++;
    }
    if (!k->nlev) return 0;
    rtl_context_params prm = {.classes = 16, .window = (uint32_t)s->c.context_window, .min_samples = 1};
    memcpy(prm.n, k->lev_n, sizeof prm.n);
    prm.p[0] = 1; /* unused: the scheduler reads the shares, each option holds its own p */
    k->prof = rtl_context_profiler_new(&prm, err);
    k->p_dirty = 1;
    return k->prof ? 0 : rtl_err_prefix(err, "scheduler: task %s", k->t.name);
}

int rtl_sched_add_task(rtl_sched *s, const rtl_sched_task *t, rtl_err *err)
{
    if (!s || !t || !t->n || !t->options) return rtl_errf(err, "scheduler: a task needs at least one option");
    if (s->ntasks >= SCHED_MAX_TASKS) return rtl_errf(err, "scheduler: more than %d tasks", SCHED_MAX_TASKS);
    for (size_t i = 0; i < t->n; i++) {
        const rtl_sched_option *o = &t->options[i];
        if (!(o->top1 >= 0 && o->top1 <= 1) || !(o->device_ms > 0) || !(o->device_mj >= 0) ||
            !(o->split_frac >= 0 && o->split_frac < 1) || isnan(o->cloud_ms))
            return rtl_errf(err, "scheduler: task %s, option %s: accuracy outside 0..1, or a latency, energy or "
                                 "split fraction out of range (latency must be > 0)", t->name, o->variant);
        if (o->trunk >= (int)s->ntrunks || o->trunk < -1)
            return rtl_errf(err, "scheduler: task %s, option %s: trunk %d was not added", t->name, o->variant,
                            o->trunk);
        if (o->context_n < 0 || o->context_n > RTL_CONTEXT_MAX_N ||
            (o->context_n && !(o->context_p > 0 && o->context_p <= 1)) ||
            o->partner >= (int)t->n || o->partner < -1 || o->partner == (int)i ||
            o->context_nclasses > RTL_CONTEXT_MAX_N || (o->context_nclasses && !o->context_n) ||
            !(fabs(o->gain_in) <= 1) || !(fabs(o->gain_out) <= 1))
            return rtl_errf(err, "scheduler: task %s, option %s: context (n 1..%d, p in (0,1], classes only with n), "
                                 "gains (-1..1) or partner out of range", t->name, o->variant, RTL_CONTEXT_MAX_N);
    }
    struct sched_task *n = realloc(s->tasks, (s->ntasks + 1) * sizeof *n);
    if (!n) return rtl_errf(err, "scheduler: out of memory");
    s->tasks = n;
    struct sched_task *k = &s->tasks[s->ntasks];
    memset(k, 0, sizeof *k);
    k->t = *t;
    if (task_profiler(s, k, err) != 0) return -1;
    k->t.options = malloc(t->n * sizeof *t->options);
    if (!k->t.options) {
        rtl_context_profiler_free(k->prof);
        return rtl_errf(err, "scheduler: out of memory");
    }
    memcpy(k->t.options, t->options, t->n * sizeof *t->options);
    for (int l = 0; l < RTL_LOC_COUNT; l++) k->slot[l].option = -1;
    k->current = -1;
    k->first_seen = SCHED_NO_TIME;
    k->knee = sched_knee(&k->t, s->c.knee_any);
    k->nest_option = -1;
    k->p_dirty = 1;
    s->nest_dirty = 1;
    return (int)s->ntasks++;
}

size_t rtl_sched_task_count(const rtl_sched *s) { return s ? s->ntasks : 0; }
const rtl_sched_task *rtl_sched_task_at(const rtl_sched *s, size_t i)
{
    return s && i < s->ntasks ? &s->tasks[i].t : NULL;
}

int rtl_sched_set_budget(rtl_sched *s, const rtl_sched_budget *b, double now, rtl_err *err)
{
    if (!s || !b) return rtl_errf(err, "scheduler: no budget");
    if (b->latency_ms < 0 || !(b->horizon_s > 0) || b->link_factor < 0 || isnan(b->energy_mj) || isnan(b->cloud_usd))
        return rtl_errf(err, "scheduler: budget out of range (latency >= 0, horizon > 0 seconds, link factor >= 0)");
    s->b = *b;
    if (s->b.link_factor == 0) s->b.link_factor = 1;
    s->energy_left = b->energy_mj;
    s->usd_left = b->cloud_usd;
    s->horizon_end = now + b->horizon_s;
    s->nest_dirty = 1;
    sched_nest_forget(s); /* cached plans were made under the old budget */
    return 0;
}

void rtl_sched_get_budget(const rtl_sched *s, rtl_sched_budget *b)
{
    *b = s->b;
    b->energy_mj = s->energy_left;
    b->cloud_usd = s->usd_left;
}

int rtl_sched_set_goal(rtl_sched *s, int task, double a_min, double l_max_ms, rtl_err *err)
{
    if (!s || task < 0 || (size_t)task >= s->ntasks) return rtl_errf(err, "scheduler: no task %d", task);
    if (!(a_min >= 0 && a_min <= 1) || !(l_max_ms >= 0))
        return rtl_errf(err, "scheduler: task %s: A_min must be in 0..1 and L_max >= 0 ms", s->tasks[task].t.name);
    s->tasks[task].t.a_min = a_min;
    s->tasks[task].t.l_max_ms = l_max_ms;
    s->nest_dirty = 1;
    sched_nest_forget(s);
    return 0;
}

int rtl_sched_set_active(rtl_sched *s, int task, int active, rtl_err *err)
{
    if (!s || task < 0 || (size_t)task >= s->ntasks) return rtl_errf(err, "scheduler: no task %d", task);
    if (s->tasks[task].active != !!active) s->nest_dirty = 1;
    s->tasks[task].active = !!active;
    return 0;
}

/* ---- the context profiler (MCDNN section 4.1.2: (n,p)-dominated) -------- */

/* Adds the class of a request to k's window (context.c), its classes grown
 * to hold cls. */
static void observe(struct sched_task *k, int cls)
{
    if (cls < 0 || !k->prof) return;
    /* the profiler only informs: a failed growth skips the request */
    if (rtl_context_grow(k->prof, (uint32_t)cls + 16, NULL) != 0) return;
    if (rtl_context_observe(k->prof, (uint32_t)cls, NULL) == 0) k->p_dirty = 1;
}

/* Share of the window held by the n most frequent classes (n: one of the
 * task's options' context_n). */
static double top_share(struct sched_task *k, int n)
{
    if (!k->prof) return 0;
    if (k->p_dirty) {
        rtl_context r;
        rtl_profile_context(k->prof, &r, NULL);
        memcpy(k->lev_share, r.top_share, sizeof k->lev_share);
        k->p_dirty = 0;
    }
    for (int j = 0; j < k->nlev; j++)
        if (k->lev_n[j] == (uint32_t)n) return k->lev_share[j];
    return 0;
}

/* The share of k's window in option op's context: its classes' share
 * when it lists them, else the top context_n classes' share. */
static double context_share(struct sched_task *k, const rtl_sched_option *op)
{
    if (op->context_nclasses && k->prof) return rtl_context_share(k->prof, op->context_classes, op->context_nclasses);
    return top_share(k, op->context_n);
}

/* Option o's accuracy now: a cascade whose classes are known is its
 * partner's plus its measured gains, weighed by its classes' share q of the
 * window (in-context frames gain gain_in, the others gain_out); any other
 * option its top1. */
static double option_top1(const struct sched_task *k, int o)
{
    const rtl_sched_option *op = &k->t.options[o];
    if (!op->context_nclasses || op->partner < 0) return op->top1;
    double q = context_share((struct sched_task *)k, op);
    double a = k->t.options[op->partner].top1 + q * op->gain_in + (1 - q) * op->gain_out;
    return a < 0 ? 0 : a > 1 ? 1 : a;
}

/* ---- costs ------------------------------------------------------------- */

static int trunk_resident(const rtl_sched *s, int trunk, int skip_task)
{
    for (size_t i = 0; i < s->ntasks; i++) {
        if ((int)i == skip_task) continue;
        for (int l = RTL_LOC_DEVICE; l <= RTL_LOC_SPLIT; l++) {
            int o = s->tasks[i].slot[l].option;
            if (o >= 0 && s->tasks[i].t.options[o].trunk == trunk) return 1;
        }
    }
    return 0;
}

static void one_cost(const rtl_sched *s, const rtl_sched_option *o, enum rtl_loc l, uint64_t frame, int skip_task,
                     struct sched_cost *c)
{
    double cl = o->cloud_ms * s->b.link_factor;
    double t = o->split_frac;
    memset(c, 0, sizeof *c);
    switch (l) {
    case RTL_LOC_DEVICE:
        c->ms = o->device_ms, c->mj = o->device_mj, c->bytes = o->bytes;
        break;
    case RTL_LOC_SPLIT:
        /* t_n: the device fragment's share of the time (Algorithm 1 line 27) */
        c->ms = t * o->device_ms + (1 - t) * cl, c->mj = t * o->device_mj;
        c->usd = (1 - t) * cl / 1000 * s->c.usd_per_cloud_s;
        c->bytes = (uint64_t)(t * (double)o->bytes);
        break;
    default:
        c->ms = cl, c->usd = cl / 1000 * s->c.usd_per_cloud_s;
        break;
    }
    if (o->trunk >= 0) {
        const rtl_sched_trunk *tr = &s->trunks[o->trunk];
        enum rtl_loc tl = l == RTL_LOC_CLOUD ? RTL_LOC_CLOUD : RTL_LOC_DEVICE; /* a split head reads a device trunk */
        int alone = !sched_policy(s)->shares_trunks; /* every head runs and holds its own trunk */
        if (!alone && s->trunk_frame[tl][o->trunk] == frame + 1) {
            c->shared = 1;  /* MCDNN's sharing: the trunk already ran for this frame */
        } else if (tl == RTL_LOC_CLOUD) {
            c->ms += tr->cloud_ms * s->b.link_factor;
            c->usd += tr->cloud_ms * s->b.link_factor / 1000 * s->c.usd_per_cloud_s;
        } else {
            c->ms += tr->device_ms, c->mj += tr->device_mj;
        }
        if (tl == RTL_LOC_DEVICE && (alone || !trunk_resident(s, o->trunk, skip_task))) c->bytes += tr->bytes;
    }
}

void sched_cost(const rtl_sched *s, const struct sched_task *k, int o, enum rtl_loc l, uint64_t frame,
                struct sched_cost *c)
{
    const rtl_sched_option *op = &k->t.options[o];
    int self = (int)(k - s->tasks);
    one_cost(s, op, l, frame, self, c);
    if (op->context_n > 0 && op->partner >= 0) {
        /* the cascade: inputs the specialised model calls "other" go on to
         * the partner, a (1 - p) share of them (p: the profiler's window) */
        struct sched_cost pc;
        double miss = 1 - context_share((struct sched_task *)k, op);
        one_cost(s, &k->t.options[op->partner], l, frame, self, &pc);
        c->ms += miss * pc.ms, c->mj += miss * pc.mj, c->usd += miss * pc.usd;
        c->bytes += pc.bytes;
    }
}

/* ---- the cache ---------------------------------------------------------- */

static uint64_t device_bytes(const rtl_sched *s)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < s->ntasks; i++)
        for (int l = RTL_LOC_DEVICE; l <= RTL_LOC_SPLIT; l++) {
            int o = s->tasks[i].slot[l].option;
            if (o < 0) continue;
            const rtl_sched_option *op = &s->tasks[i].t.options[o];
            uint64_t b = l == RTL_LOC_SPLIT ? (uint64_t)(op->split_frac * (double)op->bytes) : op->bytes;
            if (op->context_n > 0 && op->partner >= 0) b += s->tasks[i].t.options[op->partner].bytes;
            if (op->trunk >= 0 && !sched_policy(s)->shares_trunks) b += s->trunks[op->trunk].bytes;
            sum += b;
        }
    for (size_t t = 0; t < s->ntrunks && sched_policy(s)->shares_trunks; t++)
        if (trunk_resident(s, (int)t, -1)) sum += s->trunks[t].bytes;
    return sum;
}

/* MCDNN's CACHEINSERT: evict LRU models of other tasks from the device
 * side until `need` more bytes fit, then load. 0, or -1 when they cannot
 * fit (nothing is evicted then). */
static int cache_insert(rtl_sched *s, struct sched_task *k, enum rtl_loc l, int o, double now,
                        rtl_sched_decision *d)
{
    struct sched_slot *sl = &k->slot[l];
    int was_in = sl->option >= 0;
    if (l != RTL_LOC_CLOUD && s->b.memory_bytes) {
        int old = sl->option;
        sl->option = o; /* count the new model in place of the task's old one here */
        uint64_t used = device_bytes(s);
        while (used > s->b.memory_bytes) {
            struct sched_slot *lru = NULL;
            for (size_t i = 0; i < s->ntasks; i++)
                for (int m = RTL_LOC_DEVICE; m <= RTL_LOC_SPLIT; m++) {
                    struct sched_slot *c = &s->tasks[i].slot[m];
                    if (c->option < 0 || c == sl) continue;
                    if (!lru || c->last_used < lru->last_used) lru = c;
                }
            if (!lru) {
                sl->option = old;
                return -1;
            }
            lru->option = -1;
            if (d) d->paged_out++;
            used = device_bytes(s);
        }
    }
    if (sl->option != o || sl->loaded_at == 0) {
        sl->loaded_at = now;
        sl->since = 0;
    }
    if (!was_in) { /* n enters this cache (a variant swap keeps n in it) */
        sl->entered = now;
        sl->asked = 0;
    }
    sl->option = o;
    sl->last_used = now;
    k->current = l;
    return 0;
}

/* ---- feasibility -------------------------------------------------------- */

enum { WHY_LATENCY = 1, WHY_MEMORY = 2, WHY_ENERGY = 4, WHY_CASH = 8, WHY_OFFLINE = 16, WHY_CANNOT = 32,
       WHY_CONTEXT = 64, WHY_MISS = 128, WHY_ESTIMATE = 256 };

/* Whether option o's device latency is only a roofline estimate (a lower
 * bound) that may not meet the latency budget (rtl_sched_config). */
static int only_estimated(const rtl_sched *s, const rtl_sched_option *o)
{
    return !s->c.estimates_meet_budgets && !strcmp(o->source, "estimate");
}

/* The hard limits: 0 when option o can run at l now (load_mj: the
 * energy to page it in first), else WHY_ bits. */
static int hard_ok(const rtl_sched *s, const struct sched_task *k, int o, enum rtl_loc l,
                   const struct sched_cost *c, double load_mj)
{
    const rtl_sched_option *op = &k->t.options[o];
    int why = 0;
    if (l != RTL_LOC_DEVICE && (s->b.disconnected)) why |= WHY_OFFLINE;
    if (l != RTL_LOC_DEVICE && op->cloud_ms < 0) why |= WHY_CANNOT;
    if (l == RTL_LOC_SPLIT && op->split_frac <= 0) why |= WHY_CANNOT;
    if (s->b.latency_ms > 0 && c->ms > s->b.latency_ms) why |= WHY_LATENCY;
    else if (s->b.latency_ms > 0 && l != RTL_LOC_CLOUD && only_estimated(s, op)) why |= WHY_ESTIMATE;
    if (l != RTL_LOC_CLOUD && s->b.memory_bytes && c->bytes > s->b.memory_bytes) why |= WHY_MEMORY;
    if (s->energy_left >= 0 && c->mj + load_mj > s->energy_left) why |= WHY_ENERGY; /* paging in costs too */
    if (s->usd_left >= 0 && c->usd > s->usd_left) why |= WHY_CASH;
    return why;
}

static int excluded(const rtl_sched *s, struct sched_task *k, int o)
{
    const rtl_sched_option *op = &k->t.options[o];
    if (op->context_n > 0) {
        if (!sched_policy(s)->specialised) return 1;
        /* a specialised model only serves while the window is (n,p)-dominated */
        if (context_share(k, op) < op->context_p) return WHY_CONTEXT;
    }
    return 0;
}

static double load_ms(const rtl_sched *s, uint64_t bytes) { return (double)bytes / 1e6 * s->c.load_ms_per_mb; }
static double load_mj(const rtl_sched *s, uint64_t bytes) { return (double)bytes / 1e6 * s->c.load_mj_per_mb; }

/* ---- MCDNN: Algorithm 1 ------------------------------------------------- */

/* f_i: requests per second of a task's model at l since it was paged in
 * (Algorithm 1, comment of line 23). Fix: the printed f_n "has no value
 * before the first load"; a task with no model at l gets its request rate
 * since its first request. */
static double freq(const struct sched_task *k, enum rtl_loc l, double now)
{
    const struct sched_slot *sl = &k->slot[l];
    /* Fix: f_n counts the requests for model n (the task, wherever they
     * ran) since n entered this cache, and a variant swap (CACHEUPDATE
     * backing a variant in or out) keeps n in it. Counted per variant from
     * its page-in and only where it ran, the rate restarts at every swap
     * and is measured over a few requests of one burst (a face encounter),
     * and a task served from the cloud for a while sees its device rate
     * fall; the per-request budgets then swing with the bursts, while
     * RESPERREQ's sum_i e_i f_i T = e needs the rate of the horizon. The
     * reload damping still times dt_n from the latest page-in. */
    if (sl->option >= 0 && sl->asked > 0) return (double)sl->asked / fmax(1.0, now - sl->entered);
    if (k->first_seen == SCHED_NO_TIME) return 1;
    return (double)k->requests / fmax(1.0, now - k->first_seen);
}

/* What task t spends per request at l (energy at the device, money at the
 * cloud) with the most accurate option whose cost is within `allot`; -1
 * when none is. The static cost of each option (its trunk unshared; the
 * specialised options, which serve only in their context, left out): an
 * estimate, for the water-filling below. */
static double spend_within(const rtl_sched *s, const struct sched_task *t, enum rtl_loc l, double allot)
{
    double best_a = -1, best_c = -1;
    for (size_t o = 0; o < t->t.n; o++) {
        const rtl_sched_option *op = &t->t.options[o];
        if (op->context_n > 0) continue;
        double c;
        if (l == RTL_LOC_DEVICE) {
            c = op->device_mj + (op->trunk >= 0 ? s->trunks[op->trunk].device_mj : 0);
        } else {
            if (op->cloud_ms < 0) continue;
            c = (op->cloud_ms + (op->trunk >= 0 ? s->trunks[op->trunk].cloud_ms : 0)) * s->b.link_factor / 1000 *
                s->c.usd_per_cloud_s;
        }
        if (c > allot) continue;
        if (op->top1 > best_a || (op->top1 == best_a && c < best_c)) best_a = op->top1, best_c = c;
    }
    return best_c;
}

/* RESPERREQ(r, l) = (r - dr_n T / dt_n) f_n / (T sum_{i in Cache_l} f_i^2)
 * (line 24), for l = device (energy) or cloud (money). r < 0: no budget
 * (infinite). */
static double resperreq(const rtl_sched *s, const struct sched_task *k, double r, enum rtl_loc l, double now,
                        double dr_n)
{
    if (r < 0) return INFINITY;
    double T = fmax(1.0, s->horizon_end - now);
    double fn = freq(k, l, now);
    /* dt_n: time since n was loaded at l, infinite (the term is 0) when n
     * is not cached there */
    const struct sched_slot *sl = &k->slot[l];
    double reload = sl->option >= 0 && now > sl->loaded_at ? dr_n * T / (now - sl->loaded_at) : 0;
    double left = r - reload;
    /* Cache_l: the models whose requests l serves now.
     * Fix: the sum over Cache_l is 0 when n is the first model there
     * (division by zero); n itself always counts, cached or not.
     * Fix: a task keeps a copy at the location it left (its "re-located"
     * model, section 4.2), and counting that copy would split one task's
     * requests over two locations' budgets as if each served them all;
     * a model counts where its requests go now (its latest insert). */
    size_t n = s->ntasks < SCHED_MAX_TASKS ? s->ntasks : SCHED_MAX_TASKS;
    double f[SCHED_MAX_TASKS];
    unsigned char in[SCHED_MAX_TASKS];
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        const struct sched_task *t = &s->tasks[i];
        in[i] = t == k || (t->slot[l].option >= 0 && t->current == (int)l);
        f[i] = in[i] ? freq(t, l, now) : 0;
        sum += f[i] * f[i];
    }
    /* Fix: the paper's allotments e_i = e f_i / (T sum f^2) "sum to e in
     * total" (sum_i e_i f_i T = e) only if every model spends its whole
     * allotment; a model whose most accurate option within it costs less
     * leaves the rest unspent, where it piles up until the horizon's end
     * and is spent there at once on the largest variants (on a catalog
     * whose accuracy per millijoule is concave, the worst time to spend
     * it). Water-filling keeps the paper's rule and its total: a model
     * that spends less than its allotment is counted at what it spends,
     * and the rest is shared among the others in proportion to f_i, until
     * no allotment changes. Unchanged when every model spends its share. */
    for (size_t round = 0; round < n && sum > 0 && left > 0; round++) {
        double unit = left / (T * sum), cut = 0, cut_f2 = 0;
        for (size_t i = 0; i < n; i++) {
            const struct sched_task *t = &s->tasks[i];
            if (!in[i] || t == k) continue;
            double allot = unit * f[i], c = spend_within(s, t, l, allot);
            if (c >= 0 && c < allot) cut += c * f[i] * T, cut_f2 += f[i] * f[i], in[i] = 0;
        }
        if (cut_f2 == 0) break;
        left -= cut, sum -= cut_f2;
    }
    double e = sum > 0 ? left * fn / (T * sum) : 0;
    return e > 0 ? e : 0;
}

struct pick {
    int option;
    enum rtl_loc loc;
    double top1;
    struct sched_cost c;
};

/* Whether s's policy may use location l. */
static int loc_allowed(const rtl_sched *s, enum rtl_loc l)
{
    return (sched_policy(s)->info.locations >> l) & 1u;
}

/* Is c cheaper than b (energy first, then money, then time)? */
static int cheaper(const struct sched_cost *c, const struct sched_cost *b)
{
    if (c->mj != b->mj) return c->mj < b->mj;
    if (c->usd != b->usd) return c->usd < b->usd;
    return c->ms < b->ms;
}

/* CATALOGLOOKUPRES and CATALOGLOOKUPACC (lines 31-39, 16) for one
 * location: the most accurate option within the per-request budgets
 * (e_d, c_c: the device's energy and the cloud's money per request;
 * INFINITY: unpaced) and the hard limits. A split option gets the pair
 * e_s, c_s = e_d t_n, c_c (1 - t_n) (line 27) with its own t_n.
 * Fix: the printed a_l = min(a*_l, a_l) caps the accuracy on a miss, but
 * the variant then looked up by that accuracy may be one that cannot load
 * at acceptable miss latency, or one over the budget; here one option must
 * meet both. Fix: line 16 looks a variant up by accuracy alone (ties are
 * ambiguous): among equally accurate options, the cheapest. */
static int best_at(rtl_sched *s, struct sched_task *k, enum rtl_loc l, double e_d, double c_c, int miss,
                   uint64_t frame, struct pick *out, int *why)
{
    int found = 0;
    for (size_t o = 0; o < k->t.n; o++) {
        int x = excluded(s, k, (int)o);
        if (x) {
            if (x == WHY_CONTEXT) *why |= x;
            continue;
        }
        struct sched_cost co;
        sched_cost(s, k, (int)o, l, frame, &co);
        int load = k->slot[l].option != (int)o;
        double lm = load ? load_ms(s, co.bytes) : 0;
        int w = hard_ok(s, k, (int)o, l, &co, load && l != RTL_LOC_CLOUD ? load_mj(s, co.bytes) : 0);
        if (w) {
            *why |= w;
            continue;
        }
        if (miss && lm + co.ms > s->c.miss_ms) {
            *why |= WHY_MISS;
            continue;
        }
        double t = k->t.options[o].split_frac;
        double e = l == RTL_LOC_DEVICE ? e_d : l == RTL_LOC_SPLIT ? e_d * t : INFINITY;
        double c = l == RTL_LOC_CLOUD ? c_c : l == RTL_LOC_SPLIT ? c_c * (1 - t) : INFINITY;
        if (co.mj > e || co.usd > c) continue; /* over the per-request budget */
        double a = option_top1(k, (int)o);
        if (!found || a > out->top1 || (a == out->top1 && cheaper(&co, &out->c))) {
            out->option = (int)o, out->loc = l, out->top1 = a, out->c = co;
            found = 1;
        }
    }
    return found;
}

static void refuse(rtl_sched *s, struct sched_task *k, int why, rtl_sched_decision *d)
{
    char buf[160] = "";
    size_t n = 0;
#define WHY(bit, text) \
    if ((why & (bit)) && n < sizeof buf) n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? "; " : "", text)
    WHY(WHY_ESTIMATE, "the latency budget is met only by roofline lower bounds, never measured (rtl profile "
                      "measures them)");
    WHY(WHY_LATENCY, "the latency budget is below every option's latency");
    WHY(WHY_MEMORY, "the memory budget is below every option's size");
    WHY(WHY_ENERGY, "the device energy budget is spent");
    WHY(WHY_CASH, "the cloud budget is spent");
    WHY(WHY_OFFLINE, "the cloud is disconnected");
    WHY(WHY_MISS, "no option loads within the acceptable miss latency");
#undef WHY
    if (!n) snprintf(buf, sizeof buf, "no option fits the budgets");
    d->option = -1;
    if (snprintf(d->reason, sizeof d->reason, "task %s: refused: %s", k->t.name, buf) >= (int)sizeof d->reason) {
        /* cut short: the reasons are listed in a fixed order, the first kept */
    }
    (void)s;
}

static void charge(rtl_sched *s, struct sched_task *k, const struct pick *p, double now, uint64_t frame,
                   rtl_sched_decision *d, int hit)
{
    d->option = p->option;
    d->loc = p->loc;
    d->top1 = p->top1;
    d->latency_ms = p->c.ms;
    d->energy_mj = p->c.mj;
    d->cloud_usd = p->c.usd;
    d->hit = hit;
    d->shared_trunk = p->c.shared;
    const rtl_sched_option *op = &k->t.options[p->option];
    snprintf(d->source, sizeof d->source, "%s", p->loc == RTL_LOC_CLOUD ? "estimate" : op->source);
    if (op->trunk >= 0) {
        enum rtl_loc tl = p->loc == RTL_LOC_CLOUD ? RTL_LOC_CLOUD : RTL_LOC_DEVICE;
        s->trunk_frame[tl][op->trunk] = frame + 1;
    }
    if (s->energy_left >= 0) s->energy_left = fmax(0, s->energy_left - d->energy_mj);
    if (s->usd_left >= 0) s->usd_left = fmax(0, s->usd_left - d->cloud_usd);
    struct sched_slot *sl = &k->slot[p->loc];
    sl->last_used = now;
    sl->since++;
}

/* Pages option o in at l for task k (charging the load energy), when it
 * is not there yet; returns the load time. */
static double page_in(rtl_sched *s, struct sched_task *k, enum rtl_loc l, int o, const struct sched_cost *c,
                      double now, rtl_sched_decision *d)
{
    int old = k->slot[l].option;
    if (old == o) {
        k->current = l;
        return 0;
    }
    if (cache_insert(s, k, l, o, now, d) != 0) return -1;
    if (l == RTL_LOC_CLOUD) return 0; /* the cloud's loads are its own */
    d->paged_in++;
    uint64_t bytes = c->bytes;
    const rtl_sched_option *n = &k->t.options[o], *p = old >= 0 ? &k->t.options[old] : NULL;
    if (p && n->capacity > 0 && p->capacity > 0 && !strcmp(n->variant, p->variant))
        /* one nested model: a larger capacity pages in only the filters it
         * adds to the one in memory, a smaller one only drops some
         * (NestDNN section 3.3's model switching; freeze-&-grow nests them) */
        bytes = n->bytes > p->bytes ? n->bytes - p->bytes : 0;
    double mj = load_mj(s, bytes), ms = load_ms(s, bytes);
    if (s->energy_left >= 0) s->energy_left = fmax(0, s->energy_left - mj);
    d->energy_mj += mj;
    d->load_mj += mj, d->load_ms += ms;
    return ms;
}

static void decide_mcdnn(rtl_sched *s, struct sched_task *k, double now, uint64_t frame, rtl_sched_decision *d)
{
    int why = 0;
    /* CACHELOOKUP(n) (line 2): the task's latest model, if the hard limits
     * of now still allow it (else it is no hit: budgets hold from the next
     * request on), else another copy it still has cached. */
    int hit_loc = -1;
    struct pick hp = {0};
    for (int pass = 0; pass < 2 && hit_loc < 0; pass++)
        for (int l = 0; l < RTL_LOC_COUNT; l++) {
            if ((pass == 0) != (l == k->current) || !loc_allowed(s, (enum rtl_loc)l)) continue;
            int o = k->slot[l].option;
            if (o < 0 || excluded(s, k, o)) continue;
            struct sched_cost c;
            sched_cost(s, k, o, (enum rtl_loc)l, frame, &c);
            if (hard_ok(s, k, o, (enum rtl_loc)l, &c, 0)) continue;
            hp.option = o, hp.loc = (enum rtl_loc)l, hp.top1 = option_top1(k, o), hp.c = c;
            hit_loc = l;
            break;
        }
    /* CALCPERREQUESTBUDGETS (lines 21-29). dr_n: the energy to load n's
     * current device model (money: the cloud's loads are free). */
    double e = s->energy_left, c = s->usd_left;
    int cur_dev = k->slot[RTL_LOC_DEVICE].option;
    double dr = cur_dev >= 0 ? load_mj(s, k->t.options[cur_dev].bytes) : 0;
    double e_d = resperreq(s, k, e, RTL_LOC_DEVICE, now, dr);
    /* Fix: line 25 names the cloud budget c_d; it is c_c, the cloud's */
    double c_c = resperreq(s, k, c, RTL_LOC_CLOUD, now, 0);
    int paced = sched_policy(s)->info.paced;
    if (!paced) e_d = c_c = INFINITY; /* the strawmen spend without pacing */
    /* CATALOGLOOKUPRES (line 14) per location; m = nil on a miss bounds
     * the load latency (lines 35-37). Fix: line 13 returns e_d, ec_s, c_c
     * and line 14 reads e_cs where line 28 returns (e_s, c_s): the split
     * budgets are the pair (e_d t_n, c_c (1 - t_n)), t_n per option, so
     * best_at applies them option by option. */
    struct pick best = {.option = -1};
    for (int l = 0; l < RTL_LOC_COUNT; l++) {
        if (!loc_allowed(s, (enum rtl_loc)l)) continue;
        struct pick p;
        int ok = best_at(s, k, (enum rtl_loc)l, e_d, c_c, hit_loc < 0, frame, &p, &why);
        /* line 15: the location of the highest accuracy (ties: the one
         * cached now, then device before split before cloud) */
        if (ok && (best.option < 0 || p.top1 > best.top1 || (p.top1 == best.top1 && l == hit_loc && best.loc != hit_loc)))
            best = p;
    }
    if (hit_loc >= 0) {
        /* EXEC the cached model (line 3), then CACHEUPDATE in the
         * background (line 4): the recommendation is paged in for the
         * next request. Fix: line 9 returns nothing; the result is r. */
        charge(s, k, &hp, now, frame, d, 1);
        if (best.option >= 0 && (best.option != hp.option || best.loc != hp.loc) &&
            (s->energy_left < 0 || best.loc == RTL_LOC_CLOUD || load_mj(s, best.c.bytes) <= s->energy_left)) {
            rtl_sched_decision bg = {0};
            if (page_in(s, k, best.loc, best.option, &best.c, now, &bg) >= 0) {
                d->paged_in += bg.paged_in, d->paged_out += bg.paged_out;
                d->energy_mj += bg.energy_mj, d->load_mj += bg.load_mj; /* in the background: no load time */
            }
        }
        return;
    }
    if (best.option < 0) {
        /* The paper leaves open a request that no variant serves within
         * its per-request budget (CL*2A gives no accuracy): rather than
         * drop it, the cheapest option the hard limits and the totals
         * allow runs (the totals are never overrun). */
        for (int l = 0; l < RTL_LOC_COUNT && paced; l++) {
            if (!loc_allowed(s, (enum rtl_loc)l)) continue;
            for (size_t o = 0; o < k->t.n; o++) {
                if (excluded(s, k, (int)o)) continue;
                struct sched_cost co;
                sched_cost(s, k, (int)o, (enum rtl_loc)l, frame, &co);
                int load = k->slot[l].option != (int)o && l != RTL_LOC_CLOUD;
                if (hard_ok(s, k, (int)o, (enum rtl_loc)l, &co, load ? load_mj(s, co.bytes) : 0)) continue;
                if (load_ms(s, co.bytes) + co.ms > s->c.miss_ms) continue;
                /* cheapest relative to what is left of each budget */
                double rel = (s->energy_left > 0 ? co.mj / s->energy_left : 0) +
                             (s->usd_left > 0 ? co.usd / s->usd_left : 0);
                double brel = best.option < 0 ? INFINITY
                                               : (s->energy_left > 0 ? best.c.mj / s->energy_left : 0) +
                                                     (s->usd_left > 0 ? best.c.usd / s->usd_left : 0);
                double a = option_top1(k, (int)o);
                if (best.option < 0 || rel < brel || (rel == brel && a > best.top1))
                    best.option = (int)o, best.loc = (enum rtl_loc)l, best.top1 = a, best.c = co;
            }
        }
        if (best.option < 0) return refuse(s, k, why, d);
    }
    /* a miss: CACHEINSERT (line 17) and EXEC (line 7), with the load time */
    double lm = page_in(s, k, best.loc, best.option, &best.c, now, d);
    if (lm < 0) return refuse(s, k, WHY_MEMORY, d);
    double load_e = d->energy_mj;
    charge(s, k, &best, now, frame, d, 0);
    d->latency_ms += lm;
    d->energy_mj += load_e;
}

/* The knee model and NestDNN's plan: one option on the device with a
 * compute share; refused when it cannot run under the hard limits. */
static void decide_fixed(rtl_sched *s, struct sched_task *k, int o, double share, double now, uint64_t frame,
                         rtl_sched_decision *d)
{
    if (o < 0) return refuse(s, k, WHY_MEMORY | WHY_LATENCY, d);
    struct pick p = {.option = o, .loc = RTL_LOC_DEVICE, .top1 = k->t.options[o].top1};
    sched_cost(s, k, o, RTL_LOC_DEVICE, frame, &p.c);
    p.c.ms /= share > 0 ? share : 1;
    int why = hard_ok(s, k, o, RTL_LOC_DEVICE, &p.c, k->slot[RTL_LOC_DEVICE].option != o ? load_mj(s, p.c.bytes) : 0);
    if (why) return refuse(s, k, why, d);
    double lm = page_in(s, k, RTL_LOC_DEVICE, o, &p.c, now, d);
    if (lm < 0) return refuse(s, k, WHY_MEMORY, d);
    double load_e = d->energy_mj;
    charge(s, k, &p, now, frame, d, lm == 0);
    d->latency_ms += lm;
    d->energy_mj += load_e;
    d->share = share > 0 ? share : 1;
}

/* The knee policy: the task's knee, the compute shared by the active tasks. */
static void decide_knee(rtl_sched *s, struct sched_task *k, double now, uint64_t frame, rtl_sched_decision *d)
{
    int active = 0;
    for (size_t i = 0; i < s->ntasks; i++) active += s->tasks[i].active;
    decide_fixed(s, k, k->knee, active && k->active ? 1.0 / active : 1, now, frame, d);
}

/* NestDNN's policies: the option and compute share of the current plan. */
static void decide_nest(rtl_sched *s, struct sched_task *k, double now, uint64_t frame, rtl_sched_decision *d)
{
    if (s->nest_dirty) sched_nest_plan(s);
    decide_fixed(s, k, k->nest_option, k->nest_share, now, frame, d);
}

void rtl_sched_observe(rtl_sched *s, int task, int cls)
{
    if (s && task >= 0 && (size_t)task < s->ntasks) observe(&s->tasks[task], cls);
}

int rtl_sched_decide(rtl_sched *s, int task, double now, uint64_t frame, int cls, rtl_sched_decision *d,
                     rtl_err *err)
{
    if (!s || !d || task < 0 || (size_t)task >= s->ntasks)
        return rtl_errf(err, "scheduler: no task %d (%zu registered)", task, s ? s->ntasks : 0);
    if (isnan(now)) return rtl_errf(err, "scheduler: the request's time is not a number");
    struct sched_task *k = &s->tasks[task];
    memset(d, 0, sizeof *d);
    d->task = task;
    d->share = 1;
    observe(k, cls);
    if (k->first_seen == SCHED_NO_TIME) k->first_seen = now;
    k->requests++;
    for (int l = 0; l < RTL_LOC_COUNT; l++)
        if (k->slot[l].option >= 0) k->slot[l].asked++;
    sched_policy(s)->decide(s, k, now, frame, d);
    return 0;
}

void rtl_sched_account(rtl_sched *s, const rtl_sched_decision *d, double measured_ms)
{
    if (!s || !d || d->option < 0 || d->task < 0 || (size_t)d->task >= s->ntasks || d->loc != RTL_LOC_DEVICE ||
        !(measured_ms > 0) || !isfinite(measured_ms))
        return;
    rtl_sched_option *op = &s->tasks[d->task].t.options[d->option];
    double ms = d->latency_ms - d->load_ms, mj = d->energy_mj - d->load_mj;
    if (op->trunk >= 0 || op->partner >= 0 || !(ms > 0) || d->share != 1) return;
    /* device energy scales with the measured time (the power model) */
    double f = measured_ms / ms;
    if (s->energy_left >= 0) s->energy_left = fmax(0, s->energy_left + mj - mj * f);
    op->device_ms = measured_ms;
    op->device_mj *= f;
    snprintf(op->source, sizeof op->source, "device");
    s->nest_dirty = 1;
    sched_nest_forget(s); /* plans were made with the old figure */
}

int rtl_sched_cached(const rtl_sched *s, int task, enum rtl_loc loc)
{
    if (!s || task < 0 || (size_t)task >= s->ntasks || (unsigned)loc >= RTL_LOC_COUNT) return -1;
    return s->tasks[task].slot[loc].option;
}
