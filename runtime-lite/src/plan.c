/*
 * plan.c: JointDNN's split planner (rtl_plan_* of rtl.h).
 *
 * The graph (JointDNN §2.3, docs/papers.md; restricted to a per-layer chain): nodes
 * (cut i, location) for i = 0..n, location device or cloud; the input is
 * at (0, device) and the answer must reach (n, device). Running layer i at
 * a location moves (i, loc) -> (i+1, loc) and costs its compute there;
 * changing location at cut i costs the transfer of what crosses cut i
 * (upload device->cloud, download cloud->device) and is allowed only at
 * possible cuts (no route/shortcut across them).
 *
 * Costs:
 *  - compute: device host_cpu_ms (else host_ms) * device_factor at
 *    device_mw (the device model of rtl_offload_run: CPU time); cloud host_ms *
 *    cloud_factor, the device waiting at wait_mw meanwhile (JointDNN does
 *    not say what the device draws then);
 *  - transfer of B bytes at R Mbps: B*8/R microseconds of radio time at
 *    the paper's radio power P = alpha * R + beta (eq. 21: alpha_u or
 *    alpha_d per Mbps, beta base), plus rtt/2 of latency per transfer (the
 *    paper has no RTT term; ours charges it at the radio's base power beta).
 *
 * Goals: latency or device energy, a shortest path (dynamic programming
 * over the cuts, the graph being acyclic). Budgets (device energy, cloud
 * compute time, deadline) make the problem NP-hard in general (JointDNN
 * uses an ILP); here every node keeps its Pareto set of labels (latency,
 * energy, cloud time), labels over a budget are dropped, and the best
 * final label meeting every budget is exact. The sets stay small on our
 * graphs (bounded: PLAN_LABELS_MAX, beyond which the search fails).
 *
 * Approximation named: a chain of per-layer costs, not JointDNN's
 * tournament graph of fused groups C_{i:j}. Our engine runs layer by layer
 * (no fusion across layers), so a group's time is the sum of its layers'
 * within measurement noise; on a fused engine (cuDNN) the chain would
 * overestimate groups.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PLAN_LABELS_MAX (1u << 20)

static const rtl_link presets[] = {
    /* JointDNN Table 3 (values of Huang et al., MobiSys'12) */
    {"3g", 1.1, 2.0275, 0, 868.98, 122.12, 817.88},
    {"4g", 5.85, 13.76, 0, 438.39, 51.97, 1288.04},
    {"wifi", 18.88, 54.97, 0, 283.17, 137.01, 132.86},
};

const rtl_link *rtl_link_preset(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

/* Bytes crossing cut i of n layers. */
static uint64_t cut_bytes(const rtl_layer_cost *l, int n, int i)
{
    return i < n ? l[i].input_bytes : l[n - 1].output_bytes;
}

/* A layer's time on the device: CPU-based where measured. */
static double dev_ms(const rtl_layer_cost *x, const rtl_target *t)
{
    return (x->host_cpu_ms > 0 ? x->host_cpu_ms : x->host_ms) * t->device_factor;
}

static int cut_possible(const rtl_layer_cost *l, int n, int i)
{
    return i == 0 || i == n || l[i].cut_before;
}

/* Latency (ms), device energy (mJ) of moving bytes over one direction. */
static void transfer(const rtl_link *k, int up, uint64_t bytes, double *ms, double *mj)
{
    double mbps = up ? k->up_mbps : k->down_mbps, alpha = up ? k->alpha_up_mw : k->alpha_down_mw;
    double t = (double)bytes * 8.0 / (mbps * 1e3); /* ms */
    *ms = t + k->rtt_ms / 2;
    *mj = ((alpha * mbps + k->beta_mw) * t + k->beta_mw * k->rtt_ms / 2) / 1e3;
}

static int check_inputs(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k, rtl_err *err)
{
    if (n < 1 || n > RTL_PLAN_MAX_LAYERS)
        return rtl_errf(err, "the planner takes 1..%d layers, not %d", RTL_PLAN_MAX_LAYERS, n);
    if (!(t->device_factor > 0) || !(t->cloud_factor > 0))
        return rtl_errf(err, "device and cloud speed factors must be > 0 (device %g, cloud %g)", t->device_factor,
                        t->cloud_factor);
    if (!(k->up_mbps > 0) || !(k->down_mbps > 0) || !(k->rtt_ms >= 0))
        return rtl_errf(err, "link '%s': throughputs must be > 0 and the RTT >= 0 (up %g, down %g Mbps, rtt %g ms)",
                        k->name, k->up_mbps, k->down_mbps, k->rtt_ms);
    for (int i = 0; i < n; i++)
        if (!(l[i].host_ms >= 0) || !isfinite(l[i].host_ms) || !(l[i].host_cpu_ms >= 0) || !isfinite(l[i].host_cpu_ms))
            return rtl_errf(err, "layer %d: no valid measured time (%g ms)", i, l[i].host_ms);
    return 0;
}

int rtl_plan_evaluate(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k, rtl_plan *p,
                      rtl_err *err)
{
    if (check_inputs(l, n, t, k, err) != 0) return -1;
    if (p->layers != n) return rtl_errf(err, "the placement has %d layers, the model %d", p->layers, n);
    double lat = 0, mj = 0, cloud = 0, dev = 0, xfer = 0;
    uint64_t up = 0, down = 0;
    int loc = 0, moves = 0;
    for (int i = 0; i <= n; i++) {
        int want = i < n ? p->on_cloud[i] != 0 : 0;
        if (want != loc) {
            if (!cut_possible(l, n, i))
                return rtl_errf(err, "the placement changes location before layer %d, where no cut is possible", i);
            double ms, e;
            uint64_t b = cut_bytes(l, n, i);
            transfer(k, want, b, &ms, &e);
            lat += ms;
            xfer += ms;
            mj += e;
            *(want ? &up : &down) += b;
            moves++;
            loc = want;
        }
        if (i == n) break;
        if (loc) {
            double c = l[i].host_ms * t->cloud_factor;
            lat += c;
            cloud += c;
            mj += t->wait_mw * c / 1e3;
        } else {
            double d = dev_ms(&l[i], t);
            lat += d;
            dev += d;
            mj += t->device_mw * d / 1e3;
        }
    }
    p->latency_ms = lat;
    p->energy_mj = mj;
    p->cloud_ms = cloud;
    p->device_ms = dev;
    p->transfer_ms = xfer;
    p->bytes_up = up;
    p->bytes_down = down;
    p->transfers = moves;
    return 0;
}

int rtl_plan_split(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k, int s, rtl_plan *out,
                   rtl_err *err)
{
    if (n < 1 || n > RTL_PLAN_MAX_LAYERS || s < 0 || s > n)
        return rtl_errf(err, "split %d: the model has cuts 0..%d", s, n);
    memset(out, 0, sizeof *out);
    out->layers = n;
    for (int i = s; i < n; i++) out->on_cloud[i] = 1;
    return rtl_plan_evaluate(l, n, t, k, out, err);
}

/* One label: costs so far at a node, the location of the last layer run and
 * the label it came from (index into the pool, -1 at the source). */
struct label {
    double lat, mj, cloud;
    int parent;
    unsigned char loc;
};

struct pool {
    struct label *v;
    size_t n, cap;
};

static int pool_add(struct pool *p, const struct label *x)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 256;
        if (cap > PLAN_LABELS_MAX) return -1;
        struct label *v = realloc(p->v, cap * sizeof *v);
        if (!v) return -1;
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n] = *x;
    return (int)p->n++;
}

static double goal_of(const struct label *x, enum rtl_goal g) { return g == RTL_GOAL_ENERGY ? x->mj : x->lat; }

/* a dominates b: no worse in every cost (ties broken by the goal first). */
static int dominates(const struct label *a, const struct label *b)
{
    return a->lat <= b->lat && a->mj <= b->mj && a->cloud <= b->cloud;
}

static int over_budget(const struct label *x, const rtl_budget *b)
{
    if (!b) return 0;
    const double eps = 1e-9;
    return (b->energy_mj > 0 && x->mj > b->energy_mj + eps) || (b->cloud_ms >= 0 && x->cloud > b->cloud_ms + eps) ||
           (b->deadline_ms > 0 && x->lat > b->deadline_ms + eps);
}

/* Node sets: for each (cut, loc) a list of label indexes into the pool. */
struct set {
    int *ix;
    size_t n, cap;
};

/* Inserts label x (not yet pooled) into set s unless dominated; removes the
 * members it dominates. With `single`, keeps only the best by goal. */
static int set_offer(struct pool *pool, struct set *s, const struct label *x, int single, enum rtl_goal g)
{
    if (single) {
        if (s->n && goal_of(&pool->v[s->ix[0]], g) <= goal_of(x, g)) return 0;
    } else {
        for (size_t j = 0; j < s->n; j++)
            if (dominates(&pool->v[s->ix[j]], x)) return 0;
        size_t w = 0;
        for (size_t j = 0; j < s->n; j++)
            if (!dominates(x, &pool->v[s->ix[j]])) s->ix[w++] = s->ix[j];
        s->n = w;
    }
    int id = pool_add(pool, x);
    if (id < 0) return -1;
    if (single) {
        if (!s->cap) {
            if (!(s->ix = malloc(sizeof *s->ix))) return -1;
            s->cap = 1;
        }
        s->ix[0] = id;
        s->n = 1;
        return 0;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        int *ix = realloc(s->ix, cap * sizeof *ix);
        if (!ix) return -1;
        s->ix = ix;
        s->cap = cap;
    }
    s->ix[s->n++] = id;
    return 0;
}

int rtl_plan_best(const rtl_layer_cost *l, int n, const rtl_target *t, const rtl_link *k, enum rtl_goal goal,
                  const rtl_budget *budget, rtl_plan *out, rtl_err *err)
{
    if (check_inputs(l, n, t, k, err) != 0) return -1;
    if (goal < 0 || goal >= RTL_GOAL_COUNT) return rtl_errf(err, "unknown planning goal %d", (int)goal);
    int single = !budget || (budget->energy_mj <= 0 && budget->cloud_ms < 0 && budget->deadline_ms <= 0);
    struct pool pool = {0};
    /* sets[2*i + loc]: labels at cut i with the data at loc */
    struct set *sets = calloc((size_t)2 * (n + 1), sizeof *sets);
    int rc = -1;
    if (!sets) goto oom;
    struct label src = {0, 0, 0, -1, 0};
    if (set_offer(&pool, &sets[0], &src, single, goal) != 0) goto oom;
    for (int i = 0; i <= n; i++) {
        /* location changes at cut i (each set gets the other's labels moved) */
        if (cut_possible(l, n, i)) {
            for (int from = 0; from < 2; from++) {
                size_t cnt = sets[2 * i + from].n;
                if (cnt == 0) continue;
                int *snap = malloc(cnt * sizeof *snap);
                if (!snap) goto oom;
                memcpy(snap, sets[2 * i + from].ix, cnt * sizeof *snap);
                for (size_t j = 0; j < cnt; j++) {
                    /* a label moved back and forth costs more than it did
                     * and is dominated, so no check for that is needed */
                    struct label x = pool.v[snap[j]];
                    double ms, e;
                    transfer(k, !from, cut_bytes(l, n, i), &ms, &e);
                    struct label y = {x.lat + ms, x.mj + e, x.cloud, snap[j], (unsigned char)!from};
                    if (over_budget(&y, budget)) continue;
                    if (set_offer(&pool, &sets[2 * i + !from], &y, single, goal) != 0) {
                        free(snap);
                        goto oom;
                    }
                }
                free(snap);
            }
        }
        if (i == n) break;
        for (int loc = 0; loc < 2; loc++) {
            struct set *s = &sets[2 * i + loc];
            for (size_t j = 0; j < s->n; j++) {
                struct label x = pool.v[s->ix[j]], y;
                if (loc) {
                    double c = l[i].host_ms * t->cloud_factor;
                    y = (struct label){x.lat + c, x.mj + t->wait_mw * c / 1e3, x.cloud + c, s->ix[j], 1};
                } else {
                    double d = dev_ms(&l[i], t);
                    y = (struct label){x.lat + d, x.mj + t->device_mw * d / 1e3, x.cloud, s->ix[j], 0};
                }
                if (over_budget(&y, budget)) continue;
                if (set_offer(&pool, &sets[2 * (i + 1) + loc], &y, single, goal) != 0) goto oom;
            }
        }
    }
    /* the answer must be on the device: set (n, device) */
    struct set *fin = &sets[2 * n];
    int best = -1;
    for (size_t j = 0; j < fin->n; j++) {
        const struct label *x = &pool.v[fin->ix[j]];
        if (over_budget(x, budget)) continue;
        if (best < 0 || goal_of(x, goal) < goal_of(&pool.v[best], goal)) best = fin->ix[j];
    }
    if (best < 0) {
        rtl_errf(err, "no placement meets the budget (energy %g mJ, cloud %g ms, deadline %g ms): "
                 "relax one of them", budget ? budget->energy_mj : 0, budget ? budget->cloud_ms : -1,
                 budget ? budget->deadline_ms : 0);
        goto done;
    }
    /* walk back: each compute step (parent at cut i, child at cut i+1) names
     * its layer's location; count compute steps from the end */
    memset(out, 0, sizeof *out);
    out->layers = n;
    {
        int layer = n - 1;
        for (int x = best; x >= 0 && pool.v[x].parent >= 0; x = pool.v[x].parent) {
            const struct label *c = &pool.v[x], *p = &pool.v[c->parent];
            /* a compute edge keeps the location and adds the layer's time;
             * a transfer edge changes the location */
            if (c->loc == p->loc && layer >= 0) out->on_cloud[layer--] = c->loc;
        }
    }
    rc = rtl_plan_evaluate(l, n, t, k, out, err);
    goto done;
oom:
    rtl_errf(err, "the planner ran out of memory (more than %u labels)", PLAN_LABELS_MAX);
done:
    for (int i = 0; sets && i < 2 * (n + 1); i++) free(sets[i].ix);
    free(sets);
    free(pool.v);
    return rc;
}
