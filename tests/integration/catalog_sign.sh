#!/usr/bin/env bash
# catalog keygen / sign / verify: key files in minisign's formats, the real
# minisign both ways, and single-byte changes anywhere in an archive or its
# signature making verification fail.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1

# ---- keys ------------------------------------------------------------------
expect_ok "keygen -W writes an unencrypted pair" "$CAT" keygen -p plain.pub -s plain.key -W
t_check "the secret key is private (0600)" test "$(stat -c %a plain.key)" = 600
expect_fail "keygen never prompts for a passphrase" "never prompts" "$CAT" keygen -p x.pub -s x.key
expect_fail "keygen refuses to overwrite a key" "--force" "$CAT" keygen -p plain.pub -s plain.key -W
printf 'correct horse\n' >pw
expect_ok "keygen with a passphrase file (interactive scrypt)" \
    "$CAT" keygen -p enc.pub -s enc.key --passphrase-file pw --kdf interactive
export CAT_PW='env secret'
expect_ok "keygen with a passphrase variable" "$CAT" keygen -p env.pub -s env.key --passphrase-env CAT_PW --kdf interactive

fx_catalog c >/dev/null
expect_ok "pack signs with an encrypted key (passphrase from the environment)" \
    fx_pack c c --version 7 --key env.key --passphrase-env CAT_PW
A=c/catalog-tinynet-7.tar.zst
t_check "a real key prints no development warning" bash -c "! grep -q DEVELOPMENT '$T/out'"
expect_ok "catalog verify accepts it" "$CAT" verify "$A" -p env.pub
t_check "verify names the catalog and version" grep -q "catalog tinynet version 7" "$T/out"
expect_fail "a wrong passphrase is reported as such" "wrong passphrase" \
    "$CAT" sign "$A" -s enc.key --passphrase-file c/identity.names -x wrong.sig
expect_ok "a passphrase can come from a pipe (--passphrase-file <(...))" \
    bash -c "'$CAT' sign '$A' -s enc.key --passphrase-file <(printf 'correct horse\n') -x pipe.sig && '$CAT' verify '$A' -x pipe.sig -p enc.pub"
expect_fail "verify with another key says the key is not trusted" "not a trusted key" "$CAT" verify "$A" -p plain.pub

# ---- the real minisign, both ways ---------------------------------------------
if ! command -v minisign >/dev/null; then
    t_skip "minisign verifies our signatures" "minisign is not installed (make deps installs it)"
else
    expect_ok "minisign -V verifies our signature" minisign -V -p env.pub -m "$A"
    t_check "minisign shows our trusted comment" grep -q "catalog:tinynet.*version:7" "$T/out"
    expect_ok "minisign -V verifies a signature made with a passphrase-file key" \
        bash -c "'$CAT' sign '$A' -s enc.key --passphrase-file pw -x enc.sig && minisign -V -p enc.pub -m '$A' -x enc.sig"
    # minisign signing with our key files (its password is read from stdin)
    trusted=$(sed -n 's/^trusted comment: //p' "$A.minisig")
    expect_ok "minisign -S can use our unencrypted key" minisign -S -s plain.key -m "$A" -x ms1.sig -t "$trusted"
    expect_ok "catalog verify accepts minisign's signature (our key)" "$CAT" verify "$A" -x ms1.sig -p plain.pub
    t_check "and checks its catalog fields" grep -q "catalog tinynet version 7" "$T/out"
    expect_ok "minisign -S can use our encrypted key" \
        bash -c "printf 'correct horse\n' | minisign -S -s enc.key -m '$A' -x ms2.sig -t '$trusted'"
    expect_ok "catalog verify accepts it" "$CAT" verify "$A" -x ms2.sig -p enc.pub
    # keys made by minisign itself
    minisign -G -W -p mw.pub -s mw.key >/dev/null 2>&1
    expect_ok "minisign -S with minisign's own key, any trusted comment" \
        minisign -S -s mw.key -m "$A" -x ms3.sig -t "release notes"
    expect_ok "catalog verify accepts a plain minisign signature" "$CAT" verify "$A" -x ms3.sig -p mw.pub
    t_check "and says rtl would refuse it (no catalog fields)" grep -q "names no catalog" "$T/out"
    expect_ok "catalog sign uses a minisign-made key; minisign verifies" \
        bash -c "'$CAT' sign '$A' -s mw.key -x cs.sig && minisign -V -p mw.pub -m '$A' -x cs.sig"
    # an encrypted minisign key at minisign's default (sensitive) scrypt cost
    printf 'pw1\npw1\n' | minisign -G -p me.pub -s me.key >/dev/null 2>&1
    printf 'pw1\n' >pw1
    expect_ok "catalog sign decrypts a minisign-encrypted key" \
        bash -c "'$CAT' sign '$A' -s me.key --passphrase-file pw1 -x me.sig && minisign -V -p me.pub -m '$A' -x me.sig"
    expect_ok "catalog verify takes a key as base64 (-P)" "$CAT" verify "$A" -x me.sig -P "$(tail -n 1 me.pub)"
    expect_fail "the untrusted comment cannot be relabelled" "untrusted comment" \
        bash -c "sed '1s/.*/untrusted comment: signature from the release key/' '$A.minisig' >relabel.sig && '$CAT' verify '$A' -x relabel.sig -p env.pub"
fi

# ---- every byte counts ----------------------------------------------------------
cp "$A" flip.tar.zst
cp "$A.minisig" flip.tar.zst.minisig
size=$(stat -c %s flip.tar.zst)
offsets=$(awk -v n="$size" 'BEGIN { for (i = 0; i < 64; i++) printf "%d,", i; for (i = 0; i < 200; i++) printf "%d,", int(64 + i * (n - 128) / 200); for (i = n - 64; i < n; i++) printf "%d,", i }')
"$TOOL" flip-each flip.tar.zst 1 "${offsets%,}" -- "$CAT" verify flip.tar.zst -p env.pub >flips.out
if grep -q '^tried 328 survived 0 crashed 0$' flips.out; then
    t_ok "flipping any of 328 bytes of the archive (first 64, last 64, 200 spread) fails verify"
else t_fail "flipping bytes of the archive" "$(grep -v '^tried' flips.out | head -5)" "$(tail -n 1 flips.out)"; fi
"$TOOL" flip flip.tar.zst 5000
expect_fail "and verify says the archive does not match" "does not match the signature" "$CAT" verify flip.tar.zst -p env.pub
"$TOOL" flip flip.tar.zst 5000
expect_ok "the unflipped archive still verifies" "$CAT" verify flip.tar.zst -p env.pub

size=$(stat -c %s flip.tar.zst.minisig)
tc_start=$(grep -b -o '^trusted comment' flip.tar.zst.minisig | cut -d: -f1)
gs_start=$(( $(grep -b -o '^trusted comment.*' flip.tar.zst.minisig | cut -d: -f2- | wc -c) + tc_start ))
"$TOOL" flip-each flip.tar.zst.minisig 1 all -- "$CAT" verify flip.tar.zst -p env.pub >flips.out
"$TOOL" flip-each flip.tar.zst.minisig 0x20 all -- "$CAT" verify flip.tar.zst -p env.pub >>flips.out
if [ "$(grep -c "^tried $size survived 0 crashed 0\$" flips.out)" = 2 ]; then
    t_ok "changing any byte of the signature (all $size bytes, two ways; trusted comment from $tc_start, global signature from $gs_start) fails verify"
else t_fail "changing bytes of the signature" "$(grep -v '^tried' flips.out | head -5)"; fi
"$TOOL" flip flip.tar.zst.minisig $((tc_start + 20)) 1
expect_fail "a changed trusted comment is reported as such" "trusted comment" "$CAT" verify flip.tar.zst -p env.pub
"$TOOL" flip flip.tar.zst.minisig $((tc_start + 20)) 1
"$TOOL" flip flip.tar.zst.minisig $((gs_start + 10)) 1
expect_fail "a changed global signature fails" "global signature|base64" "$CAT" verify flip.tar.zst -p env.pub
"$TOOL" flip flip.tar.zst.minisig $((gs_start + 10)) 1
expect_ok "the restored signature verifies" "$CAT" verify flip.tar.zst -p env.pub
t_done
