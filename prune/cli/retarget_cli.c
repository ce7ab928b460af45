/*
 * retarget_cli.c: `prune retarget`: parses, calls prn_retarget_run
 * (prune/src/retarget_run.c: one head per attribute task on a frozen
 * shared trunk, MCDNN section 4.1.3) and prints its table as each head
 * trains.
 */
#include "prune_cli.h"

#include <stdio.h>

/* The table: the header once everything is checked, a row per head, then
 * (a sweep) the head each task keeps. */
static void print_report(void *ctx, const prn_retarget_report *h)
{
    (void)ctx;
    if (h->event == PRN_RETARGET_START) {
        printf("%-10s %-8s %7s %10s %7s %8s %7s %8s %18s%s\n", "task", "cut", "classes", "head MACs", "% base",
               "params", "% base", "top-1", "95% interval", h->sweep ? "   valid" : "");
        return;
    }
    if (h->event == PRN_RETARGET_KEEP) {
        printf("%s: keeps %s (valid top-1 %.2f%%%s)\n", h->task, h->sel, 100 * h->valid_top1,
               h->within ? "" : ", over budget");
        return;
    }
    printf("%-10s %-8s %7d %10.0f %6.2f%% %8.0f %6.2f%% %7.2f%% %8.2f%%..%.2f%%", h->task, h->sel, h->classes,
           h->head_macs, 100 * h->macs_fraction, h->head_params, 100 * h->params_fraction, 100 * h->top1, 100 * h->lo,
           100 * h->hi);
    if (h->sweep) printf(" %7.2f%%%s", 100 * h->valid_top1, h->within ? "" : " (over budget)");
    printf("\n");
}

int prn_cli_retarget(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "tasks", "cut", "cuts", "head", "set",
                                        "seed", "out", "threads", "parent", "trunk-task", NULL};
    static const char *const need[] = {"cfg", "weights", "tasks", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "retarget",
                      "--cfg C --weights W --tasks X.tasks (--cut SEL | --cuts LIST) [--head TEXT]\n"
                      "                   [--set key=value ...] [--parent ID] [--trunk-task T] --seed N --out DIR\n"
                      "                   [--threads T]",
                      "Shares layers 0..SEL of the trained base (the trunk, frozen) between every\n"
                      "task of X.tasks (\"task data-file\" lines, the base's task first) and trains\n"
                      "one head per other task on the trunk's outputs, computed once and cached.\n"
                      "The trunk's own task, which its classifier answers and which gets no head,\n"
                      "is the file's first; --trunk-task T names another (a trunk trained for T,\n"
                      "e.g. a curriculum): then the first task gets a head too.\n"
                      "A head is the sections of TEXT (mimic's --with syntax, e.g.\n"
                      "  --head 'avgpool' or --head 'connected,output=16,activation=relu')\n"
                      "then a connected classifier and softmax. --cuts sweeps several cuts, each\n"
                      "with its own head ('L1:maxpool,size=2,stride=2 conv@4'): every task gets a\n"
                      "head at every cut, and keeps the one most accurate on the valid split among\n"
                      "those costing at most `budget` of the base's MACs and of its parameters\n"
                      "(all of them when none does); the test split scores every one.\n"
                      "--set keys: batch (64), batches (1500), learning_rate (0.05), momentum\n"
                      "(0.9), decay (0.0005), aug_passes (2: augmented passes over the training\n"
                      "images), budget (0.01, --cuts only).\n"
                      "Writes DIR/<task>/{variant.cfg,init.weights,meta.json} (trunk + head, a\n"
                      "whole Darknet network) for every task but the trunk's, and DIR/retarget.json\n"
                      "(costs and top-1, the sweep; trunk_task: the task without a head).\n"
                      "Each head names --parent (the trunk's variant id, default base) as its\n"
                      "parent and trunk.\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "retarget", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    if (!o.cut == !o.cuts) return trn_errf(err, "give --cut SEL or --cuts LIST (one of them)"), -2;
    prn_retarget_opts ro;
    prn_retarget_opts_defaults(&ro);
    if (prn_cli_parent(&o, &ro.trunk_id, err)) return -2;
    if (prn_retarget_settings(&ro, o.set, o.nset, err)) return -2; /* a bad --set: a usage error */
    if (prn_cli_compute(o.threads, err)) return -1;
    if (prn_retarget_points(&ro, o.cut, o.cuts, o.head, err)) return -2;
    ro.cfg = o.cfg, ro.weights = o.weights, ro.tasks = o.tasks, ro.out = o.out, ro.trunk_task = o.trunk_task;
    ro.seed = o.seed, ro.threads = o.threads, ro.progress = print_report;
    prn_retarget_summary s;
    if (prn_retarget_run(&ro, &s, err)) return -1;
    if (ro.sweep)
        printf("%s: %d heads, each at its best of %d cuts, %zu cached training vectors a cut\n", o.out, s.heads,
               s.points, s.cached);
    else
        printf("%s: %d heads on trunk L0..L%d (%s), %zu cached training vectors\n", o.out, s.heads, s.cut_layer,
               ro.pts[0].sel, s.cached);
    return 0;
}
