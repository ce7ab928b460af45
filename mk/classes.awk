# mk/classes.awk: print a Darknet cfg with its last [connected] or
# [convolutional] layer (the classifier) giving N outputs (-v n=N), so that
# a recipe's base fits the data set it trains on (DATA=... with another
# class count than the recipe's default set). Says on stderr what it
# changed; fails when the cfg has no such layer or that layer no output key.
function section(line) {
    return line ~ /^[ \t]*\[(connected|conn|convolutional|conv)\][ \t]*$/
}
{ line[NR] = $0 }
/^[ \t]*\[/ { in_last = section($0); if (in_last) { last = NR; key = 0 } }
in_last && /^[ \t]*(output|filters)[ \t]*=/ { key = NR }
END {
    if (!last || !key) {
        print FILENAME ": no [connected] or [convolutional] layer with output= or filters= to give " n \
            " outputs (one per class of the data set)" > "/dev/stderr"
        exit 1
    }
    split(line[key], kv, "=")
    name = kv[1]; gsub(/[ \t]/, "", name)
    old = kv[2]; gsub(/[ \t]/, "", old)
    for (i = 1; i <= NR; i++)
        print (i == key ? name "=" n : line[i])
    if (old != n)
        print FILENAME ":" key ": " name "=" old " -> " n " (the classes of the data set)" > "/dev/stderr"
}
