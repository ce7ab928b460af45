/* Unit tests of trainer bench's measurements (trn_bench, trainer/src/
 * bench.h) on a small network: what is measured, the layer table's costs
 * and kinds, the products of one step recorded, the bounds from the
 * yardsticks, the caller's hooks in order, and what is left out when not
 * asked for. Times are only checked to be measured (positive). */
#include "testutil_impl.h"
#include "testlib_trn.h"
#include "bench.h"

#include <math.h>

static const char net_text[] =
    "[net]\nbatch=4\nwidth=8\nheight=8\nchannels=3\nlearning_rate=0.01\n"
    "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\npad=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[connected]\noutput=5\nactivation=linear\n"
    "[softmax]\n";

typedef struct hooks {
    int forward, steps, fail;
} hooks;

static void forward_done(void *ctx, const trn_bench_result *r)
{
    hooks *h = ctx;
    assert_int_equal(h->steps, 0);
    assert_true(r->f_ips > 0 && r->forward_s > 0);
    h->forward++;
}

static int after_steps(void *ctx, trn_net *net, const float *x, const float *y, int steps, trn_err *err)
{
    hooks *h = ctx;
    assert_int_equal(h->forward, 1);
    assert_int_equal(steps, 2);
    assert_int_equal(trn_net_batch(net), 4);
    assert_non_null(x);
    assert_non_null(y);
    h->steps++;
    return h->fail ? trn_errf(err, "stopped by the caller") : 0;
}

static void bench_measures(void **state)
{
    (void)state;
    trn_cfg *cfg = tl_cfg(net_text, "bench.cfg");
    trn_net_opts no;
    trn_net_opts_defaults(&no);
    no.batch = 1, no.infer_only = 1;
    trn_net *ref = tl_net(net_text, &no);
    assert_non_null(ref);
    hooks h = {0};
    trn_bench_opts o = {cfg, 2, 0, 2, 0, 1, 1, 1, forward_done, after_steps, &h};
    trn_bench_result r;
    trn_err e;
    if (trn_bench(&o, &r, &e)) fail_msg("%s", e.msg);
    assert_true(h.forward == 1 && h.steps == 1);
    assert_int_equal(r.layers, trn_net_layers(ref));
    assert_int_equal(r.forward_batch, 2);
    assert_int_equal(r.train_batch, 4); /* the cfg's */
    double macs = 0, other = 0, fc = 0;
    for (int i = 0; i < r.layers; i++) {
        trn_layer_info in;
        trn_net_layer_info(ref, i, &in);
        assert_int_equal(r.fwd[i].kind, in.kind);
        assert_int_equal(r.step[i].kind, in.kind);
        assert_true(r.fwd[i].macs == (double)in.macs && r.fwd[i].params == (double)in.params);
        macs += (double)in.macs;
        if (in.kind == TRN_LAYER_CONNECTED) fc += 4.0 * (double)in.params;
        else other += 2.0 * (double)in.macs * 2;
    }
    assert_true(r.tot.macs == (uint64_t)macs);
    assert_true(r.other_flops == other && r.fc_bytes == fc && fc > 0);
    assert_int_equal(r.step[0].passes, 2); /* no gradient below the first layer */
    assert_int_equal(r.step[2].passes, 3);
    assert_true(r.fwd[0].tf > 0 && r.step[0].tf > 0 && r.step[0].tb > 0);
    assert_true(r.trained && r.t_ips > 0 && r.conv_gf > 0 && r.conv_share > 0 && r.conv_share <= 1);
    /* the convolution's and the connected layer's products, forward and backward */
    assert_true(r.gemm_calls >= 4 && r.gemm_shapes >= 3 && r.gemm_openblas > 0 && r.gemm_portable > 0);
    /* no ceiling asked for: the bound is the weights at the copy rate */
    assert_true(r.ceiling.ceiling == 0 && r.copy_gbps > 0 && r.seq_bound == 0);
    assert_true(fabs(r.bound - (double)r.tot.weight_bytes / (r.copy_gbps * 1e9)) <= 1e-12 * r.bound);
    assert_true(fabs(r.vs_bound - r.fwd_s / r.bound) <= 1e-9 * r.vs_bound && fabs(r.fwd_s - 2 / r.f_ips) < 1e-12);
    trn_bench_result_free(&r);
    /* the forward alone, no yardsticks */
    o.train = 0, o.gemm = 0, o.copy_mib = 0;
    h = (hooks){0};
    if (trn_bench(&o, &r, &e)) fail_msg("%s", e.msg);
    assert_true(!r.trained && r.step == NULL && r.gemm_calls == -1 && r.bound == 0 && r.copy_gbps == 0);
    assert_true(h.forward == 1 && h.steps == 0);
    trn_bench_result_free(&r);
    /* the caller's hook stops the run with its reason */
    h = (hooks){.fail = 1};
    o.train = 1;
    assert_int_equal(trn_bench(&o, &r, &e), -1);
    assert_non_null(strstr(e.msg, "stopped by the caller"));
    assert_null(r.fwd);
    trn_net_free(ref);
    trn_cfg_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bench_measures),
    };
    int rc = cmocka_run_group_tests_name("trn_bench", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
