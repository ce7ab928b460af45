/*
 * backend_ref.h: the reference kernels (backend_ref.c), exported so that the
 * CPU backend can reuse the ones it has no faster version of (private).
 * Contracts: see the matching members of trn_backend in backend.h.
 */
#ifndef TRN_BACKEND_REF_H
#define TRN_BACKEND_REF_H

#include "net.h"

void trn_ref_upload(TRN_BE, float *dst, const float *src, size_t n);
void trn_ref_im2col(TRN_BE, const float *im, int c, int h, int w, int ks, int stride, int pad, float *col,
                    int ldcol);
void trn_ref_col2im(TRN_BE, const float *col, int ldcol, int c, int h, int w, int ks, int stride, int pad,
                    float *im);
void trn_ref_conv(TRN_BE, const trn_conv_shape *s, const float *in, const float *w, int ldw, const float *bias,
                  trn_activation act, float *out);
void trn_ref_conv_dw(TRN_BE, const trn_conv_shape *s, const float *in, const float *delta, float *dw, int lddw);
void trn_ref_conv_dx(TRN_BE, const trn_conv_shape *s, const float *delta, const float *w, int ldw, float *in_delta);
void trn_ref_swap12(TRN_BE, const float *src, float *dst, int a, int b, int n);
void trn_ref_fill(TRN_BE, size_t n, float v, float *x);
void trn_ref_copy(TRN_BE, size_t n, const float *x, float *y);
void trn_ref_axpy(TRN_BE, size_t n, float a, const float *x, float *y);
void trn_ref_scal(TRN_BE, size_t n, float a, float *x);
void trn_ref_activate(TRN_BE, float *x, size_t n, trn_activation a);
void trn_ref_gradient(TRN_BE, const float *y, size_t n, trn_activation a, float *delta);
void trn_ref_add_bias(TRN_BE, float *x, const float *b, int batch, int c, int spatial);
void trn_ref_scale_bias(TRN_BE, float *x, const float *sc, int batch, int c, int spatial);
void trn_ref_backward_bias(TRN_BE, float *db, const float *delta, int batch, int c, int spatial);
void trn_ref_backward_scale(TRN_BE, float *ds, const float *xnorm, const float *delta, int batch, int c,
                            int spatial);
void trn_ref_mean(TRN_BE, const float *x, int batch, int c, int spatial, float *mean);
void trn_ref_variance(TRN_BE, const float *x, const float *mean, int batch, int c, int spatial, float *var);
void trn_ref_normalize(TRN_BE, float *x, const float *mean, const float *var, int batch, int c, int spatial);
void trn_ref_bn_backward(TRN_BE, const float *x, const float *mean, const float *var, int batch, int c,
                         int spatial, float *mean_delta, float *var_delta, float *delta);
void trn_ref_bn_apply(TRN_BE, const float *x, const float *mean, const float *var, const float *scale,
                      const float *bias, int batch, int c, int spatial, trn_activation act, float *out);
void trn_ref_bn_backward_act(TRN_BE, const float *y, trn_activation act, const float *x, const float *mean,
                             const float *var, const float *scale, int batch, int c, int spatial, float *db,
                             float *ds, float *mean_delta, float *var_delta, float *delta);
void trn_ref_bias_gradient(TRN_BE, const float *y, trn_activation act, int batch, int c, int spatial, float *db,
                           float *delta);
void trn_ref_maxpool(TRN_BE, const float *in, int batch, int c, int h, int w, int size, int stride,
                     int pad, int oh, int ow, float *out, int *idx);
void trn_ref_maxpool_backward(TRN_BE, const float *delta, const int *idx, int planes, int per_plane, float *in_delta);
void trn_ref_avgpool(TRN_BE, const float *in, int batch, int c, int spatial, float *out);
void trn_ref_avgpool_backward(TRN_BE, const float *delta, int batch, int c, int spatial, float *in_delta);
void trn_ref_softmax(TRN_BE, const float *in, int batch, int n, int groups, float t, float *out);
void trn_ref_softmax_xent(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_l2(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_l1(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_smooth_l1(TRN_BE, size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_shortcut(TRN_BE, int batch, int w1, int h1, int c1, const float *add, int w2, int h2, int c2,
                      float s1, float s2, float *out);
void trn_ref_crop(TRN_BE, const float *in, int batch, int c, int h, int w, int oh, int ow, int dh, int dw,
                  int flip, float scale, float trans, float *out);
void trn_ref_dropout(TRN_BE, float *x, const float *r, size_t n, float p, float scale);
void trn_ref_sgd(TRN_BE, float *w, float *u, const float *mask, size_t n, float decay, float rate,
                 float momentum);

#endif /* TRN_BACKEND_REF_H */
