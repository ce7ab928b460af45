/* Unit tests of multi-task training's network surgery (trainer/src/mtask.c):
 * the widened cfg, widening a plain network into the multi-task one and
 * slicing the first task back out, and the refusals. */
#include "testutil_impl.h"
#include "testlib_trn.h"

static const char plain_cfg[] = "[net]\nbatch=1\nwidth=4\nheight=4\nchannels=1\n"
                                "[convolutional]\nfilters=2\nsize=3\npad=1\nactivation=relu\n"
                                "[connected]\noutput=3\nactivation=linear\n[softmax]\n";

static trn_cfg *cfg_of(const char *text)
{
    trn_cfg *c = tl_cfg(text, "test.cfg");
    if (!c) fail_msg("the cfg does not parse");
    return c;
}

static trn_net *net_of(const trn_cfg *c, uint64_t seed)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_err e;
    trn_net *n = trn_net_create(c, &o, &e);
    if (!n) fail_msg("%s", e.msg);
    tl_randomize(n, seed);
    return n;
}

/* Three tasks of up to 5 classes: the classifier widened to 15 outputs
 * under a softmax of 3 groups; other networks refused, saying why. */
static void widened_cfg(void **state)
{
    (void)state;
    trn_mtask t = {.n = 3, .group = 5};
    trn_cfg *c = cfg_of(plain_cfg);
    trn_err e;
    trn_cfg *m = trn_mtask_cfg(c, &t, 3, &e);
    if (!m) fail_msg("%s", e.msg);
    int n = trn_cfg_sections(m);
    assert_string_equal(trn_cfg_get(m, n - 2, "output"), "15");
    assert_string_equal(trn_cfg_get(m, n - 1, "groups"), "3");
    assert_string_equal(trn_cfg_get(c, n - 2, "output"), "3"); /* a clone: the plain cfg unchanged */
    trn_cfg_free(m);
    assert_null(trn_mtask_cfg(c, &t, 4, &e));
    assert_non_null(strstr(e.msg, "must have output=4"));
    trn_cfg *nosoft = cfg_of("[net]\nbatch=1\nwidth=4\nheight=4\nchannels=1\n[connected]\noutput=3\n");
    assert_null(trn_mtask_cfg(nosoft, &t, 3, &e));
    assert_non_null(strstr(e.msg, "ending in [connected] then [softmax]"));
    trn_cfg_free(nosoft);
    trn_cfg_free(c);
}

/* Widening copies the plain network into the first group and zeroes the
 * others; slicing gives the first group back, with the images seen. */
static void widen_then_slice(void **state)
{
    (void)state;
    trn_mtask t = {.n = 2, .group = 4};
    trn_cfg *c = cfg_of(plain_cfg);
    trn_err e;
    trn_cfg *mc = trn_mtask_cfg(c, &t, 3, &e);
    assert_non_null(mc);
    trn_net *plain = net_of(c, 1), *multi = net_of(mc, 2), *back = net_of(c, 3);
    trn_net_set_seen(plain, 1234);
    assert_int_equal(trn_mtask_widen(plain, multi, &e), 0);
    assert_int_equal(trn_net_seen(multi), 1234);
    int np, nm;
    const trn_param *pp = trn_net_params(plain, &np), *pm = trn_net_params(multi, &nm);
    assert_int_equal(np, nm);
    for (int i = 0; i < np; i++) {
        assert_memory_equal(pm[i].data, pp[i].data, pp[i].count * sizeof(float));
        for (size_t k = pp[i].count; k < pm[i].count; k++) assert_true(pm[i].data[k] == 0);
    }
    /* training moves the multi-task network; the slice follows it */
    for (int i = 0; i < nm; i++)
        for (size_t k = 0; k < pm[i].count; k++) pm[i].data[k] += 0.25f * (float)(k % 7);
    trn_net_set_seen(multi, 5678);
    assert_int_equal(trn_mtask_slice(multi, back, &e), 0);
    const trn_param *pb = trn_net_params(back, &np);
    for (int i = 0; i < np; i++) assert_memory_equal(pb[i].data, pm[i].data, pb[i].count * sizeof(float));
    assert_int_equal(trn_net_seen(back), 5678);
    /* two networks that do not correspond: refused, naming the array */
    trn_cfg *other = cfg_of("[net]\nbatch=1\nwidth=4\nheight=4\nchannels=1\n"
                            "[convolutional]\nfilters=3\nsize=3\npad=1\nactivation=relu\n"
                            "[connected]\noutput=3\nactivation=linear\n[softmax]\n");
    trn_net *o = net_of(other, 4);
    assert_int_equal(trn_mtask_slice(multi, o, &e), -1);
    assert_non_null(strstr(e.msg, "multi-task slice: parameter array 0"));
    assert_int_equal(trn_mtask_widen(o, multi, &e), -1);
    assert_non_null(strstr(e.msg, "multi-task widening"));
    trn_net_free(o);
    trn_cfg_free(other);
    trn_net_free(plain);
    trn_net_free(multi);
    trn_net_free(back);
    trn_cfg_free(mc);
    trn_cfg_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(widened_cfg),
        cmocka_unit_test(widen_then_slice),
    };
    int rc = cmocka_run_group_tests_name("trn_mtask", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
