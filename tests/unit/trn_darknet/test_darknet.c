/*
 * Differential tests against Darknet (the Debian package's libdarknet),
 * through the separate program dn_ref (tests/darknet/dn_ref.c).
 *
 * For alexnet, cifar, tiny, darknet, vgg-16 and resnet18 as shipped in
 * /usr/share/darknet/cfg (only batch and subdivisions set, to keep the run
 * short), with the same weights (written by us, loaded by Darknet) and the
 * same input:
 *   - every layer's inference output within ||ours - dn|| / ||dn|| <= 1e-4;
 *   - one training step on the same batch (Darknet's dropout draws and
 *     crop offsets exported to us): every layer's training output within
 *     1e-4 and the cost within 1e-4; then the backward and the update,
 *     with every updated parameter array and every update (momentum)
 *     array within 1e-3, and every layer's delta within 1e-3.
 * The backward runs on Darknet's forward state: its training outputs are
 * imported into our layers (and our max-pool layers recompute their
 * argmax from those values). Without that, the 1e-6 rounding differences
 * of two correct forwards flip a few of the backward's discrete choices
 * in every network (the leaky/relu slope of an output within rounding of
 * zero, the argmax of two near-equal pooled values), and each flip moves
 * the gradients below it by 1e-3..1e-2: a difference of rounding, not of
 * arithmetic. The forward itself is compared without any import.
 * And the weights round trip both ways: ours load in Darknet and Darknet
 * re-saves identical bytes; Darknet's own initial weights and files of the
 * old 16-byte header and the transposed layout load in ours and re-save as
 * Darknet re-saves them.
 */
#include "testutil_impl.h"
#include "testlib_trn.h"

#include "net.h"

#define DN_CFG_DIR "/usr/share/darknet/cfg"
#define FWD_TOL 1e-4
#define TRAIN_OUT_TOL 1e-4
#define PARAM_TOL 1e-3

static char dn_ref[1024];

static int have_darknet(void)
{
    const char *t = getenv("TESTD");
    snprintf(dn_ref, sizeof dn_ref, "%s/darknet/dn_ref", t && *t ? t : "build/tests");
    if (!tl_exists("/usr/lib/darknet/libdarknet.so")) {
        TEST_SKIP("libdarknet is not installed (apt-get install darknet)");
        return 0;
    }
    if (!tl_exists(dn_ref)) {
        TEST_SKIP("%s is not built (run through make test)", dn_ref);
        return 0;
    }
    return 1;
}

/* The shipped cfg with batch and subdivisions set, written for both sides. */
static trn_net *make_case(const char *name, int batch, const char **cfg_path, trn_err *e)
{
    char src[512];
    snprintf(src, sizeof src, DN_CFG_DIR "/%s.cfg", name);
    trn_cfg *cfg = trn_cfg_read(src, e);
    if (!cfg) return NULL;
    *cfg_path = tl_path("%s.cfg", name);
    if (trn_cfg_setf(cfg, 0, "batch", e, "%d", batch) || trn_cfg_set(cfg, 0, "subdivisions", "1", e) ||
        trn_cfg_write(cfg, *cfg_path, e)) {
        trn_cfg_free(cfg);
        return NULL;
    }
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.seed = 11;
    trn_net *net = trn_net_create(cfg, &o, e);
    trn_cfg_free(cfg);
    return net;
}

static int compare_layers(trn_net *net, const char *dir, const char *stem, int deltas, double tol,
                          double *worst)
{
    int bad = 0, batch = trn_net_batch(net);
    *worst = 0;
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        size_t n = (size_t)batch * info.out.c * info.out.h * info.out.w;
        const float *ours = deltas ? trn_net_layer_delta(net, i) : trn_net_layer_output(net, i);
        char path[1200];
        snprintf(path, sizeof path, "%s/%s_%03d.bin", dir, stem, i);
        if (!ours) {
            if (tl_exists(path)) {
                printf("# layer %d (%s): Darknet has a %s, we have none\n", i, info.type, stem);
                bad++;
            }
            continue;
        }
        float *dn = tl_read_floats(path, n);
        if (!dn) {
            printf("# layer %d (%s): no Darknet %s of %zu floats in %s\n", i, info.type, stem, n, dir);
            bad++;
            continue;
        }
        double e = tl_relerr(ours, dn, n);
        printf("#   %-7s layer %2d %-13s %3dx%3dx%4d  rel.err %.2e\n", stem, i, info.type,
               info.out.h, info.out.w, info.out.c, e);
        if (!(e <= tol)) bad++;
        if (!(e <= *worst)) *worst = e;
        free(dn);
    }
    return bad;
}

/* Parameter arrays after the step (Darknet's save_weights) and the update
 * arrays (Darknet's *_updates), both per array. */
static int compare_params(trn_net *net, const char *dir, double *worst_p, double *worst_u)
{
    size_t len = 0, ulen = 0;
    char ap[1200], up[1200];
    snprintf(ap, sizeof ap, "%s/after.weights", dir);
    snprintf(up, sizeof up, "%s/updates.bin", dir);
    unsigned char *after = tl_read(ap, &len);
    float *upd = tl_read(up, &ulen);
    int bad = 0, np;
    const trn_param *p = trn_net_params(net, &np);
    *worst_p = *worst_u = 0;
    if (!after || !upd || len != trn_weights_bytes(net)) {
        printf("# Darknet's after.weights/updates.bin are missing or of the wrong size\n");
        free(after);
        free(upd);
        return 1;
    }
    size_t uoff = 0;
    for (int i = 0; i < np; i++) {
        float *dn = malloc(p[i].count * sizeof *dn);
        memcpy(dn, after + p[i].offset, p[i].count * sizeof *dn);
        double e = tl_relerr(p[i].data, dn, p[i].count);
        free(dn);
        if (!(e <= PARAM_TOL)) {
            printf("# layer %d %s: parameters rel.err %.2e\n", p[i].layer,
                   trn_param_role_name(p[i].role), e);
            bad++;
        }
        if (!(e <= *worst_p)) *worst_p = e;
        if (!p[i].update) continue;
        if ((uoff + p[i].count) * sizeof(float) > ulen) {
            printf("# updates.bin is too short\n");
            bad++;
            break;
        }
        e = tl_relerr(p[i].update, upd + uoff, p[i].count);
        uoff += p[i].count;
        if (!(e <= PARAM_TOL)) {
            printf("# layer %d %s: update array rel.err %.2e\n", p[i].layer,
                   trn_param_role_name(p[i].role), e);
            bad++;
        }
        if (!(e <= *worst_u)) *worst_u = e;
    }
    if (uoff * sizeof(float) != ulen) {
        printf("# updates.bin has %zu floats, we have %zu update values\n", ulen / 4, uoff);
        bad++;
    }
    free(after);
    free(upd);
    return bad;
}

static void differential(const char *name, int batch)
{
    if (!have_darknet()) return;
    trn_err e;
    const char *cfgp = NULL;
    trn_net *net = make_case(name, batch, &cfgp, &e);
    if (!net) fail_msg("%s", e.msg);
    char cfg_path[1024], wpath[1024], xin[1024], yin[1024], fdir[1024], tdir[1024];
    snprintf(cfg_path, sizeof cfg_path, "%s", cfgp);
    snprintf(wpath, sizeof wpath, "%s", tl_path("%s.weights", name));
    snprintf(xin, sizeof xin, "%s", tl_path("%s.in", name));
    snprintf(yin, sizeof yin, "%s", tl_path("%s.truth", name));
    snprintf(fdir, sizeof fdir, "%s", tl_path("%s_fwd", name));
    snprintf(tdir, sizeof tdir, "%s", tl_path("%s_train", name));
    tl_randomize(net, 1234);
    assert_int_equal(trn_weights_save(net, wpath, &e), 0);
    size_t nin = (size_t)batch * trn_net_inputs(net), nout = (size_t)batch * trn_net_outputs(net);
    float *x = malloc(nin * sizeof *x), *y = malloc(nout * sizeof *y);
    tl_fill_uniform(x, nin, 99, 0, 1);
    tl_one_hot(y, batch, (int)trn_net_outputs(net), 5);
    assert_int_equal(tl_write(xin, x, nin * sizeof *x), 0);
    assert_int_equal(tl_write(yin, y, nout * sizeof *y), 0);

    /* Inference. */
    mkdir(fdir, 0755);
    assert_int_equal(tl_run("'%s' forward '%s' '%s' '%s' '%s'", dn_ref, cfg_path, wpath, xin, fdir), 0);
    assert_int_equal(trn_net_forward(net, x, &e), 0);
    double worst;
    printf("# %s: inference, batch %d\n", name, batch);
    int bad = compare_layers(net, fdir, "out", 0, FWD_TOL, &worst);
    printf("# %s: inference worst layer rel.err %.2e (limit %.0e)\n", name, worst, FWD_TOL);
    assert_int_equal(bad, 0);

    /* One training step, with Darknet's random draws. */
    mkdir(tdir, 0755);
    assert_int_equal(tl_run("'%s' train '%s' '%s' '%s' '%s' 3 '%s'", dn_ref, cfg_path, wpath, xin,
                            yin, tdir), 0);
    for (int i = 0; i < trn_net_layers(net); i++) {
        char p1[1200], p2[1200];
        snprintf(p1, sizeof p1, "%s/crop_%03d.bin", tdir, i);
        snprintf(p2, sizeof p2, "%s/rand_%03d.bin", tdir, i);
        size_t len;
        float *v = tl_read(p1, &len);
        if (!v) v = tl_read(p2, &len);
        if (v) assert_int_equal(trn_layer_fix_random(net, i, v, len / sizeof *v, &e), 0);
        free(v);
    }
    /* trn_net_train_step, in its steps, importing Darknet's forward state
     * between forward and backward. */
    trn_net_set_seen(net, trn_net_seen(net) + (uint64_t)batch);
    assert_int_equal(trn_net_forward_train(net, x, y, &e), 0);
    printf("# %s: one training step\n", name);
    double wo, wd, wp, wu;
    bad = compare_layers(net, tdir, "out", 0, TRAIN_OUT_TOL, &wo);
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_info info;
        trn_net_layer_info(net, i, &info);
        size_t n = (size_t)batch * info.out.c * info.out.h * info.out.w;
        char p1[1200];
        snprintf(p1, sizeof p1, "%s/out_%03d.bin", tdir, i);
        float *v = tl_read_floats(p1, n);
        assert_non_null(v);
        if (info.kind != TRN_LAYER_DROPOUT) assert_int_equal(trn_layer_import_output(net, i, v, n, &e), 0);
        free(v);
    }
    assert_int_equal(trn_net_backward(net, &e), 0);
    trn_net_update(net);
    bad += compare_layers(net, tdir, "delta", 1, PARAM_TOL, &wd);
    bad += compare_params(net, tdir, &wp, &wu);
    char cpath[1200];
    snprintf(cpath, sizeof cpath, "%s/cost.txt", tdir);
    char *cost = tl_read(cpath, NULL);
    assert_non_null(cost);
    double dc = atof(cost);
    free(cost);
    double ce = fabs(trn_net_cost(net) - dc) / fabs(dc);
    printf("# %s: train outputs worst %.2e, deltas worst %.2e, parameters worst %.2e, "
           "update arrays worst %.2e (limit %.0e), cost %.6g vs %.6g\n",
           name, wo, wd, wp, wu, PARAM_TOL, trn_net_cost(net), dc);
    assert_true(ce <= 1e-4);
    assert_int_equal(bad, 0);
    free(x);
    free(y);
    trn_net_free(net);
    tl_run("rm -rf '%s' '%s' '%s'", fdir, tdir, wpath);
}

static void diff_alexnet(void **s) { (void)s; differential("alexnet", 2); }
static void diff_cifar(void **s) { (void)s; differential("cifar", 4); }
static void diff_tiny(void **s) { (void)s; differential("tiny", 2); }
static void diff_darknet(void **s) { (void)s; differential("darknet", 2); }
static void diff_vgg16(void **s) { (void)s; differential("vgg-16", 1); }
static void diff_resnet18(void **s) { (void)s; differential("resnet18", 2); }

/* ---- weights round trips -------------------------------------------------- */

/* A small cfg with every parameter layout: conv with and without BN,
 * connected with and without BN. */
static const char *round_cfg =
    "[net]\nbatch=2\nheight=8\nwidth=8\nchannels=3\n"
    "[convolutional]\nbatch_normalize=1\nfilters=4\nsize=3\npad=1\nactivation=leaky\n"
    "[convolutional]\nfilters=5\nsize=1\nactivation=relu\n"
    "[maxpool]\nsize=2\nstride=2\n"
    "[connected]\nbatch_normalize=1\noutput=7\nactivation=leaky\n"
    "[connected]\noutput=3\nactivation=linear\n"
    "[softmax]\n";

static void roundtrip_ours_in_darknet(void **s)
{
    (void)s;
    if (!have_darknet()) return;
    trn_err e;
    const char *cfg = tl_path("rt.cfg"), *ours = tl_path("rt_ours.weights"),
               *dn = tl_path("rt_dn.weights");
    assert_int_equal(tl_write_text(cfg, round_cfg), 0);
    trn_net *net = trn_net_load(cfg, NULL, NULL, &e);
    assert_non_null(net);
    tl_randomize(net, 3);
    trn_net_set_seen(net, 123456789012ull);
    assert_int_equal(trn_weights_save(net, ours, &e), 0);
    assert_int_equal(tl_run("'%s' resave '%s' '%s' '%s'", dn_ref, cfg, ours, dn), 0);
    assert_true(tl_same_file(ours, dn));
    trn_net_free(net);
}

static void roundtrip_darknet_in_ours(void **s)
{
    (void)s;
    if (!have_darknet()) return;
    trn_err e;
    const char *cfg = tl_path("rt.cfg"), *dn = tl_path("rt_init.weights"),
               *ours = tl_path("rt_resaved.weights");
    assert_int_equal(tl_write_text(cfg, round_cfg), 0);
    assert_int_equal(tl_run("'%s' init '%s' 17 '%s'", dn_ref, cfg, dn), 0);
    trn_net *net = trn_net_load(cfg, dn, NULL, &e);
    if (!net) fail_msg("%s", e.msg);
    assert_int_equal(trn_weights_save(net, ours, &e), 0);
    assert_true(tl_same_file(ours, dn));
    trn_net_free(net);
}

/* Rewrites a 0.2.0 file of ours as version major.minor with a 32-bit seen,
 * connected weights transposed when `transposed`. */
static void write_old(trn_net *net, const char *path, int32_t major, int32_t minor, int transposed)
{
    int np;
    const trn_param *p = trn_net_params(net, &np);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    int32_t head[4] = {major, minor, 0, 4242};
    fwrite(head, sizeof head, 1, f);
    for (int i = 0; i < np; i++) {
        trn_layer_info info;
        trn_net_layer_info(net, p[i].layer, &info);
        if (transposed && p[i].role == TRN_PARAM_WEIGHTS && info.kind == TRN_LAYER_CONNECTED) {
            for (int c = 0; c < p[i].cols; c++)
                for (int r = 0; r < p[i].rows; r++)
                    fwrite(&p[i].data[(size_t)r * p[i].cols + c], sizeof(float), 1, f);
        } else {
            fwrite(p[i].data, sizeof(float), p[i].count, f);
        }
    }
    assert_int_equal(fclose(f), 0);
}

static void roundtrip_old_headers(void **s)
{
    (void)s;
    if (!have_darknet()) return;
    trn_err e;
    char cfg[1024];
    snprintf(cfg, sizeof cfg, "%s", tl_path("rt.cfg"));
    assert_int_equal(tl_write_text(cfg, round_cfg), 0);
    trn_net *src = trn_net_load(cfg, NULL, NULL, &e);
    assert_non_null(src);
    tl_randomize(src, 8);
    struct { int32_t major, minor; int transposed; } cases[] = {{0, 1, 0}, {1001, 0, 1}, {0, 1001, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const char *old = tl_path("old%zu.weights", c), *dn = tl_path("old%zu_dn.weights", c),
                   *ours = tl_path("old%zu_ours.weights", c);
        write_old(src, old, cases[c].major, cases[c].minor, cases[c].transposed);
        assert_int_equal(tl_run("'%s' resave '%s' '%s' '%s'", dn_ref, cfg, old, dn), 0);
        trn_net *net = trn_net_load(cfg, old, NULL, &e);
        if (!net) fail_msg("%s", e.msg);
        assert_true(trn_net_seen(net) == 4242);
        assert_int_equal(trn_weights_save(net, ours, &e), 0);
        printf("# version %d.%d%s: re-saved bytes %s Darknet's\n", cases[c].major, cases[c].minor,
               cases[c].transposed ? " (transposed)" : "", tl_same_file(ours, dn) ? "equal" : "DIFFER from");
        assert_true(tl_same_file(ours, dn));
        trn_net_free(net);
    }
    trn_net_free(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip_ours_in_darknet),
        cmocka_unit_test(roundtrip_darknet_in_ours),
        cmocka_unit_test(roundtrip_old_headers),
        cmocka_unit_test(diff_cifar),
        cmocka_unit_test(diff_alexnet),
        cmocka_unit_test(diff_tiny),
        cmocka_unit_test(diff_darknet),
        cmocka_unit_test(diff_resnet18),
        cmocka_unit_test(diff_vgg16),
    };
    if (getenv("TEST_FILTER")) cmocka_set_test_filter(getenv("TEST_FILTER"));
    int rc = cmocka_run_group_tests_name("trn_darknet", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
