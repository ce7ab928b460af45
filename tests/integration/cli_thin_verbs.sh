#!/usr/bin/env bash
# Thin verbs (issue 38 item 5): a verb parses, calls one library function and
# prints, so no function in any */cli/ folder is longer than 120 lines. The
# spans come from tests/tools/fn_spans.awk (brace depth over the source with
# comments, literals and preprocessor lines blanked; ctags misreads macro
# calls such as bench_kernels.c's SLOT(...) lines as one long function),
# checked first on a file whose every construct is known.
. "$TOP/tests/lib.sh"
MAX=120
SPANS=$TOP/tests/tools/fn_spans.awk

# ---- the measure on known constructs -------------------------------------------
cat >"$T/known.c" <<'C'
#include <stdio.h>
#define SLOT(name) \
    static void t_##name(void) { puts("{"); }
SLOT(a)
SLOT(b)
static const char *words[] = {"}", "{", NULL};
struct pair { int a, b; };
/* a comment with { braces */
static int one(void) { return 1; }
__attribute__((noinline)) static int three(int x,
                                           int y)
{
    // }
    char c = '}';
    if (x) {
        return y + c;
    }
    return 0;
}

int two(void)
{ return one(); }
C
awk -f "$SPANS" "$T/known.c" | awk '{ sub(/.*:/, "", $2); print $3, $2, $1 }' >"$T/known.out"
printf 'one 9 1\nthree 10 10\ntwo 21 2\n' >"$T/known.want"
t_check "the measure finds each function with its first line and length, and nothing else" \
    cmp -s "$T/known.out" "$T/known.want"
[ -s "$T/known.out" ] && ! cmp -s "$T/known.out" "$T/known.want" && diff "$T/known.want" "$T/known.out" >&2

# ---- every function of every cli/ folder ---------------------------------------
mapfile -t files < <(cd "$TOP" && find . -path ./build -prune -o -path ./O -prune -o -path '*/cli/*' \
    \( -name '*.c' -o -name '*.h' \) -print | LC_ALL=C sort)
(cd "$TOP" && awk -f "$SPANS" "${files[@]}") >"$T/spans"
n=$(wc -l <"$T/spans")
t_check "the cli/ folders hold functions to measure (${#files[@]} files, $n functions)" test "$n" -gt 200
long=$(awk -v max=$MAX '$1 > max { printf "%s %s (%d lines); ", $3, $2, $1 }' "$T/spans")
t_check "no function in a cli/ folder is over $MAX lines${long:+: $long}" test -z "$long"
t_done
