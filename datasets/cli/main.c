/*
 * main.c: the `dataset` program: generate the default synthetic set, import
 * CIFAR-10/100, MNIST or image folders, write (n,p) context streams, and
 * check a set. Exit status: 0 done, 1 failed (the message says why), 2 bad
 * command line.
 */
#include "clikit.h"
#include "ds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2

static const char *prog = "dataset";

static void usage_main(FILE *f)
{
    fprintf(f,
            "Usage: %s VERB [OPTIONS]\n"
            "\n"
            "Data sets in the Darknet classifier layout (.data, .names, list files, PNG images)\n"
            "for the catalog toolchain. Verbs:\n"
            "  generate   write the embedded synthetic default set (deterministic from a seed)\n"
            "  import     import CIFAR-10, CIFAR-100, MNIST, Fashion-MNIST or an image folder tree\n"
            "  contexts   write (n,p)-dominated context streams of a set\n"
            "  check      check a .data set: labels, lists, images\n"
            "  shape      the image shape of a .data set (width, height, channels)\n"
            "  help VERB  the options of a verb (also: %s VERB --help)\n"
            "\n"
            "Every set is written under a temporary name and renamed into place when complete;\n"
            "the same inputs and seed give the same bytes. See datasets/README.md.\n",
            prog, prog);
}

static int default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The notes on the context sizes n a set of too few classes skipped. */
static void note_skipped(const ds_context_result *c)
{
    for (int i = 0; i < c->nskipped; i++)
        printf("%s: note: no context with n = %d: the set has no more classes than that\n", prog, c->skipped_n[i]);
}

/* Reports the outcome of a verb that writes a set; returns the exit status. */
static int finish(const char *verb, int rc, const trn_err *err, const ds_write_result *res, double t0)
{
    if (rc != 0) {
        fprintf(stderr, "%s %s: %s\n", prog, verb, err->msg);
        return 1;
    }
    const char *what = !strcmp(verb, "import") ? "imported" : "wrote";
    double secs = now() - t0;
    printf("%s: %s %s: %zu train, %zu valid, %zu test images (%.1f s)\n", prog, what, res->data_path,
           res->count[TRN_SPLIT_TRAIN], res->count[TRN_SPLIT_VALID], res->count[TRN_SPLIT_TEST], secs);
    if (res->unchanged) printf("%s: an identical set was already there; it is kept as it was\n", prog);
    if (res->contexts.written) printf("%s: %d (n,p) contexts in contexts/\n", prog, res->contexts.written);
    note_skipped(&res->contexts);
    return 0;
}

/* The rows of the context options, shared by the verbs that write contexts
 * (their values are applied by apply_contexts). */
#define CONTEXT_ROWS(n_list, p_list, per)                                                          \
    {"--context-n", "LIST", CK_STR, &(n_list), 0, 0, "context sizes n (default 7,14,21; n >= classes is skipped)"}, \
    {"--context-p", "LIST", CK_STR, &(p_list), 0, 0, "in-context fractions p (default 0.6,0.7,0.8,0.9,0.95)"},      \
    {"--context-per", "N", CK_INT, &(per), 1, 100, "class sets drawn per n (default 1)"}

/* Applies the context options; a usage error (printed) returns 2. */
static int apply_contexts(const ck_verb *v, const char *n_list, const char *p_list, long long per,
                          ds_context_opts *ctx)
{
    trn_err err;
    if (n_list && ds_context_parse_n(ctx, n_list, &err) != 0) return ck_usage_of(prog, v, "%s", err.msg);
    if (p_list && ds_context_parse_p(ctx, p_list, &err) != 0) return ck_usage_of(prog, v, "%s", err.msg);
    ctx->per = (int)per;
    return 0;
}

/* A seed: any unsigned 64-bit number. 0, or 2 after the usage error. */
static int parse_seed(const ck_verb *v, const char *s, uint64_t *seed)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return ck_usage_of(prog, v, "--seed needs a non-negative integer, got '%s'", s);
    *seed = x;
    return 0;
}

static int cmd_generate(int argc, char **argv)
{
    ds_synth_opts o;
    ds_synth_defaults(&o);
    ds_context_opts ctx;
    ds_context_defaults(&ctx);
    const char *out = "build/data", *name = "synth", *seed = NULL, *n_list = NULL, *p_list = NULL, *extra;
    long long size = o.size, train = o.train, valid = o.valid, test = o.test, clutter = o.clutter;
    long long threads = default_threads(), per = ctx.per;
    double noise = o.noise, occlusion = o.occlusion, rotation = o.rotation;
    int no_ctx = 0, rc0;
    const ck_opt opts[] = {
        {"--out", "DIR", CK_STR, &out, 0, 0, "parent folder of the set (default build/data)"},
        {"--name", "NAME", CK_STR, &name, 0, 0, "set name (default synth)"},
        {"--seed", "N", CK_STR, &seed, 0, 0, "seed of everything random (default 1)"},
        {"--size", "N", CK_INT, &size, 16, 256, "image side in pixels, 16..256 (default 32)"},
        {"--train", "N", CK_INT, &train, 1, 100000, "training images per class (default 100)"},
        {"--valid", "N", CK_INT, &valid, 0, 100000, "validation images per class (default 20)"},
        {"--test", "N", CK_INT, &test, 0, 100000, "test images per class (default 30)"},
        {"--clutter", "N", CK_INT, &clutter, 0, 32, "most distractor objects per image (default 2)"},
        {"--noise", "X", CK_REAL, &noise, 0, 0.5, "most per-pixel noise sigma, 0..0.5 (default 0.04)"},
        {"--occlusion", "X", CK_REAL, &occlusion, 0, 1, "probability of an occluding bar, 0..1 (default 0.2)"},
        {"--rotation", "DEG", CK_REAL, &rotation, 0, 180, "the object turns by up to +-DEG degrees, 0..180 (default 30)"},
        {"--threads", "N", CK_INT, &threads, 1, 64, "worker threads (default: all cores; bytes do not depend on it)"},
        {"--no-contexts", NULL, CK_FLAG, &no_ctx, 0, 0, "do not write contexts/"},
        CONTEXT_ROWS(n_list, p_list, per),
        {0},
    };
    const ck_verb verb = {
        "generate", NULL, cmd_generate, "[OPTIONS]",
        "Writes the synthetic default set OUT/NAME: 48 identity classes (8 shapes x 6 colours)\n"
        "and 4 attribute tasks over the same images (shape family, colour group, size,\n"
        "texture), train/valid/test splits that share no image, and (n,p) contexts.\n",
        opts, NULL,
    };
    if (ck_parse(prog, &verb, argc, argv, &extra, 0, &rc0) < 0) return rc0;
    if (seed && parse_seed(&verb, seed, &o.seed)) return EXIT_USAGE;
    if (apply_contexts(&verb, n_list, p_list, per, &ctx)) return EXIT_USAGE;
    o.size = (int)size, o.train = (int)train, o.valid = (int)valid, o.test = (int)test, o.clutter = (int)clutter;
    o.noise = (float)noise, o.occlusion = (float)occlusion, o.rotation = (float)rotation;
    ctx.seed = o.seed;
    trn_err err;
    ds_write_result res;
    double t0 = now();
    int rc = ds_synth_generate(&o, out, name, (int)threads, no_ctx ? NULL : &ctx, &res, &err);
    return finish("generate", rc, &err, &res, t0);
}

static int cmd_import(int argc, char **argv)
{
    ds_import_opts o;
    ds_import_defaults(&o);
    ds_context_opts ctx;
    ds_context_defaults(&ctx);
    const char *seed = NULL, *n_list = NULL, *p_list = NULL, *ops[2];
    long long size = o.size, threads = default_threads(), per = ctx.per;
    double valid_frac = o.valid_frac, test_frac = o.test_frac;
    int no_ctx = 0, rc0;
    const ck_opt opts[] = {
        {"--out", "DIR", CK_STR, &o.root, 0, 0, "parent folder of the set (default build/data)"},
        {"--name", "NAME", CK_STR, &o.name, 0, 0, "set name (default: the format, or the folder's name)"},
        {"--seed", "N", CK_STR, &seed, 0, 0, "seed of the split choice and list order (default 1)"},
        {"--valid-frac", "X", CK_REAL, &valid_frac, 0, 0.9, "validation share carved from training images (default 0.1)"},
        {"--test-frac", "X", CK_REAL, &test_frac, 0, 0.9, "test share carved when a folder tree has no test/ (default 0.1)"},
        {"--size", "N", CK_INT, &size, 0, 4096, "folder: resize images to N x N (default 0: keep)"},
        {"--threads", "N", CK_INT, &threads, 1, 64, "worker threads (default: all cores)"},
        {"--no-contexts", NULL, CK_FLAG, &no_ctx, 0, 0, "do not write contexts/"},
        CONTEXT_ROWS(n_list, p_list, per),
        {0},
    };
    const ck_verb verb = {
        "import", NULL, cmd_import, "FORMAT SRC [OPTIONS]",
        "Imports SRC into OUT/NAME in the same layout. FORMAT and SRC:\n"
        "  cifar10   cifar-10-batches-bin/: data_batch_1..5.bin, test_batch.bin, batches.meta.txt\n"
        "  cifar100  cifar-100-binary/: train.bin, test.bin, fine_label_names.txt,\n"
        "            coarse_label_names.txt (adds the task 'coarse')\n"
        "  mnist     train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,\n"
        "            t10k-labels-idx1-ubyte (plain or .gz)\n"
        "  fashion-mnist  the same files of Fashion-MNIST (Debian: /usr/share/datasets/\n"
        "            fashion-mnist): its class names, and the tasks 'category' and 'footwear'\n"
        "  folder    SRC/<class>/*.{png,jpg,jpeg} or SRC/{train,valid|val,test}/<class>/...\n"
        "Corrupt or truncated input is rejected with the file and byte offset; nothing is\n"
        "written then.\n",
        opts, NULL,
    };
    int nop = ck_parse(prog, &verb, argc, argv, ops, 2, &rc0);
    if (nop < 0) return rc0;
    if (nop != 2) return ck_usage_of(prog, &verb, "expected FORMAT and SRC");
    if (seed && parse_seed(&verb, seed, &o.seed)) return EXIT_USAGE;
    if (apply_contexts(&verb, n_list, p_list, per, &ctx)) return EXIT_USAGE;
    o.size = (int)size, o.threads = (int)threads, o.valid_frac = valid_frac, o.test_frac = test_frac;
    trn_err err;
    int f = ds_format_parse(ops[0], &err);
    if (f < 0) {
        fprintf(stderr, "%s import: %s\n", prog, err.msg);
        return EXIT_USAGE;
    }
    ctx.seed = o.seed;
    o.contexts = no_ctx ? NULL : &ctx;
    ds_write_result res;
    double t0 = now();
    int rc = ds_import((ds_format)f, ops[1], &o, &res, &err);
    return finish("import", rc, &err, &res, t0);
}

static int cmd_contexts(int argc, char **argv)
{
    ds_context_opts ctx;
    ds_context_defaults(&ctx);
    const char *out = NULL, *seed = NULL, *n_list = NULL, *p_list = NULL, *data = NULL;
    long long per = ctx.per;
    int rc0;
    const ck_opt opts[] = {
        {"--out", "DIR", CK_STR, &out, 0, 0, "the contexts folder (default: contexts/ beside DATA)"},
        {"--seed", "N", CK_STR, &seed, 0, 0, "seed of the class choice and the streams (default 1)"},
        {"--classes", "A,B,...", CK_STR, &ctx.classes, 0, 0,
         "these classes (labels of DATA) as the one context instead of\nn drawn ones (a context a device observed)"},
        CONTEXT_ROWS(n_list, p_list, per),
        {0},
    };
    const ck_verb verb = {
        "contexts", NULL, cmd_contexts, "DATA [OPTIONS]",
        "Writes (n,p)-dominated streams of the set DATA (.data): for every n, n classes drawn\n"
        "from the seed; for every p, lists in which those classes make up fraction p and the\n"
        "rest comes from the other classes, which are labelled 'other' (the n+1-th class).\n",
        opts, NULL,
    };
    int nop = ck_parse(prog, &verb, argc, argv, &data, 1, &rc0);
    if (nop < 0) return rc0;
    if (nop != 1) return ck_usage_of(prog, &verb, "expected one DATA file");
    if (seed && parse_seed(&verb, seed, &ctx.seed)) return EXIT_USAGE;
    if (apply_contexts(&verb, n_list, p_list, per, &ctx)) return EXIT_USAGE;
    char def[DS_PATH_MAX];
    if (!out) {
        const char *slash = strrchr(data, '/');
        if (slash) snprintf(def, sizeof def, "%.*s/contexts", (int)(slash - data), data);
        else snprintf(def, sizeof def, "contexts");
        out = def;
    }
    trn_err err;
    ds_context_result res;
    if (ds_contexts_write(data, out, &ctx, &res, &err) != 0) {
        fprintf(stderr, "%s contexts: %s\n", prog, err.msg);
        return 1;
    }
    printf("%s: %d (n,p) contexts in %s (index: %s/contexts.list)\n", prog, res.written, out, out);
    note_skipped(&res);
    return 0;
}

/* The images of each of the set's classes in split into per (zeroed first);
 * returns the split's image count. */
static size_t count_per_class(const trn_dataset *ds, trn_split split, size_t *per)
{
    size_t n = trn_dataset_count(ds, split);
    memset(per, 0, (size_t)trn_dataset_classes(ds) * sizeof *per);
    for (size_t i = 0; i < n; i++) per[trn_dataset_class(ds, split, i)]++;
    return n;
}

/* The counts of `check --json`. */
static void check_json(const trn_dataset *ds, const char *data, int decode)
{
    int classes = trn_dataset_classes(ds);
    printf("{\"data\":");
    ck_json_str(stdout, data);
    printf(",\"classes\":%d,\"decoded\":%s,\"ok\":true,\"splits\":[", classes, decode ? "true" : "false");
    size_t *per = calloc((size_t)classes + 1, sizeof *per);
    int first = 1;
    for (int sp = 0; sp < TRN_SPLIT_COUNT && per; sp++) {
        trn_split split = (trn_split)sp;
        if (!trn_dataset_has(ds, split)) continue;
        size_t n = count_per_class(ds, split, per);
        printf("%s{\"split\":\"%s\",\"images\":%zu,\"per_class\":[", first ? "" : ",", trn_split_name(split), n);
        first = 0;
        for (int k = 0; k < classes; k++) {
            printf("%s{\"label\":", k ? "," : "");
            ck_json_str(stdout, trn_dataset_label(ds, k));
            printf(",\"images\":%zu}", per[k]);
        }
        printf("]}");
    }
    free(per);
    printf("]}\n");
}

/* The set DATA for the verb `verb`; NULL after saying why on stderr. */
static trn_dataset *open_set(const char *verb, const char *data)
{
    trn_err err;
    trn_dataset *ds = trn_dataset_open(data, &err);
    if (!ds) fprintf(stderr, "%s %s: %s\n", prog, verb, err.msg);
    return ds;
}

static int cmd_check(int argc, char **argv)
{
    int decode = 0, json = 0, rc0;
    const ck_opt opts[] = {
        {"--decode", NULL, CK_FLAG, &decode, 0, 0, "also decode every image (PNG, JPEG or BMP)"},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "print the counts as one JSON object: {\"data\",\"classes\",\"decoded\",\"ok\":true,\n"
         "\"splits\":[{\"split\",\"images\",\"per_class\":[{\"label\",\"images\"}]}]}\n"
         "(errors stay on stderr)"},
        {0},
    };
    const ck_verb verb = {
        "check", NULL, cmd_check, "DATA [--decode] [--json]",
        "Checks the set DATA (.data): its keys, labels file, list files, that every image\n"
        "matches exactly one label (parent folder or a '_' token of its file name), exists,\n"
        "and is in one split only; prints the counts per split and class.\n",
        opts, NULL,
    };
    const char *data = NULL;
    int nop = ck_parse(prog, &verb, argc, argv, &data, 1, &rc0);
    if (nop < 0) return rc0;
    if (nop != 1) return ck_usage(prog, "check", "expected one DATA file");
    trn_dataset *ds = open_set("check", data);
    if (!ds) return 1;
    trn_err err;
    int rc = ds_check_set(ds, data, decode, &err);
    if (rc != 0) {
        fprintf(stderr, "%s check: %s\n", prog, err.msg);
    } else if (json) {
        check_json(ds, data, decode);
    } else {
        int classes = trn_dataset_classes(ds);
        printf("%s: %s: %d classes\n", prog, data, classes);
        size_t *per = calloc((size_t)classes, sizeof *per);
        for (int sp = 0; sp < TRN_SPLIT_COUNT && per; sp++) {
            trn_split split = (trn_split)sp;
            if (!trn_dataset_has(ds, split)) continue;
            size_t n = count_per_class(ds, split, per);
            size_t lo_n = n, hi_n = 0;
            int lo_k = 0, hi_k = 0;
            for (int k = 0; k < classes; k++) {
                if (per[k] < lo_n) lo_n = per[k], lo_k = k;
                if (per[k] > hi_n) hi_n = per[k], hi_k = k;
            }
            printf("%s:   %-5s %zu images, per class %zu (%s) .. %zu (%s)\n", prog, trn_split_name(split), n,
                   lo_n, trn_dataset_label(ds, lo_k), hi_n, trn_dataset_label(ds, hi_k));
        }
        free(per);
        printf("%s: ok%s\n", prog, decode ? " (every image decoded)" : "");
    }
    trn_dataset_close(ds);
    return rc == 0 ? 0 : 1;
}

static int cmd_shape(int argc, char **argv)
{
    int rc0;
    const ck_opt opts[] = {{0}};
    const ck_verb verb = {
        "shape", NULL, cmd_shape, "DATA",
        "Prints the image shape of the set DATA (.data) as 'WIDTH HEIGHT CHANNELS': the\n"
        "first training image's, decoded (channels 1 grey, 3 RGB). The pipeline fits the\n"
        "base network's input to it (mk/input.awk).\n",
        opts, NULL,
    };
    const char *data = NULL;
    int nop = ck_parse(prog, &verb, argc, argv, &data, 1, &rc0);
    if (nop < 0) return rc0;
    if (nop != 1) return ck_usage_of(prog, &verb, "expected one DATA file");
    trn_dataset *ds = open_set("shape", data);
    if (!ds) return 1;
    trn_err err;
    int w = 0, h = 0, c = 0, rc = ds_set_shape(ds, data, &w, &h, &c, &err);
    trn_dataset_close(ds);
    if (rc != 0) {
        fprintf(stderr, "%s shape: %s\n", prog, err.msg);
        return 1;
    }
    printf("%d %d %d\n", w, h, c);
    return 0;
}

int main(int argc, char **argv)
{
    static const ck_verb verbs[] = {
        CK_VERB("generate", "the embedded synthetic data set (shapes x colours) as a Darknet classifier set", cmd_generate),
        CK_VERB("import", "CIFAR-10/100, (Fashion-)MNIST or a folder per class into a Darknet classifier set", cmd_import),
        CK_VERB("contexts", "the (n,p) context streams of a data set", cmd_contexts),
        CK_VERB("check", "check a .data set: lists, labels, counts per class (--decode: every image)", cmd_check),
        CK_VERB("shape", "the image shape of a .data set (width, height, channels)", cmd_shape),
    };
    static const char examples[] =
        "The synthetic default set, then a check of every image:\n"
        "  dataset generate --out build/data --name synth --seed 1\n"
        "  dataset check build/data/synth/synth.data --decode\n"
        "An image folder tree (SRC/<class>/*.png) or CIFAR-10:\n"
        "  dataset import folder photos/ --out build/data --name photos --size 32\n"
        "  dataset import cifar10 cifar-10-batches-bin/ --out build/data\n";
    static const ck_prog p = {
        .name = "dataset", .examples = examples, .version = TRN_VERSION,
        .summary = "make, import and check Darknet classifier data sets",
        .usage = usage_main, .verbs = verbs, .nverbs = (int)(sizeof verbs / sizeof *verbs),
    };
    return ck_main(&p, argc, argv);
}
