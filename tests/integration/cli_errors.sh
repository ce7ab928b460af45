#!/usr/bin/env bash
# What a user trips on, program by program (issue 13):
# - the kit: `help --help`, `--version`, an unknown verb, and a one-line
#   reason before the usage with exit 2 on usage errors, in all five programs;
# - inputs checked before any side effect: `catalog pack` makes no key, prints
#   no warning and writes no file until the variants are read; a failed
#   `trainer train` leaves no backup folder;
# - FIFOs are refused at open (never a hang), read-only rtl commands refuse a
#   root that does not exist, rtl install names a missing archive, a
#   truncated checkpoint is called truncated, `dataset check --decode` reads BMP;
# - each program's manual page (PROG --man) renders without a groff warning.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
cd "$T" || exit 1
TRAINER=$BIN/trainer DATASET=$BIN/dataset PRUNE=$BIN/prune CAT=$BIN/catalog RTL=$BIN/rtl
TO="timeout -k 2 20"   # a hang is a failure, not a stuck test

# usage NAME PATTERN CMD...: exit 2, the first line of stderr matches PATTERN
# (the reason), and stdout is empty.
usage() {
    local name=$1 pat=$2 rc; shift 2
    $TO "$@" >u.out 2>u.err; rc=$?
    if [ "$rc" = 2 ] && head -n 1 u.err | grep -Eq -- "$pat" && [ ! -s u.out ]; then t_ok "$name"
    else t_fail "$name" "exit $rc (want 2); first line: $(head -n 1 u.err)" "want /$pat/"; fi
}

# ---- the kit, in every program ------------------------------------------------
for p in "$TRAINER" "$DATASET" "$PRUNE" "$CAT" "$RTL"; do
    n=${p##*/}
    expect_ok "$n help --help" "$p" help --help
    t_check "$n help --help prints the usage" grep -q "^Usage: $n" "$T/out"
    expect_ok "$n --version" "$p" --version
    t_check "$n --version prints its name and version" grep -Eq "^$n [0-9]+\.[0-9]+" "$T/out"
    usage "$n with no verb: a reason, exit 2" "^$n: no (verb|command) given" "$p"
    usage "$n frobnicate: a reason, exit 2" "^$n: unknown (verb|command) 'frobnicate'" "$p" frobnicate
    usage "$n help frobnicate: a reason, exit 2" "^$n: no (verb|command) 'frobnicate'" "$p" help frobnicate
    usage "$n --version -4: a reason, exit 2" "^$n: --version takes no argument" "$p" --version -4
    $TO "$p" --man >"$n.1" 2>man.err
    if [ -s "$n.1" ] && LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$n.1" 2>groff.err && [ ! -s groff.err ]; then
        t_ok "$n --man renders without warnings"
    else t_fail "$n --man renders without warnings" "$(head -n 3 groff.err man.err)"; fi
    t_check "$n's manual page documents its verbs' options" grep -q '^\.SS ' "$n.1"
done
# Every manual page has an EXAMPLES section whose commands parse (none is a
# usage error: exit 2); rtl's shows the key-pinning step and its split
# execution and task options (issue 35 item 7).
mkdir -p ex && (
    cd ex || exit 1
    n=0
    for p in "$TRAINER" "$DATASET" "$PRUNE" "$CAT" "$RTL"; do
        nm=${p##*/}
        "$p" --man >"$nm.1"
        sed -n '/^\.SH EXAMPLES/,/^\.fi/p' "$nm.1" | sed 's/\\-/-/g; s/\\e/\\/g; s/\\&//g; s/ \{2,\}# .*//' |
            sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | sed -n "s/^  $nm //p" >"$nm.ex"
        [ -s "$nm.ex" ] || echo "$nm: no examples" >>bad
        while read -r line; do
            n=$((n + 1))
            # shellcheck disable=SC2086
            eval "set -- $line"
            mkdir -p "root$n"   # an empty install root: rtl parses the options before it finds nothing there
            RTL_ROOT=$PWD/root$n timeout -k 2 10 "$p" "$@" >"ex$n.out" 2>&1
            [ $? = 2 ] && echo "$nm $line: $(head -n 1 "ex$n.out")" >>bad
        done <"$nm.ex"
    done
    exit 0
)
t_check "every program's manual has examples, none of them a usage error" test ! -s ex/bad
[ -s ex/bad ] && cat ex/bad >&2
t_check "rtl's manual shows how to pin the publisher's key" grep -q 'cp release.pub /var/lib/rtl/keys/' ex/rtl.1
t_check "rtl's manual shows the peer's key pinning" grep -q 'peer\\-key srv.pub' ex/rtl.1
t_check "rtl's manual lists the split-execution options" bash -c "grep -q '^  \\\\-\\\\-device\\\\-key FILE' ex/rtl.1 && grep -q '^  \\\\-\\\\-deadline\\\\-ms MS' ex/rtl.1"
t_check "rtl's manual lists the task options" grep -q 'Usage: rtl run ID \\-\\-task T' ex/rtl.1
usage "catalog pack without -o says so" "^catalog pack: -o OUT_DIR is required" "$CAT" pack x
# The verbs with options of their own (pull, split execution, publish) give
# their reason first too.
for v in pull plan serve peer-keygen; do
    usage "rtl $v --bogus: a reason, exit 2" "^rtl $v: unknown option" "$RTL" --root "$T" $v --bogus
done
usage "rtl run --split with no value: a reason, exit 2" "^rtl run: --split needs a value" \
    "$RTL" --root "$T" run a b c --split
usage "rtl plan --runs x: the value's reason, exit 2" "^rtl: --runs needs an integer" "$RTL" --root "$T" plan a b --runs x
# pull, plan and serve parse with the kit and still take getopt_long's
# abbreviations: a unique prefix is the option (its value checked as the
# option's), an ambiguous one is unknown
usage "rtl pull --lim=0: the abbreviation is --limit-rate" "^rtl: --limit-rate needs a positive number" \
    "$RTL" --root "$T" pull --lim=0 u
usage "rtl plan --li 5g: the abbreviation is --link" "^rtl: --link needs 3g" "$RTL" --root "$T" plan a b --li 5g
usage "rtl serve --max 3: an ambiguous abbreviation is unknown" "^rtl serve: unknown option '--max'" \
    "$RTL" --root "$T" serve --key k --allow a --max 3
usage "rtl serve --ke k --al a --max-c x: abbreviations, the value's reason" "^rtl: --max-clients needs an integer" \
    "$RTL" --root "$T" serve --ke k --al a --max-c x
usage "catalog publish --bogus: a reason, exit 2" "^catalog publish: unknown option or missing value: '--bogus'" \
    "$CAT" publish --bogus
usage "catalog verify without -p says so" "^catalog verify: no public key" "$CAT" verify x.tar.zst
usage "catalog pack --zstd-level 99 says so" "^catalog pack: --zstd-level needs a whole number in 1..19" \
    "$CAT" pack x -o out --zstd-level 99
usage "catalog inspect with an unknown option says so" "^catalog inspect: unknown option '--bogus'" "$CAT" inspect --bogus x
usage "rtl run without an image says so" "^rtl run: 2 arguments given, at least 3 needed" "$RTL" --root . run c base
usage "rtl list with an option it does not take says so" "^rtl list: unknown option '--top'" "$RTL" --root . list --top 3
usage "rtl with an unknown global option says so" "^rtl: unknown option '--bogus'" "$RTL" --bogus list
usage "prune usage errors exit 2 with the reason" "^prune rewrite: --weights is required" "$PRUNE" rewrite --cfg x.cfg
usage "prune unknown option exits 2" "^prune plan: unknown option '--sped'" "$PRUNE" plan --sped x
usage "trainer info without a cfg says so" "^trainer info: no cfg given" "$TRAINER" info
# --set errors are usage errors (exit 2) in every verb that takes --set
# (issue 35 item 7), judged before any work
B=$TOP/recipes/alexnet/base.cfg
usage "trainer info --set of an unknown key exits 2" "^trainer info: --set: .*unknown key 'bogus'" \
    "$TRAINER" info --cfg "$B" --set bogus=1
usage "trainer train --set of a bad value exits 2" "^trainer train: --set: .*learning_rate=abc is not a number" \
    "$TRAINER" train --cfg "$B" --data x.data --backup nowhere --set learning_rate=abc
t_check "and makes no backup folder" test ! -e nowhere
usage "trainer valid --set out of range exits 2" "^trainer valid: --set: .*batch=0 is out of range" \
    "$TRAINER" valid --cfg "$B" --weights x --data x.data --set batch=0
usage "prune mimic --set of an unknown key exits 2" "^prune mimic: --set 'bogus=1': unknown key" \
    "$PRUNE" mimic --cfg "$B" --weights x --data x --from conv#1 --to conv#2 --with x --seed 1 --out o --set bogus=1
usage "prune retarget --set of an unknown key exits 2" "^prune retarget: --set 'bogus=1': unknown key" \
    "$PRUNE" retarget --cfg "$B" --weights x --tasks x --cut conv#1 --seed 1 --out o --set bogus=1
usage "prune specialise --set of an unknown key exits 2" "^prune specialise: --set 'bogus=1': unknown key" \
    "$PRUNE" specialise --cfg "$B" --weights x --data x --contexts x --seed 1 --out o --set bogus=1
usage "prune roadmap --set of a bad value exits 2" "^prune roadmap: --set 'step=x'" \
    "$PRUNE" roadmap --cfg "$B" --weights x --data x --method l1 --seed 1 --out o --set step=x
t_check "none of them made its output" test ! -e o
expect_ok "dataset help check (a verb's help)" "$DATASET" help check
t_check "dataset help check prints its usage" grep -q "^Usage: dataset check" "$T/out"

# ---- fixtures: a small trained variant, packed and installed -------------------
mkdir -p c && fx_rtl_data c >fixture.log 2>&1 && fx_rtl_cfg base >c/base.cfg &&
    fx_rtl_variant c base base - c/base.cfg 4 >>fixture.log 2>&1 &&
    "$CAT" keygen -p c/k.pub -s c/k.key -W >/dev/null 2>&1 &&
    "$CAT" pack c/variants -o c/out --task identity=c/identity.names --version 1 --key c/k.key >>fixture.log 2>&1
rc=$?
if [ "$rc" != 0 ]; then t_fail "fixture catalog" "$(tail -n 20 fixture.log)"; t_done; exit 0; fi
A=c/out/catalog-rtlnet-1.tar.zst

# ---- catalog pack: nothing before the inputs are known good ---------------------
expect_fail "pack of a missing variants folder fails" "nope" "$CAT" pack nope -o p1 --task identity=c/identity.names
t_check "and makes no output folder, no key" test ! -e p1
t_check "and prints no development-key warning" bash -c "! grep -q WARNING '$T/out'"
mkdir -p bad/x && echo '{' >bad/x/variant.json
expect_fail "pack of a broken variant.json fails" "variant.json" "$CAT" pack bad -o p2
t_check "and leaves nothing behind (no devkey, manifest or winnowed.json)" test ! -e p2
t_check "and prints no development-key warning" bash -c "! grep -q WARNING '$T/out'"
mkdir -p p3 && touch p3/keep
expect_fail "pack with a wrong passphrase file fails" "passphrase|decrypt|key" \
    bash -c "'$CAT' keygen -p e.pub -s e.key --passphrase-file <(echo right) >/dev/null 2>&1 && '$CAT' pack c/variants -o p3 --task identity=c/identity.names --key e.key --passphrase-file <(echo wrong)"
t_check "and leaves the existing output folder as it was" test "$(ls p3)" = keep
expect_ok "pack with a development key" "$CAT" pack c/variants -o p4 --task identity=c/identity.names --version 2
t_check "the development key is made then, with its warning" bash -c "test -s p4/devkey/catalog-dev.key && grep -q WARNING '$T/out'"
expect_ok "pack with --dev-key-dir (catalog/README.md's command)" \
    "$CAT" pack c/variants -o p5 --task identity=c/identity.names --seed 42 --dev-key-dir p5keys
t_check "the development key is in --dev-key-dir" test -s p5keys/catalog-dev.key

# ---- trainer train leaves nothing behind -----------------------------------------
mkdir -p d && printf 'classes=10\ntrain=train.list\nlabels=identity.names\n' >d/x.data &&
    cp c/identity.names d/ && echo 'missing/img_cat.bmp' >d/train.list
expect_fail "train on an image that is not there fails" "cannot open .*missing/img_cat.bmp" \
    "$TRAINER" train --cfg c/base.cfg --data d/x.data --backup d/out/run --quiet --threads 1
t_check "and leaves no backup folder" test ! -e d/out
mkdir -p d/keep
expect_fail "train into an existing folder fails the same" "missing/img_cat.bmp" \
    "$TRAINER" train --cfg c/base.cfg --data d/x.data --backup d/keep --quiet --threads 1
t_check "and leaves that folder in place" test -d d/keep

# ---- a truncated checkpoint -------------------------------------------------------
ck=$(ls c/backup/base/*.ckpt | head -n 1)
head -c 500 "$ck" >c/backup/base/trunc.ckpt
cp c/base.cfg c/trunc.cfg
expect_fail "a truncated checkpoint is called truncated" "file ends at byte offset 500.*truncated" \
    "$TRAINER" train --cfg c/trunc.cfg --data c/rtl.data --backup c/backup/base --resume --quiet --threads 1
t_check "without calling it another cfg's" bash -c "! grep -q 'another cfg' '$T/out'"

# ---- FIFOs: refused at once --------------------------------------------------------
mkfifo fifo.cfg fifo.tar.zst fifo.sig
expect_fail "trainer info refuses a FIFO" "fifo.cfg is a FIFO \(named pipe\), not a regular file" $TO "$TRAINER" info fifo.cfg
expect_fail "trainer info --weights of a missing file names it" "nosuch.weights" "$TRAINER" info --cfg "$TOP/recipes/alexnet/base.cfg" --weights nosuch.weights
expect_fail "catalog verify -x refuses a FIFO" "fifo.sig is a FIFO" $TO "$CAT" verify "$A" -x fifo.sig -p c/k.pub
expect_fail "catalog inspect refuses a FIFO" "fifo.tar.zst is a FIFO" $TO "$CAT" inspect fifo.tar.zst
R=root
mkdir -p $R/keys && cp c/k.pub $R/keys/
expect_fail "rtl install refuses a FIFO archive" "fifo.tar.zst is a FIFO" $TO "$RTL" --root $R install fifo.tar.zst "$A.minisig"
expect_fail "rtl install refuses a FIFO signature" "fifo.sig is a FIFO" $TO "$RTL" --root $R install "$A" fifo.sig
expect_fail "prune plan refuses a FIFO" "is a FIFO" $TO "$PRUNE" plan --cfg fifo.cfg
expect_fail "trainer info refuses a device" "/dev/zero is a character device" $TO "$TRAINER" info /dev/zero
mkfifo fifo.bmp
expect_fail "trainer predict refuses a FIFO image" "fifo.bmp is a FIFO" $TO "$TRAINER" predict --cfg c/base.cfg \
    --weights c/variants/base/variant.weights --names c/identity.names fifo.bmp
"$RTL" --root $R -q install "$A" >/dev/null 2>&1
expect_fail "rtl run refuses a FIFO image" "fifo.bmp is a FIFO" $TO "$RTL" --root $R run rtlnet base fifo.bmp

# ---- rtl: messages -----------------------------------------------------------------
expect_fail "rtl install of a missing archive names the archive" "cannot open missing.tar.zst for reading" \
    "$RTL" --root $R install missing.tar.zst
t_check "not its signature" bash -c "! grep -q minisig '$T/out'"
for cmd in list verify "inspect rtlnet" "run rtlnet base c/images/img0.bmp" "rollback rtlnet" "profile rtlnet"; do
    # shellcheck disable=SC2086
    expect_fail "rtl $cmd refuses a root that does not exist" "install root .*TYPO does not exist" "$RTL" --root TYPO $cmd
done
t_check "and none of them created it" test ! -e TYPO
expect_ok "rtl inspect ARCHIVE needs no root" "$RTL" --root TYPO inspect "$A"
# A missing archive is named as the missing archive, not as a missing root or
# an unknown catalog (issue 35 item 6).
for root in TYPO $R; do
    expect_fail "rtl inspect of a missing archive says so (root $root)" "the archive missing.tar.zst does not exist" \
        "$RTL" --root $root inspect missing.tar.zst
    t_check "without blaming the root or the catalog id" bash -c "! grep -Eq 'install root|not installed' '$T/out'"
done
expect_fail "rtl inspect --json of a missing archive says so" "the archive nope/x.tar.zst does not exist" \
    "$RTL" --root TYPO inspect --json nope/x.tar.zst
expect_fail "rtl inspect of a folder says it is not an archive file" "the archive c/ is not a regular file" \
    "$RTL" --root TYPO inspect c/
expect_fail "rtl simulate of a missing archive says so" "the archive missing.tar.zst does not exist" \
    "$RTL" --root TYPO simulate missing.tar.zst
expect_fail "rtl run of an archive path says it takes an installed id" "'$A' names a file, not a catalog id" \
    "$RTL" --root $R run "$A" base c/images/img0.bmp
"$RTL" --root new --keys "$T/root/keys" install "$A" >inst.out 2>&1
t_check "rtl install still creates a new root" test -d new/catalogs

# ---- dataset check --decode reads BMP ------------------------------------------------
expect_ok "dataset check --decode on a BMP set" "$DATASET" check --decode c/rtl.data
t_check "it decoded every image" grep -q "every image decoded" "$T/out"
t_done
