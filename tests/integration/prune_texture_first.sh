#!/usr/bin/env bash
# recipes/alexnet/studies/texture_first.sh (issue 17 item 1's texture-first trunk) on the tiny
# generated set: stage 1 trained with --train, three multi-task stages on
# the attributes with texture first (4 groups of 4) and two with the identity
# added (5 groups of 48, the first from the plain model), the heads at fc@2
# and the table against the independent models, the identity head; the
# errors for a missing texture model and an ambiguous tasks file.
. "$TOP/tests/lib.sh"
cd "$TOP" || exit 1
TOOL=$TESTD/tools/prune-testtool
. "$TOP/tests/integration/prune/attr.sh"
attr_fixture "$TOOL" --no-contexts || { t_done; exit 0; }
sed -i 's/^flip=1$/flip=1\nmax_batches=4\nlearning_rate=0.05/' "$T/base.cfg"
export CFG=$T/base.cfg THREADS=1 NICE=0 STAGES="2:0.02:1,1,1,1 3:0.03:1,2,0.5,1 2:0.015:1,1,1,1,1 2:0.01:1,1,1,1,2"
export HEAD_SET="batches=4 aug_passes=1"

expect_fail "no texture model without --train" "no .*/ind/texture/texture.weights .run with --train" \
    recipes/alexnet/studies/texture_first.sh "$T/o" "$T/ind" "$T/s"
expect_ok "the curriculum, with the independent models trained" recipes/alexnet/studies/texture_first.sh --train "$T/o" "$T/ind" "$T/s"
cp "$T/out" "$T/table"
t_check "stage 1: the independent texture model" test -s "$T/ind/texture/texture.weights"
t_check "the tasks: texture first, then the other attributes" \
    test "$(awk '{print $1}' "$T/o/tasks-4.tasks" | tr '\n' ' ')" = "texture shape colour size "
for k in 1 2 3 4; do
    t_check "stage $((k + 1)) written (OUT/s$k)" test -s "$T/o/s$k/variant.tasks.weights"
done
t_check "stages 2-3: 4 groups of 4 (texture's class count first)" \
    sh -c "grep '^output=' '$T/o/s2/variant.tasks.cfg' | tail -n 1 | grep -qx 'output=16' && grep -qx 'groups=4' '$T/o/s2/variant.tasks.cfg'"
t_check "stage 3 ran 3 batches" sh -c "test \$(wc -l <'$T/o/s2/variant.metrics.jsonl') = 3"
t_check "the identity tasks: the same, then the identity" \
    test "$(awk '{print $1}' "$T/o/tasks-5.tasks" | tr '\n' ' ')" = "texture shape colour size identity "
t_check "stages 4-5: 5 groups of 48" \
    sh -c "grep '^output=' '$T/o/s4/variant.tasks.cfg' | tail -n 1 | grep -qx 'output=240' && grep -qx 'groups=5' '$T/o/s4/variant.tasks.cfg'"
t_check "stage 5 trained on from stage 4" sh -c "! cmp -s '$T/o/s3/variant.tasks.weights' '$T/o/s4/variant.tasks.weights'"
t_check "the trunk is stage 5's plain texture model" cmp -s "$T/o/s4/variant.weights" "$T/o/variant.weights"
t_check "the data set's folder is left alone" sh -c "! ls '$T/s/' | grep -q texture-first"
t_check "the identity head is scored" grep -q '^identity head on the same trunk: [0-9.]*% \[' "$T/table"
t_check "heads at fc@2 for every attribute" python3 - "$T/o/heads/retarget.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["cut"] == "fc@2" and [t["task"] for t in r["tasks"]] == ["shape", "colour", "size", "texture"], r
PY
t_check "the table: four rows and the verdict" \
    sh -c "test \$(grep -c '^| \(shape\|colour\|size\|texture\) | fc@2 |' '$T/table') = 4 && grep -q '^issue 17 item 1' '$T/table'"
printf 'identity s.data\nsize s-size.data\n' >"$T/s/other.tasks"
expect_fail "two tasks files" "several .tasks files" recipes/alexnet/studies/texture_first.sh "$T/o2" "$T/ind" "$T/s"
t_done
