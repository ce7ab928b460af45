/* Unit tests of the engine's traffic model (trn_net_layer_traffic,
 * trn_net_traffic_bytes): per-layer bytes read and written, hand-computed
 * for one network with every way a layer reads (previous layer,
 * parameters, other layers, only other layers, in place). */
#include "testutil_impl.h"
#include "testlib_trn.h"

static void traffic_per_layer(void **state)
{
    (void)state;
    trn_net *net = tl_net("[net]\nbatch=2\nheight=8\nwidth=8\nchannels=3\n"
                          "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=relu\n" /* 0 */
                          "[dropout]\nprobability=0.5\n"                                  /* 1 */
                          "[convolutional]\nfilters=4\nsize=1\nactivation=linear\n"       /* 2 */
                          "[shortcut]\nfrom=0\nactivation=linear\n"                       /* 3 */
                          "[route]\nlayers=0,2\n"                                         /* 4 */
                          "[maxpool]\nsize=2\nstride=2\n",                                /* 5 */
                          NULL);
    assert_non_null(net);
    /* Floats at batch 1: reads (input + others + parameters), writes. */
    const uint64_t reads[] = {192 + 4 * 3 * 9 + 4, 0, 256 + 16 + 4, 256 + 256, 256 + 256, 512};
    const uint64_t writes[] = {256, 0, 256, 256, 512, 128};
    uint64_t sum = 0;
    for (int i = 0; i < 6; i++) {
        trn_layer_traffic t;
        assert_int_equal(trn_net_layer_traffic(net, i, &t), 0);
        if (t.read_bytes != 4 * reads[i] || t.write_bytes != 4 * writes[i])
            fail_msg("layer %d: read %llu written %llu bytes, expected %llu and %llu", i,
                     (unsigned long long)t.read_bytes, (unsigned long long)t.write_bytes,
                     (unsigned long long)(4 * reads[i]), (unsigned long long)(4 * writes[i]));
        sum += 4 * (reads[i] + writes[i]);
    }
    assert_true(trn_net_traffic_bytes(net) == sum);
    assert_true(sum == 4 * 3524);
    trn_net_totals tot;
    trn_net_get_totals(net, &tot);
    assert_true(tot.traffic_bytes == sum);
    trn_layer_traffic t;
    assert_int_equal(trn_net_layer_traffic(net, 6, &t), -1);
    assert_int_equal(trn_net_layer_traffic(net, -1, &t), -1);
    trn_net_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(traffic_per_layer),
    };
    int rc = cmocka_run_group_tests_name("trn_count", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
