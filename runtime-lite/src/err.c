/* err.c: the rtl_err message buffer, hex helpers, ids, crash points, the clock. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Formatting and prefixing are the trainer's (trainer/nn/err.c, compiled
 * into librtl with the inference sources): one implementation for both
 * message types. */
int rtl_errf(rtl_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    trn_msg_vformat(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int rtl_err_prefix(rtl_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    trn_msg_vprefix(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int rtl_err_from_trn(rtl_err *err, const trn_err *e)
{
    return rtl_errf(err, "%s", e->msg);
}

void rtl_hex(const uint8_t *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; /* upper case is refused: one spelling per hash */
}

int rtl_unhex(const char *hex, uint8_t *out, size_t n)
{
    if (strlen(hex) != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

void rtl_sha256_hex(const uint8_t sha[RTL_SHA256_BYTES], char out[65])
{
    rtl_hex(sha, RTL_SHA256_BYTES, out);
}

int rtl_id_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > RTL_ID_MAX) return 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9'))) return 0;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return 1;
}

#if defined(RTL_CRASH_POINTS) && RTL_CRASH_POINTS
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

void rtl_crash_point(const char *name)
{
    static long count;
    count++;
    const char *trace = getenv("RTL_CRASH_TRACE");
    if (trace && trace[0] == '1') fprintf(stderr, "crash point %ld: %s\n", count, name);
    const char *at = getenv("RTL_CRASH_AT");
    if (at && strtol(at, NULL, 10) == count) {
        fprintf(stderr, "crash point %ld (%s): killing the process\n", count, name);
        raise(SIGKILL);
    }
}
#endif

double rtl_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int rtl_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rtl_median(double *v, size_t n)
{
    if (!n) return 0;
    qsort(v, n, sizeof *v, rtl_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int rtl_describe_copy(void *out, size_t out_size, const void *full, size_t full_size, size_t min_size,
                      const char *what, rtl_err *err)
{
    if (!out || out_size < min_size)
        return rtl_errf(err, "%s: %zu bytes given, at least %zu needed: pass sizeof of the struct of rtl.h", what,
                        out_size, min_size);
    memcpy(out, full, out_size < full_size ? out_size : full_size);
    if (out_size > full_size) memset((char *)out + full_size, 0, out_size - full_size);
    return 0;
}
