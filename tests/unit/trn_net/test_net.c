/* Unit tests of networks: shapes and costs, errors naming file:line and
 * key, the parameter table, weights files (errors with byte offsets,
 * borrowed buffers), the backends against each other, freezing masks,
 * learning-rate policies and subdivisions. */
#include "testutil_impl.h"
#include "testlib_trn.h"

#define all_kinds tl_all_kinds

static void shapes_and_costs(void **state)
{
    (void)state;
    trn_net *net = tl_net(all_kinds, NULL);
    assert_non_null(net);
    assert_int_equal(trn_net_layers(net), 13);
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    uint64_t params = 0, macs = 0;
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_info in;
        assert_int_equal(trn_net_layer_info(net, i, &in), 0);
        assert_int_equal(in.section, i + 1);
        params += in.params;
        macs += in.macs;
        uint64_t out = (uint64_t)in.out.c * in.out.h * in.out.w;
        assert_true(in.output_bytes == 4 * out);
        if (in.kind == TRN_LAYER_CONVOLUTIONAL) {
            /* docs/design.md's rule: floor((M + 2p - K) / s) + 1. */
            assert_int_equal(in.out.h, (in.in.h + 2 * in.pad - in.size) / in.stride + 1);
            assert_true(in.macs == out * (in.in.c / in.groups) * in.size * in.size);
            assert_true(in.params == (uint64_t)in.filters * (in.in.c / in.groups) * in.size * in.size +
                                         in.filters * (in.batch_normalize ? 4 : 1));
        }
        if (in.kind == TRN_LAYER_CONNECTED)
            assert_true(in.macs == out * in.in.c * in.in.h * in.in.w);
    }
    assert_true(t.params == params && t.macs == macs);
    assert_true(t.weight_bytes == 4 * params);
    assert_true(trn_weights_bytes(net) == 20 + 4 * params);
    trn_layer_info r;
    trn_net_layer_info(net, 5, &r);
    assert_int_equal(r.kind, TRN_LAYER_ROUTE);
    assert_int_equal(r.n_from, 2);
    assert_int_equal(r.from[0], 4);
    assert_int_equal(r.from[1], 2);
    assert_int_equal(r.out.c, 16);
    /* The output is the last layer that is not [cost]. */
    assert_int_equal(trn_net_outputs(net), 5);
    trn_net_free(net);
}

/* Peak live activations at batch 1: a buffer lives from the layer that
 * writes it to the last layer that reads it. */
static void peak_activation_follows_liveness(void **state)
{
    (void)state;
    trn_net *net = tl_net("[net]\nbatch=1\nheight=8\nwidth=8\nchannels=1\n"
                          "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=relu\n" /* 0: 256 */
                          "[maxpool]\nsize=2\nstride=2\n"                                 /* 1: 64 */
                          "[convolutional]\nfilters=2\nsize=1\nactivation=relu\n"          /* 2: 32 */
                          "[route]\nlayers=0,0\n"                                          /* 3: 512 */
                          "[avgpool]\n",                                                   /* 4: 8 */
                          NULL);
    assert_non_null(net);
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    /* At layer 3: outputs of 0 (read here), 2 (not read again: dead after
     * layer 2? it is live only until its last reader; nobody reads it) and
     * 3 itself. Layer 0's output is live from layer 0 to layer 3. */
    uint64_t at0 = 64 + 256, at1 = 256 + 64, at2 = 256 + 64 + 32, at3 = 256 + 512, at4 = 512 + 8;
    uint64_t peak = at0;
    uint64_t all[] = {at1, at2, at3, at4};
    for (int i = 0; i < 4; i++)
        if (all[i] > peak) peak = all[i];
    assert_true(t.peak_activation_bytes == 4 * peak);
    trn_net_free(net);
}

/* A route reads up to 32 layers and trn_layer_info names all of them: a
 * 9-source route whose 9th source is a large early layer keeps that
 * layer's output live until the route (it once held only 8, and the peak
 * walk then freed layer 0's output after layer 1). */
static void route_reads_nine_sources(void **state)
{
    (void)state;
    char cfg[1024] = "[net]\nbatch=1\nheight=4\nwidth=4\nchannels=1\n"
                     "[convolutional]\nfilters=64\nsize=1\nactivation=linear\n"; /* 0: 1024 */
    for (int k = 1; k <= 8; k++) /* 1..8: 16 each, a chain from layer 0 */
        strcat(cfg, "[convolutional]\nfilters=1\nsize=1\nactivation=linear\n");
    strcat(cfg, "[route]\nlayers=1,2,3,4,5,6,7,8,0\n"); /* 9: 8*16 + 1024 */
    trn_net *net = tl_net(cfg, NULL);
    assert_non_null(net);
    trn_layer_info info;
    assert_int_equal(trn_net_layer_info(net, 9, &info), 0);
    assert_int_equal(info.n_from, 9);
    for (int k = 0; k < 8; k++) assert_int_equal(info.from[k], k + 1);
    assert_int_equal(info.from[8], 0);
    assert_int_equal(info.out.c, 8 + 64);
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    /* At layer 9: layer 0's output (1024), layers 1..8 (8*16) and the
     * route's own (1152). */
    assert_true(t.peak_activation_bytes == 4 * (1024 + 128 + 1152));
    trn_net_free(net);
}

/* Darknet's weights-header rule, one function for every reader: 20 bytes
 * when major*10+minor >= 2 and both < 1000, else 16; hostile values
 * (major = 2^31-1, whose *10 overflows int32) are defined. */
static void weights_header_rule(void **state)
{
    (void)state;
    static const struct { int32_t major, minor; size_t bytes; int transposed; } cases[] = {
        {0, 0, 16, 0},           {0, 1, 16, 0},        {0, 2, 20, 0},
        {1, 0, 20, 0},           {999, 999, 20, 0},    {1000, 0, 16, 0},
        {0, 1000, 16, 0},        {1001, 0, 16, 1},     {0, 1001, 16, 1},
        {INT32_MAX, 0, 16, 1},   {INT32_MAX, INT32_MAX, 16, 1},
        {INT32_MIN, 0, 16, 0},   {INT32_MIN, INT32_MAX, 16, 1},
        {-1, 12, 20, 0},         {0, INT32_MIN, 16, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (trn_weights_header_bytes(cases[i].major, cases[i].minor) != cases[i].bytes ||
            trn_weights_header_transposed(cases[i].major, cases[i].minor) != cases[i].transposed)
            fail_msg("major %d minor %d: expected %zu bytes, transposed %d", (int)cases[i].major,
                     (int)cases[i].minor, cases[i].bytes, cases[i].transposed);
    }
    /* A file with major = 2^31-1: a 16-byte header, read without UB. */
    trn_net *net = tl_net("[net]\nbatch=1\nheight=2\nwidth=2\nchannels=1\n"
                          "[convolutional]\nfilters=1\nsize=1\nactivation=linear\n", NULL);
    assert_non_null(net);
    unsigned char buf[16 + 2 * 4] = {0};
    int32_t hdr[4] = {INT32_MAX, 0, 0, 7};
    memcpy(buf, hdr, sizeof hdr);
    trn_err e;
    assert_int_equal(trn_weights_load_mem(net, buf, sizeof buf, 0, "hostile", &e), 0);
    assert_true(trn_net_seen(net) == 7);
    trn_net_free(net);
}

/* The engine's MAC counting: per layer, what the layer's matrix products
 * multiply, attributed to the running layer; the counted forward computes
 * what a plain one computes. */
static void count_forward_attributes_macs(void **state)
{
    (void)state;
    trn_net *net = tl_net("[net]\nbatch=1\nheight=8\nwidth=8\nchannels=3\n"
                          "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=relu\n"
                          "[maxpool]\nsize=2\nstride=2\n"
                          "[convolutional]\nfilters=6\nsize=1\nactivation=leaky\n"
                          "[connected]\noutput=5\nactivation=linear\n"
                          "[softmax]\n", NULL);
    assert_non_null(net);
    tl_randomize(net, 3);
    int n = trn_net_layers(net);
    size_t in = trn_net_inputs(net);
    float *x = malloc(in * sizeof *x);
    tl_fill_uniform(x, in, 5, 0, 1);
    trn_err e;
    assert_int_equal(trn_net_forward(net, x, &e), 0);
    float plain[5];
    memcpy(plain, trn_net_output(net), sizeof plain);
    uint64_t macs[8];
    for (int i = 0; i < 8; i++) macs[i] = 12345;
    trn_forward_counts c = {.layer_macs = macs};
    assert_int_equal(trn_net_count_forward(net, x, &c, &e), 0);
    assert_memory_equal(plain, trn_net_output(net), sizeof plain);
    const uint64_t expect[] = {8 * 8 * 4 * 27, 0, 4 * 4 * 6 * 4, 5 * 96, 0};
    for (int i = 0; i < n; i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        if (macs[i] != expect[i] || macs[i] != info.macs)
            fail_msg("layer %d: counted %llu, expected %llu, cost model %llu", i,
                     (unsigned long long)macs[i], (unsigned long long)expect[i],
                     (unsigned long long)info.macs);
    }
    assert_true(c.outside_macs == 0);
    assert_true(c.gemm_calls == 3);
    assert_int_equal(trn_net_count_forward(net, x, NULL, &e), -1);
    free(x);
    trn_net_free(net);
}

/* Each bad cfg fails naming file:line, the key and the problem. */
static void errors_name_line_and_key(void **state)
{
    (void)state;
    const char *head = "[net]\nbatch=2\nheight=8\nwidth=8\nchannels=3\n";
    struct { const char *body, *expect; } bad[] = {
        {"[convolutional]\nfilterz=4\n", "test.cfg:7: [convolutional]: unknown key 'filterz'"},
        {"[convolutional]\nxnor=1\n", "test.cfg:7: [convolutional]: key 'xnor' is a Darknet key this trainer does not support"},
        {"[yolo]\n", "test.cfg:6: [yolo]: this Darknet layer is not supported"},
        {"[foo]\n", "test.cfg:6: [foo]: unknown section type"},
        {"[convolutional]\nfilters=four\n", "test.cfg:7: [convolutional]: filters=four is not an integer"},
        {"[convolutional]\nfilters=0\n", "test.cfg:7: [convolutional]: filters=0 is out of range"},
        {"[convolutional]\nsize=11\n", "test.cfg:7: [convolutional]: a 11x11 kernel does not fit the 8x8 input"},
        {"[convolutional]\nfilters=4\ngroups=2\n", "test.cfg:8: [convolutional]: groups=2 must divide the 3 input channels"},
        {"[convolutional]\nactivation=swish\n", "test.cfg:7: [convolutional]: unknown activation 'swish'"},
        {"[maxpool]\nsize=9\npadding=0\n", "test.cfg:7: [maxpool]: a 9x9 window does not fit"},
        {"[dropout]\nprobability=1.5\n", "test.cfg:7: [dropout]: probability=1.5 is out of range"},
        {"[route]\n", "test.cfg:6: [route]: key 'layers' is required"},
        {"[route]\nlayers=-3\n", "test.cfg:7: [route]: layers=-3 names layer -3, which is not before this layer"},
        {"[convolutional]\n[maxpool]\nsize=2\nstride=2\n[route]\nlayers=-1,-2\n",
         "test.cfg:11: [route]: layer 0's output is 8x8 but layer 1's is 4x4"},
        {"[shortcut]\n", "test.cfg:6: [shortcut]: key 'from' is required"},
        {"[convolutional]\n[shortcut]\nfrom=1\n", "test.cfg:8: [shortcut]: from=1 names layer 1, which is not before"},
        {"[crop]\ncrop_height=9\ncrop_width=2\n", "test.cfg:7: [crop]: a 9x2 crop is larger than the 8x8 input"},
        {"[softmax]\ngroups=5\n", "test.cfg:7: [softmax]: groups=5 does not divide the 192 inputs"},
        {"[cost]\ntype=masked\n", "test.cfg:7: [cost]: cost type 'masked' is not supported"},
        {"[net]\n", "test.cfg:6: [net]: a second [net] section"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", head, bad[i].body);
        trn_err e;
        e.msg[0] = 0;
        trn_cfg *c = trn_cfg_parse(text, strlen(text), "test.cfg", &e);
        assert_non_null(c);
        trn_net *n = trn_net_create(c, NULL, &e);
        if (n || !strstr(e.msg, bad[i].expect)) fail_msg("expected '%s', got '%s'", bad[i].expect, e.msg);
        trn_cfg_free(c);
    }
    struct { const char *text, *expect; } badnet[] = {
        {"[convolutional]\n", "test.cfg:1: the first section is [convolutional]"},
        {"[net]\nbatch=1\nsubdivisions=2\nheight=1\nwidth=1\nchannels=1\n[avgpool]\n",
         "test.cfg:2: [net]: batch=1 is smaller than subdivisions=2"},
        {"[net]\nwidth=8\nchannels=1\n[avgpool]\n", "test.cfg:1: [net]: key 'height' is required"},
        {"[net]\nheight=8\nwidth=8\nchannels=1\npolicy=random\n[avgpool]\n", "test.cfg:5: [net]: unknown policy 'random'"},
        {"[net]\nheight=8\nwidth=8\nchannels=1\npolicy=steps\nsteps=1,2\nscales=.1\n[avgpool]\n",
         "test.cfg:7: [net]: steps has 2 values but scales has 1"},
        {"[net]\nheight=8\nwidth=8\nchannels=1\nadam=1\n[avgpool]\n", "test.cfg:5: [net]: key 'adam' is a Darknet key"},
        {"[net]\nheight=8\nwidth=8\nchannels=1\n", "test.cfg: the cfg has a [net] section but no layer"},
        {"[net]\nheight=60000\nwidth=60000\nchannels=3\nbatch=64\n[avgpool]\n", "is too large"},
    };
    for (size_t i = 0; i < sizeof badnet / sizeof *badnet; i++) {
        trn_err e;
        e.msg[0] = 0;
        trn_cfg *c = trn_cfg_parse(badnet[i].text, strlen(badnet[i].text), "test.cfg", &e);
        assert_non_null(c);
        trn_net *n = trn_net_create(c, NULL, &e);
        if (n || !strstr(e.msg, badnet[i].expect)) fail_msg("expected '%s', got '%s'", badnet[i].expect, e.msg);
        trn_cfg_free(c);
    }
    /* The size limit. */
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.max_bytes = 1 << 20;
    trn_err e;
    trn_cfg *c = trn_cfg_parse(all_kinds, strlen(all_kinds), "test.cfg", &e);
    trn_net_opts big = o;
    big.batch = 4096;
    assert_null(trn_net_create(c, &big, &e));
    assert_non_null(strstr(e.msg, "the network needs more than 1 MiB"));
    trn_cfg_free(c);
}

static void params_table_in_file_order(void **state)
{
    (void)state;
    trn_net *net = tl_net(all_kinds, NULL);
    int np;
    const trn_param *p = trn_net_params(net, &np);
    /* conv with BN: biases, scales, mean, variance, weights; connected with
     * BN: biases, weights, scales, mean, variance. */
    trn_param_role conv_bn[] = {TRN_PARAM_BIASES, TRN_PARAM_SCALES, TRN_PARAM_ROLLING_MEAN,
                                TRN_PARAM_ROLLING_VARIANCE, TRN_PARAM_WEIGHTS};
    trn_param_role fc_bn[] = {TRN_PARAM_BIASES, TRN_PARAM_WEIGHTS, TRN_PARAM_SCALES,
                              TRN_PARAM_ROLLING_MEAN, TRN_PARAM_ROLLING_VARIANCE};
    int k = 0;
    for (int i = 0; i < 5; i++, k++) {
        assert_int_equal(p[k].layer, 1);
        assert_int_equal(p[k].role, conv_bn[i]);
    }
    int64_t off = 20;
    for (int i = 0; i < np; i++) {
        assert_true(p[i].offset == off);
        off += 4 * (int64_t)p[i].count;
        assert_true(p[i].count == (size_t)p[i].rows * p[i].cols);
        /* One allocation: each array follows the previous. */
        if (i) assert_ptr_equal(p[i].data, p[i - 1].data + p[i - 1].count);
        int rolling = p[i].role == TRN_PARAM_ROLLING_MEAN || p[i].role == TRN_PARAM_ROLLING_VARIANCE;
        assert_true(rolling ? p[i].update == NULL : p[i].update != NULL);
    }
    int last = np - 5;
    for (int i = 0; i < 5; i++) assert_int_equal(p[last + i].role, fc_bn[i]);
    assert_int_equal(p[last].layer, 10);
    trn_net_free(net);
}

static void weights_errors_name_offsets(void **state)
{
    (void)state;
    trn_net *net = tl_net(all_kinds, NULL);
    trn_err e;
    const char *path = tl_path("w.weights");
    assert_int_equal(trn_weights_save(net, path, &e), 0);
    size_t len = 0;
    char *buf = tl_read(path, &len);
    assert_true(len == trn_weights_bytes(net));
    /* Truncated inside the third array of layer 1. */
    int np;
    const trn_param *p = trn_net_params(net, &np);
    size_t cut = (size_t)p[2].offset + 6;
    assert_int_equal(tl_write(tl_path("short.weights"), buf, cut), 0);
    assert_int_equal(trn_weights_load(net, tl_path("short.weights"), &e), -1);
    char expect[200];
    snprintf(expect, sizeof expect, "the file ends at byte offset %zu inside layer 1 ([convolutional], "
             "cfg line 10) rolling_mean", cut);
    if (!strstr(e.msg, expect)) fail_msg("%s", e.msg);
    assert_int_equal(trn_weights_load_mem(net, buf, cut, 0, "mem", &e), -1);
    assert_non_null(strstr(e.msg, expect + 0));
    /* Bytes left over. */
    char *longer = malloc(len + 3);
    memcpy(longer, buf, len);
    assert_int_equal(tl_write(tl_path("long.weights"), longer, len + 3), 0);
    assert_int_equal(trn_weights_load(net, tl_path("long.weights"), &e), -1);
    snprintf(expect, sizeof expect, "3 bytes are left over at byte offset %zu", len);
    if (!strstr(e.msg, expect)) fail_msg("%s", e.msg);
    /* Header too short. */
    assert_int_equal(tl_write(tl_path("tiny.weights"), buf, 10), 0);
    assert_int_equal(trn_weights_load(net, tl_path("tiny.weights"), &e), -1);
    assert_non_null(strstr(e.msg, "byte offset 10 inside the header"));
    assert_int_equal(trn_weights_load(net, "/nonexistent.weights", &e), -1);
    free(longer);
    free(buf);
    trn_net_free(net);
}

/* Borrowed parameters point into the caller's buffer and compute what a
 * copy computes. */
static void borrowed_weights(void **state)
{
    (void)state;
    trn_net *src = tl_net(all_kinds, NULL);
    tl_randomize(src, 5);
    trn_err e;
    const char *path = tl_path("b.weights");
    assert_int_equal(trn_weights_save(src, path, &e), 0);
    size_t len = 0;
    char *buf = tl_read(path, &len);
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    o.external_params = 1;
    trn_net *b = tl_net(all_kinds, &o);
    assert_non_null(b);
    float x[2 * 3 * 12 * 12];
    tl_fill_uniform(x, sizeof x / sizeof *x, 1, 0, 1);
    assert_int_equal(trn_net_forward(b, x, &e), -1); /* no parameters yet */
    assert_non_null(strstr(e.msg, "no parameters yet"));
    assert_int_equal(trn_weights_load_mem(b, buf + 1, len - 1, 1, "mem", &e), -1);
    assert_int_equal(trn_weights_load_mem(b, buf, len, 1, "mem", &e), 0);
    int np;
    const trn_param *p = trn_net_params(b, &np);
    for (int i = 0; i < np; i++) {
        assert_true((const char *)p[i].data == buf + p[i].offset);
        assert_null(p[i].update);
    }
    o.external_params = 0;
    trn_net *c = tl_net(all_kinds, &o);
    assert_int_equal(trn_weights_load(c, path, &e), 0);
    assert_int_equal(trn_net_forward(b, x, &e), 0);
    assert_int_equal(trn_net_forward(c, x, &e), 0);
    assert_memory_equal(trn_net_output(b), trn_net_output(c), 2 * 5 * sizeof(float));
    /* A training network cannot borrow. */
    assert_int_equal(trn_weights_load_mem(src, buf, len, 1, "mem", &e), -1);
    assert_non_null(strstr(e.msg, "inference-only"));
    free(buf);
    trn_net_free(b);
    trn_net_free(c);
    trn_net_free(src);
}

/* The CPU backend computes what the reference computes, layer by layer,
 * in inference and training. */
static void cpu_matches_reference(void **state)
{
    (void)state;
    /* Batch 8: batch normalisation of a connected layer over 2 values is
     * ill-conditioned (two nearly equal values normalise to +-0.7). */
    enum { B = 8 };
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = B;
    trn_net *cpu = tl_net(all_kinds, &o);
    o.backend = TRN_BACKEND_REF;
    trn_net *ref = tl_net(all_kinds, &o);
    tl_randomize(cpu, 9);
    tl_randomize(ref, 9);
    static float x[B * 3 * 12 * 12], y[B * 5];
    tl_one_hot(y, B, 5, 3);
    tl_fill_uniform(x, sizeof x / sizeof *x, 2, 0, 1);
    trn_err e;
    for (int train = 0; train < 2; train++) {
        if (train) {
            assert_int_equal(trn_net_forward_train(cpu, x, y, &e), 0);
            assert_int_equal(trn_net_forward_train(ref, x, y, &e), 0);
        } else {
            assert_int_equal(trn_net_forward(cpu, x, &e), 0);
            assert_int_equal(trn_net_forward(ref, x, &e), 0);
        }
        for (int i = 0; i < trn_net_layers(cpu); i++) {
            trn_layer_info in;
            trn_net_layer_info(cpu, i, &in);
            size_t n = B * (size_t)in.out.c * in.out.h * in.out.w;
            double err = tl_relerr(trn_net_layer_output(cpu, i), trn_net_layer_output(ref, i), n);
            if (!(err <= 1e-5)) fail_msg("%s layer %d: rel.err %g", train ? "train" : "infer", i, err);
        }
    }
    assert_int_equal(trn_net_backward(cpu, &e), 0);
    assert_int_equal(trn_net_backward(ref, &e), 0);
    int np;
    const trn_param *pc = trn_net_params(cpu, &np), *pr = trn_net_params(ref, NULL);
    for (int i = 0; i < np; i++)
        if (pc[i].update) {
            double err = tl_relerr(pc[i].update, pr[i].update, pc[i].count);
            if (!(err <= 1e-4)) fail_msg("update of parameter %d: rel.err %g", i, err);
        }
    trn_net_free(cpu);
    trn_net_free(ref);
}

static void seeds_and_forward_upto(void **state)
{
    (void)state;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.seed = 1;
    trn_net *a = tl_net(all_kinds, &o), *b = tl_net(all_kinds, &o);
    o.seed = 2;
    trn_net *c = tl_net(all_kinds, &o);
    int np;
    const trn_param *pa = trn_net_params(a, &np), *pb = trn_net_params(b, NULL),
                    *pc = trn_net_params(c, NULL);
    size_t total = (trn_weights_bytes(a) - 20) / 4;
    assert_memory_equal(pa[0].data, pb[0].data, total * 4);
    assert_memory_not_equal(pa[0].data, pc[0].data, total * 4);
    float x[2 * 3 * 12 * 12];
    tl_fill_uniform(x, sizeof x / sizeof *x, 2, 0, 1);
    trn_err e;
    assert_int_equal(trn_net_forward(a, x, &e), 0);
    assert_int_equal(trn_net_forward_upto(b, x, 4, &e), 0);
    assert_memory_equal(trn_net_layer_output(a, 4), trn_net_layer_output(b, 4), 2 * 8 * 5 * 5 * 4);
    assert_int_equal(trn_net_forward_upto(b, x, 13, &e), -1);
    trn_net_free(a);
    trn_net_free(b);
    trn_net_free(c);
}

static const char *small =
    "[net]\nbatch=4\nsubdivisions=2\nheight=4\nwidth=4\nchannels=2\nlearning_rate=0.1\n"
    "momentum=0.9\ndecay=0.001\n"
    "[convolutional]\nbatch_normalize=1\nfilters=3\nsize=3\npad=1\nactivation=leaky\n"
    "[connected]\noutput=3\nactivation=linear\n[softmax]\n";

/* Frozen elements keep their value (decay and momentum included) and
 * frozen rolling statistics stay; the others move. */
static void masks_freeze_elements(void **state)
{
    (void)state;
    trn_net *net = tl_net(small, NULL);
    tl_randomize(net, 3);
    int np;
    const trn_param *p = trn_net_params(net, &np);
    trn_err e;
    for (int i = 0; i < np; i++) {
        float *m = malloc(p[i].count * sizeof *m);
        for (size_t j = 0; j < p[i].count; j++) m[j] = (float)(j % 2);
        assert_int_equal(trn_net_set_mask(net, i, m, &e), 0);
        free(m);
    }
    float *before = malloc((trn_weights_bytes(net) - 20));
    memcpy(before, p[0].data, trn_weights_bytes(net) - 20);
    float x[2 * 2 * 4 * 4], y[6] = {1, 0, 0, 0, 1, 0};
    tl_fill_uniform(x, 64, 4, -1, 1);
    for (int s = 0; s < 6; s++) assert_int_equal(trn_net_train_step(net, x, y, NULL, &e), 0);
    size_t k = 0;
    int moved = 0;
    for (int i = 0; i < np; i++)
        for (size_t j = 0; j < p[i].count; j++, k++) {
            if (j % 2 == 0) assert_true(p[i].data[j] == before[k]);
            else moved += p[i].data[j] != before[k];
        }
    assert_true(moved > 0);
    assert_int_equal(trn_net_set_mask(net, np, NULL, &e), -1);
    free(before);
    trn_net_free(net);
}

/* The update happens once per `subdivisions` steps; the rate follows
 * Darknet's policies at batch number seen / (batch * subdivisions). */
static void subdivisions_and_policies(void **state)
{
    (void)state;
    trn_net *net = tl_net(small, NULL);
    int np;
    const trn_param *p = trn_net_params(net, &np);
    float w0 = p[np - 1].data[0];
    float x[2 * 2 * 4 * 4], y[6] = {1, 0, 0, 0, 1, 0};
    tl_fill_uniform(x, 64, 4, -1, 1);
    trn_err e;
    assert_int_equal(trn_net_batch(net), 2);
    assert_int_equal(trn_net_train_step(net, x, y, NULL, &e), 0);
    assert_true(p[np - 1].data[0] == w0);
    assert_int_equal(trn_net_train_step(net, x, y, NULL, &e), 0);
    assert_true(p[np - 1].data[0] != w0);
    assert_true(trn_net_seen(net) == 4);
    assert_true(trn_net_current_batch(net) == 1);
    trn_net_free(net);

    struct { const char *keys; double (*expect)(double b); } pol[] = {
        {"policy=constant\n", NULL},
        {"policy=steps\nsteps=10,20\nscales=.5,.1\n", NULL},
        {"policy=step\nstep=7\nscale=.5\n", NULL},
        {"policy=exp\ngamma=.99\n", NULL},
        {"policy=poly\npower=2\nmax_batches=100\n", NULL},
        {"policy=sigmoid\ngamma=.3\nstep=40\n", NULL},
        {"policy=constant\nburn_in=10\npower=3\n", NULL},
    };
    for (size_t i = 0; i < sizeof pol / sizeof *pol; i++) {
        char text[512];
        snprintf(text, sizeof text, "[net]\nbatch=2\nheight=1\nwidth=1\nchannels=1\nlearning_rate=0.5\n%s"
                 "[avgpool]\n", pol[i].keys);
        trn_net *n = tl_net(text, NULL);
        assert_non_null(n);
        for (uint64_t b = 0; b < 60; b += 3) {
            trn_net_set_seen(n, b * 2);
            double lr = 0.5, r = trn_net_rate(n);
            switch (i) {
            case 1: lr *= b >= 20 ? 0.05 : b >= 10 ? 0.5 : 1; break;
            case 2: lr *= pow(0.5, (double)(b / 7)); break;
            case 3: lr *= pow(0.99, (double)b); break;
            case 4: lr *= pow(1 - b / 100.0, 2); break;
            case 5: lr *= 1 / (1 + exp(0.3 * ((double)b - 40))); break;
            case 6: if (b < 10) lr *= pow(b / 10.0, 3); break;
            }
            if (fabs(r - lr) > 1e-6 * (lr + 1e-6)) fail_msg("%s at batch %d: %g, expected %g", pol[i].keys, (int)b, r, lr);
        }
        trn_net_free(n);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shapes_and_costs),
        cmocka_unit_test(peak_activation_follows_liveness),
        cmocka_unit_test(route_reads_nine_sources),
        cmocka_unit_test(weights_header_rule),
        cmocka_unit_test(count_forward_attributes_macs),
        cmocka_unit_test(errors_name_line_and_key),
        cmocka_unit_test(params_table_in_file_order),
        cmocka_unit_test(weights_errors_name_offsets),
        cmocka_unit_test(borrowed_weights),
        cmocka_unit_test(cpu_matches_reference),
        cmocka_unit_test(seeds_and_forward_upto),
        cmocka_unit_test(masks_freeze_elements),
        cmocka_unit_test(subdivisions_and_policies),
    };
    int rc = cmocka_run_group_tests_name("trn_net", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
