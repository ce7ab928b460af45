#!/usr/bin/env bash
# make bench: MeDNN's GTDP over rtl serve workers on loopback (issue 21 item
# 3). The network: PROFILE=full AlexNet's convolutional trunk (227x227x3,
# conv1..conv5 with their pools; 1.08 GMACs), then a 10-class head (average
# pool, connected, softmax), trained one step. The device and every worker
# compute with one thread (rtl run --threads 1, rtl serve --threads 1).
#  1. one worker alone against two workers (same speed): speedup;
#  2. four workers of emulated speeds 1, 0.5, 0.25, 0.25 (rtl serve
#     --slowdown 1, 2, 4, 4: each reply waits until that multiple of its CPU
#     time has passed), told to the planner: GTDP's plan against equal row
#     bands, and GTDP's measured time against its prediction.
# Medians of REPEAT (default 5) runs in one process each, over persistent
# connections; the configurations interleave. Links are given as 4000 Mbps
# (loopback with the protocol's encryption; not measured by the planner).
# Environment (from make): BIN, O, TOP; REPEAT.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
W=$O/bench/rtl-gtdp
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
. "$TOP/tests/integration/rtl/fixtures.sh"
repeat=${REPEAT:-5}
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$W"' EXIT

fx_rtl_data c >/dev/null || { echo "bench rtl-gtdp: cannot make the data set"; exit 1; }
{
    printf '[net]\nbatch=1\nsubdivisions=1\nheight=227\nwidth=227\nchannels=3\n'
    printf 'momentum=0.9\ndecay=0.0005\nlearning_rate=0.001\nmax_batches=1\n'
    printf '[convolutional]\nfilters=96\nsize=11\nstride=4\npad=0\nactivation=relu\n'
    printf '[maxpool]\nsize=3\nstride=2\npadding=0\n'
    printf '[convolutional]\nfilters=256\nsize=5\nstride=1\npad=1\nactivation=relu\n'
    printf '[maxpool]\nsize=3\nstride=2\npadding=0\n'
    printf '[convolutional]\nfilters=384\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[convolutional]\nfilters=384\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[convolutional]\nfilters=256\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[maxpool]\nsize=3\nstride=2\npadding=0\n'
    printf '[avgpool]\n[connected]\noutput=10\nactivation=linear\n[softmax]\n'
} >trunk.cfg
fx_rtl_variant c trunk base - trunk.cfg 1 || { echo "bench rtl-gtdp: cannot train the variant"; exit 1; }
"$CAT" keygen -p k.pub -s k.key -W >/dev/null &&
    "$CAT" pack c/variants -o out --task identity=c/identity.names --version 1 --key k.key >pack.log 2>&1 ||
    { echo "bench rtl-gtdp: cannot pack"; cat pack.log; exit 1; }
mkdir -p root/keys && cp k.pub root/keys/
rtl() { "$RTL" --root root "$@"; }
rtl install out/catalog-rtlnet-1.tar.zst >/dev/null 2>&1 || { echo "bench rtl-gtdp: cannot install"; exit 1; }
rtl peer-keygen srv >/dev/null && rtl peer-keygen dev >/dev/null && cp dev.pub allow
img=c/images/img3.bmp
start_worker() { # NAME SLOWDOWN
    rm -f "$1.port"
    "$RTL" --root root serve --key srv --allow allow --threads 1 --port-file "$1.port" --slowdown "$2" >"$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 200); do [ -s "$1.port" ] && return 0; sleep 0.05; done
    echo "bench rtl-gtdp: worker $1 does not start"; cat "$1.log"; exit 1
}
start_worker a 1; start_worker b 1; start_worker c 2; start_worker d 4; start_worker e 4
P() { echo "127.0.0.1:$(cat "$1.port")@$2@4000"; }
go() { # OUT [run options...]
    local out=$1; shift
    rtl run rtlnet trunk $img --threads 1 --runs 5 --repeat "$repeat" --json --peer-key srv.pub --device-key dev "$@" >"$out" 2>"$out.err" ||
        { echo "bench rtl-gtdp: rtl run failed:"; cat "$out.err"; exit 1; }
}
get() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["results"][0]; print(r.get(sys.argv[2], d.get(sys.argv[2])))' "$@"; }
go one.json --workers "$(P a 1)"
go two.json --workers "$(P a 1),$(P b 1)"
go four.json --workers "$(P a 1),$(P c 0.5),$(P d 0.25),$(P e 0.25)"
go four-eq.json --workers "$(P a 1),$(P c 0.5),$(P d 0.25),$(P e 0.25)" --equal-split
status=0
python3 - one.json two.json four.json four-eq.json <<'PY' || status=1
import json, sys
r = [json.load(open(f)) for f in sys.argv[1:]]
one, two, four, eq = (x["results"][0] for x in r)
local = one["local_ms_median"]
print("GTDP over rtl serve workers (loopback, 1 thread each), PROFILE=full AlexNet conv trunk, medians")
print("%-34s %10s %10s %12s %8s" % ("configuration", "ms", "predicted", "vs 1 worker", "error"))
rows = [("this host alone (no workers)", local, None), ("1 worker", one["ms_median"], r[0]["predicted_ms"]),
        ("2 workers (speed 1, 1)", two["ms_median"], r[1]["predicted_ms"]),
        ("4 workers (1, .5, .25, .25) GTDP", four["ms_median"], r[2]["predicted_ms"]),
        ("4 workers, equal row bands", eq["ms_median"], r[3]["predicted_ms"])]
for name, ms, pred in rows:
    print("%-34s %10.1f %10s %11.2fx %8s" % (name, ms, "%.1f" % pred if pred else "-", one["ms_median"] / ms,
          "%+.0f%%" % (100 * (ms / pred - 1)) if pred else "-"))
s2 = one["ms_median"] / two["ms_median"]
gain = eq["ms_median"] / four["ms_median"]
err = four["ms_median"] / r[2]["predicted_ms"] - 1
print("two workers vs one: %.2fx (target >= 1.8); GTDP vs equal split with 4 unequal workers: %.2fx faster "
      "(target > 1); GTDP measured vs predicted: %+.0f%% (target within 25%%)" % (s2, gain, 100 * err))
ok = s2 >= 1.8 and gain > 1 and abs(err) <= 0.25
print("bench rtl-gtdp: %s" % ("targets met" if ok else "a target missed (see the load of this machine)"))
sys.exit(0 if ok else 1)
PY
exit $status
