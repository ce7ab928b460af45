/* rtl_json.c: the JSON forms of `rtl list --json` and `rtl inspect --json`
 * (the same facts as their tables, as one document on stdout). */
#include "rtl_cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *top_json(const rtl_class *top, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t k = 0; arr && k < n; k++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "index", (double)top[k].index);
        cJSON_AddStringToObject(c, "label", top[k].label);
        cJSON_AddNumberToObject(c, "probability", top[k].prob);
        cJSON_AddItemToArray(arr, c);
    }
    return arr;
}

void image_error_json(cJSON *results, const char *image, const char *msg)
{
    if (!results) return;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "image", image);
    cJSON_AddStringToObject(r, "error", msg);
    cJSON_AddItemToArray(results, r);
}

/* Prints doc and frees it; 0, or 1 after an error message. */
static int print_doc(cJSON *doc)
{
    char *s = doc ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (!s) {
        fprintf(stderr, "rtl: error: out of memory\n");
        return 1;
    }
    puts(s);
    free(s);
    return 0;
}

int print_installed_json(const rtl_installed *list, size_t n)
{
    cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "catalogs");
    for (size_t k = 0; arr && k < n; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "catalog", list[k].catalog);
        cJSON_AddNumberToObject(o, "version", (double)list[k].version);
        if (list[k].has_previous) cJSON_AddNumberToObject(o, "previous_version", (double)list[k].previous_version);
        else cJSON_AddNullToObject(o, "previous_version");
        cJSON_AddStringToObject(o, "key_id", list[k].key_id);
        cJSON_AddStringToObject(o, "dir", list[k].dir);
        cJSON_AddItemToArray(arr, o);
    }
    return print_doc(arr ? doc : (cJSON_Delete(doc), NULL));
}

static cJSON *latency_obj(const rtl_latency *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "where", l->where);
    cJSON_AddStringToObject(o, "source", "measured");
    cJSON_AddStringToObject(o, "machine", l->machine);
    cJSON_AddNumberToObject(o, "threads", l->threads);
    cJSON_AddNumberToObject(o, "runs", l->runs);
    cJSON_AddNumberToObject(o, "ms_median", l->ms_median);
    cJSON_AddNumberToObject(o, "ms_mean", l->ms_mean);
    if (l->measured_at >= 0) cJSON_AddNumberToObject(o, "measured_at", (double)l->measured_at);
    return o;
}

int print_catalog_json(const rtl_catalog *cat)
{
    rtl_catalog_info ci = catalog_info(cat);
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "catalog", ci.id);
    cJSON_AddNumberToObject(doc, "version", (double)ci.version);
    cJSON_AddStringToObject(doc, "model", ci.model);
    if (ci.dir[0]) cJSON_AddStringToObject(doc, "dir", ci.dir);
    else cJSON_AddNullToObject(doc, "dir");
    cJSON *tasks = cJSON_AddArrayToObject(doc, "tasks");
    for (size_t t = 0; tasks && t < ci.task_count; t++) {
        size_t n;
        rtl_catalog_task_labels(cat, ci.task_names[t], &n);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", ci.task_names[t]);
        cJSON_AddNumberToObject(o, "labels", (double)n);
        cJSON_AddItemToArray(tasks, o);
    }
    cJSON *vars = cJSON_AddArrayToObject(doc, "variants");
    int warned = 0;
    for (size_t i = 0; vars && i < ci.variant_count; i++) {
        const rtl_variant *v = rtl_catalog_variant_at(cat, i);
        rtl_variant_info vi = variant_info(v);
        cJSON *o = cJSON_CreateObject();
        double t1, t5;
        cJSON_AddStringToObject(o, "id", vi.id);
        cJSON_AddStringToObject(o, "technique", vi.technique);
        cJSON_AddStringToObject(o, "task", vi.task);
        if (rtl_variant_accuracy(v, NULL, &t1, &t5) == 0) {
            cJSON_AddNumberToObject(o, "top1", t1);
            if (t5 >= 0) cJSON_AddNumberToObject(o, "top5", t5);
            else cJSON_AddNullToObject(o, "top5");
        } else {
            cJSON_AddNullToObject(o, "top1");
            cJSON_AddNullToObject(o, "top5");
        }
        cJSON_AddNumberToObject(o, "macs", (double)vi.macs);
        cJSON_AddNumberToObject(o, "weight_bytes", (double)vi.weight_bytes);
        cJSON_AddNumberToObject(o, "files", (double)vi.file_count);
        cJSON *lat = cJSON_AddArrayToObject(o, "latency");
        rtl_latency host, dev[8];
        size_t ndev = 0;
        rtl_err err;
        if (rtl_variant_latency(v, "build-host", &host, NULL) == 0) cJSON_AddItemToArray(lat, latency_obj(&host));
        if (rtl_profile_get(cat, vi.id, dev, 8, &ndev, &err) != 0) {
            ndev = 0;
            if (!warned && !strstr(err.msg, "not opened from a store")) {
                fprintf(stderr, "rtl: warning: %s\n", err.msg);
                warned = 1;
            }
        }
        for (size_t d = 0; d < ndev && d < 8; d++) {
            cJSON *l = latency_obj(&dev[d]);
            cJSON_ReplaceItemInObject(l, "where", cJSON_CreateString("this device"));
            cJSON_AddItemToArray(lat, l);
        }
        cJSON *est = cJSON_AddArrayToObject(o, "estimates");
        for (size_t e = 0; e < vi.estimate_count; e++) {
            rtl_estimate x;
            if (rtl_variant_estimate_at(v, e, &x) != 0) continue;
            cJSON *eo = cJSON_CreateObject();
            cJSON_AddStringToObject(eo, "target", x.target);
            cJSON_AddStringToObject(eo, "source", "estimate");
            cJSON_AddStringToObject(eo, "method", x.method);
            cJSON_AddStringToObject(eo, "bound", x.bound);
            cJSON_AddNumberToObject(eo, "ms", x.ms);
            if (x.mj >= 0) cJSON_AddNumberToObject(eo, "mj", x.mj);
            if (x.compute_unit[0]) cJSON_AddStringToObject(eo, "compute_unit", x.compute_unit);
            if (x.cpu_ms >= 0) {
                cJSON *c = cJSON_AddObjectToObject(eo, "cpu");
                if (x.cpu_unit[0]) cJSON_AddStringToObject(c, "compute_unit", x.cpu_unit);
                cJSON_AddNumberToObject(c, "ms", x.cpu_ms);
                if (x.cpu_mj >= 0) cJSON_AddNumberToObject(c, "mj", x.cpu_mj);
            }
            cJSON_AddItemToArray(est, eo);
        }
        cJSON_AddItemToArray(vars, o);
    }
    return print_doc(doc);
}
