/*
 * The group-lasso export (prune/src/lasso.c): zeroed filter groups (batch
 * norm: scale and shift) and unused input channels are removed, the
 * exported network computes what the base computes (within 1e-5), Darknet
 * (libdarknet) loads the exported model and computes the same, channels
 * read by a [route] stay, and a network without zero groups comes out
 * unchanged.
 */
#include "testutil_impl.h"
#include "testlib_prn.h"

#include <math.h>

/* conv(BN) -> maxpool -> conv(BN) -> conv(no BN) -> connected -> connected. */
static const char *chain_cfg =
    "[net]\nbatch=1\nwidth=12\nheight=12\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\npad=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nbatch_normalize=1\nfilters=10\nsize=3\npad=1\nactivation=leaky\n"
    "[convolutional]\nfilters=6\nsize=3\npad=1\nactivation=relu\n"
    "[connected]\noutput=12\nactivation=relu\n"
    "[connected]\noutput=4\nactivation=linear\n"
    "[softmax]\n";

static double max_diff(trn_net *a, trn_net *b, int layer_a, int layer_b, size_t n)
{
    trn_err e;
    float *x = pt_input(a, 1, 42);
    assert_int_equal(trn_net_forward(a, x, &e), 0);
    assert_int_equal(trn_net_forward(b, x, &e), 0);
    const float *ya = trn_net_layer_output(a, layer_a), *yb = trn_net_layer_output(b, layer_b);
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs((double)ya[i] - yb[i]));
    free(x);
    return d;
}

/* Zeroes filter k of conv layer i: BN scale and shift, or row and bias. */
static void kill_filter(trn_net *net, int i, int k)
{
    trn_param *b = tl_param(net, i, TRN_PARAM_BIASES), *s = tl_param(net, i, TRN_PARAM_SCALES),
              *w = tl_param(net, i, TRN_PARAM_WEIGHTS);
    b->data[k] = 0;
    if (s) s->data[k] = 0;
    else memset(w->data + (size_t)k * w->cols, 0, (size_t)w->cols * sizeof(float));
}

/* Zeroes input channel c of layer i (per values per channel per row). */
static void kill_channel(trn_net *net, int i, int c, int per)
{
    trn_param *w = tl_param(net, i, TRN_PARAM_WEIGHTS);
    for (int r = 0; r < w->rows; r++) memset(w->data + (size_t)r * w->cols + (size_t)c * per, 0, (size_t)per * sizeof(float));
}

static prn_variant export_chain(trn_cfg **cfgp, trn_net **basep)
{
    trn_cfg *c = pt_cfg(chain_cfg);
    trn_net *base = pt_base(c, 1, 11);
    kill_filter(base, 0, 1);
    kill_filter(base, 0, 5);   /* L0: 8 -> 6 by dead filters */
    kill_channel(base, 2, 3, 9); /* ... and 5 by channel 3 that L2 does not read */
    kill_filter(base, 2, 0);
    kill_filter(base, 2, 9);   /* L2: 10 -> 8 */
    kill_channel(base, 4, 2, 36); /* L3's channel 2 unused by the connected layer (6x6) */
    kill_filter(base, 3, 4);   /* and filter 4 dead: 6 -> 4 */
    trn_err e;
    prn_variant v;
    if (prn_lasso(c, base, &v, &e) != 0) fail_msg("%s", e.msg);
    *cfgp = c;
    *basep = base;
    return v;
}

static void removes_zero_groups_exactly(void **state)
{
    (void)state;
    trn_cfg *c;
    trn_net *base;
    prn_variant v = export_chain(&c, &base);
    assert_string_equal(v.technique, "lasso");
    assert_string_equal(trn_cfg_get(v.cfg, 1, "filters"), "5");
    assert_string_equal(trn_cfg_get(v.cfg, 3, "filters"), "8");
    assert_string_equal(trn_cfg_get(v.cfg, 4, "filters"), "4");
    trn_layer_info li;
    assert_int_equal(trn_net_layer_info(v.net, 3, &li), 0);
    assert_int_equal(li.in.c, 8);
    assert_int_equal(trn_net_layer_info(v.net, 4, &li), 0);
    assert_int_equal(li.in.c * li.in.h * li.in.w, 4 * 36);
    double d = max_diff(base, v.net, 5, 5, 4);
    if (!(d < 1e-5)) fail_msg("outputs differ by %g", d);
    cJSON *f = v.fields;
    assert_true(cJSON_GetObjectItem(f, "macs_after")->valuedouble <
                0.8 * cJSON_GetObjectItem(f, "macs_before")->valuedouble);
    cJSON *l0 = cJSON_GetArrayItem(cJSON_GetObjectItem(f, "layers"), 0);
    assert_int_equal(cJSON_GetObjectItem(l0, "dead_filters")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(l0, "unused_channels")->valueint, 1);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* Shape-wise zeros are reported, not removed. */
static void reports_zero_columns(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(chain_cfg);
    trn_net *base = pt_base(c, 1, 12);
    trn_param *w = tl_param(base, 3, TRN_PARAM_WEIGHTS);
    for (int r = 0; r < w->rows; r++) w->data[(size_t)r * w->cols + 7] = w->data[(size_t)r * w->cols + 8] = 0;
    trn_err e;
    prn_variant v;
    if (prn_lasso(c, base, &v, &e) != 0) fail_msg("%s", e.msg);
    assert_non_null(strstr(v.description, "nothing removed"));
    cJSON *l3 = cJSON_GetArrayItem(cJSON_GetObjectItem(v.fields, "layers"), 2);
    assert_int_equal(cJSON_GetObjectItem(l3, "layer")->valueint, 3);
    assert_int_equal(cJSON_GetObjectItem(l3, "zero_columns")->valueint, 2);
    assert_int_equal(cJSON_GetObjectItem(l3, "columns")->valueint, 90);
    assert_true(cJSON_GetObjectItem(v.fields, "shape_sparsity_macs_not_exported")->valuedouble > 0);
    assert_string_equal(trn_cfg_get(v.cfg, 3, "filters"), "10");
    assert_true(max_diff(base, v.net, 5, 5, 4) == 0);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* A layer whose channels a [route] also reads keeps them all. */
static void route_readers_keep_channels(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(pt_small_cfg);
    trn_net *base = pt_base(c, 1, 13);
    kill_filter(base, 0, 2); /* L0 -> L1 (maxpool), read by L2 and the route L3 */
    kill_filter(base, 4, 1); /* L4 -> shortcut */
    trn_err e;
    prn_variant v;
    if (prn_lasso(c, base, &v, &e) != 0) fail_msg("%s", e.msg);
    assert_string_equal(trn_cfg_get(v.cfg, 1, "filters"), "8");
    assert_string_equal(trn_cfg_get(v.cfg, 5, "filters"), "16");
    double d = max_diff(base, v.net, 7, 7, 4);
    if (!(d < 1e-5)) fail_msg("outputs differ by %g", d);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* libdarknet loads the exported model and computes what our engine does. */
static void darknet_agrees(void **state)
{
    (void)state;
    const char *t = getenv("TESTD");
    char dn[1024];
    snprintf(dn, sizeof dn, "%s/darknet/dn_ref", t && *t ? t : "build/tests");
    if (!tl_exists("/usr/lib/darknet/libdarknet.so") || !tl_exists(dn)) {
        TEST_SKIP("libdarknet or %s is missing (apt-get install darknet; run through make test)", dn);
        return;
    }
    trn_cfg *c;
    trn_net *base;
    prn_variant v = export_chain(&c, &base);
    trn_err e;
    char dir[1024], xin[1100], outd[1100], cfgp[1100], wp[1100];
    snprintf(dir, sizeof dir, "%s", tl_path("lasso_export"));
    if (prn_variant_write(&v, dir, &e) != 0) fail_msg("%s", e.msg);
    snprintf(xin, sizeof xin, "%s/x.bin", dir);
    snprintf(outd, sizeof outd, "%s/dn", dir);
    snprintf(cfgp, sizeof cfgp, "%s/variant.cfg", dir);
    snprintf(wp, sizeof wp, "%s/init.weights", dir);
    float *x = pt_input(v.net, 1, 42);
    size_t nin = trn_net_inputs(v.net);
    assert_int_equal(tl_write(xin, x, nin * sizeof *x), 0);
    mkdir(outd, 0755);
    assert_int_equal(tl_run("'%s' forward '%s' '%s' '%s' '%s'", dn, cfgp, wp, xin, outd), 0);
    assert_int_equal(trn_net_forward(v.net, x, &e), 0);
    for (int i = 0; i < trn_net_layers(v.net); i++) {
        trn_layer_info li;
        trn_net_layer_info(v.net, i, &li);
        size_t n = (size_t)li.out.c * li.out.h * li.out.w;
        char p[1200];
        snprintf(p, sizeof p, "%s/out_%03d.bin", outd, i);
        float *y = tl_read_floats(p, n);
        assert_non_null(y);
        double r = tl_relerr(trn_net_layer_output(v.net, i), y, n);
        if (!(r < 1e-4)) fail_msg("layer %d: relative error %g against Darknet", i, r);
        free(y);
    }
    free(x);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(removes_zero_groups_exactly), cmocka_unit_test(reports_zero_columns),
        cmocka_unit_test(route_readers_keep_channels), cmocka_unit_test(darknet_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
