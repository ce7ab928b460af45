/* err.c: the trn_err message buffer (and runtime-lite's rtl_err, which
 * formats through the same two functions). */
#include "nn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void trn_msg_vformat(char *msg, size_t size, const char *fmt, va_list ap)
{
    if (size) vsnprintf(msg, size, fmt, ap);
}

void trn_msg_vprefix(char *msg, size_t size, const char *fmt, va_list ap)
{
    if (size < 3) return;
    char prefix[TRN_ERR_MAX];
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    if (n < 0) return;
    size_t plen = strnlen(prefix, sizeof prefix - 1) + 2; /* "prefix: " */
    if (plen >= size) plen = size - 1;
    msg[size - 1] = '\0';
    size_t olen = strlen(msg);
    if (plen + olen >= size) olen = size - 1 - plen;
    memmove(msg + plen, msg, olen);
    msg[plen + olen] = '\0';
    memcpy(msg, prefix, plen - 2); /* plen >= 2: size >= 3 */
    msg[plen - 2] = ':';
    msg[plen - 1] = ' ';
}

int trn_errf(trn_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    trn_msg_vformat(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}

int trn_err_prefix(trn_err *err, const char *fmt, ...)
{
    if (!err) return -1;
    va_list ap;
    va_start(ap, fmt);
    trn_msg_vprefix(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
}
