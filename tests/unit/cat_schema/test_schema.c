/* Unit tests of the JSON Schema validator (catalog/src/schema.c): every
 * keyword accepts what it should and rejects what it should, broken schemas
 * are refused, and the built-in manifest schema rejects the mistakes it
 * exists to catch. */
#include "testutil_impl.h"
#include "cat.h"

#include <stdlib.h>
#include <string.h>

struct seen {
    int n;
    char last_ptr[256];
    char last_msg[512];
};

static void record(void *user, const char *ptr, const char *msg)
{
    struct seen *s = user;
    s->n++;
    snprintf(s->last_ptr, sizeof s->last_ptr, "%s", ptr);
    snprintf(s->last_msg, sizeof s->last_msg, "%s", msg);
}

/* Number of violations of instance against a one-document schema. */
static int violations(const char *schema, const char *instance, struct seen *seen)
{
    cat_schema *s = cat_schema_new();
    trn_err e;
    assert_int_equal(cat_schema_add(s, "t.json", schema, strlen(schema), &e), 0);
    cJSON *inst = cJSON_Parse(instance);
    if (!inst) fail_msg("test instance is not JSON: %s", instance);
    struct seen local = {0};
    int n = cat_schema_validate(s, "t.json", inst, record, seen ? seen : &local, &e);
    if (n < 0) fail_msg("schema refused: %s (%s)", e.msg, schema);
    assert_int_equal(n, (seen ? seen : &local)->n);
    cJSON_Delete(inst);
    cat_schema_free(s);
    return n;
}

static void keywords(void **state)
{
    (void)state;
    static const struct {
        const char *schema, *ok, *bad;
    } cases[] = {
        {"{\"type\":\"string\"}", "\"x\"", "1"},
        {"{\"type\":\"integer\"}", "3", "3.5"},
        {"{\"type\":\"number\"}", "3.5", "\"3\""},
        {"{\"type\":[\"integer\",\"null\"]}", "null", "true"},
        {"{\"type\":\"array\"}", "[]", "{}"},
        {"{\"type\":\"object\"}", "{}", "[]"},
        {"{\"type\":\"boolean\"}", "false", "0"},
        {"{\"enum\":[1,\"a\",null]}", "\"a\"", "\"b\""},
        {"{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,2]}", "{\"a\":[2,1]}"},
        {"{\"required\":[\"a\",\"b\"]}", "{\"a\":1,\"b\":2}", "{\"a\":1}"},
        {"{\"properties\":{\"a\":{\"type\":\"string\"}}}", "{\"a\":\"x\",\"b\":1}", "{\"a\":1}"},
        {"{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"a\":1}", "{\"a\":1,\"b\":2}"},
        {"{\"additionalProperties\":{\"type\":\"integer\"}}", "{\"x\":1}", "{\"x\":\"1\"}"},
        {"{\"propertyNames\":{\"pattern\":\"^[a-z]+$\"}}", "{\"ab\":1}", "{\"aB\":1}"},
        {"{\"minProperties\":1,\"maxProperties\":2}", "{\"a\":1}", "{}"},
        {"{\"minProperties\":1,\"maxProperties\":2}", "{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":2,\"c\":3}"},
        {"{\"items\":{\"type\":\"integer\"}}", "[1,2]", "[1,\"2\"]"},
        {"{\"minItems\":2,\"maxItems\":3}", "[1,2]", "[1]"},
        {"{\"minItems\":2,\"maxItems\":3}", "[1,2,3]", "[1,2,3,4]"},
        {"{\"uniqueItems\":true}", "[1,{\"a\":1},{\"a\":2}]", "[{\"a\":1},{\"a\":1}]"},
        {"{\"minimum\":1,\"maximum\":2}", "1", "0.5"},
        {"{\"minimum\":1,\"maximum\":2}", "2", "2.5"},
        {"{\"exclusiveMinimum\":0}", "0.1", "0"},
        {"{\"exclusiveMaximum\":1}", "0.9", "1"},
        {"{\"minLength\":2,\"maxLength\":3}", "\"ab\"", "\"a\""},
        {"{\"maxLength\":3}", "\"\xc3\xa9\xc3\xa9\xc3\xa9\"", "\"abcd\""}, /* three code points, six bytes */
        {"{\"pattern\":\"^[0-9a-f]{4}$\"}", "\"00af\"", "\"00AF\""},
        {"{\"$defs\":{\"d\":{\"type\":\"integer\"}},\"$ref\":\"#/$defs/d\"}", "1", "\"1\""},
        {"{\"allOf\":[{\"minimum\":1},{\"maximum\":3}]}", "2", "4"},
        {"{\"anyOf\":[{\"type\":\"string\"},{\"minimum\":5}]}", "7", "3"},
        {"{\"oneOf\":[{\"minimum\":1},{\"maximum\":3}]}", "5", "2"},
        {"{\"not\":{\"type\":\"null\"}}", "0", "null"},
        {"{\"if\":{\"properties\":{\"k\":{\"const\":\"a\"}}},\"then\":{\"required\":[\"x\"]},"
         "\"else\":{\"required\":[\"y\"]}}", "{\"k\":\"a\",\"x\":1}", "{\"k\":\"a\",\"y\":1}"},
        {"{\"if\":{\"properties\":{\"k\":{\"const\":\"a\"}}},\"then\":{\"required\":[\"x\"]},"
         "\"else\":{\"required\":[\"y\"]}}", "{\"k\":\"b\",\"y\":1}", "{\"k\":\"b\",\"x\":1}"},
        {"{\"properties\":{\"a\":false}}", "{}", "{\"a\":1}"},
        {"{\"title\":\"t\",\"description\":\"d\",\"$comment\":\"c\",\"default\":1,\"type\":\"integer\"}", "1", "\"x\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (violations(cases[i].schema, cases[i].ok, NULL) != 0)
            fail_msg("case %zu: %s rejected %s", i, cases[i].schema, cases[i].ok);
        if (violations(cases[i].schema, cases[i].bad, NULL) == 0)
            fail_msg("case %zu: %s accepted %s", i, cases[i].schema, cases[i].bad);
    }
    /* keywords of other types let a value through */
    assert_int_equal(violations("{\"minLength\":5,\"minimum\":3,\"required\":[\"a\"],\"minItems\":2}", "true", NULL), 0);
}

static void pointers_and_messages(void **state)
{
    (void)state;
    struct seen s = {0};
    assert_int_equal(violations("{\"properties\":{\"a/b\":{\"items\":{\"properties\":{\"c\":{\"type\":\"string\"}}}}}}",
                                "{\"a/b\":[{\"c\":\"x\"},{\"c\":2}]}", &s), 1);
    assert_string_equal(s.last_ptr, "/a~1b/1/c");
    assert_non_null(strstr(s.last_msg, "not string"));
    memset(&s, 0, sizeof s);
    assert_int_equal(violations("{\"required\":[\"x\",\"y\"],\"additionalProperties\":false}", "{\"z\":1}", &s), 3);
}

static void broken_schemas_are_refused(void **state)
{
    (void)state;
    static const char *const broken[] = {
        "{\"typo\":1}",                        /* unknown keyword */
        "{\"format\":\"email\"}",              /* a real keyword this validator does not implement */
        "{\"$ref\":\"#/$defs/none\"}",         /* dangling reference */
        "{\"$ref\":\"other.json#/x\"}",        /* unknown document */
        "{\"type\":\"int\"}",                  /* unknown type */
        "{\"pattern\":\"([a-z\"}",             /* not a regular expression */
        "{\"$defs\":{\"l\":{\"$ref\":\"#/$defs/l\"}},\"$ref\":\"#/$defs/l\"}", /* a loop */
        "{\"items\":[{}]}",                    /* tuple items */
        "{\"anyOf\":[]}",
        "{\"minimum\":\"1\"}",
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        cat_schema *s = cat_schema_new();
        trn_err e;
        assert_int_equal(cat_schema_add(s, "t.json", broken[i], strlen(broken[i]), &e), 0);
        cJSON *inst = cJSON_Parse("\"x\"");
        int n = cat_schema_validate(s, "t.json", inst, NULL, NULL, &e);
        if (n != -1) fail_msg("schema %s was used (%d violations) instead of refused", broken[i], n);
        assert_non_null(strstr(e.msg, "broken"));
        cJSON_Delete(inst);
        cat_schema_free(s);
    }
}

static void references_across_documents(void **state)
{
    (void)state;
    cat_schema *s = cat_schema_new();
    trn_err e;
    const char *a = "{\"$defs\":{\"id\":{\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}}}";
    const char *b = "{\"properties\":{\"x\":{\"$ref\":\"a.json#/$defs/id\"}}}";
    assert_int_equal(cat_schema_add(s, "a.json", a, strlen(a), &e), 0);
    assert_int_equal(cat_schema_add(s, "b.json", b, strlen(b), &e), 0);
    cJSON *ok = cJSON_Parse("{\"x\":\"abc\"}"), *bad = cJSON_Parse("{\"x\":\"ABC\"}");
    assert_int_equal(cat_schema_validate(s, "b.json", ok, NULL, NULL, &e), 0);
    assert_int_equal(cat_schema_validate(s, "b.json", bad, NULL, NULL, &e), 1);
    cJSON_Delete(ok);
    cJSON_Delete(bad);
    cat_schema_free(s);
}

/* A minimal valid manifest, built here as the fixture for the mutations. */
static const char manifest[] =
    "{\"schema\":1,\"catalog\":\"c\",\"model\":\"m\",\"version\":3,"
    "\"build\":{\"toolchain\":\"catalog 0\",\"compiler\":\"cc\",\"seed\":null,\"source_date_epoch\":5},"
    "\"tasks\":{\"identity\":{\"classes\":6,\"labels\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]}},"
    "\"targets\":{\"dev\":{\"name\":\"d\",\"peak_gflops\":1,\"memory_bandwidth_gbps\":1,\"power_w\":1,"
    "\"power_mode\":\"p\",\"precision\":\"fp32\",\"sources\":[\"s\"]}},"
    "\"variants\":[{\"id\":\"base\",\"technique\":\"base\",\"parent\":null,\"depends_on\":[],\"description\":\"\","
    "\"task\":\"identity\",\"files\":[{\"role\":\"cfg\",\"path\":\"variants/base/variant.cfg\",\"size\":1,"
    "\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\"}],"
    "\"accuracy\":{\"identity\":{\"split\":\"test\",\"images\":10,\"top1\":0.5,\"top5\":0.9}},"
    "\"cost\":{\"macs\":1,\"params\":1,\"weight_bytes\":4,\"peak_activation_bytes\":4,\"layers\":[]},"
    "\"latency\":{\"host\":{\"source\":\"measured\",\"machine\":\"h\",\"threads\":1,\"batch\":1,\"runs\":1,"
    "\"ms_median\":1,\"ms_mean\":1}},"
    "\"estimates\":{\"dev\":{\"source\":\"estimate\",\"method\":\"roofline-1\",\"ms\":1,\"mj\":1,\"bound\":\"memory\","
    "\"gflop\":0,\"mbytes\":0}},\"technique_fields\":{}}],\"winnowed\":[]}";

static void manifest_schema_catches_mistakes(void **state)
{
    (void)state;
    trn_err e;
    cat_schema *s = cat_schema_builtin(&e);
    assert_non_null(s);
    cJSON *m = cJSON_Parse(manifest);
    assert_non_null(m);
    struct seen seen = {0};
    assert_int_equal(cat_validate(s, m, NULL, record, &seen, &e), 0);
    cJSON_Delete(m);
    static const struct {
        const char *from, *to;
    } edits[] = {
        {"\"version\":3", "\"version\":0"},
        {"\"version\":3", "\"version\":\"3\""},
        {"\"catalog\":\"c\"", "\"catalog\":\"C\""},
        {"\"catalog\":\"c\",", ""},
        {"\"schema\":1", "\"schema\":2"},
        {"\"technique\":\"base\"", "\"technique\":\"magic\""},
        {"\"parent\":null", "\"parent\":\"x\""},                 /* base with a parent */
        {"\"technique\":\"base\",\"parent\":null", "\"technique\":\"nested\",\"parent\":null"}, /* no capacities */
        {"000000000000000000000000000000000000000000000000000000000000000\"", "0\""},
        {"variants/base/variant.cfg", "variants/base/../x"},
        {"variants/base/variant.cfg", "elsewhere/variant.cfg"},
        {"\"top1\":0.5", "\"top1\":1.5"},
        {"\"source\":\"measured\"", "\"source\":\"estimate\""},  /* measured and estimated never mix */
        {"\"source\":\"estimate\"", "\"source\":\"measured\""},
        {"\"bound\":\"memory\"", "\"bound\":\"io\""},
        {"\"labels\":[\"a\",\"b\"", "\"labels\":[\"a\",\"a\""},
        {"\"winnowed\":[]", "\"winnowed\":[],\"extra\":1"},
        {"\"files\":[{", "\"files\":[],\"x\":[{"},
        {"\"top1\":0.5,\"top5\":0.9", "\"top1\":0.5"},            /* 6 classes: top5 required */
        {"\"depends_on\":[]", "\"depends_on\":[\"base\"]"},      /* depends on itself */
        {"\"estimates\":{\"dev\"", "\"estimates\":{\"other\""},  /* estimate for an unknown target */
        {"\"classes\":6", "\"classes\":7"},                       /* labels do not match */
        {"\"power_w\":1", "\"power_w\":0"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char bad[sizeof manifest + 64];
        const char *at = strstr(manifest, edits[i].from);
        if (!at) fail_msg("edit %zu: '%s' not found", i, edits[i].from);
        snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - manifest), manifest, edits[i].to, at + strlen(edits[i].from));
        cJSON *mm = cJSON_Parse(bad);
        if (!mm) fail_msg("edit %zu made invalid JSON", i);
        int n = cat_validate(s, mm, NULL, NULL, NULL, &e);
        if (n <= 0) fail_msg("edit %zu (%s -> %s) was accepted", i, edits[i].from, edits[i].to);
        cJSON_Delete(mm);
    }
    cat_schema_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keywords),
        cmocka_unit_test(pointers_and_messages),
        cmocka_unit_test(broken_schemas_are_refused),
        cmocka_unit_test(references_across_documents),
        cmocka_unit_test(manifest_schema_catches_mistakes),
    };
    int rc = cmocka_run_group_tests_name("cat_schema", tests, NULL, NULL);
    test_tmpdir_cleanup();
    return rc;
}
