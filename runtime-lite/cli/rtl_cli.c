/* rtl_cli.c: the `rtl` command: install, list, inspect, verify and roll back
 * catalogs on a device; run and profile are in rtl_run_cli.c (a thin shell
 * over librtl; see rtl.h). */
#include "rtl_cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define DEFAULT_ROOT "/var/lib/rtl"

int quiet;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: rtl [--root DIR] [--keys DIR] [-q] COMMAND [ARGS]\n"
            "\n"
            "Installs signed catalog archives on this device, shows what is installed, runs\n"
            "and profiles their variants.\n"
            "\n"
            "Commands:\n"
            "  install ARCHIVE [SIG] [--allow-downgrade]\n"
            "                      verify ARCHIVE against the pinned keys (SIG defaults to\n"
            "                      ARCHIVE.minisig), then install it atomically; the current\n"
            "                      copy becomes the previous one\n"
            "  list [--json]       installed catalogs: id, version, previous version, key\n"
            "  inspect ID|ARCHIVE [--json]\n"
            "                      the variants of an installed catalog or of an archive, with\n"
            "                      their latencies: build host, this device, estimates\n"
            "  verify [ID...]      re-verify installed catalogs (signature, manifest, every\n"
            "                      file); all of them when no ID is given\n"
            "  rollback ID         make the previous copy of catalog ID current again\n"
            "  run ID VARIANT IMAGE...\n"
            "                      the top-k classes of images with their probabilities\n"
            "  profile ID [VARIANT...]\n"
            "                      measure latencies on this device and keep them beside\n"
            "                      the installed catalog\n"
            "  pull URL            fetch newer catalogs from a publish folder (signed index,\n"
            "                      only the files that changed), verify, install atomically\n"
            "  version             print the version of rtl and its SHA-256 engine\n"
            "\n"
            "Options:\n"
            "  --root DIR   install root (default: $RTL_ROOT, else " DEFAULT_ROOT ")\n"
            "  --keys DIR   folder of pinned public keys, *.pub (default: $RTL_KEYS, else ROOT/keys)\n"
            "  -q, --quiet  print errors and warnings only\n"
            "  -h, --help   this help; COMMAND --help for one command\n"
            "\n"
            "Exit status: 0 on success, 1 on failure, 2 on bad usage.\n");
}

static void log_cb(void *user, enum rtl_log_level level, const char *msg)
{
    (void)user;
    if (level == RTL_LOG_WARN) fprintf(stderr, "rtl: warning: %s\n", msg);
    else if (!quiet) fprintf(stderr, "rtl: %s\n", msg);
}

int fail(const rtl_err *err)
{
    fprintf(stderr, "rtl: error: %s\n", err->msg);
    return 1;
}

/* The value of a numeric option in [lo, hi], or -1 after a usage message. */
static int num_opt(const char *name, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "rtl: %s needs an integer in %ld..%ld, not '%s'\n", name, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

int sub_opts(int argc, char **argv, const char *help, unsigned accepted, struct cmd_opts *o, int lo, int hi,
             int *rc)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"allow-downgrade", no_argument, 0, 'D'},
                                         {"top", required_argument, 0, 'k'},
                                         {"json", no_argument, 0, 'j'},
                                         {"runs", required_argument, 0, 'n'},
                                         {"warmup", required_argument, 0, 'w'},
                                         {"threads", required_argument, 0, 't'},
                                         {0, 0, 0, 0}};
    static const struct {
        int c;
        unsigned flag;
    } flags[] = {{'D', OPT_DOWNGRADE}, {'k', OPT_TOP}, {'j', OPT_JSON}, {'n', OPT_RUNS}, {'w', OPT_WARMUP},
                 {'t', OPT_THREADS}};
    struct cmd_opts dummy;
    if (!o) o = &dummy;
    *o = (struct cmd_opts){.top = 5, .runs = 20, .warmup = 3};
    optind = 0; /* 0: glibc re-initialises, permuting again after main's "+" scan */
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            printf("%s", help);
            *rc = 0;
            return -1;
        }
        unsigned flag = 0;
        for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
            if (flags[i].c == c) flag = flags[i].flag;
        int bad = !(flag & accepted);
        if (!bad && c == 'D') o->allow_downgrade = 1;
        if (!bad && c == 'j') o->json = 1;
        if (!bad && c == 'k') bad = num_opt("--top", optarg, 1, 100000, &o->top);
        if (!bad && c == 'n') bad = num_opt("--runs", optarg, 1, 1000000, &o->runs);
        if (!bad && c == 'w') bad = num_opt("--warmup", optarg, 0, 1000000, &o->warmup);
        if (!bad && c == 't') bad = num_opt("--threads", optarg, 1, 1024, &o->threads);
        if (bad) {
            fprintf(stderr, "%s", help);
            *rc = 2;
            return -1;
        }
    }
    if (argc - optind < lo || argc - optind > hi) {
        fprintf(stderr, "%s", help);
        *rc = 2;
        return -1;
    }
    return optind;
}

static void print_installed(const rtl_installed *in)
{
    char prev[32] = "-";
    if (in->has_previous) snprintf(prev, sizeof prev, "%" PRIu64, in->previous_version);
    printf("%-20s %-12" PRIu64 " %-12s %-16s %s\n", in->catalog, in->version, prev, in->key_id, in->dir);
}

static int cmd_install(rtl_store *s, int argc, char **argv)
{
    const char *help = "Usage: rtl install ARCHIVE [SIG] [--allow-downgrade]\n"
                       "Verifies ARCHIVE with its signature SIG (default ARCHIVE.minisig) against the\n"
                       "pinned keys before extracting anything, refuses unsafe entries and versions not\n"
                       "newer than the installed one (unless --allow-downgrade), then installs it\n"
                       "atomically. The copy that was current is kept for `rtl rollback`.\n";
    struct cmd_opts o;
    int rc, i = sub_opts(argc, argv, help, OPT_DOWNGRADE, &o, 1, 2, &rc);
    if (i < 0) return rc;
    char sig[4096];
    if (argc - i == 2) snprintf(sig, sizeof sig, "%s", argv[i + 1]);
    else snprintf(sig, sizeof sig, "%s.minisig", argv[i]);
    rtl_install_options io = {.allow_downgrade = o.allow_downgrade};
    rtl_installed in;
    rtl_err err;
    if (rtl_install(s, argv[i], sig, &io, &in, &err) != 0) return fail(&err);
    printf("installed catalog %s version %" PRIu64 " in %s\n", in.catalog, in.version, in.dir);
    return 0;
}

static int cmd_list(rtl_store *s, int argc, char **argv)
{
    const char *help = "Usage: rtl list [--json]\nLists installed catalogs.\n"
                       "  --json   one JSON object: {\"catalogs\":[{\"catalog\",\"version\",\n"
                       "           \"previous_version\" (null when none),\"key_id\",\"dir\"}]}\n";
    struct cmd_opts o;
    int rc, i = sub_opts(argc, argv, help, OPT_JSON, &o, 0, 0, &rc);
    if (i < 0) return rc;
    rtl_installed *list;
    size_t n;
    rtl_err err;
    if (rtl_list(s, &list, &n, &err) != 0) return fail(&err);
    if (o.json) {
        rc = print_installed_json(list, n);
        free(list);
        return rc;
    }
    printf("%-20s %-12s %-12s %-16s %s\n", "catalog", "version", "previous", "key", "folder");
    for (size_t k = 0; k < n; k++) print_installed(&list[k]);
    if (n == 0 && !quiet) fprintf(stderr, "rtl: no catalog is installed\n");
    free(list);
    return 0;
}

static void print_catalog(const rtl_catalog *cat)
{
    printf("catalog %s  version %" PRIu64 "  model %s\n", rtl_catalog_id(cat), rtl_catalog_version(cat),
           rtl_catalog_model(cat));
    if (rtl_catalog_dir(cat)[0]) printf("folder  %s\n", rtl_catalog_dir(cat));
    for (size_t t = 0; t < rtl_catalog_task_count(cat); t++) {
        size_t n;
        rtl_catalog_task_labels(cat, rtl_catalog_task_name(cat, t), &n);
        printf("task    %s (%zu labels)\n", rtl_catalog_task_name(cat, t), n);
    }
    printf("\n%-24s %-12s %-10s %7s %7s %14s %14s %6s\n", "variant", "technique", "task", "top1", "top5",
           "MACs", "weight bytes", "files");
    for (size_t i = 0; i < rtl_catalog_variant_count(cat); i++) {
        const rtl_variant *v = rtl_catalog_variant_at(cat, i);
        double t1, t5;
        char s1[16] = "-", s5[16] = "-";
        if (rtl_variant_accuracy(v, NULL, &t1, &t5) == 0) snprintf(s1, sizeof s1, "%.4f", t1);
        if (t5 >= 0) snprintf(s5, sizeof s5, "%.4f", t5);
        printf("%-24s %-12s %-10s %7s %7s %14" PRIu64 " %14" PRIu64 " %6zu\n", rtl_variant_id(v),
               rtl_variant_technique(v), rtl_variant_task(v), s1, s5, rtl_variant_cost(v, RTL_COST_MACS),
               rtl_variant_cost(v, RTL_COST_WEIGHT_BYTES), rtl_variant_file_count(v));
    }
}

static int cmd_inspect(rtl_store *s, int argc, char **argv)
{
    const char *help = "Usage: rtl inspect ID|ARCHIVE [--json]\n"
                       "Prints the variants of installed catalog ID, or of the manifest inside ARCHIVE\n"
                       "(an archive's signature is not checked here: use rtl install for that).\n"
                       "  --json   one JSON object: {\"catalog\",\"version\",\"model\",\"dir\",\"tasks\":\n"
                       "           [{\"name\",\"labels\"}],\"variants\":[{\"id\",\"technique\",\"task\",\n"
                       "           \"top1\",\"top5\",\"macs\",\"weight_bytes\",\"files\",\"latency\":[{\"where\",\n"
                       "           \"source\",\"machine\",\"threads\",\"runs\",\"ms_median\",\"ms_mean\"}],\n"
                       "           \"estimates\":[{\"target\",\"source\",\"method\",\"bound\",\"ms\",\"mj\"}]}]}\n";
    struct cmd_opts o;
    int rc, i = sub_opts(argc, argv, help, OPT_JSON, &o, 1, 1, &rc);
    if (i < 0) return rc;
    rtl_err err;
    rtl_catalog *cat;
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode)) {
        char *json;
        size_t len;
        if (rtl_archive_manifest(argv[i], &json, &len, &err) != 0) return fail(&err);
        cat = rtl_catalog_parse(json, len, NULL, &err);
        free(json);
    } else {
        cat = rtl_catalog_open(s, argv[i], &err);
    }
    if (!cat) return fail(&err);
    if (o.json) {
        rc = print_catalog_json(cat);
        rtl_catalog_close(cat);
        return rc;
    }
    print_catalog(cat);
    print_latencies(cat);
    rtl_catalog_close(cat);
    return 0;
}

static int cmd_verify(rtl_store *s, int argc, char **argv)
{
    const char *help = "Usage: rtl verify [ID...]\n"
                       "Re-verifies installed catalogs: the stored signature's trusted comment against\n"
                       "the pinned keys, manifest.json against it, every file against the manifest.\n";
    int rc, i = sub_opts(argc, argv, help, 0, NULL, 0, INT_MAX, &rc);
    if (i < 0) return rc;
    rtl_err err;
    int status = 0;
    rtl_installed *list = NULL;
    size_t n = 0;
    if (i == argc && rtl_list(s, &list, &n, &err) != 0) return fail(&err);
    size_t count = i == argc ? n : (size_t)(argc - i);
    for (size_t k = 0; k < count; k++) {
        const char *id = i == argc ? list[k].catalog : argv[i + (int)k];
        if (rtl_verify_installed(s, id, &err) != 0) status = fail(&err);
        else printf("ok %s\n", id);
    }
    if (count == 0 && !quiet) fprintf(stderr, "rtl: no catalog is installed\n");
    free(list);
    return status;
}

static int cmd_rollback(rtl_store *s, int argc, char **argv)
{
    const char *help = "Usage: rtl rollback ID\n"
                       "Verifies the previous copy of catalog ID and makes it current again; the\n"
                       "current copy becomes the previous one (so a second rollback undoes the first).\n";
    int rc, i = sub_opts(argc, argv, help, 0, NULL, 1, 1, &rc);
    if (i < 0) return rc;
    rtl_installed in;
    rtl_err err;
    if (rtl_rollback(s, argv[i], &in, &err) != 0) return fail(&err);
    printf("catalog %s is at version %" PRIu64 " again (previous: %" PRIu64 ")\n", in.catalog, in.version,
           in.previous_version);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"root", required_argument, 0, 'r'},
                                         {"keys", required_argument, 0, 'k'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *root = getenv("RTL_ROOT"), *keys = getenv("RTL_KEYS");
    int c;
    while ((c = getopt_long(argc, argv, "+qh", opts, NULL)) != -1) {
        switch (c) {
        case 'r': root = optarg; break;
        case 'k': keys = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind];
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    if (!strcmp(cmd, "version")) {
        printf("rtl %s (SHA-256: %s)\n", RTL_VERSION, rtl_sha256_engine());
        return 0;
    }
    static const struct {
        const char *name;
        int (*fn)(rtl_store *, int, char **);
    } cmds[] = {{"install", cmd_install}, {"list", cmd_list}, {"inspect", cmd_inspect},
                {"verify", cmd_verify}, {"rollback", cmd_rollback}, {"run", cmd_run},
                {"profile", cmd_profile}, {"pull", cmd_pull}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(cmd, cmds[i].name) != 0) continue;
        for (int a = 1; a < sub_argc; a++) /* help needs no store */
            if (!strcmp(sub_argv[a], "--help") || !strcmp(sub_argv[a], "-h")) return cmds[i].fn(NULL, sub_argc, sub_argv);
        rtl_store_config cfg = {.root = root && *root ? root : DEFAULT_ROOT, .keys_dir = keys && *keys ? keys : NULL,
                                .log = log_cb};
        rtl_err err;
        rtl_store *s = rtl_store_open(&cfg, &err);
        if (!s) return fail(&err);
        int rc = cmds[i].fn(s, sub_argc, sub_argv);
        rtl_store_close(s);
        return rc;
    }
    fprintf(stderr, "rtl: unknown command '%s' (rtl --help lists them)\n", cmd);
    return 2;
}
