#!/usr/bin/env bash
# The `trainer` CLI end to end on a small data set generated here: 16x16 BMP
# images of four shapes (horizontal bar, vertical bar, diagonal, hollow box)
# at random places and colours over noise, in a Darknet classifier layout.
# Checks: every verb's --help; info (table and JSON); training reaches the
# stated accuracy; the same seed gives the same weights bytes; a run killed
# with SIGKILL and resumed ends byte-identical; a SIGINT stops with a
# checkpoint; valid (text and JSON); predict; clear errors for bad input.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/prune/layers.sh"
trainer=$BIN/trainer
D=$T/shapes

python3 - "$D" <<'EOF'
import os, random, struct, sys
root = sys.argv[1]
labels = ["hbar", "vbar", "diag", "box"]
S = 16
def bmp(path, px):
    row = (3 * S + 3) & ~3
    data = bytearray()
    for y in range(S - 1, -1, -1):
        for x in range(S):
            r, g, b = px[y][x]
            data += bytes((b, g, r))
        data += bytes(row - 3 * S)
    hdr = struct.pack("<2sIHHI", b"BM", 54 + len(data), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, S, S, 1, 24, 0, len(data), 2835, 2835, 0, 0)
    with open(path, "wb") as f:
        f.write(hdr + info + data)
def image(rng, k):
    px = [[tuple(rng.randrange(0, 90) for _ in range(3)) for _ in range(S)] for _ in range(S)]
    col = tuple(rng.randrange(130, 256) for _ in range(3))
    a, b = rng.randrange(3, S - 3), rng.randrange(3, S - 3)
    pts = []
    for t in range(-3, 4):
        if k == 0: pts.append((a, b + t))
        if k == 1: pts.append((a + t, b))
        if k == 2: pts.append((a + t, b + t))
        if k == 3 and -2 <= t <= 2: pts += [(a - 2, b + t), (a + 2, b + t), (a + t, b - 2), (a + t, b + 2)]
    for y, x in pts:
        if 0 <= y < S and 0 <= x < S: px[y][x] = col
    return px
rng = random.Random(1234)
os.makedirs(root, exist_ok=True)
for split, n in (("train", 512), ("valid", 96), ("test", 96)):
    os.makedirs(os.path.join(root, split), exist_ok=True)
    with open(os.path.join(root, split + ".list"), "w") as lst:
        for i in range(n):
            k = rng.randrange(4)
            name = "%s/%06d_%s.bmp" % (split, i, labels[k])
            bmp(os.path.join(root, name), image(rng, k))
            lst.write(name + "\n")
with open(os.path.join(root, "labels.txt"), "w") as f: f.write("\n".join(labels) + "\n")
with open(os.path.join(root, "names.txt"), "w") as f:
    f.write("horizontal bar\nvertical bar\ndiagonal\nhollow box\n")
with open(os.path.join(root, "shapes.data"), "w") as f:
    f.write("classes=4\ntrain=train.list\nvalid=valid.list\ntest=test.list\n"
            "labels=labels.txt\nnames=names.txt\nbackup=backup\ntop=2\n")
EOF
{
    cat <<'EOF'
[net]
batch=32
subdivisions=2
height=16
width=16
channels=3
learning_rate=0.05
momentum=0.9
decay=0.0005
policy=steps
steps=90
scales=.1
max_batches=120
min_crop=16
max_crop=18
flip=0
EOF
    BN_ACTIVATION=leaky bn_blocks 16 32
    printf '\n'
    cat <<'EOF'
[connected]
output=32
activation=leaky

[dropout]
probability=.2

[connected]
output=4
activation=linear

[softmax]
EOF
} >"$T/small.cfg"
cfg=$T/small.cfg
data=$D/shapes.data

for v in train valid predict info bench; do
    expect_ok "$v --help" "$trainer" "$v" --help
done
expect_ok "info prints the table" "$trainer" info "$cfg"
t_check "info totals line" grep -q '^total: .* parameters' "$T/out"
"$trainer" info --cfg "$cfg" --json > "$T/info.json" 2>&1
t_check "info --json is the cost object" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["params"] == sum(l["params"] for l in c["layers"]) and c["weight_bytes"] == 4 * c["params"]
assert c["layers"][0]["type"] == "convolutional" and c["layers"][0]["output"] == [16, 16, 16]
assert c["layers"][0]["macs"] == 16 * 16 * 16 * 3 * 3 * 3' "$T/info.json"

# Training: two runs with one seed, then the accuracy they reach.
expect_ok "train" "$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/b1" --threads 2
t_check "progress lines off a terminal" grep -q '^update 120/120 ' "$T/out"
t_check "weights written" test -s "$T/b1/small.weights"
expect_ok "train again, same seed, one thread" "$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/b2" --threads 1 --quiet
t_check "same seed, same weights bytes" cmp -s "$T/b1/small.weights" "$T/b2/small.weights"
# Any thread count (more than cores too) and loader threads: the same bytes.
many=$(( $(nproc) * 2 + 1 ))
for th in 3 "$many"; do
    expect_ok "train at $th threads, one loader thread" "$trainer" train --cfg "$cfg" --data "$data" --seed 3 \
        --backup "$T/b-$th" --threads "$th" --loader-threads 1 --quiet
    t_check "$th threads, the same weights bytes as 2 and 1" cmp -s "$T/b1/small.weights" "$T/b-$th/small.weights"
done
# Under OpenBLAS's Haswell kernels (AMD EPYC, Intel AVX2 machines), whose
# own threading used to change bytes with the thread count.
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    for th in 1 3; do
        expect_ok "train under OPENBLAS_CORETYPE=Haswell at $th threads" env OPENBLAS_CORETYPE=Haswell \
            "$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/h-$th" --threads "$th" --quiet
    done
    t_check "Haswell kernels: 1 and 3 threads give the same weights bytes" cmp -s "$T/h-1/small.weights" "$T/h-3/small.weights"
else
    t_skip "Haswell kernels: 1 and 3 threads give the same weights bytes" "this CPU has no AVX2+FMA"
fi
# Portable mode: --determinism or DETERMINISM; the same bytes at 1 and 3 threads.
expect_ok "train --determinism portable, 1 thread" "$trainer" train --cfg "$cfg" --data "$data" --seed 3 \
    --backup "$T/p1" --threads 1 --determinism portable --quiet
expect_ok "train with DETERMINISM=portable, 3 threads" env DETERMINISM=portable "$trainer" train --cfg "$cfg" \
    --data "$data" --seed 3 --backup "$T/p3" --threads 3 --quiet
t_check "portable: 1 and 3 threads give the same weights bytes" cmp -s "$T/p1/small.weights" "$T/p3/small.weights"
expect_fail "a bad --determinism is a usage error" "--determinism 'fast' is not valid: use default" \
    "$trainer" train --cfg "$cfg" --data "$data" --determinism fast
expect_fail "a bad DETERMINISM is a usage error" "DETERMINISM 'x' is not valid" \
    env DETERMINISM=x "$trainer" train --cfg "$cfg" --data "$data"
expect_ok "train without validation" "$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/b3" --threads 2 --val-every 0 --quiet
t_check "validation does not change the weights bytes" cmp -s "$T/b1/small.weights" "$T/b3/small.weights"
t_check "the summary line without validation" grep -q '^trainer train: summary: done at update 120/120, .*no validation' "$T/out"
expect_ok "train validating every 7 updates" "$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/b4" --threads 2 --val-every 7 --val-images 50
t_check "validation every 7 updates does not change the weights bytes" cmp -s "$T/b1/small.weights" "$T/b4/small.weights"
t_check "validation lines with the Wilson interval" grep -Eq '^validation at update 7: top-1 [0-9.]+ \[[0-9.]+, [0-9.]+\] on 50 images$' "$T/out"
t_check "one summary line naming the validation top-1 and the metrics log" bash -c "test \$(grep -c '^trainer train: summary: done at update 120/120, loss [0-9.]* (avg [0-9.]*), [0-9.]* images/s, validation top-1 [0-9.]* \\[[0-9.]*, [0-9.]*\\] on 50 images (best [0-9.]* at update [0-9]*); metrics in .*/b4/small.metrics.jsonl' '$T/out') = 1"
t_check "the metrics log: one JSON line per update, validations with intervals" python3 -c '
import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["batch"] for r in rows] == list(range(1, 121)), [r["batch"] for r in rows][:5]
for r in rows:
    assert r["loss"] >= 0 and r["rate"] > 0 and r["images_per_s"] > 0 and r["seen"] == r["batch"] * 32, r
val = [r for r in rows if "val_top1" in r]
assert [r["batch"] for r in val] == list(range(7, 120, 7)) + [120], [r["batch"] for r in val]
for r in val:
    k, n = round(r["val_top1"] * r["val_images"]), r["val_images"]
    assert n == 50 and 0 <= r["val_lo"] <= r["val_top1"] <= r["val_hi"] <= 1, r
    p, z = k / n, 1.959963984540054
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert abs(r["val_lo"] - max(0, c - h)) < 1e-5 and abs(r["val_hi"] - min(1, c + h)) < 1e-5, (r, c - h, c + h)
assert val[-1]["val_top1"] >= 0.8, val[-1]
print("# validation top-1 at update 120: %.3f [%.3f, %.3f] on %d images" % (val[-1]["val_top1"], val[-1]["val_lo"], val[-1]["val_hi"], val[-1]["val_images"]))
' "$T/b4/small.metrics.jsonl"
expect_ok "train with a plateau stop" "$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/b5" --threads 2 --val-every 5 --plateau 2 --quiet
t_check "the plateau stop ends early, writes weights, logs and says so" python3 -c '
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/small.metrics.jsonl")]
last = rows[-1]
assert last.get("plateau") is True and last["batch"] < 120 and last["batch"] % 5 == 0, last
val = [r["val_top1"] for r in rows if "val_top1" in r]
assert max(val[-2:]) <= max(val[:-2]), val
assert os.path.getsize(sys.argv[1] + "/small.weights") > 0
print("# plateau stop at update %d of 120" % last["batch"])
' "$T/b5"
t_check "the plateau summary line" grep -q '^trainer train: summary: plateau, stopped early at update' "$T/out"
expect_fail "--plateau without validations" "plateau needs validations" "$trainer" train --cfg "$cfg" --data "$data" --plateau 2 --val-every 0
"$trainer" valid --cfg "$cfg" --weights "$T/b1/small.weights" --data "$data" --split test --json > "$T/valid.json" 2>"$T/err"
t_check "test top-1 >= 0.90 after 120 updates (stated)" python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
print("# test split: top-1 %.3f, top-%d %.3f over %d images" % (v["top1"], v["k"], v["topk"], v["images"]))
assert v["images"] == 96 and v["classes"] == 4 and "top5" not in v
assert sum(map(sum, v["confusion"])) == 96
assert v["top1"] >= 0.90
lo, hi = v["top1_ci"]
assert 0 <= lo <= v["top1"] <= hi <= 1 and hi - lo > 0.03  # 96 images: a wide interval (0.038 even at top-1 1.0)' "$T/valid.json"
expect_ok "valid text output" "$trainer" valid --cfg "$cfg" --weights "$T/b1/small.weights" --data "$data"
t_check "valid prints top-1 and the confusion matrix" grep -q '^top-1 ' "$T/out"
# Per-image predictions (the paired test of catalog pack): one line per test
# image, list order, agreeing with the JSON's top-1 and confusion matrix;
# the same run twice gives the same bytes.
for r in 1 2; do
    expect_ok "valid --predictions (run $r)" "$trainer" valid --cfg "$cfg" --weights "$T/b1/small.weights" \
        --data "$data" --split test --json --predictions "$T/p$r.predictions"
done
t_check "the predictions file is deterministic" cmp -s "$T/p1.predictions" "$T/p2.predictions"
t_check "predictions: header, one line per image, counts agree with valid --json" python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
lines = open(sys.argv[2]).read().split("\n")
head = lines[0].split()
assert head[:5] == ["trn-predictions", "1", "test", "96", "4"] and len(head[5]) == 16, head
rows = [tuple(map(int, l.split())) for l in lines[1:] if l]
assert len(rows) == 96
conf = [[0] * 4 for _ in range(4)]
for t, p in rows: conf[t][p] += 1
assert conf == v["confusion"], (conf, v["confusion"])
assert abs(sum(t == p for t, p in rows) / 96 - v["top1"]) < 1e-6' "$T/valid.json" "$T/p1.predictions"
# --against: the same model paired with its own record (no discordant
# image, p = 1); a record of other images refused; --predictions needed.
expect_ok "valid --against" "$trainer" valid --cfg "$cfg" --weights "$T/b1/small.weights" \
    --data "$data" --split test --json --predictions "$T/p3.predictions" --against "$T/p1.predictions"
t_check "valid --against: the paired counts in the JSON" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["against"]
assert (a["images"], a["only_this"], a["only_against"], a["difference"], a["p"]) == (96, 0, 0, 0, 1), a' "$T/out"
expect_fail "valid --against other images" "not the same images" "$trainer" valid --cfg "$cfg" \
    --weights "$T/b1/small.weights" --data "$data" --split test --limit 10 --predictions "$T/p4.predictions" \
    --against "$T/p1.predictions"
expect_fail "valid --against without --predictions" "--against needs --predictions" "$trainer" valid \
    --cfg "$cfg" --weights "$T/b1/small.weights" --data "$data" --against "$T/p1.predictions"
expect_ok "predict" "$trainer" predict --cfg "$cfg" --weights "$T/b1/small.weights" --data "$data" --top 2 \
    "$D/test/000000_"*.bmp "$D/test/000001_"*.bmp
t_check "predict names classes" grep -Eq '^.*000000_[a-z]+\.bmp: [0-9.]+ (horizontal bar|vertical bar|diagonal|hollow box), ' "$T/out"
"$trainer" predict --cfg "$cfg" --weights "$T/b1/small.weights" --data "$data" --top 2 --json \
    "$D/test/000000_"*.bmp "$T/missing.png" >"$T/predict.json" 2>"$T/err"
t_check "predict --json exits 1 when an image cannot be read" test $? = 1
t_check "predict --json: top-k per image, an unreadable image as an error" bash -c "python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))[\"results\"]
assert len(r) == 2 and r[0][\"image\"].endswith(\".bmp\") and r[1][\"image\"].endswith(\"missing.png\")
top = r[0][\"top\"]
assert len(top) == 2 and top[0][\"p\"] >= top[1][\"p\"] and 0 <= top[1][\"p\"] <= 1 and 0 <= top[0][\"class\"] < 4
assert top[0][\"name\"] in (\"horizontal bar\", \"vertical bar\", \"diagonal\", \"hollow box\")
assert \"missing.png\" in r[1][\"error\"] and \"top\" not in r[1]
' '$T/predict.json'"

# Killed with SIGKILL after a checkpoint, resumed: the same bytes.
"$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/k" --checkpoint-every 20 --quiet &
pid=$!
killed=$pid
for _ in $(seq 600); do [ -e "$T/k/small.ckpt" ] && break; sleep 0.05; done
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
if [ -e "$T/k/small.weights" ]; then
    t_skip "SIGKILL then --resume gives the same bytes" "the run finished before it could be killed"
else
    expect_ok "resume after SIGKILL" "$trainer" train --cfg "$cfg" --data "$data" --seed 99 --backup "$T/k" --checkpoint-every 20 --resume --quiet
    t_check "SIGKILL then --resume gives the same bytes" cmp -s "$T/b1/small.weights" "$T/k/small.weights"
fi
# SIGINT: a checkpoint, exit status 130, and --resume finishes the job.
"$trainer" train --cfg "$cfg" --data "$data" --seed 3 --backup "$T/i" --set max_batches=100000 --quiet 2>"$T/int.err" &
pid=$!
sleep 1.5
kill -INT "$pid"
wait "$pid"
rc=$?
t_check "SIGINT stops with status 130" test "$rc" = 130
t_check "SIGINT leaves a checkpoint and says how to resume" grep -q 'continue with --resume' "$T/int.err"
t_check "SIGINT writes no final weights" test ! -e "$T/i/small.weights"

# Bad input: clear errors, non-zero status, no crash, no half file.
expect_fail "no verb" "Usage: trainer VERB" "$trainer"
expect_fail "unknown verb" "unknown verb 'fly'" "$trainer" fly
expect_fail "unknown option" "unknown option '--bogus'" "$trainer" train --cfg "$cfg" --data "$data" --bogus
expect_fail "missing --data" "--cfg and --data are required" "$trainer" train --cfg "$cfg"
expect_fail "missing cfg file" "cannot open $T/none.cfg" "$trainer" info "$T/none.cfg"
expect_fail "bad --set" "--set needs key=value" "$trainer" train --cfg "$cfg" --data "$data" --set nokey
expect_fail "--set of an unknown key" "small.cfg \(set by program\): \[net\]: unknown key 'bogus'" \
    "$trainer" train --cfg "$cfg" --data "$data" --set bogus=1
expect_fail "bad number" "--seed needs a whole number" "$trainer" train --cfg "$cfg" --data "$data" --seed x
sed 's/^output=4$/output=5/' "$cfg" > "$T/five.cfg"
expect_fail "classes mismatch" "has 5 outputs but .* has 4 classes" "$trainer" train --cfg "$T/five.cfg" --data "$data"
printf 'garbage' > "$T/bad.weights"
expect_fail "garbled weights" "bad.weights: the file ends at byte offset 7 inside the header" \
    "$trainer" valid --cfg "$cfg" --weights "$T/bad.weights" --data "$data"
head -c 1000 "$T/b1/small.weights" > "$T/short.weights"
expect_fail "truncated weights" "short.weights: the file ends at byte offset 1000 inside layer" \
    "$trainer" predict --cfg "$cfg" --weights "$T/short.weights" --data "$data" "$D/test/000000_"*.bmp
expect_fail "missing image" "nothere.png" \
    "$trainer" predict --cfg "$cfg" --weights "$T/b1/small.weights" --data "$data" "$T/nothere.png"
expect_fail "bad split" "--split must be train, valid or test" \
    "$trainer" valid --cfg "$cfg" --weights "$T/b1/small.weights" --data "$data" --split dev
# A process killed with SIGKILL cannot remove the temporary file of a
# checkpoint it was writing (NAME.tmp.PID; the rename never happened, the
# resumed run ignores it): only that one process's may remain.
t_check "no temporary files left" test -z "$(find "$T" -name '*.tmp.*' ! -name "*.tmp.$killed")"
t_done
