/*
 * rtl_nestbench.c: the measuring half of tests/bench/nested_switch.sh.
 *
 *   rtl-nestbench ROOT CATALOG NESTED INDEPENDENT K RUNS
 *
 * In one process, page cache warm, RUNS times each (interleaved), median:
 *   open   rtl_model_open of INDEPENDENT (capacity K built as its own
 *          variant) + its first forward, and the open alone;
 *   up     rtl_model_set_capacity(NESTED, K) from capacity K-1 + the first
 *          forward, and the switch alone (the madvise calls inside it, and
 *          the time they took); the same switch of a second copy opened
 *          with async_paging (a pager thread makes the madvise calls):
 *          the call alone, when the pager finished after the call began
 *          and how long its calls took (measured with no forward beside
 *          them), and the call with the first forward;
 *   down   the same from capacity K+1 (when K is not the largest).
 * Every timed switch starts with the pager idle. Prints the medians, the
 * ratios open/switch, and the bytes each switch paged in/out (what the
 * call reports and what the pager moved, both modes) against the
 * manifest's page_in_bytes/page_out_bytes of capacity K-1 (K+1) for target
 * K (EQUAL or DIFFERENT).
 */
#include "rtl.h"
#include "internal.h" /* functions librtl no longer exports (issue 38) */

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The manifest's page bytes of capacity `from` (1-based) to `to`. */
static long long manifest_bytes(const rtl_variant *v, int from, int to, const char *key)
{
    cJSON *tf = cJSON_Parse(rtl_variant_fields_json(v));
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(tf, "capacities"), from - 1);
    char k[16];
    snprintf(k, sizeof k, "%d", to);
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(c, key), k);
    long long r = cJSON_IsNumber(b) ? (long long)b->valuedouble : -1;
    cJSON_Delete(tf);
    return r;
}

static int die(const rtl_err *e)
{
    fprintf(stderr, "rtl-nestbench: %s\n", e->msg);
    return 1;
}

struct dir {
    int from;
    double *call, *run, *busy, *acall, *arun, *adone, *abusy;
    long long tlb; /* TLB shootdowns (system-wide) during the timed calls alone; -1: not counted */
    rtl_switch_bytes sb, asb;
    rtl_paging_stats moved, amoved; /* of the last timed switch */
    int ok;                         /* every switch's bytes the same */
};

/* The TLB shootdown interrupts the system has taken (x86's "TLB" line of
 * /proc/interrupts, summed over the CPUs), or -1 where there is none
 * (arm64 broadcasts its TLB invalidations). */
static long long tlb_shootdowns(void)
{
    FILE *f = fopen("/proc/interrupts", "r");
    if (!f) return -1;
    char line[4096];
    long long sum = -1;
    while (fgets(line, sizeof line, f)) {
        char *p = line;
        while (*p == ' ') p++;
        if (strncmp(p, "TLB:", 4) != 0) continue;
        sum = 0;
        for (p += 4;;) {
            char *end;
            long long v = strtoll(p, &end, 10);
            if (end == p) break;
            sum += v;
            p = end;
        }
        break;
    }
    fclose(f);
    return sum;
}

static rtl_paging_stats delta(rtl_paging_stats a, rtl_paging_stats b)
{
    rtl_paging_stats d = {b.transitions - a.transitions, b.ranges - a.ranges, b.syscalls - a.syscalls,
                          b.page_in - a.page_in,
                          b.page_out - a.page_out, b.advised_in - a.advised_in, b.advised_out - a.advised_out,
                          b.busy_ms - a.busy_ms, b.done_ms};
    return d;
}

/* One timed switch of m from d->from to k: with_run 0: the call alone,
 * then (pager) its madvise calls awaited; 1: the call and the first
 * forward. Fills *call, *run or *done, *busy. */
static int timed(rtl_model *m, int k, int from, const float *x, int with_run, double *call, double *run, double *done,
                 double *busy, rtl_switch_bytes *sb, rtl_paging_stats *moved, long long *tlb, rtl_err *e)
{
    rtl_paging_stats a, b;
    if (rtl_model_set_capacity(m, from, e) != 0 || rtl_model_run(m, x, e) != 0) return -1;
    rtl_model_paging_wait(m, &a);
    long long s0 = tlb ? tlb_shootdowns() : -1;
    double t0 = now_ms();
    if (rtl_model_set_capacity(m, k, e) != 0) return -1;
    double t1 = now_ms();
    long long s1 = tlb ? tlb_shootdowns() : -1;
    if (tlb) *tlb = s0 < 0 || s1 < 0 || *tlb < 0 ? -1 : *tlb + (s1 - s0);
    if (with_run && rtl_model_run(m, x, e) != 0) return -1;
    double t2 = now_ms();
    rtl_model_paging_wait(m, &b);
    *call = t1 - t0;
    if (with_run) *run = t2 - t0;
    rtl_model_info mi;
    if (rtl_model_describe(m, &mi, sizeof mi, e) != 0) return -1;
    *sb = mi.last_switch;
    *moved = delta(a, b);
    if (done) *done = b.done_ms - t0;
    if (busy) *busy = b.busy_ms - a.busy_ms;
    if (!with_run && rtl_model_run(m, x, e) != 0) return -1; /* its pages back in, untimed */
    return 0;
}

static double *col(int runs) { return calloc((size_t)runs, sizeof(double)); }

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: rtl-nestbench ROOT CATALOG NESTED INDEPENDENT K RUNS\n");
        return 2;
    }
    int k = atoi(argv[5]), runs = atoi(argv[6]);
    if (runs < 1 || runs > 10000 || k < 1) return 2;
    rtl_err e;
    rtl_store *s;
    rtl_catalog *cat = bench_catalog(argv[1], argv[2], &s, &e);
    if (!cat) return die(&e);
    rtl_model_options mo = {.threads = 1}, ao = {.threads = 1, .async_paging = 1};
    rtl_model *nest = rtl_model_open(cat, argv[3], &mo, &e);
    if (!nest) return die(&e);
    rtl_model *anest = rtl_model_open(cat, argv[3], &ao, &e);
    if (!anest) return die(&e);
    rtl_model_info mi;
    if (rtl_model_describe(nest, &mi, sizeof mi, &e) != 0) return die(&e);
    int ncap = mi.capacities;
    if (k > ncap) {
        fprintf(stderr, "rtl-nestbench: %s has %d capacities\n", argv[3], ncap);
        return 1;
    }
    if (rtl_model_paging_wait(nest, NULL) != 0 || rtl_model_paging_wait(anest, NULL) != 1) {
        fprintf(stderr, "rtl-nestbench: the async_paging copy has no pager thread\n");
        return 1;
    }
    float *x = calloc(mi.input_size, sizeof *x);
    for (size_t i = 0; i < mi.input_size; i++) x[i] = (float)((i * 2654435761u) >> 24) / 256.0f;
    double *open_ms = col(runs), *open_run = col(runs);
    struct dir d[2] = {{.from = k - 1}, {.from = k + 1}};
    int have[2] = {k > 1, k < ncap};
    for (int j = 0; j < 2; j++) {
        d[j].call = col(runs), d[j].run = col(runs), d[j].busy = col(runs);
        d[j].acall = col(runs), d[j].arun = col(runs), d[j].adone = col(runs), d[j].abusy = col(runs);
        d[j].ok = 1;
    }
    /* warm everything once */
    if (rtl_model_run(nest, x, &e) != 0 || rtl_model_run(anest, x, &e) != 0) return die(&e);
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        rtl_model *m = rtl_model_open(cat, argv[4], &mo, &e);
        if (!m) return die(&e);
        double t1 = now_ms();
        if (rtl_model_run(m, x, &e) != 0) return die(&e);
        double t2 = now_ms();
        rtl_model_close(m);
        open_ms[r] = t1 - t0;
        open_run[r] = t2 - t0;
        for (int j = 0; j < 2; j++) {
            if (!have[j]) continue;
            struct dir *q = &d[j];
            double ignore;
            rtl_switch_bytes sb[4];
            rtl_paging_stats mv[4];
            if (timed(nest, k, q->from, x, 0, &q->call[r], NULL, NULL, &q->busy[r], &sb[0], &mv[0], &q->tlb, &e) ||
                timed(nest, k, q->from, x, 1, &ignore, &q->run[r], NULL, NULL, &sb[1], &mv[1], NULL, &e) ||
                timed(anest, k, q->from, x, 0, &q->acall[r], NULL, &q->adone[r], &q->abusy[r], &sb[2], &mv[2], NULL, &e) ||
                timed(anest, k, q->from, x, 1, &ignore, &q->arun[r], NULL, NULL, &sb[3], &mv[3], NULL, &e))
                return die(&e);
            for (int i = 1; i < 4; i++)
                if (memcmp(&sb[i], &sb[0], sizeof sb[0]) != 0 || mv[i].page_in != mv[0].page_in ||
                    mv[i].page_out != mv[0].page_out || mv[i].transitions != 1)
                    q->ok = 0;
            q->sb = sb[0], q->moved = mv[0], q->asb = sb[2], q->amoved = mv[2];
        }
    }
    double o = median(open_ms, runs), orun = median(open_run, runs);
    const rtl_variant *v = mi.variant;
    printf("open %s (capacity %d as its own variant): %.4f ms; with its first forward %.4f ms\n", argv[4], k, o, orun);
    for (int j = 0; j < 2; j++) {
        if (!have[j]) continue;
        struct dir *q = &d[j];
        const char *name = j ? "downgrade" : "upgrade";
        double c = median(q->call, runs), run = median(q->run, runs), busy = median(q->busy, runs);
        double ac = median(q->acall, runs), arun = median(q->arun, runs), adone = median(q->adone, runs);
        double abusy = median(q->abusy, runs);
        printf("%s %d -> %d: %.4f ms (%.1fx faster than open), of which advising %llu page ranges in %llu system "
               "call(s) %.4f ms; with the first forward %.4f ms (%.1fx)\n",
               name, q->from, k, c, o / c, (unsigned long long)q->moved.ranges,
               (unsigned long long)q->moved.syscalls, busy, run, orun / run);
        if (q->tlb >= 0)
            printf("%s %d -> %d: TLB shootdown interrupts during the %d timed calls (system-wide): %lld\n", name,
                   q->from, k, runs, q->tlb);
        printf("%s %d -> %d with async_paging (a pager thread): the call %.4f ms (%.1fx), the pager done %.4f ms "
               "after it began (%.1fx), %.4f ms in its system call(s); with the first forward %.4f ms (%.1fx)\n",
               name, q->from, k, ac, o / ac, adone, o / adone, abusy, arun, orun / arun);
        long long want = manifest_bytes(v, q->from, k, j ? "page_out_bytes" : "page_in_bytes");
        uint64_t got = j ? q->sb.page_out : q->sb.page_in, other = j ? q->sb.page_in : q->sb.page_out;
        uint64_t pg = j ? q->moved.page_out : q->moved.page_in, apg = j ? q->amoved.page_out : q->amoved.page_in;
        uint64_t adv = j ? q->moved.advised_out : q->moved.advised_in;
        int eq = q->ok && want == (long long)got && other == 0 && pg == got && apg == got;
        printf("%s %d -> %d: paged %s %llu bytes (moved: %llu, %llu in whole pages; the pager: %llu), %s %llu; "
               "manifest %lld: %s\n",
               name, q->from, k, j ? "out" : "in", (unsigned long long)got, (unsigned long long)pg,
               (unsigned long long)adv, (unsigned long long)apg, j ? "in" : "out", (unsigned long long)other, want,
               eq ? "EQUAL" : "DIFFERENT");
    }
    for (int j = 0; j < 2; j++) {
        free(d[j].call), free(d[j].run), free(d[j].busy);
        free(d[j].acall), free(d[j].arun), free(d[j].adone), free(d[j].abusy);
    }
    free(open_ms), free(open_run), free(x);
    rtl_model_close(nest);
    rtl_model_close(anest);
    rtl_catalog_close(cat);
    rtl_store_close(s);
    return 0;
}
