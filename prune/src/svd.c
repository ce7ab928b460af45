/*
 * svd.c: low-rank factorisation of [connected] layers (MCDNN section
 * 4.1.1 after Xue et al.), through LAPACKE_sgesdd.
 *
 * A connected layer computes y = act(BN(W x) or W x + b) with W (M', M)
 * row-major (outputs, inputs), as the trainer's parameter table holds it.
 * With W = U S V^T (U (M', r), S (r), V^T (r, M), r = min(M, M')) the
 * rank-k approximation W_k = (U_k) (S_k V_k^T) becomes two layers:
 *   first  [connected] output=k activation=linear: weights S_k V_k^T
 *          (k, M), biases k zeros (Darknet's connected layer always has
 *          biases, so they are there to keep the file Darknet-loadable)
 *   second the original section (output M', its activation and batch
 *          norm, biases and BN statistics copied): weights U_k (M', k)
 * Parameters: k*M + k + k*M' + M' (+ 3*M' with batch norm), not the
 * k(M + M') + M' of docs/design.md: the k extra zeros are the first layer's
 * biases (prune/README.md).
 */
#include "prn_impl.h"
#include "techniques.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct svd_item {
    char text[96];
    const char *sel;
    int layer;   /* base layer */
    double factor; /* "Fx": compression asked; 0 for an explicit rank */
    int rank;
} svd_item;

static const char *const svd_help =
    "an SVD spec is SEL:Fx (the rank that compresses the layer's parameters F times) or SEL:rK "
    "(rank K), several joined by '+', e.g. fc#1:8x+fc#2:r32";

/* Parameters of a connected layer M -> M' (with batch norm or not), and of
 * its rank-k pair. */
static uint64_t fc_params(uint64_t m, uint64_t mp, int bn) { return mp * m + mp + (bn ? 3 * mp : 0); }
static uint64_t pair_params(uint64_t m, uint64_t mp, uint64_t k, int bn)
{
    return k * m + k + mp * k + mp + (bn ? 3 * mp : 0);
}

static int parse_items(const char *spec, svd_item *items, int max, trn_err *err)
{
    int n = 0;
    if (!spec || !*spec) return trn_errf(err, "empty SVD spec; %s", svd_help);
    for (const char *p = spec;;) {
        const char *plus = strchr(p, '+');
        size_t len = plus ? (size_t)(plus - p) : strlen(p);
        if (n == max) return trn_errf(err, "spec '%.200s' has more than %d layers", spec, max);
        svd_item *it = &items[n];
        if (len == 0 || len >= sizeof it->text)
            return trn_errf(err, "spec '%.200s' has an empty or too long item; %s", spec, svd_help);
        memcpy(it->text, p, len);
        it->text[len] = 0;
        char *colon = strrchr(it->text, ':');
        if (!colon) return trn_errf(err, "'%s' has no ':'; %s", it->text, svd_help);
        const char *r = colon + 1;
        char *end;
        it->factor = 0;
        it->rank = 0;
        if (r[0] == 'r') {
            long k = strtol(r + 1, &end, 10);
            if (end == r + 1 || *end || k < 1 || k > (1 << 24))
                return trn_errf(err, "'%s': the rank after 'r' must be an integer >= 1; %s",
                                it->text, svd_help);
            it->rank = (int)k;
        } else {
            double f = strtod(r, &end);
            if (end == r || strcmp(end, "x") != 0 || !(f > 1) || f > 1e6)
                return trn_errf(err, "'%s': '%s' is neither Fx (a compression F > 1, e.g. 8x) "
                                "nor rK; %s", it->text, r, svd_help);
            it->factor = f;
        }
        *colon = 0;
        it->sel = it->text;
        n++;
        if (!plus) break;
        p = plus + 1;
    }
    return n;
}

/* Restores "SEL:..." in an item's text after parse_items cut it. */
static const char *item_text(svd_item *it, char *buf, size_t size, const char *spec_item_rank)
{
    snprintf(buf, size, "%s:%s", it->sel, spec_item_rank);
    return buf;
}

/* W (mp, m) -> first (k, m) = S_k V_k^T, second (mp, k) = U_k. sv (min)
 * receives the singular values. */
static int factorise(const float *w, int mp, int m, int k, float *first, float *second, float *sv,
                     trn_err *err)
{
    int r = mp < m ? mp : m;
    float *a = malloc((size_t)mp * m * sizeof *a);
    float *u = malloc((size_t)mp * r * sizeof *u);
    float *vt = malloc((size_t)r * m * sizeof *vt);
    int rc = -1;
    if (!a || !u || !vt) {
        trn_errf(err, "out of memory for the SVD of a %dx%d matrix", mp, m);
        goto out;
    }
    memcpy(a, w, (size_t)mp * m * sizeof *a);
    /* a (mp, m) = u (mp, r) diag(sv) vt (r, m), row-major. */
    lapack_int info = LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', mp, m, a, m, sv, u, r, vt, m);
    if (info != 0) {
        trn_errf(err, "LAPACKE_sgesdd failed on the %dx%d weights (info %d: %s)", mp, m, (int)info,
                 info < 0 ? "bad argument" : "no convergence");
        goto out;
    }
    for (int i = 0; i < k; i++)
        for (int j = 0; j < m; j++) first[(size_t)i * m + j] = sv[i] * vt[(size_t)i * m + j];
    for (int i = 0; i < mp; i++)
        for (int j = 0; j < k; j++) second[(size_t)i * k + j] = u[(size_t)i * r + j];
    rc = 0;
out:
    free(a);
    free(u);
    free(vt);
    return rc;
}

#define MAX_ITEMS 16

int prn_svd(const trn_cfg *cfg, const trn_net *base, const char *spec, prn_variant *out,
            trn_err *err)
{
    memset(out, 0, sizeof *out);
    svd_item items[MAX_ITEMS];
    int n = parse_items(spec, items, MAX_ITEMS, err);
    if (n < 0) return -1;
    prn_plan *plan = prn_plan_create(cfg, err);
    if (!plan) return -1;
    int nl = prn_plan_layers(plan), rc = -1;
    int *map = malloc((size_t)nl * sizeof *map);
    int *m2 = malloc((size_t)(nl + MAX_ITEMS) * sizeof *m2);
    cJSON *jl = cJSON_CreateArray();
    trn_cfg *pair = NULL;
    char buf[200];
    if (!map || !m2 || !jl) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (trn_net_layers(base) != nl) {
        trn_errf(err, "the base network has %d layers but %s has %d", trn_net_layers(base),
                 trn_cfg_name(cfg), nl);
        goto out;
    }
    /* Resolve and choose ranks on the base. */
    for (int i = 0; i < n; i++) {
        svd_item *it = &items[i];
        const char *rk = it->sel + strlen(it->sel) + 1;
        item_text(it, buf, sizeof buf, rk);
        if ((it->layer = prn_select(plan, it->sel, err)) < 0) {
            trn_err_prefix(err, "spec '%.200s', item '%s'", spec, buf);
            goto out;
        }
        const prn_layer *l = prn_plan_layer(plan, it->layer);
        if (l->kind != PRN_KIND_CONNECTED) {
            trn_errf(err, "spec '%.200s', item '%s': L%d is a [%s] layer; SVD applies to "
                     "[connected] layers", spec, buf, it->layer, l->type);
            goto out;
        }
        for (int j = 0; j < i; j++)
            if (items[j].layer == it->layer) {
                trn_errf(err, "spec '%.200s': L%d is named twice ('%s')", spec, it->layer, buf);
                goto out;
            }
        uint64_t m = (uint64_t)l->in.c * l->in.h * l->in.w, mp = (uint64_t)l->out.c;
        int bn = trn_net_param(base, it->layer, TRN_PARAM_SCALES) != NULL;
        int rmax = (int)(m < mp ? m : mp);
        if (it->rank) {
            if (it->rank > rmax) {
                trn_errf(err, "spec '%.200s', item '%s': rank %d is above the largest rank of "
                         "L%d's %llux%llu weights (%d)", spec, buf, it->rank, it->layer,
                         (unsigned long long)mp, (unsigned long long)m, rmax);
                goto out;
            }
        } else {
            double budget = (double)fc_params(m, mp, bn) / it->factor;
            int k = 0;
            while (k < rmax && (double)pair_params(m, mp, (uint64_t)k + 1, bn) <= budget) k++;
            if (k < 1) {
                trn_errf(err, "spec '%.200s', item '%s': L%d (%llu inputs, %llu outputs, %llu "
                         "parameters) cannot be compressed %gx: rank 1 already needs %llu",
                         spec, buf, it->layer, (unsigned long long)m, (unsigned long long)mp,
                         (unsigned long long)fc_params(m, mp, bn), it->factor,
                         (unsigned long long)pair_params(m, mp, 1, bn));
                goto out;
            }
            it->rank = k;
        }
    }
    /* The cfg: the first factor inserted before each layer, from the last
     * layer up so earlier indexes stay valid; map follows the base layers. */
    if (!(out->cfg = trn_cfg_clone(cfg, err)) || !(pair = trn_cfg_new("svd", err))) goto out;
    if (trn_cfg_insert_section(pair, 0, "net", err) < 0 ||
        trn_cfg_insert_section(pair, 1, "connected", err) < 0 ||
        trn_cfg_set(pair, 1, "activation", "linear", err) ||
        trn_cfg_insert_section(pair, 2, "connected", err) < 0)
        goto out;
    for (int j = 0; j < nl; j++) map[j] = j;
    for (int pass = 0; pass < n; pass++) {
        int pick = -1; /* the item with the largest base layer not done yet */
        for (int i = 0; i < n; i++)
            if (items[i].rank > 0 && (pick < 0 || items[i].layer > items[pick].layer)) pick = i;
        svd_item *it = &items[pick];
        int cur = map[it->layer], s = cur + 1;
        if (trn_cfg_setf(pair, 1, "output", err, "%d", it->rank)) goto out;
        /* The second section is the original one, keys and all. */
        trn_cfg_remove_section(pair, 2, err);
        if (trn_cfg_insert_section(pair, 2, trn_cfg_section_type(out->cfg, s), err) < 0) goto out;
        for (int k = 0; k < trn_cfg_keys(out->cfg, s); k++)
            if (trn_cfg_set(pair, 2, trn_cfg_key(out->cfg, s, k), trn_cfg_value(out->cfg, s, k), err))
                goto out;
        if (prn_cfg_splice(out->cfg, cur, cur, pair, 1, 2, 1, m2, err) != 0) goto out;
        for (int j = 0; j < nl; j++) map[j] = m2[map[j]];
        it->rank = -it->rank; /* done */
    }
    for (int i = 0; i < n; i++) items[i].rank = -items[i].rank;
    if (prn_check_cfg(out->cfg, err) != 0) goto out;
    trn_net_opts o;
    prn_net_opts(&o, 0);
    if (!(out->net = trn_net_create(out->cfg, &o, err))) goto out;
    /* Unchanged layers; a factorised layer's second half keeps its shape
     * only at full rank, so the copy is overwritten below in every case. */
    cJSON *copies = prn_copy_layers(base, out->net, map, err);
    if (!copies) goto out;
    cJSON_Delete(copies);
    uint64_t fc_before = 0, fc_after = 0;
    for (int i = 0; i < nl; i++) {
        const prn_layer *l = prn_plan_layer(plan, i);
        if (l->kind == PRN_KIND_CONNECTED) fc_before += l->params;
    }
    fc_after = fc_before;
    char *desc = prn_strdupf("svd %s:", spec);
    for (int i = 0; i < n && desc; i++) {
        svd_item *it = &items[i];
        const prn_layer *l = prn_plan_layer(plan, it->layer);
        int m = l->in.c * l->in.h * l->in.w, mp = l->out.c, k = it->rank;
        int r = m < mp ? m : mp;
        int second = map[it->layer], first = second - 1;
        const trn_param *w = trn_net_param(base, it->layer, TRN_PARAM_WEIGHTS);
        const trn_param *w1 = trn_net_param(out->net, first, TRN_PARAM_WEIGHTS);
        const trn_param *b1 = trn_net_param(out->net, first, TRN_PARAM_BIASES);
        const trn_param *w2 = trn_net_param(out->net, second, TRN_PARAM_WEIGHTS);
        int bn = trn_net_param(base, it->layer, TRN_PARAM_SCALES) != NULL;
        float *sv = malloc((size_t)r * sizeof *sv);
        if (!sv) {
            trn_errf(err, "out of memory");
            free(desc);
            goto out;
        }
        if (factorise(w->data, mp, m, k, w1->data, w2->data, sv, err) != 0) {
            trn_err_prefix(err, "L%d", it->layer);
            free(sv);
            free(desc);
            goto out;
        }
        memset(b1->data, 0, b1->count * sizeof(float));
        /* Biases and BN statistics of the second layer come from the base. */
        for (int role = 0; role < TRN_PARAM_ROLE_COUNT; role++) {
            if (role == TRN_PARAM_WEIGHTS) continue;
            const trn_param *src = trn_net_param(base, it->layer, (trn_param_role)role);
            const trn_param *dst = trn_net_param(out->net, second, (trn_param_role)role);
            if (src && dst) memcpy(dst->data, src->data, src->count * sizeof(float));
        }
        /* The discarded energy: ||W - W_k||_F^2 = sum of the dropped s_i^2. */
        double kept = 0, total = 0;
        for (int j = 0; j < r; j++) {
            total += (double)sv[j] * sv[j];
            if (j < k) kept += (double)sv[j] * sv[j];
        }
        uint64_t pb = fc_params((uint64_t)m, (uint64_t)mp, bn);
        uint64_t pa = pair_params((uint64_t)m, (uint64_t)mp, (uint64_t)k, bn);
        fc_after = fc_after - pb + pa;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(jl, x);
        cJSON_AddStringToObject(x, "selector", it->sel);
        cJSON_AddNumberToObject(x, "layer", it->layer);
        cJSON_AddNumberToObject(x, "inputs", m);
        cJSON_AddNumberToObject(x, "outputs", mp);
        cJSON_AddNumberToObject(x, "rank", k);
        cJSON_AddNumberToObject(x, "max_rank", r);
        if (it->factor > 0) cJSON_AddNumberToObject(x, "compression_asked", it->factor);
        cJSON_AddNumberToObject(x, "params_before", (double)pb);
        cJSON_AddNumberToObject(x, "params_after", (double)pa);
        cJSON_AddNumberToObject(x, "compression", (double)pb / (double)pa);
        cJSON_AddNumberToObject(x, "relative_error", total > 0 ? sqrt((total - kept) / total) : 0);
        cJSON_AddItemToObject(x, "new_layers", prn_json_ints((int[]){first, second}, 2));
        free(sv);
        prn_appendf(&desc, "%s L%d %dx%d -> rank %d (%.1fx fewer parameters)", i ? ";" : "",
                    it->layer, mp, m, k, (double)pb / (double)pa);
    }
    if (!desc) {
        trn_errf(err, "out of memory");
        goto out;
    }
    out->description = desc;
    out->technique = TECHNIQUE_SVD;
    if (!(out->fields = cJSON_CreateObject())) {
        trn_errf(err, "out of memory");
        goto out;
    }
    cJSON_AddStringToObject(out->fields, "spec", spec);
    if (n == 1) { /* the manifest's typed "svd" field describes one layer */
        cJSON *one = cJSON_AddObjectToObject(out->fields, "svd");
        cJSON_AddNumberToObject(one, "layer", items[0].layer);
        cJSON_AddNumberToObject(one, "rank", items[0].rank);
    }
    cJSON_AddItemToObject(out->fields, "layers", jl);
    jl = NULL;
    cJSON_AddNumberToObject(out->fields, "connected_params_before", (double)fc_before);
    cJSON_AddNumberToObject(out->fields, "connected_params_after", (double)fc_after);
    cJSON_AddItemToObject(out->fields, "layer_map", prn_json_ints(map, nl));
    trn_net_set_seen(out->net, trn_net_seen(base));
    rc = 0;
out:
    if (rc != 0) prn_variant_free(out);
    cJSON_Delete(jl);
    trn_cfg_free(pair);
    free(map);
    free(m2);
    prn_plan_free(plan);
    return rc;
}
