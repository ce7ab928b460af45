#!/usr/bin/env bash
# rtl stream on an installed catalog of small trained variants (the rtl
# fixtures: tests/integration/rtl/fixtures.sh) whose variant.json files get
# accuracies set by this test (fixture values, not measurements: the
# scheduler needs an accuracy per variant) before packing: real runs, one
# JSON line per result, budgets changed while it runs (control file and
# SIGHUP) honoured from the next request on, refusals, a clean stop on
# SIGTERM with the summary, errors.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
cd "$T" || exit 1

mkdir -p c && fx_rtl_data c >/dev/null || { t_fail "fixture data"; t_done; exit 0; }
acc=(0.62 0.55 0.48 0.35)
k=0
for id in $FX_RTL_VARIANTS; do
    fx_rtl_cfg "$id" >"c/$id.cfg"
    case $id in base) tech=base parent=- ;; rewrite-s2) tech=rewrite parent=base ;;
                svd-fc) tech=svd parent=base ;; pruned-small) tech=pruned parent=base ;; esac
    fx_rtl_variant c "$id" "$tech" "$parent" "c/$id.cfg" >/dev/null || { t_fail "train $id"; t_done; exit 0; }
    python3 - "c/variants/$id/variant.json" "${acc[$k]}" <<'PY'
import json, sys
p, a = sys.argv[1], float(sys.argv[2])
v = json.load(open(p))
v["accuracy"] = {"identity": {"split": "test", "images": 1000, "top1": a, "top5": min(1.0, a + 0.3)}}
json.dump(v, open(p, "w"))
PY
    k=$((k + 1))
done
"$CAT" keygen -p c/k.pub -s c/k.key -W >/dev/null
"$CAT" pack c/variants -o c/out --task identity=c/identity.names --version 1 --key c/k.key >pack.log 2>&1 ||
    cat pack.log
R=root
mkdir -p $R/keys && cp c/k.pub $R/keys/release.pub
rtl() { "$RTL" --root "$R" "$@"; }
rtl install c/out/catalog-rtlnet-1.tar.zst >/dev/null 2>&1
ls c/train/*.bmp | head -n 12 >list.txt

expect_ok "stream executes every task on every input" rtl stream rtlnet @list.txt c/images --threads 1
cp "$T/out" run.jsonl
t_check "one result line per input, answers from real runs, a summary" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
res = [l for l in lines if "input" in l]
assert len(res) == 17, len(res)
for r in res:
    assert r["task"] == "identity" and r["location"] == "device" and r["answer"] and 0 < r["prob"] <= 1, r
    assert r["variant"] == "base" and r["latency_ms"] > 0, r     # no budget: the most accurate
s = lines[-1]["summary"]
assert s["requests"] == 17 and s["served"] == 17 and s["refused"] == 0 and s["stopped"] is False, s
assert s["judged"] == 12 and s["measured_top1"] is not None, s   # train/NNNNNN_label.bmp names hold the truth
' run.jsonl
# Predictions say where they come from; the executor feeds each warm run's
# measured time back (rtl_sched_account): the roofline lower bound of the
# first requests becomes this device's measurement (issue 35 item 3).
t_check "predictions name their source; a warm run's measured time becomes the next prediction" python3 -c '
import json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"input")]
assert res[0]["predicted_from"] == "roofline lower bound", res[0]        # not profiled: the estimate
assert res[1]["predicted_from"] == "roofline lower bound", res[1]        # the first run was cold: not fed back
for prev, r in zip(res[1:], res[2:]):
    assert r["predicted_from"] == "measured on this device", r
    assert abs(r["predicted_ms"] - prev["latency_ms"]) < 1e-3, (prev, r)  # the last warm run, fed back
' run.jsonl
expect_ok "--no-feedback keeps the predictions" rtl stream rtlnet c/images --threads 1 --no-feedback
t_check "every prediction stays the roofline lower bound" python3 -c '
import json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"input")]
assert len(res) == 5 and all(r["predicted_from"] == "roofline lower bound" for r in res), res
' "$T/out"
# A latency budget that only the estimates (lower bounds) meet is not "met":
# every request is refused with that reason (no silent 10x overrun).
expect_ok "a latency budget met only by roofline estimates" rtl stream rtlnet c/images --threads 1 --latency-ms 100000
t_check "is refused, saying so" bash -c "[ \$(grep -c '\"refused\":\".*met only by roofline lower bounds' '$T/out') = 5 ]"
rtl profile rtlnet --runs 2 --threads 1 >/dev/null 2>&1
expect_ok "after rtl profile the same budget" rtl stream rtlnet c/images --threads 1 --latency-ms 100000
t_check "is met by this device's measurements" python3 -c '
import json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"input")]
assert len(res) == 5 and all(r["predicted_from"] == "measured on this device" and "refused" not in r for r in res), res
' "$T/out"
t_check "correct is judged from the file name" python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "input" in r:
        name = r["input"].rsplit("/", 1)[1]
        if name.startswith("img"): assert r["correct"] is None, r
        else: assert r["correct"] == (r["answer"] in name), r
' run.jsonl
expect_ok "the same answers as rtl run" rtl run rtlnet base c/train/000000_*.bmp --top 1 --threads 1
t_check "stream's answer for an image is rtl run's" bash -c "
a=\$(grep -o '\"input\":\"c/train/000000_[a-z]*.bmp\",\"task\":\"identity\",\"answer\":\"[a-z]*\"' run.jsonl | sed 's/.*answer\":\"//; s/\"//')
grep -q \"\$a\" '$T/out'"

expect_ok "dry run: decisions with predicted figures, nothing runs" rtl stream rtlnet c/images --dry-run
t_check "dry-run lines have no answer" python3 -c '
import json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"input")]
assert len(res) == 5 and all(r["answer"] is None and r["latency_ms"] == r["predicted_ms"] for r in res), res
' "$T/out"

# Budgets that change while it runs: a tighter latency budget after a few
# results holds from the next request on; SIGHUP re-reads the file; SIGTERM
# stops it with the summary.
put() { printf "$1" >ctl.tmp && touch -r ctl ctl.tmp 2>/dev/null; mv ctl.tmp ctl; }
printf 'latency_ms = 0   # none\n' >ctl
"$RTL" --root "$R" stream rtlnet @list.txt --repeat 1000 --fps 40 --threads 1 --control ctl >live.jsonl 2>live.err &
pid=$!
wait_lines() { for _ in $(seq 200); do [ "$(grep -c "$2" live.jsonl)" -ge "$1" ] && return 0; sleep 0.05; done; return 1; }
wait_lines 5 '"answer"'
printf 'latency_ms = 0.000001\n' >ctl.tmp && mv ctl.tmp ctl   # nothing is that fast
wait_lines 1 '"event":"budget"'
wait_lines 3 '"refused"'
put 'latency_ms = 1000000.\n'   # same size and mtime: only the signal tells
sleep 0.3
kill -HUP $pid
wait_lines 2 '"event":"budget"'
sleep 0.5
kill -TERM $pid
wait $pid
rc=$?
t_check "SIGTERM stops it cleanly (exit 0, a summary that says it stopped)" python3 -c '
import json, sys
assert int(sys.argv[2]) == 0, sys.argv[2]
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])["summary"]
assert s["stopped"] is True and s["budget_changes"] == 2, s
' live.jsonl "$rc"
t_check "a budget change holds from the next request on, and SIGHUP re-reads the file" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ev = [i for i, l in enumerate(lines) if l.get("event") == "budget"]
assert len(ev) == 2, ev
first, second = ev
assert all("answer" in l for l in lines[1:first] if "input" in l)
between = [l for l in lines[first + 1:second] if "input" in l]
assert between and all("refused" in l and "latency budget" in l["refused"] for l in between), between[:2]
after = [l for l in lines[second + 1:] if "input" in l]
assert after and all("answer" in l for l in after), after[:2]
assert lines[first]["after_request"] == sum(1 for l in lines[:first] if "input" in l)
' live.jsonl

printf 'energy_wh = 0.00000003\n' >ctl   # 0.108 mJ: a few requests at most
expect_ok "an energy budget that runs out" rtl stream rtlnet @list.txt --control ctl --threads 1
t_check "requests are refused once it is spent, never overrun" python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
res = [l for l in lines if "input" in l]
s = lines[-1]["summary"]
assert s["refused"] > 0 and "energy budget is spent" in [l for l in res if "refused" in l][0]["refused"], s
assert s["energy_mj"] <= 0.108 + 1e-9 and s["served"] + s["refused"] == len(res), s
' "$T/out"
# A paced stream decides at each request's due time (frame / fps): the run
# and --dry-run see the same trace, so under an energy budget that makes
# MCDNN move between variants they make the same decisions (170 requests,
# 100 per second, 60% of the energy the unconstrained choice takes).
rtl stream rtlnet @list.txt c/images --repeat 10 --dry-run >free.jsonl 2>/dev/null
python3 -c '
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])["summary"]
print("energy_wh = %.6g\nhorizon_s = 1.7" % (s["energy_mj"] * 0.6 / 3.6e6))' free.jsonl >pctl
rtl stream rtlnet @list.txt c/images --repeat 10 --fps 100 --control pctl --dry-run --threads 1 >pdry.jsonl 2>/dev/null
expect_ok "a paced stream under an energy budget" \
    rtl stream rtlnet @list.txt c/images --repeat 10 --fps 100 --control pctl --threads 1 --no-feedback
t_check "the run made the decisions of --dry-run, more than one variant among them" python3 -c '
import json, sys
def dec(f): return [(l["input"], l.get("variant"), l.get("refused") is not None) for l in map(json.loads, open(f)) if "input" in l]
a, b = dec(sys.argv[1]), dec(sys.argv[2])
assert a == b and len(a) == 170, (a, b)
assert len(set(v for _, v, r in a if not r)) > 1, a
' pdry.jsonl "$T/out"
printf 'memory_mb = 0.000001\n' >ctl
expect_ok "a memory budget nothing fits: per-request refusals" rtl stream rtlnet c/images --control ctl --threads 1
t_check "each request refused with the reason" bash -c "[ \$(grep -c '\"refused\":\".*memory budget' '$T/out') = 5 ]"
printf 'latency = fast\n' >ctl
expect_fail "a bad control file at the start is an error" "ctl:1: .*unknown key|ctl:1: .*not a number" \
    rtl stream rtlnet c/images --control ctl
expect_fail "a catalog that is not installed" "not installed" rtl stream nosuch c/images
expect_fail "an input that does not exist" "input nowhere.bmp" rtl stream rtlnet nowhere.bmp
expect_fail "a task the catalog lacks" "no task colour" rtl stream rtlnet c/images --task colour
expect_fail "an unknown policy" "unknown policy 'best'" rtl stream rtlnet c/images --policy best
expect_fail "dry run and execute together" "exclude each other" rtl stream rtlnet c/images --dry-run --execute
# A real multi-capacity (nested) variant: prune roadmap -> prune grow (the
# fixture of tests/integration/prune/nest.sh, as rtl_nested.sh), its
# capacities' measured top-1 in the manifest; the scheduler picks a
# capacity and stream switches the open model to it in place.
. "$TOP/tests/integration/prune/nest.sh"
mkdir -p nf && nest_fixture nf &&
    "$BIN/prune" grow --roadmap nf/rm/roadmap.json --data nf/data/tiny.data --seed 1 --set batches=5 --out g \
        >/dev/null 2>&1 || t_fail "nested fixture"
V=n/variants/nest
files=$(nest_variant_files g $V) || t_fail "nested fixture files"
# the capacities' top-1 set by the test, rising with the capacity (measured
# on 12 tiny images they tie, and the scheduler takes the cheapest of a tie)
jq '.technique_fields | .capacities |= [to_entries[] | .value.top1 = (0.5 + 0.1 * .key) | .value]' g/meta.json >tf.json
{
    printf '{"schema":1,"id":"nest","model":"tiny","technique":"nested","parent":null,"depends_on":[],\n'
    printf ' "description":"stream nested fixture","task":"identity",\n'
    printf ' "files":%s,\n' "$files"
    printf ' "accuracy":{"identity":{"split":"test","images":6,"top1":%s}},"technique_fields":%s,\n "cost":' \
        "$(jq '.capacities[-1].top1' tf.json)" "$(jq -c . tf.json)"
    "$BIN/trainer" info --json $V/variant.cfg
    printf '}\n'
} >$V/variant.json
"$CAT" pack n/variants -o n/out --task identity=nf/data/labels.txt --version 1 --key c/k.key >npack.log 2>&1 &&
    rtl install n/out/catalog-tiny-1.tar.zst >/dev/null 2>&1 || cat npack.log
nimg=$(ls nf/data/img/* | head -n 4)
rtl profile tiny --runs 2 --threads 1 >/dev/null 2>&1   # a latency budget is met by measured figures only
expect_ok "stream a nested variant: the most accurate capacity" rtl stream tiny $nimg --threads 1 --no-feedback
cp "$T/out" nest1.jsonl
best=$(jq '.capacities | length' tf.json)
t_check "every request ran at capacity $best (the most accurate)" python3 -c '
import json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"input")]
assert len(res) == 4 and all(r["capacity"] == int(sys.argv[2]) and r["answer"] for r in res), res
' nest1.jsonl "$best"
# 70% of the capacity's own predicted latency (a request without a page-in)
lim=$(python3 -c '
import json, sys
print(min(json.loads(l)["predicted_ms"] for l in open(sys.argv[1]) if l.startswith("{\"input") and "\"paged_in\":0" in l) * 0.7)
' nest1.jsonl)
printf 'latency_ms = %s\n' "$lim" >nctl
expect_ok "a latency budget below it: a smaller capacity, switched in place" rtl stream tiny $nimg --threads 1 --control nctl --no-feedback
t_check "smaller capacities within the budget, each run" python3 -c '
import json, sys
res = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{\"input")]
assert len(res) == 4, res
for r in res:
    assert r["capacity"] < int(sys.argv[2]) and r["answer"], r
    assert r["paged_in"] or r["predicted_ms"] <= float(sys.argv[3]) + 1e-9, r   # the budget (a page-in adds its load)
' "$T/out" "$best" "$lim"
# A real early-exit variant (prune early-exit, as tests/integration/rtl_exits.sh)
# whose alpha profile this test sets to two knobs: alpha 0.001 (exits early,
# cheap, top-1 0.5) and alpha 1e5 (the trunk or an exit of threshold 0,
# top-1 0.6). The scheduler picks the alpha, stream applies it
# (rtl_model_set_alpha) and reports the exit that answered: the same exit
# `rtl run --alpha` gives on the same image.
PT=$O/tests/tools/prune-testtool
"$BIN/dataset" generate --out e --name s --seed 3 --size 16 --train 2 --valid 1 --test 1 --no-contexts --threads 1 \
    >/dev/null 2>&1 || t_fail "early-exit fixture data"
{
    printf '[net]\nbatch=8\nwidth=16\nheight=16\nchannels=3\n\n'
    printf '[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nbatch_normalize=1\nactivation=relu\n\n'
    printf '[maxpool]\nsize=2\nstride=2\n\n[convolutional]\nfilters=32\nsize=3\npad=1\nactivation=relu\n\n'
    printf '[maxpool]\nsize=2\nstride=2\n\n[connected]\noutput=48\nactivation=linear\n\n[softmax]\n'
} >ebase.cfg
"$PT" weights ebase.cfg 5 ebase.weights &&
    "$BIN/prune" early-exit --cfg ebase.cfg --weights ebase.weights --data e/s/s.data --seed 4 --set batch=8 \
        --set stage1=8 --set finetune=3 --set width=2 --set layers=1 --set pool_to=2 --out ee >/dev/null 2>&1 ||
    t_fail "early-exit fixture"
V=e/variants/ee
mkdir -p $V && cp ee/variant.cfg ee/exits.cfg ee/exits.weights $V/ && cp ee/init.weights $V/variant.weights
python3 - ee/meta.json "$("$BIN/trainer" info --json ebase.cfg)" >$V/variant.json <<'PY'
import json, sys
tf = json.load(open(sys.argv[1]))["technique_fields"]
cost = json.loads(sys.argv[2])
tf["alpha_profile"] = [{"alpha": 0.001, "top1": 0.5, "expected_macs": cost["macs"] // 4},
                       {"alpha": 100000, "top1": 0.6, "expected_macs": cost["macs"]}]
files = [{"role": "cfg", "path": "variant.cfg"}, {"role": "weights", "path": "variant.weights"},
         {"role": "exits_cfg", "path": "exits.cfg"}, {"role": "exits_weights", "path": "exits.weights"}]
print(json.dumps({"schema": 1, "id": "ee", "model": "eenet", "technique": "early-exit", "parent": None,
                  "depends_on": [], "description": "stream early-exit fixture", "task": "identity", "files": files,
                  "accuracy": {"identity": {"split": "test", "images": 100, "top1": 0.6, "top5": 0.9}},
                  "technique_fields": tf, "cost": cost}))
PY
"$CAT" pack e/variants -o e/out --task identity=e/s/s.names --version 1 --key c/k.key >epack.log 2>&1 &&
    rtl install e/out/catalog-eenet-1.tar.zst >/dev/null 2>&1 && rtl profile eenet --runs 5 --threads 1 >/dev/null 2>&1 ||
    { cat epack.log; t_fail "early-exit catalog"; }
mapfile -t eimg < <(sed -n 's|^|e/s/|p' e/s/test.list | head -n 6)
expect_ok "stream an early-exit variant: the most accurate alpha" rtl stream eenet "${eimg[@]}" --threads 1 --no-feedback
cp "$T/out" ee1.jsonl
python3 -c '
import json, sys
ms = [json.loads(l)["predicted_ms"] for l in open(sys.argv[1]) if "\"paged_in\":0" in l]
print("latency_ms = %g" % (0.5 * max(ms or [0])))' ee1.jsonl >ectl
expect_ok "a latency budget of half its latency: the early alpha" rtl stream eenet "${eimg[@]}" --threads 1 --control ectl --no-feedback
cp "$T/out" ee2.jsonl
for a in 100000 0.001; do rtl run eenet ee "${eimg[@]}" --json --alpha $a --threads 1 >"run-$a.json" 2>/dev/null; done
t_check "each result at the decided alpha, with the exit rtl run --alpha gives" python3 -c '
import json, sys
def lines(f): return [json.loads(l) for l in open(f) if l.startswith("{\"input")]
def exits(f): return {r["image"]: r["exit"] for r in json.load(open(f))["results"]}
for f, alpha, ref in ((sys.argv[1], 100000, sys.argv[3]), (sys.argv[2], 0.001, sys.argv[4])):
    res, want = lines(f), exits(ref)
    assert len(res) == 6, (f, res)
    for r in res:
        assert r["alpha"] == alpha and r["answer"], (f, r)
        assert r["exit"] == want[r["input"]], (f, r, want)
assert any(r["exit"] == 0 for r in lines(sys.argv[2])), "alpha 0.001: the first exit answers"
' ee1.jsonl ee2.jsonl run-100000.json run-0.001.json
expect_ok "stream --help" rtl stream --help
t_done
