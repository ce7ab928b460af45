/*
 * cli_valid.c: `trainer valid` (accuracy, top-k and confusion matrix of a
 * split) and `trainer predict` (the top-k classes of image files), both on
 * Darknet's evaluation preprocessing (trn_image_load_input).
 */
#include "cli.h"
#include "clikit.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static trn_net *eval_net(const char *verb, const char *cfgp, const cli_sets *sets, const char *weights,
                         int batch)
{
    trn_cfg *c = cli_cfg(verb, cfgp, sets);
    if (!c) return NULL;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    o.batch = batch;
    trn_err e;
    trn_net *net = trn_net_create(c, &o, &e);
    trn_cfg_free(c);
    if (!net) {
        cli_fail(verb, "%s", e.msg);
        return NULL;
    }
    if (trn_weights_load(net, weights, &e) != 0) {
        cli_fail(verb, "%s", e.msg);
        trn_net_free(net);
        return NULL;
    }
    return net;
}

/* trainer valid --json: one object (the option's help says its keys). */
static void print_json(const trn_dataset *ds, trn_split sp, size_t n, int k, const trn_valid_result *r)
{
    int classes = trn_dataset_classes(ds);
    double lo1, hi1, lo5, hi5;
    trn_wilson(r->good1, n, &lo1, &hi1);
    trn_wilson(r->good5, n, &lo5, &hi5);
    printf("{\"split\":\"%s\",\"images\":%zu,\"classes\":%d,\"top1\":%.6f,", trn_split_name(sp), n, classes,
           (double)r->good1 / n);
    printf("\"top1_ci\":[%.6f,%.6f],", lo1, hi1);
    if (classes > 5) printf("\"top5\":%.6f,\"top5_ci\":[%.6f,%.6f],", (double)r->good5 / n, lo5, hi5);
    printf("\"k\":%d,\"topk\":%.6f,\"names\":[", k, (double)r->goodk / n);
    for (int c = 0; c < classes; c++) {
        if (c) putchar(',');
        ck_json_str(stdout, trn_dataset_name(ds, c));
    }
    printf("],\"confusion\":[");
    for (int t = 0; t < classes; t++) {
        printf("%s[", t ? "," : "");
        for (int c = 0; c < classes; c++)
            printf("%s%llu", c ? "," : "", (unsigned long long)r->conf[(size_t)t * classes + c]);
        putchar(']');
    }
    printf("]");
}

/* trainer valid --against FILE: this model's predictions (the file just
 * written) paired with FILE's, McNemar's exact test on the discordant
 * images; a key of the JSON object or a line. 0, or the exit status. */
static int print_against(const char *mine, const char *against, int json)
{
    trn_preds a, b;
    trn_err e;
    uint64_t oa, ob;
    if (trn_preds_read(mine, &a, &e) != 0) return cli_fail("valid", "%s", e.msg);
    int rc = 0;
    if (trn_preds_read(against, &b, &e) != 0) {
        rc = cli_fail("valid", "%s", e.msg);
    } else {
        if (trn_preds_pair(&a, &b, &oa, &ob, &e) != 0) {
            rc = cli_fail("valid", "--against %s: %s", against, e.msg);
        } else {
            double d = ((double)oa - (double)ob) / (double)(a.images ? a.images : 1), pv = trn_mcnemar_p(oa, ob);
            if (json) {
                printf(",\"against\":{\"file\":");
                ck_json_str(stdout, against);
                printf(",\"images\":%" PRIu64 ",\"only_this\":%" PRIu64 ",\"only_against\":%" PRIu64
                       ",\"difference\":%.6f,\"p\":%.6g}", a.images, oa, ob, d, pv);
            } else {
                printf("paired with %s on the same %" PRIu64 " images: right only here %" PRIu64 ", only there %" PRIu64
                       ", %+.2f points, McNemar exact p = %.3g\n", against, a.images, oa, ob, 100 * d, pv);
            }
        }
        trn_preds_free(&b);
    }
    trn_preds_free(&a);
    return rc;
}

/* trainer valid: the accuracies, then the confusion matrix. */
static void print_table(const trn_dataset *ds, trn_split sp, size_t n, int k, const trn_valid_result *r)
{
    int classes = trn_dataset_classes(ds);
    double lo1, hi1;
    trn_wilson(r->good1, n, &lo1, &hi1);
    printf("%s split: %zu images, %d classes\n", trn_split_name(sp), n, classes);
    printf("top-1 %.4f  top-%d %.4f\n", (double)r->good1 / n, k, (double)r->goodk / n);
    printf("95%% Wilson interval of top-1 over %zu images: %.4f to %.4f\n", n, lo1, hi1);
    printf("confusion matrix (rows: true class, columns: predicted):\n%20s", "");
    for (int c = 0; c < classes; c++) printf(" %6d", c);
    putchar('\n');
    for (int t = 0; t < classes; t++) {
        printf("%3d %-16.16s", t, trn_dataset_name(ds, t));
        for (int c = 0; c < classes; c++) printf(" %6llu", (unsigned long long)r->conf[(size_t)t * classes + c]);
        putchar('\n');
    }
}

int cli_valid(int argc, char **argv)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *split = NULL, *threads = NULL, *predp = NULL;
    const char *against = NULL;
    ck_list set = {.n = 0};
    long long top = 0, batch = 32, limit = 0, lthreads = 2;
    int json = 0, rc0;
    const char *det = NULL;
    const ck_opt opts[] = {
        {"--cfg", "FILE", CK_STR, &cfgp, 0, 0, "the network (Darknet cfg)"},
        {"--weights", "FILE", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "FILE", CK_STR, &data, 0, 0, "the data set (Darknet .data)"},
        {"--split", "NAME", CK_STR, &split, 0, 0, "train, valid or test (default: valid if the .data names one, else test)"},
        {"--top", "K", CK_INT, &top, 1, 1000000,
         "top-k accuracy (default: the .data's top key if > 1, else 5;\nat most the number of classes)"},
        {"--batch", "N", CK_INT, &batch, 1, 4096, "images per forward (default 32)"},
        {"--limit", "N", CK_INT, &limit, 1, 1099511627776.0, "only the first N images of the split"},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object for scripts: {\"split\",\"images\",\"classes\",\n"
         "\"top1\",\"top1_ci\" (95% Wilson interval [lo,hi]),\"top5\",\n"
         "\"top5_ci\" (when classes > 5),\"k\",\"topk\",\"names\",\n"
         "\"confusion\" (rows: true class, columns: predicted)}"},
        {"--predictions", "FILE", CK_STR, &predp, 0, 0,
         "also write every image's true and predicted class (top-1), in\n"
         "list order, to FILE (the per-image record catalog pack pairs\n"
         "for its paired test; format in trn.h, trn_preds)"},
        {"--against", "FILE", CK_STR, &against, 0, 0,
         "with --predictions: pair them with another model's predictions\n"
         "FILE of the same images: right only here, only there, the\n"
         "difference and McNemar's exact p (--json: key \"against\")"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "override a [net] key (repeatable)"},
        {"--threads", "N", CK_STR, &threads, 0, 0, "compute threads (default: THREADS, else all cores)"},
        {"--determinism", "MODE", CK_STR, &det, 0, 0, CLI_DETERMINISM_DOC},
        {"--loader-threads", "N", CK_INT, &lthreads, 1, 256, "image decoding threads (default 2)"},
        {0},
    };
    const ck_verb verb = {
        "valid", NULL, cli_valid, "--cfg FILE.cfg --weights FILE --data FILE.data [OPTIONS]",
        "Evaluates every image of a split once (no augmentation: the centred\n"
        "evaluation crop) and prints top-1, top-k and the confusion matrix.\n",
        opts, NULL,
    };
    const char *extra;
    if (ck_parse("trainer", &verb, argc, argv, &extra, 0, &rc0) < 0) return rc0;
    cli_sets sets = {0};
    if (cli_add_sets(&sets, "valid", &set)) return 2;
    if (!cfgp || !weights || !data) return cli_usage("valid", "--cfg, --weights and --data are required");
    if (against && !predp) return cli_usage("valid", "--against needs --predictions FILE (this model's, to pair)");
    int setrc = cli_check_sets("valid", cfgp, &sets);
    if (setrc) return setrc;
    if (cli_determinism("valid", det)) return 2;
    if (cli_threads("valid", threads)) return 2;
    trn_err e;
    trn_dataset *ds = trn_dataset_open(data, &e);
    if (!ds) return cli_fail("valid", "%s", e.msg);
    int sp;
    if (split) {
        sp = trn_split_parse(split);
        if (sp < 0) {
            trn_dataset_close(ds);
            return cli_usage("valid", "--split must be train, valid or test, not '%s'", split);
        }
    } else {
        sp = trn_dataset_has(ds, TRN_SPLIT_VALID) ? TRN_SPLIT_VALID : TRN_SPLIT_TEST;
    }
    size_t n = trn_dataset_count(ds, (trn_split)sp);
    if (!trn_dataset_has(ds, (trn_split)sp) || n == 0) {
        trn_dataset_close(ds);
        return cli_fail("valid", "%s has no %s images", data, trn_split_name((trn_split)sp));
    }
    if (limit && (size_t)limit < n) n = (size_t)limit;
    int classes = trn_dataset_classes(ds);
    int k = top ? (int)top : trn_dataset_top(ds) > 1 ? trn_dataset_top(ds) : 5;
    if (k > classes) k = classes;
    trn_net *net = eval_net("valid", cfgp, &sets, weights, (int)batch);
    int rc = 1;
    if (net) {
        trn_valid_opts vo = {net, ds, (trn_split)sp, n, k, (int)batch, (int)lthreads, cfgp, data, predp};
        trn_valid_result r;
        if (trn_valid(&vo, &r, &e) != 0)
            cli_fail("valid", "%s", e.msg);
        else {
            (json ? print_json : print_table)(ds, (trn_split)sp, n, k, &r);
            trn_valid_result_free(&r);
            rc = against ? print_against(predp, against, json) : 0;
            if (json) printf("}\n");
        }
    }
    trn_net_free(net);
    trn_dataset_close(ds);
    return rc;
}

/* How trainer predict prints: --json or lines, the names, images seen. */
typedef struct pr_out {
    int json, seen;
    const trn_names *names;
} pr_out;

/* One image's answer (or its error, on stderr too), as a line or as an
 * element of the JSON results. */
static void print_image(void *ctx, const trn_predict_image *r)
{
    pr_out *o = ctx;
    int i = o->seen++;
    if (r->error) cli_fail("predict", "%s", r->error);
    if (o->json) {
        printf("%s%s{\"image\":", i ? "" : "{\"results\":[", i ? "," : "");
        ck_json_str(stdout, r->image);
    }
    if (r->error) {
        if (o->json) {
            printf(",\"error\":");
            ck_json_str(stdout, r->error);
            putchar('}');
        }
        return;
    }
    if (!o->json) printf("%s:", r->image);
    else printf(",\"top\":[");
    for (int q = 0; q < r->k; q++) {
        const char *name = trn_names_get(o->names, r->cls[q]);
        if (!o->json) {
            printf("%s %.6f %s", q ? "," : "", r->p[r->cls[q]], name);
            continue;
        }
        printf("%s{\"class\":%d,\"name\":", q ? "," : "", r->cls[q]);
        ck_json_str(stdout, name);
        printf(",\"p\":%.6f}", r->p[r->cls[q]]);
    }
    printf(o->json ? "]}" : "\n");
}

int cli_predict(int argc, char **argv)
{
    const char *cfgp = NULL, *weights = NULL, *data = NULL, *namesp = NULL, *threads = NULL;
    ck_list set = {.n = 0};
    long long top = 5;
    int rc0, json = 0;
    const char *det = NULL;
    const ck_opt opts[] = {
        {"--cfg", "FILE", CK_STR, &cfgp, 0, 0, "the network (Darknet cfg)"},
        {"--weights", "FILE", CK_STR, &weights, 0, 0, "its weights (Darknet .weights)"},
        {"--data", "FILE", CK_STR, &data, 0, 0, "take the class names from the data set's names/labels file"},
        {"--names", "FILE", CK_STR, &namesp, 0, 0, "one class name per line instead"},
        {"--top", "K", CK_INT, &top, 1, 1000000, "classes per image (default 5, at most the number of classes)"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "override a [net] key (repeatable)"},
        {"--threads", "N", CK_STR, &threads, 0, 0, "compute threads"},
        {"--determinism", "MODE", CK_STR, &det, 0, 0, CLI_DETERMINISM_DOC},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object: {\"results\":[{\"image\",\"top\":[{\"class\" (index),\"name\",\n"
         "\"p\"}]}]}; an image that cannot be read gets {\"image\",\"error\"} (and the\n"
         "exit status is 1)"},
        {0},
    };
    const ck_verb verb = {
        "predict", NULL, cli_predict,
        "--cfg FILE.cfg --weights FILE (--data FILE.data | --names FILE) [OPTIONS] IMAGE...",
        "Prints the top-k classes of every image (PNG, JPEG or BMP) with their\n"
        "probabilities and names, one line per image.\n",
        opts, NULL,
    };
    const char **imgs = calloc((size_t)argc, sizeof *imgs);
    if (!imgs) return cli_fail("predict", "out of memory");
    int nimg = ck_parse("trainer", &verb, argc, argv, imgs, argc, &rc0);
    if (nimg < 0) return free(imgs), rc0;
    cli_sets sets = {0};
    if (cli_add_sets(&sets, "predict", &set)) return free(imgs), 2;
    if (!cfgp || !weights || (!data && !namesp) || !nimg) {
        free(imgs);
        return cli_usage("predict", "--cfg, --weights, --data or --names, and at least one image are required");
    }
    int setrc = cli_check_sets("predict", cfgp, &sets);
    if (setrc) return free(imgs), setrc;
    if (cli_determinism("predict", det)) return free(imgs), 2;
    if (cli_threads("predict", threads)) return free(imgs), 2;
    trn_err e;
    trn_names names;
    int rc = 1;
    if (trn_names_open(data, namesp, &names, &e) != 0) {
        free(imgs);
        return cli_fail("predict", "%s", e.msg);
    }
    trn_net *net = eval_net("predict", cfgp, &sets, weights, 1);
    pr_out out = {.json = json, .names = &names};
    trn_predict_opts po = {net, &names, cfgp, data ? data : namesp, imgs, nimg, (int)top, print_image, &out};
    int failed = net ? trn_predict(&po, &e) : -1;
    if (net && failed < 0) cli_fail("predict", "%s", e.msg);
    if (failed >= 0 && json) printf("]}\n");
    if (failed >= 0) rc = failed > 0;
    trn_names_close(&names);
    trn_net_free(net);
    free(imgs);
    return rc;
}
