# tests/integration/catalog/fixtures.sh: variant folders with small real files,
# as the variant stage writes them (the contract of catalog/README.md).
# Sourced by the catalog_*.sh and rtl_*.sh tests after tests/lib.sh.
#
# fx_catalog DIR [WEIGHT_SCALE] makes DIR/variants/<id>/ (variant.json,
# variant.cfg, variant.weights and extras), DIR/identity.names (10 labels) and
# DIR/shape.names (3 labels). Weight files are WEIGHT_SCALE (default 1) times
# their nominal size, filled with deterministic bytes. Accuracies are over
# 20000 test images (95% intervals about +-0.6 points, so the 2-point steps
# below are clear differences). Expected winnowing:
# rewrite-bad is dropped (dominated by svd-fc-4x); pruned-old is dominated by
# mimic-frag but kept because mimic-frag depends on it (nested's capacities
# dominate nothing: a multi-capacity variant is winnowed as one unit).

TOOL=${TOOL:-$(dirname "$BIN")/tests/tools/catalog-testtool}
[ -x "$TOOL" ] || TOOL=$O/tests/tools/catalog-testtool
CAT=$BIN/catalog
RTL=$BIN/rtl
export SOURCE_DATE_EPOCH=1700000000  # the tests' fixed build time, whatever the caller's

# fx_acc TASK TOP1 [TOP5]
fx_acc() {
    if [ -n "${3:-}" ]; then printf '{"%s":{"split":"test","images":20000,"top1":%s,"top5":%s}}' "$1" "$2" "$3"
    else printf '{"%s":{"split":"test","images":20000,"top1":%s}}' "$1" "$2"; fi
}

# fx_variant ROOT ID TECHNIQUE PARENT DEPS_JSON TASK MACS WEIGHT_BYTES ACCURACY_JSON FIELDS_JSON [EXTRA...]
fx_variant() {
    local root=$1 id=$2 tech=$3 parent=$4 deps=$5 task=$6 macs=$7 wb=$8 acc=$9 tf=${10}
    shift 10
    local d=$root/$id p=null files seed
    mkdir -p "$d"
    [ "$parent" = - ] || p="\"$parent\""
    printf '[net]\nbatch=1\nwidth=32\nheight=32\nchannels=3\n\n[convolutional]\nfilters=16\nsize=3\nstride=1\npad=1\nactivation=relu\n\n# fixture variant %s\n' "$id" >"$d/variant.cfg"
    seed=$(printf '%s' "$id" | cksum | cut -d' ' -f1)
    "$TOOL" bytes "$seed" $((wb * ${FX_SCALE:-1} + 20)) >"$d/variant.weights"
    files='{"role":"cfg","path":"variant.cfg"},{"role":"weights","path":"variant.weights"}'
    for x in "$@"; do
        mkdir -p "$(dirname "$d/$x")"
        "$TOOL" bytes "$((seed + 1))" 100 >"$d/$x"
        files="$files,{\"role\":\"extra\",\"path\":\"$x\"}"
    done
    cat >"$d/variant.json" <<EOF
{"schema":1,"id":"$id","model":"tinynet","technique":"$tech","parent":$p,"depends_on":$deps,
 "description":"fixture variant $id","task":"$task","files":[$files],
 "accuracy":$acc,
 "cost":{"macs":$macs,"params":$((wb / 4)),"weight_bytes":$wb,"peak_activation_bytes":65536,
  "layers":[{"index":0,"type":"convolutional","output":[16,32,32],"macs":$macs,"params":$((wb / 4)),"output_bytes":65536},
            {"index":1,"type":"connected","output":[10],"macs":1000,"params":1010,"output_bytes":40}]},
 "latency":{"build-host":{"source":"measured","machine":"test fixture","threads":1,"batch":1,"runs":5,"ms_median":1.5,"ms_mean":1.6}},
 "technique_fields":$tf}
EOF
}

fx_catalog() {
    local dir=$1
    FX_SCALE=${2:-1}
    local v=$dir/variants
    mkdir -p "$v"
    printf 'airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n' >"$dir/identity.names"
    printf 'disc\nsquare\ntriangle\n' >"$dir/shape.names"
    fx_variant "$v" base base - '[]' identity 700000000 60000 "$(fx_acc identity 0.80 0.96)" '{}'
    fx_variant "$v" svd-fc-4x svd base '[]' identity 500000000 30000 "$(fx_acc identity 0.78 0.95)" '{"svd":{"layer":1,"rank":64}}'
    fx_variant "$v" rewrite-a rewrite base '[]' identity 300000000 50000 "$(fx_acc identity 0.74 0.93)" '{"rewrites":[{"op":"stride2","layer":0}]}'
    fx_variant "$v" rewrite-bad rewrite base '[]' identity 600000000 40000 "$(fx_acc identity 0.70 0.90)" '{"rewrites":[{"op":"filters/2","layer":0}]}'
    fx_variant "$v" nested nested base '[]' identity 200000000 20000 "$(fx_acc identity 0.72 0.92)" \
        '{"capacities":[{"capacity":0,"channel_index":[{"layer":0,"channels":8}],"macs":100000000,"weight_bytes":10000,"top1":0.6,"page_in_bytes":{"1":10000},"page_out_bytes":{}},{"capacity":1,"channel_index":[{"layer":0,"channels":16}],"macs":200000000,"weight_bytes":20000,"top1":0.72,"page_in_bytes":{},"page_out_bytes":{"0":10000}}]}' \
        capacities/channels.idx
    fx_variant "$v" pruned-old pruned base '[]' identity 250000000 25000 "$(fx_acc identity 0.60 0.85)" '{}'
    fx_variant "$v" mimic-frag mimic base '["pruned-old"]' identity 150000000 15000 "$(fx_acc identity 0.65 0.88)" \
        '{"fragments":[{"id":"f1","layers":[0,1],"depends_on":["pruned-old"]}]}'
    fx_variant "$v" exit-2 early-exit base '[]' identity 120000000 62000 "$(fx_acc identity 0.79 0.95)" \
        '{"exits":[{"layer":0,"threshold":0.8,"lossless_threshold":0.9,"exit_rate":0.6}],"alpha_profile":[{"alpha":1,"top1":0.79,"expected_macs":120000000}]}'
    fx_variant "$v" trunk-c3 trunk base '[]' identity 90000000 10000 '{}' '{"trunk":{"layers":3}}'
    fx_variant "$v" head-shape head trunk-c3 '["trunk-c3"]' shape 1000000 2000 "$(fx_acc shape 0.90)" '{"head":{"trunk":"trunk-c3","from_layer":3}}'
    fx_variant "$v" spec-7 specialised base '["base"]' identity 700000000 60000 "$(fx_acc identity 0.85 0.97)" \
        '{"context":{"n":7,"p":0.9,"classes":[0,1,2,3,4,5,6],"other_class":7},"cascade":{"partner":"base","on":"other"}}'
    fx_variant "$v" pruned-tiny pruned base '[]' identity 50000000 5000 "$(fx_acc identity 0.55 0.80)" '{}'
}

# fx_keyed_catalog: fx_catalog c (quiet) and the unencrypted key pair
# k.pub/k.key to sign its packs with.
fx_keyed_catalog() {
    fx_catalog c >/dev/null
    "$CAT" keygen -p k.pub -s k.key -W >/dev/null
}

# fx_pack DIR OUT [ARGS...]: catalog pack of fx_catalog DIR into OUT.
fx_pack() {
    local dir=$1 out=$2
    shift 2
    "$CAT" pack "$dir/variants" -o "$out" --task identity="$dir/identity.names" --task shape="$dir/shape.names" "$@"
}
