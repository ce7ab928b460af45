/*
 * ds.h: data sets for the catalog toolchain (the one public header of
 * datasets/; every exported name starts with ds_ or DS_).
 *
 * What this component writes, always the same layout (the contract with the
 * trainer and the catalog, see datasets/README.md):
 *
 *   <root>/<name>/<name>.data          identity task: Darknet classifier keys
 *                                      classes, train, valid, test, labels,
 *                                      names, backup, top
 *   <root>/<name>/<name>.names         its labels, one per line
 *   <root>/<name>/<name>-<task>.data   one per attribute task, same lists
 *   <root>/<name>/<name>-<task>.names
 *   <root>/<name>/<name>.tasks         "task data-file" lines, identity first
 *   <root>/<name>/<name>.info          how the set was made (key = value)
 *   <root>/<name>/{train,valid,test}.list   image paths, relative to the
 *                                      folder of the .data file
 *   <root>/<name>/{train,valid,test}/NNNNNN_<label>_<label>...png
 *   <root>/<name>/contexts/...         (n,p) context streams (context.c)
 *
 * Label rule (libtrn's trn_label_match): a label L matches an image path
 * when L equals the name of the image's parent folder or one of the
 * '_'-separated tokens of its file name without the extension; exactly one
 * label of a set must match. File names carry one token per task, so one
 * list serves every task.
 *
 * Conventions, for every function below (as in trn.h): a function that can
 * fail returns 0 on success and -1 on failure (NULL for constructors) and
 * fills the caller's trn_err with what was wrong, where (file:line for text,
 * byte offset for binary) and what to do. Nothing here exits. Random numbers
 * come from trn_rng seeded by the caller's seed: the same inputs and seed
 * give the same bytes, whatever the thread count. Sets are written into a
 * temporary folder and renamed into place when complete, so an interrupted
 * run never leaves a set that later steps trust.
 */
#ifndef DS_H
#define DS_H

#include <stddef.h>
#include <stdint.h>

#include "trn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest label, task or set name (bytes, without the NUL). */
#define DS_LABEL_MAX 63
/* Most tasks (label sets) over one set of images. */
#define DS_TASKS_MAX 8
/* Longest path this component builds. */
#define DS_PATH_MAX 4096

/* ---- labels (labels.c) --------------------------------------------------- */

/* Whether `label` can be a label: 1..DS_LABEL_MAX bytes of [A-Za-z0-9.+-],
 * not "." or "..", so that it is one file-name token. 0 if valid, else -1
 * with the reason (naming `label`). */
int ds_label_check(const char *label, trn_err *err);

/* A label made from a free-form class name (a folder name, a CIFAR label
 * name): '_', spaces and any byte outside [A-Za-z0-9.+-] become '-';
 * truncated to DS_LABEL_MAX. out has room for DS_LABEL_MAX + 1 bytes.
 * Returns -1 when nothing usable is left (an empty name). */
int ds_label_from_name(const char *name, char out[DS_LABEL_MAX + 1], trn_err *err);

/* (The label rule itself, for reading sets, is libtrn's trn_label_match;
 * the writer checks every file name it makes with it.) */

/* A task: a named label set over the images of a set. */
typedef struct ds_task {
    char name[DS_LABEL_MAX + 1]; /* "identity", "shape", ... */
    int classes;
    char **labels;               /* [classes], owned */
} ds_task;

/* Allocates a task of `classes` empty labels. -1 on a bad name or count. */
int ds_task_init(ds_task *t, const char *name, int classes, trn_err *err);
/* Sets label k (checked by ds_label_check). */
int ds_task_set(ds_task *t, int k, const char *label, trn_err *err);
/* Checks that every label is set and none appears twice. */
int ds_task_check(const ds_task *t, trn_err *err);
/* Frees the labels (NULL-safe, idempotent). */
void ds_task_free(ds_task *t);

/* ---- checking a set (check.c) ---------------------------------------------- */

/* Reading a set is libtrn's trn_dataset_open (the .data keys, labels and
 * list files, each image's class by the label rule, errors with
 * file:line). On top of that, ds_check_set checks that every listed image
 * exists, that no image file is listed in two splits, and, with decode = 1,
 * that every image decodes (ds_image_decode: damage with its byte offset).
 * data_path names the set in messages. */
int ds_check_set(const trn_dataset *ds, const char *data_path, int decode, trn_err *err) TRN_MUST_CHECK;

/* The shape of the set's images as a network's input takes it: width,
 * height and channels (1 grey, 2 grey + alpha, 3 RGB, 4 RGBA) of the first
 * image of the train split, decoded. (The trainer's loader resizes other
 * sizes; this is what a recipe fits its [net] to.) */
int ds_set_shape(const trn_dataset *ds, const char *data_path, int *w, int *h, int *c, trn_err *err);

/* The entry of image i of split s as the set's list gives it relative to
 * the folder of data_path (trn_dataset_path resolves it), or the resolved
 * path when it is not under that folder (an absolute entry). */
const char *ds_set_entry(const trn_dataset *ds, const char *data_path, trn_split s, size_t i);

/* ---- pixels and image files (image.c) ------------------------------------ */

/* 8-bit pixels, data is (h, w, c) interleaved, as PNG stores them. */
typedef struct ds_pixels {
    int w, h, c;
    size_t cap;     /* bytes allocated at data */
    uint8_t *data;
} ds_pixels;

/* Makes p a w x h x c image, growing its buffer when needed (contents are
 * undefined). c in 1..4. */
int ds_pixels_reserve(ds_pixels *p, int w, int h, int c, trn_err *err);
void ds_pixels_free(ds_pixels *p);

/* Encodes p as PNG (stb_image_write, deterministic) into a new buffer the
 * caller frees. */
int ds_png_encode(const ds_pixels *p, uint8_t **buf, size_t *len, trn_err *err);

/* Checks the structure of a PNG (signature, chunk lengths, CRCs, IHDR first,
 * IEND last) or JPEG (SOI, segment lengths, entropy-coded data, EOI) in
 * memory, then decodes it with libtrn's trn_image_decode (stb_image, with its size
 * limits) into out as bytes (channels 0: the file's count).
 * Errors name `name` and the byte offset of the first damage (for data that
 * is well framed but does not decode: the offset of the image data). */
int ds_image_decode(const uint8_t *buf, size_t len, const char *name, int channels,
                    ds_pixels *out, trn_err *err) TRN_MUST_CHECK;

/* Resizes src into dst (w x h, src's channels) with stb_image_resize. */
int ds_pixels_resize(const ds_pixels *src, int w, int h, ds_pixels *dst, trn_err *err);

/* ---- context streams (context.c) ----------------------------------------- */

#define DS_CONTEXT_MAX 16 /* values of n and of p */

/* (n,p) contexts: n chosen classes make up fraction p of every split's
 * stream, the rest are drawn from the other classes (MCDNN 4.1.2). */
typedef struct ds_context_opts {
    int nn, n[DS_CONTEXT_MAX];   /* n values (default 7, 14, 21) */
    int np;
    double p[DS_CONTEXT_MAX];    /* p values (default .6 .7 .8 .9 .95) */
    int per;                     /* class sets drawn per n (default 1) */
    uint64_t seed;
    const char *classes;         /* NULL: n classes drawn from the seed; else the
                                  * one class set: comma-separated labels of the
                                  * set (a device's observed context, for the
                                  * specialiser); n is then their count and the
                                  * n values are ignored */
} ds_context_opts;

void ds_context_defaults(ds_context_opts *o);
/* Checks ranges: 1 <= n, 0 < p <= 1, 1 <= per <= 100. */
int ds_context_check(const ds_context_opts *o, trn_err *err);
/* Parses "7,14,21" into n[] / "0.6,0.9" into p[]. */
int ds_context_parse_n(ds_context_opts *o, const char *csv, trn_err *err);
int ds_context_parse_p(ds_context_opts *o, const char *csv, trn_err *err);

typedef struct ds_context_result {
    int written;                 /* contexts written */
    int skipped_n[DS_CONTEXT_MAX]; /* n values skipped: n >= classes */
    int nskipped;
} ds_context_result;

/* Reads the identity set `data_path` and writes the folder out_dir
 * (built under a temporary name, then put in place of an existing one as
 * ds_set_write does) with one folder per context <id>/ (id "n7-p0.6";
 * "-r1", "-r2"... for further class sets of the same n) holding <id>.data,
 * <id>.names (the n classes in set order, then "other"), <id>.context
 * (n, p, the chosen classes' indices in the set, image counts),
 * {train,valid,test}.list and other/ (relative symbolic links to the
 * out-of-context images, so that the label rule gives them the label
 * "other"); plus contexts.list ("id n p data-file" per line). Paths stay
 * relative when out_dir lies inside the set's folder, else they are
 * absolute. The class set of (n, r) is the same for every p. Values of n
 * that leave no other class (n >= classes) are skipped and reported in
 * res. The same set, options and seed give the same bytes. */
int ds_contexts_write(const char *data_path, const char *out_dir, const ds_context_opts *o,
                      ds_context_result *res, trn_err *err);

/* ---- writing a set (writer.c) --------------------------------------------- */

/* Produces item `i`'s pixels into out (thread-safe: called from several
 * threads at once, each with its own out). */
typedef int (*ds_render_fn)(void *ctx, size_t i, ds_pixels *out, trn_err *err);

typedef struct ds_set_spec {
    const char *root;     /* parent folder of the set, e.g. build/data */
    const char *name;     /* the set's name: a label-like word */
    int ntasks;           /* 1..DS_TASKS_MAX */
    const ds_task *tasks; /* tasks[0] is the identity task (<name>.data) */
    size_t count;         /* images */
    const uint8_t *split; /* [count] trn_split of each image */
    const int32_t *cls;   /* [count * ntasks]: class of image i in task t at
                           * cls[i * ntasks + t] */
    ds_render_fn render;
    void *ctx;
    int threads;          /* >= 1 */
    uint64_t seed;        /* list order and contexts */
    const ds_context_opts *contexts; /* NULL: no contexts/ */
    const char *info;     /* extra "key = value" lines for <name>.info */
} ds_set_spec;

typedef struct ds_write_result {
    char data_path[DS_PATH_MAX]; /* <root>/<name>/<name>.data */
    size_t count[TRN_SPLIT_COUNT];
    int unchanged;        /* 1: an identical set was already there, kept */
    ds_context_result contexts;
} ds_write_result;

/* Writes the set described by spec (see the layout at the top) into a
 * temporary folder <root>/.<name>.tmp.<pid>, then puts it in place of
 * <root>/<name>: when an identical set is already there it is kept
 * untouched (its timestamps too, so make does not redo later steps);
 * otherwise the new folder is exchanged atomically with the old one, which
 * is then removed. On error the temporary folder is removed and the old set,
 * if any, is left as it was. */
int ds_set_write(const ds_set_spec *spec, ds_write_result *res, trn_err *err);

/* ---- the synthetic default set (synth.c) ---------------------------------- */

/* The label sets of the synthetic set: identity (shape x colour), shape
 * family, colour group, size, texture. */
#define DS_SYNTH_TASKS 5

typedef struct ds_synth_opts {
    int size;           /* image side in pixels (default 32), 16..256 */
    int train, valid, test; /* images per identity class and split
                             * (default 100, 20, 30) */
    uint64_t seed;      /* default 1 */
    int clutter;        /* most distractor objects per image (default 2) */
    float noise;        /* most per-pixel noise sigma, 0..0.5 (default 0.04) */
    float occlusion;    /* probability of an occluder, 0..1 (default 0.2) */
    float rotation;     /* the main object turns by up to +-rotation degrees,
                         * 0..180 (default 30) */
} ds_synth_opts;

void ds_synth_defaults(ds_synth_opts *o);
int ds_synth_check(const ds_synth_opts *o, trn_err *err);

/* Fills tasks[0..DS_SYNTH_TASKS) with the synthetic label sets (the caller
 * frees each with ds_task_free). */
int ds_synth_tasks(ds_task tasks[DS_SYNTH_TASKS], trn_err *err);

/* Image `index` (0.. total count) of the set: its split, its class in each
 * task (labels[DS_SYNTH_TASKS]) and, when out is not NULL, its pixels
 * (size x size x 3). A pure function of (opts, index). */
int ds_synth_image(const ds_synth_opts *o, size_t index, trn_split *split,
                   int32_t labels[DS_SYNTH_TASKS], ds_pixels *out, trn_err *err);
/* Images in the whole set. */
size_t ds_synth_count(const ds_synth_opts *o);

/* Generates the whole set as <root>/<name> (ds_set_write). */
int ds_synth_generate(const ds_synth_opts *o, const char *root, const char *name, int threads,
                      const ds_context_opts *contexts, ds_write_result *res, trn_err *err);

/* ---- importers (cifar.c, mnist.c, folder.c) ------------------------------ */

typedef enum ds_format {
    DS_FORMAT_CIFAR10,  /* data_batch_1..5.bin, test_batch.bin */
    DS_FORMAT_CIFAR100, /* train.bin, test.bin (fine + coarse labels) */
    DS_FORMAT_MNIST,    /* {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] */
    DS_FORMAT_FOLDER,   /* <class>/ image folders, or {train,valid|val,test}/<class>/ */
    DS_FORMAT_FASHION_MNIST, /* MNIST's files; Fashion-MNIST's classes, tasks
                              * identity, category and footwear */
    DS_FORMAT_COUNT
} ds_format;

/* "cifar10", "cifar100", "mnist", "folder", "fashion-mnist"; NULL when out
 * of range. */
const char *ds_format_name(int f);
/* The format named `name`; -1 (with a message listing them) if none. */
int ds_format_parse(const char *name, trn_err *err);

typedef struct ds_import_opts {
    const char *root;     /* parent folder of the set (build/data) */
    const char *name;     /* set name (default: the format's name, or the
                           * folder's name for DS_FORMAT_FOLDER) */
    uint64_t seed;        /* which images go to which split, list order */
    double valid_frac;    /* of the training images when the source has no
                           * validation split (default 0.1) */
    double test_frac;     /* folder sources without a test split (0.1) */
    int size;             /* folder sources: resize to size x size (0: keep) */
    int threads;
    const ds_context_opts *contexts; /* NULL: no contexts/ */
} ds_import_opts;

void ds_import_defaults(ds_import_opts *o);

/* Imports the source folder `src` in format f into <root>/<name>
 * (ds_set_write). Corrupt or truncated input is rejected with the file and
 * byte offset, and nothing is written. */
int ds_import(ds_format f, const char *src, const ds_import_opts *o, ds_write_result *res,
              trn_err *err);

#ifdef __cplusplus
}
#endif
#endif /* DS_H */
