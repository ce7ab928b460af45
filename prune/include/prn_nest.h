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
 *  - the input slices of old filters that read newly grown channels start
 *    from init's weights and train with the new filters (train_slices; 0:
 *    the earlier format, where they are zero and frozen);
 *  - every other parameter is frozen (mask 0: no update, no decay, no
 *    rolling-statistics update) except the old channels' batch-norm vectors
 *    kept per capacity (prn_nest_bn_roles), so each smaller capacity, with
 *    its own kept vectors (prn_nest_bn_apply), keeps computing, bit for
 *    bit, what it computed when it was trained;
 *  - a fixed layer (one whose filters do not grow, e.g. the classifier,
 *    which keeps its classes) trains the new input columns of all its rows
 *    instead: smaller capacities never read those columns.
 * With trained slices an old channel reads the new channels, so its
 * batch-norm statistics (and with bn_affine its scale and shift) are kept
 * per capacity: prn_nest_bn_*. (A fixed layer with batch norm is refused.)
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
    int train_slices; /* 1: the old filters' input slices that read new
                       * channels start from the step model's weights and
                       * train, and the old channels' batch-norm statistics
                       * follow the new capacity (kept per capacity:
                       * prn_nest_bn_*); 0: the slices stay zero and frozen,
                       * one set of statistics (the earlier format) */
    int bn_affine;    /* with train_slices: the old channels' batch-norm
                       * scales and shifts train and are kept per capacity too */
    int preserve;     /* 1: the weights that read the new channels from an
                       * old channel or a fixed layer (old-to-new slices, the
                       * fixed layers' new columns) start at 0 instead of
                       * init's (still trained with train_slices): capacity
                       * k starts computing capacity k-1's function (up to
                       * its re-estimated statistics) */
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

/* Batch-norm vectors kept per capacity (train_slices): the roles
 * (1u << trn_param_role; 0 without train_slices): rolling mean and
 * variance, with bn_affine also scales and biases. */
unsigned prn_nest_bn_roles(const prn_nest *n);

/* Every capacity's vectors in trn_net_vectors_count's layout: capacity k's
 * are v[off[k] .. off[k + 1]). */
typedef struct prn_nest_bn {
    unsigned roles;
    size_t *off; /* [ncap + 1] */
    float *v;
} prn_nest_bn;

int prn_nest_bn_init(prn_nest_bn *b, trn_net *net, const prn_nest *n, trn_err *err) TRN_MUST_CHECK;
/* Keeps net's current vectors as capacity k's; leaves capacity k set. */
int prn_nest_bn_keep(prn_nest_bn *b, trn_net *net, const prn_nest *n, int k, trn_err *err) TRN_MUST_CHECK;
/* Writes capacity k's kept vectors into net (its parameters owned) and
 * leaves capacity k set: net then computes capacity k as trained. */
int prn_nest_bn_apply(const prn_nest_bn *b, trn_net *net, const prn_nest *n, int k, trn_err *err) TRN_MUST_CHECK;
/* The capacity_bn file (prune/README.md, "Freeze-&-grow"): a 16-byte header
 * ("CPBN", int32 version 1, int32 ncap - 1, uint32 roles), then capacities
 * 1 .. ncap - 1's vectors (the largest capacity's are the weights file's). */
#define PRN_NEST_BN_HEADER 16
int prn_nest_bn_save(const prn_nest_bn *b, const prn_nest *n, const char *path, trn_err *err) TRN_MUST_CHECK;
void prn_nest_bn_free(prn_nest_bn *b);

#ifdef __cplusplus
}
#endif
#endif /* PRN_NEST_H */
