/*
 * roadmap_cli.c: `prune roadmap`: NestDNN's filter pruning roadmap
 * (prune/README.md, "The pruning roadmap"). Step 0 is the base; step k+1
 * ranks step k's model (TRR or L1), removes the least important filters
 * (prn_roadmap_choose), retrains on the training split and is evaluated on
 * the valid split (the test split without one) and the test split. The
 * iteration ends at the first step below min_accuracy; the last passing
 * step is the seed. Then every step's model is stored with its filters in
 * the roadmap's common order (prn_roadmap_order), so each step is a prefix
 * of the one before, and DIR/roadmap.json is written last.
 */
#include "prune_cli.h"
#include "prn_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RM_MAX_STEPS 64
#define RM_EVAL_BATCH 64

typedef struct rm_settings {
    double step, min_accuracy, learning_rate, max_layer_step, min_layer_step, target_macs;
    long long retrain_batches, triplets, min_filters, max_steps, bn_batches, connected, eval_every, rescale, warmup;
} rm_settings;

static int rm_set(rm_settings *s, const char *kv, trn_err *err)
{
    size_t kl;
    double v;
    if (prn_cli_set_number(kv, &kl, &v, err)) return -1;
#define KEY(name) (kl == strlen(name) && !strncmp(kv, name, kl))
#define RANGE(lo, hi) if (v < (lo) || v > (hi)) return trn_errf(err, "--set '%s': %.*s must be in [%g, %g]", kv, (int)kl, kv, (double)(lo), (double)(hi))
#define WHOLE if (v != floor(v)) return trn_errf(err, "--set '%s': %.*s must be a whole number", kv, (int)kl, kv)
    if (KEY("step")) { RANGE(0.001, 0.9); s->step = v; }
    else if (KEY("min_accuracy")) { RANGE(0, 1); s->min_accuracy = v; }
    else if (KEY("learning_rate")) { RANGE(0, 10); s->learning_rate = v; }
    else if (KEY("max_layer_step")) { RANGE(0.001, 1); s->max_layer_step = v; }
    else if (KEY("min_layer_step")) { RANGE(0, 0.9); s->min_layer_step = v; }
    else if (KEY("target_macs")) { RANGE(0, 1); s->target_macs = v; }
    else if (KEY("retrain_batches")) { RANGE(0, 1e7); WHOLE; s->retrain_batches = (long long)v; }
    else if (KEY("triplets")) { RANGE(1, 1e8); WHOLE; s->triplets = (long long)v; }
    else if (KEY("min_filters")) { RANGE(1, 1e6); WHOLE; s->min_filters = (long long)v; }
    else if (KEY("max_steps")) { RANGE(1, RM_MAX_STEPS - 1); WHOLE; s->max_steps = (long long)v; }
    else if (KEY("bn_batches")) { RANGE(0, 1e6); WHOLE; s->bn_batches = (long long)v; }
    else if (KEY("connected")) { RANGE(0, 1); WHOLE; s->connected = (long long)v; }
    else if (KEY("eval_every")) { RANGE(0, 1e7); WHOLE; s->eval_every = (long long)v; }
    else if (KEY("rescale")) { RANGE(0, 1); WHOLE; s->rescale = (long long)v; }
    else if (KEY("warmup")) { RANGE(0, 1e7); WHOLE; s->warmup = (long long)v; }
    else
        return trn_errf(err, "--set '%s': unknown key '%.*s' (known: step, min_accuracy, retrain_batches, "
                             "learning_rate, triplets, min_filters, max_layer_step, min_layer_step, max_steps, target_macs, bn_batches, "
                             "connected, eval_every, rescale, warmup)", kv, (int)kl, kv);
#undef KEY
#undef RANGE
#undef WHOLE
    return 0;
}

/* The evaluation; loss and preds (initialised for every image of split:
 * the predicted class is written) may be NULL. */
static int evaluate(trn_net *net, const trn_dataset *ds, trn_split split, int threads, rm_acc *a, double *loss,
                    trn_preds *preds, trn_err *err)
{
    memset(a, 0, sizeof *a);
    a->split = split;
    size_t n = trn_dataset_count(ds, split);
    int batch = trn_net_batch(net), classes = trn_dataset_classes(ds);
    trn_shape s = trn_net_input_shape(net);
    trn_loader_opts lo;
    trn_loader_opts_defaults(&lo);
    lo.w = s.w, lo.h = s.h, lo.c = s.c, lo.batch = batch;
    lo.augment = 0, lo.shuffle = 0, lo.threads = threads;
    float *x = malloc((size_t)batch * trn_net_inputs(net) * sizeof *x);
    float *y = malloc((size_t)batch * (size_t)classes * sizeof *y);
    trn_loader *ld = x && y ? trn_loader_open(ds, split, &lo, err) : NULL;
    int rc = ld ? 0 : (x && y ? -1 : trn_errf(err, "out of memory"));
    uint64_t seen = 0, good = 0;
    double sum = 0;
    for (uint64_t b = 0; rc == 0 && seen < n; b++) {
        if ((rc = trn_loader_get(ld, b, x, y, err)) != 0 || (rc = trn_net_forward(net, x, err)) != 0) break;
        const float *p = trn_net_output(net);
        for (int j = 0; j < batch && seen < n; j++, seen++) {
            const float *pj = p + (size_t)j * (size_t)classes, *yj = y + (size_t)j * (size_t)classes;
            int t = trn_argmax(yj, classes);
            int q = trn_argmax(pj, classes);
            good += q == t;
            if (preds) preds->truth[seen] = t, preds->pred[seen] = q;
            /* the cross-entropy: the network ends with softmax; outputs clamped to 1e-12 */
            if (loss) sum += -log(pj[t] > 1e-12f ? (double)pj[t] : 1e-12);
        }
    }
    trn_loader_close(ld);
    free(x);
    free(y);
    if (rc) return -1;
    a->images = seen;
    a->correct = good;
    a->top1 = seen ? (double)good / (double)seen : 0;
    trn_wilson(good, seen, &a->lo, &a->hi);
    if (loss) *loss = seen ? sum / (double)seen : 0;
    return 0;
}

int prn_cli_evaluate_loss(trn_net *net, const trn_dataset *ds, trn_split split, int threads, rm_acc *a,
                          double *loss, trn_err *err)
{
    return evaluate(net, ds, split, threads, a, loss, NULL, err);
}

int prn_cli_evaluate_preds(trn_net *net, const trn_dataset *ds, trn_split split, int threads, rm_acc *a,
                           const char *path, trn_err *err)
{
    trn_preds p;
    if (trn_preds_init(&p, ds, split, trn_dataset_count(ds, split), err) != 0) return -1;
    int rc = evaluate(net, ds, split, threads, a, NULL, &p, err);
    if (rc == 0) rc = trn_preds_write(path, &p, err);
    trn_preds_free(&p);
    return rc;
}

int prn_cli_evaluate(trn_net *net, const trn_dataset *ds, trn_split split, int threads, rm_acc *a, trn_err *err)
{
    return prn_cli_evaluate_loss(net, ds, split, threads, a, NULL, err);
}

cJSON *prn_cli_acc_json(const rm_acc *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "split", trn_split_name(a->split));
    cJSON_AddNumberToObject(o, "images", (double)a->images);
    cJSON_AddNumberToObject(o, "correct", (double)a->correct);
    cJSON_AddNumberToObject(o, "top1", a->top1);
    cJSON_AddNumberToObject(o, "lo", a->lo);
    cJSON_AddNumberToObject(o, "hi", a->hi);
    return o;
}

typedef struct rm_step {
    trn_cfg *cfg;   /* the step's cfg (the base's [net]) */
    trn_net *net;   /* its weights (batch 1, inference), filters in the step's own order */
    int **perm;     /* [ranked layer][j]: the base filter the model's filter j is */
    int *kept;      /* [ranked layer] */
    rm_acc acc, test;
    int passed;
    trn_net_totals tot;
    cJSON *curve;   /* eval_every > 0: [{batch, accuracy, test}] during the retraining */
} rm_step;

static void step_free(rm_step *s, int L)
{
    trn_cfg_free(s->cfg);
    trn_net_free(s->net);
    for (int l = 0; s->perm && l < L; l++) free(s->perm[l]);
    free(s->perm);
    free(s->kept);
    cJSON_Delete(s->curve);
    memset(s, 0, sizeof *s);
}

typedef struct rm_feed {
    trn_loader *ld;
} rm_feed;

static int feed_batch(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    return trn_loader_get(((rm_feed *)ctx)->ld, index, x, y, err);
}

/* eval_every (a diagnostic): the retraining curve of a step. */
typedef struct rm_curve {
    rm_step *s;
    const trn_dataset *ds;
    trn_split eval;
    int threads;
    trn_cfg *tc;        /* the retraining cfg */
    rm_feed *feed;      /* the retraining batches */
    uint64_t bn_first;  /* the batches that re-estimate the statistics, as after the retraining */
    int bn_batches;
} rm_curve;

/* Appends {batch, accuracy (eval split), test} of net to s->curve: a copy
 * of net (its weights at this batch) whose batch-norm statistics are
 * re-estimated as the step's are after its retraining (the same batches),
 * so the last point is the step's result; net is untouched. *correct and
 * *total are the eval split's. */
static int curve_point(void *ctx, trn_net *net, uint64_t *correct, uint64_t *total, trn_err *err)
{
    rm_curve *c = ctx;
    rm_acc a, t;
    trn_net *bn = prn_cli_net_like(c->tc, net, trn_net_batch(net), 0, 0, err);
    trn_net *n = bn && prn_bn_recalibrate(bn, feed_batch, c->feed, c->bn_first, c->bn_batches, err) == 0
                 ? prn_cli_net_like(c->s->cfg, bn, RM_EVAL_BATCH, 1, 0, err) : NULL;
    int rc = !n || prn_cli_evaluate(n, c->ds, c->eval, c->threads, &a, err) ||
             prn_cli_evaluate(n, c->ds, TRN_SPLIT_TEST, c->threads, &t, err) ? -1 : 0;
    trn_net_free(n);
    trn_net_free(bn);
    if (rc) return -1;
    cJSON *o = cJSON_CreateObject();
    if (!o || (!c->s->curve && !(c->s->curve = cJSON_CreateArray()))) {
        cJSON_Delete(o);
        return trn_errf(err, "out of memory");
    }
    cJSON_AddItemToArray(c->s->curve, o);
    uint64_t b = trn_net_current_batch(net);
    cJSON_AddNumberToObject(o, "batch", (double)b);
    cJSON_AddItemToObject(o, "accuracy", prn_cli_acc_json(&a));
    cJSON_AddItemToObject(o, "test", prn_cli_acc_json(&t));
    fprintf(stderr, "prune roadmap:   retraining batch %llu: %s top-1 %.4f, test %.4f\n", (unsigned long long)b,
            trn_split_name(c->eval), a.top1, t.top1);
    *correct = a.correct;
    *total = a.images;
    return 0;
}

/* Retrains s (in place) for o->retrain_batches on the training split:
 * the step's cfg with learning_rate, poly power 2, no burn-in and
 * max_batches set; checkpoints go to tmpdir and are removed. Then the
 * batch-norm statistics are re-estimated from bn_batches further training
 * batches (prn_bn_recalibrate). */
static int retrain(rm_step *s, const rm_settings *set, const trn_dataset *ds, trn_split eval, uint64_t seed,
                   int threads, const char *tmpdir, const char *cfg_path, trn_err *err)
{
    if (set->retrain_batches == 0 && set->bn_batches == 0 && set->eval_every == 0) return 0;
    trn_cfg *tc = trn_cfg_clone(s->cfg, err);
    if (!tc) return -1;
    int rc = trn_cfg_setf(tc, 0, "learning_rate", err, "%.9g", set->learning_rate) ||
             trn_cfg_set(tc, 0, "policy", "poly", err) || trn_cfg_set(tc, 0, "power", "2", err) ||
             trn_cfg_setf(tc, 0, "burn_in", err, "%lld", set->warmup) ||
             trn_cfg_setf(tc, 0, "max_batches", err, "%lld", set->retrain_batches > 0 ? set->retrain_batches : 1)
             ? -1 : 0;
    trn_net *net = rc ? NULL : prn_cli_net_like(tc, s->net, 0, 0, seed, err);
    rm_feed f = {0};
    if (!net) rc = -1;
    if (rc == 0) {
        trn_net_set_seen(net, 0);
        trn_loader_opts lo;
        if (prn_cli_loader_opts(net, cfg_path, trn_net_batch(net), seed, threads, (size_t)256 << 20, &lo, err) ||
            !(f.ld = trn_loader_open(ds, TRN_SPLIT_TRAIN, &lo, err)))
            rc = -1;
    }
    rm_curve cv = {s, ds, eval, threads, tc, &f, (uint64_t)set->retrain_batches, (int)set->bn_batches};
    uint64_t c0, n0;
    if (rc == 0 && set->eval_every > 0 && curve_point(&cv, net, &c0, &n0, err)) rc = -1; /* batch 0: just pruned */
    if (rc == 0 && set->retrain_batches > 0) {
        trn_train_opts to = {.next_batch = feed_batch, .batch_ctx = &f, .backup_dir = tmpdir, .base = "step",
                             .validate = set->eval_every > 0 ? curve_point : NULL, .validate_ctx = &cv,
                             .validate_every = (uint64_t)set->eval_every};
        rc = trn_train(net, &to, err) == 0 ? 0 : -1;
        char p[4200];
        snprintf(p, sizeof p, "%s/step.ckpt", tmpdir);
        unlink(p);
        snprintf(p, sizeof p, "%s/step.weights", tmpdir);
        unlink(p);
        rmdir(tmpdir);
    }
    if (rc == 0)
        rc = prn_bn_recalibrate(net, feed_batch, &f, (uint64_t)set->retrain_batches, (int)set->bn_batches, err);
    if (rc == 0) {
        int ns, nd;
        const trn_param *ps = trn_net_params(net, &ns), *pd = trn_net_params(s->net, &nd);
        for (int k = 0; k < nd && k < ns; k++) memcpy(pd[k].data, ps[k].data, pd[k].count * sizeof(float));
    }
    trn_loader_close(f.ld);
    trn_net_free(net);
    trn_cfg_free(tc);
    return rc;
}

/* Evaluates s on the deciding split and the test split. */
static int measure(rm_step *s, const trn_dataset *ds, trn_split eval, int threads, trn_err *err)
{
    trn_net *n = prn_cli_net_like(s->cfg, s->net, RM_EVAL_BATCH, 1, 0, err);
    int rc = n ? 0 : -1;
    if (rc == 0) rc = prn_cli_evaluate(n, ds, eval, threads, &s->acc, err);
    if (rc == 0) {
        if (eval == TRN_SPLIT_TEST) s->test = s->acc;
        else rc = prn_cli_evaluate(n, ds, TRN_SPLIT_TEST, threads, &s->test, err);
    }
    trn_net_get_totals(s->net, &s->tot);
    trn_net_free(n);
    return rc;
}

/* The kept counts of step k of a followed roadmap (one per ranked layer,
 * checked against ours). 1 when it has that step, 0 when not, -1 with err. */
static int follow_counts(const cJSON *road, int k, const prn_ranking *r0, int *target, trn_err *err)
{
    const cJSON *steps = cJSON_GetObjectItem(road, "steps");
    const cJSON *st = cJSON_GetArrayItem(steps, k);
    if (!st) return 0;
    const cJSON *kept = cJSON_GetObjectItem(st, "kept");
    if (cJSON_GetArraySize(kept) != r0->nlayers)
        return trn_errf(err, "--follow: step %d has %d kept counts, this network has %d ranked layers", k,
                        cJSON_GetArraySize(kept), r0->nlayers);
    for (int l = 0; l < r0->nlayers; l++) {
        const cJSON *v = cJSON_GetArrayItem(kept, l);
        if (!cJSON_IsNumber(v)) return trn_errf(err, "--follow: step %d: kept[%d] is not a number", k, l);
        target[l] = v->valueint;
    }
    return 1;
}

static cJSON *read_roadmap(const char *path, const prn_ranking *r0, trn_err *err)
{
    char *buf;
    size_t len;
    if (trn_read_file(path, (size_t)64 << 20, &buf, &len, err) != 0) return NULL;
    cJSON *j = cJSON_ParseWithLength(buf, len);
    free(buf);
    const cJSON *fmt = j ? cJSON_GetObjectItem(j, "format") : NULL, *layers = j ? cJSON_GetObjectItem(j, "layers") : NULL;
    if (!j || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "prune-roadmap") || !cJSON_IsArray(layers)) {
        cJSON_Delete(j);
        trn_errf(err, "%s is not a roadmap file (JSON with \"format\": \"prune-roadmap\"): write one with "
                      "prune roadmap", path);
        return NULL;
    }
    int ok = cJSON_GetArraySize(layers) == r0->nlayers;
    for (int l = 0; ok && l < r0->nlayers; l++) {
        const cJSON *x = cJSON_GetObjectItem(cJSON_GetArrayItem(layers, l), "layer");
        ok = cJSON_IsNumber(x) && x->valueint == r0->layers[l].layer;
    }
    if (!ok) {
        cJSON_Delete(j);
        trn_errf(err, "%s ranks other layers than this network has: follow a roadmap of the same base", path);
        return NULL;
    }
    return j;
}

int prn_cli_roadmap(int argc, char **argv, trn_err *err)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *out = NULL, *method = NULL, *follow = NULL;
    long long seed = -1, threads = 1;
    ck_list set = {.n = 0};
    const ck_opt opts[] = {
        {"--cfg", "C", CK_STR, &cfgp, 0, 0, "the trained base network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "D.data", CK_STR, &data, 0, 0, "the data set (train: triplets and retraining; valid: the\n"
                                                  "stopping rule; test: the reported accuracy)"},
        {"--method", "M", CK_STR, &method, 0, 0, "the ranking: trr, l1 or random (a diagnostic baseline)"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0, "seed of the triplets and the retraining"},
        {"--out", "DIR", CK_STR, &out, 0, 0, "the roadmap folder to write"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "a setting (repeatable; see above)"},
        {"--follow", "ROADMAP", CK_STR, &follow, 0, 0, "keep the per-layer filter counts of this roadmap.json\n"
                                                       "(compare two methods at equal counts)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {0},
    };
    const ck_verb v = {
        "roadmap", NULL, NULL,
        "--cfg C --weights W --data D.data --method trr|l1|random --seed N --out DIR\n"
        "                     [--set key=value ...] [--follow ROADMAP] [--threads T]",
        "NestDNN's filter pruning roadmap: from the base, each step ranks the current model\n"
        "(--method), removes the least important `step` fraction of the ranked filters across\n"
        "layers, retrains `retrain_batches` batches and is evaluated on the valid split; the\n"
        "iteration ends at the first step below `min_accuracy` (or after `max_steps`). The last\n"
        "passing step is the seed. Every step's model is written with its filters in one\n"
        "common order (each step a prefix of the one before) to DIR/step-K.cfg and\n"
        "DIR/step-K.weights; DIR/roadmap.json (written last) records the steps: filters kept\n"
        "per layer, MACs, accuracy with its 95% Wilson interval on the valid and test splits.\n"
        "--set keys: step (0.2), min_accuracy (0.5), retrain_batches (100), learning_rate\n"
        "(0.01), triplets (8192), min_filters (2), max_layer_step (0.5: at most this fraction of\n"
        "a layer's filters per step), min_layer_step (0: each layer first loses at least this\n"
        "fraction of its filters, its least important by its own ranking, the cross-layer order\n"
        "the rest of `step`; so that every layer grows at every capacity of prune grow),\n"
        "max_steps (12), target_macs (0: none; a passing step at\n"
        "or below this fraction of the base's MACs ends the roadmap), bn_batches (20: training\n"
        "batches that re-estimate the batch-norm statistics after each step's retraining; 0: none),\n"
        "connected (1; 0: only convolutional layers lose filters, the connected ones keep all),\n"
        "eval_every (0; N, a diagnostic: each step's `curve` records the valid and test top-1\n"
        "right after the pruning (batch 0) and every N retraining batches, each of a copy\n"
        "whose batch-norm statistics are re-estimated like the step's after its retraining),\n"
        "rescale (0; 1: before each step's retraining every kept filter of a batch-normalised\n"
        "layer is rescaled to its layer's mean filter norm before the pruning, statistics\n"
        "with it, so the pruned model's outputs stay and every filter starts with the same\n"
        "effective learning rate), warmup (0: the retraining's burn-in batches, the learning\n"
        "rate rising as (batch/warmup)^2, the poly power, as Darknet's burn_in).\n",
        opts, NULL};
    const char *extra;
    int rc0;
    if (ck_parse("prune", &v, argc + 1, argv - 1, &extra, 0, &rc0) < 0) return rc0 == 0 ? 0 : -3;
    const char *need[][2] = {{"cfg", cfgp}, {"weights", weights}, {"data", data}, {"method", method}, {"out", out}};
    if (prn_cli_need(need, sizeof need / sizeof *need, seed, err)) return -2;
    if (prn_cli_out_ok(out, 1, err)) return -1;
    int m = prn_cli_method(method, err);
    if (m < 0) return -2;
    rm_settings st = {.step = 0.2, .min_accuracy = 0.5, .learning_rate = 0.01, .max_layer_step = 0.5, .retrain_batches = 100,
                      .triplets = PRN_TRR_TRIPLETS_DEFAULT, .min_filters = 2, .max_steps = 12, .bn_batches = 20, .connected = 1};
    for (int i = 0; i < set.n; i++)
        if (rm_set(&st, set.v[i], err)) return -2;
    if (prn_cli_compute((int)threads, err)) return -1;

    int rc = -1, nsteps = 0, L = 0, made_dir = access(out, F_OK) != 0;
    rm_step steps[RM_MAX_STEPS];
    memset(steps, 0, sizeof steps);
    trn_dataset *ds = NULL;
    prn_ranking *r = NULL, *r0 = NULL;
    cJSON *road = NULL, *j = NULL;
    int *base_n = NULL, **order = NULL, *target = NULL, **keep_buf = NULL;
    char stopped[512] = "", tmpdir[4096];
    trn_cfg *cfg = trn_cfg_read(cfgp, err);
    if (!cfg) return -1;
    if (!(ds = trn_dataset_open(data, err))) goto done;
    if (!trn_dataset_count(ds, TRN_SPLIT_TRAIN) || !trn_dataset_count(ds, TRN_SPLIT_TEST)) {
        trn_errf(err, "%s: the roadmap needs a train and a test split", data);
        goto done;
    }
    trn_split eval = trn_dataset_count(ds, TRN_SPLIT_VALID) ? TRN_SPLIT_VALID : TRN_SPLIT_TEST;
    rm_step *s0 = &steps[0];
    if (!(s0->net = prn_cli_load_base(cfg, weights, 1, err)) || !(s0->cfg = trn_cfg_clone(cfg, err))) goto done;
    if ((int)trn_net_outputs(s0->net) != trn_dataset_classes(ds)) {
        trn_errf(err, "%s has %zu outputs but %s has %d classes: use the data set the base was trained on",
                 cfgp, trn_net_outputs(s0->net), data, trn_dataset_classes(ds));
        goto done;
    }
    /* The ranked layers and the base's filter counts (an L1 ranking costs nothing). */
    prn_rank_opts l1 = {.method = PRN_RANK_L1};
    if (!(r0 = prn_rank(s0->net, &l1, err))) goto done;
    L = r0->nlayers;
    if (follow && !(road = read_roadmap(follow, r0, err))) goto done;
    base_n = calloc((size_t)L, sizeof *base_n);
    target = calloc((size_t)L, sizeof *target);
    order = calloc((size_t)L, sizeof *order);
    keep_buf = calloc((size_t)L, sizeof *keep_buf);
    s0->perm = calloc((size_t)L, sizeof *s0->perm);
    s0->kept = calloc((size_t)L, sizeof *s0->kept);
    if (!base_n || !target || !order || !keep_buf || !s0->perm || !s0->kept) goto oom;
    for (int l = 0; l < L; l++) {
        base_n[l] = s0->kept[l] = r0->layers[l].filters;
        if (!(order[l] = malloc((size_t)base_n[l] * sizeof(int))) ||
            !(keep_buf[l] = malloc((size_t)base_n[l] * sizeof(int))) ||
            !(s0->perm[l] = malloc((size_t)base_n[l] * sizeof(int))))
            goto oom;
        for (int f = 0; f < base_n[l]; f++) s0->perm[l][f] = f;
    }
    if (measure(s0, ds, eval, (int)threads, err)) goto done;
    s0->passed = s0->acc.top1 >= st.min_accuracy;
    nsteps = 1;
    fprintf(stderr, "prune roadmap: step 0 (base): %llu MACs, %s top-1 %.4f [%.4f, %.4f] on %llu images\n",
            (unsigned long long)s0->tot.macs, trn_split_name(eval), s0->acc.top1, s0->acc.lo, s0->acc.hi,
            (unsigned long long)s0->acc.images);
    if (!s0->passed && !road) {
        trn_errf(err, "the base's %s top-1 %.4f is below min_accuracy %.4f: lower min_accuracy",
                 trn_split_name(eval), s0->acc.top1, st.min_accuracy);
        goto done;
    }
    if (trn_mkdir_p(out, err) != 0) goto done;
    for (int k = 1;; k++) {
        rm_step *p = &steps[k - 1], *s = &steps[k];
        if (road) {
            int got = follow_counts(road, k, r0, target, err);
            if (got < 0) goto done;
            if (got == 0) {
                snprintf(stopped, sizeof stopped, "the followed roadmap %s has %d steps", follow, k);
                break;
            }
        } else if (k > st.max_steps) {
            snprintf(stopped, sizeof stopped, "max_steps (%lld) reached", st.max_steps);
            break;
        }
        if (k >= RM_MAX_STEPS) {
            snprintf(stopped, sizeof stopped, "%d steps reached (the most a roadmap holds)", RM_MAX_STEPS - 1);
            break;
        }
        /* Rank the current model. */
        prn_ranking_free(r);
        r = NULL;
        trn_net *rn = m == PRN_RANK_TRR ? prn_cli_net_like(p->cfg, p->net, 48, 1, 0, err) : NULL;
        if (m == PRN_RANK_TRR && !rn) goto done;
        r = prn_cli_rank(rn ? rn : p->net, p->cfg, (prn_rank_method)m, ds, TRN_SPLIT_TRAIN,
                         (uint64_t)seed + (uint64_t)k, (uint64_t)st.triplets, PRN_TRR_AT_DEFAULT,
                         PRN_TRR_DISTANCE_DEFAULT, err);
        trn_net_free(rn);
        if (!r) goto done;
        if (!st.connected) {
            /* connected=0: only convolutional layers lose filters; the
             * connected layers' entries leave the cross-layer order, so
             * `step` is a fraction of the convolutional filters. */
            int w = 0, conv = 0;
            for (int i = 0; i < r->filters; i++)
                if (r->layers[r->order[i].layer].kind != TRN_LAYER_CONNECTED) r->order[w++] = r->order[i];
            for (int l = 0; l < r->nlayers; l++)
                if (r->layers[l].kind != TRN_LAYER_CONNECTED) conv += r->layers[l].filters;
            r->filters = w;
            if (w != conv) {
                trn_errf(err, "internal: %d convolutional filters in the order, %d in the layers", w, conv);
                goto done;
            }
        }
        int removed = prn_roadmap_choose(r, st.step, (int)st.min_filters, st.max_layer_step, st.min_layer_step, road ? target : NULL,
                                         keep_buf, target, err);
        if (removed < 0) goto done;
        if (removed == 0) {
            snprintf(stopped, sizeof stopped, "step %d: no filter can be removed (min_filters %lld)", k,
                     st.min_filters);
            break;
        }
        /* Prune: the kept filters in ascending order of the current model. */
        prn_keep kp[256];
        if (L > 256) {
            trn_errf(err, "more than 256 ranked layers");
            goto done;
        }
        for (int l = 0; l < L; l++) kp[l] = (prn_keep){r->layers[l].layer, target[l], keep_buf[l]};
        if (!(s->perm = calloc((size_t)L, sizeof *s->perm)) || !(s->kept = calloc((size_t)L, sizeof *s->kept)))
            goto oom;
        nsteps = k + 1;
        for (int l = 0; l < L; l++) {
            s->kept[l] = target[l];
            if (!(s->perm[l] = malloc((size_t)target[l] * sizeof(int)))) goto oom;
            for (int j2 = 0; j2 < target[l]; j2++) s->perm[l][j2] = p->perm[l][keep_buf[l][j2]];
        }
        if (!(s->cfg = prn_filters_cfg(p->cfg, p->net, kp, L, err))) goto done;
        trn_net_opts no;
        prn_net_opts(&no, 0);
        if (!(s->net = trn_net_create(s->cfg, &no, err)) || prn_filters_copy(p->net, s->net, kp, L, err)) goto done;
        /* rescale=1: every kept batch-normalised filter to its layer's mean
         * norm before the pruning (the same rule for every method). */
        if (st.rescale && prn_filters_rescale(s->net, p->net, NULL, err)) goto done;
        snprintf(tmpdir, sizeof tmpdir, "%s/.train-%d", out, k);
        if (retrain(s, &st, ds, eval, (uint64_t)seed + 1000 + (uint64_t)k, (int)threads, tmpdir, cfgp, err) ||
            measure(s, ds, eval, (int)threads, err))
            goto done;
        s->passed = s->acc.top1 >= st.min_accuracy;
        int total = 0;
        for (int l = 0; l < L; l++) total += s->kept[l];
        fprintf(stderr, "prune roadmap: step %d: %d of %d filters, %llu MACs (%.3fx the base), %s top-1 %.4f "
                        "[%.4f, %.4f] on %llu images: %s\n",
                k, total, r0->filters, (unsigned long long)s->tot.macs, (double)s->tot.macs / (double)s0->tot.macs,
                trn_split_name(eval), s->acc.top1, s->acc.lo, s->acc.hi, (unsigned long long)s->acc.images,
                s->passed ? "passes" : "below min_accuracy");
        if (!s->passed && !road) {
            snprintf(stopped, sizeof stopped, "step %d: %s top-1 %.4f is below min_accuracy %.4f", k,
                     trn_split_name(eval), s->acc.top1, st.min_accuracy);
            break;
        }
        if (!road && s->passed && (double)s->tot.macs <= st.target_macs * (double)s0->tot.macs) {
            snprintf(stopped, sizeof stopped, "step %d: %.4fx the base's MACs reaches target_macs %.4f", k,
                     (double)s->tot.macs / (double)s0->tot.macs, st.target_macs);
            break;
        }
    }
    /* The seed: the last step of the unbroken run of passing steps. */
    int seed_step = 0;
    for (int k = 1; k < nsteps && steps[k].passed && seed_step == k - 1; k++) seed_step = k;

    /* The common order, then every step's model in it. */
    {
        int **pp[RM_MAX_STEPS], *nk[RM_MAX_STEPS];
        for (int k = 0; k < nsteps; k++) pp[k] = steps[k].perm, nk[k] = steps[k].kept;
        if (prn_roadmap_order(nsteps, L, base_n, (int *const *const *)pp, (int *const *)nk, order, err)) goto done;
    }
    j = cJSON_CreateObject();
    cJSON *jl = cJSON_CreateArray(), *js = cJSON_CreateArray(), *jset = cJSON_CreateObject();
    if (!j || !jl || !js || !jset) {
        cJSON_Delete(jl), cJSON_Delete(js), cJSON_Delete(jset);
        goto oom;
    }
    cJSON_AddStringToObject(j, "format", "prune-roadmap");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "method", prn_rank_method_name((prn_rank_method)m));
    cJSON *jb = cJSON_AddObjectToObject(j, "base");
    cJSON_AddStringToObject(jb, "cfg", cfgp);
    cJSON_AddStringToObject(jb, "weights", weights);
    cJSON_AddStringToObject(j, "data", data);
    cJSON_AddNumberToObject(j, "seed", (double)seed);
    cJSON_AddNumberToObject(jset, "step", st.step);
    cJSON_AddNumberToObject(jset, "min_accuracy", st.min_accuracy);
    cJSON_AddNumberToObject(jset, "retrain_batches", (double)st.retrain_batches);
    cJSON_AddNumberToObject(jset, "learning_rate", st.learning_rate);
    if (m == PRN_RANK_TRR) cJSON_AddNumberToObject(jset, "triplets", (double)st.triplets);
    else cJSON_AddNullToObject(jset, "triplets");
    cJSON_AddNumberToObject(jset, "min_filters", (double)st.min_filters);
    cJSON_AddNumberToObject(jset, "max_layer_step", st.max_layer_step);
    cJSON_AddNumberToObject(jset, "min_layer_step", st.min_layer_step);
    cJSON_AddNumberToObject(jset, "max_steps", (double)st.max_steps);
    cJSON_AddNumberToObject(jset, "target_macs", st.target_macs);
    cJSON_AddNumberToObject(jset, "bn_batches", (double)st.bn_batches);
    cJSON_AddBoolToObject(jset, "connected", st.connected != 0);
    cJSON_AddNumberToObject(jset, "eval_every", (double)st.eval_every);
    cJSON_AddBoolToObject(jset, "rescale", st.rescale != 0);
    cJSON_AddNumberToObject(jset, "warmup", (double)st.warmup);
    cJSON_AddStringToObject(jset, "eval_split", trn_split_name(eval));
    if (follow) cJSON_AddStringToObject(jset, "follow", follow);
    else cJSON_AddNullToObject(jset, "follow");
    cJSON_AddItemToObject(j, "settings", jset);
    for (int l = 0; l < L; l++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(jl, o);
        cJSON_AddNumberToObject(o, "layer", r0->layers[l].layer);
        cJSON_AddStringToObject(o, "type", trn_layer_kind_name(r0->layers[l].kind));
        cJSON_AddNumberToObject(o, "filters", base_n[l]);
        cJSON_AddItemToObject(o, "order", prn_json_ints(order[l], base_n[l]));
    }
    cJSON_AddItemToObject(j, "layers", jl);
    for (int k = 0; k < nsteps; k++) {
        rm_step *s = &steps[k];
        /* Filter j of layer l in the stored model: base filter order[l][j],
         * which is filter pos of this step's model. */
        prn_keep kp[256];
        for (int l = 0; l < L; l++) {
            for (int q = 0; q < s->kept[l]; q++) {
                int pos = -1;
                for (int z = 0; z < s->kept[l]; z++)
                    if (s->perm[l][z] == order[l][q]) pos = z;
                keep_buf[l][q] = pos;
            }
            kp[l] = (prn_keep){r0->layers[l].layer, s->kept[l], keep_buf[l]};
        }
        trn_net_opts no;
        prn_net_opts(&no, 0);
        trn_net *pn = trn_net_create(s->cfg, &no, err);
        char name[64], path[4096];
        int bad = !pn || prn_filters_copy(s->net, pn, kp, L, err);
        snprintf(name, sizeof name, "step-%d.cfg", k);
        snprintf(path, sizeof path, "%s/%s", out, name);
        bad = bad || trn_cfg_write(s->cfg, path, err);
        snprintf(name, sizeof name, "step-%d.weights", k);
        snprintf(path, sizeof path, "%s/%s", out, name);
        if (pn && !bad) trn_net_set_seen(pn, trn_net_seen(s->net));
        bad = bad || trn_weights_save(pn, path, err);
        trn_net_free(pn);
        if (bad) goto done;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(js, o);
        cJSON_AddNumberToObject(o, "step", k);
        snprintf(name, sizeof name, "step-%d.cfg", k);
        cJSON_AddStringToObject(o, "cfg", name);
        snprintf(name, sizeof name, "step-%d.weights", k);
        cJSON_AddStringToObject(o, "weights", name);
        cJSON_AddItemToObject(o, "kept", prn_json_ints(s->kept, L));
        int total = 0;
        for (int l = 0; l < L; l++) total += s->kept[l];
        cJSON_AddNumberToObject(o, "filters", total);
        cJSON_AddNumberToObject(o, "macs", (double)s->tot.macs);
        cJSON_AddNumberToObject(o, "params", (double)s->tot.params);
        cJSON_AddNumberToObject(o, "weight_bytes", (double)s->tot.weight_bytes);
        cJSON_AddItemToObject(o, "accuracy", prn_cli_acc_json(&s->acc));
        cJSON_AddItemToObject(o, "test", prn_cli_acc_json(&s->test));
        cJSON_AddBoolToObject(o, "passed", s->passed);
        if (s->curve) {
            cJSON_AddItemToObject(o, "curve", s->curve);
            s->curve = NULL;
        }
    }
    cJSON_AddItemToObject(j, "steps", js);
    cJSON_AddNumberToObject(j, "seed_step", seed_step);
    cJSON_AddStringToObject(j, "stopped", stopped);
    char path[4096];
    snprintf(path, sizeof path, "%s/roadmap.json", out);
    if (prn_cli_write_json(path, j, err) != 0) goto done;
    int seed_filters = 0;
    for (int l = 0; l < L; l++) seed_filters += steps[seed_step].kept[l];
    printf("%s: %s roadmap of %d steps, seed step %d (%d of %d filters, %.3fx the base's MACs, %s top-1 %.4f "
           "[%.4f, %.4f]); %s\n",
           out, prn_rank_method_name((prn_rank_method)m), nsteps, seed_step, seed_filters, r0->filters,
           (double)steps[seed_step].tot.macs / (double)s0->tot.macs, trn_split_name(eval),
           steps[seed_step].acc.top1, steps[seed_step].acc.lo, steps[seed_step].acc.hi, stopped);
    rc = 0;
    goto done;
oom:
    trn_errf(err, "out of memory");
done:
    if (rc != 0 && nsteps > 0) {
        /* Leave nothing behind: the step files written so far, the folder if ours. */
        char rpath[4096];
        for (int k = 0; k < RM_MAX_STEPS; k++) {
            snprintf(rpath, sizeof rpath, "%s/step-%d.cfg", out, k);
            unlink(rpath);
            snprintf(rpath, sizeof rpath, "%s/step-%d.weights", out, k);
            unlink(rpath);
            snprintf(rpath, sizeof rpath, "%s/.train-%d", out, k);
            rmdir(rpath);
        }
        if (made_dir) rmdir(out);
    }
    for (int k = 0; k < RM_MAX_STEPS; k++) step_free(&steps[k], L);
    for (int l = 0; l < L; l++) {
        if (order) free(order[l]);
        if (keep_buf) free(keep_buf[l]);
    }
    free(order);
    free(keep_buf);
    free(base_n);
    free(target);
    cJSON_Delete(j);
    cJSON_Delete(road);
    prn_ranking_free(r);
    prn_ranking_free(r0);
    trn_dataset_close(ds);
    trn_cfg_free(cfg);
    return rc;
}
