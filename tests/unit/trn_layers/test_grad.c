/*
 * Every layer's backward against finite differences.
 *
 * Each case is a small network: input -> a linear 3x3 convolution ("pre")
 * -> the layer under test -> (a linear connected layer to 5 classes) ->
 * softmax with cross-entropy. The backward's update arrays hold Darknet's
 * negative gradient -dL/dtheta of the summed loss L; they are compared
 * with central differences (L(theta + h) - L(theta - h)) / 2h on a sample
 * of the parameters of the layer under test and of "pre" (which checks the
 * gradient the layer passes to its input). Random draws (dropout) are
 * fixed for every forward. The reference backend (double accumulation) is
 * used so that the loss is smooth enough for h = 1e-3.
 *
 * Piecewise-linear layers (relu, leaky, ramp, relie, plse, hardtan,
 * lhtan, stair, maxpool) have kinks; a difference step that crosses one
 * measures a secant, not the derivative. So the test records the discrete
 * state of the layer under test (the activation's slope at every output,
 * or the max-pool argmax); an entry whose +-h steps change it is measured
 * again with h/4, and set aside if that crosses one too (counted and
 * printed); at least half of the entries must be usable.
 *
 * Tolerances, per case, on ||analytic - numeric|| / ||numeric|| over the
 * usable entries:
 *   2e-3  every layer, except
 *   1e-2  batch normalisation: Darknet's backward, which we copy, is not
 *         the exact derivative of its forward (the forward divides by
 *         sqrt(var) + 1e-6 with the n-1 variance, the backward uses
 *         sqrt(var + 1e-5) and the n-divisor derivative), a relative
 *         difference of about 1/n on the variance term: n = 256 values per
 *         channel here (batch 4 x 8x8 for the convolution, batch 256 for
 *         the connected layer).
 */
#include "testutil.h"
#include "testlib_trn.h"

#include "net.h"

#define H 1e-3
#define SAMPLES 24

typedef struct gcase {
    const char *name;
    const char *layer; /* the section(s) under test */
    double tol;
    int head;          /* 1: a connected layer to 5 classes and softmax after it;
                        * 0: softmax only; 2: nothing (the case ends in its own cost) */
    int batch;         /* 0: 4 */
} gcase;

/* The discrete state of the layer under test (index 1): the slope of its
 * activation at every output, or a max-pool's argmax. A difference step
 * whose state differs from the unperturbed one crossed a kink. */
static size_t kink_state(trn_net *net, float *st)
{
    trn_layer_info li;
    trn_net_layer_info(net, 1, &li);
    int batch = trn_net_batch(net);
    size_t n = (size_t)batch * li.out.c * li.out.h * li.out.w;
    const float *y = trn_net_layer_output(net, 1);
    if (li.kind == TRN_LAYER_MAXPOOL) {
        trn_layer_info in;
        trn_net_layer_info(net, 0, &in);
        float *scratch = malloc(n * sizeof *scratch);
        int *idx = malloc(n * sizeof *idx);
        trn_backend_get(TRN_BACKEND_REF)->maxpool(trn_backend_get(TRN_BACKEND_REF), trn_net_layer_output(net, 0), batch, in.out.c,
                                                  in.out.h, in.out.w, li.size, li.stride, li.pad,
                                                  li.out.h, li.out.w, scratch, idx);
        for (size_t i = 0; i < n; i++) st[i] = (float)idx[i];
        free(scratch);
        free(idx);
        return n;
    }
    if (li.kind != TRN_LAYER_CONVOLUTIONAL && li.kind != TRN_LAYER_CONNECTED) return 0;
    switch (li.activation) {
    case TRN_ACT_LOGISTIC: case TRN_ACT_TANH: case TRN_ACT_ELU: case TRN_ACT_SELU:
    case TRN_ACT_LOGGY: case TRN_ACT_LINEAR:
        return 0; /* smooth: no kinks */
    default:
        /* piecewise linear: the slope names the piece */
        for (size_t i = 0; i < n; i++) st[i] = trn_gradient1(y[i], li.activation);
        return n;
    }
}

static double loss_at(trn_net *net, const float *x, const float *y, const float *drop, size_t nd,
                      int drop_layer)
{
    trn_err e;
    if (drop) assert_int_equal(trn_layer_fix_random(net, drop_layer, drop, nd, &e), 0);
    assert_int_equal(trn_net_forward_train(net, x, y, &e), 0);
    return trn_net_cost(net);
}

static void check_case(const gcase *c)
{
    char cfg[2048];
    snprintf(cfg, sizeof cfg,
             "[net]\nbatch=%d\nheight=8\nwidth=8\nchannels=3\n"
             "[convolutional]\nfilters=6\nsize=3\npad=1\nactivation=linear\n"
             "%s\n%s",
             c->batch ? c->batch : 4, c->layer, c->head == 1 ? "[connected]\noutput=5\nactivation=linear\n[softmax]\n"
                       : c->head == 0 ? "[softmax]\n" : "");
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.backend = TRN_BACKEND_REF;
    trn_net *net = tl_net(cfg, &o);
    assert_non_null(net);
    tl_randomize(net, 21);
    int batch = trn_net_batch(net);
    size_t nin = (size_t)batch * trn_net_inputs(net), nout = (size_t)batch * trn_net_outputs(net);
    float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
    tl_fill_uniform(x, nin, 5, -1, 1);
    tl_one_hot(y, batch, (int)trn_net_outputs(net), 6);
    /* Fixed dropout draws, if the case has a dropout layer (index 1). */
    float *drop = NULL;
    size_t nd = 0;
    trn_layer_info li;
    trn_net_layer_info(net, 1, &li);
    if (li.kind == TRN_LAYER_DROPOUT) {
        nd = (size_t)batch * li.in.c * li.in.h * li.in.w;
        drop = malloc(nd * sizeof *drop);
        tl_fill_uniform(drop, nd, 7, 0, 1);
    }
    int np;
    const trn_param *p = trn_net_params(net, &np);
    trn_err e;
    loss_at(net, x, y, drop, nd, 1);
    for (int i = 0; i < np; i++)
        if (p[i].update) memset(p[i].update, 0, p[i].count * sizeof(float));
    assert_int_equal(trn_net_backward(net, &e), 0);
    enum { MAXS = 512 };
    double gh[MAXS], an[MAXS];
    int n = 0, kinks = 0;
    trn_layer_info l1;
    trn_net_layer_info(net, 1, &l1);
    size_t nst = (size_t)batch * l1.out.c * l1.out.h * l1.out.w;
    float *st0 = malloc(nst * sizeof *st0), *st = malloc(nst * sizeof *st);
    size_t k0 = kink_state(net, st0);
    trn_rng r;
    trn_rng_seed(&r, 99);
    for (int i = 0; i < np; i++) {
        if (!p[i].update || p[i].layer > 1) continue;
        for (int s = 0; s < SAMPLES && n < MAXS; s++) {
            size_t j = trn_rng_below(&r, p[i].count);
            float keep = p[i].data[j];
            double l[2], h = H;
            int crossed = 1;
            /* h, then h/4 where h crossed a kink. */
            for (int attempt = 0; attempt < 2 && crossed; attempt++) {
                h = attempt ? H / 4 : H;
                crossed = 0;
                for (int k = 0; k < 2; k++) {
                    p[i].data[j] = keep + (float)(k ? -h : h);
                    l[k] = loss_at(net, x, y, drop, nd, 1);
                    if (k0 && (kink_state(net, st) != k0 || memcmp(st, st0, k0 * sizeof *st)))
                        crossed = 1;
                }
            }
            p[i].data[j] = keep;
            if (crossed) {
                kinks++;
                continue;
            }
            gh[n] = (l[0] - l[1]) / (2 * h);
            an[n] = -p[i].update[j];
            n++;
        }
    }
    free(st0);
    free(st);
    double num2 = 0, diff2 = 0;
    for (int k = 0; k < n; k++) {
        num2 += gh[k] * gh[k];
        diff2 += (gh[k] - an[k]) * (gh[k] - an[k]);
    }
    int used = n;
    n += kinks;
    double rel = num2 > 0 ? sqrt(diff2 / num2) : sqrt(diff2);
    printf("# %-22s %3d of %3d entries, rel.err %.2e (limit %.0e)\n", c->name, used, n, rel, c->tol);
    assert_true(n > 0);
    assert_true(2 * used >= n);
    assert_true(num2 > 0);
    assert_true(rel <= c->tol);
    free(drop);
    free(x);
    free(y);
    trn_net_free(net);
}

#define CONV(act) "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=" act "\n"

static const gcase cases[] = {
    {"conv linear", CONV("linear"), 2e-3, 1, 0},
    {"conv logistic", CONV("logistic"), 2e-3, 1, 0},
    {"conv tanh", CONV("tanh"), 2e-3, 1, 0},
    {"conv elu", CONV("elu"), 2e-3, 1, 0},
    {"conv selu", CONV("selu"), 2e-3, 1, 0},
    {"conv loggy", CONV("loggy"), 2e-3, 1, 0},
    {"conv relu", CONV("relu"), 2e-3, 1, 0},
    {"conv leaky", CONV("leaky"), 2e-3, 1, 0},
    {"conv ramp", CONV("ramp"), 2e-3, 1, 0},
    {"conv relie", CONV("relie"), 2e-3, 1, 0},
    {"conv plse", CONV("plse"), 2e-3, 1, 0},
    {"conv hardtan", CONV("hardtan"), 2e-3, 1, 0},
    {"conv lhtan", CONV("lhtan"), 2e-3, 1, 0},
    {"conv stair", CONV("stair"), 2e-3, 1, 0},
    {"conv stride 2 pad 2 k5", "[convolutional]\nfilters=5\nsize=5\nstride=2\npadding=2\nactivation=leaky\n", 2e-3, 1, 0},
    {"conv groups 2", "[convolutional]\nfilters=4\nsize=3\npad=1\ngroups=2\nactivation=leaky\n", 2e-3, 1, 0},
    {"conv 1x1", "[convolutional]\nfilters=7\nsize=1\nactivation=logistic\n", 2e-3, 1, 0},
    {"conv 1x1 stride 2", "[convolutional]\nfilters=7\nsize=1\nstride=2\nactivation=linear\n", 2e-3, 1, 0},
    {"conv batchnorm", "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\npad=1\nactivation=linear\n", 1e-2, 1, 0},
    {"conv batchnorm leaky", "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\npad=1\nactivation=leaky\n", 1e-2, 1, 0},
    {"connected", "[connected]\noutput=9\nactivation=tanh\n", 2e-3, 1, 0},
    {"connected batchnorm", "[connected]\nbatch_normalize=1\noutput=9\nactivation=linear\n", 1e-2, 1, 256},
    {"maxpool 2/2", "[maxpool]\nsize=2\nstride=2\n", 2e-3, 1, 0},
    {"maxpool 3/2 padded", "[maxpool]\nsize=3\nstride=2\npadding=2\n", 2e-3, 1, 0},
    {"avgpool", "[avgpool]\n", 2e-3, 1, 0},
    {"dropout", "[dropout]\nprobability=0.4\n", 2e-3, 1, 0},
    {"route", "[route]\nlayers=-1,0\n", 2e-3, 1, 0},
    {"shortcut", CONV("tanh") "[shortcut]\nfrom=-2\nactivation=logistic\nalpha=0.7\nbeta=1.3\n", 2e-3, 1, 0},
    {"shortcut downsampled", "[convolutional]\nfilters=6\nsize=3\nstride=2\npad=1\nactivation=tanh\n"
                             "[shortcut]\nfrom=-2\n", 2e-3, 1, 0},
    {"softmax", "[connected]\noutput=6\nactivation=linear\n", 2e-3, 0, 0},
    /* sse: delta = truth - p is half the negative gradient of the summed
     * squares; scale=2 makes the backward the exact gradient. */
    {"cost sse", "[connected]\noutput=5\nactivation=logistic\n[cost]\ntype=sse\nscale=2\n", 2e-3, 2, 0},
};

static void grad_case(void **state) { check_case(*state); }

/* Appends one test per case to t; returns how many. */
int grad_tests(struct CMUnitTest *t);
int grad_tests(struct CMUnitTest *t)
{
    int n = (int)(sizeof cases / sizeof *cases);
    for (int i = 0; i < n; i++)
        t[i] = (struct CMUnitTest){cases[i].name, grad_case, NULL, NULL, (void *)&cases[i]};
    return n;
}
