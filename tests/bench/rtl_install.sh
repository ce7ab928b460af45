#!/usr/bin/env bash
# make bench: rtl install throughput as a ratio to plain `tar -xf` of the
# same archive, measured in the same run (median of 3 runs each), by wall
# time and by CPU time (user + system: steadier on a shared machine).
#
# The archive is the test fixture catalog with weight files scaled to about
# 40 MB (incompressible bytes, like real float weights). rtl install does
# more than tar: it hashes the archive (BLAKE2b-512, to verify the signature
# before extracting), every file (SHA-256, with the CPU's SHA instructions
# where it has them), and fsyncs every file and folder before the atomic
# switch; tar does none of that. It also prints which SHA-256 engine ran.
set -u
: "${BIN:?run through make bench}" "${O:?run through make bench}" "${TOP:?run through make bench}"
W=$O/bench/rtl-install
echo "bench rtl-install: $("$BIN/rtl" version)"
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
. "$TOP/tests/integration/catalog/fixtures.sh"
fx_catalog cat 100 >/dev/null
"$CAT" keygen -p k.pub -s k.key -W >/dev/null
fx_pack cat cat --version 1 --key k.key >/dev/null 2>&1 || { echo "bench rtl-install: cannot pack the fixture"; exit 1; }
A=cat/catalog-tinynet-1.tar.zst
bytes=$(tar --zstd -tvf "$A" | awk '{ s += $3 } END { print s }')
files=$(tar --zstd -tf "$A" | wc -l)

# run CMD... : prints "wall cpu" seconds of one run (bash's time keyword)
run() {
    local TIMEFORMAT='%R %U %S' out
    out=$({ time "$@" >/dev/null 2>&1; } 2>&1) || return 1
    echo "$out" | awk '{ printf "%s %.3f\n", $1, $2 + $3 }'
}
median() { LC_ALL=C sort -n | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
: >tar.times
: >rtl.times
for i in 1 2 3; do
    rm -rf t && mkdir t && sync
    run tar -xf "$A" -C t >>tar.times || { echo "bench rtl-install: tar -xf failed"; exit 1; }
    rm -rf r && mkdir -p r/keys && cp k.pub r/keys/ && sync
    run "$BIN/rtl" -q --root r install "$A" >>rtl.times || { echo "bench rtl-install: rtl install failed"; exit 1; }
done
read -r tw tc < <(median <tar.times)
read -r rw rc < <(median <rtl.times)
awk -v b="$bytes" -v f="$files" -v tw="$tw" -v tc="$tc" -v rw="$rw" -v rc="$rc" 'BEGIN {
    printf "bench rtl-install: %.1f MB in %d files; tar -xf %.3f s wall, %.3f s CPU (%.0f MB/s); rtl install %.3f s wall, %.3f s CPU (%.0f MB/s)\n",
        b / 1e6, f, tw, tc, b / 1e6 / tw, rw, rc, b / 1e6 / rw
    printf "bench rtl-install: throughput ratio rtl/tar = %.2f (wall), %.2f (CPU); rtl also verifies the signature, hashes every file and fsyncs (wall: mostly fsync)\n",
        tw / rw, (tc > 0 ? tc : 0.001) / (rc > 0 ? rc : 0.001) }'
rm -rf "$W"
