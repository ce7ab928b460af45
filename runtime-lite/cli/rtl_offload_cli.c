/* rtl_offload_cli.c: `rtl plan` (JointDNN split planner), `rtl serve` (the
 * peer that runs model suffixes), `rtl peer-keygen`, and `rtl run --split
 * ... --peer ...` (split execution with fallback to the device). */
#include "rtl_cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char plan_about[] =
    "Plans where each layer of VARIANT runs (device or cloud) by JointDNN's shortest\n"
    "path over (layer, location), and prints the plan with its predicted latency,\n"
    "device energy and bytes moved, beside device-only and cloud-only.\n"
    "Layer times are measured here (--runs forwards, per-layer medians); the device\n"
    "takes them times --device-factor (default 1), the cloud times --cloud-factor\n"
    "(default 1).\n";

#ifdef RTL_SIM /* the build host's rtl: emulation around the server (runtime-lite/sim/emulate.c) */
#include "rtl_sim.h"
#define SERVE_EMU_USAGE "\n                 [--emulate UP:DOWN:RTT] [--slowdown F]"
#define SPLIT_PACE_HELP                                                                                             \
    " --device-factor F makes each device piece\n"                                                             \
    "last F times its CPU time here as profiled warm before the runs (a device F\n"                              \
    "times slower than this machine; use one thread; this host's rtl only)."
#else
#define SERVE_EMU_USAGE ""
#define SPLIT_PACE_HELP ""
#endif

static const char serve_about[] =
    "Runs model pieces for devices: pieces of variants of catalogs installed in this\n"
    "store (--root). Every connection is authenticated and encrypted (protocol in\n"
    "runtime-lite/src/frame.c): --key names the server's secret key file, X.key,\n"
    "with X.pub beside it (rtl peer-keygen X writes both; X alone works too);\n"
    "--allow FILE lists the allowed device public keys (64 hex digits per line,\n"
    "# comments). SIGTERM or SIGINT stops it cleanly: requests already read are\n"
    "answered, then connections close.\n";

static const char *keygen_help =
    "Makes a peer key pair: PATH.key (secret, mode 0600) and PATH.pub (public).\n"
    "Servers give theirs to devices to pin; devices' public keys go into the\n"
    "server's allow-list. Existing files are never replaced.\n";

static const char split_about[] =
    "Runs VARIANT split between this device and a peer (rtl serve): layers 0..S-1\n"
    "here and the rest there, or the planner's placement (--split auto, options as\n"
    "rtl plan: --link, --rtt, --goal, budgets, factors). When the peer fails\n"
    "(refused, reset, slower than --deadline-ms) the request finishes on the device;\n"
    "each result says where it ran." SPLIT_PACE_HELP "\n";

/* Options shared by plan and run --split. */
struct popts {
    rtl_link link;
    rtl_target target;
    rtl_budget budget;
    enum rtl_goal goal;
    long runs, threads, split, top, repeat, deadline_ms;
    int json, split_auto, split_set;
    const char *peer, *peer_key, *device_key;
    char host[256];             /* --peer HOST:PORT, split */
    int port;
    const char *target_name;    /* --target: device speed and power from the catalog's estimate */
    rtl_gtdp_worker workers[RTL_GTDP_MAX_WORKERS];
    int nworkers;
    char target_note[256];
};

static int bad_value(const char *opt, const char *v, const char *want)
{
    fprintf(stderr, "rtl: %s needs %s, not '%s'\n", opt, want, v);
    return -1;
}

static int dbl(const char *opt, const char *v, double lo, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(x) || x < lo) {
        char want[64];
        snprintf(want, sizeof want, "a number >= %g", lo);
        return bad_value(opt, v, want);
    }
    *out = x;
    return 0;
}

static int lng(const char *opt, const char *v, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        char want[64];
        snprintf(want, sizeof want, "an integer in %ld..%ld", lo, hi);
        return bad_value(opt, v, want);
    }
    *out = x;
    return 0;
}

/* "A:B[:C]" of positive numbers: n parsed into v; returns how many. */
static int triple(const char *s, double v[3])
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *save, *t = strtok_r(buf, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
        char *end;
        if (n == 3) return -1;
        v[n] = strtod(t, &end);
        if (end == t || *end || !isfinite(v[n]) || v[n] < 0) return -1;
        n++;
    }
    return n;
}

/* "SPEED@MBPS[:RTT],...": -1 when malformed. */
static int parse_workers(const char *s, rtl_gtdp_worker *w, int *n)
{
    char buf[1024];
    if (strlen(s) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *at = strchr(t, '@'), *end;
        if (!at || *n == RTL_GTDP_MAX_WORKERS) return -1;
        *at = 0;
        double sp = strtod(t, &end), v[3] = {0, 0, 0};
        if (end == t || *end || !isfinite(sp) || !(sp > 0)) return -1;
        int k = triple(at + 1, v);
        if (k < 1 || k > 2 || !(v[0] > 0)) return -1;
        w[*n] = (rtl_gtdp_worker){.speed = sp, .mbps = v[0], .rtt_ms = k == 2 ? v[1] : 0};
        (*n)++;
    }
    return *n > 0 ? 0 : -1;
}

static void popts_defaults(struct popts *o)
{
    memset(o, 0, sizeof *o);
    o->link = *rtl_link_preset("wifi");
    o->target = (rtl_target){.device_factor = 1, .cloud_factor = 1, .device_mw = 5000, .wait_mw = 0};
    o->budget = (rtl_budget){.energy_mj = 0, .cloud_ms = -1, .deadline_ms = 0};
    o->runs = 10, o->top = 5, o->repeat = 1, o->deadline_ms = 10000, o->split = -1;
}

/* --link: a preset or UP:DOWN[:RTT]; 0, or -1 after saying why. */
static int set_link(struct popts *o, const char *arg)
{
    const rtl_link *p = rtl_link_preset(arg);
    double v[3] = {0, 0, 0};
    int n;
    if (p) {
        o->link = *p;
    } else if ((n = triple(arg, v)) >= 2 && v[0] > 0 && v[1] > 0) {
        snprintf(o->link.name, sizeof o->link.name, "custom");
        o->link.up_mbps = v[0], o->link.down_mbps = v[1], o->link.rtt_ms = n == 3 ? v[2] : 0;
    } else {
        return bad_value("--link", arg, "3g, 4g, wifi or UP:DOWN[:RTT] (Mbps, Mbps, ms)");
    }
    return 0;
}

static int set_goal(struct popts *o, const char *arg)
{
    if (!strcmp(arg, "latency")) o->goal = RTL_GOAL_LATENCY;
    else if (!strcmp(arg, "energy")) o->goal = RTL_GOAL_ENERGY;
    else return bad_value("--goal", arg, "latency or energy");
    return 0;
}

/* rtl plan's options (the kit's table below); values are checked after
 * parsing, with the messages they always had. */
enum {
    L_LINK, L_RTT, L_RADIO, L_GOAL, L_EBUDGET, L_CBUDGET, L_DEADLINE, L_TARGET, L_DFACTOR, L_CFACTOR, L_DMW, L_WMW,
    L_RUNS, L_THREADS, L_SPLIT, L_WORKERS, L_NVALS
};
struct plan_cli {
    const char *val[L_NVALS];
    int json;
};
#define PLAN_NOPTS 18

static void plan_verb(struct plan_cli *c, ck_opt *opts, ck_verb *v)
{
    const char **s = c->val;
    const ck_opt rows[] = {
        {"--link", "L", CK_STR, &s[L_LINK], 0, 0,
         "3g, 4g or wifi (JointDNN Table 3: throughput and radio\n"
         "power), or UP:DOWN[:RTT] in Mbps and ms (default wifi)"},
        {"--rtt", "MS", CK_STR, &s[L_RTT], 0, 0, "round-trip time added to the link (default 0)"},
        {"--radio", "AU:AD:B", CK_STR, &s[L_RADIO], 0, 0,
         "radio power: mW per Mbps up, down, base mW (default: the\n"
         "named link's, else wifi's)"},
        {"--goal", "G", CK_STR, &s[L_GOAL], 0, 0, "latency (default) or energy (device energy)"},
        {"--energy-budget", "MJ", CK_STR, &s[L_EBUDGET], 0, 0, "budget: exact search for the best plan meeting it"},
        {"--cloud-budget", "MS", CK_STR, &s[L_CBUDGET], 0, 0, "budget, likewise"},
        {"--deadline", "MS", CK_STR, &s[L_DEADLINE], 0, 0, "budget, likewise"},
        {"--target", "T", CK_STR, &s[L_TARGET], 0, 0,
         "device speed and power from the catalog's estimate for\n"
         "target profile T (e.g. jetson-tx2): device factor = its\n"
         "estimated ms / the measured ms here, power = its mJ / ms\n"
         "(overrides --device-factor and --device-mw)"},
        {"--device-factor", "F", CK_STR, &s[L_DFACTOR], 0, 0,
         "the device's layer times: F x this machine's (default 1)"},
        {"--cloud-factor", "F", CK_STR, &s[L_CFACTOR], 0, 0,
         "the cloud's layer times: F x this machine's (default 1)"},
        {"--device-mw", "MW", CK_STR, &s[L_DMW], 0, 0, "device power while computing (default 5000)"},
        {"--wait-mw", "MW", CK_STR, &s[L_WMW], 0, 0, "device power while the cloud computes (default 0)"},
        {"--runs", "N", CK_STR, &s[L_RUNS], 0, 0, "forwards measuring the layers' times (default 10)"},
        {"--threads", "N", CK_STR, &s[L_THREADS], 0, 0, "compute threads (default: all cores)"},
        {"--split", "S", CK_STR, &s[L_SPLIT], 0, 0, "evaluate the fixed split S (layers 0..S-1 on the device)"},
        {"--json", NULL, CK_FLAG, &c->json, 0, 0, "the plan as JSON"},
        {"--workers", "LIST", CK_STR, &s[L_WORKERS], 0, 0,
         "MeDNN's GTDP instead: every convolutional layer's output\n"
         "split by rows and channels over these workers (SPEED:\n"
         "times this host's speed; MBPS: its link; RTT ms), the\n"
         "device sending each its input rows and assembling; prints\n"
         "each layer's parts, the predicted time beside an equal row\n"
         "split and beside this host alone, and the bytes moved"},
        {0},
    };
    _Static_assert(sizeof rows <= PLAN_NOPTS * sizeof rows[0], "room for every row");
    memcpy(opts, rows, sizeof rows);
    *v = (ck_verb){"plan", NULL, NULL,
                   "ID VARIANT [--link NAME|UP:DOWN[:RTT]] [--rtt MS] [--radio AU:AD:BETA]\n"
                   "                [--goal latency|energy] [--energy-budget MJ] [--cloud-budget MS] [--target T]\n"
                   "                [--deadline MS] [--device-factor F] [--cloud-factor F] [--device-mw MW]\n"
                   "                [--wait-mw MW] [--runs N] [--threads N] [--split S] [--json]\n"
                   "       rtl plan ID VARIANT --workers SPEED@MBPS[:RTT],... [--runs N] [--threads N] [--json]",
                   plan_about, opts, NULL};
}

/* Value k into o (--rtt and --radio into rtt and radio): 0, or non-zero
 * after saying on stderr what it needs. */
static int plan_value(struct popts *o, int k, const char *a, double *rtt, double radio[3])
{
    switch (k) {
    case L_LINK: return set_link(o, a);
    case L_RTT: return dbl("--rtt", a, 0, rtt);
    case L_RADIO: return triple(a, radio) != 3 ? bad_value("--radio", a, "AU:AD:BETA in mW") : 0;
    case L_GOAL: return set_goal(o, a);
    case L_EBUDGET: return dbl("--energy-budget", a, 0, &o->budget.energy_mj);
    case L_CBUDGET: return dbl("--cloud-budget", a, 0, &o->budget.cloud_ms);
    case L_DEADLINE: return dbl("--deadline", a, 0, &o->budget.deadline_ms);
    case L_DFACTOR: return dbl("--device-factor", a, 1e-6, &o->target.device_factor);
    case L_CFACTOR: return dbl("--cloud-factor", a, 1e-6, &o->target.cloud_factor);
    case L_DMW: return dbl("--device-mw", a, 0, &o->target.device_mw);
    case L_WMW: return dbl("--wait-mw", a, 0, &o->target.wait_mw);
    case L_RUNS: return lng("--runs", a, 1, 100000, &o->runs);
    case L_THREADS: return lng("--threads", a, 1, 1024, &o->threads);
    case L_SPLIT: o->split_set = 1; return lng("--split", a, 0, RTL_PLAN_MAX_LAYERS, &o->split);
    case L_TARGET: o->target_name = a; return 0;
    default:
        if (parse_workers(a, o->workers, &o->nworkers) == 0) return 0;
        return bad_value("--workers", a, "SPEED@MBPS[:RTT] items joined by ',' (at most 8), e.g. 1@1000,0.5@100:2");
    }
}

/* rtl plan's arguments into o and its two operands into ops; 0, or -1 with
 * *rc (0 after --help, 2 after a usage error: its reason, then the help, on
 * stderr). */
static int plan_parse(int argc, char **argv, struct popts *o, const char *ops[2], int *rc)
{
    struct plan_cli c = {0};
    ck_opt opts[PLAN_NOPTS];
    ck_verb v;
    char **av;
    double rtt = 0, radio[3];
    plan_verb(&c, opts, &v);
    int i = sub_opts_abbrev(argc, argv, &v, 2, 2, rc, &av);
    if (i < 0) return -1;
    ops[0] = av[i], ops[1] = av[i + 1];
    free(av);
    popts_defaults(o);
    o->json = c.json;
    *rc = 2;
    for (int k = 0; k < L_NVALS; k++)
        if (c.val[k] && plan_value(o, k, c.val[k], &rtt, radio)) return ck_help("rtl", &v, stderr), -1;
    o->link.rtt_ms += rtt;
    if (c.val[L_RADIO]) o->link.alpha_up_mw = radio[0], o->link.alpha_down_mw = radio[1], o->link.beta_mw = radio[2];
    return 0;
}

/* A fixed input pattern (as rtl profile's). */
static void pattern(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)((uint32_t)(i * 2654435761u) >> 24) / 256.0f;
}

/* The model's layer costs with measured times into a new array. */
static rtl_layer_cost *layer_costs(rtl_model *m, long runs, int *n, rtl_err *err)
{
    rtl_model_info mi = model_info(m);
    size_t in = mi.input_size;
    float *x = malloc(in * sizeof *x);
    *n = mi.layers;
    rtl_layer_cost *l = calloc((size_t)*n, sizeof *l);
    if (!x || !l) {
        free(x), free(l);
        snprintf(err->msg, sizeof err->msg, "out of memory");
        return NULL;
    }
    pattern(x, in);
    int rc = rtl_model_profile_layers(m, x, (uint32_t)runs, err);
    free(x);
    for (int i = 0; rc == 0 && i < *n; i++) rtl_model_layer_cost(m, i, &l[i]);
    if (rc != 0) {
        free(l);
        return NULL;
    }
    return l;
}

static const char *where_str(const rtl_plan *p)
{
    int c = 0;
    for (int i = 0; i < p->layers; i++) c += p->on_cloud[i];
    return c == 0 ? "device-only" : c == p->layers ? "cloud-only" : "split";
}

static void plan_line(const char *name, const rtl_plan *p)
{
    char loc[RTL_PLAN_MAX_LAYERS + 1];
    for (int i = 0; i < p->layers; i++) loc[i] = p->on_cloud[i] ? 'C' : 'D';
    loc[p->layers] = '\0';
    printf("%-12s %-11s %10.3f %10.3f %9.3f %10" PRIu64 " %10" PRIu64 "  %s\n", name, where_str(p), p->latency_ms,
           p->energy_mj, p->cloud_ms, p->bytes_up, p->bytes_down, loc);
}

static cJSON *plan_json(const rtl_plan *p)
{
    cJSON *o = cJSON_CreateObject();
    char loc[RTL_PLAN_MAX_LAYERS + 1];
    for (int i = 0; i < p->layers; i++) loc[i] = p->on_cloud[i] ? 'C' : 'D';
    loc[p->layers] = '\0';
    cJSON_AddStringToObject(o, "placement", loc);
    cJSON_AddStringToObject(o, "kind", where_str(p));
    cJSON_AddNumberToObject(o, "latency_ms", p->latency_ms);
    cJSON_AddNumberToObject(o, "energy_mj", p->energy_mj);
    cJSON_AddNumberToObject(o, "cloud_ms", p->cloud_ms);
    cJSON_AddNumberToObject(o, "device_ms", p->device_ms);
    cJSON_AddNumberToObject(o, "transfer_ms", p->transfer_ms);
    cJSON_AddNumberToObject(o, "bytes_up", (double)p->bytes_up);
    cJSON_AddNumberToObject(o, "bytes_down", (double)p->bytes_down);
    cJSON_AddNumberToObject(o, "transfers", p->transfers);
    return o;
}

/* --target: the device factor and power from the catalog's estimate of
 * the variant on that target profile (an estimate, said in target_note):
 * its CPU figures, the path this runtime takes, when the estimate has them
 * (its GPU figures otherwise, said so). A roofline estimate is a lower
 * bound: the note says that too. */
static int apply_target(const rtl_model *m, const rtl_layer_cost *l, int n, struct popts *o, rtl_err *err)
{
    if (!o->target_name) return 0;
    const rtl_variant *v = model_info(m).variant;
    double host = 0;
    for (int i = 0; i < n; i++) host += l[i].host_ms;
    char names[512] = "";
    for (size_t i = 0; i < variant_info(v).estimate_count; i++) {
        rtl_estimate e;
        if (rtl_variant_estimate_at(v, i, &e) != 0) continue;
        if (strcmp(e.target, o->target_name) != 0) {
            size_t u = strlen(names);
            snprintf(names + u, sizeof names - u, "%s%s", u ? ", " : "", e.target);
            continue;
        }
        int cpu = e.cpu_ms > 0;
        double ms = cpu ? e.cpu_ms : e.ms, mj = cpu ? e.cpu_mj : e.mj;
        if (!(ms > 0) || !(host > 0)) break;
        o->target.device_factor = ms / host;
        if (mj > 0) o->target.device_mw = mj / ms * 1e3;
        snprintf(o->target_note, sizeof o->target_note,
                 "device = target %s on its %s, roofline lower bound (%s): >= %.4g ms for the variant, %.4g mW",
                 e.target, cpu ? "CPU (the path this runtime takes)" : "accelerator (no CPU estimate)", e.method, ms,
                 o->target.device_mw);
        return 0;
    }
    snprintf(err->msg, sizeof err->msg, "variant '%s' has no usable estimate for target '%s' (its targets: %s)",
             variant_info(v).id, o->target_name, names[0] ? names : "none");
    return -1;
}

/* Plans for o: best (or the fixed split), device-only and cloud-only. */
static int make_plans(const rtl_layer_cost *l, int n, const struct popts *o, rtl_plan *best, rtl_plan *dev,
                      rtl_plan *cloud, rtl_err *err)
{
    if (rtl_plan_split(l, n, &o->target, &o->link, n, dev, err) != 0) return -1;
    if (rtl_plan_split(l, n, &o->target, &o->link, 0, cloud, err) != 0) return -1;
    if (o->split_set && !o->split_auto) {
        if (o->split > n) {
            snprintf(err->msg, sizeof err->msg, "--split %ld: the variant has cuts 0..%d", o->split, n);
            return -1;
        }
        if (o->split > 0 && o->split < n && !l[o->split].cut_before) {
            snprintf(err->msg, sizeof err->msg,
                     "--split %ld: a route or shortcut reads across that cut (rtl plan lists the possible ones)",
                     o->split);
            return -1;
        }
        return rtl_plan_split(l, n, &o->target, &o->link, (int)o->split, best, err);
    }
    return rtl_plan_best(l, n, &o->target, &o->link, o->goal, &o->budget, best, err);
}

static cJSON *gtdp_parts_json(const rtl_gtdp_layer_plan *p)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < p->nparts; k++) {
        const rtl_gtdp_part *q = &p->parts[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "worker", q->worker + 1);
        cJSON_AddItemToObject(e, "rows", cJSON_CreateIntArray((int[]){q->r0, q->r1}, 2));
        cJSON_AddItemToObject(e, "channels", cJSON_CreateIntArray((int[]){q->c0, q->c1}, 2));
        cJSON_AddItemToObject(e, "input_rows", cJSON_CreateIntArray((int[]){q->in_r0, q->in_r1}, 2));
        if (q->cr1 > q->cr0) /* a block with a pool cut at its convolution rows */
            cJSON_AddItemToObject(e, "conv_rows", cJSON_CreateIntArray((int[]){q->cr0, q->cr1}, 2));
        cJSON_AddNumberToObject(e, "in_bytes", (double)q->in_bytes);
        cJSON_AddNumberToObject(e, "out_bytes", (double)q->out_bytes);
        cJSON_AddNumberToObject(e, "ms", q->ms);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

/* rtl plan --workers: the GTDP plan of every convolutional layer. */
static int plan_workers(rtl_model *m, const rtl_layer_cost *l, int n, const struct popts *o, const char *cat,
                        const char *variant, rtl_err *err)
{
    double local = 0, gtdp = 0, equal = 0, rest = 0;
    uint64_t bytes = 0, ebytes = 0;
    int convs = 0;
    /* the parts' costs on this host, the way the workers compute them */
    if (rtl_gtdp_calibrate(m, 3, err) != 0) return -1;
    cJSON *doc = o->json ? cJSON_CreateObject() : NULL, *jl = o->json ? cJSON_CreateArray() : NULL;
    if (!o->json) {
        printf("catalog %s, variant %s: GTDP over %d workers (speed x this host, link):", cat, variant, o->nworkers);
        for (int k = 0; k < o->nworkers; k++)
            printf(" %d: %gx %g Mbps rtt %g ms%s", k + 1, o->workers[k].speed, o->workers[k].mbps,
                   o->workers[k].rtt_ms, k + 1 < o->nworkers ? ";" : "\n");
        printf("\n%5s %-14s %10s %10s %10s %12s  %s\n", "layer", "kind", "local ms", "GTDP ms", "equal ms",
               "bytes moved", "parts (worker: rows x channels)");
    }
    for (int i = 0; i < n; i++) {
        double ms = l[i].host_ms;
        local += ms;
        rtl_gtdp_layer g;
        if (rtl_gtdp_model_split(m, i, &g) != 0) {
            rest += ms;
            continue;
        }
        for (int k = i + 1; k <= g.last; k++) ms += l[k].host_ms, local += l[k].host_ms;
        rtl_gtdp_layer_plan p, e;
        if (rtl_gtdp_plan_layer(&g, o->workers, o->nworkers, &p, err) != 0) goto fail;
        int have_eq = rtl_gtdp_plan_equal(&g, o->workers, o->nworkers, &e, NULL) == 0;
        convs++;
        gtdp += p.ms;
        equal += have_eq ? e.ms : p.ms;
        bytes += p.bytes;
        ebytes += have_eq ? e.bytes : p.bytes;
        if (o->json) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "layer", i);
            cJSON_AddNumberToObject(x, "last", g.last);
            cJSON_AddNumberToObject(x, "local_ms", ms);
            cJSON_AddNumberToObject(x, "gtdp_ms", p.ms);
            if (have_eq) cJSON_AddNumberToObject(x, "equal_ms", e.ms);
            cJSON_AddNumberToObject(x, "bytes", (double)p.bytes);
            cJSON_AddItemToObject(x, "parts", gtdp_parts_json(&p));
            cJSON_AddItemToArray(jl, x);
            i = g.last;
            continue;
        }
        const char *kind = g.last > i ? "conv+maxpool" : l[i].kind;
        printf("%5d %-14s %10.3f %10.3f %10.3f %12" PRIu64 " ", i, kind, ms, p.ms, have_eq ? e.ms : NAN, p.bytes);
        for (int k = 0; k < p.nparts; k++) {
            printf(" %d:%d-%dx%d-%d", p.parts[k].worker + 1, p.parts[k].r0, p.parts[k].r1, p.parts[k].c0,
                   p.parts[k].c1);
            if (p.parts[k].cr1 > p.parts[k].cr0) printf("(conv rows %d-%d)", p.parts[k].cr0, p.parts[k].cr1);
        }
        putchar('\n');
        i = g.last;
    }
    if (convs == 0) {
        snprintf(err->msg, sizeof err->msg, "variant '%s' has no convolutional layer GTDP can split", variant);
        goto fail;
    }
    double total = gtdp + rest, etotal = equal + rest;
    if (o->json) {
        cJSON_AddStringToObject(doc, "catalog", cat);
        cJSON_AddStringToObject(doc, "variant", variant);
        cJSON_AddNumberToObject(doc, "workers", o->nworkers);
        cJSON_AddItemToObject(doc, "layers", jl);
        jl = NULL;
        cJSON_AddNumberToObject(doc, "local_ms", local);
        cJSON_AddNumberToObject(doc, "device_rest_ms", rest);
        cJSON_AddNumberToObject(doc, "gtdp_ms", total);
        cJSON_AddNumberToObject(doc, "equal_ms", etotal);
        cJSON_AddNumberToObject(doc, "gtdp_bytes", (double)bytes);
        cJSON_AddNumberToObject(doc, "equal_bytes", (double)ebytes);
        char *t = cJSON_Print(doc);
        if (t) puts(t);
        free(t);
        cJSON_Delete(doc);
    } else {
        printf("\nconvolutional layers: local %.3f ms, GTDP %.3f ms, equal row split %.3f ms; other layers %.3f ms "
               "on the device\n", local - rest, gtdp, equal, rest);
        printf("predicted: GTDP %.3f ms (%.2fx this host alone), equal split %.3f ms (%.2fx); bytes moved %" PRIu64
               " (equal split %" PRIu64 ")\n", total, local / total, etotal, local / etotal, bytes, ebytes);
    }
    return 0;
fail:
    cJSON_Delete(jl);
    cJSON_Delete(doc);
    return -1;
}

int cmd_plan(rtl_store *s, int argc, char **argv)
{
    struct popts o;
    const char *id[2];
    int rc;
    if (plan_parse(argc, argv, &o, id, &rc) != 0) return rc;
    rtl_catalog *cat;
    rtl_model *m = open_variant(s, id[0], id[1], o.threads, &cat);
    if (!m) return 1;
    rtl_err err;
    int n;
    rtl_layer_cost *l = layer_costs(m, o.runs, &n, &err);
    if (o.nworkers > 0) {
        int st = !l || plan_workers(m, l, n, &o, id[0], id[1], &err) != 0 ? fail(&err) : 0;
        free(l);
        rtl_model_close(m);
        rtl_catalog_close(cat);
        return st;
    }
    rtl_plan best, dev, cloud;
    int status = 0;
    if (!l || apply_target(m, l, n, &o, &err) != 0 || make_plans(l, n, &o, &best, &dev, &cloud, &err) != 0)
        status = fail(&err);
    else if (o.json) {
        cJSON *doc = cJSON_CreateObject(), *layers = cJSON_CreateArray();
        cJSON_AddStringToObject(doc, "catalog", id[0]);
        cJSON_AddStringToObject(doc, "variant", id[1]);
        cJSON_AddStringToObject(doc, "link", o.link.name);
        cJSON_AddStringToObject(doc, "goal", o.goal == RTL_GOAL_ENERGY ? "energy" : "latency");
        cJSON_AddNumberToObject(doc, "device_factor", o.target.device_factor);
        cJSON_AddNumberToObject(doc, "device_mw", o.target.device_mw);
        if (o.target_note[0]) cJSON_AddStringToObject(doc, "device_source", o.target_note);
        for (int k = 0; k < n; k++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "index", k);
            cJSON_AddStringToObject(e, "kind", l[k].kind);
            cJSON_AddNumberToObject(e, "macs", (double)l[k].macs);
            cJSON_AddNumberToObject(e, "output_bytes", (double)l[k].output_bytes);
            cJSON_AddBoolToObject(e, "cut_before", k == 0 || l[k].cut_before);
            cJSON_AddNumberToObject(e, "host_ms", l[k].host_ms);
            cJSON_AddNumberToObject(e, "host_cpu_ms", l[k].host_cpu_ms);
            cJSON_AddItemToArray(layers, e);
        }
        cJSON_AddItemToObject(doc, "layers", layers);
        cJSON_AddItemToObject(doc, "plan", plan_json(&best));
        cJSON_AddItemToObject(doc, "device_only", plan_json(&dev));
        cJSON_AddItemToObject(doc, "cloud_only", plan_json(&cloud));
        char *t = cJSON_Print(doc);
        if (t) puts(t);
        free(t);
        cJSON_Delete(doc);
    } else {
        printf("catalog %s, variant %s: %d layers; link %s: up %.4g Mbps, down %.4g Mbps, rtt %.4g ms; radio "
               "%.5g/%.5g mW per Mbps, base %.5g mW\n",
               id[0], id[1], n, o.link.name, o.link.up_mbps, o.link.down_mbps, o.link.rtt_ms,
               o.link.alpha_up_mw, o.link.alpha_down_mw, o.link.beta_mw);
        printf("device time = measured x %g, cloud time = measured x %g; device %g mW computing, %g mW waiting\n",
               o.target.device_factor, o.target.cloud_factor, o.target.device_mw, o.target.wait_mw);
        if (o.target_note[0]) printf("%s\n", o.target_note);
        putchar('\n');
        printf("%5s %-14s %12s %12s %5s %10s\n", "layer", "kind", "MACs", "out bytes", "cut", "host ms");
        for (int k = 0; k < n; k++)
            printf("%5d %-14s %12" PRIu64 " %12" PRIu64 " %5s %10.4f\n", k, l[k].kind, l[k].macs, l[k].output_bytes,
                   k == 0 || l[k].cut_before ? "yes" : "no", l[k].host_ms);
        printf("\n%-12s %-11s %10s %10s %9s %10s %10s  %s\n", "", "kind", "latency ms", "energy mJ", "cloud ms",
               "bytes up", "bytes down", "placement (D device, C cloud)");
        plan_line("plan", &best);
        plan_line("device-only", &dev);
        plan_line("cloud-only", &cloud);
        double base = dev.latency_ms < cloud.latency_ms ? dev.latency_ms : cloud.latency_ms;
        double ebase = dev.energy_mj < cloud.energy_mj ? dev.energy_mj : cloud.energy_mj;
        printf("\nplan vs the better of device-only and cloud-only: latency %.1f%% lower, energy %.1f%% lower\n",
               100 * (1 - best.latency_ms / base), 100 * (1 - best.energy_mj / ebase));
    }
    free(l);
    rtl_model_close(m);
    rtl_catalog_close(cat);
    return status;
}

/* ---- serve ---------------------------------------------------------------- */

static int stop_pipe[2] = {-1, -1};

static void on_stop(int sig)
{
    (void)sig;
    char b = 1;
    ssize_t w = write(stop_pipe[1], &b, 1);
    (void)w;
}

/* The allow-list file: one 64-hex-digit key per line, # comments. */
static int load_allow(const char *path, rtl_peer_key **out, size_t *n, rtl_err *err)
{
    rtl_err why;
    FILE *f = open_input(path, "r", &why);
    if (!f) {
        snprintf(err->msg, sizeof err->msg, "allow-list: %.1000s", why.msg);
        return -1;
    }
    char line[256];
    size_t cap = 0;
    int ln = 0;
    *out = NULL;
    *n = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strcspn(p, " \t\r\n#");
        if (len == 0) continue;
        if (len != 64) {
            snprintf(err->msg, sizeof err->msg, "%s:%d: not a public key (64 hex digits)", path, ln);
            goto fail;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            rtl_peer_key *k = realloc(*out, cap * sizeof *k);
            if (!k) goto fail;
            *out = k;
        }
        memset(&(*out)[*n], 0, sizeof **out);
        for (int b = 0; b < 32; b++) {
            unsigned v;
            char hx[3] = {p[2 * b], p[2 * b + 1], 0};
            char *end;
            v = (unsigned)strtoul(hx, &end, 16);
            if (*end) {
                snprintf(err->msg, sizeof err->msg, "%s:%d: not a public key (64 hex digits)", path, ln);
                goto fail;
            }
            (*out)[*n].pk[b] = (unsigned char)v;
        }
        (*n)++;
    }
    fclose(f);
    if (*n == 0) {
        snprintf(err->msg, sizeof err->msg, "%s lists no device key: no device could connect", path);
        free(*out);
        return -1;
    }
    return 0;
fail:
    fclose(f);
    free(*out);
    *out = NULL;
    return -1;
}

/* rtl serve's options (the kit's table below); values are checked after
 * parsing, with the messages they always had. */
enum {
    S_KEY, S_ALLOW, S_LISTEN, S_PORT, S_PORTFILE, S_CLIENTS, S_PERSOURCE, S_RATE, S_FRAME, S_MEMORY, S_THREADS,
    S_HANDSHAKE, S_FRAMETIME, S_IDLE, S_EMULATE, S_SLOWDOWN, S_NVALS
};
struct serve_cli {
    const char *val[S_NVALS];
    rtl_serve_options so;
#ifdef RTL_SIM
    rtl_emu emu;
#endif
};
#define SERVE_NOPTS 17

static void serve_verb(struct serve_cli *c, ck_opt *opts, ck_verb *v)
{
    const char **s = c->val;
    const ck_opt rows[] = {
        {"--key", "FILE", CK_STR, &s[S_KEY], 0, 0,
         "the server's secret key file (X.key of rtl peer-keygen\n"
         "X)"},
        {"--allow", "FILE", CK_STR, &s[S_ALLOW], 0, 0, "the allowed device public keys"},
        {"--listen", "HOST", CK_STR, &s[S_LISTEN], 0, 0, "address to bind (default 127.0.0.1)"},
        {"--port", "N", CK_STR, &s[S_PORT], 0, 0, "port (default 0: any free one; --port-file F gets it)"},
        {"--port-file", "F", CK_STR, &s[S_PORTFILE], 0, 0, "the port the server listens on is written to F"},
        {"--max-clients", "N", CK_STR, &s[S_CLIENTS], 0, 0, "connections at once (default 128)"},
        {"--max-per-source", "N", CK_STR, &s[S_PERSOURCE], 0, 0, "connections at once from one address (default 64)"},
        {"--handshake-rate", "R", CK_STR, &s[S_RATE], 0, 0,
         "new connections a second from one address, in bursts\n"
         "of up to 2R (default 50); those beyond are closed at\n"
         "once"},
        {"--max-frame", "BYTES", CK_STR, &s[S_FRAME], 0, 0,
         "largest frame accepted once a connection's first frame\n"
         "has authenticated it (default: the largest request or\n"
         "reply a variant installed when the server starts can\n"
         "need, with headroom, at least 1 MiB; before that first\n"
         "frame at most 4096 bytes)"},
        {"--max-memory", "BYTES", CK_STR, &s[S_MEMORY], 0, 0,
         "all connections' frames together (default 8 x\n"
         "--max-frame, at least 64 MiB); a frame that would pass\n"
         "it waits"},
        {"--threads", "N", CK_STR, &s[S_THREADS], 0, 0, "compute threads (default: all cores)"},
        {"--handshake-timeout", "MS", CK_STR, &s[S_HANDSHAKE], 0, 0,
         "the handshake must end within MS of connecting\n"
         "(default 5000), the first frame within this plus\n"
         "--frame-timeout"},
        {"--frame-timeout", "MS", CK_STR, &s[S_FRAMETIME], 0, 0,
         "a frame must end within MS of its first byte (default\n"
         "30000), however slowly its bytes come"},
        {"--idle-timeout", "MS", CK_STR, &s[S_IDLE], 0, 0,
         "a connection without a byte for MS closes (default\n"
         "60000)"},
#ifdef RTL_SIM
        {"--emulate", "U:D:R", CK_STR, &s[S_EMULATE], 0, 0,
         "link emulation around the server (this host's rtl\n"
         "only): U and D Mbps (0: not emulated, e.g. when tc\n"
         "shapes the link), R ms RTT"},
        {"--slowdown", "F", CK_STR, &s[S_SLOWDOWN], 0, 0,
         "speed emulation (this host's rtl only): each reply\n"
         "waits until F x the CPU time of its computation has\n"
         "passed since the request arrived (a worker F times\n"
         "slower)"},
#endif
        {0},
    };
    _Static_assert(sizeof rows <= SERVE_NOPTS * sizeof rows[0], "room for every row");
    memcpy(opts, rows, sizeof rows);
    *v = (ck_verb){"serve", NULL, NULL,
                   "--key FILE --allow FILE [--listen HOST] [--port N] [--port-file F]\n"
                   "                 [--max-clients N] [--max-per-source N] [--handshake-rate R]\n"
                   "                 [--max-frame BYTES] [--max-memory BYTES] [--threads N]\n"
                   "                 [--handshake-timeout MS] [--frame-timeout MS] [--idle-timeout MS]"
                   SERVE_EMU_USAGE,
                   serve_about, opts, NULL};
}

/* Value k of c into c->so (or c->emu): 0, or non-zero after saying on
 * stderr what it needs. */
static int serve_value(struct serve_cli *c, int k, const char *a)
{
    rtl_serve_options *so = &c->so;
    long v = 0;
    int bad = 0;
    switch (k) {
    case S_LISTEN: so->host = a; break;
    case S_PORT: bad = lng("--port", a, 0, 65535, &v), so->port = (int)v; break;
    case S_CLIENTS: bad = lng("--max-clients", a, 1, 4096, &v), so->max_clients = (int)v; break;
    case S_FRAME: bad = lng("--max-frame", a, 64, 1L << 30, &v), so->max_frame = (uint32_t)v; break;
    case S_THREADS: bad = lng("--threads", a, 1, 1024, &v), so->threads = (int)v; break;
    case S_HANDSHAKE: bad = lng("--handshake-timeout", a, 1, 3600000, &v), so->handshake_ms = (int)v; break;
    case S_FRAMETIME: bad = lng("--frame-timeout", a, 1, 3600000, &v), so->frame_ms = (int)v; break;
    case S_IDLE: bad = lng("--idle-timeout", a, 1, 36000000, &v), so->idle_ms = (int)v; break;
    case S_PERSOURCE: bad = lng("--max-per-source", a, 1, 4096, &v), so->max_per_source = (int)v; break;
    case S_RATE: bad = dbl("--handshake-rate", a, 0.001, &so->handshake_rate); break;
    case S_MEMORY: bad = lng("--max-memory", a, 1L << 16, LONG_MAX, &v), so->max_memory = (uint64_t)v; break;
#ifdef RTL_SIM
    case S_SLOWDOWN: bad = dbl("--slowdown", a, 1, &c->emu.slowdown); break;
    case S_EMULATE: {
        double t[3];
        if (triple(a, t) != 3) bad = bad_value("--emulate", a, "UP:DOWN:RTT (Mbps, Mbps, ms; a rate of 0 is not emulated)");
        else c->emu.up_mbps = t[0], c->emu.down_mbps = t[1], c->emu.rtt_ms = t[2];
        break;
    }
#endif
    default: break; /* --key, --allow, --port-file: taken as they are */
    }
    return bad;
}

/* rtl serve's arguments into c; 0, or -1 with *rc (0 after --help, 2 after
 * a usage error: its reason, then the help, on stderr). */
static int serve_parse(int argc, char **argv, struct serve_cli *c, int *rc)
{
    ck_opt opts[SERVE_NOPTS];
    ck_verb v;
    char **av;
    memset(c, 0, sizeof *c);
    serve_verb(c, opts, &v);
    int i = sub_opts_abbrev(argc, argv, &v, 0, 0, rc, &av);
    if (i < 0) return -1;
    free(av);
    *rc = 2;
    for (int k = 0; k < S_NVALS; k++)
        if (c->val[k] && serve_value(c, k, c->val[k])) return ck_help("rtl", &v, stderr), -1;
    if (!c->val[S_KEY] || !c->val[S_ALLOW]) {
        fprintf(stderr, "rtl: serve needs --key and --allow\n");
        return ck_help("rtl", &v, stderr), -1;
    }
    return 0;
}

int cmd_serve(rtl_store *s, int argc, char **argv)
{
    keep_freed_memory();
    struct serve_cli c;
    int prc;
    if (serve_parse(argc, argv, &c, &prc) != 0) return prc;
    const char *key = c.val[S_KEY], *allow = c.val[S_ALLOW], *port_file = c.val[S_PORTFILE];
    rtl_serve_options so = c.so;
#ifdef RTL_SIM
    rtl_serve_hooks hooks;
#endif
    rtl_err err;
    rtl_peer_key k;
    rtl_peer_key *allowed = NULL;
    size_t na = 0;
#ifdef RTL_SIM
    if (rtl_emu_hooks(&c.emu, &hooks, &err) != 0) return fail(&err);
    so.hooks = &hooks;
#endif
    if (rtl_peer_key_load(key, 1, &k, &err) != 0 || load_allow(allow, &allowed, &na, &err) != 0) return fail(&err);
    rtl_server *srv = rtl_server_open(s, &k, allowed, na, &so, &err);
    free(allowed);
    if (!srv) return fail(&err);
    if (pipe(stop_pipe) != 0) {
        rtl_server_close(srv);
        fprintf(stderr, "rtl: error: pipe: %s\n", strerror(errno));
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (port_file) {
        char text[16];
        snprintf(text, sizeof text, "%d\n", rtl_server_port(srv));
        if (rtl_write_file(port_file, text, strlen(text), &err) != 0) {
            fprintf(stderr, "rtl: error: %s\n", err.msg);
            rtl_server_close(srv);
            return 1;
        }
    }
    int rc = rtl_server_run(srv, stop_pipe[0], &err);
    rtl_server_stats st;
    rtl_server_get_stats(srv, &st);
    fprintf(stderr,
            "rtl: served %" PRIu64 " connections, %" PRIu64 " requests, %" PRIu64 " replies; refused %" PRIu64
            " unknown keys and %" PRIu64 " connections over the per-source limits, closed %" PRIu64
            " for bad frames\n",
            st.accepted, st.requests, st.replies, st.refused_key, st.refused_limit, st.closed_bad_frame);
    rtl_server_close(srv);
    return rc != 0 ? fail(&err) : 0;
}

int cmd_peer_keygen(rtl_store *s, int argc, char **argv)
{
    (void)s;
    const ck_opt opts[] = {{0}};
    const ck_verb v = {"peer-keygen", NULL, NULL, "PATH", keygen_help, opts, NULL};
    int rc, i = sub_opts(argc, argv, &v, 1, 1, &rc);
    if (i < 0) return rc;
    rtl_peer_key k;
    rtl_err err;
    if (rtl_peer_keygen(&k, &err) != 0 || rtl_peer_key_save(&k, argv[i], &err) != 0) return fail(&err);
    printf("%s.pub and %s.key written\n", argv[i], argv[i]);
    return 0;
}

/* ---- run --split ---------------------------------------------------------------- */

int run_wants_split(int argc, char **argv)
{
    for (int a = 1; a < argc; a++)
        if (!strncmp(argv[a], "--split", 7) || !strncmp(argv[a], "--peer", 6) || !strncmp(argv[a], "--workers", 9))
            return 1;
    return 0;
}

/* rtl run --split's options (the kit's table below): rtl plan's and the
 * peer's. */
struct split_cli {
    const char *link, *radio, *goal, *split, *target, *peer, *peer_key, *device_key;
    double rtt, energy_budget, cloud_budget, deadline, device_factor, cloud_factor, device_mw, wait_mw;
    long long runs, threads, top, repeat, deadline_ms;
    int json;
};
#define SPLIT_CLI_DEFAULTS                                                                                      \
    {.cloud_budget = -1, .device_factor = 1, .cloud_factor = 1, .device_mw = 5000, .runs = 10, .top = 5,       \
     .repeat = 1, .deadline_ms = 10000}
#define SPLIT_NOPTS 24

static void split_verb(struct split_cli *c, ck_opt *opts, ck_verb *v)
{
    const ck_opt rows[] = {
        {"--split", "auto|S", CK_STR, &c->split, 0, 0,
         "the planner's placement, or the fixed split S (layers 0..S-1 on the device)"},
        {"--peer", "HOST:PORT", CK_STR, &c->peer, 0, 0, "the server (without it everything runs here)"},
        {"--peer-key", "FILE", CK_STR, &c->peer_key, 0, 0,
         "the server's public key file (X.pub of its rtl peer-keygen X), pinned: a\n"
         "server without its secret half is refused"},
        {"--device-key", "FILE", CK_STR, &c->device_key, 0, 0,
         "this device's secret key file (X.key of rtl peer-keygen X, X.pub beside it; X\n"
         "alone works too)"},
        {"--deadline-ms", "MS", CK_INT, &c->deadline_ms, 1, 3600000,
         "a request's time limit on the peer (default 10000)"},
        {"--repeat", "N", CK_INT, &c->repeat, 1, 100000, "run each image N times (timings: median)"},
        {"--top", "K", CK_INT, &c->top, 1, 100000, "classes per image (default 5)"},
        {"--json", NULL, CK_FLAG, &c->json, 0, 0, "one JSON document"},
        {"--threads", "N", CK_INT, &c->threads, 1, 1024, "compute threads (default: all cores)"},
        {"--link", "L", CK_STR, &c->link, 0, 0,
         "3g, 4g or wifi (JointDNN Table 3: throughput and radio power), or\n"
         "UP:DOWN[:RTT] in Mbps and ms (default wifi)"},
        {"--rtt", "MS", CK_REAL, &c->rtt, 0, 1e9, "round-trip time added to the link (default 0)"},
        {"--radio", "AU:AD:B", CK_STR, &c->radio, 0, 0,
         "radio power: mW per Mbps up, down, base mW (default: the named link's, else\n"
         "wifi's)"},
        {"--goal", "G", CK_STR, &c->goal, 0, 0, "latency (default) or energy (device energy)"},
        {"--energy-budget", "MJ", CK_REAL, &c->energy_budget, 0, 1e12, "budget: exact search for the best plan meeting it"},
        {"--cloud-budget", "MS", CK_REAL, &c->cloud_budget, 0, 1e12, "budget, likewise"},
        {"--deadline", "MS", CK_REAL, &c->deadline, 0, 1e12, "budget, likewise"},
        {"--target", "T", CK_STR, &c->target, 0, 0,
         "device speed and power from the catalog's estimate for target profile T (as\n"
         "rtl plan; overrides --device-factor and --device-mw)"},
        {"--device-factor", "F", CK_REAL, &c->device_factor, 1e-6, 1e12,
         "the device's layer times: F times this machine's (default 1)"},
        {"--cloud-factor", "F", CK_REAL, &c->cloud_factor, 1e-6, 1e12,
         "the cloud's layer times: F times this machine's (default 1)"},
        {"--device-mw", "MW", CK_REAL, &c->device_mw, 0, 1e12, "device power while computing (default 5000)"},
        {"--wait-mw", "MW", CK_REAL, &c->wait_mw, 0, 1e12, "device power while the cloud computes (default 0)"},
        {"--runs", "N", CK_INT, &c->runs, 1, 100000, "forwards measuring the layers' times (default 10)"},
        {0},
    };
    _Static_assert(sizeof rows <= SPLIT_NOPTS * sizeof rows[0], "room for every row");
    memcpy(opts, rows, sizeof rows);
    *v = (ck_verb){"run", NULL, NULL,
                   "ID VARIANT IMAGE... --split auto|S [--peer HOST:PORT --peer-key FILE\n"
                   "              --device-key FILE] [OPTIONS]",
                   split_about, opts, NULL};
}

/* The parsed options as rtl plan's; 0, or -1 after saying why. */
static int split_popts(const struct split_cli *c, struct popts *o)
{
    double radio[3];
    long sp = -1;
    popts_defaults(o);
    if ((c->link && set_link(o, c->link) != 0) || (c->goal && set_goal(o, c->goal) != 0)) return -1;
    if (c->radio && triple(c->radio, radio) != 3) return bad_value("--radio", c->radio, "AU:AD:BETA in mW");
    if (c->split && strcmp(c->split, "auto") != 0 && lng("--split", c->split, 0, RTL_PLAN_MAX_LAYERS, &sp) != 0)
        return -1;
    if (c->radio) o->link.alpha_up_mw = radio[0], o->link.alpha_down_mw = radio[1], o->link.beta_mw = radio[2];
    o->link.rtt_ms += c->rtt;
    o->budget = (rtl_budget){.energy_mj = c->energy_budget, .cloud_ms = c->cloud_budget, .deadline_ms = c->deadline};
    o->target = (rtl_target){.device_factor = c->device_factor, .cloud_factor = c->cloud_factor,
                             .device_mw = c->device_mw, .wait_mw = c->wait_mw};
    o->runs = (long)c->runs, o->threads = (long)c->threads, o->top = (long)c->top, o->repeat = (long)c->repeat;
    o->deadline_ms = (long)c->deadline_ms, o->json = c->json, o->target_name = c->target;
    o->split_set = c->split != NULL, o->split_auto = c->split && !strcmp(c->split, "auto"), o->split = sp;
    o->peer = c->peer, o->peer_key = c->peer_key, o->device_key = c->device_key;
    return 0;
}

/* rtl run --split's options into o; the operands' index, or -1 with *rc. */
static int split_parse(int argc, char **argv, struct popts *o, int *rc)
{
    struct split_cli c = SPLIT_CLI_DEFAULTS;
    ck_opt opts[SPLIT_NOPTS];
    ck_verb v;
    split_verb(&c, opts, &v);
    int i = sub_opts(argc, argv, &v, 3, INT_MAX, rc);
    if (i < 0) return -1;
    *rc = 2;
    if (split_popts(&c, o) != 0) return -1;
    if (!o->split_set) return ck_usage_of("rtl", &v, "--peer needs --split auto|S"), -1;
    if (!o->peer) return i;
    const char *colon = strrchr(o->peer, ':');
    long pv;
    if (!colon || colon == o->peer || (size_t)(colon - o->peer) >= sizeof o->host ||
        lng("--peer", colon + 1, 1, 65535, &pv) != 0)
        return fprintf(stderr, "rtl: --peer needs HOST:PORT, not '%s'\n", o->peer), -1;
    memcpy(o->host, o->peer, (size_t)(colon - o->peer));
    o->host[colon - o->peer] = '\0';
    o->port = (int)pv;
    if (!o->peer_key || !o->device_key)
        return fprintf(stderr, "rtl: --peer needs --peer-key (the server's public key) and --device-key\n"), -1;
    return i;
}

int cmd_run_split(rtl_store *s, int argc, char **argv)
{
    keep_freed_memory();
    for (int a = 1; a < argc; a++)
        if (!strncmp(argv[a], "--workers", 9)) return cmd_run_gtdp(s, argc, argv);
    struct popts o;
    int rc, i = split_parse(argc, argv, &o, &rc);
    if (i < 0) return rc;
    rtl_err err;
    rtl_peer_key me, server;
    memset(&me, 0, sizeof me);
    memset(&server, 0, sizeof server);
    if (o.peer && (rtl_peer_key_load(o.device_key, 1, &me, &err) != 0 ||
                   rtl_peer_key_load(o.peer_key, 0, &server, &err) != 0))
        return fail(&err);
    rtl_catalog *cat;
    rtl_model *m = open_variant(s, argv[i], argv[i + 1], o.threads, &cat);
    if (!m) return 1;
    int status = 0, n;
    rtl_layer_cost *l = layer_costs(m, o.runs, &n, &err);
    rtl_plan plan, dev, cloud;
    rtl_model_info mi = model_info(m);
    size_t in = mi.input_size, k = (size_t)o.top < mi.classes ? (size_t)o.top : mi.classes;
    float *x = malloc(in * sizeof *x);
    rtl_class *top = calloc(k, sizeof *top);
    double *ms = calloc((size_t)o.repeat, sizeof *ms);
    cJSON *doc = cJSON_CreateObject(), *results = cJSON_AddArrayToObject(doc, "results");
    rtl_peer *peer = NULL;
    if (!l || apply_target(m, l, n, &o, &err) != 0 || make_plans(l, n, &o, &plan, &dev, &cloud, &err) != 0) {
        status = fail(&err);
        goto done;
    }
    if (!x || !top || !ms || !results) {
        fprintf(stderr, "rtl: error: out of memory\n");
        status = 1;
        goto done;
    }
    cJSON_AddStringToObject(doc, "catalog", argv[i]);
    cJSON_AddStringToObject(doc, "variant", argv[i + 1]);
    cJSON_AddStringToObject(doc, "link", o.link.name);
    cJSON_AddItemToObject(doc, "plan", plan_json(&plan));
    const rtl_offload_hooks *pacing = NULL; /* the device's own speed */
#ifdef RTL_SIM /* the build host's rtl: a device --device-factor times slower */
    rtl_offload_hooks paced;
    rtl_emu_device_hooks(&o.target.device_factor, &paced);
    pacing = &paced;
#endif
    for (int a = i + 2; a < argc; a++) {
        if (rtl_model_image_input(m, argv[a], x, &err) != 0) {
            status = fail(&err);
            continue;
        }
        rtl_offload_result res = {0};
        int ok = 1, fell = 0, cloud_layers = 0;
        char where[64] = "", reason[RTL_ERR_MAX] = "";
        for (long r = 0; r < o.repeat && ok; r++) {
            int refused = 0;
            if (o.peer && !peer) {
                rtl_err pe;
                peer = rtl_peer_connect(o.host, o.port, &me, server.pk, (int)o.deadline_ms, &pe);
                if (!peer) refused = 1, snprintf(reason, sizeof reason, "%s", pe.msg);
            }
            if (rtl_offload_run(m, &plan, peer, x, pacing, (int)o.deadline_ms, &res, &err) != 0) {
                status = fail(&err);
                ok = 0;
                break;
            }
            ms[r] = res.ms;
            cloud_layers = res.ran_on_cloud;
            snprintf(where, sizeof where, "%s", res.where);
            if (res.fell_back) snprintf(reason, sizeof reason, "%s", res.reason);
            if (refused && cloud_layers == 0 && strcmp(res.where, "device") == 0 && plan.transfers > 0)
                snprintf(where, sizeof where, "device (fallback)");
            if (res.fell_back || refused) {
                fell = plan.transfers > 0;
                rtl_peer_close(peer);
                peer = NULL;
            }
        }
        if (!ok) continue;
        double med = median(ms, o.repeat);
        size_t nt;
        if (rtl_model_top(m, k, top, &nt, &err) != 0) {
            status = fail(&err);
            continue;
        }
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "image", argv[a]);
        cJSON_AddStringToObject(r, "where", where);
        cJSON_AddNumberToObject(r, "cloud_layers", cloud_layers);
        cJSON_AddBoolToObject(r, "fell_back", fell);
        if (fell) cJSON_AddStringToObject(r, "reason", reason);
        cJSON_AddNumberToObject(r, "ms_median", med);
        cJSON_AddNumberToObject(r, "predicted_ms", plan.latency_ms);
        cJSON_AddItemToObject(r, "top", top_json(top, nt));
        cJSON_AddItemToArray(results, r);
        if (!o.json) {
            printf("%s: [%s%s%s, %.3f ms, predicted %.3f ms]", argv[a], where, fell ? ": " : "", fell ? reason : "",
                   med, plan.latency_ms);
            for (size_t t = 0; t < nt; t++) printf("%s %.6f %s", t ? "," : "", top[t].prob, top[t].label);
            putchar('\n');
        }
    }
    if (o.json) {
        char *t = cJSON_Print(doc);
        if (t) puts(t);
        free(t);
    }
done:
    cJSON_Delete(doc);
    rtl_peer_close(peer);
    free(x), free(top), free(ms), free(l);
    rtl_model_close(m);
    rtl_catalog_close(cat);
    return status;
}
