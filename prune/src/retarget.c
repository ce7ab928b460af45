/*
 * retarget.c: MCDNN's retargeting (docs/papers.md, MCDNN section
 * 4.1.3, sharing, and 4.1.2, specialisation): layers 0..cut of a trained
 * base (the trunk) stay frozen and a small head is trained on what the
 * trunk computes, "t' = m_l(t), v' = m_l(v)". The trunk's outputs are
 * computed once and cached (prn_features), so a head trains in seconds and
 * many heads (tasks, contexts) share one pass over the images.
 *
 * The head is optional hidden sections (mimic's --with syntax) then a
 * [connected] classifier with one output per class and [softmax]; it is
 * trained by plain minibatch SGD (Darknet's update, poly power 2 decay of
 * the rate) on minibatches drawn uniformly with replacement from the cached
 * vectors, every draw from trn_rng_fork(seed, step), so the same inputs and
 * seed give the same bytes for any thread count.
 */
#include "prn_impl.h"
#include "techniques.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prn_features_free(prn_features *f)
{
    if (!f) return;
    free(f->x);
    memset(f, 0, sizeof *f);
}

static size_t shape_floats(trn_shape s) { return (size_t)s.c * (size_t)s.h * (size_t)s.w; }

int prn_features_add(trn_net *base, int cut, prn_input_fn input, void *ctx, uint64_t first,
                     size_t n, prn_features *f, trn_err *err)
{
    if (cut < 0 || cut >= trn_net_layers(base))
        return trn_errf(err, "internal: cut L%d outside the network's %d layers", cut,
                        trn_net_layers(base));
    trn_layer_info li;
    trn_net_layer_info(base, cut, &li);
    if (f->x && (f->shape.c != li.out.c || f->shape.h != li.out.h || f->shape.w != li.out.w))
        return trn_errf(err, "internal: features of another shape");
    size_t dim = shape_floats(li.out), b = (size_t)trn_net_batch(base);
    float *grown = realloc(f->x, (f->n + n) * dim * sizeof *grown);
    float *x = malloc(b * trn_net_inputs(base) * sizeof *x);
    if (!grown || !x) {
        if (grown) f->x = grown;
        free(x);
        return trn_errf(err, "out of memory (%zu feature vectors of %zu floats)", f->n + n, dim);
    }
    f->x = grown;
    f->shape = li.out;
    for (size_t done = 0, step = 0; done < n; step++) {
        if (input(ctx, first + step, x, err) != 0 || trn_net_forward_upto(base, x, cut, err) != 0) {
            free(x);
            return -1;
        }
        size_t take = n - done < b ? n - done : b;
        memcpy(f->x + (f->n + done) * dim, trn_net_layer_output(base, cut), take * dim * sizeof *x);
        done += take;
    }
    f->n += n;
    free(x);
    return 0;
}

void prn_head_opts_defaults(prn_head_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 64;
    o->batches = 1500;
    o->learning_rate = 0.05f;
    o->momentum = 0.9f;
    o->decay = 0.0005f;
    o->aug_passes = 2;
}

int prn_head_opts_set(prn_head_opts *o, const char *kv, trn_err *err)
{
    const prn_set_key t[] = {{"batch", &o->batch, 1, NULL},           {"batches", &o->batches, 1, NULL},
                             {"learning_rate", NULL, 0, &o->learning_rate}, {"momentum", NULL, 0, &o->momentum},
                             {"decay", NULL, 0, &o->decay},           {"aug_passes", &o->aug_passes, 0, NULL}};
    return prn_set_kv(t, (int)(sizeof t / sizeof *t), kv, err);
}

/* The head's cfg: [net] for one feature map, the hidden sections, the
 * classifier and softmax. */
static trn_cfg *head_cfg(trn_shape in, int classes, const prn_head_opts *o, trn_err *err)
{
    trn_cfg *c = NULL;
    char *text = NULL;
    if (o->with && *o->with) {
        if (!(text = prn_with_to_cfg(o->with, err))) return NULL;
        c = trn_cfg_parse(text, strlen(text), "--with item", err);
        free(text);
        if (!c) return NULL;
        if (trn_cfg_find_section(c, "net", 0) >= 0 || trn_cfg_find_section(c, "network", 0) >= 0) {
            trn_errf(err, "--with '%.200s': give the head's hidden sections only (no [net])",
                     o->with);
            goto fail;
        }
        for (int s = 0; s < trn_cfg_sections(c); s++) {
            int k = trn_kind_of_section(trn_cfg_section_type(c, s));
            if (k == TRN_LAYER_COST || k == TRN_LAYER_SOFTMAX) {
                trn_errf(err, "--with: section %d is a [%s]; the head's classifier and softmax "
                         "are added after the hidden sections", s + 1, trn_cfg_section_type(c, s));
                goto fail;
            }
        }
    } else if (!(c = trn_cfg_new("head", err)))
        return NULL;
    if (trn_cfg_insert_section(c, 0, "net", err) < 0 ||
        trn_cfg_setf(c, 0, "batch", err, "%d", o->batch) ||
        trn_cfg_set(c, 0, "subdivisions", "1", err) || trn_cfg_setf(c, 0, "width", err, "%d", in.w) ||
        trn_cfg_setf(c, 0, "height", err, "%d", in.h) ||
        trn_cfg_setf(c, 0, "channels", err, "%d", in.c) ||
        trn_cfg_setf(c, 0, "learning_rate", err, "%g", (double)o->learning_rate) ||
        trn_cfg_setf(c, 0, "momentum", err, "%g", (double)o->momentum) ||
        trn_cfg_setf(c, 0, "decay", err, "%g", (double)o->decay) ||
        trn_cfg_set(c, 0, "policy", "poly", err) || trn_cfg_set(c, 0, "power", "2", err) ||
        trn_cfg_setf(c, 0, "max_batches", err, "%d", o->batches))
        goto fail;
    int s = trn_cfg_sections(c);
    if (trn_cfg_insert_section(c, s, "connected", err) < 0 ||
        trn_cfg_setf(c, s, "output", err, "%d", classes) ||
        trn_cfg_set(c, s, "activation", "linear", err) ||
        trn_cfg_insert_section(c, s + 1, "softmax", err) < 0 ||
        trn_cfg_set(c, s + 1, "groups", "1", err))
        goto fail;
    return c;
fail:
    trn_cfg_free(c);
    return NULL;
}

static double mean_of(const float *v, int from, int to)
{
    double s = 0;
    for (int i = from; i < to; i++) s += v[i];
    return to > from ? s / (to - from) : 0;
}

int prn_head_train(const prn_features *f, const int *labels, int classes, const prn_head_opts *o,
                   trn_cfg **cfg_out, trn_net **net_out, float *loss_first, float *loss_last,
                   trn_err *err)
{
    *cfg_out = NULL;
    *net_out = NULL;
    if (f->n < 1 || classes < 2) return trn_errf(err, "a head needs images and at least 2 classes");
    if (o->batch < 1 || o->batches < 1) return trn_errf(err, "batch and batches must be at least 1");
    for (size_t i = 0; i < f->n; i++)
        if (labels[i] < 0 || labels[i] >= classes)
            return trn_errf(err, "internal: label %d of image %zu outside 0..%d", labels[i], i,
                            classes - 1);
    trn_cfg *c = head_cfg(f->shape, classes, o, err);
    if (!c) return -1;
    trn_net_opts no;
    trn_net_opts_defaults(&no);
    no.seed = o->seed;
    trn_net *net = trn_net_create(c, &no, err);
    float *x = NULL, *y = NULL, *losses = NULL;
    if (!net) {
        trn_err_prefix(err, "the head cannot be built on the trunk's %dx%dx%d output", f->shape.c,
                       f->shape.h, f->shape.w);
        goto fail;
    }
    size_t dim = shape_floats(f->shape), b = (size_t)o->batch;
    x = malloc(b * dim * sizeof *x);
    y = malloc(b * (size_t)classes * sizeof *y);
    losses = malloc((size_t)o->batches * sizeof *losses);
    if (!x || !y || !losses) {
        trn_errf(err, "out of memory");
        goto fail;
    }
    trn_rng root;
    trn_rng_seed(&root, o->seed);
    for (int step = 0; step < o->batches; step++) {
        trn_rng r = trn_rng_fork(&root, (uint64_t)step);
        memset(y, 0, b * (size_t)classes * sizeof *y);
        for (size_t j = 0; j < b; j++) {
            size_t i = (size_t)trn_rng_below(&r, f->n);
            memcpy(x + j * dim, f->x + i * dim, dim * sizeof *x);
            y[j * (size_t)classes + (size_t)labels[i]] = 1;
        }
        if (trn_net_train_step(net, x, y, &losses[step], err) != 0) goto fail;
    }
    int tail = o->batches / 10 > 0 ? o->batches / 10 : 1;
    if (loss_first) *loss_first = (float)mean_of(losses, 0, tail);
    if (loss_last) *loss_last = (float)mean_of(losses, o->batches - tail, o->batches);
    free(x);
    free(y);
    free(losses);
    *cfg_out = c;
    *net_out = net;
    return 0;
fail:
    free(x);
    free(y);
    free(losses);
    trn_net_free(net);
    trn_cfg_free(c);
    return -1;
}

int prn_head_predict(trn_net *head, const prn_features *f, int *pred, float *conf, trn_err *err)
{
    size_t dim = shape_floats(f->shape), b = (size_t)trn_net_batch(head);
    size_t classes = trn_net_outputs(head);
    if (trn_net_inputs(head) != dim)
        return trn_errf(err, "internal: the head reads %zu floats, the features have %zu",
                        trn_net_inputs(head), dim);
    float *x = malloc(b * dim * sizeof *x);
    if (!x) return trn_errf(err, "out of memory");
    for (size_t s = 0; s < f->n; s += b) {
        size_t take = f->n - s < b ? f->n - s : b;
        memcpy(x, f->x + s * dim, take * dim * sizeof *x);
        /* The last partial batch repeats its last vector (inference: every
         * vector is computed on its own). */
        for (size_t j = take; j < b; j++) memcpy(x + j * dim, f->x + (f->n - 1) * dim, dim * sizeof *x);
        if (trn_net_forward(head, x, err) != 0) {
            free(x);
            return -1;
        }
        const float *out = trn_net_output(head);
        for (size_t j = 0; j < take; j++) {
            const float *p = out + j * classes;
            int best = trn_argmax(p, (int)classes);
            pred[s + j] = best;
            if (conf) conf[s + j] = p[best];
        }
    }
    free(x);
    return 0;
}

int prn_retarget_variant(const trn_cfg *cfg, const trn_net *base, int cut, const trn_cfg *hcfg,
                         const trn_net *head, const char *trunk_id, prn_variant *out, trn_err *err)
{
    memset(out, 0, sizeof *out);
    int nl = trn_net_layers(base), nh = trn_net_layers(head);
    if (cut < 0 || cut >= nl - 1)
        return trn_errf(err, "internal: cut L%d must leave layers above it (the base has %d)", cut,
                        nl);
    int *map = NULL, *hmap = NULL, rc = -1;
    if (!(out->cfg = trn_cfg_clone(cfg, err))) return -1;
    /* Section s of the cfg is layer s - 1: drop everything above the cut,
     * then append the head's layer sections. */
    while (trn_cfg_sections(out->cfg) > cut + 2)
        if (trn_cfg_remove_section(out->cfg, trn_cfg_sections(out->cfg) - 1, err) != 0) goto out;
    for (int s = 1; s < trn_cfg_sections(hcfg); s++) {
        int at = trn_cfg_sections(out->cfg);
        if (trn_cfg_insert_section(out->cfg, at, trn_cfg_section_type(hcfg, s), err) < 0) goto out;
        for (int k = 0; k < trn_cfg_keys(hcfg, s); k++)
            if (trn_cfg_set(out->cfg, at, trn_cfg_key(hcfg, s, k), trn_cfg_value(hcfg, s, k), err))
                goto out;
    }
    trn_net_opts vo;
    prn_net_opts(&vo, 0);
    if (!(out->net = trn_net_create(out->cfg, &vo, err))) {
        trn_err_prefix(err, "the trunk and head together cannot be built");
        goto out;
    }
    if (trn_net_layers(out->net) != cut + 1 + nh) {
        trn_errf(err, "internal: trunk + head has %d layers, expected %d", trn_net_layers(out->net),
                 cut + 1 + nh);
        goto out;
    }
    map = malloc((size_t)nl * sizeof *map);
    hmap = malloc((size_t)nh * sizeof *hmap);
    if (!map || !hmap) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (int i = 0; i < nl; i++) map[i] = i <= cut ? i : -1;
    for (int i = 0; i < nh; i++) hmap[i] = cut + 1 + i;
    cJSON *copies = prn_copy_layers(base, out->net, map, err);
    if (!copies) goto out;
    cJSON_Delete(copies);
    if (!(copies = prn_copy_layers(head, out->net, hmap, err))) goto out;
    cJSON_Delete(copies);
    trn_net_set_seen(out->net, trn_net_seen(base));
    uint64_t hmacs = 0, hparams = 0;
    for (int i = cut + 1; i < trn_net_layers(out->net); i++) {
        trn_layer_info li;
        trn_net_layer_info(out->net, i, &li);
        hmacs += li.macs;
        hparams += li.params;
    }
    trn_net_totals bt;
    trn_net_get_totals(base, &bt);
    trn_layer_info cl;
    trn_net_layer_info(base, cut, &cl);
    out->technique = TECHNIQUE_HEAD;
    out->description = prn_strdupf("head: trunk L0..L%d of the base (frozen) + %d layers trained on "
                                   "its cached outputs (+%llu MACs, +%llu parameters)",
                                   cut, nh, (unsigned long long)hmacs, (unsigned long long)hparams);
    cJSON *f = out->fields = cJSON_CreateObject();
    cJSON *h = cJSON_CreateObject();
    if (!out->description || !f || !h) {
        cJSON_Delete(h);
        trn_errf(err, "out of memory");
        goto out;
    }
    cJSON_AddItemToObject(f, "head", h);
    cJSON_AddStringToObject(h, "trunk", trunk_id);
    cJSON_AddNumberToObject(h, "from_layer", cut + 1);
    cJSON_AddStringToObject(h, "cut_type", cl.type);
    cJSON_AddNumberToObject(h, "macs", (double)hmacs);
    cJSON_AddNumberToObject(h, "params", (double)hparams);
    cJSON_AddNumberToObject(h, "base_macs", (double)bt.macs);
    cJSON_AddNumberToObject(h, "base_params", (double)bt.params);
    cJSON_AddNumberToObject(h, "macs_fraction", bt.macs ? (double)hmacs / (double)bt.macs : 0);
    cJSON_AddNumberToObject(h, "params_fraction", bt.params ? (double)hparams / (double)bt.params : 0);
    rc = 0;
out:
    if (rc != 0) prn_variant_free(out);
    free(map);
    free(hmap);
    return rc;
}
