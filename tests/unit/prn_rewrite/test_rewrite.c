/* Unit tests of the prune library's selectors, static rewrites, cfg
 * splicing and warm start. */
#include "testutil_impl.h"
#include "testlib_prn.h"

/* ---- selectors ---------------------------------------------------------- */

static void selectors_resolve(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(pt_small_cfg);
    trn_err e;
    prn_plan *p = prn_plan_create(c, &e);
    assert_non_null(p);
    assert_int_equal(prn_plan_layers(p), 9);
    /* MACs: L0 16*16*8*27 = 55296, L2 8*8*16*72 = 73728, L4 8*8*16*24 = 24576 */
    assert_int_equal(prn_plan_layer(p, 0)->macs, 16 * 16 * 8 * 27);
    assert_int_equal(prn_plan_layer(p, 2)->macs, 8 * 8 * 16 * 72);
    assert_int_equal(prn_select(p, "conv#1", &e), 2);
    assert_int_equal(prn_select(p, "conv#2", &e), 0);
    assert_int_equal(prn_select(p, "conv#3", &e), 4);
    assert_int_equal(prn_select(p, "conv@1", &e), 0);
    assert_int_equal(prn_select(p, "conv@3", &e), 4);
    assert_int_equal(prn_select(p, "fc#1", &e), 6);
    assert_int_equal(prn_select(p, "fc@1", &e), 6);
    assert_int_equal(prn_select(p, "fc@2", &e), 7);
    assert_int_equal(prn_select(p, "L5", &e), 5);
    assert_true(prn_plan_layer(p, 7)->classifier);
    assert_int_equal(prn_plan_layer(p, 7)->rank, 0);
    prn_plan_free(p);
    trn_cfg_free(c);
}

static void selectors_errors(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(pt_small_cfg);
    trn_err e;
    prn_plan *p = prn_plan_create(c, &e);
    assert_non_null(p);
    static const struct {
        const char *sel, *msg;
    } bad[] = {
        {"conv#4", "has 3 convolutional layers"},
        {"fc#2", "1 connected layers besides the final classifier"},
        {"local@1", "has 0 local layers"},
        {"L9", "has 9 layers (L0..L8)"},
        {"conv#0", "must be an integer >= 1"},
        {"conv#x", "must be an integer >= 1"},
        {"dense#1", "is not a layer selector"},
        {"", "empty layer selector"},
        {"L-1", "is not a layer selector"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        assert_int_equal(prn_select(p, bad[i].sel, &e), -1);
        if (!strstr(e.msg, bad[i].msg)) fail_msg("%s: '%s' lacks '%s'", bad[i].sel, e.msg, bad[i].msg);
    }
    prn_plan_free(p);
    trn_cfg_free(c);
}

/* Ties in MACs go to the earlier layer. */
static void selectors_ties(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg("[net]\nwidth=8\nheight=8\nchannels=4\n"
                        "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                        "[convolutional]\nfilters=4\nsize=3\npad=1\n");
    trn_err e;
    prn_plan *p = prn_plan_create(c, &e);
    assert_non_null(p);
    assert_int_equal(prn_select(p, "conv#1", &e), 0);
    assert_int_equal(prn_select(p, "conv#2", &e), 1);
    prn_plan_free(p);
    trn_cfg_free(c);
}

/* ---- rewrites at the cfg level ------------------------------------------ */

/* Rewrites spec on the small cfg; returns the new cfg's text (caller
 * frees) and fills map. NULL with the message in e on error. */
static char *rewrite_text(const char *cfg_text, const char *spec, int *map, trn_err *e)
{
    trn_cfg *c = pt_cfg(cfg_text), *out = NULL;
    prn_plan *p = prn_plan_create(c, e);
    char *text = NULL;
    int tmp[64];
    if (p && prn_rewrite_cfg(c, p, spec, &out, map ? map : tmp, NULL, NULL, e) == 0)
        text = trn_cfg_format(out, NULL);
    trn_cfg_free(out);
    prn_plan_free(p);
    trn_cfg_free(c);
    return text;
}

/* The value of key in the section of cfg text whose index is s. */
static const char *section_value(const char *text, int s, const char *key)
{
    static char buf[128];
    trn_cfg *c = pt_cfg(text);
    const char *v = trn_cfg_get(c, s, key);
    snprintf(buf, sizeof buf, "%s", v ? v : "(absent)");
    trn_cfg_free(c);
    return buf;
}

/* Every section of a and b, except those listed, is identical. */
static void assert_same_except(const char *a, const char *b, int except1, int except2)
{
    trn_cfg *x = pt_cfg(a), *y = pt_cfg(b);
    assert_int_equal(trn_cfg_sections(x), trn_cfg_sections(y));
    for (int s = 0; s < trn_cfg_sections(x); s++) {
        if (s == except1 || s == except2) continue;
        assert_string_equal(trn_cfg_section_type(x, s), trn_cfg_section_type(y, s));
        assert_int_equal(trn_cfg_keys(x, s), trn_cfg_keys(y, s));
        for (int k = 0; k < trn_cfg_keys(x, s); k++) {
            assert_string_equal(trn_cfg_key(x, s, k), trn_cfg_key(y, s, k));
            assert_string_equal(trn_cfg_value(x, s, k), trn_cfg_value(y, s, k));
        }
    }
    trn_cfg_free(x);
    trn_cfg_free(y);
}

static void rewrite_stride2(void **state)
{
    (void)state;
    trn_err e;
    char *t = rewrite_text(pt_small_cfg, "stride2:conv#2", NULL, &e);
    assert_non_null(t);
    assert_string_equal(section_value(t, 1, "stride"), "2");
    assert_same_except(pt_small_cfg, t, 1, -1);
    assert_non_null(strstr(t, "# L0")); /* comments survive */
    free(t);
}

/* '#' ranks the base; '~' ranks the network as rewritten by the earlier
 * ops: once L2 (conv#1) has stride 2, L0 is the most expensive layer. */
static const char chain_cfg[] =
    "[net]\nbatch=1\nwidth=16\nheight=16\nchannels=3\n\n"
    "[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n" /* 55296 */
    "[maxpool]\nsize=2\nstride=2\n\n"
    "[convolutional]\nfilters=16\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n" /* 73728 */
    "[convolutional]\nfilters=16\nsize=1\nactivation=leaky\n\n" /* 16384 */
    "[connected]\noutput=4\nactivation=linear\n\n[softmax]\n";

static void rewrite_sequential_selectors(void **state)
{
    (void)state;
    trn_err e;
    char *t = rewrite_text(chain_cfg, "stride2:conv#1+stride2:conv~1", NULL, &e);
    assert_non_null(t);
    assert_string_equal(section_value(t, 3, "stride"), "2"); /* L2 */
    assert_string_equal(section_value(t, 1, "stride"), "2"); /* L0 */
    free(t);
    t = rewrite_text(chain_cfg, "stride2:conv#1+stride2:conv#1", NULL, &e);
    assert_non_null(t);
    assert_string_equal(section_value(t, 3, "stride"), "4"); /* L2 twice */
    assert_string_equal(section_value(t, 1, "stride"), "1"); /* L0 untouched */
    free(t);
    /* With nothing rewritten before it, conv~k is conv#k. */
    t = rewrite_text(chain_cfg, "half:conv~1", NULL, &e);
    assert_non_null(t);
    char *u = rewrite_text(chain_cfg, "half:conv#1", NULL, &e);
    assert_non_null(u);
    assert_string_equal(t, u);
    free(t);
    free(u);
    assert_null(rewrite_text(chain_cfg, "stride2:conv#1+half:conv~4", NULL, &e));
    assert_non_null(strstr(e.msg, "conv~4"));
    assert_non_null(strstr(e.msg, "3 convolutional layers"));
}

static void rewrite_half_and_fcdiv(void **state)
{
    (void)state;
    trn_err e;
    char *t = rewrite_text(pt_small_cfg, "half:conv#1+fcdiv4:fc#1", NULL, &e);
    assert_non_null(t);
    assert_string_equal(section_value(t, 3, "filters"), "8");
    assert_string_equal(section_value(t, 7, "output"), "8");
    assert_same_except(pt_small_cfg, t, 3, 7);
    free(t);
    for (int f = 2; f <= 32; f *= 2) {
        char spec[32], want[8];
        snprintf(spec, sizeof spec, "fcdiv%d:fc@1", f);
        snprintf(want, sizeof want, "%d", 32 / f);
        t = rewrite_text(pt_small_cfg, spec, NULL, &e);
        assert_non_null(t);
        assert_string_equal(section_value(t, 7, "output"), want);
        free(t);
    }
}

/* Removing L4: the shortcut (now L4) read L2 with from=-3; it must read
 * L2 still, which is now -2 away. */
static void rewrite_remove_renumbers_relative(void **state)
{
    (void)state;
    trn_err e;
    int map[9];
    char *t = rewrite_text(pt_small_cfg, "remove:conv@3", map, &e);
    assert_non_null(t);
    trn_cfg *c = pt_cfg(t);
    assert_int_equal(trn_cfg_sections(c), 9);
    assert_string_equal(trn_cfg_section_type(c, 5), "shortcut");
    assert_string_equal(trn_cfg_get(c, 5, "from"), "-2");
    assert_string_equal(trn_cfg_get(c, 4, "layers"), "-1,-2");
    int want[9] = {0, 1, 2, 3, -1, 4, 5, 6, 7};
    assert_memory_equal(map, want, sizeof want);
    trn_cfg_free(c);
    free(t);
}

/* Absolute references after the removed layer move down by one. */
static void rewrite_remove_renumbers_absolute(void **state)
{
    (void)state;
    const char *cfg = "[net]\nwidth=8\nheight=8\nchannels=3\n"
                      "[convolutional]\nfilters=4\nsize=3\npad=1\n"  /* L0 */
                      "[convolutional]\nfilters=4\nsize=3\npad=1\n"  /* L1 */
                      "[convolutional]\nfilters=4\nsize=3\npad=1\n"  /* L2 */
                      "[route]\nlayers=2,0\n"                         /* L3 */
                      "[shortcut]\nfrom=1\n";                         /* L4 */
    trn_err e;
    char *t = rewrite_text(cfg, "remove:L0", NULL, &e);
    assert_null(t);
    assert_non_null(strstr(e.msg, "reads layer 0, which is removed"));
    assert_non_null(strstr(e.msg, "test.cfg:"));
    t = rewrite_text(cfg, "remove:L1", NULL, &e);
    assert_null(t); /* the shortcut reads L1 */
    assert_non_null(strstr(e.msg, "reads layer 1"));
    const char *cfg2 = "[net]\nwidth=8\nheight=8\nchannels=3\n"
                       "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                       "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                       "[convolutional]\nfilters=4\nsize=3\npad=1\n"
                       "[route]\nlayers=2,0\n"
                       "[shortcut]\nfrom=2\n";
    t = rewrite_text(cfg2, "remove:L1", NULL, &e);
    assert_non_null(t);
    trn_cfg *c = pt_cfg(t);
    assert_string_equal(trn_cfg_get(c, 3, "layers"), "1,0");
    assert_string_equal(trn_cfg_get(c, 4, "from"), "1");
    trn_cfg_free(c);
    free(t);
}

static void rewrite_remove_refuses_broken_route(void **state)
{
    (void)state;
    trn_err e;
    char *t = rewrite_text(pt_small_cfg, "remove:conv#1", NULL, &e);
    assert_null(t);
    if (!strstr(e.msg, "cannot remove L2") || !strstr(e.msg, "test.cfg:") ||
        !strstr(e.msg, "reads layer 2, which is removed"))
        fail_msg("%s", e.msg);
}

static void rewrite_three_ops_and_limits(void **state)
{
    (void)state;
    trn_err e;
    char *t = rewrite_text(pt_small_cfg, "stride2:conv#2+half:conv#3+fcdiv2:fc#1", NULL, &e);
    assert_non_null(t);
    assert_string_equal(section_value(t, 1, "stride"), "2");
    assert_string_equal(section_value(t, 5, "filters"), "8");
    assert_string_equal(section_value(t, 7, "output"), "16");
    free(t);
    static const struct {
        const char *spec, *msg;
    } bad[] = {
        {"", "empty rewrite spec"},
        {"stride2:conv#2+half:conv#3+fcdiv2:fc#1+half:conv#2", "more than 3 rewrites"},
        {"stride3:conv#1", "unknown rewrite 'stride3'"},
        {"half", "has no ':'"},
        {"half:conv#1+", "empty rewrite"},
        {"fcdiv3:fc#1", "must be 2, 4, 8, 16 or 32"},
        {"half:conv#9", "has 3 convolutional layers"},
        {"half:fc#1", "is a [connected] layer"},
        {"fcdiv2:conv#1", "fcdiv applies to [connected]"},
        {"fcdiv2:fc@2", "final classifier"},
        {"local2conv:conv#1", "local2conv applies to [local]"},
        {"remove:L1", "is a [maxpool] layer"},
        {"remove:conv@3+half:conv@3", "was removed by an earlier rewrite"},
        {"fcdiv32:fc#1+fcdiv2:fc#1", "has 1 outputs; /2 leaves none"},
        /* impossible shapes: L2 at stride 2 no longer matches L1 in the route */
        {"stride2:conv#1", "the variant cannot be built"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        t = rewrite_text(pt_small_cfg, bad[i].spec, NULL, &e);
        if (t) fail_msg("'%s' was accepted", bad[i].spec);
        if (!strstr(e.msg, bad[i].msg)) fail_msg("'%s': '%s' lacks '%s'", bad[i].spec, e.msg, bad[i].msg);
    }
}

/* ---- [local] layers (cfg level) ----------------------------------------- */

static const char local_cfg[] = "[net]\nwidth=12\nheight=12\nchannels=3\n"
                                "[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=leaky\n"
                                "[local]\nfilters=6\nsize=3\nstride=1\npad=1\nactivation=leaky\n"
                                "[maxpool]\nsize=2\nstride=2\n"
                                "[connected]\noutput=5\nactivation=linear\n";

static void local_plan_and_conversion(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(local_cfg);
    trn_err e;
    prn_plan *p = prn_plan_create(c, &e);
    assert_non_null(p);
    assert_true(prn_plan_has_local(p));
    const prn_layer *l = prn_plan_layer(p, 1);
    assert_int_equal(l->kind, PRN_KIND_LOCAL);
    /* Darknet's local layer: 12*12*6 biases + 12*12*6*(4*3*3) weights. */
    assert_int_equal(l->params, 12 * 12 * 6 + 12 * 12 * 6 * 36);
    assert_int_equal(l->macs, 12 * 12 * 6 * 36);
    assert_int_equal(prn_select(p, "local@1", &e), 1);
    assert_int_equal(prn_select(p, "local#1", &e), 1);
    prn_plan_free(p);
    trn_cfg_free(c);
    char *t = rewrite_text(local_cfg, "local2conv:local@1", NULL, &e);
    assert_non_null(t);
    assert_null(strstr(t, "[local]"));
    trn_cfg *r = pt_cfg(t);
    assert_string_equal(trn_cfg_section_type(r, 2), "convolutional");
    assert_string_equal(trn_cfg_get(r, 2, "filters"), "6");
    assert_string_equal(trn_cfg_get(r, 2, "size"), "3");
    assert_string_equal(trn_cfg_get(r, 2, "pad"), "1");
    assert_string_equal(trn_cfg_get(r, 2, "activation"), "leaky");
    trn_cfg_free(r);
    free(t);
    /* A rewrite on another layer keeps the [local] layer in the text. */
    t = rewrite_text(local_cfg, "half:local@1", NULL, &e);
    assert_non_null(t);
    assert_non_null(strstr(t, "[local]"));
    free(t);
}

/* A Darknet weights file of the [local] cfg: header 0.2.0 then for each
 * layer its floats, value = layer * 1000 + position. */
static const char *write_local_weights(const prn_plan *p)
{
    const char *path = tl_path("local.weights");
    FILE *f = fopen(path, "wb");
    int32_t ver[3] = {0, 2, 0};
    uint64_t seen = 77;
    fwrite(ver, sizeof ver, 1, f);
    fwrite(&seen, sizeof seen, 1, f);
    for (int i = 0; i < prn_plan_layers(p); i++)
        for (uint64_t k = 0; k < prn_plan_layer(p, i)->params; k++) {
            float v = (float)(i * 1000) + (float)(k % 1000) * 0.001f;
            fwrite(&v, sizeof v, 1, f);
        }
    fclose(f);
    return path;
}

static void local_warm_start_from_file(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(local_cfg);
    trn_err e;
    prn_plan *p = prn_plan_create(c, &e);
    char path[1024];
    snprintf(path, sizeof path, "%s", write_local_weights(p));
    prn_variant v;
    assert_int_equal(prn_rewrite(c, NULL, path, "local2conv:local@1", 3, &v, &e), 0);
    const cJSON *copied = cJSON_GetObjectItem(v.fields, "copied");
    assert_true(pt_json_has(copied, 0));
    assert_true(pt_json_has(copied, 3));
    assert_false(pt_json_has(copied, 1));
    assert_true(pt_json_has(cJSON_GetObjectItem(v.fields, "initialised"), 1));
    /* L0 (biases first) and L3 hold the file's values. */
    int n;
    int f0 = pt_layer_params(v.net, 0, &n);
    const trn_param *t = trn_net_params(v.net, NULL);
    assert_true(t[f0].data[0] == 0.0f && t[f0].data[1] == 0.001f);
    int f3 = pt_layer_params(v.net, 3, &n);
    assert_true(t[f3].data[2] == 3000.002f);
    prn_variant_free(&v);
    /* Keeping the [local] layer is refused: the trainer cannot build it. */
    assert_int_equal(prn_rewrite(c, NULL, path, "half:conv#1", 3, &v, &e), -1);
    assert_non_null(strstr(e.msg, "add local2conv"));
    /* A file of the wrong size is named with both sizes. */
    FILE *f = fopen(path, "ab");
    fputc(0, f);
    fclose(f);
    assert_int_equal(prn_rewrite(c, NULL, path, "local2conv:local@1", 3, &v, &e), -1);
    assert_non_null(strstr(e.msg, "bytes, but"));
    prn_plan_free(p);
    trn_cfg_free(c);
}

/* ---- warm start --------------------------------------------------------- */

/* The variant's layers are bit-exact copies of the base where shapes kept,
 * and exactly the seed's initialisation elsewhere. */
static void warm_start_copies(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(pt_small_cfg);
    trn_net *base = pt_base(c, 1, 11);
    trn_err e;
    prn_variant v;
    assert_int_equal(prn_rewrite(c, base, NULL, "stride2:conv#2", 5, &v, &e), 0);
    assert_string_equal(v.technique, "rewrite");
    const cJSON *copied = cJSON_GetObjectItem(v.fields, "copied");
    const cJSON *init = cJSON_GetObjectItem(v.fields, "initialised");
    /* L6's input shrank (16x4x4 instead of 16x8x8): only it is new. */
    int want_copied[] = {0, 2, 4, 7};
    for (size_t i = 0; i < 4; i++) {
        assert_true(pt_json_has(copied, want_copied[i]));
        assert_true(pt_same_layer(base, want_copied[i], v.net, want_copied[i]));
    }
    assert_int_equal(cJSON_GetArraySize(copied), 4);
    assert_int_equal(cJSON_GetArraySize(init), 1);
    assert_true(pt_json_has(init, 6));
    /* L6 is what a network built from seed 5 holds. */
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.seed = 5;
    trn_net *fresh = trn_net_create(v.cfg, &o, &e);
    assert_non_null(fresh);
    assert_true(pt_same_layer(fresh, 6, v.net, 6));
    assert_false(pt_same_layer(base, 7, fresh, 7));
    trn_net_free(fresh);
    prn_variant_free(&v);

    /* Removal: copies follow the map (base L7 -> variant L6). */
    assert_int_equal(prn_rewrite(c, base, NULL, "remove:conv@3", 5, &v, &e), 0);
    copied = cJSON_GetObjectItem(v.fields, "copied");
    assert_true(pt_same_layer(base, 7, v.net, 6));
    assert_true(pt_json_has(copied, 6));
    assert_true(pt_json_has(cJSON_GetObjectItem(v.fields, "initialised"), 5));
    prn_variant_free(&v);

    /* half on L2: L2 keeps its first 8 filters (sliced); L4 reads the route
     * [L2, L1], whose channel 8 was L2's and now is L1's first: no
     * correspondence, so it starts afresh; the rest is copied. */
    assert_int_equal(prn_rewrite(c, base, NULL, "half:conv#1", 5, &v, &e), 0);
    init = cJSON_GetObjectItem(v.fields, "initialised");
    const cJSON *sliced = cJSON_GetObjectItem(v.fields, "sliced");
    assert_int_equal(cJSON_GetArraySize(init), 1);
    assert_true(pt_json_has(init, 4));
    assert_int_equal(cJSON_GetArraySize(sliced), 1);
    assert_true(pt_json_has(sliced, 2));
    assert_true(pt_same_layer(base, 6, v.net, 6));
    {
        int nb, nv;
        int fb = pt_layer_params(base, 2, &nb), fv = pt_layer_params(v.net, 2, &nv);
        const trn_param *pb = trn_net_params(base, NULL), *pv = trn_net_params(v.net, NULL);
        assert_int_equal(nb, nv);
        for (int k = 0; k < nb; k++) {
            if (pv[fv + k].rows == 1) { /* a per-filter vector: its first 8 entries */
                assert_int_equal(pv[fv + k].count, 8);
                assert_memory_equal(pv[fv + k].data, pb[fb + k].data, 8 * sizeof(float));
                continue;
            }
            assert_int_equal(pv[fv + k].rows, 8);
            assert_int_equal(pv[fv + k].cols, pb[fb + k].cols); /* same input channels */
            for (int r = 0; r < pv[fv + k].rows; r++)          /* its first filters */
                assert_memory_equal(pv[fv + k].data + (size_t)r * pv[fv + k].cols,
                                    pb[fb + k].data + (size_t)r * pb[fb + k].cols,
                                    (size_t)pv[fv + k].cols * sizeof(float));
        }
    }
    prn_variant_free(&v);

    /* fcdiv4 on L6: L6 keeps its first 8 outputs and the classifier L7 the
     * matching first 8 input columns of each of its rows. */
    assert_int_equal(prn_rewrite(c, base, NULL, "fcdiv4:fc#1", 5, &v, &e), 0);
    sliced = cJSON_GetObjectItem(v.fields, "sliced");
    assert_true(pt_json_has(sliced, 6) && pt_json_has(sliced, 7));
    {
        int nb, nv;
        int fb = pt_layer_params(base, 7, &nb), fv = pt_layer_params(v.net, 7, &nv);
        const trn_param *pb = trn_net_params(base, NULL), *pv = trn_net_params(v.net, NULL);
        for (int k = 0; k < nb; k++)
            if (pb[fb + k].role == TRN_PARAM_WEIGHTS) {
                assert_int_equal(pv[fv + k].cols, 8);
                for (int r = 0; r < pv[fv + k].rows; r++)
                    assert_memory_equal(pv[fv + k].data + (size_t)r * 8,
                                        pb[fb + k].data + (size_t)r * pb[fb + k].cols,
                                        8 * sizeof(float));
            }
    }
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* Same inputs and seed: the same bytes; another seed: other bytes. */
static void rewrite_is_deterministic(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(pt_small_cfg);
    trn_net *base = pt_base(c, 1, 11);
    trn_err e;
    size_t len[3];
    char *bytes[3];
    for (int i = 0; i < 3; i++) {
        prn_variant v;
        /* L6's input shrinks to 16x4x4: it is drawn from the seed. */
        assert_int_equal(prn_rewrite(c, base, NULL, "stride2:conv#2", i < 2 ? 9 : 10, &v, &e), 0);
        const char *dir = tl_path("det%d", i);
        assert_int_equal(prn_variant_write(&v, dir, &e), 0);
        bytes[i] = tl_read(tl_path("det%d/init.weights", i), &len[i]);
        assert_non_null(bytes[i]);
        prn_variant_free(&v);
    }
    assert_int_equal(len[0], len[1]);
    assert_memory_equal(bytes[0], bytes[1], len[0]);
    assert_int_equal(len[0], len[2]);
    assert_true(memcmp(bytes[0], bytes[2], len[0]) != 0);
    for (int i = 0; i < 3; i++) free(bytes[i]);
    trn_net_free(base);
    trn_cfg_free(c);
}

/* The folder: three files, meta.json well formed; the cfg and weights load
 * back into the same network. */
static void variant_folder(void **state)
{
    (void)state;
    trn_cfg *c = pt_cfg(pt_small_cfg);
    trn_net *base = pt_base(c, 1, 11);
    trn_err e;
    prn_variant v;
    assert_int_equal(prn_rewrite(c, base, NULL, "half:conv#3", 1, &v, &e), 0);
    const char *dir = tl_path("folder/v1");
    assert_int_equal(prn_variant_write(&v, dir, &e), 0);
    char *meta = tl_read(tl_path("folder/v1/meta.json"), NULL);
    assert_non_null(meta);
    cJSON *j = cJSON_Parse(meta);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "technique")->valuestring, "rewrite");
    assert_string_equal(cJSON_GetObjectItem(j, "parent")->valuestring, "base");
    assert_non_null(strstr(cJSON_GetObjectItem(j, "description")->valuestring, "filters /2 on L4"));
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "technique_fields"), "spec")->valuestring,
                        "half:conv#3");
    cJSON_Delete(j);
    free(meta);
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    trn_net *back = trn_net_load(tl_path("folder/v1/variant.cfg"), tl_path("folder/v1/init.weights"), &o, &e);
    assert_non_null(back);
    for (int i = 0; i < trn_net_layers(back); i++) {
        int n;
        pt_layer_params(back, i, &n);
        if (n) assert_true(pt_same_layer(back, i, v.net, i));
    }
    assert_false(tl_exists(tl_path("folder/v1/.meta.json.new")));
    trn_net_free(back);
    prn_variant_free(&v);
    trn_net_free(base);
    trn_cfg_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(selectors_resolve),
        cmocka_unit_test(selectors_errors),
        cmocka_unit_test(selectors_ties),
        cmocka_unit_test(rewrite_stride2),
        cmocka_unit_test(rewrite_sequential_selectors),
        cmocka_unit_test(rewrite_half_and_fcdiv),
        cmocka_unit_test(rewrite_remove_renumbers_relative),
        cmocka_unit_test(rewrite_remove_renumbers_absolute),
        cmocka_unit_test(rewrite_remove_refuses_broken_route),
        cmocka_unit_test(rewrite_three_ops_and_limits),
        cmocka_unit_test(local_plan_and_conversion),
        cmocka_unit_test(local_warm_start_from_file),
        cmocka_unit_test(warm_start_copies),
        cmocka_unit_test(rewrite_is_deterministic),
        cmocka_unit_test(variant_folder),
    };
    int rc = cmocka_run_group_tests_name("prn_rewrite", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
