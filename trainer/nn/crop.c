/*
 * crop.c: the [crop] layer (Darknet's crop_layer.c, CPU path).
 *
 * Keys: crop_height (1), crop_width (1), flip (0), angle (0), saturation
 * (1), exposure (1), shift (0), noadjust (0). Output c x crop_height x
 * crop_width. Training picks a random window (and a mirror when flip);
 * inference takes the centred window. Values become 2x - 1 unless
 * noadjust. As in Darknet's CPU code, angle, saturation, exposure and
 * shift are accepted and have no effect, and the layer passes no gradient
 * back (it keeps no delta).
 */
#include "net.h"

#include <stdlib.h>

static const char *const crop_keys[] = {"crop_height", "crop_width", "flip", "angle", "saturation",
                                        "exposure", "shift", "noadjust", NULL};

typedef struct crop_state {
    int flip, noadjust;
    float angle, saturation, exposure, shift;
} crop_state;

static int crop_setup(trn_layer *l, trn_build *b, trn_err *err)
{
    crop_state *s = calloc(1, sizeof *s);
    if (!s) return trn_errf(err, "out of memory");
    l->priv = s;
    int ch, cw;
    if (trn_build_int(b, "crop_height", 1, 1, 1 << 16, &ch, err) ||
        trn_build_int(b, "crop_width", 1, 1, 1 << 16, &cw, err) ||
        trn_build_int(b, "flip", 0, 0, 1, &s->flip, err) ||
        trn_build_float(b, "angle", 0, -360, 360, &s->angle, err) ||
        trn_build_float(b, "saturation", 1, 0, 100, &s->saturation, err) ||
        trn_build_float(b, "exposure", 1, 0, 100, &s->exposure, err) ||
        trn_build_float(b, "shift", 0, -100, 100, &s->shift, err) ||
        trn_build_int(b, "noadjust", 0, 0, 1, &s->noadjust, err))
        return -1;
    if (ch > l->in.h || cw > l->in.w)
        return trn_build_fail(b, ch > l->in.h ? "crop_height" : "crop_width", err,
                              "a %dx%d crop is larger than the %dx%d input", ch, cw, l->in.h,
                              l->in.w);
    l->out = (trn_shape){l->in.c, ch, cw};
    l->has_delta = 0;
    return 0;
}

static void crop_forward(trn_layer *l, trn_net *net, int train)
{
    crop_state *s = l->priv;
    int flip = 0, dh = (l->in.h - l->out.h) / 2, dw = (l->in.w - l->out.w) / 2;
    if (train) {
        const float *fr = l->fixed_rand;
        if (fr && l->fixed_rand_n == 3 && fr[1] >= 0 && fr[1] < 65536 && fr[2] >= 0 && fr[2] < 65536) {
            flip = s->flip && fr[0] != 0;
            dh = (int)fr[1];
            dw = (int)fr[2];
        } else {
            trn_rng r = trn_net_layer_rng(net, l);
            flip = s->flip && trn_rng_below(&r, 2);
            dh = (int)trn_rng_below(&r, (uint64_t)(l->in.h - l->out.h + 1));
            dw = (int)trn_rng_below(&r, (uint64_t)(l->in.w - l->out.w + 1));
        }
        if (dh < 0 || dh > l->in.h - l->out.h) dh = 0;
        if (dw < 0 || dw > l->in.w - l->out.w) dw = 0;
    }
    float scale = s->noadjust ? 1 : 2, trans = s->noadjust ? 0 : -1;
    net->be->crop(net->be, l->input, net->batch, l->in.c, l->in.h, l->in.w, l->out.h, l->out.w, dh, dw,
                  flip, scale, trans, l->output);
}

/* Its row of the kind table (TRN_LAYER_KINDS in nn.h). */
const trn_layer_ops trn_crop_kind = {
    .desc = {.kind = TRN_LAYER_CROP,
             .name = "crop",
             .aliases = (const char *const[]){NULL},
             .channels = TRN_CHANNELS_PASS},
    .keys = crop_keys,
    .setup = crop_setup,
    .forward = crop_forward,
    .backward = NULL,
};
