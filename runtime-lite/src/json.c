/*
 * json.c: what every reader of a signed JSON document (index.json,
 * manifest.json) checks beyond what cJSON does. cJSON keeps every member of
 * an object, and its look-ups return the first of a name: a document with
 * two "serial" (or "catalogs") members would be read as the first while
 * another reader (or a reviewer) may take the last. The signature covers the
 * bytes, not one reading of them, so such a document is refused.
 */
#include "internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first name that appears twice among o's members, or NULL (NULL too
 * when out of memory: *oom is set). */
static const char *dup_member(const cJSON *o, int *oom)
{
    size_t n = 0, i = 0;
    const cJSON *c;
    for (c = o->child; c; c = c->next) n++;
    if (n < 2) return NULL;
    const char **names = malloc(n * sizeof *names);
    if (!names) return *oom = 1, NULL;
    for (c = o->child; c; c = c->next) names[i++] = c->string ? c->string : "";
    qsort(names, n, sizeof *names, cmp_name);
    const char *dup = NULL;
    for (i = 1; i < n && !dup; i++)
        if (strcmp(names[i - 1], names[i]) == 0) dup = names[i];
    free(names);
    return dup;
}

int rtl_json_unique_keys(const cJSON *node, const char *what, rtl_err *err)
{
    if (!node) return 0;
    int oom = 0;
    if (cJSON_IsObject(node)) {
        const char *dup = dup_member(node, &oom);
        if (oom) return rtl_errf(err, "%s: out of memory", what);
        if (dup)
            return rtl_errf(err, "%s: the key \"%.100s\" appears twice in one object: refusing it (readers "
                            "may disagree on which one counts)", what, dup);
    }
    /* cJSON nests at most CJSON_NESTING_LIMIT (1000) deep: the recursion is bounded */
    for (const cJSON *c = node->child; c; c = c->next)
        if (rtl_json_unique_keys(c, what, err) != 0) return -1;
    return 0;
}
