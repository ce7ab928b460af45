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

/* An open model. The scheduler pages a task's models in and out of its
 * one slot per location; a model it pages out stays open here (warm: its
 * network built, its weights' pages resident) while the open models fit
 * the memory budget, so that a switch back is not a reload (MCDNN's
 * per-request pacing alternates between two variants at every request
 * when the energy budget binds). Beyond the memory budget the least
 * recently used model no slot holds is closed. */
struct open_model {
    char variant[RTL_ID_MAX + 1];
    rtl_model *m;
    uint64_t bytes, used; /* mapped weight bytes; the request it last ran */
};

int cmd_stream(rtl_store *st, int argc, char **argv)
{
    struct sched_cli o = SCHED_CLI_DEFAULTS;
    o.energy_wh = -1, o.cloud_usd = -1;
    const char *policy = "mcdnn", *control = NULL, *target = NULL;
    ck_list tasks = {0};
    int dry = 0, execute = 0, context = 0, no_feedback = 0;
    struct ctx_cli cc = CTX_CLI_DEFAULTS;
    long long threads = 0, repeat = 1, max = 0;
    double fps = 0, horizon = 3600;
    const ck_opt opts[] = {
        {"--task", "T", CK_LIST, &tasks, 0, 0, "a task to run on every input (repeatable; default: every task)"},
        {"--policy", "P", CK_STR, &policy, 0, 0, "scheduling policy (default mcdnn; rtl simulate --help lists them)"},
        {"--control", "FILE", CK_STR, &control, 0, 0,
         "budgets, re-read when the file changes and on SIGHUP: key = value lines of\n"
         "energy_wh, cloud_usd (-1: none, else >= 0), memory_mb, latency_ms (>= 0),\n"
         "horizon_s (> 0), offline (0 or 1); a key the file leaves out keeps its value\n"
         "({event: budget} lists it under \"unchanged\"); a FIFO, folder or device is refused"},
        {"--energy-wh", "E", CK_REAL, &o.energy_wh, -1, 1e6, "device energy budget for the horizon (default -1: none)"},
        {"--cloud-usd", "C", CK_REAL, &o.cloud_usd, -1, 1e6, "cloud budget (the cloud is used only with a peer: none yet)"},
        {"--memory-mb", "M", CK_REAL, &o.memory_mb, 0, 1e9, "device memory for models (default 0: unlimited)"},
        {"--latency-ms", "L", CK_REAL, &o.latency_ms, 0, 1e9, "latency budget per request (default 0: none)"},
        {"--horizon-s", "S", CK_REAL, &horizon, 1e-3, 1e9, "the budgets' horizon (default 3600)"},
        {"--target", "T", CK_STR, &target, 0, 0, "estimate target when this device has no profile (default jetson-nano)"},
        {"--fps", "F", CK_REAL, &fps, 0, 1000, "pace inputs at F per second (default 0: as fast as they run)"},
        {"--repeat", "N", CK_INT, &repeat, 1, 1000000, "go through the inputs N times (default 1)"},
        {"--max", "N", CK_INT, &max, 0, 1e12, "stop after N requests (default 0: no limit)"},
        {"--threads", "N", CK_INT, &threads, 1, 1024, "compute threads (default: all cores)"},
        {"--dry-run", NULL, CK_FLAG, &dry, 0, 0, "decide only: print the predicted figures, run nothing"},
        {"--execute", NULL, CK_FLAG, &execute, 0, 0, "run the models on this device (the default)"},
        {"--no-feedback", NULL, CK_FLAG, &no_feedback, 0, 0,
         "keep the predictions: a run's measured time does not replace its option's\n"
         "predicted latency for the next decisions (the default feeds it back, so a\n"
         "roofline lower bound is corrected after one warm run); the run then makes the\n"
         "decisions --dry-run makes"},
        {"--context", NULL, CK_FLAG, &context, 0, 0,
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
    if (dry && execute) return ck_usage_of("rtl", &v, "--dry-run and --execute exclude each other"), 2;
    if (dry && context) return ck_usage_of("rtl", &v, "--context needs answers: it excludes --dry-run"), 2;
    int pol = rtl_policy_find(policy);
    if (pol < 0) return ck_usage_of("rtl", &v, "unknown policy '%s'", policy), 2;
    o.target = target;
    o.offline = 1; /* no peer yet */
    rtl_err err;
    struct sched_cli ctl = o;
    unsigned seen = 0;
    if (control && read_control(control, &ctl, &horizon, &seen, &err) != 0) return fail(&err);
    ctl.offline = 1;
    o = ctl;
    struct inputs in = {0};
    for (int a = i + 1; a < argc; a++)
        if (add_inputs(&in, argv[a]) != 0) {
            for (size_t k = 0; k < in.n; k++) free(in.p[k]);
            free(in.p);
            return 1;
        }
    rtl_catalog *cat = rtl_catalog_open(st, argv[i], &err);
    if (!cat) {
        for (size_t k = 0; k < in.n; k++) free(in.p[k]);
        free(in.p);
        return fail(&err);
    }
    rtl_sched_config sc = {.policy = (enum rtl_policy)pol, .nest_alpha = o.alpha};
    rtl_sched *s = rtl_sched_new(&sc, &err);
    rc = s ? 0 : fail(&err);
    int napps = 0;
    rtl_sched_source src = {.target = target, .loadable_only = !dry};
    for (size_t t = 0; !rc && t < rtl_catalog_task_count(cat); t++) {
        const char *name = rtl_catalog_task_name(cat, t);
        int want = !tasks.n;
        for (int k = 0; k < tasks.n; k++) want |= !strcmp(tasks.v[k], name);
        if (!want) continue;
        if (rtl_sched_add_catalog(s, cat, name, name, &src, &err) != 0) {
            if (tasks.n) rc = fail(&err);
            continue; /* a task with nothing to run is skipped when all are asked for */
        }
        napps++;
    }
    for (int k = 0; !rc && k < tasks.n; k++)
        if (!rtl_catalog_task_labels(cat, tasks.v[k], NULL)) {
            rtl_errf_cli(&err, "catalog %s has no task %s", rtl_catalog_id(cat), tasks.v[k]);
            rc = fail(&err);
        }
    if (!rc && !napps) {
        rtl_errf_cli(&err, "catalog %s: no task has a variant this runtime can run with an accuracy and a latency",
                     rtl_catalog_id(cat));
        rc = fail(&err);
    }
    if (!rc && sched_budget(s, &o, horizon, 0, &err) != 0) rc = fail(&err);
    /* --context: per task, the profiler over its answers and the specialised models for it */
    struct task_ctx {
        rtl_context_profiler *prof;
        struct addons A;
        const struct addon *cur;
        const char *const *labels;
        size_t nl;
    } *tc = context && !rc ? calloc((size_t)napps + 1, sizeof *tc) : NULL;
    if (context && !rc && !tc) rc = fail(&(rtl_err){"out of memory"});
    for (int a = 0; tc && !rc && a < napps; a++) {
        const char *tn = rtl_sched_task_at(s, (size_t)a)->task;
        rtl_context_params q;
        tc[a].labels = rtl_catalog_task_labels(cat, tn, &tc[a].nl);
        if (ctx_params(&cc, (uint32_t)tc[a].nl, &q, &err) != 0 || !(tc[a].prof = rtl_context_profiler_new(&q, &err)) ||
            addons_find(st, cat, tn, &tc[a].A, &err) != 0)
            rc = fail(&err);
    }
    uint64_t via_cascade = 0;
    struct open_model *models = calloc(rtl_catalog_variant_count(cat) + 1, sizeof *models);
    size_t nmodels = 0;
    float *x = NULL;
    size_t xcap = 0;
    if (!rc && !models) rc = fail(&(rtl_err){"out of memory"});
    struct sigaction sa = {0}, old_int, old_term, old_hup;
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sa.sa_handler = on_hup;
    sigaction(SIGHUP, &sa, &old_hup);
    g_stop = g_hup = 0;
    struct stat cst;
    time_t cmtime = 0;
    long cmnsec = 0;
    off_t csize = -1;
    if (control && stat(control, &cst) == 0) cmtime = cst.st_mtim.tv_sec, cmnsec = cst.st_mtim.tv_nsec, csize = cst.st_size;
    uint64_t requests = 0, served = 0, refused = 0, known = 0, correct = 0, budgets = 0;
    uint64_t unreadable = 0; /* inputs that could not be read: exit status 1 at the end */
    double *lat = NULL, *pred = NULL; /* per served request, for the medians */
    size_t nlat = 0, latcap = 0;
    double t0 = now_s(), sum_top1 = 0, sum_ms = 0, sum_pred = 0, energy = 0;
    if (!rc)
        printf("{\"event\":\"start\",\"catalog\":\"%s\",\"policy\":\"%s\",\"tasks\":%d,\"inputs\":%zu,\"mode\":\"%s\","
               "\"cloud\":\"unreachable (no peer)\"}\n",
               rtl_catalog_id(cat), policy, napps, in.n, dry ? "dry-run" : "execute");
    for (long long r = 0; !rc && r < repeat && !g_stop; r++)
        for (size_t k = 0; !rc && k < in.n && !g_stop; k++) {
            uint64_t frame = (uint64_t)r * in.n + k;
            if (fps > 0) { /* pace the inputs */
                double due = t0 + (double)frame / fps, w = due - now_s();
                if (w > 0) {
                    struct timespec ts = {(time_t)w, (long)((w - floor(w)) * 1e9)};
                    nanosleep(&ts, NULL);
                }
            }
            /* the request's time: its frame's due time when paced (the
             * same for --dry-run and a run, whatever the runs take: the
             * trace the prediction is for), else the clock */
            double t_req = fps > 0 ? (double)frame / fps : now_s() - t0;
            int changed = g_hup;
            if (control && stat(control, &cst) == 0 &&
                (cst.st_mtim.tv_sec != cmtime || cst.st_mtim.tv_nsec != cmnsec || cst.st_size != csize))
                changed = 1, cmtime = cst.st_mtim.tv_sec, cmnsec = cst.st_mtim.tv_nsec, csize = cst.st_size;
            if (changed && control) {
                g_hup = 0;
                struct sched_cli n = o;
                double h = horizon;
                if (read_control(control, &n, &h, &seen, &err) != 0) {
                    printf("{\"event\":\"control_error\",\"message\":");
                    ck_json_str(stdout, err.msg);
                    printf(",\"kept\":\"the budgets in force\"}\n");
                } else {
                    n.offline = 1;
                    o = n, horizon = h;
                    if (sched_budget(s, &o, horizon, t_req, &err) != 0) {
                        rc = fail(&err);
                        break;
                    }
                    budgets++;
                    printf("{\"event\":\"budget\",\"after_request\":%llu,\"energy_wh\":%g,\"cloud_usd\":%g,"
                           "\"memory_mb\":%g,\"latency_ms\":%g,\"horizon_s\":%g,\"unchanged\":[",
                           (unsigned long long)requests, o.energy_wh, o.cloud_usd, o.memory_mb, o.latency_ms, horizon);
                    print_unchanged(seen);
                }
                fflush(stdout);
            }
            for (int a = 0; a < napps && !rc; a++) {
                if (max && requests >= (uint64_t)max) {
                    g_stop = 1;
                    break;
                }
                const rtl_sched_task *task = rtl_sched_task_at(s, (size_t)a);
                rtl_sched_decision d;
                if (rtl_sched_decide(s, a, t_req, frame, -1, &d, &err) != 0) {
                    rc = fail(&err);
                    break;
                }
                requests++;
                printf("{\"input\":");
                ck_json_str(stdout, in.p[k]);
                printf(",\"task\":");
                ck_json_str(stdout, task->task);
                if (d.option < 0) {
                    refused++;
                    printf(",\"refused\":");
                    ck_json_str(stdout, d.reason);
                    printf("}\n");
                    continue;
                }
                const rtl_sched_option *op = &task->options[d.option];
                double ms = d.latency_ms, mj = d.energy_mj;
                const char *answer = NULL;
                float prob = 0;
                int ok = -1, exit_taken = -1, pending_switch = 0;
                char switch_to[2 * RTL_ID_MAX + 2] = "";
                double switch_share = 0;
                rtl_model *answered = NULL;
                int cascaded = 0, cold = 0;
                if (!dry) {
                    struct open_model *om = NULL;
                    for (size_t m = 0; m < nmodels; m++)
                        if (!strcmp(models[m].variant, op->variant)) om = &models[m];
                    if (!om) {
                        rtl_model_options mo = {.threads = (int)threads};
                        rtl_model *m = rtl_model_open(cat, op->variant, &mo, &err);
                        if (!m) {
                            printf(",\"error\":");
                            ck_json_str(stdout, err.msg);
                            printf("}\n");
                            rc = fail(&err);
                            break;
                        }
                        om = &models[nmodels++];
                        snprintf(om->variant, sizeof om->variant, "%s", op->variant);
                        om->m = m;
                        om->bytes = rtl_model_mapped_bytes(m);
                        cold = 1; /* its first run pays first-touch page faults */
                    }
                    om->used = requests;
                    if (op->capacity > 0 && rtl_model_capacities(om->m) > 0 &&
                        rtl_model_capacity(om->m) != op->capacity &&
                        rtl_model_set_capacity(om->m, op->capacity, &err) != 0) { /* switched in place */
                        printf(",\"error\":");
                        ck_json_str(stdout, err.msg);
                        printf("}\n");
                        rc = fail(&err);
                        break;
                    }
                    if (op->alpha > 0 && rtl_model_exits(om->m) > 0 && rtl_model_alpha(om->m) != (float)op->alpha &&
                        rtl_model_set_alpha(om->m, (float)op->alpha, &err) != 0) { /* the early-exit knob */
                        printf(",\"error\":");
                        ck_json_str(stdout, err.msg);
                        printf("}\n");
                        rc = fail(&err);
                        break;
                    }
                    size_t need = rtl_model_input_size(om->m);
                    if (need > xcap) {
                        float *nx = realloc(x, need * sizeof *x);
                        if (!nx) {
                            rc = fail(&(rtl_err){"out of memory"});
                            break;
                        }
                        x = nx, xcap = need;
                    }
                    rtl_class top;
                    size_t nt = 0;
                    /* --context: the specialised model the window matches (its partner: this option) */
                    struct task_ctx *t = tc ? &tc[a] : NULL;
                    rtl_model *first = om->m;
                    if (t) {
                        const struct addon *was = t->cur;
                        double share = 0;
                        t->cur = addons_match(&t->A, t->prof, op->variant, t->cur, &share);
                        if (t->cur && !t->cur->model) {
                            struct addon *cw = (struct addon *)t->cur;
                            rtl_model_options mo = {.threads = (int)threads};
                            if (!(cw->model = rtl_model_open(cw->cat, rtl_variant_id(cw->v), &mo, &err))) {
                                printf(",\"error\":");
                                ck_json_str(stdout, err.msg);
                                printf("}\n");
                                rc = fail(&err);
                                break;
                            }
                        }
                        if (t->cur) first = t->cur->model, via_cascade++, cascaded = 1;
                        if (t->cur != was) { /* an event line after this result */
                            char nm[2 * RTL_ID_MAX + 2];
                            if (t->cur) addon_name(t->cur, nm, sizeof nm);
                            pending_switch = 1;
                            snprintf(switch_to, sizeof switch_to, "%s", t->cur ? nm : "");
                            switch_share = share;
                        }
                    }
                    size_t need2 = rtl_model_input_size(first);
                    if (need2 > xcap) {
                        float *nx = realloc(x, need2 * sizeof *x);
                        if (!nx) {
                            rc = fail(&(rtl_err){"out of memory"});
                            break;
                        }
                        x = nx, xcap = need2;
                    }
                    if (rtl_model_image_input(first, in.p[k], x, &err) != 0) {
                        printf(",\"error\":");
                        ck_json_str(stdout, err.msg);
                        printf("}\n");
                        fprintf(stderr, "rtl: error: %s (skipped; exit status 1, as rtl run)\n", err.msg);
                        unreadable++;
                        continue;
                    }
                    double a0 = now_s();
                    int runrc = rtl_model_run(first, x, &err);
                    ms = (now_s() - a0) * 1000; /* the model's run alone, as rtl profile times it */
                    answered = first;
                    if (runrc == 0 && first != om->m && rtl_model_top(first, 1, &top, &nt, &err) == 0 && nt &&
                        ((int)top.index == t->cur->other || top.prob < t->cur->gate)) { /* "other" (or under the gate): the scheduler's choice answers */
                        runrc = rtl_model_image_input(om->m, in.p[k], x, &err);
                        a0 = now_s();
                        if (!runrc) runrc = rtl_model_run(om->m, x, &err);
                        ms += (now_s() - a0) * 1000;
                        answered = om->m;
                    }
                    if (runrc != 0 || rtl_model_top(answered, 1, &top, &nt, &err) != 0) {
                        printf(",\"error\":");
                        ck_json_str(stdout, err.msg);
                        printf("}\n");
                        rc = fail(&err);
                        break;
                    }
                    /* the measured time replaces the option's prediction
                     * for the next decisions (energy scales with it: there
                     * is no power meter); a cascade's time is not the
                     * option's, a cold run's is not its steady one */
                    if (!cascaded && !cold && !no_feedback) rtl_sched_account(s, &d, ms);
                    answer = top.label;
                    prob = top.prob;
                    if (rtl_model_exits(answered) > 0) exit_taken = rtl_model_exit_taken(answered);
                    if (t) { /* the answer into the task's window */
                        size_t j = label_index(t->labels, t->nl, answer);
                        if (j < t->nl && rtl_context_observe(t->prof, (uint32_t)j, &err) != 0) {
                            rc = fail(&err);
                            break;
                        }
                    }
                    /* truth from the file name: a label of the task in its base name */
                    size_t nl = 0;
                    const char *const *labels = rtl_catalog_task_labels(cat, task->task, &nl);
                    const char *base = strrchr(in.p[k], '/');
                    base = base ? base + 1 : in.p[k];
                    const char *hit = NULL;
                    for (size_t l = 0; l < nl; l++)
                        if (strstr(base, labels[l]) && (!hit || strlen(labels[l]) > strlen(hit))) hit = labels[l];
                    if (hit) ok = !strcmp(hit, answer), known++, correct += (uint64_t)ok;
                }
                served++;
                sum_top1 += d.top1, sum_ms += ms, sum_pred += d.latency_ms, energy += mj;
                if (nlat == latcap) {
                    size_t c = latcap ? 2 * latcap : 256;
                    double *na = realloc(lat, c * sizeof *na), *nb = na ? realloc(pred, c * sizeof *nb) : NULL;
                    if (na) lat = na;
                    if (nb) pred = nb, latcap = c;
                }
                if (nlat < latcap) lat[nlat] = ms, pred[nlat] = d.latency_ms, nlat++;
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
                       rtl_loc_name(d.loc), ms, d.latency_ms, sched_source_words(d.source), mj, d.cloud_usd, d.top1,
                       d.paged_in, d.paged_out);
                if (tc) {
                    struct task_ctx *t = &tc[a];
                    char nm[2 * RTL_ID_MAX + 2];
                    printf(",\"cascade\":");
                    if (cascaded) {
                        addon_name(t->cur, nm, sizeof nm);
                        ck_json_str(stdout, nm);
                    } else {
                        printf("null");
                    }
                    printf(",\"answered_by\":");
                    if (answered) ck_json_str(stdout, rtl_model_answered_by(answered));
                    else printf("null");
                }
                printf("}\n");
                if (tc) { /* a change of the task's context or of the model it uses */
                    struct task_ctx *t = &tc[a];
                    rtl_context cr;
                    if (rtl_profile_context(t->prof, &cr, &err) == 0 && (cr.changed || pending_switch)) {
                        printf("{\"event\":\"context\",\"task\":");
                        ck_json_str(stdout, task->task);
                        printf(",\"after_request\":%llu,\"dominated\":%s", (unsigned long long)requests,
                               cr.dominated ? "true" : "false");
                        if (cr.dominated) {
                            printf(",\"n\":%u,\"p\":%g,\"share\":%.4f,\"classes\":", cr.n, cr.p, cr.share);
                            ctx_print_classes(&cr, t->labels, stdout);
                        }
                        if (pending_switch) {
                            printf(",\"specialised\":");
                            if (switch_to[0]) {
                                ck_json_str(stdout, switch_to);
                                printf(",\"specialised_share\":%.4f", switch_share);
                            } else {
                                printf("null");
                            }
                        }
                        printf("}\n");
                    }
                }
            }
            /* page out: the models no slot holds stay open (warm) while all
             * open models fit the memory budget; beyond it, least recently
             * used first, they are closed */
            uint64_t open_bytes = 0, cap = o.memory_mb > 0 ? (uint64_t)(o.memory_mb * 1048576.0) : 0;
            for (size_t m = 0; m < nmodels; m++) open_bytes += models[m].bytes;
            while (cap && open_bytes > cap) {
                size_t lru = nmodels;
                for (size_t m = 0; m < nmodels; m++) {
                    int held = 0;
                    for (int a = 0; a < napps && !held; a++)
                        for (int l = RTL_LOC_DEVICE; l <= RTL_LOC_SPLIT && !held; l++) {
                            int op = rtl_sched_cached(s, a, (enum rtl_loc)l);
                            held = op >= 0 &&
                                   !strcmp(rtl_sched_task_at(s, (size_t)a)->options[op].variant, models[m].variant);
                        }
                    if (!held && (lru == nmodels || models[m].used < models[lru].used)) lru = m;
                }
                if (lru == nmodels) break; /* only held models left: the scheduler's budget holds them */
                open_bytes -= models[lru].bytes;
                rtl_model_close(models[lru].m);
                models[lru] = models[--nmodels];
            }
            fflush(stdout);
        }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    if (!rc) {
        rtl_sched_budget b;
        rtl_sched_get_budget(s, &b);
        printf("{\"summary\":{\"requests\":%llu,\"served\":%llu,\"refused\":%llu,\"stopped\":%s,\"budget_changes\":%llu,"
               "\"predicted_top1\":%.6f,\"measured_top1\":",
               (unsigned long long)requests, (unsigned long long)served, (unsigned long long)refused,
               g_stop && (!max || requests < (uint64_t)max) ? "true" : "false", (unsigned long long)budgets,
               served ? sum_top1 / (double)served : 0);
        if (known) printf("%.6f", (double)correct / (double)known);
        else printf("null");
        if (nlat) {
            qsort(lat, nlat, sizeof *lat, cmpd);
            qsort(pred, nlat, sizeof *pred, cmpd);
        }
        printf(",\"judged\":%llu,\"mean_latency_ms\":%.4f,\"mean_predicted_ms\":%.4f,\"median_latency_ms\":%.4f,"
               "\"median_predicted_ms\":%.4f,\"energy_mj\":%.4f,\"energy_left_mj\":%.4f,\"seconds\":%.3f",
               (unsigned long long)known, served ? sum_ms / (double)served : 0,
               served ? sum_pred / (double)served : 0, nlat ? lat[nlat / 2] : 0, nlat ? pred[nlat / 2] : 0, energy,
               b.energy_mj, now_s() - t0);
        if (tc) printf(",\"cascade_served\":%llu", (unsigned long long)via_cascade);
        printf("}}\n");
    }
    for (size_t m = 0; m < nmodels; m++) rtl_model_close(models[m].m);
    free(models);
    for (int a = 0; tc && a < napps; a++) {
        addons_free(&tc[a].A);
        rtl_context_profiler_free(tc[a].prof);
    }
    free(tc);
    free(lat);
    free(pred);
    free(x);
    rtl_sched_free(s);
    rtl_catalog_close(cat);
    for (size_t k = 0; k < in.n; k++) free(in.p[k]);
    free(in.p);
    if (fflush(stdout) != 0 && !rc) {
        fprintf(stderr, "rtl: error: writing the results: %s\n", strerror(errno));
        rc = 1;
    }
    return rc ? rc : unreadable != 0;
}
