/*
 * describe.c: variant.json, the contract between the variant stage and the
 * catalog (catalog/variant.schema.json, common brief "Variant folders"),
 * assembled from what the variant stage wrote:
 *
 *   meta.json     (prune, or make for the base)
 *                 {"technique", "parent", "description", "technique_fields"}
 *   eval.json     (`trainer valid --json`) the accuracy on a split: the keys
 *                 "split" (default "test"), "images", "top1", "top5" and
 *                 "classes"; top5 is required and kept when there are more
 *                 than 5 classes, dropped otherwise (a top-5 of 5 classes or
 *                 fewer is always 1, and the manifest refuses it). Without
 *                 "classes", the class count is the output size of the
 *                 network's last layer that is not a [cost] layer
 *   profile.json  (`catalog profile`, profile.c) "cost" and "latency"
 *   *.predictions (optional) per-image records of the test split (trn_preds):
 *                 eval.predictions (`trainer valid --predictions`) behind
 *                 the accuracy, exits.predictions (prune early-exit, alpha
 *                 1) instead for an early-exit variant, and
 *                 capacity-<k>.predictions (prune grow) behind capacity k;
 *                 those present are named under "predictions" for catalog
 *                 pack's paired test
 *
 * The folder must hold variant.cfg and variant.weights. The profile's
 * MACs, parameters, peak activation bytes and per-layer table (measured
 * while the network ran) must equal the cost model's prediction from
 * variant.cfg alone (costmodel.c); a disagreement is an error, so every
 * variant of every build checks the cost model. The result is checked
 * against the built-in variant schema before it is written (atomically,
 * keys sorted).
 */
#include "cat.h"
#include "techniques.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define JSON_MAX (64u << 20)

typedef struct report_buf {
    char *msg;
    size_t size;
    int n;
} report_buf;

static void first_violation(void *user, const char *pointer, const char *msg)
{
    report_buf *r = user;
    if (r->n++ == 0) snprintf(r->msg, r->size, "%s: %s", pointer[0] ? pointer : "/", msg);
}

/* The class count: eval.json's "classes", else the output size of the
 * network's last layer that is not a [cost] layer (from the profile). */
static double classes_of(const cJSON *ev, const cJSON *cost)
{
    double c = cat_json_num(ev, "classes", 0);
    const cJSON *layers = cJSON_GetObjectItem(cost, "layers");
    for (int i = cJSON_GetArraySize(layers) - 1; c <= 0 && i >= 0; i--) {
        const cJSON *l = cJSON_GetArrayItem(layers, i);
        if (strcmp(cat_json_str(l, "type", ""), "cost") == 0) continue;
        const cJSON *out = cJSON_GetObjectItem(l, "output");
        c = 1;
        for (int k = 0; k < cJSON_GetArraySize(out); k++) c *= cJSON_GetArrayItem(out, k)->valuedouble;
    }
    return c;
}

/* [lo, hi] of a fraction measured over n images, rounded to 6 decimals. */
static cJSON *interval(double frac, double n)
{
    double lo, hi, k = frac * n + 0.5;
    trn_wilson((uint64_t)(k > n ? n : k), (uint64_t)n, &lo, &hi);
    double v[2] = {round(lo * 1e6) / 1e6, round(hi * 1e6) / 1e6};
    return cJSON_CreateDoubleArray(v, 2);
}

int cat_accuracy_add_intervals(cJSON *a)
{
    static const char *const keys[][2] = {{"top1", "top1_ci"}, {"top5", "top5_ci"}};
    const cJSON *img = cJSON_GetObjectItemCaseSensitive(a, "images");
    if (!cJSON_IsNumber(img) || img->valuedouble < 1) return 0;
    for (size_t i = 0; i < 2; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(a, keys[i][0]);
        if (!cJSON_IsNumber(f) || cJSON_GetObjectItemCaseSensitive(a, keys[i][1])) continue;
        cJSON *ci = interval(f->valuedouble, img->valuedouble);
        if (!ci || !cJSON_AddItemToObject(a, keys[i][1], ci)) {
            cJSON_Delete(ci);
            return -1;
        }
    }
    return 0;
}

/* The accuracy object {"split", "images", "top1"[, "top5"]} of eval.json,
 * with the 95% Wilson interval of each fraction ("top1_ci", "top5_ci"). */
static cJSON *accuracy_of(const cJSON *ev, double classes, const char *path, trn_err *err)
{
    const cJSON *top1 = cJSON_GetObjectItem(ev, "top1"), *img = cJSON_GetObjectItem(ev, "images");
    if (!cJSON_IsNumber(top1) || top1->valuedouble < 0 || top1->valuedouble > 1) {
        trn_errf(err, "%s: \"top1\" is missing or not a fraction in [0, 1]", path);
        return NULL;
    }
    if (!cJSON_IsNumber(img) || img->valuedouble < 1) {
        trn_errf(err, "%s: \"images\" is missing or not a positive count", path);
        return NULL;
    }
    const char *split = cat_json_str(ev, "split", "test");
    const cJSON *top5 = cJSON_GetObjectItem(ev, "top5");
    if (classes > 5 && !cJSON_IsNumber(top5)) {
        trn_errf(err, "%s: \"top5\" is missing, and the network has %.0f classes (more than 5)",
                 path, classes);
        return NULL;
    }
    cJSON *a = cJSON_CreateObject();
    if (!a || !cJSON_AddStringToObject(a, "split", split) ||
        !cJSON_AddNumberToObject(a, "images", img->valuedouble) ||
        !cJSON_AddNumberToObject(a, "top1", top1->valuedouble) ||
        (cJSON_IsNumber(top5) && classes > 5 && !cJSON_AddNumberToObject(a, "top5", top5->valuedouble)) ||
        cat_accuracy_add_intervals(a) != 0) {
        cJSON_Delete(a);
        trn_errf(err, "out of memory");
        return NULL;
    }
    return a;
}

static int file_exists(const char *dir, const char *name, trn_err *err)
{
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return trn_errf(err, "%s is missing: a variant folder holds variant.cfg and variant.weights",
                        path);
    return 0;
}

/* Compares the profiled cost object with the cost model of dir/variant.cfg.
 * -1 with an error naming the first figure that differs. */
static int check_cost_model(const char *dir, const cJSON *cost, trn_err *err)
{
    char path[4096 + 16];
    snprintf(path, sizeof path, "%s/variant.cfg", dir);
    trn_cfg *cfg = trn_cfg_read(path, err);
    if (!cfg) return -1;
    cat_cost m;
    int rc = cat_cost_model(cfg, &m, err);
    trn_cfg_free(cfg);
    if (rc != 0) {
        cat_cost_free(&m);
        return trn_err_prefix(err, "cost model of %s", path);
    }
    static const char *const totals[] = {"macs", "params", "peak_activation_bytes"};
    const uint64_t predicted[] = {m.macs, m.params, m.peak_activation_bytes};
    for (size_t i = 0; i < sizeof totals / sizeof *totals && rc == 0; i++) {
        double got = cat_json_num(cost, totals[i], -1);
        if (got != (double)predicted[i])
            rc = trn_errf(err, "%s: the profile's %s (%.0f, counted while running) differs from "
                          "the cost model's %llu (from the cfg): profile.json is stale or the "
                          "cost model and the network disagree",
                          path, totals[i], got, (unsigned long long)predicted[i]);
    }
    const cJSON *layers = cJSON_GetObjectItem(cost, "layers");
    if (rc == 0 && cJSON_GetArraySize(layers) != m.n)
        rc = trn_errf(err, "%s: the profile has %d layers, the cost model %d", path,
                      cJSON_GetArraySize(layers), m.n);
    for (int i = 0; rc == 0 && i < m.n; i++) {
        const cJSON *l = cJSON_GetArrayItem(layers, i);
        if (cat_json_num(l, "macs", -1) != (double)m.layers[i].macs ||
            cat_json_num(l, "params", -1) != (double)m.layers[i].params ||
            cat_json_num(l, "output_bytes", -1) != (double)m.layers[i].output_bytes)
            rc = trn_errf(err, "%s: layer %d (%s): the profile's MACs/params/output bytes "
                          "(%.0f/%.0f/%.0f) differ from the cost model's (%llu/%llu/%llu)",
                          path, i, m.layers[i].type, cat_json_num(l, "macs", -1),
                          cat_json_num(l, "params", -1), cat_json_num(l, "output_bytes", -1),
                          (unsigned long long)m.layers[i].macs,
                          (unsigned long long)m.layers[i].params,
                          (unsigned long long)m.layers[i].output_bytes);
    }
    cat_cost_free(&m);
    return rc;
}

static int present(const char *dir, const char *name)
{
    char p[4200];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* v's "predictions": the per-image records present in dir (top comment). */
static void add_predictions(cJSON *v, const char *dir, const char *technique)
{
    cJSON *pr = cJSON_CreateObject(), *caps = cJSON_CreateArray(), *c;
    const char *own = strcmp(technique, TECHNIQUE_EARLY_EXIT) ? "eval.predictions" : "exits.predictions";
    if (present(dir, own)) cJSON_AddStringToObject(pr, "path", own);
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(cJSON_GetObjectItem(v, "technique_fields"), "capacities")) {
        char name[64];
        double k = cat_json_num(c, "capacity", 0);
        snprintf(name, sizeof name, "capacity-%.0f.predictions", k);
        if (k < 1 || !present(dir, name)) continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "capacity", k);
        cJSON_AddStringToObject(e, "path", name);
        cJSON_AddItemToArray(caps, e);
    }
    if (cJSON_GetArraySize(caps)) cJSON_AddItemToObject(pr, "capacities", caps);
    else cJSON_Delete(caps);
    if (cJSON_GetArraySize(pr)) cJSON_AddItemToObject(v, "predictions", pr);
    else cJSON_Delete(pr);
}

int cat_describe(const cat_describe_opts *o, trn_err *err)
{
    cJSON *ev = NULL, *prof = NULL, *meta = NULL, *v = NULL;
    cat_schema *schema = NULL;
    char *text = NULL;
    int rc = -1;
    if (strlen(o->dir) > 4000) return trn_errf(err, "%.60s...: path too long", o->dir);
    if (file_exists(o->dir, "variant.cfg", err) || file_exists(o->dir, "variant.weights", err))
        return -1;
    if ((!o->meta) == (!o->technique))
        return trn_errf(err, "give either a meta.json or a technique (base), not both");
    if (!(ev = cat_json_load(o->eval, JSON_MAX, err)) || !(prof = cat_json_load(o->profile, JSON_MAX, err)))
        goto out;
    if (o->meta && !(meta = cat_json_load(o->meta, JSON_MAX, err))) goto out;
    const char *technique = o->technique ? o->technique : cat_json_str(meta, "technique", NULL);
    if (!technique) {
        trn_errf(err, "%s: \"technique\" is missing", o->meta);
        goto out;
    }
    const cJSON *parent = meta ? cJSON_GetObjectItem(meta, "parent") : NULL;
    const cJSON *cost = cJSON_GetObjectItem(prof, "cost"), *lat = cJSON_GetObjectItem(prof, "latency");
    if (!cJSON_IsObject(cost) || !cJSON_IsObject(lat)) {
        trn_errf(err, "%s: \"cost\" and \"latency\" objects are required (write it with catalog profile)",
                 o->profile);
        goto out;
    }
    if (check_cost_model(o->dir, cost, err) != 0) goto out;
    cJSON *acc = accuracy_of(ev, classes_of(ev, cost), o->eval, err);
    if (!acc) goto out;
    v = cJSON_CreateObject();
    cJSON *accs = cJSON_CreateObject(), *files = cJSON_CreateArray(), *deps = cJSON_CreateArray();
    cJSON *f_cfg = cJSON_CreateObject(), *f_w = cJSON_CreateObject();
    if (!v || !accs || !files || !deps || !f_cfg || !f_w) {
        cJSON_Delete(acc);
        cJSON_Delete(accs);
        cJSON_Delete(files);
        cJSON_Delete(deps);
        cJSON_Delete(f_cfg);
        cJSON_Delete(f_w);
        trn_errf(err, "out of memory");
        goto out;
    }
    cJSON_AddItemToObject(accs, o->task, acc);
    cJSON_AddStringToObject(f_cfg, "role", "cfg");
    cJSON_AddStringToObject(f_cfg, "path", "variant.cfg");
    cJSON_AddStringToObject(f_w, "role", "weights");
    cJSON_AddStringToObject(f_w, "path", "variant.weights");
    cJSON_AddItemToArray(files, f_cfg);
    cJSON_AddItemToArray(files, f_w);
    cJSON_AddNumberToObject(v, "schema", 1);
    cJSON_AddStringToObject(v, "id", o->id);
    cJSON_AddStringToObject(v, "model", o->model);
    cJSON_AddStringToObject(v, "technique", technique);
    if (cJSON_IsString(parent) && strcmp(technique, TECHNIQUE_BASE) != 0)
        cJSON_AddStringToObject(v, "parent", parent->valuestring);
    else
        cJSON_AddNullToObject(v, "parent");
    /* Rewrites, SVD and mimic variants are whole networks: they need no
     * other variant's files at run time. Heads and specialised models are
     * whole networks too, but share with another variant: a head its
     * trunk (technique_fields.head.trunk), a specialised model its cascade
     * partner (technique_fields.cascade.partner); those are listed so that
     * winnowing keeps them and the runtime finds them. */
    const cJSON *tfs = meta ? cJSON_GetObjectItem(meta, "technique_fields") : NULL;
    const char *share[2] = {
        cat_json_str(cJSON_GetObjectItem(tfs, "head"), "trunk", NULL),
        cat_json_str(cJSON_GetObjectItem(tfs, "cascade"), "partner", NULL),
    };
    for (int k = 0; k < 2; k++)
        if (share[k] && (k == 0 || !share[0] || strcmp(share[0], share[k])))
            cJSON_AddItemToArray(deps, cJSON_CreateString(share[k]));
    cJSON_AddItemToObject(v, "depends_on", deps);
    cJSON_AddStringToObject(v, "description", meta ? cat_json_str(meta, "description", "") : "base model");
    cJSON_AddStringToObject(v, "task", o->task);
    cJSON_AddItemToObject(v, "files", files);
    cJSON_AddItemToObject(v, "accuracy", accs);
    cJSON_AddItemToObject(v, "cost", cJSON_Duplicate(cost, 1));
    cJSON_AddItemToObject(v, "latency", cJSON_Duplicate(lat, 1));
    const cJSON *tf = meta ? cJSON_GetObjectItem(meta, "technique_fields") : NULL;
    cJSON_AddItemToObject(v, "technique_fields", tf ? cJSON_Duplicate(tf, 1) : cJSON_CreateObject());
    /* Early exits (trainer/README.md, Early exits): the exits' side files,
     * and the accuracy of the exit model at alpha 1 (the trunk alone is
     * what eval.json measured): technique_fields.alpha_profile. */
    const cJSON *tfe = meta ? cJSON_GetObjectItem(meta, "technique_fields") : NULL;
    /* A nested model with batch-norm vectors per capacity (prune grow): their
     * file, which the runtime binds at a switch. */
    const char *bnf = cat_json_str(cJSON_GetObjectItem(tfe, "bn_per_capacity"), "file", NULL);
    if (strcmp(technique, TECHNIQUE_NESTED) == 0 && bnf) {
        if (strchr(bnf, '/')) {
            trn_errf(err, "%s: technique_fields.bn_per_capacity.file '%s' is not a file name in the variant's "
                     "folder", o->meta, bnf);
            goto out;
        }
        if (file_exists(o->dir, bnf, err) != 0) goto out;
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "role", "capacity_bn");
        cJSON_AddStringToObject(f, "path", bnf);
        cJSON_AddItemToArray(files, f);
    }
    if (strcmp(technique, TECHNIQUE_EARLY_EXIT) == 0) {
        static const char *const side[2][2] = {{"exits_cfg", "exits.cfg"}, {"exits_weights", "exits.weights"}};
        for (int k = 0; k < 2; k++) {
            if (file_exists(o->dir, side[k][1], err) != 0) goto out;
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "role", side[k][0]);
            cJSON_AddStringToObject(f, "path", side[k][1]);
            cJSON_AddItemToArray(files, f);
        }
        const cJSON *aprof = cJSON_GetObjectItem(tfe, "alpha_profile"), *p1 = NULL, *it;
        cJSON_ArrayForEach(it, aprof) {
            const cJSON *al = cJSON_GetObjectItem(it, "alpha");
            if (cJSON_IsNumber(al) && al->valuedouble == 1) p1 = it;
        }
        const cJSON *t1 = cJSON_GetObjectItem(p1, "top1"), *t5 = cJSON_GetObjectItem(p1, "top5");
        if (!cJSON_IsNumber(t1)) {
            trn_errf(err, "%s: an early-exit variant's technique_fields.alpha_profile has no alpha 1 entry with top1",
                     o->meta);
            goto out;
        }
        /* its cost: the expected MACs per input at alpha 1 (the default
         * knob) and the exits' weight bytes, which winnowing adds
         * (manifest.c); "macs" and "weight_bytes" stay the trunk's, as
         * profiled and checked against the cost model */
        const cJSON *em = cJSON_GetObjectItem(p1, "expected_macs");
        if (!cJSON_IsNumber(em) || em->valuedouble < 0) {
            trn_errf(err, "%s: an early-exit variant's alpha 1 entry of technique_fields.alpha_profile has no "
                     "expected_macs", o->meta);
            goto out;
        }
        cJSON_AddNumberToObject(cJSON_GetObjectItem(v, "cost"), "expected_macs", round(em->valuedouble));
        /* and the exits' parameters beside the trunk's: exits.weights less
         * its 20-byte Darknet header (0.2.0), float32 each */
        {
            char ep[4200];
            struct stat st;
            snprintf(ep, sizeof ep, "%s/exits.weights", o->dir);
            if (stat(ep, &st) != 0 || st.st_size < 20 || (st.st_size - 20) % 4 != 0) {
                trn_errf(err, "%s: not a Darknet weights file of the exits (20-byte header, float32 values)", ep);
                goto out;
            }
            cJSON_AddNumberToObject(cJSON_GetObjectItem(v, "cost"), "exits_weight_bytes", (double)(st.st_size - 20));
        }
        cJSON_ReplaceItemInObject(acc, "top1", cJSON_CreateNumber(t1->valuedouble));
        if (cJSON_IsNumber(t5) && cJSON_GetObjectItem(acc, "top5"))
            cJSON_ReplaceItemInObject(acc, "top5", cJSON_CreateNumber(t5->valuedouble));
        cJSON_DeleteItemFromObject(acc, "top1_ci");
        cJSON_DeleteItemFromObject(acc, "top5_ci");
        cJSON_DeleteItemFromObject(acc, "top1_lo");
        cJSON_DeleteItemFromObject(acc, "top1_hi");
        cJSON_DeleteItemFromObject(acc, "top5_lo");
        cJSON_DeleteItemFromObject(acc, "top5_hi");
        if (cat_accuracy_add_intervals(acc) != 0) {
            trn_errf(err, "out of memory");
            goto out;
        }
    }
    add_predictions(v, o->dir, technique);
    if (!(schema = cat_schema_builtin(err))) goto out;
    char first[600] = "";
    report_buf rb = {first, sizeof first, 0};
    int bad = cat_schema_validate(schema, "variant.schema.json", v, first_violation, &rb, err);
    if (bad < 0) goto out;
    if (bad > 0) {
        trn_errf(err, "the variant.json for %s would break catalog/variant.schema.json (%d "
                 "violation%s; first: %s); check --id, --model, --task and the input files",
                 o->dir, bad, bad == 1 ? "" : "s", first);
        goto out;
    }
    if (!(text = cat_json_print(v))) {
        trn_errf(err, "out of memory");
        goto out;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/variant.json", o->dir);
    rc = trn_write_file_atomic(path, text, strlen(text), err);
out:
    free(text);
    cJSON_Delete(ev);
    cJSON_Delete(prof);
    cJSON_Delete(meta);
    cJSON_Delete(v);
    cat_schema_free(schema);
    return rc;
}
