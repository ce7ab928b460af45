#!/usr/bin/env bash
# tests/bench/trainer_det.sh: `make bench` for the determinism modes. On the
# default recipe's training shapes (recipes/alexnet/base.cfg: every matrix
# product of one training step at its batch, shape by shape), in one run:
#   the portable GEMM (DETERMINISM=portable) against OpenBLAS sgemm (the
#   default mode), both through the trainer's gemm at THREADS threads:
#   GFLOPS ratio, target >= 50%
#   a whole training step in each mode, images/s: the default mode must be
#   the faster one (the median over the runs of default/portable >= 1: one
#   run's pair is measured back to back, under the same load), and the
#   portable mode at least 80% of the default's (the median of
#   portable/default >= 0.8; issue 37 item 3)
# REPEAT (default 3) interleaved runs; the GEMM summary takes the best ratio.
# Exit status 1 when a target is missed or a measurement fails.
# Environment (from make): BIN, TOP, THREADS.
set -u
: "${BIN:?run through make bench}" "${TOP:?run through make bench}"
cfg=$TOP/recipes/alexnet/base.cfg
repeat=${REPEAT:-3}
threads=${THREADS:-$(nproc)}
num() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }
str() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
runs=$(mktemp "${TMPDIR:-/tmp}/det-bench.XXXXXX")
trap 'rm -f "$runs"' EXIT
for r in $(seq "$repeat"); do
    d=$("$BIN/trainer" bench --cfg "$cfg" --iterations 3 --sgemm 0 --threads "$threads" --json) || exit 1
    p=$("$BIN/trainer" bench --cfg "$cfg" --iterations 3 --sgemm 0 --threads "$threads" --no-gemm \
        --determinism portable --json) || exit 1
    ob=$(num gemm_openblas_gflops <<<"$d") pg=$(num gemm_portable_gflops <<<"$d")
    td=$(num train_images_per_s <<<"$d") tp=$(num train_images_per_s <<<"$p")
    calls=$(num gemm_calls <<<"$d") kern=$(str gemm_kernel <<<"$d")
    if [ -z "$ob" ] || [ -z "$pg" ] || [ -z "$td" ] || [ -z "$tp" ]; then
        echo "determinism bench: a measurement failed (trainer bench printed nothing)"
        exit 1
    fi
    echo "$r $ob $pg $td $tp $calls $kern $(cut -d' ' -f1 /proc/loadavg)" >> "$runs"
done
awk -v th="$threads" -v rep="$repeat" '
{
    rg = $3 / $2; rt = $5 / $4
    printf "  run %d (load %s): %d products of a step: OpenBLAS %.2f, portable %.2f GFLOPS (%s) = %.0f%%; step: default %.1f, portable %.1f images/s\n", $1, $8, $6, $2, $3, $7, 100 * rg, $4, $5
    if (rg > bg) { bg = rg; g1 = $3; g2 = $2; k = $7 }
    st[NR] = $4 / $5
    if ($4 > btd) btd = $4
    if ($5 > btp) btp = $5
}
END {
    printf "determinism bench: recipes/alexnet/base.cfg training step, THREADS=%d, best of %d interleaved runs:\n", th, rep
    printf "  portable GEMM %.2f GFLOPS vs OpenBLAS sgemm %.2f on the same shapes: %.0f%% (target >= 50%%) %s\n", g1, g2, 100 * bg, (bg >= 0.5 ? "ok" : "MISSED")
    n = NR
    for (i = 2; i <= n; i++) for (j = i; j > 1 && st[j - 1] > st[j]; j--) { x = st[j]; st[j] = st[j - 1]; st[j - 1] = x }
    med = n % 2 ? st[(n + 1) / 2] : (st[n / 2] + st[n / 2 + 1]) / 2
    printf "  training step: default %.1f images/s, portable %.1f (best of each); default/portable, median of the runs: %.2f: the default mode is %s\n", btd, btp, med, (med >= 1 ? "the faster (ok)" : "SLOWER (MISSED)")
    printf "  the portable mode at %.0f%% of the default mode (median of the runs; target >= 80%%) %s\n", 100 / med, (1 / med >= 0.8 ? "ok" : "MISSED")
    exit !(bg >= 0.5 && med >= 1 && 1 / med >= 0.8)
}' "$runs"
