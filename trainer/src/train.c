/*
 * train.c: the training loop (Darknet's train_classifier without its data
 * loading): weight updates until max_batches, checkpoints, final weights.
 *
 * Resumed runs are exact: the batches are a pure function of the forward
 * count (seen / batch), dropout and crops draw from the seed and `seen`,
 * and the checkpoint restores weights, `seen` and momentum.
 *
 * Validation (optional) runs inference forwards on held-out images between
 * updates: no random draws, no change to weights, momentum or rolling
 * statistics, so the weights' bytes do not depend on it. A plateau stop
 * counts validations without a new best from this run's start (a resumed
 * run starts counting again: an approximation). The metrics log is one
 * JSON line per update, appended to on --resume.
 */
#include "net.h"
#include "trn.h"
#include "portable.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int join(char *buf, size_t size, const char *dir, const char *base, const char *ext,
                trn_err *err)
{
    int n = snprintf(buf, size, "%s/%s%s", dir, base, ext);
    if (n < 0 || (size_t)n >= size) return trn_errf(err, "path too long: %s/%s%s", dir, base, ext);
    return 0;
}

/* One JSON line of the metrics log; fprintf's errors are caught by the
 * stream's error flag, checked when the log is closed. */
static void log_line(FILE *f, const trn_train_progress *p)
{
    fprintf(f, "{\"batch\":%llu,\"seen\":%llu,\"loss\":%.6g,\"avg_loss\":%.6g,\"rate\":%.6g,\"images_per_s\":%.4g",
            (unsigned long long)p->batch, (unsigned long long)p->seen, p->loss, p->avg_loss, p->rate,
            p->images_per_s);
    if (p->validated)
        fprintf(f, ",\"val_top1\":%.6f,\"val_lo\":%.6f,\"val_hi\":%.6f,\"val_images\":%llu", p->val_top1, p->val_lo,
                p->val_hi, (unsigned long long)p->val_images);
    if (p->plateau) fprintf(f, ",\"plateau\":true");
    fprintf(f, "}\n");
}

/* Validates into p; tracks the best top-1 and the validations since it. */
static int validate(trn_net *net, const trn_train_opts *o, trn_train_progress *p, uint64_t *since_best, trn_err *err)
{
    uint64_t k = 0, n = 0;
    if (o->validate(o->validate_ctx, net, &k, &n, err) != 0) return -1;
    p->validated = 1;
    p->val_correct = k;
    p->val_images = n;
    p->val_top1 = n ? (double)k / (double)n : 0;
    trn_wilson(k, n, &p->val_lo, &p->val_hi);
    if (p->val_top1 > p->best_top1) {
        p->best_top1 = p->val_top1;
        p->best_batch = p->batch;
        *since_best = 0;
    } else {
        ++*since_best;
    }
    p->plateau = o->plateau_patience && *since_best >= o->plateau_patience;
    return 0;
}

/* Knowledge distillation: the teacher named by [net] distill_cfg and
 * distill_weights, built for inference at the student's batch; it must
 * have the student's input and output sizes and end in a softmax whose
 * input is the logits. */
static trn_net *teacher_load(const trn_net *net, trn_err *err)
{
    const trn_net_config *c = &net->cfg;
    trn_net_opts to;
    trn_net_opts_defaults(&to);
    to.batch = net->batch;
    to.infer_only = 1;
    trn_net *t = trn_net_load(c->distill_cfg, c->distill_weights, &to, err);
    if (!t) return NULL;
    int n = trn_net_layers(t);
    trn_layer_info last;
    trn_net_layer_info(t, n - 1, &last);
    if (trn_net_inputs(t) != trn_net_inputs(net) || trn_net_outputs(t) != trn_net_outputs(net) ||
        last.kind != TRN_LAYER_SOFTMAX || n < 2) {
        trn_errf(err, "distillation teacher %s: it must take the student's %zu inputs and end in a softmax over "
                 "its %zu outputs (it takes %zu and has %zu)", c->distill_cfg, trn_net_inputs(net),
                 trn_net_outputs(net), trn_net_inputs(t), trn_net_outputs(t));
        trn_net_free(t);
        return NULL;
    }
    return t;
}

/* q = softmax(teacher logits / T), row by row, in double. */
static int teacher_targets(trn_net *t, const float *x, float temp, float *q, trn_err *err)
{
    if (trn_net_forward(t, x, err) != 0) return -1;
    int n = trn_net_layers(t);
    const float *z = trn_net_layer_output(t, n - 2);
    size_t k = trn_net_outputs(t);
    for (int b = 0; b < trn_net_batch(t); b++) {
        const float *zr = z + (size_t)b * k;
        float *qr = q + (size_t)b * k;
        double mx = zr[0], sum = 0;
        for (size_t i = 1; i < k; i++) mx = zr[i] > mx ? zr[i] : mx;
        for (size_t i = 0; i < k; i++) sum += trn_exp((zr[i] - mx) / temp);
        for (size_t i = 0; i < k; i++) qr[i] = (float)(trn_exp((zr[i] - mx) / temp) / sum);
    }
    return 0;
}

/* A group-lasso training ends with batch norm's rolling statistics
 * re-estimated for its final weights: the mean over this many training
 * batches (forwards only, no update). The proximal step shrinks the
 * scales and shifts faster than the 0.99 moving average follows, which
 * left them orders of magnitude stale and the network at chance in
 * inference (trainer/README.md, "Group lasso"). */
#define LASSO_BN_BATCHES 50

static int bn_refresh(trn_net *net, const trn_train_opts *o, float *x, float *y, trn_err *err)
{
    uint64_t next = net->seen / (uint64_t)net->batch;
    int rc = 0;
    for (uint64_t k = 1; k <= LASSO_BN_BATCHES && rc == 0; k++) {
        trn_net_bn_average(net, k);
        if (o->next_batch(o->batch_ctx, next + k - 1, x, y, err) != 0 || trn_net_forward_train(net, x, y, err) != 0)
            rc = -1;
    }
    trn_net_bn_average(net, 0);
    return rc;
}

void trn_train_backup_remove(const char *backup_dir, const char *base)
{
    static const char *const ext[] = {".ckpt", ".weights"};
    char path[4200];
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++)
        if (join(path, sizeof path, backup_dir, base, ext[i], NULL) == 0) unlink(path);
    rmdir(backup_dir);
}

int trn_train(trn_net *net, const trn_train_opts *o, trn_err *err)
{
    if (!o->next_batch || !o->base || !o->backup_dir)
        return trn_errf(err, "trn_train: next_batch, base and backup_dir are required");
    if (net->opts.infer_only) return trn_errf(err, "%s: an inference-only network cannot train", net->name);
    uint64_t max = o->max_batches ? o->max_batches : (uint64_t)net->cfg.max_batches;
    if (!max)
        return trn_errf(err, "%s: max_batches is 0: set max_batches in [net] (or --set "
                        "max_batches=N) to say how long to train", net->name);
    char ckpt[4200], final[4200], mlog[4200];
    if (join(ckpt, sizeof ckpt, o->backup_dir, o->base, ".ckpt", err) ||
        join(final, sizeof final, o->backup_dir, o->base, ".weights", err) ||
        join(mlog, sizeof mlog, o->backup_dir, o->base, ".metrics.jsonl", err) ||
        trn_mkdir_p(o->backup_dir, err))
        return -1;
    float avg = -1;
    int resumed = o->resume && access(ckpt, F_OK) == 0;
    if (resumed && trn_checkpoint_load(net, ckpt, &avg, err) != 0)
        return -1;
    FILE *log = NULL;
    if (o->metrics_log && !(log = fopen(mlog, resumed ? "a" : "w")))
        return trn_errf(err, "cannot write the metrics log %s: %s", mlog, strerror(errno));
    int val_on = o->validate && o->validate_every;
    size_t nx = (size_t)net->batch * trn_net_inputs(net), ny = (size_t)net->batch * trn_net_outputs(net);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
    if (!x || !y) {
        free(x);
        free(y);
        if (log) fclose(log);
        return trn_errf(err, "out of memory for a batch");
    }
    trn_net *teacher = NULL;
    float *q = NULL;
    if (net->cfg.distill_alpha > 0) {
        if (!(teacher = teacher_load(net, err)) || !(q = malloc(ny * sizeof *q))) {
            if (teacher && !q) trn_errf(err, "out of memory for the distillation targets");
            trn_net_free(teacher);
            free(x);
            free(y);
            if (log) fclose(log);
            return -1;
        }
        trn_net_set_soft_targets(net, q);
    }
    int rc = 0, logged = 0;
    double t0 = now_s();
    uint64_t start_seen = net->seen, first = trn_net_current_batch(net);
    trn_train_progress pr = {.max_batches = max, .best_top1 = -1};
    uint64_t since_best = 0;
    while (trn_net_current_batch(net) < max) {
        if (o->stop && *o->stop) {
            rc = 1;
            break;
        }
        float sum = 0;
        for (int s = 0; s < net->cfg.subdivisions; s++) {
            float loss;
            uint64_t index = net->seen / (uint64_t)net->batch;
            if (o->next_batch(o->batch_ctx, index, x, y, err) != 0 ||
                (teacher && teacher_targets(teacher, x, net->cfg.distill_temperature, q, err) != 0) ||
                trn_net_train_step(net, x, y, &loss, err) != 0) {
                rc = -1;
                goto out;
            }
            sum += loss;
        }
        float loss = sum / net->cfg.subdivisions;
        avg = avg < 0 ? loss : avg * 0.9f + loss * 0.1f;
        uint64_t b = trn_net_current_batch(net);
        if (b == max && trn_lasso_active(net) && bn_refresh(net, o, x, y, err) != 0) {
            rc = -1;
            goto out;
        }
        double dt = now_s() - t0;
        pr.batch = b;
        pr.seen = net->seen;
        pr.loss = loss;
        pr.avg_loss = avg;
        pr.rate = trn_net_rate(net);
        pr.images_per_s = dt > 0 ? (double)(net->seen - start_seen) / dt : 0;
        pr.eta_s = b > first ? dt / (double)(b - first) * (double)(max - b) : 0;
        pr.checkpoint = 0;
        pr.validated = 0;
        if (val_on && (b % o->validate_every == 0 || b == max) && validate(net, o, &pr, &since_best, err) != 0) {
            rc = -1;
            goto out;
        }
        if (o->checkpoint_every && b % o->checkpoint_every == 0 && b < max && !pr.plateau) {
            if (trn_checkpoint_save(net, ckpt, avg, err) != 0) {
                rc = -1;
                goto out;
            }
            pr.checkpoint = 1;
        }
        if (log) log_line(log, &pr), logged = 1;
        if (o->progress) o->progress(&pr, o->progress_ctx);
        if (pr.plateau) break;
    }
    if (trn_checkpoint_save(net, ckpt, avg, err) != 0) {
        rc = -1;
        goto out;
    }
    if (rc == 0 && trn_weights_save(net, final, err) != 0) rc = -1;
out:
    trn_net_set_soft_targets(net, NULL);
    trn_net_free(teacher);
    free(q);
    free(x);
    free(y);
    if (log) {
        int bad = ferror(log) | (fflush(log) != 0);
        if ((fclose(log) != 0 || bad) && rc == 0) rc = trn_errf(err, "cannot write the metrics log %s", mlog);
        /* A fresh run that failed before its first update leaves no log
         * (its caller removes the folders it made). */
        if (rc < 0 && !resumed && !logged) unlink(mlog);
    }
    return rc;
}
