/*
 * report.c: the human side of a catalog: Pareto plots (SVG, written here),
 * a Markdown summary and the same report as one self-contained HTML file
 * (the plots inline, no network), all generated from the manifest (and,
 * when given, the training metrics logs for the curves), so the same
 * inputs give the same report bytes.
 *
 * Plot: x = MACs or weight bytes on a log scale, y = top-1 on the task's
 * test split; kept variants are filled dots coloured by technique, winnowed
 * ones hollow grey; the line is the Pareto front of the kept variants (each
 * point on it is more accurate than every cheaper one).
 *
 * Point labels are placed with a collision check (cat_place_labels): each
 * label takes the first of a list of positions around its point whose box
 * (an estimate of the rendered text: LABEL_CHAR_W px per character, a
 * 12 px line) overlaps no label placed before, no marker and stays inside
 * the plot; a label placed away from its point gets a leader line; one
 * that fits nowhere is left out and counted in a note under the plot (the
 * tables list every variant).
 */
#include "cat.h"
#include "techniques.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 760
#define H 500
#define ML 78
#define MR 150
#define MT 48
#define MB 64
#define LABEL_CHAR_W 6.6 /* px per character of 11 px sans-serif: above the average glyph width */

/* A growing text buffer. */
struct sbuf {
    char *s;
    size_t len, cap;
    int failed;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) TRN_PRINTF(2, 3);
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap + (size_t)n + 1) * 2;
        char *g = realloc(b->s, cap);
        if (!g) {
            b->failed = 1;
            return;
        }
        b->s = g;
        b->cap = cap;
    }
}

/* Escapes &, <, >, " for XML text and attributes. */
static void sb_xml(struct sbuf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': sb_printf(b, "&amp;"); break;
        case '<': sb_printf(b, "&lt;"); break;
        case '>': sb_printf(b, "&gt;"); break;
        case '"': sb_printf(b, "&quot;"); break;
        default: sb_printf(b, "%c", *s);
        }
    }
}

/* The technique table (catalog/techniques.rows via mk/techniques.sh): each
 * technique's name and colour, in the legend's order. */
#define TECH_ROW(id, name, runtime, colour, verb, made, data) {name, colour},
static const struct {
    const char *name, *colour;
} techniques[] = {TECHNIQUES(TECH_ROW)};
#undef TECH_ROW
#define NTECHNIQUES (sizeof techniques / sizeof techniques[0])

static const char *colour(const char *technique)
{
    for (size_t i = 0; i < NTECHNIQUES; i++)
        if (!strcmp(technique, techniques[i].name)) return techniques[i].colour;
    return "#7f7f7f";
}

struct point {
    const char *id, *technique;
    double x, y;
    int winnowed;
};

static double num(const cJSON *o, const char *k)
{
    return cat_json_num(o, k, -1);
}

static const char *sget(const cJSON *o, const char *k)
{
    return cat_json_str(o, k, "");
}

static double top1(const cJSON *v, const char *task)
{
    return num(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), task), "top1");
}

/* 1.2k, 35M, 1.5G: short engineering numbers. */
static void human(double v, char *out, size_t size)
{
    static const char *const suffix[] = {"", "k", "M", "G", "T"};
    int i = 0;
    while (v >= 1000 && i < 4) v /= 1000, i++;
    snprintf(out, size, v < 10 && v != floor(v) ? "%.1f%s" : "%.0f%s", v, suffix[i]);
}

/* A capacity's top-1 (its test result, or its bare top1; -1 when none). */
static double cap_top1(const cJSON *c)
{
    double t = num(cJSON_GetObjectItemCaseSensitive(c, "test"), "top1");
    return t >= 0 ? t : num(c, "top1");
}

/* A variant's cost on the plot's axis: an early-exit variant (FlexDNN,
 * issue 16) costs its expected MACs per input at the default alpha 1
 * (cost.expected_macs, else its alpha profile's alpha 1 entry) and its
 * trunk's weight bytes plus its exits' (as winnowing judges it); any other
 * variant its cost.macs / cost.weight_bytes. */
static const cJSON *alpha_profile(const cJSON *v)
{
    if (strcmp(sget(v, "technique"), TECHNIQUE_EARLY_EXIT)) return NULL;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "technique_fields"),
                                                      "alpha_profile");
    return cJSON_GetArraySize(p) > 0 ? p : NULL;
}

static double variant_cost(const cJSON *v, int by_macs)
{
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(v, "cost"), *prof = alpha_profile(v), *p;
    if (!by_macs) {
        double w = num(cost, "weight_bytes"), xw = num(cost, "exits_weight_bytes");
        return prof && w >= 0 && xw > 0 ? w + xw : w;
    }
    if (!prof) return num(cost, "macs");
    if (num(cost, "expected_macs") >= 0) return num(cost, "expected_macs");
    cJSON_ArrayForEach(p, prof) {
        if (num(p, "alpha") == 1 && num(p, "expected_macs") >= 0) return num(p, "expected_macs");
    }
    return num(cost, "macs");
}

static int cmp_point_x(const void *a, const void *b)
{
    const struct point *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    if (p->y != q->y) return p->y > q->y ? -1 : 1;
    return strcmp(p->id, q->id);
}

/* ---- label placement ------------------------------------------------------ */

static int boxes_overlap(const struct cat_box *a, const struct cat_box *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

struct cat_box cat_label_box(double x, double y, const char *text)
{
    /* text at baseline y, left-aligned at x: ascent 10 px, descent 3 px */
    return (struct cat_box){x, y - 10, x + LABEL_CHAR_W * (double)strlen(text), y + 3};
}

size_t cat_place_labels(struct cat_label *l, size_t n, struct cat_box area)
{
    size_t omitted = 0;
    for (size_t i = 0; i < n; i++) {
        double w = LABEL_CHAR_W * (double)strlen(l[i].text);
        l[i].placed = 0;
        /* two passes: first avoiding markers too, then labels only */
        for (int pass = 0; pass < 2 && !l[i].placed; pass++) {
            for (int k = 0; k < 4 * 12 && !l[i].placed; k++) {
                int step = k / 4, side = k % 4;
                double dx = side & 1 ? -7 - w : 7;
                double dy = side & 2 ? 14 + 13.0 * step : -5 - 13.0 * step;
                struct cat_box b = cat_label_box(l[i].px + dx, l[i].py + dy, l[i].text);
                if (b.x0 < area.x0 || b.x1 > area.x1 || b.y0 < area.y0 || b.y1 > area.y1) continue;
                int clash = 0;
                for (size_t j = 0; j < i && !clash; j++) clash = l[j].placed && boxes_overlap(&b, &l[j].box);
                for (size_t j = 0; j < n && !clash && pass == 0; j++) {
                    struct cat_box m = {l[j].px - 5, l[j].py - 5, l[j].px + 5, l[j].py + 5};
                    clash = boxes_overlap(&b, &m);
                }
                if (clash) continue;
                l[i].placed = 1;
                l[i].x = b.x0;
                l[i].y = l[i].py + dy;
                l[i].box = b;
                l[i].leader = step > 0;
            }
        }
        omitted += !l[i].placed;
    }
    return omitted;
}

char *cat_pareto_svg(const cJSON *m, const char *task, const char *axis, trn_err *err)
{
    int by_macs = !strcmp(axis, "macs");
    if (!by_macs && strcmp(axis, "weight_bytes")) {
        trn_errf(err, "unknown plot axis '%s'", axis);
        return NULL;
    }
    const cJSON *variants = cJSON_GetObjectItemCaseSensitive(m, "variants");
    const cJSON *winnowed = cJSON_GetObjectItemCaseSensitive(m, "winnowed");
    size_t cap = (size_t)cJSON_GetArraySize(variants) + (size_t)cJSON_GetArraySize(winnowed) + 1, n = 0;
    struct point *pts = calloc(cap, sizeof *pts);
    if (!pts) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, variants) {
        double y = top1(v, task);
        if (y < 0 || strcmp(sget(v, "task"), task)) continue;
        pts[n++] = (struct point){sget(v, "id"), sget(v, "technique"), variant_cost(v, by_macs), y, 0};
    }
    cJSON_ArrayForEach(v, winnowed) {
        if (strcmp(sget(v, "task"), task)) continue;
        pts[n++] = (struct point){sget(v, "id"), sget(v, "technique"), num(v, by_macs ? "macs" : "weight_bytes"),
                                  num(v, "top1"), 1};
    }
    qsort(pts, n, sizeof *pts, cmp_point_x);
    double x0 = INFINITY, x1 = -INFINITY, y0 = 1, y1 = 0;
    for (size_t i = 0; i < n; i++) {
        double lx = log10(fmax(pts[i].x, 1));
        x0 = fmin(x0, lx), x1 = fmax(x1, lx);
        y0 = fmin(y0, pts[i].y), y1 = fmax(y1, pts[i].y);
    }
    /* The capacities of the kept multi-capacity variants (their curve is
     * drawn against the independent variants' points). */
    int curves = 0;
    cJSON_ArrayForEach(v, variants) {
        if (strcmp(sget(v, "task"), task) || strcmp(sget(v, "technique"), TECHNIQUE_NESTED)) continue;
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "technique_fields"),
                                                               "capacities")) {
            double y = cap_top1(c), x = num(c, by_macs ? "macs" : "weight_bytes");
            if (y < 0 || x < 0) continue;
            double lx = log10(fmax(x, 1));
            x0 = fmin(x0, lx), x1 = fmax(x1, lx);
            y0 = fmin(y0, y), y1 = fmax(y1, y);
            curves++;
        }
    }
    /* The alpha sweeps of the kept early-exit variants (by MACs only: their
     * weight bytes do not change with alpha). */
    int sweeps = 0;
    cJSON_ArrayForEach(v, variants) {
        if (!by_macs || strcmp(sget(v, "task"), task) || !alpha_profile(v)) continue;
        const cJSON *p;
        cJSON_ArrayForEach(p, alpha_profile(v)) {
            double y = num(p, "top1"), x = num(p, "expected_macs");
            if (y < 0 || x < 0) continue;
            double lx = log10(fmax(x, 1));
            x0 = fmin(x0, lx), x1 = fmax(x1, lx);
            y0 = fmin(y0, y), y1 = fmax(y1, y);
            sweeps++;
        }
    }
    if (n == 0 && curves == 0 && sweeps == 0) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    x0 = floor(x0 - 0.15), x1 = ceil(x1 + 0.15);
    y0 = fmax(0, floor(y0 * 10 - 0.5) / 10), y1 = fmin(1, ceil(y1 * 10 + 0.5) / 10);
    if (y1 <= y0) y1 = fmin(1, y0 + 0.1), y0 = y1 - 0.1;
    double pw = W - ML - MR, ph = H - MT - MB;
#define PX(lx) (ML + ((lx) - x0) / (x1 - x0) * pw)
#define PY(y) (MT + (1 - ((y) - y0) / (y1 - y0)) * ph)
    struct sbuf b = {0};
    sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
              W, H, W, H, W, H);
    sb_printf(&b, "<text x=\"%d\" y=\"24\" font-size=\"14\">", ML);
    sb_xml(&b, sget(m, "catalog"));
    sb_printf(&b, " version %.0f: top-1 (", num(m, "version"));
    sb_xml(&b, task);
    sb_printf(&b, ") against %s</text>\n", by_macs ? "MACs" : "weight bytes");
    /* grid and ticks */
    for (int d = (int)x0; d <= (int)x1; d++) {
        for (int k = 1; k <= (d < (int)x1 ? 5 : 1); k += k == 1 ? 1 : 3) {
            double lx = d + log10(k);
            sb_printf(&b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#%s\"/>\n", PX(lx), MT, PX(lx),
                      H - MB, k == 1 ? "dddddd" : "f0f0f0");
            char t[16];
            human(pow(10, lx), t, sizeof t);
            if (k == 1) sb_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", PX(lx), H - MB + 20, t);
        }
    }
    double step = y1 - y0 > 0.3 ? 0.1 : 0.05;
    for (double y = y0; y <= y1 + 1e-9; y += step) {
        sb_printf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", ML, PY(y), W - MR, PY(y));
        sb_printf(&b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", ML - 6, PY(y) + 4, y);
    }
    sb_printf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", ML, MT, pw, ph);
    sb_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s (log scale)</text>\n", ML + pw / 2, H - 20,
              by_macs ? "multiply-accumulates per image" : "weight bytes (float32)");
    sb_printf(&b, "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">top-1 accuracy</text>\n",
              MT + ph / 2);
    /* Pareto front of the kept variants */
    sb_printf(&b, "<polyline fill=\"none\" stroke=\"#444444\" stroke-dasharray=\"4 3\" points=\"");
    double best = -1;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].winnowed || pts[i].y <= best) continue;
        best = pts[i].y;
        sb_printf(&b, "%.1f,%.1f ", PX(log10(fmax(pts[i].x, 1))), PY(pts[i].y));
    }
    sb_printf(&b, "\"/>\n");
    /* Capacity curves: one solid line per multi-capacity variant through its
     * capacities, smallest first, small markers on it. */
    cJSON_ArrayForEach(v, variants) {
        if (strcmp(sget(v, "task"), task) || strcmp(sget(v, "technique"), TECHNIQUE_NESTED)) continue;
        const cJSON *caps = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "technique_fields"),
                                                             "capacities"), *c;
        sb_printf(&b, "<polyline class=\"capacities\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                  colour(TECHNIQUE_NESTED));
        cJSON_ArrayForEach(c, caps) {
            double y = cap_top1(c), x = num(c, by_macs ? "macs" : "weight_bytes");
            if (y >= 0 && x >= 0) sb_printf(&b, "%.1f,%.1f ", PX(log10(fmax(x, 1))), PY(y));
        }
        sb_printf(&b, "\"/>\n");
        cJSON_ArrayForEach(c, caps) {
            double y = cap_top1(c), x = num(c, by_macs ? "macs" : "weight_bytes");
            if (y >= 0 && x >= 0)
                sb_printf(&b, "<circle class=\"capacity\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                          PX(log10(fmax(x, 1))), PY(y), colour(TECHNIQUE_NESTED));
        }
    }
    /* Alpha sweeps: one dashed line per early-exit variant through its alpha
     * profile (accuracy against expected MACs, in the profile's order), a
     * small marker and the alpha's value at each point. */
    cJSON_ArrayForEach(v, variants) {
        if (!by_macs || strcmp(sget(v, "task"), task) || !alpha_profile(v)) continue;
        const cJSON *p;
        sb_printf(&b, "<polyline class=\"alpha-sweep\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
                      "stroke-dasharray=\"2 2\" points=\"", colour(TECHNIQUE_EARLY_EXIT));
        cJSON_ArrayForEach(p, alpha_profile(v)) {
            double y = num(p, "top1"), x = num(p, "expected_macs");
            if (y >= 0 && x >= 0) sb_printf(&b, "%.1f,%.1f ", PX(log10(fmax(x, 1))), PY(y));
        }
        sb_printf(&b, "\"/>\n");
        cJSON_ArrayForEach(p, alpha_profile(v)) {
            double y = num(p, "top1"), x = num(p, "expected_macs");
            if (y < 0 || x < 0) continue;
            sb_printf(&b, "<circle class=\"alpha\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>"
                          "<text class=\"alpha-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"9\" fill=\"%s\">%g</text>\n",
                      PX(log10(fmax(x, 1))), PY(y), colour(TECHNIQUE_EARLY_EXIT), PX(log10(fmax(x, 1))) + 3, PY(y) + 11,
                      colour(TECHNIQUE_EARLY_EXIT), num(p, "alpha"));
        }
    }
    struct cat_label *labels = calloc(n + 1, sizeof *labels);
    if (!labels) b.failed = 1;
    for (size_t i = 0; i < n && labels; i++) {
        double px = PX(log10(fmax(pts[i].x, 1))), py = PY(pts[i].y);
        if (pts[i].winnowed)
            sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"none\" stroke=\"#999999\"/>\n", px, py);
        else
            sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/>\n", px, py, colour(pts[i].technique));
        labels[i] = (struct cat_label){.text = pts[i].id, .px = px, .py = py};
    }
    size_t omitted = labels ? cat_place_labels(labels, n, (struct cat_box){ML + 2, MT + 2, W - MR - 2, H - MB - 2}) : 0;
    for (size_t i = 0; i < n && labels; i++) {
        if (!labels[i].placed) continue;
        const char *fill = pts[i].winnowed ? "#999999" : "#222222";
        if (labels[i].leader) {
            double lx = labels[i].x < labels[i].px ? labels[i].box.x1 : labels[i].box.x0;
            double ly = labels[i].y < labels[i].py ? labels[i].box.y1 : labels[i].box.y0;
            sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#bbbbbb\"/>\n", labels[i].px,
                      labels[i].py, lx, ly);
        }
        sb_printf(&b, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\">", labels[i].x, labels[i].y, fill);
        sb_xml(&b, pts[i].id);
        sb_printf(&b, "</text>\n");
    }
    free(labels);
    if (omitted)
        sb_printf(&b, "<text x=\"%d\" y=\"%d\" fill=\"#666666\">%zu label%s left out (no free space): see the table</text>\n",
                  8, H - 4, omitted, omitted == 1 ? "" : "s");
    /* legend: the techniques present, then the winnowed marker */
    int row = 0;
    for (size_t t = 0; t < NTECHNIQUES; t++) {
        int present = 0;
        for (size_t i = 0; i < n; i++) present |= !pts[i].winnowed && !strcmp(pts[i].technique, techniques[t].name);
        if (!present) continue;
        double ly = MT + 10 + 16 * row++;
        sb_printf(&b, "<circle cx=\"%d\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/><text x=\"%d\" y=\"%.1f\">%s</text>\n",
                  W - MR + 16, ly, techniques[t].colour, W - MR + 26, ly + 4, techniques[t].name);
    }
    double ly = MT + 10 + 16 * row;
    sb_printf(&b, "<circle cx=\"%d\" cy=\"%.1f\" r=\"4.5\" fill=\"none\" stroke=\"#999999\"/><text x=\"%d\" y=\"%.1f\">"
                  "winnowed</text>\n", W - MR + 16, ly, W - MR + 26, ly + 4);
    if (curves) {
        ly += 16;
        sb_printf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\"/>"
                      "<text x=\"%d\" y=\"%.1f\">capacities</text>\n",
                  W - MR + 10, ly, W - MR + 22, ly, colour(TECHNIQUE_NESTED), W - MR + 26, ly + 4);
    }
    if (sweeps) {
        ly += 16;
        sb_printf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"1.5\" "
                      "stroke-dasharray=\"2 2\"/><text x=\"%d\" y=\"%.1f\">alpha sweep</text>\n",
                  W - MR + 10, ly, W - MR + 22, ly, colour(TECHNIQUE_EARLY_EXIT), W - MR + 26, ly + 4);
    }
    sb_printf(&b, "</svg>\n");
#undef PX
#undef PY
    free(pts);
    if (b.failed) {
        free(b.s);
        trn_errf(err, "out of memory");
        return NULL;
    }
    return b.s;
}

/* ---- training curves ------------------------------------------------------- */

struct curve_row {
    double batch, loss, top1, lo, hi;
    int val;
};

char *cat_curve_svg(const char *id, const char *jsonl, size_t len, trn_err *err)
{
    size_t cap = 64, n = 0;
    struct curve_row *r = malloc(cap * sizeof *r);
    if (!r) {
        trn_errf(err, "out of memory");
        return NULL;
    }
    for (size_t at = 0, line = 1; at < len; line++) {
        const char *nl = memchr(jsonl + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - jsonl) : len;
        cJSON *o = end > at ? cat_json_parse(jsonl + at, end - at, NULL) : NULL;
        at = end + 1;
        if (!o) continue; /* a torn last line of an interrupted run */
        if (n == cap) {
            struct curve_row *g = realloc(r, (cap *= 2) * sizeof *r);
            if (!g) {
                cJSON_Delete(o);
                free(r);
                trn_errf(err, "out of memory");
                return NULL;
            }
            r = g;
        }
        double b = num(o, "batch"), loss = num(o, "avg_loss");
        if (b >= 0 && loss >= 0) {
            /* a resumed run appends: keep the rows in increasing batch order */
            while (n > 0 && r[n - 1].batch >= b) n--;
            r[n++] = (struct curve_row){b, loss, num(o, "val_top1"), num(o, "val_lo"), num(o, "val_hi"),
                                        cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "val_top1"))};
        }
        cJSON_Delete(o);
        (void)line;
    }
    if (n == 0) {
        free(r);
        trn_errf(err, "the metrics log of %s has no line with batch and avg_loss", id);
        return NULL;
    }
    double bmax = r[n - 1].batch, lmax = 0;
    for (size_t i = 0; i < n; i++) lmax = fmax(lmax, r[i].loss);
    lmax = lmax > 0 ? lmax * 1.05 : 1;
    const int cw = 560, ch = 300, l = 60, rm = 60, t = 40, bm = 44;
    double pw = cw - l - rm, ph = ch - t - bm;
#define CX(b) (l + (b) / fmax(bmax, 1) * pw)
#define CL(v) (t + (1 - (v) / lmax) * ph)
#define CT(v) (t + (1 - (v)) * ph)
    struct sbuf b = {0};
    sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
              cw, ch, cw, ch, cw, ch);
    sb_printf(&b, "<text x=\"%d\" y=\"20\" font-size=\"13\">training of ", l);
    sb_xml(&b, id);
    sb_printf(&b, "</text>\n<text x=\"%d\" y=\"34\" fill=\"#1f77b4\">running loss (left)</text>"
                  "<text x=\"%d\" y=\"34\" fill=\"#d62728\">validation top-1, 95%% interval (right)</text>\n",
              l, l + 130);
    for (int k = 0; k <= 4; k++) {
        double y = t + ph * k / 4;
        sb_printf(&b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eeeeee\"/>\n", l, y, l + pw, y);
        sb_printf(&b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#1f77b4\">%.3g</text>\n", l - 6, y + 4,
                  lmax * (4 - k) / 4);
        sb_printf(&b, "<text x=\"%.0f\" y=\"%.1f\" fill=\"#d62728\">%.2f</text>\n", l + pw + 6, y + 4, (4 - k) / 4.0);
        sb_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", l + pw * k / 4, ch - bm + 20,
                  bmax * k / 4);
    }
    sb_printf(&b, "<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", l, t, pw, ph);
    sb_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">weight update</text>\n", l + pw / 2, ch - 8);
    sb_printf(&b, "<polyline fill=\"none\" stroke=\"#1f77b4\" points=\"");
    /* at most about 400 points: every k-th row */
    size_t every = n / 400 + 1;
    for (size_t i = 0; i < n; i++)
        if (i % every == 0 || i == n - 1) sb_printf(&b, "%.1f,%.1f ", CX(r[i].batch), CL(r[i].loss));
    sb_printf(&b, "\"/>\n<polyline fill=\"none\" stroke=\"#d62728\" points=\"");
    for (size_t i = 0; i < n; i++)
        if (r[i].val) sb_printf(&b, "%.1f,%.1f ", CX(r[i].batch), CT(r[i].top1));
    sb_printf(&b, "\"/>\n");
    for (size_t i = 0; i < n; i++) {
        if (!r[i].val) continue;
        sb_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\"/>"
                      "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"#d62728\"/>\n",
                  CX(r[i].batch), CT(r[i].lo), CX(r[i].batch), CT(r[i].hi), CX(r[i].batch), CT(r[i].top1));
    }
    sb_printf(&b, "</svg>\n");
#undef CX
#undef CL
#undef CT
    free(r);
    if (b.failed) {
        free(b.s);
        trn_errf(err, "out of memory");
        return NULL;
    }
    return b.s;
}

/* ---- the document: Markdown and HTML side by side -------------------------- */

#define DOC_TOC_MAX 64

struct doc {
    struct sbuf md, html;
    int ntoc;                       /* the level-2 sections so far, for the contents */
    char toc_id[DOC_TOC_MAX][64], toc_title[DOC_TOC_MAX][160];
};

/* Inline markup of the report's sentences: `code` and **bold**, the rest
 * escaped for HTML. */
static void doc_text(struct doc *d, const char *s)
{
    sb_printf(&d->md, "%s", s);
    int code = 0, bold = 0;
    for (; *s; s++) {
        if (*s == '`') {
            sb_printf(&d->html, code ? "</code>" : "<code>");
            code = !code;
        } else if (s[0] == '*' && s[1] == '*') {
            sb_printf(&d->html, bold ? "</b>" : "<b>");
            bold = !bold;
            s++;
        } else {
            char c[2] = {*s, 0};
            sb_xml(&d->html, c);
        }
    }
}

static void doc_h(struct doc *d, int level, const char *fmt, ...) TRN_PRINTF(3, 4);
static void doc_h(struct doc *d, int level, const char *fmt, ...)
{
    char t[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    if (level == 2 && d->ntoc < DOC_TOC_MAX) { /* a section of the contents, with its anchor */
        int k = d->ntoc++;
        size_t tl = strlen(t) < sizeof d->toc_title[k] ? strlen(t) : sizeof d->toc_title[k] - 1;
        memcpy(d->toc_title[k], t, tl), d->toc_title[k][tl] = 0;
        snprintf(d->toc_id[k], sizeof d->toc_id[k], "s%d-", k + 1);
        size_t o = strlen(d->toc_id[k]);
        for (const char *c = t; *c && o + 1 < sizeof d->toc_id[k]; c++)
            if ((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9')) d->toc_id[k][o++] = *c;
            else if (*c >= 'A' && *c <= 'Z') d->toc_id[k][o++] = (char)(*c - 'A' + 'a');
            else if (o && d->toc_id[k][o - 1] != '-') d->toc_id[k][o++] = '-';
        d->toc_id[k][o] = 0;
        sb_printf(&d->md, "<a id=\"%s\"></a>\n\n", d->toc_id[k]);
        sb_printf(&d->html, "<h2 id=\"%s\">", d->toc_id[k]);
    } else {
        sb_printf(&d->html, "<h%d>", level);
    }
    sb_printf(&d->md, "%.*s %s\n\n", level, "######", t);
    sb_xml(&d->html, t);
    sb_printf(&d->html, "</h%d>\n", level);
}

/* The contents: a link to every level-2 section of body, appended to d. */
static void doc_toc(struct doc *d, const struct doc *body)
{
    sb_printf(&d->md, "Contents:\n\n");
    sb_printf(&d->html, "<nav id=\"contents\"><b>Contents</b>\n<ol>\n");
    for (int k = 0; k < body->ntoc; k++) {
        sb_printf(&d->md, "%d. [%s](#%s)\n", k + 1, body->toc_title[k], body->toc_id[k]);
        sb_printf(&d->html, "<li><a href=\"#%s\">", body->toc_id[k]);
        sb_xml(&d->html, body->toc_title[k]);
        sb_printf(&d->html, "</a></li>\n");
    }
    sb_printf(&d->md, "\n");
    sb_printf(&d->html, "</ol>\n</nav>\n");
}

static void doc_p(struct doc *d, const char *fmt, ...) TRN_PRINTF(2, 3);
static void doc_p(struct doc *d, const char *fmt, ...)
{
    char t[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    sb_printf(&d->html, "<p>");
    doc_text(d, t);
    sb_printf(&d->md, "\n\n");
    sb_printf(&d->html, "</p>\n");
}

/* A table row: cells separated by tabs; align: one 'l' or 'r' per column. */
static void doc_row(struct doc *d, int header, const char *align, const char *fmt, ...) TRN_PRINTF(4, 5);
static void doc_row(struct doc *d, int header, const char *align, const char *fmt, ...)
{
    char t[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    if (header) sb_printf(&d->html, "<table>\n");
    sb_printf(&d->md, "|");
    sb_printf(&d->html, "<tr>");
    int col = 0;
    for (char *c = t, *next; c; c = next, col++) {
        next = strchr(c, '\t');
        if (next) *next++ = '\0';
        int right = align[col] == 'r';
        sb_printf(&d->md, " %s |", c);
        sb_printf(&d->html, "<%s%s>", header ? "th" : "td", right ? " class=\"r\"" : "");
        sb_xml(&d->html, c);
        sb_printf(&d->html, "</%s>", header ? "th" : "td");
    }
    sb_printf(&d->md, "\n");
    sb_printf(&d->html, "</tr>\n");
    if (header) {
        sb_printf(&d->md, "|");
        for (int k = 0; k < col; k++) sb_printf(&d->md, "%s|", align[k] == 'r' ? "---:" : "---");
        sb_printf(&d->md, "\n");
    }
}

static void doc_table_end(struct doc *d)
{
    sb_printf(&d->md, "\n");
    sb_printf(&d->html, "</table>\n");
}

/* An image: a link to the SVG file in Markdown, the SVG inline in HTML. */
static void doc_svg(struct doc *d, const char *alt, const char *file, const char *svg)
{
    sb_printf(&d->md, "![%s](%s)\n\n", alt, file);
    const char *body = strstr(svg, "<svg");
    sb_printf(&d->html, "<figure>%s<figcaption>", body ? body : "");
    sb_xml(&d->html, alt);
    sb_printf(&d->html, "</figcaption></figure>\n");
}

static void fmt_est(const cJSON *e, char *out, size_t size)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "cpu");
    if (c)
        snprintf(out, size, "GPU >= %.3f ms, CPU >= %.3f ms; %.2f / %.2f mJ", num(e, "ms"), num(c, "ms"), num(e, "mj"),
                 num(c, "mj"));
    else
        snprintf(out, size, "GPU >= %.3f ms, CPU -; %.2f / - mJ", num(e, "ms"), num(e, "mj"));
}

/* "0.8569 [0.8380, 0.8741] n=1440": a fraction with its 95% Wilson interval. */
static void fmt_acc(const cJSON *acc, const char *key, char *out, size_t size)
{
    char k_ci[16];
    snprintf(k_ci, sizeof k_ci, "%s_ci", key);
    const cJSON *ci = cJSON_GetObjectItemCaseSensitive(acc, k_ci);
    if (num(acc, key) < 0) return;
    if (cJSON_GetArraySize(ci) == 2)
        snprintf(out, size, "%.4f [%.4f, %.4f] n=%.0f", num(acc, key), cJSON_GetArrayItem(ci, 0)->valuedouble,
                 cJSON_GetArrayItem(ci, 1)->valuedouble, num(acc, "images"));
    else
        snprintf(out, size, "%.4f n=%.0f", num(acc, key), num(acc, "images"));
}

static void doc_variants(struct doc *d, const cJSON *m, const char *task)
{
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(m, "targets"), *t, *v;
    char head[2048], align[64] = "lllrrrrrrr";
    int off = snprintf(head, sizeof head, "variant\ttechnique\tparent\ttop-1 [95%% CI] n\ttop-5 [95%% CI] n\tMACs\t"
                                          "params\tweight bytes\t"
                                          "peak activations\tmeasured ms (machine)");
    size_t na = strlen(align);
    cJSON_ArrayForEach(t, targets) {
        off += snprintf(head + off, sizeof head - (size_t)off, "\t%s roofline lower bound GPU / CPU: ms; mJ",
                        t->string);
        if (na + 1 < sizeof align) align[na++] = 'r', align[na] = '\0';
    }
    doc_row(d, 1, align, "%s", head);
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        if (strcmp(sget(v, "task"), task)) continue;
        const cJSON *cost = cJSON_GetObjectItemCaseSensitive(v, "cost");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), task);
        char c1[16], c1x[64], c2[16], c3[16], c4[16], t1[64] = "-", t5[64] = "-", ms[96] = "-", row[4096];
        human(num(cost, "macs"), c1, sizeof c1);
        snprintf(c1x, sizeof c1x, "%s", c1);
        if (alpha_profile(v) && variant_cost(v, 1) != num(cost, "macs")) {
            /* an early-exit variant: its expected MACs at alpha 1 first */
            char e1[16];
            human(variant_cost(v, 1), e1, sizeof e1);
            snprintf(c1x, sizeof c1x, "%s expected (trunk %s)", e1, c1);
        }
        human(num(cost, "params"), c2, sizeof c2);
        human(num(cost, "weight_bytes"), c3, sizeof c3);
        human(num(cost, "peak_activation_bytes"), c4, sizeof c4);
        fmt_acc(acc, "top1", t1, sizeof t1);
        fmt_acc(acc, "top5", t5, sizeof t5);
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(v, "latency");
        if (lat && lat->child)
            snprintf(ms, sizeof ms, "%.3f (%s)", num(lat->child, "ms_median"), lat->child->string);
        const char *parent = sget(v, "parent");
        int o = snprintf(row, sizeof row, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", sget(v, "id"), sget(v, "technique"),
                         parent[0] ? parent : "-", t1, t5, c1x, c2, c3, c4, ms);
        cJSON_ArrayForEach(t, targets) {
            char e[96];
            fmt_est(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "estimates"), t->string), e,
                    sizeof e);
            if (o > 0 && (size_t)o < sizeof row) o += snprintf(row + o, sizeof row - (size_t)o, "\t%s", e);
        }
        doc_row(d, 0, align, "%s", row);
    }
    doc_table_end(d);
}

/* A winnowing comparison (manifest.schema.json, paired_test) in a cell:
 * "-2.9 points vs smcd-8x, p = 0.0001 (McNemar, n=1440)". */
static void fmt_test(const cJSON *t, char *out, size_t size)
{
    if (!t) {
        snprintf(out, size, "-");
        return;
    }
    if (!strcmp(sget(t, "method"), "mcnemar-exact"))
        snprintf(out, size, "%+.1f points vs %s, p = %.2g (McNemar, n=%.0f): %s", 100 * num(t, "difference"),
                 sget(t, "against"), num(t, "p"), num(t, "images"), sget(t, "verdict"));
    else
        snprintf(out, size, "%+.1f points vs %s (95%% intervals, unpaired): %s", 100 * num(t, "difference"),
                 sget(t, "against"), sget(t, "verdict"));
}

/* Why winnowing kept each variant, with the comparison behind it. */
static void doc_decisions(struct doc *d, const cJSON *m)
{
    const cJSON *v, *c;
    int rows = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "winnowing");
        if (!w) continue;
        if (!rows++) {
            doc_p(d, "Why each variant was kept: against the best kept variant of its task at no more MACs and "
                     "weight bytes (the one that could have dominated it), the difference in top-1 and the "
                     "paired test on the same test images; a nested variant capacity by capacity.");
            doc_row(d, 1, "llll", "variant	task	kept because	comparison");
        }
        char t[256];
        fmt_test(cJSON_GetObjectItemCaseSensitive(w, "test"), t, sizeof t);
        doc_row(d, 0, "llll", "%s	%s	%s	%s", sget(v, "id"), sget(v, "task"), sget(w, "reason"), t);
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(w, "capacities")) {
            fmt_test(cJSON_GetObjectItemCaseSensitive(c, "test"), t, sizeof t);
            doc_row(d, 0, "llll", "%s capacity %.0f	%s	%s	%s", sget(v, "id"), num(c, "capacity"), sget(v, "task"),
                    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "on_front")) ? "on the front" : "off the front", t);
        }
    }
    if (rows) doc_table_end(d);
}

/* The capacity curve of every multi-capacity (nested) variant of the task:
 * per capacity its accuracy (with its interval where the variant records
 * one), MACs, weight bytes and what switching to the next capacity up pages
 * in (NestDNN, issue 15); the independent variants are in the table above. */
static void doc_capacities(struct doc *d, const cJSON *m, const char *task)
{
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        if (strcmp(sget(v, "task"), task) || strcmp(sget(v, "technique"), TECHNIQUE_NESTED)) continue;
        const cJSON *caps = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(v, "technique_fields"), "capacities");
        int n = cJSON_GetArraySize(caps);
        if (n < 1) continue;
        doc_p(d, "Capacities of %s (one weights file, switched in place; smallest first):", sget(v, "id"));
        doc_row(d, 1, "rrrrrrl", "capacity\ttop-1 [95%% CI] n\tMACs\tweight bytes\tpage-in to the next\t"
                                  "page-out from the next\tPareto front (winnowing)");
        const cJSON *wc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "winnowing"),
                                                           "capacities");
        for (int k = 0; k < n; k++) {
            const cJSON *c = cJSON_GetArrayItem(caps, k), *test = cJSON_GetObjectItemCaseSensitive(c, "test");
            char t1[64] = "-", c1[16], c2[16], in[16] = "-", out[16] = "-", key[16];
            if (test && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(test, "lo")))
                snprintf(t1, sizeof t1, "%.4f [%.4f, %.4f] n=%.0f", num(test, "top1"), num(test, "lo"),
                         num(test, "hi"), num(test, "images"));
            else if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, "top1")))
                snprintf(t1, sizeof t1, "%.4f", num(c, "top1"));
            human(num(c, "macs"), c1, sizeof c1);
            human(num(c, "weight_bytes"), c2, sizeof c2);
            if (k + 1 < n) {
                const cJSON *next = cJSON_GetArrayItem(caps, k + 1);
                snprintf(key, sizeof key, "%d", (int)num(next, "capacity"));
                const cJSON *pi = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, "page_in_bytes"), key);
                if (cJSON_IsNumber(pi)) human(pi->valuedouble, in, sizeof in);
                snprintf(key, sizeof key, "%d", (int)num(c, "capacity"));
                const cJSON *po = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(next, "page_out_bytes"), key);
                if (cJSON_IsNumber(po)) human(po->valuedouble, out, sizeof out);
            }
            char front[300] = "-", t[256];
            const cJSON *f = cJSON_GetArrayItem(wc, k);
            if (f) {
                fmt_test(cJSON_GetObjectItemCaseSensitive(f, "test"), t, sizeof t);
                snprintf(front, sizeof front, "%s; %s",
                         cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "on_front")) ? "on" : "off", t);
            }
            doc_row(d, 0, "rrrrrrl", "%d\t%s\t%s\t%s\t%s\t%s\t%s", k + 1, t1, c1, c2, in, out, front);
        }
        doc_table_end(d);
    }
}

/* The alpha profile of every early-exit variant of the task (FlexDNN,
 * issues 16 and 41): per alpha (threshold = alpha x the lossless one) its
 * top-1 on the test split with its 95% Wilson interval and its paired test
 * against the trunk alone on the same images, its expected MACs per input,
 * the share answered at an early exit and each exit's share (trunk order,
 * the trunk's end last); then the knob's span: alpha 1's expected MACs over
 * those of the cheapest useful setting, useful read two ways (said in the
 * report): not clearly worse than the trunk alone (McNemar's exact test,
 * p < 0.05), and top-1 at most ALPHA_USEFUL_DROP (in points: _TEXT) below
 * the trunk alone's. */
#define ALPHA_USEFUL_DROP 0.02
#define ALPHA_USEFUL_DROP_TEXT "2"

/* Appends to out (size bytes, *used of them written) what fmt says; 0, or
 * -1 once out is full. */
static int buf_appendf(char *out, size_t size, size_t *used, const char *fmt, ...)
{
    if (*used >= size) return -1;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out + *used, size - *used, fmt, ap);
    va_end(ap);
    if (w < 0) return -1;
    *used += (size_t)w;
    return *used < size ? 0 : -1;
}

static void fmt_exit_rates(const cJSON *p, char *out, size_t size)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "exit_rates"), *e;
    size_t used = 0;
    out[0] = '\0';
    cJSON_ArrayForEach(e, r)
        if (!cJSON_IsNumber(e) || buf_appendf(out, size, &used, "%s%.1f", used ? " / " : "", 100 * e->valuedouble))
            break;
    if (!out[0]) snprintf(out, size, "-");
}

static void fmt_vs_trunk(const cJSON *p, char *out, size_t size)
{
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(p, "vs_trunk");
    if (num(vs, "mcnemar_p") < 0) {
        snprintf(out, size, "-");
        return;
    }
    snprintf(out, size, "%.0f/%.0f, p=%.2g%s", num(vs, "exit_model_only_right"), num(vs, "trunk_only_right"),
             num(vs, "mcnemar_p"), cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(vs, "clearly_worse")) ? " (worse)" : "");
}

/* The column header of the per-exit shares: "exit rates % (after layer
 * L1 / L2 / end)" from technique_fields.exits. */
static void fmt_exit_header(const cJSON *v, char *out, size_t size)
{
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "technique_fields"), "exits"),
                *e;
    size_t used = 0;
    out[0] = '\0';
    if (buf_appendf(out, size, &used, "exit rates %% (after layer ")) return;
    cJSON_ArrayForEach(e, ex)
        if (buf_appendf(out, size, &used, "%.0f / ", num(e, "layer"))) return;
    buf_appendf(out, size, &used, "end)");
}

/* The cheapest point of the profile that is useful (not clearly worse than
 * the trunk: by_test; else top-1 at least floor), and alpha 1's. */
static const cJSON *cheapest_useful(const cJSON *prof, int by_test, double floor, const cJSON **at1)
{
    const cJSON *p, *best = NULL;
    *at1 = NULL;
    cJSON_ArrayForEach(p, prof) {
        if (num(p, "alpha") == 1) *at1 = p;
        const cJSON *vs = cJSON_GetObjectItemCaseSensitive(p, "vs_trunk");
        int useful = by_test ? num(vs, "mcnemar_p") >= 0 &&
                                   !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(vs, "clearly_worse"))
                             : floor >= 0 && num(p, "top1") >= floor;
        if (useful && num(p, "expected_macs") > 0 &&
            (!best || num(p, "expected_macs") < num(best, "expected_macs")))
            best = p;
    }
    return best;
}

static void doc_alpha_span(struct doc *d, const cJSON *v, const cJSON *prof)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "technique_fields"),
                                                      "trunk_alone");
    double floor = num(t, "top1") >= 0 ? num(t, "top1") - ALPHA_USEFUL_DROP : -1;
    char part[2][256];
    for (int k = 0; k < 2; k++) {
        const cJSON *at1, *c = cheapest_useful(prof, k == 0, floor, &at1);
        const char *what = k == 0 ? "not clearly worse than the trunk alone (McNemar's exact test, p < 0.05)"
                                  : "top-1 at most " ALPHA_USEFUL_DROP_TEXT " points below the trunk alone's";
        char em[16], e1[16];
        if (!c || !at1 || num(at1, "expected_macs") <= 0) {
            snprintf(part[k], sizeof part[k], "%s: no setting with alpha 1 to compare", what);
            continue;
        }
        human(num(c, "expected_macs"), em, sizeof em);
        human(num(at1, "expected_macs"), e1, sizeof e1);
        snprintf(part[k], sizeof part[k], "%s: alpha %g at %s, %.2fx below alpha 1's %s", what, num(c, "alpha"), em,
                 num(at1, "expected_macs") / num(c, "expected_macs"), e1);
    }
    doc_p(d, "The knob's span, the cheapest useful setting against alpha 1; useful read as %s; read as %s.", part[0],
          part[1]);
}

static void doc_alphas(struct doc *d, const cJSON *m, const char *task)
{
    const cJSON *v, *p;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        if (strcmp(sget(v, "task"), task) || !alpha_profile(v)) continue;
        char tm[16], hdr[256];
        human(num(cJSON_GetObjectItemCaseSensitive(v, "cost"), "macs"), tm, sizeof tm);
        doc_p(d, "Alpha sweep of %s (exit threshold = alpha x the lossless one; the trunk alone: %s MACs; "
                 "the catalog places it at alpha 1; vs trunk: test images only the exit model / only the trunk "
                 "alone gets right, McNemar's exact p):", sget(v, "id"), tm);
        fmt_exit_header(v, hdr, sizeof hdr);
        doc_row(d, 1, "rrrrrr", "alpha\ttop-1 [95%% CI] n\tvs trunk\texpected MACs\tanswered at exits\t%s", hdr);
        cJSON_ArrayForEach(p, alpha_profile(v)) {
            char t1[64] = "-", em[16] = "-", sh[16] = "-", vs[64], rates[256];
            const cJSON *ci = cJSON_GetObjectItemCaseSensitive(p, "top1_ci");
            if (cJSON_GetArraySize(ci) == 2 && num(p, "test_images") > 0)
                snprintf(t1, sizeof t1, "%.4f [%.4f, %.4f] n=%.0f", num(p, "top1"),
                         cJSON_GetArrayItem(ci, 0)->valuedouble, cJSON_GetArrayItem(ci, 1)->valuedouble,
                         num(p, "test_images"));
            else if (num(p, "top1") >= 0)
                snprintf(t1, sizeof t1, "%.4f", num(p, "top1"));
            if (num(p, "expected_macs") >= 0) human(num(p, "expected_macs"), em, sizeof em);
            const cJSON *r = cJSON_GetObjectItemCaseSensitive(p, "exit_rates");
            int nr = cJSON_GetArraySize(r);
            if (nr > 0 && cJSON_IsNumber(cJSON_GetArrayItem(r, nr - 1)))
                snprintf(sh, sizeof sh, "%.1f%%", 100 * (1 - cJSON_GetArrayItem(r, nr - 1)->valuedouble));
            fmt_vs_trunk(p, vs, sizeof vs);
            fmt_exit_rates(p, rates, sizeof rates);
            doc_row(d, 0, "rrrrrr", "%g\t%s\t%s\t%s\t%s\t%s", num(p, "alpha"), t1, vs, em, sh, rates);
        }
        doc_table_end(d);
        doc_alpha_span(d, v, alpha_profile(v));
    }
}

/* MCDNN's Table 4 (issue 17): every specialised variant (a model retargeted
 * to an (n,p) context: n classes + "other", which falls through to its
 * cascade partner), from its technique_fields as `prune specialise` wrote
 * them: top-1 on the context's in-context test images, overall through the
 * cascade on the context's test stream, the generic partner alone on the
 * same images, the share sent on and the cascade's expected MACs. */
static void fmt_score(const cJSON *f, const char *key, int ci, char *out, size_t size)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(f, key);
    if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(a, "top1"))) {
        snprintf(out, size, "-");
        return;
    }
    if (ci)
        snprintf(out, size, "%.4f [%.4f, %.4f] n=%.0f", num(a, "top1"), num(a, "top1_lo"), num(a, "top1_hi"),
                 num(a, "images"));
    else
        snprintf(out, size, "%.4f", num(a, "top1"));
}

static void doc_contexts(struct doc *d, const cJSON *m)
{
    const cJSON *v;
    int rows = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        if (strcmp(sget(v, "technique"), TECHNIQUE_SPECIALISED)) continue;
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(v, "technique_fields");
        const cJSON *cx = cJSON_GetObjectItemCaseSensitive(f, "context"), *cc = cJSON_GetObjectItemCaseSensitive(f, "cascade");
        if (!rows++) {
            doc_h(d, 2, "Specialised contexts (MCDNN Table 4)");
            doc_p(d, "Each model specialised to an (n,p) context: its n classes and \"other\", which falls through to "
                     "its partner (the cascade). In context: the specialised model on the stream's in-context test "
                     "images (\"other\" is wrong); overall: the cascade on the whole test stream; the generic partner "
                     "alone on the same images; expected MACs per input of the cascade (95%% Wilson intervals).");
            doc_row(d, 1, "llrrrrrrrrr", "variant\tpartner (generic)\tn\tp\tin context [95%% CI] n\t"
                                         "generic in context\toverall (cascade) [95%% CI] n\tgeneric on the stream "
                                         "[95%% CI] n\tgain (points)\tsent on\texpected MACs");
        }
        char in[80], gin[32], ov[80], gen[80], gain[16] = "-", sent[16] = "-", em[16] = "-";
        fmt_score(f, "in_context", 1, in, sizeof in);
        fmt_score(f, "generic_in_context", 0, gin, sizeof gin);
        fmt_score(f, "overall", 1, ov, sizeof ov);
        fmt_score(f, "generic_on_stream", 1, gen, sizeof gen);
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(f, "overall"), *g = cJSON_GetObjectItemCaseSensitive(f, "generic_on_stream");
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "top1")) &&
            cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(g, "top1")))
            snprintf(gain, sizeof gain, "%+.1f", 100 * (num(o, "top1") - num(g, "top1")));
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cc, "sent_share")))
            snprintf(sent, sizeof sent, "%.0f%%", 100 * num(cc, "sent_share"));
        if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cc, "expected_macs"))) human(num(cc, "expected_macs"), em, sizeof em);
        doc_row(d, 0, "llrrrrrrrrr", "%s\t%s\t%.0f\t%g\t%s\t%s\t%s\t%s\t%s\t%s\t%s", sget(v, "id"), sget(cc, "partner"),
                num(cx, "n"), num(cx, "p"), in, gin, ov, gen, gain, sent, em);
    }
    if (rows) doc_table_end(d);
}

static int write_text(const char *path, const char *text, trn_err *err)
{
    return trn_write_file_atomic(path, text, strlen(text), err);
}

/* A context task: every variant of it is a specialised (n,p) model (each
 * representative context has a task of its own). */
static int context_task(const cJSON *m, const char *task)
{
    const cJSON *v;
    int n = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        if (strcmp(sget(v, "task"), task)) continue;
        if (strcmp(sget(v, "technique"), TECHNIQUE_SPECIALISED)) return 0;
        n++;
    }
    return n > 0;
}

/* The front of task by cost (cat_pareto's "macs", or a target's "cpu_ms"),
 * cheapest first; NULL when it has none. The caller deletes *doc. */
static const cJSON *front_of(const cJSON *m, const char *task, const char *target, const char *cost, cJSON **doc)
{
    trn_err e;
    const cJSON *f;
    *doc = cat_pareto(m, task, target, &e);
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(*doc, "fronts"))
        if (!strcmp(sget(f, "cost"), cost)) return cJSON_GetObjectItemCaseSensitive(f, "front");
    return NULL;
}

/* The answer first: per task the variants on its Pareto front (top-1
 * against MACs), and per target and latency budget the variant of the main
 * task to ship (the most accurate whose CPU roofline lower bound fits). */
static void doc_summary(struct doc *d, const cJSON *m, const char *main_task)
{
    static const double budgets[] = {1, 5, 10, 33, 100, -1};
    const cJSON *t, *e;
    doc_h(d, 2, "Summary: what to ship");
    doc_p(d, "Pareto front per task (top-1 against MACs, cheapest first: each more accurate than every cheaper one); "
             "the main task first, then the heads, then the contexts.");
    doc_row(d, 1, "lll", "task\tkind\tfront: variant (top-1, MACs)");
    char ctx[4096] = "";
    int nctx = 0;
    for (int pass = 0; pass < 2; pass++)
        cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, "tasks")) {
            int is_main = !strcmp(t->string, main_task), is_ctx = context_task(m, t->string);
            if ((pass == 0) != is_main) continue;
            cJSON *doc;
            const cJSON *f = front_of(m, t->string, NULL, "macs", &doc);
            char row[4096] = "";
            size_t o = 0;
            cJSON_ArrayForEach(e, f) {
                char c[16];
                human(num(e, "cost"), c, sizeof c);
                if (o < sizeof row)
                    o += (size_t)snprintf(row + o, sizeof row - o, "%s%s (%.4f, %s)", o ? ", " : "", sget(e, "id"),
                                          num(e, "top1"), c);
            }
            if (is_ctx) {
                size_t u = strlen(ctx);
                if (o && u < sizeof ctx) snprintf(ctx + u, sizeof ctx - u, "%s%s", u ? ", " : "", row);
                nctx++;
            } else {
                doc_row(d, 0, "lll", "%s\t%s\t%s", t->string, is_main ? "main" : "head", o ? row : "no measured top-1");
            }
            cJSON_Delete(doc);
        }
    if (nctx) doc_row(d, 0, "lll", "%d contexts\tcontext\t%s", nctx, ctx[0] ? ctx : "no measured top-1");
    doc_table_end(d);
    doc_p(d, "Variant of the main task (%s) to ship per target and latency budget: the most accurate whose CPU "
             "roofline estimate fits. The estimates are **lower bounds** (a real run takes longer): measure on the "
             "device (`rtl profile`) before relying on a budget.", main_task);
    char head[256] = "target (CPU)";
    char align[16] = "l";
    for (size_t k = 0; k < sizeof budgets / sizeof *budgets; k++) {
        size_t u = strlen(head);
        if (budgets[k] > 0) snprintf(head + u, sizeof head - u, "\t<= %g ms", budgets[k]);
        else snprintf(head + u, sizeof head - u, "\tno budget");
        align[k + 1] = 'l', align[k + 2] = 0;
    }
    doc_row(d, 1, align, "%s", head);
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, "targets")) {
        cJSON *doc;
        const cJSON *f = front_of(m, main_task, t->string, "cpu_ms", &doc);
        char row[2048];
        size_t o = (size_t)snprintf(row, sizeof row, "%s", t->string);
        for (size_t k = 0; k < sizeof budgets / sizeof *budgets; k++) {
            const cJSON *pick = NULL;
            cJSON_ArrayForEach(e, f) if (budgets[k] < 0 || num(e, "cost") <= budgets[k]) pick = e;
            if (o < sizeof row) {
                if (pick)
                    o += (size_t)snprintf(row + o, sizeof row - o, "\t%s (%.4f; >= %.3g ms)", sget(pick, "id"),
                                          num(pick, "top1"), num(pick, "cost"));
                else
                    o += (size_t)snprintf(row + o, sizeof row - o, "\tnone fits");
            }
        }
        doc_row(d, 0, align, "%s", row);
        cJSON_Delete(doc);
    }
    doc_table_end(d);
}

/* One task's section: its variants, capacities, alpha sweeps and plots
 * (plain plot names for the main task). */
static int doc_task(struct doc *d, const cJSON *m, const char *task, int plain, const char *base, const char *name,
                    trn_err *err)
{
    const cJSON *v, *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "tasks"), task);
    double lo = INFINITY, hi = 0, best = -1, best_macs = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        if (strcmp(sget(v, "task"), task)) continue;
        double macs = variant_cost(v, 1), y = top1(v, task);
        lo = fmin(lo, macs), hi = fmax(hi, macs);
        if (y > best || (y == best && macs < best_macs)) best = y, best_macs = macs;
    }
    if (hi == 0) return 0;
    doc_h(d, 2, "Task %s (%.0f classes%s)", task, num(t, "classes"), plain ? ", the main task" : "");
    doc_variants(d, m, task);
    doc_capacities(d, m, task);
    doc_alphas(d, m, task);
    if (best >= 0)
        doc_p(d, "MACs span %.1fx between the cheapest variant and the most accurate one (%.1fx across all).",
              best_macs / fmax(lo, 1), hi / fmax(lo, 1));
    else
        doc_p(d, "No variant has a measured top-1; MACs span %.1fx across all.", hi / fmax(lo, 1));
    static const char *const axes[] = {"macs", "weight_bytes"};
    int rc = 0;
    for (int a = 0; a < 2 && rc == 0; a++) {
        char path[4096], file[512];
        snprintf(file, sizeof file, "%s%s%s.pareto-%s.svg", name, plain ? "" : ".", plain ? "" : task,
                 a ? "bytes" : "macs");
        snprintf(path, sizeof path, "%.*s%s", (int)(name - base), base, file);
        char *svg = cat_pareto_svg(m, task, axes[a], err);
        rc = svg ? write_text(path, svg, err) : -1;
        if (svg) doc_svg(d, a ? "top-1 against weight bytes" : "top-1 against MACs", file, svg);
        free(svg);
    }
    return rc;
}

/* The context tasks folded: MCDNN's Table 4 of every specialised variant
 * and one plot of them all (top-1 on its context against MACs). */
static int doc_context_tasks(struct doc *d, const cJSON *m, const char *base, const char *name, trn_err *err)
{
    doc_contexts(d, m);
    cJSON *fold = cJSON_CreateObject(), *vs = cJSON_AddArrayToObject(fold, "variants");
    const cJSON *v;
    int n = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        const char *task = sget(v, "task");
        if (!context_task(m, task)) continue;
        cJSON *c = cJSON_Duplicate(v, 1), *acc = cJSON_CreateObject();
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), task);
        if (!c || !acc) {
            cJSON_Delete(c), cJSON_Delete(acc), cJSON_Delete(fold);
            return trn_errf(err, "out of memory");
        }
        cJSON_ReplaceItemInObjectCaseSensitive(c, "task", cJSON_CreateString("contexts"));
        if (a) cJSON_AddItemToObject(acc, "contexts", cJSON_Duplicate(a, 1));
        cJSON_ReplaceItemInObjectCaseSensitive(c, "accuracy", acc);
        cJSON_AddItemToArray(vs, c);
        n++;
    }
    int rc = 0;
    if (n) {
        char path[4096], file[512];
        snprintf(file, sizeof file, "%s.contexts.pareto-macs.svg", name);
        snprintf(path, sizeof path, "%.*s%s", (int)(name - base), base, file);
        char *svg = cat_pareto_svg(fold, "contexts", "macs", err);
        rc = svg ? write_text(path, svg, err) : -1;
        if (svg) doc_svg(d, "the context models: top-1 on their context against MACs", file, svg);
        free(svg);
    }
    cJSON_Delete(fold);
    return rc;
}

static const char html_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<link rel=\"icon\" href=\"data:,\">\n<title>%s</title>\n<style>\n"
    "body { font-family: sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }\n"
    "table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }\n"
    "th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; }\n"
    "th { background: #f4f4f4; } td.r, th.r { text-align: right; }\n"
    "figure { margin: 1em 0; } figcaption { color: #666; font-size: 13px; }\n"
    "code { background: #f4f4f4; padding: 0 2px; }\n"
    "</style>\n</head>\n<body>\n";

int cat_report(const cJSON *m, const char *base, trn_err *err)
{
    return cat_report_ex(m, base, NULL, err);
}

int cat_report_ex(const cJSON *m, const char *base, const char *metrics_dir, trn_err *err)
{
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(m, "tasks"), *t;
    const cJSON *variants = cJSON_GetObjectItemCaseSensitive(m, "variants"), *v;
    const char *name = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
    const cJSON *build = cJSON_GetObjectItemCaseSensitive(m, "build");
    struct doc d = {{0}, {0}, 0, {{0}}, {{0}}};
    char title[512], seed[32] = "unknown";
    snprintf(title, sizeof title, "Catalog %s, version %.0f (model %s)", sget(m, "catalog"), num(m, "version"),
             sget(m, "model"));
    sb_printf(&d.html, "%.*s", (int)(strstr(html_head, "%s") - html_head), html_head);
    sb_xml(&d.html, title);
    sb_printf(&d.html, "%s", strstr(html_head, "%s") + 2);
    doc_h(&d, 1, "%s", title);
    const cJSON *sj = cJSON_GetObjectItemCaseSensitive(build, "seed");
    if (cJSON_IsNumber(sj)) snprintf(seed, sizeof seed, "%.0f", sj->valuedouble);
    const char *gemm = sget(build, "gemm");
    doc_p(&d, "Built by %s (%s%s%s), seed %s, SOURCE_DATE_EPOCH %.0f. %d variants kept, %d winnowed.",
          sget(build, "toolchain"), sget(build, "compiler"), *gemm ? "; products: " : "", gemm, seed,
          num(build, "source_date_epoch"),
          cJSON_GetArraySize(variants), cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "winnowed")));
    /* the task with the most variants is the main one: it gets the plain
     * plot names and comes first, then the other tasks (heads), then the
     * context tasks folded into one table and one plot */
    int rc = 0, most = 0;
    const char *main_task = "";
    cJSON_ArrayForEach(t, tasks) {
        int count = 0;
        cJSON_ArrayForEach(v, variants) count += !strcmp(sget(v, "task"), t->string);
        if (count > most) most = count, main_task = t->string;
    }
    struct doc b = {{0}, {0}, 0, {{0}}, {{0}}};
    doc_summary(&b, m, main_task);
    for (int pass = 0; pass < 2 && rc == 0; pass++)
        cJSON_ArrayForEach(t, tasks) {
            if ((pass == 0) != !strcmp(t->string, main_task) || context_task(m, t->string)) continue;
            rc = doc_task(&b, m, t->string, !strcmp(t->string, main_task), base, name, err);
            if (rc) break;
        }
    if (rc == 0) rc = doc_context_tasks(&b, m, base, name, err);
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "winnowed");
    doc_h(&b, 2, "Winnowed");
    doc_p(&b, "Dropped because another variant of the same task dominates it: no more MACs and no more weight bytes, "
              "and either a clearly better top-1 or fewer MACs or bytes at a top-1 that is not clearly worse. "
              "Clearly better or worse: McNemar's exact test on the same test images at the 5%% level (95%% Wilson "
              "intervals apart only where a variant has no per-image record). Decided cheapest first against kept "
              "variants; variants that others depend on, or kept by request, stay; a nested variant stays while "
              "any capacity is on the front.");
    if (cJSON_GetArraySize(w) == 0) doc_p(&b, "None.");
    else doc_row(&b, 1, "llrrrlrrrl", "variant\ttechnique\tMACs\tweight bytes\ttop-1\tdominated by\tits MACs\tits bytes\tits top-1\tcomparison");
    cJSON_ArrayForEach(v, w) {
        char a1[16], a2[16], b1[16], b2[16];
        human(num(v, "macs"), a1, sizeof a1);
        human(num(v, "weight_bytes"), a2, sizeof a2);
        human(num(v, "by_macs"), b1, sizeof b1);
        human(num(v, "by_weight_bytes"), b2, sizeof b2);
        char i1[48] = "", i2[48] = "";
        const cJSON *c1 = cJSON_GetObjectItemCaseSensitive(v, "top1_ci"), *c2 = cJSON_GetObjectItemCaseSensitive(v, "by_top1_ci");
        if (cJSON_GetArraySize(c1) == 2)
            snprintf(i1, sizeof i1, " [%.4f, %.4f]", cJSON_GetArrayItem(c1, 0)->valuedouble, cJSON_GetArrayItem(c1, 1)->valuedouble);
        if (cJSON_GetArraySize(c2) == 2)
            snprintf(i2, sizeof i2, " [%.4f, %.4f]", cJSON_GetArrayItem(c2, 0)->valuedouble, cJSON_GetArrayItem(c2, 1)->valuedouble);
        char tt[256];
        fmt_test(cJSON_GetObjectItemCaseSensitive(v, "test"), tt, sizeof tt);
        doc_row(&b, 0, "llrrrlrrrl", "%s\t%s\t%s\t%s\t%.4f%s\t%s\t%s\t%s\t%.4f%s\t%s", sget(v, "id"), sget(v, "technique"), a1,
                a2, num(v, "top1"), i1, sget(v, "dominated_by"), b1, b2, num(v, "by_top1"), i2, tt);
    }
    if (cJSON_GetArraySize(w) > 0) doc_table_end(&b);
    doc_decisions(&b, m);
    doc_h(&b, 2, "Target estimates");
    doc_p(&b, "The device columns above are **estimates**, not measurements: a roofline (time = max(2 x MACs / peak "
              "FLOPS, bytes moved / bandwidth), energy = time x the power mode's budget) from these profiles, once for "
              "the GPU's CUDA cores (the first figure) and once for the CPU cores (the second: the path the runtime "
              "takes today, since the CUDA backend is not written). Measure on the device (`rtl profile`) before "
              "relying on them.");
    doc_row(&b, 1, "llrlrrll", "target\tdevice\tGPU peak GFLOPS (FP32)\tCPU (the runtime's path today)\tCPU peak GFLOPS "
                               "(FP32)\tGB/s\tpower\tsources");
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, "targets")) {
        const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(t, "cpu"), *src;
        char srcs[2048] = "", cpu_peak[32] = "-";
        size_t o = 0;
        cJSON_ArrayForEach(src, cJSON_GetObjectItemCaseSensitive(t, "sources"))
            if (cJSON_IsString(src) && o < sizeof srcs)
                o += (size_t)snprintf(srcs + o, sizeof srcs - o, "%s; ", src->valuestring);
        if (cpu) snprintf(cpu_peak, sizeof cpu_peak, "%.1f", num(cpu, "peak_gflops"));
        doc_row(&b, 0, "llrlrrll", "%s\t%s (%s)\t%.1f\t%s\t%s\t%.1f\t%s, %.1f W\t%s", t->string, sget(t, "name"),
                cat_json_str(t, "compute_unit", "GPU"), num(t, "peak_gflops"),
                cpu ? cat_json_str(cpu, "compute_unit", "CPU") : "not modelled", cpu_peak,
                num(t, "memory_bandwidth_gbps"), sget(t, "power_mode"), num(t, "power_w"), srcs);
    }
    doc_table_end(&b);
    if (metrics_dir && rc == 0) {
        int curves = 0;
        /* kept variants, then winnowed ones: every trained model has a curve */
        for (const cJSON *list = variants; list && rc == 0;
             list = list == variants ? cJSON_GetObjectItemCaseSensitive(m, "winnowed") : NULL)
        cJSON_ArrayForEach(v, list) {
            char path[4096], file[512];
            snprintf(path, sizeof path, "%s/%s/train/variant.metrics.jsonl", metrics_dir, sget(v, "id"));
            char *log;
            size_t len;
            trn_err e2;
            if (trn_read_file(path, 256u << 20, &log, &len, &e2) != 0) continue;
            char *svg = cat_curve_svg(sget(v, "id"), log, len, &e2);
            free(log);
            if (!svg) continue;
            if (!curves++) {
                doc_h(&b, 2, "Training curves");
                doc_p(&b, "Running loss and validation top-1 (95%% Wilson interval) per weight update, from each "
                          "trained variant's metrics log (`trainer train`).");
            }
            snprintf(file, sizeof file, "%s.curve-%s.svg", name, sget(v, "id"));
            snprintf(path, sizeof path, "%.*s%s", (int)(name - base), base, file);
            char alt[256];
            snprintf(alt, sizeof alt, "training of %s", sget(v, "id"));
            rc = write_text(path, svg, err);
            doc_svg(&b, alt, file, svg);
            free(svg);
            if (rc) break;
        }
    }
    doc_toc(&d, &b);
    sb_printf(&d.md, "%s", b.md.s ? b.md.s : "");
    sb_printf(&d.html, "%s", b.html.s ? b.html.s : "");
    sb_printf(&d.html, "</body>\n</html>\n");
    if (d.md.failed || d.html.failed || b.md.failed || b.html.failed) rc = trn_errf(err, "out of memory");
    free(b.md.s);
    free(b.html.s);
    if (rc == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s.report.md", base);
        rc = write_text(path, d.md.s, err);
        snprintf(path, sizeof path, "%s.report.html", base);
        if (rc == 0) rc = write_text(path, d.html.s, err);
    }
    free(d.md.s);
    free(d.html.s);
    return rc;
}
