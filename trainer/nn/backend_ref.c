/*
 * backend_ref.c: the reference backend. Naive loops that say what each
 * kernel computes and nothing else; the CPU backend is tested against
 * them. Several are also the CPU backend's own (where nothing faster is
 * needed), so they are exported as trn_ref_*.
 */
#include "backend_ref.h"
#include "portable.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void *ref_alloc(TRN_BE, size_t bytes) { return calloc(1, bytes ? bytes : 1); }
static void ref_release(TRN_BE, void *p) { free(p); }

void trn_ref_upload(TRN_BE, float *dst, const float *src, size_t n)
{
    if (n) memcpy(dst, src, n * sizeof *dst);
}

static float at(const float *m, int ld, int trans, int r, int c)
{
    return trans ? m[(size_t)c * ld + r] : m[(size_t)r * ld + c];
}

/* Accumulates in double: the oracle should be more exact than what it
 * checks. */
static void ref_gemm(TRN_BE, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                     const float *b, int ldb, float beta, float *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++) s += (double)at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
            float *o = &c[(size_t)i * ldc + j];
            *o = (float)(alpha * s + (beta == 0 ? 0.0 : (double)beta * *o));
        }
}

void trn_ref_im2col(TRN_BE, const float *im, int c, int h, int w, int ks, int stride, int pad, float *col,
                    int ldcol)
{
    int oh = trn_conv_out(h, pad, ks, stride), ow = trn_conv_out(w, pad, ks, stride);
    for (int ch = 0; ch < c; ch++)
        for (int ky = 0; ky < ks; ky++)
            for (int kx = 0; kx < ks; kx++) {
                size_t row = ((size_t)ch * ks + ky) * ks + kx;
                for (int y = 0; y < oh; y++)
                    for (int x = 0; x < ow; x++) {
                        int iy = y * stride + ky - pad, ix = x * stride + kx - pad;
                        float v = (iy >= 0 && iy < h && ix >= 0 && ix < w)
                                      ? im[((size_t)ch * h + iy) * w + ix]
                                      : 0;
                        col[row * ldcol + (size_t)y * ow + x] = v;
                    }
            }
}

#ifndef TRN_INFER_ONLY
void trn_ref_col2im(TRN_BE, const float *col, int ldcol, int c, int h, int w, int ks, int stride, int pad,
                    float *im)
{
    int oh = trn_conv_out(h, pad, ks, stride), ow = trn_conv_out(w, pad, ks, stride);
    for (int ch = 0; ch < c; ch++)
        for (int ky = 0; ky < ks; ky++)
            for (int kx = 0; kx < ks; kx++) {
                size_t row = ((size_t)ch * ks + ky) * ks + kx;
                for (int y = 0; y < oh; y++)
                    for (int x = 0; x < ow; x++) {
                        int iy = y * stride + ky - pad, ix = x * stride + kx - pad;
                        if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                            im[((size_t)ch * h + iy) * w + ix] += col[row * ldcol + (size_t)y * ow + x];
                    }
            }
}
#endif

/* The convolutions as plain loops over their definition, sums in double
 * (no im2col, no gemm: an oracle independent of both). */
/* col(im)[r][p]: row r = (channel, ky, kx), output position p */
static float conv_in(const trn_conv_shape *s, const float *im, int r, int p, int ow)
{
    int kx = r % s->ks, ky = r / s->ks % s->ks;
    int iy = p / ow * s->stride + ky - s->pad, ix = p % ow * s->stride + kx - s->pad;
    return iy >= 0 && iy < s->h && ix >= 0 && ix < s->w ? im[((size_t)(r / (s->ks * s->ks)) * s->h + iy) * s->w + ix] : 0;
}

void trn_ref_conv(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                  trn_activation act, float *out)
{
    int oh = trn_conv_out(s->h, s->pad, s->ks, s->stride), ow = trn_conv_out(s->w, s->pad, s->ks, s->stride);
    int np = oh * ow, k = s->c * s->ks * s->ks;
    for (int b = 0; b < s->batch; b++) {
        const float *im = in + (size_t)b * s->c * s->h * s->w;
        float *o = out + (size_t)b * s->m * np;
        for (int f = 0; f < s->m; f++)
            for (int p = 0; p < np; p++) {
                double sum = 0;
                for (int r = 0; r < k; r++) sum += (double)w[(size_t)f * ldw + r] * conv_in(s, im, r, p, ow);
                o[(size_t)f * np + p] = (float)sum;
            }
        if (bias) trn_ref_add_bias(be, o, bias, 1, s->m, np);
        trn_ref_activate(be, o, (size_t)s->m * np, act);
    }
}

#ifndef TRN_INFER_ONLY
void trn_ref_conv_dw(TRN_BE, const trn_conv_shape *s, const float *in, const float *delta, float *dw, int lddw)
{
    int oh = trn_conv_out(s->h, s->pad, s->ks, s->stride), ow = trn_conv_out(s->w, s->pad, s->ks, s->stride);
    int np = oh * ow, k = s->c * s->ks * s->ks;
    for (int f = 0; f < s->m; f++)
        for (int r = 0; r < k; r++) {
            double sum = 0;
            for (int b = 0; b < s->batch; b++) {
                const float *im = in + (size_t)b * s->c * s->h * s->w, *d = delta + ((size_t)b * s->m + f) * np;
                for (int p = 0; p < np; p++) sum += (double)d[p] * conv_in(s, im, r, p, ow);
            }
            dw[(size_t)f * lddw + r] += (float)sum;
        }
}

void trn_ref_conv_dx(TRN_BE, const trn_conv_shape *s, const float *delta, const float *w, int ldw, float *in_delta)
{
    int oh = trn_conv_out(s->h, s->pad, s->ks, s->stride), ow = trn_conv_out(s->w, s->pad, s->ks, s->stride);
    int np = oh * ow, k = s->c * s->ks * s->ks;
    for (int b = 0; b < s->batch; b++) {
        float *im = in_delta + (size_t)b * s->c * s->h * s->w;
        const float *d = delta + (size_t)b * s->m * np;
        for (int r = 0; r < k; r++) {
            int kx = r % s->ks, ky = r / s->ks % s->ks, ch = r / (s->ks * s->ks);
            for (int p = 0; p < np; p++) {
                int iy = p / ow * s->stride + ky - s->pad, ix = p % ow * s->stride + kx - s->pad;
                if (iy < 0 || iy >= s->h || ix < 0 || ix >= s->w) continue;
                double sum = 0;
                for (int f = 0; f < s->m; f++) sum += (double)w[(size_t)f * ldw + r] * d[(size_t)f * np + p];
                im[((size_t)ch * s->h + iy) * s->w + ix] += (float)sum;
            }
        }
    }
}
#endif

void trn_ref_swap12(TRN_BE, const float *src, float *dst, int a, int b, int n)
{
    for (int i = 0; i < a; i++)
        for (int j = 0; j < b; j++)
            memcpy(dst + ((size_t)j * a + i) * n, src + ((size_t)i * b + j) * n, (size_t)n * sizeof *dst);
}

void trn_ref_fill(TRN_BE, size_t n, float v, float *x)
{
    for (size_t i = 0; i < n; i++) x[i] = v;
}

void trn_ref_copy(TRN_BE, size_t n, const float *x, float *y)
{
    if (n && x != y) memmove(y, x, n * sizeof *y);
}

void trn_ref_axpy(TRN_BE, size_t n, float a, const float *x, float *y)
{
    for (size_t i = 0; i < n; i++) y[i] += a * x[i];
}

void trn_ref_scal(TRN_BE, size_t n, float a, float *x)
{
    for (size_t i = 0; i < n; i++) x[i] *= a;
}

void trn_ref_activate(TRN_BE, float *x, size_t n, trn_activation a)
{
    for (size_t i = 0; i < n; i++) x[i] = trn_activate1(x[i], a);
}

#ifndef TRN_INFER_ONLY
void trn_ref_gradient(TRN_BE, const float *y, size_t n, trn_activation a, float *delta)
{
    for (size_t i = 0; i < n; i++) delta[i] *= trn_gradient1(y[i], a);
}
#endif

void trn_ref_add_bias(TRN_BE, float *x, const float *b, int batch, int c, int spatial)
{
    for (int i = 0; i < batch; i++)
        for (int k = 0; k < c; k++)
            for (int s = 0; s < spatial; s++) x[((size_t)i * c + k) * spatial + s] += b[k];
}

void trn_ref_scale_bias(TRN_BE, float *x, const float *sc, int batch, int c, int spatial)
{
    for (int i = 0; i < batch; i++)
        for (int k = 0; k < c; k++)
            for (int s = 0; s < spatial; s++) x[((size_t)i * c + k) * spatial + s] *= sc[k];
}

#ifndef TRN_INFER_ONLY
void trn_ref_backward_bias(TRN_BE, float *db, const float *delta, int batch, int c, int spatial)
{
    for (int k = 0; k < c; k++) {
        double sum = 0;
        for (int i = 0; i < batch; i++)
            for (int s = 0; s < spatial; s++) sum += delta[((size_t)i * c + k) * spatial + s];
        db[k] += (float)sum;
    }
}

void trn_ref_backward_scale(TRN_BE, float *ds, const float *xnorm, const float *delta, int batch, int c,
                            int spatial)
{
    for (int k = 0; k < c; k++) {
        double sum = 0;
        for (int i = 0; i < batch; i++)
            for (int s = 0; s < spatial; s++) {
                size_t j = ((size_t)i * c + k) * spatial + s;
                sum += (double)delta[j] * xnorm[j];
            }
        ds[k] += (float)sum;
    }
}

void trn_ref_mean(TRN_BE, const float *x, int batch, int c, int spatial, float *mean)
{
    for (int k = 0; k < c; k++) {
        double sum = 0;
        for (int i = 0; i < batch; i++)
            for (int s = 0; s < spatial; s++) sum += x[((size_t)i * c + k) * spatial + s];
        mean[k] = (float)(sum / ((double)batch * spatial));
    }
}

void trn_ref_variance(TRN_BE, const float *x, const float *mean, int batch, int c, int spatial, float *var)
{
    for (int k = 0; k < c; k++) {
        double sum = 0;
        for (int i = 0; i < batch; i++)
            for (int s = 0; s < spatial; s++) {
                double d = x[((size_t)i * c + k) * spatial + s] - mean[k];
                sum += d * d;
            }
        var[k] = (float)(sum / ((double)batch * spatial - 1));
    }
}
#endif

void trn_ref_normalize(TRN_BE, float *x, const float *mean, const float *var, int batch, int c, int spatial)
{
    for (int i = 0; i < batch; i++)
        for (int k = 0; k < c; k++) {
            float d = sqrtf(var[k]) + 0.000001f;
            for (int s = 0; s < spatial; s++) {
                float *v = &x[((size_t)i * c + k) * spatial + s];
                *v = (*v - mean[k]) / d;
            }
        }
}

#ifndef TRN_INFER_ONLY
/* Darknet's mean_delta_cpu, variance_delta_cpu and normalize_delta_cpu. */
void trn_ref_bn_backward(TRN_BE, const float *x, const float *mean, const float *var, int batch, int c,
                         int spatial, float *mean_delta, float *var_delta, float *delta)
{
    double m = (double)batch * spatial;
    for (int k = 0; k < c; k++) {
        double md = 0, vd = 0;
        for (int i = 0; i < batch; i++)
            for (int s = 0; s < spatial; s++) {
                size_t j = ((size_t)i * c + k) * spatial + s;
                md += delta[j];
                vd += (double)delta[j] * (x[j] - mean[k]);
            }
        mean_delta[k] = (float)(md * (-1.0 / sqrt(var[k] + .00001f)));
        var_delta[k] = (float)(vd * -.5 * trn_pow(var[k] + .00001f, -1.5));
    }
    for (int i = 0; i < batch; i++)
        for (int k = 0; k < c; k++) {
            double inv = 1.0 / sqrt(var[k] + .00001f);
            for (int s = 0; s < spatial; s++) {
                size_t j = ((size_t)i * c + k) * spatial + s;
                delta[j] = (float)(delta[j] * inv + var_delta[k] * 2.0 * (x[j] - mean[k]) / m +
                                   mean_delta[k] / m);
            }
        }
}
#endif

void trn_ref_bn_apply(TRN_BE, const float *x, const float *mean, const float *var, const float *scale,
                      const float *bias, int batch, int c, int spatial, trn_activation act, float *out)
{
    trn_ref_copy(be, (size_t)batch * c * spatial, x, out);
    trn_ref_normalize(be, out, mean, var, batch, c, spatial);
    trn_ref_scale_bias(be, out, scale, batch, c, spatial);
    trn_ref_add_bias(be, out, bias, batch, c, spatial);
    trn_ref_activate(be, out, (size_t)batch * c * spatial, act);
}

#ifndef TRN_INFER_ONLY
void trn_ref_bn_backward_act(TRN_BE, const float *y, trn_activation act, const float *x, const float *mean,
                             const float *var, const float *scale, int batch, int c, int spatial, float *db,
                             float *ds, float *mean_delta, float *var_delta, float *delta)
{
    trn_ref_gradient(be, y, (size_t)batch * c * spatial, act, delta);
    trn_ref_backward_bias(be, db, delta, batch, c, spatial);
    for (int k = 0; k < c; k++) { /* backward_scale with xnorm as bn_apply computes it */
        float d = sqrtf(var[k]) + 0.000001f;
        double sum = 0;
        for (int i = 0; i < batch; i++)
            for (int s = 0; s < spatial; s++) {
                size_t j = ((size_t)i * c + k) * spatial + s;
                sum += (double)delta[j] * ((x[j] - mean[k]) / d);
            }
        ds[k] += (float)sum;
    }
    trn_ref_scale_bias(be, delta, scale, batch, c, spatial);
    trn_ref_bn_backward(be, x, mean, var, batch, c, spatial, mean_delta, var_delta, delta);
}

void trn_ref_bias_gradient(TRN_BE, const float *y, trn_activation act, int batch, int c, int spatial, float *db,
                           float *delta)
{
    trn_ref_gradient(be, y, (size_t)batch * c * spatial, act, delta);
    trn_ref_backward_bias(be, db, delta, batch, c, spatial);
}
#endif

void trn_ref_maxpool(TRN_BE, const float *in, int batch, int c, int h, int w, int size, int stride,
                     int pad, int oh, int ow, float *out, int *idx)
{
    int off = -pad / 2;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (int y = 0; y < oh; y++)
                for (int x = 0; x < ow; x++) {
                    float best = -FLT_MAX;
                    int bi = -1;
                    for (int n = 0; n < size; n++)
                        for (int m = 0; m < size; m++) {
                            int iy = off + y * stride + n, ix = off + x * stride + m;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                            int j = ix + w * (iy + h * (k + b * c));
                            if (in[j] > best) {
                                best = in[j];
                                bi = j;
                            }
                        }
                    size_t o = (size_t)x + ow * (y + (size_t)oh * (k + (size_t)c * b));
                    out[o] = best;
                    if (idx) idx[o] = bi;
                }
}

#ifndef TRN_INFER_ONLY
void trn_ref_maxpool_backward(TRN_BE, const float *delta, const int *idx, int planes, int per_plane, float *in_delta)
{
    size_t n = (size_t)planes * (size_t)per_plane;
    for (size_t i = 0; i < n; i++)
        if (idx[i] >= 0) in_delta[idx[i]] += delta[i];
}
#endif

void trn_ref_avgpool(TRN_BE, const float *in, int batch, int c, int spatial, float *out)
{
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++) {
            float sum = 0;
            const float *p = in + ((size_t)b * c + k) * spatial;
            for (int s = 0; s < spatial; s++) sum += p[s];
            out[b * c + k] = sum / spatial;
        }
}

#ifndef TRN_INFER_ONLY
void trn_ref_avgpool_backward(TRN_BE, const float *delta, int batch, int c, int spatial, float *in_delta)
{
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++) {
            float *p = in_delta + ((size_t)b * c + k) * spatial;
            for (int s = 0; s < spatial; s++) p[s] += delta[b * c + k] / spatial;
        }
}
#endif

void trn_ref_softmax(TRN_BE, const float *in, int batch, int n, int groups, float t, float *out)
{
    int gs = n / groups;
    for (int b = 0; b < batch; b++)
        for (int g = 0; g < groups; g++) {
            const float *x = in + (size_t)b * n + (size_t)g * gs;
            float *y = out + (size_t)b * n + (size_t)g * gs;
            float largest = -FLT_MAX, sum = 0;
            for (int i = 0; i < gs; i++)
                if (x[i] > largest) largest = x[i];
            for (int i = 0; i < gs; i++) {
                float e = trn_expf(x[i] / t - largest / t);
                sum += e;
                y[i] = e;
            }
            for (int i = 0; i < gs; i++) y[i] /= sum;
        }
}

#ifndef TRN_INFER_ONLY
void trn_ref_softmax_xent(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err)
{
    for (size_t i = 0; i < n; i++) {
        err[i] = t[i] != 0 ? -trn_logf(p[i]) : 0;
        delta[i] = t[i] - p[i];
    }
}

void trn_ref_l2(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err)
{
    for (size_t i = 0; i < n; i++) {
        float d = t[i] - p[i];
        err[i] = d * d;
        delta[i] = d;
    }
}

void trn_ref_l1(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err)
{
    for (size_t i = 0; i < n; i++) {
        float d = t[i] - p[i];
        err[i] = fabsf(d);
        delta[i] = d > 0 ? 1 : -1;
    }
}

/* Darknet's smooth_l1_cpu, including its sign of delta outside |d| < 1. */
void trn_ref_smooth_l1(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err)
{
    for (size_t i = 0; i < n; i++) {
        float d = t[i] - p[i], a = fabsf(d);
        if (a < 1) {
            err[i] = d * d;
            delta[i] = d;
        } else {
            err[i] = 2 * a - 1;
            delta[i] = d < 0 ? 1 : -1;
        }
    }
}
#endif

void trn_ref_shortcut(TRN_BE, int batch, int w1, int h1, int c1, const float *add, int w2, int h2, int c2,
                      float s1, float s2, float *out)
{
    int stride = w1 / w2, sample = w2 / w1;
    if (stride < 1) stride = 1;
    if (sample < 1) sample = 1;
    int minw = w1 < w2 ? w1 : w2, minh = h1 < h2 ? h1 : h2, minc = c1 < c2 ? c1 : c2;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < minc; k++)
            for (int j = 0; j < minh; j++)
                for (int i = 0; i < minw; i++) {
                    size_t o = (size_t)i * sample + w2 * ((size_t)j * sample + h2 * (k + (size_t)c2 * b));
                    size_t a = (size_t)i * stride + w1 * ((size_t)j * stride + h1 * (k + (size_t)c1 * b));
                    out[o] = s1 * out[o] + s2 * add[a];
                }
}

void trn_ref_crop(TRN_BE, const float *in, int batch, int c, int h, int w, int oh, int ow, int dh, int dw,
                  int flip, float scale, float trans, float *out)
{
    size_t o = 0;
    for (int b = 0; b < batch; b++)
        for (int k = 0; k < c; k++)
            for (int i = 0; i < oh; i++)
                for (int j = 0; j < ow; j++) {
                    int col = flip ? w - dw - j - 1 : j + dw, row = i + dh;
                    out[o++] = in[col + (size_t)w * (row + (size_t)h * (k + (size_t)c * b))] * scale + trans;
                }
}

#ifndef TRN_INFER_ONLY
void trn_ref_dropout(TRN_BE, float *x, const float *r, size_t n, float p, float scale)
{
    for (size_t i = 0; i < n; i++) x[i] = r[i] < p ? 0 : x[i] * scale;
}
#endif

#ifndef TRN_INFER_ONLY
void trn_ref_sgd(TRN_BE, float *w, float *u, const float *mask, size_t n, float decay, float rate,
                 float momentum)
{
    for (size_t i = 0; i < n; i++) {
        if (mask && mask[i] == 0) {
            u[i] = 0;
            continue;
        }
        if (decay != 0) u[i] += decay * w[i];
        w[i] += rate * u[i];
        u[i] *= momentum;
    }
}
#endif

const trn_backend trn_backend_ref = {
    .name = "ref",
    .alloc = ref_alloc,
    .release = ref_release,
    .upload = trn_ref_upload,
    .download = trn_ref_upload,
    .gemm = ref_gemm,
    .im2col = trn_ref_im2col,
    .col2im = TRN_TRAIN_FN(trn_ref_col2im),
    .conv = trn_ref_conv,
    .conv_dw = TRN_TRAIN_FN(trn_ref_conv_dw),
    .conv_dx = TRN_TRAIN_FN(trn_ref_conv_dx),
    .swap12 = trn_ref_swap12,
    .fill = trn_ref_fill,
    .copy = trn_ref_copy,
    .axpy = trn_ref_axpy,
    .scal = trn_ref_scal,
    .activate = trn_ref_activate,
    .gradient = TRN_TRAIN_FN(trn_ref_gradient),
    .add_bias = trn_ref_add_bias,
    .scale_bias = trn_ref_scale_bias,
    .backward_bias = TRN_TRAIN_FN(trn_ref_backward_bias),
    .backward_scale = TRN_TRAIN_FN(trn_ref_backward_scale),
    .mean = TRN_TRAIN_FN(trn_ref_mean),
    .variance = TRN_TRAIN_FN(trn_ref_variance),
    .normalize = trn_ref_normalize,
    .bn_backward = TRN_TRAIN_FN(trn_ref_bn_backward),
    .bn_apply = trn_ref_bn_apply,
    .bn_backward_act = TRN_TRAIN_FN(trn_ref_bn_backward_act),
    .bias_gradient = TRN_TRAIN_FN(trn_ref_bias_gradient),
    .maxpool = trn_ref_maxpool,
    .maxpool_backward = TRN_TRAIN_FN(trn_ref_maxpool_backward),
    .avgpool = trn_ref_avgpool,
    .avgpool_backward = TRN_TRAIN_FN(trn_ref_avgpool_backward),
    .softmax = trn_ref_softmax,
    .softmax_xent = TRN_TRAIN_FN(trn_ref_softmax_xent),
    .l2 = TRN_TRAIN_FN(trn_ref_l2),
    .l1 = TRN_TRAIN_FN(trn_ref_l1),
    .smooth_l1 = TRN_TRAIN_FN(trn_ref_smooth_l1),
    .shortcut = trn_ref_shortcut,
    .crop = trn_ref_crop,
    .dropout = TRN_TRAIN_FN(trn_ref_dropout),
    .sgd = TRN_TRAIN_FN(trn_ref_sgd),
};

const trn_backend *trn_backend_get(trn_backend_kind kind)
{
    switch (kind) {
    case TRN_BACKEND_CPU: return &trn_backend_cpu;
    case TRN_BACKEND_REF: return &trn_backend_ref;
    case TRN_BACKEND_KIND_COUNT: break;
    }
    return NULL;
}
