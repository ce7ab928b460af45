#!/usr/bin/env bash
# Integration test of the synthetic set: the same seed gives the same bytes
# (whatever the thread count), through the CLI and through `make dataset`,
# which also must not regenerate a set that is current.
. "$TOP/tests/lib.sh"

small=(--size 16 --train 4 --valid 2 --test 2 --context-n 7,14 --context-p 0.6,0.9)

expect_ok "generate a reduced set (1 thread)" "$BIN/dataset" generate --out "$T/a" --threads 1 "${small[@]}"
expect_ok "generate it again (2 threads)" "$BIN/dataset" generate --out "$T/b" --threads 2 "${small[@]}"
if diff -r --no-dereference "$T/a" "$T/b" >"$T/diff" 2>&1; then
    t_ok "same seed, same bytes (images, lists, contexts and links)"
else
    t_fail "same seed, same bytes" "$(head -n 5 "$T/diff")"
fi
n=$(find "$T/a/synth/train" -name '*.png' | wc -l)
t_check "the reduced set has 48 x 4 training images ($n)" [ "$n" = 192 ]
expect_ok "another seed" "$BIN/dataset" generate --out "$T/c" --seed 2 "${small[@]}"
if diff -rq --no-dereference "$T/a" "$T/c" >/dev/null 2>&1; then
    t_fail "another seed gives other images"
else
    t_ok "another seed gives other images"
fi
# Splits share no image: no PNG content appears in two splits.
dups=$(cd "$T/a/synth" && for s in train valid test; do md5sum "$s"/*.png | awk -v s="$s" '{ print $1, s }'; done |
       sort -u | awk '{ print $1 }' | uniq -d | wc -l)
t_check "train, valid and test share no image" [ "$dups" = 0 ]
expect_ok "every task's .data passes dataset check --decode" \
    bash -c "for d in '$T'/a/synth/*.data '$T'/a/synth/contexts/*/*.data; do '$BIN/dataset' check --decode \"\$d\" || exit 1; done"

# make dataset, in a fresh build folder of its own (the outer make's flags
# and jobserver are not passed down).
mk() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TOP" --no-print-directory dataset O="$T/o" \
        DATASET_ROOT="$T/mk" DATASET_SIZE=16 DATASET_TRAIN=4 DATASET_VALID=2 DATASET_TEST=2 \
        DATASET_CONTEXT_N=7,14 DATASET_CONTEXT_P=0.6,0.9 THREADS=2 "$@"
}
expect_ok "make dataset (reduced settings)" mk
cp -a "$T/mk/synth" "$T/first"
if diff -r --no-dereference "$T/a/synth" "$T/mk/synth" >/dev/null 2>&1; then
    t_ok "make dataset gives the bytes of dataset generate with the same settings"
else
    t_fail "make dataset gives the bytes of dataset generate with the same settings"
fi
before=$(stat -c %Y.%i "$T/mk/synth/synth.data")
expect_ok "make dataset again" mk
if grep -q DATASET "$T/out"; then t_fail "a current set is not generated again" "$(cat "$T/out")"
else t_ok "a current set is not generated again"; fi
t_check "... and keeps its timestamp" [ "$(stat -c %Y.%i "$T/mk/synth/synth.data")" = "$before" ]
rm -rf "$T/mk/synth"
expect_ok "make dataset after the set was removed" mk
if diff -r --no-dereference "$T/first" "$T/mk/synth" >"$T/diff" 2>&1; then
    t_ok "make dataset twice gives identical bytes"
else
    t_fail "make dataset twice gives identical bytes" "$(head -n 5 "$T/diff")"
fi
expect_ok "make dataset with another seed" mk DATASET_SEED=5
if diff -rq --no-dereference "$T/first" "$T/mk/synth" >/dev/null 2>&1; then
    t_fail "a changed setting regenerates the set"
else
    t_ok "a changed setting regenerates the set"
fi
expect_fail "a bad setting stops make with a message" "DATASET_SIZE='abc' is not valid" mk DATASET_SIZE=abc

# An existing set (DATA=): checked and given contexts, never written.
cp -a "$T/a/synth" "$T/mine"
expect_ok "make dataset DATA=<an existing set>" mk DATA="$T/mine/synth.data"
t_check "  ... writes its contexts under DATASET_ROOT" [ -f "$T/mk/synth-contexts/n14-p0.9/n14-p0.9.data" ]
if diff -r --no-dereference "$T/a/synth" "$T/mine" >/dev/null 2>&1; then t_ok "  ... and leaves the set as it was"
else t_fail "  ... and leaves the set as it was"; fi
expect_fail "make dataset DATA=<no such file>" "DATA=.*nothing.data: no such file" mk DATA="$T/nothing.data"

# An import (IMPORT= SRC=): a CIFAR-10 folder made here.
mkdir -p "$T/cifar"
for b in 1 2 3 4 5; do head -c $((3073 * 4)) /dev/zero >"$T/cifar/data_batch_$b.bin"; done
head -c $((3073 * 3)) /dev/zero >"$T/cifar/test_batch.bin"
printf '%s\n' airplane automobile bird cat deer dog frog horse ship truck >"$T/cifar/batches.meta.txt"
expect_ok "make dataset IMPORT=cifar10 SRC=<folder>" mk IMPORT=cifar10 SRC="$T/cifar"
t_check "  ... gives build/data/cifar10/cifar10.data" [ -f "$T/mk/cifar10/cifar10.data" ]
expect_ok "  ... which passes dataset check --decode" "$BIN/dataset" check --decode "$T/mk/cifar10/cifar10.data"
t_done
