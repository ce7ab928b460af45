#!/usr/bin/env bash
# The context profiler on the device (issue 17, MCDNN 4.1.2): `rtl context`
# reports whether the answers of a task are (n,p)-dominated and by which
# classes, from images and from the JSON of rtl run, rtl run --task and rtl
# stream (each report equal to a count of the window made here); its
# request goes to the build side (dataset contexts --classes, prune
# specialise, catalog pack --addon-of), the add-on is installed, and `rtl
# run --context` and `rtl stream --context` then answer through its cascade
# exactly while its classes hold its p of the window (a simulation here of
# the window, the hysteresis and the warm-up, over the answers of the base
# and of the cascade run alone). Errors: bad lists, labels of another task,
# broken JSON, no input, a specialised VARIANT, an add-on of another version.
. "$TOP/tests/lib.sh"
cd "$T" || exit 1
export SOURCE_DATE_EPOCH=1700000000
"$BIN/dataset" generate --out "$T" --name s --seed 3 --size 16 --train 3 --valid 1 --test 2 \
    --no-contexts --threads 1 >/dev/null 2>&1 || { t_fail "fixture data set"; t_done; exit 0; }
. "$TOP/tests/integration/rtl/tasks.sh"
tasks_base_cfg base.cfg
V=c/variants
mkdir -p $V/base
cp base.cfg $V/base/variant.cfg
"$BIN/trainer" train --cfg base.cfg --data s/s.data --backup bk --seed 2 --threads 1 --loader-threads 1 \
    --quiet >train.log 2>&1 && cp bk/base.weights $V/base/variant.weights ||
    { t_fail "train the fixture base" "$(tail -n 5 train.log)"; t_done; exit 0; }
vjson() { # ID TASK META COST
    python3 - "$@" <<'EOF'
import json, sys
vid, task, meta, cost = sys.argv[1:5]
m = json.load(open(meta)) if meta != "-" else {"technique": "base", "description": "base", "technique_fields": {}}
sp = m["technique"] != "base"
print(json.dumps({"schema": 1, "id": vid, "model": "tiny", "technique": m["technique"],
    "parent": "base" if sp else None, "depends_on": ["base"] if sp else [], "description": m["description"],
    "task": task, "files": [{"role": "cfg", "path": "variant.cfg"}, {"role": "weights", "path": "variant.weights"}],
    "accuracy": {} if sp else {"identity": {"split": "test", "top1": 0.5, "top5": 0.8, "images": 96}}, "technique_fields": m["technique_fields"], "cost": json.loads(cost)}))
EOF
}
vjson base identity - "$("$BIN/trainer" info --json $V/base/variant.cfg)" >$V/base/variant.json
"$BIN/catalog" keygen -p k.pub -s k.key -W >/dev/null
for ver in 1 2; do
    "$BIN/catalog" pack $V -o base$ver --task identity=s/s.names --version $ver --key k.key >/dev/null 2>&1 ||
        { t_fail "pack the base catalog"; t_done; exit 0; }
done
mkdir -p root/keys && cp k.pub root/keys/
rtl() { "$BIN/rtl" --root root "$@"; }
expect_ok "install the base catalog" rtl install base1/catalog-tiny-1.tar.zst
expect_ok "profile it (rtl stream needs a latency)" rtl profile tiny --runs 3 --warmup 1
# The stream: the test and validation images, in name order (the window sees them in this order).
ls s/test/*.png s/valid/*.png >stream.list
W=30 M=20
expect_ok "rtl run: the base's answers" sh -c "$BIN/rtl --root root run tiny base \$(cat stream.list) --top 1 --json >base.json"
# The window counted here: the report expected after the whole stream.
cat >window.py <<'EOF'
import json, sys
def answers(path):
    return [r["top"][0]["label"] for r in json.load(open(path))["results"]]
def report(ans, names, W, M, ns=(7, 14, 21), ps=(0.6, 0.7, 0.8, 0.9, 0.95)):
    win = ans[-W:]
    cnt = {}
    for a in win: cnt[a] = cnt.get(a, 0) + 1
    top = sorted(cnt.items(), key=lambda kv: (-kv[1], names.index(kv[0])))
    shares = [sum(c for _, c in top[:n]) / len(win) for n in ns]
    best = next((i for i, s in enumerate(shares) if len(win) >= M and s >= ps[0]), None)
    i = best if best is not None else len(ns) - 1
    p = max([q for q in ps if shares[i] >= q], default=0) if best is not None else 0
    return {"dominated": best is not None, "n": ns[i], "p": p, "share": shares[i], "samples": len(win),
            "counts": sorted(c for _, c in top[:ns[i]])}
EOF
cat >check_report.py <<'EOF'
import json, sys
sys.path.insert(0, ".")
from window import answers, report
names = [l.strip() for l in open("s/s.names")]
W, M = int(sys.argv[2]), int(sys.argv[3])
want = report(answers("base.json"), names, W, M)
got = json.load(open(sys.argv[1]))
ok = (got["dominated"] == want["dominated"] and got["n"] == want["n"] and abs(got["p"] - want["p"]) < 1e-9 and
      abs(got["share"] - want["share"]) < 1e-6 and got["samples"] == want["samples"] and
      sorted(c["count"] for c in got["classes"]) == want["counts"])
if not ok:
    print("got", got, "want", want)
sys.exit(not ok)
EOF
expect_ok "rtl context on the images" sh -c "$BIN/rtl --root root context tiny @stream.list --window $W --min-samples $M --hysteresis 0 --json >ctx_img.json"
t_check "  ... the report is the window's count" python3 check_report.py ctx_img.json $W $M
t_check "  ... a request for the build side when dominated" python3 -c "
import json,sys; r=json.load(open('ctx_img.json'))
sys.exit(not (r['dominated'] and r['request']['model']=='tiny' and [c['label'] for c in r['classes']]==r['request']['classes']))"
expect_ok "rtl context on rtl run --json output" sh -c "$BIN/rtl --root root context tiny --results base.json --window $W --min-samples $M --hysteresis 0 --json >ctx_run.json"
t_check "  ... the same report" python3 check_report.py ctx_run.json $W $M
expect_ok "rtl stream (no --context)" sh -c "$BIN/rtl --root root stream tiny @stream.list >stream.jsonl"
expect_ok "rtl context on rtl stream lines (standard input)" sh -c "$BIN/rtl --root root context tiny --results - --window $W --min-samples $M --hysteresis 0 --json <stream.jsonl >ctx_stream.json"
t_check "  ... the same report" python3 check_report.py ctx_stream.json $W $M
rtl run tiny --task identity $(cat stream.list) --top 1 --json >tasks.json 2>/dev/null
expect_ok "rtl context on rtl run --task --json output" sh -c "$BIN/rtl --root root context tiny --results tasks.json --window $W --min-samples $M --hysteresis 0 --json >ctx_tasks.json"
t_check "  ... the same report" python3 check_report.py ctx_tasks.json $W $M
expect_ok "rtl context, text" rtl context tiny --results base.json --window $W --min-samples $M
t_check "  ... names the dominance and the request" sh -c "grep -Eq '^\([0-9]+, [0-9.]+\)-dominated' $T/out && grep -q '^request: make specialise MODEL=tiny CLASSES=' $T/out && grep -q 'no specialised model is installed' $T/out"
expect_ok "rtl context --events" sh -c "$BIN/rtl --root root context tiny --results base.json --window $W --min-samples $M --events >events.jsonl"
t_check "  ... JSON lines, the first once the window holds $M answers" python3 -c "
import json,sys; ev=[json.loads(l) for l in open('events.jsonl') if l.startswith('{\"event')]
sys.exit(not (ev and ev[0]['dominated'] and ev[0]['after'] >= $M))"

# The build side answers the request: an add-on for those classes.
classes=$(python3 -c "import json; r=json.load(open('ctx_img.json')); print(','.join(r['request']['classes']))")
P=$(python3 -c "import json; print(json.load(open('ctx_img.json'))['request']['context_p'])")
"$BIN/dataset" contexts s/s.data --classes "$classes" --context-p 0.6 --out ctx >/dev/null 2>&1 &&
ctxid=$(awk '!/^#/ { print $1; exit }' ctx/contexts.list) &&
"$BIN/prune" specialise --cfg $V/base/variant.cfg --weights $V/base/variant.weights --data s/s.data \
    --contexts ctx/contexts.list --set batches=200 --set aug_passes=0 --seed 1 --out sp >sp.log 2>&1 ||
    { t_fail "specialise for the requested classes" "$(tail -n 5 sp.log)"; t_done; exit 0; }
A=a/variants/spec
mkdir -p $A && cp sp/$ctxid/variant.cfg $A/ && cp sp/$ctxid/init.weights $A/variant.weights
vjson spec ctx sp/$ctxid/meta.json "$("$BIN/trainer" info --json $A/variant.cfg)" >$A/variant.json
# its context's p: the share the device saw (the add-on is used while its classes hold it)
python3 - "$A/variant.json" "$P" <<'EOF'
import json, sys
v = json.load(open(sys.argv[1])); v["technique_fields"]["context"]["p"] = float(sys.argv[2])
json.dump(v, open(sys.argv[1], "w"))
EOF
expect_ok "pack the add-on" "$BIN/catalog" pack a/variants -o addon --catalog tiny-ctx --model tiny \
    --task ctx=ctx/$ctxid/$ctxid.names --version 1 --key k.key --addon-of base1/manifest.json
expect_ok "install the add-on" rtl install addon/catalog-tiny-1.tar.zst
expect_ok "rtl context: the add-on matches the window" sh -c "$BIN/rtl --root root context tiny --results base.json --window $W --min-samples $M --hysteresis 0 --json >ctx2.json"
t_check "  ... listed, matching" python3 -c "
import json,sys; s=json.load(open('ctx2.json'))['specialised']
sys.exit(not (len(s)==1 and s[0]['catalog']=='tiny-ctx' and s[0]['variant']=='spec' and s[0]['partner']=='base' and s[0]['matches']))"

# The cascade alone on every image, then rtl run --context against a simulation.
rtl run tiny-ctx spec $(cat stream.list) --top 1 --json >casc.json 2>/dev/null
cat >simulate.py <<'EOF'
import json, sys
sys.path.insert(0, ".")
from window import answers
names = [l.strip() for l in open("s/s.names")]
W, M, H, p = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
own = [l.strip() for l in open(sys.argv[5]) if l.strip() != "other"]
base, casc = answers("base.json"), answers("casc.json")
win, cur, out = [], False, []
for b, c in zip(base, casc):
    share = sum(a in own for a in win) / len(win) if win else 0
    cur = len(win) >= M and share >= p - (H if cur else 0) - 1e-12
    a = c if cur else b
    out.append((cur, a))
    win = (win + [a])[-W:]
json.dump(out, sys.stdout)
EOF
python3 simulate.py $W $M 0 "$P" ctx/$ctxid/$ctxid.names >sim0.json
python3 simulate.py $W $M 0.05 "$P" ctx/$ctxid/$ctxid.names >sim5.json
t_check "the simulation uses the cascade for some images, not all" python3 -c "
import json,sys; s=json.load(open('sim0.json')); n=sum(c for c,_ in s); sys.exit(not (0 < n < len(s)))"
cat >cmp_run.py <<'EOF'
import json, sys
sim = json.load(open(sys.argv[2]))
res = json.load(open(sys.argv[1]))["results"]
got = [("cascade" in r, r["top"][0]["label"]) for r in res]
bad = [i for i, (g, s) in enumerate(zip(got, sim)) if g[0] != s[0] or g[1] != s[1]]
if bad or len(got) != len(sim):
    print("first difference at", bad[:3], got[bad[0]] if bad else None, sim[bad[0]] if bad else None)
sys.exit(bool(bad) or len(got) != len(sim))
EOF
for h in 0 0.05; do
    sim=sim0.json; [ $h = 0.05 ] && sim=sim5.json
    expect_ok "rtl run --context (hysteresis $h)" sh -c "$BIN/rtl --root root run tiny base \$(cat stream.list) --top 1 --json --context --window $W --min-samples $M --hysteresis $h >ctxrun.json 2>ctxrun.err"
    t_check "  ... the cascade exactly while the add-on's classes hold its p, its answers then" python3 cmp_run.py ctxrun.json $sim
done
t_check "  ... says when it starts and stops on standard error" sh -c "grep -q 'answering through its cascade' ctxrun.err"
t_check "  ... the final context in the JSON" python3 -c "
import json,sys; c=json.load(open('ctxrun.json'))['context']; sys.exit(not ('dominated' in c and 'classes' in c and 'specialised' in c))"
expect_ok "rtl stream --context" sh -c "$BIN/rtl --root root stream tiny @stream.list --task identity --context --window $W --min-samples $M --hysteresis 0 >ctxstream.jsonl"
t_check "  ... the same answers and cascades as the simulation" python3 -c "
import json,sys
lines=[json.loads(l) for l in open('ctxstream.jsonl')]
res=[l for l in lines if 'answer' in l]; sim=json.load(open('sim0.json'))
got=[(l['cascade'] is not None, l['answer']) for l in res]
ok = got == [tuple(s) for s in sim] and all(l['answered_by'] in ('spec','base') for l in res)
ev=[l for l in lines if l.get('event')=='context' and 'specialised' in l]
summ=[l for l in lines if 'summary' in l][0]['summary']
ok = ok and ev and ev[0]['specialised']=='tiny-ctx/spec' and summ['cascade_served']==sum(c for c,_ in sim)
sys.exit(not ok)"

# Errors.
expect_fail "no input" "nothing to profile" rtl context tiny
expect_fail "a bad --n" "the n values must increase" rtl context tiny --results base.json --n 7,5
expect_fail "a bad --p" "the thresholds p must lie in \\(0, 1\\]" rtl context tiny --results base.json --p 0.6,1.5
printf '{"input":"x","task":"identity","answer":"no-such-class"}\n' >bad.jsonl
expect_fail "a label the task does not have" "bad.jsonl:1: 'no-such-class' is not a class of task identity" \
    rtl context tiny --results bad.jsonl
printf '{"input":"x","task":"identity","answer":"red-disc"}\nnot json\n' >bad2.jsonl
expect_fail "text that is not JSON" "bad2.jsonl:2: not a JSON object" rtl context tiny --results bad2.jsonl
head -c 100 base.json >bad3.json
expect_fail "JSON cut short" "bad3.json:1: the input ends inside a JSON value" rtl context tiny --results bad3.json
expect_fail "a missing results file" "results: cannot open nosuch.json for reading: No such file" rtl context tiny --results nosuch.json
expect_fail "an unknown task" "catalog tiny has no task shape" rtl context tiny --results base.json --task shape
expect_fail "an unknown catalog" "nosuch" rtl context nosuch --results base.json
expect_fail "--context on a specialised variant" "spec is specialised .*give its partner base" \
    rtl run tiny-ctx spec s/test/$(ls s/test | head -n 1) --context
expect_ok "rtl context --help" rtl context --help
expect_ok "install base version 2" rtl install base2/catalog-tiny-2.tar.zst
expect_ok "rtl context after the base moved on" rtl context tiny --results base.json --window $W --min-samples $M
t_check "  ... the add-on of version 1 is not used, with a warning" sh -c "grep -q 'built for catalog tiny version 1, but version 2 is installed: not used' $T/out && grep -q 'no specialised model is installed' $T/out"
t_done
