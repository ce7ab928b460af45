/*
 * Group lasso during training (trainer/src/lasso.c): the proximal step
 * shrinks each filter, channel and shape group by max(0, 1 - t/||g||)
 * (batch norm: the filter group is the scale and shift), training with the
 * penalty zeroes whole groups exactly and leaves the others alone when the
 * weights are 0, and the same seed gives the same bytes for any thread
 * count.
 */
#include "testutil_impl.h"
#include "testlib_trn.h"

#include <math.h>

static char *conv_cfg(int bn, const char *lasso)
{
    static char buf[1024];
    snprintf(buf, sizeof buf,
             "[net]\nbatch=8\nwidth=8\nheight=8\nchannels=3\nlearning_rate=0.1\n%s\n"
             "[convolutional]\nfilters=6\nsize=3\npad=1\nactivation=relu\n%s"
             "[maxpool]\nsize=2\nstride=2\n"
             "[convolutional]\nfilters=5\nsize=3\npad=1\nactivation=leaky\n%s"
             "[connected]\noutput=4\nactivation=linear\n"
             "[softmax]\n",
             lasso, bn ? "batch_normalize=1\n" : "", bn ? "batch_normalize=1\n" : "");
    return buf;
}

static trn_net *train_net(const char *text, uint64_t seed)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.seed = seed;
    return tl_net(text, &o);
}

static double norm_of(const float *a, int n, size_t stride, int len)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < len; j++) s += (double)a[i * stride + j] * a[i * stride + j];
    return sqrt(s);
}

/* Without batch norm, a filter group is its weights row plus its bias: a
 * group whose norm exceeds t is scaled by 1 - t/||g||, a smaller one
 * becomes exactly zero. */
static void prox_filter_plain(void **state)
{
    (void)state;
    trn_net *net = train_net(conv_cfg(0, "lasso_filter=1"), 1);
    assert_non_null(net);
    tl_randomize(net, 5);
    trn_param *w = tl_param(net, 0, TRN_PARAM_WEIGHTS), *b = tl_param(net, 0, TRN_PARAM_BIASES);
    assert_int_equal(w->cols, 27);
    for (int j = 0; j < 27; j++) w->data[27 + j] *= 1e-3f; /* filter 1: a tiny group */
    b->data[1] = 1e-3f;
    float w0 = w->data[0], b0 = b->data[0];
    double n0 = sqrt(norm_of(w->data, 1, 0, 27) * norm_of(w->data, 1, 0, 27) + (double)b0 * b0);
    double t = 0.1 * 1.0 * 0.5; /* rate 0.05 x lambda 1: threshold 0.05 */
    trn_lasso_prox(net, 0.05f);
    assert_true(n0 > t);
    assert_float_equal(w->data[0], w0 * (1 - t / n0), 1e-6);
    assert_float_equal(b->data[0], b0 * (1 - t / n0), 1e-6);
    for (int j = 0; j < 27; j++) assert_true(w->data[27 + j] == 0.0f);
    assert_true(b->data[1] == 0.0f);
    trn_net_free(net);
}

/* With batch norm the filter group is (scale, shift); the weights stay. */
static void prox_filter_bn(void **state)
{
    (void)state;
    trn_net *net = train_net(conv_cfg(1, "lasso_filter=2"), 1);
    assert_non_null(net);
    tl_randomize(net, 6);
    trn_param *w = tl_param(net, 0, TRN_PARAM_WEIGHTS), *b = tl_param(net, 0, TRN_PARAM_BIASES),
              *s = tl_param(net, 0, TRN_PARAM_SCALES);
    float w0 = w->data[3], s2 = s->data[2], b2 = b->data[2];
    s->data[4] = 0.01f, b->data[4] = -0.02f;
    double n2 = sqrt((double)s2 * s2 + (double)b2 * b2), t = 0.1 * 2;
    trn_lasso_prox(net, 0.1f);
    assert_true(w->data[3] == w0);
    assert_float_equal(s->data[2], s2 * (1 - t / n2), 1e-6);
    assert_float_equal(b->data[2], b2 * (1 - t / n2), 1e-6);
    assert_true(s->data[4] == 0.0f && b->data[4] == 0.0f);
    trn_net_free(net);
}

/* Channel groups are the size*size columns of one input channel over all
 * filters; shape groups one column over all filters. */
static void prox_channel_shape(void **state)
{
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        trn_net *net = train_net(conv_cfg(1, kind ? "lasso_shape=1" : "lasso_channel=1"), 1);
        assert_non_null(net);
        tl_randomize(net, 7);
        trn_param *w = tl_param(net, 2, TRN_PARAM_WEIGHTS); /* 5 x 6*9 */
        assert_int_equal(w->rows, 5);
        assert_int_equal(w->cols, 54);
        int len = kind ? 1 : 9;
        /* Group 1 tiny, group 0 not. */
        for (int f = 0; f < 5; f++)
            for (int j = 0; j < len; j++) w->data[f * 54 + len + j] *= 1e-4f;
        float before = w->data[0];
        double n0 = norm_of(w->data, 5, 54, len), t = 0.02;
        trn_lasso_prox(net, 0.02f);
        assert_float_equal(w->data[0], before * (1 - t / n0), 1e-6);
        for (int f = 0; f < 5; f++)
            for (int j = 0; j < len; j++) assert_true(w->data[f * 54 + len + j] == 0.0f);
        trn_net_free(net);
    }
}

/* The keys are checked like every [net] key: a negative weight fails with
 * the file:line of the key. */
static void bad_keys(void **state)
{
    (void)state;
    trn_err e;
    const char *text = conv_cfg(1, "lasso_filter=-1");
    trn_cfg *c = trn_cfg_parse(text, strlen(text), "test.cfg", &e);
    assert_non_null(c);
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    trn_net *n = trn_net_create(c, &o, &e);
    assert_null(n);
    assert_non_null(strstr(e.msg, "lasso_filter"));
    assert_non_null(strstr(e.msg, "test.cfg:"));
    trn_cfg_free(c);
}

/* trn_net_bn_average (the re-estimation that ends a lasso training):
 * k = 1 replaces the rolling statistics with the batch's (mean, and
 * variance with the n-1 divisor), k = 2 makes them the mean of two
 * batches, k = 0 is the 0.99 moving average again. A 1x1 convolution with
 * weight 1 passes its input through, so the batch statistics are known. */
static void bn_average_known_values(void **state)
{
    (void)state;
    trn_net *net = train_net("[net]\nbatch=2\nwidth=2\nheight=2\nchannels=1\n"
                             "[convolutional]\nbatch_normalize=1\nfilters=1\nsize=1\nactivation=linear\n", 1);
    assert_non_null(net);
    tl_param(net, 0, TRN_PARAM_WEIGHTS)->data[0] = 1;
    const float *m = tl_param(net, 0, TRN_PARAM_ROLLING_MEAN)->data,
                *v = tl_param(net, 0, TRN_PARAM_ROLLING_VARIANCE)->data;
    float x1[8] = {1, 2, 3, 4, 5, 6, 7, 8}, x2[8] = {0, 0, 0, 0, 2, 2, 2, 2}, x3[8] = {3, 3, 3, 3, 3, 3, 3, 3};
    trn_err e;
    trn_net_bn_average(net, 1);
    assert_int_equal(trn_net_forward_train(net, x1, NULL, &e), 0);
    assert_float_equal(m[0], 4.5, 1e-6);
    assert_float_equal(v[0], 6.0, 1e-6); /* 42 / 7 */
    trn_net_bn_average(net, 2);
    assert_int_equal(trn_net_forward_train(net, x2, NULL, &e), 0);
    assert_float_equal(m[0], 2.75, 1e-6);            /* (4.5 + 1) / 2 */
    assert_float_equal(v[0], (6.0 + 8.0 / 7) / 2, 1e-6);
    trn_net_bn_average(net, 0);
    assert_int_equal(trn_net_forward_train(net, x3, NULL, &e), 0);
    assert_float_equal(m[0], 0.99 * 2.75 + 0.01 * 3, 1e-6);
    trn_net_free(net);
}

/* Trains `steps` steps; returns the network. */
static trn_net *train_steps(const char *lasso, int steps, int threads)
{
    trn_set_threads(threads);
    trn_net *net = train_net(conv_cfg(1, lasso), 3);
    assert_non_null(net);
    float *x = malloc(8 * 3 * 64 * sizeof *x), *y = malloc(8 * 4 * sizeof *y);
    trn_err e;
    for (int s = 0; s < steps; s++) {
        tl_fill_uniform(x, 8 * 3 * 64, 100 + (uint64_t)s, 0, 1);
        tl_one_hot(y, 8, 4, 200 + (uint64_t)s);
        float loss;
        if (trn_net_train_step(net, x, y, &loss, &e) != 0) fail_msg("%s", e.msg);
    }
    free(x);
    free(y);
    trn_set_threads(1);
    return net;
}

static int zero_filters(trn_net *net, int layer)
{
    trn_param *s = tl_param(net, layer, TRN_PARAM_SCALES), *b = tl_param(net, layer, TRN_PARAM_BIASES);
    int z = 0;
    for (size_t k = 0; k < s->count; k++) z += s->data[k] == 0.0f && b->data[k] == 0.0f;
    return z;
}

/* Training with a strong filter penalty switches whole filters off
 * (exactly zero scale and shift), without it none; the bytes do not
 * depend on the thread count. */
static void training_zeroes_groups(void **state)
{
    (void)state;
    trn_net *plain = train_steps("", 30, 1);
    trn_net *las = train_steps("lasso_filter=0.5", 30, 1);
    trn_net *las2 = train_steps("lasso_filter=0.5", 30, 2);
    assert_int_equal(zero_filters(plain, 0) + zero_filters(plain, 2), 0);
    int z = zero_filters(las, 0) + zero_filters(las, 2);
    if (z < 3) fail_msg("only %d of 11 filters were zeroed", z);
    int np;
    const trn_param *a = trn_net_params(las, &np), *b = trn_net_params(las2, &np);
    for (int k = 0; k < np; k++)
        assert_memory_equal(a[k].data, b[k].data, a[k].count * sizeof(float));
    trn_net_free(plain);
    trn_net_free(las);
    trn_net_free(las2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prox_filter_plain), cmocka_unit_test(prox_filter_bn),
        cmocka_unit_test(prox_channel_shape), cmocka_unit_test(bad_keys),
        cmocka_unit_test(training_zeroes_groups), cmocka_unit_test(bn_average_known_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
