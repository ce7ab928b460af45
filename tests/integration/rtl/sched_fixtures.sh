# tests/integration/rtl/sched_fixtures.sh: a SYNTHETIC multi-capacity catalog
# for NestDNN's comparison (rtl simulate --trace concurrency), sourced after
# tests/integration/catalog/fixtures.sh. No nested model was built on main
# when this was written, so the capacity tables below are made up, in the
# shape of NestDNN's descendants (5 capacities, accuracy concave in MACs):
#   identity (10 classes): MACs 15/30/50/75/100% of 400 M, top-1
#                          0.62/0.71/0.76/0.79/0.80
#   shape (3 classes):     MACs 15/30/50/75/100% of 120 M, top-1
#                          0.80/0.87/0.90/0.92/0.93
# weight bytes in proportion to MACs; latency and energy are the catalog
# tool's estimates for the target (scaled by each capacity's MACs). The
# knee baseline runs the same descendants as fixed models (NestDNN's
# baseline models were trained apart and were 4.98 points less accurate on
# average; ours are not), so any gain measured on this fixture comes from
# the scheduling alone.
fx_nest_caps() {  # MACS WEIGHT_BYTES TOP1...
    local macs=$1 wb=$2 i=0 f out=
    shift 2
    for f in 0.15 0.30 0.50 0.75 1.00; do
        out="$out${out:+,}$(python3 -c "import sys; m,w,f,a,i=int(sys.argv[1]),int(sys.argv[2]),float(sys.argv[3]),float(sys.argv[4]),int(sys.argv[5])
print('{\"capacity\":%d,\"channel_index\":[],\"macs\":%d,\"weight_bytes\":%d,\"top1\":%s,\"page_in_bytes\":{},\"page_out_bytes\":{}}' % (i, int(m*f), int(w*f), a))" "$macs" "$wb" "$f" "$1" "$i")"
        shift
        i=$((i + 1))
    done
    printf '{"capacities":[%s]}' "$out"
}

fx_nest_catalog() {
    local dir=$1 v=$1/variants
    mkdir -p "$v"
    printf 'airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n' >"$dir/identity.names"
    printf 'disc\nsquare\ntriangle\n' >"$dir/shape.names"
    fx_variant "$v" nest-id nested - '[]' identity 400000000 400000 "$(fx_acc identity 0.80 0.95)" \
        "$(fx_nest_caps 400000000 400000 0.62 0.71 0.76 0.79 0.80)"
    fx_variant "$v" nest-shape nested - '[]' shape 120000000 120000 "$(fx_acc shape 0.93)" \
        "$(fx_nest_caps 120000000 120000 0.80 0.87 0.90 0.92 0.93)"
    "$CAT" pack "$v" -o "$dir" --task identity="$dir/identity.names" --task shape="$dir/shape.names" \
        --version 1 --dev-key-dir "$dir/keys" >"$dir/pack.log" 2>&1 || { cat "$dir/pack.log"; return 1; }
}
