/* winnow.c: dropping dominated variants, accuracy judged by its interval (see cat_winnow in cat.h). */
#include "cat.h"

#include <stdlib.h>
#include <string.h>

/* A point judged by winnowing: costs and the accuracy interval. */
struct wpt {
    uint64_t macs, weight_bytes;
    double top1, lo, hi;
};

static struct wpt point_of(const struct cat_wv *v)
{
    return (struct wpt){v->macs, v->weight_bytes, v->top1, v->lo, v->hi};
}

/* The 95% Wilson interval of top1 over images (the point itself when
 * either is unknown). */
static void interval(double top1, uint64_t images, double *lo, double *hi)
{
    if (top1 >= 0 && images > 0) {
        double k = top1 * (double)images + 0.5;
        trn_wilson((uint64_t)k > images ? images : (uint64_t)k, images, lo, hi);
    } else {
        *lo = *hi = top1;
    }
}

/* Does a dominate b? (the rule in cat.h; same task checked by the caller) */
static int dominates_pt(const struct wpt *a, const struct wpt *b)
{
    if (a->top1 < 0 || b->top1 < 0) return 0;
    if (a->macs > b->macs || a->weight_bytes > b->weight_bytes) return 0;
    if (a->lo > b->hi) return 1;                          /* clearly better */
    int cheaper = a->macs < b->macs || a->weight_bytes < b->weight_bytes;
    return cheaper && !(a->hi < b->lo);                   /* not clearly worse */
}

/* Does plain variant a dominate variant b? A multi-capacity variant
 * dominates nothing, and is judged per capacity after the pass. */
static int dominates(const struct cat_wv *a, const struct cat_wv *b)
{
    if (a->ncaps || strcmp(a->task, b->task) != 0) return 0;
    struct wpt pa = point_of(a), pb = point_of(b);
    return dominates_pt(&pa, &pb);
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
        interval(v[i].top1, v[i].images, &v[i].lo, &v[i].hi);
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
            /* a head falls only to a head on its own trunk (cat.h) */
            if (v[i].trunk && (!v[j].trunk || strcmp(v[j].trunk, v[i].trunk))) continue;
            if (v[i].dominated_by < 0 || better(&v[j], &v[v[i].dominated_by])) v[i].dominated_by = j;
        }
        v[i].dropped = v[i].dominated_by >= 0 && !v[i].ncaps;
    }
    /* Multi-capacity variants as one unit: dropped only when a kept plain
     * variant dominates each of their capacities. They dominate nothing,
     * so deciding them after the pass changes no other decision. */
    for (size_t i = 0; i < n; i++) {
        if (!v[i].ncaps) continue;
        int all = 1;
        for (size_t c = 0; c < v[i].ncaps && all; c++) {
            const struct cat_wcap *k = &v[i].caps[c];
            struct wpt pc = {k->macs, k->weight_bytes, k->top1, 0, 0};
            interval(k->top1, k->images, &pc.lo, &pc.hi);
            int hit = 0;
            for (size_t j = 0; j < n && !hit; j++) {
                if (j == i || v[j].dropped || v[j].ncaps || strcmp(v[j].task, v[i].task)) continue;
                struct wpt pj = point_of(&v[j]);
                hit = dominates_pt(&pj, &pc);
            }
            all = hit;
        }
        v[i].dropped = all;
        if (!all) v[i].dominated_by = -1; /* kept as a unit: not dominated */
        if (all && v[i].dominated_by < 0) {
            /* The pass recorded no kept dominator of the variant's own
             * figures: name the best one of its largest capacity (there is
             * one: every capacity is dominated). */
            const struct cat_wcap *k = &v[i].caps[v[i].ncaps - 1];
            struct wpt pc = {k->macs, k->weight_bytes, k->top1, 0, 0};
            interval(k->top1, k->images, &pc.lo, &pc.hi);
            for (size_t j = 0; j < n; j++) {
                if (j == i || v[j].dropped || v[j].ncaps || strcmp(v[j].task, v[i].task)) continue;
                struct wpt pj = point_of(&v[j]);
                if (dominates_pt(&pj, &pc) &&
                    (v[i].dominated_by < 0 || better(&v[j], &v[v[i].dominated_by])))
                    v[i].dominated_by = (long)j;
            }
        }
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
