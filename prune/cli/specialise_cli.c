/*
 * specialise_cli.c: `prune specialise`: parses, calls prn_specialise
 * (prune/src/specialise.c: MCDNN's (n,p) specialisation over the contexts
 * of `dataset contexts`), prints its table as each row is done.
 */
#include "prune_cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The --set keys: gate=G (0 <= G < 1): the specialised model answers only
 * when it says an in-context class with probability >= G; "other" or a
 * lower probability falls through to the generic model (0: MCDNN's
 * cascade, which falls through on "other" alone); gate=valid: each
 * context's gate, the sweep's best on its valid stream. The other keys
 * are the head's, left in *ko. -1 with err on a bad gate. */
static int split_gate(const prn_cli_opts *o, prn_cli_opts *ko, prn_specialise_opts *so, trn_err *err)
{
    *ko = *o;
    ko->nset = 0;
    for (int i = 0; i < o->nset; i++) {
        if (strncmp(o->set[i], "gate=", 5) != 0) {
            ko->set[ko->nset++] = o->set[i];
            continue;
        }
        if (!strcmp(o->set[i] + 5, "valid")) {
            so->gate_valid = 1;
            continue;
        }
        char *end;
        so->gate = strtod(o->set[i] + 5, &end);
        if (*end || end == o->set[i] + 5 || !(so->gate >= 0 && so->gate < 1))
            return trn_errf(err, "--set %s: the gate is a probability in [0, 1), or valid", o->set[i]);
    }
    return 0;
}

static double num(const cJSON *o, const char *name)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* correct/images of score `name` of o; its Wilson interval in *lo, *hi. */
static double score(const cJSON *o, const char *name, double *k, double *lo, double *hi)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, name);
    *k = num(a, "correct");
    if (lo) *lo = num(a, "top1_lo"), *hi = num(a, "top1_hi");
    return num(a, "images");
}

/* The table on stdout: the generic model's line and the header (row
 * NULL), then each context's row. */
static void print_row(void *ctx, const cJSON *table, const cJSON *r)
{
    const int *gate_valid = ctx;
    double k, lo, hi;
    if (!r) {
        double n = score(table, "generic_test", &k, NULL, NULL);
        printf("generic model: top-1 %.2f%% on the %zu test images; fall-through costs %" PRIu64 " MACs\n",
               100.0 * k / n, (size_t)n, (uint64_t)num(table, "fallthrough_macs"));
        printf("%-12s %3s %5s %18s %18s %18s %7s %12s\n", "context", "n", "p", "in-context", "cascade overall",
               "generic overall", "gain", "cascade MACs");
        return;
    }
    double casc, gen, clo, chi, glo, ghi;
    double in_n = score(r, "in_context", &k, &lo, &hi), mte = score(r, "overall", &casc, &clo, &chi);
    score(r, "generic_on_stream", &gen, &glo, &ghi);
    printf("%-12s %3d %5.2f %6.2f%% [%4.1f,%4.1f] %6.2f%% [%4.1f,%4.1f] %6.2f%% [%4.1f,%4.1f] %+6.2f %12.0f",
           cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "id")), (int)num(r, "n"), num(r, "p"),
           100.0 * k / (in_n ? in_n : 1), 100 * lo, 100 * hi, 100.0 * casc / mte, 100 * clo, 100 * chi,
           100.0 * gen / mte, 100 * glo, 100 * ghi, 100.0 * (casc - gen) / mte, num(r, "expected_macs"));
    if (*gate_valid) printf("  gate %.2f", num(r, "gate"));
    printf("\n");
}

int prn_cli_specialise(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "data", "contexts", "cut", "head", "set",
                                        "generic-cfg", "generic-weights", "parent", "seed", "out",
                                        "threads", NULL};
    static const char *const need[] = {"cfg", "weights", "data", "contexts", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "specialise",
                      "--cfg C --weights W --data D.data --contexts LIST [--cut SEL]\n"
                      "                   [--head TEXT] [--generic-cfg G --generic-weights GW] [--parent ID]\n"
                      "                   [--set key=value ...] --seed N --out DIR [--threads T]",
                      "For every (n,p) context of LIST (\"id n p data-file\" lines, as `dataset\n"
                      "contexts` writes them for D), retrains the layers of C above SEL (default:\n"
                      "the last connected layer's input, so only the classifier is retrained) for\n"
                      "the context's n classes + \"other\" on the frozen lower layers, and scores it\n"
                      "on the context's test stream: in-context top-1, and the cascade's overall\n"
                      "top-1 (\"other\" falls through to the generic model G, default C, whose cost\n"
                      "is counted for those inputs) against G alone on the same stream.\n"
                      "--head and --set as for `prune retarget`, plus --set gate=G|valid: the\n"
                      "specialised model answers only at a probability >= G, lower ones fall\n"
                      "through too (default 0: on \"other\" alone, MCDNN's cascade).\n"
                      "Writes DIR/<context>/{variant.cfg,init.weights,meta.json} and\n"
                      "DIR/specialise.json (the table).\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "specialise", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    if (!o.generic_cfg != !o.generic_weights)
        return trn_errf(err, "--generic-cfg and --generic-weights go together"), -2;
    prn_specialise_opts so = {.cfg = o.cfg, .weights = o.weights, .data = o.data, .contexts = o.contexts,
                              .cut = o.cut, .head_text = o.head, .generic_cfg = o.generic_cfg,
                              .generic_weights = o.generic_weights, .out = o.out, .seed = o.seed,
                              .threads = o.threads, .progress = print_row, .progress_ctx = &so.gate_valid};
    /* the catalog id of --cfg: the parent, and the partner of its own cascade */
    if (prn_cli_parent(&o, &so.parent, err)) return -2;
    prn_cli_opts ko;
    if (split_gate(&o, &ko, &so, err)) return -2;
    if (prn_cli_head_opts(&ko, &so.head, err)) return -2; /* a bad --set: a usage error */
    if (prn_cli_compute(o.threads, err)) return -1;
    cJSON *table;
    if (prn_specialise(&so, &table, err)) return -1;
    int nc = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(table, "contexts"));
    printf("%s: %d specialised models (L%d.. retrained)\n", o.out, nc, (int)num(table, "cut_layer") + 1);
    cJSON_Delete(table);
    return 0;
}
