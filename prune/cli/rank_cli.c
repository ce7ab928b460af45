/*
 * rank_cli.c: `prune trr` and `prune l1`: the filter ranking file of a
 * trained network (docs/prune.md, "Filter rankings").
 *   prune trr --cfg C --weights W --data D.data --seed N --out FILE
 *             [--triplets N] [--split S] [--threads T]
 *   prune l1  --cfg C --weights W --out FILE [--threads T]
 *   prune l1  --cfg C --weights W --like C2 --out DIR: L1 filter pruning to
 *             the per-layer filter counts of C2 (a lasso export of C), a
 *             variant folder (issue 34 item 6's comparison)
 * TRR's triplets are drawn from the data set's training split (or --split)
 * with the seed; their images get the evaluation preprocessing (no
 * augmentation). The file is written to a temporary name and renamed.
 */
#include "prune_cli.h"
#include "prn_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* TRR triplets per forward: the network is built with batch 3 x this. */
#define RANK_TRIPLETS_PER_FORWARD 16

/* `prune l1 --like C2`: the ranked network pruned to C2's counts, written
 * to the folder out. */
static int write_like(const trn_cfg *cfg, const trn_net *net, const prn_ranking *r, const char *like,
                      const char *out, trn_err *err)
{
    trn_cfg *lc = trn_cfg_read(like, err);
    trn_net_opts no;
    prn_net_opts(&no, 0);
    trn_net *ln = lc ? trn_net_create(lc, &no, err) : NULL;
    prn_variant v;
    int rc = -1;
    if (ln && prn_filters_like(cfg, net, r, ln, &v, err) == 0) {
        rc = prn_cli_finish(&v, out, err);
        prn_variant_free(&v);
    }
    trn_net_free(ln);
    trn_cfg_free(lc);
    return rc;
}

static int rank_verb(int argc, char **argv, prn_rank_method m, trn_err *err)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *out = NULL, *split = "train", *like = NULL;
    const char *at = prn_trr_at_name(PRN_TRR_AT_DEFAULT), *dist = prn_trr_distance_name(PRN_TRR_DISTANCE_DEFAULT);
    long long seed = -1, triplets = PRN_TRR_TRIPLETS_DEFAULT, threads = 1;
    int trr = m == PRN_RANK_TRR;
    const ck_opt opts_trr[] = {
        {"--cfg", "C", CK_STR, &cfgp, 0, 0, "the trained network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "D.data", CK_STR, &data, 0, 0, "the data set the triplets come from"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0, "seed of the triplet sampling"},
        {"--triplets", "N", CK_INT, &triplets, 1, 100000000, "how many triplets (default 8192)"},
        {"--split", "S", CK_STR, &split, 0, 0, "the split they come from: train (default), valid, test"},
        {"--at", "P", CK_STR, &at, 0, 0, "where F is read: output (after the activation), bn (before it), conv (before batch norm),\n"
                                              "pooled (after the pooling that follows the layer)"},
        {"--distance", "D", CK_STR, &dist, 0, 0, "squared (the L2 norm squared, equation 3.1) or plain (the L2 norm)"},
        {"--out", "FILE", CK_STR, &out, 0, 0, "the ranking file to write (JSON)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {0},
    };
    const ck_opt opts_l1[] = {
        {"--cfg", "C", CK_STR, &cfgp, 0, 0, "the trained network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--out", "FILE", CK_STR, &out, 0, 0, "the ranking file to write (JSON); with --like the variant folder"},
        {"--like", "C2", CK_STR, &like, 0, 0, "a pruned copy of C (a `prune lasso` export's variant.cfg): write the\n"
                                             "variant that keeps C2's filter count in every layer, the largest L1 norms"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "accepted for a uniform command line"},
        {0},
    };
    const ck_verb v = trr
        ? (ck_verb){"trr", NULL, NULL,
                    "--cfg C --weights W --data D.data --seed N --out FILE [--triplets N] [--split S]\n"
                    "                 [--at output|bn|conv|pooled] [--distance squared|plain] [--threads T]",
                    "Ranks every filter of every convolutional layer and every connected layer but the\n"
                    "classifier by NestDNN's Triplet Response Residual: over N triplets (anchor and\n"
                    "positive of one class, negative of another) drawn from the split with the seed,\n"
                    "TRR = sum ||F(anc)-F(neg)||^2 - ||F(anc)-F(pos)||^2 of the filter's output map.\n"
                    "Scores are normalised per layer by map size and triplet count, then ranked\n"
                    "across layers. Writes the ranking file FILE (prune/README.md).\n",
                    opts_trr, NULL}
        : (ck_verb){"l1", NULL, NULL, "--cfg C --weights W --out FILE [--like C2] [--threads T]",
                    "Ranks every filter of every convolutional layer and every connected layer but the\n"
                    "classifier by the L1 norm of its weights (Li et al.), normalised per layer by the\n"
                    "weights per filter, then across layers: the baseline of `prune trr`, same file.\n"
                    "With --like C2, writes instead the variant folder DIR (variant.cfg, init.weights,\n"
                    "meta.json) of C pruned to C2's filter count in every layer, keeping each layer's\n"
                    "largest L1 norms (L1 filter pruning at a group-lasso export's structure).\n",
                    opts_l1, NULL};
    int rc0;
    if (prn_cli_own_parse(&v, argc, argv, &rc0)) return rc0;
    if (!cfgp) return trn_errf(err, "--cfg is required"), -2;
    if (!weights) return trn_errf(err, "--weights is required"), -2;
    if (!out) return trn_errf(err, "--out is required"), -2;
    if (prn_cli_out_ok(out, like != NULL, err)) return -1;
    int sp = trn_split_parse(split);
    if (trr && !data) return trn_errf(err, "--data is required"), -2;
    if (trr && seed < 0) return trn_errf(err, "--seed is required"), -2;
    if (trr && sp < 0) return trn_errf(err, "--split '%s' is not a split: use train, valid or test", split), -2;
    int ati = prn_trr_at_parse(at), di = prn_trr_distance_parse(dist);
    if (ati < 0) return trn_errf(err, "--at '%s' is not a point: use output, bn, conv or pooled", at), -2;
    if (di < 0) return trn_errf(err, "--distance '%s' is not a distance: use squared or plain", dist), -2;
    trn_set_threads((int)threads);
    trn_cfg *cfg = trn_cfg_read(cfgp, err);
    if (!cfg) return -1;
    trn_dataset *ds = NULL;
    trn_net *net = NULL;
    prn_ranking *r = NULL;
    cJSON *j = NULL;
    int rc = -1;
    if (trr) {
        if (!(ds = trn_dataset_open(data, err))) goto done;
        if (!trn_dataset_has(ds, (trn_split)sp) || trn_dataset_count(ds, (trn_split)sp) == 0) {
            trn_errf(err, "%s: no %s split (or an empty one): choose another with --split", data, split);
            goto done;
        }
    }
    if (!(net = prn_cli_load_base(cfg, weights, trr ? 3 * RANK_TRIPLETS_PER_FORWARD : 1, err))) goto done;
    if (ds && (int)trn_net_outputs(net) != trn_dataset_classes(ds)) {
        trn_errf(err, "%s has %zu outputs but %s has %d classes: rank with the data set the network "
                      "was trained on", cfgp, trn_net_outputs(net), data, trn_dataset_classes(ds));
        goto done;
    }
    if (!(r = prn_cli_rank(net, cfg, m, ds, (trn_split)(sp < 0 ? 0 : sp), (uint64_t)seed, (uint64_t)triplets,
                           (prn_trr_at)ati, (prn_trr_distance)di, err)))
        goto done;
    if (like) {
        rc = write_like(cfg, net, r, like, out, err);
        goto done;
    }
    if (!(j = prn_ranking_json(r, net))) {
        trn_errf(err, "out of memory");
        goto done;
    }
    cJSON_AddStringToObject(j, "cfg", cfgp);
    cJSON_AddStringToObject(j, "weights", weights);
    if (trr) {
        cJSON_AddStringToObject(j, "data", data);
        cJSON_AddStringToObject(j, "split", split);
        cJSON_AddNumberToObject(j, "seed", (double)seed);
    }
    if (prn_cli_write_json(out, j, err) != 0) goto done;
    printf("%s: %s ranking of %d filters in %d layers", out, prn_rank_method_name(m), r->filters, r->nlayers);
    if (trr) printf(" (%lld triplets from the %s split, seed %lld; F at %s, %s distance)", triplets, split, seed, at, dist);
    printf("\n");
    rc = 0;
done:
    cJSON_Delete(j);
    prn_ranking_free(r);
    trn_net_free(net);
    trn_dataset_close(ds);
    trn_cfg_free(cfg);
    return rc;
}

int prn_cli_trr(int argc, char **argv, trn_err *err) { return rank_verb(argc, argv, PRN_RANK_TRR, err); }
int prn_cli_l1(int argc, char **argv, trn_err *err) { return rank_verb(argc, argv, PRN_RANK_L1, err); }
