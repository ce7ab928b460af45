/*
 * net.h: the network and layer structures shared by net.c, the layer files
 * and the training code (private to trainer/).
 *
 * A layer is a short common header (kind ops, shapes, buffers) plus a
 * pointer to its kind's private state; behaviour comes from a small ops
 * table per kind. Layers hold no parameter pointers: they keep indexes
 * into the network's parameter table, whose data pointers move when a
 * weights buffer is borrowed.
 */
#ifndef TRN_NET_H
#define TRN_NET_H

#include "backend.h"
#include "nn.h"

/* Training-only functions are compiled out of the TRN_INFER_ONLY flavour;
 * their slots in the ops tables stay (NULL) so the layout is the same. */
#ifdef TRN_INFER_ONLY
#define TRN_TRAIN_FN(f) NULL
#else
#define TRN_TRAIN_FN(f) f
#endif

typedef struct trn_layer trn_layer;
typedef struct trn_build trn_build;

/* A kind's row of the kind table (trn_kind_desc: name, aliases, refs,
 * channel rule) and its behaviour. Each kind file defines one, named
 * trn_<file>_kind after its line in TRN_LAYER_KINDS (nn.h). */
typedef struct trn_layer_ops {
    trn_kind_desc desc;
    /* Darknet's initial weights: 0 scale*N(0,1) (convolutional), 1
     * scale*U(-1,1) (connected); scale = sqrt(2 / fan-in). */
    int init_uniform;
    /* 1: its weights are stored transposed (rows and columns swapped) in a
     * .weights file whose header says so (Darknet's version x.1001). */
    int weights_transposed;
    /* 1: trn_layer_import_output first reruns its training forward (on its
     * current input), to rebuild state the backward reads (max-pool's
     * argmax choices). */
    int import_reruns_forward;
    /* Keys the section may hold besides the common ones (NULL-terminated). */
    const char *const *keys;
    /* Reads the section's keys (trn_build_* getters), sets l->out, the
     * activation and the kind's state, and declares parameters in file
     * order. -1 with an error naming file:line. */
    int (*setup)(trn_layer *l, trn_build *b, trn_err *err);
    /* Allocates the kind's buffers once the network is sized (after every
     * setup); may be NULL. Returns -1 when out of memory. */
    int (*alloc)(trn_layer *l, trn_net *net, trn_err *err);
    /* l->output = f(l->input) for the whole batch; train selects batch
     * statistics, dropout and random crops. */
    void (*forward)(trn_layer *l, trn_net *net, int train);
    /* Adds to l->in_delta (when not NULL) and the update arrays, from
     * l->delta. NULL in the inference-only flavour. */
    void (*backward)(trn_layer *l, trn_net *net);
    /* Kind-specific fields of trn_layer_info (costs, geometry). */
    void (*describe)(const trn_layer *l, trn_layer_info *info);
    /* Frees the private state's buffers (the state itself is freed by the
     * network); may be NULL. */
    void (*destroy)(trn_layer *l, trn_net *net);
    /* Capacity (trn_net_set_capacity): l->in already holds the active input
     * shape; sets l->out to the active output for `filters` own output
     * channels (0: all) and adapts the kind's state. -1 with an error when
     * the kind cannot compute that prefix. NULL: the kind's output channels
     * are its input's (pass-through kinds); filters must then be 0. */
    int (*capacity)(trn_layer *l, trn_net *net, int filters, trn_err *err);
} trn_layer_ops;

struct trn_layer {
    const trn_layer_ops *ops;
    int index;
    int section;        /* cfg section */
    int line;           /* its header line */
    char type[32];      /* section type as written */
    trn_shape in, out;
    size_t inputs, outputs; /* floats per image */
    /* in/out/inputs/outputs are the ACTIVE shapes: the channel prefix of
     * the capacity set by trn_net_set_capacity (the whole layer by
     * default). full_* are the built sizes, which the buffers and the
     * parameters keep: a batch of active outputs is stored packed,
     * (batch, active outputs), so the layers downstream read it as a
     * smaller network's layer would. */
    trn_shape full_in, full_out;
    size_t full_inputs, full_outputs;
    int cap_filters;    /* the filters value of the last set_capacity (0: all) */
    trn_activation act;
    float lr_scale;     /* per-layer learning_rate key (Darknet's learning_rate_scale) */
    int stopbackward, dontload, dontsave;
    float *input;       /* (batch, inputs): the previous output or the net input */
    float *output;      /* (batch, outputs) */
    float *in_delta;    /* (batch, inputs) or NULL: the previous layer's delta */
    float *delta;       /* (batch, outputs) or NULL (inference, crop) */
    int output_aliased; /* output (and delta) belong to the previous layer */
    int has_delta;      /* 0: the layer keeps no delta (crop, as in Darknet) */
    int ready;          /* its buffers and state are allocated (layers_ready, net.c) */
    int param_first, param_count; /* its slice of the parameter table */
    float cost;         /* the layer's cost of the last forward with truth */
    int has_cost;
    size_t workspace;   /* floats of scratch it needs */
    void *priv;         /* the kind's state */
    /* Test hook (trn_layer_fix_random): values replacing the next training
     * forward's random draws (dropout: batch*inputs uniforms; crop: flip,
     * dh, dw). NULL normally. */
    float *fixed_rand;
    size_t fixed_rand_n;
    double t_forward, t_backward; /* profiling sums (trn_net_profile) */
};

struct trn_net {
    trn_net_config cfg;
    int *steps_store;
    float *scales_store;
    trn_net_opts opts;
    const trn_backend *be;
    int running;          /* the layer trn_layer_run is running, -1 between layers */
    int batch;
    int n;
    trn_layer *layers;
    trn_shape in;
    /* Parameters: one block in file order, one update block. */
    int np;
    trn_param *params;
    float *param_block;   /* owned, NULL when borrowed or external */
    float *update_block;  /* owned, NULL when inference-only */
    size_t param_floats;
    int borrowed;
    uint64_t borrows;     /* times parameters were borrowed: a layer's prepared weights (trn_conv_prep) are of one */
    float **home;         /* borrowed: every parameter's pointer into the loaded
                           * buffer, kept at the first trn_net_vectors_bind */
    int params_ready;     /* 0 while external parameters are not supplied */
    /* Activations. */
    float *input;         /* (batch, inputs) copy of the caller's x */
    float *truth;         /* (batch, outputs) or NULL */
    const float *truth_in; /* the caller's truth during a training forward */
    const float *soft;    /* (batch, outputs) distillation targets, or NULL */
    const float *group_w; /* per softmax group loss weights (trn_net_set_group_weights), or NULL */
    float *workspace;
    size_t workspace_floats;
    uint64_t seen;
    int train;            /* the last forward was a training forward */
    uint64_t bn_average;  /* trn_net_bn_average: k > 0 averages batch k into the rolling statistics */
    float cost;
    trn_rng rng_init;     /* initial weights */
    trn_rng rng_train;    /* dropout and crops: forked per forward and layer */
    char name[256];       /* the cfg's name, for messages */
    int profile;          /* trn_net_profile */
};

/* Typed reading of one cfg section during trn_net_create: each getter
 * marks the key as used; errors name file:line and the key. */
struct trn_build {
    const trn_cfg *cfg;
    int section;
    trn_net *net;
    trn_layer *layers; /* layers built so far (index < current) */
    int index;         /* current layer */
    unsigned char used[256];
    int nparams;       /* parameter declarations so far */
    int cap;
    trn_param *params;
    uint64_t bytes;    /* buffer bytes accounted so far */
};

int trn_build_int(trn_build *b, const char *key, int def, int lo, int hi, int *out, trn_err *err);
int trn_build_float(trn_build *b, const char *key, float def, float lo, float hi, float *out,
                    trn_err *err);
/* A string value (NULL when absent and def is NULL). */
const char *trn_build_str(trn_build *b, const char *key, const char *def);
/* Comma-separated integers; returns the count (<= max), -1 on error. */
int trn_build_ints(trn_build *b, const char *key, int *out, int max, trn_err *err);
int trn_build_activation(trn_build *b, const char *def, trn_activation *out, trn_err *err);
/* "file:line" of key (or of the section) for messages. */
const char *trn_build_where(trn_build *b, const char *key, char *buf, size_t size);
/* An error about the section's key, prefixed with its file:line. */
int trn_build_fail(trn_build *b, const char *key, trn_err *err, const char *fmt, ...)
    TRN_PRINTF(4, 5);
/* Declares a parameter of the current layer (in file order). -1 when the
 * network would exceed its size limit. */
int trn_build_param(trn_build *b, trn_layer *l, trn_param_role role, int rows, int cols,
                    trn_err *err);
/* Checks a tensor of n floats against the size limit and accounts it. */
int trn_build_account(trn_build *b, uint64_t floats, const char *what, trn_err *err);

/* The parameter k of layer l (k-th declared). */
static inline trn_param *trn_lparam(trn_net *net, const trn_layer *l, int k)
{
    return &net->params[l->param_first + k];
}

/* Layer memory helpers: zeroed floats from the backend, NULL on failure. */
float *trn_net_alloc_floats(trn_net *net, size_t n);
void trn_net_release(trn_net *net, void *p);

/* A loss layer's cost: the sum of its n per-element losses (in double),
 * marked as set. */
void trn_layer_set_cost(trn_layer *l, const float *loss, size_t n);

/* Runs layer l's forward (or backward), timed when profiling. */
void trn_layer_run(trn_net *net, trn_layer *l, int backward, int train);

/* Sets the seed and derives the generators from it. */
void trn_net_reseed(trn_net *net, uint64_t seed);

/* The generator of layer l's draws for the current training forward (a
 * pure function of the seed, `seen` and the layer index). */
trn_rng trn_net_layer_rng(const trn_net *net, const trn_layer *l);

/* Test hook: the next training forward of layer i uses `values` instead of
 * its own random draws (see trn_layer.fixed_rand). -1 on a bad layer or
 * count. */
int trn_layer_fix_random(trn_net *net, int i, const float *values, size_t n, trn_err *err);

/* Streams a .weights file's bytes (what trn_weights_save writes) to put,
 * which returns 0 or -1. Returns -1 when put failed. */
int trn_weights_write(const trn_net *net, int (*put)(void *ctx, const void *p, size_t n), void *ctx);

/* Test hook: replaces layer i's training-forward output by `values`
 * (batch * outputs floats). A max-pool layer first recomputes its argmax
 * choices from its current input. The differential test uses it to run the
 * backward on Darknet's forward state. */
int trn_layer_import_output(trn_net *net, int i, const float *values, size_t n, trn_err *err);

/* The kinds' rows (one file each, listed by TRN_LAYER_KINDS in nn.h). */
#define TRN_KIND_ROW_(KIND, file) extern const trn_layer_ops trn_##file##_kind;
TRN_LAYER_KINDS(TRN_KIND_ROW_)
#undef TRN_KIND_ROW_

/* Batch normalisation shared by convolutional and connected layers
 * (batchnorm.c). State for `c` channels over `spatial` positions. */
typedef struct trn_bn {
    int c, spatial;
    float *mean, *variance;            /* batch statistics of the last training forward */
    float *mean_delta, *variance_delta;
    float *x; /* (batch, c, spatial) before normalising, the input of the
                 training forward (the normalised values are recomputed
                 from it by the backward, as the forward computed them) */
} trn_bn;
int trn_bn_alloc(trn_bn *bn, trn_net *net, int c, int spatial, int training);
void trn_bn_free(trn_bn *bn, trn_net *net);
/* The buffer a layer's product should fill before trn_bn_forward: bn->x
 * for a training forward, else out itself. */
float *trn_bn_input(trn_bn *bn, float *out, int train);
/* out = act(scales * normalised(x) + biases), with the batch's statistics
 * (train; x must be trn_bn_input's buffer) or the rolling ones (x may be
 * out) (params: biases, scales, rolling_mean, rolling_variance). */
void trn_bn_forward(trn_bn *bn, trn_net *net, const float *x, float *out, trn_param *biases,
                    trn_param *scales, trn_param *rmean, trn_param *rvar, int train, trn_activation act);
/* delta (batch, c, spatial) in place, from the layer's output y and its
 * activation act (the activation's gradient included), accumulating bias
 * and scale updates. */
void trn_bn_backward(trn_bn *bn, trn_net *net, const float *y, trn_activation act, float *delta,
                     trn_param *biases, trn_param *scales);

/* Activation formulas (activation.c): Darknet's, on one value; the
 * gradient takes the activation's output. */
float trn_activate1(float x, trn_activation a);
float trn_gradient1(float y, trn_activation a);

/* Output size of a convolution along one side (Darknet's rule). */
static inline int trn_conv_out(int m, int pad, int k, int s)
{
    return (m + 2 * pad - k) / s + 1;
}

#endif /* TRN_NET_H */
