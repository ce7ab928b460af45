#!/usr/bin/env bash
# trainer/bench.sh: `make bench` for the trainer. One run, on this machine:
# our trainer against libdarknet (Debian's darknet package) on alexnet.cfg as
# shipped (227x227), printing ratios:
#   training step (forward + backward + update) at batch 16, images/s   target >= 10x Darknet
#   forward at batch 1, images/s                                          target >= 4x Darknet
#   convolution layers' effective GFLOPS inside our training step         target >= 50% of
#     OpenBLAS sgemm on a 2048x2048 product measured in the same run
# Each figure is the best of REPEAT runs (default 2) to damp the noise of a
# shared machine; the load average is printed with the results. Exit status
# 1 when a target is missed or a measurement fails.
# Environment (from make): BIN, O, TOP, THREADS.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}"
cfg=/usr/share/darknet/cfg/alexnet.cfg
dn=$O/tests/darknet/dn_bench
repeat=${REPEAT:-2}
threads=${THREADS:-$(nproc)}
if [ ! -e /usr/lib/darknet/libdarknet.so ] || [ ! -e "$cfg" ]; then
    echo "trainer bench: skipped: the darknet package is not installed"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trn-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# alexnet.cfg with batch=16 in [net] (Darknet reads the batch from the cfg).
awk '/^\[/{net=($0=="[net]")} net && /^batch=/{print "batch=16"; next} {print}' "$cfg" > "$tmp/alexnet16.cfg"

best() { sort -g | tail -n 1; }
num() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }

dn_fwd=$(for r in $(seq "$repeat"); do "$dn" forward "$cfg" 3 2>/dev/null | awk '/images_per_s/{print $2}'; done | best)
dn_train=$(for r in $(seq "$repeat"); do "$dn" train "$tmp/alexnet16.cfg" 1 2>/dev/null | awk '/images_per_s/{print $2}'; done | best)
: > "$tmp/ours"
for r in $(seq "$repeat"); do
    "$BIN/trainer" bench --cfg "$cfg" --batch 16 --iterations 3 --threads "$threads" --json >> "$tmp/ours" || exit 1
done
our_fwd=$(num forward_images_per_s < "$tmp/ours" | best)
our_train=$(num train_images_per_s < "$tmp/ours" | best)
conv=$(num conv_train_gflops < "$tmp/ours" | best)
sgemm=$(num sgemm_gflops < "$tmp/ours" | best)
if [ -z "$dn_fwd" ] || [ -z "$dn_train" ] || [ -z "$our_fwd" ] || [ -z "$conv" ]; then
    echo "trainer bench: a measurement failed (dn_bench or trainer bench printed nothing)"
    exit 1
fi
awk -v df="$dn_fwd" -v dt="$dn_train" -v of="$our_fwd" -v ot="$our_train" -v cv="$conv" \
    -v sg="$sgemm" -v th="$threads" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" -v rep="$repeat" '
BEGIN {
    rt = ot / dt; rf = of / df; rc = cv / sg; bad = 0
    printf "trainer bench: alexnet.cfg 227x227, THREADS=%d, best of %d runs, load average %s\n", th, rep, load
    printf "  training step, batch 16: %8.2f images/s vs Darknet %7.3f: %6.1fx (target >= 10x) %s\n", ot, dt, rt, (rt >= 10 ? "ok" : "MISSED")
    printf "  forward, batch 1:        %8.2f images/s vs Darknet %7.3f: %6.1fx (target >=  4x) %s\n", of, df, rf, (rf >= 4 ? "ok" : "MISSED")
    printf "  convolutions in training: %7.2f GFLOPS vs sgemm 2048 %6.2f GFLOPS: %5.1f%% (target >= 50%%) %s\n", cv, sg, 100 * rc, (rc >= 0.5 ? "ok" : "MISSED")
    exit (rt >= 10 && rf >= 4 && rc >= 0.5) ? 0 : 1
}'
