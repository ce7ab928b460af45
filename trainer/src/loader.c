/*
 * loader.c: batches of (x, y) from a data set split, prepared by worker
 * threads one batch ahead of the caller.
 *
 * Determinism: batch k holds positions p = k * batch + j of an endless
 * sequence of epochs. Position p is image perm_e[p % n] of epoch e = p / n,
 * where perm_e is a Fisher-Yates shuffle drawn from a generator forked from
 * (seed, "shuffle", e), or the list order when shuffle is off. The sample's
 * augmentation draws from a generator forked from (seed, "augment", e,
 * image). Nothing else feeds a sample, so a batch is a pure function of
 * (data set, options, k): the number of threads, the order in which workers
 * finish, the cache and the batches asked for before do not change a byte.
 * A run resumed at batch k sees what an uninterrupted run saw.
 *
 * Threads: `threads` workers take samples from two batch slots. trn_loader_get
 * marks the slot of the batch it waits for as urgent (its samples are taken
 * first), copies the finished batch out, then hands the freed slot to batch
 * k + 1, which the workers prepare while the caller trains. A slot holding a
 * batch nobody will ask for (the caller jumped) is cancelled: its remaining
 * samples are not started, and the slot is reused once the started ones end.
 * All shared state is under one mutex; a worker holds it only to take or
 * return a sample. One thread at a time may call trn_loader_get.
 *
 * Cache: with cache_bytes > 0, decoded images are kept (until the budget is
 * used up, first come first kept): the decoded source image when augmenting,
 * the finished evaluation tensor otherwise. Cached entries never change once
 * stored, so workers read them without the lock.
 */
#include "data.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LOADER_MAX_THREADS 256
#define LOADER_MAX_BATCH 65536
/* Sub-stream numbers of the seed's generator. */
#define STREAM_SHUFFLE 0x53485546464c45ULL /* "SHUFFLE" */
#define STREAM_AUGMENT 0x4155474d454e54ULL /* "AUGMENT" */

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_COPYING, SLOT_CANCELLED };

typedef struct slot {
    enum slot_state state;
    uint64_t index; /* the batch it holds */
    int next;       /* next sample to start; == batch when none is left */
    int inflight;   /* samples started and not finished */
    int done;       /* samples finished */
    int urgent;     /* the caller waits for it */
    int err_at;     /* lowest failed sample, -1 if none */
    trn_err err;
    size_t *img;    /* (batch) image index of each sample */
    uint64_t *epoch; /* (batch) epoch of each sample */
    float *x;       /* (batch, c, h, w) */
    float *y;       /* (batch, classes) */
} slot;

typedef struct perm_cache {
    int valid;
    uint64_t epoch;
    size_t *perm;
} perm_cache;

struct trn_loader {
    const trn_dataset *ds;
    trn_split split;
    trn_loader_opts o;
    size_t n;            /* images per epoch */
    int classes;
    size_t sample_floats; /* c * h * w */
    trn_rng shuffle_root, augment_root;

    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* a sample can be started, or stop */
    pthread_cond_t done_cv; /* a sample finished */
    slot slots[2];
    int stop;
    pthread_t *threads;
    int nthreads;
    int sync_ready; /* mu and the condition variables are initialised */

    perm_cache perms[2]; /* caller thread only */
    int perm_next;

    trn_image *cache;    /* (n) entries; data NULL when not cached */
    size_t cache_used;
};

void trn_loader_opts_defaults(trn_loader_opts *o)
{
    memset(o, 0, sizeof *o);
    o->augment = 1;
    trn_augment_defaults(&o->aug);
    o->threads = 1;
    o->shuffle = 1;
}

size_t trn_loader_epoch_size(const trn_loader *l) { return l->n; }

/* ---- sample order (caller thread) --------------------------------------- */

static const size_t *epoch_perm(trn_loader *l, uint64_t epoch)
{
    for (int i = 0; i < 2; i++)
        if (l->perms[i].valid && l->perms[i].epoch == epoch) return l->perms[i].perm;
    perm_cache *pc = &l->perms[l->perm_next];
    l->perm_next ^= 1;
    size_t *p = pc->perm;
    for (size_t i = 0; i < l->n; i++) p[i] = i;
    trn_rng r = trn_rng_fork(&l->shuffle_root, epoch);
    for (size_t i = l->n - 1; i > 0; i--) {
        size_t j = (size_t)trn_rng_below(&r, (uint64_t)i + 1);
        size_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    pc->valid = 1;
    pc->epoch = epoch;
    return p;
}

/* Fills s->img and s->epoch for batch `index` and opens the slot to the
 * workers. Called with the lock held, on a free slot. */
static void slot_assign(trn_loader *l, slot *s, uint64_t index)
{
    uint64_t p = index * (uint64_t)l->o.batch;
    for (int j = 0; j < l->o.batch; j++, p++) {
        uint64_t e = p / l->n;
        size_t at = (size_t)(p % l->n);
        s->epoch[j] = e;
        s->img[j] = l->o.shuffle ? epoch_perm(l, e)[at] : at;
    }
    s->state = SLOT_FILLING;
    s->index = index;
    s->next = 0;
    s->inflight = 0;
    s->done = 0;
    s->urgent = 0;
    s->err_at = -1;
    s->err.msg[0] = '\0';
    pthread_cond_broadcast(&l->work_cv);
}

/* Stops handing out samples of s; the slot becomes free when the started
 * ones end. Lock held. */
static void slot_cancel(trn_loader *l, slot *s)
{
    s->next = l->o.batch;
    s->state = s->inflight ? SLOT_CANCELLED : SLOT_FREE;
}

/* ---- workers ------------------------------------------------------------- */

/* Decodes (or finds in the cache) image `img` and writes sample j of slot
 * data x, y. No lock held on entry or exit. */
static int run_sample(trn_loader *l, size_t img, uint64_t epoch, float *x, float *y, trn_err *err)
{
    const trn_loader_opts *o = &l->o;
    const char *path = trn_dataset_path(l->ds, l->split, img);
    trn_image im = {0};
    const trn_image *src = NULL;

    if (l->cache) {
        pthread_mutex_lock(&l->mu);
        if (l->cache[img].data) src = &l->cache[img];
        pthread_mutex_unlock(&l->mu);
    }
    if (!src) {
        if (trn_image_load(path, o->c, &im, err) != 0) return -1;
        if (!o->augment) {
            /* The evaluation tensor is what gets cached and copied. */
            trn_image t;
            if (trn_image_alloc(&t, o->w, o->h, o->c, err) != 0) {
                trn_image_free(&im);
                return trn_err_prefix(err, "%s", path);
            }
            trn_image_eval_into(&im, o->w, o->h, t.data);
            trn_image_free(&im);
            im = t;
        }
        src = &im;
        if (l->cache) {
            size_t bytes = (size_t)im.w * im.h * im.c * sizeof(float);
            pthread_mutex_lock(&l->mu);
            if (!l->cache[img].data && l->cache_used + bytes <= o->cache_bytes) {
                l->cache[img] = im;
                l->cache_used += bytes;
                src = &l->cache[img];
                memset(&im, 0, sizeof im);
            }
            pthread_mutex_unlock(&l->mu);
        }
    }
    if (o->augment) {
        trn_rng e = trn_rng_fork(&l->augment_root, epoch);
        trn_rng r = trn_rng_fork(&e, img);
        trn_augment_image(src, &o->aug, o->w, o->h, &r, x);
    } else {
        memcpy(x, src->data, l->sample_floats * sizeof *x);
    }
    trn_image_free(&im);
    memset(y, 0, (size_t)l->classes * sizeof *y);
    if (o->ntasks > 0)
        for (int t = 0; t < o->ntasks; t++) y[(size_t)t * o->group + trn_dataset_class(o->tasks[t], l->split, img)] = 1;
    else
        y[trn_dataset_class(l->ds, l->split, img)] = 1;
    return 0;
}

/* The slot whose next sample a worker should start: the urgent one first. */
static slot *pick(trn_loader *l)
{
    slot *best = NULL;
    for (int i = 0; i < 2; i++) {
        slot *s = &l->slots[i];
        if (s->state != SLOT_FILLING || s->next >= l->o.batch) continue;
        if (!best || (s->urgent && !best->urgent)) best = s;
    }
    return best;
}

static void *worker(void *arg)
{
    trn_loader *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        slot *s;
        while (!l->stop && !(s = pick(l))) pthread_cond_wait(&l->work_cv, &l->mu);
        if (l->stop) break;
        int j = s->next++;
        s->inflight++;
        size_t img = s->img[j];
        uint64_t epoch = s->epoch[j];
        float *x = s->x + (size_t)j * l->sample_floats;
        float *y = s->y + (size_t)j * l->classes;
        pthread_mutex_unlock(&l->mu);

        trn_err e;
        int rc = run_sample(l, img, epoch, x, y, &e);

        pthread_mutex_lock(&l->mu);
        s->inflight--;
        s->done++;
        if (rc != 0 && (s->err_at < 0 || j < s->err_at)) {
            s->err_at = j;
            s->err = e;
        }
        if (s->state == SLOT_CANCELLED && s->inflight == 0) s->state = SLOT_FREE;
        pthread_cond_broadcast(&l->done_cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

/* ---- open, get, close ----------------------------------------------------- */

static int check_opts(const trn_loader_opts *o, trn_err *err)
{
    if (o->w < 1 || o->h < 1 || o->w > TRN_IMAGE_MAX_SIDE || o->h > TRN_IMAGE_MAX_SIDE)
        return trn_errf(err, "loader: input size %dx%d must have sides in [1, %d]", o->w, o->h,
                        TRN_IMAGE_MAX_SIDE);
    if (o->c < 1 || o->c > 4)
        return trn_errf(err, "loader: channels=%d must be 1, 2, 3 or 4", o->c);
    if (!trn_image_size_ok(o->w, o->h, o->c))
        return trn_errf(err, "loader: input size %dx%d has more than %ld pixels", o->w, o->h,
                        (long)TRN_IMAGE_MAX_PIXELS);
    if (o->batch < 1 || o->batch > LOADER_MAX_BATCH)
        return trn_errf(err, "loader: batch=%d must be in [1, %d]", o->batch, LOADER_MAX_BATCH);
    if (o->threads < 1 || o->threads > LOADER_MAX_THREADS)
        return trn_errf(err, "loader: threads=%d must be in [1, %d]", o->threads,
                        LOADER_MAX_THREADS);
    if ((o->augment != 0 && o->augment != 1) || (o->shuffle != 0 && o->shuffle != 1))
        return trn_errf(err, "loader: augment=%d and shuffle=%d must be 0 or 1", o->augment,
                        o->shuffle);
    if (o->augment && trn_augment_check(&o->aug, "loader", err) != 0) return -1;
    if (o->ntasks < 0 || (o->ntasks > 0 && (!o->tasks || o->group < 1)))
        return trn_errf(err, "loader: ntasks=%d needs the task data sets and group >= 1 (group=%d)",
                        o->ntasks, o->group);
    return 0;
}

/* Every task lists split s's images in the data set's order, with at most
 * `group` classes. */
static int check_tasks(const trn_dataset *ds, trn_split s, const trn_loader_opts *o, trn_err *err)
{
    size_t n = trn_dataset_count(ds, s);
    for (int t = 0; t < o->ntasks; t++) {
        const trn_dataset *d = o->tasks[t];
        if (trn_dataset_classes(d) > o->group)
            return trn_errf(err, "loader: task %d has %d classes, more than the group of %d", t,
                            trn_dataset_classes(d), o->group);
        if (trn_dataset_count(d, s) != n)
            return trn_errf(err, "loader: task %d lists %zu %s images, the data set %zu; every task "
                            "must list the same images", t, trn_dataset_count(d, s), trn_split_name(s), n);
        for (size_t i = 0; i < n; i++)
            if (strcmp(trn_dataset_path(d, s, i), trn_dataset_path(ds, s, i)) != 0)
                return trn_errf(err, "loader: task %d's %s image %zu is %s, the data set's %s; every "
                                "task must list the same images in the same order", t, trn_split_name(s),
                                i + 1, trn_dataset_path(d, s, i), trn_dataset_path(ds, s, i));
    }
    return 0;
}

trn_loader *trn_loader_open(const trn_dataset *ds, trn_split split, const trn_loader_opts *o,
                            trn_err *err)
{
    if (check_opts(o, err) != 0) return NULL;
    if (!trn_dataset_has(ds, split) || trn_dataset_count(ds, split) == 0) {
        trn_errf(err, "loader: the data set has no '%s' list (add %s=<list file> to its .data "
                 "file)", trn_split_name(split) ? trn_split_name(split) : "?",
                 trn_split_name(split) ? trn_split_name(split) : "split");
        return NULL;
    }
    if (check_tasks(ds, split, o, err) != 0) return NULL;
    trn_loader *l = calloc(1, sizeof *l);
    if (!l) {
        trn_errf(err, "loader: out of memory");
        return NULL;
    }
    l->ds = ds;
    l->split = split;
    l->o = *o;
    l->n = trn_dataset_count(ds, split);
    l->classes = o->ntasks > 0 ? o->ntasks * o->group : trn_dataset_classes(ds);
    l->sample_floats = (size_t)o->c * o->h * o->w;
    trn_rng root;
    trn_rng_seed(&root, o->seed);
    l->shuffle_root = trn_rng_fork(&root, STREAM_SHUFFLE);
    l->augment_root = trn_rng_fork(&root, STREAM_AUGMENT);

    int ok = 1;
    size_t b = (size_t)o->batch;
    for (int i = 0; i < 2; i++) {
        slot *s = &l->slots[i];
        s->img = malloc(b * sizeof *s->img);
        s->epoch = malloc(b * sizeof *s->epoch);
        s->x = malloc(b * l->sample_floats * sizeof *s->x);
        s->y = malloc(b * (size_t)l->classes * sizeof *s->y);
        ok &= s->img && s->epoch && s->x && s->y;
        if (o->shuffle) {
            l->perms[i].perm = malloc(l->n * sizeof *l->perms[i].perm);
            ok &= l->perms[i].perm != NULL;
        }
    }
    if (o->cache_bytes) {
        l->cache = calloc(l->n, sizeof *l->cache);
        ok &= l->cache != NULL;
    }
    l->threads = calloc((size_t)o->threads, sizeof *l->threads);
    if (!ok || !l->threads) {
        trn_errf(err, "loader: out of memory for batches of %d x %zu floats", o->batch,
                 l->sample_floats);
        trn_loader_close(l);
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work_cv, NULL);
    pthread_cond_init(&l->done_cv, NULL);
    l->sync_ready = 1;
    for (int i = 0; i < o->threads; i++) {
        int rc = pthread_create(&l->threads[i], NULL, worker, l);
        if (rc != 0) {
            trn_errf(err, "loader: cannot start worker thread %d of %d: %s", i + 1, o->threads,
                     strerror(rc));
            trn_loader_close(l);
            return NULL;
        }
        l->nthreads++;
    }
    /* Batch 0 is the likely first request: start on it now. */
    pthread_mutex_lock(&l->mu);
    slot_assign(l, &l->slots[0], 0);
    pthread_mutex_unlock(&l->mu);
    return l;
}

int trn_loader_get(trn_loader *l, uint64_t index, float *x, float *y, trn_err *err)
{
    if (index > (UINT64_MAX - (uint64_t)l->o.batch) / (uint64_t)l->o.batch - 1)
        return trn_errf(err, "loader: batch index %llu is too large",
                        (unsigned long long)index);
    pthread_mutex_lock(&l->mu);
    slot *s = NULL;
    for (int i = 0; i < 2; i++) {
        slot *t = &l->slots[i];
        if (t->state != SLOT_FILLING) continue;
        if (t->index == index) s = t;
        else if (t->index != index + 1) slot_cancel(l, t); /* a batch nobody asks for */
    }
    if (!s) {
        for (;;) {
            for (int i = 0; i < 2 && !s; i++)
                if (l->slots[i].state == SLOT_FREE) s = &l->slots[i];
            if (s) break;
            pthread_cond_wait(&l->done_cv, &l->mu);
        }
        slot_assign(l, s, index);
    }
    s->urgent = 1;
    pthread_cond_broadcast(&l->work_cv);
    while (s->done < l->o.batch) pthread_cond_wait(&l->done_cv, &l->mu);
    s->urgent = 0;
    int rc = 0;
    if (s->err_at >= 0) {
        rc = -1;
        if (err) *err = s->err;
        trn_err_prefix(err, "batch %llu of the %s split, image %d",
                       (unsigned long long)index, trn_split_name(l->split), s->err_at);
        s->state = SLOT_FREE;
        pthread_mutex_unlock(&l->mu);
        return rc;
    }
    s->state = SLOT_COPYING;
    pthread_mutex_unlock(&l->mu);

    memcpy(x, s->x, (size_t)l->o.batch * l->sample_floats * sizeof *x);
    memcpy(y, s->y, (size_t)l->o.batch * l->classes * sizeof *y);

    pthread_mutex_lock(&l->mu);
    s->state = SLOT_FREE;
    /* Prefetch the next batch into a free slot unless a slot already has it. */
    slot *nx = NULL;
    for (int i = 0; i < 2; i++)
        if (l->slots[i].state == SLOT_FILLING && l->slots[i].index == index + 1) nx = &l->slots[i];
    if (!nx) slot_assign(l, s, index + 1);
    pthread_mutex_unlock(&l->mu);
    return rc;
}

void trn_loader_close(trn_loader *l)
{
    if (!l) return;
    if (l->nthreads) {
        pthread_mutex_lock(&l->mu);
        l->stop = 1;
        pthread_cond_broadcast(&l->work_cv);
        pthread_mutex_unlock(&l->mu);
        for (int i = 0; i < l->nthreads; i++) pthread_join(l->threads[i], NULL);
    }
    if (l->sync_ready) {
        pthread_cond_destroy(&l->done_cv);
        pthread_cond_destroy(&l->work_cv);
        pthread_mutex_destroy(&l->mu);
    }
    free(l->threads);
    for (int i = 0; i < 2; i++) {
        free(l->slots[i].img);
        free(l->slots[i].epoch);
        free(l->slots[i].x);
        free(l->slots[i].y);
        free(l->perms[i].perm);
    }
    if (l->cache) {
        for (size_t i = 0; i < l->n; i++) trn_image_free(&l->cache[i]);
        free(l->cache);
    }
    free(l);
}
