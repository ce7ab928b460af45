/*
 * grow.c: NestDNN's freeze-&-grow over a pruning roadmap (prn_grow,
 * prn.h; prune/README.md, "Freeze-&-grow"). From prune roadmap's
 * roadmap.json (every step's model stored in one common filter order, each
 * step a prefix of the one before), the seed step becomes capacity 1 and
 * the model grows capacity by capacity back to step 0 (the base): the new
 * filters start from the step model of their capacity (their pre-pruning
 * weights), are trained with everything older frozen (prn_nest.h), and the
 * result is one Darknet model (OUT/variant.cfg + OUT/init.weights, the full
 * capacity), OUT/capacities.json (the capacity table, accuracy, costs,
 * page-in/out bytes) and OUT/meta.json (the variant stage's contract,
 * technique "nested", the manifest's capacities), written last.
 */
#include "prn_impl.h"
#include "prn_nest.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GR_EVAL_BATCH 64
#define GR_REVIVE_BATCHES 4 /* training batches that measure the new filters' activity */
#define GR_BN_FILE "capacity_bn.weights" /* the smaller capacities' batch-norm vectors */

void prn_grow_opts_defaults(prn_grow_opts *o)
{
    *o = (prn_grow_opts){.threads = 1, .batches = 100, .capacities = 5, .bn_batches = 20, .slices = 1,
                         .learning_rate = 0.01, .revive = 0.01};
}

int prn_grow_set(prn_grow_opts *o, const char *kv, trn_err *err)
{
    size_t kl;
    double v;
    if (prn_set_number(kv, &kl, &v, err)) return -1;
#define KEY(name) (kl == strlen(name) && !strncmp(kv, name, kl))
    int whole = v == floor(v), bit = v == 0 || v == 1;
    if (KEY("batches") && v >= 0 && v <= 1e7 && whole) o->batches = (long long)v;
    else if (KEY("learning_rate") && v >= 0 && v <= 10) o->learning_rate = v;
    else if (KEY("capacities") && v >= 2 && v <= PRN_GROW_MAX_CAP && whole) o->capacities = (long long)v;
    else if (KEY("bn_batches") && v >= 0 && v <= 1e6 && whole) o->bn_batches = (long long)v;
    else if (KEY("revive") && v >= 0 && v <= 1) o->revive = v;
    else if (KEY("slices") && bit) o->slices = (long long)v;
    else if (KEY("bn_affine") && bit) o->bn_affine = (long long)v;
    else if (KEY("preserve") && bit) o->preserve = (long long)v;
    else if (KEY("epochs") && v >= 0 && v <= 1e4) o->epochs = v;
    else
        return trn_errf(err, "--set '%s': unknown key or value out of range (batches: 0..1e7, learning_rate: "
                             "0..10, capacities: 2..%d, bn_batches: 0..1e6, revive: 0..1, slices: 0 or 1, bn_affine: 0 or 1, "
                             "preserve: 0 or 1, epochs: 0..1e4)", kv,
                        PRN_GROW_MAX_CAP);
#undef KEY
    return 0;
}

/* One growth run's state. */
typedef struct gr_run {
    const prn_grow_opts *o;  /* &set */
    prn_grow_opts set;       /* the caller's, batches resolved from epochs */
    int ncap, seed_step, L;
    cJSON *road;
    const cJSON *steps, *rlayers;
    char rdir[4096], tmpdir[4200];
    trn_dataset *ds;
    trn_cfg *cfg, *tc;
    trn_net *base, *net, *ev, *fresh;
    trn_loader *ld;
    prn_nest nest;
    prn_nest_bn capbn;
    int caps_step[PRN_GROW_MAX_CAP];
    prn_acc acc[PRN_GROW_MAX_CAP];
    trn_net_totals tot[PRN_GROW_MAX_CAP];
    uint64_t sum;
} gr_run;

/* One progress line to the caller's callback. */
static void say(const gr_run *r, const char *fmt, ...) TRN_PRINTF(2, 3);
static void say(const gr_run *r, const char *fmt, ...)
{
    if (!r->o->progress) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    r->o->progress(r->o->progress_ctx, line);
}

static int feed_batch(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    return trn_loader_get(((gr_run *)ctx)->ld, index, x, y, err);
}

/* The folder of a file path ("." when none), into buf. */
static void dir_of(const char *path, char *buf, size_t size)
{
    const char *s = strrchr(path, '/');
    if (!s) snprintf(buf, size, ".");
    else snprintf(buf, size, "%.*s", (int)(s - path), path);
}

/* Loads step k's model of the roadmap (inference, batch 1); its cfg in
 * *cfg_out when not NULL. NULL with err. */
static trn_net *load_step(const gr_run *r, int k, trn_cfg **cfg_out, trn_err *err)
{
    const cJSON *st = cJSON_GetArrayItem(r->steps, k);
    const cJSON *c = cJSON_GetObjectItem(st, "cfg"), *w = cJSON_GetObjectItem(st, "weights");
    if (!cJSON_IsString(c) || !cJSON_IsString(w)) {
        trn_errf(err, "step %d has no cfg/weights file names", k);
        return NULL;
    }
    char cp[4400], wp[4400];
    snprintf(cp, sizeof cp, "%s/%s", r->rdir, c->valuestring);
    snprintf(wp, sizeof wp, "%s/%s", r->rdir, w->valuestring);
    trn_cfg *cfg = trn_cfg_read(cp, err);
    if (!cfg) return NULL;
    trn_net_opts no;
    prn_net_opts(&no, 0);
    trn_net *n = trn_net_create(cfg, &no, err);
    if (n && trn_weights_load(n, wp, err) != 0) {
        trn_net_free(n);
        n = NULL;
    }
    if (cfg_out && n) *cfg_out = cfg;
    else trn_cfg_free(cfg);
    return n;
}

/* Reads and checks the roadmap; the capacities at most seed_step + 1. */
static int read_roadmap(gr_run *r, trn_err *err)
{
    const char *roadp = r->o->roadmap;
    char *buf;
    size_t len;
    if (trn_read_file(roadp, 64u << 20, &buf, &len, err) != 0) return -1;
    r->road = cJSON_ParseWithLength(buf, len);
    free(buf);
    const cJSON *fmt = cJSON_GetObjectItem(r->road, "format"), *jseed = cJSON_GetObjectItem(r->road, "seed_step");
    r->steps = cJSON_GetObjectItem(r->road, "steps");
    r->rlayers = cJSON_GetObjectItem(r->road, "layers");
    if (!r->road || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "prune-roadmap") || !cJSON_IsArray(r->steps) ||
        !cJSON_IsNumber(jseed) || !cJSON_IsArray(r->rlayers))
        return trn_errf(err, "%s is not a roadmap.json written by `prune roadmap` (format \"prune-roadmap\" with "
                             "steps, seed_step and layers)", roadp);
    r->seed_step = jseed->valueint;
    if (r->seed_step < 1 || r->seed_step >= cJSON_GetArraySize(r->steps))
        return trn_errf(err, "%s: seed_step %d: the roadmap must hold at least one passing pruning step to grow from",
                        roadp, r->seed_step);
    r->ncap = (int)(r->o->capacities > r->seed_step + 1 ? r->seed_step + 1 : r->o->capacities);
    return 0;
}

/* Capacities: capacity 1 = the seed, the last = step 0; between them steps
 * in which every pruned layer grows where the roadmap allows it (a layer
 * that gains nothing blocks the channels grown below it), then those
 * nearest to evenly spaced MACs (prn_nest_pick_steps). */
static int pick_steps(gr_run *r, trn_err *err)
{
    int ns = cJSON_GetArraySize(r->steps), nl = cJSON_GetArraySize(r->rlayers);
    int *kc = calloc((size_t)ns * (size_t)(nl ? nl : 1), sizeof *kc);
    double *mc = calloc((size_t)ns, sizeof *mc);
    int bad = !kc || !mc;
    for (int st = 0; !bad && st < ns; st++) {
        const cJSON *sj = cJSON_GetArrayItem(r->steps, st), *kept = cJSON_GetObjectItem(sj, "kept");
        mc[st] = cJSON_GetNumberValue(cJSON_GetObjectItem(sj, "macs"));
        bad = cJSON_GetArraySize(kept) != nl;
        for (int l = 0; !bad && l < nl; l++)
            kc[(size_t)st * nl + l] = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(kept, l));
    }
    int blocked = bad ? -1 : prn_nest_pick_steps(ns, nl, kc, mc, r->seed_step, r->ncap, r->caps_step, err);
    free(kc), free(mc);
    if (bad) trn_errf(err, "%s: a step's kept[] does not match layers[] (or out of memory)", r->o->roadmap);
    if (blocked < 0) return -1;
    if (blocked > 0)
        say(r, "prune grow: in %d of the %d growth steps some layer gains no filter (the roadmap has no step where "
               "it does): the channels grown below it reach nothing", blocked, r->ncap - 1);
    return 0;
}

/* Capacity k's filters per layer from its roadmap step's kept[]. */
static int plan_capacity(gr_run *r, int k, trn_err *err)
{
    int L = r->L, nl = cJSON_GetArraySize(r->rlayers);
    for (int i = 0; i < L; i++) r->nest.filters[(size_t)k * L + i] = trn_net_full_filters(r->base, i);
    const cJSON *kept = cJSON_GetObjectItem(cJSON_GetArrayItem(r->steps, r->caps_step[k]), "kept");
    if (cJSON_GetArraySize(kept) != nl)
        return trn_errf(err, "%s: step %d's kept[] does not match layers[]", r->o->roadmap, r->caps_step[k]);
    for (int l = 0; l < nl; l++) {
        const cJSON *li = cJSON_GetObjectItem(cJSON_GetArrayItem(r->rlayers, l), "layer");
        const cJSON *kv = cJSON_GetArrayItem(kept, l);
        if (!cJSON_IsNumber(li) || !cJSON_IsNumber(kv) || li->valueint < 0 || li->valueint >= L)
            return trn_errf(err, "%s: layers[%d] or step %d's kept[%d] is not a valid number", r->o->roadmap, l,
                            r->caps_step[k], l);
        r->nest.filters[(size_t)k * L + li->valueint] = kv->valueint;
        r->nest.fixed[li->valueint] = 0;
    }
    return 0;
}

/* The nest of the base (step 0): every capacity's filters per layer and
 * the fixed layers. */
static int plan_nest(gr_run *r, trn_err *err)
{
    int L = r->L = trn_net_layers(r->base);
    r->nest.ncap = r->ncap;
    r->nest.nlayers = L;
    r->nest.filters = calloc((size_t)r->ncap * (size_t)L, sizeof *r->nest.filters);
    r->nest.fixed = calloc((size_t)L, 1);
    if (!r->nest.filters || !r->nest.fixed) return trn_errf(err, "out of memory");
    r->nest.train_slices = (int)r->o->slices;
    r->nest.bn_affine = (int)r->o->bn_affine;
    r->nest.preserve = (int)r->o->preserve;
    for (int i = 0; i < L; i++) r->nest.fixed[i] = trn_net_full_filters(r->base, i) > 0;
    for (int k = 0; k < r->ncap; k++)
        if (plan_capacity(r, k, err)) return -1;
    /* A ranked layer without batch norm that the roadmap never pruned (the
     * connected layers of a connected=0 roadmap) is fixed like the
     * classifier: all its rows read the new input channels through trained
     * columns. Growing with nothing to grow would zero and freeze those
     * columns, leaving the new channels below it no path to the output. */
    for (int i = 0; i < L; i++) {
        trn_layer_info in;
        trn_net_layer_info(r->base, i, &in);
        int full = trn_net_full_filters(r->base, i);
        int whole = !r->nest.fixed[i] && full > 0 && !in.batch_normalize;
        for (int k = 0; whole && k < r->ncap; k++) whole = r->nest.filters[(size_t)k * L + i] == full;
        if (whole) r->nest.fixed[i] = 1;
    }
    return 0;
}

/* The growing network (step 0's cfg with the growth schedule) at capacity
 * 1 holding the seed step's parameters, the output folder and the
 * training loader. */
static int start_net(gr_run *r, trn_err *err)
{
    const prn_grow_opts *o = r->o;
    if (!(r->tc = trn_cfg_clone(r->cfg, err)) || trn_cfg_setf(r->tc, 0, "learning_rate", err, "%.9g", o->learning_rate) ||
        trn_cfg_set(r->tc, 0, "policy", "poly", err) || trn_cfg_set(r->tc, 0, "power", "2", err) ||
        trn_cfg_set(r->tc, 0, "burn_in", "0", err) ||
        trn_cfg_setf(r->tc, 0, "max_batches", err, "%lld", o->batches > 0 ? o->batches : 1))
        return -1;
    if (!(r->net = prn_net_like(r->tc, r->base, 0, 0, o->seed, 1, err))) return -1;
    if (prn_nest_check(r->net, &r->nest, err) || prn_nest_bn_init(&r->capbn, r->net, &r->nest, err)) return -1;
    trn_net *seedn = load_step(r, r->caps_step[0], NULL, err);
    if (!seedn) return -1;
    int rc = prn_nest_start(r->net, &r->nest, seedn, err);
    trn_net_free(seedn);
    if (rc || prn_nest_bn_keep(&r->capbn, r->net, &r->nest, 0, err)) return -1;
    if (trn_mkdir_p(o->out, err) != 0) return -1;
    snprintf(r->tmpdir, sizeof r->tmpdir, "%s/.grow", o->out);
    trn_loader_opts lo;
    if (prn_loader_opts(r->net, o->roadmap, trn_net_batch(r->net), o->seed, o->threads, (size_t)256 << 20, &lo, err))
        return -1;
    return (r->ld = trn_loader_open(r->ds, TRN_SPLIT_TRAIN, &lo, err)) ? 0 : -1;
}

/* Dead new filters of capacity k restart from the engine's initialisation
 * (their statistics first re-estimated, so that a channel is judged by
 * what it computes at this capacity). */
static int revive(gr_run *r, int k, int *revived, trn_err *err)
{
    const prn_grow_opts *o = r->o;
    if (!r->fresh) {
        trn_net_opts fo;
        prn_net_opts(&fo, o->seed);
        if (!(r->fresh = trn_net_create(r->tc, &fo, err))) return -1;
    }
    if (prn_bn_recalibrate(r->net, feed_batch, r, (uint64_t)o->batches + (uint64_t)o->bn_batches, (int)o->bn_batches,
                           err) != 0)
        return -1;
    return prn_nest_revive(r->net, &r->nest, k, r->fresh, feed_batch, r, (uint64_t)o->batches, GR_REVIVE_BATCHES,
                           o->revive, revived, err);
}

/* Growth step to capacity k: the new filters from their step model,
 * revived, trained, and the capacity's batch-norm statistics re-estimated
 * with its inputs (the new channels', and with trained slices the old
 * ones', whose inputs now include the new channels; frozen ones stay),
 * then kept as this capacity's. */
static int grow_step(gr_run *r, int k, trn_err *err)
{
    const prn_grow_opts *o = r->o;
    trn_net *init = load_step(r, r->caps_step[k], NULL, err);
    if (!init) return -1;
    int rc = prn_nest_grow(r->net, &r->nest, k, init, err);
    trn_net_free(init);
    int revived = 0;
    if (rc || (o->revive > 0 && revive(r, k, &revived, err))) return -1;
    if (o->batches > 0) {
        trn_net_set_seen(r->net, 0);
        trn_train_opts to = {.next_batch = feed_batch, .batch_ctx = r, .backup_dir = r->tmpdir, .base = "grow"};
        if (trn_train(r->net, &to, err) != 0) return -1;
    }
    if (prn_bn_recalibrate(r->net, feed_batch, r, (uint64_t)o->batches, (int)o->bn_batches, err) != 0 ||
        prn_nest_bn_keep(&r->capbn, r->net, &r->nest, k, err) != 0)
        return -1;
    say(r, "prune grow: capacity %d (roadmap step %d) grown (%d dead new filters restarted)", k + 1, r->caps_step[k],
        revived);
    return 0;
}

/* Every capacity's test top-1 (with its per-image record, for catalog
 * pack's paired test) and costs. */
static int measure(gr_run *r, trn_err *err)
{
    char path[4400];
    if (!(r->ev = prn_net_like(r->cfg, r->net, GR_EVAL_BATCH, 1, 0, 1, err))) return -1;
    for (int k = 0; k < r->ncap; k++) {
        snprintf(path, sizeof path, "%s/capacity-%d.predictions", r->o->out, k + 1);
        if (prn_nest_bn_apply(&r->capbn, r->ev, &r->nest, k, err) ||
            prn_evaluate_preds(r->ev, r->ds, TRN_SPLIT_TEST, r->o->threads, &r->acc[k], path, err))
            return -1;
        trn_net_get_totals(r->ev, &r->tot[k]);
        say(r, "prune grow: capacity %d: %llu MACs, test top-1 %.4f [%.4f, %.4f] on %llu images", k + 1,
            (unsigned long long)r->tot[k].macs, r->acc[k].top1, r->acc[k].lo, r->acc[k].hi,
            (unsigned long long)r->acc[k].images);
        r->sum += r->tot[k].weight_bytes;
    }
    return trn_net_set_capacity(r->ev, NULL, err);
}

/* variant.cfg, init.weights and the capacity_bn file. */
static int write_model(gr_run *r, trn_err *err)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/variant.cfg", r->o->out);
    if (trn_cfg_write(r->cfg, path, err)) return -1;
    snprintf(path, sizeof path, "%s/init.weights", r->o->out);
    trn_net_set_seen(r->net, 0);
    if (trn_weights_save(r->net, path, err)) return -1;
    snprintf(path, sizeof path, "%s/%s", r->o->out, GR_BN_FILE);
    return r->capbn.roles && prn_nest_bn_save(&r->capbn, &r->nest, path, err) ? -1 : 0;
}

/* technique_fields.bn_per_capacity: the format's version and the roles kept
 * per capacity (catalog/manifest.schema.json). */
static cJSON *bn_json(unsigned roles)
{
    cJSON *o = cJSON_CreateObject(), *r = cJSON_AddArrayToObject(o, "roles");
    cJSON_AddNumberToObject(o, "version", 1);
    for (int q = 0; q < TRN_PARAM_ROLE_COUNT; q++)
        if (roles >> q & 1u) cJSON_AddItemToArray(r, cJSON_CreateString(trn_param_role_name((trn_param_role)q)));
    cJSON_AddStringToObject(o, "file", GR_BN_FILE);
    return o;
}

/* capacities.json's head: inputs, settings, files, the batch-norm note. */
static void head_json(const gr_run *r, cJSON *j)
{
    const prn_grow_opts *o = r->o;
    cJSON_AddStringToObject(j, "format", "prune-nest");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "roadmap", o->roadmap);
    cJSON_AddStringToObject(j, "data", o->data);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    cJSON *js = cJSON_AddObjectToObject(j, "settings");
    cJSON_AddNumberToObject(js, "batches", (double)o->batches);
    cJSON_AddNumberToObject(js, "epochs", o->epochs);
    cJSON_AddNumberToObject(js, "learning_rate", o->learning_rate);
    cJSON_AddNumberToObject(js, "bn_batches", (double)o->bn_batches);
    cJSON_AddNumberToObject(js, "revive", o->revive);
    cJSON_AddNumberToObject(js, "slices", (double)o->slices);
    cJSON_AddNumberToObject(js, "bn_affine", (double)o->bn_affine);
    cJSON_AddNumberToObject(js, "preserve", (double)o->preserve);
    cJSON_AddStringToObject(j, "cfg", "variant.cfg");
    cJSON_AddStringToObject(j, "weights", "init.weights");
    cJSON_AddNumberToObject(j, "weights_bytes", (double)trn_weights_bytes(r->net));
    if (r->capbn.roles) {
        cJSON_AddItemToObject(j, "bn_per_capacity", bn_json(r->capbn.roles));
        cJSON_AddStringToObject(j, "bn_file", GR_BN_FILE);
        cJSON_AddNumberToObject(j, "bn_file_bytes",
                                (double)(PRN_NEST_BN_HEADER + r->capbn.off[r->ncap - 1] * sizeof(float)));
        cJSON_AddStringToObject(j, "bn_note", "an old channel reads the channels grown after it (trained slices), so "
                                              "its batch-norm vectors differ per capacity: the largest capacity's are "
                                              "in the weights, the others' in bn_file");
    } else {
        cJSON_AddFalseToObject(j, "bn_per_capacity");
        cJSON_AddStringToObject(j, "bn_note", "an old channel reads only old channels (its new-input slices are "
                                              "zero), so its batch-norm statistics are the same at every capacity");
    }
}

/* capacities.json's layers: kind, full filters, fixed. */
static cJSON *layers_json(const gr_run *r)
{
    cJSON *jl = cJSON_CreateArray();
    for (int i = 0; jl && i < r->L; i++) {
        cJSON *o = cJSON_CreateObject();
        trn_layer_info in;
        trn_net_layer_info(r->net, i, &in);
        cJSON_AddNumberToObject(o, "layer", i);
        cJSON_AddStringToObject(o, "type", trn_layer_kind_name(in.kind));
        cJSON_AddNumberToObject(o, "filters", trn_net_full_filters(r->net, i));
        cJSON_AddBoolToObject(o, "fixed", r->nest.fixed[i] && trn_net_full_filters(r->net, i) > 0);
        cJSON_AddItemToArray(jl, o);
    }
    return jl;
}

/* A capacity's costs (macs, params, weight and peak activation bytes). */
static void costs_json(cJSON *o, const trn_net_totals *t)
{
    cJSON_AddNumberToObject(o, "macs", (double)t->macs);
    cJSON_AddNumberToObject(o, "params", (double)t->params);
    cJSON_AddNumberToObject(o, "weight_bytes", (double)t->weight_bytes);
    cJSON_AddNumberToObject(o, "peak_activation_bytes", (double)t->peak_activation_bytes);
}

/* capacities.json's capacities: filters, costs, test, the old filters'
 * slices of newer channels (zero with slices=0, else trained). */
static cJSON *capacities_json(const gr_run *r, trn_err *err)
{
    cJSON *jc = cJSON_CreateArray();
    int slices = r->o->slices != 0;
    for (int k = 0; jc && k < r->ncap; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(jc, o);
        cJSON_AddNumberToObject(o, "capacity", k + 1);
        cJSON_AddNumberToObject(o, "roadmap_step", r->caps_step[k]);
        cJSON_AddItemToObject(o, "filters", prn_json_ints(r->nest.filters + (size_t)k * r->L, r->L));
        costs_json(o, &r->tot[k]);
        cJSON_AddItemToObject(o, "test", prn_acc_json(&r->acc[k]));
        uint64_t zp = 0, zm = 0;
        if (prn_nest_zero_slices(r->net, &r->nest, k, &zp, &zm) != 0) {
            cJSON_Delete(jc);
            trn_errf(err, "out of memory");
            return NULL;
        }
        cJSON_AddNumberToObject(o, slices ? "cross_slice_params" : "zero_slice_params", (double)zp);
        cJSON_AddNumberToObject(o, slices ? "cross_slice_macs" : "zero_slice_macs", (double)zm);
    }
    if (!jc) trn_errf(err, "out of memory");
    return jc;
}

/* capacities.json's switches: page-in and page-out bytes of every switch. */
static cJSON *switches_json(const gr_run *r)
{
    cJSON *jp = cJSON_CreateArray();
    for (int a = 0; jp && a < r->ncap; a++)
        for (int b = 0; b < r->ncap; b++) {
            if (a == b) continue;
            cJSON *o = cJSON_CreateObject();
            uint64_t ta = r->tot[a].weight_bytes, tb = r->tot[b].weight_bytes, d = a < b ? tb - ta : ta - tb;
            cJSON_AddNumberToObject(o, "from", a + 1);
            cJSON_AddNumberToObject(o, "to", b + 1);
            cJSON_AddNumberToObject(o, "page_in_bytes", (double)(a < b ? d : 0));
            cJSON_AddNumberToObject(o, "page_out_bytes", (double)(a < b ? 0 : d));
            cJSON_AddItemToArray(jp, o);
        }
    return jp;
}

/* OUT/capacities.json. */
static int write_capacities(const gr_run *r, trn_err *err)
{
    cJSON *j = cJSON_CreateObject(), *jc = NULL;
    if (!j) return trn_errf(err, "out of memory");
    head_json(r, j);
    cJSON_AddItemToObject(j, "layers", layers_json(r));
    int rc = -1;
    if ((jc = capacities_json(r, err))) {
        cJSON_AddItemToObject(j, "capacities", jc);
        cJSON_AddNumberToObject(j, "sum_independent_weight_bytes", (double)r->sum);
        cJSON_AddItemToObject(j, "switches", switches_json(r));
        char path[4400];
        snprintf(path, sizeof path, "%s/capacities.json", r->o->out);
        rc = prn_write_json(path, j, err);
    }
    cJSON_Delete(j);
    return rc;
}

/* The manifest's capacity k (catalog/manifest.schema.json, capacity). */
static cJSON *meta_capacity(const gr_run *r, int k)
{
    cJSON *o = cJSON_CreateObject(), *ci = cJSON_CreateArray(), *pin = cJSON_CreateObject(),
          *pout = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "capacity", k + 1);
    for (int i = 0; i < r->L; i++) {
        int fk = r->nest.filters[(size_t)k * r->L + i];
        if (fk <= 0) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "layer", i);
        cJSON_AddNumberToObject(e, "channels", fk);
        cJSON_AddItemToArray(ci, e);
    }
    cJSON_AddItemToObject(o, "channel_index", ci);
    costs_json(o, &r->tot[k]);
    cJSON_AddNumberToObject(o, "top1", r->acc[k].top1);
    cJSON_AddItemToObject(o, "test", prn_acc_json(&r->acc[k]));
    for (int b = 0; b < r->ncap; b++) {
        char key[16];
        snprintf(key, sizeof key, "%d", b + 1);
        if (b > k) cJSON_AddNumberToObject(pin, key, (double)(r->tot[b].weight_bytes - r->tot[k].weight_bytes));
        if (b < k) cJSON_AddNumberToObject(pout, key, (double)(r->tot[k].weight_bytes - r->tot[b].weight_bytes));
    }
    cJSON_AddItemToObject(o, "page_in_bytes", pin);
    cJSON_AddItemToObject(o, "page_out_bytes", pout);
    return o;
}

/* OUT/meta.json: the manifest's technique fields, written last. */
static int write_meta(const gr_run *r, trn_err *err)
{
    cJSON *meta = cJSON_CreateObject(), *caps = cJSON_CreateArray();
    if (!meta || !caps) {
        cJSON_Delete(meta), cJSON_Delete(caps);
        return trn_errf(err, "out of memory");
    }
    for (int k = 0; k < r->ncap; k++) cJSON_AddItemToArray(caps, meta_capacity(r, k));
    const cJSON *method = cJSON_GetObjectItem(r->road, "method");
    char desc[256];
    snprintf(desc, sizeof desc, "NestDNN multi-capacity model: %d capacities grown from a %s roadmap", r->ncap,
             cJSON_IsString(method) ? method->valuestring : "pruning");
    cJSON_AddStringToObject(meta, "technique", "nested");
    cJSON_AddStringToObject(meta, "parent", "base");
    cJSON_AddStringToObject(meta, "description", desc);
    cJSON *tf = cJSON_AddObjectToObject(meta, "technique_fields");
    cJSON_AddItemToObject(tf, "capacities", caps);
    cJSON_AddStringToObject(tf, "capacities_file", "capacities.json");
    if (r->capbn.roles) cJSON_AddItemToObject(tf, "bn_per_capacity", bn_json(r->capbn.roles));
    cJSON_AddNumberToObject(tf, "sum_independent_weight_bytes", (double)r->sum);
    char path[4400];
    snprintf(path, sizeof path, "%s/meta.json", r->o->out);
    int rc = prn_write_json(path, meta, err);
    cJSON_Delete(meta);
    return rc;
}

/* The growth itself, from the roadmap to meta.json. */
static int grow(gr_run *r, trn_err *err)
{
    const prn_grow_opts *o = r->o;
    if (read_roadmap(r, err) || pick_steps(r, err)) return -1;
    dir_of(o->roadmap, r->rdir, sizeof r->rdir);
    if (!(r->ds = trn_dataset_open(o->data, err))) return -1;
    if (!trn_dataset_count(r->ds, TRN_SPLIT_TRAIN) || !trn_dataset_count(r->ds, TRN_SPLIT_TEST))
        return trn_errf(err, "%s: grow needs a train and a test split", o->data);
    if (!(r->base = load_step(r, 0, &r->cfg, err))) return -1;
    if (o->epochs > 0) r->set.batches = prn_epochs_batches(r->cfg, r->ds, o->epochs);
    if (plan_nest(r, err) || start_net(r, err)) return -1;
    for (int k = 1; k < r->ncap; k++)
        if (grow_step(r, k, err)) return -1;
    prn_nest_finish(r->net);
    if (measure(r, err) || write_model(r, err) || write_capacities(r, err)) return -1;
    return write_meta(r, err);
}

/* Removes the training backups and, after an error, every file grow
 * writes (and OUT when it was made here). */
static void clean_up(const gr_run *r, int failed, int made_dir)
{
    char path[4400];
    if (r->tmpdir[0]) trn_train_backup_remove(r->tmpdir, "grow");
    if (!failed) return;
    const char *names[] = {"meta.json", "capacities.json", GR_BN_FILE, "init.weights", "variant.cfg"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", r->o->out, names[i]);
        unlink(path);
    }
    long long n = r->ncap ? r->ncap : r->o->capacities;
    for (long long k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/capacity-%lld.predictions", r->o->out, k + 1);
        unlink(path);
    }
    if (made_dir) rmdir(r->o->out);
}

int prn_grow(const prn_grow_opts *o, prn_grow_summary *sum, trn_err *err)
{
    if (!o->roadmap || !o->data || !o->out) return trn_errf(err, "prn_grow: roadmap, data and out are required");
    gr_run *r = calloc(1, sizeof *r);
    if (!r) return trn_errf(err, "out of memory");
    r->set = *o;
    r->o = &r->set;
    int made_dir = access(o->out, F_OK) != 0;
    int rc = grow(r, err);
    clean_up(r, rc != 0, made_dir);
    if (rc == 0 && sum) {
        sum->capacities = r->ncap;
        sum->weight_bytes = r->tot[r->ncap - 1].weight_bytes;
        sum->sum_independent = r->sum;
    }
    trn_loader_close(r->ld);
    prn_nest_free(&r->nest);
    prn_nest_bn_free(&r->capbn);
    trn_net_free(r->fresh);
    trn_net_free(r->ev);
    trn_net_free(r->net);
    trn_net_free(r->base);
    trn_cfg_free(r->tc);
    trn_cfg_free(r->cfg);
    trn_dataset_close(r->ds);
    cJSON_Delete(r->road);
    free(r);
    return rc;
}
