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

#define MAX_TASKS RTL_RUNNER_MAX_TASKS

int run_wants_tasks(int argc, char **argv)
{
    for (int a = 1; a < argc; a++)
        if (!strncmp(argv[a], "--task", 6)) return 1;
    return 0;
}

/* One rtl run --task: the tasks asked, their variants and models. */
struct tasks_run {
    char *names[MAX_TASKS];
    size_t nt;
    char *buf;                          /* names point into it */
    const rtl_variant *var[MAX_TASKS];
    rtl_model *models[MAX_TASKS];       /* the runner's */
    rtl_runner *r;
    rtl_class *top;
    float *x;
    cJSON *doc, *results;
};

/* The task names of --task T[,T...] (repeatable) into R; 0, or the usage
 * error's status. */
static int task_names(struct tasks_run *R, const ck_list *tl)
{
    size_t total = 1;
    for (int k = 0; k < tl->n; k++) total += strlen(tl->v[k]) + 1;
    if (!(R->buf = malloc(total))) return fprintf(stderr, "rtl: error: out of memory\n"), 1;
    char *w = R->buf;
    for (int k = 0; k < tl->n; k++) {
        strcpy(w, tl->v[k]);
        for (char *t = strtok(w, ","); t; t = strtok(NULL, ",")) {
            if (R->nt == MAX_TASKS) return ck_usage("rtl", "run", "more than %d tasks", MAX_TASKS);
            for (size_t q = 0; q < R->nt; q++)
                if (!strcmp(R->names[q], t)) return ck_usage("rtl", "run", "task '%s' is asked twice", t);
            R->names[R->nt++] = t;
        }
        w += strlen(tl->v[k]) + 1;
    }
    return R->nt ? 0 : ck_usage("rtl", "run", "--task needs a task name");
}

/* Each task's variant, opened by the runner (heads on one trunk), the
 * buffers and the JSON document; 0, or 1 after an error. */
static int task_models(struct tasks_run *R, rtl_store *s, rtl_catalog *cat, long long threads, int json)
{
    rtl_err err;
    rtl_runner_options ro = {.threads = (int)threads};
    if (!(R->r = rtl_runner_new(s, cat, &ro, &err)) ||
        rtl_runner_set_tasks(R->r, (const char *const *)R->names, R->nt, R->models, &err) != 0)
        return fail(&err);
    size_t kmax = 1;
    for (size_t t = 0; t < R->nt; t++) {
        rtl_model_info mi = model_info(R->models[t]);
        R->var[t] = mi.variant;
        if (mi.classes > kmax) kmax = mi.classes;
    }
    R->top = calloc(kmax, sizeof *R->top);
    R->x = malloc(model_info(R->models[0]).input_size * sizeof *R->x);
    if (!R->top || !R->x) return fprintf(stderr, "rtl: error: out of memory\n"), 1;
    if (!json) return 0;
    R->doc = cJSON_CreateObject();
    cJSON_AddStringToObject(R->doc, "catalog", catalog_info(cat).id);
    cJSON_AddNumberToObject(R->doc, "version", (double)catalog_info(cat).version);
    cJSON *ts = cJSON_AddArrayToObject(R->doc, "tasks");
    for (size_t t = 0; t < R->nt; t++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "task", R->names[t]);
        cJSON_AddStringToObject(e, "variant", variant_info(R->var[t]).id);
        cJSON_AddItemToArray(ts, e);
    }
    R->results = cJSON_AddArrayToObject(R->doc, "results");
    return 0;
}

/* Every task's answer on each image (one trunk run shared by its heads). */
static int task_answers(struct tasks_run *R, char **images, int n, long long topk)
{
    rtl_err err;
    int status = 0;
    size_t runs_done = 0;
    for (int a = 0; a < n; a++) {
        size_t tr = 0;
        if (rtl_runner_run_tasks(R->r, images[a], &tr, &err) != 0) {
            status = fail(&err);
            image_error_json(R->results, images[a], err.msg);
            continue;
        }
        runs_done = tr;
        cJSON *r = NULL, *ans = NULL;
        if (R->results) {
            r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "image", images[a]);
            ans = cJSON_AddArrayToObject(r, "answers");
            cJSON_AddItemToArray(R->results, r);
        }
        for (size_t t = 0; t < R->nt; t++) {
            size_t classes = model_info(R->models[t]).classes, nc;
            size_t k = (size_t)topk < classes ? (size_t)topk : classes;
            if (rtl_model_top(R->models[t], k, R->top, &nc, &err) != 0) {
                status = fail(&err);
                continue;
            }
            if (ans) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddStringToObject(e, "task", R->names[t]);
                cJSON_AddStringToObject(e, "variant", variant_info(R->var[t]).id);
                cJSON_AddItemToObject(e, "top", top_json(R->top, nc));
                cJSON_AddItemToArray(ans, e);
                continue;
            }
            printf("%s [%s %s]:", images[a], R->names[t], variant_info(R->var[t]).id);
            for (size_t q = 0; q < nc; q++) printf("%s %.6f %s", q ? "," : "", R->top[q].prob, R->top[q].label);
            putchar('\n');
        }
    }
    if (R->doc) cJSON_AddNumberToObject(R->doc, "trunk_runs", (double)runs_done);
    return status;
}

/* --repeat: all tasks against the first alone on image; 0, or 1. */
static int task_timing(struct tasks_run *R, const char *image, long long repeat)
{
    rtl_err err;
    double *ta = malloc(2 * (size_t)repeat * sizeof *ta);
    if (!ta) return fprintf(stderr, "rtl: error: out of memory\n"), 1;
    double *t1 = ta + repeat;
    int status = rtl_model_image_input(R->models[0], image, R->x, &err) != 0 ? fail(&err) : 0;
    for (long long r = -3; r < repeat && !status; r++) {
        double a0 = now_ms();
        if (rtl_model_run_tasks(R->models, R->nt, R->x, NULL, &err) != 0) status = fail(&err);
        double a1 = now_ms();
        if (!status && rtl_model_run(R->models[0], R->x, &err) != 0) status = fail(&err);
        double a2 = now_ms();
        if (r >= 0) ta[r] = a1 - a0, t1[r] = a2 - a1;
    }
    if (!status) {
        double ma = median(ta, repeat), m1 = median(t1, repeat);
        if (R->doc) {
            cJSON *b = cJSON_AddObjectToObject(R->doc, "timing");
            cJSON_AddNumberToObject(b, "runs", (double)repeat);
            cJSON_AddNumberToObject(b, "all_tasks_ms", ma);
            cJSON_AddNumberToObject(b, "first_task_ms", m1);
            cJSON_AddNumberToObject(b, "ratio", m1 > 0 ? ma / m1 : 0);
        } else {
            printf("timing: %zu tasks %.3f ms, task %s alone (%s) %.3f ms, ratio %.3f (median of %lld runs)\n",
                   R->nt, ma, R->names[0], variant_info(R->var[0]).id, m1, m1 > 0 ? ma / m1 : 0, repeat);
        }
    }
    free(ta);
    return status;
}

static void tasks_free(struct tasks_run *R)
{
    cJSON_Delete(R->doc);
    free(R->x);
    free(R->top);
    rtl_runner_free(R->r);
    free(R->buf);
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
    struct tasks_run R = {0};
    int status = task_names(&R, &tl);
    rtl_err err;
    rtl_catalog *cat = status ? NULL : rtl_catalog_open(s, argv[i], &err);
    if (!status && !cat) status = fail(&err);
    if (!status) status = task_models(&R, s, cat, o.threads, o.json);
    if (!status) status = task_answers(&R, argv + i + 1, argc - i - 1, o.top);
    if (!status && repeat > 0) status = task_timing(&R, argv[i + 1], repeat);
    if (R.doc) { /* made once the models are open: what ran, also after an image failed */
        char *text = cJSON_Print(R.doc);
        if (text) puts(text);
        else status = 1;
        free(text);
    }
    tasks_free(&R);
    rtl_catalog_close(cat);
    return status;
}
