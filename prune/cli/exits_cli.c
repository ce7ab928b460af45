/*
 * exits_cli.c: `prune early-exit`: FlexDNN's exit search, insertion plan
 * and lossless thresholds (or the BranchyNet-style baseline), fed by the
 * data loader: the training split with the base cfg's [net] augmentation
 * (a pure function of --seed and the step), the valid split (thresholds,
 * search, plan) and the test split (alpha profile) with evaluation
 * preprocessing.
 */
#include "prune_cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct train_stream {
    trn_loader *l;
} train_stream;

static int next_batch(void *ctx, uint64_t step, float *x, float *y, trn_err *err)
{
    train_stream *t = ctx;
    return trn_loader_get(t->l, step, x, y, err);
}

/* Every image of split s (evaluation preprocessing): *x (n, c, h, w), *y. */
static int load_split(const trn_dataset *ds, trn_split s, trn_shape in, int threads, float **x, int **y,
                      size_t *n, trn_err *err)
{
    *n = trn_dataset_count(ds, s);
    *x = NULL;
    *y = NULL;
    if (*n == 0) return trn_errf(err, "the data set has no %s split: early exits need valid (thresholds) and test "
                                 "(alpha profile)", trn_split_name(s));
    trn_loader_opts lo;
    trn_loader_opts_defaults(&lo);
    lo.w = in.w;
    lo.h = in.h;
    lo.c = in.c;
    lo.batch = 32;
    lo.augment = 0;
    lo.shuffle = 0;
    lo.threads = threads;
    trn_loader *l = trn_loader_open(ds, s, &lo, err);
    if (!l) return -1;
    size_t per = (size_t)in.c * in.h * in.w;
    int classes = trn_dataset_classes(ds);
    float *bx = malloc(32 * per * sizeof *bx), *by = malloc(32 * (size_t)classes * sizeof *by);
    *x = malloc(*n * per * sizeof **x);
    *y = malloc(*n * sizeof **y);
    int rc = 0;
    if (!bx || !by || !*x || !*y) rc = trn_errf(err, "out of memory for the %s split", trn_split_name(s));
    for (size_t b = 0; rc == 0 && b * 32 < *n; b++) {
        if ((rc = trn_loader_get(l, b, bx, by, err)) != 0) break;
        size_t m = *n - b * 32 < 32 ? *n - b * 32 : 32;
        memcpy(*x + b * 32 * per, bx, m * per * sizeof *bx);
        for (size_t i = 0; i < m; i++) {
            int k = 0;
            for (int c = 1; c < classes; c++)
                if (by[i * classes + c] > by[i * classes + k]) k = c;
            (*y)[b * 32 + i] = k;
        }
    }
    free(bx);
    free(by);
    trn_loader_close(l);
    if (rc != 0) {
        free(*x);
        free(*y);
        *x = NULL;
        *y = NULL;
    }
    return rc;
}

/* DIR/exits.predictions: per test image (list order) its true and
 * predicted class at alpha 1 (trn_preds, the record catalog pack pairs);
 * with json, DIR/predictions.json too: its path, class, exit and
 * probabilities. */
static int write_predictions(const char *dir, const trn_dataset *ds, const prn_exit_model *em, int json,
                             trn_err *err)
{
    char path[4096];
    trn_preds tp;
    if (trn_preds_init(&tp, ds, TRN_SPLIT_TEST, em->n_predictions, err) != 0) return -1;
    for (size_t i = 0; i < em->n_predictions; i++)
        tp.pred[i] = trn_argmax(em->predictions + i * (size_t)em->classes, em->classes);
    snprintf(path, sizeof path, "%s/exits.predictions", dir);
    int rc = trn_preds_write(path, &tp, err);
    trn_preds_free(&tp);
    if (rc != 0 || !json) return rc;
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "images");
    cJSON_AddStringToObject(doc, "split", "test");
    cJSON_AddNumberToObject(doc, "alpha", 1);
    cJSON_AddNumberToObject(doc, "exits", trn_exits_count(em->exits));
    for (size_t i = 0; i < em->n_predictions; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "path", trn_dataset_path(ds, TRN_SPLIT_TEST, i));
        cJSON_AddNumberToObject(r, "class", trn_dataset_class(ds, TRN_SPLIT_TEST, i));
        cJSON_AddNumberToObject(r, "exit", em->exit_of[i]);
        cJSON *p = cJSON_AddArrayToObject(r, "probabilities");
        for (int c = 0; c < em->classes; c++)
            cJSON_AddItemToArray(p, cJSON_CreateNumber(em->predictions[i * em->classes + c]));
        cJSON_AddItemToArray(arr, r);
    }
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    if (!text) return trn_errf(err, "out of memory");
    snprintf(path, sizeof path, "%s/predictions.json", dir);
    rc = trn_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

int prn_cli_early_exit(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "data", "set", "seed", "out", "threads", "parent", NULL};
    static const char *const need[] = {"cfg", "weights", "data", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "early-exit",
                      "--cfg C --weights W --data D.data --seed N --out DIR [--set key=value ...]\n"
                      "                   [--threads T] [--parent ID]",
                      "FlexDNN's early exits. With trunk_prune=1 the trunk is first pruned by\n"
                      "collective importance (thesis 4.3.1: sequential backward selection per\n"
                      "convolutional layer, scored by a linear exit on the layer's remaining filters;\n"
                      "approximation and cost in meta.json) to trunk_macs x the base's MACs and\n"
                      "retrained distilled from the base; otherwise the trained base is the trunk.\n"
                      "The trunk is then frozen: an over-parameterised exit branch at every\n"
                      "convolution and max-pool, each shrunk (layers, then filters) while its exit\n"
                      "rate holds; the insertion plan drops the exit with the lowest\n"
                      "Q_j = G_j / C_j until the expected MACs stop falling and the exits together\n"
                      "cost at most exit_cap x the base's MACs; per-exit thresholds lossless on the\n"
                      "valid split (with a margin, never below min_threshold); the alpha profile\n"
                      "(T = alpha x T_lossless) on the test split, against the original base.\n"
                      "--set keys: batch (64), stage1 (400), finetune (150), learning_rate (0.05),\n"
                      "momentum (0.9), decay (0.0005), kd (0.5: distillation from the trunk's\n"
                      "output), width (32), layers (2), pool_to (4), tolerance (0.02), branchynet\n"
                      "(0; 1: the baseline, one fixed head per max-pool stage), exit_cap (0.05; 0:\n"
                      "none), min_threshold (0.5), threshold_z (1: the margin in standard\n"
                      "deviations; 0: plain lossless), anneal (1: every branch's learning rate\n"
                      "decays to 0 over its batches; 0: constant), trunk_prune (0; 1: collective importance;\n"
                      "2: L1 norm), trunk_macs (0.6; 0: the thesis's minimum counts at\n"
                      "trunk_tolerance), trunk_tolerance (0.01), trunk_retrain (400 batches),\n"
                      "trunk_lr (0.02), trunk_kd (0.5), trunk_compare_l1 (0; 1: also the other\n"
                      "ranking at the same counts, retrained alike), sbs_images (2048), sbs_epochs\n"
                      "(3), sbs_first_epochs (10), sbs_refit (0: one exit fine-tune per round; E:\n"
                      "E passes per candidate, the exact O(N^2)), sbs_drop (1 filter per round),\n"
                      "sbs_stop (0.2), predictions (0; 1: DIR/predictions.json, each test image's\n"
                      "exit and probabilities at alpha 1; DIR/exits.predictions, each one's true\n"
                      "and predicted class at alpha 1, is always written).\n"
                      "Writes DIR/variant.cfg and DIR/init.weights (the trunk: the base, or the\n"
                      "pruned trunk, loadable by Darknet), DIR/exits.cfg, DIR/exits.weights\n"
                      "(trainer/README.md, Early exits) and DIR/meta.json (its parent: --parent,\n"
                      "the catalog id of --cfg, default base; the \"base\" everything is measured\n"
                      "against is always --cfg).\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "early-exit", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    const char *parent;
    if (prn_cli_parent(&o, &parent, err)) return -2;
    prn_exits_opts eo;
    prn_exits_opts_defaults(&eo);
    int predictions = 0;
    for (int i = 0; i < o.nset; i++) {
        if (strcmp(o.set[i], "predictions=1") == 0) predictions = 1;
        else if (strcmp(o.set[i], "predictions=0") == 0) predictions = 0;
        else if (prn_exits_opts_set(&eo, o.set[i], err)) return -2;
    }
    eo.seed = o.seed;
    if (prn_cli_compute(o.threads, err)) return -1;
    trn_cfg *cfg = trn_cfg_read(o.cfg, err);
    if (!cfg) return -1;
    trn_net *base = NULL;
    trn_dataset *ds = NULL;
    train_stream ts = {0};
    float *vx = NULL, *tx = NULL;
    int *vy = NULL, *ty = NULL;
    size_t nv = 0, nt = 0;
    prn_variant v = {0};
    prn_exit_model em = {0};
    int rc = -1;
    if (!(base = prn_cli_load_base(cfg, o.weights, 1, err))) goto out;
    if (!(ds = trn_dataset_open(o.data, err))) goto out;
    if ((size_t)trn_dataset_classes(ds) != trn_net_outputs(base)) {
        trn_errf(err, "%s has %d classes, the base %s %zu outputs", o.data, trn_dataset_classes(ds), o.cfg,
                 trn_net_outputs(base));
        goto out;
    }
    trn_shape s = trn_net_input_shape(base);
    trn_loader_opts lo;
    if (prn_cli_loader_opts(base, o.cfg, eo.batch, o.seed, o.threads, (size_t)256 << 20, &lo, err)) goto out;
    if (!(ts.l = trn_loader_open(ds, TRN_SPLIT_TRAIN, &lo, err))) goto out;
    if (load_split(ds, TRN_SPLIT_VALID, s, o.threads, &vx, &vy, &nv, err) != 0 ||
        load_split(ds, TRN_SPLIT_TEST, s, o.threads, &tx, &ty, &nt, err) != 0)
        goto out;
    eo.train = next_batch;
    eo.train_ctx = &ts;
    eo.valid_x = vx;
    eo.valid_y = vy;
    eo.n_valid = nv;
    eo.test_x = tx;
    eo.test_y = ty;
    eo.n_test = nt;
    if (prn_early_exit(cfg, o.cfg, o.weights, &eo, &v, &em, err) != 0) goto out;
    v.parent = parent;
    if (o.parent) { /* "the base" in the description is --cfg: name it */
        size_t n = strlen(v.description) + strlen(o.parent) + 32;
        char *d = malloc(n);
        if (d) snprintf(d, n, "%s; its base is variant %s", v.description, o.parent);
        if (!d) {
            trn_errf(err, "out of memory");
            goto out;
        }
        free(v.description);
        v.description = d;
    }
    cJSON_AddStringToObject(v.fields, "data", trn_data_name(o.data));
    /* the side files first: meta.json (written last by prn_cli_finish) is
     * what make waits for */
    if (trn_mkdir_p(o.out, err) != 0) goto out;
    char path[4096];
    snprintf(path, sizeof path, "%s/exits.cfg", o.out);
    if (trn_cfg_write(em.cfg, path, err) != 0) goto out;
    snprintf(path, sizeof path, "%s/exits.weights", o.out);
    if (trn_exits_weights_save(em.exits, path, err) != 0) goto out;
    if (write_predictions(o.out, ds, &em, predictions, err) != 0) goto out;
    rc = prn_cli_finish(&v, o.out, err);
out:
    prn_variant_free(&v);
    prn_exit_model_free(&em);
    trn_loader_close(ts.l);
    free(vx);
    free(vy);
    free(tx);
    free(ty);
    trn_dataset_close(ds);
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}
