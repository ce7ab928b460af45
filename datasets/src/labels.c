/* labels.c: label words and tasks (label sets) for the sets this component
 * writes. */
#include "ds.h"

#include <stdlib.h>
#include <string.h>

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
