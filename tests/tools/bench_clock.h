/* bench_clock.h: what the bench tools share (tests/tools/rtl_*bench.c):
 * the wall clock (milliseconds on CLOCK_MONOTONIC), a qsort comparator of
 * doubles for their medians, and the installed catalog they measure.
 * Header-only: each tool is one file linked against librtl alone. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

#include "rtl.h"

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

/* Installed catalog id of the store at root (its store in *s), or NULL with
 * the reason in e. */
static inline rtl_catalog *bench_catalog(const char *root, const char *id, rtl_store **s, rtl_err *e)
{
    rtl_store_config sc = {.root = root};
    *s = rtl_store_open(&sc, e);
    if (!*s) return NULL;
    rtl_catalog *cat = rtl_catalog_open(*s, id, e);
    if (!cat) rtl_store_close(*s);
    return cat;
}

#endif
