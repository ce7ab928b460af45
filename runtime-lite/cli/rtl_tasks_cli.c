/* rtl_tasks_cli.c: `rtl run ID --task T... IMAGE...`: every asked task on
 * each image, each shared trunk run once (rtl_model_run_tasks), and
 * --repeat N: the time of all tasks against the first task alone. */
#include "rtl_cli.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TASKS 32

int run_wants_tasks(int argc, char **argv)
{
    for (int a = 1; a < argc; a++)
        if (!strncmp(argv[a], "--task", 6)) return 1;
    return 0;
}

static double top1_of(const rtl_variant *v, const char *task)
{
    double t1 = -1, t5;
    if (rtl_variant_accuracy(v, task, &t1, &t5) != 0) return -1;
    return t1;
}

/* The variant answering `task`: a head whose parent is one of chosen[]
 * (the most accurate such), else the most accurate loadable variant of the
 * task that is not a head, else the most accurate head. NULL when none. */
static const rtl_variant *pick(const rtl_catalog *cat, const char *task, const rtl_variant *const *chosen,
                               size_t nchosen, int heads_only_with_parent)
{
    const rtl_variant *best = NULL;
    double bt = -2;
    for (size_t i = 0; i < rtl_catalog_variant_count(cat); i++) {
        const rtl_variant *v = rtl_catalog_variant_at(cat, i);
        if (strcmp(rtl_variant_task(v), task) || rtl_variant_loadable(v, NULL) != 0) continue;
        int head = !strcmp(rtl_variant_technique(v), "head");
        if (heads_only_with_parent) {
            if (!head || !rtl_variant_parent(v)) continue;
            size_t k = 0;
            while (k < nchosen && strcmp(rtl_variant_id(chosen[k]), rtl_variant_parent(v))) k++;
            if (k == nchosen) continue;
        } else if (head) {
            continue;
        }
        double t = top1_of(v, task);
        if (t > bt) best = v, bt = t;
    }
    return best;
}

int cmd_run_tasks(rtl_store *s, int argc, char **argv)
{
    struct cmd_opts o = CMD_OPTS_DEFAULTS;
    ck_list tl = {.n = 0};
    long long repeat = 0;
    const ck_opt opts[] = {
        {"--task", "T[,T...]", CK_LIST, &tl, 0, 0, "a task to answer (repeatable; the catalog's task names)"},
        {"--top", "K", CK_INT, &o.top, 1, 100000, "classes per task and image (default 5, at most the task's)"},
        {"--json", NULL, CK_FLAG, &o.json, 0, 0,
         "one JSON object: {\"catalog\",\"version\",\"tasks\":[{\"task\",\"variant\"}],\n"
         "\"trunk_runs\",\"results\":[{\"image\",\"answers\":[{\"task\",\"variant\",\"top\":[...]}]}]}"},
        {"--repeat", "N", CK_INT, &repeat, 1, 1000000,
         "after the answers, time N runs of all tasks and N of the first task alone\n"
         "on the first image (interleaved, 3 untimed first) and print the medians and\n"
         "their ratio"},
        {"--threads", "N", CK_INT, &o.threads, 1, 1024, "compute threads (default: all cores)"},
        {0},
    };
    const ck_verb v = {"run", NULL, NULL, "ID --task T [--task T...] IMAGE... [--top K] [--json] [--repeat N]",
                       "Answers every task T on each image with the catalog's variants: for each task\n"
                       "the most accurate variant that is not a head, or a head (prune retarget)\n"
                       "whose parent answers another asked task. Heads share their parent's layers\n"
                       "below the cut: that trunk runs once per image and fans out to every head.\n"
                       "One line per task and image: IMAGE [TASK VARIANT]: P1 LABEL1, P2 LABEL2, ...\n",
                       opts, "Exit status 1 when a task has no variant, a variant cannot be loaded or an\n"
                             "image cannot be read.\n"};
    int rc, i = sub_opts(argc, argv, &v, 2, INT_MAX, &rc);
    if (i < 0) return rc;
    char *names[MAX_TASKS];
    size_t nt = 0;
    char *buf = NULL;
    size_t total = 1;
    for (int k = 0; k < tl.n; k++) total += strlen(tl.v[k]) + 1;
    if (!(buf = malloc(total))) {
        fprintf(stderr, "rtl: error: out of memory\n");
        return 1;
    }
    char *w = buf;
    for (int k = 0; k < tl.n; k++) {
        strcpy(w, tl.v[k]);
        for (char *t = strtok(w, ","); t; t = strtok(NULL, ",")) {
            if (nt == MAX_TASKS) {
                free(buf);
                return ck_usage("rtl", "run", "more than %d tasks", MAX_TASKS);
            }
            for (size_t q = 0; q < nt; q++)
                if (!strcmp(names[q], t)) {
                    int urc = ck_usage("rtl", "run", "task '%s' is asked twice", t); /* t is in buf */
                    free(buf);
                    return urc;
                }
            names[nt++] = t;
        }
        w += strlen(tl.v[k]) + 1;
    }
    if (!nt) {
        free(buf);
        return ck_usage("rtl", "run", "--task needs a task name");
    }
    rtl_err err;
    rtl_catalog *cat = rtl_catalog_open(s, argv[i], &err);
    if (!cat) {
        free(buf);
        return fail(&err);
    }
    const rtl_variant *var[MAX_TASKS] = {0}, *plain[MAX_TASKS];
    rtl_model *models[MAX_TASKS] = {0};
    rtl_class *top = NULL;
    float *x = NULL;
    double *ta = NULL;
    cJSON *doc = NULL, *results = NULL;
    int status = 1;
    size_t np = 0;
    for (size_t t = 0; t < nt; t++) {
        size_t nl;
        if (!rtl_catalog_task_labels(cat, names[t], &nl)) {
            fprintf(stderr, "rtl: error: catalog %s has no task '%s'; its tasks:", rtl_catalog_id(cat), names[t]);
            for (size_t q = 0; q < rtl_catalog_task_count(cat); q++)
                fprintf(stderr, " %s", rtl_catalog_task_name(cat, q));
            fputc('\n', stderr);
            goto out;
        }
        if ((var[t] = pick(cat, names[t], NULL, 0, 0))) plain[np++] = var[t];
    }
    for (size_t t = 0; t < nt; t++) {
        const rtl_variant *h = pick(cat, names[t], plain, np, 1);
        if (h) var[t] = h;
        if (!var[t]) {
            /* A head whose parent is not asked: the most accurate head. */
            double bt = -2;
            for (size_t q = 0; q < rtl_catalog_variant_count(cat); q++) {
                const rtl_variant *c = rtl_catalog_variant_at(cat, q);
                if (strcmp(rtl_variant_task(c), names[t]) || rtl_variant_loadable(c, NULL) != 0) continue;
                if (top1_of(c, names[t]) > bt) var[t] = c, bt = top1_of(c, names[t]);
            }
        }
        if (!var[t]) {
            fprintf(stderr, "rtl: error: catalog %s has no variant this runtime can load for task '%s'\n",
                    rtl_catalog_id(cat), names[t]);
            goto out;
        }
    }
    rtl_model_options mo = {.threads = (int)o.threads};
    size_t kmax = 1;
    for (size_t t = 0; t < nt; t++) {
        if (!(models[t] = rtl_model_open(cat, rtl_variant_id(var[t]), &mo, &err))) {
            fail(&err);
            goto out;
        }
        mo.threads = 0;
        if (rtl_model_classes(models[t]) > kmax) kmax = rtl_model_classes(models[t]);
    }
    top = calloc(kmax, sizeof *top);
    x = malloc(rtl_model_input_size(models[0]) * sizeof *x);
    if (!top || !x) {
        fprintf(stderr, "rtl: error: out of memory\n");
        goto out;
    }
    if (o.json) {
        doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "catalog", rtl_catalog_id(cat));
        cJSON_AddNumberToObject(doc, "version", (double)rtl_catalog_version(cat));
        cJSON *ts = cJSON_AddArrayToObject(doc, "tasks");
        for (size_t t = 0; t < nt; t++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "task", names[t]);
            cJSON_AddStringToObject(e, "variant", rtl_variant_id(var[t]));
            cJSON_AddItemToArray(ts, e);
        }
        results = cJSON_AddArrayToObject(doc, "results");
    }
    status = 0;
    size_t runs_done = 0;
    for (int a = i + 1; a < argc; a++) {
        size_t tr = 0;
        if (rtl_model_image_input(models[0], argv[a], x, &err) != 0 ||
            rtl_model_run_tasks(models, nt, x, &tr, &err) != 0) {
            status = fail(&err);
            image_error_json(results, argv[a], err.msg);
            continue;
        }
        runs_done = tr;
        cJSON *r = NULL, *ans = NULL;
        if (results) {
            r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "image", argv[a]);
            ans = cJSON_AddArrayToObject(r, "answers");
            cJSON_AddItemToArray(results, r);
        }
        for (size_t t = 0; t < nt; t++) {
            size_t k = (size_t)o.top < rtl_model_classes(models[t]) ? (size_t)o.top : rtl_model_classes(models[t]), n;
            if (rtl_model_top(models[t], k, top, &n, &err) != 0) {
                status = fail(&err);
                continue;
            }
            if (ans) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "task", names[t]);
                cJSON_AddStringToObject(e, "variant", rtl_variant_id(var[t]));
                cJSON_AddItemToObject(e, "top", top_json(top, n));
                cJSON_AddItemToArray(ans, e);
                continue;
            }
            printf("%s [%s %s]:", argv[a], names[t], rtl_variant_id(var[t]));
            for (size_t q = 0; q < n; q++) printf("%s %.6f %s", q ? "," : "", top[q].prob, top[q].label);
            putchar('\n');
        }
    }
    if (doc) cJSON_AddNumberToObject(doc, "trunk_runs", (double)runs_done);
    if (repeat > 0 && status == 0) {
        if (!(ta = malloc(2 * (size_t)repeat * sizeof *ta))) {
            fprintf(stderr, "rtl: error: out of memory\n");
            status = 1;
            goto print;
        }
        double *t1 = ta + repeat;
        if (rtl_model_image_input(models[0], argv[i + 1], x, &err) != 0) {
            status = fail(&err);
            goto print;
        }
        for (long long r = -3; r < repeat; r++) {
            double a0 = now_ms();
            if (rtl_model_run_tasks(models, nt, x, NULL, &err) != 0) {
                status = fail(&err);
                goto print;
            }
            double a1 = now_ms();
            if (rtl_model_run(models[0], x, &err) != 0) {
                status = fail(&err);
                goto print;
            }
            double a2 = now_ms();
            if (r >= 0) ta[r] = a1 - a0, t1[r] = a2 - a1;
        }
        double ma = median(ta, repeat), m1 = median(t1, repeat);
        if (doc) {
            cJSON *b = cJSON_AddObjectToObject(doc, "timing");
            cJSON_AddNumberToObject(b, "runs", (double)repeat);
            cJSON_AddNumberToObject(b, "all_tasks_ms", ma);
            cJSON_AddNumberToObject(b, "first_task_ms", m1);
            cJSON_AddNumberToObject(b, "ratio", m1 > 0 ? ma / m1 : 0);
        } else {
            printf("timing: %zu tasks %.3f ms, task %s alone (%s) %.3f ms, ratio %.3f (median of %lld runs)\n",
                   nt, ma, names[0], rtl_variant_id(var[0]), m1, m1 > 0 ? ma / m1 : 0, repeat);
        }
    }
print:
    if (doc) {
        char *text = cJSON_Print(doc);
        if (text) puts(text);
        else status = 1;
        free(text);
    }
out:
    cJSON_Delete(doc);
    free(ta);
    free(x);
    free(top);
    for (size_t t = 0; t < nt; t++) rtl_model_close(models[t]);
    rtl_catalog_close(cat);
    free(buf);
    return status;
}
