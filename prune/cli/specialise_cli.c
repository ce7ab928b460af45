/*
 * specialise_cli.c: `prune specialise`: MCDNN's (n,p) specialisation
 * (section 4.1.2) over the representative contexts that `dataset contexts`
 * wrote. For every context (n classes of the set plus "other", in-context
 * fraction p), the layers above --cut of the model (by default only the
 * last [connected] classifier and its softmax, docs/design.md's decision) are
 * retrained for n+1 outputs on the frozen lower layers, from the model's
 * outputs at the cut, computed once for every image of the base set and
 * looked up by image (a context stream lists images of the set, its
 * "other" entries through links, resolved with realpath).
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
#include "prune_cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CTX 64

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

static void free_index(ref *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++) free(r[i].real);
    free(r);
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

static int read_contexts(const char *path, ctx *c, int *n, trn_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    if (trn_read_file(path, (size_t)1 << 20, &buf, &len, err) != 0) return -1;
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 0, line = 0, rc = 0;
    *n = 0;
    for (char *p = buf, *e; p && *p; p = e ? e + 1 : NULL) {
        e = strchr(p, '\n');
        if (e) *e = 0;
        line++;
        while (isspace((unsigned char)*p)) p++;
        if (!*p || *p == '#') continue;
        char id[64], file[2048];
        int nn;
        double pp;
        if (sscanf(p, "%63s %d %lf %2047s", id, &nn, &pp, file) != 4 || nn < 1 || !(pp > 0 && pp < 1)) {
            rc = trn_errf(err, "%s:%d: expected \"id n p data-file\" (n >= 1, 0 < p < 1)", path, line);
            break;
        }
        if (*n == MAX_CTX) {
            rc = trn_errf(err, "%s:%d: more than %d contexts", path, line, MAX_CTX);
            break;
        }
        ctx *x = &c[(*n)++];
        snprintf(x->id, sizeof x->id, "%s", id);
        x->n = nn;
        x->p = pp;
        if (file[0] == '/' || !slash)
            snprintf(x->path, sizeof x->path, "%s", file);
        else
            snprintf(x->path, sizeof x->path, "%.*s/%s", dirlen, path, file);
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
        for (size_t j = 0; j < b && step * b + j < n; j++) {
            size_t best = 0;
            for (size_t k = 1; k < classes; k++)
                if (out[j * classes + k] > out[j * classes + best]) best = k;
            pred[step * b + j] = (int)best;
        }
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

int prn_cli_specialise(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "data", "contexts", "cut", "head", "set",
                                        "generic-cfg", "generic-weights", "parent", "seed", "out",
                                        "threads", NULL};
    static const char *const need[] = {"cfg", "weights", "data", "contexts", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "specialise",
                      "--cfg C --weights W --data D.data --contexts LIST [--cut SEL]\n"
                      "                   [--head TEXT] [--generic-cfg G --generic-weights GW] [--parent ID]\n"
                      "                   [--set key=value ...] --seed N --out DIR [--threads T]",
                      "For every (n,p) context of LIST (\"id n p data-file\" lines, as `dataset\n"
                      "contexts` writes them for D), retrains the layers of C above SEL (default:\n"
                      "the last connected layer's input, so only the classifier is retrained) for\n"
                      "the context's n classes + \"other\" on the frozen lower layers, and scores it\n"
                      "on the context's test stream: in-context top-1, and the cascade's overall\n"
                      "top-1 (\"other\" falls through to the generic model G, default C, whose cost\n"
                      "is counted for those inputs) against G alone on the same stream.\n"
                      "--head and --set as for `prune retarget`, plus --set gate=G|valid: the\n"
                      "specialised model answers only at a probability >= G, lower ones fall\n"
                      "through too (default 0: on \"other\" alone, MCDNN's cascade).\n"
                      "Writes DIR/<context>/{variant.cfg,init.weights,meta.json} and\n"
                      "DIR/specialise.json (the table).\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "specialise", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    if (!o.generic_cfg != !o.generic_weights)
        return trn_errf(err, "--generic-cfg and --generic-weights go together"), -2;
    /* the catalog id of --cfg: the parent, and the partner of its own cascade */
    const char *parent;
    if (prn_cli_parent(&o, &parent, err)) return -2;
    prn_head_opts ho;
    /* gate=G (0 <= G < 1): the specialised model answers only when it
     * says an in-context class with probability >= G; "other" or a lower
     * probability falls through to the generic model (0: MCDNN's cascade,
     * which falls through on "other" alone). The other keys are the head's. */
    double gate = 0;
    int gate_valid = 0; /* gate=valid: each context's gate, the sweep's best on its valid stream */
    prn_cli_opts ko = o;
    ko.nset = 0;
    for (int i = 0; i < o.nset; i++) {
        if (strncmp(o.set[i], "gate=", 5) != 0) {
            ko.set[ko.nset++] = o.set[i];
            continue;
        }
        if (!strcmp(o.set[i] + 5, "valid")) {
            gate_valid = 1;
            continue;
        }
        char *end;
        gate = strtod(o.set[i] + 5, &end);
        if (*end || end == o.set[i] + 5 || !(gate >= 0 && gate < 1))
            return trn_errf(err, "--set %s: the gate is a probability in [0, 1), or valid", o.set[i]), -2;
    }
    if (prn_cli_head_opts(&ko, &ho, err)) return -2; /* a bad --set: a usage error */
    if (prn_cli_compute(o.threads, err)) return -1;
    ctx *cx = calloc(MAX_CTX, sizeof *cx);
    prn_variant *v = calloc(MAX_CTX, sizeof *v);
    int nc = 0, rc = -1;
    trn_cfg *cfg = NULL, *gcfg = NULL;
    trn_net *base = NULL, *gen = NULL;
    trn_dataset *ds = NULL, *cds = NULL;
    prn_plan *plan = NULL;
    ref *rtr = NULL, *rte = NULL, *rva = NULL;
    size_t ntr = 0, nte = 0, nva = 0;
    prn_features ftr = {0}, fte = {0}, ctr = {0}, cte = {0}, fva = {0}, cva = {0};
    int *gpred = NULL, *labels = NULL, *truth = NULL, *spred = NULL, *gpva = NULL, *vpred = NULL, *vidx = NULL;
    float *sconf = NULL, *vconf = NULL;
    feed fd = {0};
    cJSON *table = NULL;
    if (!cx || !v) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (read_contexts(o.contexts, cx, &nc, err) != 0) goto out;
    if (!(cfg = trn_cfg_read(o.cfg, err)) || !(plan = prn_plan_create(cfg, err))) goto out;
    int nl = prn_plan_layers(plan), cut = -1;
    if (o.cut) {
        if ((cut = prn_select(plan, o.cut, err)) < 0) {
            trn_err_prefix(err, "--cut");
            goto out;
        }
    } else {
        for (int i = 0; i < nl; i++)
            if (prn_plan_layer(plan, i)->classifier) cut = i - 1;
        if (cut < 0) {
            trn_errf(err, "%s has no [connected] classifier above another layer: give --cut", o.cfg);
            goto out;
        }
    }
    if (cut >= nl - 1) {
        trn_errf(err, "--cut %s is L%d, the last layer: the trunk must end below the output",
                 o.cut ? o.cut : "", cut);
        goto out;
    }
    if (!(base = prn_cli_load_base(cfg, o.weights, 64, err))) goto out;
    if (o.generic_cfg) {
        if (!(gcfg = trn_cfg_read(o.generic_cfg, err)) ||
            !(gen = prn_cli_load_base(gcfg, o.generic_weights, 64, err)))
            goto out;
    }
    trn_net *g = gen ? gen : base;
    if (!(ds = trn_dataset_open(o.data, err))) goto out;
    int classes = trn_dataset_classes(ds);
    if ((size_t)classes != trn_net_outputs(base) || (size_t)classes != trn_net_outputs(g)) {
        trn_errf(err, "%s has %d classes but the model answers %zu and the generic model %zu: "
                 "give the set the models were trained on", o.data, classes,
                 trn_net_outputs(base), trn_net_outputs(g));
        goto out;
    }
    if (!trn_dataset_has(ds, TRN_SPLIT_TEST)) {
        trn_errf(err, "%s names no test split", o.data);
        goto out;
    }
    if (!(rtr = index_split(ds, TRN_SPLIT_TRAIN, &ntr, err)) ||
        !(rte = index_split(ds, TRN_SPLIT_TEST, &nte, err)))
        goto out;
    if (gate_valid && (!trn_dataset_has(ds, TRN_SPLIT_VALID) || !(rva = index_split(ds, TRN_SPLIT_VALID, &nva, err)))) {
        if (!trn_dataset_has(ds, TRN_SPLIT_VALID))
            trn_errf(err, "%s names no valid split: gate=valid chooses each gate on the contexts' valid "
                     "streams (give a gate, or a set with a valid split)", o.data);
        goto out;
    }
    /* The model's outputs at the cut, once for every image of the set. */
    trn_loader_opts lo;
    if (prn_cli_loader_opts(base, o.cfg, 64, o.seed, o.threads, 0, &lo, err)) goto out;
    lo.shuffle = 0;
    if (!(fd.y = malloc((size_t)64 * (size_t)classes * sizeof *fd.y))) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (int pass = 0; pass < 1 + (ho.aug_passes > 0); pass++) {
        trn_loader_opts po = lo;
        po.augment = pass > 0;
        if (!(fd.l = trn_loader_open(ds, TRN_SPLIT_TRAIN, &po, err))) goto out;
        size_t n = pass ? ntr * (size_t)ho.aug_passes : ntr;
        if (prn_features_add(base, cut, next_images, &fd, 0, n, &ftr, err) != 0) goto out;
        trn_loader_close(fd.l);
        fd.l = NULL;
    }
    {
        trn_loader_opts po = lo;
        po.augment = 0;
        if (!(fd.l = trn_loader_open(ds, TRN_SPLIT_TEST, &po, err))) goto out;
        if (prn_features_add(base, cut, next_images, &fd, 0, nte, &fte, err) != 0) goto out;
        trn_loader_close(fd.l);
        fd.l = NULL;
    }
    if (!(gpred = malloc(nte * sizeof *gpred))) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (predict_split(g, ds, TRN_SPLIT_TEST, &lo, gpred, err) != 0) goto out;
    if (gate_valid) {
        trn_loader_opts po = lo;
        po.augment = 0;
        if (!(fd.l = trn_loader_open(ds, TRN_SPLIT_VALID, &po, err))) goto out;
        if (prn_features_add(base, cut, next_images, &fd, 0, nva, &fva, err) != 0) goto out;
        trn_loader_close(fd.l);
        fd.l = NULL;
        if (!(gpva = malloc(nva * sizeof *gpva))) {
            trn_errf(err, "out of memory");
            goto out;
        }
        if (predict_split(g, ds, TRN_SPLIT_VALID, &lo, gpva, err) != 0) goto out;
    }
    uint64_t gcorrect = 0;
    for (size_t i = 0; i < nte; i++) gcorrect += gpred[i] == trn_dataset_class(ds, TRN_SPLIT_TEST, i);
    uint64_t trunk_macs = 0;
    for (int i = 0; i <= cut; i++) trunk_macs += prn_plan_layer(plan, i)->macs;
    uint64_t gmacs = net_macs(g), fall_macs = gen ? gmacs : gmacs - trunk_macs;
    size_t dim = (size_t)ftr.shape.c * ftr.shape.h * ftr.shape.w;
    if (!(table = cJSON_CreateObject())) {
        trn_errf(err, "out of memory");
        goto out;
    }
    cJSON_AddStringToObject(table, "model", o.cfg);
    cJSON_AddNumberToObject(table, "cut_layer", cut);
    cJSON_AddStringToObject(table, "head", o.head ? o.head : "");
    cJSON_AddStringToObject(table, "generic", o.generic_cfg ? o.generic_cfg : o.cfg);
    cJSON_AddNumberToObject(table, "model_macs", (double)net_macs(base));
    cJSON_AddNumberToObject(table, "generic_macs", (double)gmacs);
    cJSON_AddNumberToObject(table, "fallthrough_macs", (double)fall_macs);
    add_score(table, "generic_test", gcorrect, nte);
    cJSON *rows = cJSON_AddArrayToObject(table, "contexts");
    printf("generic model: top-1 %.2f%% on the %zu test images; fall-through costs %" PRIu64
           " MACs\n", 100.0 * (double)gcorrect / (double)nte, nte, fall_macs);
    printf("%-12s %3s %5s %18s %18s %18s %7s %12s\n", "context", "n", "p", "in-context",
           "cascade overall", "generic overall", "gain", "cascade MACs");
    for (int c = 0; c < nc; c++) {
        ctx *x = &cx[c];
        if (!(cds = trn_dataset_open(x->path, err))) goto ctx_fail;
        int k = trn_dataset_classes(cds) - 1;
        if (k != x->n || strcmp(trn_dataset_label(cds, k), "other")) {
            trn_errf(err, "%s: expected %d classes and \"other\" last (n = %d in %s)", x->path,
                     x->n + 1, x->n, o.contexts);
            goto ctx_fail;
        }
        int map[256];
        if (k > 255) {
            trn_errf(err, "%s: more than 255 context classes", x->path);
            goto ctx_fail;
        }
        for (int q = 0; q < k; q++) {
            map[q] = -1;
            for (int b = 0; b < classes; b++)
                if (!strcmp(trn_dataset_label(ds, b), trn_dataset_label(cds, q))) map[q] = b;
            if (map[q] < 0) {
                trn_errf(err, "%s: class '%s' is not a class of %s", x->path,
                         trn_dataset_label(cds, q), o.data);
                goto ctx_fail;
            }
        }
        size_t mtr = trn_dataset_count(cds, TRN_SPLIT_TRAIN), mte = trn_dataset_count(cds, TRN_SPLIT_TEST);
        size_t passes = 1 + (size_t)ho.aug_passes;
        if (mtr < 1 || mte < 1) {
            trn_errf(err, "%s: needs training and test images", x->path);
            goto ctx_fail;
        }
        ctr.shape = cte.shape = ftr.shape;
        ctr.n = mtr * passes;
        cte.n = mte;
        if (!(ctr.x = malloc(ctr.n * dim * sizeof(float))) || !(cte.x = malloc(mte * dim * sizeof(float))) ||
            !(labels = malloc(ctr.n * sizeof *labels)) || !(truth = malloc(mte * sizeof *truth)) ||
            !(spred = malloc(mte * sizeof *spred)) || !(sconf = malloc(mte * sizeof *sconf))) {
            trn_errf(err, "out of memory");
            goto ctx_fail;
        }
        int *tidx = (int *)truth; /* reused below: base test index per stream image */
        for (size_t i = 0; i < mtr; i++) {
            char what[4200];
            snprintf(what, sizeof what, "%s (train)", x->path);
            long b = lookup(rtr, ntr, trn_dataset_path(cds, TRN_SPLIT_TRAIN, i), what, err);
            if (b < 0) goto ctx_fail;
            for (size_t p = 0; p < passes; p++) {
                memcpy(ctr.x + (p * mtr + i) * dim, ftr.x + (p * ntr + (size_t)b) * dim, dim * sizeof(float));
                labels[p * mtr + i] = trn_dataset_class(cds, TRN_SPLIT_TRAIN, i);
            }
        }
        for (size_t i = 0; i < mte; i++) {
            char what[4200];
            snprintf(what, sizeof what, "%s (test)", x->path);
            long b = lookup(rte, nte, trn_dataset_path(cds, TRN_SPLIT_TEST, i), what, err);
            if (b < 0) goto ctx_fail;
            memcpy(cte.x + i * dim, fte.x + (size_t)b * dim, dim * sizeof(float));
            tidx[i] = (int)b;
        }
        size_t mva = 0;
        if (gate_valid) {
            mva = trn_dataset_count(cds, TRN_SPLIT_VALID);
            if (mva < 1) {
                trn_errf(err, "%s: no valid stream: gate=valid chooses the gate on it", x->path);
                goto ctx_fail;
            }
            cva.shape = fva.shape;
            cva.n = mva;
            if (!(cva.x = malloc(mva * dim * sizeof(float))) || !(vpred = malloc(mva * sizeof *vpred)) ||
                !(vconf = malloc(mva * sizeof *vconf)) || !(vidx = malloc(mva * sizeof *vidx))) {
                trn_errf(err, "out of memory");
                goto ctx_fail;
            }
            for (size_t i = 0; i < mva; i++) {
                char what[4200];
                snprintf(what, sizeof what, "%s (valid)", x->path);
                long b = lookup(rva, nva, trn_dataset_path(cds, TRN_SPLIT_VALID, i), what, err);
                if (b < 0) goto ctx_fail;
                memcpy(cva.x + i * dim, fva.x + (size_t)b * dim, dim * sizeof(float));
                vidx[i] = (int)b;
            }
        }
        trn_cfg *hc = NULL;
        trn_net *hn = NULL;
        float l0 = 0, l1 = 0;
        if (prn_head_train(&ctr, labels, k + 1, &ho, &hc, &hn, &l0, &l1, err) != 0 ||
            prn_head_predict(hn, &cte, spred, sconf, err) != 0 ||
            (gate_valid && prn_head_predict(hn, &cva, vpred, vconf, err) != 0) ||
            prn_retarget_variant(cfg, base, cut, hc, hn, parent, &v[c], err) != 0) {
            trn_cfg_free(hc);
            trn_net_free(hn);
            goto ctx_fail;
        }
        v[c].parent = parent;
        trn_cfg_free(hc);
        trn_net_free(hn);
        uint64_t in_n = 0, in_ok = 0, casc = 0, gen_ok = 0, sent = 0, own = 0, gen_in_ok = 0, casc_in_ok = 0;
        /* the gate's sweep (reported, not applied): overall top-1 and the share sent on */
        static const double sweep[] = {0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99};
        enum { NSWEEP = sizeof sweep / sizeof *sweep };
        /* gate=valid: the sweep's gate with the best cascade on the
         * context's valid stream (ties: the lower gate, fewer sent on) */
        double cgate = gate;
        uint64_t va_ok[NSWEEP] = {0};
        if (gate_valid) {
            for (size_t i = 0; i < mva; i++) {
                int id = trn_dataset_class(ds, TRN_SPLIT_VALID, (size_t)vidx[i]);
                for (int q = 0; q < NSWEEP; q++) {
                    int f = vpred[i] == k || vconf[i] < sweep[q];
                    va_ok[q] += (f ? gpva[vidx[i]] : map[vpred[i]]) == id;
                }
            }
            int bq = 0;
            for (int q = 1; q < NSWEEP; q++)
                if (va_ok[q] > va_ok[bq]) bq = q;
            cgate = sweep[bq];
        }
        uint64_t sw_ok[NSWEEP] = {0}, sw_sent[NSWEEP] = {0};
        for (size_t i = 0; i < mte; i++) {
            int b = tidx[i], id = trn_dataset_class(ds, TRN_SPLIT_TEST, (size_t)b);
            int inside = trn_dataset_class(cds, TRN_SPLIT_TEST, i) < k;
            int falls = spred[i] == k || sconf[i] < cgate;
            int answer = !falls ? map[spred[i]] : gpred[b];
            for (int q = 0; q < NSWEEP; q++) {
                int f = spred[i] == k || sconf[i] < sweep[q];
                sw_sent[q] += f;
                sw_ok[q] += (f ? gpred[b] : map[spred[i]]) == id;
            }
            sent += falls;
            own += spred[i] == trn_dataset_class(cds, TRN_SPLIT_TEST, i);
            in_n += inside;
            in_ok += inside && spred[i] < k && map[spred[i]] == id;
            casc += answer == id;
            casc_in_ok += inside && answer == id;
            gen_ok += gpred[b] == id;
            gen_in_ok += inside && gpred[b] == id;
        }
        uint64_t smacs = net_macs(v[c].net);
        double share = (double)sent / (double)mte, emacs = (double)smacs + share * (double)fall_macs;
        v[c].technique = "specialised";
        free(v[c].description);
        char desc[256];
        snprintf(desc, sizeof desc, "specialised to context %s (n=%d, p=%g): L%d.. retrained for "
                 "%d classes + other on the frozen lower layers", x->id, x->n, x->p, cut + 1, k);
        v[c].description = strdup(desc);
        if (!v[c].description) {
            trn_errf(err, "out of memory");
            goto ctx_fail;
        }
        cJSON *f = v[c].fields;
        cJSON_DeleteItemFromObject(f, "head");
        cJSON *cj = cJSON_AddObjectToObject(f, "context");
        cJSON_AddStringToObject(cj, "id", x->id);
        cJSON_AddNumberToObject(cj, "n", x->n);
        cJSON_AddNumberToObject(cj, "p", x->p);
        cJSON *cl = cJSON_AddArrayToObject(cj, "classes");
        for (int q = 0; q < k; q++) cJSON_AddItemToArray(cl, cJSON_CreateNumber(map[q]));
        cJSON_AddNumberToObject(cj, "other_class", k);
        cJSON_AddStringToObject(cj, "data", trn_data_name(x->path));
        cJSON *cc = cJSON_AddObjectToObject(f, "cascade");
        cJSON_AddStringToObject(cc, "partner", o.generic_cfg ? "base" : parent);
        cJSON_AddStringToObject(cc, "on", "other");
        cJSON_AddNumberToObject(cc, "gate", cgate);
        if (gate_valid) {
            int bq = 0;
            while (sweep[bq] != cgate) bq++;
            cJSON *gv = cJSON_AddObjectToObject(cc, "gate_chosen_on");
            cJSON_AddStringToObject(gv, "split", "valid");
            add_score(gv, "overall", va_ok[bq], mva);
        }
        cJSON_AddNumberToObject(cc, "sent_share", share);
        cJSON_AddNumberToObject(cc, "expected_macs", emacs);
        cJSON_AddNumberToObject(cc, "fallthrough_macs", (double)fall_macs);
        cJSON_AddNumberToObject(f, "from_layer", cut + 1);
        cJSON_AddNumberToObject(f, "batches", ho.batches);
        cJSON_AddNumberToObject(f, "aug_passes", ho.aug_passes);
        cJSON_AddNumberToObject(f, "seed", (double)o.seed);
        cJSON_AddNumberToObject(f, "loss_first", l0);
        cJSON_AddNumberToObject(f, "loss_last", l1);
        add_score(f, "in_context", in_ok, in_n);
        /* the cascade's own score on the context's frames (the scheduler
         * weighs it against the generic model's, generic_in_context) */
        add_score(f, "cascade_in_context", casc_in_ok, in_n);
        add_score(f, "overall", casc, mte);
        add_score(f, "generic_on_stream", gen_ok, mte);
        add_score(f, "generic_in_context", gen_in_ok, in_n);
        add_score(f, "specialised_on_stream", own, mte);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToArray(rows, r);
        cJSON_AddStringToObject(r, "id", x->id);
        cJSON_AddNumberToObject(r, "n", x->n);
        cJSON_AddNumberToObject(r, "p", x->p);
        cJSON_AddNumberToObject(r, "specialised_macs", (double)smacs);
        cJSON_AddNumberToObject(r, "expected_macs", emacs);
        cJSON_AddNumberToObject(r, "sent_share", share);
        add_score(r, "in_context", in_ok, in_n);
        add_score(r, "overall", casc, mte);
        add_score(r, "generic_on_stream", gen_ok, mte);
        add_score(r, "generic_in_context", gen_in_ok, in_n);
        cJSON_AddNumberToObject(r, "gate", cgate);
        cJSON *gs = cJSON_AddArrayToObject(r, "gate_sweep");
        for (int q = 0; q < NSWEEP; q++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "gate", sweep[q]);
            cJSON_AddNumberToObject(e, "sent_share", (double)sw_sent[q] / (double)mte);
            add_score(e, "overall", sw_ok[q], mte);
            if (gate_valid) add_score(e, "valid_overall", va_ok[q], mva);
            cJSON_AddItemToArray(gs, e);
        }
        double clo, chi, glo, ghi, ilo, ihi;
        trn_wilson(casc, mte, &clo, &chi);
        trn_wilson(gen_ok, mte, &glo, &ghi);
        trn_wilson(in_ok, in_n, &ilo, &ihi);
        printf("%-12s %3d %5.2f %6.2f%% [%4.1f,%4.1f] %6.2f%% [%4.1f,%4.1f] %6.2f%% [%4.1f,%4.1f] "
               "%+6.2f %12.0f",
               x->id, x->n, x->p, 100.0 * in_ok / (double)(in_n ? in_n : 1), 100 * ilo, 100 * ihi,
               100.0 * casc / (double)mte, 100 * clo, 100 * chi, 100.0 * gen_ok / (double)mte,
               100 * glo, 100 * ghi, 100.0 * ((double)casc - (double)gen_ok) / (double)mte, emacs);
        if (gate_valid) printf("  gate %.2f", cgate);
        printf("\n");
        trn_dataset_close(cds);
        cds = NULL;
        prn_features_free(&ctr);
        prn_features_free(&cte);
        free(labels);
        free(truth);
        free(spred);
        free(sconf);
        labels = truth = spred = NULL;
        sconf = NULL;
        prn_features_free(&cva);
        free(vpred);
        free(vconf);
        free(vidx);
        vpred = vidx = NULL;
        vconf = NULL;
        continue;
    ctx_fail:
        trn_err_prefix(err, "context %s", x->id);
        goto out;
    }
    for (int c = 0; c < nc; c++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", o.out, cx[c].id);
        if (prn_variant_write(&v[c], dir, err) != 0) goto out;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/specialise.json", o.out);
    if (prn_cli_write_json(path, table, err) != 0) goto out;
    printf("%s: %d specialised models (L%d.. retrained)\n", o.out, nc, cut + 1);
    rc = 0;
out:
    for (int c = 0; v && c < nc; c++) prn_variant_free(&v[c]);
    free(v);
    free(cx);
    trn_loader_close(fd.l);
    free(fd.y);
    free(gpred);
    free(labels);
    free(truth);
    free(spred);
    free(sconf);
    cJSON_Delete(table);
    prn_features_free(&ftr);
    prn_features_free(&fte);
    prn_features_free(&ctr);
    prn_features_free(&cte);
    prn_features_free(&fva);
    prn_features_free(&cva);
    free(gpva);
    free(vpred);
    free(vconf);
    free(vidx);
    free_index(rtr, ntr);
    free_index(rte, nte);
    free_index(rva, nva);
    trn_dataset_close(cds);
    trn_dataset_close(ds);
    prn_plan_free(plan);
    trn_net_free(base);
    trn_net_free(gen);
    trn_cfg_free(cfg);
    trn_cfg_free(gcfg);
    return rc;
}
