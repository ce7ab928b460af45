#!/usr/bin/env bash
# prune specialise: (n,p) context models (MCDNN 4.1.2) on a tiny generated
# set with two contexts. Checks the variant folders (technique specialised,
# n+1 outputs, context and cascade fields), that each is a whole network
# whose top-1 on its context stream under `trainer valid` is the one
# reported (so the stream's images were looked up right), the cascade's
# bookkeeping, same bytes for any thread count, and errors that write
# nothing.
. "$TOP/tests/lib.sh"
P=$BIN/prune
TOOL=$TESTD/tools/prune-testtool

. "$TOP/tests/integration/prune/attr.sh"
attr_fixture "$TOOL" --context-n 7 --context-p 0.6,0.9 || { t_done; exit 0; }
C=$T/s/contexts/contexts.list
A=(specialise --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$T/s/s.data" --contexts "$C"
   --seed 4 --set batches=80)

expect_ok "specialise --help" "$P" specialise --help
t_check "help names --contexts" grep -q -- "--contexts LIST" "$T/out"
expect_ok "specialise" "$P" "${A[@]}" --out "$T/o"
t_check "the table is printed" grep -Eq '^n7-p0.9 +7 +0.90' "$T/out"
for c in n7-p0.6 n7-p0.9; do
    t_check "$c: three files" test -s "$T/o/$c/variant.cfg" -a -s "$T/o/$c/init.weights" -a -s "$T/o/$c/meta.json"
done
t_check "specialise.json" test -s "$T/o/specialise.json"
M=$T/o/n7-p0.9/meta.json
t_check "technique specialised" grep -q '"technique":[[:space:]]*"specialised"' "$M"
t_check "context n and p" sh -c "tr -d ' \t\n' <'$M' | grep -q '\"n\":7,\"p\":0.9'"
t_check "cascade partner" grep -q '"partner":[[:space:]]*"base"' "$M"
t_check "only the classifier is retrained by default" grep -q '"from_layer":[[:space:]]*5' "$M"
t_check "n+1 outputs" sh -c "grep '^output=' '$T/o/n7-p0.9/variant.cfg' | tail -n 1 | grep -qx 'output=8'"
t_check "lower layers kept: output=16 layer still there" grep -qx 'output=16' "$T/o/n7-p0.9/variant.cfg"
num() { tr -d ' \t\n' <"$1" | sed -n "s/.*\"$2\":{[^}]*\"top1\":\([0-9.e+-]*\).*/\1/p"; }
for c in n7-p0.6 n7-p0.9; do
    "$BIN/trainer" valid --cfg "$T/o/$c/variant.cfg" --weights "$T/o/$c/init.weights" \
        --data "$T/s/contexts/$c/$c.data" --split test --json --threads 1 >"$T/v.json" 2>&1
    got=$(sed -n 's/.*"top1":[[:space:]]*\([0-9.e+-]*\).*/\1/p' "$T/v.json" | head -n 1)
    want=$(num "$T/o/$c/meta.json" specialised_on_stream)
    t_check "$c: trainer valid on the stream ($got) = reported ($want)" \
        awk -v a="$got" -v b="$want" 'BEGIN { exit !(a != "" && b != "" && a - b < 1e-6 && b - a < 1e-6) }'
done
# Bookkeeping: the stream holds the context's test images; the share sent to
# the generic model is in [0, 1] and the expected MACs follow from it.
imgs=$(tr -d ' \t\n' <"$M" | sed -n 's/.*"overall":{"images":\([0-9]*\).*/\1/p')
t_check "overall counts every stream image ($imgs)" test "$imgs" = "$(wc -l <"$T/s/contexts/n7-p0.9/test.list")"
t_check "expected MACs = specialised + share x fall-through" python3 - "$T/o/specialise.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for r in t["contexts"]:
    want = r["specialised_macs"] + r["sent_share"] * t["fallthrough_macs"]
    assert abs(r["expected_macs"] - want) < 1e-6 * want, r
    assert 0 <= r["sent_share"] <= 1
    assert r["in_context"]["images"] + 0 <= r["overall"]["images"]
assert t["fallthrough_macs"] < t["generic_macs"]  # the shared trunk is not paid twice
PY
t_check "the cascade's in-context score: the context's frames, at least the specialised model's own (gate 0)" \
    python3 - "$T/o" <<'PY'
import json, os, sys
for d in sorted(os.listdir(sys.argv[1])):
    f = os.path.join(sys.argv[1], d, "meta.json")
    if not os.path.exists(f): continue
    t = json.load(open(f))["technique_fields"]
    ci, ic, o = t["cascade_in_context"], t["in_context"], t["overall"]
    assert ci["images"] == ic["images"] and ic["correct"] <= ci["correct"] <= min(ci["images"], o["correct"]), t
PY
expect_ok "2 threads" "$P" "${A[@]}" --out "$T/o2" --threads 2
t_check "same bytes for any thread count" cmp -s "$T/o/n7-p0.6/init.weights" "$T/o2/n7-p0.6/init.weights"
expect_ok "a separate generic model" "$P" "${A[@]}" --generic-cfg "$T/base.cfg" \
    --generic-weights "$T/base.weights" --out "$T/o3"
t_check "a separate generic model costs all its MACs" python3 -c "
import json,sys; t=json.load(open('$T/o3/specialise.json')); sys.exit(t['fallthrough_macs'] != t['generic_macs'])"
t_check "the gate's sweep: gate 0 is the cascade reported, shares sent grow with the gate" python3 - "$T/o/specialise.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["contexts"]:
    g = r["gate_sweep"]
    assert g[0]["gate"] == 0 and g[0]["overall"]["top1"] == r["overall"]["top1"] and g[0]["sent_share"] == r["sent_share"], r
    assert all(a["sent_share"] <= b["sent_share"] for a, b in zip(g, g[1:])), g
    gi, ic, st = r["generic_in_context"], r["in_context"], r["generic_on_stream"]
    assert gi["images"] == ic["images"] and 0 <= gi["correct"] <= min(gi["images"], st["correct"]), r
PY
expect_ok "--set gate=0.9 and --parent" "$P" "${A[@]}" --set gate=0.9 --parent rw-x --out "$T/o5"
t_check "  ... the cascade's gate, partner and parent in meta.json; the cascade scored with the gate" python3 - "$T/o5" "$T/o/specialise.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/n7-p0.9/meta.json"))
c = m["technique_fields"]["cascade"]
assert c["gate"] == 0.9 and c["partner"] == "rw-x" and m["parent"] == "rw-x", m
plain = {r["id"]: r for r in json.load(open(sys.argv[2]))["contexts"]}
for r in json.load(open(sys.argv[1] + "/specialise.json"))["contexts"]:
    want = [e for e in plain[r["id"]]["gate_sweep"] if e["gate"] == 0.9][0]
    assert r["overall"]["top1"] == want["overall"]["top1"] and r["sent_share"] == want["sent_share"], (r, want)
PY
expect_ok "--set gate=valid" "$P" "${A[@]}" --set gate=valid --out "$T/o6"
t_check "  ... each context's gate: the sweep's best on its valid stream (ties: the lower), scored on test" \
    python3 - "$T/o6" "$T/o/specialise.json" <<'PY'
import json, sys
plain = {r["id"]: r for r in json.load(open(sys.argv[2]))["contexts"]}
for r in json.load(open(sys.argv[1] + "/specialise.json"))["contexts"]:
    g = r["gate_sweep"]
    best = max(g, key=lambda e: (e["valid_overall"]["correct"], -e["gate"]))
    assert r["gate"] == best["gate"], (r["gate"], best)
    want = [e for e in plain[r["id"]]["gate_sweep"] if e["gate"] == r["gate"]][0]
    assert r["overall"]["top1"] == want["overall"]["top1"] and r["sent_share"] == want["sent_share"], (r, want)
    c = json.load(open("%s/%s/meta.json" % (sys.argv[1], r["id"])))["technique_fields"]["cascade"]
    assert c["gate"] == r["gate"] and c["gate_chosen_on"]["split"] == "valid", c
    assert c["gate_chosen_on"]["overall"]["correct"] == best["valid_overall"]["correct"], c
PY
t_check "  ... the gate printed" grep -q "  gate 0" "$T/out"
expect_ok "--cut lower retrains more layers" "$P" "${A[@]}" --cut L3 --out "$T/o4"
t_check "from_layer 4" grep -q '"from_layer":[[:space:]]*4' "$T/o4/n7-p0.6/meta.json"

nothing_written() { [ ! -e "$T/bad" ]; }
bad() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad"
    t_check "$name: no output" nothing_written
}
bad "missing --contexts" "--contexts is required" specialise --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$T/s/s.data" --seed 1
bad "generic cfg without weights" "go together" "${A[@]}" --generic-cfg "$T/base.cfg"
bad "a gate out of range" "the gate is a probability in \\[0, 1\\), or valid" "${A[@]}" --set gate=1
bad "a bad --parent" "--parent 'Bad id' is not a variant id" "${A[@]}" --parent 'Bad id'
"$BIN/dataset" generate --out "$T/b" --name s --seed 9 --size 16 --train 3 --valid 1 --test 2 \
    --context-n 7 --context-p 0.6 --threads 1 >/dev/null 2>&1
bad "contexts of another set" "is not an image of the base set" "${A[@]/$C/$T/b/s/contexts/contexts.list}"
printf 'n7-p0.6 7 1.5 n7-p0.6/n7-p0.6.data\n' >"$T/s/contexts/bad.list"
bad "bad contexts line" "bad.list:1: expected" "${A[@]/$C/$T/s/contexts/bad.list}"
printf 'n7-p0.6 6 0.6 n7-p0.6/n7-p0.6.data\n' >"$T/s/contexts/bad2.list"
bad "n does not match the context" "expected 7 classes and \"other\" last" "${A[@]/$C/$T/s/contexts/bad2.list}"
bad "model of another class count" "has 4 classes but the model answers 48" "${A[@]/$T\/s\/s.data/$T/s/s-texture.data}"
t_done
