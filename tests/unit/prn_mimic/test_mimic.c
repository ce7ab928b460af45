/* Unit tests of the in-place transformation (mimic) on a tiny network and
 * tiny generated images. */
#include "testutil_impl.h"
#include "testlib_prn.h"

/* L0 conv 8, L1 maxpool, L2 conv 16 (3x3), L3 conv 16 (3x3), L4
 * connected 4, L5 softmax. The fragment conv@2..conv@3 (L2..L3) is
 * replaced below. */
static const char tiny_cfg[] =
    "[net]\nbatch=8\nwidth=12\nheight=12\nchannels=3\n"
    "[convolutional]\nfilters=8\nsize=3\npad=1\nbatch_normalize=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=leaky\n"
    "[convolutional]\nfilters=16\nsize=3\npad=1\nactivation=leaky\n"
    "[connected]\noutput=4\nactivation=linear\n"
    "[softmax]\n";

/* Images with structure (a smooth ramp plus noise per image), a pure
 * function of the step. */
typedef struct gen {
    int batch, side;
} gen;

static int gen_input(void *ctx, uint64_t step, float *x, trn_err *err)
{
    (void)err;
    const gen *g = ctx;
    int n = g->side;
    trn_rng r;
    trn_rng_seed(&r, 1000 + step);
    for (int b = 0; b < g->batch; b++) {
        float gx = trn_rng_range(&r, -1, 1), gy = trn_rng_range(&r, -1, 1);
        for (int c = 0; c < 3; c++)
            for (int i = 0; i < n; i++)
                for (int j = 0; j < n; j++)
                    x[((b * 3 + c) * n + i) * n + j] =
                        0.5f + 0.03f * (gx * (float)j + gy * (float)i) * (float)(c + 1) +
                        0.1f * trn_rng_normal(&r);
    }
    return 0;
}

static void opts(prn_mimic_opts *o, gen *g, const char *with)
{
    prn_mimic_opts_defaults(o);
    o->from = "conv@2";
    o->to = "conv@3";
    o->with = with;
    o->batch = g->batch;
    o->batches = 80;
    o->learning_rate = 0.1f;
    o->seed = 4;
    o->input = gen_input;
    o->input_ctx = g;
}

/* The loss falls, the adapter is there, the spliced network runs and
 * keeps the base's layers outside the fragment. */
static void mimic_learns_and_splices(void **state)
{
    (void)state;
    gen g = {8, 12};
    int batch = g.batch;
    trn_cfg *c = pt_cfg(tiny_cfg);
    trn_net *base = pt_base(c, batch, 21);
    prn_mimic_opts o;
    opts(&o, &g, "convolutional,filters=8,size=3,pad=1,activation=leaky");
    trn_err e;
    prn_variant v;
    if (prn_mimic(c, base, &o, &v, &e) != 0) fail_msg("%s", e.msg);
    assert_string_equal(v.technique, "mimic");
    double first = cJSON_GetObjectItem(v.fields, "loss_first")->valuedouble;
    double last = cJSON_GetObjectItem(v.fields, "loss_last")->valuedouble;
    if (!(last < 0.5 * first)) fail_msg("the regression loss went from %g to %g", first, last);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(v.fields, "adapter")));
    /* L2: the replacement, L3: the adapter, then the base's L4, L5. */
    assert_int_equal(trn_cfg_sections(v.cfg), 7);
    assert_string_equal(trn_cfg_get(v.cfg, 3, "filters"), "8");
    assert_string_equal(trn_cfg_get(v.cfg, 4, "filters"), "16");
    assert_string_equal(trn_cfg_get(v.cfg, 4, "size"), "1");
    assert_string_equal(trn_cfg_get(v.cfg, 4, "activation"), "linear");
    assert_string_equal(trn_cfg_section_type(v.cfg, 5), "connected");
    assert_true(pt_same_layer(base, 0, v.net, 0));
    assert_true(pt_same_layer(base, 4, v.net, 4));
    /* The spliced network computes what the regression learnt: on the
     * batch after the last training step (never trained on), the output
     * of the adapter (L3) is as close to that of the base's fragment (L3)
     * as the regression network's own held-out error says, and closer
     * than an untrained replacement would be. */
    float x[8 * 3 * 12 * 12];
    assert_int_equal(gen_input(&g, (uint64_t)o.batches, x, &e), 0);
    assert_int_equal(trn_net_forward(base, x, &e), 0);
    const float *t = trn_net_layer_output(base, 3);
    double err2 = 0, energy = 0;
    for (int b = 0; b < 8; b++) {
        assert_int_equal(trn_net_forward(v.net, x + b * 3 * 144, &e), 0);
        const float *y = trn_net_layer_output(v.net, 3);
        for (int i = 0; i < 16 * 6 * 6; i++) {
            double d = (double)y[i] - t[b * 16 * 36 + i];
            err2 += d * d;
            energy += (double)t[b * 16 * 36 + i] * t[b * 16 * 36 + i];
        }
    }
    double held = cJSON_GetObjectItem(v.fields, "heldout_relative_error")->valuedouble;
    if (!(fabs(err2 / energy - held) < 1e-4 * held))
        fail_msg("the spliced network's relative error %g differs from the regression's %g",
                 err2 / energy, held);
    prn_mimic_opts untrained = o;
    untrained.batches = 1;
    prn_variant u;
    if (prn_mimic(c, base, &untrained, &u, &e) != 0) fail_msg("%s", e.msg);
    double held0 = cJSON_GetObjectItem(u.fields, "heldout_relative_error")->valuedouble;
    if (!(held < 0.5 * held0)) fail_msg("held-out relative error %g after 80 steps, %g after 1", held, held0);
    prn_variant_free(&u);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* Same channel count: no adapter; same seed: same weights. */
static void mimic_without_adapter_is_deterministic(void **state)
{
    (void)state;
    gen g = {4, 12};
    int batch = g.batch;
    trn_cfg *c = pt_cfg(tiny_cfg);
    trn_net *base = pt_base(c, batch, 22);
    prn_mimic_opts o;
    opts(&o, &g, "[convolutional],filters=16,size=5,pad=1,padding=2,activation=leaky");
    o.batches = 5;
    trn_err e;
    prn_variant v[2];
    for (int i = 0; i < 2; i++)
        if (prn_mimic(c, base, &o, &v[i], &e) != 0) fail_msg("%s", e.msg);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(v[0].fields, "adapter")));
    assert_int_equal(trn_cfg_sections(v[0].cfg), 6);
    assert_string_equal(trn_cfg_get(v[0].cfg, 3, "size"), "5");
    for (int l = 0; l < trn_net_layers(v[0].net); l++) {
        int n;
        pt_layer_params(v[0].net, l, &n);
        if (n) assert_true(pt_same_layer(v[0].net, l, v[1].net, l));
    }
    prn_variant_free(&v[0]);
    prn_variant_free(&v[1]);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* Route-continuation items, a fragment of one layer, routes inside. */
static void mimic_with_text_forms(void **state)
{
    (void)state;
    gen g = {2, 12};
    int batch = g.batch;
    trn_cfg *c = pt_cfg(tiny_cfg);
    trn_net *base = pt_base(c, batch, 23);
    prn_mimic_opts o;
    opts(&o, &g, "convolutional,filters=4,size=1,activation=leaky;"
                     "convolutional,filters=4,size=3,pad=1,activation=leaky;route,layers=-1,-2");
    o.from = o.to = "L3";
    o.batches = 2;
    trn_err e;
    prn_variant v;
    if (prn_mimic(c, base, &o, &v, &e) != 0) fail_msg("%s", e.msg);
    assert_string_equal(trn_cfg_get(v.cfg, 6, "layers"), "-1,-2");
    assert_string_equal(trn_cfg_section_type(v.cfg, 7), "convolutional"); /* adapter 8 -> 16 */
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

static void mimic_errors(void **state)
{
    (void)state;
    gen g = {2, 12};
    int batch = g.batch;
    trn_cfg *c = pt_cfg(tiny_cfg);
    trn_net *base = pt_base(c, batch, 24);
    static const struct {
        const char *from, *to, *with, *msg;
    } bad[] = {
        {"conv@2", "conv@3", "convolutional,filters=8,size=3,stride=2,pad=1",
         "the height and width must match"},
        {"conv@3", "conv@2", "convolutional,filters=8", "from <= to"},
        {"conv@9", "conv@3", "convolutional,filters=8", "--from: conv@9"},
        {"conv@2", "fc#3", "convolutional,filters=8", "--to: fc#3"},
        {"conv@2", "conv@3", "convolutional,filters=8,size=3,pad=1;maxpool,size=2,stride=2,bogus=1",
         "--with item:"},
        {"conv@2", "conv@3", "convolutional,filters=8,size=3,pad=1;maxpool,size=2,stride=2,bogus=1",
         "bogus"},
        {"conv@2", "conv@3", "convolutional,filters", "--with item:2"},
        {"conv@2", "conv@3", "net,batch=1", "no [net]"},
        {"conv@2", "conv@3", "convolutional,filters=16,size=3,pad=1;softmax", "regression fragment"},
        {"conv@2", "conv@3", "convolutional,filters=16,size=99", "cannot be built"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        prn_mimic_opts o;
        opts(&o, &g, bad[i].with);
        o.from = bad[i].from;
        o.to = bad[i].to;
        o.batches = 1;
        trn_err e = {{0}};
        prn_variant v;
        if (prn_mimic(c, base, &o, &v, &e) == 0) fail_msg("case %zu was accepted", i);
        if (!strstr(e.msg, bad[i].msg)) fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, bad[i].msg);
        assert_null(v.cfg);
    }
    trn_net_free(base);
    trn_cfg_free(c);
}

/* A fragment whose inner layer is read from outside cannot be replaced;
 * one that reads layers before it neither. */
static void mimic_refuses_open_fragments(void **state)
{
    (void)state;
    static const char cfg[] = "[net]\nbatch=2\nwidth=8\nheight=8\nchannels=3\n"
                              "[convolutional]\nfilters=4\nsize=3\npad=1\n"   /* L0 */
                              "[convolutional]\nfilters=4\nsize=3\npad=1\n"   /* L1 */
                              "[convolutional]\nfilters=4\nsize=3\npad=1\n"   /* L2 */
                              "[shortcut]\nfrom=-3\n"                          /* L3 reads L0 */
                              "[convolutional]\nfilters=4\nsize=3\npad=1\n"; /* L4 */
    gen g = {2, 8};
    int batch = g.batch;
    trn_cfg *c = pt_cfg(cfg);
    trn_net *base = pt_base(c, batch, 25);
    prn_mimic_opts o;
    opts(&o, &g, "convolutional,filters=4,size=3,pad=1");
    o.batches = 1;
    o.from = "L0";
    o.to = "L1";
    trn_err e;
    prn_variant v;
    assert_int_equal(prn_mimic(c, base, &o, &v, &e), -1);
    assert_non_null(strstr(e.msg, "inside the replaced layers"));
    o.from = "L2";
    o.to = "L3";
    assert_int_equal(prn_mimic(c, base, &o, &v, &e), -1);
    assert_non_null(strstr(e.msg, "outside the layers 2..3"));
    o.from = "L1";
    o.to = "L3"; /* the shortcut reads L0, before the fragment */
    assert_int_equal(prn_mimic(c, base, &o, &v, &e), -1);
    o.from = "L0";
    o.to = "L3"; /* closed: fine */
    if (prn_mimic(c, base, &o, &v, &e) != 0) fail_msg("%s", e.msg);
    assert_int_equal(trn_cfg_sections(v.cfg), 3);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

static void mimic_settings(void **state)
{
    (void)state;
    prn_mimic_opts o;
    prn_mimic_opts_defaults(&o);
    trn_err e;
    assert_int_equal(prn_mimic_opts_set(&o, "batches=12", &e), 0);
    assert_int_equal(prn_mimic_opts_set(&o, "learning_rate=0.05", &e), 0);
    assert_int_equal(o.batches, 12);
    assert_true(fabsf(o.learning_rate - 0.05f) < 1e-7f);
    assert_int_equal(prn_mimic_opts_set(&o, "batch=0", &e), -1);
    assert_int_equal(prn_mimic_opts_set(&o, "rate=1", &e), -1);
    assert_non_null(strstr(e.msg, "unknown key"));
    assert_int_equal(prn_mimic_opts_set(&o, "momentum", &e), -1);
    assert_int_equal(prn_mimic_opts_set(&o, "decay=x", &e), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mimic_learns_and_splices),
        cmocka_unit_test(mimic_without_adapter_is_deterministic),
        cmocka_unit_test(mimic_with_text_forms),
        cmocka_unit_test(mimic_errors),
        cmocka_unit_test(mimic_refuses_open_fragments),
        cmocka_unit_test(mimic_settings),
    };
    int rc = cmocka_run_group_tests_name("prn_mimic", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
