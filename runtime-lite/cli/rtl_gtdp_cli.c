/* rtl_gtdp_cli.c: `rtl run ID VARIANT IMAGE... --workers ...`: MeDNN's GTDP
 * over `rtl serve` workers (runtime-lite/src/gtdp.c, rtl_gtdp_run). */
#include "rtl_cli.h"
#include "rtl_sim.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef RTL_SIM /* the build host's rtl: the part threads pinned (runtime-lite/sim/emulate.c) */
#define PART_CPUS_ROW(g)                                                                                            \
    {"--part-cpus", "LIST", CK_STR, &(g)->cpus_arg, 0, 0,                                                           \
     "emulating several devices on one machine (this host's rtl only): this\n"                                     \
     "device's thread that runs worker i's part (its request sealed and sent, its\n"                              \
     "reply opened and placed) moves to CPU i of LIST (one per worker, in order;\n"                               \
     "-1: where it runs), the CPU that worker is pinned to: the device then works\n"                              \
     "on a core while its worker waits, never on the core of a worker still\n"                                    \
     "computing (as a device of its own would not)"},
#else
#define PART_CPUS_ROW(g)
#endif

static const char gtdp_about[] =
    "Runs VARIANT with every convolutional layer (and a max pool right after it)\n"
    "spread over rtl serve workers by\n"
    "MeDNN's GTDP (rows and output channels, sized by each worker's SPEED relative\n"
    "to this host, default 1, and link MBPS, default 1000): this device sends each\n"
    "worker the input rows of its part, the workers compute, this device assembles\n"
    "and runs the other layers. A worker that fails (gone, killed, slower than the\n"
    "deadline) has its part computed here and gets no more parts: the answer is\n"
    "always complete. Prints the answer, the median time beside this host alone\n"
    "(measured in the same run) and GTDP's predicted time: its parts' compute is\n"
    "measured here first (calibration), each link's round trip by its handshake,\n"
    "then, after the warm-up and over several workers, untimed forwards with the\n"
    "blocks cut alternately a, b, a, ... for every pair of rows, channels (and, over\n"
    "more than two workers, as the planner likes best) measure each block after each\n"
    "cut of the block before it; the cuts of the least summed time are kept (a block's\n"
    "workers hold their answers of the block before: its cut decides what is sent),\n"
    "and two stages of three more untimed forwards fit what a part costs\n"
    "(a fixed cost per part and worker: encryption, copies, wake-ups; one factor\n"
    "on every part's compute: the workers computing at once) and what a block\n"
    "costs beyond its slowest part: they replace the round trip in the plan and\n"
    "the prediction (its components in the --json document), before the timed\n"
    "runs.\n";

struct wspec {
    char host[256];
    int port;
};

/* rtl run --workers's options (the kit's table below). */
struct gtdp_cli {
    const char *workers_arg, *pk, *dk, *cuts_arg, *cpus_arg;
    long long repeat, warmup, runs, deadline, threads, top;
    int json, equal, resend, trace;
    /* parsed from the strings */
    struct wspec ws[RTL_GTDP_MAX_WORKERS];
    rtl_gtdp_worker w[RTL_GTDP_MAX_WORKERS];
    int nw, cuts, ncpu;
    int cpus[RTL_GTDP_MAX_WORKERS];
};
#define GTDP_CLI_DEFAULTS {.repeat = 1, .warmup = 1, .runs = 5, .deadline = 10000, .top = 5, .cuts = -1}
#define GTDP_NOPTS 18

/* The option table of g (opts: GTDP_NOPTS rows) and the verb. */
static void gtdp_verb(struct gtdp_cli *g, ck_opt *opts, ck_verb *v)
{
    const ck_opt rows[] = {
        {"--workers", "LIST", CK_STR, &g->workers_arg, 0, 0,
         "the workers, in order (at most 8): HOST:PORT[@SPEED[@MBPS]] items joined by ','"},
        {"--peer-key", "FILE", CK_STR, &g->pk, 0, 0, "the workers' public key file (X.pub of rtl peer-keygen X)"},
        {"--device-key", "FILE", CK_STR, &g->dk, 0, 0,
         "this device's secret key file (X.key, X.pub beside it; X alone works too)"},
        {"--repeat", "N", CK_INT, &g->repeat, 1, 100000, "runs per image (timings: median; default 1)"},
        {"--warmup", "N", CK_INT, &g->warmup, 0, 100000,
         "untimed runs over the workers first (default 1: they load the model and build\n"
         "their parts' networks)"},
        {"--runs", "N", CK_INT, &g->runs, 1, 100000, "forwards measuring each layer's time for the plan (default 5)"},
        {"--deadline-ms", "MS", CK_INT, &g->deadline, 1, 3600000,
         "a part not answered within MS fails over (default 10000)"},
        {"--threads", "N", CK_INT, &g->threads, 1, 1024, "compute threads here (default: all cores)"},
        {"--top", "K", CK_INT, &g->top, 1, 100000, "classes shown (default 5)"},
        {"--equal-split", NULL, CK_FLAG, &g->equal, 0, 0, "equal row bands instead of GTDP's plan (the reference)"},
        {"--resend", NULL, CK_FLAG, &g->resend, 0, 0,
         "send every part its whole input, also the rows its worker still holds as its\n"
         "answer of the block before (default: those are not sent again)"},
        PART_CPUS_ROW(g)
        {"--cuts", "C", CK_STR, &g->cuts_arg, 0, 0,
         "rows or channels: every block cut by rows only (a block with a max pool at its\n"
         "convolution rows) or by channels only, instead of each block's cut measured\n"
         "over the workers (with --equal-split: ignored)"},
        {"--trace", NULL, CK_FLAG, &g->trace, 0, 0,
         "with --json: when each timed forward's pieces ran on this device (\"trace\": per\n"
         "block its start and end, per part when its request was filled, sealed and sent\n"
         "and its reply's first bytes came, all of it, opened and placed; ms, medians\n"
         "over the timed forwards)"},
        {"--json", NULL, CK_FLAG, &g->json, 0, 0, "one JSON document"},
        {0},
    };
    _Static_assert(sizeof rows <= GTDP_NOPTS * sizeof rows[0], "room for every row");
    memcpy(opts, rows, sizeof rows);
    *v = (ck_verb){"run", NULL, NULL,
                   "ID VARIANT IMAGE... --workers HOST:PORT[@SPEED[@MBPS]],... --peer-key FILE\n"
                   "              --device-key FILE [OPTIONS]",
                   gtdp_about, opts, NULL};
}

static int num(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* HOST:PORT[@SPEED[@MBPS]],... */
static int parse_list(const char *s, struct wspec *ws, rtl_gtdp_worker *w, int *n)
{
    char buf[2048];
    if (strlen(s) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == RTL_GTDP_MAX_WORKERS) return -1;
        double sp = 1, mb = 1000;
        char *at = strchr(t, '@');
        if (at) {
            *at = 0;
            char *at2 = strchr(at + 1, '@'), *end;
            if (at2) *at2 = 0;
            sp = strtod(at + 1, &end);
            if (end == at + 1 || *end || !isfinite(sp) || !(sp > 0)) return -1;
            if (at2) {
                mb = strtod(at2 + 1, &end);
                if (end == at2 + 1 || *end || !isfinite(mb) || !(mb > 0)) return -1;
            }
        }
        char *colon = strrchr(t, ':');
        long port;
        if (!colon || colon == t || (size_t)(colon - t) >= sizeof ws[*n].host || num(colon + 1, 1, 65535, &port))
            return -1;
        memcpy(ws[*n].host, t, (size_t)(colon - t));
        ws[*n].host[colon - t] = 0;
        ws[*n].port = (int)port;
        w[*n] = (rtl_gtdp_worker){.speed = sp, .mbps = mb, .rtt_ms = 0};
        (*n)++;
    }
    return *n > 0 ? 0 : -1;
}

#ifdef RTL_SIM
/* C,C,... (-1: none), each a CPU this process may run on; 0 or -1. */
static int parse_cpus(const char *s, int *cpu, int *n)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) CPU_ZERO(&allowed);
    *n = 0;
    for (const char *p = s;;) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno || v < -1 || v >= CPU_SETSIZE || (v >= 0 && !CPU_ISSET((int)v, &allowed)) ||
            *n == RTL_GTDP_MAX_WORKERS)
            return -1;
        cpu[(*n)++] = (int)v;
        if (*end == 0) return 0;
        if (*end != ',') return -1;
        p = end + 1;
    }
}
#endif

/* GTDP's predicted time of one forward, walking the layers as rtl_gtdp_run
 * does: a block GTDP splits costs its slowest part (the part's fixed cost,
 * its transfer, its compute), the layers between run here at their
 * measured time. comp (or NULL) gets the components: per block its
 * slowest part's and the device's layers. */
static double predicted_ms(rtl_model *m, const rtl_gtdp_worker *w, int n, int equal, double extra, cJSON *comp)
{
    double t = 0, here = 0;
    int L = model_info(m).layers;
    cJSON *blocks = comp ? cJSON_AddArrayToObject(comp, "blocks") : NULL;
    for (int i = 0; i < L;) {
        rtl_gtdp_layer g;
        rtl_gtdp_layer_plan p;
        if (rtl_gtdp_model_split(m, i, &g) == 0 &&
            ((equal && rtl_gtdp_plan_equal(&g, w, n, &p, NULL) == 0) || rtl_gtdp_plan_layer(&g, w, n, &p, NULL) == 0)) {
            t += p.ms + extra;
            if (blocks) {
                const rtl_gtdp_part *s = &p.parts[0];
                for (int k = 1; k < p.nparts; k++)
                    if (p.parts[k].ms > s->ms) s = &p.parts[k];
                cJSON *o = cJSON_CreateObject();
                cJSON_AddNumberToObject(o, "layer", i);
                cJSON_AddNumberToObject(o, "ms", p.ms + extra);
                cJSON_AddNumberToObject(o, "slowest_worker", s->worker + 1);
                cJSON_AddNumberToObject(o, "fixed_ms", w[s->worker].rtt_ms);
                cJSON_AddNumberToObject(o, "transfer_ms", s->transfer_ms);
                cJSON_AddNumberToObject(o, "compute_ms", s->compute_ms);
                cJSON_AddNumberToObject(o, "block_extra_ms", extra);
                cJSON_AddItemToArray(blocks, o);
            }
            i = g.last + 1;
            continue;
        }
        int j = i; /* here: layers i..j up to the next possible cut */
        while (j + 1 < L && !model_cut_ok(m, j + 1)) j++;
        for (; i <= j; i++) {
            rtl_layer_cost lc;
            rtl_model_layer_cost(m, i, &lc);
            here += lc.host_ms;
        }
    }
    if (comp) cJSON_AddNumberToObject(comp, "device_layers_ms", here), cJSON_AddNumberToObject(comp, "block_extra_ms", extra);
    return t + here;
}

/* One untimed forward over the workers that measures (a cut, the
 * calibration), preceded as every timed one is by a forward of this host
 * alone (rtl_model_run; the timed loop compares the two): the workers' and
 * the device's caches then hold what they hold in the timed forwards
 * (without it, conv1's cut by channels measured 2.8 ms against rows' 2.7,
 * and ran 3.1 ms against 2.4 in the timed forwards). */
static int measuring_run(rtl_model *m, rtl_peer **peers, const rtl_gtdp_worker *w, int nw, const float *x,
                         int deadline, int flags, rtl_gtdp_stats *st, rtl_err *err)
{
    if (rtl_model_run(m, x, err) != 0) return -1;
    return rtl_gtdp_run(m, peers, w, nw, x, deadline, flags, st, err);
}

/* Each block's cut chosen from forwards over the workers, all computing at
 * once as they will in the timed runs (the calibration of the parts'
 * compute is one process alone, and two workers computing at once are
 * slower than it says, by how much depending on the cut). A block's time
 * depends on its own cut and on the cut of the split block before it,
 * whose answers its workers hold (rtl_gtdp_run: a row cut after a channel
 * cut, or the other way round, sends each worker most of its input, after
 * the same cut only the halo rows): a chain. So the untimed forwards cut
 * the split blocks alternately, a, b, a, b, ..., once for every ordered
 * pair (a, b) of the candidates (rows only, channels only, and, over more
 * than two workers, as the planner likes best): every block is then
 * measured after every cut of the block before it. 5 forwards per pair
 * (3 over more than two workers), taking turns; a block's time after a
 * cut is their median (the first block's: of all the forwards with its
 * cut). The kept
 * cuts are the chain of the least summed time (dynamic programming over
 * the blocks), for the plan, the prediction and the timed runs. Named
 * approximation: a block's time is taken to depend on the block before it
 * only (the caches hold what earlier blocks left, whatever their cuts). */
static int choose_dims(rtl_model *m, rtl_peer **peers, const rtl_gtdp_worker *w, int nw, const float *x,
                       int deadline, int flags, rtl_gtdp_stats *st, cJSON *doc, rtl_err *err)
{
    static const int cand[3] = {RTL_GTDP_ROWS, RTL_GTDP_CHANNELS, 0};
    static const char *name[3] = {"rows", "channels", "both"};
    static rtl_gtdp_stats cs;
    int L = model_info(m).layers, nc = nw > 2 ? 3 : 2, rc = -1, nb = 0;
    enum { REPS = 5 };
    int reps = nc == 2 ? REPS : 3; /* 20 forwards over two workers, 27 over more */
    int *blk = malloc((size_t)L * sizeof *blk), *pick = malloc((size_t)L * 3 * sizeof *pick);
    int *chosen = malloc((size_t)L * sizeof *chosen); /* the kept cut per block */
    /* t[((k * 3 + prev) * 3 + cur) * 3 * REPS + s]: block k after prev, with cur (sample s) */
    double *t = malloc((size_t)L * 27 * REPS * sizeof *t), *best = malloc((size_t)L * 3 * sizeof *best);
    int *nt = calloc((size_t)L * 9, sizeof *nt);
    if (!blk || !pick || !chosen || !t || !best || !nt) {
        snprintf(err->msg, sizeof err->msg, "out of memory");
        goto out;
    }
    for (int i = 0; i < L; i++) {
        rtl_gtdp_layer g;
        if (rtl_gtdp_model_split(m, i, &g) == 0) blk[nb++] = i;
    }
    /* the pairs take turns, forward by forward, so that a busy spell of
     * the machine falls on all of them */
    for (int r = 0; r < reps; r++)
        for (int a = 0; a < nc; a++)
            for (int b = 0; b < nc; b++) {
                for (int k = 0; k < nb; k++)
                    if (rtl_gtdp_set_dims(m, blk[k], cand[k % 2 ? b : a], err) != 0) goto out;
                if (measuring_run(m, peers, w, nw, x, deadline, flags, &cs, err) != 0) goto out;
                st->recomputed += cs.recomputed;
                if (cs.last_failure[0]) snprintf(st->last_failure, sizeof st->last_failure, "%s", cs.last_failure);
                for (int k = 0; k < nb; k++) {
                    int cur = k % 2 ? b : a, prev = k == 0 ? 0 : (k % 2 ? a : b);
                    int *n = &nt[(k * 3 + prev) * 3 + cur];
                    if (*n < 3 * REPS) t[((k * 3 + prev) * 3 + cur) * 3 * REPS + (*n)++] = rtl_gtdp_block_ms(&cs, blk[k]);
                }
            }
    if (rtl_gtdp_set_dims(m, -1, 0, err) != 0) goto out;
    /* cost[k][prev][cur]: the median, -1 where a worker failed in one of
     * its forwards (then that cut is not kept there) */
    for (int k = 0; k < nb; k++)
        for (int pc = 0; pc < 9; pc++) {
            int n = nt[k * 9 + pc], missing = 0;
            double *v = &t[(k * 9 + pc) * 3 * REPS];
            for (int s = 0; s < n; s++) missing |= v[s] < 0;
            v[0] = n && !missing ? median(v, n) : -1;
        }
#define COST(k, p, c) t[(((k) * 3 + ((k) ? (p) : 0)) * 3 + (c)) * 3 * REPS]
    /* best[k][c]: the least summed time of blocks 0..k with block k cut c */
    for (int k = 0; k < nb; k++)
        for (int c = 0; c < nc; c++) {
            best[k * 3 + c] = -1, pick[k * 3 + c] = -1;
            for (int p = 0; p < (k ? nc : 1); p++) {
                double v = COST(k, p, c), before = k ? best[(k - 1) * 3 + p] : 0;
                if (v < 0 || before < 0) continue;
                if (best[k * 3 + c] < 0 || before + v < best[k * 3 + c]) best[k * 3 + c] = before + v, pick[k * 3 + c] = p;
            }
        }
    int c = -1;
    for (int cc = 0; nb && cc < nc; cc++)
        if (best[(nb - 1) * 3 + cc] >= 0 && (c < 0 || best[(nb - 1) * 3 + cc] < best[(nb - 1) * 3 + c])) c = cc;
    if (c < 0) { /* a worker failed: the planner's choice everywhere */
        rc = 0;
        goto out;
    }
    for (int k = nb - 1; k >= 0; k--) chosen[k] = c, c = k ? pick[k * 3 + c] : -1;
    cJSON *arr = cJSON_AddArrayToObject(doc, "cuts");
    for (int k = 0; k < nb; k++) {
        if (rtl_gtdp_set_dims(m, blk[k], cand[chosen[k]], err) != 0) goto out;
        int p = k ? chosen[k - 1] : 0;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "layer", blk[k]);
        cJSON_AddStringToObject(o, "cut", name[chosen[k]]);
        /* its time after the kept cut of the block before, per cut; and
         * per cut of the block before ("after") */
        for (int cc = 0; cc < nc; cc++) cJSON_AddNumberToObject(o, name[cc], COST(k, p, cc));
        cJSON *after = cJSON_AddObjectToObject(o, "after");
        for (int pp = 0; pp < (k ? nc : 1); pp++) {
            cJSON *e = cJSON_AddObjectToObject(after, k ? name[pp] : "none");
            for (int cc = 0; cc < nc; cc++) cJSON_AddNumberToObject(e, name[cc], COST(k, pp, cc));
        }
        cJSON_AddItemToArray(arr, o);
    }
#undef COST
    rc = 0;
out:
    free(blk), free(pick), free(chosen), free(t), free(best), free(nt);
    return rc;
}

/* --trace: the timed forwards' pieces on this device, medians over the
 * forwards whose records have the first one's shape (a forward where a
 * worker failed has other parts). */
enum { TR_TOTAL, TR_BLK_START, TR_BLK_END, TR_PART };
/* The median over the forwards shaped as the first of one trace value:
 * the forward's total, block i's start or end, part i's step s. */
static double trace_med(const rtl_gtdp_stats *tr, long n, double *v, int what, int i, int s)
{
    long k = 0;
    for (long f = 0; f < n; f++) {
        if (tr[f].nrec != tr[0].nrec || tr[f].nblk != tr[0].nblk) continue;
        v[k++] = what == TR_TOTAL       ? tr[f].total_ms
                 : what == TR_BLK_START ? tr[f].blk[i].start_ms
                 : what == TR_BLK_END   ? tr[f].blk[i].end_ms
                                        : tr[f].rec[i].t[s];
    }
    return median(v, k);
}

static cJSON *trace_json(const rtl_gtdp_stats *tr, long n)
{
    static const char *step[RTL_IO_T_N] = {"start", "filled", "sealed", "sent", "reply", "received", "opened", "placed"};
    cJSON *o = cJSON_CreateObject(), *blocks = cJSON_AddArrayToObject(o, "blocks"), *parts = cJSON_AddArrayToObject(o, "parts");
    double *v = malloc((size_t)n * sizeof *v);
    if (!v) return o;
    cJSON_AddNumberToObject(o, "total_ms", trace_med(tr, n, v, TR_TOTAL, 0, 0));
    for (int b = 0; b < tr[0].nblk; b++) {
        const rtl_gtdp_block_rec *B = &tr[0].blk[b];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "layer", B->layer);
        cJSON_AddNumberToObject(e, "last", B->last);
        cJSON_AddBoolToObject(e, "device", B->device);
        cJSON_AddNumberToObject(e, "start_ms", trace_med(tr, n, v, TR_BLK_START, b, 0));
        cJSON_AddNumberToObject(e, "end_ms", trace_med(tr, n, v, TR_BLK_END, b, 0));
        cJSON_AddItemToArray(blocks, e);
    }
    for (int p = 0; p < tr[0].nrec; p++) {
        const rtl_gtdp_part_rec *R = &tr[0].rec[p];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "layer", R->layer);
        cJSON_AddNumberToObject(e, "worker", R->worker + 1);
        cJSON_AddNumberToObject(e, "sent_floats", (double)R->sent);
        cJSON_AddNumberToObject(e, "answered_floats", (double)R->answered);
        cJSON_AddNumberToObject(e, "compute_ms", R->compute_ms);
        for (int s = 0; s < RTL_IO_T_N; s++) cJSON_AddNumberToObject(e, step[s], trace_med(tr, n, v, TR_PART, p, s));
        cJSON_AddItemToArray(parts, e);
    }
    free(v);
    return o;
}

/* The calibration forwards' two stages of three (first image, untimed,
 * after the warm-up): each fits the parts' cost (a fixed cost per part and
 * worker, the compute's factor) and the block's cost beyond its slowest
 * part; they replace the handshake's round trip in w and give the
 * prediction *pred. -1 with err when a forward failed. */
static int calibrate_parts(rtl_model *m, rtl_peer **peers, rtl_gtdp_worker *w, int nw, const float *x, int deadline,
                           int flags, rtl_gtdp_stats *stp, cJSON *doc, int equal, double *predp, rtl_err *err)
{
    int ok = 1;
    rtl_gtdp_stats st = *stp;
    double pred;
    static rtl_gtdp_stats cs[3]; /* their failures count with the warm-up's */
    /* Two stages of three forwards, each fitting the parts' cost
     * (rtl_gtdp_fit_parts: a fixed cost per part and worker, the
     * compute's factor) and the block's cost beyond its slowest
     * part (rtl_gtdp_block_extra: the median of the three
     * forwards'). The first stage's plan charges the handshake's
     * round trip, one exchange that a busy worker can stretch to
     * many ms; the second's the first's fit, so that its parts are
     * those of the timed runs' plan. */
    double ov[RTL_GTDP_MAX_WORKERS], ex[3] = {0, 0, 0}, extra = 0, slope = 0, factor = 1,
           speed0[RTL_GTDP_MAX_WORKERS];
    const rtl_gtdp_stats *csp[3] = {&cs[0], &cs[1], &cs[2]};
    for (int q = 0; q < nw; q++) speed0[q] = w[q].speed, ov[q] = -1;
    for (int stage = 0; stage < 2 && ok; stage++) {
        for (int r = 0; r < 3 && ok; r++) {
            if (measuring_run(m, peers, w, nw, x, deadline, flags, &cs[r], err) != 0) ok = 0;
            st.recomputed += cs[r].recomputed;
            if (cs[r].last_failure[0]) snprintf(st.last_failure, sizeof st.last_failure, "%s", cs[r].last_failure);
        }
        if (!ok) break;
        rtl_gtdp_fit_parts(csp, 3, nw, ov, &slope);
        for (int r = 0; r < 3; r++) ex[r] = rtl_gtdp_block_extra(&cs[r], ov, slope, nw);
        extra = median(ex, 3);
        /* the fitted fixed cost replaces the round trip (a worker
         * that answered no part keeps it); the compute's factor
         * slows every worker alike */
        factor *= 1 + slope;
        for (int q = 0; q < nw; q++) {
            if (ov[q] >= 0) w[q].rtt_ms = ov[q];
            w[q].speed = speed0[q] / factor;
        }
    }
    cJSON *jov = cJSON_AddArrayToObject(doc, "part_overhead_ms");
    for (int q = 0; q < nw; q++) cJSON_AddItemToArray(jov, cJSON_CreateNumber(ov[q]));
    cJSON_AddNumberToObject(doc, "compute_factor", factor);
    cJSON_AddNumberToObject(doc, "block_extra_ms", extra);
    pred = predicted_ms(m, w, nw, equal, extra, cJSON_AddObjectToObject(doc, "predicted"));
    cJSON_AddNumberToObject(doc, "predicted_ms", pred);
    *stp = st;
    *predp = pred;
    return ok ? 0 : -1;
}

/* One image's GTDP result: into the JSON results, and as text. */
struct gtdp_times {
    double mg, ml, pred; /* medians over the workers, this host alone; the prediction */
    long repeat;
};
static void gtdp_result(const char *image, const struct gtdp_times *t, const rtl_gtdp_stats *total,
                        const rtl_class *cls, size_t nt, const rtl_gtdp_stats *tr, int nw, int json, cJSON *results)
{
    double mg = t->mg, ml = t->ml, pred = t->pred;
    long repeat = t->repeat;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "image", image);
    cJSON_AddNumberToObject(r, "ms_median", mg);
    cJSON_AddNumberToObject(r, "local_ms_median", ml);
    cJSON_AddNumberToObject(r, "speedup", ml / mg);
    cJSON_AddNumberToObject(r, "split_layers", total->split_layers);
    cJSON_AddNumberToObject(r, "parts", total->parts);
    cJSON_AddNumberToObject(r, "recomputed", total->recomputed);
    cJSON_AddNumberToObject(r, "bytes", (double)total->bytes);
    cJSON_AddNumberToObject(r, "held_parts", total->held);
    if (total->last_failure[0]) cJSON_AddStringToObject(r, "failure", total->last_failure);
    cJSON_AddItemToObject(r, "top", top_json(cls, nt));
    if (tr) cJSON_AddItemToObject(r, "trace", trace_json(tr, repeat));
    cJSON_AddItemToArray(results, r);
    if (!json) {
        printf("%s: GTDP over %d workers %.3f ms (median of %ld), this host alone %.3f ms: %.2fx; predicted "
               "%.3f ms; %d layers split, %d parts, %d recomputed here\n",
               image, nw, mg, repeat, ml, ml / mg, pred, total->split_layers, total->parts, total->recomputed);
        if (total->last_failure[0]) printf("  a worker failed: %s\n", total->last_failure);
        for (size_t q = 0; q < nt; q++) printf("  %2zu %-24s %.6f\n", cls[q].index, cls[q].label, cls[q].prob);
    }
}

/* Connects to every worker; a worker's round trip, measured: the
 * handshake is three round trips (TCP's, the hellos', the ready frames')
 * through both ends' poll loops, as a part's request and reply go; charged
 * once per part. A worker that cannot be reached gets its parts run here. */
static void connect_workers(struct gtdp_cli *g, rtl_peer **peers, const rtl_peer_key *me, const rtl_peer_key *srv,
                            cJSON *doc)
{
    cJSON *jrtt = cJSON_AddArrayToObject(doc, "rtt_ms");
    for (int a = 0; a < g->nw; a++) {
        rtl_err pe;
        double t0 = now_ms();
        peers[a] = rtl_peer_connect(g->ws[a].host, g->ws[a].port, me, srv->pk, (int)g->deadline, &pe);
        if (peers[a]) g->w[a].rtt_ms = (now_ms() - t0) / 3;
        cJSON_AddItemToArray(jrtt, cJSON_CreateNumber(g->w[a].rtt_ms));
        if (!peers[a]) fprintf(stderr, "rtl: warning: worker %d (%s:%d): %s; its parts run here\n", a + 1,
                               g->ws[a].host, g->ws[a].port, pe.msg);
    }
}

/* The layers' times here (runs forwards of x), the part threads pinned
 * (--part-cpus, this host's rtl), the parts' costs on this host the way the
 * workers compute them. */
static int gtdp_prepare(rtl_model *m, const struct gtdp_cli *g, const float *x, long runs, void **pin, rtl_err *err)
{
    if (rtl_model_profile_layers(m, x, (uint32_t)runs, err) != 0) return -1;
#ifdef RTL_SIM
    rtl_gtdp_hooks hooks;
    if (g->ncpu && (!(*pin = rtl_emu_cpus_new(g->cpus, g->ncpu, &hooks, err)) || rtl_gtdp_set_hooks(m, &hooks, err) != 0))
        return -1;
#else
    (void)g, (void)pin;
#endif
    return rtl_gtdp_calibrate(m, 3, err);
}

/* Parses rtl run --workers's options into g; the operands' index, or -1
 * with *rc (0 after --help, 2 on bad usage). */
static int gtdp_parse(int argc, char **argv, struct gtdp_cli *g, int *rc)
{
    ck_opt opts[GTDP_NOPTS];
    ck_verb v;
    gtdp_verb(g, opts, &v);
    int i = sub_opts(argc, argv, &v, 3, INT_MAX, rc);
    if (i < 0) return -1;
    *rc = 2;
    if (!g->workers_arg || parse_list(g->workers_arg, g->ws, g->w, &g->nw) != 0)
        return ck_usage_of("rtl", &v, "--workers needs HOST:PORT[@SPEED[@MBPS]] items joined by ',' (at most 8), "
                           "not '%s'", g->workers_arg ? g->workers_arg : ""), -1;
    if (g->cuts_arg && !strcmp(g->cuts_arg, "rows")) g->cuts = RTL_GTDP_ROWS;
    else if (g->cuts_arg && !strcmp(g->cuts_arg, "channels")) g->cuts = RTL_GTDP_CHANNELS;
    else if (g->cuts_arg) return ck_usage_of("rtl", &v, "--cuts is rows or channels, not '%s'", g->cuts_arg), -1;
#ifdef RTL_SIM
    if (g->cpus_arg && parse_cpus(g->cpus_arg, g->cpus, &g->ncpu) != 0)
        return ck_usage_of("rtl", &v, "--part-cpus needs CPU numbers this process may use (or -1) joined by ',' "
                           "(at most 8), not '%s'", g->cpus_arg), -1;
#endif
    if (!g->pk || !g->dk) return ck_usage_of("rtl", &v, "--workers needs --peer-key and --device-key"), -1;
    if (g->ncpu && g->ncpu != g->nw)
        return ck_usage_of("rtl", &v, "--part-cpus needs one CPU per worker (%s)", g->ncpu < g->nw ? "too few" :
                           "too many"), -1;
    return i;
}

int cmd_run_gtdp(rtl_store *s, int argc, char **argv)
{
    keep_freed_memory();
    struct gtdp_cli g = GTDP_CLI_DEFAULTS;
    int rc, i = gtdp_parse(argc, argv, &g, &rc);
    if (i < 0) return rc;
    rtl_gtdp_worker *w = g.w;
    int nw = g.nw, json = g.json, equal = g.equal, resend = g.resend, trace = g.trace, cuts = g.cuts;
    long repeat = (long)g.repeat, warmup = (long)g.warmup, runs = (long)g.runs, deadline = (long)g.deadline,
         threads = (long)g.threads, top = (long)g.top;
    void *pin = NULL; /* the part threads' CPUs (this host's rtl: rtl_emu_cpus) */
    rtl_err err;
    rtl_peer_key me, srv;
    if (rtl_peer_key_load(g.dk, 1, &me, &err) != 0 || rtl_peer_key_load(g.pk, 0, &srv, &err) != 0) return fail(&err);
    rtl_catalog *cat;
    rtl_model *m = open_variant(s, argv[i], argv[i + 1], threads, &cat);
    if (!m) return 1;
    int status = 0;
    rtl_peer *peers[RTL_GTDP_MAX_WORKERS] = {0};
    rtl_model_info mi = model_info(m);
    size_t in = mi.input_size, k = (size_t)top < mi.classes ? (size_t)top : mi.classes;
    float *x = malloc(in * sizeof *x);
    rtl_class *cls = calloc(k, sizeof *cls);
    double *tg = calloc((size_t)repeat, sizeof *tg), *tl = calloc((size_t)repeat, sizeof *tl);
    rtl_gtdp_stats *tr = trace ? calloc((size_t)repeat, sizeof *tr) : NULL;
    cJSON *doc = cJSON_CreateObject(), *results = cJSON_AddArrayToObject(doc, "results");
    if (!x || !cls || !tg || !tl || !results || (trace && !tr)) {
        fprintf(stderr, "rtl: error: out of memory\n");
        status = 1;
        goto done;
    }
    for (size_t q = 0; q < in; q++) x[q] = (float)((uint32_t)(q * 2654435761u) >> 24) / 256.0f;
    if (gtdp_prepare(m, &g, x, runs, &pin, &err) != 0) {
        status = fail(&err);
        goto done;
    }
    int flags = (equal ? RTL_GTDP_EQUAL : 0) | (resend ? RTL_GTDP_RESEND : 0);
    connect_workers(&g, peers, &me, &srv, doc);
    /* predicted with the handshake's round trip as each part's fixed cost;
     * then (below) with what a part costs in a calibration forward */
    double pred_rtt = predicted_ms(m, w, nw, equal, 0, NULL), pred = pred_rtt;
    int calibrated = 0;
    cJSON_AddStringToObject(doc, "catalog", argv[i]);
    cJSON_AddStringToObject(doc, "variant", argv[i + 1]);
    cJSON_AddNumberToObject(doc, "workers", nw);
    cJSON_AddNumberToObject(doc, "predicted_rtt_ms", pred_rtt);
    cJSON_AddStringToObject(doc, "split", equal ? "equal" : "gtdp");
    for (int a = i + 2; a < argc; a++) {
        if (rtl_model_image_input(m, argv[a], x, &err) != 0) {
            status = fail(&err);
            continue;
        }
        rtl_gtdp_stats st = {0}, total = {0};
        int ok = 1;
        for (long r = 0; r < warmup && ok; r++)
            if (rtl_gtdp_run(m, peers, w, nw, x, (int)deadline, flags, &st, &err) != 0) ok = 0;
        /* The calibration forwards (first image only, untimed, after the
         * warm-up: the workers' part networks are built): what each part
         * really cost beyond its predicted compute and transfer, per worker,
         * becomes that worker's fixed cost per part in the plan and the
         * prediction (never less than the handshake's round trip), before
         * any timed forward. */
        if (ok && !calibrated && !equal && nw > 1) /* --cuts, else each block's measured */
            ok = (cuts >= 0 ? rtl_gtdp_set_dims(m, -1, cuts, &err)
                            : choose_dims(m, peers, w, nw, x, (int)deadline, flags, &st, doc, &err)) == 0;
        if (ok && !calibrated) {
            ok = calibrate_parts(m, peers, w, nw, x, (int)deadline, flags, &st, doc, equal, &pred, &err) == 0;
            calibrated = 1;
        }
        if (st.last_failure[0]) snprintf(total.last_failure, sizeof total.last_failure, "%s", st.last_failure);
        total.recomputed = st.recomputed;
        for (long r = 0; r < repeat && ok; r++) {
            double t0 = now_ms();
            if (rtl_model_run(m, x, &err) != 0) ok = 0;
            tl[r] = now_ms() - t0;
            t0 = now_ms();
            if (ok && rtl_gtdp_run(m, peers, w, nw, x, (int)deadline, flags, &st, &err) != 0) ok = 0;
            tg[r] = now_ms() - t0;
            if (tr) tr[r] = st;
            total.split_layers = st.split_layers;
            total.parts += st.parts, total.recomputed += st.recomputed, total.bytes += st.bytes;
            total.held += st.held;
            if (st.last_failure[0]) snprintf(total.last_failure, sizeof total.last_failure, "%s", st.last_failure);
        }
        if (!ok) {
            status = fail(&err);
            continue;
        }
        size_t nt;
        if (rtl_model_top(m, k, cls, &nt, &err) != 0) {
            status = fail(&err);
            continue;
        }
        struct gtdp_times gt = {.mg = median(tg, repeat), .ml = median(tl, repeat), .pred = pred, .repeat = repeat};
        gtdp_result(argv[a], &gt, &total, cls, nt, tr, nw, json, results);
    }
    if (json) {
        char *t = cJSON_Print(doc);
        if (t) puts(t);
        free(t);
    }
done:
    cJSON_Delete(doc);
    for (int a = 0; a < nw; a++) rtl_peer_close(peers[a]);
    free(x), free(cls), free(tg), free(tl), free(tr);
    rtl_model_close(m);
    rtl_catalog_close(cat);
#ifdef RTL_SIM
    rtl_emu_cpus_free(pin);
#endif
    (void)pin;
    return status;
}
