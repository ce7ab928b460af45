/*
 * cli_bench.c: `trainer bench`: parses, calls trn_bench (trainer/src/
 * bench.c: the forward and a training step on random data against the
 * machine's ceiling and copy rate, the products of one step on the default
 * and the portable GEMM) and prints its figures, as a table or one JSON
 * object; with --layers also every layer's times and, through
 * bench_kernels.c, where they go kernel by kernel.
 */
#include "cli.h"
#include "clikit.h"

#include "bench.h"
#include "bench_kernels.h"
#include "portable.h"

#include <stdlib.h>

/* Every layer's forward time; a convolution's against its FLOPs at the
 * ceiling, a connected layer's against its weight bytes (each read once
 * per forward) at the copy rate; then the sums by kind and the time
 * outside the layers. */
static void print_fwd_layers(const trn_bench_result *r, long long iters)
{
    double conv = 0, conv_at = 0, fc = 0, fc_at = 0, rest = 0, sgf = r->ceiling.ceiling, cbw = r->copy_gbps;
    long long fb = r->forward_batch;
    double fwd_s = fb / (r->f_ips > 0 ? r->f_ips : 1);
    printf("forward  batch %3lld, layer by layer (ms per forward; at the yardstick: the time at the ceiling\n"
           "         of its FLOPs, or at the copy rate of its weight bytes for a connected layer):\n", fb);
    for (int i = 0; i < r->layers; i++) {
        const trn_bench_layer *l = &r->fwd[i];
        double t = l->tf / (double)iters, flops = 2.0 * l->macs * (double)fb, bytes = 4.0 * l->params;
        printf("  layer %2d %-14s forward %8.2f ms", i, trn_layer_kind_name(l->kind), 1e3 * t);
        if (l->kind == TRN_LAYER_CONNECTED) {
            double at = cbw > 0 ? bytes / (cbw * 1e9) : 0;
            printf("  %7.1f MB of weights: %6.2f GB/s read (at the copy rate %.2f ms: %.2fx)", 1e-6 * bytes,
                   t > 0 ? bytes / t / 1e9 : 0, 1e3 * at, at > 0 ? t / at : 0);
            fc += t, fc_at += at;
        } else if (flops > 0) {
            double at = sgf > 0 ? flops / (sgf * 1e9) : 0;
            printf("  %7.2f GFLOPS (at the ceiling %.2f ms: %.2fx)", t > 0 ? flops / t / 1e9 : 0, 1e3 * at,
                   at > 0 ? t / at : 0);
            if (l->kind == TRN_LAYER_CONVOLUTIONAL)
                conv += t, conv_at += at;
            else
                rest += t;
        } else {
            rest += t;
        }
        printf("\n");
    }
    printf("  convolutions %.2f ms (%.2f at the ceiling), connected %.2f ms (%.2f at the copy rate), "
           "the other layers %.2f ms, outside the layers %.2f ms, of %.2f ms\n",
           1e3 * conv, 1e3 * conv_at, 1e3 * fc, 1e3 * fc_at, 1e3 * rest, 1e3 * (fwd_s - conv - fc - rest), 1e3 * fwd_s);
}

/* The GEMM path this process runs (gemm_path.c), with a warning when
 * OpenBLAS's core type is below what the CPU's features call for. */
static void print_gemm_path(const trn_gemm_info *g)
{
    printf("blas     OpenBLAS core type %s (picked at load: %s%s); the CPU's features (%s) call for %s; "
           "products on %s\n",
           g->openblas_core, g->openblas_loaded, g->explicit_core ? ", by OPENBLAS_CORETYPE" : "", g->cpu_isa,
           g->cpu_core, g->products);
    if (g->below)
        printf("WARNING: OpenBLAS runs its %s kernels, below this CPU's ISA (%s)%s\n", g->openblas_core, g->cpu_isa,
               g->explicit_core ? ": OPENBLAS_CORETYPE is set; unset it unless this OpenBLAS crashes without it" : "");
}

/* The ceiling, what it is the best of, and the cores' peak multiply-adds. */
static void print_ceiling(const bp_ceiling *c, const bp_fma *f, const trn_gemm_info *g, long long n)
{
    printf("ceiling  %lldx%lldx%lld: %7.2f GFLOPS (%s, %d threads): the best of OpenBLAS as loaded (%s) %.2f, "
           "OpenBLAS %s %.2f, our %s kernels %.2f\n",
           n, n, n, c->ceiling, c->path, trn_threads(), g->openblas_core, c->openblas, g->cpu_core,
           c->openblas_features, trn_pk_name(trn_pgemm_kernel()), c->own);
    printf("peak     multiply-adds in registers, %d threads: AVX-512 %.1f, AVX2+FMA %.1f, SSE %.1f, NEON %.1f GFLOPS "
           "(0: not on this CPU; for information)\n",
           trn_threads(), f->avx512, f->avx2, f->sse, f->neon);
}

/* What the verb prints (its flags). */
typedef struct bench_out {
    int json, layers;
    long long iters;
} bench_out;

/* The forward's line, as soon as it is measured. */
static void print_forward(void *ctx, const trn_bench_result *r)
{
    const bench_out *o = ctx;
    if (!o->json)
        printf("forward  batch %3lld: %9.2f images/s  %7.2f GFLOPS  (%lld runs, %.3f s each)\n", r->forward_batch,
               r->f_ips, r->f_gf, o->iters, o->iters ? r->forward_s / o->iters : 0);
}

/* --layers: where the timed steps' time goes, kernel by kernel. */
static int kernels(void *ctx, trn_net *net, const float *x, const float *y, int steps, trn_err *err)
{
    const bench_out *o = ctx;
    return o->layers && !o->json ? bk_run(net, x, y, steps, stdout, err) : 0;
}

/* The training step: with --layers every layer's times first, then its
 * rate, then the products of one step. */
static void print_train(const bench_out *o, const trn_bench_result *r)
{
    long long iters = o->iters, b = r->train_batch;
    double layers_t = 0, t = r->train_s;
    for (int i = 0; i < r->layers; i++) {
        const trn_bench_layer *l = &r->step[i];
        layers_t += l->tf + l->tb;
        if (o->layers)
            printf("  layer %2d %-14s forward %8.2f ms  backward %8.2f ms  %7.2f GFLOPS\n", i,
                   trn_layer_kind_name(l->kind), 1e3 * l->tf / iters, 1e3 * l->tb / iters,
                   l->tf + l->tb > 0 ? 2.0 * l->macs * l->passes * b * iters / (l->tf + l->tb) / 1e9 : 0);
    }
    if (o->layers) printf("  update and the rest  %8.2f ms\n", 1e3 * (t - layers_t) / iters);
    printf("train    batch %3d: %9.2f images/s  %7.2f GFLOPS  (%lld steps, %.3f s each); "
           "convolutions %.2f GFLOPS, %.0f%% of the step\n",
           (int)b, r->t_ips, r->t_gf, iters, iters ? t / iters : 0, r->conv_gf, 100 * r->conv_share);
    if (r->gemm_calls > 0)
        printf("gemm     %d products of one step (%d shapes): OpenBLAS %.2f GFLOPS, portable "
               "%.2f GFLOPS (%s kernel) = %.0f%%, %d threads\n",
               r->gemm_calls, r->gemm_shapes, r->gemm_openblas, r->gemm_portable, trn_pk_name(trn_pgemm_kernel()),
               r->gemm_openblas > 0 ? 100 * r->gemm_portable / r->gemm_openblas : 0, trn_threads());
}

/* The forward against its bound, and against the two phases one after the
 * other. */
static void print_bounds(const trn_bench_result *r)
{
    long long fb = r->forward_batch;
    if (r->bound > 0)
        printf("forward  batch %3lld: %.3f ms against its bound %.3f ms (%.1f MFLOP at the ceiling, "
               "%.1f MB of weights at the copy rate): %.2fx\n",
               fb, 1e3 * r->fwd_s, 1e3 * r->bound, 2e-6 * r->tot.macs * fb, 1e-6 * r->tot.weight_bytes, r->vs_bound);
    if (r->seq_bound > 0)
        printf("forward  batch %3lld: one phase after the other (%.1f MFLOP of other layers at the ceiling, then "
               "%.1f MB of connected weights at the copy rate): %.3f ms = %.2fx the bound; this forward: %.2fx that\n",
               fb, 1e-6 * r->other_flops, 1e-6 * r->fc_bytes, 1e3 * r->seq_bound,
               r->bound > 0 ? r->seq_bound / r->bound : 0, r->fwd_s / r->seq_bound);
}

/* trainer bench --json: one object (the option's help says its keys). */
static void print_json(const trn_bench_result *r, long long sg, long long copy_mb)
{
    const bp_ceiling *c = &r->ceiling;
    const bp_fma *f = &r->fma;
    const trn_gemm_info *g = &r->gemm;
    printf("{\"forward_batch\":%lld,\"forward_images_per_s\":%.4f,\"forward_gflops\":%.4f,"
           "\"train_batch\":%lld,\"train_images_per_s\":%.4f,\"train_gflops\":%.4f,"
           "\"conv_train_gflops\":%.4f,\"conv_share\":%.4f,\"sgemm_n\":%lld,\"sgemm_gflops\":%.4f,"
           "\"copy_mib\":%lld,\"copy_gbps\":%.4f,\"weight_bytes\":%llu,\"forward_bound_s\":%.6g,"
           "\"forward_vs_bound\":%.4f,\"forward_seq_bound_s\":%.6g,"
           "\"threads\":%d,\"determinism\":\"%s\",\"gemm_calls\":%d,\"gemm_openblas_gflops\":%.4f,"
           "\"gemm_portable_gflops\":%.4f,\"gemm_kernel\":\"%s\","
           "\"ceiling_gflops\":%.4f,\"ceiling_path\":\"%s\",\"openblas_features_gflops\":%.4f,"
           "\"own_gflops\":%.4f,\"fma_avx512_gflops\":%.4f,\"fma_avx2_gflops\":%.4f,"
           "\"fma_sse_gflops\":%.4f,\"fma_neon_gflops\":%.4f,\"cpu_isa\":\"%s\",\"cpu_core\":\"%s\","
           "\"openblas_loaded\":\"%s\",\"openblas_core\":\"%s\",\"openblas_below\":%d,"
           "\"openblas_explicit\":%d,\"products\":\"%s\"}\n",
           r->forward_batch, r->f_ips, r->f_gf, r->trained ? r->train_batch : 0, r->t_ips, r->t_gf, r->conv_gf,
           r->conv_share, sg, c->openblas, copy_mb, r->copy_gbps, (unsigned long long)r->tot.weight_bytes, r->bound,
           r->vs_bound, r->seq_bound, trn_threads(), trn_determinism() == TRN_DET_PORTABLE ? "portable" : "default",
           r->gemm_calls, r->gemm_openblas, r->gemm_portable, trn_pk_name(trn_pgemm_kernel()), c->ceiling, c->path,
           c->openblas_features, c->own, f->avx512, f->avx2, f->sse, f->neon, g->cpu_isa, g->cpu_core,
           g->openblas_loaded, g->openblas_core, g->below, g->explicit_core, g->products);
}

/* Everything after the training step, in the table's order. */
static void print_table(const bench_out *o, const trn_bench_result *r, long long sg, long long copy_mb)
{
    if (r->trained) print_train(o, r);
    print_gemm_path(&r->gemm);
    if (sg) print_ceiling(&r->ceiling, &r->fma, &r->gemm, sg);
    if (copy_mb) printf("copy     %lld MiB: %7.2f GB/s read + written (%d threads)\n", copy_mb, r->copy_gbps,
                        trn_threads());
    if (o->layers) print_fwd_layers(r, o->iters);
    print_bounds(r);
}

int cli_bench(int argc, char **argv)
{
    const char *cfg = NULL, *threads = NULL, *operand = NULL;
    ck_list set = {.n = 0};
    long long fb = 1, batch = 0, iters = 5, sg = 2048, copy_mb = 256;
    int json = 0, no_train = 0, layers = 0, no_gemm = 0, no_winograd = 0, rc0;
    const char *det = NULL;
    const ck_opt opts[] = {
        {"--cfg", "FILE", CK_STR, &cfg, 0, 0, "the network (Darknet cfg); may be given without --cfg"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "override a [net] key first (repeatable)"},
        {"--forward-batch", "N", CK_INT, &fb, 1, 4096, "images per forward (default 1)"},
        {"--batch", "N", CK_INT, &batch, 1, 4096, "images per training step"},
        {"--iterations", "N", CK_INT, &iters, 1, 100000, "timed repetitions of each (default 5; one warm-up run first)"},
        {"--sgemm", "N", CK_INT, &sg, 0, 16384, "size of the ceiling's product (default 2048; 0: skip)"},
        {"--copy", "MIB", CK_INT, &copy_mb, 0, 65536,
         "size of the memory-bandwidth yardstick, a copy of MIB MiB (default 256; 0: skip)"},
        {"--no-train", NULL, CK_FLAG, &no_train, 0, 0, "skip the training step (and the gemm shapes)"},
        {"--no-gemm", NULL, CK_FLAG, &no_gemm, 0, 0, "skip the gemm shapes"},
        {"--no-winograd", NULL, CK_FLAG, &no_winograd, 0, 0,
         "inference forwards without Winograd's F(2x2, 3x3) and F(2x2, 5x5)\n"
         "(trn_set_winograd(0)): "
         "every convolution by its im2col product, as in training"},
        {"--layers", NULL, CK_FLAG, &layers, 0, 0,
         "print every layer's forward time against the yardsticks (a\n"
         "convolution's FLOPs at the ceiling, a connected layer's weight\n"
         "bytes at the copy rate), every layer's forward and backward time\n"
         "in the step, and where it goes: every kernel's time per layer and pass"},
        {"--threads", "N", CK_STR, &threads, 0, 0, "threads (default: THREADS, else all cores)"},
        {"--determinism", "MODE", CK_STR, &det, 0, 0, CLI_DETERMINISM_DOC},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object: forward_images_per_s, forward_gflops,\n"
         "train_images_per_s, train_gflops, conv_train_gflops, sgemm_gflops\n"
         "(OpenBLAS as loaded), ceiling_gflops, ceiling_path,\n"
         "openblas_features_gflops, own_gflops, fma_avx512_gflops,\n"
         "fma_avx2_gflops, fma_sse_gflops, fma_neon_gflops, cpu_isa, cpu_core,\n"
         "openblas_loaded, openblas_core, openblas_below, openblas_explicit, products,\n"
         "copy_gbps, weight_bytes, forward_bound_s, forward_vs_bound,\n"
         "forward_seq_bound_s (the phases one after the other, below),\n"
         "gemm_calls, gemm_openblas_gflops, gemm_portable_gflops, gemm_kernel"},
        {0},
    };
    const ck_verb verb = {
        "bench", NULL, cli_bench, "[--cfg] FILE.cfg [OPTIONS]",
        "Measures on random input and random weights (nothing is read or written):\n"
        "  forward   inference at --forward-batch images (default 1)\n"
        "  train     training steps (forward, backward, update) at --batch images\n"
        "            (default: the cfg's batch / subdivisions), with the convolution\n"
        "            layers' effective GFLOPS (their forward and backward FLOPs over their time)\n"
        "  ceiling   the best single-precision N x N x N product on all threads (--sgemm N,\n"
        "            default 2048; 0: skip) of OpenBLAS as loaded, OpenBLAS with the core\n"
        "            type the CPU's features call for, and our own kernels; the peak\n"
        "            multiply-add rate per ISA level (for information); the OpenBLAS core\n"
        "            type in use, with a warning when it is below the CPU's ISA\n"
        "  copy      memory bandwidth: a copy of --copy MiB (default 256; 0: skip), read plus\n"
        "            written bytes per second; the forward's bound is the larger of its\n"
        "            FLOPs at the ceiling and its weight bytes at the copy rate; printed\n"
        "            beside it (not a bar): the other layers' FLOPs at the ceiling plus\n"
        "            the connected layers' weight bytes at the copy rate, one after the other\n"
        "  gemm      the matrix products of one training step, shape by shape (their\n"
        "            total GFLOPS): OpenBLAS (default mode) against the portable GEMM\n",
        opts, NULL,
    };
    if (ck_parse("trainer", &verb, argc, argv, &operand, 1, &rc0) < 0) return rc0;
    if (cli_cfg_operand("bench", &cfg, operand)) return 2;
    cli_sets sets = {0};
    if (cli_add_sets(&sets, "bench", &set)) return 2;
    if (!cfg) return cli_usage("bench", "no cfg given");
    int setrc = cli_check_sets("bench", cfg, &sets);
    if (setrc) return setrc;
    if (cli_determinism("bench", det)) return 2;
    if (cli_threads("bench", threads)) return 2;
    trn_set_winograd(!no_winograd);
    trn_cfg *c = cli_cfg("bench", cfg, &sets);
    if (!c) return 1;
    bench_out out = {json, layers, iters};
    trn_bench_opts bo = {c, fb, batch, iters, sg, copy_mb, !no_train, !no_gemm, print_forward, kernels, &out};
    trn_bench_result r;
    trn_err e;
    int rc = trn_bench(&bo, &r, &e);
    trn_cfg_free(c);
    if (rc != 0) return cli_fail("bench", "%s", e.msg);
    if (json) print_json(&r, sg, copy_mb);
    else print_table(&out, &r, sg, copy_mb);
    trn_bench_result_free(&r);
    return 0;
}
