/* valid.c: the evaluation behind `trainer valid` (which parses, calls
 * trn_valid and prints): every image of a split once through the
 * network, top-1/top-k/top-5 counts and the confusion matrix. */
#include "trn.h"

#include <stdlib.h>
#include <string.h>

/* Indexes of the k largest of p[0..n), best first (ties: lower index). */
void trn_top_k(const float *p, int n, int k, int *out)
{
    for (int j = 0; j < k; j++) {
        int best = -1;
        for (int i = 0; i < n; i++) {
            int taken = 0;
            for (int q = 0; q < j; q++) taken |= out[q] == i;
            if (!taken && (best < 0 || p[i] > p[best])) best = i;
        }
        out[j] = best;
    }
}

/* Counts image i (labels y, outputs p) into r and preds. */
static void score(const trn_valid_opts *o, int classes, const float *y, const float *p, int *best, size_t i,
                  trn_valid_result *r, trn_preds *preds)
{
    int truth = 0;
    for (int c = 1; c < classes; c++)
        if (y[c] > y[truth]) truth = c;
    trn_top_k(p, classes, o->k, best);
    r->conf[(size_t)truth * classes + best[0]]++;
    if (o->predictions) {
        preds->truth[i] = truth;
        preds->pred[i] = best[0];
    }
    r->good1 += best[0] == truth;
    for (int q = 0; q < o->k; q++) {
        r->goodk += best[q] == truth;
        if (q < 5) r->good5 += best[q] == truth;
    }
}

/* Every batch through the network, scored. */
static int run_batches(const trn_valid_opts *o, trn_loader *ld, trn_valid_result *r, trn_preds *preds, trn_err *err)
{
    int classes = trn_dataset_classes(o->ds), rc = -1;
    size_t batch = (size_t)o->batch;
    float *x = malloc(batch * trn_net_inputs(o->net) * sizeof *x), *y = malloc(batch * (size_t)classes * sizeof *y);
    int *best = malloc((size_t)o->k * sizeof *best);
    if (!x || !y || !best) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (uint64_t b = 0; b * batch < o->n; b++) {
        if (trn_loader_get(ld, b, x, y, err) != 0 || trn_net_forward(o->net, x, err) != 0) goto out;
        const float *p = trn_net_output(o->net);
        for (size_t j = 0; j < batch && b * batch + j < o->n; j++)
            score(o, classes, y + j * (size_t)classes, p + j * (size_t)classes, best, b * batch + j, r, preds);
    }
    rc = 0;
out:
    free(x);
    free(y);
    free(best);
    return rc;
}

int trn_valid(const trn_valid_opts *o, trn_valid_result *r, trn_err *err)
{
    memset(r, 0, sizeof *r);
    int classes = trn_dataset_classes(o->ds), rc = -1;
    trn_preds preds = {0};
    trn_loader *ld = NULL;
    if (o->predictions && trn_preds_init(&preds, o->ds, o->split, o->n, err) != 0) goto out;
    if ((int)trn_net_outputs(o->net) != classes) {
        trn_errf(err, "%s has %zu outputs but %s has %d classes", o->cfg, trn_net_outputs(o->net), o->data, classes);
        goto out;
    }
    trn_loader_opts lo;
    trn_loader_opts_defaults(&lo);
    trn_shape in = trn_net_input_shape(o->net);
    lo.w = in.w, lo.h = in.h, lo.c = in.c;
    lo.batch = o->batch, lo.augment = 0, lo.shuffle = 0, lo.threads = o->loader_threads;
    if (!(ld = trn_loader_open(o->ds, o->split, &lo, err))) goto out;
    if (!(r->conf = calloc((size_t)classes * classes, sizeof *r->conf))) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (run_batches(o, ld, r, &preds, err) != 0) goto out;
    if (o->predictions && trn_preds_write(o->predictions, &preds, err) != 0) goto out;
    rc = 0;
out:
    if (rc) trn_valid_result_free(r);
    trn_preds_free(&preds);
    trn_loader_close(ld);
    return rc;
}

void trn_valid_result_free(trn_valid_result *r)
{
    free(r->conf);
    r->conf = NULL;
}
