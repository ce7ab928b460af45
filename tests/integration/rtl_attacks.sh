#!/usr/bin/env bash
# Hostile archives against rtl install. Most are signed by the pinned key, so
# only the extraction checks stand between them and the device. Each must be
# refused with a clear message, leave the store exactly as it was (no
# staging folder left, the installed catalog unchanged and verifying) and
# write nothing outside it.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1

fx_keyed_catalog
"$CAT" keygen -p other.pub -s other.key -W >/dev/null
fx_pack c c --version 4 --key k.key >/dev/null 2>&1
fx_pack c c --version 5 --key k.key >/dev/null 2>&1
R=root
mkdir -p $R/keys && cp k.pub $R/keys/
rtl() { "$RTL" --root "$R" "$@"; }
rtl install c/catalog-tinynet-5.tar.zst >/dev/null 2>&1 || { t_fail "setup: install version 5"; t_done; exit 0; }

snapshot() { (cd "$R" && find . -printf '%p %y %s %m %l\n' | LC_ALL=C sort && find . -type f -exec sha256sum {} + | LC_ALL=C sort); }
before=$(snapshot)
evil=/tmp/rtl-evil-$$

# The parts to craft with: version 5's files, and a version 6 manifest.
mkdir x att && tar --zstd -xf c/catalog-tinynet-5.tar.zst -C x
sed -E 's/("version":[[:space:]]*)5,/\16,/' x/manifest.json >m6.json
mapfile -t paths < <(grep -o '"path":[[:space:]]*"[^"]*"' m6.json | cut -d'"' -f4 | LC_ALL=C sort)
files=()
for p in "${paths[@]}"; do files+=("f:$p=x/$p"); done

# sign ARCHIVE MANIFEST [KEY [CATALOG]]: a signature with the catalog fields
# rtl requires, for the manifest given, by the pinned key unless told.
sign() {
    local sha
    sha=$(sha256sum "$2" | cut -d' ' -f1)
    "$CAT" sign "$1" -s "${3:-k.key}" --trusted-comment \
        "$(printf 'timestamp:1\thashed\tcatalog:%s\tversion:6\tmodel:tinynet\tmanifest-sha256:%s' "${4:-tinynet}" "$sha")" >/dev/null
}
# craft NAME MANIFEST ENTRY...: att/NAME.tar.zst with exactly these entries, signed.
craft() {
    local name=$1 m=$2
    shift 2
    "$TOOL" tar "att/$name.tar.zst" "$@" && sign "att/$name.tar.zst" "$m"
}
# attack NAME PATTERN ARCHIVE [SIG]: refused with PATTERN, nothing changed.
attack() {
    local name=$1 pat=$2
    shift 2
    expect_fail "$name: refused" "$pat" rtl install "$@"
    local after problems=''
    after=$(snapshot)
    [ "$after" = "$before" ] || problems="the store changed: $(diff <(echo "$before") <(echo "$after") | head -n 4 | tr '\n' ' ')"
    ls -a "$R/catalogs/tinynet" | grep -q '^\.staging' && problems="$problems a staging folder was left"
    [ -e "$evil" ] || [ -e "$T/evil" ] || [ -e "$R/catalogs/evil" ] && problems="$problems a file was written outside"
    "$RTL" --root "$R" verify tinynet >/dev/null 2>&1 || problems="$problems the installed catalog no longer verifies"
    if [ -z "$problems" ]; then t_ok "$name: store unchanged, installed catalog verifies"
    else t_fail "$name: store unchanged" "$problems"; fi
}
with_kind() { # KIND-SPEC: the good entries plus one more after the manifest
    printf '%s\n' "f:manifest.json=m6.json" "$1" "${files[@]}"
}

n_kind=0
craft good m6.json f:manifest.json=m6.json "${files[@]}"
expect_ok "setup: the crafted version 6 is well formed (inspect)" "$RTL" inspect att/good.tar.zst

# one extra entry after the manifest: NAME|ENTRY|PATTERN
while IFS='|' read -r name entry pat; do
    [ -n "$name" ] || continue
    mapfile -t e < <(with_kind "$entry")
    n_kind=$((n_kind + 1))
    craft "a$n_kind" m6.json "${e[@]}"
    attack "$name" "$pat" "att/a$n_kind.tar.zst"
done <<EOF
an absolute path|f:$evil=x/variants/base/variant.cfg|unsafe entry name: '$evil' is an absolute path
a path with ..|f:variants/base/../../../../evil=x/variants/base/variant.cfg|contains '..'
a symbolic link (over a manifest file)|l:variants/base/variant.cfg=/etc/passwd|entry 'variants/base/variant.cfg' is a symbolic link to '/etc/passwd'
a hard link|h:variants/base/variant.cfg=/etc/passwd|is a hard link to '/etc/passwd'
a character device|c:variants/base/dev|is a character device
a block device|b:variants/base/disk|is a block device
a fifo|p:variants/base/pipe|is a fifo
a folder entry|d:variants/base|is a folder
EOF
craft dup m6.json f:manifest.json=m6.json "${files[@]}" "f:variants/base/variant.cfg=x/variants/base/variant.cfg"
attack "a duplicate name" "entry 'variants/base/variant.cfg' appears twice" att/dup.tar.zst
craft dupmanifest m6.json f:manifest.json=m6.json f:manifest.json=m6.json "${files[@]}"
attack "manifest.json twice" "entry 'manifest.json' appears twice" att/dupmanifest.tar.zst
craft extra m6.json f:manifest.json=m6.json "${files[@]}" "f:variants/base/extra.bin=x/variants/base/variant.cfg"
attack "a file the manifest does not list" "entry 'variants/base/extra.bin' is not a file of the manifest" att/extra.tar.zst
craft missing m6.json f:manifest.json=m6.json "${files[@]:1}"
attack "a file the manifest lists but the archive lacks" "the archive lacks '${paths[0]}'" att/missing.tar.zst
awk '/"path":.*"variants\/base\/variant.cfg"/ { hit = 1 } hit && /"size":/ { sub(/[0-9]+/, $2 + 1); hit = 0 } { print }' m6.json >m-size.json
craft size m-size.json f:manifest.json=m-size.json "${files[@]}"
attack "a size that differs from the manifest" "entry 'variants/base/variant.cfg' is [0-9]+ bytes but the manifest says" att/size.tar.zst
cp x/variants/base/variant.cfg tampered.cfg && "$TOOL" flip tampered.cfg 10
mapfile -t e < <(printf '%s\n' "${files[@]}" | sed 's|^f:variants/base/variant.cfg=.*|f:variants/base/variant.cfg=tampered.cfg|')
craft sha m6.json f:manifest.json=m6.json "${e[@]}"
attack "content whose SHA-256 differs from the manifest" "entry 'variants/base/variant.cfg': its SHA-256 differs" att/sha.tar.zst
craft second m6.json "${files[0]}" f:manifest.json=m6.json "${files[@]:1}"
attack "manifest.json not first" "the first entry is '${paths[0]}', not manifest.json" att/second.tar.zst
sed 's/fixture variant base/fixture variant BASE/' m6.json >m-other.json
"$TOOL" tar att/mhash.tar.zst f:manifest.json=m-other.json "${files[@]}" && sign att/mhash.tar.zst m6.json
attack "a manifest whose hash is not the signed one" "manifest.json does not match the manifest-sha256" att/mhash.tar.zst
sed -E 's/("catalog":[[:space:]]*)"tinynet"/\1"othernet"/' m6.json >m-id.json
craft mid m-id.json f:manifest.json=m-id.json "${files[@]}"
attack "a manifest naming another catalog than the signature" "the manifest says catalog othernet version 6" att/mid.tar.zst
sed 's|"variants/base/variant.cfg"|"variants/base/../../../../evil"|' m6.json >m-dotdot.json
mapfile -t e < <(printf '%s\n' "${files[@]}" | sed 's|^f:variants/base/variant.cfg=|f:variants/base/../../../../evil=|')
craft mdotdot m-dotdot.json f:manifest.json=m-dotdot.json "${e[@]}"
attack "a manifest path with .." "manifest: variant 'base' file [0-9]: '.*' contains '..'" att/mdotdot.tar.zst
sed 's|"variants/base/variant.cfg"|"variants/exit-2/variant.cfg2"|' m6.json >m-under.json
mapfile -t e < <(printf '%s\n' "${files[@]}" | sed 's|^f:variants/base/variant.cfg=|f:variants/exit-2/variant.cfg2=|')
craft under m-under.json f:manifest.json=m-under.json "${e[@]}"
attack "a manifest path under another variant" "is not under 'variants/base/'" att/under.tar.zst
"$TOOL" tar-raw att/raw.tar f:manifest.json=m6.json "${files[@]}" && sign att/raw.tar m6.json
attack "an archive that is not zstd-compressed" "not compressed with zstd" att/raw.tar
cp att/good.tar.zst att/untrusted.tar.zst && sign att/untrusted.tar.zst m6.json other.key
attack "a valid archive signed by an untrusted key" "signed by key [0-9A-F]{16}, which is not pinned" att/untrusted.tar.zst
attack "an older version, validly signed" "version 4, which is not newer than the installed version 5" c/catalog-tinynet-4.tar.zst
cp att/good.tar.zst att/wrongsig.tar.zst && cp c/catalog-tinynet-5.tar.zst.minisig att/wrongsig.tar.zst.minisig
attack "a signature of another archive" "does not match the signature" att/wrongsig.tar.zst
printf 'not a signature\n' >att/junk.sig
attack "a signature file that is not one" "signature: only 1 lines" att/good.tar.zst att/junk.sig

# Truncation at many offsets: with the original signature, and re-signed by
# the pinned key so that only the archive reader can catch it.
size=$(stat -c %s att/good.tar.zst)
bad='' n=0
for off in 0 1 4 13 100 511 1000 4096 $((size / 7)) $((size / 4)) $((size / 3)) $((size / 2)) $((2 * size / 3)) \
           $((3 * size / 4)) $((size - 1000)) $((size - 100)) $((size - 9)) $((size - 1)); do
    head -c "$off" att/good.tar.zst >att/cut.tar.zst
    cp att/good.tar.zst.minisig att/cut.tar.zst.minisig
    if rtl install att/cut.tar.zst >cut.out 2>&1 || ! grep -q "does not match the signature" cut.out; then bad="$bad $off(orig-sig)"; fi
    sign att/cut.tar.zst m6.json
    if rtl install att/cut.tar.zst >cut.out 2>&1; then bad="$bad $off(installed)"
    elif ! grep -Eq "rtl: error: .*(cannot read the archive|damaged archive|ends after|lacks|holds no entry|truncated|not compressed)" cut.out; then
        bad="$bad $off($(tail -n 1 cut.out))"
    fi
    n=$((n + 1))
done
after=$(snapshot)
if [ -z "$bad" ] && [ "$after" = "$before" ]; then t_ok "an archive cut at any of $n offsets is refused, re-signed or not, and the store is unchanged"
else t_fail "truncated archives" "not refused cleanly at:$bad" "$( [ "$after" = "$before" ] || echo 'and the store changed')"; fi

expect_ok "the crafted version 6 itself installs (the attacks failed for their flaw alone)" rtl install att/good.tar.zst
expect_ok "and verifies" rtl verify tinynet
t_done
