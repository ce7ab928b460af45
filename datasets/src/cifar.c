/*
 * cifar.c: importer of the CIFAR-10 and CIFAR-100 binary versions.
 *
 * CIFAR-10 (cifar-10-batches-bin/): data_batch_1.bin .. data_batch_5.bin
 * (training) and test_batch.bin, each a sequence of 3073-byte records:
 *   byte 0          label, 0..9
 *   bytes 1..3072   32x32 pixels as three planes (red 1024, green 1024,
 *                   blue 1024), each row-major
 * and batches.meta.txt, the 10 class names, one per line.
 *
 * CIFAR-100 (cifar-100-binary/): train.bin and test.bin, 3074-byte records:
 *   byte 0 coarse label 0..19, byte 1 fine label 0..99, then the 3072 pixel
 *   bytes as above; fine_label_names.txt (100 names) and
 *   coarse_label_names.txt (20 names).
 *
 * A file whose size is not a whole number of records, or that holds a label
 * out of range, is rejected with the byte offset. The validation split is
 * carved from the training images (opts valid_frac, seeded); CIFAR-100 gets
 * a second task, "coarse" (the 20 superclasses).
 */
#include "import.h"

#include <stdlib.h>
#include <string.h>

#define CIFAR_PIXELS 3072
#define CIFAR_VALID_STREAM 0x76616c6964ull /* "valid" */

struct cifar_file {
    char path[DS_PATH_MAX];
    uint8_t *buf;
    size_t len;
    int split;
};

struct cifar_ctx {
    const uint8_t **rec; /* [count] start of each record's pixels */
};

static int cifar_render(void *ctx, size_t i, ds_pixels *out, trn_err *err)
{
    const struct cifar_ctx *c = ctx;
    if (ds_pixels_reserve(out, 32, 32, 3, err) != 0) return -1;
    const uint8_t *p = c->rec[i];
    for (int k = 0; k < 1024; k++) /* planes (3, 32, 32) -> interleaved (32, 32, 3) */
        for (int ch = 0; ch < 3; ch++) out->data[k * 3 + ch] = p[ch * 1024 + k];
    return 0;
}

/* Checks a batch's framing and labels; returns its record count. */
static int cifar_check(const struct cifar_file *f, size_t rec, int nlabels, const int *max, size_t *n,
                       trn_err *err)
{
    if (f->len == 0) return trn_errf(err, "%s: empty file (no record)", f->path);
    if (f->len % rec) {
        size_t whole = f->len / rec;
        return trn_errf(err, "%s: file ends at byte offset %zu inside record %zu, which starts at "
                        "byte offset %zu and needs %zu more bytes (truncated or not a CIFAR "
                        "batch: records are %zu bytes)", f->path, f->len, whole, whole * rec,
                        (whole + 1) * rec - f->len, rec);
    }
    *n = f->len / rec;
    for (size_t r = 0; r < *n; r++)
        for (int l = 0; l < nlabels; l++) {
            uint8_t v = f->buf[r * rec + (size_t)l];
            if (v > max[l])
                return trn_errf(err, "%s: byte offset %zu: label %u of record %zu is out of range "
                                "0..%d (corrupt file, or a CIFAR-%s file given as CIFAR-%s?)",
                                f->path, r * rec + (size_t)l, v, r, max[l],
                                nlabels == 1 ? "100" : "10", nlabels == 1 ? "10" : "100");
        }
    return 0;
}

int ds_imp_cifar(const char *src, int hundred, const ds_import_opts *o, ds_write_result *res, trn_err *err)
{
    char name[DS_LABEL_MAX + 1];
    if (ds_imp_name(o, hundred ? "cifar100" : "cifar10", name, err) != 0) return -1;
    struct cifar_file files[6];
    int nfiles = 0;
    memset(files, 0, sizeof files);
    if (hundred) {
        snprintf(files[0].path, DS_PATH_MAX, "%s/train.bin", src);
        snprintf(files[1].path, DS_PATH_MAX, "%s/test.bin", src);
        files[1].split = TRN_SPLIT_TEST;
        nfiles = 2;
    } else {
        for (int b = 0; b < 5; b++) snprintf(files[b].path, DS_PATH_MAX, "%s/data_batch_%d.bin", src, b + 1);
        snprintf(files[5].path, DS_PATH_MAX, "%s/test_batch.bin", src);
        files[5].split = TRN_SPLIT_TEST;
        nfiles = 6;
    }
    const int nlabels = hundred ? 2 : 1, max10[] = {9}, max100[] = {19, 99};
    const size_t rec = (size_t)nlabels + CIFAR_PIXELS;
    ds_task tasks[2];
    memset(tasks, 0, sizeof tasks);
    int ntasks = hundred ? 2 : 1, rc = 0;
    char path[DS_PATH_MAX];
    if (hundred) {
        if (snprintf(path, sizeof path, "%s/fine_label_names.txt", src) >= (int)sizeof path ||
            ds_imp_read_names(path, "identity", 100, &tasks[0], err) != 0)
            return -1;
        if (snprintf(path, sizeof path, "%s/coarse_label_names.txt", src) >= (int)sizeof path ||
            ds_imp_read_names(path, "coarse", 20, &tasks[1], err) != 0) {
            ds_task_free(&tasks[0]);
            return -1;
        }
    } else if (snprintf(path, sizeof path, "%s/batches.meta.txt", src) >= (int)sizeof path ||
               ds_imp_read_names(path, "identity", 10, &tasks[0], err) != 0) {
        return -1;
    }

    size_t count = 0, nrec[6] = {0};
    for (int f = 0; f < nfiles && rc == 0; f++) {
        rc = trn_read_file(files[f].path, 1u << 30, (char **)&files[f].buf, &files[f].len, err);
        if (rc == 0) rc = cifar_check(&files[f], rec, nlabels, hundred ? max100 : max10, &nrec[f], err);
        count += nrec[f];
    }
    uint8_t *split = NULL;
    int32_t *cls = NULL;
    struct cifar_ctx c = {NULL};
    if (rc == 0) {
        split = malloc(count);
        cls = malloc(count * (size_t)ntasks * sizeof *cls);
        c.rec = malloc(count * sizeof *c.rec);
        if (!split || !cls || !c.rec) rc = trn_errf(err, "out of memory for %zu images", count);
    }
    if (rc == 0) {
        size_t i = 0;
        for (int f = 0; f < nfiles; f++)
            for (size_t r = 0; r < nrec[f]; r++, i++) {
                const uint8_t *p = files[f].buf + r * rec;
                split[i] = (uint8_t)files[f].split;
                if (hundred) {
                    cls[i * 2] = p[1];     /* fine: the identity task */
                    cls[i * 2 + 1] = p[0]; /* coarse */
                } else {
                    cls[i] = p[0];
                }
                c.rec[i] = p + nlabels;
            }
        rc = ds_imp_carve(split, count, TRN_SPLIT_TRAIN, TRN_SPLIT_VALID, o->valid_frac, o->seed,
                          CIFAR_VALID_STREAM, err);
    }
    if (rc == 0) {
        char info[256];
        snprintf(info, sizeof info, "generator = import %s\nsource = %s\nvalid_frac = %g\n",
                 hundred ? "cifar100" : "cifar10", src, o->valid_frac);
        ds_set_spec spec = {
            .root = o->root, .name = name, .ntasks = ntasks, .tasks = tasks, .count = count,
            .split = split, .cls = cls, .render = cifar_render, .ctx = &c, .threads = o->threads,
            .seed = o->seed, .contexts = o->contexts, .info = info,
        };
        rc = ds_set_write(&spec, res, err);
    }
    free(split);
    free(cls);
    free(c.rec);
    for (int f = 0; f < nfiles; f++) free(files[f].buf);
    for (int t = 0; t < ntasks; t++) ds_task_free(&tasks[t]);
    return rc;
}
