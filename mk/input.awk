# mk/input.awk: print a Darknet cfg with its [net] input fitted to the data
# set's images (-v w=WIDTH -v h=HEIGHT -v c=CHANNELS, from `dataset shape`):
# width, height and channels set to them, and a crop pinned to the image
# (min_crop and max_crop equal to the cfg's width) pinned to the new width,
# so that a recipe's base takes 28x28 grey images as its input instead of
# having them scaled up to its default size. Says on stderr what it
# changed (naming -v cfg=FILE, else the input file); fails when [net]
# lacks width, height or channels.
function key(line) { k = line; sub(/=.*/, "", k); gsub(/[ \t]/, "", k); return k }
function val(line) { v = line; sub(/^[^=]*=/, "", v); gsub(/[ \t]/, "", v); return v }
{ line[NR] = $0 }
/^[ \t]*\[/ { in_net = $0 ~ /^[ \t]*\[(net|network)\][ \t]*$/; next }
in_net && /=/ { at[key($0)] = NR; old[key($0)] = val($0) }
END {
    name = cfg != "" ? cfg : FILENAME
    if (!("width" in at) || !("height" in at) || !("channels" in at)) {
        print name ": [net] needs width=, height= and channels= to fit the input to the data set's " \
            w "x" h "x" c " images" > "/dev/stderr"
        exit 1
    }
    want["width"] = w; want["height"] = h; want["channels"] = c
    for (k in at)
        if ((k == "min_crop" || k == "max_crop") && old[k] == old["width"]) want[k] = w
    for (k in want) { set[at[k]] = k; }
    for (i = 1; i <= NR; i++) {
        if (!(i in set)) { print line[i]; continue }
        k = set[i]
        print k "=" want[k]
        if (old[k] != want[k])
            print name ":" i ": " k "=" old[k] " -> " want[k] " (the data set's images are " \
                w "x" h "x" c ")" > "/dev/stderr"
    }
}
