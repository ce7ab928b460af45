/* Unit tests of freeze-&-grow (prn_nest.h): a small nested model grown
 * over three capacities with real SGD steps; after every growth step each
 * smaller capacity's outputs and weights are bit-identical to what they
 * were when that capacity was trained (issue 15 item 3); new filters start
 * from the initial network's weights; old filters' new-input slices are
 * zero; refusals. */
#include "testutil_impl.h"
#include "testlib_trn.h"
#include "prn_nest.h"
#include "prn.h"

#include <math.h>

#define NCAP 3
#define NL 7
#define BATCH 4

/* 0 conv+BN, 1 maxpool, 2 conv+BN, 3 avgpool... kept spatial: 3 is a
 * connected layer's input flattening instead: 3 maxpool, 4 connected,
 * 5 connected classifier (fixed), 6 softmax. */
static char *cfg_text(int f0, int f2, int f4)
{
    static char buf[4][1024];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, 1024,
             "[net]\nbatch=%d\nheight=8\nwidth=8\nchannels=3\nlearning_rate=0.05\nmomentum=0.9\n"
             "decay=0.0005\n"
             "[convolutional]\nbatch_normalize=1\nfilters=%d\nsize=3\npad=1\nactivation=leaky\n"
             "[maxpool]\nsize=2\nstride=2\n"
             "[convolutional]\nbatch_normalize=1\nfilters=%d\nsize=3\npad=1\nactivation=leaky\n"
             "[maxpool]\nsize=2\nstride=2\n"
             "[connected]\noutput=%d\nactivation=relu\n"
             "[connected]\noutput=3\nactivation=linear\n"
             "[softmax]\n",
             BATCH, f0, f2, f4);
    return b;
}

static const int caps[NCAP][NL] = {
    {2, 0, 3, 0, 2, 3, 0},
    {4, 0, 5, 0, 4, 3, 0},
    {8, 0, 8, 0, 6, 3, 0},
};

static void fill(float *x, size_t n, uint64_t seed)
{
    trn_rng r;
    trn_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = trn_rng_uniform(&r);
}

/* A few SGD steps on random data at the network's current capacity. */
static void train(trn_net *net, uint64_t seed)
{
    trn_err e;
    size_t nx = BATCH * trn_net_inputs(net);
    float *x = malloc(nx * sizeof *x), y[BATCH * 3];
    for (int s = 0; s < 4; s++) {
        fill(x, nx, seed * 100 + s);
        memset(y, 0, sizeof y);
        for (int b = 0; b < BATCH; b++) y[b * 3 + (b + s) % 3] = 1;
        assert_int_equal(trn_net_forward_train(net, x, y, &e), 0);
        assert_int_equal(trn_net_backward(net, &e), 0);
        trn_net_update(net);
    }
    free(x);
}

/* A batch source for prn_bn_recalibrate: batch `index` of random images
 * (ctx NULL), or always the same batch (ctx non-NULL). */
static int batch_fn(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    (void)err;
    fill(x, (size_t)BATCH * 192, ctx ? 7 : 1000 + index);
    memset(y, 0, BATCH * 3 * sizeof *y);
    for (int b = 0; b < BATCH; b++) y[b * 3 + b % 3] = 1;
    return 0;
}

typedef struct snap {
    float *out;       /* probe outputs at the capacity */
    trn_net *weights; /* the capacity's slices, as a separate network */
} snap;

static void take(trn_net *net, int k, const float *probe, snap *s)
{
    trn_err e;
    assert_int_equal(trn_net_set_capacity(net, caps[k], &e), 0);
    assert_int_equal(trn_net_forward(net, probe, &e), 0);
    size_t no = BATCH * trn_net_outputs(net);
    s->out = malloc(no * sizeof *s->out);
    memcpy(s->out, trn_net_output(net), no * sizeof *s->out);
    s->weights = tl_net(cfg_text(caps[k][0], caps[k][2], caps[k][4]), NULL);
    assert_non_null(s->weights);
    assert_int_equal(trn_net_copy_capacity(s->weights, net, &e), 0);
}

static void check(trn_net *net, int k, const float *probe, const snap *s, int after)
{
    trn_err e;
    assert_int_equal(trn_net_set_capacity(net, caps[k], &e), 0);
    assert_int_equal(trn_net_forward(net, probe, &e), 0);
    if (memcmp(trn_net_output(net), s->out, BATCH * trn_net_outputs(net) * sizeof(float)) != 0)
        fail_msg("capacity %d's outputs changed by growth step %d", k + 1, after + 1);
    trn_net *now = tl_net(cfg_text(caps[k][0], caps[k][2], caps[k][4]), NULL);
    assert_int_equal(trn_net_copy_capacity(now, net, &e), 0);
    int np;
    const trn_param *a = trn_net_params(now, &np), *b = trn_net_params(s->weights, NULL);
    for (int i = 0; i < np; i++)
        if (memcmp(a[i].data, b[i].data, a[i].count * sizeof(float)) != 0)
            fail_msg("capacity %d's parameter %d (%s of layer %d) changed by growth step %d", k + 1,
                     i, trn_param_role_name(a[i].role), a[i].layer, after + 1);
    trn_net_free(now);
}

/* The pre-pruning networks of the NCAP capacities (caps), seeded 10 + k:
 * what prn_nest_grow starts each capacity's new filters from. */
static void capacity_inits(trn_net *init[NCAP])
{
    for (int k = 0; k < NCAP; k++) {
        init[k] = tl_net(cfg_text(caps[k][0], caps[k][2], caps[k][4]), NULL);
        tl_randomize_flat(init[k], 10 + k);
    }
}

/* The base (the widest capacity) with what it held before the pruning:
 * seeded random parameters. */
static trn_net *base_net(void)
{
    trn_net *net = tl_net(cfg_text(8, 8, 6), NULL);
    assert_non_null(net);
    tl_randomize_flat(net, 99);
    return net;
}

static prn_nest table(void)
{
    prn_nest n = {.ncap = NCAP, .nlayers = NL};
    n.filters = malloc(sizeof caps);
    memcpy(n.filters, caps, sizeof caps);
    n.fixed = calloc(NL, 1);
    n.fixed[5] = 1;
    return n;
}

static void smaller_capacities_stay_bit_identical(void **state)
{
    (void)state;
    trn_err e;
    trn_net *net = base_net(); /* what the base held: must not leak into capacities */
    prn_nest n = table();
    assert_int_equal(prn_nest_check(net, &n, &e), 0);
    float probe[BATCH * 192];
    fill(probe, sizeof probe / sizeof *probe, 5);
    snap s[NCAP];
    trn_net *init[NCAP];
    capacity_inits(init);
    /* The engine's initialisation, for the dead new filters. */
    trn_net *fresh = tl_net(cfg_text(8, 8, 6), NULL);
    tl_randomize_flat(fresh, 77);
    /* In every init, the first new unit of the connected layer 4 is dead (a
     * ReLU that never fires: zero weights, negative bias), the second alive. */
    for (int k = 1; k < NCAP; k++) {
        int np0;
        const trn_param *q0 = trn_net_params(init[k], &np0);
        for (int i = 0; i < np0; i++) {
            if (q0[i].layer != 4) continue;
            int r = caps[k - 1][4];
            if (q0[i].role == TRN_PARAM_WEIGHTS) memset(q0[i].data + (size_t)r * q0[i].cols, 0, (size_t)q0[i].cols * 4);
            if (q0[i].role == TRN_PARAM_BIASES) q0[i].data[r] = -1, q0[i].data[r + 1] = 5; /* and one always fires */
        }
    }
    assert_int_equal(prn_nest_start(net, &n, init[0], &e), 0);
    take(net, 0, probe, &s[0]);
    /* The seed computes what it computed alone. */
    assert_int_equal(trn_net_forward(init[0], probe, &e), 0);
    assert_memory_equal(trn_net_output(init[0]), s[0].out, BATCH * 3 * sizeof(float));
    for (int k = 1; k < NCAP; k++) {
        assert_int_equal(prn_nest_grow(net, &n, k, init[k], &e), 0);
        /* New filters start from init: layer 2's row caps[k-1][2] (all its columns). */
        int np;
        const trn_param *p = trn_net_params(net, &np), *q = trn_net_params(init[k], NULL);
        for (int i = 0; i < np; i++) {
            if (p[i].layer != 2 || p[i].role != TRN_PARAM_WEIGHTS) continue;
            int r = caps[k - 1][2];
            assert_memory_equal(p[i].data + (size_t)r * p[i].cols, q[i].data + (size_t)r * q[i].cols,
                                (size_t)q[i].cols * sizeof(float));
            /* old filter 0 reads no new channel: columns of channels >= caps[k-1][0] are 0 */
            for (int c = caps[k - 1][0] * 9; c < caps[k][0] * 9; c++) assert_true(p[i].data[c] == 0);
        }
        /* The dead unit restarts from fresh, the live ones keep init's weights. */
        int revived = -1;
        assert_int_equal(prn_nest_revive(net, &n, k, fresh, batch_fn, NULL, 0, 2, 0.01, &revived, &e), 0);
        assert_int_equal(revived, 1);
        for (int i = 0; i < np; i++) {
            if (p[i].layer != 4 || p[i].role != TRN_PARAM_WEIGHTS) continue;
            const trn_param *fr = &trn_net_params(fresh, NULL)[i];
            int r = caps[k - 1][4], c1 = caps[k][2] * 4;
            assert_memory_equal(p[i].data + (size_t)r * p[i].cols, fr->data + (size_t)r * fr->cols, (size_t)c1 * 4);
            assert_memory_equal(p[i].data + (size_t)(r + 1) * p[i].cols, q[i].data + (size_t)(r + 1) * q[i].cols,
                                (size_t)c1 * 4);
        }
        train(net, (uint64_t)k);
        /* The training changed the new filters (the test can see a change). */
        trn_net *before = tl_net(cfg_text(caps[k][0], caps[k][2], caps[k][4]), NULL);
        assert_int_equal(trn_net_copy_capacity(before, net, &e), 0);
        const trn_param *t = trn_net_params(before, NULL);
        int changed = 0;
        for (int i = 0; i < np; i++)
            if (t[i].role == TRN_PARAM_WEIGHTS && memcmp(t[i].data, q[i].data, q[i].count * 4)) changed = 1;
        assert_true(changed);
        trn_net_free(before);
        /* Re-estimating the new channels' statistics leaves the frozen ones. */
        assert_int_equal(prn_bn_recalibrate(net, batch_fn, NULL, 0, 3, &e), 0);
        for (int j = 0; j < k; j++) check(net, j, probe, &s[j], k);
        take(net, k, probe, &s[k]);
    }
    prn_nest_finish(net);
    /* Full capacity = the largest one; every capacity still as trained. */
    for (int j = 0; j < NCAP; j++) check(net, j, probe, &s[j], NCAP - 1);
    /* Bytes grow with the capacity; the largest is the whole network. */
    uint64_t b0 = prn_nest_capacity_bytes(net, &n, 0), b2 = prn_nest_capacity_bytes(net, &n, 2);
    trn_net_totals t;
    assert_int_equal(trn_net_set_capacity(net, NULL, &e), 0);
    trn_net_get_totals(net, &t);
    assert_true(b0 < b2 && b2 == t.weight_bytes);
    for (int k = 0; k < NCAP; k++) {
        free(s[k].out);
        trn_net_free(s[k].weights);
        trn_net_free(init[k]);
    }
    trn_net_free(fresh);
    prn_nest_free(&n);
    trn_net_free(net);
}

/* The rolling statistics of layer l's BN (mean or variance). */
static const trn_param *bn_param(trn_net *net, int l, trn_param_role role)
{
    int np;
    const trn_param *p = trn_net_params(net, &np);
    for (int i = 0; i < np; i++)
        if (p[i].layer == l && p[i].role == role) return &p[i];
    return NULL;
}

/* prn_bn_recalibrate: with one batch repeated, the statistics are that
 * batch's whatever the number of forwards (nothing of the old values stays:
 * the normalisation matches the engine's momentum), frozen and inactive
 * channels keep their values, the weights do not change. */
static void bn_recalibrate_replaces_the_statistics(void **state)
{
    (void)state;
    trn_err e;
    trn_net *a = tl_net(cfg_text(8, 8, 6), NULL), *b = tl_net(cfg_text(8, 8, 6), NULL);
    tl_randomize_flat(a, 3);
    tl_randomize_flat(b, 4); /* other old statistics and weights ... */
    int np;
    const trn_param *pa = trn_net_params(a, &np), *pb = trn_net_params(b, NULL);
    for (int i = 0; i < np; i++) /* ... but the same weights, biases and scales */
        if (pa[i].role != TRN_PARAM_ROLLING_MEAN && pa[i].role != TRN_PARAM_ROLLING_VARIANCE)
            memcpy(pb[i].data, pa[i].data, pa[i].count * sizeof(float));
    int one = 1;
    assert_int_equal(prn_bn_recalibrate(a, batch_fn, &one, 0, 1, &e), 0);
    assert_int_equal(prn_bn_recalibrate(b, batch_fn, &one, 0, 60, &e), 0);
    for (int l = 0; l <= 2; l += 2)
        for (int r = TRN_PARAM_ROLLING_MEAN; r <= TRN_PARAM_ROLLING_VARIANCE; r++) {
            const trn_param *x = bn_param(a, l, (trn_param_role)r), *y = bn_param(b, l, (trn_param_role)r);
            for (size_t c = 0; c < x->count; c++)
                if (fabsf(x->data[c] - y->data[c]) > 1e-4f * (1 + fabsf(x->data[c])))
                    fail_msg("layer %d %s[%zu]: %g after 1 forward, %g after 60", l,
                             trn_param_role_name((trn_param_role)r), c, x->data[c], y->data[c]);
        }
    /* A frozen channel and the channels outside the capacity keep theirs. */
    const trn_param *m0 = bn_param(a, 0, TRN_PARAM_ROLLING_MEAN), *w2 = bn_param(a, 2, TRN_PARAM_WEIGHTS);
    float *mask = calloc(m0->count, sizeof *mask);
    for (size_t c = 1; c < m0->count; c++) mask[c] = 1;
    int idx = (int)(m0 - trn_net_params(a, NULL));
    assert_int_equal(trn_net_set_mask(a, idx, mask, &e), 0);
    m0->data[0] = 123.0f;
    const trn_param *m2 = bn_param(a, 2, TRN_PARAM_ROLLING_MEAN);
    m2->data[7] = 456.0f; /* layer 2 keeps 3 filters at capacity 1 */
    float w_before = w2->data[5];
    assert_int_equal(trn_net_set_capacity(a, caps[0], &e), 0);
    assert_int_equal(prn_bn_recalibrate(a, batch_fn, NULL, 0, 2, &e), 0);
    assert_true(m0->data[0] == 123.0f);
    assert_true(m2->data[7] == 456.0f);
    assert_true(m2->data[0] != bn_param(b, 2, TRN_PARAM_ROLLING_MEAN)->data[0]); /* other batches: other figures */
    assert_true(w2->data[5] == w_before);
    free(mask);
    trn_net_free(a);
    trn_net_free(b);
}

static void refusals(void **state)
{
    (void)state;
    trn_err e;
    trn_net *net = tl_net(cfg_text(8, 8, 6), NULL);
    prn_nest n = table();
    n.filters[1 * NL + 2] = 2; /* capacity 2 keeps fewer than capacity 1 */
    assert_int_equal(prn_nest_check(net, &n, &e), -1);
    assert_non_null(strstr(e.msg, "nested"));
    prn_nest_free(&n);
    n = table();
    n.fixed[0] = 1; /* a fixed layer with batch norm */
    n.filters[0] = n.filters[NL] = 8;
    assert_int_equal(prn_nest_check(net, &n, &e), -1);
    assert_non_null(strstr(e.msg, "batch"));
    prn_nest_free(&n);
    n = table();
    n.filters[2 * NL + 1] = 3; /* a maxpool with filters */
    assert_int_equal(prn_nest_check(net, &n, &e), -1);
    assert_non_null(strstr(e.msg, "capacity 3"));
    /* a seed of the wrong shape */
    prn_nest_free(&n);
    n = table();
    trn_net *wrong = tl_net(cfg_text(3, 3, 2), NULL);
    assert_int_equal(prn_nest_start(net, &n, wrong, &e), -1);
    assert_non_null(strstr(e.msg, "seed"));
    trn_net_free(wrong);
    prn_nest_free(&n);
    trn_net_free(net);
}

/* train_slices (prune grow's default): the old filters' slices that read
 * the new channels start from init and train; every smaller capacity's
 * weights, biases and scales stay bit for bit (only the statistics follow
 * the new capacity). */
static void trained_slices_keep_smaller_weights(void **state)
{
    (void)state;
    trn_err e;
    trn_net *net = base_net();
    prn_nest n = table();
    n.train_slices = 1;
    trn_net *init0 = tl_net(cfg_text(caps[0][0], caps[0][2], caps[0][4]), NULL);
    trn_net *init1 = tl_net(cfg_text(caps[1][0], caps[1][2], caps[1][4]), NULL);
    tl_randomize_flat(init0, 10), tl_randomize_flat(init1, 11);
    assert_int_equal(prn_nest_start(net, &n, init0, &e), 0);
    trn_net *before = tl_net(cfg_text(caps[0][0], caps[0][2], caps[0][4]), NULL);
    assert_int_equal(trn_net_copy_capacity(before, net, &e), 0);
    assert_int_equal(prn_nest_grow(net, &n, 1, init1, &e), 0);
    int np;
    const trn_param *p = trn_net_params(net, &np), *q = trn_net_params(init1, NULL);
    const trn_param *w2 = NULL, *q2 = NULL;
    for (int i = 0; i < np; i++)
        if (p[i].layer == 2 && p[i].role == TRN_PARAM_WEIGHTS) w2 = &p[i], q2 = &q[i];
    assert_non_null(w2);
    int c0 = caps[0][0] * 9, c1 = caps[1][0] * 9;
    /* Old filter 0's slice of the new channels: init's, not zero. */
    assert_memory_equal(w2->data + c0, q2->data + c0, (size_t)(c1 - c0) * sizeof(float));
    float slice[72];
    memcpy(slice, w2->data + c0, (size_t)(c1 - c0) * sizeof(float));
    train(net, 1);
    assert_true(memcmp(slice, w2->data + c0, (size_t)(c1 - c0) * sizeof(float)) != 0);
    trn_net *now = tl_net(cfg_text(caps[0][0], caps[0][2], caps[0][4]), NULL);
    assert_int_equal(trn_net_set_capacity(net, caps[0], &e), 0);
    assert_int_equal(trn_net_copy_capacity(now, net, &e), 0);
    const trn_param *a = trn_net_params(now, &np), *b = trn_net_params(before, NULL);
    for (int i = 0; i < np; i++) {
        if (a[i].role == TRN_PARAM_ROLLING_MEAN || a[i].role == TRN_PARAM_ROLLING_VARIANCE) continue;
        if (memcmp(a[i].data, b[i].data, a[i].count * sizeof(float)) != 0)
            fail_msg("capacity 1's %s of layer %d changed", trn_param_role_name(a[i].role), a[i].layer);
    }
    trn_net_free(now), trn_net_free(before), trn_net_free(init0), trn_net_free(init1);
    prn_nest_free(&n);
    trn_net_free(net);
}

/* Layer 2's weights (the second convolution) in net. */
static const trn_param *conv2_weights(trn_net *net)
{
    int np;
    const trn_param *p = trn_net_params(net, &np);
    for (int i = 0; i < np; i++)
        if (p[i].layer == 2 && p[i].role == TRN_PARAM_WEIGHTS) return &p[i];
    return NULL;
}

/* The variant's growth (train_slices; with affine the scales and shifts
 * too): both cross slices of layer 2 (old filters reading the new channels,
 * new filters reading the old ones) change in training; after every growth
 * step each smaller capacity, with its kept batch-norm vectors applied,
 * computes bit for bit what it computed when it was trained, and without
 * them it does not (the statistics did follow the new capacity). */
static void kept_bn_capacities(int affine)
{
    trn_err e;
    trn_net *net = base_net();
    prn_nest n = table();
    n.train_slices = 1;
    n.bn_affine = affine;
    assert_int_equal(prn_nest_bn_roles(&n), affine ? 0xfu : 0xcu);
    prn_nest_bn kb;
    assert_int_equal(prn_nest_check(net, &n, &e), 0);
    assert_int_equal(prn_nest_bn_init(&kb, net, &n, &e), 0);
    /* capacity k's vectors: every BN channel's mean and variance (layers 0
     * and 2), with affine the biases of all four layers and BN scales */
    for (int k = 0; k < NCAP; k++) {
        size_t want = (size_t)(caps[k][0] + caps[k][2]) * 2;
        if (affine) want += (size_t)(caps[k][0] + caps[k][2]) * 2 + (size_t)caps[k][4] + 3;
        assert_int_equal(kb.off[k + 1] - kb.off[k], want);
    }
    float probe[BATCH * 192];
    fill(probe, sizeof probe / sizeof *probe, 5);
    snap s[NCAP];
    trn_net *init[NCAP];
    capacity_inits(init);
    assert_int_equal(prn_nest_start(net, &n, init[0], &e), 0);
    assert_int_equal(prn_nest_bn_keep(&kb, net, &n, 0, &e), 0);
    take(net, 0, probe, &s[0]);
    /* (layer 0's output: the classifier's may not move, its ReLU units dead) */
    float out0[BATCH * 2 * 64];
    memcpy(out0, trn_net_layer_output(net, 0), sizeof out0);
    const trn_param *w = conv2_weights(net), *q;
    for (int k = 1; k < NCAP; k++) {
        assert_int_equal(prn_nest_grow(net, &n, k, init[k], &e), 0);
        q = conv2_weights(init[k]);
        int r0 = caps[k - 1][2], c0 = caps[k - 1][0] * 9, c1 = caps[k][0] * 9;
        /* both cross slices start from init */
        assert_memory_equal(w->data + c0, q->data + c0, (size_t)(c1 - c0) * 4);
        assert_memory_equal(w->data + (size_t)r0 * w->cols, q->data + (size_t)r0 * q->cols, (size_t)c0 * 4);
        train(net, (uint64_t)k);
        assert_true(memcmp(w->data + c0, q->data + c0, (size_t)(c1 - c0) * 4) != 0);
        assert_true(memcmp(w->data + (size_t)r0 * w->cols, q->data + (size_t)r0 * q->cols, (size_t)c0 * 4) != 0);
        assert_int_equal(prn_bn_recalibrate(net, batch_fn, NULL, 0, 3, &e), 0);
        assert_int_equal(prn_nest_bn_keep(&kb, net, &n, k, &e), 0);
        take(net, k, probe, &s[k]);
        /* the smaller capacities: not as trained with the new statistics... */
        assert_int_equal(trn_net_set_capacity(net, caps[0], &e), 0);
        assert_int_equal(trn_net_forward(net, probe, &e), 0);
        assert_memory_not_equal(trn_net_layer_output(net, 0), out0, sizeof out0);
        /* ...and bit for bit with their own (the weights stay as trained) */
        for (int j = 0; j < k; j++) {
            assert_int_equal(prn_nest_bn_apply(&kb, net, &n, j, &e), 0);
            check(net, j, probe, &s[j], k);
        }
        assert_int_equal(prn_nest_bn_apply(&kb, net, &n, k, &e), 0); /* back to this capacity's */
    }
    prn_nest_finish(net);
    for (int j = NCAP - 1; j >= 0; j--) {
        assert_int_equal(prn_nest_bn_apply(&kb, net, &n, j, &e), 0);
        check(net, j, probe, &s[j], NCAP - 1);
    }
    /* the file: the header, then capacities 1..NCAP-1's vectors */
    const char *path = tl_path("cbn-%d.weights", affine);
    assert_int_equal(prn_nest_bn_save(&kb, &n, path, &e), 0);
    char *buf;
    size_t len;
    assert_int_equal(trn_read_file(path, 1 << 20, &buf, &len, &e), 0);
    assert_int_equal(len, PRN_NEST_BN_HEADER + kb.off[NCAP - 1] * 4);
    int32_t hdr[4] = {0, 1, NCAP - 1, (int32_t)kb.roles};
    memcpy(hdr, "CPBN", 4);
    assert_memory_equal(buf, hdr, 16);
    assert_memory_equal(buf + 16, kb.v, kb.off[NCAP - 1] * 4);
    free(buf);
    for (int k = 0; k < NCAP; k++) {
        free(s[k].out);
        trn_net_free(s[k].weights);
        trn_net_free(init[k]);
    }
    prn_nest_bn_free(&kb);
    prn_nest_free(&n);
    trn_net_free(net);
}

static void trained_slices_kept_statistics(void **state)
{
    (void)state;
    kept_bn_capacities(0);
}

static void trained_slices_kept_scales_and_shifts(void **state)
{
    (void)state;
    kept_bn_capacities(1);
}

/* preserve: every weight that reads the new channels from an old filter
 * or a fixed layer (layer 2's old-to-new slices, the classifier's columns
 * of layer 4's new units) starts at 0, so the grown capacity starts
 * computing what the smaller one computed; those weights still train.
 * Without preserve (init's weights there) the output moves. */
static void preserve_starts_at_the_smaller_capacity(int preserve)
{
    trn_err e;
    trn_net *net = base_net();
    prn_nest n = table();
    n.train_slices = 1;
    n.preserve = preserve;
    trn_net *init[NCAP];
    capacity_inits(init);
    trn_param *b4 = tl_param(init[1], 4, TRN_PARAM_BIASES); /* layer 4's new units alive (ReLU) */
    for (int r = 0; r < caps[1][4]; r++) b4->data[r] = 1;
    float probe[BATCH * 192];
    fill(probe, sizeof probe / sizeof *probe, 5);
    assert_int_equal(prn_nest_start(net, &n, init[0], &e), 0);
    train(net, 3);
    assert_int_equal(trn_net_set_capacity(net, caps[0], &e), 0);
    assert_int_equal(trn_net_forward(net, probe, &e), 0);
    float out0[BATCH * 3], d = 0;
    memcpy(out0, trn_net_output(net), sizeof out0);
    assert_int_equal(prn_nest_grow(net, &n, 1, init[1], &e), 0);
    assert_int_equal(trn_net_forward(net, probe, &e), 0);
    for (int j = 0; j < BATCH * 3; j++) d = fmaxf(d, fabsf(trn_net_output(net)[j] - out0[j]));
    const trn_param *w = conv2_weights(net);
    int c0 = caps[0][0] * 9, c1 = caps[1][0] * 9;
    float zero[72] = {0};
    if (preserve) {
        assert_true(d < 1e-5f);
        assert_memory_equal(w->data + c0, zero, (size_t)(c1 - c0) * sizeof(float));
        const trn_param *w5 = tl_param(net, 5, TRN_PARAM_WEIGHTS);
        train(net, 4);
        assert_memory_not_equal(w->data + c0, zero, (size_t)(c1 - c0) * sizeof(float));
        for (int r = 0; r < 3; r++) /* the classifier's columns of layer 4's new units */
            assert_memory_not_equal(w5->data + (size_t)r * w5->cols + caps[0][4], zero,
                                    (size_t)(caps[1][4] - caps[0][4]) * sizeof(float));
    } else {
        assert_true(d > 1e-3f);
    }
    for (int k = 0; k < NCAP; k++) trn_net_free(init[k]);
    prn_nest_free(&n);
    trn_net_free(net);
}

static void preserve_grows_from_the_smaller_function(void **state)
{
    (void)state;
    preserve_starts_at_the_smaller_capacity(1);
}

static void without_preserve_growth_moves_the_output(void **state)
{
    (void)state;
    preserve_starts_at_the_smaller_capacity(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(smaller_capacities_stay_bit_identical),
        cmocka_unit_test(bn_recalibrate_replaces_the_statistics),
        cmocka_unit_test(refusals),
        cmocka_unit_test(trained_slices_keep_smaller_weights),
        cmocka_unit_test(trained_slices_kept_statistics),
        cmocka_unit_test(trained_slices_kept_scales_and_shifts),
        cmocka_unit_test(preserve_grows_from_the_smaller_function),
        cmocka_unit_test(without_preserve_growth_moves_the_output),
    };
    int rc = cmocka_run_group_tests_name("prn_nest", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
