/*
 * scan_cli.c: `prune scan`: NestDNN's filter importance profiling (thesis
 * Figure 3.3, after Li et al.'s sensitivity analysis): one ranked layer at a
 * time loses its least important fraction p of filters by the ranking
 * (--method), the other layers stay, no retraining, and the pruned network
 * is evaluated on a split (the test split by default).
 */
#include "prune_cli.h"
#include "prn_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_MAX_FRACTIONS 32

static int parse_fractions(const char *s, double *f, int *n, trn_err *err)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v > 0 && v < 1) || (*end && *end != ','))
            return trn_errf(err, "--fractions '%s': use numbers in (0, 1) separated by ',', e.g. 0.1,0.5,0.9", s);
        if (*n == SCAN_MAX_FRACTIONS) return trn_errf(err, "--fractions: at most %d", SCAN_MAX_FRACTIONS);
        f[(*n)++] = v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) return trn_errf(err, "--fractions is empty");
    return 0;
}

/* The diagnostics' pass: m training images spread over the split
 * (evaluation preprocessing), a batch at a time, each batch forwarded up to
 * the last ranked layer, then visit(ctx, net, k) with its k images. */
typedef int (*scan_visit)(void *ctx, const trn_net *net, int k, trn_err *err);

static int scan_images(trn_net *net, const prn_ranking *r, const trn_dataset *ds, size_t m, scan_visit visit,
                       void *ctx, trn_err *err)
{
    int batch = trn_net_batch(net), last = 0, rc = 0;
    trn_shape s = trn_net_input_shape(net);
    size_t in = trn_net_inputs(net), n = trn_dataset_count(ds, TRN_SPLIT_TRAIN);
    float *x = calloc((size_t)batch * in, sizeof *x);
    if (!x) return trn_errf(err, "out of memory");
    for (int l = 0; l < r->nlayers; l++)
        if (r->layers[l].layer > last) last = r->layers[l].layer;
    for (size_t i0 = 0; i0 < m && rc == 0; i0 += (size_t)batch) {
        int k = (int)(m - i0 < (size_t)batch ? m - i0 : (size_t)batch);
        memset(x, 0, (size_t)batch * in * sizeof *x);
        for (int j = 0; j < k && rc == 0; j++)
            rc = trn_image_load_input(trn_dataset_path(ds, TRN_SPLIT_TRAIN, (i0 + (size_t)j) * n / m), s.w, s.h,
                                      s.c, x + (size_t)j * in, err);
        if (rc || (rc = trn_net_forward_upto(net, x, last, err)) != 0) break;
        rc = visit(ctx, net, k, err);
    }
    free(x);
    return rc;
}

/* Every ranked layer's filters described over SCAN_MEAN_IMAGES training
 * images spread over the split (evaluation preprocessing) and every map
 * position: the output's mean (--drop mean replaces a dropped filter by it;
 * a diagnostic, not part of TRR nor of the paper's pruning), standard
 * deviation and fraction of zeros (a relu's off positions; --drop single's
 * description). stat[l] holds 3 x filters. */
#define SCAN_MEAN_IMAGES 512

struct stats {
    const prn_ranking *r;
    double **stat;
};

static int add_stats(void *ctx, const trn_net *net, int k, trn_err *err)
{
    (void)err;
    const struct stats *u = ctx;
    for (int l = 0; l < u->r->nlayers; l++) {
        const prn_rank_layer *L = &u->r->layers[l];
        const float *y = trn_net_layer_output(net, L->layer);
        size_t mp = (size_t)L->map, F = (size_t)L->filters;
        double *st = u->stat[l];
        for (int j = 0; j < k; j++)
            for (size_t f = 0; f < F; f++) {
                const float *q = y + ((size_t)j * F + f) * mp;
                for (size_t p = 0; p < mp; p++) {
                    st[f] += q[p];
                    st[F + f] += (double)q[p] * q[p];
                    st[2 * F + f] += q[p] == 0;
                }
            }
    }
    return 0;
}

static int filter_stats(trn_net *net, const prn_ranking *r, const trn_dataset *ds, double **stat, trn_err *err)
{
    size_t n = trn_dataset_count(ds, TRN_SPLIT_TRAIN), m = n < SCAN_MEAN_IMAGES ? n : SCAN_MEAN_IMAGES;
    struct stats u = {r, stat};
    int rc = scan_images(net, r, ds, m, add_stats, &u, err);
    for (int l = 0; l < r->nlayers && rc == 0; l++) {
        size_t F = (size_t)r->layers[l].filters;
        double cnt = (double)m * (double)r->layers[l].map, *st = stat[l];
        for (size_t f = 0; f < F; f++) {
            double mu = st[f] / cnt, v = st[F + f] / cnt - mu * mu;
            st[f] = mu;
            st[F + f] = sqrt(v > 0 ? v : 0);
            st[2 * F + f] /= cnt;
        }
    }
    return rc;
}

/* --corr N (a diagnostic, not part of TRR nor of the paper): the Pearson
 * correlation between every two filters' outputs of each ranked layer,
 * over N training images spread over the split (evaluation preprocessing)
 * and every map position; a filter whose output is constant there (a dead
 * one) correlates 0 with every other. corr[l] is filters x filters. */
struct corrs {
    const prn_ranking *r;
    double **corr, **sum, *col; /* col: one position's outputs, as many as the widest layer's filters */
};

static int add_corrs(void *ctx, const trn_net *net, int k, trn_err *err)
{
    (void)err;
    const struct corrs *u = ctx;
    for (int l = 0; l < u->r->nlayers; l++) {
        const prn_rank_layer *L = &u->r->layers[l];
        const float *y = trn_net_layer_output(net, L->layer);
        size_t mp = (size_t)L->map, F = (size_t)L->filters;
        double *col = u->col, *sum = u->sum[l], *corr = u->corr[l];
        for (int j = 0; j < k; j++)
            for (size_t p = 0; p < mp; p++) {
                for (size_t f = 0; f < F; f++) col[f] = y[((size_t)j * F + f) * mp + p];
                for (size_t f = 0; f < F; f++) {
                    sum[f] += col[f];
                    for (size_t g = f; g < F; g++) corr[f * F + g] += col[f] * col[g];
                }
            }
    }
    return 0;
}

static int filter_corr(trn_net *net, const prn_ranking *r, const trn_dataset *ds, size_t want, double **corr,
                       trn_err *err)
{
    size_t n = trn_dataset_count(ds, TRN_SPLIT_TRAIN), m = n < want ? n : want;
    int rc = 0;
    size_t widest = 1;
    for (int l = 0; l < r->nlayers; l++)
        if ((size_t)r->layers[l].filters > widest) widest = (size_t)r->layers[l].filters;
    size_t nl = r->nlayers > 0 ? (size_t)r->nlayers : 1;
    struct corrs u = {r, corr, calloc(nl, sizeof *u.sum), malloc(widest * sizeof *u.col)};
    if (!u.sum || !u.col) rc = trn_errf(err, "out of memory");
    for (int l = 0; l < r->nlayers && rc == 0; l++) {
        int F = r->layers[l].filters;
        memset(corr[l], 0, (size_t)F * (size_t)F * sizeof **corr);
        if (!(u.sum[l] = calloc((size_t)F, sizeof **u.sum))) rc = trn_errf(err, "out of memory");
    }
    if (rc == 0) rc = scan_images(net, r, ds, m, add_corrs, &u, err);
    for (int l = 0; l < r->nlayers && rc == 0; l++) {
        size_t F = (size_t)r->layers[l].filters;
        double cnt = (double)m * (double)r->layers[l].map, *c = corr[l], *sum = u.sum[l];
        for (size_t f = 0; f < F; f++)
            for (size_t g = f; g < F; g++) c[f * F + g] = c[f * F + g] / cnt - sum[f] / cnt * (sum[g] / cnt);
        for (size_t f = 0; f < F; f++)
            for (size_t g = f + 1; g < F; g++) {
                double d = sqrt(c[f * F + f] * c[g * F + g]);
                c[f * F + g] = c[g * F + f] = d > 1e-12 ? c[f * F + g] / d : 0;
            }
        for (size_t f = 0; f < F; f++) c[f * F + f] = 1;
    }
    for (int l = 0; u.sum && l < r->nlayers; l++) free(u.sum[l]);
    free(u.sum);
    free(u.col);
    return rc;
}

/* The mean |correlation| over the pairs of the n filters in set (0 when
 * n < 2); c is F x F. */
static double set_corr(const double *c, int F, const int *set, int n)
{
    double s = 0;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) s += fabs(c[(size_t)set[a] * (size_t)F + (size_t)set[b]]);
    return n > 1 ? s / ((double)n * (n - 1) / 2) : 0;
}

#define SCAN_CORR_SETS 1000

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The same statistic for SCAN_CORR_SETS random sets of n of the F filters
 * (set d, its seed's stream d): their mean, 5th and 95th percentiles, and
 * the fraction of them below v. */
static void random_corr(const double *c, int F, int n, uint64_t seed, uint64_t stream, double v, double out[4])
{
    double *vals = malloc(SCAN_CORR_SETS * sizeof *vals);
    int *pool = malloc((size_t)F * sizeof *pool);
    if (!vals || !pool) {
        free(vals), free(pool);
        out[0] = out[1] = out[2] = out[3] = NAN;
        return;
    }
    trn_rng root, g;
    trn_rng_seed(&root, seed);
    double mean = 0, below = 0;
    for (int d = 0; d < SCAN_CORR_SETS; d++) {
        g = trn_rng_fork(&root, stream * SCAN_CORR_SETS + (uint64_t)d);
        for (int f = 0; f < F; f++) pool[f] = f;
        for (int a = 0; a < n; a++) {
            int b = a + (int)trn_rng_below(&g, (uint64_t)(F - a)), t = pool[a];
            pool[a] = pool[b], pool[b] = t;
        }
        vals[d] = set_corr(c, F, pool, n);
        mean += vals[d] / SCAN_CORR_SETS;
        below += vals[d] < v;
    }
    qsort(vals, SCAN_CORR_SETS, sizeof *vals, dcmp);
    out[0] = mean;
    out[1] = vals[SCAN_CORR_SETS / 20];
    out[2] = vals[SCAN_CORR_SETS - 1 - SCAN_CORR_SETS / 20];
    out[3] = below / SCAN_CORR_SETS;
    free(vals);
    free(pool);
}

/* The parameter of layer i with role, or NULL (data written through it). */
static trn_param *scan_param(trn_net *net, int i, trn_param_role role)
{
    return (trn_param *)trn_net_param(net, i, role);
}

/* Replaces filter f of layer i by the constant c (its mean output): zero
 * weights, and the batch norm's mean and scale zero, its shift (the bias)
 * c, so the activation (relu or linear) passes c at every position. */
static void set_constant(trn_net *net, int i, int f, double c)
{
    trn_param *w = scan_param(net, i, TRN_PARAM_WEIGHTS), *b = scan_param(net, i, TRN_PARAM_BIASES);
    trn_param *g = scan_param(net, i, TRN_PARAM_SCALES), *mu = scan_param(net, i, TRN_PARAM_ROLLING_MEAN);
    memset(w->data + (size_t)f * (size_t)w->cols, 0, (size_t)w->cols * sizeof(float));
    if (g) g->data[f] = 0;
    if (mu) mu->data[f] = 0;
    b->data[f] = (float)c;
}

/* --bn B with --drop single: the batch-norm statistics re-estimated from B
 * training batches (prn_bn_recalibrate; the base's augmentation, the
 * loader's seed) after the filter is zeroed, the same batches for every
 * filter and for the unpruned reference. */
typedef struct scan_feed {
    trn_loader *ld;
    int batches;
} scan_feed;

static int scan_feed_batch(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    return trn_loader_get(((scan_feed *)ctx)->ld, index, x, y, err);
}

/* An evaluation copy of base with filter f of layer `layer` zeroed (f < 0:
 * none), its statistics re-estimated when feed->batches > 0. NULL with err. */
static trn_net *single_net(const trn_cfg *cfg, const trn_net *base, int layer, int f, scan_feed *feed,
                           trn_err *err)
{
    if (!feed->batches) {
        trn_net *ev = prn_cli_net_like(cfg, base, 64, 1, 0, err);
        if (ev && f >= 0) set_constant(ev, layer, f, 0);
        return ev;
    }
    trn_net *tr = prn_cli_net_like(cfg, base, 64, 0, 0, err), *ev = NULL;
    if (tr && f >= 0) set_constant(tr, layer, f, 0);
    if (tr && prn_bn_recalibrate(tr, scan_feed_batch, feed, 0, feed->batches, err) == 0)
        ev = prn_cli_net_like(cfg, tr, 64, 1, 0, err);
    trn_net_free(tr);
    return ev;
}

/* --drop single (a diagnostic, neither TRR nor the paper's pruning): every
 * filter of ranked layer l (r->layers[l]) alone has its output channel
 * zeroed (zero weights, batch-norm scale, mean and shift: the next layer
 * reads 0, as if the filter were removed; the batch-norm statistics stay),
 * and the split's top-1 and mean loss are measured. Adds "single" (per
 * filter: filter, score, l1, accuracy, loss) and "spearman" (the rank
 * correlation of the loss increase and of the top-1 drop with the ranking's
 * score and with L1's) to o, and prints them. */
static int scan_single(const trn_cfg *cfg, const trn_net *base, const trn_dataset *ds, trn_split sp, int threads,
                       const prn_ranking *r, const prn_ranking *l1, int l, double loss0, const rm_acc *a0,
                       const double *stat, const double *corr, scan_feed *feed, cJSON *o, trn_err *err)
{
    const prn_rank_layer *L = &r->layers[l];
    int F = L->filters, rc = 0;
    const trn_param *g = trn_net_param(base, L->layer, TRN_PARAM_SCALES),
                    *b = trn_net_param(base, L->layer, TRN_PARAM_BIASES);
    int *keep = malloc((size_t)F * sizeof *keep);
    double *dl = calloc((size_t)F, sizeof *dl), *da = calloc((size_t)F, sizeof *da);
    double *sm = calloc((size_t)F, sizeof *sm), *s1 = calloc((size_t)F, sizeof *s1);
    cJSON *js = cJSON_AddArrayToObject(o, "single");
    if (!dl || !da || !sm || !s1 || !js || !keep) rc = trn_errf(err, "out of memory");
    printf("\n  filter  %-10s %-8s top-1   loss    pos/neg  mean    std     zeros  bn-scale shift   next  max|r|\n",
           prn_rank_method_name(r->method), "l1");
    for (int f = 0; f < F && rc == 0; f++) {
        trn_net *ev = single_net(cfg, base, L->layer, f, feed, err);
        rm_acc a;
        double loss = 0;
        if (!ev) {
            rc = -1;
            break;
        }
        rc = prn_cli_evaluate_loss(ev, ds, sp, threads, &a, &loss, err);
        trn_net_free(ev);
        if (rc) break;
        dl[f] = loss - loss0;
        da[f] = a0->top1 - a.top1;
        sm[f] = L->score[f];
        s1[f] = l1->layers[l].score[f];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(js, e);
        cJSON_AddNumberToObject(e, "filter", f);
        cJSON_AddNumberToObject(e, "score", sm[f]);
        cJSON_AddNumberToObject(e, "l1", s1[f]);
        cJSON_AddItemToObject(e, "accuracy", prn_cli_acc_json(&a));
        cJSON_AddNumberToObject(e, "loss", loss);
        /* What describes the filter: TRR's two sums, its output over
         * training images, its batch norm, the share of the next layer's
         * squared input weights on its channel, its largest |correlation|
         * with another filter of the layer. */
        int n = 0;
        for (int q = 0; q < F; q++)
            if (q != f) keep[n++] = q;
        prn_keep kk = {L->layer, n, keep};
        double share = 0, mr = 0;
        if ((rc = prn_filters_next_share(base, &kk, 1, &share, err)) != 0) break;
        for (int q = 0; q < F; q++)
            if (q != f && fabs(corr[(size_t)f * (size_t)F + (size_t)q]) > mr) mr = fabs(corr[(size_t)f * (size_t)F + (size_t)q]);
        double ratio = L->neg[f] > 0 ? L->pos[f] / L->neg[f] : 0;
        if (r->method == PRN_RANK_TRR) {
            cJSON_AddNumberToObject(e, "neg", L->neg[f]);
            cJSON_AddNumberToObject(e, "pos", L->pos[f]);
        }
        cJSON_AddNumberToObject(e, "mean", stat[f]);
        cJSON_AddNumberToObject(e, "std", stat[F + f]);
        cJSON_AddNumberToObject(e, "zeros", stat[2 * F + f]);
        if (g) cJSON_AddNumberToObject(e, "bn_scale", g->data[f]);
        if (b) cJSON_AddNumberToObject(e, "shift", b->data[f]);
        cJSON_AddNumberToObject(e, "next_weight_share", 1 - share);
        cJSON_AddNumberToObject(e, "max_abs_corr", mr);
        printf("  %6d  %-10.4g %-8.4g %6.2f%% %.4f  %.3f    %-7.3f %-7.3f %.3f  %-8.3f %-7.3f %.3f %.3f\n", f,
               L->norm[f], s1[f], 100 * a.top1, loss, ratio, stat[f], stat[F + f], stat[2 * F + f],
               g ? g->data[f] : 1.0f, b ? b->data[f] : 0.0f, 1 - share, mr);
        fflush(stdout);
    }
    if (rc == 0) {
        double v[4] = {prn_spearman(dl, sm, F), prn_spearman(dl, s1, F), prn_spearman(da, sm, F),
                       prn_spearman(da, s1, F)};
        cJSON *c = cJSON_AddObjectToObject(o, "spearman");
        const char *k[4] = {"loss_score", "loss_l1", "top1_score", "top1_l1"};
        for (int q = 0; q < 4; q++) {
            if (isnan(v[q])) cJSON_AddNullToObject(c, k[q]);
            else cJSON_AddNumberToObject(c, k[q], v[q]);
        }
        printf("  Spearman with the loss increase: %s %.3f, l1 %.3f; with the top-1 drop: %s %.3f, l1 %.3f\n",
               prn_rank_method_name(r->method), v[0], v[1], prn_rank_method_name(r->method), v[2], v[3]);
    }
    free(dl), free(da), free(sm), free(s1), free(keep);
    return rc;
}

/* One zeroed array per ranked layer of r: k x filters doubles, or
 * filters x filters when square. NULL with err when out of memory. */
static double **layer_arrays(const prn_ranking *r, size_t k, int square, trn_err *err)
{
    double **a = calloc((size_t)r->nlayers, sizeof *a);
    for (int l = 0; a && l < r->nlayers; l++) {
        size_t F = (size_t)r->layers[l].filters;
        if (!(a[l] = calloc(k * F * (square ? F : 1), sizeof **a))) {
            while (l--) free(a[l]);
            free(a);
            a = NULL;
        }
    }
    if (!a) trn_errf(err, "out of memory");
    return a;
}

static void layer_arrays_free(double **a, const prn_ranking *r)
{
    for (int l = 0; a && l < r->nlayers; l++) free(a[l]);
    free(a);
}

#define SCAN_MAX_LAYERS 64

int prn_cli_scan(int argc, char **argv, trn_err *err)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *out = NULL, *method = NULL;
    const char *fr = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", *split = "test", *dropmode = "remove", *layers = NULL;
    const char *at = prn_trr_at_name(PRN_TRR_AT_DEFAULT), *dist = prn_trr_distance_name(PRN_TRR_DISTANCE_DEFAULT);
    long long seed = -1, triplets = PRN_TRR_TRIPLETS_DEFAULT, threads = 1, ncorr = 0, bn = 0;
    const ck_opt opts[] = {
        {"--cfg", "C", CK_STR, &cfgp, 0, 0, "the trained network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "D.data", CK_STR, &data, 0, 0, "the data set (triplets from train; accuracy on --split)"},
        {"--method", "M", CK_STR, &method, 0, 0, "the ranking: trr, l1 or random (a diagnostic baseline)"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0, "seed of the triplet sampling"},
        {"--triplets", "N", CK_INT, &triplets, 1, 100000000, "TRR's triplets (default 8192)"},
        {"--at", "P", CK_STR, &at, 0, 0, "TRR: where F is read: output, bn (before the activation), conv (before batch norm),\n"
                                          "pooled (after the pooling that follows the layer)"},
        {"--distance", "D", CK_STR, &dist, 0, 0, "TRR: squared (equation 3.1) or plain L2 distance"},
        {"--drop", "HOW", CK_STR, &dropmode, 0, 0, "remove (default: the filters go), mean (a diagnostic: each is replaced by its mean output)\n"
                                                  "or single (a diagnostic: each filter alone zeroed; --fractions unused)"},
        {"--bn", "B", CK_INT, &bn, 0, 100000, "with --drop single: re-estimate the batch-norm statistics from B training\n"
                                              "batches after each filter is zeroed (default 0: kept)"},
        {"--layers", "LIST", CK_STR, &layers, 0, 0, "only these ranked layers (selectors, e.g. conv@2,conv@5; default: all)"},
        {"--corr", "N", CK_INT, &ncorr, 0, 100000, "a diagnostic: the kept filters' mean |correlation| of outputs\n"
                                                  "over N training images, against random sets (default 0: none)"},
        {"--fractions", "LIST", CK_STR, &fr, 0, 0, "the pruned fractions (default 0.1,0.2,...,0.9)"},
        {"--split", "S", CK_STR, &split, 0, 0, "the split the accuracy is measured on (default test)"},
        {"--out", "FILE", CK_STR, &out, 0, 0, "the scan to write (JSON)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {0},
    };
    const ck_verb v = {
        "scan", NULL, NULL,
        "--cfg C --weights W --data D.data --method trr|l1|random --seed N --out FILE\n"
        "                  [--triplets N] [--at P] [--distance D] [--drop HOW] [--corr N] [--fractions LIST]\n"
        "                  [--layers LIST] [--bn B] [--split S] [--threads T]",
        "The sensitivity scan (NestDNN Figure 3.3): for every ranked layer and every fraction\n"
        "p, that layer alone loses its round(p x filters) least important filters by the\n"
        "ranking, without retraining, and the network's top-1 on the split is measured\n"
        "(with its 95% Wilson interval). Prints the table; writes FILE (JSON).\n"
        "--drop mean keeps the layer's shape and replaces each dropped filter by its mean\n"
        "output over 512 training images (a constant map): a diagnostic of how much of a\n"
        "filter's importance is its mean contribution to the next layer, not a pruning.\n"
        "--corr N (a diagnostic of redundancy among the kept filters): the Pearson correlation\n"
        "of every two filters' outputs over N training images and every map position; per\n"
        "point, the kept filters' mean |r| over their pairs, and the same for 1000 random sets\n"
        "of as many filters (mean, 5th and 95th percentiles, the fraction below the kept set's).\n"
        "--drop single (a diagnostic): each filter alone has its output channel zeroed (batch-norm\n"
        "statistics kept); per filter the split's top-1 and mean loss, and per layer the Spearman\n"
        "correlation of the loss increase and of the top-1 drop with the ranking's scores and L1's.\n",
        opts, NULL};
    const char *extra;
    int rc0;
    if (ck_parse("prune", &v, argc + 1, argv - 1, &extra, 0, &rc0) < 0) return rc0 == 0 ? 0 : -3;
    const char *need[][2] = {{"cfg", cfgp}, {"weights", weights}, {"data", data}, {"method", method}, {"out", out}};
    if (prn_cli_need(need, sizeof need / sizeof *need, seed, err)) return -2;
    if (prn_cli_out_ok(out, 0, err)) return -1;
    int m = prn_cli_method(method, err), sp = trn_split_parse(split);
    if (m < 0) return -2;
    if (sp < 0) return trn_errf(err, "--split '%s' is not a split: use train, valid or test", split), -2;
    int ati = prn_trr_at_parse(at), di = prn_trr_distance_parse(dist);
    if (ati < 0) return trn_errf(err, "--at '%s' is not a point: use output, bn, conv or pooled", at), -2;
    if (di < 0) return trn_errf(err, "--distance '%s' is not a distance: use squared or plain", dist), -2;
    int by_mean = !strcmp(dropmode, "mean"), single = !strcmp(dropmode, "single");
    if (!by_mean && !single && strcmp(dropmode, "remove"))
        return trn_errf(err, "--drop '%s': use remove (the filters go), mean (each replaced by its mean output) "
                             "or single (each filter alone zeroed)", dropmode), -2;
    double fracs[SCAN_MAX_FRACTIONS];
    int nf;
    if (parse_fractions(fr, fracs, &nf, err)) return -2;
    if (bn > 0 && !single) return trn_errf(err, "--bn %lld: only with --drop single", bn), -2;
    trn_set_threads((int)threads);

    int rc = -1;
    trn_cfg *cfg = trn_cfg_read(cfgp, err);
    trn_dataset *ds = NULL;
    trn_net *base = NULL, *rn = NULL, *ev = NULL;
    prn_ranking *r = NULL, *l1 = NULL;
    cJSON *j = NULL;
    int sel[SCAN_MAX_LAYERS], nsel = 0;
    scan_feed feed = {NULL, (int)bn};
    int *keep = NULL;
    double **corr = NULL, **stats = NULL;
    if (!cfg) return -1;
    if (layers) {
        prn_plan *plan = prn_plan_create(cfg, err);
        char buf[512];
        if (!plan) goto done;
        if (strlen(layers) >= sizeof buf) {
            prn_plan_free(plan);
            trn_errf(err, "--layers '%s' is too long", layers);
            goto done;
        }
        strcpy(buf, layers);
        for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
            if (nsel == SCAN_MAX_LAYERS || (sel[nsel++] = prn_select(plan, t, err)) < 0) {
                if (nsel == SCAN_MAX_LAYERS) trn_errf(err, "--layers: at most %d", SCAN_MAX_LAYERS);
                else trn_err_prefix(err, "--layers");
                prn_plan_free(plan);
                goto done;
            }
        }
        prn_plan_free(plan);
        if (nsel == 0) {
            trn_errf(err, "--layers is empty: name layers, e.g. conv@2,conv@5");
            goto done;
        }
    }
    if (!(ds = trn_dataset_open(data, err))) goto done;
    if (!trn_dataset_count(ds, (trn_split)sp)) {
        trn_errf(err, "%s: no %s split (or an empty one): choose another with --split", data, split);
        goto done;
    }
    if (!(base = prn_cli_load_base(cfg, weights, 64, err))) goto done;
    if ((int)trn_net_outputs(base) != trn_dataset_classes(ds)) {
        trn_errf(err, "%s has %zu outputs but %s has %d classes", cfgp, trn_net_outputs(base), data,
                 trn_dataset_classes(ds));
        goto done;
    }
    if (m == PRN_RANK_TRR && !(rn = prn_cli_load_base(cfg, weights, 48, err))) goto done;
    if (!(r = prn_cli_rank(rn ? rn : base, cfg, (prn_rank_method)m, ds, TRN_SPLIT_TRAIN, (uint64_t)seed,
                           (uint64_t)triplets, (prn_trr_at)ati, (prn_trr_distance)di, err)))
        goto done;
    for (int q = 0; q < nsel; q++) {
        int found = 0;
        for (int l = 0; l < r->nlayers; l++) found |= r->layers[l].layer == sel[q];
        if (!found) {
            trn_errf(err, "--layers: layer %d is not ranked (the ranked layers are the convolutional and "
                          "connected ones, the classifier excluded)", sel[q]);
            goto done;
        }
    }
    if (single && !(l1 = prn_cli_rank(base, cfg, PRN_RANK_L1, ds, TRN_SPLIT_TRAIN, 0, 0, (prn_trr_at)ati,
                                      (prn_trr_distance)di, err)))
        goto done;
    if (by_mean || single) {
        if (!(stats = layer_arrays(r, 3, 0, err))) goto done;
        if (filter_stats(base, r, ds, stats, err)) goto done;
    }
    if (single && ncorr == 0) ncorr = SCAN_MEAN_IMAGES;
    if (ncorr > 0) {
        if (!(corr = layer_arrays(r, 1, 1, err))) goto done;
        if (filter_corr(base, r, ds, (size_t)ncorr, corr, err)) goto done;
    }
    rm_acc a0;
    double loss0 = 0;
    if (single && bn > 0) {
        trn_loader_opts lo;
        if (prn_cli_loader_opts(base, cfgp, 64, (uint64_t)seed, (int)threads, (size_t)64 << 20, &lo, err) ||
            !(feed.ld = trn_loader_open(ds, TRN_SPLIT_TRAIN, &lo, err)))
            goto done;
    }
    if (single) {
        /* The reference: the unpruned network, its statistics re-estimated
         * the same way. */
        trn_net *ref = single_net(cfg, base, 0, -1, &feed, err);
        int bad = !ref || prn_cli_evaluate_loss(ref, ds, (trn_split)sp, (int)threads, &a0, &loss0, err);
        trn_net_free(ref);
        if (bad) goto done;
    } else if (prn_cli_evaluate(base, ds, (trn_split)sp, (int)threads, &a0, err))
        goto done;
    j = cJSON_CreateObject();
    cJSON *jl = cJSON_AddArrayToObject(j, "layers");
    cJSON_AddStringToObject(j, "format", "prune-scan");
    cJSON_AddStringToObject(j, "method", prn_rank_method_name((prn_rank_method)m));
    if (m == PRN_RANK_TRR) {
        cJSON_AddNumberToObject(j, "triplets", (double)triplets);
        cJSON_AddStringToObject(j, "at", at);
        cJSON_AddStringToObject(j, "distance", dist);
    }
    cJSON_AddStringToObject(j, "drop", dropmode);
    if (ncorr > 0) cJSON_AddNumberToObject(j, "corr_images", (double)ncorr);
    cJSON_AddNumberToObject(j, "seed", (double)seed);
    cJSON_AddStringToObject(j, "cfg", cfgp);
    cJSON_AddStringToObject(j, "weights", weights);
    cJSON_AddStringToObject(j, "data", data);
    cJSON_AddItemToObject(j, "base", prn_cli_acc_json(&a0));
    if (single) cJSON_AddNumberToObject(j, "base_loss", loss0);
    if (single) cJSON_AddNumberToObject(j, "bn_batches", (double)bn);
    printf("%s scan of %s on the %s split (%llu images; base top-1 %.2f%% [%.2f, %.2f])\n",
           prn_rank_method_name((prn_rank_method)m), cfgp, split, (unsigned long long)a0.images, 100 * a0.top1,
           100 * a0.lo, 100 * a0.hi);
    printf("%-6s %-8s", "layer", "filters");
    for (int f = 0; f < nf; f++) printf(" %6.0f%%", 100 * fracs[f]);
    printf("\n");
    for (int l = 0; l < r->nlayers; l++) {
        const prn_rank_layer *L = &r->layers[l];
        int chosen = nsel == 0;
        for (int q = 0; q < nsel; q++) chosen |= sel[q] == L->layer;
        if (!chosen) continue;
        cJSON *o = cJSON_CreateObject(), *pts = NULL;
        cJSON_AddItemToArray(jl, o);
        cJSON_AddNumberToObject(o, "layer", L->layer);
        cJSON_AddStringToObject(o, "type", trn_layer_kind_name(L->kind));
        cJSON_AddNumberToObject(o, "filters", L->filters);
        pts = cJSON_AddArrayToObject(o, "points");
        printf("L%-5d %-8d", L->layer, L->filters);
        fflush(stdout);
        if (single) {
            if (scan_single(cfg, base, ds, (trn_split)sp, (int)threads, r, l1, l, loss0, &a0, stats[l], corr[l], &feed, o, err))
                goto done;
            continue;
        }
        for (int f = 0; f < nf; f++) {
            int drop = (int)lround(fracs[f] * L->filters);
            if (drop > L->filters - 1) drop = L->filters - 1;
            /* The layer's most important filters, in ascending index order. */
            free(keep);
            if (!(keep = calloc((size_t)L->filters, sizeof *keep))) {
                trn_errf(err, "out of memory");
                goto done;
            }
            int n = 0;
            for (int q = 0; q < L->filters; q++) {
                int stays = 0;
                for (int z = 0; z < L->filters - drop; z++) stays |= L->order[z] == q;
                if (stays) keep[n++] = q;
            }
            prn_keep k = {L->layer, n, keep};
            rm_acc a;
            int bad;
            if (by_mean) {
                bad = !(ev = prn_cli_net_like(cfg, base, 64, 1, 0, err));
                for (int z = L->filters - drop; !bad && z < L->filters; z++)
                    set_constant(ev, L->layer, L->order[z], stats[l][L->order[z]]); /* its mean */
                bad = bad || prn_cli_evaluate(ev, ds, (trn_split)sp, (int)threads, &a, err);
            } else {
                trn_cfg *pc = prn_filters_cfg(cfg, base, &k, 1, err);
                trn_net_opts no;
                trn_net_opts_defaults(&no);
                no.batch = 64;
                no.infer_only = 1;
                bad = !pc || !(ev = trn_net_create(pc, &no, err)) || prn_filters_copy(base, ev, &k, 1, err) ||
                      prn_cli_evaluate(ev, ds, (trn_split)sp, (int)threads, &a, err);
                trn_cfg_free(pc);
            }
            trn_net_free(ev);
            ev = NULL;
            if (bad) goto done;
            cJSON *pt = cJSON_CreateObject();
            cJSON_AddItemToArray(pts, pt);
            cJSON_AddNumberToObject(pt, "fraction", fracs[f]);
            cJSON_AddNumberToObject(pt, "pruned", drop);
            cJSON_AddItemToObject(pt, "accuracy", prn_cli_acc_json(&a));
            double share;
            if (prn_filters_next_share(base, &k, 1, &share, err)) goto done;
            cJSON_AddNumberToObject(pt, "next_share", share);
            printf(" %6.2f%%", 100 * a.top1);
            fflush(stdout);
            if (corr) {
                double kc = set_corr(corr[l], L->filters, keep, n), rnd[4];
                random_corr(corr[l], L->filters, n, (uint64_t)seed, (uint64_t)l * SCAN_MAX_FRACTIONS + (uint64_t)f, kc, rnd);
                cJSON *c = cJSON_AddObjectToObject(pt, "kept_corr");
                cJSON_AddNumberToObject(c, "mean_abs", kc);
                cJSON_AddNumberToObject(c, "random_mean", rnd[0]);
                cJSON_AddNumberToObject(c, "random_p5", rnd[1]);
                cJSON_AddNumberToObject(c, "random_p95", rnd[2]);
                cJSON_AddNumberToObject(c, "random_below", rnd[3]);
            }
        }
        printf("\n");
        for (int f = 0; corr && f < nf; f++) {
            const cJSON *c = cJSON_GetObjectItem(cJSON_GetArrayItem(pts, f), "kept_corr");
            printf("  %3.0f%%: kept mean |r| %.3f, random sets %.3f [%.3f, %.3f], %.0f%% of them below\n",
                   100 * fracs[f], cJSON_GetObjectItem(c, "mean_abs")->valuedouble,
                   cJSON_GetObjectItem(c, "random_mean")->valuedouble, cJSON_GetObjectItem(c, "random_p5")->valuedouble,
                   cJSON_GetObjectItem(c, "random_p95")->valuedouble,
                   100 * cJSON_GetObjectItem(c, "random_below")->valuedouble);
        }
    }
    if (prn_cli_write_json(out, j, err) != 0) goto done;
    rc = 0;
done:
    layer_arrays_free(corr, r);
    layer_arrays_free(stats, r);
    trn_loader_close(feed.ld);
    free(keep);
    cJSON_Delete(j);
    prn_ranking_free(r);
    prn_ranking_free(l1);
    trn_net_free(rn);
    trn_net_free(base);
    trn_dataset_close(ds);
    trn_cfg_free(cfg);
    return rc;
}
