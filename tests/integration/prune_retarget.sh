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
expect_ok "--parent: the trunk is another variant's" "$P" "${A[@]}" --cut fc@1 --parent tf-1 --out "$T/r5"
t_check "  ... its id is every head's parent and trunk, the same head bytes" python3 - "$T/r5" "$T/r4" <<'PY'
import json, sys
for t in ("shape", "colour", "size", "texture"):
    m = json.load(open("%s/%s/meta.json" % (sys.argv[1], t)))
    assert m["parent"] == "tf-1" and m["technique_fields"]["head"]["trunk"] == "tf-1", m
    assert open("%s/%s/init.weights" % (sys.argv[1], t), "rb").read() == open("%s/%s/init.weights" % (sys.argv[2], t), "rb").read()
assert json.load(open(sys.argv[1] + "/retarget.json"))["trunk"] == "tf-1"
PY
# --trunk-task T: the trunk's own classifier answers T (a curriculum
# trained for it), so T gets no head and every other task one, the first
# (the identity) included, in one call on one feature cache.
t_check "help names --trunk-task" sh -c "'$P' retarget --help | grep -q -- '--trunk-task T'"
expect_ok "--trunk-task texture" "$P" "${A[@]}" --cut fc@1 --parent tf-1 --trunk-task texture --out "$T/r6"
t_check "  ... no texture head" test ! -e "$T/r6/texture"
t_check "  ... an identity head: 48 classes" \
    sh -c "grep '^output=' '$T/r6/identity/variant.cfg' | tail -n 1 | grep -qx 'output=48'"
t_check "  ... the other heads: the same bytes as without it, retarget.json says so" python3 - "$T/r6" "$T/r5" <<'PY'
import json, sys
for t in ("shape", "colour", "size"):
    a, b = ("%s/%s/init.weights" % (d, t) for d in sys.argv[1:3])
    assert open(a, "rb").read() == open(b, "rb").read(), t
d = json.load(open(sys.argv[1] + "/retarget.json"))
assert d["trunk_task"] == "texture" and d["trunk"] == "tf-1", d
assert [r["task"] for r in d["tasks"]] == ["identity", "shape", "colour", "size"], d["tasks"]
m = json.load(open(sys.argv[1] + "/identity/meta.json"))
assert m["parent"] == "tf-1" and m["technique_fields"]["task"] == "identity", m
assert json.load(open(sys.argv[2] + "/retarget.json"))["trunk_task"] == "identity"
PY
expect_ok "--trunk-task identity: the default" "$P" "${A[@]}" --cut fc@1 --parent tf-1 --trunk-task identity --out "$T/r7"
t_check "  ... the same bytes as without it" diff -r "$T/r5" "$T/r7"
expect_ok "--trunk-task texture, a sweep" "$P" "${A[@]}" --cuts "conv@2:maxpool,size=2,stride=2 fc@1" \
    --set budget=0.5 --trunk-task texture --out "$T/r8"
t_check "  ... every task but texture keeps a head" python3 - "$T/r8" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/retarget.json"))
assert sorted(r["task"] for r in d["tasks"]) == ["colour", "identity", "shape", "size"], d["tasks"]
assert sorted(r["task"] for r in d["sweep"] if r["kept"]) == ["colour", "identity", "shape", "size"], d["sweep"]
assert len(d["sweep"]) == 8 and all(r["task"] != "texture" for r in d["sweep"]), d["sweep"]
PY

# A sweep of cuts (--cuts): every task gets a head at every cut and keeps
# the one most accurate on the valid split among those within the budget
# (all of them when none is); the table lists every head.
CUTS="conv@1:maxpool,size=4,stride=4 conv@2:maxpool,size=2,stride=2 conv@2"
expect_ok "sweep of three heads at two cuts" "$P" "${A[@]}" --cuts "$CUTS" --set budget=0.5 --out "$T/s1"
cp "$T/out" "$T/s1.out"
t_check "the sweep says what each task keeps" grep -q "^texture: keeps conv@" "$T/s1.out"
sweep_ok() { # DIR BUDGET: the table's rows and kept heads are consistent
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1] + "/retarget.json")); budget = float(sys.argv[2])
rows = d["sweep"]
assert d["budget"] == budget and d["chosen_on"] == "valid", d
assert len(rows) == 12, len(rows)
for task in ("shape", "colour", "size", "texture"):
    r = [x for x in rows if x["task"] == task]
    assert [x["point"] for x in r] == [0, 1, 2], r
    for x in r:
        assert x["within_budget"] == (x["macs_fraction"] <= budget and x["params_fraction"] <= budget), x
        assert 0 <= x["valid_top1_lo"] <= x["valid_top1"] <= x["valid_top1_hi"] <= 1, x
    pool = [x for x in r if x["within_budget"]] or r
    best = max(pool, key=lambda x: (x["valid_top1"], -x["point"]))
    kept = [x for x in r if x["kept"]]
    assert kept == [best], (task, kept, best)
    meta = json.load(open("%s/%s/meta.json" % (sys.argv[1], task)))
    f = meta["technique_fields"]
    assert f["head"]["from_layer"] == best["cut_layer"] + 1, (f, best)
    assert f["heldout"]["top1"] == best["top1"], (f, best)
    assert f["chosen_on"]["top1"] == best["valid_top1"], (f, best)
    assert f["head_with"] == best["head"], (f, best)
    t = [x for x in d["tasks"] if x["task"] == task]
    assert len(t) == 1 and t[0]["cut"] == best["cut"] and t[0]["top1"] == best["top1"], t
PY
}
t_check "sweep: rows, valid scores, each task's kept head (budget 0.5)" sweep_ok "$T/s1" 0.5
expect_ok "the same sweep, budget 0.001 (every head over it)" "$P" "${A[@]}" --cuts "$CUTS" \
    --set budget=0.001 --out "$T/s2" --threads 2
t_check "over budget: the most accurate of all is kept" sweep_ok "$T/s2" 0.001
t_check "over budget: said so" grep -q "over budget" "$T/out"
expect_ok "the sweep at 2 threads" "$P" "${A[@]}" --cuts "$CUTS" --set budget=0.5 --out "$T/s3" --threads 2
t_check "sweep: same bytes for any thread count" cmp -s "$T/s1/retarget.json" "$T/s3/retarget.json"
for k in shape texture; do
    t_check "sweep: $k's weights the same for any thread count" cmp -s "$T/s1/$k/init.weights" "$T/s3/$k/init.weights"
done
"$BIN/trainer" valid --cfg "$T/s1/size/variant.cfg" --weights "$T/s1/size/init.weights" \
    --data "$T/s/s-size.data" --split test --json --threads 1 >"$T/sv.json" 2>"$T/sv.err"
want=$(python3 -c "import json; print(json.load(open('$T/s1/size/meta.json'))['technique_fields']['heldout']['top1'])")
got=$(json_num "$T/sv.json" top1)
t_check "sweep: size's kept head is a whole network (trainer valid $got = $want)" \
    awk -v a="$got" -v b="$want" 'BEGIN { exit !(a != "" && b != "" && a - b < 1e-6 && b - a < 1e-6) }'

# errors: what, where, what to do; exit non-zero; nothing written
nothing_written() { [ ! -e "$T/bad" ]; }
bad() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad"
    t_check "$name: no output" nothing_written
}
bad "cut at the output" "the last layer" "${A[@]}" --cut L6
bad "--trunk-task not in the tasks file" \
    "--trunk-task 'pattern': .*s.tasks has no such task; its tasks: identity, shape, colour, size, texture" \
    "${A[@]}" --cut fc@1 --trunk-task pattern
bad "a bad --parent" "--parent 'Bad id' is not a variant id" "${A[@]}" --cut fc@1 --parent 'Bad id'
bad "unknown selector" "--cut: conv#9" "${A[@]}" --cut conv#9
bad "missing --cut" "give --cut SEL or --cuts LIST" retarget --cfg "$T/base.cfg" --weights "$T/base.weights" --tasks "$S" --seed 1
bad "--cut and --cuts" "give --cut SEL or --cuts LIST" "${A[@]}" --cut conv@2 --cuts conv@1
bad "unknown selector in --cuts" "--cuts: conv#9" "${A[@]}" --cuts "conv@1 conv#9"
bad "empty --cuts" "--cuts: no cut given" "${A[@]}" --cuts " "
bad "sweep head that does not build" "task 'shape' at conv@2" "${A[@]}" \
    --cuts "conv@1 conv@2:convolutional,filters=4,size=99,stride=1"
bad "bad budget" "the budget is a fraction of the base" "${A[@]}" --cuts conv@1 --set budget=2
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
