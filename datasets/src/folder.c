/*
 * folder.c: importer of image folder trees (the ImageNet / ImageFolder
 * layout), JPEG or PNG.
 *
 * Two layouts are recognised:
 *   SRC/<class>/<image>                      one folder per class; the
 *                                            validation and test splits are
 *                                            carved from it (valid_frac,
 *                                            test_frac of all images, seeded)
 *   SRC/train/<class>/<image>, SRC/valid/<class>/... (or val/), SRC/test/...
 *                                            splits given; a missing valid or
 *                                            test split is carved from train
 * Classes are the union of the class folder names, sorted; each becomes a
 * label (ds_label_from_name: '_' and spaces become '-'). Images are the
 * regular files named *.png, *.jpg or *.jpeg (any case) directly inside a
 * class folder, sorted by name; other files and hidden entries are ignored
 * and counted. Every image is checked and decoded (ds_image_decode: damage
 * is reported with its byte offset and nothing is written), converted to 3
 * channels, optionally resized to size x size, and written as PNG.
 */
#include "import.h"
#include "fsdir.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define FOLDER_VALID_STREAM 0x76616c6964ull /* "valid" */
#define FOLDER_TEST_STREAM 0x74657374ull    /* "test" */
#define FOLDER_MAX_FILE (256u << 20)

struct fimg {
    char *path;
    int cls;
    uint8_t split;
};

struct folder_ctx {
    struct fimg *img;
    size_t n, cap;
    int size;
    size_t ignored;
};

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int image_name(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

/* Adds the images of folder dir (class cls, split sp). */
static int add_images(struct folder_ctx *c, const char *dir, int cls, int sp, trn_err *err)
{
    size_t n;
    char **names = ds_fs_list(dir, &n, err);
    if (!names) return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char path[DS_PATH_MAX];
        struct stat st;
        if (names[i][0] == '.' || ds_fs_join(path, dir, names[i], err) != 0 || stat(path, &st) != 0 ||
            !S_ISREG(st.st_mode) || !image_name(names[i])) {
            c->ignored++;
            continue;
        }
        if (c->n == c->cap) {
            size_t cap = c->cap ? 2 * c->cap : 1024;
            struct fimg *v = realloc(c->img, cap * sizeof *v);
            if (!v) {
                rc = trn_errf(err, "out of memory listing %s", dir);
                break;
            }
            c->img = v;
            c->cap = cap;
        }
        if (!(c->img[c->n].path = strdup(path))) {
            rc = trn_errf(err, "out of memory listing %s", dir);
            break;
        }
        c->img[c->n].cls = cls;
        c->img[c->n].split = (uint8_t)sp;
        c->n++;
    }
    ds_fs_free_list(names, n);
    return rc;
}

static int folder_render(void *ctx, size_t i, ds_pixels *out, trn_err *err)
{
    const struct folder_ctx *c = ctx;
    const char *path = c->img[i].path;
    uint8_t *buf;
    size_t len;
    if (trn_read_file(path, FOLDER_MAX_FILE, (char **)&buf, &len, err) != 0) return -1;
    int rc;
    if (c->size) {
        ds_pixels full = {0};
        rc = ds_image_decode(buf, len, path, 3, &full, err);
        if (rc == 0) rc = ds_pixels_resize(&full, c->size, c->size, out, err);
        ds_pixels_free(&full);
    } else {
        rc = ds_image_decode(buf, len, path, 3, out, err);
    }
    free(buf);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ds_imp_folder(const char *src, const ds_import_opts *o, ds_write_result *res, trn_err *err)
{
    if (!is_dir(src)) return trn_errf(err, "%s: no such folder", src);
    char base[DS_PATH_MAX], name[DS_LABEL_MAX + 1];
    snprintf(base, sizeof base, "%s", src);
    for (size_t n = strlen(base); n > 1 && base[n - 1] == '/';) base[--n] = '\0';
    const char *b = strrchr(base, '/');
    if (ds_imp_name(o, b ? b + 1 : base, name, err) != 0) return -1;

    /* The split folders: SRC itself (class layout) or SRC/{train,valid|val,test}. */
    char split_dir[TRN_SPLIT_COUNT][DS_PATH_MAX] = {{0}};
    char p[DS_PATH_MAX];
    int layout_splits = ds_fs_join(p, src, "train", err) == 0 && is_dir(p);
    if (layout_splits) {
        strcpy(split_dir[TRN_SPLIT_TRAIN], p);
        char v1[DS_PATH_MAX], v2[DS_PATH_MAX];
        if (ds_fs_join(v1, src, "valid", err) != 0 || ds_fs_join(v2, src, "val", err) != 0) return -1;
        if (is_dir(v1) && is_dir(v2))
            return trn_errf(err, "%s has both valid/ and val/; keep one validation folder", src);
        if (is_dir(v1)) strcpy(split_dir[TRN_SPLIT_VALID], v1);
        if (is_dir(v2)) strcpy(split_dir[TRN_SPLIT_VALID], v2);
        if (ds_fs_join(p, src, "test", err) != 0) return -1;
        if (is_dir(p)) strcpy(split_dir[TRN_SPLIT_TEST], p);
    } else {
        snprintf(split_dir[TRN_SPLIT_TRAIN], DS_PATH_MAX, "%s", src);
    }

    /* Classes: the union of the class folder names. */
    char **classes = NULL;
    size_t nclasses = 0, cap = 0;
    int rc = 0;
    for (int sp = 0; sp < TRN_SPLIT_COUNT && rc == 0; sp++) {
        if (!split_dir[sp][0]) continue;
        size_t n;
        char **names = ds_fs_list(split_dir[sp], &n, err);
        if (!names) {
            rc = -1;
            break;
        }
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (names[i][0] == '.' || ds_fs_join(p, split_dir[sp], names[i], err) != 0 || !is_dir(p)) continue;
            int seen = 0;
            for (size_t k = 0; k < nclasses && !seen; k++) seen = !strcmp(classes[k], names[i]);
            if (seen) continue;
            if (nclasses == cap) {
                cap = cap ? 2 * cap : 64;
                char **v = realloc(classes, cap * sizeof *v);
                if (!v) {
                    rc = trn_errf(err, "out of memory");
                    break;
                }
                classes = v;
            }
            if (!(classes[nclasses] = strdup(names[i]))) rc = trn_errf(err, "out of memory");
            else nclasses++;
        }
        ds_fs_free_list(names, n);
    }
    if (rc == 0 && nclasses < 2)
        rc = trn_errf(err, "%s: found %zu class folder%s; a classification set needs at least 2 "
                      "(layout: %s/<class>/<image> or %s/train/<class>/<image>)", src, nclasses,
                      nclasses == 1 ? "" : "s", src, src);
    if (rc == 0) qsort(classes, nclasses, sizeof *classes, cmp_str);

    ds_task task;
    memset(&task, 0, sizeof task);
    if (rc == 0 && nclasses > 1000000) rc = trn_errf(err, "%s: too many classes (%zu)", src, nclasses);
    if (rc == 0) rc = ds_task_init(&task, "identity", (int)nclasses, err);
    for (size_t k = 0; k < nclasses && rc == 0; k++) {
        char label[DS_LABEL_MAX + 1];
        rc = ds_label_from_name(classes[k], label, err);
        for (size_t j = 0; j < k && rc == 0; j++)
            if (!strcmp(task.labels[j], label))
                rc = trn_errf(err, "%s: the class folders '%s' and '%s' both become the label '%s'; "
                              "rename one", src, classes[j], classes[k], label);
        if (rc == 0) rc = ds_task_set(&task, (int)k, label, err);
    }

    struct folder_ctx c = {.size = o->size};
    for (int sp = 0; sp < TRN_SPLIT_COUNT && rc == 0; sp++) {
        if (!split_dir[sp][0]) continue;
        for (size_t k = 0; k < nclasses && rc == 0; k++) {
            if (ds_fs_join(p, split_dir[sp], classes[k], err) != 0) rc = -1;
            else if (is_dir(p)) rc = add_images(&c, p, (int)k, sp, err);
        }
    }
    uint8_t *split = NULL;
    int32_t *cls = NULL;
    if (rc == 0 && c.n == 0) rc = trn_errf(err, "%s: no .png, .jpg or .jpeg image in the class folders", src);
    if (rc == 0) {
        split = malloc(c.n);
        cls = malloc(c.n * sizeof *cls);
        if (!split || !cls) rc = trn_errf(err, "out of memory for %zu images", c.n);
    }
    if (rc == 0) {
        for (size_t i = 0; i < c.n; i++) {
            split[i] = c.img[i].split;
            cls[i] = c.img[i].cls;
        }
        /* Fractions of the whole set: test first, then valid of what is left. */
        if (!split_dir[TRN_SPLIT_TEST][0])
            rc = ds_imp_carve(split, c.n, TRN_SPLIT_TRAIN, TRN_SPLIT_TEST, o->test_frac, o->seed,
                              FOLDER_TEST_STREAM, err);
        if (rc == 0 && !split_dir[TRN_SPLIT_VALID][0])
            rc = ds_imp_carve(split, c.n, TRN_SPLIT_TRAIN, TRN_SPLIT_VALID,
                              split_dir[TRN_SPLIT_TEST][0] ? o->valid_frac : o->valid_frac / (1 - o->test_frac),
                              o->seed, FOLDER_VALID_STREAM, err);
    }
    if (rc == 0) {
        char info[DS_PATH_MAX + 256];
        snprintf(info, sizeof info,
                 "generator = import folder\nsource = %s\nlayout = %s\nresize = %d\nvalid_frac = %g\n"
                 "test_frac = %g\nignored_files = %zu\n", src, layout_splits ? "splits" : "classes",
                 o->size, o->valid_frac, o->test_frac, c.ignored);
        ds_set_spec spec = {
            .root = o->root, .name = name, .ntasks = 1, .tasks = &task, .count = c.n, .split = split,
            .cls = cls, .render = folder_render, .ctx = &c, .threads = o->threads, .seed = o->seed,
            .contexts = o->contexts, .info = info,
        };
        rc = ds_set_write(&spec, res, err);
    }
    free(split);
    free(cls);
    for (size_t i = 0; i < c.n; i++) free(c.img[i].path);
    free(c.img);
    for (size_t k = 0; k < nclasses; k++) free(classes[k]);
    free(classes);
    ds_task_free(&task);
    return rc;
}
