/* winnow.c: dropping dominated variants, accuracy judged by a paired test
 * on the same test images (or, without per-image data, by intervals); see
 * cat_winnow in cat.h. */
#include "cat.h"

#include <stdlib.h>
#include <string.h>

/* A point judged by winnowing: costs, the accuracy, its interval, and the
 * per-image correctness behind it. */
struct wpt {
    uint64_t macs, weight_bytes;
    double top1, lo, hi;
    const struct cat_wimg *img;
};

static struct wpt point_of(const struct cat_wv *v)
{
    return (struct wpt){v->macs, v->weight_bytes, v->top1, v->lo, v->hi, &v->img};
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

static struct wpt point_of_cap(const struct cat_wcap *k)
{
    struct wpt p = {k->macs, k->weight_bytes, k->top1, 0, 0, &k->img};
    interval(k->top1, k->images, &p.lo, &p.hi);
    return p;
}

struct cat_wcmp cat_compare(const struct cat_wimg *a, double a_top1, double a_lo, double a_hi,
                            const struct cat_wimg *b, double b_top1, double b_lo, double b_hi)
{
    struct cat_wcmp c = {0, 0, 0, 0, a_top1 - b_top1, -1, a_lo > b_hi, b_lo > a_hi};
    if (!a || !b || !a->correct || !b->correct || a->images != b->images || a->list != b->list || !a->images)
        return c;
    c.paired = 1;
    c.images = a->images;
    for (uint64_t i = 0; i < a->images; i++) {
        c.only_a += a->correct[i] && !b->correct[i];
        c.only_b += !a->correct[i] && b->correct[i];
    }
    c.diff = ((double)c.only_a - (double)c.only_b) / (double)c.images;
    c.p = trn_mcnemar_p(c.only_a, c.only_b);
    c.a_better = c.only_a > c.only_b && c.p < 0.05;
    c.b_better = c.only_b > c.only_a && c.p < 0.05;
    return c;
}

/* Does a dominate b (the rule in cat.h; same task checked by the caller)?
 * clear_only: only a clearly better a dominates (a capacity's front). The
 * comparison goes to *c when costs allow one. */
static int dominates_pt(const struct wpt *a, const struct wpt *b, int clear_only, struct cat_wcmp *c)
{
    if (a->top1 < 0 || b->top1 < 0) return 0;
    if (a->macs > b->macs || a->weight_bytes > b->weight_bytes) return 0;
    *c = cat_compare(a->img, a->top1, a->lo, a->hi, b->img, b->top1, b->lo, b->hi);
    if (c->a_better) return 1;
    int cheaper = a->macs < b->macs || a->weight_bytes < b->weight_bytes;
    return !clear_only && cheaper && !c->b_better;
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

/* May kept variant j judge variant i? Same task, j a plain variant, and a
 * head only by a head on its own trunk (cat.h). */
static int may_judge(const struct cat_wv *j, const struct cat_wv *i)
{
    if (j == i || j->dropped || j->ncaps || strcmp(j->task, i->task)) return 0;
    return !i->trunk || (j->trunk && !strcmp(j->trunk, i->trunk));
}

/* Judges point p (of variant i, capacity rule or not) against the kept
 * variants: *by the best dominator, else *chal the best kept variant at no
 * more cost (each -1 when none), *c the comparison with it. */
static void judge(const struct cat_wv *v, size_t n, size_t i, const struct wpt *p, int clear_only, long *by,
                  long *chal, struct cat_wcmp *c)
{
    struct cat_wcmp cj, cc = {0};
    *by = *chal = -1;
    for (size_t j = 0; j < n; j++) {
        if (!may_judge(&v[j], &v[i])) continue;
        struct wpt pj = point_of(&v[j]);
        if (pj.top1 < 0 || p->top1 < 0 || pj.macs > p->macs || pj.weight_bytes > p->weight_bytes) continue;
        if (dominates_pt(&pj, p, clear_only, &cj)) {
            if (*by < 0 || better(&v[j], &v[*by])) *by = (long)j, *c = cj;
        } else if (*chal < 0 || better(&v[j], &v[*chal])) {
            *chal = (long)j, cc = cj;
        }
    }
    if (*by >= 0) *chal = -1;
    else if (*chal >= 0) *c = cc;
}

/* A multi-capacity unit: each capacity judged against the kept plain
 * variants; dropped when none is on the front (cat.h). */
static void judge_unit(struct cat_wv *v, size_t n, size_t i)
{
    int all = 1;
    for (size_t k = 0; k < v[i].ncaps; k++) {
        struct cat_wcap *cap = &v[i].caps[k];
        struct wpt pc = point_of_cap(cap);
        judge(v, n, i, &pc, 1, &cap->dominated_by, &cap->challenger, &cap->cmp);
        all &= cap->dominated_by >= 0;
    }
    v[i].dropped = all && !v[i].keep;
    v[i].dominated_by = all ? v[i].caps[v[i].ncaps - 1].dominated_by : -1;
    v[i].cmp = v[i].caps[v[i].ncaps - 1].cmp;
}

/* Keeps what kept variants depend on, transitively. 0 or -1 (err). */
static int keep_dependencies(struct cat_wv *v, size_t n, long *stack, trn_err *err)
{
    size_t top = 0;
    for (size_t i = 0; i < n; i++)
        if (!v[i].dropped) stack[top++] = (long)i;
    while (top) {
        long i = stack[--top];
        for (size_t d = 0; d < v[i].ndeps; d++) {
            long k = find(v, n, v[i].deps[d]);
            if (k < 0) return trn_errf(err, "variant %s depends on %s, which is not among the variants", v[i].id, v[i].deps[d]);
            if (v[k].dropped) {
                v[k].dropped = 0;
                v[k].needed_by = i;
                stack[top++] = k;
            }
        }
    }
    return 0;
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
        v[i].dominated_by = v[i].needed_by = v[i].challenger = -1;
        memset(&v[i].cmp, 0, sizeof v[i].cmp);
        interval(v[i].top1, v[i].images, &v[i].lo, &v[i].hi);
        order[i] = (long)i;
    }
    /* One pass, cheapest first: every dominator precedes what it dominates
     * (no more MACs, no more bytes, and at equal costs clearly better), so
     * the kept set is decided before it is asked. qsort is not stable, but
     * the order is total (ids are unique). Multi-capacity units dominate
     * nothing, so they are decided after the pass. */
    qsort_r(order, n, sizeof *order, cheaper_first, v);
    for (size_t r = 0; r < n; r++) {
        long i = order[r];
        if (v[i].ncaps) continue;
        /* only variants earlier in the order are kept yet: mark the rest */
        for (size_t q = r; q < n; q++) v[order[q]].dropped = q > r;
        struct wpt pi = point_of(&v[i]);
        judge(v, n, (size_t)i, &pi, 0, &v[i].dominated_by, &v[i].challenger, &v[i].cmp);
        v[i].dropped = v[i].dominated_by >= 0 && !v[i].keep;
        for (size_t q = r + 1; q < n; q++) v[order[q]].dropped = 0;
    }
    for (size_t i = 0; i < n; i++)
        if (v[i].ncaps) judge_unit(v, n, i);
    int rc = keep_dependencies(v, n, stack, err);
    free(order);
    free(stack);
    if (rc != 0) return -1;
    int dropped = 0;
    for (size_t i = 0; i < n; i++) dropped += v[i].dropped;
    return dropped;
}
