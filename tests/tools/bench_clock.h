/* bench_clock.h: the wall clock and the sort order the bench tools share
 * (tests/tools/rtl_*bench.c): milliseconds on CLOCK_MONOTONIC, and a qsort
 * comparator of doubles for their medians. Header-only: each tool is one
 * file linked against librtl alone. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

static inline double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static inline int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#endif
