/*
 * writer.c: writes a set in the Darknet classifier layout (see ds.h), with
 * worker threads rendering and encoding images, into a temporary folder
 * that is put in place only when complete.
 *
 * Image i of the spec is written as <split>/<i>_<label>_<label>...png, one
 * label per task in task order, i zero-padded to at least 6 digits; so the
 * label rule finds every task's label in the file name, and one list per
 * split serves every task. Before any pixel is drawn, every file name is
 * checked against every task with trn_label_match (an importer's label that
 * collides with another task's label is refused here).
 */
#include "ds.h"
#include "fsdir.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Generator streams for the list order (disjoint from image indices). */
#define WRITER_LIST_STREAM (1ull << 63)

struct writer {
    const ds_set_spec *spec;
    const char *dir; /* the temporary set folder */
    int width;       /* digits of the image number */
    atomic_size_t next;
    atomic_int stop;
    pthread_mutex_t lock;
    int failed;
    trn_err err;
};

/* The file name of image i (without folder); -1 if it does not fit. */
static int item_name(const ds_set_spec *s, int width, size_t i, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "%0*zu", width, i);
    for (int t = 0; t < s->ntasks && n < cap; t++)
        n += (size_t)snprintf(out + n, cap - n, "_%s", s->tasks[t].labels[s->cls[i * s->ntasks + t]]);
    if (n < cap) n += (size_t)snprintf(out + n, cap - n, ".png");
    return n < cap ? 0 : -1;
}

static void fail(struct writer *w, const trn_err *e)
{
    pthread_mutex_lock(&w->lock);
    if (!w->failed) {
        w->failed = 1;
        w->err = *e;
    }
    pthread_mutex_unlock(&w->lock);
    atomic_store(&w->stop, 1);
}

static void *worker(void *arg)
{
    struct writer *w = arg;
    const ds_set_spec *s = w->spec;
    ds_pixels px = {0};
    trn_err e;
    char name[1024], path[DS_PATH_MAX];
    while (!atomic_load(&w->stop)) {
        size_t i = atomic_fetch_add(&w->next, 1);
        if (i >= s->count) break;
        uint8_t *png = NULL;
        size_t len = 0;
        if (s->render(s->ctx, i, &px, &e) != 0 || ds_png_encode(&px, &png, &len, &e) != 0) {
            trn_err_prefix(&e, "image %zu", i);
            fail(w, &e);
            break;
        }
        item_name(s, w->width, i, name, sizeof name); /* checked before the threads start */
        int n = snprintf(path, sizeof path, "%s/%s/%s", w->dir, trn_split_name(s->split[i]), name);
        int rc = n > 0 && n < (int)sizeof path ? ds_fs_write(path, png, len, &e)
                                                : trn_errf(&e, "path too long: %s/%s", w->dir, name);
        free(png);
        if (rc != 0) {
            fail(w, &e);
            break;
        }
    }
    ds_pixels_free(&px);
    return NULL;
}

/* Checks the spec and every file name against the label rule. */
static int check_spec(const ds_set_spec *s, int width, trn_err *err)
{
    if (ds_label_check(s->name, err) != 0) return trn_err_prefix(err, "set name");
    if (s->ntasks < 1 || s->ntasks > DS_TASKS_MAX)
        return trn_errf(err, "set %s: %d tasks is out of range 1..%d", s->name, s->ntasks, DS_TASKS_MAX);
    if (s->count == 0) return trn_errf(err, "set %s has no image", s->name);
    if (s->threads < 1) return trn_errf(err, "set %s: threads must be >= 1", s->name);
    for (int t = 0; t < s->ntasks; t++) {
        if (ds_task_check(&s->tasks[t], err) != 0) return -1;
        for (int u = 0; u < t; u++)
            if (!strcmp(s->tasks[t].name, s->tasks[u].name))
                return trn_errf(err, "set %s: two tasks are named %s", s->name, s->tasks[t].name);
    }
    if (strcmp(s->tasks[0].name, "identity"))
        return trn_errf(err, "set %s: the first task must be 'identity', not '%s'", s->name, s->tasks[0].name);
    char name[1024], where[128];
    for (size_t i = 0; i < s->count; i++) {
        if (s->split[i] >= TRN_SPLIT_COUNT)
            return trn_errf(err, "set %s: image %zu has no valid split", s->name, i);
        for (int t = 0; t < s->ntasks; t++) {
            int32_t c = s->cls[i * s->ntasks + t];
            if (c < 0 || c >= s->tasks[t].classes)
                return trn_errf(err, "set %s: image %zu has class %d in task %s, out of range 0..%d",
                                s->name, i, c, s->tasks[t].name, s->tasks[t].classes - 1);
        }
        if (item_name(s, width, i, name, sizeof name) != 0)
            return trn_errf(err, "set %s: the file name of image %zu is over %zu bytes", s->name, i, sizeof name);
        snprintf(where, sizeof where, "set %s, image %zu", s->name, i);
        for (int t = 0; t < s->ntasks; t++) {
            int k = trn_label_match(name, (const char *const *)s->tasks[t].labels, s->tasks[t].classes,
                                   where, err);
            if (k < 0) return trn_err_prefix(err, "task %s (labels collide between tasks?)", s->tasks[t].name);
            if (k != s->cls[i * s->ntasks + t])
                return trn_errf(err, "%s: file name %s gives class %d in task %s, not %d", where, name,
                                k, s->tasks[t].name, s->cls[i * s->ntasks + t]);
        }
    }
    return 0;
}

/* <name>.data (identity) or <name>-<task>.data. */
static void task_file(const ds_set_spec *s, int t, const char *ext, char *out, size_t cap)
{
    if (t == 0) snprintf(out, cap, "%s.%s", s->name, ext);
    else snprintf(out, cap, "%s-%s.%s", s->name, s->tasks[t].name, ext);
}

static int write_text_files(const ds_set_spec *s, const char *dir, int width, size_t count[TRN_SPLIT_COUNT],
                            trn_err *err)
{
    char path[DS_PATH_MAX], name[1024], file[256];
    int rc = 0;

    /* Lists: the images of each split in a seeded order. */
    trn_rng master;
    trn_rng_seed(&master, s->seed);
    size_t *idx = malloc(s->count * sizeof *idx);
    if (!idx) return trn_errf(err, "out of memory");
    for (int sp = 0; sp < TRN_SPLIT_COUNT && rc == 0; sp++) {
        size_t n = 0;
        for (size_t i = 0; i < s->count; i++)
            if (s->split[i] == sp) idx[n++] = i;
        count[sp] = n;
        if (!n) continue;
        trn_rng g = trn_rng_fork(&master, WRITER_LIST_STREAM | (uint64_t)sp);
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = (size_t)trn_rng_below(&g, i + 1), tmp = idx[i];
            idx[i] = idx[j];
            idx[j] = tmp;
        }
        ds_buf b = {0};
        for (size_t i = 0; i < n; i++) {
            item_name(s, width, idx[i], name, sizeof name);
            ds_buf_printf(&b, "%s/%s\n", trn_split_name(sp), name);
        }
        snprintf(file, sizeof file, "%s.list", trn_split_name(sp));
        rc = ds_fs_join(path, dir, file, err) || ds_buf_write(&b, path, err) ? -1 : 0;
        ds_buf_free(&b);
    }
    free(idx);
    if (rc != 0) return -1;

    /* Per task: labels and the .data file. */
    ds_buf tasks = {0};
    ds_buf_printf(&tasks, "# task data-file (relative to this folder); the first is the identity task\n");
    for (int t = 0; t < s->ntasks && rc == 0; t++) {
        const ds_task *tk = &s->tasks[t];
        ds_buf b = {0};
        for (int k = 0; k < tk->classes; k++) ds_buf_printf(&b, "%s\n", tk->labels[k]);
        char names[256];
        task_file(s, t, "names", names, sizeof names);
        rc = ds_fs_join(path, dir, names, err) || ds_buf_write(&b, path, err) ? -1 : 0;
        ds_buf_free(&b);
        if (rc != 0) break;
        ds_buf_printf(&b, "classes = %d\n", tk->classes);
        for (int sp = 0; sp < TRN_SPLIT_COUNT; sp++)
            if (count[sp]) ds_buf_printf(&b, "%s = %s.list\n", trn_split_name(sp), trn_split_name(sp));
        ds_buf_printf(&b, "labels = %s\nnames = %s\n", names, names);
        /* Outside the set folder, so that rebuilding the set never removes
         * what a trainer saved there. */
        ds_buf_printf(&b, "backup = ../backup/%s/\n", s->name);
        ds_buf_printf(&b, "top = %d\n", tk->classes > 5 ? 5 : 1);
        task_file(s, t, "data", file, sizeof file);
        rc = ds_fs_join(path, dir, file, err) || ds_buf_write(&b, path, err) ? -1 : 0;
        ds_buf_free(&b);
        ds_buf_printf(&tasks, "%s %s\n", tk->name, file);
    }
    if (rc == 0) {
        snprintf(file, sizeof file, "%s.tasks", s->name);
        rc = ds_fs_join(path, dir, file, err) || ds_buf_write(&tasks, path, err) ? -1 : 0;
    }
    ds_buf_free(&tasks);
    if (rc != 0) return -1;

    ds_buf b = {0};
    ds_buf_printf(&b, "# how this set was made (datasets/, build/bin/dataset)\nname = %s\n", s->name);
    ds_buf_printf(&b, "images = %zu\n", s->count);
    for (int sp = 0; sp < TRN_SPLIT_COUNT; sp++) ds_buf_printf(&b, "%s = %zu\n", trn_split_name(sp), count[sp]);
    ds_buf_printf(&b, "tasks =");
    for (int t = 0; t < s->ntasks; t++) ds_buf_printf(&b, " %s", s->tasks[t].name);
    ds_buf_printf(&b, "\nlist_seed = %llu\n%s", (unsigned long long)s->seed, s->info ? s->info : "");
    snprintf(file, sizeof file, "%s.info", s->name);
    rc = ds_fs_join(path, dir, file, err) || ds_buf_write(&b, path, err) ? -1 : 0;
    ds_buf_free(&b);
    return rc;
}

int ds_set_write(const ds_set_spec *s, ds_write_result *res, trn_err *err)
{
    memset(res, 0, sizeof *res);
    int width = 6;
    for (size_t c = s->count; c >= 1000000; c /= 10) width++;
    if (check_spec(s, width, err) != 0) return -1;

    char dst[DS_PATH_MAX], tmp[DS_PATH_MAX], path[DS_PATH_MAX];
    if (ds_fs_join(dst, s->root, s->name, err) != 0) return -1;
    if (snprintf(res->data_path, sizeof res->data_path, "%s/%s.data", dst, s->name) >= DS_PATH_MAX)
        return trn_errf(err, "path too long: %s", dst);
    if (ds_fs_make_tmp(dst, tmp, err) != 0) return -1;

    int rc = 0;
    size_t used[TRN_SPLIT_COUNT] = {0};
    for (size_t i = 0; i < s->count; i++) used[s->split[i]]++;
    for (int sp = 0; sp < TRN_SPLIT_COUNT && rc == 0; sp++) {
        if (!used[sp]) continue; /* an empty split has no folder, list or key */
        rc = ds_fs_join(path, tmp, trn_split_name(sp), err);
        if (rc == 0 && mkdir(path, 0755) != 0) rc = trn_errf(err, "cannot create %s", path);
    }
    if (rc == 0) {
        struct writer w = {.spec = s, .dir = tmp, .width = width};
        atomic_init(&w.next, 0);
        atomic_init(&w.stop, 0);
        pthread_mutex_init(&w.lock, NULL);
        int nt = s->threads < 64 ? s->threads : 64;
        if ((size_t)nt > s->count) nt = (int)s->count;
        pthread_t th[64];
        int started = 0;
        for (; started < nt; started++)
            if (pthread_create(&th[started], NULL, worker, &w) != 0) break;
        if (started == 0) worker(&w); /* no thread could start: do it here */
        for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
        pthread_mutex_destroy(&w.lock);
        if (w.failed) {
            *err = w.err;
            rc = -1;
        }
    }
    if (rc == 0) rc = write_text_files(s, tmp, width, res->count, err);
    if (rc == 0 && s->contexts) {
        char data[DS_PATH_MAX], ctx[DS_PATH_MAX];
        if (snprintf(data, sizeof data, "%s/%s.data", tmp, s->name) >= DS_PATH_MAX ||
            ds_fs_join(ctx, tmp, "contexts", err) != 0)
            rc = trn_errf(err, "path too long: %s", tmp);
        else
            rc = ds_contexts_write(data, ctx, s->contexts, &res->contexts, err);
    }
    if (rc == 0) rc = ds_fs_publish(tmp, dst, &res->unchanged, err);
    if (rc != 0) {
        trn_err e2;
        ds_fs_rm_rf(tmp, &e2);
        return trn_err_prefix(err, "writing set %s into %s", s->name, dst);
    }
    return 0;
}
