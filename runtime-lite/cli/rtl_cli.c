/* rtl_cli.c: the `rtl` command: install, list, inspect, verify and roll back
 * catalogs on a device; run and profile are in rtl_run_cli.c (a thin shell
 * over librtl; see rtl.h). */
#include "rtl_cli.h"
#include "rtl_sched_cli.h"
#include "clikit.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

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
            "  list                installed catalogs: id, version, previous version, key\n"
            "  inspect ID|ARCHIVE  the variants of an installed catalog or of an archive, with\n"
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
            "  plan ID VARIANT     plan where each layer runs, device or cloud (JointDNN)\n"
            "  serve --key S.key --allow FILE\n"
            "                      run model pieces for allow-listed devices (authenticated,\n"
            "                      encrypted); rtl run --split S|auto --peer HOST:PORT\n"
            "                      --peer-key S.pub --device-key D.key uses it\n"
            "  peer-keygen PATH    make a peer key pair (PATH.key, PATH.pub)\n"
#ifdef RTL_SIM
            "  simulate ID|ARCHIVE [--trace T] [--policy P]...\n"
            "                      run seeded traces (MCDNN S1-S3, concurrency) through the\n"
            "                      scheduler's policies, side by side (the build host's rtl\n"
            "                      only: a host-side tool, no part of librtl)\n"
#endif
            "  stream ID INPUT... [--control FILE] [budgets]\n"
            "                      run every task on every image through the scheduler, one\n"
            "                      JSON line per result; budgets change live (file, SIGHUP)\n"
            "  context ID [IMAGE...] [--results FILE]\n"
            "                      the class-frequency profiler: whether the answers are\n"
            "                      (n,p)-dominated, by which classes, which specialised model\n"
            "                      matches, what to ask the build side for\n"
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
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\r\033[K"); /* over a progress line (rtl pull) */
    if (level == RTL_LOG_WARN) fprintf(stderr, "rtl: warning: %s\n", msg);
    else if (!quiet) fprintf(stderr, "rtl: %s\n", msg);
}

int fail(const rtl_err *err)
{
    fprintf(stderr, "rtl: error: %s\n", err->msg);
    return 1;
}

FILE *open_input(const char *path, const char *mode, rtl_err *err)
{
    int fd = rtl_open_input(path, err);
    FILE *f = fd < 0 ? NULL : fdopen(fd, mode);
    if (fd >= 0 && !f) {
        snprintf(err->msg, sizeof err->msg, "cannot open %s for reading: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

void keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double median(double *v, long long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

rtl_model *open_variant(rtl_store *s, const char *id, const char *variant, long long threads, rtl_catalog **cat)
{
    rtl_err err;
    if (!(*cat = rtl_catalog_open(s, id, &err))) {
        fail(&err);
        return NULL;
    }
    rtl_model_options mo = {.threads = (int)threads};
    rtl_model *m = rtl_model_open(*cat, variant, &mo, &err);
    if (!m) {
        rtl_catalog_close(*cat);
        *cat = NULL;
        fail(&err);
    }
    return m;
}

rtl_model_info model_info(const rtl_model *m)
{
    rtl_model_info mi = {0};
    (void)rtl_model_describe(m, &mi, sizeof mi, NULL);
    return mi;
}

rtl_catalog_info catalog_info(const rtl_catalog *cat)
{
    rtl_catalog_info ci = {0};
    (void)rtl_catalog_describe(cat, &ci, sizeof ci, NULL);
    return ci;
}

rtl_variant_info variant_info(const rtl_variant *v)
{
    rtl_variant_info vi = {0};
    (void)rtl_variant_describe(v, &vi, sizeof vi, NULL);
    return vi;
}

int model_cut_ok(const rtl_model *m, int s)
{
    rtl_layer_cost lc;
    return s == model_info(m).layers || (rtl_model_layer_cost(m, s, &lc) == 0 && lc.cut_before);
}

int sub_opts(int argc, char **argv, const ck_verb *v, int lo, int hi, int *rc)
{
    const char **ops = calloc((size_t)argc + 1, sizeof *ops);
    if (!ops) {
        fprintf(stderr, "rtl: error: out of memory\n");
        *rc = 1;
        return -1;
    }
    int n = ck_parse("rtl", v, argc, argv, ops, argc, rc);
    if (n >= 0 && (n < lo || n > hi)) {
        if (n < lo && n == 0) ck_usage_of("rtl", v, "missing argument");
        else if (n < lo) ck_usage_of("rtl", v, "%d argument%s given, at least %d needed", n, n == 1 ? "" : "s", lo);
        else ck_usage_of("rtl", v, "unexpected argument '%s'", ops[hi]);
        *rc = 2;
        n = -1;
    }
    if (n >= 0)
        for (int k = 0; k < n; k++) argv[argc - n + k] = (char *)ops[k];
    free(ops);
    return n < 0 ? -1 : argc - n;
}

int sub_opts_abbrev(int argc, char **argv, const ck_verb *v, int lo, int hi, int *rc, char ***avp)
{
    char **av = calloc(2 * (size_t)argc + 1, sizeof *av);
    *avp = NULL;
    if (!av) {
        fprintf(stderr, "rtl: error: out of memory\n");
        *rc = 1;
        return -1;
    }
    int i = sub_opts(ck_abbrev(v, argc, argv, av), av, v, lo, hi, rc);
    if (i < 0) free(av);
    else *avp = av;
    return i;
}

static void print_installed(const rtl_installed *in)
{
    char prev[32] = "-";
    if (in->has_previous) snprintf(prev, sizeof prev, "%" PRIu64, in->previous_version);
    printf("%-20s %-12" PRIu64 " %-12s %-16s %s\n", in->catalog, in->version, prev, in->key_id, in->dir);
}

static int cmd_install(rtl_store *s, int argc, char **argv)
{
    struct cmd_opts o = CMD_OPTS_DEFAULTS;
    const ck_opt opts[] = {
        {"--allow-downgrade", NULL, CK_FLAG, &o.allow_downgrade, 0, 0,
         "install a version that is not newer than the installed one"},
        {0},
    };
    const ck_verb v = {"install", NULL, NULL, "ARCHIVE [SIG] [--allow-downgrade]",
                       "Verifies ARCHIVE with its signature SIG (default ARCHIVE.minisig) against the\n"
                       "pinned keys before extracting anything, refuses unsafe entries and versions not\n"
                       "newer than the installed one (unless --allow-downgrade), then installs it\n"
                       "atomically. The copy that was current is kept for `rtl rollback`.\n",
                       opts, NULL};
    int rc, i = sub_opts(argc, argv, &v, 1, 2, &rc);
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
    int json = 0;
    const ck_opt opts[] = {
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object: {\"catalogs\":[{\"catalog\",\"version\",\"previous_version\"\n"
         "(null when none),\"key_id\",\"dir\"}]}"},
        {0},
    };
    const ck_verb v = {"list", NULL, NULL, "[--json]",
                       "Lists installed catalogs: id, version, previous version, key, folder.\n", opts, NULL};
    int rc, i = sub_opts(argc, argv, &v, 0, 0, &rc);
    if (i < 0) return rc;
    rtl_installed *list;
    size_t n;
    rtl_err err;
    if (rtl_list(s, &list, &n, &err) != 0) return fail(&err);
    if (json) {
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
    rtl_catalog_info ci = catalog_info(cat);
    printf("catalog %s  version %" PRIu64 "  model %s\n", ci.id, ci.version,
           ci.model);
    if (ci.dir[0]) printf("folder  %s\n", ci.dir);
    for (size_t t = 0; t < ci.task_count; t++) {
        size_t n;
        rtl_catalog_task_labels(cat, ci.task_names[t], &n);
        printf("task    %s (%zu labels)\n", ci.task_names[t], n);
    }
    printf("\n%-24s %-12s %-10s %7s %7s %14s %14s %6s\n", "variant", "technique", "task", "top1", "top5",
           "MACs", "weight bytes", "files");
    for (size_t i = 0; i < ci.variant_count; i++) {
        const rtl_variant *v = rtl_catalog_variant_at(cat, i);
        rtl_variant_info vi = variant_info(v);
        double t1, t5;
        char s1[16] = "-", s5[16] = "-";
        if (rtl_variant_accuracy(v, NULL, &t1, &t5) == 0) snprintf(s1, sizeof s1, "%.4f", t1);
        if (t5 >= 0) snprintf(s5, sizeof s5, "%.4f", t5);
        printf("%-24s %-12s %-10s %7s %7s %14" PRIu64 " %14" PRIu64 " %6zu\n", vi.id,
               vi.technique, vi.task, s1, s5, vi.macs,
               vi.weight_bytes, vi.file_count);
    }
}

static int cmd_inspect(rtl_store *s, int argc, char **argv)
{
    int json = 0;
    const ck_opt opts[] = {
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object: {\"catalog\",\"version\",\"model\",\"dir\",\"tasks\":[{\"name\",\n"
         "\"labels\"}],\"variants\":[{\"id\",\"technique\",\"task\",\"top1\",\"top5\",\"macs\",\n"
         "\"weight_bytes\",\"files\",\"latency\":[{\"where\",\"source\",\"machine\",\n"
         "\"threads\",\"runs\",\"ms_median\",\"ms_mean\"}],\"estimates\":[{\"target\",\n"
         "\"source\",\"method\",\"bound\",\"ms\",\"mj\",\"compute_unit\",\"cpu\":{\n"
         "\"compute_unit\",\"ms\",\"mj\"}}]}]}"},
        {0},
    };
    const ck_verb v = {"inspect", NULL, NULL, "ID|ARCHIVE [--json]",
                       "Prints the variants of installed catalog ID, or of the manifest inside ARCHIVE\n"
                       "(an archive's signature is not checked here: use rtl install for that).\n",
                       opts, NULL};
    int rc, i = sub_opts(argc, argv, &v, 1, 1, &rc);
    if (i < 0) return rc;
    rtl_err err;
    rtl_catalog *cat;
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISREG(st.st_mode)) {
        char *text;
        size_t len;
        if (rtl_archive_manifest(argv[i], &text, &len, &err) != 0) return fail(&err);
        cat = rtl_catalog_parse(text, len, NULL, &err);
        free(text);
    } else {
        cat = rtl_catalog_open(s, argv[i], &err);
    }
    if (!cat) return fail(&err);
    if (json) {
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
    const ck_opt opts[] = {{0}};
    const ck_verb v = {"verify", NULL, NULL, "[ID...]",
                       "Re-verifies installed catalogs: the stored signature's trusted comment against\n"
                       "the pinned keys, manifest.json against it, every file against the manifest.\n",
                       opts, NULL};
    int rc, i = sub_opts(argc, argv, &v, 0, INT_MAX, &rc);
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
    const ck_opt opts[] = {{0}};
    const ck_verb v = {"rollback", NULL, NULL, "ID",
                       "Verifies the previous copy of catalog ID and makes it current again; the\n"
                       "current copy becomes the previous one (so a second rollback undoes the first).\n",
                       opts, NULL};
    int rc, i = sub_opts(argc, argv, &v, 1, 1, &rc);
    if (i < 0) return rc;
    rtl_installed in;
    rtl_err err;
    if (rtl_rollback(s, argv[i], &in, &err) != 0) return fail(&err);
    printf("catalog %s is at version %" PRIu64 " again (previous: %" PRIu64 ")\n", in.catalog, in.version,
           in.previous_version);
    return 0;
}

/* The store of the command being run (main opens it; install may create
 * the root, every other command needs an existing one). */
static const char *g_root, *g_keys;

/* The verbs whose catalog operand may be an archive or a manifest file. */
static int takes_archive(const char *verb) { return !strcmp(verb, "inspect") || !strcmp(verb, "simulate"); }

/* A catalog operand that names a file (by its suffix or a '/') is judged as
 * that file, before the install root: a missing archive is reported as a
 * missing archive, not as a missing root or an unknown catalog. Returns 1
 * (after the message) when the operand names a file that cannot be used. */
static const char *catalog_operand(int argc, char **argv)
{
    for (int k = 1; k < argc; k++) {
        if (argv[k][0] != '-') return argv[k];
        if (strcmp(argv[0], "inspect") != 0) break; /* inspect's options are flags: its operand may follow */
    }
    return "";
}

static int bad_file_operand(int argc, char **argv)
{
    const char *a = catalog_operand(argc, argv);
    if (*a == '-' || !*a || !sched_names_file(a) || !strcmp(argv[0], "install") || !strcmp(argv[0], "pull"))
        return 0;
    if (!takes_archive(argv[0])) {
        fprintf(stderr, "rtl %s: error: '%s' names a file, not a catalog id: rtl %s takes an installed catalog's id "
                        "(rtl install ARCHIVE first; rtl list shows the ids)\n", argv[0], a, argv[0]);
        return 1;
    }
    struct stat st;
    if (stat(a, &st) == 0 && S_ISREG(st.st_mode)) return 0;
    fprintf(stderr, "rtl %s: error: the archive %s %s (give an existing catalog archive or manifest.json, or the id "
                    "of an installed catalog: rtl list)\n", argv[0], a,
            stat(a, &st) != 0 ? "does not exist" : "is not a regular file");
    return 1;
}

static int with_store(int (*fn)(rtl_store *, int, char **), int argc, char **argv)
{
    for (int a = 1; a < argc; a++) /* help needs no store */
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) return fn(NULL, argc, argv);
    if (bad_file_operand(argc, argv)) return 1;
    const char *root = g_root && *g_root ? g_root : DEFAULT_ROOT;
    struct stat st;
    errno = 0;
    if (strcmp(argv[0], "install") != 0 && strcmp(argv[0], "pull") != 0 &&
        (stat(root, &st) != 0 || !S_ISDIR(st.st_mode))) {
        /* inspect ARCHIVE reads a file and needs no store */
        if (!strcmp(argv[0], "inspect") && stat(catalog_operand(argc, argv), &st) == 0 && S_ISREG(st.st_mode))
            return fn(NULL, argc, argv);
        fprintf(stderr, "rtl: error: the install root %s %s: nothing is installed there (check --root or "
                        "RTL_ROOT; rtl install creates it)\n",
                root, errno == ENOENT || errno == 0 ? "does not exist" : "is not a folder");
        return 1;
    }
    rtl_store_config cfg = {.root = root, .keys_dir = g_keys && *g_keys ? g_keys : NULL, .log = log_cb};
    rtl_err err;
    rtl_store *s = rtl_store_open(&cfg, &err);
    if (!s) return fail(&err);
    int rc = fn(s, argc, argv);
    rtl_store_close(s);
    return rc;
}

static int run_install(int argc, char **argv) { return with_store(cmd_install, argc, argv); }
static int run_list(int argc, char **argv) { return with_store(cmd_list, argc, argv); }
static int run_inspect(int argc, char **argv) { return with_store(cmd_inspect, argc, argv); }
static int run_verify(int argc, char **argv) { return with_store(cmd_verify, argc, argv); }
static int run_rollback(int argc, char **argv) { return with_store(cmd_rollback, argc, argv); }
static int run_run(int argc, char **argv) { return with_store(cmd_run, argc, argv); }
static int run_profile(int argc, char **argv) { return with_store(cmd_profile, argc, argv); }
static int run_pull(int argc, char **argv) { return with_store(cmd_pull, argc, argv); }
static int run_plan(int argc, char **argv) { return with_store(cmd_plan, argc, argv); }
static int run_serve(int argc, char **argv) { return with_store(cmd_serve, argc, argv); }
static int run_peer_keygen(int argc, char **argv) { return cmd_peer_keygen(NULL, argc, argv); } /* no store */
#ifdef RTL_SIM
static int run_simulate(int argc, char **argv)
{
    for (int a = 1; a < argc; a++) /* a catalog archive or manifest, or --bench, needs no store */
        if ((argv[a][0] != '-' && sched_is_file_arg(argv[a])) || !strcmp(argv[a], "--bench"))
            return cmd_simulate(NULL, argc, argv);
    return with_store(cmd_simulate, argc, argv);
}
#endif
static int run_stream(int argc, char **argv) { return with_store(cmd_stream, argc, argv); }
static int run_context(int argc, char **argv) { return with_store(cmd_context, argc, argv); }

static void version_extra(FILE *out) { fprintf(out, "SHA-256: %s\n", rtl_sha256_engine()); }

int main(int argc, char **argv)
{
    static const ck_verb verbs[] = {
        CK_VERB("install", "verify an archive against the pinned keys, then install it atomically", run_install),
        CK_VERB("list", "installed catalogs: id, version, previous version, key", run_list),
        CK_VERB("inspect", "the variants of an installed catalog or of an archive, with their latencies", run_inspect),
        CK_VERB("verify", "re-verify installed catalogs (signature, manifest, every file)", run_verify),
        CK_VERB("rollback", "make the previous copy of a catalog current again", run_rollback),
        CK_VERB("run", "the top-k classes of images with their probabilities", run_run),
        CK_VERB("profile", "measure latencies on this device and keep them beside the installed catalog", run_profile),
        CK_VERB("pull", "fetch a catalog over HTTP(S): signed index, per-file delta, resumable; verify, install", run_pull),
        CK_VERB("plan", "JointDNN split plan: where each layer runs (device or cloud peer), latency, energy", run_plan),
        CK_VERB("serve", "the peer: runs model pieces for allow-listed devices (authenticated, encrypted)", run_serve),
        CK_VERB("peer-keygen", "make a peer key pair (PATH.key, PATH.pub)", run_peer_keygen),
#ifdef RTL_SIM /* the host-side tool (runtime-lite/sim/): not on the device */
        CK_VERB("simulate", "trace-driven scheduler simulation: MCDNN S1-S3, concurrency; every policy side by side",
                run_simulate),
#endif
        CK_VERB("stream", "run tasks on images through the scheduler under live budgets (control file, SIGHUP)",
                run_stream),
        CK_VERB("context", "the class-frequency profiler: is the stream (n,p)-dominated, by which classes (MCDNN)",
                run_context),
    };
    /* rtl run's other modes: its help shows them (run_modes_help) */
    static const char *const more[] = {NULL};
    static const char examples[] =
        "Pin the publisher's key, once per device (rtl install and rtl pull trust only\n"
        "the keys in ROOT/keys; the build side made it with catalog keygen -p release.pub):\n"
        "  mkdir -p /var/lib/rtl/keys && cp release.pub /var/lib/rtl/keys/\n"
        "Install (the signature is ARCHIVE.minisig beside it), look, measure, run:\n"
        "  rtl install catalog-alexnet-1.tar.zst\n"
        "  rtl inspect alexnet\n"
        "  rtl profile alexnet\n"
        "  rtl run alexnet base photo.png --top 3\n"
        "Every task of the catalog at once (heads share their trunk's run):\n"
        "  rtl run alexnet --task identity --task colour photo.png\n"
        "A stream through the scheduler under a latency budget (met by measured\n"
        "latencies only: rtl profile first), budgets re-read from a control file:\n"
        "  rtl stream alexnet frames/ --latency-ms 5 --control budgets.conf\n"
        "Updates from a publish folder (catalog publish), checked, then installed:\n"
        "  rtl pull --check https://updates.example.org/alexnet/\n"
        "  rtl pull https://updates.example.org/alexnet/\n"
        "Split execution with a peer: each side makes a key pair; the server allows\n"
        "the device's public key, the device pins the server's (--peer-key):\n"
        "  rtl peer-keygen srv                      # on the server: srv.key, srv.pub\n"
        "  rtl peer-keygen dev                      # on the device: dev.key, dev.pub\n"
        "  cat dev.pub >> allow                     # on the server (copied over)\n"
        "  rtl serve --key srv.key --allow allow --listen 0.0.0.0 --port 7000\n"
        "  rtl run alexnet base photo.png --split auto --peer server:7000 \\\n"
        "      --peer-key srv.pub --device-key dev.key\n"
        "  rtl plan alexnet base --link wifi        # where the layers would run\n";
    static const ck_prog prog = {
        .name = "rtl", .version = RTL_VERSION, .man_more = more, .examples = examples,
        .summary = "install, inspect, verify and run signed catalogs on a device",
        .usage = usage, .verbs = verbs, .nverbs = (int)(sizeof verbs / sizeof *verbs),
        .version_extra = version_extra, .globals = "--root DIR, --keys DIR, -q", .verb_word = "command",
    };
    static const struct option opts[] = {{"root", required_argument, 0, 'r'},
                                         {"keys", required_argument, 0, 'k'},
                                         {"quiet", no_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {"version", no_argument, 0, 'V'},
                                         {"man", no_argument, 0, 'M'},
                                         {0, 0, 0, 0}};
    g_root = getenv("RTL_ROOT");
    g_keys = getenv("RTL_KEYS");
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'r': g_root = optarg; break;
        case 'k': g_keys = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': usage(stdout); return ck_finish("rtl", 0);
        case 'V': return ck_finish("rtl", ck_dispatch(&prog, argc - optind + 1, argv + optind - 1));
        case 'M': return ck_finish("rtl", ck_man(&prog, stdout));
        case ':': return ck_usage("rtl", NULL, "%s needs a value", argv[optind - 1]);
        default: return ck_usage("rtl", NULL, "unknown option '%s'", argv[optind - 1]);
        }
    }
    return ck_finish("rtl", ck_dispatch(&prog, argc - optind, argv + optind));
}
