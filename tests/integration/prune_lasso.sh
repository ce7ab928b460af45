#!/usr/bin/env bash
# MeDNN's SMCD through the CLIs: `trainer train` with the group-lasso keys
# zeroes whole filters, `prune lasso` exports a smaller dense model that
# classifies the test split exactly as the trained one does, and the errors
# name the problem (exit 1 or 2, no output folder left behind).
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/prune/layers.sh"
TR=$BIN/trainer P=$BIN/prune

expect_ok "generate a small set" "$BIN/dataset" generate --out "$T" --name s --size 16 --train 6 \
    --valid 1 --test 3 --no-contexts --threads 1
{
    cat <<'CFG'
[net]
batch=32
width=16
height=16
channels=3
learning_rate=0.1
momentum=0.9
decay=0.0005
policy=constant
max_batches=40
min_crop=16
max_crop=16
CFG
    bn_blocks 16 16
    printf '\n'
    cat <<'CFG'
[connected]
output=48
activation=linear

[softmax]
CFG
} >"$T/net.cfg"
expect_ok "train with the group lasso" "$TR" train --cfg "$T/net.cfg" --data "$T/s/s.data" --seed 1 \
    --backup "$T/b" --quiet --threads 1 --set lasso_filter=0.4 --set lasso_channel=0.02
expect_ok "export it" "$P" lasso --cfg "$T/net.cfg" --weights "$T/b/net.weights" --out "$T/v"
f1=$(awk -F= '$1=="filters"{print $2}' "$T/v/variant.cfg" | head -1)
f2=$(awk -F= '$1=="filters"{print $2}' "$T/v/variant.cfg" | sed -n 2p)
t_check "filters were removed (16,16 -> $f1,$f2)" test $((f1 + f2)) -lt 32
t_check "meta.json names the technique and the MACs" \
    grep -q '"technique":"lasso".*"macs_after"' <(tr -d ' \n\t' <"$T/v/meta.json")
"$TR" valid --cfg "$T/net.cfg" --weights "$T/b/net.weights" --data "$T/s/s.data" --split test \
    --threads 1 --json >"$T/a.json"
"$TR" valid --cfg "$T/v/variant.cfg" --weights "$T/v/init.weights" --data "$T/s/s.data" --split test \
    --threads 1 --json >"$T/c.json"
same() { python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); sys.exit(0 if a["top1"]==b["top1"] and a["confusion"]==b["confusion"] else 1)' "$@"; }
t_check "the exported model classifies the test split exactly as the trained one" same "$T/a.json" "$T/c.json"

# Issue 34 item 6's baseline: L1 filter pruning of the trained network to
# the export's per-layer counts (prune l1 --like), then the study script on
# a catalog folder made of the two: the L1 variant retrained with the
# lasso variant's plan settings and paired with it on the test split.
expect_ok "L1 pruning to the export's counts" "$P" l1 --cfg "$T/net.cfg" --weights "$T/b/net.weights" \
    --like "$T/v/variant.cfg" --out "$T/l1"
t_check "the L1 variant has the export's filter counts" \
    cmp -s <(awk -F= '$1=="filters"' "$T/v/variant.cfg") <(awk -F= '$1=="filters"' "$T/l1/variant.cfg")
t_check "its meta.json says how it was pruned" \
    grep -q '"technique":"pruned".*"method":"l1"' <(tr -d ' \n\t' <"$T/l1/meta.json")
M=$T/m
mkdir -p "$M/variants/base" "$M/variants/v" "$M/plan"
cp "$T/net.cfg" "$M/variants/base/variant.cfg" && cp "$T/b/net.weights" "$M/variants/base/variant.weights"
cp "$T/v/variant.cfg" "$M/variants/v/" && cp "$T/c.json" "$M/variants/v/eval.json"
"$TR" valid --cfg "$T/v/variant.cfg" --weights "$T/v/init.weights" --data "$T/s/s.data" --split test \
    --threads 1 --predictions "$M/variants/v/eval.predictions" >/dev/null
echo 'lasso | max_batches=3 learning_rate=0.01 |  | lasso lasso_filter=0.4 max_batches=40 | seed 1' >"$M/plan/v.plan"
expect_ok "the study: L1 at the lasso variant's counts, retrained alike" env BIN="$BIN" NICE=0 \
    recipes/alexnet/studies/l1_same_counts.sh "$M" v "$T/s/s.data" "$T/study"
t_check "retrained with the plan's budget" grep -q '"batch":3,' "$T/study/v-l1/train/variant.metrics.jsonl"
t_check "paired with the lasso variant on the test split" python3 -c '
import json, sys
l1, v = (json.load(open(f)) for f in sys.argv[1:])
a, n = l1["against"], v["images"]
assert a["images"] == n and a["only_this"] + a["only_against"] <= n and 0 < a["p"] <= 1, a
assert abs(a["difference"] - (l1["top1"] - v["top1"])) < 1e-5, (a, l1["top1"], v["top1"])' \
    "$T/study/v-l1.eval.json" "$M/variants/v/eval.json"
expect_fail "a variant that is not a lasso one is refused" "not a lasso variant" env BIN="$BIN" \
    bash -c "sed 's/^lasso/rewrite/' '$M/plan/v.plan' >'$M/plan/w.plan' && cp -r '$M/variants/v' '$M/variants/w' &&
    recipes/alexnet/studies/l1_same_counts.sh '$M' w '$T/s/s.data' '$T/study'"
expect_fail "a negative penalty is refused, naming the key" "lasso_filter" "$TR" train --cfg "$T/net.cfg" \
    --data "$T/s/s.data" --seed 1 --backup "$T/b2" --quiet --threads 1 --set lasso_filter=-1
expect_fail "missing weights: exit 1" "nope.weights" "$P" lasso --cfg "$T/net.cfg" --weights "$T/nope.weights" --out "$T/w"
t_check "and no output folder" test ! -e "$T/w/meta.json"
expect_fail "no --out: usage error" "--out" "$P" lasso --cfg "$T/net.cfg" --weights "$T/b/net.weights"
t_done
