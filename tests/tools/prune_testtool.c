/* prune_testtool.c: fixtures for the prune and variant-stage integration
 * tests (a test helper, not installed).
 *
 *   prune-testtool weights CFG SEED OUT
 *       writes OUT, Darknet weights for CFG with values a trained network
 *       could hold (tl_randomize: He-scaled weights, BN scales near 1,
 *       positive variances), drawn from SEED
 *   prune-testtool images DIR N SIDE SEED
 *       writes a tiny classifier data set into DIR: N 24-bit BMP images of
 *       SIDE x SIDE per class (classes "dark" and "light"), the lists
 *       train.list and test.list, labels and names files and tiny.data
 *   prune-testtool forward CFG WEIGHTS INPUT OUT
 *       inference forward (batch 1) of INPUT (raw float32, the network's
 *       inputs); writes the network's output to OUT (raw float32), the
 *       format of tests/darknet/dn_ref's out_NNN.bin
 */
#include "testlib_prn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int weights(const char *cfg, uint64_t seed, const char *out)
{
    trn_err e;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.seed = seed;
    trn_net *net = trn_net_load(cfg, NULL, &o, &e);
    if (!net) {
        fprintf(stderr, "prune-testtool: %s\n", e.msg);
        return 1;
    }
    tl_randomize(net, seed);
    int rc = trn_weights_save(net, out, &e);
    if (rc) fprintf(stderr, "prune-testtool: %s\n", e.msg);
    trn_net_free(net);
    return rc ? 1 : 0;
}

static void put32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
}

/* A 24-bit BMP of side x side: class 0 dark, class 1 light, with noise. */
static int write_bmp(const char *path, int side, int cls, trn_rng *r)
{
    int row = (side * 3 + 3) & ~3;
    uint32_t size = 54 + (uint32_t)row * side;
    unsigned char *b = calloc(size, 1);
    if (!b) return -1;
    b[0] = 'B';
    b[1] = 'M';
    put32(b + 2, size);
    put32(b + 10, 54);
    put32(b + 14, 40);
    put32(b + 18, (uint32_t)side);
    put32(b + 22, (uint32_t)side);
    b[26] = 1;
    b[28] = 24;
    put32(b + 34, (uint32_t)row * side);
    for (int y = 0; y < side; y++)
        for (int x = 0; x < side; x++)
            for (int c = 0; c < 3; c++) {
                float v = (cls ? 170.0f : 60.0f) + 40.0f * trn_rng_normal(r) + (float)(x * c);
                b[54 + y * row + x * 3 + c] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(b, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    free(b);
    return ok ? 0 : -1;
}

static int images(const char *dir, int n, int side, uint64_t seed)
{
    static const char *const labels[2] = {"dark", "light"};
    char path[4096];
    trn_rng r;
    trn_rng_seed(&r, seed);
    snprintf(path, sizeof path, "%s/img", dir);
    trn_err e;
    if (trn_mkdir_p(path, &e) != 0) {
        fprintf(stderr, "prune-testtool: %s\n", e.msg);
        return 1;
    }
    FILE *lists[2];
    for (int s = 0; s < 2; s++) {
        snprintf(path, sizeof path, "%s/%s.list", dir, s ? "test" : "train");
        if (!(lists[s] = fopen(path, "w"))) return 1;
    }
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 2; c++) {
            int s = i % 4 == 3; /* every fourth image is a test image */
            snprintf(path, sizeof path, "%s/img/%04d_%s.bmp", dir, i, labels[c]);
            if (write_bmp(path, side, c, &r) != 0) return 1;
            fprintf(lists[s], "img/%04d_%s.bmp\n", i, labels[c]);
        }
    for (int s = 0; s < 2; s++) fclose(lists[s]);
    snprintf(path, sizeof path, "%s/labels.txt", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "dark\nlight\n");
    fclose(f);
    snprintf(path, sizeof path, "%s/tiny.data", dir);
    if (!(f = fopen(path, "w"))) return 1;
    fprintf(f, "classes=2\ntrain=train.list\nvalid=test.list\ntest=test.list\n"
               "labels=labels.txt\nnames=labels.txt\ntop=1\n");
    fclose(f);
    return 0;
}

static int forward(const char *cfg, const char *weights, const char *in, const char *out)
{
    trn_err e;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    trn_net *net = trn_net_load(cfg, weights, &o, &e);
    if (!net) {
        fprintf(stderr, "prune-testtool: %s\n", e.msg);
        return 1;
    }
    size_t n = trn_net_inputs(net), m = trn_net_outputs(net);
    float *x = malloc(n * sizeof *x);
    FILE *f = fopen(in, "rb");
    int rc = !x || !f || fread(x, sizeof *x, n, f) != n;
    if (f) fclose(f);
    if (!rc && trn_net_forward(net, x, &e) != 0) {
        fprintf(stderr, "prune-testtool: %s\n", e.msg);
        rc = 1;
    }
    if (!rc) {
        FILE *g = fopen(out, "wb");
        rc = !g || fwrite(trn_net_output(net), sizeof(float), m, g) != m;
        if (g && fclose(g) != 0) rc = 1;
    }
    free(x);
    trn_net_free(net);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "forward")) return forward(argv[2], argv[3], argv[4], argv[5]);
    if (argc == 5 && !strcmp(argv[1], "weights")) return weights(argv[2], strtoull(argv[3], NULL, 10), argv[4]);
    if (argc == 6 && !strcmp(argv[1], "images"))
        return images(argv[2], atoi(argv[3]), atoi(argv[4]), strtoull(argv[5], NULL, 10));
    fprintf(stderr, "usage: prune-testtool weights CFG SEED OUT | images DIR N SIDE SEED | forward CFG WEIGHTS IN OUT\n");
    return 2;
}
