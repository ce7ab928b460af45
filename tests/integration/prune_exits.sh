#!/usr/bin/env bash
# prune early-exit: FlexDNN's exit search, insertion plan and lossless
# thresholds (and the BranchyNet-style baseline) on a tiny generated set.
# Checks the variant folder (trunk = the base, exits side files, meta.json
# with exits and the alpha profile), that the engine reloads the exits,
# same bytes for the same seed and any thread count, and errors that name
# the problem, exit non-zero and write nothing.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/prune/layers.sh"
P=$BIN/prune
TOOL=$TESTD/tools/prune-testtool

"$BIN/dataset" generate --out "$T" --name s --seed 3 --size 16 --train 2 --valid 1 --test 1 \
    --no-contexts --threads 1 >/dev/null 2>&1 || { t_fail "fixture data set"; t_done; exit 0; }
base48_cfg "$T/base.cfg" 32 0 batch=8 width=16 height=16 channels=3
"$TOOL" weights "$T/base.cfg" 5 "$T/base.weights" || { t_fail "fixture weights"; t_done; exit 0; }
A=(early-exit --cfg "$T/base.cfg" --weights "$T/base.weights" --data "$T/s/s.data" --seed 4
   --set batch=8 --set stage1=6 --set finetune=3 --set width=2 --set layers=1
   --set pool_to=2 --set predictions=1)

expect_ok "early-exit --help" "$P" early-exit --help
t_check "help names the Q_j plan" grep -q "Q_j = G_j / C_j" "$T/out"
expect_ok "early-exit" "$P" "${A[@]}" --out "$T/e"
for f in variant.cfg init.weights exits.cfg exits.weights meta.json predictions.json exits.predictions; do
    t_check "$f written" test -s "$T/e/$f"
done
t_check "exits.predictions: the alpha 1 answers, as many right as the alpha profile's top-1" python3 -c '
import json, sys
m = json.load(open(sys.argv[1] + "/meta.json"))
a1 = [p for p in m["technique_fields"]["alpha_profile"] if p["alpha"] == 1][0]
lines = open(sys.argv[1] + "/exits.predictions").read().split("\n")
rows = [l.split() for l in lines[1:] if l]
assert lines[0].split()[2:4] == ["test", str(len(rows))]
pj = json.load(open(sys.argv[1] + "/predictions.json"))["images"]
assert [int(r[0]) for r in rows] == [p["class"] for p in pj]
assert abs(sum(a == b for a, b in rows) / len(rows) - a1["top1"]) < 1e-9, (a1, len(rows))
' "$T/e"
t_check "meta.json technique early-exit" grep -q '"technique":[[:space:]]*"early-exit"' "$T/e/meta.json"
t_check "meta.json has the alpha profile" grep -q '"alpha_profile"' "$T/e/meta.json"
t_check "meta.json: accuracy with its interval and test size" grep -q '"top1_ci"' "$T/e/meta.json"
t_check "the trunk is the base (cfg)" cmp -s <(grep -v '^#' "$T/base.cfg" | grep -v '^$') \
    <(grep -v '^#' "$T/e/variant.cfg" | grep -v '^$')
t_check "the trunk is the base (weights)" cmp -s <(tail -c +21 "$T/base.weights") <(tail -c +21 "$T/e/init.weights")
t_check "exits.cfg holds [exit] sections" grep -q '^\[exit\]' "$T/e/exits.cfg"
t_check "the trunk stays free of [exit]" sh -c "! grep -q '^\[exit\]' '$T/e/variant.cfg'"
n_exits=$(grep -c '^\[exit\]' "$T/e/exits.cfg")
t_check "meta.json lists as many exits as exits.cfg ($n_exits)" \
    sh -c "[ \$(tr -d ' \t\n' <'$T/e/meta.json' | grep -o '\"lossless_threshold\"' | wc -l) -eq $n_exits ]"
# the engine reloads the exits: trainer info on each branch is not needed;
# the exits weights are the sum of the branches' files (checked by the
# loader, which refuses any other size), so a truncated copy is refused
expect_ok "same seed again, 2 threads" "$P" "${A[@]}" --out "$T/e2" --threads 2
t_check "same exits bytes for the same seed and any thread count" cmp -s "$T/e/exits.weights" "$T/e2/exits.weights"
t_check "same exits cfg" cmp -s "$T/e/exits.cfg" "$T/e2/exits.cfg"
expect_ok "anneal=0: constant branch learning rates" "$P" "${A[@]}" --set anneal=0 --out "$T/const"
t_check "annealed branches (the default) train to other weights than constant rates" \
    sh -c "! cmp -s '$T/e/exits.weights' '$T/const/exits.weights'"
t_check "meta.json says whether the branches were annealed" python3 -c '
import json, sys
assert json.load(open(sys.argv[1] + "/e/meta.json"))["technique_fields"]["anneal"] is True
assert json.load(open(sys.argv[1] + "/const/meta.json"))["technique_fields"]["anneal"] is False
' "$T"
# same_budget (the default): every searched exit trains as many batches as
# BranchyNet's heads, stage1 + finetune x (layers + 3) = 6 + 3 x 4 here
expect_ok "same_budget=0: exits as searched" "$P" "${A[@]}" --set same_budget=0 --out "$T/nobudget"
t_check "same_budget: every exit trained BranchyNet's 18 batches; without it fewer" python3 - "$T" <<'PY'
import json, sys
ex = lambda d: json.load(open(sys.argv[1] + "/" + d + "/meta.json"))["technique_fields"]
assert all(e["trained_batches"] == 18 for e in ex("e")["exits"]), ex("e")["exits"]
assert all(e["trained_batches"] < 18 for e in ex("nobudget")["exits"]), ex("nobudget")["exits"]
st = [s for s in ex("e")["search"] if s["stage"] == "same-budget"]
assert st and all(s["trained_batches"] == 18 for s in st), st
assert not [s for s in ex("nobudget")["search"] if s["stage"] == "same-budget"]
PY
t_check "search records each branch's valid top-1 and confidence quantiles" python3 - "$T/e/meta.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["technique_fields"]["search"]:
    q = s["valid_confidence_quantiles"]
    assert len(q) == 5 and q == sorted(q) and 0 < q[0] and q[-1] <= 1, s
    assert 0 <= s["valid_top1"] <= 1 and s["trained_batches"] > 0, s
PY
t_check "predictions.json: each image's exit and answer at every alpha, as the alpha profile counts them" \
    python3 - "$T/e" <<'PY'
import json, sys
tf = json.load(open(sys.argv[1] + "/meta.json"))["technique_fields"]
pj = json.load(open(sys.argv[1] + "/predictions.json"))
prof = tf["alpha_profile"]
assert pj["alphas"] == [p["alpha"] for p in prof], pj["alphas"]
im = pj["images"]
for a, p in enumerate(prof):
    right = sum(r["pred_by_alpha"][a] == r["class"] for r in im)
    assert right == round(p["top1"] * len(im)), (p["alpha"], right)
    for j, rate in enumerate(p["exit_rates"]):
        assert sum(r["exit_by_alpha"][a] == j for r in im) == round(rate * len(im)), (p["alpha"], j)
a1 = pj["alphas"].index(1)
assert all(r["exit_by_alpha"][a1] == r["exit"] for r in im)
PY
expect_ok "BranchyNet baseline" "$P" "${A[@]}" --set branchynet=1 --out "$T/b"
t_check "BranchyNet: one head per max-pool stage" sh -c "[ \$(grep -c '^\[exit\]' '$T/b/exits.cfg') -ge 1 ]"
t_check "BranchyNet: exits only after max-pools (layers 1, 3)" \
    sh -c "grep '^at=' '$T/b/exits.cfg' | grep -qvx 'at=[13]' && exit 1 || exit 0"
t_check "BranchyNet: method named" grep -q '"method":[[:space:]]*"branchynet"' "$T/b/meta.json"

# every threshold at or above the floor (alpha always applies), exits within the cap
t_check "thresholds at or above min_threshold (0.5)" python3 - "$T/e/meta.json" <<'PY'
import json, sys
tf = json.load(open(sys.argv[1]))["technique_fields"]
assert all(e["threshold"] >= 0.5 - 1e-6 for e in tf["exits"]), tf["exits"]
assert tf["min_threshold"] == 0.5 and tf["threshold_z"] == 1
PY
expect_ok "exit_cap=0.01" "$P" "${A[@]}" --set exit_cap=0.01 --out "$T/cap"
t_check "exits within 1% of the base's MACs" python3 - "$T/cap/meta.json" <<'PY'
import json, sys
tf = json.load(open(sys.argv[1]))["technique_fields"]
assert tf["exits_macs_fraction"] <= 0.01 + 1e-12, tf["exits_macs_fraction"]
PY

# FlexDNN's trunk: collective-importance pruning, then the exits
expect_ok "trunk_prune=1" "$P" "${A[@]}" --set trunk_prune=1 --set trunk_macs=0.6 --set trunk_retrain=3 \
    --set sbs_images=16 --set trunk_compare_l1=1 --out "$T/p"
t_check "pruned trunk: meta.json records SBS, its cost and the L1 comparison" python3 - "$T/p/meta.json" <<'PY'
import json, sys
tf = json.load(open(sys.argv[1]))["technique_fields"]
t = tf["pruned_trunk"]
assert t["method"] == "sbs" and t["counts_from"] == "trunk_macs", t
assert t["macs"] <= 0.6 * t["base_macs"], (t["macs"], t["base_macs"])
assert t["cost"]["fine_tunes"] > 0 and "approximation" in t["cost"] and t["cost"]["exact_fine_tunes"] > 0
assert "l1_same_counts" in t and t["test"]["images"] > 0
m = json.load(open(sys.argv[1]))["measured"]["pruned_trunk"]
assert m["sbs_ranking_cpu_seconds"] >= 0 and m["retrain_cpu_seconds"] >= 0
assert "seconds" not in json.dumps(tf), "seconds belong in measured, not in technique_fields"
for l in t["layers"]:
    assert sorted(l["sbs_order"]) == list(range(l["filters"])), l
    assert sorted(l["l1_order"]) == list(range(l["filters"])), l
    assert l["sbs_floor"] <= l["kept"] <= l["filters"]
assert tf["base"]["macs"] == t["base_macs"] and tf["trunk_alone"]["macs"] == t["macs"]
assert all(abs(p["macs_saving"] - (1 - p["expected_macs"] / t["base_macs"])) < 1e-9 for p in tf["alpha_profile"])
PY
t_check "pruned trunk: the exits within exit_cap of the trunk's MACs (not the base's)" python3 - "$T/p/meta.json" <<'PY'
import json, sys
tf = json.load(open(sys.argv[1]))["technique_fields"]
t = tf["trunk_alone"]["macs"]
assert tf["exits_macs"] <= tf["exit_cap"] * t + 1e-9, (tf["exits_macs"], t)
assert abs(tf["exits_macs_fraction_of_trunk"] - tf["exits_macs"] / t) < 1e-12
PY
t_check "alpha profile: paired test against the trunk, exits' cost and saving, chosen alpha on valid" \
    python3 - "$T/p/meta.json" <<'PY'
import json, sys
tf = json.load(open(sys.argv[1]))["technique_fields"]
t = tf["trunk_alone"]
for name, prof, key in (("test", tf["alpha_profile"], "test_images"), ("valid", tf["alpha_profile_valid"], "valid_images")):
    assert [p["alpha"] for p in prof][:9] == [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], name
    for p in prof:
        n, vs = p[key], p["vs_trunk"]
        if name == "test":  # the exit model's top-1 minus the trunk's is the discordant pairs' difference
            d = round(p["top1"] * n) - round(t["top1"] * n)
            assert d == vs["exit_model_only_right"] - vs["trunk_only_right"], (p, t)
        assert 0 <= vs["mcnemar_p"] <= 1
        assert vs["clearly_worse"] == (vs["trunk_only_right"] > vs["exit_model_only_right"] and vs["mcnemar_p"] < 0.05)
        assert abs(p["cumulative_exit_rate"] - sum(p["exit_rates"][:-1])) < 1e-9
        assert abs(p["expected_macs"] - (t["macs"] - p["trunk_macs_skipped"] + p["exits_macs_spent"])) < 1e-6 * t["macs"]
        assert abs(p["macs_saving_vs_trunk"] - (1 - p["expected_macs"] / t["macs"])) < 1e-9
c = tf["chosen_alpha"]["alpha"]
v = {p["alpha"]: p for p in tf["alpha_profile_valid"]}
assert c <= 1 and (v[1.0]["vs_trunk"]["clearly_worse"] or
                   all(not p["vs_trunk"]["clearly_worse"] for a, p in v.items() if c <= a <= 1)), (c, v)
PY
t_check "pruned trunk: variant.cfg has fewer filters, no [exit]" sh -c \
    "[ \$(grep -c '^filters=' '$T/p/variant.cfg') -eq 2 ] && ! grep -q '^\[exit\]' '$T/p/variant.cfg' && \
     ! cmp -s '$T/base.cfg' '$T/p/variant.cfg'"
expect_ok "trunk_prune=1 again, 2 threads" "$P" "${A[@]}" --set trunk_prune=1 --set trunk_macs=0.6 \
    --set trunk_retrain=3 --set sbs_images=16 --set trunk_compare_l1=1 --out "$T/p2" --threads 2
t_check "pruned trunk: same bytes for any thread count" sh -c \
    "cmp -s '$T/p/init.weights' '$T/p2/init.weights' && cmp -s '$T/p/variant.cfg' '$T/p2/variant.cfg' && \
     cmp -s '$T/p/exits.weights' '$T/p2/exits.weights'"

# the catalog's view: an early-exit variant costs its expected MACs at alpha 1
cp "$T/p/init.weights" "$T/p/variant.weights"
expect_ok "trainer valid on the pruned trunk" sh -c "'$BIN/trainer' valid --cfg '$T/p/variant.cfg' \
    --weights '$T/p/variant.weights' --data '$T/s/s.data' --split test --threads 1 --json >'$T/p/eval.json'"
expect_ok "catalog profile" "$BIN/catalog" profile --cfg "$T/p/variant.cfg" --weights "$T/p/variant.weights" \
    --runs 0 --threads 1 --out "$T/p/profile.json"
expect_ok "catalog describe" "$BIN/catalog" describe "$T/p" --id ee --model tiny --task identity \
    --eval "$T/p/eval.json" --profile "$T/p/profile.json" --meta "$T/p/meta.json"
t_check "variant.json: cost.expected_macs is alpha 1's, macs the trunk's" python3 - "$T/p" <<'PY'
import json, sys
v = json.load(open(sys.argv[1] + "/variant.json"))
tf = json.load(open(sys.argv[1] + "/meta.json"))["technique_fields"]
a1 = [p for p in tf["alpha_profile"] if p["alpha"] == 1][0]
assert v["cost"]["expected_macs"] == round(a1["expected_macs"]), (v["cost"], a1)
assert v["cost"]["macs"] == tf["pruned_trunk"]["macs"], v["cost"]["macs"]
import os
assert v["cost"]["exits_weight_bytes"] == os.path.getsize(sys.argv[1] + "/exits.weights") - 20
PY

# errors: what, where, what to do; exit non-zero; nothing written
nothing_written() { [ ! -e "$T/bad" ]; }
bad() { # NAME PATTERN ARGS...
    local name=$1 pat=$2; shift 2
    expect_fail "$name" "$pat" "$P" "$@" --out "$T/bad"
    t_check "$name: no output" nothing_written
}
bad "missing --data" "--data is required" early-exit --cfg "$T/base.cfg" --weights "$T/base.weights" --seed 1
bad "bad --set key" "unknown key or value out of range" "${A[@]}" --set speed=2
bad "bad --set value" "not a number" "${A[@]}" --set kd=much
bad "anneal is 0 or 1" "anneal 0|1" "${A[@]}" --set anneal=2
bad "same_budget is 0 or 1" "same_budget 0|1" "${A[@]}" --set same_budget=2
bad "confidence names a measure" "give confidence=entropy" "${A[@]}" --set confidence=softmax
sed 's/^valid *=.*//' "$T/s/s.data" >"$T/s/novalid.data"
bad "no valid split" "no valid split" "${A[@]/$T\/s\/s.data/$T/s/novalid.data}"
t_done
