/* stats.c: the 95% Wilson score interval of a measured proportion, and
 * the top-1 of a score vector. */
#include "trn.h"

#include <math.h>

void trn_wilson(uint64_t k, uint64_t n, double *lo, double *hi)
{
    if (n == 0 || k > n) {
        *lo = 0;
        *hi = 1;
        return;
    }
    const double z = 1.959963984540054; /* the 97.5% point of the standard normal */
    double p = (double)k / (double)n, z2n = z * z / (double)n;
    double centre = (p + z2n / 2) / (1 + z2n);
    double half = z * sqrt(p * (1 - p) / (double)n + z2n / (4.0 * (double)n)) / (1 + z2n);
    *lo = fmax(0, centre - half);
    *hi = fmin(1, centre + half);
}

int trn_argmax(const float *v, int n)
{
    int best = 0;
    for (int c = 1; c < n; c++)
        if (v[c] > v[best]) best = c;
    return best;
}

/* Two-sided exact McNemar: 2 x P(X <= k) for X ~ Binomial(n = b + c, 1/2),
 * k = min(b, c), capped at 1. The largest term, C(n, k) / 2^n, in log
 * space (no overflow for any n), then the smaller ones by their ratio
 * C(n, i - 1) / C(n, i) = i / (n - i + 1). */
double trn_mcnemar_p(uint64_t b, uint64_t c)
{
    uint64_t n = b + c, k = b < c ? b : c;
    if (n == 0) return 1;
    double log_top = -(double)n * log(2.0);
    for (uint64_t i = 0; i < k; i++) log_top += log((double)(n - i)) - log((double)(i + 1));
    double sum = 1, r = 1;
    for (uint64_t i = k; i > 0 && r > 1e-300; i--) sum += r *= (double)i / (double)(n - i + 1);
    double p = 2 * exp(log_top) * sum;
    return p > 1 ? 1 : p;
}
