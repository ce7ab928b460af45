#!/bin/sh
# mk/train_len.sh DATA CFG SETTING...: the training settings of a pipeline
# job with a length given by what it means rather than in weight updates:
#   epochs=E   E passes over DATA's training images
#   images=N   N training images seen (a compute budget)
# become max_batches=ceil(min(E x train images, N) / batch) (either alone
# gives its own; at least 1), batch being a batch= among the settings or
# CFG's [net] batch. Other settings pass through unchanged, in order, and
# max_batches= is refused beside them (two lengths for one run). Prints
# them as trainer options on one line (--set K=V ...); on an error says
# why on stderr and exits 1. (mk/train.mk calls it only for settings that
# hold epochs= or images=.)
set -u
data=$1 cfg=$2
shift 2
# The training list of DATA (relative to DATA's folder) and its images.
list=$(sed -n 's/^[[:space:]]*train[[:space:]]*=[[:space:]]*//p' "$data" | head -n 1 | sed 's/[[:space:]]*$//')
[ -n "$list" ] || { echo "mk/train_len.sh: $data: no train= line, so epochs= cannot be counted" >&2; exit 1; }
case $list in /*) ;; *) list=$(dirname "$data")/$list ;; esac
n=$(grep -c . "$list") || { echo "mk/train_len.sh: $list (train= of $data): no image listed" >&2; exit 1; }
printf '%s\n' "$@" | awk -v n="$n" -v cfg="$cfg" '
    BEGIN {
        while ((getline l < cfg) > 0) {
            if (l ~ /^[ \t]*\[/) net = l ~ /^[ \t]*\[(net|network)\]/
            else if (net && l ~ /^[ \t]*batch[ \t]*=/) { sub(/^[^=]*=[ \t]*/, "", l); batch = l + 0 }
        }
    }
    /^epochs=/ { e = substr($0, 8); has_e = 1; next }
    /^images=/ { im = substr($0, 8); has_i = 1; next }
    /^max_batches=/ { mb = 1 }
    /^batch=/ { batch = substr($0, 7) + 0 }
    { out = out "--set " $0 " " }
    END {
        if (mb) { print "mk/train_len.sh: max_batches= beside epochs= or images=: give one length" > "/dev/stderr"; exit 1 }
        if ((has_e && !(e + 0 > 0)) || (has_i && !(im + 0 > 0)) || !(batch > 0)) {
            print "mk/train_len.sh: epochs=" e " images=" im " batch=" batch ": each must be a positive number" > "/dev/stderr"
            exit 1
        }
        seen = has_e ? e * n : im
        if (has_i && im + 0 < seen) seen = im
        b = int(seen / batch); if (b * batch < seen) b++; if (b < 1) b = 1
        print out "--set max_batches=" b
    }'
