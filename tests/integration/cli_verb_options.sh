#!/usr/bin/env bash
# Every option of every verb is in its usage (issue 38 item 5): for rtl,
# prune, catalog and trainer, each verb of the manual page (PROG --man, the
# kit's verb table), `PROG help VERB` and `PROG VERB --help` print the same
# usage, every option it names is in the verb's section of the manual, and
# every option the verb accepts is named there. What a verb accepts is
# found by asking it: each "--name" the program's cli/ sources spell is
# given to the verb alone, and any answer but "unknown option" means the
# verb took it (with its value missing, or its operands) and so must list
# it; a prefix of a listed option counts as that option (getopt_long takes
# abbreviations). --help, --man and --version, the kit's own, are left out.
. "$TOP/tests/lib.sh"
cd "$T" || exit 1
mkdir -p root && export RTL_ROOT=$T/root   # an empty install root: rtl parses before it finds nothing
declare -A SRC=([rtl]=runtime-lite/cli [prune]=prune/cli [catalog]=catalog/cli [trainer]=trainer/cli)
# probe PROG VERB OPTION: prints the option when the verb does not call it unknown
probe() {
    timeout -k 1 10 "$BIN/$1" "$2" "$3" </dev/null >/dev/null 2>"probe.$1.$2.$3" || true
    head -n 1 "probe.$1.$2.$3" | grep -q "unknown option" || echo "$1 $2 $3"
}
export -f probe
export BIN
for p in rtl prune catalog trainer; do
    "$BIN/$p" --man >"$p.1"
    mapfile -t verbs < <(sed -n 's/^\.SS //p' "$p.1")
    grep -ohE '"--[a-z0-9][a-z0-9-]*' "$TOP/${SRC[$p]}"/*.[ch] | tr -d '"' | sort -u |
        grep -vxE -- '--(help|man|version)' >"$p.cands"
    t_check "$p: the manual names verbs (${#verbs[@]}) and the sources options ($(wc -l <"$p.cands"))" \
        test "${#verbs[@]}" -gt 3 -a "$(wc -l <"$p.cands")" -gt 10
    same="" inman=""
    : >"$p.todo"
    for v in "${verbs[@]}"; do
        "$BIN/$p" help "$v" >"$p.$v.help" 2>&1
        "$BIN/$p" "$v" --help >"$p.$v.own" 2>&1
        cmp -s "$p.$v.help" "$p.$v.own" || same="$same $v"
        # the verb's section of the manual, '\-' as '-'
        awk -v v="$v" '/^\.SS /{on = $2 == v} on' "$p.1" | sed 's/\\-/-/g' >"$p.$v.man"
        grep -oE -- '--[a-z0-9][a-z0-9-]*' "$p.$v.help" | sort -u >"$p.$v.listed"
        while read -r o; do grep -qE -- "$o([^a-z0-9-]|$)" "$p.$v.man" || inman="$inman $v:$o"; done <"$p.$v.listed"
        # a prefix of a listed option is that option (getopt_long's abbreviations: rtl pull --allow)
        while read -r o; do
            grep -q -- "^$o" "$p.$v.listed" || echo "$p $v $o"
        done <"$p.cands" >>"$p.todo"
    done
    t_check "$p: help VERB and VERB --help print the same${same:+ (not:$same)}" test -z "$same"
    t_check "$p: every option of a verb's usage is in its manual section${inman:+ (missing:$inman)}" test -z "$inman"
    # shellcheck disable=SC2016
    xargs -P 4 -L 1 bash -c 'probe "$@"' _ <"$p.todo" | sort >"$p.unlisted"
    t_check "$p: every option a verb accepts is in its usage$( [ -s "$p.unlisted" ] && printf ' (not: %s)' "$(tr '\n' ';' <"$p.unlisted")")" \
        test ! -s "$p.unlisted"
done
t_done
