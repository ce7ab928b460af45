/*
 * roadmap_build.c: NestDNN's filter pruning roadmap (docs/prune.md, "The
 * pruning roadmap"; `prune roadmap` parses, calls prn_roadmap_build,
 * prints). Step 0 is the base; step k+1 ranks step k's model (TRR or L1),
 * removes the least important filters (prn_roadmap_choose), retrains on the
 * training split and is evaluated on the valid split (the test split
 * without one) and the test split. The iteration ends at the first step
 * below min_accuracy; the last passing step is the seed. Then every step's
 * model is stored with its filters in the roadmap's common order
 * (prn_roadmap_order), so each step is a prefix of the one before, and
 * OUT/roadmap.json is written last.
 */
#include "prn_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RM_EVAL_BATCH 64
#define RM_MAX_LAYERS 256

void prn_roadmap_opts_defaults(prn_roadmap_opts *o)
{
    *o = (prn_roadmap_opts){.step = 0.2, .min_accuracy = 0.5, .learning_rate = 0.01, .max_layer_step = 0.5,
                            .retrain_batches = 100, .triplets = PRN_TRR_TRIPLETS_DEFAULT, .min_filters = 2,
                            .max_steps = 12, .bn_batches = 20, .connected = 1, .threads = 1};
}

int prn_roadmap_set(prn_roadmap_opts *s, const char *kv, trn_err *err)
{
    size_t kl;
    double v;
    if (prn_set_number(kv, &kl, &v, err)) return -1;
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
    else if (KEY("max_steps")) { RANGE(1, PRN_ROADMAP_MAX_STEPS - 1); WHOLE; s->max_steps = (long long)v; }
    else if (KEY("bn_batches")) { RANGE(0, 1e6); WHOLE; s->bn_batches = (long long)v; }
    else if (KEY("connected")) { RANGE(0, 1); WHOLE; s->connected = (long long)v; }
    else if (KEY("eval_every")) { RANGE(0, 1e7); WHOLE; s->eval_every = (long long)v; }
    else if (KEY("rescale")) { RANGE(0, 1); WHOLE; s->rescale = (long long)v; }
    else if (KEY("warmup")) { RANGE(0, 1e7); WHOLE; s->warmup = (long long)v; }
    else if (KEY("seed_epochs")) { RANGE(0, 1e4); s->seed_epochs = v; }
    else
        return trn_errf(err, "--set '%s': unknown key '%.*s' (known: step, min_accuracy, retrain_batches, "
                             "learning_rate, triplets, min_filters, max_layer_step, min_layer_step, max_steps, target_macs, bn_batches, "
                             "connected, eval_every, rescale, warmup, seed_epochs)", kv, (int)kl, kv);
#undef KEY
#undef RANGE
#undef WHOLE
    return 0;
}


/* One progress line to the caller's callback. */
static void say(const prn_roadmap_opts *o, const char *fmt, ...) TRN_PRINTF(2, 3);
static void say(const prn_roadmap_opts *o, const char *fmt, ...)
{
    if (!o->progress) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->progress(o->progress_ctx, line);
}

typedef struct rm_step {
    trn_cfg *cfg;   /* the step's cfg (the base's [net]) */
    trn_net *net;   /* its weights (batch 1, inference), filters in the step's own order */
    int **perm;     /* [ranked layer][j]: the base filter the model's filter j is */
    int *kept;      /* [ranked layer] */
    prn_acc acc, test;
    int passed;
    trn_net_totals tot;
    cJSON *curve;   /* eval_every > 0: [{batch, accuracy, test}] during the retraining */
    long long seed_batches; /* the seed: its retraining to the plateau (seed_epochs), else 0 */
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
    const prn_roadmap_opts *o;
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
    prn_acc a, t;
    trn_net *bn = prn_net_like(c->tc, net, trn_net_batch(net), 0, 0, 1, err);
    trn_net *n = bn && prn_bn_recalibrate(bn, feed_batch, c->feed, c->bn_first, c->bn_batches, err) == 0
                 ? prn_net_like(c->s->cfg, bn, RM_EVAL_BATCH, 1, 0, 1, err) : NULL;
    int rc = !n || prn_evaluate(n, c->ds, c->eval, c->threads, &a, NULL, NULL, err) ||
             prn_evaluate(n, c->ds, TRN_SPLIT_TEST, c->threads, &t, NULL, NULL, err) ? -1 : 0;
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
    cJSON_AddItemToObject(o, "accuracy", prn_acc_json(&a));
    cJSON_AddItemToObject(o, "test", prn_acc_json(&t));
    say(c->o, "prune roadmap:   retraining batch %llu: %s top-1 %.4f, test %.4f", (unsigned long long)b,
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
static int retrain(rm_step *s, const prn_roadmap_opts *set, const trn_dataset *ds, trn_split eval, uint64_t seed,
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
    trn_net *net = rc ? NULL : prn_net_like(tc, s->net, 0, 0, seed, 1, err);
    rm_feed f = {0};
    if (!net) rc = -1;
    if (rc == 0) {
        trn_net_set_seen(net, 0);
        trn_loader_opts lo;
        if (prn_loader_opts(net, cfg_path, trn_net_batch(net), seed, threads, (size_t)256 << 20, &lo, err) ||
            !(f.ld = trn_loader_open(ds, TRN_SPLIT_TRAIN, &lo, err)))
            rc = -1;
    }
    rm_curve cv = {set, s, ds, eval, threads, tc, &f, (uint64_t)set->retrain_batches, (int)set->bn_batches};
    uint64_t c0, n0;
    if (rc == 0 && set->eval_every > 0 && curve_point(&cv, net, &c0, &n0, err)) rc = -1; /* batch 0: just pruned */
    if (rc == 0 && set->retrain_batches > 0) {
        trn_train_opts to = {.next_batch = feed_batch, .batch_ctx = &f, .backup_dir = tmpdir, .base = "step",
                             .validate = set->eval_every > 0 ? curve_point : NULL, .validate_ctx = &cv,
                             .validate_every = (uint64_t)set->eval_every};
        rc = trn_train(net, &to, err) == 0 ? 0 : -1;
        trn_train_backup_remove(tmpdir, "step");
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
    trn_net *n = prn_net_like(s->cfg, s->net, RM_EVAL_BATCH, 1, 0, 1, err);
    int rc = n ? 0 : -1;
    if (rc == 0) rc = prn_evaluate(n, ds, eval, threads, &s->acc, NULL, NULL, err);
    if (rc == 0) {
        if (eval == TRN_SPLIT_TEST) s->test = s->acc;
        else rc = prn_evaluate(n, ds, TRN_SPLIT_TEST, threads, &s->test, NULL, NULL, err);
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


/* A roadmap being built: its inputs, its steps and its buffers. */
typedef struct rm_run {
    const prn_roadmap_opts *o;
    trn_cfg *cfg;
    trn_dataset *ds;
    trn_split eval;
    prn_ranking *r, *r0;      /* the current step's ranking; the base's L1 ranking (layers, counts) */
    cJSON *road;              /* the followed roadmap, or NULL */
    int L, nsteps;
    int *base_n, *target, **order, **keep_buf;
    rm_step steps[PRN_ROADMAP_MAX_STEPS];
    char stopped[512];
} rm_run;

/* Step 0, the base: the data set, the base network, its ranked layers (an
 * L1 ranking costs nothing), the buffers and its accuracy. */
static int open_base(rm_run *u, trn_err *err)
{
    const prn_roadmap_opts *o = u->o;
    if (!(u->cfg = trn_cfg_read(o->cfg, err)) || !(u->ds = trn_dataset_open(o->data, err))) return -1;
    if (!trn_dataset_count(u->ds, TRN_SPLIT_TRAIN) || !trn_dataset_count(u->ds, TRN_SPLIT_TEST))
        return trn_errf(err, "%s: the roadmap needs a train and a test split", o->data);
    u->eval = trn_dataset_count(u->ds, TRN_SPLIT_VALID) ? TRN_SPLIT_VALID : TRN_SPLIT_TEST;
    rm_step *s0 = &u->steps[0];
    if (!(s0->net = prn_load_base(u->cfg, o->weights, 1, err)) || !(s0->cfg = trn_cfg_clone(u->cfg, err))) return -1;
    if ((int)trn_net_outputs(s0->net) != trn_dataset_classes(u->ds))
        return trn_errf(err, "%s has %zu outputs but %s has %d classes: use the data set the base was trained on",
                        o->cfg, trn_net_outputs(s0->net), o->data, trn_dataset_classes(u->ds));
    prn_rank_opts l1 = {.method = PRN_RANK_L1};
    if (!(u->r0 = prn_rank(s0->net, &l1, err))) return -1;
    int L = u->L = u->r0->nlayers;
    if (L > RM_MAX_LAYERS) return trn_errf(err, "more than %d ranked layers", RM_MAX_LAYERS);
    if (o->follow && !(u->road = read_roadmap(o->follow, u->r0, err))) return -1;
    u->base_n = calloc((size_t)L, sizeof *u->base_n);
    u->target = calloc((size_t)L, sizeof *u->target);
    u->order = calloc((size_t)L, sizeof *u->order);
    u->keep_buf = calloc((size_t)L, sizeof *u->keep_buf);
    s0->perm = calloc((size_t)L, sizeof *s0->perm);
    s0->kept = calloc((size_t)L, sizeof *s0->kept);
    if (!u->base_n || !u->target || !u->order || !u->keep_buf || !s0->perm || !s0->kept)
        return trn_errf(err, "out of memory");
    for (int l = 0; l < L; l++) {
        int n = u->base_n[l] = s0->kept[l] = u->r0->layers[l].filters;
        if (!(u->order[l] = malloc((size_t)n * sizeof(int))) || !(u->keep_buf[l] = malloc((size_t)n * sizeof(int))) ||
            !(s0->perm[l] = malloc((size_t)n * sizeof(int))))
            return trn_errf(err, "out of memory");
        for (int f = 0; f < n; f++) s0->perm[l][f] = f;
    }
    if (measure(s0, u->ds, u->eval, o->threads, err)) return -1;
    s0->passed = s0->acc.top1 >= o->min_accuracy;
    u->nsteps = 1;
    say(o, "prune roadmap: step 0 (base): %llu MACs, %s top-1 %.4f [%.4f, %.4f] on %llu images",
        (unsigned long long)s0->tot.macs, trn_split_name(u->eval), s0->acc.top1, s0->acc.lo, s0->acc.hi,
        (unsigned long long)s0->acc.images);
    if (!s0->passed && !u->road)
        return trn_errf(err, "the base's %s top-1 %.4f is below min_accuracy %.4f: lower min_accuracy",
                        trn_split_name(u->eval), s0->acc.top1, o->min_accuracy);
    return trn_mkdir_p(o->out, err) != 0 ? -1 : 0;
}

/* Ranks step k-1's model into u->r; connected=0 leaves the connected
 * layers out of the cross-layer order, so `step` is a fraction of the
 * convolutional filters. */
static int rank_step(rm_run *u, int k, trn_err *err)
{
    const prn_roadmap_opts *o = u->o;
    rm_step *p = &u->steps[k - 1];
    prn_ranking_free(u->r);
    u->r = NULL;
    trn_net *rn = o->method == PRN_RANK_TRR ? prn_net_like(p->cfg, p->net, 48, 1, 0, 1, err) : NULL;
    if (o->method == PRN_RANK_TRR && !rn) return -1;
    u->r = prn_rank_data(rn ? rn : p->net, p->cfg, o->method, u->ds, TRN_SPLIT_TRAIN, o->seed + (uint64_t)k,
                         (uint64_t)o->triplets, PRN_TRR_AT_DEFAULT, PRN_TRR_DISTANCE_DEFAULT, err);
    trn_net_free(rn);
    if (!u->r) return -1;
    if (o->connected) return 0;
    prn_ranking *r = u->r;
    int w = 0, conv = 0;
    for (int i = 0; i < r->filters; i++)
        if (r->layers[r->order[i].layer].kind != TRN_LAYER_CONNECTED) r->order[w++] = r->order[i];
    for (int l = 0; l < r->nlayers; l++)
        if (r->layers[l].kind != TRN_LAYER_CONNECTED) conv += r->layers[l].filters;
    r->filters = w;
    return w == conv ? 0 : trn_errf(err, "internal: %d convolutional filters in the order, %d in the layers", w, conv);
}

/* Step k's model: step k-1's kept filters (u->target, u->keep_buf), in
 * ascending order of that model, copied, rescaled (rescale=1: every kept
 * batch-normalised filter to its layer's mean norm before the pruning),
 * retrained and measured. */
static int prune_step(rm_run *u, int k, trn_err *err)
{
    const prn_roadmap_opts *o = u->o;
    rm_step *p = &u->steps[k - 1], *s = &u->steps[k];
    int L = u->L;
    prn_keep kp[RM_MAX_LAYERS];
    for (int l = 0; l < L; l++) kp[l] = (prn_keep){u->r->layers[l].layer, u->target[l], u->keep_buf[l]};
    if (!(s->perm = calloc((size_t)L, sizeof *s->perm)) || !(s->kept = calloc((size_t)L, sizeof *s->kept)))
        return trn_errf(err, "out of memory");
    u->nsteps = k + 1;
    for (int l = 0; l < L; l++) {
        s->kept[l] = u->target[l];
        if (!(s->perm[l] = malloc((size_t)u->target[l] * sizeof(int)))) return trn_errf(err, "out of memory");
        for (int j = 0; j < u->target[l]; j++) s->perm[l][j] = p->perm[l][u->keep_buf[l][j]];
    }
    if (prn_filters_net(p->cfg, p->net, kp, L, &s->cfg, &s->net, err)) return -1;
    if (o->rescale && prn_filters_rescale(s->net, p->net, NULL, err)) return -1;
    char tmpdir[4096];
    snprintf(tmpdir, sizeof tmpdir, "%s/.train-%d", o->out, k);
    if (retrain(s, o, u->ds, u->eval, o->seed + 1000 + (uint64_t)k, o->threads, tmpdir, o->cfg, err) ||
        measure(s, u->ds, u->eval, o->threads, err))
        return -1;
    s->passed = s->acc.top1 >= o->min_accuracy;
    return 0;
}

/* Step k: 1 when made (the iteration goes on), 0 when the iteration ends
 * before or at it (u->stopped says why), -1 with err. */
static int next_step(rm_run *u, int k, trn_err *err)
{
    const prn_roadmap_opts *o = u->o;
    if (u->road) {
        int got = follow_counts(u->road, k, u->r0, u->target, err);
        if (got <= 0) {
            snprintf(u->stopped, sizeof u->stopped, "the followed roadmap %s has %d steps", o->follow, k);
            return got;
        }
    } else if (k > o->max_steps) {
        snprintf(u->stopped, sizeof u->stopped, "max_steps (%lld) reached", o->max_steps);
        return 0;
    }
    if (k >= PRN_ROADMAP_MAX_STEPS) {
        snprintf(u->stopped, sizeof u->stopped, "%d steps reached (the most a roadmap holds)", PRN_ROADMAP_MAX_STEPS - 1);
        return 0;
    }
    if (rank_step(u, k, err)) return -1;
    int removed = prn_roadmap_choose(u->r, o->step, (int)o->min_filters, o->max_layer_step, o->min_layer_step,
                                     u->road ? u->target : NULL, u->keep_buf, u->target, err);
    if (removed < 0) return -1;
    if (removed == 0) {
        snprintf(u->stopped, sizeof u->stopped, "step %d: no filter can be removed (min_filters %lld)", k, o->min_filters);
        return 0;
    }
    if (prune_step(u, k, err)) return -1;
    const rm_step *s = &u->steps[k], *s0 = &u->steps[0];
    int total = 0;
    for (int l = 0; l < u->L; l++) total += s->kept[l];
    double ratio = (double)s->tot.macs / (double)s0->tot.macs;
    say(o, "prune roadmap: step %d: %d of %d filters, %llu MACs (%.3fx the base), %s top-1 %.4f [%.4f, %.4f] on %llu "
           "images: %s",
        k, total, u->r0->filters, (unsigned long long)s->tot.macs, ratio, trn_split_name(u->eval), s->acc.top1,
        s->acc.lo, s->acc.hi, (unsigned long long)s->acc.images, s->passed ? "passes" : "below min_accuracy");
    if (!s->passed && !u->road) {
        snprintf(u->stopped, sizeof u->stopped, "step %d: %s top-1 %.4f is below min_accuracy %.4f", k,
                 trn_split_name(u->eval), s->acc.top1, o->min_accuracy);
        return 0;
    }
    if (!u->road && s->passed && ratio <= o->target_macs) {
        snprintf(u->stopped, sizeof u->stopped, "step %d: %.4fx the base's MACs reaches target_macs %.4f", k, ratio,
                 o->target_macs);
        return 0;
    }
    return 1;
}

/* The seed: the last step of the unbroken run of passing steps. */
static int seed_of(const rm_run *u)
{
    int seed_step = 0;
    for (int k = 1; k < u->nsteps && u->steps[k].passed && seed_step == k - 1; k++) seed_step = k;
    return seed_step;
}

/* seed_epochs (NestDNN 3.4.2: the seed is retrained to convergence before
 * the model grows from it): the seed step's model, as its step's
 * retraining left it, retrains seed_epochs passes over the training images
 * (the step's schedule stretched over that length: learning_rate, poly
 * power 2, warmup; then the batch-norm re-estimation) and is measured
 * again. */
static int retrain_seed(rm_run *u, trn_err *err)
{
    const prn_roadmap_opts *o = u->o;
    int k = seed_of(u);
    if (o->seed_epochs <= 0 || k == 0) return 0;
    rm_step *s = &u->steps[k];
    prn_roadmap_opts so = *o;
    so.retrain_batches = prn_epochs_batches(s->cfg, u->ds, o->seed_epochs);
    so.eval_every = 0;
    char tmpdir[4096];
    snprintf(tmpdir, sizeof tmpdir, "%s/.train-%d", o->out, k);
    if (retrain(s, &so, u->ds, u->eval, o->seed + 2000 + (uint64_t)k, o->threads, tmpdir, o->cfg, err) ||
        measure(s, u->ds, u->eval, o->threads, err))
        return -1;
    s->seed_batches = so.retrain_batches;
    say(o, "prune roadmap: seed step %d retrained %lld batches (%g epochs): %s top-1 %.4f [%.4f, %.4f]", k,
        so.retrain_batches, o->seed_epochs, trn_split_name(u->eval), s->acc.top1, s->acc.lo, s->acc.hi);
    return 0;
}

/* roadmap.json's "settings". */
static cJSON *settings_json(const rm_run *u)
{
    const prn_roadmap_opts *o = u->o;
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddNumberToObject(j, "step", o->step);
    cJSON_AddNumberToObject(j, "min_accuracy", o->min_accuracy);
    cJSON_AddNumberToObject(j, "retrain_batches", (double)o->retrain_batches);
    cJSON_AddNumberToObject(j, "learning_rate", o->learning_rate);
    if (o->method == PRN_RANK_TRR) cJSON_AddNumberToObject(j, "triplets", (double)o->triplets);
    else cJSON_AddNullToObject(j, "triplets");
    cJSON_AddNumberToObject(j, "min_filters", (double)o->min_filters);
    cJSON_AddNumberToObject(j, "max_layer_step", o->max_layer_step);
    cJSON_AddNumberToObject(j, "min_layer_step", o->min_layer_step);
    cJSON_AddNumberToObject(j, "max_steps", (double)o->max_steps);
    cJSON_AddNumberToObject(j, "target_macs", o->target_macs);
    cJSON_AddNumberToObject(j, "bn_batches", (double)o->bn_batches);
    cJSON_AddBoolToObject(j, "connected", o->connected != 0);
    cJSON_AddNumberToObject(j, "eval_every", (double)o->eval_every);
    cJSON_AddBoolToObject(j, "rescale", o->rescale != 0);
    cJSON_AddNumberToObject(j, "warmup", (double)o->warmup);
    cJSON_AddNumberToObject(j, "seed_epochs", o->seed_epochs);
    cJSON_AddStringToObject(j, "eval_split", trn_split_name(u->eval));
    if (o->follow) cJSON_AddStringToObject(j, "follow", o->follow);
    else cJSON_AddNullToObject(j, "follow");
    return j;
}

/* roadmap.json's head: format, method, base, data, seed, settings and the
 * ranked layers with their common order. */
static cJSON *roadmap_head(const rm_run *u)
{
    const prn_roadmap_opts *o = u->o;
    cJSON *j = cJSON_CreateObject(), *jl = cJSON_CreateArray(), *jset = settings_json(u);
    if (!j || !jl || !jset) {
        cJSON_Delete(j), cJSON_Delete(jl), cJSON_Delete(jset);
        return NULL;
    }
    cJSON_AddStringToObject(j, "format", "prune-roadmap");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "method", prn_rank_method_name(o->method));
    cJSON *jb = cJSON_AddObjectToObject(j, "base");
    cJSON_AddStringToObject(jb, "cfg", o->cfg);
    cJSON_AddStringToObject(jb, "weights", o->weights);
    cJSON_AddStringToObject(j, "data", o->data);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    cJSON_AddItemToObject(j, "settings", jset);
    for (int l = 0; l < u->L; l++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(jl, x);
        cJSON_AddNumberToObject(x, "layer", u->r0->layers[l].layer);
        cJSON_AddStringToObject(x, "type", trn_layer_kind_name(u->r0->layers[l].kind));
        cJSON_AddNumberToObject(x, "filters", u->base_n[l]);
        cJSON_AddItemToObject(x, "order", prn_json_ints(u->order[l], u->base_n[l]));
    }
    cJSON_AddItemToObject(j, "layers", jl);
    return j;
}

/* Step k's model with its filters in the common order, written to
 * OUT/step-K.cfg and .weights. */
static int write_step(rm_run *u, int k, trn_err *err)
{
    const rm_step *s = &u->steps[k];
    prn_keep kp[RM_MAX_LAYERS];
    for (int l = 0; l < u->L; l++) {
        /* filter q of layer l in the stored model: base filter order[l][q],
         * which is filter pos of this step's model */
        for (int q = 0; q < s->kept[l]; q++) {
            int pos = -1;
            for (int z = 0; z < s->kept[l]; z++)
                if (s->perm[l][z] == u->order[l][q]) pos = z;
            u->keep_buf[l][q] = pos;
        }
        kp[l] = (prn_keep){u->r0->layers[l].layer, s->kept[l], u->keep_buf[l]};
    }
    trn_net_opts no;
    prn_net_opts(&no, 0);
    trn_net *pn = trn_net_create(s->cfg, &no, err);
    char path[4096];
    int bad = !pn || prn_filters_copy(s->net, pn, kp, u->L, err);
    snprintf(path, sizeof path, "%s/step-%d.cfg", u->o->out, k);
    bad = bad || trn_cfg_write(s->cfg, path, err);
    snprintf(path, sizeof path, "%s/step-%d.weights", u->o->out, k);
    if (pn && !bad) trn_net_set_seen(pn, trn_net_seen(s->net));
    bad = bad || trn_weights_save(pn, path, err);
    trn_net_free(pn);
    return bad ? -1 : 0;
}

/* roadmap.json's entry of step k (its curve moved into it). */
static cJSON *step_json(rm_run *u, int k)
{
    rm_step *s = &u->steps[k];
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    char name[64];
    cJSON_AddNumberToObject(o, "step", k);
    snprintf(name, sizeof name, "step-%d.cfg", k);
    cJSON_AddStringToObject(o, "cfg", name);
    snprintf(name, sizeof name, "step-%d.weights", k);
    cJSON_AddStringToObject(o, "weights", name);
    cJSON_AddItemToObject(o, "kept", prn_json_ints(s->kept, u->L));
    int total = 0;
    for (int l = 0; l < u->L; l++) total += s->kept[l];
    cJSON_AddNumberToObject(o, "filters", total);
    cJSON_AddNumberToObject(o, "macs", (double)s->tot.macs);
    cJSON_AddNumberToObject(o, "params", (double)s->tot.params);
    cJSON_AddNumberToObject(o, "weight_bytes", (double)s->tot.weight_bytes);
    cJSON_AddItemToObject(o, "accuracy", prn_acc_json(&s->acc));
    cJSON_AddItemToObject(o, "test", prn_acc_json(&s->test));
    cJSON_AddBoolToObject(o, "passed", s->passed);
    if (s->seed_batches > 0) cJSON_AddNumberToObject(o, "seed_batches", (double)s->seed_batches);
    if (s->curve) {
        cJSON_AddItemToObject(o, "curve", s->curve);
        s->curve = NULL;
    }
    return o;
}

/* The common order, every step's files, then OUT/roadmap.json; the
 * summary. */
static int write_roadmap(rm_run *u, prn_roadmap_summary *sum, trn_err *err)
{
    int seed_step = seed_of(u);
    int **pp[PRN_ROADMAP_MAX_STEPS], *nk[PRN_ROADMAP_MAX_STEPS];
    for (int k = 0; k < u->nsteps; k++) pp[k] = u->steps[k].perm, nk[k] = u->steps[k].kept;
    if (prn_roadmap_order(u->nsteps, u->L, u->base_n, (int *const *const *)pp, (int *const *)nk, u->order, err))
        return -1;
    cJSON *j = roadmap_head(u), *js = cJSON_CreateArray();
    int rc = j && js ? 0 : trn_errf(err, "out of memory");
    for (int k = 0; rc == 0 && k < u->nsteps; k++) {
        cJSON *o = NULL;
        if (write_step(u, k, err)) rc = -1;
        else if (!(o = step_json(u, k))) rc = trn_errf(err, "out of memory");
        else cJSON_AddItemToArray(js, o);
    }
    char path[4096];
    if (rc == 0) {
        cJSON_AddItemToObject(j, "steps", js);
        js = NULL;
        cJSON_AddNumberToObject(j, "seed_step", seed_step);
        cJSON_AddStringToObject(j, "stopped", u->stopped);
        snprintf(path, sizeof path, "%s/roadmap.json", u->o->out);
        rc = prn_write_json(path, j, err);
    }
    cJSON_Delete(js);
    cJSON_Delete(j);
    if (rc) return -1;
    const rm_step *s = &u->steps[seed_step];
    *sum = (prn_roadmap_summary){.steps = u->nsteps, .seed_step = seed_step, .filters = u->r0->filters,
                                 .seed_macs_ratio = (double)s->tot.macs / (double)u->steps[0].tot.macs,
                                 .seed_acc = s->acc};
    for (int l = 0; l < u->L; l++) sum->seed_filters += s->kept[l];
    snprintf(sum->stopped, sizeof sum->stopped, "%s", u->stopped);
    return 0;
}

/* Leaves nothing behind: the step files written so far, the folder if ours. */
static void remove_partial(const char *out, int made_dir)
{
    char p[4096];
    for (int k = 0; k < PRN_ROADMAP_MAX_STEPS; k++) {
        snprintf(p, sizeof p, "%s/step-%d.cfg", out, k);
        unlink(p);
        snprintf(p, sizeof p, "%s/step-%d.weights", out, k);
        unlink(p);
        snprintf(p, sizeof p, "%s/.train-%d", out, k);
        rmdir(p);
    }
    if (made_dir) rmdir(out);
}

static void run_free(rm_run *u)
{
    for (int k = 0; k < PRN_ROADMAP_MAX_STEPS; k++) step_free(&u->steps[k], u->L);
    for (int l = 0; l < u->L; l++) {
        if (u->order) free(u->order[l]);
        if (u->keep_buf) free(u->keep_buf[l]);
    }
    free(u->order);
    free(u->keep_buf);
    free(u->base_n);
    free(u->target);
    cJSON_Delete(u->road);
    prn_ranking_free(u->r);
    prn_ranking_free(u->r0);
    trn_dataset_close(u->ds);
    trn_cfg_free(u->cfg);
}

int prn_roadmap_build(const prn_roadmap_opts *o, prn_roadmap_summary *sum, trn_err *err)
{
    if (!o || !o->cfg || !o->weights || !o->data || !o->out || !sum)
        return trn_errf(err, "prn_roadmap_build: cfg, weights, data, out and a summary are needed");
    rm_run *u = calloc(1, sizeof *u);
    if (!u) return trn_errf(err, "out of memory");
    u->o = o;
    int made_dir = access(o->out, F_OK) != 0, rc = open_base(u, err), more = 1;
    for (int k = 1; rc == 0 && more > 0; k++)
        if ((more = next_step(u, k, err)) < 0) rc = -1;
    if (rc == 0) rc = retrain_seed(u, err);
    if (rc == 0) rc = write_roadmap(u, sum, err);
    if (rc != 0 && u->nsteps > 0) remove_partial(o->out, made_dir);
    run_free(u);
    free(u);
    return rc;
}
