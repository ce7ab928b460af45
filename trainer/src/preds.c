/* preds.c: per-image predictions of a split, the file format in trn.h
 * (trn_preds): what a paired test of two models on the same images needs. */
#include "trn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREDS_MAGIC "trn-predictions 1"

/* The last two components of a path ("folder/file", or "file"). */
static const char *tail2(const char *path)
{
    const char *last = strrchr(path, '/');
    if (!last) return path;
    const char *p = last;
    while (p > path && p[-1] != '/') p--;
    return p;
}

uint64_t trn_preds_list(const trn_dataset *ds, trn_split s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        for (const unsigned char *c = (const unsigned char *)tail2(trn_dataset_path(ds, s, i)); *c; c++)
            h = (h ^ *c) * 0x100000001b3ULL;
        h = (h ^ '\n') * 0x100000001b3ULL;
    }
    return h;
}

int trn_preds_init(trn_preds *p, const trn_dataset *ds, trn_split s, size_t n, trn_err *err)
{
    memset(p, 0, sizeof *p);
    p->split = s;
    p->images = n;
    p->classes = trn_dataset_classes(ds);
    p->list = trn_preds_list(ds, s, n);
    p->truth = malloc((n ? n : 1) * sizeof *p->truth);
    p->pred = calloc(n ? n : 1, sizeof *p->pred);
    if (!p->truth || !p->pred) {
        trn_preds_free(p);
        return trn_errf(err, "out of memory for the predictions of %zu images", n);
    }
    for (size_t i = 0; i < n; i++) p->truth[i] = trn_dataset_class(ds, s, i);
    return 0;
}

int trn_preds_write(const char *path, const trn_preds *p, trn_err *err)
{
    trn_atomic a;
    if (trn_atomic_open(&a, path, err) != 0) return -1;
    fprintf(a.f, PREDS_MAGIC " %s %" PRIu64 " %d %016" PRIx64 "\n", trn_split_name(p->split), p->images, p->classes,
            p->list);
    for (uint64_t i = 0; i < p->images; i++) fprintf(a.f, "%d %d\n", p->truth[i], p->pred[i]);
    return trn_atomic_commit(&a, err);
}

/* One "<int> <int>\n" line at *s in [0, classes), advancing *s. */
static int read_pair(char **s, int classes, int *t, int *q)
{
    char *e;
    long a = strtol(*s, &e, 10);
    if (e == *s || *e != ' ') return -1;
    char *f = e + 1;
    long b = strtol(f, &e, 10);
    if (e == f || *e != '\n' || a < 0 || b < 0 || a >= classes || b >= classes) return -1;
    *t = (int)a, *q = (int)b;
    *s = e + 1;
    return 0;
}

int trn_preds_read(const char *path, trn_preds *p, trn_err *err)
{
    memset(p, 0, sizeof *p);
    char *text;
    size_t len;
    if (trn_read_file(path, (size_t)1 << 30, &text, &len, err) != 0) return -1;
    char split[16];
    unsigned long long n = 0, list = 0;
    int classes = 0, used = 0, rc = 0;
    if (sscanf(text, PREDS_MAGIC " %15s %llu %d %16llx%n", split, &n, &classes, &list, &used) != 4 ||
        text[used] != '\n' || trn_split_parse(split) < 0 || classes < 1 || n > len / 4)
        rc = trn_errf(err, "%s:1: not a predictions file (expected '" PREDS_MAGIC
                           " SPLIT IMAGES CLASSES LIST'): write it with trainer valid --predictions", path);
    if (rc == 0) {
        p->split = (trn_split)trn_split_parse(split);
        p->images = n;
        p->classes = classes;
        p->list = list;
        p->truth = malloc((n ? n : 1) * sizeof *p->truth);
        p->pred = malloc((n ? n : 1) * sizeof *p->pred);
        if (!p->truth || !p->pred) rc = trn_errf(err, "out of memory reading %s", path);
    }
    char *s = text + used + 1;
    for (uint64_t i = 0; rc == 0 && i < n; i++)
        if (read_pair(&s, classes, &p->truth[i], &p->pred[i]) != 0)
            rc = trn_errf(err, "%s:%" PRIu64 ": expected '<true class> <predicted class>', both in 0..%d, "
                               "one image a line (%llu images)", path, i + 2, classes - 1, n);
    if (rc == 0 && s != text + len)
        rc = trn_errf(err, "%s: more lines than its %llu images: the file is damaged; evaluate again", path, n);
    free(text);
    if (rc != 0) trn_preds_free(p);
    return rc;
}

uint64_t trn_preds_correct(const trn_preds *p)
{
    uint64_t k = 0;
    for (uint64_t i = 0; i < p->images; i++) k += p->truth[i] == p->pred[i];
    return k;
}

int trn_preds_pair(const trn_preds *a, const trn_preds *b, uint64_t *only_a, uint64_t *only_b, trn_err *err)
{
    *only_a = *only_b = 0;
    if (a->split != b->split || a->images != b->images || a->list != b->list)
        return trn_errf(err, "not the same images: %s split, %" PRIu64 " images, list %016" PRIx64 " against %s, %" PRIu64
                             ", %016" PRIx64 ": evaluate both models on the same split of the same data set",
                        trn_split_name(a->split), a->images, a->list, trn_split_name(b->split), b->images, b->list);
    for (uint64_t i = 0; i < a->images; i++) {
        int ra = a->pred[i] == a->truth[i], rb = b->pred[i] == b->truth[i];
        *only_a += ra && !rb;
        *only_b += rb && !ra;
    }
    return 0;
}

void trn_preds_free(trn_preds *p)
{
    free(p->truth);
    free(p->pred);
    p->truth = p->pred = NULL;
}
