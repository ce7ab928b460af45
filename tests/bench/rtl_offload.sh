#!/usr/bin/env bash
# make bench: JointDNN split planning measured end to end (rtl plan, rtl
# serve, rtl run --split). For each link (JointDNN Table 3's 3G, 4G and WiFi
# throughputs and radio powers, plus a high-latency one) a peer serves with
# that link emulated inside it (rate and RTT: this kernel has no sch_netem,
# see runtime-lite/README.md), and the same image runs device-only (--split
# N), cloud-only (--split 0) and as planned (--split auto), interleaved,
# REPEAT processes each; each process runs the image 3 times over one
# persistent connection (its median: steady state, warm caches, as the
# planner's per-layer profile is), and the table shows the medians over
# the processes. Printed per link: measured
# and predicted latency of each, the plan's gain over the better baseline,
# its device energy (radio model) against the baselines', and the
# prediction error.
#
# Device and cloud speed on one shared 2-core machine: both sides compute
# here with one thread; the device is modelled as DEVICE_FACTOR (default 8)
# times slower than this machine (rtl run waits factor-1 times each device
# piece's measured time after it), the cloud as this machine (factor 1).
#
# The networks: "base", 3x128x128 input, two cheap strided layers that
# shrink it to 16x16x16, then three 256-filter convolutions (the bulk of
# the MACs), average pool, a connected layer, softmax; "alexnet", Darknet's
# alexnet.cfg (227x227, the cfg of tests/bench/rtl_run.sh); each trained
# one step.
# Environment (from make): BIN, O, TOP; REPEAT (default 7), DEVICE_FACTOR.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
W=$O/bench/rtl-offload
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
SRV=
. "$TOP/tests/integration/rtl/fixtures.sh"
repeat=${REPEAT:-7}
factor=${DEVICE_FACTOR:-8}

fx_rtl_data c >/dev/null || { echo "bench rtl-offload: cannot make the data set"; exit 1; }
{
    printf '[net]\nbatch=1\nsubdivisions=1\nheight=128\nwidth=128\nchannels=3\n'
    printf 'momentum=0.9\ndecay=0.0005\nlearning_rate=0.001\nmax_batches=1\n'
    printf '[convolutional]\nfilters=8\nsize=3\nstride=2\npad=1\nactivation=relu\n'
    printf '[maxpool]\nsize=2\nstride=2\n'
    printf '[convolutional]\nfilters=16\nsize=3\nstride=2\npad=1\nactivation=relu\n'
    printf '[convolutional]\nfilters=256\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[convolutional]\nfilters=256\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[maxpool]\nsize=2\nstride=2\n'
    printf '[convolutional]\nfilters=256\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[avgpool]\n[connected]\noutput=10\nactivation=linear\n[softmax]\n'
} >split.cfg
fx_alexnet_cfg >alexnet.cfg && [ -s alexnet.cfg ] || { echo "bench rtl-offload: cannot write AlexNet's cfg"; exit 1; }
fx_rtl_variant c base base - split.cfg 1 && fx_rtl_variant c alexnet rewrite base alexnet.cfg 1 ||
    { echo "bench rtl-offload: cannot train the variants"; exit 1; }
fx_rtl_peer_root || { echo "bench rtl-offload: cannot make the installed catalog and peer keys"; exit 1; }
img=c/images/img3.bmp

# The link: when network namespaces can be made here (root, iproute2),
# the device and the peer run in two namespaces joined by a veth pair whose
# two ends are shaped by tc's tbf (upload rate on the device's end,
# download rate on the peer's), and the peer adds the RTT (this kernel has
# no sch_netem for delay); otherwise the peer emulates rate and RTT.
NSA=rtlbA$$ NSB=rtlbB$$ VA=rtlb$$a VB=rtlb$$b
netns=0
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && command -v tc >/dev/null &&
    ip netns add $NSA 2>/dev/null && ip netns add $NSB 2>/dev/null &&
    ip link add $VA type veth peer name $VB 2>/dev/null && ip link set $VA netns $NSA && ip link set $VB netns $NSB &&
    ip -n $NSA addr add 10.77.0.1/30 dev $VA && ip -n $NSB addr add 10.77.0.2/30 dev $VB &&
    ip -n $NSA link set $VA up && ip -n $NSB link set $VB up && ip -n $NSA link set lo up && ip -n $NSB link set lo up &&
    ip netns exec $NSA tc qdisc add dev $VA root tbf rate 1mbit burst 1600 latency 2000ms 2>/dev/null; then
    netns=1
fi
cleanup_ns() { ip netns del $NSA 2>/dev/null; ip netns del $NSB 2>/dev/null; }
[ $netns = 1 ] || cleanup_ns
trap '[ -n "$SRV" ] && kill $SRV 2>/dev/null; wait 2>/dev/null; cleanup_ns; rm -rf "$W"' EXIT
# shape UP DOWN: the veth's two ends, Mbps
shape() {
    ip netns exec $NSA tc qdisc replace dev $VA root tbf rate "$(awk "BEGIN{print int($1*1000)}")kbit" burst 1600 latency 5000ms &&
        ip netns exec $NSB tc qdisc replace dev $VB root tbf rate "$(awk "BEGIN{print int($2*1000)}")kbit" burst 1600 latency 5000ms
}

# link name, rtl --link value, emulation UP:DOWN:RTT
links="3g:3g:1.1:2.0275:0 4g:4g:5.85:13.76:0 wifi:wifi:18.88:54.97:0 4g+400ms:4g:5.85:13.76:400"
printf '%-7s | %-9s | %-17s | %-17s | %-14s | %-17s | %7s | %-20s | %s\n' model link "device-only ms" "cloud-only ms" \
    placement "plan ms" "gain" "energy mJ plan/best" "error (meas/pred - 1)"
printf '%-7s | %-9s | %-17s | %-17s | %-14s | %-17s | %7s | %-20s | %s\n' "" "" "meas (pred)" "meas (pred)" "" "meas (pred)" \
    "vs best" "(radio model)" "dev / cloud / plan"
status=0
summary=
for spec in $links; do
    IFS=: read -r name link up down rtt <<<"$spec"
    rm -f port
    if [ $netns = 1 ]; then
        shape "$up" "$down" || { echo "bench rtl-offload: tc cannot shape the veth"; exit 1; }
        ip netns exec $NSB "$RTL" --root root serve --listen 10.77.0.2 --key srv --allow allow --port-file port \
            --threads 1 --emulate "0:0:$rtt" >serve-$name.log 2>&1 &
        host=10.77.0.2 on_device="ip netns exec $NSA"
    else
        "$RTL" --root root serve --key srv --allow allow --port-file port --threads 1 --emulate "$up:$down:$rtt" \
            >serve-$name.log 2>&1 &
        host=127.0.0.1 on_device=
    fi
    SRV=$!
    for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
    rtl() { $on_device "$RTL" --root root "$@"; }
    common="--top 1 --json --threads 1 --runs 10 --repeat 3 --device-factor $factor --link $link --rtt $rtt
            --peer $host:$(cat port) --peer-key srv.pub --device-key dev --deadline-ms 60000"
  for v in base alexnet; do
    n=$(rtl plan rtlnet $v --json --runs 1 | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["layers"]))')
    # interleaved, so that the machine's load drifts alike for all three
    : >dev-$name.json; : >cloud-$name.json; : >plan-$name.json
    for _ in $(seq $repeat); do
        { rtl run rtlnet $v $img --split "$n" $common | tr -d '\n\t'; echo; } >>dev-$name.json 2>dev.err &&
            { rtl run rtlnet $v $img --split 0 $common | tr -d '\n\t'; echo; } >>cloud-$name.json 2>cloud.err &&
            { rtl run rtlnet $v $img --split auto $common | tr -d '\n\t'; echo; } >>plan-$name.json 2>plan.err || {
            echo "bench rtl-offload: $name: a run failed: $(cat dev.err cloud.err plan.err)"; status=1; break; }
    done
    out=$(python3 - "$v" "$name" dev-$name.json cloud-$name.json plan-$name.json <<'EOF'
import json, sys
import statistics
model, name = sys.argv[1:3]
runs = [[json.loads(l) for l in open(f) if l.strip()] for f in sys.argv[3:6]]
for r in runs:
    for x in r:
        assert not x["results"][0]["fell_back"], x["results"][0]
# per kind: medians over the interleaved runs of the measured latency, the
# prediction and the predicted energy; the placement of the last plan
med = lambda r, f: statistics.median(f(x) for x in r)
d, c, p = ({"ms": med(r, lambda x: x["results"][0]["ms_median"]), "pred": med(r, lambda x: x["plan"]["latency_ms"]),
            "mj": med(r, lambda x: x["plan"]["energy_mj"]), "plan": r[-1]["plan"]} for r in runs)
places = sorted(set(x["plan"]["placement"] for x in runs[2]))
def m(x): return x["ms"]
def pr(x): return x["pred"]
def e(x): return x["mj"]
best = min(m(d), m(c))
gain = 1 - m(p) / best
ebest = min(e(d), e(c))
errs = [m(x) / pr(x) - 1 for x in (d, c, p)]
print("%-7s | %-9s | %7.1f (%7.1f) | %7.1f (%7.1f) | %-14s | %7.1f (%7.1f) | %6.1f%% | %6.1f / %6.1f %-5s | %+.0f%% / %+.0f%% / %+.0f%%" % (
    model, name, m(d), pr(d), m(c), pr(c), "/".join(places), m(p), pr(p), 100 * gain, e(p), ebest,
    "(%+.0f%%)" % (100 * (e(p) / ebest - 1)), *(100 * x for x in errs)))
# verdicts: at least as fast as the better baseline (a 5% allowance for
# the noise between runs of the same placement),
# prediction within 25%
print("VERDICT %s/%s %.4f %d %d" % (model, name, gain, gain >= -0.05, all(abs(x) <= 0.25 for x in errs)))
EOF
) || { echo "bench rtl-offload: $v $name: $out"; status=1; continue; }
    echo "$out" | grep -v '^VERDICT'
    summary="$summary$(echo "$out" | grep '^VERDICT')"$'\n'
  done
  kill -TERM $SRV; wait $SRV; SRV=
done
echo "$summary" | python3 -c '
import sys
rows = [l.split() for l in sys.stdin if l.startswith("VERDICT")]
fast = all(r[3] == "1" for r in rows); big = max(float(r[2]) for r in rows) if rows else 0
pred = all(r[4] == "1" for r in rows)
print("plan at least as fast as the better of device-only and cloud-only on every link and model: %s" % ("yes" if fast else "NO"))
print("largest latency gain over the better baseline: %.0f%% (target >= 30%% on one link): %s" % (100 * big, "yes" if big >= 0.30 else "NO"))
print("measured latency within 25%% of the prediction everywhere: %s" % ("yes" if pred else "NO"))
sys.exit(0 if fast and big >= 0.30 and pred else 1)
' || status=1
if [ $netns = 1 ]; then how="rates shaped by tc tbf on a veth pair between two network namespaces, RTT added by the peer"
else how="rate and RTT emulated inside the peer (no network namespace could be made)"; fi
echo "(device = this machine x $factor, one thread; cloud = this machine, one thread; link: $how; $repeat runs each, medians)"
exit $status
