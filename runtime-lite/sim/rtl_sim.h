/* rtl_sim.h: host-side tools beside librtl (runtime-lite/sim/, built into
 * librtl-sim.a, never installed), no part of the device library: the
 * scheduler's trace simulator (`rtl simulate`, the build host's rtl only),
 * which drives the public scheduler (rtl_sched_*, rtl.h) with seeded
 * traces, and the analysis of GTDP's run records (rtl_gtdp_stats), which
 * rtl run --workers links beside librtl. */
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

enum rtl_trace_kind { RTL_TRACE_S1, RTL_TRACE_S2, RTL_TRACE_S3, RTL_TRACE_CONCURRENCY, RTL_TRACE_SKEWED,
                      RTL_TRACE_COUNT };

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

/* A skewed trace (RTL_TRACE_SKEWED; rtl_trace_generate refuses it): every
 * frame is a request of each of the first `tasks` tasks (always
 * connected); from start_frac to end_frac of its length a frame's class is
 * one of ctx[0..nctx) (uniformly) with probability p, else any of
 * `classes`; outside that span any class. */
typedef struct rtl_skew {
    const uint32_t *ctx;
    size_t nctx;
    double p, start_frac, end_frac;
} rtl_skew;
int rtl_trace_skewed(const rtl_skew *k, int tasks, int classes, double duration_s, double fps, uint64_t seed,
                     rtl_trace *out, rtl_err *err);

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

/* ---- GTDP's run records (gtdp_records.c) ----------------------------------
 * What the records of rtl_gtdp_run (rtl_gtdp_stats, rtl.h) say beyond the
 * plan; for benches and rtl run --workers' choice of cuts. */

/* What a part really costs beyond its predicted compute and transfer, per
 * worker, from the records of a run (rtl_gtdp_stats.rec, e.g. an untimed
 * calibration forward): out[i] = the median over worker i's parts of
 * wall_ms - compute_ms - transfer_ms, or -1 where worker i answered no
 * part. Named approximation: one fixed cost per part and worker (the
 * request's and the reply's encryption, copies, thread wake-ups, the
 * wait for a core), whatever the part's size. */
void rtl_gtdp_part_overhead(const rtl_gtdp_stats *st, int n, double *out);
/* The slowest answer of block layer (its first layer) in a run's records:
 * the block's wall time from its start here until its last part's answer
 * was here; -1 when the records hold no part of it. */
double rtl_gtdp_block_ms(const rtl_gtdp_stats *st, int layer);
/* The model's part cost fitted to the records of nst forwards of one plan
 * (rtl_gtdp_stats.rec; a forward whose parts differ from the first's is
 * left out): a part of worker w takes fixed[w] + transfer + (1 + *slope) x
 * compute. Per part (layer, worker) the median over the forwards of its
 * wall time less its transfer; then least squares within each worker:
 * *slope shared by the workers (parts computing slower than the
 * calibration of one process alone says when all compute at once, the
 * throttle multiplying what the calibration misses; clamped to -0.5..2;
 * 0 when no worker has two parts of different compute), fixed[w] the
 * worker's mean residual (below 0 taken as 0; -1 for a worker with no
 * part). Named approximation: one fixed cost per part and worker and one
 * slope, whatever the part's shape. */
void rtl_gtdp_fit_parts(const rtl_gtdp_stats *const *st, int nst, int n, double *fixed, double *slope);
/* What a split block costs beyond its slowest part as the model counts a
 * part (fixed[worker] + transfer + (1 + slope) x compute, as from
 * rtl_gtdp_fit_parts), from a run's records: the median over the run's
 * blocks of the block's wall time (its start to its last answer) less that
 * slowest part; 0 when the records hold no block. Named approximation: one
 * cost per block, whatever its size (the device's serial work: its threads
 * sealing the requests one after another when they outnumber the cores,
 * the join; and the slowest of several parts whose times vary ending later
 * than the slowest predicted). */
double rtl_gtdp_block_extra(const rtl_gtdp_stats *st, const double *fixed, double slope, int n);

/* ---- link and speed emulation around a server (emulate.c) -------------
 * rtl serve --emulate UP:DOWN:RTT and --slowdown F (the build host's rtl):
 * hooks (rtl_serve_hooks) that delay a request's arrival and its reply's
 * departure as a link of those rates and RTT would, and pace replies as a
 * machine F times slower would. */
typedef struct rtl_emu {
    double up_mbps, down_mbps, rtt_ms; /* 0: that part not emulated */
    double slowdown;                   /* <= 1: off */
} rtl_emu;
/* Fills out with the hooks that emulate e (ctx = e: e must outlive the
 * server); only those e needs are set. -1 with err on a rate or RTT < 0. */
int rtl_emu_hooks(const rtl_emu *e, rtl_serve_hooks *out, rtl_err *err);

/* rtl run --part-cpus: the hooks (rtl_gtdp_set_hooks) that move the
 * device's thread running worker i's part to CPU cpu[i] (-1: left where it
 * runs), n workers, and give rtl_gtdp_run's calling thread its CPUs of now
 * back after each run. For emulating several devices on one machine: with
 * each worker pinned to a CPU and the device's work for its part on the
 * same CPU, the device works on a core while its worker waits, never on
 * the core of a worker still computing, as a device of its own would not.
 * Best effort (a CPU the process may not use is ignored). NULL with err on
 * a CPU outside -1..CPU_SETSIZE-1, n outside 1..RTL_GTDP_MAX_WORKERS or out
 * of memory; free it (rtl_emu_cpus_free) after the model's last run. */
/* rtl run --split --device-factor F: the hooks (rtl_offload_run) that
 * make each device piece last *factor (> 1; else none) times its CPU time
 * here, as profiled warm (a device that much slower than this machine; one
 * compute thread). factor must outlive the runs. */
void rtl_emu_device_hooks(const double *factor, rtl_offload_hooks *out);

typedef struct rtl_emu_cpus rtl_emu_cpus;
rtl_emu_cpus *rtl_emu_cpus_new(const int *cpu, int n, rtl_gtdp_hooks *out, rtl_err *err);
void rtl_emu_cpus_free(rtl_emu_cpus *c);

#ifdef __cplusplus
}
#endif
#endif /* RTL_SIM_H */
