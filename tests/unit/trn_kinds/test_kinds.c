/* Unit tests of the layer-kind table (TRN_LAYER_KINDS in nn.h, one row per
 * kind file): every row is well formed and found by its names, the
 * messages list every kind, the flags net.c reads (is_loss,
 * ignores_previous) act, and the all-kinds test network (testlib_trn.h)
 * holds every kind, so a new kind cannot land without a test network
 * that builds it. */
#include "testutil_impl.h"
#include "testlib_trn.h"

/* The registry lists as many kinds as the enum counts. */
#define COUNT_KIND_(KIND, file) +1
_Static_assert(0 TRN_LAYER_KINDS(COUNT_KIND_) == TRN_LAYER_KIND_COUNT,
               "TRN_LAYER_KINDS and the enum disagree");
#undef COUNT_KIND_

static void rows_are_well_formed(void **state)
{
    (void)state;
    for (int k = 0; k < TRN_LAYER_KIND_COUNT; k++) {
        const trn_kind_desc *d = trn_kind_desc_get(k);
        assert_non_null(d);
        if ((int)d->kind != k) fail_msg("row %d says it is kind %d", k, (int)d->kind);
        assert_non_null(d->name);
        assert_non_null(d->aliases);
        assert_string_equal(trn_layer_kind_name(k), d->name);
        assert_int_equal(trn_kind_of_section(d->name), k);
        for (const char *const *a = d->aliases; *a; a++)
            if (trn_kind_of_section(*a) != k) fail_msg("alias [%s] of %s finds kind %d", *a, d->name,
                                                       trn_kind_of_section(*a));
        /* A layer that skips the previous one reads other layers. */
        if (d->ignores_previous) assert_non_null(d->refs_key);
        /* The rules name a kind's channels: concatenating or adding needs refs. */
        if (d->channels == TRN_CHANNELS_CONCAT || d->channels == TRN_CHANNELS_ADD)
            assert_non_null(d->refs_key);
        /* Names and aliases are unique across kinds. */
        for (int j = 0; j < k; j++) {
            const trn_kind_desc *o = trn_kind_desc_get(j);
            if (strcmp(o->name, d->name) == 0) fail_msg("two kinds named %s", d->name);
        }
    }
    assert_null(trn_kind_desc_get(TRN_LAYER_KIND_COUNT));
    assert_null(trn_kind_desc_get((trn_layer_kind)-1));
    assert_string_equal(trn_layer_kind_name(TRN_LAYER_KIND_COUNT), "?");
    assert_int_equal(trn_kind_of_section("nosuchkind"), -1);
    assert_int_equal(trn_kind_of_section("net"), -1);
    assert_int_equal(trn_kind_of_section(NULL), -1);
}

/* An unknown section's message lists every kind by its canonical name. */
static void unknown_section_lists_every_kind(void **state)
{
    (void)state;
    const char *text = "[net]\nbatch=1\nheight=4\nwidth=4\nchannels=1\n[nosuchkind]\n";
    trn_err e;
    trn_cfg *c = trn_cfg_parse(text, strlen(text), "test.cfg", &e);
    assert_non_null(c);
    assert_null(trn_net_create(c, NULL, &e));
    trn_cfg_free(c);
    assert_non_null(strstr(e.msg, "test.cfg:6: [nosuchkind]: unknown section type"));
    for (int k = 0; k < TRN_LAYER_KIND_COUNT; k++)
        if (!strstr(e.msg, trn_layer_kind_name(k)))
            fail_msg("the message does not name %s: %s", trn_layer_kind_name(k), e.msg);
}

/* The all-kinds network builds every kind; its loss layers are not the
 * output, and a layer that ignores the previous one reads only its refs. */
static void all_kinds_network_holds_every_kind(void **state)
{
    (void)state;
    trn_net *net = tl_net(tl_all_kinds, NULL);
    assert_non_null(net);
    int seen[TRN_LAYER_KIND_COUNT] = {0};
    int last_not_loss = -1;
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_info in;
        assert_int_equal(trn_net_layer_info(net, i, &in), 0);
        assert_true((unsigned)in.kind < TRN_LAYER_KIND_COUNT);
        seen[in.kind] = 1;
        const trn_kind_desc *d = trn_kind_desc_get(in.kind);
        if (!d->is_loss) last_not_loss = i;
        if (d->refs_key) assert_true(in.n_from >= 1);
    }
    for (int k = 0; k < TRN_LAYER_KIND_COUNT; k++)
        if (!seen[k] && !trn_kind_desc_get(k)->branch_head) /* branch heads: test_trn_exits */
            fail_msg("tl_all_kinds (tests/unit/testlib_trn.h) has no [%s] layer",
                               trn_layer_kind_name(k));
    trn_layer_info out;
    assert_int_equal(trn_net_layer_info(net, last_not_loss, &out), 0);
    assert_int_equal(trn_net_outputs(net), (size_t)out.out.c * out.out.h * out.out.w);
    assert_true(last_not_loss < trn_net_layers(net) - 1); /* the net ends with a loss */
    trn_net_free(net);
}

/* Peak activations at batch 1: a [route] ignores the previous layer, so it
 * does not keep that layer's buffer alive. conv0 (4x8x8 = 256 floats),
 * conv1 (2x8x8 = 128), a route of conv0 (256): the peak is conv0 and the
 * route while the route runs (512 floats); were conv1 read by the route it
 * would be 640. */
static void ignores_previous_frees_the_previous_buffer(void **state)
{
    (void)state;
    trn_net *net = tl_net("[net]\nbatch=1\nheight=8\nwidth=8\nchannels=1\n"
                          "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=relu\n"
                          "[convolutional]\nfilters=2\nsize=3\npad=1\nactivation=relu\n"
                          "[route]\nlayers=0\n",
                          NULL);
    assert_non_null(net);
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    assert_true(t.peak_activation_bytes == 4 * (256 + 256));
    trn_net_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_are_well_formed),
        cmocka_unit_test(unknown_section_lists_every_kind),
        cmocka_unit_test(all_kinds_network_holds_every_kind),
        cmocka_unit_test(ignores_previous_frees_the_previous_buffer),
    };
    int rc = cmocka_run_group_tests_name("trn_kinds", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
