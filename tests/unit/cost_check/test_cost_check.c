/* The cost model (computed from cfg text) against the profiler (measured
 * on the running network) for every kind of variant prune derives: base,
 * each static rewrite, SVD and mimic. Issue 5 requires that the profiled
 * MACs and parameters equal what the cost model predicts from the cfg;
 * this checks that and the rest of the cost convention (weight bytes,
 * peak activation bytes, per-layer shapes, output bytes and operations). */
#include "testutil_impl.h"
#include "testlib_prn.h"

#include "cat.h"

/* A base with a [route] and a [shortcut] reaching back, batch norm, and
 * two connected layers. */
static const char base_cfg[] =
    "[net]\nbatch=4\nwidth=16\nheight=16\nchannels=3\n"
    "[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nbatch_normalize=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=16\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
    "[route]\nlayers=-1,-2\n"
    "[convolutional]\nfilters=16\nsize=1\nactivation=leaky\n"
    "[shortcut]\nfrom=-3\nactivation=linear\n"
    "[convolutional]\nfilters=16\nsize=3\nstride=1\npad=1\ngroups=2\nactivation=relu\n"
    "[dropout]\nprobability=0.5\n"
    "[connected]\noutput=32\nactivation=relu\nbatch_normalize=1\n"
    "[connected]\noutput=4\nactivation=linear\n"
    "[softmax]\n";

/* A base with a Darknet [local] layer (only local2conv makes it
 * buildable), and a crop, an avgpool and a cost layer. */
static const char local_cfg[] =
    "[net]\nbatch=2\nwidth=14\nheight=14\nchannels=3\n"
    "[crop]\ncrop_height=12\ncrop_width=12\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n"
    "[local]\nfilters=6\nsize=3\nstride=2\npad=1\nactivation=leaky\n"
    "[avgpool]\n"
    "[connected]\noutput=5\nactivation=linear\n"
    "[softmax]\n[cost]\ntype=sse\n";

static int gen_input(void *ctx, uint64_t step, float *x, trn_err *err)
{
    (void)err;
    size_t n = *(size_t *)ctx;
    trn_rng r;
    trn_rng_seed(&r, 50 + step);
    for (size_t i = 0; i < n; i++) x[i] = trn_rng_uniform(&r);
    return 0;
}

/* Compares the cost model of dir/variant.cfg with the profile of it and
 * `weights` (default dir/init.weights). */
static void check_folder(const char *dir, const char *weights)
{
    char cfgp[1024], wp[1024];
    snprintf(cfgp, sizeof cfgp, "%s/variant.cfg", dir);
    snprintf(wp, sizeof wp, "%s", weights ? weights : dir);
    if (!weights) snprintf(wp, sizeof wp, "%s/init.weights", dir);
    trn_err e;
    trn_cfg *cfg = trn_cfg_read(cfgp, &e);
    assert_non_null(cfg);
    cat_cost model;
    if (cat_cost_model(cfg, &model, &e) != 0) fail_msg("%s: %s", dir, e.msg);
    cJSON *predicted = cat_cost_json(&model);
    cat_profile_opts po;
    cat_profile_opts_defaults(&po);
    po.runs = 2;
    po.warmup = 0;
    cJSON *prof = cat_profile(cfgp, wp, &po, &e);
    if (!prof) fail_msg("%s: %s", dir, e.msg);
    const cJSON *measured = cJSON_GetObjectItem(prof, "cost");
    static const char *const totals[] = {"macs", "params", "weight_bytes", "peak_activation_bytes",
                                         "bias_ops", "bn_ops", "act_ops", "pool_ops"};
    for (size_t k = 0; k < sizeof totals / sizeof *totals; k++) {
        double a = cat_json_num(predicted, totals[k], -1), b = cat_json_num(measured, totals[k], -2);
        if (a != b) fail_msg("%s: %s predicted %.0f, measured %.0f", dir, totals[k], a, b);
    }
    assert_true(cat_json_num(measured, "macs", 0) > 0);
    assert_int_equal((int)cat_json_num(cJSON_GetObjectItem(prof, "counted"), "macs_outside_layers", -1), 0);
    const cJSON *lp = cJSON_GetObjectItem(predicted, "layers"), *lm = cJSON_GetObjectItem(measured, "layers");
    assert_int_equal(cJSON_GetArraySize(lp), cJSON_GetArraySize(lm));
    for (int i = 0; i < cJSON_GetArraySize(lp); i++) {
        const cJSON *a = cJSON_GetArrayItem(lp, i), *b = cJSON_GetArrayItem(lm, i);
        if (!cJSON_Compare(a, b, 1)) {
            char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
            fail_msg("%s: layer %d predicted %s, measured %s", dir, i, x, y);
        }
    }
    /* The modelled traffic: one entry per layer, summing to the total, at
     * least the weights read once. */
    const cJSON *tr = cJSON_GetObjectItem(prof, "traffic");
    assert_string_equal(cat_json_str(tr, "source", ""), "modelled");
    const cJSON *tl = cJSON_GetObjectItem(tr, "layers");
    assert_int_equal(cJSON_GetArraySize(tl), cJSON_GetArraySize(lm));
    double tsum = 0;
    for (int i = 0; i < cJSON_GetArraySize(tl); i++)
        tsum += cat_json_num(cJSON_GetArrayItem(tl, i), "read_bytes", -1) +
                cat_json_num(cJSON_GetArrayItem(tl, i), "write_bytes", -1);
    assert_true(tsum == cat_json_num(tr, "bytes", -1));
    assert_true(tsum >= cat_json_num(measured, "weight_bytes", -1));
    const cJSON *lat = cJSON_GetObjectItem(cJSON_GetObjectItem(prof, "latency"), "build-host");
    assert_string_equal(cat_json_str(lat, "source", ""), "measured");
    assert_true(cat_json_num(lat, "ms_median", -1) >= 0);
    assert_int_equal((int)cat_json_num(lat, "runs", 0), 2);
    cJSON_Delete(prof);
    cJSON_Delete(predicted);
    cat_cost_free(&model);
    trn_cfg_free(cfg);
}

static void write_variant(prn_variant *v, const char *name)
{
    trn_err e;
    if (prn_variant_write(v, tl_path("%s", name), &e) != 0) fail_msg("%s: %s", name, e.msg);
    check_folder(tl_path("%s", name), NULL);
    prn_variant_free(v);
}

static void every_variant_kind(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(base_cfg);
    trn_net *base = pt_base(c, 1, 31);
    trn_err e;
    /* base */
    assert_int_equal(trn_cfg_write(c, tl_path("base.cfg"), &e), 0);
    assert_int_equal(trn_weights_save(base, tl_path("base.weights"), &e), 0);
    assert_int_equal(mkdir(tl_path("base"), 0755), 0);
    assert_int_equal(trn_cfg_write(c, tl_path("base/variant.cfg"), &e), 0);
    check_folder(tl_path("base"), tl_path("base.weights"));
    /* each rewrite op, and three at once */
    static const char *const specs[] = {"stride2:conv#2", "half:conv#1", "fcdiv8:fc#1",
                                        "remove:conv@3", "stride2:conv@1+half:conv@4+fcdiv2:fc@1"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        prn_variant v;
        if (prn_rewrite(c, base, NULL, specs[i], 7, &v, &e) != 0) fail_msg("%s: %s", specs[i], e.msg);
        char name[32];
        snprintf(name, sizeof name, "rewrite%zu", i);
        write_variant(&v, name);
    }
    /* SVD, two layers */
    prn_variant v;
    if (prn_svd(c, base, "fc#1:4x+fc@2:r2", &v, &e) != 0) fail_msg("%s", e.msg);
    write_variant(&v, "svd");
    /* mimic, with an adapter */
    trn_net *base4 = pt_base(c, 4, 31);
    prn_mimic_opts o;
    prn_mimic_opts_defaults(&o);
    size_t n_in = 4 * trn_net_inputs(base4);
    o.from = "conv@4";
    o.to = "L7"; /* the grouped convolution and the dropout */
    o.with = "convolutional,filters=8,size=3,pad=1,activation=leaky";
    o.batch = 4;
    o.batches = 3;
    o.input = gen_input;
    o.input_ctx = &n_in;
    if (prn_mimic(c, base4, &o, &v, &e) != 0) fail_msg("%s", e.msg);
    write_variant(&v, "mimic");
    trn_net_free(base4);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* local2conv: the [local] base exists only as cfg text and a Darknet
 * weights file; the converted variant is profiled. The cost model also
 * reads the [local] base itself (Darknet's local parameter count). */
static void local_to_conv_variant(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(local_cfg);
    trn_err e;
    cat_cost model;
    assert_int_equal(cat_cost_model(c, &model, &e), 0);
    /* [local] 6 filters on 4x12x12 at stride 2, pad: 6x6 outputs. */
    assert_int_equal(model.layers[2].output[1], 6);
    assert_int_equal(model.layers[2].params, 6 * 6 * 6 + 6 * 6 * 6 * 4 * 9);
    prn_plan *p = prn_plan_create(c, &e);
    assert_non_null(p);
    for (int i = 0; i < model.n; i++) {
        assert_int_equal(prn_plan_layer(p, i)->params, model.layers[i].params);
        assert_int_equal(prn_plan_layer(p, i)->macs, model.layers[i].macs);
    }
    FILE *f = fopen(tl_path("local.weights"), "wb");
    int32_t ver[3] = {0, 2, 0};
    uint64_t seen = 0;
    fwrite(ver, sizeof ver, 1, f);
    fwrite(&seen, sizeof seen, 1, f);
    trn_rng r;
    trn_rng_seed(&r, 3);
    for (uint64_t k = 0; k < model.params; k++) {
        float x = 0.1f * trn_rng_normal(&r);
        fwrite(&x, sizeof x, 1, f);
    }
    fclose(f);
    prn_variant v;
    if (prn_rewrite(c, NULL, tl_path("local.weights"), "local2conv:local@1", 2, &v, &e) != 0)
        fail_msg("%s", e.msg);
    write_variant(&v, "local2conv");
    cat_cost_free(&model);
    prn_plan_free(p);
    trn_cfg_free(c);
}

/* The cost model is an independent oracle with its own kind list; that
 * list must be the engine's kind table (every name and alias, mapped to
 * the same canonical name), plus Darknet's [local], which the cost model
 * prices for local2conv bases and the engine does not build. */
static void cost_model_kinds_equal_engine_kinds(void **state)
{
    (void)state;
    int n_cost = 0, n_engine = 0;
    const char *canon, *type;
    for (int i = 0; (type = cat_cost_section_type(i, &canon)); i++) {
        n_cost++;
        int k = trn_kind_of_section(type);
        if (strcmp(type, "local") == 0) {
            assert_int_equal(k, -1);
            assert_string_equal(canon, "local");
            continue;
        }
        if (k < 0) fail_msg("the cost model knows [%s], the engine's kind table does not", type);
        if (strcmp(trn_layer_kind_name(k), canon) != 0)
            fail_msg("[%s]: the cost model says %s, the engine %s", type, canon, trn_layer_kind_name(k));
    }
    for (int k = 0; k < TRN_LAYER_KIND_COUNT; k++) {
        const trn_kind_desc *d = trn_kind_desc_get(k);
        assert_non_null(d);
        assert_int_equal(d->kind, k);
        const char *names[8] = {d->name};
        int nn = 1;
        for (const char *const *a = d->aliases; *a && nn < 8; a++) names[nn++] = *a;
        for (int j = 0; j < nn; j++) {
            n_engine++;
            int found = 0;
            for (int i = 0; (type = cat_cost_section_type(i, &canon)); i++)
                found |= strcmp(type, names[j]) == 0 && strcmp(canon, d->name) == 0;
            if (!found) fail_msg("the engine builds [%s] (%s); the cost model does not price it",
                                 names[j], d->name);
        }
    }
    assert_int_equal(n_cost, n_engine + 1); /* + local */
    assert_null(trn_kind_desc_get(TRN_LAYER_KIND_COUNT));
}

/* Errors name file:line; unknown sections are refused. */
static void cost_model_errors(void **state)
{
    (void)state;
    static const struct {
        const char *cfg, *msg;
    } bad[] = {
        {"[net]\nwidth=8\nheight=8\n[convolutional]\n", "width, height and channels"},
        {"[net]\nwidth=8\nheight=8\nchannels=3\n[yolo]\n", "test.cfg:5"},
        {"[net]\nwidth=8\nheight=8\nchannels=3\n[convolutional]\nsize=9\n", "does not fit"},
        {"[net]\nwidth=8\nheight=8\nchannels=3\n[convolutional]\nfilters=x\n", "filters=x"},
        {"[net]\nwidth=8\nheight=8\nchannels=3\n[route]\nlayers=-1\n", "not before"},
        {"[convolutional]\n", "starts with [net]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        trn_cfg *c = pt_cfg(bad[i].cfg);
        trn_err e = {{0}};
        cat_cost m;
        assert_int_equal(cat_cost_model(c, &m, &e), -1);
        if (!strstr(e.msg, bad[i].msg)) fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, bad[i].msg);
        assert_null(m.layers);
        trn_cfg_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_variant_kind),
        cmocka_unit_test(local_to_conv_variant),
        cmocka_unit_test(cost_model_errors),
        cmocka_unit_test(cost_model_kinds_equal_engine_kinds),
    };
    int rc = cmocka_run_group_tests_name("cost_check", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
