/*
 * backend_ref.h: the reference kernels (backend_ref.c), exported so that the
 * CPU backend can reuse the ones it has no faster version of (private).
 * Contracts: see the matching members of trn_backend in backend.h.
 */
#ifndef TRN_BACKEND_REF_H
#define TRN_BACKEND_REF_H

#include "net.h"

void trn_ref_upload(float *dst, const float *src, size_t n);
void trn_ref_im2col(const float *im, int c, int h, int w, int ks, int stride, int pad, float *col,
                    int ldcol);
void trn_ref_col2im(const float *col, int ldcol, int c, int h, int w, int ks, int stride, int pad,
                    float *im);
void trn_ref_swap12(const float *src, float *dst, int a, int b, int n);
void trn_ref_fill(size_t n, float v, float *x);
void trn_ref_copy(size_t n, const float *x, float *y);
void trn_ref_axpy(size_t n, float a, const float *x, float *y);
void trn_ref_scal(size_t n, float a, float *x);
void trn_ref_activate(float *x, size_t n, trn_activation a);
void trn_ref_gradient(const float *y, size_t n, trn_activation a, float *delta);
void trn_ref_add_bias(float *x, const float *b, int batch, int c, int spatial);
void trn_ref_scale_bias(float *x, const float *sc, int batch, int c, int spatial);
void trn_ref_backward_bias(float *db, const float *delta, int batch, int c, int spatial);
void trn_ref_backward_scale(float *ds, const float *xnorm, const float *delta, int batch, int c,
                            int spatial);
void trn_ref_mean(const float *x, int batch, int c, int spatial, float *mean);
void trn_ref_variance(const float *x, const float *mean, int batch, int c, int spatial, float *var);
void trn_ref_normalize(float *x, const float *mean, const float *var, int batch, int c, int spatial);
void trn_ref_bn_backward(const float *x, const float *mean, const float *var, int batch, int c,
                         int spatial, float *mean_delta, float *var_delta, float *delta);
void trn_ref_maxpool(const float *in, int batch, int c, int h, int w, int size, int stride,
                     int pad, int oh, int ow, float *out, int *idx);
void trn_ref_maxpool_backward(const float *delta, const int *idx, size_t n, float *in_delta);
void trn_ref_avgpool(const float *in, int batch, int c, int spatial, float *out);
void trn_ref_avgpool_backward(const float *delta, int batch, int c, int spatial, float *in_delta);
void trn_ref_softmax(const float *in, int batch, int n, int groups, float t, float *out);
void trn_ref_softmax_xent(size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_l2(size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_l1(size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_smooth_l1(size_t n, const float *p, const float *t, float *delta, float *err);
void trn_ref_shortcut(int batch, int w1, int h1, int c1, const float *add, int w2, int h2, int c2,
                      float s1, float s2, float *out);
void trn_ref_crop(const float *in, int batch, int c, int h, int w, int oh, int ow, int dh, int dw,
                  int flip, float scale, float trans, float *out);
void trn_ref_dropout(float *x, const float *r, size_t n, float p, float scale);
void trn_ref_sgd(float *w, float *u, const float *mask, size_t n, float decay, float rate,
                 float momentum);

#endif /* TRN_BACKEND_REF_H */
