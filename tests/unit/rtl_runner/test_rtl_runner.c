/* Unit tests of the runner (rtl_runner_*, runtime-lite/src/runner.c),
 * through librtl alone: a specialised variant runs as a cascade with its
 * partner and the result names the variant that answered; with a context
 * profiler, a specialised model whose classes dominate the window answers
 * first for its partner; the scheduled executor feeds a warm run's
 * measured time back to the scheduler. The catalog is written here (cfg
 * text, weights from libtrn-infer, a BMP image). */
#include "testutil_impl.h"
#include "testlib_trn.h"
#include "rtl.h"
#include "rtl_sign.h"

#include <stdarg.h>
#include <stdint.h>

/* The generic model (5 classes) and a specialised one (c0, c1, other). */
static const char cfg_gen[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\nactivation=relu\n"
    "[avgpool]\n[connected]\noutput=5\nactivation=linear\n[softmax]\n";
/* A head of the generic model for task u: its layer 0 (the trunk) is the
 * generic model's, written from the same seed. */
static const char cfg_head[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\nactivation=relu\n"
    "[avgpool]\n[connected]\noutput=2\nactivation=linear\n[softmax]\n";
static const char cfg_spec[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\nactivation=relu\n"
    "[avgpool]\n[connected]\noutput=3\nactivation=linear\n[softmax]\n";

static rtl_catalog *cat;
static char img[2][512];
static char manifest[16384];

/* Appends to the manifest text. */
static void add(const char *fmt, ...)
{
    size_t at = strlen(manifest);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(manifest + at, sizeof manifest - at, fmt, ap);
    va_end(ap);
}

static void write_weights(const char *cfg, uint64_t seed, const char *path)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_net *n = tl_net(cfg, &o);
    assert_non_null(n);
    tl_randomize(n, seed);
    trn_err e;
    assert_int_equal(trn_weights_save(n, path, &e), 0);
    trn_net_free(n);
}

/* A 12x12 24-bit BMP of seeded pixels. */
static void write_bmp(const char *path, uint64_t seed)
{
    uint8_t b[54 + 12 * 12 * 3] = {'B', 'M'};
    uint32_t v[] = {sizeof b, 0, 54, 40, 12, 12};
    memcpy(b + 2, v, 4), memcpy(b + 10, v + 2, 4), memcpy(b + 14, v + 3, 4), memcpy(b + 18, v + 4, 8);
    b[26] = 1, b[28] = 24;
    float px[12 * 12 * 3];
    tl_fill_uniform(px, sizeof px / sizeof *px, seed, 0, 255);
    for (size_t i = 0; i < sizeof px / sizeof *px; i++) b[54 + i] = (uint8_t)px[i];
    assert_int_equal(tl_write(path, b, sizeof b), 0);
}

/* Appends a variant's file entry to the manifest. */
static void file_json(const char *id, const char *role, const char *name)
{
    char sha[65];
    uint8_t d[RTL_SHA256_BYTES];
    uint64_t len;
    rtl_err e;
    assert_int_equal(rtl_sha256_file(tl_path("variants/%s/%s", id, name), d, &len, &e), 0);
    rtl_sha256_hex(d, sha);
    add("%s{\"role\":\"%s\",\"path\":\"variants/%s/%s\",\"size\":%llu,\"sha256\":\"%s\"}",
        strcmp(role, "cfg") ? "," : "", role, id, name, (unsigned long long)len, sha);
}

static const struct {
    const char *id, *technique, *task, *cfg, *fields;
    uint64_t seed;
} specs[] = {
    {"base", "base", "t", cfg_gen, "{}", 40},
    {"head", "head", "u", cfg_head, "{\"head\":{\"from_layer\":1}}", 40},
    /* gate 0: MCDNN's cascade, "other" alone falls through */
    {"spec", "specialised", "s", cfg_spec,
     "{\"context\":{\"other_class\":2,\"p\":0.6},\"cascade\":{\"partner\":\"base\"}}", 41},
    /* gate 0.999: nearly every answer falls through */
    {"spec-gated", "specialised", "s", cfg_spec,
     "{\"context\":{\"other_class\":2,\"p\":0.6},\"cascade\":{\"partner\":\"base\",\"gate\":0.999}}", 42},
};
#define NSPECS (sizeof specs / sizeof specs[0])

static int setup(void **state)
{
    (void)state;
    add("{\"schema\":1,\"catalog\":\"unit\",\"model\":\"tiny\",\"version\":1,"
        "\"tasks\":{\"t\":{\"classes\":5,\"labels\":[\"c0\",\"c1\",\"c2\",\"c3\",\"c4\"]},"
        "\"s\":{\"classes\":3,\"labels\":[\"c0\",\"c1\",\"other\"]},"
        "\"u\":{\"classes\":2,\"labels\":[\"u0\",\"u1\"]}},\"variants\":[");
    for (size_t i = 0; i < NSPECS; i++) {
        const char *id = specs[i].id;
        assert_int_equal(trn_mkdir_p(tl_path("variants/%s", id), NULL), 0);
        assert_int_equal(tl_write_text(tl_path("variants/%s/variant.cfg", id), specs[i].cfg), 0);
        write_weights(specs[i].cfg, specs[i].seed, tl_path("variants/%s/variant.weights", id));
        add("%s{\"id\":\"%s\",\"technique\":\"%s\",\"task\":\"%s\",\"parent\":%s,\"depends_on\":[],"
            "\"description\":\"unit\",\"cost\":{\"macs\":1,\"params\":1,\"weight_bytes\":4,"
            "\"peak_activation_bytes\":4},\"accuracy\":{\"%s\":{\"top1\":0.8}},"
            "\"latency\":{\"build-host\":{\"source\":\"measured\",\"ms_median\":100,\"runs\":3}},"
            "\"technique_fields\":%s,\"files\":[",
            i ? "," : "", id, specs[i].technique, specs[i].task, strcmp(id, "head") ? "null" : "\"base\"",
            specs[i].task, specs[i].fields);
        file_json(id, "cfg", "variant.cfg");
        file_json(id, "weights", "variant.weights");
        add("]}");
    }
    add("]}");
    for (int k = 0; k < 2; k++) {
        snprintf(img[k], sizeof img[k], "%s", tl_path("img%d.bmp", k));
        write_bmp(img[k], 7 + (uint64_t)k);
    }
    rtl_err e;
    if (!(cat = rtl_catalog_parse(manifest, strlen(manifest), test_tmpdir(), &e))) fail_msg("%s", e.msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rtl_catalog_close(cat);
    return 0;
}

/* m's rtl_model_info. */
static rtl_model_info info(const rtl_model *m)
{
    rtl_model_info mi;
    assert_int_equal(rtl_model_describe(m, &mi, sizeof mi, NULL), 0);
    return mi;
}

/* v's id. */
static const char *vid(const rtl_variant *v)
{
    rtl_variant_info vi;
    assert_int_equal(rtl_variant_describe(v, &vi, sizeof vi, NULL), 0);
    return vi.id;
}

/* Variant id's own output on image into out[0..n) (opened alone). */
static size_t own_output(const char *id, const char *image, float *out, size_t cap)
{
    rtl_err e;
    rtl_model *m = rtl_model_open(cat, id, NULL, &e);
    assert_non_null(m);
    assert_int_equal(rtl_model_run_image(m, image, &e), 0);
    size_t n = info(m).classes;
    assert_true(n <= cap);
    memcpy(out, rtl_model_output(m), n * sizeof *out);
    rtl_model_close(m);
    return n;
}

/* Whether specialised variant id's own answer on image falls through to
 * its partner: its "other" class (2), or a probability under gate. */
static int falls_through(const char *id, const char *image, double gate)
{
    float y[8];
    size_t n = own_output(id, image, y, 8), best = 0;
    for (size_t k = 1; k < n; k++)
        if (y[k] > y[best]) best = k;
    return best == 2 || y[best] < gate;
}

/* A specialised variant runs with its partner: the answer is the partner's
 * exactly when the specialised model answers "other" (or under its gate),
 * and the result names the variant that answered. */
/* A runner on cat serving decisions of s under no energy or money bound
 * (one hour, no cloud). */
static rtl_runner *unbounded_runner(rtl_sched *s)
{
    rtl_err e;
    rtl_sched_budget b = {.energy_mj = -1, .cloud_usd = -1, .horizon_s = 3600, .disconnected = 1};
    if (rtl_sched_set_budget(s, &b, 0, &e) != 0) fail_msg("%s", e.msg);
    rtl_runner *r = rtl_runner_new(NULL, cat, NULL, &e);
    if (!r) fail_msg("%s", e.msg);
    return r;
}

static void cascade_answered_by(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        double gate;
    } runs[] = {{"spec", 0}, {"spec-gated", 0.999}};
    rtl_err e;
    rtl_runner *r = rtl_runner_new(NULL, cat, NULL, &e);
    assert_non_null(r);
    int partner_answers = 0;
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++)
        for (int k = 0; k < 2; k++) {
            rtl_runner_request q = {.variant = runs[i].id, .alpha = -1, .image = img[k]};
            rtl_runner_result res;
            if (rtl_runner_run(r, &q, &res, &e) != 0) fail_msg("%s", e.msg);
            int fall = falls_through(runs[i].id, img[k], runs[i].gate);
            partner_answers += fall;
            assert_string_equal(res.answered_by, fall ? "base" : runs[i].id);
            assert_string_equal(res.cascade, ""); /* no context: the variant asked for is the cascade */
            float y[8];
            size_t n = own_output(res.answered_by, img[k], y, 8);
            assert_int_equal(info(res.model).classes, n);
            assert_memory_equal(rtl_model_output(res.model), y, n * sizeof *y);
            assert_int_equal(res.cold, k == 0); /* opened by its first request, warm after */
        }
    assert_true(partner_answers > 0); /* the gate 0.999 sends its answers through */
    rtl_runner_free(r);
}

/* With a context: the specialised model is used only once its classes
 * dominate the window, it answers first for its partner, and asking for a
 * specialised variant itself is refused. */
static void context_cascade(void **state)
{
    (void)state;
    rtl_runner_options o = {.context = 1, .context_params = {.window = 4, .min_samples = 2}};
    rtl_err e;
    rtl_runner *r = rtl_runner_new(NULL, cat, &o, &e);
    assert_non_null(r);
    rtl_runner_request q = {.variant = "base", .alpha = -1, .image = img[0]};
    rtl_runner_result res;
    /* an empty window: base alone, its answer observed */
    if (rtl_runner_run(r, &q, &res, &e) != 0) fail_msg("%s", e.msg);
    assert_string_equal(res.cascade, "");
    assert_string_equal(res.answered_by, "base");
    assert_int_equal(res.switched, 0);
    rtl_context_profiler *p = rtl_runner_profiler(r, "t", &e);
    assert_non_null(p);
    rtl_context c;
    assert_int_equal(rtl_profile_context(p, &c, &e), 0);
    assert_int_equal(c.seen, 1);
    /* c0 and c1 (the specialised models' classes) fill the window */
    for (int k = 0; k < 4; k++) assert_int_equal(rtl_context_observe(p, (uint32_t)(k & 1), &e), 0);
    rtl_specialised sp;
    assert_int_equal(rtl_runner_specialised(r, "t", 0, &sp, &e), 1);
    assert_string_equal(sp.variant, "spec");
    assert_string_equal(sp.partner, "base");
    assert_int_equal(sp.n, 2);
    assert_true(sp.share == 1 && sp.matches && !sp.in_use);
    assert_int_equal(rtl_runner_specialised(r, "t", 2, &sp, &e), 0);
    if (rtl_runner_run(r, &q, &res, &e) != 0) fail_msg("%s", e.msg);
    assert_int_equal(res.switched, 1);
    assert_string_equal(res.cascade, "unit/spec"); /* the first of equals, in catalog order */
    assert_true(res.share == 1 && res.p == 0.6);
    assert_string_equal(res.answered_by, falls_through("spec", img[0], 0) ? "base" : "spec");
    assert_int_equal(rtl_runner_specialised(r, "t", 0, &sp, &e), 1);
    assert_int_equal(sp.in_use, 1);
    /* a specialised variant asked for under a context: refused, naming its partner */
    rtl_runner_request qs = {.variant = "spec", .alpha = -1};
    assert_int_equal(rtl_runner_prepare(r, &qs, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "give its partner base"));
    rtl_runner_free(r);
}

/* The scheduled executor: a cold run's time is not fed back, a warm run's
 * replaces the option's prediction (source "device"); a refusal runs
 * nothing. */
static void serve_accounts(void **state)
{
    (void)state;
    rtl_err e;
    rtl_sched_config sc = {.policy = RTL_POLICY_MCDNN};
    rtl_sched *s = rtl_sched_new(&sc, &e);
    assert_non_null(s);
    rtl_sched_source src = {.loadable_only = 1};
    if (rtl_sched_add_catalog(s, cat, "t", "t", &src, &e) != 0) fail_msg("%s", e.msg);
    rtl_runner *r = unbounded_runner(s);
    rtl_sched_decision d;
    rtl_runner_result res;
    for (int k = 0; k < 2; k++) {
        if (rtl_runner_serve(r, s, 0, k, (uint64_t)k, img[k], &d, &res, &e) != 0) fail_msg("%s", e.msg);
        if (d.option < 0) fail_msg("refused: %s", d.reason);
        const rtl_sched_option *op = &rtl_sched_task_at(s, 0)->options[d.option];
        assert_string_equal(op->variant, res.answered_by);
        assert_int_equal(res.cold, k == 0);
        assert_true(res.ms > 0);
        if (k == 0) { /* cold: the build host's figure stays */
            assert_string_equal(op->source, "build-host");
            assert_true(op->device_ms == 100);
        } else { /* warm: this device's measurement */
            assert_string_equal(op->source, "device");
            assert_true(op->device_ms == res.ms);
        }
    }
    /* under an impossible latency budget: refused, nothing runs */
    rtl_sched_budget b = {.energy_mj = -1, .cloud_usd = -1, .horizon_s = 3600, .disconnected = 1, .latency_ms = 1e-9};
    assert_int_equal(rtl_sched_set_budget(s, &b, 2, &e), 0);
    if (rtl_runner_serve(r, s, 0, 2, 2, img[0], &d, &res, &e) != 0) fail_msg("%s", e.msg);
    assert_int_equal(d.option, -1);
    assert_null(res.model);
    rtl_runner_free(r);
    rtl_sched_free(s);
}

/* Several tasks: the head whose parent answers another task shares its
 * trunk run, each model's answer is what it gives alone; a head alone is
 * still chosen for its task; an unknown task is named with the catalog's. */
static void tasks_share_trunk(void **state)
{
    (void)state;
    rtl_err e;
    rtl_runner *r = rtl_runner_new(NULL, cat, NULL, &e);
    assert_non_null(r);
    const char *const both[] = {"t", "u"};
    rtl_model *m[2];
    if (rtl_runner_set_tasks(r, both, 2, m, &e) != 0) fail_msg("%s", e.msg);
    assert_string_equal(vid(info(m[0]).variant), "base");
    assert_string_equal(vid(info(m[1]).variant), "head");
    size_t trunks = 0;
    if (rtl_runner_run_tasks(r, img[1], &trunks, &e) != 0) fail_msg("%s", e.msg);
    assert_int_equal(trunks, 1); /* base's trunk fed the head */
    for (int k = 0; k < 2; k++) {
        float y[8];
        size_t n = own_output(k ? "head" : "base", img[1], y, 8);
        assert_memory_equal(rtl_model_output(m[k]), y, n * sizeof *y);
    }
    const char *const head_only[] = {"u"};
    if (rtl_runner_set_tasks(r, head_only, 1, m, &e) != 0) fail_msg("%s", e.msg);
    assert_string_equal(vid(info(m[0]).variant), "head");
    const char *const bad[] = {"t", "nosuch"};
    assert_int_equal(rtl_runner_set_tasks(r, bad, 2, m, &e), -1);
    assert_non_null(strstr(e.msg, "no task 'nosuch'; its tasks: t s u"));
    rtl_runner_free(r);
}

/* The scheduled executor feeds each answer's class into the scheduler's
 * window: a cascade option for the class base answers on img[0] (gains
 * known, p 0.6) is chosen once those answers fill the window; without them
 * (no class ever observed) it never would be. */
static void serve_observes_answers(void **state)
{
    (void)state;
    rtl_err e;
    float y[8];
    size_t n = own_output("base", img[0], y, 8), c = 0;
    for (size_t k = 1; k < n; k++)
        if (y[k] > y[c]) c = k;
    rtl_sched_option o[2];
    memset(o, 0, sizeof o);
    for (int i = 0; i < 2; i++) {
        snprintf(o[i].variant, sizeof o[i].variant, "%s", i ? "spec" : "base");
        o[i].capacity = -1, o[i].trunk = -1, o[i].partner = -1;
        o[i].top1 = 0.8, o[i].device_ms = 100, o[i].device_mj = 10, o[i].cloud_ms = -1, o[i].bytes = 4;
    }
    o[1].partner = 0, o[1].context_n = 1, o[1].context_p = 0.6, o[1].gain_in = 0.1;
    o[1].context_classes[0] = (uint32_t)c, o[1].context_nclasses = 1;
    rtl_sched_task t = {.options = o, .n = 2};
    snprintf(t.name, sizeof t.name, "t");
    snprintf(t.task, sizeof t.task, "t");
    rtl_sched_config sc = {.policy = RTL_POLICY_MCDNN};
    rtl_sched *s = rtl_sched_new(&sc, &e);
    assert_non_null(s);
    assert_int_equal(rtl_sched_add_task(s, &t, &e), 0);
    rtl_runner *r = unbounded_runner(s);
    rtl_sched_decision d;
    rtl_runner_result res;
    const char *used[3];
    for (int k = 0; k < 3; k++) {
        if (rtl_runner_serve(r, s, 0, k, (uint64_t)k, img[0], &d, &res, &e) != 0) fail_msg("%s", e.msg);
        if (d.option < 0) fail_msg("refused: %s", d.reason);
        used[k] = rtl_sched_task_at(s, 0)->options[d.option].variant;
    }
    assert_string_equal(used[0], "base"); /* nothing observed yet */
    assert_string_equal(used[2], "spec"); /* base's answers hold the window */
    assert_true(fabs(d.top1 - 0.9) < 1e-9);
    rtl_runner_free(r);
    rtl_sched_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cascade_answered_by),
        cmocka_unit_test(context_cascade),
        cmocka_unit_test(serve_accounts),
        cmocka_unit_test(tasks_share_trunk),
        cmocka_unit_test(serve_observes_answers),
    };
    int rc = cmocka_run_group_tests_name("rtl_runner", tests, setup, teardown);
    test_tmpdir_cleanup();
    return rc;
}
