/* The loader: batch order, per-epoch shuffles, resume equivalence, and
 * results that do not depend on threads or the cache. */
#include "tdata.h"

#include <math.h>

#define NIMG 10
#define IW 6
#define IH 5

/* Image i is uniform with byte value 20 i + 10 in every channel and has class
 * i % 2 ("even" / "odd"); image 3 of the "broken" list is not an image. */
static const char *loader_set(void)
{
    static char dpath[1024];
    if (dpath[0]) return dpath;
    snprintf(dpath, sizeof dpath, "%s", fx_path("ld/set.data"));
    char list[4096] = "", broken[4096] = "";
    unsigned char px[IW * IH * 3];
    for (int i = 0; i < NIMG; i++) {
        memset(px, 20 * i + 10, sizeof px);
        char rel[64];
        snprintf(rel, sizeof rel, "img/%04d_%s.png", i, i % 2 ? "odd" : "even");
        fx_write_image(fx_path("ld/%s", rel), "png", IW, IH, 3, px);
        strcat(list, rel);
        strcat(list, "\n");
        if (i == 3) strcat(broken, "img/0003_bad_odd.png\n");
        else if (i < 6) strcat(broken, rel), strcat(broken, "\n");
    }
    fx_write_text(fx_path("ld/img/0003_bad_odd.png"), "\x89PNG\r\n\x1a\n not really");
    fx_write_text(fx_path("ld/train.list"), list);
    fx_write_text(fx_path("ld/broken.list"), broken);
    fx_write_text(fx_path("ld/labels.txt"), "even\nodd\n");
    fx_write_text(dpath, "classes=2\nlabels=labels.txt\ntrain=train.list\nvalid=broken.list\n");
    return dpath;
}

static trn_dataset *open_set(void)
{
    trn_err e;
    trn_dataset *ds = trn_dataset_open(loader_set(), &e);
    if (!ds) print_error("%s\n", e.msg);
    assert_non_null(ds);
    return ds;
}

static trn_loader_opts opts(int batch, int augment, int shuffle, int threads, uint64_t seed)
{
    trn_loader_opts o;
    trn_loader_opts_defaults(&o);
    o.w = 4;
    o.h = 4;
    o.c = 3;
    o.batch = batch;
    o.augment = augment;
    o.shuffle = shuffle;
    o.threads = threads;
    o.seed = seed;
    if (augment) {
        o.aug.angle = 10;
        o.aug.aspect = 1.2f;
        o.aug.hue = .1f;
        o.aug.saturation = 1.4f;
        o.aug.exposure = 1.4f;
        o.aug.jitter = .1f;
    }
    return o;
}

#define SAMPLE (4 * 4 * 3)

/* The image a sample came from, by its uniform value (no augmentation). */
static int which(const float *x)
{
    int v = (int)lroundf(x[0] * 255);
    for (int i = 1; i < SAMPLE; i++) assert_true(fabsf(x[i] - x[0]) < 1e-6f);
    assert_int_equal((v - 10) % 20, 0);
    return (v - 10) / 20;
}

static trn_loader *open_ok(const trn_dataset *ds, trn_split split, const trn_loader_opts *o)
{
    trn_err e;
    trn_loader *l = trn_loader_open(ds, split, o, &e);
    if (!l) print_error("%s\n", e.msg);
    assert_non_null(l);
    return l;
}

static void get_ok(trn_loader *l, uint64_t k, float *x, float *y)
{
    trn_err e;
    int rc = trn_loader_get(l, k, x, y, &e);
    if (rc != 0) print_error("batch %llu: %s\n", (unsigned long long)k, e.msg);
    assert_int_equal(rc, 0);
}

void loader_order_and_one_hot(void **state)
{
    (void)state;
    trn_dataset *ds = open_set();
    trn_loader_opts o = opts(4, 0, 0, 2, 1);
    trn_loader *l = open_ok(ds, TRN_SPLIT_TRAIN, &o);
    assert_int_equal(trn_loader_epoch_size(l), NIMG);
    float x[4 * SAMPLE], y[4 * 2];
    get_ok(l, 0, x, y);
    for (int j = 0; j < 4; j++) {
        assert_int_equal(which(x + j * SAMPLE), j);
        assert_true(y[j * 2 + j % 2] == 1 && y[j * 2 + 1 - j % 2] == 0);
    }
    /* Batch 2 holds positions 8..11: the epoch wraps to images 0, 1. */
    get_ok(l, 2, x, y);
    int want[4] = {8, 9, 0, 1};
    for (int j = 0; j < 4; j++) {
        assert_int_equal(which(x + j * SAMPLE), want[j]);
        assert_true(y[j * 2 + want[j] % 2] == 1);
    }
    trn_loader_close(l);
    trn_dataset_close(ds);
}

void loader_shuffle_is_per_epoch_perm(void **state)
{
    (void)state;
    trn_dataset *ds = open_set();
    trn_loader_opts o = opts(5, 0, 1, 1, 42);
    trn_loader *l = open_ok(ds, TRN_SPLIT_TRAIN, &o);
    float x[5 * SAMPLE], y[5 * 2];
    int order[3][NIMG];
    for (int ep = 0; ep < 3; ep++) {
        int count[NIMG] = {0};
        for (int b = 0; b < 2; b++) {
            get_ok(l, (uint64_t)(ep * 2 + b), x, y);
            for (int j = 0; j < 5; j++) {
                int i = which(x + j * SAMPLE);
                count[i]++;
                order[ep][b * 5 + j] = i;
                assert_true(y[j * 2 + i % 2] == 1);
            }
        }
        for (int i = 0; i < NIMG; i++) assert_int_equal(count[i], 1);
    }
    assert_memory_not_equal(order[0], order[1], sizeof order[0]);
    assert_memory_not_equal(order[1], order[2], sizeof order[0]);
    trn_loader_close(l);
    /* Another seed, another order. */
    o.seed = 43;
    l = open_ok(ds, TRN_SPLIT_TRAIN, &o);
    int other[NIMG];
    for (int b = 0; b < 2; b++) {
        get_ok(l, (uint64_t)b, x, y);
        for (int j = 0; j < 5; j++) other[b * 5 + j] = which(x + j * SAMPLE);
    }
    assert_memory_not_equal(order[0], other, sizeof other);
    trn_loader_close(l);
    trn_dataset_close(ds);
}

#define NB 7
#define B 3

/* Batches 0..NB-1 of a loader with these options, fetched in order. */
static void sequential(const trn_dataset *ds, const trn_loader_opts *o, float (*x)[B * SAMPLE],
                       float (*y)[B * 2])
{
    trn_loader *l = open_ok(ds, TRN_SPLIT_TRAIN, o);
    for (int k = 0; k < NB; k++) get_ok(l, (uint64_t)k, x[k], y[k]);
    trn_loader_close(l);
}

void loader_resume_equivalence(void **state)
{
    (void)state;
    trn_dataset *ds = open_set();
    trn_loader_opts o = opts(B, 1, 1, 2, 7);
    static float xs[NB][B * SAMPLE], ys[NB][B * 2];
    sequential(ds, &o, xs, ys);
    /* A fresh loader (a restarted run) asked for batch k first, then in any
     * order, gives the same bytes. */
    const int asks[] = {4, 5, 6, 1, 2, 0, 6};
    float x[B * SAMPLE], y[B * 2];
    trn_loader *l = open_ok(ds, TRN_SPLIT_TRAIN, &o);
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        get_ok(l, (uint64_t)asks[i], x, y);
        assert_memory_equal(x, xs[asks[i]], sizeof x);
        assert_memory_equal(y, ys[asks[i]], sizeof y);
    }
    trn_loader_close(l);
    /* Batches differ from each other (augmentation is per epoch and image). */
    assert_memory_not_equal(xs[0], xs[1], sizeof xs[0]);
    trn_dataset_close(ds);
}

void loader_threads_do_not_change_bytes(void **state)
{
    (void)state;
    trn_dataset *ds = open_set();
    static float x1[NB][B * SAMPLE], y1[NB][B * 2], x4[NB][B * SAMPLE], y4[NB][B * 2];
    trn_loader_opts o = opts(B, 1, 1, 1, 99);
    sequential(ds, &o, x1, y1);
    o.threads = 4;
    sequential(ds, &o, x4, y4);
    assert_memory_equal(x1, x4, sizeof x1);
    assert_memory_equal(y1, y4, sizeof y1);
    o.seed = 100;
    sequential(ds, &o, x4, y4);
    assert_memory_not_equal(x1, x4, sizeof x1);
    trn_dataset_close(ds);
}

void loader_cache_does_not_change_bytes(void **state)
{
    (void)state;
    trn_dataset *ds = open_set();
    static float xa[NB][B * SAMPLE], ya[NB][B * 2], xb[NB][B * SAMPLE], yb[NB][B * 2];
    for (int augment = 0; augment <= 1; augment++) {
        trn_loader_opts o = opts(B, augment, 1, 3, 5);
        sequential(ds, &o, xa, ya);
        /* Everything cached, then a budget that holds only a few images. */
        size_t budgets[2] = {1 << 20, 3 * IW * IH * 3 * sizeof(float)};
        for (int i = 0; i < 2; i++) {
            o.cache_bytes = budgets[i];
            sequential(ds, &o, xb, yb);
            assert_memory_equal(xa, xb, sizeof xa);
            assert_memory_equal(ya, yb, sizeof ya);
        }
    }
    trn_dataset_close(ds);
}

void loader_errors(void **state)
{
    (void)state;
    trn_dataset *ds = open_set();
    trn_err e;
    trn_loader_opts o = opts(2, 0, 0, 2, 1);
    /* The broken list: images 0, 1, 2, bad, 4, 5; batch 1 holds the bad one. */
    trn_loader *l = open_ok(ds, TRN_SPLIT_VALID, &o);
    float x[2 * SAMPLE], y[2 * 2];
    assert_int_equal(trn_loader_get(l, 1, x, y, &e), -1);
    assert_err_has(e, "0003_bad_odd.png");
    assert_err_has(e, "batch 1 of the valid split");
    get_ok(l, 2, x, y);
    assert_int_equal(which(x), 4);
    get_ok(l, 0, x, y);
    assert_int_equal(which(x + SAMPLE), 1);
    trn_loader_close(l);
    /* Closing with a batch still being prepared. */
    l = open_ok(ds, TRN_SPLIT_TRAIN, &o);
    trn_loader_close(l);
    trn_loader_close(NULL);
    /* Absent split, bad options. */
    assert_null(trn_loader_open(ds, TRN_SPLIT_TEST, &o, &e));
    assert_err_has(e, "no 'test' list");
    o.batch = 0;
    assert_null(trn_loader_open(ds, TRN_SPLIT_TRAIN, &o, &e));
    assert_err_has(e, "batch=0");
    o = opts(2, 1, 1, 1, 1);
    o.aug.hue = 2;
    assert_null(trn_loader_open(ds, TRN_SPLIT_TRAIN, &o, &e));
    assert_err_has(e, "hue=2");
    o = opts(2, 0, 1, 0, 1);
    assert_null(trn_loader_open(ds, TRN_SPLIT_TRAIN, &o, &e));
    assert_err_has(e, "threads=0");
    trn_dataset_close(ds);
}

/* trn_valid (trainer valid's evaluation) on the loader's set: every image
 * counted once in the confusion matrix, top-1 its diagonal, top-2 of two
 * classes every image, the predictions file agreeing with both, --limit's
 * n respected, a network of the wrong width refused naming both files;
 * trn_top_k orders ties by index. */
void valid_counts_every_image(void **state)
{
    (void)state;
    trn_dataset *ds = open_set();
    const char *text = "[net]\nbatch=4\nwidth=6\nheight=5\nchannels=3\n[connected]\noutput=%d\n[softmax]\n";
    char cfgtext[256];
    trn_net *net[2];
    trn_err e;
    for (int i = 0; i < 2; i++) {
        snprintf(cfgtext, sizeof cfgtext, text, 2 + i);
        trn_cfg *c = trn_cfg_parse(cfgtext, strlen(cfgtext), "v.cfg", &e);
        trn_net_opts no;
        trn_net_opts_defaults(&no);
        no.infer_only = 1, no.batch = 4;
        assert_non_null(c);
        assert_non_null(net[i] = trn_net_create(c, &no, &e));
        trn_cfg_free(c);
    }
    char preds_path[1024];
    snprintf(preds_path, sizeof preds_path, "%s", fx_path("ld/valid.preds"));
    trn_valid_opts o = {net[0], ds, TRN_SPLIT_TRAIN, NIMG, 2, 4, 2, "v.cfg", "set.data", preds_path};
    trn_valid_result r;
    if (trn_valid(&o, &r, &e)) fail_msg("%s", e.msg);
    uint64_t sum = 0;
    for (int i = 0; i < 4; i++) sum += r.conf[i];
    assert_int_equal(sum, NIMG);
    assert_int_equal(r.good1, r.conf[0] + r.conf[3]);
    assert_int_equal(r.goodk, NIMG);
    trn_preds p;
    if (trn_preds_read(preds_path, &p, &e)) fail_msg("%s", e.msg);
    assert_int_equal(p.images, NIMG);
    uint64_t right = 0;
    for (int i = 0; i < NIMG; i++) {
        assert_int_equal(p.truth[i], i % 2);
        right += p.pred[i] == p.truth[i];
    }
    assert_int_equal(right, r.good1);
    trn_preds_free(&p);
    trn_valid_result_free(&r);
    o.n = 7, o.predictions = NULL;
    if (trn_valid(&o, &r, &e)) fail_msg("%s", e.msg);
    assert_int_equal(r.conf[0] + r.conf[1] + r.conf[2] + r.conf[3], 7);
    trn_valid_result_free(&r);
    o.net = net[1];
    assert_int_equal(trn_valid(&o, &r, &e), -1);
    assert_err_has(e, "v.cfg has 3 outputs but set.data has 2 classes");
    assert_null(r.conf);
    const float pr[] = {0.1f, 0.5f, 0.3f, 0.5f};
    int best[3];
    trn_top_k(pr, 4, 3, best);
    assert_int_equal(best[0], 1);
    assert_int_equal(best[1], 3);
    assert_int_equal(best[2], 2);
    trn_net_free(net[0]);
    trn_net_free(net[1]);
    trn_dataset_close(ds);
}

typedef struct pr_seen {
    int n, errors, top[NIMG + 2];
    char name[NIMG + 2][8];
    const trn_names *names;
} pr_seen;

static void pr_each(void *ctx, const trn_predict_image *r)
{
    pr_seen *s = ctx;
    int i = s->n++;
    s->top[i] = -1;
    if (r->error) {
        s->errors++;
        assert_non_null(strstr(r->error, r->image));
        return;
    }
    assert_int_equal(r->k, 2);
    assert_true(r->p[r->cls[0]] >= r->p[r->cls[1]] && r->cls[0] != r->cls[1]);
    assert_true(fabsf(r->p[0] + r->p[1] - 1) < 1e-5f);
    s->top[i] = r->cls[0];
    snprintf(s->name[i], sizeof s->name[i], "%s", trn_names_get(s->names, r->cls[0]));
}

/* trn_predict (trainer predict): every image told in order, its top class
 * the network's own answer on it and named from the set or from a names
 * file (blank lines and CRLF ignored), an unreadable or missing image told
 * with its error and counted; a names count other than the outputs refused
 * naming both. */
void predict_answers_every_image(void **state)
{
    (void)state;
    loader_set();
    const char *text = "[net]\nbatch=1\nwidth=6\nheight=5\nchannels=3\n[connected]\noutput=2\n[softmax]\n";
    trn_err e;
    trn_cfg *c = trn_cfg_parse(text, strlen(text), "p.cfg", &e);
    assert_non_null(c);
    trn_net_opts no;
    trn_net_opts_defaults(&no);
    no.infer_only = 1, no.batch = 1;
    trn_net *net = trn_net_create(c, &no, &e);
    assert_non_null(net);
    trn_cfg_free(c);
    char paths[NIMG + 2][1024];
    const char *imgs[NIMG + 2];
    for (int i = 0; i < NIMG; i++)
        snprintf(paths[i], sizeof paths[i], "%s", fx_path("ld/img/%04d_%s.png", i, i % 2 ? "odd" : "even"));
    snprintf(paths[NIMG], sizeof paths[NIMG], "%s", fx_path("ld/img/0003_bad_odd.png"));
    snprintf(paths[NIMG + 1], sizeof paths[NIMG + 1], "%s", fx_path("ld/img/none.png"));
    for (int i = 0; i < NIMG + 2; i++) imgs[i] = paths[i];
    trn_names names, fnames;
    if (trn_names_open(loader_set(), NULL, &names, &e)) fail_msg("%s", e.msg);
    fx_write_text(fx_path("ld/two.names"), "\neven\r\n\nodd\n");
    if (trn_names_open(NULL, fx_path("ld/two.names"), &fnames, &e)) fail_msg("%s", e.msg);
    assert_int_equal(fnames.n, 2);
    pr_seen seen = {.names = &names}, fseen = {.names = &fnames};
    trn_predict_opts o = {net, &names, "p.cfg", "set.data", imgs, NIMG + 2, 5, pr_each, &seen};
    assert_int_equal(trn_predict(&o, &e), 2);
    o.names = &fnames, o.ctx = &fseen;
    assert_int_equal(trn_predict(&o, &e), 2);
    assert_int_equal(seen.n, NIMG + 2);
    assert_int_equal(seen.errors, 2);
    float x[6 * 5 * 3];
    for (int i = 0; i < NIMG; i++) {
        if (trn_image_load_input(imgs[i], 6, 5, 3, x, &e) || trn_net_forward(net, x, &e)) fail_msg("%s", e.msg);
        const float *p = trn_net_output(net);
        assert_int_equal(seen.top[i], p[1] > p[0] ? 1 : 0);
        assert_string_equal(seen.name[i], seen.top[i] ? "odd" : "even");
        assert_string_equal(fseen.name[i], seen.name[i]);
    }
    assert_true(seen.top[NIMG] == -1 && seen.top[NIMG + 1] == -1);
    trn_names_close(&fnames);
    fx_write_text(fx_path("ld/three.names"), "a\nb\nc\n");
    if (trn_names_open(NULL, fx_path("ld/three.names"), &fnames, &e)) fail_msg("%s", e.msg);
    o.names = &fnames;
    assert_int_equal(trn_predict(&o, &e), -1);
    assert_err_has(e, "p.cfg has 2 outputs but set.data names 3 classes");
    trn_names_close(&fnames);
    assert_int_equal(trn_names_open(NULL, fx_path("ld/nothing.names"), &fnames, &e), -1);
    trn_names_close(&names);
    trn_net_free(net);
}

/* trn_preds_pair (trainer valid --against): a right on images 0, 1, 3, b on
 * 0, 2, 3, 4 of five: one image right only in a (1), two only in b (2, 4);
 * records of other images (another list hash, another count) refused. */
void preds_pair_discordant(void **state)
{
    (void)state;
    int truth[5] = {0, 1, 2, 3, 0}, pa[5] = {0, 1, 0, 3, 1}, pb[5] = {0, 0, 2, 3, 0};
    trn_preds a = {TRN_SPLIT_TEST, 5, 4, 0x1234, truth, pa}, b = {TRN_SPLIT_TEST, 5, 4, 0x1234, truth, pb};
    uint64_t oa, ob;
    trn_err e;
    if (trn_preds_pair(&a, &b, &oa, &ob, &e)) fail_msg("%s", e.msg);
    assert_int_equal(oa, 1);
    assert_int_equal(ob, 2);
    if (trn_preds_pair(&b, &a, &oa, &ob, &e)) fail_msg("%s", e.msg);
    assert_int_equal(oa, 2);
    assert_int_equal(ob, 1);
    b.list = 0x1235;
    assert_int_equal(trn_preds_pair(&a, &b, &oa, &ob, &e), -1);
    assert_err_has(e, "not the same images");
    b.list = a.list, b.images = 4;
    assert_int_equal(trn_preds_pair(&a, &b, &oa, &ob, &e), -1);
}
