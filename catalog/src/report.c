/*
 * report.c: the human side of a catalog: Pareto plots (SVG, written here)
 * and a Markdown summary, both generated from the manifest alone, so the
 * same catalog gives the same report bytes.
 *
 * Plot: x = MACs or weight bytes on a log scale, y = top-1 on the task's
 * test split; kept variants are filled dots coloured by technique, winnowed
 * ones hollow grey; the line is the Pareto front of the kept variants (each
 * point on it is more accurate than every cheaper one).
 */
#include "cat.h"

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

static const char *const techniques[] = {"base", "rewrite", "svd", "mimic", "nested", "early-exit", "trunk",
                                         "head", "specialised", "pruned"};
static const char *const colours[] = {"#000000", "#1f77b4", "#ff7f0e", "#8c564b", "#2ca02c", "#d62728",
                                      "#9467bd", "#e377c2", "#17becf", "#bcbd22"};
_Static_assert(sizeof techniques / sizeof techniques[0] == sizeof colours / sizeof colours[0], "one colour each");

static const char *colour(const char *technique)
{
    for (size_t i = 0; i < sizeof techniques / sizeof techniques[0]; i++)
        if (!strcmp(technique, techniques[i])) return colours[i];
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

static int cmp_point_x(const void *a, const void *b)
{
    const struct point *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    if (p->y != q->y) return p->y > q->y ? -1 : 1;
    return strcmp(p->id, q->id);
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
        const cJSON *cost = cJSON_GetObjectItemCaseSensitive(v, "cost");
        pts[n++] = (struct point){sget(v, "id"), sget(v, "technique"), num(cost, by_macs ? "macs" : "weight_bytes"), y, 0};
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
    if (n == 0) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
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
            if (k == 1) sb_printf(&b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", PX(lx), H - MB + 16, t);
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
    for (size_t i = 0; i < n; i++) {
        double px = PX(log10(fmax(pts[i].x, 1))), py = PY(pts[i].y);
        if (pts[i].winnowed)
            sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"none\" stroke=\"#999999\"/>\n", px, py);
        else
            sb_printf(&b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/>\n", px, py, colour(pts[i].technique));
        sb_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\">", px + 7, py - 5, pts[i].winnowed ? "#999999" : "#222222");
        sb_xml(&b, pts[i].id);
        sb_printf(&b, "</text>\n");
    }
    /* legend: the techniques present, then the winnowed marker */
    int row = 0;
    for (size_t t = 0; t < sizeof techniques / sizeof techniques[0]; t++) {
        int present = 0;
        for (size_t i = 0; i < n; i++) present |= !pts[i].winnowed && !strcmp(pts[i].technique, techniques[t]);
        if (!present) continue;
        double ly = MT + 10 + 16 * row++;
        sb_printf(&b, "<circle cx=\"%d\" cy=\"%.1f\" r=\"4.5\" fill=\"%s\"/><text x=\"%d\" y=\"%.1f\">%s</text>\n",
                  W - MR + 16, ly, colours[t], W - MR + 26, ly + 4, techniques[t]);
    }
    double ly = MT + 10 + 16 * row;
    sb_printf(&b, "<circle cx=\"%d\" cy=\"%.1f\" r=\"4.5\" fill=\"none\" stroke=\"#999999\"/><text x=\"%d\" y=\"%.1f\">"
                  "winnowed</text>\n", W - MR + 16, ly, W - MR + 26, ly + 4);
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

static void md_variants(struct sbuf *b, const cJSON *m, const char *task)
{
    const cJSON *targets = cJSON_GetObjectItemCaseSensitive(m, "targets"), *t, *v;
    sb_printf(b, "| variant | technique | parent | top-1 [95%% CI] n | top-5 [95%% CI] n | MACs | params | weight bytes | peak activations |"
                 " measured ms (machine) |");
    cJSON_ArrayForEach(t, targets) sb_printf(b, " %s est. ms / mJ |", t->string);
    sb_printf(b, "\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    cJSON_ArrayForEach(t, targets) sb_printf(b, "---:|");
    sb_printf(b, "\n");
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(m, "variants")) {
        if (strcmp(sget(v, "task"), task)) continue;
        const cJSON *cost = cJSON_GetObjectItemCaseSensitive(v, "cost");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "accuracy"), task);
        char c1[16], c2[16], c3[16], c4[16], t1[64] = "-", t5[64] = "-", ms[96] = "-";
        human(num(cost, "macs"), c1, sizeof c1);
        human(num(cost, "params"), c2, sizeof c2);
        human(num(cost, "weight_bytes"), c3, sizeof c3);
        human(num(cost, "peak_activation_bytes"), c4, sizeof c4);
        fmt_acc(acc, "top1", t1, sizeof t1);
        fmt_acc(acc, "top5", t5, sizeof t5);
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(v, "latency");
        if (lat && lat->child)
            snprintf(ms, sizeof ms, "%.3f (%s)", num(lat->child, "ms_median"), lat->child->string);
        const char *parent = sget(v, "parent");
        sb_printf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |", sget(v, "id"), sget(v, "technique"),
                  parent[0] ? parent : "-", t1, t5, c1, c2, c3, c4, ms);
        cJSON_ArrayForEach(t, targets) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "estimates"), t->string);
            sb_printf(b, " %.3f / %.2f |", num(e, "ms"), num(e, "mj"));
        }
        sb_printf(b, "\n");
    }
}

static int write_text(const char *path, const char *text, trn_err *err)
{
    return trn_write_file_atomic(path, text, strlen(text), err);
}

int cat_report(const cJSON *m, const char *base, trn_err *err)
{
    const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(m, "tasks"), *t;
    const cJSON *variants = cJSON_GetObjectItemCaseSensitive(m, "variants"), *v;
    const char *name = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
    const cJSON *build = cJSON_GetObjectItemCaseSensitive(m, "build");
    struct sbuf b = {0};
    sb_printf(&b, "# Catalog %s, version %.0f (model %s)\n\n", sget(m, "catalog"), num(m, "version"), sget(m, "model"));
    sb_printf(&b, "Built by %s (%s), seed %s, SOURCE_DATE_EPOCH %.0f. %d variants kept, %d winnowed.\n\n",
              sget(build, "toolchain"), sget(build, "compiler"),
              cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(build, "seed")) ? "given" : "unknown",
              num(build, "source_date_epoch"), cJSON_GetArraySize(variants),
              cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "winnowed")));
    /* the task with the most variants gets the plain plot names */
    int rc = 0, most = 0;
    const char *main_task = "";
    cJSON_ArrayForEach(t, tasks) {
        int count = 0;
        cJSON_ArrayForEach(v, variants) count += !strcmp(sget(v, "task"), t->string);
        if (count > most) most = count, main_task = t->string;
    }
    cJSON_ArrayForEach(t, tasks) {
        double lo = INFINITY, hi = 0, best = -1, best_macs = 0;
        cJSON_ArrayForEach(v, variants) {
            if (strcmp(sget(v, "task"), t->string)) continue;
            double macs = num(cJSON_GetObjectItemCaseSensitive(v, "cost"), "macs"), y = top1(v, t->string);
            lo = fmin(lo, macs), hi = fmax(hi, macs);
            if (y > best || (y == best && macs < best_macs)) best = y, best_macs = macs;
        }
        if (hi == 0) continue;
        sb_printf(&b, "## Task %s (%.0f classes)\n\n", t->string, num(t, "classes"));
        md_variants(&b, m, t->string);
        sb_printf(&b, "\nMACs span %.1fx between the cheapest variant and the most accurate one (%.1fx across all).\n\n",
                  best_macs / fmax(lo, 1), hi / fmax(lo, 1));
        static const char *const axes[] = {"macs", "weight_bytes"};
        for (int a = 0; a < 2 && rc == 0; a++) {
            char path[4096], file[512];
            int plain = !strcmp(t->string, main_task);
            snprintf(file, sizeof file, "%s%s%s.pareto-%s.svg", name, plain ? "" : ".", plain ? "" : t->string,
                     a ? "bytes" : "macs");
            snprintf(path, sizeof path, "%.*s%s", (int)(name - base), base, file);
            char *svg = cat_pareto_svg(m, t->string, axes[a], err);
            rc = svg ? write_text(path, svg, err) : -1;
            free(svg);
            sb_printf(&b, "![top-1 against %s](%s)\n\n", a ? "weight bytes" : "MACs", file);
        }
    }
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "winnowed");
    sb_printf(&b, "## Winnowed\n\nDropped because another variant of the same task dominates it: no more MACs and "
                  "no more weight bytes, and either a clearly better top-1 (95%% Wilson intervals apart) or fewer MACs "
                  "or bytes at a top-1 that is not clearly worse (decided cheapest first against kept variants; "
                  "variants that others depend on are kept).\n\n");
    if (cJSON_GetArraySize(w) == 0) sb_printf(&b, "None.\n\n");
    else sb_printf(&b, "| variant | technique | MACs | weight bytes | top-1 | dominated by | its MACs | its bytes | its top-1 |\n"
                       "|---|---|---:|---:|---:|---|---:|---:|---:|\n");
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
        sb_printf(&b, "| %s | %s | %s | %s | %.4f%s | %s | %s | %s | %.4f%s |\n", sget(v, "id"), sget(v, "technique"), a1,
                  a2, num(v, "top1"), i1, sget(v, "dominated_by"), b1, b2, num(v, "by_top1"), i2);
    }
    sb_printf(&b, "\n## Target estimates\n\nThe device columns above are **estimates**, not measurements: a roofline "
                  "(time = max(2 x MACs / peak FLOPS, bytes moved / bandwidth), energy = time x the power mode's "
                  "budget) from these profiles. Measure on the device (`rtl profile`) before relying on them.\n\n"
                  "| target | device | peak GFLOPS (FP32) | GB/s | power | sources |\n|---|---|---:|---:|---|---|\n");
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(m, "targets")) {
        sb_printf(&b, "| %s | %s | %.1f | %.1f | %s, %.1f W |", t->string, sget(t, "name"), num(t, "peak_gflops"),
                  num(t, "memory_bandwidth_gbps"), sget(t, "power_mode"), num(t, "power_w"));
        const cJSON *s;
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(t, "sources")) sb_printf(&b, " %s;", s->valuestring);
        sb_printf(&b, " |\n");
    }
    if (b.failed) rc = trn_errf(err, "out of memory");
    if (rc == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s.report.md", base);
        rc = write_text(path, b.s, err);
    }
    free(b.s);
    return rc;
}
