/*
 * profile.c: the profiler: what a network costs when it actually runs on
 * this machine, measured rather than computed (docs/design.md, "Cost model").
 *
 *   macs      counted at the matrix products by the engine: one batch-1
 *             forward in which every gemm call adds m*n*k to the layer
 *             that is running (trn_net_count_forward, nn.h)
 *   params    from the weights file's size: (bytes - header) / 4, the
 *             header being 20 bytes for Darknet 0.2+ files and 16 before
 *   peak activation bytes   from the network's own buffers and their
 *             lifetimes (trn_net_get_totals, batch 1)
 *   latency   batch-1 forwards after warm-up: median and mean of `runs`
 *             timed ones, with the machine and the thread count; runs 0
 *             measures none and writes "latency": {} (a timing never
 *             repeats, so a catalog meant to be rebuilt bit for bit, e.g.
 *             by a CI farm, carries none: make PROFILE_RUNS=0)
 * The per-layer table carries the counted MACs, each layer's parameter
 * floats from the parameter table, its output buffer's bytes, and the
 * bias/BN/activation/pooling operations the trainer lists.
 *
 * profile.json (written by `catalog profile`, read by `catalog describe`):
 *   {"schema": 1, "cfg": path, "weights": path,
 *    "cost": {"macs", "params", "weight_bytes", "peak_activation_bytes",
 *             "bias_ops", "bn_ops", "act_ops", "pool_ops",
 *             "layers": [{"index", "type", "output": [c, h, w], "macs",
 *                         "params", "output_bytes", "bias_ops", "bn_ops",
 *                         "act_ops", "pool_ops"}]},
 *    "latency": {"build-host": {"source": "measured", "machine", "threads",
 *                               "batch": 1, "runs", "ms_median", "ms_mean"}},
 *    "counted": {"gemm_calls", "macs_outside_layers"},
 *    "traffic": {"source": "modelled", "bytes", "layers": [{"read_bytes", "write_bytes"}]}}
 * traffic is the engine's model of compulsory memory traffic of a batch-1
 * forward (trn_net_layer_traffic, nn.h): each tensor a layer reads or
 * writes counted once, a lower bound on what the kernels move.
 */
#include "cat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* One counted forward of x: per layer MACs into macs[], those of calls
 * outside any layer into *outside. */
static int count_macs(trn_net *net, const float *x, uint64_t *macs, uint64_t *outside,
                      uint64_t *calls, trn_err *err)
{
    trn_forward_counts c = {.layer_macs = macs};
    if (trn_net_count_forward(net, x, &c, err) != 0) return -1;
    *outside = c.outside_macs;
    *calls = c.gemm_calls;
    return 0;
}

/* profile.json's "traffic": the engine's modelled compulsory traffic. */
static int add_traffic(cJSON *root, const trn_net *net)
{
    cJSON *tr = cJSON_CreateObject(), *layers = cJSON_CreateArray();
    if (!tr || !layers || !cJSON_AddItemToObject(root, "traffic", tr)) {
        cJSON_Delete(tr);
        cJSON_Delete(layers);
        return -1;
    }
    if (!cJSON_AddStringToObject(tr, "source", "modelled") ||
        !cJSON_AddNumberToObject(tr, "bytes", (double)trn_net_traffic_bytes(net)) ||
        !cJSON_AddItemToObject(tr, "layers", layers)) {
        cJSON_Delete(layers);
        return -1;
    }
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_traffic t;
        cJSON *l = cJSON_CreateObject();
        if (!l || !cJSON_AddItemToArray(layers, l)) {
            cJSON_Delete(l);
            return -1;
        }
        trn_net_layer_traffic(net, i, &t);
        if (!cJSON_AddNumberToObject(l, "read_bytes", (double)t.read_bytes) ||
            !cJSON_AddNumberToObject(l, "write_bytes", (double)t.write_bytes))
            return -1;
    }
    return 0;
}

/* Parameters from the size of a Darknet weights file. */
static int file_params(const char *path, uint64_t *params, trn_err *err)
{
    FILE *f = trn_fopen(path, "rb", err);
    if (!f) return -1;
    int32_t ver[2];
    struct stat st;
    int rc = trn_fread_exact(f, ver, sizeof ver, path, err);
    if (rc == 0 && fstat(fileno(f), &st) != 0) rc = trn_errf(err, "cannot stat %s", path);
    fclose(f);
    if (rc) return -1;
    uint64_t header = trn_weights_header_bytes(ver[0], ver[1]);
    if ((uint64_t)st.st_size < header || ((uint64_t)st.st_size - header) % 4)
        return trn_errf(err, "%s: %lld bytes is not a %llu-byte header plus float32 parameters",
                        path, (long long)st.st_size, (unsigned long long)header);
    *params = ((uint64_t)st.st_size - header) / 4;
    return 0;
}

void cat_machine_name(char *buf, size_t size)
{
    char model[256] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        /* x86: "model name"; many ARM kernels: "Model" or "Hardware". */
        if (!strncmp(line, "model name", 10) || !strncmp(line, "Model", 5) ||
            (!model[0] && !strncmp(line, "Hardware", 8))) {
            char *v = strchr(line, ':');
            if (!v) continue;
            v++;
            while (*v == ' ' || *v == '\t') v++;
            v[strcspn(v, "\n")] = 0;
            snprintf(model, sizeof model, "%s", v);
            if (!strncmp(line, "model name", 10)) break;
        }
    }
    if (f) fclose(f);
    struct utsname u;
    const char *arch = uname(&u) == 0 ? u.machine : "?";
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(buf, size, "%s (%s, %ld cores)", model[0] ? model : "unknown CPU", arch, cores);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void cat_profile_opts_defaults(cat_profile_opts *o)
{
    o->runs = 30;
    o->warmup = 3;
    o->threads = 1;
}

cJSON *cat_profile(const char *cfg_path, const char *weights_path, const cat_profile_opts *o,
                   trn_err *err)
{
    if (o->runs < 0 || o->warmup < 0 || o->threads < 1) {
        trn_errf(err, "runs must be at least 0 and threads at least 1 (runs %d, threads %d)", o->runs,
                 o->threads);
        return NULL;
    }
    trn_set_threads(o->threads);
    trn_net_opts no;
    trn_net_opts_defaults(&no);
    no.batch = 1;
    no.infer_only = 1;
    trn_net *net = trn_net_load(cfg_path, weights_path, &no, err);
    if (!net) return NULL;
    int nl = trn_net_layers(net);
    uint64_t file_p = 0, outside = 0, calls = 0;
    uint64_t *macs = calloc((size_t)nl, sizeof *macs);
    double *ms = malloc((size_t)(o->runs ? o->runs : 1) * sizeof *ms);
    float *x = malloc(trn_net_inputs(net) * sizeof *x);
    cJSON *root = NULL;
    if (!macs || !ms || !x) {
        trn_errf(err, "out of memory");
        goto out;
    }
    /* A fixed, image-like input: the values do not change any count. */
    trn_rng r;
    trn_rng_seed(&r, 1);
    for (size_t i = 0; i < trn_net_inputs(net); i++) x[i] = trn_rng_uniform(&r);
    if (file_params(weights_path, &file_p, err) != 0 ||
        count_macs(net, x, macs, &outside, &calls, err) != 0)
        goto out;
    for (int i = 0; o->runs && i < o->warmup; i++)
        if (trn_net_forward(net, x, err) != 0) goto out;
    double sum = 0;
    for (int i = 0; i < o->runs; i++) {
        double t0 = now_ms();
        if (trn_net_forward(net, x, err) != 0) goto out;
        ms[i] = now_ms() - t0;
        sum += ms[i];
    }
    qsort(ms, (size_t)o->runs, sizeof *ms, cmp_double);
    double median = !o->runs ? 0 : o->runs % 2 ? ms[o->runs / 2] : (ms[o->runs / 2 - 1] + ms[o->runs / 2]) / 2;
    trn_net_totals tot;
    trn_net_get_totals(net, &tot);
    cat_cost c = {0};
    c.n = nl;
    c.layers = calloc((size_t)nl, sizeof *c.layers);
    if (!c.layers) {
        trn_errf(err, "out of memory");
        goto out;
    }
    int np;
    const trn_param *pt = trn_net_params(net, &np);
    for (int i = 0; i < nl; i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        cat_layer_cost *l = &c.layers[i];
        l->index = i;
        snprintf(l->type, sizeof l->type, "%s", trn_layer_kind_name(info.kind));
        l->output[0] = info.out.c;
        l->output[1] = info.out.h;
        l->output[2] = info.out.w;
        l->macs = macs[i];
        for (int k = 0; k < np; k++)
            if (pt[k].layer == i) l->params += pt[k].count;
        l->output_bytes = info.output_bytes;
        l->bias_ops = info.bias_ops;
        l->bn_ops = info.bn_ops;
        l->act_ops = info.act_ops;
        l->pool_ops = info.pool_ops;
        c.macs += l->macs;
    }
    c.macs += outside;
    c.params = file_p;
    c.weight_bytes = file_p * sizeof(float);
    c.peak_activation_bytes = tot.peak_activation_bytes;
    c.bias_ops = tot.bias_ops;
    c.bn_ops = tot.bn_ops;
    c.act_ops = tot.act_ops;
    c.pool_ops = tot.pool_ops;
    char machine[400];
    cat_machine_name(machine, sizeof machine);
    cJSON *cost = cat_cost_json(&c);
    free(c.layers);
    root = cJSON_CreateObject();
    cJSON *lat = cJSON_CreateObject(), *host = cJSON_CreateObject(), *cnt = cJSON_CreateObject();
    if (!cost || !root || !lat || !host || !cnt) {
        cJSON_Delete(cost);
        cJSON_Delete(root);
        cJSON_Delete(lat);
        cJSON_Delete(host);
        cJSON_Delete(cnt);
        root = NULL;
        trn_errf(err, "out of memory");
        goto out;
    }
    cJSON_AddNumberToObject(root, "schema", 1);
    cJSON_AddStringToObject(root, "cfg", cfg_path);
    cJSON_AddStringToObject(root, "weights", weights_path);
    cJSON_AddItemToObject(root, "cost", cost);
    cJSON_AddItemToObject(root, "latency", lat);
    if (o->runs) cJSON_AddItemToObject(lat, "build-host", host); /* else filled, then dropped */
    cJSON_AddStringToObject(host, "source", "measured");
    cJSON_AddStringToObject(host, "machine", machine);
    cJSON_AddNumberToObject(host, "threads", o->threads);
    cJSON_AddNumberToObject(host, "batch", 1);
    cJSON_AddNumberToObject(host, "runs", o->runs);
    cJSON_AddNumberToObject(host, "ms_median", median);
    cJSON_AddNumberToObject(host, "ms_mean", o->runs ? sum / o->runs : 0);
    if (!o->runs) cJSON_Delete(host);
    cJSON_AddItemToObject(root, "counted", cnt);
    cJSON_AddNumberToObject(cnt, "gemm_calls", (double)calls);
    cJSON_AddNumberToObject(cnt, "macs_outside_layers", (double)outside);
    if (add_traffic(root, net) != 0) {
        cJSON_Delete(root);
        root = NULL;
        trn_errf(err, "out of memory");
    }
out:
    free(macs);
    free(ms);
    free(x);
    trn_net_free(net);
    return root;
}
