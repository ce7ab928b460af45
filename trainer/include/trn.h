/*
 * trn.h: the trainer library, a Darknet-compatible CNN library (the one public
 * header of trainer/; every exported name starts with trn_ or TRN_).
 *
 * Conventions, for every function below:
 * - Library code never exits. A function that can fail returns 0 on success
 *   and -1 on failure (or NULL for constructors) and fills the caller's
 *   trn_err with one message that says what, where (file:line for text,
 *   byte offset for binary) and what to do.
 * - Random numbers come from a trn_rng the caller owns and seeds.
 * - Objects returned by the create, open and load functions are owned by the
 *   caller and freed with the matching free or close function.
 */
#ifndef TRN_H
#define TRN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TRN_VERSION "0.1.0"

#if defined(__GNUC__)
#define TRN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TRN_MUST_CHECK __attribute__((warn_unused_result))
#else
#define TRN_PRINTF(f, a)
#define TRN_MUST_CHECK
#endif

/* ---- errors ------------------------------------------------------------ */

#define TRN_ERR_MAX 1024

/* One error message, filled by the function that failed. */
typedef struct trn_err {
    char msg[TRN_ERR_MAX];
} trn_err;

/* Formats a message into err (err may be NULL). Returns -1, so that error
 * paths can be written `return trn_errf(err, "...")`. */
int trn_errf(trn_err *err, const char *fmt, ...) TRN_PRINTF(2, 3);

/* Prefixes the message already in err with "prefix: ". Returns -1. */
int trn_err_prefix(trn_err *err, const char *fmt, ...) TRN_PRINTF(2, 3);

/* ---- random numbers ------------------------------------------------------ */

/* xoshiro256** seeded through splitmix64: small, fast, and the same stream on
 * every platform. Never shared between threads: fork one per thread or per
 * sample with trn_rng_fork so results do not depend on the thread count. */
typedef struct trn_rng {
    uint64_t s[4];
} trn_rng;

void trn_rng_seed(trn_rng *r, uint64_t seed);
/* A generator for sub-stream `stream` of r's seed, independent of how many
 * numbers r has produced: trn_rng_fork(r, i) is the same for the same seed. */
trn_rng trn_rng_fork(const trn_rng *r, uint64_t stream);
uint64_t trn_rng_u64(trn_rng *r);
/* Uniform in [0, 1). */
float trn_rng_uniform(trn_rng *r);
/* Uniform in [lo, hi). */
float trn_rng_range(trn_rng *r, float lo, float hi);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t trn_rng_below(trn_rng *r, uint64_t n);
/* Standard normal (Box-Muller). */
float trn_rng_normal(trn_rng *r);

/* ---- checked I/O ------------------------------------------------------- */

/* fopen that reports "cannot open PATH for MODE: strerror" in err. */
FILE *trn_fopen(const char *path, const char *mode, trn_err *err);

/* Reads exactly n bytes; a short read is an error naming the file `name` and
 * the byte offset where data ran out. */
int trn_fread_exact(FILE *f, void *buf, size_t n, const char *name, trn_err *err) TRN_MUST_CHECK;

/* Reads a whole file into a new buffer (NUL-terminated, the NUL not counted
 * in *len). The caller frees *buf. max_len bounds the size (0: no bound). */
int trn_read_file(const char *path, size_t max_len, char **buf, size_t *len, trn_err *err) TRN_MUST_CHECK;

/* Creates a directory and its parents (mode 0755); existing ones are fine. */
int trn_mkdir_p(const char *path, trn_err *err);

/* Atomic file replacement: write to a temporary file beside `path`, then
 * trn_atomic_commit flushes, fsyncs, renames over `path` and fsyncs the
 * directory, so readers see the old file or the whole new one, never a part.
 * trn_atomic_abort removes the temporary file. Exactly one of commit/abort
 * must follow a successful open; commit aborts by itself when it fails. */
typedef struct trn_atomic {
    FILE *f;
    char path[4096];
    char tmp[4096 + 32];
} trn_atomic;

int trn_atomic_open(trn_atomic *a, const char *path, trn_err *err) TRN_MUST_CHECK;
int trn_atomic_commit(trn_atomic *a, trn_err *err) TRN_MUST_CHECK;
void trn_atomic_abort(trn_atomic *a);
/* The three steps for a buffer already in memory. */
int trn_write_file_atomic(const char *path, const void *buf, size_t len, trn_err *err) TRN_MUST_CHECK;

/* fsync a directory (after renaming into it). */
int trn_fsync_dir(const char *dir, trn_err *err);

/* ======================================================================
 * data: images, augmentation, Darknet classifier data sets, the batch
 * loader (image.c, image_stb.c, augment.c, dataset.c, loader.c; see
 * trainer/README.md, section Data)
 * ====================================================================== */

/* ---- images (image.c: no training code, runtime-lite compiles it too) -- */

/* A float image, data is (c, h, w): data[(k*h + y)*w + x], values in [0, 1]
 * for decoded pixels. */
typedef struct trn_image {
    int w, h, c;
    float *data;
} trn_image;

/* Decoding limits, checked on the header before any pixel is allocated. */
#define TRN_IMAGE_MAX_SIDE 16384                 /* pixels per side */
#define TRN_IMAGE_MAX_PIXELS (64L * 1024 * 1024) /* w * h */
#define TRN_IMAGE_MAX_FILE (256L * 1024 * 1024)  /* bytes of an image file */

/* Whether w x h x c is within the limits above (and c <= 64). */
int trn_image_size_ok(long w, long h, long c);
/* Allocates a w x h x c image of zeros (w, h, c >= 1, w*h within the limits
 * above). Returns -1 on a bad size or out of memory; im is then empty. */
int trn_image_alloc(trn_image *im, int w, int h, int c, trn_err *err);
/* Frees im->data and empties im (NULL-safe, idempotent). */
void trn_image_free(trn_image *im);

/* Decodes a PNG, JPEG or BMP file into a new image. channels 0 keeps the
 * file's channel count; 1..4 converts (grey <-> RGB, alpha added or dropped,
 * grey from RGB by stb_image's luma weights). Errors name the file: cannot
 * read, unknown or corrupt format, dimensions over the limits. */
int trn_image_load(const char *path, int channels, trn_image *out, trn_err *err);
/* The same from a buffer in memory; `name` is used in messages. */
int trn_image_decode(const void *buf, size_t len, const char *name, int channels,
                     trn_image *out, trn_err *err);

/* Bilinear resize with Darknet's resize_image arithmetic (corners map to
 * corners: x_src = x * (src.w-1)/(dst.w-1)). dst is allocated by the caller
 * with dst->c == src->c and the wanted w, h. */
void trn_image_resize(const trn_image *src, trn_image *dst);
/* The window (ox, oy, out_w, out_h) of src resized to (rw, rh), written to
 * out (c, out_h, out_w) without building the whole resized image. */
void trn_image_resize_region(const trn_image *src, int rw, int rh, int ox, int oy,
                             int out_w, int out_h, float *out);
/* dst (allocated by the caller, dst->c == src->c) = the window of src at
 * (dx, dy) of dst's size; coordinates outside src are clamped to the edge
 * (Darknet's crop_image). */
void trn_image_crop(const trn_image *src, int dx, int dy, trn_image *dst);
/* Mirrors im left to right, in place. */
void trn_image_flip(trn_image *im);
/* In place, on channels 0..2 (c >= 3): h, s, v in [0, 1] (h = hue / 360). */
void trn_image_rgb_to_hsv(trn_image *im);
void trn_image_hsv_to_rgb(trn_image *im);
/* Darknet's distort_image: saturation *= dsat, value *= dexp, hue += dhue
 * (wrapped into [0, 1]), back to RGB, clamped to [0, 1]. On images with
 * fewer than 3 channels only the exposure applies (to channel 0). */
void trn_image_distort(trn_image *im, float dhue, float dsat, float dexp);
/* dst (caller-allocated, same size and c as src) = src rotated by rad
 * radians about its centre, bilinear, zeros outside src. */
void trn_image_rotate(const trn_image *src, float rad, trn_image *dst);

/* The geometric transform of Darknet's rotate_crop_image: an output pixel
 * (x, y) of a w x h window reads src at
 *   u = (x - w/2) / scale * aspect + dx / scale * aspect
 *   v = (y - h/2) / scale + dy / scale
 *   src_x = cos(rad) * u - sin(rad) * v + cx
 *   src_y = sin(rad) * u + cos(rad) * v + cy
 * bilinearly, zeros outside the window [bx0, bx1) x [by0, by1) of src.
 * trn_affine_init gives Darknet's case: centre (src.w/2, src.h/2), the
 * window the whole image; the jitter augmentation moves both. */
typedef struct trn_affine {
    float rad, scale, aspect, dx, dy;
    float cx, cy;
    int bx0, by0, bx1, by1;
} trn_affine;
/* Identity-like defaults for src: rad 0, scale 1, aspect 1, dx = dy = 0,
 * centre and window from src. */
void trn_affine_init(trn_affine *a, const trn_image *src);
/* out is (src->c, h, w). */
void trn_image_affine(const trn_image *src, const trn_affine *a, int w, int h, float *out);

/* Evaluation preprocessing, no randomness (Darknet's validate_classifier_
 * single): scale src, keeping its aspect ratio, so that it just covers
 * w x h (for a square network: the shorter side becomes w), then take the
 * centred w x h window. out is (src->c, h, w). */
void trn_image_eval_into(const trn_image *src, int w, int h, float *out);
/* Loads `path` with c channels and writes the evaluation preprocessing of
 * it to out, (c, h, w). What `trainer predict/valid` and `rtl run` feed a
 * network. Errors as trn_image_load. */
int trn_image_load_input(const char *path, int w, int h, int c, float *out, trn_err *err);

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
 * order). x is (batch, c, h, w), y is (batch, classes) one-hot. The result is
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

#ifdef __cplusplus
}
#endif
#endif /* TRN_H */
