/* Unit tests of the (n,p) context sampler (context.c): stream fractions,
 * the "other" class, class sets shared across p, determinism, paths inside
 * and outside the set folder. */
#include "testutil_impl.h"
#include "ds_testutil.h"
#include "fsdir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A synthetic set of 48 classes: 10 / 4 / 6 images per class. */
static const char *make_base(void)
{
    static char data[DS_PATH_MAX];
    if (data[0]) return data;
    char root[DS_PATH_MAX];
    t_dir(root, "base");
    ds_synth_opts o = t_small_synth(10, 4, 6);
    ds_write_result res;
    trn_err err;
    if (ds_synth_generate(&o, root, "b", 2, NULL, &res, &err) != 0) fail_msg("%s", err.msg);
    TPATH(data, "%s", res.data_path);
    return data;
}

static void options(void **state)
{
    (void)state;
    trn_err err;
    ds_context_opts o;
    ds_context_defaults(&o);
    assert_int_equal(o.nn, 3);
    assert_int_equal(o.n[2], 21);
    assert_int_equal(o.np, 5);
    assert_true(o.p[4] == 0.95);
    assert_int_equal(ds_context_check(&o, &err), 0);
    assert_int_equal(ds_context_parse_n(&o, "3,5", &err), 0);
    assert_int_equal(o.nn, 2);
    assert_int_equal(o.n[1], 5);
    assert_int_equal(ds_context_parse_p(&o, "0.5,1", &err), 0);
    assert_int_equal(o.np, 2);
    assert_int_equal(ds_context_parse_n(&o, "3,x", &err), -1);
    assert_int_equal(ds_context_parse_p(&o, "0", &err), -1);
    assert_int_equal(ds_context_parse_p(&o, "1.5", &err), -1);
    assert_int_equal(ds_context_parse_n(&o, "3,3", &err), 0);
    assert_int_equal(ds_context_check(&o, &err), -1);
    assert_non_null(strstr(err.msg, "twice"));
}

/* Opens a context set (into *s, path into data) and counts its in-context
 * and "other" images. */
static void load_ctx(const char *dir, const char *id, int n, trn_dataset **s, char data[DS_PATH_MAX],
                     size_t in[TRN_SPLIT_COUNT], size_t other[TRN_SPLIT_COUNT])
{
    trn_err err;
    char p[DS_PATH_MAX];
    TPATH(p, "%s/%s/%s.data", dir, id, id);
    memcpy(data, p, sizeof p);
    if (!(*s = trn_dataset_open(p, &err))) fail_msg("%s", err.msg);
    if (ds_check_set(*s, p, 0, &err) != 0) fail_msg("%s", err.msg); /* links resolve */
    assert_int_equal(trn_dataset_classes(*s), n + 1);
    assert_string_equal(trn_dataset_label(*s, n), "other");
    for (int sp = 0; sp < TRN_SPLIT_COUNT; sp++) {
        in[sp] = other[sp] = 0;
        for (size_t i = 0; i < trn_dataset_count(*s, (trn_split)sp); i++) {
            if (trn_dataset_class(*s, (trn_split)sp, i) == n) other[sp]++;
            else in[sp]++;
        }
    }
}

static void streams(void **state)
{
    (void)state;
    trn_err err;
    const char *data = make_base();
    char out[DS_PATH_MAX];
    TPATH(out, "%s/base/b/contexts", test_tmpdir());
    ds_context_opts o;
    ds_context_defaults(&o);
    assert_int_equal(ds_context_parse_n(&o, "7,21,48", &err), 0);
    assert_int_equal(ds_context_parse_p(&o, "0.6,0.95,1", &err), 0);
    o.per = 2;
    ds_context_result res;
    if (ds_contexts_write(data, out, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(res.written, 2 * 3 * 2);
    assert_int_equal(res.nskipped, 1);
    assert_int_equal(res.skipped_n[0], 48);

    static const int per_class[TRN_SPLIT_COUNT] = {10, 4, 6};
    trn_dataset *s, *s2;
    char data1[DS_PATH_MAX], data2[DS_PATH_MAX];
    size_t in[TRN_SPLIT_COUNT], other[TRN_SPLIT_COUNT], in2[TRN_SPLIT_COUNT], other2[TRN_SPLIT_COUNT];
    /* n = 7: all in-context images, and others in proportion. */
    load_ctx(out, "n7-p0.6", 7, &s, data1, in, other);
    for (int sp = 0; sp < TRN_SPLIT_COUNT; sp++) {
        assert_int_equal(in[sp], (size_t)7 * per_class[sp]);
        assert_int_equal(other[sp], (size_t)llround(7.0 * per_class[sp] * 0.4 / 0.6));
    }
    /* The same classes for every p of the same (n, replica). */
    load_ctx(out, "n7-p0.95", 7, &s2, data2, in2, other2);
    for (int k = 0; k < 7; k++) assert_string_equal(trn_dataset_label(s, k), trn_dataset_label(s2, k));
    assert_int_equal(other2[TRN_SPLIT_TRAIN], (size_t)llround(70 * 0.05 / 0.95));
    trn_dataset_close(s2);
    /* p = 1: no other image at all. */
    load_ctx(out, "n7-p1", 7, &s2, data2, in2, other2);
    assert_int_equal(other2[TRN_SPLIT_TRAIN] + other2[TRN_SPLIT_VALID] + other2[TRN_SPLIT_TEST], 0);
    trn_dataset_close(s2);
    /* A second replica draws another class set. */
    load_ctx(out, "n7-p0.6-r1", 7, &s2, data2, in2, other2);
    int same = 1;
    for (int k = 0; k < 7; k++) same &= !strcmp(trn_dataset_label(s, k), trn_dataset_label(s2, k));
    assert_false(same);
    trn_dataset_close(s2);
    trn_dataset_close(s);
    /* n = 21, p = 0.6: 21*10 in, 140 others needed, 270 available. */
    load_ctx(out, "n21-p0.6", 21, &s, data1, in, other);
    assert_int_equal(in[TRN_SPLIT_TRAIN], 210);
    assert_int_equal(other[TRN_SPLIT_TRAIN], 140);
    /* Paths stay relative, in-context ones to the set, others via other/. */
    for (size_t i = 0; i < trn_dataset_count(s, TRN_SPLIT_TRAIN); i++) {
        const char *e = ds_set_entry(s, data1, TRN_SPLIT_TRAIN, i);
        if (trn_dataset_class(s, TRN_SPLIT_TRAIN, i) == 21) assert_true(!strncmp(e, "other/", 6));
        else assert_true(!strncmp(e, "../../train/", 12));
    }
    trn_dataset_close(s);

    /* Same options: same bytes. */
    char out2[DS_PATH_MAX];
    TPATH(out2, "%s/base/b/contexts2", test_tmpdir());
    if (ds_contexts_write(data, out2, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(ds_fs_same_tree(out, out2, &err), 1);
    /* Another seed: other class sets. */
    o.seed = 77;
    if (ds_contexts_write(data, out2, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    assert_int_equal(ds_fs_same_tree(out, out2, &err), 0);
}

/* Fewer others than p asks for: in-context images are dropped instead. */
static void few_others(void **state)
{
    (void)state;
    trn_err err;
    const char *data = make_base();
    char out[DS_PATH_MAX];
    TPATH(out, "%s/base/b/few", test_tmpdir());
    ds_context_opts o;
    ds_context_defaults(&o);
    assert_int_equal(ds_context_parse_n(&o, "40", &err), 0);
    assert_int_equal(ds_context_parse_p(&o, "0.6", &err), 0);
    ds_context_result res;
    if (ds_contexts_write(data, out, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    trn_dataset *s;
    size_t in[TRN_SPLIT_COUNT], other[TRN_SPLIT_COUNT];
    char data1[DS_PATH_MAX];
    load_ctx(out, "n40-p0.6", 40, &s, data1, in, other);
    assert_int_equal(other[TRN_SPLIT_TRAIN], 80); /* all 8 other classes */
    assert_int_equal(in[TRN_SPLIT_TRAIN], 120);   /* 80 * 0.6 / 0.4 */
    trn_dataset_close(s);
}

/* Contexts outside the set folder use absolute paths. */
static void outside_the_set(void **state)
{
    (void)state;
    trn_err err;
    const char *data = make_base();
    char out[DS_PATH_MAX];
    TPATH(out, "%s/elsewhere/ctx", test_tmpdir());
    char parent[DS_PATH_MAX];
    t_dir(parent, "elsewhere");
    ds_context_opts o;
    ds_context_defaults(&o);
    assert_int_equal(ds_context_parse_n(&o, "7", &err), 0);
    assert_int_equal(ds_context_parse_p(&o, "0.8", &err), 0);
    ds_context_result res;
    if (ds_contexts_write(data, out, &o, &res, &err) != 0) fail_msg("%s", err.msg);
    trn_dataset *s;
    size_t in[TRN_SPLIT_COUNT], other[TRN_SPLIT_COUNT];
    char data1[DS_PATH_MAX];
    load_ctx(out, "n7-p0.8", 7, &s, data1, in, other);
    for (size_t i = 0; i < trn_dataset_count(s, TRN_SPLIT_VALID); i++)
        if (trn_dataset_class(s, TRN_SPLIT_VALID, i) < 7)
            assert_true(ds_set_entry(s, data1, TRN_SPLIT_VALID, i)[0] == '/');
    trn_dataset_close(s);
}

static void other_label_refused(void **state)
{
    (void)state;
    trn_err err;
    char dir[DS_PATH_MAX], p[DS_PATH_MAX];
    t_dir(dir, "withother");
    t_write_text(dir, "x.data", "classes = 2\ntrain = train.list\nlabels = x.names\n");
    t_write_text(dir, "x.names", "cat\nother\n");
    t_write_text(dir, "train.list", "a_cat.png\nb_other.png\n");
    TPATH(p, "%s/x.data", dir);
    char out[DS_PATH_MAX];
    TPATH(out, "%s/contexts", dir);
    ds_context_opts o;
    ds_context_defaults(&o);
    ds_context_result res;
    assert_int_equal(ds_contexts_write(p, out, &o, &res, &err), -1);
    assert_non_null(strstr(err.msg, "'other'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(options),         cmocka_unit_test(streams),
        cmocka_unit_test(few_others),      cmocka_unit_test(outside_the_set),
        cmocka_unit_test(other_label_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
