/*
 * grow_cli.c: `prune grow`: NestDNN's freeze-&-grow (prune/README.md,
 * "Freeze-&-grow"). From a pruning roadmap (prune roadmap's roadmap.json:
 * every step's model stored in one common filter order, each step a prefix
 * of the one before), the seed step becomes capacity 1 and the model grows
 * capacity by capacity back to step 0 (the base): the new filters start
 * from the step model of their capacity (their pre-pruning weights), are
 * trained with everything older frozen (prn_nest.h), and the result is one
 * Darknet model (DIR/variant.cfg + DIR/init.weights, the full capacity),
 * DIR/capacities.json (the capacity table, accuracy, costs, page-in/out
 * bytes) and DIR/meta.json (the variant stage's contract, technique
 * "nested", the manifest's capacities), written last.
 */
#include "prune_cli.h"
#include "prn_impl.h"
#include "prn_nest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GR_MAX_CAP 16
#define GR_EVAL_BATCH 64
#define GR_REVIVE_BATCHES 4 /* training batches that measure the new filters' activity */
#define GR_BN_FILE "capacity_bn.weights" /* the smaller capacities' batch-norm vectors */

typedef struct gr_feed {
    trn_loader *ld;
} gr_feed;

static int feed_batch(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    return trn_loader_get(((gr_feed *)ctx)->ld, index, x, y, err);
}

/* The folder of a file path ("." when none), into buf. */
static const char *dir_of(const char *path, char *buf, size_t size)
{
    const char *s = strrchr(path, '/');
    if (!s) return snprintf(buf, size, "."), buf;
    snprintf(buf, size, "%.*s", (int)(s - path), path);
    return buf;
}

/* Loads step k's model of the roadmap (inference, batch 1). */
static trn_net *load_step(const cJSON *steps, int k, const char *dir, trn_cfg **cfg_out, trn_err *err)
{
    const cJSON *st = cJSON_GetArrayItem(steps, k);
    const cJSON *c = cJSON_GetObjectItem(st, "cfg"), *w = cJSON_GetObjectItem(st, "weights");
    if (!cJSON_IsString(c) || !cJSON_IsString(w)) {
        trn_errf(err, "step %d has no cfg/weights file names", k);
        return NULL;
    }
    char cp[4400], wp[4400];
    snprintf(cp, sizeof cp, "%s/%s", dir, c->valuestring);
    snprintf(wp, sizeof wp, "%s/%s", dir, w->valuestring);
    trn_cfg *cfg = trn_cfg_read(cp, err);
    if (!cfg) return NULL;
    trn_net_opts o;
    prn_net_opts(&o, 0);
    trn_net *n = trn_net_create(cfg, &o, err);
    if (n && trn_weights_load(n, wp, err) != 0) {
        trn_net_free(n);
        n = NULL;
    }
    if (cfg_out && n) *cfg_out = cfg;
    else trn_cfg_free(cfg);
    return n;
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

static int gr_set(const char *kv, long long *batches, double *lr, long long *ncap, long long *bn, double *revive,
                  long long *slices, long long *affine, trn_err *err)
{
    size_t kl;
    double v;
    if (prn_cli_set_number(kv, &kl, &v, err)) return -1;
    if (kl == 7 && !strncmp(kv, "batches", 7) && v >= 0 && v <= 1e7 && v == floor(v)) *batches = (long long)v;
    else if (kl == 13 && !strncmp(kv, "learning_rate", 13) && v >= 0 && v <= 10) *lr = v;
    else if (kl == 10 && !strncmp(kv, "capacities", 10) && v >= 2 && v <= GR_MAX_CAP && v == floor(v))
        *ncap = (long long)v;
    else if (kl == 10 && !strncmp(kv, "bn_batches", 10) && v >= 0 && v <= 1e6 && v == floor(v))
        *bn = (long long)v;
    else if (kl == 6 && !strncmp(kv, "revive", 6) && v >= 0 && v <= 1)
        *revive = v;
    else if (kl == 6 && !strncmp(kv, "slices", 6) && (v == 0 || v == 1))
        *slices = (long long)v;
    else if (kl == 9 && !strncmp(kv, "bn_affine", 9) && (v == 0 || v == 1))
        *affine = (long long)v;
    else
        return trn_errf(err, "--set '%s': unknown key or value out of range (batches: 0..1e7, learning_rate: "
                             "0..10, capacities: 2..%d, bn_batches: 0..1e6, revive: 0..1, slices: 0 or 1, bn_affine: 0 or 1)", kv,
                        GR_MAX_CAP);
    return 0;
}

int prn_cli_grow(int argc, char **argv, trn_err *err)
{
    const char *roadp = NULL, *data = NULL, *out = NULL;
    long long seed = -1, threads = 1, batches = 100, ncap = 5, bn_batches = 20, slices = 1, affine = 0;
    double lr = 0.01, revive = 0.01;
    ck_list set = {.n = 0};
    const ck_opt opts[] = {
        {"--roadmap", "R", CK_STR, &roadp, 0, 0, "the pruning roadmap (prune roadmap's roadmap.json)"},
        {"--data", "D.data", CK_STR, &data, 0, 0, "the data set (train: growing; test: the reported accuracy)"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0, "seed of the training"},
        {"--out", "DIR", CK_STR, &out, 0, 0, "the folder to write"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "a setting (repeatable; see above)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {0},
    };
    const ck_verb v = {
        "grow", NULL, NULL,
        "--roadmap R --data D.data --seed N --out DIR [--set key=value ...] [--threads T]",
        "NestDNN's freeze-&-grow: the roadmap's seed is capacity 1; the model grows back along\n"
        "the roadmap to its step 0 (the base) in `capacities` steps (steps where every pruned\n"
        "layer grows, when the roadmap has them, then those nearest to evenly spaced MACs); at\n"
        "each step the new filters start from their pre-pruning weights (the roadmap's model of\n"
        "that size) and train `batches` batches together with the old filters' input slices\n"
        "that read the new channels, while every older parameter is frozen; the old channels'\n"
        "batch-norm statistics follow each capacity and are kept per capacity, so every smaller\n"
        "capacity computes bit for bit what it computed when it was trained. Writes\n"
        "DIR/variant.cfg and DIR/init.weights (the full capacity: a plain Darknet model),\n"
        "DIR/capacity_bn.weights (the smaller capacities' batch-norm vectors), DIR/capacities.json\n"
        "(per capacity the filters per layer, test top-1 with its 95% Wilson interval, MACs,\n"
        "parameters, weight bytes; page-in/out bytes of every switch) and DIR/meta.json\n"
        "(written last: technique nested with the manifest's capacities).\n"
        "--set keys: batches (100), learning_rate (0.01), capacities (5), bn_batches (20: training\n"
        "batches that re-estimate the new channels' batch-norm statistics after each growth step),\n"
        "revive (0.01: a new filter whose outputs are non-zero at less than this fraction of\n"
        "positions restarts from the engine's initialisation; 0: never), slices (1; 0: the\n"
        "earlier format: the old filters' slices of new channels zero and frozen, one set of\n"
        "batch-norm statistics, no capacity_bn.weights), bn_affine (0; 1: the old channels'\n"
        "batch-norm scales and shifts also train and are kept per capacity).\n",
        opts, NULL};
    const char *extra;
    int rc0;
    if (ck_parse("prune", &v, argc + 1, argv - 1, &extra, 0, &rc0) < 0) return rc0 == 0 ? 0 : -3;
    const char *need[][2] = {{"roadmap", roadp}, {"data", data}, {"out", out}};
    if (prn_cli_need(need, sizeof need / sizeof *need, seed, err)) return -2;
    if (prn_cli_out_ok(out, 1, err)) return -1;
    for (int i = 0; i < set.n; i++)
        if (gr_set(set.v[i], &batches, &lr, &ncap, &bn_batches, &revive, &slices, &affine, err)) return -2;
    trn_set_threads((int)threads);

    int rc = -1;
    char *buf = NULL, rdir[4096], tmpdir[4200], path[4400];
    size_t len;
    cJSON *road = NULL, *j = NULL;
    trn_dataset *ds = NULL;
    trn_cfg *cfg = NULL, *tc = NULL;
    trn_net *base = NULL, *net = NULL, *init = NULL, *ev = NULL, *fresh = NULL;
    prn_nest nest = {0};
    prn_nest_bn capbn = {0};
    int caps_step[GR_MAX_CAP];
    rm_acc acc[GR_MAX_CAP];
    trn_net_totals tot[GR_MAX_CAP];
    gr_feed f = {0};
    int made_dir = access(out, F_OK) != 0;
    tmpdir[0] = 0;
    if (trn_read_file(roadp, 64u << 20, &buf, &len, err) != 0) return -1;
    road = cJSON_ParseWithLength(buf, len);
    const cJSON *fmt = road ? cJSON_GetObjectItem(road, "format") : NULL;
    const cJSON *steps = road ? cJSON_GetObjectItem(road, "steps") : NULL;
    const cJSON *jseed = road ? cJSON_GetObjectItem(road, "seed_step") : NULL;
    const cJSON *rlayers = road ? cJSON_GetObjectItem(road, "layers") : NULL;
    if (!road || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "prune-roadmap") || !cJSON_IsArray(steps) ||
        !cJSON_IsNumber(jseed) || !cJSON_IsArray(rlayers)) {
        trn_errf(err, "%s is not a roadmap.json written by `prune roadmap` (format \"prune-roadmap\" with "
                      "steps, seed_step and layers)", roadp);
        goto done;
    }
    int seed_step = jseed->valueint;
    if (seed_step < 1 || seed_step >= cJSON_GetArraySize(steps)) {
        trn_errf(err, "%s: seed_step %d: the roadmap must hold at least one passing pruning step to grow from",
                 roadp, seed_step);
        goto done;
    }
    if (ncap > seed_step + 1) ncap = seed_step + 1;
    /* Capacities: capacity 1 = the seed, the last = step 0; between them
     * steps in which every pruned layer grows where the roadmap allows it
     * (a layer that gains nothing blocks the channels grown below it), then
     * those nearest to evenly spaced MACs (prn_nest_pick_steps). */
    {
        int ns = cJSON_GetArraySize(steps), nl = cJSON_GetArraySize(rlayers);
        int *kc = calloc((size_t)ns * (size_t)(nl ? nl : 1), sizeof *kc);
        double *mc = calloc((size_t)ns, sizeof *mc);
        int bad = !kc || !mc;
        for (int st = 0; !bad && st < ns; st++) {
            const cJSON *sj = cJSON_GetArrayItem(steps, st), *kept = cJSON_GetObjectItem(sj, "kept");
            mc[st] = cJSON_GetNumberValue(cJSON_GetObjectItem(sj, "macs"));
            bad = cJSON_GetArraySize(kept) != nl;
            for (int l = 0; !bad && l < nl; l++) kc[(size_t)st * nl + l] = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(kept, l));
        }
        int blocked = bad ? -1 : prn_nest_pick_steps(ns, nl, kc, mc, seed_step, (int)ncap, caps_step, err);
        free(kc), free(mc);
        if (bad) trn_errf(err, "%s: a step's kept[] does not match layers[] (or out of memory)", roadp);
        if (blocked < 0) goto done;
        if (blocked > 0)
            fprintf(stderr, "prune grow: in %d of the %lld growth steps some layer gains no filter (the roadmap "
                            "has no step where it does): the channels grown below it reach nothing\n",
                    blocked, ncap - 1);
    }
    dir_of(roadp, rdir, sizeof rdir);
    if (!(ds = trn_dataset_open(data, err))) goto done;
    if (!trn_dataset_count(ds, TRN_SPLIT_TRAIN) || !trn_dataset_count(ds, TRN_SPLIT_TEST)) {
        trn_errf(err, "%s: grow needs a train and a test split", data);
        goto done;
    }
    if (!(base = load_step(steps, 0, rdir, &cfg, err))) goto done;
    int L = trn_net_layers(base);
    nest.ncap = (int)ncap;
    nest.nlayers = L;
    nest.filters = calloc((size_t)ncap * (size_t)L, sizeof *nest.filters);
    nest.fixed = calloc((size_t)L, 1);
    if (!nest.filters || !nest.fixed) {
        trn_errf(err, "out of memory");
        goto done;
    }
    nest.train_slices = (int)slices;
    nest.bn_affine = (int)affine;
    for (int i = 0; i < L; i++) nest.fixed[i] = trn_net_full_filters(base, i) > 0;
    for (int k = 0; k < ncap; k++) {
        for (int i = 0; i < L; i++) nest.filters[(size_t)k * L + i] = trn_net_full_filters(base, i);
        const cJSON *kept = cJSON_GetObjectItem(cJSON_GetArrayItem(steps, caps_step[k]), "kept");
        if (cJSON_GetArraySize(kept) != cJSON_GetArraySize(rlayers)) {
            trn_errf(err, "%s: step %d's kept[] does not match layers[]", roadp, caps_step[k]);
            goto done;
        }
        for (int l = 0; l < cJSON_GetArraySize(rlayers); l++) {
            const cJSON *li = cJSON_GetObjectItem(cJSON_GetArrayItem(rlayers, l), "layer");
            const cJSON *kv = cJSON_GetArrayItem(kept, l);
            if (!cJSON_IsNumber(li) || !cJSON_IsNumber(kv) || li->valueint < 0 || li->valueint >= L) {
                trn_errf(err, "%s: layers[%d] or step %d's kept[%d] is not a valid number", roadp, l, caps_step[k], l);
                goto done;
            }
            nest.filters[(size_t)k * L + li->valueint] = kv->valueint;
            nest.fixed[li->valueint] = 0;
        }
    }
    /* A ranked layer without batch norm that the roadmap never pruned (the
     * connected layers of a connected=0 roadmap) is fixed like the
     * classifier: all its rows read the new input channels through trained
     * columns. Growing with nothing to grow would zero and freeze those
     * columns, leaving the new channels below it no path to the output. */
    for (int i = 0; i < L; i++) {
        trn_layer_info in;
        trn_net_layer_info(base, i, &in);
        int whole = !nest.fixed[i] && trn_net_full_filters(base, i) > 0 && !in.batch_normalize;
        for (int k = 0; whole && k < ncap; k++) whole = nest.filters[(size_t)k * L + i] == trn_net_full_filters(base, i);
        if (whole) nest.fixed[i] = 1;
    }
    /* The growing network: step 0's cfg with the growth schedule. */
    if (!(tc = trn_cfg_clone(cfg, err)) || trn_cfg_setf(tc, 0, "learning_rate", err, "%.9g", lr) ||
        trn_cfg_set(tc, 0, "policy", "poly", err) || trn_cfg_set(tc, 0, "power", "2", err) ||
        trn_cfg_set(tc, 0, "burn_in", "0", err) || trn_cfg_setf(tc, 0, "max_batches", err, "%lld", batches > 0 ? batches : 1))
        goto done;
    if (!(net = prn_cli_net_like(tc, base, 0, 0, (uint64_t)seed, err))) goto done;
    if (prn_nest_check(net, &nest, err) || prn_nest_bn_init(&capbn, net, &nest, err)) goto done;
    trn_net *seedn = load_step(steps, caps_step[0], rdir, NULL, err);
    if (!seedn) goto done;
    rc = prn_nest_start(net, &nest, seedn, err);
    trn_net_free(seedn);
    if (rc == 0) rc = prn_nest_bn_keep(&capbn, net, &nest, 0, err);
    if (rc) goto done;
    rc = -1;
    if (trn_mkdir_p(out, err) != 0) goto done;
    snprintf(tmpdir, sizeof tmpdir, "%s/.grow", out);
    trn_loader_opts lo;
    if (prn_cli_loader_opts(net, roadp, trn_net_batch(net), (uint64_t)seed, (int)threads, (size_t)256 << 20, &lo,
                            err) ||
        !(f.ld = trn_loader_open(ds, TRN_SPLIT_TRAIN, &lo, err)))
        goto done;
    for (int k = 1; k < ncap; k++) {
        if (!(init = load_step(steps, caps_step[k], rdir, NULL, err))) goto done;
        if (prn_nest_grow(net, &nest, k, init, err)) goto done;
        trn_net_free(init);
        init = NULL;
        /* Dead new filters restart from the engine's initialisation (their
         * statistics first re-estimated, so that a channel is judged by what
         * it computes at this capacity). */
        int revived = 0;
        if (revive > 0) {
            if (!fresh) {
                trn_net_opts fo;
                prn_net_opts(&fo, (uint64_t)seed);
                if (!(fresh = trn_net_create(tc, &fo, err))) goto done;
            }
            if (prn_bn_recalibrate(net, feed_batch, &f, (uint64_t)batches + (uint64_t)bn_batches, (int)bn_batches,
                                   err) != 0 ||
                prn_nest_revive(net, &nest, k, fresh, feed_batch, &f, (uint64_t)batches, GR_REVIVE_BATCHES, revive,
                                &revived, err) != 0)
                goto done;
        }
        if (batches > 0) {
            trn_net_set_seen(net, 0);
            trn_train_opts to = {.next_batch = feed_batch, .batch_ctx = &f, .backup_dir = tmpdir, .base = "grow"};
            if (trn_train(net, &to, err) != 0) goto done;
        }
        /* The capacity's batch-norm statistics, re-estimated with its inputs
         * (the new channels', and with trained slices the old ones', whose
         * inputs now include the new channels; frozen ones stay), then kept
         * as this capacity's. */
        if (prn_bn_recalibrate(net, feed_batch, &f, (uint64_t)batches, (int)bn_batches, err) != 0 ||
            prn_nest_bn_keep(&capbn, net, &nest, k, err) != 0)
            goto done;
        fprintf(stderr, "prune grow: capacity %d (roadmap step %d) grown (%d dead new filters restarted)\n", k + 1,
                caps_step[k], revived);
    }
    prn_nest_finish(net);
    /* Measure every capacity. */
    if (!(ev = prn_cli_net_like(cfg, net, GR_EVAL_BATCH, 1, 0, err))) goto done;
    for (int k = 0; k < ncap; k++) {
        /* with its per-image record, for catalog pack's paired test */
        snprintf(path, sizeof path, "%s/capacity-%d.predictions", out, k + 1);
        if (prn_nest_bn_apply(&capbn, ev, &nest, k, err) ||
            prn_cli_evaluate_preds(ev, ds, TRN_SPLIT_TEST, (int)threads, &acc[k], path, err))
            goto done;
        trn_net_get_totals(ev, &tot[k]);
        fprintf(stderr, "prune grow: capacity %d: %llu MACs, test top-1 %.4f [%.4f, %.4f] on %llu images\n",
                k + 1, (unsigned long long)tot[k].macs, acc[k].top1, acc[k].lo, acc[k].hi,
                (unsigned long long)acc[k].images);
    }
    if (trn_net_set_capacity(ev, NULL, err)) goto done;
    /* Files: variant.cfg, init.weights, capacities.json, then meta.json. */
    snprintf(path, sizeof path, "%s/variant.cfg", out);
    if (trn_cfg_write(cfg, path, err)) goto done;
    snprintf(path, sizeof path, "%s/init.weights", out);
    trn_net_set_seen(net, 0);
    if (trn_weights_save(net, path, err)) goto done;
    snprintf(path, sizeof path, "%s/%s", out, GR_BN_FILE);
    if (capbn.roles && prn_nest_bn_save(&capbn, &nest, path, err)) goto done;
    j = cJSON_CreateObject();
    cJSON *jc = cJSON_CreateArray(), *jp = cJSON_CreateArray(), *jl = cJSON_CreateArray();
    if (!j || !jc || !jp || !jl) {
        cJSON_Delete(jc), cJSON_Delete(jp), cJSON_Delete(jl);
        trn_errf(err, "out of memory");
        goto done;
    }
    cJSON_AddStringToObject(j, "format", "prune-nest");
    cJSON_AddNumberToObject(j, "version", 1);
    cJSON_AddStringToObject(j, "roadmap", roadp);
    cJSON_AddStringToObject(j, "data", data);
    cJSON_AddNumberToObject(j, "seed", (double)seed);
    cJSON *js = cJSON_AddObjectToObject(j, "settings");
    cJSON_AddNumberToObject(js, "batches", (double)batches);
    cJSON_AddNumberToObject(js, "learning_rate", lr);
    cJSON_AddNumberToObject(js, "bn_batches", (double)bn_batches);
    cJSON_AddNumberToObject(js, "revive", revive);
    cJSON_AddNumberToObject(js, "slices", (double)slices);
    cJSON_AddNumberToObject(js, "bn_affine", (double)affine);
    cJSON_AddStringToObject(j, "cfg", "variant.cfg");
    cJSON_AddStringToObject(j, "weights", "init.weights");
    cJSON_AddNumberToObject(j, "weights_bytes", (double)trn_weights_bytes(net));
    if (capbn.roles) {
        cJSON_AddItemToObject(j, "bn_per_capacity", bn_json(capbn.roles));
        cJSON_AddStringToObject(j, "bn_file", GR_BN_FILE);
        cJSON_AddNumberToObject(j, "bn_file_bytes", (double)(PRN_NEST_BN_HEADER + capbn.off[ncap - 1] * sizeof(float)));
        cJSON_AddStringToObject(j, "bn_note", "an old channel reads the channels grown after it (trained slices), so "
                                              "its batch-norm vectors differ per capacity: the largest capacity's are "
                                              "in the weights, the others' in bn_file");
    } else {
        cJSON_AddFalseToObject(j, "bn_per_capacity");
        cJSON_AddStringToObject(j, "bn_note", "an old channel reads only old channels (its new-input slices are "
                                              "zero), so its batch-norm statistics are the same at every capacity");
    }
    for (int i = 0; i < L; i++) {
        cJSON *o = cJSON_CreateObject();
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        cJSON_AddNumberToObject(o, "layer", i);
        cJSON_AddStringToObject(o, "type", trn_layer_kind_name(in.kind));
        cJSON_AddNumberToObject(o, "filters", trn_net_full_filters(net, i));
        cJSON_AddBoolToObject(o, "fixed", nest.fixed[i] && trn_net_full_filters(net, i) > 0);
        cJSON_AddItemToArray(jl, o);
    }
    cJSON_AddItemToObject(j, "layers", jl);
    uint64_t sum = 0;
    for (int k = 0; k < ncap; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "capacity", k + 1);
        cJSON_AddNumberToObject(o, "roadmap_step", caps_step[k]);
        cJSON_AddItemToObject(o, "filters", prn_json_ints(nest.filters + (size_t)k * L, L));
        cJSON_AddNumberToObject(o, "macs", (double)tot[k].macs);
        cJSON_AddNumberToObject(o, "params", (double)tot[k].params);
        cJSON_AddNumberToObject(o, "weight_bytes", (double)tot[k].weight_bytes);
        cJSON_AddNumberToObject(o, "peak_activation_bytes", (double)tot[k].peak_activation_bytes);
        cJSON_AddItemToObject(o, "test", prn_cli_acc_json(&acc[k]));
        uint64_t zp = 0, zm = 0;
        if (prn_nest_zero_slices(net, &nest, k, &zp, &zm) != 0) {
            trn_errf(err, "out of memory");
            goto done;
        }
        /* the old filters' slices of newer channels: zero (slices=0) or trained */
        cJSON_AddNumberToObject(o, slices ? "cross_slice_params" : "zero_slice_params", (double)zp);
        cJSON_AddNumberToObject(o, slices ? "cross_slice_macs" : "zero_slice_macs", (double)zm);
        cJSON_AddItemToArray(jc, o);
        sum += tot[k].weight_bytes;
    }
    cJSON_AddItemToObject(j, "capacities", jc);
    cJSON_AddNumberToObject(j, "sum_independent_weight_bytes", (double)sum);
    for (int a = 0; a < ncap; a++)
        for (int b = 0; b < ncap; b++) {
            if (a == b) continue;
            cJSON *o = cJSON_CreateObject();
            uint64_t d = a < b ? tot[b].weight_bytes - tot[a].weight_bytes : tot[a].weight_bytes - tot[b].weight_bytes;
            cJSON_AddNumberToObject(o, "from", a + 1);
            cJSON_AddNumberToObject(o, "to", b + 1);
            cJSON_AddNumberToObject(o, "page_in_bytes", (double)(a < b ? d : 0));
            cJSON_AddNumberToObject(o, "page_out_bytes", (double)(a < b ? 0 : d));
            cJSON_AddItemToArray(jp, o);
        }
    cJSON_AddItemToObject(j, "switches", jp);
    char *text = cJSON_Print(j);
    snprintf(path, sizeof path, "%s/capacities.json", out);
    if (!text) trn_errf(err, "out of memory");
    else if (prn_appendf(&text, "\n") == 0 && trn_write_file_atomic(path, text, strlen(text), err) == 0) rc = 0;
    free(text);
    /* meta.json: the manifest's technique fields (catalog/manifest.schema.json, capacity). */
    if (rc == 0) {
        rc = -1;
        cJSON *meta = cJSON_CreateObject(), *caps = cJSON_CreateArray();
        char desc[256];
        snprintf(desc, sizeof desc, "NestDNN multi-capacity model: %d capacities grown from a %s roadmap",
                 (int)ncap, cJSON_IsString(cJSON_GetObjectItem(road, "method")) ?
                 cJSON_GetObjectItem(road, "method")->valuestring : "pruning");
        for (int k = 0; meta && caps && k < ncap; k++) {
            cJSON *o = cJSON_CreateObject(), *ci = cJSON_CreateArray(), *pin = cJSON_CreateObject(),
                  *pout = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "capacity", k + 1);
            for (int i = 0; i < L; i++) {
                int fk = nest.filters[(size_t)k * L + i];
                if (fk <= 0) continue;
                cJSON *e = cJSON_CreateObject();
                cJSON_AddNumberToObject(e, "layer", i);
                cJSON_AddNumberToObject(e, "channels", fk);
                cJSON_AddItemToArray(ci, e);
            }
            cJSON_AddItemToObject(o, "channel_index", ci);
            cJSON_AddNumberToObject(o, "macs", (double)tot[k].macs);
            cJSON_AddNumberToObject(o, "params", (double)tot[k].params);
            cJSON_AddNumberToObject(o, "weight_bytes", (double)tot[k].weight_bytes);
            cJSON_AddNumberToObject(o, "peak_activation_bytes", (double)tot[k].peak_activation_bytes);
            cJSON_AddNumberToObject(o, "top1", acc[k].top1);
            cJSON_AddItemToObject(o, "test", prn_cli_acc_json(&acc[k]));
            for (int b = 0; b < ncap; b++) {
                char key[16];
                snprintf(key, sizeof key, "%d", b + 1);
                if (b > k) cJSON_AddNumberToObject(pin, key, (double)(tot[b].weight_bytes - tot[k].weight_bytes));
                if (b < k) cJSON_AddNumberToObject(pout, key, (double)(tot[k].weight_bytes - tot[b].weight_bytes));
            }
            cJSON_AddItemToObject(o, "page_in_bytes", pin);
            cJSON_AddItemToObject(o, "page_out_bytes", pout);
            cJSON_AddItemToArray(caps, o);
        }
        if (meta && caps) {
            cJSON_AddStringToObject(meta, "technique", "nested");
            cJSON_AddStringToObject(meta, "parent", "base");
            cJSON_AddStringToObject(meta, "description", desc);
            cJSON *tf = cJSON_AddObjectToObject(meta, "technique_fields");
            cJSON_AddItemToObject(tf, "capacities", caps);
            caps = NULL;
            cJSON_AddStringToObject(tf, "capacities_file", "capacities.json");
            if (capbn.roles) cJSON_AddItemToObject(tf, "bn_per_capacity", bn_json(capbn.roles));
            cJSON_AddNumberToObject(tf, "sum_independent_weight_bytes", (double)sum);
            text = cJSON_Print(meta);
            snprintf(path, sizeof path, "%s/meta.json", out);
            if (!text) trn_errf(err, "out of memory");
            else if (prn_appendf(&text, "\n") == 0 && trn_write_file_atomic(path, text, strlen(text), err) == 0)
                rc = 0;
            free(text);
        } else {
            trn_errf(err, "out of memory");
        }
        cJSON_Delete(caps);
        cJSON_Delete(meta);
    }
    if (rc == 0)
        fprintf(stderr, "prune grow: %s: %d capacities, model %llu bytes, the independent descendants %llu bytes "
                        "(%.3fx)\n", out, (int)ncap, (unsigned long long)tot[ncap - 1].weight_bytes,
                (unsigned long long)sum, (double)tot[ncap - 1].weight_bytes / (double)sum);
done:
    if (tmpdir[0]) {
        snprintf(path, sizeof path, "%s/grow.ckpt", tmpdir);
        unlink(path);
        snprintf(path, sizeof path, "%s/grow.weights", tmpdir);
        unlink(path);
        rmdir(tmpdir);
    }
    if (rc != 0 && out) {
        const char *names[] = {"meta.json", "capacities.json", GR_BN_FILE, "init.weights", "variant.cfg"};
        for (size_t i = 0; i < 5; i++) {
            snprintf(path, sizeof path, "%s/%s", out, names[i]);
            unlink(path);
        }
        for (long long k = 0; k < ncap; k++) {
            snprintf(path, sizeof path, "%s/capacity-%lld.predictions", out, k + 1);
            unlink(path);
        }
        if (made_dir) rmdir(out);
    }
    trn_loader_close(f.ld);
    prn_nest_free(&nest);
    prn_nest_bn_free(&capbn);
    trn_net_free(init);
    trn_net_free(fresh);
    trn_net_free(ev);
    trn_net_free(net);
    trn_net_free(base);
    trn_cfg_free(tc);
    trn_cfg_free(cfg);
    trn_dataset_close(ds);
    cJSON_Delete(road);
    cJSON_Delete(j);
    free(buf);
    return rc;
}
