#!/usr/bin/env bash
# rtl run / rtl profile on a catalog of small variants trained here by the
# real trainer (tests/integration/rtl/fixtures.sh: every layer kind of the
# trainer), packed by `catalog pack` and installed by `rtl install`:
# - every variant's top-k and probabilities equal `trainer predict`'s on the
#   same images (to the digits trainer predict prints, and within 1e-5), and
#   the aarch64 rtl under qemu-user gives the same within 1e-5;
# - loading errors (truncated or longer weights, weights of another cfg, a
#   bad cfg, a damaged installed file, a missing variant or catalog) each
#   give a clear message and exit status 1, never a crash;
# - rtl profile stores measurements beside the catalog, atomically, shown by
#   rtl inspect; they survive an update that leaves a variant unchanged.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/rtl/fixtures.sh"
cd "$T" || exit 1

if ! fx_rtl_catalog c >fixture.log 2>&1; then
    t_fail "build the fixture catalog (train, info, pack)" "$(tail -n 20 fixture.log)"
    t_done
    exit 0
fi
t_ok "build the fixture catalog (train, info, pack)"
R=root
mkdir -p $R/keys && cp c/k.pub $R/keys/
rtl() { "$RTL" --root "$R" "$@"; }
expect_ok "install it" rtl install c/out/catalog-rtlnet-1.tar.zst
dir=$(ls -d $R/catalogs/rtlnet/v1.*)
images=(c/images/*.bmp)

# compare RTL_JSON PREDICT_TEXT: same labels in the same order and the same
# probabilities: rtl's full-precision value printed with trainer predict's
# digits is trainer predict's text (so within 1e-5 wherever it prints 5
# digits or more; the unit test rtl_model checks the floats bit for bit);
# prints the largest difference and how many top-1 probabilities are away
# from 0 and 1.
compare() {
    python3 - "$1" "$2" <<'EOF'
import json, re, sys
r = json.load(open(sys.argv[1]))["results"]
lines = [l for l in open(sys.argv[2]).read().splitlines() if l]
assert len(r) == len(lines), "%d results, %d predict lines" % (len(r), len(lines))
worst, spread = 0.0, 0
for res, line in zip(r, lines):
    path, rest = line.split(": ", 1)
    assert path == res["image"], (path, res["image"])
    items = [x.split(" ", 1) for x in rest.split(", ")]
    digits = max(len(p.split(".")[1]) for p, _ in items)
    tol = 0.5 * 10 ** -digits + 1e-5
    assert [n for _, n in items] == [t["label"] for t in res["top"]], (line, res["top"])
    for (p, _), t in zip(items, res["top"]):
        d = abs(float(p) - t["probability"])
        assert d <= tol, "%s: %s vs %.9f (tolerance %g)" % (path, p, t["probability"], tol)
        # the same float gives the same printed digits (both round exactly)
        same = "%.*f" % (len(p.split(".")[1]), t["probability"]) == p
        assert same, "%s: %s printed, rtl has %.9f" % (path, p, t["probability"])
        worst = max(worst, d)
    spread += 0.01 < res["top"][0]["probability"] < 0.99
print("largest difference %.2g, %d of %d top-1 probabilities in (0.01, 0.99)" % (worst, spread, len(r)))
EOF
}

spread_total=0
for v in $FX_RTL_VARIANTS; do
    rtl run rtlnet "$v" "${images[@]}" --top 10 --json --threads 1 >"run-$v.json" 2>"run-$v.err"
    rc_rtl=$?
    "$TRAINER" predict --cfg "$dir/variants/$v/variant.cfg" --weights "$dir/variants/$v/variant.weights" \
        --names c/identity.names --top 10 --threads 1 "${images[@]}" >"predict-$v.txt" 2>"predict-$v.err"
    rc_tr=$?
    if [ $rc_rtl != 0 ] || [ $rc_tr != 0 ]; then
        t_fail "rtl run $v equals trainer predict" "rtl exit $rc_rtl: $(cat run-$v.err)" "trainer exit $rc_tr: $(cat predict-$v.err)"
        continue
    fi
    if out=$(compare "run-$v.json" "predict-$v.txt" 2>&1); then
        t_ok "rtl run $v equals trainer predict on ${#images[@]} images ($out)"
        spread_total=$((spread_total + $(echo "$out" | sed -n 's/.*, \([0-9]*\) of .*/\1/p')))
    else
        t_fail "rtl run $v equals trainer predict" "$out"
    fi
done
t_check "the comparison is not between saturated outputs ($spread_total top-1 probabilities in (0.01, 0.99))" \
    test "$spread_total" -ge 6
expect_ok "rtl run prints one line per image" rtl run rtlnet base "${images[@]}" --top 3
t_check "with the top 3 labels and probabilities" \
    bash -c "test \$(grep -cE '^c/images/img[0-9].bmp: [01]\.[0-9]{6} [a-z]+, [01]\.[0-9]{6} [a-z]+, [01]\.[0-9]{6} [a-z]+$' '$T/out') = ${#images[@]}"

# the device build (aarch64) under qemu-user gives the same results
A64=$O/aarch64-linux-gnu/bin/rtl
if [ -x "$A64" ] && command -v qemu-aarch64 >/dev/null; then
    bad=''
    for v in $FX_RTL_VARIANTS; do
        qemu-aarch64 "$A64" --root "$R" run rtlnet "$v" "${images[@]}" --top 10 --json --threads 1 \
            >"a64-$v.json" 2>"a64-$v.err" || { bad="$bad $v(exit $?: $(cat a64-$v.err))"; continue; }
        python3 - "run-$v.json" "a64-$v.json" <<'EOF' || bad="$bad $v"
import json, sys
a, b = (json.load(open(f))["results"] for f in sys.argv[1:3])
for x, y in zip(a, b):
    assert [t["label"] for t in x["top"]] == [t["label"] for t in y["top"]]
    assert all(abs(s["probability"] - t["probability"]) <= 1e-5 for s, t in zip(x["top"], y["top"]))
assert len(a) == len(b)
EOF
    done
    t_check "the aarch64 rtl under qemu-user gives the same top-k within 1e-5${bad:+ (differs:$bad)}" test -z "$bad"
else
    t_skip "the aarch64 rtl under qemu-user gives the same top-k" "$A64 or qemu-aarch64 is missing (make deps installs them)"
fi

# loading errors: a catalog whose variants are broken in every way a device
# can meet (the archive is validly signed: the files are what was packed)
mkdir -p bad/v
cp -r c/variants/base bad/v/
for n in truncated extra mismatch badcfg trunk; do
    tech=rewrite
    [ $n = trunk ] && tech=trunk
    cp -r c/variants/base "bad/v/$n"
    sed -i "s/\"id\":\"base\"/\"id\":\"$n\"/; s/\"technique\":\"base\"/\"technique\":\"$tech\"/; s/\"parent\":null/\"parent\":\"base\"/" "bad/v/$n/variant.json"
done
head -c 1000 c/variants/base/variant.weights >bad/v/truncated/variant.weights
printf 'XXXX' >>bad/v/extra/variant.weights
cp c/variants/pruned-small/variant.weights bad/v/mismatch/
sed -i '0,/^filters=8$/s//filters=8\nfrobnicate=2/' bad/v/badcfg/variant.cfg
"$CAT" pack bad/v -o bad/out --task identity=c/identity.names --catalog rtlbad --version 1 --key c/k.key >pack-bad.log 2>&1
expect_ok "install a catalog of broken variants" rtl install bad/out/catalog-rtlnet-1.tar.zst
img=${images[0]}
expect_fail "truncated weights: the offset and the layer" \
    "variant 'truncated': the weights do not fit variant.cfg: .*variant.weights: the file ends at byte offset 1000 inside layer 1 \(\[convolutional\], cfg line [0-9]+\)" \
    rtl run rtlbad truncated "$img"
expect_fail "weights with extra bytes" "variant 'extra': .*4 bytes are left over at byte offset [0-9]+, after the last layer" \
    rtl run rtlbad extra "$img"
expect_fail "weights of another cfg" "variant 'mismatch': the weights do not fit variant.cfg: .*belongs to another cfg" \
    rtl run rtlbad mismatch "$img"
expect_fail "a cfg the network builder refuses: file:line" "variant 'badcfg': .*variant.cfg:[0-9]+: \[convolutional\]: unknown key 'frobnicate'" \
    rtl run rtlbad badcfg "$img"
expect_fail "a missing variant: the ids there are" "has no variant 'nonesuch'; its variants: base, pruned-small, rewrite-s2, svd-fc" \
    rtl run rtlnet nonesuch "$img"
expect_fail "a catalog that is not installed" "not installed" rtl run othernet base "$img"
expect_fail "an image that cannot be read" "cannot open .*nope.png" rtl run rtlnet base nope.png
expect_fail "an image that is not one" "not-an-image.bmp" bash -c "echo hello >not-an-image.bmp && '$RTL' --root '$R' run rtlnet base not-an-image.bmp"
bdir=$(ls -d $R/catalogs/rtlbad/v1.*)
chmod u+w "$bdir/variants/base/variant.weights"
truncate -s 2000 "$bdir/variants/base/variant.weights"
expect_fail "an installed file damaged after install" "variant 'base': .*variant.weights: 2000 bytes, but the manifest says [0-9]+: the installed copy is damaged" \
    rtl run rtlbad base "$img"
expect_fail "a technique this runtime does not load yet" "variant 'trunk' \(technique trunk\): a shared trunk runs through its heads" \
    rtl run rtlbad trunk "$img"
expect_fail "rtl profile reports the broken variants" "variant 'truncated'" rtl profile rtlbad --runs 1 --warmup 0
t_check "and skips the one of a technique it does not load" grep -q "skipping trunk: variant 'trunk' (technique trunk)" "$T/out"
expect_fail "--top needs a positive integer" "--top needs a whole number in 1..100000" rtl run rtlnet base "$img" --top 0
t_check "a usage error is exit status 2" bash -c "'$RTL' --root '$R' run rtlnet base; test \$? = 2"

# profiling on this device
expect_ok "rtl profile measures every variant" rtl profile rtlnet --runs 5 --warmup 1 --threads 1
t_check "one line per variant with median and mean" bash -c "test \$(grep -cE '^(base|rewrite-s2|svd-fc|pruned-small) +1 +5 +[0-9.e+-]+ +[0-9.e+-]+' '$T/out') = 4"
P=$R/catalogs/rtlnet/profile.json
t_check "the profile is kept beside the installed copies, not inside one" test -f "$P"
t_check "no temporary file is left" bash -c "! ls $R/catalogs/rtlnet | grep -q tmp"
expect_ok "the installed copy still verifies" rtl verify rtlnet
expect_ok "rtl profile with 2 threads and JSON" rtl -q profile rtlnet base --runs 3 --threads 2 --json
t_check "the JSON says measured on this device, with machine and threads" \
    python3 -c "import json,sys; m=json.load(open('$T/out')); assert m[0]['where']=='device' and m[0]['source']=='measured' and m[0]['threads']==2 and m[0]['runs']==3 and 'cores' in m[0]['machine']"
expect_ok "profiling again replaces the same thread count" rtl profile rtlnet base --runs 4 --threads 1
t_check "the profile holds 5 entries (4 variants at 1 thread, base at 2)" \
    python3 -c "import json; e=json.load(open('$P'))['entries']; assert len(e)==5, len(e); assert [x['runs'] for x in e if x['variant']=='base' and x['threads']==1]==[4]"
# two profilers at once: the lock keeps both results
rtl -q profile rtlnet base --runs 2 --threads 3 >/dev/null 2>&1 & p1=$!
rtl -q profile rtlnet svd-fc --runs 2 --threads 3 >/dev/null 2>&1 & p2=$!
wait $p1 && wait $p2
t_check "two profilers at once keep each other's entries" \
    python3 -c "import json; e=json.load(open('$P'))['entries']; assert len(e)==7, len(e); assert sorted(x['variant'] for x in e if x['threads']==3)==['base','svd-fc']"
expect_ok "rtl inspect" rtl inspect rtlnet
t_check "inspect shows this device's figures next to the estimates" \
    bash -c "grep -Eq '^base +this device +[0-9.e+-]+ +[0-9.e+-]+ +measured: .*cores, 2 threads, 3 runs' '$T/out' && grep -Eq '^base +this device .* 1 thread, 4 runs' '$T/out' && grep -Eq '^base +jetson-nano +[0-9.e+-]+ +- +lower bound .* on GPU: 128 Maxwell' '$T/out' && grep -Eq '^base +jetson-nano cpu +[0-9.e+-]+ +- +lower bound \(roofline-1\) on CPU: 4 Arm Cortex-A57' '$T/out' && grep -q 'roofline estimates, lower bounds' '$T/out'"
# an update that leaves the variants unchanged keeps their measurements
"$CAT" pack c/variants -o c/out2 --task identity=c/identity.names --version 2 --key c/k.key >/dev/null 2>&1
expect_ok "install version 2 (same variants)" rtl install c/out2/catalog-rtlnet-2.tar.zst
expect_ok "rtl inspect after the update" rtl inspect rtlnet
t_check "the measurements still show (their files are unchanged)" bash -c "test \$(grep -c ' this device ' '$T/out') = 7"
cp "$P" profile.good
echo '{"schema":1,"catalog":"rtlnet","entries":[{"variant":"base"}]}' >"$P"
expect_ok "inspect with a damaged profile still works" rtl inspect rtlnet
t_check "and warns about the profile" grep -q "warning: .*profile.json is damaged" "$T/out"
expect_fail "profile refuses to merge into a damaged profile" "profile.json is damaged.*remove it" rtl profile rtlnet base --runs 1
cp profile.good "$P"
expect_fail "profile of a variant the catalog lacks" "has no variant 'nonesuch'" rtl profile rtlnet nonesuch
expect_ok "rtl profile --gap-ms: runs apart" rtl -q profile rtlnet base --runs 3 --threads 3 --gap-ms 5 --json
t_check "the JSON and the stored entry record the gap" python3 -c "
import json
assert json.load(open('$T/out'))[0]['gap_ms'] == 5
e = [x for x in json.load(open('$P'))['entries'] if x['variant'] == 'base' and x['threads'] == 3]
assert len(e) == 1 and e[0]['gap_ms'] == 5, e"
expect_ok "rtl inspect shows the gap" rtl inspect rtlnet
t_check "as runs apart" grep -q '3 runs 5 ms apart' "$T/out"

for verb in run profile; do
    "$RTL" "$verb" --help >h.out 2>&1 && grep -q "^Usage: rtl $verb" h.out || bad_help="${bad_help:-} $verb"
done
t_check "run and profile have --help" test -z "${bad_help:-}"
# rtl run's four modes each declare their options in the CLI kit's tables;
# its help, help run and the manual list every one of them (issue 38 item 5)
"$RTL" run --help >runh.out 2>&1
"$RTL" help run >runh2.out 2>&1
"$RTL" --man >man.out 2>&1
missing=
for o in --capacity --context --hysteresis --task --repeat --split --peer --peer-key --device-key --deadline-ms \
         --link --radio --goal --device-factor --workers --equal-split --resend --cuts --trace --warmup; do
    grep -q -- "^  $o " runh.out && grep -q -- "^  $o " runh2.out || missing="$missing $o"
    grep -q -- "$(printf '%s' "$o" | sed 's/-/\\\\-/g')" man.out || missing="$missing man:$o"
done
t_check "rtl run --help, rtl help run and the manual list every mode's options${missing:+ (missing:$missing)}" \
    test -z "$missing"
t_done
