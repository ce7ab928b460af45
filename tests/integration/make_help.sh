#!/usr/bin/env bash
# `make help`: exits 0, lists every documented target once and every option
# once with its current value and a doc line, whatever characters the docs
# hold (an apostrophe, quotes, parentheses, a backquote, a percent sign).
. "$TOP/tests/lib.sh"
cd "$TOP" || exit 1
MK=(make --no-print-directory -s O="$T/build")

"${MK[@]}" help >"$T/help" 2>"$T/err"; rc=$?
if [ "$rc" = 0 ]; then t_ok "make help exits 0"; else t_fail "make help exits 0" "rc $rc" "$(head -5 "$T/err")"; fi
t_check "make help writes nothing to stderr" test ! -s "$T/err"

opts=$("${MK[@]}" --eval 'help-test-options: ; @echo $(OPTIONS)' help-test-options)
n=0; bad=
for o in $opts; do
    n=$((n + 1))
    c=$(grep -cE "^  $o +[^ ].* \[[^]]*\]\$" "$T/help")
    [ "$c" = 1 ] || bad="$bad $o($c)"
done
if [ "$n" -ge 20 ] && [ -z "$bad" ]; then t_ok "each of the $n options is listed once with a doc and its value"
else t_fail "each option is listed once with a doc and its value" "options: $n; wrong:$bad"; fi

targets=$(grep -hE '^[a-zA-Z_][a-zA-Z0-9_-]*:.*## ' Makefile mk/*.mk */build.mk | cut -d: -f1 | sort -u)
bad=
for t in $targets; do
    c=$(grep -cE "^  $t +[^ ]" "$T/help")
    [ "$c" = 1 ] || bad="$bad $t($c)"
done
if [ -n "$targets" ] && [ -z "$bad" ]; then t_ok "each documented target is listed once"
else t_fail "each documented target is listed once" "wrong:$bad"; fi
for t in all test install catalog help; do
    t_check "target '$t' is documented" grep -qE "^  $t +[^ ]" "$T/help"
done

doc="it's \"quoted\" (a) \`b\` 100% \\n; done"
"${MK[@]}" help OPT_DOC_V="$doc" V=0 >"$T/help2" 2>"$T/err"; rc=$?
if [ "$rc" = 0 ] && grep -qF "  V                   $doc [0]" "$T/help2"; then
    t_ok "a doc string with quotes and parentheses prints verbatim"
else t_fail "a doc string with quotes and parentheses prints verbatim" "rc $rc" "$(grep -E '^  V ' "$T/help2")" "$(head -3 "$T/err")"; fi
t_done
