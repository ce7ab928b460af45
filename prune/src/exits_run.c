/*
 * exits_run.c: `prune early-exit`'s run (prn_early_exit_run, prn.h):
 * FlexDNN's exit search, insertion plan and lossless thresholds (or the
 * BranchyNet-style baseline, exits.c) fed by the data loader: the training
 * split with the base cfg's [net] augmentation (a pure function of the
 * seed and the step), the valid split (thresholds, search, plan) and the
 * test split (alpha profile) with evaluation preprocessing; then the
 * variant folder.
 */
#include "prn_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prn_early_exit_run_defaults(prn_early_exit_run_opts *o)
{
    *o = (prn_early_exit_run_opts){.parent = "base", .threads = 1};
    prn_exits_opts_defaults(&o->exits);
}

int prn_early_exit_run_set(prn_early_exit_run_opts *o, const char *kv, trn_err *err)
{
    if (strcmp(kv, "predictions=1") == 0) o->predictions = 1;
    else if (strcmp(kv, "predictions=0") == 0) o->predictions = 0;
    else return prn_exits_opts_set(&o->exits, kv, err);
    return 0;
}

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
 * probabilities, and its exit and answer at every alpha of the profile. */
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
    cJSON *al = cJSON_AddArrayToObject(doc, "alphas");
    for (int a = 0; a < em->n_alphas; a++) cJSON_AddItemToArray(al, cJSON_CreateNumber(em->alphas[a]));
    for (size_t i = 0; i < em->n_predictions; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "path", trn_dataset_path(ds, TRN_SPLIT_TEST, i));
        cJSON_AddNumberToObject(r, "class", trn_dataset_class(ds, TRN_SPLIT_TEST, i));
        cJSON_AddNumberToObject(r, "exit", em->exit_of[i]);
        cJSON *p = cJSON_AddArrayToObject(r, "probabilities");
        for (int c = 0; c < em->classes; c++)
            cJSON_AddItemToArray(p, cJSON_CreateNumber(em->predictions[i * em->classes + c]));
        /* at every alpha of "alphas": its exit and answer (paired tests
         * of two exit models on the same images) */
        cJSON *ea = cJSON_AddArrayToObject(r, "exit_by_alpha"), *pa = cJSON_AddArrayToObject(r, "pred_by_alpha");
        for (int a = 0; a < em->n_alphas; a++) {
            cJSON_AddItemToArray(ea, cJSON_CreateNumber(em->exit_by_alpha[(size_t)a * em->n_predictions + i]));
            cJSON_AddItemToArray(pa, cJSON_CreateNumber(em->pred_by_alpha[(size_t)a * em->n_predictions + i]));
        }
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

/* The data-fed inputs of prn_early_exit. */
typedef struct ee_data {
    trn_dataset *ds;
    train_stream ts;
    float *vx, *tx;
    int *vy, *ty;
    size_t nv, nt;
} ee_data;

static void data_free(ee_data *d)
{
    trn_loader_close(d->ts.l);
    free(d->vx), free(d->vy), free(d->tx), free(d->ty);
    trn_dataset_close(d->ds);
}

/* Opens the data set (as many classes as base outputs), the training
 * loader and the valid and test splits; fills eo's data fields. */
static int data_open(const prn_early_exit_run_opts *o, const trn_net *base, ee_data *d, prn_exits_opts *eo,
                     trn_err *err)
{
    if (!(d->ds = trn_dataset_open(o->data, err))) return -1;
    if ((size_t)trn_dataset_classes(d->ds) != trn_net_outputs(base))
        return trn_errf(err, "%s has %d classes, the base %s %zu outputs", o->data, trn_dataset_classes(d->ds),
                        o->cfg, trn_net_outputs(base));
    trn_shape s = trn_net_input_shape(base);
    trn_loader_opts lo;
    if (prn_loader_opts(base, o->cfg, eo->batch, eo->seed, o->threads, (size_t)256 << 20, &lo, err)) return -1;
    if (!(d->ts.l = trn_loader_open(d->ds, TRN_SPLIT_TRAIN, &lo, err))) return -1;
    if (load_split(d->ds, TRN_SPLIT_VALID, s, o->threads, &d->vx, &d->vy, &d->nv, err) != 0 ||
        load_split(d->ds, TRN_SPLIT_TEST, s, o->threads, &d->tx, &d->ty, &d->nt, err) != 0)
        return -1;
    eo->train = next_batch;
    eo->train_ctx = &d->ts;
    eo->valid_x = d->vx, eo->valid_y = d->vy, eo->n_valid = d->nv;
    eo->test_x = d->tx, eo->test_y = d->ty, eo->n_test = d->nt;
    return 0;
}

/* The variant's parent and data; "the base" in the description is --cfg:
 * name it when it is a variant. */
static int name_variant(const prn_early_exit_run_opts *o, prn_variant *v, trn_err *err)
{
    v->parent = o->parent;
    if (o->base_id) {
        char *d = prn_strdupf("%s; its base is variant %s", v->description, o->base_id);
        if (!d) return trn_errf(err, "out of memory");
        free(v->description);
        v->description = d;
    }
    cJSON_AddStringToObject(v->fields, "data", trn_data_name(o->data));
    return 0;
}

/* The side files first: meta.json (written last by prn_variant_write) is
 * what make waits for. */
static int write_files(const prn_early_exit_run_opts *o, const ee_data *d, const prn_variant *v,
                       const prn_exit_model *em, trn_err *err)
{
    if (trn_mkdir_p(o->out, err) != 0) return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/exits.cfg", o->out);
    if (trn_cfg_write(em->cfg, path, err) != 0) return -1;
    snprintf(path, sizeof path, "%s/exits.weights", o->out);
    if (trn_exits_weights_save(em->exits, path, err) != 0) return -1;
    if (write_predictions(o->out, d->ds, em, o->predictions, err) != 0) return -1;
    return prn_variant_write(v, o->out, err);
}

int prn_early_exit_run(const prn_early_exit_run_opts *o, char **description, trn_err *err)
{
    *description = NULL;
    trn_cfg *cfg = trn_cfg_read(o->cfg, err);
    if (!cfg) return -1;
    prn_exits_opts eo = o->exits;
    ee_data d = {0};
    prn_variant v = {0};
    prn_exit_model em = {0};
    int rc = -1;
    trn_net *base = prn_load_base(cfg, o->weights, 1, err);
    if (base && data_open(o, base, &d, &eo, err) == 0 && prn_early_exit(cfg, o->cfg, o->weights, &eo, &v, &em, err) == 0 &&
        name_variant(o, &v, err) == 0 && write_files(o, &d, &v, &em, err) == 0) {
        *description = v.description;
        v.description = NULL;
        rc = 0;
    }
    prn_variant_free(&v);
    prn_exit_model_free(&em);
    data_free(&d);
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}
