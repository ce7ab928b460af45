/* rtl_sim.h: the scheduler's trace simulator, a host-side tool beside
 * librtl (runtime-lite/sim/, built into librtl-sim.a, which `rtl simulate`
 * links on the build host). It is no part of the device library: librtl
 * and the device's rtl (make CROSS=...) carry none of it. It drives the
 * public scheduler (rtl_sched_*, rtl.h) with seeded traces. */
#ifndef RTL_SIM_H
#define RTL_SIM_H

#include "rtl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the trace simulator (sched_sim.c) --------------------------------
 * MCDNN's traces S1-S3 (Table 5: apps, disconnections, repeated faces) and
 * NestDNN-style concurrency traces (apps start and stop at random each
 * second, 2-6 at once), generated from a seed, run through one policy. */

enum rtl_trace_kind { RTL_TRACE_S1, RTL_TRACE_S2, RTL_TRACE_S3, RTL_TRACE_CONCURRENCY, RTL_TRACE_COUNT };

typedef struct rtl_trace_event {
    double t;                /* seconds */
    int kind;                /* 0 request, 1 connect, 2 disconnect, 3 start task, 4 stop task */
    int task;
    uint64_t frame;
    int cls;
} rtl_trace_event;

typedef struct rtl_trace {
    rtl_trace_event *ev;
    size_t n;
    double duration_s;
} rtl_trace;

/* The scenario's applications (MCDNN Table 5: D, G, R, Y face apps, V
 * objects, S scenes) into names (may be NULL); their count (0 for the
 * concurrency traces, which use every task). */
int rtl_trace_apps(enum rtl_trace_kind kind, const char **names);
/* Generates a trace for the first `tasks` tasks (the scenario's apps map
 * onto them in order) over duration_s seconds at fps frames per second. */
int rtl_trace_generate(enum rtl_trace_kind kind, int tasks, int classes, double duration_s, double fps,
                               uint64_t seed, rtl_trace *out, rtl_err *err);
void rtl_trace_free(rtl_trace *t);

typedef struct rtl_sim_result {
    uint64_t requests, served, refused;
    double accuracy;         /* mean top1 over all requests (refused count 0) */
    double energy_mj, cloud_usd;
    double first_refusal_s;  /* < 0: none */
    double energy_out_s, cash_out_s;  /* when a budget ran out; < 0: never */
    double fps;              /* NestDNN: mean frames per second per running app */
    double mj_per_frame;     /* concurrency traces: a request is one second of frames (fps inferences) */
    double decide_us_median, decide_us_p99;
    /* accuracy over time per task: buckets of duration/buckets */
    int buckets, tasks;
    double *acc;             /* [task * buckets + b]; -1 where no request */
} rtl_sim_result;

/* Runs trace through s (set up with its tasks and budget at time 0). */
int rtl_sim_run(rtl_sched *s, const rtl_trace *t, int buckets, rtl_sim_result *out, rtl_err *err);
void rtl_sim_result_free(rtl_sim_result *r);

#ifdef __cplusplus
}
#endif
#endif /* RTL_SIM_H */
