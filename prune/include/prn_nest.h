/*
 * prn_nest.h: NestDNN's freeze-&-grow into one multi-capacity model
 * (thesis chapter 3.4.2; prune/README.md, "Freeze-&-grow").
 *
 * The network is built at its largest capacity; capacity k is a channel
 * prefix per layer (trn_net_set_capacity). Growing from capacity k-1 to k:
 *  - the new filters (rows f_{k-1}..f_k of a growing layer) start from
 *    their pre-pruning weights, taken from `init`, a network built as
 *    capacity k with its filters in the same order (the roadmap's step
 *    model of that size);
 *  - the input slices of old filters that read newly grown channels are
 *    set to zero and stay zero (frozen);
 *  - every other parameter is frozen (mask 0: no update, no decay, no
 *    rolling-statistics update), so each smaller capacity keeps computing,
 *    bit for bit, what it computed when it was trained;
 *  - a fixed layer (one whose filters do not grow, e.g. the classifier,
 *    which keeps its classes) trains the new input columns of all its rows
 *    instead: smaller capacities never read those columns.
 * Batch-norm statistics need no per-capacity copy: an old channel reads
 * only old channels, so its statistics are the same at every capacity
 * (a fixed layer with batch norm would need them and is refused).
 */
#ifndef PRN_NEST_H
#define PRN_NEST_H

#include "trn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prn_nest {
    int ncap;      /* capacities, smallest first */
    int nlayers;   /* the network's layers */
    int *filters;  /* [ncap][nlayers]: trn_net_set_capacity's array per
                    * capacity (full count for a fixed layer, 0 for kinds
                    * without filters); counts never shrink with k */
    unsigned char *fixed; /* [nlayers]: 1 for a layer whose filters do not grow */
    int train_slices; /* measurement only (prune grow slices=1): the old filters'
                       * input slices that read new channels start from the
                       * step model's weights and train, and the old channels'
                       * batch-norm statistics follow the new capacity. Every
                       * smaller capacity's weights stay bit for bit, but its
                       * statistics do not (they would have to be kept per
                       * capacity): only the capacity just grown is valid */
} prn_nest;

/* Checks n against net: sizes, nesting, every capacity accepted by the
 * engine, fixed layers without batch norm. -1 with err. */
int prn_nest_check(trn_net *net, const prn_nest *n, trn_err *err) TRN_MUST_CHECK;

/* Sets net to capacity 0 holding `seed`'s parameters (a network built as
 * capacity 0), masks every parameter but nothing to train. */
int prn_nest_start(trn_net *net, const prn_nest *n, const trn_net *seed, trn_err *err) TRN_MUST_CHECK;

/* Growth step to capacity k (1 <= k < ncap): sets the capacity, copies the
 * new parameters from init, zeroes the old filters' new-input slices and
 * sets the masks that leave only the new parameters trainable. Then the
 * caller trains net (its capacity and masks as left here). */
int prn_nest_grow(trn_net *net, const prn_nest *n, int k, const trn_net *init, trn_err *err) TRN_MUST_CHECK;

/* After prn_nest_grow(k): restarts the new filters of capacity k that are
 * dead. Layer by layer in order, the growing layers' new filters' outputs
 * (after batch norm and the activation) are counted over `batches`
 * inference forwards of next(ctx, first), ... at capacity k; a new filter
 * whose outputs are non-zero at less than `threshold` of the positions and
 * images gets the parameters `fresh` holds for it (a network of the full
 * shape, as the engine initialises it: weights over the capacity's inputs,
 * bias, batch-norm scale and statistics). A ReLU unit that never fires gets
 * no gradient: the pruned units of the connected layers are mostly such
 * (that is why the ranking put them last), and as the only path from new
 * channels to the classifier (old units do not read new channels) they
 * would leave every channel grown below them without effect and without
 * training. *revived: the filters restarted. Leaves capacity k set. */
int prn_nest_revive(trn_net *net, const prn_nest *n, int k, const trn_net *fresh, trn_batch_fn next, void *ctx,
                    uint64_t first, int batches, double threshold, int *revived, trn_err *err) TRN_MUST_CHECK;

/* Removes every mask and restores the full capacity. */
void prn_nest_finish(trn_net *net);

/* Bytes of one capacity's parameters as a standalone model (float32 of the
 * active parameter slices) and the bytes of parameters added from
 * capacity a to capacity b (a < b; page-in of an upgrade, page-out of the
 * downgrade), counted as the engine lays them out. */
uint64_t prn_nest_capacity_bytes(trn_net *net, const prn_nest *n, int k);

/* What the zeroed input slices (old filters reading newer channels) cost
 * capacity k: their parameters and MACs (per image), which the capacity
 * stores and computes although they are zero. -1 on error. */
int prn_nest_zero_slices(trn_net *net, const prn_nest *n, int k, uint64_t *params, uint64_t *macs);

void prn_nest_free(prn_nest *n);

#ifdef __cplusplus
}
#endif
#endif /* PRN_NEST_H */
