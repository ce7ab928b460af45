# tests/tools/fn_spans.awk (cli_thin_verbs.sh): function spans of C files.
# Prints "LINES FILE:LINE NAME" for every function definition. Comments,
# string and character literals and preprocessor lines are blanked first; a
# '{' at brace depth 0 opens a function body when the text since the
# previous ';', '}' or '{' at depth 0 (its head) holds a '(' and no '='
# before it (not an initialiser, struct or enum); a line that starts at
# column 0 with a name, outside parentheses, starts a new head (a macro call
# without ';' above a function is not part of it). The span runs from the
# head's first line to the line of the '}' closing the body.
FNR == 1 { depth = 0; head = ""; hline = 0; incomment = 0; inpp = 0; fn = 0; paren = 0 }
{
    line = $0
    # preprocessor lines and their continuations
    if (inpp || (!incomment && line ~ /^[ \t]*#/)) { inpp = line ~ /\\$/; next }
    out = ""
    i = 1; n = length(line)
    while (i <= n) {
        c = substr(line, i, 1); c2 = substr(line, i, 2)
        if (incomment) { if (c2 == "*/") { incomment = 0; i += 2 } else i++; continue }
        if (c2 == "/*") { incomment = 1; i += 2; continue }
        if (c2 == "//") break
        if (c == "\"" || c == "'") {
            q = c; i++
            while (i <= n && substr(line, i, 1) != q) i += substr(line, i, 1) == "\\" ? 2 : 1
            i++; out = out "_"; continue
        }
        out = out c; i++
    }
    if (depth == 0 && paren == 0 && out ~ /^[A-Za-z_]/) head = ""
    for (i = 1; i <= length(out); i++) {
        c = substr(out, i, 1)
        if (depth == 0 && c !~ /[ \t{};]/ && head !~ /[^ \t]/) hline = FNR
        if (c == "{") {
            if (depth == 0) {
                p = index(head, "("); e = index(head, "=")
                fn = p > 0 && (e == 0 || e > p)
                if (fn) { name = fname(head); fstart = hline }
                head = ""
            }
            depth++
        } else if (c == "}") {
            depth--
            if (depth == 0) { if (fn) print FNR - fstart + 1, FILENAME ":" fstart, name; fn = 0; head = "" }
        } else if (c == ";" && depth == 0) head = ""
        else if (depth == 0) {
            head = head c
            if (c == "(") paren++
            else if (c == ")") paren--
        }
    }
    if (depth == 0) head = head " "
}

# The function's name: the identifier before the last top-level '(' group
# of the head (after any __attribute__((...))).
function fname(h,    j, d, c, last, nm, k, w) {
    d = 0; last = 0
    for (j = 1; j <= length(h); j++) {
        c = substr(h, j, 1)
        if (c == "(") { if (d == 0) last = j; d++ }
        else if (c == ")") d--
    }
    nm = substr(h, 1, last - 1); sub(/[ \t]+$/, "", nm)
    k = split(nm, w, /[^A-Za-z0-9_]+/)
    return w[k]
}
