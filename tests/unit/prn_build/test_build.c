/* Unit tests of the prune library's data-driven builders that the verbs
 * call (prune roadmap -> prn_roadmap_build), on a small synthetic set:
 * what they write, what they report, their settings and their errors;
 * prune scan -> prn_scan, prune retarget -> prn_retarget_run and prune
 * specialise -> prn_specialise, prune grow -> prn_grow and prune
 * early-exit -> prn_early_exit_run likewise. */
#include "testutil_impl.h"
#include "testlib_prn.h"
#include "ds.h"

#include <math.h>
#include <stdarg.h>

/* The synthetic set (2 training, 1 valid, 1 test image per identity
 * class, 16 x 16) and its size task, made once. */
static const char *set_data(int *classes)
{
    static char path[1024];
    static int n;
    if (!path[0]) {
        ds_synth_opts o;
        ds_synth_defaults(&o);
        o.size = 16, o.train = 2, o.valid = 1, o.test = 1;
        ds_write_result res;
        trn_err e;
        if (ds_synth_generate(&o, test_tmpdir(), "s", 1, NULL, &res, &e)) fail_msg("%s", e.msg);
        snprintf(path, sizeof path, "%s/s/s-size.data", test_tmpdir());
        trn_dataset *ds = trn_dataset_open(path, &e);
        if (!ds) fail_msg("%s", e.msg);
        n = trn_dataset_classes(ds);
        trn_dataset_close(ds);
    }
    if (classes) *classes = n;
    return path;
}

/* A base for the set: conv 8 (bn), max pool, conv 6, connected C, softmax,
 * random weights; its cfg and weights written under the test folder. */
static void write_base(const char *name, int classes, char *cfg_path, char *weights_path, size_t len)
{
    char text[1024];
    snprintf(text, sizeof text,
             "[net]\nbatch=8\nwidth=16\nheight=16\nchannels=3\nlearning_rate=0.05\nmomentum=0.9\n"
             "[convolutional]\nfilters=8\nsize=3\npad=1\nbatch_normalize=1\nactivation=relu\n"
             "[maxpool]\nsize=2\nstride=2\n"
             "[convolutional]\nfilters=6\nsize=3\npad=1\nactivation=leaky\n"
             "[connected]\noutput=%d\nactivation=linear\n[softmax]\n", classes);
    snprintf(cfg_path, len, "%s/%s.cfg", test_tmpdir(), name);
    snprintf(weights_path, len, "%s/%s.weights", test_tmpdir(), name);
    assert_int_equal(tl_write_text(cfg_path, text), 0);
    trn_cfg *c = pt_cfg(text);
    trn_net *n = pt_base(c, 1, 7);
    trn_err e;
    if (trn_weights_save(n, weights_path, &e)) fail_msg("%s", e.msg);
    trn_net_free(n);
    trn_cfg_free(c);
}

static void count_line(void *ctx, const char *line)
{
    (*(int *)ctx)++;
    assert_non_null(strstr(line, "prune roadmap: "));
}

/* The options of a small roadmap of the base: two L1 steps of 0.25, each
 * retrained 2 batches, every step kept. */
static void small_roadmap(prn_roadmap_opts *o, const char *cfg, const char *weights, const char *data,
                          const char *out)
{
    prn_roadmap_opts_defaults(o);
    trn_err e;
    const char *set[] = {"min_accuracy=0", "retrain_batches=2", "bn_batches=1", "max_steps=2", "step=0.25"};
    for (size_t i = 0; i < sizeof set / sizeof *set; i++)
        if (prn_roadmap_set(o, set[i], &e)) fail_msg("%s", e.msg);
    o->cfg = cfg, o->weights = weights, o->data = data, o->out = out, o->method = PRN_RANK_L1, o->seed = 3;
}

/* A roadmap of two L1 steps: the files of every step, roadmap.json
 * matching the summary, nested kept counts, one progress line a step,
 * the same bytes again; then a refused base leaves nothing behind. */
static void roadmap_build(void **state)
{
    (void)state;
    int classes;
    const char *data = set_data(&classes);
    char cfg[1024], weights[1024], out[1024], again[1024];
    write_base("rm", classes, cfg, weights, sizeof cfg);
    snprintf(out, sizeof out, "%s/rm-out", test_tmpdir());
    snprintf(again, sizeof again, "%s/rm-again", test_tmpdir());
    prn_roadmap_opts o;
    small_roadmap(&o, cfg, weights, data, out);
    trn_err e;
    int lines = 0;
    o.progress = count_line, o.progress_ctx = &lines;
    prn_roadmap_summary s;
    if (prn_roadmap_build(&o, &s, &e)) fail_msg("%s", e.msg);
    assert_int_equal(s.steps, 3);
    assert_int_equal(lines, 3);
    assert_string_equal(s.stopped, "max_steps (2) reached");
    assert_int_equal(s.seed_step, 2); /* min_accuracy 0: every step passes */
    assert_true(s.seed_filters < s.filters && s.filters == 14);
    assert_true(s.seed_macs_ratio > 0 && s.seed_macs_ratio < 1);
    char p[1100];
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/step-%d.weights", out, k);
        assert_true(tl_exists(p));
    }
    snprintf(p, sizeof p, "%s/roadmap.json", out);
    size_t len;
    char *text = tl_read(p, &len);
    cJSON *j = cJSON_ParseWithLength(text, len);
    assert_non_null(j);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "steps")), s.steps);
    assert_int_equal(cJSON_GetObjectItem(j, "seed_step")->valueint, s.seed_step);
    for (int k = 1; k < s.steps; k++) {
        const cJSON *a = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), k - 1), "kept");
        const cJSON *b = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "steps"), k), "kept");
        for (int l = 0; l < cJSON_GetArraySize(a); l++)
            assert_true(cJSON_GetArrayItem(b, l)->valueint <= cJSON_GetArrayItem(a, l)->valueint);
    }
    cJSON_Delete(j);
    free(text);
    /* the same inputs, the same bytes (the folder's name apart: none is recorded) */
    o.out = again, o.progress = NULL;
    if (prn_roadmap_build(&o, &s, &e)) fail_msg("%s", e.msg);
    char q[1100];
    snprintf(p, sizeof p, "%s/step-2.weights", out);
    snprintf(q, sizeof q, "%s/step-2.weights", again);
    assert_true(tl_same_file(p, q));
    /* a base below min_accuracy: refused, naming it, and no folder made */
    snprintf(out, sizeof out, "%s/rm-refused", test_tmpdir());
    o.out = out, o.min_accuracy = 1;
    assert_int_equal(prn_roadmap_build(&o, &s, &e), -1);
    assert_non_null(strstr(e.msg, "below min_accuracy 1.0000: lower min_accuracy"));
    assert_false(tl_exists(out));
}

/* The settings: each known key in its range, unknown keys listed. */
static void roadmap_settings(void **state)
{
    (void)state;
    prn_roadmap_opts o;
    prn_roadmap_opts_defaults(&o);
    assert_true(o.step == 0.2 && o.min_accuracy == 0.5 && o.max_steps == 12 && o.connected == 1);
    trn_err e;
    assert_int_equal(prn_roadmap_set(&o, "warmup=30", &e), 0);
    assert_int_equal(o.warmup, 30);
    assert_int_equal(prn_roadmap_set(&o, "step=0.95", &e), -1);
    assert_non_null(strstr(e.msg, "step must be in [0.001, 0.9]"));
    assert_int_equal(prn_roadmap_set(&o, "max_steps=2.5", &e), -1);
    assert_non_null(strstr(e.msg, "whole number"));
    assert_int_equal(prn_roadmap_set(&o, "stride=2", &e), -1);
    assert_non_null(strstr(e.msg, "unknown key 'stride' (known: step, min_accuracy"));
    assert_int_equal(prn_roadmap_set(&o, "step", &e), -1);
    assert_non_null(strstr(e.msg, "use key=value"));
}

static void count_calls(void *ctx, const cJSON *doc, const cJSON *layer)
{
    int *n = ctx;
    assert_non_null(cJSON_GetObjectItem(doc, "base"));
    n[layer ? 1 : 0]++;
}

/* The scan: a point per fraction of every ranked layer with the filters it
 * pruned, the caller told of the base and of each layer; --layers narrows
 * it; --drop single has an entry per filter; refusals name the problem. */
static void scan_points(void **state)
{
    (void)state;
    int classes;
    const char *data = set_data(&classes);
    char cfg[1024], weights[1024];
    write_base("scan", classes, cfg, weights, sizeof cfg);
    const double fr[] = {0.25, 0.5};
    int calls[2] = {0, 0};
    prn_scan_opts o = {.cfg = cfg, .weights = weights, .data = data, .method = PRN_RANK_L1, .seed = 1,
                       .fractions = fr, .nfractions = 2, .split = TRN_SPLIT_TEST, .threads = 1,
                       .progress = count_calls, .progress_ctx = calls};
    cJSON *doc;
    trn_err e;
    if (prn_scan(&o, &doc, &e)) fail_msg("%s", e.msg);
    assert_string_equal(cJSON_GetObjectItem(doc, "format")->valuestring, "prune-scan");
    const cJSON *layers = cJSON_GetObjectItem(doc, "layers"), *x;
    assert_int_equal(cJSON_GetArraySize(layers), 2); /* conv 8, conv 6; the classifier is not ranked */
    assert_int_equal(calls[0], 1);
    assert_int_equal(calls[1], 2);
    cJSON_ArrayForEach(x, layers) {
        int F = cJSON_GetObjectItem(x, "filters")->valueint;
        const cJSON *pts = cJSON_GetObjectItem(x, "points");
        assert_int_equal(cJSON_GetArraySize(pts), 2);
        for (int f = 0; f < 2; f++)
            assert_int_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(pts, f), "pruned")->valueint, (int)lround(fr[f] * F));
    }
    cJSON_Delete(doc);
    o.layers = "conv@2", o.drop = PRN_SCAN_SINGLE, o.progress = NULL;
    if (prn_scan(&o, &doc, &e)) fail_msg("%s", e.msg);
    layers = cJSON_GetObjectItem(doc, "layers");
    assert_int_equal(cJSON_GetArraySize(layers), 1);
    x = cJSON_GetArrayItem(layers, 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(x, "single")), 6);
    assert_non_null(cJSON_GetObjectItem(x, "spearman"));
    cJSON_Delete(doc);
    o.layers = "conv@9";
    assert_int_equal(prn_scan(&o, &doc, &e), -1);
    assert_non_null(strstr(e.msg, "--layers"));
    assert_null(doc);
    o.layers = NULL, o.drop = PRN_SCAN_REMOVE, o.bn = 2;
    assert_int_equal(prn_scan(&o, &doc, &e), -1);
    assert_non_null(strstr(e.msg, "only with --drop single"));
    double f[40];
    int n;
    assert_int_equal(prn_scan_fractions("0.1,0.9", f, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(prn_scan_fractions("0.1,1", f, &n, &e), -1);
    assert_int_equal(prn_scan_drop_parse("mean"), PRN_SCAN_MEAN);
    assert_int_equal(prn_scan_drop_parse("half"), -1);
}

static void count_reports(void *ctx, const prn_retarget_report *r)
{
    int *n = ctx;
    n[r->event]++;
    if (r->event != PRN_RETARGET_START) assert_true(r->task && r->sel && r->classes > 0);
}

/* A retargeting run: one head per task but the trunk's, its files and
 * table, the caller told of the start and of each head (and, sweeping, of
 * the head each task keeps), the same bytes again; a cut at the output is
 * refused and leaves nothing; the settings and points name bad values. */
static void retarget_run(void **state)
{
    (void)state;
    int classes;
    set_data(&classes);
    char cfg[1024], weights[1024], tasks[1024], out[4][1024];
    for (int i = 0; i < 4; i++) snprintf(out[i], sizeof out[i], "%s/rt-%d", test_tmpdir(), i + 1);
    write_base("rt", classes, cfg, weights, sizeof cfg);
    snprintf(tasks, sizeof tasks, "%s/s/s.tasks", test_tmpdir());
    int n[3] = {0, 0, 0};
    prn_retarget_opts o;
    prn_retarget_opts_defaults(&o);
    trn_err e;
    const char *set[] = {"batches=3", "aug_passes=0", "budget=0.5"};
    if (prn_retarget_settings(&o, set, 3, &e) || prn_retarget_points(&o, "conv@2", NULL, NULL, &e)) fail_msg("%s", e.msg);
    o.cfg = cfg, o.weights = weights, o.tasks = tasks, o.trunk_task = "size", o.seed = 3, o.threads = 1;
    o.out = out[0], o.progress = count_reports, o.progress_ctx = n;
    prn_retarget_summary s;
    if (prn_retarget_run(&o, &s, &e)) fail_msg("%s", e.msg);
    assert_true(s.heads >= 1);
    assert_int_equal(s.points, 1);
    assert_int_equal(s.cut_layer, 2);
    assert_int_equal(n[PRN_RETARGET_START], 1);
    assert_int_equal(n[PRN_RETARGET_HEAD], s.heads);
    assert_int_equal(n[PRN_RETARGET_KEEP], 0);
    assert_false(tl_exists(tl_path("rt-1/size"))); /* the trunk's own task has no head */
    size_t len;
    char *text = tl_read(tl_path("rt-1/retarget.json"), &len);
    cJSON *doc = cJSON_ParseWithLength(text, len);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "tasks")), s.heads);
    assert_string_equal(cJSON_GetObjectItem(doc, "trunk_task")->valuestring, "size");
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(doc, "tasks")) {
        const char *task = cJSON_GetObjectItem(row, "task")->valuestring;
        assert_true(tl_exists(tl_path("rt-1/%s/variant.cfg", task)));
        assert_true(tl_exists(tl_path("rt-1/%s/init.weights", task)));
    }
    cJSON_Delete(doc);
    free(text);
    o.out = out[1], o.progress = NULL;
    if (prn_retarget_run(&o, &s, &e)) fail_msg("%s", e.msg);
    assert_true(tl_same_file(tl_path("rt-1/retarget.json"), tl_path("rt-2/retarget.json")));
    memset(n, 0, sizeof n);
    o.out = out[2], o.progress = count_reports;
    if (prn_retarget_points(&o, NULL, "conv@1 conv@2:avgpool", NULL, &e)) fail_msg("%s", e.msg);
    if (prn_retarget_run(&o, &s, &e)) fail_msg("%s", e.msg);
    assert_int_equal(n[PRN_RETARGET_HEAD], 2 * s.heads);
    assert_int_equal(n[PRN_RETARGET_KEEP], s.heads);
    o.out = out[3];
    if (prn_retarget_points(&o, "L4", NULL, NULL, &e)) fail_msg("%s", e.msg);
    assert_int_equal(prn_retarget_run(&o, &s, &e), -1);
    assert_non_null(strstr(e.msg, "the last layer"));
    assert_false(tl_exists(out[3]));
    const char *bad[] = {"budget=2"}, *unknown[] = {"stride=2"};
    assert_int_equal(prn_retarget_settings(&o, bad, 1, &e), -1);
    assert_non_null(strstr(e.msg, "the budget is a fraction"));
    assert_int_equal(prn_retarget_settings(&o, unknown, 1, &e), -1);
    assert_int_equal(prn_retarget_points(&o, NULL, " ", NULL, &e), -1);
    assert_non_null(strstr(e.msg, "no cut given"));
}

static void count_rows(void *ctx, const cJSON *table, const cJSON *row)
{
    int *n = ctx;
    assert_non_null(cJSON_GetObjectItem(table, "generic_test"));
    n[row ? 1 : 0]++;
}

/* Contexts n=7, p=0.6 and 0.9 of the identity set, written once. */
static const char *contexts_list(void)
{
    static char list[1100];
    if (!list[0]) {
        set_data(NULL);
        ds_context_opts co;
        ds_context_defaults(&co);
        co.nn = 1, co.n[0] = 7, co.np = 2, co.p[0] = 0.6, co.p[1] = 0.9, co.seed = 2;
        ds_context_result res;
        trn_err e;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/s/contexts", test_tmpdir());
        if (ds_contexts_write(tl_path("s/s.data"), dir, &co, &res, &e)) fail_msg("%s", e.msg);
        assert_int_equal(res.written, 2);
        snprintf(list, sizeof list, "%s/contexts.list", dir);
    }
    return list;
}

/* prn_specialise: a variant folder and a row per context, the table
 * written as returned, the caller told of the generic model and of each
 * row, the cascade's bookkeeping, the same bytes again; refusals leave
 * nothing. */
static void specialise_contexts(void **state)
{
    (void)state;
    char data[1100], cfg[1024], weights[1024], out[1024], again[1024], p[1100], q[1100];
    const char *list = contexts_list();
    snprintf(data, sizeof data, "%s/s/s.data", test_tmpdir());
    trn_err e;
    trn_dataset *ds = trn_dataset_open(data, &e);
    if (!ds) fail_msg("%s", e.msg);
    write_base("spec", trn_dataset_classes(ds), cfg, weights, sizeof cfg);
    trn_dataset_close(ds);
    snprintf(out, sizeof out, "%s/spec-out", test_tmpdir());
    snprintf(again, sizeof again, "%s/spec-again", test_tmpdir());
    int calls[2] = {0, 0};
    prn_specialise_opts o = {.cfg = cfg, .weights = weights, .data = data, .contexts = list, .parent = "base",
                             .out = out, .seed = 4, .threads = 1, .progress = count_rows, .progress_ctx = calls};
    prn_head_opts_defaults(&o.head);
    o.head.batches = 20, o.head.aug_passes = 1, o.head.seed = 4;
    cJSON *t;
    if (prn_specialise(&o, &t, &e)) fail_msg("%s", e.msg);
    assert_int_equal(calls[0], 1);
    assert_int_equal(calls[1], 2);
    const cJSON *rows = cJSON_GetObjectItem(t, "contexts"), *r;
    assert_int_equal(cJSON_GetArraySize(rows), 2);
    assert_int_equal(cJSON_GetObjectItem(t, "cut_layer")->valueint, 2); /* the classifier's input */
    double fall = cJSON_GetObjectItem(t, "fallthrough_macs")->valuedouble;
    assert_true(fall > 0 && fall < cJSON_GetObjectItem(t, "generic_macs")->valuedouble);
    cJSON_ArrayForEach(r, rows) {
        const char *id = cJSON_GetObjectItem(r, "id")->valuestring;
        double share = cJSON_GetObjectItem(r, "sent_share")->valuedouble;
        assert_true(share >= 0 && share <= 1);
        assert_float_equal(cJSON_GetObjectItem(r, "expected_macs")->valuedouble,
                           cJSON_GetObjectItem(r, "specialised_macs")->valuedouble + share * fall, 1e-6);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r, "gate_sweep")), 8);
        snprintf(p, sizeof p, "%s/%s/meta.json", out, id);
        size_t len;
        char *text = tl_read(p, &len);
        cJSON *m = cJSON_ParseWithLength(text, len);
        assert_non_null(m);
        const cJSON *f = cJSON_GetObjectItem(m, "technique_fields");
        assert_string_equal(cJSON_GetObjectItem(m, "technique")->valuestring, "specialised");
        assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "context"), "n")->valueint, 7);
        assert_int_equal(cJSON_GetObjectItem(f, "from_layer")->valueint, 3);
        assert_true(cJSON_Compare(cJSON_GetObjectItem(f, "overall"), cJSON_GetObjectItem(r, "overall"), 1));
        cJSON_Delete(m);
        free(text);
    }
    snprintf(p, sizeof p, "%s/specialise.json", out);
    size_t len;
    char *text = tl_read(p, &len);
    cJSON *w = cJSON_ParseWithLength(text, len);
    assert_true(cJSON_Compare(w, t, 1));
    cJSON_Delete(w);
    free(text);
    cJSON_Delete(t);
    /* the same inputs, the same bytes */
    o.out = again, o.progress = NULL;
    if (prn_specialise(&o, &t, &e)) fail_msg("%s", e.msg);
    cJSON_Delete(t);
    snprintf(p, sizeof p, "%s/n7-p0.9/init.weights", out);
    snprintf(q, sizeof q, "%s/n7-p0.9/init.weights", again);
    assert_true(tl_same_file(p, q));
    /* refusals: named, nothing written, no table */
    snprintf(out, sizeof out, "%s/spec-refused", test_tmpdir());
    o.out = out, o.cut = "L4";
    assert_int_equal(prn_specialise(&o, &t, &e), -1);
    assert_non_null(strstr(e.msg, "the last layer"));
    assert_null(t);
    o.cut = NULL, o.generic_cfg = cfg;
    assert_int_equal(prn_specialise(&o, &t, &e), -1);
    assert_non_null(strstr(e.msg, "go together"));
    o.generic_cfg = NULL, o.data = set_data(NULL); /* the size task: another class count */
    assert_int_equal(prn_specialise(&o, &t, &e), -1);
    assert_non_null(strstr(e.msg, "classes but the model answers"));
    assert_false(tl_exists(out));
}

static void count_grow(void *ctx, const char *line)
{
    int *n = ctx;
    n[strstr(line, ") grown (") ? 0 : strstr(line, " MACs, test top-1 ") ? 1 : 2]++;
}

static const cJSON *item(const cJSON *o, const char *path0, int i, const char *path1)
{
    const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItem(o, path0), i);
    return path1 ? cJSON_GetObjectItem(a, path1) : a;
}

/* Freeze-&-grow from a 3-step roadmap: capacities (asked 5, the roadmap
 * holds 3) from the seed step to step 0 with the roadmap's kept counts and
 * MACs, capacity 1 scoring as the seed step did, the summary matching
 * capacities.json, one progress line per grown and per measured capacity,
 * the same bytes again; settings' ranges; a file that is no roadmap is
 * refused, naming it, and leaves no folder behind. */
static void grow_capacities(void **state)
{
    (void)state;
    int classes;
    const char *data = set_data(&classes);
    char cfg[1024], weights[1024], rm[1024], out[1024], again[1024], p[1100], q[1100];
    write_base("gr", classes, cfg, weights, sizeof cfg);
    snprintf(rm, sizeof rm, "%s/gr-rm", test_tmpdir());
    prn_roadmap_opts ro;
    small_roadmap(&ro, cfg, weights, data, rm);
    trn_err e;
    prn_roadmap_summary rs;
    if (prn_roadmap_build(&ro, &rs, &e)) fail_msg("%s", e.msg);
    assert_int_equal(rs.seed_step, 2);

    prn_grow_opts o;
    prn_grow_opts_defaults(&o);
    assert_true(o.batches == 100 && o.capacities == 5 && o.slices == 1 && o.bn_affine == 0 && o.revive == 0.01);
    assert_int_equal(prn_grow_set(&o, "capacities=17", &e), -1);
    assert_non_null(strstr(e.msg, "capacities: 2..16"));
    assert_int_equal(prn_grow_set(&o, "stride=2", &e), -1);
    assert_non_null(strstr(e.msg, "unknown key or value out of range"));
    assert_int_equal(prn_grow_set(&o, "slices=0.5", &e), -1);
    const char *set[] = {"batches=2", "bn_batches=1"};
    for (size_t i = 0; i < sizeof set / sizeof *set; i++)
        if (prn_grow_set(&o, set[i], &e)) fail_msg("%s", e.msg);
    assert_int_equal(o.batches, 2);
    snprintf(p, sizeof p, "%s/roadmap.json", rm);
    snprintf(out, sizeof out, "%s/gr-out", test_tmpdir());
    int lines[3] = {0};
    o.roadmap = p, o.data = data, o.out = out, o.seed = 5, o.progress = count_grow, o.progress_ctx = lines;
    prn_grow_summary s;
    if (prn_grow(&o, &s, &e)) fail_msg("%s", e.msg);
    assert_int_equal(s.capacities, 3);
    assert_int_equal(lines[0], 2);
    assert_int_equal(lines[1], 3);

    size_t len;
    char *rt = tl_read(p, &len);
    cJSON *road = cJSON_ParseWithLength(rt, len);
    snprintf(q, sizeof q, "%s/capacities.json", out);
    char *ct = tl_read(q, &len);
    cJSON *caps = cJSON_ParseWithLength(ct, len);
    assert_non_null(road);
    assert_non_null(caps);
    uint64_t sum = 0;
    for (int k = 0; k < 3; k++) {
        int step = 2 - k;
        assert_int_equal(item(caps, "capacities", k, "roadmap_step")->valueint, step);
        assert_true(item(caps, "capacities", k, "macs")->valuedouble == item(road, "steps", step, "macs")->valuedouble);
        const cJSON *kept = item(road, "steps", step, "kept"), *f = item(caps, "capacities", k, "filters");
        for (int l = 0; l < cJSON_GetArraySize(kept); l++) {
            int layer = item(road, "layers", l, "layer")->valueint;
            assert_int_equal(cJSON_GetArrayItem(f, layer)->valueint, cJSON_GetArrayItem(kept, l)->valueint);
        }
        sum += (uint64_t)item(caps, "capacities", k, "weight_bytes")->valuedouble;
        snprintf(q, sizeof q, "%s/capacity-%d.predictions", out, k + 1);
        assert_true(tl_exists(q));
    }
    /* capacity 1 holds the seed step's parameters: it scores as the seed did */
    assert_int_equal(cJSON_GetObjectItem(item(caps, "capacities", 0, "test"), "correct")->valueint,
                     cJSON_GetObjectItem(item(road, "steps", 2, "test"), "correct")->valueint);
    assert_true(s.sum_independent == sum);
    assert_true(s.weight_bytes == (uint64_t)item(caps, "capacities", 2, "weight_bytes")->valuedouble);
    assert_true(s.weight_bytes < s.sum_independent);
    cJSON_Delete(road), cJSON_Delete(caps), free(rt), free(ct);
    snprintf(q, sizeof q, "%s/meta.json", out);
    assert_true(tl_exists(q));
    snprintf(q, sizeof q, "%s/.grow", out);
    assert_false(tl_exists(q));

    /* the same inputs, the same bytes */
    snprintf(again, sizeof again, "%s/gr-again", test_tmpdir());
    o.out = again, o.progress = NULL;
    if (prn_grow(&o, &s, &e)) fail_msg("%s", e.msg);
    const char *files[] = {"init.weights", "capacity_bn.weights", "capacities.json", "meta.json",
                           "capacity-2.predictions"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char a[1200], b[1200];
        snprintf(a, sizeof a, "%s/%s", out, files[i]);
        snprintf(b, sizeof b, "%s/%s", again, files[i]);
        assert_true(tl_same_file(a, b));
    }
    /* a file that is no roadmap: refused, naming it, no folder left */
    snprintf(out, sizeof out, "%s/gr-refused", test_tmpdir());
    o.out = out, o.roadmap = data;
    assert_int_equal(prn_grow(&o, &s, &e), -1);
    assert_non_null(strstr(e.msg, "is not a roadmap.json written by `prune roadmap`"));
    assert_non_null(strstr(e.msg, data));
    assert_false(tl_exists(out));
}

/* prune early-exit's run: the variant folder with the exits' side files,
 * the description naming the base's variant, meta.json's parent, the
 * per-image record agreeing with the alpha profile at alpha 1; the --set
 * keys (predictions, the exits' own, unknown ones named); a data set with
 * another class count is refused, naming both, and nothing is written. */
static void early_exit_run(void **state)
{
    (void)state;
    int classes;
    const char *data = set_data(&classes);
    char cfg[1024], weights[1024], out[1024], other[1024], p[1100];
    write_base("ee", classes, cfg, weights, sizeof cfg);
    prn_early_exit_run_opts o;
    prn_early_exit_run_defaults(&o);
    assert_string_equal(o.parent, "base");
    assert_int_equal(o.predictions, 0);
    trn_err e;
    const char *set[] = {"predictions=1", "batch=8", "stage1=4", "finetune=2", "width=2", "layers=1", "pool_to=2"};
    for (size_t i = 0; i < sizeof set / sizeof *set; i++)
        if (prn_early_exit_run_set(&o, set[i], &e)) fail_msg("%s", e.msg);
    assert_int_equal(o.predictions, 1);
    assert_int_equal(o.exits.batch, 8);
    assert_int_equal(prn_early_exit_run_set(&o, "exitz=1", &e), -1);
    assert_non_null(strstr(e.msg, "exitz"));
    snprintf(out, sizeof out, "%s/ee-out", test_tmpdir());
    o.cfg = cfg, o.weights = weights, o.data = data, o.out = out, o.exits.seed = 4;
    o.parent = "rw-a", o.base_id = "rw-a";
    char *desc;
    if (prn_early_exit_run(&o, &desc, &e)) fail_msg("%s", e.msg);
    assert_non_null(strstr(desc, "; its base is variant rw-a"));
    free(desc);
    const char *files[] = {"variant.cfg", "init.weights", "exits.cfg", "exits.weights", "predictions.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", out, files[i]);
        assert_true(tl_exists(p));
    }
    size_t len;
    snprintf(p, sizeof p, "%s/meta.json", out);
    char *text = tl_read(p, &len);
    cJSON *m = cJSON_ParseWithLength(text, len);
    assert_non_null(m);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "parent")), "rw-a");
    const cJSON *a, *a1 = NULL;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(cJSON_GetObjectItem(m, "technique_fields"), "alpha_profile"))
        if (cJSON_GetNumberValue(cJSON_GetObjectItem(a, "alpha")) == 1) a1 = a;
    assert_non_null(a1);
    double top1 = cJSON_GetNumberValue(cJSON_GetObjectItem(a1, "top1"));
    cJSON_Delete(m);
    free(text);
    /* exits.predictions: "trn-predictions 1 test N", then "true predicted" per image */
    snprintf(p, sizeof p, "%s/exits.predictions", out);
    text = tl_read(p, &len);
    int rows = 0, right = 0, t, q;
    for (char *line = strchr(text, '\n'); line && sscanf(line + 1, "%d %d", &t, &q) == 2; line = strchr(line + 1, '\n'))
        rows++, right += t == q;
    free(text);
    assert_true(rows > 0);
    assert_true(fabs((double)right / rows - top1) < 1e-9);
    /* another class count: refused, nothing written */
    snprintf(other, sizeof other, "%s", data);
    strcpy(strstr(other, "-size.data"), ".data");
    snprintf(out, sizeof out, "%s/ee-refused", test_tmpdir());
    o.out = out, o.data = other;
    assert_int_equal(prn_early_exit_run(&o, &desc, &e), -1);
    assert_null(desc);
    assert_non_null(strstr(e.msg, "classes, the base"));
    assert_non_null(strstr(e.msg, other));
    assert_false(tl_exists(out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roadmap_settings),
        cmocka_unit_test(roadmap_build),
        cmocka_unit_test(scan_points),
        cmocka_unit_test(retarget_run),
        cmocka_unit_test(specialise_contexts),
        cmocka_unit_test(grow_capacities),
        cmocka_unit_test(early_exit_run),
    };
    int rc = cmocka_run_group_tests_name("prn_build", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
