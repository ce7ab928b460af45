/* gtdp_records.c: what the records of GTDP runs (rtl_gtdp_stats.rec,
 * .blk) say beyond the plan: per-part overheads, a block's wall time, the
 * part cost fitted to several forwards and a block's extra cost. A
 * host-side tool (rtl_sim.h, librtl-sim.a), no part of librtl: the device
 * runs parts (rtl_gtdp_run) and hands back the records; benches and rtl
 * run --workers' choice of cuts read them. */
#include "internal.h"
#include "rtl_sim.h"

void rtl_gtdp_part_overhead(const rtl_gtdp_stats *st, int n, double *out)
{
    double v[RTL_GTDP_MAX_REC];
    for (int i = 0; i < n; i++) {
        int k = 0;
        for (int r = 0; r < st->nrec; r++)
            if (st->rec[r].worker == i)
                v[k++] = st->rec[r].wall_ms - st->rec[r].compute_ms - st->rec[r].transfer_ms;
        if (!k) {
            out[i] = -1;
            continue;
        }
        out[i] = rtl_median(v, (size_t)k);
    }
}

double rtl_gtdp_block_ms(const rtl_gtdp_stats *st, int layer)
{
    double t = -1;
    for (int r = 0; r < st->nrec; r++)
        if (st->rec[r].layer == layer && st->rec[r].wall_ms > t) t = st->rec[r].wall_ms;
    return t;
}

void rtl_gtdp_fit_parts(const rtl_gtdp_stats *const *st, int nst, int n, double *fixed, double *slope)
{
    *slope = 0;
    for (int w = 0; w < n; w++) fixed[w] = -1;
    if (nst < 1 || n < 1) return;
    const rtl_gtdp_stats *s0 = st[0];
    double c[RTL_GTDP_MAX_REC], r[RTL_GTDP_MAX_REC], v[64];
    /* per part of the first forward: its compute, and the median over the
     * forwards with the same parts of its wall time less its transfer */
    for (int p = 0; p < s0->nrec; p++) {
        int k = 0;
        for (int f = 0; f < nst && k < 64; f++)
            if (st[f]->nrec == s0->nrec && st[f]->rec[p].layer == s0->rec[p].layer &&
                st[f]->rec[p].worker == s0->rec[p].worker)
                v[k++] = st[f]->rec[p].wall_ms - st[f]->rec[p].transfer_ms;
        c[p] = s0->rec[p].compute_ms;
        r[p] = rtl_median(v, (size_t)k); /* k >= 1: the first forward itself */
    }
    /* least squares of r = fixed[w] + (1 + slope) c: the slope from the
     * deviations within each worker, then each worker's mean */
    double sxy = 0, sxx = 0, mc[RTL_GTDP_MAX_WORKERS] = {0}, mr[RTL_GTDP_MAX_WORKERS] = {0};
    int cnt[RTL_GTDP_MAX_WORKERS] = {0};
    for (int p = 0; p < s0->nrec; p++) {
        int w = s0->rec[p].worker;
        if (w < 0 || w >= n || w >= RTL_GTDP_MAX_WORKERS) continue;
        mc[w] += c[p], mr[w] += r[p], cnt[w]++;
    }
    for (int w = 0; w < n && w < RTL_GTDP_MAX_WORKERS; w++)
        if (cnt[w]) mc[w] /= cnt[w], mr[w] /= cnt[w];
    for (int p = 0; p < s0->nrec; p++) {
        int w = s0->rec[p].worker;
        if (w < 0 || w >= n || w >= RTL_GTDP_MAX_WORKERS) continue;
        sxy += (c[p] - mc[w]) * (r[p] - mr[w]), sxx += (c[p] - mc[w]) * (c[p] - mc[w]);
    }
    double b = sxx > 1e-12 ? sxy / sxx : 1; /* b = 1 + slope */
    if (b < 0.5) b = 0.5;
    if (b > 3) b = 3;
    *slope = b - 1;
    for (int w = 0; w < n && w < RTL_GTDP_MAX_WORKERS; w++)
        if (cnt[w]) fixed[w] = mr[w] - b * mc[w] > 0 ? mr[w] - b * mc[w] : 0;
}

double rtl_gtdp_block_extra(const rtl_gtdp_stats *st, const double *fixed, double slope, int n)
{
    double v[RTL_GTDP_MAX_REC];
    int k = 0;
    for (int r = 0; r < st->nrec;) { /* a block's parts are consecutive */
        int layer = st->rec[r].layer;
        double wall = -1, model = -1;
        for (; r < st->nrec && st->rec[r].layer == layer; r++) {
            const rtl_gtdp_part_rec *p = &st->rec[r];
            double f = p->worker >= 0 && p->worker < n && fixed[p->worker] > 0 ? fixed[p->worker] : 0;
            double t = f + p->transfer_ms + (1 + slope) * p->compute_ms;
            if (p->wall_ms > wall) wall = p->wall_ms;
            if (t > model) model = t;
        }
        v[k++] = wall - model;
    }
    return k ? rtl_median(v, (size_t)k) : 0;
}
