/*
 * cli_bench.c: `trainer bench`: images/s and GFLOPS of the forward (batch
 * 1 by default) and of a training step (forward + backward + update) on
 * random data, the convolution layers' effective GFLOPS inside the
 * training step, and OpenBLAS sgemm on an N x N product as the yardstick.
 */
#include "cli.h"
#include "clikit.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static float *random_floats(size_t n, uint64_t seed, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    if (!x) return NULL;
    trn_rng r;
    trn_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = trn_rng_range(&r, lo, hi);
    return x;
}

static double sgemm_gflops(int n, int reps)
{
    size_t nn = (size_t)n * n;
    float *a = random_floats(nn, 1, -1, 1), *b = random_floats(nn, 2, -1, 1), *c = calloc(nn, 4);
    double best = 0;
    if (a && b && c)
        for (int r = 0; r < reps + 1; r++) {
            double t0 = now_s();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
            double g = 2.0 * n * n * (double)n / (now_s() - t0) / 1e9;
            if (r && g > best) best = g; /* the first run warms up */
        }
    free(a), free(b), free(c);
    return best;
}

int cli_bench(int argc, char **argv)
{
    const char *cfg = NULL, *threads = NULL, *operand = NULL;
    ck_list set = {.n = 0};
    long long fb = 1, batch = 0, iters = 5, sg = 2048;
    int json = 0, no_train = 0, layers = 0, rc0;
    const ck_opt opts[] = {
        {"--cfg", "FILE", CK_STR, &cfg, 0, 0, "the network (Darknet cfg); may be given without --cfg"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "override a [net] key first (repeatable)"},
        {"--forward-batch", "N", CK_INT, &fb, 1, 4096, "images per forward (default 1)"},
        {"--batch", "N", CK_INT, &batch, 1, 4096, "images per training step"},
        {"--iterations", "N", CK_INT, &iters, 1, 100000, "timed repetitions of each (default 5; one warm-up run first)"},
        {"--sgemm", "N", CK_INT, &sg, 0, 16384, "size of the sgemm yardstick (default 2048; 0: skip)"},
        {"--no-train", NULL, CK_FLAG, &no_train, 0, 0, "skip the training step"},
        {"--layers", NULL, CK_FLAG, &layers, 0, 0, "print every layer's forward and backward time in the step"},
        {"--threads", "N", CK_STR, &threads, 0, 0, "threads (default: THREADS, else all cores)"},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object: forward_images_per_s, forward_gflops,\n"
         "train_images_per_s, train_gflops, conv_train_gflops, sgemm_gflops"},
        {0},
    };
    const ck_verb verb = {
        "bench", NULL, cli_bench, "[--cfg] FILE.cfg [OPTIONS]",
        "Measures on random input and random weights (nothing is read or written):\n"
        "  forward   inference at --forward-batch images (default 1)\n"
        "  train     training steps (forward, backward, update) at --batch images\n"
        "            (default: the cfg's batch / subdivisions), with the convolution\n"
        "            layers' effective GFLOPS (their forward and backward FLOPs over their time)\n"
        "  sgemm     OpenBLAS single-precision N x N x N product (--sgemm N, default 2048; 0: skip)\n",
        opts, NULL,
    };
    if (ck_parse("trainer", &verb, argc, argv, &operand, 1, &rc0) < 0) return rc0;
    if (operand && cfg) return cli_usage("bench", "unexpected argument '%s' (the cfg is given by --cfg)", operand);
    if (!cfg) cfg = operand;
    int train = !no_train;
    cli_sets sets = {0};
    for (int i = 0; i < set.n; i++)
        if (cli_add_set(&sets, "bench", set.v[i])) return 2;
    if (!cfg) return cli_usage("bench", "no cfg given");
    if (cli_threads("bench", threads)) return 2;
    trn_cfg *c = cli_cfg("bench", cfg, &sets);
    if (!c) return 1;
    trn_err e;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = (int)fb;
    o.infer_only = 1;
    trn_net *net = trn_net_create(c, &o, &e);
    if (!net) {
        trn_cfg_free(c);
        return cli_fail("bench", "%s", e.msg);
    }
    trn_net_totals tot;
    trn_net_get_totals(net, &tot);
    size_t nin = (size_t)fb * trn_net_inputs(net);
    float *x = random_floats(nin, 3, 0, 1);
    double t = 0;
    for (long long r = 0; r <= iters && x; r++) {
        if (r == 1) trn_net_profile(net, 1);
        double t0 = now_s();
        if (trn_net_forward(net, x, &e) != 0) break;
        if (r) t += now_s() - t0;
    }
    for (int i = 0; layers && !json && i < trn_net_layers(net); i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        double tf;
        trn_net_layer_time(net, i, &tf, NULL);
        printf("  layer %2d %-14s forward %8.2f ms  %7.2f GFLOPS\n", i, trn_layer_kind_name(in.kind),
               1e3 * tf / iters, tf > 0 ? 2.0 * in.macs * fb * iters / tf / 1e9 : 0);
    }
    free(x);
    trn_net_free(net);
    double f_ips = t > 0 ? (double)fb * iters / t : 0, f_gf = f_ips * 2.0 * tot.macs / 1e9;
    if (!json)
        printf("forward  batch %3lld: %9.2f images/s  %7.2f GFLOPS  (%lld runs, %.3f s each)\n", fb,
               f_ips, f_gf, iters, iters ? t / iters : 0);
    double t_ips = 0, t_gf = 0, conv_gf = 0, conv_share = 0;
    if (train) {
        o.batch = (int)batch;
        o.infer_only = 0;
        net = trn_net_create(c, &o, &e);
        if (!net) {
            trn_cfg_free(c);
            return cli_fail("bench", "%s", e.msg);
        }
        int b = trn_net_batch(net);
        size_t nx = (size_t)b * trn_net_inputs(net), ny = (size_t)b * trn_net_outputs(net);
        float *tx = random_floats(nx, 4, 0, 1), *ty = calloc(ny ? ny : 1, sizeof *ty);
        for (int k = 0; k < b && ty; k++) ty[(size_t)k * trn_net_outputs(net) + (size_t)k % trn_net_outputs(net)] = 1;
        t = 0;
        for (long long r = 0; r <= iters && tx && ty; r++) {
            if (r == 1) trn_net_profile(net, 1);
            double t0 = now_s();
            if (trn_net_train_step(net, tx, ty, NULL, &e) != 0) {
                free(tx), free(ty), trn_net_free(net), trn_cfg_free(c);
                return cli_fail("bench", "%s", e.msg);
            }
            if (r) t += now_s() - t0;
        }
        /* Convolution FLOPs per image in a step: forward, weight gradient
         * and (except where no gradient flows on) input gradient. */
        double conv_flops = 0, conv_t = 0, layers_t = 0;
        for (int i = 0; i < trn_net_layers(net); i++) {
            trn_layer_info in;
            trn_net_layer_info(net, i, &in);
            double tf, tb;
            trn_net_layer_time(net, i, &tf, &tb);
            int passes = trn_net_layer_delta(net, i - 1) ? 3 : 2;
            layers_t += tf + tb;
            if (layers && !json)
                printf("  layer %2d %-14s forward %8.2f ms  backward %8.2f ms  %7.2f GFLOPS\n", i,
                       trn_layer_kind_name(in.kind), 1e3 * tf / iters, 1e3 * tb / iters,
                       tf + tb > 0 ? 2.0 * in.macs * passes * b * iters / (tf + tb) / 1e9 : 0);
            if (in.kind != TRN_LAYER_CONVOLUTIONAL) continue;
            conv_flops += 2.0 * in.macs * passes;
            conv_t += tf + tb;
        }
        if (layers && !json)
            printf("  update and the rest  %8.2f ms\n", 1e3 * (t - layers_t) / iters);
        t_ips = t > 0 ? (double)b * iters / t : 0;
        t_gf = t_ips * 2.0 * tot.macs * 3 / 1e9;
        conv_gf = conv_t > 0 ? conv_flops * b * iters / conv_t / 1e9 : 0;
        conv_share = t > 0 ? conv_t / t : 0;
        if (!json)
            printf("train    batch %3d: %9.2f images/s  %7.2f GFLOPS  (%lld steps, %.3f s each); "
                   "convolutions %.2f GFLOPS, %.0f%% of the step\n",
                   b, t_ips, t_gf, iters, iters ? t / iters : 0, conv_gf, 100 * conv_share);
        free(tx), free(ty);
        trn_net_free(net);
    }
    trn_cfg_free(c);
    double sgf = sg ? sgemm_gflops((int)sg, 3) : 0;
    if (!json && sg) printf("sgemm    %lldx%lldx%lld: %7.2f GFLOPS (OpenBLAS, %d threads)\n", sg, sg, sg, sgf, trn_threads());
    if (json)
        printf("{\"forward_batch\":%lld,\"forward_images_per_s\":%.4f,\"forward_gflops\":%.4f,"
               "\"train_batch\":%lld,\"train_images_per_s\":%.4f,\"train_gflops\":%.4f,"
               "\"conv_train_gflops\":%.4f,\"conv_share\":%.4f,\"sgemm_n\":%lld,\"sgemm_gflops\":%.4f,"
               "\"threads\":%d}\n",
               fb, f_ips, f_gf, batch, t_ips, t_gf, conv_gf, conv_share, sg, sgf, trn_threads());
    return 0;
}
