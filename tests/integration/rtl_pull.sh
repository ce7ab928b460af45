#!/usr/bin/env bash
# rtl pull against a real web server (Debian's nginx, started here on
# loopback at a free port with its own configuration in $T, stopped by the
# EXIT trap): a full pull, pulls interrupted by killing the server at many
# points and resumed, truncated, altered and oversized files, expired and
# replayed indexes, a man in the middle with another key, the nightly
# rebuild in which one variant changed (bytes counted by nginx), the
# fallback to the whole archive, --check, the bandwidth limit; then the
# same without a server (file://) by the aarch64 rtl under qemu-user.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
. "$TOP/tests/integration/rtl/nginx.sh"
trap 'ngx_stop; [ "${KEEP:-0}" = 1 ] || rm -rf "$T"' EXIT
NGX_SNDBUF=32k
cd "$T" || exit 1

if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    t_skip "rtl pull against nginx" "nginx is not installed (make deps installs nginx-light)"
    t_done
    exit 0
fi

# the catalog: 6.8 MB in 23 files; version 1, then a nightly rebuild (2) in
# which only the svd-fc-4x variant changed
fx_catalog c 20 >/dev/null
"$CAT" keygen -p k.pub -s k.key -W >/dev/null
"$CAT" keygen -p evil.pub -s evil.key -W >/dev/null
fx_pack c c --version 1 --key k.key >/dev/null 2>&1
w=c/variants/svd-fc-4x/variant.weights
"$TOOL" bytes 4242 "$(stat -c %s $w)" >$w.new && mv $w.new $w
fx_pack c c --version 2 --key k.key >/dev/null 2>&1
A1=c/catalog-tinynet-1.tar.zst A2=c/catalog-tinynet-2.tar.zst
variant_bytes=$(($(stat -c %s c/variants/svd-fc-4x/variant.weights) + $(stat -c %s c/variants/svd-fc-4x/variant.cfg)))

expect_ok "catalog publish writes the publish folder" "$CAT" publish "$A1" -o pub --key k.key
t_check "it has the index, its signature, the archive and the objects" \
    test -f pub/index.json -a -f pub/index.json.minisig -a -f pub/tinynet/catalog-tinynet-1.tar.zst \
    -a -f pub/tinynet/catalog-tinynet-1.tar.zst.minisig -a "$(ls pub/objects | wc -l)" = 24
sha=$(sha256sum c/variants/base/variant.weights | cut -c1-64)
t_check "objects are named by their SHA-256" cmp c/variants/base/variant.weights "pub/objects/$sha"
expect_fail "publish refuses an archive signed by another key" "not publishing .* signed by the key" \
    "$CAT" publish "$A1" -o pubx --key evil.key

ngx_start "$T/pub" || { t_fail "nginx starts on loopback" "$(cat "$T/nginx/error.log" "$T/nginx/stderr.log" 2>/dev/null | tail -5)"; t_done; exit 0; }
t_ok "nginx starts on loopback ($NGX_URL)"

newroot() { rm -rf "$1" && mkdir -p "$1/keys" && cp k.pub "$1/keys/"; }
# fetched OUT-FILE: the "N bytes fetched in all" of an rtl pull's output
fetched() { sed -n 's/.*: \([0-9]*\) bytes fetched in all.*/\1/p' "$1" | tail -n 1; }
# state ROOT: what a device has installed (STATE files and copy names)
state() { local d; for d in "$1"/catalogs/*/; do [ -d "$d" ] && echo "$d $(grep -v '^#' "$d/STATE" 2>/dev/null | tr '\n' ' ') $(ls -a "$d" | tr '\n' ' ')"; done; }

# ---- a full pull ---------------------------------------------------------------
newroot d
expect_ok "a full pull from nginx" "$RTL" --root d pull "$NGX_URL/"
t_check "it installs version 1 through the per-file layout" grep -q "catalog tinynet installed none -> 1: .* per file" "$T/out"
full=$(fetched "$T/out")
expect_ok "the pulled catalog verifies" "$RTL" --root d verify tinynet
t_check "its files are those of the archive" bash -c \
    "tar --zstd -xOf '$A1' variants/base/variant.weights | cmp - d/catalogs/tinynet/v1.1/variants/base/variant.weights"
t_check "nothing is left in the download folder" test -z "$(find d/pull/objects d/pull/archives -type f)"
expect_ok "pulling again" "$RTL" --root d pull "$NGX_URL"
t_check "says up to date and fetches only the index and its signature" bash -c \
    "grep -q 'up to date: version 1' '$T/out' && test \$(sed -n 's/.*: \([0-9]*\) bytes fetched in all.*/\1/p' '$T/out') -lt 2000"

# ---- the nightly rebuild: only the changed variant's bytes ----------------------
"$CAT" publish "$A2" -o pub --key k.key >/dev/null 2>&1
expect_ok "pull --check says an update exists" "$RTL" --root d pull --check "$NGX_URL"
t_check "--check names it and installs nothing" bash -c \
    "grep -q 'catalog tinynet update available: 1 -> 2' '$T/out' && grep -q '^current v1' d/catalogs/tinynet/STATE"
ngx_log_reset
expect_ok "pull of the nightly rebuild" "$RTL" --root d pull "$NGX_URL"
nightly=$(ngx_bytes .)
manifest_bytes=$(tar --zstd -xOf "$A2" manifest.json | wc -c)
sig_bytes=$(stat -c %s "$A2.minisig")
budget=$(awk -v v="$variant_bytes" -v m="$manifest_bytes" -v s="$sig_bytes" 'BEGIN { printf "%d", 1.2 * v + m + s }')
echo "# nightly rebuild: nginx sent $nightly bytes; changed variant $variant_bytes, manifest $manifest_bytes, signature $sig_bytes (budget 1.2 x variant + manifest + signature = $budget; the whole archive is $(stat -c %s "$A2"))"
t_check "it costs at most 1.2 x the changed variant's bytes plus the manifest and signature ($nightly <= $budget)" \
    test "$nightly" -le "$budget"
t_check "rtl counts what nginx sent ($(fetched "$T/out") = $nightly)" test "$(fetched "$T/out")" = "$nightly"
t_check "the other 22 files come from the installed copy" grep -q "reused [0-9]* bytes (22 files)" "$T/out"
expect_ok "version 2 verifies" "$RTL" --root d verify tinynet
t_check "version 2 is current, 1 previous" bash -c "grep -q '^current v2' d/catalogs/tinynet/STATE && grep -q '^previous v1' d/catalogs/tinynet/STATE"

# ---- interrupted by killing the server, resumed -------------------------------
# A fresh device pulls at 2 MiB/s; the server is killed after 0.1-0.25 s,
# restarted, and the pull run again, until it completes. After each kill the
# device's store verifies (nothing or a complete catalog) and the download
# folder holds only partial files; in all, no byte is fetched twice beyond
# one block (the index and signatures, fetched afresh by each run, aside).
meta=$(($(stat -c %s pub/index.json) + $(stat -c %s pub/index.json.minisig) + sig_bytes))
newroot ref
"$RTL" --root ref pull "$NGX_URL" >ref.out 2>&1
one=$(fetched ref.out)
interrupted() { # ROOT EXTRA-ARGS...: sets RUNS, SUM and BAD (no subshell: it restarts nginx)
    local root=$1 i rc p
    shift
    local extra=0 got
    RUNS=0 SUM=0 BAD=''
    for i in $(seq 1 60); do
        "$RTL" --root "$root" pull "$NGX_URL" --limit-rate 2M --retries 0 "$@" >run.out 2>&1 &
        p=$!
        # 0.10-0.25 s, longer while a loaded machine lets runs fetch nothing
        sleep "$(awk -v a=$((10 + 5 * (i % 4))) -v e=$extra 'BEGIN { printf "%.2f", (a + e) / 100 }')"
        ngx_kill
        wait $p; rc=$?
        got=$(fetched run.out)
        RUNS=$((RUNS + 1)) SUM=$((SUM + ${got:-0}))
        [ "${got:-0}" -gt 2000 ] || extra=$((extra + 10))
        "$RTL" --root "$root" verify >verify.out 2>&1 || BAD="$BAD verify-after-kill-$i"
        find "$root/catalogs" -name '.staging-*' | grep -q . && BAD="$BAD staging-left-$i"
        ngx_start "$T/pub" || { BAD="$BAD restart"; break; }
        [ $rc = 0 ] && break
    done
}
newroot i1
interrupted i1
runs=$RUNS sum=$SUM bad=$BAD
echo "# killed mid-pull: $runs runs fetched $sum bytes; one uninterrupted pull fetches $one (index and signatures: $meta per run)"
t_check "a pull interrupted by killing the server completes after $runs runs${bad:+ ($bad)}" \
    bash -c "[ $runs -ge 4 ] && [ -z '$bad' ] && grep -q 'installed none -> 2' run.out"
t_check "no byte fetched twice beyond one block ($sum <= $one + $((runs - 1)) x $meta + 16384)" \
    test "$sum" -le $((one + (runs - 1) * meta + 16384))
expect_ok "the resumed catalog verifies" "$RTL" --root i1 verify tinynet
t_check "and equals the uninterrupted one" diff -r i1/catalogs/tinynet/v2.1 ref/catalogs/tinynet/v2.1

# the whole archive, interrupted, over an installed version 1 (which stays complete)
newroot i2
"$RTL" --root i2 install "$A1" >/dev/null 2>&1
interrupted i2 --whole-archive
runs2=$RUNS sum2=$SUM bad2=$BAD
a2=$(stat -c %s "$A2")
echo "# whole archive killed mid-pull: $runs2 runs fetched $sum2 bytes for a $a2-byte archive"
t_check "the whole archive, interrupted $((runs2 - 1)) times over version 1, completes${bad2:+ ($bad2)}" \
    bash -c "[ $runs2 -ge 3 ] && [ -z '$bad2' ] && grep -q 'installed 1 -> 2: .* whole archive' run.out"
t_check "no archive byte fetched twice beyond one block" test "$sum2" -le $((a2 + runs2 * meta + 16384))
expect_ok "version 2 verifies after the resumed archive" "$RTL" --root i2 verify tinynet

# the pull retries by itself with backoff while the server is down
newroot i3
"$RTL" --root i3 pull "$NGX_URL" --limit-rate 4M --retries 20 --backoff-ms 200 >retry.out 2>&1 &
p=$!
for k in 1 2 3; do sleep 0.3; ngx_kill; sleep 0.4; ngx_start "$T/pub"; done
wait $p; rc=$?
t_check "a single pull survives three server crashes by retrying with backoff" \
    bash -c "[ $rc = 0 ] && grep -q 'installed none -> 2' retry.out && ! grep -q ' 0 retries' retry.out"
t_check "it resumes with Range requests" grep -q "resuming .* at byte [1-9]" retry.out

# the device is killed instead (a power cut of the device): the next pull resumes
newroot i4
for k in 1 2 3 4 5; do
    had=$(du -sb i4/pull/objects 2>/dev/null | cut -f1)
    "$RTL" --root i4 pull "$NGX_URL" --limit-rate 2M >kill.out 2>&1 &
    p=$!
    # once this run fetches object bytes (its start is slower under SAN= or load)
    for w in $(seq 200); do
        [ "$(du -sb i4/pull/objects 2>/dev/null | cut -f1)" -gt "${had:-0}" ] 2>/dev/null && break
        kill -0 $p 2>/dev/null || break
        sleep 0.05
    done
    sleep "0.$((15 + 5 * k))"
    kill -9 $p 2>/dev/null; wait $p 2>/dev/null
    "$RTL" --root i4 verify >/dev/null 2>&1 || bad4="${bad4:-} verify-after-kill-$k"
done
expect_ok "after five kills of rtl itself the next pull completes" "$RTL" --root i4 pull "$NGX_URL"
t_check "it resumed what the killed pulls had fetched${bad4:+ ($bad4)}" \
    bash -c "[ -z '${bad4:-}' ] && [ \$(sed -n 's/.*: \([0-9]*\) bytes fetched in all.*/\1/p' '$T/out') -lt $((one - 1000000)) ]"
expect_ok "and the catalog verifies" "$RTL" --root i4 verify tinynet
# a download complete on disk but not yet checked (killed right after it)
newroot i5
bw_sha=$(sha256sum c/variants/base/variant.weights | cut -c1-64)
mkdir -p i5/pull/objects && cp "pub/objects/$bw_sha" "i5/pull/objects/$bw_sha.part"
expect_ok "a complete .part left by a killed pull is checked and used" "$RTL" --root i5 pull "$NGX_URL"
t_check "without fetching it again" test "$(fetched "$T/out")" = $((one - $(stat -c %s "pub/objects/$bw_sha")))
newroot i6
mkdir -p i6/pull/objects && cp "pub/objects/$bw_sha" "i6/pull/objects/$bw_sha" && "$TOOL" flip "i6/pull/objects/$bw_sha" 5 >/dev/null
expect_ok "a damaged download kept from an earlier pull is fetched again" "$RTL" --root i6 pull "$NGX_URL"
t_check "(all of it)" test "$(fetched "$T/out")" = "$one"

# ---- the server serves a truncated, altered or longer file --------------------
obj=pub/objects/$(sha256sum c/variants/svd-fc-4x/variant.weights | cut -c1-64)
newroot bad
before=$(state bad)
cp "$obj" obj.keep
"$TOOL" flip "$obj" 300000 >/dev/null
expect_fail "an altered file is refused" "SHA-256 differs\): the server sent an altered or damaged file; refusing it, nothing installed" \
    "$RTL" --root bad pull "$NGX_URL"
t_check "nothing is installed and the altered download is dropped" \
    bash -c "[ '$(state bad)' = '$before' ] && [ -z \"\$(ls bad/pull/objects | grep '$(basename "$obj")')\" ]"
head -c 100000 obj.keep >"$obj"
expect_fail "a truncated file is refused" "sent 100000 bytes where 600020 were expected" "$RTL" --root bad pull "$NGX_URL"
t_check "nothing is installed after the truncated file" test "$(state bad)" = "$before"
{ cat obj.keep; echo extra; } >"$obj"
expect_fail "a longer file is refused at its first byte too many" "sent more than the 600020 bytes expected" \
    "$RTL" --root bad pull "$NGX_URL"
cp obj.keep "$obj"
man=pub/objects/$(tar --zstd -xOf "$A2" manifest.json | sha256sum | cut -c1-64)
cp "$man" man.keep && sed -i 's/fixture variant base/fixture variant BASE/' "$man"
newroot badm
expect_fail "an altered manifest is refused" "SHA-256 differs" "$RTL" --root badm pull "$NGX_URL"
t_check "nothing is installed after the altered manifest" test -z "$(state badm)"
cp man.keep "$man"
arc=pub/tinynet/catalog-tinynet-2.tar.zst
cp $arc arc.keep
"$TOOL" flip $arc 12345 >/dev/null
expect_fail "an altered archive is refused" "does not match the signature" "$RTL" --root bad pull --whole-archive "$NGX_URL"
t_check "nothing installed, the altered archive dropped" bash -c "[ '$(state bad)' = '$before' ] && [ -z \"\$(ls bad/pull/archives | grep tar.zst\$)\" ]"
head -c 1000000 arc.keep >$arc
expect_fail "a truncated archive is refused" "sent [0-9]+ bytes where $a2 were expected" "$RTL" --root bad pull --whole-archive "$NGX_URL"
cp arc.keep $arc
t_check "nothing was installed by any of them" test "$(state bad)" = "$before"
expect_ok "once the server is repaired the pull succeeds" "$RTL" --root bad pull "$NGX_URL"

# ---- expired and replayed indexes (freeze and replay attacks) ------------------
mkdir -p old && cp pub/index.json pub/index.json.minisig old/
expect_ok "catalog publish --refresh re-signs the index" "$CAT" publish --refresh -o pub --key k.key --valid-for 1
sleep 2
expect_fail "an expired index is refused with a clear message" \
    "index.json of channel stable \(serial [0-9]+\) expired at .*Refusing it: the server may be replaying a frozen old index" \
    "$RTL" --root d pull "$NGX_URL"
"$CAT" publish --refresh -o pub --key k.key >/dev/null
expect_ok "a re-signed index is accepted again" "$RTL" --root d pull "$NGX_URL"
cp old/index.json old/index.json.minisig pub/
expect_fail "a replayed older index is refused with a clear message" \
    "has serial [0-9]+, older than serial [0-9]+ that this device accepted before: the server is replaying an old index" \
    "$RTL" --root d pull "$NGX_URL"
expect_fail "--check refuses it too" "replaying an old index" "$RTL" --root d pull --check "$NGX_URL"
"$CAT" publish --refresh -o pub --key k.key >/dev/null
cp pub/index.json index.keep
printf 'x' >>pub/index.json
expect_fail "an index changed after signing is refused" "does not match the signature" "$RTL" --root d pull "$NGX_URL"
cp index.keep pub/index.json
"$CAT" publish --refresh -o pub --key k.key >/dev/null

# ---- a man in the middle -------------------------------------------------------
# another key's whole publish folder (index, catalog version 9, objects)
fx_pack c evil --version 9 --key evil.key >/dev/null 2>&1
"$CAT" publish evil/catalog-tinynet-9.tar.zst -o evilpub --key evil.key >/dev/null 2>&1
ngx_stop; ngx_start "$T/evilpub"
before=$(state d)
expect_fail "a man in the middle serving another key's catalog is refused" \
    "index.json is signed by key [0-9A-F]{16}, which is not pinned on this device" "$RTL" --root d pull "$NGX_URL"
t_check "nothing changed on the device" test "$(state d)" = "$before"
# the genuine index, but another key's signature for the catalog
ngx_stop; rm -rf mitm && cp -a pub mitm && ngx_start "$T/mitm"
"$CAT" sign mitm/tinynet/catalog-tinynet-2.tar.zst -s evil.key -x mitm/tinynet/catalog-tinynet-2.tar.zst.minisig >/dev/null
newroot m
expect_fail "the genuine index with another key's catalog signature is refused" \
    "catalog-tinynet-2.tar.zst.minisig is signed by key [0-9A-F]{16}, which is not pinned" "$RTL" --root m pull "$NGX_URL"
# the genuine index, but the genuine signature of an older version
cp pub/tinynet/catalog-tinynet-1.tar.zst.minisig mitm/tinynet/catalog-tinynet-2.tar.zst.minisig
expect_fail "an older version's genuine signature under the new name is refused" \
    "is the signature of catalog tinynet version 1, not of the catalog tinynet version 2" "$RTL" --root m pull "$NGX_URL"
t_check "nothing was installed by the man in the middle" test -z "$(state m)"
ngx_stop; ngx_start "$T/pub"

# ---- no per-file layout: the whole archive --------------------------------------
"$CAT" publish "$A1" -o flat --key k.key --no-objects --channel flat >/dev/null 2>&1
"$CAT" publish "$A2" -o flat --key k.key --no-objects >/dev/null 2>&1
ngx_stop; ngx_start "$T/flat"
newroot f
"$RTL" --root f install "$A1" >/dev/null 2>&1
expect_ok "without objects/ the pull falls back to the whole archive" "$RTL" --root f pull "$NGX_URL"
t_check "it says so and installs version 2" grep -q "installed 1 -> 2: fetched $a2 bytes .* whole archive" "$T/out"
expect_ok "which verifies" "$RTL" --root f verify tinynet

# ---- the bandwidth limit ---------------------------------------------------------
newroot bw
start=$(date +%s.%N)
"$RTL" --root bw pull "$NGX_URL" --whole-archive --fetch-only --limit-rate 2M >bw.out 2>&1
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
echo "# --limit-rate 2M: $a2 bytes in $secs s"
t_check "--limit-rate 2M holds $a2 bytes to at least $((a2 / 2097152 * 9 / 10)) s (took $secs s)" \
    awk -v s="$secs" -v b="$a2" 'BEGIN { exit !(s >= 0.9 * b / 2097152) }'
t_check "--fetch-only fetches and verifies but installs nothing" \
    bash -c "grep -q 'catalog tinynet fetched none -> 2' bw.out && [ ! -e bw/catalogs/tinynet/STATE ] && [ -f bw/pull/archives/tinynet-2.tar.zst ]"
expect_ok "the next pull installs what was fetched without fetching it again" "$RTL" --root bw pull "$NGX_URL" --whole-archive
t_check "(only the index and signatures: $(fetched "$T/out") bytes)" test "$(fetched "$T/out")" -lt 2000

# ---- a server dripping bytes --------------------------------------------------------------
newroot slow
start=$(date +%s)
expect_fail "a server dripping bytes is cut off after --timeout" "Timeout was reached|too slow" \
    "$RTL" --root slow pull --whole-archive --timeout 2 --retries 1 --backoff-ms 100 "$NGX_URL/slow/"
# (libcurl averages the speed over its last 5 s, so a try ends 2 to 7 s into the drip)
t_check "within the bounds (2 tries of at most 2 + 5 s and the backoff: $(( $(date +%s) - start )) s)" \
    test $(( $(date +%s) - start )) -le 25
t_check "what it received is kept for the next pull" bash -c "[ \$(stat -c %s slow/pull/archives/tinynet-2.tar.zst.part) -ge 65536 ]"

# ---- https -------------------------------------------------------------------------------
if command -v openssl >/dev/null; then
    ngx_stop
    NGX_TLS=1 NGX_PORT= ngx_start "$T/pub"
    newroot tls
    expect_fail "https with a certificate no CA vouches for is refused" "SSL|certificate" \
        "$RTL" --root tls pull --retries 0 "$NGX_URL"
    expect_ok "https with --cacert" "$RTL" --root tls pull --cacert "$T/nginx/cert.pem" "$NGX_URL"
    t_check "installs over https" grep -q "catalog tinynet installed none -> 2" "$T/out"
    ngx_stop
    NGX_PORT= ngx_start "$T/flat"
else
    t_skip "rtl pull over https" "openssl is not installed (make deps installs it)"
fi

# ---- catalog publish refusals ------------------------------------------------------------
expect_fail "publish --refresh needs an index" "has no index.json to refresh" "$CAT" publish --refresh -o nopub --key k.key
expect_fail "publish keeps one channel per folder" "is the index of channel 'stable', not 'beta'" \
    "$CAT" publish "$A2" -o pub --key k.key --channel beta
expect_fail "publish refuses an older version than the index offers" "already offers catalog tinynet version 2, newer than 1" \
    "$CAT" publish "$A1" -o pub --key k.key

# ---- usage ----------------------------------------------------------------------------
expect_fail "a URL of another scheme is refused" "not an http://, https:// or file:// URL" "$RTL" --root d pull ftp://x/
expect_fail "a folder that is no publish folder" "not found: is .* a publish folder" "$RTL" --root d pull "$NGX_URL/nothing"
expect_fail "a catalog the index lacks" "has no catalog 'othernet'" "$RTL" --root f pull --catalog othernet "$NGX_URL"
expect_fail "a server that is down, after its retries" "Couldn't connect|Could not connect|Connection refused" \
    "$RTL" --root d pull --retries 1 --backoff-ms 10 "http://127.0.0.1:1/"
"$RTL" pull --help >h.out 2>&1
t_check "rtl pull --help" grep -q "^Usage: rtl pull URL" h.out
"$RTL" --root d pull --limit-rate 0 "$NGX_URL" >u.out 2>&1
t_check "a bad option value is a usage error (exit 2)" test $? = 2
"$CAT" publish --help >h.out 2>&1
t_check "catalog publish --help" grep -q "^Usage: catalog publish ARCHIVE" h.out
ngx_stop

# ---- without a server, on the device build: file:// under qemu-aarch64 -------------------
A64=$O/aarch64-linux-gnu/bin/rtl
if [ -x "$A64" ] && command -v qemu-aarch64 >/dev/null; then
    q() { qemu-aarch64 "$A64" "$@"; }
    rm -rf qpub && "$CAT" publish "$A1" -o qpub --key k.key >/dev/null 2>&1
    newroot q
    expect_ok "aarch64 rtl: a full pull from file://" q --root q pull "file://$T/qpub"
    expect_ok "aarch64 rtl: it verifies" q --root q verify tinynet
    "$CAT" publish "$A2" -o qpub --key k.key >/dev/null 2>&1
    expect_ok "aarch64 rtl: the nightly rebuild" q --root q pull "file://$T/qpub"
    t_check "aarch64 rtl: only the changed variant and the manifest are read" \
        grep -q "installed 1 -> 2: fetched $((variant_bytes - $(stat -c %s c/variants/svd-fc-4x/variant.cfg) + manifest_bytes)) bytes (2 files), reused [0-9]* bytes (22 files)" "$T/out"
    newroot q2
    "$TOOL" flip "qpub/objects/$(sha256sum c/variants/base/variant.weights | cut -c1-64)" 77 >/dev/null
    expect_fail "aarch64 rtl: an altered file is refused" "SHA-256 differs" q --root q2 pull "file://$T/qpub"
    t_check "aarch64 rtl: nothing installed" test -z "$(state q2)"
    mkdir -p qold && cp qpub/index.json qpub/index.json.minisig qold/
    "$CAT" publish --refresh -o qpub --key k.key >/dev/null
    q --root q pull "file://$T/qpub" >/dev/null 2>&1
    cp qold/* qpub/
    expect_fail "aarch64 rtl: a replayed index is refused" "replaying an old index" q --root q pull "file://$T/qpub"
    "$CAT" publish --refresh -o qpub --key k.key --valid-for 1 >/dev/null
    sleep 2
    expect_fail "aarch64 rtl: an expired index is refused" "expired at" q --root q pull "file://$T/qpub"
    expect_fail "aarch64 rtl: another key's publish folder is refused" "not pinned on this device" \
        q --root q pull "file://$T/evilpub"
    t_check "the aarch64 rtl links the system's libcurl.so.4 dynamically" \
        bash -c "readelf -d '$A64' | grep -q 'NEEDED.*libcurl.so.4'"
else
    t_skip "aarch64 rtl pulls from file:// under qemu-user" "$A64 or qemu-aarch64 is missing (make deps installs them)"
fi
t_done
