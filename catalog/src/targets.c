/*
 * targets.c: device target profiles and the roofline estimate.
 *
 * A profile (catalog/targets/<id>.json, schema $defs/target of
 * manifest.schema.json) gives the device's peak FP32 GFLOPS, memory
 * bandwidth (GB/s) and the power budget of a power mode. The estimate of a
 * variant on it (method "roofline-1"), at batch 1:
 *   flop      = 2 x MACs                      (bias, activation and pooling
 *                                              are not counted, as in cost)
 *   bytes     = weight_bytes + 2 x sum of the layers' output_bytes
 *               (every weight read once; every activation written once and
 *               read once by the next layer; 2 x peak_activation_bytes when
 *               the per-layer table is empty)
 *   t         = max(flop / peak, bytes / bandwidth)   -> "bound": which term won
 *   energy    = t x power_w                   (mJ when t is in ms)
 * It is a lower bound on time (perfect overlap, peak throughput) and an upper
 * bound on power; a figure to rank variants before they are measured on the
 * device, marked "source": "estimate" and kept apart from measured latency.
 *
 * The top-level figures model the unit named by the profile's
 * "compute_unit" (the GPU's CUDA cores); the optional "cpu" object (its own
 * peak_gflops, bandwidth, power) gives a second roofline, estimate.cpu, for
 * the CPU cores: the path the runtime takes today (the CUDA backend is not
 * written), so that is the figure to compare with measured CPU latency.
 */
#include "cat.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_target(cJSON *all, const char *file, cJSON *profile, trn_err *err)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    char id[RTL_ID_MAX + 1];
    size_t n = strlen(base);
    if (n < 6 || n - 5 > RTL_ID_MAX || strcmp(base + n - 5, ".json") != 0) {
        cJSON_Delete(profile);
        return trn_errf(err, "%s: a target profile is named <id>.json", file);
    }
    memcpy(id, base, n - 5);
    id[n - 5] = '\0';
    if (!cJSON_IsObject(profile)) {
        cJSON_Delete(profile);
        return trn_errf(err, "%s: a target profile is a JSON object", file);
    }
    cJSON_AddItemToObject(all, id, profile);
    return 0;
}

cJSON *cat_targets_load(const char *dir, trn_err *err)
{
    cJSON *all = cJSON_CreateObject();
    if (!all) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    if (!dir) {
        for (size_t i = 0; i < cat_embedded_count; i++) {
            const struct cat_embedded *e = &cat_embedded_files[i];
            if (strncmp(e->name, "targets/", 8) != 0) continue;
            cJSON *p = cat_json_parse(e->data, e->len, NULL);
            if (!p || add_target(all, e->name, p, err) != 0) {
                if (!p) trn_errf(err, "built-in %s is not valid JSON", e->name);
                cJSON_Delete(all);
                return NULL;
            }
        }
        return all;
    }
    DIR *d = opendir(dir);
    if (!d) {
        trn_errf(err, "cannot read the target folder %s", dir);
        cJSON_Delete(all);
        return NULL;
    }
    struct dirent *de;
    char **names = NULL;
    size_t n = 0;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 6 || strcmp(de->d_name + l - 5, ".json") != 0) continue;
        char **g = realloc(names, (n + 1) * sizeof *g);
        if (!g) break;
        names = g;
        names[n++] = strdup(de->d_name);
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* sorted, so the object's order is stable */
        for (size_t k = i; k > 0 && strcmp(names[k - 1] ? names[k - 1] : "", names[k] ? names[k] : "") > 0; k--) {
            char *t = names[k];
            names[k] = names[k - 1];
            names[k - 1] = t;
        }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i] ? names[i] : "");
        cJSON *p = rc == 0 && names[i] ? cat_json_load(path, 1 << 20, err) : NULL;
        if (rc == 0 && (!p || add_target(all, path, p, err) != 0)) rc = -1;
        free(names[i]);
    }
    free(names);
    if (rc != 0) {
        cJSON_Delete(all);
        return NULL;
    }
    return all;
}

/* 6 significant digits: estimates are rough, and short numbers read better. */
static double round6(double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.6g", x);
    return strtod(buf, NULL);
}

static int num(const cJSON *o, const char *k, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v)) return -1;
    *out = v->valuedouble;
    return 0;
}

/* The roofline of one compute unit: ms, mJ and which term won. */
struct roofline {
    double ms, mj;
    int compute_bound;
};

static int roofline(double flop, double bytes, const cJSON *unit, struct roofline *r)
{
    double gflops, bw, power;
    if (num(unit, "peak_gflops", &gflops) || num(unit, "memory_bandwidth_gbps", &bw) || num(unit, "power_w", &power) ||
        gflops <= 0 || bw <= 0 || power <= 0)
        return -1;
    double t_compute = flop / (gflops * 1e9), t_memory = bytes / (bw * 1e9);
    r->ms = 1e3 * fmax(t_compute, t_memory);
    r->mj = r->ms * power;
    r->compute_bound = t_compute >= t_memory;
    return 0;
}

cJSON *cat_estimate(const cJSON *cost, const cJSON *target, trn_err *err)
{
    double macs, wbytes, peak_act;
    if (num(cost, "macs", &macs) || num(cost, "weight_bytes", &wbytes) || num(cost, "peak_activation_bytes", &peak_act)) {
        trn_errf(err, "cost lacks macs, weight_bytes or peak_activation_bytes");
        return NULL;
    }
    double act = 0;
    const cJSON *layers = cJSON_GetObjectItemCaseSensitive(cost, "layers"), *l;
    cJSON_ArrayForEach(l, layers) {
        double ob;
        if (num(l, "output_bytes", &ob) == 0) act += ob;
    }
    if (cJSON_GetArraySize(layers) == 0) act = peak_act;
    double flop = 2 * macs, bytes = wbytes + 2 * act;
    struct roofline gpu, cpu;
    if (roofline(flop, bytes, target, &gpu) != 0) {
        trn_errf(err, "the target profile lacks positive peak_gflops, memory_bandwidth_gbps or power_w");
        return NULL;
    }
    const cJSON *cpu_unit = cJSON_GetObjectItemCaseSensitive(target, "cpu");
    if (cpu_unit && roofline(flop, bytes, cpu_unit, &cpu) != 0) {
        trn_errf(err, "the target profile's \"cpu\" lacks positive peak_gflops, memory_bandwidth_gbps or power_w");
        return NULL;
    }
    cJSON *e = cJSON_CreateObject();
    if (!e) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    cJSON_AddStringToObject(e, "source", "estimate");
    cJSON_AddStringToObject(e, "method", "roofline-1");
    const char *unit = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(target, "compute_unit"));
    if (unit) cJSON_AddStringToObject(e, "compute_unit", unit);
    cJSON_AddNumberToObject(e, "ms", round6(gpu.ms));
    cJSON_AddNumberToObject(e, "mj", round6(gpu.mj));
    cJSON_AddStringToObject(e, "bound", gpu.compute_bound ? "compute" : "memory");
    cJSON_AddNumberToObject(e, "gflop", round6(flop / 1e9));
    cJSON_AddNumberToObject(e, "mbytes", round6(bytes / 1e6));
    if (cpu_unit) {
        /* the path the runtime takes today: every build computes on the CPU */
        cJSON *c = cJSON_AddObjectToObject(e, "cpu");
        const char *cu = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cpu_unit, "compute_unit"));
        if (!c) {
            cJSON_Delete(e);
            trn_errf(err, "out of memory");
            return NULL;
        }
        if (cu) cJSON_AddStringToObject(c, "compute_unit", cu);
        cJSON_AddNumberToObject(c, "ms", round6(cpu.ms));
        cJSON_AddNumberToObject(c, "mj", round6(cpu.mj));
        cJSON_AddStringToObject(c, "bound", cpu.compute_bound ? "compute" : "memory");
    }
    return e;
}
