/*
 * rtl_exitbench.c: the measuring half of tests/bench/rtl_exits.sh.
 *
 *   rtl-exitbench ROOT CATALOG VARIANT RUNS ALPHA[,ALPHA...] IMAGE...
 *
 * Opens early-exit VARIANT of installed CATALOG (one thread), decodes each
 * image once (rtl_model_image_input: `rtl run`'s preprocessing) and, per
 * image, for every alpha in turn (interleaved, so that a change of the
 * machine's load touches every alpha alike): rtl_model_set_alpha, one
 * untimed run, then RUNS runs of rtl_model_run each timed alone with a
 * monotonic clock. Prints one line per image and alpha:
 *   ALPHA IMAGE_INDEX EXIT MEDIAN_MS
 * EXIT is rtl_model_info.exit_taken (its exits = the trunk's output).
 * First a line "exits N" and, per exit, "exit J layer L".
 */
#include "rtl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

static int die(const rtl_err *e)
{
    fprintf(stderr, "rtl-exitbench: %s\n", e->msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: rtl-exitbench ROOT CATALOG VARIANT RUNS ALPHA[,ALPHA...] IMAGE...\n");
        return 2;
    }
    int runs = atoi(argv[4]);
    if (runs < 1 || runs > 10000) return 2;
    float alphas[64];
    int na = 0;
    for (char *p = argv[5], *end; *p && na < 64; p = *end ? end + 1 : end) {
        alphas[na++] = strtof(p, &end);
        if (end == p || (*end && *end != ',')) {
            fprintf(stderr, "rtl-exitbench: '%s' is not a list of alphas\n", argv[5]);
            return 2;
        }
    }
    rtl_err e;
    rtl_store *s;
    rtl_catalog *cat = bench_catalog(argv[1], argv[2], &s, &e);
    if (!cat) return die(&e);
    rtl_model_options mo = {.threads = 1};
    rtl_model *m = rtl_model_open(cat, argv[3], &mo, &e);
    if (!m) return die(&e);
    rtl_model_info mi;
    if (rtl_model_describe(m, &mi, sizeof mi, &e) != 0) return die(&e);
    int nx = mi.exits;
    if (nx < 1) {
        fprintf(stderr, "rtl-exitbench: %s has no early exits\n", argv[3]);
        return 1;
    }
    printf("exits %d\n", nx);
    for (int j = 0; j < nx; j++) printf("exit %d layer %d\n", j, mi.exit_layers[j]);
    float *x = calloc(mi.input_size, sizeof *x);
    double *t = calloc((size_t)runs, sizeof *t);
    if (!x || !t) return 1;
    for (int i = 6; i < argc; i++) {
        if (rtl_model_image_input(m, argv[i], x, &e) != 0) return die(&e);
        for (int a = 0; a < na; a++) {
            if (rtl_model_set_alpha(m, alphas[a], &e) != 0 || rtl_model_run(m, x, &e) != 0) return die(&e);
            for (int r = 0; r < runs; r++) {
                double t0 = now_ms();
                if (rtl_model_run(m, x, &e) != 0) return die(&e);
                t[r] = now_ms() - t0;
            }
            qsort(t, (size_t)runs, sizeof *t, cmp);
            double med = runs % 2 ? t[runs / 2] : (t[runs / 2 - 1] + t[runs / 2]) / 2;
            printf("%g %d %d %.6f\n", (double)alphas[a], i - 6, (rtl_model_describe(m, &mi, sizeof mi, NULL), mi.exit_taken), med);
        }
    }
    free(x);
    free(t);
    rtl_model_close(m);
    rtl_catalog_close(cat);
    rtl_store_close(s);
    return 0;
}
