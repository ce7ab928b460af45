/* Unit tests of the cfg object model: Darknet's reading rules, file:line
 * for every key, strict errors, editing, formatting and atomic writes. */
#include "testutil_impl.h"
#include "testlib_trn.h"

static const char *sample =
    "# a network\n"
    "[net]\n"
    "batch = 64\n"
    "\tsubdivisions=2\r\n"
    "; another comment\n"
    "steps=100, 200\n"
    "\n"
    "[conv]\n"
    "filters=16\n"
    "# the activation\n"
    "activation=leaky\n"
    "[maxpool]\n"
    "size=2\n";

static trn_cfg *parse(const char *text, trn_err *e)
{
    return trn_cfg_parse(text, strlen(text), "s.cfg", e);
}

static void reads_like_darknet(void **state)
{
    (void)state;
    trn_err e;
    trn_cfg *c = parse(sample, &e);
    assert_non_null(c);
    assert_int_equal(trn_cfg_sections(c), 3);
    assert_string_equal(trn_cfg_section_type(c, 0), "net");
    assert_string_equal(trn_cfg_section_type(c, 1), "conv");
    assert_int_equal(trn_cfg_section_line(c, 1), 8);
    assert_int_equal(trn_cfg_keys(c, 0), 3);
    /* Blanks are removed inside the line, as Darknet's strip() does. */
    assert_string_equal(trn_cfg_get(c, 0, "batch"), "64");
    assert_string_equal(trn_cfg_get(c, 0, "subdivisions"), "2");
    assert_string_equal(trn_cfg_get(c, 0, "steps"), "100,200");
    assert_int_equal(trn_cfg_key_line(c, 0, 1), 4);
    assert_int_equal(trn_cfg_key_line(c, 1, 1), 11);
    assert_null(trn_cfg_get(c, 0, "nothere"));
    assert_null(trn_cfg_get(c, 9, "batch"));
    char where[256];
    assert_string_equal(trn_cfg_where(c, 1, "activation", where, sizeof where), "s.cfg:11");
    assert_string_equal(trn_cfg_where(c, 2, NULL, where, sizeof where), "s.cfg:12");
    assert_int_equal(trn_cfg_find_section(c, "maxpool", 0), 2);
    assert_int_equal(trn_cfg_find_section(c, "maxpool", 3), -1);
    trn_cfg_free(c);
}

/* Each bad text fails with a message naming the line and the problem. */
static void rejects_bad_text(void **state)
{
    (void)state;
    struct { const char *text, *expect; } bad[] = {
        {"batch=1\n[net]\n", "s.cfg:1: 'batch=1' comes before the first [section]"},
        {"[net]\nbatch\n", "s.cfg:2: 'batch' is not key=value"},
        {"[net]\nbatch=\n", "s.cfg:2: empty value"},
        {"[net]\n=4\n", "s.cfg:2: empty key"},
        {"[net]\nbatch=1\nbatch=2\n", "s.cfg:3: key 'batch' is given twice in [net] (first at line 2)"},
        {"[net\n", "s.cfg:1: malformed section header"},
        {"[n et]]\n", "s.cfg:1: malformed section header"},
        {"[]\n", "s.cfg:1: malformed section header"},
        {"[net]\nbatch=\x01\n", "s.cfg:2: invalid character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        trn_err e;
        e.msg[0] = 0;
        assert_null(parse(bad[i].text, &e));
        if (!strstr(e.msg, bad[i].expect)) fail_msg("'%s' gave '%s'", bad[i].expect, e.msg);
    }
    trn_err e;
    char nul[] = "[net]\nbatch=1\0x\n";
    assert_null(trn_cfg_parse(nul, sizeof nul - 1, "s.cfg", &e));
    assert_non_null(strstr(e.msg, "s.cfg:2: the line contains a NUL byte"));
    assert_null(trn_cfg_read("/nonexistent.cfg", &e));
    assert_non_null(strstr(e.msg, "cannot open /nonexistent.cfg"));
}

static void edits_and_formats(void **state)
{
    (void)state;
    trn_err e;
    trn_cfg *c = parse(sample, &e);
    assert_non_null(c);
    assert_int_equal(trn_cfg_set(c, 1, "filters", "32", &e), 0);     /* replace: line kept */
    assert_int_equal(trn_cfg_key_line(c, 1, 0), 9);
    assert_int_equal(trn_cfg_setf(c, 1, "size", &e, "%d", 3), 0);    /* append */
    assert_int_equal(trn_cfg_key_line(c, 1, 2), 0);
    char where[256];
    assert_string_equal(trn_cfg_where(c, 1, "size", where, sizeof where), "s.cfg (set by program)");
    assert_int_equal(trn_cfg_set(c, 1, " pad ", " 1 ", &e), 0);      /* blanks removed */
    assert_string_equal(trn_cfg_get(c, 1, "pad"), "1");
    assert_int_equal(trn_cfg_set(c, 1, "a=b", "1", &e), -1);
    assert_int_equal(trn_cfg_set(c, 1, "k", "", &e), -1);
    assert_int_equal(trn_cfg_set(c, 1, "k", "x\ny", &e), -1);
    assert_int_equal(trn_cfg_set(c, 7, "k", "1", &e), -1);
    assert_int_equal(trn_cfg_unset(c, 1, "activation"), 1);
    assert_int_equal(trn_cfg_unset(c, 1, "activation"), 0);
    assert_int_equal(trn_cfg_insert_section(c, 2, "dropout", &e), 2);
    assert_int_equal(trn_cfg_set(c, 2, "probability", ".5", &e), 0);
    assert_int_equal(trn_cfg_insert_section(c, trn_cfg_sections(c), "softmax", &e), 4);
    assert_int_equal(trn_cfg_insert_section(c, 9, "x", &e), -1);
    assert_int_equal(trn_cfg_insert_section(c, 0, "bad type", &e), -1);
    assert_int_equal(trn_cfg_remove_section(c, 3, &e), 0); /* the maxpool */
    assert_int_equal(trn_cfg_remove_section(c, 3 + 5, &e), -1);
    size_t len;
    char *text = trn_cfg_format(c, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    /* Comments survive; the text parses back to the same structure. */
    assert_non_null(strstr(text, "# a network\n[net]\n"));
    assert_non_null(strstr(text, "; another comment\nsteps=100,200\n"));
    trn_cfg *d = parse(text, &e);
    assert_non_null(d);
    assert_int_equal(trn_cfg_sections(d), trn_cfg_sections(c));
    for (int s = 0; s < trn_cfg_sections(c); s++) {
        assert_string_equal(trn_cfg_section_type(d, s), trn_cfg_section_type(c, s));
        assert_int_equal(trn_cfg_keys(d, s), trn_cfg_keys(c, s));
        for (int k = 0; k < trn_cfg_keys(c, s); k++) {
            assert_string_equal(trn_cfg_key(d, s, k), trn_cfg_key(c, s, k));
            assert_string_equal(trn_cfg_value(d, s, k), trn_cfg_value(c, s, k));
        }
    }
    /* A clone is independent. */
    trn_cfg *k = trn_cfg_clone(c, &e);
    assert_int_equal(trn_cfg_set(k, 0, "batch", "1", &e), 0);
    assert_string_equal(trn_cfg_get(c, 0, "batch"), "64");
    char *t2 = trn_cfg_format(k, NULL);
    assert_non_null(strstr(t2, "batch=1\n"));
    free(t2);
    /* Written atomically, read back equal. */
    const char *path = tl_path("w.cfg");
    assert_int_equal(trn_cfg_write(c, path, &e), 0);
    size_t flen;
    char *back = tl_read(path, &flen);
    assert_int_equal(flen, len);
    assert_memory_equal(back, text, len);
    assert_int_equal(trn_cfg_write(c, "/nonexistent/dir/w.cfg", &e), -1);
    free(back);
    free(text);
    trn_cfg_free(k);
    trn_cfg_free(d);
    trn_cfg_free(c);
}

/* Every cfg Darknet ships parses, and formatting keeps every key. */
static void reads_darknet_cfgs(void **state)
{
    (void)state;
    const char *names[] = {"alexnet", "cifar", "tiny", "darknet", "vgg-16", "resnet18",
                           "darknet19", "extraction", "yolov3"};
    int read = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[256];
        snprintf(path, sizeof path, "/usr/share/darknet/cfg/%s.cfg", names[i]);
        if (!tl_exists(path)) continue;
        trn_err e;
        trn_cfg *c = trn_cfg_read(path, &e);
        if (!c) fail_msg("%s", e.msg);
        char *text = trn_cfg_format(c, NULL);
        trn_cfg *d = parse(text, &e);
        assert_non_null(d);
        int keys = 0;
        for (int s = 0; s < trn_cfg_sections(c); s++) keys += trn_cfg_keys(c, s);
        int keys2 = 0;
        for (int s = 0; s < trn_cfg_sections(d); s++) keys2 += trn_cfg_keys(d, s);
        assert_int_equal(keys, keys2);
        free(text);
        trn_cfg_free(c);
        trn_cfg_free(d);
        read++;
    }
    if (!read) TEST_SKIP("the darknet package's cfgs are not installed");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_like_darknet),
        cmocka_unit_test(rejects_bad_text),
        cmocka_unit_test(edits_and_formats),
        cmocka_unit_test(reads_darknet_cfgs),
    };
    int rc = cmocka_run_group_tests_name("trn_cfg", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
