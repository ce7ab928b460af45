#!/usr/bin/env bash
# Integration test: a generator killed while it writes never leaves a set
# that later steps trust, and never damages the set that was there.
. "$TOP/tests/lib.sh"

big=(--size 64 --train 60 --valid 10 --test 10 --threads 1)

# Starts the generator in the background and kills it (SIGKILL) once it has
# written some images into its temporary folder. Prints "killed" or why not.
kill_midway() { # OUT ARGS...
    local out=$1; shift
    "$BIN/dataset" generate --out "$out" "$@" >/dev/null 2>&1 &
    local pid=$! i
    for i in $(seq 1 600); do
        if [ "$(find "$out" -path '*/.synth.tmp.*' -name '*.png' 2>/dev/null | head -n 20 | wc -l)" -ge 20 ]; then
            kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; echo killed; return
        fi
        kill -0 "$pid" 2>/dev/null || { wait "$pid"; echo "finished before it could be killed"; return; }
        sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; echo "never started writing"
}

r=$(kill_midway "$T/k" "${big[@]}")
if [ "$r" = killed ]; then
    t_ok "the generator was killed while writing images"
    t_check "no set is left under its real name" [ ! -e "$T/k/synth" ]
    expect_fail "dataset check finds nothing to trust" "synth.data" "$BIN/dataset" check "$T/k/synth/synth.data"
    left=$(ls -a "$T/k" | grep -c '^\.synth\.tmp\.' || true)
    t_check "only a hidden temporary folder remains ($left)" [ "$left" = 1 ]
else
    t_fail "the generator was killed while writing images" "$r"
fi

small=(--size 16 --train 3 --valid 1 --test 1 --context-n 7 --context-p 0.8)
expect_ok "the next run completes" "$BIN/dataset" generate --out "$T/k" "${small[@]}"
left=$(ls -a "$T/k" | grep -c '^\.synth\.tmp\.' || true)
t_check "and removes what the killed run left ($left)" [ "$left" = 0 ]
expect_ok "the new set passes dataset check" "$BIN/dataset" check "$T/k/synth/synth.data"

# Killed while replacing an existing set: the old set stays, byte for byte.
cp -a "$T/k/synth" "$T/before"
r=$(kill_midway "$T/k" "${big[@]}" --seed 7)
if [ "$r" = killed ]; then
    if diff -r --no-dereference "$T/before" "$T/k/synth" >"$T/diff" 2>&1; then
        t_ok "a killed regeneration leaves the old set as it was"
    else
        t_fail "a killed regeneration leaves the old set as it was" "$(head -n 5 "$T/diff")"
    fi
else
    t_fail "the regeneration was killed while writing images" "$r"
fi

# A failed import (truncated input) leaves nothing either.
mkdir -p "$T/cifar"
for b in 1 2 3 4 5; do head -c $((3073 * 3)) /dev/zero >"$T/cifar/data_batch_$b.bin"; done
head -c $((3073 * 2 - 7)) /dev/zero >"$T/cifar/test_batch.bin"
printf '%s\n' airplane automobile bird cat deer dog frog horse ship truck >"$T/cifar/batches.meta.txt"
expect_fail "a truncated CIFAR batch is refused with its byte offset" \
    "test_batch.bin: file ends at byte offset 6139 inside record 1" \
    "$BIN/dataset" import cifar10 "$T/cifar" --out "$T/imp"
t_check "and nothing is written" [ -z "$(ls -A "$T/imp" 2>/dev/null)" ]
t_done
