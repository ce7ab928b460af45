/* Unit tests of the synthetic set (synth.c) and of writing a set
 * (writer.c, fsdir.c): determinism, balance, label sets, the layout, and
 * the temporary-folder protocol. */
#include "testutil_impl.h"
#include "ds_testutil.h"
#include "fsdir.h"
#include "synth.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A small set: 16x16, 3 / 2 / 2 images per class. */
static ds_synth_opts small(void)
{
    return t_small_synth(3, 2, 2);
}

static void options(void **state)
{
    (void)state;
    trn_err err;
    ds_synth_opts o;
    ds_synth_defaults(&o);
    assert_int_equal(ds_synth_check(&o, &err), 0);
    assert_int_equal(ds_synth_count(&o), (size_t)48 * (100 + 20 + 30));
    o.size = 8;
    assert_int_equal(ds_synth_check(&o, &err), -1);
    assert_non_null(strstr(err.msg, "16..256"));
    ds_synth_defaults(&o);
    o.noise = -1;
    assert_int_equal(ds_synth_check(&o, &err), -1);
    ds_synth_defaults(&o);
    o.train = 0;
    assert_int_equal(ds_synth_check(&o, &err), -1);
}

static void tasks_and_labels(void **state)
{
    (void)state;
    trn_err err;
    ds_task t[DS_SYNTH_TASKS];
    assert_int_equal(ds_synth_tasks(t, &err), 0);
    assert_string_equal(t[0].name, "identity");
    assert_true(t[0].classes >= 40);
    for (int k = 0; k < DS_SYNTH_TASKS; k++) {
        assert_int_equal(ds_task_check(&t[k], &err), 0);
        assert_true(t[k].classes >= 3);
    }
    /* Every image's labels: identity decides shape family and colour group;
     * size and texture vary within an identity. */
    ds_synth_opts o = small();
    o.train = 20;
    size_t n = ds_synth_count(&o);
    int fam[64], grp[64], sizes[64] = {0}, textures[64] = {0};
    for (int k = 0; k < 64; k++) fam[k] = grp[k] = -1;
    int per_split[TRN_SPLIT_COUNT][64] = {{0}};
    for (size_t i = 0; i < n; i++) {
        trn_split sp;
        int32_t l[DS_SYNTH_TASKS];
        assert_int_equal(ds_synth_image(&o, i, &sp, l, NULL, &err), 0);
        for (int k = 0; k < DS_SYNTH_TASKS; k++) assert_true(l[k] >= 0 && l[k] < t[k].classes);
        int id = l[0];
        if (fam[id] < 0) fam[id] = l[1], grp[id] = l[2];
        assert_int_equal(fam[id], l[1]);
        assert_int_equal(grp[id], l[2]);
        sizes[id] |= 1 << l[3];
        textures[id] |= 1 << l[4];
        per_split[sp][id]++;
    }
    for (int id = 0; id < t[0].classes; id++) {
        assert_int_equal(per_split[TRN_SPLIT_TRAIN][id], 20);
        assert_int_equal(per_split[TRN_SPLIT_VALID][id], 2);
        assert_int_equal(per_split[TRN_SPLIT_TEST][id], 2);
        assert_true(__builtin_popcount((unsigned)sizes[id]) >= 2);
        assert_true(__builtin_popcount((unsigned)textures[id]) >= 2);
    }
    /* The identity label names its colour and shape ("red-disc"). */
    assert_non_null(strchr(t[0].labels[0], '-'));
    assert_int_equal(ds_synth_image(&o, n, NULL, NULL, NULL, &err), -1);
    for (int k = 0; k < DS_SYNTH_TASKS; k++) ds_task_free(&t[k]);
}

static void images_are_deterministic(void **state)
{
    (void)state;
    trn_err err;
    ds_synth_opts o = small();
    ds_pixels a = {0}, b = {0};
    assert_int_equal(ds_synth_image(&o, 5, NULL, NULL, &a, &err), 0);
    assert_int_equal(a.w, 16);
    assert_int_equal(a.c, 3);
    assert_int_equal(ds_synth_image(&o, 5, NULL, NULL, &b, &err), 0);
    assert_memory_equal(a.data, b.data, 16 * 16 * 3);
    /* Another image and another seed differ. */
    assert_int_equal(ds_synth_image(&o, 6, NULL, NULL, &b, &err), 0);
    assert_true(memcmp(a.data, b.data, 16 * 16 * 3) != 0);
    o.seed = 2;
    assert_int_equal(ds_synth_image(&o, 5, NULL, NULL, &b, &err), 0);
    assert_true(memcmp(a.data, b.data, 16 * 16 * 3) != 0);
    /* Not flat: the scene has structure. */
    int lo = 255, hi = 0;
    for (int i = 0; i < 16 * 16 * 3; i++) {
        if (a.data[i] < lo) lo = a.data[i];
        if (a.data[i] > hi) hi = a.data[i];
    }
    assert_true(hi - lo > 40);
    ds_pixels_free(&a);
    ds_pixels_free(&b);
}

/* The main object's colour: the mean hue of the most saturated pixels of
 * many images of one class is near the class hue. A renderer that drew the
 * wrong colour for a class would fail here. */
static void class_colour_shows(void **state)
{
    (void)state;
    trn_err err;
    ds_synth_opts o = small();
    o.size = 32;
    o.train = 40;
    o.clutter = 0;
    o.occlusion = 0;
    o.noise = 0;
    ds_pixels p = {0};
    /* Class 0 ("red-disc", reddish) against class 32 ("blue-disc"): red
     * minus blue of the most saturated pixels has opposite signs. */
    for (int c = 0; c < 2; c++) {
        int cls = c ? syn_class(SYN_COLOUR_BLUE, SYN_SHAPE_DISC) : syn_class(SYN_COLOUR_RED, SYN_SHAPE_DISC);
        double rb = 0;
        int imgs = 0;
        for (size_t i = (size_t)cls; i < (size_t)SYN_CLASSES * o.train; i += SYN_CLASSES, imgs++) {
            assert_int_equal(ds_synth_image(&o, i, NULL, NULL, &p, &err), 0);
            int best = 0, bi = 0;
            for (int j = 0; j < 32 * 32; j++) {
                const uint8_t *q = p.data + j * 3;
                int mx = q[0] > q[1] ? (q[0] > q[2] ? q[0] : q[2]) : (q[1] > q[2] ? q[1] : q[2]);
                int mn = q[0] < q[1] ? (q[0] < q[2] ? q[0] : q[2]) : (q[1] < q[2] ? q[1] : q[2]);
                if (mx - mn > best) best = mx - mn, bi = j;
            }
            rb += (double)p.data[bi * 3] - p.data[bi * 3 + 2];
        }
        if (c == 0) assert_true(rb / imgs > 40);
        else assert_true(rb / imgs < -40);
    }
    ds_pixels_free(&p);
}

static size_t count_entries(const char *dir)
{
    size_t n;
    trn_err err;
    char **v = ds_fs_list(dir, &n, &err);
    if (!v) fail_msg("%s", err.msg);
    ds_fs_free_list(v, n);
    return n;
}

static void write_layout_and_publish(void **state)
{
    (void)state;
    trn_err err;
    char root[DS_PATH_MAX], p[DS_PATH_MAX];
    t_dir(root, "gen");
    ds_synth_opts o = small();
    ds_write_result res;
    assert_int_equal(ds_synth_generate(&o, root, "s", 2, NULL, &res, &err), 0);
    assert_int_equal(res.unchanged, 0);
    assert_int_equal(res.count[TRN_SPLIT_TRAIN], 48 * 3);
    assert_int_equal(res.count[TRN_SPLIT_VALID], 48 * 2);
    assert_int_equal(res.count[TRN_SPLIT_TEST], 48 * 2);

    /* Every task's .data loads, over the same lists, and passes the check. */
    static const char *const files[] = {"s.data", "s-shape.data", "s-colour.data", "s-size.data", "s-texture.data"};
    for (int t = 0; t < 5; t++) {
        trn_dataset *s;
        TPATH(p, "%s/s/%s", root, files[t]);
        if (!(s = trn_dataset_open(p, &err))) fail_msg("%s", err.msg);
        assert_int_equal(trn_dataset_count(s, TRN_SPLIT_TRAIN), 48 * 3);
        assert_int_equal(ds_check_set(s, p, t == 0, &err), 0);
        assert_true(trn_dataset_has(s, TRN_SPLIT_TEST));
        trn_dataset_close(s);
    }
    char *text;
    size_t len;
    TPATH(p, "%s/s/s.tasks", root);
    assert_int_equal(trn_read_file(p, 0, &text, &len, &err), 0);
    assert_non_null(strstr(text, "\nidentity s.data\nshape s-shape.data\n"));
    free(text);
    TPATH(p, "%s/s/s.data", root);
    assert_int_equal(trn_read_file(p, 0, &text, &len, &err), 0);
    assert_non_null(strstr(text, "classes = 48\n"));
    assert_non_null(strstr(text, "top = 5\n"));
    free(text);
    assert_int_equal(count_entries(root), 1); /* no temporary folder left */

    /* The same set again: kept as it was, timestamps included. */
    struct stat st1, st2;
    TPATH(p, "%s/s/s.data", root);
    assert_int_equal(stat(p, &st1), 0);
    assert_int_equal(ds_synth_generate(&o, root, "s", 1, NULL, &res, &err), 0);
    assert_int_equal(res.unchanged, 1);
    assert_int_equal(stat(p, &st2), 0);
    assert_true(st1.st_ino == st2.st_ino && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec &&
                st1.st_mtim.tv_sec == st2.st_mtim.tv_sec);

    /* Another seed: the set is replaced. */
    o.seed = 9;
    assert_int_equal(ds_synth_generate(&o, root, "s", 2, NULL, &res, &err), 0);
    assert_int_equal(res.unchanged, 0);
    assert_int_equal(stat(p, &st2), 0);
    assert_true(st1.st_ino != st2.st_ino);
    assert_int_equal(count_entries(root), 1);
}

/* A render callback that fails on image 7. */
static int failing_render(void *ctx, size_t i, ds_pixels *out, trn_err *err)
{
    (void)ctx;
    if (i == 7) return trn_errf(err, "source.bin: byte offset 1234: damaged");
    if (ds_pixels_reserve(out, 4, 4, 1, err) != 0) return -1;
    memset(out->data, (int)i, 16);
    return 0;
}

static void tiny_spec(ds_set_spec *s, ds_task *t, uint8_t *split, int32_t *cls, size_t n, const char *root)
{
    trn_err err;
    assert_int_equal(ds_task_init(t, "identity", 2, &err), 0);
    assert_int_equal(ds_task_set(t, 0, "cat", &err), 0);
    assert_int_equal(ds_task_set(t, 1, "dog", &err), 0);
    for (size_t i = 0; i < n; i++) {
        split[i] = (uint8_t)(i % 3);
        cls[i] = (int32_t)(i % 2);
    }
    memset(s, 0, sizeof *s);
    s->root = root;
    s->name = "tiny";
    s->ntasks = 1;
    s->tasks = t;
    s->count = n;
    s->split = split;
    s->cls = cls;
    s->render = failing_render;
    s->threads = 2;
    s->seed = 1;
}

static void failure_leaves_old_set(void **state)
{
    (void)state;
    trn_err err;
    char root[DS_PATH_MAX], p[DS_PATH_MAX];
    t_dir(root, "fail");
    ds_task t;
    uint8_t split[20];
    int32_t cls[20];
    ds_set_spec s;
    ds_write_result res;
    tiny_spec(&s, &t, split, cls, 20, root);
    s.count = 7; /* images 0..6: no failure */
    assert_int_equal(ds_set_write(&s, &res, &err), 0);
    TPATH(p, "%s/tiny/tiny.data", root);
    struct stat st1, st2;
    assert_int_equal(stat(p, &st1), 0);

    s.count = 20; /* now image 7 fails */
    assert_int_equal(ds_set_write(&s, &res, &err), -1);
    assert_non_null(strstr(err.msg, "image 7: source.bin: byte offset 1234"));
    assert_int_equal(stat(p, &st2), 0);
    assert_true(st1.st_ino == st2.st_ino); /* the old set is untouched */
    assert_int_equal(count_entries(root), 1); /* and no temporary folder */

    /* A leftover temporary folder of a dead process is removed by the next
     * run; one named by a live process (ours) is rebuilt. */
    TPATH(p, "%s/.tiny.tmp.999999999", root);
    assert_int_equal(mkdir(p, 0755), 0);
    t_write_text(p, "half.png", "x");
    s.count = 7;
    assert_int_equal(ds_set_write(&s, &res, &err), 0);
    assert_int_equal(res.unchanged, 1);
    assert_int_equal(count_entries(root), 1);
    ds_task_free(&t);
}

static void label_collisions_refused(void **state)
{
    (void)state;
    trn_err err;
    char root[DS_PATH_MAX];
    t_dir(root, "collide");
    ds_task t[2];
    uint8_t split[6];
    int32_t cls[12];
    ds_set_spec s;
    ds_write_result res;
    tiny_spec(&s, &t[0], split, cls, 6, root);
    /* A second task whose label "dog" is also an identity label. */
    assert_int_equal(ds_task_init(&t[1], "pet", 2, &err), 0);
    assert_int_equal(ds_task_set(&t[1], 0, "dog", &err), 0);
    assert_int_equal(ds_task_set(&t[1], 1, "fish", &err), 0);
    for (int i = 0; i < 6; i++) cls[i * 2] = cls[i * 2 + 1] = i % 2; /* "000000_cat_dog" */
    s.ntasks = 2;
    s.tasks = t;
    assert_int_equal(ds_set_write(&s, &res, &err), -1);
    assert_non_null(strstr(err.msg, "2 labels match"));
    assert_int_equal(count_entries(root), 0);
    s.name = "bad_name";
    assert_int_equal(ds_set_write(&s, &res, &err), -1);
    assert_non_null(strstr(err.msg, "set name"));
    ds_task_free(&t[0]);
    ds_task_free(&t[1]);
}

static void same_tree(void **state)
{
    (void)state;
    trn_err err;
    char a[DS_PATH_MAX], b[DS_PATH_MAX], p[DS_PATH_MAX];
    t_dir(a, "tree/a/sub");
    t_dir(b, "tree/b/sub");
    t_write_text(a, "f", "hello");
    t_write_text(b, "f", "hello");
    TPATH(a, "%s/tree/a", test_tmpdir());
    TPATH(b, "%s/tree/b", test_tmpdir());
    assert_int_equal(ds_fs_same_tree(a, b, &err), 1);
    TPATH(p, "%s/l", a);
    assert_int_equal(symlink("sub/f", p), 0);
    assert_int_equal(ds_fs_same_tree(a, b, &err), 0);
    TPATH(p, "%s/l", b);
    assert_int_equal(symlink("sub/f", p), 0);
    assert_int_equal(ds_fs_same_tree(a, b, &err), 1);
    TPATH(p, "%s/sub", b);
    t_write_text(p, "f", "hellO");
    assert_int_equal(ds_fs_same_tree(a, b, &err), 0);
    assert_int_equal(ds_fs_rm_rf(a, &err), 0);
    assert_int_equal(access(a, F_OK), -1);
    assert_int_equal(ds_fs_rm_rf(a, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options),
        cmocka_unit_test(tasks_and_labels),
        cmocka_unit_test(images_are_deterministic),
        cmocka_unit_test(class_colour_shows),
        cmocka_unit_test(write_layout_and_publish),
        cmocka_unit_test(failure_leaves_old_set),
        cmocka_unit_test(label_collisions_refused),
        cmocka_unit_test(same_tree),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
