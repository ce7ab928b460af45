/*
 * plan.c: the layer table of a base cfg (kinds, shapes, MACs, parameters,
 * ranks) and the layer selectors resolved against it (grammar in prn.h).
 *
 * Shapes and costs come from the trainer (trn_net_layer_info of a network
 * built without parameter memory), so a selector means what the trainer
 * will build. A cfg with Darknet's [local] layers is measured through its
 * proxy (prn_cfg_proxy); the [local] layers' own parameters follow
 * Darknet's local_layer.c: out_h*out_w*filters biases and out_h*out_w*
 * filters*c*size*size weights (no batch norm).
 */
#include "prn_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Per kind: the selector prefix and the word used in messages. */
static const struct {
    const char *prefix, *word;
} kinds[] = {
    [PRN_KIND_CONV] = {"conv", "convolutional"},
    [PRN_KIND_CONNECTED] = {"fc", "connected"},
    [PRN_KIND_LOCAL] = {"local", "local"},
    [PRN_KIND_OTHER] = {"other", "other"},
};
_Static_assert(sizeof kinds / sizeof *kinds == PRN_KIND_COUNT, "a kind has no names");

const char *prn_kind_name(prn_kind k)
{
    return (unsigned)k < PRN_KIND_COUNT ? kinds[k].prefix : "?";
}

const char *prn_kind_word(prn_kind k)
{
    return (unsigned)k < PRN_KIND_COUNT ? kinds[k].word : "?";
}

prn_kind prn_section_kind(const char *type)
{
    if (!type) return PRN_KIND_OTHER;
    int k = trn_kind_of_section(type); /* the engine's kind table */
    if (k == TRN_LAYER_CONVOLUTIONAL) return PRN_KIND_CONV;
    if (k == TRN_LAYER_CONNECTED) return PRN_KIND_CONNECTED;
    if (strcmp(type, "local") == 0) return PRN_KIND_LOCAL;
    return PRN_KIND_OTHER;
}

struct prn_plan {
    int n;
    prn_layer *layers;
    char (*types)[32];
    int has_local;
};

/* Darknet's parse_local keys, with its defaults: filters 1, size 1,
 * stride 1, pad 0 (a flag), activation logistic. */
static int local_int(const trn_cfg *cfg, int s, const char *key, int def, int *out, trn_err *err)
{
    const char *v = trn_cfg_get(cfg, s, key);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*end || errno || x < 0 || x > (1 << 16)) {
        char where[600];
        return trn_errf(err, "%s: [local]: %s=%.40s is not a valid integer",
                        trn_cfg_where(cfg, s, key, where, sizeof where), key, v);
    }
    *out = (int)x;
    return 0;
}

trn_cfg *prn_cfg_proxy(const trn_cfg *cfg, trn_err *err)
{
    trn_cfg *p = trn_cfg_clone(cfg, err);
    if (!p) return NULL;
    for (int s = 1; s < trn_cfg_sections(p); s++) {
        if (prn_section_kind(trn_cfg_section_type(p, s)) != PRN_KIND_LOCAL) continue;
        char where[600];
        trn_cfg_where(cfg, s, NULL, where, sizeof where);
        for (int k = 0; k < trn_cfg_keys(cfg, s); k++) {
            const char *key = trn_cfg_key(cfg, s, k);
            if (strcmp(key, "filters") && strcmp(key, "size") && strcmp(key, "stride") &&
                strcmp(key, "pad") && strcmp(key, "activation")) {
                trn_errf(err, "%s: [local]: key '%s' is not one of Darknet's [local] keys "
                         "(filters, size, stride, pad, activation)",
                         trn_cfg_where(cfg, s, key, where, sizeof where), key);
                goto fail;
            }
        }
        int filters, size, stride, pad;
        if (local_int(cfg, s, "filters", 1, &filters, err) ||
            local_int(cfg, s, "size", 1, &size, err) ||
            local_int(cfg, s, "stride", 1, &stride, err) || local_int(cfg, s, "pad", 0, &pad, err))
            goto fail;
        if (pad && size % 2 == 0) {
            trn_errf(err, "%s: [local] with pad=1 and an even size (%d) has no convolutional "
                     "equivalent of the same output shape; use an odd size", where, size);
            goto fail;
        }
        const char *act = trn_cfg_get(cfg, s, "activation");
        if (trn_cfg_remove_section(p, s, err) != 0 ||
            trn_cfg_insert_section(p, s, "convolutional", err) < 0 ||
            trn_cfg_setf(p, s, "filters", err, "%d", filters) ||
            trn_cfg_setf(p, s, "size", err, "%d", size) ||
            trn_cfg_setf(p, s, "stride", err, "%d", stride) ||
            trn_cfg_setf(p, s, "padding", err, "%d", pad ? (size - 1) / 2 : 0) ||
            trn_cfg_set(p, s, "activation", act ? act : "logistic", err))
            goto fail;
    }
    return p;
fail:
    trn_cfg_free(p);
    return NULL;
}

/* Ranks layers of one kind by key (descending), ties to the earlier
 * layer; skip_classifier leaves the classifier unranked. */
static void rank_kind(prn_layer *l, int n, prn_kind kind, int by_params, int skip_classifier)
{
    for (int i = 0; i < n; i++) {
        if (l[i].kind != kind || (skip_classifier && l[i].classifier)) continue;
        uint64_t ki = by_params ? l[i].params : l[i].macs;
        int r = 1;
        for (int j = 0; j < n; j++) {
            if (j == i || l[j].kind != kind || (skip_classifier && l[j].classifier)) continue;
            uint64_t kj = by_params ? l[j].params : l[j].macs;
            if (kj > ki || (kj == ki && j < i)) r++;
        }
        l[i].rank = r;
    }
}

prn_plan *prn_plan_create(const trn_cfg *cfg, trn_err *err)
{
    prn_plan *p = calloc(1, sizeof *p);
    trn_cfg *proxy = NULL;
    trn_net *net = NULL;
    if (!p) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    for (int s = 1; s < trn_cfg_sections(cfg); s++)
        if (prn_section_kind(trn_cfg_section_type(cfg, s)) == PRN_KIND_LOCAL) p->has_local = 1;
    if (!(proxy = prn_cfg_proxy(cfg, err))) goto fail;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.external_params = 1;
    if (!(net = trn_net_create(proxy, &o, err))) goto fail;
    p->n = trn_net_layers(net);
    p->layers = calloc((size_t)p->n, sizeof *p->layers);
    p->types = calloc((size_t)p->n, sizeof *p->types);
    if (!p->layers || !p->types) {
        trn_errf(err, "out of memory");
        goto fail;
    }
    int counts[PRN_KIND_COUNT] = {0}, last_fc = -1;
    for (int i = 0; i < p->n; i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        prn_layer *l = &p->layers[i];
        snprintf(p->types[i], sizeof p->types[i], "%s", trn_cfg_section_type(cfg, i + 1));
        l->index = i;
        l->type = p->types[i];
        l->kind = prn_section_kind(l->type);
        l->line = trn_cfg_section_line(cfg, i + 1);
        l->in = info.in;
        l->out = info.out;
        l->macs = info.macs;
        l->params = info.params;
        if (l->kind == PRN_KIND_LOCAL) {
            uint64_t spatial = (uint64_t)info.out.c * info.out.h * info.out.w;
            l->params = spatial + spatial * (uint64_t)info.in.c * info.size * info.size;
        }
        if (l->kind != PRN_KIND_OTHER) l->order = ++counts[l->kind];
        if (l->kind == PRN_KIND_CONNECTED) last_fc = i;
    }
    if (last_fc >= 0) p->layers[last_fc].classifier = 1;
    rank_kind(p->layers, p->n, PRN_KIND_CONV, 0, 0);
    rank_kind(p->layers, p->n, PRN_KIND_LOCAL, 0, 0);
    rank_kind(p->layers, p->n, PRN_KIND_CONNECTED, 1, 1);
    trn_net_free(net);
    trn_cfg_free(proxy);
    return p;
fail:
    trn_net_free(net);
    trn_cfg_free(proxy);
    prn_plan_free(p);
    return NULL;
}

void prn_plan_free(prn_plan *p)
{
    if (!p) return;
    free(p->layers);
    free(p->types);
    free(p);
}

int prn_plan_layers(const prn_plan *p) { return p->n; }
int prn_plan_has_local(const prn_plan *p) { return p->has_local; }

const prn_layer *prn_plan_layer(const prn_plan *p, int i)
{
    return (i >= 0 && i < p->n) ? &p->layers[i] : NULL;
}

/* A positive decimal integer filling s exactly; -1 otherwise. */
static long parse_count(const char *s)
{
    if (!*s || !isdigit((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return (*end || errno || v > 1000000) ? -1 : v;
}

int prn_select(const prn_plan *p, const char *sel, trn_err *err)
{
    static const char *const grammar =
        "use conv#k (k-th most expensive convolutional layer by MACs), conv~k (the same "
        "ranking in the network as rewritten by the earlier rewrites of a spec), conv@k (k-th "
        "convolutional layer in cfg order), fc#k (k-th largest connected layer by parameters, "
        "the final classifier excluded), fc~k, fc@k, local#k, local~k, local@k or L<i> (layer "
        "index i)";
    if (!sel || !*sel) return trn_errf(err, "empty layer selector: %s", grammar);
    if (sel[0] == 'L') {
        long i = parse_count(sel + 1);
        if (i < 0) return trn_errf(err, "'%.40s' is not a layer selector: %s", sel, grammar);
        if (i >= p->n)
            return trn_errf(err, "%s: the network has %d layers (L0..L%d)", sel, p->n, p->n - 1);
        return (int)i;
    }
    prn_kind kind;
    size_t plen;
    /* '~' ranks like '#': the caller decides which network the plan describes. */
#define SEL_MARK(c) ((c) == '#' || (c) == '~' || (c) == '@')
    if (strncmp(sel, "conv", 4) == 0 && SEL_MARK(sel[4])) {
        kind = PRN_KIND_CONV;
        plen = 4;
    } else if (strncmp(sel, "fc", 2) == 0 && SEL_MARK(sel[2])) {
        kind = PRN_KIND_CONNECTED;
        plen = 2;
    } else if (strncmp(sel, "local", 5) == 0 && SEL_MARK(sel[5])) {
        kind = PRN_KIND_LOCAL;
        plen = 5;
    } else {
        return trn_errf(err, "'%.40s' is not a layer selector: %s", sel, grammar);
    }
#undef SEL_MARK
    int by_rank = sel[plen] != '@';
    long k = parse_count(sel + plen + 1);
    if (k < 1)
        return trn_errf(err, "'%.40s': the count after '%c' must be an integer >= 1", sel,
                        sel[plen]);
    int available = 0;
    for (int i = 0; i < p->n; i++) {
        const prn_layer *l = &p->layers[i];
        if (l->kind != kind) continue;
        int pos = by_rank ? l->rank : l->order;
        if (pos > 0) available++;
        if (pos == k) return i;
    }
    if (kind == PRN_KIND_CONNECTED && by_rank)
        return trn_errf(err, "%s: the network has %d connected layers besides the final "
                        "classifier", sel, available);
    return trn_errf(err, "%s: the network has %d %s layers", sel, available, prn_kind_word(kind));
}
