/* testlib_trn.h: helpers shared by the trainer's unit-test areas (static,
 * header-only: each area is its own program). Include after testutil.h. */
#ifndef TESTLIB_TRN_H
#define TESTLIB_TRN_H

#ifdef TRN_INFER_ONLY
#include "nn.h" /* the inference-only areas see the engine alone */
#else
#include "trn.h"
#endif

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A path inside this program's scratch folder, in one of 32 rotating
 * static buffers: valid until 31 more calls; copy it to keep it longer. */
static inline const char *tl_path(const char *fmt, ...)
{
    static char bufs[32][1024];
    static int next;
    char *b = bufs[next++ % 32];
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    snprintf(b, 1024, "%s/%s", test_tmpdir(), name);
    return b;
}

static inline int tl_write(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t put = len ? fwrite(buf, 1, len, f) : 0;
    return (fclose(f) == 0 && put == len) ? 0 : -1;
}

static inline int tl_write_text(const char *path, const char *text)
{
    return tl_write(path, text, strlen(text));
}

/* Reads a whole file; NULL if absent. *len receives its size. */
static inline void *tl_read(const char *path, size_t *len)
{
    char *buf;
    size_t n;
    trn_err e;
    if (len) *len = 0;
    if (trn_read_file(path, 0, &buf, &n, &e) != 0) return NULL;
    if (len) *len = n;
    return buf;
}

/* Reads exactly n floats; NULL when the file is absent or of another size. */
static inline float *tl_read_floats(const char *path, size_t n)
{
    size_t len;
    float *f = tl_read(path, &len);
    if (f && len != n * sizeof(float)) {
        free(f);
        return NULL;
    }
    return f;
}

static inline int tl_exists(const char *path) { return access(path, F_OK) == 0; }

/* Both files exist and hold the same bytes. */
static inline int tl_same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = tl_read(a, &la), *y = tl_read(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* A network with every layer kind, a route and a shortcut (12x12x3 input,
 * batch 2, 5 outputs, 13 layers). */
static const char *const tl_all_kinds =
    "[net]\nbatch=2\nheight=12\nwidth=12\nchannels=3\n"
    "[crop]\ncrop_height=10\ncrop_width=10\nflip=1\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\npad=1\nactivation=leaky\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[convolutional]\nfilters=8\nsize=3\npad=1\ngroups=2\nactivation=relu\n"
    "[shortcut]\nfrom=-2\nactivation=linear\n"
    "[route]\nlayers=-1,-3\n"
    "[convolutional]\nfilters=6\nsize=1\nactivation=logistic\n"
    "[avgpool]\n"
    "[connected]\noutput=7\nactivation=tanh\n"
    "[dropout]\nprobability=0.3\n"
    "[connected]\nbatch_normalize=1\noutput=5\nactivation=linear\n"
    "[softmax]\n"
    "[cost]\ntype=sse\n";

/* ||a - b|| / ||b||; 0 when both are zero, +inf when only b is. */
static inline double tl_relerr(const float *a, const float *b, size_t n)
{
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        double x = (double)a[i] - b[i];
        d += x * x;
        r += (double)b[i] * b[i];
    }
    if (r == 0) return d == 0 ? 0 : INFINITY;
    return sqrt(d / r);
}

/* Runs a shell command, its output appended to the scratch log. */
static inline int tl_run(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8400];
    snprintf(full, sizeof full, "%s >>'%s/run.log' 2>&1", cmd, test_tmpdir());
    int rc = system(full);
    if (rc != 0) printf("# command failed (%d): %s (log: %s/run.log)\n", rc, cmd, test_tmpdir());
    return rc;
}

/* Fills every parameter with values a trained network could hold: weights
 * He-scaled, biases small, BN scales near 1, rolling variances positive. */
static inline void tl_randomize(trn_net *net, uint64_t seed)
{
    int np;
    const trn_param *p = trn_net_params(net, &np);
    trn_rng r;
    trn_rng_seed(&r, seed);
    for (int i = 0; i < np; i++) {
        for (size_t j = 0; j < p[i].count; j++) {
            float v;
            switch (p[i].role) {
            case TRN_PARAM_BIASES: v = trn_rng_range(&r, -0.1f, 0.1f); break;
            case TRN_PARAM_SCALES: v = trn_rng_range(&r, 0.5f, 1.5f); break;
            case TRN_PARAM_ROLLING_MEAN: v = trn_rng_range(&r, -0.2f, 0.2f); break;
            case TRN_PARAM_ROLLING_VARIANCE: v = trn_rng_range(&r, 0.5f, 2.0f); break;
            default: v = trn_rng_normal(&r) * sqrtf(2.0f / (float)p[i].cols); break;
            }
            p[i].data[j] = v;
        }
    }
}

/* Fills every parameter uniformly in [-0.5, 0.5), rolling variances in
 * [0.5, 1.5) (positive), from seed. */
static inline void tl_randomize_flat(trn_net *net, uint64_t seed)
{
    trn_rng r;
    trn_rng_seed(&r, seed);
    int np;
    const trn_param *p = trn_net_params(net, &np);
    for (int i = 0; i < np; i++)
        for (size_t k = 0; k < p[i].count; k++)
            p[i].data[k] = p[i].role == TRN_PARAM_ROLLING_VARIANCE ? trn_rng_range(&r, 0.5f, 1.5f)
                                                                   : trn_rng_range(&r, -0.5f, 0.5f);
}

/* The parameter of net's layer with role, or NULL. */
static inline trn_param *tl_param(const trn_net *net, int layer, trn_param_role role)
{
    int np;
    const trn_param *p = trn_net_params(net, &np);
    for (int k = 0; k < np; k++)
        if (p[k].layer == layer && p[k].role == role) return (trn_param *)&p[k];
    return NULL;
}

static inline void tl_fill_uniform(float *x, size_t n, uint64_t seed, float lo, float hi)
{
    trn_rng r;
    trn_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = trn_rng_range(&r, lo, hi);
}

/* One-hot truth (batch, classes) with random classes. */
static inline void tl_one_hot(float *y, int batch, int classes, uint64_t seed)
{
    trn_rng r;
    trn_rng_seed(&r, seed);
    memset(y, 0, (size_t)batch * classes * sizeof *y);
    for (int b = 0; b < batch; b++) y[(size_t)b * classes + trn_rng_below(&r, (uint64_t)classes)] = 1;
}

/* The cfg of text read as file `name`, or NULL (the error printed). */
static inline trn_cfg *tl_cfg(const char *text, const char *name)
{
    trn_err e;
    trn_cfg *c = trn_cfg_parse(text, strlen(text), name, &e);
    if (!c) printf("# %s\n", e.msg);
    return c;
}

/* A network from cfg text, or NULL (the error printed). */
static inline trn_net *tl_net(const char *text, const trn_net_opts *o)
{
    trn_cfg *c = tl_cfg(text, "test.cfg");
    if (!c) return NULL;
    trn_err e;
    trn_net *n = trn_net_create(c, o, &e);
    if (!n) printf("# %s\n", e.msg);
    trn_cfg_free(c);
    return n;
}

#endif
