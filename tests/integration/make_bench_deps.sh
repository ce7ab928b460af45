#!/usr/bin/env bash
# `make bench` runs whole from a fresh clone (issue 37 item 6): every
# program a benchmark runs, and every test tool, under $BIN or $O/tests
# (in the script or in a fixture script it sources), is built by `make
# bench`'s own prerequisites. Checked on a dry run (make -n bench) into an
# empty build folder: each such file is linked there. (It once ended with
# "bench nested-switch: cannot make the fixture": prune-testtool was built
# by make test only.)
. "$TOP/tests/lib.sh"
o=$T/o
if ! make -n -C "$TOP" --no-print-directory bench O="$o" > "$T/dry" 2>&1; then
    t_fail "make -n bench on an empty build folder" "$(tail -n 5 "$T/dry")"
    t_done
    exit 0
fi
t_ok "make -n bench on an empty build folder"
benches=$(sed -n "s/^\[ -n '\([^']*\)' \].*/\1/p" "$T/dry")
t_check "the dry run names the benchmarks" test -n "$benches"

# The scripts a script sources from the tree ($TOP/...), and theirs.
sources() {
    local todo=("$1") seen=" " f
    while [ "${#todo[@]}" -gt 0 ]; do
        f=${todo[0]}
        todo=("${todo[@]:1}")
        case $seen in *" $f "*) continue ;; esac
        seen="$seen$f "
        echo "$f"
        todo+=($(sed -n 's/^[[:space:]]*\.[[:space:]]\+"\$TOP\/\([^"]*\)".*/\1/p' "$TOP/$f"))
    done
}
for b in $benches; do
    need=$(sources "$b" | while read -r f; do
        grep -ohE '\$(BIN/[A-Za-z0-9_-]+|O/tests/[A-Za-z0-9_./-]+)' "$TOP/$f"
    done | sort -u)
    missing=
    for n in $need; do
        path=${n/#\$BIN/$o/bin}
        path=${path/#\$O/$o}
        grep -q -- "-o $path\( \|$\)" "$T/dry" || missing="$missing $n"
    done
    if [ -z "$missing" ]; then
        t_ok "$b: what it runs is built by make bench ($(echo $need | wc -w) files)"
    else
        t_fail "$b: what it runs is built by make bench" "not built by make bench:$missing"
    fi
done
t_done
