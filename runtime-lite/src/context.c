/* context.c: the class-frequency profiler over a sliding window (MCDNN
 * section 4.1.2) and the class set of a specialised variant.
 *
 * State: a ring of the last `window` classes and one count per class, both
 * allocated at creation (bounded memory: (window + classes) x 4 bytes), so
 * observing is O(1) and never allocates. A report selects the top K
 * classes (K: the largest n of the parameters) by count, ties to the lower
 * index, in O(classes x K), and applies MCDNN's rule: the top n classes
 * account for at least p of the window. Among the (n, p) of the parameters
 * the report is the smallest n that reaches a threshold, with the largest
 * threshold it reaches (a smaller class set makes a smaller, more accurate
 * specialised model; a higher p sends fewer inputs on to the generic one).
 *
 * Stability: the last dominated report is kept while its own classes still
 * hold its p minus the hysteresis and no strictly better (n, p) holds, so a
 * tie for the n-th place or a share that wavers around a threshold does not
 * switch a device between models at every input. */
#include "internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

struct rtl_context_profiler {
    rtl_context_params prm;
    int nn, np;              /* levels in prm.n and prm.p */
    uint32_t *ring;          /* the window's classes, oldest at pos when full */
    uint32_t *count;         /* per class, in the window */
    uint32_t fill, pos;
    uint64_t seen;
    rtl_context last;        /* the previous report */
    int reported;
};

static const uint32_t default_n[] = {7, 14, 21};
static const double default_p[] = {0.6, 0.7, 0.8, 0.9, 0.95};

/* Counts the leading non-zero entries and checks that they increase and
 * that the rest are zero; the count, or -1. */
static int levels_u32(const uint32_t *v)
{
    int k = 0;
    while (k < RTL_CONTEXT_MAX_LEVELS && v[k]) k++;
    for (int i = k; i < RTL_CONTEXT_MAX_LEVELS; i++)
        if (v[i]) return -1;
    for (int i = 1; i < k; i++)
        if (v[i] <= v[i - 1]) return -1;
    return k;
}

static int levels_dbl(const double *v)
{
    int k = 0;
    while (k < RTL_CONTEXT_MAX_LEVELS && v[k] != 0) k++;
    for (int i = k; i < RTL_CONTEXT_MAX_LEVELS; i++)
        if (v[i] != 0) return -1;
    for (int i = 1; i < k; i++)
        if (!(v[i] > v[i - 1])) return -1;
    return k;
}

rtl_context_profiler *rtl_context_profiler_new(const rtl_context_params *params, rtl_err *err)
{
    if (!params) return rtl_errf(err, "context profiler: no parameters (classes is required)"), NULL;
    rtl_context_params q = *params;
    if (q.classes == 0 || q.classes > RTL_CONTEXT_MAX_CLASSES)
        return rtl_errf(err, "context profiler: classes %u is out of range (1..%u)", q.classes,
                        RTL_CONTEXT_MAX_CLASSES), NULL;
    if (q.window == 0) q.window = 100;
    if (q.window > RTL_CONTEXT_MAX_WINDOW)
        return rtl_errf(err, "context profiler: window %u is out of range (1..%u)", q.window,
                        RTL_CONTEXT_MAX_WINDOW), NULL;
    if (q.min_samples == 0) q.min_samples = q.window;
    if (q.min_samples > q.window)
        return rtl_errf(err, "context profiler: min_samples %u exceeds the window (%u): the window could never "
                        "hold enough", q.min_samples, q.window), NULL;
    int nn = levels_u32(q.n), np = levels_dbl(q.p);
    if (nn < 0) return rtl_errf(err, "context profiler: the n values must increase and end with zeros"), NULL;
    if (np < 0) return rtl_errf(err, "context profiler: the p thresholds must increase and end with zeros"), NULL;
    if (nn == 0) {
        nn = (int)(sizeof default_n / sizeof *default_n);
        memcpy(q.n, default_n, sizeof default_n);
    }
    if (np == 0) {
        np = (int)(sizeof default_p / sizeof *default_p);
        memcpy(q.p, default_p, sizeof default_p);
    }
    if (q.n[nn - 1] > RTL_CONTEXT_MAX_N)
        return rtl_errf(err, "context profiler: n %u is out of range (1..%d)", q.n[nn - 1], RTL_CONTEXT_MAX_N), NULL;
    if (!(q.p[0] > 0) || q.p[np - 1] > 1)
        return rtl_errf(err, "context profiler: the thresholds p must lie in (0, 1]"), NULL;
    if (!(q.hysteresis >= 0 && q.hysteresis <= 0.5))
        return rtl_errf(err, "context profiler: hysteresis %g is out of range (0..0.5)", q.hysteresis), NULL;
    rtl_context_profiler *p = calloc(1, sizeof *p);
    if (p) {
        p->ring = malloc((size_t)q.window * sizeof *p->ring);
        p->count = calloc(q.classes, sizeof *p->count);
    }
    if (!p || !p->ring || !p->count) {
        rtl_context_profiler_free(p);
        return rtl_errf(err, "context profiler: out of memory (window %u, classes %u)", q.window, q.classes), NULL;
    }
    p->prm = q;
    p->nn = nn, p->np = np;
    return p;
}

void rtl_context_profiler_free(rtl_context_profiler *p)
{
    if (!p) return;
    free(p->ring);
    free(p->count);
    free(p);
}

void rtl_context_profiler_params(const rtl_context_profiler *p, rtl_context_params *out) { *out = p->prm; }

uint32_t rtl_context_samples(const rtl_context_profiler *p) { return p->fill; }

void rtl_context_reset(rtl_context_profiler *p)
{
    memset(p->count, 0, (size_t)p->prm.classes * sizeof *p->count);
    p->fill = p->pos = 0;
    p->seen = 0;
    p->reported = 0;
    memset(&p->last, 0, sizeof p->last);
}

int rtl_context_observe(rtl_context_profiler *p, uint32_t cls, rtl_err *err)
{
    if (cls >= p->prm.classes)
        return rtl_errf(err, "context profiler: class %u is out of range (the profiler has %u classes)", cls,
                        p->prm.classes);
    if (p->fill == p->prm.window) p->count[p->ring[p->pos]]--;
    else p->fill++;
    p->ring[p->pos] = cls;
    p->pos = p->pos + 1 == p->prm.window ? 0 : p->pos + 1;
    p->count[cls]++;
    p->seen++;
    return 0;
}

int rtl_context_grow(rtl_context_profiler *p, uint32_t classes, rtl_err *err)
{
    if (classes <= p->prm.classes) return 0;
    if (classes > RTL_CONTEXT_MAX_CLASSES)
        return rtl_errf(err, "context profiler: classes %u is out of range (1..%u)", classes, RTL_CONTEXT_MAX_CLASSES);
    uint32_t *c = realloc(p->count, (size_t)classes * sizeof *c);
    if (!c) return rtl_errf(err, "context profiler: out of memory (classes %u)", classes);
    memset(c + p->prm.classes, 0, (size_t)(classes - p->prm.classes) * sizeof *c);
    p->count = c;
    p->prm.classes = classes;
    return 0;
}

double rtl_context_share(const rtl_context_profiler *p, const uint32_t *classes, size_t n)
{
    if (!p->fill) return 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (classes[i] >= p->prm.classes) continue;
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++) dup = classes[j] == classes[i];
        if (!dup) sum += p->count[classes[i]];
    }
    return (double)sum / p->fill;
}

/* The k most frequent classes with a non-zero count, by count then index,
 * into cls/cnt; their number. */
static uint32_t top_classes(const rtl_context_profiler *p, uint32_t k, uint32_t *cls, uint32_t *cnt)
{
    uint32_t m = 0;
    for (uint32_t c = 0; c < p->prm.classes; c++) {
        uint32_t v = p->count[c];
        if (!v || (m == k && v <= cnt[m - 1])) continue; /* equal counts keep the lower index */
        uint32_t j = m < k ? m++ : k - 1;
        while (j > 0 && cnt[j - 1] < v) cls[j] = cls[j - 1], cnt[j] = cnt[j - 1], j--;
        cls[j] = c, cnt[j] = v;
    }
    return m;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* 1 when a and b list the same classes (in any order). */
static int same_set(const rtl_context *a, const rtl_context *b)
{
    if (a->nclasses != b->nclasses) return 0;
    uint32_t x[RTL_CONTEXT_MAX_N], y[RTL_CONTEXT_MAX_N];
    memcpy(x, a->classes, a->nclasses * sizeof *x);
    memcpy(y, b->classes, b->nclasses * sizeof *y);
    qsort(x, a->nclasses, sizeof *x, cmp_u32);
    qsort(y, b->nclasses, sizeof *y, cmp_u32);
    return !memcmp(x, y, a->nclasses * sizeof *x);
}

/* The largest threshold at most share; 0 when none. */
static double reached(const rtl_context_profiler *p, double share)
{
    double r = 0;
    for (int j = 0; j < p->np; j++)
        if (share >= p->prm.p[j]) r = p->prm.p[j];
    return r;
}

int rtl_profile_context(rtl_context_profiler *p, rtl_context *out, rtl_err *err)
{
    (void)err; /* nothing can fail once the profiler exists */
    rtl_context r;
    memset(&r, 0, sizeof r);
    r.samples = p->fill;
    r.seen = p->seen;
    uint32_t kmax = p->prm.n[p->nn - 1], cls[RTL_CONTEXT_MAX_N], cnt[RTL_CONTEXT_MAX_N];
    uint32_t m = top_classes(p, kmax, cls, cnt);
    uint64_t prefix = 0;
    uint32_t used = 0;
    int best = -1;
    for (int i = 0; i < p->nn; i++) {
        while (used < m && used < p->prm.n[i]) prefix += cnt[used++];
        r.top_share[i] = p->fill ? (double)prefix / p->fill : 0;
        if (best < 0 && p->fill >= p->prm.min_samples && r.top_share[i] >= p->prm.p[0]) best = i;
    }
    int bi = best >= 0 ? best : p->nn - 1;
    r.n = p->prm.n[bi];
    r.nclasses = m < r.n ? m : r.n;
    memcpy(r.classes, cls, r.nclasses * sizeof *cls);
    memcpy(r.counts, cnt, r.nclasses * sizeof *cnt);
    r.share = r.top_share[bi];
    if (best >= 0) r.dominated = 1, r.p = reached(p, r.share);

    /* Keep the previous context while it holds and nothing strictly better does. */
    const rtl_context *l = &p->last;
    if (p->reported && l->dominated && p->fill >= p->prm.min_samples) {
        double held = rtl_context_share(p, l->classes, l->nclasses);
        int better = r.dominated && (r.n < l->n || (r.n == l->n && r.p > l->p));
        if (held >= l->p - p->prm.hysteresis - 1e-12 && !better) {
            rtl_context k = r;
            k.dominated = 1;
            k.n = l->n, k.p = l->p, k.share = held, k.nclasses = l->nclasses;
            for (uint32_t i = 0; i < l->nclasses; i++) k.classes[i] = l->classes[i], k.counts[i] = p->count[l->classes[i]];
            for (uint32_t i = 1; i < k.nclasses; i++) /* most frequent first, ties to the lower index */
                for (uint32_t j = i; j > 0 && (k.counts[j] > k.counts[j - 1] ||
                                               (k.counts[j] == k.counts[j - 1] && k.classes[j] < k.classes[j - 1])); j--) {
                    uint32_t tc = k.classes[j], tn = k.counts[j];
                    k.classes[j] = k.classes[j - 1], k.counts[j] = k.counts[j - 1];
                    k.classes[j - 1] = tc, k.counts[j - 1] = tn;
                }
            r = k;
        }
    }
    if (!p->reported) r.changed = r.dominated;
    else if (r.dominated != l->dominated) r.changed = 1;
    else r.changed = r.dominated && (r.n != l->n || r.p != l->p || !same_set(&r, l));
    p->last = r;
    p->reported = 1;
    *out = r;
    return 0;
}

int rtl_variant_context(const rtl_catalog *cat, const rtl_variant *v, const char *const *labels, size_t nlabels,
                        uint32_t *classes, size_t cap, size_t *n, double *p, rtl_err *err)
{
    char partner[RTL_ID_MAX + 1];
    int other;
    if (rtl_variant_cascade(v, partner, sizeof partner, &other, err) != 0) return -1;
    size_t nl = 0;
    const char *const *own = rtl_catalog_task_labels(cat, rtl_variant_task(v), &nl);
    if (!own || (size_t)other >= nl)
        return rtl_errf(err, "variant '%s': its task %s has %zu labels, but its \"other\" class is %d",
                        rtl_variant_id(v), rtl_variant_task(v), nl, other);
    if (nl - 1 > cap)
        return rtl_errf(err, "variant '%s' answers %zu classes; room for %zu", rtl_variant_id(v), nl - 1, cap);
    size_t k = 0;
    for (size_t i = 0; i < nl; i++) {
        if ((int)i == other) continue;
        size_t j = 0;
        while (j < nlabels && strcmp(labels[j], own[i]) != 0) j++;
        if (j == nlabels)
            return rtl_errf(err, "variant '%s': its class '%s' is not a class of the generic task", rtl_variant_id(v),
                            own[i]);
        classes[k++] = (uint32_t)j;
    }
    *n = k;
    *p = 0;
    cJSON *f = cJSON_Parse(rtl_variant_fields_json(v) ? rtl_variant_fields_json(v) : "{}");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(f, "context");
    const cJSON *pv = cJSON_GetObjectItemCaseSensitive(c, "p");
    if (cJSON_IsNumber(pv) && pv->valuedouble > 0 && pv->valuedouble <= 1) *p = pv->valuedouble;
    cJSON_Delete(f);
    return 0;
}
