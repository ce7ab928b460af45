/*
 * main.c: `trainer`, the command line of libtrn: train, valid, predict,
 * info and bench on Darknet cfg/weights files. Only this program decides
 * to exit; the verbs return exit statuses.
 */
#include "cli.h"
#include "clikit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "Usage: trainer VERB [OPTIONS]\n"
    "\n"
    "A Darknet-compatible CNN trainer (cfg and .weights files as Darknet reads them).\n"
    "\n"
    "Verbs:\n"
    "  train    train a cfg on a Darknet classifier data set, with checkpoints and --resume\n"
    "  valid    top-1, top-k and the confusion matrix of a split (--json for scripts)\n"
    "  predict  the top-k classes of images, with their names\n"
    "  info     per-layer table (kind, shapes, parameters, MACs, output bytes) and totals\n"
    "  bench    images/s and GFLOPS of the forward and of a training step\n"
    "\n"
    "Run 'trainer VERB --help' for the options of a verb.\n";

int cli_fail(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "trainer %s: error: ", verb);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_usage(const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "trainer %s: ", verb);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nRun 'trainer %s --help' for its options.\n", verb);
    va_end(ap);
    return 2;
}

int cli_num(const char *verb, const char *name, const char *s, long long lo, long long hi,
            long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) {
        cli_usage(verb, "%s needs a whole number in %lld..%lld, not '%s'", name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int cli_add_set(cli_sets *s, const char *verb, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || !eq[1]) {
        cli_usage(verb, "--set needs key=value (a [net] key), not '%s'", kv);
        return -1;
    }
    if (s->n == (int)(sizeof s->kv / sizeof *s->kv)) {
        cli_usage(verb, "too many --set options");
        return -1;
    }
    s->kv[s->n++] = kv;
    return 0;
}

int cli_add_sets(cli_sets *s, const char *verb, const ck_list *set)
{
    for (int i = 0; i < set->n; i++)
        if (cli_add_set(s, verb, set->v[i])) return -1;
    return 0;
}

int cli_cfg_operand(const char *verb, const char **cfg, const char *operand)
{
    if (operand && *cfg) return cli_usage(verb, "unexpected argument '%s' (the cfg is given by --cfg)", operand);
    if (!*cfg) *cfg = operand;
    return 0;
}

trn_cfg *cli_cfg(const char *verb, const char *path, const cli_sets *sets)
{
    trn_err e;
    trn_cfg *c = trn_cfg_read(path, &e);
    if (!c) {
        cli_fail(verb, "%s", e.msg);
        return NULL;
    }
    if (trn_cfg_sections(c) < 1) {
        cli_fail(verb, "%s: no [net] section", path);
        trn_cfg_free(c);
        return NULL;
    }
    for (int i = 0; sets && i < sets->n; i++) {
        char key[256];
        const char *eq = strchr(sets->kv[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - sets->kv[i]), sets->kv[i]);
        if (trn_cfg_set(c, 0, key, eq + 1, &e) != 0) {
            cli_fail(verb, "--set %s: %s", sets->kv[i], e.msg);
            trn_cfg_free(c);
            return NULL;
        }
    }
    return c;
}

int cli_check_sets(const char *verb, const char *path, const cli_sets *sets)
{
    if (!sets->n || !path) return 0;
    trn_cfg *c = cli_cfg(verb, path, sets);
    if (!c) return 1;
    trn_err e;
    int rc = trn_net_check_net_section(c, &e) != 0 ? cli_usage(verb, "--set: %s", e.msg) : 0;
    trn_cfg_free(c);
    return rc;
}

static int det_given; /* --determinism was given: DETERMINISM is not read */

int cli_determinism(const char *verb, const char *opt)
{
    if (!opt && det_given) return 0;
    const char *s = opt ? opt : getenv("DETERMINISM");
    det_given |= opt != NULL;
    if (!s || !*s) return 0;
    int m = trn_det_parse(s);
    if (m < 0) {
        cli_usage(verb, "%s '%s' is not valid: use default (OpenBLAS, the fastest) or portable "
                  "(the same bytes on x86-64 and aarch64)", opt ? "--determinism" : "DETERMINISM", s);
        return -1;
    }
    trn_set_determinism((trn_det_mode)m);
    return 0;
}

int cli_threads(const char *verb, const char *opt)
{
    const char *s = opt ? opt : getenv("THREADS");
    long long n = 0;
    if (s && *s && cli_num(verb, opt ? "--threads" : "THREADS", s, 1, 1024, &n) != 0) return -1;
    trn_set_threads((int)n);
    return cli_determinism(verb, NULL);
}

void cli_basename(const char *path, char *out, size_t size)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    snprintf(out, size, "%.*s", (int)n, b);
}

static void usage(FILE *out) { fputs(usage_text, out); }

/* The products' path on this CPU (gemm_path.c): make print-config and the
 * catalog's build metadata record it. */
static void version_extra(FILE *out)
{
    char line[256];
    trn_gemm_describe(line, sizeof line);
    fprintf(out, "GEMM: %s\n", line);
}

int main(int argc, char **argv)
{
    static const ck_verb verbs[] = {
        CK_VERB("train", "train a cfg on a Darknet classifier data set, with checkpoints and --resume", cli_train),
        CK_VERB("valid", "top-1, top-k and the confusion matrix of a split (--json for scripts)", cli_valid),
        CK_VERB("predict", "the top-k classes of images, with their names", cli_predict),
        CK_VERB("info", "per-layer table (kind, shapes, parameters, MACs, output bytes) and totals", cli_info),
        CK_VERB("bench", "images/s and GFLOPS of the forward and of a training step", cli_bench),
    };
    static const char examples[] =
        "Train the recipe's base on the default data set, then evaluate and use it:\n"
        "  trainer train --cfg recipes/alexnet/base.cfg --data build/data/synth/synth.data --backup run1\n"
        "  trainer train --cfg recipes/alexnet/base.cfg --data build/data/synth/synth.data --backup run1 --resume\n"
        "  trainer valid --cfg recipes/alexnet/base.cfg --weights run1/base.weights --data build/data/synth/synth.data --split test\n"
        "  trainer predict --cfg recipes/alexnet/base.cfg --weights run1/base.weights --names build/data/synth/synth.names photo.png\n"
        "A setting of the cfg's [net] section changed for one run (a bad key is a usage error):\n"
        "  trainer train --cfg recipes/alexnet/base.cfg --data build/data/synth/synth.data --backup run2 --set learning_rate=0.01\n"
        "The layers, their MACs and parameters:\n"
        "  trainer info --cfg recipes/alexnet/base.cfg\n";
    static const ck_prog prog = {
        .name = "trainer", .examples = examples, .version = TRN_VERSION,
        .summary = "train, evaluate and inspect Darknet-compatible CNNs",
        .usage = usage, .version_extra = version_extra, .verbs = verbs, .nverbs = (int)(sizeof verbs / sizeof *verbs),
    };
    return ck_main(&prog, argc, argv);
}
