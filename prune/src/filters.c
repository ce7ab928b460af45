/*
 * filters.c: filter pruning by selection. A pruned network keeps, in each
 * pruned [convolutional]/[connected] layer, a chosen list of its filters in
 * a chosen order; every layer that reads those channels (through pooling,
 * dropout and other channel-passing layers, and [route] concatenations)
 * keeps the matching input channels in the same order. Values are copied,
 * never recomputed, so a pruned network that keeps every filter in a new
 * order computes what the original computes (up to the summation order of
 * the layers that read the permuted channels).
 *
 * Refused: a pruned layer whose channels reach a [shortcut] (its element-
 * wise sum pairs channels of two layers), or the network output.
 */
#include "prn_impl.h"
#include "techniques.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The source layers one layer reads: a route its from[], a shortcut the
 * previous layer and from[0], others the previous layer (-1: the input). */
static int sources(const trn_layer_info *in, int *src)
{
    if (in->kind == TRN_LAYER_ROUTE) {
        for (int k = 0; k < in->n_from; k++) src[k] = in->from[k];
        return in->n_from;
    }
    src[0] = in->index - 1;
    if (in->kind == TRN_LAYER_SHORTCUT) {
        src[1] = in->from[0];
        return 2;
    }
    return 1;
}

trn_cfg *prn_filters_cfg(const trn_cfg *cfg, const trn_net *net, const prn_keep *keep, int nkeep,
                         trn_err *err)
{
    trn_cfg *out = trn_cfg_clone(cfg, err);
    if (!out) return NULL;
    for (int k = 0; k < nkeep; k++) {
        trn_layer_info info;
        if (trn_net_layer_info(net, keep[k].layer, &info) != 0 ||
            (info.kind != TRN_LAYER_CONVOLUTIONAL && info.kind != TRN_LAYER_CONNECTED)) {
            trn_errf(err, "layer %d is not a [convolutional] or [connected] layer: its filters cannot be pruned",
                     keep[k].layer);
            goto fail;
        }
        if (keep[k].n < 1 || keep[k].n > info.out.c) {
            trn_errf(err, "layer %d: keeping %d of its %d filters is not possible (1..%d)", keep[k].layer,
                     keep[k].n, info.out.c, info.out.c);
            goto fail;
        }
        const char *key = info.kind == TRN_LAYER_CONVOLUTIONAL ? "filters" : "output";
        if (trn_cfg_setf(out, keep[k].layer + 1, key, err, "%d", keep[k].n) != 0) goto fail;
    }
    return out;
fail:
    trn_cfg_free(out);
    return NULL;
}

/* chan[i]: for each output channel of layer i in dst, the channel of src
 * it carries (n[i] of them), or NULL when it carries src's channels as
 * they are. Built in layer order from keep and the kinds' channel rules. */
typedef struct chan_map {
    int **chan;
    int *n;
    int layers;
} chan_map;

static void chan_map_free(chan_map *m)
{
    for (int i = 0; m->chan && i < m->layers; i++) free(m->chan[i]);
    free(m->chan);
    free(m->n);
}

static int chan_map_build(const trn_net *src, const prn_keep *keep, int nkeep, chan_map *m, trn_err *err)
{
    int L = trn_net_layers(src);
    m->layers = L;
    m->chan = calloc((size_t)L, sizeof *m->chan);
    m->n = calloc((size_t)L, sizeof *m->n);
    if (!m->chan || !m->n) return trn_errf(err, "out of memory");
    for (int i = 0; i < L; i++) {
        trn_layer_info info;
        trn_net_layer_info(src, i, &info);
        m->n[i] = info.out.c;
        const prn_keep *kp = NULL;
        for (int k = 0; k < nkeep; k++)
            if (keep[k].layer == i) kp = &keep[k];
        if (kp) {
            if (!(m->chan[i] = malloc((size_t)kp->n * sizeof(int)))) return trn_errf(err, "out of memory");
            for (int j = 0; j < kp->n; j++) {
                if (kp->filters[j] < 0 || kp->filters[j] >= info.out.c)
                    return trn_errf(err, "layer %d has no filter %d (it has %d)", i, kp->filters[j], info.out.c);
                for (int q = 0; q < j; q++)
                    if (kp->filters[q] == kp->filters[j])
                        return trn_errf(err, "layer %d: filter %d is kept twice", i, kp->filters[j]);
                m->chan[i][j] = kp->filters[j];
            }
            m->n[i] = kp->n;
            continue;
        }
        const trn_kind_desc *d = trn_kind_desc_get(info.kind);
        int s[TRN_MAX_FROM + 1], ns = sources(&info, s);
        int changed = 0;
        for (int k = 0; k < ns; k++) changed |= s[k] >= 0 && m->chan[s[k]] != NULL;
        if (!changed || !d || d->channels == TRN_CHANNELS_OWN) continue;
        if (d->channels == TRN_CHANNELS_ADD)
            return trn_errf(err, "layer %d ([%s]) adds its inputs' channels element-wise: the filters of "
                                 "the layers it reads cannot be pruned (prune other layers)",
                            i, info.type);
        if (d->channels == TRN_CHANNELS_PASS) {
            int n = m->n[s[0]];
            if (!(m->chan[i] = malloc((size_t)n * sizeof(int)))) return trn_errf(err, "out of memory");
            memcpy(m->chan[i], m->chan[s[0]], (size_t)n * sizeof(int));
            m->n[i] = n;
            continue;
        }
        /* Concatenation: the sources' channels, each shifted by the number
         * of src channels before it. */
        int total = 0;
        for (int k = 0; k < ns; k++) total += m->n[s[k]];
        if (!(m->chan[i] = malloc((size_t)total * sizeof(int)))) return trn_errf(err, "out of memory");
        int at = 0, off = 0;
        for (int k = 0; k < ns; k++) {
            trn_layer_info si;
            trn_net_layer_info(src, s[k], &si);
            for (int j = 0; j < m->n[s[k]]; j++) m->chan[i][at++] = off + (m->chan[s[k]] ? m->chan[s[k]][j] : j);
            off += si.out.c;
        }
        m->n[i] = total;
    }
    if (m->chan[L - 1])
        return trn_errf(err, "the network's output (layer %d) would lose channels: its classifier cannot "
                             "be pruned", L - 1);
    return 0;
}

/* The parameter of (layer, role) in a table, or NULL. */
static const trn_param *param_of(const trn_param *p, int np, int layer, trn_param_role role)
{
    for (int k = 0; k < np; k++)
        if (p[k].layer == layer && p[k].role == role) return &p[k];
    return NULL;
}

int prn_filters_copy(const trn_net *src, trn_net *dst, const prn_keep *keep, int nkeep, trn_err *err)
{
    chan_map m = {0};
    int rc = chan_map_build(src, keep, nkeep, &m, err);
    int ns, nd;
    const trn_param *ps = trn_net_params(src, &ns), *pd = trn_net_params(dst, &nd);
    if (rc == 0 && trn_net_layers(dst) != trn_net_layers(src))
        rc = trn_errf(err, "the pruned network has %d layers, the original %d", trn_net_layers(dst),
                      trn_net_layers(src));
    for (int k = 0; rc == 0 && k < nd; k++) {
        const trn_param *d = &pd[k], *s = param_of(ps, ns, d->layer, d->role);
        trn_layer_info info;
        trn_net_layer_info(src, d->layer, &info);
        const int *oc = m.chan[d->layer]; /* output channels (rows), NULL: all */
        if (!s) {
            rc = trn_errf(err, "layer %d: the original has no %s", d->layer, trn_param_role_name(d->role));
            break;
        }
        if (d->role != TRN_PARAM_WEIGHTS) {
            /* A vector per output channel (biases, batch norm). */
            if ((int)d->count != m.n[d->layer] && oc) {
                rc = trn_errf(err, "layer %d: %s of %zu values for %d channels", d->layer,
                              trn_param_role_name(d->role), d->count, m.n[d->layer]);
                break;
            }
            if (!oc && d->count != s->count) {
                rc = trn_errf(err, "layer %d: %s of %zu values, the original has %zu", d->layer,
                              trn_param_role_name(d->role), d->count, s->count);
                break;
            }
            for (size_t j = 0; j < d->count; j++) d->data[j] = s->data[oc ? (size_t)oc[j] : j];
            continue;
        }
        /* Weights (rows, cols): rows are output channels; cols are the
         * input channels, each a block of `blk` values (conv: size*size;
         * connected: the input's h*w). */
        int in = d->layer - 1;
        const int *ic = in >= 0 ? m.chan[in] : NULL;
        trn_layer_info prev;
        int cin_src = in >= 0 && trn_net_layer_info(src, in, &prev) == 0 ? prev.out.c : info.in.c;
        int cin_dst = ic ? m.n[in] : cin_src;
        if (info.kind == TRN_LAYER_CONVOLUTIONAL && info.groups > 1 && ic) {
            rc = trn_errf(err, "layer %d is a grouped convolution (groups=%d): the channels it reads "
                               "cannot be pruned", d->layer, info.groups);
            break;
        }
        size_t blk = s->cols % cin_src == 0 ? (size_t)(s->cols / cin_src) : 0;
        if (!blk || (size_t)d->cols != blk * (size_t)cin_dst || d->rows != (oc ? m.n[d->layer] : s->rows)) {
            rc = trn_errf(err, "layer %d: the pruned weights are %dx%d, expected %dx%zu", d->layer, d->rows,
                          d->cols, oc ? m.n[d->layer] : s->rows, blk * (size_t)cin_dst);
            break;
        }
        for (int r = 0; r < d->rows; r++) {
            const float *sr = s->data + (size_t)(oc ? oc[r] : r) * (size_t)s->cols;
            float *dr = d->data + (size_t)r * (size_t)d->cols;
            for (int c = 0; c < cin_dst; c++)
                memcpy(dr + (size_t)c * blk, sr + (size_t)(ic ? ic[c] : c) * blk, blk * sizeof(float));
        }
    }
    chan_map_free(&m);
    return rc;
}

/* The L2 norm of a row of n weights. */
static double row_norm(const float *row, int n)
{
    double s = 0;
    for (int c = 0; c < n; c++) s += (double)row[c] * row[c];
    return sqrt(s);
}

/* The mean L2 norm of a weights parameter's rows. */
static double mean_row_norm(const trn_param *w)
{
    double sum = 0;
    for (int r = 0; r < w->rows; r++) sum += row_norm(w->data + (size_t)r * (size_t)w->cols, w->cols);
    return w->rows > 0 ? sum / w->rows : 0;
}

int prn_filters_rescale(trn_net *net, const trn_net *ref, int *changed, trn_err *err)
{
    int n = 0;
    for (int l = 0; l < trn_net_layers(net); l++) {
        const trn_param *w = trn_net_param(net, l, TRN_PARAM_WEIGHTS);
        const trn_param *m = trn_net_param(net, l, TRN_PARAM_ROLLING_MEAN);
        const trn_param *v = trn_net_param(net, l, TRN_PARAM_ROLLING_VARIANCE);
        if (!w || !m || !v) continue; /* no batch norm: the scale of the weights is the function's */
        const trn_param *rw = trn_net_param(ref, l, TRN_PARAM_WEIGHTS);
        if (!rw || !trn_net_param(ref, l, TRN_PARAM_ROLLING_MEAN))
            return trn_errf(err, "layer %d: the reference network has no batch-normalised weights there", l);
        if ((size_t)w->rows != m->count || (size_t)w->rows != v->count)
            return trn_errf(err, "layer %d: %d filters but %zu batch-norm statistics", l, w->rows, m->count);
        double target = mean_row_norm(rw);
        for (int r = 0; r < w->rows; r++) {
            if (w->mask || m->mask || v->mask) {
                /* A frozen filter keeps its bytes (freeze-&-grow). */
                int frozen = 0;
                for (int c = 0; c < w->cols && !frozen; c++)
                    frozen = w->mask && w->mask[(size_t)r * (size_t)w->cols + (size_t)c] == 0;
                if (frozen || (m->mask && m->mask[r] == 0) || (v->mask && v->mask[r] == 0)) continue;
            }
            float *row = w->data + (size_t)r * (size_t)w->cols;
            double s = row_norm(row, w->cols);
            if (!(s > 0) || !(target > 0)) continue; /* a zero filter has no direction to keep */
            double k = target / s;
            for (int c = 0; c < w->cols; c++) row[c] = (float)(row[c] * k);
            m->data[r] = (float)(m->data[r] * k);
            v->data[r] = (float)(v->data[r] * k * k);
            n++;
        }
    }
    if (changed) *changed = n;
    return 0;
}

int prn_filters_next_share(const trn_net *src, const prn_keep *keep, int nkeep, double *share, trn_err *err)
{
    /* Two channel maps: a keeps the kept filters, b the dropped ones (of
     * the layers that drop any). A reader's input channel that comes from
     * a pruned layer is in exactly one of them (kept: a, dropped: b); one
     * that comes from elsewhere is in both. */
    chan_map a = {0}, b = {0};
    prn_keep *drop = calloc((size_t)(nkeep > 0 ? nkeep : 1), sizeof *drop);
    int **dbuf = calloc((size_t)(nkeep > 0 ? nkeep : 1), sizeof *dbuf), nd = 0, np;
    int rc = drop && dbuf ? chan_map_build(src, keep, nkeep, &a, err) : trn_errf(err, "out of memory");
    for (int k = 0; rc == 0 && k < nkeep; k++) {
        trn_layer_info in;
        trn_net_layer_info(src, keep[k].layer, &in);
        char *is = calloc((size_t)in.out.c, 1);
        int *d = malloc((size_t)in.out.c * sizeof *d), n = 0;
        if (!is || !d) {
            free(is), free(d);
            rc = trn_errf(err, "out of memory");
            break;
        }
        for (int j = 0; j < keep[k].n; j++) is[keep[k].filters[j]] = 1; /* in range: a's build checked */
        for (int f = 0; f < in.out.c; f++)
            if (!is[f]) d[n++] = f;
        free(is);
        if (n == 0) {
            free(d);
            continue;
        }
        dbuf[nd] = d;
        drop[nd++] = (prn_keep){keep[k].layer, n, d};
    }
    if (rc == 0) rc = chan_map_build(src, drop, nd, &b, err);
    const trn_param *p = trn_net_params(src, &np);
    double kept = 0, total = 0;
    for (int k = 0; rc == 0 && k < np; k++) {
        if (p[k].role != TRN_PARAM_WEIGHTS || p[k].layer < 1) continue;
        const int *ia = a.chan[p[k].layer - 1], *ib = b.chan[p[k].layer - 1];
        if (!ia && !ib) continue; /* it reads no pruned layer */
        trn_layer_info prev;
        int c = trn_net_layer_info(src, p[k].layer - 1, &prev) == 0 ? prev.out.c : 0;
        if (c < 1 || p[k].cols % c) {
            rc = trn_errf(err, "layer %d: %d weights per row do not split into %d input channels", p[k].layer,
                          p[k].cols, c);
            break;
        }
        size_t blk = (size_t)(p[k].cols / c);
        char *in = calloc((size_t)c, 1); /* bit 1: in a, bit 2: in b */
        if (!in) {
            rc = trn_errf(err, "out of memory");
            break;
        }
        for (int j = 0; j < (ia ? a.n[p[k].layer - 1] : c); j++) in[ia ? ia[j] : j] |= 1;
        for (int j = 0; j < (ib ? b.n[p[k].layer - 1] : c); j++) in[ib ? ib[j] : j] |= 2;
        for (int r = 0; r < p[k].rows; r++)
            for (int ch = 0; ch < c; ch++) {
                if (in[ch] == 3 || in[ch] == 0) continue; /* not a pruned layer's channel */
                const float *w = p[k].data + (size_t)r * (size_t)p[k].cols + (size_t)ch * blk;
                double s = 0;
                for (size_t q = 0; q < blk; q++) s += (double)w[q] * w[q];
                total += s;
                if (in[ch] == 1) kept += s;
            }
        free(in);
    }
    chan_map_free(&a);
    chan_map_free(&b);
    for (int k = 0; k < nd; k++) free(dbuf[k]);
    free(dbuf);
    free(drop);
    if (rc == 0) *share = total > 0 ? kept / total : 1;
    return rc;
}

int prn_filters_net(const trn_cfg *cfg, const trn_net *src, const prn_keep *keep, int nkeep, trn_cfg **pcfg,
                       trn_net **pnet, trn_err *err)
{
    trn_net_opts no;
    prn_net_opts(&no, 0);
    *pnet = NULL;
    if (!(*pcfg = prn_filters_cfg(cfg, src, keep, nkeep, err))) return -1;
    if (!(*pnet = trn_net_create(*pcfg, &no, err)) || prn_filters_copy(src, *pnet, keep, nkeep, err) != 0) {
        trn_net_free(*pnet);
        trn_cfg_free(*pcfg);
        *pnet = NULL, *pcfg = NULL;
        return -1;
    }
    return 0;
}

/* The keep list of prn_filters_like: every ranked layer whose count in
 * `like` is below the base's, its like-count most important filters. *n:
 * the entries. -1 with err when like is not the same network pruned. */
static int like_keeps(const trn_net *base, const prn_ranking *r, const trn_net *like, prn_keep *kp, int *n,
                      trn_err *err)
{
    if (trn_net_layers(like) != trn_net_layers(base))
        return trn_errf(err, "the model to match has %d layers, the base %d: give a pruned copy of the base's "
                             "network (a lasso export)", trn_net_layers(like), trn_net_layers(base));
    *n = 0;
    for (int l = 0; l < r->nlayers; l++) {
        const prn_rank_layer *L = &r->layers[l];
        trn_layer_info li;
        if (trn_net_layer_info(like, L->layer, &li) != 0 || li.kind != L->kind)
            return trn_errf(err, "layer %d: not of the base's kind in the model to match: give a pruned copy of "
                                 "the base's network", L->layer);
        if (li.out.c < 1 || li.out.c > L->filters)
            return trn_errf(err, "layer %d: the model to match has %d filters, the base %d: it must keep 1..%d",
                            L->layer, li.out.c, L->filters, L->filters);
        if (li.out.c < L->filters) kp[(*n)++] = (prn_keep){L->layer, li.out.c, L->order};
    }
    return 0;
}

/* meta.json's technique_fields and description of prn_filters_like. */
static int like_describe(const trn_net *base, const prn_ranking *r, const prn_keep *kp, int n, prn_variant *v,
                         trn_err *err)
{
    trn_net_totals tb, ta;
    trn_net_get_totals(base, &tb);
    trn_net_get_totals(v->net, &ta);
    char *desc = prn_strdupf("%s filter pruning to the model's counts:", prn_rank_method_name(r->method));
    cJSON *jl = cJSON_CreateArray();
    if (!(v->fields = cJSON_CreateObject()) || !jl) desc = (free(desc), NULL);
    for (int k = 0; k < n && desc; k++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(jl, x);
        cJSON_AddNumberToObject(x, "layer", kp[k].layer);
        cJSON_AddNumberToObject(x, "filters_after", kp[k].n);
        cJSON_AddItemToObject(x, "kept", prn_json_ints(kp[k].filters, kp[k].n));
        prn_appendf(&desc, " L%d ->%d filters;", kp[k].layer, kp[k].n);
    }
    if (desc)
        prn_appendf(&desc, " MACs %.1f%% fewer, parameters %.1f%% fewer",
                    tb.macs ? 100.0 * (1 - (double)ta.macs / tb.macs) : 0,
                    tb.params ? 100.0 * (1 - (double)ta.params / tb.params) : 0);
    if (!desc) {
        cJSON_Delete(jl);
        return trn_errf(err, "out of memory");
    }
    v->description = desc;
    cJSON_AddStringToObject(v->fields, "method", prn_rank_method_name(r->method));
    cJSON_AddItemToObject(v->fields, "layers", jl);
    cJSON_AddNumberToObject(v->fields, "macs_before", (double)tb.macs);
    cJSON_AddNumberToObject(v->fields, "macs_after", (double)ta.macs);
    return 0;
}

int prn_filters_like(const trn_cfg *cfg, const trn_net *base, const prn_ranking *r, const trn_net *like,
                     prn_variant *out, trn_err *err)
{
    memset(out, 0, sizeof *out);
    prn_keep *kp = calloc((size_t)(r->nlayers > 0 ? r->nlayers : 1), sizeof *kp);
    int n = 0, rc = -1;
    if (!kp) return trn_errf(err, "out of memory");
    if (like_keeps(base, r, like, kp, &n, err) == 0 && prn_filters_net(cfg, base, kp, n, &out->cfg, &out->net, err) == 0 &&
        like_describe(base, r, kp, n, out, err) == 0) {
        out->technique = TECHNIQUE_PRUNED;
        trn_net_set_seen(out->net, trn_net_seen(base));
        rc = 0;
    }
    if (rc != 0) prn_variant_free(out);
    free(kp);
    return rc;
}
