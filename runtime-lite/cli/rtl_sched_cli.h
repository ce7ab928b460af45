/* rtl_sched_cli.h: what `rtl simulate` and `rtl stream` share (private). */
#ifndef RTL_SCHED_CLI_H
#define RTL_SCHED_CLI_H

#include "rtl_cli.h"

#include <stdarg.h>

#define SCHED_CLI_MAX_APPS 32

/* The scheduler settings of the command line. */
struct sched_cli {
    long long seed, apps, buckets;
    double hours, fps, energy_wh, cloud_usd, memory_mb, latency_ms;
    double alpha, a_min, l_max_ms, camera_fps, device_mw, cloud_gflops;
    int offline, energy_set, alpha_set;
    int knee_any;            /* rtl_sched_config.knee_any */
    const char *target;
    int policies[RTL_POLICY_COUNT], npolicies;
    const char *app_task[SCHED_CLI_MAX_APPS];
    /* --app APP=TASK as given (names resolved per trace: an app's place
     * differs between S1, S2 and S3) */
    const char *map_app[SCHED_CLI_MAX_APPS], *map_task[SCHED_CLI_MAX_APPS];
    size_t map_len[SCHED_CLI_MAX_APPS];
    int nmap;
    double context_p;        /* the skewed trace: its context's share of the frames */
};
#define SCHED_CLI_DEFAULTS                                                                                  \
    {.seed = 1, .apps = 8, .buckets = 60, .hours = 10, .fps = 1, .energy_wh = 0.5, .cloud_usd = 0.0667,   \
     .alpha = 0.05, .a_min = -1, .camera_fps = 30, .context_p = 0.9}

/* A prediction's source (rtl_sched_option.source) in words: "measured on
 * this device", "measured on the build host", "roofline lower bound". */
const char *sched_source_words(const char *source);
/* 1 when a names a file (a .json or .tar.zst suffix, or a '/') rather
 * than a catalog id, whether or not the file exists. */
int sched_names_file(const char *a);
/* 1 when a is an existing .json or .tar.zst file. */
int sched_is_file_arg(const char *a);
/* An installed catalog (s), or a catalog archive / manifest.json file. */
rtl_catalog *sched_open_catalog(rtl_store *s, const char *what, rtl_err *err);
void rtl_errf_cli(rtl_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sched_register(rtl_sched *s, rtl_catalog *cat, int napps, const char *const *names, const char *const *tasks,
                   const struct sched_cli *o, rtl_err *err);
int sched_budget(rtl_sched *s, const struct sched_cli *o, double horizon_s, double now, rtl_err *err);
rtl_sched *sched_build(rtl_catalog *cat, enum rtl_policy p, int napps, const char *const *names,
                       const char *const *tasks, const struct sched_cli *o, double horizon_s, rtl_err *err);

/* runtime-lite/sim/simulate_cli.c (the host's rtl only: RTL_SIM) */
int cmd_simulate(rtl_store *s, int argc, char **argv);
int cmd_stream(rtl_store *s, int argc, char **argv);

#endif
