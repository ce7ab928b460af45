/* rtl_run_cli.c: `rtl run` (top-k of images), `rtl profile` (latency on this
 * device, kept beside the installed catalog) and the latency table of
 * `rtl inspect`. */
#include "rtl_cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One image's result as text or into the JSON array. */
static void print_result(const char *image, const rtl_class *top, size_t n, const char *answered_by,
                         const char *cascade, const rtl_model *m, cJSON *results)
{
    rtl_model_info mi = model_info(m);
    int exits = mi.exits, exit = mi.exit_taken;
    if (results) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "image", image);
        cJSON_AddStringToObject(r, "answered_by", answered_by);
        if (cascade) cJSON_AddStringToObject(r, "cascade", cascade);
        if (exits) {
            cJSON_AddNumberToObject(r, "exit", exit);
            cJSON_AddNumberToObject(r, "exit_layer", exit < exits ? mi.exit_layers[exit] : -1);
        }
        cJSON_AddItemToObject(r, "top", top_json(top, n));
        cJSON_AddItemToArray(results, r);
        return;
    }
    printf("%s:", image);
    for (size_t k = 0; k < n; k++) printf("%s %.6f %s", k ? "," : "", top[k].prob, top[k].label);
    if (exits && exit < exits) printf(" [exit %d, layer %d]", exit, mi.exit_layers[exit]);
    else if (exits) printf(" [final]");
    if (cascade) printf(" [cascade %s, answered by %s]", cascade, answered_by);
    putchar('\n');
}

/* --context: a change of the specialised model in use, on standard error. */
static void context_note(const rtl_runner_result *res, const char *variant, const char *image)
{
    if (!res->switched || quiet) return;
    if (res->cascade[0])
        fprintf(stderr, "rtl: context: the classes of %s hold %.1f%% of the last %u answers (its p: %g): answering "
                "through its cascade from %s on\n", res->cascade, 100 * res->share, res->samples, res->p, image);
    else
        fprintf(stderr, "rtl: context: no specialised model matches the last %u answers: %s answers alone from %s "
                "on\n", res->samples, variant, image);
}

/* --context --json: the window at the end and the specialised model in use. */
static void context_json(cJSON *doc, rtl_runner *r, const rtl_catalog *cat, const char *task)
{
    rtl_context c;
    rtl_err err;
    rtl_context_profiler *prof = rtl_runner_profiler(r, task, &err);
    if (!prof || rtl_profile_context(prof, &c, &err) != 0) return;
    const char *const *labels = rtl_catalog_task_labels(cat, task, NULL);
    cJSON *o = cJSON_AddObjectToObject(doc, "context"), *cl = cJSON_CreateArray();
    cJSON_AddBoolToObject(o, "dominated", c.dominated);
    cJSON_AddNumberToObject(o, "n", c.n);
    cJSON_AddNumberToObject(o, "p", c.p);
    cJSON_AddNumberToObject(o, "share", c.share);
    cJSON_AddNumberToObject(o, "samples", c.samples);
    for (uint32_t q = 0; q < c.nclasses; q++) cJSON_AddItemToArray(cl, cJSON_CreateString(labels[c.classes[q]]));
    cJSON_AddItemToObject(o, "classes", cl);
    rtl_specialised sp;
    for (size_t k = 0; rtl_runner_specialised(r, task, k, &sp, NULL) == 1; k++)
        if (sp.in_use) {
            char nm[2 * RTL_ID_MAX + 2];
            snprintf(nm, sizeof nm, "%s/%s", sp.catalog, sp.variant);
            cJSON_AddStringToObject(o, "specialised", nm);
            return;
        }
    cJSON_AddNullToObject(o, "specialised");
}

/* The JSON document of rtl run --json (NULL when out of memory). */
static cJSON *run_doc(const rtl_catalog *cat, const char *variant, const rtl_model *m)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc) return NULL;
    cJSON_AddStringToObject(doc, "catalog", catalog_info(cat).id);
    cJSON_AddNumberToObject(doc, "version", (double)catalog_info(cat).version);
    cJSON_AddStringToObject(doc, "variant", variant);
    rtl_model_info mi = model_info(m);
    if (mi.capacities) cJSON_AddNumberToObject(doc, "capacity", mi.capacity);
    if (!cJSON_AddArrayToObject(doc, "results")) cJSON_Delete(doc), doc = NULL;
    return doc;
}

/* Runs q on every image through r and prints the answers; 1 when one
 * failed. */
static int run_images(rtl_runner *r, rtl_runner_request *q, char **images, int n, size_t k, cJSON *results)
{
    rtl_class *top = calloc(k, sizeof *top);
    if (!top) return fprintf(stderr, "rtl: error: out of memory\n"), 1;
    int status = 0;
    for (int a = 0; a < n; a++) {
        rtl_runner_result res;
        rtl_err err;
        size_t nt = 0;
        q->image = images[a];
        int rc = rtl_runner_run(r, q, &res, &err);
        context_note(&res, q->variant, images[a]);
        if (rc != 0 || rtl_model_top(res.model, k, top, &nt, &err) != 0) {
            status = fail(&err);
            image_error_json(results, images[a], err.msg);
            continue;
        }
        print_result(images[a], top, nt, res.answered_by, res.cascade[0] ? res.cascade : NULL, res.model, results);
    }
    free(top);
    return status;
}

static void warn_cli(void *arg, const char *msg)
{
    (void)arg;
    if (!quiet) fprintf(stderr, "rtl: warning: %s\n", msg);
}

int runner_options(const struct ctx_cli *cc, int context, long long threads, rtl_runner_options *ro,
                   rtl_err *err)
{
    memset(ro, 0, sizeof *ro);
    ro->threads = (int)threads, ro->context = context, ro->warn = warn_cli;
    return context ? ctx_params(cc, 0, &ro->context_params, err) : 0;
}

/* rtl run's options, as rtl_runner_prepare takes them; -1 after an error. */
static rtl_runner *run_prepare(rtl_store *s, rtl_catalog *cat, const rtl_runner_options *ro,
                               const rtl_runner_request *q, const rtl_model **m)
{
    rtl_err err;
    rtl_runner *r = rtl_runner_new(s, cat, ro, &err);
    if (r && rtl_runner_prepare(r, q, m, &err) != 0) rtl_runner_free(r), r = NULL;
    if (!r) fail(&err);
    return r;
}

/* After rtl run's own help: the help of its other modes, each generated
 * from its option table. */
static int run_modes_help(rtl_store *s)
{
    static const char *const modes[][4] = {
        {"run", "--task", "T", "--help"}, {"run", "--split", "auto", "--help"}, {"run", "--workers", "H:1", "--help"}};
    int rc = 0;
    for (size_t k = 0; k < sizeof modes / sizeof *modes && !rc; k++) {
        char *argv[5] = {(char *)modes[k][0], (char *)modes[k][1], (char *)modes[k][2], (char *)modes[k][3], NULL};
        printf("\n");
        rc = k == 0 ? cmd_run_tasks(s, 4, argv) : cmd_run_split(s, 4, argv);
    }
    return rc;
}

int cmd_run(rtl_store *s, int argc, char **argv)
{
    if (run_wants_split(argc, argv)) return cmd_run_split(s, argc, argv); /* its own options */
    if (run_wants_tasks(argc, argv)) return cmd_run_tasks(s, argc, argv); /* likewise */
    struct cmd_opts o = CMD_OPTS_DEFAULTS;
    long long capacity = 0;
    int context = 0;
    struct ctx_cli cc = CTX_CLI_DEFAULTS;
    const ck_opt opts[] = {
        {"--top", "K", CK_INT, &o.top, 1, 100000, "classes per image (default 5, at most the task's classes)"},
        {"--capacity", "K", CK_INT, &capacity, 1, 100000,
         "a multi-capacity (nested) variant: run capacity K (1 = the smallest;\n"
         "default: the largest)"},
        {"--json", NULL, CK_FLAG, &o.json, 0, 0,
         "one JSON object: {\"catalog\",\"version\",\"variant\",\"results\":[{\"image\",\n"
         "\"answered_by\",[\"exit\",\"exit_layer\",]\"top\":[{\"index\",\"label\",\"probability\"}]} or\n"
         "{\"image\",\"error\"}]}"},
        {"--threads", "N", CK_INT, &o.threads, 1, 1024, "compute threads (default: all cores)"},
        {"--alpha", "A", CK_REAL, &o.alpha, 0, 1e6,
         "early-exit variants: exit when confidence > A x the exit's lossless threshold\n"
         "(default 1; smaller answers earlier, larger later; the manifest's alpha_profile\n"
         "gives accuracy and expected MACs per A)"},
        {"--context", NULL, CK_FLAG, &context, 0, 0,
         "profile the answers (MCDNN's class-frequency window) and, while a specialised\n"
         "model installed for VARIANT's task (an add-on of ID, or ID's own) matches the\n"
         "window (its classes hold its p), answer through its cascade: the specialised\n"
         "model, and VARIANT on \"other\"; the answers stay VARIANT's labels"},
        CTX_CLI_OPTS(cc),
        {0},
    };
    const ck_verb v = {"run", NULL, NULL, "ID VARIANT IMAGE... [--top K] [--capacity K] [--json] [--threads N]\n"
                       "              [--alpha A] [--context [--window W] [--min-samples N] [--hysteresis H]]",
                       "Runs variant VARIANT of installed catalog ID on each image (PNG, JPEG or BMP;\n"
                       "scaled and centre-cropped as `trainer predict` does) and prints the K most\n"
                       "probable classes with the labels of the variant's task, one line per image:\n"
                       "  IMAGE: P1 LABEL1, P2 LABEL2, ...\n"
                       "An early-exit variant adds which exit answered: [exit J, layer L] or [final];\n"
                       "--context adds [cascade CATALOG/VARIANT, answered by V] while a specialised model\n"
                       "answers, and says on standard error when it starts and stops (JSON: \"cascade\"\n"
                       "per result, \"context\" at the end).\n",
                       opts, "Exit status 1 when a variant cannot be loaded or an image cannot be read.\n"
                             "rtl run has three more modes, each with its options (below): with --task T...\n"
                             "(no VARIANT) every task is answered, shared trunks run once; with --split\n"
                             "S|auto [--peer HOST:PORT] the variant runs split with a peer; with --workers\n"
                             "its convolutions are spread over workers (MeDNN's GTDP).\n"};
    int rc, i = sub_opts(argc, argv, &v, 3, INT_MAX, &rc);
    if (i < 0 && rc == 0) return run_modes_help(s);
    if (i < 0) return rc;
    rtl_err err;
    rtl_runner_options ro;
    if (runner_options(&cc, context, o.threads, &ro, &err) != 0) return fail(&err);
    rtl_catalog *cat = rtl_catalog_open(s, argv[i], &err);
    if (!cat) return fail(&err);
    rtl_runner_request q = {.variant = argv[i + 1], .capacity = (int)capacity, .alpha = o.alpha};
    const rtl_model *m = NULL;
    rtl_runner *r = run_prepare(s, cat, &ro, &q, &m);
    if (!r) return rtl_catalog_close(cat), 1;
    const char *task = variant_info(model_info(m).variant).task;
    rtl_specialised sp;
    if (context && !quiet && rtl_runner_specialised(r, task, 0, &sp, NULL) == 0)
        fprintf(stderr, "rtl: context: no specialised model with partner %s is installed\n", argv[i + 1]);
    cJSON *doc = o.json ? run_doc(cat, argv[i + 1], m) : NULL;
    int status = o.json && !doc ? (fprintf(stderr, "rtl: error: out of memory\n"), 1) : 0;
    if (!status)
        status = run_images(r, &q, argv + i + 2, argc - i - 2, (size_t)o.top,
                            doc ? cJSON_GetObjectItemCaseSensitive(doc, "results") : NULL);
    if (doc && context) context_json(doc, r, cat, task);
    if (doc) {
        char *text = cJSON_Print(doc);
        if (text) puts(text);
        else status = 1;
        free(text);
        cJSON_Delete(doc);
    }
    rtl_runner_free(r);
    rtl_catalog_close(cat);
    return status;
}

/* A fixed input pattern in [0, 1) (the latency does not depend on the
 * values; zeros could take faster paths than pixels do). */
static void fill_pattern(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)((uint32_t)(i * 2654435761u) >> 24) / 256.0f;
}

static cJSON *latency_json(const rtl_latency *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "variant", l->variant);
    cJSON_AddStringToObject(o, "where", l->where);
    cJSON_AddStringToObject(o, "source", l->source);
    cJSON_AddStringToObject(o, "machine", l->machine);
    cJSON_AddNumberToObject(o, "threads", l->threads);
    cJSON_AddNumberToObject(o, "batch", l->batch);
    cJSON_AddNumberToObject(o, "warmup", l->warmup);
    cJSON_AddNumberToObject(o, "runs", l->runs);
    cJSON_AddNumberToObject(o, "ms_median", l->ms_median);
    cJSON_AddNumberToObject(o, "ms_mean", l->ms_mean);
    if (l->gap_ms > 0) cJSON_AddNumberToObject(o, "gap_ms", l->gap_ms);
    cJSON_AddNumberToObject(o, "measured_at", (double)l->measured_at);
    return o;
}

/* Measures one variant and stores the result; 1 when skipped, -1 on error. */
static int profile_one(rtl_catalog *cat, const char *id, const struct cmd_opts *o, int named, rtl_latency *lat)
{
    rtl_err err;
    const rtl_variant *v = rtl_catalog_find(cat, id);
    if (!named && v && rtl_variant_loadable(v, &err) != 0) {
        if (!quiet) fprintf(stderr, "rtl: skipping %s: %s\n", id, err.msg);
        return 1;
    }
    rtl_model_options mo = {.threads = (int)o->threads};
    rtl_model *m = rtl_model_open(cat, id, &mo, &err);
    if (!m) {
        fail(&err);
        return -1;
    }
    size_t in = model_info(m).input_size;
    float *x = malloc(in * sizeof *x);
    int rc = -1;
    if (!x) {
        fprintf(stderr, "rtl: error: out of memory\n");
    } else {
        fill_pattern(x, in);
        if (rtl_model_measure_paced(m, x, (uint32_t)o->warmup, (uint32_t)o->runs, o->gap_ms, lat, &err) != 0 ||
            rtl_profile_save(cat, lat, 1, &err) != 0)
            fail(&err);
        else
            rc = 0;
    }
    free(x);
    rtl_model_close(m);
    return rc;
}

int cmd_profile(rtl_store *s, int argc, char **argv)
{
    struct cmd_opts o = CMD_OPTS_DEFAULTS;
    const ck_opt opts[] = {
        {"--runs", "N", CK_INT, &o.runs, 1, 1000000, "timed runs (default 20)"},
        {"--warmup", "N", CK_INT, &o.warmup, 0, 1000000, "untimed runs first (default 3)"},
        {"--threads", "N", CK_INT, &o.threads, 1, 1024, "compute threads (default: all cores)"},
        {"--gap-ms", "G", CK_REAL, &o.gap_ms, 0, 3.6e6,
         "sleep G ms before each timed run: requests at a frame rate (a run after\n"
         "the core idled) instead of back to back (default 0)"},
        {"--json", NULL, CK_FLAG, &o.json, 0, 0, "print the measurements as JSON as well"},
        {0},
    };
    const ck_verb v = {"profile", NULL, NULL,
                       "ID [VARIANT...] [--runs N] [--warmup N] [--threads N] [--gap-ms G] [--json]",
                       "Measures the batch-1 latency of each VARIANT of installed catalog ID (default:\n"
                       "all that this runtime can load) on this device: N timed runs after the warm-up\n"
                       "runs, median and mean. Each result is stored, marked as measured on this device\n"
                       "with the machine and the thread count, in ROOT/catalogs/ID/profile.json (written\n"
                       "atomically); `rtl inspect ID` shows it beside the build host's figures and the\n"
                       "catalog's estimates.\n",
                       opts, NULL};
    int rc, i = sub_opts(argc, argv, &v, 1, INT_MAX, &rc);
    if (i < 0) return rc;
    rtl_err err;
    rtl_catalog *cat = rtl_catalog_open(s, argv[i], &err);
    if (!cat) return fail(&err);
    int named = argc - i > 1;
    size_t count = named ? (size_t)(argc - i - 1) : catalog_info(cat).variant_count;
    int status = 0;
    size_t measured = 0;
    cJSON *arr = o.json ? cJSON_CreateArray() : NULL;
    if (!o.json)
        printf("%-24s %8s %6s %12s %12s %12s\n", "variant", "threads", "runs", "median ms", "mean ms",
               "build-host");
    for (size_t k = 0; k < count; k++) {
        const char *id = named ? argv[i + 1 + (int)k] : variant_info(rtl_catalog_variant_at(cat, k)).id;
        rtl_latency lat;
        int r = profile_one(cat, id, &o, named, &lat);
        if (r < 0) status = 1;
        if (r != 0) continue;
        measured++;
        if (arr) {
            cJSON_AddItemToArray(arr, latency_json(&lat));
            continue;
        }
        rtl_latency host;
        char hs[32] = "-";
        if (rtl_variant_latency(rtl_catalog_find(cat, id), "build-host", &host, NULL) == 0)
            snprintf(hs, sizeof hs, "%.4g", host.ms_median);
        printf("%-24s %8d %6" PRIu32 " %12.4g %12.4g %12s\n", id, lat.threads, lat.runs, lat.ms_median,
               lat.ms_mean, hs);
        fflush(stdout);
    }
    if (arr) {
        char *text = cJSON_Print(arr);
        if (text) puts(text);
        free(text);
        cJSON_Delete(arr);
    }
    if (measured && !quiet) {
        char machine[256];
        rtl_machine_describe(machine, sizeof machine);
        fprintf(stderr, "rtl: %zu measurement%s on %s stored for catalog %s\n", measured, measured == 1 ? "" : "s",
                machine, catalog_info(cat).id);
    }
    if (!measured && !status) {
        fprintf(stderr, "rtl: error: catalog %s has no variant this runtime can load\n", catalog_info(cat).id);
        status = 1;
    }
    rtl_catalog_close(cat);
    return status;
}

/* "2024-05-01 12:00" (UTC) of a Unix time, "-" when unknown. */
static void format_time(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t < 0 || !gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%d %H:%M UTC", &tm)) snprintf(out, size, "-");
}

static void latency_row(const char *id, const char *where, const rtl_latency *l, const char *note)
{
    char mean[32], gap[48] = "";
    snprintf(mean, sizeof mean, "%.4g", l->ms_mean);
    if (l->gap_ms > 0) snprintf(gap, sizeof gap, " %.4g ms apart", l->gap_ms);
    printf("%-24s %-18s %10.4g %10s  measured: %s, %d thread%s, %" PRIu32 " runs%s%s%s\n", id, where, l->ms_median,
           mean, l->machine[0] ? l->machine : "?", l->threads, l->threads == 1 ? "" : "s", l->runs, gap,
           note[0] ? ", " : "", note);
}

void print_latencies(const rtl_catalog *cat)
{
    int header = 0, warned = 0;
    for (size_t i = 0; i < catalog_info(cat).variant_count; i++) {
        const rtl_variant *v = rtl_catalog_variant_at(cat, i);
        const char *id = variant_info(v).id;
        rtl_latency host, dev[8];
        size_t ndev = 0;
        rtl_err err;
        int has_host = rtl_variant_latency(v, "build-host", &host, NULL) == 0;
        int has_dev = rtl_profile_get(cat, id, dev, 8, &ndev, &err) == 0;
        if (!has_dev && !warned && !strstr(err.msg, "not opened from a store")) {
            fprintf(stderr, "rtl: warning: %s\n", err.msg);
            warned = 1;
        }
        if (!has_host && !ndev && !variant_info(v).estimate_count) continue;
        if (!header) {
            printf("\nlatency at batch 1 (ms; the build host's and this device's are measured; targets'\n"
                   "are the catalog's roofline estimates, lower bounds: a real run takes longer)\n");
            printf("%-24s %-18s %10s %10s  %s\n", "variant", "where", "median", "mean", "how");
            header = 1;
        }
        if (has_host) latency_row(id, "build-host", &host, "");
        for (size_t d = 0; d < ndev && d < 8; d++) {
            char when[40];
            format_time(dev[d].measured_at, when, sizeof when);
            latency_row(id, "this device", &dev[d], when);
        }
        for (size_t e = 0; e < variant_info(v).estimate_count; e++) {
            rtl_estimate est;
            if (rtl_variant_estimate_at(v, e, &est) != 0) continue;
            printf("%-24s %-18s %10.4g %10s  lower bound (%s%s%s)%s%s\n", id, est.target, est.ms, "-", est.method,
                   est.bound[0] ? ", " : "", est.bound[0] ? est.bound : "", est.compute_unit[0] ? " on " : "",
                   est.compute_unit);
            if (est.cpu_ms >= 0) {
                char where[RTL_ID_MAX + 8];
                snprintf(where, sizeof where, "%s cpu", est.target);
                printf("%-24s %-18s %10.4g %10s  lower bound (%s) on %s: the path this runtime takes\n", id, where,
                       est.cpu_ms, "-", est.method, est.cpu_unit[0] ? est.cpu_unit : "the CPU");
            }
        }
    }
}
