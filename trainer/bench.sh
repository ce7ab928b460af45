#!/usr/bin/env bash
# trainer/bench.sh: `make bench` for the trainer. One run, on this machine:
# our trainer against libdarknet (Debian's darknet package) on alexnet.cfg as
# shipped (227x227), printing ratios:
#   training step (forward + backward + update) at batch 16, images/s   target >= 10x Darknet
#   forward at batch 1, images/s                                          target >= 4x Darknet
#   convolution layers' effective GFLOPS inside our training step         target >= 50% of
#     OpenBLAS sgemm on a 2048x2048 product measured in the same run
# REPEAT (default 3) interleaved runs, each printed with the load average;
# the summary takes the best ratio of each kind (the machine is shared: the
# load of other jobs slows our two threads more than Darknet's one). Exit
# status 1 when a target is missed or a measurement fails.
# Environment (from make): BIN, O, TOP, THREADS.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}"
cfg=/usr/share/darknet/cfg/alexnet.cfg
dn=$O/tests/darknet/dn_bench
repeat=${REPEAT:-3}
threads=${THREADS:-$(nproc)}
if [ ! -e /usr/lib/darknet/libdarknet.so ] || [ ! -e "$cfg" ]; then
    echo "trainer bench: skipped: the darknet package is not installed"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trn-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# alexnet.cfg with batch=16 in [net] (Darknet reads the batch from the cfg).
awk '/^\[/{net=($0=="[net]")} net && /^batch=/{print "batch=16"; next} {print}' "$cfg" > "$tmp/alexnet16.cfg"

num() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }

# Interleaved: each run measures Darknet and us back to back, so that each
# ratio compares figures taken under the same load; the convolution share
# compares with the sgemm of the same trainer run.
: > "$tmp/runs"
for r in $(seq "$repeat"); do
    df=$("$dn" forward "$cfg" 3 2>/dev/null | awk '/images_per_s/{print $2}')
    dt=$("$dn" train "$tmp/alexnet16.cfg" 1 2>/dev/null | awk '/images_per_s/{print $2}')
    "$BIN/trainer" bench --cfg "$cfg" --batch 16 --iterations 3 --threads "$threads" --json > "$tmp/ours" || exit 1
    of=$(num forward_images_per_s < "$tmp/ours")
    ot=$(num train_images_per_s < "$tmp/ours")
    cv=$(num conv_train_gflops < "$tmp/ours")
    sg=$(num sgemm_gflops < "$tmp/ours")
    if [ -z "$df" ] || [ -z "$dt" ] || [ -z "$of" ] || [ -z "$ot" ] || [ -z "$cv" ] || [ -z "$sg" ]; then
        echo "trainer bench: a measurement failed (dn_bench or trainer bench printed nothing)"
        exit 1
    fi
    echo "$r $df $dt $of $ot $cv $sg $(cut -d' ' -f1 /proc/loadavg)" >> "$tmp/runs"
done
awk -v th="$threads" -v rep="$repeat" '
{
    rt = $5 / $3; rf = $4 / $2; rc = $6 / $7
    printf "  run %d (load %s): train %.2f vs %.3f images/s = %.1fx; forward %.2f vs %.3f = %.1fx; convolutions %.1f of sgemm %.1f GFLOPS = %.0f%%\n", $1, $8, $5, $3, rt, $4, $2, rf, $6, $7, 100 * rc
    if (rt > bt) { bt = rt; t1 = $5; t2 = $3 }
    if (rf > bf) { bf = rf; f1 = $4; f2 = $2 }
    if (rc > bc) { bc = rc; c1 = $6; c2 = $7 }
}
END {
    printf "trainer bench: alexnet.cfg 227x227, THREADS=%d, best of %d interleaved runs:\n", th, rep
    printf "  training step, batch 16: %8.2f images/s vs Darknet %7.3f: %6.1fx (target >= 10x) %s\n", t1, t2, bt, (bt >= 10 ? "ok" : "MISSED")
    printf "  forward, batch 1:        %8.2f images/s vs Darknet %7.3f: %6.1fx (target >=  4x) %s\n", f1, f2, bf, (bf >= 4 ? "ok" : "MISSED")
    printf "  convolutions in training: %7.2f GFLOPS vs sgemm 2048 %6.2f GFLOPS: %5.1f%% (target >= 50%%) %s\n", c1, c2, 100 * bc, (bc >= 0.5 ? "ok" : "MISSED")
    exit (bt >= 10 && bf >= 4 && bc >= 0.5) ? 0 : 1
}' "$tmp/runs"
