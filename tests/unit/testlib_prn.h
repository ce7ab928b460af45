/* testlib_prn.h: fixtures shared by the prune unit-test areas and the
 * prune test tool (static, header-only: each is its own program). */
#ifndef TESTLIB_PRN_H
#define TESTLIB_PRN_H

#include "prn.h"
#include "testutil.h"
#include "testlib_trn.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A small network with every kind the rewrites care about: conv with
 * batch norm, pooling, a [route] and a [shortcut] that reach back over
 * layers, two connected layers (the last is the classifier). */
static const char pt_small_cfg[] =
    "[net]\nbatch=4\nwidth=16\nheight=16\nchannels=3\n\n"
    "# L0\n[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nbatch_normalize=1\nactivation=leaky\n\n"
    "# L1\n[maxpool]\nsize=2\nstride=2\n\n"
    "# L2\n[convolutional]\nfilters=16\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n"
    "# L3\n[route]\nlayers=-1,-2\n\n"
    "# L4\n[convolutional]\nfilters=16\nsize=1\nactivation=leaky\n\n"
    "# L5\n[shortcut]\nfrom=-3\nactivation=linear\n\n"
    "# L6\n[connected]\noutput=32\nactivation=relu\n\n"
    "# L7\n[connected]\noutput=4\nactivation=linear\n\n"
    "# L8\n[softmax]\n";

static inline trn_cfg *pt_cfg(const char *text) { return tl_cfg(text, "test.cfg"); }

/* A "trained" base: the network of cfg (inference only, `batch` images)
 * with randomised parameters (tl_randomize). */
static inline trn_net *pt_base(const trn_cfg *cfg, int batch, uint64_t seed)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = batch;
    o.infer_only = 1;
    trn_err e;
    trn_net *n = trn_net_create(cfg, &o, &e);
    if (!n) {
        fprintf(stderr, "net: %s\n", e.msg);
        return NULL;
    }
    tl_randomize(n, seed);
    return n;
}

/* The parameters of layer i: first entry and count in the table. */
static inline int pt_layer_params(const trn_net *net, int i, int *count)
{
    int np, first = -1;
    const trn_param *p = trn_net_params(net, &np);
    *count = 0;
    for (int k = 0; k < np; k++)
        if (p[k].layer == i) {
            if (first < 0) first = k;
            (*count)++;
        }
    return first;
}

/* Whether layer i of a and layer j of b hold bit-identical parameters. */
static inline int pt_same_layer(const trn_net *a, int i, const trn_net *b, int j)
{
    int na, nb;
    int fa = pt_layer_params(a, i, &na), fb = pt_layer_params(b, j, &nb);
    if (na != nb || na == 0) return 0;
    const trn_param *pa = trn_net_params(a, NULL), *pb = trn_net_params(b, NULL);
    for (int k = 0; k < na; k++) {
        if (pa[fa + k].count != pb[fb + k].count) return 0;
        if (memcmp(pa[fa + k].data, pb[fb + k].data, pa[fa + k].count * sizeof(float))) return 0;
    }
    return 1;
}

/* Whether JSON array a holds the integer v. */
static inline int pt_json_has(const cJSON *a, int v)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, a) if (cJSON_IsNumber(x) && (int)x->valuedouble == v) return 1;
    return 0;
}

/* A random input batch (batch, c, h, w) in [0, 1). */
static inline float *pt_input(const trn_net *net, int batch, uint64_t seed)
{
    size_t n = (size_t)batch * trn_net_inputs(net);
    float *x = malloc(n * sizeof *x);
    if (x) tl_fill_uniform(x, n, seed, 0, 1);
    return x;
}

#endif
