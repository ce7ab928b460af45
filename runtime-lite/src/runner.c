/* runner.c: the runner (rtl.h, "the runner"): the models of one catalog
 * opened on demand and kept warm within a memory budget, cascades with
 * their partner, the specialised models installed for a task (add-ons and
 * the catalog's own) chosen by the context profiler, and the scheduled
 * executor (rtl_runner_serve: decide, page in, run, account measured
 * costs, page out).
 *
 * A specialised model S (classes C, context share p, cascade partner G)
 * matches when the answers of G's task in the window hold at least
 * `min_samples` inputs and the classes C hold at least p of them (MCDNN's
 * (n, p)-dominance for S's own classes); the one in use stays down to p
 * minus the hysteresis. Among several, the one with the fewest classes
 * (the most specialised), then the highest share, then the first in
 * catalog and variant order. */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_ (2 * RTL_ID_MAX + 2)

/* A specialised model for a task: in an add-on catalog of the runner's (at
 * its version) or in the catalog itself. */
struct addon {
    rtl_catalog *cat;        /* the catalog that holds it */
    int owned;               /* 1: this entry closes cat */
    const rtl_variant *v;
    char partner[RTL_ID_MAX + 1];
    int other;               /* its "other" class */
    double gate;             /* its cascade's gate */
    uint32_t *classes;       /* the task's indices of its classes */
    size_t n;
    double p;                /* its context's share (0.6 when the manifest has none) */
    rtl_model *model;        /* opened on first use */
};

/* Per task (with options.context): its profiler and specialised models. */
struct rtask {
    char task[RTL_ID_MAX + 1];
    const char *const *labels;
    size_t nl;
    rtl_context_profiler *prof;
    struct addon *a;
    size_t n;
    const struct addon *cur; /* the one in use, NULL: none */
};

/* An open model, and for a specialised variant its cascade partner. */
struct slot {
    rtl_model *m;
    rtl_catalog *pcat;       /* the partner's catalog when not the runner's (owned) */
    rtl_model *partner;
    int other;
    double gate;
    uint64_t bytes, used;    /* mapped weight bytes; the run it last served */
};

struct rtl_runner {
    rtl_store *st;
    rtl_catalog *cat;
    rtl_runner_options o;
    struct slot *slots;
    size_t nslots, cap;
    struct rtask *tasks;
    size_t ntasks;
    float *x;
    size_t xcap;
    uint64_t runs;
    rtl_model *tm[RTL_RUNNER_MAX_TASKS]; /* rtl_runner_set_tasks's models, in its order */
    size_t ntm;
};

static void warn(const rtl_runner *r, const char *fmt, ...) RTL_PRINTF(2, 3);
static void warn(const rtl_runner *r, const char *fmt, ...)
{
    if (!r->o.warn) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->o.warn(r->o.warn_arg, msg);
}

rtl_runner *rtl_runner_new(rtl_store *st, rtl_catalog *cat, const rtl_runner_options *o, rtl_err *err)
{
    rtl_runner *r = calloc(1, sizeof *r);
    if (!r) return rtl_errf(err, "out of memory"), NULL;
    r->st = st, r->cat = cat;
    if (o) r->o = *o;
    return r;
}

/* ---- specialised models ---------------------------------------------------- */

static void addons_free(struct rtask *t)
{
    for (size_t i = 0; i < t->n; i++) {
        rtl_model_close(t->a[i].model);
        free(t->a[i].classes);
    }
    for (size_t i = 0; i < t->n; i++)
        if (t->a[i].owned) rtl_catalog_close(t->a[i].cat);
    free(t->a);
    t->a = NULL, t->n = 0;
}

/* Adds v of cat when it is specialised with a partner of base's task; 1
 * when added, 0 when not one, -1 out of memory. */
static int add_one(const rtl_runner *r, struct rtask *t, rtl_catalog *cat, int owned, const rtl_variant *v,
                   rtl_err *err)
{
    char partner[RTL_ID_MAX + 1];
    int other;
    if (rtl_variant_cascade(v, partner, sizeof partner, &other, NULL) != 0) return 0;
    const rtl_variant *pv = rtl_catalog_find(r->cat, partner);
    if (!pv || strcmp(rtl_variant_task(pv), t->task) != 0) return 0; /* another task's, or no partner here */
    struct addon a = {.cat = cat, .owned = owned, .v = v, .other = other, .gate = rtl_variant_cascade_gate(v)};
    snprintf(a.partner, sizeof a.partner, "%s", partner);
    size_t cap = 0;
    rtl_catalog_task_labels(cat, rtl_variant_task(v), &cap);
    if (!(a.classes = malloc((cap ? cap : 1) * sizeof *a.classes))) return rtl_errf(err, "out of memory");
    rtl_err e;
    if (rtl_variant_context(cat, v, t->labels, t->nl, a.classes, cap, &a.n, &a.p, &e) != 0 || !a.n) {
        warn(r, "catalog %s, variant %s: not used for contexts: %s", rtl_catalog_id(cat), rtl_variant_id(v),
             a.n ? e.msg : "it answers no class");
        free(a.classes);
        return 0;
    }
    if (!(a.p > 0)) a.p = 0.6; /* no p in the manifest: MCDNN's smallest */
    struct addon *na = realloc(t->a, (t->n + 1) * sizeof *na);
    if (!na) return free(a.classes), rtl_errf(err, "out of memory");
    t->a = na;
    t->a[t->n++] = a;
    return 1;
}

/* Installed catalog id when it is an add-on of the runner's catalog at its
 * version (else NULL, with a warning for another version). */
static rtl_catalog *open_addon(const rtl_runner *r, const char *id)
{
    rtl_err e;
    rtl_catalog *c = rtl_catalog_open(r->st, id, &e);
    const char *bid;
    uint64_t bver;
    if (!c) {
        warn(r, "%s (skipped)", e.msg);
        return NULL;
    }
    if (!rtl_catalog_base(c, &bid, &bver) || strcmp(bid, rtl_catalog_id(r->cat)) != 0) {
        rtl_catalog_close(c);
        return NULL;
    }
    if (bver != rtl_catalog_version(r->cat)) {
        warn(r, "add-on %s was built for catalog %s version %" PRIu64 ", but version %" PRIu64
             " is installed: not used (get the add-on built for it)", id, bid, bver, rtl_catalog_version(r->cat));
        rtl_catalog_close(c);
        return NULL;
    }
    return c;
}

/* The catalog's own specialised models for t's task, then the installed
 * add-ons'. */
static int addons_find(const rtl_runner *r, struct rtask *t, rtl_err *err)
{
    for (size_t i = 0; i < rtl_catalog_variant_count(r->cat); i++)
        if (add_one(r, t, r->cat, 0, rtl_catalog_variant_at(r->cat, i), err) < 0) return -1;
    if (!r->st) return 0;
    rtl_installed *list = NULL;
    size_t n = 0;
    if (rtl_list(r->st, &list, &n, err) != 0) return -1;
    int rc = 0;
    for (size_t k = 0; !rc && k < n; k++) {
        if (!strcmp(list[k].catalog, rtl_catalog_id(r->cat))) continue;
        rtl_catalog *c = open_addon(r, list[k].catalog);
        size_t before = t->n;
        int owned = 1;
        for (size_t i = 0; c && !rc && i < rtl_catalog_variant_count(c); i++) {
            int a = add_one(r, t, c, owned, rtl_catalog_variant_at(c, i), err);
            if (a < 0) rc = -1;
            if (a > 0) owned = 0; /* the first entry of this catalog closes it */
        }
        if (c && (t->n == before || (rc && owned))) rtl_catalog_close(c);
    }
    free(list);
    return rc;
}

/* The state of task (made on first use). */
static struct rtask *task_state(rtl_runner *r, const char *task, rtl_err *err)
{
    for (size_t i = 0; i < r->ntasks; i++)
        if (!strcmp(r->tasks[i].task, task)) return &r->tasks[i];
    size_t nl = 0;
    const char *const *labels = rtl_catalog_task_labels(r->cat, task, &nl);
    if (!labels) return rtl_errf(err, "catalog %s has no task %s", rtl_catalog_id(r->cat), task), NULL;
    struct rtask *nt = realloc(r->tasks, (r->ntasks + 1) * sizeof *nt);
    if (!nt) return rtl_errf(err, "out of memory"), NULL;
    r->tasks = nt;
    struct rtask *t = memset(&nt[r->ntasks], 0, sizeof *t);
    snprintf(t->task, sizeof t->task, "%s", task);
    t->labels = labels, t->nl = nl;
    rtl_context_params q = r->o.context_params;
    q.classes = (uint32_t)nl;
    if (!(t->prof = rtl_context_profiler_new(&q, err)) || addons_find(r, t, err) != 0) {
        addons_free(t);
        rtl_context_profiler_free(t->prof);
        return NULL;
    }
    r->ntasks++;
    return t;
}

/* The specialised model of t the window matches (partner: only those of
 * that partner; cur: the one in use, kept down to p - hysteresis), with
 * its classes' share; NULL when none or the window holds too few. */
static const struct addon *match(const struct rtask *t, const char *partner, const struct addon *cur, double *share)
{
    rtl_context_params q;
    rtl_context_profiler_params(t->prof, &q);
    const struct addon *best = NULL;
    double bs = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct addon *a = &t->a[i];
        if (partner && strcmp(a->partner, partner) != 0) continue;
        double sh = rtl_context_share(t->prof, a->classes, a->n);
        double need = a == cur ? a->p - q.hysteresis : a->p;
        if (sh < need - 1e-12) continue;
        if (!best || a->n < best->n || (a->n == best->n && sh > bs)) best = a, bs = sh;
    }
    if (best && rtl_context_samples(t->prof) < q.min_samples) best = NULL;
    if (share) *share = best ? bs : 0;
    return best;
}

static void addon_name(const struct addon *a, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", rtl_catalog_id(a->cat), rtl_variant_id(a->v));
}

rtl_context_profiler *rtl_runner_profiler(rtl_runner *r, const char *task, rtl_err *err)
{
    struct rtask *t = task_state(r, task, err);
    return t ? t->prof : NULL;
}

int rtl_runner_specialised(rtl_runner *r, const char *task, size_t i, rtl_specialised *out, rtl_err *err)
{
    struct rtask *t = task_state(r, task, err);
    if (!t) return -1;
    if (i >= t->n) return 0;
    const struct addon *a = &t->a[i];
    memset(out, 0, sizeof *out);
    snprintf(out->catalog, sizeof out->catalog, "%s", rtl_catalog_id(a->cat));
    snprintf(out->variant, sizeof out->variant, "%s", rtl_variant_id(a->v));
    snprintf(out->partner, sizeof out->partner, "%s", a->partner);
    out->classes = a->classes, out->n = a->n, out->p = a->p;
    out->share = rtl_context_share(t->prof, a->classes, a->n);
    out->matches = a == match(t, NULL, NULL, NULL);
    out->in_use = a == t->cur;
    return 1;
}

/* ---- open models ------------------------------------------------------------ */

static void slot_close(struct slot *s)
{
    rtl_model_close(s->partner);
    rtl_model_close(s->m);
    rtl_catalog_close(s->pcat);
}

/* The catalog holding the partner of a specialised variant of cat: cat, or
 * the catalog the add-on cat extends, installed at its version. */
static rtl_catalog *partner_catalog(rtl_runner *r, const char *partner, rtl_catalog **owned, rtl_err *err)
{
    const char *bid;
    uint64_t bver;
    *owned = NULL;
    if (rtl_catalog_find(r->cat, partner) || !rtl_catalog_base(r->cat, &bid, &bver)) return r->cat;
    if (!r->st) return rtl_errf(err, "add-on %s extends catalog %s: open it from a store", rtl_catalog_id(r->cat),
                                bid), NULL;
    rtl_catalog *b = rtl_catalog_open(r->st, bid, err);
    if (!b) return rtl_err_prefix(err, "add-on %s extends catalog %s version %" PRIu64, rtl_catalog_id(r->cat), bid,
                                  bver), NULL;
    if (rtl_catalog_version(b) != bver) {
        rtl_errf(err, "add-on %s was built for catalog %s version %" PRIu64 ", but version %" PRIu64
                 " is installed: get the add-on built for it", rtl_catalog_id(r->cat), bid, bver,
                 rtl_catalog_version(b));
        rtl_catalog_close(b);
        return NULL;
    }
    return *owned = b;
}

/* Opens variant id into s, and its partner when it is specialised. */
static int slot_open(rtl_runner *r, const char *id, struct slot *s, rtl_err *err)
{
    rtl_model_options mo = {.threads = r->o.threads};
    memset(s, 0, sizeof *s);
    s->other = -1;
    if (!(s->m = rtl_model_open(r->cat, id, &mo, err))) return -1;
    char partner[RTL_ID_MAX + 1];
    const rtl_variant *v = rtl_model_variant(s->m);
    if (rtl_variant_cascade(v, partner, sizeof partner, &s->other, NULL) == 0) {
        s->gate = rtl_variant_cascade_gate(v);
        rtl_catalog *pc = partner_catalog(r, partner, &s->pcat, err);
        if (!pc || !(s->partner = rtl_model_open(pc, partner, &mo, err))) return slot_close(s), -1;
    }
    s->bytes = rtl_model_mapped_bytes(s->m) + (s->partner ? rtl_model_mapped_bytes(s->partner) : 0);
    return 0;
}

/* The open model of variant id (opened now when it is not: *cold = 1). */
static struct slot *slot_get(rtl_runner *r, const char *id, int *cold, rtl_err *err)
{
    *cold = 0;
    for (size_t i = 0; i < r->nslots; i++)
        if (!strcmp(rtl_variant_id(rtl_model_variant(r->slots[i].m)), id)) return &r->slots[i];
    if (r->nslots == r->cap) {
        size_t c = r->cap ? 2 * r->cap : 8;
        struct slot *ns = realloc(r->slots, c * sizeof *ns);
        if (!ns) return rtl_errf(err, "out of memory"), NULL;
        r->slots = ns, r->cap = c;
    }
    if (slot_open(r, id, &r->slots[r->nslots], err) != 0) return NULL;
    *cold = 1; /* its first run pays first-touch page faults */
    return &r->slots[r->nslots++];
}

/* The request's knobs: capacity (nested), alpha (early exits). */
static int set_knobs(rtl_model *m, const rtl_runner_request *q, rtl_err *err)
{
    if (q->capacity > 0 && (rtl_model_capacities(m) == 0 || rtl_model_capacity(m) != q->capacity) &&
        rtl_model_set_capacity(m, q->capacity, err) != 0)
        return -1;
    if (q->alpha >= 0 && (rtl_model_exits(m) == 0 || rtl_model_alpha(m) != (float)q->alpha) &&
        rtl_model_set_alpha(m, (float)q->alpha, err) != 0)
        return -1;
    return 0;
}

int rtl_runner_prepare(rtl_runner *r, const rtl_runner_request *q, const rtl_model **model, rtl_err *err)
{
    int cold;
    struct slot *s = slot_get(r, q->variant, &cold, err);
    if (!s || set_knobs(s->m, q, err) != 0) return -1;
    if (r->o.context && s->partner)
        return rtl_errf(err, "context: %s is specialised (it always runs as a cascade): give its partner %s, the "
                        "generic model", q->variant, rtl_variant_id(rtl_model_variant(s->partner)));
    if (r->o.context && !task_state(r, rtl_variant_task(rtl_model_variant(s->m)), err)) return -1;
    if (model) *model = s->m;
    return 0;
}

/* ---- running ------------------------------------------------------------------ */

/* Decodes the image for m and runs it; the run's time is added to *ms. */
static int run_one(rtl_runner *r, rtl_model *m, const char *image, double *ms, int *bad_input, rtl_err *err)
{
    size_t need = rtl_model_input_size(m);
    if (need > r->xcap) {
        float *nx = realloc(r->x, need * sizeof *nx);
        if (!nx) return rtl_errf(err, "out of memory");
        r->x = nx, r->xcap = need;
    }
    if (rtl_model_image_input(m, image, r->x, err) != 0) return *bad_input = 1, -1;
    double a0 = rtl_now_ms();
    int rc = rtl_model_run(m, r->x, err);
    *ms += rtl_now_ms() - a0; /* the model's run alone, as rtl profile times it */
    return rc;
}

/* The cascade's partner after `first` said "other": from the cut on first's
 * trunk output when first is a fragment of it (the trunk computed once),
 * else whole. */
static int run_partner(rtl_runner *r, rtl_model *fall, const rtl_model *first, const char *image, double *ms,
                       int *bad_input, rtl_err *err)
{
    double a0 = rtl_now_ms();
    int done = rtl_model_run_from_fragment(fall, first, err);
    *ms += rtl_now_ms() - a0;
    return done < 0 ? -1 : done ? 0 : run_one(r, fall, image, ms, bad_input, err);
}

/* With options.context: the specialised model t's window matches for
 * partner (opened on first use), its change noted in res. */
static int context_pick(rtl_runner *r, struct rtask *t, const char *partner, rtl_runner_result *res,
                        rtl_err *err)
{
    const struct addon *was = t->cur;
    t->cur = match(t, partner, t->cur, &res->share);
    res->switched = t->cur != was;
    res->samples = rtl_context_samples(t->prof);
    if (!t->cur) return 0;
    res->p = t->cur->p;
    addon_name(t->cur, res->cascade, sizeof res->cascade);
    struct addon *cw = (struct addon *)t->cur;
    rtl_model_options mo = {.threads = r->o.threads};
    if (!cw->model && !(cw->model = rtl_model_open(cw->cat, rtl_variant_id(cw->v), &mo, err))) return -1;
    return 0;
}

/* The answer's class into t's window. */
static int observe(struct rtask *t, const rtl_model *m, rtl_err *err)
{
    rtl_class top;
    size_t nt = 0;
    if (rtl_model_top(m, 1, &top, &nt, err) != 0) return -1;
    size_t j = 0;
    while (nt && j < t->nl && strcmp(t->labels[j], top.label) != 0) j++;
    return nt && j < t->nl ? rtl_context_observe(t->prof, (uint32_t)j, err) : 0;
}

int rtl_runner_run(rtl_runner *r, const rtl_runner_request *q, rtl_runner_result *res, rtl_err *err)
{
    memset(res, 0, sizeof *res);
    int cold;
    struct slot *s = slot_get(r, q->variant, &cold, err);
    if (!s || set_knobs(s->m, q, err) != 0) return -1;
    s->used = ++r->runs;
    res->cold = cold;
    rtl_model *first = s->m, *fall = s->partner;
    int other = s->other;
    double gate = s->gate;
    struct rtask *t = NULL;
    if (r->o.context && !s->partner) {
        if (!(t = task_state(r, rtl_variant_task(rtl_model_variant(s->m)), err)) ||
            context_pick(r, t, q->variant, res, err) != 0)
            return -1;
        if (t->cur) first = t->cur->model, fall = s->m, other = t->cur->other, gate = t->cur->gate;
    }
    if (run_one(r, first, q->image, &res->ms, &res->bad_input, err) != 0) return -1;
    rtl_model *ans = first;
    rtl_class top;
    size_t nt = 0;
    if (fall && rtl_model_top(first, 1, &top, &nt, err) == 0 && nt &&
        ((int)top.index == other || top.prob < gate)) { /* "other" (or under the gate): the partner answers */
        ans = fall;
        if (run_partner(r, fall, first, q->image, &res->ms, &res->bad_input, err) != 0) return -1;
    }
    res->model = ans;
    res->answered_by = rtl_variant_id(rtl_model_variant(ans));
    return t ? observe(t, ans, err) : 0;
}

/* Closes the models no task's slot holds, least recently used first,
 * while the open models exceed the scheduler's memory budget. */
static void page_out(rtl_runner *r, const rtl_sched *s)
{
    rtl_sched_budget b;
    rtl_sched_get_budget(s, &b);
    uint64_t open_bytes = 0, cap = b.memory_bytes;
    for (size_t m = 0; m < r->nslots; m++) open_bytes += r->slots[m].bytes;
    while (cap && open_bytes > cap) {
        size_t lru = r->nslots;
        for (size_t m = 0; m < r->nslots; m++) {
            const char *id = rtl_variant_id(rtl_model_variant(r->slots[m].m));
            int held = 0;
            for (size_t a = 0; a < rtl_sched_task_count(s) && !held; a++)
                for (int l = RTL_LOC_DEVICE; l <= RTL_LOC_SPLIT && !held; l++) {
                    int op = rtl_sched_cached(s, (int)a, (enum rtl_loc)l);
                    held = op >= 0 && !strcmp(rtl_sched_task_at(s, a)->options[op].variant, id);
                }
            if (!held && (lru == r->nslots || r->slots[m].used < r->slots[lru].used)) lru = m;
        }
        if (lru == r->nslots) break; /* only held models left: the scheduler's budget holds them */
        open_bytes -= r->slots[lru].bytes;
        slot_close(&r->slots[lru]);
        r->slots[lru] = r->slots[--r->nslots];
    }
}

/* The answer of model m into the scheduler's window of task (its class
 * among the task's labels, by name): what decides whether a specialised
 * option serves (MCDNN's profiler sees the classifier's answers). */
static void sched_observe_answer(const rtl_runner *r, rtl_sched *s, int task, const rtl_model *m)
{
    rtl_class top;
    size_t nt = 0, nl = 0, j = 0;
    const char *const *labels = rtl_catalog_task_labels(r->cat, rtl_sched_task_at(s, (size_t)task)->task, &nl);
    if (!m || !labels || rtl_model_top(m, 1, &top, &nt, NULL) != 0 || !nt) return;
    while (j < nl && strcmp(labels[j], top.label) != 0) j++;
    if (j < nl) rtl_sched_observe(s, task, (int)j);
}

int rtl_runner_serve(rtl_runner *r, rtl_sched *s, int task, double now, uint64_t frame, const char *image,
                     rtl_sched_decision *d, rtl_runner_result *res, rtl_err *err)
{
    memset(res, 0, sizeof *res);
    memset(d, 0, sizeof *d);
    d->task = -1;
    if (rtl_sched_decide(s, task, now, frame, -1, d, err) != 0) return d->task = -1, -1;
    int rc = 0;
    if (d->option >= 0 && !r->o.dry_run) {
        const rtl_sched_option *op = &rtl_sched_task_at(s, (size_t)task)->options[d->option];
        rtl_runner_request q = {.variant = op->variant, .capacity = op->capacity > 0 ? op->capacity : 0,
                                .alpha = op->alpha > 0 ? op->alpha : -1, .image = image};
        rc = rtl_runner_run(r, &q, res, err);
        /* the measured time replaces the option's prediction (energy scales
         * with it: there is no power meter); a cascade's time is not the
         * option's, a cold run's is not its steady one */
        if (!rc && !res->cascade[0] && !res->cold && !r->o.no_feedback) rtl_sched_account(s, d, res->ms);
        if (!rc) sched_observe_answer(r, s, task, res->model);
    }
    if (d->option >= 0 && r->o.dry_run) res->ms = d->latency_ms;
    if ((size_t)task + 1 == rtl_sched_task_count(s) && !r->o.dry_run) page_out(r, s); /* the frame's last task */
    return rc;
}

/* ---- several tasks on one input: heads on one trunk ----------------------------- */

static double top1_of(const rtl_variant *v, const char *task)
{
    double t1 = -1, t5;
    return rtl_variant_accuracy(v, task, &t1, &t5) == 0 ? t1 : -1;
}

/* The variant answering task: with chosen (nchosen of them), a head whose
 * parent is one of them (the most accurate such); without, the most
 * accurate loadable variant of the task that is not a head; heads_any:
 * the most accurate head. NULL when none. */
static const rtl_variant *pick(const rtl_catalog *cat, const char *task, const rtl_variant *const *chosen,
                               size_t nchosen, int heads)
{
    const rtl_variant *best = NULL;
    double bt = -2;
    for (size_t i = 0; i < rtl_catalog_variant_count(cat); i++) {
        const rtl_variant *v = rtl_catalog_variant_at(cat, i);
        if (strcmp(rtl_variant_task(v), task) || rtl_variant_loadable(v, NULL) != 0) continue;
        int head = !strcmp(rtl_variant_technique(v), "head");
        if (heads != head) continue;
        if (chosen) {
            size_t k = 0;
            while (k < nchosen && (!rtl_variant_parent(v) || strcmp(rtl_variant_id(chosen[k]), rtl_variant_parent(v))))
                k++;
            if (k == nchosen) continue;
        }
        double t = top1_of(v, task);
        if (t > bt) best = v, bt = t;
    }
    return best;
}

/* Each task's variant into var[]: a head whose parent answers another
 * task (its trunk then runs once for both), else the most accurate variant
 * that is not a head, else the most accurate head. */
static int task_variants(const rtl_catalog *cat, const char *const *tasks, size_t n, const rtl_variant **var,
                         rtl_err *err)
{
    const rtl_variant *plain[RTL_RUNNER_MAX_TASKS];
    size_t np = 0;
    for (size_t t = 0; t < n; t++) {
        if (!rtl_catalog_task_labels(cat, tasks[t], NULL)) {
            char list[512] = "";
            for (size_t q = 0; q < rtl_catalog_task_count(cat); q++) {
                size_t at = strlen(list);
                snprintf(list + at, sizeof list - at, " %s", rtl_catalog_task_name(cat, q));
            }
            return rtl_errf(err, "catalog %s has no task '%s'; its tasks:%s", rtl_catalog_id(cat), tasks[t], list);
        }
        if ((var[t] = pick(cat, tasks[t], NULL, 0, 0))) plain[np++] = var[t];
    }
    for (size_t t = 0; t < n; t++) {
        const rtl_variant *h = pick(cat, tasks[t], plain, np, 1);
        if (h) var[t] = h;
        if (!var[t]) var[t] = pick(cat, tasks[t], NULL, 0, 1); /* a head whose parent is not asked */
        if (!var[t])
            return rtl_errf(err, "catalog %s has no variant this runtime can load for task '%s'", rtl_catalog_id(cat),
                            tasks[t]);
    }
    return 0;
}

int rtl_runner_set_tasks(rtl_runner *r, const char *const *tasks, size_t n, rtl_model **models, rtl_err *err)
{
    const rtl_variant *var[RTL_RUNNER_MAX_TASKS];
    if (n == 0 || n > RTL_RUNNER_MAX_TASKS)
        return rtl_errf(err, "%zu tasks: give 1 to %d", n, RTL_RUNNER_MAX_TASKS);
    if (task_variants(r->cat, tasks, n, var, err) != 0) return -1;
    for (size_t i = 0; i < r->ntm; i++) rtl_model_close(r->tm[i]);
    r->ntm = 0;
    rtl_model_options mo = {.threads = r->o.threads};
    for (size_t t = 0; t < n; t++, r->ntm++) {
        if (!(r->tm[t] = rtl_model_open(r->cat, rtl_variant_id(var[t]), &mo, err))) return -1;
        mo.threads = 0; /* set once */
    }
    if (models) memcpy(models, r->tm, n * sizeof *models);
    return 0;
}

int rtl_runner_run_tasks(rtl_runner *r, const char *image, size_t *trunk_runs, rtl_err *err)
{
    if (!r->ntm) return rtl_errf(err, "no tasks to run: rtl_runner_set_tasks first");
    size_t need = rtl_model_input_size(r->tm[0]);
    if (need > r->xcap) {
        float *nx = realloc(r->x, need * sizeof *nx);
        if (!nx) return rtl_errf(err, "out of memory");
        r->x = nx, r->xcap = need;
    }
    if (rtl_model_image_input(r->tm[0], image, r->x, err) != 0) return -1;
    return rtl_model_run_tasks(r->tm, r->ntm, r->x, trunk_runs, err);
}

void rtl_runner_free(rtl_runner *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->nslots; i++) slot_close(&r->slots[i]);
    for (size_t i = 0; i < r->ntasks; i++) {
        addons_free(&r->tasks[i]);
        rtl_context_profiler_free(r->tasks[i].prof);
    }
    for (size_t i = 0; i < r->ntm; i++) rtl_model_close(r->tm[i]);
    free(r->slots);
    free(r->tasks);
    free(r->x);
    free(r);
}
