#!/usr/bin/env bash
# catalog export --onnx (issue 42 items 1-2) on every layer kind and every
# activation: each exported model passes onnx.checker (python3-onnx) and, in
# ONNX Runtime (npm onnxruntime-node, tests/onnx/ort.js), gives the engine's
# forward (prune-testtool forward) within 1e-5 with the same top-1, batch
# norm folded and explicit. A layer ONNX cannot express here is refused with
# its name and cfg line; without -o the files land in the variant folders,
# variant.json lists them (role onnx) and catalog pack puts them, with their
# SHA-256, into the manifest.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/onnx.sh"
cd "$T" || exit 1
CAT=$BIN/catalog
TOOL=$TESTD/tools/prune-testtool

# variant DIR ID TECHNIQUE: a variant.json listing variant.cfg and variant.weights
variant() {
    printf '{"schema":1,"id":"%s","model":"kinds","technique":"%s","parent":null,"depends_on":[],"description":"%s",
 "task":"identity","files":[{"role":"cfg","path":"variant.cfg"},{"role":"weights","path":"variant.weights"}],
 "accuracy":{},"technique_fields":{},"cost":%s}\n' "$2" "$3" "$2" "$("$BIN/trainer" info --json "$1/variant.cfg")" >"$1/variant.json"
}
# Every layer kind the engine has (TRN_LAYER_KINDS; [exit] in catalog_onnx_variants.sh):
# Darknet's maxpool geometry (odd input, default padding, stride 1 too), grouped and
# strided convolutions, explicit padding, a scaled shortcut, a route, dropout, crop,
# global average pooling, connected layers with batch norm, a grouped softmax with a
# temperature, and a cost layer.
mkdir -p v/kinds
cat >v/kinds/variant.cfg <<'CFG'
[net]
batch=1
width=17
height=17
channels=3

[convolutional]
filters=8
size=3
stride=1
pad=1
batch_normalize=1
activation=leaky

[maxpool]
size=3
stride=2

[convolutional]
filters=8
size=3
stride=1
pad=1
groups=2
activation=relu

[shortcut]
from=-2
activation=linear
alpha=0.5
beta=2

[route]
layers=-1,-3

[convolutional]
filters=8
size=1
stride=1
pad=0
activation=logistic

[maxpool]
size=2
stride=1

[dropout]
probability=0.3

[crop]
crop_height=6
crop_width=6

[convolutional]
filters=6
size=3
stride=2
padding=1
activation=elu

[avgpool]

[connected]
output=12
batch_normalize=1
activation=tanh

[connected]
output=10
activation=linear

[softmax]
groups=2
temperature=2

[cost]
CFG
# Every activation but stair, one batch-normalised convolution each.
mkdir -p v/acts
{
    printf '[net]\nbatch=1\nwidth=8\nheight=8\nchannels=3\n'
    for a in linear relu leaky logistic tanh elu ramp loggy relie plse hardtan lhtan selu; do
        printf '\n[convolutional]\nfilters=6\nsize=3\nstride=1\npad=1\nbatch_normalize=1\nactivation=%s\n' $a
    done
    printf '\n[connected]\noutput=5\nactivation=linear\n\n[softmax]\n'
} >v/acts/variant.cfg
for id in kinds acts; do
    "$TOOL" weights v/$id/variant.cfg 7 v/$id/variant.weights || t_fail "fixture weights of $id"
    variant v/$id $id base
done

expect_ok "export every variant" "$CAT" export --onnx v -o fold
t_check "one file per variant" test -s fold/kinds.onnx -a -s fold/acts.onnx
expect_ok "export with batch norm as nodes" "$CAT" export --onnx v -o explicit --bn explicit
expect_ok "the same bytes when exported again" "$CAT" export --onnx v -o again
t_check "deterministic" cmp -s fold/kinds.onnx again/kinds.onnx
if [ -n "$onnx_py" ]; then
    expect_ok "onnx.checker accepts every file" onnx_check fold/*.onnx explicit/*.onnx
else
    t_skip "onnx.checker accepts every file" "no python3 with the onnx module (Debian: python3-onnx; make deps)"
fi

if ort_ready; then
    mkinputs in 3 3 17 1
    mkinputs in8 3 3 8 2
    for id in kinds acts; do
        side=17 d=in; [ $id = acts ] && side=8 d=in8
        for bn in fold explicit; do
            node "$ORT_JS" run $bn/$id.onnx $d/in_0.raw $d/in_1.raw $d/in_2.raw >ort-$id-$bn.jsonl 2>ort.err ||
                t_fail "ONNX Runtime runs $id ($bn)" "$(tail -n 3 ort.err)"
            ok=1
            for k in 0 1 2; do
                "$TOOL" forward v/$id/variant.cfg v/$id/variant.weights $d/in_$k.raw ref-$id-$k.raw
                same_probs ref-$id-$k.raw "$(ort_output ort-$id-$bn.jsonl $k probs)" >>cmp.log 2>&1 || ok=0
            done
            t_check "$id ($bn batch norm): ONNX Runtime = the engine within 1e-5, same top-1" test $ok = 1
        done
    done
else
    t_skip "ONNX Runtime against the engine" "$ORT_WHY"
fi

# Refusals name the layer and its cfg line.
mkdir -p r/stair r/sub
printf '[net]\nbatch=1\nwidth=8\nheight=8\nchannels=3\n\n[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=stair\n' >r/stair/variant.cfg
printf '[net]\nbatch=1\nwidth=8\nheight=8\nchannels=3\n\n[convolutional]\nfilters=4\nsize=3\npad=1\nactivation=relu\n\n' >r/sub/variant.cfg
printf '[convolutional]\nfilters=4\nsize=3\nstride=2\npad=1\nactivation=relu\n\n[shortcut]\nfrom=-2\nactivation=linear\n' >>r/sub/variant.cfg
for id in stair sub; do "$TOOL" weights r/$id/variant.cfg 1 r/$id/variant.weights; variant r/$id $id base; done
expect_fail "stair is refused with its layer and line" \
    'variant stair: cannot express layer 0 \[convolutional\] \(.*r/stair/variant.cfg:7\) in ONNX: activation .stair.' \
    "$CAT" export --onnx r --id stair -o rout
expect_fail "a sub-sampled shortcut is refused with its layer and line" \
    'cannot express layer 2 \[shortcut\] \(.*variant.cfg:20\) in ONNX: it adds a layer of another shape' \
    "$CAT" export --onnx r --id sub -o rout
expect_fail "an unknown variant id is an error" "no variant 'nope'" "$CAT" export --onnx v --id nope -o rout
expect_fail "export without --onnx or --darknet is a usage error" "give --onnx or --darknet" "$CAT" export v

# Into the variant folders: listed in variant.json and packed with their hashes.
expect_ok "export into the variant folders" "$CAT" export --onnx v
t_check "variant.json lists the file (role onnx)" \
    python3 -c 'import json,sys; f=json.load(open("v/kinds/variant.json"))["files"]; sys.exit(not {"role":"onnx","path":"kinds.onnx"} in f)'
expect_ok "exported twice: listed once" "$CAT" export --onnx v
t_check "listed once" test "$(grep -c '"onnx"' v/kinds/variant.json)" = 1
"$CAT" keygen -p k.pub -s k.key -W >/dev/null 2>&1
seq 0 9 >labels.txt
expect_ok "catalog pack" "$CAT" pack v -o pkg --task identity=labels.txt --version 1 --key k.key --no-targets
t_check "the manifest holds the ONNX file with its size and SHA-256" python3 - <<'PY'
import json, hashlib, sys
m = json.load(open("pkg/manifest.json"))
v = [x for x in m["variants"] if x["id"] == "kinds"][0]
f = [x for x in v["files"] if x["role"] == "onnx"][0]
b = open("v/kinds/kinds.onnx", "rb").read()
sys.exit(not (f["path"] == "variants/kinds/kinds.onnx" and f["sha256"] == hashlib.sha256(b).hexdigest() and f["size"] == len(b)))
PY
mkdir -p bad/x && cp v/kinds/* bad/x/ && sed -i 's/"id":[[:space:]]*"kinds"/"id":"x"/' bad/x/variant.json
mv bad/x/kinds.onnx bad/x/kinds.bin && sed -i 's/kinds\.onnx/kinds.bin/' bad/x/variant.json
expect_fail "the schema refuses an onnx file whose name does not end in .onnx" \
    "/files/[0-9]+/path: 'kinds.bin' does not match the pattern" \
    "$CAT" pack bad -o badpkg --task identity=labels.txt --version 1 --key k.key --no-targets
t_done
