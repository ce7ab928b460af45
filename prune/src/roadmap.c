/*
 * roadmap.c: the pieces of NestDNN's filter pruning roadmap (papers/
 * nestdnn-flexdnn-thesis19.txt section 3.4.1.5) that need no data: which
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
                       const int *target, int **kept, int *nkept, trn_err *err)
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
        for (int i = 0; i < r->filters && removed < want; i++) {
            int l = r->order[i].layer, f = r->order[i].filter;
            if (left[l] <= floor_[l]) continue;
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
