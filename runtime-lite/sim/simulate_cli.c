/* simulate_cli.c: `rtl simulate`, the trace-driven simulator of the
 * scheduler (rtl_sim.h), built into the host's rtl only: the device's rtl
 * (make CROSS=...) has no simulate verb. */
#include "rtl_sched_cli.h"
#include "rtl_sim.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The catalog's tasks that have nested capacities (NestDNN's multi-capacity
 * models), at most max; their count. */
static int nested_tasks(rtl_catalog *cat, const struct sched_cli *o, const char **out, int max)
{
    rtl_sched_source src = {.target = o->target, .device_mw = o->device_mw, .cloud_gflops = o->cloud_gflops};
    int n = 0;
    for (size_t i = 0; i < catalog_info(cat).task_count && n < max; i++) {
        rtl_sched_config c = {.policy = RTL_POLICY_NEST_TOTAL};
        rtl_sched *probe = rtl_sched_new(&c, NULL);
        const char *name = catalog_info(cat).task_names[i];
        if (probe && rtl_sched_add_catalog(probe, cat, name, "x", &src, NULL) == 0) {
            const rtl_sched_task *t = rtl_sched_task_at(probe, 0);
            int caps = 0;
            for (size_t k = 0; t && k < t->n; k++) caps |= t->options[k].capacity > 0;
            if (caps) out[n++] = name;
        }
        rtl_sched_free(probe);
    }
    return n;
}

static const char *trace_names[RTL_TRACE_COUNT] = {"s1", "s2", "s3", "concurrency", "skewed"};

/* Task t's first cascade option of at most 7 classes; NULL: none. */
static const rtl_sched_option *small_cascade(const rtl_sched_task *t)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (t->options[i].context_nclasses && t->options[i].context_nclasses <= 7) return &t->options[i];
    return NULL;
}

/* The first task of cat with such a cascade (the skewed trace's app1 when
 * --app does not name one); NULL: none. */
static const char *cascade_task(rtl_catalog *cat, const struct sched_cli *o)
{
    rtl_sched_source src = {.target = o->target, .device_mw = o->device_mw, .cloud_gflops = o->cloud_gflops};
    for (size_t i = 0; i < catalog_info(cat).task_count; i++) {
        rtl_sched_config c = {.policy = RTL_POLICY_MCDNN};
        rtl_sched *probe = rtl_sched_new(&c, NULL);
        const char *name = catalog_info(cat).task_names[i];
        int ok = probe && rtl_sched_add_catalog(probe, cat, name, "x", &src, NULL) == 0 &&
                 small_cascade(rtl_sched_task_at(probe, 0));
        rtl_sched_free(probe);
        if (ok) return name;
    }
    return NULL;
}

/* The skewed trace (issue 39): the context of the first cascade option
 * (n <= 7) of app1's task, its classes holding o->context_p of the frames
 * from 10% to 90% of the trace, the other frames of any of the task's
 * classes; described into desc. */
static int skewed_trace(rtl_catalog *cat, const struct sched_cli *o, const char *const *apps, double dur,
                        rtl_trace *tr, char *desc, size_t dn, rtl_err *err)
{
    rtl_sched *s = sched_build(cat, RTL_POLICY_MCDNN, 1, apps, (const char *const *)o->app_task, o, dur, err);
    if (!s) return -1;
    const rtl_sched_task *t = rtl_sched_task_at(s, 0);
    const rtl_sched_option *c = small_cascade(t);
    size_t nl = 0;
    if (t) rtl_catalog_task_labels(cat, t->task, &nl);
    int classes = (int)nl;
    if (!c) {
        rtl_errf_cli(err, "trace skewed: task %s has no specialised cascade of at most 7 classes with measured gains "
                      "(prune specialise's cascade_in_context)", t ? t->task : "?");
        rtl_sched_free(s);
        return -1;
    }
    rtl_skew k = {.ctx = c->context_classes, .nctx = c->context_nclasses, .p = o->context_p, .start_frac = 0.1,
                  .end_frac = 0.9};
    int n = snprintf(desc, dn, "skewed: seed %lld, %g h at %g frames/s, task %s; classes {", o->seed, o->hours, o->fps,
                     t->task);
    for (size_t i = 0; i < c->context_nclasses && n > 0 && (size_t)n < dn; i++)
        n += snprintf(desc + n, dn - (size_t)n, "%s%u", i ? "," : "", c->context_classes[i]);
    if (n > 0 && (size_t)n < dn)
        snprintf(desc + n, dn - (size_t)n, "} (context of %s, n=%zu) hold p=%g of the frames from %.2f h to %.2f h, "
                 "any of %d classes elsewhere", c->variant, c->context_nclasses, o->context_p, 0.1 * o->hours,
                 0.9 * o->hours, classes);
    int rc = rtl_trace_skewed(&k, 1, classes, dur, o->fps, (uint64_t)o->seed, tr, err);
    rtl_sched_free(s);
    return rc;
}

static void fmt_time(double s, char *out, size_t n)
{
    if (s < 0) snprintf(out, n, "-");
    else snprintf(out, n, "%.2f h", s / 3600);
}

/* Figure 11 of MCDNN: accuracy over time per application, one panel per
 * policy (small multiples), written as every output is (rtl_write_file). */
static int write_svg(const char *path, const char *title, const rtl_sim_result *r, const int *pol, int np,
                     const char *const *apps, int napps, double duration_s, const rtl_trace *tr)
{
    static const char *col[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        fprintf(stderr, "rtl: error: out of memory for the figure %s\n", path);
        return 1;
    }
    int W = 520, H = 170, cols = 2, rows = (np + cols - 1) / cols;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"11\">\n<text x=\"10\" y=\"18\" font-size=\"14\">%s: accuracy over time per application "
               "(x: hours, y: top-1 0..1; grey: cloud disconnected)</text>\n",
            cols * W, rows * H + 60, title);
    for (int a = 0; a < napps; a++)
        fprintf(f, "<text x=\"%d\" y=\"38\" fill=\"%s\">%s</text>\n", 10 + 90 * a, col[a % 8], apps[a]);
    for (int k = 0; k < np; k++) {
        const rtl_sim_result *x = &r[k];
        int ox = (k % cols) * W + 40, oy = (k / cols) * H + 50, pw = W - 60, ph = H - 40;
        fprintf(f, "<g><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", ox, oy,
                pw, ph);
        /* disconnected periods shaded, as in MCDNN's Figure 11 */
        double down = -1;
        for (size_t e = 0; e <= tr->n; e++) {
            int end = e == tr->n;
            if (!end && tr->ev[e].kind == 2 && down < 0) down = tr->ev[e].t;
            if ((end || tr->ev[e].kind == 1) && down >= 0) {
                double up = end ? duration_s : tr->ev[e].t;
                fprintf(f, "<rect class=\"offline\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#ddd\"/>\n",
                        ox + pw * down / duration_s, oy, fmax(0.5, pw * (up - down) / duration_s), ph);
                down = -1;
            }
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\">%s (mean %.3f)</text>\n", ox + 4, oy + 12, rtl_policy_get(pol[k])->name,
                x->accuracy);
        fprintf(f, "<text x=\"%d\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\">%.0f h</text>\n", ox, oy + ph + 12,
                ox + pw - 20, oy + ph + 12, duration_s / 3600);
        for (int a = 0; a < napps && a < x->tasks; a++) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" points=\"", col[a % 8]);
            for (int b = 0; b < x->buckets; b++) {
                double v = x->acc[a * x->buckets + b];
                if (v < 0) continue;
                fprintf(f, "%.1f,%.1f ", ox + pw * (b + 0.5) / x->buckets, oy + ph * (1 - v));
            }
            fprintf(f, "\"/>\n");
        }
        fprintf(f, "</g>\n");
    }
    fprintf(f, "</svg>\n");
    rtl_err err = {{0}};
    int rc = fclose(f) != 0;
    if (rc) snprintf(err.msg, sizeof err.msg, "out of memory for the figure %s", path);
    else rc = rtl_write_file(path, text, len, &err);
    free(text);
    if (rc != 0) fprintf(stderr, "rtl: error: %s\n", err.msg);
    return rc != 0;
}

/* y at x on the curve (xs, ys) of n points: linear between the two
 * neighbours around x (points sorted by x first); NAN outside the curve. */
static double interp(const double *xs, const double *ys, int n, double x)
{
    int idx[64];
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort by x */
        for (int j = i; j > 0 && xs[idx[j]] < xs[idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1], idx[j - 1] = t;
        }
    double best = NAN;
    for (int i = 0; i + 1 < n; i++) {
        double x0 = xs[idx[i]], x1 = xs[idx[i + 1]];
        if (x < x0 || x > x1) continue;
        double y = x1 > x0 ? ys[idx[i]] + (ys[idx[i + 1]] - ys[idx[i]]) * (x - x0) / (x1 - x0)
                           : fmax(ys[idx[i]], ys[idx[i + 1]]);
        if (isnan(best) || y > best) best = y; /* a non-monotone curve: its best crossing */
    }
    for (int i = 0; i < n; i++)
        if (xs[i] == x && (isnan(best) || ys[i] > best)) best = ys[i];
    return best;
}

/* NestDNN's comparison (thesis section 3.5.3): its policies over a sweep
 * of alpha against the fixed knee model on the same trace: accuracy at the
 * knee's frame rate, frame rate at the knee's accuracy, and energy per
 * frame at the knee's accuracy (interpolated along the sweep). */
static const double alphas[] = {0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10, 100};
#define NALPHA ((int)(sizeof alphas / sizeof *alphas))

static int alpha_sweep(rtl_catalog *cat, const rtl_trace *tr, const struct sched_cli *o0, int napps,
                       const char *const *apps, const rtl_sim_result *knee, int json)
{
    rtl_err err;
    static const int nest[2] = {RTL_POLICY_NEST_TOTAL, RTL_POLICY_NEST_MAX};
    if (json) printf(",\"alpha_sweep\":[");
    else
        printf("  NestDNN over alpha (A in points, L in ms), against the knee (accuracy %.4f, %.2f fps, %.2f mJ/frame):\n"
               "  %-12s %8s %9s %8s %9s\n",
               knee->accuracy, knee->fps, knee->mj_per_frame, "policy", "alpha", "accuracy", "fps", "mJ/frame");
    for (int p = 0; p < 2; p++) {
        double acc[NALPHA], fps[NALPHA], mj[NALPHA];
        for (int a = 0; a < NALPHA; a++) {
            struct sched_cli o = *o0;
            o.alpha = alphas[a];
            rtl_sim_result r;
            rtl_sched *s = sched_build(cat, (enum rtl_policy)nest[p], napps, apps, (const char *const *)o.app_task, &o,
                                       tr->duration_s, &err);
            if (!s || rtl_sim_run(s, tr, 1, &r, &err) != 0) {
                rtl_sched_free(s);
                return fail(&err);
            }
            rtl_sched_free(s);
            acc[a] = r.accuracy, fps[a] = r.fps, mj[a] = r.mj_per_frame;
            rtl_sim_result_free(&r);
            if (json)
                printf("%s{\"policy\":\"%s\",\"alpha\":%g,\"accuracy\":%.6f,\"fps\":%.4f,\"mj_per_frame\":%.4f}",
                       p || a ? "," : "", rtl_policy_get(nest[p])->name, alphas[a], acc[a], fps[a], mj[a]);
            else
                printf("  %-12s %8g %9.4f %8.2f %9.2f\n", rtl_policy_get(nest[p])->name, alphas[a], acc[a], fps[a], mj[a]);
        }
        double a_at_fps = interp(fps, acc, NALPHA, knee->fps);
        double f_at_acc = interp(acc, fps, NALPHA, knee->accuracy);
        double e_at_acc = interp(acc, mj, NALPHA, knee->accuracy);
        if (json) {
            printf(",{\"policy\":\"%s\",\"vs_knee\":{\"accuracy_at_knee_fps\":", rtl_policy_get(nest[p])->name);
            if (isnan(a_at_fps)) printf("null");
            else printf("%.6f", a_at_fps);
            printf(",\"fps_at_knee_accuracy\":");
            if (isnan(f_at_acc)) printf("null");
            else printf("%.4f", f_at_acc);
            printf(",\"mj_at_knee_accuracy\":");
            if (isnan(e_at_acc)) printf("null");
            else printf("%.4f", e_at_acc);
            printf("}}");
        } else {
            printf("  %s vs knee: ", rtl_policy_get(nest[p])->name);
            if (isnan(a_at_fps)) printf("the knee's frame rate is outside the sweep; ");
            else printf("at %.2f fps accuracy %.4f (%+.2f points); ", knee->fps, a_at_fps, 100 * (a_at_fps - knee->accuracy));
            double lo_acc = acc[0], lo_fps = fps[0], lo_mj = mj[0];
            for (int a = 1; a < NALPHA; a++)
                if (acc[a] < lo_acc) lo_acc = acc[a], lo_fps = fps[a], lo_mj = mj[a];
            if (isnan(f_at_acc) && lo_acc > knee->accuracy)
                printf("every alpha is more accurate than the knee; the least accurate (%.4f) runs %.2f fps (%.2fx) at "
                       "%.2f mJ/frame (%.2fx less energy)\n",
                       lo_acc, lo_fps, lo_fps / knee->fps, lo_mj, knee->mj_per_frame / lo_mj);
            else if (isnan(f_at_acc)) printf("the knee's accuracy is outside the sweep\n");
            else
                printf("at accuracy %.4f %.2f fps (%.2fx) and %.2f mJ/frame (%.2fx less energy)\n", knee->accuracy, f_at_acc,
                       f_at_acc / knee->fps, e_at_acc, knee->mj_per_frame / e_at_acc);
        }
    }
    if (json) printf("]");
    return 0;
}

static int simulate_trace(rtl_catalog *cat, enum rtl_trace_kind kind, const struct sched_cli *o, int json,
                          const char *svg, int *first_json)
{
    rtl_err err;
    const char *apps[SCHED_CLI_MAX_APPS];
    int napps = rtl_trace_apps(kind, apps);
    static char cnames[SCHED_CLI_MAX_APPS][16];
    if (kind == RTL_TRACE_SKEWED) napps = 1, apps[0] = "app1";
    if (kind == RTL_TRACE_CONCURRENCY) {
        napps = (int)o->apps;
        for (int a = 0; a < napps; a++) snprintf(cnames[a], sizeof cnames[a], "app%d", a + 1), apps[a] = cnames[a];
    }
    double dur = o->hours * 3600;
    struct sched_cli oc = *o;
    for (int a = 0; a < napps && a < SCHED_CLI_MAX_APPS; a++) {
        oc.app_task[a] = NULL;
        for (int k = 0; k < o->nmap; k++)
            if (strlen(apps[a]) == o->map_len[k] && !strncmp(apps[a], o->map_app[k], o->map_len[k]))
                oc.app_task[a] = o->map_task[k];
    }
    /* MCDNN's traces: the knee strawman is the best fixed model of all the
     * task's variants; NestDNN's: the knee among the nested capacities */
    oc.knee_any = kind != RTL_TRACE_CONCURRENCY;
    if (kind == RTL_TRACE_CONCURRENCY) { /* NestDNN's evaluation has no energy or money budget */
        oc.energy_wh = o->energy_set ? o->energy_wh : -1;
        oc.cloud_usd = -1;
        /* NestDNN's apps run multi-capacity models: apps without --app go
         * to the tasks with nested capacities in turn, when there are any */
        const char *nt[64];
        int nn = nested_tasks(cat, o, nt, 64);
        for (int a = 0, j = 0; nn && a < napps; a++)
            if (!oc.app_task[a]) oc.app_task[a] = nt[j++ % nn];
    }
    if (kind == RTL_TRACE_SKEWED && !oc.app_task[0]) oc.app_task[0] = cascade_task(cat, &oc);
    o = &oc;
    rtl_trace tr;
    /* the class count of the first app's task drives the context profiler */
    int classes = 10;
    {
        size_t n = 0;
        if (catalog_info(cat).task_count && rtl_catalog_task_labels(cat, catalog_info(cat).task_names[0], &n) && n)
            classes = (int)n;
    }
    char desc[512] = "";
    if (kind == RTL_TRACE_SKEWED ? skewed_trace(cat, o, apps, dur, &tr, desc, sizeof desc, &err) != 0
                                 : rtl_trace_generate(kind, napps, classes, dur, o->fps, (uint64_t)o->seed, &tr, &err) != 0)
        return fail(&err);
    int pol[RTL_POLICY_COUNT], np = 0;
    for (int p = 0; p < RTL_POLICY_COUNT; p++) {
        /* the planned policies (NestDNN's, the knee) on the concurrency trace, the rest on
         * MCDNN's; the knee on both (its row says it plans) */
        int nest = rtl_policy_get((enum rtl_policy)p)->planned;
        if (o->npolicies) {
            for (int i = 0; i < o->npolicies; i++)
                if (o->policies[i] == p) pol[np++] = p;
        } else if ((kind == RTL_TRACE_CONCURRENCY) == nest || (kind != RTL_TRACE_CONCURRENCY && p == RTL_POLICY_KNEE)) {
            pol[np++] = p;
        }
    }
    rtl_sim_result res[RTL_POLICY_COUNT];
    memset(res, 0, sizeof res);
    int rc = 0;
    for (int k = 0; k < np && !rc; k++) {
        rtl_sched *s = sched_build(cat, (enum rtl_policy)pol[k], napps, apps, (const char *const *)o->app_task, o, dur,
                                   &err);
        if (!s || rtl_sim_run(s, &tr, o->buckets, &res[k], &err) != 0) rc = fail(&err);
        rtl_sched_free(s);
    }
    if (rc) goto out;
    if (json) {
        printf("%s{\"trace\":\"%s\",\"seed\":%lld,\"hours\":%g,\"fps\":%g,\"energy_wh\":%g,\"cloud_usd\":%g,"
               "\"description\":\"%s\",\"policies\":[",
               *first_json ? "" : ",", trace_names[kind], o->seed, o->hours, o->fps, o->energy_wh, o->cloud_usd, desc);
        for (int k = 0; k < np; k++) {
            const rtl_sim_result *x = &res[k];
            printf("%s{\"policy\":\"%s\",\"requests\":%llu,\"served\":%llu,\"refused\":%llu,\"accuracy\":%.6f,"
                   "\"energy_wh\":%.9g,\"cloud_usd\":%.9g,\"energy_out_s\":%.1f,\"cash_out_s\":%.1f,"
                   "\"first_refusal_s\":%.1f,\"fps\":%.4f,\"mj_per_frame\":%.4f,\"decide_us_median\":%.3f,"
                   "\"decide_us_p99\":%.3f}",
                   k ? "," : "", rtl_policy_get(pol[k])->name, (unsigned long long)x->requests,
                   (unsigned long long)x->served, (unsigned long long)x->refused, x->accuracy, x->energy_mj / 3.6e6,
                   x->cloud_usd, x->energy_out_s, x->cash_out_s, x->first_refusal_s, x->fps, x->mj_per_frame,
                   x->decide_us_median, x->decide_us_p99);
        }
        printf("]");
        *first_json = 0;
    } else {
        char eb[32] = "none", cb[32] = "none", mb[32] = "unlimited";
        if (o->energy_wh >= 0) snprintf(eb, sizeof eb, "%.4g Wh", o->energy_wh);
        if (o->cloud_usd >= 0) snprintf(cb, sizeof cb, "$%.4g", o->cloud_usd);
        if (o->memory_mb > 0) snprintf(mb, sizeof mb, "%.4g MB", o->memory_mb);
        printf("trace %s: %zu events, %.4g h, %g frames/s, seed %lld; energy budget %s, cloud budget %s, memory %s\n",
               trace_names[kind], tr.n, o->hours, o->fps, o->seed, eb, cb, mb);
        if (desc[0]) printf("  trace %s\n", desc);
        printf("  %-12s %9s %8s %9s %10s %9s %10s %10s", "policy", "accuracy", "served", "energy_Wh", "cloud_usd",
               "energy_out", "cash_out", "decide_us");
        if (kind == RTL_TRACE_CONCURRENCY) printf(" %8s %9s", "fps", "mJ/frame");
        printf("\n");
        for (int k = 0; k < np; k++) {
            const rtl_sim_result *x = &res[k];
            char eo[32], co[32];
            fmt_time(x->energy_out_s, eo, sizeof eo);
            fmt_time(x->cash_out_s, co, sizeof co);
            printf("  %-12s %9.4f %7.1f%% %9.4f %10.5f %10s %10s %10.2f", rtl_policy_get(pol[k])->name, x->accuracy,
                   x->requests ? 100.0 * (double)x->served / (double)x->requests : 0, x->energy_mj / 3.6e6,
                   x->cloud_usd, eo, co, x->decide_us_median);
            if (kind == RTL_TRACE_CONCURRENCY) printf(" %8.2f %9.2f", x->fps, x->mj_per_frame);
            printf("\n");
        }
    }
    if (svg) rc = write_svg(svg, trace_names[kind], res, pol, np, apps, napps, dur, &tr);
    if (!rc && kind == RTL_TRACE_CONCURRENCY && !o->alpha_set) {
        int knee = -1;
        for (int k = 0; k < np; k++)
            if (pol[k] == RTL_POLICY_KNEE) knee = k;
        if (knee >= 0) rc = alpha_sweep(cat, &tr, o, napps, apps, &res[knee], json);
    }
    if (json) printf("}");
out:
    for (int k = 0; k < np; k++) rtl_sim_result_free(&res[k]);
    rtl_trace_free(&tr);
    return rc;
}

/* ---- rtl simulate --bench ------------------------------------------------ */

static double mono_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Decision time with 10 applications of 50 options each (synthetic,
 * seeded: accuracy 0.4-0.9, latency 1-100 ms, energy and cloud time to
 * match, a third splittable, memory for about half of the models, energy
 * and money budgets that bind), `n` requests at 10 per second across the
 * apps; per policy the median and 99th percentile of single decisions
 * (each timed alone with CLOCK_MONOTONIC). The reference, measured in the
 * same run: the knee policy, whose decision is a fixed lookup through the
 * same entry point (the cost of the call, the profiler window and the
 * accounting). */
static int sched_bench(long long n, long long seed, int json)
{
    enum { APPS = 10, OPTS = 50 };
    static const int pols[] = {RTL_POLICY_KNEE, RTL_POLICY_MCDNN, RTL_POLICY_NO_SHARING, RTL_POLICY_NEST_TOTAL,
                               RTL_POLICY_NEST_MAX, RTL_POLICY_DEVICE_ONLY};
    int np = (int)(sizeof pols / sizeof *pols);
    double *us = malloc((size_t)n * sizeof *us), med[8], p99[8];
    if (!us) {
        fprintf(stderr, "rtl: error: out of memory\n");
        return 1;
    }
    rtl_err err;
    for (int k = 0; k < np; k++) {
        uint64_t r = (uint64_t)seed * 2654435761u + 1;
#define U() ((r ^= r << 13, r ^= r >> 7, r ^= r << 17), (double)(r >> 11) / 9007199254740992.0)
        rtl_sched_config c = {.policy = (enum rtl_policy)pols[k], .nest_alpha = 0.05};
        rtl_sched *s = rtl_sched_new(&c, &err);
        if (!s) return free(us), fail(&err);
        for (int a = 0; a < APPS; a++) {
            rtl_sched_option o[OPTS];
            for (int i = 0; i < OPTS; i++) {
                memset(&o[i], 0, sizeof o[i]);
                snprintf(o[i].variant, sizeof o[i].variant, "v%d", i);
                double ms = 1 + U() * 99;
                o[i].capacity = -1, o[i].trunk = -1, o[i].partner = -1;
                o[i].top1 = 0.4 + 0.5 * U();
                o[i].device_ms = ms, o[i].device_mj = ms * 5;
                o[i].cloud_ms = 20 + ms / 10;
                o[i].split_frac = U() < 0.33 ? 0.2 + 0.6 * U() : 0;
                o[i].bytes = (uint64_t)(1e6 + U() * 9e6);
            }
            rtl_sched_task t = {.options = o, .n = OPTS, .a_min = 0.9, .l_max_ms = 33};
            snprintf(t.name, sizeof t.name, "app%d", a);
            if (rtl_sched_add_task(s, &t, &err) < 0 || rtl_sched_set_active(s, a, 1, &err) != 0) {
                rtl_sched_free(s);
                free(us);
                return fail(&err);
            }
        }
        rtl_sched_budget b = {.memory_bytes = 30000000, .energy_mj = 0.1 * 3.6e6, .cloud_usd = 0.02, .horizon_s = n / 10.0};
        if (rtl_sched_set_budget(s, &b, 0, &err) != 0) return rtl_sched_free(s), free(us), fail(&err);
        for (long long i = 0; i < n; i++) {
            rtl_sched_decision d;
            int app = (int)(U() * APPS);
            double t0 = mono_us();
            int rc = rtl_sched_decide(s, app, (double)i / 10, (uint64_t)i, (int)(U() * 10), &d, &err);
            us[i] = mono_us() - t0;
            if (rc != 0) return rtl_sched_free(s), free(us), fail(&err);
        }
#undef U
        rtl_sched_free(s);
        qsort(us, (size_t)n, sizeof *us, cmp_double);
        med[k] = us[n / 2];
        p99[k] = us[(size_t)((double)(n - 1) * 0.99)];
    }
    if (json) printf("{\"apps\":%d,\"options\":%d,\"decisions\":%lld,\"policies\":[", APPS, OPTS, n);
    else
        printf("decision time, %d applications x %d options, %lld decisions per policy (reference: knee)\n"
               "  %-12s %10s %10s %14s\n", APPS, OPTS, n, "policy", "median_us", "p99_us", "median/ref");
    for (int k = 0; k < np; k++) {
        if (json)
            printf("%s{\"policy\":\"%s\",\"median_us\":%.3f,\"p99_us\":%.3f,\"ratio_to_knee\":%.2f}", k ? "," : "",
                   rtl_policy_get(pols[k])->name, med[k], p99[k], med[k] / med[0]);
        else
            printf("  %-12s %10.3f %10.3f %14.2f\n", rtl_policy_get(pols[k])->name, med[k], p99[k], med[k] / med[0]);
    }
    if (json) printf("]}\n");
    free(us);
    return 0;
}

int cmd_simulate(rtl_store *st, int argc, char **argv)
{
    struct sched_cli o = SCHED_CLI_DEFAULTS;
    const char *trace = "all", *svg = NULL, *target = NULL;
    int json = 0, bench = 0;
    long long bench_n = 200000;
    ck_list pols = {0}, appmap = {0};
    const ck_opt opts[] = {
        {"--trace", "T", CK_STR, &trace, 0, 0,
         "s1, s2, s3 (MCDNN Table 5), concurrency (NestDNN), all (default: those four) or\n"
         "skewed (app1's task's specialised context holds --context-p of the frames)"},
        {"--context-p", "P", CK_REAL, &o.context_p, 0, 1, "skewed: the context's share of the frames (default 0.9)"},
        {"--policy", "P", CK_LIST, &pols, 0, 0,
         "run only these policies (repeatable): mcdnn, nest-total, nest-max, device-only,\n"
         "cloud-only, no-sharing, no-special, knee (default: the trace's set)"},
        {"--seed", "N", CK_INT, &o.seed, 0, 1e15, "trace seed (default 1)"},
        {"--hours", "H", CK_REAL, &o.hours, 0.001, 1000, "trace length (default 10, MCDNN's horizon)"},
        {"--fps", "F", CK_REAL, &o.fps, 0.001, 1000, "camera frames per second (default 1)"},
        {"--energy-wh", "E", CK_REAL, &o.energy_wh, -1, 1e6,
         "device energy budget over the trace (default 0.5, none for concurrency; -1: none)"},
        {"--cloud-usd", "C", CK_REAL, &o.cloud_usd, -1, 1e6, "cloud money budget over the trace (default 0.0667; -1: none)"},
        {"--memory-mb", "M", CK_REAL, &o.memory_mb, 0, 1e9, "device memory for models (default 0: unlimited)"},
        {"--latency-ms", "L", CK_REAL, &o.latency_ms, 0, 1e9, "latency budget per request (default 0: none)"},
        {"--target", "T", CK_STR, &target, 0, 0, "estimate target of the catalog (default jetson-nano)"},
        {"--alpha", "A", CK_REAL, &o.alpha, 0, 1e6,
         "NestDNN's alpha (default: the concurrency trace sweeps 0..100 and compares\n"
         "with the knee at equal frame rate and equal accuracy)"},
        {"--a-min", "A", CK_REAL, &o.a_min, -1, 1, "NestDNN's A_min for every app (default: its best accuracy)"},
        {"--l-max-ms", "L", CK_REAL, &o.l_max_ms, 0, 1e9, "NestDNN's L_max (default: 1000 / camera fps)"},
        {"--camera-fps", "F", CK_REAL, &o.camera_fps, 0, 1000,
         "concurrency: frames an app can get per second (default 30; 0: no cap, the\n"
         "frame rate is the processing rate)"},
        {"--apps", "N", CK_INT, &o.apps, 2, SCHED_CLI_MAX_APPS, "apps of the concurrency trace (default 8)"},
        {"--app", "APP=TASK", CK_LIST, &appmap, 0, 0,
         "the catalog task of a scenario app (D, G, R, Y, V, S or appN; default:\n"
         "the catalog's tasks in turn)"},
        {"--buckets", "N", CK_INT, &o.buckets, 1, 10000, "time buckets of the accuracy-over-time figure (default 60)"},
        {"--svg", "FILE", CK_STR, &svg, 0, 0, "write the accuracy-over-time figure (one trace only)"},
        {"--json", NULL, CK_FLAG, &json, 0, 0, "one JSON array of {trace, policies: [...]}"},
        {"--bench", NULL, CK_FLAG, &bench, 0, 0,
         "time single decisions: 10 apps x 50 synthetic options, every policy (no catalog)"},
        {"--decisions", "N", CK_INT, &bench_n, 100, 1e8, "decisions per policy for --bench (default 200000)"},
        {0},
    };
    const ck_verb v = {"simulate", NULL, NULL, "ID|ARCHIVE|MANIFEST [OPTIONS] | --bench",
                       "Generates seeded traces (MCDNN's S1-S3: apps, face encounters and repetition,\n"
                       "disconnections; NestDNN-style concurrency: apps start and stop each second) and\n"
                       "runs each through every policy on the catalog's numbers (this device's profile,\n"
                       "else the estimates, else the build host), printing accuracy, budget use, when a\n"
                       "budget ran out, decision time, and for concurrency frame rate and energy.\n",
                       opts,
                       "The catalog is an installed id, a catalog archive or a manifest.json. The trace\n"
                       "generator's numbers are in runtime-lite/src/sched_sim.c.\n"};
    int rc, i = sub_opts(argc, argv, &v, 0, 1, &rc);
    if (i < 0) return rc;
    if (bench) return sched_bench(bench_n, o.seed, json);
    if (o.camera_fps == 0) o.camera_fps = 1e9, o.l_max_ms = o.l_max_ms > 0 ? o.l_max_ms : 1000.0 / 30;
    if (i == argc) return ck_usage_of("rtl", &v, "missing argument"), 2;
    o.target = target;
    for (int a = 1; a < argc; a++) {
        o.energy_set |= !strcmp(argv[a], "--energy-wh");
        o.alpha_set |= !strcmp(argv[a], "--alpha");
    }
    int kinds[RTL_TRACE_COUNT], nk = 0;
    if (!strcmp(trace, "all")) {
        for (int k = 0; k < RTL_TRACE_SKEWED; k++) kinds[nk++] = k;
    } else {
        for (int k = 0; k < RTL_TRACE_COUNT; k++)
            if (!strcmp(trace, trace_names[k])) kinds[nk++] = k;
        if (!nk) return ck_usage_of("rtl", &v, "unknown trace '%s' (s1, s2, s3, concurrency, skewed, all)", trace), 2;
    }
    if (svg && nk != 1) return ck_usage_of("rtl", &v, "--svg needs one --trace"), 2;
    for (int k = 0; k < pols.n; k++) {
        int p = rtl_policy_find(pols.v[k]);
        if (p < 0) return ck_usage_of("rtl", &v, "unknown policy '%s'", pols.v[k]), 2;
        o.policies[o.npolicies++] = p;
    }
    for (int k = 0; k < appmap.n; k++) {
        const char *eq = strchr(appmap.v[k], '=');
        if (!eq || eq == appmap.v[k] || !eq[1])
            return ck_usage_of("rtl", &v, "--app wants APP=TASK, got '%s'", appmap.v[k]), 2;
        int idx = -1;
        size_t n = (size_t)(eq - appmap.v[k]);
        for (int kind = 0; kind < RTL_TRACE_CONCURRENCY && idx < 0; kind++) {
            const char *names[8];
            int na = rtl_trace_apps(kind, names);
            for (int a = 0; a < na; a++)
                if (strlen(names[a]) == n && !strncmp(names[a], appmap.v[k], n)) idx = a;
        }
        if (idx < 0 && n > 3 && !strncmp(appmap.v[k], "app", 3)) idx = atoi(appmap.v[k] + 3) - 1;
        if (idx < 0 || idx >= SCHED_CLI_MAX_APPS || o.nmap >= SCHED_CLI_MAX_APPS)
            return ck_usage_of("rtl", &v, "--app: unknown app in '%s' (D, G, R, Y, V, S, app1..)", appmap.v[k]), 2;
        /* resolved by name in each trace (S in S1 is the sixth app, in S3
         * the fifth) */
        o.map_app[o.nmap] = appmap.v[k], o.map_len[o.nmap] = n, o.map_task[o.nmap++] = eq + 1;
    }
    rtl_err err;
    rtl_catalog *cat = sched_open_catalog(st, argv[i], &err);
    if (!cat) return fail(&err);
    int first = 1;
    if (json) printf("[");
    rc = 0;
    for (int k = 0; k < nk && !rc; k++) rc = simulate_trace(cat, (enum rtl_trace_kind)kinds[k], &o, json, svg, &first);
    if (json) printf("]\n");
    rtl_catalog_close(cat);
    return rc;
}
