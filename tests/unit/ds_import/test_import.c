/* Unit tests of the importers (cifar.c, mnist.c, folder.c). Every source
 * file is built here, tiny, in its real format; corrupt and truncated
 * copies must be refused with the file and byte offset, leaving nothing
 * written. */
#include "testutil_impl.h"
#include "ds_testutil.h"
#include "fsdir.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stb/stb_image_write.h>
#include <zlib.h>

/* The pixel byte of record r, plane ch, pixel k in the CIFAR fixtures. */
static uint8_t cifar_px(size_t r, int ch, int k)
{
    return (uint8_t)(r * 31 + (size_t)ch * 101 + (size_t)k * 7);
}

/* Writes n CIFAR records to dir/name; labels per record from lab(). */
static void cifar_file(const char *dir, const char *name, size_t first, size_t n, int hundred)
{
    size_t rec = hundred ? 3074 : 3073;
    uint8_t *b = malloc(n * rec);
    assert_non_null(b);
    for (size_t r = 0; r < n; r++) {
        uint8_t *p = b + r * rec;
        size_t g = first + r;
        if (hundred) {
            p[0] = (uint8_t)(g % 20);
            p[1] = (uint8_t)(g % 100);
        } else {
            p[0] = (uint8_t)(g % 10);
        }
        for (int ch = 0; ch < 3; ch++)
            for (int k = 0; k < 1024; k++) p[(hundred ? 2 : 1) + ch * 1024 + k] = cifar_px(g, ch, k);
    }
    t_write(dir, name, b, n * rec);
    free(b);
}

static const char *cifar10_names = "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";

static void make_cifar10(char src[DS_PATH_MAX], const char *name)
{
    t_dir(src, name);
    for (int b = 0; b < 5; b++) {
        char f[32];
        TPATH(f, "data_batch_%d.bin", b + 1);
        cifar_file(src, f, (size_t)b * 6, 6, 0);
    }
    cifar_file(src, "test_batch.bin", 30, 10, 0);
    t_write_text(src, "batches.meta.txt", cifar10_names);
}

static size_t entries(const char *dir)
{
    size_t n;
    trn_err err;
    char **v = ds_fs_list(dir, &n, &err);
    if (!v) return 0;
    ds_fs_free_list(v, n);
    return n;
}

static ds_import_opts opts(const char *root)
{
    ds_import_opts o;
    ds_import_defaults(&o);
    o.root = root;
    o.threads = 2;
    o.valid_frac = 0.2;
    return o;
}

static void decode_file(const char *path, ds_pixels *px)
{
    uint8_t *buf;
    size_t len;
    trn_err err;
    if (trn_read_file(path, 0, (char **)&buf, &len, &err) != 0) fail_msg("%s", err.msg);
    if (ds_image_decode(buf, len, path, 0, px, &err) != 0) fail_msg("%s", err.msg);
    free(buf);
}

static void cifar10(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], root[DS_PATH_MAX];
    make_cifar10(src, "c10");
    t_dir(root, "c10out");
    ds_import_opts o = opts(root);
    ds_write_result res;
    if (ds_import(DS_FORMAT_CIFAR10, src, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res.count[TRN_SPLIT_TRAIN], 24);
    assert_int_equal(res.count[TRN_SPLIT_VALID], 6);
    assert_int_equal(res.count[TRN_SPLIT_TEST], 10);
    trn_dataset *s;
    if (!(s = trn_dataset_open(res.data_path, &err))) fail_msg("%s", err.msg);
    assert_int_equal(trn_dataset_classes(s), 10);
    assert_string_equal(trn_dataset_label(s, 9), "truck");
    assert_int_equal(ds_check_set(s, res.data_path, 1, &err), 0);
    /* Test image j is record 30 + j: its class and pixels survived. */
    int seen = 0;
    for (size_t i = 0; i < trn_dataset_count(s, TRN_SPLIT_TEST); i++) {
        char p[DS_PATH_MAX];
        TPATH(p, "%s", trn_dataset_path(s, TRN_SPLIT_TEST, i));
        size_t idx = (size_t)strtoul(strrchr(p, '/') + 1, NULL, 10);
        size_t g = idx; /* test records are the last ones: image number == record number */
        assert_int_equal(trn_dataset_class(s, TRN_SPLIT_TEST, i), (int)(g % 10));
        ds_pixels px = {0};
        decode_file(p, &px);
        assert_int_equal(px.w, 32);
        assert_int_equal(px.c, 3);
        for (int k = 0; k < 1024; k += 97)
            for (int ch = 0; ch < 3; ch++) assert_int_equal(px.data[k * 3 + ch], cifar_px(g, ch, k));
        ds_pixels_free(&px);
        seen++;
    }
    assert_int_equal(seen, 10);
    trn_dataset_close(s);

    /* Importing again gives the same set. */
    if (ds_import(DS_FORMAT_CIFAR10, src, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res.unchanged, 1);
}

static void cifar10_damage(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], root[DS_PATH_MAX];
    make_cifar10(src, "c10bad");
    t_dir(root, "c10badout");
    ds_import_opts o = opts(root);
    ds_write_result res;

    /* Truncated: batch 3 loses 100 bytes of its last record. */
    char p[DS_PATH_MAX];
    TPATH(p, "%s/data_batch_3.bin", src);
    assert_int_equal(truncate(p, 6 * 3073 - 100), 0);
    assert_int_equal(ds_import(DS_FORMAT_CIFAR10, src, &o, &res, &err), -1);
    char want[DS_PATH_MAX + 128];
    TPATH(want, "%s: file ends at byte offset %d inside record 5, which starts at byte offset %d", p,
          6 * 3073 - 100, 5 * 3073);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(entries(root), 0);

    /* A label out of range in record 2 of the test batch. */
    cifar_file(src, "data_batch_3.bin", 12, 6, 0);
    TPATH(p, "%s/test_batch.bin", src);
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, 2 * 3073, SEEK_SET), 0);
    assert_int_equal(fputc(57, f), 57);
    fclose(f);
    assert_int_equal(ds_import(DS_FORMAT_CIFAR10, src, &o, &res, &err), -1);
    TPATH(want, "%s: byte offset %d: label 57 of record 2 is out of range 0..9", p, 2 * 3073);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(entries(root), 0);

    /* A missing batch and a bad names file. */
    assert_int_equal(unlink(p), 0);
    assert_int_equal(ds_import(DS_FORMAT_CIFAR10, src, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "test_batch.bin"));
    t_write_text(src, "batches.meta.txt", "a\nb\n");
    assert_int_equal(ds_import(DS_FORMAT_CIFAR10, src, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "2 class names, expected 10"));
    assert_int_equal(entries(root), 0);
}

static void cifar100(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], root[DS_PATH_MAX];
    t_dir(src, "c100");
    t_dir(root, "c100out");
    cifar_file(src, "train.bin", 0, 120, 1);
    cifar_file(src, "test.bin", 120, 40, 1);
    /* Real CIFAR-100 names have '_'; they become '-'. */
    char fine[4096] = "", coarse[1024] = "";
    for (int k = 0, n = 0; k < 100; k++) {
        n += snprintf(fine + n, sizeof fine - (size_t)n, "fine_%d\n", k);
        assert_true(n < (int)sizeof fine);
    }
    for (int k = 0, n = 0; k < 20; k++) {
        n += snprintf(coarse + n, sizeof coarse - (size_t)n, "super class_%d\n", k);
        assert_true(n < (int)sizeof coarse);
    }
    t_write_text(src, "fine_label_names.txt", fine);
    t_write_text(src, "coarse_label_names.txt", coarse);
    ds_import_opts o = opts(root);
    o.name = "c100";
    ds_write_result res;
    if (ds_import(DS_FORMAT_CIFAR100, src, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    trn_dataset *s;
    if (!(s = trn_dataset_open(res.data_path, &err))) fail_msg("%s", err.msg);
    assert_int_equal(trn_dataset_classes(s), 100);
    assert_string_equal(trn_dataset_label(s, 42), "fine-42");
    assert_int_equal(trn_dataset_count(s, TRN_SPLIT_TEST), 40);
    trn_dataset_close(s);
    char p[DS_PATH_MAX];
    TPATH(p, "%s/c100/c100-coarse.data", root);
    if (!(s = trn_dataset_open(p, &err))) fail_msg("%s", err.msg);
    assert_int_equal(trn_dataset_classes(s), 20);
    assert_string_equal(trn_dataset_label(s, 3), "super-class-3");
    /* Coarse label of record g is g % 20; fine is g % 100. */
    for (size_t i = 0; i < trn_dataset_count(s, TRN_SPLIT_TEST); i++) {
        size_t g = (size_t)strtoul(strrchr(trn_dataset_path(s, TRN_SPLIT_TEST, i), '/') + 1, NULL, 10);
        assert_int_equal(trn_dataset_class(s, TRN_SPLIT_TEST, i), (int)(g % 20));
    }
    trn_dataset_close(s);

    /* A CIFAR-10 folder given as CIFAR-100: the record size does not fit. */
    char c10[DS_PATH_MAX];
    make_cifar10(c10, "c10as100");
    t_write_text(c10, "fine_label_names.txt", fine);
    t_write_text(c10, "coarse_label_names.txt", coarse);
    assert_int_equal(ds_import(DS_FORMAT_CIFAR100, c10, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "train.bin"));
}

/* An idx file: magic, dims, then data. */
static void idx_file(const char *dir, const char *name, int d, const uint32_t *dims, const uint8_t *data, size_t n)
{
    size_t head = 4 + 4 * (size_t)d;
    uint8_t *b = malloc(head + n);
    assert_non_null(b);
    b[0] = b[1] = 0;
    b[2] = 0x08;
    b[3] = (uint8_t)d;
    for (int i = 0; i < d; i++)
        for (int k = 0; k < 4; k++) b[4 + 4 * i + k] = (uint8_t)(dims[i] >> (24 - 8 * k));
    memcpy(b + head, data, n);
    t_write(dir, name, b, head + n);
    free(b);
}

static void make_mnist(char src[DS_PATH_MAX], const char *name, int ntrain, int ntest)
{
    t_dir(src, name);
    for (int t = 0; t < 2; t++) {
        int n = t ? ntest : ntrain;
        uint8_t *img = malloc((size_t)n * 28 * 28), *lab = malloc((size_t)n);
        for (int i = 0; i < n; i++) {
            lab[i] = (uint8_t)((i * 3 + t) % 10);
            for (int k = 0; k < 28 * 28; k++) img[(size_t)i * 784 + k] = (uint8_t)(k + i * 11);
        }
        uint32_t di[3] = {(uint32_t)n, 28, 28}, dl[1] = {(uint32_t)n};
        idx_file(src, t ? "t10k-images-idx3-ubyte" : "train-images-idx3-ubyte", 3, di, img, (size_t)n * 784);
        idx_file(src, t ? "t10k-labels.idx1-ubyte" : "train-labels-idx1-ubyte", 1, dl, lab, (size_t)n);
        free(img);
        free(lab);
    }
}

/* Imports make_mnist's folder src (30 training, 12 test images) in format
 * f under the fresh root `out`: 20% of the training images carved for
 * validation, test = the t10k file. */
static void import_mnist_like(ds_format f, const char *src, const char *out, char root[DS_PATH_MAX],
                              ds_write_result *res)
{
    trn_err err;
    t_dir(root, out);
    ds_import_opts o = opts(root);
    if (ds_import(f, src, &o, res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res->count[TRN_SPLIT_TRAIN], 24);
    assert_int_equal(res->count[TRN_SPLIT_VALID], 6);
    assert_int_equal(res->count[TRN_SPLIT_TEST], 12);
}

/* The PNG at path is make_mnist's test image j: 28 wide, 1 channel. */
static void check_mnist_png(const char *path, size_t j)
{
    char p[DS_PATH_MAX];
    TPATH(p, "%s", path);
    ds_pixels px = {0};
    decode_file(p, &px);
    assert_int_equal(px.c, 1);
    assert_int_equal(px.w, 28);
    assert_int_equal(px.data[100], (uint8_t)(100 + j * 11));
    ds_pixels_free(&px);
}

static void mnist(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], root[DS_PATH_MAX];
    make_mnist(src, "mn", 30, 12);
    ds_write_result res;
    import_mnist_like(DS_FORMAT_MNIST, src, "mnout", root, &res);
    trn_dataset *s;
    if (!(s = trn_dataset_open(res.data_path, &err))) fail_msg("%s", err.msg);
    assert_string_equal(trn_dataset_label(s, 7), "seven");
    for (size_t i = 0; i < trn_dataset_count(s, TRN_SPLIT_TEST); i++) {
        size_t j = (size_t)strtoul(strrchr(trn_dataset_path(s, TRN_SPLIT_TEST, i), '/') + 1, NULL, 10) - 30;
        assert_int_equal(trn_dataset_class(s, TRN_SPLIT_TEST, i), (int)((j * 3 + 1) % 10));
        check_mnist_png(trn_dataset_path(s, TRN_SPLIT_TEST, i), j);
    }
    trn_dataset_close(s);
}

static void mnist_damage(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], root[DS_PATH_MAX], p[DS_PATH_MAX], want[DS_PATH_MAX + 128];
    make_mnist(src, "mnbad", 10, 5);
    t_dir(root, "mnbadout");
    ds_import_opts o = opts(root);
    ds_write_result res;
    TPATH(p, "%s/train-images-idx3-ubyte", src);
    assert_int_equal(truncate(p, 16 + 9 * 784 + 5), 0);
    assert_int_equal(ds_import(DS_FORMAT_MNIST, src, &o, &res, &err), -1);
    TPATH(want, "%s: file ends at byte offset %d, 779 bytes short of the 10 images", p, 16 + 9 * 784 + 5);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(entries(root), 0);

    /* A gzip file (magic 1f 8b) is read through zlib: 4 bytes of it are a
     * gzip header cut short. */
    t_write(src, "train-images-idx3-ubyte", "\x1f\x8b\x08\x00", 4);
    assert_int_equal(ds_import(DS_FORMAT_MNIST, src, &o, &res, &err), -1);
    TPATH(want, "%s: file ends at byte offset 4 inside the gzip stream", p);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "truncated"));

    /* Counts that disagree, and a label out of range. */
    make_mnist(src, "mnbad", 10, 5);
    uint32_t dl[1] = {9};
    uint8_t lab[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    idx_file(src, "train-labels-idx1-ubyte", 1, dl, lab, 9);
    assert_int_equal(ds_import(DS_FORMAT_MNIST, src, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "10 images"));
    assert_non_null(strstr(err.msg, "9 labels"));
    dl[0] = 10;
    uint8_t lab10[10] = {1, 2, 3, 4, 5, 6, 7, 12, 9, 0};
    idx_file(src, "train-labels-idx1-ubyte", 1, dl, lab10, 10);
    assert_int_equal(ds_import(DS_FORMAT_MNIST, src, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "byte offset 15: label 12"));
    /* Trailing bytes. */
    uint8_t lab11[11] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0};
    idx_file(src, "train-labels-idx1-ubyte", 1, dl, lab11, 11);
    assert_int_equal(ds_import(DS_FORMAT_MNIST, src, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "byte offset 18: 1 bytes after the last"));
    assert_int_equal(entries(root), 0);
}

/* Compresses dir/name into dir/name.gz (zlib's gzip writer, as the
 * sources ship the idx files) and removes dir/name. */
static void gzip_file(const char *dir, const char *name)
{
    char p[DS_PATH_MAX], gz[DS_PATH_MAX];
    TPATH(p, "%s/%s", dir, name);
    TPATH(gz, "%s/%s.gz", dir, name);
    uint8_t *buf;
    size_t len;
    trn_err err;
    if (trn_read_file(p, 1u << 30, (char **)&buf, &len, &err) != 0) fail_msg("%s", err.msg);
    gzFile f = gzopen(gz, "wb9");
    assert_non_null(f);
    assert_int_equal(gzwrite(f, buf, (unsigned)len), (int)len);
    assert_int_equal(gzclose(f), Z_OK);
    assert_int_equal(unlink(p), 0);
    free(buf);
}

/* make_mnist's four files, gzip-compressed as Debian's
 * dataset-fashion-mnist ships them. */
static void make_fashion_gz(char src[DS_PATH_MAX], const char *name, int ntrain, int ntest)
{
    make_mnist(src, name, ntrain, ntest);
    gzip_file(src, "train-images-idx3-ubyte");
    gzip_file(src, "train-labels-idx1-ubyte");
    gzip_file(src, "t10k-images-idx3-ubyte");
    gzip_file(src, "t10k-labels.idx1-ubyte");
}

static void fashion_mnist_gz(void **state)
{
    (void)state;
    /* datasets/README.md's mapping, class by class (t-shirt-top .. ankle-boot). */
    static const char *const names[] = {"t-shirt-top", "trouser", "pullover", "dress", "coat",
                                        "sandal", "shirt", "sneaker", "bag", "ankle-boot"};
    static const char *const category[] = {"top", "bottom", "top", "dress", "outerwear",
                                           "footwear", "top", "footwear", "bag", "footwear"};
    static const char *const footwear[] = {"no", "no", "no", "no", "no", "yes", "no", "yes", "no", "yes"};
    trn_err err;
    char src[DS_PATH_MAX], root[DS_PATH_MAX], p[DS_PATH_MAX];
    make_fashion_gz(src, "fm", 30, 12);
    ds_write_result res;
    import_mnist_like(DS_FORMAT_FASHION_MNIST, src, "fmout", root, &res);
    TPATH(p, "%s/fashion-mnist/fashion-mnist.data", root);
    assert_string_equal(res.data_path, p);
    TPATH(p, "%s/fashion-mnist/fashion-mnist.tasks", root);
    char *tasks;
    size_t len;
    if (trn_read_file(p, 1u << 20, &tasks, &len, &err) != 0) fail_msg("%s", err.msg);
    assert_non_null(strstr(tasks, "\nidentity fashion-mnist.data\ncategory fashion-mnist-category.data\n"
                                  "footwear fashion-mnist-footwear.data\n"));
    free(tasks);
    trn_dataset *s;
    if (!(s = trn_dataset_open(res.data_path, &err))) fail_msg("%s", err.msg);
    for (int k = 0; k < 10; k++) assert_string_equal(trn_dataset_label(s, k), names[k]);
    int w = 0, h = 0, c = 0; /* the shape a network's input takes (ds_set_shape) */
    if (ds_set_shape(s, res.data_path, &w, &h, &c, &err) != 0) fail_msg("%s", err.msg);
    assert_true(w == 28 && h == 28 && c == 1);
    char cat[DS_PATH_MAX], foot[DS_PATH_MAX];
    TPATH(cat, "%s/fashion-mnist/fashion-mnist-category.data", root);
    TPATH(foot, "%s/fashion-mnist/fashion-mnist-footwear.data", root);
    trn_dataset *ct = trn_dataset_open(cat, &err), *ft = ct ? trn_dataset_open(foot, &err) : NULL;
    if (!ft) fail_msg("%s", err.msg);
    assert_int_equal(trn_dataset_count(ct, TRN_SPLIT_TEST), 12);
    for (size_t i = 0; i < trn_dataset_count(s, TRN_SPLIT_TEST); i++) {
        const char *path = trn_dataset_path(s, TRN_SPLIT_TEST, i);
        size_t j = (size_t)strtoul(strrchr(path, '/') + 1, NULL, 10) - 30;
        int k = (int)((j * 3 + 1) % 10); /* make_mnist's label of test image j */
        assert_int_equal(trn_dataset_class(s, TRN_SPLIT_TEST, i), k);
        /* One list serves every task: the same image at the same line. */
        assert_string_equal(trn_dataset_path(ct, TRN_SPLIT_TEST, i), path);
        assert_string_equal(trn_dataset_label(ct, trn_dataset_class(ct, TRN_SPLIT_TEST, i)), category[k]);
        assert_string_equal(trn_dataset_label(ft, trn_dataset_class(ft, TRN_SPLIT_TEST, i)), footwear[k]);
        check_mnist_png(path, j);
    }
    trn_dataset_close(ct);
    trn_dataset_close(ft);
    trn_dataset_close(s);
}

/* The byte offset that err names after "<file>: byte offset "; -1 if none. */
static long named_offset(const char *msg, const char *file)
{
    char want[DS_PATH_MAX + 32];
    TPATH(want, "%s: byte offset ", file);
    const char *at = strstr(msg, want);
    return at ? strtol(at + strlen(want), NULL, 10) : -1;
}

static void fashion_mnist_gz_damage(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], root[DS_PATH_MAX], p[DS_PATH_MAX], want[DS_PATH_MAX + 128];
    t_dir(root, "fmbadout");
    ds_import_opts o = opts(root);
    ds_write_result res;
    struct stat st;

    /* Cut short: the offset is where the file ends. */
    make_fashion_gz(src, "fmbad", 10, 5);
    TPATH(p, "%s/train-images-idx3-ubyte.gz", src);
    assert_int_equal(stat(p, &st), 0);
    off_t half = st.st_size / 2;
    assert_int_equal(truncate(p, half), 0);
    assert_int_equal(ds_import(DS_FORMAT_FASHION_MNIST, src, &o, &res, &err), -1);
    TPATH(want, "%s: file ends at byte offset %lld inside the gzip stream", p, (long long)half);
    assert_non_null(strstr(err.msg, want));
    assert_non_null(strstr(err.msg, "truncated"));
    assert_int_equal(entries(root), 0);

    /* Damaged in the middle: refused at an offset at or after the damage. */
    make_fashion_gz(src, "fmbad", 10, 5);
    assert_int_equal(stat(p, &st), 0);
    uint8_t *buf;
    size_t len;
    if (trn_read_file(p, 1u << 30, (char **)&buf, &len, &err) != 0) fail_msg("%s", err.msg);
    size_t at = len / 2;
    assert_true(at > 20 && at + 8 < len);
    memset(buf + at, 0xff, 8);
    t_write(src, "train-images-idx3-ubyte.gz", buf, len);
    free(buf);
    assert_int_equal(ds_import(DS_FORMAT_FASHION_MNIST, src, &o, &res, &err), -1);
    long off = named_offset(err.msg, p);
    if (off < (long)at || off > (long)len) fail_msg("offset %ld not in [%zu, %zu]: %s", off, at, len, err.msg);
    assert_non_null(strstr(err.msg, "corrupt"));
    assert_int_equal(entries(root), 0);

    /* Bytes after the gzip stream. */
    make_fashion_gz(src, "fmbad", 10, 5);
    TPATH(p, "%s/t10k-labels.idx1-ubyte.gz", src);
    assert_int_equal(stat(p, &st), 0);
    FILE *f = fopen(p, "ab");
    assert_non_null(f);
    fputs("junk", f);
    fclose(f);
    assert_int_equal(ds_import(DS_FORMAT_FASHION_MNIST, src, &o, &res, &err), -1);
    TPATH(want, "%s: byte offset %lld: 4 bytes after the end of the gzip stream", p, (long long)st.st_size);
    assert_non_null(strstr(err.msg, want));
    assert_int_equal(entries(root), 0);
}

/* Writes a w x h image of grey level v as PNG or JPEG. */
static void image_file(const char *dir, const char *name, int w, int h, int v, int jpeg)
{
    uint8_t *px = malloc((size_t)w * h * 3);
    memset(px, v, (size_t)w * h * 3);
    struct t_mem m = {NULL, 0};
    if (jpeg) assert_true(stbi_write_jpg_to_func(t_mem_put, &m, w, h, 3, px, 90) != 0);
    else assert_true(stbi_write_png_to_func(t_mem_put, &m, w, h, 3, px, w * 3) != 0);
    t_write(dir, name, m.p, m.n);
    free(m.p);
    free(px);
}

static void folder_classes(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], d[DS_PATH_MAX], root[DS_PATH_MAX];
    t_dir(src, "pets");
    static const char *const cls[] = {"cat", "dog", "guinea_pig"};
    for (int c = 0; c < 3; c++) {
        TPATH(d, "pets/%s", cls[c]);
        t_dir(d, d);
        for (int i = 0; i < 10; i++) {
            char f[32];
            TPATH(f, "img%02d.%s", i, i % 2 ? "JPG" : "png");
            image_file(d, f, 20 + i, 30, 40 * c, i % 2);
        }
        t_write_text(d, "notes.txt", "not an image");
    }
    t_dir(root, "petsout");
    ds_import_opts o = opts(root);
    o.size = 16;
    o.valid_frac = 0.2;
    o.test_frac = 0.1;
    ds_write_result res;
    if (ds_import(DS_FORMAT_FOLDER, src, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res.count[TRN_SPLIT_TEST], 3);
    assert_int_equal(res.count[TRN_SPLIT_VALID], 6);
    assert_int_equal(res.count[TRN_SPLIT_TRAIN], 21);
    trn_dataset *s;
    char p[DS_PATH_MAX];
    TPATH(p, "%s/pets/pets.data", root);
    if (!(s = trn_dataset_open(p, &err))) fail_msg("%s", err.msg);
    assert_string_equal(trn_dataset_label(s, 2), "guinea-pig");
    assert_int_equal(ds_check_set(s, p, 1, &err), 0);
    for (size_t i = 0; i < trn_dataset_count(s, TRN_SPLIT_TRAIN); i++) {
        TPATH(p, "%s", trn_dataset_path(s, TRN_SPLIT_TRAIN, i));
        ds_pixels px = {0};
        decode_file(p, &px);
        assert_int_equal(px.w, 16);
        assert_int_equal(px.h, 16);
        assert_true(abs(px.data[0] - 40 * trn_dataset_class(s, TRN_SPLIT_TRAIN, i)) <= 3);
        ds_pixels_free(&px);
    }
    trn_dataset_close(s);
    TPATH(p, "%s/pets/pets.info", root);
    char *text;
    size_t len;
    assert_int_equal(trn_read_file(p, 0, &text, &len, &err), 0);
    assert_non_null(strstr(text, "ignored_files = 3\n"));
    free(text);
}

static void folder_splits_and_damage(void **state)
{
    (void)state;
    trn_err err;
    char src[DS_PATH_MAX], d[DS_PATH_MAX], root[DS_PATH_MAX], p[DS_PATH_MAX];
    t_dir(src, "inet");
    static const char *const splits[] = {"train", "val"};
    for (int sp = 0; sp < 2; sp++)
        for (int c = 0; c < 2; c++) {
            TPATH(d, "inet/%s/n0%d", splits[sp], c);
            t_dir(d, d);
            for (int i = 0; i < (sp ? 2 : 8); i++) {
                char f[32];
                TPATH(f, "x_%d.jpeg", i);
                image_file(d, f, 8, 8, 100 + c, 1);
            }
        }
    t_dir(root, "inetout");
    ds_import_opts o = opts(root);
    o.test_frac = 0.25;
    ds_write_result res;
    if (ds_import(DS_FORMAT_FOLDER, src, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res.count[TRN_SPLIT_VALID], 4); /* val/ */
    assert_int_equal(res.count[TRN_SPLIT_TEST], 4);  /* carved from train */
    assert_int_equal(res.count[TRN_SPLIT_TRAIN], 12);

    /* One truncated JPEG: refused with its name and offset; the set that
     * was there stays as it was. */
    struct stat st1, st2;
    TPATH(p, "%s/inet/inet.data", root);
    assert_int_equal(stat(p, &st1), 0);
    TPATH(p, "%s/inet/train/n01/x_3.jpeg", test_tmpdir());
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(truncate(p, st.st_size / 2), 0);
    assert_int_equal(ds_import(DS_FORMAT_FOLDER, src, &o, &res, &err), -1);
    char want[DS_PATH_MAX + 64];
    TPATH(want, "%s: JPEG file ends at byte offset %ld", p, (long)(st.st_size / 2));
    assert_non_null(strstr(err.msg, want));
    TPATH(p, "%s/inet/inet.data", root);
    assert_int_equal(stat(p, &st2), 0);
    assert_true(st1.st_ino == st2.st_ino);
    assert_int_equal(entries(root), 1);

    /* Folder names that collide as labels. */
    TPATH(d, "inet/train/n0 1");
    t_dir(d, d);
    image_file(d, "a.png", 4, 4, 1, 0);
    TPATH(d, "inet/train/n0_1");
    t_dir(d, d);
    image_file(d, "a.png", 4, 4, 1, 0);
    assert_int_equal(ds_import(DS_FORMAT_FOLDER, src, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "both become the label 'n0-1'"));

    assert_int_equal(ds_import(DS_FORMAT_FOLDER, "/nonexistent/src", &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/src"));
    assert_int_equal(ds_format_parse("imagenet", &err), -1);
    assert_non_null(strstr(err.msg, "folder"));
    assert_int_equal(ds_format_parse("mnist", &err), DS_FORMAT_MNIST);
    assert_int_equal(ds_format_parse("fashion-mnist", &err), DS_FORMAT_FASHION_MNIST);
    assert_string_equal(ds_format_name(DS_FORMAT_FASHION_MNIST), "fashion-mnist");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cifar10),        cmocka_unit_test(cifar10_damage),
        cmocka_unit_test(cifar100),       cmocka_unit_test(mnist),
        cmocka_unit_test(mnist_damage),   cmocka_unit_test(folder_classes),
        cmocka_unit_test(folder_splits_and_damage), cmocka_unit_test(fashion_mnist_gz),
        cmocka_unit_test(fashion_mnist_gz_damage),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
