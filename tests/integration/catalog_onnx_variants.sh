#!/usr/bin/env bash
# catalog export --onnx on every kind of multi-network variant (issue 42
# items 1-2), each in ONNX Runtime against `rtl run` on the installed
# catalog, same top-1 and probabilities within 1e-5, on images of the
# networks' size: an early-exit variant (prune early-exit: one output per exit
# and its confidence; --alpha 0 answers at exit 0, a huge alpha at the trunk,
# and at alpha 1 the exit rtl answers at is the first whose exported confidence
# beats its threshold), a nested variant (prune grow: one file per capacity,
# against rtl run --capacity K) and heads on a shared trunk (prune retarget:
# one graph, one output per task, against each head run alone). Every file
# passes onnx.checker.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/onnx.sh"
cd "$T" || exit 1
CAT=$BIN/catalog
P=$BIN/prune
TOOL=$TESTD/tools/prune-testtool
export SOURCE_DATE_EPOCH=1700000000
if ! ort_ready; then t_skip "ONNX Runtime against rtl run" "$ORT_WHY"; t_done; exit 0; fi
"$CAT" keygen -p k.pub -s k.key -W >/dev/null 2>&1
mkinputs in 4 3 16 5
raws=(in/in_0.raw in/in_1.raw in/in_2.raw in/in_3.raw)
bmps=(in/in_0.bmp in/in_1.bmp in/in_2.bmp in/in_3.bmp)

# install NAME VARIANTS LABELS MODEL [TASK=LABELS...]: packed, signed and installed under root-NAME
install() {
    local name=$1 v=$2 labels=$3 model=$4 tasks=()
    shift 4
    for t in "$@"; do tasks+=(--task "$t"); done
    echo "$model" >model-$name
    "$CAT" pack "$v" -o pkg-$name --task identity="$labels" "${tasks[@]}" --version 1 --key k.key >pack-$name.log 2>&1 &&
        mkdir -p root-$name/keys && cp k.pub root-$name/keys/ &&
        "$BIN/rtl" --root root-$name install pkg-$name/catalog-$model-1.tar.zst >install-$name.log 2>&1 ||
        { t_fail "pack and install $name" "$(tail -n 3 pack-$name.log install-$name.log)"; return 1; }
}
# against NAME VARIANT ONNX OUTPUT [RTL OPTIONS...]: ONNX Runtime's OUTPUT of every
# input = rtl run's probabilities (all classes) of its image
against() {
    local name=$1 var=$2 model=$3 out=$4 ok=1 k want
    shift 4
    node "$ORT_JS" run "$model" "${raws[@]}" >ort.jsonl 2>ort.err || { t_fail "ONNX Runtime runs $model" "$(tail -n 3 ort.err)"; return; }
    "$BIN/rtl" --root root-$name run "$(cat model-$name)" "$var" "${bmps[@]}" --top 1000 --json --threads 1 "$@" \
        >rtl.json 2>rtl.err
    for k in 0 1 2 3; do
        want=$(python3 -c 'import json,sys; r=json.load(open("rtl.json"))["results"][int(sys.argv[1])]["top"]
v=[0.0]*len(r)
for t in r: v[t["index"]]=t["probability"]
print(json.dumps(v))' $k 2>>rtl.err) || { ok=0; break; }
        same_probs "$want" "$(ort_output ort.jsonl $k "$out")" >>cmp.log 2>&1 || ok=0
    done
    if [ $ok = 1 ]; then t_ok "$model $out = rtl run $var $* (1e-5, same top-1)"
    else t_fail "$model $out = rtl run $var $* (1e-5, same top-1)" "$(tail -n 3 cmp.log rtl.err)"; fi
}

# ---- early exits (the fixture of rtl_exits.sh) ----
"$BIN/dataset" generate --out "$T" --name s --seed 3 --size 16 --train 2 --valid 1 --test 1 \
    --no-contexts --threads 1 >/dev/null 2>&1 || t_fail "fixture data set"
printf '[net]\nbatch=8\nwidth=16\nheight=16\nchannels=3\n\n[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nbatch_normalize=1\nactivation=relu\n\n' >ee.cfg
printf '[maxpool]\nsize=2\nstride=2\n\n[convolutional]\nfilters=32\nsize=3\npad=1\nactivation=relu\n\n' >>ee.cfg
printf '[maxpool]\nsize=2\nstride=2\n\n[connected]\noutput=48\nactivation=linear\n\n[softmax]\n' >>ee.cfg
"$TOOL" weights ee.cfg 5 ee.weights
"$P" early-exit --cfg ee.cfg --weights ee.weights --data s/s.data --seed 4 --set batch=8 --set stage1=8 \
    --set finetune=3 --set width=2 --set layers=1 --set pool_to=2 --set trunk_prune=1 --set trunk_macs=0.7 \
    --set trunk_retrain=3 --set sbs_images=16 --out e >ee.log 2>&1 || t_fail "prune early-exit" "$(tail -n 3 ee.log)"
mkdir -p ve/ee && cp e/variant.cfg e/exits.cfg e/exits.weights ve/ee/ && cp e/init.weights ve/ee/variant.weights
printf '{"schema":1,"id":"ee","model":"eenet","technique":"early-exit","parent":null,"depends_on":[],"description":"ee",
 "task":"identity","files":[{"role":"cfg","path":"variant.cfg"},{"role":"weights","path":"variant.weights"},
 {"role":"exits_cfg","path":"exits.cfg"},{"role":"exits_weights","path":"exits.weights"}],
 "accuracy":{},"technique_fields":%s,"cost":%s}\n' "$(jq -c .technique_fields e/meta.json)" \
    "$("$BIN/trainer" info --json e/variant.cfg)" >ve/ee/variant.json
expect_ok "export the early-exit variant" "$CAT" export --onnx ve -o oe
mkdir -p vm && cp -r ve/ee vm/ && sed -i 's/^\[exit\]$/[exit]\nconfidence=margin/' vm/ee/exits.cfg
expect_fail "exits with confidence=margin are refused (the graph computes the entropy measure)" "confidence=margin" \
    "$CAT" export --onnx vm -o om
nexits=$(grep -c '^\[exit\]' ve/ee/exits.cfg)
t_check "one probs and one conf output per exit ($nexits), and the trunk's" "$onnx_py" -c '
import onnx, sys; n = int(sys.argv[1]); o = [x.name for x in onnx.load("oe/ee.onnx").graph.output]
sys.exit(o != ["probs"] + [s % j for j in range(n) for s in ("exit%d_probs", "exit%d_conf")])' "$nexits"
install ee ve s/s.names eenet && {
    against ee ee oe/ee.onnx exit0_probs --alpha 0
    against ee ee oe/ee.onnx probs --alpha 1e6
    node "$ORT_JS" run oe/ee.onnx "${raws[@]}" >ort-ee.jsonl
    "$BIN/rtl" --root root-ee run eenet ee "${bmps[@]}" --json --threads 1 >rtl-ee.json
    t_check "the exported confidences pick the exit rtl answers at (alpha 1), and are Conf(probs)" python3 - "$nexits" <<'PY'
import json, math, sys
n = int(sys.argv[1])
th = [float(l.split("=")[1]) for l in open("ve/ee/exits.cfg") if l.replace(" ", "").startswith("threshold=")]
assert len(th) == n, th
rtl = json.load(open("rtl-ee.json"))["results"]
for line, r in zip(open("ort-ee.jsonl"), rtl):
    o = json.loads(line)["outputs"]
    pick = n
    for j in range(n):
        y = o["exit%d_probs" % j]
        conf = min(1, max(0, 1 + sum(p * math.log(p) for p in y if p > 0) / math.log(len(y))))
        assert abs(conf - o["exit%d_conf" % j][0]) < 1e-5, (conf, o["exit%d_conf" % j])
        if pick == n and o["exit%d_conf" % j][0] > th[j]: pick = j
    assert r.get("exit", n) == pick or (pick == n and r.get("answered_by") == "final"), (r, pick)
PY
}

# ---- nested capacities (the fixture of rtl_nested.sh) ----
. "$TOP/tests/integration/prune/nest.sh"
mkdir -p n && nest_fixture n && "$P" grow --roadmap n/rm/roadmap.json --data n/data/tiny.data --seed 1 --set batches=5 \
    --out n/g >grow.log 2>&1 || t_fail "prune grow" "$(tail -n 3 grow.log)"
files=$(nest_variant_files n/g vn/nest) || t_fail "nested variant files"
printf '{"schema":1,"id":"nest","model":"tiny","technique":"nested","parent":null,"depends_on":[],"description":"n",
 "task":"identity","files":%s,
 "accuracy":{},"technique_fields":%s,"cost":%s}\n' "$files" "$(jq -c .technique_fields n/g/meta.json)" \
    "$("$BIN/trainer" info --json n/g/variant.cfg)" >vn/nest/variant.json
ncap=$(jq '.technique_fields.capacities | length' n/g/meta.json)
expect_ok "export the nested variant" "$CAT" export --onnx vn -o on
t_check "one file per capacity ($ncap)" test "$(ls on/nest.cap*.onnx | wc -l)" = "$ncap"
install nest vn n/data/labels.txt tiny && for k in $(seq 1 "$ncap"); do
    against nest nest on/nest.cap$k.onnx probs --capacity $k
done
t_check "capacities 1 and $ncap are different networks" sh -c "! cmp -s on/nest.cap1.onnx on/nest.cap$ncap.onnx"

# ---- heads on a shared trunk (the fixture of rtl_tasks.sh) ----
mkdir -p h && cd h || exit 1
. "$TOP/tests/integration/rtl/tasks.sh"
base48_cfg base.cfg 8 16 batch=8 subdivisions=1 width=16 height=16 channels=3 \
    learning_rate=0.05 momentum=0.9 decay=0.0005 max_batches=6
if tasks_fixture base.cfg; then
    V=c/variants
    "$P" retarget --cfg base.cfg --weights $V/base/variant.weights --tasks s/s.tasks --cut L3 \
        --set batches=10 --set aug_passes=0 --seed 1 --out heads >retarget.log 2>&1 || t_fail "prune retarget" "$(tail -n 3 retarget.log)"
    "$P" retarget --cfg base.cfg --weights $V/base/variant.weights --tasks s/s.tasks --cut L1 \
        --head maxpool,size=2,stride=2 --set batches=10 --set aug_passes=0 --seed 1 --out heads1 >retarget1.log 2>&1 ||
        t_fail "prune retarget at L1" "$(tail -n 3 retarget1.log)"
    rm -rf heads/texture && cp -r heads1/texture heads/texture
    tasks_head_variants heads
    cd "$T" || exit 1
    expect_ok "export the base and its heads" "$CAT" export --onnx h/c/variants -o oh
    t_check "the shared trunk's graph has one output per task" "$onnx_py" -c '
import onnx, sys; o = sorted(x.name for x in onnx.load("oh/base.tasks.onnx").graph.output)
sys.exit(o != ["colour", "identity", "shape", "size", "texture"])'
    t_check "the trunk is in it once (one first convolution)" "$onnx_py" -c '
import onnx, sys; n = onnx.load("oh/base.tasks.onnx").graph.node
sys.exit(sum(1 for x in n if x.op_type == "Conv") >= sum(1 for x in onnx.load("oh/base.onnx").graph.node if x.op_type == "Conv") + 4 * 2)' 
    s=h/s
    install tasks h/c/variants $s/s.names tiny shape=$s/s-shape.names colour=$s/s-colour.names size=$s/s-size.names \
        texture=$s/s-texture.names && {
        against tasks base oh/base.tasks.onnx identity
        for k in shape colour size texture; do
            against tasks head-$k oh/base.tasks.onnx $k
            against tasks head-$k oh/head-$k.onnx probs
        done
    }
else
    cd "$T" || exit 1
fi

if [ -n "$onnx_py" ]; then
    expect_ok "onnx.checker accepts every file" onnx_check oe/*.onnx on/*.onnx oh/*.onnx
else
    t_skip "onnx.checker accepts every file" "no python3 with the onnx module (Debian: python3-onnx; make deps)"
fi
t_done
