/*
 * sbs.c: FlexDNN's collective-importance filter ranking (the thesis
 * section 4.3.1.2, docs/papers.md; docs/targets.md 2.1): per
 * convolutional layer, sequential backward selection (SBS) over its
 * filters, scored by the validation accuracy of an early exit that reads
 * the layer's remaining filters.
 *
 * The thesis: keep `unranked` (all filters) and `ranked` (empty); for
 * every f in unranked, drop f, fine-tune an exit on the remaining filters'
 * maps, record its validation accuracy; the f whose removal leaves the
 * highest accuracy is the least important: it goes to the top of ranked
 * for good. Stop when fewer than 1/5 of the layer's filters remain (those
 * count as equally important). About 0.48 N^2 exit fine-tunings per layer.
 *
 * Approximations (docs/design.md allows them; recorded in the result):
 * - The exit is a linear softmax classifier on the layer's output map
 *   max-pooled to pool_to x pool_to, computed once for `images` training
 *   images (augmented, from the training stream) and the valid split, and
 *   standardised per feature (train mean and deviation): dropping a filter
 *   sets its features to the mean (0 after standardisation).
 * - refit = 0 (the default): one fine-tune per round (the exit on the
 *   current unranked set, warm-started), and every candidate is scored
 *   with that exit and the candidate's features removed, without a refit
 *   of its own ("score several candidates per fine-tune"). refit = E > 0:
 *   every candidate gets its own fine-tune of E epochs (the thesis's
 *   O(N^2)).
 * - drop = k > 1: the k best candidates of a round leave together ("drop a
 *   batch of filters per round").
 * Ties (equal valid accuracy) go to the lower valid log-loss, then to the
 * later filter. Everything runs on one thread in a fixed order: the same
 * bytes for any thread count.
 *
 * Beside the SBS order, the same exit gives the accuracy curve of each
 * ranking: acc(k), the refit exit's valid accuracy on the k filters the
 * ranking keeps, for SBS (measured every round) and for the L1 order
 * (one refit per k), for the thesis's Figure 4.6 comparison.
 */
#include "prn_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void prn_sbs_opts_defaults(prn_sbs_opts *o)
{
    memset(o, 0, sizeof *o);
    o->images = 2048;
    o->pool_to = 4;
    o->epochs = 3;
    o->first_epochs = 10;
    o->refit = 0;
    o->drop = 1;
    o->stop = 0.2;
    o->learning_rate = 0.02f;
}

/* ---- cached, pooled, standardised features of one layer ----------------------- */

typedef struct feat {
    int c, p2;       /* channels, pooled positions per channel */
    int d;           /* c * p2 */
    size_t n, nv;    /* train and valid images */
    float *x, *xv;   /* (n, d), (nv, d) */
    int *y, *yv;
} feat;

static void feat_free(feat *f)
{
    free(f->x);
    free(f->xv);
    free(f->y);
    free(f->yv);
    memset(f, 0, sizeof *f);
}

/* Max-pools one image's (c, h, w) map into blocks of side s: (c, ph, pw). */
static void pool_map(const float *m, int c, int h, int w, int s, float *out)
{
    int ph = (h + s - 1) / s, pw = (w + s - 1) / s;
    for (int ch = 0; ch < c; ch++)
        for (int by = 0; by < ph; by++)
            for (int bx = 0; bx < pw; bx++) {
                float v = -INFINITY;
                for (int y = by * s; y < (by + 1) * s && y < h; y++)
                    for (int x = bx * s; x < (bx + 1) * s && x < w; x++) {
                        float u = m[((size_t)ch * h + y) * w + x];
                        if (u > v) v = u;
                    }
                *out++ = v;
            }
}

/* ---- the linear exit ---------------------------------------------------------- */

typedef struct head {
    int d, C;
    float *w, *b;    /* (C, d), (C) */
    float *vw, *vb;  /* momentum */
} head;

static int head_init(head *h, int d, int C)
{
    h->d = d, h->C = C;
    h->w = calloc((size_t)C * d, sizeof *h->w);
    h->b = calloc((size_t)C, sizeof *h->b);
    h->vw = calloc((size_t)C * d, sizeof *h->vw);
    h->vb = calloc((size_t)C, sizeof *h->vb);
    return h->w && h->b && h->vw && h->vb ? 0 : -1;
}

static void head_free(head *h)
{
    free(h->w), free(h->b), free(h->vw), free(h->vb);
    memset(h, 0, sizeof *h);
}

static int head_copy(head *dst, const head *src)
{
    if (!dst->w && head_init(dst, src->d, src->C) != 0) return -1;
    memcpy(dst->w, src->w, (size_t)src->C * src->d * sizeof *dst->w);
    memcpy(dst->b, src->b, (size_t)src->C * sizeof *dst->b);
    memcpy(dst->vw, src->vw, (size_t)src->C * src->d * sizeof *dst->vw);
    memcpy(dst->vb, src->vb, (size_t)src->C * sizeof *dst->vb);
    return 0;
}

/* Logits of feature vector x over the active channels. */
static void head_logits(const head *h, const feat *f, const float *x, const unsigned char *on, float *z)
{
    for (int k = 0; k < h->C; k++) {
        const float *w = h->w + (size_t)k * h->d;
        double s = h->b[k];
        for (int c = 0; c < f->c; c++) {
            if (!on[c]) continue;
            const float *wc = w + c * f->p2, *xc = x + c * f->p2;
            for (int j = 0; j < f->p2; j++) s += (double)wc[j] * xc[j];
        }
        z[k] = (float)s;
    }
}

/* Softmax in place; returns -log p[label]. */
static double softmax_nll(float *z, int C, int label)
{
    float m = z[0];
    for (int k = 1; k < C; k++)
        if (z[k] > m) m = z[k];
    double s = 0;
    for (int k = 0; k < C; k++) s += exp((double)(z[k] - m));
    double nll = -((double)(z[label] - m) - log(s));
    for (int k = 0; k < C; k++) z[k] = (float)(exp((double)(z[k] - m)) / s);
    return nll;
}

/* `epochs` passes of minibatch SGD (batch 32, momentum 0.9, L2 1e-4) over
 * the training features with channel mask `on`; the order of each pass is
 * drawn from trn_rng_fork(seed, pass). */
static int head_train(head *h, const feat *f, const unsigned char *on, int epochs, float lr, uint64_t seed,
                      size_t *perm, float *z, float *gw)
{
    const int B = 32;
    const float mom = 0.9f, l2 = 1e-4f;
    trn_rng root;
    trn_rng_seed(&root, seed);
    for (int e = 0; e < epochs; e++) {
        trn_rng r = trn_rng_fork(&root, (uint64_t)e);
        for (size_t i = 0; i < f->n; i++) perm[i] = i;
        for (size_t i = f->n; i > 1; i--) {
            size_t j = (size_t)(trn_rng_u64(&r) % i), t = perm[i - 1];
            perm[i - 1] = perm[j], perm[j] = t;
        }
        for (size_t i0 = 0; i0 < f->n; i0 += B) {
            size_t m = f->n - i0 < (size_t)B ? f->n - i0 : (size_t)B;
            memset(gw, 0, ((size_t)h->C * h->d + h->C) * sizeof *gw);
            float *gb = gw + (size_t)h->C * h->d;
            for (size_t q = 0; q < m; q++) {
                size_t i = perm[i0 + q];
                const float *x = f->x + i * f->d;
                head_logits(h, f, x, on, z);
                softmax_nll(z, h->C, f->y[i]);
                z[f->y[i]] -= 1; /* dL/dz */
                for (int k = 0; k < h->C; k++) {
                    float g = z[k];
                    if (g == 0) continue;
                    float *gk = gw + (size_t)k * h->d;
                    for (int c = 0; c < f->c; c++) {
                        if (!on[c]) continue;
                        for (int j = 0; j < f->p2; j++) gk[c * f->p2 + j] += g * x[c * f->p2 + j];
                    }
                    gb[k] += g;
                }
            }
            float s = lr / (float)m;
            for (int k = 0; k < h->C; k++) {
                float *w = h->w + (size_t)k * h->d, *v = h->vw + (size_t)k * h->d, *g = gw + (size_t)k * h->d;
                for (int c = 0; c < f->c; c++) {
                    if (!on[c]) continue;
                    for (int j = c * f->p2; j < (c + 1) * f->p2; j++) {
                        v[j] = mom * v[j] - s * g[j] - lr * l2 * w[j];
                        w[j] += v[j];
                    }
                }
                h->vb[k] = mom * h->vb[k] - s * gb[k];
                h->b[k] += h->vb[k];
            }
        }
    }
    return 0;
}

/* Valid accuracy and mean log-loss with mask on. */
static void head_eval(const head *h, const feat *f, const unsigned char *on, float *z, double *acc, double *nll)
{
    size_t good = 0;
    double l = 0;
    for (size_t i = 0; i < f->nv; i++) {
        head_logits(h, f, f->xv + i * f->d, on, z);
        int p = trn_argmax(z, h->C);
        l += softmax_nll(z, h->C, f->yv[i]);
        good += p == f->yv[i];
    }
    *acc = f->nv ? (double)good / (double)f->nv : 0;
    *nll = f->nv ? l / (double)f->nv : 0;
}

/* Scores every active channel c as a candidate without a refit: the
 * valid accuracy and log-loss of h with c's features removed, from the
 * full logits minus c's contribution (one pass over the features). */
static void score_all(const head *h, const feat *f, const unsigned char *on, float *z, float *contrib, double *sa,
                      double *sl)
{
    int C = h->C, N = f->c;
    size_t *good = calloc((size_t)N, sizeof *good);
    double *loss = calloc((size_t)N, sizeof *loss);
    float *zz = malloc((size_t)C * sizeof *zz);
    if (!good || !loss || !zz) { /* out of memory: fall back to one by one */
        free(good), free(loss), free(zz);
        unsigned char *on2 = malloc((size_t)N);
        for (int c = 0; on2 && c < N; c++) {
            if (!on[c]) continue;
            memcpy(on2, on, (size_t)N);
            on2[c] = 0;
            head_eval(h, f, on2, z, &sa[c], &sl[c]);
        }
        free(on2);
        return;
    }
    for (size_t i = 0; i < f->nv; i++) {
        const float *x = f->xv + i * f->d;
        /* contrib (N, C) */
        for (int k = 0; k < C; k++) {
            const float *w = h->w + (size_t)k * h->d;
            double s = h->b[k];
            for (int c = 0; c < N; c++) {
                if (!on[c]) continue;
                double t = 0;
                const float *wc = w + c * f->p2, *xc = x + c * f->p2;
                for (int j = 0; j < f->p2; j++) t += (double)wc[j] * xc[j];
                contrib[(size_t)c * C + k] = (float)t;
                s += t;
            }
            z[k] = (float)s;
        }
        for (int c = 0; c < N; c++) {
            if (!on[c]) continue;
            for (int k = 0; k < C; k++) zz[k] = z[k] - contrib[(size_t)c * C + k];
            int p = trn_argmax(zz, C);
            loss[c] += softmax_nll(zz, C, f->yv[i]);
            good[c] += p == f->yv[i];
        }
    }
    for (int c = 0; c < N; c++) {
        if (!on[c]) continue;
        sa[c] = f->nv ? (double)good[c] / (double)f->nv : 0;
        sl[c] = f->nv ? loss[c] / (double)f->nv : 0;
    }
    free(good), free(loss), free(zz);
}

/* ---- the ranking ------------------------------------------------------------------ */

void prn_sbs_free(prn_sbs *s)
{
    if (!s) return;
    for (int l = 0; l < s->nlayers; l++) {
        free(s->layers[l].order);
        free(s->layers[l].l1_order);
        free(s->layers[l].curve);
        free(s->layers[l].curve_l1);
    }
    free(s->layers);
    free(s);
}

/* SBS on one layer's features; fills L->order, L->curve (and counts). */
static int sbs_layer(prn_sbs_layer *L, const feat *f, int C, const prn_sbs_opts *o, uint64_t seed, trn_err *err)
{
    int N = f->c, rc = -1;
    int kmin = (int)ceil(o->stop * N - 1e-9) - 1; /* stop once fewer than stop*N remain */
    if (kmin < 1) kmin = 1;
    if (kmin > N) kmin = N;
    L->kmin = kmin;
    unsigned char *on = malloc((size_t)N), *on2 = malloc((size_t)N);
    size_t *perm = malloc((f->n ? f->n : 1) * sizeof *perm);
    float *z = malloc((size_t)C * sizeof *z), *gw = malloc(((size_t)C * f->d + C) * sizeof *gw);
    double *sa = malloc((size_t)N * sizeof *sa), *sl = malloc((size_t)N * sizeof *sl);
    int *removed = malloc((size_t)N * sizeof *removed);
    float *contrib = malloc((size_t)N * C * sizeof *contrib);
    head h = {0}, t = {0};
    if (!on || !on2 || !perm || !z || !gw || !sa || !sl || !removed || !contrib || head_init(&h, f->d, C) != 0) {
        trn_errf(err, "out of memory");
        goto out;
    }
    memset(on, 1, (size_t)N);
    for (int c = 0; c < N; c++) sa[c] = 0, sl[c] = 0;
    int left = N, nrem = 0;
    uint64_t round = 0;
    head_train(&h, f, on, o->first_epochs, o->learning_rate, seed, perm, z, gw);
    L->fine_tunes++;
    double acc, nll;
    head_eval(&h, f, on, z, &acc, &nll);
    L->curve[N] = acc;
    while (left > kmin) {
        round++;
        /* score every candidate */
        for (int c = 0; c < N; c++) sa[c] = -1, sl[c] = INFINITY;
        if (o->refit == 0) {
            score_all(&h, f, on, z, contrib, sa, sl);
            L->evaluations += left;
        }
        for (int c = 0; o->refit > 0 && c < N; c++) {
            if (!on[c]) continue;
            memcpy(on2, on, (size_t)N);
            on2[c] = 0;
            if (o->refit > 0) {
                if (head_copy(&t, &h) != 0) {
                    trn_errf(err, "out of memory");
                    goto out;
                }
                head_train(&t, f, on2, o->refit, o->learning_rate, seed + 7919 * round + (uint64_t)c, perm, z, gw);
                L->fine_tunes++;
                head_eval(&t, f, on2, z, &sa[c], &sl[c]);
            }
            L->evaluations++;
        }
        /* drop the best (drop at a time, never below kmin) */
        int k = o->drop < left - kmin ? o->drop : left - kmin;
        for (int q = 0; q < k; q++) {
            int best = -1;
            for (int c = 0; c < N; c++) {
                if (!on[c] || sa[c] < 0) continue;
                if (best < 0 || sa[c] > sa[best] || (sa[c] == sa[best] && sl[c] < sl[best]) ||
                    (sa[c] == sa[best] && sl[c] == sl[best]))
                    best = c; /* ties: the later filter */
            }
            on[best] = 0;
            sa[best] = -1;
            removed[nrem++] = best;
            left--;
        }
        head_train(&h, f, on, o->epochs, o->learning_rate, seed + 104729 * round, perm, z, gw);
        L->fine_tunes++;
        head_eval(&h, f, on, z, &acc, &nll);
        L->curve[left] = acc;
        L->rounds++;
    }
    /* the order, most important first: the remaining filters (equally
     * important; by their last round's score, lower accuracy without them
     * first, then by index), then the removed ones, last removed first */
    int at = 0;
    for (int c = 0; c < N; c++)
        if (on[c]) L->order[at++] = c;
    /* sort the remaining by their last scores (ascending accuracy without them) */
    for (int i = 1; i < at; i++) {
        int v = L->order[i], j = i;
        while (j > 0 && (sa[L->order[j - 1]] > sa[v] && sa[v] >= 0)) {
            L->order[j] = L->order[j - 1];
            j--;
        }
        L->order[j] = v;
    }
    for (int q = nrem - 1; q >= 0; q--) L->order[at++] = removed[q];
    /* the L1 order's curve with the same exit */
    memset(h.w, 0, (size_t)C * f->d * sizeof *h.w);
    memset(h.b, 0, (size_t)C * sizeof *h.b);
    memset(h.vw, 0, (size_t)C * f->d * sizeof *h.vw);
    memset(h.vb, 0, (size_t)C * sizeof *h.vb);
    memset(on, 1, (size_t)N);
    head_train(&h, f, on, o->first_epochs, o->learning_rate, seed, perm, z, gw);
    L->fine_tunes++;
    head_eval(&h, f, on, z, &L->curve_l1[N], &nll);
    for (int kk = N - 1; kk >= kmin; kk--) {
        on[L->l1_order[kk]] = 0;
        head_train(&h, f, on, o->epochs, o->learning_rate, seed + 104729 * (uint64_t)(N - kk), perm, z, gw);
        L->fine_tunes++;
        head_eval(&h, f, on, z, &L->curve_l1[kk], &nll);
    }
    rc = 0;
out:
    head_free(&h);
    head_free(&t);
    free(on), free(on2), free(perm), free(z), free(gw), free(sa), free(sl), free(removed), free(contrib);
    return rc;
}

prn_sbs *prn_sbs_rank(trn_net *base, const prn_sbs_opts *o, prn_batch_fn train, void *train_ctx,
                      uint64_t first_step, const float *valid_x, const int *valid_y, size_t n_valid,
                      trn_err *err)
{
    double t0 = prn_now_s(), c0 = prn_cpu_s();
    int B = trn_net_batch(base), C = (int)trn_net_outputs(base);
    size_t in = trn_net_inputs(base);
    int nr = prn_rank_layers(base, NULL, 0);
    int *idx = malloc((size_t)(nr > 0 ? nr : 1) * sizeof *idx);
    prn_sbs *s = calloc(1, sizeof *s);
    feat *fs = NULL;
    float *x = malloc((size_t)B * in * sizeof *x), *y = malloc((size_t)B * C * sizeof *y);
    prn_rank_opts l1o = {.method = PRN_RANK_L1};
    prn_ranking *l1 = NULL;
    if (!idx || !s || !x || !y) goto oom;
    prn_rank_layers(base, idx, nr);
    if (!(l1 = prn_rank(base, &l1o, err))) goto fail;
    /* the convolutional layers of the ranking */
    s->layers = calloc((size_t)(nr > 0 ? nr : 1), sizeof *s->layers);
    fs = calloc((size_t)(nr > 0 ? nr : 1), sizeof *fs);
    if (!s->layers || !fs) goto oom;
    for (int r = 0; r < nr; r++) {
        trn_layer_info li;
        trn_net_layer_info(base, idx[r], &li);
        if (li.kind != TRN_LAYER_CONVOLUTIONAL) continue;
        prn_sbs_layer *L = &s->layers[s->nlayers];
        feat *f = &fs[s->nlayers];
        s->nlayers++;
        L->layer = idx[r];
        L->filters = li.out.c;
        int side = li.out.h > li.out.w ? li.out.h : li.out.w;
        L->pool = side > o->pool_to ? (side + o->pool_to - 1) / o->pool_to : 1;
        int ph = (li.out.h + L->pool - 1) / L->pool, pw = (li.out.w + L->pool - 1) / L->pool;
        f->c = li.out.c;
        f->p2 = ph * pw;
        f->d = f->c * f->p2;
        L->order = malloc((size_t)L->filters * sizeof *L->order);
        L->l1_order = malloc((size_t)L->filters * sizeof *L->l1_order);
        L->curve = calloc((size_t)L->filters + 1, sizeof *L->curve);
        L->curve_l1 = calloc((size_t)L->filters + 1, sizeof *L->curve_l1);
        if (!L->order || !L->l1_order || !L->curve || !L->curve_l1) goto oom;
        for (int q = 0; q < l1->nlayers; q++)
            if (l1->layers[q].layer == L->layer) memcpy(L->l1_order, l1->layers[q].order, (size_t)L->filters * sizeof(int));
    }
    if (s->nlayers == 0) {
        trn_errf(err, "collective importance: the network has no [convolutional] layer to rank");
        goto fail;
    }
    /* features: training images (the stream from first_step), then valid */
    size_t n = (size_t)o->images;
    for (int l = 0; l < s->nlayers; l++) {
        feat *f = &fs[l];
        f->n = n, f->nv = n_valid;
        f->x = malloc(n * f->d * sizeof *f->x);
        f->xv = malloc((n_valid ? n_valid : 1) * f->d * sizeof *f->xv);
        f->y = malloc(n * sizeof *f->y);
        f->yv = malloc((n_valid ? n_valid : 1) * sizeof *f->yv);
        if (!f->x || !f->xv || !f->y || !f->yv) goto oom;
    }
    for (int pass = 0; pass < 2; pass++) {
        size_t total = pass == 0 ? n : n_valid;
        for (size_t i0 = 0, st = 0; i0 < total; i0 += (size_t)B, st++) {
            size_t m = total - i0 < (size_t)B ? total - i0 : (size_t)B;
            if (pass == 0) {
                if (train(train_ctx, first_step + st, x, y, err) != 0) goto fail;
            } else {
                memset(x, 0, (size_t)B * in * sizeof *x);
                memcpy(x, valid_x + i0 * in, m * in * sizeof *x);
            }
            if (trn_net_forward(base, x, err) != 0) goto fail;
            for (int l = 0; l < s->nlayers; l++) {
                feat *f = &fs[l];
                trn_layer_info li;
                trn_net_layer_info(base, s->layers[l].layer, &li);
                const float *o_ = trn_net_layer_output(base, s->layers[l].layer);
                size_t per = (size_t)li.out.c * li.out.h * li.out.w;
                for (size_t q = 0; q < m; q++) {
                    float *dst = (pass == 0 ? f->x : f->xv) + (i0 + q) * f->d;
                    pool_map(o_ + q * per, li.out.c, li.out.h, li.out.w, s->layers[l].pool, dst);
                    int lab = 0;
                    if (pass == 0) {
                        for (int c = 1; c < C; c++)
                            if (y[q * C + c] > y[q * C + lab]) lab = c;
                        f->y[i0 + q] = lab;
                    } else {
                        f->yv[i0 + q] = valid_y[i0 + q];
                    }
                }
            }
        }
    }
    /* standardise with the training statistics */
    for (int l = 0; l < s->nlayers; l++) {
        feat *f = &fs[l];
        for (int j = 0; j < f->d; j++) {
            double mu = 0, v = 0;
            for (size_t i = 0; i < f->n; i++) mu += f->x[i * f->d + j];
            mu /= (double)(f->n ? f->n : 1);
            for (size_t i = 0; i < f->n; i++) {
                double d = f->x[i * f->d + j] - mu;
                v += d * d;
            }
            double sd = sqrt(v / (double)(f->n ? f->n : 1)) + 1e-6;
            for (size_t i = 0; i < f->n; i++) f->x[i * f->d + j] = (float)((f->x[i * f->d + j] - mu) / sd);
            for (size_t i = 0; i < f->nv; i++) f->xv[i * f->d + j] = (float)((f->xv[i * f->d + j] - mu) / sd);
        }
    }
    s->feature_seconds = prn_now_s() - t0;
    for (int l = 0; l < s->nlayers; l++) {
        double t1 = prn_now_s();
        if (sbs_layer(&s->layers[l], &fs[l], C, o, o->seed + 31 * (uint64_t)l, err) != 0) {
            trn_err_prefix(err, "collective importance, layer %d", s->layers[l].layer);
            goto fail;
        }
        s->layers[l].seconds = prn_now_s() - t1;
        s->fine_tunes += s->layers[l].fine_tunes;
        s->evaluations += s->layers[l].evaluations;
    }
    s->seconds = prn_now_s() - t0;
    s->cpu_seconds = prn_cpu_s() - c0;
    for (int l = 0; l < s->nlayers; l++) feat_free(&fs[l]);
    free(fs);
    free(idx);
    free(x);
    free(y);
    prn_ranking_free(l1);
    return s;
oom:
    trn_errf(err, "out of memory");
fail:
    for (int l = 0; fs && s && l < s->nlayers; l++) feat_free(&fs[l]);
    free(fs);
    free(idx);
    free(x);
    free(y);
    prn_ranking_free(l1);
    prn_sbs_free(s);
    return NULL;
}

int prn_sbs_min_filters(const double *curve, int filters, int kmin, double tolerance)
{
    int k = filters;
    for (int j = filters - 1; j >= kmin; j--) {
        if (curve[j] >= curve[filters] - tolerance - 1e-12) k = j;
        else break;
    }
    return k;
}
