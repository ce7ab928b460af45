/*
 * cli_train.c: `trainer train`: a cfg on a Darknet classifier data set,
 * with atomic checkpoints, --resume, and a live progress line.
 */
#include "cli.h"
#include "clikit.h"

#include <signal.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

typedef struct feed {
    trn_dataset *ds;
    trn_loader *loader;
    trn_loader_opts lo;
    trn_net *net;
} feed;

/* The loader is opened on the first batch: a resumed run has taken its
 * checkpoint's seed by then. */
static int next_batch(void *ctx, uint64_t index, float *x, float *y, trn_err *err)
{
    feed *f = ctx;
    if (!f->loader) {
        f->lo.seed = trn_net_seed(f->net);
        f->loader = trn_loader_open(f->ds, TRN_SPLIT_TRAIN, &f->lo, err);
        if (!f->loader) return -1;
    }
    return trn_loader_get(f->loader, index, x, y, err);
}

/* Validation on the valid split: inference forwards of the training
 * network, batch by batch, in the split's order (no shuffling, no
 * augmentation). */
typedef struct vfeed {
    trn_loader *loader;
    size_t n;
    float *x, *y;
    int batch, classes;
    size_t pstride; /* outputs per image (multi-task: all groups; the first task's come first) */
    size_t ystride; /* truth values per image (multi-task: ntasks groups of `group`) */
    /* Multi-task: every task's top-1 within its group's first ncls[t]
     * outputs, of the last validation (task 0's is the returned one). */
    int ntasks, group, ncls[TRN_MTASK_MAX];
    uint64_t task_good[TRN_MTASK_MAX];
    const trn_mtask *tk;
} vfeed;

typedef struct show {
    int tty, quiet;
    double last;
    uint64_t max;
    trn_train_progress end;   /* the last update's figures */
    trn_train_progress val;   /* the last validation's */
    int any;
    const vfeed *vf;          /* multi-task: every task's validation top-1 */
} show;

/* Multi-task: " (per task: identity 0.9300, shape 0.9500, ...)" of the
 * last validation into buf; empty for one task. */
static void fmt_tasks(const vfeed *v, uint64_t n, char *buf, size_t size)
{
    buf[0] = '\0';
    if (!v || v->ntasks < 2 || !n) return;
    size_t u = 0;
    for (int t = 0; t < v->ntasks && u < size; t++) {
        int w = snprintf(buf + u, size - u, "%s%s %.4f%s", t ? ", " : " (per task: ", v->tk->name[t],
                         (double)v->task_good[t] / (double)n, t == v->ntasks - 1 ? ")" : "");
        if (w < 0) break;
        u += (size_t)w;
    }
}

static int validate_batches(void *ctx, trn_net *net, uint64_t *correct, uint64_t *total, trn_err *err)
{
    vfeed *v = ctx;
    uint64_t good = 0, seen = 0;
    memset(v->task_good, 0, sizeof v->task_good);
    for (uint64_t b = 0; b * (uint64_t)v->batch < v->n; b++) {
        if (trn_loader_get(v->loader, b, v->x, v->y, err) != 0 || trn_net_forward(net, v->x, err) != 0) return -1;
        const float *p = trn_net_output(net);
        for (int j = 0; j < v->batch && seen < v->n; j++, seen++) {
            const float *pj = p + (size_t)j * v->pstride, *yj = v->y + (size_t)j * v->ystride;
            good += trn_argmax(pj, v->classes) == trn_argmax(yj, v->classes);
            for (int t = 1; t < v->ntasks; t++) {
                size_t o = (size_t)t * (size_t)v->group;
                v->task_good[t] += trn_argmax(pj + o, v->ncls[t]) == trn_argmax(yj + o, v->ncls[t]);
            }
        }
    }
    v->task_good[0] = good;
    *correct = good;
    *total = seen;
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void fmt_eta(double s, char *buf, size_t size)
{
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else
        snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
}

static void progress(const trn_train_progress *p, void *ctx)
{
    show *s = ctx;
    s->end = *p;
    s->any = 1;
    if (p->validated) s->val = *p;
    if (s->quiet) return;
    if (p->validated) {
        char per[1024];
        fmt_tasks(s->vf, p->val_images, per, sizeof per);
        fprintf(stderr, "%svalidation at update %llu: top-1 %.4f [%.4f, %.4f] on %llu images%s%s\n", s->tty ? "\r" : "",
                (unsigned long long)p->batch, p->val_top1, p->val_lo, p->val_hi,
                (unsigned long long)p->val_images, per, p->plateau ? " (plateau: stopping)" : "");
        s->last = 0;
    }
    double t = now_s();
    int last = p->batch >= p->max_batches;
    if (!s->tty && !last && !p->checkpoint && t - s->last < 1.0) return;
    s->last = t;
    char eta[32];
    fmt_eta(p->eta_s, eta, sizeof eta);
    char line[256];
    snprintf(line, sizeof line, "update %llu/%llu  loss %.4f  avg %.4f  lr %.6g  %.1f images/s  ETA %s%s",
             (unsigned long long)p->batch, (unsigned long long)p->max_batches, p->loss, p->avg_loss,
             p->rate, p->images_per_s, eta, p->checkpoint ? "  [checkpoint]" : "");
    if (s->tty)
        fprintf(stderr, "\r%-100s%s", line, last ? "\n" : "");
    else
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
}

/* The first folder of path (itself or an ancestor) that does not exist yet,
 * into out (empty when path exists): what a failed run must take away. */
static void first_missing(const char *path, char *out, size_t size)
{
    char p[4096];
    struct stat st;
    out[0] = '\0';
    snprintf(p, sizeof p, "%s", path);
    for (;;) {
        size_t n = strlen(p);
        while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
        if (stat(p, &st) == 0) return;
        snprintf(out, size, "%s", p);
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) return;
        *slash = '\0';
    }
}

/* Removes the empty folders from path up to top, which this run created. */
static void remove_made(const char *path, const char *top)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", path);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
    while (rmdir(p) == 0 && strcmp(p, top) != 0) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) break;
        *slash = '\0';
    }
}

/* Multi-task run: the widened network (BASE.weights as trn_train wrote
 * it) is written as BASE.tasks.weights beside BASE.tasks.cfg, and
 * BASE.weights anew as the first task's slice (the plain network); both
 * as every output is written (trn_atomic_open). */
static int publish_tasks(const trn_net *net, const trn_cfg *mcfg, trn_net *plain, const char *dir,
                         const char *base, trn_err *err)
{
    char w[4200], tw[4200], tc[4200];
    snprintf(w, sizeof w, "%s/%s.weights", dir, base);
    snprintf(tw, sizeof tw, "%s/%s.tasks.weights", dir, base);
    snprintf(tc, sizeof tc, "%s/%s.tasks.cfg", dir, base);
    if (trn_mtask_slice(net, plain, err) != 0 || trn_cfg_write(mcfg, tc, err) != 0) return -1;
    if (trn_weights_save(net, tw, err) != 0) return -1;
    return trn_weights_save(plain, w, err);
}

/* What `trainer train` was asked to do (its options, parsed). */
typedef struct train_args {
    const char *cfgp, *data, *weights, *backup, *tasksp, *taskw;
    const cli_sets *sets;
    long long seed, every, lthreads, cache, val_every, val_images, plateau;
    int resume, clear, quiet;
} train_args;

/* Everything a run holds (freed by run_free). */
typedef struct train_run {
    trn_cfg *cfg, *mcfg;
    trn_net *net, *plain;
    trn_mtask tk;
    feed f;
    vfeed vf;
} train_run;

static void run_free(train_run *u)
{
    trn_loader_close(u->vf.loader);
    free(u->vf.x);
    free(u->vf.y);
    trn_loader_close(u->f.loader);
    trn_net_free(u->net);
    trn_net_free(u->plain);
    trn_cfg_free(u->cfg);
    trn_cfg_free(u->mcfg);
    trn_mtask_free(&u->tk);
    trn_dataset_close(u->f.ds);
}

/* The network to train: --cfg's, or with --tasks its widened multi-task
 * form (and the plain model beside it), from --weights when given (a plain
 * model's widened into the multi-task one). 0, or -1 after saying why. */
static int setup_net(const train_args *a, train_run *u)
{
    trn_err e;
    trn_dataset *ds = u->f.ds;
    int classes = trn_dataset_classes(ds);
    if (!(u->cfg = cli_cfg("train", a->cfgp, a->sets))) return -1;
    trn_net_opts no;
    trn_net_opts_defaults(&no);
    no.seed = (uint64_t)a->seed;
    if (a->tasksp) {
        if (trn_mtask_open(a->tasksp, a->data, ds, a->taskw, &u->tk, &e) != 0 ||
            !(u->mcfg = trn_mtask_cfg(u->cfg, &u->tk, classes, &e)) || !(u->plain = trn_net_create(u->cfg, &no, &e)))
            return cli_fail("train", "%s", e.msg), -1;
        if ((int)trn_net_outputs(u->plain) != classes)
            return cli_fail("train", "%s has %zu outputs but %s has %d classes: make the last layer's output %d",
                            a->cfgp, trn_net_outputs(u->plain), a->data, classes, classes), -1;
    }
    if (!(u->net = trn_net_create(u->mcfg ? u->mcfg : u->cfg, &no, &e))) return cli_fail("train", "%s", e.msg), -1;
    if (a->tasksp) {
        trn_net_set_group_weights(u->net, u->tk.w);
    } else if ((int)trn_net_outputs(u->net) != classes) {
        return cli_fail("train", "%s has %zu outputs but %s has %d classes: make the last layer's "
                        "output (or filters) %d", a->cfgp, trn_net_outputs(u->net), a->data, classes, classes), -1;
    }
    if (a->weights && trn_weights_load(u->net, a->weights, &e) != 0) {
        /* With --tasks, the plain model's weights widen into the network. */
        trn_err e2;
        if (!u->plain || trn_weights_load(u->plain, a->weights, &e2) != 0 || trn_mtask_widen(u->plain, u->net, &e2) != 0) {
            if (u->plain)
                cli_fail("train", "%s fits neither the multi-task network (%s) nor the plain --cfg model (%s)",
                         a->weights, e.msg, e2.msg);
            else
                cli_fail("train", "%s", e.msg);
            return -1;
        }
    }
    if (a->clear) trn_net_set_seen(u->net, 0);
    return 0;
}

/* The training loader's options: the net's input, its augmentation, the
 * tasks' labels with --tasks. */
static int setup_feed(const train_args *a, train_run *u)
{
    trn_err e;
    const trn_net_config *nc = trn_net_get_config(u->net);
    feed *f = &u->f;
    trn_loader_opts_defaults(&f->lo);
    f->lo.w = nc->w;
    f->lo.h = nc->h;
    f->lo.c = nc->c;
    f->lo.batch = trn_net_batch(u->net);
    f->lo.augment = 1;
    trn_augment_from_net(u->net, &f->lo.aug);
    f->lo.threads = (int)a->lthreads;
    f->lo.shuffle = 1;
    f->lo.cache_bytes = (size_t)a->cache << 20;
    f->net = u->net;
    if (a->tasksp) {
        f->lo.tasks = (const trn_dataset *const *)u->tk.ds;
        f->lo.ntasks = u->tk.n;
        f->lo.group = u->tk.group;
    }
    if (trn_augment_check(&f->lo.aug, a->cfgp, &e) != 0) return cli_fail("train", "%s", e.msg), -1;
    return 0;
}

/* Validation on the valid split when asked for and there is one. */
static int setup_validation(const train_args *a, train_run *u)
{
    trn_err e;
    trn_dataset *ds = u->f.ds;
    vfeed *vf = &u->vf;
    if (!a->val_every || !trn_dataset_has(ds, TRN_SPLIT_VALID) || !trn_dataset_count(ds, TRN_SPLIT_VALID)) {
        if (a->plateau) return cli_fail("train", "--plateau needs a valid split in %s (its 'valid' key)", a->data), -1;
        return 0;
    }
    trn_loader_opts vo = u->f.lo;
    vo.augment = 0;
    vo.shuffle = 0;
    vo.cache_bytes = 0;
    vf->pstride = trn_net_outputs(u->net);
    vf->batch = trn_net_batch(u->net);
    vf->classes = trn_dataset_classes(ds);
    vf->ystride = a->tasksp ? (size_t)u->tk.n * (size_t)u->tk.group : (size_t)vf->classes;
    vf->ntasks = a->tasksp ? u->tk.n : 0;
    vf->group = u->tk.group;
    vf->tk = &u->tk;
    for (int t = 0; t < vf->ntasks; t++) vf->ncls[t] = trn_dataset_classes(u->tk.ds[t]);
    vf->n = trn_dataset_count(ds, TRN_SPLIT_VALID);
    if (a->val_images && (size_t)a->val_images < vf->n) vf->n = (size_t)a->val_images;
    vf->x = malloc((size_t)vf->batch * trn_net_inputs(u->net) * sizeof *vf->x);
    vf->y = malloc((size_t)vf->batch * vf->ystride * sizeof *vf->y);
    if (!vf->x || !vf->y) return cli_fail("train", "out of memory"), -1;
    if (!(vf->loader = trn_loader_open(ds, TRN_SPLIT_VALID, &vo, &e))) return cli_fail("train", "%s", e.msg), -1;
    return 0;
}

/* The summary line of a run that trained (r >= 0). */
static void print_summary(const show *sh, int r, const char *backup, const char *base)
{
    char val[1300] = "no validation", per[1024];
    if (sh->val.validated) {
        fmt_tasks(sh->vf, sh->val.val_images, per, sizeof per);
        snprintf(val, sizeof val, "validation top-1 %.4f [%.4f, %.4f] on %llu images%s (best %.4f at update %llu)",
                 sh->val.val_top1, sh->val.val_lo, sh->val.val_hi, (unsigned long long)sh->val.val_images, per,
                 sh->val.best_top1, (unsigned long long)sh->val.best_batch);
    }
    fprintf(stderr, "trainer train: summary: %s at update %llu/%llu, loss %.4f (avg %.4f), %.1f images/s, %s; "
            "metrics in %s/%s.metrics.jsonl\n",
            r == 1 ? "stopped" : sh->end.plateau ? "plateau, stopped early" : "done",
            (unsigned long long)sh->end.batch, (unsigned long long)sh->end.max_batches, sh->end.loss,
            sh->end.avg_loss, sh->end.images_per_s, val, backup, base);
}

/* Trains (trn_train) with checkpoints, progress and validation, then
 * publishes the weights (with --tasks, both networks). The exit status. */
static int train(const train_args *a, train_run *u, const char *backup, const char *base)
{
    trn_err e;
    int rc = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    vfeed *vf = &u->vf;
    show sh = {.tty = isatty(STDERR_FILENO), .quiet = a->quiet, .vf = vf->loader ? vf : NULL};
    trn_train_opts to = {
        .next_batch = next_batch, .batch_ctx = &u->f, .backup_dir = backup, .base = base,
        .checkpoint_every = (uint64_t)a->every, .resume = a->resume, .progress = progress,
        .progress_ctx = &sh, .stop = &stop_flag, .validate = vf->loader ? validate_batches : NULL,
        .validate_ctx = vf, .validate_every = vf->loader ? (uint64_t)a->val_every : 0,
        .plateau_patience = (uint64_t)a->plateau, .metrics_log = 1,
    };
    if (!a->quiet)
        fprintf(stderr, "trainer train: %s on %s (%zu images, %d classes), batch %d x %d "
                "subdivisions, seed %llu, %d threads, checkpoints in %s/%s.ckpt\n",
                a->cfgp, a->data, trn_dataset_count(u->f.ds, TRN_SPLIT_TRAIN), trn_dataset_classes(u->f.ds),
                trn_net_batch(u->net), trn_net_get_config(u->net)->subdivisions,
                (unsigned long long)trn_net_seed(u->net), trn_threads(), backup, base);
    char made[4096];
    first_missing(backup, made, sizeof made);
    int r = trn_train(u->net, &to, &e);
    if (r < 0 && made[0]) remove_made(backup, made); /* nothing new is left behind */
    if (r < 0) {
        if (sh.tty && !a->quiet) fputc('\n', stderr);
        cli_fail("train", "%s", e.msg);
    } else if (r == 1) {
        if (sh.tty && !a->quiet) fputc('\n', stderr);
        fprintf(stderr, "trainer train: stopped at update %llu; checkpoint %s/%s.ckpt written: "
                "continue with --resume\n", (unsigned long long)trn_net_current_batch(u->net), backup, base);
        rc = 130;
    } else if (a->tasksp && publish_tasks(u->net, u->mcfg, u->plain, backup, base, &e) != 0) {
        cli_fail("train", "%s", e.msg);
    } else {
        if (!a->quiet && a->tasksp)
            fprintf(stderr, "trainer train: wrote %s/%s.tasks.cfg and %s.tasks.weights (%d tasks)\n", backup,
                    base, base, u->tk.n);
        if (!a->quiet) fprintf(stderr, "trainer train: wrote %s/%s.weights\n", backup, base);
        rc = 0;
    }
    if (r >= 0 && sh.any) print_summary(&sh, r, backup, base);
    return rc;
}

/* The run of parsed options: the data set, the network, the feeds, then
 * the training. The exit status. */
static int run(const train_args *a)
{
    trn_err e;
    train_run u = {0};
    int rc = 1;
    if (!(u.f.ds = trn_dataset_open(a->data, &e))) {
        cli_fail("train", "%s", e.msg);
    } else if (!trn_dataset_has(u.f.ds, TRN_SPLIT_TRAIN) || !trn_dataset_count(u.f.ds, TRN_SPLIT_TRAIN)) {
        cli_fail("train", "%s: no training images (the 'train' key names no list, or an empty one)", a->data);
    } else if (setup_net(a, &u) == 0 && setup_feed(a, &u) == 0 && setup_validation(a, &u) == 0) {
        char base[256];
        cli_basename(a->cfgp, base, sizeof base);
        const char *backup = a->backup ? a->backup
                                       : trn_dataset_backup(u.f.ds) ? trn_dataset_backup(u.f.ds) : "backup";
        rc = train(a, &u, backup, base);
    }
    run_free(&u);
    return rc;
}

int cli_train(int argc, char **argv)
{
    const char *cfgp = NULL, *data = NULL, *weights = NULL, *backup = NULL, *threads = NULL;
    ck_list set = {.n = 0};
    long long seed = 1, every = 100, lthreads = 2, cache = 256, val_every = 100, val_images = 0, plateau = 0;
    int resume = 0, clear = 0, quiet = 0, rc0;
    const char *det = NULL, *tasksp = NULL, *taskw = NULL;
    const ck_opt opts[] = {
        {"--cfg", "FILE", CK_STR, &cfgp, 0, 0, "the network (Darknet cfg)"},
        {"--data", "FILE", CK_STR, &data, 0, 0, "the data set (Darknet .data: classes, train, labels/names, backup)"},
        {"--weights", "FILE", CK_STR, &weights, 0, 0,
         "start from these weights (Darknet .weights) instead of\nrandom ones; their `seen` continues the schedule; with\n"
         "--tasks: the widened network's (BASE.tasks.weights) or the\nplain --cfg model's (a multi-task fine-tune: the other\n"
         "tasks' groups start at 0)"},
        {"--clear", NULL, CK_FLAG, &clear, 0, 0, "reset `seen` to 0 after --weights (restart the schedule)"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "override a [net] key (repeatable), e.g. --set max_batches=500"},
        {"--backup", "DIR", CK_STR, &backup, 0, 0,
         "where checkpoints and weights go (default: the .data's\nbackup key, else 'backup')"},
        {"--seed", "N", CK_INT, &seed, 0, 4611686018427387904.0,
         "seed of the initial weights, dropout, crops, shuffling and\naugmentation (default 1); --resume takes the checkpoint's"},
        {"--checkpoint-every", "N", CK_INT, &every, 0, 1099511627776.0,
         "weight updates between checkpoints (default 100; 0: at the end only)"},
        {"--resume", NULL, CK_FLAG, &resume, 0, 0, "continue from BACKUP/BASE.ckpt when it exists"},
        {"--threads", "N", CK_STR, &threads, 0, 0, "compute threads (default: THREADS, else all cores)"},
        {"--determinism", "MODE", CK_STR, &det, 0, 0, CLI_DETERMINISM_DOC},
        {"--loader-threads", "N", CK_INT, &lthreads, 1, 256, "image decoding threads (default 2)"},
        {"--cache-mb", "N", CK_INT, &cache, 0, 1 << 20, "decoded images kept in memory (default 256)"},
        {"--quiet", NULL, CK_FLAG, &quiet, 0, 0, "no progress output (the final summary line stays)"},
        {"--val-every", "N", CK_INT, &val_every, 0, 1099511627776.0,
         "every N updates (and at the end) measure top-1 on the\ndata set's valid split, printed with its 95% Wilson\n"
         "interval (default 100; 0: never; no valid split: never)"},
        {"--val-images", "N", CK_INT, &val_images, 1, 1099511627776.0,
         "validate on the first N images of the split (default: all)"},
        {"--plateau", "N", CK_INT, &plateau, 0, 1099511627776.0,
         "stop early, writing the weights, after N validations in a\nrow without a better top-1 (default 0: never)"},
        {"--tasks", "FILE", CK_STR, &tasksp, 0, 0,
         "multi-task training: \"task data-file\" lines (the task of\n--data first, e.g. synth.tasks); one trunk learns every\n"
         "task, BASE.weights is the plain --cfg model of the first"},
        {"--task-weights", "LIST", CK_STR, &taskw, 0, 0,
         "loss weight of each task of --tasks, in its order,\ne.g. 1,0.5,0.5,1,1 (default 1 each)"},
        {0},
    };
    const ck_verb verb = {
        "train", NULL, cli_train, "--cfg FILE.cfg --data FILE.data [OPTIONS]",
        "Trains the network on the data set's train split (Darknet's classifier training:\n"
        "SGD with momentum and decay, its learning-rate policies, burn_in, subdivisions,\n"
        "augmentation from the [net] keys) until max_batches weight updates. Writes\n"
        "BACKUP/BASE.ckpt (everything a resumed run needs) every --checkpoint-every\n"
        "updates and at the end, then BACKUP/BASE.weights (Darknet format); BASE is the\n"
        "cfg's file name without extension. Every file is written to a temporary name,\n"
        "fsynced and renamed. Same cfg, data, weights and seed: same bytes out, whatever\n"
        "the thread count; a killed run resumed with --resume ends with the same bytes.\n"
        "A run that fails leaves no new folder behind.\n",
        opts,
        "Every update appends one JSON line to BACKUP/BASE.metrics.jsonl (batch, seen,\n"
        "loss, avg_loss, rate, images_per_s, and on validations val_top1, val_lo, val_hi,\n"
        "val_images; \"plateau\":true on an early stop); a fresh run truncates it.\n"
        "Validation runs inference forwards only, which draw no random numbers: the\n"
        "weights are the same bytes with or without it.\n"
        "\n"
        "On a terminal one progress line is updated in place (update, loss, running loss,\n"
        "learning rate, images/s, ETA); otherwise one plain line per second at most.\n"
        "SIGINT or SIGTERM writes a checkpoint and stops (exit status 130).\n"
        "\n"
        "--tasks: the cfg must end in [connected] output=<classes of --data>, then\n"
        "[softmax]. The run trains that layer widened to T groups of G outputs (T tasks,\n"
        "G the largest class count; a smaller task's group is padded) under a [softmax]\n"
        "groups=T: one cross-entropy per task, each image labelled in every task by the\n"
        "tasks' .data files (which must list the same images), each weighted by\n"
        "--task-weights. It writes BACKUP/BASE.tasks.cfg and BASE.tasks.weights (the\n"
        "widened network) and BACKUP/BASE.weights: the first task's slice, the plain\n"
        "Darknet model of --cfg. Validation scores the first task (the printed lines\n"
        "add every task's top-1 within its group).\n",
    };
    const char *extra;
    if (ck_parse("trainer", &verb, argc, argv, &extra, 0, &rc0) < 0) return rc0;
    cli_sets sets = {0};
    if (cli_add_sets(&sets, "train", &set)) return 2;
    if (!cfgp || !data) return cli_usage("train", "--cfg and --data are required");
    if (clear && !weights) return cli_usage("train", "--clear needs --weights");
    int setrc = cli_check_sets("train", cfgp, &sets);
    if (setrc) return setrc;
    if (cli_determinism("train", det)) return 2;
    if (cli_threads("train", threads)) return 2;
    if (plateau && !val_every) return cli_usage("train", "--plateau needs validations: --val-every N with N > 0");
    if (taskw && !tasksp) return cli_usage("train", "--task-weights needs --tasks");

    train_args a = {cfgp, data, weights, backup, tasksp, taskw, &sets, seed, every, lthreads, cache, val_every,
                    val_images, plateau, resume, clear, quiet};
    return run(&a);
}
