/*
 * dataset.c: Darknet classifier data sets (.data, list and labels files) and
 * the label rule.
 *
 * The .data file: text, one `key = value` per line; blank lines and lines
 * starting with '#' or ';' are ignored; spaces around key and value are
 * trimmed (Darknet strips every space, so a path with spaces breaks there;
 * here it works). Keys:
 *   classes  number of classes (required; must equal the number of labels)
 *   train, valid, test   list files of the three splits (each optional)
 *   labels   one label per line: the token that names the class in image
 *            paths (Darknet's classifier key)
 *   names    one display name per line (Darknet's predict key); when only
 *            one of labels / names is given it serves as both
 *   backup   folder for checkpoints
 *   top      the k of top-k accuracy (default 1)
 * Other keys are ignored, as Darknet does; a known key given twice, a line
 * without '=', or a bad number is an error naming file:line. Relative paths
 * (in the .data file and in list files) are resolved against the folder of
 * the .data file; absolute paths are kept.
 *
 * A list file: one image path per line; blank lines are skipped. A labels or
 * names file: one entry per line, trimmed; blank lines at the end of the file
 * are ignored, a blank line before another entry is an error (it would shift
 * every later class), and so is a label given twice.
 *
 * The label rule (never Darknet's substring search over the whole path, where
 * "cat" matches "concatenate/dog.png"): a label L matches an image path when
 * L equals the name of the image's parent folder as written in the list line
 * (a bare file name has none; "." and ".." are no names), or equals one of
 * the '_'-separated tokens of the file name without its extension. Exactly
 * one label must match; none or several is an error naming the list
 * file:line, the path and the candidates. Matching is case-sensitive.
 */
#include "data.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define DATA_MAX_BYTES (1L << 20)
#define NAMES_MAX_BYTES (64L << 20)
#define LIST_MAX_BYTES (1L << 30)
#define PATH_MAX_LEN 4095
#define CLASSES_MAX 1000000

struct trn_split_data {
    int present;
    char *list;   /* resolved path of the list file */
    size_t n;
    char **paths; /* resolved image paths */
    int *cls;
};

struct trn_dataset {
    char *path;
    int classes;
    char **labels;
    char **names;
    int top;
    char *backup;
    struct trn_split_data split[TRN_SPLIT_COUNT];
};

static const char *const split_names[] = {"train", "valid", "test"};
_Static_assert(sizeof split_names / sizeof split_names[0] == TRN_SPLIT_COUNT,
               "one name per split");

const char *trn_split_name(trn_split s)
{
    return (unsigned)s < TRN_SPLIT_COUNT ? split_names[s] : NULL;
}

int trn_split_parse(const char *name)
{
    for (int i = 0; i < TRN_SPLIT_COUNT; i++)
        if (name && strcmp(name, split_names[i]) == 0) return i;
    return -1;
}

/* ---- text lines ---------------------------------------------------------- */

/* Iterates over the lines of a NUL-terminated buffer of `len` bytes, in place:
 * each call returns the next line trimmed of surrounding white space (the
 * buffer is modified), or NULL at the end. *lineno counts from 1. A NUL byte
 * inside the text is reported through *nul. */
typedef struct line_iter {
    char *p, *end;
    int lineno;
} line_iter;

static char *next_line(line_iter *it, int *nul)
{
    *nul = 0;
    if (it->p >= it->end) return NULL;
    char *s = it->p;
    char *nl = memchr(s, '\n', (size_t)(it->end - s));
    char *e = nl ? nl : it->end;
    it->p = nl ? nl + 1 : it->end;
    it->lineno++;
    if (memchr(s, '\0', (size_t)(e - s))) *nul = 1;
    *e = '\0';
    while (e > s && isspace((unsigned char)e[-1])) *--e = '\0';
    while (*s && isspace((unsigned char)*s)) s++;
    return s;
}

/* ---- small helpers --------------------------------------------------------- */

static char *dup_str(const char *s, trn_err *err)
{
    char *d = strdup(s);
    if (!d) trn_errf(err, "out of memory");
    return d;
}

/* `rel` resolved against folder `dir` ("" for the current folder); a new
 * string. */
static char *resolve(const char *dir, const char *rel, const char *where, trn_err *err)
{
    size_t n = strlen(rel);
    if (rel[0] == '/' || !dir[0]) {
        if (n > PATH_MAX_LEN) {
            trn_errf(err, "%s: path longer than %d bytes", where, PATH_MAX_LEN);
            return NULL;
        }
        return dup_str(rel, err);
    }
    size_t d = strlen(dir);
    if (d + 1 + n > PATH_MAX_LEN) {
        trn_errf(err, "%s: path longer than %d bytes", where, PATH_MAX_LEN);
        return NULL;
    }
    char *p = malloc(d + n + 2);
    if (!p) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    memcpy(p, dir, d);
    p[d] = '/';
    memcpy(p + d + 1, rel, n + 1);
    return p;
}

/* A strictly parsed decimal integer in [lo, hi]. */
static int parse_int(const char *s, long lo, long hi, long *out)
{
    if (!*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static void free_strv(char **v, size_t n)
{
    if (!v) return;
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* ---- label lookup ---------------------------------------------------------- */

/* Labels by name: an open-addressing table of label indices (table NULL:
 * a linear scan, for one-off matches). */
typedef struct label_index {
    const char *const *labels;
    int n;
    int *table;
    size_t mask;
} label_index;

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static int index_find(const label_index *ix, const char *s, size_t len)
{
    if (!ix->table) {
        for (int i = 0; i < ix->n; i++)
            if (strlen(ix->labels[i]) == len && memcmp(ix->labels[i], s, len) == 0) return i;
        return -1;
    }
    for (size_t h = hash_bytes(s, len) & ix->mask;; h = (h + 1) & ix->mask) {
        int k = ix->table[h];
        if (k < 0) return -1;
        if (strlen(ix->labels[k]) == len && memcmp(ix->labels[k], s, len) == 0) return k;
    }
}

/* Builds the table; labels must be distinct (checked by the caller). */
static int index_build(label_index *ix, const char *const *labels, int n, trn_err *err)
{
    size_t size = 16;
    while (size < (size_t)n * 2) size *= 2;
    ix->labels = labels;
    ix->n = n;
    ix->mask = size - 1;
    ix->table = malloc(size * sizeof *ix->table);
    if (!ix->table) return trn_errf(err, "out of memory for %d labels", n);
    for (size_t i = 0; i < size; i++) ix->table[i] = -1;
    for (int k = 0; k < n; k++) {
        size_t h = hash_bytes(labels[k], strlen(labels[k])) & ix->mask;
        while (ix->table[h] >= 0) h = (h + 1) & ix->mask;
        ix->table[h] = k;
    }
    return 0;
}

/* Appends "'s'" (len bytes) to buf at *at, truncating politely. */
static void append(char *buf, size_t size, size_t *at, const char *fmt, const char *s, size_t len)
{
    if (*at >= size) return;
    int w = snprintf(buf + *at, size - *at, fmt, (int)len, s);
    if (w > 0) *at += (size_t)w;
    if (*at >= size) *at = size - 1;
}

#define MATCH_MAX 16

static int match_path(const label_index *ix, const char *path, const char *where, trn_err *err)
{
    const char *slash = strrchr(path, '/');
    const char *file = slash ? slash + 1 : path;
    /* Parent folder: the component before the file name, as written. */
    const char *parent = NULL;
    size_t plen = 0;
    if (slash) {
        const char *e = slash;
        while (e > path && e[-1] == '/') e--; /* "a//b.png" */
        const char *b = e;
        while (b > path && b[-1] != '/') b--;
        plen = (size_t)(e - b);
        parent = b;
        if (plen == 0 || (plen == 1 && b[0] == '.') || (plen == 2 && b[0] == '.' && b[1] == '.'))
            parent = NULL;
    }
    /* The file name without its extension (a leading dot is no extension). */
    const char *dot = strrchr(file, '.');
    size_t stem = dot && dot > file ? (size_t)(dot - file) : strlen(file);

    int found[MATCH_MAX], how[MATCH_MAX], nfound = 0, total = 0;
    if (parent) {
        int k = index_find(ix, parent, plen);
        if (k >= 0) {
            found[nfound] = k;
            how[nfound++] = 0;
            total++;
        }
    }
    for (size_t i = 0; i < stem;) {
        size_t j = i;
        while (j < stem && file[j] != '_') j++;
        if (j > i) {
            int k = index_find(ix, file + i, j - i);
            int dup = 0;
            for (int m = 0; m < nfound; m++) dup |= found[m] == k;
            if (k >= 0 && !dup) {
                total++;
                if (nfound < MATCH_MAX) {
                    found[nfound] = k;
                    how[nfound++] = 1;
                }
            }
        }
        i = j + 1;
    }
    if (total == 1) return found[0];

    char cand[700];
    size_t at = 0;
    cand[0] = '\0';
    if (total == 0) {
        if (parent) append(cand, sizeof cand, &at, "parent folder '%.*s', ", parent, plen);
        append(cand, sizeof cand, &at, "name tokens '%.*s'", file, stem);
        return trn_errf(err, "%s: %s: no label matches (checked %s split at '_'); name the "
                        "file or its folder after exactly one label", where, path, cand);
    }
    for (int m = 0; m < nfound; m++) {
        if (m) append(cand, sizeof cand, &at, "%.*s", ", ", 2);
        const char *l = ix->labels[found[m]];
        append(cand, sizeof cand, &at, "'%.*s'", l, strlen(l));
        append(cand, sizeof cand, &at, "%.*s", how[m] ? " (name token)" : " (parent folder)",
               how[m] ? 13 : 16);
    }
    if (total > nfound) append(cand, sizeof cand, &at, "%.*s", ", ...", 5);
    return trn_errf(err, "%s: %s: %d labels match: %s; exactly one may", where, path, total, cand);
}

int trn_label_match(const char *path, const char *const *labels, int n, const char *where,
                    trn_err *err)
{
    label_index ix = {labels, n, NULL, 0};
    return match_path(&ix, path, where ? where : "label", err);
}

/* ---- labels / names files --------------------------------------------------- */

/* Reads one entry per line into *out (count in *n). `from` is the .data
 * file:line that names the file. */
static int read_names(const char *path, const char *what, const char *from, char ***out, int *n,
                      trn_err *err)
{
    *out = NULL;
    *n = 0;
    char *buf;
    size_t len;
    if (trn_read_file(path, (size_t)NAMES_MAX_BYTES, &buf, &len, err) != 0)
        return trn_err_prefix(err, "%s: %s file", from, what);
    line_iter it = {buf, buf + len, 0};
    char **v = NULL;
    int count = 0, cap = 0, blank_line = 0, rc = -1, nul;
    char *s;
    while ((s = next_line(&it, &nul))) {
        if (nul) {
            trn_errf(err, "%s:%d: NUL byte in a text file (is this the %s file?)", path,
                     it.lineno, what);
            goto out;
        }
        if (!*s) {
            if (!blank_line) blank_line = it.lineno;
            continue;
        }
        if (blank_line) {
            trn_errf(err, "%s:%d: blank line between %s; remove it (it would shift every "
                     "later class)", path, blank_line, what);
            goto out;
        }
        if (count >= CLASSES_MAX) {
            trn_errf(err, "%s:%d: more than %d %s", path, it.lineno, CLASSES_MAX, what);
            goto out;
        }
        if (count == cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv) {
                trn_errf(err, "out of memory reading %s", path);
                goto out;
            }
            v = nv;
        }
        if (!(v[count] = dup_str(s, err))) goto out;
        count++;
    }
    if (count == 0) {
        trn_errf(err, "%s: no %s in the file", path, what);
        goto out;
    }
    rc = 0;
out:
    free(buf);
    if (rc != 0) {
        free_strv(v, (size_t)count);
        return -1;
    }
    *out = v;
    *n = count;
    return 0;
}

/* Labels must be usable by the rule: no '/', none twice. */
static int check_labels(char **labels, int n, const char *path, trn_err *err)
{
    label_index ix = {0};
    for (int k = 0; k < n; k++)
        if (strchr(labels[k], '/'))
            return trn_errf(err, "%s:%d: label '%s' contains '/', so no folder or file name can "
                            "match it", path, k + 1, labels[k]);
    if (index_build(&ix, (const char *const *)labels, n, err) != 0) return -1;
    for (int k = 0; k < n; k++) {
        int first = index_find(&ix, labels[k], strlen(labels[k]));
        if (first != k) {
            free(ix.table);
            return trn_errf(err, "%s:%d: label '%s' is already on line %d; labels must be "
                            "distinct", path, k + 1, labels[k], first + 1);
        }
    }
    free(ix.table);
    return 0;
}

/* ---- list files ------------------------------------------------------------- */

static int read_list(struct trn_split_data *sp, const char *dir, const label_index *ix,
                     const char *from, trn_err *err)
{
    char *buf;
    size_t len;
    if (trn_read_file(sp->list, (size_t)LIST_MAX_BYTES, &buf, &len, err) != 0)
        return trn_err_prefix(err, "%s: list file", from);
    line_iter it = {buf, buf + len, 0};
    size_t cap = 0;
    char *s, where[PATH_MAX_LEN + 32];
    int nul, rc = -1;
    while ((s = next_line(&it, &nul))) {
        snprintf(where, sizeof where, "%s:%d", sp->list, it.lineno);
        if (nul) {
            trn_errf(err, "%s: NUL byte in a list file (is this a text list of image paths?)",
                     where);
            goto out;
        }
        if (!*s) continue;
        if (sp->n == cap) {
            cap = cap ? cap * 2 : 256;
            char **np = realloc(sp->paths, cap * sizeof *np);
            if (!np) {
                trn_errf(err, "out of memory reading %s", sp->list);
                goto out;
            }
            sp->paths = np;
            int *nc = realloc(sp->cls, cap * sizeof *nc);
            if (!nc) {
                trn_errf(err, "out of memory reading %s", sp->list);
                goto out;
            }
            sp->cls = nc;
        }
        int k = match_path(ix, s, where, err);
        if (k < 0) goto out;
        char *p = resolve(dir, s, where, err);
        if (!p) goto out;
        sp->paths[sp->n] = p;
        sp->cls[sp->n++] = k;
    }
    if (sp->n == 0) {
        trn_errf(err, "%s: the list has no image paths", sp->list);
        goto out;
    }
    rc = 0;
out:
    free(buf);
    return rc;
}

/* ---- .data ------------------------------------------------------------------ */

enum data_key { K_CLASSES, K_TRAIN, K_VALID, K_TEST, K_LABELS, K_NAMES, K_BACKUP, K_TOP, K_COUNT };
static const char *const key_names[] = {"classes", "train", "valid", "test",
                                        "labels", "names", "backup", "top"};
_Static_assert(sizeof key_names / sizeof key_names[0] == K_COUNT, "one name per key");

void trn_dataset_close(trn_dataset *ds)
{
    if (!ds) return;
    free(ds->path);
    if (ds->names != ds->labels) free_strv(ds->names, (size_t)ds->classes);
    free_strv(ds->labels, (size_t)ds->classes);
    free(ds->backup);
    for (int s = 0; s < TRN_SPLIT_COUNT; s++) {
        free(ds->split[s].list);
        free_strv(ds->split[s].paths, ds->split[s].n);
        free(ds->split[s].cls);
    }
    free(ds);
}

trn_dataset *trn_dataset_open(const char *data_path, trn_err *err)
{
    trn_dataset *ds = calloc(1, sizeof *ds);
    char *buf = NULL, *dir = NULL;
    char *val[K_COUNT] = {0};
    int line[K_COUNT] = {0};
    label_index ix = {0};
    if (!ds) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    if (!(ds->path = dup_str(data_path, err))) goto fail;
    size_t len;
    if (trn_read_file(data_path, (size_t)DATA_MAX_BYTES, &buf, &len, err) != 0) goto fail;

    /* The folder of the .data file, against which relative paths resolve. */
    if (!(dir = dup_str(data_path, err))) goto fail;
    char *slash = strrchr(dir, '/');
    if (!slash) dir[0] = '\0';
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';

    line_iter it = {buf, buf + len, 0};
    char *s;
    int nul;
    while ((s = next_line(&it, &nul))) {
        if (nul) {
            trn_errf(err, "%s:%d: NUL byte in the .data file (is this a Darknet .data file?)",
                     data_path, it.lineno);
            goto fail;
        }
        if (!*s || *s == '#' || *s == ';') continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            trn_errf(err, "%s:%d: expected 'key = value', got '%.80s'", data_path, it.lineno, s);
            goto fail;
        }
        char *v = eq + 1, *ke = eq;
        while (ke > s && isspace((unsigned char)ke[-1])) ke--;
        *ke = '\0';
        while (*v && isspace((unsigned char)*v)) v++;
        if (!*s) {
            trn_errf(err, "%s:%d: a value without a key", data_path, it.lineno);
            goto fail;
        }
        int k = 0;
        while (k < K_COUNT && strcmp(key_names[k], s) != 0) k++;
        if (k == K_COUNT) continue; /* unknown keys are Darknet's or someone else's */
        if (val[k]) {
            trn_errf(err, "%s:%d: key '%s' given twice (first on line %d)", data_path,
                     it.lineno, s, line[k]);
            goto fail;
        }
        if (!*v) {
            trn_errf(err, "%s:%d: key '%s' has no value", data_path, it.lineno, s);
            goto fail;
        }
        val[k] = v;
        line[k] = it.lineno;
    }

    char where[PATH_MAX_LEN + 32];
    long num;
    if (!val[K_CLASSES]) {
        trn_errf(err, "%s: missing key 'classes' (the number of classes)", data_path);
        goto fail;
    }
    if (parse_int(val[K_CLASSES], 1, CLASSES_MAX, &num) != 0) {
        trn_errf(err, "%s:%d: classes=%s is not a whole number in [1, %d]", data_path,
                 line[K_CLASSES], val[K_CLASSES], CLASSES_MAX);
        goto fail;
    }
    ds->classes = (int)num;
    ds->top = 1;
    if (val[K_TOP]) {
        if (parse_int(val[K_TOP], 1, ds->classes, &num) != 0) {
            trn_errf(err, "%s:%d: top=%s is not a whole number in [1, classes=%d]", data_path,
                     line[K_TOP], val[K_TOP], ds->classes);
            goto fail;
        }
        ds->top = (int)num;
    }
    if (val[K_BACKUP]) {
        snprintf(where, sizeof where, "%s:%d", data_path, line[K_BACKUP]);
        if (!(ds->backup = resolve(dir, val[K_BACKUP], where, err))) goto fail;
    }

    /* Labels (the matching tokens) and names (for display). */
    int kl = val[K_LABELS] ? K_LABELS : K_NAMES;
    if (!val[kl]) {
        trn_errf(err, "%s: needs a 'labels' or 'names' key (a file with one class label per "
                 "line)", data_path);
        goto fail;
    }
    char *lpath = NULL, *npath = NULL;
    int nl = 0, nn = 0;
    snprintf(where, sizeof where, "%s:%d", data_path, line[kl]);
    if (!(lpath = resolve(dir, val[kl], where, err))) goto fail;
    int rc = read_names(lpath, "labels", where, &ds->labels, &nl, err);
    if (rc == 0 && nl != ds->classes)
        rc = trn_errf(err, "%s:%d: classes=%d but %s has %d labels", data_path,
                      line[K_CLASSES], ds->classes, lpath, nl);
    if (rc == 0) rc = check_labels(ds->labels, nl, lpath, err);
    if (rc == 0 && val[K_LABELS] && val[K_NAMES]) {
        snprintf(where, sizeof where, "%s:%d", data_path, line[K_NAMES]);
        if (!(npath = resolve(dir, val[K_NAMES], where, err))) rc = -1;
        if (rc == 0) rc = read_names(npath, "names", where, &ds->names, &nn, err);
        if (rc == 0 && nn != nl)
            rc = trn_errf(err, "%s: %d names but %s has %d labels; the two files must list the "
                          "same classes in the same order", npath, nn, lpath, nl);
    }
    free(lpath);
    free(npath);
    if (rc != 0) {
        if (ds->names) free_strv(ds->names, (size_t)nn);
        ds->names = NULL;
        free_strv(ds->labels, (size_t)nl);
        ds->labels = NULL;
        goto fail;
    }
    if (!ds->names) ds->names = ds->labels;

    if (index_build(&ix, (const char *const *)ds->labels, ds->classes, err) != 0) goto fail;
    static const int split_key[TRN_SPLIT_COUNT] = {K_TRAIN, K_VALID, K_TEST};
    for (int sp = 0; sp < TRN_SPLIT_COUNT; sp++) {
        int k = split_key[sp];
        if (!val[k]) continue;
        snprintf(where, sizeof where, "%s:%d", data_path, line[k]);
        ds->split[sp].present = 1;
        if (!(ds->split[sp].list = resolve(dir, val[k], where, err))) goto fail;
        if (read_list(&ds->split[sp], dir, &ix, where, err) != 0) goto fail;
    }
    free(ix.table);
    free(buf);
    free(dir);
    return ds;

fail:
    free(ix.table);
    free(buf);
    free(dir);
    trn_dataset_close(ds);
    return NULL;
}

/* ---- accessors ---------------------------------------------------------------- */

int trn_dataset_classes(const trn_dataset *ds) { return ds->classes; }
const char *trn_dataset_label(const trn_dataset *ds, int k)
{
    return k >= 0 && k < ds->classes ? ds->labels[k] : NULL;
}
const char *trn_dataset_name(const trn_dataset *ds, int k)
{
    return k >= 0 && k < ds->classes ? ds->names[k] : NULL;
}
int trn_dataset_top(const trn_dataset *ds) { return ds->top; }
const char *trn_dataset_backup(const trn_dataset *ds) { return ds->backup; }
int trn_dataset_has(const trn_dataset *ds, trn_split s)
{
    return (unsigned)s < TRN_SPLIT_COUNT && ds->split[s].present;
}
size_t trn_dataset_count(const trn_dataset *ds, trn_split s)
{
    return (unsigned)s < TRN_SPLIT_COUNT ? ds->split[s].n : 0;
}
const char *trn_dataset_path(const trn_dataset *ds, trn_split s, size_t i)
{
    return (unsigned)s < TRN_SPLIT_COUNT && i < ds->split[s].n ? ds->split[s].paths[i] : NULL;
}
int trn_dataset_class(const trn_dataset *ds, trn_split s, size_t i)
{
    return (unsigned)s < TRN_SPLIT_COUNT && i < ds->split[s].n ? ds->split[s].cls[i] : -1;
}

const char *trn_data_name(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}

int trn_tasks_read(const char *path, trn_task_line *t, int max, int *n, trn_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    *n = 0;
    if (trn_read_file(path, (size_t)1 << 20, &buf, &len, err) != 0) return -1;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 0;
    int line = 0, rc = 0;
    for (char *p = buf, *e; p && *p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        if (e) *e = 0;
        line++;
        char name[64], file[2048];
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        if (sscanf(p, "%63s %2047s", name, file) != 2) {
            rc = trn_errf(err, "%s:%d: expected \"task data-file\"", path, line);
            break;
        }
        if (*n == max) {
            rc = trn_errf(err, "%s:%d: more than %d tasks", path, line, max);
            break;
        }
        for (int k = 0; k < *n && !rc; k++)
            if (!strcmp(t[k].name, name)) rc = trn_errf(err, "%s:%d: task '%s' is listed twice", path, line, name);
        if (rc) break;
        snprintf(t[*n].name, sizeof t[*n].name, "%s", name);
        snprintf(t[*n].file, sizeof t[*n].file, "%s", trn_data_name(file));
        if (file[0] == '/' || !slash)
            snprintf(t[*n].path, sizeof t[*n].path, "%s", file);
        else
            snprintf(t[*n].path, sizeof t[*n].path, "%.*s/%s", dirlen, path, file);
        (*n)++;
    }
    free(buf);
    return rc;
}
