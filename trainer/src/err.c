/* err.c: the trn_err message buffer. */
#include "trn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int trn_errf(trn_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int trn_err_prefix(trn_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    char prefix[TRN_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    size_t plen = strnlen(prefix, sizeof prefix - 1) + 2; /* "prefix: " */
    if (plen >= sizeof err->msg) plen = sizeof err->msg - 1;
    err->msg[sizeof err->msg - 1] = '\0';
    size_t olen = strlen(err->msg);
    if (plen + olen >= sizeof err->msg) olen = sizeof err->msg - 1 - plen;
    memmove(err->msg + plen, err->msg, olen);
    err->msg[plen + olen] = '\0';
    memcpy(err->msg, prefix, plen - 2);
    err->msg[plen - 2] = ':';
    err->msg[plen - 1] = ' ';
    return -1;
}
