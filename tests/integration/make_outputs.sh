#!/usr/bin/env bash
# No make rule can keep a truncated output: every recipe line of Makefile,
# mk/*.mk and */build.mk that redirects into a file writes a temporary name
# and renames it only when the writer succeeded ('> X.tmp && mv X.tmp X'),
# and the writers exit non-zero when a write fails (tests/integration/
# cli_write_errors.sh checks our programs; printf, awk, sed, cp are checked
# here on /dev/full).
. "$TOP/tests/lib.sh"
cd "$TOP" || exit 1

out=$(python3 - Makefile mk/*.mk */build.mk <<'PY'
import re, sys
bad = []
for path in sys.argv[1:]:
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        i += 1
        if not (lines[start].startswith("\t") or "$(shell" in text):
            continue  # recipes and $(shell ...) only
        text = re.sub(r">\s*'([^']*)'", r"> \1", text)   # a quoted target: unquote
        text = re.sub(r"'[^']*'", "''", text)             # other quoted text is data
        # every '>' that writes a file: not '>>', not '2>', not '>&', not /dev/null
        for m in re.finditer(r"(?<![>0-9&])>(?![>&])\s*([^\s;|&<>]+)", text):
            dest = m.group(1)
            while dest.count(")") > dest.count("("):
                dest = dest[:-1]
            if dest.startswith("/dev/"):
                continue
            tail = text[m.start(1) + len(dest):]
            ok = dest.endswith(".tmp") and re.match(r"\s*&&\s*(mv|if cmp)", tail)
            if not ok:
                bad.append("%s:%d: > %s: %s" % (path, start + 1, dest, text.strip()[:120]))
print("\n".join(bad))
PY
)
if [ -z "$out" ]; then t_ok "every recipe redirect writes X.tmp and renames it on success"
else t_fail "every recipe redirect writes X.tmp and renames it on success" "$out"; fi

for w in "printf x" "awk BEGIN{print}" "sed -n p $TOP/Makefile" "cp $TOP/Makefile /dev/full"; do
    case $w in cp*) $w 2>/dev/null ;; *) $w >/dev/full 2>/dev/null ;; esac
    rc=$?
    t_check "'${w%% *}' fails on a full disk (exit $rc)" test "$rc" != 0
done
t_done
