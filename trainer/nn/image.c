/*
 * image.c: decoding (PNG, JPEG, BMP through stb_image) and the deterministic
 * image operations of libtrn: resize, crop, flip, RGB<->HSV, distortion,
 * rotation, the affine crop used by augmentation, and the evaluation
 * preprocessing. Nothing here draws random numbers or knows about training,
 * so runtime-lite compiles this same file for `rtl run`.
 *
 * Images are float (c, h, w) in [0, 1]. The arithmetic follows Darknet's
 * src/image.c (resize_image, crop_image, rotate_crop_image, distort_image,
 * rgb_to_hsv, hsv_to_rgb, validate_classifier_single's resize_min + crop)
 * so the same image gives the same tensor; the few places where Darknet
 * divides by zero or reads out of bounds are defined here instead (see the
 * comments and trainer/README.md, section Data).
 * Decoding is in image_stb.c; runtime-lite compiles both files.
 */
#include "nn.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


/* ---- allocation -------------------------------------------------------- */

int trn_image_size_ok(long w, long h, long c)
{
    return w >= 1 && h >= 1 && c >= 1 && c <= 64 && w <= TRN_IMAGE_MAX_SIDE &&
           h <= TRN_IMAGE_MAX_SIDE && w * h <= TRN_IMAGE_MAX_PIXELS;
}

int trn_image_alloc(trn_image *im, int w, int h, int c, trn_err *err)
{
    memset(im, 0, sizeof *im);
    if (!trn_image_size_ok(w, h, c))
        return trn_errf(err, "image size %dx%dx%d is outside the limits (sides 1..%d, at most "
                        "%ld pixels, 1..64 channels)", w, h, c, TRN_IMAGE_MAX_SIDE,
                        (long)TRN_IMAGE_MAX_PIXELS);
    im->data = calloc((size_t)w * h * c, sizeof *im->data);
    if (!im->data)
        return trn_errf(err, "out of memory for a %dx%dx%d image", w, h, c);
    im->w = w;
    im->h = h;
    im->c = c;
    return 0;
}

void trn_image_free(trn_image *im)
{
    if (!im) return;
    free(im->data);
    memset(im, 0, sizeof *im);
}

/* ---- loading (decoding itself is in image_stb.c) ---------------------- */

int trn_image_load(const char *path, int channels, trn_image *out, trn_err *err)
{
    memset(out, 0, sizeof *out);
    char *buf;
    size_t len;
    if (trn_read_file(path, (size_t)TRN_IMAGE_MAX_FILE, &buf, &len, err) != 0) return -1;
    int rc = trn_image_decode(buf, len, path, channels, out, err);
    free(buf);
    return rc;
}

/* ---- resize, crop, flip -------------------------------------------------- */

/* One pass of Darknet's resize_image: the value of the resized row at
 * column x interpolated horizontally in source row `row` (xs is the float
 * scale, or 0 when the target has one column). Darknet takes the last source
 * column for the last target column; we also clamp ix + 1 so that rounding
 * can never read past the row (Darknet could). */
static inline float hsample(const float *row, int sw, int rw, float xs, int x)
{
    if (x == rw - 1 || sw == 1) return row[sw - 1];
    float sx = x * xs;
    int ix = (int)sx;
    if (ix > sw - 1) ix = sw - 1;
    float dx = sx - ix;
    int ix1 = ix + 1 < sw ? ix + 1 : sw - 1;
    return (1 - dx) * row[ix] + dx * row[ix1];
}

void trn_image_resize_region(const trn_image *src, int rw, int rh, int ox, int oy,
                             int out_w, int out_h, float *out)
{
    /* Darknet: w_scale = (im.w - 1) / (w - 1), which divides by zero for a
     * one-pixel target; we use scale 0 there (the first row for h, the last
     * column for w, as Darknet's special case for c == w - 1 gives). */
    float xs = rw > 1 ? (float)(src->w - 1) / (rw - 1) : 0.0f;
    float ys = rh > 1 ? (float)(src->h - 1) / (rh - 1) : 0.0f;
    size_t splane = (size_t)src->w * src->h, oplane = (size_t)out_w * out_h;
    for (int k = 0; k < src->c; k++) {
        const float *sp = src->data + k * splane;
        for (int y = 0; y < out_h; y++) {
            int r = y + oy;
            float sy = r * ys;
            int iy = (int)sy;
            if (iy > src->h - 1) iy = src->h - 1;
            float dy = sy - iy;
            int last = r == rh - 1 || src->h == 1;
            int iy1 = iy + 1 < src->h ? iy + 1 : src->h - 1;
            const float *r0 = sp + (size_t)iy * src->w, *r1 = sp + (size_t)iy1 * src->w;
            float *o = out + k * oplane + (size_t)y * out_w;
            for (int x = 0; x < out_w; x++) {
                /* The order of Darknet's sum: (1-dy)*part[iy], then += dy*part[iy+1]. */
                float v = (1 - dy) * hsample(r0, src->w, rw, xs, x + ox);
                if (!last) v += dy * hsample(r1, src->w, rw, xs, x + ox);
                o[x] = v;
            }
        }
    }
}

void trn_image_resize(const trn_image *src, trn_image *dst)
{
    trn_image_resize_region(src, dst->w, dst->h, 0, 0, dst->w, dst->h, dst->data);
}

void trn_image_crop(const trn_image *src, int dx, int dy, trn_image *dst)
{
    size_t splane = (size_t)src->w * src->h, dplane = (size_t)dst->w * dst->h;
    for (int k = 0; k < dst->c; k++) {
        for (int y = 0; y < dst->h; y++) {
            long r = (long)y + dy;
            r = r < 0 ? 0 : r >= src->h ? src->h - 1 : r;
            const float *row = src->data + k * splane + (size_t)r * src->w;
            float *o = dst->data + k * dplane + (size_t)y * dst->w;
            for (int x = 0; x < dst->w; x++) {
                long cx = (long)x + dx;
                cx = cx < 0 ? 0 : cx >= src->w ? src->w - 1 : cx;
                o[x] = row[cx];
            }
        }
    }
}

void trn_image_flip(trn_image *im)
{
    for (int k = 0; k < im->c; k++)
        for (int y = 0; y < im->h; y++) {
            float *row = im->data + ((size_t)k * im->h + y) * im->w;
            for (int x = 0; x < im->w / 2; x++) {
                float t = row[x];
                row[x] = row[im->w - 1 - x];
                row[im->w - 1 - x] = t;
            }
        }
}

/* floor() for a float known to be within the int range, without the libm
 * call that floorf compiles to on baseline x86-64. */
static inline int ifloor(float v)
{
    int i = (int)v;
    return v < (float)i ? i - 1 : i;
}

/* ---- colour -------------------------------------------------------------- */

/* Darknet's rgb_to_hsv for one pixel, except that a grey pixel (max == min)
 * gets hue 0 where Darknet computes 0/0 = NaN (harmless there only because
 * its saturation is 0). */
static inline void rgb2hsv(float r, float g, float b, float *h, float *s, float *v)
{
    float max = r > g ? (r > b ? r : b) : (g > b ? g : b);
    float min = r < g ? (r < b ? r : b) : (g < b ? g : b);
    float delta = max - min;
    *v = max;
    if (max == 0 || delta == 0) {
        *s = max == 0 ? 0 : delta / max;
        *h = 0;
        return;
    }
    *s = delta / max;
    float hh;
    if (r == max) hh = (g - b) / delta;
    else if (g == max) hh = 2 + (b - r) / delta;
    else hh = 4 + (r - g) / delta;
    if (hh < 0) hh += 6;
    *h = hh / 6.f;
}

/* Darknet's hsv_to_rgb for one pixel, except that hue 1.0 (sector 6, which
 * Darknet sends to its magenta branch) is sector 0, i.e. red, like hue 0. */
static inline void hsv2rgb(float h, float s, float v, float *r, float *g, float *b)
{
    if (s == 0) {
        *r = *g = *b = v;
        return;
    }
    h *= 6;
    if (!(h > -1e6f && h < 1e6f)) h = 0; /* NaN or absurd: treat as red */
    int index = ifloor(h);
    float f = h - index;
    if (index >= 6 || index < 0) index = 0;
    float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
    switch (index) {
    case 0: *r = v; *g = t; *b = p; break;
    case 1: *r = q; *g = v; *b = p; break;
    case 2: *r = p; *g = v; *b = t; break;
    case 3: *r = p; *g = q; *b = v; break;
    case 4: *r = t; *g = p; *b = v; break;
    default: *r = v; *g = p; *b = q; break;
    }
}

void trn_image_rgb_to_hsv(trn_image *im)
{
    if (im->c < 3) return;
    size_t n = (size_t)im->w * im->h;
    float *R = im->data, *G = R + n, *B = G + n;
    for (size_t i = 0; i < n; i++) rgb2hsv(R[i], G[i], B[i], &R[i], &G[i], &B[i]);
}

void trn_image_hsv_to_rgb(trn_image *im)
{
    if (im->c < 3) return;
    size_t n = (size_t)im->w * im->h;
    float *H = im->data, *S = H + n, *V = S + n;
    for (size_t i = 0; i < n; i++) hsv2rgb(H[i], S[i], V[i], &H[i], &S[i], &V[i]);
}

static inline float clamp01(float x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

void trn_image_distort(trn_image *im, float dhue, float dsat, float dexp)
{
    size_t n = (size_t)im->w * im->h;
    if (im->c < 3) {
        /* A grey pixel is r = g = b: saturation 0, hue irrelevant, value the
         * pixel itself, so only the exposure changes it. */
        for (size_t i = 0; i < n; i++) im->data[i] = clamp01(im->data[i] * dexp);
        return;
    }
    float *R = im->data, *G = R + n, *B = G + n;
    for (size_t i = 0; i < n; i++) {
        float h, s, v;
        rgb2hsv(R[i], G[i], B[i], &h, &s, &v);
        s *= dsat;
        v *= dexp;
        h += dhue;
        if (h > 1) h -= 1;
        if (h < 0) h += 1;
        hsv2rgb(h, s, v, &R[i], &G[i], &B[i]);
        R[i] = clamp01(R[i]);
        G[i] = clamp01(G[i]);
        B[i] = clamp01(B[i]);
    }
}

/* ---- rotation and the affine crop ---------------------------------------- */

/* Writes to out[k * oplane] (every channel k of one output pixel) the
 * bilinear sample of src at (x, y), zero outside the window [x0, x1) x
 * [y0, y1): Darknet's bilinear_interpolate with get_pixel_extend, its
 * weights grouped as its sum groups them ((1-dy)*(1-dx)*a + ...). Coordinates
 * far outside (or NaN) give 0 before any float-to-int conversion could
 * overflow. */
static inline void sample(const trn_image *src, int x0, int y0, int x1, int y1, float x, float y,
                          float *out, size_t oplane)
{
    if (!(x > x0 - 1 && x < x1 && y > y0 - 1 && y < y1)) {
        for (int k = 0; k < src->c; k++) out[k * oplane] = 0;
        return;
    }
    int ix = ifloor(x), iy = ifloor(y);
    float dx = x - ix, dy = y - iy;
    float wa = (1 - dy) * (1 - dx), wb = dy * (1 - dx), wc = (1 - dy) * dx, wd = dy * dx;
    int in_x0 = ix >= x0, in_x1 = ix + 1 < x1, in_y0 = iy >= y0, in_y1 = iy + 1 < y1;
    ptrdiff_t p = (ptrdiff_t)iy * src->w + ix;
    size_t splane = (size_t)src->w * src->h;
    for (int k = 0; k < src->c; k++) {
        const float *pl = src->data + k * splane;
        float pa = in_x0 && in_y0 ? pl[p] : 0;
        float pb = in_x0 && in_y1 ? pl[p + src->w] : 0;
        float pc = in_x1 && in_y0 ? pl[p + 1] : 0;
        float pd = in_x1 && in_y1 ? pl[p + src->w + 1] : 0;
        out[k * oplane] = wa * pa + wb * pb + wc * pc + wd * pd;
    }
}

void trn_affine_init(trn_affine *a, const trn_image *src)
{
    memset(a, 0, sizeof *a);
    a->scale = 1;
    a->aspect = 1;
    a->cx = src->w / 2.f;
    a->cy = src->h / 2.f;
    a->bx1 = src->w;
    a->by1 = src->h;
}

void trn_image_affine(const trn_image *src, const trn_affine *a, int w, int h, float *out)
{
    /* The window, intersected with the image. */
    int x0 = a->bx0 > 0 ? a->bx0 : 0, y0 = a->by0 > 0 ? a->by0 : 0;
    int x1 = a->bx1 < src->w ? a->bx1 : src->w, y1 = a->by1 < src->h ? a->by1 : src->h;
    size_t oplane = (size_t)w * h;
    if (x1 <= x0 || y1 <= y0) {
        memset(out, 0, oplane * src->c * sizeof *out);
        return;
    }
    /* Darknet's mix of double (cos(), the /2. constants) and float (dx / s
     * * aspect) arithmetic, kept term by term. The column term u is computed
     * once per block of columns rather than once per pixel. */
    double cr = cos(a->rad), sr = sin(a->rad);
    float s = a->scale, asp = a->aspect;
    float du = a->dx / s * asp, dv = a->dy / s;
    enum { BLOCK = 256 };
    double u[BLOCK];
    for (int xb = 0; xb < w; xb += BLOCK) {
        int n = w - xb < BLOCK ? w - xb : BLOCK;
        for (int i = 0; i < n; i++) u[i] = (xb + i - w / 2.) / s * asp + du;
        for (int y = 0; y < h; y++) {
            double v = (y - h / 2.) / s + dv;
            float *o = out + (size_t)y * w + xb;
            for (int i = 0; i < n; i++)
                sample(src, x0, y0, x1, y1, (float)(cr * u[i] - sr * v + a->cx),
                       (float)(sr * u[i] + cr * v + a->cy), o + i, oplane);
        }
    }
}

void trn_image_rotate(const trn_image *src, float rad, trn_image *dst)
{
    /* Darknet's rotate_image: the inverse rotation about (w/2, h/2). */
    double cr = cos(rad), sr = sin(rad);
    double cx = src->w / 2., cy = src->h / 2.;
    size_t plane = (size_t)src->w * src->h;
    for (int y = 0; y < src->h; y++)
        for (int x = 0; x < src->w; x++)
            sample(src, 0, 0, src->w, src->h, (float)(cr * (x - cx) - sr * (y - cy) + cx),
                   (float)(sr * (x - cx) + cr * (y - cy) + cy), dst->data + (size_t)y * src->w + x,
                   plane);
}

/* ---- evaluation preprocessing -------------------------------------------- */

void trn_image_eval_into(const trn_image *src, int w, int h, float *out)
{
    /* The smallest aspect-preserving size that covers w x h, with Darknet's
     * integer arithmetic: for a square network this is exactly
     * resize_min(im, w) (shorter side = w, the other side truncated). */
    long rw = w, rh = (long)src->h * w / src->w;
    if (rh < h) {
        rh = h;
        rw = (long)src->w * h / src->h;
        if (rw < w) rw = w;
    }
    /* Darknet's crop offsets: (resized - net) / 2, truncated. */
    int ox = (int)((rw - w) / 2), oy = (int)((rh - h) / 2);
    trn_image_resize_region(src, (int)rw, (int)rh, ox, oy, w, h, out);
}

int trn_image_load_input(const char *path, int w, int h, int c, float *out, trn_err *err)
{
    if (w < 1 || h < 1 || c < 1 || c > 4 || !trn_image_size_ok(w, h, c))
        return trn_errf(err, "%s: bad network input size %dx%dx%d (need sides 1..%d and 1..4 "
                        "channels)", path, w, h, c, TRN_IMAGE_MAX_SIDE);
    trn_image im;
    if (trn_image_load(path, c, &im, err) != 0) return -1;
    trn_image_eval_into(&im, w, h, out);
    trn_image_free(&im);
    return 0;
}
