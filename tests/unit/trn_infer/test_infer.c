/* The inference-only flavour (TRN_INFER_SRCS compiled with
 * -DTRN_INFER_ONLY, as runtime-lite builds it): it links alone, holds no
 * training code, and its forward computes what the reference computes. */
#include "testutil_impl.h"
#include "testlib_trn.h"

/* Training entry points, declared weak: in this flavour they must be
 * absent from the library. */
extern int trn_net_backward(trn_net *net, trn_err *err) __attribute__((weak));
extern void trn_net_update(trn_net *net) __attribute__((weak));
extern int trn_net_forward_train(trn_net *net, const float *x, const float *t, trn_err *err)
    __attribute__((weak));

static const char *cfg =
    "[net]\nbatch=2\nheight=12\nwidth=12\nchannels=3\n"
    "[crop]\ncrop_height=10\ncrop_width=10\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=8\nsize=3\npad=1\ngroups=2\nactivation=relu\n"
    "[shortcut]\nfrom=-2\n"
    "[route]\nlayers=-1,-3\n"
    "[convolutional]\nfilters=6\nsize=1\nactivation=logistic\n"
    "[avgpool]\n[connected]\noutput=7\nactivation=tanh\n[dropout]\n"
    "[connected]\nbatch_normalize=1\noutput=5\nactivation=linear\n[softmax]\n";

/* An inference-only network of cfg_text (o: its options, infer_only set)
 * with seeded random parameters. */
static trn_net *infer_net(const char *cfg_text, trn_net_opts *o, uint64_t seed)
{
    trn_net_opts_defaults(o);
    o->infer_only = 1;
    trn_net *net = tl_net(cfg_text, o);
    assert_non_null(net);
    tl_randomize(net, seed);
    return net;
}

/* net's weights saved to the test folder's file `name` (its path in
 * *path), read back whole (*len bytes). */
static char *saved_weights(trn_net *net, const char *name, const char **path, size_t *len)
{
    trn_err e;
    *path = tl_path("%s", name);
    assert_int_equal(trn_weights_save(net, *path, &e), 0);
    char *buf = tl_read(*path, len);
    assert_non_null(buf);
    return buf;
}

static void no_training_code(void **state)
{
    (void)state;
    assert_null(trn_net_backward);
    assert_null(trn_net_update);
    assert_null(trn_net_forward_train);
}

static void forward_and_borrowed_weights(void **state)
{
    (void)state;
    trn_net_opts o;
    trn_net *cpu = infer_net(cfg, &o, 3);
    trn_err e;
    const char *path;
    size_t len;
    char *buf = saved_weights(cpu, "i.weights", &path, &len);
    o.backend = TRN_BACKEND_REF;
    o.external_params = 1;
    trn_net *ref = tl_net(cfg, &o);
    assert_non_null(ref);
    assert_int_equal(trn_weights_load_mem(ref, buf, len, 1, path, &e), 0);
    float x[2 * 3 * 12 * 12];
    tl_fill_uniform(x, sizeof x / sizeof *x, 1, 0, 1);
    assert_int_equal(trn_net_forward(cpu, x, &e), 0);
    assert_int_equal(trn_net_forward(ref, x, &e), 0);
    double err = tl_relerr(trn_net_output(cpu), trn_net_output(ref), 2 * trn_net_outputs(cpu));
    printf("# inference flavour: cpu vs reference output rel.err %.1e\n", err);
    assert_true(err <= 1e-5);
    float sum = 0;
    for (int i = 0; i < 5; i++) sum += trn_net_output(cpu)[i];
    assert_true(fabsf(sum - 1) < 1e-5);
    free(buf);
    trn_net_free(cpu);
    trn_net_free(ref);
}

/* A fragment (catalog/README.md, Fragments): the layers from a cut borrowed
 * from a file of their own, those below from the trunk's weights file (here
 * another network's, equal below the cut), compute what the whole network
 * computes; a fragment or trunk of the wrong size is refused. */
static void fragment_borrows_its_trunk(void **state)
{
    (void)state;
    trn_net_opts o;
    trn_net *whole = infer_net(cfg, &o, 5);
    trn_err e;
    const char *path;
    size_t len;
    char *w = saved_weights(whole, "f.weights", &path, &len);
    int cut = 7; /* the [avgpool]: the trunk holds the three convolutions */
    size_t pre = trn_weights_prefix_bytes(whole, cut);
    assert_true(pre > 0 && 20 + pre < len);
    /* the trunk: the same bytes below the cut, others above */
    char *trunk = malloc(len), *frag = malloc(len - pre);
    assert_non_null(trunk);
    assert_non_null(frag);
    memcpy(trunk, w, len);
    memset(trunk + 20 + pre, 0x3f, len - 20 - pre);
    memcpy(frag, w, 20);
    memcpy(frag + 20, w + 20 + pre, len - 20 - pre);
    o.external_params = 1;
    trn_net *f = tl_net(cfg, &o);
    assert_non_null(f);
    assert_int_equal(trn_weights_borrow_fragment(f, cut, trunk, 20 + pre - 4, "trunk", frag, len - pre, "frag", &e), -1);
    assert_non_null(strstr(e.msg, "not its trunk"));
    assert_int_equal(trn_weights_borrow_fragment(f, cut, trunk, len, "trunk", frag, len - pre - 4, "frag", &e), -1);
    assert_non_null(strstr(e.msg, "does not belong to this cfg"));
    assert_int_equal(trn_weights_borrow_fragment(f, cut, trunk, len, "trunk", frag, len - pre, "frag", &e), 0);
    float x[2 * 3 * 12 * 12];
    tl_fill_uniform(x, sizeof x / sizeof *x, 1, 0, 1);
    assert_int_equal(trn_net_forward(whole, x, &e), 0);
    assert_int_equal(trn_net_forward(f, x, &e), 0);
    assert_memory_equal(trn_net_output(whole), trn_net_output(f), 2 * trn_net_outputs(whole) * sizeof(float));
    trn_net_free(f);
    trn_net_free(whole);
    free(w);
    free(trunk);
    free(frag);
}

/* A borrowed network keeps its convolutions' prepared weights (Winograd's
 * filters: 32 channels and filters, 3x3) from one forward to the next, and
 * forgets them when it borrows again: the same buffer, rewritten with
 * another network's weights and borrowed again, gives that network's
 * output, byte for byte. */
static void borrowing_again_forgets_prepared_weights(void **state)
{
    (void)state;
    static const char *wcfg = "[net]\nbatch=1\nheight=8\nwidth=8\nchannels=32\n"
                              "[convolutional]\nfilters=32\nsize=3\npad=1\nactivation=leaky\n";
    trn_net_opts o;
    trn_net *a = infer_net(wcfg, &o, 7), *b = infer_net(wcfg, &o, 8);
    trn_err e;
    const char *pa, *pb;
    size_t la, lb;
    char *buf = saved_weights(a, "a.weights", &pa, &la), *wb = saved_weights(b, "b.weights", &pb, &lb);
    assert_int_equal(la, lb);
    o.external_params = 1;
    trn_net *x = tl_net(wcfg, &o);
    assert_non_null(x);
    float in[32 * 8 * 8];
    tl_fill_uniform(in, sizeof in / sizeof *in, 2, -1, 1);
    size_t bytes = (size_t)trn_net_outputs(a) * sizeof(float);
    assert_int_equal(trn_weights_load_mem(x, buf, la, 1, pa, &e), 0);
    for (int k = 0; k < 2; k++) { /* makes them, then reads them */
        assert_int_equal(trn_net_forward(x, in, &e), 0);
        assert_int_equal(trn_net_forward(a, in, &e), 0);
        assert_memory_equal(trn_net_output(x), trn_net_output(a), bytes);
    }
    memcpy(buf, wb, la);
    assert_int_equal(trn_weights_load_mem(x, buf, la, 1, pa, &e), 0);
    assert_int_equal(trn_net_forward(x, in, &e), 0);
    assert_int_equal(trn_net_forward(b, in, &e), 0);
    assert_memory_equal(trn_net_output(x), trn_net_output(b), bytes);
    trn_net_free(x);
    trn_net_free(a);
    trn_net_free(b);
    free(buf);
    free(wb);
}

/* trn_net_opts.lazy_buffers: a network run from a layer on (a fragment fed
 * by its trunk) holds no buffers for the layers below that layer's input,
 * computes what an eager network computes from the same input, gets a
 * route's other sources when the route first runs, and all of them at a
 * whole forward, which again gives the eager network's bytes. */
static void lazy_buffers_only_for_layers_run(void **state)
{
    (void)state;
    trn_net_opts o;
    trn_net *eager = infer_net(cfg, &o, 9);
    trn_err e;
    const char *path;
    size_t len;
    char *w = saved_weights(eager, "l.weights", &path, &len);
    o.external_params = 1;
    o.lazy_buffers = 1;
    trn_net *lazy = tl_net(cfg, &o);
    assert_non_null(lazy);
    assert_int_equal(trn_weights_load_mem(lazy, w, len, 1, path, &e), 0);
    int n = trn_net_layers(lazy), cut = 7; /* the [avgpool], after the 1x1 convolution */
    for (int i = 0; i < n; i++) assert_null(trn_net_layer_output(lazy, i));
    float x[2 * 3 * 12 * 12];
    tl_fill_uniform(x, sizeof x / sizeof *x, 4, 0, 1);
    size_t bytes = 2 * trn_net_outputs(eager) * sizeof(float);
    assert_int_equal(trn_net_forward(eager, x, &e), 0);
    assert_int_equal(trn_net_forward_range(lazy, cut, n - 1, trn_net_layer_output(eager, cut - 1), &e), 0);
    assert_memory_equal(trn_net_output(lazy), trn_net_output(eager), bytes);
    for (int i = 0; i < cut - 1; i++) assert_null(trn_net_layer_output(lazy, i));
    assert_non_null(trn_net_layer_output(lazy, cut - 1));
    /* the [route] (layer 5) reads layer 4 (its input) and layer 2 */
    assert_int_equal(trn_net_forward_range(lazy, 5, 5, trn_net_layer_output(eager, 4), &e), 0);
    assert_non_null(trn_net_layer_output(lazy, 2));
    assert_null(trn_net_layer_output(lazy, 1));
    assert_int_equal(trn_net_forward(lazy, x, &e), 0);
    assert_memory_equal(trn_net_output(lazy), trn_net_output(eager), bytes);
    for (int i = 0; i < n; i++) assert_non_null(trn_net_layer_output(lazy, i));
    for (int i = 0; i < n; i++) assert_non_null(trn_net_layer_output(eager, i));
    trn_net_free(lazy);
    trn_net_free(eager);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_training_code),
        cmocka_unit_test(forward_and_borrowed_weights),
        cmocka_unit_test(fragment_borrows_its_trunk),
        cmocka_unit_test(borrowing_again_forgets_prepared_weights),
        cmocka_unit_test(lazy_buffers_only_for_layers_run),
    };
    int rc = cmocka_run_group_tests_name("trn_infer", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
