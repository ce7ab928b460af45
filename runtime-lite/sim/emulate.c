/* emulate.c: link and speed emulation around a server, hooked into it
 * from the host (rtl serve --emulate, --slowdown; rtl_serve_hooks): when
 * the kernel cannot shape a link (see runtime-lite/README.md), a request
 * counts as arrived rtt/2 after the later of its last byte and its first
 * byte + bytes*8/up, and its reply leaves rtt/2 + bytes*8/down after it is
 * ready (rates of 0: not emulated, e.g. when tc shapes a veth between
 * namespaces); with a slowdown F > 1 each reply waits until F x its
 * computation's CPU time has passed since the request arrived (a slower
 * worker, e.g. GTDP's unequal workers). librtl carries none of this. */
#include "internal.h"
#include "rtl_sim.h"

#include <errno.h>
#include <time.h>

/* the ms that bytes take at mbps (0: not emulated, none) */
static double on_wire(double mbps, size_t bytes) { return mbps > 0 ? (double)bytes * 8 / (mbps * 1e3) : 0; }

static double arrived(void *ctx, double first, double last, size_t bytes)
{
    const rtl_emu *e = ctx;
    double at = first + on_wire(e->up_mbps, bytes);
    return (at > last ? at : last) + e->rtt_ms / 2;
}

static double leaves(void *ctx, double ready, size_t bytes)
{
    const rtl_emu *e = ctx;
    return ready + e->rtt_ms / 2 + on_wire(e->down_mbps, bytes);
}

static void computed(void *ctx, double cpu_ms, double wall_ms)
{
    const rtl_emu *e = ctx;
    double w = e->slowdown * cpu_ms - wall_ms;
    if (w <= 0) return;
    struct timespec ts = {(time_t)(w / 1e3), (long)(((long long)(w * 1e6)) % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int rtl_emu_hooks(const rtl_emu *e, rtl_serve_hooks *out, rtl_err *err)
{
    if (e->up_mbps < 0 || e->down_mbps < 0 || e->rtt_ms < 0)
        return rtl_errf(err, "link emulation needs rates and an RTT >= 0 (got %g:%g:%g)", e->up_mbps, e->down_mbps,
                        e->rtt_ms);
    *out = (rtl_serve_hooks){.ctx = (void *)e};
    if (e->up_mbps > 0 || e->rtt_ms > 0) out->arrived = arrived;
    if (e->down_mbps > 0 || e->rtt_ms > 0) out->leaves = leaves;
    if (e->slowdown > 1) out->computed = computed;
    return 0;
}
