#!/usr/bin/env bash
# Every program's output-producing verbs, with standard output on /dev/full
# (a full disk): each exits 1 with "cannot write the output", never 0 and
# never by a signal. Each command is also run with its output in a file
# first, where it must succeed, so the failure is the full disk's alone.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
cd "$T" || exit 1
TRAINER=$BIN/trainer DATASET=$BIN/dataset PRUNE=$BIN/prune CAT=$BIN/catalog RTL=$BIN/rtl

if [ ! -w /dev/full ]; then t_skip "write errors" "/dev/full is not writable here"; t_done; exit 0; fi

# A small real catalog: one trained variant, packed and signed, installed.
mkdir -p c && fx_rtl_data c >fixture.log 2>&1 && fx_rtl_cfg base >c/base.cfg &&
    fx_rtl_variant c base base - c/base.cfg 4 >>fixture.log 2>&1 &&
    "$CAT" keygen -p c/k.pub -s c/k.key -W >/dev/null 2>&1 &&
    "$CAT" pack c/variants -o c/out --task identity=c/identity.names --version 1 --key c/k.key >>fixture.log 2>&1
rc=$?
R=root
mkdir -p $R/keys && cp c/k.pub $R/keys/ && "$RTL" --root $R -q install c/out/catalog-rtlnet-1.tar.zst >>fixture.log 2>&1
rc2=$?
if [ "$rc" != 0 ] || [ "$rc2" != 0 ]; then t_fail "fixture catalog" "$(tail -n 20 fixture.log)"; t_done; exit 0; fi
A=c/out/catalog-rtlnet-1.tar.zst
W=c/variants/base/variant.weights
CFG=c/variants/base/variant.cfg

# full NAME CMD...: CMD succeeds with stdout in a file (and prints something);
# with stdout on /dev/full it exits 1 saying it cannot write.
full() {
    local name=$1 rc; shift
    "$@" >ok.out 2>ok.err; rc=$?
    if [ "$rc" != 0 ] || [ ! -s ok.out ]; then
        t_fail "$name: runs with its output in a file" "exit $rc, $(wc -c <ok.out) bytes" "$(tail -n 3 ok.err)"
        return
    fi
    "$@" >/dev/full 2>full.err; rc=$?
    if [ "$rc" = 1 ] && grep -q "cannot write the output: No space left on device" full.err; then
        t_ok "$name > /dev/full: exit 1, says why"
    else
        t_fail "$name > /dev/full: exit 1, says why" "exit $rc" "$(tail -n 3 full.err)"
    fi
}

for p in "$TRAINER" "$DATASET" "$PRUNE" "$CAT" "$RTL"; do
    n=${p##*/}
    full "$n --help" "$p" --help
    full "$n --version" "$p" --version
    full "$n help --help" "$p" help --help
done
full "trainer info" "$TRAINER" info "$CFG"
full "trainer info --json" "$TRAINER" info --json "$CFG"
full "trainer valid" "$TRAINER" valid --cfg "$CFG" --weights "$W" --data c/rtl.data --split train --threads 1
full "trainer valid --json" "$TRAINER" valid --cfg "$CFG" --weights "$W" --data c/rtl.data --split train --json --threads 1
full "trainer predict" "$TRAINER" predict --cfg "$CFG" --weights "$W" --data c/rtl.data --threads 1 c/images/img0.bmp
full "trainer bench" "$TRAINER" bench "$CFG" --threads 1 --iterations 1
full "dataset check" "$DATASET" check c/rtl.data
full "prune plan" "$PRUNE" plan --cfg "$CFG"
full "catalog cost" "$CAT" cost --cfg "$CFG"
full "catalog variants" "$CAT" variants c/variants
full "catalog inspect" "$CAT" inspect "$A"
full "catalog verify" "$CAT" verify "$A" -p c/k.pub
full "catalog validate" "$CAT" validate "$A"
full "rtl list" "$RTL" --root $R list
full "rtl inspect ID" "$RTL" --root $R inspect rtlnet
full "rtl inspect ARCHIVE" "$RTL" --root $R inspect "$A"
full "rtl verify" "$RTL" --root $R verify
full "rtl run" "$RTL" --root $R run rtlnet base c/images/img0.bmp
full "rtl run --json" "$RTL" --root $R run rtlnet base c/images/img0.bmp --json
t_done
