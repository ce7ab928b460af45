/* Unit tests of datasets/ labels: label words, the label rule, tasks, and
 * reading a .data set (labels, lists, errors with file:line). */
#include "testutil_impl.h"
#include "ds_testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void label_words(void **state)
{
    (void)state;
    trn_err err;
    assert_int_equal(ds_label_check("red-disc", &err), 0);
    assert_int_equal(ds_label_check("v1.2+x", &err), 0);
    assert_int_equal(ds_label_check("a_b", &err), -1);
    assert_non_null(strstr(err.msg, "'_'"));
    assert_int_equal(ds_label_check("a/b", &err), -1);
    assert_int_equal(ds_label_check("", &err), -1);
    assert_int_equal(ds_label_check("..", &err), -1);

    char out[DS_LABEL_MAX + 1];
    assert_int_equal(ds_label_from_name("aquarium_fish", out, &err), 0);
    assert_string_equal(out, "aquarium-fish");
    assert_int_equal(ds_label_from_name(" large man_made things ", out, &err), 0);
    assert_string_equal(out, "large-man-made-things");
    assert_int_equal(ds_label_from_name("__", out, &err), -1);
    assert_int_equal(ds_label_check(out, &err), -1);
}

static void label_rule(void **state)
{
    (void)state;
    const char *labels[] = {"cat", "dog", "red-disc", "small"};
    trn_err err;
    assert_int_equal(ds_label_match("train/000001_dog.png", labels, 4, "l:1", &err), 1);
    assert_int_equal(ds_label_match("x/dog/img001.jpg", labels, 4, "l:1", &err), 1);
    /* Parent folder and token naming the same label count once. */
    assert_int_equal(ds_label_match("x/dog/dog_001.jpg", labels, 4, "l:1", &err), 1);
    assert_int_equal(ds_label_match("000009_red-disc_round.png", labels, 4, "l:1", &err), 2);
    /* Darknet's substring trap: "cat" inside "category" or the path's
     * folders must not match. */
    assert_int_equal(ds_label_match("/data/cats/category_7/000001_dog.png", labels, 4, "l:1", &err), 1);
    /* The extension is not a token, but a label with a '.' can be. */
    const char *dotted[] = {"png", "v1.2"};
    assert_int_equal(ds_label_match("a/000001_v1.2.png", dotted, 2, "l:1", &err), 1);

    assert_int_equal(ds_label_match("train/000001_cow.png", labels, 4, "list:7", &err), -1);
    assert_non_null(strstr(err.msg, "list:7"));
    assert_non_null(strstr(err.msg, "000001_cow.png"));
    assert_non_null(strstr(err.msg, "none of the 4 labels"));
    assert_int_equal(ds_label_match("train/000001_cat_dog.png", labels, 4, "list:8", &err), -1);
    assert_non_null(strstr(err.msg, "list:8"));
    assert_non_null(strstr(err.msg, "'cat', 'dog'"));
}

static void tasks(void **state)
{
    (void)state;
    ds_task t;
    trn_err err;
    assert_int_equal(ds_task_init(&t, "colour", 3, &err), 0);
    assert_int_equal(ds_task_set(&t, 0, "warm", &err), 0);
    assert_int_equal(ds_task_set(&t, 1, "cool", &err), 0);
    assert_int_equal(ds_task_check(&t, &err), -1);
    assert_non_null(strstr(err.msg, "class 2 has no label"));
    assert_int_equal(ds_task_set(&t, 2, "warm", &err), 0);
    assert_int_equal(ds_task_check(&t, &err), -1);
    assert_non_null(strstr(err.msg, "'warm' is given to two classes"));
    assert_int_equal(ds_task_set(&t, 2, "deep", &err), 0);
    assert_int_equal(ds_task_check(&t, &err), 0);
    assert_int_equal(ds_task_set(&t, 3, "x", &err), -1);
    assert_int_equal(ds_task_set(&t, 0, "bad_label", &err), -1);
    ds_task_free(&t);
    ds_task_free(&t);
    assert_int_equal(ds_task_init(&t, "bad name", 2, &err), -1);
    assert_int_equal(ds_task_init(&t, "ok", 0, &err), -1);
}

/* A small set on disk: two classes, train and test lists, one image each
 * (the images are empty files; ds_set_load does not open them). */
static const char *make_set(const char *name, const char *data, const char *names, const char *train,
                            const char *test)
{
    static char dir[DS_PATH_MAX];
    t_dir(dir, name);
    char sub[DS_PATH_MAX];
    TPATH(sub, "%s/img", name);
    t_dir(sub, sub);
    t_write_text(dir, "x.data", data);
    t_write_text(dir, "x.names", names);
    if (train) t_write_text(dir, "train.list", train);
    if (test) t_write_text(dir, "test.list", test);
    t_write_text(dir, "img/000001_cat.png", "");
    t_write_text(dir, "img/000002_dog.png", "");
    t_write_text(dir, "img/000003_dog.png", "");
    static char path[DS_PATH_MAX];
    TPATH(path, "%s/x.data", dir);
    return path;
}

static const char *good_data = "# a comment\nclasses = 2\ntrain = train.list\ntest=test.list\n"
                               "labels = x.names\nnames = x.names\nbackup = backup/\ntop = 2\n";

static void set_load(void **state)
{
    (void)state;
    ds_set s;
    trn_err err;
    const char *p = make_set("good", good_data, "cat\ndog\n", "img/000001_cat.png\n\nimg/000002_dog.png\r\n",
                             "img/000003_dog.png\n");
    assert_int_equal(ds_set_load(p, &s, &err), 0);
    assert_int_equal(s.labels.classes, 2);
    assert_int_equal(s.top, 2);
    assert_int_equal(s.count[DS_SPLIT_TRAIN], 2);
    assert_int_equal(s.count[DS_SPLIT_VALID], 0);
    assert_int_equal(s.count[DS_SPLIT_TEST], 1);
    assert_int_equal(s.cls[DS_SPLIT_TRAIN][0], 0);
    assert_int_equal(s.cls[DS_SPLIT_TRAIN][1], 1);
    assert_string_equal(s.path[DS_SPLIT_TRAIN][1], "img/000002_dog.png");
    char r[DS_PATH_MAX], want[DS_PATH_MAX];
    assert_int_equal(ds_set_resolve(&s, s.path[DS_SPLIT_TEST][0], r, &err), 0);
    TPATH(want, "%s/good/img/000003_dog.png", test_tmpdir());
    assert_string_equal(r, want);
    assert_int_equal(ds_set_check(&s, 0, &err), 0);
    ds_set_free(&s);
    ds_set_free(&s);
}

static void set_errors(void **state)
{
    (void)state;
    ds_set s;
    trn_err err;
    const char *p = make_set("badkey", "classes = 2\ntrain = train.list\nlabels = x.names\nnonsense\n", "cat\ndog\n",
                             "img/000001_cat.png\n", NULL);
    assert_int_equal(ds_set_load(p, &s, &err), -1);
    assert_non_null(strstr(err.msg, "x.data:4"));

    p = make_set("count", "classes = 3\ntrain = train.list\nlabels = x.names\n", "cat\ndog\n", "img/000001_cat.png\n", NULL);
    assert_int_equal(ds_set_load(p, &s, &err), -1);
    assert_non_null(strstr(err.msg, "2 labels"));
    assert_non_null(strstr(err.msg, "classes = 3"));

    p = make_set("unmatched", good_data, "cat\ndog\n", "img/000001_cat.png\nimg/000009_cow.png\n", "img/000003_dog.png\n");
    assert_int_equal(ds_set_load(p, &s, &err), -1);
    assert_non_null(strstr(err.msg, "train.list:2"));
    assert_non_null(strstr(err.msg, "000009_cow.png"));

    p = make_set("nolabels", "classes = 2\ntrain = train.list\n", "cat\ndog\n", "img/000001_cat.png\n", NULL);
    assert_int_equal(ds_set_load(p, &s, &err), -1);
    assert_non_null(strstr(err.msg, "labels"));

    p = make_set("dup", good_data, "cat\ncat\n", "img/000001_cat.png\n", "img/000003_dog.png\n");
    assert_int_equal(ds_set_load(p, &s, &err), -1);
    assert_non_null(strstr(err.msg, "'cat' is given to two classes"));

    /* Loads, but the check finds a missing image and one shared by splits. */
    p = make_set("missing", good_data, "cat\ndog\n", "img/000001_cat.png\nimg/000004_dog.png\n", "img/000003_dog.png\n");
    assert_int_equal(ds_set_load(p, &s, &err), 0);
    assert_int_equal(ds_set_check(&s, 0, &err), -1);
    assert_non_null(strstr(err.msg, "000004_dog.png"));
    assert_non_null(strstr(err.msg, "no such file"));
    ds_set_free(&s);
    p = make_set("shared", good_data, "cat\ndog\n", "img/000001_cat.png\nimg/000003_dog.png\n", "img/000003_dog.png\n");
    assert_int_equal(ds_set_load(p, &s, &err), 0);
    assert_int_equal(ds_set_check(&s, 0, &err), -1);
    assert_non_null(strstr(err.msg, "two splits"));
    ds_set_free(&s);
    /* --decode: the empty files are not images. */
    p = make_set("undecodable", good_data, "cat\ndog\n", "img/000001_cat.png\n", "img/000003_dog.png\n");
    assert_int_equal(ds_set_load(p, &s, &err), 0);
    assert_int_equal(ds_set_check(&s, 1, &err), -1);
    assert_non_null(strstr(err.msg, "000001_cat.png: byte offset 0"));
    ds_set_free(&s);

    assert_int_equal(ds_set_load("/nonexistent/x.data", &s, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/x.data"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(label_words), cmocka_unit_test(label_rule), cmocka_unit_test(tasks),
        cmocka_unit_test(set_load),    cmocka_unit_test(set_errors),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
