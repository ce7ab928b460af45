#!/usr/bin/env bash
# Split execution, the planner and the peer (rtl plan, rtl serve, rtl run
# --split/--peer) on the fixture catalog of tests/integration/rtl/fixtures.sh:
# - through every possible cut of every fixture variant, `rtl run --split S
#   --peer` answers what local `rtl run` answers, within 1e-5;
# - rtl plan: the plan is never worse than device-only and cloud-only for
#   its goal; a budget no placement meets is an error; a cut across a route
#   is refused;
# - security: an unknown device key is refused before any model work;
#   tampered, truncated, replayed (in a session and a whole recorded
#   session), oversized and garbage input each close that connection with a
#   logged reason while another connection is still served; 64 concurrent
#   clients get every answer right;
# - faults: refused, killed mid-request and slower than the deadline: the
#   request finishes on the device, says so, and equals the local answer;
# - SIGTERM stops the server cleanly (exit 0) after answering what it read.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
cd "$T" || exit 1
TOOL=$TESTD/rtl_peer_testtool

fx_rtl_installed
img=c/images/img1.bmp

expect_ok "peer-keygen makes the server's key pair" rtl peer-keygen srv
rtl peer-keygen dev >/dev/null && rtl peer-keygen stranger >/dev/null
expect_fail "peer-keygen never replaces a key" "never replaced" rtl peer-keygen srv
t_check "the secret key file is private (0600)" test "$(stat -c %a srv.key)" = 600
{ echo "# devices allowed"; cat dev.pub; } >allow

SRV_PID=
stop_server() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null; SRV_PID=; }
trap 'stop_server; [ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
# start_server LOG [ARGS...]: starts rtl serve on a free port into $PORT
start_server() {
    local log=$1; shift
    rm -f port
    "$RTL" --root "$R" serve --key srv --allow allow --port-file port "$@" >"$log" 2>&1 &
    SRV_PID=$!
    for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
    PORT=$(cat port 2>/dev/null)
    [ -n "$PORT" ]
}
peer_args() { echo --peer 127.0.0.1:$PORT --peer-key srv.pub --device-key dev; }

# where_is F.json: the "where" of the first result
where_is() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["where"])' "$1"; }

start_server serve.log || t_fail "rtl serve starts" "$(cat serve.log)"

# 1. every cut of every variant equals local
for v in $FX_RTL_VARIANTS; do
    rtl run rtlnet "$v" $img --top 10 --json --threads 1 >local-$v.json 2>&1 || { t_fail "local run $v" "$(cat local-$v.json)"; continue; }
    rtl plan rtlnet "$v" --json --runs 2 >plan-$v.json 2>plan-$v.err || { t_fail "rtl plan $v" "$(cat plan-$v.err)"; continue; }
    cuts=$(python3 -c '
import json,sys
p = json.load(open(sys.argv[1])); n = len(p["layers"])
print(" ".join(str(s) for s in range(n + 1) if s in (0, n) or p["layers"][s]["cut_before"]))' plan-$v.json)
    bad= ncut=0 kinds=
    for s in $cuts; do
        ncut=$((ncut + 1))
        if ! rtl run rtlnet "$v" $img --top 10 --json --threads 1 --split $s $(peer_args) >split-$v-$s.json 2>split.err; then
            bad="$bad $s(exit: $(cat split.err))"; continue
        fi
        same_answer local-$v.json split-$v-$s.json 2>>split.err || bad="$bad $s(differs: $(tail -n 1 split.err))"
        kinds="$kinds $(where_is split-$v-$s.json)"
    done
    if [ -z "$bad" ] && echo "$kinds" | grep -q split && echo "$kinds" | grep -q cloud; then
        t_ok "variant $v: all $ncut possible cuts through the peer equal local within 1e-5 ($kinds )"
    else
        t_fail "variant $v: every cut equals local" "bad cuts:$bad" "kinds:$kinds"
    fi
done
expect_fail "a split across a shortcut/route is refused" "reads across that cut" \
    rtl run rtlnet base $img --split 4 $(peer_args)

# --device-factor F (the host's rtl: runtime-lite/sim/emulate.c through
# rtl_offload_hooks): each device piece lasts F x its profiled CPU time
ms_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["ms_median"])' "$1"; }
rtl run rtlnet base $img --json --threads 1 --split 0 --repeat 3 --device-factor 1 >df1.json 2>df.err &&
    rtl run rtlnet base $img --json --threads 1 --split 0 --repeat 3 --device-factor 200 >df200.json 2>>df.err ||
    t_fail "rtl run --device-factor runs" "$(cat df.err)"
m1=$(ms_of df1.json) m200=$(ms_of df200.json)
t_check "--device-factor 200 paces the device: $m200 ms against $m1 ms at 1 (more than 10x)" \
    python3 -c "import sys; sys.exit(0 if $m200 > 10 * $m1 else 1)"

# 2. the planner
plan_ok() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); goal = sys.argv[2]
key = "latency_ms" if goal == "latency" else "energy_mj"
best = min(p["device_only"][key], p["cloud_only"][key])
assert p["plan"][key] <= best * (1 + 1e-9), (p["plan"][key], best)
print("%s %.4g vs best baseline %.4g" % (p["plan"]["placement"], p["plan"][key], best))
EOF
}
for link in 3g 4g wifi 1:100:50; do
    for goal in latency energy; do
        if rtl plan rtlnet rewrite-s2 --link $link --goal $goal --device-factor 400 --json --runs 2 >p.json 2>p.err &&
            out=$(plan_ok p.json $goal 2>&1); then
            t_ok "rtl plan --link $link --goal $goal is no worse than device-only and cloud-only ($out)"
        else
            t_fail "rtl plan --link $link --goal $goal" "$(cat p.err)" "$out"
        fi
    done
done
expect_fail "a deadline no placement meets is an error" "no placement meets the budget" \
    rtl plan rtlnet base --deadline 0.000001 --runs 1
expect_ok "a cloud budget of 0 keeps everything on the device" rtl plan rtlnet base --cloud-budget 0 --runs 1 --link wifi --device-factor 1000
t_check "... and the plan says so" grep -q '^plan  *device-only' "$T/out"
expect_fail "a bad link is a usage error" "needs 3g, 4g, wifi" rtl plan rtlnet base --link 5g
# --target: the estimate of the path this runtime takes (the target's CPU,
# not its GPU), called a lower bound (issue 35 item 3)
expect_ok "rtl plan --target" rtl plan rtlnet base --target jetson-nano --runs 1 --json
t_check "uses the target's CPU estimate, a lower bound" python3 -c '
import json, subprocess, sys
p = json.load(open(sys.argv[1]))
note = p["device_source"]
assert "CPU (the path this runtime takes)" in note and "lower bound" in note, note
inspect = json.loads(subprocess.run([sys.argv[2], "--root", sys.argv[3], "inspect", "rtlnet", "--json"],
                                    capture_output=True, text=True, check=True).stdout)
base = [v for v in inspect["variants"] if v["id"] == "base"][0]
est = [e for e in base["estimates"] if e["target"] == "jetson-nano"][0]
assert ("%.4g ms" % est["cpu"]["ms"]) in note and est["cpu"]["ms"] != est["ms"], (note, est)
' "$T/out" "$RTL" "$R"

# 3. security
bad_frames_before=$(grep -c "closed:" serve.log)
expect_ok "a good request through the test tool" "$TOOL" $R rtlnet base $PORT srv.pub dev good
expect_ok "a device offering protocol version 1 is answered in version 1" "$TOOL" $R rtlnet base $PORT srv.pub dev good-v1
expect_ok "the server's choice of version is authenticated" "$TOOL" $R rtlnet base $PORT srv.pub dev version-tamper
expect_ok "a hello of an unknown protocol version is closed" "$TOOL" $R rtlnet base $PORT srv.pub dev version-unknown
t_check "... logged with the versions the server speaks" grep -q "protocol version 9, this server speaks 1\.\." serve.log
expect_ok "an unknown device key is refused before any work" "$TOOL" $R rtlnet base $PORT srv.pub dev unknown-key stranger
t_check "... logged as an unknown device key" grep -q "closed: unknown device key" serve.log
for mode in tamper truncate replay replay-session oversize garbage; do
    expect_ok "a '$mode' connection is closed, another one still served" "$TOOL" $R rtlnet base $PORT srv.pub dev $mode
done
sleep 0.2
for why in "failed authentication" "truncated" "exceeds the limit" "bad magic"; do
    t_check "the server logged a reason: '$why'" grep -q "$why" serve.log
done
requests_before=$(grep -c "session open" serve.log)
expect_ok "64 concurrent clients: no lost or mixed-up answers" "$TOOL" $R rtlnet base $PORT srv.pub dev concurrent 64 4
t_check "... 64 sessions were opened" test $(($(grep -c "session open" serve.log) - requests_before)) -ge 64
t_check "no request failed on the server" bash -c "! grep -q 'request failed' $T/serve.log"
kill -TERM $SRV_PID
wait $SRV_PID
rc=$?
SRV_PID=
t_check "SIGTERM stops the server with exit 0 (was $rc)" test $rc = 0
t_check "... and it said it stopped" grep -q "rtl: stopped" serve.log

# 4. faults: each request finishes on the device
rtl run rtlnet base $img --top 10 --json --split 3 --peer 127.0.0.1:$PORT --peer-key srv.pub --device-key dev >refused.json 2>&1
if [ "$(where_is refused.json 2>/dev/null)" = "device (fallback)" ] && same_answer local-base.json refused.json; then
    t_ok "peer refused: the request finished on the device with the local answer"
else t_fail "peer refused: fallback" "$(cat refused.json)"; fi

start_server slow.log --emulate 100:100:3000
rtl run rtlnet base $img --top 10 --json --split 3 --deadline-ms 400 $(peer_args) >slow.json 2>&1
if [ "$(where_is slow.json 2>/dev/null)" = "device (fallback)" ] && grep -q "timed out" slow.json && same_answer local-base.json slow.json; then
    t_ok "peer slower than the deadline: finished on the device with the local answer"
else t_fail "slow peer: fallback" "$(cat slow.json)"; fi
# killed mid-request: the peer holds the request (emulated 3 s RTT) and dies
"$RTL" --root "$R" run rtlnet base $img --top 10 --json --split 3 --deadline-ms 20000 $(peer_args) >killed.json 2>&1 &
RUN_PID=$!
for _ in $(seq 100); do grep -q "session open" slow.log 2>/dev/null && [ "$(grep -c 'session open' slow.log)" -ge 2 ] && break; sleep 0.05; done
sleep 0.3
kill -KILL $SRV_PID; wait $SRV_PID 2>/dev/null; SRV_PID=
wait $RUN_PID
rc=$?
if [ $rc = 0 ] && [ "$(where_is killed.json 2>/dev/null)" = "device (fallback)" ] && same_answer local-base.json killed.json; then
    t_ok "peer killed mid-request: no request lost, it finished on the device ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["reason"])' killed.json))"
else t_fail "peer killed mid-request" "exit $rc" "$(cat killed.json)"; fi

# 5. bounds: a stalled handshake times out, connections beyond --max-clients are refused
start_server bounds.log --handshake-timeout 1000 --max-clients 2
exec 5<>/dev/tcp/127.0.0.1/$PORT 6<>/dev/tcp/127.0.0.1/$PORT
printf RTLP >&5
sleep 0.2
exec 7<>/dev/tcp/127.0.0.1/$PORT
for _ in $(seq 40); do grep -q "handshake timed out" bounds.log && break; sleep 0.1; done
t_check "a connection beyond --max-clients is refused and logged" grep -q "refused: 2 clients already" bounds.log
t_check "a stalled handshake is closed after --handshake-timeout" grep -q "handshake timed out" bounds.log
exec 5>&- 6>&- 7>&-
expect_ok "... and the server still serves a device" "$TOOL" $R rtlnet base $PORT srv.pub dev good
stop_server

# 6. a shaped link made here: two network namespaces joined by a veth pair,
# tc tbf on both ends (the bench's setup); a split request crosses it
NSA=rtltA$$ NSB=rtltB$$ VA=rtlt$$a VB=rtlt$$b
cleanup_ns() { ip netns del $NSA 2>/dev/null; ip netns del $NSB 2>/dev/null; }
trap 'stop_server; cleanup_ns; [ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    t_skip "a split request over a tc-shaped veth between namespaces" "needs root and iproute2"
elif ! { ip netns add $NSA && ip netns add $NSB && ip link add $VA type veth peer name $VB &&
         ip link set $VA netns $NSA && ip link set $VB netns $NSB &&
         ip -n $NSA addr add 10.78.0.1/30 dev $VA && ip -n $NSB addr add 10.78.0.2/30 dev $VB &&
         ip -n $NSA link set $VA up && ip -n $NSB link set $VB up && ip -n $NSB link set lo up &&
         ip netns exec $NSA tc qdisc add dev $VA root tbf rate 5850kbit burst 1600 latency 5000ms &&
         ip netns exec $NSB tc qdisc add dev $VB root tbf rate 13760kbit burst 1600 latency 5000ms; } 2>ns.err; then
    t_skip "a split request over a tc-shaped veth between namespaces" "cannot make namespaces here: $(head -n 1 ns.err)"
else
    rm -f port
    ip netns exec $NSB "$RTL" --root "$R" serve --listen 10.78.0.2 --key srv --allow allow --port-file port >ns.log 2>&1 &
    SRV_PID=$!
    for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
    ip netns exec $NSA "$RTL" --root "$R" run rtlnet base $img --top 10 --json --split 3 \
        --peer 10.78.0.2:$(cat port) --peer-key srv.pub --device-key dev >ns.json 2>&1
    sent=$(ip netns exec $NSA tc -s qdisc show dev $VA | sed -n 's/.*Sent \([0-9]*\) bytes.*/\1/p' | head -n 1)
    if [ "$(where_is ns.json 2>/dev/null)" = split ] && same_answer local-base.json ns.json && [ "${sent:-0}" -gt 3200 ]; then
        t_ok "a split request over a tc-shaped veth between namespaces ($sent bytes through the device's tbf)"
    else
        t_fail "a split request over a tc-shaped veth" "$(cat ns.json)" "tbf sent: ${sent:-?}" "$(cat ns.log)"
    fi
    stop_server
    cleanup_ns
fi

expect_fail "serve without --allow is a usage error" "needs --key and --allow" rtl serve --key srv
: >empty
expect_fail "an empty allow-list is refused" "lists no device key" rtl serve --key srv --allow empty
expect_fail "a public key that is not the secret key's half is refused" "not the public half" \
    bash -c "cp stranger.pub mixed.pub && cp srv.key mixed.key && '$RTL' --root $R serve --key mixed --allow allow"
t_done
