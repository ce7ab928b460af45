/* import.c: the importer table and what the importers share. */
#include "import.h"

#include <stdlib.h>
#include <string.h>

static const char *const format_names[] = {"cifar10", "cifar100", "mnist", "folder", "fashion-mnist"};
_Static_assert(sizeof format_names / sizeof format_names[0] == DS_FORMAT_COUNT,
               "format_names must name every ds_format");

const char *ds_format_name(int f)
{
    return f >= 0 && f < DS_FORMAT_COUNT ? format_names[f] : NULL;
}

int ds_format_parse(const char *name, trn_err *err)
{
    for (int f = 0; f < DS_FORMAT_COUNT; f++)
        if (!strcmp(name, format_names[f])) return f;
    return trn_errf(err, "unknown format '%s': use cifar10, cifar100, mnist, fashion-mnist or folder", name);
}

void ds_import_defaults(ds_import_opts *o)
{
    memset(o, 0, sizeof *o);
    o->root = "build/data";
    o->seed = 1;
    o->valid_frac = 0.1;
    o->test_frac = 0.1;
    o->threads = 1;
}

int ds_import(ds_format f, const char *src, const ds_import_opts *o, ds_write_result *res, trn_err *err)
{
    if (!(o->valid_frac >= 0 && o->valid_frac < 1) || !(o->test_frac >= 0 && o->test_frac < 1) ||
        o->valid_frac + o->test_frac >= 1)
        return trn_errf(err, "valid fraction %g and test fraction %g must be in [0, 1) with a sum "
                        "below 1", o->valid_frac, o->test_frac);
    if (o->size < 0 || o->size > 4096) return trn_errf(err, "image size %d is out of range 0..4096", o->size);
    if (o->threads < 1) return trn_errf(err, "threads must be >= 1");
    switch (f) {
    case DS_FORMAT_CIFAR10: return ds_imp_cifar(src, 0, o, res, err);
    case DS_FORMAT_CIFAR100: return ds_imp_cifar(src, 1, o, res, err);
    case DS_FORMAT_MNIST: return ds_imp_mnist(src, 0, o, res, err);
    case DS_FORMAT_FASHION_MNIST: return ds_imp_mnist(src, 1, o, res, err);
    case DS_FORMAT_FOLDER: return ds_imp_folder(src, o, res, err);
    default: return trn_errf(err, "unknown import format %d", (int)f);
    }
}

int ds_imp_carve(uint8_t *split, size_t count, int from, int to, double frac, uint64_t seed,
                 uint64_t stream, trn_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++) n += split[i] == from;
    size_t k = (size_t)(frac * (double)n + 0.5);
    if (!k || !n) return 0;
    size_t *idx = malloc(n * sizeof *idx);
    if (!idx) return trn_errf(err, "out of memory choosing %zu of %zu images", k, n);
    n = 0;
    for (size_t i = 0; i < count; i++)
        if (split[i] == from) idx[n++] = i;
    trn_rng master, g;
    trn_rng_seed(&master, seed);
    g = trn_rng_fork(&master, stream);
    for (size_t i = 0; i < k; i++) { /* partial Fisher-Yates: the first k */
        size_t j = i + (size_t)trn_rng_below(&g, n - i), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        split[idx[i]] = (uint8_t)to;
    }
    free(idx);
    return 0;
}

int ds_imp_read_names(const char *path, const char *task, int classes, ds_task *t, trn_err *err)
{
    char *text;
    size_t len;
    if (trn_read_file(path, 1u << 20, &text, &len, err) != 0) return -1;
    if (ds_task_init(t, task, classes, err) != 0) {
        free(text);
        return -1;
    }
    int k = 0, line = 0, rc = 0;
    for (char *p = text; *p && rc == 0;) {
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        line++;
        while (*p == ' ' || *p == '\t') p++;
        size_t n = strlen(p);
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r')) p[--n] = '\0';
        if (n) {
            char label[DS_LABEL_MAX + 1];
            if (k >= classes) rc = trn_errf(err, "%s:%d: more than the %d class names expected", path, line, classes);
            else if (ds_label_from_name(p, label, err) != 0 || ds_task_set(t, k++, label, err) != 0)
                rc = trn_err_prefix(err, "%s:%d", path, line);
        }
        if (!e) break;
        p = e + 1;
    }
    free(text);
    if (rc == 0 && k != classes) rc = trn_errf(err, "%s: %d class names, expected %d", path, k, classes);
    if (rc == 0 && ds_task_check(t, err) != 0) rc = trn_err_prefix(err, "%s (after making names label-safe)", path);
    if (rc != 0) ds_task_free(t);
    return rc;
}

int ds_imp_name(const ds_import_opts *o, const char *fallback, char out[DS_LABEL_MAX + 1], trn_err *err)
{
    if (o->name) {
        if (ds_label_check(o->name, err) != 0) return trn_err_prefix(err, "set name");
        snprintf(out, DS_LABEL_MAX + 1, "%s", o->name);
        return 0;
    }
    if (ds_label_from_name(fallback, out, err) != 0) return trn_err_prefix(err, "set name");
    return 0;
}
