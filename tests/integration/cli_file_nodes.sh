#!/usr/bin/env bash
# Files that are not plain files, where every program reads and writes
# (issue 35, items 1 and 2).
#
# Outputs: every output file option of every verb writes through
# trn_atomic_open (rtl's through rtl_write_file, which calls it): a
# temporary file in the same folder renamed over a regular file, and
# otherwise
#   - a device node (mknod copies of /dev/null and /dev/full): written in
#     place, never replaced; the /dev/full copy is exit 1 with ENOSPC's text;
#   - a FIFO with a reader: written in place, the reader gets the bytes;
#   - a symbolic link: followed, the file it names replaced, the link kept;
#   - /dev/stdout: the bytes come out on standard output.
# No temporary file is left behind in any case.
#
# Inputs: every input file where a regular file is needed (trn_open_input,
# rtl's rtl_open_input) refuses a FIFO without a writer, a folder and a
# device at once (never a hang), saying what it is, exit 1. rtl stream's
# control file: values range-checked, a key left out of a rewritten file
# kept and listed as "unchanged"; an unreadable image is exit 1 in rtl
# stream as in rtl run.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1
TRAINER=$BIN/trainer PRUNE=$BIN/prune CAT=$BIN/catalog RTL=$BIN/rtl

if ! mknod probe c 1 3 2>/dev/null; then t_skip "output nodes" "mknod needs root here"; t_done; exit 0; fi
rm -f probe

# A small real catalog: one trained variant (convolutions a scan can prune,
# an accuracy rtl stream schedules with), packed and signed, installed; and the catalog tests' archive, which has the
# accuracies rtl simulate schedules with.
mkdir -p c && fx_rtl_data c >fixture.log 2>&1 && fx_rtl_cfg rewrite-s2 >c/base.cfg &&
    fx_rtl_variant c base base - c/base.cfg 4 >>fixture.log 2>&1 &&
    python3 -c 'import json,sys; p=sys.argv[1]; v=json.load(open(p))
v["accuracy"]={"identity":{"split":"test","images":100,"top1":0.5,"top5":0.8}}; json.dump(v,open(p,"w"))' \
        c/variants/base/variant.json &&
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
    "prune rewrite --out DIR (variant.cfg)|v/variant.cfg|$PRUNE rewrite --cfg $CFG --weights $W --spec stride2:conv#1 --seed 1 --out v --threads 1"
    "prune rewrite --out DIR (init.weights)|v/init.weights|$PRUNE rewrite --cfg $CFG --weights $W --spec stride2:conv#1 --seed 1 --out v --threads 1"
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
    "catalog pack -o OUT_DIR (manifest.json)|out/manifest.json|$CAT pack $T/c/variants -o out --task identity=$T/c/identity.names --version 2 --key $T/c/k.key"
    "catalog pack -o OUT_DIR (the signature)|out/catalog-rtlnet-2.tar.zst.minisig|$CAT pack $T/c/variants -o out --task identity=$T/c/identity.names --version 2 --key $T/c/k.key"
    "catalog export --onnx -o DIR|x/base.onnx|$CAT export --onnx $T/c/variants -o x"
    "rtl simulate --svg|fig.svg|$RTL --root $T/root simulate $T/sim/catalog-tinynet-1.tar.zst --trace s1 --hours 0.01 --svg @O@"
    "rtl serve --port-file|port|term_after 2 $RTL --root $T/root serve --key $T/srv --allow $T/allow --port-file @O@"
)

# term_after SECONDS CMD...: runs CMD and sends it SIGTERM after SECONDS unless
# it has ended; its exit status. Not timeout(1): that sends SIGCONT after the
# SIGTERM, and a SIGCONT that lands while LeakSanitizer stops the exiting
# program to scan it cancels the stop, and the program spins forever (seen
# under make test-san on a loaded machine).
term_after() {
    local s=$1 p; shift
    "$@" & p=$!
    for _ in $(seq $((s * 10))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -TERM "$p" 2>/dev/null
    wait "$p"
}

# run_row DIR OUT CMD: runs CMD in DIR with @O@ replaced by OUT; stderr in
# DIR/err. rtl serve stopped by term_after's SIGTERM exits 0.
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
# catalog pack reads its archive back to sign it: an archive path that is a
# device is refused (exit 1, saying what it is) and left as it was
mkdir -p pk && mknod pk/catalog-rtlnet-2.tar.zst c 1 3
expect_fail "catalog pack: a device as the archive is refused (it is read back to be signed)" \
    "catalog-rtlnet-2.tar.zst is a character device" \
    "$CAT" pack c/variants -o pk --task identity=c/identity.names --version 2 --key c/k.key
t_check "catalog pack left the device as it was" test -c pk/catalog-rtlnet-2.tar.zst
# rtl peer-keygen never replaces any existing file (a key is not rewritten)
mknod node.pub c 1 3
expect_fail "rtl peer-keygen refuses an existing node" "never replaced" "$RTL" peer-keygen node
t_check "rtl peer-keygen left the node as it was" test -c node.pub

# Inputs: verb and input | the input's file name | the command, @I@ standing
# for the input path (run in a fresh folder).
IMG=$T/c/images/img0.bmp
INPUTS=(
    "rtl stream --control|ctl|$RTL --root $T/root stream rtlnet $IMG --dry-run --control @I@"
    "rtl stream @LIST|list|$RTL --root $T/root stream rtlnet @@I@ --dry-run"
    "rtl run IMAGE|img.bmp|$RTL --root $T/root run rtlnet base @I@"
    "rtl serve --allow|allow|$RTL --root $T/root serve --key $T/srv --allow @I@"
    "rtl context --results|res.json|$RTL --root $T/root context rtlnet --results @I@"
    "rtl simulate MANIFEST|m.json|$RTL simulate @I@ --trace s1 --hours 0.01"
    "catalog cost --cfg|n.cfg|$CAT cost --cfg @I@"
    "prune l1 --weights|w.weights|$PRUNE l1 --cfg $CFG --weights @I@ --out r.json"
    "trainer info CFG|n.cfg|$TRAINER info @I@"
    "dataset check DATA|d.data|$BIN/dataset check @I@"
)
# in_row NAME FILE CMD KIND PATTERN: FILE made as KIND (fifo, dir, dev), CMD
# ends at once (10 s at most) with exit 1 and a message matching PATTERN.
in_row() {
    local name=$1 in=$2 cmd=$3 kind=$4 pat=$5 d=$T/in rc
    rm -rf "$d"; mkdir -p "$d"
    case $kind in fifo) mkfifo "$d/$in" ;; dir) mkdir "$d/$in" ;; dev) mknod "$d/$in" c 1 3 ;; esac
    cmd=${cmd//@I@/$in}
    (cd "$d" && eval "timeout 10 $cmd" >out 2>err); rc=$?
    if [ "$rc" = 1 ] && grep -Eq "$pat" "$d/err"; then t_ok "$name: $kind refused at once, saying what it is"
    else t_fail "$name: $kind refused at once, saying what it is" "exit $rc (124: hung)" "$(tail -n 3 "$d/err")"; fi
}
for row in "${INPUTS[@]}"; do
    IFS='|' read -r name in cmd <<<"$row"
    in_row "$name" "$in" "$cmd" fifo "FIFO"
    in_row "$name" "$in" "$cmd" dir "folder"
    in_row "$name" "$in" "$cmd" dev "character device"
done

# rtl stream's control file: values out of range are refused
stream() { "$RTL" --root "$T/root" stream rtlnet "$IMG" "$@"; }
printf 'energy_wh = -7\n' >ctl
expect_fail "control file: energy_wh = -7 is refused" "energy_wh = -7 is out of range" stream --dry-run --control ctl
printf 'latency_ms = inf\n' >ctl
expect_fail "control file: latency_ms = inf is refused" "latency_ms = inf is out of range" stream --dry-run --control ctl
printf 'horizon_s = 0\n' >ctl
expect_fail "control file: horizon_s = 0 is refused" "horizon_s = 0 is out of range" stream --dry-run --control ctl
# a rewritten file that leaves latency_ms out: it stays, listed as unchanged
printf 'energy_wh = 5\nlatency_ms = 250\n' >ctl
stream --dry-run --repeat 400 --fps 100 --control ctl >live.jsonl 2>live.err & sp=$!
sleep 1
printf 'energy_wh = 3\n' >ctl.new && mv ctl.new ctl
wait "$sp"; rc=$?
t_check "control file rewritten without latency_ms: exit 0, kept at 250 and listed as unchanged" python3 - live.jsonl "$rc" <<'EOF'
import json, sys
assert sys.argv[2] == "0", "exit " + sys.argv[2]
ev = [e for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "budget"]
assert ev, "no budget event"
e = ev[-1]
assert e["energy_wh"] == 3 and e["latency_ms"] == 250, e
assert "latency_ms" in e["unchanged"] and "energy_wh" not in e["unchanged"], e
EOF
# an unreadable image: exit 1 in rtl stream as in rtl run
printf 'not an image' >bad.bmp
"$RTL" --root "$T/root" run rtlnet base bad.bmp >/dev/null 2>run.err; r1=$?
"$RTL" --root "$T/root" stream rtlnet bad.bmp >stream.out 2>stream.err; r2=$?
if [ "$r1" = 1 ] && [ "$r2" = 1 ] && grep -q '"error"' stream.out && grep -q '"summary"' stream.out; then
    t_ok "an unreadable image: rtl run and rtl stream both exit 1 (stream still prints its summary)"
else t_fail "an unreadable image: rtl run and rtl stream both exit 1 (stream still prints its summary)" \
    "rtl run $r1, rtl stream $r2" "$(tail -n 2 stream.err)"; fi
t_done
