/*
 * cfg.c: the cfg object model (sections of key=value pairs with their
 * file:line), parsing Darknet's .cfg text and writing it back.
 *
 * The .cfg format, as Darknet's read_cfg reads it:
 *   - the file is a sequence of lines; every space, tab (and, here, CR) in
 *     a line is removed first, so "hue = .1" is key "hue", value ".1";
 *   - an empty line, or one starting with '#' or ';', is a comment;
 *   - "[type]" starts a section; the first section of a network is [net];
 *   - "key=value" adds an option to the current section (the value is
 *     everything after the first '=').
 * Stricter than Darknet (which guesses or crashes): a key outside any
 * section, a line without '=' or with an empty key or value, a malformed
 * header, control characters and a duplicate key in one section are
 * errors naming file:line.
 */
#include "nn.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define CFG_MAX_BYTES (16u << 20)

typedef struct cfg_kv {
    char *key;
    char *value;
    int line;
    char *comments; /* comment lines before the key, each ending in '\n' (or NULL) */
} cfg_kv;

typedef struct cfg_sec {
    char *type;
    int line;
    char *comments;
    cfg_kv *kv;
    int n, cap;
} cfg_sec;

struct trn_cfg {
    char *name;
    cfg_sec *sec;
    int n, cap;
    char *tail; /* comments after the last key */
};

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static char *dup(const char *s) { return s ? dupn(s, strlen(s)) : NULL; }

/* Appends line (len bytes) and a newline to *acc. -1 when out of memory. */
static int append_line(char **acc, const char *line, size_t len)
{
    size_t old = *acc ? strlen(*acc) : 0;
    char *n = realloc(*acc, old + len + 2);
    if (!n) return -1;
    memcpy(n + old, line, len);
    n[old + len] = '\n';
    n[old + len + 1] = '\0';
    *acc = n;
    return 0;
}

static void sec_clear(cfg_sec *s)
{
    for (int k = 0; k < s->n; k++) {
        free(s->kv[k].key);
        free(s->kv[k].value);
        free(s->kv[k].comments);
    }
    free(s->kv);
    free(s->type);
    free(s->comments);
}

void trn_cfg_free(trn_cfg *cfg)
{
    if (!cfg) return;
    for (int i = 0; i < cfg->n; i++) sec_clear(&cfg->sec[i]);
    free(cfg->sec);
    free(cfg->name);
    free(cfg->tail);
    free(cfg);
}

trn_cfg *trn_cfg_new(const char *name, trn_err *err)
{
    trn_cfg *c = calloc(1, sizeof *c);
    if (!c || !(c->name = dup(name ? name : "(cfg)"))) {
        free(c);
        trn_errf(err, "out of memory for a cfg");
        return NULL;
    }
    return c;
}

static int valid_type_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-';
}

static int check_type(const char *t, size_t n)
{
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!valid_type_char(t[i])) return 0;
    return 1;
}

/* Keys and values: printable ASCII without blanks; keys also without '='
 * and not starting with '[', '#', ';'. */
static int check_text(const char *s, int is_key)
{
    if (!s || !*s) return 0;
    if (is_key && (s[0] == '[' || s[0] == '#' || s[0] == ';')) return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= 0x20 || *p >= 0x7f) return 0;
        if (is_key && *p == '=') return 0;
    }
    return 1;
}

static int sec_push_kv(cfg_sec *s, char *key, char *value, int line, char *comments)
{
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        cfg_kv *kv = realloc(s->kv, (size_t)cap * sizeof *kv);
        if (!kv) return -1;
        s->kv = kv;
        s->cap = cap;
    }
    s->kv[s->n++] = (cfg_kv){key, value, line, comments};
    return 0;
}

static int cfg_insert_sec(trn_cfg *c, int at, char *type, int line, char *comments)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 16;
        cfg_sec *s = realloc(c->sec, (size_t)cap * sizeof *s);
        if (!s) return -1;
        c->sec = s;
        c->cap = cap;
    }
    memmove(&c->sec[at + 1], &c->sec[at], (size_t)(c->n - at) * sizeof *c->sec);
    c->sec[at] = (cfg_sec){.type = type, .line = line, .comments = comments};
    c->n++;
    return 0;
}

static int find_key(const cfg_sec *s, const char *key)
{
    for (int k = 0; k < s->n; k++)
        if (strcmp(s->kv[k].key, key) == 0) return k;
    return -1;
}

trn_cfg *trn_cfg_parse(const char *text, size_t len, const char *name, trn_err *err)
{
    trn_cfg *c = trn_cfg_new(name, err);
    if (!c) return NULL;
    char *pending = NULL; /* comments waiting for their section or key */
    char *line = malloc(len + 1);
    if (!line) goto oom;
    size_t pos = 0;
    int lineno = 0;
    while (pos < len) {
        size_t end = pos;
        while (end < len && text[end] != '\n') end++;
        lineno++;
        /* The stripped line, and the raw one for comments. */
        size_t n = 0;
        for (size_t i = pos; i < end; i++) {
            char ch = text[i];
            if (ch == ' ' || ch == '\t' || ch == '\r') continue;
            if (ch == '\0') {
                trn_errf(err, "%s:%d: the line contains a NUL byte: this is not a cfg text file",
                         c->name, lineno);
                goto fail;
            }
            line[n++] = ch;
        }
        line[n] = '\0';
        const char *raw = text + pos;
        size_t rawlen = end - pos;
        while (rawlen && (raw[rawlen - 1] == '\r')) rawlen--;
        pos = end + 1;
        if (n == 0) continue;
        if (line[0] == '#' || line[0] == ';') {
            while (rawlen && (*raw == ' ' || *raw == '\t')) raw++, rawlen--;
            if (append_line(&pending, raw, rawlen) != 0) goto oom;
            continue;
        }
        if (line[0] == '[') {
            if (line[n - 1] != ']' || !check_type(line + 1, n - 2)) {
                trn_errf(err, "%s:%d: malformed section header '%.80s': expected [name] with "
                         "letters, digits, '_' or '-'", c->name, lineno, line);
                goto fail;
            }
            char *type = dupn(line + 1, n - 2);
            if (!type || cfg_insert_sec(c, c->n, type, lineno, pending) != 0) {
                free(type);
                goto oom;
            }
            pending = NULL;
            continue;
        }
        char *eq = strchr(line, '=');
        if (!c->n) {
            trn_errf(err, "%s:%d: '%.80s' comes before the first [section]: start the file "
                     "with [net]", c->name, lineno, line);
            goto fail;
        }
        if (!eq) {
            trn_errf(err, "%s:%d: '%.80s' is not key=value", c->name, lineno, line);
            goto fail;
        }
        *eq = '\0';
        const char *key = line, *value = eq + 1;
        if (!*key || !*value) {
            trn_errf(err, "%s:%d: %s in '%.60s=%.60s'", c->name, lineno,
                     *key ? "empty value" : "empty key", key, value);
            goto fail;
        }
        if (!check_text(key, 1) || !check_text(value, 0)) {
            trn_errf(err, "%s:%d: invalid character in '%.60s=%.60s': keys and values are "
                     "printable ASCII", c->name, lineno, key, value);
            goto fail;
        }
        cfg_sec *s = &c->sec[c->n - 1];
        int dupk = find_key(s, key);
        if (dupk >= 0) {
            trn_errf(err, "%s:%d: key '%s' is given twice in [%s] (first at line %d): keep one",
                     c->name, lineno, key, s->type, s->kv[dupk].line);
            goto fail;
        }
        char *k = dup(key), *v = dup(value);
        if (!k || !v || sec_push_kv(s, k, v, lineno, pending) != 0) {
            free(k);
            free(v);
            goto oom;
        }
        pending = NULL;
    }
    c->tail = pending;
    free(line);
    return c;
oom:
    trn_errf(err, "%s: out of memory while parsing", c->name);
fail:
    free(pending);
    free(line);
    trn_cfg_free(c);
    return NULL;
}

trn_cfg *trn_cfg_read(const char *path, trn_err *err)
{
    char *buf;
    size_t len;
    if (trn_read_file(path, CFG_MAX_BYTES, &buf, &len, err) != 0) return NULL;
    trn_cfg *c = trn_cfg_parse(buf, len, path, err);
    free(buf);
    return c;
}

trn_cfg *trn_cfg_clone(const trn_cfg *src, trn_err *err)
{
    trn_cfg *c = trn_cfg_new(src->name, err);
    if (!c) return NULL;
    if (src->tail && !(c->tail = dup(src->tail))) goto oom;
    for (int i = 0; i < src->n; i++) {
        const cfg_sec *s = &src->sec[i];
        char *type = dup(s->type), *com = s->comments ? dup(s->comments) : NULL;
        if (!type || (s->comments && !com) || cfg_insert_sec(c, c->n, type, s->line, com) != 0) {
            free(type);
            free(com);
            goto oom;
        }
        for (int k = 0; k < s->n; k++) {
            const cfg_kv *kv = &s->kv[k];
            char *key = dup(kv->key), *val = dup(kv->value);
            char *kc = kv->comments ? dup(kv->comments) : NULL;
            if (!key || !val || (kv->comments && !kc) ||
                sec_push_kv(&c->sec[c->n - 1], key, val, kv->line, kc) != 0) {
                free(key);
                free(val);
                free(kc);
                goto oom;
            }
        }
    }
    return c;
oom:
    trn_errf(err, "out of memory copying cfg %s", src->name);
    trn_cfg_free(c);
    return NULL;
}

const char *trn_cfg_name(const trn_cfg *cfg) { return cfg->name; }
int trn_cfg_sections(const trn_cfg *cfg) { return cfg->n; }

static const cfg_sec *sec_at(const trn_cfg *cfg, int s)
{
    return (s >= 0 && s < cfg->n) ? &cfg->sec[s] : NULL;
}

const char *trn_cfg_section_type(const trn_cfg *cfg, int s)
{
    const cfg_sec *x = sec_at(cfg, s);
    return x ? x->type : NULL;
}

int trn_cfg_section_line(const trn_cfg *cfg, int s)
{
    const cfg_sec *x = sec_at(cfg, s);
    return x ? x->line : 0;
}

int trn_cfg_find_section(const trn_cfg *cfg, const char *type, int from)
{
    for (int i = from < 0 ? 0 : from; i < cfg->n; i++)
        if (strcmp(cfg->sec[i].type, type) == 0) return i;
    return -1;
}

int trn_cfg_keys(const trn_cfg *cfg, int s)
{
    const cfg_sec *x = sec_at(cfg, s);
    return x ? x->n : 0;
}

static const cfg_kv *kv_at(const trn_cfg *cfg, int s, int k)
{
    const cfg_sec *x = sec_at(cfg, s);
    return (x && k >= 0 && k < x->n) ? &x->kv[k] : NULL;
}

const char *trn_cfg_key(const trn_cfg *cfg, int s, int k)
{
    const cfg_kv *kv = kv_at(cfg, s, k);
    return kv ? kv->key : NULL;
}

const char *trn_cfg_value(const trn_cfg *cfg, int s, int k)
{
    const cfg_kv *kv = kv_at(cfg, s, k);
    return kv ? kv->value : NULL;
}

int trn_cfg_key_line(const trn_cfg *cfg, int s, int k)
{
    const cfg_kv *kv = kv_at(cfg, s, k);
    return kv ? kv->line : 0;
}

const char *trn_cfg_get(const trn_cfg *cfg, int s, const char *key)
{
    const cfg_sec *x = sec_at(cfg, s);
    if (!x) return NULL;
    int k = find_key(x, key);
    return k >= 0 ? x->kv[k].value : NULL;
}

const char *trn_cfg_where(const trn_cfg *cfg, int s, const char *key, char *buf, size_t size)
{
    const cfg_sec *x = sec_at(cfg, s);
    int line = x ? x->line : 0;
    if (x && key) {
        int k = find_key(x, key);
        if (k >= 0) line = x->kv[k].line;
    }
    if (line > 0)
        snprintf(buf, size, "%s:%d", cfg->name, line);
    else
        snprintf(buf, size, "%s (set by program)", cfg->name);
    return buf;
}

/* Copies s without blanks into a new string. */
static char *strip_dup(const char *s)
{
    size_t n = strlen(s);
    char *d = malloc(n + 1), *o = d;
    if (!d) return NULL;
    for (; *s; s++)
        if (*s != ' ' && *s != '\t') *o++ = *s;
    *o = '\0';
    return d;
}

int trn_cfg_set(trn_cfg *cfg, int s, const char *key, const char *value, trn_err *err)
{
    if (s < 0 || s >= cfg->n)
        return trn_errf(err, "%s: no section %d to set '%s' in (it has %d)", cfg->name, s,
                        key ? key : "?", cfg->n);
    if (!key || !value) return trn_errf(err, "%s: set with a NULL key or value", cfg->name);
    char *k = strip_dup(key), *v = strip_dup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return trn_errf(err, "out of memory");
    }
    if (!check_text(k, 1) || !check_text(v, 0)) {
        trn_errf(err, "%s: cannot set '%.60s=%.60s' in [%s]: keys and values must be non-empty "
                 "printable text, keys without '='", cfg->name, key, value, cfg->sec[s].type);
        free(k);
        free(v);
        return -1;
    }
    cfg_sec *x = &cfg->sec[s];
    int at = find_key(x, k);
    if (at >= 0) {
        free(x->kv[at].value);
        x->kv[at].value = v;
        free(k);
        return 0;
    }
    if (sec_push_kv(x, k, v, 0, NULL) != 0) {
        free(k);
        free(v);
        return trn_errf(err, "out of memory");
    }
    return 0;
}

int trn_cfg_setf(trn_cfg *cfg, int s, const char *key, trn_err *err, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        return trn_errf(err, "%s: value for '%s' is too long", cfg->name, key);
    return trn_cfg_set(cfg, s, key, buf, err);
}

int trn_cfg_unset(trn_cfg *cfg, int s, const char *key)
{
    if (s < 0 || s >= cfg->n || !key) return 0;
    cfg_sec *x = &cfg->sec[s];
    int k = find_key(x, key);
    if (k < 0) return 0;
    free(x->kv[k].key);
    free(x->kv[k].value);
    free(x->kv[k].comments);
    memmove(&x->kv[k], &x->kv[k + 1], (size_t)(x->n - k - 1) * sizeof *x->kv);
    x->n--;
    return 1;
}

int trn_cfg_insert_section(trn_cfg *cfg, int at, const char *type, trn_err *err)
{
    if (at < 0 || at > cfg->n)
        return trn_errf(err, "%s: cannot insert a section at %d (it has %d)", cfg->name, at, cfg->n);
    if (!type || !check_type(type, strlen(type)))
        return trn_errf(err, "%s: invalid section type '%.60s'", cfg->name, type ? type : "");
    char *t = dup(type);
    if (!t || cfg_insert_sec(cfg, at, t, 0, NULL) != 0) {
        free(t);
        return trn_errf(err, "out of memory");
    }
    return at;
}

int trn_cfg_remove_section(trn_cfg *cfg, int s, trn_err *err)
{
    if (s < 0 || s >= cfg->n)
        return trn_errf(err, "%s: no section %d to remove (it has %d)", cfg->name, s, cfg->n);
    sec_clear(&cfg->sec[s]);
    memmove(&cfg->sec[s], &cfg->sec[s + 1], (size_t)(cfg->n - s - 1) * sizeof *cfg->sec);
    cfg->n--;
    return 0;
}

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n + 1);
    b->n += n;
}

char *trn_cfg_format(const trn_cfg *cfg, size_t *len)
{
    sbuf b = {0};
    sb_add(&b, "");
    for (int i = 0; i < cfg->n; i++) {
        const cfg_sec *s = &cfg->sec[i];
        if (i) sb_add(&b, "\n");
        if (s->comments) sb_add(&b, s->comments);
        sb_add(&b, "[");
        sb_add(&b, s->type);
        sb_add(&b, "]\n");
        for (int k = 0; k < s->n; k++) {
            if (s->kv[k].comments) sb_add(&b, s->kv[k].comments);
            sb_add(&b, s->kv[k].key);
            sb_add(&b, "=");
            sb_add(&b, s->kv[k].value);
            sb_add(&b, "\n");
        }
    }
    if (cfg->tail) sb_add(&b, cfg->tail);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    if (len) *len = b.n;
    return b.p;
}

int trn_cfg_write(const trn_cfg *cfg, const char *path, trn_err *err)
{
    size_t len;
    char *text = trn_cfg_format(cfg, &len);
    if (!text) return trn_errf(err, "out of memory formatting %s", cfg->name);
    int rc = trn_write_file_atomic(path, text, len, err);
    free(text);
    return rc;
}
