/* sched_catalog.c: a catalog's variants as the scheduler's options.
 *
 * Where each figure comes from (the option's `source` names the latency's):
 *  - latency on the device: this device's profile (`rtl profile`, newest
 *    entry) when there is one ("device"), else the catalog's estimate for
 *    the target's CPU ("estimate", the path this runtime takes), else the
 *    build host's measurement ("build-host");
 *  - energy: the estimate's CPU energy when the latency is the estimate's,
 *    else latency x device_mw (the target's power model);
 *  - cloud: 2 MACs per FLOP at cloud_gflops (an estimate: no cloud
 *    measurement exists in a catalog) plus the upload of the input (a
 *    20 KB JPEG, our assumption) and one round trip;
 *  - split: MCDNN's cut "at the last convolutional layer ... before the
 *    first (locally- or fully-) connected layer" (section 4.1.4); t_n is
 *    the MAC share of the layers before it (the manifest's cost.layers);
 *  - nested variants: one option per capacity (capacity = its place in
 *    capacities[], 1 = the first, as rtl_model_set_capacity counts; its top1, weight bytes, and
 *    latency and energy scaled by its MACs); early-exit variants: one per
 *    alpha of alpha_profile (scaled by expected_macs); heads: their trunk
 *    becomes a shared trunk; specialised variants: their context (n, p) and
 *    cascade partner (an option of the same task). A specialised variant of
 *    its context's own task (ctx-*, as prune specialise makes them) whose
 *    partner answers this task is a cascade option of this task: its
 *    classes among the task's labels, and the gains over its partner that
 *    prune specialise measured on the context's test stream
 *    (cascade_in_context; a catalog made before it recorded them has none,
 *    and its cascades are no option).
 * Variants without an accuracy for the task are left out (trunks among
 * them: they serve through their heads). */
#include "catalog.h"
#include "sched_int.h"
#include "techniques.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INPUT_BYTES 20000.0

static const cJSON *variant_json(const rtl_catalog *cat, const char *id)
{
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(cat->root, "variants"), *v;
    cJSON_ArrayForEach(v, vs)
    {
        const cJSON *i = cJSON_GetObjectItemCaseSensitive(v, "id");
        if (cJSON_IsString(i) && !strcmp(i->valuestring, id)) return v;
    }
    return NULL;
}

static double num(const cJSON *o, const char *k, double def)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : def;
}

/* Device latency and energy of v, and where the latency comes from. */
static void device_cost(const rtl_catalog *cat, const rtl_variant *v, const rtl_sched_source *src, double *ms,
                        double *mj, char source[16])
{
    rtl_latency lat[1];
    size_t n = 0;
    double mw = src->device_mw > 0 ? src->device_mw : 5000;
    if (rtl_profile_get(cat, v->id, lat, 1, &n, NULL) == 0 && n > 0 && lat[0].ms_median > 0) {
        *ms = lat[0].ms_median, *mj = *ms * mw / 1000;
        snprintf(source, 16, "device");
        return;
    }
    const char *target = src->target ? src->target : "jetson-nano";
    for (size_t i = 0; i < rtl_variant_estimate_count(v); i++) {
        rtl_estimate e;
        if (rtl_variant_estimate_at(v, i, &e) != 0 || strcmp(e.target, target)) continue;
        double ems = e.cpu_ms > 0 ? e.cpu_ms : e.ms, emj = e.cpu_ms > 0 ? e.cpu_mj : e.mj;
        if (!(ems > 0)) continue;
        *ms = ems, *mj = emj > 0 ? emj : ems * mw / 1000;
        snprintf(source, 16, "estimate");
        return;
    }
    if (rtl_variant_latency(v, "build-host", lat, NULL) == 0 && lat[0].ms_median > 0) {
        *ms = lat[0].ms_median, *mj = *ms * mw / 1000;
        snprintf(source, 16, "build-host");
        return;
    }
    *ms = 0, *mj = 0;
    source[0] = 0;
}

static double cloud_ms(const rtl_sched_source *src, double macs)
{
    double gf = src->cloud_gflops > 0 ? src->cloud_gflops : 3500;
    double up = src->uplink_mbps > 0 ? src->uplink_mbps : 18.88;
    double rtt = src->rtt_ms > 0 ? src->rtt_ms : 20;
    return 2 * macs / (gf * 1e9) * 1000 + INPUT_BYTES * 8 / (up * 1e6) * 1000 + rtt;
}

/* MCDNN's split point: the MAC share before the first connected or local
 * layer (0 when there is none or nothing before it). */
static double split_frac(const cJSON *vj)
{
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(vj, "cost"), "layers"), *l;
    double before = 0, total = 0;
    int cut = 0;
    cJSON_ArrayForEach(l, layers)
    {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(l, "type");
        if (!cut && cJSON_IsString(ty) && (!strcmp(ty->valuestring, "connected") || !strcmp(ty->valuestring, "local")))
            cut = 1;
        double m = num(l, "macs", 0);
        total += m;
        if (!cut) before += m;
    }
    if (!cut || total <= 0 || before <= 0) return 0;
    double f = before / total;
    return f < 0.999 ? f : 0.999;
}

static uint32_t images(const rtl_variant *v, const char *task)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(v->accuracy, task);
    double n = num(a, "images", 0);
    return n > 0 && n < 4e9 ? (uint32_t)n : 0;
}

struct opts {
    rtl_sched_option *o;
    size_t n, cap;
    char (*partner)[RTL_ID_MAX + 1];
};

static rtl_sched_option *push(struct opts *x, rtl_err *err)
{
    if (x->n == x->cap) {
        size_t c = x->cap ? 2 * x->cap : 16;
        rtl_sched_option *o = realloc(x->o, c * sizeof *o);
        char(*p)[RTL_ID_MAX + 1] = o ? realloc(x->partner, c * sizeof *p) : NULL;
        if (!o || !p) {
            if (o) x->o = o;
            rtl_errf(err, "scheduler: out of memory");
            return NULL;
        }
        x->o = o, x->partner = p, x->cap = c;
    }
    rtl_sched_option *o = &x->o[x->n];
    memset(o, 0, sizeof *o);
    x->partner[x->n][0] = 0;
    o->capacity = -1;
    o->trunk = -1;
    o->partner = -1;
    x->n++;
    return o;
}

static int find_trunk(rtl_sched *s, const rtl_catalog *cat, const char *id, const rtl_sched_source *src,
                      rtl_err *err)
{
    for (size_t t = 0; t < s->ntrunks; t++)
        if (!strcmp(s->trunks[t].variant, id)) return (int)t;
    const rtl_variant *v = rtl_catalog_find(cat, id);
    if (!v) return rtl_errf(err, "catalog %s: a head's trunk %s is not in it", rtl_catalog_id(cat), id);
    rtl_sched_trunk t = {0};
    snprintf(t.variant, sizeof t.variant, "%s", id);
    char source[16];
    device_cost(cat, v, src, &t.device_ms, &t.device_mj, source);
    t.cloud_ms = cloud_ms(src, (double)v->cost[RTL_COST_MACS]) - cloud_ms(src, 0); /* compute only */
    t.bytes = v->cost[RTL_COST_WEIGHT_BYTES];
    return rtl_sched_add_trunk(s, &t, err);
}

/* correct and images of score `name` of technique fields tf; 0 when absent */
static int score(const cJSON *tf, const char *name, double *correct, double *images)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(tf, name);
    *correct = num(a, "correct", -1), *images = num(a, "images", -1);
    return *images > 0 && *correct >= 0 && *correct <= *images;
}

/* The measured gains of specialised variant v's cascade over its partner
 * (prune specialise, on its context's test stream): on the context's
 * frames (cascade_in_context against generic_in_context) and on the rest
 * (overall less those, against generic_on_stream less those). 0 when they
 * were measured; -1 when the catalog lacks the cascade's in-context score
 * (made before it was recorded): then the cascade is no option. */
static int cascade_gains(const cJSON *tf, double *in, double *out)
{
    double ci, ni, gi, gni, co, no, go, gno;
    if (!score(tf, "cascade_in_context", &ci, &ni) || !score(tf, "generic_in_context", &gi, &gni) ||
        !score(tf, "overall", &co, &no) || !score(tf, "generic_on_stream", &go, &gno) || gni != ni || gno != no ||
        no <= ni || co < ci || go < gi)
        return -1;
    *in = ci / ni - gi / ni;
    *out = (co - ci) / (no - ni) - (go - gi) / (no - ni);
    return 0;
}

/* Specialised variant v of another task (its context's, ctx-*) as a
 * cascade option of task: its classes among the task's labels, its context
 * and measured gains (cascade_gains), its partner named for the resolution
 * below; 1 when it is one, 0 when not (not specialised, classes or
 * gains unknown), -1 on no memory. */
static int cascade_option(const rtl_catalog *cat, const rtl_variant *v, const char *task, const cJSON *tf,
                          const rtl_sched_option *base, struct opts *x, rtl_err *err)
{
    size_t nl = 0, nc = 0;
    double p = 0, gin, gout;
    char partner[RTL_ID_MAX + 1];
    int other;
    uint32_t cls[RTL_CONTEXT_MAX_N];
    const char *const *labels = rtl_catalog_task_labels(cat, task, &nl);
    if (!labels || rtl_variant_cascade(v, partner, sizeof partner, &other, NULL) != 0 ||
        rtl_variant_context(cat, v, labels, nl, cls, RTL_CONTEXT_MAX_N, &nc, &p, NULL) != 0 || !nc ||
        cascade_gains(tf, &gin, &gout) != 0)
        return 0;
    rtl_sched_option *o = push(x, err);
    if (!o) return -1;
    *o = *base;
    o->context_n = (int)nc;
    o->context_p = p > 0 ? p : 0.6; /* as the runner takes a manifest without one */
    memcpy(o->context_classes, cls, nc * sizeof *cls);
    o->context_nclasses = nc;
    o->gain_in = gin, o->gain_out = gout;
    snprintf(x->partner[x->n - 1], RTL_ID_MAX + 1, "%s", partner);
    return 1;
}

static int task_options(rtl_sched *s, const rtl_catalog *cat, const char *task, const rtl_sched_source *src,
                        struct opts *x, rtl_err *err)
{
    for (size_t i = 0; i < cat->nvariants; i++) {
        const rtl_variant *v = &cat->variants[i];
        double top1;
        /* a specialised variant of another task (its context's) whose
         * partner answers this one: a cascade option of this task */
        int foreign = rtl_variant_accuracy(v, task, &top1, NULL) != 0;
        if (foreign) top1 = 0;
        if (!(top1 >= 0 && top1 <= 1) || (foreign && strcmp(rtl_variant_technique(v), TECHNIQUE_SPECIALISED)))
            continue;
        if (src->loadable_only && rtl_variant_loadable(v, NULL) != 0) continue;
        const cJSON *vj = variant_json(cat, v->id);
        const cJSON *tf = cJSON_GetObjectItemCaseSensitive(vj, "technique_fields");
        double ms, mj, macs = (double)v->cost[RTL_COST_MACS];
        char source[16];
        device_cost(cat, v, src, &ms, &mj, source);
        if (!(ms > 0)) continue; /* no latency of any kind: cannot be scheduled */
        rtl_sched_option base = {.capacity = -1, .trunk = -1, .partner = -1, .top1 = top1,
                                 .images = images(v, task), .device_ms = ms, .device_mj = mj,
                                 .cloud_ms = cloud_ms(src, macs), .split_frac = split_frac(vj),
                                 .bytes = v->cost[RTL_COST_WEIGHT_BYTES]};
        snprintf(base.variant, sizeof base.variant, "%s", v->id);
        snprintf(base.source, sizeof base.source, "%s", source);
        const cJSON *caps = cJSON_GetObjectItemCaseSensitive(tf, "capacities"), *c;
        const cJSON *alphas = cJSON_GetObjectItemCaseSensitive(tf, "alpha_profile");
        const cJSON *head = cJSON_GetObjectItemCaseSensitive(tf, "head");
        const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(tf, "context");
        const cJSON *cas = cJSON_GetObjectItemCaseSensitive(tf, "cascade");
        if (foreign) {
            if (cascade_option(cat, v, task, tf, &base, x, err) < 0) return -1;
            continue;
        }
        if (cJSON_IsArray(caps) && cJSON_GetArraySize(caps) > 0) {
            int pos = 0;
            cJSON_ArrayForEach(c, caps)
            {
                pos++; /* rtl_model_set_capacity's k: the entry's place, 1 = the first */
                double cm = num(c, "macs", -1), ct = num(c, "top1", -1), cb = num(c, "weight_bytes", -1);
                if (!(cm > 0 && ct >= 0 && ct <= 1 && cb >= 0 && macs > 0)) continue;
                rtl_sched_option *o = push(x, err);
                if (!o) return -1;
                *o = base;
                o->capacity = pos;
                o->top1 = ct, o->bytes = (uint64_t)cb;
                o->device_ms = ms * cm / macs, o->device_mj = mj * cm / macs;
                o->cloud_ms = cloud_ms(src, cm);
                o->images = 0; /* a capacity's own test size is not in the table */
            }
            continue;
        }
        if (cJSON_IsArray(alphas) && cJSON_GetArraySize(alphas) > 0 && macs > 0) {
            cJSON_ArrayForEach(c, alphas)
            {
                double a = num(c, "alpha", -1), at = num(c, "top1", -1), em = num(c, "expected_macs", -1);
                if (!(a > 0 && at >= 0 && at <= 1 && em > 0)) continue;
                rtl_sched_option *o = push(x, err);
                if (!o) return -1;
                *o = base;
                o->alpha = a, o->top1 = at;
                o->device_ms = ms * em / macs, o->device_mj = mj * em / macs;
                o->cloud_ms = cloud_ms(src, em);
            }
            continue;
        }
        rtl_sched_option *o = push(x, err);
        if (!o) return -1;
        *o = base;
        const cJSON *tr = cJSON_GetObjectItemCaseSensitive(head, "trunk");
        if (cJSON_IsString(tr)) {
            int t = find_trunk(s, cat, tr->valuestring, src, err);
            if (t < 0) return -1;
            o->trunk = t;
            o->split_frac = 0;
        }
        if (cJSON_IsObject(ctx) && num(ctx, "n", 0) > 0) {
            o->context_n = (int)num(ctx, "n", 0);
            o->context_p = num(ctx, "p", 1);
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(cas, "partner");
            if (cJSON_IsString(p)) snprintf(x->partner[x->n - 1], RTL_ID_MAX + 1, "%s", p->valuestring);
        }
    }
    for (size_t i = 0; i < x->n; i++) {
        if (!x->partner[i][0]) continue;
        for (size_t j = 0; j < x->n; j++)
            if (j != i && !strcmp(x->o[j].variant, x->partner[i]) && x->o[j].context_n == 0 && x->o[j].capacity < 0 &&
                x->o[j].alpha == 0) {
                x->o[i].partner = (int)j;
                break;
            }
    }
    /* A cascade whose partner cannot run here (it answers another task, as
     * the representative contexts' models do: each has its own task) is not
     * an option: dropped, and the partner indices moved with the rest. */
    size_t k = 0;
    int *to = malloc((x->n ? x->n : 1) * sizeof *to);
    if (!to) return rtl_errf(err, "scheduler: out of memory");
    for (size_t i = 0; i < x->n; i++) {
        int drop = x->partner[i][0] && x->o[i].partner < 0;
        to[i] = drop ? -1 : (int)k;
        if (!drop) {
            x->o[k] = x->o[i];
            memcpy(x->partner[k], x->partner[i], sizeof x->partner[k]);
            k++;
        }
    }
    for (size_t i = 0; i < k; i++)
        if (x->o[i].partner >= 0) {
            x->o[i].partner = to[x->o[i].partner];
            /* a cascade known by its gains: outside its context, its partner's */
            if (x->o[i].context_nclasses) x->o[i].top1 = x->o[x->o[i].partner].top1;
        }
    x->n = k;
    free(to);
    return 0;
}

int rtl_sched_add_catalog(rtl_sched *s, const rtl_catalog *cat, const char *task, const char *app,
                          const rtl_sched_source *src, rtl_err *err)
{
    static const rtl_sched_source none = {0};
    if (!s || !cat) return rtl_errf(err, "scheduler: no catalog");
    if (!src) src = &none;
    int added = 0;
    for (size_t t = 0; t < cat->ntasks; t++) {
        const char *name = cat->tasks[t].name;
        if (task && strcmp(task, name)) continue;
        struct opts x = {0};
        if (task_options(s, cat, name, src, &x, err) != 0) {
            free(x.o), free(x.partner);
            return -1;
        }
        if (!x.n) {
            free(x.o), free(x.partner);
            if (task) return rtl_errf(err, "catalog %s: no variant of task %s has an accuracy and a latency", cat->id, name);
            continue;
        }
        rtl_sched_task st = {.options = x.o, .n = x.n, .a_min = 0, .l_max_ms = 0};
        snprintf(st.name, sizeof st.name, "%s", app && task ? app : name);
        snprintf(st.task, sizeof st.task, "%s", name);
        int r = rtl_sched_add_task(s, &st, err);
        free(x.o), free(x.partner);
        if (r < 0) return -1;
        added++;
    }
    if (task && !added) return rtl_errf(err, "catalog %s has no task %s", cat->id, task);
    if (!added) return rtl_errf(err, "catalog %s: no variant has an accuracy and a latency", cat->id);
    return 0;
}
