#!/usr/bin/env bash
# Fashion-MNIST through `make dataset IMPORT=fashion-mnist` (issue 34 item
# 1): gzip-compressed idx files read directly, the real class names, the
# attribute tasks category and footwear, test = the t10k images; a truncated
# or corrupted .gz is refused with the file and the byte offset and leaves
# no set behind; DATA=fashion-mnist names the same set. Last, Debian's
# dataset-fashion-mnist itself when installed (6000 images per class in
# train + valid, 1000 in test).
. "$TOP/tests/lib.sh"
. "$TOP/tests/integration/pipeline/idx.sh"

mk() {
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TOP" --no-print-directory O="$T/o" THREADS=2 \
        DATASET_CONTEXT_N=3 DATASET_CONTEXT_P=0.8 "$@"
}

idx_fixture "$T/src" 40 20
expect_ok "make dataset IMPORT=fashion-mnist SRC=<gzip idx files>" mk dataset IMPORT=fashion-mnist SRC="$T/src" \
    DATASET_ROOT="$T/data"
S=$T/data/fashion-mnist
t_check "the set is fashion-mnist.data with its tasks identity, category, footwear" \
    diff <(grep -v '^#' "$S/fashion-mnist.tasks") <(printf '%s\n' 'identity fashion-mnist.data' \
    'category fashion-mnist-category.data' 'footwear fashion-mnist-footwear.data')
t_check "the identity labels are Fashion-MNIST's classes" diff "$S/fashion-mnist.names" <(printf '%s\n' \
    t-shirt-top trouser pullover dress coat sandal shirt sneaker bag ankle-boot)
t_check "category: top, bottom, dress, outerwear, footwear, bag; footwear: yes, no" sh -c \
    "printf 'top\nbottom\ndress\nouterwear\nfootwear\nbag\n' | diff - '$S/fashion-mnist-category.names' && \
     printf 'yes\nno\n' | diff - '$S/fashion-mnist-footwear.names'"
# Test image j of the t10k file has label (j + 3) mod 10 (idx_fixture); its file name
# carries identity, category and footwear.
t_check "test = the t10k images, each named with its three labels" python3 - "$S" <<'EOF'
import sys
s = sys.argv[1]
names = open(f'{s}/fashion-mnist.names').read().split()
cat = {'t-shirt-top': 'top', 'trouser': 'bottom', 'pullover': 'top', 'dress': 'dress', 'coat': 'outerwear',
       'sandal': 'footwear', 'shirt': 'top', 'sneaker': 'footwear', 'bag': 'bag', 'ankle-boot': 'footwear'}
test = open(f'{s}/test.list').read().split()
assert len(test) == 20, len(test)
for p in test:
    num, ident, c, foot = p.split('/')[-1][:-4].split('_')
    j = int(num) - 40
    assert ident == names[(j + 3) % 10], p
    assert c == cat[ident] and foot == ('yes' if c == 'footwear' else 'no'), p
train, valid = open(f'{s}/train.list').read().split(), open(f'{s}/valid.list').read().split()
assert len(train) == 36 and len(valid) == 4, (len(train), len(valid))
EOF
expect_ok "every task passes dataset check --decode (1-channel PNGs)" bash -c \
    "for d in '$S'/*.data '$S'/contexts/*/*.data; do '$BIN/dataset' check --decode \"\$d\" || exit 1; done"
t_check "contexts of n = 3 classes were written" test -s "$S/contexts/n3-p0.8/n3-p0.8.data"
expect_ok "make dataset DATA=fashion-mnist names the same set" mk dataset DATA=fashion-mnist SRC="$T/src" \
    DATASET_ROOT="$T/data"
t_check "... and says so" grep -q "dataset: $S/fashion-mnist.data is ready (import)" "$T/out"

# Damage: the file and the byte offset, and no set written.
idx_fixture "$T/trunc" 40 20
f=$T/trunc/train-images-idx3-ubyte.gz
size=$(stat -c %s "$f")
truncate -s $((size / 2)) "$f"
expect_fail "a truncated .gz is refused with the file and the offset where it ends" \
    "$f: file ends at byte offset $((size / 2)) inside the gzip stream.*truncated" \
    mk dataset IMPORT=fashion-mnist SRC="$T/trunc" DATASET_ROOT="$T/d2"
t_check "... and no set is written" test ! -e "$T/d2/fashion-mnist"
idx_fixture "$T/bad" 40 20
f=$T/bad/t10k-images-idx3-ubyte.gz
size=$(stat -c %s "$f")
printf '\377\377\377\377\377\377\377\377' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
expect_fail "a corrupted .gz is refused with the file and a byte offset" "$f: byte offset [0-9]+: gzip data is corrupt" \
    mk dataset IMPORT=fashion-mnist SRC="$T/bad" DATASET_ROOT="$T/d3"
off=$(sed -n "s|.*$f: byte offset \([0-9]*\):.*|\1|p" "$T/out" | head -n 1)
t_check "... at or after the damage ($off >= $((size / 2)))" [ "${off:-0}" -ge $((size / 2)) ]
t_check "... and no set is written" test ! -e "$T/d3/fashion-mnist"

# Debian's dataset-fashion-mnist (make deps installs it): the default SRC.
DEB=/usr/share/datasets/fashion-mnist
if [ -e "$DEB/train-images-idx3-ubyte.gz" ]; then
    expect_ok "make dataset IMPORT=fashion-mnist (Debian's files, no SRC)" \
        mk dataset IMPORT=fashion-mnist DATASET_ROOT="$T/deb" DATASET_ARGS=--no-contexts
    t_check "60,000 training images, 6000 per class in train + valid; 10,000 test, 1000 per class" python3 - \
        "$T/deb/fashion-mnist" <<'EOF'
import collections, sys
s = sys.argv[1]
def per(split):
    return collections.Counter(p.split('/')[-1].split('_')[1] for p in open(f'{s}/{split}.list').read().split())
train, valid, test = per('train'), per('valid'), per('test')
names = open(f'{s}/fashion-mnist.names').read().split()
assert sum(valid.values()) == 6000 and sum(train.values()) == 54000, (sum(train.values()), sum(valid.values()))
for n in names:
    assert train[n] + valid[n] == 6000 and test[n] == 1000, (n, train[n], valid[n], test[n])
EOF
else
    t_skip "Debian's Fashion-MNIST" "$DEB is not there (make deps installs dataset-fashion-mnist)"
fi
t_done
