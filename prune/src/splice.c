/*
 * splice.c: replacing a range of layer sections of a cfg while keeping
 * every layer reference valid.
 *
 * Darknet names earlier layers in two keys: [route] layers=a,b,... and
 * [shortcut] from=a. A negative value is relative to the referring layer
 * (-1: the layer before), a non-negative one is an absolute layer index
 * (cfg section index - 1). When layers are removed or inserted, both forms
 * are rewritten so that they name the same layers as before; the form
 * (relative or absolute) is kept.
 */
#include "prn_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REFS 32

/* The key holding layer references in a section of `type`, or NULL. */
static const char *ref_key(const char *type)
{
    if (strcmp(type, "route") == 0) return "layers";
    if (strcmp(type, "shortcut") == 0) return "from";
    return NULL;
}

/* Parses the comma-separated integers of section s's reference key into
 * v; returns the count (0 when the section has none), -1 on bad text. */
static int read_refs(const trn_cfg *cfg, int s, int *v, trn_err *err)
{
    const char *key = ref_key(trn_cfg_section_type(cfg, s));
    const char *text = key ? trn_cfg_get(cfg, s, key) : NULL;
    if (!text) return 0;
    int n = 0;
    const char *p = text;
    for (;;) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < -1000000 || x > 1000000 || (*end && *end != ',') ||
            n == MAX_REFS) {
            char where[600];
            return trn_errf(err, "%s: %s=%.60s is not a list of at most %d layer indexes",
                            trn_cfg_where(cfg, s, key, where, sizeof where), key, text,
                            MAX_REFS);
        }
        v[n++] = (int)x;
        if (!*end) break;
        p = end + 1;
    }
    return n;
}

static int write_refs(trn_cfg *cfg, int s, const int *v, int n, trn_err *err)
{
    char buf[MAX_REFS * 12 + 1];
    size_t off = 0;
    for (int k = 0; k < n; k++)
        off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%d", k ? "," : "", v[k]);
    return trn_cfg_set(cfg, s, ref_key(trn_cfg_section_type(cfg, s)), buf, err);
}

/* A section copied from another cfg (type, keys; comments are not kept). */
static int copy_section(trn_cfg *dst, int at, const trn_cfg *src, int s, trn_err *err)
{
    if (trn_cfg_insert_section(dst, at, trn_cfg_section_type(src, s), err) < 0) return -1;
    for (int k = 0; k < trn_cfg_keys(src, s); k++)
        if (trn_cfg_set(dst, at, trn_cfg_key(src, s, k), trn_cfg_value(src, s, k), err) != 0)
            return -1;
    return 0;
}

typedef struct ref_fix {
    int section; /* old section index */
    int n;
    int v[MAX_REFS];
} ref_fix;

int prn_cfg_splice(trn_cfg *cfg, int first, int last, const trn_cfg *with, int with_first,
                   int n_new, int keep_last_ref, int *map, trn_err *err)
{
    int n_old = trn_cfg_sections(cfg) - 1;
    if (first < 0 || last < first - 1 || last >= n_old || n_new < 0 ||
        (n_new > 0 && (!with || with_first < 1 || with_first + n_new > trn_cfg_sections(with))))
        return trn_errf(err, "internal: bad splice of layers %d..%d (%d layers) by %d", first,
                        last, n_old, n_new);
    int delta = n_new - (last - first + 1);
    int *newidx = malloc((size_t)(n_old > 0 ? n_old : 1) * sizeof *newidx);
    ref_fix *fix = calloc((size_t)(n_old > 0 ? n_old : 1), sizeof *fix);
    int nfix = 0, rc = -1;
    char where[600];
    if (!newidx || !fix) {
        trn_errf(err, "out of memory");
        goto out;
    }
    for (int j = 0; j < n_old; j++) {
        if (j < first)
            newidx[j] = j;
        else if (j > last)
            newidx[j] = j + delta;
        else
            newidx[j] = (keep_last_ref && n_new > 0 && j == last) ? first + n_new - 1 : -1;
    }
    for (int i = 0; i < n_old; i++) {
        int v[MAX_REFS];
        int n = read_refs(cfg, i + 1, v, err);
        if (n < 0) goto out;
        if (n == 0) continue;
        const char *key = ref_key(trn_cfg_section_type(cfg, i + 1));
        int inside = i >= first && i <= last, changed = 0;
        for (int k = 0; k < n; k++) {
            int t = v[k] < 0 ? i + v[k] : v[k];
            if (t < 0 || t >= i) {
                trn_errf(err, "%s: %s=%d names layer %d, which is not before this layer (%d)",
                         trn_cfg_where(cfg, i + 1, key, where, sizeof where), key, v[k], t, i);
                goto out;
            }
            if (inside) {
                if (t < first) {
                    trn_errf(err, "%s: layer %d reads layer %d, outside the layers %d..%d being "
                             "replaced: the replaced layers may read only the output of the "
                             "layer before them",
                             trn_cfg_where(cfg, i + 1, key, where, sizeof where), i, t, first,
                             last);
                    goto out;
                }
                continue;
            }
            if (newidx[t] < 0) {
                trn_errf(err, "%s: layer %d reads layer %d, which is %s; choose another layer "
                         "or remove/replace the referring layer too",
                         trn_cfg_where(cfg, i + 1, key, where, sizeof where), i, t,
                         n_new ? "inside the replaced layers (only their last output is kept)"
                               : "removed");
                goto out;
            }
            int nv = v[k] < 0 ? newidx[t] - newidx[i] : newidx[t];
            if (nv != v[k]) changed = 1;
            v[k] = nv;
        }
        if (!inside && changed) {
            fix[nfix].section = i + 1;
            fix[nfix].n = n;
            memcpy(fix[nfix].v, v, sizeof v);
            nfix++;
        }
    }
    /* Absolute references inside the new sections count from `with`. */
    for (int k = 0; k < n_new; k++) {
        int v[MAX_REFS];
        int n = read_refs(with, with_first + k, v, err);
        if (n < 0) goto out;
        for (int r = 0; r < n; r++) {
            if (v[r] < 0) {
                if (k + v[r] < -1) {
                    const char *key = ref_key(trn_cfg_section_type(with, with_first + k));
                    trn_errf(err, "%s: %s=%d reads before the inserted layers",
                             trn_cfg_where(with, with_first + k, key, where, sizeof where), key,
                             v[r]);
                    goto out;
                }
            } else if (v[r] + 1 < with_first) {
                const char *key = ref_key(trn_cfg_section_type(with, with_first + k));
                trn_errf(err, "%s: %s=%d reads before the inserted layers",
                         trn_cfg_where(with, with_first + k, key, where, sizeof where), key, v[r]);
                goto out;
            }
        }
    }
    for (int s = last + 1; s >= first + 1; s--)
        if (trn_cfg_remove_section(cfg, s, err) != 0) goto out;
    for (int k = 0; k < n_new; k++) {
        int at = first + 1 + k, src = with_first + k;
        if (copy_section(cfg, at, with, src, err) != 0) goto out;
        int v[MAX_REFS];
        int n = read_refs(with, src, v, err);
        if (n < 0) goto out;
        int changed = 0;
        for (int r = 0; r < n; r++)
            if (v[r] >= 0) {
                v[r] = first + (v[r] + 1 - with_first);
                changed = 1;
            }
        if (changed && write_refs(cfg, at, v, n, err) != 0) goto out;
    }
    for (int f = 0; f < nfix; f++) {
        int s = newidx[fix[f].section - 1] + 1;
        if (write_refs(cfg, s, fix[f].v, fix[f].n, err) != 0) goto out;
    }
    if (map) memcpy(map, newidx, (size_t)n_old * sizeof *map);
    rc = 0;
out:
    free(newidx);
    free(fix);
    return rc;
}
