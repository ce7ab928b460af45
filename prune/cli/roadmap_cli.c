/*
 * roadmap_cli.c: `prune roadmap`: parses, calls prn_roadmap_build
 * (prune/src/roadmap_build.c: NestDNN's filter pruning roadmap,
 * docs/prune.md "The pruning roadmap"), prints its summary.
 */
#include "prune_cli.h"

#include <stdio.h>

/* Progress lines go to stderr, as the verbs' other progress. */
static void progress(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

int prn_cli_roadmap(int argc, char **argv, trn_err *err)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *out = NULL, *method = NULL, *follow = NULL;
    long long seed = -1, threads = 1;
    ck_list set = {.n = 0};
    const ck_opt opts[] = {
        {"--cfg", "C", CK_STR, &cfgp, 0, 0, "the trained base network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "D.data", CK_STR, &data, 0, 0, "the data set (train: triplets and retraining; valid: the\n"
                                                  "stopping rule; test: the reported accuracy)"},
        {"--method", "M", CK_STR, &method, 0, 0, "the ranking: trr, l1 or random (a diagnostic baseline)"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0, "seed of the triplets and the retraining"},
        {"--out", "DIR", CK_STR, &out, 0, 0, "the roadmap folder to write"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "a setting (repeatable; see above)"},
        {"--follow", "ROADMAP", CK_STR, &follow, 0, 0, "keep the per-layer filter counts of this roadmap.json\n"
                                                       "(compare two methods at equal counts)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {0},
    };
    const ck_verb v = {
        "roadmap", NULL, NULL,
        "--cfg C --weights W --data D.data --method trr|l1|random --seed N --out DIR\n"
        "                     [--set key=value ...] [--follow ROADMAP] [--threads T]",
        "NestDNN's filter pruning roadmap: from the base, each step ranks the current model\n"
        "(--method), removes the least important `step` fraction of the ranked filters across\n"
        "layers, retrains `retrain_batches` batches and is evaluated on the valid split; the\n"
        "iteration ends at the first step below `min_accuracy` (or after `max_steps`). The last\n"
        "passing step is the seed. Every step's model is written with its filters in one\n"
        "common order (each step a prefix of the one before) to DIR/step-K.cfg and\n"
        "DIR/step-K.weights; DIR/roadmap.json (written last) records the steps: filters kept\n"
        "per layer, MACs, accuracy with its 95% Wilson interval on the valid and test splits.\n"
        "--set keys: step (0.2), min_accuracy (0.5), retrain_batches (100), learning_rate\n"
        "(0.01), triplets (8192), min_filters (2), max_layer_step (0.5: at most this fraction of\n"
        "a layer's filters per step), min_layer_step (0: each layer first loses at least this\n"
        "fraction of its filters, its least important by its own ranking, the cross-layer order\n"
        "the rest of `step`; so that every layer grows at every capacity of prune grow),\n"
        "max_steps (12), target_macs (0: none; a passing step at\n"
        "or below this fraction of the base's MACs ends the roadmap), bn_batches (20: training\n"
        "batches that re-estimate the batch-norm statistics after each step's retraining; 0: none),\n"
        "connected (1; 0: only convolutional layers lose filters, the connected ones keep all),\n"
        "eval_every (0; N, a diagnostic: each step's `curve` records the valid and test top-1\n"
        "right after the pruning (batch 0) and every N retraining batches, each of a copy\n"
        "whose batch-norm statistics are re-estimated like the step's after its retraining),\n"
        "rescale (0; 1: before each step's retraining every kept filter of a batch-normalised\n"
        "layer is rescaled to its layer's mean filter norm before the pruning, statistics\n"
        "with it, so the pruned model's outputs stay and every filter starts with the same\n"
        "effective learning rate), warmup (0: the retraining's burn-in batches, the learning\n"
        "rate rising as (batch/warmup)^2, the poly power, as Darknet's burn_in), seed_epochs (0;\n"
        "E: once the iteration ends the seed step retrains E passes over the training images,\n"
        "the step's schedule stretched over them: NestDNN retrains the seed to convergence).\n",
        opts, NULL};
    int rc0;
    if (prn_cli_own_parse(&v, argc, argv, &rc0)) return rc0;
    const char *need[][2] = {{"cfg", cfgp}, {"weights", weights}, {"data", data}, {"method", method}, {"out", out}};
    int st = prn_cli_need_out(need, sizeof need / sizeof *need, seed, out, 1, err);
    if (st) return st;
    int m = prn_cli_method(method, err);
    if (m < 0) return -2;
    prn_roadmap_opts o;
    prn_roadmap_opts_defaults(&o);
    for (int i = 0; i < set.n; i++)
        if (prn_roadmap_set(&o, set.v[i], err)) return -2;
    if (prn_cli_compute((int)threads, err)) return -1;
    o.cfg = cfgp, o.weights = weights, o.data = data, o.out = out, o.follow = follow;
    o.method = (prn_rank_method)m, o.seed = (uint64_t)seed, o.threads = (int)threads;
    o.progress = progress;
    prn_roadmap_summary r;
    if (prn_roadmap_build(&o, &r, err)) return -1;
    printf("%s: %s roadmap of %d steps, seed step %d (%d of %d filters, %.3fx the base's MACs, %s top-1 %.4f "
           "[%.4f, %.4f]); %s\n",
           out, prn_rank_method_name(o.method), r.steps, r.seed_step, r.seed_filters, r.filters, r.seed_macs_ratio,
           trn_split_name(r.seed_acc.split), r.seed_acc.top1, r.seed_acc.lo, r.seed_acc.hi, r.stopped);
    return 0;
}
