/*
 * exits_cli.c: `prune early-exit`: parses, calls prn_early_exit_run
 * (prune/src/exits_run.c: FlexDNN's exit search, insertion plan and
 * lossless thresholds, or the BranchyNet-style baseline, fed by the data
 * loader), prints what it wrote.
 */
#include "prune_cli.h"

#include <stdio.h>
#include <stdlib.h>

int prn_cli_early_exit(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "data", "set", "seed", "out", "threads", "parent", NULL};
    static const char *const need[] = {"cfg", "weights", "data", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "early-exit",
                      "--cfg C --weights W --data D.data --seed N --out DIR [--set key=value ...]\n"
                      "                   [--threads T] [--parent ID]",
                      "FlexDNN's early exits. With trunk_prune=1 the trunk is first pruned by\n"
                      "collective importance (thesis 4.3.1: sequential backward selection per\n"
                      "convolutional layer, scored by a linear exit on the layer's remaining filters;\n"
                      "approximation and cost in meta.json) to trunk_macs x the base's MACs and\n"
                      "retrained distilled from the base; otherwise the trained base is the trunk.\n"
                      "The trunk is then frozen: an over-parameterised exit branch at every\n"
                      "convolution and max-pool, each shrunk (layers, then filters) while its exit\n"
                      "rate holds; the insertion plan drops the exit with the lowest\n"
                      "Q_j = G_j / C_j until the expected MACs stop falling and the exits together\n"
                      "cost at most exit_cap x the base's MACs; per-exit thresholds lossless on the\n"
                      "valid split (with a margin, never below min_threshold); the alpha profile\n"
                      "(T = alpha x T_lossless) on the test split, against the original base.\n"
                      "--set keys: batch (64), stage1 (400), finetune (150), learning_rate (0.05),\n"
                      "momentum (0.9), decay (0.0005), kd (0.5: distillation from the trunk's\n"
                      "output), width (32), layers (2), pool_to (4), tolerance (0.02), branchynet\n"
                      "(0; 1: the baseline, one fixed head per max-pool stage), exit_cap (0.05; 0:\n"
                      "none), min_threshold (0.5), threshold_z (1: the margin in standard\n"
                      "deviations; 0: plain lossless), confidence (entropy: the thesis's\n"
                      "Conf; max: the top probability; margin: the top less the second; written\n"
                      "into exits.cfg), anneal (1: every branch's learning rate\n"
                      "decays to 0 over its batches; 0: constant), same_budget (1: every searched\n"
                      "branch fine-tuned up to BranchyNet's batches, stage1 + finetune x (layers + 3),\n"
                      "before the insertion plan; 0: as searched), trunk_prune (0; 1: collective\n"
                      "importance; 2: L1 norm), trunk_macs (0.6; 0: the thesis's minimum counts at\n"
                      "trunk_tolerance), trunk_tolerance (0.01), trunk_retrain (400 batches),\n"
                      "trunk_lr (0.02), trunk_kd (0.5), trunk_compare_l1 (0; 1: also the other\n"
                      "ranking at the same counts, retrained alike), sbs_images (2048), sbs_epochs\n"
                      "(3), sbs_first_epochs (10), sbs_refit (0: one exit fine-tune per round; E:\n"
                      "E passes per candidate, the exact O(N^2)), sbs_drop (1 filter per round),\n"
                      "sbs_stop (0.2), predictions (0; 1: DIR/predictions.json, each test image's\n"
                      "exit and probabilities at alpha 1, and its exit and answer at every alpha of\n"
                      "the profile; DIR/exits.predictions, each one's true\n"
                      "and predicted class at alpha 1, is always written).\n"
                      "Writes DIR/variant.cfg and DIR/init.weights (the trunk: the base, or the\n"
                      "pruned trunk, loadable by Darknet), DIR/exits.cfg, DIR/exits.weights\n"
                      "(trainer/README.md, Early exits) and DIR/meta.json (its parent: --parent,\n"
                      "the catalog id of --cfg, default base; the \"base\" everything is measured\n"
                      "against is always --cfg).\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "early-exit", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    prn_early_exit_run_opts eo;
    prn_early_exit_run_defaults(&eo);
    if (prn_cli_parent(&o, &eo.parent, err)) return -2;
    for (int i = 0; i < o.nset; i++)
        if (prn_early_exit_run_set(&eo, o.set[i], err)) return -2;
    eo.exits.seed = o.seed;
    if (prn_cli_compute(o.threads, err)) return -1;
    eo.cfg = o.cfg, eo.weights = o.weights, eo.data = o.data, eo.out = o.out;
    eo.base_id = o.parent, eo.threads = o.threads;
    char *desc;
    if (prn_early_exit_run(&eo, &desc, err)) return -1;
    printf("%s: %s\n", o.out, desc);
    free(desc);
    return 0;
}
