/*
 * set.c: reading a Darknet classifier data set.
 *
 * The .data file is text, one "key = value" per line (spaces around the key
 * and value are ignored; lines starting with '#' or ';' and blank lines are
 * skipped; unknown keys are ignored, as Darknet does). Keys read here:
 *   classes  number of classes (required, must equal the labels file's count)
 *   train, valid, test   list files (at least one)
 *   labels   the file of matching labels, one per line; `names` (the display
 *            names) is used when `labels` is absent
 *   top      top-k reported by Darknet (default 1)
 * Relative paths, in the .data file and in the list files, are resolved
 * against the folder of the .data file. A list file has one image path per
 * line; blank lines are skipped. Each image's class comes from the label
 * rule (ds_label_match).
 */
#include "ds.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SET_TEXT_MAX (1u << 30) /* largest list or labels file read */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

int ds_set_resolve(const ds_set *s, const char *entry, char *out, trn_err *err)
{
    int n = entry[0] == '/' ? snprintf(out, DS_PATH_MAX, "%s", entry)
                            : snprintf(out, DS_PATH_MAX, "%s/%s", s->dir, entry);
    if (n < 0 || n >= DS_PATH_MAX) return trn_errf(err, "path too long: %s/%.100s...", s->dir, entry);
    return 0;
}

/* Splits a text buffer into lines in place; calls fn(line, lineno) for each
 * (the line without its '\n', '\r' trimmed). Stops at the first error. */
typedef int (*line_fn)(void *ctx, char *line, int lineno, trn_err *err);
static int for_lines(char *buf, line_fn fn, void *ctx, trn_err *err)
{
    int lineno = 0;
    for (char *p = buf; *p;) {
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        lineno++;
        if (fn(ctx, p, lineno, err) != 0) return -1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* ---- the .data file --------------------------------------------------- */

struct data_keys {
    const char *path;
    int classes, top, have_classes;
    char list[DS_SPLIT_COUNT][DS_PATH_MAX];
    char labels[DS_PATH_MAX], names[DS_PATH_MAX];
};

static int data_line(void *ctx, char *line, int lineno, trn_err *err)
{
    struct data_keys *k = ctx;
    char *s = trim(line);
    if (!*s || *s == '#' || *s == ';') return 0;
    char *eq = strchr(s, '=');
    if (!eq)
        return trn_errf(err, "%s:%d: expected 'key = value', got '%.80s'", k->path, lineno, s);
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    char *dst = NULL;
    for (int sp = 0; sp < DS_SPLIT_COUNT; sp++)
        if (!strcmp(key, ds_split_name(sp))) dst = k->list[sp];
    if (!strcmp(key, "labels")) dst = k->labels;
    if (!strcmp(key, "names")) dst = k->names;
    if (dst) {
        if (!*val) return trn_errf(err, "%s:%d: '%s' has no value", k->path, lineno, key);
        if (strlen(val) >= DS_PATH_MAX)
            return trn_errf(err, "%s:%d: the value of '%s' is too long", k->path, lineno, key);
        strcpy(dst, val);
        return 0;
    }
    if (!strcmp(key, "classes") || !strcmp(key, "top")) {
        char *end;
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno || end == val || *end || v < 1 || v > 1000000)
            return trn_errf(err, "%s:%d: '%s' must be an integer in 1..1000000, got '%s'",
                            k->path, lineno, key, val);
        if (key[0] == 'c') {
            k->classes = (int)v;
            k->have_classes = 1;
        } else {
            k->top = (int)v;
        }
    }
    return 0;
}

/* ---- the labels file --------------------------------------------------- */

struct labels_ctx {
    const char *path;
    ds_task *t;
    int n, blank_at;
};

static int labels_line(void *ctx, char *line, int lineno, trn_err *err)
{
    struct labels_ctx *c = ctx;
    char *s = trim(line);
    if (!*s) {
        if (!c->blank_at) c->blank_at = lineno;
        return 0;
    }
    if (c->blank_at)
        return trn_errf(err, "%s:%d: blank line between labels; remove it", c->path, c->blank_at);
    if (c->n >= c->t->classes)
        return trn_errf(err, "%s:%d: more labels than the %d classes the .data file declares",
                        c->path, lineno, c->t->classes);
    /* Labels read from users' sets may be folder names with '_' (matched by
     * parent folder only); only what can never match is refused. */
    if (strchr(s, '/') || strlen(s) > 255)
        return trn_errf(err, "%s:%d: '%.80s' cannot be a label (a '/' or over 255 bytes)",
                        c->path, lineno, s);
    char *dup = strdup(s);
    if (!dup) return trn_errf(err, "%s: out of memory", c->path);
    c->t->labels[c->n++] = dup;
    return 0;
}

/* ---- list files -------------------------------------------------------- */

struct list_ctx {
    const char *path;
    ds_set *s;
    int split;
    size_t cap;
};

static int list_line(void *ctx, char *line, int lineno, trn_err *err)
{
    struct list_ctx *c = ctx;
    ds_set *s = c->s;
    char *p = trim(line);
    if (!*p) return 0;
    char where[DS_PATH_MAX + 16];
    snprintf(where, sizeof where, "%s:%d", c->path, lineno);
    int k = ds_label_match(p, (const char *const *)s->labels.labels, s->labels.classes, where, err);
    if (k < 0) return -1;
    size_t n = s->count[c->split];
    if (n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 1024;
        char **np = realloc(s->path[c->split], cap * sizeof *np);
        if (!np) return trn_errf(err, "%s: out of memory", c->path);
        s->path[c->split] = np;
        int *nc = realloc(s->cls[c->split], cap * sizeof *nc);
        if (!nc) return trn_errf(err, "%s: out of memory", c->path);
        s->cls[c->split] = nc;
        c->cap = cap;
    }
    if (!(s->path[c->split][n] = strdup(p))) return trn_errf(err, "%s: out of memory", c->path);
    s->cls[c->split][n] = k;
    s->count[c->split] = n + 1;
    return 0;
}

static int read_text(const char *path, char **buf, trn_err *err)
{
    size_t len;
    if (trn_read_file(path, SET_TEXT_MAX, buf, &len, err) != 0) return -1;
    if (memchr(*buf, '\0', len)) {
        size_t off = (size_t)((char *)memchr(*buf, '\0', len) - *buf);
        free(*buf);
        *buf = NULL;
        return trn_errf(err, "%s: a NUL byte at byte offset %zu; this is not a text file", path, off);
    }
    return 0;
}

int ds_set_load(const char *data_path, ds_set *s, trn_err *err)
{
    memset(s, 0, sizeof *s);
    if (strlen(data_path) >= DS_PATH_MAX) return trn_errf(err, "path too long: %.100s...", data_path);
    strcpy(s->data_path, data_path);
    const char *slash = strrchr(data_path, '/');
    if (slash)
        snprintf(s->dir, sizeof s->dir, "%.*s", (int)(slash - data_path + (slash == data_path)),
                 data_path);
    else
        strcpy(s->dir, ".");

    char *text = NULL;
    if (read_text(data_path, &text, err) != 0) return -1;
    struct data_keys k;
    memset(&k, 0, sizeof k);
    k.path = data_path;
    k.top = 1;
    int rc = for_lines(text, data_line, &k, err);
    free(text);
    if (rc != 0) return -1;
    if (!k.have_classes)
        return trn_errf(err, "%s: no 'classes' key; add 'classes = N'", data_path);
    const char *lab = k.labels[0] ? k.labels : k.names;
    if (!lab[0]) return trn_errf(err, "%s: no 'labels' (or 'names') key naming the labels file", data_path);
    int any = 0;
    for (int sp = 0; sp < DS_SPLIT_COUNT; sp++) any |= k.list[sp][0] != 0;
    if (!any) return trn_errf(err, "%s: no list file: add 'train = ...' (and valid, test)", data_path);
    s->top = k.top;

    if (ds_task_init(&s->labels, "labels", k.classes, err) != 0) goto fail;
    char path[DS_PATH_MAX];
    if (ds_set_resolve(s, lab, path, err) != 0) goto fail;
    if (read_text(path, &text, err) != 0) goto fail;
    struct labels_ctx lc = {path, &s->labels, 0, 0};
    rc = for_lines(text, labels_line, &lc, err);
    free(text);
    if (rc != 0) goto fail;
    if (lc.n != k.classes) {
        trn_errf(err, "%s has %d labels but %s declares classes = %d; make them agree", path,
                 lc.n, data_path, k.classes);
        goto fail;
    }
    if (ds_task_check(&s->labels, err) != 0) {
        trn_err_prefix(err, "%s", path);
        goto fail;
    }

    for (int sp = 0; sp < DS_SPLIT_COUNT; sp++) {
        if (!k.list[sp][0]) continue;
        strcpy(s->list[sp], k.list[sp]);
        if (ds_set_resolve(s, k.list[sp], path, err) != 0) goto fail;
        if (read_text(path, &text, err) != 0) goto fail;
        struct list_ctx c = {path, s, sp, 0};
        rc = for_lines(text, list_line, &c, err);
        free(text);
        if (rc != 0) goto fail;
    }
    return 0;
fail:
    ds_set_free(s);
    return -1;
}

void ds_set_free(ds_set *s)
{
    if (!s) return;
    ds_task_free(&s->labels);
    for (int sp = 0; sp < DS_SPLIT_COUNT; sp++) {
        for (size_t i = 0; i < s->count[sp]; i++) free(s->path[sp][i]);
        free(s->path[sp]);
        free(s->cls[sp]);
        s->path[sp] = NULL;
        s->cls[sp] = NULL;
        s->count[sp] = 0;
    }
}

/* ---- checking ----------------------------------------------------------- */

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

int ds_set_check(const ds_set *s, int decode, trn_err *err)
{
    size_t total = 0;
    for (int sp = 0; sp < DS_SPLIT_COUNT; sp++) total += s->count[sp];
    struct file_id *ids = malloc((total ? total : 1) * sizeof *ids);
    if (!ids) return trn_errf(err, "%s: out of memory", s->data_path);
    size_t n = 0;
    ds_pixels px = {0};
    char path[DS_PATH_MAX];
    int rc = 0;
    for (int sp = 0; sp < DS_SPLIT_COUNT && rc == 0; sp++) {
        for (size_t i = 0; i < s->count[sp] && rc == 0; i++) {
            struct stat st;
            if (ds_set_resolve(s, s->path[sp][i], path, err) != 0) {
                rc = -1;
                break;
            }
            if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
                rc = trn_errf(err, "%s: entry %zu of the %s list, %s: %s", s->data_path, i + 1,
                              ds_split_name(sp), path,
                              errno == ENOENT ? "no such file" : "not a readable regular file");
                break;
            }
            ids[n++] = (struct file_id){st.st_dev, st.st_ino, sp, i};
            if (decode) {
                uint8_t *buf;
                size_t len;
                if (trn_read_file(path, 256u << 20, (char **)&buf, &len, err) != 0) {
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
            if (ids[i].dev == ids[i - 1].dev && ids[i].ino == ids[i - 1].ino &&
                ids[i].split != ids[i - 1].split) {
                const struct file_id *a = &ids[i - 1], *b = &ids[i];
                rc = trn_errf(err,
                              "%s: the same image is in two splits: entry %zu of the %s list "
                              "(%s) and entry %zu of the %s list (%s); splits must share no image",
                              s->data_path, a->index + 1, ds_split_name(a->split),
                              s->path[a->split][a->index], b->index + 1, ds_split_name(b->split),
                              s->path[b->split][b->index]);
                break;
            }
        }
    }
    free(ids);
    return rc;
}
