#!/usr/bin/env bash
# Crash safety of rtl install, rtl rollback and rtl pull: the test build of rtl
# ($TESTD/rtl-crash, compiled with RTL_CRASH_POINTS=1) kills itself with
# SIGKILL at the Nth crash point (RTL_CRASH_AT=N); every point of an install
# and of a rollback is tried in turn. After each kill the store must hold a
# complete catalog, the old or the new one, that verifies (signature,
# manifest, every file), and the next install must succeed and clean up.
# Then the release rtl is killed at spread-out moments of a larger install.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
# The stores live on tmpfs when there is one: a SIGKILL test needs no
# durable fsync (the page cache survives the process), and fsync on a shared
# disk made this file 5x slower. rtl_install.sh and rtl_attacks.sh run on disk.
if [ -d /dev/shm ] && [ -w /dev/shm ] && W=$(mktemp -d /dev/shm/rt-crash.XXXXXX 2>/dev/null); then
    [ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$T" "$W"' EXIT
    cd "$W" || exit 1
else
    cd "$T" || exit 1
fi
CRASH=${TESTD:-$O/tests}/rtl-crash
[ -x "$CRASH" ] || CRASH=$O/tests/rtl-crash

fx_keyed_catalog
for v in 1 2 3; do fx_pack c c --version $v --key k.key >/dev/null 2>&1; done
A=c/catalog-tinynet
mkdir -p base/keys && cp k.pub base/keys/
"$RTL" --root base install $A-1.tar.zst >/dev/null 2>&1 && "$RTL" --root base install $A-2.tar.zst >/dev/null 2>&1
# leftovers of an earlier crash, for the clean-up at the start to remove
mkdir -p base/catalogs/tinynet/.staging-99999/variants && echo partial >base/catalogs/tinynet/.staging-99999/variants/x
echo "current v9.9" >base/catalogs/tinynet/STATE.tmp

version_of() { "$RTL" --root "$1" list 2>/dev/null | awk '$1 == "tinynet" { print $2 "/" $3 }'; }
t_check "setup: version 2 current, 1 previous" test "$(version_of base)" = 2/1

# crash_sweep NAME WANT-BEFORE WANT-AFTER CMD...: kill CMD at each of its
# crash points. The retry after a kill is CMD again from the old state, and
# from the new state $RETRY_AFTER (the operator's next step).
crash_sweep() {
    local name=$1 before=$2 after=$3
    shift 3
    rm -rf probe && cp -a base probe
    RTL_CRASH_TRACE=1 "$CRASH" --root probe "$@" >/dev/null 2>trace || { t_fail "$name: runs without a crash"; return; }
    local n
    n=$(grep -c '^crash point' trace)
    local bad='' seen_before=0 seen_after=0 k state rc
    for ((k = 1; k <= n; k++)); do
        rm -rf r && cp -a base r
        { RTL_CRASH_AT=$k "$CRASH" --root r "$@" >/dev/null 2>&1; rc=$?; } 2>/dev/null
        state=$(version_of r)
        if [ "$rc" != 137 ]; then bad="$bad $k(exit $rc, not killed)"; continue; fi
        if ! "$RTL" --root r verify tinynet >verify.out 2>&1; then bad="$bad $k(does not verify: $(tail -n 1 verify.out))"; continue; fi
        case $state in
        "$before") seen_before=$((seen_before + 1)) ;;
        "$after") seen_after=$((seen_after + 1)) ;;
        *) bad="$bad $k(state $state)"; continue ;;
        esac
        # the next attempt succeeds and leaves nothing behind
        if [ "$state" = "$before" ]; then "$RTL" --root r "$@" >/dev/null 2>&1
        else eval "\"\$RTL\" --root r $RETRY_AFTER" >/dev/null 2>&1; fi || { bad="$bad $k(retry failed)"; continue; }
        if ls -a r/catalogs/tinynet | grep -Eq '^(\.staging|STATE\.tmp)' ||
           [ "$(ls r/catalogs/tinynet | grep -c '^v')" -gt 2 ]; then bad="$bad $k(leftovers: $(ls -a r/catalogs/tinynet | tr '\n' ' '))"; fi
    done
    if [ -z "$bad" ] && [ "$seen_before" -gt 0 ] && [ "$seen_after" -gt 0 ]; then
        t_ok "$name: killed at each of $n crash points: $seen_before times the old catalog, $seen_after times the new, always complete and verifying"
    else
        t_fail "$name: killed at each of $n crash points" "problems at:${bad:- none} (old $seen_before, new $seen_after)" "$(head -n 3 trace)"
    fi
}

if [ ! -x "$CRASH" ]; then
    t_skip "install crash points" "the crash-test build of rtl is missing ($CRASH)"
else
    RETRY_AFTER="install --allow-downgrade $A-3.tar.zst" crash_sweep "install of version 3" 2/1 3/2 install $A-3.tar.zst
    RETRY_AFTER="rollback tinynet" crash_sweep "rollback" 2/1 1/2 rollback tinynet
    t_check "the trace names the switch points" grep -q 'state-renamed' trace
    # rtl pull of version 4 (two variants changed) from a publish folder
    # (file://): every crash point of the download (index accepted, each file
    # kept) and of the install
    for v in base nested; do "$TOOL" bytes 99 "$(stat -c %s c/variants/$v/variant.weights)" >c/variants/$v/variant.weights; done
    fx_pack c c --version 4 --key k.key >/dev/null 2>&1
    "$CAT" publish $A-4.tar.zst -o pub --key k.key >/dev/null 2>&1
    RETRY_AFTER="pull file://$PWD/pub" crash_sweep "pull of version 4, per file" 2/1 4/2 pull "file://$PWD/pub"
    t_check "the trace names the download points" test "$(grep -c 'pull-object-kept' trace)" = 3
    RETRY_AFTER="pull --whole-archive file://$PWD/pub" crash_sweep "pull of version 4, whole archive" 2/1 4/2 \
        pull --whole-archive "file://$PWD/pub"
fi

# The release rtl killed by timing during a larger install.
rm -rf big && mkdir big && fx_catalog big 40 >/dev/null
fx_pack big big --version 1 --key k.key >/dev/null 2>&1
fx_pack big big --version 2 --key k.key >/dev/null 2>&1
rm -rf tbase && mkdir -p tbase/keys && cp k.pub tbase/keys/
"$RTL" --root tbase install big/catalog-tinynet-1.tar.zst >/dev/null 2>&1
cp -a tbase tprobe
t0=$(date +%s%N)
"$RTL" --root tprobe install big/catalog-tinynet-2.tar.zst >/dev/null 2>&1
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
bad='' old=0 new=0
for i in 1 2 3 4 5 6 7 8 9 10; do
    rm -rf tr && cp -a tbase tr
    "$RTL" --root tr install big/catalog-tinynet-2.tar.zst >/dev/null 2>&1 &
    pid=$!
    sleep "$(awk -v ms="$ms" -v i="$i" 'BEGIN { printf "%.4f", ms * i / 11 / 1000 }')"
    { kill -KILL "$pid"; wait "$pid"; } 2>/dev/null
    "$RTL" --root tr verify tinynet >/dev/null 2>&1 || bad="$bad $i(does not verify)"
    case $(version_of tr) in 1/-) old=$((old + 1)) ;; 2/1) new=$((new + 1)) ;; *) bad="$bad $i(state $(version_of tr))" ;; esac
    "$RTL" --root tr install big/catalog-tinynet-2.tar.zst >/dev/null 2>&1
    [ "$(version_of tr)" = 2/1 ] || bad="$bad $i(retry: $(version_of tr))"
done
if [ -z "$bad" ]; then t_ok "the release rtl killed at 10 moments of a ${ms} ms install: old catalog $old times, new $new times, always verifying"
else t_fail "the release rtl killed by timing" "problems at:$bad"; fi
t_done
