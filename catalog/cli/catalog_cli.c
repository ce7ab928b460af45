/* catalog_cli.c: the `catalog` command (a thin shell over libcat, see cat.h):
 * keygen, sign, verify, validate, pack, inspect, report. */
#include "clikit.h"
#include "cat.h"
#include "publish_cli.h"
#include "variant_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
            "  export --onnx VARIANTS_DIR     the variants as ONNX models\n"
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

/* ---- keygen ---------------------------------------------------------------- */

static int cmd_keygen(int argc, char **argv)
{
    const char *pub = NULL, *sec = NULL, *kdf_name = NULL, *extra;
    struct pass_opts po = {0};
    int unencrypted = 0, force = 0, dev = 0, rc0;
    enum cat_kdf kdf = CAT_KDF_SENSITIVE;
    const ck_opt opts[] = {
        {"-p", "PUB", CK_STR, &pub, 0, 0, "the public key file to write (give it to devices)"},
        {"-s", "SEC", CK_STR, &sec, 0, 0, "the secret key file to write (mode 0600)"},
        {"-W", NULL, CK_FLAG, &unencrypted, 0, 0, "leave the secret key unencrypted"},
        {"--passphrase-file", "FILE", CK_STR, &po.file, 0, 0, "encrypt it with the first line of FILE"},
        {"--passphrase-env", "VAR", CK_STR, &po.env, 0, 0, "encrypt it with environment variable VAR"},
        {"--kdf", "NAME", CK_STR, &kdf_name, 0, 0, "interactive or sensitive (default)"},
        {"--development", NULL, CK_FLAG, &dev, 0, 0, "mark the pair as a development key"},
        {"-f", NULL, CK_FLAG, &force, 0, 0, "replace existing files"},
        {0},
    };
    const ck_verb verb = {
        "keygen", NULL, cmd_keygen,
        "-p PUB -s SEC (-W | --passphrase-file FILE | --passphrase-env VAR)\n"
        "                      [--kdf interactive|sensitive] [--development] [-f]",
        "Writes a minisign key pair: PUB (public key, give it to devices) and SEC (secret\n"
        "key, mode 0600). -W leaves SEC unencrypted; otherwise it is encrypted with the\n"
        "passphrase read from FILE (first line) or from environment variable VAR (never\n"
        "from a prompt). --kdf sensitive (default) is minisign's scrypt cost (about 1 GiB,\n"
        "seconds); interactive is cheaper, for CI keys. --development marks the pair as a\n"
        "development key that devices must never trust. -f replaces existing files.\n",
        opts, NULL,
    };
    if (ck_parse("catalog", &verb, argc, argv, &extra, 0, &rc0) < 0) return rc0;
    if (kdf_name && !strcmp(kdf_name, "interactive")) kdf = CAT_KDF_INTERACTIVE;
    else if (kdf_name && strcmp(kdf_name, "sensitive"))
        return ck_usage_of("catalog", &verb, "--kdf is interactive or sensitive, not '%s'", kdf_name);
    if (!pub || !sec) return ck_usage_of("catalog", &verb, "-p PUB and -s SEC are both required");
    if (unencrypted + !!po.file + !!po.env == 0)
        return ck_usage_of("catalog", &verb, "keygen never prompts: pass -W for an unencrypted key, or "
                                               "--passphrase-file / --passphrase-env");
    if (unencrypted + !!po.file + !!po.env != 1)
        return ck_usage_of("catalog", &verb, "give exactly one of -W, --passphrase-file and --passphrase-env");
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
    const char *sec = NULL, *sig = NULL, *trusted = NULL, *untrusted = "signature from minisign secret key";
    const char *archive = NULL;
    struct pass_opts po = {0};
    int rc0;
    const ck_opt opts[] = {
        {"-s", "SEC", CK_STR, &sec, 0, 0, "the secret key"},
        {"-x", "SIG", CK_STR, &sig, 0, 0, "the signature file to write (default ARCHIVE.minisig)"},
        {"--passphrase-file", "FILE", CK_STR, &po.file, 0, 0, "the key's passphrase: the first line of FILE"},
        {"--passphrase-env", "VAR", CK_STR, &po.env, 0, 0, "the key's passphrase: environment variable VAR"},
        {"--trusted-comment", "TEXT", CK_STR, &trusted, 0, 0, "sign any file with this trusted comment"},
        {"--untrusted-comment", "TEXT", CK_STR, &untrusted, 0, 0, "its untrusted comment (default: minisign's)"},
        {0},
    };
    const ck_verb verb = {
        "sign", NULL, cmd_sign,
        "ARCHIVE -s SEC [-x SIG] [--passphrase-file FILE | --passphrase-env VAR]\n"
        "                    [--trusted-comment TEXT [--untrusted-comment TEXT]]",
        "Signs ARCHIVE (prehashed Ed25519, minisign's format) into SIG (default\n"
        "ARCHIVE.minisig). The trusted comment carries the catalog id, version, model and\n"
        "manifest SHA-256 read from the archive; --trusted-comment signs any file with\n"
        "the given comment instead (untrusted comment: minisign's default).\n",
        opts, NULL,
    };
    int nop = ck_parse("catalog", &verb, argc, argv, &archive, 1, &rc0);
    if (nop < 0) return rc0;
    if (!sec) return ck_usage_of("catalog", &verb, "-s SEC (the secret key) is required");
    if (nop != 1) return ck_usage_of("catalog", &verb, "ARCHIVE is missing");
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
    const char *sig = NULL, *archive = NULL;
    ck_list pubs = {.n = 0}, b64 = {.n = 0};
    int rc0;
    const ck_opt opts[] = {
        {"-x", "SIG", CK_STR, &sig, 0, 0, "the signature (default ARCHIVE.minisig)"},
        {"-p", "PUB", CK_LIST, &pubs, 0, 0, "a public key file (repeatable)"},
        {"-P", "KEY", CK_LIST, &b64, 0, 0, "a public key in base64 (repeatable)"},
        {0},
    };
    const ck_verb verb = {
        "verify", NULL, cmd_verify, "ARCHIVE [-x SIG] (-p PUB | -P KEY)...",
        "Verifies ARCHIVE against SIG (default ARCHIVE.minisig) with the public key file(s)\n"
        "PUB or base64 key(s) KEY: the signature, the trusted comment's global signature,\n"
        "the untrusted comment, and that the catalog id, version and manifest SHA-256 of\n"
        "the trusted comment are those of the archive. Says which check failed.\n",
        opts, NULL,
    };
    int nop = ck_parse("catalog", &verb, argc, argv, &archive, 1, &rc0);
    if (nop < 0) return rc0;
    if (pubs.n + b64.n > 16) return ck_usage_of("catalog", &verb, "at most 16 keys (-p, -P)");
    if (!pubs.n && !b64.n) return ck_usage_of("catalog", &verb, "no public key: give -p PUB or -P KEY");
    if (nop != 1) return ck_usage_of("catalog", &verb, "ARCHIVE is missing");
    rtl_pubkey keys[16];
    size_t n = 0;
    rtl_err re;
    for (int k = 0; k < pubs.n + b64.n; k++) {
        const char *kv = k < pubs.n ? pubs.v[k] : b64.v[k - pubs.n];
        if ((k < pubs.n ? rtl_pubkey_load(kv, &keys[n], &re) : rtl_pubkey_parse(kv, strlen(kv), &keys[n], &re)) != 0) {
            fprintf(stderr, "catalog: error: %s\n", re.msg);
            return 1;
        }
        n++;
    }
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
    const char *root = NULL, *path = NULL;
    int no_files = 0, rc0;
    const ck_opt opts[] = {
        {"--root", "DIR", CK_STR, &root, 0, 0, "where the manifest's files are (default: the manifest's folder)"},
        {"--no-files", NULL, CK_FLAG, &no_files, 0, 0, "check the manifest alone, not the files it names"},
        {0},
    };
    const ck_verb verb = {
        "validate", NULL, cmd_validate, "MANIFEST [--root DIR | --no-files] | ARCHIVE",
        "Checks a manifest against catalog/manifest.schema.json, its cross-references, and\n"
        "the size and SHA-256 of every file it names under DIR (default: the manifest's\n"
        "folder). For an ARCHIVE (.tar.zst) the manifest inside is checked, without files.\n",
        opts, NULL,
    };
    int nop = ck_parse("catalog", &verb, argc, argv, &path, 1, &rc0);
    if (nop < 0) return rc0;
    if (root && no_files) return ck_usage("catalog", "validate", "--root and --no-files exclude each other");
    if (nop != 1) return ck_usage("catalog", "validate", "MANIFEST or ARCHIVE is missing");
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

static int cmd_pareto(int argc, char **argv)
{
    const char *task = NULL, *target = NULL, *archive = NULL;
    int json = 0, rc0;
    const ck_opt opts[] = {
        {"--task", "T", CK_STR, &task, 0, 0, "only task T"},
        {"--target", "T", CK_STR, &target, 0, 0, "only target T (and no MACs or bytes fronts)"},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "one JSON object: {\"catalog\",\"version\",\"fronts\":[{\"task\",\"target\" (null:\n"
         "the variant's own costs),\"cost\" (macs, weight_bytes, gpu_ms, cpu_ms),\n"
         "\"compute_unit\" (targets),\"front\":[{\"id\",\"technique\",\"cost\",\"top1\",\"top5\"}]}]}"},
        {0},
    };
    const ck_verb verb = {
        "pareto", NULL, cmd_pareto, "ARCHIVE [--task T] [--target T] [--json]",
        "Prints the Pareto fronts of the archive's variants: per task, against MACs and\n"
        "against weight bytes, and per target, against the estimated latency on its GPU\n"
        "and on its CPU (the path the runtime takes today). A front lists, cheapest first,\n"
        "each variant more accurate (test top-1) than every cheaper one; variants without\n"
        "a measured top-1 are on none.\n",
        opts, NULL,
    };
    if (ck_parse_one("catalog", &verb, argc, argv, &archive, "ARCHIVE", &rc0)) return rc0;
    trn_err err;
    cJSON *m = archive_manifest(archive, &err);
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
            printf("\ntask %s, target %s, roofline lower bound in ms on %s:\n", jstr(f, "task"), jstr(f, "target"),
                   jstr(f, "compute_unit"));
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

static int cmd_inspect(int argc, char **argv)
{
    int raw = 0, json = 0, rc0;
    const ck_opt opts[] = {
        {"--manifest", NULL, CK_FLAG, &raw, 0, 0, "print the archive's manifest.json instead"},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "the table as one JSON object: {\"catalog\",\"version\",\"model\",\"variants\":[{\"id\",\n"
         "\"technique\",\"task\",\"top1\",\"top5\",\"macs\",\"params\",\"weight_bytes\",\n"
         "\"peak_activation_bytes\",\"ms_build_host\",\"estimates\":{TARGET:{\"compute_unit\",\n"
         "\"ms\",\"mj\",\"bound\",...,\"cpu\":{\"compute_unit\",\"ms\",\"mj\",\"bound\"}}}}],\n"
         "\"winnowed\":[{\"id\",\"technique\",\"task\",\"macs\",\"weight_bytes\",\"top1\",\n"
         "\"dominated_by\"}]}"},
        {0},
    };
    const ck_verb verb = {
        "inspect", NULL, cmd_inspect, "ARCHIVE [--manifest | --json]",
        "Prints the variants table of ARCHIVE (measured latency on the build machine and\n"
        "roofline estimates per target, GPU/CPU ms marked est.), or with --manifest its\n"
        "manifest.json, or with --json the table as JSON.\n",
        opts, NULL,
    };
    const char *archive = NULL;
    if (ck_parse_one("catalog", &verb, argc, argv, &archive, "ARCHIVE", &rc0)) return rc0;
    if (raw && json) return ck_usage("catalog", "inspect", "--manifest and --json exclude each other");
    trn_err err;
    cJSON *m = archive_manifest(archive, &err);
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
        printf("(est. = roofline estimate in ms from the target profiles, a lower bound, not a measurement: a real\n"
               "run takes longer; GPU/CPU, the GPU's CUDA cores and the CPU cores, the path the runtime takes today;\n"
               "catalog inspect --json names the units)\n");
    cJSON_Delete(m);
    return 0;
}

static int cmd_report(int argc, char **argv)
{
    const char *base = NULL, *archive = NULL, *metrics = NULL;
    int rc0;
    const ck_opt opts[] = {
        {"-o|--out", "BASE", CK_STR, &base, 0, 0, "the reports' path without extension (default: ARCHIVE\nwithout .tar.zst, beside it)"},
        {"--metrics", "DIR", CK_STR, &metrics, 0, 0,
         "add each variant's training curve (BASE.curve-ID.svg) from\nDIR/ID/train/variant.metrics.jsonl, the metrics log of\n"
         "trainer train, where it exists (make passes the variants folder)"},
        {0},
    };
    const ck_verb verb = {
        "report", NULL, cmd_report, "ARCHIVE [-o BASE] [--metrics DIR]",
        "Writes BASE.report.md and the Pareto plots BASE.pareto-macs.svg and\n"
        "BASE.pareto-bytes.svg (top-1 against MACs and against weight bytes) of the task\n"
        "with the most variants (BASE.TASK.pareto-*.svg for other tasks) from the\n"
        "archive's manifest, and the same report as one self-contained HTML file,\n"
        "BASE.report.html (plots inline, nothing fetched).\n",
        opts, NULL,
    };
    if (ck_parse_one("catalog", &verb, argc, argv, &archive, "ARCHIVE", &rc0)) return rc0;
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

/* The development key's warning. */
static void print_warning(void *user, const char *text)
{
    (void)user;
    fputs(text, stderr);
}

static void print_decisions(const cJSON *w);

/* What a packed catalog came to, and every winnowing decision. */
static void print_packed(const struct cat_pack_catalog_result *r, const cat_seckey *key, const char *out_dir)
{
    const struct cat_built *b = &r->built;
    rtl_pubkey pk;
    char id[17];
    cat_seckey_pubkey(key, &pk);
    rtl_keynum_hex(pk.keynum, id);
    printf("catalog: %s: %d variants, %zu files, %" PRIu64 " bytes; %d winnowed (%s/winnowed.json)\n", r->archive,
           cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b->manifest, "variants")), b->nfiles, r->bytes,
           cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(b->manifest, "winnowed")), out_dir);
    printf("catalog: signature %s (key %s%s); mtimes from %s\n", r->signature, id,
           cat_seckey_is_development(key) ? ", DEVELOPMENT" : "", b->source_date_epoch_from);
    print_decisions(b->winnowed);
}

/* One comparison of winnowing (manifest.schema.json, paired_test) in words. */
static void print_test(const char *head, const cJSON *t)
{
    const char *method = jstr(t, "method");
    printf("%s %+.1f points against %s, %s (", head, 100 * jnum(t, "difference"), jstr(t, "against"),
           jstr(t, "verdict"));
    if (!strcmp(method, "mcnemar-exact"))
        printf("McNemar p = %.3g on the same %.0f images: %.0f right only here, %.0f only there)\n", jnum(t, "p"),
               jnum(t, "images"), jnum(t, "only_this"), jnum(t, "only_against"));
    else
        printf("95%% Wilson intervals: no per-image record of both)\n");
}

/* Every winnowing decision of winnowed.json, one line each. */
static void print_decisions(const cJSON *w)
{
    const cJSON *v, *c;
    char head[256];
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(w, "dropped")) {
        snprintf(head, sizeof head, "winnow: dropped %s (dominated by %s):", jstr(v, "id"), jstr(v, "dominated_by"));
        print_test(head, cJSON_GetObjectItemCaseSensitive(v, "test"));
    }
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(w, "kept")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(v, "test");
        snprintf(head, sizeof head, "winnow: kept %s (%s):", jstr(v, "id"), jstr(v, "reason"));
        if (t) print_test(head, t);
        else if (!cJSON_GetObjectItemCaseSensitive(v, "capacities")) printf("%s\n", head);
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(v, "capacities")) {
            snprintf(head, sizeof head, "winnow: kept %s, capacity %.0f (%s):", jstr(v, "id"), jnum(c, "capacity"),
                     cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "on_front")) ? "on the front" : "off the front");
            if ((t = cJSON_GetObjectItemCaseSensitive(c, "test"))) print_test(head, t);
            else printf("%s no variant at no more cost\n", head);
        }
    }
}

static int cmd_pack(int argc, char **argv)
{
    struct cat_build_options o = {.seed = -1, .source_date_epoch = -1};
    struct cat_task_labels tasks[32];
    const char *out_dir = NULL, *key_path = NULL, *dev_dir = NULL, *variants = NULL;
    struct pass_opts po = {0};
    ck_list task = {.n = 0}, keep = {.n = 0};
    const char *addon_of = NULL;
    cJSON *base_manifest = NULL;
    long long level = 9, version = 0, seed = -1;
    int no_targets = 0, rc0;
    const ck_opt opts[] = {
        {"-o", "OUT_DIR", CK_STR, &out_dir, 0, 0, "where the archive, its signature and the manifest go"},
        {"--task", "NAME=FILE", CK_LIST, &task, 0, 0, "labels of task NAME (one per line); every task a variant\nnames needs one"},
        {"--catalog", "ID", CK_STR, &o.catalog, 0, 0, "the catalog id (default: the model)"},
        {"--model", "M", CK_STR, &o.model, 0, 0, "the model name (default: the variants')"},
        {"--version", "N", CK_INT, &version, 1, 9007199254740992.0, "default: SOURCE_DATE_EPOCH (monotonic over builds)"},
        {"--seed", "S", CK_INT, &seed, 0, 9007199254740992.0, "the training seed, recorded in the manifest"},
        {"--targets", "DIR", CK_STR, &o.targets_dir, 0, 0, "device profiles (default: the built-in Jetson profiles)"},
        {"--no-targets", NULL, CK_FLAG, &no_targets, 0, 0, "no device profiles, no estimates"},
        {"--zstd-level", "L", CK_INT, &level, 1, 19, "zstd compression level, 1..19 (default 9)"},
        {"--key", "SEC", CK_STR, &key_path, 0, 0,
         "signing key; without it a DEVELOPMENT key is made in\n--dev-key-dir (default OUT_DIR/devkey) with a warning"},
        {"--passphrase-file", "FILE", CK_STR, &po.file, 0, 0, "the key's passphrase: the first line of FILE"},
        {"--passphrase-env", "VAR", CK_STR, &po.env, 0, 0, "the key's passphrase: environment variable VAR"},
        {"--dev-key-dir", "DIR", CK_STR, &dev_dir, 0, 0, "where the development key is kept"},
        {"--keep", "ID", CK_LIST, &keep, 0, 0,
         "keep variant ID out of winnowing on purpose (repeatable): the\n"
         "manifest marks it \"kept by request\" (winnowing.reason)"},
        {"--addon-of", "MANIFEST", CK_STR, &addon_of, 0, 0,
         "make an add-on of the catalog whose manifest.json this is (its\n"
         "variants may name that catalog's; devices install it only on top of\n"
         "that catalog at that version); needs --catalog with another id"},
        {0},
    };
    const ck_verb verb = {
        "pack", NULL, cmd_pack,
        "VARIANTS_DIR -o OUT_DIR [--task NAME=FILE.names]... [--keep ID]...\n"
        "                    [--catalog ID] [--model M] [--version N] [--seed S]\n"
        "                    [--targets DIR | --no-targets] [--zstd-level L]\n"
        "                    [--key SEC [--passphrase-file FILE | --passphrase-env VAR]\n"
        "                     | --dev-key-dir DIR]",
        "Reads every VARIANTS_DIR/<id>/variant.json and its files, drops strictly\n"
        "dominated variants (OUT_DIR/winnowed.json says which and why), writes\n"
        "OUT_DIR/manifest.json and, atomically, OUT_DIR/catalog-<model>-<version>.tar.zst\n"
        "and its .minisig. The same inputs and SOURCE_DATE_EPOCH give the same bytes.\n"
        "Nothing (not even a development key) is made before every variant was read;\n"
        "a failed run removes what it made.\n",
        opts,
        "SOURCE_DATE_EPOCH (environment) fixes mtimes and the signature timestamp;\n"
        "unset, the newest input file's mtime is used.\n",
    };
    int nop = ck_parse("catalog", &verb, argc, argv, &variants, 1, &rc0);
    if (nop < 0) return rc0;
    if (!out_dir) return ck_usage_of("catalog", &verb, "-o OUT_DIR is required");
    if (key_path && dev_dir) return ck_usage_of("catalog", &verb, "--key and --dev-key-dir exclude each other");
    if (nop != 1) return ck_usage_of("catalog", &verb, "VARIANTS_DIR is missing");
    if (task.n > 32) return ck_usage_of("catalog", &verb, "at most 32 --task options");
    for (int k = 0; k < task.n; k++) {
        char *eq = strchr(task.v[k], '=');
        if (!eq || eq == task.v[k])
            return ck_usage_of("catalog", &verb, "--task needs NAME=FILE.names, not '%s'", task.v[k]);
        *eq = '\0';
        tasks[o.ntasks++] = (struct cat_task_labels){task.v[k], eq + 1};
    }
    if (version) o.version = (uint64_t)version;
    o.seed = seed;
    o.no_targets = no_targets;
    o.variants_dir = variants;
    o.tasks = tasks;
    o.keep = keep.v;
    o.nkeep = (size_t)keep.n;
    trn_err err;
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    if (sde && *sde && parse_i64(sde, &o.source_date_epoch)) {
        fprintf(stderr, "catalog: error: SOURCE_DATE_EPOCH='%s' is not a non-negative integer\n", sde);
        return 1;
    }
    /* Nothing is created before the inputs are known good: a --key is read
     * (and its passphrase checked) first, the variants next; only then is a
     * development key made (with its warning) and are the outputs written.
     * The archive and its signature come first and manifest.json and
     * winnowed.json last; a failure removes what this run made. */
    cat_seckey *key = NULL;
    if (key_path && !(key = load_key(key_path, &po, &err))) return fail(&err);
    if (addon_of && cat_addon_base_read(addon_of, &base_manifest, &err) != 0) {
        cat_seckey_free(key);
        return fail(&err);
    }
    const char *base_id = cat_json_str(base_manifest, "catalog", NULL);
    if (addon_of && (!o.catalog || !strcmp(o.catalog, base_id))) {
        int urc = ck_usage_of("catalog", &verb, "--addon-of needs --catalog ID, an id other than the base's ('%s')",
                              base_id);
        cJSON_Delete(base_manifest);
        cat_seckey_free(key);
        return urc;
    }
    o.base = base_manifest;
    struct cat_pack_catalog_options pko = {o, out_dir, key, dev_dir, (int)level, print_problem, NULL, print_warning};
    struct cat_pack_catalog_result r;
    int rc = cat_pack_catalog(&pko, &r, &err);
    if (rc == 0) print_packed(&r, key ? key : r.dev_key, out_dir);
    if (rc == 0) cat_pack_catalog_result_free(&r);
    cat_seckey_free(key);
    cJSON_Delete(base_manifest);
    return rc == 0 ? 0 : fail(&err);
}

int main(int argc, char **argv)
{
    static const ck_verb verbs[] = {
        CK_VERB("pack", "manifest, winnowing, archive and signature of a variants folder", cmd_pack),
        CK_VERB("validate", "check a manifest (or an archive's) against its schema and files", cmd_validate),
        CK_VERB("inspect", "print the variants of an archive", cmd_inspect),
        CK_VERB("pareto", "the Pareto fronts of an archive per task and per target", cmd_pareto),
        CK_VERB("report", "Pareto plots (SVG), Markdown and HTML report of an archive", cmd_report),
        CK_VERB("keygen", "make a minisign key pair", cmd_keygen),
        CK_VERB("sign", "sign an archive (writes ARCHIVE.minisig)", cmd_sign),
        CK_VERB("verify", "verify an archive's signature", cmd_verify),
        CK_VERB("cost", "the cost model of a cfg (JSON)", cat_cli_cost),
        CK_VERB("profile", "measured costs and latency of a cfg and its weights (profile.json)", cat_cli_profile),
        CK_VERB("describe", "a variant folder's variant.json", cat_cli_describe),
        CK_VERB("variants", "the table of a model's variants", cat_cli_variants),
        CK_VERB("export", "variants as ONNX models (export --onnx)", cat_cli_export),
        CK_VERB("publish", "the folder devices pull catalogs from (per-file delta, signed index)", cat_cli_publish),
    };
    static const char examples[] =
        "A release key pair (give release.pub to the devices: they pin it in ROOT/keys):\n"
        "  catalog keygen -p release.pub -s release.key --passphrase-file pass.txt\n"
        "Pack a model's variants into a signed catalog, check it, look at it:\n"
        "  catalog pack build/variants/alexnet -o out --task identity=build/data/synth/synth.names --key release.key --passphrase-file pass.txt\n"
        "  catalog verify out/catalog-alexnet-1.tar.zst -p release.pub\n"
        "  catalog inspect out/catalog-alexnet-1.tar.zst\n"
        "  catalog pareto out/catalog-alexnet-1.tar.zst\n"
        "  catalog report out/catalog-alexnet-1.tar.zst -o out/report\n"
        "The folder devices pull from (rtl pull URL):\n"
        "  catalog publish out/catalog-alexnet-1.tar.zst -o www/alexnet --key release.key --passphrase-file pass.txt\n";
    static const ck_prog p = {
        .name = "catalog", .examples = examples, .version = CAT_VERSION,
        .summary = "build, sign, verify and report signed catalogs of model variants",
        .verb_word = "command", .usage = usage, .verbs = verbs, .nverbs = (int)(sizeof verbs / sizeof *verbs),
    };
    return ck_main(&p, argc, argv);
}
