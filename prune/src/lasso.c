/*
 * lasso.c: the dense export of a group-lasso-trained network (MeDNN's SMCD,
 * docs/papers.md, MeDNN section VI-A; the training half is
 * trainer/src/lasso.c). Filters and input channels whose groups training
 * drove to exactly zero are removed, and the result is an ordinary, smaller
 * Darknet model.
 *
 * A channel k between a producer [convolutional] layer P and the one layer
 * C that reads it (through [maxpool], [avgpool] and [dropout] layers that
 * nobody else reads; C a [convolutional] or [connected] layer) is removed
 * when
 *   - P's filter k is dead: its batch-norm scale and shift (or, without
 *     batch norm, its weights row and bias) are all zero and P's activation
 *     maps 0 to 0 (linear, relu, leaky), so the channel is exactly zero; or
 *   - C does not use it: C's weights on the channel (its channel group; for
 *     a connected layer the channel's h*w columns) are all zero.
 * Either way the network computes the same function (up to float
 * rounding of sums with fewer zero terms). At least one channel is kept.
 * A channel read by a [route] or [shortcut], or the network's output, is
 * never removed.
 *
 * Shape-wise (column) sparsity cannot shrink a dense convolution; it is
 * reported, not exported: the zero columns of every exported layer and the
 * MACs an im2col that skipped them would save (docs/targets.md section 5).
 */
#include "prn_impl.h"
#include "techniques.h"

#include <stdlib.h>
#include <string.h>

typedef struct lay {
    trn_layer_info in;
    int readers;  /* layers that read this one's output */
    int consumer; /* producer conv: the layer C that reads its channels, or -1 */
    int nkeep;    /* producer: channels kept */
    int dead, unused;
    unsigned char *keep; /* producer: out.c flags, NULL: all kept */
    int in_from;  /* consumer: the producer whose channels it reads, or -1 */
} lay;

static int all_zero(const float *a, int n, size_t stride, int len)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < len; j++)
            if (a[i * stride + j] != 0.0f) return 0;
    return 1;
}

static int zero_maps_to_zero(trn_activation a)
{
    return a == TRN_ACT_LINEAR || a == TRN_ACT_RELU || a == TRN_ACT_LEAKY;
}

/* Filter k of conv layer i is dead (its output channel exactly zero). */
static int filter_dead(const trn_net *net, const lay *L, int i, int k)
{
    if (!zero_maps_to_zero(L[i].in.activation)) return 0;
    const trn_param *b = trn_net_param(net, i, TRN_PARAM_BIASES), *s = trn_net_param(net, i, TRN_PARAM_SCALES);
    const trn_param *w = trn_net_param(net, i, TRN_PARAM_WEIGHTS);
    if (!b || !w || b->data[k] != 0.0f) return 0;
    if (s) return s->data[k] == 0.0f;
    return all_zero(w->data + (size_t)k * w->cols, 1, 0, w->cols);
}

/* Channel k of consumer c (reading `per` values per channel) is unused. */
static int channel_unused(const trn_net *net, int c, int k, int per)
{
    const trn_param *w = trn_net_param(net, c, TRN_PARAM_WEIGHTS);
    if (!w) return 0;
    return all_zero(w->data + (size_t)k * per, w->rows, (size_t)w->cols, per);
}

/* Copies src's parameter into dst's, keeping the rows whose flag in rkeep
 * is set (NULL: all) and the column blocks of `per` columns whose flag in
 * ckeep is set (NULL: all). Vectors (rows == 1) are filtered by rkeep on
 * their elements. */
static void copy_sliced(const trn_param *s, const trn_param *d, const unsigned char *rkeep,
                        const unsigned char *ckeep, int per)
{
    if (s->rows == 1 && d->rows == 1 && s->role != TRN_PARAM_WEIGHTS) {
        size_t o = 0;
        for (size_t i = 0; i < s->count; i++)
            if (!rkeep || rkeep[i]) d->data[o++] = s->data[i];
        return;
    }
    size_t o = 0;
    for (int r = 0; r < s->rows; r++) {
        if (rkeep && !rkeep[r]) continue;
        for (int cb = 0; cb < s->cols / per; cb++) {
            if (ckeep && !ckeep[cb]) continue;
            memcpy(d->data + o, s->data + (size_t)r * s->cols + (size_t)cb * per, (size_t)per * sizeof(float));
            o += (size_t)per;
        }
    }
}

/* Zero columns of conv layer i's weights (all filters zero there). */
static int zero_columns(const trn_net *net, int i)
{
    const trn_param *w = trn_net_param(net, i, TRN_PARAM_WEIGHTS);
    int z = 0;
    for (int j = 0; w && j < w->cols; j++) z += all_zero(w->data + j, w->rows, (size_t)w->cols, 1);
    return z;
}

int prn_lasso(const trn_cfg *cfg, const trn_net *base, prn_variant *out, trn_err *err)
{
    memset(out, 0, sizeof *out);
    int nl = trn_net_layers(base), rc = -1;
    lay *L = calloc((size_t)nl, sizeof *L);
    cJSON *jl = NULL;
    if (!L) return trn_errf(err, "out of memory");
    for (int i = 0; i < nl; i++) {
        if (trn_net_layer_info(base, i, &L[i].in) != 0) {
            trn_errf(err, "L%d: no layer information", i);
            goto out;
        }
        L[i].consumer = L[i].in_from = -1;
    }
    for (int j = 0; j < nl; j++) {
        trn_layer_kind k = L[j].in.kind;
        if (k == TRN_LAYER_ROUTE || k == TRN_LAYER_SHORTCUT) {
            for (int f = 0; f < L[j].in.n_from; f++) L[L[j].in.from[f]].readers++;
            if (k == TRN_LAYER_SHORTCUT && j > 0) L[j - 1].readers++;
        } else if (j > 0) {
            L[j - 1].readers++;
        }
    }
    /* Producers, their consumers, the channels kept. */
    int changed = 0;
    for (int p = 0; p < nl; p++) {
        lay *P = &L[p];
        if (P->in.kind != TRN_LAYER_CONVOLUTIONAL || P->in.groups > 1 || P->readers != 1) continue;
        int c = p + 1;
        while (c < nl && (L[c].in.kind == TRN_LAYER_MAXPOOL || L[c].in.kind == TRN_LAYER_AVGPOOL ||
                          L[c].in.kind == TRN_LAYER_DROPOUT) && L[c].readers == 1)
            c++;
        if (c >= nl || L[c - 1].readers != 1) continue;
        int conv = L[c].in.kind == TRN_LAYER_CONVOLUTIONAL;
        if (!(conv && L[c].in.groups <= 1) && L[c].in.kind != TRN_LAYER_CONNECTED) continue;
        if (L[c].in.in.c != P->in.out.c) continue;
        int per = conv ? L[c].in.size * L[c].in.size : L[c].in.in.h * L[c].in.in.w;
        int n = P->in.out.c;
        if (!(P->keep = malloc((size_t)n))) {
            trn_errf(err, "out of memory");
            goto out;
        }
        P->nkeep = 0;
        for (int k = 0; k < n; k++) {
            int d = filter_dead(base, L, p, k), u = channel_unused(base, c, k, per);
            P->keep[k] = !(d || u);
            P->dead += d;
            P->unused += u && !d;
            P->nkeep += P->keep[k];
        }
        if (P->nkeep == 0) P->keep[0] = 1, P->nkeep = 1;
        P->consumer = c;
        L[c].in_from = p;
        changed |= P->nkeep < n;
    }
    /* The cfg: fewer filters; the consumers' inputs follow from the shapes. */
    if (!(out->cfg = trn_cfg_clone(cfg, err))) goto out;
    for (int p = 0; p < nl; p++)
        if (L[p].keep && trn_cfg_setf(out->cfg, p + 1, "filters", err, "%d", L[p].nkeep)) goto out;
    if (prn_check_cfg(out->cfg, err) != 0) goto out;
    trn_net_opts o;
    prn_net_opts(&o, 0);
    if (!(out->net = trn_net_create(out->cfg, &o, err))) goto out;
    if (trn_net_layers(out->net) != nl) {
        trn_errf(err, "the exported network has %d layers instead of %d", trn_net_layers(out->net), nl);
        goto out;
    }
    for (int i = 0; i < nl; i++) {
        const unsigned char *rk = L[i].keep, *ck = L[i].in_from >= 0 ? L[L[i].in_from].keep : NULL;
        int per = L[i].in.kind == TRN_LAYER_CONVOLUTIONAL ? L[i].in.size * L[i].in.size
                                                         : L[i].in.in.h * L[i].in.in.w;
        for (int r = 0; r < TRN_PARAM_ROLE_COUNT; r++) {
            const trn_param *s = trn_net_param(base, i, (trn_param_role)r), *d = trn_net_param(out->net, i, (trn_param_role)r);
            if (!s || !d) continue;
            if (r == TRN_PARAM_WEIGHTS && L[i].in.kind == TRN_LAYER_CONNECTED) rk = NULL;
            if (r == TRN_PARAM_WEIGHTS) copy_sliced(s, d, rk, ck, per > 0 ? per : 1);
            else copy_sliced(s, d, L[i].in.kind == TRN_LAYER_CONNECTED ? NULL : rk, NULL, 1);
        }
    }
    /* What was removed and what shape sparsity leaves on the table. */
    trn_net_totals tb, ta;
    trn_net_get_totals(base, &tb);
    trn_net_get_totals(out->net, &ta);
    if (!(jl = cJSON_CreateArray()) || !(out->fields = cJSON_CreateObject())) {
        trn_errf(err, "out of memory");
        goto out;
    }
    double col_macs = 0; /* MACs of the exported convs an im2col could skip */
    char *desc = prn_strdupf("lasso export:");
    for (int i = 0; i < nl && desc; i++) {
        if (L[i].in.kind != TRN_LAYER_CONVOLUTIONAL) continue;
        trn_layer_info ai;
        trn_net_layer_info(out->net, i, &ai);
        const trn_param *w = trn_net_param(out->net, i, TRN_PARAM_WEIGHTS);
        int zc = zero_columns(out->net, i), cols = w ? w->cols : 0;
        if (cols) col_macs += (double)ai.macs * zc / cols;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(jl, x);
        cJSON_AddNumberToObject(x, "layer", i);
        cJSON_AddNumberToObject(x, "filters_before", L[i].in.out.c);
        cJSON_AddNumberToObject(x, "filters_after", ai.out.c);
        cJSON_AddNumberToObject(x, "dead_filters", L[i].dead);
        cJSON_AddNumberToObject(x, "unused_channels", L[i].unused);
        cJSON_AddNumberToObject(x, "channels_in_after", ai.in.c);
        cJSON_AddNumberToObject(x, "zero_columns", zc);
        cJSON_AddNumberToObject(x, "columns", cols);
        cJSON_AddNumberToObject(x, "macs_before", (double)L[i].in.macs);
        cJSON_AddNumberToObject(x, "macs_after", (double)ai.macs);
        if (L[i].keep && L[i].nkeep < L[i].in.out.c)
            prn_appendf(&desc, " L%d %d->%d filters;", i, L[i].in.out.c, L[i].nkeep);
    }
    if (!desc) {
        trn_errf(err, "out of memory");
        goto out;
    }
    prn_appendf(&desc, " MACs %.1f%% fewer, parameters %.1f%% fewer",
                tb.macs ? 100.0 * (1 - (double)ta.macs / tb.macs) : 0,
                tb.params ? 100.0 * (1 - (double)ta.params / tb.params) : 0);
    if (!changed) prn_appendf(&desc, " (no group was zero: nothing removed)");
    if (!desc) {
        trn_errf(err, "out of memory");
        goto out;
    }
    out->description = desc;
    out->technique = TECHNIQUE_LASSO;
    cJSON_AddStringToObject(out->fields, "method", "group-lasso");
    cJSON_AddItemToObject(out->fields, "layers", jl);
    jl = NULL;
    cJSON_AddNumberToObject(out->fields, "macs_before", (double)tb.macs);
    cJSON_AddNumberToObject(out->fields, "macs_after", (double)ta.macs);
    cJSON_AddNumberToObject(out->fields, "params_before", (double)tb.params);
    cJSON_AddNumberToObject(out->fields, "params_after", (double)ta.params);
    cJSON_AddNumberToObject(out->fields, "shape_sparsity_macs_not_exported", col_macs);
    trn_net_set_seen(out->net, trn_net_seen(base));
    rc = 0;
out:
    if (rc != 0) prn_variant_free(out);
    cJSON_Delete(jl);
    for (int i = 0; L && i < nl; i++) free(L[i].keep);
    free(L);
    return rc;
}
