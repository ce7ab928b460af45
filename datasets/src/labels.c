/* labels.c: splits, label words, the label rule and tasks (label sets). */
#include "ds.h"

#include <stdlib.h>
#include <string.h>

static const char *const split_names[] = {"train", "valid", "test"};
_Static_assert(sizeof split_names / sizeof split_names[0] == DS_SPLIT_COUNT,
               "split_names must name every ds_split");

const char *ds_split_name(int split)
{
    return split >= 0 && split < DS_SPLIT_COUNT ? split_names[split] : NULL;
}

static int label_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.' || c == '+';
}

int ds_label_check(const char *label, trn_err *err)
{
    size_t n = strlen(label);
    if (n == 0) return trn_errf(err, "empty label: every class needs a name");
    if (n > DS_LABEL_MAX)
        return trn_errf(err, "label '%.40s...' is %zu bytes long; the limit is %d", label, n,
                        DS_LABEL_MAX);
    if (!strcmp(label, ".") || !strcmp(label, ".."))
        return trn_errf(err, "label '%s' is not allowed (it names a folder)", label);
    for (size_t i = 0; i < n; i++)
        if (!label_char((unsigned char)label[i]))
            return trn_errf(err,
                            "label '%s' has the character '%c' at position %zu; labels are "
                            "made of letters, digits, '-', '.' and '+' ('_' separates the "
                            "label tokens of a file name)",
                            label, label[i] >= 32 && label[i] < 127 ? label[i] : '?', i);
    return 0;
}

int ds_label_from_name(const char *name, char out[DS_LABEL_MAX + 1], trn_err *err)
{
    size_t o = 0;
    for (size_t i = 0; name[i] && o < DS_LABEL_MAX; i++)
        out[o++] = label_char((unsigned char)name[i]) ? name[i] : '-';
    out[o] = '\0';
    /* Trim '-' at both ends (from spaces or underscores around the name). */
    size_t start = 0;
    while (out[start] == '-') start++;
    while (o > start && out[o - 1] == '-') out[--o] = '\0';
    memmove(out, out + start, o - start + 1);
    if (!out[0] || !strcmp(out, ".") || !strcmp(out, ".."))
        return trn_errf(err, "class name '%s' gives no usable label", name);
    return 0;
}

/* Appends "'s'" to a comma list in buf, stopping quietly when full. */
static void list_add(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(buf);
    if (n + 8 >= cap) return;
    snprintf(buf + n, cap - n, "%s'%s'", n ? ", " : "", s);
}

int ds_label_match(const char *path, const char *const *labels, int n, const char *where,
                   trn_err *err)
{
    /* Split path into parent folder name and file name. */
    const char *base = strrchr(path, '/');
    char parent[256] = "";
    if (base) {
        const char *p = base;
        while (p > path && p[-1] != '/') p--;
        size_t len = (size_t)(base - p);
        if (len < sizeof parent) {
            memcpy(parent, p, len);
            parent[len] = '\0';
        }
        base++;
    } else {
        base = path;
    }
    char stem[1024];
    snprintf(stem, sizeof stem, "%s", base);
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem) *dot = '\0';

    int found = -1, nfound = 0;
    char cands[512] = "";
    for (int k = 0; k < n; k++) {
        const char *l = labels[k];
        size_t ll = strlen(l);
        int hit = parent[0] && !strcmp(parent, l);
        for (const char *t = stem; !hit;) {
            const char *e = strchr(t, '_');
            size_t tl = e ? (size_t)(e - t) : strlen(t);
            if (tl == ll && !memcmp(t, l, ll)) hit = 1;
            if (!e) break;
            t = e + 1;
        }
        if (hit) {
            if (nfound == 0) found = k;
            nfound++;
            list_add(cands, sizeof cands, l);
        }
    }
    if (nfound == 1) return found;
    if (nfound > 1)
        return trn_errf(err,
                        "%s: image %s matches %d labels (%s); exactly one label may equal "
                        "its parent folder or one '_' token of its file name",
                        where, path, nfound, cands);
    char toks[512] = "";
    for (const char *t = stem;;) {
        const char *e = strchr(t, '_');
        char tok[DS_LABEL_MAX + 1];
        size_t tl = e ? (size_t)(e - t) : strlen(t);
        if (tl > DS_LABEL_MAX) tl = DS_LABEL_MAX;
        memcpy(tok, t, tl);
        tok[tl] = '\0';
        list_add(toks, sizeof toks, tok);
        if (!e) break;
        t = e + 1;
    }
    return trn_errf(err,
                    "%s: image %s matches none of the %d labels: neither its parent folder "
                    "'%s' nor its file name tokens (%s) is a label; rename the file or add "
                    "its class to the labels file",
                    where, path, n, parent, toks);
}

int ds_task_init(ds_task *t, const char *name, int classes, trn_err *err)
{
    memset(t, 0, sizeof *t);
    if (ds_label_check(name, err) != 0) return trn_err_prefix(err, "task name");
    if (classes < 1 || classes > 1000000)
        return trn_errf(err, "task %s: %d classes is out of range 1..1000000", name, classes);
    t->labels = calloc((size_t)classes, sizeof *t->labels);
    if (!t->labels) return trn_errf(err, "task %s: out of memory", name);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->classes = classes;
    return 0;
}

int ds_task_set(ds_task *t, int k, const char *label, trn_err *err)
{
    if (k < 0 || k >= t->classes)
        return trn_errf(err, "task %s: class %d is out of range 0..%d", t->name, k, t->classes - 1);
    if (ds_label_check(label, err) != 0) return trn_err_prefix(err, "task %s, class %d", t->name, k);
    char *dup = strdup(label);
    if (!dup) return trn_errf(err, "task %s: out of memory", t->name);
    free(t->labels[k]);
    t->labels[k] = dup;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int ds_task_check(const ds_task *t, trn_err *err)
{
    for (int k = 0; k < t->classes; k++)
        if (!t->labels[k]) return trn_errf(err, "task %s: class %d has no label", t->name, k);
    char **sorted = malloc((size_t)t->classes * sizeof *sorted);
    if (!sorted) return trn_errf(err, "task %s: out of memory", t->name);
    memcpy(sorted, t->labels, (size_t)t->classes * sizeof *sorted);
    qsort(sorted, (size_t)t->classes, sizeof *sorted, cmp_str);
    int rc = 0;
    for (int k = 1; k < t->classes && rc == 0; k++)
        if (!strcmp(sorted[k - 1], sorted[k]))
            rc = trn_errf(err, "task %s: the label '%s' is given to two classes", t->name, sorted[k]);
    free(sorted);
    return rc;
}

void ds_task_free(ds_task *t)
{
    if (!t) return;
    if (t->labels)
        for (int k = 0; k < t->classes; k++) free(t->labels[k]);
    free(t->labels);
    t->labels = NULL;
    t->classes = 0;
}
