/*
 * schema.c: a JSON Schema validator for the subset of draft 2020-12 that the
 * catalog's schemas use (the keyword list is in cat.h). It walks a cJSON
 * instance against a schema, reports each violation with the JSON pointer of
 * the value, and refuses schemas that use any keyword it does not implement
 * (so a schema can never be believed to check what it does not).
 *
 * Semantics kept from the specification: properties/required/
 * additionalProperties apply to objects only, items/minItems/... to arrays
 * only, minimum/... to numbers only, minLength/pattern to strings only (other
 * types pass those keywords); "integer" is a number with no fractional part;
 * lengths count Unicode code points; enum/const/uniqueItems compare JSON
 * values structurally; boolean schemas (true/false) are allowed. Patterns are
 * POSIX extended regular expressions, not ECMA-262: the catalog's schemas use
 * only the common subset (anchors, classes, braces, groups, alternation).
 */
#include "cat.h"

#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 100

struct doc {
    char *name;
    cJSON *root;
};

struct re_entry {
    char *src;
    regex_t re;
};

struct cat_schema {
    struct doc *docs;
    size_t ndocs;
    struct re_entry *res;
    size_t nres;
};

struct ctx {
    cat_schema *s;
    cat_report_fn report;   /* NULL: silent (inside anyOf, oneOf, not, if) */
    void *user;
    int count;
    int broken;
    trn_err *err;
    char ptr[2048];
    size_t plen;
    int depth;
};

cat_schema *cat_schema_new(void)
{
    return calloc(1, sizeof(cat_schema));
}

void cat_schema_free(cat_schema *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->ndocs; i++) {
        free(s->docs[i].name);
        cJSON_Delete(s->docs[i].root);
    }
    for (size_t i = 0; i < s->nres; i++) {
        free(s->res[i].src);
        regfree(&s->res[i].re);
    }
    free(s->docs);
    free(s->res);
    free(s);
}

int cat_schema_add(cat_schema *s, const char *name, const char *text, size_t len, trn_err *err)
{
    size_t off = 0;
    cJSON *root = cat_json_parse(text, len, &off);
    if (!root) return trn_errf(err, "schema %s: JSON syntax error at byte offset %zu", name, off);
    struct doc *grown = realloc(s->docs, (s->ndocs + 1) * sizeof *grown);
    if (!grown || !(grown[s->ndocs].name = strdup(name))) {
        if (grown) s->docs = grown;
        cJSON_Delete(root);
        return trn_errf(err, "out of memory");
    }
    s->docs = grown;
    s->docs[s->ndocs++].root = root;
    return 0;
}

cat_schema *cat_schema_builtin(trn_err *err)
{
    cat_schema *s = cat_schema_new();
    if (!s) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    static const char *const names[] = {"manifest.schema.json", "variant.schema.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const struct cat_embedded *e = cat_embedded_find(names[i]);
        if (!e || cat_schema_add(s, names[i], e->data, e->len, err) != 0) {
            if (!e) trn_errf(err, "internal error: %s is not compiled in", names[i]);
            cat_schema_free(s);
            return NULL;
        }
    }
    return s;
}

static const struct doc *find_doc(const cat_schema *s, const char *name, size_t len)
{
    for (size_t i = 0; i < s->ndocs; i++)
        if (strlen(s->docs[i].name) == len && strncmp(s->docs[i].name, name, len) == 0) return &s->docs[i];
    return NULL;
}

static void violation(struct ctx *c, const char *fmt, ...) TRN_PRINTF(2, 3);
static void violation(struct ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cat_vreportf(c->report, c->user, &c->count, c->plen ? c->ptr : "/", fmt, ap);
    va_end(ap);
}

static void broken(struct ctx *c, const char *fmt, ...) TRN_PRINTF(2, 3);
static void broken(struct ctx *c, const char *fmt, ...)
{
    if (c->broken++) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    trn_errf(c->err, "the schema is broken: %s", msg);
}

/* Appends "/token" (escaped) to the instance pointer; returns the old length. */
static size_t push(struct ctx *c, const char *token)
{
    size_t old = c->plen;
    if (c->plen + 1 < sizeof c->ptr) c->ptr[c->plen++] = '/';
    for (const char *p = token; *p && c->plen + 2 < sizeof c->ptr; p++) {
        if (*p == '~' || *p == '/') {
            c->ptr[c->plen++] = '~';
            c->ptr[c->plen++] = *p == '~' ? '0' : '1';
        } else {
            c->ptr[c->plen++] = *p;
        }
    }
    c->ptr[c->plen] = '\0';
    return old;
}

static void pop(struct ctx *c, size_t old)
{
    c->plen = old;
    c->ptr[old] = '\0';
}

static void check(struct ctx *c, const struct doc *d, const cJSON *schema, const cJSON *inst);

/* Runs a subschema silently; 1 when inst is valid against it. */
static int passes(struct ctx *c, const struct doc *d, const cJSON *schema, const cJSON *inst)
{
    struct ctx sub = *c;
    sub.report = NULL;
    sub.count = 0;
    check(&sub, d, schema, inst);
    if (sub.broken && !c->broken) {
        c->broken = sub.broken;
    }
    return sub.count == 0;
}

static const char *type_name(const cJSON *v)
{
    if (cJSON_IsNull(v)) return "null";
    if (cJSON_IsBool(v)) return "boolean";
    if (cJSON_IsNumber(v)) return "number";
    if (cJSON_IsString(v)) return "string";
    if (cJSON_IsArray(v)) return "array";
    if (cJSON_IsObject(v)) return "object";
    return "invalid";
}

static int is_integer(const cJSON *v)
{
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && floor(v->valuedouble) == v->valuedouble;
}

static int has_type(const cJSON *v, const char *t)
{
    if (!strcmp(t, "integer")) return is_integer(v);
    return !strcmp(t, type_name(v));
}

static int known_type(const char *t)
{
    static const char *const types[] = {"null", "boolean", "object", "array", "number", "string", "integer"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(t, types[i])) return 1;
    return 0;
}

static size_t utf8_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

/* A short rendering of a JSON value for messages. */
static void brief(const cJSON *v, char *out, size_t size)
{
    char *t = cJSON_PrintUnformatted(v);
    snprintf(out, size, "%s", t ? t : "?");
    if (t && strlen(t) >= size && size > 4) strcpy(out + size - 4, "...");
    free(t);
}

static const regex_t *pattern(struct ctx *c, const char *src)
{
    cat_schema *s = c->s;
    for (size_t i = 0; i < s->nres; i++)
        if (!strcmp(s->res[i].src, src)) return &s->res[i].re;
    struct re_entry *grown = realloc(s->res, (s->nres + 1) * sizeof *grown);
    if (!grown) {
        broken(c, "out of memory");
        return NULL;
    }
    s->res = grown;
    struct re_entry *e = &s->res[s->nres];
    if (regcomp(&e->re, src, REG_EXTENDED | REG_NOSUB) != 0) {
        broken(c, "pattern '%s' is not a POSIX extended regular expression", src);
        return NULL;
    }
    if (!(e->src = strdup(src))) {
        regfree(&e->re);
        broken(c, "out of memory");
        return NULL;
    }
    s->nres++;
    return &e->re;
}

/* Resolves "doc#/json/pointer" or "#/json/pointer". */
static const cJSON *resolve(struct ctx *c, const struct doc *d, const char *ref, const struct doc **out)
{
    const char *hash = strchr(ref, '#');
    if (!hash) {
        broken(c, "$ref '%s' has no '#' fragment", ref);
        return NULL;
    }
    if (hash != ref && !(d = find_doc(c->s, ref, (size_t)(hash - ref)))) {
        broken(c, "$ref '%s' names a document that is not loaded", ref);
        return NULL;
    }
    const cJSON *node = d->root;
    const char *p = hash + 1;
    if (*p && *p != '/') {
        broken(c, "$ref '%s' is not a JSON pointer", ref);
        return NULL;
    }
    while (node && *p == '/') {
        char tok[256];
        size_t n = 0;
        for (p++; *p && *p != '/'; p++) {
            char ch = *p;
            if (ch == '~' && (p[1] == '0' || p[1] == '1')) ch = *++p == '0' ? '~' : '/';
            if (n + 1 < sizeof tok) tok[n++] = ch;
        }
        tok[n] = '\0';
        if (cJSON_IsArray(node)) {
            char *end;
            long i = strtol(tok, &end, 10);
            node = *end || i < 0 ? NULL : cJSON_GetArrayItem(node, (int)i);
        } else {
            node = cJSON_GetObjectItemCaseSensitive(node, tok);
        }
    }
    if (!node) broken(c, "$ref '%s' does not resolve", ref);
    *out = d;
    return node;
}

static double num_kw(struct ctx *c, const cJSON *kw)
{
    if (!cJSON_IsNumber(kw)) broken(c, "'%s' must be a number", kw->string);
    return kw->valuedouble;
}

static void check_object(struct ctx *c, const struct doc *d, const cJSON *schema, const cJSON *inst)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(schema, "propertyNames");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
    if (props && !cJSON_IsObject(props)) broken(c, "'properties' must be an object");
    const cJSON *r;
    cJSON_ArrayForEach(r, req) {
        if (!cJSON_IsString(r)) broken(c, "'required' must list strings");
        else if (!cJSON_GetObjectItemCaseSensitive(inst, r->valuestring))
            violation(c, "required property '%s' is missing", r->valuestring);
    }
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, inst) {
        n++;
        size_t old = push(c, m->string);
        const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
        if (ps) {
            check(c, d, ps, m);
        } else if (addl) {
            if (cJSON_IsFalse(addl)) violation(c, "property '%s' is not allowed here", m->string);
            else check(c, d, addl, m);
        }
        if (names) {
            cJSON *key = cJSON_CreateString(m->string);
            if (key && !passes(c, d, names, key)) violation(c, "the property name '%s' is not allowed", m->string);
            cJSON_Delete(key);
        }
        pop(c, old);
    }
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minProperties");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maxProperties");
    if (mn && n < num_kw(c, mn)) violation(c, "has %d properties, fewer than %g", n, mn->valuedouble);
    if (mx && n > num_kw(c, mx)) violation(c, "has %d properties, more than %g", n, mx->valuedouble);
}

static void check_array(struct ctx *c, const struct doc *d, const cJSON *schema, const cJSON *inst)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(schema, "minItems");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(schema, "maxItems");
    const cJSON *uniq = cJSON_GetObjectItemCaseSensitive(schema, "uniqueItems");
    int n = cJSON_GetArraySize(inst);
    if (mn && n < num_kw(c, mn)) violation(c, "has %d items, fewer than %g", n, mn->valuedouble);
    if (mx && n > num_kw(c, mx)) violation(c, "has %d items, more than %g", n, mx->valuedouble);
    if (items && cJSON_IsArray(items)) broken(c, "'items' as an array (tuples) is not supported: use prefixItems");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, inst) {
        char idx[24];
        snprintf(idx, sizeof idx, "%d", i);
        size_t old = push(c, idx);
        if (items) check(c, d, items, e);
        if (cJSON_IsTrue(uniq)) {
            int j = 0;
            for (const cJSON *f = inst->child; f != e; f = f->next, j++)
                if (cJSON_Compare(e, f, 1)) {
                    violation(c, "repeats item %d (items must be unique)", j);
                    break;
                }
        }
        pop(c, old);
        i++;
    }
}

static void check_number(struct ctx *c, const cJSON *schema, const cJSON *inst)
{
    double v = inst->valuedouble;
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(schema, "minimum")) && v < num_kw(c, k))
        violation(c, "%g is less than the minimum %g", v, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(schema, "maximum")) && v > num_kw(c, k))
        violation(c, "%g is more than the maximum %g", v, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(schema, "exclusiveMinimum")) && v <= num_kw(c, k))
        violation(c, "%g is not more than %g", v, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(schema, "exclusiveMaximum")) && v >= num_kw(c, k))
        violation(c, "%g is not less than %g", v, k->valuedouble);
}

static void check_string(struct ctx *c, const cJSON *schema, const cJSON *inst)
{
    size_t len = utf8_len(inst->valuestring);
    const cJSON *k;
    if ((k = cJSON_GetObjectItemCaseSensitive(schema, "minLength")) && len < num_kw(c, k))
        violation(c, "is %zu characters long, shorter than %g", len, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(schema, "maxLength")) && len > num_kw(c, k))
        violation(c, "is %zu characters long, longer than %g", len, k->valuedouble);
    if ((k = cJSON_GetObjectItemCaseSensitive(schema, "pattern"))) {
        if (!cJSON_IsString(k)) {
            broken(c, "'pattern' must be a string");
            return;
        }
        const regex_t *re = pattern(c, k->valuestring);
        if (re && regexec(re, inst->valuestring, 0, NULL, 0) != 0)
            violation(c, "'%.120s' does not match the pattern %s", inst->valuestring, k->valuestring);
    }
}

static void check_type(struct ctx *c, const cJSON *kw, const cJSON *inst)
{
    char want[128] = "";
    int ok = 0;
    if (cJSON_IsString(kw)) {
        if (!known_type(kw->valuestring)) broken(c, "unknown type '%s'", kw->valuestring);
        ok = has_type(inst, kw->valuestring);
        snprintf(want, sizeof want, "%s", kw->valuestring);
    } else if (cJSON_IsArray(kw)) {
        const cJSON *t;
        cJSON_ArrayForEach(t, kw) {
            if (!cJSON_IsString(t) || !known_type(t->valuestring)) {
                broken(c, "'type' lists something that is not a type name");
                return;
            }
            ok |= has_type(inst, t->valuestring);
            size_t l = strlen(want);
            snprintf(want + l, sizeof want - l, "%s%s", l ? " or " : "", t->valuestring);
        }
    } else {
        broken(c, "'type' must be a string or an array");
        return;
    }
    if (!ok) violation(c, "is %s %s, not %s", is_integer(inst) ? "an" : "a", is_integer(inst) ? "integer" : type_name(inst), want);
}

static int annotation(const char *k)
{
    static const char *const skip[] = {"$schema", "$id", "title", "description", "$comment", "default", "examples",
                                       "$defs", "definitions", "deprecated", "readOnly", "writeOnly", "then", "else"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (!strcmp(k, skip[i])) return 1;
    return 0;
}

/* Whether a keyword's value has the JSON type the keyword needs, checked
 * whatever the instance is, so a broken schema fails every time. */
static int shape_ok(const cJSON *kw)
{
    static const struct {
        const char *name;
        const char *types; /* n number, s string, a array, o object, b boolean */
    } shapes[] = {
        {"type", "sa"},          {"enum", "a"},      {"required", "a"},      {"properties", "o"},
        {"additionalProperties", "ob"}, {"propertyNames", "ob"}, {"minProperties", "n"}, {"maxProperties", "n"},
        {"items", "ob"},         {"minItems", "n"},  {"maxItems", "n"},      {"uniqueItems", "b"},
        {"minimum", "n"},        {"maximum", "n"},   {"exclusiveMinimum", "n"}, {"exclusiveMaximum", "n"},
        {"minLength", "n"},      {"maxLength", "n"}, {"pattern", "s"},       {"$ref", "s"},
        {"allOf", "a"},          {"anyOf", "a"},     {"oneOf", "a"},         {"not", "ob"},
        {"if", "ob"},            {"then", "ob"},     {"else", "ob"},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        if (strcmp(kw->string, shapes[i].name) != 0) continue;
        const char *t = shapes[i].types;
        return (strchr(t, 'n') && cJSON_IsNumber(kw)) || (strchr(t, 's') && cJSON_IsString(kw)) ||
               (strchr(t, 'a') && cJSON_IsArray(kw)) || (strchr(t, 'o') && cJSON_IsObject(kw)) ||
               (strchr(t, 'b') && cJSON_IsBool(kw));
    }
    return 1;
}

static int applies_to(const char *k, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k, list[i])) return 1;
    return 0;
}

static void check(struct ctx *c, const struct doc *d, const cJSON *schema, const cJSON *inst)
{
    if (c->broken) return;
    if (cJSON_IsTrue(schema)) return;
    if (cJSON_IsFalse(schema)) {
        violation(c, "no value is allowed here");
        return;
    }
    if (!cJSON_IsObject(schema)) {
        broken(c, "a schema must be an object or a boolean");
        return;
    }
    if (++c->depth > MAX_DEPTH) {
        broken(c, "schemas nest deeper than %d (a $ref loop?)", MAX_DEPTH);
        c->depth--;
        return;
    }
    static const char *const obj_kw[] = {"properties", "required", "additionalProperties", "propertyNames",
                                         "minProperties", "maxProperties"};
    static const char *const arr_kw[] = {"items", "minItems", "maxItems", "uniqueItems"};
    static const char *const num_kws[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    static const char *const str_kw[] = {"minLength", "maxLength", "pattern"};
    int did_obj = 0, did_arr = 0, did_num = 0, did_str = 0;
    const cJSON *kw;
    cJSON_ArrayForEach(kw, schema) {
        const char *k = kw->string;
        char got[160], allowed[200];
        if (!shape_ok(kw)) {
            broken(c, "the value of '%s' has the wrong JSON type", k);
            break;
        }
        if (annotation(k)) continue;
        if (applies_to(k, obj_kw, 6)) {
            if (cJSON_IsObject(inst) && !did_obj++) check_object(c, d, schema, inst);
        } else if (applies_to(k, arr_kw, 4)) {
            if (cJSON_IsArray(inst) && !did_arr++) check_array(c, d, schema, inst);
        } else if (applies_to(k, num_kws, 4)) {
            if (cJSON_IsNumber(inst) && !did_num++) check_number(c, schema, inst);
        } else if (applies_to(k, str_kw, 3)) {
            if (cJSON_IsString(inst) && !did_str++) check_string(c, schema, inst);
        } else if (!strcmp(k, "type")) {
            check_type(c, kw, inst);
        } else if (!strcmp(k, "const")) {
            if (!cJSON_Compare(kw, inst, 1)) {
                brief(kw, allowed, sizeof allowed);
                brief(inst, got, sizeof got);
                violation(c, "is %s, not %s", got, allowed);
            }
        } else if (!strcmp(k, "enum")) {
            if (!cJSON_IsArray(kw)) {
                broken(c, "'enum' must be an array");
                break;
            }
            int ok = 0;
            const cJSON *e;
            cJSON_ArrayForEach(e, kw) ok |= cJSON_Compare(e, inst, 1);
            if (!ok) {
                brief(kw, allowed, sizeof allowed);
                brief(inst, got, sizeof got);
                violation(c, "is %s, not one of %s", got, allowed);
            }
        } else if (!strcmp(k, "$ref")) {
            const struct doc *target;
            const cJSON *s = cJSON_IsString(kw) ? resolve(c, d, kw->valuestring, &target) : NULL;
            if (!cJSON_IsString(kw)) broken(c, "'$ref' must be a string");
            else if (s) check(c, target, s, inst);
        } else if (!strcmp(k, "allOf") || !strcmp(k, "anyOf") || !strcmp(k, "oneOf")) {
            if (!cJSON_IsArray(kw) || cJSON_GetArraySize(kw) == 0) {
                broken(c, "'%s' must be a non-empty array", k);
                break;
            }
            int n = 0, ok = 0;
            const cJSON *sub;
            cJSON_ArrayForEach(sub, kw) {
                n++;
                if (k[0] == 'a' && k[1] == 'l') check(c, d, sub, inst);
                else ok += passes(c, d, sub, inst);
            }
            if (!strcmp(k, "anyOf") && !ok) violation(c, "matches none of the %d alternatives (anyOf)", n);
            if (!strcmp(k, "oneOf") && ok != 1)
                violation(c, "matches %d of the %d alternatives, not exactly one (oneOf)", ok, n);
        } else if (!strcmp(k, "not")) {
            if (passes(c, d, kw, inst)) violation(c, "matches a schema it must not match (not)");
        } else if (!strcmp(k, "if")) {
            const cJSON *branch = cJSON_GetObjectItemCaseSensitive(schema, passes(c, d, kw, inst) ? "then" : "else");
            if (branch) check(c, d, branch, inst);
        } else {
            broken(c, "keyword '%s' is not implemented by this validator", k);
        }
        if (c->broken) break;
    }
    c->depth--;
}

int cat_schema_validate(cat_schema *s, const char *name, const cJSON *instance, cat_report_fn report, void *user,
                        trn_err *err)
{
    const struct doc *d = find_doc(s, name, strlen(name));
    if (!d) return trn_errf(err, "no schema document called %s", name);
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.report = report;
    c.user = user;
    c.err = err;
    check(&c, d, d->root, instance);
    if (c.broken) return trn_err_prefix(err, "%s", name);
    return c.count;
}
