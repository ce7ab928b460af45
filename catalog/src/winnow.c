/* winnow.c: dropping dominated variants, accuracy judged by its interval (see cat_winnow in cat.h). */
#include "cat.h"

#include <stdlib.h>
#include <string.h>

/* Does a dominate b? (the rule in cat.h) */
static int dominates(const struct cat_wv *a, const struct cat_wv *b)
{
    if (a->top1 < 0 || b->top1 < 0 || strcmp(a->task, b->task) != 0) return 0;
    if (a->macs > b->macs || a->weight_bytes > b->weight_bytes) return 0;
    if (a->lo > b->hi) return 1;                          /* clearly better */
    int cheaper = a->macs < b->macs || a->weight_bytes < b->weight_bytes;
    return cheaper && !(a->hi < b->lo);                   /* not clearly worse */
}

/* The better dominator of two: higher top-1, fewer MACs, fewer bytes, id. */
static int better(const struct cat_wv *a, const struct cat_wv *b)
{
    if (a->top1 != b->top1) return a->top1 > b->top1;
    if (a->macs != b->macs) return a->macs < b->macs;
    if (a->weight_bytes != b->weight_bytes) return a->weight_bytes < b->weight_bytes;
    return strcmp(a->id, b->id) < 0;
}

/* The pass order: cheapest first (see cat.h). */
static int cheaper_first(const void *pa, const void *pb, void *ctx)
{
    const struct cat_wv *v = ctx, *a = &v[*(const long *)pa], *b = &v[*(const long *)pb];
    if (a->macs != b->macs) return a->macs < b->macs ? -1 : 1;
    if (a->weight_bytes != b->weight_bytes) return a->weight_bytes < b->weight_bytes ? -1 : 1;
    if (a->top1 != b->top1) return a->top1 > b->top1 ? -1 : 1;
    return strcmp(a->id, b->id);
}

static long find(const struct cat_wv *v, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].id, id) == 0) return (long)i;
    return -1;
}

int cat_winnow(struct cat_wv *v, size_t n, trn_err *err)
{
    long *order = malloc((n ? n : 1) * sizeof *order);
    long *stack = malloc((n ? n : 1) * sizeof *stack);
    if (!order || !stack) {
        free(order);
        free(stack);
        return trn_errf(err, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        v[i].dropped = 0;
        v[i].dominated_by = v[i].needed_by = -1;
        if (v[i].top1 >= 0 && v[i].images > 0) {
            double k = v[i].top1 * (double)v[i].images + 0.5;
            trn_wilson((uint64_t)k > v[i].images ? v[i].images : (uint64_t)k, v[i].images, &v[i].lo, &v[i].hi);
        } else {
            v[i].lo = v[i].hi = v[i].top1;
        }
        order[i] = (long)i;
    }
    /* One pass, cheapest first: every dominator precedes what it dominates
     * (no more MACs, no more bytes, and at equal costs clearly better), so
     * the kept set is decided before it is asked. qsort is not stable, but
     * the order is total (ids are unique). */
    qsort_r(order, n, sizeof *order, cheaper_first, v);
    for (size_t r = 0; r < n; r++) {
        long i = order[r];
        for (size_t q = 0; q < r; q++) {
            long j = order[q];
            if (v[j].dropped || !dominates(&v[j], &v[i])) continue;
            if (v[i].dominated_by < 0 || better(&v[j], &v[v[i].dominated_by])) v[i].dominated_by = j;
        }
        v[i].dropped = v[i].dominated_by >= 0;
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
    free(order);
    free(stack);
    if (rc != 0) return -1;
    int dropped = 0;
    for (size_t i = 0; i < n; i++) dropped += v[i].dropped;
    return dropped;
}
