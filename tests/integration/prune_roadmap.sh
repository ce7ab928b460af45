#!/usr/bin/env bash
# prune roadmap: the roadmap folder (every step's cfg and weights, nested
# filter counts, the common filter order, roadmap.json last), --follow at
# equal counts, the same bytes for any thread count, and errors that exit
# non-zero and leave nothing behind.
. "$TOP/tests/lib.sh"
P=$BIN/prune
jqc() { jq -e "$1" "$2" >/dev/null; } # FILTER FILE: the filter holds

. "$TOP/tests/integration/prune/rank.sh"
rank_fixture || { t_done; exit 0; }
D=$T/data/tiny.data
RM=(roadmap --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --seed 2
    --set retrain_batches=5 --set min_accuracy=0 --set triplets=12 --set step=0.25)

expect_ok "prune roadmap --help" "$P" roadmap --help
t_check "--help lists the settings" grep -q "min_accuracy" "$T/out"

expect_ok "trr roadmap" "$P" "${RM[@]}" --method trr --out "$T/rm"
R=$T/rm/roadmap.json
t_check "it says what it wrote" grep -q "trr roadmap of .* steps, seed step" "$T/out"
t_check "format, method, settings" jqc '.format == "prune-roadmap" and .version == 1 and .method == "trr" and .settings.step == 0.25 and .settings.eval_split == "valid" and .settings.follow == null' "$R"
t_check "ranked layers 0, 2, 3 with their base counts" jqc '[.layers[] | [.layer, .filters]] == [[0, 8], [2, 6], [3, 10]]' "$R"
t_check "each layer's order is a permutation of its filters" jqc 'all(.layers[]; (.order | sort) == [range(.filters)])' "$R"
t_check "step 0 is the base, kept whole" jqc '.steps[0].step == 0 and .steps[0].kept == [8, 6, 10] and .steps[0].filters == 24' "$R"
t_check "several steps" jqc '(.steps | length) >= 3' "$R"
t_check "filter counts shrink step by step, in every layer" jqc '
    .steps as $s | all(range(1; $s | length); . as $k |
        ($s[$k].filters < $s[$k - 1].filters) and
        all(range($s[$k].kept | length); $s[$k].kept[.] <= $s[$k - 1].kept[.] and $s[$k].kept[.] >= 2))' "$R"
t_check "MACs shrink" jqc '.steps as $s | all(range(1; $s | length); $s[.].macs < $s[. - 1].macs)' "$R"
t_check "accuracy with split, images and a Wilson interval" jqc '
    all(.steps[]; .accuracy.split == "valid" and .test.split == "test" and .accuracy.images == 6 and
        .accuracy.lo <= .accuracy.top1 and .accuracy.top1 <= .accuracy.hi and .test.images == 6)' "$R"
t_check "min_accuracy 0: every step passes, the seed is the last" jqc '(.steps | all(.passed)) and .seed_step == (.steps | length) - 1' "$R"
t_check "why it stopped" jqc '.stopped | test("no filter can be removed|max_steps")' "$R"
n=$(jq '.steps | length' "$R")
ok=1
for k in $(seq 0 $((n - 1))); do
    [ -s "$T/rm/step-$k.cfg" ] && [ -s "$T/rm/step-$k.weights" ] || ok=0
    "$BIN/trainer" valid --cfg "$T/rm/step-$k.cfg" --weights "$T/rm/step-$k.weights" --data "$D" \
        --split test >/dev/null 2>&1 || ok=0
    f=$(jq -r ".steps[$k].kept[0]" "$R")
    grep -q "^filters=$f\$" "$T/rm/step-$k.cfg" || ok=0
done
t_check "every step's cfg and weights load, with its kept filters" test $ok = 1
t_check "no temporary file or training folder is left" test "$(ls -A "$T/rm" | grep -cv -e '^step-[0-9]*\.cfg$' -e '^step-[0-9]*\.weights$' -e '^roadmap\.json$')" = 0
# Step 0 is the base with its filters reordered: the same predictions.
"$BIN/trainer" valid --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --split test >"$T/v0" 2>&1
"$BIN/trainer" valid --cfg "$T/rm/step-0.cfg" --weights "$T/rm/step-0.weights" --data "$D" --split test >"$T/v1" 2>&1
t_check "step 0 predicts what the base predicts" cmp -s <(grep -i top "$T/v0") <(grep -i top "$T/v1")

THREADS=2 expect_ok "trr roadmap with 2 threads" "$P" "${RM[@]}" --method trr --threads 2 --out "$T/rm2"
t_check "the same bytes with 1 and 2 threads" diff -r "$T/rm" "$T/rm2"

expect_ok "l1 roadmap following the trr one" "$P" "${RM[@]}" --method l1 --follow "$R" --out "$T/l1"
t_check "equal filter counts at every step" test "$(jq -c '[.steps[].kept]' "$R")" = "$(jq -c '[.steps[].kept]' "$T/l1/roadmap.json")"
t_check "the l1 roadmap says what it followed" jqc '.method == "l1" and .settings.follow != null and .settings.triplets == null' "$T/l1/roadmap.json"

expect_ok "eval_every: the retraining curve" "$P" "${RM[@]}" --method trr --set max_steps=2 --set eval_every=2 --out "$T/cv"
C=$T/cv/roadmap.json
t_check "eval_every: recorded; no curve at step 0" jqc '.settings.eval_every == 2 and (.steps[0] | has("curve") | not)' "$C"
t_check "eval_every: batches 0 (just pruned), 2, 4 and 5 (the last)" jqc 'all(.steps[1:][]; [.curve[].batch] == [0, 2, 4, 5])' "$C"
t_check "eval_every: the last point is the step's result" jqc 'all(.steps[1:][]; .curve[-1].accuracy == .accuracy and .curve[-1].test == .test)' "$C"
t_check "eval_every: the same steps as without it" test "$(jq -c '[.steps[:3][] | [.kept, .accuracy, .test]]' "$C")" = "$(jq -c '[.steps[:3][] | [.kept, .accuracy, .test]]' "$R")"
expect_ok "random roadmap following the trr one" "$P" "${RM[@]}" --method random --follow "$R" --out "$T/rnd"
t_check "random: equal filter counts" test "$(jq -c '[.steps[].kept]' "$R")" = "$(jq -c '[.steps[].kept]' "$T/rnd/roadmap.json")"
t_check "random: recorded" jqc '.method == "random"' "$T/rnd/roadmap.json"

# rescale=1 only rescales (batch norm undoes it): with no retraining the
# just-pruned step predicts what it predicts without, from other weights.
NR=(--set retrain_batches=0 --set bn_batches=0 --set max_steps=1)
expect_ok "rescale=0, no retraining" "$P" "${RM[@]}" --method l1 "${NR[@]}" --out "$T/rs0"
expect_ok "rescale=1, no retraining" "$P" "${RM[@]}" --method l1 "${NR[@]}" --set rescale=1 --set warmup=3 --out "$T/rs1"
t_check "rescale, warmup: recorded" jqc '.settings.rescale == true and .settings.warmup == 3' "$T/rs1/roadmap.json"
t_check "rescale: same counts and predictions" test "$(jq -c '[.steps[] | [.kept, .accuracy.correct, .test.correct]]' "$T/rs0/roadmap.json")" = "$(jq -c '[.steps[] | [.kept, .accuracy.correct, .test.correct]]' "$T/rs1/roadmap.json")"
t_check "rescale: other weights" bash -c '! cmp -s "$1/rs0/step-1.weights" "$1/rs1/step-1.weights"' _ "$T"
t_check "rescale: the base untouched" cmp -s "$T/rs0/step-0.weights" "$T/rs1/step-0.weights"

expect_ok "a MAC target ends the roadmap" "$P" "${RM[@]}" --method trr --set target_macs=0.95 --out "$T/tg"
t_check "target_macs: stopped at the first step under it" jqc '(.steps | length) == 2 and .seed_step == 1 and (.stopped | test("reaches target_macs")) and .steps[1].macs <= 0.95 * .steps[0].macs' "$T/tg/roadmap.json"

# seed_epochs: once the iteration ends the seed alone retrains that many
# passes over the training images; every other step is as without it.
expect_ok "seed_epochs: the seed retrains longer" "$P" "${RM[@]}" --method trr --set target_macs=0.95 --set seed_epochs=2.5 --out "$T/se"
S=$T/se/roadmap.json
tl=$(sed -n 's/^ *train *= *//p' "$D")
case $tl in /*) ;; *) tl=$(dirname "$D")/$tl ;; esac
ntrain=$(grep -c . "$tl")
t_check "seed_epochs: recorded; the seed's batches are ceil(2.5 x $ntrain images / batch 8)" jqc ".settings.seed_epochs == 2.5 and .steps[1].seed_batches == ((2.5 * $ntrain / 8) | ceil) and .steps[1].seed_batches > 5 and (.steps[0] | has(\"seed_batches\") | not)" "$S"
t_check "seed_epochs: the same steps and counts" test "$(jq -c '[.seed_step, [.steps[].kept]]' "$S")" = "$(jq -c '[.seed_step, [.steps[].kept]]' "$T/tg/roadmap.json")"
t_check "seed_epochs: step 0 as without it, the seed retrained" bash -c 'cmp -s "$1/se/step-0.weights" "$1/tg/step-0.weights" && ! cmp -s "$1/se/step-1.weights" "$1/tg/step-1.weights"' _ "$T"
t_check "seed_epochs: no training folder left" test ! -e "$T/se/.train-1"

bad() { # NAME PATTERN ARGS...: fails with PATTERN and leaves no folder
    local name=$1 pat=$2; shift 2
    rm -rf "$T/bad"
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad"
    t_check "$name: no folder" test ! -e "$T/bad"
}
bad "missing --method" "--method is required" roadmap --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --seed 1
bad "unknown method" "--method 'l2' is not a ranking" "${RM[@]}" --method l2
bad "unknown setting" "unknown key 'stride'" "${RM[@]}" --method trr --set stride=2
bad "bad step" "step must be in" "${RM[@]}" --method trr --set step=0.95
bad "bad rescale" "rescale must be in" "${RM[@]}" --method trr --set rescale=2
bad "bad seed_epochs" "seed_epochs must be in" "${RM[@]}" --method trr --set seed_epochs=-1
bad "a base below min_accuracy" "below min_accuracy" "${RM[@]}" --method l1 --set min_accuracy=1
echo '{"format":"other"}' >"$T/x.json"
bad "follow: not a roadmap" "not a roadmap file" "${RM[@]}" --method l1 --follow "$T/x.json"
t_done
