#!/usr/bin/env bash
# make bench: rtl against ONNX Runtime (issue 42 item 3), batch-1 inference
# latency of the same models on the same input in the same run: every
# variant of a catalog, exported by `catalog export --onnx` (a nested one at
# its largest capacity, as rtl runs it by default; early-exit variants are
# left out: they answer data-dependently), and Darknet's alexnet.cfg
# (227x227, 10 outputs, trained one step). For each: `rtl profile` at 1
# thread, at all threads and with its default thread choice, and ONNX
# Runtime (npm onnxruntime-node, tests/onnx/ort.js) at 1 and at all threads,
# both on rtl profile's input pattern; each a median of RUNS timed runs after
# WARMUP, in ROUNDS interleaved rounds (the median of the rounds' medians).
# Prints per model the ratio rtl / ONNX Runtime at each one's best thread
# count, "met" or "MISSED" against the 1.0x bar, and whether rtl's default
# thread choice is no slower than its 1-thread run: a paired judgement, not
# two medians (where the default takes the 1-thread path their medians
# differ by noise alone): PAIRS (default 10) pairs of runs, the default and
# the 1-thread run back to back in alternating order; the default is slower
# when it was slower in so many pairs that a one-sided sign test rejects
# "either is as likely to be faster" at 0.05 over all models (Bonferroni:
# 0.05 / models each; 10 pairs: all 10 slower for 27 models).
#
# The catalog: CATALOG=ARCHIVE (signed by a key in CATALOG_KEY=PUB), else the
# newest default catalog under $O/alexnet/ (make catalog), else the rtl
# tests' fixture catalog (four small variants). Environment (from make):
# BIN, O, TOP, THREADS; RUNS (default 300), WARMUP (default 20), ROUNDS
# (default 3), ALEXNET (default 1: include alexnet.cfg). Judge on an idle
# machine: the figures of a busy one say little.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
W=$O/bench/onnx-rt
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$W"' EXIT
. "$TOP/tests/integration/rtl/fixtures.sh"
ORT_DIR=${ORT_DIR:-$O/onnxrt}
export ORT_DIR
threads=${THREADS:-$(nproc)}
runs=${RUNS:-300} warmup=${WARMUP:-20} rounds=${ROUNDS:-3} pairs=${PAIRS:-10}
say() { echo "bench onnx-rt: $*"; }
if ! command -v node >/dev/null 2>&1 || [ ! -f "$ORT_DIR/.ok" ]; then
    say "skipped: ONNX Runtime is not installed in $ORT_DIR ($(cat "$ORT_DIR/.unavailable" 2>/dev/null || echo 'run make deps'))"
    exit 0
fi

# The variants of an archive as variant folders (variant.json from the
# manifest), what catalog export reads; a head or specialised model stored
# as a fragment gets its whole weights back (catalog export --darknet).
unpack() { # ARCHIVE DIR
    mkdir -p "$2" && tar --zstd -xf "$1" -C "$2" || return 1
    local f
    for f in $(python3 -c 'import json, sys
print(" ".join(v["id"] for v in json.load(open(sys.argv[1]))["variants"] if "fragment_of" in v))' "$2/manifest.json"); do
        "$CAT" export --darknet "$2/manifest.json" --id "$f" -o "$2/whole" >/dev/null &&
            mv "$2/whole/$f.weights" "$2/variants/$f/variant.weights" || return 1
    done
    python3 - "$2" <<'EOF'
import json, os, sys
d = sys.argv[1]
for v in json.load(open(os.path.join(d, "manifest.json")))["variants"]:
    pre = "variants/%s/" % v["id"]
    v["files"] = [dict(f, path=f["path"][len(pre):]) for f in v["files"]]
    if v.pop("fragment_of", None):
        v["files"] = [dict(f, role="weights", path="variant.weights") if f["role"] == "fragment" else f
                      for f in v["files"]]
    json.dump(v, open(os.path.join(d, pre, "variant.json"), "w"))
EOF
}

# Catalogs: "ID ROOT VARIANTS_DIR" lines in catalogs.txt.
cat_default=$(ls -t "$O"/alexnet/catalog-alexnet-*.tar.zst 2>/dev/null | head -n 1)
archive=${CATALOG:-$cat_default}
if [ -n "$archive" ]; then
    key=${CATALOG_KEY:-$(ls "$O"/keys/*.pub 2>/dev/null | head -n 1)}
    mkdir -p root/keys && cp "$key" root/keys/ && "$RTL" -q --root root install "$archive" >/dev/null &&
        unpack "$archive" x || { say "cannot install and unpack $archive (CATALOG_KEY: its public key)"; exit 1; }
    echo "$(python3 -c 'import json; print(json.load(open("x/manifest.json"))["catalog"])') root x/variants" >catalogs.txt
    say "catalog $archive"
else
    fx_rtl_catalog c >fixture.log 2>&1 || { say "cannot build the fixture catalog"; tail -n 5 fixture.log; exit 1; }
    mkdir -p root/keys && cp c/k.pub root/keys/ && "$RTL" -q --root root install c/out/catalog-rtlnet-1.tar.zst >/dev/null ||
        { say "cannot install the fixture catalog"; exit 1; }
    echo "rtlnet root c/variants" >catalogs.txt
    say "no catalog built (make catalog) and no CATALOG=: the rtl tests' fixture catalog ($FX_RTL_VARIANTS)"
fi
if [ "${ALEXNET:-1}" = 1 ]; then
    mkdir -p a && fx_rtl_data a >/dev/null || { say "cannot make the data set"; exit 1; }
    fx_alexnet_cfg >alexnet.cfg
    fx_rtl_variant a alexnet-cfg base - alexnet.cfg 1 >/dev/null && sed -i 's/"rtlnet"/"darknet"/' a/variants/alexnet-cfg/variant.json &&
        "$CAT" keygen -p a/k.pub -s a/k.key -W >/dev/null &&
        "$CAT" pack a/variants -o a/out --task identity=a/identity.names --version 1 --key a/k.key --zstd-level 1 \
            >a/pack.log 2>&1 && mkdir -p aroot/keys && cp a/k.pub aroot/keys/ &&
        "$RTL" -q --root aroot install a/out/catalog-darknet-1.tar.zst >/dev/null ||
        { say "cannot build the alexnet.cfg catalog"; tail -n 5 a/pack.log; exit 1; }
    echo "darknet aroot a/variants" >>catalogs.txt
fi

# The models: "CATALOG ROOT VARIANT ONNX RTL_OPTIONS" lines in models.txt.
: >models.txt
while read -r id root vdir; do
    "$CAT" export --onnx "$vdir" -o "onnx-$id" >"export-$id.log" 2>&1 || { say "catalog export failed:"; tail -n 3 "export-$id.log"; exit 1; }
    for j in "$vdir"/*/variant.json; do
        read -r vid tech ncap < <(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))
print(v["id"], v["technique"], len(v.get("technique_fields", {}).get("capacities", [])))' "$j")
        case $tech in
        early-exit) say "$vid: left out (early exits answer data-dependently)" ;;
        nested) echo "$id $root $vid onnx-$id/$vid.cap$ncap.onnx" >>models.txt ;;
        *) echo "$id $root $vid onnx-$id/$vid.onnx" >>models.txt ;;
        esac
    done
done <catalogs.txt

python3 - "$runs" "$warmup" "$rounds" "$threads" "$RTL" "$TOP/tests/onnx/ort.js" "$pairs" <<'EOF'
import json, math, statistics, subprocess, sys
runs, warmup, rounds, threads, rtl, ort = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
pairs = int(sys.argv[7])
models = [l.split() for l in open("models.txt") if l.strip()]
def rtl_ms(cat, root, vid, t):
    cmd = [rtl, "-q", "--root", root, "profile", cat, vid, "--runs", str(runs), "--warmup", str(warmup), "--json"]
    if t: cmd += ["--threads", str(t)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode: sys.exit("bench onnx-rt: %s failed: %s" % (" ".join(cmd), out.stderr.strip()))
    return json.loads(out.stdout)[0]["ms_median"]
def ort_ms(model, t):
    out = subprocess.run(["node", ort, "time", model, "pattern", str(runs), str(warmup), str(t)], capture_output=True, text=True)
    if out.returncode: sys.exit("bench onnx-rt: ONNX Runtime on %s failed: %s" % (model, out.stderr.strip()))
    return float(out.stdout.split()[1])
kinds = ["rtl 1", "rtl %d" % threads, "rtl default", "ort 1", "ort %d" % threads]
res = {m[2]: {k: [] for k in kinds} for m in models}
for r in range(rounds):
    for cat, root, vid, model in models:
        res[vid]["rtl 1"].append(rtl_ms(cat, root, vid, 1))
        res[vid]["ort 1"].append(ort_ms(model, 1))
        res[vid]["rtl %d" % threads].append(rtl_ms(cat, root, vid, threads))
        res[vid]["ort %d" % threads].append(ort_ms(model, threads))
        res[vid]["rtl default"].append(rtl_ms(cat, root, vid, 0))
# The paired judgement of the default against 1 thread.
pair = {m[2]: [] for m in models}
for p in range(pairs):
    for cat, root, vid, model in models:
        order = (1, 0) if p % 2 == 0 else (0, 1)
        t = {o: rtl_ms(cat, root, vid, o) for o in order}
        pair[vid].append(t[0] / t[1])
def sign_p(slower, n): # P(at least `slower` of n pairs slower | either order equally likely)
    return sum(math.comb(n, k) for k in range(slower, n + 1)) / 2.0 ** n
alpha = 0.05 / len(models)
print("bench onnx-rt: batch-1 latency (ms), median of %d runs after %d warm-up, median of %d interleaved rounds, "
      "the same input (rtl profile's pattern) in both" % (runs, warmup, rounds))
print("bench onnx-rt: default vs 1 thread: %d pairs, the default's time / the 1-thread one's per pair; slower when a "
      "one-sided sign test gives p < %.4f (0.05 over %d models)" % (pairs, alpha, len(models)))
print("bench onnx-rt: %-14s %9s %9s %11s %9s %9s  %s" % ("model", *kinds, "rtl/ort at best  bar 1.0x  default vs 1 thread"))
missed = 0
for cat, root, vid, model in models:
    m = {k: statistics.median(v) for k, v in res[vid].items()}
    best_rtl = min(m["rtl 1"], m["rtl %d" % threads], m["rtl default"])
    best_ort = min(m["ort 1"], m["ort %d" % threads])
    ratio = best_rtl / best_ort
    ok_bar = ratio <= 1.0
    r = pair[vid]
    slower = sum(x > 1 for x in r)
    p = sign_p(slower, len(r)) if r else 1.0
    ok_def = p >= alpha
    missed += (not ok_bar) + (not ok_def)
    print("bench onnx-rt: %-14s %9.4f %9.4f %11.4f %9.4f %9.4f  %.2fx %s; default %.3fx, slower in %d/%d, p %.3g: %s" % (
        vid, *[m[k] for k in kinds], ratio, "met" if ok_bar else "MISSED",
        statistics.median(r) if r else float("nan"), slower, len(r), p,
        "met" if ok_def else "MISSED (slower than 1 thread)"))
print("bench onnx-rt: %s" % ("every bar met" if not missed else "%d bar(s) MISSED" % missed))
EOF
