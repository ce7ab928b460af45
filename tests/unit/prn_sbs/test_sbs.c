/* Unit tests of FlexDNN's collective-importance ranking (prune/src/sbs.c):
 * on a layer with a duplicated filter and a dead one, sequential backward
 * selection keeps complementary filters where a per-filter score cannot
 * tell them apart; the minimum-count rule; the same result twice. */
#include "testutil_impl.h"
#include "testlib_prn.h"

/* L0: four 1x1 filters of a one-channel 4x4 input (no batch norm): f0 =
 * relu(x), f1 = relu(x) (a copy of f0), f2 = relu(-x), f3 = 0 (dead);
 * then a classifier of 2 classes. The class is the sign of sum(x): it needs
 * both the positive parts (f0 or f1) and the negative ones (f2). */
static const char sbs_cfg[] =
    "[net]\nbatch=8\nwidth=4\nheight=4\nchannels=1\n"
    "[convolutional]\nfilters=4\nsize=1\nstride=1\npad=0\nactivation=relu\n"
    "[connected]\noutput=2\nactivation=linear\n"
    "[softmax]\n";

static trn_net *sbs_net(void)
{
    trn_cfg *c = pt_cfg(sbs_cfg);
    assert_non_null(c);
    trn_net *n = pt_base(c, 8, 1);
    trn_cfg_free(c);
    assert_non_null(n);
    int np;
    const trn_param *p = trn_net_params(n, &np);
    for (int k = 0; k < np; k++) {
        if (p[k].layer != 0) continue;
        if (p[k].role == TRN_PARAM_WEIGHTS) {
            p[k].data[0] = 1, p[k].data[1] = 1, p[k].data[2] = -1, p[k].data[3] = 0;
        } else if (p[k].role == TRN_PARAM_BIASES) {
            for (size_t i = 0; i < p[k].count; i++) p[k].data[i] = 0;
        }
    }
    return n;
}

static int label_of(const float *x)
{
    float s = 0;
    for (int i = 0; i < 16; i++) s += x[i];
    return s > 0;
}

static int stream(void *ctx, uint64_t step, float *x, float *y, trn_err *err)
{
    (void)ctx, (void)err;
    tl_fill_uniform(x, 8 * 16, 1000 + step, -1, 1);
    for (int b = 0; b < 8; b++) {
        int l = label_of(x + b * 16);
        y[b * 2] = l == 0, y[b * 2 + 1] = l == 1;
    }
    return 0;
}

static prn_sbs *rank_it(void)
{
    trn_net *n = sbs_net();
    enum { NV = 400 };
    float *vx = malloc(NV * 16 * sizeof *vx);
    int *vy = malloc(NV * sizeof *vy);
    assert_non_null(vx);
    assert_non_null(vy);
    tl_fill_uniform(vx, NV * 16, 77, -1, 1);
    for (int i = 0; i < NV; i++) vy[i] = label_of(vx + i * 16);
    prn_sbs_opts o;
    prn_sbs_opts_defaults(&o);
    o.images = 512;
    o.seed = 5;
    trn_err e;
    prn_sbs *s = prn_sbs_rank(n, &o, stream, NULL, 0, vx, vy, NV, &e);
    if (!s) fail_msg("%s", e.msg);
    free(vx);
    free(vy);
    trn_net_free(n);
    return s;
}

static void keeps_complementary_filters(void **state)
{
    (void)state;
    prn_sbs *s = rank_it();
    assert_int_equal(s->nlayers, 1);
    const prn_sbs_layer *L = &s->layers[0];
    assert_int_equal(L->layer, 0);
    assert_int_equal(L->filters, 4);
    assert_int_equal(L->kmin, 1); /* fewer than 1/5 of 4 filters: 0, at least 1 */
    /* the two most important: f2 and one of the copies f0, f1 */
    int top[2] = {L->order[0], L->order[1]};
    assert_true(top[0] == 2 || top[1] == 2);
    assert_true(top[0] == 0 || top[0] == 1 || top[1] == 0 || top[1] == 1);
    /* the dead filter and the other copy are the two least important
     * (either may go first: without a refit, dropping a copy may leave the
     * valid accuracy as it is, like dropping the dead filter) */
    assert_true(L->order[2] == 3 || L->order[3] == 3);
    /* the exit on the SBS top 2 is (nearly) as good as on all 4, and better
     * than on one filter */
    assert_true(L->curve[2] >= L->curve[4] - 0.02);
    assert_true(L->curve[2] > L->curve[1] + 0.05);
    /* L1 sees equal norms for f0, f1, f2 and cannot prefer the pair */
    int seen = 0;
    for (int k = 0; k < 4; k++) seen |= 1 << L->l1_order[k];
    assert_int_equal(seen, 15);
    assert_int_equal(L->l1_order[3], 3);
    /* the cost: one fine-tune per round plus the first fit, and the L1
     * curve's refits; one evaluation per candidate and round */
    assert_int_equal(L->rounds, 3);
    assert_int_equal(L->evaluations, 4 + 3 + 2);
    assert_int_equal(L->fine_tunes, (1 + 3) + (1 + 3));
    prn_sbs_free(s);
}

static void same_result_twice(void **state)
{
    (void)state;
    prn_sbs *a = rank_it(), *b = rank_it();
    assert_memory_equal(a->layers[0].order, b->layers[0].order, 4 * sizeof(int));
    assert_memory_equal(a->layers[0].curve, b->layers[0].curve, 5 * sizeof(double));
    assert_memory_equal(a->layers[0].curve_l1, b->layers[0].curve_l1, 5 * sizeof(double));
    prn_sbs_free(a);
    prn_sbs_free(b);
}

static void minimum_count(void **state)
{
    (void)state;
    /* curve[k] for k = 2..6 (floor 2, N = 6) */
    const double c[7] = {0, 0, 0.50, 0.70, 0.78, 0.80, 0.80};
    assert_int_equal(prn_sbs_min_filters(c, 6, 2, 0), 5);
    assert_int_equal(prn_sbs_min_filters(c, 6, 2, 0.02), 4);
    assert_int_equal(prn_sbs_min_filters(c, 6, 2, 0.10), 3);
    assert_int_equal(prn_sbs_min_filters(c, 6, 2, 1), 2);
    /* a drop stops the descent even when a later point recovers */
    const double d[7] = {0, 0, 0.80, 0.80, 0.60, 0.80, 0.80};
    assert_int_equal(prn_sbs_min_filters(d, 6, 2, 0.05), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keeps_complementary_filters),
        cmocka_unit_test(same_result_twice),
        cmocka_unit_test(minimum_count),
    };
    int rc = cmocka_run_group_tests_name("prn_sbs", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
