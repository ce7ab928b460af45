/* Unit tests of nested capacities (trn_net_set_capacity): a network at a
 * reduced channel prefix computes, bit for bit, what a separately built
 * smaller network holding the sliced weights computes: every layer's
 * output in inference and training forwards, the backward's gradients and
 * one SGD step; costs and totals describe the active network; refused
 * prefixes leave the previous capacity in place. */
#include "testutil_impl.h"
#include "testlib_trn.h"

/* Layers: 0 conv+BN (chunked GEMM), 1 maxpool, 2 conv, 3 conv 1x1+BN
 * (direct GEMM), 4 shortcut, 5 route of 1 and 4, 6 conv stride 2,
 * 7 connected+BN, 8 connected, 9 softmax. */
#define NET_CFG(F0, F2, F3, F6, O7)                                                           \
    "[net]\nbatch=3\nheight=12\nwidth=12\nchannels=3\nlearning_rate=0.1\nmomentum=0.9\n"        \
    "decay=0.0005\n"                                                                          \
    "[convolutional]\nbatch_normalize=1\nfilters=" F0 "\nsize=3\npad=1\nactivation=leaky\n"   \
    "[maxpool]\nsize=2\nstride=2\n"                                                           \
    "[convolutional]\nfilters=" F2 "\nsize=3\npad=1\nactivation=relu\n"                       \
    "[convolutional]\nbatch_normalize=1\nfilters=" F3 "\nsize=1\nactivation=leaky\n"          \
    "[shortcut]\nfrom=-2\nactivation=linear\n"                                                \
    "[route]\nlayers=1,-1\n"                                                                  \
    "[convolutional]\nfilters=" F6 "\nsize=3\nstride=2\npad=1\nactivation=logistic\n"          \
    "[connected]\nbatch_normalize=1\noutput=" O7 "\nactivation=tanh\n"                        \
    "[connected]\noutput=4\nactivation=linear\n"                                              \
    "[softmax]\n"

static const char *const big_cfg = NET_CFG("8", "6", "6", "5", "7");
static const char *const small_cfg = NET_CFG("8", "4", "4", "3", "5");
static const int cap[10] = {0, 0, 4, 4, 0, 0, 3, 5, 0, 0};

static float *input(size_t n, uint64_t seed)
{
    trn_rng r;
    trn_rng_seed(&r, seed);
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = trn_rng_uniform(&r);
    return x;
}

/* Every layer's active output (packed) equals the small network's. */
static void same_outputs(const trn_net *big, const trn_net *small)
{
    for (int i = 0; i < trn_net_layers(big); i++) {
        trn_layer_info a, b;
        assert_int_equal(trn_net_layer_info(big, i, &a), 0);
        assert_int_equal(trn_net_layer_info(small, i, &b), 0);
        assert_int_equal(a.out.c, b.out.c);
        assert_int_equal(a.in.c, b.in.c);
        size_t n = (size_t)trn_net_batch(big) * b.out.c * b.out.h * b.out.w;
        if (memcmp(trn_net_layer_output(big, i), trn_net_layer_output(small, i), n * 4) != 0)
            fail_msg("layer %d: the capacity's output differs from the small network's", i);
    }
}

/* The small network's parameter p (data or update) equals the top-left
 * block of the big one's. */
static void same_params(const trn_net *big, const trn_net *small, int updates)
{
    int nb, ns;
    const trn_param *pb = trn_net_params(big, &nb), *ps = trn_net_params(small, &ns);
    assert_int_equal(nb, ns);
    for (int i = 0; i < ns; i++) {
        const float *s = updates ? ps[i].update : ps[i].data, *b = updates ? pb[i].update : pb[i].data;
        if (!s) continue; /* rolling statistics have no update */
        for (int r = 0; r < ps[i].rows; r++)
            if (memcmp(s + (size_t)r * ps[i].cols, b + (size_t)r * pb[i].cols,
                       (size_t)ps[i].cols * 4) != 0)
                fail_msg("parameter %d (%s of layer %d) row %d: %s differ", i,
                         trn_param_role_name(ps[i].role), ps[i].layer, r,
                         updates ? "gradients" : "values");
    }
}

static void prefix_equals_sliced_network(void **state)
{
    (void)state;
    trn_err e;
    trn_net *big = tl_net(big_cfg, NULL), *small = tl_net(small_cfg, NULL);
    assert_non_null(big);
    assert_non_null(small);
    tl_randomize_flat(big, 7);
    size_t nx = 3 * trn_net_inputs(big);
    float *x = input(nx, 11);
    /* The full network's output, to compare after a round trip. */
    assert_int_equal(trn_net_forward(big, x, &e), 0);
    size_t no = 3 * trn_net_outputs(big);
    float *full = malloc(no * 4);
    memcpy(full, trn_net_output(big), no * 4);

    assert_int_equal(trn_net_set_capacity(big, cap, &e), 0);
    int got[10];
    trn_net_capacity(big, got);
    assert_int_equal(got[0], 8);
    assert_int_equal(got[2], 4);
    assert_int_equal(got[7], 5);
    assert_int_equal(got[8], 4);
    assert_int_equal(got[5], 0);
    assert_int_equal(trn_net_full_filters(big, 2), 6);
    assert_int_equal(trn_net_copy_capacity(small, big, &e), 0);

    /* Inference forward. */
    assert_int_equal(trn_net_forward(big, x, &e), 0);
    assert_int_equal(trn_net_forward(small, x, &e), 0);
    same_outputs(big, small);

    /* Costs describe the active network. */
    trn_net_totals tb, ts;
    trn_net_get_totals(big, &tb);
    trn_net_get_totals(small, &ts);
    assert_true(tb.params == ts.params && tb.macs == ts.macs);
    assert_true(tb.peak_activation_bytes == ts.peak_activation_bytes);
    assert_true(tb.bn_ops == ts.bn_ops && tb.act_ops == ts.act_ops && tb.pool_ops == ts.pool_ops);
    for (int i = 0; i < 10; i++) {
        trn_layer_info a, b;
        trn_net_layer_info(big, i, &a);
        trn_net_layer_info(small, i, &b);
        assert_true(a.params == b.params && a.macs == b.macs && a.output_bytes == b.output_bytes);
        assert_int_equal(a.filters, b.filters);
    }

    /* Training forward, backward and one SGD step. */
    float truth[12] = {0};
    truth[1] = truth[4 + 3] = truth[8 + 0] = 1;
    assert_int_equal(trn_net_forward_train(big, x, truth, &e), 0);
    assert_int_equal(trn_net_forward_train(small, x, truth, &e), 0);
    same_outputs(big, small);
    assert_int_equal(trn_net_backward(big, &e), 0);
    assert_int_equal(trn_net_backward(small, &e), 0);
    same_params(big, small, 1);
    trn_net_update(big);
    trn_net_update(small);
    same_params(big, small, 0);
    same_params(big, small, 1);
    assert_int_equal(trn_net_forward(big, x, &e), 0);
    assert_int_equal(trn_net_forward(small, x, &e), 0);
    same_outputs(big, small);

    /* Back to the whole network: what it computed before the step. */
    trn_net *again = tl_net(big_cfg, NULL);
    tl_randomize_flat(again, 7);
    assert_int_equal(trn_net_set_capacity(again, cap, &e), 0);
    assert_int_equal(trn_net_set_capacity(again, NULL, &e), 0);
    assert_int_equal(trn_net_forward(again, x, &e), 0);
    assert_memory_equal(trn_net_output(again), full, no * 4);
    trn_net_capacity(again, got);
    assert_int_equal(got[2], 6);
    assert_int_equal(got[7], 7);
    free(full);
    free(x);
    trn_net_free(again);
    trn_net_free(big);
    trn_net_free(small);
}

/* embed writes the small network's parameters into the prefix only. */
static void embed_writes_the_prefix(void **state)
{
    (void)state;
    trn_err e;
    trn_net *big = tl_net(big_cfg, NULL), *small = tl_net(small_cfg, NULL);
    tl_randomize_flat(big, 1);
    tl_randomize_flat(small, 2);
    int np;
    const trn_param *p = trn_net_params(big, &np);
    /* layer 2's weights (6, 8*9): rows 4, 5 stay; layer 6's (5, 14*9):
     * the columns of route channels 12, 13 stay */
    const trn_param *w2 = NULL, *w6 = NULL;
    for (int i = 0; i < np; i++) {
        if (p[i].layer == 2 && p[i].role == TRN_PARAM_WEIGHTS) w2 = &p[i];
        if (p[i].layer == 6 && p[i].role == TRN_PARAM_WEIGHTS) w6 = &p[i];
    }
    assert_non_null(w2);
    assert_non_null(w6);
    float keep = w2->data[5 * w2->cols + 1], keep2 = w6->data[0 * w6->cols + 12 * 9];
    assert_int_equal(trn_net_set_capacity(big, cap, &e), 0);
    assert_int_equal(trn_net_embed_capacity(big, small, &e), 0);
    same_params(big, small, 0);
    assert_true(w2->data[5 * w2->cols + 1] == keep);
    assert_true(w6->data[0 * w6->cols + 12 * 9] == keep2);
    /* A network of other shapes is refused with the layer named. */
    assert_int_equal(trn_net_set_capacity(big, NULL, &e), 0);
    assert_int_equal(trn_net_copy_capacity(small, big, &e), -1);
    assert_non_null(strstr(e.msg, "layer 2"));
    trn_net_free(big);
    trn_net_free(small);
}

static void refused_prefixes_keep_the_capacity(void **state)
{
    (void)state;
    trn_err e;
    trn_net *big = tl_net(big_cfg, NULL);
    assert_int_equal(trn_net_set_capacity(big, cap, &e), 0);
    /* conv 0 reduced: the route's first source would not stay a prefix. */
    int bad[10] = {5, 0, 4, 4, 0, 0, 3, 5, 0, 0};
    assert_int_equal(trn_net_set_capacity(big, bad, &e), -1);
    assert_non_null(strstr(e.msg, "layer 5"));
    assert_non_null(strstr(e.msg, "prefix"));
    int got[10];
    trn_net_capacity(big, got);
    const int want[10] = {8, 0, 4, 4, 0, 0, 3, 5, 4, 0};
    assert_memory_equal(got, want, sizeof want);
    int over[10] = {0, 0, 7, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(trn_net_set_capacity(big, over, &e), -1);
    assert_non_null(strstr(e.msg, "layer 2"));
    int pool[10] = {0, 3, 0, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(trn_net_set_capacity(big, pool, &e), -1);
    assert_non_null(strstr(e.msg, "no filters of its own"));
    trn_net_free(big);
    /* A grouped convolution computes whole or not at all. */
    trn_net *g = tl_net("[net]\nbatch=1\nheight=4\nwidth=4\nchannels=4\n"
                        "[convolutional]\nfilters=4\nsize=1\ngroups=2\nactivation=linear\n", NULL);
    int half[1] = {2};
    assert_int_equal(trn_net_set_capacity(g, half, &e), -1);
    assert_non_null(strstr(e.msg, "grouped"));
    trn_net_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prefix_equals_sliced_network),
        cmocka_unit_test(embed_writes_the_prefix),
        cmocka_unit_test(refused_prefixes_keep_the_capacity),
    };
    int rc = cmocka_run_group_tests_name("trn_capacity", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
