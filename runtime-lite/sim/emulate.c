/* emulate.c: link and speed emulation around a server, hooked into it
 * from the host (rtl serve --emulate, --slowdown; rtl_serve_hooks): when
 * the kernel cannot shape a link (see runtime-lite/README.md), a request
 * counts as arrived rtt/2 after the later of its last byte and its first
 * byte + bytes*8/up, and its reply leaves rtt/2 + bytes*8/down after it is
 * ready (rates of 0: not emulated, e.g. when tc shapes a veth between
 * namespaces); with a slowdown F > 1 each reply waits until F x its
 * computation's CPU time has passed since the request arrived (a slower
 * worker, e.g. GTDP's unequal workers). And rtl run --part-cpus: the
 * device's part threads pinned to their workers' CPUs (rtl_gtdp_hooks).
 * librtl carries none of this. */
#include "internal.h"
#include "rtl_sim.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
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

/* Waits until f x cpu ms have passed where wall ms have (f <= 1: not). */
static void pace(double f, double cpu, double wall)
{
    double w = f * cpu - wall;
    if (f <= 1 || w <= 0) return;
    struct timespec ts = {(time_t)(w / 1e3), (long)(((long long)(w * 1e6)) % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void computed(void *ctx, double cpu_ms, double wall_ms)
{
    const rtl_emu *e = ctx;
    pace(e->slowdown, cpu_ms, wall_ms);
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

/* ---- the device's part threads on their workers' CPUs (rtl run
 * --part-cpus): several devices emulated on one machine. With each worker
 * pinned to a CPU and the device's work for its part on the same CPU, the
 * device works on a core while its worker waits (before its part and
 * after), never on the core of a worker still computing, as a device of
 * its own would not. Best effort: a CPU the process may not use leaves the
 * thread where it runs. */
struct rtl_emu_cpus {
    int n;
    int cpu[RTL_GTDP_MAX_WORKERS];
    int has_home;
    cpu_set_t home; /* the calling thread's CPUs, given back after each run */
};

static int part_cpu(void *ctx, int worker)
{
    const rtl_emu_cpus *c = ctx;
    return worker >= 0 && worker < c->n ? c->cpu[worker] : -1;
}

static void enter_cpu(void *ctx, int cpu)
{
    (void)ctx;
    cpu_set_t cs;
    CPU_ZERO(&cs);
    CPU_SET(cpu, &cs);
    (void)pthread_setaffinity_np(pthread_self(), sizeof cs, &cs);
}

static void leave_cpu(void *ctx)
{
    const rtl_emu_cpus *c = ctx;
    if (c->has_home) (void)pthread_setaffinity_np(pthread_self(), sizeof c->home, &c->home);
}

rtl_emu_cpus *rtl_emu_cpus_new(const int *cpu, int n, rtl_gtdp_hooks *out, rtl_err *err)
{
    if (n < 1 || n > RTL_GTDP_MAX_WORKERS)
        return rtl_errf(err, "GTDP: %d CPUs (1..%d workers)", n, RTL_GTDP_MAX_WORKERS), NULL;
    for (int i = 0; i < n; i++)
        if (cpu[i] < -1 || cpu[i] >= CPU_SETSIZE)
            return rtl_errf(err, "GTDP: worker %d's CPU %d (0..%d, or -1 for none)", i + 1, cpu[i], CPU_SETSIZE - 1),
                   NULL;
    rtl_emu_cpus *c = calloc(1, sizeof *c);
    if (!c) return rtl_errf(err, "out of memory"), NULL;
    c->n = n;
    memcpy(c->cpu, cpu, (size_t)n * sizeof *cpu);
    c->has_home = pthread_getaffinity_np(pthread_self(), sizeof c->home, &c->home) == 0;
    *out = (rtl_gtdp_hooks){.ctx = c, .part_cpu = part_cpu, .enter_cpu = enter_cpu, .leave = leave_cpu};
    return c;
}

void rtl_emu_cpus_free(rtl_emu_cpus *c) { free(c); }

/* ---- a slower device (rtl run --split --device-factor F): a device piece
 * ends F x cpu ms after it started (waiting the rest), cpu being the
 * piece's CPU time on this machine: the layers' warm CPU times profiled in
 * this process when the model has been profiled (rtl_model_profile_layers),
 * else the calling thread's CPU time of this run. Not wall time, so that
 * other processes on a shared machine do not slow the modelled device
 * down; profiled rather than this run's, because the emulation's own waits
 * leave the caches cold (other processes run meanwhile), which a real
 * device computing without pause would not see. Meant for one compute
 * thread. */
static void device_piece(void *ctx, const rtl_model *m, int first, int last, double cpu_ms, double wall_ms)
{
    const double *factor = ctx;
    double prof = 0;
    for (int k = first; k <= last; k++) {
        rtl_layer_cost lc;
        if (rtl_model_layer_cost(m, k, &lc) == 0) prof += lc.host_cpu_ms;
    }
    pace(*factor, prof > 0 ? prof : cpu_ms, wall_ms);
}

void rtl_emu_device_hooks(const double *factor, rtl_offload_hooks *out)
{
    *out = (rtl_offload_hooks){.ctx = (void *)factor, .device_piece = *factor > 1 ? device_piece : NULL};
}
