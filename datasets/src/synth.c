/*
 * synth.c: the embedded default data set, a synthetic image-classification
 * set drawn from a seed.
 *
 * Every image shows one main object on a cluttered background:
 *   identity  = shape (8) x colour (6) = 48 classes, e.g. "red-disc";
 *   shape     = the shape's family: round, angular, spiky, slender;
 *   colour    = the colour's group: warm, fresh, deep;
 *   size      = the object's scale band: small, medium, large;
 *   texture   = the object's surface: solid, striped, dotted, checked.
 * Identity, shape and colour go together (as identity, gender and race do
 * for faces); size and texture are drawn independently per image.
 * Nuisances: position, rotation, hue/saturation/value jitter, texture period
 * and angle, a gradient background with soft blobs and faint patterns, thin
 * lines, 0..clutter smaller distractor objects of random shape and colour
 * (one may lie in front), an occluding bar (probability `occlusion`), a
 * colour cast, contrast and brightness changes and per-pixel noise.
 *
 * Image `index` is a pure function of (options, index): its generator is
 * trn_rng_fork(seed, index), so bytes never depend on the thread count.
 * Indices run through train, then valid, then test; within a split, image j
 * belongs to identity class j % 48, so classes are balanced.
 */
#include "synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PI_F 3.14159265358979323846f

static const char *const family_names[] = {"round", "angular", "spiky", "slender"};
_Static_assert(sizeof family_names / sizeof family_names[0] == SYN_FAMILY_COUNT, "family names");

static const struct {
    const char *name;
    int family;
} shapes[] = {
    [SYN_SHAPE_DISC] = {"disc", SYN_FAMILY_ROUND},
    [SYN_SHAPE_RING] = {"ring", SYN_FAMILY_ROUND},
    [SYN_SHAPE_TRIANGLE] = {"triangle", SYN_FAMILY_ANGULAR},
    [SYN_SHAPE_SQUARE] = {"square", SYN_FAMILY_ANGULAR},
    [SYN_SHAPE_STAR] = {"star", SYN_FAMILY_SPIKY},
    [SYN_SHAPE_CROSS] = {"cross", SYN_FAMILY_SPIKY},
    [SYN_SHAPE_CRESCENT] = {"crescent", SYN_FAMILY_SLENDER},
    [SYN_SHAPE_CAPSULE] = {"capsule", SYN_FAMILY_SLENDER},
};
_Static_assert(sizeof shapes / sizeof shapes[0] == SYN_SHAPE_COUNT, "shape table");

static const char *const group_names[] = {"warm", "fresh", "deep"};
_Static_assert(sizeof group_names / sizeof group_names[0] == SYN_GROUP_COUNT, "group names");

/* Hue centres in degrees, 55-65 degrees apart; jitter is +-12. */
static const struct {
    const char *name;
    float hue;
    int group;
} colours[] = {
    [SYN_COLOUR_RED] = {"red", 0.0f, SYN_GROUP_WARM},
    [SYN_COLOUR_YELLOW] = {"yellow", 57.0f, SYN_GROUP_WARM},
    [SYN_COLOUR_GREEN] = {"green", 120.0f, SYN_GROUP_FRESH},
    [SYN_COLOUR_CYAN] = {"cyan", 183.0f, SYN_GROUP_FRESH},
    [SYN_COLOUR_BLUE] = {"blue", 238.0f, SYN_GROUP_DEEP},
    [SYN_COLOUR_MAGENTA] = {"magenta", 300.0f, SYN_GROUP_DEEP},
};
_Static_assert(sizeof colours / sizeof colours[0] == SYN_COLOUR_COUNT, "colour table");

/* Radius of the main object as a fraction of the image side; the bands
 * leave gaps so that the size task is learnable. */
static const struct {
    const char *name;
    float lo, hi;
} sizes[] = {
    [SYN_SIZE_SMALL] = {"small", 0.20f, 0.25f},
    [SYN_SIZE_MEDIUM] = {"medium", 0.28f, 0.33f},
    [SYN_SIZE_LARGE] = {"large", 0.36f, 0.42f},
};
_Static_assert(sizeof sizes / sizeof sizes[0] == SYN_SIZE_COUNT, "size table");

static const char *const texture_names[] = {"solid", "striped", "dotted", "checked"};
_Static_assert(sizeof texture_names / sizeof texture_names[0] == SYN_TEXTURE_COUNT, "texture names");

static const char *const task_names[] = {"identity", "shape", "colour", "size", "texture"};
_Static_assert(sizeof task_names / sizeof task_names[0] == DS_SYNTH_TASKS, "task names");

void ds_synth_defaults(ds_synth_opts *o)
{
    o->size = 32;
    o->train = 100;
    o->valid = 20;
    o->test = 30;
    o->seed = 1;
    o->clutter = 2;
    o->noise = 0.04f;
    o->occlusion = 0.2f;
    o->rotation = 30.0f;
}

int ds_synth_check(const ds_synth_opts *o, trn_err *err)
{
    if (o->size < 16 || o->size > 256)
        return trn_errf(err, "image size %d is out of range 16..256", o->size);
    if (o->train < 1 || o->train > 100000 || o->valid < 0 || o->valid > 100000 || o->test < 0 ||
        o->test > 100000)
        return trn_errf(err, "images per class (train %d, valid %d, test %d) out of range: train "
                        "1..100000, valid and test 0..100000", o->train, o->valid, o->test);
    if (o->clutter < 0 || o->clutter > 32)
        return trn_errf(err, "clutter %d is out of range 0..32", o->clutter);
    if (!(o->noise >= 0 && o->noise <= 0.5f))
        return trn_errf(err, "noise %g is out of range 0..0.5", o->noise);
    if (!(o->occlusion >= 0 && o->occlusion <= 1))
        return trn_errf(err, "occlusion %g is out of range 0..1", o->occlusion);
    if (!(o->rotation >= 0 && o->rotation <= 180))
        return trn_errf(err, "rotation %g is out of range 0..180 degrees", o->rotation);
    return 0;
}

size_t ds_synth_count(const ds_synth_opts *o)
{
    return (size_t)SYN_CLASSES * ((size_t)o->train + (size_t)o->valid + (size_t)o->test);
}

int ds_synth_tasks(ds_task tasks[DS_SYNTH_TASKS], trn_err *err)
{
    memset(tasks, 0, DS_SYNTH_TASKS * sizeof *tasks);
    static const int counts[] = {SYN_CLASSES, SYN_FAMILY_COUNT, SYN_GROUP_COUNT, SYN_SIZE_COUNT,
                                 SYN_TEXTURE_COUNT};
    _Static_assert(sizeof counts / sizeof counts[0] == DS_SYNTH_TASKS, "task class counts");
    for (int t = 0; t < DS_SYNTH_TASKS; t++)
        if (ds_task_init(&tasks[t], task_names[t], counts[t], err) != 0) goto fail;
    for (int c = 0; c < SYN_COLOUR_COUNT; c++)
        for (int s = 0; s < SYN_SHAPE_COUNT; s++) {
            char l[DS_LABEL_MAX + 1];
            snprintf(l, sizeof l, "%s-%s", colours[c].name, shapes[s].name);
            if (ds_task_set(&tasks[0], syn_class(c, s), l, err) != 0) goto fail;
        }
    for (int k = 0; k < SYN_FAMILY_COUNT; k++)
        if (ds_task_set(&tasks[1], k, family_names[k], err) != 0) goto fail;
    for (int k = 0; k < SYN_GROUP_COUNT; k++)
        if (ds_task_set(&tasks[2], k, group_names[k], err) != 0) goto fail;
    for (int k = 0; k < SYN_SIZE_COUNT; k++)
        if (ds_task_set(&tasks[3], k, sizes[k].name, err) != 0) goto fail;
    for (int k = 0; k < SYN_TEXTURE_COUNT; k++)
        if (ds_task_set(&tasks[4], k, texture_names[k], err) != 0) goto fail;
    return 0;
fail:
    for (int t = 0; t < DS_SYNTH_TASKS; t++) ds_task_free(&tasks[t]);
    return -1;
}

/* ---- drawing ---------------------------------------------------------------- */

static void hsv_rgb(float h, float s, float v, float rgb[3])
{
    h = fmodf(h, 360.0f);
    if (h < 0) h += 360.0f;
    float c = v * s, hp = h / 60.0f, x = c * (1.0f - fabsf(fmodf(hp, 2.0f) - 1.0f)), m = v - c;
    float r = 0, g = 0, b = 0;
    switch ((int)hp) {
    case 0: r = c; g = x; break;
    case 1: r = x; g = c; break;
    case 2: g = c; b = x; break;
    case 3: g = x; b = c; break;
    case 4: r = x; b = c; break;
    default: r = c; b = x; break;
    }
    rgb[0] = r + m;
    rgb[1] = g + m;
    rgb[2] = b + m;
}

/* Inside test of a unit shape (radius about 1) at local (u, v). */
static int shape_inside(int shape, float u, float v)
{
    float d2 = u * u + v * v;
    switch (shape) {
    case SYN_SHAPE_DISC: return d2 <= 0.81f;
    case SYN_SHAPE_RING: return d2 <= 0.9025f && d2 >= 0.25f;
    case SYN_SHAPE_TRIANGLE: {
        /* Equilateral, circumradius 1, inradius 0.5: three half-planes with
         * outward normals at -90, 30 and 150 degrees. */
        static const float n[3][2] = {{0.0f, -1.0f}, {0.8660254f, 0.5f}, {-0.8660254f, 0.5f}};
        for (int i = 0; i < 3; i++)
            if (u * n[i][0] + v * n[i][1] > 0.5f) return 0;
        return 1;
    }
    case SYN_SHAPE_SQUARE: return fabsf(u) <= 0.72f && fabsf(v) <= 0.72f;
    case SYN_SHAPE_STAR: {
        /* Five tips at radius 1, inner corners at 0.42. Fold the angle onto
         * the nearest tip, then test against the edge tip -> inner corner. */
        if (d2 > 1.0f) return 0;
        const float sector = 2.0f * PI_F / 5.0f;
        float a = atan2f(v, u) + PI_F * 2.5f; /* > 0, a tip points "up" */
        float g = fmodf(a, sector);
        float dlt = fminf(g, sector - g), rho = sqrtf(d2);
        float px = rho * cosf(dlt), py = rho * sinf(dlt);
        const float ix = 0.42f * 0.80901699f, iy = 0.42f * 0.58778525f; /* 0.42 at 36 deg */
        float ex = ix - 1.0f, ey = iy;
        /* The origin gives ex*0 - ey*(0-1) = ey > 0: inside is >= 0. */
        return ex * py - ey * (px - 1.0f) >= 0.0f;
    }
    case SYN_SHAPE_CROSS:
        return (fabsf(u) <= 0.28f && fabsf(v) <= 0.95f) || (fabsf(v) <= 0.28f && fabsf(u) <= 0.95f);
    case SYN_SHAPE_CRESCENT: {
        float du = u - 0.42f;
        return d2 <= 0.9025f && du * du + v * v >= 0.5625f;
    }
    case SYN_SHAPE_CAPSULE: {
        float cu = fminf(fmaxf(u, -0.6f), 0.6f), du = u - cu;
        return du * du + v * v <= 0.1444f;
    }
    default: return 0;
    }
}

/* A primitive placed in the image: a unit shape, a rotated rectangle (half
 * sizes a, b) or a segment (half length a, half width b). */
enum prim_kind { PRIM_SHAPE, PRIM_RECT, PRIM_SEGMENT, PRIM_COUNT };

typedef struct prim {
    int kind, shape;
    float cx, cy, ca, sa; /* centre, cos/sin of the rotation */
    float r;              /* scale of a unit shape */
    float a, b;
    float extent;         /* bounding radius in pixels */
} prim;

/* Surface colour: c1, or a two-tone texture of c1 and c2 in local pixel
 * coordinates, with a linear shading across the object. */
typedef struct paint {
    float c1[3], c2[3];
    int texture;
    float period, tca, tsa, pu, pv;
    float shade, sdx, sdy;
} paint;

static int prim_inside(const prim *p, float lu, float lv)
{
    switch (p->kind) {
    case PRIM_SHAPE: return shape_inside(p->shape, lu / p->r, lv / p->r);
    case PRIM_RECT: return fabsf(lu) <= p->a && fabsf(lv) <= p->b;
    case PRIM_SEGMENT: {
        float cu = fminf(fmaxf(lu, -p->a), p->a), du = lu - cu;
        return du * du + lv * lv <= p->b * p->b;
    }
    default: return 0;
    }
}

static void paint_at(const paint *pt, float lu, float lv, float extent, float out[3])
{
    float t = 0.0f;
    if (pt->texture != SYN_TEXTURE_SOLID) {
        float tu = (lu * pt->tca - lv * pt->tsa) / pt->period + pt->pu;
        float tv = (lu * pt->tsa + lv * pt->tca) / pt->period + pt->pv;
        switch (pt->texture) {
        case SYN_TEXTURE_STRIPED: t = tu - floorf(tu) < 0.5f; break;
        case SYN_TEXTURE_DOTTED: {
            float fu = tu - floorf(tu) - 0.5f, fv = tv - floorf(tv) - 0.5f;
            t = fu * fu + fv * fv < 0.09f; /* dot radius 0.3 periods */
            break;
        }
        case SYN_TEXTURE_CHECKED: t = ((int)floorf(tu) + (int)floorf(tv)) & 1; break;
        default: break;
        }
    }
    float light = 1.0f + pt->shade * (lu * pt->sdx + lv * pt->sdy) / (extent > 0 ? extent : 1);
    for (int k = 0; k < 3; k++) out[k] = (pt->c1[k] * (1 - t) + pt->c2[k] * t) * light;
}

/* Paints p with pt into img (size x size x 3 floats), 4x4 samples per
 * pixel for anti-aliased edges. */
static void draw(float *img, int size, const prim *p, const paint *pt)
{
    int x0 = (int)floorf(p->cx - p->extent), x1 = (int)ceilf(p->cx + p->extent);
    int y0 = (int)floorf(p->cy - p->extent), y1 = (int)ceilf(p->cy + p->extent);
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > size - 1) x1 = size - 1;
    if (y1 > size - 1) y1 = size - 1;
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            float acc[3] = {0, 0, 0};
            int cnt = 0;
            for (int sy = 0; sy < 4; sy++)
                for (int sx = 0; sx < 4; sx++) {
                    float dx = x + (sx + 0.5f) * 0.25f - p->cx, dy = y + (sy + 0.5f) * 0.25f - p->cy;
                    /* Rotate into the primitive's frame. */
                    float lu = dx * p->ca + dy * p->sa, lv = -dx * p->sa + dy * p->ca;
                    if (!prim_inside(p, lu, lv)) continue;
                    float c[3];
                    paint_at(pt, lu, lv, p->extent, c);
                    for (int k = 0; k < 3; k++) acc[k] += c[k];
                    cnt++;
                }
            if (!cnt) continue;
            float a = cnt / 16.0f, *px = img + ((size_t)y * size + x) * 3;
            for (int k = 0; k < 3; k++) px[k] = px[k] * (1 - a) + acc[k] / 16.0f;
        }
}

static void solid_paint(paint *pt, const float rgb[3])
{
    memset(pt, 0, sizeof *pt);
    memcpy(pt->c1, rgb, sizeof pt->c1);
    memcpy(pt->c2, rgb, sizeof pt->c2);
    pt->texture = SYN_TEXTURE_SOLID;
}

static void place(prim *p, int kind, float cx, float cy, float rot)
{
    p->kind = kind;
    p->cx = cx;
    p->cy = cy;
    p->ca = cosf(rot);
    p->sa = sinf(rot);
}

/* A background: two-colour gradient, soft blobs, maybe a faint pattern. */
static void draw_background(float *img, int size, trn_rng *g)
{
    float c0[3], c1[3];
    float h = trn_rng_range(g, 0, 360);
    hsv_rgb(h, trn_rng_range(g, 0, 0.3f), trn_rng_range(g, 0.25f, 0.85f), c0);
    hsv_rgb(h + 40.0f * trn_rng_normal(g), trn_rng_range(g, 0, 0.3f), trn_rng_range(g, 0.25f, 0.85f), c1);
    float ga = trn_rng_range(g, 0, 2 * PI_F), gc = cosf(ga), gs = sinf(ga);
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            float t = ((x - size * 0.5f) * gc + (y - size * 0.5f) * gs) / size + 0.5f;
            t = fminf(fmaxf(t, 0), 1);
            float *px = img + ((size_t)y * size + x) * 3;
            for (int k = 0; k < 3; k++) px[k] = c0[k] * (1 - t) + c1[k] * t;
        }
    int blobs = 1 + (int)trn_rng_below(g, 3);
    for (int b = 0; b < blobs; b++) {
        float bc[3];
        hsv_rgb(trn_rng_range(g, 0, 360), trn_rng_range(g, 0, 0.5f), trn_rng_range(g, 0.1f, 0.95f), bc);
        float bx = trn_rng_range(g, 0, size), by = trn_rng_range(g, 0, size);
        float br = size * trn_rng_range(g, 0.15f, 0.4f), amp = trn_rng_range(g, 0.3f, 0.6f);
        for (int y = 0; y < size; y++)
            for (int x = 0; x < size; x++) {
                float d2 = ((x - bx) * (x - bx) + (y - by) * (y - by)) / (br * br);
                float a = amp * expf(-d2);
                float *px = img + ((size_t)y * size + x) * 3;
                for (int k = 0; k < 3; k++) px[k] = px[k] * (1 - a) + bc[k] * a;
            }
    }
    if (trn_rng_uniform(g) < 0.3f) { /* a faint stripe or grid pattern */
        float period = size * trn_rng_range(g, 0.08f, 0.25f), amp = trn_rng_range(g, 0.02f, 0.06f);
        float pa = trn_rng_range(g, 0, PI_F), pc = cosf(pa), ps = sinf(pa);
        int grid = trn_rng_uniform(g) < 0.5f;
        for (int y = 0; y < size; y++)
            for (int x = 0; x < size; x++) {
                float tu = (x * pc + y * ps) / period, tv = (-x * ps + y * pc) / period;
                float s = tu - floorf(tu) < 0.5f ? 1.0f : -1.0f;
                if (grid) s *= tv - floorf(tv) < 0.5f ? 1.0f : -1.0f;
                float *px = img + ((size_t)y * size + x) * 3;
                for (int k = 0; k < 3; k++) px[k] += amp * s;
            }
    }
}

/* A distractor: a smaller object of any shape and colour. */
static void draw_distractor(float *img, int size, trn_rng *g)
{
    prim p;
    memset(&p, 0, sizeof p);
    p.shape = (int)trn_rng_below(g, SYN_SHAPE_COUNT);
    p.r = size * trn_rng_range(g, 0.05f, 0.09f);
    p.extent = p.r * 1.15f;
    place(&p, PRIM_SHAPE, trn_rng_range(g, 0, size), trn_rng_range(g, 0, size),
          trn_rng_range(g, 0, 2 * PI_F));
    float c[3];
    hsv_rgb(trn_rng_range(g, 0, 360), trn_rng_range(g, 0.25f, 1), trn_rng_range(g, 0.3f, 1), c);
    paint pt;
    solid_paint(&pt, c);
    draw(img, size, &p, &pt);
}

int ds_syn_render(const ds_synth_opts *o, const syn_labels *lab, trn_rng *g, float *img)
{
    int size = o->size;
    draw_background(img, size, g);

    /* Thin lines across the background. */
    int lines = (int)trn_rng_below(g, 2);
    for (int i = 0; i < lines; i++) {
        prim p;
        memset(&p, 0, sizeof p);
        p.a = size * trn_rng_range(g, 0.2f, 0.6f);
        p.b = trn_rng_range(g, 0.4f, 0.8f) * size / 32.0f;
        p.extent = p.a + p.b;
        place(&p, PRIM_SEGMENT, trn_rng_range(g, 0, size), trn_rng_range(g, 0, size),
              trn_rng_range(g, 0, PI_F));
        float c[3];
        hsv_rgb(trn_rng_range(g, 0, 360), trn_rng_range(g, 0.2f, 0.9f), trn_rng_range(g, 0.2f, 1), c);
        paint pt;
        solid_paint(&pt, c);
        draw(img, size, &p, &pt);
    }

    int nd = o->clutter ? (int)trn_rng_below(g, (uint64_t)o->clutter + 1) : 0;
    int front = nd > 0 && trn_rng_uniform(g) < 0.4f; /* the last one in front */
    for (int i = 0; i < nd - front; i++) draw_distractor(img, size, g);

    /* The main object. */
    prim m;
    memset(&m, 0, sizeof m);
    m.shape = lab->shape;
    m.r = size * trn_rng_range(g, sizes[lab->size].lo, sizes[lab->size].hi);
    m.extent = m.r * 1.15f;
    float lo = m.r * 0.75f, hi = size - m.r * 0.75f;
    float rot = o->rotation * (PI_F / 180.0f);
    place(&m, PRIM_SHAPE, trn_rng_range(g, lo, hi), trn_rng_range(g, lo, hi), trn_rng_range(g, -rot, rot));
    paint pt;
    memset(&pt, 0, sizeof pt);
    float hue = colours[lab->colour].hue + trn_rng_range(g, -12.0f, 12.0f);
    float sat = trn_rng_range(g, 0.6f, 1.0f), val = trn_rng_range(g, 0.55f, 1.0f);
    hsv_rgb(hue, sat, val, pt.c1);
    if (trn_rng_uniform(g) < 0.6f) /* darker second tone */
        hsv_rgb(hue, sat * 0.9f, val * trn_rng_range(g, 0.5f, 0.7f), pt.c2);
    else /* lighter second tone */
        hsv_rgb(hue, sat * 0.45f, fminf(1.0f, val + 0.25f), pt.c2);
    pt.texture = lab->texture;
    pt.period = size * trn_rng_range(g, 0.12f, 0.18f);
    float ta = trn_rng_range(g, 0, PI_F);
    pt.tca = cosf(ta);
    pt.tsa = sinf(ta);
    pt.pu = trn_rng_uniform(g);
    pt.pv = trn_rng_uniform(g);
    pt.shade = trn_rng_range(g, 0.0f, 0.25f);
    float sa = trn_rng_range(g, 0, 2 * PI_F);
    pt.sdx = cosf(sa);
    pt.sdy = sinf(sa);
    draw(img, size, &m, &pt);

    if (front) draw_distractor(img, size, g);

    /* An occluding bar across part of the object. */
    if (trn_rng_uniform(g) < o->occlusion) {
        prim p;
        memset(&p, 0, sizeof p);
        p.a = size * trn_rng_range(g, 0.12f, 0.3f);
        p.b = size * trn_rng_range(g, 0.03f, 0.07f);
        p.extent = sqrtf(p.a * p.a + p.b * p.b);
        float d = m.r * trn_rng_range(g, 0.6f, 1.1f), da = trn_rng_range(g, 0, 2 * PI_F);
        place(&p, PRIM_RECT, m.cx + d * cosf(da), m.cy + d * sinf(da), trn_rng_range(g, 0, PI_F));
        float c[3];
        hsv_rgb(trn_rng_range(g, 0, 360), trn_rng_range(g, 0, 0.6f), trn_rng_range(g, 0.1f, 0.9f), c);
        paint op;
        solid_paint(&op, c);
        draw(img, size, &p, &op);
    }

    /* Camera: colour cast, contrast, brightness, sensor noise. */
    float gain[3];
    for (int k = 0; k < 3; k++) gain[k] = trn_rng_range(g, 0.9f, 1.1f);
    float contrast = trn_rng_range(g, 0.75f, 1.2f), bright = trn_rng_range(g, -0.08f, 0.08f);
    float sigma = o->noise > 0 ? trn_rng_range(g, 0, o->noise) : 0;
    size_t n = (size_t)size * size;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            float v = (img[i * 3 + k] * gain[k] - 0.5f) * contrast + 0.5f + bright;
            if (sigma > 0) v += sigma * trn_rng_normal(g);
            img[i * 3 + k] = v;
        }
    return 0;
}

void ds_syn_labels_of(const ds_synth_opts *o, size_t index, trn_rng *g, syn_labels *lab)
{
    size_t per_train = (size_t)SYN_CLASSES * o->train, per_valid = (size_t)SYN_CLASSES * o->valid;
    size_t j;
    if (index < per_train) {
        lab->split = TRN_SPLIT_TRAIN;
        j = index;
    } else if (index < per_train + per_valid) {
        lab->split = TRN_SPLIT_VALID;
        j = index - per_train;
    } else {
        lab->split = TRN_SPLIT_TEST;
        j = index - per_train - per_valid;
    }
    lab->identity = (int)(j % SYN_CLASSES);
    lab->colour = lab->identity / SYN_SHAPE_COUNT;
    lab->shape = lab->identity % SYN_SHAPE_COUNT;
    lab->size = (int)trn_rng_below(g, SYN_SIZE_COUNT);
    lab->texture = (int)trn_rng_below(g, SYN_TEXTURE_COUNT);
}

int ds_synth_image(const ds_synth_opts *o, size_t index, trn_split *split,
                   int32_t labels[DS_SYNTH_TASKS], ds_pixels *out, trn_err *err)
{
    if (index >= ds_synth_count(o))
        return trn_errf(err, "image %zu is out of range: the set has %zu images", index, ds_synth_count(o));
    trn_rng master, g;
    trn_rng_seed(&master, o->seed);
    g = trn_rng_fork(&master, index);
    syn_labels lab;
    ds_syn_labels_of(o, index, &g, &lab);
    if (split) *split = (trn_split)lab.split;
    if (labels) {
        labels[0] = lab.identity;
        labels[1] = shapes[lab.shape].family;
        labels[2] = colours[lab.colour].group;
        labels[3] = lab.size;
        labels[4] = lab.texture;
    }
    if (!out) return 0;
    if (ds_pixels_reserve(out, o->size, o->size, 3, err) != 0) return -1;
    size_t n = (size_t)o->size * o->size * 3;
    float *img = malloc(n * sizeof *img);
    if (!img) return trn_errf(err, "out of memory for a %dx%d image", o->size, o->size);
    ds_syn_render(o, &lab, &g, img);
    for (size_t i = 0; i < n; i++) {
        float v = img[i] * 255.0f + 0.5f;
        out->data[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : (int)v);
    }
    free(img);
    return 0;
}

/* ---- the whole set ---------------------------------------------------------- */

struct synth_ctx {
    const ds_synth_opts *o;
};

static int synth_render_item(void *ctx, size_t i, ds_pixels *out, trn_err *err)
{
    const struct synth_ctx *c = ctx;
    return ds_synth_image(c->o, i, NULL, NULL, out, err);
}

int ds_synth_generate(const ds_synth_opts *o, const char *root, const char *name, int threads,
                      const ds_context_opts *contexts, ds_write_result *res, trn_err *err)
{
    if (ds_synth_check(o, err) != 0) return -1;
    size_t count = ds_synth_count(o);
    ds_task tasks[DS_SYNTH_TASKS];
    if (ds_synth_tasks(tasks, err) != 0) return -1;
    uint8_t *split = malloc(count);
    int32_t *cls = malloc(count * DS_SYNTH_TASKS * sizeof *cls);
    int rc = -1;
    if (!split || !cls) {
        trn_errf(err, "out of memory for %zu image labels", count);
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        trn_split sp;
        if (ds_synth_image(o, i, &sp, cls + i * DS_SYNTH_TASKS, NULL, err) != 0) goto done;
        split[i] = (uint8_t)sp;
    }
    char info[1024];
    snprintf(info, sizeof info,
             "generator = synth\nseed = %llu\nsize = %d\ntrain_per_class = %d\n"
             "valid_per_class = %d\ntest_per_class = %d\nclutter = %d\nnoise = %g\n"
             "occlusion = %g\nrotation = %g\n",
             (unsigned long long)o->seed, o->size, o->train, o->valid, o->test, o->clutter,
             (double)o->noise, (double)o->occlusion, (double)o->rotation);
    struct synth_ctx c = {o};
    ds_set_spec spec = {
        .root = root, .name = name, .ntasks = DS_SYNTH_TASKS, .tasks = tasks, .count = count,
        .split = split, .cls = cls, .render = synth_render_item, .ctx = &c, .threads = threads,
        .seed = o->seed, .contexts = contexts, .info = info,
    };
    rc = ds_set_write(&spec, res, err);
done:
    free(split);
    free(cls);
    for (int t = 0; t < DS_SYNTH_TASKS; t++) ds_task_free(&tasks[t]);
    return rc;
}
