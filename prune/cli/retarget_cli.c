/*
 * retarget_cli.c: `prune retarget`: one head per attribute task on a
 * frozen shared trunk (MCDNN section 4.1.3). The tasks file lists "task
 * data-file" lines (paths relative to the tasks file), the base's own task
 * first, or the trunk's own task named by --trunk-task (a trunk trained for
 * another task of the file, e.g. a curriculum); every task's .data must list
 * the same images in the same order
 * (the default data set's tasks share their list files), so the trunk runs
 * once per image and every head trains on the same cached outputs: one
 * clean pass over the training split plus `aug_passes` passes with the
 * base cfg's [net] augmentation, and one clean pass over the test split
 * (the valid split when there is no test split) for the accuracies.
 *
 * Writes DIR/<task>/{variant.cfg, init.weights, meta.json} for every task
 * but the trunk's (the whole network of the task: trunk + head, runnable by
 * any Darknet reader) and DIR/retarget.json (the table), all after every
 * head has trained; nothing when anything fails.
 */
#include "prune_cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TASKS 16

typedef struct task {
    char name[64];
    char path[4096];
    char file[2048]; /* its name in the variant's fields (trn_data_name) */
    trn_dataset *ds;
    int *train, *test, *valid; /* labels per cached vector (valid: a sweep only) */
} task;

typedef struct feed {
    trn_loader *l;
    float *y;
} feed;

static int next_images(void *ctx, uint64_t step, float *x, trn_err *err)
{
    feed *f = ctx;
    return trn_loader_get(f->l, step, x, f->y, err);
}

/* Reads the tasks file (trn_tasks_read: "task data-file" lines). */
static int read_tasks(const char *path, task *t, int *n, trn_err *err)
{
    trn_task_line lines[MAX_TASKS];
    _Static_assert(sizeof t->name >= sizeof lines[0].name && sizeof t->path >= sizeof lines[0].path &&
                       sizeof t->file >= sizeof lines[0].file,
                   "task holds a task line");
    if (trn_tasks_read(path, lines, MAX_TASKS, n, err) != 0) return -1;
    for (int k = 0; k < *n; k++) {
        memcpy(t[k].name, lines[k].name, sizeof lines[k].name);
        memcpy(t[k].path, lines[k].path, sizeof lines[k].path);
        memcpy(t[k].file, lines[k].file, sizeof lines[k].file);
    }
    if (*n < 2)
        return trn_errf(err, "%s: needs the base's task and at least one more task (\"task "
                        "data-file\" lines)", path);
    return 0;
}

/* The index of the trunk's own task: --trunk-task's in t (NULL: the
 * first task); -1 with err naming the tasks of the file when absent. */
static int trunk_task_of(const char *name, const char *path, const task *t, int n, trn_err *err)
{
    if (!name) return 0;
    for (int k = 0; k < n; k++)
        if (!strcmp(t[k].name, name)) return k;
    char list[MAX_TASKS * 66] = "";
    for (int k = 0; k < n; k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%.63s", k ? ", " : "", t[k].name);
    }
    trn_errf(err, "--trunk-task '%.64s': %s has no such task; its tasks: %s (name the task the trunk's own "
             "classifier answers)", name, path, list);
    return -1;
}

/* Opens split s of ds with the caller's options. */
static trn_loader *open_split(const trn_dataset *ds, trn_split s, const trn_loader_opts *lo,
                              int augment, trn_err *err)
{
    trn_loader_opts o = *lo;
    o.augment = augment;
    o.shuffle = 0;
    return trn_loader_open(ds, s, &o, err);
}

#define MAX_POINTS 16

/* One point of the sweep: a trunk cut and the head trained on it. */
typedef struct point {
    char sel[64];
    const char *head; /* hidden sections (NULL: none) */
    int cut;
} point;

/* Splits --cuts ("SEL" or "SEL:TEXT" words separated by spaces) into pts;
 * buf holds the words. */
static int parse_cuts(const char *cuts, const char *dflt, char *buf, size_t bsize, point *pts, int *np,
                      trn_err *err)
{
    if (strlen(cuts) >= bsize) return trn_errf(err, "--cuts: longer than %zu characters", bsize - 1);
    memcpy(buf, cuts, strlen(cuts) + 1);
    *np = 0;
    for (char *w = strtok(buf, " \t\n"); w; w = strtok(NULL, " \t\n")) {
        if (*np == MAX_POINTS) return trn_errf(err, "--cuts: more than %d cuts", MAX_POINTS);
        char *colon = strchr(w, ':');
        if (colon) *colon = 0;
        if (!*w || strlen(w) >= sizeof pts->sel)
            return trn_errf(err, "--cuts: '%s' is not a layer selector (write SEL or SEL:HEAD, e.g. "
                            "'L1:avgpool conv@4')", w);
        snprintf(pts[*np].sel, sizeof pts[*np].sel, "%s", w);
        pts[*np].head = colon ? (colon[1] ? colon + 1 : NULL) : dflt;
        (*np)++;
    }
    if (*np == 0) return trn_errf(err, "--cuts: no cut given (write SEL or SEL:HEAD words, e.g. 'L1 conv@4')");
    return 0;
}

static uint64_t count_correct(const int *pred, const int *want, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) c += pred[i] == want[i];
    return c;
}

/* {"images", "correct", "top1", "top1_lo", "top1_hi"} added to obj. */
static void add_acc(cJSON *obj, const char *prefix, uint64_t correct, size_t n)
{
    double lo, hi, top1 = n ? (double)correct / (double)n : 0;
    trn_wilson(correct, n, &lo, &hi);
    char k[64];
    snprintf(k, sizeof k, "%simages", prefix);
    cJSON_AddNumberToObject(obj, k, (double)n);
    snprintf(k, sizeof k, "%scorrect", prefix);
    cJSON_AddNumberToObject(obj, k, (double)correct);
    snprintf(k, sizeof k, "%stop1", prefix);
    cJSON_AddNumberToObject(obj, k, top1);
    snprintf(k, sizeof k, "%stop1_lo", prefix);
    cJSON_AddNumberToObject(obj, k, lo);
    snprintf(k, sizeof k, "%stop1_hi", prefix);
    cJSON_AddNumberToObject(obj, k, hi);
}

int prn_cli_retarget(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "tasks", "cut", "cuts", "head", "set",
                                        "seed", "out", "threads", "parent", "trunk-task", NULL};
    static const char *const need[] = {"cfg", "weights", "tasks", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "retarget",
                      "--cfg C --weights W --tasks X.tasks (--cut SEL | --cuts LIST) [--head TEXT]\n"
                      "                   [--set key=value ...] [--parent ID] [--trunk-task T] --seed N --out DIR\n"
                      "                   [--threads T]",
                      "Shares layers 0..SEL of the trained base (the trunk, frozen) between every\n"
                      "task of X.tasks (\"task data-file\" lines, the base's task first) and trains\n"
                      "one head per other task on the trunk's outputs, computed once and cached.\n"
                      "The trunk's own task, which its classifier answers and which gets no head,\n"
                      "is the file's first; --trunk-task T names another (a trunk trained for T,\n"
                      "e.g. a curriculum): then the first task gets a head too.\n"
                      "A head is the sections of TEXT (mimic's --with syntax, e.g.\n"
                      "  --head 'avgpool' or --head 'connected,output=16,activation=relu')\n"
                      "then a connected classifier and softmax. --cuts sweeps several cuts, each\n"
                      "with its own head ('L1:maxpool,size=2,stride=2 conv@4'): every task gets a\n"
                      "head at every cut, and keeps the one most accurate on the valid split among\n"
                      "those costing at most `budget` of the base's MACs and of its parameters\n"
                      "(all of them when none does); the test split scores every one.\n"
                      "--set keys: batch (64), batches (1500), learning_rate (0.05), momentum\n"
                      "(0.9), decay (0.0005), aug_passes (2: augmented passes over the training\n"
                      "images), budget (0.01, --cuts only).\n"
                      "Writes DIR/<task>/{variant.cfg,init.weights,meta.json} (trunk + head, a\n"
                      "whole Darknet network) for every task but the trunk's, and DIR/retarget.json\n"
                      "(costs and top-1, the sweep; trunk_task: the task without a head).\n"
                      "Each head names --parent (the trunk's variant id, default base) as its\n"
                      "parent and trunk.\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "retarget", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    if (!o.cut == !o.cuts) return trn_errf(err, "give --cut SEL or --cuts LIST (one of them)"), -2;
    const char *trunk_id;
    if (prn_cli_parent(&o, &trunk_id, err)) return -2;
    /* budget=F (0 < F <= 1): the sweep's cost bound; the other keys are the head's. */
    double budget = 0.01;
    prn_cli_opts ko = o;
    ko.nset = 0;
    for (int i = 0; i < o.nset; i++) {
        if (strncmp(o.set[i], "budget=", 7) != 0) {
            ko.set[ko.nset++] = o.set[i];
            continue;
        }
        char *end;
        budget = strtod(o.set[i] + 7, &end);
        if (*end || end == o.set[i] + 7 || !(budget > 0 && budget <= 1))
            return trn_errf(err, "--set %s: the budget is a fraction of the base in (0, 1]", o.set[i]), -2;
    }
    prn_head_opts ho;
    if (prn_cli_head_opts(&ko, &ho, err)) return -2; /* a bad --set: a usage error */
    if (prn_cli_compute(o.threads, err)) return -1;
    char cutsbuf[4096];
    point pts[MAX_POINTS];
    int np = 1;
    if (o.cuts) {
        if (parse_cuts(o.cuts, o.head, cutsbuf, sizeof cutsbuf, pts, &np, err)) return -2;
    } else {
        snprintf(pts[0].sel, sizeof pts[0].sel, "%s", o.cut);
        pts[0].head = o.head;
        if (strlen(o.cut) >= sizeof pts[0].sel) return trn_errf(err, "--cut %.100s: too long", o.cut), -2;
    }
    const int sweep = o.cuts != NULL;
    const char *cutopt = sweep ? "--cuts" : "--cut";
    task t[MAX_TASKS];
    memset(t, 0, sizeof t);
    int nt = 0, rc = -1;
    trn_cfg *cfg = NULL;
    trn_net *base = NULL;
    prn_plan *plan = NULL;
    prn_features ftr = {0}, fte = {0}, fva = {0};
    feed fd = {0};
    prn_variant v[MAX_TASKS];
    int best[MAX_TASKS];       /* the point each task keeps (-1: none yet) */
    int best_within[MAX_TASKS]; /* whether it is within the budget */
    double bestv[MAX_TASKS];   /* its valid top-1 */
    int *pred = NULL;
    cJSON *table = NULL;
    memset(v, 0, sizeof v);
    if (read_tasks(o.tasks, t, &nt, err) != 0) goto out;
    /* tt: the trunk's own task (no head); every other task gets one. The
     * images (the same for every task) are read through the first task. */
    const int tt = trunk_task_of(o.trunk_task, o.tasks, t, nt, err);
    if (tt < 0) goto out;
    if (!(cfg = trn_cfg_read(o.cfg, err))) goto out;
    if (!(plan = prn_plan_create(cfg, err))) goto out;
    int nl = prn_plan_layers(plan);
    for (int q = 0; q < np; q++) {
        pts[q].cut = prn_select(plan, pts[q].sel, err);
        if (pts[q].cut < 0) {
            trn_err_prefix(err, "%s", cutopt);
            goto out;
        }
        if (pts[q].cut >= nl - 1) {
            trn_errf(err, "%s %s is L%d, the last layer: a head needs the trunk to end below the "
                     "output (run `prune plan --cfg %s`)", cutopt, pts[q].sel, pts[q].cut, o.cfg);
            goto out;
        }
    }
    if (!(base = prn_cli_load_base(cfg, o.weights, 64, err))) goto out;
    for (int q = 0; q < np; q++)
        for (int i = pts[q].cut + 1; i < nl; i++) {
            trn_layer_info li;
            trn_net_layer_info(base, i, &li);
            for (int k = 0; k < li.n_from; k++)
                if (li.from[k] < pts[q].cut) {
                    trn_errf(err, "%s %s: L%d above the cut reads L%d below it; cut after L%d", cutopt,
                             pts[q].sel, i, li.from[k], i);
                    goto out;
                }
        }
    for (int k = 0; k < nt; k++) {
        if (!(t[k].ds = trn_dataset_open(t[k].path, err))) {
            trn_err_prefix(err, "%s: task '%s'", o.tasks, t[k].name);
            goto out;
        }
    }
    trn_split held = trn_dataset_has(t[0].ds, TRN_SPLIT_TEST) ? TRN_SPLIT_TEST : TRN_SPLIT_VALID;
    if (sweep && (held != TRN_SPLIT_TEST || !trn_dataset_has(t[0].ds, TRN_SPLIT_VALID) ||
                  trn_dataset_count(t[0].ds, TRN_SPLIT_VALID) < 1)) {
        trn_errf(err, "%s: --cuts chooses each task's cut on the valid split and scores it on the test "
                 "split: the set needs both (or give one --cut)", t[0].path);
        goto out;
    }
    for (int k = 1; k < nt; k++) {
        trn_split sp[3] = {TRN_SPLIT_TRAIN, held, TRN_SPLIT_VALID};
        for (int q = 0; q < 2 + sweep; q++) {
            size_t n = trn_dataset_count(t[0].ds, sp[q]);
            if (trn_dataset_count(t[k].ds, sp[q]) != n) {
                trn_errf(err, "%s: task '%s' lists %zu %s images, task '%s' %zu: every task must "
                         "list the same images", o.tasks, t[k].name,
                         trn_dataset_count(t[k].ds, sp[q]), trn_split_name(sp[q]), t[0].name, n);
                goto out;
            }
            for (size_t i = 0; i < n; i++)
                if (strcmp(trn_dataset_path(t[k].ds, sp[q], i), trn_dataset_path(t[0].ds, sp[q], i))) {
                    trn_errf(err, "%s: %s image %zu of task '%s' is %s, of task '%s' %s: every task "
                             "must list the same images in the same order", o.tasks,
                             trn_split_name(sp[q]), i + 1, t[k].name,
                             trn_dataset_path(t[k].ds, sp[q], i), t[0].name,
                             trn_dataset_path(t[0].ds, sp[q], i));
                    goto out;
                }
        }
    }
    size_t n_tr = trn_dataset_count(t[0].ds, TRN_SPLIT_TRAIN), n_te = trn_dataset_count(t[0].ds, held);
    size_t n_va = sweep ? trn_dataset_count(t[0].ds, TRN_SPLIT_VALID) : 0;
    if (n_tr < 1 || n_te < 1) {
        trn_errf(err, "%s: needs training and %s images", t[0].path, trn_split_name(held));
        goto out;
    }
    trn_loader_opts lo;
    if (prn_cli_loader_opts(base, o.cfg, 64, o.seed, o.threads, 0, &lo, err)) goto out;
    size_t n_cached = n_tr * (size_t)(1 + ho.aug_passes);
    if (!(fd.y = malloc((size_t)64 * (size_t)trn_dataset_classes(t[0].ds) * sizeof *fd.y)) ||
        !(pred = malloc((n_te > n_va ? n_te : n_va) * sizeof *pred)) ||
        !(table = cJSON_CreateObject())) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (int k = 0; k < nt; k++) {
        if (k == tt) continue;
        if (!(t[k].train = malloc(n_cached * sizeof(int))) || !(t[k].test = malloc(n_te * sizeof(int)))) {
            trn_errf(err, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < n_cached; i++) t[k].train[i] = trn_dataset_class(t[k].ds, TRN_SPLIT_TRAIN, i % n_tr);
        for (size_t i = 0; i < n_te; i++) t[k].test[i] = trn_dataset_class(t[k].ds, held, i);
        if (n_va) {
            if (!(t[k].valid = malloc(n_va * sizeof(int)))) {
                trn_errf(err, "out of memory");
                goto out;
            }
            for (size_t i = 0; i < n_va; i++) t[k].valid[i] = trn_dataset_class(t[k].ds, TRN_SPLIT_VALID, i);
        }
        best[k] = -1;
        best_within[k] = 0;
        bestv[k] = 0;
    }
    /* The trunk is the parent's layers 0..cut: the catalog names the
     * parent variant (--parent, default "base") as the trunk and lists it
     * in depends_on. */
    cJSON_AddStringToObject(table, "cut", pts[0].sel);
    cJSON_AddNumberToObject(table, "cut_layer", pts[0].cut);
    cJSON_AddStringToObject(table, "trunk", trunk_id);
    cJSON_AddStringToObject(table, "trunk_task", t[tt].name);
    cJSON_AddStringToObject(table, "head", pts[0].head ? pts[0].head : "");
    cJSON_AddNumberToObject(table, "train_vectors", (double)n_cached);
    cJSON_AddStringToObject(table, "split", trn_split_name(held));
    cJSON *rows = cJSON_AddArrayToObject(table, "tasks");
    cJSON *srows = NULL;
    if (sweep) {
        cJSON_AddNumberToObject(table, "budget", budget);
        cJSON_AddStringToObject(table, "chosen_on", trn_split_name(TRN_SPLIT_VALID));
        srows = cJSON_AddArrayToObject(table, "sweep");
    }
    printf("%-10s %-8s %7s %10s %7s %8s %7s %8s %18s%s\n", "task", "cut", "classes", "head MACs", "% base",
           "params", "% base", "top-1", "95% interval", sweep ? "   valid" : "");
    for (int q = 0; q < np; q++) {
        const int cut = pts[q].cut;
        /* The cached trunk outputs at this cut (shared with the previous
         * point at the same cut): clean training pass, augmented passes,
         * clean held-out pass, clean valid pass for a sweep. */
        if (q == 0 || pts[q - 1].cut != cut) {
            prn_features_free(&ftr);
            prn_features_free(&fte);
            prn_features_free(&fva);
            for (int pass = 0; pass < 1 + (ho.aug_passes > 0); pass++) {
                if (!(fd.l = open_split(t[0].ds, TRN_SPLIT_TRAIN, &lo, pass > 0, err))) goto out;
                size_t n = pass ? n_tr * (size_t)ho.aug_passes : n_tr;
                if (prn_features_add(base, cut, next_images, &fd, 0, n, &ftr, err) != 0) goto out;
                trn_loader_close(fd.l);
                fd.l = NULL;
            }
            if (!(fd.l = open_split(t[0].ds, held, &lo, 0, err))) goto out;
            if (prn_features_add(base, cut, next_images, &fd, 0, n_te, &fte, err) != 0) goto out;
            trn_loader_close(fd.l);
            fd.l = NULL;
            if (sweep) {
                if (!(fd.l = open_split(t[0].ds, TRN_SPLIT_VALID, &lo, 0, err))) goto out;
                if (prn_features_add(base, cut, next_images, &fd, 0, n_va, &fva, err) != 0) goto out;
                trn_loader_close(fd.l);
                fd.l = NULL;
            }
        }
        prn_head_opts hq = ho;
        hq.with = pts[q].head;
        for (int k = 0; k < nt; k++) {
            if (k == tt) continue;
            int classes = trn_dataset_classes(t[k].ds);
            float l0 = 0, l1 = 0;
            trn_cfg *hc = NULL;
            trn_net *hn = NULL;
            prn_variant pv;
            memset(&pv, 0, sizeof pv);
            uint64_t correct = 0, vcorrect = 0;
            if (prn_head_train(&ftr, t[k].train, classes, &hq, &hc, &hn, &l0, &l1, err) != 0 ||
                prn_head_predict(hn, &fte, pred, NULL, err) != 0) {
                trn_err_prefix(err, "task '%s' at %s", t[k].name, pts[q].sel);
                trn_cfg_free(hc);
                trn_net_free(hn);
                goto out;
            }
            correct = count_correct(pred, t[k].test, n_te);
            if (sweep) {
                if (prn_head_predict(hn, &fva, pred, NULL, err) != 0) {
                    trn_cfg_free(hc);
                    trn_net_free(hn);
                    goto out;
                }
                vcorrect = count_correct(pred, t[k].valid, n_va);
            }
            int vr = prn_retarget_variant(cfg, base, cut, hc, hn, trunk_id, &pv, err);
            pv.parent = trunk_id;
            trn_cfg_free(hc);
            trn_net_free(hn);
            if (vr != 0) {
                trn_err_prefix(err, "task '%s' at %s", t[k].name, pts[q].sel);
                goto out;
            }
            double lo95, hi95, top1 = (double)correct / (double)n_te;
            trn_wilson(correct, n_te, &lo95, &hi95);
            cJSON *f = pv.fields, *h = cJSON_GetObjectItem(f, "head");
            double hm = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "macs"));
            double hp = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "params"));
            double fm = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "macs_fraction"));
            double fp = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "params_fraction"));
            cJSON_AddStringToObject(f, "task", t[k].name);
            cJSON_AddStringToObject(f, "data", t[k].file);
            cJSON_AddNumberToObject(f, "classes", classes);
            cJSON_AddStringToObject(f, "cut", pts[q].sel);
            cJSON_AddStringToObject(f, "head_with", pts[q].head ? pts[q].head : "");
            cJSON_AddNumberToObject(f, "batches", ho.batches);
            cJSON_AddNumberToObject(f, "batch", ho.batch);
            cJSON_AddNumberToObject(f, "aug_passes", ho.aug_passes);
            cJSON_AddNumberToObject(f, "seed", (double)o.seed);
            cJSON_AddNumberToObject(f, "loss_first", l0);
            cJSON_AddNumberToObject(f, "loss_last", l1);
            cJSON *a = cJSON_AddObjectToObject(f, "heldout");
            cJSON_AddStringToObject(a, "split", trn_split_name(held));
            add_acc(a, "", correct, n_te);
            if (sweep) {
                cJSON *sv = cJSON_AddObjectToObject(f, "chosen_on");
                cJSON_AddStringToObject(sv, "split", trn_split_name(TRN_SPLIT_VALID));
                add_acc(sv, "", vcorrect, n_va);
                cJSON_AddNumberToObject(f, "budget", budget);
            }
            cJSON *r = cJSON_CreateObject();
            cJSON_AddStringToObject(r, "task", t[k].name);
            cJSON_AddStringToObject(r, "cut", pts[q].sel);
            cJSON_AddNumberToObject(r, "cut_layer", cut);
            cJSON_AddStringToObject(r, "head", pts[q].head ? pts[q].head : "");
            cJSON_AddNumberToObject(r, "classes", classes);
            cJSON_AddNumberToObject(r, "head_macs", hm);
            cJSON_AddNumberToObject(r, "head_params", hp);
            cJSON_AddNumberToObject(r, "macs_fraction", fm);
            cJSON_AddNumberToObject(r, "params_fraction", fp);
            add_acc(r, "", correct, n_te);
            double vtop1 = sweep ? (double)vcorrect / (double)n_va : 0;
            int within = fm <= budget + 1e-12 && fp <= budget + 1e-12;
            if (sweep) {
                add_acc(r, "valid_", vcorrect, n_va);
                cJSON_AddBoolToObject(r, "within_budget", within);
            }
            printf("%-10s %-8s %7d %10.0f %6.2f%% %8.0f %6.2f%% %7.2f%% %8.2f%%..%.2f%%", t[k].name, pts[q].sel,
                   classes, hm, 100 * fm, hp, 100 * fp, 100 * top1, 100 * lo95, 100 * hi95);
            if (sweep) printf(" %7.2f%%%s", 100 * vtop1, within ? "" : " (over budget)");
            printf("\n");
            /* Keep the most accurate on valid within the budget (over
             * budget only while none within it was seen); ties: the
             * earlier point. */
            if (best[k] < 0 || within > best_within[k] || (within == best_within[k] && vtop1 > bestv[k])) {
                prn_variant_free(&v[k]);
                v[k] = pv;
                best[k] = q;
                best_within[k] = within;
                bestv[k] = vtop1;
            } else
                prn_variant_free(&pv);
            if (srows) {
                cJSON_AddNumberToObject(r, "point", q);
                cJSON_AddItemToArray(srows, r);
            } else
                cJSON_Delete(r);
        }
    }
    /* The sweep's rows say which head each task keeps. */
    if (srows) {
        cJSON *r;
        cJSON_ArrayForEach(r, srows) {
            int q = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "point")), kept = 0;
            const char *tn = cJSON_GetStringValue(cJSON_GetObjectItem(r, "task"));
            for (int k = 0; k < nt; k++) kept |= k != tt && tn && !strcmp(tn, t[k].name) && best[k] == q;
            cJSON_AddBoolToObject(r, "kept", kept);
        }
    }
    /* The kept head of every task: the "tasks" rows (one per task). */
    for (int k = 0; k < nt; k++) {
        if (k == tt) continue;
        cJSON *f = v[k].fields, *h = cJSON_GetObjectItem(f, "head"), *a = cJSON_GetObjectItem(f, "heldout");
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToArray(rows, r);
        cJSON_AddStringToObject(r, "task", t[k].name);
        cJSON_AddStringToObject(r, "cut", pts[best[k]].sel);
        cJSON_AddNumberToObject(r, "cut_layer", pts[best[k]].cut);
        cJSON_AddNumberToObject(r, "classes", trn_dataset_classes(t[k].ds));
        cJSON_AddNumberToObject(r, "head_macs", cJSON_GetNumberValue(cJSON_GetObjectItem(h, "macs")));
        cJSON_AddNumberToObject(r, "head_params", cJSON_GetNumberValue(cJSON_GetObjectItem(h, "params")));
        cJSON_AddNumberToObject(r, "macs_fraction", cJSON_GetNumberValue(cJSON_GetObjectItem(h, "macs_fraction")));
        cJSON_AddNumberToObject(r, "params_fraction", cJSON_GetNumberValue(cJSON_GetObjectItem(h, "params_fraction")));
        add_acc(r, "", (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "correct")), n_te);
        if (sweep)
            printf("%s: keeps %s (valid top-1 %.2f%%%s)\n", t[k].name, pts[best[k]].sel,
                   100 * bestv[k], best_within[k] ? "" : ", over budget");
    }
    /* Everything trained: write the variant folders, then the table. */
    for (int k = 0; k < nt; k++) {
        if (k == tt) continue;
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%.63s", o.out, t[k].name); /* a name is < 64 */
        if (prn_variant_write(&v[k], dir, err) != 0) goto out;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/retarget.json", o.out);
    if (prn_cli_write_json(path, table, err) != 0) goto out;
    if (sweep)
        printf("%s: %d heads, each at its best of %d cuts, %zu cached training vectors a cut\n", o.out, nt - 1,
               np, ftr.n);
    else
        printf("%s: %d heads on trunk L0..L%d (%s), %zu cached training vectors\n", o.out, nt - 1, pts[0].cut,
               pts[0].sel, ftr.n);
    rc = 0;
out:
    for (int k = 0; k < nt; k++) {
        trn_dataset_close(t[k].ds);
        free(t[k].train);
        free(t[k].test);
        free(t[k].valid);
        prn_variant_free(&v[k]);
    }
    trn_loader_close(fd.l);
    free(fd.y);
    free(pred);
    cJSON_Delete(table);
    prn_features_free(&ftr);
    prn_features_free(&fte);
    prn_features_free(&fva);
    prn_plan_free(plan);
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}
