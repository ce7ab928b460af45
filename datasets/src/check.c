/*
 * check.c: what `dataset check` adds to reading a set with libtrn's
 * trn_dataset_open: the images exist, no image file is in two splits, and
 * (on request) every image decodes; and the image shape a network's input
 * should take (ds_set_shape).
 */
#include "ds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The folder part of data_path ("" for a bare file name), as
 * trn_dataset_open resolves against it. */
static size_t dir_len(const char *data_path)
{
    const char *slash = strrchr(data_path, '/');
    return slash ? (size_t)(slash - data_path) + (slash == data_path) : 0;
}

const char *ds_set_entry(const trn_dataset *ds, const char *data_path, trn_split s, size_t i)
{
    const char *p = trn_dataset_path(ds, s, i);
    size_t n = dir_len(data_path);
    if (n && !strncmp(p, data_path, n) && p[n] == '/') return p + n + 1;
    return p;
}

struct file_id {
    dev_t dev;
    ino_t ino;
    int split;
    size_t index;
};

static int cmp_id(const void *a, const void *b)
{
    const struct file_id *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    if (x->split != y->split) return x->split - y->split;
    return x->index < y->index ? -1 : x->index > y->index;
}

int ds_check_set(const trn_dataset *ds, const char *data_path, int decode, trn_err *err)
{
    size_t total = 0;
    for (int sp = 0; sp < TRN_SPLIT_COUNT; sp++) total += trn_dataset_count(ds, (trn_split)sp);
    struct file_id *ids = malloc((total ? total : 1) * sizeof *ids);
    if (!ids) return trn_errf(err, "%s: out of memory", data_path);
    size_t n = 0;
    ds_pixels px = {0};
    int rc = 0;
    for (int sp = 0; sp < TRN_SPLIT_COUNT && rc == 0; sp++) {
        for (size_t i = 0; i < trn_dataset_count(ds, (trn_split)sp) && rc == 0; i++) {
            const char *path = trn_dataset_path(ds, (trn_split)sp, i);
            struct stat st;
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
                rc = trn_errf(err, "%s: entry %zu of the %s list, %s: %s", data_path, i + 1,
                              trn_split_name((trn_split)sp), path,
                              errno == ENOENT ? "no such file" : "not a readable regular file");
                break;
            }
            ids[n++] = (struct file_id){st.st_dev, st.st_ino, sp, i};
            if (decode) {
                uint8_t *buf;
                size_t len;
                if (trn_read_file(path, (size_t)TRN_IMAGE_MAX_FILE, (char **)&buf, &len, err) != 0) {
                    rc = -1;
                    break;
                }
                rc = ds_image_decode(buf, len, path, 0, &px, err);
                free(buf);
            }
        }
    }
    ds_pixels_free(&px);
    if (rc == 0) {
        qsort(ids, n, sizeof *ids, cmp_id);
        for (size_t i = 1; i < n; i++) {
            const struct file_id *a = &ids[i - 1], *b = &ids[i];
            if (a->dev == b->dev && a->ino == b->ino && a->split != b->split) {
                rc = trn_errf(err,
                              "%s: the same image is in two splits: entry %zu of the %s list "
                              "(%s) and entry %zu of the %s list (%s); splits must share no image",
                              data_path, a->index + 1, trn_split_name((trn_split)a->split),
                              trn_dataset_path(ds, (trn_split)a->split, a->index), b->index + 1,
                              trn_split_name((trn_split)b->split),
                              trn_dataset_path(ds, (trn_split)b->split, b->index));
                break;
            }
        }
    }
    free(ids);
    return rc;
}

int ds_set_shape(const trn_dataset *ds, const char *data_path, int *w, int *h, int *c, trn_err *err)
{
    trn_split s = TRN_SPLIT_TRAIN;
    if (!trn_dataset_has(ds, s) || trn_dataset_count(ds, s) == 0)
        return trn_errf(err, "%s: the train split lists no image, so it has no image shape", data_path);
    const char *path = trn_dataset_path(ds, s, 0);
    uint8_t *buf;
    size_t len;
    if (trn_read_file(path, 1u << 30, (char **)&buf, &len, err) != 0) return -1;
    ds_pixels px = {0};
    int rc = ds_image_decode(buf, len, path, 0, &px, err);
    free(buf);
    if (rc == 0) *w = px.w, *h = px.h, *c = px.c;
    ds_pixels_free(&px);
    return rc;
}
