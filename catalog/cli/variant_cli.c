/* variant_cli.c: the `catalog` commands of the variant stage: cost (the
 * cost model of a cfg), profile (measured costs and latency), describe
 * (variant.json) and variants (the table of a variants folder). */
#include "variant_cli.h"
#include "clikit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const trn_err *err)
{
    fprintf(stderr, "catalog: error: %s\n", err->msg);
    return 1;
}

/* Writes j (keys sorted) to path atomically, or to stdout when path is
 * NULL or "-". */
static int write_json(cJSON *j, const char *path, trn_err *err)
{
    char *text = cat_json_print(j);
    if (!text) return trn_errf(err, "out of memory");
    int rc = 0;
    if (!path || !strcmp(path, "-"))
        fputs(text, stdout);
    else
        rc = trn_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return rc;
}

int cat_cli_cost(int argc, char **argv)
{
    const char *cfg_path = NULL, *out = NULL, *extra;
    int rc0;
    const ck_opt opts[] = {
        {"--cfg", "C", CK_STR, &cfg_path, 0, 0, "the network (Darknet cfg)"},
        {"--out", "FILE", CK_STR, &out, 0, 0, "write the JSON to FILE (atomically) instead of printing it"},
        {0},
    };
    const ck_verb verb = {
        "cost", NULL, cat_cli_cost, "--cfg C [--out FILE]",
        "Prints (or writes to FILE) the cost model of the cfg C as JSON: per layer the\n"
        "output shape, MACs, parameters, output bytes and the bias, batch-norm,\n"
        "activation and pooling operations; totals, weight bytes and the peak live\n"
        "activation bytes at batch 1. Computed from the cfg text alone (docs/design.md,\n"
        "Cost model); `catalog profile` measures the same on the running network.\n",
        opts, NULL,
    };
    if (ck_parse("catalog", &verb, argc, argv, &extra, 0, &rc0) < 0) return rc0;
    if (!cfg_path) return ck_usage("catalog", "cost", "--cfg is required");
    trn_err err;
    trn_cfg *cfg = trn_cfg_read(cfg_path, &err);
    if (!cfg) return fail(&err);
    cat_cost cost;
    int rc = cat_cost_model(cfg, &cost, &err);
    trn_cfg_free(cfg);
    if (rc != 0) return fail(&err);
    cJSON *j = cat_cost_json(&cost);
    cat_cost_free(&cost);
    if (!j) return trn_errf(&err, "out of memory"), fail(&err);
    rc = write_json(j, out, &err);
    cJSON_Delete(j);
    return rc ? fail(&err) : 0;
}

int cat_cli_profile(int argc, char **argv)
{
    const char *cfg = NULL, *weights = NULL, *out = NULL, *extra;
    cat_profile_opts po;
    cat_profile_opts_defaults(&po);
    long long runs = po.runs, threads = po.threads, warmup = po.warmup;
    int rc0;
    const ck_opt opts[] = {
        {"--cfg", "C", CK_STR, &cfg, 0, 0, "the network (Darknet cfg)"},
        {"--weights", "W", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--runs", "N", CK_INT, &runs, 0, 100000, "timed forwards (default 30; 0: no latency)"},
        {"--threads", "T", CK_INT, &threads, 1, 1024, "compute threads (default 1)"},
        {"--warmup", "K", CK_INT, &warmup, 0, 100000, "untimed forwards first (default 3)"},
        {"--out", "FILE", CK_STR, &out, 0, 0, "profile.json to write (atomically)"},
        {0},
    };
    const ck_verb verb = {
        "profile", NULL, cat_cli_profile, "--cfg C --weights W [--runs N] [--threads T] [--warmup K]\n"
        "                       --out profile.json",
        "Measures the network C with weights W on this machine: MACs counted at the\n"
        "matrix products of a forward, parameters from the weights file's size, peak\n"
        "activation bytes from the network's buffers, the per-layer table, and the\n"
        "batch-1 latency (median and mean of N timed forwards after K warm-up ones),\n"
        "with the machine and thread count. --runs 0 measures no latency (\"latency\":\n"
        "{}): what a catalog that must be rebuilt bit for bit carries (make\n"
        "PROFILE_RUNS=0).\n",
        opts, NULL,
    };
    if (ck_parse("catalog", &verb, argc, argv, &extra, 0, &rc0) < 0) return rc0;
    po.runs = (int)runs;
    po.threads = (int)threads;
    po.warmup = (int)warmup;
    if (!cfg || !weights || !out) return ck_usage("catalog", "profile", "--cfg, --weights and --out are required");
    trn_err err;
    cJSON *p = cat_profile(cfg, weights, &po, &err);
    if (!p) return fail(&err);
    int rc = write_json(p, out, &err);
    cJSON_Delete(p);
    return rc ? fail(&err) : 0;
}

int cat_cli_describe(int argc, char **argv)
{
    cat_describe_opts o = {0};
    int rc0;
    const ck_opt opts[] = {
        {"--id", "ID", CK_STR, &o.id, 0, 0, "the variant's id"},
        {"--model", "M", CK_STR, &o.model, 0, 0, "the model (recipe) name"},
        {"--task", "T", CK_STR, &o.task, 0, 0, "the task its accuracy is measured on"},
        {"--eval", "FILE", CK_STR, &o.eval, 0, 0, "its evaluation (trainer valid --json)"},
        {"--profile", "FILE", CK_STR, &o.profile, 0, 0, "its profile (catalog profile)"},
        {"--meta", "FILE", CK_STR, &o.meta, 0, 0, "prune's meta.json (technique, parent, description, fields)"},
        {"--technique", "base", CK_STR, &o.technique, 0, 0, "instead of --meta, for the base model"},
        {0},
    };
    const ck_verb verb = {
        "describe", NULL, cat_cli_describe, "DIR --id ID --model M --task T --eval eval.json\n"
        "                        --profile profile.json (--meta meta.json | --technique base)",
        "Writes DIR/variant.json (catalog/variant.schema.json) from the variant's\n"
        "meta.json (technique, parent, description, technique_fields; written by\n"
        "prune), its evaluation (trainer valid --json) and its profile (catalog\n"
        "profile). DIR must hold variant.cfg and variant.weights.\n",
        opts, NULL,
    };
    const char *dir = NULL;
    int nop = ck_parse("catalog", &verb, argc, argv, &dir, 1, &rc0);
    if (nop < 0) return rc0;
    if (!o.id || !o.model || !o.task || !o.eval || !o.profile)
        return ck_usage("catalog", "describe", "--id, --model, --task, --eval and --profile are required");
    if (!o.meta == !o.technique) return ck_usage("catalog", "describe", "give one of --meta and --technique");
    if (nop != 1) return ck_usage("catalog", "describe", "DIR is missing");
    o.dir = dir;
    trn_err err;
    if (cat_describe(&o, &err) != 0) return fail(&err);
    printf("%s/variant.json\n", o.dir);
    return 0;
}

/* A variant.json that cannot be read: its error, and exit status 1. */
static void bad_variant(void *ctx, const trn_err *e)
{
    *(int *)ctx = fail(e);
}

/* The variants table: a row per variant, reductions and the change of
 * top-1 against the base, "-" where there is none. */
static void print_variants(const cat_variant_rows *rows)
{
    const cat_variant_row *base = rows->base;
    printf("%-24s %-10s %14s %7s %12s %12s %7s %7s %15s %7s %9s\n", "id", "technique", "MACs", "MACs/x",
           "params", "fc params", "fc/x", "top-1", "95% interval", "d top-1", "ms (b=1)");
    double images = 0;
    for (size_t i = 0; i < rows->n; i++) {
        const cat_variant_row *r = &rows->v[i];
        char mx[16] = "-", fx[16] = "-", t1[16] = "-", dt[16] = "-", ms[16] = "-", ci[40] = "-";
        if (base && r->macs > 0) snprintf(mx, sizeof mx, "%.2f", base->macs / r->macs);
        if (base && r->fc_params > 0) snprintf(fx, sizeof fx, "%.2f", base->fc_params / r->fc_params);
        if (r->has_top1) snprintf(t1, sizeof t1, "%.4f", r->top1);
        if (r->has_top1 && r->lo >= 0) snprintf(ci, sizeof ci, "%.4f-%.4f", r->lo, r->hi);
        if (r->has_top1 && r->images > images) images = r->images;
        if (base && base->has_top1 && r->has_top1)
            snprintf(dt, sizeof dt, "%+.2f", 100 * (r->top1 - base->top1));
        if (r->has_ms) snprintf(ms, sizeof ms, "%.3f", r->ms);
        printf("%-24s %-10s %14.0f %7s %12.0f %12.0f %7s %7s %15s %7s %9s\n", r->id, r->technique, r->macs, mx,
               r->params, r->fc_params, fx, t1, ci, dt, ms);
    }
    if (images > 0)
        printf("top-1 on the test split (%.0f images) with its 95%% Wilson interval; whether two variants "
               "differ is decided by McNemar's exact test on the same images (catalog pack's winnow lines)\n",
               images);
}

int cat_cli_variants(int argc, char **argv)
{
    int rc0, json = 0;
    const ck_opt opts[] = {
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object {\"variants\":[{\"id\",\"technique\",\"macs\",\"macs_reduction\",\n"
         "\"params\",\"fc_params\",\"fc_reduction\",\"top1\",\"top1_ci\" ([lo, hi], 95%\n"
         "Wilson),\"images\",\"top1_change_points\",\"ms_build_host\"}]} (null where the\n"
         "table has -)"},
        {0},
    };
    const ck_verb verb = {
        "variants", NULL, cat_cli_variants, "VARIANTS_DIR [--json]",
        "Prints the table of the variants under VARIANTS_DIR (every <id>/variant.json):\n"
        "id, technique, MACs and their reduction against the variant `base`, parameters,\n"
        "connected-layer parameters and their reduction, top-1 (of the first task) and\n"
        "its change in points, and the measured batch-1 latency on the build host.\n",
        opts, NULL,
    };
    const char *dir = NULL;
    if (ck_parse_one("catalog", &verb, argc, argv, &dir, "VARIANTS_DIR", &rc0)) return rc0;
    trn_err err;
    int rc = 0;
    cat_variant_rows rows;
    if (cat_variants_read(dir, &rows, bad_variant, &rc, &err)) return fail(&err);
    if (json) {
        cJSON *doc = cat_variants_json(&rows);
        char *text = doc ? cJSON_Print(doc) : NULL;
        cJSON_Delete(doc);
        cat_variant_rows_free(&rows);
        if (!text) return trn_errf(&err, "out of memory"), fail(&err);
        puts(text);
        free(text);
        return rc;
    }
    print_variants(&rows);
    cat_variant_rows_free(&rows);
    return rc;
}

static void export_wrote(void *user, const char *path, const char *what)
{
    (void)user;
    printf("export: %s (%s)\n", path, what);
}

/* export --darknet MANIFEST --id ID... [-o DIR] */
static int export_darknet(const ck_verb *verb, int nop, const char *manifest, const ck_list *ids, const char *out)
{
    if (nop != 1) return ck_usage_of("catalog", verb, "MANIFEST is missing");
    if (ids->n < 1) return ck_usage_of("catalog", verb, "--darknet needs --id ID (the variants to write)");
    for (int i = 0; i < ids->n; i++) {
        trn_err err;
        if (cat_export_darknet(manifest, ids->v[i], out ? out : ".", &err) != 0) return fail(&err);
        printf("%s/%s.cfg %s/%s.weights\n", out ? out : ".", ids->v[i], out ? out : ".", ids->v[i]);
    }
    return 0;
}

int cat_cli_export(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *bn = "fold";
    ck_list ids = {.n = 0};
    int onnx = 0, darknet = 0, rc0;
    const ck_opt opts[] = {
        {"--onnx", NULL, CK_FLAG, &onnx, 0, 0, "write ONNX models of a variants folder"},
        {"--darknet", NULL, CK_FLAG, &darknet, 0, 0,
         "write whole Darknet networks (<id>.cfg, <id>.weights) of a catalog's\nmanifest.json (unpacked or installed), fragments put back together"},
        {"-o|--out", "DIR", CK_STR, &out, 0, 0,
         "write into DIR (default: into each variant's folder, listed in\nits variant.json with role onnx)"},
        {"--id", "ID", CK_LIST, &ids, 0, 0, "only variant ID (repeatable; default: every variant)"},
        {"--bn", "fold|explicit", CK_STR, &bn, 0, 0, "batch norm folded into the weights (default) or as nodes"},
        {0},
    };
    const ck_verb verb = {
        "export", NULL, cat_cli_export,
        "--onnx VARIANTS_DIR [-o DIR] [--id ID]... [--bn fold|explicit] | --darknet MANIFEST --id ID... [-o DIR]",
        "--darknet: writes each variant ID of the catalog whose manifest.json is MANIFEST\n"
        "(an unpacked archive or an installed copy) as a whole Darknet network,\n"
        "DIR/<id>.cfg and DIR/<id>.weights (default DIR: .), loadable by Darknet; a head\n"
        "or specialised model stored as a fragment gets its trunk's layers back.\n"
        "--onnx: writes the variants of VARIANTS_DIR as ONNX models (opset 13, float32, NCHW,\n"
        "batch 1, input \"input\"), computing what the engine computes: <id>.onnx with\n"
        "output \"probs\"; a nested variant one <id>.cap<K>.onnx per capacity K (1 = the\n"
        "smallest, as rtl run --capacity K); an early-exit variant adds per exit J the\n"
        "outputs exit<J>_probs and exit<J>_conf (the confidence its threshold is compared\n"
        "with); heads on a shared trunk also give <parent>.tasks.onnx, the trunk once and\n"
        "one output per task, named by the task. For TensorRT (trtexec --onnx=FILE) and\n"
        "ONNX Runtime. A layer ONNX cannot express here is refused with its cfg line.\n",
        opts, NULL,
    };
    int nop = ck_parse("catalog", &verb, argc, argv, &dir, 1, &rc0);
    if (nop < 0) return rc0;
    if (onnx == darknet) return ck_usage_of("catalog", &verb, "give --onnx or --darknet");
    if (darknet) return export_darknet(&verb, nop, dir, &ids, out);
    if (nop != 1) return ck_usage_of("catalog", &verb, "VARIANTS_DIR is missing");
    if (strcmp(bn, "fold") && strcmp(bn, "explicit"))
        return ck_usage_of("catalog", &verb, "--bn is fold or explicit, not '%s'", bn);
    cat_onnx_options o = {dir, ids.v, (size_t)ids.n, out, !strcmp(bn, "explicit"), export_wrote, NULL};
    trn_err err;
    return cat_onnx_export(&o, &err) ? fail(&err) : 0;
}
