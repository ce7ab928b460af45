/*
 * retarget_cli.c: `prune retarget`: one head per attribute task on a
 * frozen shared trunk (MCDNN section 4.1.3). The tasks file lists "task
 * data-file" lines (paths relative to the tasks file), the base's own task
 * first; every task's .data must list the same images in the same order
 * (the default data set's tasks share their list files), so the trunk runs
 * once per image and every head trains on the same cached outputs: one
 * clean pass over the training split plus `aug_passes` passes with the
 * base cfg's [net] augmentation, and one clean pass over the test split
 * (the valid split when there is no test split) for the accuracies.
 *
 * Writes DIR/<task>/{variant.cfg, init.weights, meta.json} for every task
 * but the first (the whole network of the task: trunk + head, runnable by
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
    trn_dataset *ds;
    int *train, *test; /* labels per cached vector */
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

/* Reads the tasks file: "task data-file" per line, '#' comments. */
static int read_tasks(const char *path, task *t, int *n, trn_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    if (trn_read_file(path, (size_t)1 << 20, &buf, &len, err) != 0) return -1;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 0;
    *n = 0;
    int line = 0, rc = 0;
    for (char *p = buf, *e; p && *p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        if (e) *e = 0;
        line++;
        char name[64], file[2048];
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        if (sscanf(p, "%63s %2047s", name, file) != 2) {
            rc = trn_errf(err, "%s:%d: expected \"task data-file\"", path, line);
            break;
        }
        if (*n == MAX_TASKS) {
            rc = trn_errf(err, "%s:%d: more than %d tasks", path, line, MAX_TASKS);
            break;
        }
        snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
        if (file[0] == '/' || !slash)
            snprintf(t[*n].path, sizeof t[*n].path, "%s", file);
        else
            snprintf(t[*n].path, sizeof t[*n].path, "%.*s/%s", dirlen, path, file);
        for (int k = 0; k < *n; k++)
            if (!strcmp(t[k].name, name)) {
                rc = trn_errf(err, "%s:%d: task '%s' is listed twice", path, line, name);
                break;
            }
        if (rc) break;
        (*n)++;
    }
    free(buf);
    if (!rc && *n < 2)
        rc = trn_errf(err, "%s: needs the base's task and at least one more task (\"task "
                      "data-file\" lines)", path);
    return rc;
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

int prn_cli_retarget(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "tasks", "cut", "head", "set",
                                        "seed", "out", "threads", NULL};
    static const char *const need[] = {"cfg", "weights", "tasks", "cut", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "retarget",
                      "--cfg C --weights W --tasks X.tasks --cut SEL [--head TEXT]\n"
                      "                   [--set key=value ...] --seed N --out DIR [--threads T]",
                      "Shares layers 0..SEL of the trained base (the trunk, frozen) between every\n"
                      "task of X.tasks (\"task data-file\" lines, the base's task first) and trains\n"
                      "one head per other task on the trunk's outputs, computed once and cached.\n"
                      "A head is the sections of TEXT (mimic's --with syntax, e.g.\n"
                      "  --head 'avgpool' or --head 'connected,output=16,activation=relu')\n"
                      "then a connected classifier and softmax. --set keys: batch (64),\n"
                      "batches (1500), learning_rate (0.05), momentum (0.9), decay (0.0005),\n"
                      "aug_passes (2: augmented passes over the training images).\n"
                      "Writes DIR/<task>/{variant.cfg,init.weights,meta.json} (trunk + head, a\n"
                      "whole Darknet network) and DIR/retarget.json (costs and test top-1).\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "retarget", need, err)) return -2;
    prn_head_opts ho;
    if (prn_cli_head_opts(&o, &ho, err)) return -1;
    if (prn_cli_compute(o.threads, err)) return -1;
    task t[MAX_TASKS];
    memset(t, 0, sizeof t);
    int nt = 0, rc = -1;
    trn_cfg *cfg = NULL;
    trn_net *base = NULL;
    prn_plan *plan = NULL;
    prn_features ftr = {0}, fte = {0};
    feed fd = {0};
    prn_variant v[MAX_TASKS];
    trn_cfg *hc[MAX_TASKS] = {0};
    trn_net *hn[MAX_TASKS] = {0};
    int *pred = NULL;
    cJSON *table = NULL;
    memset(v, 0, sizeof v);
    if (read_tasks(o.tasks, t, &nt, err) != 0) goto out;
    if (!(cfg = trn_cfg_read(o.cfg, err))) goto out;
    if (!(plan = prn_plan_create(cfg, err))) goto out;
    int cut = prn_select(plan, o.cut, err);
    if (cut < 0) {
        trn_err_prefix(err, "--cut");
        goto out;
    }
    int nl = prn_plan_layers(plan);
    if (cut >= nl - 1) {
        trn_errf(err, "--cut %s is L%d, the last layer: a head needs the trunk to end below the "
                 "output (run `prune plan --cfg %s`)", o.cut, cut, o.cfg);
        goto out;
    }
    if (!(base = prn_cli_load_base(cfg, o.weights, 64, err))) goto out;
    for (int i = cut + 1; i < nl; i++) {
        trn_layer_info li;
        trn_net_layer_info(base, i, &li);
        for (int k = 0; k < li.n_from; k++)
            if (li.from[k] < cut) {
                trn_errf(err, "--cut %s: L%d above the cut reads L%d below it; cut after L%d",
                         o.cut, i, li.from[k], i);
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
    for (int k = 1; k < nt; k++) {
        trn_split sp[2] = {TRN_SPLIT_TRAIN, held};
        for (int q = 0; q < 2; q++) {
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
    if (n_tr < 1 || n_te < 1) {
        trn_errf(err, "%s: needs training and %s images", t[0].path, trn_split_name(held));
        goto out;
    }
    /* The cached trunk outputs: clean training pass, augmented passes,
     * clean held-out pass. */
    trn_loader_opts lo;
    if (prn_cli_loader_opts(base, o.cfg, 64, o.seed, o.threads, 0, &lo, err)) goto out;
    if (!(fd.y = malloc((size_t)64 * (size_t)trn_dataset_classes(t[0].ds) * sizeof *fd.y))) {
        trn_errf(err, "out of memory");
        goto out;
    }
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
    if (!(pred = malloc(n_te * sizeof *pred)) || !(table = cJSON_CreateObject())) {
        trn_errf(err, "out of memory");
        goto out;
    }
    /* The trunk is the parent's layers 0..cut: the catalog names the
     * parent variant ("base") as the trunk and lists it in depends_on. */
    const char *trunk_id = "base";
    cJSON_AddStringToObject(table, "cut", o.cut);
    cJSON_AddNumberToObject(table, "cut_layer", cut);
    cJSON_AddStringToObject(table, "trunk", trunk_id);
    cJSON_AddStringToObject(table, "head", o.head ? o.head : "");
    cJSON_AddNumberToObject(table, "train_vectors", (double)ftr.n);
    cJSON_AddStringToObject(table, "split", trn_split_name(held));
    cJSON *rows = cJSON_AddArrayToObject(table, "tasks");
    printf("%-10s %7s %10s %7s %8s %7s %8s %18s\n", "task", "classes", "head MACs", "% base",
           "params", "% base", "top-1", "95% interval");
    for (int k = 1; k < nt; k++) {
        int classes = trn_dataset_classes(t[k].ds);
        if (!(t[k].train = malloc(ftr.n * sizeof(int))) || !(t[k].test = malloc(n_te * sizeof(int)))) {
            trn_errf(err, "out of memory");
            goto out;
        }
        for (size_t i = 0; i < ftr.n; i++)
            t[k].train[i] = trn_dataset_class(t[k].ds, TRN_SPLIT_TRAIN, i % n_tr);
        for (size_t i = 0; i < n_te; i++) t[k].test[i] = trn_dataset_class(t[k].ds, held, i);
        float l0 = 0, l1 = 0;
        if (prn_head_train(&ftr, t[k].train, classes, &ho, &hc[k], &hn[k], &l0, &l1, err) != 0 ||
            prn_head_predict(hn[k], &fte, pred, NULL, err) != 0) {
            trn_err_prefix(err, "task '%s'", t[k].name);
            goto out;
        }
        uint64_t correct = 0;
        for (size_t i = 0; i < n_te; i++) correct += pred[i] == t[k].test[i];
        double lo95, hi95, top1 = (double)correct / (double)n_te;
        trn_wilson(correct, n_te, &lo95, &hi95);
        if (prn_retarget_variant(cfg, base, cut, hc[k], hn[k], trunk_id, &v[k], err) != 0) {
            trn_err_prefix(err, "task '%s'", t[k].name);
            goto out;
        }
        cJSON *f = v[k].fields, *h = cJSON_GetObjectItem(f, "head");
        double hm = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "macs"));
        double hp = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "params"));
        double fm = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "macs_fraction"));
        double fp = cJSON_GetNumberValue(cJSON_GetObjectItem(h, "params_fraction"));
        cJSON_AddStringToObject(f, "task", t[k].name);
        cJSON_AddStringToObject(f, "data", t[k].path);
        cJSON_AddNumberToObject(f, "classes", classes);
        cJSON_AddStringToObject(f, "cut", o.cut);
        cJSON_AddStringToObject(f, "head_with", o.head ? o.head : "");
        cJSON_AddNumberToObject(f, "batches", ho.batches);
        cJSON_AddNumberToObject(f, "batch", ho.batch);
        cJSON_AddNumberToObject(f, "aug_passes", ho.aug_passes);
        cJSON_AddNumberToObject(f, "seed", (double)o.seed);
        cJSON_AddNumberToObject(f, "loss_first", l0);
        cJSON_AddNumberToObject(f, "loss_last", l1);
        cJSON *a = cJSON_AddObjectToObject(f, "heldout");
        cJSON_AddStringToObject(a, "split", trn_split_name(held));
        cJSON_AddNumberToObject(a, "images", (double)n_te);
        cJSON_AddNumberToObject(a, "correct", (double)correct);
        cJSON_AddNumberToObject(a, "top1", top1);
        cJSON_AddNumberToObject(a, "top1_lo", lo95);
        cJSON_AddNumberToObject(a, "top1_hi", hi95);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToArray(rows, r);
        cJSON_AddStringToObject(r, "task", t[k].name);
        cJSON_AddNumberToObject(r, "classes", classes);
        cJSON_AddNumberToObject(r, "head_macs", hm);
        cJSON_AddNumberToObject(r, "head_params", hp);
        cJSON_AddNumberToObject(r, "macs_fraction", fm);
        cJSON_AddNumberToObject(r, "params_fraction", fp);
        cJSON_AddNumberToObject(r, "images", (double)n_te);
        cJSON_AddNumberToObject(r, "correct", (double)correct);
        cJSON_AddNumberToObject(r, "top1", top1);
        cJSON_AddNumberToObject(r, "top1_lo", lo95);
        cJSON_AddNumberToObject(r, "top1_hi", hi95);
        printf("%-10s %7d %10.0f %6.2f%% %8.0f %6.2f%% %7.2f%% %8.2f%%..%.2f%%\n", t[k].name,
               classes, hm, 100 * fm, hp, 100 * fp, 100 * top1, 100 * lo95, 100 * hi95);
    }
    /* Everything trained: write the variant folders, then the table. */
    for (int k = 1; k < nt; k++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", o.out, t[k].name);
        if (prn_variant_write(&v[k], dir, err) != 0) goto out;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/retarget.json", o.out);
    if (prn_cli_write_json(path, table, err) != 0) goto out;
    printf("%s: %d heads on trunk L0..L%d (%s), %zu cached training vectors\n", o.out, nt - 1, cut,
           o.cut, ftr.n);
    rc = 0;
out:
    for (int k = 0; k < nt; k++) {
        trn_dataset_close(t[k].ds);
        free(t[k].train);
        free(t[k].test);
        prn_variant_free(&v[k]);
        trn_cfg_free(hc[k]);
        trn_net_free(hn[k]);
    }
    trn_loader_close(fd.l);
    free(fd.y);
    free(pred);
    cJSON_Delete(table);
    prn_features_free(&ftr);
    prn_features_free(&fte);
    prn_plan_free(plan);
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}
