/*
 * main.c: the `dataset` program: generate the default synthetic set, import
 * CIFAR-10/100, MNIST or image folders, write (n,p) context streams, and
 * check a set. Exit status: 0 done, 1 failed (the message says why), 2 bad
 * command line.
 */
#include "ds.h"

#include <errno.h>
#include <getopt.h>
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
            "  import     import CIFAR-10, CIFAR-100, MNIST or an image folder tree\n"
            "  contexts   write (n,p)-dominated context streams of a set\n"
            "  check      check a .data set: labels, lists, images\n"
            "  help VERB  the options of a verb (also: %s VERB --help)\n"
            "\n"
            "Every set is written under a temporary name and renamed into place when complete;\n"
            "the same inputs and seed give the same bytes. See datasets/README.md.\n",
            prog, prog);
}

static void usage_context_opts(FILE *f)
{
    fprintf(f,
            "  --context-n LIST   context sizes n (default 7,14,21; n >= classes is skipped)\n"
            "  --context-p LIST   in-context fractions p (default 0.6,0.7,0.8,0.9,0.95)\n"
            "  --context-per N    class sets drawn per n (default 1)\n");
}

static void usage_generate(FILE *f)
{
    fprintf(f,
            "Usage: %s generate [OPTIONS]\n"
            "\n"
            "Writes the synthetic default set OUT/NAME: 48 identity classes (8 shapes x 6 colours)\n"
            "and 4 attribute tasks over the same images (shape family, colour group, size,\n"
            "texture), train/valid/test splits that share no image, and (n,p) contexts.\n"
            "\n"
            "  --out DIR          parent folder of the set (default build/data)\n"
            "  --name NAME        set name (default synth)\n"
            "  --seed N           seed of everything random (default 1)\n"
            "  --size N           image side in pixels, 16..256 (default 32)\n"
            "  --train N          training images per class (default 100)\n"
            "  --valid N          validation images per class (default 20)\n"
            "  --test N           test images per class (default 30)\n"
            "  --clutter N        most distractor objects per image (default 2)\n"
            "  --noise X          most per-pixel noise sigma, 0..0.5 (default 0.04)\n"
            "  --occlusion X      probability of an occluding bar, 0..1 (default 0.2)\n"
            "  --rotation DEG     the object turns by up to +-DEG degrees, 0..180 (default 30)\n"
            "  --threads N        worker threads (default: all cores; bytes do not depend on it)\n"
            "  --no-contexts      do not write contexts/\n",
            prog);
    usage_context_opts(f);
}

static void usage_import(FILE *f)
{
    fprintf(f,
            "Usage: %s import FORMAT SRC [OPTIONS]\n"
            "\n"
            "Imports SRC into OUT/NAME in the same layout. FORMAT and SRC:\n"
            "  cifar10   cifar-10-batches-bin/: data_batch_1..5.bin, test_batch.bin, batches.meta.txt\n"
            "  cifar100  cifar-100-binary/: train.bin, test.bin, fine_label_names.txt,\n"
            "            coarse_label_names.txt (adds the task 'coarse')\n"
            "  mnist     train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,\n"
            "            t10k-labels-idx1-ubyte (uncompressed)\n"
            "  folder    SRC/<class>/*.{png,jpg,jpeg} or SRC/{train,valid|val,test}/<class>/...\n"
            "Corrupt or truncated input is rejected with the file and byte offset; nothing is\n"
            "written then.\n"
            "\n"
            "  --out DIR          parent folder of the set (default build/data)\n"
            "  --name NAME        set name (default: the format, or the folder's name)\n"
            "  --seed N           seed of the split choice and list order (default 1)\n"
            "  --valid-frac X     validation share carved from training images (default 0.1)\n"
            "  --test-frac X      test share carved when a folder tree has no test/ (default 0.1)\n"
            "  --size N           folder: resize images to N x N (default 0: keep)\n"
            "  --threads N        worker threads (default: all cores)\n"
            "  --no-contexts      do not write contexts/\n",
            prog);
    usage_context_opts(f);
}

static void usage_contexts(FILE *f)
{
    fprintf(f,
            "Usage: %s contexts DATA [OPTIONS]\n"
            "\n"
            "Writes (n,p)-dominated streams of the set DATA (.data): for every n, n classes drawn\n"
            "from the seed; for every p, lists in which those classes make up fraction p and the\n"
            "rest comes from the other classes, which are labelled 'other' (the n+1-th class).\n"
            "\n"
            "  --out DIR          the contexts folder (default: contexts/ beside DATA)\n"
            "  --seed N           seed of the class choice and the streams (default 1)\n",
            prog);
    usage_context_opts(f);
}

static void usage_check(FILE *f)
{
    fprintf(f,
            "Usage: %s check DATA [--decode] [--json]\n"
            "\n"
            "Checks the set DATA (.data): its keys, labels file, list files, that every image\n"
            "matches exactly one label (parent folder or a '_' token of its file name), exists,\n"
            "and is in one split only; prints the counts per split and class.\n"
            "\n"
            "  --decode           also decode every image (PNG or JPEG)\n"
            "  --json             print the counts as one JSON object: {\"data\",\"classes\",\n"
            "                     \"decoded\",\"ok\":true,\"splits\":[{\"split\",\"images\",\n"
            "                     \"per_class\":[{\"label\",\"images\"}]}]} (errors stay on stderr)\n",
            prog);
}

/* s as a JSON string on stdout. */
static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
        else putchar(*s);
    }
    putchar('"');
}

/* The counts of `check --json`. */
static void check_json(const trn_dataset *ds, const char *data, int decode)
{
    int classes = trn_dataset_classes(ds);
    printf("{\"data\":");
    json_str(data);
    printf(",\"classes\":%d,\"decoded\":%s,\"ok\":true,\"splits\":[", classes, decode ? "true" : "false");
    size_t *per = calloc((size_t)classes + 1, sizeof *per);
    int first = 1;
    for (int sp = 0; sp < TRN_SPLIT_COUNT && per; sp++) {
        trn_split split = (trn_split)sp;
        if (!trn_dataset_has(ds, split)) continue;
        size_t n = trn_dataset_count(ds, split);
        memset(per, 0, (size_t)classes * sizeof *per);
        for (size_t i = 0; i < n; i++) per[trn_dataset_class(ds, split, i)]++;
        printf("%s{\"split\":\"%s\",\"images\":%zu,\"per_class\":[", first ? "" : ",", trn_split_name(split), n);
        first = 0;
        for (int k = 0; k < classes; k++) {
            printf("%s{\"label\":", k ? "," : "");
            json_str(trn_dataset_label(ds, k));
            printf(",\"images\":%zu}", per[k]);
        }
        printf("]}");
    }
    free(per);
    printf("]}\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "%s: %s needs a non-negative integer, got '%s'\n", prog, opt, s);
        return -1;
    }
    *v = x;
    return 0;
}

static int parse_int(const char *opt, const char *s, int lo, int hi, int *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi) {
        fprintf(stderr, "%s: %s needs an integer in %d..%d, got '%s'\n", prog, opt, lo, hi, s);
        return -1;
    }
    *v = (int)x;
    return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double hi, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "%s: %s needs a number in %g..%g, got '%s'\n", prog, opt, lo, hi, s);
        return -1;
    }
    *v = x;
    return 0;
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

enum {
    OPT_OUT = 256, OPT_NAME, OPT_SEED, OPT_SIZE, OPT_TRAIN, OPT_VALID, OPT_TEST, OPT_CLUTTER,
    OPT_NOISE, OPT_OCCLUSION, OPT_THREADS, OPT_NO_CONTEXTS, OPT_CTX_N, OPT_CTX_P, OPT_CTX_PER,
    OPT_VALID_FRAC, OPT_TEST_FRAC, OPT_DECODE, OPT_ROTATION, OPT_JSON, OPT_HELP
};

/* Options shared by the verbs that write contexts. 1: handled, 0: not a
 * context option, -1: bad value. */
static int context_opt(int c, const char *arg, ds_context_opts *ctx, int *no_ctx)
{
    trn_err err;
    switch (c) {
    case OPT_NO_CONTEXTS: *no_ctx = 1; return 1;
    case OPT_CTX_N:
        if (ds_context_parse_n(ctx, arg, &err) != 0) break;
        return 1;
    case OPT_CTX_P:
        if (ds_context_parse_p(ctx, arg, &err) != 0) break;
        return 1;
    case OPT_CTX_PER: return parse_int("--context-per", arg, 1, 100, &ctx->per) == 0 ? 1 : -1;
    default: return 0;
    }
    fprintf(stderr, "%s: %s\n", prog, err.msg);
    return -1;
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
    for (int i = 0; i < res->contexts.nskipped; i++)
        printf("%s: note: no context with n = %d: the set has no more classes than that\n", prog,
               res->contexts.skipped_n[i]);
    return 0;
}

#define CONTEXT_LONGOPTS                                                              \
    {"context-n", required_argument, NULL, OPT_CTX_N},                                \
    {"context-p", required_argument, NULL, OPT_CTX_P},                                \
    {"context-per", required_argument, NULL, OPT_CTX_PER}

static int cmd_generate(int argc, char **argv)
{
    static const struct option lo[] = {
        {"out", required_argument, NULL, OPT_OUT},       {"name", required_argument, NULL, OPT_NAME},
        {"seed", required_argument, NULL, OPT_SEED},     {"size", required_argument, NULL, OPT_SIZE},
        {"train", required_argument, NULL, OPT_TRAIN},   {"valid", required_argument, NULL, OPT_VALID},
        {"test", required_argument, NULL, OPT_TEST},     {"clutter", required_argument, NULL, OPT_CLUTTER},
        {"noise", required_argument, NULL, OPT_NOISE},   {"occlusion", required_argument, NULL, OPT_OCCLUSION},
        {"rotation", required_argument, NULL, OPT_ROTATION},
        {"threads", required_argument, NULL, OPT_THREADS}, CONTEXT_LONGOPTS,
        {"no-contexts", no_argument, NULL, OPT_NO_CONTEXTS},
        {"help", no_argument, NULL, OPT_HELP},           {NULL, 0, NULL, 0},
    };
    ds_synth_opts o;
    ds_synth_defaults(&o);
    ds_context_opts ctx;
    ds_context_defaults(&ctx);
    const char *out = "build/data", *name = "synth";
    int threads = default_threads(), no_ctx = 0, c, r;
    double d;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if ((r = context_opt(c, optarg, &ctx, &no_ctx)) != 0) {
            if (r < 0) return EXIT_USAGE;
            continue;
        }
        switch (c) {
        case OPT_OUT: out = optarg; break;
        case OPT_NAME: name = optarg; break;
        case OPT_SEED: if (parse_u64("--seed", optarg, &o.seed)) return EXIT_USAGE; break;
        case OPT_SIZE: if (parse_int("--size", optarg, 16, 256, &o.size)) return EXIT_USAGE; break;
        case OPT_TRAIN: if (parse_int("--train", optarg, 1, 100000, &o.train)) return EXIT_USAGE; break;
        case OPT_VALID: if (parse_int("--valid", optarg, 0, 100000, &o.valid)) return EXIT_USAGE; break;
        case OPT_TEST: if (parse_int("--test", optarg, 0, 100000, &o.test)) return EXIT_USAGE; break;
        case OPT_CLUTTER: if (parse_int("--clutter", optarg, 0, 32, &o.clutter)) return EXIT_USAGE; break;
        case OPT_NOISE:
            if (parse_double("--noise", optarg, 0, 0.5, &d)) return EXIT_USAGE;
            o.noise = (float)d;
            break;
        case OPT_OCCLUSION:
            if (parse_double("--occlusion", optarg, 0, 1, &d)) return EXIT_USAGE;
            o.occlusion = (float)d;
            break;
        case OPT_ROTATION:
            if (parse_double("--rotation", optarg, 0, 180, &d)) return EXIT_USAGE;
            o.rotation = (float)d;
            break;
        case OPT_THREADS: if (parse_int("--threads", optarg, 1, 64, &threads)) return EXIT_USAGE; break;
        case OPT_HELP: usage_generate(stdout); return 0;
        default: usage_generate(stderr); return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s generate: unexpected argument '%s' (see --help)\n", prog, argv[optind]);
        return EXIT_USAGE;
    }
    ctx.seed = o.seed;
    trn_err err;
    ds_write_result res;
    double t0 = now();
    int rc = ds_synth_generate(&o, out, name, threads, no_ctx ? NULL : &ctx, &res, &err);
    return finish("generate", rc, &err, &res, t0);
}

static int cmd_import(int argc, char **argv)
{
    static const struct option lo[] = {
        {"out", required_argument, NULL, OPT_OUT},
        {"name", required_argument, NULL, OPT_NAME},
        {"seed", required_argument, NULL, OPT_SEED},
        {"valid-frac", required_argument, NULL, OPT_VALID_FRAC},
        {"test-frac", required_argument, NULL, OPT_TEST_FRAC},
        {"size", required_argument, NULL, OPT_SIZE},
        {"threads", required_argument, NULL, OPT_THREADS},
        CONTEXT_LONGOPTS,
        {"no-contexts", no_argument, NULL, OPT_NO_CONTEXTS},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    ds_import_opts o;
    ds_import_defaults(&o);
    o.threads = default_threads();
    ds_context_opts ctx;
    ds_context_defaults(&ctx);
    int no_ctx = 0, c, r;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if ((r = context_opt(c, optarg, &ctx, &no_ctx)) != 0) {
            if (r < 0) return EXIT_USAGE;
            continue;
        }
        switch (c) {
        case OPT_OUT: o.root = optarg; break;
        case OPT_NAME: o.name = optarg; break;
        case OPT_SEED: if (parse_u64("--seed", optarg, &o.seed)) return EXIT_USAGE; break;
        case OPT_VALID_FRAC: if (parse_double("--valid-frac", optarg, 0, 0.9, &o.valid_frac)) return EXIT_USAGE; break;
        case OPT_TEST_FRAC: if (parse_double("--test-frac", optarg, 0, 0.9, &o.test_frac)) return EXIT_USAGE; break;
        case OPT_SIZE: if (parse_int("--size", optarg, 0, 4096, &o.size)) return EXIT_USAGE; break;
        case OPT_THREADS: if (parse_int("--threads", optarg, 1, 64, &o.threads)) return EXIT_USAGE; break;
        case OPT_HELP: usage_import(stdout); return 0;
        default: usage_import(stderr); return EXIT_USAGE;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "%s import: expected FORMAT and SRC (see --help)\n", prog);
        return EXIT_USAGE;
    }
    trn_err err;
    int f = ds_format_parse(argv[optind], &err);
    if (f < 0) {
        fprintf(stderr, "%s import: %s\n", prog, err.msg);
        return EXIT_USAGE;
    }
    ctx.seed = o.seed;
    o.contexts = no_ctx ? NULL : &ctx;
    ds_write_result res;
    double t0 = now();
    int rc = ds_import((ds_format)f, argv[optind + 1], &o, &res, &err);
    return finish("import", rc, &err, &res, t0);
}

static int cmd_contexts(int argc, char **argv)
{
    static const struct option lo[] = {
        {"out", required_argument, NULL, OPT_OUT},
        {"seed", required_argument, NULL, OPT_SEED},
        CONTEXT_LONGOPTS,
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    ds_context_opts ctx;
    ds_context_defaults(&ctx);
    const char *out = NULL;
    int no_ctx = 0, c, r;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if ((r = context_opt(c, optarg, &ctx, &no_ctx)) != 0) {
            if (r < 0) return EXIT_USAGE;
            continue;
        }
        switch (c) {
        case OPT_OUT: out = optarg; break;
        case OPT_SEED: if (parse_u64("--seed", optarg, &ctx.seed)) return EXIT_USAGE; break;
        case OPT_HELP: usage_contexts(stdout); return 0;
        default: usage_contexts(stderr); return EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "%s contexts: expected one DATA file (see --help)\n", prog);
        return EXIT_USAGE;
    }
    const char *data = argv[optind];
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
    for (int i = 0; i < res.nskipped; i++)
        printf("%s: note: no context with n = %d: the set has no more classes than that\n", prog, res.skipped_n[i]);
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    static const struct option lo[] = {
        {"decode", no_argument, NULL, OPT_DECODE},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int decode = 0, json = 0, c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case OPT_DECODE: decode = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_HELP: usage_check(stdout); return 0;
        default: usage_check(stderr); return EXIT_USAGE;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "%s check: expected one DATA file (see --help)\n", prog);
        return EXIT_USAGE;
    }
    const char *data = argv[optind];
    trn_err err;
    trn_dataset *ds = trn_dataset_open(data, &err);
    if (!ds) {
        fprintf(stderr, "%s check: %s\n", prog, err.msg);
        return 1;
    }
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
            size_t n = trn_dataset_count(ds, split);
            memset(per, 0, (size_t)classes * sizeof *per);
            for (size_t i = 0; i < n; i++) per[trn_dataset_class(ds, split, i)]++;
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

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
        void (*usage)(FILE *);
    } verbs[] = {
        {"generate", cmd_generate, usage_generate},
        {"import", cmd_import, usage_import},
        {"contexts", cmd_contexts, usage_contexts},
        {"check", cmd_check, usage_check},
    };
    const int nverbs = (int)(sizeof verbs / sizeof verbs[0]);
    if (argc < 2) {
        usage_main(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc > 2 && strcmp(argv[1], "help") == 0) {
            for (int v = 0; v < nverbs; v++)
                if (!strcmp(argv[2], verbs[v].name)) {
                    verbs[v].usage(stdout);
                    return 0;
                }
            fprintf(stderr, "%s: no verb '%s'\n", prog, argv[2]);
            return EXIT_USAGE;
        }
        usage_main(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("dataset (catalog toolchain) %s\n", TRN_VERSION);
        return 0;
    }
    for (int v = 0; v < nverbs; v++)
        if (!strcmp(argv[1], verbs[v].name)) return verbs[v].run(argc - 1, argv + 1);
    fprintf(stderr, "%s: unknown verb '%s'\n\n", prog, argv[1]);
    usage_main(stderr);
    return EXIT_USAGE;
}
