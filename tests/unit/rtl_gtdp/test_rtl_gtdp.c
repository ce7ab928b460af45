/* Unit tests of MeDNN's GTDP planner (runtime-lite/src/gtdp.c): the parts
 * tile each layer's output exactly (every worker once), the halo rows and
 * bytes of a part follow the kernel, speeds shape the split so that the
 * plan beats an equal split on unequal workers, a fused max pool widens
 * the halo, a map of one row is split by channels, and bad inputs are
 * errors. */
#include "testutil_impl.h"
#include "rtl.h"
#include "rtl_sim.h"
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static double urand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static rtl_gtdp_layer conv(int c_in, int h_in, int c, int size, int stride, int pad, double ms)
{
    rtl_gtdp_layer l = {.index = 3, .c_in = c_in, .h_in = h_in, .w_in = h_in, .c = c, .size = size,
                        .stride = stride, .pad = pad, .ms = ms};
    l.h = l.w = (h_in + 2 * pad - size) / stride + 1;
    l.macs = (uint64_t)l.h * l.w * c * c_in * size * size;
    return l;
}

/* The convolution rows under block rows [r0, r1) of a block with a pool
 * (Darknet's windows from -pad/2, clipped to the map). */
static void windows(const rtl_gtdp_layer *l, int r0, int r1, int *a, int *b)
{
    int off = -(l->pool_pad / 2), lo = r0 * l->pool_stride + off, hi = (r1 - 1) * l->pool_stride + off + l->pool_size;
    *a = lo < 0 ? 0 : lo;
    *b = hi > l->conv_h ? l->conv_h : hi;
}

/* Every output element in exactly one part; every worker at most once. A
 * block with a pool cut at convolution rows: every convolution row x
 * channel in exactly one part, each part's rows those whose windows meet
 * its convolution rows, and a block row in two parts only where both hold
 * its window in part (merged by max). */
static void check_tiles(const rtl_gtdp_layer *l, const rtl_gtdp_layer_plan *p, int n)
{
    int conv_cut = 0;
    for (int k = 0; k < p->nparts; k++) conv_cut |= p->parts[k].cr1 > p->parts[k].cr0;
    int H = conv_cut ? l->conv_h : l->h;
    int *cover = calloc((size_t)H * l->c, sizeof *cover), *out = calloc((size_t)l->h * l->c, sizeof *out);
    int seen[RTL_GTDP_MAX_WORKERS] = {0};
    assert_true(p->nparts >= 1 && p->nparts <= n);
    for (int k = 0; k < p->nparts; k++) {
        const rtl_gtdp_part *q = &p->parts[k];
        assert_true(q->worker >= 0 && q->worker < n);
        assert_int_equal(seen[q->worker]++, 0);
        assert_true(q->r0 < q->r1 && q->c0 < q->c1 && q->r1 <= l->h && q->c1 <= l->c);
        int a = q->r0, b = q->r1;
        if (conv_cut) {
            if (q->cr1 > q->cr0) a = q->cr0, b = q->cr1;
            else windows(l, q->r0, q->r1, &a, &b);
            for (int r = 0; r < l->h; r++) { /* its rows: the windows meeting a..b */
                int lo, hi;
                windows(l, r, r + 1, &lo, &hi);
                assert_int_equal(lo < b && hi > a, r >= q->r0 && r < q->r1);
                int whole = lo >= a && hi <= b;
                int f0, f1;
                rtl_gtdp_whole_rows(l, q, &f0, &f1);
                if (r >= q->r0 && r < q->r1) assert_int_equal(whole, r >= f0 && r < f1);
            }
        }
        for (int r = a; r < b; r++)
            for (int c = q->c0; c < q->c1; c++) cover[r * l->c + c]++;
        for (int r = q->r0; r < q->r1; r++)
            for (int c = q->c0; c < q->c1; c++) out[r * l->c + c]++;
    }
    for (int i = 0; i < H * l->c; i++) assert_int_equal(cover[i], 1);
    for (int i = 0; i < l->h * l->c; i++) assert_true(out[i] >= 1 && out[i] <= (conv_cut ? 2 : 1));
    free(cover);
    free(out);
}

static void parts_tile_the_output(void **state)
{
    (void)state;
    for (int t = 0; t < 200; t++) {
        int n = 1 + (int)(urand() * RTL_GTDP_MAX_WORKERS);
        rtl_gtdp_worker w[RTL_GTDP_MAX_WORKERS];
        for (int i = 0; i < n; i++) w[i] = (rtl_gtdp_worker){0.2 + urand() * 3, 10 + urand() * 1000, urand()};
        int k = 1 + 2 * (int)(urand() * 3);
        rtl_gtdp_layer l = conv(1 + (int)(urand() * 64), 8 + (int)(urand() * 40), 1 + (int)(urand() * 64), k,
                                1 + (int)(urand() * 2), k / 2, urand() * 50);
        rtl_gtdp_layer_plan p;
        rtl_err e;
        if (rtl_gtdp_plan_layer(&l, w, n, &p, &e) != 0) fail_msg("%s", e.msg);
        check_tiles(&l, &p, n);
        double worst = 0;
        uint64_t bytes = 0;
        for (int i = 0; i < p.nparts; i++) {
            worst = fmax(worst, p.parts[i].ms);
            bytes += p.parts[i].in_bytes + p.parts[i].out_bytes;
        }
        assert_true(fabs(worst - p.ms) < 1e-12);
        assert_true(bytes == p.bytes);
    }
}

/* Rows [r0, r1) of a 3x3, stride 1, pad 1 layer read input rows
 * [r0-1, r1+1) clipped; bytes and times follow the model. */
static void halo_and_costs(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(4, 10, 6, 3, 1, 1, 12.0);
    rtl_gtdp_worker w = {2.0, 8.0, 1.5}; /* 8 Mbps = 1000 bytes/ms */
    rtl_gtdp_part p = {.r0 = 3, .r1 = 6, .c0 = 0, .c1 = 3};
    rtl_gtdp_part_cost(&l, &w, &p);
    assert_int_equal(p.in_r0, 2);
    assert_int_equal(p.in_r1, 7);
    assert_true(p.in_bytes == 4ull * 5 * 10 * 4);
    assert_true(p.out_bytes == 4ull * 3 * 10 * 3);
    /* rows 3 of 10, channels 3 of 6; beta = 40 / 46, gamma = 110 / 210 */
    double be = 40.0 / 46, ga = 110.0 / 210;
    assert_true(fabs(p.compute_ms - 12.0 * (0.3 * 0.5 * (1 - be - ga) + be * 0.3 + ga * 0.5) / 2.0) < 1e-12);
    assert_true(fabs(p.transfer_ms - (double)(p.in_bytes + p.out_bytes) / 1000.0) < 1e-12);
    assert_true(fabs(p.ms - (1.5 + p.compute_ms + p.transfer_ms)) < 1e-12);
    rtl_gtdp_part top = {.r0 = 0, .r1 = 2, .c0 = 0, .c1 = 6};
    rtl_gtdp_part_cost(&l, &w, &top);
    assert_int_equal(top.in_r0, 0);
    assert_int_equal(top.in_r1, 3);
}

/* A fitted layer (rtl_gtdp_calibrate): a part's compute is the fit at its
 * row and channel shares over the speed; a fit that goes below zero for a
 * tiny part is held above it; the planner follows the fit (a fit whose row
 * bands cost nothing more than their share and whose channel slices pay
 * the whole im2col splits by rows). */
static void fitted_costs(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(4, 10, 6, 3, 1, 1, 12.0);
    l.fitted = 1;
    l.fit[0] = 6, l.fit[1] = 2, l.fit[2] = 3, l.fit[3] = 0.5;
    rtl_gtdp_worker w = {2.0, 8.0, 1.5};
    rtl_gtdp_part p = {.r0 = 3, .r1 = 6, .c0 = 0, .c1 = 3};
    rtl_gtdp_part_cost(&l, &w, &p);
    assert_true(fabs(p.compute_ms - (6 * 0.3 * 0.5 + 2 * 0.3 + 3 * 0.5 + 0.5) / 2.0) < 1e-12);
    l.fit[3] = -100;
    rtl_gtdp_part_cost(&l, &w, &p);
    assert_true(p.compute_ms > 0 && p.compute_ms < 1e-2);
    rtl_gtdp_layer big = conv(16, 40, 64, 3, 1, 1, 10.0);
    big.fitted = 1;
    big.fit[0] = 0, big.fit[1] = 10, big.fit[2] = 0, big.fit[3] = 0; /* rows only */
    rtl_gtdp_worker two[2] = {{1, 1e6, 0}, {1, 1e6, 0}};
    rtl_gtdp_layer_plan q;
    rtl_err err;
    assert_int_equal(rtl_gtdp_plan_layer(&big, two, 2, &q, &err), 0);
    check_tiles(&big, &q, 2);
    assert_int_equal(q.parts[0].c1 - q.parts[0].c0, 64);
    big.fit[1] = 0, big.fit[2] = 10; /* channels only */
    assert_int_equal(rtl_gtdp_plan_layer(&big, two, 2, &q, &err), 0);
    assert_int_equal(q.parts[0].r1 - q.parts[0].r0, big.h);
}

/* Four workers of speeds 1, 1, 0.5, 0.25 on a fast link: the plan gives the
 * fast ones more and beats four equal bands; two equal workers get halves. */
static void speeds_shape_the_split(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(48, 56, 64, 3, 1, 1, 100.0);
    rtl_gtdp_worker w[4] = {{1, 10000, 0}, {1, 10000, 0}, {0.5, 10000, 0}, {0.25, 10000, 0}};
    rtl_gtdp_layer_plan p, e;
    rtl_err err;
    assert_int_equal(rtl_gtdp_plan_layer(&l, w, 4, &p, &err), 0);
    assert_int_equal(rtl_gtdp_plan_equal(&l, w, 4, &e, &err), 0);
    check_tiles(&l, &p, 4);
    assert_true(p.ms < 0.8 * e.ms);
    /* Ideal: 100 ms of work over 2.75 speed units, plus, as the cuts follow
     * the speeds, the slowest worker's packing of all the filters (gamma of
     * the layer at its speed, 0.25). */
    double ga = 110.0 / (110 + 56 * 56);
    assert_true(p.ms < 1.1 * 100.0 * (1 / 2.75 + ga / 0.25) + 1.0);
    double share[4] = {0};
    for (int k = 0; k < p.nparts; k++)
        share[p.parts[k].worker] = (double)(p.parts[k].r1 - p.parts[k].r0) * (p.parts[k].c1 - p.parts[k].c0);
    assert_true(share[0] > 3 * share[3]);
    rtl_gtdp_worker two[2] = {{1, 1000, 0}, {1, 1000, 0}};
    assert_int_equal(rtl_gtdp_plan_layer(&l, two, 2, &p, &err), 0);
    assert_int_equal(p.nparts, 2);
    int a = (p.parts[0].r1 - p.parts[0].r0) * (p.parts[0].c1 - p.parts[0].c0);
    assert_int_equal(a, 56 * 64 / 2);
}

/* A max pool fused after the convolution (AlexNet's conv1 + pool1: 11x11
 * stride 4 on 227 rows, then 3x3 stride 2 without padding): block rows
 * [r0, r1) read the pool's windows' convolution rows [2 r0, 2 r1 + 1) and
 * those rows' input; neighbours share a convolution row (computed twice,
 * charged to both), and the parts still tile the pooled output. */
static void fused_pool(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(3, 227, 96, 11, 4, 0, 55.0);
    l.conv_h = l.conv_w = l.h; /* 55 */
    l.pool_size = 3, l.pool_stride = 2, l.pool_pad = 0, l.last = l.index + 1;
    l.h = l.w = (l.conv_h - 3) / 2 + 1; /* 27 */
    rtl_gtdp_worker w = {1.0, 8.0, 0}; /* 1000 bytes/ms */
    rtl_gtdp_part p = {.r0 = 10, .r1 = 20, .c0 = 0, .c1 = 48};
    rtl_gtdp_part_cost(&l, &w, &p);
    /* conv rows 20..41 (21 rows), input rows 80 .. 40*4 + 11 = 171 */
    assert_int_equal(p.in_r0, 80);
    assert_int_equal(p.in_r1, 171);
    assert_true(p.out_bytes == 4ull * 10 * 27 * 48);
    double r = 21.0 / 55, be = 40.0 / 136, ga = 110.0 / (110 + 55 * 55);
    assert_true(fabs(p.compute_ms - 55.0 * (r * 0.5 * (1 - be - ga) + be * r + ga * 0.5)) < 1e-9);
    /* Darknet's default padding (size - 1 = 2): windows start one row up */
    l.pool_pad = 2;
    l.h = l.w = (l.conv_h + 2 - 3) / 2 + 1; /* 28 */
    p = (rtl_gtdp_part){.r0 = 0, .r1 = 5, .c0 = 0, .c1 = 96};
    rtl_gtdp_part_cost(&l, &w, &p); /* conv rows -1..10 clipped: 0..10 */
    assert_int_equal(p.in_r0, 0);
    assert_int_equal(p.in_r1, 9 * 4 + 11);
    rtl_gtdp_worker ws[3] = {{1, 1000, 0}, {0.5, 1000, 0}, {0.25, 1000, 0}};
    rtl_gtdp_layer_plan plan;
    rtl_err e;
    assert_int_equal(rtl_gtdp_plan_layer(&l, ws, 3, &plan, &e), 0);
    check_tiles(&l, &plan, 3);
}

/* AlexNet's conv2 + pool2 (27 convolution rows, 3x3 stride-2 windows: 13
 * rows) over two equal workers, cut by rows: at convolution row 14 (14 and
 * 13 rows, none computed twice), block row 6 (window 12..15) in both
 * parts, whole in neither: merged by max on the device; the first part's
 * whole rows 0..6, the second's 7..13, the input rows each reads. */
static void conv_row_cut(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(96, 27, 256, 5, 1, 2, 8.0);
    l.conv_h = l.conv_w = l.h; /* 27 */
    l.pool_size = 3, l.pool_stride = 2, l.pool_pad = 0, l.last = l.index + 1;
    l.h = l.w = 13;
    l.dims = RTL_GTDP_ROWS;
    rtl_gtdp_worker w[2] = {{1, 1000, 0}, {1, 1000, 0}};
    rtl_gtdp_layer_plan p;
    rtl_err e;
    assert_int_equal(rtl_gtdp_plan_layer(&l, w, 2, &p, &e), 0);
    check_tiles(&l, &p, 2);
    assert_int_equal(p.nparts, 2);
    const rtl_gtdp_part *a = p.parts[0].r0 == 0 ? &p.parts[0] : &p.parts[1], *b = a == &p.parts[0] ? &p.parts[1] : &p.parts[0];
    assert_int_equal(a->cr0, 0), assert_int_equal(a->cr1, 14);
    assert_int_equal(b->cr0, 14), assert_int_equal(b->cr1, 27);
    assert_int_equal(a->r1, 7), assert_int_equal(b->r0, 6), assert_int_equal(b->r1, 13);
    int f0, f1;
    rtl_gtdp_whole_rows(&l, a, &f0, &f1);
    assert_int_equal(f0, 0), assert_int_equal(f1, 6);
    rtl_gtdp_whole_rows(&l, b, &f0, &f1);
    assert_int_equal(f0, 7), assert_int_equal(f1, 13);
    assert_int_equal(a->in_r0, 0), assert_int_equal(a->in_r1, 13 + 3);  /* rows -2..15 */
    assert_int_equal(b->in_r0, 12), assert_int_equal(b->in_r1, 27); /* rows 12..28 clipped */
    /* its output: 7 block rows; its compute: 14 of 27 convolution rows */
    assert_true(a->out_bytes == 4ull * 7 * 13 * 256);
    /* a channel cut keeps whole windows: plain parts */
    l.dims = RTL_GTDP_CHANNELS;
    assert_int_equal(rtl_gtdp_plan_layer(&l, w, 2, &p, &e), 0);
    check_tiles(&l, &p, 2);
    for (int k = 0; k < 2; k++) assert_true(p.parts[k].cr0 == 0 && p.parts[k].cr1 == 0 && p.parts[k].r1 == 13);
}

/* A 1-row map cannot be split by rows: channels it is. */
static void one_row_splits_channels(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(32, 1, 40, 1, 1, 0, 5.0);
    rtl_gtdp_worker w[3] = {{1, 100, 0}, {1, 100, 0}, {1, 100, 0}};
    rtl_gtdp_layer_plan p;
    rtl_err e;
    assert_int_equal(rtl_gtdp_plan_layer(&l, w, 3, &p, &e), 0);
    check_tiles(&l, &p, 3);
    assert_int_equal(p.nparts, 3);
    for (int k = 0; k < 3; k++) assert_true(p.parts[k].c1 - p.parts[k].c0 < 40);
    assert_int_not_equal(rtl_gtdp_plan_equal(&l, w, 3, &p, &e), 0);
}

static void bad_inputs(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(3, 8, 4, 3, 1, 1, 1.0);
    rtl_gtdp_worker w[9];
    for (int i = 0; i < 9; i++) w[i] = (rtl_gtdp_worker){1, 100, 0};
    rtl_gtdp_layer_plan p;
    rtl_err e;
    assert_int_equal(rtl_gtdp_plan_layer(&l, w, 0, &p, &e), -1);
    assert_int_equal(rtl_gtdp_plan_layer(&l, w, 9, &p, &e), -1);
    assert_non_null(strstr(e.msg, "workers"));
    w[1].speed = 0;
    assert_int_equal(rtl_gtdp_plan_layer(&l, w, 2, &p, &e), -1);
    assert_non_null(strstr(e.msg, "worker 2"));
}

/* The fixed cost per part and worker: the median of what each part cost
 * beyond its predicted compute and transfer; -1 for a worker with none. */
static void part_overhead(void **state)
{
    (void)state;
    static rtl_gtdp_stats st;
    memset(&st, 0, sizeof st);
    const double rec[][4] = {/* worker, compute, transfer, wall */
                             {0, 2.0, 0.5, 3.0}, {0, 5.0, 0.1, 5.4}, {0, 1.0, 0.2, 9.2},
                             {2, 3.0, 0.0, 3.5}, {2, 1.0, 0.0, 2.5}};
    for (size_t k = 0; k < sizeof rec / sizeof rec[0]; k++)
        st.rec[st.nrec++] = (rtl_gtdp_part_rec){.layer = (int)k, .worker = (int)rec[k][0], .compute_ms = rec[k][1],
                                                .transfer_ms = rec[k][2], .wall_ms = rec[k][3]};
    double ov[3];
    rtl_gtdp_part_overhead(&st, 3, ov);
    assert_true(fabs(ov[0] - 0.5) < 1e-9); /* 0.5, 0.3, 8.0: the median, not the mean */
    assert_true(ov[1] == -1);
    assert_true(fabs(ov[2] - 1.0) < 1e-9); /* 0.5 and 1.5 */
}

/* The parts' cost fitted to forwards' records: a part of worker w takes
 * fixed[w] + transfer + (1 + slope) compute, recovered exactly from
 * records made so, whatever an outlier forward does to one part (the
 * median over forwards); a worker with no part gets -1; the block's extra
 * is what a block takes beyond its slowest modelled part (median over the
 * blocks). */
static void fitted_parts(void **state)
{
    (void)state;
    static rtl_gtdp_stats f[3];
    const double fixed[3] = {0.5, 1.2, 0}, slope = 0.15;
    const double comp[4][3] = {{2, 3, 0}, {8, 9, 0}, {3, 2.5, 0}, {5, 4, 0}}; /* per block, workers 0 and 1 */
    for (int k = 0; k < 3; k++) {
        memset(&f[k], 0, sizeof f[k]);
        for (int b = 0; b < 4; b++)
            for (int w = 0; w < 2; w++) {
                double c = comp[b][w], t = 0.1 * (w + 1);
                f[k].rec[f[k].nrec++] = (rtl_gtdp_part_rec){.layer = 2 * b, .worker = w, .compute_ms = c, .transfer_ms = t,
                                                            .wall_ms = fixed[w] + t + (1 + slope) * c + 0.25 * (w == 1)};
            }
    }
    f[2].rec[3].wall_ms += 50; /* one forward's part an outlier */
    const rtl_gtdp_stats *fp[3] = {&f[0], &f[1], &f[2]};
    double fx[3], s;
    rtl_gtdp_fit_parts(fp, 3, 3, fx, &s);
    assert_true(fabs(s - slope) < 1e-9);
    assert_true(fabs(fx[0] - 0.5) < 1e-9);
    assert_true(fabs(fx[1] - 1.45) < 1e-9); /* its 0.25 more in every part: its own fixed cost */
    assert_true(fx[2] == -1);
    /* the model as fitted: nothing beyond the slowest part */
    assert_true(fabs(rtl_gtdp_block_extra(&f[0], fx, s, 3)) < 1e-9);
    /* every block's last answer 0.4 ms later than its slowest part says */
    for (int r = 0; r < f[1].nrec; r++) f[1].rec[r].wall_ms += 0.4;
    assert_true(fabs(rtl_gtdp_block_extra(&f[1], fx, s, 3) - 0.4) < 1e-9);
    /* a fixed cost measured below 0 is charged as 0 */
    rtl_gtdp_stats *g = &f[0];
    memset(g, 0, sizeof *g);
    g->rec[g->nrec++] = (rtl_gtdp_part_rec){.layer = 0, .worker = 0, .compute_ms = 4, .wall_ms = 3};
    g->rec[g->nrec++] = (rtl_gtdp_part_rec){.layer = 2, .worker = 0, .compute_ms = 2, .wall_ms = 1};
    rtl_gtdp_fit_parts(fp, 1, 1, fx, &s);
    assert_true(fabs(s) < 1e-9 && fx[0] == 0);
    assert_true(fabs(rtl_gtdp_block_extra(g, fx, s, 1) + 1) < 1e-9);
}

/* The cuts a block allows (rtl_gtdp_layer.dims, chosen by rtl run
 * --workers from measured forwards): rows only gives row bands of every
 * channel, channels only channel slices of every row, for 2 and 4 workers,
 * both still tiling the output; a block with too few rows for a rows-only
 * cut is cut as the planner likes (both); a block's time in a run's records
 * is its slowest answer's. */
static void allowed_cuts(void **state)
{
    (void)state;
    rtl_gtdp_layer l = conv(8, 20, 32, 3, 1, 1, 10.0);
    rtl_gtdp_worker w[4] = {{1, 1000, 0.1}, {1, 1000, 0.1}, {0.5, 1000, 0.1}, {0.25, 1000, 0.1}};
    rtl_gtdp_layer_plan p;
    rtl_err err;
    for (int n = 2; n <= 4; n += 2) {
        l.dims = RTL_GTDP_ROWS;
        assert_int_equal(rtl_gtdp_plan_layer(&l, w, n, &p, &err), 0);
        check_tiles(&l, &p, n);
        for (int k = 0; k < p.nparts; k++) assert_true(p.parts[k].c0 == 0 && p.parts[k].c1 == l.c);
        l.dims = RTL_GTDP_CHANNELS;
        assert_int_equal(rtl_gtdp_plan_layer(&l, w, n, &p, &err), 0);
        check_tiles(&l, &p, n);
        for (int k = 0; k < p.nparts; k++) assert_true(p.parts[k].r0 == 0 && p.parts[k].r1 == l.h);
    }
    rtl_gtdp_layer one = conv(8, 1, 32, 1, 1, 0, 10.0); /* one row */
    one.dims = RTL_GTDP_ROWS;
    assert_int_equal(rtl_gtdp_plan_layer(&one, w, 2, &p, &err), 0);
    check_tiles(&one, &p, 2);
    static rtl_gtdp_stats st;
    st.nrec = 0;
    st.rec[st.nrec++] = (rtl_gtdp_part_rec){.layer = 4, .worker = 0, .compute_ms = 1, .transfer_ms = 0.1, .wall_ms = 2.5};
    st.rec[st.nrec++] = (rtl_gtdp_part_rec){.layer = 4, .worker = 1, .compute_ms = 1, .transfer_ms = 0.1, .wall_ms = 3.5};
    st.rec[st.nrec++] = (rtl_gtdp_part_rec){.layer = 6, .worker = 0, .compute_ms = 1, .transfer_ms = 0.1, .wall_ms = 9.0};
    assert_true(rtl_gtdp_block_ms(&st, 4) == 3.5);
    assert_true(rtl_gtdp_block_ms(&st, 5) == -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parts_tile_the_output), cmocka_unit_test(halo_and_costs), cmocka_unit_test(fitted_costs),
        cmocka_unit_test(speeds_shape_the_split), cmocka_unit_test(one_row_splits_channels),
        cmocka_unit_test(fused_pool), cmocka_unit_test(conv_row_cut), cmocka_unit_test(bad_inputs), cmocka_unit_test(part_overhead),
        cmocka_unit_test(fitted_parts), cmocka_unit_test(allowed_cuts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
