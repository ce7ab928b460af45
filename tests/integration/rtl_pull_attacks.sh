#!/usr/bin/env bash
# Attacks on rtl pull that once got through (issue 36), each now refused with
# a message naming its cause, and the device's catalog left as it was:
# another channel's index from the same URL (one device follows one channel),
# a stable index signed by the beta channel's key (per-channel key pins), an
# index valid for 100 years or with a serial far ahead, an edited untrusted
# comment, duplicate keys in a signed index and manifest, a half-file planted
# on the device (fetched again without blaming the server), a server too
# slow for the per-file and whole-pull deadlines (nginx on loopback); and
# the pull's messages (files reused after a resumed pull, one line per
# failure, progress on a terminal only), catalog publish's refusals.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
. "$TOP/tests/integration/rtl/nginx.sh"
trap 'ngx_stop; [ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
cd "$T" || exit 1

fx_catalog c 20 >/dev/null
"$CAT" keygen -p k.pub -s k.key -W >/dev/null
"$CAT" keygen -p b.pub -s b.key -W >/dev/null
fx_pack c c --version 1 --key k.key >/dev/null 2>&1
fx_pack c c --version 2 --key k.key >/dev/null 2>&1
mkdir -p beta && fx_pack c beta --version 3 --key b.key >/dev/null 2>&1
mkdir -p betak && fx_pack c betak --version 3 --key k.key >/dev/null 2>&1
A1=c/catalog-tinynet-1.tar.zst A2=c/catalog-tinynet-2.tar.zst
"$CAT" publish "$A2" -o stable --key k.key >/dev/null
"$CAT" publish betak/catalog-tinynet-3.tar.zst -o betak-pub --key k.key --channel beta >/dev/null
"$CAT" publish beta/catalog-tinynet-3.tar.zst -o beta-as-stable --key b.key --channel stable >/dev/null
U=file://$T

newroot() { rm -rf "$1" && mkdir -p "$1/keys" && cp k.pub "$1/keys/"; }
current() { sed -n 's/^current v\([0-9]*\)\..*/\1/p' "$1/catalogs/tinynet/STATE" 2>/dev/null; }
# sign_index FOLDER KEY [--untrusted-comment TEXT]: signs FOLDER/index.json as
# it stands, the trusted comment from its first channel, serial and expires
# (as the device reads them)
sign_index() {
    local f=$1 key=$2 tc
    shift 2
    tc=$(python3 - "$f/index.json" <<'EOF'
import json, sys
first = {}
def hook(pairs):
    d = {}
    for k, v in pairs:
        d.setdefault(k, v)
    return d
ix = json.load(open(sys.argv[1]), object_pairs_hook=hook)
print("index:%s\tserial:%d\texpires:%d" % (ix["channel"], ix["serial"], ix["expires"]))
EOF
)
    "$CAT" sign "$f/index.json" -s "$key" -x "$f/index.json.minisig" --trusted-comment "$tc" "$@" >/dev/null
}
# edit_index FOLDER PYTHON: applies the statement to ix (the parsed index)
# and writes it back
edit_index() {
    python3 - "$1/index.json" "$2" <<'EOF'
import json, sys
ix = json.load(open(sys.argv[1]))
exec(sys.argv[2])
open(sys.argv[1], "w").write(json.dumps(ix, indent=1) + "\n")
EOF
}

# ---- one device, one channel ----------------------------------------------------
newroot d
expect_ok "a first pull of channel stable" "$RTL" --root d pull "$U/stable"
t_check "the device now follows channel stable (ROOT/pull/channel)" grep -qx "channel stable" d/pull/channel
expect_fail "a validly signed index of channel beta from the same device is refused, naming both" \
    "is the index of channel 'beta', but this device follows channel 'stable' \(recorded in ROOT/pull/channel\)" \
    "$RTL" --root d pull "$U/betak-pub"
t_check "the beta build is not installed (version $(current d))" test "$(current d)" = 2
expect_fail "--channel beta on a device following stable is refused" \
    "--channel beta, but this device follows channel 'stable'.*remove that file" \
    "$RTL" --root d pull --channel beta "$U/betak-pub"
newroot e
expect_fail "a device told to follow beta refuses the stable index" \
    "is the index of channel 'stable', but this device follows channel 'beta' \(--channel\)" \
    "$RTL" --root e pull --channel beta "$U/stable"
t_check "and records no channel" test ! -e e/pull/channel
expect_ok "it takes the beta index" "$RTL" --root e pull --channel beta "$U/betak-pub"
t_check "and records beta" grep -qx "channel beta" e/pull/channel

# ---- a key per channel ----------------------------------------------------------
# the device trusts the beta key too (it installs beta archives by hand), but
# pins the stable key for channel stable
newroot p
rm p/keys/k.pub && mkdir -p p/keys/channels && cp k.pub p/keys/channels/stable.pub && cp b.pub p/keys/
expect_fail "a stable index signed by the beta channel's key is refused when stable's key is pinned" \
    "index.json is signed by key [0-9A-F]{16}, which is not pinned on this device for channel stable \(the key of channel stable: .*channels/stable.pub\)" \
    "$RTL" --root p pull "$U/beta-as-stable"
t_check "nothing is installed" test -z "$(current p)"
expect_ok "the genuine stable index, signed by the pinned key, is accepted" "$RTL" --root p pull "$U/stable"
expect_ok "the catalog, signed by a key pinned only under keys/channels/, verifies" "$RTL" --root p verify tinynet
newroot p2
cp b.pub p2/keys/
expect_ok "(without the pin, the device takes what any pinned key signed)" "$RTL" --root p2 pull "$U/beta-as-stable"

# ---- validity and serial step -----------------------------------------------------
expect_fail "catalog publish refuses a validity beyond the channel's maximum" \
    "--valid-for 8000000 s is more than the channel's max_validity of 7776000 s" \
    "$CAT" publish --refresh -o stable --key k.key --valid-for 8000000
t_check "the index records its maximum validity and serial step" \
    grep -q '"max_serial_step":[[:space:]]*1000000' stable/index.json
expect_fail "catalog publish refuses a serial beyond the channel's step" "more than the channel's max_serial_step of 5" \
    "$CAT" publish --refresh -o stable --key k.key --max-serial-step 5 --serial 100
expect_fail "catalog publish --max-validity beyond what devices accept is a usage error" "--max-validity needs" \
    "$CAT" publish --refresh -o stable --key k.key --max-validity 40000000
rm -rf v && cp -a stable v
edit_index v 'ix["serial"] += 1; ix["expires"] = ix["issued"] + 100 * 365 * 86400; ix["max_validity"] = 100 * 365 * 86400'
sign_index v k.key
expect_fail "an index valid for 100 years is refused" \
    "is valid for 3153600000 s from its issue, more than the 31622400 s allowed \(this device's cap of 366 days\)" \
    "$RTL" --root d pull "$U/v"
rm -rf v && cp -a stable v
edit_index v 'ix["serial"] = 2 ** 53'
sign_index v k.key
expect_fail "an index with serial 2^53 is refused" \
    "has serial 9007199254740992, more than 1000000 above serial [0-9]+ that this device accepted last \(the serial step allowed by its max_serial_step\)" \
    "$RTL" --root d pull "$U/v"
expect_ok "the genuine index is still accepted after both" "$RTL" --root d pull "$U/stable"
cp d/pull/seen-stable seen.keep
echo garbage > d/pull/seen-stable
expect_fail "a damaged replay record refuses the index (fails closed, not serial 0)" \
    "pull/seen-stable is damaged \(it must read \"serial N\"\): this device cannot tell an old index" \
    "$RTL" --root d pull "$U/stable"
rm d/pull/seen-stable && mkdir d/pull/seen-stable
expect_fail "an unreadable replay record refuses the index" "cannot read .*/pull/seen-stable: Is a directory" \
    "$RTL" --root d pull "$U/stable"
rmdir d/pull/seen-stable && cp seen.keep d/pull/seen-stable
expect_ok "the restored record accepts the genuine index again" "$RTL" --root d pull "$U/stable"

# ---- the untrusted comment; duplicate keys -----------------------------------------
rm -rf v && cp -a stable v
sign_index v k.key --untrusted-comment "signature of index stable serial 1 by key 0000000000000000 (vendor release)"
expect_fail "an index signature with an edited untrusted comment is refused" \
    "the untrusted comment .* does not match the signed fields.*the signature file was edited" "$RTL" --root d pull "$U/v"
sign_index v k.key
expect_ok "(minisign's default untrusted comment is accepted)" "$RTL" --root d pull "$U/v"
rm -rf v && cp -a stable v
sed -i '0,/{/s//{\n\t"serial":\t99,/' v/index.json
sign_index v k.key
expect_fail "a signed index with \"serial\" twice is refused" 'index.json: the key "serial" appears twice in one object' \
    "$RTL" --root d pull "$U/v"
rm -rf v && cp -a stable v
sed -i '0,/{/s//{\n\t"catalogs":\t[],/' v/index.json
sign_index v k.key
expect_fail "a signed index with \"catalogs\" twice is refused" 'index.json: the key "catalogs" appears twice' \
    "$RTL" --root d pull "$U/v"
# a manifest with "version" twice, its SHA-256 in a catalog signature by the
# pinned key and in a signed index
rm -rf v && cp -a stable v
tar --zstd -xOf "$A2" manifest.json >m.json
sed '0,/{/s//{\n\t"version":\t7,/' m.json >mdup.json
msha=$(sha256sum mdup.json | cut -c1-64)
cp mdup.json "v/objects/$msha"
"$CAT" sign v/tinynet/catalog-tinynet-2.tar.zst -s k.key -x v/tinynet/catalog-tinynet-2.tar.zst.minisig \
    --trusted-comment "$(printf 'timestamp:1\thashed\tcatalog:tinynet\tversion:7\tmodel:tinynet\tmanifest-sha256:%s' "$msha")" >/dev/null
edit_index v "e = ix['catalogs'][0]; e['version'] = 7; e['manifest_sha256'] = '$msha'; e['manifest_size'] = $(stat -c %s mdup.json); ix['serial'] += 1"
sign_index v k.key
expect_fail "a signed manifest with \"version\" twice is refused" 'manifest: the key "version" appears twice' \
    "$RTL" --root d pull "$U/v"
t_check "the device still has version 2" test "$(current d)" = 2
expect_ok "and its catalog verifies" "$RTL" --root d verify tinynet

# ---- a half-file planted on the device ----------------------------------------------
newroot h
obj=$(sha256sum c/variants/base/variant.weights | cut -c1-64)
mkdir -p h/pull/objects && head -c 50000 /dev/urandom >"h/pull/objects/$obj.part"
expect_ok "a planted half-file does not fail the pull from an honest server" "$RTL" --root h pull "$U/stable"
t_check "it says the bytes left on the device were fetched again, without blaming the server" bash -c \
    "grep -q 'an earlier pull left in ROOT/pull/objects/$obj.part did not complete.*fetching it again from byte 0' '$T/out' && ! grep -q 'the server sent' '$T/out'"
expect_ok "the catalog verifies" "$RTL" --root h verify tinynet
newroot h2
mkdir -p h2/pull/archives && head -c 50000 /dev/urandom >h2/pull/archives/tinynet-2.tar.zst.part
expect_ok "a planted half-archive: the same with --whole-archive" "$RTL" --root h2 pull --whole-archive "$U/stable"
t_check "(fetched again from byte 0)" grep -q "archive completed from what an earlier pull left .* fetching it again from byte 0" "$T/out"

# ---- the messages ---------------------------------------------------------------------
newroot r
"$RTL" --root r pull --fetch-only "$U/stable" >/dev/null 2>&1
expect_ok "a pull after a fetch-only one" "$RTL" --root r pull "$U/stable"
nfiles=$(ls stable/objects | wc -l)
t_check "says it reused the $nfiles files fetched before, not 0" \
    grep -q "installed none -> 2: fetched 0 bytes (0 files), reused [0-9]* bytes ($nfiles files)" "$T/out"
newroot f
cp -a stable broken && "$TOOL" flip "broken/objects/$obj" 100 >/dev/null
expect_fail "a failing pull" "SHA-256 differs" "$RTL" --root f pull --retries 0 "$U/broken"
t_check "prints its failure once" test "$(grep -c 'SHA-256 differs' "$T/out")" = 1
"$RTL" --root f pull --limit-rate 2M "$U/stable" >plain.out 2>&1
t_check "no progress line when stderr is not a terminal" bash -c "! grep -q ' left' plain.out"
if command -v script >/dev/null; then
    newroot f
    script -qec "'$RTL' --root f pull --limit-rate 2M '$U/stable'" /dev/null >tty.out 2>&1
    t_check "progress (bytes, rate, time left) on a terminal" grep -Eq "[0-9.]+ [KM]iB of [0-9.]+ [KM]iB, [0-9.]+ [KM]iB/s, [0-9]+ s left" tty.out
else
    t_skip "progress on a terminal" "script (util-linux) is not installed"
fi
expect_fail "catalog publish of a missing archive names the archive" \
    "cannot read the archive /nonexist.tar.zst: No such file" "$CAT" publish /nonexist.tar.zst -o newdest --key k.key
t_check "(not its signature)" bash -c "! grep -q minisig '$T/out'"
t_check "and leaves no DEST folder behind" test ! -e newdest
expect_fail "a failed publish into a new DEST" "signed by the key" "$CAT" publish beta/catalog-tinynet-3.tar.zst -o newdest --key k.key
t_check "leaves no DEST folder behind either" test ! -e newdest

# ---- deadlines ----------------------------------------------------------------------------
newroot dl
start=$(date +%s)
expect_fail "the whole-pull deadline ends a slow pull, saying so" \
    "the pull's deadline of 1 s passed \(--deadline\): stopping; the [0-9]+ bytes of this file held are kept" \
    "$RTL" --root dl pull --limit-rate 64K --deadline 1 "$U/stable"
t_check "within a few seconds ($(( $(date +%s) - start )) s)" test $(( $(date +%s) - start )) -le 6
if command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; then
    if ngx_start "$T/stable"; then
        newroot dn
        start=$(date +%s)
        expect_fail "a server sending a steady 8 KiB/s misses the per-file deadline at --min-rate 4M" \
            "not complete within its deadline of 1 s plus [0-9]+ bytes at the minimum rate of 4194304 bytes/s \(--timeout, --min-rate\)" \
            "$RTL" --root dn pull --whole-archive --timeout 1 --min-rate 4M --retries 0 "$NGX_URL/drip/"
        t_check "it ends within a few seconds ($(( $(date +%s) - start )) s)" test $(( $(date +%s) - start )) -le 8
        expect_ok "the same server at full speed meets it" "$RTL" --root dn pull --whole-archive --timeout 1 \
            --min-rate 4M "$NGX_URL/"
        ngx_stop
    else
        t_fail "nginx starts on loopback" "$(tail -5 "$T/nginx/error.log" 2>/dev/null)"
    fi
else
    t_skip "the per-file deadline against a dripping server" "nginx is not installed (make deps installs nginx-light)"
fi
t_done
