/*
 * prune_cli.c: the `prune` program: derives variants of a trained base
 * network (prune/README.md). Verbs:
 *   prune rewrite --cfg C --weights W --spec S --seed N --out DIR
 *   prune svd     --cfg C --weights W --spec S --out DIR
 *   prune mimic   --cfg C --weights W --data D.data --from SEL --to SEL
 *                 --with TEXT [--set key=value ...] --seed N --out DIR
 *   prune lasso   --cfg C --weights W --out DIR
 *   prune retarget --cfg C --weights W --tasks X.tasks --cut SEL --seed N --out DIR
 *   prune specialise --cfg C --weights W --data D.data --contexts LIST --seed N --out DIR
 *   prune plan    --cfg C
 * Every deriving verb writes DIR/variant.cfg, DIR/init.weights and
 * DIR/meta.json (meta.json last), or nothing at all when it fails.
 */
#include "prune_cli.h"
#include "prn_impl.h"
#include "clikit.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const usage_main =
    "Usage: prune VERB [OPTIONS]\n"
    "\n"
    "Derives cheaper variants of a trained Darknet network (MCDNN section 4.1.1).\n"
    "\n"
    "Verbs that write variant folders (under --out DIR: variant.cfg, init.weights,\n"
    "meta.json):\n"
    "  rewrite    static rewrites (stride x2, filters /2, connected output /F,\n"
    "             local -> convolutional, layer removal), warm-started from the base\n"
    "  svd        low-rank factorisation of connected layers\n"
    "  mimic      in-place transformation: a fragment replaced by a smaller one\n"
    "             trained to regress the original fragment's outputs\n"
    "  lasso      the dense export of a group-lasso-trained network (MeDNN's SMCD):\n"
    "             zeroed filters and channels removed\n"
    "  retarget   shared trunk + task heads: layers above a cut retrained per\n"
    "             attribute task on the frozen trunk's cached outputs (MCDNN 4.1.3)\n"
    "  specialise (n,p) context models: the last layers retrained for n classes +\n"
    "             \"other\" on frozen lower layers, scored as a cascade (MCDNN 4.1.2)\n"
    "  early-exit FlexDNN's early exits on a frozen trunk: exit search, insertion plan,\n"
    "             lossless thresholds, alpha profile (+ exits.cfg, exits.weights)\n"
    "  grow       NestDNN's freeze-&-grow: one multi-capacity model from a roadmap\n"
    "Verbs that study a network:\n"
    "  plan       the layers of a cfg with their selectors, MACs and parameters\n"
    "  trr        rank every filter by Triplet Response Residual (NestDNN): a ranking\n"
    "             file to read and compare; scan and roadmap compute the same ranking\n"
    "             themselves (--method trr), nothing reads the file\n"
    "  l1         rank every filter by the L1 norm of its weights (trr's baseline; its\n"
    "             file likewise; --method l1)\n"
    "  scan       sensitivity scan: one layer pruned at 10..90% by a ranking\n"
    "  roadmap    iterative filter pruning with retraining (NestDNN's roadmap): the\n"
    "             input of grow\n"
    "\n"
    "Pipelines (mk/variants.mk runs them from a recipe; recipes/README.md):\n"
    "  nested: trr | l1 (optional: read the ranking) -> scan (optional: how each layer\n"
    "          bears pruning) -> roadmap --method trr|l1 --out R -> grow --roadmap\n"
    "          R/roadmap.json --out V\n"
    "  exits:  [rewrite, lasso, ... (optional: the variant to build on)] -> early-exit\n"
    "          --cfg/--weights of it (or of the base) --out V\n"
    "  others: rewrite | svd | mimic | lasso | retarget | specialise --out V\n"
    "  then, per V: trainer train from V/init.weights (when the recipe trains it) ->\n"
    "          trainer valid -> catalog profile, describe -> catalog pack\n"
    "\n"
    "Run `prune VERB --help` for a verb's options. Selectors: conv#k, conv@k, fc#k,\n"
    "fc@k, local#k, local@k, L<i> (prune/README.md). Exit status: 0 on success, 1 on\n"
    "failure, 2 on bad usage.\n";





/* Every option a verb may take, with its doc: a verb's table holds the rows
 * its `known` list names, in this order. */
static const struct {
    const char *name, *arg, *doc;
} opt_docs[] = {
    {"cfg", "C", "the base network (Darknet cfg)"},
    {"weights", "W", "its trained weights (Darknet .weights)"},
    {"data", "D.data", "the data set whose training images feed the regression"},
    {"spec", "S", "what to derive (see above)"},
    {"from", "SEL", "the first layer of the fragment to replace"},
    {"to", "SEL", "the last layer of the fragment to replace"},
    {"with", "TEXT", "the replacement fragment (see above)"},
    {"tasks", "X.tasks", "the tasks file (\"task data-file\" lines, the base's task first)"},
    {"cut", "SEL", "the trunk's last layer (layers above it are retrained)"},
    {"head", "TEXT", "hidden sections of the head before its classifier (default: none)"},
    {"cuts", "LIST", "a sweep of trunk cuts: space-separated SEL or SEL:TEXT (TEXT: that cut's\n"
                     "head, else --head); each task keeps its best cut on the valid split"},
    {"trunk-task", "T", "the task of X.tasks that the trunk's own classifier answers: every other\n"
                        "task gets a head, T none (default: the first task, the base's)"},
    {"contexts", "LIST", "the contexts list (\"id n p data-file\" lines, dataset contexts)"},
    {"generic-cfg", "G", "the cascade's generic model (default: the base --cfg)"},
    {"generic-weights", "GW", "its weights (default: --weights)"},
    {"parent", "ID", "the catalog id of --cfg (default base): the parent of the variants written\n"
                     "(specialise: also their cascade partner unless --generic-cfg names another\n"
                     "model, then base)"},
    {"set", "key=value", "a setting of the fragment's regression training (repeatable)"},
    {"seed", "N", "seed of the new weights (and of the training)"},
    {"out", "DIR", "the variant folder to write"},
    {"threads", "T", "compute threads (default 1)"},
};

int prn_cli_parse(int argc, char **argv, const char *verb, const char *synopsis, const char *about,
                  const char *const *known, prn_cli_opts *o)
{
    memset(o, 0, sizeof *o);
    long long seed = -1, threads = 1;
    ck_list set = {.n = 0};
    char names[24][24];
    ck_opt opts[24];
    int n = 0;
    for (size_t d = 0; d < sizeof opt_docs / sizeof *opt_docs; d++) {
        int k = 0;
        while (known[k] && strcmp(known[k], opt_docs[d].name)) k++;
        if (!known[k]) continue;
        const char *nm = opt_docs[d].name;
        snprintf(names[n], sizeof names[n], "--%s", nm);
        ck_opt r = {names[n], opt_docs[d].arg, CK_STR, NULL, 0, 0, opt_docs[d].doc};
        if (!strcmp(nm, "set")) r.type = CK_LIST, r.dst = &set;
        else if (!strcmp(nm, "seed")) r.type = CK_INT, r.dst = &seed, r.hi = 4611686018427387904.0;
        else if (!strcmp(nm, "threads")) r.type = CK_INT, r.dst = &threads, r.lo = 1, r.hi = 1024;
        else r.dst = !strcmp(nm, "cfg")     ? (void *)&o->cfg
                   : !strcmp(nm, "weights") ? (void *)&o->weights
                   : !strcmp(nm, "spec")    ? (void *)&o->spec
                   : !strcmp(nm, "out")     ? (void *)&o->out
                   : !strcmp(nm, "data")    ? (void *)&o->data
                   : !strcmp(nm, "from")    ? (void *)&o->from
                   : !strcmp(nm, "to")      ? (void *)&o->to
                   : !strcmp(nm, "tasks")   ? (void *)&o->tasks
                   : !strcmp(nm, "cut")     ? (void *)&o->cut
                   : !strcmp(nm, "head")    ? (void *)&o->head
                   : !strcmp(nm, "cuts")    ? (void *)&o->cuts
                   : !strcmp(nm, "contexts") ? (void *)&o->contexts
                   : !strcmp(nm, "generic-cfg") ? (void *)&o->generic_cfg
                   : !strcmp(nm, "generic-weights") ? (void *)&o->generic_weights
                   : !strcmp(nm, "parent") ? (void *)&o->parent
                   : !strcmp(nm, "trunk-task") ? (void *)&o->trunk_task
                                            : (void *)&o->with;
        opts[n++] = r;
    }
    opts[n] = (ck_opt){0};
    const ck_verb v = {verb, NULL, NULL, synopsis, about, opts, NULL};
    const char *extra;
    int rc;
    if (ck_parse("prune", &v, argc + 1, argv - 1, &extra, 0, &rc) < 0) {
        o->help = rc == 0;
        return rc == 0 ? 0 : -1;
    }
    if (set.n > PRN_CLI_MAX_SET) {
        ck_usage("prune", verb, "more than %d --set options", PRN_CLI_MAX_SET);
        return -1;
    }
    for (int k = 0; k < set.n; k++) o->set[k] = set.v[k];
    o->nset = set.n;
    o->have_seed = seed >= 0;
    o->seed = o->have_seed ? (uint64_t)seed : 0;
    o->threads = (int)threads;
    return 0;
}

int prn_cli_parent(const prn_cli_opts *o, const char **parent, trn_err *err)
{
    const char *p = o->parent ? o->parent : "base";
    int bad = !*p || strlen(p) > 64;
    for (const char *q = p; *q; q++)
        bad |= !(islower((unsigned char)*q) || isdigit((unsigned char)*q) || (q > p && strchr("_.-", *q)));
    if (bad) return trn_errf(err, "--parent '%s' is not a variant id (lower-case letters, digits, '_', '.', '-')", p);
    *parent = p;
    return 0;
}

int prn_cli_require(const prn_cli_opts *o, const char *verb, const char *const *names, trn_err *err)
{
    for (int i = 0; names[i]; i++) {
        const char *n = names[i];
        int have = !strcmp(n, "cfg")       ? !!o->cfg
                 : !strcmp(n, "weights")   ? !!o->weights
                 : !strcmp(n, "spec")      ? !!o->spec
                 : !strcmp(n, "out")       ? !!o->out
                 : !strcmp(n, "data")      ? !!o->data
                 : !strcmp(n, "from")      ? !!o->from
                 : !strcmp(n, "to")        ? !!o->to
                 : !strcmp(n, "with")      ? !!o->with
                 : !strcmp(n, "tasks")     ? !!o->tasks
                 : !strcmp(n, "cut")       ? !!o->cut
                 : !strcmp(n, "contexts")  ? !!o->contexts
                 : !strcmp(n, "seed")      ? o->have_seed
                                           : 1;
        if (!have) {
            (void)verb;
            return trn_errf(err, "--%s is required", n);
        }
    }
    return 0;
}

int prn_cli_need(const char *need[][2], size_t n, long long seed, trn_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (!need[i][1]) return trn_errf(err, "--%s is required", need[i][0]);
    if (seed < 0) return trn_errf(err, "--seed is required");
    return 0;
}

int prn_cli_own_parse(const ck_verb *v, int argc, char **argv, int *rc)
{
    const char *extra;
    int rc0;
    if (ck_parse("prune", v, argc + 1, argv - 1, &extra, 0, &rc0) >= 0) return 0;
    *rc = rc0 == 0 ? 0 : -3;
    return 1;
}

int prn_cli_need_out(const char *need[][2], size_t n, long long seed, const char *out, int dir, trn_err *err)
{
    if (prn_cli_need(need, n, seed, err)) return -2;
    return prn_cli_out_ok(out, dir, err) ? -1 : 0;
}

/* The nearest existing folder above path into buf (a file's: its own
 * folder, which must exist: files are written, folders made); -1 with err
 * when it is not a folder. */
static int existing_parent(const char *path, int dir, char *buf, size_t size, trn_err *err)
{
    struct stat st;
    snprintf(buf, size, "%s", path);
    for (int up = 0;; up++) {
        if (up == 1 && !dir)
            return trn_errf(err, "--out %s: the folder %s does not exist (make it first)", path, buf);
        char *slash = strrchr(buf, '/');
        if (!slash) {
            snprintf(buf, size, ".");
        } else if (slash == buf) {
            buf[1] = 0;
        } else {
            *slash = 0;
        }
        if (stat(buf, &st) == 0) {
            if (!S_ISDIR(st.st_mode)) return trn_errf(err, "--out %s: %s is not a folder", path, buf);
            return 0;
        }
        if (errno != ENOENT && errno != ENOTDIR) return trn_errf(err, "--out %s: %s: %s", path, buf, strerror(errno));
        if (!strcmp(buf, ".") || !strcmp(buf, "/")) return trn_errf(err, "--out %s: no folder above it", path);
    }
}

int prn_cli_out_ok(const char *path, int dir, trn_err *err)
{
    char where[4096];
    struct stat st;
    if (!path || !*path) return trn_errf(err, "--out is empty");
    if (strlen(path) >= sizeof where) return trn_errf(err, "--out %.60s...: path too long", path);
    int exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT && errno != ENOTDIR) return trn_errf(err, "--out %s: %s", path, strerror(errno));
    if (exists && dir && !S_ISDIR(st.st_mode))
        return trn_errf(err, "--out %s exists and is not a folder (give a folder: it is made when missing)", path);
    if (exists && !dir && S_ISDIR(st.st_mode)) return trn_errf(err, "--out %s is a folder: give a file name", path);
    if (exists && dir) snprintf(where, sizeof where, "%s", path);
    else if (existing_parent(path, dir, where, sizeof where, err) != 0) return -1;
    if (access(where, W_OK | X_OK) != 0)
        return trn_errf(err, "--out %s: cannot write in %s: %s", path, where, strerror(errno));
    return 0;
}

int prn_cli_method(const char *method, trn_err *err)
{
    int m = prn_rank_method_parse(method);
    if (m < 0) return trn_errf(err, "--method '%s' is not a ranking: use trr, l1 or random", method);
    return m;
}

int prn_cli_finish(prn_variant *v, const char *out, trn_err *err)
{
    if (prn_variant_write(v, out, err) != 0) return -1;
    printf("%s: %s\n", out, v->description);
    return 0;
}

int prn_cli_compute(int threads, trn_err *err)
{
    trn_set_threads(threads);
    const char *det = getenv("DETERMINISM");
    if (det && *det) {
        int m = trn_det_parse(det);
        if (m < 0) return trn_errf(err, "DETERMINISM '%s' is not valid: use default or portable", det);
        trn_set_determinism((trn_det_mode)m);
    }
    return 0;
}

int prn_cli_head_opts(const prn_cli_opts *o, prn_head_opts *ho, trn_err *err)
{
    prn_head_opts_defaults(ho);
    for (int i = 0; i < o->nset; i++)
        if (prn_head_opts_set(ho, o->set[i], err)) return -1;
    ho->with = o->head;
    ho->seed = o->seed;
    return 0;
}

trn_net *prn_cli_net_like(const trn_cfg *cfg, const trn_net *src, int batch, int infer_only, uint64_t seed,
                          trn_err *err)
{
    return prn_net_like(cfg, src, batch, infer_only, seed, 1, err);
}

static int cmd_rewrite(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "spec", "seed", "out", "threads", NULL};
    static const char *const need[] = {"cfg", "weights", "spec", "seed", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "rewrite",
                      "--cfg C --weights W --spec S --seed N --out DIR [--threads T]",
                      "Applies up to three rewrites joined by '+' to the base network C (trained\n"
                      "weights W): stride2:SEL, half:SEL, fcdivF:SEL (F = 2, 4, 8, 16, 32),\n"
                      "local2conv:SEL, remove:SEL; e.g. --spec stride2:conv#1+half:conv#2+fcdiv4:fc#1.\n"
                      "Selectors name layers of the base. The variant's weights start from seed N,\n"
                      "with every layer whose parameter shapes are unchanged copied from W.\n"
                      "Writes DIR/variant.cfg, DIR/init.weights, DIR/meta.json.\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "rewrite", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    trn_set_threads(o.threads);
    trn_cfg *cfg = trn_cfg_read(o.cfg, err);
    if (!cfg) return -1;
    int has_local = 0;
    for (int s = 1; s < trn_cfg_sections(cfg); s++)
        has_local |= strcmp(trn_cfg_section_type(cfg, s), "local") == 0;
    trn_net *base = has_local ? NULL : prn_cli_load_base(cfg, o.weights, 1, err);
    prn_variant v;
    int rc = -1;
    if ((has_local || base) && prn_rewrite(cfg, base, o.weights, o.spec, o.seed, &v, err) == 0) {
        rc = prn_cli_finish(&v, o.out, err);
        prn_variant_free(&v);
    }
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}

static int cmd_svd(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "spec", "seed", "out", "threads", NULL};
    static const char *const need[] = {"cfg", "weights", "spec", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "svd",
                      "--cfg C --weights W --spec S --out DIR [--seed N] [--threads T]",
                      "Replaces connected layers by two of rank k (LAPACKE_sgesdd): SEL:Fx picks the\n"
                      "rank that makes the layer F times smaller, SEL:rK takes rank K; several joined\n"
                      "by '+', e.g. --spec fc#1:8x+fc#2:r32. The weights are written directly\n"
                      "(--seed is accepted for a uniform command line; nothing is random).\n"
                      "Writes DIR/variant.cfg, DIR/init.weights, DIR/meta.json.\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "svd", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    trn_set_threads(o.threads);
    trn_cfg *cfg = trn_cfg_read(o.cfg, err);
    if (!cfg) return -1;
    trn_net *base = prn_cli_load_base(cfg, o.weights, 1, err);
    prn_variant v;
    int rc = -1;
    if (base && prn_svd(cfg, base, o.spec, &v, err) == 0) {
        rc = prn_cli_finish(&v, o.out, err);
        prn_variant_free(&v);
    }
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}

static int cmd_lasso(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", "weights", "seed", "out", NULL};
    static const char *const need[] = {"cfg", "weights", "out", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "lasso", "--cfg C --weights W --out DIR [--seed N]",
                      "Exports the network C with weights W, trained with the group-lasso keys\n"
                      "(trainer train --set lasso_filter=... lasso_channel=...; trainer/README.md),\n"
                      "as a smaller dense Darknet model: every filter whose group is zero and every\n"
                      "input channel no weight reads is removed, with the layers around it\n"
                      "(prune/README.md). The outputs are unchanged. Zero shape-wise columns stay\n"
                      "(a dense convolution cannot skip them): meta.json reports them. --seed is\n"
                      "accepted for a uniform command line; nothing is random.\n"
                      "Writes DIR/variant.cfg, DIR/init.weights, DIR/meta.json.\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "lasso", need, err)) return -2;
    if (prn_cli_out_ok(o.out, 1, err)) return -1;
    trn_cfg *cfg = trn_cfg_read(o.cfg, err);
    if (!cfg) return -1;
    trn_net *base = prn_cli_load_base(cfg, o.weights, 1, err);
    prn_variant v;
    int rc = -1;
    if (base && prn_lasso(cfg, base, &v, err) == 0) {
        rc = prn_cli_finish(&v, o.out, err);
        prn_variant_free(&v);
    }
    trn_net_free(base);
    trn_cfg_free(cfg);
    return rc;
}

static void shape_text(trn_shape s, char *buf, size_t size)
{
    snprintf(buf, size, "%dx%dx%d", s.c, s.h, s.w);
}

static int cmd_plan(int argc, char **argv, trn_err *err)
{
    static const char *const known[] = {"cfg", NULL};
    static const char *const need[] = {"cfg", NULL};
    prn_cli_opts o;
    if (prn_cli_parse(argc, argv, "plan",
                      "--cfg C",
                      "Prints every layer of C with the selectors that name it, its output shape,\n"
                      "MACs and parameters (per image).\n",
                      known, &o))
        return -3;
    if (o.help) return 0;
    if (prn_cli_require(&o, "plan", need, err)) return -2;
    trn_cfg *cfg = trn_cfg_read(o.cfg, err);
    if (!cfg) return -1;
    prn_plan *p = prn_plan_create(cfg, err);
    trn_cfg_free(cfg);
    if (!p) return -1;
    printf("%-5s %-14s %-22s %-14s %14s %12s\n", "layer", "type", "selectors", "output (cxhxw)",
           "MACs", "params");
    uint64_t macs = 0, params = 0;
    for (int i = 0; i < prn_plan_layers(p); i++) {
        const prn_layer *l = prn_plan_layer(p, i);
        char sel[64] = "", shape[48], idx[16];
        if (l->kind != PRN_KIND_OTHER) {
            snprintf(sel, sizeof sel, "%s@%d", prn_kind_name(l->kind), l->order);
            if (l->rank)
                snprintf(sel + strlen(sel), sizeof sel - strlen(sel), " %s#%d",
                         prn_kind_name(l->kind), l->rank);
            if (l->classifier) snprintf(sel + strlen(sel), sizeof sel - strlen(sel), " (classifier)");
        }
        shape_text(l->out, shape, sizeof shape);
        snprintf(idx, sizeof idx, "L%d", i);
        printf("%-5s %-14s %-22s %-14s %14" PRIu64 " %12" PRIu64 "\n", idx, l->type, sel, shape,
               l->macs, l->params);
        macs += l->macs;
        params += l->params;
    }
    printf("%-5s %-14s %-22s %-14s %14" PRIu64 " %12" PRIu64 "\n", "total", "", "", "", macs, params);
    prn_plan_free(p);
    return 0;
}

/* Runs a verb: its errors are "prune VERB: error: ...", exit 1; its usage
 * errors (-2) a reason and the hint to run --help, exit 2. */
static int run_verb(const char *name, int (*fn)(int, char **, trn_err *), int argc, char **argv)
{
    trn_err err = {{0}};
    int r = fn(argc - 1, argv + 1, &err);
    if (r == -2) return ck_usage("prune", name, "%s", err.msg[0] ? err.msg : "bad usage");
    if (r == -3) return 2; /* the kit said why */
    if (r != 0) {
        fprintf(stderr, "prune %s: error: %s\n", name, err.msg[0] ? err.msg : "failed");
        return 1;
    }
    return 0;
}

static int run_rewrite(int argc, char **argv) { return run_verb("rewrite", cmd_rewrite, argc, argv); }
static int run_svd(int argc, char **argv) { return run_verb("svd", cmd_svd, argc, argv); }
static int run_mimic(int argc, char **argv) { return run_verb("mimic", prn_cli_mimic, argc, argv); }
static int run_lasso(int argc, char **argv) { return run_verb("lasso", cmd_lasso, argc, argv); }
static int run_plan(int argc, char **argv) { return run_verb("plan", cmd_plan, argc, argv); }
static int run_specialise(int argc, char **argv)
{
    return run_verb("specialise", prn_cli_specialise, argc, argv);
}
static int run_trr(int argc, char **argv) { return run_verb("trr", prn_cli_trr, argc, argv); }
static int run_l1(int argc, char **argv) { return run_verb("l1", prn_cli_l1, argc, argv); }
static int run_roadmap(int argc, char **argv) { return run_verb("roadmap", prn_cli_roadmap, argc, argv); }
static int run_early_exit(int argc, char **argv) { return run_verb("early-exit", prn_cli_early_exit, argc, argv); }
static int run_grow(int argc, char **argv) { return run_verb("grow", prn_cli_grow, argc, argv); }
static int run_scan(int argc, char **argv) { return run_verb("scan", prn_cli_scan, argc, argv); }
static int run_retarget(int argc, char **argv)
{
    return run_verb("retarget", prn_cli_retarget, argc, argv);
}

static void usage(FILE *out) { fputs(usage_main, out); }

int main(int argc, char **argv)
{
    static const ck_verb verbs[] = {
        CK_VERB("rewrite", "static rewrites (stride x2, filters /2, connected output /F, local -> convolutional, layer removal)", run_rewrite),
        CK_VERB("svd", "low-rank factorisation of connected layers", run_svd),
        CK_VERB("mimic", "in-place transformation: a fragment replaced by a smaller one trained to regress the original", run_mimic),
        CK_VERB("lasso", "the dense export of a group-lasso-trained network: zeroed filters and channels removed", run_lasso),
        CK_VERB("retarget", "task heads on a frozen shared trunk, trained on its cached outputs", run_retarget),
        CK_VERB("specialise", "(n,p) context models: the classifier retrained on frozen layers, scored as a cascade", run_specialise),
        CK_VERB("plan", "the layers of a cfg with their selectors, MACs and parameters", run_plan),
        CK_VERB("trr", "rank every filter by NestDNN's Triplet Response Residual (a ranking file)", run_trr),
        CK_VERB("l1", "rank every filter by the L1 norm of its weights (the baseline of trr)", run_l1),
        CK_VERB("scan", "the sensitivity scan: one layer pruned by a ranking at a time, no retraining", run_scan),
        CK_VERB("early-exit", "FlexDNN early exits: exit search, insertion plan, lossless thresholds, alpha profile", run_early_exit),
        CK_VERB("roadmap", "NestDNN's pruning roadmap: prune by a ranking, retrain, until the minimum accuracy fails", run_roadmap),
        CK_VERB("grow", "NestDNN's freeze-&-grow: one multi-capacity model from a pruning roadmap", run_grow),
    };
    static const char examples[] =
        "The layers of a cfg with their selectors, then a static rewrite of it:\n"
        "  prune plan --cfg recipes/alexnet/base.cfg\n"
        "  prune rewrite --cfg base.cfg --weights base.weights --spec 'stride2:conv#2+fcdiv4:fc#1' --seed 1 --out v/rw\n"
        "The nested pipeline: a ranking to read, the roadmap, freeze-&-grow:\n"
        "  prune trr --cfg base.cfg --weights base.weights --data synth.data --seed 1 --out trr.json\n"
        "  prune roadmap --cfg base.cfg --weights base.weights --data synth.data --method trr --seed 1 --out v/nested/roadmap\n"
        "  prune grow --roadmap v/nested/roadmap/roadmap.json --data synth.data --seed 1 --out v/nested\n"
        "Early exits on the base:\n"
        "  prune early-exit --cfg base.cfg --weights base.weights --data synth.data --seed 1 --out v/flexdnn\n";
    static const ck_prog prog = {
        .name = "prune", .examples = examples, .version = PRN_VERSION,
        .summary = "derive cheaper variants of a trained Darknet network",
        .usage = usage, .verbs = verbs, .nverbs = (int)(sizeof verbs / sizeof *verbs),
    };
    return ck_main(&prog, argc, argv);
}

