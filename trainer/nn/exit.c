/*
 * exit.c: early exits (FlexDNN, the thesis chapter 4, docs/papers.md):
 * the [exit] layer kind, the confidence measure, sets of exit branches
 * over a trunk network, their weights files and the early-exit forward.
 *
 * Format (a cfg extension documented in docs/prune.md, "Early exits").
 * The trunk stays a plain Darknet cfg + .weights; the exits live in two
 * side files:
 *   exits.cfg      an optional [net] section (training keys for every
 *                  branch; width, height and channels are not allowed: the
 *                  trunk gives them), then per exit an [exit] section
 *                  (at = the trunk layer whose output the branch reads,
 *                  threshold = T_lossless in [0, 1]) followed by the
 *                  branch's own layer sections, up to the next [exit].
 *                  Exits are listed in increasing `at`.
 *   exits.weights  the branches' Darknet .weights files, concatenated in
 *                  exit order (each with its own 20-byte header).
 * Each branch is built as a network of its own whose [net] input is the
 * trunk layer's output shape and whose first layer is the [exit] section
 * (a pass-through: its output is its input, like [dropout] in inference).
 *
 * Confidence (the thesis's eq. 4.1, the default, `confidence=entropy` in
 * an [exit] section): Conf(y) = 1 + (1 / log C) sum_c y_c log y_c over the
 * branch's softmax y, 1 for a one-hot y, 0 for a uniform one. The others:
 * `max`, the top probability; `margin`, the top probability less the
 * second. All lie in [0, 1]. A branch answers when Conf(y) > alpha *
 * threshold (eq. 4.7).
 */
#include "net.h"

#include <math.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

/* ---- the [exit] layer kind ------------------------------------------------ */

static const char *const exit_keys[] = {"at", "threshold", "confidence", NULL};

static int exit_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    if (!trn_build_str(b, "at", NULL))
        return trn_build_fail(b, NULL, err, "[exit] needs at=LAYER, the trunk layer whose output "
                              "the branch reads");
    int at;
    float t;
    if (trn_build_int(b, "at", 0, 0, 1 << 20, &at, err) ||
        trn_build_float(b, "threshold", 1, 0, 1, &t, err))
        return -1;
    trn_conf_measure m;
    const char *cm = trn_build_str(b, "confidence", "entropy");
    if (trn_conf_measure_parse(cm, &m) != 0)
        return trn_build_fail(b, "confidence", err, "[exit] confidence=%s: give entropy (the default), max "
                              "or margin", cm);
    if (l->index != 0)
        return trn_build_fail(b, NULL, err, "[exit] must be the first layer of an exit branch "
                              "(exits.cfg: trainer/README.md, Early exits)");
    l->out = l->in;
    l->output_aliased = 1;
    return 0;
}

static void exit_forward(trn_layer *l, trn_net *net, int train)
{
    (void)l, (void)net, (void)train; /* a pass-through: output is the input */
}

#ifndef TRN_INFER_ONLY
static void exit_backward(trn_layer *l, trn_net *net)
{
    (void)l, (void)net; /* nothing: the branch's input is the frozen trunk's */
}
#endif

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_exit_kind = {
    .desc = {.kind = TRN_LAYER_EXIT,
             .name = "exit",
             .aliases = (const char *const[]){NULL},
             .channels = TRN_CHANNELS_PASS,
             .branch_head = 1},
    .keys = exit_keys,
    .setup = exit_setup,
    .forward = exit_forward,
    .backward = TRN_TRAIN_FN(exit_backward),
};

/* ---- confidence ------------------------------------------------------------ */

static const char *const measure_names[] = {"entropy", "max", "margin"};

int trn_conf_measure_parse(const char *name, trn_conf_measure *m)
{
    for (int k = 0; k < (int)(sizeof measure_names / sizeof *measure_names); k++)
        if (strcmp(name, measure_names[k]) == 0) {
            *m = (trn_conf_measure)k;
            return 0;
        }
    return -1;
}

const char *trn_conf_measure_name(trn_conf_measure m)
{
    return m >= TRN_CONF_ENTROPY && m <= TRN_CONF_MARGIN ? measure_names[m] : "?";
}

/* The top probability less the second (margin) or the top alone (max). */
static float top_two(const float *y, int classes, int margin)
{
    float a = y[0], b = 0;
    for (int c = 1; c < classes; c++) {
        if (y[c] > a) {
            b = a;
            a = y[c];
        } else if (y[c] > b) {
            b = y[c];
        }
    }
    float v = margin ? a - b : a;
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

float trn_confidence_by(trn_conf_measure m, const float *y, int classes)
{
    if (classes < 2) return 1;
    if (m == TRN_CONF_MAX || m == TRN_CONF_MARGIN) return top_two(y, classes, m == TRN_CONF_MARGIN);
    return trn_confidence(y, classes);
}

float trn_confidence(const float *y, int classes)
{
    if (classes < 2) return 1;
    double s = 0;
    for (int c = 0; c < classes; c++)
        if (y[c] > 0) s += (double)y[c] * log((double)y[c]);
    double conf = 1 + s / log((double)classes);
    if (conf < 0) conf = 0;
    if (conf > 1) conf = 1;
    return (float)conf;
}

/* ---- exit sets ------------------------------------------------------------- */

struct trn_exits {
    int n;
    int *at;
    float *threshold;
    trn_conf_measure *measure;
    trn_net **net;
    size_t *wbytes; /* each branch's weights file size */
    int trunk_layers;
};

void trn_exits_free(trn_exits *x)
{
    if (!x) return;
    for (int j = 0; j < x->n; j++) trn_net_free(x->net[j]);
    free(x->at);
    free(x->threshold);
    free(x->measure);
    free(x->net);
    free(x->wbytes);
    free(x);
}

/* The cfg of branch j: a clone of cfg holding [net] (the shared one's keys
 * plus the trunk layer's shape) and the sections first..end-1. */
static trn_cfg *branch_cfg(const trn_cfg *cfg, int has_net, int first, int end, trn_shape in,
                           trn_err *err)
{
    trn_cfg *c = trn_cfg_clone(cfg, err);
    if (!c) return NULL;
    for (int s = trn_cfg_sections(c) - 1; s >= 0; s--) {
        if ((s >= first && s < end) || (has_net && s == 0)) continue;
        if (trn_cfg_remove_section(c, s, err) != 0) goto fail;
    }
    if (!has_net && trn_cfg_insert_section(c, 0, "net", err) < 0) goto fail;
    if (trn_cfg_setf(c, 0, "width", err, "%d", in.w) || trn_cfg_setf(c, 0, "height", err, "%d", in.h) ||
        trn_cfg_setf(c, 0, "channels", err, "%d", in.c))
        goto fail;
    return c;
fail:
    trn_cfg_free(c);
    return NULL;
}

trn_exits *trn_exits_create(const trn_net *trunk, const trn_cfg *cfg, const trn_net_opts *opts,
                            trn_err *err)
{
    char where[600];
    int ns = trn_cfg_sections(cfg), has_net = 0, first = 0;
    if (ns > 0 && (strcmp(trn_cfg_section_type(cfg, 0), "net") == 0 ||
                   strcmp(trn_cfg_section_type(cfg, 0), "network") == 0)) {
        has_net = 1;
        first = 1;
        static const char *const computed[] = {"width", "height", "channels"};
        for (int k = 0; k < 3; k++)
            if (trn_cfg_get(cfg, 0, computed[k]))
                return trn_errf(err, "%s: [net] of an exits cfg must not set %s: every branch "
                                "takes the shape of its trunk layer's output",
                                trn_cfg_where(cfg, 0, computed[k], where, sizeof where), computed[k]),
                       NULL;
    }
    if (first >= ns || strcmp(trn_cfg_section_type(cfg, first), "exit") != 0) {
        trn_errf(err, "%s: an exits cfg lists [exit] sections, each followed by its branch's layers; "
                 "this one %s", trn_cfg_name(cfg), first >= ns ? "has no [exit]" : "does not start with [exit]");
        return NULL;
    }
    trn_exits *x = calloc(1, sizeof *x);
    if (!x) return trn_errf(err, "out of memory"), NULL;
    x->trunk_layers = trn_net_layers(trunk);
    for (int s = first; s < ns; s++) x->n += strcmp(trn_cfg_section_type(cfg, s), "exit") == 0;
    x->at = calloc((size_t)x->n, sizeof *x->at);
    x->threshold = calloc((size_t)x->n, sizeof *x->threshold);
    x->measure = calloc((size_t)x->n, sizeof *x->measure);
    x->net = calloc((size_t)x->n, sizeof *x->net);
    x->wbytes = calloc((size_t)x->n, sizeof *x->wbytes);
    if (!x->at || !x->threshold || !x->measure || !x->net || !x->wbytes) {
        trn_errf(err, "out of memory");
        goto fail;
    }
    int j = 0;
    for (int s = first; s < ns; j++) {
        int end = s + 1;
        while (end < ns && strcmp(trn_cfg_section_type(cfg, end), "exit") != 0) end++;
        const char *at = trn_cfg_get(cfg, s, "at");
        char *e = NULL;
        long a = at ? strtol(at, &e, 10) : -1;
        if (!at || *e || a < 0 || a >= x->trunk_layers - 1) {
            trn_errf(err, "%s: [exit] at=%s: give the index of a trunk layer before its last "
                     "(0..%d)", trn_cfg_where(cfg, s, "at", where, sizeof where), at ? at : "(missing)",
                     x->trunk_layers - 2);
            goto fail;
        }
        if (j && a <= x->at[j - 1]) {
            trn_errf(err, "%s: [exit] at=%ld: exits are listed in increasing trunk layer (the one "
                     "before is at=%d)", trn_cfg_where(cfg, s, "at", where, sizeof where), a, x->at[j - 1]);
            goto fail;
        }
        if (end == s + 1) {
            trn_errf(err, "%s: [exit] has no layers: a branch ends with [softmax] over the trunk's "
                     "classes", trn_cfg_where(cfg, s, NULL, where, sizeof where));
            goto fail;
        }
        x->at[j] = (int)a;
        trn_layer_info li;
        if (trn_net_layer_info(trunk, (int)a, &li) != 0) {
            trn_errf(err, "no trunk layer %ld", a);
            goto fail;
        }
        trn_cfg *bc = branch_cfg(cfg, has_net, s, end, li.out, err);
        if (!bc) goto fail;
        x->net[j] = trn_net_create(bc, opts, err);
        trn_cfg_free(bc);
        if (!x->net[j]) {
            trn_err_prefix(err, "exit %d (at trunk layer %ld)", j, a);
            goto fail;
        }
        const char *t = trn_cfg_get(cfg, s, "threshold");
        x->threshold[j] = t ? strtof(t, NULL) : 1.0f;
        const char *cm = trn_cfg_get(cfg, s, "confidence"); /* a bad name: the [exit] setup refused it */
        if (cm) (void)trn_conf_measure_parse(cm, &x->measure[j]);
        if (trn_net_outputs(x->net[j]) != trn_net_outputs(trunk)) {
            trn_errf(err, "%s: exit %d has %zu outputs, the trunk %zu: a branch ends with [softmax] "
                     "over the trunk's classes", trn_cfg_where(cfg, s, NULL, where, sizeof where), j,
                     trn_net_outputs(x->net[j]), trn_net_outputs(trunk));
            goto fail;
        }
        x->wbytes[j] = trn_weights_bytes(x->net[j]);
        s = end;
    }
    return x;
fail:
    trn_exits_free(x);
    return NULL;
}

trn_exits *trn_exits_load(const trn_net *trunk, const char *cfg_path, const char *weights_path,
                          const trn_net_opts *opts, trn_err *err)
{
    trn_cfg *c = trn_cfg_read(cfg_path, err);
    if (!c) return NULL;
    trn_exits *x = trn_exits_create(trunk, c, opts, err);
    trn_cfg_free(c);
    if (x && weights_path && trn_exits_weights_load(x, weights_path, err) != 0) {
        trn_exits_free(x);
        return NULL;
    }
    return x;
}

int trn_exits_count(const trn_exits *x) { return x->n; }
int trn_exit_at(const trn_exits *x, int j) { return j >= 0 && j < x->n ? x->at[j] : -1; }
float trn_exit_threshold(const trn_exits *x, int j) { return j >= 0 && j < x->n ? x->threshold[j] : 1; }
trn_conf_measure trn_exit_measure(const trn_exits *x, int j)
{
    return j >= 0 && j < x->n ? x->measure[j] : TRN_CONF_ENTROPY;
}
trn_net *trn_exit_net(const trn_exits *x, int j) { return j >= 0 && j < x->n ? x->net[j] : NULL; }

int trn_exit_set_threshold(trn_exits *x, int j, float t, trn_err *err)
{
    if (j < 0 || j >= x->n) return trn_errf(err, "no exit %d (there are %d)", j, x->n);
    if (!(t >= 0 && t <= 1)) return trn_errf(err, "exit %d: threshold %g is not in [0, 1]", j, t);
    x->threshold[j] = t;
    return 0;
}

size_t trn_exits_weights_bytes(const trn_exits *x)
{
    size_t n = 0;
    for (int j = 0; j < x->n; j++) n += x->wbytes[j];
    return n;
}

int trn_exits_weights_load_mem(trn_exits *x, const void *buf, size_t len, int borrow, const char *name,
                               trn_err *err)
{
    size_t want = trn_exits_weights_bytes(x);
    if (len != want)
        return trn_errf(err, "%s: %zu bytes, but the %d exits' weights files take %zu together: not "
                        "the weights of this exits cfg", name, len, x->n, want);
    size_t off = 0;
    for (int j = 0; j < x->n; j++) {
        if (trn_weights_load_mem(x->net[j], (const char *)buf + off, x->wbytes[j], borrow, name, err) != 0)
            return trn_err_prefix(err, "exit %d (bytes %zu..%zu)", j, off, off + x->wbytes[j]);
        off += x->wbytes[j];
    }
    return 0;
}

int trn_exits_weights_load(trn_exits *x, const char *path, trn_err *err)
{
    char *buf;
    size_t len;
    if (trn_read_file(path, (size_t)1 << 32, &buf, &len, err) != 0) return -1;
    int rc = trn_exits_weights_load_mem(x, buf, len, 0, path, err);
    free(buf);
    return rc;
}

static int put_file(void *ctx, const void *p, size_t n)
{
    return fwrite(p, 1, n, ctx) == n ? 0 : -1;
}

int trn_exits_weights_save(const trn_exits *x, const char *path, trn_err *err)
{
    trn_atomic a;
    if (trn_atomic_open(&a, path, err) != 0) return -1;
    for (int j = 0; j < x->n; j++) {
        if (!x->net[j]->params_ready || trn_weights_write(x->net[j], put_file, a.f) != 0) {
            trn_errf(err, "cannot write %s: %s", trn_atomic_name(&a), x->net[j]->params_ready ? strerror(errno)
                     : "an exit has no parameters");
            trn_atomic_abort(&a);
            return -1;
        }
    }
    return trn_atomic_commit(&a, err);
}

/* ---- the early-exit forward ------------------------------------------------- */

int trn_exits_forward(trn_net *trunk, trn_exits *x, const float *in, float alpha, trn_exit_result *r,
                      trn_err *err)
{
    if (trunk->batch != 1)
        return trn_errf(err, "%s: the early-exit forward runs one input at a time (batch 1, not %d)",
                        trunk->name, trunk->batch);
    if (!(alpha >= 0))
        return trn_errf(err, "alpha %g: give a number >= 0 (1: the lossless thresholds)", alpha);
    if (x->trunk_layers != trunk->n)
        return trn_errf(err, "%s: the exits were built for a trunk of %d layers, this one has %d",
                        trunk->name, x->trunk_layers, trunk->n);
    int classes = (int)trn_net_outputs(trunk);
    memset(r, 0, sizeof *r);
    int done = -1; /* the last trunk layer run */
    for (int j = 0; j < x->n; j++) {
        if (done < 0) {
            if (trn_net_forward_upto(trunk, in, x->at[j], err) != 0) return -1;
        } else {
            for (int i = done + 1; i <= x->at[j]; i++) trn_layer_run(trunk, &trunk->layers[i], 0, 0);
        }
        done = x->at[j];
        if (x->net[j]->batch != 1)
            return trn_errf(err, "exit %d: batch %d, not 1", j, x->net[j]->batch);
        if (trn_net_forward(x->net[j], trn_net_layer_output(trunk, done), err) != 0)
            return trn_err_prefix(err, "exit %d", j);
        const float *y = trn_net_output(x->net[j]);
        float conf = trn_confidence_by(x->measure[j], y, classes);
        if (conf > alpha * x->threshold[j]) {
            r->exit = j;
            r->probs = y;
            r->confidence = conf;
            r->trunk_last = done;
            return 0;
        }
    }
    if (done < 0) {
        if (trn_net_forward(trunk, in, err) != 0) return -1;
    } else {
        for (int i = done + 1; i < trunk->n; i++) trn_layer_run(trunk, &trunk->layers[i], 0, 0);
    }
    r->exit = x->n;
    r->probs = trn_net_output(trunk);
    r->confidence = trn_confidence(r->probs, classes);
    r->trunk_last = trunk->n - 1;
    return 0;
}
