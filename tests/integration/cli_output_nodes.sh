#!/usr/bin/env bash
# Every output file option of every verb, pointed at what is not a plain new
# file (issue 35, item 1). All of them write through trn_atomic_open
# (rtl's through rtl_write_file, which calls it): a temporary file in the
# same folder renamed over a regular file, and otherwise
#   - a device node (mknod copies of /dev/null and /dev/full): written in
#     place, never replaced; the /dev/full copy is exit 1 with ENOSPC's text;
#   - a FIFO with a reader: written in place, the reader gets the bytes;
#   - a symbolic link: followed, the file it names replaced, the link kept;
#   - /dev/stdout: the bytes come out on standard output.
# No temporary file is left behind in any case.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1
TRAINER=$BIN/trainer PRUNE=$BIN/prune CAT=$BIN/catalog RTL=$BIN/rtl

if ! mknod probe c 1 3 2>/dev/null; then t_skip "output nodes" "mknod needs root here"; t_done; exit 0; fi
rm -f probe

# A small real catalog: one trained variant (convolutions a scan can prune),
# packed and signed, installed; and the catalog tests' archive, which has the
# accuracies rtl simulate schedules with.
mkdir -p c && fx_rtl_data c >fixture.log 2>&1 && fx_rtl_cfg rewrite-s2 >c/base.cfg &&
    fx_rtl_variant c base base - c/base.cfg 4 >>fixture.log 2>&1 &&
    "$CAT" keygen -p c/k.pub -s c/k.key -W >/dev/null 2>&1 &&
    "$CAT" pack c/variants -o c/out --task identity=c/identity.names --version 1 --key c/k.key >>fixture.log 2>&1 &&
    mkdir -p root/keys && cp c/k.pub root/keys/ && "$RTL" --root root -q install c/out/catalog-rtlnet-1.tar.zst >>fixture.log 2>&1 &&
    "$RTL" peer-keygen srv >>fixture.log 2>&1 && "$RTL" peer-keygen dev >>fixture.log 2>&1 && cp dev.pub allow &&
    fx_catalog sim >>fixture.log 2>&1 && fx_pack sim sim --version 1 --key c/k.key >>fixture.log 2>&1
if [ $? != 0 ]; then t_fail "fixture catalog" "$(tail -n 20 fixture.log)"; t_done; exit 0; fi
A=$T/c/out/catalog-rtlnet-1.tar.zst
W=$T/c/variants/base/variant.weights
CFG=$T/c/variants/base/variant.cfg
DATA=$T/c/rtl.data

# The table: verb and option | the output's file name | the command, run in a
# fresh folder, @O@ standing for the output path. Options that name a folder
# (--out DIR, -o OUT_DIR, --backup) write their files through the same
# function; trainer train's row stands for them (BASE.weights in --backup).
ROWS=(
    "trainer train --backup DIR (BASE.weights)|bk/variant.weights|$TRAINER train --cfg $CFG --data $DATA --set max_batches=1 --backup bk --seed 7 --threads 1 --loader-threads 1 --quiet"
    "prune l1 --out|rank.json|$PRUNE l1 --cfg $CFG --weights $W --out @O@ --threads 1"
    "prune trr --out|rank.json|$PRUNE trr --cfg $CFG --weights $W --data $DATA --seed 1 --triplets 8 --split train --out @O@ --threads 1"
    "prune scan --out|scan.json|$PRUNE scan --cfg $CFG --weights $W --data $DATA --method l1 --seed 1 --split train --out @O@ --threads 1"
    "catalog cost --out|cost.json|$CAT cost --cfg $CFG --out @O@"
    "catalog profile --out|profile.json|$CAT profile --cfg $CFG --weights $W --runs 1 --warmup 0 --threads 1 --out @O@"
    "catalog keygen -p|k.pub|$CAT keygen -p @O@ -s k.key -W -f"
    "catalog keygen -s|k.key|$CAT keygen -p k.pub -s @O@ -W -f"
    "catalog sign -x|a.minisig|$CAT sign $A -s $T/c/k.key -x @O@"
    "catalog report -o BASE (BASE.report.md)|r.report.md|$CAT report $A -o r"
    "catalog report -o BASE (BASE.report.html)|r.report.html|$CAT report $A -o r"
    "catalog report -o BASE (BASE.pareto-macs.svg)|r.pareto-macs.svg|$CAT report $A -o r"
    "rtl simulate --svg|fig.svg|$RTL --root $T/root simulate $T/sim/catalog-tinynet-1.tar.zst --trace s1 --hours 0.01 --svg @O@"
    "rtl serve --port-file|port|timeout --preserve-status -s TERM 2 $RTL --root $T/root serve --key $T/srv --allow $T/allow --port-file @O@"
)

# run_row DIR OUT CMD: runs CMD in DIR with @O@ replaced by OUT; stderr in
# DIR/err. rtl serve stopped by timeout's SIGTERM exits 0.
run_row() {
    local dir=$1 out=$2 cmd=${3//@O@/$2}
    (cd "$dir" && eval "$cmd" >stdout 2>err)
}

# no_temp DIR: no temporary file (NAME.tmp.PID) left in DIR or below.
no_temp() { [ -z "$(find "$1" -name '*.tmp.*' -print -quit)" ]; }

check_row() {
    local name=$1 out=$2 cmd=$3 d rc rp
    # a new file: the verb works here, so every failure below is the node's
    d=$T/w/new; rm -rf "$d"; mkdir -p "$d/$(dirname "$out")"
    run_row "$d" "$out" "$cmd"; rc=$?
    if [ "$rc" != 0 ] || [ ! -s "$d/$out" ]; then
        t_fail "$name: writes a new file" "exit $rc" "$(tail -n 3 "$d/err")"; return
    fi
    # a copy of /dev/null: written in place, still the device
    d=$T/w/null; rm -rf "$d"; mkdir -p "$d/$(dirname "$out")"; mknod "$d/$out" c 1 3
    run_row "$d" "$out" "$cmd"; rc=$?
    if [ "$rc" = 0 ] && [ -c "$d/$out" ] && no_temp "$d"; then t_ok "$name: a /dev/null node is written, not replaced"
    else t_fail "$name: a /dev/null node is written, not replaced" "exit $rc, $(stat -c %F "$d/$out")" "$(tail -n 3 "$d/err")"; fi
    # a copy of /dev/full: exit 1 saying why, still the device
    d=$T/w/full; rm -rf "$d"; mkdir -p "$d/$(dirname "$out")"; mknod "$d/$out" c 1 7
    run_row "$d" "$out" "$cmd"; rc=$?
    if [ "$rc" = 1 ] && [ -c "$d/$out" ] && grep -q "No space left on device" "$d/err" && no_temp "$d"; then
        t_ok "$name: a /dev/full node is exit 1 with ENOSPC, not replaced"
    else t_fail "$name: a /dev/full node is exit 1 with ENOSPC, not replaced" "exit $rc, $(stat -c %F "$d/$out")" "$(tail -n 3 "$d/err")"; fi
    # a FIFO with a reader: the reader gets the same bytes as the new file
    d=$T/w/fifo; rm -rf "$d"; mkdir -p "$d/$(dirname "$out")"; mkfifo "$d/$out"
    cat "$d/$out" >"$T/w/fifo.got" & rp=$!
    run_row "$d" "$out" "$cmd"; rc=$?
    # the reader ends at the writer's close; one that was never reached is stopped
    for _ in $(seq 100); do kill -0 "$rp" 2>/dev/null || break; sleep 0.05; done
    kill "$rp" 2>/dev/null; wait "$rp" 2>/dev/null
    if [ "$rc" = 0 ] && [ -p "$d/$out" ] && [ -s "$T/w/fifo.got" ] && no_temp "$d"; then t_ok "$name: a FIFO is written, not replaced"
    else t_fail "$name: a FIFO is written, not replaced" "exit $rc, $(stat -c %F "$d/$out"), reader got $(wc -c <"$T/w/fifo.got") bytes" "$(tail -n 3 "$d/err")"; fi
    # a symbolic link to a file elsewhere: followed, the link stays
    d=$T/w/link; rm -rf "$d" "$T/w/target"; mkdir -p "$d/$(dirname "$out")" "$T/w/target"; echo old >"$T/w/target/f"
    ln -s "$T/w/target/f" "$d/$out"
    run_row "$d" "$out" "$cmd"; rc=$?
    if [ "$rc" = 0 ] && [ -L "$d/$out" ] && [ -f "$T/w/target/f" ] && ! grep -qx old "$T/w/target/f" && no_temp "$d" &&
        no_temp "$T/w/target"; then t_ok "$name: a symbolic link is followed, not replaced"
    else t_fail "$name: a symbolic link is followed, not replaced" "exit $rc, $(stat -c %F "$d/$out")" "$(tail -n 3 "$d/err")"; fi
}

for row in "${ROWS[@]}"; do
    IFS='|' read -r name out cmd <<<"$row"
    check_row "$name" "$out" "$cmd"
done

# /dev/stdout (a link into /proc, to a pipe here): the bytes come out there
"$CAT" cost --cfg "$CFG" --out /dev/stdout >stdout.json 2>err; rc=$?
if [ "$rc" = 0 ] && grep -q '"layers"' stdout.json && [ -c /dev/null ]; then t_ok "catalog cost --out /dev/stdout prints the JSON"
else t_fail "catalog cost --out /dev/stdout prints the JSON" "exit $rc" "$(tail -n 3 err)"; fi
# a folder where a file is wanted: refused, named as a folder
mkdir -p dirout
expect_fail "catalog cost --out FOLDER is refused as a folder" "dirout: it is a folder" "$CAT" cost --cfg "$CFG" --out dirout
# rtl peer-keygen never replaces any existing file (a key is not rewritten)
mknod node.pub c 1 3
expect_fail "rtl peer-keygen refuses an existing node" "never replaced" "$RTL" peer-keygen node
t_check "rtl peer-keygen left the node as it was" test -c node.pub
t_done
