/*
 * The engine context (trn_engine, threads.c): a network's kernels run with
 * the settings of the engine its opts name (threads, determinism mode,
 * Winograd switch), not the process's default engine's; an engine whose
 * threads are not set chooses per layer from the layer's work
 * (TRN_WORK_PER_THREAD, backend.h); and the thread count never changes a
 * byte. A wrapping table records what its convolutions see.
 */
#include "testutil.h"
#include "testlib_trn.h"

#include "backend.h"

/* Layer 0: 3.5M multiply-adds (3 threads' shares); layer 1: 75M. */
static const char cfg_two[] =
    "[net]\nbatch=1\nheight=64\nwidth=64\nchannels=3\n"
    "[convolutional]\nfilters=32\nsize=3\npad=1\nactivation=relu\n"
    "[convolutional]\nfilters=64\nsize=3\npad=1\nactivation=relu\n"
    "[avgpool]\n[connected]\noutput=4\nactivation=linear\n[softmax]\n";

typedef struct seen {
    trn_backend be;
    int threads[2];
    trn_det_mode det[2];
    int winograd[2];
    int calls;
} seen;

static const trn_backend *inner; /* the network's own table */

static void seen_conv(const trn_backend *be, const trn_conv_shape *s, const float *in, const float *w, int ldw,
                      const float *bias, trn_activation act, float *out)
{
    seen *r = be->ctx;
    if (r->calls < 2) {
        r->threads[r->calls] = trn_threads();
        r->det[r->calls] = trn_determinism();
        r->winograd[r->calls] = trn_winograd();
    }
    r->calls++;
    inner->conv(inner, s, in, w, ldw, bias, act, out);
}

/* One forward of cfg_two on engine e (NULL: the default) recording what
 * the two convolutions saw; out: the network's output (4 floats). */
static void forward_on(trn_engine *e, seen *r, float *out)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    o.engine = e;
    trn_net *net = tl_net(cfg_two, &o);
    assert_non_null(net);
    tl_randomize(net, 11);
    float x[3 * 64 * 64];
    tl_fill_uniform(x, sizeof x / sizeof *x, 5, 0, 1);
    *r = (seen){.be = trn_backend_cpu};
    r->be.ctx = r;
    r->be.conv = seen_conv;
    inner = trn_net_swap_backend(net, &r->be);
    trn_err err;
    assert_int_equal(trn_net_forward(net, x, &err), 0);
    assert_int_equal(r->calls, 2);
    memcpy(out, trn_net_output(net), 4 * sizeof *out);
    trn_net_free(net);
}

static uint64_t layer_work(int i)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_net *net = tl_net(cfg_two, &o);
    trn_layer_info li;
    assert_int_equal(trn_net_layer_info(net, i, &li), 0);
    trn_net_free(net);
    return li.macs + li.bias_ops + li.bn_ops + li.act_ops + li.pool_ops;
}

static void threads_chosen_per_layer(void **state)
{
    (void)state;
    trn_engine *e = trn_engine_new();
    assert_non_null(e);
    int cores = trn_engine_threads(e);
    assert_true(cores >= 1);
    /* the choice: a function of the work and the core count */
    assert_int_equal(trn_engine_layer_threads(e, 0), 1);
    assert_int_equal(trn_engine_layer_threads(e, TRN_WORK_PER_THREAD - 1), 1);
    assert_int_equal(trn_engine_layer_threads(e, 2 * TRN_WORK_PER_THREAD), cores < 2 ? cores : 2);
    assert_int_equal(trn_engine_layer_threads(e, UINT64_MAX), cores);
    uint64_t w0 = layer_work(0), w1 = layer_work(1);
    assert_true(w0 >= 3 * TRN_WORK_PER_THREAD && w0 < 4 * TRN_WORK_PER_THREAD && w1 >= 16 * TRN_WORK_PER_THREAD);
    seen r;
    float chosen[4], fixed[4], one[4];
    forward_on(e, &r, chosen);
    assert_int_equal(r.threads[0], cores < 3 ? cores : 3);
    uint64_t want = w1 / TRN_WORK_PER_THREAD;
    assert_int_equal(r.threads[1], want < (uint64_t)cores ? (int)want : cores);
    /* set: every layer on that many, whatever its work */
    trn_engine_set_threads(e, 3);
    assert_int_equal(trn_engine_layer_threads(e, 0), 3);
    forward_on(e, &r, fixed);
    assert_int_equal(r.threads[0], 3);
    assert_int_equal(r.threads[1], 3);
    trn_engine_set_threads(e, 1);
    forward_on(e, &r, one);
    assert_int_equal(r.threads[1], 1);
    assert_memory_equal(chosen, one, sizeof one);
    assert_memory_equal(fixed, one, sizeof one);
    trn_engine_free(e);
}

static void kernels_read_their_engine(void **state)
{
    (void)state;
    trn_engine *e = trn_engine_new();
    assert_non_null(e);
    trn_engine_set_determinism(e, TRN_DET_PORTABLE);
    trn_engine_set_winograd(e, 0);
    seen r;
    float out[4], def[4];
    forward_on(e, &r, out);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r.det[i], TRN_DET_PORTABLE);
        assert_int_equal(r.winograd[i], 0);
    }
    /* the default engine kept its own settings */
    assert_int_equal(trn_determinism(), TRN_DET_DEFAULT);
    assert_int_equal(trn_winograd(), 1);
    forward_on(NULL, &r, def);
    assert_int_equal(r.det[1], TRN_DET_DEFAULT);
    assert_int_equal(r.winograd[1], 1);
    /* and the default engine's settings reach its networks */
    trn_set_determinism(TRN_DET_PORTABLE);
    forward_on(NULL, &r, def);
    trn_set_determinism(TRN_DET_DEFAULT);
    assert_int_equal(r.det[0], TRN_DET_PORTABLE);
    assert_memory_equal(def, out, sizeof out); /* portable on either engine: the same bytes */
    trn_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_chosen_per_layer),
        cmocka_unit_test(kernels_read_their_engine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
