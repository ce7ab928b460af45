/*
 * mimic.c: MCDNN's in-place transformation (section 4.1.1, Figure 5).
 *
 * A fragment L = layers from..to of the trained base is replaced by a
 * smaller schema S' (the --with text). When S' ends with another channel
 * count than L, a linear adapter (1x1 [convolutional], activation=linear)
 * is appended so that S'' = S' + adapter produces L's output shape; a
 * different height or width is refused (no linear layer of this kind maps
 * it). S'' is trained as a regression network (a [cost] type=sse layer
 * after it) on pairs (t_L, t'_L): the input and output of L in the base
 * network, computed by trn_net_forward_upto on training images. The
 * trained S'' is then spliced into the base in place of L; every other
 * layer keeps the base's weights.
 *
 * The --with text: sections separated by ';'; in each, items separated by
 * ','; the first item is the section type (brackets optional), the others
 * key=value. An item without '=' continues the previous value (so
 * "route,layers=-1,-3" works). The text is parsed as a cfg named
 * "--with item" whose line k is the k-th item, so messages point at items.
 */
#include "prn_impl.h"
#include "techniques.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void prn_mimic_opts_defaults(prn_mimic_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 16;
    o->batches = 200;
    o->learning_rate = 0.1f;
    o->momentum = 0.9f;
    o->decay = 0.0005f;
}

int prn_set_kv(const prn_set_key *t, int n, const char *kv, trn_err *err)
{
    char keys[256] = "";
    for (int k = 0; k < n; k++)
        snprintf(keys + strlen(keys), sizeof keys - strlen(keys), "%s%s", k ? ", " : "", t[k].name);
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || !eq[1])
        return trn_errf(err, "--set '%.60s': expected key=value with key one of %s", kv, keys);
    size_t klen = (size_t)(eq - kv);
    const char *v = eq + 1;
    const prn_set_key *key = NULL;
    for (int k = 0; k < n && !key; k++)
        if (strlen(t[k].name) == klen && !strncmp(kv, t[k].name, klen)) key = &t[k];
    if (!key) return trn_errf(err, "--set '%.60s': unknown key; use one of %s", kv, keys);
    char *end;
    errno = 0;
    if (key->i) {
        long x = strtol(v, &end, 10);
        if (*end || errno || x < key->lo || x > 10000000)
            return trn_errf(err, "--set '%.60s': the value must be an integer in %ld..10000000", kv, key->lo);
        *key->i = (int)x;
        return 0;
    }
    float x = strtof(v, &end);
    if (*end || errno || !(x >= 0) || x > 100)
        return trn_errf(err, "--set '%.60s': the value must be a number in [0, 100]", kv);
    *key->f = x;
    return 0;
}

int prn_mimic_opts_set(prn_mimic_opts *o, const char *kv, trn_err *err)
{
    const prn_set_key t[] = {{"batch", &o->batch, 1, NULL},           {"batches", &o->batches, 1, NULL},
                             {"learning_rate", NULL, 0, &o->learning_rate}, {"momentum", NULL, 0, &o->momentum},
                             {"decay", NULL, 0, &o->decay}};
    return prn_set_kv(t, (int)(sizeof t / sizeof *t), kv, err);
}

/* The --with text as cfg text, line k holding the k-th item (see top).
 * A continuation item leaves its own line empty (a comment line). */
char *prn_with_to_cfg(const char *with, trn_err *err)
{
    size_t n_items = 1;
    for (const char *p = with; *p; p++) n_items += *p == ',' || *p == ';';
    char **lines = calloc(n_items, sizeof *lines);
    char *t = NULL;
    size_t k = 0;
    int start = 1, key_line = -1;
    if (!lines) goto oom;
    for (const char *p = with;; k++) {
        size_t n = strcspn(p, ",;");
        char *item = malloc(n + 1);
        if (!item) goto oom;
        memcpy(item, p, n);
        item[n] = 0;
        if (start) {
            size_t len = strlen(item);
            int br = len >= 2 && item[0] == '[' && item[len - 1] == ']';
            lines[k] = prn_strdupf("[%.*s]", (int)(br ? len - 2 : len), item + br);
            free(item);
            key_line = -1;
        } else if (strchr(item, '=') || key_line < 0) {
            lines[k] = item;
            key_line = (int)k;
        } else {
            if (prn_appendf(&lines[key_line], ",%s", item) != 0) {
                free(item);
                goto oom;
            }
            free(item);
            lines[k] = prn_strdupf("%s", "");
        }
        if (!lines[k]) goto oom;
        p += n;
        if (*p == 0) break;
        start = *p == ';';
        p++;
    }
    if (prn_appendf(&t, "%s", "") != 0) goto oom;
    for (size_t i = 0; i <= k; i++)
        if (prn_appendf(&t, "%s\n", lines[i]) != 0) goto oom;
    for (size_t i = 0; i < n_items; i++) free(lines[i]);
    free(lines);
    return t;
oom:
    for (size_t i = 0; lines && i < n_items; i++) free(lines[i]);
    free(lines);
    free(t);
    trn_errf(err, "out of memory");
    return NULL;
}

/* The regression network S'': [net] sized for the fragment's input, the
 * replacement's sections, the adapter if needed, [cost] type=sse. *n_new
 * receives the layers that go into the variant (all but the cost);
 * *adapter whether one was added. */
static trn_cfg *regression_cfg(const trn_cfg *repl, trn_shape in, trn_shape want,
                               const prn_mimic_opts *o, int *n_new, int *adapter, trn_err *err)
{
    trn_cfg *c = trn_cfg_clone(repl, err);
    trn_net *probe = NULL;
    if (!c) return NULL;
    if (trn_cfg_insert_section(c, 0, "net", err) < 0 ||
        trn_cfg_setf(c, 0, "batch", err, "%d", o->batch) ||
        trn_cfg_set(c, 0, "subdivisions", "1", err) ||
        trn_cfg_setf(c, 0, "width", err, "%d", in.w) ||
        trn_cfg_setf(c, 0, "height", err, "%d", in.h) ||
        trn_cfg_setf(c, 0, "channels", err, "%d", in.c) ||
        trn_cfg_setf(c, 0, "learning_rate", err, "%g", (double)o->learning_rate) ||
        trn_cfg_setf(c, 0, "momentum", err, "%g", (double)o->momentum) ||
        trn_cfg_setf(c, 0, "decay", err, "%g", (double)o->decay) ||
        trn_cfg_set(c, 0, "policy", "constant", err))
        goto fail;
    trn_net_opts no;
    prn_net_opts(&no, 0);
    no.external_params = 1;
    if (!(probe = trn_net_create(c, &no, err))) {
        trn_err_prefix(err, "the replacement cannot be built on the fragment's %dx%dx%d input",
                       in.c, in.h, in.w);
        goto fail;
    }
    for (int i = 0; i < trn_net_layers(probe); i++) {
        trn_layer_info info;
        trn_net_layer_info(probe, i, &info);
        if (info.kind == TRN_LAYER_COST || info.kind == TRN_LAYER_SOFTMAX) {
            trn_errf(err, "--with: layer %d is a [%s]; the replacement is a regression fragment "
                     "(no [cost] or [softmax] layers)", i, info.type);
            goto fail;
        }
    }
    trn_layer_info last;
    trn_net_layer_info(probe, trn_net_layers(probe) - 1, &last);
    trn_net_free(probe);
    probe = NULL;
    if (last.out.h != want.h || last.out.w != want.w) {
        trn_errf(err, "the replacement's output is %dx%dx%d (c x h x w) but the fragment's is "
                 "%dx%dx%d: the height and width must match (a linear adapter fixes only the "
                 "channel count); change the replacement's strides, pooling or padding",
                 last.out.c, last.out.h, last.out.w, want.c, want.h, want.w);
        goto fail;
    }
    *adapter = last.out.c != want.c;
    int s = trn_cfg_sections(c);
    if (*adapter && (trn_cfg_insert_section(c, s, "convolutional", err) < 0 ||
                     trn_cfg_setf(c, s, "filters", err, "%d", want.c) ||
                     trn_cfg_set(c, s, "size", "1", err) || trn_cfg_set(c, s, "stride", "1", err) ||
                     trn_cfg_set(c, s, "pad", "0", err) ||
                     trn_cfg_set(c, s, "activation", "linear", err)))
        goto fail;
    *n_new = trn_cfg_sections(c) - 1;
    s = trn_cfg_sections(c);
    /* The gradient of the mean (not the sum) of squared errors, so that
     * one learning rate suits fragments of any output size; the loss
     * reported stays the sum per image. */
    if (trn_cfg_insert_section(c, s, "cost", err) < 0 || trn_cfg_set(c, s, "type", "sse", err) ||
        trn_cfg_setf(c, s, "scale", err, "%.9g", 1.0 / ((double)want.c * want.h * want.w)))
        goto fail;
    return c;
fail:
    trn_net_free(probe);
    trn_cfg_free(c);
    return NULL;
}

/* A float setting as the decimal the user wrote (0.1, not 0.100000001). */
static double tidy(float f)
{
    char b[32];
    snprintf(b, sizeof b, "%.7g", (double)f);
    return strtod(b, NULL);
}

/* Mean of v[from, to). */
static double mean_of(const float *v, int from, int to)
{
    double s = 0;
    for (int i = from; i < to; i++) s += v[i];
    return to > from ? s / (to - from) : 0;
}

int prn_mimic(const trn_cfg *cfg, trn_net *base, const prn_mimic_opts *o, prn_variant *out,
              trn_err *err)
{
    memset(out, 0, sizeof *out);
    if (!o->from || !o->to || !o->with || !o->input)
        return trn_errf(err, "internal: mimic needs from, to, with and an input");
    if (o->batch < 1 || o->batches < 1)
        return trn_errf(err, "mimic: batch and batches must be at least 1");
    if (trn_net_batch(base) != o->batch)
        return trn_errf(err, "internal: the base network has batch %d, the regression %d",
                        trn_net_batch(base), o->batch);
    prn_plan *plan = prn_plan_create(cfg, err);
    if (!plan) return -1;
    trn_cfg *repl = NULL, *reg = NULL;
    trn_net *mini = NULL;
    char *text = NULL;
    float *losses = NULL, *x = NULL;
    int *map = NULL, *mini_map = NULL, rc = -1;
    int nl = prn_plan_layers(plan);
    int a = prn_select(plan, o->from, err);
    if (a < 0) {
        trn_err_prefix(err, "--from");
        goto out;
    }
    int b = prn_select(plan, o->to, err);
    if (b < 0) {
        trn_err_prefix(err, "--to");
        goto out;
    }
    if (b < a) {
        trn_errf(err, "--from %s is L%d and --to %s is L%d: the fragment must run forward "
                 "(from <= to)", o->from, a, o->to, b);
        goto out;
    }
    if (trn_net_layers(base) != nl) {
        trn_errf(err, "the base network has %d layers but %s has %d", trn_net_layers(base),
                 trn_cfg_name(cfg), nl);
        goto out;
    }
    if (!(text = prn_with_to_cfg(o->with, err))) goto out;
    if (!(repl = trn_cfg_parse(text, strlen(text), "--with item", err))) goto out;
    if (trn_cfg_sections(repl) < 1 || trn_cfg_find_section(repl, "net", 0) >= 0 ||
        trn_cfg_find_section(repl, "network", 0) >= 0) {
        trn_errf(err, "--with '%.200s': give the replacement's layer sections only (no [net])",
                 o->with);
        goto out;
    }
    trn_shape in = a ? prn_plan_layer(plan, a - 1)->out : prn_plan_layer(plan, 0)->in;
    trn_shape want = prn_plan_layer(plan, b)->out;
    int n_new = 0, adapter = 0;
    if (!(reg = regression_cfg(repl, in, want, o, &n_new, &adapter, err))) goto out;
    /* The variant's cfg, checked before any training. */
    map = malloc((size_t)nl * sizeof *map);
    mini_map = malloc((size_t)(n_new + 1) * sizeof *mini_map);
    losses = malloc((size_t)o->batches * sizeof *losses);
    if (!map || !mini_map || !losses) {
        trn_errf(err, "out of memory");
        goto out;
    }
    if (!(out->cfg = trn_cfg_clone(cfg, err))) goto out;
    if (prn_cfg_splice(out->cfg, a, b, reg, 1, n_new, 1, map, err) != 0) {
        trn_err_prefix(err, "cannot replace L%d..L%d", a, b);
        goto out;
    }
    if (prn_check_cfg(out->cfg, err) != 0) goto out;
    /* S'' regresses the fragment's output from its input. */
    trn_net_opts mo;
    trn_net_opts_defaults(&mo);
    mo.seed = o->seed;
    if (!(mini = trn_net_create(reg, &mo, err))) goto out;
    size_t in_floats = (size_t)o->batch * trn_net_inputs(base);
    if (!(x = malloc(in_floats * sizeof *x))) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (int step = 0; step < o->batches; step++) {
        if (o->input(o->input_ctx, (uint64_t)step, x, err) != 0 ||
            trn_net_forward_upto(base, x, b, err) != 0)
            goto out;
        const float *t_in = a ? trn_net_layer_output(base, a - 1) : x;
        const float *t_out = trn_net_layer_output(base, b);
        if (trn_net_train_step(mini, t_in, t_out, &losses[step], err) != 0) goto out;
    }
    /* Error on a batch the regression never saw (step `batches`). */
    size_t outs = (size_t)want.c * want.h * want.w * o->batch;
    double held = 0, energy = 0;
    if (o->input(o->input_ctx, (uint64_t)o->batches, x, err) != 0 ||
        trn_net_forward_upto(base, x, b, err) != 0 ||
        trn_net_forward(mini, a ? trn_net_layer_output(base, a - 1) : x, err) != 0)
        goto out;
    const float *t_out = trn_net_layer_output(base, b), *y = trn_net_output(mini);
    for (size_t i = 0; i < outs; i++) {
        held += ((double)y[i] - t_out[i]) * ((double)y[i] - t_out[i]);
        energy += (double)t_out[i] * t_out[i];
    }
    /* The spliced network: base layers through map, S'' layers in place. */
    trn_net_opts vo;
    prn_net_opts(&vo, o->seed);
    if (!(out->net = trn_net_create(out->cfg, &vo, err))) goto out;
    cJSON *copies = prn_copy_layers(base, out->net, map, err);
    if (!copies) goto out;
    cJSON_Delete(copies);
    for (int m = 0; m < n_new; m++) mini_map[m] = a + m;
    mini_map[n_new] = -1; /* the [cost] layer */
    if (!(copies = prn_copy_layers(mini, out->net, mini_map, err))) goto out;
    cJSON_Delete(copies);
    trn_net_set_seen(out->net, trn_net_seen(base));
    int tail = o->batches / 10 > 0 ? o->batches / 10 : 1;
    double first = mean_of(losses, 0, tail), lastl = mean_of(losses, o->batches - tail, o->batches);
    out->technique = TECHNIQUE_MIMIC;
    out->description = prn_strdupf("mimic: L%d..L%d (%s..%s) replaced by '%s'%s, regressed with "
                                   "L2 loss over %d batches of %d (loss %.4g -> %.4g)",
                                   a, b, o->from, o->to, o->with,
                                   adapter ? " + a linear 1x1 adapter" : "", o->batches, o->batch,
                                   first, lastl);
    cJSON *f = out->fields = cJSON_CreateObject();
    if (!out->description || !f) {
        trn_errf(err, "out of memory");
        goto out;
    }
    cJSON_AddStringToObject(f, "from", o->from);
    cJSON_AddStringToObject(f, "to", o->to);
    cJSON_AddNumberToObject(f, "from_layer", a);
    cJSON_AddNumberToObject(f, "to_layer", b);
    cJSON_AddStringToObject(f, "with", o->with);
    cJSON_AddBoolToObject(f, "adapter", adapter);
    int nl_new[2] = {a, a + n_new - 1};
    cJSON_AddItemToObject(f, "new_layers", prn_json_ints(nl_new, 2));
    cJSON_AddNumberToObject(f, "batches", o->batches);
    cJSON_AddNumberToObject(f, "batch", o->batch);
    cJSON_AddNumberToObject(f, "learning_rate", tidy(o->learning_rate));
    cJSON_AddNumberToObject(f, "momentum", tidy(o->momentum));
    cJSON_AddNumberToObject(f, "decay", tidy(o->decay));
    cJSON_AddNumberToObject(f, "seed", (double)o->seed);
    cJSON_AddNumberToObject(f, "loss_first", first);
    cJSON_AddNumberToObject(f, "loss_last", lastl);
    cJSON_AddNumberToObject(f, "heldout_mse", held / (double)outs);
    cJSON_AddNumberToObject(f, "heldout_relative_error", energy > 0 ? held / energy : 0);
    cJSON_AddItemToObject(f, "layer_map", prn_json_ints(map, nl));
    rc = 0;
out:
    if (rc != 0) prn_variant_free(out);
    free(text);
    free(losses);
    free(x);
    free(map);
    free(mini_map);
    trn_cfg_free(repl);
    trn_cfg_free(reg);
    trn_net_free(mini);
    prn_plan_free(plan);
    return rc;
}
