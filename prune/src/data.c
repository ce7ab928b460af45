/*
 * data.c: what the prune library's data-driven steps share: top-1 on a
 * split with its Wilson interval (and the per-image record), the base
 * network with its weights, loader options for a network, TRR's triplets
 * from a data set and a ranking that draws them, numeric key=value
 * settings, and JSON documents written atomically.
 */
#include "prn_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int prn_evaluate(trn_net *net, const trn_dataset *ds, trn_split split, int threads, prn_acc *a, double *loss,
                 trn_preds *preds, trn_err *err)
{
    memset(a, 0, sizeof *a);
    a->split = split;
    size_t n = trn_dataset_count(ds, split);
    int batch = trn_net_batch(net), classes = trn_dataset_classes(ds);
    trn_shape s = trn_net_input_shape(net);
    trn_loader_opts lo;
    trn_loader_opts_defaults(&lo);
    lo.w = s.w, lo.h = s.h, lo.c = s.c, lo.batch = batch;
    lo.augment = 0, lo.shuffle = 0, lo.threads = threads;
    float *x = malloc((size_t)batch * trn_net_inputs(net) * sizeof *x);
    float *y = malloc((size_t)batch * (size_t)classes * sizeof *y);
    trn_loader *ld = x && y ? trn_loader_open(ds, split, &lo, err) : NULL;
    int rc = ld ? 0 : (x && y ? -1 : trn_errf(err, "out of memory"));
    uint64_t seen = 0, good = 0;
    double sum = 0;
    for (uint64_t b = 0; rc == 0 && seen < n; b++) {
        if ((rc = trn_loader_get(ld, b, x, y, err)) != 0 || (rc = trn_net_forward(net, x, err)) != 0) break;
        const float *p = trn_net_output(net);
        for (int j = 0; j < batch && seen < n; j++, seen++) {
            const float *pj = p + (size_t)j * (size_t)classes, *yj = y + (size_t)j * (size_t)classes;
            int t = trn_argmax(yj, classes);
            int q = trn_argmax(pj, classes);
            good += q == t;
            if (preds) preds->truth[seen] = t, preds->pred[seen] = q;
            /* the cross-entropy: the network ends with softmax; outputs clamped to 1e-12 */
            if (loss) sum += -log(pj[t] > 1e-12f ? (double)pj[t] : 1e-12);
        }
    }
    trn_loader_close(ld);
    free(x);
    free(y);
    if (rc) return -1;
    a->images = seen;
    a->correct = good;
    a->top1 = seen ? (double)good / (double)seen : 0;
    trn_wilson(good, seen, &a->lo, &a->hi);
    if (loss) *loss = seen ? sum / (double)seen : 0;
    return 0;
}

int prn_evaluate_preds(trn_net *net, const trn_dataset *ds, trn_split split, int threads, prn_acc *a,
                       const char *path, trn_err *err)
{
    trn_preds p;
    if (trn_preds_init(&p, ds, split, trn_dataset_count(ds, split), err) != 0) return -1;
    int rc = prn_evaluate(net, ds, split, threads, a, NULL, &p, err);
    if (rc == 0) rc = trn_preds_write(path, &p, err);
    trn_preds_free(&p);
    return rc;
}

cJSON *prn_acc_json(const prn_acc *a)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "split", trn_split_name(a->split));
    cJSON_AddNumberToObject(o, "images", (double)a->images);
    cJSON_AddNumberToObject(o, "correct", (double)a->correct);
    cJSON_AddNumberToObject(o, "top1", a->top1);
    cJSON_AddNumberToObject(o, "lo", a->lo);
    cJSON_AddNumberToObject(o, "hi", a->hi);
    return o;
}

typedef struct triplet_src {
    const trn_dataset *ds;
    trn_split split;
    size_t *idx; /* 3 per triplet */
    int w, h, c;
} triplet_src;

static int load_triplet(void *ctx, uint64_t t, float *anc, float *pos, float *neg, trn_err *err)
{
    triplet_src *s = ctx;
    float *dst[3] = {anc, pos, neg};
    for (int k = 0; k < 3; k++)
        if (trn_image_load_input(trn_dataset_path(s->ds, s->split, s->idx[3 * t + (uint64_t)k]), s->w,
                                 s->h, s->c, dst[k], err) != 0)
            return -1;
    return 0;
}

int prn_sample_triplets_split(const trn_dataset *ds, trn_split split, uint64_t seed, uint64_t count,
                              size_t **out, trn_err *err)
{
    size_t n = trn_dataset_count(ds, split);
    int *cls = malloc((n ? n : 1) * sizeof *cls);
    *out = malloc((size_t)(3 * (count ? count : 1)) * sizeof **out);
    if (!cls || !*out) {
        free(cls);
        free(*out);
        *out = NULL;
        return trn_errf(err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) cls[i] = trn_dataset_class(ds, split, i);
    int rc = prn_triplets_sample(cls, n, seed, count, *out, err);
    free(cls);
    if (rc) {
        trn_err_prefix(err, "the %s split", trn_split_name(split));
        free(*out);
        *out = NULL;
    }
    return rc;
}

prn_ranking *prn_rank_data(trn_net *net, const trn_cfg *cfg, prn_rank_method m, const trn_dataset *ds,
                           trn_split split, uint64_t seed, uint64_t triplets, prn_trr_at at,
                           prn_trr_distance dist, trn_err *err)
{
    prn_rank_opts ro = {.method = m, .at = at, .distance = dist, .cfg = cfg, .seed = seed};
    triplet_src src = {0};
    if (m == PRN_RANK_TRR) {
        trn_shape s = trn_net_input_shape(net);
        src = (triplet_src){ds, split, NULL, s.w, s.h, s.c};
        if (prn_sample_triplets_split(ds, split, seed, triplets, &src.idx, err)) return NULL;
        ro.triplets = triplets;
        ro.triplet = load_triplet;
        ro.triplet_ctx = &src;
    }
    prn_ranking *r = prn_rank(net, &ro, err);
    free(src.idx);
    return r;
}

long long prn_epochs_batches(const trn_cfg *cfg, const trn_dataset *ds, double epochs)
{
    const char *bs = trn_cfg_get(cfg, 0, "batch");
    double batch = bs && atoi(bs) > 0 ? atoi(bs) : 1;
    long long b = (long long)ceil(epochs * (double)trn_dataset_count(ds, TRN_SPLIT_TRAIN) / batch);
    return b > 0 ? b : 1;
}

int prn_set_number(const char *kv, size_t *kl, double *v, trn_err *err)
{
    const char *eq = strchr(kv, '=');
    if (!eq) return trn_errf(err, "--set '%s': use key=value", kv);
    *kl = (size_t)(eq - kv);
    char *end;
    errno = 0;
    *v = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || errno || !isfinite(*v))
        return trn_errf(err, "--set '%s': the value is not a number", kv);
    return 0;
}

trn_net *prn_load_base(const trn_cfg *cfg, const char *weights, int batch, trn_err *err)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = batch;
    o.infer_only = 1;
    trn_net *net = trn_net_create(cfg, &o, err);
    if (net && trn_weights_load(net, weights, err) != 0) {
        trn_net_free(net);
        return NULL;
    }
    return net;
}

int prn_loader_opts(const trn_net *net, const char *where, int batch, uint64_t seed, int threads,
                    size_t cache_bytes, trn_loader_opts *lo, trn_err *err)
{
    trn_shape s = trn_net_input_shape(net);
    trn_loader_opts_defaults(lo);
    lo->w = s.w, lo->h = s.h, lo->c = s.c;
    lo->batch = batch;
    lo->seed = seed;
    lo->threads = threads;
    lo->cache_bytes = cache_bytes;
    trn_augment_from_net(net, &lo->aug);
    return trn_augment_check(&lo->aug, where, err) != 0 ? -1 : 0;
}

int prn_write_json(const char *path, const cJSON *doc, trn_err *err)
{
    char *text = cJSON_Print(doc);
    int rc = !text || prn_appendf(&text, "\n") ? trn_errf(err, "out of memory")
                                               : trn_write_file_atomic(path, text, strlen(text), err);
    free(text);
    return rc != 0 ? -1 : 0;
}
