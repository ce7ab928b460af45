/*
 * bnstats.c: re-estimating batch-norm statistics after pruning or growing
 * (prn_bn_recalibrate, prn.h).
 *
 * The engine moves a rolling statistic by 1% of each training forward's
 * batch statistic (trainer/nn/batchnorm.c: r = 0.99 r + 0.01 b). A model
 * retrained for a few dozen batches after its filters changed therefore
 * keeps most of the statistics of the model it came from (0.99^60 = 55%
 * after 60 batches), although its layers' inputs are no longer those; at
 * inference the batch norm then scales and shifts with the wrong figures.
 * Here the statistics to re-estimate start at 0 and `batches` training
 * forwards run with no weight update; the result is divided by the weight
 * those forwards gave their batches (the same recurrence run on 1s, in the
 * engine's float arithmetic, so a constant batch statistic comes back
 * exactly): the normalised exponentially weighted mean of the batches'
 * statistics, nothing of the old value left. (Our addition, not a step of
 * NestDNN: the thesis retrains and says nothing about the statistics.)
 */
#include "prn_impl.h"

#include <stdlib.h>
#include <string.h>

int prn_bn_recalibrate(trn_net *net, trn_batch_fn next, void *ctx, uint64_t first, int batches, trn_err *err)
{
    if (batches <= 0) return 0;
    if (!next) return trn_errf(err, "batch-norm recalibration needs a batch source");
    int np, L = trn_net_layers(net);
    const trn_param *p = trn_net_params(net, &np);
    int *active = malloc((size_t)(L > 0 ? L : 1) * sizeof *active);
    size_t nin = (size_t)trn_net_batch(net) * trn_net_inputs(net);
    size_t nout = (size_t)trn_net_batch(net) * trn_net_outputs(net);
    float *x = malloc((nin ? nin : 1) * sizeof *x), *y = malloc((nout ? nout : 1) * sizeof *y);
    int rc = active && x && y ? 0 : trn_errf(err, "out of memory");
    /* The statistics the forwards will move: the active channels (the
     * capacity's prefix) that are not frozen. */
    for (int i = 0; rc == 0 && i < L; i++) {
        trn_layer_info in;
        active[i] = trn_net_layer_info(net, i, &in) == 0 ? in.out.c : 0;
    }
    for (int k = 0; rc == 0 && k < np; k++) {
        if (p[k].role != TRN_PARAM_ROLLING_MEAN && p[k].role != TRN_PARAM_ROLLING_VARIANCE) continue;
        size_t c = (size_t)active[p[k].layer] < p[k].count ? (size_t)active[p[k].layer] : p[k].count;
        for (size_t e = 0; e < c; e++)
            if (!p[k].mask || p[k].mask[e] != 0) p[k].data[e] = 0;
    }
    for (int b = 0; rc == 0 && b < batches; b++) {
        if ((rc = next(ctx, first + (uint64_t)b, x, y, err)) != 0) break;
        rc = trn_net_forward_train(net, x, NULL, err);
    }
    if (rc == 0) {
        float w = 0; /* the weight the recurrence gave the batches, in its arithmetic */
        for (int b = 0; b < batches; b++) {
            w *= 0.99f;
            w += 0.01f * 1.0f;
        }
        for (int k = 0; k < np; k++) {
            if (p[k].role != TRN_PARAM_ROLLING_MEAN && p[k].role != TRN_PARAM_ROLLING_VARIANCE) continue;
            size_t c = (size_t)active[p[k].layer] < p[k].count ? (size_t)active[p[k].layer] : p[k].count;
            for (size_t e = 0; e < c; e++)
                if (!p[k].mask || p[k].mask[e] != 0) p[k].data[e] /= w;
        }
    }
    free(active);
    free(x);
    free(y);
    return rc;
}
