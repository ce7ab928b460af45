#!/usr/bin/env bash
# The variant stage's catalog commands on real prune variants: cost (the
# model from cfg text), profile (measured), describe (variant.json) and the
# variants table; their errors.
. "$TOP/tests/lib.sh"
P=$BIN/prune
C=$BIN/catalog
TOOL=$TESTD/tools/prune-testtool

t_small_cfg >"$T/base.cfg"
"$TOOL" weights "$T/base.cfg" 9 "$T/base.weights" || { t_fail "fixture weights"; t_done; exit 0; }

V=$T/variants
mkdir -p "$V/base"
cp "$T/base.cfg" "$V/base/variant.cfg"
cp "$T/base.weights" "$V/base/variant.weights"
expect_ok "derive a rewrite" "$P" rewrite --cfg "$T/base.cfg" --weights "$T/base.weights" \
    --spec 'stride2:conv#1+fcdiv4:fc#1' --seed 1 --out "$V/rw"
expect_ok "derive an SVD" "$P" svd --cfg "$T/base.cfg" --weights "$T/base.weights" --spec 'fc#1:8x' --out "$V/svd"
for v in rw svd; do cp "$V/$v/init.weights" "$V/$v/variant.weights"; done

# The top-level value of KEY in a JSON file printed by catalog (keys at
# DEPTH tabs).
top() { grep -P "^\t{$3}\"$2\":\t" "$1" | head -n1 | tr -dc '0-9'; }

i=0
for v in base rw svd; do
    i=$((i + 1))
    expect_ok "profile $v" "$C" profile --cfg "$V/$v/variant.cfg" --weights "$V/$v/variant.weights" \
        --runs 3 --out "$V/$v/profile.json"
    expect_ok "cost $v" "$C" cost --cfg "$V/$v/variant.cfg" --out "$T/$v.cost.json"
    for k in macs params weight_bytes peak_activation_bytes; do
        a=$(top "$T/$v.cost.json" $k 1) b=$(top "$V/$v/profile.json" $k 2)
        if [ -n "$a" ] && [ "$a" = "$b" ]; then t_ok "$v: $k of the cost model equals the profile ($a)"
        else t_fail "$v: $k of the cost model equals the profile" "model '$a', profile '$b'"; fi
    done
    t_check "$v: latency is measured" grep -q '"source":[[:space:]]*"measured"' "$V/$v/profile.json"
    # (svd's has no "classes": describe takes the network's output size)
    if [ $v = svd ]; then cls=''; else cls='"classes":4,'; fi
    printf '{"split":"test","images":40,%s"top1":0.%d5,"top5":1}\n' "$cls" $((9 - i)) >"$V/$v/eval.json"
done
expect_ok "describe base" "$C" describe "$V/base" --id base --model tiny --task identity \
    --eval "$V/base/eval.json" --profile "$V/base/profile.json" --technique base
for v in rw svd; do
    expect_ok "describe $v" "$C" describe "$V/$v" --id "$v" --model tiny --task identity \
        --eval "$V/$v/eval.json" --profile "$V/$v/profile.json" --meta "$V/$v/meta.json"
done
t_check "base has no parent" grep -q '"parent":[[:space:]]*null' "$V/base/variant.json"
t_check "svd's parent is base" grep -q '"parent":[[:space:]]*"base"' "$V/svd/variant.json"
t_check "svd keeps its technique fields" grep -q '"connected_params_after"' "$V/svd/variant.json"
t_check "top5 is dropped with 4 classes (eval.json's)" bash -c "! grep -q top5 '$V/rw/variant.json'"
t_check "top5 is dropped with 4 classes (the network's outputs)" bash -c "! grep -q top5 '$V/svd/variant.json'"
expect_ok "variants table" "$C" variants "$V"
t_check "the table starts with base" bash -c "sed -n 2p '$T/out' | grep -q '^base '"
t_check "the table lists the SVD variant" grep -Eq '^svd +svd ' "$T/out"
t_check "the table shows the top-1 change" grep -Eq '^rw .* -10\.00 ' "$T/out"

# describe reads what `trainer valid --json` writes
"$TOOL" images "$T/data" 8 16 2 || t_fail "fixture images"
mkdir -p "$T/two"
sed 's/^output=4$/output=2/' "$T/base.cfg" >"$T/two/variant.cfg"
"$TOOL" weights "$T/two/variant.cfg" 3 "$T/two/variant.weights" || t_fail "fixture weights (2 classes)"
if "$BIN/trainer" valid --cfg "$T/two/variant.cfg" --weights "$T/two/variant.weights" \
    --data "$T/data/tiny.data" --split test --json >"$T/two/eval.json" 2>"$T/err"; then
    t_ok "trainer valid --json"
    expect_ok "profile (2 classes)" "$C" profile --cfg "$T/two/variant.cfg" --weights "$T/two/variant.weights" \
        --runs 1 --out "$T/two/profile.json"
    expect_ok "describe takes trainer valid's JSON" "$C" describe "$T/two" --id two --model tiny \
        --task identity --eval "$T/two/eval.json" --profile "$T/two/profile.json" --technique base
    t_check "the accuracy is trainer valid's" grep -q '"images":[[:space:]]*4' "$T/two/variant.json"
else
    t_fail "trainer valid --json" "$(tail -n 3 "$T/err")"
fi

# errors
expect_fail "describe: a bad id breaks the schema" "variant.schema.json.*/id" \
    "$C" describe "$V/svd" --id 'SVD!' --model tiny --task identity \
    --eval "$V/svd/eval.json" --profile "$V/svd/profile.json" --meta "$V/svd/meta.json"
mkdir -p "$T/empty"
expect_fail "describe: no weights in the folder" "variant.cfg is missing" \
    "$C" describe "$T/empty" --id x --model tiny --task identity \
    --eval "$V/svd/eval.json" --profile "$V/svd/profile.json" --technique base
t_check "describe wrote nothing on failure" test ! -e "$T/empty/variant.json"
echo '{"split":"test","images":40}' >"$T/noacc.json"
expect_fail "describe: eval without top1" "top1" "$C" describe "$V/rw" --id rw --model tiny --task identity \
    --eval "$T/noacc.json" --profile "$V/rw/profile.json" --meta "$V/rw/meta.json"
echo '{"images":40,"classes":10,"top1":0.5}' >"$T/notop5.json"
expect_fail "describe: more than 5 classes need top5" "top5.*10 classes" "$C" describe "$V/rw" --id rw \
    --model tiny --task identity --eval "$T/notop5.json" --profile "$V/rw/profile.json" --meta "$V/rw/meta.json"
expect_fail "describe: meta and technique together" "^catalog describe: give one of --meta and --technique" \
    "$C" describe "$V/rw" --id rw --model tiny --task identity --eval "$V/rw/eval.json" \
    --profile "$V/rw/profile.json" --meta "$V/rw/meta.json" --technique base
expect_fail "profile: weights of another network" "weights" \
    "$C" profile --cfg "$V/rw/variant.cfg" --weights "$V/svd/variant.weights" --out "$T/p.json"
t_check "profile wrote nothing on failure" test ! -e "$T/p.json"
expect_fail "profile: bad --runs" "--runs needs a whole number in 0..100000, not '-1'" \
    "$C" profile --cfg "$V/rw/variant.cfg" --weights "$V/rw/variant.weights" --runs -1 --out "$T/p.json"
expect_fail "profile: bad --runs" "--runs needs a whole number in 0..100000, not 'x'" \
    "$C" profile --cfg "$V/rw/variant.cfg" --weights "$V/rw/variant.weights" --runs x --out "$T/p.json"
# --runs 0 (make PROFILE_RUNS=0): costs counted, no latency measured.
expect_ok "profile --runs 0" \
    "$C" profile --cfg "$V/rw/variant.cfg" --weights "$V/rw/variant.weights" --runs 0 --out "$T/p0.json"
t_check "profile --runs 0 writes the costs and an empty latency object" python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["latency"] == {} and p["cost"]["macs"] > 0' "$T/p0.json"
printf '[net]\nwidth=8\nheight=8\nchannels=3\n[yolo]\n' >"$T/yolo.cfg"
expect_fail "cost: unknown section" "yolo.cfg:5" "$C" cost --cfg "$T/yolo.cfg"
expect_ok "cost --help" "$C" cost --help
expect_ok "profile --help" "$C" profile --help
expect_ok "describe --help" "$C" describe --help
expect_ok "variants --help" "$C" variants --help
t_done
