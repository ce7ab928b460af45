/*
 * roadmap.c: the pieces of NestDNN's filter pruning roadmap (the
 * thesis section 3.4.1.5, docs/papers.md) that need no data: which
 * filters a step removes, and the common filter order that makes every
 * step's model a prefix of the one before (what freeze-&-grow's channel
 * prefixes need). The iteration itself (rank, prune, retrain, evaluate)
 * runs in `prune roadmap` (prune/cli/roadmap_cli.c), which owns the data.
 */
#include "prn_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int prn_roadmap_choose(const prn_ranking *r, double step, int min_filters, double max_layer_step,
                       double min_layer_step, const int *target, int **kept, int *nkept, trn_err *err)
{
    int L = r->nlayers, removed = 0;
    char **gone = calloc((size_t)L, sizeof *gone);
    int *left = calloc((size_t)L, sizeof *left), *floor_ = calloc((size_t)L, sizeof *floor_);
    if (!gone || !left || !floor_) goto oom;
    for (int l = 0; l < L; l++) {
        int n = r->layers[l].filters;
        if (!(gone[l] = calloc((size_t)n, 1))) goto oom;
        left[l] = n;
        if (target) {
            if (target[l] < 1 || target[l] > n) {
                trn_errf(err, "layer %d: the target of %d filters is outside 1..%d (the current count)",
                         r->layers[l].layer, target[l], n);
                removed = -1;
                goto done;
            }
            floor_[l] = target[l];
        } else {
            int f = (int)ceil((1.0 - max_layer_step) * n - 1e-9);
            floor_[l] = f > min_filters ? f : min_filters;
        }
    }
    if (target) {
        /* Each layer by its own order, least important (its end) first. */
        for (int l = 0; l < L; l++)
            for (int j = r->layers[l].filters - 1; left[l] > floor_[l]; j--) {
                gone[l][r->layers[l].order[j]] = 1;
                left[l]--;
                removed++;
            }
    } else {
        int want = (int)ceil(step * r->filters - 1e-9);
        /* Every layer first loses its own least important min_layer_step
         * share (as far as its floor allows), then the cross-layer order
         * takes the rest. */
        char *listed = calloc((size_t)L, 1); /* layers in the cross-layer order (connected=0 leaves some out) */
        if (!listed) goto oom;
        for (int i = 0; i < r->filters; i++) listed[r->order[i].layer] = 1;
        for (int l = 0; min_layer_step > 0 && l < L; l++) {
            int n = r->layers[l].filters, share = listed[l] ? (int)ceil(min_layer_step * n - 1e-9) : 0;
            for (int j = n - 1; share > 0 && left[l] > floor_[l]; j--, share--) {
                gone[l][r->layers[l].order[j]] = 1;
                left[l]--;
                removed++;
            }
        }
        free(listed);
        for (int i = 0; i < r->filters && removed < want; i++) {
            int l = r->order[i].layer, f = r->order[i].filter;
            if (gone[l][f] || left[l] <= floor_[l]) continue;
            gone[l][f] = 1;
            left[l]--;
            removed++;
        }
    }
    for (int l = 0; l < L; l++) {
        nkept[l] = 0;
        for (int f = 0; f < r->layers[l].filters; f++)
            if (!gone[l][f]) kept[l][nkept[l]++] = f;
    }
    goto done;
oom:
    removed = trn_errf(err, "out of memory");
done:
    for (int l = 0; gone && l < L; l++) free(gone[l]);
    free(gone);
    free(left);
    free(floor_);
    return removed;
}

int prn_roadmap_order(int nsteps, int nlayers, const int *base, int *const *const *perm,
                      int *const *nkept, int **order, trn_err *err)
{
    for (int l = 0; l < nlayers; l++) {
        char *in = calloc((size_t)base[l], 1), *placed = calloc((size_t)base[l], 1);
        if (!in || !placed) {
            free(in), free(placed);
            return trn_errf(err, "out of memory");
        }
        int at = 0, rc = 0;
        for (int k = nsteps - 1; k >= 0 && rc == 0; k--) {
            /* Step k must hold every filter of step k + 1. */
            memset(in, 0, (size_t)base[l]);
            for (int j = 0; j < nkept[k][l]; j++) {
                int f = perm[k][l][j];
                if (f < 0 || f >= base[l]) {
                    rc = trn_errf(err, "step %d, ranked layer %d: filter %d is not a base filter (0..%d)", k,
                                  l, f, base[l] - 1);
                    break;
                }
                in[f] = 1;
            }
            for (int f = 0; rc == 0 && f < base[l]; f++)
                if (placed[f] && !in[f])
                    rc = trn_errf(err, "ranked layer %d: step %d holds base filter %d, step %d does not: the "
                                       "steps are not nested", l, k + 1, f, k);
            for (int j = 0; rc == 0 && j < nkept[k][l]; j++) {
                int f = perm[k][l][j];
                if (!placed[f]) placed[f] = 1, order[l][at++] = f;
            }
        }
        if (rc == 0 && at != base[l])
            rc = trn_errf(err, "ranked layer %d: step 0 holds %d of its %d filters", l, at, base[l]);
        free(in);
        free(placed);
        if (rc) return rc;
    }
    return 0;
}

int prn_nest_pick_steps(int nsteps, int nlayers, const int *kept, const double *macs, int seed_step, int ncap,
                        int *out, trn_err *err)
{
    if (seed_step < 1 || seed_step >= nsteps || ncap < 2 || ncap > seed_step + 1)
        return trn_errf(err, "%d capacities cannot be chosen from roadmap steps 0..%d (seed step %d)", ncap,
                        seed_step, seed_step);
    /* blocked(a, b): growing from step a to the less pruned step b leaves
     * some layer (one that grows somewhere) without a new filter. cost[k][s]:
     * the best (blocked, spread) of capacities 0..k with capacity k at step s. */
    size_t S = (size_t)seed_step + 1;
    double *spread = malloc((size_t)ncap * S * sizeof *spread);
    int *blocked = malloc((size_t)ncap * S * sizeof *blocked), *from = malloc((size_t)ncap * S * sizeof *from);
    if (!spread || !blocked || !from) {
        free(spread), free(blocked), free(from);
        return trn_errf(err, "out of memory");
    }
    double ms = macs[seed_step], range = macs[0] - ms;
    if (range <= 0) range = 1;
    for (size_t i = 0; i < (size_t)ncap * S; i++) blocked[i] = -1;
    blocked[seed_step] = 0, spread[seed_step] = 0, from[seed_step] = -1;
    for (int k = 1; k < ncap; k++) {
        double want = ms + (macs[0] - ms) * (double)k / (double)(ncap - 1);
        /* Capacity k sits at a step that leaves a step for each later one. */
        int lo = k == ncap - 1 ? 0 : ncap - 1 - k, hi = k == ncap - 1 ? 0 : seed_step - k;
        for (int s = lo; s <= hi; s++) {
            double d = (macs[s] - want) / range;
            for (int p = s + 1; p <= seed_step; p++) {
                size_t prev = (size_t)(k - 1) * S + (size_t)p;
                if (blocked[prev] < 0) continue;
                int b = 0;
                for (int l = 0; l < nlayers && !b; l++) {
                    int grows = kept[(size_t)seed_step * nlayers + l] != kept[l];
                    b = grows && kept[(size_t)s * nlayers + l] <= kept[(size_t)p * nlayers + l];
                }
                int nb = blocked[prev] + b;
                double sp = spread[prev] + (k == ncap - 1 ? 0 : d * d);
                size_t at = (size_t)k * S + (size_t)s;
                if (blocked[at] < 0 || nb < blocked[at] || (nb == blocked[at] && sp < spread[at] - 1e-12))
                    blocked[at] = nb, spread[at] = sp, from[at] = p;
            }
        }
    }
    int rc = blocked[(size_t)(ncap - 1) * S];
    for (int k = ncap - 1, s = 0; k >= 0; s = from[(size_t)k * S + (size_t)s], k--) out[k] = s;
    free(spread), free(blocked), free(from);
    return rc;
}
