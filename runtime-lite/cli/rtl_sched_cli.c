/* rtl_sched_cli.c: what `rtl stream` and the host's `rtl simulate`
 * (runtime-lite/sim/simulate_cli.c) share: catalog loading, task
 * registration, budgets. */
#include "rtl_cli.h"
#include "rtl_sched_cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

const char *sched_source_words(const char *source)
{
    if (!strcmp(source, "device")) return "measured on this device";
    if (!strcmp(source, "build-host")) return "measured on the build host";
    if (!strcmp(source, "estimate")) return "roofline lower bound";
    return "unknown";
}

int sched_names_file(const char *a)
{
    return ends_with(a, ".json") || ends_with(a, ".tar.zst") || strchr(a, '/') != NULL;
}

int sched_is_file_arg(const char *a)
{
    struct stat st;
    /* any kind of file: a FIFO or a folder is then refused saying what it is */
    return (ends_with(a, ".json") || ends_with(a, ".tar.zst")) && stat(a, &st) == 0;
}

rtl_catalog *sched_open_catalog(rtl_store *s, const char *what, rtl_err *err)
{
    if (sched_is_file_arg(what)) {
        char *json = NULL;
        size_t len = 0;
        if (ends_with(what, ".tar.zst")) {
            if (rtl_archive_manifest(what, &json, &len, err) != 0) return NULL;
        } else {
            rtl_err why;
            FILE *f = open_input(what, "rb", &why);
            if (!f) {
                rtl_errf_cli(err, "%s (give an installed catalog id, a catalog archive or a manifest.json)", why.msg);
                return NULL;
            }
            size_t cap = 1 << 16;
            json = malloc(cap);
            size_t r;
            while (json && (r = fread(json + len, 1, cap - len - 1, f)) > 0) {
                len += r;
                if (len + 1 == cap) {
                    char *n = cap < (64u << 20) ? realloc(json, cap *= 2) : NULL;
                    if (!n) free(json);
                    json = n;
                }
            }
            fclose(f);
            if (!json) {
                rtl_errf_cli(err, "%s: out of memory or larger than 64 MiB", what);
                return NULL;
            }
            json[len] = 0;
        }
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", what);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        rtl_catalog *c = rtl_catalog_parse(json, len, dir, err);
        free(json);
        if (!c) {
            char m[RTL_ERR_MAX];
            snprintf(m, sizeof m, "%s", err->msg);
            rtl_errf_cli(err, "%s: %s", what, m);
        }
        return c;
    }
    if (!s) {
        rtl_errf_cli(err, "%s is neither a catalog archive (.tar.zst) nor a manifest (.json), and no store is open",
                     what);
        return NULL;
    }
    return rtl_catalog_open(s, what, err);
}

void rtl_errf_cli(rtl_err *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
}

/* Registers one task per app (names: the app names; tasks[i]: the
 * catalog task of app i, or NULL: the catalog's tasks in turn). */
int sched_register(rtl_sched *s, rtl_catalog *cat, int napps, const char *const *names, const char *const *tasks,
                   const struct sched_cli *o, rtl_err *err)
{
    rtl_sched_source src = {.target = o->target, .device_mw = o->device_mw, .cloud_gflops = o->cloud_gflops};
    size_t nt = catalog_info(cat).task_count;
    /* tasks that have variants with an accuracy */
    const char *usable[64];
    int nu = 0;
    for (size_t i = 0; i < nt && nu < 64; i++) {
        rtl_sched_config c = {.policy = RTL_POLICY_MCDNN};
        rtl_sched *probe = rtl_sched_new(&c, NULL);
        if (probe && rtl_sched_add_catalog(probe, cat, catalog_info(cat).task_names[i], "x", &src, NULL) == 0)
            usable[nu++] = catalog_info(cat).task_names[i];
        rtl_sched_free(probe);
    }
    if (!nu) {
        rtl_errf_cli(err, "catalog %s: no task has variants with an accuracy and a latency to schedule",
                     catalog_info(cat).id);
        return -1;
    }
    for (int a = 0; a < napps; a++) {
        const char *task = tasks && tasks[a] ? tasks[a] : usable[a % nu];
        if (rtl_sched_add_catalog(s, cat, task, names[a], &src, err) != 0) return -1;
        const rtl_sched_task *t = rtl_sched_task_at(s, (size_t)a);
        double best = 0;
        for (size_t i = 0; i < t->n; i++) best = fmax(best, t->options[i].top1);
        double amin = o->a_min >= 0 ? o->a_min : best;
        double lmax = o->l_max_ms > 0 ? o->l_max_ms : 1000.0 / (o->camera_fps > 0 ? o->camera_fps : 30);
        if (rtl_sched_set_goal(s, a, amin, lmax, err) != 0) return -1;
    }
    return 0;
}

int sched_budget(rtl_sched *s, const struct sched_cli *o, double horizon_s, double now, rtl_err *err)
{
    rtl_sched_budget b = {
        .memory_bytes = (uint64_t)(o->memory_mb * 1e6),
        .latency_ms = o->latency_ms,
        .energy_mj = o->energy_wh < 0 ? -1 : o->energy_wh * 3.6e6,
        .cloud_usd = o->cloud_usd,
        .horizon_s = horizon_s,
        .disconnected = o->offline,
    };
    return rtl_sched_set_budget(s, &b, now, err);
}

rtl_sched *sched_build(rtl_catalog *cat, enum rtl_policy p, int napps, const char *const *names,
                       const char *const *tasks, const struct sched_cli *o, double horizon_s, rtl_err *err)
{
    /* a simulation has only the catalog's figures: its estimates may meet budgets */
    rtl_sched_config c = {.policy = p, .nest_alpha = o->alpha, .camera_fps = o->camera_fps, .knee_any = o->knee_any,
                          .estimates_meet_budgets = 1};
    rtl_sched *s = rtl_sched_new(&c, err);
    if (!s) return NULL;
    if (sched_register(s, cat, napps, names, tasks, o, err) != 0 || sched_budget(s, o, horizon_s, 0, err) != 0) {
        rtl_sched_free(s);
        return NULL;
    }
    return s;
}
