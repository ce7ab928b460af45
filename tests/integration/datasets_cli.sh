#!/usr/bin/env bash
# Integration test of the `dataset` CLI: help for every verb, clear errors
# and exit statuses for bad command lines and bad sets, the import and
# contexts verbs end to end.
. "$TOP/tests/lib.sh"

D=$BIN/dataset
expect_ok "dataset --help" "$D" --help
for v in generate import contexts check; do
    expect_ok "dataset $v --help" "$D" "$v" --help
    grep -q "Usage: dataset $v" "$T/out" && t_ok "  ... prints the usage of $v" || t_fail "  ... prints the usage of $v"
    expect_ok "dataset help $v" "$D" help "$v"
done

usage() { # NAME PATTERN CMD...: exit status 2 with a message
    local name=$1 pat=$2 rc; shift 2
    "$@" >"$T/out" 2>&1; rc=$?
    if [ "$rc" = 2 ] && grep -Eq -- "$pat" "$T/out"; then t_ok "$name"
    else t_fail "$name" "exit status $rc (want 2)" "$(tail -n 3 "$T/out")"; fi
}
usage "no verb" "Usage" "$D"
usage "unknown verb" "unknown verb 'frobnicate'" "$D" frobnicate
usage "unknown option" "unrecognized option|Usage" "$D" generate --colour blue
usage "size out of range" "--size needs a whole number in 16..256, not '8'" "$D" generate --size 8
usage "bad seed" "--seed needs a non-negative integer" "$D" generate --seed -3
usage "bad context list" "bad list of p" "$D" generate --context-p 0.5,x
usage "import needs a format and a source" "expected FORMAT and SRC" "$D" import cifar10
usage "unknown import format" "unknown format 'imagenet'" "$D" import imagenet /tmp
usage "check needs a .data file" "expected one DATA file" "$D" check

# A set to work on, then damage copies of it.
expect_ok "generate a small set" "$D" generate --out "$T/s" --size 16 --train 3 --valid 1 --test 1 --no-contexts
t_check "--no-contexts writes no contexts/" [ ! -e "$T/s/synth/contexts" ]
expect_ok "check it" "$D" check "$T/s/synth/synth.data"
grep -q "train 144 images" "$T/out" && t_ok "  ... and count its images" || t_fail "  ... and count its images" "$(cat "$T/out")"
"$D" check "$T/s/synth/synth.data" --json >"$T/check.json" 2>"$T/err"
t_check "check --json: the counts per split and class" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["ok"] is True and c["decoded"] is False and c["classes"] == 48 and c["data"].endswith("synth.data"), c
s = {x["split"]: x for x in c["splits"]}
assert s["train"]["images"] == 144 and s["valid"]["images"] == 48 and s["test"]["images"] == 48, s.keys()
for x in s.values():
    assert len(x["per_class"]) == 48 and sum(p["images"] for p in x["per_class"]) == x["images"]
    assert len({p["label"] for p in x["per_class"]}) == 48
' "$T/check.json"
expect_ok "write its contexts with the contexts verb" "$D" contexts "$T/s/synth/synth.data" --context-n 7,60 --context-p 0.7
grep -q "no context with n = 60" "$T/out" && t_ok "  ... noting the n it had to skip" || t_fail "  ... noting the n it had to skip"
expect_ok "  ... which are a valid set" "$D" check "$T/s/synth/contexts/n7-p0.7/n7-p0.7.data"
# --classes: a given class set (a context a device observed) as the one context
expect_ok "contexts --classes" "$D" contexts "$T/s/synth/synth.data" --classes red-disc,blue-star,cyan-ring \
    --context-p 0.8 --out "$T/given"
t_check "  ... one context of n = 3" grep -qx 'n3-p0.8 3 0.8 n3-p0.8/n3-p0.8.data' "$T/given/contexts.list"
t_check "  ... of exactly those classes (set order)" \
    sh -c "head -n 3 '$T/given/n3-p0.8/n3-p0.8.names' | tr '\n' , | grep -qx 'red-disc,cyan-ring,blue-star,'"
expect_fail "contexts --classes with an unknown label" "'blue-stars' is not a class of" \
    "$D" contexts "$T/s/synth/synth.data" --classes red-disc,blue-stars --out "$T/given2"
t_check "  ... writes nothing" [ ! -e "$T/given2" ]
expect_fail "contexts --classes twice the same" "'red-disc' is given twice" \
    "$D" contexts "$T/s/synth/synth.data" --classes red-disc,red-disc --out "$T/given2"

cp -a "$T/s/synth" "$T/bad"
sed -i '3s/_[a-z]*-[a-z]*_/_no-such-class_/' "$T/bad/train.list"
expect_fail "an image matching no label is named with list:line" "train.list:3: .*no label matches" \
    "$D" check "$T/bad/synth.data"
cp "$T/s/synth/train.list" "$T/bad/train.list"
rm "$T/bad/$(sed -n 5p "$T/bad/train.list")"
expect_fail "a missing image is named" "entry 5 of the train list.*no such file" "$D" check "$T/bad/synth.data"
expect_fail "a missing .data file is named" "cannot open .*/nothing.data" "$D" check "$T/nothing.data"

# MNIST through the CLI: tiny idx files made here.
idx() { # FILE DIMS... then data bytes from stdin
    local f=$1; shift
    { printf '\x00\x00\x08'"\\x0$#"; for d in "$@"; do printf "\\x$(printf %02x $((d >> 24 & 255)))\\x$(printf %02x $((d >> 16 & 255)))\\x$(printf %02x $((d >> 8 & 255)))\\x$(printf %02x $((d & 255)))"; done; cat; } >"$f"
}
mkdir -p "$T/mnist"
head -c $((20 * 28 * 28)) /dev/urandom | idx "$T/mnist/train-images-idx3-ubyte" 20 28 28
printf '\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09' | idx "$T/mnist/train-labels-idx1-ubyte" 20
head -c $((10 * 28 * 28)) /dev/urandom | idx "$T/mnist/t10k-images-idx3-ubyte" 10 28 28
printf '\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09' | idx "$T/mnist/t10k-labels-idx1-ubyte" 10
expect_ok "import mnist" "$D" import mnist "$T/mnist" --out "$T/imp" --context-n 3 --context-p 0.8
expect_ok "  ... gives a set that decodes" "$D" check --decode "$T/imp/mnist/mnist.data"
grep -q "test  10 images" "$T/out" && t_ok "  ... with the 10 test images" || t_fail "  ... with the 10 test images" "$(cat "$T/out")"
t_check "  ... and its contexts" [ -f "$T/imp/mnist/contexts/n3-p0.8/n3-p0.8.data" ]
head -c 100 "$T/mnist/t10k-images-idx3-ubyte" >"$T/short" && mv "$T/short" "$T/mnist/t10k-images-idx3-ubyte"
expect_fail "a truncated idx file is refused with the file and offset" \
    "t10k-images-idx3-ubyte: file ends at byte offset 100" "$D" import mnist "$T/mnist" --out "$T/imp"
expect_ok "  ... and the set imported before is intact" "$D" check --decode "$T/imp/mnist/mnist.data"
t_done
