/*
 * rank.c: filter importance rankings (NestDNN, the thesis
 * section 3.4.1.3, docs/papers.md): Triplet Response Residual and, as the
 * baseline, the L1 norm of a filter's weights (Li et al., the paper's [1]).
 *
 * TRR of filter i of a layer, over the sampled triplets (anc, pos, neg),
 * anc and pos of one class, neg of another (equation 3.1):
 *   TRR_i = sum_t ||F_i(anc_t) - F_i(neg_t)||^2 - ||F_i(anc_t) - F_i(pos_t)||^2
 * F_i is the filter's output map as the layer outputs it (after batch norm
 * and the activation: docs/design.md's choice; the paper says "the generated
 * feature map"), computed by inference forwards (batch norm with the
 * rolling statistics, dropout off). The sums are accumulated in double, per
 * triplet in triplet order, so the result does not depend on the thread
 * count. The paper sums over "all the triplets from the training dataset"
 * (cubic in its size); we sample `triplets` of them with the caller's seed
 * (prn_triplets_sample). The CLIs default to PRN_TRR_TRIPLETS_DEFAULT
 * (8192): with 256, two seeds ranked the convolutional layers' filters
 * with Spearman correlations of 0.16-0.70 (prune/README.md, "Measured:
 * TRR against L1"), the sampling noise, not TRR, decided the scan.
 *
 * Ranking across layers: each layer's TRR is normalised by its map size
 * and the triplet count (the mean residual per map position and triplet),
 * so a layer with 32x32 maps does not outrank one with 4x4 maps by map size
 * alone (our choice; the paper does not say how it compares layers). The L1
 * score of a filter is normalised by its weight count (the mean absolute
 * weight), for the same reason: a 5x5x32 filter's sum is not comparable to
 * a 3x3x48 one's. Within a layer both normalisations keep the order.
 *
 * Which layers are ranked: every [convolutional] layer (groups = 1) and
 * every [connected] layer except the last [connected] (the classifier,
 * whose outputs are the classes).
 */
#include "prn_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *prn_rank_method_name(prn_rank_method m)
{
    switch (m) {
    case PRN_RANK_TRR: return "trr";
    case PRN_RANK_L1: return "l1";
    case PRN_RANK_RANDOM: return "random";
    default: return "?";
    }
}

int prn_rank_method_parse(const char *s)
{
    if (!s) return -1;
    if (!strcmp(s, "trr")) return PRN_RANK_TRR;
    if (!strcmp(s, "l1")) return PRN_RANK_L1;
    if (!strcmp(s, "random")) return PRN_RANK_RANDOM;
    return -1;
}

void prn_ranking_free(prn_ranking *r)
{
    if (!r) return;
    for (int l = 0; l < r->nlayers; l++) {
        free(r->layers[l].score);
        free(r->layers[l].norm);
        free(r->layers[l].neg);
        free(r->layers[l].pos);
        free(r->layers[l].order);
    }
    free(r->layers);
    free(r->order);
    free(r);
}

int prn_rank_layers(const trn_net *net, int *layers, int max)
{
    int n = trn_net_layers(net), last_fc = -1, count = 0;
    trn_layer_info info;
    for (int i = 0; i < n; i++)
        if (trn_net_layer_info(net, i, &info) == 0 && info.kind == TRN_LAYER_CONNECTED) last_fc = i;
    for (int i = 0; i < n; i++) {
        if (trn_net_layer_info(net, i, &info) != 0) continue;
        int ok = (info.kind == TRN_LAYER_CONVOLUTIONAL && info.groups <= 1) ||
                 (info.kind == TRN_LAYER_CONNECTED && i != last_fc);
        if (!ok) continue;
        if (layers && count < max) layers[count] = i;
        count++;
    }
    return count;
}

/* Allocates the ranking's layer table for net. NULL with err. */
static prn_ranking *ranking_new(const trn_net *net, prn_rank_method m, trn_err *err)
{
    prn_ranking *r = calloc(1, sizeof *r);
    int n = prn_rank_layers(net, NULL, 0);
    if (!r) goto oom;
    r->method = m;
    if (n == 0) {
        free(r);
        trn_errf(err, "the network has no layer to rank: a [convolutional] layer or a [connected] "
                      "layer other than the classifier (the last [connected])");
        return NULL;
    }
    int *idx = malloc((size_t)n * sizeof *idx);
    r->layers = calloc((size_t)n, sizeof *r->layers);
    if (!idx || !r->layers) {
        free(idx);
        goto oom;
    }
    r->nlayers = n;
    prn_rank_layers(net, idx, n);
    for (int l = 0; l < n; l++) {
        prn_rank_layer *L = &r->layers[l];
        trn_layer_info info;
        trn_net_layer_info(net, idx[l], &info);
        L->layer = idx[l];
        L->kind = info.kind;
        L->filters = info.out.c;
        L->map = (uint64_t)info.out.h * (uint64_t)info.out.w;
        L->f_layer = L->layer;
        L->f_map = L->map;
        const trn_param *w = trn_net_param(net, idx[l], TRN_PARAM_WEIGHTS);
        L->filter_weights = w ? (uint64_t)w->cols : 0;
        L->score = calloc((size_t)L->filters, sizeof *L->score);
        L->norm = calloc((size_t)L->filters, sizeof *L->norm);
        L->order = calloc((size_t)L->filters, sizeof *L->order);
        L->neg = calloc((size_t)L->filters, sizeof *L->neg);
        L->pos = calloc((size_t)L->filters, sizeof *L->pos);
        if (!L->score || !L->norm || !L->order || !L->neg || !L->pos) {
            free(idx);
            goto oom;
        }
        r->filters += L->filters;
    }
    free(idx);
    return r;
oom:
    prn_ranking_free(r);
    trn_errf(err, "out of memory");
    return NULL;
}

/* The sort keys of the global order and of a layer's order. */
typedef struct rank_key {
    double v;
    int layer, filter; /* positions in the ranking's layer table */
} rank_key;

/* Least important first: ascending normalised score; ties go to the later
 * layer, then the later filter, so the earlier filters of the earliest
 * layers are kept longest (a fixed, documented order). */
static int key_cmp(const void *a, const void *b)
{
    const rank_key *x = a, *y = b;
    if (x->v < y->v) return -1;
    if (x->v > y->v) return 1;
    if (x->layer != y->layer) return x->layer > y->layer ? -1 : 1;
    if (x->filter != y->filter) return x->filter > y->filter ? -1 : 1;
    return 0;
}

/* Fills every layer's norm and order and the global order from score. */
static int ranking_finish(prn_ranking *r, trn_err *err)
{
    rank_key *k = malloc((size_t)r->filters * sizeof *k);
    r->order = malloc((size_t)r->filters * sizeof *r->order);
    if (!k || !r->order) {
        free(k);
        return trn_errf(err, "out of memory");
    }
    int n = 0;
    for (int l = 0; l < r->nlayers; l++) {
        prn_rank_layer *L = &r->layers[l];
        double d = r->method == PRN_RANK_TRR ? (double)L->f_map * (double)(r->triplets ? r->triplets : 1)
                   : r->method == PRN_RANK_L1 ? (double)(L->filter_weights ? L->filter_weights : 1)
                                              : 1;
        int first = n;
        for (int f = 0; f < L->filters; f++) {
            if (!isfinite(L->score[f])) {
                free(k);
                return trn_errf(err, "layer %d filter %d: its %s score is not a finite number "
                                     "(the weights or the images hold NaN or infinity)",
                                L->layer, f, prn_rank_method_name(r->method));
            }
            L->norm[f] = L->score[f] / d;
            k[n++] = (rank_key){L->norm[f], l, f};
        }
        /* The layer's own order: most important first (the reverse of the
         * least-important-first order of its keys). */
        qsort(k + first, (size_t)L->filters, sizeof *k, key_cmp);
        for (int f = 0; f < L->filters; f++) L->order[f] = k[first + L->filters - 1 - f].filter;
    }
    qsort(k, (size_t)n, sizeof *k, key_cmp);
    for (int i = 0; i < n; i++) r->order[i] = (prn_rank_entry){k[i].layer, k[i].filter};
    free(k);
    return 0;
}

/* L1: the sum of |w| over each filter's weights (row f of the layer's
 * weight matrix: conv (filters, c*size*size), connected (outputs, inputs)). */
static int rank_l1(prn_ranking *r, const trn_net *net, trn_err *err)
{
    for (int l = 0; l < r->nlayers; l++) {
        prn_rank_layer *L = &r->layers[l];
        const trn_param *w = trn_net_param(net, L->layer, TRN_PARAM_WEIGHTS);
        if (!w || w->rows != L->filters)
            return trn_errf(err, "layer %d: no weight matrix of %d rows", L->layer, L->filters);
        for (int f = 0; f < L->filters; f++) {
            const float *row = w->data + (size_t)f * (size_t)w->cols;
            double s = 0;
            for (int j = 0; j < w->cols; j++) s += fabs((double)row[j]);
            L->score[f] = s;
        }
    }
    return 0;
}

/* RANDOM (a diagnostic baseline): filter f of ranked layer l scores a
 * uniform number in [0, 1) from stream (layer index << 32 | f) of seed, so
 * the score of a filter does not depend on the other layers. */
static void rank_random(prn_ranking *r, uint64_t seed)
{
    trn_rng root;
    trn_rng_seed(&root, seed);
    for (int l = 0; l < r->nlayers; l++) {
        prn_rank_layer *L = &r->layers[l];
        for (int f = 0; f < L->filters; f++) {
            trn_rng g = trn_rng_fork(&root, (uint64_t)L->layer << 32 | (uint64_t)f);
            L->score[f] = (double)trn_rng_below(&g, (uint64_t)1 << 53) / (double)((uint64_t)1 << 53);
        }
    }
}

const char *prn_trr_at_name(prn_trr_at a)
{
    switch (a) {
    case PRN_TRR_AT_OUTPUT: return "output";
    case PRN_TRR_AT_BN: return "bn";
    case PRN_TRR_AT_CONV: return "conv";
    case PRN_TRR_AT_POOLED: return "pooled";
    default: return "?";
    }
}

int prn_trr_at_parse(const char *s)
{
    for (int a = 0; s && a < PRN_TRR_AT_COUNT; a++)
        if (!strcmp(s, prn_trr_at_name((prn_trr_at)a))) return a;
    return -1;
}

const char *prn_trr_distance_name(prn_trr_distance d)
{
    switch (d) {
    case PRN_TRR_SQUARED: return "squared";
    case PRN_TRR_PLAIN: return "plain";
    default: return "?";
    }
}

int prn_trr_distance_parse(const char *s)
{
    for (int d = 0; s && d < PRN_TRR_DISTANCE_COUNT; d++)
        if (!strcmp(s, prn_trr_distance_name((prn_trr_distance)d))) return d;
    return -1;
}

/* Where a ranked layer's F_i comes from: src's output at the layer (src is
 * the ranked net, or a copy whose layer has a linear activation: the values
 * after batch norm, before the activation), each filter's differences
 * multiplied by k[f] (CONV: undoes batch norm's scaling, (sqrt(var) + 1e-6)
 * / scale, the engine's inference arithmetic; NULL: 1). */
typedef struct trr_source {
    trn_net *own; /* a copy this function built, or NULL when src is the net */
    double *k;
} trr_source;

static void trr_sources_free(trr_source *s, int n)
{
    for (int l = 0; s && l < n; l++) {
        trn_net_free(s[l].own);
        free(s[l].k);
    }
    free(s);
}

/* The sources of every ranked layer for o->at. NULL with err. */
static trr_source *trr_sources(const prn_ranking *r, trn_net *net, const prn_rank_opts *o, trn_err *err)
{
    trr_source *s = calloc((size_t)r->nlayers, sizeof *s);
    if (!s) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    if (o->at == PRN_TRR_AT_OUTPUT || o->at == PRN_TRR_AT_POOLED) return s;
    if (!o->cfg) {
        trn_errf(err, "TRR before the activation needs the network's cfg (prn_rank_opts.cfg)");
        free(s);
        return NULL;
    }
    for (int l = 0; l < r->nlayers; l++) {
        const prn_rank_layer *L = &r->layers[l];
        trn_layer_info info;
        if (trn_net_layer_info(net, L->layer, &info) != 0) {
            trn_errf(err, "layer %d: no layer information", L->layer);
            goto fail;
        }
        if (info.activation != TRN_ACT_LINEAR) {
            trn_cfg *c = trn_cfg_clone(o->cfg, err);
            if (!c || trn_cfg_set(c, info.section, "activation", "linear", err) != 0 ||
                !(s[l].own = prn_net_like(c, net, trn_net_batch(net), 1, trn_net_seed(net), 0, err))) {
                trn_cfg_free(c);
                trn_err_prefix(err, "layer %d with a linear activation", L->layer);
                goto fail;
            }
            trn_cfg_free(c);
        }
        const trn_param *sc = trn_net_param(net, L->layer, TRN_PARAM_SCALES),
                        *var = trn_net_param(net, L->layer, TRN_PARAM_ROLLING_VARIANCE);
        if (o->at == PRN_TRR_AT_CONV && sc && var) {
            if (!(s[l].k = malloc((size_t)L->filters * sizeof *s[l].k))) {
                trn_errf(err, "out of memory");
                goto fail;
            }
            for (int f = 0; f < L->filters; f++) {
                double g = sc->data[f];
                if (!(fabs(g) > 0) || !isfinite(g)) {
                    trn_errf(err, "layer %d filter %d: batch-norm scale %g: its map before batch norm "
                                  "cannot be recovered (rank with --at bn or output)",
                             L->layer, f, g);
                    goto fail;
                }
                s[l].k[f] = (sqrt((double)var->data[f]) + 1e-6) / g;
            }
        }
    }
    return s;
fail:
    trr_sources_free(s, r->nlayers);
    return NULL;
}

/* TRR: batch/3 triplets per forward; image 3j of the batch is triplet j's
 * anchor, 3j+1 its positive, 3j+2 its negative. */
static int rank_trr(prn_ranking *r, trn_net *net, const prn_rank_opts *o, trn_err *err)
{
    int batch = trn_net_batch(net), per = batch / 3;
    if (per < 1)
        return trn_errf(err, "TRR needs a network built with a batch of 3 images or more "
                             "(one triplet per 3 images); this one has batch %d", batch);
    if (!o->triplet) return trn_errf(err, "TRR needs a triplet source (prn_rank_opts.triplet)");
    if (o->triplets == 0) return trn_errf(err, "TRR needs at least one triplet (the count is 0)");
    if ((unsigned)o->at >= PRN_TRR_AT_COUNT || (unsigned)o->distance >= PRN_TRR_DISTANCE_COUNT)
        return trn_errf(err, "unknown TRR variant (at %d, distance %d)", (int)o->at, (int)o->distance);
    trr_source *src = trr_sources(r, net, o, err);
    if (!src) return -1;
    size_t in = trn_net_inputs(net);
    float *x = calloc((size_t)batch * in, sizeof *x);
    if (!x) {
        trr_sources_free(src, r->nlayers);
        return trn_errf(err, "out of memory");
    }
    /* --at pooled: F is the output of the pooling and dropout layers that
     * follow the layer and keep its channels (Darknet's maxpool, avgpool and
     * dropout read the layer before them). */
    for (int l = 0; l < r->nlayers && o->at == PRN_TRR_AT_POOLED; l++) {
        prn_rank_layer *L = &r->layers[l];
        trn_layer_info ni;
        while (L->f_layer + 1 < trn_net_layers(net) && trn_net_layer_info(net, L->f_layer + 1, &ni) == 0 &&
               (ni.kind == TRN_LAYER_MAXPOOL || ni.kind == TRN_LAYER_AVGPOOL || ni.kind == TRN_LAYER_DROPOUT) &&
               ni.out.c == L->filters) {
            L->f_layer++;
            L->f_map = (uint64_t)ni.out.h * (uint64_t)ni.out.w;
        }
    }
    int last = -1;
    for (int l = 0; l < r->nlayers; l++)
        if (!src[l].own && r->layers[l].f_layer > last) last = r->layers[l].f_layer;
    int rc = 0;
    for (uint64_t t0 = 0; t0 < o->triplets && rc == 0; t0 += (uint64_t)per) {
        int k = (int)((o->triplets - t0) < (uint64_t)per ? o->triplets - t0 : (uint64_t)per);
        for (int j = 0; j < k && rc == 0; j++) {
            float *a = x + (size_t)(3 * j) * in;
            rc = o->triplet(o->triplet_ctx, t0 + (uint64_t)j, a, a + in, a + 2 * in, err);
            if (rc) trn_err_prefix(err, "triplet %llu", (unsigned long long)(t0 + (uint64_t)j));
        }
        if (rc || (last >= 0 && (rc = trn_net_forward_upto(net, x, last, err)) != 0)) break;
        for (int l = 0; l < r->nlayers && rc == 0; l++) {
            prn_rank_layer *L = &r->layers[l];
            trn_net *from = src[l].own ? src[l].own : net;
            if (src[l].own && (rc = trn_net_forward_upto(from, x, L->layer, err)) != 0) break;
            const float *y = trn_net_layer_output(from, L->f_layer);
            size_t m = (size_t)L->f_map, size = (size_t)L->filters * m;
            for (int j = 0; j < k; j++) {
                const float *A = y + (size_t)(3 * j) * size, *P = A + size, *N = P + size;
                for (int f = 0; f < L->filters; f++) {
                    double dn = 0, dp = 0, g = src[l].k ? src[l].k[f] : 1;
                    for (size_t q = (size_t)f * m; q < (size_t)(f + 1) * m; q++) {
                        double an = (double)A[q] - (double)N[q], ap = (double)A[q] - (double)P[q];
                        dn += an * an;
                        dp += ap * ap;
                    }
                    dn *= g * g;
                    dp *= g * g;
                    if (o->distance == PRN_TRR_PLAIN) dn = sqrt(dn), dp = sqrt(dp);
                    L->score[f] += dn - dp;
                    L->neg[f] += dn;
                    L->pos[f] += dp;
                }
            }
        }
    }
    free(x);
    trr_sources_free(src, r->nlayers);
    return rc;
}

prn_ranking *prn_rank(trn_net *net, const prn_rank_opts *o, trn_err *err)
{
    if (o->method != PRN_RANK_TRR && o->method != PRN_RANK_L1 && o->method != PRN_RANK_RANDOM) {
        trn_errf(err, "unknown ranking method %d: use trr, l1 or random", (int)o->method);
        return NULL;
    }
    prn_ranking *r = ranking_new(net, o->method, err);
    if (!r) return NULL;
    r->triplets = o->method == PRN_RANK_TRR ? o->triplets : 0;
    r->at = o->at;
    r->distance = o->distance;
    int rc = 0;
    if (o->method == PRN_RANK_TRR) rc = rank_trr(r, net, o, err);
    else if (o->method == PRN_RANK_L1) rc = rank_l1(r, net, err);
    else rank_random(r, o->seed);
    if (rc == 0) rc = ranking_finish(r, err);
    if (rc != 0) {
        prn_ranking_free(r);
        return NULL;
    }
    return r;
}

int prn_triplets_sample(const int *classes, size_t n, uint64_t seed, uint64_t count, size_t *out,
                        trn_err *err)
{
    int nc = 0;
    for (size_t i = 0; i < n; i++) {
        if (classes[i] < 0) return trn_errf(err, "image %zu has no class (%d)", i, classes[i]);
        if (classes[i] + 1 > nc) nc = classes[i] + 1;
    }
    /* Images by class, in list order: members[start[c] .. start[c+1]). */
    size_t *start = calloc((size_t)nc + 1, sizeof *start), *members = malloc((n ? n : 1) * sizeof *members);
    size_t *fill = calloc((size_t)nc + 1, sizeof *fill), *anchors = malloc((n ? n : 1) * sizeof *anchors);
    if (!start || !members || !fill || !anchors) {
        free(start), free(members), free(fill), free(anchors);
        return trn_errf(err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) start[classes[i] + 1]++;
    for (int c = 0; c < nc; c++) start[c + 1] += start[c];
    for (size_t i = 0; i < n; i++) members[start[classes[i]] + fill[classes[i]]++] = i;
    /* An anchor needs a positive (another image of its class) and a
     * negative (an image of another class). */
    size_t na = 0;
    for (size_t i = 0; i < n; i++) {
        size_t own = start[classes[i] + 1] - start[classes[i]];
        if (own >= 2 && own < n) anchors[na++] = i;
    }
    int rc = 0;
    if (na == 0) {
        rc = trn_errf(err, "no triplet can be drawn from %zu images: it takes two classes, one of "
                           "them with two images or more", n);
    } else {
        trn_rng root;
        trn_rng_seed(&root, seed);
        for (uint64_t t = 0; t < count; t++) {
            /* Triplet t is a pure function of (seed, t). */
            trn_rng g = trn_rng_fork(&root, t);
            size_t a = anchors[trn_rng_below(&g, na)];
            int c = classes[a];
            size_t own = start[c + 1] - start[c];
            size_t p = members[start[c] + trn_rng_below(&g, own - 1)];
            if (p == a) p = members[start[c] + own - 1]; /* skip the anchor itself */
            /* The j-th image outside class c, in list order. */
            size_t j = trn_rng_below(&g, n - own);
            size_t ng = j < start[c] ? members[j] : members[j + own];
            out[3 * t] = a;
            out[3 * t + 1] = p;
            out[3 * t + 2] = ng;
        }
    }
    free(start), free(members), free(fill), free(anchors);
    return rc;
}

/* The mean ranks (1-based, ties averaged) of v[0..n) into r. 0 when out of
 * memory. */
static int mean_ranks(const double *v, int n, double *r)
{
    int *ix = malloc((size_t)n * sizeof *ix);
    if (!ix) return 0;
    for (int i = 0; i < n; i++) ix[i] = i;
    /* Insertion sort by value: n is a layer's filter count. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[ix[j - 1]] > v[ix[j]]; j--) {
            int t = ix[j];
            ix[j] = ix[j - 1], ix[j - 1] = t;
        }
    for (int i = 0; i < n;) {
        int e = i;
        while (e + 1 < n && v[ix[e + 1]] == v[ix[i]]) e++;
        for (int k = i; k <= e; k++) r[ix[k]] = (i + e) / 2.0 + 1;
        i = e + 1;
    }
    free(ix);
    return 1;
}

double prn_spearman(const double *x, const double *y, int n)
{
    if (n < 2) return NAN;
    double *rx = malloc((size_t)n * sizeof *rx), *ry = malloc((size_t)n * sizeof *ry), out = NAN;
    if (rx && ry && mean_ranks(x, n, rx) && mean_ranks(y, n, ry)) {
        double m = (n + 1) / 2.0, sxy = 0, sxx = 0, syy = 0;
        for (int i = 0; i < n; i++) {
            sxy += (rx[i] - m) * (ry[i] - m);
            sxx += (rx[i] - m) * (rx[i] - m);
            syy += (ry[i] - m) * (ry[i] - m);
        }
        if (sxx > 0 && syy > 0) out = sxy / sqrt(sxx * syy);
    }
    free(rx);
    free(ry);
    return out;
}

/* A JSON array of doubles. */
static cJSON *json_doubles(const double *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *x = cJSON_CreateNumber(v[i]);
        if (!x) {
            cJSON_Delete(a);
            return NULL;
        }
        cJSON_AddItemToArray(a, x);
    }
    return a;
}

cJSON *prn_ranking_json(const prn_ranking *r, const trn_net *net)
{
    cJSON *j = cJSON_CreateObject(), *layers = cJSON_CreateArray(), *order = cJSON_CreateArray();
    if (!j || !layers || !order) goto oom;
    cJSON_AddStringToObject(j, "format", "prune-ranking");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "method", prn_rank_method_name(r->method));
    if (r->method == PRN_RANK_TRR) {
        cJSON_AddNumberToObject(j, "triplets", (double)r->triplets);
        cJSON_AddStringToObject(j, "at", prn_trr_at_name(r->at));
        cJSON_AddStringToObject(j, "distance", prn_trr_distance_name(r->distance));
    }
    cJSON_AddStringToObject(j, "normalisation",
                            r->method == PRN_RANK_TRR  ? (r->at == PRN_TRR_AT_POOLED ? "score / (f_map height * width * triplets)"
                                                                                     : "score / (map height * width * triplets)")
                            : r->method == PRN_RANK_L1 ? "score / weights per filter"
                                                       : "none");
    for (int l = 0; l < r->nlayers; l++) {
        const prn_rank_layer *L = &r->layers[l];
        trn_layer_info info;
        trn_net_layer_info(net, L->layer, &info);
        cJSON *o = cJSON_CreateObject();
        if (!o) goto oom;
        cJSON_AddItemToArray(layers, o);
        cJSON_AddNumberToObject(o, "layer", L->layer);
        cJSON_AddStringToObject(o, "type", trn_layer_kind_name(L->kind));
        cJSON_AddNumberToObject(o, "filters", L->filters);
        cJSON_AddNumberToObject(o, "map", (double)L->map);
        if (r->method == PRN_RANK_TRR && r->at == PRN_TRR_AT_POOLED) {
            cJSON_AddNumberToObject(o, "f_layer", L->f_layer);
            cJSON_AddNumberToObject(o, "f_map", (double)L->f_map);
        }
        cJSON_AddNumberToObject(o, "filter_weights", (double)L->filter_weights);
        cJSON_AddItemToObject(o, "score", json_doubles(L->score, L->filters));
        cJSON_AddItemToObject(o, "normalised", json_doubles(L->norm, L->filters));
        cJSON_AddItemToObject(o, "order", prn_json_ints(L->order, L->filters));
    }
    cJSON_AddItemToObject(j, "layers", layers);
    layers = NULL;
    for (int i = 0; i < r->filters; i++) {
        int pair[2] = {r->layers[r->order[i].layer].layer, r->order[i].filter};
        cJSON *p = prn_json_ints(pair, 2);
        if (!p) goto oom;
        cJSON_AddItemToArray(order, p);
    }
    cJSON_AddItemToObject(j, "prune_order", order);
    return j;
oom:
    cJSON_Delete(j);
    cJSON_Delete(layers);
    cJSON_Delete(order);
    return NULL;
}
