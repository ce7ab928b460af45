#!/usr/bin/env bash
# prune trr, prune l1 and prune scan: the ranking file (every ranked layer and filter,
# the prune order), the same bytes for any thread count, and errors that
# name the problem, exit non-zero and leave no file behind.
. "$TOP/tests/lib.sh"
P=$BIN/prune
TOOL=$TESTD/tools/prune-testtool

. "$TOP/tests/integration/prune/rank.sh"
rank_fixture || { t_done; exit 0; }
D=$T/data/tiny.data
jqc() { jq -e "$1" "$2" >/dev/null; } # FILTER FILE: the filter holds
TRR=(trr --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --seed 3 --triplets 20)

for v in trr l1; do
    expect_ok "prune $v --help" "$P" $v --help
    grep -q "Usage: prune $v" "$T/out" || t_fail "prune $v --help prints its usage"
done

expect_ok "trr" "$P" "${TRR[@]}" --out "$T/r1.json"
t_check "trr says what it wrote" grep -q "trr ranking of 24 filters in 3 layers (20 triplets" "$T/out"
t_check "the ranking file is JSON" jqc . "$T/r1.json"
t_check "method, triplets, seed" jqc '.method == "trr" and .triplets == 20 and .seed == 3 and .split == "train"' "$T/r1.json"
t_check "layers 0, 2, 3 ranked; the classifier is not" jqc '[.layers[].layer] == [0, 2, 3]' "$T/r1.json"
t_check "per layer: scores, normalised scores, order" \
    jqc 'all(.layers[]; (.score | length) == .filters and (.normalised | length) == .filters and (.order | sort) == [range(.filters)])' "$T/r1.json"
t_check "map sizes 16x16, 8x8, 1" jqc '[.layers[].map] == [256, 64, 1]' "$T/r1.json"
t_check "the prune order holds every filter once" jqc '(.prune_order | unique | length) == 24' "$T/r1.json"
t_check "the prune order ascends by normalised score" jqc '
    (.layers | map({key: (.layer | tostring), value: .normalised}) | from_entries) as $n
    | [.prune_order[] | $n[(.[0] | tostring)][.[1]]] as $s
    | all(range(1; $s | length); $s[. - 1] <= $s[.])' "$T/r1.json"
t_check "no temporary file is left" test "$(ls "$T" | grep -c tmp)" = 0

THREADS=2 expect_ok "trr with 2 threads" "$P" "${TRR[@]}" --threads 2 --out "$T/r2.json"
t_check "the same bytes with 1 and 2 threads" cmp -s "$T/r1.json" "$T/r2.json"
expect_ok "trr with another seed" "$P" trr --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" \
    --seed 4 --triplets 20 --out "$T/r3.json"
t_check "another seed draws other triplets" test "$(jq -c '.layers[0].score' "$T/r1.json")" != "$(jq -c '.layers[0].score' "$T/r3.json")"

expect_ok "trr with the default count" "$P" trr --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --seed 3 --out "$T/rdef.json"
t_check "trr: 8192 triplets by default (prune/README.md: measured)" jqc '.triplets == 8192' "$T/rdef.json"
t_check "trr: F at the output, squared distance by default" jqc '.at == "output" and .distance == "squared"' "$T/r1.json"
expect_ok "trr --at bn --distance plain" "$P" "${TRR[@]}" --at bn --distance plain --out "$T/rbn.json"
t_check "trr --at bn: recorded" jqc '.at == "bn" and .distance == "plain"' "$T/rbn.json"
t_check "trr --at bn: other scores" test "$(jq -c '.layers[0].score' "$T/r1.json")" != "$(jq -c '.layers[0].score' "$T/rbn.json")"
expect_ok "trr --at conv" "$P" "${TRR[@]}" --at conv --out "$T/rconv.json"
t_check "trr --at conv: recorded" jqc '.at == "conv" and .distance == "squared"' "$T/rconv.json"
expect_ok "trr --at bn, squared" "$P" "${TRR[@]}" --at bn --out "$T/rbn2.json"
t_check "trr --at conv and bn: the connected layer (no batch norm) has the same scores" \
    test "$(jq -c '.layers[2].score' "$T/rconv.json")" = "$(jq -c '.layers[2].score' "$T/rbn2.json")"
expect_ok "trr --at pooled" "$P" "${TRR[@]}" --at pooled --out "$T/rpool.json"
t_check "trr --at pooled: F after the max pool that follows layer 0 (8x8), the others' own output" \
    jqc '.at == "pooled" and [.layers[] | [.layer, .f_layer, .f_map]] == [[0, 1, 64], [2, 2, 64], [3, 3, 1]]' "$T/rpool.json"
t_check "trr --at pooled: layers with nothing pooled after them score as at the output" \
    test "$(jq -c '[.layers[1:][].score]' "$T/rpool.json")" = "$(jq -c '[.layers[1:][].score]' "$T/r1.json")"
t_check "trr --at pooled: layer 0 scores the pooled map (other scores)" \
    test "$(jq -c '.layers[0].score' "$T/rpool.json")" != "$(jq -c '.layers[0].score' "$T/r1.json")"
t_check "trr --at pooled: normalised by the pooled map" \
    jqc 'all(.layers[]; . as $l | all(range(.filters); ($l.score[.] / $l.f_map / 20 - $l.normalised[.]) | fabs < 1e-9 * (fabs + 1)))' "$T/rpool.json"

expect_ok "l1" "$P" l1 --cfg "$T/base.cfg" --weights "$T/base.weights" --out "$T/l1.json"
t_check "l1: same layers, no triplets" jqc '.method == "l1" and (has("triplets") | not) and [.layers[].layer] == [0, 2, 3]' "$T/l1.json"
t_check "l1: normalised by weights per filter" \
    jqc 'all(.layers[]; . as $l | all(range(.filters); ($l.score[.] / $l.filter_weights - $l.normalised[.]) | fabs < 1e-12))' "$T/l1.json"

# prune scan: one layer at a time, no retraining
expect_ok "scan --help" "$P" scan --help
expect_ok "trr scan" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method trr \
    --seed 3 --triplets 20 --fractions 0.25,0.5,0.75 --out "$T/scan.json"
t_check "scan prints the table" grep -Eq '^L2 +6 +[0-9.]+% +[0-9.]+% +[0-9.]+%$' "$T/out"
t_check "scan: every ranked layer, every fraction" \
    jqc '[.layers[].layer] == [0, 2, 3] and all(.layers[]; [.points[].fraction] == [0.25, 0.5, 0.75])' "$T/scan.json"
t_check "scan: round(p x filters) pruned" jqc '[.layers[0].points[].pruned] == [2, 4, 6] and [.layers[1].points[].pruned] == [2, 3, 5]' "$T/scan.json"
t_check "scan: accuracy on the test split with an interval" \
    jqc '.base.split == "test" and all(.layers[].points[].accuracy; .images == 6 and .lo <= .top1 and .top1 <= .hi)' "$T/scan.json"
t_check "scan: next_share in (0, 1], falling as more filters go" \
    jqc 'all(.layers[]; [.points[].next_share] as $s | all($s[]; . > 0 and . <= 1) and $s == ($s | sort | reverse))' "$T/scan.json"
expect_ok "l1 scan" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 \
    --seed 3 --fractions 0.5 --out "$T/scan-l1.json"
t_check "l1 scan" jqc '.method == "l1" and (.layers[0].points | length) == 1' "$T/scan-l1.json"
expect_ok "scan --drop mean" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 \
    --seed 3 --fractions 0.5 --drop mean --out "$T/scan-mean.json"
t_check "scan --drop mean: recorded, same points" \
    jqc '.drop == "mean" and [.layers[0].points[].pruned] == [4]' "$T/scan-mean.json"
# scan --corr: the kept filters' output correlation against random sets (a diagnostic)
expect_ok "scan --corr" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 \
    --seed 3 --fractions 0.25,0.75 --corr 8 --out "$T/scan-corr.json"
t_check "scan --corr: recorded, every point" jqc '.corr_images == 8 and all(.layers[].points[]; has("kept_corr"))' "$T/scan-corr.json"
t_check "scan --corr: mean |r| in [0, 1], random percentiles ordered" jqc '
    all(.layers[].points[].kept_corr; .mean_abs >= 0 and .mean_abs <= 1 and .random_p5 <= .random_mean and
        .random_mean <= .random_p95 and .random_below >= 0 and .random_below <= 1)' "$T/scan-corr.json"
t_check "scan --corr: one filter left has no pair (0)" jqc '.layers[1].points[1].pruned == 5 and .layers[1].points[1].kept_corr.mean_abs == 0' "$T/scan-corr.json"
t_check "scan --corr: printed" grep -q "kept mean |r| " "$T/out"
t_check "scan --corr: the accuracies are the plain scan's" test \
    "$(jq -c '[.layers[].points[] | select(.fraction == 0.25) | .accuracy]' "$T/scan-corr.json")" = \
    "$("$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 --seed 3 --fractions 0.25 \
        --out "$T/scan-nocorr.json" >/dev/null 2>&1; jq -c '[.layers[].points[].accuracy]' "$T/scan-nocorr.json")"
# --method random: the diagnostic baseline (roadmap and scan)
expect_ok "scan --method random" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method random \
    --seed 3 --fractions 0.5 --out "$T/scan-rnd.json"
t_check "scan --method random: recorded" jqc '.method == "random" and (.layers | length) == 3' "$T/scan-rnd.json"
# scan --drop single: each filter alone zeroed (a diagnostic), on chosen layers
expect_ok "scan --drop single" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method trr \
    --seed 3 --triplets 20 --drop single --layers conv@1,L3 --out "$T/scan-single.json"
t_check "scan --drop single: the chosen layers only, every filter once" \
    jqc '.drop == "single" and [.layers[].layer] == [0, 3] and all(.layers[]; [.single[].filter] == [range(.filters)])' "$T/scan-single.json"
t_check "scan --drop single: accuracy with its interval and a loss per filter" \
    jqc '.base_loss > 0 and all(.layers[].single[]; .accuracy.images == 6 and .accuracy.lo <= .accuracy.top1 and .loss >= 0)' "$T/scan-single.json"
t_check "scan --drop single: the scores are the rankings' (trr with its two sums, l1)" test \
    "$(jq -c '[.layers[] | [.single[].score], [.single[].l1], [.single[] | (.neg - .pos - .score | fabs) < 1e-6 * (.neg + 1)]]' "$T/scan-single.json")" = \
    "$(jq -c --slurpfile l "$T/l1.json" '[.layers[] | select(.layer == 0 or .layer == 3) | .layer as $i | .score,
        ($l[0].layers[] | select(.layer == $i) | .score), [.score[] | true]]' "$T/r1.json")"
t_check "scan --drop single: Spearman with the ranking and with L1 (numbers or null)" \
    jqc 'all(.layers[]; .spearman | keys == ["loss_l1", "loss_score", "top1_l1", "top1_score"] and
        all(.[]; . == null or (. >= -1 and . <= 1)))' "$T/scan-single.json"
t_check "scan --drop single: the filter's description" \
    jqc 'all(.layers[0].single[]; .zeros >= 0 and .zeros <= 1 and .std >= 0 and .next_weight_share >= 0 and
        .next_weight_share <= 1 and .max_abs_corr <= 1 and has("bn_scale"))' "$T/scan-single.json"
t_check "scan --drop single: printed" grep -q "Spearman with the loss increase: trr " "$T/out"
expect_ok "scan --drop single --bn" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 \
    --seed 3 --drop single --bn 2 --layers conv@2 --out "$T/scan-single-bn.json"
t_check "scan --drop single --bn: recorded, statistics re-estimated (other losses)" \
    jqc '.bn_batches == 2 and [.layers[].layer] == [2] and (.layers[0].single | length) == .layers[0].filters' "$T/scan-single-bn.json"
expect_ok "scan --drop single without --bn on conv@2" "$P" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" \
    --method l1 --seed 3 --drop single --layers conv@2 --out "$T/scan-single-nobn.json"
t_check "scan --drop single --bn: the losses differ from the kept statistics'" test \
    "$(jq -c '[.base_loss, .layers[0].single[].loss]' "$T/scan-single-bn.json")" != "$(jq -c '[.base_loss, .layers[0].single[].loss]' "$T/scan-single-nobn.json")"

bad() { # NAME PATTERN ARGS...: fails with PATTERN and writes no file
    local name=$1 pat=$2; shift 2
    rm -f "$T/bad.json"
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad.json"
    t_check "$name: no file" test ! -e "$T/bad.json"
}
bad "trr: missing --data" "--data is required" trr --cfg "$T/base.cfg" --weights "$T/base.weights" --seed 1
bad "trr: missing --seed" "--seed is required" trr --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D"
bad "trr: bad split" "--split 'dev' is not a split" "${TRR[@]}" --split dev
bad "trr: zero triplets" "--triplets needs" "${TRR[@]}" --triplets 0
bad "trr: missing weights" "cannot open .*nope.weights" trr --cfg "$T/base.cfg" --weights "$T/nope.weights" --data "$D" --seed 1
bad "trr: missing data set" "cannot open .*nope.data" trr --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$T/nope.data" --seed 1
sed 's/output=2$/output=3/' "$T/base.cfg" >"$T/three.cfg"
"$TOOL" weights "$T/three.cfg" 5 "$T/three.weights"
bad "trr: classes differ" "has 3 outputs but .* has 2 classes" trr --cfg "$T/three.cfg" --weights "$T/three.weights" --data "$D" --seed 1
printf 'classes=2\ntrain=one.list\nlabels=labels.txt\n' >"$T/data/one.data"
echo img/0000_dark.bmp >"$T/data/one.list"
bad "trr: no triplet in the split" "no triplet can be drawn" trr --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$T/data/one.data" --seed 1
bad "scan: bad fractions" "--fractions '0.5,1.5'" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method trr --seed 1 --fractions 0.5,1.5
bad "trr: bad --at" "--at 'relu' is not a point" "${TRR[@]}" --at relu
bad "trr: bad --distance" "--distance 'l1' is not a distance" "${TRR[@]}" --distance l1
bad "scan: bad --drop" "--drop 'zero'" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 --seed 1 --drop zero
bad "scan: unknown --method" "is not a ranking: use trr, l1 or random" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --seed 1 --method l2
bad "scan: missing --method" "--method is required" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --seed 1
bad "l1: missing --weights" "--weights is required" l1 --cfg "$T/base.cfg"
bad "scan: --bn without --drop single" "--bn 2: only with --drop single" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 --seed 1 --bn 2
bad "scan: --layers, no such layer" "--layers: conv@9" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 --seed 1 --layers conv@9
bad "scan: --layers, a layer not ranked" "layer 1 is not ranked" scan --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 --seed 1 --layers L1
t_done
