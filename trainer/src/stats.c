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
