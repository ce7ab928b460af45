#!/usr/bin/env bash
# make bench: rtl run against trainer predict on the base variant of a
# catalog, in the same run:
#   time from process start to the first result (one image, --top 5): the
#     median of RUNS runs of each, interleaved, page cache warm; ratio rtl /
#     trainer (rtl maps the weights and reads only what a forward touches;
#     trainer predict reads them into memory first);
#   peak resident memory (the child's ru_maxrss) relative to the variant's
#     weight bytes (the manifest's weight_bytes), for both.
# The catalog holds one variant: AlexNet as Darknet's alexnet.cfg defines it
# (227x227, five convolutions, three connected layers), with 10 outputs for
# the fixture's labels, trained one step by `trainer train`, packed,
# installed. Environment (from make): BIN, O, TOP, THREADS; RUNS (default 5).
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
W=$O/bench/rtl-run
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
trap 'rm -rf "$W"' EXIT
. "$TOP/tests/integration/rtl/fixtures.sh"
threads=${THREADS:-$(nproc)}
runs=${RUNS:-5}

fx_rtl_data c >/dev/null || { echo "bench rtl-run: cannot make the data set"; exit 1; }
fx_alexnet_cfg >alexnet.cfg
fx_rtl_variant c base base - alexnet.cfg 1 || { echo "bench rtl-run: cannot train the variant"; exit 1; }
"$CAT" keygen -p k.pub -s k.key -W >/dev/null &&
    "$CAT" pack c/variants -o out --task identity=c/identity.names --version 1 --key k.key --zstd-level 1 \
        >pack.log 2>&1 || { echo "bench rtl-run: cannot pack"; cat pack.log; exit 1; }
mkdir -p root/keys && cp k.pub root/keys/
"$RTL" -q --root root install out/catalog-rtlnet-1.tar.zst >/dev/null || { echo "bench rtl-run: cannot install"; exit 1; }
d=$(ls -d root/catalogs/rtlnet/v1.*)/variants/base
wbytes=$(python3 -c "import json; print(json.load(open('$d/variant.json'))['cost']['weight_bytes'])" 2>/dev/null ||
         python3 -c "import json; m=json.load(open('out/manifest.json')); print(m['variants'][0]['cost']['weight_bytes'])")
img=c/images/img3.bmp

python3 - "$runs" "$wbytes" "$threads" \
    "$RTL --root root run rtlnet base $img --top 5 --threads $threads" \
    "$BIN/trainer predict --cfg $d/variant.cfg --weights $d/variant.weights --names c/identity.names --top 5 --threads $threads $img" <<'EOF'
import os, subprocess, sys, time
runs, wbytes, threads = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cmds = {"rtl run": sys.argv[4].split(), "trainer predict": sys.argv[5].split()}
def once(cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = p.stdout.readline()
    t1 = time.monotonic()
    p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0 or not line:
        sys.exit("bench rtl-run: %s failed (status %d)" % (" ".join(cmd), status))
    return t1 - t0, ru.ru_maxrss * 1024, line.decode().strip()
for c in cmds.values():
    once(c)  # warm the page cache and the loader
res = {k: [] for k in cmds}
for _ in range(runs):
    for k, c in cmds.items():
        res[k].append(once(c))
med = lambda xs: sorted(xs)[len(xs) // 2]
t = {k: med([r[0] for r in v]) for k, v in res.items()}
m = {k: med([r[1] for r in v]) for k, v in res.items()}
same = res["rtl run"][0][2].split(": ", 1)[1].split(", ")[0].split(" ")[1] == \
       res["trainer predict"][0][2].split(": ", 1)[1].split(", ")[0].split(" ")[1]
print("bench rtl-run: AlexNet base variant, %.1f MB of weights, %s threads, median of %d runs, warm page cache"
      % (wbytes / 1e6, threads, runs))
print("bench rtl-run: start to first result: rtl run %.3f s, trainer predict %.3f s; ratio rtl/trainer = %.2f%s"
      % (t["rtl run"], t["trainer predict"], t["rtl run"] / t["trainer predict"], "" if same else " (top-1 differs!)"))
print("bench rtl-run: peak resident memory: rtl run %.1f MB = %.2f x the weight bytes; trainer predict %.1f MB = %.2f x"
      % (m["rtl run"] / 1e6, m["rtl run"] / wbytes, m["trainer predict"] / 1e6, m["trainer predict"] / wbytes))
sys.exit(0 if same else 1)
EOF
