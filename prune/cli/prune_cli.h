/*
 * prune_cli.h: what the `prune` verbs share (private to prune/cli/).
 */
#ifndef PRUNE_CLI_H
#define PRUNE_CLI_H

#include "prn.h"
#include "clikit.h"

#define PRN_CLI_MAX_SET 32

typedef struct prn_cli_opts {
    const char *cfg, *weights, *spec, *out, *data, *from, *to, *with, *tasks, *cut, *head, *contexts,
        *generic_cfg, *generic_weights, *parent, *cuts, *trunk_task;
    const char *set[PRN_CLI_MAX_SET];
    int nset;
    uint64_t seed;
    int have_seed;
    int threads; /* 1 unless --threads */
    int help;
} prn_cli_opts;

/* Parses the options among `known` (NULL-terminated names without dashes;
 * argv[0] is the first word after the verb) with the kit's parser, whose
 * table is built from prune_cli.c's option docs: --help prints the verb's
 * help (synopsis, about, the options) and sets o->help; a usage error is
 * printed with its reason and returns -1. */
int prn_cli_parse(int argc, char **argv, const char *verb, const char *synopsis, const char *about,
                  const char *const *known, prn_cli_opts *o);
/* -1 naming the first option of `names` that was not given. */
int prn_cli_require(const prn_cli_opts *o, const char *verb, const char *const *names, trn_err *err);
/* The same for a verb with its own option table (grow, roadmap, scan): -1
 * with err naming the first of the n {name, value} pairs of need whose value
 * is NULL, or --seed when seed < 0 (not given). */
int prn_cli_need(const char *need[][2], size_t n, long long seed, trn_err *err);
/* The option parse of a verb with its own option table (grow, rank,
 * roadmap, scan), called with the verb's argc/argv (argv[0] its first
 * option): 1 when the verb must return *rc at once (0 after --help, -3 on
 * a usage error, already printed), else 0. */
int prn_cli_own_parse(const ck_verb *v, int argc, char **argv, int *rc);
/* prn_cli_need, then prn_cli_out_ok(out, dir): 0, or the verb's status
 * with err (-2 for a missing option, -1 for an unwritable --out). */
int prn_cli_need_out(const char *need[][2], size_t n, long long seed, const char *out, int dir, trn_err *err);
/* Whether the verb can write its output `path` (a folder when dir, else a
 * file), checked before any work so that a bad --out fails at once, not
 * after minutes of training: an existing path must be a folder (dir) or
 * not one (file); the folder it is or would be made in must be a writable
 * folder. Creates nothing. -1 with err naming --out and the reason. */
int prn_cli_out_ok(const char *path, int dir, trn_err *err);
/* The ranking --method names (trr, l1 or random, prn_rank_method_parse);
 * -1 with err otherwise. */
int prn_cli_method(const char *method, trn_err *err);
/* The catalog id of --cfg (--parent, default "base"): the parent the
 * verb's variants name. -1 with err when --parent is not a variant id. */
int prn_cli_parent(const prn_cli_opts *o, const char **parent, trn_err *err);
/* Writes the variant folder and prints one line about it. */
int prn_cli_finish(prn_variant *v, const char *out, trn_err *err);
/* The compute settings of a training verb: `threads` compute threads and
 * the pipeline's DETERMINISM (mk/train.mk exports it), as trainer train
 * reads them. -1 with err on a bad DETERMINISM. */
int prn_cli_compute(int threads, trn_err *err);
/* A head's training options from the verb's --set, --head and --seed
 * (retarget, specialise). -1 with err on a bad --set. */
int prn_cli_head_opts(const prn_cli_opts *o, prn_head_opts *ho, trn_err *err);
/* A network of cfg (batch, inference only or not, seed) holding src's
 * parameters and its count of images seen (src built from the same cfg).
 * NULL with err. */
trn_net *prn_cli_net_like(const trn_cfg *cfg, const trn_net *src, int batch, int infer_only, uint64_t seed,
                          trn_err *err);

/* The mimic verb (mimic_cli.c). */
int prn_cli_mimic(int argc, char **argv, trn_err *err);
/* The retarget verb (retarget_cli.c). */
int prn_cli_retarget(int argc, char **argv, trn_err *err);
/* The specialise verb (specialise_cli.c). */
int prn_cli_specialise(int argc, char **argv, trn_err *err);

/* The early-exit verb (exits_cli.c). */
int prn_cli_early_exit(int argc, char **argv, trn_err *err);

/* The ranking verbs trr and l1 (rank_cli.c). */
int prn_cli_trr(int argc, char **argv, trn_err *err);
int prn_cli_l1(int argc, char **argv, trn_err *err);
/* The scan verb: the sensitivity scan (scan_cli.c). */
int prn_cli_scan(int argc, char **argv, trn_err *err);
/* The roadmap verb (roadmap_cli.c). */
int prn_cli_roadmap(int argc, char **argv, trn_err *err);

/* The grow verb (grow_cli.c): NestDNN's freeze-&-grow. */
int prn_cli_grow(int argc, char **argv, trn_err *err);

/* The library's data helpers (prune/src/data.c, prn.h) under the names the
 * verbs have always called them by. */
typedef prn_acc rm_acc;
static inline int prn_cli_set_number(const char *kv, size_t *kl, double *v, trn_err *err)
{
    return prn_set_number(kv, kl, v, err);
}
static inline trn_net *prn_cli_load_base(const trn_cfg *cfg, const char *weights, int batch, trn_err *err)
{
    return prn_load_base(cfg, weights, batch, err);
}
static inline int prn_cli_loader_opts(const trn_net *net, const char *where, int batch, uint64_t seed, int threads,
                                      size_t cache_bytes, trn_loader_opts *lo, trn_err *err)
{
    return prn_loader_opts(net, where, batch, seed, threads, cache_bytes, lo, err);
}
static inline int prn_cli_write_json(const char *path, const cJSON *doc, trn_err *err)
{
    return prn_write_json(path, doc, err);
}
static inline int prn_cli_evaluate(trn_net *net, const trn_dataset *ds, trn_split split, int threads, rm_acc *a,
                                   trn_err *err)
{
    return prn_evaluate(net, ds, split, threads, a, NULL, NULL, err);
}
static inline int prn_cli_evaluate_loss(trn_net *net, const trn_dataset *ds, trn_split split, int threads, rm_acc *a,
                                        double *loss, trn_err *err)
{
    return prn_evaluate(net, ds, split, threads, a, loss, NULL, err);
}
static inline int prn_cli_evaluate_preds(trn_net *net, const trn_dataset *ds, trn_split split, int threads,
                                         rm_acc *a, const char *path, trn_err *err)
{
    return prn_evaluate_preds(net, ds, split, threads, a, path, err);
}
static inline cJSON *prn_cli_acc_json(const rm_acc *a)
{
    return prn_acc_json(a);
}
static inline int prn_cli_sample_triplets(const trn_dataset *ds, trn_split split, uint64_t seed, uint64_t count,
                                          size_t **out, trn_err *err)
{
    return prn_sample_triplets_split(ds, split, seed, count, out, err);
}
static inline prn_ranking *prn_cli_rank(trn_net *net, const trn_cfg *cfg, prn_rank_method m, const trn_dataset *ds,
                                        trn_split split, uint64_t seed, uint64_t triplets, prn_trr_at at,
                                        prn_trr_distance dist, trn_err *err)
{
    return prn_rank_data(net, cfg, m, ds, split, seed, triplets, at, dist, err);
}

#endif /* PRUNE_CLI_H */
