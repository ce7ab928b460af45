/* Early exits in the engine (trainer/nn/exit.c): the confidence measure,
 * the [exit] kind and exits cfg, exits weights files and the early-exit
 * forward (which exit answers, its probabilities, trunk layers run once). */
#include "testutil_impl.h"
#include "testlib_trn.h"

static const char *trunk_cfg =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\npad=1\nactivation=relu\n" /* 0 */
    "[maxpool]\nsize=2\nstride=2\n"                                                    /* 1 */
    "[convolutional]\nfilters=8\nsize=3\npad=1\nactivation=relu\n"                    /* 2 */
    "[maxpool]\nsize=2\nstride=2\n"                                                    /* 3 */
    "[connected]\noutput=5\nactivation=linear\n[softmax]\n";                           /* 4, 5 */

static const char *exits_cfg =
    "[net]\nlearning_rate=0.01\n"
    "[exit]\nat=1\nthreshold=0.5\n"
    "[convolutional]\nfilters=4\nsize=1\nactivation=relu\n[avgpool]\n"
    "[connected]\noutput=5\nactivation=linear\n[softmax]\n"
    "[exit]\nat=3\nthreshold=0.25\n"
    "[avgpool]\n[connected]\noutput=5\nactivation=linear\n[softmax]\n";

static trn_cfg *parse(const char *text) { return tl_cfg(text, "exits.cfg"); }

static trn_net *trunk_net(int randomize)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_net *t = tl_net(trunk_cfg, &o);
    assert_non_null(t);
    if (randomize) tl_randomize(t, 7);
    return t;
}

static trn_exits *make_exits(const trn_net *trunk, const char *text, trn_err *e)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_cfg *c = parse(text);
    assert_non_null(c);
    trn_exits *x = trn_exits_create(trunk, c, &o, e);
    trn_cfg_free(c);
    return x;
}

static void confidence(void **state)
{
    (void)state;
    float onehot[4] = {0, 1, 0, 0}, uniform[4] = {.25f, .25f, .25f, .25f}, two[2] = {.9f, .1f};
    assert_float_equal(trn_confidence(onehot, 4), 1, 1e-6);
    assert_float_equal(trn_confidence(uniform, 4), 0, 1e-6);
    double want = 1 + (0.9 * log(0.9) + 0.1 * log(0.1)) / log(2.0);
    assert_float_equal(trn_confidence(two, 2), want, 1e-6);
    /* more peaked: more confident */
    float a[3] = {.5f, .3f, .2f}, b[3] = {.7f, .2f, .1f};
    assert_true(trn_confidence(b, 3) > trn_confidence(a, 3));
}

static void exit_kind_in_table(void **state)
{
    (void)state;
    int k = trn_kind_of_section("exit");
    assert_int_equal(k, TRN_LAYER_EXIT);
    assert_string_equal(trn_layer_kind_name(TRN_LAYER_EXIT), "exit");
    assert_int_equal(trn_kind_desc_get(TRN_LAYER_EXIT)->channels, TRN_CHANNELS_PASS);
    /* an [exit] inside a trunk (not a branch's first layer) is refused */
    trn_err e;
    trn_cfg *c = parse("[net]\nheight=4\nwidth=4\nchannels=1\n[connected]\noutput=2\n[exit]\nat=0\n");
    assert_non_null(c);
    assert_null(trn_net_create(c, NULL, &e));
    assert_non_null(strstr(e.msg, "first layer of an exit branch"));
    assert_non_null(strstr(e.msg, "exits.cfg:7"));
    trn_cfg_free(c);
}

static void create_and_errors(void **state)
{
    (void)state;
    trn_net *t = trunk_net(0);
    trn_err e;
    trn_exits *x = make_exits(t, exits_cfg, &e);
    assert_non_null(x);
    assert_int_equal(trn_exits_count(x), 2);
    assert_int_equal(trn_exit_at(x, 0), 1);
    assert_int_equal(trn_exit_at(x, 1), 3);
    assert_int_equal(trn_exit_at(x, 2), -1);
    assert_float_equal(trn_exit_threshold(x, 0), 0.5, 1e-7);
    assert_float_equal(trn_exit_threshold(x, 1), 0.25, 1e-7);
    trn_shape in = trn_net_input_shape(trn_exit_net(x, 0));
    assert_int_equal(in.c, 8);
    assert_int_equal(in.h, 6);
    assert_int_equal(in.w, 6);
    assert_float_equal(trn_net_get_config(trn_exit_net(x, 0))->learning_rate, 0.01, 1e-7);
    assert_int_equal(trn_exit_set_threshold(x, 0, 1.5f, &e), -1);
    assert_int_equal(trn_exit_set_threshold(x, 0, 0.75f, &e), 0);
    assert_float_equal(trn_exit_threshold(x, 0), 0.75, 1e-7);
    trn_exits_free(x);

    static const struct {
        const char *text, *want;
    } bad[] = {
        {"[convolutional]\nfilters=2\n", "does not start with [exit]"},
        {"[net]\nwidth=3\n[exit]\nat=1\n[avgpool]\n[connected]\noutput=5\n[softmax]\n", "must not set width"},
        {"[exit]\nat=9\n[avgpool]\n[connected]\noutput=5\n[softmax]\n", "at=9"},
        {"[exit]\n[avgpool]\n[connected]\noutput=5\n[softmax]\n", "at=(missing)"},
        {"[exit]\nat=3\n[avgpool]\n[connected]\noutput=5\n[softmax]\n[exit]\nat=1\n[avgpool]\n[connected]\noutput=5\n[softmax]\n",
         "increasing"},
        {"[exit]\nat=1\n", "has no layers"},
        {"[exit]\nat=1\n[avgpool]\n[connected]\noutput=4\n[softmax]\n", "4 outputs, the trunk 5"},
        {"[exit]\nat=1\nthreshold=2\n[avgpool]\n[connected]\noutput=5\n[softmax]\n", "threshold"},
        {"[exit]\nat=1\n[avgpool]\n[bogus]\n", "exits.cfg:4"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        trn_exits *y = make_exits(t, bad[i].text, &e);
        if (y || !strstr(e.msg, bad[i].want)) fail_msg("case %zu: got '%s', want '%s'", i, e.msg, bad[i].want);
    }
    trn_net_free(t);
}

/* The early-exit forward: which exit answers, with which probabilities,
 * and the trunk's layers run once each. */
static void forward(void **state)
{
    (void)state;
    trn_net *t = trunk_net(1);
    trn_err e;
    trn_exits *x = make_exits(t, exits_cfg, &e);
    assert_non_null(x);
    for (int j = 0; j < 2; j++) tl_randomize(trn_exit_net(x, j), 11 + j);
    float in[3 * 12 * 12];
    tl_fill_uniform(in, sizeof in / sizeof *in, 5, 0, 1);

    /* references: the trunk's output, and each branch on its layer's output */
    float want_trunk[5], want_exit[2][5];
    assert_int_equal(trn_net_forward(t, in, &e), 0);
    memcpy(want_trunk, trn_net_output(t), sizeof want_trunk);
    for (int j = 0; j < 2; j++) {
        assert_int_equal(trn_net_forward(trn_exit_net(x, j), trn_net_layer_output(t, trn_exit_at(x, j)), &e), 0);
        memcpy(want_exit[j], trn_net_output(trn_exit_net(x, j)), sizeof want_exit[j]);
    }
    float conf0 = trn_confidence(want_exit[0], 5), conf1 = trn_confidence(want_exit[1], 5);

    trn_exit_result r;
    /* alpha 0: the first exit answers (any confidence > 0) */
    assert_int_equal(trn_exits_forward(t, x, in, 0, &r, &e), 0);
    assert_int_equal(r.exit, 0);
    assert_int_equal(r.trunk_last, 1);
    assert_memory_equal(r.probs, want_exit[0], sizeof want_exit[0]);
    assert_float_equal(r.confidence, conf0, 1e-7);

    /* exit 0 can never pass threshold 1; exit 1 passes threshold 0 */
    assert_int_equal(trn_exit_set_threshold(x, 0, 1, &e), 0);
    assert_int_equal(trn_exit_set_threshold(x, 1, 0, &e), 0);
    assert_int_equal(trn_exits_forward(t, x, in, 1, &r, &e), 0);
    assert_int_equal(r.exit, 1);
    assert_int_equal(r.trunk_last, 3);
    assert_memory_equal(r.probs, want_exit[1], sizeof want_exit[1]);

    /* thresholds just above / below the confidences pick the exit */
    assert_int_equal(trn_exit_set_threshold(x, 0, conf0, &e), 0);
    assert_int_equal(trn_exit_set_threshold(x, 1, conf1 * 0.999f, &e), 0);
    assert_int_equal(trn_exits_forward(t, x, in, 1, &r, &e), 0);
    assert_int_equal(r.exit, 1); /* Conf > T strictly: exit 0 at exactly its threshold does not answer */

    /* alpha above 1/T: the trunk answers, exactly as a plain forward */
    assert_int_equal(trn_exit_set_threshold(x, 0, 0.5f, &e), 0);
    assert_int_equal(trn_exit_set_threshold(x, 1, 0.5f, &e), 0);
    assert_int_equal(trn_exits_forward(t, x, in, 2.5f, &r, &e), 0);
    assert_int_equal(r.exit, 2);
    assert_int_equal(r.trunk_last, 5);
    assert_memory_equal(r.probs, want_trunk, sizeof want_trunk);

    assert_int_equal(trn_exits_forward(t, x, in, -1, &r, &e), -1);
    assert_non_null(strstr(e.msg, "alpha"));
    trn_exits_free(x);
    trn_net_free(t);
}

/* The other measures: max, the top probability; margin, the top less the
 * second; they rank vectors unlike the entropy's Conf. */
static void confidence_measures(void **state)
{
    (void)state;
    float a[4] = {.5f, .5f, 0, 0}, b[4] = {.4f, .2f, .2f, .2f}, c[3] = {.1f, .7f, .2f};
    assert_float_equal(trn_confidence_by(TRN_CONF_MAX, c, 3), .7, 1e-6);
    assert_float_equal(trn_confidence_by(TRN_CONF_MARGIN, c, 3), .5, 1e-6);
    assert_float_equal(trn_confidence_by(TRN_CONF_ENTROPY, c, 3), trn_confidence(c, 3), 0);
    assert_float_equal(trn_confidence_by(TRN_CONF_MARGIN, a, 4), 0, 1e-7);
    /* entropy: a (two classes tied) above b; margin: b above a */
    assert_true(trn_confidence(a, 4) > trn_confidence(b, 4));
    assert_true(trn_confidence_by(TRN_CONF_MARGIN, b, 4) > trn_confidence_by(TRN_CONF_MARGIN, a, 4));
    trn_conf_measure m = TRN_CONF_ENTROPY;
    static const char *const names[] = {"entropy", "max", "margin"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(trn_conf_measure_parse(names[k], &m), 0);
        assert_string_equal(trn_conf_measure_name(m), names[k]);
    }
    assert_int_equal(trn_conf_measure_parse("softmax", &m), -1);
}

/* An [exit]'s confidence= is the measure its threshold compares in the
 * early-exit forward (what rtl run applies); a name not listed is refused
 * where it stands. */
static void forward_by_measure(void **state)
{
    (void)state;
    trn_net *t = trunk_net(1);
    trn_err e;
    const char *text = "[exit]\nat=1\nthreshold=0.5\nconfidence=margin\n[avgpool]\n[connected]\noutput=5\n"
                       "[softmax]\n[exit]\nat=3\n[avgpool]\n[connected]\noutput=5\n[softmax]\n";
    trn_exits *x = make_exits(t, text, &e);
    if (!x) fail_msg("%s", e.msg);
    assert_int_equal(trn_exit_measure(x, 0), TRN_CONF_MARGIN);
    assert_int_equal(trn_exit_measure(x, 1), TRN_CONF_ENTROPY);
    tl_randomize(trn_exit_net(x, 0), 11);
    float in[3 * 12 * 12];
    tl_fill_uniform(in, sizeof in / sizeof *in, 5, 0, 1);
    assert_int_equal(trn_net_forward_upto(t, in, 1, &e), 0);
    assert_int_equal(trn_net_forward(trn_exit_net(x, 0), trn_net_layer_output(t, 1), &e), 0);
    float y[5];
    memcpy(y, trn_net_output(trn_exit_net(x, 0)), sizeof y);
    float margin = trn_confidence_by(TRN_CONF_MARGIN, y, 5);
    assert_true(fabsf(margin - trn_confidence(y, 5)) > 1e-4f); /* the measures tell apart here */
    trn_exit_result r;
    assert_int_equal(trn_exit_set_threshold(x, 0, margin * 0.999f, &e), 0);
    assert_int_equal(trn_exits_forward(t, x, in, 1, &r, &e), 0);
    assert_int_equal(r.exit, 0);
    assert_float_equal(r.confidence, margin, 1e-7);
    assert_int_equal(trn_exit_set_threshold(x, 0, margin * 1.001f + 1e-6f, &e), 0);
    assert_int_equal(trn_exits_forward(t, x, in, 1, &r, &e), 0);
    assert_int_not_equal(r.exit, 0);
    trn_exits_free(x);

    e.msg[0] = 0;
    assert_null(make_exits(t, "[exit]\nat=1\nconfidence=bogus\n[avgpool]\n[connected]\noutput=5\n[softmax]\n", &e));
    assert_non_null(strstr(e.msg, "confidence=bogus"));
    assert_non_null(strstr(e.msg, "exits.cfg:3"));
    trn_net_free(t);
}

static void weights_files(void **state)
{
    (void)state;
    trn_net *t = trunk_net(1);
    trn_err e;
    trn_exits *x = make_exits(t, exits_cfg, &e);
    assert_non_null(x);
    for (int j = 0; j < 2; j++) tl_randomize(trn_exit_net(x, j), 21 + j);
    const char *path = tl_path("exits.weights");
    assert_int_equal(trn_exits_weights_save(x, path, &e), 0);
    size_t len;
    char *buf = tl_read(path, &len);
    assert_non_null(buf);
    assert_int_equal(len, trn_exits_weights_bytes(x));
    assert_int_equal(len, trn_weights_bytes(trn_exit_net(x, 0)) + trn_weights_bytes(trn_exit_net(x, 1)));

    trn_exits *y = make_exits(t, exits_cfg, &e);
    assert_non_null(y);
    assert_int_equal(trn_exits_weights_load(y, path, &e), 0);
    float in[3 * 12 * 12];
    tl_fill_uniform(in, sizeof in / sizeof *in, 9, 0, 1);
    trn_exit_result r;
    float a[5];
    assert_int_equal(trn_exits_forward(t, x, in, 0, &r, &e), 0);
    memcpy(a, r.probs, sizeof a);
    assert_int_equal(trn_exits_forward(t, y, in, 0, &r, &e), 0);
    assert_memory_equal(a, r.probs, sizeof a);
    /* borrowed from a buffer */
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    o.external_params = 1;
    trn_cfg *c = parse(exits_cfg);
    trn_exits *z = trn_exits_create(t, c, &o, &e);
    trn_cfg_free(c);
    assert_non_null(z);
    assert_int_equal(trn_exits_weights_load_mem(z, buf, len, 1, "mem", &e), 0);
    assert_int_equal(trn_exits_forward(t, z, in, 0, &r, &e), 0);
    assert_memory_equal(a, r.probs, sizeof a);
    /* a short file is refused, naming the sizes */
    assert_int_equal(trn_exits_weights_load_mem(y, buf, len - 4, 0, "short", &e), -1);
    assert_non_null(strstr(e.msg, "short"));
    free(buf);
    trn_exits_free(x);
    trn_exits_free(y);
    trn_exits_free(z);
    trn_net_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(confidence),
        cmocka_unit_test(exit_kind_in_table),
        cmocka_unit_test(create_and_errors),
        cmocka_unit_test(forward),
        cmocka_unit_test(weights_files),
        cmocka_unit_test(confidence_measures),
        cmocka_unit_test(forward_by_measure),
    };
    int rc = cmocka_run_group_tests_name("trn_exits", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
