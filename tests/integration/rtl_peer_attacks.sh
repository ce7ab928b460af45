#!/usr/bin/env bash
# Attacks on the split-execution peer (issue 36), each with small limits on
# loopback, on the fixture catalog of tests/integration/rtl/fixtures.sh:
# - a lying peer (wrong count, NaN, infinity): the device's answer is
#   exactly, byte for byte, the device-alone one;
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
        [ "$(top_of lie-$how.json)" = "$(top_of alone.json)" ]; then
        t_ok "a peer answering '$how': the device's own answer, byte for byte ($(field_of lie-$how.json reason))"
    else
        t_fail "a peer answering '$how': the device's own answer" "exit $rc" "$(cat lie-$how.json lie-$how.err fake-$how.log)"
    fi
done
t_done
