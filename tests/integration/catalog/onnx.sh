# tests/integration/catalog/onnx.sh: ONNX Runtime and the ONNX checker for
# the export tests (catalog_onnx*.sh). Sourced after tests/lib.sh.
#
# ort_ready: 0 when Node.js and onnxruntime-node (make deps: $O/onnxrt) are
# there; otherwise ORT_WHY says why. onnx_py: a python3 that imports onnx
# (Debian's python3-onnx), or empty.
ORT_DIR=${ORT_DIR:-$O/onnxrt}
export ORT_DIR
ORT_JS=$TOP/tests/onnx/ort.js
ORT_WHY=''
ort_ready() {
    if ! command -v node >/dev/null 2>&1; then ORT_WHY='Node.js is not installed (make deps)'
    elif [ ! -f "$ORT_DIR/.ok" ]; then
        ORT_WHY="onnxruntime-node is not installed in $ORT_DIR: $(cat "$ORT_DIR/.unavailable" 2>/dev/null || echo 'run make deps')"
    else return 0; fi
    return 1
}
onnx_py=''
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import onnx' >/dev/null 2>&1; then onnx_py=$p; break; fi
done

# onnx_check FILE...: onnx.checker (full check, shapes inferred) accepts every file.
onnx_check() {
    "$onnx_py" - "$@" <<'PY'
import sys, onnx
for f in sys.argv[1:]:
    m = onnx.load(f)
    onnx.checker.check_model(m, full_check=True)
    assert m.opset_import[0].version >= 13, f
    assert m.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT, f
PY
}

# mkinputs DIR N C SIDE SEED: DIR/in_K.bmp (24-bit, SIDE x SIDE; C = 3) and
# DIR/in_K.raw, the float32 (C, SIDE, SIDE) the engine makes of it (byte /
# 255, channels first), K = 0..N-1.
mkinputs() {
    python3 - "$@" <<'PY'
import random, struct, sys, os
d, n, c, side, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
random.seed(seed)
os.makedirs(d, exist_ok=True)
for k in range(n):
    px = [[[random.randrange(256) for _ in range(3)] for _ in range(side)] for _ in range(side)]
    row = side * 3; pad = (4 - row % 4) % 4
    body = b''.join(bytes(b for x in range(side) for b in reversed(px[y][x])) + b'\0' * pad
                    for y in reversed(range(side)))
    hdr = b'BM' + struct.pack('<IHHI', 54 + len(body), 0, 0, 54) + struct.pack('<IiiHHIIiiII', 40, side, side, 1, 24, 0, len(body), 2835, 2835, 0, 0)
    open('%s/in_%d.bmp' % (d, k), 'wb').write(hdr + body)
    vals = [px[y][x][ch] / 255.0 for ch in range(c) for y in range(side) for x in range(side)]
    open('%s/in_%d.raw' % (d, k), 'wb').write(struct.pack('<%df' % len(vals), *vals))
PY
}

# same_probs WANT_RAW_OR_LIST GOT_LIST [TOL]: two probability vectors (a raw
# float32 file or a JSON list) have the same top-1 and differ by at most TOL
# (default 1e-5) everywhere; prints the largest difference.
same_probs() {
    python3 - "$@" <<'PY'
import json, struct, sys
def vec(s):
    if s.startswith('['): return json.loads(s)
    b = open(s, 'rb').read(); return list(struct.unpack('<%df' % (len(b) // 4), b))
a, b = vec(sys.argv[1]), vec(sys.argv[2]); tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-5
assert len(a) == len(b), "%d values against %d" % (len(a), len(b))
d = max(abs(x - y) for x, y in zip(a, b))
top = lambda v: max(range(len(v)), key=lambda k: v[k])
print("max difference %.3g, top-1 %d / %d" % (d, top(a), top(b)))
sys.exit(0 if d <= tol and top(a) == top(b) else 1)
PY
}

# ort_output JSONL K NAME: output NAME of the K-th result line of ort.js run, as a JSON list.
ort_output() {
    python3 -c 'import json,sys; l=open(sys.argv[1]).read().splitlines()[int(sys.argv[2])]; print(json.dumps(json.loads(l)["outputs"][sys.argv[3]]))' "$@"
}
