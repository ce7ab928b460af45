/*
 * prn.h: the prune library (libprn), which derives cheaper variants from a
 * trained base network: MCDNN's static rewrites, low-rank (SVD)
 * factorisation of connected layers and the in-place ("mimic")
 * transformation (docs/papers.md, MCDNN section 4.1.1). The one
 * public header of prune/; every exported name starts with prn_/PRN_.
 * prune/README.md describes the techniques, the spec grammar and the
 * deviations from the paper.
 *
 * Conventions (as in trn.h, whose error buffer, cfg model and networks it
 * uses):
 * - Library code never exits and never prints; a failing function returns
 *   -1 (NULL for constructors) and fills the caller's trn_err with what was
 *   wrong, where (cfg file:line, spec position) and what to do.
 * - Random numbers come from the seed the caller passes; the same inputs
 *   and seed give the same bytes out.
 * - Objects returned by *_create and the derivations are owned by the
 *   caller and freed with the matching *_free.
 */
#ifndef PRN_H
#define PRN_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "trn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PRN_VERSION "0.1.0"

/* ---- the layer table of a base cfg (plan.c) --------------------------------- *
 *
 * Selectors name layers of the BASE network, whatever a spec does to it:
 *   conv#k   the k-th most expensive [convolutional] layer by MACs (k >= 1;
 *            ties go to the earlier layer)
 *   conv~k   the same ranking in the network as rewritten by the earlier
 *            rewrites of the spec (a layer of the base all the same)
 *   conv@k   the k-th [convolutional] layer in cfg order
 *   fc#k     the k-th largest [connected] layer by parameters, the final
 *            classifier (the last [connected] layer) excluded
 *   fc@k     the k-th [connected] layer in cfg order (classifier included)
 *   fc~k     like conv~k
 *   local#k, local~k, local@k   the same for Darknet's [local] layers
 *   L<i>     layer index i (cfg section i + 1), any kind
 * A cfg with [local] sections (which the trainer cannot build) is measured
 * through a proxy where each [local] becomes the [convolutional] of the
 * same geometry; the [local] layers' parameters are then computed by
 * Darknet's formula (out_h*out_w*filters biases and as many filters of
 * c*size*size weights). */

typedef enum prn_kind {
    PRN_KIND_CONV,      /* [convolutional] / [conv] */
    PRN_KIND_CONNECTED, /* [connected] / [conn] */
    PRN_KIND_LOCAL,     /* Darknet's [local] (cfg level only) */
    PRN_KIND_OTHER,
    PRN_KIND_COUNT
} prn_kind;
/* "conv", "fc", "local", "other": the selector prefix of a kind. */
const char *prn_kind_name(prn_kind k);

typedef struct prn_layer {
    int index;          /* layer index (cfg section index + 1) */
    prn_kind kind;
    const char *type;   /* section type as written in the cfg */
    int line;           /* line of the section header */
    trn_shape in, out;
    uint64_t macs, params;
    int order;          /* 1-based position among its kind in cfg order; 0 for other */
    int rank;           /* 1-based rank among its kind (conv/local by MACs, fc by
                         * parameters without the classifier); 0 where none */
    int classifier;     /* 1 for the final classifier (last [connected]) */
} prn_layer;

typedef struct prn_plan prn_plan;

/* Builds the layer table of cfg (which the plan does not keep). Fails with
 * the trainer's message when the network cannot be built. NULL on error. */
prn_plan *prn_plan_create(const trn_cfg *cfg, trn_err *err);
void prn_plan_free(prn_plan *p);
int prn_plan_layers(const prn_plan *p);
/* Layer i (NULL when out of range). */
const prn_layer *prn_plan_layer(const prn_plan *p, int i);
/* 1 when the cfg has [local] sections (the network then exists only as
 * cfg text: the trainer builds its proxy). */
int prn_plan_has_local(const prn_plan *p);

/* Resolves a selector (grammar above) to a layer index; -1 with an error
 * that names the selector and what exists (e.g. "conv#4: the network has
 * 3 convolutional layers"). */
int prn_select(const prn_plan *p, const char *sel, trn_err *err);

/* The proxy of cfg: a clone where every [local] becomes the
 * [convolutional] of the same output shape (filters, size, stride,
 * activation; pad=1 becomes padding=(size-1)/2, which needs an odd size).
 * NULL with an error naming file:line otherwise. */
trn_cfg *prn_cfg_proxy(const trn_cfg *cfg, trn_err *err);

/* ---- variants (variant.c) -------------------------------------------------- */

/* A derived variant, ready to be written. */
typedef struct prn_variant {
    const char *technique; /* "rewrite", "svd", "mimic" (static string) */
    char *description;     /* one line for people */
    trn_cfg *cfg;          /* the variant's cfg */
    trn_net *net;          /* its network (batch 1, inference only) holding the
                            * weights to start from, or the final ones */
    cJSON *fields;         /* technique_fields of meta.json (an object) */
    const char *parent;    /* meta.json's parent: the catalog id it derives from (not owned; NULL: "base") */
    cJSON *measured;       /* NULL, or meta.json's "measured": what differs from run
                            * to run (seconds); never copied into a manifest, so
                            * catalogs stay reproducible */
} prn_variant;

/* Frees what v holds and empties it (NULL-safe, idempotent). */
void prn_variant_free(prn_variant *v);

/* Writes dir/variant.cfg, dir/init.weights and dir/meta.json
 * ({"technique","parent" (v->parent, default "base"),"description","technique_fields"}),
 * creating dir. The old meta.json is removed first; each file is written
 * as every output is (trn_atomic_open: temporary name, renamed when
 * complete; a symbolic link followed), meta.json last (it is the file make
 * waits for), so a killed job leaves no half file and no meta.json that
 * describes missing or older files. */
int prn_variant_write(const prn_variant *v, const char *dir, trn_err *err) TRN_MUST_CHECK;

/* Copies into `dst` every layer of `src` whose parameter table (kinds,
 * roles and shapes) is unchanged, through map: map[i] is the dst layer of
 * src layer i, or -1. A layer that keeps its kind, kernel and input size
 * but has fewer filters (outputs) and/or reads a prefix of the input
 * channels is "sliced": it receives the matching sub-block (its first
 * filters, and of each the first input channels), so halving a layer
 * keeps half of what it had learnt. Returns a JSON object {"copied":[dst
 * layers], "sliced":[dst layers], "initialised":[dst layers with
 * parameters that were neither]} (NULL when out of memory). Layers
 * without parameters are in no list. */
cJSON *prn_copy_layers(const trn_net *src, trn_net *dst, const int *map, trn_err *err);

/* ---- static rewrites (rewrite.c) ------------------------------------------- *
 *
 * spec := op ['+' op ['+' op]]     (at most three rewrites)
 * op   := stride2:SEL      stride x2 of a [convolutional]/[local] layer
 *       | half:SEL         filters /2 of a [convolutional]/[local] layer
 *       | fcdivF:SEL       output /F of a [connected] layer, F in 2,4,8,16,32
 *                          (never the final classifier: its output is the
 *                          class count)
 *       | local2conv:SEL   a [local] layer becomes a [convolutional] one
 *       | remove:SEL       removes a [convolutional]/[local] layer; later
 *                          [route] layers= and [shortcut] from= are
 *                          renumbered, a reference to the removed layer is
 *                          an error
 * Selectors are resolved against the base before any rewrite applies,
 * except conv~k, fc~k and local~k: they rank the layers of the network as
 * rewritten by the spec's earlier ops (MCDNN rewrites "in sequence"), so
 * "stride2:conv#1+stride2:conv~1" strides the most expensive layer, then
 * the layer that is most expensive after that. */

/* Parses and applies spec to cfg: *out receives the rewritten cfg, map
 * (n_base entries, caller-allocated) the new index of each base layer or
 * -1, desc (may be NULL) a description, fields (may be NULL) the list of
 * resolved operations as JSON. The result is checked by building it (its
 * proxy when [local] layers remain). -1 on a bad spec, an unknown
 * selector, a rewrite that does not apply, or impossible shapes. */
int prn_rewrite_cfg(const trn_cfg *cfg, const prn_plan *plan, const char *spec, trn_cfg **out,
                    int *map, char **desc, cJSON **ops, trn_err *err) TRN_MUST_CHECK;

/* The whole rewrite verb: base is the trained base network of cfg (any
 * batch); the variant's network starts from `seed` with every layer whose
 * parameters keep their shape copied from base (technique_fields lists
 * them). base may be NULL when the cfg has [local] layers: then
 * base_weights (a Darknet .weights file of cfg) is read through the proxy. */
int prn_rewrite(const trn_cfg *cfg, const trn_net *base, const char *base_weights,
                const char *spec, uint64_t seed, prn_variant *out, trn_err *err) TRN_MUST_CHECK;

/* ---- SVD (svd.c) ----------------------------------------------------------- *
 *
 * spec := item ['+' item]...    item := SEL ':' (F 'x' | 'r' K)
 * A [connected] layer W (M' x M) becomes two [connected] layers: k x M
 * (Sigma_k V_k^T, linear activation, k zero biases) then M' x k (U_k, with
 * the original biases, batch norm and activation). "Fx" takes the largest
 * k whose two layers hold at most 1/F of the original layer's parameters
 * (biases and batch norm counted); "rK" takes k = K <= min(M, M'). */

/* Factorises base (the trained network of cfg). -1 on a bad spec, a layer
 * that is not [connected], an impossible rank or a LAPACK failure. */
int prn_svd(const trn_cfg *cfg, const trn_net *base, const char *spec, prn_variant *out,
            trn_err *err) TRN_MUST_CHECK;

/* ---- in-place transformation (mimic.c) ------------------------------------- */

/* Fills x, (batch, c, h, w) of the base network's input, with the images
 * of training step `step` (a pure function of step for reproducibility).
 * Returns 0, or -1 with err filled. */
typedef int (*prn_input_fn)(void *ctx, uint64_t step, float *x, trn_err *err);

typedef struct prn_mimic_opts {
    const char *from, *to; /* selectors of the fragment's first and last layers */
    const char *with;      /* replacement: sections separated by ';', the first
                            * item of a section its type, then key=value items
                            * separated by ',' */
    int batch;             /* images per regression step (16) */
    int batches;           /* regression steps (200) */
    float learning_rate;   /* (0.1; the gradient is that of the mean squared error) */
    float momentum;        /* (0.9) */
    float decay;           /* (0.0005) */
    uint64_t seed;         /* initial weights of the replacement and adapter */
    prn_input_fn input;    /* training images */
    void *input_ctx;
} prn_mimic_opts;

/* Defaults above; from, to, with, input must be set by the caller. */
void prn_mimic_opts_defaults(prn_mimic_opts *o);
/* Sets one option from "key=value" (batch, batches, learning_rate,
 * momentum, decay). -1 with an error naming the key and the accepted ones. */
int prn_mimic_opts_set(prn_mimic_opts *o, const char *kv, trn_err *err);

/* MCDNN's in-place transformation: the fragment from..to of base (built
 * from cfg with batch o->batch) is replaced by o->with plus, when the
 * channel counts differ, a linear 1x1 convolution adapter; replacement and
 * adapter are trained by regression (L2 loss, [cost] type=sse) on the
 * fragment's (input, output) pairs that base computes on o->input's images,
 * then spliced into base. -1 when the fragment reads layers outside itself,
 * is read from outside other than through its last layer, the replacement
 * does not parse or build, or its output's height and width differ from
 * the fragment's. */
int prn_mimic(const trn_cfg *cfg, trn_net *base, const prn_mimic_opts *o, prn_variant *out,
              trn_err *err) TRN_MUST_CHECK;

/* ---- group-lasso export (lasso.c) ------------------------------------------ *
 *
 * MeDNN's SMCD export: base has been trained with the trainer's lasso_*
 * keys (trainer/README.md); every channel between a [convolutional] layer
 * and the one [convolutional]/[connected] layer that reads it (through
 * unshared pooling and dropout layers) is removed when the producer's
 * filter group is exactly zero (batch norm: scale and shift; its
 * activation maps 0 to 0) or the consumer's weights on it are all zero.
 * The result is a plain Darknet model computing the same function
 * (technique "lasso"; technique_fields list per layer the filters before
 * and after, the zero columns shape sparsity leaves in the dense layers
 * and the MACs an im2col skipping them would save). A network with no zero
 * group is exported unchanged. -1 when out of memory or the result does
 * not build. */
int prn_lasso(const trn_cfg *cfg, const trn_net *base, prn_variant *out, trn_err *err) TRN_MUST_CHECK;
/* ---- filter rankings (rank.c) ---------------------------------------------- *
 *
 * NestDNN's Triplet Response Residual (TRR) and the L1-norm baseline rank
 * every filter of every [convolutional] layer (groups = 1) and every
 * [connected] layer but the classifier (the last [connected]). Scores are
 * normalised per layer (TRR: by map size x triplets; L1: by weights per
 * filter) and then ranked across layers; prune/README.md has the
 * definitions. */

typedef enum prn_rank_method {
    PRN_RANK_TRR,
    PRN_RANK_L1,
    PRN_RANK_RANDOM, /* a diagnostic baseline, neither NestDNN's nor Li et al.'s: a
                      * uniformly random score per filter from prn_rank_opts.seed */
    PRN_RANK_METHOD_COUNT
} prn_rank_method;
/* "trr", "l1", "random"; "?" when invalid. */
const char *prn_rank_method_name(prn_rank_method m);
/* The method named s, or -1. */
int prn_rank_method_parse(const char *s);

/* Fills anc, pos and neg, each (c, h, w) of the network's input, with the
 * images of triplet t (a pure function of t). 0, or -1 with err. */
typedef int (*prn_triplet_fn)(void *ctx, uint64_t t, float *anc, float *pos, float *neg,
                              trn_err *err);

/* Where TRR reads a filter's feature map F_i (the paper says only "the
 * generated feature map"; docs/targets.md 1.10): the layer's output (after batch
 * norm and the activation), after batch norm but before the activation,
 * before batch norm (the convolution's raw output), or POOLED: the output
 * of the pooling (and dropout) layers that directly follow the layer, each
 * acting on every channel alone, i.e. the map the next convolutional or
 * connected layer reads (the layer's output when none follows). A layer
 * without batch norm has the same map at BN and CONV; one with a linear
 * activation the same at OUTPUT and BN. */
typedef enum prn_trr_at {
    PRN_TRR_AT_OUTPUT,
    PRN_TRR_AT_BN,
    PRN_TRR_AT_CONV,
    PRN_TRR_AT_POOLED,
    PRN_TRR_AT_COUNT
} prn_trr_at;
/* "output", "bn", "conv", "pooled"; "?" when invalid. */
const char *prn_trr_at_name(prn_trr_at a);
/* The point named s, or -1. */
int prn_trr_at_parse(const char *s);

/* TRR's distance between two maps: the squared L2 norm of equation 3.1,
 * or the plain L2 norm. */
typedef enum prn_trr_distance {
    PRN_TRR_SQUARED,
    PRN_TRR_PLAIN,
    PRN_TRR_DISTANCE_COUNT
} prn_trr_distance;
/* The defaults of `prune trr`, `prune scan` and `prune roadmap`
 * (docs/prune.md, "Filter rankings": the measured choice). */
#define PRN_TRR_AT_DEFAULT PRN_TRR_AT_OUTPUT
#define PRN_TRR_DISTANCE_DEFAULT PRN_TRR_SQUARED
#define PRN_TRR_TRIPLETS_DEFAULT 8192
/* "squared", "plain"; "?" when invalid. */
const char *prn_trr_distance_name(prn_trr_distance d);
/* The distance named s, or -1. */
int prn_trr_distance_parse(const char *s);

typedef struct prn_rank_opts {
    prn_rank_method method;
    uint64_t triplets;        /* TRR: how many triplets (> 0) */
    prn_triplet_fn triplet;   /* TRR: the triplet source */
    void *triplet_ctx;
    prn_trr_at at;            /* TRR: where F_i is read (0: the layer's output) */
    prn_trr_distance distance; /* TRR: the distance (0: squared, equation 3.1) */
    const trn_cfg *cfg;       /* TRR with at != OUTPUT: the net's cfg (a copy
                               * with the layer's activation linear is built
                               * per ranked layer) */
    uint64_t seed;            /* RANDOM: the scores' seed */
} prn_rank_opts;

typedef struct prn_rank_layer {
    int layer;               /* layer index */
    trn_layer_kind kind;     /* convolutional or connected */
    int filters;             /* filters (outputs) */
    uint64_t map;            /* output height x width (1 for connected) */
    int f_layer;             /* TRR: the layer whose output F is read from (layer, or
                              * the pooling after it with --at pooled) */
    uint64_t f_map;          /* that output's height x width (TRR's normalisation) */
    uint64_t filter_weights; /* weights per filter */
    double *score;           /* [filters] raw: TRR sum, or L1 norm */
    double *norm;            /* [filters] normalised score */
    double *neg, *pos;       /* [filters] TRR's two sums (0 for the other methods): of the
                              * anchor-negative and of the anchor-positive distances
                              * (squared or plain, as the score); score = neg - pos */
    int *order;              /* [filters] the layer's filters, most important first */
} prn_rank_layer;

typedef struct prn_rank_entry {
    int layer;  /* position in prn_ranking.layers (not the layer index) */
    int filter;
} prn_rank_entry;

typedef struct prn_ranking {
    prn_rank_method method;
    uint64_t triplets;       /* TRR's triplet count (0 for L1) */
    prn_trr_at at;           /* TRR: where F_i was read */
    prn_trr_distance distance; /* TRR: the distance */
    int nlayers;
    prn_rank_layer *layers;  /* the ranked layers in cfg order */
    int filters;             /* all of their filters */
    prn_rank_entry *order;   /* [filters] every filter, least important first
                              * (ascending normalised score; ties: later layer,
                              * then later filter first) */
} prn_ranking;

/* The indexes of the layers a ranking covers, in cfg order, into
 * layers[0..max) (layers may be NULL); returns how many there are. */
int prn_rank_layers(const trn_net *net, int *layers, int max);

/* Ranks net's filters. TRR runs inference forwards of batch/3 triplets at a
 * time (the network's batch must be 3 or more) through the last ranked
 * layer and sums, per filter, ||F(anc)-F(neg)||^2 - ||F(anc)-F(pos)||^2 over
 * its output map (after batch norm and activation), in double, in triplet
 * order: the same bytes for any thread count. L1 reads the weights only.
 * NULL with err (no layer to rank, a failing triplet, non-finite scores).
 * Free with prn_ranking_free. */
prn_ranking *prn_rank(trn_net *net, const prn_rank_opts *o, trn_err *err);
void prn_ranking_free(prn_ranking *r);

/* Samples `count` triplets from n images whose classes are classes[0..n):
 * out[3t], out[3t+1], out[3t+2] receive triplet t's anchor, positive (same
 * class, another image) and negative (another class) as image indexes.
 * The anchor is uniform over the images that have a positive and a
 * negative, the positive uniform over the rest of its class, the negative
 * uniform over the other classes' images; triplet t is a pure function of
 * (seed, t). -1 with err when no triplet exists. */
int prn_triplets_sample(const int *classes, size_t n, uint64_t seed, uint64_t count, size_t *out,
                        trn_err *err);

/* Spearman's rank correlation of x[0..n) and y[0..n): the Pearson
 * correlation of their ranks, tied values sharing their mean rank (a
 * diagnostic of `prune scan --drop single`). NAN when n < 2 or either
 * side is constant. */
double prn_spearman(const double *x, const double *y, int n);

/* The ranking file's JSON (docs/prune.md, "Ranking file"): format,
 * version, method, triplets, normalisation, layers (layer, type, filters,
 * map, filter_weights, score, normalised, order) and prune_order ([layer
 * index, filter] pairs, least important first). net is the ranked
 * network. NULL when out of memory. */
cJSON *prn_ranking_json(const prn_ranking *r, const trn_net *net);
/* ---- retargeting: shared trunks and task heads (retarget.c) ----------------- *
 *
 * MCDNN section 4.1.3 (sharing) and 4.1.2 (specialisation): a trunk (layers
 * 0..cut of a trained base) is frozen; a head (optional hidden sections,
 * then a [connected] classifier and [softmax]) is trained on the trunk's
 * outputs, which are computed once and cached ("t' = m_l(t)"), so heads
 * train in seconds. */

/* Cached trunk outputs: n images, each shape.c*h*w floats. */
typedef struct prn_features {
    size_t n;
    trn_shape shape;
    float *x;
} prn_features;

/* Frees what f holds and empties it (NULL-safe). */
void prn_features_free(prn_features *f);

/* Appends the outputs of layers 0..cut of base for n images to f (which
 * may be empty, or hold features of the same shape): the images are those
 * of input steps first, first+1, ... (trn_net_batch(base) images each),
 * the last step's surplus dropped. -1 with err filled. */
int prn_features_add(trn_net *base, int cut, prn_input_fn input, void *ctx, uint64_t first,
                     size_t n, prn_features *f, trn_err *err) TRN_MUST_CHECK;

typedef struct prn_head_opts {
    const char *with;      /* hidden sections before the classifier, in mimic's
                            * --with syntax; NULL or "": a linear classifier */
    int batch;             /* feature vectors per step (64) */
    int batches;           /* SGD steps (1500), poly power 2 decay */
    float learning_rate;   /* (0.05) */
    float momentum;        /* (0.9) */
    float decay;           /* (0.0005) */
    int aug_passes;        /* extra augmented passes over the training images
                            * when the caller caches features (2) */
    uint64_t seed;         /* initial weights and the minibatch draws */
} prn_head_opts;

void prn_head_opts_defaults(prn_head_opts *o);
/* One option from "key=value" (batch, batches, learning_rate, momentum,
 * decay, aug_passes). -1 with an error naming the key and the accepted ones. */
int prn_head_opts_set(prn_head_opts *o, const char *kv, trn_err *err);

/* Trains a head of `classes` outputs on features f with labels[0..f->n)
 * (each in [0, classes)): minibatches of o->batch drawn uniformly with
 * replacement from trn_rng_fork(seed, step). *cfg receives the head's cfg
 * ([net] sized for one feature map, o->with, [connected] output=classes,
 * [softmax]), *net the trained head (batch o->batch), *loss_first and
 * *loss_last (may be NULL) the mean loss of the first and last tenth of the
 * steps. -1 when o->with does not parse or build on the features, holds a
 * [cost] or [softmax], or a label is out of range. */
int prn_head_train(const prn_features *f, const int *labels, int classes, const prn_head_opts *o,
                   trn_cfg **cfg, trn_net **net, float *loss_first, float *loss_last,
                   trn_err *err) TRN_MUST_CHECK;

/* The head's top-1 class of every feature vector of f into pred[0..f->n)
 * and, when conf is not NULL, its probability. */
int prn_head_predict(trn_net *head, const prn_features *f, int *pred, float *conf,
                     trn_err *err) TRN_MUST_CHECK;

/* The whole network of one task: layers 0..cut of cfg with base's weights,
 * then the head's layers (head_cfg without its [net]) with head's weights,
 * as one Darknet cfg and weights file that any reader runs. out->fields
 * holds {"head": {"trunk", "from_layer"}, head_macs, head_params, ...};
 * the caller adds its measurements. */
int prn_retarget_variant(const trn_cfg *cfg, const trn_net *base, int cut, const trn_cfg *head_cfg,
                         const trn_net *head, const char *trunk_id, prn_variant *out,
                         trn_err *err) TRN_MUST_CHECK;

/* ---- a retargeting run (retarget_run.c; `prune retarget`) ------------------ */

#define PRN_RETARGET_MAX_TASKS 16
#define PRN_RETARGET_MAX_POINTS 16

/* One point of a sweep: a trunk cut (a layer selector, resolved into cut
 * by the run) and the head's hidden sections (NULL: none). */
typedef struct prn_retarget_point {
    char sel[64];
    const char *head;
    int cut;
} prn_retarget_point;

/* What a run tells its caller: START once everything is read and checked
 * (before the first head trains); HEAD for every head trained (a task at a
 * point); KEEP, with --cuts, for the point each task keeps. */
typedef enum prn_retarget_event { PRN_RETARGET_START, PRN_RETARGET_HEAD, PRN_RETARGET_KEEP } prn_retarget_event;
typedef struct prn_retarget_report {
    prn_retarget_event event;
    int sweep;                     /* the run compares cuts (--cuts) */
    const char *task, *sel;        /* HEAD, KEEP: the task, the point's selector */
    int classes, within;           /* within: the head costs at most the budget */
    double head_macs, macs_fraction, head_params, params_fraction;
    double top1, lo, hi;           /* HEAD: held-out top-1 and its 95% interval */
    double valid_top1;             /* HEAD, KEEP (sweep): on the valid split */
} prn_retarget_report;

/* What prn_retarget_run reads: the base, the tasks file ("task data-file"
 * lines), the folder to write, the trunk's variant id and own task (NULL:
 * the file's first), the head settings, the sweep's budget and points. */
typedef struct prn_retarget_opts {
    const char *cfg, *weights, *tasks, *out, *trunk_id, *trunk_task;
    prn_head_opts head;
    double budget;
    uint64_t seed;
    int threads, sweep, npoints;
    prn_retarget_point pts[PRN_RETARGET_MAX_POINTS];
    char cuts[4096]; /* the words pts' heads point into */
    void (*progress)(void *ctx, const prn_retarget_report *r); /* NULL: none */
    void *progress_ctx;
} prn_retarget_opts;
/* The defaults: trunk "base", budget 0.01, prn_head_opts_defaults. */
void prn_retarget_opts_defaults(prn_retarget_opts *o);
/* The --set key=value settings: budget=F (0 < F <= 1), the others
 * prn_head_opts_set's. -1 with err naming the setting. */
int prn_retarget_settings(prn_retarget_opts *o, const char *const *kv, int n, trn_err *err);
/* The points: one cut SEL with head (cuts NULL), or a sweep of cuts ("SEL"
 * or "SEL:HEAD" words, a SEL alone taking head). -1 with err. */
int prn_retarget_points(prn_retarget_opts *o, const char *cut, const char *cuts, const char *head, trn_err *err);

typedef struct prn_retarget_summary {
    int heads, points;
    int cut_layer;     /* the first point's */
    size_t cached;     /* training vectors cached at the last cut */
} prn_retarget_summary;
/* Trains one head per task but the trunk's at every point on the trunk's
 * cached outputs and keeps, per task, the most accurate on the valid split
 * within the budget (docs/prune.md); writes OUT/<task>/{variant.cfg,
 * init.weights,meta.json} and OUT/retarget.json after every head has
 * trained, nothing when anything fails. -1 with err. */
int prn_retarget_run(const prn_retarget_opts *o, prn_retarget_summary *s, trn_err *err) TRN_MUST_CHECK;

/* ---- filter pruning by selection (filters.c) ------------------------------- */

/* Layer `layer` ([convolutional] or [connected]) keeps its filters
 * filters[0..n), in that order. */
typedef struct prn_keep {
    int layer;
    int n;
    const int *filters;
} prn_keep;

/* A clone of cfg (the cfg of net) with each keep[k].layer's filters= or
 * output= set to keep[k].n. NULL with err (a layer that has no filters, a
 * count outside 1..filters). */
trn_cfg *prn_filters_cfg(const trn_cfg *cfg, const trn_net *net, const prn_keep *keep, int nkeep,
                         trn_err *err);
/* Copies src's parameters into dst (built from prn_filters_cfg's cfg, any
 * batch or options): the kept filters' weights, biases and batch-norm
 * values in the keep order, and in every layer that reads them (through
 * channel-passing layers and [route] concatenations) the matching input
 * channels in the same order. -1 with err when a pruned layer's channels
 * reach a [shortcut] or the network output, a filter index is out of range
 * or repeated, or dst's shapes do not match. */
int prn_filters_copy(const trn_net *src, trn_net *dst, const prn_keep *keep, int nkeep, trn_err *err);
/* Rescales every filter of every batch-normalised layer of net (a layer
 * with weights and rolling statistics) to the mean L2 norm of the same
 * layer's filters in ref (the model net was pruned from), and its rolling
 * mean by the same factor and rolling variance by its square, so the
 * inference function is unchanged (up to batch norm's epsilon) while every
 * kept filter starts its retraining with the same norm: under batch norm a
 * filter's norm does not change its output but sets its effective learning
 * rate (lr / ||w||^2). Layers without batch norm, zero filters and frozen
 * ones (mask 0) are left as they are. *changed (may be NULL): the filters
 * rescaled. -1 with err when ref lacks a batch-normalised layer of net's.
 * (A diagnostic of the retraining in `prune roadmap --set rescale=1`, not a
 * step of NestDNN.) */
int prn_filters_rescale(trn_net *net, const trn_net *ref, int *changed, trn_err *err);
/* The share of the squared weights of src's layers that read the pruned
 * layers' channels (the next layers, through channel-passing layers and
 * [route]s; every row of theirs in src) that sits on the kept channels: how
 * much of what the next layers weigh stays connected. 1 when no layer reads
 * a pruned channel or the readers' weights are all zero. (A diagnostic of
 * `prune scan`: L1 keeps the channels the next layer weighs most, TRR does
 * not look at the next layer.) -1 with err (as prn_filters_copy). */
int prn_filters_next_share(const trn_net *src, const prn_keep *keep, int nkeep, double *share, trn_err *err);

/* Filter pruning to another model's per-layer counts (issue 34 item 6: L1
 * pruning against the group lasso at the same structure): in every layer r
 * ranks (r ranks base), the filters `like` has there, the most important
 * first by r; layers where like keeps all are left as they are. like is
 * base's network pruned (e.g. a `prune lasso` export: same layers, same
 * kinds, at most the base's filters each); only its shapes are read. out:
 * the variant (technique "pruned") with base's values, meta fields "method",
 * "layers" (layer, filters_after, kept), "macs_before", "macs_after". -1
 * with err (like not a pruned copy of base, a count outside 1..filters). */
int prn_filters_like(const trn_cfg *cfg, const trn_net *base, const prn_ranking *r, const trn_net *like,
                     prn_variant *out, trn_err *err) TRN_MUST_CHECK;

/* ---- the pruning roadmap (roadmap.c) --------------------------------------- */

/* One pruning step: which filters of the ranked layers stay. r ranks the
 * current model (r->layers[l].filters filters each). Without `target`,
 * removes the ceil(step x r->filters) least important filters in r->order,
 * skipping a layer's filter when the layer would keep fewer than
 * max(min_filters, ceil((1 - max_layer_step) x its filters)); with
 * min_layer_step > 0, every layer that r->order lists first loses its own ceil(min_layer_step x
 * its filters) least important filters (by its own order, within the same
 * floor; they count towards the step), so that every layer shrinks at every
 * step (what freeze-&-grow needs: a layer that never shrinks between two
 * steps passes none of the channels grown below it); with target
 * (one count per ranked layer), removes from each layer its least important
 * filters by its own order down to target[l]. kept[l] (caller-allocated,
 * r->layers[l].filters ints each) receives the staying filters in
 * ascending index order, nkept[l] their count. Returns the number of
 * filters removed (0: none could be), or -1 with err (a target above the
 * current count or below 1). */
int prn_roadmap_choose(const prn_ranking *r, double step, int min_filters, double max_layer_step,
                       double min_layer_step, const int *target, int **kept, int *nkept, trn_err *err);

/* The common filter order of a roadmap. perm[k][l] (k < nsteps, l <
 * nlayers) lists the base filter indexes that step k's model holds in
 * ranked layer l, in that model's order, nkept[k][l] of them; step 0 holds
 * all base[l] filters and every step's set is a subset of the one before.
 * order[l] (caller-allocated, base[l] ints) receives the base filters of
 * layer l, the last step's first (in its model's order), then those that
 * step nsteps-1 dropped, ..., then those step 1 dropped, so that every
 * step's filters are a prefix. -1 with err when the sets are not nested. */
int prn_roadmap_order(int nsteps, int nlayers, const int *base, int *const *const *perm,
                      int *const *nkept, int **order, trn_err *err);

/* Which roadmap steps become the capacities of freeze-&-grow. Step s
 * (0..nsteps-1; 0 the base, larger more pruned) keeps kept[s * nlayers + l]
 * filters of ranked layer l and costs macs[s]. out[0] = seed_step,
 * out[ncap - 1] = 0 and out[1..ncap-2] strictly decreasing between them,
 * chosen first to minimise the number of growth steps in which some layer
 * does not grow (with zeroed old-to-new slices, a layer that gains no
 * filter passes none of the channels grown below it to the output; a layer
 * that keeps the same count at the seed and the base is not counted), then
 * the summed squared distance of the capacities' MACs from levels evenly
 * spaced between the seed's and the base's. ncap must be 2..seed_step + 1.
 * Returns the number of growth steps in which some layer does not grow, or
 * -1 with err. */
int prn_nest_pick_steps(int nsteps, int nlayers, const int *kept, const double *macs, int seed_step, int ncap,
                        int *out, trn_err *err);

/* ---- data-driven steps' helpers (data.c) ----------------------------------- */

/* Top-1 on a split, with its 95% Wilson interval. */
typedef struct prn_acc {
    trn_split split;
    uint64_t images, correct;
    double top1, lo, hi;
} prn_acc;
/* Top-1 of net (any batch) over every image of split, evaluation
 * preprocessing, in list order; the mean cross-entropy of the true class in
 * *loss and each image's true and predicted class in *preds (initialised
 * for every image of split) when not NULL. -1 with err. */
int prn_evaluate(trn_net *net, const trn_dataset *ds, trn_split split, int threads, prn_acc *a, double *loss,
                 trn_preds *preds, trn_err *err) TRN_MUST_CHECK;
/* prn_evaluate, and every image's true and predicted class written to path
 * (trn_preds: the per-image record catalog pack pairs). */
int prn_evaluate_preds(trn_net *net, const trn_dataset *ds, trn_split split, int threads, prn_acc *a,
                       const char *path, trn_err *err) TRN_MUST_CHECK;
/* {"split", "images", "correct", "top1", "lo", "hi"}; NULL when out of memory. */
cJSON *prn_acc_json(const prn_acc *a);
/* The base network of cfg (inference only, `batch` images per forward)
 * with its weights loaded. NULL with err. */
trn_net *prn_load_base(const trn_cfg *cfg, const char *weights, int batch, trn_err *err);
/* Loader options that feed net: its input shape and its [net]'s
 * augmentation (checked; `where` names the cfg in messages), `batch`
 * images a batch, seed, threads, cache_bytes of decoded images kept. -1
 * with err on an augmentation the loader cannot do. */
int prn_loader_opts(const trn_net *net, const char *where, int batch, uint64_t seed, int threads,
                    size_t cache_bytes, trn_loader_opts *lo, trn_err *err);
/* Draws `count` triplets (3 image indexes each, *out malloc'd) from split
 * of ds with seed (prn_triplets_sample). -1 with err. */
int prn_sample_triplets_split(const trn_dataset *ds, trn_split split, uint64_t seed, uint64_t count,
                              size_t **out, trn_err *err);
/* Ranks net (batch 3k for TRR; cfg its cfg) by m; TRR's triplets come from
 * split of ds (evaluation preprocessing), F_i read at `at`, distances by
 * `dist`. NULL with err. */
prn_ranking *prn_rank_data(trn_net *net, const trn_cfg *cfg, prn_rank_method m, const trn_dataset *ds,
                           trn_split split, uint64_t seed, uint64_t triplets, prn_trr_at at,
                           prn_trr_distance dist, trn_err *err);
/* A training length given in epochs: ceil(epochs x ds's training images /
 * the [net] batch of cfg), at least 1 (batch 1 when cfg has none). */
long long prn_epochs_batches(const trn_cfg *cfg, const trn_dataset *ds, double epochs);
/* A numeric key=value setting: the key's length in *kl (the key is kv's
 * first *kl characters) and the number in *v. -1 with err when kv has no
 * '=' or its value is not a finite number. */
int prn_set_number(const char *kv, size_t *kl, double *v, trn_err *err);
/* doc, printed with a final newline, to path (.tmp then rename). -1 with err. */
int prn_write_json(const char *path, const cJSON *doc, trn_err *err);

/* ---- building a roadmap (roadmap_build.c; `prune roadmap`) ---------------- */

#define PRN_ROADMAP_MAX_STEPS 64

/* What prn_roadmap_build reads: the base, the data set, the ranking method,
 * the folder to write, a roadmap to follow (NULL: none) and the settings
 * (the --set keys of prune roadmap, prn_roadmap_set). */
typedef struct prn_roadmap_opts {
    const char *cfg, *weights, *data, *out, *follow;
    prn_rank_method method;
    uint64_t seed;
    int threads;
    double step, min_accuracy, learning_rate, max_layer_step, min_layer_step, target_macs;
    double seed_epochs;         /* the seed's retraining to its plateau, in epochs (0: none) */
    long long retrain_batches, triplets, min_filters, max_steps, bn_batches, connected, eval_every, rescale, warmup;
    /* one line per step and retraining point (NULL: none) */
    void (*progress)(void *ctx, const char *line);
    void *progress_ctx;
} prn_roadmap_opts;
/* The defaults: step 0.2, min_accuracy 0.5, learning_rate 0.01,
 * max_layer_step 0.5, retrain_batches 100, triplets 8192, min_filters 2,
 * max_steps 12, bn_batches 20, connected 1, the rest 0 (seed_epochs 0: the
 * seed keeps its step's retraining); threads 1. */
void prn_roadmap_opts_defaults(prn_roadmap_opts *o);
/* One key=value setting (prune roadmap --set). -1 with err naming the key
 * and its range, or listing the known keys. */
int prn_roadmap_set(prn_roadmap_opts *o, const char *kv, trn_err *err);

/* What a built roadmap came to (the rest is in OUT/roadmap.json). */
typedef struct prn_roadmap_summary {
    int steps, seed_step;
    int seed_filters, filters;  /* the seed step's filters of the base's */
    double seed_macs_ratio;     /* the seed step's MACs / the base's */
    prn_acc seed_acc;           /* on the deciding split */
    char stopped[512];          /* why the iteration ended */
} prn_roadmap_summary;
/* NestDNN's filter pruning roadmap (docs/prune.md, "The pruning
 * roadmap"): step 0 is the base; step k+1 ranks step k's model, removes
 * the least important filters (prn_roadmap_choose), retrains on the
 * training split and is evaluated on the valid split (the test split
 * without one) and the test split, until the first step below
 * min_accuracy (or max_steps, target_macs, or the followed roadmap's
 * steps). Every step's model is written to OUT/step-K.cfg and .weights
 * with its filters in the common order (prn_roadmap_order), then
 * OUT/roadmap.json. On error nothing is left behind (OUT too when it was
 * made here). -1 with err. */
int prn_roadmap_build(const prn_roadmap_opts *o, prn_roadmap_summary *sum, trn_err *err) TRN_MUST_CHECK;

/* ---- freeze-&-grow (grow.c; `prune grow`) ---------------------------------- */

#define PRN_GROW_MAX_CAP 16

/* What prn_grow reads: the roadmap (prune roadmap's roadmap.json), the
 * data set (train: growing; test: the reported accuracy), the folder to
 * write, the seed, compute threads and the settings (the --set keys of
 * prune grow, prn_grow_set). */
typedef struct prn_grow_opts {
    const char *roadmap, *data, *out;
    uint64_t seed;
    int threads;
    long long batches, capacities, bn_batches, slices, bn_affine, preserve;
    double learning_rate, revive;
    double epochs;   /* > 0: each growth step's length in epochs, replacing batches */
    /* one line per warning, grown capacity and measured capacity (NULL: none) */
    void (*progress)(void *ctx, const char *line);
    void *progress_ctx;
} prn_grow_opts;
/* The defaults: batches 100, learning_rate 0.01, capacities 5, bn_batches
 * 20, revive 0.01, slices 1, bn_affine 0, preserve 0, epochs 0 (none: batches);
 * threads 1. */
void prn_grow_opts_defaults(prn_grow_opts *o);
/* One key=value setting (prune grow --set). -1 with err naming the keys
 * and their ranges. */
int prn_grow_set(prn_grow_opts *o, const char *kv, trn_err *err);

/* What a grown model came to (the rest is in OUT/capacities.json). */
typedef struct prn_grow_summary {
    int capacities;            /* at most the roadmap's seed_step + 1 */
    uint64_t weight_bytes;     /* the full capacity's weights */
    uint64_t sum_independent;  /* the capacities' weights as separate models */
} prn_grow_summary;
/* NestDNN's freeze-&-grow (prn_nest.h; prune/README.md, "Freeze-&-grow"):
 * the roadmap's seed step becomes capacity 1 and the model grows along the
 * roadmap back to step 0 in `capacities` steps (prn_nest_pick_steps), each
 * step's new filters starting from the step model of their size and
 * training with everything older frozen. Writes OUT/variant.cfg,
 * OUT/init.weights, OUT/capacity_bn.weights (with slices),
 * OUT/capacity-K.predictions, OUT/capacities.json and, last, OUT/meta.json.
 * On error nothing is left behind (OUT too when it was made here). -1 with
 * err. */
int prn_grow(const prn_grow_opts *o, prn_grow_summary *sum, trn_err *err) TRN_MUST_CHECK;

/* ---- the sensitivity scan (scan.c; `prune scan`) --------------------------- */

#define PRN_SCAN_MAX_FRACTIONS 32

/* How a scan point loses its filters: removed (NestDNN Figure 3.3), each
 * replaced by its mean output over 512 training images (a diagnostic), or
 * each filter alone zeroed (a diagnostic; the fractions unused). */
typedef enum prn_scan_drop { PRN_SCAN_REMOVE, PRN_SCAN_MEAN, PRN_SCAN_SINGLE } prn_scan_drop;
/* "remove", "mean", "single"; NULL out of range. By name: -1 when none. */
const char *prn_scan_drop_name(prn_scan_drop d);
int prn_scan_drop_parse(const char *s);
/* The fractions of a comma-separated list, each in (0, 1), at most
 * PRN_SCAN_MAX_FRACTIONS, into f[0..*n). -1 with err. */
int prn_scan_fractions(const char *s, double *f, int *n, trn_err *err);

typedef struct prn_scan_opts {
    const char *cfg, *weights, *data;
    const char *layers;          /* selectors, comma-separated (NULL: every ranked layer) */
    prn_rank_method method;
    uint64_t seed, triplets;     /* TRR's triplets and where and how it measures */
    prn_trr_at at;
    prn_trr_distance distance;
    prn_scan_drop drop;
    int bn;                      /* PRN_SCAN_SINGLE: batch-norm re-estimation batches (0: kept) */
    int corr_images;             /* the kept filters' correlation over this many images (0: none) */
    const double *fractions;
    int nfractions;
    trn_split split;             /* where top-1 is measured */
    int threads;
    /* called with the document once the base is measured (layer NULL),
     * then with each layer's finished entry (NULL: not called) */
    void (*progress)(void *ctx, const cJSON *doc, const cJSON *layer);
    void *progress_ctx;
} prn_scan_opts;
/* The sensitivity scan (NestDNN Figure 3.3): for every ranked layer (or
 * those of o->layers) and every fraction p, that layer alone loses its
 * round(p x filters) least important filters by the ranking, without
 * retraining, and top-1 on the split is measured with its 95% Wilson
 * interval. *doc receives the scan ({"format": "prune-scan", ...,
 * "base", "layers": [{layer, type, filters, points | single, spearman}]};
 * the caller deletes it). -1 with err. */
int prn_scan(const prn_scan_opts *o, cJSON **doc, trn_err *err) TRN_MUST_CHECK;

/* ---- MCDNN's specialisation (specialise.c; `prune specialise`) ------------ */

#define PRN_SPECIALISE_MAX_CONTEXTS 64

typedef struct prn_specialise_opts {
    const char *cfg, *weights;   /* the model (its trunk and, by default, the generic model) */
    const char *data;            /* the base set the contexts were drawn from */
    const char *contexts;        /* "id n p data-file" lines (dataset contexts) */
    const char *cut;             /* a layer selector (NULL: the classifier's input) */
    const char *head_text;       /* --head as given (recorded in the table; NULL: "") */
    const char *generic_cfg, *generic_weights; /* the cascade's partner (both NULL: the model) */
    const char *parent;          /* the catalog id of cfg */
    const char *out;             /* the folder to write */
    prn_head_opts head;          /* the head's training (its seed included) */
    double gate;                 /* in [0, 1): the specialised model answers at >= gate */
    int gate_valid;              /* 1: each context's gate chosen on its valid stream */
    uint64_t seed;               /* the loader's seed (recorded in meta.json) */
    int threads;
    /* called with the table once the generic model is scored (row NULL),
     * then with each context's finished row (NULL: not called) */
    void (*progress)(void *ctx, const cJSON *table, const cJSON *row);
    void *progress_ctx;
} prn_specialise_opts;
/* MCDNN's (n,p) specialisation (section 4.1.2): for every context of
 * o->contexts, the layers above the cut are retrained for the context's n
 * classes + "other" on the frozen lower layers and scored on the context's
 * test stream (in-context top-1; the cascade's overall top-1, "other" or
 * a probability below the gate falling through to the generic model,
 * against the generic model alone; a sweep of gates). Writes
 * OUT/<context>/{variant.cfg,init.weights,meta.json} and
 * OUT/specialise.json, only once every context is done. *table receives
 * the table written ({"model", "cut_layer", ..., "generic_test",
 * "contexts": [rows]}; the caller deletes it). -1 with err. */
int prn_specialise(const prn_specialise_opts *o, cJSON **table, trn_err *err) TRN_MUST_CHECK;

/* ---- batch-norm statistics (bnstats.c) ------------------------------------- */

/* Re-estimates the rolling batch-norm statistics (mean and variance) of net
 * from `batches` training forwards (batch statistics, no weight changes) of
 * the batches next(ctx, first), next(ctx, first + 1), ...: each statistic
 * becomes the engine's exponentially weighted average of those batches'
 * statistics, normalised by the weights' sum, so that nothing of the old
 * value remains. A short retraining after pruning leaves most of the old
 * statistics (the engine moves them 1% per forward: 60 batches keep 55%),
 * while the layers' inputs changed. Frozen statistics (mask 0, see
 * trn_net_set_mask) keep their values. The net's capacity, `seen` and
 * weights are unchanged. batches 0: nothing happens. -1 with err. */
int prn_bn_recalibrate(trn_net *net, trn_batch_fn next, void *ctx, uint64_t first, int batches,
                       trn_err *err) TRN_MUST_CHECK;

/* ---- cfg surgery shared by the techniques (splice.c) ----------------------- */

/* Replaces layers [first, last] of cfg (0 <= first <= last, or first ==
 * last + 1 for a pure insertion before `first`) by the n_new layer sections
 * of `with` starting at its section `with_first` (with may be NULL when
 * n_new is 0), and renumbers every [route] layers= and [shortcut] from=
 * outside the range. A reference to `last` moves to the last new layer
 * when keep_last_ref and n_new > 0; any other reference into the range is
 * an error naming the referring section's file:line. The references of
 * layers inside the range are checked too: they must stay inside it.
 * map (may be NULL; one entry per layer before the splice) receives every
 * old layer's new index (-1 for replaced ones). Every reference is checked
 * before cfg changes; a later failure (out of memory) may leave cfg partly
 * changed, so callers splice a clone. */
int prn_cfg_splice(trn_cfg *cfg, int first, int last, const trn_cfg *with, int with_first,
                   int n_new, int keep_last_ref, int *map, trn_err *err) TRN_MUST_CHECK;


/* ---- early exits (exits.c; FlexDNN, prune/README.md "Early exits") ---------- */

/* Batch number `step` of the training stream: x (batch, c, h, w), y
 * (batch, classes) one-hot. */
typedef int (*prn_batch_fn)(void *ctx, uint64_t step, float *x, float *y, trn_err *err);

/* ---- collective importance (sbs.c; FlexDNN 4.3.1, prune/README.md) -------- */

typedef struct prn_sbs_opts {
    int images;          /* training images whose features the exits learn from (2048) */
    int pool_to;         /* the exit max-pools the layer's map to about this side (4) */
    int first_epochs;    /* SGD passes of the first fit of a layer's exit (10) */
    int epochs;          /* SGD passes of each later (warm-started) fine-tune (3) */
    int refit;           /* 0: candidates scored by the round's exit without a refit;
                          * E > 0: each candidate fine-tuned E passes (the thesis's O(N^2)) */
    int drop;            /* filters leaving per round (1: the thesis) */
    double stop;         /* SBS ends when fewer than stop x N remain (0.2: the thesis) */
    float learning_rate; /* of the exit's SGD (0.02) */
    uint64_t seed;
} prn_sbs_opts;
void prn_sbs_opts_defaults(prn_sbs_opts *o);

typedef struct prn_sbs_layer {
    int layer;           /* layer index */
    int filters;         /* N */
    int pool;            /* the exit's max-pool side */
    int kmin;            /* filters left when SBS stopped */
    int *order;          /* [N] most important first (SBS) */
    int *l1_order;       /* [N] most important first (L1 norm) */
    double *curve;       /* [N + 1]: valid top-1 of the exit on the SBS top-k filters, k = kmin..N */
    double *curve_l1;    /* [N + 1]: the same for the L1 top-k */
    int rounds, fine_tunes, evaluations;
    double seconds;
} prn_sbs_layer;

typedef struct prn_sbs {
    int nlayers;
    prn_sbs_layer *layers; /* the [convolutional] layers, in cfg order */
    int fine_tunes, evaluations;
    double feature_seconds, seconds; /* wall clock */
    double cpu_seconds;              /* this process's CPU time over the ranking */
} prn_sbs;
void prn_sbs_free(prn_sbs *s);

/* Ranks the filters of every [convolutional] layer of base (batch B,
 * trained weights) by sequential backward selection (sbs.c has the
 * approximations): exits learn from o->images images of the training
 * stream (batches first_step, first_step + 1, ...) and are scored on the
 * valid images. NULL with err. */
prn_sbs *prn_sbs_rank(trn_net *base, const prn_sbs_opts *o, prn_batch_fn train, void *train_ctx,
                      uint64_t first_step, const float *valid_x, const int *valid_y, size_t n_valid,
                      trn_err *err);
/* The thesis's minimum filter count of a layer: drop the lowest-ranked
 * filters while the exit's accuracy stays within `tolerance` of its
 * accuracy with all N filters (curve[k], k = kmin..N); the first k it
 * reaches where the next drop would fall below. */
int prn_sbs_min_filters(const double *curve, int filters, int kmin, double tolerance);

typedef struct prn_exits_opts {
    int batch;           /* images per training step and evaluation forward (64) */
    int stage1;          /* training batches of the over-parameterised branches (400) */
    int finetune;        /* batches after each shrink (150) */
    float learning_rate; /* (0.05; fine-tunes use half) */
    float momentum;      /* (0.9) */
    float decay;         /* (0.0005) */
    float kd;            /* weight of the distillation from the trunk's output (0.5; 0: labels only) */
    int width;           /* filters of an over-parameterised branch's first convolution (32) */
    int layers;          /* its 3x3 convolutions, each twice as wide as the one before (2) */
    int pool_to;         /* its max-pool brings the input to about this side (4) */
    float tolerance;     /* exit-rate drop a shrink may cost (0.02) */
    int branchynet;      /* 1: the baseline: one fixed head per max-pool stage, no search,
                          * no insertion plan, trained with the same batches in all */
    /* the trunk (FlexDNN's collective-importance pruning before the exits) */
    int trunk_prune;     /* 0: the base is the trunk; 1: filters pruned by SBS; 2: by L1 */
    double trunk_macs;   /* target trunk MACs as a fraction of the base's (0.6; 0: the
                          * thesis's rule with trunk_tolerance) */
    double trunk_tolerance; /* exit-accuracy drop per layer the minimum counts allow (0.01) */
    int trunk_retrain;   /* batches of retraining of the pruned trunk (400) */
    float trunk_lr;      /* its learning rate (poly, power 2) (0.02) */
    float trunk_kd;      /* distillation from the base during that retraining (0.5) */
    int trunk_compare_l1; /* 1: also prune by L1 to the same counts, retrain alike, report */
    prn_sbs_opts sbs;
    /* exits */
    double exit_cap;     /* all exits together at most this fraction of the base's MACs (0.05; 0: none) */
    float min_threshold; /* floor of every T_lossless, so that alpha always applies (0.5) */
    float threshold_z;   /* lossless with a margin: exit-right-trunk-wrong minus the reverse
                          * must reach z sqrt(their sum) (1; 0: the plain rule) */
    trn_conf_measure confidence; /* what an exit's thresholds compare (entropy, the thesis's eq. 4.1;
                          * max: the top probability; margin: the top less the second); written
                          * into exits.cfg, so that the runtime applies the same rule */
    int anneal;          /* 1: every branch's rate decays to 0 over its batches (poly, power 2);
                          * 0: constant (1) */
    int same_budget;     /* 1: before the insertion plan every searched branch is fine-tuned up to
                          * the batches BranchyNet's heads train, stage1 + finetune (layers + 3),
                          * so that the two are compared at equal training (1; 0: as searched) */
    uint64_t seed;
    prn_batch_fn train;  /* the training stream (augmented) */
    void *train_ctx;
    const float *valid_x, *test_x; /* images, evaluation preprocessing */
    const int *valid_y, *test_y;   /* classes */
    size_t n_valid, n_test;
} prn_exits_opts;

void prn_exits_opts_defaults(prn_exits_opts *o);
/* One option from "key=value" (the keys above). -1 naming the key. */
int prn_exits_opts_set(prn_exits_opts *o, const char *kv, trn_err *err);

/* The exits of the model prn_early_exit derives. */
typedef struct prn_exit_model {
    trn_cfg *cfg;       /* exits.cfg */
    trn_exits *exits;   /* over the variant's network (batch 1), trained weights */
    size_t n_predictions; /* test images */
    int classes;
    int *exit_of;       /* per test image at alpha 1: the exit that answered (count: the trunk) */
    float *predictions; /* per test image at alpha 1: the answering probabilities */
    int n_alphas;       /* the test alpha profile's points */
    const double *alphas; /* their alphas (static) */
    int *exit_by_alpha; /* (n_alphas, n_predictions): each test image's exit at each alpha */
    int *pred_by_alpha; /* (n_alphas, n_predictions): its answer (top-1 class) there */
} prn_exit_model;
void prn_exit_model_free(prn_exit_model *m);

/* FlexDNN on the trained base (cfg, weights; frozen): exit search,
 * lossless thresholds on the valid split, the insertion plan, and the alpha
 * profile on the test split (technique_fields: exits, alpha_profile, base,
 * search, plan_steps). out->cfg and out->net are the base's; em holds the
 * exits. -1 with err. */
int prn_early_exit(const trn_cfg *cfg, const char *cfg_path, const char *weights, const prn_exits_opts *o,
                   prn_variant *out, prn_exit_model *em, trn_err *err) TRN_MUST_CHECK;

/* What prn_early_exit_run reads (prune early-exit): the base (cfg,
 * weights), the data set (training split: the loader with the cfg's [net]
 * augmentation; valid: thresholds, search, plan; test: the alpha profile),
 * the folder to write, the catalog id of the variant's parent and, when
 * the base is itself a variant, its id (named in the description), compute
 * threads, predictions (1: OUT/predictions.json too) and the exits'
 * settings (their seed included). */
typedef struct prn_early_exit_run_opts {
    const char *cfg, *weights, *data, *out;
    const char *parent;      /* the catalog id meta.json names */
    const char *base_id;     /* NULL: --cfg is the catalog's base */
    int threads, predictions;
    prn_exits_opts exits;
} prn_early_exit_run_opts;
/* The defaults: prn_exits_opts_defaults, parent "base", threads 1. */
void prn_early_exit_run_defaults(prn_early_exit_run_opts *o);
/* One --set key=value: predictions=0|1 or an exits setting
 * (prn_exits_opts_set). -1 with err naming the key. */
int prn_early_exit_run_set(prn_early_exit_run_opts *o, const char *kv, trn_err *err);
/* prn_early_exit fed from the data set, then OUT/exits.cfg,
 * OUT/exits.weights, OUT/exits.predictions (each test image's true and
 * predicted class at alpha 1), with predictions OUT/predictions.json, and
 * last OUT/meta.json with the variant (prn_variant_write). *description
 * (malloc'd, the caller frees it) says what was written. -1 with err. */
int prn_early_exit_run(const prn_early_exit_run_opts *o, char **description, trn_err *err) TRN_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif /* PRN_H */
