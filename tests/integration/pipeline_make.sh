#!/usr/bin/env bash
# The variant pipeline through make (mk/variants.mk, mk/launch.mk,
# mk/catalog.mk) on a tiny recipe and a tiny synthetic set: the fan-out
# under -j2 with threads per job (through LAUNCH=slurm and a recording
# srun), one edited recipe entry rebuilding only its variant, a build
# killed mid-training resuming, and the same catalog bytes when built twice.
# The nested make uses the suite's own build folder ($O): GPU, DEBUG and SAN
# come from the environment, so it never rebuilds the tools.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/tiny.sh"

R=$T/recipes/tiny
mkdir -p "$R"
tiny_base_cfg "$R/base.cfg" 30
write_recipe() { # RW_B_BATCHES RW_A_BATCHES [RW_A_LEARNING_RATE]
    cat >"$R/recipe.mk" <<MK
RECIPE_CFG := \$(RECIPES)/tiny/base.cfg
RECIPE_VARIANTS := rw-a rw-b svd-a nest
V_rw-a := rewrite stride2:conv\\#1
V_rw-a_TRAIN := max_batches=$2 learning_rate=${3:-0.1}
V_rw-b := rewrite half:conv~1
V_rw-b_TRAIN := max_batches=$1
V_rw-b_KD := alpha=0.5 temperature=2
V_svd-a := svd fc\\#1:4x
V_nest := nested trr
V_nest_ROADMAP := step=0.3 min_accuracy=0 retrain_batches=2 triplets=12 max_steps=2
V_nest_GROW := batches=2 capacities=3
MK
}
write_recipe 10 10

cat >"$T/srun" <<'SH'
#!/bin/sh
# A stand-in for Slurm's srun: records the job name and its cores, then runs
# the command after the options (what srun would run on a node).
name= cpus=
while [ $# -gt 0 ]; do
    case "$1" in
        --job-name=*) name=${1#*=} ;;
        --cpus-per-task=*) cpus=${1#*=} ;;
        --*) ;;
        *) break ;;
    esac
    shift
done
echo "$name $cpus" >> "$SRUN_LOG"
exec "$@"
SH
chmod +x "$T/srun"
export SRUN_LOG=$T/srun.log

pmake() {
    make -C "$TOP" --no-print-directory O="$O" RECIPES="$T/recipes" MODEL=tiny MODEL_O="$T/tiny" \
        DATASET_ROOT="$T/data" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=1 DATASET_TEST=2 \
        PROFILE_RUNS=3 THREADS=2 SOURCE_DATE_EPOCH=1700000000 KEY="$T/k.key" "$@"
}
"$BIN/catalog" keygen -p "$T/k.pub" -s "$T/k.key" -W >/dev/null 2>&1

# 1. The fan-out: every variant trained, evaluated, profiled and described;
#    the base gets all threads, variants under -j2 one each.
expect_ok "make -j2 variants LAUNCH=slurm builds every variant" pmake -j2 variants LAUNCH=slurm SRUN="$T/srun"
cp "$T/out" "$T/variants.out"
for v in base rw-a rw-b svd-a nest; do
    t_check "variant $v has its variant.json" test -s "$T/tiny/variants/$v/variant.json"
done
t_check "make variants prints the table" grep -q 'rw-a' "$T/variants.out"
t_check "the base's classifier was fitted to the set's 48 classes (the recipe says 10)" \
    grep -qx 'output=48' "$T/tiny/variants/base/variant.cfg"
t_check "the base trained with all threads" grep -qx 'tiny-base-train 2' "$SRUN_LOG"
t_check "variants trained with THREADS/2 threads each" grep -qx 'tiny-rw-a-train 1' "$SRUN_LOG"
t_check "every derivation went through the launcher" grep -qx 'tiny-svd-a-derive 1' "$SRUN_LOG"
t_check "timings were recorded" grep -q '^train rw-b ' "$T/tiny/timings.log"
t_check "the nested variant's roadmap went through the launcher" grep -qx 'tiny-nest-roadmap 1' "$SRUN_LOG"
t_check "the nested variant's grow went through the launcher" grep -qx 'tiny-nest-grow 1' "$SRUN_LOG"
t_check "the nested variant's roadmap and capacities" \
    test -s "$T/tiny/variants/nest/roadmap/roadmap.json" -a -s "$T/tiny/variants/nest/capacities.json"
t_check "the nested variant's technique" grep -q '"technique":[[:space:]]*"nested"' "$T/tiny/variants/nest/meta.json"
t_check "rw-b learned from the base as its teacher (V_rw-b_KD)" \
    grep -q 'rw-b: max_batches=10 (teacher: base; alpha=0.5 temperature=2)' "$T/variants.out"
t_check "the distillation settings are part of rw-b's plan entry" grep -q '| kd alpha=0.5 temperature=2' "$T/tiny/plan/rw-b.plan"

# 2. Nothing to redo; then one edited entry rebuilds only its variant.
stamp() { stat -c %Y.%y "$T/tiny/variants/$1/variant.json"; }
before_base=$(stamp base) before_a=$(stamp rw-a) before_b=$(stamp rw-b) before_s=$(stamp svd-a)
sleep 1
pmake -j2 variants VARIANTS_JSON=1 >"$T/variants.json" 2>"$T/err"
t_check "make variants VARIANTS_JSON=1 prints the table as JSON" python3 -c '
import json, sys
text = open(sys.argv[1]).read()
v = json.loads(text[text.index("{"):])["variants"]
assert v[0]["id"] == "base" and "rw-a" in [x["id"] for x in v] and all(x["macs"] > 0 for x in v), v
' "$T/variants.json"
expect_ok "a second make variants succeeds" pmake -j2 variants
t_check "a second make variants redoes nothing" test "$(stamp rw-b)" = "$before_b"
write_recipe 12 10
expect_ok "make variants after editing rw-b's entry" pmake -j2 variants
t_check "the edited variant rw-b was rebuilt" test "$(stamp rw-b)" != "$before_b"
t_check "rw-a was not rebuilt" test "$(stamp rw-a)" = "$before_a"
t_check "svd-a was not rebuilt" test "$(stamp svd-a)" = "$before_s"
t_check "the base was not rebuilt" test "$(stamp base)" = "$before_base"
after_b=$(stamp rw-b)

# 3. A build killed while a variant trains resumes from its checkpoint.
# (A new learning rate too: the first batches of the edited entry differ
# from those the previous entry checkpointed.)
write_recipe 12 3000 0.05
sleep 0.1; touch "$T/started"
# Job control puts the background build in its own process group (pgid =
# its pid), so one kill reaches make and every job under it, as a killed
# terminal or a cancelled CI job would.
set -m
pmake -j1 variants >"$T/killed.out" 2>&1 &
pid=$!
set +m
t_wait_newer "$T/tiny/variants/rw-a/train/variant.ckpt" "$pid" 600
kill -KILL -- -"$pid" 2>/dev/null
wait "$pid" 2>/dev/null
# (rw-a's variant.json is still the one of its previous entry: out of date.)
if [ "$T/tiny/variants/rw-a/train/variant.ckpt" -nt "$T/tiny/plan/rw-a.plan" ] &&
   [ "$T/tiny/plan/rw-a.plan" -nt "$T/tiny/variants/rw-a/variant.json" ]; then
    t_ok "the build was killed with rw-a checkpointed and not finished"
else
    t_fail "the build was killed with rw-a checkpointed and not finished" "$(tail -n 3 "$T/killed.out"; ls -l --time-style=full-iso "$T/tiny/plan/rw-a.plan" "$T/tiny/variants/rw-a" "$T/tiny/variants/rw-a/train" 2>&1)"
fi
expect_ok "make variants after the kill finishes the build" pmake -j2 variants
t_check "rw-a is complete after the resumed build" test "$T/tiny/variants/rw-a/variant.json" -nt "$T/tiny/plan/rw-a.plan"
# Darknet's header: major, minor, revision (int32 each), then seen (uint64):
# 3000 batches of 16 images, so the edited entry's schedule ran to its end
# (an earlier entry's checkpoint was not resumed).
seen=$(od -An -t u8 -j 12 -N 8 "$T/tiny/variants/rw-a/variant.weights" | tr -d ' ')
t_check "rw-a trained its edited schedule to the end (seen $seen, want 48000)" test "$seen" = 48000
# The same entry built without interruption (from a copy of the trained
# base) gives the same bytes: the resumed job continued its own checkpoint,
# not the earlier entry's.
mkdir -p "$T/fresh/variants"
cp -a "$T/tiny/plan" "$T/fresh/" && cp -a "$T/tiny/variants/base" "$T/fresh/variants/"
expect_ok "rw-a built again without interruption" pmake MODEL_O="$T/fresh" "$T/fresh/variants/rw-a/variant.weights"
t_check "the resumed rw-a has the uninterrupted one's weights bytes" \
    cmp "$T/fresh/variants/rw-a/variant.weights" "$T/tiny/variants/rw-a/variant.weights"
t_check "rw-b was not redone by the resumed build" test "$(stamp rw-b)" = "$after_b"

# BASE_WEIGHTS: a user's trained Darknet weights stand for the base, checked
# against the cfg first (trainer info --weights); weights of another cfg are
# refused with the array that does not fit, and nothing is left behind.
expect_ok "make BASE_WEIGHTS=<trained base> uses them as the base" \
    pmake MODEL_O="$T/given" BASE_WEIGHTS="$T/tiny/variants/base/variant.weights" "$T/given/variants/base/variant.weights"
t_check "the given weights are the base's bytes" \
    cmp "$T/given/variants/base/variant.weights" "$T/tiny/variants/base/variant.weights"
expect_fail "make BASE_WEIGHTS=<another cfg's weights> is refused" "belongs to another cfg" \
    pmake MODEL_O="$T/wrong" BASE_WEIGHTS="$T/tiny/variants/rw-a/variant.weights" "$T/wrong/variants/base/variant.weights"
t_check "the refused base left no weights" test ! -e "$T/wrong/variants/base/variant.weights"

# 4. The catalog: signed, verifiable by minisign, the same bytes twice.
expect_ok "make catalog builds the signed catalog" pmake catalog
cat "$T/out" > "$T/catalog.out"
arch=$(ls "$T"/tiny/catalog-tiny-*.tar.zst 2>/dev/null | head -n 1)
t_check "the archive is named catalog-tiny-<version>.tar.zst" test -n "$arch"
t_check "make catalog prints the per-stage timings" grep -q '^timings: total' "$T/catalog.out"
expect_ok "minisign verifies the catalog" minisign -Vm "$arch" -p "$T/k.pub"
t_check "every trained variant left a metrics log with a final validation" bash -c "
for f in '$T'/tiny/variants/base/train/variant.metrics.jsonl; do
  test -s \$f && tail -n 1 \$f | grep -q '\"val_top1\":' || exit 1; done"
t_check "the report is also HTML, with the training curves" bash -c "r=\${1%.tar.zst}; test -s \$r.report.html -a -s \$r.curve-base.svg && grep -q '^## Training curves' \$r.report.md && grep -q 'training of base' \$r.report.html" _ "$arch"
sum1=$(sha256sum "$arch" "$arch.minisig" | awk '{print $1}' | tr '\n' ' ')
rm -f "$arch" "$arch.minisig" "$T"/tiny/*.report.md
expect_ok "make catalog again from the same variants" pmake catalog
sum2=$(sha256sum "$arch" "$arch.minisig" | awk '{print $1}' | tr '\n' ' ')
t_check "the archive and signature bytes are identical" test "$sum1" = "$sum2"

# The paired test: every variant's per-image record of the test split
# (trainer valid --predictions; the nested one's per capacity from prune
# grow) is named in its variant.json, and every winnowing decision in the
# manifest is McNemar's on the same images.
t_check "every variant names its per-image record, the nested one per capacity" python3 -c '
import json, os, sys
d = sys.argv[1]
for vid in ("base", "rw-a", "rw-b", "svd-a", "nest"):
    p = json.load(open("%s/%s/variant.json" % (d, vid)))["predictions"]
    assert p["path"] == "eval.predictions" and os.path.getsize("%s/%s/eval.predictions" % (d, vid)) > 0, (vid, p)
caps = json.load(open(d + "/nest/variant.json"))["predictions"]["capacities"]
assert [c["path"] for c in caps] == ["capacity-%d.predictions" % k for k in (1, 2, 3)], caps
' "$T/tiny/variants"
t_check "every winnowing decision of the manifest is a paired test with its p-value" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
tests = [w["test"] for w in m["winnowed"]] + [v["winnowing"]["test"] for v in m["variants"] if "test" in v["winnowing"]]
tests += [c["test"] for v in m["variants"] for c in v["winnowing"].get("capacities", []) if "test" in c]
assert tests and all(t["method"] == "mcnemar-exact" and 0 <= t["p"] <= 1 for t in tests), tests
print("# %d decisions, all paired" % len(tests))' "$T/tiny/manifest.json"
t_check "make catalog prints every decision" grep -q '^winnow: .*McNemar p = ' "$T/catalog.out"
# KEEP= (a recipe's RECIPE_KEEP): a variant kept out of winnowing on purpose.
expect_ok "make catalog KEEP=rw-b" pmake catalog KEEP=rw-b
t_check "rw-b is in the catalog, marked kept by request" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
assert [v["winnowing"]["reason"] for v in m["variants"] if v["id"] == "rw-b"] == ["kept by request"]' "$T/tiny/manifest.json"
expect_fail "make catalog KEEP=nosuch is refused by catalog pack" "--keep nosuch: no variant folder" pmake catalog KEEP=nosuch
expect_ok "make catalog without KEEP repacks" pmake catalog
t_check "  ... the same archive bytes as before" test "$(sha256sum "$arch" "$arch.minisig" | awk '{print $1}' | tr '\n' ' ')" = "$sum1"


# 5. make specialise: an add-on catalog for a device's context of three
# classes. The specialised model's cascade partner is the base, or, when
# the catalog winnowed the base (this tiny one may), its most accurate kept
# whole network, said in a message; PARTNER= names it, and one the catalog
# did not keep is refused. The add-on itself (packing, rtl install's
# refusals, the cascade) is checked by rtl_addon.sh and rtl_context.sh.
expect_fail "make specialise without CLASSES says what to give" "CLASSES is empty" pmake specialise
expect_fail "make specialise PARTNER=nosuch is refused, naming the kept variants" \
    "has no variant nosuch it can specialise \\(kept whole networks of identity: .*rw-" \
    pmake specialise CLASSES=red-disc,blue-star,cyan-ring PARTNER=nosuch
kept_base=$(python3 -c "import json,sys; print(int(any(v['id']=='base' for v in json.load(open(sys.argv[1]))['variants'])))" "$T/tiny/manifest.json")
best=$(python3 -c "
import json,sys; m=json.load(open(sys.argv[1]))
k=[v for v in m['variants'] if v['technique'] in ('base','rewrite','svd','mimic','lasso') and v['task']=='identity']
print('base' if any(v['id']=='base' for v in k) else max(k, key=lambda v: v['accuracy']['identity']['top1'])['id'])" "$T/tiny/manifest.json")
expect_ok "make specialise CLASSES=red-disc,blue-star,cyan-ring (partner $best)" pmake specialise CLASSES=red-disc,blue-star,cyan-ring
cp "$T/out" "$T/spec.out"
if [ "$kept_base" = 0 ]; then
    t_check "  ... says the base was winnowed and which variant it specialised" \
        grep -q "winnowed its base .*specialising $best, its most accurate kept variant" "$T/spec.out"
    expect_fail "PARTNER=base is refused when the catalog winnowed the base" "has no variant base it can specialise" \
        pmake specialise CLASSES=red-disc,blue-star,cyan-ring PARTNER=base
else
    t_skip "  ... says the base was winnowed and which variant it specialised" "this catalog kept its base"
fi
addon=$(ls "$T"/tiny/specialise/ctx-*/out/catalog-tiny-*.tar.zst 2>/dev/null | head -n 1)
t_check "it packs a signed add-on whose base is the catalog and whose partner is $best" python3 -c "
import json, sys; m = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
v = m['variants'][0]
sys.exit(not (m['base']['catalog'] == b['catalog'] and m['base']['version'] == b['version'] and
    v['technique_fields']['cascade']['partner'] == sys.argv[3] and v['depends_on'] == [sys.argv[3]] and v['parent'] == sys.argv[3]))" \
    "$(dirname "$addon")/manifest.json" "$T/tiny/manifest.json" "$best"
mkdir -p "$T/sroot/keys" && cp "$T/k.pub" "$T/sroot/keys/"
expect_ok "the catalog and the add-on install" sh -c "$BIN/rtl --root $T/sroot install $(ls "$T"/tiny/catalog-tiny-*.tar.zst | head -n 1) && $BIN/rtl --root $T/sroot install $addon"
img=$(ls "$T"/data/synth/test/*red-disc*.png | head -n 1)
aid=$(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['catalog'], m['variants'][0]['id'])" "$(dirname "$addon")/manifest.json")
expect_ok "rtl run answers through the cascade with $best" "$BIN/rtl" --root "$T/sroot" run ${aid% *} ${aid#* } "$img" --json
t_check "  ... answered by the add-on's model or by $best" sh -c "grep -Eq '\"answered_by\":[[:space:]]*\"(${aid#* }|$best)\"' $T/out"

# 6. The scheduler on this real catalog (issue 19 items 1 and 2, on a
# catalog the pipeline built rather than a written fixture): MCDNN's traces
# S1-S3 with an energy budget that binds (a third of what device-only takes
# unconstrained) and MCDNN's cloud budget scaled to the hour. This tiny
# catalog's accuracies are near chance (48 classes, 96 test images), so
# accuracy is compared only to within one test image (1/96): MCDNN is
# within both budgets, serves the most requests, and no policy is more
# accurate by more than that. Then NestDNN's concurrency trace on the nested
# variant's real capacities (capacities.json).
for tr in s1 s2 s3; do
    "$BIN/rtl" simulate "$arch" --trace $tr --hours 1 --policy device-only --energy-wh -1 --cloud-usd -1 --json \
        >"$T/free-$tr.json" 2>"$T/err"
    e=$(python3 -c 'import json,sys; print("%.6g" % (json.load(open(sys.argv[1]))[0]["policies"][0]["energy_wh"] / 3))' \
        "$T/free-$tr.json" 2>/dev/null)
    expect_ok "simulate $tr on the built catalog (energy budget ${e:-?} Wh, \$0.00667 over an hour)" \
        "$BIN/rtl" simulate "$arch" --trace $tr --hours 1 --energy-wh "${e:-0}" --cloud-usd 0.00667 --json
    cp "$T/out" "$T/sim-$tr.json"
done
t_check "S1-S3 on the built catalog: every policy within both budgets; MCDNN serves the most, none clearly more accurate" python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
n = min(v["accuracy"]["identity"]["images"] for v in m["variants"] if "identity" in v.get("accuracy", {}))
for f in sys.argv[2:]:
    t = json.load(open(f))[0]
    p = {x["policy"]: x for x in t["policies"]}
    mc = p["mcdnn"]
    assert len(p) == 6 and mc["served"] > 0, p
    assert p["device-only"]["energy_out_s"] > 0, (f, "the energy budget does not bind", p["device-only"])
    for k, x in p.items():
        assert x["energy_wh"] <= t["energy_wh"] + 1e-9 and x["cloud_usd"] <= t["cloud_usd"] + 1e-9, (f, k, x)
        assert x["served"] <= mc["served"], (f, k, x["served"], mc["served"])
        assert x["accuracy"] <= mc["accuracy"] + 1.0 / n, (f, k, x["accuracy"], mc["accuracy"], n)
' "$T/tiny/manifest.json" "$T"/sim-s1.json "$T"/sim-s2.json "$T"/sim-s3.json
expect_ok "concurrency on the built catalog's nested variant" \
    "$BIN/rtl" simulate "$arch" --trace concurrency --hours 0.2 --json
t_check "NestDNN and the knee use the nested variant's capacities" python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))[0]
caps = json.load(open(sys.argv[2]))
n = len(caps["capacities"] if isinstance(caps, dict) else caps)
p = {x["policy"]: x for x in t["policies"]}
assert set(p) == {"nest-total", "nest-max", "knee"} and n >= 2, (p.keys(), n)
assert all(x["served"] > 0 for x in p.values()), p
sw = [x for x in t["alpha_sweep"] if "alpha" in x]
for pol in ("nest-total", "nest-max"):
    c = sorted((x for x in sw if x["policy"] == pol), key=lambda x: x["alpha"])
    assert c[0]["accuracy"] >= c[-1]["accuracy"] and c[-1]["fps"] >= c[0]["fps"], c
' "$T/out" "$T/tiny/variants/nest/capacities.json"

# 7. make catalog ONNX=1 (issue 42): every variant of the tiny recipe also as
# ONNX in the archive, its size and SHA-256 in the manifest, accepted by
# onnx.checker; in ONNX Runtime every whole network equals the engine's
# forward (prune-testtool forward) within 1e-5 with the same top-1, and the
# nested variant has one model per capacity, each running.
. "$TOP/tests/integration/catalog/onnx.sh"
expect_ok "make catalog ONNX=1" pmake catalog ONNX=1
t_check "the manifest lists an ONNX model of every variant, with its size and SHA-256" python3 - "$T/tiny" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
for v in json.load(open(os.path.join(d, "manifest.json")))["variants"]:
    fs = [f for f in v["files"] if f["role"] == "onnx"]
    want = len(v["technique_fields"].get("capacities", [])) if v["technique"] == "nested" else 1
    assert len(fs) == want, (v["id"], fs)
    for f in fs:
        b = open(os.path.join(d, f["path"]), "rb").read()
        assert f["size"] == len(b) and f["sha256"] == hashlib.sha256(b).hexdigest(), f
PY
if [ -n "$onnx_py" ]; then
    expect_ok "onnx.checker accepts every file" onnx_check "$T"/tiny/variants/*/*.onnx
else
    t_skip "onnx.checker accepts every file" "no python3 with the onnx module (Debian: python3-onnx; make deps)"
fi
if ort_ready; then
    mkinputs "$T/onnx-in" 2 3 16 9
    for f in "$T"/tiny/variants/*/*.onnx; do
        d=$(dirname "$f") ok=1
        node "$ORT_JS" run "$f" "$T"/onnx-in/in_0.raw "$T"/onnx-in/in_1.raw >"$T/ort.jsonl" 2>"$T/ort.err" || ok=0
        case $f in
        *.cap*.onnx) t_check "$(basename "$f") runs in ONNX Runtime" test $ok = 1 ;;
        *)  for k in 0 1; do
                "$TESTD/tools/prune-testtool" forward "$d/variant.cfg" "$d/variant.weights" "$T/onnx-in/in_$k.raw" "$T/ref.raw" &&
                    same_probs "$T/ref.raw" "$(ort_output "$T/ort.jsonl" $k probs)" >>"$T/cmp.log" 2>&1 || ok=0
            done
            t_check "$(basename "$f"): ONNX Runtime = the engine within 1e-5, same top-1" test $ok = 1 ;;
        esac
    done
else
    t_skip "the tiny recipe's ONNX models in ONNX Runtime" "$ORT_WHY"
fi
t_done
