/* rtl_stream_cli.c: `rtl stream`, the scheduler on real inputs.
 *
 * Images from files, folders (sorted) or list files go through every
 * registered task; each request is one rtl_sched decision, run on this
 * device (the model is opened when the scheduler pages it in and closed
 * when it pages it out), and printed as one JSON line. The budgets can
 * change while it runs: the control file is re-read when it changes and on
 * SIGHUP, and the new budgets hold from the next request on. Energy
 * charged is the option's estimate (no power meter here), latency the
 * measured time of the model's run (image decoding apart). SIGINT and
 * SIGTERM stop it after the request in progress; it then prints its
 * summary line and exits 0 (1 when an input could not be read). */
#include "rtl_cli.h"
#include "rtl_sched_cli.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static volatile sig_atomic_t g_stop, g_hup;
static void on_stop(int sig) { (void)sig, g_stop = 1; }
static void on_hup(int sig) { (void)sig, g_hup = 1; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int push_input(struct inputs *in, const char *path)
{
    if (in->n == in->cap) {
        size_t c = in->cap ? 2 * in->cap : 64;
        char **p = realloc(in->p, c * sizeof *p);
        if (!p) return -1;
        in->p = p, in->cap = c;
    }
    if (!(in->p[in->n] = strdup(path))) return -1;
    in->n++;
    return 0;
}
static int cmps(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A file, a folder (its regular files, sorted) or @LIST (one path a line). */
int add_inputs(struct inputs *in, const char *arg)
{
    struct stat st;
    if (arg[0] == '@') {
        rtl_err err;
        FILE *f = open_input(arg + 1, "r", &err);
        if (!f) {
            fprintf(stderr, "rtl: error: list: %s (give @FILE, one image path a line)\n", err.msg);
            return -1;
        }
        char line[4096];
        int rc = 0;
        while (!rc && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\r\n")] = 0;
            if (line[0] && line[0] != '#') rc = push_input(in, line);
        }
        fclose(f);
        return rc;
    }
    if (stat(arg, &st) != 0) {
        fprintf(stderr, "rtl: error: input %s: %s (give image files, folders or @LIST)\n", arg, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) return push_input(in, arg);
    DIR *d = opendir(arg);
    if (!d) {
        fprintf(stderr, "rtl: error: folder %s: %s\n", arg, strerror(errno));
        return -1;
    }
    size_t first = in->n;
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", arg, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) rc = push_input(in, p);
    }
    closedir(d);
    if (!rc) qsort(in->p + first, in->n - first, sizeof *in->p, cmps);
    return rc;
}

void inputs_free(struct inputs *in)
{
    for (size_t k = 0; k < in->n; k++) free(in->p[k]);
    free(in->p);
    memset(in, 0, sizeof *in);
}

/* The keys of a control file, in the order of CTL_* bits. */
static const char *const ctl_keys[] = {"energy_wh", "cloud_usd", "memory_mb", "latency_ms", "horizon_s", "offline"};
#define CTL_NKEYS (int)(sizeof ctl_keys / sizeof *ctl_keys)

/* The value of key k if v is in its range (energy_wh, cloud_usd: -1 for
 * none or >= 0; memory_mb, latency_ms >= 0; horizon_s > 0; offline 0 or 1). */
static int ctl_in_range(int k, double v)
{
    if (!isfinite(v)) return 0;
    if (k <= 1) return v == -1 || v >= 0;
    if (k <= 3) return v >= 0;
    if (k == 4) return v > 0;
    return v == 0 || v == 1;
}

/* Sets key k of the budgets to v. */
static void ctl_set(int k, double v, struct sched_cli *n, double *h)
{
    double *slot[] = {&n->energy_wh, &n->cloud_usd, &n->memory_mb, &n->latency_ms, h};
    if (k < 5) *slot[k] = v;
    else n->offline = (int)v;
}

/* The control file: "key = value" lines (energy_wh, cloud_usd, memory_mb,
 * latency_ms, horizon_s, offline), '#' comments; a regular file (a FIFO,
 * folder or device is refused at once, never waited on). Fills o and
 * *horizon; a key the file leaves out keeps its value, and *seen gets a
 * bit per key given. -1 with a message in err (the budgets stay as they
 * were). */
static int read_control(const char *path, struct sched_cli *o, double *horizon, unsigned *seen, rtl_err *err)
{
    rtl_err why;
    int fd = rtl_open_input(path, &why);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
    if (!f) {
        if (fd >= 0) snprintf(why.msg, sizeof why.msg, "%s: %s", path, strerror(errno)), close(fd);
        rtl_errf_cli(err, "control file: %s", why.msg);
        return -1;
    }
    *seen = 0;
    struct sched_cli n = *o;
    double h = *horizon;
    char line[512];
    int ln = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        ln++;
        char *c = strchr(line, '#');
        if (c) *c = 0;
        char key[64], *end;
        double v;
        char val[128];
        if (sscanf(line, " %63[a-z_] = %127s", key, val) != 2) {
            if (strspn(line, " \t\r\n") == strlen(line)) continue;
            rtl_errf_cli(err, "control file %s:%d: not 'key = value' (keys: energy_wh, cloud_usd, memory_mb, "
                              "latency_ms, horizon_s, offline)", path, ln);
            rc = -1;
            break;
        }
        v = strtod(val, &end);
        int k = 0;
        while (k < CTL_NKEYS && strcmp(key, ctl_keys[k])) k++;
        if (*end || isnan(v)) {
            rtl_errf_cli(err, "control file %s:%d: '%s' is not a number", path, ln, val);
            rc = -1;
        } else if (k == CTL_NKEYS) {
            rtl_errf_cli(err, "control file %s:%d: unknown key '%s' (keys: energy_wh, cloud_usd, memory_mb, "
                              "latency_ms, horizon_s, offline)", path, ln, key);
            rc = -1;
        } else if (!ctl_in_range(k, v)) {
            rtl_errf_cli(err, "control file %s:%d: %s = %s is out of range (energy_wh, cloud_usd: -1 for none or "
                              ">= 0; memory_mb, latency_ms >= 0; horizon_s > 0; offline 0 or 1)", path, ln, key, val);
            rc = -1;
        } else {
            ctl_set(k, v, &n, &h);
            *seen |= 1u << k;
        }
    }
    fclose(f);
    if (!rc) *o = n, *horizon = h;
    return rc;
}

/* The keys a control file left out (kept as they were), as the rest of a
 * JSON array and the end of the {event: budget} line. */
static void print_unchanged(unsigned seen)
{
    const char *sep = "";
    for (int k = 0; k < CTL_NKEYS - 1; k++) /* offline: always 1 without a peer */
        if (!(seen & 1u << k)) printf("%s\"%s\"", sep, ctl_keys[k]), sep = ",";
    printf("]}\n");
}

/* One `rtl stream`: its scheduler, runner, inputs, budgets and tallies. */
struct stream {
    rtl_catalog *cat;
    rtl_sched *s;
    rtl_runner *r;
    struct sched_cli o;
    double horizon;
    const char *control, *policy;
    unsigned seen;
    int napps, dry, context;
    struct inputs in;
    time_t cmtime;
    long cmnsec;
    off_t csize;
    uint64_t requests, served, refused, known, correct, budgets, unreadable, via_cascade;
    double *lat, *pred; /* per served request, for the medians */
    size_t nlat, latcap;
    double t0, sum_top1, sum_ms, sum_pred, energy;
};

/* The catalog's tasks (those of --task, else every one with a variant to
 * run) registered with the scheduler, and its budgets set; 0, or 1 after an
 * error message. */
static int stream_tasks(struct stream *S, const ck_list *tasks, const char *target)
{
    rtl_err err;
    rtl_sched_source src = {.target = target, .loadable_only = !S->dry};
    for (size_t t = 0; t < catalog_info(S->cat).task_count; t++) {
        const char *name = catalog_info(S->cat).task_names[t];
        int want = !tasks->n;
        for (int k = 0; k < tasks->n; k++) want |= !strcmp(tasks->v[k], name);
        if (!want) continue;
        if (rtl_sched_add_catalog(S->s, S->cat, name, name, &src, &err) != 0) {
            if (tasks->n) return fail(&err);
            continue; /* a task with nothing to run is skipped when all are asked for */
        }
        S->napps++;
    }
    for (int k = 0; k < tasks->n; k++)
        if (!rtl_catalog_task_labels(S->cat, tasks->v[k], NULL)) {
            rtl_errf_cli(&err, "catalog %s has no task %s", catalog_info(S->cat).id, tasks->v[k]);
            return fail(&err);
        }
    if (!S->napps) {
        rtl_errf_cli(&err, "catalog %s: no task has a variant this runtime can run with an accuracy and a latency",
                     catalog_info(S->cat).id);
        return fail(&err);
    }
    if (sched_budget(S->s, &S->o, S->horizon, 0, &err) != 0) return fail(&err);
    /* --context: each task's profiler and specialised models, made now */
    for (int a = 0; S->context && a < S->napps; a++)
        if (!rtl_runner_profiler(S->r, rtl_sched_task_at(S->s, (size_t)a)->task, &err)) return fail(&err);
    return 0;
}

/* When the control file changed (or SIGHUP came): its budgets from t_req
 * on, and an {event: budget} or {event: control_error} line. */
static int stream_control(struct stream *S, double t_req)
{
    struct stat cst;
    int changed = g_hup;
    if (S->control && stat(S->control, &cst) == 0 &&
        (cst.st_mtim.tv_sec != S->cmtime || cst.st_mtim.tv_nsec != S->cmnsec || cst.st_size != S->csize))
        changed = 1, S->cmtime = cst.st_mtim.tv_sec, S->cmnsec = cst.st_mtim.tv_nsec, S->csize = cst.st_size;
    if (!changed || !S->control) return 0;
    g_hup = 0;
    struct sched_cli n = S->o;
    double h = S->horizon;
    rtl_err err;
    if (read_control(S->control, &n, &h, &S->seen, &err) != 0) {
        printf("{\"event\":\"control_error\",\"message\":");
        ck_json_str(stdout, err.msg);
        printf(",\"kept\":\"the budgets in force\"}\n");
    } else {
        n.offline = 1;
        S->o = n, S->horizon = h;
        if (sched_budget(S->s, &S->o, S->horizon, t_req, &err) != 0) return fail(&err);
        S->budgets++;
        printf("{\"event\":\"budget\",\"after_request\":%llu,\"energy_wh\":%g,\"cloud_usd\":%g,"
               "\"memory_mb\":%g,\"latency_ms\":%g,\"horizon_s\":%g,\"unchanged\":[",
               (unsigned long long)S->requests, S->o.energy_wh, S->o.cloud_usd, S->o.memory_mb, S->o.latency_ms,
               S->horizon);
        print_unchanged(S->seen);
    }
    fflush(stdout);
    return 0;
}

/* 1 (true), 0 (false) or -1 (unknown): whether the file name of input
 * holds the answer's label, among the task's labels (the longest). */
static int truth(const rtl_catalog *cat, const char *task, const char *input, const char *answer)
{
    size_t nl = 0;
    const char *const *labels = rtl_catalog_task_labels(cat, task, &nl);
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    const char *hit = NULL;
    for (size_t l = 0; l < nl; l++)
        if (strstr(base, labels[l]) && (!hit || strlen(labels[l]) > strlen(hit))) hit = labels[l];
    return hit ? !strcmp(hit, answer) : -1;
}

/* A served request's tallies. */
static void stream_tally(struct stream *S, const rtl_sched_decision *d, double ms)
{
    S->served++;
    S->sum_top1 += d->top1, S->sum_ms += ms, S->sum_pred += d->latency_ms, S->energy += d->energy_mj;
    if (S->nlat == S->latcap) {
        size_t c = S->latcap ? 2 * S->latcap : 256;
        double *na = realloc(S->lat, c * sizeof *na), *nb = na ? realloc(S->pred, c * sizeof *nb) : NULL;
        if (na) S->lat = na;
        if (nb) S->pred = nb, S->latcap = c;
    }
    if (S->nlat < S->latcap) S->lat[S->nlat] = ms, S->pred[S->nlat] = d->latency_ms, S->nlat++;
}

/* The rest of a served request's line. */
static void print_served(const struct stream *S, const rtl_sched_option *op, const rtl_sched_decision *d,
                         const rtl_runner_result *res, const char *answer, float prob, int ok)
{
    rtl_model_info mi = res->model ? model_info(res->model) : (rtl_model_info){0};
    int exit_taken = mi.exits > 0 ? mi.exit_taken : -1;
    printf(",\"answer\":");
    if (answer) ck_json_str(stdout, answer);
    else printf("null");
    printf(",\"prob\":%.6f,\"correct\":%s,\"variant\":", prob, ok < 0 ? "null" : ok ? "true" : "false");
    ck_json_str(stdout, op->variant);
    if (op->capacity >= 0) printf(",\"capacity\":%d", op->capacity);
    else printf(",\"capacity\":null");
    if (op->alpha > 0) printf(",\"alpha\":%g", op->alpha);
    else printf(",\"alpha\":null");
    if (exit_taken >= 0) printf(",\"exit\":%d", exit_taken);
    else printf(",\"exit\":null");
    printf(",\"location\":\"%s\",\"latency_ms\":%.4f,\"predicted_ms\":%.4f,\"predicted_from\":\"%s\","
           "\"energy_mj\":%.4f,\"cloud_usd\":%.8f,\"top1\":%.4f,\"paged_in\":%d,\"paged_out\":%d",
           rtl_loc_name(d->loc), res->ms, d->latency_ms, sched_source_words(d->source), d->energy_mj, d->cloud_usd,
           d->top1, d->paged_in, d->paged_out);
    if (S->context) {
        printf(",\"cascade\":");
        if (res->cascade[0]) ck_json_str(stdout, res->cascade);
        else printf("null");
        printf(",\"answered_by\":");
        if (res->answered_by) ck_json_str(stdout, res->answered_by);
        else printf("null");
    }
    printf("}\n");
}

/* --context: an {event: context} line when the task's context or the
 * specialised model it uses changed. */
static int print_context_event(const struct stream *S, const char *task, const rtl_runner_result *res)
{
    rtl_err err;
    rtl_context cr;
    rtl_context_profiler *prof = rtl_runner_profiler(S->r, task, &err);
    if (!prof) return fail(&err);
    if (rtl_profile_context(prof, &cr, &err) != 0 || !(cr.changed || res->switched)) return 0;
    printf("{\"event\":\"context\",\"task\":");
    ck_json_str(stdout, task);
    printf(",\"after_request\":%llu,\"dominated\":%s", (unsigned long long)S->requests,
           cr.dominated ? "true" : "false");
    if (cr.dominated) {
        printf(",\"n\":%u,\"p\":%g,\"share\":%.4f,\"classes\":", cr.n, cr.p, cr.share);
        ctx_print_classes(&cr, rtl_catalog_task_labels(S->cat, task, NULL), stdout);
    }
    if (res->switched) {
        printf(",\"specialised\":");
        if (res->cascade[0]) {
            ck_json_str(stdout, res->cascade);
            printf(",\"specialised_share\":%.4f", res->share);
        } else {
            printf("null");
        }
    }
    printf("}\n");
    return 0;
}

/* Task a's request for input: decided and run by the runner, one line. */
static int stream_request(struct stream *S, int a, const char *input, uint64_t frame, double t_req)
{
    const rtl_sched_task *task = rtl_sched_task_at(S->s, (size_t)a);
    rtl_sched_decision d;
    rtl_runner_result res;
    rtl_err err;
    int rc = rtl_runner_serve(S->r, S->s, a, t_req, frame, input, &d, &res, &err);
    if (rc != 0 && d.task < 0) return fail(&err);
    S->requests++;
    if (res.cascade[0]) S->via_cascade++;
    printf("{\"input\":");
    ck_json_str(stdout, input);
    printf(",\"task\":");
    ck_json_str(stdout, task->task);
    if (rc == 0 && d.option < 0) {
        S->refused++;
        printf(",\"refused\":");
        ck_json_str(stdout, d.reason);
        return printf("}\n"), 0;
    }
    rtl_class top = {0};
    size_t nt = 0;
    if (rc == 0 && res.model && rtl_model_top(res.model, 1, &top, &nt, &err) != 0) rc = -1;
    if (rc != 0) {
        printf(",\"error\":");
        ck_json_str(stdout, err.msg);
        printf("}\n");
        if (!res.bad_input) return fail(&err);
        fprintf(stderr, "rtl: error: %s (skipped; exit status 1, as rtl run)\n", err.msg);
        S->unreadable++;
        return 0;
    }
    int ok = res.model ? truth(S->cat, task->task, input, top.label) : -1;
    if (ok >= 0) S->known++, S->correct += (uint64_t)ok;
    stream_tally(S, &d, res.ms);
    print_served(S, &task->options[d.option], &d, &res, res.model ? top.label : NULL, top.prob, ok);
    return S->context ? print_context_event(S, task->task, &res) : 0;
}

/* Every input (repeat times), paced at fps; 0, or 1 after an error. */
static int stream_loop(struct stream *S, long long repeat, long long max, double fps)
{
    for (long long r = 0; r < repeat && !g_stop; r++)
        for (size_t k = 0; k < S->in.n && !g_stop; k++) {
            uint64_t frame = (uint64_t)r * S->in.n + k;
            if (fps > 0) { /* pace the inputs */
                double due = S->t0 + (double)frame / fps, w = due - now_s();
                if (w > 0) {
                    struct timespec ts = {(time_t)w, (long)((w - floor(w)) * 1e9)};
                    nanosleep(&ts, NULL);
                }
            }
            /* the request's time: its frame's due time when paced (the
             * same for --dry-run and a run, whatever the runs take: the
             * trace the prediction is for), else the clock */
            double t_req = fps > 0 ? (double)frame / fps : now_s() - S->t0;
            if (stream_control(S, t_req) != 0) return 1;
            for (int a = 0; a < S->napps; a++) {
                if (max && S->requests >= (uint64_t)max) {
                    g_stop = 1;
                    break;
                }
                if (stream_request(S, a, S->in.p[k], frame, t_req) != 0) return 1;
            }
            fflush(stdout);
        }
    return 0;
}

static void stream_summary(struct stream *S, long long max)
{
    rtl_sched_budget b;
    rtl_sched_get_budget(S->s, &b);
    printf("{\"summary\":{\"requests\":%llu,\"served\":%llu,\"refused\":%llu,\"stopped\":%s,\"budget_changes\":%llu,"
           "\"predicted_top1\":%.6f,\"measured_top1\":",
           (unsigned long long)S->requests, (unsigned long long)S->served, (unsigned long long)S->refused,
           g_stop && (!max || S->requests < (uint64_t)max) ? "true" : "false", (unsigned long long)S->budgets,
           S->served ? S->sum_top1 / (double)S->served : 0);
    if (S->known) printf("%.6f", (double)S->correct / (double)S->known);
    else printf("null");
    if (S->nlat) {
        qsort(S->lat, S->nlat, sizeof *S->lat, cmpd);
        qsort(S->pred, S->nlat, sizeof *S->pred, cmpd);
    }
    printf(",\"judged\":%llu,\"mean_latency_ms\":%.4f,\"mean_predicted_ms\":%.4f,\"median_latency_ms\":%.4f,"
           "\"median_predicted_ms\":%.4f,\"energy_mj\":%.4f,\"energy_left_mj\":%.4f,\"seconds\":%.3f",
           (unsigned long long)S->known, S->served ? S->sum_ms / (double)S->served : 0,
           S->served ? S->sum_pred / (double)S->served : 0, S->nlat ? S->lat[S->nlat / 2] : 0,
           S->nlat ? S->pred[S->nlat / 2] : 0, S->energy, b.energy_mj, now_s() - S->t0);
    if (S->context) printf(",\"cascade_served\":%llu", (unsigned long long)S->via_cascade);
    printf("}}\n");
}

/* Runs the stream with SIGINT/SIGTERM stopping it and SIGHUP re-reading
 * the control file; 0, or 1 after an error. */
static int stream_run(struct stream *S, long long repeat, long long max, double fps)
{
    struct sigaction sa = {0}, old_int, old_term, old_hup;
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, &old_hup);
    g_stop = g_hup = 0;
    struct stat cst;
    if (S->control && stat(S->control, &cst) == 0)
        S->cmtime = cst.st_mtim.tv_sec, S->cmnsec = cst.st_mtim.tv_nsec, S->csize = cst.st_size;
    S->t0 = now_s();
    printf("{\"event\":\"start\",\"catalog\":\"%s\",\"policy\":\"%s\",\"tasks\":%d,\"inputs\":%zu,\"mode\":\"%s\","
           "\"cloud\":\"unreachable (no peer)\"}\n",
           catalog_info(S->cat).id, S->policy, S->napps, S->in.n, S->dry ? "dry-run" : "execute");
    int rc = stream_loop(S, repeat, max, fps);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    if (!rc) stream_summary(S, max);
    return rc;
}

/* The stream's catalog, scheduler and runner; 0, or 1 after an error. */
static int stream_open(struct stream *S, rtl_store *st, const char *id, int pol, const rtl_runner_options *ro)
{
    rtl_err err;
    if (!(S->cat = rtl_catalog_open(st, id, &err))) return fail(&err);
    rtl_sched_config sc = {.policy = (enum rtl_policy)pol, .nest_alpha = S->o.alpha};
    if (!(S->s = rtl_sched_new(&sc, &err)) || !(S->r = rtl_runner_new(st, S->cat, ro, &err))) return fail(&err);
    return 0;
}

static void stream_close(struct stream *S)
{
    rtl_runner_free(S->r);
    rtl_sched_free(S->s);
    rtl_catalog_close(S->cat);
    inputs_free(&S->in);
    free(S->lat);
    free(S->pred);
}

int cmd_stream(rtl_store *st, int argc, char **argv)
{
    struct stream S = {.o = SCHED_CLI_DEFAULTS, .horizon = 3600, .policy = "mcdnn"};
    S.o.energy_wh = -1, S.o.cloud_usd = -1;
    const char *target = NULL;
    ck_list tasks = {0};
    int execute = 0, no_feedback = 0;
    struct ctx_cli cc = CTX_CLI_DEFAULTS;
    long long threads = 0, repeat = 1, max = 0;
    double fps = 0;
    const ck_opt opts[] = {
        {"--task", "T", CK_LIST, &tasks, 0, 0, "a task to run on every input (repeatable; default: every task)"},
        {"--policy", "P", CK_STR, &S.policy, 0, 0, "scheduling policy (default mcdnn; rtl simulate --help lists them)"},
        {"--control", "FILE", CK_STR, &S.control, 0, 0,
         "budgets, re-read when the file changes and on SIGHUP: key = value lines of\n"
         "energy_wh, cloud_usd (-1: none, else >= 0), memory_mb, latency_ms (>= 0),\n"
         "horizon_s (> 0), offline (0 or 1); a key the file leaves out keeps its value\n"
         "({event: budget} lists it under \"unchanged\"); a FIFO, folder or device is refused"},
        {"--energy-wh", "E", CK_REAL, &S.o.energy_wh, -1, 1e6, "device energy budget for the horizon (default -1: none)"},
        {"--cloud-usd", "C", CK_REAL, &S.o.cloud_usd, -1, 1e6, "cloud budget (the cloud is used only with a peer: none yet)"},
        {"--memory-mb", "M", CK_REAL, &S.o.memory_mb, 0, 1e9, "device memory for models (default 0: unlimited)"},
        {"--latency-ms", "L", CK_REAL, &S.o.latency_ms, 0, 1e9, "latency budget per request (default 0: none)"},
        {"--horizon-s", "S", CK_REAL, &S.horizon, 1e-3, 1e9, "the budgets' horizon (default 3600)"},
        {"--target", "T", CK_STR, &target, 0, 0, "estimate target when this device has no profile (default jetson-nano)"},
        {"--fps", "F", CK_REAL, &fps, 0, 1000, "pace inputs at F per second (default 0: as fast as they run)"},
        {"--repeat", "N", CK_INT, &repeat, 1, 1000000, "go through the inputs N times (default 1)"},
        {"--max", "N", CK_INT, &max, 0, 1e12, "stop after N requests (default 0: no limit)"},
        {"--threads", "N", CK_INT, &threads, 1, 1024, "compute threads (default: all cores)"},
        {"--dry-run", NULL, CK_FLAG, &S.dry, 0, 0, "decide only: print the predicted figures, run nothing"},
        {"--execute", NULL, CK_FLAG, &execute, 0, 0, "run the models on this device (the default)"},
        {"--no-feedback", NULL, CK_FLAG, &no_feedback, 0, 0,
         "keep the predictions: a run's measured time does not replace its option's\n"
         "predicted latency for the next decisions (the default feeds it back, so a\n"
         "roofline lower bound is corrected after one warm run); the run then makes the\n"
         "decisions --dry-run makes"},
        {"--context", NULL, CK_FLAG, &S.context, 0, 0,
         "profile each task's answers (MCDNN's class-frequency window); while a specialised\n"
         "model installed for the task (an add-on of ID, or ID's own) matches the window\n"
         "and its partner is the scheduler's choice, answer through its cascade (lines\n"
         "gain \"cascade\" and \"answered_by\"; {event: context} lines mark changes)"},
        CTX_CLI_OPTS(cc),
        {0},
    };
    const ck_verb v = {"stream", NULL, NULL, "ID INPUT... [OPTIONS]",
                       "Runs every task on every input (image files, folders, @LIST files) through the\n"
                       "scheduler, one decision per request, and prints one JSON line per result:\n"
                       "{input, task, answer, prob, correct, variant, capacity, alpha, exit, location,\n"
                       "latency_ms, predicted_ms, predicted_from, energy_mj, cloud_usd, top1}, or {input,\n"
                       "task, refused} when no option fits the budgets (a latency budget is met only\n"
                       "by measured latencies: this device's profile, or an earlier run here; never\n"
                       "by a roofline estimate, a lower bound); {event: budget} when the budgets\n"
                       "change; a last {summary} line. SIGINT or SIGTERM stops it after the current\n"
                       "request.\n",
                       opts,
                       "correct is true when the file name holds the answer's label, false when it holds\n"
                       "another label of the task, null otherwise. Without a peer the cloud is\n"
                       "unreachable: every option runs on this device. An input that cannot be read\n"
                       "gets an {input, task, error} line and is skipped; the exit status is then 1, as\n"
                       "rtl run's.\n"};
    int rc, i = sub_opts(argc, argv, &v, 2, 1 << 20, &rc);
    if (i < 0) return rc;
    if (S.dry && execute) return ck_usage_of("rtl", &v, "--dry-run and --execute exclude each other"), 2;
    if (S.dry && S.context) return ck_usage_of("rtl", &v, "--context needs answers: it excludes --dry-run"), 2;
    int pol = rtl_policy_find(S.policy);
    if (pol < 0) return ck_usage_of("rtl", &v, "unknown policy '%s'", S.policy), 2;
    S.o.target = target;
    S.o.offline = 1; /* no peer yet */
    rtl_err err;
    rtl_runner_options ro;
    if (S.control && read_control(S.control, &S.o, &S.horizon, &S.seen, &err) != 0) return fail(&err);
    S.o.offline = 1;
    if (runner_options(&cc, S.context, threads, &ro, &err) != 0) return fail(&err);
    ro.dry_run = S.dry, ro.no_feedback = no_feedback;
    for (int a = i + 1; a < argc; a++)
        if (add_inputs(&S.in, argv[a]) != 0) return inputs_free(&S.in), 1;
    rc = stream_open(&S, st, argv[i], pol, &ro);
    if (!rc) rc = stream_tasks(&S, &tasks, target);
    if (!rc) rc = stream_run(&S, repeat, max, fps);
    stream_close(&S);
    if (fflush(stdout) != 0 && !rc) {
        fprintf(stderr, "rtl: error: writing the results: %s\n", strerror(errno));
        rc = 1;
    }
    return rc ? rc : S.unreadable != 0;
}
