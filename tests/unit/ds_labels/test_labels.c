/* Unit tests of datasets/ labels and checks: label words, tasks, and what
 * ds_check_set adds to reading a set with libtrn (images exist, no image in
 * two splits, every image decodes). */
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

/* A small set on disk: two classes, train and test lists (the images are
 * empty files; reading the set does not open them). */
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

/* ds_check_set on a set that trn_dataset_open reads: NULL when the check
 * passes, else the message. */
static const char *check(const char *data, int decode)
{
    static trn_err err;
    trn_dataset *ds = trn_dataset_open(data, &err);
    if (!ds) fail_msg("%s", err.msg);
    int rc = ds_check_set(ds, data, decode, &err);
    trn_dataset_close(ds);
    return rc == 0 ? NULL : err.msg;
}

static void check_set(void **state)
{
    (void)state;
    const char *p = make_set("good", good_data, "cat\ndog\n", "img/000001_cat.png\n\nimg/000002_dog.png\r\n",
                             "img/000003_dog.png\n");
    assert_null(check(p, 0));
    /* The entry as the list gives it, relative to the set's folder. */
    trn_err err;
    trn_dataset *ds = trn_dataset_open(p, &err);
    assert_non_null(ds);
    assert_string_equal(ds_set_entry(ds, p, TRN_SPLIT_TRAIN, 1), "img/000002_dog.png");
    trn_dataset_close(ds);

    /* A missing image, one in two splits, one that does not decode. */
    p = make_set("missing", good_data, "cat\ndog\n", "img/000001_cat.png\nimg/000004_dog.png\n", "img/000003_dog.png\n");
    const char *msg = check(p, 0);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "entry 2 of the train list"));
    assert_non_null(strstr(msg, "000004_dog.png: no such file"));
    p = make_set("shared", good_data, "cat\ndog\n", "img/000001_cat.png\nimg/000003_dog.png\n", "img/000003_dog.png\n");
    msg = check(p, 0);
    assert_non_null(msg);
    assert_non_null(strstr(msg, "two splits"));
    p = make_set("undecodable", good_data, "cat\ndog\n", "img/000001_cat.png\n", "img/000003_dog.png\n");
    assert_null(check(p, 0));
    msg = check(p, 1); /* the images are empty files */
    assert_non_null(msg);
    assert_non_null(strstr(msg, "000001_cat.png: byte offset 0"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(label_words),
        cmocka_unit_test(tasks),
        cmocka_unit_test(check_set),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
