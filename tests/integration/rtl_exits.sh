#!/usr/bin/env bash
# rtl run on an early-exit variant equals the trainer library's evaluation
# (issue 16 item 3), on a trunk pruned by collective importance (FlexDNN's
# pipeline): prune early-exit writes, for every test image, the
# exit that answered at alpha 1 and its probabilities (predictions.json,
# batch evaluation in libprn/libtrn); the variant is packed into a signed
# catalog (cfg, weights, exits.cfg, exits.weights), installed with rtl
# install, and `rtl run --json` on the same images must give the same
# answer, the same exit and every probability within 1e-5. Also --alpha:
# 0 answers at the first exit, a huge alpha at the trunk; errors for a
# negative alpha and for alpha on a plain variant. An exit model searched
# with another confidence measure (--set confidence=margin) writes it into
# exits.cfg, and rtl run applies it: the same exits at alpha 1 and at every
# alpha of the profile (pred_by_alpha) as the trainer's evaluation.
. "$TOP/tests/lib.sh"
P=$BIN/prune
CAT=$BIN/catalog
RTL=$BIN/rtl
TOOL=$TESTD/tools/prune-testtool
cd "$T" || exit 1

"$BIN/dataset" generate --out "$T" --name s --seed 3 --size 16 --train 2 --valid 1 --test 1 \
    --no-contexts --threads 1 >/dev/null 2>&1 || { t_fail "fixture data set"; t_done; exit 0; }
printf '[net]\nbatch=8\nwidth=16\nheight=16\nchannels=3\n\n' >base.cfg
printf '[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nbatch_normalize=1\nactivation=relu\n\n' >>base.cfg
printf '[maxpool]\nsize=2\nstride=2\n\n[convolutional]\nfilters=32\nsize=3\npad=1\nactivation=relu\n\n' >>base.cfg
printf '[maxpool]\nsize=2\nstride=2\n\n[connected]\noutput=48\nactivation=linear\n\n[softmax]\n' >>base.cfg
"$TOOL" weights base.cfg 5 base.weights || { t_fail "fixture weights"; t_done; exit 0; }
# (same_budget=0: this fixture's exits as searched answer at more than one exit)
expect_ok "prune early-exit with predictions" "$P" early-exit --cfg base.cfg --weights base.weights \
    --data s/s.data --seed 4 --set batch=8 --set stage1=8 --set finetune=3 --set width=2 --set layers=1 \
    --set pool_to=2 --set predictions=1 --set trunk_prune=1 --set trunk_macs=0.7 --set trunk_retrain=3 \
    --set sbs_images=16 --set same_budget=0 --out e
t_check "the trunk is pruned (FlexDNN's collective importance)" sh -c '! cmp -s base.cfg e/variant.cfg'

# the catalog: base and the early-exit variant (its trunk the pruned one)
# the same search with the top-two margin as the exits' confidence
expect_ok "prune early-exit --set confidence=margin" "$P" early-exit --cfg base.cfg --weights base.weights \
    --data s/s.data --seed 4 --set batch=8 --set stage1=8 --set finetune=3 --set width=2 --set layers=1 \
    --set pool_to=2 --set predictions=1 --set same_budget=0 --set min_threshold=0.05 --set confidence=margin --out em
t_check "exits.cfg names the measure (confidence=margin)" grep -qx 'confidence=margin' em/exits.cfg
t_check "meta.json says the measure" python3 -c '
import json, sys; sys.exit(json.load(open(sys.argv[1]))["technique_fields"]["confidence"] != "margin")' em/meta.json

mkdir -p variants/base
cp base.cfg variants/base/variant.cfg && cp base.weights variants/base/variant.weights
cost=$("$BIN/trainer" info --json base.cfg)
printf '{"schema":1,"id":"base","model":"eenet","technique":"base","parent":null,"depends_on":[],"description":"base",
 "task":"identity","files":[{"role":"cfg","path":"variant.cfg"},{"role":"weights","path":"variant.weights"}],
 "accuracy":{},"technique_fields":{},"cost":%s}\n' "$cost" >variants/base/variant.json
ee_variant() { # ID OUT: variants/ID from prune early-exit's folder OUT
    mkdir -p "variants/$1"
    cp "$2/variant.cfg" "$2/exits.cfg" "$2/exits.weights" "variants/$1/" && cp "$2/init.weights" "variants/$1/variant.weights"
    local ecost tf
    ecost=$("$BIN/trainer" info --json "$2/variant.cfg")
    tf=$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["technique_fields"]))' "$2/meta.json")
    printf '{"schema":1,"id":"%s","model":"eenet","technique":"early-exit","parent":"base","depends_on":[],"description":"%s",
 "task":"identity","files":[{"role":"cfg","path":"variant.cfg"},{"role":"weights","path":"variant.weights"},
 {"role":"exits_cfg","path":"exits.cfg"},{"role":"exits_weights","path":"exits.weights"}],
 "accuracy":{},"technique_fields":%s,"cost":%s}\n' "$1" "$1" "$tf" "$ecost" >"variants/$1/variant.json"
}
ee_variant ee e
ee_variant em em
"$CAT" keygen -p k.pub -s k.key -W >/dev/null 2>&1
expect_ok "catalog pack" "$CAT" pack variants -o pkg --task identity=s/s.names --version 1 --key k.key
mkdir -p root/keys && cp k.pub root/keys/
rtl() { "$RTL" --root root "$@"; }
expect_ok "rtl install" rtl install pkg/catalog-eenet-1.tar.zst

mapfile -t images < <(python3 -c 'import json,sys; [print(r["path"]) for r in json.load(open(sys.argv[1]))["images"]]' e/predictions.json)
t_check "the test split has images (${#images[@]})" test "${#images[@]}" -ge 40
rtl run eenet ee "${images[@]}" --top 48 --json --threads 1 >run.json 2>run.err
t_check "rtl run on every test image" test -s run.json

compare() { # RUN_JSON PREDICTIONS_JSON [ALPHA_RULE]
    python3 - "$@" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["results"]
p = json.load(open(sys.argv[2]))
want = p["images"]
assert len(r) == len(want), "%d results, %d predictions" % (len(r), len(want))
worst, exits, n_exits = 0.0, {}, p["exits"]
for res, w in zip(r, want):
    assert res["image"] == w["path"], (res["image"], w["path"])
    assert res["exit"] == w["exit"], "%s: rtl answered at exit %s, the trainer's evaluation at %s" % (w["path"], res["exit"], w["exit"])
    got = [0.0] * len(w["probabilities"])
    for t in res["top"]: got[t["index"]] = t["probability"]
    d = max(abs(a - b) for a, b in zip(got, w["probabilities"]))
    assert d <= 1e-5, "%s: probabilities differ by %g" % (w["path"], d)
    ga = max(range(len(got)), key=lambda k: got[k]); wa = max(range(len(got)), key=lambda k: w["probabilities"][k])
    assert res["top"][0]["index"] == wa, "%s: answer %d vs %d" % (w["path"], res["top"][0]["index"], wa)
    worst = max(worst, d)
    exits[w["exit"]] = exits.get(w["exit"], 0) + 1
print("largest difference %.2g; answers per exit %s (%d = the trunk)" % (worst, dict(sorted(exits.items())), n_exits))
EOF
}
if out=$(compare run.json e/predictions.json 2>&1); then
    t_ok "rtl run equals the trainer's evaluation: same answer, same exit, probabilities within 1e-5 ($out)"
else
    t_fail "rtl run equals the trainer's evaluation" "$out"
fi
t_check "more than one exit answers somewhere (the test is not trivial)" \
    python3 -c 'import json,sys; e=set(r["exit"] for r in json.load(open(sys.argv[1]))["images"]); sys.exit(len(e) < 2)' e/predictions.json
t_check "text output names the exit" sh -c "'$RTL' --root root run eenet ee '${images[0]}' --threads 1 | grep -Eq '\[(exit [0-9]+, layer [0-9]+|final)\]'"
rtl run eenet ee "${images[@]:0:8}" --json --alpha 0 --threads 1 >a0.json 2>/dev/null
t_check "--alpha 0: the first exit answers every image" \
    python3 -c 'import json,sys; sys.exit(any(r["exit"] != 0 for r in json.load(open(sys.argv[1]))["results"]))' a0.json
rtl run eenet ee "${images[@]:0:8}" --json --alpha 100000 --threads 1 >ainf.json 2>/dev/null
# a huge alpha: no exit answers unless its threshold is 0 (then Conf > 0 always passes)
t_check "--alpha 100000: the trunk answers, or exits of threshold 0" python3 -c '
import json, sys
thr = [float(l.split("=")[1]) for l in open(sys.argv[2]) if l.startswith("threshold=")]
bad = [r for r in json.load(open(sys.argv[1]))["results"] if r["exit"] < len(thr) and thr[r["exit"]] > 0]
sys.exit(1 if bad else 0)' ainf.json e/exits.cfg
# the margin model: rtl run applies exits.cfg's measure at alpha 1 and at each alpha of the profile
rtl run eenet em "${images[@]}" --top 48 --json --threads 1 >runm.json 2>/dev/null
if out=$(compare runm.json em/predictions.json 2>&1); then
    t_ok "confidence=margin: rtl run equals the trainer's evaluation ($out)"
else
    t_fail "confidence=margin: rtl run equals the trainer's evaluation" "$out"
fi
mapfile -t alphas < <(python3 -c 'import json,sys; [print(a) for a in json.load(open(sys.argv[1]))["alphas"]]' em/predictions.json)
bad=""
for k in "${!alphas[@]}"; do
    rtl run eenet em "${images[@]}" --json --alpha "${alphas[$k]}" --threads 1 >runm-a.json 2>/dev/null
    python3 - runm-a.json em/predictions.json "$k" <<'EOF' || bad="$bad ${alphas[$k]}"
import json, sys
r = json.load(open(sys.argv[1]))["results"]; p = json.load(open(sys.argv[2]))["images"]; k = int(sys.argv[3])
sys.exit(any(x["exit"] != w["exit_by_alpha"][k] or x["top"][0]["index"] != w["pred_by_alpha"][k] for x, w in zip(r, p)))
EOF
done
t_check "confidence=margin: rtl run --alpha answers as the profile at every alpha (${#alphas[@]}; wrong at:$bad)" test -z "$bad"
t_check "confidence=margin: the exits answer somewhere at alpha 1" \
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(all(r["exit"] == d["exits"] for r in d["images"]))' em/predictions.json
expect_fail "a negative alpha is refused" "alpha" rtl run eenet ee "${images[0]}" --alpha -1
expect_fail "alpha on a plain variant is refused" "no early exits" rtl run eenet base "${images[0]}" --alpha 0.5
t_done
