#!/usr/bin/env bash
# A Darknet weights header with major = 2^31-1 (user input: --weights) is
# read by every reader through the engine's one header rule
# (trn_weights_header_bytes): no signed overflow (major*10 once overflowed
# int32 in catalog profile and prune; under SAN=undefined that aborted),
# a 16-byte header, the parameters counted from the rest.
. "$TOP/tests/lib.sh"

cat >"$T/net.cfg" <<'CFG'
[net]
batch=1
height=4
width=4
channels=1

[convolutional]
filters=2
size=1
activation=linear

[avgpool]
CFG
# 16-byte header (major 2^31-1, minor 0, revision 0, 32-bit seen 5), then
# the conv's 2 biases and 2 weights as float32.
python3 - "$T/hostile.weights" <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<iiii", 2**31 - 1, 0, 0, 5) + struct.pack("<4f", 0.5, -0.5, 1.0, 2.0))
PY
expect_ok "catalog profile reads a header with major = 2^31-1" \
    "$BIN/catalog" profile --cfg "$T/net.cfg" --weights "$T/hostile.weights" --runs 1 --warmup 0 \
    --out "$T/profile.json"
if python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cost"]; sys.exit(0 if c["params"] == 4 and c["macs"] == 32 else 1)' "$T/profile.json" 2>"$T/err"; then
    t_ok "its parameters are counted after a 16-byte header (4 params, 32 MACs)"
else
    t_fail "its parameters are counted after a 16-byte header (4 params, 32 MACs)" "$(cat "$T/profile.json" "$T/err" 2>/dev/null | head -c 600)"
fi
t_done
