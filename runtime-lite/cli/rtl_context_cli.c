/* rtl_context_cli.c: `rtl context` (the class-frequency profiler for
 * operators, MCDNN 4.1.2) and what `rtl run --context` and `rtl stream
 * --context` share with it: the profiler options, the specialised models
 * installed for a catalog (its add-ons' and its own) and which of them the
 * current window matches.
 *
 * A specialised model S (classes C, context share p, cascade partner G)
 * matches when the answers of G's task in the window hold at least
 * `min_samples` inputs and the classes C hold at least p of them (MCDNN's
 * (n, p)-dominance for S's own classes); the one in use stays down to p
 * minus the hysteresis. Among several, the one with the fewest classes
 * (the most specialised), then the highest share, then the first in
 * catalog and variant order. */
#include "rtl_cli.h"
#include "rtl_sched_cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "7,14,21" into v (zeros after the last); -1 on a bad list. */
static int parse_u32_list(const char *s, uint32_t *v)
{
    memset(v, 0, RTL_CONTEXT_MAX_LEVELS * sizeof *v);
    int k = 0;
    for (const char *p = s; *p;) {
        char *end;
        errno = 0;
        unsigned long x = strtoul(p, &end, 10);
        if (end == p || errno || x == 0 || x > UINT32_MAX || k == RTL_CONTEXT_MAX_LEVELS || (*end && *end != ','))
            return -1;
        v[k++] = (uint32_t)x;
        p = *end ? end + 1 : end;
    }
    return k ? 0 : -1;
}

static int parse_dbl_list(const char *s, double *v)
{
    memset(v, 0, RTL_CONTEXT_MAX_LEVELS * sizeof *v);
    int k = 0;
    for (const char *p = s; *p;) {
        char *end;
        double x = strtod(p, &end);
        if (end == p || !(x > 0) || k == RTL_CONTEXT_MAX_LEVELS || (*end && *end != ',')) return -1;
        v[k++] = x;
        p = *end ? end + 1 : end;
    }
    return k ? 0 : -1;
}

int ctx_params(const struct ctx_cli *c, uint32_t classes, rtl_context_params *q, rtl_err *err)
{
    memset(q, 0, sizeof *q);
    q->classes = classes;
    q->window = (uint32_t)c->window;
    q->min_samples = (uint32_t)c->min_samples;
    q->hysteresis = c->hysteresis;
    if (c->n && parse_u32_list(c->n, q->n) != 0)
        return rtl_errf_cli(err, "--n '%s': give increasing whole numbers separated by commas, at most %d "
                                 "(e.g. 7,14,21)", c->n, RTL_CONTEXT_MAX_LEVELS), -1;
    if (c->p && parse_dbl_list(c->p, q->p) != 0)
        return rtl_errf_cli(err, "--p '%s': give increasing shares in (0, 1] separated by commas, at most %d "
                                 "(e.g. 0.6,0.8,0.95)", c->p, RTL_CONTEXT_MAX_LEVELS), -1;
    return 0;
}

size_t label_index(const char *const *labels, size_t n, const char *label)
{
    size_t j = 0;
    while (j < n && strcmp(labels[j], label) != 0) j++;
    return j;
}

/* ---- rtl context ----------------------------------------------------------- */

/* The most accurate variant of task that runs here and is not specialised
 * (without accuracies: the first). */
static const rtl_variant *generic_variant(const rtl_catalog *cat, const char *task)
{
    const rtl_variant *best = NULL;
    double bt = -1;
    for (size_t i = 0; i < catalog_info(cat).variant_count; i++) {
        const rtl_variant *v = rtl_catalog_variant_at(cat, i);
        double t;
        if (strcmp(variant_info(v).task, task) != 0 || !strcmp(variant_info(v).technique, "specialised") ||
            rtl_variant_loadable(v, NULL) != 0)
            continue;
        if (rtl_variant_accuracy(v, task, &t, NULL) != 0) t = -0.5;
        if (t > bt) best = v, bt = t;
    }
    return best;
}

struct ctx_run {
    rtl_context_profiler *prof;
    const char *const *labels;
    size_t nlabels;
    const char *task;
    int events;               /* print a JSON line at every change */
    uint64_t inputs;
};

void ctx_print_classes(const rtl_context *r, const char *const *labels, FILE *f)
{
    fputc('[', f);
    for (uint32_t k = 0; k < r->nclasses; k++) {
        if (k) fputc(',', f);
        ck_json_str(f, labels[r->classes[k]]);
    }
    fputc(']', f);
}

/* One answer (a label of the task): observed, and an event line when the
 * report changes. -1 with err when the label is not one of the task's. */
static int ctx_answer(struct ctx_run *cr, const char *label, const char *where, rtl_err *err)
{
    size_t j = label_index(cr->labels, cr->nlabels, label);
    if (j == cr->nlabels)
        return rtl_errf_cli(err, "%s: '%s' is not a class of task %s (give the results of this catalog's task, or "
                                 "--task)", where, label, cr->task), -1;
    if (rtl_context_observe(cr->prof, (uint32_t)j, err) != 0) return -1;
    cr->inputs++;
    if (!cr->events) return 0;
    rtl_context r;
    if (rtl_profile_context(cr->prof, &r, err) != 0) return -1;
    if (!r.changed) return 0;
    printf("{\"event\":\"context\",\"after\":%" PRIu64 ",\"dominated\":%s", cr->inputs, r.dominated ? "true" : "false");
    if (r.dominated) {
        printf(",\"n\":%u,\"p\":%g,\"share\":%.4f,\"classes\":", r.n, r.p, r.share);
        ctx_print_classes(&r, cr->labels, stdout);
    }
    printf("}\n");
    return 0;
}

/* The answers of one parsed JSON value: an `rtl stream` line ({task,
 * answer}), `rtl run --json` ({results:[{top:[{label}]}]}) or `rtl run
 * --task --json` ({results:[{answers:[{task, top}]}]}). Others (events,
 * summaries, refusals, errors) carry none. */
static int ctx_json(struct ctx_run *cr, const cJSON *j, const char *run_task, const char *where, rtl_err *err)
{
    const cJSON *task = cJSON_GetObjectItemCaseSensitive(j, "task");
    const cJSON *ans = cJSON_GetObjectItemCaseSensitive(j, "answer");
    if (cJSON_IsString(task) && cJSON_IsString(ans))
        return strcmp(task->valuestring, cr->task) ? 0 : ctx_answer(cr, ans->valuestring, where, err);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "results"), *r;
    cJSON_ArrayForEach(r, res)
    {
        const cJSON *top = cJSON_GetObjectItemCaseSensitive(r, "top");
        const cJSON *answers = cJSON_GetObjectItemCaseSensitive(r, "answers"), *a;
        if (cJSON_IsArray(top)) {
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(top, 0), "label");
            if (cJSON_IsString(l) && (!run_task || !strcmp(run_task, cr->task)) &&
                ctx_answer(cr, l->valuestring, where, err) != 0)
                return -1;
        }
        cJSON_ArrayForEach(a, answers)
        {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "task");
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(a, "top"), 0), "label");
            if (cJSON_IsString(t) && !strcmp(t->valuestring, cr->task) && cJSON_IsString(l) &&
                ctx_answer(cr, l->valuestring, where, err) != 0)
                return -1;
        }
    }
    return 0;
}

#define CTX_VALUE_MAX (64u << 20)

/* Reads JSON values one after another (JSON lines, or the indented objects
 * `rtl run --json` prints) from path ("-": standard input), bounded: one
 * value at a time, at most CTX_VALUE_MAX bytes. */
static int ctx_results(struct ctx_run *cr, rtl_store *s, const rtl_catalog *cat, const char *path, rtl_err *err)
{
    rtl_err why;
    FILE *f = strcmp(path, "-") ? open_input(path, "r", &why) : stdin;
    if (!f) return rtl_errf_cli(err, "results: %s", why.msg), -1;
    const char *name = strcmp(path, "-") ? path : "standard input";
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int depth = 0, instr = 0, esc = 0, rc = 0, c;
    unsigned long line = 1, start = 1;
    while (!rc && (c = fgetc(f)) != EOF) {
        if (c == '\n') line++;
        if (!depth && !len) {
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
            if (c != '{') {
                rtl_errf_cli(err, "%s:%lu: not a JSON object (give the output of rtl run --json, rtl run --task "
                                       "--json or rtl stream)", name, line); rc = -1;
                break;
            }
            start = line;
        }
        if (len + 2 > cap) {
            size_t nc = cap ? 2 * cap : 4096;
            char *nb = nc <= CTX_VALUE_MAX ? realloc(buf, nc) : NULL;
            if (!nb) {
                rtl_errf_cli(err, "%s:%lu: a JSON value longer than %u bytes", name, start, CTX_VALUE_MAX);
                rc = -1;
                break;
            }
            buf = nb, cap = nc;
        }
        buf[len++] = (char)c;
        if (instr) {
            if (esc) esc = 0;
            else if (c == '\\') esc = 1;
            else if (c == '"') instr = 0;
            continue;
        }
        if (c == '"') instr = 1;
        else if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') depth--;
        if (depth > 0) continue;
        buf[len] = 0;
        cJSON *j = cJSON_ParseWithLength(buf, len);
        char where[600];
        snprintf(where, sizeof where, "%s:%lu", name, start);
        if (!j) {
            rtl_errf_cli(err, "%s: not valid JSON", where);
            rc = -1;
            break;
        }
        /* rtl run --json names its variant: answers of its task only */
        const char *run_task = NULL;
        char task[RTL_ID_MAX + 1];
        const cJSON *vj = cJSON_GetObjectItemCaseSensitive(j, "variant");
        const cJSON *cj = cJSON_GetObjectItemCaseSensitive(j, "catalog");
        if (cJSON_IsString(vj) && cJSON_IsString(cj)) {
            const rtl_catalog *oc = cat;
            rtl_catalog *tmp = NULL;
            if (strcmp(cj->valuestring, catalog_info(cat).id) != 0) oc = tmp = rtl_catalog_open(s, cj->valuestring, NULL);
            const rtl_variant *v = oc ? rtl_catalog_find(oc, vj->valuestring) : NULL;
            /* a cascade (a specialised variant) answers with its partner's
             * labels: the partner's task */
            if (v && !strcmp(variant_info(v).technique, "specialised")) snprintf(task, sizeof task, "%s", cr->task);
            else if (v) snprintf(task, sizeof task, "%s", variant_info(v).task);
            else snprintf(task, sizeof task, "%s", cr->task); /* not installed here: trust the labels */
            run_task = task;
            rtl_catalog_close(tmp);
        }
        rc = ctx_json(cr, j, run_task, where, err);
        cJSON_Delete(j);
        len = 0;
    }
    if (!rc && (depth || len)) {
        rtl_errf_cli(err, "%s:%lu: the input ends inside a JSON value", name, start);
        rc = -1;
    }
    if (!rc && ferror(f)) {
        rtl_errf_cli(err, "results %s: %s", path, strerror(errno));
        rc = -1;
    }
    free(buf);
    if (f != stdin) fclose(f);
    return rc;
}

/* IMAGE operands: run by the task's generic variant (or --variant), their
 * answers observed; 0, or 1 after an error message. */
static int ctx_images(struct ctx_run *cr, rtl_catalog *cat, const char *variant, int threads, char **args, int n)
{
    rtl_err err;
    const rtl_variant *gv = variant ? rtl_catalog_find(cat, variant) : generic_variant(cat, cr->task);
    rtl_model_options mo = {.threads = threads};
    rtl_model *m = NULL;
    if (!gv) {
        if (variant) rtl_errf_cli(&err, "catalog %s has no variant %s", catalog_info(cat).id, variant);
        else rtl_errf_cli(&err, "catalog %s has no variant of task %s that this runtime can run", catalog_info(cat).id, cr->task);
        return fail(&err);
    }
    if (strcmp(variant_info(gv).task, cr->task) != 0) {
        rtl_errf_cli(&err, "variant %s answers task %s, not %s (--task)", variant_info(gv).id, variant_info(gv).task, cr->task);
        return fail(&err);
    }
    if (!(m = rtl_model_open(cat, variant_info(gv).id, &mo, &err))) return fail(&err);
    struct inputs in = {0};
    int rc = 0;
    for (int a = 0; !rc && a < n; a++)
        if (add_inputs(&in, args[a]) != 0) rc = 1;
    for (size_t k = 0; !rc && k < in.n; k++) {
        rtl_class top;
        size_t nt = 0;
        if (rtl_model_run_image(m, in.p[k], &err) != 0 || rtl_model_top(m, 1, &top, &nt, &err) != 0 ||
            ctx_answer(cr, top.label, in.p[k], &err) != 0)
            rc = fail(&err);
    }
    inputs_free(&in);
    rtl_model_close(m);
    return rc;
}

/* rtl context --json's report. */
static void ctx_report_json(const struct ctx_run *cr, rtl_runner *r, const rtl_catalog *cat, const rtl_context *rep)
{
    rtl_context_params used;
    rtl_context_profiler_params(cr->prof, &used);
    printf("{\"catalog\":");
    ck_json_str(stdout, catalog_info(cat).id);
    printf(",\"task\":");
    ck_json_str(stdout, cr->task);
    printf(",\"window\":%u,\"min_samples\":%u,\"samples\":%u,\"seen\":%" PRIu64 ",\"dominated\":%s,\"n\":%u,"
           "\"p\":%g,\"share\":%.6f,\"classes\":[", used.window, used.min_samples, rep->samples, rep->seen,
           rep->dominated ? "true" : "false", rep->n, rep->p, rep->share);
    for (uint32_t k = 0; k < rep->nclasses; k++) {
        printf("%s{\"label\":", k ? "," : "");
        ck_json_str(stdout, cr->labels[rep->classes[k]]);
        printf(",\"index\":%u,\"count\":%u}", rep->classes[k], rep->counts[k]);
    }
    printf("],\"top_share\":[");
    for (int k = 0; k < RTL_CONTEXT_MAX_LEVELS && used.n[k]; k++)
        printf("%s{\"n\":%u,\"share\":%.6f}", k ? "," : "", used.n[k], rep->top_share[k]);
    printf("],\"specialised\":[");
    rtl_specialised sp;
    for (size_t k = 0; rtl_runner_specialised(r, cr->task, k, &sp, NULL) == 1; k++) {
        printf("%s{\"catalog\":", k ? "," : "");
        ck_json_str(stdout, sp.catalog);
        printf(",\"variant\":");
        ck_json_str(stdout, sp.variant);
        printf(",\"partner\":");
        ck_json_str(stdout, sp.partner);
        printf(",\"n\":%zu,\"p\":%g,\"share\":%.6f,\"matches\":%s}", sp.n, sp.p, sp.share,
               sp.matches ? "true" : "false");
    }
    printf("],\"request\":");
    if (rep->dominated) {
        printf("{\"model\":");
        ck_json_str(stdout, catalog_info(cat).model);
        printf(",\"classes\":");
        ctx_print_classes(rep, cr->labels, stdout);
        printf(",\"context_p\":%g}", rep->p);
    } else {
        printf("null");
    }
    printf("}\n");
}

/* rtl context's report as text. */
static void ctx_report_text(const struct ctx_run *cr, rtl_runner *r, const rtl_catalog *cat, const rtl_context *rep)
{
    rtl_context_params used;
    rtl_context_profiler_params(cr->prof, &used);
    printf("catalog %s, task %s: %u answers in the window (of %" PRIu64 " seen; window %u, at least %u)\n",
           catalog_info(cat).id, cr->task, rep->samples, rep->seen, used.window, used.min_samples);
    if (rep->dominated) printf("(%u, %g)-dominated: %u classes hold %.1f%% of the window\n", rep->n, rep->p,
                               rep->nclasses, 100 * rep->share);
    else printf("not dominated: the top %u classes hold %.1f%% of the window\n", rep->n, 100 * rep->share);
    for (uint32_t k = 0; k < rep->nclasses; k++)
        printf("  %-24s %6u  %5.1f%%\n", cr->labels[rep->classes[k]], rep->counts[k],
               rep->samples ? 100.0 * rep->counts[k] / rep->samples : 0);
    rtl_specialised sp;
    size_t k = 0;
    for (; rtl_runner_specialised(r, cr->task, k, &sp, NULL) == 1; k++)
        printf("specialised %s/%s (%zu classes, p %g, partner %s): its classes hold %.1f%%%s\n", sp.catalog,
               sp.variant, sp.n, sp.p, sp.partner, 100 * sp.share,
               sp.matches ? ": matches, runs through the cascade" : "");
    if (!k) printf("no specialised model is installed for task %s\n", cr->task);
    if (rep->dominated) {
        printf("request: make specialise MODEL=%s CLASSES=", catalog_info(cat).model);
        for (uint32_t j = 0; j < rep->nclasses; j++) printf("%s%s", j ? "," : "", cr->labels[rep->classes[j]]);
        printf(" CONTEXT_P=%g\n", rep->p);
    }
}

int cmd_context(rtl_store *s, int argc, char **argv)
{
    struct ctx_cli c = CTX_CLI_DEFAULTS;
    const char *task = NULL, *variant = NULL;
    ck_list results = {0};
    int json = 0, events = 0;
    long long threads = 0;
    ck_opt opts[] = {
        {"--results", "FILE", CK_LIST, &results, 0, 0,
         "answers already computed: the output of rtl run --json, rtl run --task ... --json\n"
         "or rtl stream (JSON lines); '-' reads standard input (repeatable)"},
        {"--task", "T", CK_STR, &task, 0, 0, "the task whose answers are profiled (default: identity, else the first)"},
        {"--variant", "V", CK_STR, &variant, 0, 0,
         "the variant that answers for IMAGE operands (default: the task's most accurate\n"
         "variant that is not specialised)"},
        CTX_CLI_OPTS(c),
        {"--events", NULL, CK_FLAG, &events, 0, 0, "a JSON line each time the report changes, as the answers go by"},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "the final report as one JSON object: {catalog, task, window, samples, seen,\n"
         "dominated, n, p, share, classes:[{label, index, count}], top_share:[{n, share}],\n"
         "specialised:[{catalog, variant, partner, n, p, share, matches}], request}"},
        {"--threads", "N", CK_INT, &threads, 1, 1024, "compute threads for IMAGE operands (default: all cores)"},
        {0},
    };
    const ck_verb v = {"context", NULL, NULL, "ID [IMAGE...] [--results FILE]... [OPTIONS]",
                       "The class-frequency profiler of MCDNN (section 4.1.2) over the answers of a task\n"
                       "of installed catalog ID: the answers of IMAGE operands (files, folders, @LIST\n"
                       "files; run by the task's generic variant) and of --results files, in that\n"
                       "order, go through a sliding window of the last W answers. The window is\n"
                       "(n, p)-dominated when its n most frequent classes hold at least a share p of it;\n"
                       "the report gives the smallest n of --n that reaches a threshold of --p, the\n"
                       "largest threshold it reaches and its classes, or that the window is not\n"
                       "dominated. It also lists the specialised models installed for the task (add-on\n"
                       "catalogs of ID at its version, and ID's own) and which one the window matches\n"
                       "(its classes hold its p: `rtl run --context` and `rtl stream --context` would\n"
                       "use it through the cascade), and, when dominated, the request for the build\n"
                       "side: make specialise MODEL=... CLASSES=... CONTEXT_P=...\n",
                       opts,
                       "Answers are labels of the task (a cascade's answers are its partner's labels).\n"
                       "Exit status 0 whether or not the window is dominated; 1 on an unreadable input,\n"
                       "a label the task does not have, or a variant that cannot run; 2 on bad usage.\n"};
    int rc, i = sub_opts(argc, argv, &v, 1, 1 << 20, &rc);
    if (i < 0) return rc;
    if (argc - i == 1 && !results.n)
        return ck_usage_of("rtl", &v, "nothing to profile: give IMAGE operands or --results FILE"), 2;
    rtl_err err;
    rtl_catalog *cat = rtl_catalog_open(s, argv[i], &err);
    if (!cat) return fail(&err);
    if (!task) task = rtl_catalog_task_labels(cat, "identity", NULL) ? "identity" : catalog_info(cat).task_names[0];
    size_t nl = 0;
    const char *const *labels = task ? rtl_catalog_task_labels(cat, task, &nl) : NULL;
    struct ctx_run cr = {.labels = labels, .nlabels = nl, .task = task, .events = events};
    rtl_runner_options ro;
    rtl_runner *r = NULL;
    rc = 0;
    if (!labels) {
        rtl_errf_cli(&err, "catalog %s has no task %s", catalog_info(cat).id, task ? task : "(none)");
        rc = fail(&err);
    } else if (runner_options(&c, 1, threads, &ro, &err) != 0 || !(r = rtl_runner_new(s, cat, &ro, &err)) ||
               !(cr.prof = rtl_runner_profiler(r, task, &err))) {
        rc = fail(&err);
    }
    if (!rc && argc - i > 1) rc = ctx_images(&cr, cat, variant, (int)threads, argv + i + 1, argc - i - 1);
    for (int k = 0; !rc && k < results.n; k++)
        if (ctx_results(&cr, s, cat, results.v[k], &err) != 0) rc = fail(&err);
    rtl_context rep;
    if (!rc && rtl_profile_context(cr.prof, &rep, &err) != 0) rc = fail(&err);
    if (!rc && json) ctx_report_json(&cr, r, cat, &rep);
    else if (!rc) ctx_report_text(&cr, r, cat, &rep);
    rtl_runner_free(r);
    rtl_catalog_close(cat);
    return rc;
}
