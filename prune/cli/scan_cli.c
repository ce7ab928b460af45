/*
 * scan_cli.c: `prune scan`: parses, calls prn_scan (prune/src/scan.c:
 * NestDNN's filter importance profiling, thesis Figure 3.3), prints the
 * table as each layer is done and writes the scan (JSON).
 */
#include "prune_cli.h"

#include <stdio.h>
#include <string.h>

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItem(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

/* --drop single's rows: one per filter, then the Spearman correlations. */
static void print_single(const cJSON *doc, const cJSON *layer)
{
    const char *m = cJSON_GetObjectItem(doc, "method")->valuestring;
    printf("\n  filter  %-10s %-8s top-1   loss    pos/neg  mean    std     zeros  bn-scale shift   next  max|r|\n", m,
           "l1");
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(layer, "single")) {
        double neg = num(e, "neg"), scale = cJSON_GetObjectItem(e, "bn_scale") ? num(e, "bn_scale") : 1;
        printf("  %6d  %-10.4g %-8.4g %6.2f%% %.4f  %.3f    %-7.3f %-7.3f %.3f  %-8.3f %-7.3f %.3f %.3f\n",
               (int)num(e, "filter"), num(e, "norm"), num(e, "l1"), 100 * num(cJSON_GetObjectItem(e, "accuracy"), "top1"),
               num(e, "loss"), neg > 0 ? num(e, "pos") / neg : 0, num(e, "mean"), num(e, "std"), num(e, "zeros"), scale,
               num(e, "shift"), num(e, "next_weight_share"), num(e, "max_abs_corr"));
    }
    const cJSON *c = cJSON_GetObjectItem(layer, "spearman");
    printf("  Spearman with the loss increase: %s %.3f, l1 %.3f; with the top-1 drop: %s %.3f, l1 %.3f\n", m,
           num(c, "loss_score"), num(c, "loss_l1"), m, num(c, "top1_score"), num(c, "top1_l1"));
}

/* What the table's header says that the scan does not record. */
struct table {
    const char *split;
    const double *fracs;
    int nf;
};

/* The table: the header once the base is measured, then a row per layer. */
static void print_progress(void *ctx, const cJSON *doc, const cJSON *layer)
{
    const struct table *t = ctx;
    if (!layer) {
        const cJSON *b = cJSON_GetObjectItem(doc, "base");
        printf("%s scan of %s on the %s split (%llu images; base top-1 %.2f%% [%.2f, %.2f])\n",
               cJSON_GetObjectItem(doc, "method")->valuestring, cJSON_GetObjectItem(doc, "cfg")->valuestring, t->split,
               (unsigned long long)num(b, "images"), 100 * num(b, "top1"), 100 * num(b, "lo"), 100 * num(b, "hi"));
        printf("%-6s %-8s", "layer", "filters");
        for (int f = 0; f < t->nf; f++) printf(" %6.0f%%", 100 * t->fracs[f]);
        printf("\n");
        fflush(stdout);
        return;
    }
    printf("L%-5d %-8d", (int)num(layer, "layer"), (int)num(layer, "filters"));
    if (cJSON_GetObjectItem(layer, "single")) {
        print_single(doc, layer);
        fflush(stdout);
        return;
    }
    const cJSON *pt;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItem(layer, "points"))
        printf(" %6.2f%%", 100 * num(cJSON_GetObjectItem(pt, "accuracy"), "top1"));
    printf("\n");
    cJSON_ArrayForEach(pt, cJSON_GetObjectItem(layer, "points")) {
        const cJSON *c = cJSON_GetObjectItem(pt, "kept_corr");
        if (c)
            printf("  %3.0f%%: kept mean |r| %.3f, random sets %.3f [%.3f, %.3f], %.0f%% of them below\n",
                   100 * num(pt, "fraction"), num(c, "mean_abs"), num(c, "random_mean"), num(c, "random_p5"),
                   num(c, "random_p95"), 100 * num(c, "random_below"));
    }
    fflush(stdout);
}

int prn_cli_scan(int argc, char **argv, trn_err *err)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *out = NULL, *method = NULL;
    const char *fr = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", *split = "test", *dropmode = "remove", *layers = NULL;
    const char *at = prn_trr_at_name(PRN_TRR_AT_DEFAULT), *dist = prn_trr_distance_name(PRN_TRR_DISTANCE_DEFAULT);
    long long seed = -1, triplets = PRN_TRR_TRIPLETS_DEFAULT, threads = 1, ncorr = 0, bn = 0;
    const ck_opt opts[] = {
        {"--cfg", "C", CK_STR, &cfgp, 0, 0, "the trained network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "D.data", CK_STR, &data, 0, 0, "the data set (triplets from train; accuracy on --split)"},
        {"--method", "M", CK_STR, &method, 0, 0, "the ranking: trr, l1 or random (a diagnostic baseline)"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0, "seed of the triplet sampling"},
        {"--triplets", "N", CK_INT, &triplets, 1, 100000000, "TRR's triplets (default 8192)"},
        {"--at", "P", CK_STR, &at, 0, 0, "TRR: where F is read: output, bn (before the activation), conv (before batch norm),\n"
                                          "pooled (after the pooling that follows the layer)"},
        {"--distance", "D", CK_STR, &dist, 0, 0, "TRR: squared (equation 3.1) or plain L2 distance"},
        {"--drop", "HOW", CK_STR, &dropmode, 0, 0, "remove (default: the filters go), mean (a diagnostic: each is replaced by its mean output)\n"
                                                  "or single (a diagnostic: each filter alone zeroed; --fractions unused)"},
        {"--bn", "B", CK_INT, &bn, 0, 100000, "with --drop single: re-estimate the batch-norm statistics from B training\n"
                                              "batches after each filter is zeroed (default 0: kept)"},
        {"--layers", "LIST", CK_STR, &layers, 0, 0, "only these ranked layers (selectors, e.g. conv@2,conv@5; default: all)"},
        {"--corr", "N", CK_INT, &ncorr, 0, 100000, "a diagnostic: the kept filters' mean |correlation| of outputs\n"
                                                  "over N training images, against random sets (default 0: none)"},
        {"--fractions", "LIST", CK_STR, &fr, 0, 0, "the pruned fractions (default 0.1,0.2,...,0.9)"},
        {"--split", "S", CK_STR, &split, 0, 0, "the split the accuracy is measured on (default test)"},
        {"--out", "FILE", CK_STR, &out, 0, 0, "the scan to write (JSON)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {0},
    };
    const ck_verb v = {
        "scan", NULL, NULL,
        "--cfg C --weights W --data D.data --method trr|l1|random --seed N --out FILE\n"
        "                  [--triplets N] [--at P] [--distance D] [--drop HOW] [--corr N] [--fractions LIST]\n"
        "                  [--layers LIST] [--bn B] [--split S] [--threads T]",
        "The sensitivity scan (NestDNN Figure 3.3): for every ranked layer and every fraction\n"
        "p, that layer alone loses its round(p x filters) least important filters by the\n"
        "ranking, without retraining, and the network's top-1 on the split is measured\n"
        "(with its 95% Wilson interval). Prints the table; writes FILE (JSON).\n"
        "--drop mean keeps the layer's shape and replaces each dropped filter by its mean\n"
        "output over 512 training images (a constant map): a diagnostic of how much of a\n"
        "filter's importance is its mean contribution to the next layer, not a pruning.\n"
        "--corr N (a diagnostic of redundancy among the kept filters): the Pearson correlation\n"
        "of every two filters' outputs over N training images and every map position; per\n"
        "point, the kept filters' mean |r| over their pairs, and the same for 1000 random sets\n"
        "of as many filters (mean, 5th and 95th percentiles, the fraction below the kept set's).\n"
        "--drop single (a diagnostic): each filter alone has its output channel zeroed (batch-norm\n"
        "statistics kept); per filter the split's top-1 and mean loss, and per layer the Spearman\n"
        "correlation of the loss increase and of the top-1 drop with the ranking's scores and L1's.\n",
        opts, NULL};
    int rc0;
    if (prn_cli_own_parse(&v, argc, argv, &rc0)) return rc0;
    const char *need[][2] = {{"cfg", cfgp}, {"weights", weights}, {"data", data}, {"method", method}, {"out", out}};
    int st = prn_cli_need_out(need, sizeof need / sizeof *need, seed, out, 0, err);
    if (st) return st;
    int m = prn_cli_method(method, err), sp = trn_split_parse(split);
    if (m < 0) return -2;
    if (sp < 0) return trn_errf(err, "--split '%s' is not a split: use train, valid or test", split), -2;
    int ati = prn_trr_at_parse(at), di = prn_trr_distance_parse(dist), drop = prn_scan_drop_parse(dropmode);
    if (ati < 0) return trn_errf(err, "--at '%s' is not a point: use output, bn, conv or pooled", at), -2;
    if (di < 0) return trn_errf(err, "--distance '%s' is not a distance: use squared or plain", dist), -2;
    if (drop < 0)
        return trn_errf(err, "--drop '%s': use remove (the filters go), mean (each replaced by its mean output) "
                             "or single (each filter alone zeroed)", dropmode), -2;
    double fracs[PRN_SCAN_MAX_FRACTIONS];
    int nf;
    if (prn_scan_fractions(fr, fracs, &nf, err)) return -2;
    if (bn > 0 && drop != PRN_SCAN_SINGLE) return trn_errf(err, "--bn %lld: only with --drop single", bn), -2;
    trn_set_threads((int)threads);
    struct table t = {split, fracs, nf};
    prn_scan_opts o = {.cfg = cfgp, .weights = weights, .data = data, .layers = layers, .method = (prn_rank_method)m,
                       .seed = (uint64_t)seed, .triplets = (uint64_t)triplets, .at = (prn_trr_at)ati,
                       .distance = (prn_trr_distance)di, .drop = (prn_scan_drop)drop, .bn = (int)bn,
                       .corr_images = (int)ncorr, .fractions = fracs, .nfractions = nf, .split = (trn_split)sp,
                       .threads = (int)threads, .progress = print_progress, .progress_ctx = &t};
    cJSON *doc;
    if (prn_scan(&o, &doc, err)) return -1;
    int rc = prn_cli_write_json(out, doc, err);
    cJSON_Delete(doc);
    return rc;
}
