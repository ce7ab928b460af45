/* Unit tests of the SVD factorisation of connected layers. */
#include "testutil_impl.h"
#include "testlib_prn.h"

/* Input 3x6x6 -> conv 4 (144 values) -> connected 24 (the layer to
 * factorise, M = 144, M' = 24, optionally with batch norm) -> connected 5
 * -> softmax. */
static char *fc_cfg(int bn)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "[net]\nbatch=2\nwidth=6\nheight=6\nchannels=3\n"
             "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n"
             "[connected]\noutput=24\nactivation=leaky\n%s"
             "[connected]\noutput=5\nactivation=linear\n"
             "[softmax]\n",
             bn ? "batch_normalize=1\n" : "");
    return buf;
}

/* Runs the variant and the base on the same inputs; returns the largest
 * absolute difference of the outputs. */
static double max_output_diff(trn_net *base, prn_variant *v)
{
    trn_err e;
    float *x = pt_input(base, 1, 99);
    assert_int_equal(trn_net_forward(base, x, &e), 0);
    assert_int_equal(trn_net_forward(v->net, x, &e), 0);
    /* The softmax output hides scale; compare the layer before it. */
    int lb = trn_net_layers(base) - 2, lv = trn_net_layers(v->net) - 2;
    const float *yb = trn_net_layer_output(base, lb), *yv = trn_net_layer_output(v->net, lv);
    double d = 0;
    for (int i = 0; i < 5; i++) d = fmax(d, fabs((double)yb[i] - yv[i]));
    free(x);
    return d;
}

/* Full rank reproduces the network (within 1e-4), with and without batch
 * norm; the cfg gains one linear connected layer of k outputs. */
static void full_rank_reproduces(void **state)
{
    (void)state;
    for (int bn = 0; bn <= 1; bn++) {
        trn_cfg *c = pt_cfg(fc_cfg(bn));
        trn_net *base = pt_base(c, 1, 3 + bn);
        trn_err e;
        prn_variant v;
        if (prn_svd(c, base, "fc#1:r24", &v, &e) != 0) fail_msg("%s", e.msg);
        assert_string_equal(v.technique, "svd");
        assert_int_equal(trn_net_layers(v.net), 5);
        assert_string_equal(trn_cfg_section_type(v.cfg, 2), "connected");
        assert_string_equal(trn_cfg_get(v.cfg, 2, "output"), "24");
        assert_string_equal(trn_cfg_get(v.cfg, 2, "activation"), "linear");
        assert_null(trn_cfg_get(v.cfg, 2, "batch_normalize"));
        assert_string_equal(trn_cfg_get(v.cfg, 3, "activation"), "leaky");
        if (bn) assert_string_equal(trn_cfg_get(v.cfg, 3, "batch_normalize"), "1");
        double d = max_output_diff(base, &v);
        if (!(d < 1e-4)) fail_msg("bn=%d: outputs differ by %g", bn, d);
        /* Untouched layers are bit-exact copies. */
        assert_true(pt_same_layer(base, 0, v.net, 0));
        assert_true(pt_same_layer(base, 2, v.net, 3));
        prn_variant_free(&v);
        trn_net_free(base);
        trn_cfg_free(c);
    }
}

/* ||W - W_k||_F falls with k, equals sqrt(||W||^2 - ||W_k||^2) (W_k is an
 * orthogonal projection of W), reaches ~0 at full rank; parameter counts
 * follow k(M + M') + M' + k. */
static void error_falls_with_rank(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(fc_cfg(0));
    trn_net *base = pt_base(c, 1, 5);
    const trn_param *w = tl_param(base, 1, TRN_PARAM_WEIGHTS);
    int M = 144, Mp = 24;
    double wn = 0;
    for (size_t i = 0; i < w->count; i++) wn += (double)w->data[i] * w->data[i];
    double prev = INFINITY;
    int ranks[] = {1, 2, 4, 8, 16, 24};
    for (size_t r = 0; r < sizeof ranks / sizeof *ranks; r++) {
        int k = ranks[r];
        char spec[32];
        snprintf(spec, sizeof spec, "fc@1:r%d", k);
        trn_err e;
        prn_variant v;
        assert_int_equal(prn_svd(c, base, spec, &v, &e), 0);
        const trn_param *w1 = tl_param(v.net, 1, TRN_PARAM_WEIGHTS); /* (k, M) */
        const trn_param *w2 = tl_param(v.net, 2, TRN_PARAM_WEIGHTS); /* (M', k) */
        const trn_param *b1 = tl_param(v.net, 1, TRN_PARAM_BIASES);
        assert_int_equal(w1->rows, k);
        assert_int_equal(w1->cols, M);
        assert_int_equal(w2->rows, Mp);
        assert_int_equal(w2->cols, k);
        for (size_t i = 0; i < b1->count; i++) assert_true(b1->data[i] == 0);
        double err2 = 0, wk2 = 0;
        for (int i = 0; i < Mp; i++)
            for (int j = 0; j < M; j++) {
                double s = 0;
                for (int q = 0; q < k; q++)
                    s += (double)w2->data[i * k + q] * w1->data[(size_t)q * M + j];
                double d = w->data[(size_t)i * M + j] - s;
                err2 += d * d;
                wk2 += s * s;
            }
        double rel = sqrt(err2 / wn);
        assert_true(rel < prev);
        prev = rel;
        assert_true(fabs(err2 - (wn - wk2)) < 1e-3 * wn);
        const cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItem(v.fields, "layers"), 0);
        assert_true(fabs(cJSON_GetObjectItem(l0, "relative_error")->valuedouble - rel) < 1e-3);
        uint64_t params = (uint64_t)k * (M + Mp) + Mp + k;
        assert_int_equal((uint64_t)cJSON_GetObjectItem(l0, "params_after")->valuedouble, params);
        trn_layer_info i1, i2;
        trn_net_layer_info(v.net, 1, &i1);
        trn_net_layer_info(v.net, 2, &i2);
        assert_int_equal(i1.params + i2.params, params);
        if (k == 24) assert_true(rel < 1e-5);
        prn_variant_free(&v);
    }
    trn_net_free(base);
    trn_cfg_free(c);
}

/* "Fx" picks the largest rank within 1/F of the layer's parameters. */
static void compression_picks_rank(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(fc_cfg(1));
    trn_net *base = pt_base(c, 1, 6);
    int M = 144, Mp = 24;
    uint64_t orig = (uint64_t)M * Mp + Mp + 3 * Mp;
    double factors[] = {2, 4, 8, 12.5};
    for (size_t f = 0; f < sizeof factors / sizeof *factors; f++) {
        char spec[32];
        snprintf(spec, sizeof spec, "fc#1:%gx", factors[f]);
        trn_err e;
        prn_variant v;
        if (prn_svd(c, base, spec, &v, &e) != 0) fail_msg("%s: %s", spec, e.msg);
        const cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItem(v.fields, "layers"), 0);
        int k = cJSON_GetObjectItem(l0, "rank")->valueint;
        uint64_t at = (uint64_t)k * (M + Mp) + Mp + k + 3 * Mp;
        uint64_t next = (uint64_t)(k + 1) * (M + Mp) + Mp + (k + 1) + 3 * Mp;
        assert_true((double)at * factors[f] <= (double)orig);
        assert_true((double)next * factors[f] > (double)orig);
        assert_int_equal((uint64_t)cJSON_GetObjectItem(v.fields, "connected_params_before")->valuedouble,
                         orig + 5 * 24 + 5);
        prn_variant_free(&v);
    }
    trn_net_free(base);
    trn_cfg_free(c);
}

/* Two layers in one spec; the layer map follows both insertions. */
static void two_layers(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(fc_cfg(0));
    trn_net *base = pt_base(c, 1, 7);
    trn_err e;
    prn_variant v;
    assert_int_equal(prn_svd(c, base, "fc@1:r24+fc@2:r5", &v, &e), 0);
    assert_int_equal(trn_net_layers(v.net), 6);
    const cJSON *map = cJSON_GetObjectItem(v.fields, "layer_map");
    int want[] = {0, 2, 4, 5};
    for (int i = 0; i < 4; i++) assert_int_equal(cJSON_GetArrayItem(map, i)->valueint, want[i]);
    double d = max_output_diff(base, &v);
    if (!(d < 1e-4)) fail_msg("outputs differ by %g", d);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

static void bad_specs(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(fc_cfg(0));
    trn_net *base = pt_base(c, 1, 8);
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"", "empty SVD spec"},
        {"fc#1", "has no ':'"},
        {"fc#1:8", "neither Fx"},
        {"fc#1:1x", "neither Fx"},
        {"fc#1:r0", "integer >= 1"},
        {"fc#1:r25", "above the largest rank"},
        {"fc#1:5000x", "cannot be compressed"},
        {"conv#1:r2", "SVD applies to [connected]"},
        {"fc#2:r2", "besides the final classifier"},
        {"fc#1:r2+fc@1:r3", "named twice"},
        {"fc#1:r2+", "empty or too long"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        trn_err e = {{0}};
        prn_variant v;
        if (prn_svd(c, base, bad[i].spec, &v, &e) == 0) fail_msg("'%s' was accepted", bad[i].spec);
        if (!strstr(e.msg, bad[i].msg)) fail_msg("'%s': '%s' lacks '%s'", bad[i].spec, e.msg, bad[i].msg);
        assert_null(v.net);
    }
    trn_net_free(base);
    trn_cfg_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_rank_reproduces),
        cmocka_unit_test(error_falls_with_rank),
        cmocka_unit_test(compression_picks_rank),
        cmocka_unit_test(two_layers),
        cmocka_unit_test(bad_specs),
    };
    int rc = cmocka_run_group_tests_name("prn_svd", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
