/*
 * grow_cli.c: `prune grow`: parses, calls prn_grow (prune/src/grow.c:
 * NestDNN's freeze-&-grow over a pruning roadmap, prune/README.md
 * "Freeze-&-grow"), prints its summary.
 */
#include "prune_cli.h"

#include <stdio.h>

/* Progress lines go to stderr, as the verbs' other progress. */
static void progress(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

int prn_cli_grow(int argc, char **argv, trn_err *err)
{
    const char *roadp = NULL, *data = NULL, *out = NULL;
    long long seed = -1, threads = 1;
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
        "batch-norm scales and shifts also train and are kept per capacity), preserve (0; 1: the\n"
        "weights that read the new channels from old filters and from the layers that do not grow\n"
        "start at 0, so each capacity starts as the one below it), epochs (0; E > 0:\n"
        "each growth step trains ceil(E x training images / batch) batches instead of `batches`).\n",
        opts, NULL};
    int rc0;
    if (prn_cli_own_parse(&v, argc, argv, &rc0)) return rc0;
    const char *need[][2] = {{"roadmap", roadp}, {"data", data}, {"out", out}};
    int st = prn_cli_need_out(need, sizeof need / sizeof *need, seed, out, 1, err);
    if (st) return st;
    prn_grow_opts o;
    prn_grow_opts_defaults(&o);
    for (int i = 0; i < set.n; i++)
        if (prn_grow_set(&o, set.v[i], err)) return -2;
    trn_set_threads((int)threads);
    o.roadmap = roadp, o.data = data, o.out = out, o.seed = (uint64_t)seed, o.threads = (int)threads;
    o.progress = progress;
    prn_grow_summary r;
    if (prn_grow(&o, &r, err)) return -1;
    fprintf(stderr, "prune grow: %s: %d capacities, model %llu bytes, the independent descendants %llu bytes "
                    "(%.3fx)\n", out, r.capacities, (unsigned long long)r.weight_bytes,
            (unsigned long long)r.sum_independent, (double)r.weight_bytes / (double)r.sum_independent);
    return 0;
}
