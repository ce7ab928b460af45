/*
 * augment.c: random training augmentation with the semantics of Darknet's
 * classifier loader (data.c load_image_augment_paths -> image.c
 * random_augment_args, rotate_crop_image, flip_image,
 * random_distort_image), every random number drawn from the caller's trn_rng
 * in a fixed order, so one generator per sample makes the sample a pure
 * function of its seed.
 *
 * Per sample, in order (Darknet's order, plus jitter first):
 *   jitter   (only if jitter > 0) each side of a source window moves inwards
 *            or outwards by uniform(-jitter, jitter) * the image's width or
 *            height (Darknet's detection-loader jitter; its [net] section
 *            ignores the key). The window is the image the next steps see;
 *            outside the window and the image the pixels are 0.
 *   aspect   a = rand_scale(aspect)
 *   size     r = uniform integer in [min_crop, max_crop]: the shorter side
 *            (of w and h * a) after scaling, scale = r / that side
 *   angle    uniform(-angle, angle) degrees
 *   shift    dx, dy uniform within the slack between the scaled image and
 *            the w x h window (Darknet uses w for both; we use h for dy)
 *   flip     one draw always; mirrors when the draw is odd and flip = 1
 *   colour   dhue = uniform(-hue, hue), dsat = rand_scale(saturation),
 *            dexp = rand_scale(exposure) applied by trn_image_distort; skipped
 *            when all three are the identity (hue 0, factors 1), where
 *            Darknet still round-trips through HSV
 * where rand_scale(s) = uniform(1, s), inverted with probability 1/2.
 */
#include "data.h"

#include <math.h>
#include <string.h>

void trn_augment_defaults(trn_augment *a)
{
    memset(a, 0, sizeof *a);
    a->aspect = 1;
    a->saturation = 1;
    a->exposure = 1;
    a->flip = 1;
}

void trn_augment_from_net(const trn_net *net, trn_augment *a)
{
    const trn_net_config *c = trn_net_get_config(net);
    trn_augment_defaults(a);
    a->angle = c->angle;
    a->aspect = c->aspect;
    a->hue = c->hue;
    a->saturation = c->saturation;
    a->exposure = c->exposure;
    a->jitter = c->jitter;
    a->min_crop = c->min_crop;
    a->max_crop = c->max_crop;
    a->flip = c->flip;
}

int trn_augment_check(const trn_augment *a, const char *where, trn_err *err)
{
    const char *w = where ? where : "augmentation";
    if (!(isfinite(a->angle) && a->angle >= 0 && a->angle <= 180))
        return trn_errf(err, "%s: angle=%g must be in [0, 180] degrees", w, a->angle);
    if (!(isfinite(a->aspect) && a->aspect >= 0.01f && a->aspect <= 100))
        return trn_errf(err, "%s: aspect=%g must be in [0.01, 100]", w, a->aspect);
    if (!(isfinite(a->hue) && a->hue >= 0 && a->hue <= 1))
        return trn_errf(err, "%s: hue=%g must be in [0, 1]", w, a->hue);
    if (!(isfinite(a->saturation) && a->saturation >= 0.01f && a->saturation <= 100))
        return trn_errf(err, "%s: saturation=%g must be in [0.01, 100]", w, a->saturation);
    if (!(isfinite(a->exposure) && a->exposure >= 0.01f && a->exposure <= 100))
        return trn_errf(err, "%s: exposure=%g must be in [0.01, 100]", w, a->exposure);
    if (!(isfinite(a->jitter) && a->jitter >= 0 && a->jitter < 0.5f))
        return trn_errf(err, "%s: jitter=%g must be in [0, 0.5)", w, a->jitter);
    if (a->min_crop < 0 || a->min_crop > TRN_IMAGE_MAX_SIDE || a->max_crop < 0 ||
        a->max_crop > TRN_IMAGE_MAX_SIDE)
        return trn_errf(err, "%s: min_crop=%d and max_crop=%d must be in [0, %d] (0: the "
                        "default)", w, a->min_crop, a->max_crop, TRN_IMAGE_MAX_SIDE);
    if (a->min_crop && a->max_crop && a->min_crop > a->max_crop)
        return trn_errf(err, "%s: min_crop=%d is larger than max_crop=%d", w, a->min_crop,
                        a->max_crop);
    if (a->flip != 0 && a->flip != 1)
        return trn_errf(err, "%s: flip=%d must be 0 or 1", w, a->flip);
    return 0;
}

/* Darknet's rand_uniform: the bounds in either order. */
static float uniform(trn_rng *r, float a, float b)
{
    return a <= b ? trn_rng_range(r, a, b) : trn_rng_range(r, b, a);
}

/* Darknet's rand_scale: uniform(1, s), then 1/that with probability 1/2. */
static float rand_scale(trn_rng *r, float s)
{
    float v = uniform(r, 1, s);
    return (trn_rng_u64(r) & 1) ? v : 1.f / v;
}

void trn_augment_image(const trn_image *src, const trn_augment *a, int w, int h,
                       trn_rng *rng, float *out)
{
    trn_affine t;
    trn_affine_init(&t, src);
    float sw = src->w, sh = src->h; /* size of the (jittered) source window */
    if (a->jitter > 0) {
        float jw = a->jitter * src->w, jh = a->jitter * src->h;
        int left = (int)uniform(rng, -jw, jw), right = (int)uniform(rng, -jw, jw);
        int top = (int)uniform(rng, -jh, jh), bottom = (int)uniform(rng, -jh, jh);
        /* jitter < 0.5 keeps each window at least one pixel wide. */
        int x1 = src->w - right, y1 = src->h - bottom;
        if (x1 <= left) x1 = left + 1;
        if (y1 <= top) y1 = top + 1;
        t.bx0 = left;
        t.by0 = top;
        t.bx1 = x1;
        t.by1 = y1;
        sw = x1 - left;
        sh = y1 - top;
        t.cx = left + sw / 2;
        t.cy = top + sh / 2;
    }

    float aspect = rand_scale(rng, a->aspect);
    int lo = a->min_crop ? a->min_crop : w, hi = a->max_crop ? a->max_crop : 2 * w;
    if (hi < lo) hi = lo;
    int r = lo + (int)trn_rng_below(rng, (uint64_t)(hi - lo) + 1);
    /* Darknet truncates the shorter side to an int; a degenerate window
     * (aspect * width below one pixel) counts as one pixel. */
    int shorter = sh < sw * aspect ? (int)sh : (int)(sw * aspect);
    if (shorter < 1) shorter = 1;
    float scale = (float)r / shorter;
    float rad = uniform(rng, -a->angle, a->angle) * 6.2831853071795864769f / 360.f;
    float dx = (sw * scale / aspect - w) / 2.f;
    float dy = (sh * scale - h) / 2.f;
    dx = uniform(rng, -dx, dx);
    dy = uniform(rng, -dy, dy);
    t.rad = rad;
    t.scale = scale;
    t.aspect = aspect;
    t.dx = dx;
    t.dy = dy;
    trn_image_affine(src, &t, w, h, out);

    trn_image view = {w, h, src->c, out};
    int flip = (int)(trn_rng_u64(rng) & 1);
    if (flip && a->flip) trn_image_flip(&view);

    float dhue = uniform(rng, -a->hue, a->hue);
    float dsat = rand_scale(rng, a->saturation);
    float dexp = rand_scale(rng, a->exposure);
    if (dhue != 0 || dsat != 1 || dexp != 1) trn_image_distort(&view, dhue, dsat, dexp);
}
