/* sched_sim.c: seeded trace generators and the trace-driven simulator.
 *
 * MCDNN's traces (mcdnn-mobisys16 section 5.2, Table 5) give only words:
 * apps, "Disconnect" (Rare, Medium, Often) and "Special" (how often the same
 * people are seen: N/A, Medium, High). Our generator's numbers (docs/targets.md
 * 3.7: the paper leaves them open):
 *  - frames at `fps`; faces come in encounters (exponential lengths, mean
 *    20 s, gaps mean 60 s); every frame of an encounter is a request of
 *    each face app (D, G, R, Y: one frame, so a shared trunk runs once for
 *    all of them); V and S ask for half of the frames, at random;
 *  - the person of an encounter is, with probability Special (High 0.9,
 *    Medium 0.6, N/A 0), one of a recurring set of 7 classes, else any
 *    class (the context profiler then sees a (7, p)-dominated window);
 *  - connectivity alternates, exponential durations: Rare 4 h connected /
 *    10 min not, Medium 1 h / 10 min, Often 15 min / 5 min.
 * NestDNN's concurrency traces (thesis section 3.5.3): each second an app
 * starts with probability 0.35 (when fewer than 6 run) and one stops with
 * probability 0.2 (when more than 2 run); every running app makes one
 * request per second (one second of its frames). */
#include "sched_int.h"
#include "rtl_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rng {
    uint64_t s;
};
static uint64_t next(struct rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double unif(struct rng *r) { return (double)(next(r) >> 11) / 9007199254740992.0; }
static double expo(struct rng *r, double mean) { return -mean * log(1 - unif(r)); }

static const struct scenario {
    const char *apps[6];
    int napps, faces;          /* the first `faces` apps are face apps */
    double up_s, down_s;       /* mean connected / disconnected durations */
    double special;
} scen[3] = {
    {{"D", "G", "R", "Y", "V", "S"}, 6, 4, 3600, 600, 0.9},   /* S1 professional: Medium, High */
    {{"D", "V"}, 2, 1, 4 * 3600, 600, 0.6},                   /* S2 home maker: Rare, Medium */
    {{"D", "G", "R", "Y", "S"}, 5, 4, 900, 300, 0.0},         /* S3 transit worker: Often, N/A */
};

int rtl_trace_apps(enum rtl_trace_kind kind, const char **names)
{
    if ((unsigned)kind >= RTL_TRACE_CONCURRENCY) return 0;
    for (int i = 0; names && i < scen[kind].napps; i++) names[i] = scen[kind].apps[i];
    return scen[kind].napps;
}

struct evs {
    rtl_trace_event *e;
    size_t n, cap;
};
static int add(struct evs *v, double t, int kind, int task, uint64_t frame, int cls)
{
    if (v->n == v->cap) {
        size_t c = v->cap ? 2 * v->cap : 1024;
        rtl_trace_event *e = realloc(v->e, c * sizeof *e);
        if (!e) return -1;
        v->e = e, v->cap = c;
    }
    rtl_trace_event *e = &v->e[v->n++];
    memset(e, 0, sizeof *e); /* padding too: same seed, same bytes */
    e->t = t, e->kind = kind, e->task = task, e->frame = frame, e->cls = cls;
    return 0;
}

int rtl_trace_generate(enum rtl_trace_kind kind, int tasks, int classes, double duration_s, double fps,
                       uint64_t seed, rtl_trace *out, rtl_err *err)
{
    if (!out || (unsigned)kind >= RTL_TRACE_COUNT) return rtl_errf(err, "trace: unknown kind");
    if (kind == RTL_TRACE_SKEWED) return rtl_errf(err, "trace: a skewed trace needs its context (rtl_trace_skewed)");
    memset(out, 0, sizeof *out);
    if (!(duration_s > 0 && duration_s <= 1e7) || !(fps > 0 && fps <= 1000) || classes < 1)
        return rtl_errf(err, "trace: duration (0..1e7 s), fps (0..1000) or classes (>= 1) out of range");
    if (duration_s * fps > 5e7) return rtl_errf(err, "trace: more than 5e7 frames (lower the duration or fps)");
    struct rng r = {seed};
    struct evs v = {0};
    int bad = 0;
    if (kind == RTL_TRACE_CONCURRENCY) {
        if (tasks < 2) return rtl_errf(err, "trace: a concurrency trace needs at least 2 tasks (%d given)", tasks);
        int run[SCHED_MAX_TASKS] = {0}, n = 0, maxrun = tasks < 6 ? tasks : 6;
        for (uint64_t sec = 0; sec < (uint64_t)duration_s && !bad; sec++) {
            double t = (double)sec;
            int want_start = n < 2 || (n < maxrun && unif(&r) < 0.35);
            int want_stop = n > 2 && unif(&r) < 0.2;
            if (want_start) {
                int k = (int)(next(&r) % (uint64_t)(tasks - n)), i;
                for (i = 0; i < tasks; i++)
                    if (!run[i] && k-- == 0) break;
                run[i] = 1, n++;
                bad |= add(&v, t, 3, i, sec, -1);
                if (n < 2) sec--, want_stop = 0; /* fill up to two at once */
            }
            if (want_stop && n > 2) {
                int k = (int)(next(&r) % (uint64_t)n), i;
                for (i = 0; i < tasks; i++)
                    if (run[i] && k-- == 0) break;
                run[i] = 0, n--;
                bad |= add(&v, t, 4, i, sec, -1);
            }
            if (n < 2) continue;
            for (int i = 0; i < tasks; i++)
                if (run[i]) bad |= add(&v, t, 0, i, sec, (int)(next(&r) % (uint64_t)classes));
        }
    } else {
        const struct scenario *sc = &scen[kind];
        if (tasks < sc->napps)
            return rtl_errf(err, "trace: scenario S%d has %d apps, only %d tasks registered", kind + 1, sc->napps, tasks);
        double next_net = expo(&r, sc->up_s), enc_end = -1, next_enc = expo(&r, 60);
        int up = 1, person = 0;
        uint64_t frames = (uint64_t)(duration_s * fps);
        for (uint64_t f = 0; f < frames && !bad; f++) {
            double t = (double)f / fps;
            while (t >= next_net) {
                up = !up;
                bad |= add(&v, next_net, up ? 1 : 2, -1, f, -1);
                next_net += expo(&r, up ? sc->up_s : sc->down_s);
            }
            if (t >= next_enc) {
                enc_end = t + expo(&r, 20);
                next_enc = enc_end + expo(&r, 60);
                person = unif(&r) < sc->special ? (int)(next(&r) % 7) % classes
                                                 : (int)(next(&r) % (uint64_t)classes);
            }
            if (t < enc_end)
                for (int a = 0; a < sc->faces; a++) bad |= add(&v, t, 0, a, f, person);
            for (int a = sc->faces; a < sc->napps; a++)
                if (unif(&r) < 0.5) bad |= add(&v, t, 0, a, f, (int)(next(&r) % (uint64_t)classes));
        }
    }
    if (bad) {
        free(v.e);
        return rtl_errf(err, "trace: out of memory");
    }
    out->ev = v.e, out->n = v.n, out->duration_s = duration_s;
    return 0;
}

int rtl_trace_skewed(const rtl_skew *k, int tasks, int classes, double duration_s, double fps, uint64_t seed,
                     rtl_trace *out, rtl_err *err)
{
    if (!out || !k || !k->ctx || !k->nctx) return rtl_errf(err, "trace: a skewed trace needs the context's classes");
    memset(out, 0, sizeof *out);
    if (!(duration_s > 0 && duration_s <= 1e7) || !(fps > 0 && fps <= 1000) || classes < 1 || tasks < 1 ||
        !(k->p >= 0 && k->p <= 1) || !(k->start_frac >= 0 && k->start_frac <= k->end_frac && k->end_frac <= 1))
        return rtl_errf(err, "trace: duration (0..1e7 s), fps (0..1000), classes and tasks (>= 1), p (0..1) or "
                             "the context's span (0 <= start <= end <= 1) out of range");
    if (duration_s * fps * tasks > 5e7) return rtl_errf(err, "trace: more than 5e7 requests (lower the duration or fps)");
    for (size_t i = 0; i < k->nctx; i++)
        if (k->ctx[i] >= (uint32_t)classes)
            return rtl_errf(err, "trace: context class %u is not below the class count %d", k->ctx[i], classes);
    struct rng r = {seed};
    struct evs v = {0};
    int bad = 0;
    uint64_t frames = (uint64_t)(duration_s * fps);
    for (uint64_t f = 0; f < frames && !bad; f++) {
        double t = (double)f / fps;
        int in = t >= k->start_frac * duration_s && t < k->end_frac * duration_s;
        int cls = in && unif(&r) < k->p ? (int)k->ctx[next(&r) % k->nctx] : (int)(next(&r) % (uint64_t)classes);
        for (int a = 0; a < tasks; a++) bad |= add(&v, t, 0, a, f, cls);
    }
    if (bad) {
        free(v.e);
        return rtl_errf(err, "trace: out of memory");
    }
    out->ev = v.e, out->n = v.n, out->duration_s = duration_s;
    return 0;
}

void rtl_trace_free(rtl_trace *t)
{
    if (!t) return;
    free(t->ev);
    memset(t, 0, sizeof *t);
}

int rtl_sim_run(rtl_sched *s, const rtl_trace *t, int buckets, rtl_sim_result *out, rtl_err *err)
{
    if (!s || !t || !out || buckets < 1 || buckets > 100000)
        return rtl_errf(err, "simulate: no scheduler or trace, or buckets outside 1..100000");
    memset(out, 0, sizeof *out);
    int nt = (int)s->ntasks;
    out->buckets = buckets, out->tasks = nt;
    out->first_refusal_s = out->energy_out_s = out->cash_out_s = -1;
    double *sum = calloc((size_t)nt * (size_t)buckets, sizeof *sum);
    double *cnt = calloc((size_t)nt * (size_t)buckets, sizeof *cnt);
    double *us = malloc((t->n ? t->n : 1) * sizeof *us);
    out->acc = malloc((size_t)nt * (size_t)buckets * sizeof *out->acc);
    if (!sum || !cnt || !us || !out->acc) {
        free(sum), free(cnt), free(us), free(out->acc);
        out->acc = NULL;
        return rtl_errf(err, "simulate: out of memory");
    }
    size_t nus = 0;
    double accsum = 0, fpssum = 0, mjsum = 0, frames = 0;
    uint64_t fpsn = 0;
    int per_second = 0; /* NestDNN's concurrency traces (apps start and stop) */
    for (size_t i = 0; i < t->n && !per_second; i++) per_second = t->ev[i].kind == 3 || t->ev[i].kind == 4;
    double e0 = s->energy_left, c0 = s->usd_left;
    for (size_t i = 0; i < t->n; i++) {
        const rtl_trace_event *e = &t->ev[i];
        if (e->kind == 1 || e->kind == 2) {
            rtl_sched_budget b;
            rtl_sched_get_budget(s, &b);
            b.disconnected = e->kind == 2;
            b.horizon_s = fmax(1e-3, s->horizon_end - e->t);
            if (rtl_sched_set_budget(s, &b, e->t, err) != 0) goto fail;
            continue;
        }
        if (e->task < 0 || e->task >= nt) continue;
        if (e->kind == 3 || e->kind == 4) {
            if (rtl_sched_set_active(s, e->task, e->kind == 3, err) != 0) goto fail;
            continue;
        }
        rtl_sched_decision d;
        struct timespec a, z;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int rc = rtl_sched_decide(s, e->task, e->t, e->frame, e->cls, &d, err);
        clock_gettime(CLOCK_MONOTONIC, &z);
        if (rc != 0) goto fail;
        us[nus++] = (double)(z.tv_sec - a.tv_sec) * 1e6 + (double)(z.tv_nsec - a.tv_nsec) / 1e3;
        out->requests++;
        int b = (int)(e->t / t->duration_s * buckets);
        if (b >= buckets) b = buckets - 1;
        if (b < 0) b = 0;
        cnt[e->task * buckets + b]++;
        if (d.option < 0) {
            out->refused++;
            if (out->first_refusal_s < 0) out->first_refusal_s = e->t;
            if (out->energy_out_s < 0 && strstr(d.reason, "energy budget is spent")) out->energy_out_s = e->t;
            if (out->cash_out_s < 0 && strstr(d.reason, "cloud budget is spent")) out->cash_out_s = e->t;
            continue;
        }
        out->served++;
        accsum += d.top1;
        sum[e->task * buckets + b] += d.top1;
        double inf_ms = d.latency_ms - d.load_ms, inf_mj = d.energy_mj - d.load_mj;
        double fps = inf_ms > 0 ? fmin(s->c.camera_fps, fmax(0, 1000 - d.load_ms) / inf_ms) : s->c.camera_fps;
        fpssum += fps, fpsn++;
        if (per_second) {
            /* a concurrency request is one second of the app's frames: as
             * many inferences as its frame rate (a page-in takes its time
             * out of that second), each charged, and the page-in once */
            double sec_mj = fps * inf_mj + d.load_mj;
            mjsum += sec_mj, frames += fps;
            out->energy_mj += sec_mj;
        } else {
            mjsum += d.energy_mj, frames++;
            out->energy_mj += d.energy_mj;
        }
        out->cloud_usd += d.cloud_usd;
    }
    out->accuracy = out->requests ? accsum / (double)out->requests : 0;
    out->fps = fpsn ? fpssum / (double)fpsn : 0;
    out->mj_per_frame = frames > 0 ? mjsum / frames : 0;
    if (e0 >= 0 && out->energy_out_s < 0 && s->energy_left <= 0) out->energy_out_s = t->duration_s;
    if (c0 >= 0 && out->cash_out_s < 0 && s->usd_left <= 0) out->cash_out_s = t->duration_s;
    for (int i = 0; i < nt * buckets; i++) out->acc[i] = cnt[i] > 0 ? sum[i] / cnt[i] : -1;
    if (nus) {
        qsort(us, nus, sizeof *us, rtl_cmp_double);
        out->decide_us_median = us[nus / 2];
        out->decide_us_p99 = us[(size_t)((double)(nus - 1) * 0.99)];
    }
    free(sum), free(cnt), free(us);
    return 0;
fail:
    free(sum), free(cnt), free(us), free(out->acc);
    out->acc = NULL;
    return -1;
}

void rtl_sim_result_free(rtl_sim_result *r)
{
    if (!r) return;
    free(r->acc);
    r->acc = NULL;
}
