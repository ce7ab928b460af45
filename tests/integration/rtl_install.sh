#!/usr/bin/env bash
# rtl install / list / inspect / verify / rollback on a device store: the
# normal life of catalogs, anti-rollback, pinned keys, and signatures made
# by the real minisign.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1

fx_keyed_catalog
for v in 2 3 4; do fx_pack c c --version $v --key k.key >/dev/null 2>&1; done
A2=c/catalog-tinynet-2.tar.zst A3=c/catalog-tinynet-3.tar.zst A4=c/catalog-tinynet-4.tar.zst
R=root
mkdir -p $R/keys && cp k.pub $R/keys/release.pub
rtl() { "$RTL" --root "$R" "$@"; }

expect_fail "install refuses without a pinned key" "no pinned public key in .*empty/keys" "$RTL" --root empty install "$A3"
expect_ok "install a signed catalog" rtl install "$A3"
t_check "it says what it installed" grep -q "installed catalog tinynet version 3" "$T/out"
expect_ok "list" rtl list
t_check "list shows version 3, no previous, the key" grep -Eq "^tinynet +3 +- +[0-9A-F]{16} " "$T/out"
expect_ok "verify re-checks the installed catalog" rtl verify tinynet
expect_ok "inspect an installed catalog" rtl inspect tinynet
t_check "inspect lists the variants with their accuracy" bash -c "grep -q '^spec-7 .*0.8500' '$T/out' && grep -q 'task    identity (10 labels)' '$T/out'"
expect_ok "inspect an archive" rtl inspect "$A4"
t_check "an archive's inspect shows its version" grep -q "version 4" "$T/out"
rtl list --json >list.json 2>"$T/err"
t_check "list --json: the catalog, its version, no previous, the key" python3 -c '
import json, re, sys
c = json.load(open(sys.argv[1]))["catalogs"]
assert len(c) == 1 and c[0]["catalog"] == "tinynet" and c[0]["version"] == 3 and c[0]["previous_version"] is None, c
assert re.fullmatch("[0-9A-F]{16}", c[0]["key_id"]) and "/catalogs/tinynet/" in c[0]["dir"], c
' list.json
rtl inspect tinynet --json >inspect.json 2>"$T/err"
t_check "inspect --json: variants with accuracy, costs, latency and estimates" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["catalog"] == "tinynet" and c["version"] == 3 and c["model"] == "tinynet" and c["dir"], c.keys()
assert {"name": "identity", "labels": 10} in c["tasks"], c["tasks"]
v = {x["id"]: x for x in c["variants"]}
assert v["spec-7"]["top1"] == 0.85 and v["spec-7"]["macs"] > 0 and v["spec-7"]["files"] >= 2, v["spec-7"]
assert v["base"]["latency"][0]["where"] == "build-host" and v["base"]["latency"][0]["source"] == "measured"
e = {x["target"]: x for x in v["base"]["estimates"]}
assert e["jetson-nano"]["source"] == "estimate" and e["jetson-nano"]["ms"] > 0 and len(e) == 4, e
assert e["jetson-nano"]["compute_unit"].startswith("GPU: ") and e["jetson-nano"]["cpu"]["compute_unit"].startswith("CPU: ")
assert e["jetson-nano"]["cpu"]["ms"] > e["jetson-nano"]["ms"], e["jetson-nano"]
' inspect.json
rtl inspect "$A4" --json >inspect4.json 2>"$T/err"
t_check "inspect --json of an archive: version 4, no folder" python3 -c '
import json, sys
c = json.load(open(sys.argv[1])); assert c["version"] == 4 and c["dir"] is None, c["version"]' inspect4.json
dir=$(ls -d $R/catalogs/tinynet/v3.*)
t_check "installed files are read-only and match the archive" \
    bash -c "test ! -w '$dir/variants/base/variant.weights' -o \$(id -u) = 0 && test \"\$(stat -c %a '$dir/variants/base/variant.weights')\" = 444 && tar --zstd -xOf '$A3' variants/base/variant.weights | cmp - '$dir/variants/base/variant.weights'"
t_check "the signature is kept beside the manifest" cmp "$A3.minisig" "$dir/catalog.minisig"

expect_fail "the same version again is refused" "not newer than the installed version 3" rtl install "$A3"
expect_fail "an older version is refused (anti-rollback)" "version 2, which is not newer than the installed version 3" rtl install "$A2"
expect_ok "an operator may reinstall with --allow-downgrade" rtl install --allow-downgrade "$A3"
expect_ok "a newer version installs" rtl install "$A4"
expect_ok "list after the update" rtl list
t_check "version 4 is current, 3 previous" grep -Eq "^tinynet +4 +3 " "$T/out"
t_check "old copies nothing refers to are removed" test "$(ls $R/catalogs/tinynet | grep -c '^v')" = 2
expect_ok "rollback" rtl rollback tinynet
t_check "rollback makes 3 current and 4 previous" grep -q "version 3 again (previous: 4)" "$T/out"
expect_ok "rollback again undoes it" rtl rollback tinynet
expect_ok "list after two rollbacks" rtl list
t_check "4 is current again" grep -Eq "^tinynet +4 +3 " "$T/out"
expect_fail "rollback of an unknown catalog" "not installed" rtl rollback othernet

# tampering with an installed copy is found by verify (and blocks rollback to it)
cur=$(sed -n 's/^current //p' $R/catalogs/tinynet/STATE)
prev=$(sed -n 's/^previous //p' $R/catalogs/tinynet/STATE)
chmod u+w "$R/catalogs/tinynet/$cur/variants/nested/variant.weights"
"$TOOL" flip "$R/catalogs/tinynet/$cur/variants/nested/variant.weights" 7
expect_fail "verify finds a modified file" "variants/nested/variant.weights: SHA-256 differs" rtl verify tinynet
"$TOOL" flip "$R/catalogs/tinynet/$cur/variants/nested/variant.weights" 7
echo x >"$R/catalogs/tinynet/$cur/variants/nested/planted"
expect_fail "verify finds a file the manifest does not list" "planted is not a file of the manifest" rtl verify tinynet
rm "$R/catalogs/tinynet/$cur/variants/nested/planted"
expect_ok "verify passes once repaired" rtl verify tinynet
chmod u+w "$R/catalogs/tinynet/$prev/manifest.json"
sed -i 's/fixture variant base/fixture variant BASE/' "$R/catalogs/tinynet/$prev/manifest.json"
expect_fail "rollback refuses a previous copy that no longer verifies" "not rolling back.*manifest.json differs" rtl rollback tinynet
expect_ok "the current copy is untouched" rtl verify tinynet

# a damaged current copy does not block a newer catalog (its version is in its name)
rm -rf dmg && cp -a "$R" dmg
cur=$(sed -n 's/^current //p' dmg/catalogs/tinynet/STATE)
chmod u+w "dmg/catalogs/tinynet/$cur/manifest.json" && : >"dmg/catalogs/tinynet/$cur/manifest.json"
expect_fail "a damaged current copy fails verify" "manifest.json differs" "$RTL" --root dmg verify tinynet
expect_fail "it still counts for anti-rollback" "not newer than the installed version 4" "$RTL" --root dmg install "$A4"
"$CAT" pack c/variants -o c --version 5 --key k.key --task identity=c/identity.names --task shape=c/shape.names >/dev/null 2>&1
expect_ok "a newer catalog installs over it" "$RTL" --root dmg install c/catalog-tinynet-5.tar.zst
t_check "with a warning naming the damaged copy" grep -q "warning: .*taking its version from its name" "$T/out"
expect_ok "and verifies" "$RTL" --root dmg verify tinynet

# a copy a reader holds open (shared lock) survives the clean-up of later installs
rm -rf held && cp -a dmg held
reader_copy=$(sed -n 's/^current //p' held/catalogs/tinynet/STATE)
"$CAT" pack c/variants -o c --version 6 --key k.key --task identity=c/identity.names --task shape=c/shape.names >/dev/null 2>&1
"$CAT" pack c/variants -o c --version 7 --key k.key --task identity=c/identity.names --task shape=c/shape.names >/dev/null 2>&1
(exec 9<"held/catalogs/tinynet/$reader_copy" && flock -s 9 && exec sleep 30) &
reader=$!
sleep 0.2
"$RTL" --root held install c/catalog-tinynet-6.tar.zst >/dev/null 2>&1
"$RTL" --root held install c/catalog-tinynet-7.tar.zst >/dev/null 2>&1
t_check "a retired copy a reader holds is kept" test -d "held/catalogs/tinynet/$reader_copy"
kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null
"$RTL" --root held rollback tinynet >/dev/null 2>&1
t_check "and removed by the next clean-up once released" test ! -e "held/catalogs/tinynet/$reader_copy"

# keys: only pinned keys count, from the root or from --keys / RTL_KEYS
"$CAT" keygen -p other.pub -s other.key -W >/dev/null
"$CAT" sign "$A4" -s other.key -x other.sig >/dev/null
expect_fail "a valid signature by an unpinned key is refused" "signed by key [0-9A-F]{16}, which is not pinned" \
    "$RTL" --root fresh --keys "$R/keys" install "$A4" other.sig
mkdir -p otherkeys && cp other.pub otherkeys/
expect_ok "--keys points at another key folder" "$RTL" --root fresh --keys otherkeys install "$A4" other.sig
expect_ok "RTL_ROOT and RTL_KEYS work too" env RTL_ROOT=fresh2 RTL_KEYS=otherkeys "$RTL" install "$A4" other.sig

# minisign-made signatures are accepted when they carry the catalog fields
if command -v minisign >/dev/null; then
    trusted=$(sed -n 's/^trusted comment: //p' "$A4.minisig")
    minisign -S -s k.key -m "$A4" -x ms.sig -t "$trusted" >/dev/null
    expect_ok "rtl installs a catalog signed by minisign -S" "$RTL" --root msroot --keys "$R/keys" install "$A4" ms.sig
    minisign -S -s k.key -m "$A4" -x ms2.sig -t "release 4" >/dev/null
    expect_fail "but not when the trusted comment lacks the catalog fields" "no catalog, version or manifest-sha256" \
        "$RTL" --root msroot2 --keys "$R/keys" install "$A4" ms2.sig
else
    t_skip "rtl installs a catalog signed by minisign -S" "minisign is not installed (make deps installs it)"
fi

# one installer at a time
expect_fail "a second installer is told another one runs" "another install or rollback is running" \
    flock "$R/.lock" "$RTL" --root "$R" install --allow-downgrade "$A4"
expect_ok "rtl --help" "$RTL" --help
for verb in install list inspect verify rollback; do
    "$RTL" "$verb" --help >h.out 2>&1 && grep -q "^Usage: rtl $verb" h.out || bad_help="${bad_help:-} $verb"
done
t_check "every command has --help" test -z "${bad_help:-}"
expect_fail "an unknown command is a usage error" "unknown command" "$RTL" --root "$R" frobnicate
t_done
