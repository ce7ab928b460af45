/*
 * specialise.c: MCDNN's (n,p) specialisation (section 4.1.2; `prune
 * specialise` parses, calls prn_specialise, prints) over the representative
 * contexts that `dataset contexts` wrote. For every context (n classes of
 * the set plus "other", in-context fraction p), the layers above the cut
 * of the model (by default only the last [connected] classifier and its
 * softmax, docs/design.md's decision) are retrained for n+1 outputs on the
 * frozen lower layers, from the model's outputs at the cut, computed once
 * for every image of the base set and looked up by image (a context stream
 * lists images of the set, its "other" entries through links, resolved
 * with realpath).
 *
 * Scored on each context's test stream:
 *   in-context top-1: the specialised model on the stream's in-context
 *     images (an answer of "other" is wrong), MCDNN Table 4's first number;
 *   overall (cascade): the specialised model answers unless it says
 *     "other"; then the generic model answers (its cost counted for those
 *     inputs); right when the answer is the image's identity;
 *   generic: the generic model alone on the same stream;
 *   specialised_on_stream: the specialised model's own top-1 over its n+1
 *     labels on the stream (what `trainer valid` on the context's .data
 *     reports for the variant).
 * The cascade's expected MACs per input = specialised MACs + (share sent
 * on) x (generic MACs, less the trunk when the generic model is the model
 * itself: its layers up to the cut are already computed).
 */
#include "prn_impl.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SP_BATCH 64

/* the gate's sweep (reported, not applied): overall top-1 and the share sent on */
static const double sweep[] = {0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99};
enum { NSWEEP = sizeof sweep / sizeof *sweep };

typedef struct ctx {
    char id[64];
    int n;
    double p;
    char path[4096];
} ctx;

typedef struct ref {
    char *real;
    size_t index;
} ref;

/* One split of the base set: its images by real path, the model's outputs
 * at the cut and the generic model's answers. */
typedef struct sp_split {
    ref *refs;
    size_t n;
    prn_features f;
    int *gpred;
} sp_split;

/* What every context shares. */
typedef struct sp_state {
    const prn_specialise_opts *o;
    ctx *cx;
    prn_variant *v;
    int nc, cut, classes;
    trn_cfg *cfg, *gcfg;
    trn_net *base, *gen, *g;
    trn_dataset *ds;
    prn_plan *plan;
    sp_split tr, te, va;
    trn_loader_opts lo;
    uint64_t fall_macs;
    size_t dim;
    cJSON *table, *rows;
} sp_state;

/* One context's work. */
typedef struct sp_ctx {
    const ctx *x;
    trn_dataset *cds;
    int k, map[256];
    size_t mtr, mte, mva;
    prn_features ctr, cte, cva;
    int *labels, *tidx, *spred, *vpred, *vidx;
    float *sconf, *vconf;
    float l0, l1;
    double gate;
    uint64_t va_ok[NSWEEP], sw_ok[NSWEEP], sw_sent[NSWEEP];
    uint64_t in_n, in_ok, casc, gen_ok, sent, own, gen_in_ok, casc_in_ok;
} sp_ctx;

static int ref_cmp(const void *a, const void *b)
{
    return strcmp(((const ref *)a)->real, ((const ref *)b)->real);
}

/* The images of split s of ds by real path, sorted. */
static ref *index_split(const trn_dataset *ds, trn_split s, size_t *n, trn_err *err)
{
    *n = trn_dataset_count(ds, s);
    ref *r = calloc(*n ? *n : 1, sizeof *r);
    if (!r) return trn_errf(err, "out of memory"), NULL;
    for (size_t i = 0; i < *n; i++) {
        r[i].index = i;
        if (!(r[i].real = realpath(trn_dataset_path(ds, s, i), NULL))) {
            trn_errf(err, "%s: cannot resolve (%s)", trn_dataset_path(ds, s, i), strerror(errno));
            for (size_t k = 0; k < i; k++) free(r[k].real);
            free(r);
            return NULL;
        }
    }
    qsort(r, *n, sizeof *r, ref_cmp);
    return r;
}

static void free_split(sp_split *s)
{
    for (size_t i = 0; s->refs && i < s->n; i++) free(s->refs[i].real);
    free(s->refs);
    prn_features_free(&s->f);
    free(s->gpred);
}

/* Index in the base split of a context image; -1 with err when absent. */
static long lookup(const ref *r, size_t n, const char *path, const char *what, trn_err *err)
{
    char *real = realpath(path, NULL);
    if (!real) return trn_errf(err, "%s: %s: cannot resolve (%s)", what, path, strerror(errno));
    ref key = {real, 0};
    const ref *hit = bsearch(&key, r, n, sizeof *r, ref_cmp);
    free(real);
    if (!hit)
        return trn_errf(err, "%s: %s is not an image of the base set's split: give the contexts "
                        "of --data (dataset contexts)", what, path);
    return (long)hit->index;
}

/* One "id n p data-file" line into *x; -1 with err. */
static int parse_context(const char *path, int line, const char *p, ctx *x, trn_err *err)
{
    char id[64], file[2048];
    int nn;
    double pp;
    if (sscanf(p, "%63s %d %lf %2047s", id, &nn, &pp, file) != 4 || nn < 1 || !(pp > 0 && pp < 1))
        return trn_errf(err, "%s:%d: expected \"id n p data-file\" (n >= 1, 0 < p < 1)", path, line);
    const char *slash = strrchr(path, '/');
    snprintf(x->id, sizeof x->id, "%s", id);
    x->n = nn;
    x->p = pp;
    if (file[0] == '/' || !slash)
        snprintf(x->path, sizeof x->path, "%s", file);
    else
        snprintf(x->path, sizeof x->path, "%.*s/%s", (int)(slash - path), path, file);
    return 0;
}

static int read_contexts(const char *path, ctx *c, int *n, trn_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    if (trn_read_file(path, (size_t)1 << 20, &buf, &len, err) != 0) return -1;
    int line = 0, rc = 0;
    *n = 0;
    for (char *p = buf, *e; p && *p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        if (e) *e = 0;
        line++;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        if (*n == PRN_SPECIALISE_MAX_CONTEXTS) {
            ctx spare;
            if ((rc = parse_context(path, line, p, &spare, err)) != 0) break;
            rc = trn_errf(err, "%s:%d: more than %d contexts", path, line, PRN_SPECIALISE_MAX_CONTEXTS);
            break;
        }
        if ((rc = parse_context(path, line, p, &c[*n], err)) != 0) break;
        (*n)++;
    }
    free(buf);
    if (!rc && !*n) rc = trn_errf(err, "%s: lists no context", path);
    return rc;
}

typedef struct feed {
    trn_loader *l;
    float *y;
} feed;

static int next_images(void *c, uint64_t step, float *x, trn_err *err)
{
    feed *f = c;
    return trn_loader_get(f->l, step, x, f->y, err);
}

/* Top-1 of every image of split s under net (full forward). */
static int predict_split(trn_net *net, const trn_dataset *ds, trn_split s, const trn_loader_opts *lo,
                         int *pred, trn_err *err)
{
    trn_loader_opts o = *lo;
    o.augment = 0;
    o.shuffle = 0;
    o.batch = trn_net_batch(net);
    size_t n = trn_dataset_count(ds, s), b = (size_t)o.batch, classes = trn_net_outputs(net);
    trn_loader *l = trn_loader_open(ds, s, &o, err);
    float *x = malloc(b * trn_net_inputs(net) * sizeof *x);
    float *y = malloc(b * (size_t)trn_dataset_classes(ds) * sizeof *y);
    int rc = -1;
    if (!l || !x || !y) {
        if (l) trn_errf(err, "out of memory");
        goto out;
    }
    for (size_t step = 0; step * b < n; step++) {
        if (trn_loader_get(l, step, x, y, err) != 0 || trn_net_forward(net, x, err) != 0) goto out;
        const float *out = trn_net_output(net);
        for (size_t j = 0; j < b && step * b + j < n; j++)
            pred[step * b + j] = trn_argmax(out + j * classes, (int)classes);
    }
    rc = 0;
out:
    trn_loader_close(l);
    free(x);
    free(y);
    return rc;
}

static void add_score(cJSON *o, const char *name, uint64_t k, uint64_t n)
{
    double lo, hi;
    trn_wilson(k, n, &lo, &hi);
    cJSON *a = cJSON_AddObjectToObject(o, name);
    cJSON_AddNumberToObject(a, "images", (double)n);
    cJSON_AddNumberToObject(a, "correct", (double)k);
    cJSON_AddNumberToObject(a, "top1", n ? (double)k / (double)n : 0);
    cJSON_AddNumberToObject(a, "top1_lo", lo);
    cJSON_AddNumberToObject(a, "top1_hi", hi);
}

static uint64_t net_macs(const trn_net *net)
{
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    return t.macs;
}

/* The trunk's last layer: o->cut, or the classifier's input. */
static int choose_cut(sp_state *s, trn_err *err)
{
    const prn_specialise_opts *o = s->o;
    int nl = prn_plan_layers(s->plan), cut = -1;
    if (o->cut) {
        if ((cut = prn_select(s->plan, o->cut, err)) < 0) return trn_err_prefix(err, "--cut"), -1;
    } else {
        for (int i = 0; i < nl; i++)
            if (prn_plan_layer(s->plan, i)->classifier) cut = i - 1;
        if (cut < 0)
            return trn_errf(err, "%s has no [connected] classifier above another layer: give --cut", o->cfg);
    }
    if (cut >= nl - 1)
        return trn_errf(err, "--cut %s is L%d, the last layer: the trunk must end below the output",
                        o->cut ? o->cut : "", cut);
    s->cut = cut;
    return 0;
}

/* The contexts, the models, the cut and the base set's splits. */
static int load(sp_state *s, trn_err *err)
{
    const prn_specialise_opts *o = s->o;
    if (read_contexts(o->contexts, s->cx, &s->nc, err) != 0) return -1;
    if (!(s->cfg = trn_cfg_read(o->cfg, err)) || !(s->plan = prn_plan_create(s->cfg, err))) return -1;
    if (choose_cut(s, err) != 0) return -1;
    if (!(s->base = prn_load_base(s->cfg, o->weights, SP_BATCH, err))) return -1;
    if (o->generic_cfg && (!(s->gcfg = trn_cfg_read(o->generic_cfg, err)) ||
                           !(s->gen = prn_load_base(s->gcfg, o->generic_weights, SP_BATCH, err))))
        return -1;
    s->g = s->gen ? s->gen : s->base;
    if (!(s->ds = trn_dataset_open(o->data, err))) return -1;
    s->classes = trn_dataset_classes(s->ds);
    if ((size_t)s->classes != trn_net_outputs(s->base) || (size_t)s->classes != trn_net_outputs(s->g))
        return trn_errf(err, "%s has %d classes but the model answers %zu and the generic model %zu: "
                        "give the set the models were trained on", o->data, s->classes,
                        trn_net_outputs(s->base), trn_net_outputs(s->g));
    if (!trn_dataset_has(s->ds, TRN_SPLIT_TEST)) return trn_errf(err, "%s names no test split", o->data);
    if (!(s->tr.refs = index_split(s->ds, TRN_SPLIT_TRAIN, &s->tr.n, err)) ||
        !(s->te.refs = index_split(s->ds, TRN_SPLIT_TEST, &s->te.n, err)))
        return -1;
    if (o->gate_valid && !trn_dataset_has(s->ds, TRN_SPLIT_VALID))
        return trn_errf(err, "%s names no valid split: gate=valid chooses each gate on the contexts' valid "
                        "streams (give a gate, or a set with a valid split)", o->data);
    if (o->gate_valid && !(s->va.refs = index_split(s->ds, TRN_SPLIT_VALID, &s->va.n, err))) return -1;
    return 0;
}

/* The model's outputs at the cut for n images of split `split` (augmented
 * or not), appended to f. */
static int cut_outputs(sp_state *s, trn_split split, int augment, size_t n, feed *fd, prn_features *f,
                       trn_err *err)
{
    trn_loader_opts po = s->lo;
    po.augment = augment;
    if (!(fd->l = trn_loader_open(s->ds, split, &po, err))) return -1;
    int rc = prn_features_add(s->base, s->cut, next_images, fd, 0, n, f, err);
    trn_loader_close(fd->l);
    fd->l = NULL;
    return rc;
}

/* The generic model's answers on a split of the base set. */
static int generic_answers(sp_state *s, trn_split split, sp_split *p, trn_err *err)
{
    if (!(p->gpred = malloc((p->n ? p->n : 1) * sizeof *p->gpred))) return trn_errf(err, "out of memory");
    return predict_split(s->g, s->ds, split, &s->lo, p->gpred, err);
}

/* The model's outputs at the cut, once for every image of the set, and the
 * generic model's answers on the test (and valid) split. */
static int base_features(sp_state *s, trn_err *err)
{
    const prn_specialise_opts *o = s->o;
    if (prn_loader_opts(s->base, o->cfg, SP_BATCH, o->seed, o->threads, 0, &s->lo, err)) return -1;
    s->lo.shuffle = 0;
    feed fd = {0};
    int rc = -1;
    if (!(fd.y = malloc((size_t)SP_BATCH * (size_t)s->classes * sizeof *fd.y))) return trn_errf(err, "out of memory");
    for (int pass = 0; pass < 1 + (o->head.aug_passes > 0); pass++) {
        size_t n = pass ? s->tr.n * (size_t)o->head.aug_passes : s->tr.n;
        if (cut_outputs(s, TRN_SPLIT_TRAIN, pass > 0, n, &fd, &s->tr.f, err) != 0) goto out;
    }
    if (cut_outputs(s, TRN_SPLIT_TEST, 0, s->te.n, &fd, &s->te.f, err) != 0 ||
        generic_answers(s, TRN_SPLIT_TEST, &s->te, err) != 0)
        goto out;
    if (o->gate_valid && (cut_outputs(s, TRN_SPLIT_VALID, 0, s->va.n, &fd, &s->va.f, err) != 0 ||
                          generic_answers(s, TRN_SPLIT_VALID, &s->va, err) != 0))
        goto out;
    rc = 0;
out:
    free(fd.y);
    return rc;
}

/* The table's head: the models, the cut, the generic model's test score. */
static int table_head(sp_state *s, trn_err *err)
{
    const prn_specialise_opts *o = s->o;
    uint64_t gcorrect = 0;
    for (size_t i = 0; i < s->te.n; i++)
        gcorrect += s->te.gpred[i] == trn_dataset_class(s->ds, TRN_SPLIT_TEST, i);
    uint64_t trunk_macs = 0;
    for (int i = 0; i <= s->cut; i++) trunk_macs += prn_plan_layer(s->plan, i)->macs;
    uint64_t gmacs = net_macs(s->g);
    s->fall_macs = s->gen ? gmacs : gmacs - trunk_macs;
    s->dim = (size_t)s->tr.f.shape.c * s->tr.f.shape.h * s->tr.f.shape.w;
    if (!(s->table = cJSON_CreateObject())) return trn_errf(err, "out of memory");
    cJSON_AddStringToObject(s->table, "model", o->cfg);
    cJSON_AddNumberToObject(s->table, "cut_layer", s->cut);
    cJSON_AddStringToObject(s->table, "head", o->head_text ? o->head_text : "");
    cJSON_AddStringToObject(s->table, "generic", o->generic_cfg ? o->generic_cfg : o->cfg);
    cJSON_AddNumberToObject(s->table, "model_macs", (double)net_macs(s->base));
    cJSON_AddNumberToObject(s->table, "generic_macs", (double)gmacs);
    cJSON_AddNumberToObject(s->table, "fallthrough_macs", (double)s->fall_macs);
    add_score(s->table, "generic_test", gcorrect, s->te.n);
    if (!(s->rows = cJSON_AddArrayToObject(s->table, "contexts"))) return trn_errf(err, "out of memory");
    return 0;
}

/* The context's data set: n classes of the base set's, then "other". */
static int context_open(sp_state *s, sp_ctx *c, trn_err *err)
{
    const ctx *x = c->x;
    if (!(c->cds = trn_dataset_open(x->path, err))) return -1;
    int k = c->k = trn_dataset_classes(c->cds) - 1;
    if (k != x->n || strcmp(trn_dataset_label(c->cds, k), "other"))
        return trn_errf(err, "%s: expected %d classes and \"other\" last (n = %d in %s)", x->path, x->n + 1,
                        x->n, s->o->contexts);
    if (k > 255) return trn_errf(err, "%s: more than 255 context classes", x->path);
    for (int q = 0; q < k; q++) {
        c->map[q] = -1;
        for (int b = 0; b < s->classes; b++)
            if (!strcmp(trn_dataset_label(s->ds, b), trn_dataset_label(c->cds, q))) c->map[q] = b;
        if (c->map[q] < 0)
            return trn_errf(err, "%s: class '%s' is not a class of %s", x->path, trn_dataset_label(c->cds, q),
                            s->o->data);
    }
    c->mtr = trn_dataset_count(c->cds, TRN_SPLIT_TRAIN);
    c->mte = trn_dataset_count(c->cds, TRN_SPLIT_TEST);
    if (c->mtr < 1 || c->mte < 1) return trn_errf(err, "%s: needs training and test images", x->path);
    return 0;
}

/* The base features of the context's stream `split` into f (f->n set),
 * each copied `passes` times from the base split's passes; the base index
 * of each image into idx (NULL: not kept), its label into labels (NULL:
 * not kept). */
static int gather(const sp_state *s, const sp_ctx *c, trn_split split, const sp_split *from, size_t passes,
                  prn_features *f, int *idx, int *labels, trn_err *err)
{
    size_t m = f->n / passes;
    char what[4200];
    snprintf(what, sizeof what, "%s (%s)", c->x->path, trn_split_name(split));
    for (size_t i = 0; i < m; i++) {
        long b = lookup(from->refs, from->n, trn_dataset_path(c->cds, split, i), what, err);
        if (b < 0) return -1;
        for (size_t p = 0; p < passes; p++) {
            memcpy(f->x + (p * m + i) * s->dim, from->f.x + (p * from->n + (size_t)b) * s->dim,
                   s->dim * sizeof(float));
            if (labels) labels[p * m + i] = trn_dataset_class(c->cds, split, i);
        }
        if (idx) idx[i] = (int)b;
    }
    return 0;
}

/* Room for a stream of m images' features, on the base set's shape. */
static int features_alloc(prn_features *f, const prn_features *like, size_t m, size_t dim)
{
    f->shape = like->shape;
    f->n = m;
    return (f->x = malloc((m ? m : 1) * dim * sizeof(float))) ? 0 : -1;
}

/* The context's streams: training (with its augmented passes), test and,
 * for gate=valid, valid. */
static int context_streams(const sp_state *s, sp_ctx *c, trn_err *err)
{
    size_t passes = 1 + (size_t)s->o->head.aug_passes;
    if (features_alloc(&c->ctr, &s->tr.f, c->mtr * passes, s->dim) || features_alloc(&c->cte, &s->tr.f, c->mte, s->dim) ||
        !(c->labels = malloc(c->ctr.n * sizeof *c->labels)) || !(c->tidx = malloc(c->mte * sizeof *c->tidx)) ||
        !(c->spred = malloc(c->mte * sizeof *c->spred)) || !(c->sconf = malloc(c->mte * sizeof *c->sconf)))
        return trn_errf(err, "out of memory");
    if (gather(s, c, TRN_SPLIT_TRAIN, &s->tr, passes, &c->ctr, NULL, c->labels, err) != 0 ||
        gather(s, c, TRN_SPLIT_TEST, &s->te, 1, &c->cte, c->tidx, NULL, err) != 0)
        return -1;
    if (!s->o->gate_valid) return 0;
    if ((c->mva = trn_dataset_count(c->cds, TRN_SPLIT_VALID)) < 1)
        return trn_errf(err, "%s: no valid stream: gate=valid chooses the gate on it", c->x->path);
    if (features_alloc(&c->cva, &s->va.f, c->mva, s->dim) || !(c->vpred = malloc(c->mva * sizeof *c->vpred)) ||
        !(c->vconf = malloc(c->mva * sizeof *c->vconf)) || !(c->vidx = malloc(c->mva * sizeof *c->vidx)))
        return trn_errf(err, "out of memory");
    return gather(s, c, TRN_SPLIT_VALID, &s->va, 1, &c->cva, c->vidx, NULL, err);
}

/* Trains the context's head, answers its streams, builds its variant. */
static int context_train(sp_state *s, sp_ctx *c, prn_variant *v, trn_err *err)
{
    trn_cfg *hc = NULL;
    trn_net *hn = NULL;
    int rc = 0;
    if (prn_head_train(&c->ctr, c->labels, c->k + 1, &s->o->head, &hc, &hn, &c->l0, &c->l1, err) != 0 ||
        prn_head_predict(hn, &c->cte, c->spred, c->sconf, err) != 0 ||
        (s->o->gate_valid && prn_head_predict(hn, &c->cva, c->vpred, c->vconf, err) != 0) ||
        prn_retarget_variant(s->cfg, s->base, s->cut, hc, hn, s->o->parent, v, err) != 0)
        rc = -1;
    else
        v->parent = s->o->parent;
    trn_cfg_free(hc);
    trn_net_free(hn);
    return rc;
}

/* The cascade's gate: the option's, or with gate=valid the sweep's gate
 * with the best cascade on the context's valid stream (ties: the lower
 * gate, fewer sent on). */
static void choose_gate(const sp_state *s, sp_ctx *c)
{
    c->gate = s->o->gate;
    if (!s->o->gate_valid) return;
    for (size_t i = 0; i < c->mva; i++) {
        int id = trn_dataset_class(s->ds, TRN_SPLIT_VALID, (size_t)c->vidx[i]);
        for (int q = 0; q < NSWEEP; q++) {
            int f = c->vpred[i] == c->k || c->vconf[i] < sweep[q];
            c->va_ok[q] += (f ? s->va.gpred[c->vidx[i]] : c->map[c->vpred[i]]) == id;
        }
    }
    int bq = 0;
    for (int q = 1; q < NSWEEP; q++)
        if (c->va_ok[q] > c->va_ok[bq]) bq = q;
    c->gate = sweep[bq];
}

/* The counts of the context's test stream (and of the gate's sweep). */
static void context_score(const sp_state *s, sp_ctx *c)
{
    const int *gpred = s->te.gpred, *map = c->map;
    int k = c->k;
    for (size_t i = 0; i < c->mte; i++) {
        int b = c->tidx[i], id = trn_dataset_class(s->ds, TRN_SPLIT_TEST, (size_t)b);
        int inside = trn_dataset_class(c->cds, TRN_SPLIT_TEST, i) < k;
        int falls = c->spred[i] == k || c->sconf[i] < c->gate;
        int answer = !falls ? map[c->spred[i]] : gpred[b];
        for (int q = 0; q < NSWEEP; q++) {
            int f = c->spred[i] == k || c->sconf[i] < sweep[q];
            c->sw_sent[q] += f;
            c->sw_ok[q] += (f ? gpred[b] : map[c->spred[i]]) == id;
        }
        c->sent += falls;
        c->own += c->spred[i] == trn_dataset_class(c->cds, TRN_SPLIT_TEST, i);
        c->in_n += inside;
        c->in_ok += inside && c->spred[i] < k && map[c->spred[i]] == id;
        c->casc += answer == id;
        c->casc_in_ok += inside && answer == id;
        c->gen_ok += gpred[b] == id;
        c->gen_in_ok += inside && gpred[b] == id;
    }
}

/* The variant's meta.json: what it was specialised to, its cascade and
 * its scores. */
static int context_fields(const sp_state *s, const sp_ctx *c, prn_variant *v, double share, double emacs,
                          trn_err *err)
{
    const prn_specialise_opts *o = s->o;
    const ctx *x = c->x;
    v->technique = "specialised";
    free(v->description);
    char desc[256];
    snprintf(desc, sizeof desc, "specialised to context %s (n=%d, p=%g): L%d.. retrained for "
             "%d classes + other on the frozen lower layers", x->id, x->n, x->p, s->cut + 1, c->k);
    if (!(v->description = strdup(desc))) return trn_errf(err, "out of memory");
    cJSON *f = v->fields;
    cJSON_DeleteItemFromObject(f, "head");
    cJSON *cj = cJSON_AddObjectToObject(f, "context");
    cJSON_AddStringToObject(cj, "id", x->id);
    cJSON_AddNumberToObject(cj, "n", x->n);
    cJSON_AddNumberToObject(cj, "p", x->p);
    cJSON *cl = cJSON_AddArrayToObject(cj, "classes");
    for (int q = 0; q < c->k; q++) cJSON_AddItemToArray(cl, cJSON_CreateNumber(c->map[q]));
    cJSON_AddNumberToObject(cj, "other_class", c->k);
    cJSON_AddStringToObject(cj, "data", trn_data_name(x->path));
    cJSON *cc = cJSON_AddObjectToObject(f, "cascade");
    cJSON_AddStringToObject(cc, "partner", o->generic_cfg ? "base" : o->parent);
    cJSON_AddStringToObject(cc, "on", "other");
    cJSON_AddNumberToObject(cc, "gate", c->gate);
    if (o->gate_valid) {
        int bq = 0;
        while (sweep[bq] != c->gate) bq++;
        cJSON *gv = cJSON_AddObjectToObject(cc, "gate_chosen_on");
        cJSON_AddStringToObject(gv, "split", "valid");
        add_score(gv, "overall", c->va_ok[bq], c->mva);
    }
    cJSON_AddNumberToObject(cc, "sent_share", share);
    cJSON_AddNumberToObject(cc, "expected_macs", emacs);
    cJSON_AddNumberToObject(cc, "fallthrough_macs", (double)s->fall_macs);
    cJSON_AddNumberToObject(f, "from_layer", s->cut + 1);
    cJSON_AddNumberToObject(f, "batches", o->head.batches);
    cJSON_AddNumberToObject(f, "aug_passes", o->head.aug_passes);
    cJSON_AddNumberToObject(f, "seed", (double)o->seed);
    cJSON_AddNumberToObject(f, "loss_first", c->l0);
    cJSON_AddNumberToObject(f, "loss_last", c->l1);
    add_score(f, "in_context", c->in_ok, c->in_n);
    /* the cascade's own score on the context's frames (the scheduler
     * weighs it against the generic model's, generic_in_context) */
    add_score(f, "cascade_in_context", c->casc_in_ok, c->in_n);
    add_score(f, "overall", c->casc, c->mte);
    add_score(f, "generic_on_stream", c->gen_ok, c->mte);
    add_score(f, "generic_in_context", c->gen_in_ok, c->in_n);
    add_score(f, "specialised_on_stream", c->own, c->mte);
    return 0;
}

/* The context's row of the table. */
static cJSON *context_row(const sp_state *s, const sp_ctx *c, uint64_t smacs, double share, double emacs)
{
    const ctx *x = c->x;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToArray(s->rows, r);
    cJSON_AddStringToObject(r, "id", x->id);
    cJSON_AddNumberToObject(r, "n", x->n);
    cJSON_AddNumberToObject(r, "p", x->p);
    cJSON_AddNumberToObject(r, "specialised_macs", (double)smacs);
    cJSON_AddNumberToObject(r, "expected_macs", emacs);
    cJSON_AddNumberToObject(r, "sent_share", share);
    add_score(r, "in_context", c->in_ok, c->in_n);
    add_score(r, "overall", c->casc, c->mte);
    add_score(r, "generic_on_stream", c->gen_ok, c->mte);
    add_score(r, "generic_in_context", c->gen_in_ok, c->in_n);
    cJSON_AddNumberToObject(r, "gate", c->gate);
    cJSON *gs = cJSON_AddArrayToObject(r, "gate_sweep");
    for (int q = 0; q < NSWEEP; q++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "gate", sweep[q]);
        cJSON_AddNumberToObject(e, "sent_share", (double)c->sw_sent[q] / (double)c->mte);
        add_score(e, "overall", c->sw_ok[q], c->mte);
        if (s->o->gate_valid) add_score(e, "valid_overall", c->va_ok[q], c->mva);
        cJSON_AddItemToArray(gs, e);
    }
    return r;
}

static void context_free(sp_ctx *c)
{
    trn_dataset_close(c->cds);
    prn_features_free(&c->ctr);
    prn_features_free(&c->cte);
    prn_features_free(&c->cva);
    free(c->labels);
    free(c->tidx);
    free(c->spred);
    free(c->sconf);
    free(c->vpred);
    free(c->vconf);
    free(c->vidx);
}

/* One context: its head trained, scored, its variant and row made. */
static int specialise_one(sp_state *s, int i, trn_err *err)
{
    sp_ctx c = {.x = &s->cx[i]};
    prn_variant *v = &s->v[i];
    int rc = -1;
    if (context_open(s, &c, err) != 0 || context_streams(s, &c, err) != 0 || context_train(s, &c, v, err) != 0)
        goto out;
    choose_gate(s, &c);
    context_score(s, &c);
    uint64_t smacs = net_macs(v->net);
    double share = (double)c.sent / (double)c.mte, emacs = (double)smacs + share * (double)s->fall_macs;
    if (context_fields(s, &c, v, share, emacs, err) != 0) goto out;
    cJSON *row = context_row(s, &c, smacs, share, emacs);
    if (s->o->progress) s->o->progress(s->o->progress_ctx, s->table, row);
    rc = 0;
out:
    if (rc) trn_err_prefix(err, "context %s", c.x->id);
    context_free(&c);
    return rc;
}

/* Every context's variant folder, then the table. */
static int write_out(const sp_state *s, trn_err *err)
{
    for (int c = 0; c < s->nc; c++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", s->o->out, s->cx[c].id);
        if (prn_variant_write(&s->v[c], dir, err) != 0) return -1;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/specialise.json", s->o->out);
    return prn_write_json(path, s->table, err);
}

static void state_free(sp_state *s)
{
    for (int c = 0; s->v && c < s->nc; c++) prn_variant_free(&s->v[c]);
    free(s->v);
    free(s->cx);
    cJSON_Delete(s->table);
    free_split(&s->tr);
    free_split(&s->te);
    free_split(&s->va);
    trn_dataset_close(s->ds);
    prn_plan_free(s->plan);
    trn_net_free(s->base);
    trn_net_free(s->gen);
    trn_cfg_free(s->cfg);
    trn_cfg_free(s->gcfg);
}

int prn_specialise(const prn_specialise_opts *o, cJSON **table, trn_err *err)
{
    sp_state s = {.o = o};
    int rc = -1;
    *table = NULL;
    if (!o->generic_cfg != !o->generic_weights) return trn_errf(err, "--generic-cfg and --generic-weights go together");
    if (!(o->gate >= 0 && o->gate < 1)) return trn_errf(err, "gate %g: the gate is a probability in [0, 1)", o->gate);
    s.cx = calloc(PRN_SPECIALISE_MAX_CONTEXTS, sizeof *s.cx);
    s.v = calloc(PRN_SPECIALISE_MAX_CONTEXTS, sizeof *s.v);
    if (!s.cx || !s.v) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (load(&s, err) != 0 || base_features(&s, err) != 0 || table_head(&s, err) != 0) goto out;
    if (o->progress) o->progress(o->progress_ctx, s.table, NULL);
    for (int i = 0; i < s.nc; i++)
        if (specialise_one(&s, i, err) != 0) goto out;
    if (write_out(&s, err) != 0) goto out;
    *table = s.table;
    s.table = NULL;
    rc = 0;
out:
    state_free(&s);
    return rc;
}
