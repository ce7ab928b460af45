/* catalog_cli.c: the `catalog` command (a thin shell over libcat, see cat.h):
 * keygen, sign, verify, validate, pack, inspect, report. */
#include "cat.h"
#include "publish_cli.h"
#include "variant_cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PASS_MAX 1024

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: catalog COMMAND [OPTIONS] [ARGS]\n"
            "\n"
            "Builds signed catalogs of model variants (see catalog/README.md).\n"
            "\n"
            "Commands:\n"
            "  pack VARIANTS_DIR -o OUT_DIR   manifest, winnowing, archive and signature\n"
            "  validate MANIFEST|ARCHIVE      check a manifest against its schema and files\n"
            "  inspect ARCHIVE                print the variants of an archive\n"
            "  pareto ARCHIVE                 the Pareto fronts per task and per target\n"
            "  report ARCHIVE                 Pareto plots (SVG), Markdown and HTML report\n"
            "  keygen -p PUB -s SEC           make a minisign key pair\n"
            "  sign ARCHIVE -s SEC            sign an archive (writes ARCHIVE.minisig)\n"
            "  verify ARCHIVE -p PUB          verify an archive's signature\n"
            "  cost --cfg C                   the cost model of a cfg (JSON)\n"
            "  profile --cfg C --weights W    measured costs and latency (profile.json)\n"
            "  describe DIR --id ID ...       a variant folder's variant.json\n"
            "  variants VARIANTS_DIR          the table of a model's variants\n"
            "  publish ARCHIVE -o DEST        the folder devices pull from (rtl pull)\n"
            "  version                        print the version\n"
            "\n"
            "catalog COMMAND --help describes each command. Exit status: 0 on success,\n"
            "1 on failure, 2 on bad usage.\n");
}

static int fail(const trn_err *err)
{
    fprintf(stderr, "catalog: error: %s\n", err->msg);
    return 1;
}

static void print_problem(void *user, const char *ptr, const char *msg)
{
    (void)user;
    fprintf(stderr, "catalog: %s: %s\n", ptr, msg);
}

/* Options shared by the commands that read a secret key. */
struct pass_opts {
    const char *file, *env;
};

static const char *passphrase(const struct pass_opts *p, char *buf, trn_err *err, int *failed)
{
    *failed = 0;
    if (!p->file && !p->env) return NULL;
    if (cat_passphrase(p->file, p->env, buf, PASS_MAX, err) != 0) *failed = 1;
    return *failed ? NULL : buf;
}

static int help_or_usage(const char *help, int ok)
{
    fputs(help, ok ? stdout : stderr);
    return ok ? 0 : 2;
}

/* ---- keygen ---------------------------------------------------------------- */

static int cmd_keygen(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog keygen -p PUB -s SEC (-W | --passphrase-file FILE | --passphrase-env VAR)\n"
        "                      [--kdf interactive|sensitive] [--development] [-f]\n"
        "Writes a minisign key pair: PUB (public key, give it to devices) and SEC (secret\n"
        "key, mode 0600). -W leaves SEC unencrypted; otherwise it is encrypted with the\n"
        "passphrase read from FILE (first line) or from environment variable VAR (never\n"
        "from a prompt). --kdf sensitive (default) is minisign's scrypt cost (about 1 GiB,\n"
        "seconds); interactive is cheaper, for CI keys. --development marks the pair as a\n"
        "development key that devices must never trust. -f replaces existing files.\n";
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {"passphrase-file", required_argument, 0, 'F'},
                                       {"passphrase-env", required_argument, 0, 'E'}, {"kdf", required_argument, 0, 'K'},
                                       {"development", no_argument, 0, 'D'}, {0, 0, 0, 0}};
    const char *pub = NULL, *sec = NULL;
    struct pass_opts po = {0};
    int unencrypted = 0, force = 0, dev = 0;
    enum cat_kdf kdf = CAT_KDF_SENSITIVE;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "p:s:Wfh", lo, NULL)) != -1) {
        switch (c) {
        case 'p': pub = optarg; break;
        case 's': sec = optarg; break;
        case 'W': unencrypted = 1; break;
        case 'f': force = 1; break;
        case 'F': po.file = optarg; break;
        case 'E': po.env = optarg; break;
        case 'D': dev = 1; break;
        case 'K':
            if (!strcmp(optarg, "interactive")) kdf = CAT_KDF_INTERACTIVE;
            else if (!strcmp(optarg, "sensitive")) kdf = CAT_KDF_SENSITIVE;
            else return help_or_usage(help, 0);
            break;
        case 'h': return help_or_usage(help, 1);
        default: return help_or_usage(help, 0);
        }
    }
    if (!pub || !sec || optind != argc || unencrypted + !!po.file + !!po.env != 1) {
        if (pub && sec && unencrypted + !!po.file + !!po.env == 0)
            fprintf(stderr, "catalog: keygen never prompts: pass -W for an unencrypted key, or "
                            "--passphrase-file / --passphrase-env\n");
        return help_or_usage(help, 0);
    }
    trn_err err;
    char buf[PASS_MAX], id[17];
    int bad;
    const char *pw = passphrase(&po, buf, &err, &bad);
    if (bad) return fail(&err);
    if (cat_keygen(pub, sec, pw, unencrypted ? CAT_KDF_NONE : kdf, dev, force, id, &err) != 0) return fail(&err);
    printf("key %s: public key %s, secret key %s (%s)\n", id, pub, sec, unencrypted ? "unencrypted" : "encrypted");
    return 0;
}

/* ---- sign / verify --------------------------------------------------------- */

static cat_seckey *load_key(const char *path, const struct pass_opts *po, trn_err *err)
{
    char buf[PASS_MAX];
    int bad;
    const char *pw = passphrase(po, buf, err, &bad);
    return bad ? NULL : cat_seckey_load(path, pw, err);
}

static int cmd_sign(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog sign ARCHIVE -s SEC [-x SIG] [--passphrase-file FILE | --passphrase-env VAR]\n"
        "                    [--trusted-comment TEXT [--untrusted-comment TEXT]]\n"
        "Signs ARCHIVE (prehashed Ed25519, minisign's format) into SIG (default\n"
        "ARCHIVE.minisig). The trusted comment carries the catalog id, version, model and\n"
        "manifest SHA-256 read from the archive; --trusted-comment signs any file with\n"
        "the given comment instead (untrusted comment: minisign's default).\n";
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {"passphrase-file", required_argument, 0, 'F'},
                                       {"passphrase-env", required_argument, 0, 'E'},
                                       {"trusted-comment", required_argument, 0, 'T'},
                                       {"untrusted-comment", required_argument, 0, 'U'}, {0, 0, 0, 0}};
    const char *sec = NULL, *sig = NULL, *trusted = NULL, *untrusted = "signature from minisign secret key";
    struct pass_opts po = {0};
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "s:x:h", lo, NULL)) != -1) {
        switch (c) {
        case 's': sec = optarg; break;
        case 'x': sig = optarg; break;
        case 'F': po.file = optarg; break;
        case 'E': po.env = optarg; break;
        case 'T': trusted = optarg; break;
        case 'U': untrusted = optarg; break;
        case 'h': return help_or_usage(help, 1);
        default: return help_or_usage(help, 0);
        }
    }
    if (!sec || argc - optind != 1) return help_or_usage(help, 0);
    const char *archive = argv[optind];
    char sigbuf[4096];
    if (!sig) snprintf(sigbuf, sizeof sigbuf, "%s.minisig", archive), sig = sigbuf;
    trn_err err;
    cat_seckey *key = load_key(sec, &po, &err);
    if (!key) return fail(&err);
    int rc = trusted ? cat_sign_file(key, archive, trusted, untrusted, sig, &err) : cat_sign_archive(key, archive, sig, &err);
    cat_seckey_free(key);
    if (rc != 0) return fail(&err);
    printf("signed %s: %s\n", archive, sig);
    return 0;
}

static int cmd_verify(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog verify ARCHIVE [-x SIG] (-p PUB | -P KEY)...\n"
        "Verifies ARCHIVE against SIG (default ARCHIVE.minisig) with the public key file(s)\n"
        "PUB or base64 key(s) KEY: the signature, the trusted comment's global signature,\n"
        "the untrusted comment, and that the catalog id, version and manifest SHA-256 of\n"
        "the trusted comment are those of the archive. Says which check failed.\n";
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *sig = NULL;
    rtl_pubkey keys[16];
    size_t n = 0;
    rtl_err re;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "x:p:P:h", lo, NULL)) != -1) {
        switch (c) {
        case 'x': sig = optarg; break;
        case 'p':
        case 'P':
            if (n == 16) return help_or_usage(help, 0);
            if ((c == 'p' ? rtl_pubkey_load(optarg, &keys[n], &re) : rtl_pubkey_parse(optarg, strlen(optarg), &keys[n], &re)) != 0) {
                fprintf(stderr, "catalog: error: %s\n", re.msg);
                return 1;
            }
            n++;
            break;
        case 'h': return help_or_usage(help, 1);
        default: return help_or_usage(help, 0);
        }
    }
    if (!n || argc - optind != 1) return help_or_usage(help, 0);
    const char *archive = argv[optind];
    char sigbuf[4096];
    if (!sig) snprintf(sigbuf, sizeof sigbuf, "%s.minisig", archive), sig = sigbuf;
    trn_err err;
    rtl_sig_info info;
    int fields;
    if (cat_verify(archive, sig, keys, n, &info, &fields, &err) != 0) {
        fprintf(stderr, "catalog: verify FAILED: %s\n", err.msg);
        return 1;
    }
    if (fields)
        printf("OK: %s is catalog %s version %" PRIu64 " (model %s)%s\n", archive, info.catalog, info.version,
               info.model[0] ? info.model : "?", info.development_key ? ", signed by a DEVELOPMENT key" : "");
    else
        printf("OK: the signature of %s is valid, but its trusted comment names no catalog (rtl install "
               "will refuse it)\n", archive);
    return 0;
}

/* ---- validate / inspect / report -------------------------------------------- */

static int is_archive(const char *path)
{
    size_t n = strlen(path);
    return n > 8 && !strcmp(path + n - 8, ".tar.zst");
}

static cJSON *archive_manifest(const char *archive, trn_err *err)
{
    char *json;
    size_t len;
    rtl_err re;
    if (rtl_archive_manifest(archive, &json, &len, &re) != 0) {
        trn_errf(err, "%s", re.msg);
        return NULL;
    }
    cJSON *m = cat_json_parse(json, len, NULL);
    free(json);
    if (!m) trn_errf(err, "%s: manifest.json is not valid JSON", archive);
    return m;
}

static int cmd_validate(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog validate MANIFEST [--root DIR | --no-files]\n"
        "       catalog validate ARCHIVE\n"
        "Checks a manifest against catalog/manifest.schema.json, its cross-references, and\n"
        "the size and SHA-256 of every file it names under DIR (default: the manifest's\n"
        "folder). For an ARCHIVE (.tar.zst) the manifest inside is checked, without files.\n";
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {"root", required_argument, 0, 'r'},
                                       {"no-files", no_argument, 0, 'n'}, {0, 0, 0, 0}};
    const char *root = NULL;
    int no_files = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'r': root = optarg; break;
        case 'n': no_files = 1; break;
        case 'h': return help_or_usage(help, 1);
        default: return help_or_usage(help, 0);
        }
    }
    if (argc - optind != 1 || (root && no_files)) return help_or_usage(help, 0);
    const char *path = argv[optind];
    trn_err err;
    char dir[4096];
    cJSON *m;
    if (is_archive(path)) {
        m = archive_manifest(path, &err);
        no_files = 1;
    } else {
        m = cat_json_load(path, 64u << 20, &err);
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = '\0';
        else strcpy(dir, ".");
        if (!root) root = dir;
    }
    if (!m) return fail(&err);
    cat_schema *schema = cat_schema_builtin(&err);
    int n = schema ? cat_validate(schema, m, no_files ? NULL : root, print_problem, NULL, &err) : -1;
    cat_schema_free(schema);
    cJSON_Delete(m);
    if (n < 0) return fail(&err);
    if (n > 0) {
        fprintf(stderr, "catalog: %s is NOT valid: %d problem%s\n", path, n, n == 1 ? "" : "s");
        return 1;
    }
    printf("%s is valid%s\n", path, no_files ? " (files not checked)" : "");
    return 0;
}

static double jnum(const cJSON *o, const char *k)
{
    return cat_json_num(o, k, -1);
}

static const char *jstr(const cJSON *o, const char *k)
{
    return cat_json_str(o, k, "-");
}

/* Prints doc (sorted keys, as every JSON the catalog writes) and frees it. */
static int print_json_doc(cJSON *doc, trn_err *err)
{
    if (!doc) return fail(err);
    char *s = cat_json_print(doc);
    cJSON_Delete(doc);
    if (!s) return trn_errf(err, "out of memory"), fail(err);
    fputs(s, stdout);
    free(s);
    return 0;
}

static int cmd_inspect(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog inspect ARCHIVE [--manifest | --json]\n"
        "Prints the variants table of ARCHIVE (measured latency on the build machine and\n"
        "roofline estimates per target, marked est.), or with --manifest its manifest.json.\n"
        "  --json   the table as one JSON object: {\"catalog\",\"version\",\"model\",\n"
        "           \"variants\":[{\"id\",\"technique\",\"task\",\"top1\",\"top5\",\"macs\",\n"
        "           \"params\",\"weight_bytes\",\"peak_activation_bytes\",\"ms_build_host\",\n"
        "           \"estimates\":{TARGET:{\"compute_unit\",\"ms\",\"mj\",\"bound\",...,\"cpu\":\n"
        "           {\"compute_unit\",\"ms\",\"mj\",\"bound\"}}}}],\"winnowed\":[{\"id\",\n"
        "           \"technique\",\"task\",\"macs\",\"weight_bytes\",\"top1\",\"dominated_by\"}]}\n";
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {"manifest", no_argument, 0, 'm'},
                                       {"json", no_argument, 0, 'j'}, {0, 0, 0, 0}};
    int raw = 0, json = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (c == 'h') return help_or_usage(help, 1);
        if (c == 'm') raw = 1;
        else if (c == 'j') json = 1;
        else return help_or_usage(help, 0);
    }
    if (argc - optind != 1 || (raw && json)) return help_or_usage(help, 0);
    trn_err err;
    cJSON *m = archive_manifest(argv[optind], &err);
    if (!m) return fail(&err);
    if (json) {
        cJSON *doc = cat_inspect_json(m, &err);
        cJSON_Delete(m);
        return print_json_doc(doc, &err);
    }
    if (raw) {
        char *s = cat_json_print(m);
        fputs(s ? s : "", stdout);
        free(s);
        cJSON_Delete(m);
        return 0;
    }
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(m, "targets"), *t, *v;
    printf("catalog %s  version %.0f  model %s  (%d variants, %d winnowed)\n\n", jstr(m, "catalog"), jnum(m, "version"),
           jstr(m, "model"), cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "variants")),
           cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "winnowed")));
    printf("%-22s %-11s %-9s %6s %6s %10s %10s %9s %9s %9s", "variant", "technique", "task", "top1", "top5", "MMACs",
           "params", "weight MB", "act. MB", "host ms");
    cJSON_ArrayForEach(t, targets) printf(" %21.21s", t->string);
    printf("\n");
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        const cJSON *cost = cJSON_GetObjectItemCaseSensitive(v, "cost");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), jstr(v, "task"));
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(v, "latency");
        char t1[12] = "-", t5[12] = "-", ms[16] = "-";
        if (jnum(acc, "top1") >= 0) snprintf(t1, sizeof t1, "%.4f", jnum(acc, "top1"));
        if (jnum(acc, "top5") >= 0) snprintf(t5, sizeof t5, "%.4f", jnum(acc, "top5"));
        if (lat && lat->child) snprintf(ms, sizeof ms, "%.3f", jnum(lat->child, "ms_median"));
        printf("%-22s %-11s %-9s %6s %6s %10.2f %10.0f %9.3f %9.3f %9s", jstr(v, "id"), jstr(v, "technique"),
               jstr(v, "task"), t1, t5, jnum(cost, "macs") / 1e6, jnum(cost, "params"), jnum(cost, "weight_bytes") / 1e6,
               jnum(cost, "peak_activation_bytes") / 1e6, ms);
        cJSON_ArrayForEach(t, targets) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "estimates"), t->string);
            const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(e, "cpu");
            char both[40];
            if (cpu) snprintf(both, sizeof both, "%.3f/%.3f", jnum(e, "ms"), jnum(cpu, "ms"));
            else snprintf(both, sizeof both, "%.3f", jnum(e, "ms"));
            printf(" %16s est.", both);
        }
        printf("\n");
    }
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "winnowed");
    cJSON_ArrayForEach(v, w)
        printf("winnowed: %s (MACs %.0f, weight bytes %.0f, top1 %.4f) dominated by %s\n", jstr(v, "id"), jnum(v, "macs"),
               jnum(v, "weight_bytes"), jnum(v, "top1"), jstr(v, "dominated_by"));
    if (targets && targets->child)
        printf("(est. = roofline estimate in ms from the target profiles, not a measurement: GPU/CPU, the GPU's\n"
               "CUDA cores and the CPU cores, the path the runtime takes today; catalog inspect --json names the units)\n");
    cJSON_Delete(m);
    return 0;
}

static int cmd_pareto(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog pareto ARCHIVE [--task T] [--target T] [--json]\n"
        "Prints the Pareto fronts of the archive's variants: per task, against MACs and\n"
        "against weight bytes, and per target, against the estimated latency on its GPU\n"
        "and on its CPU (the path the runtime takes today). A front lists, cheapest first,\n"
        "each variant more accurate (test top-1) than every cheaper one; variants without\n"
        "a measured top-1 are on none.\n"
        "  --task T     only task T\n"
        "  --target T   only target T (and no MACs or bytes fronts)\n"
        "  --json       one JSON object: {\"catalog\",\"version\",\"fronts\":[{\"task\",\n"
        "               \"target\" (null: the variant's own costs),\"cost\" (macs,\n"
        "               weight_bytes, gpu_ms, cpu_ms),\"compute_unit\" (targets),\"front\":\n"
        "               [{\"id\",\"technique\",\"cost\",\"top1\",\"top5\"}]}]}\n";
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {"json", no_argument, 0, 'j'},
                                       {"task", required_argument, 0, 'T'}, {"target", required_argument, 0, 'g'},
                                       {0, 0, 0, 0}};
    const char *task = NULL, *target = NULL;
    int json = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (c == 'h') return help_or_usage(help, 1);
        if (c == 'j') json = 1;
        else if (c == 'T') task = optarg;
        else if (c == 'g') target = optarg;
        else return help_or_usage(help, 0);
    }
    if (argc - optind != 1) return help_or_usage(help, 0);
    trn_err err;
    cJSON *m = archive_manifest(argv[optind], &err);
    if (!m) return fail(&err);
    cJSON *doc = cat_pareto(m, task, target, &err);
    cJSON_Delete(m);
    if (json || !doc) return print_json_doc(doc, &err);
    const cJSON *f, *e;
    printf("catalog %s version %.0f: Pareto fronts (cheapest first; each more accurate than every cheaper one)\n",
           jstr(doc, "catalog"), jnum(doc, "version"));
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(doc, "fronts")) {
        const char *cost = jstr(f, "cost");
        int ms = !strcmp(cost, "gpu_ms") || !strcmp(cost, "cpu_ms");
        if (ms)
            printf("\ntask %s, target %s, est. ms on %s:\n", jstr(f, "task"), jstr(f, "target"), jstr(f, "compute_unit"));
        else
            printf("\ntask %s, by %s:\n", jstr(f, "task"), !strcmp(cost, "macs") ? "MACs" : "weight bytes");
        printf("  %-24s %-12s %14s %7s\n", "variant", "technique", ms ? "est. ms" : cost, "top1");
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(f, "front")) {
            if (ms) printf("  %-24s %-12s %14.4f %7.4f\n", jstr(e, "id"), jstr(e, "technique"), jnum(e, "cost"), jnum(e, "top1"));
            else printf("  %-24s %-12s %14.0f %7.4f\n", jstr(e, "id"), jstr(e, "technique"), jnum(e, "cost"), jnum(e, "top1"));
        }
        if (!cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(f, "front"))) printf("  (no variant with a measured top-1)\n");
    }
    cJSON_Delete(doc);
    return 0;
}

static int cmd_report(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog report ARCHIVE [-o BASE] [--metrics DIR]\n"
        "Writes BASE.report.md and the Pareto plots BASE.pareto-macs.svg and\n"
        "BASE.pareto-bytes.svg (top-1 against MACs and against weight bytes) of the task\n"
        "with the most variants (BASE.TASK.pareto-*.svg for other tasks) from the\n"
        "archive's manifest, and the same report as one self-contained HTML file,\n"
        "BASE.report.html (plots inline, nothing fetched). BASE defaults to ARCHIVE\n"
        "without .tar.zst (beside it).\n"
        "  --metrics DIR   add each variant's training curve (BASE.curve-ID.svg) from\n"
        "                  DIR/ID/train/variant.metrics.jsonl, the metrics log of\n"
        "                  trainer train, where it exists (make passes the variants folder)\n";
    static const struct option lo[] = {{"help", no_argument, 0, 'h'}, {"metrics", required_argument, 0, 'M'},
                                       {0, 0, 0, 0}};
    const char *base = NULL, *metrics = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        if (c == 'h') return help_or_usage(help, 1);
        if (c == 'o') base = optarg;
        else if (c == 'M') metrics = optarg;
        else return help_or_usage(help, 0);
    }
    if (argc - optind != 1) return help_or_usage(help, 0);
    const char *archive = argv[optind];
    char buf[4096];
    if (!base) {
        snprintf(buf, sizeof buf, "%s", archive);
        if (is_archive(buf)) buf[strlen(buf) - 8] = '\0';
        base = buf;
    }
    trn_err err;
    cJSON *m = archive_manifest(archive, &err);
    if (!m) return fail(&err);
    int rc = cat_report_ex(m, base, metrics, &err);
    cJSON_Delete(m);
    if (rc != 0) return fail(&err);
    printf("report: %s.report.md, %s.report.html, %s.pareto-macs.svg, %s.pareto-bytes.svg\n", base, base, base, base);
    return 0;
}

/* ---- pack ------------------------------------------------------------------- */

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < 0) return -1;
    *out = v;
    return 0;
}

/* The development key under dir: made once, reused after. */
static cat_seckey *dev_key(const char *dir, trn_err *err)
{
    char sec[4096], pub[4096];
    if (snprintf(sec, sizeof sec, "%s/catalog-dev.key", dir) >= (int)sizeof sec ||
        snprintf(pub, sizeof pub, "%s/catalog-dev.pub", dir) >= (int)sizeof pub) {
        trn_errf(err, "%s: path too long", dir);
        return NULL;
    }
    struct stat st;
    int made = 0;
    if (stat(sec, &st) != 0) {
        if (trn_mkdir_p(dir, err) != 0 || cat_keygen(pub, sec, NULL, CAT_KDF_NONE, 1, 0, NULL, err) != 0) return NULL;
        made = 1;
    }
    cat_seckey *k = cat_seckey_load(sec, NULL, err);
    if (!k) return NULL;
    rtl_pubkey pk;
    char id[17];
    cat_seckey_pubkey(k, &pk);
    rtl_keynum_hex(pk.keynum, id);
    fprintf(stderr,
            "catalog: WARNING: ************************************************************\n"
            "catalog: WARNING: signing with the DEVELOPMENT key %s (%s, %s).\n"
            "catalog: WARNING: Devices must NOT trust it: never put %s in a\n"
            "catalog: WARNING: production device's keys folder. Sign releases with --key SEC\n"
            "catalog: WARNING: (make catalog KEY=path).\n"
            "catalog: WARNING: ************************************************************\n",
            id, sec, made ? "created now" : "made earlier", pub);
    return k;
}

static int cmd_pack(int argc, char **argv)
{
    static const char help[] =
        "Usage: catalog pack VARIANTS_DIR -o OUT_DIR [--task NAME=FILE.names]...\n"
        "                    [--catalog ID] [--model M] [--version N] [--seed S]\n"
        "                    [--targets DIR | --no-targets] [--zstd-level L]\n"
        "                    [--key SEC [--passphrase-file FILE | --passphrase-env VAR]\n"
        "                     | --dev-key-dir DIR]\n"
        "Reads every VARIANTS_DIR/<id>/variant.json and its files, drops strictly\n"
        "dominated variants (OUT_DIR/winnowed.json says which and why), writes\n"
        "OUT_DIR/manifest.json and, atomically, OUT_DIR/catalog-<model>-<version>.tar.zst\n"
        "and its .minisig. The same inputs and SOURCE_DATE_EPOCH give the same bytes.\n"
        "  --task NAME=FILE   labels of task NAME (one per line); every task a variant\n"
        "                     names needs one\n"
        "  --version N        default: SOURCE_DATE_EPOCH (monotonic over builds)\n"
        "  --seed S           the training seed, recorded in the manifest\n"
        "  --targets DIR      device profiles (default: the built-in Jetson profiles)\n"
        "  --key SEC          signing key; without it a DEVELOPMENT key is made in\n"
        "                     --dev-key-dir (default OUT_DIR/devkey) with a warning\n"
        "SOURCE_DATE_EPOCH (environment) fixes mtimes and the signature timestamp;\n"
        "unset, the newest input file's mtime is used.\n";
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'},        {"task", required_argument, 0, 't'},
        {"catalog", required_argument, 0, 'c'}, {"model", required_argument, 0, 'm'},
        {"version", required_argument, 0, 'v'}, {"seed", required_argument, 0, 'S'},
        {"targets", required_argument, 0, 'T'}, {"no-targets", no_argument, 0, 'N'},
        {"zstd-level", required_argument, 0, 'z'}, {"key", required_argument, 0, 'k'},
        {"dev-key-dir", required_argument, 0, 'd'}, {"passphrase-file", required_argument, 0, 'F'},
        {"passphrase-env", required_argument, 0, 'E'}, {0, 0, 0, 0}};
    struct cat_build_options o = {.seed = -1, .source_date_epoch = -1};
    struct cat_task_labels tasks[32];
    const char *out_dir = NULL, *key_path = NULL, *dev_dir = NULL;
    struct pass_opts po = {0};
    int64_t level = 9, v;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'o': out_dir = optarg; break;
        case 't': {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || o.ntasks == 32) return help_or_usage(help, 0);
            *eq = '\0';
            tasks[o.ntasks++] = (struct cat_task_labels){optarg, eq + 1};
            break;
        }
        case 'c': o.catalog = optarg; break;
        case 'm': o.model = optarg; break;
        case 'v':
            if (parse_i64(optarg, &v) || v < 1) return help_or_usage(help, 0);
            o.version = (uint64_t)v;
            break;
        case 'S':
            if (parse_i64(optarg, &o.seed)) return help_or_usage(help, 0);
            break;
        case 'T': o.targets_dir = optarg; break;
        case 'N': o.no_targets = 1; break;
        case 'z':
            if (parse_i64(optarg, &level)) return help_or_usage(help, 0);
            break;
        case 'k': key_path = optarg; break;
        case 'd': dev_dir = optarg; break;
        case 'F': po.file = optarg; break;
        case 'E': po.env = optarg; break;
        case 'h': return help_or_usage(help, 1);
        default: return help_or_usage(help, 0);
        }
    }
    if (!out_dir || argc - optind != 1 || (key_path && dev_dir)) return help_or_usage(help, 0);
    o.variants_dir = argv[optind];
    o.tasks = tasks;
    trn_err err;
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && *sde && parse_i64(sde, &o.source_date_epoch)) {
        fprintf(stderr, "catalog: error: SOURCE_DATE_EPOCH='%s' is not a non-negative integer\n", sde);
        return 1;
    }
    /* the key first: fail before the expensive part */
    char devbuf[4096];
    if (!key_path && !dev_dir) snprintf(devbuf, sizeof devbuf, "%s/devkey", out_dir), dev_dir = devbuf;
    cat_seckey *key = key_path ? load_key(key_path, &po, &err) : dev_key(dev_dir, &err);
    if (!key) return fail(&err);
    struct cat_built b;
    int rc = cat_build(&o, &b, print_problem, NULL, &err);
    char path[4096], archive[4096];
    char *text = NULL, *wtext = NULL;
    if (rc == 0 && trn_mkdir_p(out_dir, &err) != 0) rc = -1;
    if (rc == 0) {
        const cJSON *m = b.manifest;
        text = cat_json_print(b.manifest);
        wtext = cat_json_print(b.winnowed);
        snprintf(archive, sizeof archive, "%s/catalog-%s-%.0f.tar.zst", out_dir, jstr(m, "model"), jnum(m, "version"));
        snprintf(path, sizeof path, "%s/manifest.json", out_dir);
        int64_t mtime = (int64_t)jnum(cJSON_GetObjectItemCaseSensitive(m, "build"), "source_date_epoch");
        if (!text || !wtext) rc = trn_errf(&err, "out of memory");
        else if (trn_write_file_atomic(path, text, strlen(text), &err) != 0) rc = -1;
        else if (snprintf(path, sizeof path, "%s/winnowed.json", out_dir) < 0 ||
                 trn_write_file_atomic(path, wtext, strlen(wtext), &err) != 0) rc = -1;
        else if (cat_pack(archive, text, b.files, b.nfiles, mtime, (int)level, &err) != 0) rc = -1;
        else if (snprintf(path, sizeof path, "%s.minisig", archive) < 0 || cat_sign_archive(key, archive, path, &err) != 0)
            rc = -1;
    }
    if (rc == 0) {
        uint64_t bytes = 0;
        for (size_t i = 0; i < b.nfiles; i++) bytes += b.files[i].size;
        rtl_pubkey pk;
        char id[17];
        cat_seckey_pubkey(key, &pk);
        rtl_keynum_hex(pk.keynum, id);
        printf("catalog: %s: %d variants, %zu files, %" PRIu64 " bytes; %d winnowed (%s/winnowed.json)\n", archive,
               cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b.manifest, "variants")), b.nfiles, bytes,
               cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b.manifest, "winnowed")), out_dir);
        printf("catalog: signature %s (key %s%s); mtimes from %s\n", path, id,
               cat_seckey_is_development(key) ? ", DEVELOPMENT" : "", b.source_date_epoch_from);
    }
    free(text);
    free(wtext);
    cat_built_free(&b);
    cat_seckey_free(key);
    return rc == 0 ? 0 : fail(&err);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("catalog %s\n", CAT_VERSION);
        return 0;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"keygen", cmd_keygen},     {"sign", cmd_sign},       {"verify", cmd_verify}, {"validate", cmd_validate},
                {"inspect", cmd_inspect}, {"pareto", cmd_pareto}, {"report", cmd_report}, {"pack", cmd_pack},
                {"cost", cat_cli_cost},     {"profile", cat_cli_profile}, {"describe", cat_cli_describe},
                {"variants", cat_cli_variants}, {"publish", cat_cli_publish}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "catalog: unknown command '%s' (catalog --help lists them)\n", cmd);
    return 2;
}
