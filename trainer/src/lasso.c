/*
 * lasso.c: group-lasso regularisation of [convolutional] layers (MeDNN's
 * SMCD, docs/papers.md, MeDNN section VI-A, eq. 2-4; Wen et al.'s
 * structured sparsity learning). The penalty is
 *     sum over conv layers l:  lf * sum_filters ||g|| + lc * sum_channels ||g||
 *                            + ls * sum_shapes ||g||
 * with the L2 norm of each group (docs/targets.md: the paper prints the norm
 * without its square).
 *
 * Groups of a layer with weights W (filters x c*size*size):
 *   filter k   without batch norm: row k of W and bias k; with batch norm:
 *              the batch-norm scale and shift (gamma_k, beta_k). Under batch
 *              norm the filter's own weights are scale-invariant (a penalty
 *              on them shrinks W without changing the function and never
 *              reaches zero), so the group that switches the filter off is
 *              the one after the normalisation: gamma_k = beta_k = 0 gives
 *              act(0) = 0 for linear, relu and leaky, the output channel is
 *              exactly zero and the export drops it exactly.
 *   channel c  the size*size columns of input channel c in every filter.
 *   shape j    column j of W (one (c, y, x) position in every filter).
 * Grouped convolutions (groups > 1) are left alone.
 *
 * Solver (an approximation, named in trainer/README.md): after each SGD
 * step, a proximal step of the penalty, group soft-thresholding
 *     w_g <- w_g * max(0, 1 - rate * lambda / ||w_g||),
 * applied to the filter, channel and shape groups one kind after the other
 * (the groups overlap, so the exact proximal operator of their sum has no
 * closed form). Unlike the subgradient step of the paper, it reaches exact
 * zeros, so no zero threshold is needed at export. A parameter with a
 * freeze mask (trn_net_set_mask) is not touched. Serial and in a fixed
 * order: the same bytes for any thread count.
 */
#include "net.h"
#include "trn.h"

#include <math.h>

static trn_param *role_param(trn_net *net, const trn_layer *l, trn_param_role r)
{
    for (int k = 0; k < l->param_count; k++) {
        trn_param *p = &net->params[l->param_first + k];
        if (p->role == r) return p;
    }
    return NULL;
}

/* Soft-thresholds the group of n strided runs: element (i, j) is
 * a[i * stride + j] for i < n, j < len, plus (when b) b[0] and (when c) c[0]. */
static void shrink(float *a, int n, size_t stride, int len, float *b, float *c, double t)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < len; j++) s += (double)a[i * stride + j] * a[i * stride + j];
    if (b) s += (double)b[0] * b[0];
    if (c) s += (double)c[0] * c[0];
    double norm = sqrt(s);
    float f = norm > t ? (float)(1.0 - t / norm) : 0.0f;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < len; j++) a[i * stride + j] *= f;
    if (b) b[0] *= f;
    if (c) c[0] *= f;
}

int trn_lasso_active(const trn_net *net)
{
    const trn_net_config *c = &net->cfg;
    return c->lasso_filter > 0 || c->lasso_channel > 0 || c->lasso_shape > 0;
}

void trn_lasso_prox(trn_net *net, float rate)
{
    const trn_net_config *c = &net->cfg;
    if (!trn_lasso_active(net) || rate <= 0) return;
    for (int i = 0; i < net->n; i++) {
        trn_layer *l = &net->layers[i];
        if (l->ops->desc.kind != TRN_LAYER_CONVOLUTIONAL) continue;
        trn_param *w = role_param(net, l, TRN_PARAM_WEIGHTS);
        trn_param *bias = role_param(net, l, TRN_PARAM_BIASES);
        trn_param *sc = role_param(net, l, TRN_PARAM_SCALES);
        if (!w || !bias || w->mask || bias->mask || (sc && sc->mask) || !w->update) continue;
        trn_layer_info info;
        if (trn_net_layer_info(net, i, &info) != 0 || info.groups > 1) continue;
        int rows = w->rows, cols = w->cols, ss = info.size * info.size;
        if (rows != l->out.c || (size_t)cols != (size_t)l->in.c * ss) continue;
        double lr = (double)rate * l->lr_scale;
        if (c->lasso_filter > 0) {
            double t = lr * c->lasso_filter;
            for (int k = 0; k < rows; k++) {
                if (sc) shrink(sc->data + k, 1, 1, 1, bias->data + k, NULL, t);
                else shrink(w->data + (size_t)k * cols, 1, 0, cols, bias->data + k, NULL, t);
            }
        }
        if (c->lasso_channel > 0) {
            double t = lr * c->lasso_channel;
            for (int ch = 0; ch < l->in.c; ch++)
                shrink(w->data + (size_t)ch * ss, rows, (size_t)cols, ss, NULL, NULL, t);
        }
        if (c->lasso_shape > 0) {
            double t = lr * c->lasso_shape;
            for (int j = 0; j < cols; j++) shrink(w->data + j, rows, (size_t)cols, 1, NULL, NULL, t);
        }
    }
}
