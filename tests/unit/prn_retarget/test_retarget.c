/* Unit tests of retargeting: heads trained on cached trunk outputs, the
 * trunk + head network, and the head options. */
#include "testutil_impl.h"
#include "testlib_prn.h"

/* L0 conv 4, L1 maxpool, L2 connected 8, L3 connected 3, L4 softmax. */
static const char tiny_cfg[] =
    "[net]\nbatch=4\nwidth=8\nheight=8\nchannels=2\n"
    "[convolutional]\nfilters=4\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[connected]\noutput=8\nactivation=relu\n"
    "[connected]\noutput=3\nactivation=linear\n"
    "[softmax]\n";

/* Features of 3 separable classes: class k has mean +2 on coordinate k. */
static void make_features(prn_features *f, int *labels, size_t n, int dim, uint64_t seed)
{
    f->n = n;
    f->shape = (trn_shape){dim, 1, 1};
    f->x = malloc(n * (size_t)dim * sizeof *f->x);
    trn_rng r;
    trn_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        labels[i] = (int)(i % 3);
        for (int d = 0; d < dim; d++)
            f->x[i * (size_t)dim + (size_t)d] = 0.5f * trn_rng_normal(&r) + (d == labels[i] ? 2.0f : 0);
    }
}

static void head_learns_separable_classes(void **state)
{
    (void)state;
    prn_features tr = {0}, te = {0};
    int ltr[300], lte[90], pred[90];
    make_features(&tr, ltr, 300, 6, 1);
    make_features(&te, lte, 90, 6, 2);
    prn_head_opts o;
    prn_head_opts_defaults(&o);
    o.batch = 16;
    o.batches = 200;
    o.seed = 3;
    trn_cfg *c = NULL;
    trn_net *h = NULL;
    trn_err e = {{0}};
    float l0 = 0, l1 = 0;
    if (prn_head_train(&tr, ltr, 3, &o, &c, &h, &l0, &l1, &e) != 0) fail_msg("%s", e.msg);
    assert_true(l1 < l0);
    assert_int_equal(prn_head_predict(h, &te, pred, NULL, &e), 0);
    int correct = 0;
    for (int i = 0; i < 90; i++) correct += pred[i] == lte[i];
    assert_true(correct >= 85);
    /* The head: [net], [connected] output=3, [softmax]. */
    assert_int_equal(trn_cfg_sections(c), 3);
    assert_string_equal(trn_cfg_get(c, 1, "output"), "3");
    /* Same seed, same bytes; the predictions too. */
    trn_cfg *c2 = NULL;
    trn_net *h2 = NULL;
    assert_int_equal(prn_head_train(&tr, ltr, 3, &o, &c2, &h2, NULL, NULL, &e), 0);
    int n1, n2;
    const trn_param *p1 = trn_net_params(h, &n1), *p2 = trn_net_params(h2, &n2);
    assert_int_equal(n1, n2);
    for (int i = 0; i < n1; i++)
        assert_memory_equal(p1[i].data, p2[i].data, p1[i].count * sizeof(float));
    trn_cfg_free(c);
    trn_cfg_free(c2);
    trn_net_free(h);
    trn_net_free(h2);
    prn_features_free(&tr);
    prn_features_free(&te);
}

static void head_refuses_bad_input(void **state)
{
    (void)state;
    prn_features tr = {0};
    int l[30];
    make_features(&tr, l, 30, 6, 1);
    prn_head_opts o;
    prn_head_opts_defaults(&o);
    o.batches = 2;
    trn_cfg *c;
    trn_net *h;
    trn_err e = {{0}};
    o.with = "softmax";
    assert_int_equal(prn_head_train(&tr, l, 3, &o, &c, &h, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "classifier and softmax are added"));
    o.with = "net,batch=2";
    assert_int_equal(prn_head_train(&tr, l, 3, &o, &c, &h, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "no [net]"));
    o.with = "convolutional,filters=2,size=5";
    assert_int_equal(prn_head_train(&tr, l, 3, &o, &c, &h, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "cannot be built on the trunk's 6x1x1 output"));
    o.with = NULL;
    l[7] = 3;
    assert_int_equal(prn_head_train(&tr, l, 3, &o, &c, &h, NULL, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "label 3"));
    assert_null(c);
    assert_null(h);
    prn_features_free(&tr);
}

static void head_options(void **state)
{
    (void)state;
    prn_head_opts o;
    prn_head_opts_defaults(&o);
    trn_err e;
    assert_int_equal(prn_head_opts_set(&o, "batches=7", &e), 0);
    assert_int_equal(o.batches, 7);
    assert_int_equal(prn_head_opts_set(&o, "aug_passes=0", &e), 0);
    assert_int_equal(o.aug_passes, 0);
    assert_int_equal(prn_head_opts_set(&o, "learning_rate=0.5", &e), 0);
    assert_true(o.learning_rate == 0.5f);
    assert_int_equal(prn_head_opts_set(&o, "batch=0", &e), -1);
    assert_int_equal(prn_head_opts_set(&o, "speed=1", &e), -1);
    assert_non_null(strstr(e.msg, "unknown key"));
    assert_int_equal(prn_head_opts_set(&o, "batches", &e), -1);
}

typedef struct feed {
    float *x;
    int *calls;
} feed;

/* Every step gives the same 4 images. */
static int feed_fn(void *ctx, uint64_t step, float *out, trn_err *err)
{
    (void)err;
    (void)step;
    feed *fd = ctx;
    (*fd->calls)++;
    memcpy(out, fd->x, 4 * 2 * 64 * sizeof(float));
    return 0;
}

/* Cached features are the trunk's outputs; trunk + head computes what the
 * trunk then the head compute. */
static void trunk_plus_head_is_one_network(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(tiny_cfg);
    trn_net *base = pt_base(c, 4, 11);
    float *x = pt_input(base, 4, 12);
    prn_features f = {0};
    trn_err e = {{0}};
    int calls = 0;
    feed fd = {x, &calls};
    /* 6 images: two steps of 4, the surplus of the second dropped. */
    assert_int_equal(prn_features_add(base, 1, feed_fn, &fd, 0, 6, &f, &e), 0);
    assert_int_equal((int)f.n, 6);
    assert_int_equal(f.shape.c, 4);
    assert_int_equal(f.shape.h, 4);
    assert_int_equal(calls, 2);
    assert_int_equal(trn_net_forward_upto(base, x, 1, &e), 0);
    assert_memory_equal(f.x, trn_net_layer_output(base, 1), 4 * 64 * sizeof(float));
    int labels[6] = {0, 1, 0, 1, 0, 1};
    prn_head_opts o;
    prn_head_opts_defaults(&o);
    o.batch = 4;
    o.batches = 5;
    o.with = "connected,output=5,activation=relu";
    trn_cfg *hc;
    trn_net *h;
    assert_int_equal(prn_head_train(&f, labels, 2, &o, &hc, &h, NULL, NULL, &e), 0);
    prn_variant v;
    if (prn_retarget_variant(c, base, 1, hc, h, "trunk-L1", &v, &e) != 0) fail_msg("%s", e.msg);
    assert_string_equal(v.technique, "head");
    assert_int_equal(trn_net_layers(v.net), 5);
    assert_string_equal(trn_cfg_section_type(v.cfg, 3), "connected");
    assert_string_equal(trn_cfg_get(v.cfg, 4, "output"), "2");
    assert_true(pt_same_layer(base, 0, v.net, 0));
    assert_true(pt_same_layer(h, 0, v.net, 2));
    assert_true(pt_same_layer(h, 1, v.net, 3));
    cJSON *hd = cJSON_GetObjectItem(v.fields, "head");
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(hd, "from_layer")), 2);
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(hd, "params")), 64 * 5 + 5 + 5 * 2 + 2);
    /* One image through the whole network = trunk then head. */
    int p1[6];
    float conf[6];
    assert_int_equal(prn_head_predict(h, &f, p1, conf, &e), 0);
    assert_int_equal(trn_net_forward(v.net, x, &e), 0);
    const float *y = trn_net_output(v.net);
    int best = y[1] > y[0];
    assert_int_equal(best, p1[0]);
    assert_true(fabsf(y[best] - conf[0]) < 1e-5f);
    prn_variant_free(&v);
    assert_int_equal(prn_retarget_variant(c, base, 4, hc, h, "t", &v, &e), -1);
    trn_cfg_free(hc);
    trn_net_free(h);
    prn_features_free(&f);
    free(x);
    trn_net_free(base);
    trn_cfg_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(head_learns_separable_classes),
        cmocka_unit_test(head_refuses_bad_input),
        cmocka_unit_test(head_options),
        cmocka_unit_test(trunk_plus_head_is_one_network),
    };
    int rc = cmocka_run_group_tests_name("prn_retarget", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
