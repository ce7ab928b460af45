/*
 * backend.h: the kernel seam between layer logic and compute (private).
 *
 * Layers never loop over tensors themselves: they call these kernels
 * through the network's backend, so a CUDA backend is added by writing one
 * more table (device memory from alloc/free, transfers through upload/
 * download) without touching the layer files. Two tables exist today:
 *   trn_backend_ref  naive loops, written for clarity; the oracle in tests
 *   trn_backend_cpu  OpenBLAS gemm, batched im2col, threaded loops
 * Both compute Darknet's formulas; the tests state the tolerance between
 * them per kernel.
 *
 * Layout conventions: tensors are NCHW float32, row-major; "spatial" is
 * h*w; per-channel vectors have c entries. All kernels are synchronous.
 * Every kernel's first argument is the table it is called through (its
 * context: ctx below).
 */
#ifndef TRN_BACKEND_H
#define TRN_BACKEND_H

#include "nn.h"

typedef struct trn_backend trn_backend;

/* A convolution's geometry (one group): `batch` images of c x h x w in,
 * m filters of c x ks x ks, stride, zero padding `pad` on every side; out
 * (batch, m, oh, ow), oh = (h + 2*pad - ks)/stride + 1, likewise ow. */
typedef struct trn_conv_prep trn_conv_prep;
typedef struct trn_conv_shape {
    int batch, c, h, w, m, ks, stride, pad;
    /* The forward of an inference, not of a training step: conv may then
     * compute it by another algorithm than the product its backward is the
     * adjoint of, equal up to rounding (the CPU's Winograd path). */
    int infer;
    /* NULL, or where an inference forward may keep what it derives from
     * the weights for the next forward of the same weights (below). */
    trn_conv_prep *prep;
} trn_conv_shape;

/* A convolution's prepared weights, kept by its layer across the inference
 * forwards of a network whose weights are borrowed (trn_weights_load_mem:
 * unchanged while borrowed; the layer forgets them when the network
 * borrows again): the CPU backend's Winograd filters U = G g G^T (and the
 * space-to-depth regrouping before them), which it otherwise derives on
 * every forward (1/10 to 1/4 of a layer's products, more at batch 1 of the
 * catalog's small layers). Valid for the weights pointer, row length and
 * shape it was made for; the same floats as derived afresh, so the same
 * bytes. A backend that keeps nothing ignores it. */
struct trn_conv_prep {
    float *u;          /* the prepared floats (owned), `cap` of them */
    size_t cap;
    const float *w;    /* made from: weights, row length, shape */
    int ldw, c, m, ks, stride;
    int ready;         /* u holds them */
};
/* Frees p's buffer and forgets what it held. */
void trn_conv_prep_clear(trn_conv_prep *p);

/* A kernel's first parameter: the table it is called through (unused by
 * the CPU tables). */
#define TRN_BE const trn_backend *be __attribute__((unused))

struct trn_backend {
    const char *name;
    /* The backend's own state (a CUDA backend's device, streams and
     * handles); NULL for the CPU tables. Every kernel gets the table it
     * was called through as its first argument, `be`, and reaches this
     * through it. */
    void *ctx;

    /* Memory for tensors the kernels touch: zeroed, NULL when out of memory. */
    void *(*alloc)(const trn_backend *be, size_t bytes);
    void (*release)(const trn_backend *be, void *p);
    /* Host <-> backend memory (plain copies on the CPU). */
    void (*upload)(const trn_backend *be, float *dst, const float *src, size_t n);
    void (*download)(const trn_backend *be, float *dst, const float *src, size_t n);

    /* C (m, n) = alpha * op(A) op(B) + beta * C, row-major with leading
     * dimensions; op(A) is (m, k), op(B) is (k, n). lda may exceed the
     * row length: a channel-prefix capacity reads the first k columns of a
     * larger weight matrix without copying it. The CPU's convolution
     * kernels call it, through the table they were called with, once per
     * tile from the pool's threads: a wrapping table's gemm must be
     * thread-safe. */
    void (*gemm)(const trn_backend *be, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
    /* im (c, h, w) -> col (c*ks*ks, oh*ow) with zero padding `pad` on every
     * side; oh = (h + 2*pad - ks)/stride + 1, likewise ow. Rows of col are
     * ldcol >= oh*ow floats apart (several images side by side). */
    void (*im2col)(const trn_backend *be, const float *im, int c, int h, int w, int ks, int stride, int pad, float *col,
                   int ldcol);
    /* The adjoint: im += scatter of col. */
    void (*col2im)(const trn_backend *be, const float *col, int ldcol, int c, int h, int w, int ks, int stride, int pad,
                   float *im);
    /* Convolutions, whole batches (the layer's products; im2col and gemm
     * above are their pieces): k = c*ks*ks, W (m, k) with rows ldw >= k
     * apart, col(x) = im2col of one image (k, oh*ow).
     * conv: out[b] (m, oh*ow) = act(W . col(in[b]) + bias) (bias NULL:
     * none; the bias is added, then the activation applied, as add_bias
     * and activate do). */
    void (*conv)(const trn_backend *be, const trn_conv_shape *s, const float *in, const float *w, int ldw,
                 const float *bias, trn_activation act, float *out);
    /* dw (m, k), rows lddw apart, += sum over b of delta[b] (m, oh*ow) . col(in[b])^T */
    void (*conv_dw)(const trn_backend *be, const trn_conv_shape *s, const float *in, const float *delta, float *dw,
                    int lddw);
    /* in_delta[b] += col2im(W^T . delta[b]) */
    void (*conv_dx)(const trn_backend *be, const trn_conv_shape *s, const float *delta, const float *w, int ldw,
                    float *in_delta);
    /* dst (b, a, n) = src (a, b, n): exchanges the two outer dimensions
     * (batch-major <-> channel-major) of blocks of n floats. */
    void (*swap12)(const trn_backend *be, const float *src, float *dst, int a, int b, int n);

    /* Element-wise on n floats. */
    void (*fill)(const trn_backend *be, size_t n, float v, float *x);
    void (*copy)(const trn_backend *be, size_t n, const float *x, float *y);
    void (*axpy)(const trn_backend *be, size_t n, float a, const float *x, float *y); /* y += a*x */
    void (*scal)(const trn_backend *be, size_t n, float a, float *x);
    void (*activate)(const trn_backend *be, float *x, size_t n, trn_activation a);
    /* delta *= f'(y) where y = f(x) is the activation's output. */
    void (*gradient)(const trn_backend *be, const float *y, size_t n, trn_activation a, float *delta);

    /* Per-channel, x is (batch, c, spatial). */
    void (*add_bias)(const trn_backend *be, float *x, const float *b, int batch, int c, int spatial);
    void (*scale_bias)(const trn_backend *be, float *x, const float *s, int batch, int c, int spatial);
    /* db[k] += sum over batch and spatial of delta. */
    void (*backward_bias)(const trn_backend *be, float *db, const float *delta, int batch, int c, int spatial);
    /* ds[k] += sum of delta * xnorm. */
    void (*backward_scale)(const trn_backend *be, float *ds, const float *xnorm, const float *delta, int batch, int c,
                           int spatial);
    /* Batch statistics: mean, and variance with the n-1 divisor (Darknet). */
    void (*mean)(const trn_backend *be, const float *x, int batch, int c, int spatial, float *mean);
    void (*variance)(const trn_backend *be, const float *x, const float *mean, int batch, int c, int spatial, float *var);
    /* x = (x - mean) / (sqrt(var) + 1e-6), Darknet's normalize_cpu. */
    void (*normalize)(const trn_backend *be, float *x, const float *mean, const float *var, int batch, int c, int spatial);
    /* Darknet's batch-norm backward on delta (already multiplied by the
     * scales): mean_delta, variance_delta, then delta in place. */
    void (*bn_backward)(const trn_backend *be, const float *x, const float *mean, const float *var, int batch, int c,
                        int spatial, float *mean_delta, float *var_delta, float *delta);
    /* Fused passes of a layer with batch norm and activation `act`.
     * bn_apply: out = act(((x - mean) / (sqrt(var) + 1e-6)) * scale + bias),
     * what normalize, scale_bias, add_bias and activate compute in turn
     * (out may be x). */
    void (*bn_apply)(const trn_backend *be, const float *x, const float *mean, const float *var, const float *scale,
                     const float *bias, int batch, int c, int spatial, trn_activation act, float *out);
    /* bn_backward_act: what gradient (y: the layer's output), backward_bias
     * (into db), backward_scale (into ds, with xnorm = (x - mean) /
     * (sqrt(var) + 1e-6) as bn_apply computed it), scale_bias (delta *=
     * scale) and bn_backward compute in turn. */
    void (*bn_backward_act)(const trn_backend *be, const float *y, trn_activation act, const float *x,
                            const float *mean, const float *var, const float *scale, int batch, int c, int spatial,
                            float *db, float *ds, float *mean_delta, float *var_delta, float *delta);
    /* bias_gradient: delta *= f'(y), then db[k] += its sum over batch and
     * spatial (gradient, then backward_bias). */
    void (*bias_gradient)(const trn_backend *be, const float *y, trn_activation act, int batch, int c, int spatial,
                          float *db, float *delta);

    /* Max pooling with Darknet's geometry: out (c, oh, ow), window size,
     * stride, offset -pad/2; idx receives the argmax input index (or -1
     * when the window holds no valid input). */
    void (*maxpool)(const trn_backend *be, const float *in, int batch, int c, int h, int w, int size, int stride,
                    int pad, int oh, int ow, float *out, int *idx);
    /* in_delta[idx[i]] += delta[i] for the planes * per_plane outputs, in
     * order of i; the per_plane outputs of plane p (batch * c planes) point
     * into plane p of the input only (as maxpool's idx do), so planes may
     * be summed side by side. */
    void (*maxpool_backward)(const trn_backend *be, const float *delta, const int *idx, int planes, int per_plane,
                             float *in_delta);
    /* Global average: out (batch, c). */
    void (*avgpool)(const trn_backend *be, const float *in, int batch, int c, int spatial, float *out);
    void (*avgpool_backward)(const trn_backend *be, const float *delta, int batch, int c, int spatial, float *in_delta);

    /* Softmax over `groups` groups of n/groups values per image, at
     * temperature t. */
    void (*softmax)(const trn_backend *be, const float *in, int batch, int n, int groups, float t, float *out);
    /* Darknet's softmax_x_ent_cpu: err = t ? -log p : 0; delta = t - p. */
    void (*softmax_xent)(const trn_backend *be, size_t n, const float *p, const float *t, float *delta, float *err);
    /* The [cost] types: delta = truth - pred (or its L1/smooth form). */
    void (*l2)(const trn_backend *be, size_t n, const float *p, const float *t, float *delta, float *err);
    void (*l1)(const trn_backend *be, size_t n, const float *p, const float *t, float *delta, float *err);
    void (*smooth_l1)(const trn_backend *be, size_t n, const float *p, const float *t, float *delta, float *err);

    /* Darknet's shortcut_cpu: out (b, c2, h2, w2) = s1*out + s2*add on the
     * sampled overlap of add (b, c1, h1, w1). */
    void (*shortcut)(const trn_backend *be, int batch, int w1, int h1, int c1, const float *add, int w2, int h2, int c2,
                     float s1, float s2, float *out);
    /* The crop layer: out (b, c, oh, ow) = in window at (dh, dw), mirrored
     * when flip, times scale plus trans. */
    void (*crop)(const trn_backend *be, const float *in, int batch, int c, int h, int w, int oh, int ow, int dh, int dw,
                 int flip, float scale, float trans, float *out);
    /* Dropout with uniform draws r: x = r < p ? 0 : x * scale (in place);
     * the backward applies the same to delta. */
    void (*dropout)(const trn_backend *be, float *x, const float *r, size_t n, float p, float scale);

    /* Darknet's SGD step on n parameters w with update array u, per
     * element in this order: u += decay * w; w += rate * u; u *= momentum
     * (decay = -decay*batch for weights, 0 otherwise; rate = lr/batch).
     * Where mask (may be NULL) is 0 the element is frozen: u is cleared
     * and w kept. */
    void (*sgd)(const trn_backend *be, float *w, float *u, const float *mask, size_t n, float decay, float rate,
                float momentum);
};

extern const trn_backend trn_backend_ref;
extern const trn_backend trn_backend_cpu;

const trn_backend *trn_backend_get(trn_backend_kind kind);

/* Measuring hook (trainer bench): from now on net computes through `be`,
 * which must compute what the network's table computes (a copy of it that
 * also records). Returns the table it replaces. MAC counting has its own
 * public facility (trn_net_count_forward, nn.h). */
const trn_backend *trn_net_swap_backend(trn_net *net, const trn_backend *be);
/* The layer the engine is running (-1 between layers): a wrapping table
 * charges its kernels to it. */
int trn_net_running_layer(const trn_net *net);

/* Threaded loops of the CPU backend (threads.c): calls fn(ctx, i) for i in
 * [0, n), spread over trn_threads() threads of the calling thread's current
 * engine; returns when all are done. */
void trn_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx);

/* The calling thread's current engine (threads.c): trn_layer_run enters
 * its network's engine around each layer with the threads that layer uses
 * (0: the engine's setting) and leaves it after, restoring what was
 * current before (nested runs: an exit's network inside its trunk's). */
typedef struct trn_engine_scope {
    trn_engine *e; /* NULL: the default engine */
    int threads;
} trn_engine_scope;
trn_engine_scope trn_engine_enter(trn_engine *e, int threads);
void trn_engine_leave(trn_engine_scope was);

/* The thread choice of an engine whose threads are not set (n <= 0, the
 * default): a layer of `work` operations (multiply-adds, plus the bias,
 * batch-norm, activation and pooling operations, of the whole batch) runs
 * on work / TRN_WORK_PER_THREAD threads, at least 1, at most all online
 * cores: every thread has about 1M operations (some 25 us of one core at
 * 40 GMAC/s) against the hand-over of a job to a spinning worker and the
 * moving of its data between the cores' caches, a few microseconds. With
 * the pool's workers sleeping between jobs (a wake-up of tens of
 * microseconds on a virtual machine) it was 4M, and the catalog's small
 * variants ran every layer on one thread (issue 42); pinned to two cores
 * of the loaded 2-core EPYC VM, base's conv1 (2.5M multiply-adds) and
 * conv2 (6.6M) ran 1.6x faster on two threads, its 0.9M-1.3M layers 1.2x.
 * A function of the shape and the core count only; an engine with n > 0
 * threads uses n for every layer. Results never depend on it. */
#define TRN_WORK_PER_THREAD ((uint64_t)1 << 20)
int trn_engine_layer_threads(const trn_engine *e, uint64_t work);
int trn_engine_threads_chosen(const trn_engine *e);
/* Sets OpenBLAS to one thread, once per process (before any BLAS call). */
void trn_blas_single_thread(void);

/* The GEMM path (gemm_path.c; trn_gemm_info in nn.h). trn_gemm_select
 * chooses it once (trn_blas_single_thread calls it before any BLAS call);
 * trn_gemm_reselect chooses again (tests, after trn_blas_force_core).
 * trn_gemm_own: whether the default mode's product of that shape runs on
 * our own kernels. trn_blas_force_core switches OpenBLAS's DYNAMIC_ARCH
 * core type in-process as OPENBLAS_CORETYPE does at load time: 0, or -1
 * when the build cannot (not DYNAMIC_ARCH) or did not take that name;
 * call it while no BLAS call runs. Levels: 4 AVX-512, 3 AVX2+FMA, 2 AVX,
 * 1 SSE, 0 unknown (another architecture). */
void trn_gemm_select(void);
void trn_gemm_reselect(void);
int trn_gemm_own(int m, int n);
int trn_blas_force_core(const char *core);
int trn_blas_core_level(const char *core);
int trn_cpu_isa_level(void);

#endif /* TRN_BACKEND_H */
