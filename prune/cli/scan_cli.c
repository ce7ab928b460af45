/*
 * scan_cli.c: `prune scan`: NestDNN's filter importance profiling (thesis
 * Figure 3.3, after Li et al.'s sensitivity analysis): one ranked layer at a
 * time loses its least important fraction p of filters by the ranking
 * (--method), the other layers stay, no retraining, and the pruned network
 * is evaluated on a split (the test split by default).
 */
#include "prune_cli.h"
#include "prn_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_MAX_FRACTIONS 32

static int parse_fractions(const char *s, double *f, int *n, trn_err *err)
{
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || !(v > 0 && v < 1) || (*end && *end != ','))
            return trn_errf(err, "--fractions '%s': use numbers in (0, 1) separated by ',', e.g. 0.1,0.5,0.9", s);
        if (*n == SCAN_MAX_FRACTIONS) return trn_errf(err, "--fractions: at most %d", SCAN_MAX_FRACTIONS);
        f[(*n)++] = v;
        p = *end ? end + 1 : end;
    }
    if (*n == 0) return trn_errf(err, "--fractions is empty");
    return 0;
}

int prn_cli_scan(int argc, char **argv, trn_err *err)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *out = NULL, *method = NULL;
    const char *fr = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9", *split = "test";
    long long seed = -1, triplets = 256, threads = 1;
    const ck_opt opts[] = {
        {"--cfg", "C", CK_STR, &cfgp, 0, 0, "the trained network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "D.data", CK_STR, &data, 0, 0, "the data set (triplets from train; accuracy on --split)"},
        {"--method", "M", CK_STR, &method, 0, 0, "the ranking: trr or l1"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0, "seed of the triplet sampling"},
        {"--triplets", "N", CK_INT, &triplets, 1, 100000000, "TRR's triplets (default 256)"},
        {"--fractions", "LIST", CK_STR, &fr, 0, 0, "the pruned fractions (default 0.1,0.2,...,0.9)"},
        {"--split", "S", CK_STR, &split, 0, 0, "the split the accuracy is measured on (default test)"},
        {"--out", "FILE", CK_STR, &out, 0, 0, "the scan to write (JSON)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {0},
    };
    const ck_verb v = {
        "scan", NULL, NULL,
        "--cfg C --weights W --data D.data --method trr|l1 --seed N --out FILE\n"
        "                  [--triplets N] [--fractions LIST] [--split S] [--threads T]",
        "The sensitivity scan (NestDNN Figure 3.3): for every ranked layer and every fraction\n"
        "p, that layer alone loses its round(p x filters) least important filters by the\n"
        "ranking, without retraining, and the network's top-1 on the split is measured\n"
        "(with its 95% Wilson interval). Prints the table; writes FILE (JSON).\n",
        opts, NULL};
    const char *extra;
    int rc0;
    if (ck_parse("prune", &v, argc + 1, argv - 1, &extra, 0, &rc0) < 0) return rc0 == 0 ? 0 : -3;
    const char *need[][2] = {{"cfg", cfgp}, {"weights", weights}, {"data", data}, {"method", method}, {"out", out}};
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!need[i][1]) return trn_errf(err, "--%s is required", need[i][0]), -2;
    if (seed < 0) return trn_errf(err, "--seed is required"), -2;
    int m = prn_rank_method_parse(method), sp = trn_split_parse(split);
    if (m < 0) return trn_errf(err, "--method '%s' is not a ranking: use trr or l1", method), -2;
    if (sp < 0) return trn_errf(err, "--split '%s' is not a split: use train, valid or test", split), -2;
    double fracs[SCAN_MAX_FRACTIONS];
    int nf;
    if (parse_fractions(fr, fracs, &nf, err)) return -2;
    trn_set_threads((int)threads);

    int rc = -1;
    trn_cfg *cfg = trn_cfg_read(cfgp, err);
    trn_dataset *ds = NULL;
    trn_net *base = NULL, *rn = NULL, *ev = NULL;
    prn_ranking *r = NULL;
    cJSON *j = NULL;
    int *keep = NULL;
    if (!cfg) return -1;
    if (!(ds = trn_dataset_open(data, err))) goto done;
    if (!trn_dataset_count(ds, (trn_split)sp)) {
        trn_errf(err, "%s: no %s split (or an empty one): choose another with --split", data, split);
        goto done;
    }
    if (!(base = prn_cli_load_base(cfg, weights, 64, err))) goto done;
    if ((int)trn_net_outputs(base) != trn_dataset_classes(ds)) {
        trn_errf(err, "%s has %zu outputs but %s has %d classes", cfgp, trn_net_outputs(base), data,
                 trn_dataset_classes(ds));
        goto done;
    }
    if (m == PRN_RANK_TRR && !(rn = prn_cli_load_base(cfg, weights, 48, err))) goto done;
    if (!(r = prn_cli_rank(rn ? rn : base, (prn_rank_method)m, ds, TRN_SPLIT_TRAIN, (uint64_t)seed,
                           (uint64_t)triplets, err)))
        goto done;
    rm_acc a0;
    if (prn_cli_evaluate(base, ds, (trn_split)sp, (int)threads, &a0, err)) goto done;
    j = cJSON_CreateObject();
    cJSON *jl = cJSON_AddArrayToObject(j, "layers");
    cJSON_AddStringToObject(j, "format", "prune-scan");
    cJSON_AddStringToObject(j, "method", prn_rank_method_name((prn_rank_method)m));
    if (m == PRN_RANK_TRR) cJSON_AddNumberToObject(j, "triplets", (double)triplets);
    cJSON_AddNumberToObject(j, "seed", (double)seed);
    cJSON_AddStringToObject(j, "cfg", cfgp);
    cJSON_AddStringToObject(j, "weights", weights);
    cJSON_AddStringToObject(j, "data", data);
    cJSON_AddItemToObject(j, "base", prn_cli_acc_json(&a0));
    printf("%s scan of %s on the %s split (%llu images; base top-1 %.2f%% [%.2f, %.2f])\n",
           prn_rank_method_name((prn_rank_method)m), cfgp, split, (unsigned long long)a0.images, 100 * a0.top1,
           100 * a0.lo, 100 * a0.hi);
    printf("%-6s %-8s", "layer", "filters");
    for (int f = 0; f < nf; f++) printf(" %6.0f%%", 100 * fracs[f]);
    printf("\n");
    for (int l = 0; l < r->nlayers; l++) {
        const prn_rank_layer *L = &r->layers[l];
        cJSON *o = cJSON_CreateObject(), *pts = NULL;
        cJSON_AddItemToArray(jl, o);
        cJSON_AddNumberToObject(o, "layer", L->layer);
        cJSON_AddStringToObject(o, "type", trn_layer_kind_name(L->kind));
        cJSON_AddNumberToObject(o, "filters", L->filters);
        pts = cJSON_AddArrayToObject(o, "points");
        printf("L%-5d %-8d", L->layer, L->filters);
        fflush(stdout);
        for (int f = 0; f < nf; f++) {
            int drop = (int)lround(fracs[f] * L->filters);
            if (drop > L->filters - 1) drop = L->filters - 1;
            /* The layer's most important filters, in ascending index order. */
            free(keep);
            if (!(keep = calloc((size_t)L->filters, sizeof *keep))) {
                trn_errf(err, "out of memory");
                goto done;
            }
            int n = 0;
            for (int q = 0; q < L->filters; q++) {
                int stays = 0;
                for (int z = 0; z < L->filters - drop; z++) stays |= L->order[z] == q;
                if (stays) keep[n++] = q;
            }
            prn_keep k = {L->layer, n, keep};
            trn_cfg *pc = prn_filters_cfg(cfg, base, &k, 1, err);
            trn_net_opts no;
            trn_net_opts_defaults(&no);
            no.batch = 64;
            no.infer_only = 1;
            rm_acc a;
            int bad = !pc || !(ev = trn_net_create(pc, &no, err)) || prn_filters_copy(base, ev, &k, 1, err) ||
                      prn_cli_evaluate(ev, ds, (trn_split)sp, (int)threads, &a, err);
            trn_cfg_free(pc);
            trn_net_free(ev);
            ev = NULL;
            if (bad) goto done;
            cJSON *pt = cJSON_CreateObject();
            cJSON_AddItemToArray(pts, pt);
            cJSON_AddNumberToObject(pt, "fraction", fracs[f]);
            cJSON_AddNumberToObject(pt, "pruned", drop);
            cJSON_AddItemToObject(pt, "accuracy", prn_cli_acc_json(&a));
            printf(" %6.2f%%", 100 * a.top1);
            fflush(stdout);
        }
        printf("\n");
    }
    if (prn_cli_write_json(out, j, err) != 0) goto done;
    rc = 0;
done:
    free(keep);
    cJSON_Delete(j);
    prn_ranking_free(r);
    trn_net_free(rn);
    trn_net_free(base);
    trn_dataset_close(ds);
    trn_cfg_free(cfg);
    return rc;
}
