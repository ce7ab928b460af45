/* clikit.c: the command-line kit (see clikit.h). */
#include "clikit.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ck_finish(const char *prog, int rc)
{
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad) return rc;
    fprintf(stderr, "%s: error: cannot write the output: %s\n", prog,
            e ? strerror(e) : "write error");
    return rc ? rc : CK_FAIL;
}

int ck_usage(const char *prog, const char *verb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s%s%s: ", prog, verb ? " " : "", verb ? verb : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun '%s%s%s --help' for %s.\n", prog, verb ? " " : "", verb ? verb : "",
            verb ? "its options" : "the verbs and options");
    return CK_USAGE;
}

#define WORD(p) ((p)->verb_word ? (p)->verb_word : "verb")

int ck_usage_of(const char *prog, const ck_verb *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s %s: ", prog, v->name);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nUsage: %s %s %s\nRun '%s %s --help' for its options.\n", prog, v->name,
            v->synopsis ? v->synopsis : "[OPTIONS]", prog, v->name);
    return CK_USAGE;
}

static const ck_verb *find_verb(const ck_prog *p, const char *name)
{
    for (int i = 0; i < p->nverbs; i++)
        if (!strcmp(p->verbs[i].name, name)) return &p->verbs[i];
    return NULL;
}

/* Runs VERB --help. */
static int verb_help(const ck_prog *p, const ck_verb *v)
{
    if (v->opts) {
        ck_help(p->name, v, stdout);
        return 0;
    }
    char *args[] = {(char *)v->name, "--help", NULL};
    optind = 0; /* getopt starts afresh in each verb (glibc: 0 re-initialises) */
    return v->run(2, args);
}

static int is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h") || !strcmp(a, "help"); }

int ck_dispatch(const ck_prog *p, int argc, char **argv)
{
    if (argc < 1) {
        fprintf(stderr, "%s: no %s given\n\n", p->name, WORD(p));
        p->usage(stderr);
        return CK_USAGE;
    }
    const char *a = argv[0];
    if (is_help(a)) {
        if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
            p->usage(stdout);
            return 0;
        }
        const ck_verb *v = find_verb(p, argv[1]);
        if (!v) return ck_usage(p->name, NULL, "no %s '%s'", WORD(p), argv[1]);
        return verb_help(p, v);
    }
    if (!strcmp(a, "--version") || !strcmp(a, "version")) {
        if (argc > 1) return ck_usage(p->name, NULL, "%s takes no argument, not '%s'", a, argv[1]);
        printf("%s %s\n", p->name, p->version);
        if (p->version_extra) p->version_extra(stdout);
        return 0;
    }
    if (!strcmp(a, "--man")) return ck_man(p, stdout);
    const ck_verb *v = find_verb(p, a);
    if (!v) {
        fprintf(stderr, "%s: unknown %s '%s'\n\n", p->name, a[0] == '-' ? "option" : WORD(p), a);
        p->usage(stderr);
        return CK_USAGE;
    }
    return v->run(argc, argv);
}

int ck_main(const ck_prog *p, int argc, char **argv)
{
    return ck_finish(p->name, ck_dispatch(p, argc - 1, argv + 1));
}

/* ---- option tables --------------------------------------------------------- */

/* Does word w (up to its '=' when eq) name option o ("-o|--out")? */
static int opt_matches(const ck_opt *o, const char *w, size_t wlen)
{
    const char *n = o->name;
    while (*n) {
        const char *bar = strchr(n, '|');
        size_t len = bar ? (size_t)(bar - n) : strlen(n);
        if (len == wlen && !strncmp(n, w, len)) return 1;
        if (!bar) break;
        n = bar + 1;
    }
    return 0;
}

/* The long name of row o ("--out" of "-o|--out"). */
static const char *long_name(const ck_opt *o)
{
    const char *bar = strrchr(o->name, '|');
    return bar ? bar + 1 : o->name;
}

/* The row of v's table whose long name word w's first n characters spell in
 * full (*exact 1) or as its unique prefix (*exact 0); NULL otherwise. */
static const ck_opt *named(const ck_verb *v, const char *w, size_t n, int *exact)
{
    const ck_opt *hit = NULL;
    int hits = 0;
    for (const ck_opt *o = v->opts; o->name; o++) {
        const char *l = long_name(o);
        if (strncmp(l, w, n) != 0) continue;
        if ((*exact = strlen(l) == n)) return o;
        hit = o, hits++;
    }
    return hits == 1 ? hit : NULL;
}

int ck_abbrev(const ck_verb *v, int argc, char **argv, char **av)
{
    int n = 0, value = 0, dashdash = 0, exact = 0;
    av[n++] = argv[0];
    for (int k = 1; k < argc; k++) {
        const char *w = argv[k], *eq = strchr(w, '=');
        size_t len = eq ? (size_t)(eq - w) : strlen(w);
        const ck_opt *o = value || dashdash || strncmp(w, "--", 2) || len < 3 ? NULL : named(v, w, len, &exact);
        dashdash |= !value && !strcmp(w, "--");
        if (!o || exact || (eq && o->type == CK_FLAG)) { /* as it is: the kit says what it is */
            value = o && exact && !eq && o->type != CK_FLAG;
            av[n++] = argv[k];
            continue;
        }
        av[n++] = (char *)long_name(o); /* an abbreviation, as getopt_long took it */
        if (eq) av[n++] = (char *)eq + 1;
        value = !eq && o->type != CK_FLAG;
    }
    return n;
}

static int set_value(const char *prog, const ck_verb *v, const ck_opt *o, const char *val)
{
    char *end;
    switch (o->type) {
    case CK_FLAG:
        if (o->dst) *(int *)o->dst = 1;
        return 0;
    case CK_STR:
        if (o->dst) *(const char **)o->dst = val;
        return 0;
    case CK_LIST: {
        ck_list *l = o->dst;
        if (!l) return 0;
        if (l->n == (int)(sizeof l->v / sizeof *l->v))
            return ck_usage_of(prog, v, "too many %s options (at most %d)", o->name,
                            (int)(sizeof l->v / sizeof *l->v));
        l->v[l->n++] = val;
        return 0;
    }
    case CK_INT: {
        errno = 0;
        long long x = strtoll(val, &end, 10);
        if (end == val || *end || errno || x < o->lo || x > o->hi)
            return ck_usage_of(prog, v, "%s needs a whole number in %.0f..%.0f, not '%s'", o->name, o->lo,
                            o->hi, val);
        if (o->dst) *(long long *)o->dst = x;
        return 0;
    }
    case CK_REAL: {
        errno = 0;
        double x = strtod(val, &end);
        if (end == val || *end || errno || !isfinite(x) || x < o->lo || x > o->hi)
            return ck_usage_of(prog, v, "%s needs a number in %g..%g, not '%s'", o->name, o->lo, o->hi, val);
        if (o->dst) *(double *)o->dst = x;
        return 0;
    }
    }
    return 0;
}

int ck_parse(const char *prog, const ck_verb *v, int argc, char **argv, const char **operands,
             int max_operands, int *rc)
{
    int n = 0, dashdash = 0;
    *rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *w = argv[i];
        if (!dashdash && (!strcmp(w, "--help") || !strcmp(w, "-h"))) {
            ck_help(prog, v, stdout);
            return -1;
        }
        if (!dashdash && !strcmp(w, "--")) {
            dashdash = 1;
            continue;
        }
        if (dashdash || w[0] != '-' || !w[1]) {
            if (n >= max_operands) {
                *rc = ck_usage_of(prog, v, "unexpected argument '%s'", w);
                return -1;
            }
            operands[n++] = w;
            continue;
        }
        const char *eq = strncmp(w, "--", 2) ? NULL : strchr(w, '=');
        size_t wlen = eq ? (size_t)(eq - w) : strlen(w);
        const ck_opt *o = v->opts;
        while (o->name && !opt_matches(o, w, wlen)) o++;
        if (!o->name) {
            *rc = ck_usage_of(prog, v, "unknown option '%.*s'", (int)wlen, w);
            return -1;
        }
        const char *val = NULL;
        if (o->type == CK_FLAG) {
            if (eq) {
                *rc = ck_usage_of(prog, v, "%.*s takes no value", (int)wlen, w);
                return -1;
            }
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < argc) {
            val = argv[++i];
        } else {
            *rc = ck_usage_of(prog, v, "%s needs a value (%s)", w, o->arg ? o->arg : "VALUE");
            return -1;
        }
        if ((*rc = set_value(prog, v, o, val)) != 0) return -1;
    }
    return n;
}

void ck_help(const char *prog, const ck_verb *v, FILE *out)
{
    fprintf(out, "Usage: %s %s %s\n\n", prog, v->name, v->synopsis ? v->synopsis : "[OPTIONS]");
    if (v->about) fprintf(out, "%s\n", v->about);
    else if (v->summary) fprintf(out, "%s.\n\n", v->summary);
    int width = 0;
    for (const ck_opt *o = v->opts; o && o->name; o++) {
        int w = (int)strlen(o->name) + (o->arg ? (int)strlen(o->arg) + 1 : 0);
        if (w > width) width = w;
    }
    if (width > 24) width = 24;
    for (const ck_opt *o = v->opts; o && o->name; o++) {
        char head[128];
        snprintf(head, sizeof head, "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        int hl = (int)strlen(head);
        fprintf(out, "  %-*s", width, head);
        const char *d = o->doc ? o->doc : "";
        if (hl > width) fprintf(out, "\n  %-*s", width, "");
        for (;;) {
            const char *nl = strchr(d, '\n');
            fprintf(out, "  %.*s\n", nl ? (int)(nl - d) : (int)strlen(d), d);
            if (!nl) break;
            d = nl + 1;
            fprintf(out, "  %-*s", width, "");
        }
    }
    if (v->notes) fprintf(out, "\n%s", v->notes);
}

/* ---- manual page --------------------------------------------------------------- */

/* Writes text as roff inside .nf/.fi: backslashes and hyphens escaped, a
 * leading '.' or '\'' made literal. */
static void roff_text(FILE *out, const char *s, size_t n)
{
    int bol = 1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (bol && (c == '.' || c == '\'')) fputs("\\&", out);
        if (c == '\\') fputs("\\e", out);
        else if (c == '-') fputs("\\-", out);
        else fputc(c, out);
        bol = c == '\n';
    }
    if (!bol) fputc('\n', out);
}

/* The help of verb v in another mode: v->run on the words of line (at most
 * 15), the first of which is the verb. */
static int more_help(const ck_verb *v, const char *line)
{
    char buf[512], *args[16];
    int n = 0;
    snprintf(buf, sizeof buf, "%s", line);
    for (char *w = strtok(buf, " "); w && n < 15; w = strtok(NULL, " ")) args[n++] = w;
    args[n] = NULL;
    optind = 0;
    return v->run(n, args);
}

/* Captures what the usage (v NULL), v's help, or v's help in the mode of
 * `more` prints on stdout. Returns a malloc'ed string. */
static char *capture(const ck_prog *p, const ck_verb *v, const char *more, size_t *len)
{
    fflush(stdout);
    FILE *t = tmpfile();
    int saved = t ? dup(STDOUT_FILENO) : -1;
    if (saved < 0 || dup2(fileno(t), STDOUT_FILENO) < 0) {
        if (t) fclose(t);
        if (saved >= 0) close(saved);
        return NULL;
    }
    if (v && more) more_help(v, more);
    else if (v) verb_help(p, v);
    else p->usage(stdout);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    long n = ftell(t);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf) {
        rewind(t);
        *len = fread(buf, 1, (size_t)n, t);
        buf[*len] = '\0';
    }
    fclose(t);
    return buf;
}

/* HEAD, then text (n bytes) as a no-fill block. */
static void roff_nofill(FILE *out, const char *head, const char *text, size_t n)
{
    fprintf(out, "%s.nf\n", head);
    roff_text(out, text, n);
    fprintf(out, ".fi\n");
}

/* What capture(p, v, more) prints, as a no-fill block after HEAD. */
static int man_capture(FILE *out, const char *head, const ck_prog *p, const ck_verb *v, const char *more)
{
    size_t n = 0;
    char *text = capture(p, v, more, &n);
    if (!text) return CK_FAIL;
    roff_nofill(out, head, text, n);
    free(text);
    return 0;
}

int ck_man(const ck_prog *p, FILE *out)
{
    char up[64];
    size_t k = 0;
    for (; p->name[k] && k + 1 < sizeof up; k++) up[k] = (char)(p->name[k] >= 'a' && p->name[k] <= 'z' ? p->name[k] - 32 : p->name[k]);
    up[k] = '\0';
    fprintf(out, ".\\\" Generated by '%s --man' from the program's own tables; do not edit.\n", p->name);
    fprintf(out, ".TH %s 1 \"\" \"%s %s\" \"catalog toolchain\"\n", up, p->name, p->version);
    fprintf(out, ".SH NAME\n%s \\- ", p->name);
    roff_text(out, p->summary, strlen(p->summary));
    fprintf(out, ".SH SYNOPSIS\n.B %s\n%s\\fIVERB\\fR [\\fIOPTIONS\\fR]\n.br\n.B %s\n\\-\\-help | \\-\\-version | help \\fIVERB\\fR\n",
            p->name, p->globals ? "[\\fIGLOBAL OPTIONS\\fR] " : "", p->name);
    if (man_capture(out, ".SH DESCRIPTION\n", p, NULL, NULL)) return CK_FAIL;
    fprintf(out, ".SH %s\n", p->verb_word ? "COMMANDS" : "VERBS");
    for (int i = 0; i < p->nverbs; i++) {
        const ck_verb *v = &p->verbs[i];
        fprintf(out, ".SS %s\n", v->name);
        roff_text(out, v->summary, strlen(v->summary));
        if (man_capture(out, ".PP\n", p, v, NULL)) return CK_FAIL;
        size_t vl = strlen(v->name);
        for (const char *const *m = p->man_more; m && *m; m++) {
            if (strncmp(*m, v->name, vl) != 0 || (*m)[vl] != ' ') continue;
            if (man_capture(out, ".PP\n", p, v, *m)) return CK_FAIL;
        }
    }
    if (p->examples) roff_nofill(out, ".SH EXAMPLES\n", p->examples, strlen(p->examples));
    fprintf(out, ".SH EXIT STATUS\n0: success; 1: failure (the reason is printed on standard error, "
                 "and a failed write to standard output is a failure); 2: usage error (a one-line "
                 "reason, then where to find the usage).\n");
    fprintf(out, ".SH SEE ALSO\n");
    static const char *const all[] = {"trainer", "dataset", "prune", "catalog", "rtl"};
    int first = 1;
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        if (!strcmp(all[i], p->name)) continue;
        fprintf(out, "%s\\fB%s\\fR(1)", first ? "" : ", ", all[i]);
        first = 0;
    }
    fputc('\n', out);
    return 0;
}

void ck_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

int ck_parse_one(const char *prog, const ck_verb *v, int argc, char **argv, const char **operand,
                 const char *what, int *rc)
{
    int n = ck_parse(prog, v, argc, argv, operand, 1, rc);
    if (n < 0) return 1;
    if (n == 1) return 0;
    *rc = ck_usage(prog, v->name, "%s is missing", what);
    return 1;
}
