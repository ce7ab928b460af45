/*
 * context.c: (n,p) context streams for specialised models (MCDNN 4.1.2).
 *
 * A context (n, p) is a set of n classes that make up fraction p of what a
 * device sees. For each split of the set, the stream holds k_in images of
 * the n classes and k_out images of the other classes with
 * k_out / (k_in + k_out) = p rounded to whole images: all in-context images
 * are used when there are enough others (k_out = round(k_in (1-p) / p)),
 * else all others and k_in = round(k_out p / (1-p)). Images are drawn
 * without replacement and the stream is shuffled; the out-of-context images
 * are linked under other/ so that they carry the label "other" (the n+1-th
 * output of a specialised model).
 *
 * Generator streams: the class set of (n, r) comes from
 * fork(seed, CTX_CLASSES | n << 16 | r), the stream of (n, r, p-index,
 * split) from fork(seed, CTX_STREAM | n << 32 | r << 16 | pi << 8 | split).
 */
#include "ds.h"
#include "fsdir.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CTX_CLASSES (1ull << 61)
#define CTX_STREAM (1ull << 62)

void ds_context_defaults(ds_context_opts *o)
{
    static const int n[] = {7, 14, 21};
    static const double p[] = {0.6, 0.7, 0.8, 0.9, 0.95};
    memset(o, 0, sizeof *o);
    o->nn = 3;
    memcpy(o->n, n, sizeof n);
    o->np = 5;
    memcpy(o->p, p, sizeof p);
    o->per = 1;
    o->seed = 1;
}

int ds_context_check(const ds_context_opts *o, trn_err *err)
{
    if (o->nn < 1 || o->nn > DS_CONTEXT_MAX || o->np < 1 || o->np > DS_CONTEXT_MAX)
        return trn_errf(err, "contexts need 1..%d values of n and of p", DS_CONTEXT_MAX);
    for (int i = 0; i < o->nn; i++) {
        if (o->n[i] < 1 || o->n[i] > 65535) return trn_errf(err, "context n = %d is out of range 1..65535", o->n[i]);
        for (int j = 0; j < i; j++)
            if (o->n[j] == o->n[i]) return trn_errf(err, "context n = %d is given twice", o->n[i]);
    }
    for (int i = 0; i < o->np; i++) {
        if (!(o->p[i] > 0 && o->p[i] <= 1)) return trn_errf(err, "context p = %g is out of range (0, 1]", o->p[i]);
        for (int j = 0; j < i; j++)
            if (o->p[j] == o->p[i]) return trn_errf(err, "context p = %g is given twice", o->p[i]);
    }
    if (o->per < 1 || o->per > 100) return trn_errf(err, "class sets per n = %d is out of range 1..100", o->per);
    return 0;
}

int ds_context_parse_n(ds_context_opts *o, const char *csv, trn_err *err)
{
    int k = 0;
    for (const char *p = csv; *p;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < 1 || v > 65535 || (*end && *end != ','))
            return trn_errf(err, "bad list of n '%s': expected integers like 7,14,21", csv);
        if (k == DS_CONTEXT_MAX) return trn_errf(err, "too many values of n in '%s' (at most %d)", csv, DS_CONTEXT_MAX);
        o->n[k++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (!k) return trn_errf(err, "empty list of n");
    o->nn = k;
    return 0;
}

int ds_context_parse_p(ds_context_opts *o, const char *csv, trn_err *err)
{
    int k = 0;
    for (const char *p = csv; *p;) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || !(v > 0 && v <= 1) || (*end && *end != ','))
            return trn_errf(err, "bad list of p '%s': expected fractions in (0, 1] like 0.6,0.9", csv);
        if (k == DS_CONTEXT_MAX) return trn_errf(err, "too many values of p in '%s' (at most %d)", csv, DS_CONTEXT_MAX);
        o->p[k++] = v;
        p = *end ? end + 1 : end;
    }
    if (!k) return trn_errf(err, "empty list of p");
    o->np = k;
    return 0;
}

/* Where the context folders' paths lead: entries of the set are written as
 * `prefix` + entry (relative entries) when the contexts lie inside the set
 * folder, else as absolute paths under `absdir`. */
struct paths {
    int inside;
    char prefix[DS_PATH_MAX]; /* "../../" from a context folder to the set */
    char absdir[DS_PATH_MAX]; /* the set folder, absolute */
    char data_from_ctx[DS_PATH_MAX]; /* the .data file seen from a context folder */
    char data_from_out[DS_PATH_MAX]; /* ... and from the contexts folder */
};

/* The set being sampled. */
struct src {
    const trn_dataset *ds;
    const char *data_path;
};

static int plan_paths(const struct src *s, const char *out_dir, struct paths *pp, trn_err *err)
{
    memset(pp, 0, sizeof *pp);
    char dir[DS_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", s->data_path);
    char *ds = strrchr(dir, '/');
    if (!ds) strcpy(dir, ".");
    else if (ds == dir) dir[1] = '\0';
    else *ds = '\0';
    if (!realpath(dir, pp->absdir)) return trn_errf(err, "cannot resolve %s: %s", dir, strerror(errno));
    char parent[DS_PATH_MAX], outabs[DS_PATH_MAX];
    snprintf(parent, sizeof parent, "%s", out_dir);
    char *slash = strrchr(parent, '/');
    const char *base = slash ? slash + 1 : out_dir;
    if (slash == parent) strcpy(parent, "/");
    else if (slash) *slash = '\0';
    else strcpy(parent, ".");
    char rp[DS_PATH_MAX];
    if (!realpath(parent, rp)) return trn_errf(err, "cannot resolve %s: %s", parent, strerror(errno));
    if (snprintf(outabs, sizeof outabs, "%s/%s", rp, base) >= (int)sizeof outabs)
        return trn_errf(err, "path too long: %s", out_dir);
    size_t n = strlen(pp->absdir);
    if (!strncmp(outabs, pp->absdir, n) && outabs[n] == '/') {
        pp->inside = 1;
        int depth = 1; /* the context's own folder */
        for (const char *c = outabs + n; *c; c++) depth += *c == '/';
        for (int i = 0; i < depth; i++) strcat(pp->prefix, "../");
    }
    /* Recorded in the index files without the (temporary) folder names. */
    const char *data_base = strrchr(s->data_path, '/');
    data_base = data_base ? data_base + 1 : s->data_path;
    int n1, n2;
    if (pp->inside) {
        n1 = snprintf(pp->data_from_ctx, DS_PATH_MAX, "%s%s", pp->prefix, data_base);
        n2 = snprintf(pp->data_from_out, DS_PATH_MAX, "%s%s", pp->prefix + 3, data_base);
    } else {
        n1 = snprintf(pp->data_from_ctx, DS_PATH_MAX, "%.2000s/%.2000s", pp->absdir, data_base);
        n2 = snprintf(pp->data_from_out, DS_PATH_MAX, "%.2000s/%.2000s", pp->absdir, data_base);
    }
    if (n1 < 0 || n1 >= DS_PATH_MAX || n2 < 0 || n2 >= DS_PATH_MAX)
        return trn_errf(err, "path too long: %s", s->data_path);
    return 0;
}

/* The path of set entry `e` seen from a folder `extra` levels below a
 * context folder. */
static int entry_path(const struct paths *pp, const char *e, int extra, char *out, trn_err *err)
{
    int n;
    if (e[0] == '/') n = snprintf(out, DS_PATH_MAX, "%s", e);
    else if (pp->inside) {
        char up[64] = "";
        for (int i = 0; i < extra && i < 20; i++) strcat(up, "../");
        n = snprintf(out, DS_PATH_MAX, "%s%s%s", up, pp->prefix, e);
    } else n = snprintf(out, DS_PATH_MAX, "%s/%s", pp->absdir, e);
    if (n < 0 || n >= DS_PATH_MAX) return trn_errf(err, "path too long: %.100s", e);
    return 0;
}

static void shuffle(size_t *v, size_t n, trn_rng *g)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)trn_rng_below(g, i), t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Writes the context folder `dir` for class set `chosen` (n sorted class
 * indices) and fraction p. */
static int write_context(const struct src *s, const struct paths *pp, const char *dir, const char *id,
                         const int *chosen, int n, double p, int replica, const ds_context_opts *o,
                         int pi, trn_err *err)
{
    char path[DS_PATH_MAX], file[256], other[DS_PATH_MAX];
    if (mkdir(dir, 0755) != 0) return trn_errf(err, "cannot create %s: %s", dir, strerror(errno));
    if (ds_fs_join(other, dir, "other", err) != 0) return -1;
    if (mkdir(other, 0755) != 0) return trn_errf(err, "cannot create %s: %s", other, strerror(errno));

    int classes = trn_dataset_classes(s->ds);
    int *ctx_of = malloc((size_t)classes * sizeof *ctx_of); /* class -> output, -1: other */
    const char **labels = malloc(((size_t)n + 1) * sizeof *labels);
    size_t total = 0;
    for (int sp = 0; sp < TRN_SPLIT_COUNT; sp++) total += trn_dataset_count(s->ds, (trn_split)sp);
    size_t *in = malloc((total + 1) * sizeof *in), *out = malloc((total + 1) * sizeof *out);
    if (!ctx_of || !labels || !in || !out) {
        free(ctx_of);
        free(labels);
        free(in);
        free(out);
        return trn_errf(err, "out of memory");
    }
    for (int k = 0; k < classes; k++) ctx_of[k] = -1;
    for (int k = 0; k < n; k++) {
        ctx_of[chosen[k]] = k;
        labels[k] = trn_dataset_label(s->ds, chosen[k]);
    }
    labels[n] = "other";

    trn_rng master;
    trn_rng_seed(&master, o->seed);
    ds_buf info = {0};
    ds_buf_printf(&info, "# context %s of the set %s (datasets/, build/bin/dataset contexts)\n", id,
                  pp->data_from_ctx);
    ds_buf_printf(&info, "n = %d\np = %g\nreplica = %d\nseed = %llu\nclasses =", n, p, replica,
                  (unsigned long long)o->seed);
    for (int k = 0; k < n; k++) ds_buf_printf(&info, " %d", chosen[k]);
    ds_buf_printf(&info, "\n");
    ds_buf data = {0};
    ds_buf_printf(&data, "classes = %d\n", n + 1);

    int rc = 0;
    size_t links = 0;
    for (int sp = 0; sp < TRN_SPLIT_COUNT && rc == 0; sp++) {
        trn_split split = (trn_split)sp;
        size_t count = trn_dataset_count(s->ds, split);
        if (!count) continue;
        size_t nin = 0, nout = 0;
        for (size_t i = 0; i < count; i++) {
            if (ctx_of[trn_dataset_class(s->ds, split, i)] >= 0) in[nin++] = i;
            else out[nout++] = i;
        }
        size_t kin = nin, kout = 0;
        if (p < 1) {
            kout = (size_t)llround((double)kin * (1 - p) / p);
            if (kout > nout) {
                kout = nout;
                kin = (size_t)llround((double)kout * p / (1 - p));
                if (kin > nin) kin = nin;
            }
        }
        if (kin + kout == 0) continue;
        trn_rng g = trn_rng_fork(&master, CTX_STREAM | (uint64_t)n << 32 | (uint64_t)replica << 16 |
                                              (uint64_t)pi << 8 | (uint64_t)sp);
        /* Draw without replacement, keep list order within each part, then
         * interleave by a shuffle of the whole stream. */
        shuffle(in, nin, &g);
        shuffle(out, nout, &g);
        qsort(in, kin, sizeof *in, cmp_size);
        qsort(out, kout, sizeof *out, cmp_size);
        size_t m = kin + kout;
        size_t *order = malloc(m * sizeof *order);
        if (!order) {
            rc = trn_errf(err, "out of memory");
            break;
        }
        for (size_t i = 0; i < m; i++) order[i] = i;
        shuffle(order, m, &g);
        ds_buf list = {0};
        char entry[DS_PATH_MAX], target[DS_PATH_MAX], where[DS_PATH_MAX + 64];
        for (size_t q = 0; q < m && rc == 0; q++) {
            size_t o_i = order[q];
            if (o_i < kin) {
                rc = entry_path(pp, ds_set_entry(s->ds, s->data_path, split, in[o_i]), 0, entry, err);
            } else {
                const char *e = ds_set_entry(s->ds, s->data_path, split, out[o_i - kin]);
                const char *base = strrchr(e, '/');
                base = base ? base + 1 : e;
                rc = entry_path(pp, e, 1, target, err);
                /* Unique link names: the link number, then the image's own
                 * file name (tokens kept for people reading the lists). */
                if (rc == 0 && snprintf(entry, sizeof entry, "other/%06zu_%s", links++, base) >= (int)sizeof entry)
                    rc = trn_errf(err, "path too long: %s", base);
                if (rc == 0 && (ds_fs_join(path, dir, entry, err) != 0 || symlink(target, path) != 0))
                    rc = trn_errf(err, "cannot create the link %s: %s", path, strerror(errno));
            }
            if (rc != 0) break;
            snprintf(where, sizeof where, "context %s, %s stream", id, trn_split_name(sp));
            int want = o_i < kin ? ctx_of[trn_dataset_class(s->ds, split, in[o_i])] : n;
            int got = trn_label_match(entry, labels, n + 1, where, err);
            if (got < 0) rc = -1;
            else if (got != want)
                rc = trn_errf(err, "%s: %s would be read as '%s', not '%s'", where, entry, labels[got], labels[want]);
            ds_buf_printf(&list, "%s\n", entry);
        }
        free(order);
        snprintf(file, sizeof file, "%s.list", trn_split_name(sp));
        if (rc == 0 && (ds_fs_join(path, dir, file, err) != 0 || ds_buf_write(&list, path, err) != 0)) rc = -1;
        ds_buf_free(&list);
        ds_buf_printf(&data, "%s = %s\n", trn_split_name(sp), file);
        ds_buf_printf(&info, "%s = %zu in context, %zu other (of %zu and %zu)\n", trn_split_name(sp), kin, kout,
                      nin, nout);
    }
    if (rc == 0) {
        ds_buf names = {0};
        for (int k = 0; k <= n; k++) ds_buf_printf(&names, "%s\n", labels[k]);
        snprintf(file, sizeof file, "%s.names", id);
        if (ds_fs_join(path, dir, file, err) != 0 || ds_buf_write(&names, path, err) != 0) rc = -1;
        ds_buf_free(&names);
        ds_buf_printf(&data, "labels = %s\nnames = %s\ntop = %d\n", file, file, n + 1 > 5 ? 5 : 1);
    }
    snprintf(file, sizeof file, "%s.data", id);
    if (rc == 0 && (ds_fs_join(path, dir, file, err) != 0 || ds_buf_write(&data, path, err) != 0)) rc = -1;
    snprintf(file, sizeof file, "%s.context", id);
    if (rc == 0 && (ds_fs_join(path, dir, file, err) != 0 || ds_buf_write(&info, path, err) != 0)) rc = -1;
    ds_buf_free(&data);
    ds_buf_free(&info);
    free(ctx_of);
    free(labels);
    free(in);
    free(out);
    return rc;
}

int ds_contexts_write(const char *data_path, const char *out_dir, const ds_context_opts *o,
                      ds_context_result *res, trn_err *err)
{
    memset(res, 0, sizeof *res);
    if (ds_context_check(o, err) != 0) return -1;
    trn_dataset *ds = trn_dataset_open(data_path, err);
    if (!ds) return -1;
    struct src s = {ds, data_path};
    int classes = trn_dataset_classes(ds), rc = 0;
    for (int k = 0; k < classes; k++)
        if (!strcmp(trn_dataset_label(ds, k), "other")) {
            trn_dataset_close(ds);
            return trn_errf(err, "%s: a class is already labelled 'other', the label contexts give "
                            "to out-of-context images; rename that class", data_path);
        }
    char tmp[DS_PATH_MAX], dir[DS_PATH_MAX];
    struct paths pp;
    if (ds_fs_make_tmp(out_dir, tmp, err) != 0) {
        trn_dataset_close(ds);
        return -1;
    }
    rc = plan_paths(&s, out_dir, &pp, err);
    int *perm = malloc((size_t)classes * sizeof *perm);
    if (!perm && rc == 0) rc = trn_errf(err, "out of memory");
    ds_buf index = {0};
    if (rc == 0) ds_buf_printf(&index, "# id n p data-file ((n,p) contexts of the set %s)\n", pp.data_from_out);
    trn_rng master;
    trn_rng_seed(&master, o->seed);
    /* Given classes: one class set, n = their count. */
    int given = 0;
    if (rc == 0 && o->classes) {
        const char *c = o->classes;
        while (rc == 0 && *c) {
            size_t len = strcspn(c, ",");
            int k = 0;
            while (k < classes && (strlen(trn_dataset_label(ds, k)) != len ||
                                   strncmp(trn_dataset_label(ds, k), c, len)))
                k++;
            if (k == classes)
                rc = trn_errf(err, "--classes: '%.*s' is not a class of %s (its labels are in %s's "
                              "names file)", (int)len, c, data_path, data_path);
            for (int q = 0; rc == 0 && q < given; q++)
                if (perm[q] == k) rc = trn_errf(err, "--classes: '%.*s' is given twice", (int)len, c);
            if (rc == 0 && len == 0) rc = trn_errf(err, "--classes: an empty label");
            if (rc == 0) perm[given++] = k;
            c += len;
            if (*c) c++;
        }
        if (rc == 0 && (given < 1 || given >= classes))
            rc = trn_errf(err, "--classes: give 1..%d classes of %s (the others make up \"other\")",
                          classes - 1, data_path);
        if (rc == 0) qsort(perm, (size_t)given, sizeof *perm, cmp_int);
    }
    for (int ni = 0; ni < (given ? 1 : o->nn) && rc == 0; ni++) {
        int n = given ? given : o->n[ni];
        if (n >= classes) {
            res->skipped_n[res->nskipped++] = n;
            continue;
        }
        for (int r = 0; r < (given ? 1 : o->per) && rc == 0; r++) {
            trn_rng g = trn_rng_fork(&master, CTX_CLASSES | (uint64_t)n << 16 | (uint64_t)r);
            for (int k = 0; k < classes && !given; k++) perm[k] = k;
            for (int k = 0; k < n && !given; k++) { /* partial Fisher-Yates: the first n */
                int j = k + (int)trn_rng_below(&g, (uint64_t)(classes - k)), t = perm[k];
                perm[k] = perm[j];
                perm[j] = t;
            }
            qsort(perm, (size_t)n, sizeof *perm, cmp_int);
            for (int pi = 0; pi < o->np && rc == 0; pi++) {
                char id[64];
                if (r) snprintf(id, sizeof id, "n%d-p%g-r%d", n, o->p[pi], r);
                else snprintf(id, sizeof id, "n%d-p%g", n, o->p[pi]);
                if (ds_fs_join(dir, tmp, id, err) != 0) {
                    rc = -1;
                    break;
                }
                rc = write_context(&s, &pp, dir, id, perm, n, o->p[pi], r, o, pi, err);
                if (rc == 0) {
                    ds_buf_printf(&index, "%s %d %g %s/%s.data\n", id, n, o->p[pi], id, id);
                    res->written++;
                }
            }
        }
    }
    if (rc == 0 && (ds_fs_join(dir, tmp, "contexts.list", err) != 0 || ds_buf_write(&index, dir, err) != 0)) rc = -1;
    int unchanged;
    if (rc == 0) rc = ds_fs_publish(tmp, out_dir, &unchanged, err);
    if (rc != 0) {
        trn_err e2;
        ds_fs_rm_rf(tmp, &e2);
        trn_err_prefix(err, "writing the contexts of %s into %s", data_path, out_dir);
    }
    ds_buf_free(&index);
    free(perm);
    trn_dataset_close(ds);
    return rc;
}
