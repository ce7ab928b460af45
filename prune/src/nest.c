/*
 * nest.c: NestDNN's freeze-&-grow on the engine's channel-prefix
 * capacities (prn_nest.h; prune/README.md, "Freeze-&-grow").
 */
#include "prn_nest.h"

#include <stdlib.h>
#include <string.h>

static int own(const trn_layer_info *in)
{
    return in->kind == TRN_LAYER_CONVOLUTIONAL || in->kind == TRN_LAYER_CONNECTED;
}

/* Active output filters and input channels of every layer at capacity k
 * (k < 0: the full network). */
static int geometry(trn_net *net, const prn_nest *n, int k, int *rows, int *inc, trn_err *err)
{
    if (trn_net_set_capacity(net, k < 0 ? NULL : n->filters + (size_t)k * n->nlayers, err) != 0)
        return trn_err_prefix(err, "capacity %d", k + 1);
    for (int i = 0; i < n->nlayers; i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        rows[i] = in.out.c;
        inc[i] = in.in.c;
    }
    return 0;
}

void prn_nest_free(prn_nest *n)
{
    if (!n) return;
    free(n->filters);
    free(n->fixed);
    memset(n, 0, sizeof *n);
}

int prn_nest_check(trn_net *net, const prn_nest *n, trn_err *err)
{
    if (n->nlayers != trn_net_layers(net))
        return trn_errf(err, "the capacity table has %d layers, the network %d", n->nlayers,
                        trn_net_layers(net));
    if (n->ncap < 1) return trn_errf(err, "no capacity");
    for (int i = 0; i < n->nlayers; i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        for (int k = 0; k < n->ncap; k++) {
            int f = n->filters[(size_t)k * n->nlayers + i];
            int prev = k ? n->filters[(size_t)(k - 1) * n->nlayers + i] : 0;
            if (f < prev)
                return trn_errf(err, "layer %d: capacity %d keeps %d filters, fewer than capacity "
                                "%d's %d: capacities must be nested", i, k + 1, f, k, prev);
            if (n->fixed[i] && own(&in) && f != in.filters && f != 0)
                return trn_errf(err, "layer %d is fixed but capacity %d keeps %d of its %d "
                                "filters", i, k + 1, f, in.filters);
        }
        if (n->fixed[i] && own(&in) && in.batch_normalize && n->ncap > 1)
            return trn_errf(err, "layer %d keeps all its filters at every capacity but has batch "
                            "normalisation: its statistics would change with the capacity "
                            "(per-capacity batch-norm statistics are not implemented)", i);
    }
    int *rows = malloc((size_t)n->nlayers * 2 * sizeof *rows);
    if (!rows) return trn_errf(err, "out of memory");
    int rc = 0;
    for (int k = 0; k < n->ncap && rc == 0; k++) rc = geometry(net, n, k, rows, rows + n->nlayers, err);
    free(rows);
    trn_err keep;
    if (trn_net_set_capacity(net, NULL, &keep) != 0) rc = trn_errf(err, "internal: full capacity");
    return rc;
}

/* Sets the mask of every parameter: 1 on [r0, r1) rows (vectors: entries)
 * and columns < c1 of growing layers; all rows and columns [c0, c1) of
 * fixed layers' weights; 0 elsewhere. With init (a network built as the
 * new capacity), the trainable elements are first copied from it; the old
 * rows' columns [c0, c1) of growing layers are zeroed (without
 * train_slices), and with preserve those and the fixed layers' columns
 * [c0, c1) start at zero: every path out of the new channels starts at 0. */
static int grow_layers(trn_net *net, const prn_nest *n, const int *r0, const int *c0in,
                       const int *r1, const int *c1in, const int *fullin, const trn_net *init,
                       trn_err *err)
{
    int np, ni = 0;
    const trn_param *p = trn_net_params(net, &np);
    const trn_param *q = init ? trn_net_params(init, &ni) : NULL;
    if (init && ni != np)
        return trn_errf(err, "the initial network has %d parameters, the nested one %d", ni, np);
    size_t maxc = 0;
    for (int k = 0; k < np; k++)
        if (p[k].count > maxc) maxc = p[k].count;
    float *mask = malloc((maxc ? maxc : 1) * sizeof *mask);
    if (!mask) return trn_errf(err, "out of memory");
    int rc = 0;
    for (int k = 0; k < np && rc == 0; k++) {
        const trn_param *x = &p[k];
        int i = x->layer;
        memset(mask, 0, x->count * sizeof *mask);
        int fixed = n->fixed[i];
        if (x->role == TRN_PARAM_WEIGHTS) {
            size_t C = (size_t)x->cols;
            size_t c0 = C * (size_t)c0in[i] / (size_t)fullin[i], c1 = C * (size_t)c1in[i] / (size_t)fullin[i];
            const trn_param *y = q ? &q[k] : NULL;
            if (y && (y->rows != r1[i] || (size_t)y->cols != c1)) {
                rc = trn_errf(err, "layer %d: the initial network's weights are %dx%d, the new "
                              "capacity's %dx%zu", i, y->rows, y->cols, r1[i], c1);
                break;
            }
            for (int r = 0; r < r1[i]; r++) {
                float *w = x->data + (size_t)r * C;
                if (!fixed && r < r0[i]) {
                    for (size_t c = c0; c < c1; c++) { /* old filter, new channel */
                        w[c] = n->train_slices && y && !n->preserve ? y->data[(size_t)r * c1 + c] : 0;
                        mask[(size_t)r * C + c] = n->train_slices ? 1 : 0;
                    }
                    continue;
                }
                size_t from = fixed ? c0 : 0;
                for (size_t c = from; c < c1; c++) {
                    mask[(size_t)r * C + c] = 1;
                    if (y) w[c] = fixed && n->preserve ? 0 : y->data[(size_t)r * c1 + c];
                }
            }
        } else if (!fixed) {
            const trn_param *y = q ? &q[k] : NULL;
            for (int r = r0[i]; r < r1[i]; r++) {
                mask[r] = 1;
                if (y) x->data[r] = y->data[r];
            }
            /* old channels: their vectors kept per capacity may follow the new one */
            for (int r = 0; (prn_nest_bn_roles(n) >> x->role & 1u) && r < r0[i]; r++) mask[r] = 1;
        }
        rc = trn_net_set_mask(net, k, mask, err);
    }
    free(mask);
    return rc;
}

int prn_nest_start(trn_net *net, const prn_nest *n, const trn_net *seed, trn_err *err)
{
    int L = n->nlayers;
    int *g = calloc((size_t)L * 3, sizeof *g);
    if (!g) return trn_errf(err, "out of memory");
    int rc = geometry(net, n, -1, g, g + L, err);
    if (rc == 0) rc = geometry(net, n, 0, g, g + 2 * L, err);
    if (rc == 0 && trn_net_embed_capacity(net, seed, err) != 0) rc = trn_err_prefix(err, "the seed");
    /* Nothing trainable: all masks 0 (r0 = r1, c0 = c1). */
    if (rc == 0) rc = grow_layers(net, n, g, g + 2 * L, g, g + 2 * L, g + L, NULL, err);
    free(g);
    return rc;
}

int prn_nest_grow(trn_net *net, const prn_nest *n, int k, const trn_net *init, trn_err *err)
{
    if (k < 1 || k >= n->ncap) return trn_errf(err, "no capacity %d to grow to", k + 1);
    int L = n->nlayers;
    int *g = calloc((size_t)L * 5, sizeof *g);
    if (!g) return trn_errf(err, "out of memory");
    int *r0 = g, *c0 = g + L, *r1 = g + 2 * L, *c1 = g + 3 * L, *full = g + 4 * L, *tmp = r0;
    int rc = geometry(net, n, -1, tmp, full, err);
    if (rc == 0) rc = geometry(net, n, k - 1, r0, c0, err);
    if (rc == 0) rc = geometry(net, n, k, r1, c1, err);
    if (rc == 0) rc = grow_layers(net, n, r0, c0, r1, c1, full, init, err);
    free(g);
    return rc;
}

int prn_nest_revive(trn_net *net, const prn_nest *n, int k, const trn_net *fresh, trn_batch_fn next, void *ctx,
                    uint64_t first, int batches, double threshold, int *revived, trn_err *err)
{
    *revived = 0;
    if (k < 1 || k >= n->ncap) return trn_errf(err, "no capacity %d to revive", k + 1);
    if (batches <= 0 || threshold <= 0) return 0;
    int L = n->nlayers, np, nf;
    const trn_param *p = trn_net_params(net, &np), *q = trn_net_params(fresh, &nf);
    if (nf != np) return trn_errf(err, "the fresh network has %d parameters, the nested one %d", nf, np);
    int *g = calloc((size_t)L * 5, sizeof *g);
    size_t nin = (size_t)trn_net_batch(net) * trn_net_inputs(net);
    size_t nout = (size_t)trn_net_batch(net) * trn_net_outputs(net);
    float *x = malloc((nin ? nin : 1) * sizeof *x), *y = malloc((nout ? nout : 1) * sizeof *y);
    double *on = NULL;
    int rc = g && x && y ? 0 : trn_errf(err, "out of memory");
    int *r0 = g, *c0 = g + L, *r1 = g + 2 * L, *c1 = g + 3 * L, *full = g + 4 * L;
    if (rc == 0) rc = geometry(net, n, -1, r0, full, err);
    if (rc == 0) rc = geometry(net, n, k - 1, r0, c0, err);
    if (rc == 0) rc = geometry(net, n, k, r1, c1, err);
    for (int i = 0; rc == 0 && i < L; i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        if (n->fixed[i] || !own(&in) || r1[i] <= r0[i]) continue;
        free(on);
        if (!(on = calloc((size_t)r1[i], sizeof *on))) {
            rc = trn_errf(err, "out of memory");
            break;
        }
        double positions = 0;
        int batch = trn_net_batch(net);
        size_t sp = (size_t)in.out.h * (size_t)in.out.w, per = (size_t)in.out.c * sp;
        for (int b = 0; rc == 0 && b < batches; b++) {
            if ((rc = next(ctx, first + (uint64_t)b, x, y, err)) != 0 ||
                (rc = trn_net_forward_upto(net, x, i, err)) != 0)
                break;
            const float *out = trn_net_layer_output(net, i);
            for (int j = 0; j < batch; j++)
                for (int r = r0[i]; r < r1[i]; r++)
                    for (size_t s = 0; s < sp; s++) on[r] += out[(size_t)j * per + (size_t)r * sp + s] != 0;
            positions += (double)batch * (double)sp;
        }
        /* Restart the dead ones from fresh. */
        for (int r = r0[i]; rc == 0 && r < r1[i]; r++) {
            if (positions > 0 && on[r] / positions >= threshold) continue;
            for (int m = 0; m < np; m++) {
                if (p[m].layer != i) continue;
                if (p[m].role == TRN_PARAM_WEIGHTS) {
                    size_t C = (size_t)p[m].cols, cols = C * (size_t)c1[i] / (size_t)full[i];
                    memcpy(p[m].data + (size_t)r * C, q[m].data + (size_t)r * C, cols * sizeof(float));
                } else {
                    p[m].data[r] = q[m].data[r];
                }
            }
            (*revived)++;
        }
    }
    free(on);
    free(x);
    free(y);
    free(g);
    return rc;
}

void prn_nest_finish(trn_net *net)
{
    int np;
    trn_net_params(net, &np);
    trn_err e;
    for (int k = 0; k < np; k++) (void)trn_net_set_mask(net, k, NULL, &e);
    if (trn_net_set_capacity(net, NULL, &e) != 0) return;
}

uint64_t prn_nest_capacity_bytes(trn_net *net, const prn_nest *n, int k)
{
    trn_err e;
    if (trn_net_set_capacity(net, n->filters + (size_t)k * n->nlayers, &e) != 0) return 0;
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    if (trn_net_set_capacity(net, NULL, &e) != 0) return 0;
    return t.weight_bytes;
}

int prn_nest_zero_slices(trn_net *net, const prn_nest *n, int k, uint64_t *params, uint64_t *macs)
{
    int L = n->nlayers;
    *params = *macs = 0;
    int *g = calloc((size_t)L * 2 * (size_t)(n->ncap + 1), sizeof *g);
    if (!g) return -1;
    trn_err e;
    int *full = g + (size_t)2 * L * n->ncap; /* [rows | in] at the full capacity */
    int rc = geometry(net, n, -1, full, full + L, &e);
    for (int j = 0; j <= k && rc == 0; j++) rc = geometry(net, n, j, g + (size_t)2 * L * j, g + (size_t)2 * L * j + L, &e);
    if (rc == 0) {
        int np;
        const trn_param *p = trn_net_params(net, &np);
        for (int q = 0; q < np; q++) {
            int i = p[q].layer;
            if (p[q].role != TRN_PARAM_WEIGHTS || n->fixed[i]) continue;
            trn_layer_info in;
            trn_net_layer_info(net, i, &in); /* capacity k is set: its output map */
            uint64_t per_ch = (uint64_t)p[q].cols / (uint64_t)full[L + i];
            uint64_t spatial = in.kind == TRN_LAYER_CONVOLUTIONAL ? (uint64_t)in.out.h * in.out.w : 1;
            const int *rk = g + (size_t)2 * L * k, *ik = rk + L;
            for (int r = 0; r < rk[i]; r++) {
                int birth = 0;
                while (g[(size_t)2 * L * birth + i] <= r) birth++;
                uint64_t z = (uint64_t)(ik[i] - g[(size_t)2 * L * birth + L + i]) * per_ch;
                *params += z;
                *macs += z * spatial;
            }
        }
    }
    if (trn_net_set_capacity(net, NULL, &e) != 0) rc = -1;
    free(g);
    return rc;
}

/* ---- batch-norm vectors per capacity -------------------------------------- */

unsigned prn_nest_bn_roles(const prn_nest *n)
{
    if (!n->train_slices) return 0;
    unsigned r = 1u << TRN_PARAM_ROLLING_MEAN | 1u << TRN_PARAM_ROLLING_VARIANCE;
    return n->bn_affine ? r | 1u << TRN_PARAM_SCALES | 1u << TRN_PARAM_BIASES : r;
}

void prn_nest_bn_free(prn_nest_bn *b)
{
    if (!b) return;
    free(b->off);
    free(b->v);
    memset(b, 0, sizeof *b);
}

int prn_nest_bn_init(prn_nest_bn *b, trn_net *net, const prn_nest *n, trn_err *err)
{
    memset(b, 0, sizeof *b);
    b->roles = prn_nest_bn_roles(n);
    if (!(b->off = calloc((size_t)n->ncap + 1, sizeof *b->off))) return trn_errf(err, "out of memory");
    for (int k = 0; k < n->ncap; k++) {
        if (trn_net_set_capacity(net, n->filters + (size_t)k * n->nlayers, err) != 0) {
            prn_nest_bn_free(b);
            return trn_err_prefix(err, "capacity %d", k + 1);
        }
        b->off[k + 1] = b->off[k] + trn_net_vectors_count(net, b->roles);
    }
    if (trn_net_set_capacity(net, NULL, err) != 0 || !(b->v = calloc(b->off[n->ncap] + 1, sizeof *b->v))) {
        prn_nest_bn_free(b);
        return trn_errf(err, "out of memory");
    }
    return 0;
}

int prn_nest_bn_keep(prn_nest_bn *b, trn_net *net, const prn_nest *n, int k, trn_err *err)
{
    if (k < 0 || k >= n->ncap) return trn_errf(err, "no capacity %d", k + 1);
    if (trn_net_set_capacity(net, n->filters + (size_t)k * n->nlayers, err) != 0)
        return trn_err_prefix(err, "capacity %d", k + 1);
    trn_net_vectors_get(net, b->roles, b->v + b->off[k]);
    return 0;
}

int prn_nest_bn_apply(const prn_nest_bn *b, trn_net *net, const prn_nest *n, int k, trn_err *err)
{
    if (k < 0 || k >= n->ncap) return trn_errf(err, "no capacity %d", k + 1);
    if (trn_net_set_capacity(net, n->filters + (size_t)k * n->nlayers, err) != 0)
        return trn_err_prefix(err, "capacity %d", k + 1);
    return trn_net_vectors_put(net, b->roles, b->v + b->off[k], err);
}

int prn_nest_bn_save(const prn_nest_bn *b, const prn_nest *n, const char *path, trn_err *err)
{
    size_t floats = b->off[n->ncap - 1], len = PRN_NEST_BN_HEADER + floats * sizeof(float);
    unsigned char *buf = malloc(len);
    if (!buf) return trn_errf(err, "out of memory");
    int32_t ver = 1, ncap = n->ncap - 1;
    uint32_t roles = b->roles;
    memcpy(buf, "CPBN", 4);
    memcpy(buf + 4, &ver, 4);
    memcpy(buf + 8, &ncap, 4);
    memcpy(buf + 12, &roles, 4);
    memcpy(buf + PRN_NEST_BN_HEADER, b->v, floats * sizeof(float));
    int rc = trn_write_file_atomic(path, buf, len, err);
    free(buf);
    return rc;
}
