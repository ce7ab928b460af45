#!/usr/bin/env bash
# The parsers that read what another machine sends, under libFuzzer with
# ASan and UBSan, briefly (`make fuzz` runs each for FUZZ_TIME seconds): the
# peer protocol's frames and messages (tests/fuzz/rtl_frame_fuzz.c) and rtl
# pull's signed index and manifest with the duplicate-key check
# (tests/fuzz/rtl_json_fuzz.c). Skipped, saying why, when clang is not
# installed.
. "$TOP/tests/lib.sh"
# fuzz NAME HARNESS CORPUS MAX-LEN
fuzz() {
    local name=$1 bin=$TESTD/fuzz/$2 seeds=$TOP/tests/fuzz/$3 max=$4
    if [ ! -x "$bin" ]; then
        t_skip "fuzz the $name" "clang (libFuzzer) is not installed: make deps installs it"
        return
    fi
    mkdir -p "$T/$3"
    if "$bin" -max_total_time=${RTL_FUZZ_SECONDS:-8} -max_len="$max" "$T/$3" "$seeds" >"$T/$2.log" 2>&1; then
        t_ok "$name: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$T/$2.log") clean under ASan/UBSan"
    else
        t_fail "$name fuzzing found a failure" "$(tail -n 30 "$T/$2.log")"
    fi
}
fuzz "frame parser" rtl_frame_fuzz corpus 4096
fuzz "index and manifest parsers" rtl_json_fuzz json-corpus 16384
t_done
