/*
 * gtdp.c: MeDNN's greedy two-dimensional partition (GTDP,
 * docs/papers.md, MeDNN section V, Algorithm 1) of each convolutional
 * layer's output over several worker devices (rtl_gtdp_* of rtl.h).
 *
 * A layer's output is the rectangle rows [0, H) x channels [0, C). The
 * planner splits a rectangle and its set of workers recursively: the
 * workers into a subset A (at most half of them, as Algorithm 1
 * enumerates) and the rest B, the rectangle along rows or along channels
 * in proportion to the summed speed of A and B, down to one worker per
 * part. Of all such split trees it keeps the one with the smallest
 * predicted layer time, where a part's time is
 *     rtt + in_bytes / link + part_MACs / speed + out_bytes / link
 * (the device sends each worker the input rows its part needs, halo rows
 * of the kernel included, and receives the part's outputs; workers run at
 * the same time, each over its own link) and the layer's time is the
 * slowest part's. A row split needs only the input rows under the part
 * (plus the halo), a channel split the whole input but only the filters of
 * its channels: the planner weighs both with the same model.
 *
 * Departure from the paper, named: Algorithm 1 picks each split greedily by
 * the shortest cut (communication) once the sizes follow compute capacity;
 * here the whole (small: workers <= RTL_GTDP_MAX_WORKERS) tree of
 * capacity-proportional splits is searched for the least predicted time,
 * which includes the cut's transfer cost. The paper partitions rows and
 * columns of the map; we partition rows and output channels (issue 21).
 */
#include "internal.h"

#include <float.h>
#include <math.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Part networks (computing one part, below) and fitted part costs
 * (calibration), per model. */
struct part_net {
    int layer, r0, r1, c0, c1, cr0, cr1;
    trn_net *net;
    float *x; /* its padded input */
};
#define GTDP_CACHE_MAX 64
struct gtdp_fit {
    int ok;
    double f[4];
    int dims; /* rtl_gtdp_set_dims: the cuts allowed in the block (0: both) */
};
/* A thread that runs the coordinator's parts (all but the last, which the
 * calling thread runs), kept with the model from its first split block
 * until the model is closed: handing a part over is a semaphore post, not
 * a thread started per part and block (which took 50 to 100 us before the
 * block's requests left, a cost one worker alone does not pay). */
struct job;
struct helper {
    pthread_t th;
    sem_t go, done;
    struct job *job; /* NULL when go is posted: stop */
    int started;
};
/* How long a part's thread polls for its next hand-over before it sleeps
 * (sem_wait_spin), where it has a CPU to itself (job.spin). */
#define GTDP_SPIN_MS 1.0
struct rtl_gtdp_cache {
    int n;
    struct part_net e[GTDP_CACHE_MAX];
    int nfit;            /* the model's layers */
    struct gtdp_fit *fit; /* per block's first layer: rtl_gtdp_calibrate */
    struct helper help[RTL_GTDP_MAX_WORKERS];
    rtl_gtdp_hooks hooks;           /* rtl_gtdp_set_hooks (none: all NULL) */
};

/* Convolution output rows [a, b) that block output rows [r0, r1) read: the
 * same rows without a fused max pool, else the pool's windows (Darknet's:
 * they start at -padding/2; rows outside the map are ignored). */
static void conv_rows(const rtl_gtdp_layer *l, int r0, int r1, int *a, int *b)
{
    if (!l->pool_size) {
        *a = r0, *b = r1;
        return;
    }
    int off = -(l->pool_pad / 2), lo = r0 * l->pool_stride + off, hi = (r1 - 1) * l->pool_stride + off + l->pool_size;
    *a = lo < 0 ? 0 : lo;
    *b = hi > l->conv_h ? l->conv_h : hi;
    if (*b < *a) *b = *a;
}

/* Input rows [a, b) that convolution rows [ca, cb) read. */
static void in_rows_conv(const rtl_gtdp_layer *l, int ca, int cb, int *a, int *b)
{
    int lo = ca * l->stride - l->pad, hi = (cb - 1) * l->stride - l->pad + l->size;
    *a = lo < 0 ? 0 : lo;
    *b = hi > l->h_in ? l->h_in : hi;
    if (*b < *a) *b = *a;
}

/* The convolution rows part q computes: its own [cr0, cr1) when its block
 * (with a pool) is cut at convolution rows, else the windows of its rows. */
static void part_conv_rows(const rtl_gtdp_layer *l, const rtl_gtdp_part *q, int *a, int *b)
{
    if (l->pool_size && q->cr1 > q->cr0) {
        *a = q->cr0, *b = q->cr1;
        return;
    }
    conv_rows(l, q->r0, q->r1, a, b);
}

/* Block rows [*r0, *r1) whose pool windows meet convolution rows [ca, cb)
 * (empty when none does). */
static void pooled_rows(const rtl_gtdp_layer *l, int ca, int cb, int *r0, int *r1)
{
    *r0 = *r1 = 0;
    for (int k = 0, first = 1; k < l->h; k++) {
        int lo, hi;
        conv_rows(l, k, k + 1, &lo, &hi);
        if (lo < cb && hi > ca) {
            if (first) *r0 = k, first = 0;
            *r1 = k + 1;
        }
    }
}

void rtl_gtdp_whole_rows(const rtl_gtdp_layer *l, const rtl_gtdp_part *q, int *f0, int *f1)
{
    *f0 = q->r0, *f1 = q->r1;
    if (!l->pool_size || q->cr1 <= q->cr0) return;
    int lo, hi;
    for (; *f0 < *f1 && (conv_rows(l, *f0, *f0 + 1, &lo, &hi), lo < q->cr0); ++*f0) {
    }
    for (; *f1 > *f0 && (conv_rows(l, *f1 - 1, *f1, &lo, &hi), hi > q->cr1); --*f1) {
    }
}

void rtl_gtdp_part_cost(const rtl_gtdp_layer *l, const rtl_gtdp_worker *w, rtl_gtdp_part *p)
{
    int a, b, ca, cb;
    part_conv_rows(l, p, &ca, &cb);
    in_rows_conv(l, ca, cb, &a, &b);
    p->in_r0 = a;
    p->in_r1 = b;
    p->in_bytes = 4ull * (uint64_t)(b - a) * l->w_in * l->c_in;
    p->out_bytes = 4ull * (uint64_t)(p->r1 - p->r0) * l->w * (p->c1 - p->c0);
    /* compute: the convolution rows it computes (a pool's overlapping
     * windows make neighbours compute a shared row twice), r of the
     * layer's, times its channels, c. A convolution computed as im2col +
     * GEMM also pays, whatever its channels, for the im2col of its rows
     * (beta of the layer's time at r = 1) and, whatever its rows, for
     * packing its filters (gamma at c = 1): share = r c (1 - beta - gamma)
     * + beta r + gamma c. Named approximation: beta = 40 / (40 + filters)
     * and gamma = 110 / (110 + output positions), fitted to parts of
     * AlexNet's five layers timed on this engine (OpenBLAS; within 10%,
     * runtime-lite/README.md); a channel split of a 13x13 layer costs
     * each half 54% of the layer, a row split 72%, not 50%. */
    int ch = l->pool_size ? l->conv_h : l->h, cw = l->pool_size ? l->conv_w : l->w;
    double r = (double)(cb - ca) / ch, c = (double)(p->c1 - p->c0) / l->c;
    if (l->fitted) { /* measured on this host: rtl_gtdp_calibrate */
        double t = l->fit[0] * r * c + l->fit[1] * r + l->fit[2] * c + l->fit[3];
        p->compute_ms = (t > 1e-3 ? t : 1e-3) / w->speed;
    } else {
        double beta = 40.0 / (40.0 + l->c), gamma = 110.0 / (110.0 + (double)ch * cw);
        p->compute_ms = l->ms * (r * c * (1 - beta - gamma) + beta * r + gamma * c) / w->speed;
    }
    double bytes_per_ms = w->mbps * 1e3 / 8.0;
    p->transfer_ms = (double)(p->in_bytes + p->out_bytes) / bytes_per_ms;
    p->ms = w->rtt_ms + p->compute_ms + p->transfer_ms;
}

typedef struct ctx {
    const rtl_gtdp_layer *l;
    const rtl_gtdp_worker *w;
} ctx;

/* Best tree for rectangle (r0,r1,c0,c1) over the workers of mask: fills
 * parts (one per worker of mask), returns the slowest part's time. */
static double solve(const ctx *c, unsigned mask, int r0, int r1, int c0, int c1, rtl_gtdp_part *parts, int *np)
{
    int n = __builtin_popcount(mask);
    if (n == 1) {
        rtl_gtdp_part *p = &parts[0];
        memset(p, 0, sizeof *p);
        p->worker = __builtin_ctz(mask);
        p->r0 = r0, p->r1 = r1, p->c0 = c0, p->c1 = c1;
        if (c->l->pool_size) { /* r0..r1: convolution rows, the block's cut there */
            pooled_rows(c->l, r0, r1, &p->r0, &p->r1);
            if (p->r1 <= p->r0) return INFINITY; /* rows no pool window reads */
            int a, b;
            conv_rows(c->l, p->r0, p->r1, &a, &b);
            if (a == r0 && b == r1) p->cr0 = p->cr1 = 0; /* whole windows: a plain part */
            else p->cr0 = r0, p->cr1 = r1;
        }
        rtl_gtdp_part_cost(c->l, &c->w[p->worker], p);
        *np = 1;
        return p->ms;
    }
    double best = INFINITY, tot = 0;
    for (unsigned m = mask; m; m &= m - 1) tot += c->w[__builtin_ctz(m)].speed;
    rtl_gtdp_part tmp[RTL_GTDP_MAX_WORKERS];
    int lowest = __builtin_ctz(mask);
    /* Subsets A of mask with |A| <= n/2 (|A| == n/2: only those holding
     * the lowest worker, the complement being the same split). */
    for (unsigned a = (mask - 1) & mask; a; a = (a - 1) & mask) {
        int na = __builtin_popcount(a);
        if (na > n / 2 || (2 * na == n && !(a & (1u << lowest)))) continue;
        unsigned b = mask & ~a;
        double sa = 0;
        for (unsigned m = a; m; m &= m - 1) sa += c->w[__builtin_ctz(m)].speed;
        for (int dim = 0; dim < 2; dim++) {
            if (c->l->dims && !(c->l->dims & (dim ? RTL_GTDP_CHANNELS : RTL_GTDP_ROWS))) continue;
            int lo = dim ? c0 : r0, hi = dim ? c1 : r1, len = hi - lo;
            if (len < n) continue; /* every worker needs at least one row/channel */
            int k = (int)lround(len * sa / tot);
            if (k < na) k = na;
            if (len - k < n - na) k = len - (n - na);
            int na_parts, nb_parts;
            double ta = dim ? solve(c, a, r0, r1, c0, c0 + k, tmp, &na_parts)
                            : solve(c, a, r0, r0 + k, c0, c1, tmp, &na_parts);
            if (ta >= best) continue;
            double tb = dim ? solve(c, b, r0, r1, c0 + k, c1, tmp + na_parts, &nb_parts)
                            : solve(c, b, r0 + k, r1, c0, c1, tmp + na_parts, &nb_parts);
            double t = ta > tb ? ta : tb;
            if (t < best) {
                best = t;
                memcpy(parts, tmp, (size_t)(na_parts + nb_parts) * sizeof *tmp);
                *np = na_parts + nb_parts;
            }
        }
    }
    return best;
}

static int check(const rtl_gtdp_layer *l, const rtl_gtdp_worker *w, int n, rtl_err *err)
{
    if (n < 1 || n > RTL_GTDP_MAX_WORKERS)
        return rtl_errf(err, "GTDP: %d workers (1..%d are supported)", n, RTL_GTDP_MAX_WORKERS);
    for (int i = 0; i < n; i++)
        if (!(w[i].speed > 0) || !(w[i].mbps > 0) || !(w[i].rtt_ms >= 0))
            return rtl_errf(err, "GTDP: worker %d needs a speed > 0, a link > 0 Mbps and an RTT >= 0", i + 1);
    if (l->h < 1 || l->c < 1 || l->w < 1 || l->size < 1 || l->stride < 1 || !(l->ms >= 0))
        return rtl_errf(err, "GTDP: layer %d has no usable geometry", l->index);
    return 0;
}

static void finish(rtl_gtdp_layer_plan *out)
{
    out->ms = 0;
    out->bytes = 0;
    for (int i = 0; i < out->nparts; i++) {
        if (out->parts[i].ms > out->ms) out->ms = out->parts[i].ms;
        out->bytes += out->parts[i].in_bytes + out->parts[i].out_bytes;
    }
}

int rtl_gtdp_plan_layer(const rtl_gtdp_layer *l, const rtl_gtdp_worker *w, int n, rtl_gtdp_layer_plan *out,
                        rtl_err *err)
{
    if (check(l, w, n, err) != 0) return -1;
    memset(out, 0, sizeof *out);
    out->layer = l->index;
    /* More workers than rows and channels allow: the fastest that fit. */
    unsigned mask = (1u << n) - 1;
    while (__builtin_popcount(mask) > 1 && __builtin_popcount(mask) > (l->h > l->c ? l->h : l->c)) {
        int slow = -1;
        for (unsigned m = mask; m; m &= m - 1) {
            int i = __builtin_ctz(m);
            if (slow < 0 || w[i].speed < w[slow].speed) slow = i;
        }
        mask &= ~(1u << slow);
    }
    ctx c = {l, w};
    /* a block with a pool is cut at its convolution rows (the pooled rows
     * two parts share are merged on the device by max): no convolution row
     * is computed twice */
    int rows = l->pool_size ? l->conv_h : l->h;
    solve(&c, mask, 0, rows, 0, l->c, out->parts, &out->nparts);
    if (out->nparts == 0 && l->dims) { /* too few rows (channels) for the cuts allowed: both */
        rtl_gtdp_layer any = *l;
        any.dims = 0;
        c.l = &any;
        solve(&c, mask, 0, rows, 0, l->c, out->parts, &out->nparts);
    }
    if (out->nparts == 0) return rtl_errf(err, "GTDP: layer %d cannot be split %d ways", l->index, n);
    finish(out);
    return 0;
}

int rtl_gtdp_plan_equal(const rtl_gtdp_layer *l, const rtl_gtdp_worker *w, int n, rtl_gtdp_layer_plan *out,
                        rtl_err *err)
{
    if (check(l, w, n, err) != 0) return -1;
    if (l->h < n) return rtl_errf(err, "GTDP: layer %d has %d rows, fewer than %d workers", l->index, l->h, n);
    memset(out, 0, sizeof *out);
    out->layer = l->index;
    for (int i = 0; i < n; i++) {
        rtl_gtdp_part *p = &out->parts[i];
        p->worker = i;
        p->r0 = (int)((int64_t)l->h * i / n);
        p->r1 = (int)((int64_t)l->h * (i + 1) / n);
        p->c0 = 0, p->c1 = l->c;
        rtl_gtdp_part_cost(l, &w[i], p);
    }
    out->nparts = n;
    finish(out);
    return 0;
}

int rtl_gtdp_model_layer(const rtl_model *m, int i, rtl_gtdp_layer *out)
{
    trn_layer_info li, pi;
    rtl_layer_cost lc, pc;
    const trn_net *net = rtl_model_net(m);
    if (rtl_model_layer_cost(m, i, &lc) != 0 || trn_net_layer_info(net, i, &li) != 0) return -1;
    if (li.kind != TRN_LAYER_CONVOLUTIONAL || li.groups > 1) return -1;
    memset(out, 0, sizeof *out);
    out->index = out->last = i;
    out->c_in = li.in.c, out->h_in = li.in.h, out->w_in = li.in.w;
    out->c = li.out.c, out->h = li.out.h, out->w = li.out.w;
    out->conv_h = li.out.h, out->conv_w = li.out.w;
    out->size = li.size, out->stride = li.stride, out->pad = li.pad;
    out->macs = li.macs;
    out->ms = lc.host_ms; /* wall time: what the workers and the assembly take */
    /* A max pool right after it, whose input nothing else reads, goes with
     * it: the workers pool their own rows, and the device moves the pooled
     * (smaller) map. */
    if (i + 1 < rtl_model_layers(m) && trn_net_layer_info(net, i + 1, &pi) == 0 && pi.kind == TRN_LAYER_MAXPOOL &&
        rtl_model_cut_ok(m, i + 2) && rtl_model_layer_cost(m, i + 1, &pc) == 0) {
        out->last = i + 1;
        out->h = pi.out.h, out->w = pi.out.w;
        out->pool_size = pi.size, out->pool_stride = pi.stride, out->pool_pad = pi.pad;
        out->ms += pc.host_ms;
    }
    const struct rtl_gtdp_cache *c = rtl_model_gtdp_cache_get(m);
    if (c && c->fit && i < c->nfit && c->fit[i].ok) {
        out->fitted = 1;
        memcpy(out->fit, c->fit[i].f, sizeof out->fit);
    }
    if (c && c->fit && i < c->nfit) out->dims = c->fit[i].dims;
    return 0;
}

/* m's GTDP cache, allocated on first use; NULL when out of memory. */
static struct rtl_gtdp_cache *cache_of(rtl_model *m)
{
    struct rtl_gtdp_cache **cp = rtl_model_gtdp_cache(m);
    if (!*cp) *cp = calloc(1, sizeof **cp);
    return *cp;
}

/* The per-layer table of fits and chosen cuts, allocated on first use. */
static struct gtdp_fit *fit_table(rtl_model *m, rtl_err *err)
{
    struct rtl_gtdp_cache *c = cache_of(m);
    if (!c) return rtl_errf(err, "out of memory"), NULL;
    if (!c->fit) {
        int L = rtl_model_layers(m);
        if (!(c->fit = calloc((size_t)(L > 0 ? L : 1), sizeof *c->fit))) return rtl_errf(err, "out of memory"), NULL;
        c->nfit = L;
    }
    return c->fit;
}

int rtl_gtdp_set_hooks(rtl_model *m, const rtl_gtdp_hooks *h, rtl_err *err)
{
    struct rtl_gtdp_cache *c = cache_of(m);
    if (!c) return rtl_errf(err, "out of memory");
    c->hooks = h ? *h : (rtl_gtdp_hooks){0};
    return 0;
}

int rtl_gtdp_set_dims(rtl_model *m, int layer, int dims, rtl_err *err)
{
    if (dims != 0 && dims != RTL_GTDP_ROWS && dims != RTL_GTDP_CHANNELS && dims != (RTL_GTDP_ROWS | RTL_GTDP_CHANNELS))
        return rtl_errf(err, "GTDP: cuts %d: rows (%d), channels (%d) or both (0)", dims, RTL_GTDP_ROWS,
                        RTL_GTDP_CHANNELS);
    int L = rtl_model_layers(m);
    if (layer < -1 || layer >= L) return rtl_errf(err, "GTDP: layer %d: the model has layers 0..%d", layer, L - 1);
    struct gtdp_fit *f = fit_table(m, err);
    if (!f) return -1;
    for (int i = layer < 0 ? 0 : layer; i < (layer < 0 ? L : layer + 1); i++) f[i].dims = dims;
    return 0;
}

int rtl_gtdp_model_split(const rtl_model *m, int i, rtl_gtdp_layer *out)
{
    if (rtl_gtdp_model_layer(m, i, out) != 0) return -1;
    return rtl_model_cut_ok(m, i) && rtl_model_cut_ok(m, out->last + 1) ? 0 : -1;
}

/* ---- computing one part (worker side, and the device's fallback) ---------- *
 *
 * A part is computed by a one-layer network: the layer's convolution with
 * padding 0, filters c0..c1 (their weights, biases and batch norm), on the
 * input rows the part reads, zero-padded by the device's padding on every
 * side that is the map's border (and by nothing where the halo rows are
 * real rows). Its output is exactly the part's rows and channels; the
 * arithmetic is the engine's own convolution, so it matches the whole
 * layer within float rounding of a differently shaped product. */

void rtl_gtdp_cache_free(struct rtl_gtdp_cache *c)
{
    if (!c) return;
    for (int k = 0; k < RTL_GTDP_MAX_WORKERS; k++) {
        struct helper *h = &c->help[k];
        if (!h->started) continue;
        h->job = NULL;
        sem_post(&h->go);
        pthread_join(h->th, NULL);
        sem_destroy(&h->go);
        sem_destroy(&h->done);
    }
    for (int i = 0; i < c->n; i++) {
        trn_net_free(c->e[i].net);
        free(c->e[i].x);
    }
    free(c->fit);
    free(c);
}

static struct part_net *part_net(rtl_model *m, const rtl_gtdp_layer *g, const rtl_gtdp_part *q, rtl_err *err)
{
    struct rtl_gtdp_cache *c = cache_of(m);
    if (!c) return rtl_errf(err, "out of memory"), NULL;
    for (int i = 0; i < c->n; i++) {
        struct part_net *e = &c->e[i];
        if (e->layer == g->index && e->r0 == q->r0 && e->r1 == q->r1 && e->c0 == q->c0 && e->c1 == q->c1 &&
            e->cr0 == q->cr0 && e->cr1 == q->cr1)
            return e;
    }
    if (c->n == GTDP_CACHE_MAX) { /* drop the oldest */
        trn_net_free(c->e[0].net);
        free(c->e[0].x);
        memmove(c->e, c->e + 1, (GTDP_CACHE_MAX - 1) * sizeof c->e[0]);
        c->n--;
    }
    trn_net *src = rtl_model_net(m);
    trn_layer_info li;
    trn_net_layer_info(src, g->index, &li);
    int ca, cb;
    part_conv_rows(g, q, &ca, &cb);
    int hp = (cb - ca - 1) * g->stride + g->size, wp = g->w_in + 2 * g->pad;
    char text[512];
    snprintf(text, sizeof text,
             "[net]\nbatch=1\nheight=%d\nwidth=%d\nchannels=%d\n[convolutional]\nfilters=%d\nsize=%d\n"
             "stride=%d\npadding=0\nbatch_normalize=%d\nactivation=%s\n",
             hp, wp, g->c_in, q->c1 - q->c0, g->size, g->stride, li.batch_normalize,
             trn_activation_name(li.activation));
    trn_err te;
    trn_cfg *cfg = trn_cfg_parse(text, strlen(text), "gtdp-part", &te);
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.engine = rtl_model_engine(m);
    trn_net *net = cfg ? trn_net_create(cfg, &o, &te) : NULL;
    trn_cfg_free(cfg);
    if (!net) {
        rtl_err_from_trn(err, &te);
        return NULL;
    }
    for (int r = 0; r < TRN_PARAM_ROLE_COUNT; r++) {
        const trn_param *s = trn_net_param(src, g->index, (trn_param_role)r), *d = trn_net_param(net, 0, (trn_param_role)r);
        if (!s || !d) continue;
        size_t row = r == TRN_PARAM_WEIGHTS ? (size_t)s->cols : 1;
        memcpy(d->data, s->data + (size_t)q->c0 * row, (size_t)(q->c1 - q->c0) * row * sizeof(float));
    }
    struct part_net *e = &c->e[c->n];
    *e = (struct part_net){g->index, q->r0,  q->r1, q->c0, q->c1, q->cr0, q->cr1,
                           net,      calloc((size_t)g->c_in * hp * wp, sizeof(float))};
    if (!e->x) {
        trn_net_free(net);
        rtl_errf(err, "out of memory");
        return NULL;
    }
    c->n++;
    return e;
}

/* Max pool of conv rows [ca, cb) (channels x rows x conv_w, y) into block
 * rows [r0, r1) (channels x rows x w, out): Darknet's windows, positions
 * outside the map ignored, as trainer/nn's maxpool. */
static void pool_rows(const rtl_gtdp_layer *g, int nc, int ca, int cb, int r0, int r1, const float *y, float *out)
{
    int s = g->pool_stride, off = -(g->pool_pad / 2), cw = g->conv_w;
    for (int k = 0; k < nc; k++)
        for (int oy = r0; oy < r1; oy++) {
            float *best = out + ((size_t)k * (r1 - r0) + (oy - r0)) * g->w;
            for (int ox = 0; ox < g->w; ox++) best[ox] = -FLT_MAX;
            for (int n = 0; n < g->pool_size; n++) {
                int iy = oy * s + off + n;
                if (iy < ca || iy >= cb) continue; /* [ca, cb) holds every row of the map this window reads */
                const float *row = y + ((size_t)k * (cb - ca) + (iy - ca)) * cw;
                for (int mm = 0; mm < g->pool_size; mm++) {
                    /* the outputs whose column off + ox*s + mm lies in the row */
                    int c0 = off + mm, lo = c0 < 0 ? (-c0 + s - 1) / s : 0;
                    int hi = cw - c0 > 0 ? (cw - c0 + s - 1) / s : 0;
                    if (hi > g->w) hi = g->w;
                    for (int ox = lo; ox < hi; ox++) {
                        float v = row[c0 + ox * s];
                        best[ox] = v > best[ox] ? v : best[ox];
                    }
                }
            }
        }
}

struct flat_rows {
    const float *in;
    int a, rows, w;
};

static void flat_row(void *arg, int c, int iy, float *dst)
{
    const struct flat_rows *f = arg;
    memcpy(dst, f->in + ((size_t)c * f->rows + (size_t)(iy - f->a)) * f->w, (size_t)f->w * sizeof *dst);
}

int rtl_gtdp_compute_part(rtl_model *m, int layer, const rtl_gtdp_part *q, const float *in, size_t n,
                          float *out, rtl_err *err)
{
    rtl_gtdp_layer g;
    if (rtl_gtdp_model_layer(m, layer, &g) != 0)
        return rtl_errf(err, "layer %d is not an ungrouped convolutional layer GTDP can split", layer);
    struct flat_rows f = {in, q->in_r0, q->in_r1 - q->in_r0, g.w_in};
    return rtl_gtdp_compute_part_rows(m, layer, q, n, flat_row, &f, out, err);
}

int rtl_gtdp_compute_part_rows(rtl_model *m, int layer, const rtl_gtdp_part *q, size_t n,
                               void (*row)(void *arg, int c, int iy, float *dst), void *arg, float *out,
                               rtl_err *err)
{
    rtl_gtdp_layer g;
    if (rtl_gtdp_model_layer(m, layer, &g) != 0)
        return rtl_errf(err, "layer %d is not an ungrouped convolutional layer GTDP can split", layer);
    if (q->r0 < 0 || q->r1 > g.h || q->r0 >= q->r1 || q->c0 < 0 || q->c1 > g.c || q->c0 >= q->c1)
        return rtl_errf(err, "layer %d: part rows %d..%d x channels %d..%d is outside its %dx%d output", layer,
                        q->r0, q->r1, q->c0, q->c1, g.h, g.c);
    if (q->cr1 > q->cr0 || q->cr0 || q->cr1) { /* cut at convolution rows: they name its rows */
        int p0, p1;
        if (!g.pool_size || q->cr0 < 0 || q->cr1 > g.conv_h || q->cr0 >= q->cr1)
            return rtl_errf(err, "layer %d: convolution rows %d..%d of a block with %s", layer, q->cr0, q->cr1,
                            g.pool_size ? "fewer rows" : "no pool");
        pooled_rows(&g, q->cr0, q->cr1, &p0, &p1);
        if (p0 != q->r0 || p1 != q->r1)
            return rtl_errf(err, "layer %d: convolution rows %d..%d make rows %d..%d, not %d..%d", layer, q->cr0,
                            q->cr1, p0, p1, q->r0, q->r1);
    }
    int a, b, ca, cb;
    part_conv_rows(&g, q, &ca, &cb);
    in_rows_conv(&g, ca, cb, &a, &b);
    if (q->in_r0 != a || q->in_r1 != b || n != (size_t)(b - a) * g.w_in * g.c_in)
        return rtl_errf(err, "layer %d: the part needs input rows %d..%d (%zu floats), not %d..%d (%zu floats)",
                        layer, a, b, (size_t)(b - a) * g.w_in * g.c_in, q->in_r0, q->in_r1, n);
    struct part_net *e = part_net(m, &g, q, err);
    if (!e) return -1;
    int hp = (cb - ca - 1) * g.stride + g.size, wp = g.w_in + 2 * g.pad;
    int top = ca * g.stride - g.pad; /* input row of padded row 0 */
    for (int c = 0; c < g.c_in; c++)
        for (int y = 0; y < hp; y++) {
            float *d = e->x + ((size_t)c * hp + y) * wp;
            int iy = top + y;
            if (iy < a || iy >= b) {
                memset(d, 0, (size_t)wp * sizeof *d);
                continue;
            }
            memset(d, 0, (size_t)g.pad * sizeof *d);
            row(arg, c, iy, d + g.pad);
            memset(d + g.pad + g.w_in, 0, (size_t)g.pad * sizeof *d);
        }
    trn_err te;
    int rc = trn_net_forward(e->net, e->x, &te);
    if (rc == 0 && g.pool_size)
        pool_rows(&g, q->c1 - q->c0, ca, cb, q->r0, q->r1, trn_net_output(e->net), out);
    else if (rc == 0)
        memcpy(out, trn_net_output(e->net), (size_t)(q->c1 - q->c0) * (q->r1 - q->r0) * g.w * sizeof *out);
    return rc == 0 ? 0 : rtl_err_from_trn(err, &te);
}

/* ---- calibration: a part's cost measured on this host ---------------------- */

static double thread_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* Least squares of t ~ f . (rc, r, c, 1) weighted by 1/t (relative
 * errors: small parts matter as much as big ones). */
static int fit4(const double (*x)[4], const double *t, int n, double f[4])
{
    double a[4][5] = {{0}};
    for (int k = 0; k < n; k++) {
        double wgt = 1.0 / (t[k] * t[k]);
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++) a[i][j] += wgt * x[k][i] * x[k][j];
            a[i][4] += wgt * x[k][i] * t[k];
        }
    }
    for (int i = 0; i < 4; i++) {
        int p = i;
        for (int r = i + 1; r < 4; r++)
            if (fabs(a[r][i]) > fabs(a[p][i])) p = r;
        if (fabs(a[p][i]) < 1e-12) return -1;
        for (int j = 0; j < 5; j++) {
            double tmp = a[i][j];
            a[i][j] = a[p][j], a[p][j] = tmp;
        }
        for (int r = 0; r < 4; r++) {
            if (r == i) continue;
            double q = a[r][i] / a[i][i];
            for (int j = i; j < 5; j++) a[r][j] -= q * a[i][j];
        }
    }
    for (int i = 0; i < 4; i++) f[i] = a[i][4] / a[i][i];
    return 0;
}

/* One part of block g, rows [r0, r1) x channels [c0, c1): its median CPU
 * time over reps (after one untimed run that builds its network), with a
 * request's and a reply's copies, as a worker computes it: each run after
 * reading evict (a few MB, more than a core's private caches), since a
 * worker comes to a part from other work (the block before, the request's
 * decryption), not from the same part again. */
static int time_part(rtl_model *m, const rtl_gtdp_layer *g, int r0, int r1, int c0, int c1, int reps, double *ms,
                     const float *evict, size_t nevict, rtl_err *err)
{
    rtl_gtdp_worker one = {.speed = 1, .mbps = 1, .rtt_ms = 0};
    rtl_gtdp_part q = {.r0 = r0, .r1 = r1, .c0 = c0, .c1 = c1};
    rtl_gtdp_part_cost(g, &one, &q);
    size_t nin = (size_t)(q.in_r1 - q.in_r0) * g->w_in * g->c_in, nout = (size_t)(r1 - r0) * (c1 - c0) * g->w;
    float *in = malloc(nin * sizeof *in), *in2 = malloc(nin * sizeof *in), *out = malloc(nout * sizeof *out),
          *out2 = malloc(nout * sizeof *out);
    double t[16];
    int rc = -1;
    if (!in || !in2 || !out || !out2) {
        rtl_errf(err, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < nin; k++) in[k] = (float)(k % 7) * 0.125f;
    if (reps > 16) reps = 16;
    for (int k = -1; k < reps; k++) {
        volatile float sink = 0;
        float acc = 0;
        for (size_t e = 0; e < nevict; e += 16) acc += evict[e];
        sink = acc;
        (void)sink;
        double t0 = thread_ms();
        memcpy(in2, in, nin * sizeof *in);
        if (rtl_gtdp_compute_part(m, g->index, &q, in2, nin, out, err) != 0) goto done;
        memcpy(out2, out, nout * sizeof *out);
        if (k >= 0) t[k] = thread_ms() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, rtl_cmp_double);
    *ms = t[reps / 2];
    rc = 0;
done:
    free(in), free(in2), free(out), free(out2);
    return rc;
}

int rtl_gtdp_calibrate(rtl_model *m, int reps, rtl_err *err)
{
    if (reps < 1) reps = 1;
    if (!fit_table(m, err)) return -1;
    struct rtl_gtdp_cache *c = *rtl_model_gtdp_cache(m);
    int L = rtl_model_layers(m);
    size_t nevict = (size_t)4 << 20; /* floats: 16 MB */
    float *evict = calloc(nevict, sizeof *evict);
    if (!evict) return rtl_errf(err, "out of memory");
    for (int i = 0; i < L; i++) {
        rtl_gtdp_layer g;
        if (rtl_gtdp_model_split(m, i, &g) != 0) continue;
        /* rows 1, 1/2, 1/4, 1/8 x channels 1, 1/2, 1/4, 1/8 (a part of
         * the middle rows: the halo of both sides), 16 shapes: the small
         * parts slow workers get are inside what is fitted */
        double x[16][4], t[16];
        int n = 0;
        for (int k = 0; k < 16; k++) {
            const int shape[2] = {1 << (k / 4), 1 << (k % 4)};
            int nr = (g.h + shape[0] - 1) / shape[0], nc = (g.c + shape[1] - 1) / shape[1];
            int r0 = (g.h - nr) / 2, ca, cb;
            conv_rows(&g, r0, r0 + nr, &ca, &cb);
            int ch = g.pool_size ? g.conv_h : g.h;
            double r = (double)(cb - ca) / ch, cc = (double)nc / g.c;
            if (time_part(m, &g, r0, r0 + nr, 0, nc, reps, &t[n], evict, nevict, err) != 0) {
                free(evict);
                return -1;
            }
            if (!(t[n] > 0)) continue;
            x[n][0] = r * cc, x[n][1] = r, x[n][2] = cc, x[n][3] = 1;
            n++;
        }
        c->fit[i].ok = n >= 4 && fit4((const double(*)[4])x, t, n, c->fit[i].f) == 0;
    }
    free(evict);
    /* the calibration's part networks are not the plan's */
    for (int k = 0; k < c->n; k++) {
        trn_net_free(c->e[k].net);
        free(c->e[k].x);
    }
    c->n = 0;
    return 0;
}

/* ---- the coordinator: a whole forward over rtl serve workers ---------------- */

typedef struct job job;
struct job {
    rtl_peer *peer;
    const rtl_model *m; /* its catalog (pinned in the request) and variant */
    const rtl_gtdp_layer *g;
    rtl_gtdp_part q;
    const float *x; /* the layer's whole input */
    float *y;       /* the layer's whole output: the job writes its part */
    float *in, *out;
    size_t nin, nout, nsent;
    int deadline_ms, ok;
    int nonfinite;    /* the answer held a NaN or an infinity (not placed) */
    int held;         /* the worker holds hg, its answer of the block before: not sent again */
    int32_t hg[5];
    int lo, hi;       /* held: the rows of hg within in_r0..in_r1 (of its channels), not sent */
    double t_got; /* when the answer was here */
    double t[RTL_IO_T_N]; /* rtl_now_ms() at each step (rtl_part_io.t) */
    int cpu;              /* the CPU the part's thread moves to, -1: none */
    int spin;             /* cpu is no other part's: its thread may poll on it (sem_wait_spin) */
    int f0, f1;           /* its whole rows (rtl_gtdp_whole_rows); the others, shared with a
                           * neighbour's pool windows, go to stash and are merged by max */
    float *stash;         /* channels x (f0 - r0 + r1 - f1) rows x w */
    rtl_err err;
};

void rtl_gtdp_rows_of(const float *x, int c, int h, int w, int a, int b, float *slab)
{
    for (int k = 0; k < c; k++) memcpy(slab + (size_t)k * (b - a) * w, x + ((size_t)k * h + a) * w, (size_t)(b - a) * w * sizeof *x);
}

/* Part j's output (channels x rows x w; wire bytes when wire) into the
 * layer's map y: its whole rows there, the others into its stash. */
static void put_rows(const rtl_gtdp_layer *g, const job *j, const void *part, int wire, float *y)
{
    const rtl_gtdp_part *q = &j->q;
    size_t w = (size_t)g->w, rows = (size_t)(q->r1 - q->r0), ns = rows - (size_t)(j->f1 - j->f0);
    for (int c = q->c0; c < q->c1; c++) {
        size_t k = (size_t)(c - q->c0);
        for (int r = q->r0; r < q->r1;) { /* runs of whole rows, then each shared one */
            int whole = r >= j->f0 && r < j->f1, e = whole ? j->f1 : r + 1;
            size_t at = (k * rows + (size_t)(r - q->r0)) * w, n = (size_t)(e - r) * w;
            float *dst = whole ? y + ((size_t)c * g->h + r) * w
                               : j->stash + (k * ns + (size_t)(r < j->f0 ? r - q->r0 : j->f0 - q->r0 + r - j->f1)) * w;
            if (wire) rtlp_floats_get((const uint8_t *)part + at * 4, (uint32_t)n, dst);
            else memcpy(dst, (const float *)part + at, n * sizeof *dst);
            r = e;
        }
    }
}

/* Part j's shared rows (its stash) merged into y by max. */
static void merge_rows(const rtl_gtdp_layer *g, const job *j, float *y)
{
    const rtl_gtdp_part *q = &j->q;
    size_t w = (size_t)g->w, ns = (size_t)(q->r1 - q->r0 - (j->f1 - j->f0));
    for (int c = q->c0; c < q->c1; c++)
        for (int r = q->r0, s = 0; r < q->r1; r++) {
            if (r >= j->f0 && r < j->f1) continue;
            const float *src = j->stash + ((size_t)(c - q->c0) * ns + (size_t)s++) * w;
            float *dst = y + ((size_t)c * g->h + r) * w;
            for (size_t x = 0; x < w; x++) dst[x] = src[x] > dst[x] ? src[x] : dst[x];
        }
}

/* The request's floats straight from the layer's map into the frame: input
 * rows in_r0..in_r1 of every channel, less the rows of the held answer
 * (channels hg[3]..hg[4], rows hg[1]..hg[2]) when the worker holds it. */
static void job_fill(void *arg, uint8_t *dst)
{
    const job *j = arg;
    const rtl_gtdp_layer *g = j->g;
    int a = j->q.in_r0, b = j->q.in_r1, lo = j->lo, hi = j->hi;
    size_t w = (size_t)g->w_in;
    for (int c = 0; c < g->c_in; c++) {
        const float *src = j->x + (size_t)c * g->h_in * w;
        if (j->held && c >= j->hg[3] && c < j->hg[4] && hi > lo) {
            rtlp_floats_put(dst, src + (size_t)a * w, (uint32_t)((size_t)(lo - a) * w)), dst += (size_t)(lo - a) * w * 4;
            rtlp_floats_put(dst, src + (size_t)hi * w, (uint32_t)((size_t)(b - hi) * w)), dst += (size_t)(b - hi) * w * 4;
        } else {
            rtlp_floats_put(dst, src + (size_t)a * w, (uint32_t)((size_t)(b - a) * w)), dst += (size_t)(b - a) * w * 4;
        }
    }
}

/* The answer (channels x rows x w, wire bytes) straight into the layer's
 * map y. */
static void job_take(void *arg, const uint8_t *src, uint32_t count)
{
    job *j = arg;
    if (count != j->nout) return; /* refused below */
    for (uint32_t i = 0; i < count; i++) { /* a NaN or an infinity: refused, the part is computed here */
        float v;
        rtlp_floats_get(src + 4 * (size_t)i, 1, &v);
        if (!isfinite(v)) {
            j->nonfinite = 1;
            return;
        }
    }
    put_rows(j->g, j, src, 1, j->y);
}

/* One part, in its own thread: its input rows written straight into the
 * request, the worker asked, its answer placed straight from the reply.
 * Each part writes only its own rows x channels of y, so the parts' copies
 * run side by side rather than on the device's thread. */
static void *job_main(void *arg)
{
    job *j = arg;
    size_t got = 0;
    const rtl_gtdp_layer *g = j->g;
    rtl_part_io io = {job_fill, job_take, j, j->t};
    if (j->cpu >= 0) { /* named by the cache's part_cpu hook (rtl_gtdp_set_hooks) */
        const rtl_gtdp_hooks *hk = &rtl_model_gtdp_cache_get(j->m)->hooks;
        if (hk->enter_cpu) hk->enter_cpu(hk->ctx, j->cpu);
    }
    j->t[RTL_IO_T_START] = rtl_now_ms();
    j->ok = rtl_peer_run_part_io(j->peer, j->m, g->index, g->last, &j->q, j->held ? j->hg : NULL,
                                 j->nsent, &io, j->nout, &got, j->deadline_ms, &j->err) == 0 &&
            got == j->nout && !j->nonfinite;
    j->t_got = rtl_now_ms();
    if (j->ok && (j->f0 != j->q.r0 || j->f1 != j->q.r1)) { /* its worker keeps its whole rows only */
        int32_t hg[5] = {j->g->last, j->f0, j->f1, j->q.c0, j->q.c1};
        rtl_peer_set_held(j->peer, j->f1 > j->f0 ? hg : NULL);
    }
    if (!j->ok && !j->err.msg[0] && j->nonfinite)
        snprintf(j->err.msg, sizeof j->err.msg, "the worker's answer holds a NaN or an infinity");
    else if (!j->ok && !j->err.msg[0])
        snprintf(j->err.msg, sizeof j->err.msg, "the worker answered %zu floats, not %zu", got, j->nout);
    return NULL;
}

static void sem_wait_all(sem_t *s)
{
    while (sem_wait(s) != 0 && errno == EINTR) {
    }
}

/* sem_wait, polled for up to ms first (0: not). A thread waking from
 * sem_wait on a CPU that has gone idle meanwhile starts 20 to 50 us after
 * the post on this machine (the idle CPU is woken first; more under a
 * hypervisor), once per hand-over and per join of every block, a cost one
 * worker alone does not pay (its part runs on the calling thread). Only
 * where the caller's thread has a CPU that no other part's thread, nor
 * other part's worker, runs on (job.spin): polling elsewhere would take
 * the CPU from the very thread it waits for, the device being under
 * SCHED_FIFO in the bench. */
static void sem_wait_spin(sem_t *s, double ms)
{
    if (ms > 0) {
        double end = rtl_now_ms() + ms;
        do {
            for (int i = 0; i < 64; i++) {
                if (sem_trywait(s) == 0) return;
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
            }
        } while (rtl_now_ms() < end);
    }
    sem_wait_all(s);
}

static void *helper_main(void *arg)
{
    struct helper *h = arg;
    int spin = 0;
    for (;;) {
        sem_wait_spin(&h->go, spin ? GTDP_SPIN_MS : 0);
        if (!h->job) return NULL;
        job_main(h->job);
        spin = h->job->spin; /* read before the post: the job is the caller's after it */
        sem_post(&h->done);
    }
}

/* Helper k of m's cache, started on first use; NULL when it cannot be. */
static struct helper *helper(rtl_model *m, int k)
{
    struct rtl_gtdp_cache *c = cache_of(m);
    if (!c) return NULL;
    struct helper *h = &c->help[k];
    if (h->started) return h;
    if (sem_init(&h->go, 0, 0) != 0) return NULL;
    if (sem_init(&h->done, 0, 0) != 0) {
        sem_destroy(&h->go);
        return NULL;
    }
    if (pthread_create(&h->th, NULL, helper_main, h) != 0) {
        sem_destroy(&h->go);
        sem_destroy(&h->done);
        return NULL;
    }
    h->started = 1;
    return h;
}

static int run_conv(rtl_model *m, const rtl_gtdp_layer *g, rtl_peer **peers, const rtl_gtdp_worker *w, int *alive,
                    int n, const float *x, float *y, int deadline_ms, int equal, int no_held, rtl_gtdp_stats *st,
                    rtl_err *err)
{
    rtl_gtdp_worker aw[RTL_GTDP_MAX_WORKERS];
    int map[RTL_GTDP_MAX_WORKERS], na = 0;
    for (int i = 0; i < n; i++)
        if (alive[i]) aw[na] = w[i], map[na++] = i;
    rtl_gtdp_layer gl = *g;
    if (!(gl.ms > 0)) gl.ms = (double)gl.macs / 1e6; /* unmeasured: MACs stand in for time */
    rtl_gtdp_layer_plan p;
    if (!(equal && rtl_gtdp_plan_equal(&gl, aw, na, &p, NULL) == 0) && rtl_gtdp_plan_layer(&gl, aw, na, &p, err) != 0)
        return -1;
    job jobs[RTL_GTDP_MAX_WORKERS];
    struct helper *hp[RTL_GTDP_MAX_WORKERS] = {0};
    int rc = 0;
    memset(jobs, 0, sizeof jobs);
    for (int k = 0; k < p.nparts; k++) {
        job *j = &jobs[k];
        j->q = p.parts[k];
        j->q.worker = map[j->q.worker];
        j->peer = peers[j->q.worker];
        j->m = m;
        j->g = g;
        j->x = x, j->y = y;
        j->nin = (size_t)(j->q.in_r1 - j->q.in_r0) * g->w_in * g->c_in;
        j->nout = (size_t)(j->q.r1 - j->q.r0) * (j->q.c1 - j->q.c0) * g->w;
        j->deadline_ms = deadline_ms;
        struct rtl_gtdp_cache *cc = *rtl_model_gtdp_cache(m);
        j->cpu = cc && cc->hooks.part_cpu ? cc->hooks.part_cpu(cc->hooks.ctx, j->q.worker) : -1;
        j->spin = j->cpu >= 0;
        for (int k2 = 0; k2 < k; k2++)
            if (jobs[k2].cpu == j->cpu) j->spin = jobs[k2].spin = 0;
        /* the worker still holds its answer of the block just before, a
         * part of this input: the rows it needs of it are not sent again */
        int32_t *h = j->hg;
        j->held = !no_held && rtl_peer_held(j->peer, h) && h[0] == g->index - 1 && h[2] <= g->h_in &&
                  h[4] <= g->c_in && h[1] < j->q.in_r1 && h[2] > j->q.in_r0;
        j->nsent = j->nin;
        if (j->held) /* the held answer's rows of its channels are not sent */
            j->nsent = rtlp_held_floats(g->c_in, g->w_in, j->q.in_r0, j->q.in_r1, h, &j->lo, &j->hi);
        /* rows whose pool windows it computes in part: merged by max after
         * every part is in, from -FLT_MAX (no part writes them meanwhile:
         * a part holding such a window whole would share its rows) */
        rtl_gtdp_whole_rows(g, &j->q, &j->f0, &j->f1);
        size_t ns = (size_t)(j->q.r1 - j->q.r0 - (j->f1 - j->f0));
        if (ns && !(j->stash = malloc(ns * (size_t)(j->q.c1 - j->q.c0) * g->w * sizeof(float)))) {
            rc = rtl_errf(err, "out of memory");
            goto done;
        }
        for (int c = j->q.c0; ns && c < j->q.c1; c++)
            for (int r = j->q.r0; r < j->q.r1; r++)
                if (r < j->f0 || r >= j->f1)
                    for (int xi = 0; xi < g->w; xi++) y[((size_t)c * g->h + r) * g->w + xi] = -FLT_MAX;
    }
    /* The last part runs on this thread, the others on the model's helper
     * threads. */
    double t0 = rtl_now_ms();
    for (int k = 0; k + 1 < p.nparts; k++)
        if ((hp[k] = helper(m, k))) {
            hp[k]->job = &jobs[k];
            sem_post(&hp[k]->go);
        }
    job_main(&jobs[p.nparts - 1]);
    for (int k = 0; k + 1 < p.nparts; k++) {
        if (hp[k]) sem_wait_spin(&hp[k]->done, jobs[p.nparts - 1].spin ? GTDP_SPIN_MS : 0);
        else snprintf(jobs[k].err.msg, sizeof jobs[k].err.msg, "could not start a thread");
    }
    for (int k = 0; k < p.nparts; k++) {
        job *j = &jobs[k];
        if (st) st->parts++, st->bytes += 4 * (uint64_t)(j->nsent + j->nout), st->held += j->held;
        if (j->ok && st && st->nrec < RTL_GTDP_MAX_REC) {
            rtl_gtdp_part_rec *r = &st->rec[st->nrec++];
            *r = (rtl_gtdp_part_rec){g->index, j->q.worker, p.parts[k].compute_ms, p.parts[k].transfer_ms,
                                     j->t_got - t0, {0}, j->nsent, j->nout};
            for (int s = 0; s < RTL_IO_T_N; s++) r->t[s] = j->t[s] > 0 ? j->t[s] - t0 : 0;
        }
        if (j->ok) continue;
        /* The worker is gone (or failed): its part is computed here, and
         * it gets no more parts. */
        alive[j->q.worker] = 0;
        rtl_peer_close(peers[j->q.worker]);
        peers[j->q.worker] = NULL;
        if (st) {
            st->recomputed++;
            if (snprintf(st->last_failure, sizeof st->last_failure, "worker %d, layer %d: %s", j->q.worker + 1,
                         g->index, j->err.msg) >= (int)sizeof st->last_failure) {
                /* a long message keeps its start (the reason comes first) */
            }
        }
        if (!(j->in = malloc(j->nin * sizeof(float))) || !(j->out = malloc(j->nout * sizeof(float)))) {
            rc = rtl_errf(err, "out of memory");
            goto done;
        }
        rtl_gtdp_rows_of(x, g->c_in, g->h_in, g->w_in, j->q.in_r0, j->q.in_r1, j->in);
        if (rtl_gtdp_compute_part(m, g->index, &j->q, j->in, j->nin, j->out, err) != 0) {
            rc = -1;
            goto done;
        }
        put_rows(g, j, j->out, 0, y);
    }
    for (int k = 0; k < p.nparts; k++)
        if (jobs[k].stash) merge_rows(g, &jobs[k], y);
done:
    for (int k = 0; k < p.nparts; k++) {
        free(jobs[k].in);
        free(jobs[k].out);
        free(jobs[k].stash);
    }
    return rc;
}

int rtl_gtdp_run(rtl_model *m, rtl_peer **peers, const rtl_gtdp_worker *w, int n, const float *x, int deadline_ms,
                 int flags, rtl_gtdp_stats *st, rtl_err *err)
{
    int equal = flags & RTL_GTDP_EQUAL, no_held = (flags & RTL_GTDP_RESEND) != 0;
    if (n < 1 || n > RTL_GTDP_MAX_WORKERS)
        return rtl_errf(err, "GTDP: %d workers (1..%d are supported)", n, RTL_GTDP_MAX_WORKERS);
    if (st) memset(st, 0, sizeof *st);
    /* a hook may move the parts' threads (rtl_gtdp_set_hooks); this
     * thread, which runs the last part of each block, it hears of at the end */
    struct rtl_gtdp_cache *cc = *rtl_model_gtdp_cache(m);
    int alive[RTL_GTDP_MAX_WORKERS], L = rtl_model_layers(m), rc = -1;
    for (int i = 0; i < n; i++) alive[i] = peers[i] != NULL;
    size_t cap = rtl_model_input_size(m);
    for (int i = 1; i <= L; i++)
        if (rtl_model_cut_floats(m, i) > cap) cap = rtl_model_cut_floats(m, i);
    float *a = malloc(cap * sizeof *a), *b = malloc(cap * sizeof *b);
    if (!a || !b) {
        rtl_errf(err, "out of memory");
        goto out;
    }
    size_t na = rtl_model_input_size(m);
    double f0 = rtl_now_ms();
    memcpy(a, x, na * sizeof *a);
    for (int i = 0; i < L;) {
        int any = 0;
        for (int k = 0; k < n; k++) any |= alive[k];
        rtl_gtdp_layer g;
        double b0 = rtl_now_ms() - f0;
        if (any && rtl_gtdp_model_split(m, i, &g) == 0) {
            if (run_conv(m, &g, peers, w, alive, n, a, b, deadline_ms, equal, no_held, st, err) != 0) goto out;
            if (st) st->split_layers++;
            if (st && st->nblk < RTL_GTDP_MAX_BLK)
                st->blk[st->nblk++] = (rtl_gtdp_block_rec){i, g.last, 0, b0, rtl_now_ms() - f0};
            na = rtl_model_cut_floats(m, g.last + 1);
            float *t = a;
            a = b, b = t;
            i = g.last + 1;
            continue;
        }
        /* Here: layers i..j up to the next possible cut. */
        int j = i;
        while (j + 1 < L && !rtl_model_cut_ok(m, j + 1)) j++;
        const float *y;
        size_t ny;
        if (rtl_model_run_range(m, i, j, a, na, &y, &ny, err) != 0) goto out;
        memcpy(b, y, ny * sizeof *b);
        if (st && st->nblk < RTL_GTDP_MAX_BLK) st->blk[st->nblk++] = (rtl_gtdp_block_rec){i, j, 1, b0, rtl_now_ms() - f0};
        na = ny;
        float *t = a;
        a = b, b = t;
        i = j + 1;
    }
    rc = rtl_model_set_output(m, a, na, err);
    if (st) st->total_ms = rtl_now_ms() - f0;
out:
    if (cc && cc->hooks.leave) cc->hooks.leave(cc->hooks.ctx);
    free(a);
    free(b);
    return rc;
}

