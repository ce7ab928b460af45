/*
 * scan.c: NestDNN's filter importance profiling (thesis Figure 3.3, after
 * Li et al.'s sensitivity analysis; `prune scan` parses, calls prn_scan,
 * prints): one ranked layer at a time loses its least important fraction p
 * of filters by the ranking, the other layers stay, no retraining, and the
 * pruned network is evaluated on a split. The diagnostics (--drop mean,
 * --drop single, --corr) are described where they are computed.
 */
#include "prn_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_MAX_LAYERS 64

const char *prn_scan_drop_name(prn_scan_drop d)
{
    static const char *const n[] = {"remove", "mean", "single"};
    return (unsigned)d < sizeof n / sizeof *n ? n[d] : NULL;
}

int prn_scan_drop_parse(const char *s)
{
    for (int d = 0; s && prn_scan_drop_name((prn_scan_drop)d); d++)
        if (!strcmp(s, prn_scan_drop_name((prn_scan_drop)d))) return d;
    return -1;
}

int prn_scan_fractions(const char *s, double *f, int *n, trn_err *err)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v > 0 && v < 1) || (*end && *end != ','))
            return trn_errf(err, "--fractions '%s': use numbers in (0, 1) separated by ',', e.g. 0.1,0.5,0.9", s);
        if (*n == PRN_SCAN_MAX_FRACTIONS) return trn_errf(err, "--fractions: at most %d", PRN_SCAN_MAX_FRACTIONS);
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
        trn_net *ev = prn_net_like(cfg, base, 64, 1, 0, 1, err);
        if (ev && f >= 0) set_constant(ev, layer, f, 0);
        return ev;
    }
    trn_net *tr = prn_net_like(cfg, base, 64, 0, 0, 1, err), *ev = NULL;
    if (tr && f >= 0) set_constant(tr, layer, f, 0);
    if (tr && prn_bn_recalibrate(tr, scan_feed_batch, feed, 0, feed->batches, err) == 0)
        ev = prn_net_like(cfg, tr, 64, 1, 0, 1, err);
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
 * score and with L1's) to o. */
static int scan_single(const trn_cfg *cfg, const trn_net *base, const trn_dataset *ds, trn_split sp, int threads,
                       const prn_ranking *r, const prn_ranking *l1, int l, double loss0, const prn_acc *a0,
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
    for (int f = 0; f < F && rc == 0; f++) {
        trn_net *ev = single_net(cfg, base, L->layer, f, feed, err);
        prn_acc a;
        double loss = 0;
        if (!ev) {
            rc = -1;
            break;
        }
        rc = prn_evaluate(ev, ds, sp, threads, &a, &loss, NULL, err);
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
        cJSON_AddNumberToObject(e, "norm", L->norm[f]);
        cJSON_AddNumberToObject(e, "l1", s1[f]);
        cJSON_AddItemToObject(e, "accuracy", prn_acc_json(&a));
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

/* A scan under way: its inputs, base network, rankings and statistics. */
typedef struct scan_run {
    const prn_scan_opts *o;
    trn_cfg *cfg;
    trn_dataset *ds;
    trn_net *base;
    prn_ranking *r, *l1;
    int sel[SCAN_MAX_LAYERS], nsel;
    scan_feed feed;
    double **corr, **stats;
    prn_acc a0;
    double loss0;
} scan_run;

/* --layers: the selected layers (o->layers, comma-separated selectors). */
static int select_layers(scan_run *u, trn_err *err)
{
    const char *layers = u->o->layers;
    if (!layers) return 0;
    char buf[512];
    if (strlen(layers) >= sizeof buf) return trn_errf(err, "--layers '%s' is too long", layers);
    prn_plan *plan = prn_plan_create(u->cfg, err);
    if (!plan) return -1;
    strcpy(buf, layers);
    int rc = 0;
    for (char *t = strtok(buf, ","); t && rc == 0; t = strtok(NULL, ",")) {
        if (u->nsel == SCAN_MAX_LAYERS) rc = trn_errf(err, "--layers: at most %d", SCAN_MAX_LAYERS);
        else if ((u->sel[u->nsel++] = prn_select(plan, t, err)) < 0) rc = -1, trn_err_prefix(err, "--layers");
    }
    prn_plan_free(plan);
    if (rc == 0 && u->nsel == 0) rc = trn_errf(err, "--layers is empty: name layers, e.g. conv@2,conv@5");
    return rc;
}

/* The data set, the base, the rankings (and L1's for --drop single), the
 * selected layers checked against them. */
static int open_scan(scan_run *u, trn_err *err)
{
    const prn_scan_opts *o = u->o;
    if (!(u->cfg = trn_cfg_read(o->cfg, err)) || select_layers(u, err) || !(u->ds = trn_dataset_open(o->data, err)))
        return -1;
    if (!trn_dataset_count(u->ds, o->split))
        return trn_errf(err, "%s: no %s split (or an empty one): choose another with --split", o->data,
                        trn_split_name(o->split));
    if (!(u->base = prn_load_base(u->cfg, o->weights, 64, err))) return -1;
    if ((int)trn_net_outputs(u->base) != trn_dataset_classes(u->ds))
        return trn_errf(err, "%s has %zu outputs but %s has %d classes", o->cfg, trn_net_outputs(u->base), o->data,
                        trn_dataset_classes(u->ds));
    trn_net *rn = o->method == PRN_RANK_TRR ? prn_load_base(u->cfg, o->weights, 48, err) : NULL;
    if (o->method == PRN_RANK_TRR && !rn) return -1;
    u->r = prn_rank_data(rn ? rn : u->base, u->cfg, o->method, u->ds, TRN_SPLIT_TRAIN, o->seed, o->triplets, o->at,
                         o->distance, err);
    trn_net_free(rn);
    if (!u->r) return -1;
    for (int q = 0; q < u->nsel; q++) {
        int found = 0;
        for (int l = 0; l < u->r->nlayers; l++) found |= u->r->layers[l].layer == u->sel[q];
        if (!found)
            return trn_errf(err, "--layers: layer %d is not ranked (the ranked layers are the convolutional and "
                                 "connected ones, the classifier excluded)", u->sel[q]);
    }
    if (o->drop == PRN_SCAN_SINGLE && !(u->l1 = prn_rank_data(u->base, u->cfg, PRN_RANK_L1, u->ds, TRN_SPLIT_TRAIN,
                                                              0, 0, o->at, o->distance, err)))
        return -1;
    return 0;
}

/* The filter statistics and correlations the diagnostics need, and the
 * base's accuracy (for --drop single, of the unpruned network with its
 * statistics re-estimated the same way as each zeroed filter's). */
static int measure_base(scan_run *u, trn_err *err)
{
    const prn_scan_opts *o = u->o;
    int single = o->drop == PRN_SCAN_SINGLE, ncorr = o->corr_images;
    if (o->drop != PRN_SCAN_REMOVE &&
        (!(u->stats = layer_arrays(u->r, 3, 0, err)) || filter_stats(u->base, u->r, u->ds, u->stats, err)))
        return -1;
    if (single && ncorr == 0) ncorr = SCAN_MEAN_IMAGES;
    if (ncorr > 0 && (!(u->corr = layer_arrays(u->r, 1, 1, err)) ||
                      filter_corr(u->base, u->r, u->ds, (size_t)ncorr, u->corr, err)))
        return -1;
    u->feed.batches = o->bn;
    if (single && o->bn > 0) {
        trn_loader_opts lo;
        if (prn_loader_opts(u->base, o->cfg, 64, o->seed, o->threads, (size_t)64 << 20, &lo, err) ||
            !(u->feed.ld = trn_loader_open(u->ds, TRN_SPLIT_TRAIN, &lo, err)))
            return -1;
    }
    if (!single) return prn_evaluate(u->base, u->ds, o->split, o->threads, &u->a0, NULL, NULL, err);
    trn_net *ref = single_net(u->cfg, u->base, 0, -1, &u->feed, err);
    int bad = !ref || prn_evaluate(ref, u->ds, o->split, o->threads, &u->a0, &u->loss0, NULL, err);
    trn_net_free(ref);
    return bad ? -1 : 0;
}

/* The scan's head: format, method and its settings, the inputs, the base. */
static cJSON *scan_head(const scan_run *u)
{
    const prn_scan_opts *o = u->o;
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddArrayToObject(j, "layers");
    cJSON_AddStringToObject(j, "format", "prune-scan");
    cJSON_AddStringToObject(j, "method", prn_rank_method_name(o->method));
    if (o->method == PRN_RANK_TRR) {
        cJSON_AddNumberToObject(j, "triplets", (double)o->triplets);
        cJSON_AddStringToObject(j, "at", prn_trr_at_name(o->at));
        cJSON_AddStringToObject(j, "distance", prn_trr_distance_name(o->distance));
    }
    cJSON_AddStringToObject(j, "drop", prn_scan_drop_name(o->drop));
    int ncorr = o->corr_images ? o->corr_images : o->drop == PRN_SCAN_SINGLE ? SCAN_MEAN_IMAGES : 0;
    if (ncorr > 0) cJSON_AddNumberToObject(j, "corr_images", (double)ncorr);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    cJSON_AddStringToObject(j, "cfg", o->cfg);
    cJSON_AddStringToObject(j, "weights", o->weights);
    cJSON_AddStringToObject(j, "data", o->data);
    cJSON_AddItemToObject(j, "base", prn_acc_json(&u->a0));
    if (o->drop == PRN_SCAN_SINGLE) {
        cJSON_AddNumberToObject(j, "base_loss", u->loss0);
        cJSON_AddNumberToObject(j, "bn_batches", (double)o->bn);
    }
    return j;
}

/* Ranked layer l without its `drop` least important filters (removed, or
 * each replaced by its mean output): top-1 on the split into *a; the kept
 * filters (ascending index order) in keep[0..*n). */
static int prune_point(scan_run *u, int l, int drop, int *keep, int *n, prn_acc *a, trn_err *err)
{
    const prn_rank_layer *L = &u->r->layers[l];
    *n = 0;
    for (int q = 0; q < L->filters; q++) {
        int stays = 0;
        for (int z = 0; z < L->filters - drop; z++) stays |= L->order[z] == q;
        if (stays) keep[(*n)++] = q;
    }
    prn_keep k = {L->layer, *n, keep};
    trn_net *ev = NULL;
    int bad;
    if (u->o->drop == PRN_SCAN_MEAN) {
        bad = !(ev = prn_net_like(u->cfg, u->base, 64, 1, 0, 1, err));
        for (int z = L->filters - drop; !bad && z < L->filters; z++)
            set_constant(ev, L->layer, L->order[z], u->stats[l][L->order[z]]); /* its mean */
    } else {
        trn_cfg *pc = prn_filters_cfg(u->cfg, u->base, &k, 1, err);
        trn_net_opts no;
        trn_net_opts_defaults(&no);
        no.batch = 64;
        no.infer_only = 1;
        bad = !pc || !(ev = trn_net_create(pc, &no, err)) || prn_filters_copy(u->base, ev, &k, 1, err);
        trn_cfg_free(pc);
    }
    bad = bad || prn_evaluate(ev, u->ds, u->o->split, u->o->threads, a, NULL, NULL, err);
    trn_net_free(ev);
    return bad ? -1 : 0;
}

/* Layer l's points, one per fraction, into pts. */
static int layer_points(scan_run *u, int l, cJSON *pts, trn_err *err)
{
    const prn_scan_opts *o = u->o;
    const prn_rank_layer *L = &u->r->layers[l];
    int *keep = calloc((size_t)L->filters, sizeof *keep), rc = keep ? 0 : trn_errf(err, "out of memory");
    for (int f = 0; f < o->nfractions && rc == 0; f++) {
        int drop = (int)lround(o->fractions[f] * L->filters), n;
        if (drop > L->filters - 1) drop = L->filters - 1;
        prn_keep k = {L->layer, 0, keep};
        prn_acc a;
        double share;
        if ((rc = prune_point(u, l, drop, keep, &n, &a, err)) != 0) break;
        k.n = n;
        if ((rc = prn_filters_next_share(u->base, &k, 1, &share, err)) != 0) break;
        cJSON *pt = cJSON_CreateObject();
        cJSON_AddItemToArray(pts, pt);
        cJSON_AddNumberToObject(pt, "fraction", o->fractions[f]);
        cJSON_AddNumberToObject(pt, "pruned", drop);
        cJSON_AddItemToObject(pt, "accuracy", prn_acc_json(&a));
        cJSON_AddNumberToObject(pt, "next_share", share);
        if (!u->corr) continue;
        double kc = set_corr(u->corr[l], L->filters, keep, n), rnd[4];
        random_corr(u->corr[l], L->filters, n, o->seed, (uint64_t)l * PRN_SCAN_MAX_FRACTIONS + (uint64_t)f, kc, rnd);
        cJSON *c = cJSON_AddObjectToObject(pt, "kept_corr");
        cJSON_AddNumberToObject(c, "mean_abs", kc);
        cJSON_AddNumberToObject(c, "random_mean", rnd[0]);
        cJSON_AddNumberToObject(c, "random_p5", rnd[1]);
        cJSON_AddNumberToObject(c, "random_p95", rnd[2]);
        cJSON_AddNumberToObject(c, "random_below", rnd[3]);
    }
    free(keep);
    return rc;
}

/* Every selected ranked layer's entry, each passed to the caller when done. */
static int scan_layers(scan_run *u, cJSON *j, trn_err *err)
{
    const prn_scan_opts *o = u->o;
    cJSON *jl = cJSON_GetObjectItem(j, "layers");
    for (int l = 0; l < u->r->nlayers; l++) {
        const prn_rank_layer *L = &u->r->layers[l];
        int chosen = u->nsel == 0;
        for (int q = 0; q < u->nsel; q++) chosen |= u->sel[q] == L->layer;
        if (!chosen) continue;
        cJSON *x = cJSON_CreateObject();
        if (!x) return trn_errf(err, "out of memory");
        cJSON_AddItemToArray(jl, x);
        cJSON_AddNumberToObject(x, "layer", L->layer);
        cJSON_AddStringToObject(x, "type", trn_layer_kind_name(L->kind));
        cJSON_AddNumberToObject(x, "filters", L->filters);
        cJSON *pts = cJSON_AddArrayToObject(x, "points");
        int rc = o->drop == PRN_SCAN_SINGLE
                     ? scan_single(u->cfg, u->base, u->ds, o->split, o->threads, u->r, u->l1, l, u->loss0, &u->a0,
                                   u->stats[l], u->corr[l], &u->feed, x, err)
                     : layer_points(u, l, pts, err);
        if (rc) return -1;
        if (o->progress) o->progress(o->progress_ctx, j, x);
    }
    return 0;
}

int prn_scan(const prn_scan_opts *o, cJSON **doc, trn_err *err)
{
    *doc = NULL;
    if (!o || !o->cfg || !o->weights || !o->data || (o->drop != PRN_SCAN_SINGLE && o->nfractions < 1))
        return trn_errf(err, "prn_scan: cfg, weights, data and fractions are needed");
    if (o->bn > 0 && o->drop != PRN_SCAN_SINGLE) return trn_errf(err, "--bn %d: only with --drop single", o->bn);
    scan_run u = {.o = o};
    cJSON *j = NULL;
    int rc = open_scan(&u, err) || measure_base(&u, err) ? -1 : 0;
    if (rc == 0 && !(j = scan_head(&u))) rc = trn_errf(err, "out of memory");
    if (rc == 0 && o->progress) o->progress(o->progress_ctx, j, NULL);
    if (rc == 0) rc = scan_layers(&u, j, err);
    if (rc == 0) *doc = j;
    else cJSON_Delete(j);
    layer_arrays_free(u.corr, u.r);
    layer_arrays_free(u.stats, u.r);
    trn_loader_close(u.feed.ld);
    prn_ranking_free(u.r);
    prn_ranking_free(u.l1);
    trn_net_free(u.base);
    trn_dataset_close(u.ds);
    trn_cfg_free(u.cfg);
    return rc;
}
