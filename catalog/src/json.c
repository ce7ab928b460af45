/* json.c: loading JSON files with located errors, and deterministic output
 * (keys sorted bytewise in every object, cJSON's tab layout, final newline). */
#include "cat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cJSON *cat_json_parse(const char *text, size_t len, size_t *error_offset)
{
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (j) { /* nothing but white space may follow the value */
        const char *p = end;
        while (p < text + len && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
        if (p == text + len) return j;
        cJSON_Delete(j);
        end = p;
    }
    if (error_offset) *error_offset = end && end >= text && end <= text + len ? (size_t)(end - text) : 0;
    return NULL;
}

cJSON *cat_json_load(const char *path, size_t max, trn_err *err)
{
    char *text;
    size_t len, off = 0;
    if (trn_read_file(path, max, &text, &len, err) != 0) return NULL;
    cJSON *j = cat_json_parse(text, len, &off);
    if (!j) {
        int line = 1, col = 1;
        for (size_t i = 0; i < off; i++) {
            if (text[i] == '\n') line++, col = 1;
            else col++;
        }
        trn_errf(err, "%s:%d:%d: JSON syntax error (byte offset %zu)", path, line, col, off);
    }
    free(text);
    return j;
}

static int key_before(const cJSON *x, const cJSON *y)
{
    return strcmp(x->string ? x->string : "", y->string ? y->string : "") < 0;
}

void cat_json_sort(cJSON *item)
{
    if (!item) return;
    for (cJSON *c = item->child; c; c = c->next) cat_json_sort(c);
    if (!cJSON_IsObject(item) || !item->child) return;
    size_t n = 0;
    for (cJSON *c = item->child; c; c = c->next) n++;
    cJSON **a = malloc(n * sizeof *a);
    if (!a) return; /* out of memory: leave the order as it is */
    n = 0;
    for (cJSON *c = item->child; c; c = c->next) a[n++] = c;
    for (size_t i = 1; i < n; i++) { /* insertion sort: stable for repeated keys */
        cJSON *x = a[i];
        size_t k = i;
        for (; k > 0 && key_before(x, a[k - 1]); k--) a[k] = a[k - 1];
        a[k] = x;
    }
    for (size_t i = 0; i < n; i++) {
        a[i]->next = i + 1 < n ? a[i + 1] : NULL;
        a[i]->prev = i ? a[i - 1] : a[n - 1]; /* cJSON: the head's prev is the tail */
    }
    item->child = a[0];
    free(a);
}

char *cat_json_print(cJSON *item)
{
    cat_json_sort(item);
    char *s = cJSON_Print(item);
    if (!s) return NULL;
    size_t n = strlen(s);
    char *out = realloc(s, n + 2);
    if (!out) {
        free(s);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    return out;
}

const struct cat_embedded *cat_embedded_find(const char *name)
{
    for (size_t i = 0; i < cat_embedded_count; i++)
        if (strcmp(cat_embedded_files[i].name, name) == 0) return &cat_embedded_files[i];
    return NULL;
}

double cat_json_num(const cJSON *o, const char *k, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

const char *cat_json_str(const cJSON *o, const char *k, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

void cat_vreportf(cat_report_fn report, void *user, int *count, const char *ptr, const char *fmt, va_list ap)
{
    if (count) (*count)++;
    if (!report) return;
    char msg[1200];
    vsnprintf(msg, sizeof msg, fmt, ap);
    report(user, ptr, msg);
}

void cat_reportf(cat_report_fn report, void *user, int *count, const char *ptr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cat_vreportf(report, user, count, ptr, fmt, ap);
    va_end(ap);
}
