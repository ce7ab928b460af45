#!/usr/bin/env bash
# make bench: MeDNN's GTDP over rtl serve workers on loopback (issue 21 item
# 3). Meant for an otherwise idle machine (2 cores are enough); on a loaded
# one the timings measure the other load, and the script says so.
#
# The network: PROFILE=full AlexNet's convolutional trunk, taken from
# recipes/alexnet/base-full.cfg (227x227x3, conv1..conv5 with their max
# pools; 1.08 GMACs), then a 10-class head (average pool, connected,
# softmax), trained one step. SIZE=tiny (correctness of the script only,
# no timing meaning): the same trunk at 99x99 with 1/8 of the filters.
#
# Every process computes with one thread (rtl run --threads 1, rtl serve
# --threads 1); the two full-speed workers are pinned to cores 0 and 1
# (taskset) so that the scheduler cannot put both on one core while the
# other idles; the throttled workers are pinned in pairs, s2 with s6 on
# core 0, s3 with s4 on core 1: every part of a block starts at once, and a
# throttled worker computes at full speed then waits, so on two cores the
# four bursts would otherwise crowd each other past their emulated time
# (paired so, a core's two bursts end within the shorter's emulated time
# when GTDP or an equal split sizes them); the device is not pinned. Configurations, each a fresh `rtl run --workers` process
# (one untimed warm-up forward: the workers load the model and build their
# parts' networks; then REPEAT timed forwards, median), interleaved over
# ROUNDS rounds (median of the rounds' medians):
#  1. one worker alone against two workers of the same speed (1, 1);
#  2. four workers of emulated speeds 1/2, 1/3, 1/4, 1/6 (rtl serve
#     --slowdown 2, 3, 4, 6: each reply waits until that multiple of the
#     CPU time of its computation has passed since the request arrived, so
#     a worker computes at most
#     1/F of the time and the four together need at most 1.25 cores),
#     told to the planner: GTDP's plan against equal row bands, and GTDP's
#     measured time against its prediction (layer times: the device's own
#     wall-time medians over --runs forwards; links given as LINK Mbps,
#     default 4000: loopback with the protocol's encryption and copies,
#     about what a part's bytes cost on this machine; each part's fixed
#     cost, one factor on the compute and each block's extra fitted to
#     untimed forwards before the timed ones: rtl_gtdp_fit_parts).
# Every run with --trace: the script prints each block's measured time (its
# start to its last answer placed, on the device) beside its prediction,
# and the prediction's parts for the four GTDP workers.
# Targets: two workers at least 0.95x the bound the workers' spans give in
# the same run (one worker's span / two workers'; the decision that replaced
# the fixed 1.8x: the spans hold what the workers can gain, the rest of a
# forward is the device's); GTDP faster than the equal split; GTDP within
# 25% of its prediction. Exit 1 when one is missed.
# Environment (from make): BIN, O, TOP; REPEAT (10), ROUNDS (3), SIZE
# (full), LINK (4000), CPU_REPEAT (100: the workers' own CPU per forward).
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
W=$O/bench/rtl-gtdp
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
. "$TOP/tests/integration/rtl/fixtures.sh"
repeat=${REPEAT:-10} rounds=${ROUNDS:-3} size=${SIZE:-full} link=${LINK:-4000}
case $size in full | tiny) ;; *) echo "bench rtl-gtdp: SIZE is full or tiny, not '$size'"; exit 2 ;; esac
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"' EXIT
load0=$(cut -d' ' -f1 /proc/loadavg)

fx_rtl_data c >/dev/null || { echo "bench rtl-gtdp: cannot make the data set"; exit 1; }
# The trunk of the recipe: its [net] geometry and its convolutional and
# max-pool sections (tiny: 99x99, filters / 8), then the head.
awk -v tiny=$([ "$size" = tiny ] && echo 1 || echo 0) '
    /^\[/ { sec = $0; keep = sec == "[convolutional]" || sec == "[maxpool]"; if (keep) print; next }
    /^#/ || /^[ \t]*$/ { next }
    sec == "[net]" && /^(height|width|channels)=/ { if (tiny && !/^channels/) sub(/=.*/, "=99"); net = net $0 "\n" }
    !keep { next }
    tiny && /^filters=/ { split($0, f, "="); print "filters=" int(f[2] / 8); next }
    { print }
    END { printf "%s", net > "trunk.net" }' "$TOP/recipes/alexnet/base-full.cfg" >trunk.body
{
    printf '[net]\nbatch=1\nsubdivisions=1\nmomentum=0.9\ndecay=0.0005\nlearning_rate=0.001\nmax_batches=1\n'
    cat trunk.net trunk.body
    printf '[avgpool]\n[connected]\noutput=10\nactivation=linear\n[softmax]\n'
} >trunk.cfg
[ "$(grep -c '^\[convolutional\]' trunk.cfg):$(grep -c '^\[maxpool\]' trunk.cfg)" = 5:3 ] ||
    { echo "bench rtl-gtdp: recipes/alexnet/base-full.cfg has no AlexNet trunk (5 convolutions, 3 pools)"; exit 1; }
fx_rtl_variant c trunk base - trunk.cfg 1 || { echo "bench rtl-gtdp: cannot train the variant"; exit 1; }
fx_rtl_peer_root || { echo "bench rtl-gtdp: cannot make the installed catalog and peer keys"; exit 1; }
img=c/images/img3.bmp
start_worker() { # NAME SLOWDOWN [CPU]
    rm -f "$1.port"
    local pin=()
    [ -n "${3:-}" ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null && pin=(taskset -c "$3")
    "${pin[@]}" "$RTL" --root root serve --key srv --allow allow --threads 1 --port-file "$1.port" --slowdown "$2" >"$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 200); do [ -s "$1.port" ] && return 0; sleep 0.05; done
    echo "bench rtl-gtdp: worker $1 does not start"; cat "$1.log"; exit 1
}
# a, b: full speed, each on a core of its own (as two devices would be: the
# scheduler never stacks both on one core; the coordinator uses whichever
# core is free); s2..s6: slowed down 2, 3, 4, 6 times, in pairs on a core
# (s2 and s6 on core 0, s3 and s4 on core 1: see above)
start_worker a 1 0; start_worker b 1 1
start_worker s2 2 0; start_worker s6 6 0; start_worker s3 3 1; start_worker s4 4 1
P() { echo "127.0.0.1:$(cat "$1.port")@$2@$link"; }
ONE="$(P a 1)" TWO="$(P a 1),$(P b 1)"
FOUR="$(P s2 0.5),$(P s3 0.333333),$(P s4 0.25),$(P s6 0.166667)"
# The device's thread that runs a worker's part on that worker's core
# (rtl run --part-cpus; PART_CPUS=0: not): the device's sealing and opening
# for a part then happen while its worker waits, never on the core of a
# worker still computing, as on a device of its own; where the workers are
# pinned (taskset, 2 cores or more).
c1=() c2=() c4=()
if [ "${PART_CPUS:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
    c1=(--part-cpus 0) c2=(--part-cpus 0,1) c4=(--part-cpus 0,1,1,0)
fi
# The device (rtl run) under SCHED_FIFO where this user may (DEVICE_FIFO=0:
# never): a device of its own would not wait for a core that the emulated
# workers' computing holds, as the plain scheduler makes it wait (up to a
# time slice, at every reply); the workers stay on the plain scheduler.
fifo=()
[ "${DEVICE_FIFO:-1}" = 1 ] && command -v chrt >/dev/null && chrt -f 10 true 2>/dev/null && fifo=(chrt -f 10)
go() { # OUT [run options...]
    local out=$1; shift
    "${fifo[@]}" "$RTL" --root root run rtlnet trunk $img --threads 1 --runs 10 --warmup 1 --repeat "$repeat" --json --trace --peer-key srv.pub \
        --device-key dev "$@" >"$out" 2>"$out.err" || { echo "bench rtl-gtdp: rtl run failed:"; cat "$out.err"; exit 1; }
}
# CPU ticks (utime + stime): the machine's busy ticks (/proc/stat, every
# core), a process's (/proc/PID/stat), and this shell's reaped children's
# (the rtl run processes, awk, python).
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8; exit }' /proc/stat; }
steal_ticks() { awk '/^cpu / { print $9; exit }' /proc/stat; }
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
kids_ticks() { awk '{ print $16 + $17 }' /proc/$$/stat; }
ours_ticks() { local t; t=$(kids_ticks); for p in "${PIDS[@]}"; do t=$((t + $(proc_ticks "$p"))); done; echo "$t"; }
sys0=$(busy_ticks) ours0=$(ours_ticks) steal0=$(steal_ticks) wall0=$(date +%s%N)
for r in $(seq "$rounds"); do
    go one-$r.json --workers "$ONE" "${c1[@]}"
    go two-$r.json --workers "$TWO" "${c2[@]}"
    go four-$r.json --workers "$FOUR" "${c4[@]}"
    go eq-$r.json --workers "$FOUR" --equal-split "${c4[@]}"
done
# The workers' own CPU time per forward (workers a and b, whatever their
# threads do: opening requests, computing, sealing replies): two runs of
# each configuration, of 5 and 5 + CPU_REPEAT timed forwards (default 100),
# differenced, so that the calibration and warm-up forwards cancel. The
# kernel counts CPU time in 100 Hz ticks, so over 100 forwards of 10-20 ms
# a figure is good to about 10%: an indication, not a bound (the spans
# above are the precise decomposition).
cpu_n=${CPU_REPEAT:-100}
cpu_of() { # OUT N [run options...]: writes "ticks of a, ticks of b" over the run to OUT.cpu
    local out=$1 n=$2 a0 b0; shift 2
    a0=$(proc_ticks "${PIDS[0]}") b0=$(proc_ticks "${PIDS[1]}")
    repeat=$n go "$out" "$@"
    echo "$(($(proc_ticks "${PIDS[0]}") - a0)) $(($(proc_ticks "${PIDS[1]}") - b0))" >"$out.cpu"
}
cpu_of cpu-one-s.json 5 --workers "$ONE" "${c1[@]}"
cpu_of cpu-one-l.json $((5 + cpu_n)) --workers "$ONE" "${c1[@]}"
cpu_of cpu-two-s.json 5 --workers "$TWO" "${c2[@]}"
cpu_of cpu-two-l.json $((5 + cpu_n)) --workers "$TWO" "${c2[@]}"
# Anything else running: the machine's busy ticks less this bench's own.
others=$(($(busy_ticks) - sys0 - ($(ours_ticks) - ours0))) steal=$(($(steal_ticks) - steal0))
wall_s=$((($(date +%s%N) - wall0) / 1000000))
load1=$(cut -d' ' -f1 /proc/loadavg)
[ ${#c2[@]} -gt 0 ] && echo "bench rtl-gtdp: the device's part threads on their workers' cores (--part-cpus)"
if [ ${#fifo[@]} -gt 0 ]; then echo "bench rtl-gtdp: the device's process under SCHED_FIFO (${fifo[*]})"
else echo "bench rtl-gtdp: the device's process on the plain scheduler (chrt -f refused, or DEVICE_FIFO=0)"; fi
python3 - "$rounds" "$size" "$load0" "$load1" "$(nproc)" "$link" "$cpu_n" "$(getconf CLK_TCK)" "$others" "$wall_s" "$steal" <<'PY'
import json, os, statistics as st, sys
rounds, size, load0, load1, cores, link = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
cpu_n, hz, others, wall_s, steal = int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10]) / 1000, int(sys.argv[11])
def cfg(name):
    docs = [json.load(open("%s-%d.json" % (name, r))) for r in range(1, rounds + 1)]
    res = [d["results"][0] for d in docs]
    for x in res:
        if x.get("recomputed"):
            sys.exit("bench rtl-gtdp: %s: a worker failed (%s): not a measurement" % (name, x.get("failure")))
    return {"ms": st.median(x["ms_median"] for x in res), "local": st.median(x["local_ms_median"] for x in res),
            "pred": st.median(d["predicted_ms"] for d in docs), "rounds": [round(x["ms_median"], 1) for x in res],
            "pred_rtt": st.median(d["predicted_rtt_ms"] for d in docs),
            "ov": [round(st.median(d["part_overhead_ms"][k] for d in docs), 2) for k in range(len(docs[0]["part_overhead_ms"]))],
            "extra": st.median(d["block_extra_ms"] for d in docs), "docs": docs}
def blocks(c):
    """per split block (medians of the rounds): measured ms (--trace), and the
    prediction's slowest part: compute, transfer, fixed cost, the block's extra"""
    out = []
    docs = c["docs"]
    for b, pb in enumerate(docs[0]["predicted"]["blocks"]):
        meas = []
        for d in docs:
            tb = [x for x in d["results"][0]["trace"]["blocks"] if not x["device"]]
            if b < len(tb): meas.append(tb[b]["end_ms"] - tb[b]["start_ms"])
        m = lambda k: st.median(d["predicted"]["blocks"][b][k] for d in docs)
        out.append((pb["layer"], st.median(meas) if meas else float("nan"), m("ms"), m("compute_ms"), m("transfer_ms"),
                    m("fixed_ms"), m("block_extra_ms")))
    return out
one, two, four, eq = cfg("one"), cfg("two"), cfg("four"), cfg("eq")
local = st.median([one["local"], two["local"], four["local"], eq["local"]])
print("GTDP over rtl serve workers on loopback (1 thread each), PROFILE=full AlexNet conv trunk%s, "
      "links told %s Mbps; medians of %d rounds" % ("" if size == "full" else " at SIZE=tiny", link, rounds))
print("%-36s %9s %10s %8s %12s  %s" % ("configuration", "ms", "predicted", "error", "vs 1 worker", "rounds (ms)"))
rows = [("this host alone (no workers)", local, None, []),
        ("1 worker (speed 1)", one["ms"], one["pred"], one["rounds"]),
        ("2 workers (1, 1)", two["ms"], two["pred"], two["rounds"]),
        ("4 workers (1/2,1/3,1/4,1/6) GTDP", four["ms"], four["pred"], four["rounds"]),
        ("4 workers, equal row bands", eq["ms"], eq["pred"], eq["rounds"])]
for name, ms, pred, rr in rows:
    print("%-36s %9.1f %10s %8s %11.2fx  %s" % (name, ms, "%.1f" % pred if pred else "-",
          "%+.0f%%" % (100 * (ms / pred - 1)) if pred else "-", one["ms"] / ms, " ".join(map(str, rr))))
print("each part's fixed cost, per worker, and each block's extra (ms; from the calibration forwards, medians of the rounds):")
for name, c in (("1 worker", one), ("2 workers", two), ("4 workers GTDP", four), ("4 workers equal", eq)):
    print("  %-16s %-24s extra %5.2f  without (handshake round trip per part): %.1f ms (error %+.0f%%)" % (
        name, " ".join("%.2f" % v for v in c["ov"]), c["extra"], c["pred_rtt"], 100 * (c["ms"] / c["pred_rtt"] - 1)))
print("per block, measured (--trace: its start to its last answer placed) / predicted ms (medians of the rounds):")
for name, c in (("1 worker", one), ("2 workers", two), ("4 workers GTDP", four), ("4 workers equal", eq)):
    print("  %-16s %s" % (name, "  ".join("L%d %5.2f/%5.2f" % x[:3] for x in blocks(c))))
print("  the prediction's parts, 4 workers GTDP: slowest part's compute + transfer + fixed cost, + the block's extra;"
      " device layers %.2f ms:" % st.median(d["predicted"]["device_layers_ms"] for d in four["docs"]))
print("  %-16s %s" % ("", "  ".join("L%d %.2f+%.2f+%.2f+%.2f" % ((x[0],) + x[3:]) for x in blocks(four))))
print("  the compute's factor fitted (workers computing at once against the calibration alone): %s" % "  ".join(
      "%s %.3f" % (n, st.median(d["compute_factor"] for d in c["docs"])) for n, c in (("1", one), ("2", two), ("4 GTDP", four), ("4 equal", eq))))
print("each block's cut, chosen from forwards over the workers (r rows, c channels, b the planner's; per round):")
for name in ("two", "four"):
    cuts = [" ".join("L%d:%s" % (x["layer"], x["cut"][0]) for x in json.load(open("%s-%d.json" % (name, r))).get("cuts", []))
            for r in range(1, rounds + 1)]
    print("  %-18s %s" % ({"two": "2 workers", "four": "4 workers GTDP"}[name], " | ".join(cuts)))
def spans(c):
    """per round: the sum over the split blocks of the slower part's worker span
    (--trace medians: its request sent to its reply's first bytes on the device:
    the worker opening the request, computing, sealing the reply), and the rest
    of the forward (the device's filling, sealing, opening and placing, the
    waits); medians of the rounds"""
    w, rest = [], []
    for d in c["docs"]:
        r = d["results"][0]
        by = {}
        for q in r["trace"]["parts"]:
            by[q["layer"]] = max(by.get(q["layer"], 0.0), q["reply"] - q["sent"])
        w.append(sum(by.values()))
        rest.append(r["ms_median"] - w[-1])
    return st.median(w), st.median(rest)
(w1, d1), (w2, d2) = spans(one), spans(two)
print("the workers' spans (each split block's slower part, request sent to reply's first bytes; --trace medians): "
      "1 worker %.2f ms + %.2f ms the rest; 2 workers %.2f + %.2f: the spans alone give %.2fx" % (w1, d1, w2, d2, w1 / w2))
def per_forward(name):
    """each worker's own CPU ms per timed forward: the long run's ticks less the short run's"""
    short, long_ = ([int(v) for v in open("cpu-%s-%s.json.cpu" % (name, k)).read().split()] for k in ("s", "l"))
    return [1000.0 * (l - s) / hz / cpu_n for s, l in zip(short, long_)]
cpu1, cpu2 = per_forward("one")[0], per_forward("two")
print("the workers' own CPU per forward (utime + stime in %d Hz ticks, about +-10%%; runs of 5 and %d timed forwards "
      "differenced): 1 worker %.2f ms; 2 workers %.2f and %.2f ms (%.2f together, %+.0f%% on one worker's)" % (
      hz, 5 + cpu_n, cpu1, cpu2[0], cpu2[1], sum(cpu2), 100 * (sum(cpu2) / cpu1 - 1)))
s2 = one["ms"] / two["ms"]
gain = eq["ms"] / four["ms"]
err = four["ms"] / four["pred"] - 1
bound = w1 / w2
t = [("two workers vs one, of the spans' bound", "%.2fx of %.2fx" % (s2, bound), ">= 0.95x it", s2 >= 0.95 * bound),
     ("GTDP vs equal split, 4 unequal workers", "%.2fx" % gain, "> 1x", gain > 1),
     ("GTDP measured vs predicted, 4 workers", "%+.1f%%" % (100 * err), "within 25%", abs(err) <= 0.25)]
for name, val, target, ok in t:
    print("  %-40s %14s  target %-11s %s" % (name, val, target, "met" if ok else "MISSED"))
# Busy: other processes (or the hypervisor, as steal) took more than 5% of
# the machine while the bench ran (its own processes' CPU is not counted).
# The load averages are printed only: the one before it counts processes
# that may have stopped (an earlier bench), the one at its end mostly its
# own.
other_share = others / hz / (wall_s * cores) if wall_s > 0 else 0
steal_share = steal / hz / (wall_s * cores) if wall_s > 0 else 0
print("other processes took %.1f%% of the %d cores during the bench (%.0f s); the hypervisor reported %.1f%% stolen" % (
      100 * other_share, cores, wall_s, 100 * steal_share))
if size != "full" or other_share + steal_share > 0.05:
    print("bench rtl-gtdp: NOT A MEASUREMENT: %s (load average %.2f before it, %.2f at its end; others %.1f%%)" % (
        "SIZE=%s checks the script only" % size if size != "full" else "this machine was busy", load0, load1, 100 * other_share))
ok = all(x[3] for x in t)
print("bench rtl-gtdp: %s" % ("targets met" if ok else "a target missed"))
sys.exit(0 if ok else 1)
PY
