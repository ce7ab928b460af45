#!/usr/bin/env bash
# DETERMINISM=portable across CPU kinds: the same tiny training run (the
# trn_portable unit program's portable_training_bytes: every libm function
# the trainer uses, conv, batch norm, pooling, connected, dropout, softmax,
# 12 SGD steps) built for x86-64 and for aarch64 (run under qemu-user)
# writes the same weights bytes. The x86-64 side uses the widest fma kernel
# this CPU has (AVX-512 or AVX2, else scalar fmaf), the aarch64 side NEON.
. "$TOP/tests/lib.sh"

host=$TESTD/unit/test_trn_portable
a64=$O/aarch64-linux-gnu/tests/unit/test_trn_portable
run() { # OUT PROGRAM...
    local out=$1; shift
    TRN_PORTABLE_WEIGHTS=$out TEST_FILTER=portable_training_bytes CMOCKA_MESSAGE_OUTPUT=STDOUT \
        "$@" >"$out.log" 2>&1
}
expect_ok "the host build trains in portable mode" run "$T/host.weights" "$host"
t_check "the host run wrote its weights" test -s "$T/host.weights"
if [ ! -x "$a64" ] || ! command -v qemu-aarch64 >/dev/null; then
    t_skip "aarch64 under qemu-user writes the host's weights bytes" \
        "no aarch64 build of test_trn_portable or no qemu-aarch64 (make deps installs gcc-aarch64-linux-gnu and qemu-user; make test cross-builds it)"
else
    expect_ok "the aarch64 build trains in portable mode under qemu-user" run "$T/a64.weights" qemu-aarch64 "$a64"
    h=$(sha256sum < "$T/host.weights" | cut -c1-16) a=$(sha256sum < "$T/a64.weights" 2>/dev/null | cut -c1-16)
    t_check "aarch64 under qemu-user writes the host's weights bytes (sha256 $h... vs $a...)" \
        cmp "$T/host.weights" "$T/a64.weights"
fi
t_done
