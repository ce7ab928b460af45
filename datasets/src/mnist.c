/*
 * mnist.c: importer of MNIST (and look-alikes such as Fashion-MNIST) idx
 * files, uncompressed.
 *
 * The folder holds train-images-idx3-ubyte, train-labels-idx1-ubyte,
 * t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (or the same names with
 * '.' before "idx", as some mirrors spell them). An idx file is big-endian:
 *   bytes 0-1   zero
 *   byte 2      element type, 0x08 = unsigned byte (the only one accepted)
 *   byte 3      number of dimensions d (3 for images, 1 for labels)
 *   bytes 4..   d sizes, 4 bytes each (images: count, rows, columns)
 *   then        the elements, row-major: count x rows x columns bytes of
 *               grey pixels (0 = background), or count label bytes 0..9
 * The file must end exactly after the last element. Images become 1-channel
 * PNGs; labels are named zero .. nine. The validation split is carved from
 * the training images (opts valid_frac, seeded).
 */
#include "import.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MNIST_VALID_STREAM 0x76616c6964ull /* "valid" */

struct idx {
    char path[DS_PATH_MAX];
    uint8_t *buf;
    size_t len;
    uint32_t dims[3];
    const uint8_t *data;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Finds "<src>/<set>-<kind>-<idx>" or "<src>/<set>-<kind>.<idx>" (both
 * spellings are in circulation). */
static int idx_path(const char *src, const char *set, const char *kind, const char *idx,
                    char out[DS_PATH_MAX], trn_err *err)
{
    struct stat st;
    int n = snprintf(out, DS_PATH_MAX, "%s/%s-%s-%s", src, set, kind, idx);
    if (n > 0 && n < DS_PATH_MAX && stat(out, &st) == 0) return 0;
    n = snprintf(out, DS_PATH_MAX, "%s/%s-%s.%s", src, set, kind, idx);
    if (n > 0 && n < DS_PATH_MAX && stat(out, &st) == 0) return 0;
    return trn_errf(err, "%s/%s-%s-%s: no such file (MNIST needs train-images-idx3-ubyte, "
                    "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, "
                    "uncompressed: gunzip the .gz files first)", src, set, kind, idx);
}

/* Reads and checks an idx file of d dimensions. */
static int idx_read(struct idx *x, int d, trn_err *err)
{
    if (trn_read_file(x->path, 1u << 30, (char **)&x->buf, &x->len, err) != 0) return -1;
    const uint8_t *b = x->buf;
    if (x->len < 4)
        return trn_errf(err, "%s: file ends at byte offset %zu inside the 4-byte idx magic", x->path, x->len);
    if (b[0] || b[1])
        return trn_errf(err, "%s: byte offset 0: expected two zero bytes of the idx magic, found "
                        "%02x %02x (gzip-compressed? gunzip it first)", x->path, b[0], b[1]);
    if (b[2] != 0x08)
        return trn_errf(err, "%s: byte offset 2: element type 0x%02x, only 0x08 (unsigned byte) is "
                        "supported", x->path, b[2]);
    if (b[3] != d)
        return trn_errf(err, "%s: byte offset 3: %d dimensions, expected %d (%s)", x->path, b[3], d,
                        d == 3 ? "an images file" : "a labels file");
    size_t head = 4 + 4 * (size_t)d;
    if (x->len < head)
        return trn_errf(err, "%s: file ends at byte offset %zu inside the dimension sizes (the header "
                        "is %zu bytes)", x->path, x->len, head);
    uint64_t n = 1;
    for (int i = 0; i < d; i++) {
        x->dims[i] = be32(b + 4 + 4 * i);
        if (x->dims[i] == 0 || (i > 0 && x->dims[i] > 4096))
            return trn_errf(err, "%s: byte offset %d: dimension %d is %u, out of range", x->path,
                            4 + 4 * i, i, x->dims[i]);
        n *= x->dims[i];
    }
    if (n > (uint64_t)x->len || head + n > x->len)
        return trn_errf(err, "%s: file ends at byte offset %zu, %llu bytes short of the %u %s that "
                        "the header declares (truncated file)", x->path, x->len,
                        (unsigned long long)(head + n - x->len), x->dims[0], d == 3 ? "images" : "labels");
    if (head + n < x->len)
        return trn_errf(err, "%s: byte offset %llu: %llu bytes after the last of the %u %s that the "
                        "header declares (corrupt file)", x->path, (unsigned long long)(head + n),
                        (unsigned long long)(x->len - head - n), x->dims[0], d == 3 ? "images" : "labels");
    x->data = b + head;
    return 0;
}

struct mnist_ctx {
    const struct idx *img[2];
    size_t first[2]; /* index of the first image of each file */
};

static int mnist_render(void *ctx, size_t i, ds_pixels *out, trn_err *err)
{
    const struct mnist_ctx *c = ctx;
    int f = i >= c->first[1];
    const struct idx *x = c->img[f];
    int rows = (int)x->dims[1], cols = (int)x->dims[2];
    if (ds_pixels_reserve(out, cols, rows, 1, err) != 0) return -1;
    memcpy(out->data, x->data + (i - c->first[f]) * (size_t)rows * cols, (size_t)rows * cols);
    return 0;
}

int ds_imp_mnist(const char *src, const ds_import_opts *o, ds_write_result *res, trn_err *err)
{
    static const char *const digits[] = {"zero", "one", "two", "three", "four",
                                         "five", "six", "seven", "eight", "nine"};
    char name[DS_LABEL_MAX + 1];
    if (ds_imp_name(o, "mnist", name, err) != 0) return -1;
    struct idx x[4]; /* train images, train labels, test images, test labels */
    memset(x, 0, sizeof x);
    int rc = idx_path(src, "train", "images", "idx3-ubyte", x[0].path, err);
    if (rc == 0) rc = idx_path(src, "train", "labels", "idx1-ubyte", x[1].path, err);
    if (rc == 0) rc = idx_path(src, "t10k", "images", "idx3-ubyte", x[2].path, err);
    if (rc == 0) rc = idx_path(src, "t10k", "labels", "idx1-ubyte", x[3].path, err);
    for (int k = 0; k < 4 && rc == 0; k++) rc = idx_read(&x[k], k % 2 ? 1 : 3, err);
    for (int k = 0; k < 4 && rc == 0; k += 2) {
        if (x[k].dims[0] != x[k + 1].dims[0])
            rc = trn_errf(err, "%s holds %u images but %s holds %u labels; they must agree", x[k].path,
                          x[k].dims[0], x[k + 1].path, x[k + 1].dims[0]);
        for (uint32_t i = 0; i < x[k + 1].dims[0] && rc == 0; i++)
            if (x[k + 1].data[i] > 9)
                rc = trn_errf(err, "%s: byte offset %u: label %u is out of range 0..9", x[k + 1].path,
                              8 + i, x[k + 1].data[i]);
    }
    if (rc == 0 && (x[0].dims[1] != x[2].dims[1] || x[0].dims[2] != x[2].dims[2]))
        rc = trn_errf(err, "%s has %ux%u images but %s has %ux%u; they must agree", x[0].path, x[0].dims[1],
                      x[0].dims[2], x[2].path, x[2].dims[1], x[2].dims[2]);
    ds_task task;
    memset(&task, 0, sizeof task);
    if (rc == 0) rc = ds_task_init(&task, "identity", 10, err);
    for (int k = 0; k < 10 && rc == 0; k++) rc = ds_task_set(&task, k, digits[k], err);
    size_t count = rc == 0 ? (size_t)x[0].dims[0] + x[2].dims[0] : 0;
    uint8_t *split = NULL;
    int32_t *cls = NULL;
    if (rc == 0) {
        split = malloc(count);
        cls = malloc(count * sizeof *cls);
        if (!split || !cls) rc = trn_errf(err, "out of memory for %zu images", count);
    }
    if (rc == 0) {
        for (size_t i = 0; i < count; i++) {
            int test = i >= x[0].dims[0];
            split[i] = (uint8_t)(test ? TRN_SPLIT_TEST : TRN_SPLIT_TRAIN);
            cls[i] = test ? x[3].data[i - x[0].dims[0]] : x[1].data[i];
        }
        rc = ds_imp_carve(split, count, TRN_SPLIT_TRAIN, TRN_SPLIT_VALID, o->valid_frac, o->seed,
                          MNIST_VALID_STREAM, err);
    }
    if (rc == 0) {
        struct mnist_ctx c = {{&x[0], &x[2]}, {0, x[0].dims[0]}};
        char info[256];
        snprintf(info, sizeof info, "generator = import mnist\nsource = %s\nvalid_frac = %g\n", src,
                 o->valid_frac);
        ds_set_spec spec = {
            .root = o->root, .name = name, .ntasks = 1, .tasks = &task, .count = count, .split = split,
            .cls = cls, .render = mnist_render, .ctx = &c, .threads = o->threads, .seed = o->seed,
            .contexts = o->contexts, .info = info,
        };
        rc = ds_set_write(&spec, res, err);
    }
    free(split);
    free(cls);
    ds_task_free(&task);
    for (int k = 0; k < 4; k++) free(x[k].buf);
    return rc;
}
