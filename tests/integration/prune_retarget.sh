#!/usr/bin/env bash
# prune retarget: task heads on a frozen shared trunk (MCDNN 4.1.3), on a
# tiny generated set with the default set's four attribute tasks. Checks the
# variant folders, that each is a whole network whose test top-1 under
# `trainer valid` is the one retarget.json reports, the head costs, the
# frozen trunk, same bytes for the same seed and any thread count, and
# errors that name the problem, exit non-zero and write nothing.
. "$TOP/tests/lib.sh"
P=$BIN/prune
TOOL=$TESTD/tools/prune-testtool

. "$TOP/tests/integration/prune/attr.sh"
attr_fixture "$TOOL" --no-contexts || { t_done; exit 0; }
S=$T/s/s.tasks
A=(retarget --cfg "$T/base.cfg" --weights "$T/base.weights" --tasks "$S" --seed 4
   --set batches=60 --set aug_passes=1)

expect_ok "retarget --help" "$P" retarget --help
t_check "help names --cut" grep -q -- "--cut SEL" "$T/out"
expect_ok "retarget at conv@2" "$P" "${A[@]}" --cut conv@2 --head maxpool,size=2,stride=2 --out "$T/r"
for k in shape colour size texture; do
    t_check "$k: three files" test -s "$T/r/$k/variant.cfg" -a -s "$T/r/$k/init.weights" -a -s "$T/r/$k/meta.json"
done
t_check "no identity head" test ! -e "$T/r/identity"
t_check "retarget.json written" test -s "$T/r/retarget.json"
t_check "meta.json technique head" grep -q '"technique":[[:space:]]*"head"' "$T/r/size/meta.json"
t_check "meta.json names the trunk" grep -q '"trunk":[[:space:]]*"base"' "$T/r/size/meta.json"
t_check "the head starts above the cut" grep -q '"from_layer":[[:space:]]*3' "$T/r/size/meta.json"
# The trunk is the base's: its sections are the base's first sections.
sec() { awk '/^\[/{n++} n>=1 && n<=3' "$1" | grep -v '^#' | grep -v '^$'; }
t_check "the trunk's sections are the base's" cmp -s <(sec "$T/base.cfg") <(sec "$T/r/size/variant.cfg")
t_check "the classifier has the task's classes" \
    sh -c "grep '^output=' '$T/r/size/variant.cfg' | tail -n 1 | grep -qx 'output=3'"
t_check "texture's classifier: 4 classes" \
    sh -c "grep '^output=' '$T/r/texture/variant.cfg' | tail -n 1 | grep -qx 'output=4'"
# Each variant is a whole network: trainer valid agrees with the table.
json_num() { sed -n "s/.*\"$2\":[[:space:]]*\([0-9.e+-]*\).*/\1/p" "$1" | head -n 1; }
for k in size texture; do
    "$BIN/trainer" valid --cfg "$T/r/$k/variant.cfg" --weights "$T/r/$k/init.weights" \
        --data "$T/s/s-$k.data" --split test --json --threads 1 >"$T/v-$k.json" 2>"$T/v-$k.err"
    want=$(tr -d ' \t\n' <"$T/r/$k/meta.json" | sed -n 's/.*"heldout":{[^}]*"top1":\([0-9.e+-]*\).*/\1/p')
    got=$(json_num "$T/v-$k.json" top1)
    t_check "$k: trainer valid top-1 ($got) equals the head's ($want)" \
        awk -v a="$got" -v b="$want" 'BEGIN { exit !(a != "" && b != "" && a - b < 1e-6 && b - a < 1e-6) }'
done
# The trunk's weights are the base's: the first conv's floats are the same.
t_check "frozen trunk: the first layer's weights are the base's" \
    cmp -s <(head -c $((20 + 4 * (8 + 8 * 3 + 8 * 27))) "$T/base.weights" | tail -c +21) \
           <(head -c $((20 + 4 * (8 + 8 * 3 + 8 * 27))) "$T/r/size/init.weights" | tail -c +21)
# Head costs: the maxpool + classifier on 8x4x4 (2x2 after the pool).
t_check "head parameters counted (size: 128*3+3)" grep -q '"head_params":[[:space:]]*387' "$T/r/retarget.json"
t_check "top-1 has its interval" grep -q '"top1_lo"' "$T/r/retarget.json"
expect_ok "same seed again, 2 threads" "$P" "${A[@]}" --cut conv@2 --head maxpool,size=2,stride=2 \
    --out "$T/r2" --threads 2
t_check "same bytes for the same seed and any thread count" cmp -s "$T/r/texture/init.weights" "$T/r2/texture/init.weights"
expect_ok "another seed" "$P" "${A[@]}" --seed 5 --cut conv@2 --head maxpool,size=2,stride=2 --out "$T/r3"
t_check "another seed, other head weights" sh -c "! cmp -s '$T/r/texture/init.weights' '$T/r3/texture/init.weights'"
expect_ok "linear head on fc@1" "$P" "${A[@]}" --cut fc@1 --out "$T/r4"
t_check "linear head: 16*4+4 parameters for texture" grep -q '"head_params":[[:space:]]*68' "$T/r4/retarget.json"

# errors: what, where, what to do; exit non-zero; nothing written
nothing_written() { [ ! -e "$T/bad" ]; }
bad() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad"
    t_check "$name: no output" nothing_written
}
bad "cut at the output" "the last layer" "${A[@]}" --cut L6
bad "unknown selector" "--cut: conv#9" "${A[@]}" --cut conv#9
bad "missing --cut" "--cut is required" retarget --cfg "$T/base.cfg" --weights "$T/base.weights" --tasks "$S" --seed 1
bad "bad --set key" "unknown key; use one of batch" "${A[@]}" --cut conv@2 --set speed=2
bad "softmax in the head" "classifier and softmax are added" "${A[@]}" --cut conv@2 --head softmax
bad "head that does not build" "cannot be built on the trunk's 8x8x8 output" "${A[@]}" --cut conv@2 \
    --head convolutional,filters=4,size=99,stride=1
printf 'identity s.data\n' >"$T/s/one.tasks"
bad "one task only" "at least one more task" "${A[@]/$S/$T/s/one.tasks}" --cut conv@2
sed 's/^train *=.*/train = valid.list/' "$T/s/s-size.data" >"$T/s/odd.data"
printf 'identity s.data\nsize odd.data\n' >"$T/s/odd.tasks"
bad "tasks over other images" "every task must list the same images" "${A[@]/$S/$T/s/odd.tasks}" --cut conv@2
printf 'identity s.data\nsize\n' >"$T/s/broken.tasks"
bad "broken tasks file" "broken.tasks:2: expected" "${A[@]/$S/$T/s/broken.tasks}" --cut conv@2
t_done
