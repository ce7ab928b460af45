#!/usr/bin/env bash
# prune grow: NestDNN's freeze-&-grow from a small roadmap: the folder
# (variant.cfg, init.weights, capacities.json, meta.json last), capacity 1 is the
# roadmap's seed (the same test predictions), the full capacity is a plain
# Darknet model that `trainer valid` runs with capacity 5's accuracy, costs
# nested, page-in/out bytes consistent, the same bytes for 1 and 2 threads,
# and errors that exit non-zero and leave nothing behind.
. "$TOP/tests/lib.sh"
P=$BIN/prune
jqc() { jq -e "$1" "$2" >/dev/null; } # FILTER FILE: the filter holds

. "$TOP/tests/integration/prune/nest.sh"
nest_fixture "$T" || { t_done; exit 0; }
D=$T/data/tiny.data
R=$T/rm/roadmap.json
G=(grow --roadmap "$R" --data "$D" --seed 1 --set batches=5)

expect_ok "prune grow --help" "$P" grow --help
t_check "--help names the settings and the files" grep -q "capacities.json" "$T/out"

expect_ok "grow" "$P" "${G[@]}" --out "$T/g"
C=$T/g/capacities.json
t_check "it says what it wrote" grep -q "5 capacities, model .* bytes, the independent descendants" "$T/out"
t_check "the five files and each capacity's per-image record" test "$(ls -A "$T/g" | tr '\n' ' ')" = \
    "capacities.json capacity-1.predictions capacity-2.predictions capacity-3.predictions capacity-4.predictions capacity-5.predictions capacity_bn.weights init.weights meta.json variant.cfg "
t_check "each capacity's record holds its test images and its correct count" python3 -c '
import json, sys
caps = json.load(open(sys.argv[1] + "/capacities.json"))["capacities"]
for c in caps:
    lines = open("%s/capacity-%d.predictions" % (sys.argv[1], c["capacity"])).read().split("\n")
    head = lines[0].split()
    assert head[:3] == ["trn-predictions", "1", "test"] and int(head[3]) == c["test"]["images"], head
    rows = [l.split() for l in lines[1:] if l]
    assert len(rows) == c["test"]["images"] and sum(a == b for a, b in rows) == c["test"]["correct"], c
' "$T/g"
t_check "format and files" jqc '.format == "prune-nest" and .version == 1 and .cfg == "variant.cfg" and .weights == "init.weights"' "$C"
t_check "5 capacities from the seed step down to step 0" jqc '[.capacities[].roadmap_step] == [4, 3, 2, 1, 0]' "$C"
t_check "capacity filters are the roadmap's kept counts" test "$(jq -c '[.capacities[] | [.filters[0], .filters[2], .filters[4]]]' "$C")" = "$(jq -c '[.steps[4,3,2,1,0].kept]' "$R")"
t_check "MACs, params and bytes grow with the capacity" jqc '.capacities as $c | all(range(1; 5); $c[.].macs > $c[. - 1].macs and $c[.].weight_bytes > $c[. - 1].weight_bytes)' "$C"
t_check "MACs equal the roadmap steps'" test "$(jq -c '[.capacities[].macs]' "$C")" = "$(jq -c '[.steps[4,3,2,1,0].macs]' "$R")"
# The catalog's cost model (an independent oracle, from cfg text) on each
# capacity's standalone model (the roadmap's step model of that size) gives
# the engine's costs at that capacity.
ok=1
for k in 0 1 2 3 4; do
    st=$(jq ".capacities[$k].roadmap_step" "$C")
    "$BIN/catalog" cost --cfg "$T/rm/step-$st.cfg" --out "$T/cost-$k.json" >/dev/null 2>&1 || ok=0
    [ "$(jq -c '[.macs, .params, .weight_bytes]' "$T/cost-$k.json")" = "$(jq -c ".capacities[$k] | [.macs, .params, .weight_bytes]" "$C")" ] || ok=0
done
t_check "the cost model of each capacity's standalone cfg equals the engine's capacity costs" test $ok = 1
t_check "accuracy with test size and a Wilson interval" jqc 'all(.capacities[]; .test.split == "test" and .test.images == 6 and .test.lo <= .test.top1 and .test.top1 <= .test.hi)' "$C"
t_check "capacity 1 is the seed: the same test result" test "$(jq '.capacities[0].test.correct' "$C")" = "$(jq '.steps[4].test.correct' "$R")"
t_check "an upgrade pages in the added bytes, out nothing; a downgrade the reverse" jqc '
    .capacities as $c | all(.switches[]; if .from < .to
        then .page_in_bytes == $c[.to - 1].weight_bytes - $c[.from - 1].weight_bytes and .page_out_bytes == 0
        else .page_out_bytes == $c[.from - 1].weight_bytes - $c[.to - 1].weight_bytes and .page_in_bytes == 0 end) and (.switches | length) == 20' "$C"
t_check "the model is the largest capacity, smaller than the descendants together" jqc '.sum_independent_weight_bytes > .capacities[4].weight_bytes and .weights_bytes == .capacities[4].weight_bytes + 20' "$C"
M=$T/g/meta.json
t_check "meta.json: technique nested, the manifest's capacities" jqc '.technique == "nested" and .parent == "base" and (.technique_fields.capacities | length) == 5 and all(.technique_fields.capacities[]; (.channel_index | length) == 4 and .weight_bytes > 0)' "$M"
t_check "meta.json: page bytes per target capacity" jqc '.technique_fields.capacities as $c | $c[0].page_in_bytes."5" == $c[4].weight_bytes - $c[0].weight_bytes and $c[4].page_out_bytes."1" == $c[4].weight_bytes - $c[0].weight_bytes and $c[0].page_out_bytes == {}' "$M"
t_check "cross slices (old filters reading newer channels): none at capacity 1, some above" jqc '.capacities[0].cross_slice_params == 0 and .capacities[4].cross_slice_params > 0' "$C"
t_check "batch-norm statistics kept per capacity, the same in capacities.json and meta.json" jq -e --slurpfile m "$T/g/meta.json" \
    '.bn_per_capacity == {"roles": ["rolling_mean", "rolling_variance"], "version": 1, "file": "capacity_bn.weights"} and .bn_per_capacity == $m[0].technique_fields.bn_per_capacity' "$C"
# capacity_bn.weights: the 16-byte header, then capacities 1-4's rolling mean
# and variance of every active batch-normalised channel (the fixture's two
# convolutional layers have batch norm; filters[0] and [2] per capacity)
bnb=$(jq '[.capacities[0:4][] | (.filters[0] + .filters[2]) * 2 * 4] | add + 16' "$C")
t_check "capacity_bn.weights holds capacities 1-4's statistics ($bnb bytes)" test "$(stat -c %s "$T/g/capacity_bn.weights")" = "$bnb"
t_check "its header: CPBN, version 1, 4 capacities, roles mean and variance" \
    test "$(od -An -tx1 -N16 "$T/g/capacity_bn.weights" | tr -d ' \n')" = 4350424e01000000040000000c000000
"$BIN/trainer" valid --cfg "$T/g/variant.cfg" --weights "$T/g/init.weights" --data "$D" --split test >"$T/v" 2>&1
t_check "trainer runs the full capacity with capacity 5's accuracy" grep -q "^top-1 $(printf %.4f "$(jq -r '.capacities[4].test.top1' "$C")") " "$T/v"

THREADS=2 expect_ok "grow with 2 threads" "$P" "${G[@]}" --threads 2 --out "$T/g2"
t_check "the same bytes with 1 and 2 threads" diff -r "$T/g" "$T/g2"

# connected=0: the roadmap prunes only the convolutional layers; grow then
# fixes the connected layer (all its rows read the new channels through
# trained columns) instead of growing it with nothing to grow.
"$P" roadmap --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$D" --method l1 --seed 3 \
    --out "$T/rc" --set step=0.25 --set min_accuracy=0 --set retrain_batches=5 --set max_steps=3 \
    --set connected=0 >/dev/null 2>&1 || t_fail "roadmap connected=0"
t_check "connected=0: every step keeps the connected layer's 12 units, the convolutional layers shrink" \
    jqc '.settings.connected == false and all(.steps[]; .kept[2] == 12) and .steps[-1].kept[0] < 8' "$T/rc/roadmap.json"
expect_ok "grow from it" "$P" grow --roadmap "$T/rc/roadmap.json" --data "$D" --seed 1 --set batches=5 --out "$T/gc"
t_check "the unpruned connected layer is fixed, the convolutional ones grow" \
    jqc '[.layers[] | select(.filters > 0) | .fixed] == [false, false, true, true] and .settings.revive == 0.01' "$T/gc/capacities.json"
t_check "capacity 1 is still the seed" test "$(jq '.capacities[0].test.correct' "$T/gc/capacities.json")" = \
    "$(jq ".steps[$(jq .seed_step "$T/rc/roadmap.json")].test.correct" "$T/rc/roadmap.json")"

# slices=1: a measurement, not a variant (statistics per capacity are not
# in the format): each grown capacity's top-1 right after its growth step,
# no folder left.
expect_ok "grow slices=0 (the earlier format)" "$P" "${G[@]}" --set slices=0 --out "$T/gz"
t_check "slices=0: one set of statistics, no capacity_bn.weights, zeroed slices" \
    jqc '.bn_per_capacity == false and .capacities[4].zero_slice_params > 0 and .settings.slices == 0' "$T/gz/capacities.json"
t_check "slices=0: no bn_per_capacity in meta.json" jqc '.technique_fields | has("bn_per_capacity") | not' "$T/gz/meta.json"
t_check "slices=0: no capacity_bn.weights" test ! -e "$T/gz/capacity_bn.weights"
t_check "capacity 1 is the seed with either format" test "$(jq '.capacities[0].test.correct' "$T/gz/capacities.json")" = "$(jq '.capacities[0].test.correct' "$C")"
expect_ok "grow bn_affine=1" "$P" "${G[@]}" --set bn_affine=1 --out "$T/ga"
t_check "bn_affine=1 keeps biases and scales per capacity too" \
    jqc '.bn_per_capacity.roles == ["biases", "scales", "rolling_mean", "rolling_variance"]' "$T/ga/capacities.json"

# epochs=E: each growth step's length in passes over the training images,
# the same growth as batches=ceil(E x images / batch).
tl=$(sed -n 's/^ *train *= *//p' "$D")
case $tl in /*) ;; *) tl=$(dirname "$D")/$tl ;; esac
nb=$(( ($(grep -c . "$tl") * 3 + 7) / 8 )) # 3 epochs at the fixture's batch of 8
expect_ok "grow epochs=3" "$P" "${G[@]}" --set epochs=3 --out "$T/ge"
expect_ok "grow batches=$nb" "$P" "${G[@]}" --set batches="$nb" --out "$T/gb"
t_check "epochs=3: recorded with its $nb batches" jqc ".settings.epochs == 3 and .settings.batches == $nb" "$T/ge/capacities.json"
t_check "epochs=3: the same model as batches=$nb" bash -c 'cmp -s "$1/ge/init.weights" "$1/gb/init.weights" && cmp -s "$1/ge/capacity_bn.weights" "$1/gb/capacity_bn.weights"' _ "$T"
t_check "epochs=3: not the model of batches=5" bash -c '! cmp -s "$1/ge/init.weights" "$1/g/init.weights"' _ "$T"

bad() { # NAME PATTERN ARGS...: fails with PATTERN and leaves no folder
    local name=$1 pat=$2; shift 2
    rm -rf "$T/bad"
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad"
    t_check "$name: no folder" test ! -e "$T/bad"
}
bad "missing --roadmap" "--roadmap is required" grow --data "$D" --seed 1
bad "unknown setting" "unknown key" "${G[@]}" --set stride=2
bad "slices out of range" "slices: 0 or 1" "${G[@]}" --set slices=2
bad "bn_affine out of range" "bn_affine: 0 or 1" "${G[@]}" --set bn_affine=2
bad "epochs out of range" "epochs: 0..1e4" "${G[@]}" --set epochs=-1
echo '{"format":"other"}' >"$T/x.json"
bad "not a roadmap" "is not a roadmap.json" grow --roadmap "$T/x.json" --data "$D" --seed 1
jq '.seed_step = 0' "$R" >"$T/rm/zero.json"
bad "a roadmap without a pruning step" "at least one passing pruning step" grow --roadmap "$T/rm/zero.json" --data "$D" --seed 1
t_done
