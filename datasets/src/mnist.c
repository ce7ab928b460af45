/*
 * mnist.c: importer of MNIST and Fashion-MNIST idx files, plain or
 * gzip-compressed (as the sources and Debian's dataset-fashion-mnist ship
 * them: read through zlib in memory, no temporary copy).
 *
 * The folder holds train-images-idx3-ubyte, train-labels-idx1-ubyte,
 * t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (or the same names with
 * '.' before "idx", as some mirrors spell them; each optionally with .gz).
 * An idx file is big-endian:
 *   bytes 0-1   zero
 *   byte 2      element type, 0x08 = unsigned byte (the only one accepted)
 *   byte 3      number of dimensions d (3 for images, 1 for labels)
 *   bytes 4..   d sizes, 4 bytes each (images: count, rows, columns)
 *   then        the elements, row-major: count x rows x columns bytes of
 *               grey pixels (0 = background), or count label bytes 0..9
 * The file must end exactly after the last element. Images become 1-channel
 * PNGs. MNIST's labels are named zero .. nine; Fashion-MNIST's are its
 * classes, with two attribute tasks derived from them (category and
 * footwear, datasets/README.md). The validation split is carved from the
 * training images (opts valid_frac, seeded); test = the t10k images.
 * A gzip file that is damaged or cut short is refused with its byte offset
 * in the compressed file; offsets in idx messages of a .gz file count
 * decompressed bytes (the message says so).
 */
#include "import.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define MNIST_VALID_STREAM 0x76616c6964ull /* "valid" */
#define IDX_MAX_BYTES (1u << 30)

struct idx {
    char path[DS_PATH_MAX];
    int gz;             /* the file is gzip-compressed (offsets: decompressed) */
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
 * spellings are in circulation), each plain or with ".gz". */
static int idx_path(const char *src, const char *set, const char *kind, const char *idx,
                    char out[DS_PATH_MAX], trn_err *err)
{
    static const char *const forms[] = {"%s/%s-%s-%s", "%s/%s-%s.%s", "%s/%s-%s-%s.gz", "%s/%s-%s.%s.gz"};
    struct stat st;
    for (size_t k = 0; k < sizeof forms / sizeof *forms; k++) {
        int n = snprintf(out, DS_PATH_MAX, forms[k], src, set, kind, idx);
        if (n > 0 && n < DS_PATH_MAX && stat(out, &st) == 0) return 0;
    }
    return trn_errf(err, "%s/%s-%s-%s: no such file, nor with .gz (the set needs train-images-idx3-ubyte, "
                    "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, plain or "
                    "gzip-compressed)", src, set, kind, idx);
}

/* Decompresses the gzip file `in` (len bytes, read from path) into a new
 * buffer: every member of a multi-member file, refusing damage with its
 * byte offset in the compressed file. */
static int gz_inflate(const char *path, const uint8_t *in, size_t len, uint8_t **out, size_t *outlen,
                      trn_err *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return trn_errf(err, "%s: zlib: cannot start inflating", path);
    size_t cap = len * 4 + 4096, n = 0;
    uint8_t *b = malloc(cap);
    int rc = b ? 0 : trn_errf(err, "%s: out of memory", path);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    while (rc == 0) {
        if (n == cap) {
            if (cap >= IDX_MAX_BYTES) {
                rc = trn_errf(err, "%s: decompresses to more than %u bytes (not an idx file?)", path, IDX_MAX_BYTES);
                break;
            }
            cap = cap * 2 > IDX_MAX_BYTES ? IDX_MAX_BYTES : cap * 2;
            uint8_t *nb = realloc(b, cap);
            if (!nb) {
                rc = trn_errf(err, "%s: out of memory", path);
                break;
            }
            b = nb;
        }
        z.next_out = b + n;
        z.avail_out = (uInt)(cap - n);
        int zr = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
        size_t at = len - z.avail_in;
        if (zr == Z_STREAM_END) {
            if (z.avail_in == 0) break;
            if (z.avail_in < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
                rc = trn_errf(err, "%s: byte offset %zu: %u bytes after the end of the gzip stream "
                              "(corrupt file)", path, at, z.avail_in);
                break;
            }
            inflateReset(&z); /* another member follows */
        } else if (zr == Z_DATA_ERROR) {
            rc = trn_errf(err, "%s: byte offset %zu: gzip data is corrupt (zlib: %s); the file is "
                          "damaged: fetch or reinstall it", path, at, z.msg ? z.msg : "data error");
        } else if (zr == Z_MEM_ERROR) {
            rc = trn_errf(err, "%s: out of memory while inflating", path);
        } else if (z.avail_in == 0 && z.avail_out != 0) {
            rc = trn_errf(err, "%s: file ends at byte offset %zu inside the gzip stream, after %zu "
                          "decompressed bytes (truncated file): fetch or reinstall it", path, len, n);
        }
    }
    inflateEnd(&z);
    if (rc != 0) {
        free(b);
        return -1;
    }
    *out = b;
    *outlen = n;
    return 0;
}

/* Reads x->path (decompressing a gzip file, magic 1f 8b) into x->buf. */
static int idx_load(struct idx *x, trn_err *err)
{
    uint8_t *raw;
    size_t len;
    if (trn_read_file(x->path, IDX_MAX_BYTES, (char **)&raw, &len, err) != 0) return -1;
    if (len < 2 || raw[0] != 0x1f || raw[1] != 0x8b) {
        x->buf = raw;
        x->len = len;
        return 0;
    }
    x->gz = 1;
    int rc = gz_inflate(x->path, raw, len, &x->buf, &x->len, err);
    free(raw);
    return rc;
}

/* Reads and checks an idx file of d dimensions. */
static int idx_read(struct idx *x, int d, trn_err *err)
{
    if (idx_load(x, err) != 0) return -1;
    const uint8_t *b = x->buf;
    const char *at = x->gz ? "decompressed byte offset" : "byte offset";
    if (x->len < 4)
        return trn_errf(err, "%s: file ends at %s %zu inside the 4-byte idx magic", x->path, at, x->len);
    if (b[0] || b[1])
        return trn_errf(err, "%s: %s 0: expected two zero bytes of the idx magic, found %02x %02x (not "
                        "an idx file)", x->path, at, b[0], b[1]);
    if (b[2] != 0x08)
        return trn_errf(err, "%s: %s 2: element type 0x%02x, only 0x08 (unsigned byte) is supported",
                        x->path, at, b[2]);
    if (b[3] != d)
        return trn_errf(err, "%s: %s 3: %d dimensions, expected %d (%s)", x->path, at, b[3], d,
                        d == 3 ? "an images file" : "a labels file");
    size_t head = 4 + 4 * (size_t)d;
    if (x->len < head)
        return trn_errf(err, "%s: file ends at %s %zu inside the dimension sizes (the header is %zu "
                        "bytes)", x->path, at, x->len, head);
    uint64_t n = 1;
    for (int i = 0; i < d; i++) {
        x->dims[i] = be32(b + 4 + 4 * i);
        if (x->dims[i] == 0 || (i > 0 && x->dims[i] > 4096))
            return trn_errf(err, "%s: %s %d: dimension %d is %u, out of range", x->path, at, 4 + 4 * i, i,
                            x->dims[i]);
        n *= x->dims[i];
    }
    if (n > (uint64_t)x->len || head + n > x->len)
        return trn_errf(err, "%s: file ends at %s %zu, %llu bytes short of the %u %s that the header "
                        "declares (truncated file)", x->path, at, x->len,
                        (unsigned long long)(head + n - x->len), x->dims[0], d == 3 ? "images" : "labels");
    if (head + n < x->len)
        return trn_errf(err, "%s: %s %llu: %llu bytes after the last of the %u %s that the header "
                        "declares (corrupt file)", x->path, at, (unsigned long long)(head + n),
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

/* The label sets of one flavour: the identity's 10 names and, for each
 * further task, its labels and each identity class's label in it. */
struct mnist_flavour {
    const char *name;                 /* default set name */
    const char *const *identity;      /* [10] */
    int ntasks;                       /* 1 + attribute tasks */
    const char *task[DS_TASKS_MAX];   /* [1..ntasks) */
    int classes[DS_TASKS_MAX];
    const char *const *labels[DS_TASKS_MAX];
    const int *map[DS_TASKS_MAX];     /* identity class -> label index */
};

static const char *const digits[] = {"zero", "one", "two", "three", "four",
                                     "five", "six", "seven", "eight", "nine"};
/* Fashion-MNIST's classes, in its label order (0 T-shirt/top .. 9 Ankle
 * boot), and the attribute tasks a shared trunk can serve (datasets/README.md,
 * "Fashion-MNIST"): the garment's category, and footwear or not. */
static const char *const fashion[] = {"t-shirt-top", "trouser", "pullover", "dress", "coat",
                                      "sandal", "shirt", "sneaker", "bag", "ankle-boot"};
static const char *const fashion_category[] = {"top", "bottom", "dress", "outerwear", "footwear", "bag"};
static const int fashion_category_of[] = {0, 1, 0, 2, 3, 4, 0, 4, 5, 4};
static const char *const fashion_footwear[] = {"yes", "no"};
static const int fashion_footwear_of[] = {1, 1, 1, 1, 1, 0, 1, 0, 1, 0};

static const struct mnist_flavour flavours[2] = {
    {"mnist", digits, 1, {0}, {0}, {0}, {0}},
    {"fashion-mnist", fashion, 3, {NULL, "category", "footwear"}, {10, 6, 2},
     {NULL, fashion_category, fashion_footwear}, {NULL, fashion_category_of, fashion_footwear_of}},
};

static int flavour_tasks(const struct mnist_flavour *fl, ds_task *tasks, trn_err *err)
{
    int rc = ds_task_init(&tasks[0], "identity", 10, err);
    for (int k = 0; k < 10 && rc == 0; k++) rc = ds_task_set(&tasks[0], k, fl->identity[k], err);
    for (int t = 1; t < fl->ntasks && rc == 0; t++) {
        rc = ds_task_init(&tasks[t], fl->task[t], fl->classes[t], err);
        for (int k = 0; k < fl->classes[t] && rc == 0; k++) rc = ds_task_set(&tasks[t], k, fl->labels[t][k], err);
    }
    return rc;
}

/* Reads the four files and checks that they agree. */
static int mnist_read(const char *src, struct idx x[4], trn_err *err)
{
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
                rc = trn_errf(err, "%s: %s %u: label %u is out of range 0..9", x[k + 1].path,
                              x[k + 1].gz ? "decompressed byte offset" : "byte offset", 8 + i, x[k + 1].data[i]);
    }
    if (rc == 0 && (x[0].dims[1] != x[2].dims[1] || x[0].dims[2] != x[2].dims[2]))
        rc = trn_errf(err, "%s has %ux%u images but %s has %ux%u; they must agree", x[0].path, x[0].dims[1],
                      x[0].dims[2], x[2].path, x[2].dims[1], x[2].dims[2]);
    return rc;
}

int ds_imp_mnist(const char *src, int fashion_mnist, const ds_import_opts *o, ds_write_result *res,
                 trn_err *err)
{
    const struct mnist_flavour *fl = &flavours[fashion_mnist ? 1 : 0];
    char name[DS_LABEL_MAX + 1];
    if (ds_imp_name(o, fl->name, name, err) != 0) return -1;
    struct idx x[4]; /* train images, train labels, test images, test labels */
    memset(x, 0, sizeof x);
    ds_task tasks[DS_TASKS_MAX];
    memset(tasks, 0, sizeof tasks);
    int rc = mnist_read(src, x, err), nt = fl->ntasks;
    if (rc == 0) rc = flavour_tasks(fl, tasks, err);
    size_t count = rc == 0 ? (size_t)x[0].dims[0] + x[2].dims[0] : 0;
    uint8_t *split = NULL;
    int32_t *cls = NULL;
    if (rc == 0) {
        split = malloc(count);
        cls = malloc(count * (size_t)nt * sizeof *cls);
        if (!split || !cls) rc = trn_errf(err, "out of memory for %zu images", count);
    }
    if (rc == 0) {
        for (size_t i = 0; i < count; i++) {
            int test = i >= x[0].dims[0], k = test ? x[3].data[i - x[0].dims[0]] : x[1].data[i];
            split[i] = (uint8_t)(test ? TRN_SPLIT_TEST : TRN_SPLIT_TRAIN);
            cls[i * (size_t)nt] = k;
            for (int t = 1; t < nt; t++) cls[i * (size_t)nt + (size_t)t] = fl->map[t][k];
        }
        rc = ds_imp_carve(split, count, TRN_SPLIT_TRAIN, TRN_SPLIT_VALID, o->valid_frac, o->seed,
                          MNIST_VALID_STREAM, err);
    }
    if (rc == 0) {
        struct mnist_ctx c = {{&x[0], &x[2]}, {0, x[0].dims[0]}};
        char info[DS_PATH_MAX + 128];
        snprintf(info, sizeof info, "generator = import %s\nsource = %s\nvalid_frac = %g\n", fl->name, src,
                 o->valid_frac);
        ds_set_spec spec = {
            .root = o->root, .name = name, .ntasks = nt, .tasks = tasks, .count = count, .split = split,
            .cls = cls, .render = mnist_render, .ctx = &c, .threads = o->threads, .seed = o->seed,
            .contexts = o->contexts, .info = info,
        };
        rc = ds_set_write(&spec, res, err);
    }
    free(split);
    free(cls);
    for (int t = 0; t < nt; t++) ds_task_free(&tasks[t]);
    for (int k = 0; k < 4; k++) free(x[k].buf);
    return rc;
}
