#!/usr/bin/env bash
# The catalog archive is one zstd frame with a content checksum: zstd -t and
# tar reject a flipped byte (not only the signature), and rebuilds from the
# same inputs stay byte-identical.
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/catalog/fixtures.sh"
cd "$T" || exit 1

fx_keyed_catalog
fx_pack c o1 --version 3 --seed 42 --key k.key >/dev/null 2>&1
fx_pack c o2 --version 3 --seed 42 --key k.key >/dev/null 2>&1
A=o1/catalog-tinynet-3.tar.zst
t_check "the archive is written" test -s "$A"
t_check "two builds are byte-identical" cmp "$A" o2/catalog-tinynet-3.tar.zst
zstd -lv "$A" >list 2>&1
t_check "zstd -lv reports an XXH64 content checksum" grep -Eq "Check: +XXH64" list
t_check "zstd -t accepts the archive" zstd -q -t "$A"
t_check "tar reads it" tar --zstd -tf "$A" manifest.json

size=$(stat -c %s "$A")
# flip OFFSET FILE: a copy of the archive with the byte at OFFSET inverted
flip() {
    cp "$A" "$2"
    python3 - "$2" "$1" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read())
b[off] ^= 0xFF
open(p, "wb").write(b)
PY
}
flip $((size - 2)) last.tar.zst      # inside the content checksum itself
expect_fail "zstd -t rejects a flipped byte in the checksum" "[Cc]hecksum|corrupt|[Ee]rror" zstd -t last.tar.zst
flip $((size / 2)) mid.tar.zst        # in the compressed data
expect_fail "zstd -t rejects a flipped byte in the data" "[Cc]hecksum|corrupt|[Ee]rror" zstd -t mid.tar.zst
expect_fail "tar rejects it too" "." tar --zstd -xOf last.tar.zst
expect_fail "and catalog verify still refuses it" "signature" "$CAT" verify last.tar.zst -x "$A.minisig" -p k.pub
t_done
