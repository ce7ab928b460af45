/*
 * mimic_cli.c: `prune mimic`: the in-place transformation fed by the data
 * loader. Training pairs come from the training split with the base cfg's
 * [net] augmentation (a pure function of --seed and the step); the
 * held-out check after training uses the first batch of the test split
 * (the valid split when there is no test split, the training stream when
 * neither exists), with evaluation preprocessing.
 */
#include "prune_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mimic_input {
    trn_loader *train, *check;
    int batches; /* steps before the held-out check */
    float *y;    /* labels, unused: (batch, classes) */
} mimic_input;

static int next_images(void *ctx, uint64_t step, float *x, trn_err *err)
{
    mimic_input *in = ctx;
    if (step >= (uint64_t)in->batches && in->check)
        return trn_loader_get(in->check, step - (uint64_t)in->batches, x, in->y, err);
    return trn_loader_get(in->train, step, x, in->y, err);
}

int prn_cli_mimic(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "data", "from", "to", "with", "set",
                                        "seed", "out", "threads", NULL};
    static const char *const need[] = {"cfg", "weights", "data", "from", "to", "with", "seed",
                                       "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "mimic",
                      "--cfg C --weights W --data D.data --from SEL --to SEL\n"
                      "                   --with TEXT [--set key=value ...] --seed N --out DIR [--threads T]",
                      "Replaces layers SEL..SEL of the base by the fragment TEXT (sections separated by\n"
                      "';', items by ','; the first item of a section is its type), e.g.\n"
                      "  --with 'convolutional,filters=16,size=3,stride=2,pad=1,activation=leaky'\n"
                      "plus a linear 1x1 convolution when the channel counts differ, trains it to\n"
                      "regress the original fragment's outputs (L2 loss) on training images of D,\n"
                      "and splices it into the base. --set keys: batch (16), batches (200),\n"
                      "learning_rate (0.1), momentum (0.9), decay (0.0005).\n"
                      "Writes DIR/variant.cfg, DIR/init.weights (final weights), DIR/meta.json.\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "mimic", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    prn_mimic_opts mo;
    prn_mimic_opts_defaults(&mo);
    for (int i = 0; i < o.nset; i++)
        if (prn_mimic_opts_set(&mo, o.set[i], err)) return -2; /* a bad --set: a usage error */
    mo.from = o.from;
    mo.to = o.to;
    mo.with = o.with;
    mo.seed = o.seed;
    if (prn_cli_compute(o.threads, err)) return -1;
    trn_cfg *cfg = trn_cfg_read(o.cfg, err);
    if (!cfg) return -1;
    trn_net *base = NULL;
    trn_dataset *ds = NULL;
    mimic_input in = {0};
    prn_variant v;
    int rc = -1;
    if (!(base = prn_cli_load_base(cfg, o.weights, mo.batch, err))) goto out;
    if (!(ds = trn_dataset_open(o.data, err))) goto out;
    trn_loader_opts lo;
    if (prn_cli_loader_opts(base, o.cfg, mo.batch, o.seed, o.threads, (size_t)256 << 20, &lo, err)) goto out;
    if (!(in.train = trn_loader_open(ds, TRN_SPLIT_TRAIN, &lo, err))) goto out;
    trn_split held = trn_dataset_has(ds, TRN_SPLIT_TEST) ? TRN_SPLIT_TEST : TRN_SPLIT_VALID;
    if (trn_dataset_count(ds, held) > 0) {
        lo.augment = 0;
        lo.shuffle = 0;
        lo.cache_bytes = 0;
        if (!(in.check = trn_loader_open(ds, held, &lo, err))) goto out;
    }
    if (!(in.y = malloc((size_t)mo.batch * (size_t)trn_dataset_classes(ds) * sizeof *in.y))) {
        trn_errf(err, "out of memory");
        goto out;
    }
    in.batches = mo.batches;
    mo.input = next_images;
    mo.input_ctx = &in;
    if (prn_mimic(cfg, base, &mo, &v, err) != 0) goto out;
    cJSON_AddStringToObject(v.fields, "data", trn_data_name(o.data));
    cJSON_AddStringToObject(v.fields, "heldout_split", in.check ? trn_split_name(held) : "train");
    rc = prn_cli_finish(&v, o.out, err);
    prn_variant_free(&v);
out:
    trn_loader_close(in.train);
    trn_loader_close(in.check);
    free(in.y);
    trn_dataset_close(ds);
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}
