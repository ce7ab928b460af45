/* Unit tests of filter pruning by selection and of the roadmap's pieces:
 * which filters a step removes, and the common order of the steps. */
#include "testutil_impl.h"
#include "testlib_prn.h"

/* L0 conv 4 (bn) -> L1 maxpool -> L2 conv 6 -> L3 route L2 + L1 (6 + 4
 * channels) -> L4 conv 5 1x1 -> L5 connected 7 -> L6 connected 3 (the
 * classifier) -> L7 softmax. */
static const char route_cfg[] =
    "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=6\nsize=3\npad=1\nactivation=leaky\n"
    "[route]\nlayers=-1,-2\n"
    "[convolutional]\nfilters=5\nsize=1\nactivation=leaky\n"
    "[connected]\noutput=7\nactivation=relu\n"
    "[connected]\noutput=3\nactivation=linear\n"
    "[softmax]\n";

/* Prunes base by keep; returns the pruned network (batch 2). */
static trn_net *pruned(const trn_cfg *c, trn_net *base, const prn_keep *k, int nk)
{
    trn_err e;
    trn_cfg *pc = prn_filters_cfg(c, base, k, nk, &e);
    if (!pc) fail_msg("%s", e.msg);
    trn_net *n = pt_base(pc, 2, 99);
    trn_cfg_free(pc);
    assert_non_null(n);
    if (prn_filters_copy(base, n, k, nk, &e)) fail_msg("%s", e.msg);
    return n;
}

/* The largest difference of the logits (the layer before softmax). */
static double logit_diff(trn_net *a, trn_net *b)
{
    trn_err e;
    float *x = pt_input(a, 2, 5);
    assert_int_equal(trn_net_forward(a, x, &e), 0);
    assert_int_equal(trn_net_forward(b, x, &e), 0);
    int la = trn_net_layers(a) - 2;
    const float *ya = trn_net_layer_output(a, la), *yb = trn_net_layer_output(b, la);
    double d = 0;
    for (int i = 0; i < 6; i++) d = fmax(d, fabs((double)ya[i] - yb[i]));
    free(x);
    return d;
}

/* Every filter kept in a new order: the same network up to rounding. */
static void permutation_keeps_outputs(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(route_cfg);
    trn_net *base = pt_base(c, 2, 3);
    const int f0[4] = {2, 0, 3, 1}, f2[6] = {5, 4, 0, 1, 3, 2}, f4[5] = {4, 3, 2, 1, 0}, f5[7] = {6, 0, 5, 1, 4, 2, 3};
    const prn_keep k[4] = {{0, 4, f0}, {2, 6, f2}, {4, 5, f4}, {5, 7, f5}};
    trn_net *p = pruned(c, base, k, 4);
    assert_true(logit_diff(base, p) < 1e-4);
    /* The moved values are the same bytes: L0's biases and BN scales. */
    for (int j = 0; j < 4; j++) {
        assert_true(tl_param(p, 0, TRN_PARAM_BIASES)->data[j] == tl_param(base, 0, TRN_PARAM_BIASES)->data[f0[j]]);
        assert_true(tl_param(p, 0, TRN_PARAM_SCALES)->data[j] == tl_param(base, 0, TRN_PARAM_SCALES)->data[f0[j]]);
    }
    trn_net_free(p);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* Filters nobody reads (their consumers' weights zeroed) are removed
 * without changing the outputs: L0 filter 1 (read by L2 and, through the
 * route at channel 6 + 1, by L4), L4 filter 3 (read by L5 as a block of
 * 4x4 inputs) and L5 output 2 (read by L6). */
static void dead_filters_removed(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(route_cfg);
    trn_net *base = pt_base(c, 2, 4);
    trn_param *w2 = tl_param(base, 2, TRN_PARAM_WEIGHTS), *w4 = tl_param(base, 4, TRN_PARAM_WEIGHTS);
    trn_param *w5 = tl_param(base, 5, TRN_PARAM_WEIGHTS), *w6 = tl_param(base, 6, TRN_PARAM_WEIGHTS);
    for (int r = 0; r < w2->rows; r++)
        for (int q = 0; q < 9; q++) w2->data[(size_t)r * w2->cols + 1 * 9 + q] = 0;
    for (int r = 0; r < w4->rows; r++) w4->data[(size_t)r * w4->cols + 6 + 1] = 0;
    assert_int_equal(w5->cols, 5 * 16);
    for (int r = 0; r < w5->rows; r++)
        for (int q = 0; q < 16; q++) w5->data[(size_t)r * w5->cols + 3 * 16 + q] = 0;
    for (int r = 0; r < w6->rows; r++) w6->data[(size_t)r * w6->cols + 2] = 0;
    const int f0[3] = {0, 2, 3}, f4[4] = {0, 1, 2, 4}, f5[6] = {0, 1, 3, 4, 5, 6};
    const prn_keep k[3] = {{0, 3, f0}, {4, 4, f4}, {5, 6, f5}};
    trn_net *p = pruned(c, base, k, 3);
    assert_true(logit_diff(base, p) < 1e-5);
    trn_layer_info info;
    trn_net_layer_info(p, 3, &info);
    assert_int_equal(info.out.c, 6 + 3);
    {
        trn_net_totals tb, tp;
        trn_net_get_totals(base, &tb);
        trn_net_get_totals(p, &tp);
        assert_true(tp.macs < tb.macs);
    }
    /* Removing a filter that is read changes the outputs. */
    const int g0[3] = {1, 2, 3};
    const prn_keep k2[1] = {{0, 3, g0}};
    trn_net *q = pruned(c, base, k2, 1);
    assert_true(logit_diff(base, q) > 1e-4);
    trn_net_free(q);
    trn_net_free(p);
    trn_net_free(base);
    trn_cfg_free(c);
}

static void refusals(void **state)
{
    (void)state;
    trn_err e;
    trn_cfg *c = pt_cfg(route_cfg);
    trn_net *base = pt_base(c, 2, 4);
    const int two[2] = {1, 1}, far[1] = {9};
    prn_keep k = {0, 2, two};
    trn_cfg *pc = prn_filters_cfg(c, base, &k, 1, &e);
    assert_non_null(pc);
    trn_net *n = pt_base(pc, 2, 1);
    assert_int_equal(prn_filters_copy(base, n, &k, 1, &e), -1);
    assert_non_null(strstr(e.msg, "kept twice"));
    k = (prn_keep){0, 1, far};
    assert_int_equal(prn_filters_copy(base, n, &k, 1, &e), -1);
    assert_non_null(strstr(e.msg, "has no filter 9"));
    trn_net_free(n);
    trn_cfg_free(pc);
    k = (prn_keep){1, 1, far};
    assert_null(prn_filters_cfg(c, base, &k, 1, &e));
    assert_non_null(strstr(e.msg, "cannot be pruned"));
    k = (prn_keep){0, 0, far};
    assert_null(prn_filters_cfg(c, base, &k, 1, &e));
    assert_non_null(strstr(e.msg, "keeping 0 of its 4"));
    trn_net_free(base);
    trn_cfg_free(c);
    /* pt_small_cfg: L4's channels reach the [shortcut] L5. */
    c = pt_cfg(pt_small_cfg);
    base = pt_base(c, 1, 2);
    const int f4[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    k = (prn_keep){4, 8, f4};
    assert_non_null(pc = prn_filters_cfg(c, base, &k, 1, &e));
    n = pt_base(pc, 1, 1);
    assert_int_equal(prn_filters_copy(base, n, &k, 1, &e), -1);
    assert_non_null(strstr(e.msg, "element-wise"));
    trn_net_free(n);
    trn_cfg_free(pc);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* A hand-made ranking of two layers (4 and 6 filters). */
static prn_ranking *fake_ranking(void)
{
    static prn_rank_layer layers[2];
    static int o0[4] = {3, 1, 0, 2}, o1[6] = {0, 1, 2, 3, 4, 5};
    static prn_rank_entry order[10] = {{1, 5}, {1, 4}, {1, 3}, {0, 2}, {1, 2}, {0, 0}, {1, 1}, {0, 1}, {1, 0}, {0, 3}};
    static prn_ranking r;
    layers[0] = (prn_rank_layer){.layer = 0, .filters = 4, .order = o0};
    layers[1] = (prn_rank_layer){.layer = 2, .filters = 6, .order = o1};
    r = (prn_ranking){.method = PRN_RANK_TRR, .nlayers = 2, .layers = layers, .filters = 10, .order = order};
    return &r;
}

static void choose_step(void **state)
{
    (void)state;
    prn_ranking *r = fake_ranking();
    int a[4], b[6], *kept[2] = {a, b}, n[2];
    trn_err e;
    /* 30% of 10 = 3, all from layer 1 (its 5, 4, 3). */
    assert_int_equal(prn_roadmap_choose(r, 0.3, 1, 1.0, 0, NULL, kept, n, &e), 3);
    assert_int_equal(n[0], 4);
    assert_int_equal(n[1], 3);
    assert_int_equal(b[0], 0), assert_int_equal(b[1], 1), assert_int_equal(b[2], 2);
    /* max_layer_step 0.5: layer 1 keeps at least 3, so the next in the
     * order (layer 0's filter 2) goes: 5, 4, 3, then (0,2), (1,2) is
     * skipped, (0,0). */
    assert_int_equal(prn_roadmap_choose(r, 0.5, 1, 0.5, 0, NULL, kept, n, &e), 5);
    assert_int_equal(n[0], 2);
    assert_int_equal(n[1], 3);
    assert_int_equal(a[0], 1), assert_int_equal(a[1], 3);
    /* min_filters 6 and 4: nothing can go. */
    assert_int_equal(prn_roadmap_choose(r, 0.5, 6, 1.0, 0, NULL, kept, n, &e), 0);
    assert_int_equal(n[0], 4);
    assert_int_equal(n[1], 6);
    /* min_layer_step 0.25: layer 0 first loses its least important (2),
     * layer 1 its two (5, 4): the 3 of step 0.3 without the cross-layer
     * order, which alone takes nothing of layer 0. */
    assert_int_equal(prn_roadmap_choose(r, 0.3, 1, 1.0, 0.25, NULL, kept, n, &e), 3);
    assert_int_equal(n[0], 3);
    assert_int_equal(a[0], 0), assert_int_equal(a[1], 1), assert_int_equal(a[2], 3);
    assert_int_equal(n[1], 4);
    assert_int_equal(b[3], 3);
    /* Step 0.5: the cross-layer order then takes (1,3) and (1,2), skipping
     * the filters already gone. */
    assert_int_equal(prn_roadmap_choose(r, 0.5, 1, 1.0, 0.25, NULL, kept, n, &e), 5);
    assert_int_equal(n[0], 3);
    assert_int_equal(n[1], 2);
    assert_int_equal(b[0], 0), assert_int_equal(b[1], 1);
    /* A layer the cross-layer order leaves out (connected=0) loses nothing
     * to min_layer_step either. */
    prn_rank_entry only0[4] = {{0, 2}, {0, 0}, {0, 1}, {0, 3}};
    prn_ranking r0 = *r;
    r0.order = only0, r0.filters = 4;
    assert_int_equal(prn_roadmap_choose(&r0, 0.25, 1, 1.0, 0.25, NULL, kept, n, &e), 1);
    assert_int_equal(n[0], 3);
    assert_int_equal(n[1], 6);
    /* A target: each layer by its own order (layer 0 keeps 3 and 1). */
    const int t[2] = {2, 5};
    assert_int_equal(prn_roadmap_choose(r, 0.1, 1, 0.1, 0, t, kept, n, &e), 3);
    assert_int_equal(n[0], 2);
    assert_int_equal(a[0], 1), assert_int_equal(a[1], 3);
    assert_int_equal(n[1], 5);
    assert_int_equal(b[4], 4);
    const int bad[2] = {5, 1};
    assert_int_equal(prn_roadmap_choose(r, 0.1, 1, 0.1, 0, bad, kept, n, &e), -1);
    assert_non_null(strstr(e.msg, "outside 1..4"));
}

static void common_order(void **state)
{
    (void)state;
    /* One layer of 5 filters: step 0 all (0..4), step 1 keeps {4, 1, 3} in
     * that model order, step 2 keeps {3, 4}. Order: 3 4 | 1 | 0 2. */
    int s0[5] = {0, 1, 2, 3, 4}, s1[3] = {4, 1, 3}, s2[2] = {3, 4};
    int *p0[1] = {s0}, *p1[1] = {s1}, *p2[1] = {s2};
    int **perm[3] = {p0, p1, p2};
    int n0[1] = {5}, n1[1] = {3}, n2[1] = {2};
    int *nk[3] = {n0, n1, n2};
    int base[1] = {5}, o[5], *order[1] = {o};
    trn_err e;
    assert_int_equal(prn_roadmap_order(3, 1, base, (int *const *const *)perm, nk, order, &e), 0);
    const int want[5] = {3, 4, 1, 0, 2};
    assert_memory_equal(o, want, sizeof want);
    /* Not nested: step 2 holds 0, which step 1 dropped. */
    s2[0] = 0;
    assert_int_equal(prn_roadmap_order(3, 1, base, (int *const *const *)perm, nk, order, &e), -1);
    assert_non_null(strstr(e.msg, "not nested"));
}

/* The capacities' steps, on the kept counts and MACs of a real roadmap
 * (TRR, step 0.12, connected=0, on the default recipe's base; the two
 * connected layers never change): evenly spaced MACs alone would take
 * steps 8, 3, 2, 1, 0, but conv5 (column 4) keeps 31 filters at steps 2 and
 * 1, so that growth step would pass nothing grown below conv5 to the
 * output; 8, 4, 3, 1, 0 lets every layer grow at every step. */
static void pick_steps(void **state)
{
    (void)state;
    static const int kept[9 * 7] = {
        32, 32, 48, 48, 32, 128, 128, 24, 23, 44, 46, 31, 128, 128, 19, 17, 43, 37, 31, 128, 128,
        18, 10, 38, 35, 28, 128, 128, 15, 6,  36, 31, 25, 128, 128, 13, 5,  30, 26, 25, 128, 128,
        10, 5,  30, 21, 21, 128, 128, 9,  5,  24, 20, 18, 128, 128, 9,  4,  20, 17, 16, 128, 128};
    static const double macs[9] = {12195840, 8032128, 5610560, 4163712, 3015360, 2398208, 1856832, 1591552, 1375488};
    int out[5];
    trn_err e;
    assert_int_equal(prn_nest_pick_steps(9, 7, kept, macs, 8, 5, out, &e), 0);
    assert_int_equal(out[0], 8), assert_int_equal(out[1], 4), assert_int_equal(out[2], 3);
    assert_int_equal(out[3], 1), assert_int_equal(out[4], 0);
    /* Every step taken (9 capacities): 8 -> 7 (conv1 9, 9), 7 -> 6 and
     * 6 -> 5 (conv2 5, 5, 5), 5 -> 4 and 2 -> 1 (conv5 25, 25 and 31, 31)
     * block: 5 of the 8 growths. */
    int all[9];
    assert_int_equal(prn_nest_pick_steps(9, 7, kept, macs, 8, 9, all, &e), 5);
    for (int k = 0; k < 9; k++) assert_int_equal(all[k], 8 - k);
    /* Two capacities: the seed and the base. */
    assert_int_equal(prn_nest_pick_steps(9, 7, kept, macs, 8, 2, out, &e), 0);
    assert_int_equal(out[0], 8), assert_int_equal(out[1], 0);
    /* More capacities than steps. */
    assert_int_equal(prn_nest_pick_steps(9, 7, kept, macs, 3, 5, out, &e), -1);
    assert_non_null(strstr(e.msg, "5 capacities"));
}

/* The L2 norm of row r of a weights parameter. */
static double row_norm(const trn_param *w, int r)
{
    double s = 0;
    for (int c = 0; c < w->cols; c++) s += (double)w->data[(size_t)r * w->cols + c] * w->data[(size_t)r * w->cols + c];
    return sqrt(s);
}

/* prn_filters_rescale: every filter of the batch-normalised layer (L0) gets
 * the mean norm of the reference's L0 filters, the outputs stay (batch norm
 * undoes the scale), the layers without batch norm keep their bytes, a zero
 * filter stays zero, a reference without batch norm there is refused. */
static void rescale_filters(void **state)
{
    (void)state;
    trn_err e;
    trn_cfg *c = pt_cfg(route_cfg);
    trn_net *base = pt_base(c, 2, 7);
    /* Spread L0's filter norms (x0.2 .. x3.2), statistics with them so
     * that the base's function stays. */
    trn_param *w0 = tl_param(base, 0, TRN_PARAM_WEIGHTS), *m0 = tl_param(base, 0, TRN_PARAM_ROLLING_MEAN);
    trn_param *v0 = tl_param(base, 0, TRN_PARAM_ROLLING_VARIANCE);
    for (int r = 0; r < w0->rows; r++) {
        float k = 0.2f + (float)r;
        for (int q = 0; q < w0->cols; q++) w0->data[(size_t)r * w0->cols + q] *= k;
        m0->data[r] *= k, v0->data[r] *= k * k;
    }
    double target = 0;
    for (int r = 0; r < w0->rows; r++) target += row_norm(w0, r) / w0->rows;
    const int f0[3] = {3, 0, 1}, f2[6] = {0, 1, 2, 3, 4, 5};
    const prn_keep k[2] = {{0, 3, f0}, {2, 6, f2}};
    trn_net *p = pruned(c, base, k, 2), *q = pruned(c, base, k, 2);
    int n = -1;
    assert_int_equal(prn_filters_rescale(p, base, &n, &e), 0);
    assert_int_equal(n, 3);
    const trn_param *pw = tl_param(p, 0, TRN_PARAM_WEIGHTS);
    for (int r = 0; r < 3; r++) assert_true(fabs(row_norm(pw, r) / target - 1) < 1e-5);
    assert_true(row_norm(tl_param(q, 0, TRN_PARAM_WEIGHTS), 0) > 1.5 * target); /* it did change */
    assert_true(logit_diff(p, q) < 1e-4);
    const int nobn_layers[4] = {2, 4, 5, 6};
    for (int i = 0; i < 4; i++) assert_true(pt_same_layer(p, nobn_layers[i], q, nobn_layers[i]));
    /* A zero filter has no direction: it stays zero. */
    trn_param *qw = tl_param(q, 0, TRN_PARAM_WEIGHTS);
    memset(qw->data + qw->cols, 0, (size_t)qw->cols * sizeof(float));
    assert_int_equal(prn_filters_rescale(q, base, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_true(row_norm(qw, 1) == 0);
    /* The reference must have batch norm where net has: p's shape
     * (route_cfg with L0's 3 kept filters) without L0's batch norm. */
    char text[sizeof route_cfg];
    const char *bn = strstr(route_cfg, "filters=4\nsize=3\npad=1\nbatch_normalize=1\n");
    assert_non_null(bn);
    assert_true(snprintf(text, sizeof text, "%.*sfilters=3\nsize=3\npad=1\n%s", (int)(bn - route_cfg), route_cfg,
                         bn + strlen("filters=4\nsize=3\npad=1\nbatch_normalize=1\n")) < (int)sizeof text);
    trn_cfg *c2 = pt_cfg(text);
    trn_net *nobn = pt_base(c2, 2, 1);
    assert_int_equal(prn_filters_rescale(p, nobn, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "layer 0"));
    trn_net_free(nobn);
    trn_cfg_free(c2);
    trn_net_free(p);
    trn_net_free(q);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* prn_filters_next_share: L0 (4 filters) is read by L2 (through the
 * maxpool, 9 weights per channel) and by L4 (through the route, at channels
 * 6..9, 1 weight each): the share of their squared weights on L0's kept
 * channels, computed here by hand; all kept is 1; zero weights on the
 * dropped channel keep everything. */
static void next_share(void **state)
{
    (void)state;
    trn_err e;
    trn_cfg *c = pt_cfg(route_cfg);
    trn_net *base = pt_base(c, 2, 5);
    const trn_param *w2 = tl_param(base, 2, TRN_PARAM_WEIGHTS), *w4 = tl_param(base, 4, TRN_PARAM_WEIGHTS);
    const int f0[3] = {0, 2, 3}, all0[4] = {0, 1, 2, 3};
    double kept = 0, total = 0;
    for (int r = 0; r < w2->rows; r++)
        for (int q = 0; q < 36; q++) {
            double v = (double)w2->data[(size_t)r * w2->cols + q] * w2->data[(size_t)r * w2->cols + q];
            total += v;
            if (q / 9 != 1) kept += v;
        }
    for (int r = 0; r < w4->rows; r++)
        for (int ch = 6; ch < 10; ch++) {
            double v = (double)w4->data[(size_t)r * w4->cols + ch] * w4->data[(size_t)r * w4->cols + ch];
            total += v;
            if (ch != 7) kept += v;
        }
    double share = -1;
    const prn_keep k[1] = {{0, 3, f0}}, ka[1] = {{0, 4, all0}};
    assert_int_equal(prn_filters_next_share(base, k, 1, &share, &e), 0);
    if (fabs(share - kept / total) >= 1e-12) fail_msg("share %.17g, by hand %.17g (%g of %g)", share, kept / total, kept, total);
    assert_true(share > 0.3 && share < 0.95);
    assert_int_equal(prn_filters_next_share(base, ka, 1, &share, &e), 0);
    assert_true(share == 1);
    trn_param *m2 = tl_param(base, 2, TRN_PARAM_WEIGHTS), *m4 = tl_param(base, 4, TRN_PARAM_WEIGHTS);
    for (int r = 0; r < m2->rows; r++) memset(m2->data + (size_t)r * m2->cols + 9, 0, 9 * sizeof(float));
    for (int r = 0; r < m4->rows; r++) m4->data[(size_t)r * m4->cols + 7] = 0;
    assert_int_equal(prn_filters_next_share(base, k, 1, &share, &e), 0);
    assert_true(fabs(share - 1) < 1e-12);
    const int bad[1] = {9};
    const prn_keep kb[1] = {{0, 1, bad}};
    assert_int_equal(prn_filters_next_share(base, kb, 1, &share, &e), -1);
    assert_non_null(strstr(e.msg, "no filter 9"));
    trn_net_free(base);
    trn_cfg_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(permutation_keeps_outputs),
        cmocka_unit_test(dead_filters_removed),
        cmocka_unit_test(refusals),
        cmocka_unit_test(choose_step),
        cmocka_unit_test(common_order),
        cmocka_unit_test(pick_steps),
        cmocka_unit_test(rescale_filters),
        cmocka_unit_test(next_share),
    };
    int rc = cmocka_run_group_tests_name("prn_roadmap", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
