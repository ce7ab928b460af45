/* Data sets: the label rule (including Darknet's substring traps) and the
 * .data / list / labels parsers with their file:line errors. */
#include "tdata.h"

static const char *const animals[] = {"cat", "dog", "concat", "bird-of-prey"};

static int match(const char *path, trn_err *e)
{
    return trn_label_match(path, animals, 4, "list.txt:7", e);
}

void label_rule_good_cases(void **state)
{
    (void)state;
    trn_err e;
    assert_int_equal(match("train/000001_cat.png", &e), 0);
    assert_int_equal(match("/abs/dog/0001.jpg", &e), 1);
    assert_int_equal(match("000002_bird-of-prey_small.png", &e), 3);
    /* Darknet's strstr would see "cat" in each of these. */
    assert_int_equal(match("train/concatenate_dog.png", &e), 1);
    assert_int_equal(match("cats/17_dog.png", &e), 1);
    assert_int_equal(match("scatter/17_dog.png", &e), 1);
    assert_int_equal(match("train/1_concat.png", &e), 2);
    /* The folder and a token naming the same label count once. */
    assert_int_equal(match("cat/3_cat.png", &e), 0);
    /* Only the parent folder counts, not the folders above it. */
    assert_int_equal(match("cat/x/4_dog.png", &e), 1);
    /* The extension is no token; "." and ".." are no folder names. */
    assert_int_equal(match("x/5_dog.cat", &e), 1);
    assert_int_equal(match("./6_dog.png", &e), 1);
    assert_int_equal(match("dog/../7.png", &e), -1);
    assert_int_equal(match("a//dog//8.png", &e), 1);
}

void label_rule_errors_and_traps(void **state)
{
    (void)state;
    trn_err e;
    /* Several labels: an error naming where, the file and the candidates. */
    assert_int_equal(match("train/1_cat_dog.png", &e), -1);
    assert_err_has(e, "list.txt:7");
    assert_err_has(e, "train/1_cat_dog.png");
    assert_err_has(e, "2 labels match");
    assert_err_has(e, "'cat' (name token)");
    assert_err_has(e, "'dog' (name token)");
    assert_int_equal(match("dog/1_cat.png", &e), -1);
    assert_err_has(e, "'dog' (parent folder)");
    assert_err_has(e, "'cat' (name token)");
    /* None: names what was checked. */
    assert_int_equal(match("train/000001_catdog.png", &e), -1);
    assert_err_has(e, "no label matches");
    assert_err_has(e, "train/000001_catdog.png");
    assert_err_has(e, "parent folder 'train'");
    assert_int_equal(match("bird/1_prey.png", &e), -1);
    assert_err_has(e, "no label matches");
    /* Case matters; a label never matches inside a token. */
    assert_int_equal(match("Cat/1.png", &e), -1);
    assert_int_equal(match("x/1_bobcat.png", &e), -1);
}

/* A small data set with images named by the rule (no image is opened by
 * trn_dataset_open, so the list entries need not exist). */
static void write_set(const char *dir)
{
    fx_write_text(fx_path("%s/labels.txt", dir), "red\ngreen\nblue\n\n");
    fx_write_text(fx_path("%s/names.txt", dir), "Red things\nGreen things\nBlue things\n");
    fx_write_text(fx_path("%s/train.list", dir),
                  "img/train/0001_red.png\r\n"
                  "\n"
                  "img/green/0002.png\n"
                  "  img/train/0003_blue_small.png  \n");
    fx_write_text(fx_path("%s/sub/valid.list", dir), "img/valid/0004_blue.png\n");
}

void dataset_parses_data_file(void **state)
{
    (void)state;
    write_set("ds1");
    char text[2048];
    snprintf(text, sizeof text,
             "# a Darknet classifier .data file\n"
             "classes = 3\n"
             "train  = train.list\n"
             "valid=%s\n"
             "labels = labels.txt\n"
             "names = names.txt\n"
             "backup = backup/\n"
             "top=2\n"
             "tree = unknown keys are ignored\n"
             "eval = imagenet\n",
             fx_path("ds1/sub/valid.list"));
    const char *dpath = fx_path("ds1/set.data");
    fx_write_text(dpath, text);
    trn_err e;
    trn_dataset *ds = trn_dataset_open(dpath, &e);
    if (!ds) print_error("%s\n", e.msg);
    assert_non_null(ds);
    assert_int_equal(trn_dataset_classes(ds), 3);
    assert_int_equal(trn_dataset_top(ds), 2);
    assert_string_equal(trn_dataset_label(ds, 2), "blue");
    assert_string_equal(trn_dataset_name(ds, 1), "Green things");
    assert_null(trn_dataset_label(ds, 3));
    assert_string_equal(trn_dataset_backup(ds), fx_path("ds1/backup/"));
    assert_true(trn_dataset_has(ds, TRN_SPLIT_TRAIN));
    assert_true(trn_dataset_has(ds, TRN_SPLIT_VALID));
    assert_false(trn_dataset_has(ds, TRN_SPLIT_TEST));
    assert_int_equal(trn_dataset_count(ds, TRN_SPLIT_TRAIN), 3);
    assert_int_equal(trn_dataset_count(ds, TRN_SPLIT_TEST), 0);
    /* Relative entries resolve against the .data folder, even in a list
     * that lives in another folder; absolute ones stay. */
    assert_string_equal(trn_dataset_path(ds, TRN_SPLIT_TRAIN, 0), fx_path("ds1/img/train/0001_red.png"));
    assert_string_equal(trn_dataset_path(ds, TRN_SPLIT_TRAIN, 2), fx_path("ds1/img/train/0003_blue_small.png"));
    assert_string_equal(trn_dataset_path(ds, TRN_SPLIT_VALID, 0), fx_path("ds1/img/valid/0004_blue.png"));
    assert_int_equal(trn_dataset_class(ds, TRN_SPLIT_TRAIN, 0), 0);
    assert_int_equal(trn_dataset_class(ds, TRN_SPLIT_TRAIN, 1), 1);
    assert_int_equal(trn_dataset_class(ds, TRN_SPLIT_TRAIN, 2), 2);
    assert_int_equal(trn_dataset_class(ds, TRN_SPLIT_VALID, 0), 2);
    assert_int_equal(trn_dataset_class(ds, TRN_SPLIT_VALID, 5), -1);
    assert_null(trn_dataset_path(ds, TRN_SPLIT_TEST, 0));
    trn_dataset_close(ds);
    assert_string_equal(trn_split_name(TRN_SPLIT_TEST), "test");
    assert_int_equal(trn_split_parse("valid"), TRN_SPLIT_VALID);
    assert_int_equal(trn_split_parse("training"), -1);

    /* names alone serve as labels too. */
    dpath = fx_path("ds1/names-only.data");
    fx_write_text(dpath, "classes=3\nnames=labels.txt\ntest=train.list\n");
    ds = trn_dataset_open(dpath, &e);
    assert_non_null(ds);
    assert_string_equal(trn_dataset_name(ds, 0), "red");
    assert_int_equal(trn_dataset_count(ds, TRN_SPLIT_TEST), 3);
    trn_dataset_close(ds);
}

/* Writes `text` as ds2/<name>.data, opens it, and expects an error that
 * contains each of the NULL-terminated needles. */
static void expect_error(const char *name, const char *text, ...)
{
    const char *dpath = fx_path("ds2/%s.data", name);
    fx_write_text(dpath, text);
    trn_err e;
    trn_dataset *ds = trn_dataset_open(dpath, &e);
    if (ds) {
        print_error("%s: opened, expected an error\n", name);
        trn_dataset_close(ds);
        fail();
    }
    va_list ap;
    va_start(ap, text);
    for (const char *n; (n = va_arg(ap, const char *));) {
        char want[1200];
        if (n[0] == '@') snprintf(want, sizeof want, "%s%s", fx_path("ds2/"), n + 1);
        else snprintf(want, sizeof want, "%s", n);
        assert_err_has(e, want);
    }
    va_end(ap);
}

void dataset_errors_name_file_line(void **state)
{
    (void)state;
    fx_write_text(fx_path("ds2/labels.txt"), "red\ngreen\nblue\n");
    fx_write_text(fx_path("ds2/ok.list"), "a/1_red.png\n");
    fx_write_text(fx_path("ds2/bad.list"), "a/1_red.png\na/2_green.png\na/3_teal.png\n");
    fx_write_text(fx_path("ds2/multi.list"), "red/1_green.png\n");
    fx_write_text(fx_path("ds2/blank.labels"), "red\n\ngreen\nblue\n");
    fx_write_text(fx_path("ds2/dup.labels"), "red\ngreen\nred\n");
    fx_write_text(fx_path("ds2/slash.labels"), "red\ngr/een\nblue\n");
    fx_write_text(fx_path("ds2/two.labels"), "red\ngreen\n");
    fx_write_text(fx_path("ds2/empty.list"), "\n\n");
    fx_write_bytes(fx_path("ds2/nul.list"), "a/1_red.png\n\0b\n", 15);

    expect_error("noeq", "classes=3\nlabels=labels.txt\ntrain ok.list\n",
                 "@noeq.data:3", "expected 'key = value'", NULL);
    expect_error("twice", "classes=3\nlabels=labels.txt\ntrain=ok.list\n\ntrain=ok.list\n",
                 "@twice.data:5", "'train' given twice (first on line 3)", NULL);
    expect_error("classes", "labels=labels.txt\nclasses=three\n", "@classes.data:2",
                 "classes=three", NULL);
    expect_error("noclasses", "labels=labels.txt\n", "@noclasses.data", "missing key 'classes'",
                 NULL);
    expect_error("count", "classes=4\nlabels=labels.txt\n", "@count.data:1", "classes=4",
                 "3 labels", NULL);
    expect_error("nolabels", "classes=3\ntrain=ok.list\n", "@nolabels.data",
                 "'labels' or 'names'", NULL);
    expect_error("top", "classes=3\nlabels=labels.txt\ntop=4\n", "@top.data:3", "top=4", NULL);
    expect_error("novalue", "classes=3\nlabels=\n", "@novalue.data:2", "no value", NULL);
    expect_error("nokey", "classes=3\n = x\n", "@nokey.data:2", "without a key", NULL);
    expect_error("nolist", "classes=3\nlabels=labels.txt\nvalid=missing.list\n",
                 "@nolist.data:3: list file", "@missing.list", "cannot open", NULL);
    expect_error("badlabel", "classes=3\nlabels=labels.txt\ntrain=bad.list\n",
                 "@bad.list:3", "a/3_teal.png", "no label matches", NULL);
    expect_error("multilabel", "classes=3\nlabels=labels.txt\ntest=multi.list\n",
                 "@multi.list:1", "'red' (parent folder)", "'green' (name token)", NULL);
    expect_error("blank", "classes=3\nlabels=blank.labels\n", "@blank.labels:2", "blank line",
                 NULL);
    expect_error("dup", "classes=3\nlabels=dup.labels\n", "@dup.labels:3",
                 "already on line 1", NULL);
    expect_error("slash", "classes=3\nlabels=slash.labels\n", "@slash.labels:2", "'/'", NULL);
    expect_error("names", "classes=3\nlabels=labels.txt\nnames=two.labels\n", "@two.labels",
                 "2 names", NULL);
    expect_error("emptylist", "classes=3\nlabels=labels.txt\ntrain=empty.list\n",
                 "@empty.list", "no image paths", NULL);
    expect_error("nullist", "classes=3\nlabels=labels.txt\ntrain=nul.list\n", "@nul.list:2",
                 "NUL byte", NULL);
    trn_err e;
    assert_null(trn_dataset_open(fx_path("ds2/absent.data"), &e));
    assert_err_has(e, "absent.data");
}
