/* Unit tests of loading and running variants (rtl_model_*): a catalog of
 * small variants is written here (cfg text, weights from the trainer's own
 * inference library, libtrn-infer, with trained-like values), parsed with
 * rtl_catalog_parse, and every model's output is compared with the same
 * network loaded by libtrn-infer from the same files: bit for bit, since
 * librtl compiles the same sources. Loading errors must each give their
 * message and never crash. Also runs on aarch64 under qemu. */
#include "testutil_impl.h"
#include "testlib_trn.h"
#include "rtl.h"
#include "internal.h" /* functions librtl no longer exports (issue 38) */

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CLASSES 5

/* Another cfg: same input, different parameter count. */
static const char cfg_small[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\nactivation=relu\n"
    "[avgpool]\n[connected]\noutput=5\nactivation=linear\n[softmax]\n";

/* Six outputs where the task has five labels. */
static const char cfg_six[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[avgpool]\n[connected]\noutput=6\nactivation=linear\n[softmax]\n";

static const char cfg_badkey[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nfilters=4\nsize=3\nfrobnicate=1\n[softmax]\n";

/* A multi-capacity model: capacity 1 keeps 3 and 2 filters of layers 0
 * and 1, capacity 2 keeps 5 and 4, capacity 3 is the whole network. */
static const char cfg_nest[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=2\npad=1\nactivation=leaky\n"
    "[convolutional]\nfilters=6\nsize=3\npad=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[connected]\noutput=5\nactivation=linear\n[softmax]\n";
static const int nest_caps[3][5] = {{3, 2, 0, 0, 0}, {5, 4, 0, 0, 0}, {0, 0, 0, 0, 0}};
static const char nest_fields[] =
    ",\"technique_fields\":{\"capacities\":["
    "{\"capacity\":1,\"channel_index\":[{\"layer\":0,\"channels\":3},{\"layer\":1,\"channels\":2}],"
    "\"macs\":1,\"weight_bytes\":4},"
    "{\"capacity\":2,\"channel_index\":[{\"layer\":0,\"channels\":5},{\"layer\":1,\"channels\":4}],"
    "\"macs\":1,\"weight_bytes\":4},"
    "{\"capacity\":3,\"channel_index\":[],\"macs\":1,\"weight_bytes\":4}]}";

/* A multi-capacity model whose weights span pages (about 120 kB): the
 * pages a switch releases can be seen in /proc/self/pagemap. Capacity 1
 * keeps 16 and 12 filters, capacity 2 32 and 24, capacity 3 all. */
static const char cfg_nestbig[] =
    "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=64\nsize=3\nstride=2\npad=1\nactivation=leaky\n"
    "[convolutional]\nfilters=48\nsize=3\npad=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[connected]\noutput=5\nactivation=linear\n[softmax]\n";
static const char nestbig_fields[] =
    ",\"technique_fields\":{\"capacities\":["
    "{\"capacity\":1,\"channel_index\":[{\"layer\":0,\"channels\":16},{\"layer\":1,\"channels\":12}],"
    "\"macs\":1,\"weight_bytes\":4},"
    "{\"capacity\":2,\"channel_index\":[{\"layer\":0,\"channels\":32},{\"layer\":1,\"channels\":24}],"
    "\"macs\":1,\"weight_bytes\":4},"
    "{\"capacity\":3,\"channel_index\":[],\"macs\":1,\"weight_bytes\":4}]}";

/* The same model with batch-norm vectors per capacity (prune grow's
 * format: technique_fields.bn_per_capacity and a capacity_bn file holding
 * capacities 1 and 2's biases, scales and statistics); "nestbnv2" names a
 * version this runtime does not know, "nestbnnofile" lacks the file,
 * "nestbnshort"'s file holds capacity 1's vectors only. */
#define NEST_BN_ROLES 0xfu
static const char nest_bn_v1[] =
    ",\"bn_per_capacity\":{\"version\":1,\"roles\":[\"biases\",\"scales\",\"rolling_mean\",\"rolling_variance\"],"
    "\"file\":\"capacity_bn.weights\"}}";
static const char nest_bn_v2[] = ",\"bn_per_capacity\":{\"version\":2,\"roles\":[\"rolling_mean\"]}}";

enum damage { NONE, TRUNCATE, EXTRA, LIE_SIZE, TINY };

/* A variant of the test catalog: its cfg, the cfg its weights are made for
 * (NULL: tl_all_kinds, every layer kind of the trainer), and what is wrong
 * with its files. */
struct spec {
    const char *id, *technique, *cfg, *weights_cfg;
    enum damage damage;
};

static const struct spec specs[] = {
    {"base", "base", NULL, NULL, NONE},
    {"small", "pruned", cfg_small, cfg_small, NONE},
    {"truncated", "rewrite", NULL, NULL, TRUNCATE},
    {"extra", "rewrite", NULL, NULL, EXTRA},
    {"damaged", "rewrite", NULL, NULL, LIE_SIZE},
    {"tiny", "rewrite", NULL, NULL, TINY},
    {"othercfg", "svd", NULL, cfg_small, NONE},
    {"badkey", "svd", cfg_badkey, cfg_small, NONE},
    {"six", "svd", cfg_six, cfg_six, NONE},
    {"nested", "nested", cfg_nest, cfg_nest, NONE},
    {"nestbare", "nested", cfg_small, cfg_small, NONE},
    {"nestbig", "nested", cfg_nestbig, cfg_nestbig, NONE},
    {"exits", "early-exit", cfg_small, cfg_small, NONE},
    {"nestbn", "nested", cfg_nest, cfg_nest, NONE},
    {"nestbnv2", "nested", cfg_nest, cfg_nest, NONE},
    {"nestbnnofile", "nested", cfg_nest, cfg_nest, NONE},
    {"nestbnshort", "nested", cfg_nest, cfg_nest, NONE},
};

/* The exits of variant "exits" (over cfg_small: conv 0, avgpool 1, ...). */
static const char exits_cfg[] =
    "[exit]\nat=0\nthreshold=0.02\n"
    "[avgpool]\n[connected]\noutput=5\nactivation=linear\n[softmax]\n";
#define NSPECS (sizeof specs / sizeof specs[0])

#define ALL(cfg) ((cfg) ? (cfg) : tl_all_kinds)

static rtl_catalog *cat;

/* Writes the weights of cfg text (seeded trained-like values) to path. */
static int write_weights(const char *cfg, uint64_t seed, const char *path)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_net *n = tl_net(cfg, &o);
    if (!n) return -1;
    tl_randomize(n, seed);
    trn_err e;
    int rc = trn_weights_save(n, path, &e);
    trn_net_free(n);
    return rc;
}

/* Capacity k's (0-based) batch-norm vectors of the "nestbn" variants: seeded
 * values, positive (variances among them); n floats at the capacity. */
static float *capacity_bn(int k, size_t *n)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_net *net = tl_net(cfg_nest, &o);
    trn_err e;
    assert_int_equal(trn_net_set_capacity(net, nest_caps[k], &e), 0);
    *n = trn_net_vectors_count(net, NEST_BN_ROLES);
    trn_net_free(net);
    float *v = malloc(*n * sizeof *v);
    for (size_t i = 0; i < *n; i++) v[i] = 0.5f + (float)((i * 7 + (size_t)k * 13) % 11) / 10.0f;
    return v;
}

/* Writes variant id's capacity_bn.weights: the CPBN header for 2 capacities
 * and `caps` capacities' vectors. */
static void write_capacity_bn(const char *id, int caps)
{
    FILE *f = fopen(tl_path("variants/%s/capacity_bn.weights", id), "wb");
    assert_non_null(f);
    int32_t h[4] = {0, 1, 2, (int32_t)NEST_BN_ROLES};
    memcpy(h, "CPBN", 4);
    assert_int_equal(fwrite(h, 4, 4, f), 4);
    for (int k = 0; k < caps; k++) {
        size_t n;
        float *v = capacity_bn(k, &n);
        assert_int_equal(fwrite(v, 4, n, f), n);
        free(v);
    }
    fclose(f);
}

/* Appends `"role"` file i of a variant to the manifest text. */
static void file_json(char *m, size_t size, const char *id, const char *role, const char *name, long lie)
{
    char path[512], sha[65];
    uint8_t d[RTL_SHA256_BYTES];
    uint64_t len;
    rtl_err e;
    snprintf(path, sizeof path, "%s/variants/%s/%s", test_tmpdir(), id, name);
    assert_int_equal(rtl_sha256_file(path, d, &len, &e), 0);
    rtl_sha256_hex(d, sha);
    size_t at = strlen(m);
    snprintf(m + at, size - at, "%s{\"role\":\"%s\",\"path\":\"variants/%s/%s\",\"size\":%llu,\"sha256\":\"%s\"}",
             strcmp(role, "cfg") ? "," : "", role, id, name, (unsigned long long)((long)len + lie), sha);
}

/* A variant's technique_fields (or nothing), as manifest text. */
static const char *technique_fields(const char *id)
{
    static char buf[1024];
    if (!strcmp(id, "nested")) return nest_fields;
    if (!strcmp(id, "nestbig")) return nestbig_fields;
    if (strncmp(id, "nestbn", 6) != 0) return "";
    snprintf(buf, sizeof buf, "%.*s%s", (int)strlen(nest_fields) - 1, nest_fields,
             !strcmp(id, "nestbnv2") ? nest_bn_v2 : nest_bn_v1);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    static char m[32768];
    snprintf(m, sizeof m,
             "{\"schema\":1,\"catalog\":\"unit\",\"model\":\"tiny\",\"version\":7,"
             "\"tasks\":{\"t\":{\"classes\":5,\"labels\":[\"c0\",\"c1\",\"c2\",\"c3\",\"c4\"]}},\"variants\":[");
    for (size_t i = 0; i < NSPECS; i++) {
        const char *id = specs[i].id;
        assert_int_equal(trn_mkdir_p(tl_path("variants/%s", id), NULL), 0);
        assert_int_equal(tl_write_text(tl_path("variants/%s/variant.cfg", id), ALL(specs[i].cfg)), 0);
        const char *wp = tl_path("variants/%s/variant.weights", id);
        assert_int_equal(write_weights(ALL(specs[i].weights_cfg), 100 + i, wp), 0);
        if (specs[i].damage == TRUNCATE) assert_int_equal(truncate(wp, 20 + 4 * 30), 0);
        if (specs[i].damage == TINY) assert_int_equal(truncate(wp, 10), 0);
        if (specs[i].damage == EXTRA) {
            FILE *f = fopen(wp, "ab");
            assert_non_null(f);
            fputs("tail", f);
            fclose(f);
        }
        size_t at = strlen(m);
        snprintf(m + at, sizeof m - at,
                 "%s{\"id\":\"%s\",\"technique\":\"%s\",\"task\":\"t\",\"parent\":null,\"depends_on\":[],"
                 "\"description\":\"unit variant\",\"cost\":{\"macs\":1,\"params\":1,\"weight_bytes\":4,"
                 "\"peak_activation_bytes\":4},\"accuracy\":{},"
                 "\"latency\":{\"build-host\":{\"source\":\"measured\",\"machine\":\"unit host\",\"threads\":3,"
                 "\"batch\":1,\"runs\":9,\"ms_median\":1.25,\"ms_mean\":1.5}},"
                 "\"estimates\":{\"board-a\":{\"source\":\"estimate\",\"method\":\"roofline-1\",\"bound\":\"compute\","
                 "\"ms\":2.5,\"mj\":7}}%s,\"files\":[",
                 i ? "," : "", id, specs[i].technique, technique_fields(id));
        file_json(m, sizeof m, id, "cfg", "variant.cfg", 0);
        file_json(m, sizeof m, id, "weights", "variant.weights", specs[i].damage == LIE_SIZE ? 4 : 0);
        if (!strncmp(id, "nestbn", 6) && strcmp(id, "nestbnnofile") != 0) {
            write_capacity_bn(id, strcmp(id, "nestbnshort") ? 2 : 1);
            file_json(m, sizeof m, id, "capacity_bn", "capacity_bn.weights", 0);
        }
        if (strcmp(specs[i].technique, "early-exit") == 0) {
            assert_int_equal(tl_write_text(tl_path("variants/%s/exits.cfg", id), exits_cfg), 0);
            trn_net_opts o;
            trn_net_opts_defaults(&o);
            o.infer_only = 1;
            trn_net *t = tl_net(specs[i].cfg, &o);
            assert_non_null(t);
            trn_err te;
            trn_exits *x = trn_exits_load(t, tl_path("variants/%s/exits.cfg", id), NULL, &o, &te);
            assert_non_null(x);
            tl_randomize(trn_exit_net(x, 0), 300 + i);
            assert_int_equal(trn_exits_weights_save(x, tl_path("variants/%s/exits.weights", id), &te), 0);
            trn_exits_free(x);
            trn_net_free(t);
            file_json(m, sizeof m, id, "exits_cfg", "exits.cfg", 0);
            file_json(m, sizeof m, id, "exits_weights", "exits.weights", 0);
        }
        at = strlen(m);
        snprintf(m + at, sizeof m - at, "]}");
    }
    size_t at = strlen(m);
    snprintf(m + at, sizeof m - at, "]}");
    rtl_err e;
    cat = rtl_catalog_parse(m, strlen(m), test_tmpdir(), &e);
    if (!cat) printf("# %s\n", e.msg);
    return cat ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    rtl_catalog_close(cat);
    return 0;
}

/* The reference: the same files loaded (copied) by libtrn-infer. */
static trn_net *reference(const char *id)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    o.batch = 1;
    trn_err e;
    trn_net *n = trn_net_load(tl_path("variants/%s/variant.cfg", id), tl_path("variants/%s/variant.weights", id),
                              &o, &e);
    if (!n) printf("# %s\n", e.msg);
    return n;
}

static void runs_like_the_trainer(void **state)
{
    (void)state;
    const char *ids[] = {"base", "small"};
    for (size_t v = 0; v < 2; v++) {
        rtl_err e;
        rtl_model_options opt = {.threads = 1};
        rtl_model *m = rtl_model_open(cat, ids[v], &opt, &e);
        if (!m) printf("# %s\n", e.msg);
        assert_non_null(m);
        trn_net *ref = reference(ids[v]);
        assert_non_null(ref);
        rtl_model_info mi;
        assert_int_equal(rtl_model_describe(m, &mi, sizeof mi, &e), 0);
        trn_shape in = trn_net_input_shape(ref);
        assert_true(mi.c == in.c && mi.h == in.h && mi.w == in.w);
        assert_int_equal(mi.input_size, trn_net_inputs(ref));
        assert_int_equal(mi.classes, CLASSES);
        assert_ptr_equal(mi.variant, rtl_catalog_find(cat, ids[v]));
        assert_int_equal(mi.layers, rtl_model_layers(m));
        assert_true(mi.capacities == 0 && mi.capacity == 0 && mi.exits == 0 && !mi.exit_layers);
        assert_int_equal(mi.exit_taken, -1);
        assert_string_equal(rtl_model_label(m, 3), "c3");
        assert_null(rtl_model_label(m, CLASSES));
        struct stat st;
        assert_int_equal(stat(tl_path("variants/%s/variant.weights", ids[v]), &st), 0);
        assert_int_equal(rtl_model_mapped_bytes(m), (uint64_t)st.st_size);
        assert_null(rtl_model_output(m));
        rtl_class top[CLASSES + 2];
        size_t n;
        assert_int_equal(rtl_model_top(m, 3, top, &n, &e), -1);
        assert_non_null(strstr(e.msg, "no result yet"));
        for (uint64_t seed = 1; seed <= 3; seed++) {
            float x[3 * 12 * 12];
            tl_fill_uniform(x, sizeof x / sizeof *x, seed, 0, 1);
            assert_int_equal(rtl_model_run(m, x, &e), 0);
            trn_err te;
            assert_int_equal(trn_net_forward(ref, x, &te), 0);
            const float *p = rtl_model_output(m);
            assert_non_null(p);
            assert_memory_equal(p, trn_net_output(ref), CLASSES * sizeof *p);
            float sum = 0;
            for (int k = 0; k < CLASSES; k++) sum += p[k];
            assert_true(fabsf(sum - 1) < 1e-5);
            /* top-k: sorted, complete, labels of their indexes */
            assert_int_equal(rtl_model_top(m, CLASSES + 2, top, &n, &e), 0);
            assert_int_equal(n, CLASSES);
            int seen = 0;
            for (size_t k = 0; k < n; k++) {
                assert_true(k == 0 || top[k - 1].prob >= top[k].prob);
                assert_true(top[k].prob == p[top[k].index]);
                assert_string_equal(top[k].label, rtl_model_label(m, top[k].index));
                seen |= 1 << top[k].index;
            }
            assert_int_equal(seen, (1 << CLASSES) - 1);
            assert_int_equal(rtl_model_top(m, 2, top, &n, &e), 0);
            assert_int_equal(n, 2);
        }
        trn_net_free(ref);
        rtl_model_close(m);
    }
}

/* Two different models run from two threads at once: each model has its
 * own engine (pool, threads), no lock stands between them, and every run
 * gives the bytes the model gives when run alone; the thread setting is
 * each model's own (opening the second does not change the first's), and
 * no setting changes a byte. Run under ThreadSanitizer too (SAN=thread). */
#define CONCURRENT_RUNS 40
#define CONCURRENT_INPUTS 3

struct runner {
    rtl_model *m;
    const float *x;          /* CONCURRENT_INPUTS inputs */
    const float *want;       /* their outputs, run alone */
    int differ, failed;
};

static void *run_many(void *p)
{
    struct runner *r = p;
    size_t in = rtl_model_input_size(r->m);
    for (int i = 0; i < CONCURRENT_RUNS; i++) {
        int k = i % CONCURRENT_INPUTS;
        rtl_err e;
        if (rtl_model_run(r->m, r->x + (size_t)k * in, &e) != 0) {
            r->failed++;
            continue;
        }
        r->differ += memcmp(rtl_model_output(r->m), r->want + (size_t)k * CLASSES, CLASSES * sizeof(float)) != 0;
    }
    return NULL;
}

/* The outputs of CONCURRENT_INPUTS seeded inputs of variant id opened with
 * `threads`, run alone. */
static void outputs_alone(const char *id, int threads, float *x, float *out)
{
    rtl_err e;
    rtl_model_options o = {.threads = threads};
    rtl_model *m = rtl_model_open(cat, id, &o, &e);
    assert_non_null(m);
    size_t in = rtl_model_input_size(m);
    for (int k = 0; k < CONCURRENT_INPUTS; k++) {
        tl_fill_uniform(x + (size_t)k * in, in, 100 + (uint64_t)k, 0, 1);
        assert_int_equal(rtl_model_run(m, x + (size_t)k * in, &e), 0);
        memcpy(out + (size_t)k * CLASSES, rtl_model_output(m), CLASSES * sizeof *out);
    }
    rtl_model_close(m);
}

static void models_run_concurrently(void **state)
{
    (void)state;
    const char *ids[2] = {"base", "nestbig"};
    const int threads[2] = {2, 3};
    float x[2][CONCURRENT_INPUTS * 3 * 12 * 12], want[2][CONCURRENT_INPUTS * CLASSES];
    for (int v = 0; v < 2; v++) {
        outputs_alone(ids[v], 1, x[v], want[v]);
        float other[CONCURRENT_INPUTS * CLASSES];
        for (int t = 0; t <= 3; t++) { /* 0: chosen per layer */
            outputs_alone(ids[v], t, x[v], other);
            assert_memory_equal(other, want[v], sizeof other);
        }
    }
    rtl_model *m[2];
    struct runner r[2];
    for (int v = 0; v < 2; v++) {
        rtl_err e;
        rtl_model_options o = {.threads = threads[v]};
        assert_non_null(m[v] = rtl_model_open(cat, ids[v], &o, &e));
        r[v] = (struct runner){m[v], x[v], want[v], 0, 0};
    }
    rtl_latency lat;
    rtl_err e;
    assert_int_equal(rtl_model_measure(m[0], NULL, 0, 1, &lat, &e), 0);
    assert_int_equal(lat.threads, threads[0]);
    pthread_t tid;
    assert_int_equal(pthread_create(&tid, NULL, run_many, &r[1]), 0);
    run_many(&r[0]);
    assert_int_equal(pthread_join(tid, NULL), 0);
    for (int v = 0; v < 2; v++) {
        assert_int_equal(r[v].failed, 0);
        assert_int_equal(r[v].differ, 0);
        rtl_model_close(m[v]);
    }
}

/* A 24-bit BMP of w x h with seeded pixels. */
/* Early exits: rtl_model_run answers as the engine's early-exit forward
 * does on the same files (same exit, same probabilities, bit for bit), for
 * every alpha; alpha is refused on plain models and when negative. */
static void early_exits(void **state)
{
    (void)state;
    rtl_err e;
    rtl_model *m = rtl_model_open(cat, "exits", NULL, &e);
    if (!m) printf("# %s\n", e.msg);
    assert_non_null(m);
    rtl_model_info mi;
    assert_int_equal(rtl_model_describe(m, &mi, sizeof mi, &e), 0);
    assert_int_equal(mi.exits, 1);
    assert_non_null(mi.exit_layers);
    assert_int_equal(mi.exit_layers[0], 0);
    assert_int_equal(rtl_model_exit_layer(m, 1), -1);
    assert_int_equal(mi.exit_taken, -1);
    assert_float_equal(rtl_model_alpha(m), 1, 0);
    trn_net *ref = reference("exits");
    assert_non_null(ref);
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    o.batch = 1;
    trn_err te;
    trn_exits *x = trn_exits_load(ref, tl_path("variants/exits/exits.cfg"), tl_path("variants/exits/exits.weights"),
                                  &o, &te);
    assert_non_null(x);
    int taken[2] = {0, 0};
    const float alphas[] = {0, 0.5f, 1, 2, 1e5f};
    for (size_t a = 0; a < sizeof alphas / sizeof *alphas; a++) {
        assert_int_equal(rtl_model_set_alpha(m, alphas[a], &e), 0);
        for (uint64_t seed = 1; seed <= 8; seed++) {
            float in[3 * 12 * 12];
            tl_fill_uniform(in, sizeof in / sizeof *in, seed, 0, 1);
            assert_int_equal(rtl_model_run(m, in, &e), 0);
            trn_exit_result r;
            assert_int_equal(trn_exits_forward(ref, x, in, alphas[a], &r, &te), 0);
            assert_int_equal(rtl_model_describe(m, &mi, sizeof mi, &e), 0);
            assert_int_equal(mi.exit_taken, r.exit);
            assert_memory_equal(rtl_model_output(m), r.probs, CLASSES * sizeof(float));
            taken[r.exit]++;
            if (a == 0) assert_int_equal(r.exit, 0);
            if (alphas[a] > 100) assert_int_equal(r.exit, 1);
        }
    }
    printf("# exit 0 answered %d runs, the trunk %d\n", taken[0], taken[1]);
    assert_int_equal(rtl_model_set_alpha(m, -1, &e), -1);
    assert_non_null(strstr(e.msg, "alpha"));
    trn_exits_free(x);
    trn_net_free(ref);
    rtl_model_close(m);
    m = rtl_model_open(cat, "small", NULL, &e);
    assert_non_null(m);
    assert_int_equal(rtl_model_exits(m), 0);
    assert_int_equal(rtl_model_set_alpha(m, 1, &e), -1);
    assert_non_null(strstr(e.msg, "no early exits"));
    rtl_model_close(m);
}

/* rtl_model_info is versioned by its size: a caller's struct shorter than
 * the first layout is refused, one built against an older header (only
 * RTL_MODEL_INFO_V1 bytes) gets its prefix and nothing past it, and one
 * built against a newer header gets the fields both know and zeros past
 * them. */
static void model_info_is_versioned_by_size(void **state)
{
    (void)state;
    rtl_err e;
    rtl_model *m = rtl_model_open(cat, "exits", NULL, &e);
    assert_non_null(m);
    rtl_model_info mi;
    assert_int_equal(rtl_model_describe(m, &mi, sizeof mi, &e), 0);
    unsigned char buf[sizeof mi + 32];
    memset(buf, 0xa5, sizeof buf);
    assert_int_equal(rtl_model_describe(m, (rtl_model_info *)buf, RTL_MODEL_INFO_V1 - 1, &e), -1);
    assert_non_null(strstr(e.msg, "rtl_model_info"));
    for (size_t i = 0; i < sizeof buf; i++) assert_int_equal(buf[i], 0xa5);
    assert_int_equal(rtl_model_describe(m, (rtl_model_info *)buf, RTL_MODEL_INFO_V1, &e), 0);
    assert_memory_equal(buf, &mi, RTL_MODEL_INFO_V1);
    for (size_t i = RTL_MODEL_INFO_V1; i < sizeof buf; i++) assert_int_equal(buf[i], 0xa5);
    assert_int_equal(rtl_model_describe(m, (rtl_model_info *)buf, sizeof buf, &e), 0);
    assert_memory_equal(buf, &mi, sizeof mi);
    for (size_t i = sizeof mi; i < sizeof buf; i++) assert_int_equal(buf[i], 0);
    rtl_model_close(m);
}

static void write_bmp(const char *path, int w, int h, uint64_t seed)
{
    int row = (w * 3 + 3) & ~3;
    size_t size = 54 + (size_t)row * h;
    unsigned char *b = calloc(1, size);
    assert_non_null(b);
    uint32_t v;
    b[0] = 'B';
    b[1] = 'M';
    v = (uint32_t)size; memcpy(b + 2, &v, 4);
    v = 54; memcpy(b + 10, &v, 4);
    v = 40; memcpy(b + 14, &v, 4);
    memcpy(b + 18, &w, 4);
    memcpy(b + 22, &h, 4);
    b[26] = 1;
    b[28] = 24;
    trn_rng r;
    trn_rng_seed(&r, seed);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w * 3; x++) b[54 + (size_t)y * row + x] = (unsigned char)trn_rng_below(&r, 256);
    assert_int_equal(tl_write(path, b, size), 0);
    free(b);
}

static void runs_image_files(void **state)
{
    (void)state;
    rtl_err e;
    rtl_model *m = rtl_model_open(cat, "base", NULL, &e);
    assert_non_null(m);
    trn_net *ref = reference("base");
    assert_non_null(ref);
    const char *img = tl_path("img_21x17.bmp");
    write_bmp(img, 21, 17, 5);
    assert_int_equal(rtl_model_run_image(m, img, &e), 0);
    float x[3 * 12 * 12];
    trn_err te;
    assert_int_equal(trn_image_load_input(img, 12, 12, 3, x, &te), 0);
    assert_int_equal(trn_net_forward(ref, x, &te), 0);
    assert_memory_equal(rtl_model_output(m), trn_net_output(ref), CLASSES * sizeof(float));
    /* not an image: an error naming the file, and no result */
    const char *bad = tl_path("not-an-image.png");
    assert_int_equal(tl_write_text(bad, "hello"), 0);
    assert_int_equal(rtl_model_run_image(m, bad, &e), -1);
    assert_non_null(strstr(e.msg, "not-an-image.png"));
    assert_null(rtl_model_output(m));
    assert_int_equal(rtl_model_run_image(m, tl_path("missing.png"), &e), -1);
    assert_non_null(strstr(e.msg, "missing.png"));
    assert_int_equal(rtl_model_run(m, NULL, &e), -1);
    trn_net_free(ref);
    rtl_model_close(m);
}

static void loading_errors_are_messages(void **state)
{
    (void)state;
    static const struct {
        const char *id, *pattern;
    } cases[] = {
        {"nope", "has no variant 'nope'; its variants: base, small, truncated"},
        {"truncated", "the file ends at byte offset 140 inside layer"},
        {"extra", "4 bytes are left over at byte offset"},
        {"damaged", "but the manifest says"},
        {"tiny", "inside the header"},
        {"othercfg", "the weights do not fit"},
        {"badkey", "variant.cfg:9: [convolutional]: unknown key 'frobnicate'"},
        {"six", "has 6 outputs, but task 't' has 5 labels"},
        {"nestbare", "technique_fields.capacities is missing"},
        {"nestbnv2", "reads version 1 of the per-capacity batch-norm format"},
        {"nestbnnofile", "has no file with role \"capacity_bn\""},
        {"nestbnshort", "but the capacities' batch-norm vectors take"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rtl_err e = {{0}};
        rtl_model *m = rtl_model_open(cat, cases[i].id, NULL, &e);
        printf("# %s: %s\n", cases[i].id, e.msg);
        assert_null(m);
        assert_non_null(strstr(e.msg, cases[i].pattern));
        if (strcmp(cases[i].id, "nope") != 0) assert_non_null(strstr(e.msg, cases[i].id));
    }
    /* loadable says so without touching files */
    rtl_err le;
    assert_int_equal(rtl_variant_loadable(rtl_catalog_find(cat, "truncated"), &le), 0);
    assert_int_equal(rtl_variant_loadable(rtl_catalog_find(cat, "nested"), &le), 0);
    /* a weights file that vanished */
    assert_int_equal(rename(tl_path("variants/small/variant.weights"), tl_path("small.moved")), 0);
    rtl_err e;
    assert_null(rtl_model_open(cat, "small", NULL, &e));
    assert_non_null(strstr(e.msg, "cannot open"));
    assert_int_equal(rename(tl_path("small.moved"), tl_path("variants/small/variant.weights")), 0);
    rtl_model *m = rtl_model_open(cat, "small", NULL, &e);
    assert_non_null(m);
    rtl_model_close(m);
    rtl_model_close(NULL);
}

static void measures_and_reads_latencies(void **state)
{
    (void)state;
    rtl_err e;
    rtl_model *m = rtl_model_open(cat, "small", NULL, &e);
    assert_non_null(m);
    rtl_latency lat;
    assert_int_equal(rtl_model_measure(m, NULL, 1, 0, &lat, &e), -1);
    assert_int_equal(rtl_model_measure(m, NULL, 2, 5, &lat, &e), 0);
    assert_string_equal(lat.variant, "small");
    assert_string_equal(lat.where, "device");
    assert_string_equal(lat.source, "measured");
    assert_int_equal(lat.runs, 5);
    assert_int_equal(lat.warmup, 2);
    assert_int_equal(lat.batch, 1);
    assert_true(lat.threads >= 1);
    assert_true(lat.ms_median > 0 && lat.ms_mean > 0);
    assert_int_equal(lat.catalog_version, 7);
    assert_non_null(strstr(lat.machine, "cores"));
    assert_true(lat.gap_ms == 0);
    /* runs apart: each timed run after 2 ms of sleep, the gap recorded */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(rtl_model_measure_paced(m, NULL, 0, 3, 2, &lat, &e), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6 >= 6);
    assert_true(lat.gap_ms == 2 && lat.runs == 3 && lat.ms_median > 0);
    assert_int_equal(rtl_model_measure_paced(m, NULL, 0, 3, -1, &lat, &e), -1);
    assert_non_null(strstr(e.msg, "gap"));
    rtl_model_close(m);

    const rtl_variant *v = rtl_catalog_find(cat, "base");
    assert_int_equal(rtl_variant_latency(v, "build-host", &lat, &e), 0);
    assert_true(lat.ms_median == 1.25 && lat.ms_mean == 1.5 && lat.runs == 9 && lat.threads == 3);
    assert_string_equal(lat.machine, "unit host");
    assert_int_equal(rtl_variant_latency(v, "elsewhere", &lat, &e), -1);
    assert_int_equal(rtl_variant_estimate_count(v), 1);
    rtl_estimate est;
    assert_int_equal(rtl_variant_estimate_at(v, 0, &est), 0);
    assert_string_equal(est.target, "board-a");
    assert_true(est.ms == 2.5 && est.mj == 7);
    assert_string_equal(est.bound, "compute");
    assert_int_equal(rtl_variant_estimate_at(v, 1, &est), -1);
    /* a parsed (not installed) catalog has no device profile */
    assert_int_equal(rtl_profile_save(cat, &lat, 0, &e), -1);
    assert_non_null(strstr(e.msg, "not opened from a store"));
}

/* The separately built network of capacity k (filters of nest_caps[k]),
 * with the full network's sliced weights. */
static trn_net *capacity_reference(const trn_net *full, int k)
{
    char text[1024];
    snprintf(text, sizeof text,
             "[net]\nbatch=1\nheight=12\nwidth=12\nchannels=3\n"
             "[convolutional]\nbatch_normalize=1\nfilters=%d\nsize=3\nstride=2\npad=1\nactivation=leaky\n"
             "[convolutional]\nfilters=%d\nsize=3\npad=1\nactivation=relu\n"
             "[maxpool]\nsize=2\nstride=2\n"
             "[connected]\noutput=5\nactivation=linear\n[softmax]\n",
             nest_caps[k][0] ? nest_caps[k][0] : 8, nest_caps[k][1] ? nest_caps[k][1] : 6);
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.infer_only = 1;
    trn_net *n = tl_net(text, &o);
    trn_err e;
    trn_net *f = (trn_net *)full;
    assert_int_equal(trn_net_set_capacity(f, k < 2 ? nest_caps[k] : NULL, &e), 0);
    assert_int_equal(trn_net_copy_capacity(n, f, &e), 0);
    assert_int_equal(trn_net_set_capacity(f, NULL, &e), 0);
    return n;
}

/* Capacity switches in place: each capacity's outputs equal the separately
 * built network's (within 1e-5; in fact bit for bit), and the bytes paged
 * in or out are the added or dropped parameters' bytes. */
static void switch_in_place(int async_paging)
{
    rtl_err e;
    rtl_model_options opt = {.threads = 1, .async_paging = async_paging};
    rtl_model *m = rtl_model_open(cat, "nested", &opt, &e);
    if (!m) printf("# %s\n", e.msg);
    assert_non_null(m);
    rtl_model_info mi;
    assert_int_equal(rtl_model_describe(m, &mi, sizeof mi, &e), 0);
    assert_true(mi.capacities == 3 && mi.capacity == 3);
    trn_net *full = reference("nested");
    trn_net *refs[3];
    uint64_t bytes[3];
    for (int k = 0; k < 3; k++) {
        refs[k] = capacity_reference(full, k);
        trn_net_totals t;
        trn_net_get_totals(refs[k], &t);
        bytes[k] = t.weight_bytes;
    }
    float x[3 * 12 * 12];
    for (size_t i = 0; i < sizeof x / sizeof *x; i++) x[i] = (float)((i * 37) % 101) / 101.0f;
    static const int order[] = {1, 2, 3, 1, 3, 2, 1};
    int prev = 3;
    rtl_paging_stats paged;
    assert_int_equal(rtl_model_paging_wait(m, &paged), async_paging);
    assert_int_equal(paged.transitions, 0);
    for (size_t s = 0; s < sizeof order / sizeof *order; s++) {
        int k = order[s];
        assert_int_equal(rtl_model_set_capacity(m, k, &e), 0);
        assert_int_equal(rtl_model_describe(m, &mi, sizeof mi, &e), 0);
        assert_int_equal(mi.capacity, k);
        rtl_switch_bytes sb = mi.last_switch;
        if (k > prev) {
            assert_true(sb.page_in == bytes[k - 1] - bytes[prev - 1] && sb.page_out == 0);
            /* whole pages of the mapping (only those the smaller capacity
             * did not use: fewer than the added bytes may span) */
            assert_true(sb.advised_in <= rtl_model_mapped_bytes(m));
        } else {
            assert_true(sb.page_out == bytes[prev - 1] - bytes[k - 1] && sb.page_in == 0);
            assert_true(sb.advised_out <= sb.page_out);
        }
        /* the call (or the pager) moved exactly this switch's pages */
        rtl_paging_stats st;
        assert_int_equal(rtl_model_paging_wait(m, &st), async_paging);
        assert_int_equal(st.transitions, paged.transitions + 1);
        assert_true(st.page_in - paged.page_in == sb.page_in && st.page_out - paged.page_out == sb.page_out);
        assert_true(st.advised_in - paged.advised_in == sb.advised_in &&
                    st.advised_out - paged.advised_out == sb.advised_out);
        assert_true(st.ranges >= paged.ranges && st.done_ms >= paged.done_ms);
        assert_true(st.syscalls - paged.syscalls <= st.ranges - paged.ranges + 1);
        paged = st;
        prev = k;
        assert_int_equal(rtl_model_run(m, x, &e), 0);
        trn_err te;
        assert_int_equal(trn_net_forward(refs[k - 1], x, &te), 0);
        const float *a = rtl_model_output(m), *b = trn_net_output(refs[k - 1]);
        for (int c = 0; c < CLASSES; c++)
            if (fabsf(a[c] - b[c]) > 1e-5f) fail_msg("capacity %d class %d: %g against %g", k, c, a[c], b[c]);
    }
    /* the capacities differ (the test could see a wrong one) */
    assert_int_equal(trn_net_forward(refs[0], x, &(trn_err){{0}}), 0);
    float c1[CLASSES];
    memcpy(c1, trn_net_output(refs[0]), sizeof c1);
    assert_int_equal(trn_net_forward(refs[2], x, &(trn_err){{0}}), 0);
    assert_memory_not_equal(c1, trn_net_output(refs[2]), sizeof c1);
    assert_int_equal(rtl_model_set_capacity(m, 4, &e), -1);
    assert_non_null(strstr(e.msg, "capacities 1 to 3"));
    assert_int_equal(rtl_model_set_capacity(m, 0, &e), -1);
    rtl_model *b = rtl_model_open(cat, "base", &opt, &e);
    assert_non_null(b);
    assert_int_equal(rtl_model_capacities(b), 0);
    assert_int_equal(rtl_model_set_capacity(b, 1, &e), -1);
    assert_non_null(strstr(e.msg, "has no capacities"));
    rtl_model_close(b);
    for (int k = 0; k < 3; k++) trn_net_free(refs[k]);
    trn_net_free(full);
    rtl_model_close(m);
}

/* Batch-norm vectors per capacity: after every switch (up and down, in
 * any order) the model computes, bit for bit, what the capacity opened on
 * its own computes (its sliced weights with its own vectors from the
 * capacity_bn file; the largest capacity: the weights file's), and a
 * smaller capacity with the largest one's vectors would not. */
static void nested_switch_applies_the_capacity_bn(void **state)
{
    (void)state;
    rtl_err e;
    rtl_model_options opt = {.threads = 1};
    rtl_model *m = rtl_model_open(cat, "nestbn", &opt, &e);
    if (!m) printf("# %s\n", e.msg);
    assert_non_null(m);
    trn_net *full = reference("nestbn");
    trn_net *refs[3];
    for (int k = 0; k < 3; k++) {
        refs[k] = capacity_reference(full, k);
        if (k == 2) break;
        size_t n;
        float *v = capacity_bn(k, &n);
        trn_err te;
        assert_int_equal(trn_net_vectors_count(refs[k], NEST_BN_ROLES), n);
        assert_int_equal(trn_net_vectors_put(refs[k], NEST_BN_ROLES, v, &te), 0);
        free(v);
    }
    float x[3 * 12 * 12];
    for (size_t i = 0; i < sizeof x / sizeof *x; i++) x[i] = (float)((i * 37) % 101) / 101.0f;
    static const int order[] = {3, 1, 2, 3, 1, 3, 2, 1};
    for (size_t s = 0; s < sizeof order / sizeof *order; s++) {
        int k = order[s];
        assert_int_equal(rtl_model_set_capacity(m, k, &e), 0);
        assert_int_equal(rtl_model_run(m, x, &e), 0);
        trn_err te;
        assert_int_equal(trn_net_forward(refs[k - 1], x, &te), 0);
        if (memcmp(rtl_model_output(m), trn_net_output(refs[k - 1]), CLASSES * sizeof(float)) != 0)
            fail_msg("capacity %d (step %zu) is not what the capacity computes on its own", k, s);
    }
    /* capacity 1 with the weights file's vectors computes something else */
    trn_net *plain = capacity_reference(full, 0);
    assert_int_equal(trn_net_forward(plain, x, &(trn_err){{0}}), 0);
    assert_int_equal(trn_net_forward(refs[0], x, &(trn_err){{0}}), 0);
    assert_memory_not_equal(trn_net_output(plain), trn_net_output(refs[0]), CLASSES * sizeof(float));
    trn_net_free(plain);
    for (int k = 0; k < 3; k++) trn_net_free(refs[k]);
    trn_net_free(full);
    rtl_model_close(m);
}

static void nested_capacities_switch_in_place(void **state)
{
    (void)state;
    switch_in_place(0);
}

/* The same with the madvise calls on the model's pager thread. */
static void nested_capacities_switch_async_paging(void **state)
{
    (void)state;
    switch_in_place(1);
}

/* Pages of the mapping of `path` (the first one in /proc/self/maps) that
 * are in this process's page tables (/proc/self/pagemap bit 63); -1 when
 * that cannot be read. */
static long present_pages(const char *path)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[4096];
    unsigned long lo = 0, hi = 0;
    while (fgets(line, sizeof line, f)) {
        char *nl = strchr(line, '\n'), *p = strchr(line, '/');
        if (nl) *nl = '\0';
        if (p && strcmp(p, path) == 0 && sscanf(line, "%lx-%lx", &lo, &hi) == 2) break;
        lo = hi = 0;
    }
    fclose(f);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0 || hi <= lo) {
        if (fd >= 0) close(fd);
        return -1;
    }
    long page = sysconf(_SC_PAGESIZE), n = 0;
    for (unsigned long a = lo; a < hi; a += (unsigned long)page) {
        uint64_t e;
        if (pread(fd, &e, sizeof e, (off_t)(a / (unsigned long)page * sizeof e)) != (ssize_t)sizeof e) {
            n = -1;
            break;
        }
        n += (long)(e >> 63);
    }
    close(fd);
    return n;
}

/* Whether MADV_DONTNEED on a private file mapping shows in pagemap here
 * (not under qemu-user, whose madvise is a no-op). */
static int pagemap_sees_madvise(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    long page = sysconf(_SC_PAGESIZE);
    volatile char *m = mmap(NULL, (size_t)page, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return 0;
    (void)m[0];
    int ok = 0;
    int pm = open("/proc/self/pagemap", O_RDONLY);
    uint64_t a = 0, b = 1;
    if (pm >= 0) {
        off_t at = (off_t)((uintptr_t)m / (uintptr_t)page * sizeof a);
        ok = pread(pm, &a, sizeof a, at) == (ssize_t)sizeof a && madvise((void *)m, (size_t)page, MADV_DONTNEED) == 0 &&
             pread(pm, &b, sizeof b, at) == (ssize_t)sizeof b && (a >> 63) && !(b >> 63);
        close(pm);
    }
    munmap((void *)m, (size_t)page);
    return ok;
}

/* On a model whose weights span pages: a downgrade takes out of the page
 * tables exactly the pages it says it released (advised_out), and none
 * that the smaller capacity uses (its run faults nothing back); an upgrade
 * and a run at the whole network bring every page back. Sync and pager. */
static void switch_pages(int async_paging)
{
    rtl_err e;
    rtl_model_options opt = {.threads = 1, .async_paging = async_paging};
    rtl_model *m = rtl_model_open(cat, "nestbig", &opt, &e);
    if (!m) printf("# %s\n", e.msg);
    assert_non_null(m);
    char path[4096];
    assert_non_null(realpath(rtl_variant_file(rtl_model_variant(m), "weights"), path));
    float x[3 * 12 * 12];
    for (size_t i = 0; i < sizeof x / sizeof *x; i++) x[i] = (float)((i * 29) % 97) / 97.0f;
    long page = sysconf(_SC_PAGESIZE);
    assert_int_equal(rtl_model_run(m, x, &e), 0);
    long full = present_pages(path);
    int seen = full > 0 && pagemap_sees_madvise(path);
    if (!seen) printf("# pagemap does not show madvise here: page counts not checked\n");
    static const int order[] = {2, 1, 3, 1, 2, 3};
    int prev = 3;
    for (size_t s = 0; s < sizeof order / sizeof *order; s++) {
        int k = order[s];
        assert_int_equal(rtl_model_set_capacity(m, k, &e), 0);
        rtl_paging_stats st;
        assert_int_equal(rtl_model_paging_wait(m, &st), async_paging);
        rtl_switch_bytes sb;
        rtl_model_switch_bytes(m, &sb);
        long before = seen ? present_pages(path) : 0;
        assert_int_equal(rtl_model_run(m, x, &e), 0);
        long after = seen ? present_pages(path) : 0;
        printf("# %d -> %d: in %llu (%llu) out %llu (%llu), present %ld before the run, %ld after, %ld full\n", prev, k,
               (unsigned long long)sb.page_in, (unsigned long long)sb.advised_in, (unsigned long long)sb.page_out,
               (unsigned long long)sb.advised_out, before, after, full);
        if (k < prev) {
            assert_true(sb.page_out > 0 && sb.advised_out % (uint64_t)page == 0);
            if (prev == 3) assert_true(sb.advised_out > 0); /* conv2's last 24 filters: whole pages */
            if (seen && prev == 3) assert_int_equal(full - before, (long)(sb.advised_out / (uint64_t)page));
            assert_int_equal(after, before); /* the smaller capacity lost no page it uses */
        } else {
            uint64_t tail = rtl_model_mapped_bytes(m) % (uint64_t)page; /* the file's last page is partial */
            assert_true(sb.page_in > 0 && sb.advised_in > 0 && sb.advised_in <= rtl_model_mapped_bytes(m));
            assert_true(sb.advised_in % (uint64_t)page == 0 || sb.advised_in % (uint64_t)page == tail);
            if (k == 3) assert_int_equal(after, full);
        }
        prev = k;
    }
    rtl_model_close(m);
}

static void nested_switch_pages(void **state)
{
    (void)state;
    switch_pages(0);
}

static void nested_switch_pages_async_paging(void **state)
{
    (void)state;
    switch_pages(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runs_like_the_trainer),
        cmocka_unit_test(models_run_concurrently),
        cmocka_unit_test(early_exits),
        cmocka_unit_test(model_info_is_versioned_by_size),
        cmocka_unit_test(nested_capacities_switch_in_place),
        cmocka_unit_test(nested_switch_applies_the_capacity_bn),
        cmocka_unit_test(nested_capacities_switch_async_paging),
        cmocka_unit_test(nested_switch_pages),
        cmocka_unit_test(nested_switch_pages_async_paging),
        cmocka_unit_test(runs_image_files),
        cmocka_unit_test(loading_errors_are_messages),
        cmocka_unit_test(measures_and_reads_latencies),
    };
    int rc = cmocka_run_group_tests_name("rtl_model", tests, setup, teardown);
    test_tmpdir_cleanup();
    return rc;
}
