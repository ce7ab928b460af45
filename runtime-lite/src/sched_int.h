/* sched_int.h: what sched.c, sched_nest.c, sched_catalog.c and sim/sched_sim.c
 * share (private). */
#ifndef RTL_SCHED_INT_H
#define RTL_SCHED_INT_H

#include "internal.h"

#define SCHED_MAX_TASKS 256
#define SCHED_NO_TIME (-1e300)

/* One cached model of a task at one location. */
struct sched_slot {
    int option;        /* -1: nothing cached */
    double loaded_at;  /* when it was paged in */
    double last_used;  /* LRU */
    uint64_t since;    /* requests of the task since it was paged in */
    double entered;    /* when the task's model (any variant) entered this cache */
    uint64_t asked;    /* the task's requests (at any location) since then */
};

struct sched_task {
    rtl_sched_task t;
    struct sched_slot slot[RTL_LOC_COUNT];
    int current;           /* the location of the latest insert (-1: none) */
    double first_seen;     /* first request (SCHED_NO_TIME: none yet) */
    uint64_t requests;
    int active;            /* NestDNN: running now */
    int knee;              /* the fixed knee option */
    int nest_option;       /* NestDNN's plan for it (-1: none) */
    double nest_share;
    /* the task's window of classes (context.c's profiler; NULL when no
     * option is specialised), its levels (the options' distinct context_n,
     * increasing) and their top-n shares, valid while !p_dirty */
    rtl_context_profiler *prof;
    int nlev;
    uint32_t lev_n[RTL_CONTEXT_MAX_LEVELS];
    double lev_share[RTL_CONTEXT_MAX_LEVELS];
    int p_dirty;
};

struct rtl_sched {
    rtl_sched_config c;
    rtl_sched_budget b;
    double energy_left, usd_left, horizon_end;
    rtl_sched_trunk *trunks;
    uint64_t *trunk_frame[RTL_LOC_COUNT]; /* per trunk and location: frame + 1 it last ran for */
    size_t ntrunks;
    struct sched_task *tasks;
    size_t ntasks;
    int nest_dirty;
    /* NestDNN plan cache: active sets and their plans (sched_nest.c) */
    struct nest_cache *ncache;
    size_t nncache, ncache_next;
};

/* The costs of option o of task k at location l for one request on frame
 * `frame` (trunk reuse and the cascade partner included). */
struct sched_cost {
    double ms, mj, usd;
    uint64_t bytes;    /* device memory it needs (its trunk when not resident) */
    int shared;
};
void sched_cost(const rtl_sched *s, const struct sched_task *k, int o, enum rtl_loc l, uint64_t frame,
                struct sched_cost *c);

/* NestDNN (sched_nest.c): re-plans the shares of the active tasks. */
/* A row of the policy table (sched.c): the public part and what the
 * scheduler does differently under it. */
struct sched_policy {
    rtl_policy_info info;
    int shares_trunks;  /* heads on one trunk share its run per frame and hold it once (MCDNN's sharing) */
    int specialised;    /* may choose specialised variants (a context's (n,p) models) */
    int nest_max;       /* NestDNN's plan: the costliest task takes each unit (MinMaxCost), else the
                         * largest gain (MinTotalCost) */
    void (*decide)(rtl_sched *s, struct sched_task *k, double now, uint64_t frame, rtl_sched_decision *d);
};
/* The row of s's policy. */
const struct sched_policy *sched_policy(const rtl_sched *s);

void sched_nest_plan(rtl_sched *s);
void sched_nest_free(rtl_sched *s);
/* Drops the cached plans (after a budget or goal change). */
void sched_nest_forget(rtl_sched *s);
/* The knee of a task's device options (sched_nest.c). */
int sched_knee(const rtl_sched_task *t, int any);

#endif
