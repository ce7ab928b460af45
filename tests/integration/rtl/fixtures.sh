# tests/integration/rtl/fixtures.sh: a catalog of small trained variants,
# built end to end with the real tools, for the rtl_run test and make bench.
# Sourced after tests/lib.sh (or with BIN, O and TOP set).
#
# fx_rtl_data DIR: a Darknet classifier data set of 10 classes (the labels of
#   DIR/identity.names) of 24x24 BMP images (colour bars whose orientation,
#   place and hue depend on the class, over noise), train split only, and
#   DIR/images/: a few test images of other sizes (the preprocessing scales
#   and crops them).
# fx_rtl_variant DIR ID TECHNIQUE PARENT CFG [MAX_BATCHES]: trains CFG with
#   `trainer train` for a few updates into DIR/variants/ID/ (variant.cfg,
#   variant.weights) and writes its variant.json with the costs of `trainer
#   info --json` (accuracy left empty, so winnowing keeps every variant).
# fx_rtl_catalog DIR: the data set, four variants covering every layer kind
#   of the trainer (convolutional with and without batch norm, connected,
#   maxpool, avgpool, dropout, softmax, route, shortcut, crop, cost), packed
#   as DIR/out/catalog-rtlnet-1.tar.zst signed by DIR/k.key (DIR/k.pub).
TRAINER=$BIN/trainer
CAT=$BIN/catalog
RTL=$BIN/rtl
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}

# fx_rtl_py: on stdout, the head of the Python programs that draw the
# fixture's images: labels, bmp(PATH, W, H, PX) and image(RNG, CLASS, W, H);
# fx_rtl_data's program and the rtl-stream bench's held-out sets follow it.
fx_rtl_py() {
    cat <<'EOF'
import os, random, struct, sys
labels = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
def bmp(path, w, h, px):
    row = (3 * w + 3) & ~3
    data = bytearray()
    for y in range(h - 1, -1, -1):
        for x in range(w):
            data += bytes(reversed(px[y][x]))
        data += bytes(row - 3 * w)
    hdr = struct.pack("<2sIHHI", b"BM", 54 + len(data), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(data), 2835, 2835, 0, 0)
    with open(path, "wb") as f:
        f.write(hdr + info + data)
def image(rng, k, w, h):
    px = [[tuple(rng.randrange(0, 80) for _ in range(3)) for _ in range(w)] for _ in range(h)]
    hue = [(255, 60, 60), (60, 255, 60), (60, 60, 255), (255, 255, 60), (255, 60, 255)][k % 5]
    vertical = k >= 5
    pos = rng.randrange(2, (w if vertical else h) - 2)
    for t in range(max(w, h)):
        for d in (-1, 0, 1):
            y, x = (t, pos + d) if vertical else (pos + d, t)
            if 0 <= y < h and 0 <= x < w:
                px[y][x] = tuple(min(255, c + rng.randrange(0, 40)) for c in hue)
    return px
EOF
}

fx_rtl_data() {
    local dir=$1
    { fx_rtl_py; cat <<'EOF'
root = sys.argv[1]
rng = random.Random(4321)
os.makedirs(os.path.join(root, "train"), exist_ok=True)
os.makedirs(os.path.join(root, "images"), exist_ok=True)
with open(os.path.join(root, "train.list"), "w") as lst:
    for i in range(120):
        k = rng.randrange(10)
        name = "train/%06d_%s.bmp" % (i, labels[k])
        bmp(os.path.join(root, name), 24, 24, image(rng, k, 24, 24))
        lst.write(name + "\n")
for i, (w, h) in enumerate([(24, 24), (31, 22), (17, 40), (64, 48), (24, 30)]):
    bmp(os.path.join(root, "images", "img%d.bmp" % i), w, h, image(rng, (3 * i + 1) % 10, w, h))
with open(os.path.join(root, "identity.names"), "w") as f: f.write("\n".join(labels) + "\n")
with open(os.path.join(root, "rtl.data"), "w") as f:
    f.write("classes=10\ntrain=train.list\nlabels=identity.names\nnames=identity.names\nbackup=backup\n")
EOF
    } | python3 - "$dir"
}

fx_rtl_variant() {
    local dir=$1 id=$2 tech=$3 parent=$4 cfg=$5 batches=${6:-12} v p=null
    v=$dir/variants/$id
    mkdir -p "$v"
    cp "$cfg" "$v/variant.cfg"
    "$TRAINER" train --cfg "$v/variant.cfg" --data "$dir/rtl.data" --set max_batches="$batches" \
        --backup "$dir/backup/$id" --seed 7 --threads 1 --loader-threads 1 --quiet >"$dir/train-$id.log" 2>&1 ||
        { cat "$dir/train-$id.log"; return 1; }
    cp "$dir/backup/$id/variant.weights" "$v/variant.weights"
    [ "$parent" = - ] || p="\"$parent\""
    {
        printf '{"schema":1,"id":"%s","model":"rtlnet","technique":"%s","parent":%s,"depends_on":[],\n' "$id" "$tech" "$p"
        printf ' "description":"rtl fixture %s","task":"identity",\n' "$id"
        printf ' "files":[{"role":"cfg","path":"variant.cfg"},{"role":"weights","path":"variant.weights"}],\n'
        printf ' "accuracy":{},"technique_fields":{},\n "cost":'
        "$TRAINER" info --json "$v/variant.cfg" || return 1
        printf '}\n'
    } >"$v/variant.json"
}

# fx_rtl_cfg NAME: the fixture's cfg texts (24x24x3 input, 10 classes).
fx_rtl_cfg() {
    printf '[net]\nbatch=8\nsubdivisions=1\nwidth=24\nheight=24\nchannels=3\n'
    printf 'learning_rate=0.05\nmomentum=0.9\ndecay=0.0005\nmax_batches=12\n\n'
    case $1 in
    base)   # crop, conv+BN, maxpool, shortcut, route, conv without BN, avgpool, softmax, cost
        printf '[crop]\ncrop_height=20\ncrop_width=20\n\n'
        printf '[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n'
        printf '[maxpool]\nsize=2\nstride=2\n\n'
        printf '[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=relu\n\n'
        printf '[shortcut]\nfrom=-2\nactivation=linear\n\n'
        printf '[route]\nlayers=-1,-3\n\n'
        printf '[convolutional]\nfilters=10\nsize=1\nstride=1\nactivation=linear\n\n'
        printf '[avgpool]\n\n[softmax]\n\n[cost]\n' ;;
    rewrite-s2)   # strided conv+BN, conv without BN, maxpool, connected, dropout
        printf '[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=2\npad=1\nactivation=leaky\n\n'
        printf '[convolutional]\nfilters=12\nsize=3\nstride=1\npad=1\nactivation=relu\n\n'
        printf '[maxpool]\nsize=2\nstride=2\n\n'
        printf '[connected]\noutput=32\nactivation=relu\n\n[dropout]\nprobability=0.3\n\n'
        printf '[connected]\noutput=10\nactivation=linear\n\n[softmax]\n' ;;
    svd-fc)   # the two connected layers of an SVD factorisation, connected with BN
        printf '[convolutional]\nbatch_normalize=1\nfilters=8\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n'
        printf '[maxpool]\nsize=2\nstride=2\n\n[maxpool]\nsize=2\nstride=2\n\n'
        printf '[connected]\noutput=8\nactivation=linear\n\n'
        printf '[connected]\nbatch_normalize=1\noutput=10\nactivation=linear\n\n[softmax]\n' ;;
    pruned-small)   # conv without BN, avgpool, connected
        printf '[convolutional]\nfilters=4\nsize=3\nstride=1\npad=1\nactivation=leaky\n\n'
        printf '[avgpool]\n\n[connected]\noutput=10\nactivation=linear\n\n[softmax]\n' ;;
    esac
}

FX_RTL_VARIANTS="base rewrite-s2 svd-fc pruned-small"

# fx_alexnet_cfg: Darknet's cfg/alexnet.cfg layer for layer at batch 1 with
# 10 classes (227x227x3 input), for the benches that time a full-size net.
fx_alexnet_cfg() {
    printf '[net]\nbatch=1\nsubdivisions=1\nheight=227\nwidth=227\nchannels=3\n'
    printf 'momentum=0.9\ndecay=0.0005\nlearning_rate=0.001\nmax_batches=1\n'
    printf '[convolutional]\nfilters=96\nsize=11\nstride=4\npad=0\nactivation=relu\n'
    printf '[maxpool]\nsize=3\nstride=2\npadding=0\n'
    printf '[convolutional]\nfilters=256\nsize=5\nstride=1\npad=1\nactivation=relu\n'
    printf '[maxpool]\nsize=3\nstride=2\npadding=0\n'
    printf '[convolutional]\nfilters=384\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[convolutional]\nfilters=384\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[convolutional]\nfilters=256\nsize=3\nstride=1\npad=1\nactivation=relu\n'
    printf '[maxpool]\nsize=3\nstride=2\npadding=0\n'
    printf '[connected]\noutput=4096\nactivation=relu\n[dropout]\nprobability=.5\n'
    printf '[connected]\noutput=4096\nactivation=relu\n[dropout]\nprobability=.5\n'
    printf '[connected]\noutput=10\nactivation=linear\n[softmax]\ngroups=1\n'
}


fx_rtl_catalog() {
    local dir=$1 id tech parent
    mkdir -p "$dir" && fx_rtl_data "$dir" || return 1
    for id in $FX_RTL_VARIANTS; do
        fx_rtl_cfg "$id" >"$dir/$id.cfg"
        case $id in base) tech=base parent=- ;; rewrite-s2) tech=rewrite parent=base ;;
                    svd-fc) tech=svd parent=base ;; pruned-small) tech=pruned parent=base ;; esac
        fx_rtl_variant "$dir" "$id" "$tech" "$parent" "$dir/$id.cfg" || return 1
    done
    fx_rtl_pack "$dir"
}

# fx_rtl_pack DIR: DIR/variants packed into DIR/out/catalog-rtlnet-1.tar.zst,
# signed by a new unencrypted key pair DIR/k.pub, DIR/k.key (the pack's
# output in DIR/pack.log, printed when it fails).
fx_rtl_pack() {
    local dir=$1
    "$CAT" keygen -p "$dir/k.pub" -s "$dir/k.key" -W >/dev/null &&
        "$CAT" pack "$dir/variants" -o "$dir/out" --task identity="$dir/identity.names" --version 1 \
            --key "$dir/k.key" >"$dir/pack.log" 2>&1 || { cat "$dir/pack.log"; return 1; }
}

# fx_rtl_peer_root: for the peer benches, in the current folder: c/variants
# packed (fx_rtl_pack), installed under root/ (its key in root/keys), rtl()
# running rtl with that root, and the peer key pairs srv and dev with dev.pub
# allowed (./allow).
fx_rtl_peer_root() {
    fx_rtl_pack c || return 1
    mkdir -p root/keys && cp c/k.pub root/keys/
    rtl() { "$RTL" --root root "$@"; }
    rtl install c/out/catalog-rtlnet-1.tar.zst >/dev/null 2>&1 || { echo "cannot install the catalog"; return 1; }
    rtl peer-keygen srv >/dev/null && rtl peer-keygen dev >/dev/null && cp dev.pub allow
}

# fx_rtl_installed: for the rtl tests (after tests/lib.sh), in the current
# folder: the fixture catalog built in c/ and installed under R=root (its key
# in root/keys), rtl() running rtl with that root. A failed build is a failed
# check that ends the test; the install is a check.
fx_rtl_installed() {
    if ! fx_rtl_catalog c >fixture.log 2>&1; then
        t_fail "build the fixture catalog" "$(tail -n 20 fixture.log)"
        t_done
        exit 0
    fi
    R=root
    mkdir -p $R/keys && cp c/k.pub $R/keys/
    rtl() { "$RTL" --root "$R" "$@"; }
    expect_ok "install the fixture catalog" rtl install c/out/catalog-rtlnet-1.tar.zst
}

# same_answer A.json B.json: the first results of two `rtl run --json`
# outputs name the same top classes, probabilities within 1e-5.
same_answer() {
    python3 - "$1" "$2" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["results"][0]["top"]
b = json.load(open(sys.argv[2]))["results"][0]["top"]
assert [x["index"] for x in a] == [x["index"] for x in b], (a, b)
d = max(abs(x["probability"] - y["probability"]) for x, y in zip(a, b))
assert d <= 1e-5, d
PY
}
