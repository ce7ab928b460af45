#!/usr/bin/env bash
# make bench: rtl pull from a local nginx (Debian's, on loopback, its own
# configuration in a scratch folder, stopped by a trap), against `curl -o`
# of the same archive from the same server in the same run (median of 3
# each, wall time):
#   - the whole archive: rtl pull --whole-archive --fetch-only (download,
#     BLAKE2b-512 of the archive and both Ed25519 checks), target >= 0.5x curl;
#   - per file: rtl pull --fetch-only (signature, manifest, every file's
#     SHA-256), against curl of the archive (the same bytes, give or take
#     the tar headers and zstd framing of incompressible weights);
#   - whole pulls with the install (extraction, SHA-256 of every file, fsync
#     of every file and folder, atomic switch): shown beside curl -o followed
#     by rtl install of the same archive;
#   - the nightly rebuild in which one variant changed: the bytes nginx sent,
#     against that variant's bytes plus the manifest and signature.
# Exit status 1 when the whole-archive ratio is below 0.5.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
T=$O/bench/rtl-pull
rm -rf "$T" && mkdir -p "$T" && cd "$T" || exit 1
. "$TOP/tests/integration/catalog/fixtures.sh"
. "$TOP/tests/integration/rtl/nginx.sh"
trap 'ngx_stop' EXIT
if ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
    echo "bench rtl-pull: skipped: nginx is not installed (make deps installs nginx-light)"
    exit 0
fi
fx_catalog cat 200 >/dev/null
"$CAT" keygen -p k.pub -s k.key -W >/dev/null
fx_pack cat cat --version 1 --key k.key >/dev/null 2>&1 || { echo "bench rtl-pull: cannot pack the fixture"; exit 1; }
A=cat/catalog-tinynet-1.tar.zst
"$CAT" publish "$A" -o pub --key k.key >/dev/null 2>&1 || { echo "bench rtl-pull: catalog publish failed"; exit 1; }
ngx_start "$T/pub" || { echo "bench rtl-pull: nginx does not start: $(tail -3 "$T/nginx/error.log")"; exit 1; }
bytes=$(stat -c %s "$A")

run() { # CMD...: wall seconds of one run
    local TIMEFORMAT='%R' out
    out=$({ time "$@" >/dev/null 2>&1; } 2>&1) || return 1
    echo "$out"
}
median() { LC_ALL=C sort -n | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
fresh() { rm -rf "$1" && mkdir -p "$1/keys" && cp k.pub "$1/keys/"; }
: >curl.t; : >whole.t; : >files.t; : >wholeinst.t; : >filesinst.t; : >curlinst.t
for i in 1 2 3 4 5; do
    rm -f got.tar.zst && sync
    run curl -sf -o got.tar.zst "$NGX_URL/tinynet/catalog-tinynet-1.tar.zst" >>curl.t || { echo "bench rtl-pull: curl failed"; exit 1; }
    cmp -s got.tar.zst "$A" || { echo "bench rtl-pull: curl fetched other bytes"; exit 1; }
    fresh r && sync
    run "$BIN/rtl" -q --root r pull "$NGX_URL" --whole-archive --fetch-only >>whole.t || { echo "bench rtl-pull: rtl pull --whole-archive --fetch-only failed"; exit 1; }
    fresh r && sync
    run "$BIN/rtl" -q --root r pull "$NGX_URL" --fetch-only >>files.t || { echo "bench rtl-pull: rtl pull --fetch-only failed"; exit 1; }
    fresh r && sync
    run "$BIN/rtl" -q --root r pull "$NGX_URL" --whole-archive >>wholeinst.t || { echo "bench rtl-pull: rtl pull --whole-archive failed"; exit 1; }
    fresh r && sync
    run "$BIN/rtl" -q --root r pull "$NGX_URL" >>filesinst.t || { echo "bench rtl-pull: rtl pull failed"; exit 1; }
    fresh r && rm -f got.tar.zst && sync
    run bash -c "curl -sf -o got.tar.zst '$NGX_URL/tinynet/catalog-tinynet-1.tar.zst' && '$BIN/rtl' -q --root r install got.tar.zst '$A.minisig'" >>curlinst.t ||
        { echo "bench rtl-pull: curl + rtl install failed"; exit 1; }
done

# the nightly rebuild: one variant changed
fresh n
"$BIN/rtl" -q --root n pull "$NGX_URL" >/dev/null 2>&1
w=cat/variants/svd-fc-4x/variant.weights
"$TOOL" bytes 777 "$(stat -c %s $w)" >$w.new && mv $w.new $w
fx_pack cat cat --version 2 --key k.key >/dev/null 2>&1 && "$CAT" publish cat/catalog-tinynet-2.tar.zst -o pub --key k.key >/dev/null 2>&1
ngx_log_reset
"$BIN/rtl" -q --root n pull "$NGX_URL" >nightly.out 2>&1 || { echo "bench rtl-pull: the nightly pull failed"; cat nightly.out; exit 1; }
sent=$(ngx_bytes .)
variant=$(($(stat -c %s $w) + $(stat -c %s cat/variants/svd-fc-4x/variant.cfg)))
manifest=$(tar --zstd -xOf cat/catalog-tinynet-2.tar.zst manifest.json | wc -c)
sig=$(stat -c %s cat/catalog-tinynet-2.tar.zst.minisig)
whole2=$(stat -c %s cat/catalog-tinynet-2.tar.zst)

c=$(median <curl.t) wa=$(median <whole.t) fo=$(median <files.t) wi=$(median <wholeinst.t) fi_=$(median <filesinst.t) ci=$(median <curlinst.t)
echo "bench rtl-pull: $("$BIN/rtl" version); nginx $("$NGX_BIN" -v 2>&1 | sed 's/.*nginx\///'); $(curl --version | head -n1 | cut -d' ' -f1-2)"
awk -v b="$bytes" -v c="$c" -v wa="$wa" -v fo="$fo" -v wi="$wi" -v fi="$fi_" -v ci="$ci" 'BEGIN {
    mb = b / 1e6
    printf "bench rtl-pull: %.1f MB archive from nginx on loopback, median of 5, wall time\n", mb
    printf "bench rtl-pull: curl -o                               %.3f s  %6.0f MB/s  (reference)\n", c, mb / c
    printf "bench rtl-pull: rtl pull --whole-archive --fetch-only %.3f s  %6.0f MB/s  ratio %.2f (target >= 0.5; download + BLAKE2b + signature)\n", wa, mb / wa, c / wa
    printf "bench rtl-pull: rtl pull --fetch-only (per file)      %.3f s  %6.0f MB/s  ratio %.2f (download + SHA-256 of every file)\n", fo, mb / fo, c / fo
    printf "bench rtl-pull: rtl pull --whole-archive (installs)   %.3f s  %6.0f MB/s  ratio %.2f; curl -o + rtl install %.3f s (ratio %.2f)\n", wi, mb / wi, c / wi, ci, c / ci
    printf "bench rtl-pull: rtl pull (per file, installs)         %.3f s  %6.0f MB/s  ratio %.2f\n", fi, mb / fi, c / fi
}'
awk -v s="$sent" -v v="$variant" -v m="$manifest" -v g="$sig" -v w="$whole2" 'BEGIN {
    printf "bench rtl-pull: nightly rebuild, one variant changed: nginx sent %d bytes = %.3f x (variant %d + manifest %d + signature %d); the whole archive is %d (%.1f%% of it)\n",
        s, s / (v + m + g), v, m, g, w, 100 * s / w
    printf "bench rtl-pull: nightly bytes beyond manifest and signature: %.3f x the variant (target <= 1.2)\n", (s - m - g) / v
}'
ok=$(awk -v c="$c" -v wa="$wa" 'BEGIN { print (c / wa >= 0.5) ? 1 : 0 }')
[ "$ok" = 1 ] || { echo "bench rtl-pull: FAIL: whole-archive pull below 0.5x curl"; exit 1; }
