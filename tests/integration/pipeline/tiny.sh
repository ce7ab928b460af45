# tests/integration/pipeline/tiny.sh: the tiny recipe's base network, shared
# by the pipeline tests (pipeline_make.sh, pipeline_threads.sh,
# slurm_cluster.sh). Sourced after tests/lib.sh, never run.
. "$TOP/tests/integration/prune/layers.sh"

# tiny_base_cfg FILE MAX_BATCHES [NET_LINE...]: a 16x16x3 network of two
# conv+BN+maxpool blocks and two connected layers (10 outputs, fitted to the
# data set's classes when the base is derived); NET_LINEs go into [net].
tiny_base_cfg() {
    local f=$1 mb=$2
    shift 2
    {
        printf '[net]\nbatch=16\nwidth=16\nheight=16\nchannels=3\nlearning_rate=0.1\nmomentum=0.9\n'
        printf 'decay=0.0005\npolicy=constant\nmax_batches=%s\nmin_crop=16\nmax_crop=16\n' "$mb"
        [ $# -gt 0 ] && printf '%s\n' "$@"
        bn_blocks 8 16
        printf '\n[connected]\noutput=32\nactivation=relu\n\n[connected]\noutput=10\nactivation=linear\n\n[softmax]\n'
    } >"$f"
}
