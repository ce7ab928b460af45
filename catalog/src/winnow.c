/* winnow.c: dropping strictly dominated variants (see cat_winnow in cat.h). */
#include "cat.h"

#include <stdlib.h>
#include <string.h>

static int dominates(const struct cat_wv *a, const struct cat_wv *b)
{
    return a->top1 >= 0 && b->top1 >= 0 && strcmp(a->task, b->task) == 0 && a->macs < b->macs &&
           a->weight_bytes < b->weight_bytes && a->top1 > b->top1;
}

/* The better dominator of two: higher top-1, fewer MACs, fewer bytes, id. */
static int better(const struct cat_wv *a, const struct cat_wv *b)
{
    if (a->top1 != b->top1) return a->top1 > b->top1;
    if (a->macs != b->macs) return a->macs < b->macs;
    if (a->weight_bytes != b->weight_bytes) return a->weight_bytes < b->weight_bytes;
    return strcmp(a->id, b->id) < 0;
}

static long find(const struct cat_wv *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].id, id) == 0) return (long)i;
    return -1;
}

int cat_winnow(struct cat_wv *v, size_t n, trn_err *err)
{
    unsigned char *dominated = calloc(n ? n : 1, 1);
    long *stack = malloc((n ? n : 1) * sizeof *stack);
    if (!dominated || !stack) {
        free(dominated);
        free(stack);
        return trn_errf(err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        v[i].dropped = 0;
        v[i].dominated_by = v[i].needed_by = -1;
        for (size_t j = 0; j < n && !dominated[i]; j++) dominated[i] = j != i && dominates(&v[j], &v[i]);
    }
    /* strict dominance is transitive, so every dominated variant has an
     * undominated dominator: record the best of those */
    for (size_t i = 0; i < n; i++) {
        if (!dominated[i]) continue;
        for (size_t j = 0; j < n; j++)
            if (!dominated[j] && dominates(&v[j], &v[i]) &&
                (v[i].dominated_by < 0 || better(&v[j], &v[v[i].dominated_by])))
                v[i].dominated_by = (long)j;
        v[i].dropped = 1;
    }
    /* keep what kept variants depend on, transitively */
    size_t top = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++)
        if (!v[i].dropped) stack[top++] = (long)i;
    while (top && rc == 0) {
        long i = stack[--top];
        for (size_t d = 0; d < v[i].ndeps; d++) {
            long k = find(v, n, v[i].deps[d]);
            if (k < 0) {
                rc = trn_errf(err, "variant %s depends on %s, which is not among the variants", v[i].id, v[i].deps[d]);
                break;
            }
            if (v[k].dropped) {
                v[k].dropped = 0;
                v[k].needed_by = i;
                stack[top++] = k;
            }
        }
    }
    free(dominated);
    free(stack);
    if (rc != 0) return -1;
    int dropped = 0;
    for (size_t i = 0; i < n; i++) dropped += v[i].dropped;
    return dropped;
}
