/*
 * retarget_run.c: a retargeting run (`prune retarget` parses, calls
 * prn_retarget_run, prints): one head per attribute task on a frozen
 * shared trunk (MCDNN section 4.1.3). Every task's .data lists the same
 * images in the same order, so the trunk runs once per image and every
 * head trains on the same cached outputs: one clean pass over the training
 * split plus `aug_passes` passes with the base cfg's [net] augmentation,
 * and one clean pass over the test split (the valid split when there is
 * no test split) for the accuracies; a sweep (--cuts) adds a clean valid
 * pass, on which each task chooses its cut.
 */
#include "prn_impl.h"

#include <stdlib.h>
#include <string.h>

#define MAX_TASKS PRN_RETARGET_MAX_TASKS
#define MAX_POINTS PRN_RETARGET_MAX_POINTS

typedef struct task {
    char name[64];
    char path[4096];
    char file[2048]; /* its name in the variant's fields (trn_data_name) */
    trn_dataset *ds;
    int *train, *test, *valid; /* labels per cached vector (valid: a sweep only) */
} task;

typedef struct feed {
    trn_loader *l;
    float *y;
} feed;

/* Everything a run holds; freed by run_free. */
typedef struct run {
    const prn_retarget_opts *o;
    const char *cutopt;
    prn_retarget_point pts[MAX_POINTS];
    task t[MAX_TASKS];
    int nt, tt; /* tt: the trunk's own task (no head) */
    trn_cfg *cfg;
    trn_net *base;
    prn_plan *plan;
    trn_split held;
    size_t n_tr, n_te, n_va, n_cached;
    trn_loader_opts lo;
    prn_features ftr, fte, fva;
    feed fd;
    prn_variant v[MAX_TASKS];
    int best[MAX_TASKS];        /* the point each task keeps (-1: none yet) */
    int best_within[MAX_TASKS]; /* whether it is within the budget */
    double bestv[MAX_TASKS];    /* its valid top-1 */
    int *pred;
    cJSON *table, *rows, *srows;
} run;

void prn_retarget_opts_defaults(prn_retarget_opts *o)
{
    memset(o, 0, sizeof *o);
    o->trunk_id = "base";
    o->budget = 0.01;
    prn_head_opts_defaults(&o->head);
}

int prn_retarget_settings(prn_retarget_opts *o, const char *const *kv, int n, trn_err *err)
{
    for (int i = 0; i < n; i++) {
        if (strncmp(kv[i], "budget=", 7) != 0) continue;
        char *end;
        o->budget = strtod(kv[i] + 7, &end);
        if (*end || end == kv[i] + 7 || !(o->budget > 0 && o->budget <= 1))
            return trn_errf(err, "--set %s: the budget is a fraction of the base in (0, 1]", kv[i]);
    }
    for (int i = 0; i < n; i++)
        if (strncmp(kv[i], "budget=", 7) != 0 && prn_head_opts_set(&o->head, kv[i], err)) return -1;
    return 0;
}

/* Splits cuts ("SEL" or "SEL:TEXT" words separated by spaces) into o->pts. */
static int parse_cuts(prn_retarget_opts *o, const char *cuts, const char *dflt, trn_err *err)
{
    if (strlen(cuts) >= sizeof o->cuts) return trn_errf(err, "--cuts: longer than %zu characters", sizeof o->cuts - 1);
    memcpy(o->cuts, cuts, strlen(cuts) + 1);
    o->npoints = 0;
    for (char *w = strtok(o->cuts, " \t\n"); w; w = strtok(NULL, " \t\n")) {
        prn_retarget_point *p = &o->pts[o->npoints];
        if (o->npoints == MAX_POINTS) return trn_errf(err, "--cuts: more than %d cuts", MAX_POINTS);
        char *colon = strchr(w, ':');
        if (colon) *colon = 0;
        if (!*w || strlen(w) >= sizeof p->sel)
            return trn_errf(err, "--cuts: '%s' is not a layer selector (write SEL or SEL:HEAD, e.g. "
                            "'L1:avgpool conv@4')", w);
        snprintf(p->sel, sizeof p->sel, "%s", w);
        p->head = colon ? (colon[1] ? colon + 1 : NULL) : dflt;
        o->npoints++;
    }
    if (o->npoints == 0) return trn_errf(err, "--cuts: no cut given (write SEL or SEL:HEAD words, e.g. 'L1 conv@4')");
    return 0;
}

int prn_retarget_points(prn_retarget_opts *o, const char *cut, const char *cuts, const char *head, trn_err *err)
{
    o->sweep = cuts != NULL;
    if (cuts) return parse_cuts(o, cuts, head, err);
    o->npoints = 1;
    snprintf(o->pts[0].sel, sizeof o->pts[0].sel, "%s", cut);
    o->pts[0].head = head;
    if (strlen(cut) >= sizeof o->pts[0].sel) return trn_errf(err, "--cut %.100s: too long", cut);
    return 0;
}

static int next_images(void *ctx, uint64_t step, float *x, trn_err *err)
{
    feed *f = ctx;
    return trn_loader_get(f->l, step, x, f->y, err);
}

/* Reads the tasks file (trn_tasks_read: "task data-file" lines). */
static int read_tasks(const char *path, task *t, int *n, trn_err *err)
{
    trn_task_line lines[MAX_TASKS];
    _Static_assert(sizeof t->name >= sizeof lines[0].name && sizeof t->path >= sizeof lines[0].path &&
                       sizeof t->file >= sizeof lines[0].file,
                   "task holds a task line");
    if (trn_tasks_read(path, lines, MAX_TASKS, n, err) != 0) return -1;
    for (int k = 0; k < *n; k++) {
        memcpy(t[k].name, lines[k].name, sizeof lines[k].name);
        memcpy(t[k].path, lines[k].path, sizeof lines[k].path);
        memcpy(t[k].file, lines[k].file, sizeof lines[k].file);
    }
    if (*n < 2)
        return trn_errf(err, "%s: needs the base's task and at least one more task (\"task "
                        "data-file\" lines)", path);
    return 0;
}

/* The index of the trunk's own task: name's in t (NULL: the first task);
 * -1 with err naming the tasks of the file when absent. */
static int trunk_task_of(const char *name, const char *path, const task *t, int n, trn_err *err)
{
    if (!name) return 0;
    for (int k = 0; k < n; k++)
        if (!strcmp(t[k].name, name)) return k;
    char list[MAX_TASKS * 66] = "";
    for (int k = 0; k < n; k++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%.63s", k ? ", " : "", t[k].name);
    }
    trn_errf(err, "--trunk-task '%.64s': %s has no such task; its tasks: %s (name the task the trunk's own "
             "classifier answers)", name, path, list);
    return -1;
}

/* The points' cuts in the base's plan: below the output, and no layer
 * above a cut reading one below it. */
static int resolve_cuts(run *r, trn_err *err)
{
    const prn_retarget_opts *o = r->o;
    int nl = prn_plan_layers(r->plan);
    for (int q = 0; q < o->npoints; q++) {
        r->pts[q].cut = prn_select(r->plan, r->pts[q].sel, err);
        if (r->pts[q].cut < 0) return trn_err_prefix(err, "%s", r->cutopt), -1;
        if (r->pts[q].cut >= nl - 1)
            return trn_errf(err, "%s %s is L%d, the last layer: a head needs the trunk to end below the "
                            "output (run `prune plan --cfg %s`)", r->cutopt, r->pts[q].sel, r->pts[q].cut, o->cfg);
    }
    if (!(r->base = prn_load_base(r->cfg, o->weights, 64, err))) return -1;
    for (int q = 0; q < o->npoints; q++)
        for (int i = r->pts[q].cut + 1; i < nl; i++) {
            trn_layer_info li;
            trn_net_layer_info(r->base, i, &li);
            for (int k = 0; k < li.n_from; k++)
                if (li.from[k] < r->pts[q].cut)
                    return trn_errf(err, "%s %s: L%d above the cut reads L%d below it; cut after L%d", r->cutopt,
                                    r->pts[q].sel, i, li.from[k], i);
        }
    return 0;
}

/* Task k's split sp lists the same images as task 0's. */
static int same_images(const run *r, int k, trn_split sp, trn_err *err)
{
    const task *t = r->t;
    size_t n = trn_dataset_count(t[0].ds, sp);
    if (trn_dataset_count(t[k].ds, sp) != n)
        return trn_errf(err, "%s: task '%s' lists %zu %s images, task '%s' %zu: every task must "
                        "list the same images", r->o->tasks, t[k].name, trn_dataset_count(t[k].ds, sp),
                        trn_split_name(sp), t[0].name, n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(trn_dataset_path(t[k].ds, sp, i), trn_dataset_path(t[0].ds, sp, i)))
            return trn_errf(err, "%s: %s image %zu of task '%s' is %s, of task '%s' %s: every task "
                            "must list the same images in the same order", r->o->tasks, trn_split_name(sp),
                            i + 1, t[k].name, trn_dataset_path(t[k].ds, sp, i), t[0].name,
                            trn_dataset_path(t[0].ds, sp, i));
    return 0;
}

/* Opens every task's data set and checks the splits they share. */
static int open_sets(run *r, trn_err *err)
{
    const int sweep = r->o->sweep;
    for (int k = 0; k < r->nt; k++)
        if (!(r->t[k].ds = trn_dataset_open(r->t[k].path, err)))
            return trn_err_prefix(err, "%s: task '%s'", r->o->tasks, r->t[k].name), -1;
    const trn_dataset *ds = r->t[0].ds;
    r->held = trn_dataset_has(ds, TRN_SPLIT_TEST) ? TRN_SPLIT_TEST : TRN_SPLIT_VALID;
    if (sweep && (r->held != TRN_SPLIT_TEST || !trn_dataset_has(ds, TRN_SPLIT_VALID) ||
                  trn_dataset_count(ds, TRN_SPLIT_VALID) < 1))
        return trn_errf(err, "%s: --cuts chooses each task's cut on the valid split and scores it on the test "
                        "split: the set needs both (or give one --cut)", r->t[0].path);
    trn_split sp[3] = {TRN_SPLIT_TRAIN, r->held, TRN_SPLIT_VALID};
    for (int k = 1; k < r->nt; k++)
        for (int q = 0; q < 2 + sweep; q++)
            if (same_images(r, k, sp[q], err)) return -1;
    r->n_tr = trn_dataset_count(ds, TRN_SPLIT_TRAIN);
    r->n_te = trn_dataset_count(ds, r->held);
    r->n_va = sweep ? trn_dataset_count(ds, TRN_SPLIT_VALID) : 0;
    if (r->n_tr < 1 || r->n_te < 1)
        return trn_errf(err, "%s: needs training and %s images", r->t[0].path, trn_split_name(r->held));
    return 0;
}

/* Reads the tasks and the base; checks the cuts and the data sets. */
static int load(run *r, trn_err *err)
{
    const prn_retarget_opts *o = r->o;
    if (read_tasks(o->tasks, r->t, &r->nt, err) != 0) return -1;
    /* The images (the same for every task) are read through the first task. */
    if ((r->tt = trunk_task_of(o->trunk_task, o->tasks, r->t, r->nt, err)) < 0) return -1;
    if (!(r->cfg = trn_cfg_read(o->cfg, err))) return -1;
    if (!(r->plan = prn_plan_create(r->cfg, err))) return -1;
    if (resolve_cuts(r, err) || open_sets(r, err)) return -1;
    return prn_loader_opts(r->base, o->cfg, 64, o->seed, o->threads, 0, &r->lo, err);
}

/* Every headed task's labels per cached vector; the buffers of a run. */
static int alloc_labels(run *r, trn_err *err)
{
    r->n_cached = r->n_tr * (size_t)(1 + r->o->head.aug_passes);
    size_t np = r->n_te > r->n_va ? r->n_te : r->n_va;
    if (!(r->fd.y = malloc((size_t)64 * (size_t)trn_dataset_classes(r->t[0].ds) * sizeof *r->fd.y)) ||
        !(r->pred = malloc(np * sizeof *r->pred)) || !(r->table = cJSON_CreateObject()))
        return trn_errf(err, "out of memory");
    for (int k = 0; k < r->nt; k++) {
        task *t = &r->t[k];
        if (k == r->tt) continue;
        if (!(t->train = malloc(r->n_cached * sizeof(int))) || !(t->test = malloc(r->n_te * sizeof(int))) ||
            (r->n_va && !(t->valid = malloc(r->n_va * sizeof(int)))))
            return trn_errf(err, "out of memory");
        for (size_t i = 0; i < r->n_cached; i++) t->train[i] = trn_dataset_class(t->ds, TRN_SPLIT_TRAIN, i % r->n_tr);
        for (size_t i = 0; i < r->n_te; i++) t->test[i] = trn_dataset_class(t->ds, r->held, i);
        for (size_t i = 0; i < r->n_va; i++) t->valid[i] = trn_dataset_class(t->ds, TRN_SPLIT_VALID, i);
        r->best[k] = -1;
    }
    return 0;
}

/* The table's header fields. The trunk is the parent's layers 0..cut:
 * the catalog names the parent variant (default "base") as the trunk and
 * lists it in depends_on. */
static void table_start(run *r)
{
    const prn_retarget_opts *o = r->o;
    cJSON *t = r->table;
    cJSON_AddStringToObject(t, "cut", r->pts[0].sel);
    cJSON_AddNumberToObject(t, "cut_layer", r->pts[0].cut);
    cJSON_AddStringToObject(t, "trunk", o->trunk_id);
    cJSON_AddStringToObject(t, "trunk_task", r->t[r->tt].name);
    cJSON_AddStringToObject(t, "head", r->pts[0].head ? r->pts[0].head : "");
    cJSON_AddNumberToObject(t, "train_vectors", (double)r->n_cached);
    cJSON_AddStringToObject(t, "split", trn_split_name(r->held));
    r->rows = cJSON_AddArrayToObject(t, "tasks");
    if (o->sweep) {
        cJSON_AddNumberToObject(t, "budget", o->budget);
        cJSON_AddStringToObject(t, "chosen_on", trn_split_name(TRN_SPLIT_VALID));
        r->srows = cJSON_AddArrayToObject(t, "sweep");
    }
}

/* Appends n trunk outputs at cut of split s (augmented or not) to f. */
static int cache_split(run *r, int cut, trn_split s, int augment, size_t n, prn_features *f, trn_err *err)
{
    trn_loader_opts lo = r->lo;
    lo.augment = augment;
    lo.shuffle = 0;
    if (!(r->fd.l = trn_loader_open(r->t[0].ds, s, &lo, err))) return -1;
    int rc = prn_features_add(r->base, cut, next_images, &r->fd, 0, n, f, err);
    trn_loader_close(r->fd.l);
    r->fd.l = NULL;
    return rc;
}

/* The cached trunk outputs at cut: clean training pass, augmented passes,
 * clean held-out pass, clean valid pass for a sweep. */
static int cache(run *r, int cut, trn_err *err)
{
    const int aug = r->o->head.aug_passes;
    prn_features_free(&r->ftr);
    prn_features_free(&r->fte);
    prn_features_free(&r->fva);
    if (cache_split(r, cut, TRN_SPLIT_TRAIN, 0, r->n_tr, &r->ftr, err) ||
        (aug > 0 && cache_split(r, cut, TRN_SPLIT_TRAIN, 1, r->n_tr * (size_t)aug, &r->ftr, err)) ||
        cache_split(r, cut, r->held, 0, r->n_te, &r->fte, err))
        return -1;
    return r->o->sweep ? cache_split(r, cut, TRN_SPLIT_VALID, 0, r->n_va, &r->fva, err) : 0;
}

static uint64_t count_correct(const int *pred, const int *want, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++) c += pred[i] == want[i];
    return c;
}

/* {"images", "correct", "top1", "top1_lo", "top1_hi"} added to obj. */
static void add_acc(cJSON *obj, const char *prefix, uint64_t correct, size_t n)
{
    double lo, hi, top1 = n ? (double)correct / (double)n : 0;
    trn_wilson(correct, n, &lo, &hi);
    static const char *const key[] = {"images", "correct", "top1", "top1_lo", "top1_hi"};
    const double val[] = {(double)n, (double)correct, top1, lo, hi};
    for (int i = 0; i < 5; i++) {
        char k[64];
        snprintf(k, sizeof k, "%s%s", prefix, key[i]);
        cJSON_AddNumberToObject(obj, k, val[i]);
    }
}

static double num(const cJSON *o, const char *k)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItem(o, k));
}

/* What training one head came to besides its variant. */
typedef struct trained {
    uint64_t correct, vcorrect; /* right on the held-out and valid splits */
    float l0, l1;               /* mean loss of the first and last tenth */
} trained;

/* Trains task k's head at point q into *pv. */
static int train_head(run *r, int q, int k, prn_variant *pv, trained *tr, trn_err *err)
{
    const task *t = &r->t[k];
    prn_head_opts hq = r->o->head;
    hq.with = r->pts[q].head;
    hq.seed = r->o->seed;
    trn_cfg *hc = NULL;
    trn_net *hn = NULL;
    int rc = -1;
    if (prn_head_train(&r->ftr, t->train, trn_dataset_classes(t->ds), &hq, &hc, &hn, &tr->l0, &tr->l1, err) != 0 ||
        prn_head_predict(hn, &r->fte, r->pred, NULL, err) != 0) {
        trn_err_prefix(err, "task '%s' at %s", t->name, r->pts[q].sel);
        goto out;
    }
    tr->correct = count_correct(r->pred, t->test, r->n_te);
    if (r->o->sweep) {
        if (prn_head_predict(hn, &r->fva, r->pred, NULL, err) != 0) goto out;
        tr->vcorrect = count_correct(r->pred, t->valid, r->n_va);
    }
    if (prn_retarget_variant(r->cfg, r->base, r->pts[q].cut, hc, hn, r->o->trunk_id, pv, err) != 0) {
        trn_err_prefix(err, "task '%s' at %s", t->name, r->pts[q].sel);
        goto out;
    }
    pv->parent = r->o->trunk_id;
    rc = 0;
out:
    trn_cfg_free(hc);
    trn_net_free(hn);
    return rc;
}

/* The fields of task k's head at point q (its meta.json). */
static void add_fields(const run *r, int q, int k, cJSON *f, const trained *tr)
{
    const prn_retarget_opts *o = r->o;
    const task *t = &r->t[k];
    cJSON_AddStringToObject(f, "task", t->name);
    cJSON_AddStringToObject(f, "data", t->file);
    cJSON_AddNumberToObject(f, "classes", trn_dataset_classes(t->ds));
    cJSON_AddStringToObject(f, "cut", r->pts[q].sel);
    cJSON_AddStringToObject(f, "head_with", r->pts[q].head ? r->pts[q].head : "");
    cJSON_AddNumberToObject(f, "batches", o->head.batches);
    cJSON_AddNumberToObject(f, "batch", o->head.batch);
    cJSON_AddNumberToObject(f, "aug_passes", o->head.aug_passes);
    cJSON_AddNumberToObject(f, "seed", (double)o->seed);
    cJSON_AddNumberToObject(f, "loss_first", tr->l0);
    cJSON_AddNumberToObject(f, "loss_last", tr->l1);
    cJSON *a = cJSON_AddObjectToObject(f, "heldout");
    cJSON_AddStringToObject(a, "split", trn_split_name(r->held));
    add_acc(a, "", tr->correct, r->n_te);
    if (o->sweep) {
        cJSON *sv = cJSON_AddObjectToObject(f, "chosen_on");
        cJSON_AddStringToObject(sv, "split", trn_split_name(TRN_SPLIT_VALID));
        add_acc(sv, "", tr->vcorrect, r->n_va);
        cJSON_AddNumberToObject(f, "budget", o->budget);
    }
}

/* A row of the table: the task's head at point q (the "tasks" rows give
 * q < 0: the kept head, no sweep fields). */
static cJSON *head_row(const run *r, int q, int k, const prn_retarget_report *h, uint64_t correct, uint64_t vcorrect)
{
    cJSON *row = cJSON_CreateObject();
    const prn_retarget_point *p = &r->pts[q < 0 ? r->best[k] : q];
    cJSON_AddStringToObject(row, "task", r->t[k].name);
    cJSON_AddStringToObject(row, "cut", p->sel);
    cJSON_AddNumberToObject(row, "cut_layer", p->cut);
    if (q >= 0) cJSON_AddStringToObject(row, "head", p->head ? p->head : "");
    cJSON_AddNumberToObject(row, "classes", h->classes);
    cJSON_AddNumberToObject(row, "head_macs", h->head_macs);
    cJSON_AddNumberToObject(row, "head_params", h->head_params);
    cJSON_AddNumberToObject(row, "macs_fraction", h->macs_fraction);
    cJSON_AddNumberToObject(row, "params_fraction", h->params_fraction);
    add_acc(row, "", correct, r->n_te);
    if (q >= 0 && r->o->sweep) {
        add_acc(row, "valid_", vcorrect, r->n_va);
        cJSON_AddBoolToObject(row, "within_budget", h->within);
    }
    return row;
}

/* The report of task k's head in variant fields f. */
static void describe(const run *r, int k, const cJSON *f, prn_retarget_report *h)
{
    const cJSON *c = cJSON_GetObjectItem(f, "head");
    memset(h, 0, sizeof *h);
    h->event = PRN_RETARGET_HEAD;
    h->sweep = r->o->sweep;
    h->task = r->t[k].name;
    h->classes = trn_dataset_classes(r->t[k].ds);
    h->head_macs = num(c, "macs");
    h->head_params = num(c, "params");
    h->macs_fraction = num(c, "macs_fraction");
    h->params_fraction = num(c, "params_fraction");
    h->within = h->macs_fraction <= r->o->budget + 1e-12 && h->params_fraction <= r->o->budget + 1e-12;
}

static void tell(const run *r, const prn_retarget_report *h)
{
    if (r->o->progress) r->o->progress(r->o->progress_ctx, h);
}

/* Trains task k's head at point q, reports it, and keeps it when it is
 * the most accurate on valid within the budget so far (over budget only
 * while none within it was seen; ties: the earlier point). */
static int head_at(run *r, int q, int k, trn_err *err)
{
    prn_variant pv;
    memset(&pv, 0, sizeof pv);
    trained tr = {0};
    if (train_head(r, q, k, &pv, &tr, err)) return -1;
    prn_retarget_report h;
    describe(r, k, pv.fields, &h);
    add_fields(r, q, k, pv.fields, &tr);
    h.sel = r->pts[q].sel;
    trn_wilson(tr.correct, r->n_te, &h.lo, &h.hi);
    h.top1 = (double)tr.correct / (double)r->n_te;
    h.valid_top1 = r->o->sweep ? (double)tr.vcorrect / (double)r->n_va : 0;
    cJSON *row = head_row(r, q, k, &h, tr.correct, tr.vcorrect);
    tell(r, &h);
    if (r->best[k] < 0 || h.within > r->best_within[k] || (h.within == r->best_within[k] && h.valid_top1 > r->bestv[k])) {
        prn_variant_free(&r->v[k]);
        r->v[k] = pv;
        r->best[k] = q;
        r->best_within[k] = h.within;
        r->bestv[k] = h.valid_top1;
    } else
        prn_variant_free(&pv);
    if (!r->srows) return cJSON_Delete(row), 0;
    cJSON_AddNumberToObject(row, "point", q);
    cJSON_AddItemToArray(r->srows, row);
    return 0;
}

/* The sweep's rows say which head each task keeps; the "tasks" rows (one
 * per task) are the kept heads, reported with KEEP in a sweep. */
static void finish(run *r)
{
    cJSON *row;
    cJSON_ArrayForEach(row, r->srows) {
        int q = (int)num(row, "point"), kept = 0;
        const char *tn = cJSON_GetStringValue(cJSON_GetObjectItem(row, "task"));
        for (int k = 0; k < r->nt; k++) kept |= k != r->tt && tn && !strcmp(tn, r->t[k].name) && r->best[k] == q;
        cJSON_AddBoolToObject(row, "kept", kept);
    }
    for (int k = 0; k < r->nt; k++) {
        if (k == r->tt) continue;
        prn_retarget_report h;
        describe(r, k, r->v[k].fields, &h);
        uint64_t correct = (uint64_t)num(cJSON_GetObjectItem(r->v[k].fields, "heldout"), "correct");
        cJSON_AddItemToArray(r->rows, head_row(r, -1, k, &h, correct, 0));
        h.event = PRN_RETARGET_KEEP;
        h.sel = r->pts[r->best[k]].sel;
        h.valid_top1 = r->bestv[k];
        h.within = r->best_within[k];
        if (r->o->sweep) tell(r, &h);
    }
}

/* Everything trained: the variant folders, then the table. */
static int write_out(const run *r, trn_err *err)
{
    for (int k = 0; k < r->nt; k++) {
        if (k == r->tt) continue;
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%.63s", r->o->out, r->t[k].name); /* a name is < 64 */
        if (prn_variant_write(&r->v[k], dir, err) != 0) return -1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/retarget.json", r->o->out);
    return prn_write_json(path, r->table, err);
}

static void run_free(run *r)
{
    for (int k = 0; k < r->nt; k++) {
        trn_dataset_close(r->t[k].ds);
        free(r->t[k].train);
        free(r->t[k].test);
        free(r->t[k].valid);
        prn_variant_free(&r->v[k]);
    }
    trn_loader_close(r->fd.l);
    free(r->fd.y);
    free(r->pred);
    cJSON_Delete(r->table);
    prn_features_free(&r->ftr);
    prn_features_free(&r->fte);
    prn_features_free(&r->fva);
    prn_plan_free(r->plan);
    trn_net_free(r->base);
    trn_cfg_free(r->cfg);
    free(r);
}

/* Every point: the trunk's outputs at its cut (shared with the previous
 * point at the same cut), then a head per task but the trunk's. */
static int train_all(run *r, trn_err *err)
{
    for (int q = 0; q < r->o->npoints; q++) {
        if ((q == 0 || r->pts[q - 1].cut != r->pts[q].cut) && cache(r, r->pts[q].cut, err)) return -1;
        for (int k = 0; k < r->nt; k++)
            if (k != r->tt && head_at(r, q, k, err)) return -1;
    }
    return 0;
}

int prn_retarget_run(const prn_retarget_opts *o, prn_retarget_summary *s, trn_err *err)
{
    if (o->npoints < 1 || o->npoints > MAX_POINTS)
        return trn_errf(err, "prn_retarget_run: %d points (give 1 to %d: prn_retarget_points)", o->npoints, MAX_POINTS);
    run *r = calloc(1, sizeof *r);
    if (!r) return trn_errf(err, "out of memory");
    r->o = o;
    r->cutopt = o->sweep ? "--cuts" : "--cut";
    memcpy(r->pts, o->pts, sizeof r->pts);
    int rc = -1;
    if (load(r, err) || alloc_labels(r, err)) goto out;
    table_start(r);
    tell(r, &(prn_retarget_report){.event = PRN_RETARGET_START, .sweep = o->sweep});
    if (train_all(r, err)) goto out;
    finish(r);
    if (write_out(r, err)) goto out;
    if (s) *s = (prn_retarget_summary){r->nt - 1, o->npoints, r->pts[0].cut, r->ftr.n};
    rc = 0;
out:
    run_free(r);
    return rc;
}
