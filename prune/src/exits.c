/*
 * exits.c: FlexDNN's early exits (the thesis, chapter 4, docs/papers.md;
 * docs/design.md and docs/targets.md section 2): exit branch search,
 * per-exit lossless thresholds, the insertion plan, the alpha profile, and
 * the BranchyNet-style baseline (prune/README.md, Early exits).
 *
 * The trunk is the trained base, or (trunk_prune) the base pruned by
 * collective importance (sbs.c, thesis 4.3.1) to trunk_macs of its MACs
 * and retrained distilled from the base (prune_trunk below). It is frozen
 * while the exits train: every branch reads a trunk layer's output and
 * trains on it alone, so the final exit is the trunk, bit for bit. All
 * branches of a round train together: one trunk forward per training
 * batch feeds every branch. Costs and savings are against the original
 * base; all exits together may cost at most exit_cap of its MACs (a branch
 * above that is shrunk whatever its exit rate, and the insertion plan
 * removes exits until the exits fit).
 *
 * Exit search (thesis 4.3.2.2, top-down): at every candidate location
 * (each trunk layer with a spatial output, up to the last one) an
 * over-parameterised branch: a max-pool down to pool_to x pool_to, then
 * `layers` 3x3 convolutions (batch-normalised, relu) of width, 2 width,
 * ... filters, a connected classifier and a softmax. Stage 3 shrinks it:
 * convolution layers are removed from the end while the branch's exit rate
 * (the share of valid images it answers at its own lossless threshold, as
 * the only exit) stays within `tolerance` of the best seen, then every
 * convolution's filters are halved on the same rule. Each shrink keeps the
 * surviving layers' weights (their first filters: prn_copy_layers) and
 * fine-tunes. Approximations, named: the thesis's M exits per layer over
 * ranked filter prefixes and its rank-weighted dropout (Stage 1-2) are not
 * done (one branch per location, trained plainly, optionally distilled
 * from the trunk's output); filter pruning halves all filters of a branch
 * at once and keeps the first ones (not the lowest-ranked first).
 *
 * Thresholds (thesis 4.3.2.3): exits are evaluated in trunk order; at
 * each, among the valid images that reach it, sorted by confidence, the
 * largest top share whose answers lose nothing against the trunk's own
 * answers on the same images, judged by the labels with a margin
 * (lossless_thresholds), exits: T_lossless is the confidence of the first
 * image left out (Conf > T exits), never below min_threshold.
 *
 * Insertion plan (thesis 4.3.3, with docs/targets.md's erratum: F, not N, and
 * G_j): from all exits, the exit with the lowest Q_j = G_j / C_j is
 * removed, C_j = F (1 - cr_i) CE_j (the frames reaching j times its cost),
 * G_j = F (cr_j - cr_i) CB_j (the frames leaving at j times the trunk cost
 * from j to the next exit, or to the end); cr is re-measured (thresholds
 * recomputed) after every removal; the loop stops when removing the exit
 * would increase the expected MACs per input (an equal cost removes it: a
 * smaller model for the same compute).
 */
#include "prn_impl.h"
#include "techniques.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void prn_exits_opts_defaults(prn_exits_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 64;
    o->stage1 = 400;
    o->finetune = 150;
    o->learning_rate = 0.05f;
    o->momentum = 0.9f;
    o->decay = 0.0005f;
    o->kd = 0.5f;
    o->width = 32;
    o->layers = 2;
    o->pool_to = 4;
    o->tolerance = 0.02f;
    o->trunk_prune = 0;
    o->trunk_macs = 0.6;
    o->trunk_tolerance = 0.01;
    o->trunk_retrain = 400;
    o->trunk_lr = 0.02f;
    o->trunk_kd = 0.5f;
    prn_sbs_opts_defaults(&o->sbs);
    o->exit_cap = 0.05;
    o->min_threshold = 0.5f;
    o->threshold_z = 1;
    o->anneal = 1;
    o->same_budget = 1;
}

int prn_exits_opts_set(prn_exits_opts *o, const char *kv, trn_err *err)
{
    const char *eq = strchr(kv, '=');
    if (!eq) return trn_errf(err, "--set %s: give key=value", kv);
    size_t k = (size_t)(eq - kv);
    const char *v = eq + 1;
    if (k == strlen("confidence") && strncmp(kv, "confidence", k) == 0) {
        if (trn_conf_measure_parse(v, &o->confidence) != 0)
            return trn_errf(err, "--set %s: give confidence=entropy (the default: 1 + sum_c y_c log y_c / log C), "
                            "max (the top probability) or margin (the top less the second)", kv);
        return 0;
    }
    char *end;
    double d = strtod(v, &end);
    if (end == v || *end) return trn_errf(err, "--set %s: '%s' is not a number", kv, v);
#define KEY(name) (k == strlen(name) && strncmp(kv, name, k) == 0)
#define INT_IN(lo, hi) (d == floor(d) && d >= (lo) && d <= (hi))
    if (KEY("batch") && INT_IN(1, 4096)) o->batch = (int)d;
    else if (KEY("stage1") && INT_IN(1, 1000000)) o->stage1 = (int)d;
    else if (KEY("finetune") && INT_IN(0, 1000000)) o->finetune = (int)d;
    else if (KEY("learning_rate") && d > 0 && d < 10) o->learning_rate = (float)d;
    else if (KEY("momentum") && d >= 0 && d < 1) o->momentum = (float)d;
    else if (KEY("decay") && d >= 0 && d < 1) o->decay = (float)d;
    else if (KEY("kd") && d >= 0 && d <= 1) o->kd = (float)d;
    else if (KEY("width") && INT_IN(1, 4096)) o->width = (int)d;
    else if (KEY("layers") && INT_IN(0, 4)) o->layers = (int)d;
    else if (KEY("pool_to") && INT_IN(1, 64)) o->pool_to = (int)d;
    else if (KEY("tolerance") && d >= 0 && d <= 1) o->tolerance = (float)d;
    else if (KEY("branchynet") && INT_IN(0, 1)) o->branchynet = (int)d;
    else if (KEY("trunk_prune") && INT_IN(0, 2)) o->trunk_prune = (int)d;
    else if (KEY("trunk_macs") && d >= 0 && d <= 1) o->trunk_macs = d;
    else if (KEY("trunk_tolerance") && d >= 0 && d <= 1) o->trunk_tolerance = d;
    else if (KEY("trunk_retrain") && INT_IN(0, 1000000)) o->trunk_retrain = (int)d;
    else if (KEY("trunk_lr") && d > 0 && d < 10) o->trunk_lr = (float)d;
    else if (KEY("trunk_kd") && d >= 0 && d <= 1) o->trunk_kd = (float)d;
    else if (KEY("trunk_compare_l1") && INT_IN(0, 1)) o->trunk_compare_l1 = (int)d;
    else if (KEY("sbs_images") && INT_IN(1, 1000000)) o->sbs.images = (int)d;
    else if (KEY("sbs_epochs") && INT_IN(1, 1000)) o->sbs.epochs = (int)d;
    else if (KEY("sbs_first_epochs") && INT_IN(1, 1000)) o->sbs.first_epochs = (int)d;
    else if (KEY("sbs_refit") && INT_IN(0, 1000)) o->sbs.refit = (int)d;
    else if (KEY("sbs_drop") && INT_IN(1, 4096)) o->sbs.drop = (int)d;
    else if (KEY("sbs_stop") && d > 0 && d <= 1) o->sbs.stop = d;
    else if (KEY("exit_cap") && d >= 0 && d <= 10) o->exit_cap = d;
    else if (KEY("min_threshold") && d >= 0 && d < 1) o->min_threshold = (float)d;
    else if (KEY("threshold_z") && d >= 0 && d <= 10) o->threshold_z = (float)d;
    else if (KEY("anneal") && INT_IN(0, 1)) o->anneal = (int)d;
    else if (KEY("same_budget") && INT_IN(0, 1)) o->same_budget = (int)d;
    else
        return trn_errf(err, "--set %s: unknown key or value out of range (keys: batch 1..4096, stage1 >= 1, "
                        "finetune >= 0, learning_rate (0,10), momentum [0,1), decay [0,1), kd [0,1], width "
                        "1..4096, layers 0..4, pool_to 1..64, tolerance [0,1], branchynet 0|1, trunk_prune "
                        "0|1|2, trunk_macs [0,1], trunk_tolerance [0,1], trunk_retrain >= 0, trunk_lr (0,10), "
                        "trunk_kd [0,1], trunk_compare_l1 0|1, sbs_images >= 1, sbs_epochs 1..1000, "
                        "sbs_first_epochs 1..1000, sbs_refit 0..1000, sbs_drop >= 1, sbs_stop (0,1], exit_cap "
                        "[0,10], min_threshold [0,1), threshold_z [0,10], anneal 0|1, same_budget 0|1, confidence "
                        "entropy|max|margin)", kv);
#undef KEY
#undef INT_IN
    return 0;
}

/* ---- one branch ------------------------------------------------------------ */

typedef struct branch {
    int at;          /* trunk layer */
    int pool;        /* max-pool size = stride (1: none) */
    int layers;      /* 3x3 convolutions */
    int width;       /* filters of the first; the k-th has width << k */
    trn_exits *x;    /* one exit: the branch, training network (batch B) */
    uint64_t macs;   /* of the branch alone */
    /* evaluation on a split: confidence and top-1 class per image */
    float *conf;
    int *pred;
    float *probs;    /* (n, classes) when kept */
    double rate;     /* exit rate as the only exit, on valid */
    int trained;     /* batches */
} branch;

static const char *branch_desc(const branch *b, char *buf, size_t size)
{
    snprintf(buf, size, "at %d: %s%d conv (%d..%d filters), %llu MACs", b->at, b->pool > 1 ? "pool, " : "",
             b->layers, b->layers ? b->width : 0, b->layers ? b->width << (b->layers - 1) : 0,
             (unsigned long long)b->macs);
    return buf;
}

/* The [exit] section and the branch's layers, as cfg text. */
static char *branch_text(const branch *b, int classes, float threshold, trn_conf_measure m)
{
    char *s = NULL;
    if (prn_appendf(&s, "[exit]\nat=%d\nthreshold=%.9g\n", b->at, threshold)) return NULL;
    if (m != TRN_CONF_ENTROPY && prn_appendf(&s, "confidence=%s\n", trn_conf_measure_name(m))) return NULL;
    if (b->pool > 1 && prn_appendf(&s, "[maxpool]\nsize=%d\nstride=%d\n", b->pool, b->pool)) return NULL;
    for (int k = 0; k < b->layers; k++)
        if (prn_appendf(&s, "[convolutional]\nbatch_normalize=1\nfilters=%d\nsize=3\nstride=1\npad=1\n"
                        "activation=relu\n", b->width << k))
            return NULL;
    if (prn_appendf(&s, "[connected]\noutput=%d\nactivation=linear\n[softmax]\n", classes)) return NULL;
    return s;
}

/* Builds b->x (batch `batch`, training buffers) with weights drawn from
 * seed, then copied from `from` where shapes allow (NULL: none); it will
 * train `batches` steps (with anneal: its rate decays to 0 over them,
 * poly power 2; else constant). */
static int branch_build(branch *b, const trn_net *trunk, const prn_exits_opts *o,
                        const branch *from, uint64_t seed, float lr, int batches, trn_err *err)
{
    int classes = (int)trn_net_outputs(trunk);
    char *body = branch_text(b, classes, 1, o->confidence);
    /* distillation from the trunk's output (temperature 1: the trunk's own
     * softmax); the teacher keys are nominal, the caller hands the targets */
    char *kd = o->kd > 0 ? prn_strdupf("distill_alpha=%g\ndistill_temperature=1\ndistill_cfg=%s\n"
                                       "distill_weights=trunk\n", o->kd, "trunk")
                         : prn_strdupf("%s", "");
    char *sched = o->anneal && batches > 0 ? prn_strdupf("policy=poly\npower=2\nmax_batches=%d\n", batches)
                                           : prn_strdupf("%s", "");
    char *text = body && kd && sched
                     ? prn_strdupf("[net]\nbatch=%d\nlearning_rate=%g\nmomentum=%g\ndecay=%g\n%s%s%s", o->batch, lr,
                                   o->momentum, o->decay, sched, kd, body)
                     : NULL;
    free(body);
    free(kd);
    free(sched);
    if (!text) return trn_errf(err, "out of memory");
    trn_cfg *c = trn_cfg_parse(text, strlen(text), "exit-branch", err);
    free(text);
    if (!c) return -1;
    trn_net_opts no;
    trn_net_opts_defaults(&no);
    no.seed = seed;
    b->x = trn_exits_create(trunk, c, &no, err);
    trn_cfg_free(c);
    if (!b->x) return -1;
    trn_net *n = trn_exit_net(b->x, 0);
    trn_net_totals t;
    trn_net_get_totals(n, &t);
    b->macs = t.macs;
    if (from) {
        const trn_net *src = trn_exit_net(from->x, 0);
        int ns = trn_net_layers(src), map[64];
        if (ns > 64) return trn_errf(err, "exit branch too deep");
        /* exit, [pool], convs..., connected, softmax: the convolutions and
         * the head keep their place from the end of the common prefix */
        int sp = from->pool > 1, dp = b->pool > 1;
        for (int i = 0; i < ns; i++) map[i] = -1;
        map[0] = 0;
        if (sp && dp) map[1] = 1;
        for (int k = 0; k < from->layers && k < b->layers; k++) map[1 + sp + k] = 1 + dp + k;
        map[ns - 2] = trn_net_layers(n) - 2;
        map[ns - 1] = trn_net_layers(n) - 1;
        cJSON *j = prn_copy_layers(src, n, map, err);
        if (!j) return -1;
        cJSON_Delete(j);
    }
    return 0;
}

static void branch_free(branch *b)
{
    trn_exits_free(b->x);
    free(b->conf);
    free(b->pred);
    free(b->probs);
    memset(b, 0, sizeof *b);
}

/* ---- training and evaluation ------------------------------------------------ */

/* Trains branches bs[0..n) together from step `step0` of the training
 * stream, one trunk forward per batch: each for `batches` steps, or (each
 * not NULL) branch k for each[k] <= batches steps, the first ones. */
static int train_branches(trn_net *trunk, branch **bs, int n, int batches, const int *each, uint64_t step0,
                          const prn_exits_opts *o, float *x, float *y, trn_err *err)
{
    for (int s = 0; s < batches; s++) {
        if (o->train(o->train_ctx, step0 + (uint64_t)s, x, y, err) != 0) return -1;
        if (trn_net_forward(trunk, x, err) != 0) return -1;
        const float *q = trn_net_output(trunk);
        for (int k = 0; k < n; k++) {
            if (each && s >= each[k]) continue;
            trn_net *b = trn_exit_net(bs[k]->x, 0);
            if (o->kd > 0) trn_net_set_soft_targets(b, q);
            float loss;
            if (trn_net_train_step(b, trn_net_layer_output(trunk, bs[k]->at), y, &loss, err) != 0)
                return trn_err_prefix(err, "exit at layer %d", bs[k]->at);
            trn_net_set_soft_targets(b, NULL);
        }
    }
    for (int k = 0; k < n; k++) bs[k]->trained += each ? each[k] : batches;
    return 0;
}

/* Evaluates the trunk and branches on n images X (labels Y): per branch
 * conf/pred (and probs when keep), the trunk's pred (and probs). The
 * trunk and branches have batch B; the last partial batch is padded. */
typedef struct split_eval {
    size_t n;
    int *label;
    int *final_pred;
    float *final_probs; /* (n, classes) */
} split_eval;

static int evaluate(trn_net *trunk, branch **bs, int nb, const float *X, const int *Y, size_t n, int keep,
                    split_eval *se, trn_err *err)
{
    int B = trn_net_batch(trunk), C = (int)trn_net_outputs(trunk);
    size_t in = trn_net_inputs(trunk);
    float *x = calloc((size_t)B * in, sizeof *x);
    se->n = n;
    se->label = malloc(n * sizeof *se->label);
    se->final_pred = malloc(n * sizeof *se->final_pred);
    se->final_probs = malloc(n * (size_t)C * sizeof *se->final_probs);
    if (!x || !se->label || !se->final_pred || !se->final_probs) goto oom;
    for (int k = 0; k < nb; k++) {
        free(bs[k]->conf);
        free(bs[k]->pred);
        free(bs[k]->probs);
        bs[k]->conf = malloc(n * sizeof *bs[k]->conf);
        bs[k]->pred = malloc(n * sizeof *bs[k]->pred);
        bs[k]->probs = keep ? malloc(n * (size_t)C * sizeof *bs[k]->probs) : NULL;
        if (!bs[k]->conf || !bs[k]->pred || (keep && !bs[k]->probs)) goto oom;
    }
    memcpy(se->label, Y, n * sizeof *Y);
    for (size_t i0 = 0; i0 < n; i0 += (size_t)B) {
        size_t m = n - i0 < (size_t)B ? n - i0 : (size_t)B;
        memset(x, 0, (size_t)B * in * sizeof *x);
        memcpy(x, X + i0 * in, m * in * sizeof *x);
        if (trn_net_forward(trunk, x, err) != 0) goto fail;
        const float *p = trn_net_output(trunk);
        for (size_t i = 0; i < m; i++) {
            se->final_pred[i0 + i] = trn_argmax(p + i * C, C);
            memcpy(se->final_probs + (i0 + i) * C, p + i * C, (size_t)C * sizeof *p);
        }
        for (int k = 0; k < nb; k++) {
            trn_net *b = trn_exit_net(bs[k]->x, 0);
            if (trn_net_forward(b, trn_net_layer_output(trunk, bs[k]->at), err) != 0) goto fail;
            const float *q = trn_net_output(b);
            for (size_t i = 0; i < m; i++) {
                bs[k]->conf[i0 + i] = trn_confidence_by(trn_exit_measure(bs[k]->x, 0), q + i * C, C);
                bs[k]->pred[i0 + i] = trn_argmax(q + i * C, C);
                if (keep) memcpy(bs[k]->probs + (i0 + i) * C, q + i * C, (size_t)C * sizeof *q);
            }
        }
    }
    free(x);
    return 0;
oom:
    trn_errf(err, "out of memory");
fail:
    free(x);
    return -1;
}

static void split_eval_free(split_eval *se)
{
    free(se->label);
    free(se->final_pred);
    free(se->final_probs);
    memset(se, 0, sizeof *se);
}

/* ---- thresholds, plans and expected MACs ------------------------------------ */

typedef struct order_item {
    float conf;
    size_t i;
} order_item;

static int by_conf_desc(const void *a, const void *b)
{
    const order_item *x = a, *y = b;
    if (x->conf != y->conf) return x->conf < y->conf ? 1 : -1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Lossless thresholds of the exits plan[0..np) (in trunk order) on se:
 * thr[j]. Among the images reaching exit j, sorted by its confidence, the
 * longest top share whose answers are "lossless" against the trunk's,
 * both judged by the labels: with a images the exit gets right and the
 * trunk wrong and b the reverse, a - b >= z sqrt(a + b) (z = 0: the plain
 * a - b >= 0; z > 0 asks for a margin of z standard deviations of the
 * difference, so that the longest share picked on the valid split is not
 * only a lucky one). Only shares whose images all have Conf > floor count,
 * and T >= floor: no exit answers everything, and alpha always moves it. */
static int lossless_thresholds(branch **plan, int np, const split_eval *se, const prn_exits_opts *o, float *thr,
                               trn_err *err)
{
    const float g_floor = o->min_threshold, g_z = o->threshold_z;
    size_t n = se->n;
    unsigned char *done = calloc(n ? n : 1, 1);
    order_item *it = malloc((n ? n : 1) * sizeof *it);
    if (!done || !it) {
        free(done);
        free(it);
        return trn_errf(err, "out of memory");
    }
    for (int j = 0; j < np; j++) {
        const branch *b = plan[j];
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!done[i]) it[m++] = (order_item){b->conf[i], i};
        qsort(it, m, sizeof *it, by_conf_desc);
        long a = 0, bb = 0;
        size_t best = 0;
        for (size_t k = 0; k < m && it[k].conf > g_floor; k++) {
            size_t i = it[k].i;
            int e = b->pred[i] == se->label[i], t = se->final_pred[i] == se->label[i];
            a += e && !t;
            bb += t && !e;
            if ((double)(a - bb) >= (double)g_z * sqrt((double)(a + bb))) best = k + 1;
        }
        /* exits: Conf > T; T is the first left out's confidence (ties left
         * out with it), never below the floor */
        thr[j] = best < m && it[best].conf > g_floor ? it[best].conf : g_floor;
        for (size_t i = 0; i < n; i++)
            if (!done[i] && b->conf[i] > thr[j]) done[i] = 1;
    }
    free(done);
    free(it);
    return 0;
}

/* The trunk's MACs of layers 0..i (prefix[i]); prefix[-1] = 0. */
typedef struct plan_eval {
    double expected_macs; /* per input, exits' cost included */
    double exits_macs;    /* per input: the part spent in exit branches */
    double top1;
    uint64_t correct;
    double *rate;         /* per exit: share answering there (np + 1: the trunk last) */
} plan_eval;

/* Applies plan with thresholds alpha*thr on se: accuracy, expected MACs,
 * exit shares; exit_of (may be NULL) receives each image's exit. */
static void plan_apply(branch **plan, int np, const float *thr, float alpha, const split_eval *se,
                       const uint64_t *prefix, uint64_t trunk_macs, plan_eval *pe, int *exit_of)
{
    double macs = 0, spent = 0;
    pe->correct = 0;
    for (int j = 0; j <= np; j++) pe->rate[j] = 0;
    for (size_t i = 0; i < se->n; i++) {
        double cost = 0;
        int e = np, pred = se->final_pred[i];
        for (int j = 0; j < np; j++) {
            cost += (double)plan[j]->macs;
            spent += (double)plan[j]->macs;
            if (plan[j]->conf[i] > alpha * thr[j]) {
                e = j;
                pred = plan[j]->pred[i];
                break;
            }
        }
        cost += e < np ? (double)prefix[plan[e]->at] : (double)trunk_macs;
        macs += cost;
        pe->rate[e] += 1;
        pe->correct += pred == se->label[i];
        if (exit_of) exit_of[i] = e;
    }
    double n = se->n ? (double)se->n : 1;
    pe->expected_macs = macs / n;
    pe->exits_macs = spent / n;
    pe->top1 = (double)pe->correct / n;
    for (int j = 0; j <= np; j++) pe->rate[j] /= n;
}

/* The exit rate of b alone at its lossless threshold on se. */
static int solo_rate(branch *b, const split_eval *se, const prn_exits_opts *o, trn_err *err)
{
    float t;
    branch *p[1] = {b};
    if (lossless_thresholds(p, 1, se, o, &t, err) != 0) return -1;
    size_t k = 0;
    for (size_t i = 0; i < se->n; i++) k += b->conf[i] > t;
    b->rate = se->n ? (double)k / (double)se->n : 0;
    return 0;
}

static int by_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* A search step's record of b on se (its conf, pred and rate measured
 * there): where, its shape, its exit rate as the only exit, its batches,
 * and why it answers what it does: its own top-1 on every image and its
 * confidence's quantiles (10, 25, 50, 75, 90%). NULL: out of memory. */
static cJSON *branch_entry(const char *stage, const branch *b, const split_eval *se)
{
    float *c = malloc((se->n ? se->n : 1) * sizeof *c);
    cJSON *s = cJSON_CreateObject();
    if (!c || !s) {
        free(c), cJSON_Delete(s);
        return NULL;
    }
    char d[200];
    uint64_t k = 0;
    for (size_t i = 0; i < se->n; i++) k += b->pred[i] == se->label[i];
    memcpy(c, b->conf, se->n * sizeof *c);
    qsort(c, se->n, sizeof *c, by_float);
    cJSON_AddStringToObject(s, "stage", stage);
    cJSON_AddStringToObject(s, "branch", branch_desc(b, d, sizeof d));
    cJSON_AddNumberToObject(s, "layer", b->at);
    cJSON_AddNumberToObject(s, "exit_rate", b->rate);
    cJSON_AddNumberToObject(s, "trained_batches", b->trained);
    cJSON_AddNumberToObject(s, "valid_top1", se->n ? (double)k / (double)se->n : 0);
    static const double q[] = {0.1, 0.25, 0.5, 0.75, 0.9};
    cJSON *qa = cJSON_AddArrayToObject(s, "valid_confidence_quantiles");
    for (size_t j = 0; j < sizeof q / sizeof *q && se->n; j++)
        cJSON_AddItemToArray(qa, cJSON_CreateNumber(c[(size_t)(q[j] * (double)(se->n - 1))]));
    free(c);
    return s;
}

/* same_budget: every branch of bs[0..nb) that trained fewer than `budget`
 * batches is fine-tuned for the rest (from its own weights, a fresh
 * schedule at half the learning rate), all together from *step. */
static int top_up(trn_net *trunk, branch *bs, int nb, int budget, uint64_t *step, const prn_exits_opts *o,
                  float *x, float *y, trn_err *err)
{
    branch *nw = calloc((size_t)nb, sizeof *nw);
    branch **l = calloc((size_t)nb, sizeof *l);
    int *each = calloc((size_t)nb, sizeof *each), most = 0, rc = -1;
    if (!nw || !l || !each) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (int k = 0; k < nb; k++) {
        each[k] = budget > bs[k].trained ? budget - bs[k].trained : 0;
        l[k] = &bs[k];
        if (each[k] == 0) continue;
        nw[k] = (branch){.at = bs[k].at, .pool = bs[k].pool, .layers = bs[k].layers, .width = bs[k].width};
        if (branch_build(&nw[k], trunk, o, &bs[k], o->seed + 4000 + (uint64_t)k, o->learning_rate * 0.5f, each[k],
                         err) != 0)
            goto out;
        l[k] = &nw[k];
        if (each[k] > most) most = each[k];
    }
    if (most > 0 && train_branches(trunk, l, nb, most, each, *step, o, x, y, err) != 0) goto out;
    *step += (uint64_t)most;
    for (int k = 0; k < nb; k++) {
        if (each[k] == 0) continue;
        nw[k].trained += bs[k].trained;
        branch_free(&bs[k]);
        bs[k] = nw[k];
        memset(&nw[k], 0, sizeof nw[k]);
    }
    rc = 0;
out:
    for (int k = 0; nw && k < nb; k++) branch_free(&nw[k]);
    free(nw), free(l), free(each);
    return rc;
}

/* ---- the whole technique -------------------------------------------------------- */

static cJSON *wilson_json(uint64_t k, uint64_t n)
{
    double lo, hi;
    trn_wilson(k, n, &lo, &hi);
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(lo));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(hi));
    return a;
}

/* The alpha profile's grid (the thesis sweeps 0.2 .. 1). */
static const double ALPHAS[] = {0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.5, 2.0};
#define N_ALPHAS (sizeof ALPHAS / sizeof *ALPHAS)

/* A paired comparison is "clearly worse" at p < 0.05 (McNemar's exact test). */
#define PRN_EXITS_P 0.05

/* One point of an alpha profile on the split se (`split`: its name; with
 * every branch's probabilities kept, top-5 too): top-1 with its 95%
 * interval, expected MACs against the base and against the trunk, what the
 * exits cost per input and the trunk MACs they skip, the exit rates, and
 * McNemar's exact test against the trunk alone on the same images
 * (vs_trunk). *worse: the exit model is clearly worse than its trunk.
 * rate: np + 1 doubles of scratch. NULL with err. */
static cJSON *profile_point(branch **plan, int np, const float *thr, double alpha, const split_eval *se,
                            const char *split, const uint64_t *prefix, uint64_t trunk_macs, uint64_t base_macs,
                            int C, double *rate, int *worse, trn_err *err)
{
    int *eo = malloc((se->n ? se->n : 1) * sizeof *eo);
    cJSON *p = cJSON_CreateObject(), *vs = cJSON_CreateObject();
    if (!eo || !p || !vs) {
        free(eo), cJSON_Delete(p), cJSON_Delete(vs);
        trn_errf(err, "out of memory");
        return NULL;
    }
    plan_eval ta = {.rate = rate};
    plan_apply(plan, np, thr, (float)alpha, se, prefix, trunk_macs, &ta, eo);
    int probs = se->final_probs != NULL;
    for (int j = 0; j < np; j++) probs = probs && plan[j]->probs;
    uint64_t k5 = 0, only_exit = 0, only_trunk = 0;
    for (size_t i = 0; i < se->n; i++) {
        int e = eo[i], y = se->label[i];
        int r = (e < np ? plan[e]->pred[i] : se->final_pred[i]) == y, t = se->final_pred[i] == y;
        only_exit += r && !t;
        only_trunk += t && !r;
        if (probs) {
            const float *q = e < np ? plan[e]->probs + i * C : se->final_probs + i * C;
            int above = 0;
            for (int c = 0; c < C; c++) above += q[c] > q[y];
            k5 += above < 5;
        }
    }
    free(eo);
    double pv = trn_mcnemar_p(only_exit, only_trunk), skipped = (double)trunk_macs - (ta.expected_macs - ta.exits_macs);
    char key[32];
    snprintf(key, sizeof key, "%s_images", split);
    cJSON_AddNumberToObject(p, "alpha", alpha);
    cJSON_AddNumberToObject(p, "top1", ta.top1);
    cJSON_AddItemToObject(p, "top1_ci", wilson_json(ta.correct, se->n));
    cJSON_AddNumberToObject(p, key, (double)se->n);
    cJSON_AddNumberToObject(p, "expected_macs", ta.expected_macs);
    if (probs) cJSON_AddNumberToObject(p, "top5", se->n ? (double)k5 / (double)se->n : 0);
    cJSON_AddNumberToObject(p, "macs_saving", 1 - ta.expected_macs / (double)base_macs);
    cJSON_AddNumberToObject(p, "macs_saving_vs_trunk", 1 - ta.expected_macs / (double)trunk_macs);
    cJSON_AddNumberToObject(p, "exits_macs_spent", ta.exits_macs);
    cJSON_AddNumberToObject(p, "trunk_macs_skipped", skipped);
    cJSON_AddNumberToObject(p, "saving_to_cost", ta.exits_macs > 0 ? skipped / ta.exits_macs : 0);
    cJSON_AddNumberToObject(p, "cumulative_exit_rate", 1 - rate[np]);
    cJSON *r = cJSON_AddArrayToObject(p, "exit_rates");
    for (int j = 0; j <= np; j++) cJSON_AddItemToArray(r, cJSON_CreateNumber(rate[j]));
    cJSON_AddNumberToObject(vs, "exit_model_only_right", (double)only_exit);
    cJSON_AddNumberToObject(vs, "trunk_only_right", (double)only_trunk);
    cJSON_AddNumberToObject(vs, "mcnemar_p", pv);
    *worse = only_trunk > only_exit && pv < PRN_EXITS_P;
    cJSON_AddBoolToObject(vs, "clearly_worse", *worse);
    cJSON_AddItemToObject(p, "vs_trunk", vs);
    return p;
}

void prn_exit_model_free(prn_exit_model *m)
{
    if (!m) return;
    trn_cfg_free(m->cfg);
    trn_exits_free(m->exits);
    free(m->predictions);
    free(m->exit_of);
    free(m->exit_by_alpha);
    free(m->pred_by_alpha);
    memset(m, 0, sizeof *m);
}

/* ---- the trunk: collective-importance pruning (thesis 4.3.1; sbs.c) ---------- */

#define SBS_FIRST_STEP 1000000u   /* training-stream batches of the SBS exits' features */
#define RETRAIN_FIRST_STEP 2000000u /* and of the pruned trunk's retraining */

/* The pruned trunk keeping counts[l] filters of sbs layer l, most important
 * first by SBS (or L1): *pcfg and *pnet (batch 1, inference) with the
 * base's values. */
static int pruned_trunk(const trn_cfg *cfg, const trn_net *base, const prn_sbs *sb, int use_l1, const int *counts,
                        trn_cfg **pcfg, trn_net **pnet, trn_err *err)
{
    prn_keep kp[64];
    if (sb->nlayers > 64) return trn_errf(err, "more than 64 convolutional layers to prune");
    for (int l = 0; l < sb->nlayers; l++)
        kp[l] = (prn_keep){sb->layers[l].layer, counts[l], use_l1 ? sb->layers[l].l1_order : sb->layers[l].order};
    return prn_filters_net(cfg, base, kp, sb->nlayers, pcfg, pnet, err);
}

static uint64_t net_macs(const trn_net *n)
{
    trn_net_totals t;
    trn_net_get_totals(n, &t);
    return t.macs;
}

/* A network of cfg (batch, inference only or not) holding src's values,
 * its schedule from the start. */
static trn_net *net_copy(const trn_cfg *cfg, const trn_net *src, int batch, int infer_only, uint64_t seed,
                         trn_err *err)
{
    return prn_net_like(cfg, src, batch, infer_only, seed, 0, err);
}

/* Retrains pnet (cfg pcfg; its values in place) for o->trunk_retrain
 * batches of the training stream, distilled from base (batch o->batch). */
static int retrain_trunk(const trn_cfg *pcfg, trn_net *pnet, trn_net *base, const prn_exits_opts *o, float *x,
                         float *y, trn_err *err)
{
    if (o->trunk_retrain == 0) return 0;
    trn_cfg *tc = trn_cfg_clone(pcfg, err);
    if (!tc) return -1;
    int rc = trn_cfg_setf(tc, 0, "batch", err, "%d", o->batch) || trn_cfg_set(tc, 0, "subdivisions", "1", err) ||
             trn_cfg_setf(tc, 0, "learning_rate", err, "%.9g", o->trunk_lr) ||
             trn_cfg_set(tc, 0, "policy", "poly", err) || trn_cfg_set(tc, 0, "power", "2", err) ||
             trn_cfg_set(tc, 0, "burn_in", "0", err) ||
             trn_cfg_setf(tc, 0, "max_batches", err, "%d", o->trunk_retrain) ? -1 : 0;
    if (rc == 0 && o->trunk_kd > 0)
        rc = trn_cfg_setf(tc, 0, "distill_alpha", err, "%.9g", o->trunk_kd) ||
             trn_cfg_set(tc, 0, "distill_temperature", "1", err) || trn_cfg_set(tc, 0, "distill_cfg", "base", err) ||
             trn_cfg_set(tc, 0, "distill_weights", "base", err) ? -1 : 0;
    trn_net *net = rc ? NULL : net_copy(tc, pnet, o->batch, 0, o->seed + 5000, err);
    if (!net) rc = -1;
    if (rc == 0) trn_net_set_seen(net, 0);
    for (int s = 0; rc == 0 && s < o->trunk_retrain; s++) {
        if (o->train(o->train_ctx, RETRAIN_FIRST_STEP + (uint64_t)s, x, y, err) != 0) rc = -1;
        else if (o->trunk_kd > 0) {
            if (trn_net_forward(base, x, err) != 0) rc = -1;
            else trn_net_set_soft_targets(net, trn_net_output(base));
        }
        float loss;
        if (rc == 0 && trn_net_train_step(net, x, y, &loss, err) != 0) rc = -1;
        trn_net_set_soft_targets(net, NULL);
    }
    if (rc == 0) {
        int ns, nd;
        const trn_param *ps = trn_net_params(net, &ns), *pd = trn_net_params(pnet, &nd);
        for (int k = 0; k < nd && k < ns; k++) memcpy(pd[k].data, ps[k].data, pd[k].count * sizeof(float));
    }
    trn_net_free(net);
    trn_cfg_free(tc);
    return rc;
}

/* Top-1 hits of net (batch o->batch, inference) on n images. */
static int count_correct(trn_net *net, const float *X, const int *Y, size_t n, uint64_t *correct, trn_err *err)
{
    split_eval se = {0};
    if (evaluate(net, NULL, 0, X, Y, n, 0, &se, err) != 0) {
        split_eval_free(&se);
        return -1;
    }
    *correct = 0;
    for (size_t i = 0; i < n; i++) *correct += se.final_pred[i] == Y[i];
    split_eval_free(&se);
    return 0;
}

static cJSON *acc_json(uint64_t k, uint64_t n, const char *split)
{
    cJSON *a = cJSON_CreateObject();
    double lo, hi;
    trn_wilson(k, n, &lo, &hi);
    cJSON_AddStringToObject(a, "split", split);
    cJSON_AddNumberToObject(a, "images", (double)n);
    cJSON_AddNumberToObject(a, "correct", (double)k);
    cJSON_AddNumberToObject(a, "top1", n ? (double)k / (double)n : 0);
    cJSON_AddNumberToObject(a, "lo", lo);
    cJSON_AddNumberToObject(a, "hi", hi);
    return a;
}

static cJSON *curve_json(const double *c, int kmin, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = kmin; k <= n; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber(c[k]));
    return a;
}

/* FlexDNN's trunk: ranks the base's convolutional filters by collective
 * importance (or L1), keeps per layer the thesis's minimum count at the
 * smallest exit-accuracy tolerance that brings the trunk to trunk_macs x the
 * base's MACs (or at trunk_tolerance), retrains it distilled from the base
 * and measures it. *trunk (batch o->batch, inference) becomes the pruned
 * trunk, *tcfg its cfg; fields receives "pruned_trunk" (deterministic),
 * measured the seconds it took. */
static int prune_trunk(const trn_cfg *cfg, trn_net **trunk, trn_cfg **tcfg, const prn_exits_opts *o, float *x,
                       float *y, cJSON *fields, cJSON *measured, trn_err *err)
{
    trn_net *base = *trunk;
    int use_l1 = o->trunk_prune == 2, rc = -1;
    double t0 = prn_now_s();
    prn_sbs_opts so = o->sbs;
    so.seed = o->seed + 3000;
    prn_sbs *sb = prn_sbs_rank(base, &so, o->train, o->train_ctx, SBS_FIRST_STEP, o->valid_x, o->valid_y, o->n_valid,
                               err);
    if (!sb) return -1;
    double t_rank = prn_now_s() - t0;
    int L = sb->nlayers;
    int *counts = calloc((size_t)L, sizeof *counts), *cl1 = calloc((size_t)L, sizeof *cl1);
    trn_cfg *pcfg = NULL, *lcfg = NULL;
    trn_net *pnet = NULL, *lnet = NULL, *pb = NULL;
    uint64_t base_macs = net_macs(base), macs = 0;
    double tol = o->trunk_tolerance;
    const char *how = "trunk_tolerance";
    if (!counts || !cl1) goto oom;
    /* the thesis's minimum count per layer (the fewest filters whose exit
     * stays within trunk_tolerance of all filters') */
    int *kmin = calloc((size_t)L, sizeof *kmin);
    if (!kmin) goto oom;
    for (int l = 0; l < L; l++) {
        const prn_sbs_layer *ly = &sb->layers[l];
        kmin[l] = prn_sbs_min_filters(use_l1 ? ly->curve_l1 : ly->curve, ly->filters, ly->kmin, tol);
    }
    double tstep = 0;
    if (o->trunk_macs > 0) {
        /* a MACs target: every layer moves the same share t of the way from
         * all its filters to its minimum count (t in [0, 1]; then on from
         * the minimum to the SBS floor, t in (1, 2]); the smallest t on a
         * grid of 1/256 that brings the trunk to the target. The layers'
         * relative redundancy is the ranking's; the target sets how far. */
        how = "not reached: every layer at its SBS floor";
        for (int g = 0; g <= 512; g++) {
            double t = g / 256.0;
            for (int l = 0; l < L; l++) {
                const prn_sbs_layer *ly = &sb->layers[l];
                double c = t <= 1 ? ly->filters - t * (ly->filters - kmin[l]) : kmin[l] - (t - 1) * (kmin[l] - ly->kmin);
                counts[l] = (int)ceil(c - 1e-9);
            }
            trn_cfg_free(pcfg), trn_net_free(pnet);
            pcfg = NULL, pnet = NULL;
            if (pruned_trunk(cfg, base, sb, use_l1, counts, &pcfg, &pnet, err) != 0) {
                free(kmin);
                goto out;
            }
            macs = net_macs(pnet);
            tstep = t;
            if ((double)macs <= o->trunk_macs * (double)base_macs) {
                how = "trunk_macs";
                break;
            }
        }
    } else {
        for (int l = 0; l < L; l++) counts[l] = kmin[l];
        tstep = 1;
        if (pruned_trunk(cfg, base, sb, use_l1, counts, &pcfg, &pnet, err) != 0) {
            free(kmin);
            goto out;
        }
        macs = net_macs(pnet);
    }
    free(kmin);
    /* measure before and after retraining (valid, test) */
    uint64_t v0 = 0, v1 = 0, t1 = 0, lv = 0, lt = 0;
    if (!(pb = net_copy(pcfg, pnet, o->batch, 1, 0, err)) || count_correct(pb, o->valid_x, o->valid_y, o->n_valid, &v0, err))
        goto out;
    trn_net_free(pb);
    pb = NULL;
    double t2 = prn_now_s(), c2 = prn_cpu_s();
    if (retrain_trunk(pcfg, pnet, base, o, x, y, err) != 0) goto out;
    double t_retrain = prn_now_s() - t2, c_retrain = prn_cpu_s() - c2;
    if (!(pb = net_copy(pcfg, pnet, o->batch, 1, 0, err)) || count_correct(pb, o->valid_x, o->valid_y, o->n_valid, &v1, err) ||
        count_correct(pb, o->test_x, o->test_y, o->n_test, &t1, err))
        goto out;
    /* the other ranking at the same counts, retrained alike */
    if (o->trunk_compare_l1) {
        trn_net *lb = NULL;
        if (pruned_trunk(cfg, base, sb, !use_l1, counts, &lcfg, &lnet, err) != 0 ||
            retrain_trunk(lcfg, lnet, base, o, x, y, err) != 0 || !(lb = net_copy(lcfg, lnet, o->batch, 1, 0, err)) ||
            count_correct(lb, o->valid_x, o->valid_y, o->n_valid, &lv, err) ||
            count_correct(lb, o->test_x, o->test_y, o->n_test, &lt, err)) {
            trn_net_free(lb);
            goto out;
        }
        trn_net_free(lb);
    }
    {
        cJSON *tr = cJSON_AddObjectToObject(fields, "pruned_trunk");
        cJSON_AddStringToObject(tr, "method", use_l1 ? "l1" : "sbs");
        cJSON_AddNumberToObject(tr, "target_macs", o->trunk_macs);
        cJSON_AddNumberToObject(tr, "tolerance", tol);
        cJSON_AddNumberToObject(tr, "share_of_the_way", tstep);
        cJSON_AddStringToObject(tr, "counts_from", how);
        cJSON_AddNumberToObject(tr, "macs", (double)macs);
        cJSON_AddNumberToObject(tr, "base_macs", (double)base_macs);
        cJSON_AddNumberToObject(tr, "macs_fraction", (double)macs / (double)base_macs);
        cJSON *ls = cJSON_AddArrayToObject(tr, "layers");
        for (int l = 0; l < L; l++) {
            const prn_sbs_layer *ly = &sb->layers[l];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "layer", ly->layer);
            cJSON_AddNumberToObject(e, "filters", ly->filters);
            cJSON_AddNumberToObject(e, "kept", counts[l]);
            cJSON_AddNumberToObject(e, "sbs_floor", ly->kmin);
            cJSON_AddNumberToObject(e, "exit_pool", ly->pool);
            cJSON_AddItemToObject(e, "sbs_order", prn_json_ints(ly->order, ly->filters));
            cJSON_AddItemToObject(e, "l1_order", prn_json_ints(ly->l1_order, ly->filters));
            /* curve[i]: the exit's valid top-1 on the top (floor + i) filters */
            cJSON_AddItemToObject(e, "sbs_curve", curve_json(ly->curve, ly->kmin, ly->filters));
            cJSON_AddItemToObject(e, "l1_curve", curve_json(ly->curve_l1, ly->kmin, ly->filters));
            /* Figure 4.6: the fewest filters whose exit is within
             * trunk_tolerance of all filters' */
            cJSON_AddNumberToObject(e, "min_filters_sbs",
                                    prn_sbs_min_filters(ly->curve, ly->filters, ly->kmin, o->trunk_tolerance));
            cJSON_AddNumberToObject(e, "min_filters_l1",
                                    prn_sbs_min_filters(ly->curve_l1, ly->filters, ly->kmin, o->trunk_tolerance));
            cJSON_AddNumberToObject(e, "rounds", ly->rounds);
            cJSON_AddNumberToObject(e, "fine_tunes", ly->fine_tunes);
            cJSON_AddItemToArray(ls, e);
        }
        cJSON_AddItemToObject(tr, "valid_before_retraining", acc_json(v0, o->n_valid, "valid"));
        cJSON_AddItemToObject(tr, "valid", acc_json(v1, o->n_valid, "valid"));
        cJSON_AddItemToObject(tr, "test", acc_json(t1, o->n_test, "test"));
        cJSON_AddNumberToObject(tr, "retrain_batches", o->trunk_retrain);
        cJSON_AddNumberToObject(tr, "retrain_learning_rate", o->trunk_lr);
        cJSON_AddNumberToObject(tr, "retrain_kd", o->trunk_kd);
        if (o->trunk_compare_l1) {
            cJSON *c = cJSON_AddObjectToObject(tr, use_l1 ? "sbs_same_counts" : "l1_same_counts");
            cJSON_AddItemToObject(c, "valid", acc_json(lv, o->n_valid, "valid"));
            cJSON_AddItemToObject(c, "test", acc_json(lt, o->n_test, "test"));
        }
        cJSON *co = cJSON_AddObjectToObject(tr, "cost");
        char ap[600];
        snprintf(ap, sizeof ap,
                 "exit = linear softmax on the layer's map max-pooled to about %dx%d, features of %d training "
                 "images cached once; %s; %d filter%s dropped per round; SBS stops below %.2f x N filters; "
                 "first fit %d passes, later fine-tunes %d passes (warm start)",
                 so.pool_to, so.pool_to, so.images,
                 so.refit > 0 ? "every candidate fine-tuned on its own (the thesis's O(N^2))"
                              : "one fine-tune per round, every candidate scored by that exit without its features",
                 so.drop, so.drop == 1 ? "" : "s", so.stop, so.first_epochs, so.epochs);
        cJSON_AddStringToObject(co, "approximation", ap);
        cJSON_AddNumberToObject(co, "fine_tunes", sb->fine_tunes);
        cJSON_AddNumberToObject(co, "candidate_evaluations", sb->evaluations);
        int exact = 0;
        for (int l = 0; l < L; l++) {
            int n = sb->layers[l].filters, k = sb->layers[l].kmin;
            for (int u = n; u > k; u--) exact += u; /* one fine-tune per candidate per round */
        }
        cJSON_AddNumberToObject(co, "exact_fine_tunes", exact);
        /* the seconds go to meta.json's "measured" (not the manifest) */
        cJSON *ms = cJSON_AddObjectToObject(measured, "pruned_trunk");
        cJSON_AddNumberToObject(ms, "sbs_feature_seconds", sb->feature_seconds);
        cJSON_AddNumberToObject(ms, "sbs_ranking_seconds", t_rank);
        cJSON_AddNumberToObject(ms, "sbs_ranking_cpu_seconds", sb->cpu_seconds);
        cJSON *lsec = cJSON_AddArrayToObject(ms, "sbs_layer_seconds");
        for (int l = 0; l < L; l++) cJSON_AddItemToArray(lsec, cJSON_CreateNumber(sb->layers[l].seconds));
        cJSON_AddNumberToObject(ms, "retrain_seconds", t_retrain);
        cJSON_AddNumberToObject(ms, "retrain_cpu_seconds", c_retrain);
        cJSON_AddStringToObject(ms, "note", "seconds: wall clock of this run (the machine may be shared); "
                                            "cpu_seconds: this process's CPU time");
    }
    {
        trn_net *nt = net_copy(pcfg, pnet, o->batch, 1, 0, err);
        if (!nt) goto out;
        trn_net_free(*trunk);
        *trunk = nt;
        *tcfg = pcfg;
        pcfg = NULL;
    }
    rc = 0;
    goto out;
oom:
    trn_errf(err, "out of memory");
out:
    prn_sbs_free(sb);
    free(counts), free(cl1);
    trn_cfg_free(pcfg), trn_cfg_free(lcfg);
    trn_net_free(pnet), trn_net_free(lnet), trn_net_free(pb);
    return rc;
}

/* Each test image's exit and answer at every alpha of the profile (em),
 * for paired comparisons of two exit models on the same images. */
static int alpha_record(branch **plan, int np, const float *thr, const split_eval *te, const uint64_t *prefix,
                        uint64_t trunk_macs, plan_eval *pe, prn_exit_model *em, trn_err *err)
{
    size_t n = te->n;
    em->exit_by_alpha = malloc(N_ALPHAS * (n ? n : 1) * sizeof *em->exit_by_alpha);
    em->pred_by_alpha = malloc(N_ALPHAS * (n ? n : 1) * sizeof *em->pred_by_alpha);
    if (!em->exit_by_alpha || !em->pred_by_alpha) return trn_errf(err, "out of memory");
    em->n_alphas = (int)N_ALPHAS;
    em->alphas = ALPHAS;
    for (size_t a = 0; a < N_ALPHAS; a++) {
        int *e = em->exit_by_alpha + a * n, *p = em->pred_by_alpha + a * n;
        plan_apply(plan, np, thr, (float)ALPHAS[a], te, prefix, trunk_macs, pe, e);
        for (size_t i = 0; i < n; i++) p[i] = e[i] < np ? plan[e[i]]->pred[i] : te->final_pred[i];
    }
    return 0;
}

/* The batches BranchyNet's heads train: those the search spends in all
 * (stage 1 and up to layers + 3 shrink rounds). */
static int stage1_budget(const prn_exits_opts *o)
{
    return o->stage1 + o->finetune * (o->layers + 3);
}

/* Each branch's exit rate on se and its record in search. */
static int search_record(branch *bs, int nb, const split_eval *se, const char *stage, const prn_exits_opts *o,
                         cJSON *search, trn_err *err)
{
    for (int k = 0; k < nb; k++) {
        if (solo_rate(&bs[k], se, o, err) != 0) return -1;
        cJSON *s = branch_entry(stage, &bs[k], se);
        if (!s) return trn_errf(err, "out of memory");
        cJSON_AddItemToArray(search, s);
    }
    return 0;
}

int prn_early_exit(const trn_cfg *cfg, const char *cfg_path, const char *weights, const prn_exits_opts *o,
                   prn_variant *out, prn_exit_model *em, trn_err *err)
{
    memset(out, 0, sizeof *out);
    memset(em, 0, sizeof *em);
    if (!o->train || !o->valid_x || !o->test_x || o->n_valid == 0 || o->n_test == 0)
        return trn_errf(err, "early-exit: training stream, valid and test images are needed");
    trn_net_opts to;
    trn_net_opts_defaults(&to);
    to.batch = o->batch;
    to.infer_only = 1;
    trn_net *trunk = trn_net_create(cfg, &to, err);
    if (!trunk) return -1;
    int rc = -1, nb = 0, np = 0, L = trn_net_layers(trunk), C = (int)trn_net_outputs(trunk);
    branch *bs = calloc((size_t)L, sizeof *bs);
    branch **plan = calloc((size_t)L, sizeof *plan);
    uint64_t *prefix = calloc((size_t)L, sizeof *prefix);
    float *thr = calloc((size_t)L, sizeof *thr);
    double *rate = calloc((size_t)L + 1, sizeof *rate);
    float *x = calloc((size_t)o->batch * trn_net_inputs(trunk), sizeof *x);
    float *y = calloc((size_t)o->batch * (size_t)C, sizeof *y);
    split_eval va = {0}, te = {0};
    trn_cfg *tcfg = NULL; /* the trunk's cfg: the base's, or the pruned one */
    cJSON *measured = NULL; /* seconds (meta.json's "measured") */
    cJSON *fields = cJSON_CreateObject(), *search = cJSON_AddArrayToObject(fields, "search"),
          *steps = cJSON_AddArrayToObject(fields, "plan_steps");
    if (!bs || !plan || !prefix || !thr || !rate || !x || !y || !fields) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (trn_weights_load(trunk, weights, err) != 0) goto out;
    /* the base: its MACs and test accuracy (what the exit model is judged
     * against), then FlexDNN's pruned trunk in its place (trunk_prune) */
    uint64_t base_macs = net_macs(trunk), base_correct = 0;
    if (count_correct(trunk, o->test_x, o->test_y, o->n_test, &base_correct, err) != 0) goto out;
    if (o->trunk_prune) {
        if (!(measured = cJSON_CreateObject())) {
            trn_errf(err, "out of memory");
            goto out;
        }
        if (prune_trunk(cfg, &trunk, &tcfg, o, x, y, fields, measured, err) != 0) goto out;
    } else if (!(tcfg = trn_cfg_clone(cfg, err)))
        goto out;
    uint64_t trunk_macs = 0;
    for (int i = 0; i < L; i++) {
        trn_layer_info li;
        if (trn_net_layer_info(trunk, i, &li) != 0) goto out;
        trunk_macs += li.macs;
        prefix[i] = trunk_macs;
    }
    /* the exits' cost is bounded by the trunk they sit on (issue 41 item 4) */
    double cap_macs = o->exit_cap > 0 ? o->exit_cap * (double)trunk_macs : INFINITY;
    /* candidate locations: spatial outputs (h, w > 1) before the classifier;
     * BranchyNet: after every max-pool stage */
    int last_spatial = -1;
    for (int i = 0; i < L - 1; i++) {
        trn_layer_info li;
        trn_net_layer_info(trunk, i, &li);
        if (li.out.h > 1 && li.out.w > 1 &&
            (li.kind == TRN_LAYER_CONVOLUTIONAL || li.kind == TRN_LAYER_MAXPOOL || li.kind == TRN_LAYER_AVGPOOL))
            last_spatial = i;
    }
    for (int i = 0; i <= last_spatial; i++) {
        trn_layer_info li;
        trn_net_layer_info(trunk, i, &li);
        int ok = o->branchynet ? li.kind == TRN_LAYER_MAXPOOL
                               : (li.kind == TRN_LAYER_CONVOLUTIONAL || li.kind == TRN_LAYER_MAXPOOL);
        /* a convolution followed by a max-pool: the pool's output is the
         * cheaper place for the same features (FlexDNN: after the block) */
        if (!ok) continue;
        branch *b = &bs[nb++];
        b->at = i;
        b->pool = li.out.h > o->pool_to ? (li.out.h + o->pool_to - 1) / o->pool_to : 1;
        b->layers = o->branchynet ? 1 : o->layers;
        b->width = o->width;
    }
    if (nb <= 0) { /* (<=: GCC under SAN= cannot see nb >= 0 at the calloc below) */
        trn_errf(err, "%s: no candidate exit location (a convolution or max-pool with a spatial output)",
                 cfg_path);
        goto out;
    }
    /* Stage 1's batches (BranchyNet: its fixed heads get the batches our
     * search spends in all) */
    int stage1 = o->branchynet ? stage1_budget(o) : o->stage1, topped = o->same_budget && !o->branchynet;
    for (int k = 0; k < nb; k++)
        if (branch_build(&bs[k], trunk, o, NULL, o->seed + 1000 + (uint64_t)k, o->learning_rate, stage1, err) != 0)
            goto out;
    branch **all = calloc((size_t)nb, sizeof *all);
    if (!all) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (int k = 0; k < nb; k++) all[k] = &bs[k];
    uint64_t step = 0;
    /* Stage 1: the over-parameterised branches (BranchyNet: its fixed heads) */
    if (train_branches(trunk, all, nb, stage1, NULL, step, o, x, y, err) != 0) goto out_all;
    step += (uint64_t)stage1;
    if (evaluate(trunk, all, nb, o->valid_x, o->valid_y, o->n_valid, 0, &va, err) != 0) goto out_all;
    if (search_record(bs, nb, &va, o->branchynet ? "branchynet" : "over-parameterised", o, search, err) != 0)
        goto out_all;
    /* Stage 3: shrink each branch (layers, then filters) while its exit rate
     * holds; all shrink candidates of a round train together */
    if (!o->branchynet) {
        double *best = calloc((size_t)nb, sizeof *best);
        int *phase = calloc((size_t)nb, sizeof *phase); /* 0 layers, 1 filters, 2 done */
        branch *cand = calloc((size_t)nb, sizeof *cand);
        branch **cl = calloc((size_t)nb, sizeof *cl);
        int *ci = calloc((size_t)nb, sizeof *ci);
        if (!best || !phase || !cand || !cl || !ci) {
            free(best), free(phase), free(cand), free(cl), free(ci);
            trn_errf(err, "out of memory");
            goto out_all;
        }
        for (int k = 0; k < nb; k++) best[k] = bs[k].rate;
        for (int round = 0; round < 16; round++) {
            int nc = 0;
            for (int k = 0; k < nb; k++) {
                while (phase[k] < 2) {
                    branch c = {.at = bs[k].at, .pool = bs[k].pool, .layers = bs[k].layers, .width = bs[k].width};
                    if (phase[k] == 0 && c.layers > 0) c.layers--;
                    else if (phase[k] == 1 && c.layers > 0 && c.width > 4) c.width /= 2;
                    else {
                        phase[k]++;
                        continue;
                    }
                    cand[nc] = c;
                    if (branch_build(&cand[nc], trunk, o, &bs[k], o->seed + 2000 + 100 * (uint64_t)round + (uint64_t)k,
                                     o->learning_rate * 0.5f, o->finetune, err) != 0)
                        goto shrink_fail;
                    cl[nc] = &cand[nc];
                    ci[nc++] = k;
                    break;
                }
            }
            if (nc == 0) break;
            if (train_branches(trunk, cl, nc, o->finetune, NULL, step, o, x, y, err) != 0) goto shrink_fail;
            step += (uint64_t)o->finetune;
            split_eval v2 = {0};
            if (evaluate(trunk, cl, nc, o->valid_x, o->valid_y, o->n_valid, 0, &v2, err) != 0) {
                split_eval_free(&v2);
                goto shrink_fail;
            }
            for (int c = 0; c < nc; c++) {
                int k = ci[c];
                if (solo_rate(&cand[c], &v2, o, err) != 0) {
                    split_eval_free(&v2);
                    goto shrink_fail;
                }
                /* a branch that alone costs more than all exits may is
                 * shrunk whatever it costs in exit rate */
                int forced = (double)bs[k].macs > cap_macs;
                int keep = cand[c].rate >= best[k] - o->tolerance || forced;
                cJSON *s = branch_entry(phase[k] == 0 ? "layer-pruning" : "filter-pruning", &cand[c], &v2);
                if (!s) {
                    split_eval_free(&v2);
                    trn_errf(err, "out of memory");
                    goto shrink_fail;
                }
                cJSON_AddBoolToObject(s, "kept", keep);
                if (forced) cJSON_AddBoolToObject(s, "forced_by_exit_cap", 1);
                cJSON_AddItemToArray(search, s);
                if (keep) {
                    if (cand[c].rate > best[k]) best[k] = cand[c].rate;
                    cand[c].trained += bs[k].trained;
                    branch_free(&bs[k]);
                    bs[k] = cand[c];
                    memset(&cand[c], 0, sizeof cand[c]);
                } else {
                    branch_free(&cand[c]);
                    phase[k]++;
                }
            }
            split_eval_free(&v2);
        }
        free(best), free(phase), free(cand), free(cl), free(ci);
        goto shrunk;
    shrink_fail:
        for (int c = 0; c < nb; c++) branch_free(&cand[c]);
        free(best), free(phase), free(cand), free(cl), free(ci);
        goto out_all;
    }
shrunk:
    /* every searched branch trained as many batches as BranchyNet's heads */
    if (topped && top_up(trunk, bs, nb, stage1_budget(o), &step, o, x, y, err) != 0) goto out_all;
    /* every branch evaluated on valid (kept) and test (with probabilities) */
    split_eval_free(&va);
    if (evaluate(trunk, all, nb, o->valid_x, o->valid_y, o->n_valid, 0, &va, err) != 0) goto out_all;
    if (topped && search_record(bs, nb, &va, "same-budget", o, search, err) != 0) goto out_all;
    /* insertion plan: greedy removal by Q_j until expected MACs stop falling */
    np = nb;
    for (int k = 0; k < nb; k++) plan[k] = &bs[k];
    plan_eval pe = {.rate = rate};
    if (lossless_thresholds(plan, np, &va, o, thr, err) != 0) goto out_all;
    plan_apply(plan, np, thr, 1, &va, prefix, trunk_macs, &pe, NULL);
    for (;;) {
        cJSON *st = cJSON_CreateObject();
        cJSON *ex = cJSON_AddArrayToObject(st, "exits");
        for (int j = 0; j < np; j++) cJSON_AddItemToArray(ex, cJSON_CreateNumber(plan[j]->at));
        cJSON_AddNumberToObject(st, "expected_macs", pe.expected_macs);
        cJSON_AddNumberToObject(st, "valid_top1", pe.top1);
        cJSON_AddItemToArray(steps, st);
        if (o->branchynet || np == 0) break;
        /* Q_j with cumulative exit rates cr */
        double cr_prev = 0, qmin = INFINITY;
        int jmin = -1, unfit = 0; /* an exit that alone costs more than exit_cap fits no plan: it goes first */
        for (int j = 0; j < np; j++) unfit += (double)plan[j]->macs > cap_macs;
        cJSON *qs = cJSON_AddArrayToObject(st, "q");
        for (int j = 0; j < np; j++) {
            double cr = cr_prev + rate[j];
            double cb = (double)((j + 1 < np ? prefix[plan[j + 1]->at] : trunk_macs) - prefix[plan[j]->at]);
            double C_j = (1 - cr_prev) * (double)plan[j]->macs, G_j = (cr - cr_prev) * cb;
            double q = C_j > 0 ? G_j / C_j : G_j > 0 ? INFINITY : 0; /* an exit no input reaches: useless */
            cJSON_AddItemToArray(qs, cJSON_CreateNumber(isfinite(q) ? q : 1e300));
            if (q < qmin && (!unfit || (double)plan[j]->macs > cap_macs)) qmin = q, jmin = j;
            cr_prev = cr;
        }
        if (jmin < 0) break;
        branch **trial = calloc((size_t)np, sizeof *trial);
        float *tthr = calloc((size_t)np, sizeof *tthr);
        double *trate = calloc((size_t)np + 1, sizeof *trate);
        if (!trial || !tthr || !trate) {
            free(trial), free(tthr), free(trate);
            trn_errf(err, "out of memory");
            goto out_all;
        }
        int nt = 0;
        for (int j = 0; j < np; j++)
            if (j != jmin) trial[nt++] = plan[j];
        plan_eval tpe = {.rate = trate};
        if (lossless_thresholds(trial, nt, &va, o, tthr, err) != 0) {
            free(trial), free(tthr), free(trate);
            goto out_all;
        }
        plan_apply(trial, nt, tthr, 1, &va, prefix, trunk_macs, &tpe, NULL);
        cJSON_AddNumberToObject(st, "remove_candidate", plan[jmin]->at);
        cJSON_AddNumberToObject(st, "expected_macs_without", tpe.expected_macs);
        double exits_total = 0;
        for (int j = 0; j < np; j++) exits_total += (double)plan[j]->macs;
        cJSON_AddNumberToObject(st, "exits_macs", exits_total);
        int over_cap = exits_total > cap_macs; /* item 2: the exits' cost is a constraint */
        if (over_cap) cJSON_AddBoolToObject(st, "removed_for_exit_cap", 1);
        if (!over_cap && tpe.expected_macs > pe.expected_macs) { /* it would start to increase */
            free(trial), free(tthr), free(trate);
            break;
        }
        if (!over_cap && nt == 0) {
            /* The plan would keep no exit (the thesis's empty plan: no exit
             * pays for itself on the valid split). The model is an exit
             * model all the same: the last exit, the one with the highest
             * Q_j, stays, and the step says so; the alpha profile shows
             * what it costs. */
            cJSON_AddBoolToObject(st, "kept_as_the_last_exit", 1);
            free(trial), free(tthr), free(trate);
            break;
        }
        memcpy(plan, trial, (size_t)nt * sizeof *plan);
        memcpy(thr, tthr, (size_t)nt * sizeof *thr);
        np = nt;
        pe.expected_macs = tpe.expected_macs;
        pe.top1 = tpe.top1;
        memcpy(rate, trate, ((size_t)nt + 1) * sizeof *rate);
        free(trial), free(tthr), free(trate);
    }
    if (np == 0) {
        trn_errf(err, "early-exit: no exit fits within exit_cap, %g of the base's MACs: raise exit_cap or "
                 "narrow the branches with --set width=N", o->exit_cap);
        goto out_all;
    }
    /* the valid split's alpha profile (the plan's branches hold their valid
     * answers here) and the alpha chosen on it: the smallest on the grid
     * where the exit model is not clearly worse than its trunk */
    {
        cJSON *vprof = cJSON_AddArrayToObject(fields, "alpha_profile_valid");
        double chosen = 1;
        int run = 1; /* every alpha from 1 down to this one not clearly worse */
        for (size_t a = N_ALPHAS; a-- > 0;) {
            int worse;
            cJSON *p = profile_point(plan, np, thr, ALPHAS[a], &va, "valid", prefix, trunk_macs, base_macs, C, rate,
                                     &worse, err);
            if (!p) goto out_all;
            cJSON_InsertItemInArray(vprof, 0, p);
            if (ALPHAS[a] > 1) continue;
            run = run && !worse;
            if (run) chosen = ALPHAS[a];
        }
        cJSON *ch = cJSON_AddObjectToObject(fields, "chosen_alpha");
        cJSON_AddNumberToObject(ch, "alpha", chosen);
        cJSON_AddStringToObject(ch, "rule", "the smallest alpha at most 1 from which up to 1 the exit model is not "
                                            "clearly worse than its trunk on the valid split (McNemar's exact "
                                            "test, p < 0.05)");
    }
    /* the test split: alpha profile */
    if (evaluate(trunk, plan, np, o->test_x, o->test_y, o->n_test, 1, &te, err) != 0) goto out_all;
    {
        uint64_t trunk_correct = 0;
        for (size_t i = 0; i < te.n; i++) trunk_correct += te.final_pred[i] == te.label[i];
        cJSON *base = cJSON_AddObjectToObject(fields, "base");
        cJSON_AddNumberToObject(base, "top1", (double)base_correct / (double)te.n);
        cJSON_AddItemToObject(base, "top1_ci", wilson_json(base_correct, te.n));
        cJSON_AddNumberToObject(base, "macs", (double)base_macs);
        cJSON_AddNumberToObject(base, "test_images", (double)te.n);
        /* the trunk alone (the final exit): the base, or the pruned trunk */
        cJSON *tk = cJSON_AddObjectToObject(fields, "trunk_alone");
        cJSON_AddNumberToObject(tk, "top1", (double)trunk_correct / (double)te.n);
        cJSON_AddItemToObject(tk, "top1_ci", wilson_json(trunk_correct, te.n));
        cJSON_AddNumberToObject(tk, "macs", (double)trunk_macs);
        cJSON_AddNumberToObject(tk, "test_images", (double)te.n);
        cJSON *prof = cJSON_AddArrayToObject(fields, "alpha_profile");
        for (size_t a = 0; a < N_ALPHAS; a++) {
            int worse;
            cJSON *p = profile_point(plan, np, thr, ALPHAS[a], &te, "test", prefix, trunk_macs, base_macs, C, rate,
                                     &worse, err);
            if (!p) goto out_all;
            cJSON_AddItemToArray(prof, p);
        }
        plan_eval ta = {.rate = rate};
        if (alpha_record(plan, np, thr, &te, prefix, trunk_macs, &ta, em, err) != 0) goto out_all;
        /* per test image at alpha 1: exit and probabilities (the check of
         * rtl run against this evaluation) */
        int *exit_of = malloc(te.n * sizeof *exit_of);
        em->predictions = exit_of ? malloc(te.n * (size_t)C * sizeof *em->predictions) : NULL;
        if (!exit_of || !em->predictions) {
            free(exit_of);
            trn_errf(err, "out of memory");
            goto out_all;
        }
        plan_apply(plan, np, thr, 1, &te, prefix, trunk_macs, &ta, exit_of);
        for (size_t i = 0; i < te.n; i++) {
            const float *p = exit_of[i] < np ? plan[exit_of[i]]->probs + i * C : te.final_probs + i * C;
            memcpy(em->predictions + i * C, p, (size_t)C * sizeof *p);
        }
        em->exit_of = exit_of;
        em->n_predictions = te.n;
        em->classes = C;
        /* the exits */
        cJSON *ex = cJSON_AddArrayToObject(fields, "exits");
        uint64_t exits_macs = 0;
        plan_apply(plan, np, thr, 1, &te, prefix, trunk_macs, &ta, NULL);
        for (int j = 0; j < np; j++) {
            char d[200];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "layer", plan[j]->at);
            cJSON_AddNumberToObject(e, "threshold", thr[j]);
            cJSON_AddNumberToObject(e, "lossless_threshold", thr[j]);
            cJSON_AddNumberToObject(e, "exit_rate", ta.rate[j]);
            cJSON_AddNumberToObject(e, "macs_to_exit", (double)prefix[plan[j]->at]);
            cJSON_AddNumberToObject(e, "macs", (double)plan[j]->macs);
            cJSON_AddStringToObject(e, "branch", branch_desc(plan[j], d, sizeof d));
            cJSON_AddNumberToObject(e, "trained_batches", plan[j]->trained);
            uint64_t k = 0, n = 0;
            for (size_t i = 0; i < te.n; i++)
                if (exit_of[i] == j) n++, k += plan[j]->pred[i] == te.label[i];
            if (n) cJSON_AddNumberToObject(e, "top1", (double)k / (double)n);
            cJSON_AddItemToArray(ex, e);
            exits_macs += plan[j]->macs;
        }
        cJSON_AddNumberToObject(fields, "exits_macs", (double)exits_macs);
        cJSON_AddNumberToObject(fields, "exits_macs_fraction", (double)exits_macs / (double)base_macs);
        cJSON_AddNumberToObject(fields, "exits_macs_fraction_of_trunk", (double)exits_macs / (double)trunk_macs);
        cJSON_AddNumberToObject(fields, "exit_cap", o->exit_cap);
        cJSON_AddNumberToObject(fields, "min_threshold", o->min_threshold);
        cJSON_AddNumberToObject(fields, "threshold_z", o->threshold_z);
        cJSON_AddStringToObject(fields, "confidence", trn_conf_measure_name(o->confidence));
        cJSON_AddStringToObject(fields, "method", o->branchynet ? "branchynet" : "flexdnn");
        cJSON_AddNumberToObject(fields, "training_batches", (double)step);
        cJSON_AddNumberToObject(fields, "kd", o->kd);
        cJSON_AddBoolToObject(fields, "anneal", o->anneal);
    }
    /* the exit model: exits.cfg (batch-free) and its networks (batch 1) */
    {
        char *text = NULL;
        for (int j = 0; j < np; j++) {
            char *b = branch_text(plan[j], C, thr[j], o->confidence);
            if (!b || prn_appendf(&text, "%s", b)) {
                free(b);
                trn_errf(err, "out of memory");
                goto out_all;
            }
            free(b);
        }
        char *full = prn_strdupf("# early exits (FlexDNN) of %s: trainer/README.md, Early exits\n%s", cfg_path, text);
        free(text);
        if (!full || !(em->cfg = trn_cfg_parse(full, strlen(full), "exits.cfg", err))) {
            if (!full) trn_errf(err, "out of memory");
            free(full);
            goto out_all;
        }
        free(full);
        trn_net_opts eo;
        trn_net_opts_defaults(&eo);
        eo.batch = 1;
        eo.infer_only = 1;
        prn_net_opts(&to, o->seed);
        if (!(out->net = net_copy(tcfg, trunk, 1, 1, o->seed, err))) goto out_all;
        if (!(em->exits = trn_exits_create(out->net, em->cfg, &eo, err))) goto out_all;
        for (int j = 0; j < np; j++) {
            int na, nbp;
            const trn_param *src = trn_net_params(trn_exit_net(plan[j]->x, 0), &na);
            const trn_param *dst = trn_net_params(trn_exit_net(em->exits, j), &nbp);
            if (na != nbp) {
                trn_errf(err, "internal: exit %d parameter tables differ", j);
                goto out_all;
            }
            for (int p = 0; p < na; p++) memcpy(dst[p].data, src[p].data, src[p].count * sizeof(float));
        }
    }
    out->technique = TECHNIQUE_EARLY_EXIT;
    out->cfg = tcfg;
    tcfg = NULL;
    out->description = prn_strdupf("%s: %d early exit%s (at layers%s) over the frozen base, alpha 1: lossless "
                                   "thresholds on the valid split",
                                   o->branchynet ? "BranchyNet-style fixed heads" : "FlexDNN", np, np == 1 ? "" : "s", "");
    {
        char at[256] = "";
        for (int j = 0; j < np; j++) {
            size_t l = strlen(at);
            snprintf(at + l, sizeof at - l, " %d", plan[j]->at);
        }
        free(out->description);
        char over[128];
        if (o->trunk_prune)
            snprintf(over, sizeof over, "the %s-pruned trunk (%.3fx the base's MACs, retrained)",
                     o->trunk_prune == 2 ? "L1" : "collective-importance", (double)trunk_macs / (double)base_macs);
        else
            snprintf(over, sizeof over, "the frozen base");
        out->description = prn_strdupf("%s: %d early exit%s (at layers%s) over %s; thresholds lossless on "
                                       "the valid split (alpha 1)",
                                       o->branchynet ? "BranchyNet-style fixed heads" : "FlexDNN exit search + insertion plan",
                                       np, np == 1 ? "" : "s", at, over);
    }
    out->fields = fields;
    fields = NULL;
    out->measured = measured;
    measured = NULL;
    rc = 0;
out_all:
    free(all);
out:
    if (rc != 0) {
        prn_variant_free(out);
        prn_exit_model_free(em);
    }
    for (int k = 0; k < nb; k++) branch_free(&bs[k]);
    split_eval_free(&va);
    split_eval_free(&te);
    cJSON_Delete(fields);
    free(bs);
    free(plan);
    free(prefix);
    free(thr);
    free(rate);
    free(x);
    free(y);
    trn_net_free(trunk);
    trn_cfg_free(tcfg);
    cJSON_Delete(measured);
    return rc;
}
