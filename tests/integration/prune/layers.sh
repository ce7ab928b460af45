# tests/integration/prune/layers.sh: the layers of the small 16x16 bases that
# the prune, rtl and pipeline tests build (prune/attr.sh, prune/rank.sh,
# prune/nest.sh, rtl/tasks.sh, rtl_tasks.sh, prune_exits.sh, prune_lasso.sh,
# trn_cli.sh, pipeline/tiny.sh). Sourced, never run.

# stem_layers: the first block of every one of them, after [net]: conv 8
# (batch norm, relu) + max pool 2/2, each section after an empty line.
stem_layers() {
    printf '\n[convolutional]\nfilters=8\nsize=3\nstride=1\npad=1\nbatch_normalize=1\nactivation=relu\n'
    printf '\n[maxpool]\nsize=2\nstride=2\n'
}

# bn_blocks FILTERS...: for each FILTERS, conv FILTERS (batch_normalize its
# first line, 3x3, stride 1, pad 1, relu, or BN_ACTIVATION when set) + max
# pool 2/2, each section after an empty line.
bn_blocks() {
    local n
    for n in "$@"; do
        printf '\n[convolutional]\nbatch_normalize=1\nfilters=%s\nsize=3\nstride=1\npad=1\nactivation=%s\n' "$n" \
            "${BN_ACTIVATION:-relu}"
        printf '\n[maxpool]\nsize=2\nstride=2\n'
    done
}

# base48_cfg FILE CONV2 FC NET_LINE...: writes FILE, a base for the generated
# set's 48 identities: [net] with the NET_LINEs, the stem, conv CONV2 (relu)
# + max pool 2/2 unless CONV2 is 0, connected FC (relu) unless FC is 0, the
# 48-way connected layer and softmax.
base48_cfg() {
    local f=$1 conv2=$2 fc=$3
    shift 3
    {
        printf '[net]\n'
        printf '%s\n' "$@"
        stem_layers
        [ "$conv2" = 0 ] ||
            printf '\n[convolutional]\nfilters=%s\nsize=3\npad=1\nactivation=relu\n\n[maxpool]\nsize=2\nstride=2\n' "$conv2"
        [ "$fc" = 0 ] || printf '\n[connected]\noutput=%s\nactivation=relu\n' "$fc"
        printf '\n[connected]\noutput=48\nactivation=linear\n\n[softmax]\n'
    } >"$f"
}
