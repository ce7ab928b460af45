#!/usr/bin/env bash
# make bench: FlexDNN's early exits on the device runtime (issue 16 item 3):
# does the measured per-image latency of `rtl run`'s library track the
# expected MACs per image that the alpha profile promises?
#
# The model: a network at the default recipe's scale (recipes/alexnet:
# 32x32 inputs, five convolutions 32/32/48/48/32 with batch norm, connected
# 128/128/48), trained 150 batches on a small synthetic set (the bench
# needs exits that answer at different depths, not accuracy), then
# `prune early-exit` (a short search: the exits, thresholds and alpha
# profile on the set's 240 test images), packed with its exits, installed.
# With EXITS_CATALOG=ARCHIVE EXITS_PUBKEY=KEY EXITS_VARIANT=ID
# EXITS_IMAGES=DIR the same measurement runs on that catalog's variant
# (e.g. the default catalog's flexdnn and its test images).
#
# In one process (tests/tools/rtl_exitbench.c), one thread, each image
# decoded once; per image and alpha (interleaved), the median of RUNS
# (default 5) timed runs. Alphas: 0 (every image answers at the first
# exit), the profile's 0.5 .. 1.5, and 1000 (no exit is confident enough:
# every image runs the whole trunk and every exit: the reference).
#
# Printed per alpha: the expected MACs per image (each image's path: the
# trunk up to the exit that answered plus every exit evaluated on the way,
# the manifest's macs_to_exit and macs; beside it the manifest's own
# alpha_profile figure when it has that alpha), the mean measured latency
# per image, and the two as ratios to the reference (all trunk). Per exit:
# the mean latency of the runs it answered against its path's MACs.
#
# Judged (exit status 1 when either fails):
# - for every alpha of the manifest's alpha profile (what the catalog
#   promises), the latency ratio is within 25% of the expected-MACs ratio
#   (|lat ratio / MACs ratio - 1| <= 0.25);
# - over all alphas (0 and 1000 included), the Pearson correlation of mean
#   latency and expected MACs is at least 0.95.
# The exits would fail them if a run redid trunk work, if an exit cost far
# more time than its MACs say, or if exits were evaluated when they should
# not be. MACs leave out pooling, batch norm and activations, and a run has
# fixed costs (input copy, softmax, confidence), so the cheapest path sits
# above its MACs share: alpha 0 (not in the profile; printed, judged only
# through the correlation) answers everything at the first exit, after
# conv1, whose 3-channel input costs more time per MAC than the later
# layers (measured: 21% of the reference's MACs at 29% of its latency).
# Environment (from make): BIN, O, TOP; RUNS.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
W=$O/bench/rtl-exits
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
trap 'rm -rf "$W"' EXIT
runs=${RUNS:-5}
EB=$O/tests/tools/rtl-exitbench
export SOURCE_DATE_EPOCH=1700000000
fail() { echo "bench rtl-exits: $*"; exit 1; }
alphas=0,0.5,0.7,0.8,0.9,1,1.1,1.2,1.5,1000

mkdir -p root/keys
if [ -n "${EXITS_CATALOG:-}" ]; then
    cp "${EXITS_PUBKEY:?give EXITS_PUBKEY with EXITS_CATALOG}" root/keys/ || fail "cannot copy $EXITS_PUBKEY"
    "$BIN/rtl" -q --root root install "$EXITS_CATALOG" >install.log 2>&1 || { cat install.log; fail "cannot install"; }
    cid=$(ls root/catalogs | head -n1)
    vid=${EXITS_VARIANT:?give EXITS_VARIANT with EXITS_CATALOG}
    find "${EXITS_IMAGES:?give EXITS_IMAGES with EXITS_CATALOG}" -type f \( -name '*.png' -o -name '*.bmp' -o -name '*.jpg' \) |
        LC_ALL=C sort >images.txt
    jq --arg v "$vid" '.variants[] | select(.id == $v)' "$(ls -d root/catalogs/"$cid"/v* | head -n1)/manifest.json" \
        >variant.json 2>/dev/null && [ -s variant.json ] || fail "no variant $vid in catalog $cid"
    vj=variant.json
    what="catalog $cid variant $vid"
else
    "$BIN/dataset" generate --out . --name s --seed 5 --size 32 --train 20 --valid 5 --test 5 --no-contexts \
        --threads 1 >/dev/null 2>&1 || fail "cannot make the data set"
    {
        printf '[net]\nbatch=32\nwidth=32\nheight=32\nchannels=3\nlearning_rate=0.05\nmomentum=0.9\ndecay=0.0005\n'
        printf 'burn_in=0\npolicy=poly\npower=2\nmax_batches=150\nflip=1\n'
        for f in 32:5 32:5 48:3 48:3 32:3; do
            printf '[convolutional]\nbatch_normalize=1\nfilters=%s\nsize=%s\nstride=1\npad=1\nactivation=relu\n' \
                "${f%:*}" "${f#*:}"
            case $f in 32:5) printf '[maxpool]\nsize=3\nstride=2\n' ;; esac
        done
        printf '[maxpool]\nsize=3\nstride=2\n'
        printf '[connected]\noutput=128\nactivation=relu\n[connected]\noutput=128\nactivation=relu\n'
        printf '[connected]\noutput=48\nactivation=linear\n[softmax]\n'
    } >base.cfg
    "$BIN/trainer" train --cfg base.cfg --data s/s.data --backup tr --seed 1 --threads 1 >tr.log 2>&1 ||
        { cat tr.log; fail "cannot train the base"; }
    "$BIN/prune" early-exit --cfg base.cfg --weights tr/base.weights --data s/s.data --seed 2 --out e \
        --set stage1=60 --set finetune=20 --set batch=32 --threads 1 >e.log 2>&1 || { cat e.log; fail "prune early-exit"; }
    mkdir -p c/ee
    cp e/variant.cfg e/exits.cfg e/exits.weights c/ee/ && cp e/init.weights c/ee/variant.weights || fail "copy"
    tf=$(jq -c .technique_fields e/meta.json) && cost=$("$BIN/trainer" info --json e/variant.cfg) || fail "variant"
    printf '{"schema":1,"id":"ee","model":"exitbench","technique":"early-exit","parent":null,"depends_on":[],
 "description":"rtl_exits bench","task":"identity","files":[{"role":"cfg","path":"variant.cfg"},
 {"role":"weights","path":"variant.weights"},{"role":"exits_cfg","path":"exits.cfg"},
 {"role":"exits_weights","path":"exits.weights"}],"accuracy":{},"technique_fields":%s,"cost":%s}\n' \
        "$tf" "$cost" >c/ee/variant.json
    "$BIN/catalog" keygen -p k.pub -s k.key -W >/dev/null 2>&1 &&
        "$BIN/catalog" pack c -o out --task identity=s/s.names --version 1 --key k.key --zstd-level 1 >pack.log 2>&1 ||
        { cat pack.log; fail "cannot pack"; }
    cp k.pub root/keys/
    "$BIN/rtl" -q --root root install out/catalog-exitbench-1.tar.zst >/dev/null || fail "cannot install"
    cid=exitbench vid=ee
    sed 's|^|s/|' s/test.list >images.txt
    vj=c/ee/variant.json
    what="a recipe-scale network trained 150 batches, exits searched briefly"
fi
[ -s images.txt ] || fail "no images"
mapfile -t images <images.txt
"$EB" root "$cid" "$vid" "$runs" "$alphas" "${images[@]}" >lat.txt 2>eb.err || { cat eb.err; fail "rtl-exitbench failed"; }
echo "bench rtl-exits: $what; ${#images[@]} images, $runs timed runs each per alpha (median), 1 thread, $(uptime | sed 's/.*load/load/')"
python3 - lat.txt "$vj" <<'EOF'
import json, sys
from collections import defaultdict
tf = json.load(open(sys.argv[2]))["technique_fields"]
exits = tf["exits"]
trunk = tf["trunk_alone"]["macs"]
path = []  # MACs of the path ending at exit j (j = len(exits): the trunk)
for j, x in enumerate(exits):
    path.append(x["macs_to_exit"] + sum(e["macs"] for e in exits[:j + 1]))
path.append(trunk + sum(e["macs"] for e in exits))
prof = {round(p["alpha"], 6): p["expected_macs"] for p in tf.get("alpha_profile", [])}
lat, macs, per_exit = defaultdict(list), defaultdict(list), defaultdict(list)
for line in open(sys.argv[1]):
    w = line.split()
    if w[0] in ("exits", "exit"):
        continue
    a, j, ms = float(w[0]), int(w[2]), float(w[3])
    lat[a].append(ms)
    macs[a].append(path[j])
    per_exit[j].append(ms)
ref = max(lat)
ref_lat = sum(lat[ref]) / len(lat[ref])
ref_mac = sum(macs[ref]) / len(macs[ref])
print("  %-6s %12s %12s %10s %9s %9s %6s" % ("alpha", "exp. MACs", "(manifest)", "mean ms", "MACs/ref", "lat/ref", "judge"))
worst, ok, xs, ys = 0.0, True, [], []
for a in sorted(lat):
    m = sum(macs[a]) / len(macs[a])
    l = sum(lat[a]) / len(lat[a])
    rm, rl = m / ref_mac, l / ref_lat
    dev = rl / rm - 1
    man = prof.get(round(a, 6))
    judged = man is not None
    good = abs(dev) <= 0.25
    if judged:
        worst = max(worst, abs(dev))
        ok &= good
    xs.append(m); ys.append(l)
    print("  %-6g %12.0f %12s %10.4f %9.3f %9.3f %6s" % (a, m, "%.0f" % man if judged else "-", l, rm, rl,
                                                     ("ok" if good else "OFF") if judged else "-"))
print("  per exit (all alphas): " + "; ".join(
    "%s %.2f M MACs %.4f ms (%d runs)" % ("trunk" if j == len(exits) else "exit %d (layer %d)" % (j, exits[j]["layer"]),
                                        path[j] / 1e6, sum(v) / len(v), len(v)) for j, v in sorted(per_exit.items())))
n = len(xs)
mx, my = sum(xs) / n, sum(ys) / n
sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
sxx = sum((x - mx) ** 2 for x in xs)
syy = sum((y - my) ** 2 for y in ys)
r = sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else float("nan")
ok_r = r >= 0.95
if not any(round(a, 6) in prof for a in lat):
    print("  the manifest has no alpha profile at the alphas measured: nothing to judge")
    sys.exit(1)
print("  latency tracks expected MACs: over the profile's alphas the largest |lat ratio / MACs ratio - 1| = %.3f "
      "(judged <= 0.25): %s; Pearson r over all alphas %.3f (judged >= 0.95): %s"
      % (worst, "MET" if ok else "NOT MET", r, "MET" if ok_r else "NOT MET"))
sys.exit(0 if ok and ok_r else 1)
EOF
