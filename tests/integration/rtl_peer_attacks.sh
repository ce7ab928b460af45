#!/usr/bin/env bash
# Attacks on the split-execution peer (issue 36), each with small limits on
# loopback, on the fixture catalog of tests/integration/rtl/fixtures.sh:
# - a lying peer (wrong count, NaN, infinity): the device's answer is
#   exactly, byte for byte, the device-alone one;
# - slow drip: connections handshaken with the device's public key only,
#   sending a byte a second, are closed --frame-timeout after their frame
#   began, and beside them the device is served;
# - a keyless connection storm from one address: the device (another
#   address) is served within its deadline every time;
# - memory before authentication: 128 handshaken, unauthenticated
#   connections each declaring the largest frame they may leave the
#   server's VmHWM within 48 MB (and one declaring more is closed);
# - a peer holding another version of the catalog refuses split and GTDP
#   requests, and the device's run line names both versions;
# - keys: --device-key and --key take the secret key file (X.key) as
#   --peer-key takes the public one (the older X still works: rtl_offload);
#   a public key given as --device-key is refused saying so; a device that
#   pinned another server's key is told so, not "the peer closed".
# The attackers connect from 127.0.0.2, the device from 127.0.0.1.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
cd "$T" || exit 1
TOOL=$TESTD/rtl_peer_testtool

fx_rtl_installed
img=c/images/img1.bmp
rtl peer-keygen srv >/dev/null && rtl peer-keygen dev >/dev/null
cat dev.pub >allow

PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; [ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
# top_of F.json: the first result's top classes, exactly as printed
top_of() { python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["results"][0]["top"]))' "$1"; }
field_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0].get(sys.argv[2], ""))' "$1" "$2"; }

# 1. a lying peer: its answer is not used, the device's alone is given
rtl run rtlnet base $img --top 10 --json --threads 1 --split 3 >alone.json 2>alone.err ||
    t_fail "device-alone run" "$(cat alone.err)"
for how in short long nan inf zero; do
    rm -f fport
    "$TOOL" "$R" rtlnet base 0 dev.pub srv fake-server $how fport >fake-$how.log 2>&1 &
    FAKE=$!
    PIDS="$PIDS $FAKE"
    for _ in $(seq 100); do [ -s fport ] && break; sleep 0.05; done
    rtl run rtlnet base $img --top 10 --json --threads 1 --split 3 --peer 127.0.0.1:$(cat fport) \
        --peer-key srv.pub --device-key dev >lie-$how.json 2>lie-$how.err
    rc=$?
    wait $FAKE 2>/dev/null
    if [ $rc = 0 ] && [ "$(field_of lie-$how.json where)" = "device (fallback)" ] &&
        field_of lie-$how.json reason | grep -Eq "answered|NaN" && [ "$(top_of lie-$how.json)" = "$(top_of alone.json)" ]; then
        t_ok "a peer answering '$how': the device's own answer, byte for byte ($(field_of lie-$how.json reason))"
    else
        t_fail "a peer answering '$how': the device's own answer" "exit $rc" "$(cat lie-$how.json lie-$how.err fake-$how.log)"
    fi
done

SRV=
# serve LOG ARGS...: rtl serve on a free port ($PORT, pid $SRV)
serve() {
    local log=$1; shift
    rm -f port
    "$RTL" --root "${SROOT:-$R}" serve --key srv.key --allow allow --port-file port "$@" >"$log" 2>&1 &
    SRV=$!
    PIDS="$PIDS $SRV"
    for _ in $(seq 100); do [ -s port ] && break; sleep 0.05; done
    PORT=$(cat port 2>/dev/null)
}
unserve() { kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; SRV=; }
# device_served NAME DEADLINE: one split request by the device, answered by the peer within DEADLINE ms
device_served() {
    rtl run rtlnet base $img --top 10 --json --threads 1 --split 3 --deadline-ms $2 --peer 127.0.0.1:$PORT \
        --peer-key srv.pub --device-key dev.key >"$1.json" 2>"$1.err" && [ "$(field_of "$1.json" where)" = split ]
}

# 2. slow drip: 4 keyless connections, a byte a second each
serve drip.log --frame-timeout 2000 --max-clients 4 --max-per-source 2
"$TOOL" "$R" rtlnet base $PORT srv.pub dev drip 4 6 3.5 127.0.0.2 >drip.out 2>&1 &
DRIP=$!
sleep 1
if device_served drip-dev 3000; then t_ok "while 4 connections drip a byte a second, the device is served (split)"
else t_fail "device served beside a slow drip" "$(cat drip-dev.json drip-dev.err drip.log)"; fi
wait $DRIP
rc=$?
if [ $rc = 0 ] && grep -q "2 refused at connect" drip.out; then
    t_ok "dripping connections close within --frame-timeout of their frame's start, the third and fourth refused by --max-per-source ($(cat drip.out))"
else t_fail "dripping connections close within --frame-timeout" "$(cat drip.out)" "$(tail -n 20 drip.log)"; fi
t_check "... logged as a frame that did not end in time" grep -q "frame timed out" drip.log
unserve
# without the per-source limit the drip holds every slot, but only for --frame-timeout
serve drip2.log --frame-timeout 2000 --max-clients 4 --max-per-source 4
"$TOOL" "$R" rtlnet base $PORT srv.pub dev drip 4 6 3.5 127.0.0.2 >drip2.out 2>&1
rc=$?
if [ $rc = 0 ] && grep -q "4 connections dripping" drip2.out; then t_ok "4 dripping connections holding every slot are closed in time ($(cat drip2.out))"
else t_fail "4 dripping connections are closed in time" "$(cat drip2.out)" "$(tail -n 20 drip2.log)"; fi
if device_served drip2-dev 3000; then t_ok "... and the device is served after them"
else t_fail "device served after the drip" "$(cat drip2-dev.json drip2-dev.err)"; fi
unserve

# 3. a keyless connection storm from one address
serve storm.log --max-clients 16 --max-per-source 4 --handshake-rate 20 --handshake-timeout 3000
"$TOOL" "$R" rtlnet base $PORT srv.pub dev storm 8 127.0.0.2 >storm.out 2>&1 &
STORM=$!
sleep 1
served=0 tries=8 fails=
for i in $(seq $tries); do
    if device_served storm-$i 2000; then served=$((served + 1)); else fails="$fails $i: $(field_of storm-$i.json reason)"; fi
done
wait $STORM
if [ $served = $tries ]; then t_ok "during a keyless storm ($(cat storm.out)) the device was served $served times of $tries"
else t_fail "the device is served during a storm" "served $served of $tries:$fails" "$(cat storm.out)" "$(tail -n 5 storm.log)"; fi
t_check "... the storm was refused by the per-source limits (logged)" grep -q "refused: .*(--max-per-source)\|(--handshake-rate)" storm.log
unserve

# 4. memory before the first authenticated frame
serve hold.log --max-clients 130 --max-per-source 128 --handshake-rate 1000 --max-frame $((64 << 20))
"$TOOL" "$R" rtlnet base $PORT srv.pub dev hold 128 4113 1.5 127.0.0.2 $SRV >hold.out 2>&1
hwm=$(sed -n 's/.*VmHWM \([0-9]*\) kB.*/\1/p' hold.out)
if grep -q "128 of 128 connections handshaken.*128 still open" hold.out && [ -n "$hwm" ] && [ "$hwm" -lt 49152 ]; then
    t_ok "128 unauthenticated connections each declaring the largest frame they may: server VmHWM $hwm kB < 48 MB ($(cat hold.out))"
else t_fail "128 unauthenticated connections leave the server's memory small" "$(cat hold.out)" "$(tail -n 5 hold.log)"; fi
"$TOOL" "$R" rtlnet base $PORT srv.pub dev hold 128 $((64 << 20)) 1.5 127.0.0.2 $SRV >hold2.out 2>&1
hwm=$(sed -n 's/.*VmHWM \([0-9]*\) kB.*/\1/p' hold2.out)
if grep -q "0 still open" hold2.out && [ -n "$hwm" ] && [ "$hwm" -lt 49152 ]; then
    t_ok "128 declaring a 64 MiB frame before authenticating are closed; VmHWM $hwm kB"
else t_fail "frames over the unauthenticated bound are refused" "$(cat hold2.out)"; fi
t_check "... logged with the bound" grep -q "before the device's first authenticated frame: frame of" hold.log
if device_served hold-dev 3000; then t_ok "... and the device is then served (split)"
else t_fail "device served after the hold" "$(cat hold-dev.json hold-dev.err)"; fi
unserve

# memory for all connections together: frames wait for room, none is lost
serve mem.log --max-frame 65536 --max-memory 139264
expect_ok "32 devices at once under --max-memory of two frames: every answer right" \
    "$TOOL" "$R" rtlnet base $PORT srv.pub dev concurrent 32 3
t_check "... frames waited for memory (logged)" grep -q "waits for memory (.* of --max-memory 139264 bytes held)" mem.log
unserve
expect_fail "a memory cap that cannot hold one frame twice is refused" "does not hold one frame of 65536 bytes" \
    rtl serve --key srv.key --allow allow --max-frame 65536 --max-memory 100000

# 5. another catalog version on the peer
# peer_catalog N VARIANTS VERSION: c/VARIANTS packed as VERSION into c/outN and
# installed under rootN, for a peer (SROOT=rootN); logs packN.log, installN.log
peer_catalog() {
    "$CAT" pack "c/$2" -o "c/out$1" --task identity=c/identity.names --version "$3" --key c/k.key >"pack$1.log" 2>&1 &&
        mkdir -p "root$1/keys" && cp c/k.pub "root$1/keys/" &&
        "$RTL" --root "root$1" install "c/out$1/catalog-rtlnet-$3.tar.zst" >"install$1.log" 2>&1
}
peer_catalog 2 variants 2 ||
    t_fail "setup: version 2 of the catalog on the peer" "$(cat pack2.log install2.log)"
SROOT=root2 serve v2.log
rtl run rtlnet base $img --top 10 --json --threads 1 --split 3 --peer 127.0.0.1:$PORT --peer-key srv.pub \
    --device-key dev >v1.json 2>v1.err
if [ "$(field_of v1.json where)" = "device (fallback)" ] && [ "$(top_of v1.json)" = "$(top_of alone.json)" ] &&
    [ "$(field_of v1.json reason)" = "peer has rtlnet version 2, this device 1" ]; then
    t_ok "a split request to a peer with another catalog version is refused: [device (fallback): $(field_of v1.json reason)]"
else t_fail "a peer with another catalog version refuses" "$(cat v1.json v1.err)"; fi
rtl run rtlnet base $img --top 10 --split 3 --peer 127.0.0.1:$PORT --peer-key srv.pub --device-key dev >v1.txt 2>&1
t_check "... and the run line says so" grep -q "\[device (fallback): peer has rtlnet version 2, this device 1," v1.txt
rtl run rtlnet base $img --top 10 --json --threads 1 --workers 127.0.0.1:$PORT --peer-key srv.pub --device-key dev \
    >gv1.json 2>gv1.err
first_class() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["top"][0]["index"])' "$1"; }
if grep -q "peer has rtlnet version 2, this device 1" gv1.json && [ "$(first_class gv1.json)" = "$(first_class alone.json)" ]; then
    t_ok "a GTDP part for another catalog version is refused and computed here ($(field_of gv1.json failure))"
else t_fail "a GTDP worker with another catalog version refuses" "$(cat gv1.json gv1.err)"; fi
t_check "... the peer logged the refusal" grep -q "request failed: peer has rtlnet version 2, this device 1" v2.log
unserve
# the same version number with another manifest (here: one variant described otherwise)
cp -r c/variants c/variants3 && sed -i 's/"rtl fixture base"/"rtl fixture base, described again"/' c/variants3/base/variant.json &&
    peer_catalog 3 variants3 1 ||
    t_fail "setup: another version 1 of the catalog on the peer" "$(cat pack3.log install3.log)"
SROOT=root3 serve v3.log
rtl run rtlnet base $img --top 10 --json --threads 1 --split 3 --peer 127.0.0.1:$PORT --peer-key srv.pub \
    --device-key dev.key >m1.json 2>m1.err
if [ "$(field_of m1.json where)" = "device (fallback)" ] && [ "$(top_of m1.json)" = "$(top_of alone.json)" ] &&
    field_of m1.json reason | grep -Eq "^peer has rtlnet version 1 with another manifest \(sha256 [0-9a-f]{16}\.\.\., this device's [0-9a-f]{16}\.\.\.\)$"; then
    t_ok "a peer with the same version number but another manifest refuses too: $(field_of m1.json reason)"
else t_fail "a peer with another manifest of the same version refuses" "$(cat m1.json m1.err)"; fi
unserve

# 6. keys
rtl peer-keygen stranger >/dev/null
serve keys.log
if device_served keys 3000; then t_ok "rtl serve --key srv.key and rtl run --device-key dev.key --peer-key srv.pub: served (split)"
else t_fail "the key files as arguments" "$(cat keys.json keys.err keys.log)"; fi
rtl run rtlnet base $img --top 10 --split 3 --peer 127.0.0.1:$PORT --peer-key stranger.pub --device-key dev.key >wrongkey.txt 2>&1
rc=$?
if grep -q "device (fallback): handshake with 127.0.0.1:$PORT: the server closed the connection at this device's first frame: its key is not the one pinned" wrongkey.txt; then
    t_ok "a device that pinned another server's key is told so (exit $rc): $(grep -o 'the server closed[^]]*' wrongkey.txt)"
else t_fail "a wrong pinned server key is named" "$(cat wrongkey.txt)"; fi
t_check "... while the server logs why it closed" grep -q "failed authentication .*pinned another server key" keys.log
expect_fail "a public key given as --device-key is refused, naming the file to give" "dev.pub is a public key: give the secret key file, dev.key" \
    rtl run rtlnet base $img --split 3 --peer 127.0.0.1:$PORT --peer-key srv.pub --device-key dev.pub
unserve
t_done
