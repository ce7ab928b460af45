/*
 * trn.h: the trainer library (libtrn): the forward engine (nn.h, included
 * here) plus training, checkpoints, augmentation, data sets and the batch
 * loader (trainer/src/). The one public header of trainer/; every exported
 * name starts with trn_ or TRN_. Conventions: see nn.h.
 */
#ifndef TRN_H
#define TRN_H

#ifdef TRN_INFER_ONLY
#error "trn.h is the trainer's header: an inference-only (TRN_INFER_ONLY) build includes nn.h, the engine's"
#endif

#include "nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- training ------------------------------------------------------------ */

/* Training forward with truth (batch, outputs) (may be NULL: no cost):
 * batch statistics, dropout and random crops drawn from the network's seed
 * and the current `seen`, so the same state gives the same bytes. */
int trn_net_forward_train(trn_net *net, const float *x, const float *truth, trn_err *err)
    TRN_MUST_CHECK;
/* Batch norm's rolling statistics: k = 0 (the default) moves them by
 * 0.99 * old + 0.01 * batch after each training forward; k > 0 makes the
 * next training forward's batch statistics the k-th term of a plain mean
 * (k = 1 replaces them), so k = 1..N forwards leave the mean over N batches
 * (re-estimating them for the weights as they are, without an update). */
void trn_net_bn_average(trn_net *net, uint64_t k);
/* Backward of the last training forward: accumulates into the parameters'
 * update arrays (Darknet's sign: negative gradients). */
int trn_net_backward(trn_net *net, trn_err *err) TRN_MUST_CHECK;
/* One SGD step exactly as Darknet's update_network: at batch number
 * seen / (batch * subdivisions), rate = trn_net_rate();
 *   biases, scales: x += rate/B * u; u *= momentum
 *   weights:        u -= decay*B * w; w += rate/B * u; u *= momentum
 * with B = batch * subdivisions and the layer's learning_rate scale. */
void trn_net_update(trn_net *net);
/* Group lasso (trainer/src/lasso.c): 1 when the cfg sets any lasso_* key.
 * trn_net_update calls trn_lasso_prox after its SGD step: one proximal
 * step (group soft-thresholding with threshold rate * lambda) of the
 * filter-, channel- and shape-wise groups of every [convolutional] layer. */
int trn_lasso_active(const trn_net *net);
void trn_lasso_prox(trn_net *net, float rate);
/* Soft targets for the next training forwards (knowledge distillation):
 * q is (batch, outputs), each row a teacher's distribution softened by
 * net->cfg.distill_temperature, or NULL to train on the labels alone. The
 * softmax layer's loss becomes (1 - a) * CE(truth, p) + a * T^2 * KL(q || p_T)
 * with p_T = softmax(logits / T) and a = distill_alpha (Hinton et al. 2015);
 * its delta is the loss's negative gradient in the logits,
 * (1 - a) * (truth - p) + a * T * (q - p_T). The caller keeps q alive. */
void trn_net_set_soft_targets(trn_net *net, const float *q);
/* Loss weights of the output softmax's groups (multi-task training: one
 * group per task): w has the softmax's `groups` values; group g's loss and
 * delta are scaled by w[g]. NULL: every group weighs 1. The caller keeps w
 * alive. */
void trn_net_set_group_weights(trn_net *net, const float *w);

/* Darknet's train_network_datum: seen += batch; forward_train; backward;
 * update every `subdivisions` calls. *loss (may be NULL) = the cost per
 * image of this forward. */
int trn_net_train_step(trn_net *net, const float *x, const float *truth, float *loss,
                       trn_err *err) TRN_MUST_CHECK;
/* The cost of the last forward with truth (sum over cost layers' sums,
 * averaged over cost layers, as Darknet's net->cost). */
float trn_net_cost(const trn_net *net);
/* Darknet's get_current_batch and get_current_rate. */
uint64_t trn_net_current_batch(const trn_net *net);
float trn_net_rate(const trn_net *net);
/* Layer i's delta after backward, (batch, outputs); NULL if none. */
const float *trn_net_layer_delta(const trn_net *net, int i);

/* ---- checkpoints --------------------------------------------------------- *
 *
 * A checkpoint holds everything a resumed run needs to continue exactly
 * where the interrupted one was: the weights (Darknet format, `seen`
 * included), the update (momentum) arrays, the network's seed and the
 * running loss. Written atomically (temporary file, fsync, rename).
 * Format: see trainer/src/checkpoint.c. */
int trn_checkpoint_save(const trn_net *net, const char *path, float avg_loss, trn_err *err)
    TRN_MUST_CHECK;
/* Restores net from path, its seed included (trn_net_seed changes to the
 * stored one); *avg_loss (may be NULL) receives the stored running loss.
 * The cfg must be the one the checkpoint was written for (sizes are
 * checked); the network is unchanged on error. */
int trn_checkpoint_load(trn_net *net, const char *path, float *avg_loss, trn_err *err)
    TRN_MUST_CHECK;

/* ---- the training loop ----------------------------------------------------- */

/* Batch number `index` (the forward count: seen / batch): x (batch, c, h,
 * w) and y (batch, outputs) one-hot. Must be a pure function of index for
 * resumed runs to be exact (trn_loader_get is). 0 or -1 with err. */
typedef int (*trn_batch_fn)(void *ctx, uint64_t index, float *x, float *y, trn_err *err);

typedef struct trn_train_progress {
    uint64_t batch;       /* weight updates done (Darknet's current batch) */
    uint64_t max_batches;
    uint64_t seen;        /* images */
    float loss;           /* of the last update's images, per image */
    float avg_loss;       /* Darknet's running average: 0.9 * avg + 0.1 * loss */
    float rate;           /* learning rate of the last update */
    double images_per_s;  /* since this run started */
    double eta_s;         /* to max_batches at that speed */
    int checkpoint;       /* 1 when a checkpoint was just written */
    int validated;        /* 1 when the fields below are this update's validation */
    uint64_t val_correct, val_images; /* top-1 hits among the validation images */
    double val_top1, val_lo, val_hi;  /* top-1 and its 95% Wilson interval */
    double best_top1;     /* the best validation top-1 so far in this run (-1: none) */
    uint64_t best_batch;  /* the update where it was measured */
    int plateau;          /* 1: this update ends the run (no new best for plateau_patience
                           * validations) */
} trn_train_progress;

/* Validation for trn_train: counts top-1 hits (*correct of *total images)
 * of net on held-out images with inference forwards (trn_net_forward),
 * which draw no random numbers and change no weight, momentum or rolling
 * statistic, so validating does not change the trained weights' bytes.
 * 0 or -1 with err. */
typedef int (*trn_validate_fn)(void *ctx, trn_net *net, uint64_t *correct, uint64_t *total, trn_err *err);

/* The 95% Wilson score interval of k successes in n trials (z = 1.96);
 * [0, 1] when n == 0. */
void trn_wilson(uint64_t k, uint64_t n, double *lo, double *hi);
/* The index of the largest of v[0..n-1], the first on ties (a top-1
 * prediction); 0 when n < 1. */
int trn_argmax(const float *v, int n);
/* The two-sided p-value of McNemar's exact test on paired outcomes: b
 * items only the first of two classifiers got right, c only the second
 * (the discordant pairs); 2 x P(X <= min(b, c)), X ~ Binomial(b + c, 1/2),
 * capped at 1; 1 when b + c == 0. */
double trn_mcnemar_p(uint64_t b, uint64_t c);

typedef struct trn_train_opts {
    trn_batch_fn next_batch;
    void *batch_ctx;
    const char *backup_dir;    /* checkpoints and final weights go here (created) */
    const char *base;          /* file stem: <base>.ckpt, <base>.weights */
    uint64_t checkpoint_every; /* weight updates between checkpoints; 0: only at the end */
    uint64_t max_batches;      /* 0: the cfg's max_batches (which must then be > 0) */
    int resume;                /* 1: continue from <backup_dir>/<base>.ckpt if present
                                * (the network takes the checkpoint's seed: a batch
                                * function that depends on a seed reads trn_net_seed) */
    void (*progress)(const trn_train_progress *p, void *ctx); /* after every update */
    void *progress_ctx;
    volatile int *stop;        /* when it becomes non-zero: checkpoint and return 1 */
    trn_validate_fn validate;  /* NULL: no validation */
    void *validate_ctx;
    uint64_t validate_every;   /* updates between validations (and one at the end); 0: none */
    uint64_t plateau_patience; /* > 0: end the run (checkpoint and weights, return 0) after
                                * this many validations in a row without a better top-1
                                * than the best so far (counted from this run's start) */
    int metrics_log;           /* 1: one JSON line per update appended to
                                * <backup_dir>/<base>.metrics.jsonl (a fresh run
                                * truncates it): batch, seen, loss, avg_loss, rate,
                                * images_per_s, and on validations val_top1, val_lo,
                                * val_hi, val_images */
} trn_train_opts;

/* Trains net until max_batches weight updates (Darknet's loop: each
 * update is `subdivisions` train steps of `batch` images), writing a
 * checkpoint every checkpoint_every updates and at the end, then
 * <base>.weights. Returns 0 when done, 1 when stopped, -1 on error (the
 * last checkpoint stays valid). */
int trn_train(trn_net *net, const trn_train_opts *o, trn_err *err) TRN_MUST_CHECK;
/* Removes what trn_train left in backup_dir for base (<base>.ckpt and
 * <base>.weights) and the folder when that leaves it empty: for callers
 * that train into a scratch folder and keep the network in memory. */
void trn_train_backup_remove(const char *backup_dir, const char *base);

/* ---- augmentation (augment.c) ------------------------------------------- */

/* The [net] augmentation keys, with Darknet's meaning and defaults (see
 * trainer/README.md, section Data). */
typedef struct trn_augment {
    float angle;      /* rotation uniform in [-angle, angle] degrees (0) */
    float aspect;     /* width stretch rand_scale(aspect) (1) */
    float hue;        /* hue shift uniform in [-hue, hue] (0) */
    float saturation; /* saturation factor rand_scale(saturation) (1) */
    float exposure;   /* value factor rand_scale(exposure) (1) */
    float jitter;     /* each side of the source window moves by up to
                       * jitter * the image size (0: off) */
    int min_crop;     /* shorter side after scaling, uniform in        */
    int max_crop;     /* [min_crop, max_crop]; 0 = width, 2 * width    */
    int flip;         /* 1: mirror with probability 1/2 (1) */
} trn_augment;

/* Darknet's defaults (as if no key were given). */
void trn_augment_defaults(trn_augment *a);
/* The augmentation a network's [net] section asks for (angle, aspect, hue,
 * saturation, exposure, jitter, min_crop, max_crop, flip), as training
 * applies it. */
void trn_augment_from_net(const trn_net *net, trn_augment *a);
/* Checks ranges (angle in [0, 180], aspect >= 1 ... see augment.c);
 * `where` prefixes the message (e.g. "net.cfg [net]"). */
int trn_augment_check(const trn_augment *a, const char *where, trn_err *err);

/* One training sample: src (decoded with c channels) -> out (c, h, w),
 * drawing every random number from rng, in a fixed order. */
void trn_augment_image(const trn_image *src, const trn_augment *a, int w, int h,
                       trn_rng *rng, float *out);

/* ---- data sets (dataset.c) ---------------------------------------------- */

typedef enum trn_split {
    TRN_SPLIT_TRAIN,
    TRN_SPLIT_VALID,
    TRN_SPLIT_TEST,
    TRN_SPLIT_COUNT
} trn_split;

/* "train", "valid", "test"; NULL for an invalid value. */
const char *trn_split_name(trn_split s);
/* The split named `name`; -1 if it is none of them. */
int trn_split_parse(const char *name);

/* A tasks file (datasets/README.md): one "task data-file" line per task,
 * the data file's path relative to the tasks file unless absolute, blank
 * lines and '#' comments ignored. Reads at most max lines into t (no name
 * twice) and sets *n. Errors name file:line. path is the file to open, file
 * its name as a catalog records it (trn_data_name). */
typedef struct trn_task_line {
    char name[64];
    char path[4096];
    char file[2048];
} trn_task_line;
int trn_tasks_read(const char *path, trn_task_line *t, int max, int *n, trn_err *err) TRN_MUST_CHECK;

/* A data file's name as variants and catalogs record it: its last path
 * component (the file within its data set). A catalog carries no build
 * machine's folder, so two builds in two folders give the same bytes. */
const char *trn_data_name(const char *file);

/* A Darknet classifier data set: the .data file, its label set, and the
 * list of every split that the .data names, each image with its class. */
typedef struct trn_dataset trn_dataset;

/* Parses a .data file and loads everything it names (labels/names files,
 * list files) and resolves every image's class by the label rule. Errors
 * name file:line. Returns NULL on error. */
trn_dataset *trn_dataset_open(const char *data_path, trn_err *err);
void trn_dataset_close(trn_dataset *ds);

int trn_dataset_classes(const trn_dataset *ds);
/* The label (matching token) and display name of class k in [0, classes). */
const char *trn_dataset_label(const trn_dataset *ds, int k);
const char *trn_dataset_name(const trn_dataset *ds, int k);
/* The `top` key (default 1) and the resolved `backup` folder (NULL if
 * absent). */
int trn_dataset_top(const trn_dataset *ds);
const char *trn_dataset_backup(const trn_dataset *ds);
/* Whether the .data names split s, and its image count (0 if absent). */
int trn_dataset_has(const trn_dataset *ds, trn_split s);
size_t trn_dataset_count(const trn_dataset *ds, trn_split s);
/* Image i of split s: its resolved path and its class. */
const char *trn_dataset_path(const trn_dataset *ds, trn_split s, size_t i);
int trn_dataset_class(const trn_dataset *ds, trn_split s, size_t i);

/* Per-image predictions of a split (`trainer valid --predictions`, prune
 * early-exit and grow; catalog pack pairs them for its paired test). The
 * file is text: a header line
 *   trn-predictions 1 <split> <images> <classes> <list: 16 hex digits>
 * then one line "<true class> <predicted class>" per image in list order.
 * list is the FNV-1a 64 hash of the images' last two path components
 * (folder/file, each followed by '\n'), so two files of the same images
 * have the same one wherever the data set lies. */
typedef struct trn_preds {
    trn_split split;
    uint64_t images;
    int classes;
    uint64_t list;
    int *truth, *pred;      /* images each */
} trn_preds;
/* The list hash of the first n images of split s. */
uint64_t trn_preds_list(const trn_dataset *ds, trn_split s, size_t n);
/* A trn_preds of n images of split s (truth filled from the data set, pred
 * zero, list computed). -1 with err when out of memory. */
int trn_preds_init(trn_preds *p, const trn_dataset *ds, trn_split s, size_t n, trn_err *err);
/* Writes p to path atomically. */
int trn_preds_write(const char *path, const trn_preds *p, trn_err *err);
/* Reads path (checked: header, counts, classes in range). -1 with err
 * naming the file and line. */
int trn_preds_read(const char *path, trn_preds *p, trn_err *err);

/* What trn_valid reads: a network (infer-only, batch `batch`), the first
 * n images of split s of ds, k of top-k (at most the classes), the loader's
 * decoding threads, and a file for the per-image predictions (NULL: none);
 * cfg and data name the network and the set in errors. */
typedef struct trn_valid_opts {
    trn_net *net;
    const trn_dataset *ds;
    trn_split split;
    size_t n;
    int k, batch, loader_threads;
    const char *cfg, *data, *predictions;
} trn_valid_opts;
/* What an evaluation came to: images right at top-1, top-k and top-5, and
 * the confusion matrix (classes x classes, rows: true class). */
typedef struct trn_valid_result {
    uint64_t good1, goodk, good5;
    uint64_t *conf;
} trn_valid_result;
/* Evaluates every image once (no augmentation: the centred evaluation
 * crop) and writes the predictions file when asked. -1 with err. */
int trn_valid(const trn_valid_opts *o, trn_valid_result *r, trn_err *err) TRN_MUST_CHECK;
void trn_valid_result_free(trn_valid_result *r);
/* Indexes of the k largest of p[0..n), best first (ties: lower index). */
void trn_top_k(const float *p, int n, int k, int *out);

/* Class names for answers: the data set's (its names/labels file) or one
 * per line of a file (blank lines ignored). */
typedef struct trn_names {
    trn_dataset *ds; /* the set's, or NULL */
    char **v;        /* the file's */
    int n;
} trn_names;
/* Opens the names of data (a .data file) or, when data is NULL, of the
 * names file. -1 with err. */
int trn_names_open(const char *data, const char *file, trn_names *names, trn_err *err) TRN_MUST_CHECK;
const char *trn_names_get(const trn_names *names, int i);
void trn_names_close(trn_names *names);

/* One image's answer from trn_predict: its k most probable classes (best
 * first) and the network's probabilities over every class, or why it has
 * none (the image could not be read or run). */
typedef struct trn_predict_image {
    const char *image;
    const char *error; /* NULL when answered */
    int k;
    const int *cls;
    const float *p;
} trn_predict_image;
/* What trn_predict reads: a network (infer-only, batch 1) with as many
 * outputs as names, the images, k of top-k (at most the classes) and the
 * callback told of each image in order; cfg and names_from name the
 * network and the names in errors. */
typedef struct trn_predict_opts {
    trn_net *net;
    const trn_names *names;
    const char *cfg, *names_from;
    const char *const *images;
    int nimages, top;
    void (*each)(void *ctx, const trn_predict_image *r);
    void *ctx;
} trn_predict_opts;
/* The top-k classes of every image (trainer predict). Returns how many
 * images had no answer, or -1 with err before any image (the network's
 * outputs are not the names' count, out of memory). */
int trn_predict(const trn_predict_opts *o, trn_err *err) TRN_MUST_CHECK;
/* How many images p has right. */
uint64_t trn_preds_correct(const trn_preds *p);
/* Pairs two records of the same images (split, count and list hash
 * equal): *only_a the images a has right and b wrong, *only_b the reverse
 * (McNemar's discordant pairs: trn_mcnemar_p). -1 with err otherwise. */
int trn_preds_pair(const trn_preds *a, const trn_preds *b, uint64_t *only_a, uint64_t *only_b, trn_err *err);
void trn_preds_free(trn_preds *p);

/* The label rule on one path: the index of the one label in labels[0..n)
 * that equals the path's parent folder name or one '_' token of its file
 * name without extension. -1 with an error naming `where` (e.g. the list
 * file:line), the path and the candidates when none or several match. */
int trn_label_match(const char *path, const char *const *labels, int n,
                    const char *where, trn_err *err);

/* ---- loader (loader.c) -------------------------------------------------- */

typedef struct trn_loader_opts {
    int w, h, c;        /* network input size; c in 1..4 */
    int batch;          /* images per batch, >= 1 */
    int augment;        /* 1: random training augmentation; 0: eval preprocessing */
    trn_augment aug;    /* used when augment == 1 */
    uint64_t seed;      /* everything random derives from it */
    int threads;        /* decoding workers, >= 1 */
    int shuffle;        /* 1: a seeded permutation per epoch; 0: list order */
    size_t cache_bytes; /* decoded images kept in memory (0: decode every time) */
    /* Multi-task truth (0/NULL: the data set's one-hot). With ntasks > 0, a
     * truth row is ntasks groups of `group` values: group t one-hot at the
     * class of the image in tasks[t] (every task lists the same images in
     * the same order, checked at open; each has at most `group` classes).
     * tasks[0] is normally the loader's own data set. */
    const trn_dataset *const *tasks;
    int ntasks, group;
} trn_loader_opts;

/* Defaults: augment 1 with trn_augment_defaults, seed 0, threads 1,
 * shuffle 1, no cache; w, h, c, batch must be set by the caller. */
void trn_loader_opts_defaults(trn_loader_opts *o);

typedef struct trn_loader trn_loader;

/* A loader over split s of ds (ds must outlive it). Starts the worker
 * threads. NULL on bad options, an empty or absent split, or no threads. */
trn_loader *trn_loader_open(const trn_dataset *ds, trn_split s, const trn_loader_opts *o,
                            trn_err *err);
/* Batch number `index` of the endless sequence of epochs: position
 * p = index * batch + j (j < batch) is image perm_e[p % n] of epoch
 * e = p / n, where perm_e is the seeded shuffle of epoch e (or the list
 * order). x is (batch, c, h, w), y is (batch, classes) one-hot (with tasks:
 * (batch, ntasks * group), one one-hot group per task). The result is
 * a pure function of (data set, options, index): the thread count, timing
 * and earlier calls do not change a byte. After returning, batch index + 1
 * is prepared in the background. -1 with an error naming the image file
 * when an image cannot be loaded. */
int trn_loader_get(trn_loader *l, uint64_t index, float *x, float *y, trn_err *err);
/* Images per epoch (the split's size). */
size_t trn_loader_epoch_size(const trn_loader *l);
/* Stops and joins the workers and frees everything (NULL-safe). */
void trn_loader_close(trn_loader *l);

/* ======================================================================
 * end of data
 * ====================================================================== */

/* ---- multi-task training (mtask.c; `trainer train --tasks FILE`) ----------
 * The plain classifier of the first task (its last [connected] layer one
 * output per class, then [softmax]) is widened for training to T groups of
 * G outputs (T tasks, G the largest class count) under a grouped softmax,
 * one cross-entropy per task; its first group is sliced back out after. */
#define TRN_MTASK_MAX 16
typedef struct trn_mtask {
    int n;                              /* tasks, the first the task of --data */
    int group;                          /* outputs per task: the largest class count */
    char name[TRN_MTASK_MAX][64];
    char path[TRN_MTASK_MAX][4200];
    trn_dataset *ds[TRN_MTASK_MAX];
    float w[TRN_MTASK_MAX];             /* loss weight per task (default 1) */
} trn_mtask;
/* Reads the tasks file ("task data-file" lines, paths relative to it; the
 * first must be `data`, whose data set the caller has opened as `first`:
 * t borrows it, trn_mtask_free leaves it open), opens every other task's
 * data set and parses `weights` ("w1,w2,...", one per task; NULL: all 1).
 * -1 with err on failure. */
int trn_mtask_open(const char *path, const char *data, trn_dataset *first, const char *weights, trn_mtask *t,
                   trn_err *err) TRN_MUST_CHECK;
void trn_mtask_free(trn_mtask *t);
/* The training cfg: a clone of cfg (which must end in [connected]
 * output=classes, [softmax] without groups) with that layer widened to
 * t->n * t->group outputs and softmax groups=t->n. NULL with err. */
trn_cfg *trn_mtask_cfg(const trn_cfg *cfg, const trn_mtask *t, int classes, trn_err *err);
/* Copies the multi-task network's parameters into the plain network of the
 * first task (the first rows of the widened layer) and its `seen`. -1 with
 * err when the two networks do not correspond. */
int trn_mtask_slice(const trn_net *multi, trn_net *plain, trn_err *err) TRN_MUST_CHECK;
/* The inverse, for a multi-task fine-tune of a plain model: copies the
 * plain network's parameters into the multi-task one (the first task's
 * rows of the widened layer; the other groups' rows and biases 0) and its
 * `seen`. -1 with err as trn_mtask_slice. */
int trn_mtask_widen(const trn_net *plain, trn_net *multi, trn_err *err) TRN_MUST_CHECK;

#ifdef __cplusplus
}
#endif
#endif /* TRN_H */
