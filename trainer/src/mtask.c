/*
 * mtask.c: multi-task training (`trainer train --tasks FILE` calls it).
 *
 * The network of --cfg is a plain classifier of the first task (its last
 * [connected] layer has one output per class, then [softmax]). For
 * training, that layer is widened to T groups of G outputs (T tasks, G the
 * largest class count; a task with fewer classes leaves the rest of its
 * group padded: their truth is always 0) and the softmax gets groups=T:
 * Darknet's grouped softmax, one cross-entropy per task (Caruana's shared
 * hidden layers; MCDNN's face trunk that encodes identity, age, gender and
 * race). Every image has one class per task, read from each task's .data
 * (every task lists the same images). After training, the first task's
 * slice of the widened layer (its first G rows) gives back the plain
 * network of --cfg: that is what the run publishes as BASE.weights.
 */
#include "trn.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void trn_mtask_free(trn_mtask *t)
{
    for (int k = 1; k < t->n; k++) trn_dataset_close(t->ds[k]); /* ds[0] is the caller's */
    memset(t, 0, sizeof *t);
}

/* The tasks file (trn_tasks_read: "task data-file" lines). */
static int read_file(const char *path, trn_mtask *t, trn_err *err)
{
    trn_task_line lines[TRN_MTASK_MAX];
    _Static_assert(sizeof t->name[0] >= sizeof lines[0].name && sizeof t->path[0] >= sizeof lines[0].path,
                   "trn_mtask holds a task line");
    if (trn_tasks_read(path, lines, TRN_MTASK_MAX, &t->n, err) != 0) return -1;
    for (int k = 0; k < t->n; k++) {
        memcpy(t->name[k], lines[k].name, sizeof lines[k].name);
        memcpy(t->path[k], lines[k].path, sizeof lines[k].path);
    }
    if (t->n < 2)
        return trn_errf(err, "%s: multi-task training needs at least two \"task data-file\" lines "
                        "(the first the task of --data)", path);
    return 0;
}

int trn_mtask_open(const char *path, const char *data, trn_dataset *first, const char *weights, trn_mtask *t,
                   trn_err *err)
{
    memset(t, 0, sizeof *t);
    if (read_file(path, t, err) != 0) return -1;
    char a[PATH_MAX], b[PATH_MAX];
    if (!realpath(t->path[0], a) || !realpath(data, b) || strcmp(a, b) != 0) {
        trn_errf(err, "%s: its first task's data file %s is not --data %s: list the task of --data "
                 "first", path, t->path[0], data);
        t->n = 0;
        return -1;
    }
    int n = t->n;
    t->n = 0;
    for (int k = 0; k < n; k++, t->n++) {
        if (!(t->ds[k] = k == 0 ? first : trn_dataset_open(t->path[k], err))) {
            trn_err_prefix(err, "%s: task '%s'", path, t->name[k]);
            trn_mtask_free(t);
            return -1;
        }
        if (trn_dataset_classes(t->ds[k]) > t->group) t->group = trn_dataset_classes(t->ds[k]);
        t->w[k] = 1;
    }
    if (weights) {
        const char *p = weights;
        for (int k = 0; k < t->n; k++) {
            char *e;
            double v = strtod(p, &e);
            if (e == p || !(v >= 0 && v <= 1000) || (k < t->n - 1 ? *e != ',' : *e != '\0')) {
                trn_errf(err, "--task-weights '%s': expected %d numbers in [0, 1000] separated by ','"
                         " (one per task of %s, in its order)", weights, t->n, path);
                trn_mtask_free(t);
                return -1;
            }
            t->w[k] = (float)v;
            p = e + 1;
        }
    }
    return 0;
}

static int is_type(const trn_cfg *cfg, int s, const char *a, const char *b)
{
    const char *ty = trn_cfg_section_type(cfg, s);
    return ty && (!strcmp(ty, a) || !strcmp(ty, b));
}

trn_cfg *trn_mtask_cfg(const trn_cfg *cfg, const trn_mtask *t, int classes, trn_err *err)
{
    int n = trn_cfg_sections(cfg);
    if (n < 3 || !is_type(cfg, n - 1, "softmax", "soft") || !is_type(cfg, n - 2, "connected", "conn")) {
        trn_errf(err, "%s: multi-task training needs a network ending in [connected] then "
                 "[softmax] (the last connected layer is widened to one group per task)", trn_cfg_name(cfg));
        return NULL;
    }
    const char *g = trn_cfg_get(cfg, n - 1, "groups");
    const char *o = trn_cfg_get(cfg, n - 2, "output");
    if ((g && strcmp(g, "1") != 0) || !o || atoi(o) != classes) {
        trn_errf(err, "%s: the last [connected] must have output=%d (the classes of the first task) "
                 "and the [softmax] no groups (it has output=%s, groups=%s)", trn_cfg_name(cfg),
                 classes, o ? o : "(none)", g ? g : "1");
        return NULL;
    }
    trn_cfg *m = trn_cfg_clone(cfg, err);
    if (!m) return NULL;
    if (trn_cfg_setf(m, n - 2, "output", err, "%d", t->n * t->group) != 0 ||
        trn_cfg_setf(m, n - 1, "groups", err, "%d", t->n) != 0) {
        trn_cfg_free(m);
        return NULL;
    }
    return m;
}

/* Whether the widened network's parameter arrays pm (nm of them) match the
 * plain network's pp (np): every array the same but the last [connected]
 * layer's (layer `last`), whose plain weights (outputs, inputs row-major)
 * and biases (one per output) are the first task's group, the first
 * pp[i].count floats of pm[i]. 0, or -1 with err naming `what`. */
static int tasks_match(const trn_param *pm, int nm, const trn_param *pp, int np, int last, const char *what,
                       trn_err *err)
{
    if (nm != np) return trn_errf(err, "%s: %d parameter arrays against %d", what, nm, np);
    for (int i = 0; i < np; i++) {
        const trn_param *a = &pm[i], *b = &pp[i];
        int ok = a->layer == b->layer && a->role == b->role &&
                 (a->count == b->count ||
                  (b->layer == last && a->count > b->count &&
                   ((a->cols == b->cols && b->rows <= a->rows) || (a->rows == 1 && b->rows == 1))));
        if (!ok)
            return trn_errf(err, "%s: parameter array %d (layer %d, %s) does not match (%zu floats of the "
                            "widened network against %zu)", what, i, b->layer, trn_param_role_name(b->role),
                            a->count, b->count);
    }
    return 0;
}

int trn_mtask_slice(const trn_net *multi, trn_net *plain, trn_err *err)
{
    int nm, np;
    const trn_param *pm = trn_net_params(multi, &nm), *pp = trn_net_params(plain, &np);
    /* the [connected] before the [softmax] */
    if (tasks_match(pm, nm, pp, np, trn_net_layers(plain) - 2, "multi-task slice", err) != 0) return -1;
    for (int i = 0; i < np; i++) memcpy(pp[i].data, pm[i].data, pp[i].count * sizeof *pp[i].data);
    trn_net_set_seen(plain, trn_net_seen(multi));
    return 0;
}

int trn_mtask_widen(const trn_net *plain, trn_net *multi, trn_err *err)
{
    int nm, np;
    const trn_param *pm = trn_net_params(multi, &nm), *pp = trn_net_params(plain, &np);
    if (tasks_match(pm, nm, pp, np, trn_net_layers(plain) - 2, "multi-task widening", err) != 0) return -1;
    /* The first task's group takes the plain layer's rows; the other groups
     * start at zero (logits 0, a uniform softmax): their first gradients
     * reach the trained trunk only as the rows grow, instead of the large
     * random logits a fresh layer gives on its features. */
    for (int i = 0; i < np; i++) {
        memcpy(pm[i].data, pp[i].data, pp[i].count * sizeof *pm[i].data);
        if (pm[i].count > pp[i].count)
            memset(pm[i].data + pp[i].count, 0, (pm[i].count - pp[i].count) * sizeof *pm[i].data);
    }
    trn_net_set_seen(multi, trn_net_seen(plain));
    return 0;
}
