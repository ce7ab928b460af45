/*
 * rtl_nestbench.c: the measuring half of tests/bench/nested_switch.sh.
 *
 *   rtl-nestbench ROOT CATALOG NESTED INDEPENDENT K RUNS
 *
 * In one process, page cache warm, RUNS times each (interleaved), median:
 *   open   rtl_model_open of INDEPENDENT (capacity K built as its own
 *          variant) + its first forward, and the open alone;
 *   up     rtl_model_set_capacity(NESTED, K) from capacity K-1 + the first
 *          forward, and the switch alone;
 *   down   the same from capacity K+1 (when K is not the largest).
 * Prints the medians, the ratios open/switch, and the bytes each switch
 * paged in/out against the manifest's page_in_bytes/page_out_bytes of
 * capacity K-1 (K+1) for target K (EQUAL or DIFFERENT).
 */
#include "rtl.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The manifest's page bytes of capacity `from` (1-based) to `to`. */
static long long manifest_bytes(const rtl_variant *v, int from, int to, const char *key)
{
    cJSON *tf = cJSON_Parse(rtl_variant_fields_json(v));
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(tf, "capacities"), from - 1);
    char k[16];
    snprintf(k, sizeof k, "%d", to);
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(c, key), k);
    long long r = cJSON_IsNumber(b) ? (long long)b->valuedouble : -1;
    cJSON_Delete(tf);
    return r;
}

static int die(const rtl_err *e)
{
    fprintf(stderr, "rtl-nestbench: %s\n", e->msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: rtl-nestbench ROOT CATALOG NESTED INDEPENDENT K RUNS\n");
        return 2;
    }
    int k = atoi(argv[5]), runs = atoi(argv[6]);
    if (runs < 1 || runs > 10000 || k < 1) return 2;
    rtl_err e;
    rtl_store_config sc = {.root = argv[1]};
    rtl_store *s = rtl_store_open(&sc, &e);
    if (!s) return die(&e);
    rtl_catalog *cat = rtl_catalog_open(s, argv[2], &e);
    if (!cat) return die(&e);
    rtl_model_options mo = {.threads = 1};
    rtl_model *nest = rtl_model_open(cat, argv[3], &mo, &e);
    if (!nest) return die(&e);
    int ncap = rtl_model_capacities(nest);
    if (k > ncap) {
        fprintf(stderr, "rtl-nestbench: %s has %d capacities\n", argv[3], ncap);
        return 1;
    }
    float *x = calloc(rtl_model_input_size(nest), sizeof *x);
    for (size_t i = 0; i < rtl_model_input_size(nest); i++) x[i] = (float)((i * 2654435761u) >> 24) / 256.0f;
    double *open_ms = calloc((size_t)runs, sizeof(double)), *open_run = calloc((size_t)runs, sizeof(double));
    double *up_ms = calloc((size_t)runs, sizeof(double)), *up_run = calloc((size_t)runs, sizeof(double));
    double *dn_ms = calloc((size_t)runs, sizeof(double)), *dn_run = calloc((size_t)runs, sizeof(double));
    rtl_switch_bytes up = {0}, dn = {0};
    int have_up = k > 1, have_dn = k < ncap;
    /* warm everything once */
    if (rtl_model_run(nest, x, &e) != 0) return die(&e);
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        rtl_model *m = rtl_model_open(cat, argv[4], &mo, &e);
        if (!m) return die(&e);
        double t1 = now_ms();
        if (rtl_model_run(m, x, &e) != 0) return die(&e);
        double t2 = now_ms();
        rtl_model_close(m);
        open_ms[r] = t1 - t0;
        open_run[r] = t2 - t0;
        if (have_up) {
            if (rtl_model_set_capacity(nest, k - 1, &e) != 0 || rtl_model_run(nest, x, &e) != 0) return die(&e);
            t0 = now_ms();
            if (rtl_model_set_capacity(nest, k, &e) != 0) return die(&e);
            t1 = now_ms();
            if (rtl_model_run(nest, x, &e) != 0) return die(&e);
            t2 = now_ms();
            rtl_model_switch_bytes(nest, &up);
            up_ms[r] = t1 - t0;
            up_run[r] = t2 - t0;
        }
        if (have_dn) {
            if (rtl_model_set_capacity(nest, k + 1, &e) != 0 || rtl_model_run(nest, x, &e) != 0) return die(&e);
            t0 = now_ms();
            if (rtl_model_set_capacity(nest, k, &e) != 0) return die(&e);
            t1 = now_ms();
            if (rtl_model_run(nest, x, &e) != 0) return die(&e);
            t2 = now_ms();
            rtl_model_switch_bytes(nest, &dn);
            dn_ms[r] = t1 - t0;
            dn_run[r] = t2 - t0;
        }
    }
    double o = median(open_ms, runs), orun = median(open_run, runs);
    const rtl_variant *v = rtl_model_variant(nest);
    printf("open %s (capacity %d as its own variant): %.4f ms; with its first forward %.4f ms\n", argv[4], k, o, orun);
    if (have_up) {
        double u = median(up_ms, runs), urun = median(up_run, runs);
        long long want = manifest_bytes(v, k - 1, k, "page_in_bytes");
        printf("upgrade %d -> %d: %.4f ms (%.1fx faster than open); with the first forward %.4f ms (%.1fx)\n", k - 1, k,
               u, o / u, urun, orun / urun);
        printf("upgrade %d -> %d: paged in %llu bytes (%llu in whole pages), out %llu; manifest %lld: %s\n", k - 1, k,
               (unsigned long long)up.page_in, (unsigned long long)up.advised_in, (unsigned long long)up.page_out,
               want, want == (long long)up.page_in && up.page_out == 0 ? "EQUAL" : "DIFFERENT");
    }
    if (have_dn) {
        double d = median(dn_ms, runs), drun = median(dn_run, runs);
        long long want = manifest_bytes(v, k + 1, k, "page_out_bytes");
        printf("downgrade %d -> %d: %.4f ms (%.1fx faster than open); with the first forward %.4f ms (%.1fx)\n", k + 1,
               k, d, o / d, drun, orun / drun);
        printf("downgrade %d -> %d: paged out %llu bytes (%llu in whole pages), in %llu; manifest %lld: %s\n", k + 1, k,
               (unsigned long long)dn.page_out, (unsigned long long)dn.advised_out, (unsigned long long)dn.page_in,
               want, want == (long long)dn.page_out && dn.page_in == 0 ? "EQUAL" : "DIFFERENT");
    }
    free(open_ms), free(open_run), free(up_ms), free(up_run), free(dn_ms), free(dn_run), free(x);
    rtl_model_close(nest);
    rtl_catalog_close(cat);
    rtl_store_close(s);
    return 0;
}
