#!/usr/bin/env bash
# The peer protocol's frame and message parsers under libFuzzer with ASan
# and UBSan (tests/fuzz/rtl_frame_fuzz.c), briefly: `make fuzz` runs it for
# FUZZ_TIME seconds. Skipped, saying why, when clang is not installed.
. "$TOP/tests/lib.sh"
FUZZ=$TESTD/fuzz/rtl_frame_fuzz
if [ ! -x "$FUZZ" ]; then
    t_skip "fuzz the frame parser" "clang (libFuzzer) is not installed: make deps installs it"
    t_done
    exit 0
fi
mkdir -p "$T/corpus"
if "$FUZZ" -max_total_time=${RTL_FUZZ_SECONDS:-8} -max_len=4096 "$T/corpus" "$TOP/tests/fuzz/corpus" >"$T/fuzz.log" 2>&1; then
    t_ok "frame parser: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$T/fuzz.log") clean under ASan/UBSan"
else
    t_fail "frame parser fuzzing found a failure" "$(tail -n 30 "$T/fuzz.log")"
fi
t_done
