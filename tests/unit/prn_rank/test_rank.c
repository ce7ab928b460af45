/* Unit tests of the filter rankings: TRR and L1 on a network small enough
 * to compute by hand, determinism across thread counts, triplet sampling. */
#include "testutil_impl.h"
#include "testlib_prn.h"

/* Input 1x1x2 (two pixels) -> conv 2 filters 1x1 linear (L0: map 1x2)
 * -> connected 2 linear (L1) -> connected 2 (L2, the classifier, not
 * ranked) -> softmax. */
static const char tiny_cfg[] = "[net]\nbatch=%d\nwidth=2\nheight=1\nchannels=1\n"
                               "[convolutional]\nfilters=2\nsize=1\nstride=1\npad=0\nactivation=linear\n"
                               "[connected]\noutput=2\nactivation=linear\n"
                               "[connected]\noutput=2\nactivation=linear\n"
                               "[softmax]\n";

/* The tiny network with hand-set weights: conv filters w0 = 1, w1 = 2;
 * connected L1 row 0 reads (filter 0, pixel 0) with weight 1, row 1 reads
 * (filter 1, pixel 0) with -3 and (filter 1, pixel 1) with 1 (inputs are
 * c*h*w = [f0p0, f0p1, f1p0, f1p1]); every bias 0. */
static trn_net *tiny_net(int batch)
{
    char text[512];
    snprintf(text, sizeof text, tiny_cfg, batch);
    trn_cfg *c = pt_cfg(text);
    assert_non_null(c);
    trn_net *net = pt_base(c, batch, 1);
    trn_cfg_free(c);
    assert_non_null(net);
    int np;
    const trn_param *p = trn_net_params(net, &np);
    for (int k = 0; k < np; k++)
        if (p[k].role == TRN_PARAM_BIASES) memset(p[k].data, 0, p[k].count * sizeof(float));
    trn_param *w0 = tl_param(net, 0, TRN_PARAM_WEIGHTS), *w1 = tl_param(net, 1, TRN_PARAM_WEIGHTS);
    assert_int_equal(w0->count, 2);
    assert_int_equal(w1->rows, 2);
    assert_int_equal(w1->cols, 4);
    w0->data[0] = 1, w0->data[1] = 2;
    const float r[8] = {1, 0, 0, 0, 0, 0, -3, 1};
    memcpy(w1->data, r, sizeof r);
    return net;
}

/* Two triplets (anc, pos, neg), two pixels each:
 *   t0: anc (1,2) pos (1,3) neg (4,0)
 *   t1: anc (0,0) pos (0,0) neg (1,1) */
static const float triplets[2][3][2] = {{{1, 2}, {1, 3}, {4, 0}}, {{0, 0}, {0, 0}, {1, 1}}};

static int fixed_triplet(void *ctx, uint64_t t, float *a, float *p, float *n, trn_err *err)
{
    (void)ctx, (void)err;
    memcpy(a, triplets[t][0], 2 * sizeof(float));
    memcpy(p, triplets[t][1], 2 * sizeof(float));
    memcpy(n, triplets[t][2], 2 * sizeof(float));
    return 0;
}

/* By hand. Conv filter f outputs w_f * x, so its TRR is
 * w_f^2 (||a-n||^2 - ||a-p||^2): t0 gives 13 - 1 = 12, t1 gives 2 - 0 = 2,
 * so f0 = 14, f1 = 4 * 14 = 56; normalised by map 2 x 2 triplets: 3.5, 14.
 * L1 row 0 outputs x0: t0 (1-4)^2 - 0 = 9, t1 1 - 0 = 1: 10 (norm 5).
 * L1 row 1 outputs -6 x0 + 2 x1: anc t0 = -2, pos = 0, neg = -24:
 * 22^2 - 2^2 = 480; t1: anc 0, pos 0, neg -4: 16; 496 (norm 248).
 * Least important first: L0f0 3.5, L1f0 5, L0f1 14, L1f1 248. */
static void trr_by_hand(void **state)
{
    (void)state;
    for (int batch = 3; batch <= 6; batch += 3) {
        trn_net *net = tiny_net(batch);
        prn_rank_opts o = {.method = PRN_RANK_TRR, .triplets = 2, .triplet = fixed_triplet};
        trn_err e;
        prn_ranking *r = prn_rank(net, &o, &e);
        if (!r) fail_msg("%s", e.msg);
        assert_int_equal(r->nlayers, 2);
        assert_int_equal(r->filters, 4);
        assert_int_equal(r->triplets, 2);
        assert_int_equal(r->layers[0].layer, 0);
        assert_int_equal(r->layers[0].map, 2);
        assert_int_equal(r->layers[1].layer, 1);
        assert_int_equal(r->layers[1].map, 1);
        assert_true(r->layers[0].score[0] == 14.0);
        assert_true(r->layers[0].score[1] == 56.0);
        assert_true(r->layers[1].score[0] == 10.0);
        assert_true(r->layers[1].score[1] == 496.0);
        /* The two sums apart: anchor-negative and anchor-positive. */
        assert_true(r->layers[0].neg[0] == 15.0 && r->layers[0].pos[0] == 1.0);
        assert_true(r->layers[0].neg[1] == 60.0 && r->layers[0].pos[1] == 4.0);
        assert_true(r->layers[1].neg[1] == 500.0 && r->layers[1].pos[1] == 4.0);
        assert_true(r->layers[0].norm[0] == 3.5);
        assert_true(r->layers[0].norm[1] == 14.0);
        assert_true(r->layers[1].norm[0] == 5.0);
        assert_true(r->layers[1].norm[1] == 248.0);
        const int want[4][2] = {{0, 0}, {1, 0}, {0, 1}, {1, 1}};
        for (int i = 0; i < 4; i++) {
            assert_int_equal(r->order[i].layer, want[i][0]);
            assert_int_equal(r->order[i].filter, want[i][1]);
        }
        assert_int_equal(r->layers[0].order[0], 1);
        assert_int_equal(r->layers[0].order[1], 0);
        /* The file's JSON: prune_order holds layer indexes. */
        cJSON *j = prn_ranking_json(r, net);
        assert_non_null(j);
        assert_string_equal(cJSON_GetObjectItem(j, "method")->valuestring, "trr");
        const cJSON *po = cJSON_GetObjectItem(j, "prune_order");
        assert_int_equal(cJSON_GetArraySize(po), 4);
        assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(po, 3), 0)->valueint, 1);
        assert_int_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(po, 3), 1)->valueint, 1);
        cJSON_Delete(j);
        prn_ranking_free(r);
        trn_net_free(net);
    }
}

/* Where F_i is read and the distance (docs/targets.md 1.10). Input 1x1x2 ->
 * conv 2 filters 1x1 with batch norm and relu (L0, ranked) -> connected 2
 * (the classifier). Weights (1, -1); batch norm scale (2, 0.5), rolling
 * mean (0.5, 0), variance (4, 1), shift (0, 1): before the activation
 * filter 0 is x - 0.5 and filter 1 is 1 - x/2 (up to the engine's 1e-6 in
 * sqrt(var) + 1e-6). With the triplets of trr_by_hand:
 *   filter 0  bn: t0 a-n (-3, 2), a-p (0, -1): 13 - 1; t1 2 - 0: 14
 *             output (relu: anc (0.5, 1.5), pos (0.5, 2.5), neg (3.5, 0);
 *             t1 anc (0, 0), neg (0.5, 0.5)): 11.25 - 1 + 0.5 = 10.75
 *             conv: the raw products x and -x: 14 for both filters
 *             output, plain: sqrt(11.25) - 1 + sqrt(0.5)
 *   filter 1  bn: t0 a-n (1.5, -1), a-p (0, 0.5): 3.25 - 0.25; t1 0.5: 3.5
 *             output (anc (0.5, 0), pos (0.5, 0), neg (0, 1); t1 anc
 *             (1, 1), neg (0.5, 0.5)): 1.25 + 0.5 = 1.75
 *             output, plain: sqrt(1.25) + sqrt(0.5) */
static const char bn_cfg[] = "[net]\nbatch=3\nwidth=2\nheight=1\nchannels=1\n"
                             "[convolutional]\nbatch_normalize=1\nfilters=2\nsize=1\nstride=1\npad=0\n"
                             "activation=relu\n"
                             "[connected]\noutput=2\nactivation=linear\n"
                             "[softmax]\n";

static void trr_at_and_distance(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(bn_cfg);
    assert_non_null(c);
    trn_net *net = pt_base(c, 3, 1);
    assert_non_null(net);
    const float w[2] = {1, -1}, g[2] = {2, 0.5f}, mu[2] = {0.5f, 0}, var[2] = {4, 1}, b[2] = {0, 1};
    memcpy(tl_param(net, 0, TRN_PARAM_WEIGHTS)->data, w, sizeof w);
    memcpy(tl_param(net, 0, TRN_PARAM_SCALES)->data, g, sizeof g);
    memcpy(tl_param(net, 0, TRN_PARAM_ROLLING_MEAN)->data, mu, sizeof mu);
    memcpy(tl_param(net, 0, TRN_PARAM_ROLLING_VARIANCE)->data, var, sizeof var);
    memcpy(tl_param(net, 0, TRN_PARAM_BIASES)->data, b, sizeof b);
    const struct {
        prn_trr_at at;
        prn_trr_distance d;
        double f0, f1;
    } want[] = {
        {PRN_TRR_AT_OUTPUT, PRN_TRR_SQUARED, 10.75, 1.75},
        {PRN_TRR_AT_BN, PRN_TRR_SQUARED, 14, 3.5},
        {PRN_TRR_AT_CONV, PRN_TRR_SQUARED, 14, 14},
        {PRN_TRR_AT_OUTPUT, PRN_TRR_PLAIN, 3.3541019662496847 - 1 + 0.70710678118654757,
         1.1180339887498949 + 0.70710678118654757},
        {PRN_TRR_AT_BN, PRN_TRR_PLAIN, 3.6055512754639891 - 1 + 1.4142135623730951,
         1.8027756377319946 - 0.5 + 0.70710678118654757},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        prn_rank_opts o = {.method = PRN_RANK_TRR, .triplets = 2, .triplet = fixed_triplet,
                           .at = want[i].at, .distance = want[i].d, .cfg = c};
        trn_err e;
        prn_ranking *r = prn_rank(net, &o, &e);
        if (!r) fail_msg("%s", e.msg);
        assert_int_equal(r->nlayers, 1);
        if (fabs(r->layers[0].score[0] - want[i].f0) > 1e-4 || fabs(r->layers[0].score[1] - want[i].f1) > 1e-4)
            fail_msg("at %s, %s: scores %.6f %.6f, want %.6f %.6f", prn_trr_at_name(want[i].at),
                     prn_trr_distance_name(want[i].d), r->layers[0].score[0], r->layers[0].score[1], want[i].f0,
                     want[i].f1);
        cJSON *j = prn_ranking_json(r, net);
        assert_string_equal(cJSON_GetObjectItem(j, "at")->valuestring, prn_trr_at_name(want[i].at));
        assert_string_equal(cJSON_GetObjectItem(j, "distance")->valuestring, prn_trr_distance_name(want[i].d));
        cJSON_Delete(j);
        prn_ranking_free(r);
    }
    /* Before the activation needs the cfg; before batch norm a non-zero scale. */
    trn_err e;
    prn_rank_opts o = {.method = PRN_RANK_TRR, .triplets = 2, .triplet = fixed_triplet, .at = PRN_TRR_AT_BN};
    assert_null(prn_rank(net, &o, &e));
    assert_non_null(strstr(e.msg, "cfg"));
    tl_param(net, 0, TRN_PARAM_SCALES)->data[1] = 0;
    o.at = PRN_TRR_AT_CONV;
    o.cfg = c;
    assert_null(prn_rank(net, &o, &e));
    assert_non_null(strstr(e.msg, "cannot be recovered"));
    o.distance = (prn_trr_distance)7;
    assert_null(prn_rank(net, &o, &e));
    assert_non_null(strstr(e.msg, "unknown TRR variant"));
    assert_int_equal(prn_trr_at_parse("bn"), PRN_TRR_AT_BN);
    assert_int_equal(prn_trr_at_parse("relu"), -1);
    assert_int_equal(prn_trr_distance_parse("plain"), PRN_TRR_PLAIN);
    assert_int_equal(prn_trr_distance_parse("l1"), -1);
    trn_net_free(net);
    trn_cfg_free(c);
}

/* L1: conv rows |1|, |2| (1 weight each); connected rows 1 and 4 over 4
 * weights: 0.25, 1.0. The tie at 1.0 (L1f1 and L0f0) goes to the later
 * layer first. */
static void l1_by_hand(void **state)
{
    (void)state;
    trn_net *net = tiny_net(1);
    prn_rank_opts o = {.method = PRN_RANK_L1};
    trn_err e;
    prn_ranking *r = prn_rank(net, &o, &e);
    if (!r) fail_msg("%s", e.msg);
    assert_true(r->layers[0].score[0] == 1.0 && r->layers[0].score[1] == 2.0);
    assert_true(r->layers[1].score[0] == 1.0 && r->layers[1].score[1] == 4.0);
    assert_true(r->layers[1].norm[0] == 0.25 && r->layers[1].norm[1] == 1.0);
    assert_int_equal(r->triplets, 0);
    const int want[4][2] = {{1, 0}, {1, 1}, {0, 0}, {0, 1}};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r->order[i].layer, want[i][0]);
        assert_int_equal(r->order[i].filter, want[i][1]);
    }
    prn_ranking_free(r);
    trn_net_free(net);
}

/* The tiny network's cfg with the conv's filters and L1's outputs set. */
static trn_net *tiny_like(int filters, int outputs, int classifier)
{
    char text[512];
    snprintf(text, sizeof text,
             "[net]\nbatch=1\nwidth=2\nheight=1\nchannels=1\n"
             "[convolutional]\nfilters=%d\nsize=1\nstride=1\npad=0\nactivation=linear\n"
             "[connected]\noutput=%d\nactivation=linear\n%s[softmax]\n",
             filters, outputs, classifier ? "[connected]\noutput=2\nactivation=linear\n" : "");
    trn_cfg *c = pt_cfg(text);
    assert_non_null(c);
    trn_net *net = pt_base(c, 1, 1);
    trn_cfg_free(c);
    assert_non_null(net);
    return net;
}

/* L1 pruning to another model's counts (prune l1 --like): a model keeping
 * one conv filter gets the larger L1 norm (w = 2, filter 1), and L1 reads
 * filter 1's two input columns (row 0: 0 0; row 1: -3 1); the connected
 * layer, whole in the model, is left as it is. A model with more filters
 * than the base, or other layers, is refused. */
static void l1_like_counts(void **state)
{
    (void)state;
    trn_net *net = tiny_net(1), *like = tiny_like(1, 2, 1);
    char text[512];
    snprintf(text, sizeof text, tiny_cfg, 1);
    trn_cfg *c = pt_cfg(text);
    prn_rank_opts o = {.method = PRN_RANK_L1};
    trn_err e;
    prn_ranking *r = prn_rank(net, &o, &e);
    if (!r) fail_msg("%s", e.msg);
    prn_variant v;
    if (prn_filters_like(c, net, r, like, &v, &e) != 0) fail_msg("%s", e.msg);
    const trn_param *w0 = trn_net_param(v.net, 0, TRN_PARAM_WEIGHTS), *w1 = trn_net_param(v.net, 1, TRN_PARAM_WEIGHTS);
    assert_int_equal(w0->count, 1);
    assert_true(w0->data[0] == 2.0f);
    assert_int_equal(w1->rows, 2);
    assert_int_equal(w1->cols, 2);
    const float want[4] = {0, 0, -3, 1};
    for (int i = 0; i < 4; i++) assert_true(w1->data[i] == want[i]);
    cJSON *layers = cJSON_GetObjectItem(v.fields, "layers");
    assert_int_equal(cJSON_GetArraySize(layers), 1);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(layers, 0), "filters_after")->valueint, 1);
    assert_string_equal(v.technique, "pruned");
    assert_non_null(strstr(v.description, "L0 ->1 filters"));
    prn_variant_free(&v);
    trn_net *more = tiny_like(3, 2, 1), *other = tiny_like(1, 2, 0);
    assert_int_equal(prn_filters_like(c, net, r, more, &v, &e), -1);
    assert_non_null(strstr(e.msg, "must keep 1..2"));
    assert_int_equal(prn_filters_like(c, net, r, other, &v, &e), -1);
    assert_non_null(strstr(e.msg, "layers"));
    trn_net_free(more), trn_net_free(other), trn_net_free(like), trn_net_free(net);
    trn_cfg_free(c);
    prn_ranking_free(r);
}

/* RANDOM (a diagnostic baseline): scores in [0, 1), not normalised, a pure
 * function of (seed, layer, filter); another seed gives other scores. */
static void random_by_seed(void **state)
{
    (void)state;
    trn_net *net = tiny_net(1);
    prn_rank_opts o = {.method = PRN_RANK_RANDOM, .seed = 5};
    trn_err e;
    prn_ranking *r = prn_rank(net, &o, &e), *r2 = prn_rank(net, &o, &e);
    o.seed = 6;
    prn_ranking *r3 = prn_rank(net, &o, &e);
    if (!r || !r2 || !r3) fail_msg("%s", e.msg);
    int differ = 0;
    for (int l = 0; l < r->nlayers; l++)
        for (int f = 0; f < r->layers[l].filters; f++) {
            double v = r->layers[l].score[f];
            assert_true(v >= 0 && v < 1);
            assert_true(r->layers[l].norm[f] == v);
            assert_true(r2->layers[l].score[f] == v);
            differ |= r3->layers[l].score[f] != v;
        }
    assert_true(differ);
    assert_string_equal(prn_rank_method_name(PRN_RANK_RANDOM), "random");
    assert_int_equal(prn_rank_method_parse("random"), PRN_RANK_RANDOM);
    prn_ranking_free(r);
    prn_ranking_free(r2);
    prn_ranking_free(r3);
    trn_net_free(net);
}

/* Random triplets for the larger network: a pure function of t. */
static int random_triplet(void *ctx, uint64_t t, float *a, float *p, float *n, trn_err *err)
{
    (void)err;
    size_t in = *(size_t *)ctx;
    tl_fill_uniform(a, in, 100 + 3 * t, 0, 1);
    tl_fill_uniform(p, in, 101 + 3 * t, 0, 1);
    tl_fill_uniform(n, in, 102 + 3 * t, 0, 1);
    return 0;
}

static char *ranking_text(int threads)
{
    trn_set_threads(threads);
    trn_cfg *c = pt_cfg(pt_small_cfg);
    trn_net *net = pt_base(c, 12, 7);
    size_t in = trn_net_inputs(net);
    prn_rank_opts o = {.method = PRN_RANK_TRR, .triplets = 10, .triplet = random_triplet, .triplet_ctx = &in};
    trn_err e;
    prn_ranking *r = prn_rank(net, &o, &e);
    if (!r) fail_msg("%s", e.msg);
    /* conv L0, L2, L4 and connected L6; the classifier L7 is not ranked. */
    assert_int_equal(r->nlayers, 4);
    assert_int_equal(r->layers[3].layer, 6);
    assert_int_equal(r->filters, 8 + 16 + 16 + 32);
    cJSON *j = prn_ranking_json(r, net);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    prn_ranking_free(r);
    trn_net_free(net);
    trn_cfg_free(c);
    trn_set_threads(1);
    return s;
}

/* The same ranking file, byte for byte, with 1 and 4 threads. */
static void deterministic_across_threads(void **state)
{
    (void)state;
    char *a = ranking_text(1), *b = ranking_text(4);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(a);
    free(b);
}

static void refusals(void **state)
{
    (void)state;
    trn_err e;
    trn_net *net = tiny_net(2);
    prn_rank_opts o = {.method = PRN_RANK_TRR, .triplets = 2, .triplet = fixed_triplet};
    assert_null(prn_rank(net, &o, &e));
    assert_non_null(strstr(e.msg, "batch of 3"));
    trn_net_free(net);
    net = tiny_net(3);
    o.triplets = 0;
    assert_null(prn_rank(net, &o, &e));
    assert_non_null(strstr(e.msg, "at least one triplet"));
    trn_net_free(net);
    /* Only a classifier: nothing to rank. */
    trn_cfg *c = pt_cfg("[net]\nbatch=1\nwidth=2\nheight=2\nchannels=1\n[connected]\noutput=3\n[softmax]\n");
    net = pt_base(c, 1, 1);
    o = (prn_rank_opts){.method = PRN_RANK_L1};
    assert_null(prn_rank(net, &o, &e));
    assert_non_null(strstr(e.msg, "no layer to rank"));
    trn_net_free(net);
    trn_cfg_free(c);
    assert_int_equal(prn_rank_method_parse("trr"), PRN_RANK_TRR);
    assert_int_equal(prn_rank_method_parse("l1"), PRN_RANK_L1);
    assert_int_equal(prn_rank_method_parse("l2"), -1);
}

/* Anchor and positive share a class (and differ), the negative does not;
 * the single image of class 2 is never an anchor; triplet t depends only
 * on (seed, t). */
static void triplet_sampling(void **state)
{
    (void)state;
    const int cls[7] = {0, 0, 1, 1, 1, 2, 0};
    enum { N = 2000 };
    size_t *a = malloc(3 * N * sizeof *a), *b = malloc(3 * N * sizeof *b);
    trn_err e;
    assert_int_equal(prn_triplets_sample(cls, 7, 9, N, a, &e), 0);
    int neg_seen[3] = {0}, anc_seen[7] = {0};
    for (int t = 0; t < N; t++) {
        size_t x = a[3 * t], p = a[3 * t + 1], n = a[3 * t + 2];
        assert_true(x < 7 && p < 7 && n < 7);
        assert_int_equal(cls[x], cls[p]);
        assert_true(x != p);
        assert_true(cls[n] != cls[x]);
        neg_seen[cls[n]]++;
        anc_seen[x]++;
    }
    assert_int_equal(anc_seen[5], 0);
    for (int i = 0; i < 7; i++)
        if (i != 5) assert_true(anc_seen[i] > 0);
    for (int k = 0; k < 3; k++) assert_true(neg_seen[k] > 0);
    assert_int_equal(prn_triplets_sample(cls, 7, 9, 10, b, &e), 0);
    assert_memory_equal(a, b, 30 * sizeof *a);
    assert_int_equal(prn_triplets_sample(cls, 7, 10, N, b, &e), 0);
    assert_memory_not_equal(a, b, 3 * N * sizeof *a);
    const int same[3] = {0, 0, 0}, single[3] = {0, 1, 2};
    assert_int_equal(prn_triplets_sample(same, 3, 1, 1, b, &e), -1);
    assert_non_null(strstr(e.msg, "no triplet"));
    assert_int_equal(prn_triplets_sample(single, 3, 1, 1, b, &e), -1);
    free(a);
    free(b);
}

/* Spearman's rho (the `prune scan --drop single` diagnostic): +1 and -1
 * for monotone pairs whatever the scale, ties sharing their mean rank, by
 * hand: x (1, 2, 2, 4) has ranks (1, 2.5, 2.5, 4); y (10, 30, 20, 40)
 * ranks (1, 3, 2, 4); centred (-1.5, 0, 0, 1.5) and (-1.5, 0.5, -0.5,
 * 1.5): 4.5 / sqrt(4.5 * 5) = sqrt(0.9). NAN when n < 2 or a side is
 * constant. */
static void spearman(void **state)
{
    (void)state;
    const double x[4] = {1, 2, 2, 4}, y[4] = {10, 30, 20, 40}, sq[4] = {1, 4, 4, 16000};
    const double up[5] = {0.1, 5, 7, 100, 1e6}, down[5] = {9, 8, -1, -2, -300}, flat[4] = {3, 3, 3, 3};
    assert_true(fabs(prn_spearman(x, y, 4) - sqrt(0.9)) < 1e-12);
    assert_true(fabs(prn_spearman(x, sq, 4) - 1) < 1e-12);
    assert_true(fabs(prn_spearman(up, down, 5) + 1) < 1e-12);
    assert_true(fabs(prn_spearman(y, x, 4) - prn_spearman(x, y, 4)) < 1e-15);
    assert_true(isnan(prn_spearman(x, flat, 4)));
    assert_true(isnan(prn_spearman(x, y, 1)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(trr_by_hand),
        cmocka_unit_test(trr_at_and_distance),
        cmocka_unit_test(l1_by_hand),
        cmocka_unit_test(l1_like_counts),
        cmocka_unit_test(random_by_seed),
        cmocka_unit_test(deterministic_across_threads),
        cmocka_unit_test(refusals),
        cmocka_unit_test(triplet_sampling),
        cmocka_unit_test(spearman),
    };
    int rc = cmocka_run_group_tests_name("prn_rank", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
