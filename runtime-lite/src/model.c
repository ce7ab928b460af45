/*
 * model.c: loading variants of an open catalog and running them (rtl_model_*
 * of rtl.h).
 *
 * A model is a list of parts; a part is one network built from a cfg by the
 * trainer's inference code (the engine, trainer/nn, compiled into librtl with
 * -DTRN_INFER_ONLY), its parameters borrowed from a read-only mapping of a
 * Darknet .weights file (format: trainer/nn/weights.c). Plain variants have
 * one part. The kinds below name what later techniques add (see rtl.h);
 * their loaders plug in through the kind table.
 *
 * Before a part runs, its files are checked: the cfg's byte count against
 * the manifest, the cfg against the network builder (errors name
 * file:line), the weights file's size against the manifest (a damaged
 * installed copy) and then its header and size against the cfg (errors name
 * the byte offset and the layer) by trn_weights_load_mem.
 */
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How a variant runs, by technique. */
enum model_kind {
    MODEL_PLAIN,      /* one cfg, one weights file */
    MODEL_NESTED,     /* channel-prefix capacities over one mapping */
    MODEL_EARLY_EXIT, /* exit branches on inner layers */
    MODEL_TRUNK,      /* a shared trunk: run through its heads */
    MODEL_HEAD,       /* a task head over a shared trunk */
    MODEL_CASCADE,    /* specialised, "other" falls through to a partner */
    MODEL_KIND_COUNT
};

static const struct {
    const char *technique;
    enum model_kind kind;
} techniques[] = {
    {"base", MODEL_PLAIN},          {"rewrite", MODEL_PLAIN},   {"svd", MODEL_PLAIN},
    {"mimic", MODEL_PLAIN},         {"pruned", MODEL_PLAIN},    {"nested", MODEL_NESTED},
    {"early-exit", MODEL_EARLY_EXIT}, {"trunk", MODEL_TRUNK},   {"head", MODEL_HEAD},
    {"specialised", MODEL_CASCADE}, {"lasso", MODEL_PLAIN},
};

#define MODEL_PARTS_MAX 8
#define RTL_CFG_MAX (16u << 20) /* as trn_cfg_read */

/* One network over one read-only mapping of its weights file. */
struct part {
    const rtl_variant *variant;
    void *map;          /* the weights file, PROT_READ */
    size_t map_len;
    trn_net *net;       /* parameters point into map */
};

struct rtl_model {
    rtl_catalog *cat;
    const rtl_variant *variant;
    enum model_kind kind;
    struct part parts[MODEL_PARTS_MAX];
    size_t nparts;
    const char *const *labels; /* the task's, owned by cat */
    size_t classes;
    float *input;              /* (c, h, w): decoded images, rtl_model_measure's input */
    const float *output;       /* the last run's (classes), NULL before */
    const rtl_variant *answered_by;
    double *layer_ms;          /* per layer, rtl_model_profile_layers (NULL before) */
    double cpu_ratio;          /* thread CPU time / wall time of those forwards */
    float *split_out;          /* the answer of a split run (classes), rtl_model_set_output */
    /* early exits (technique early-exit): branches over parts[0], their
     * weights in a mapping of their own */
    trn_exits *exits;
    void *exits_map;
    size_t exits_map_len;
    float alpha;               /* T = alpha * T_lossless; 1 by default */
    int exit_taken;            /* of the last run; -1 before */
    /* Nested (multi-capacity) models: capacity k (1..ncap) of parts[0]. */
    int ncap, capacity;        /* 0 for other kinds */
    int nlayers;
    int *cap_filters;          /* [ncap][nlayers]: trn_net_set_capacity's arrays */
    int *cap_rows, *cap_inc;   /* [ncap + 1][nlayers]: active filters and input channels
                                * (row ncap: the whole network) */
    uint64_t switch_in, switch_out;           /* the last switch: parameter bytes */
    uint64_t switch_in_pages, switch_out_pages; /* and the page bytes advised */
    struct rtl_gtdp_cache *gtdp; /* GTDP part networks (gtdp.c), NULL before */
};

/* Forward passes share the process-wide compute pool and OpenBLAS: one at
 * a time. */
static pthread_mutex_t forward_lock = PTHREAD_MUTEX_INITIALIZER;

/* The index of v's first file with role, or -1 with err. */
static int file_index(const rtl_variant *v, const char *role, rtl_err *err)
{
    for (size_t i = 0; i < v->nfiles; i++)
        if (strcmp(v->files[i].role, role) == 0) return (int)i;
    return rtl_errf(err, "variant '%s' has no file with role \"%s\" in the manifest", v->id, role);
}

/* The error for a file whose size is not the manifest's. Returns -1. */
static int damaged(const struct rtl_file *f, uint64_t have, rtl_err *err)
{
    return rtl_errf(err, "%s: %llu bytes, but the manifest says %llu: the installed copy is damaged "
                    "(rtl verify shows what differs; reinstall or roll back)",
                    f->abs, (unsigned long long)have, (unsigned long long)f->size);
}

/* The cfg of v's file with role (its byte count checked against the
 * manifest), parsed. */
static trn_cfg *read_cfg_role(const rtl_variant *v, const char *role, rtl_err *err)
{
    int i = file_index(v, role, err);
    if (i < 0) return NULL;
    const struct rtl_file *f = &v->files[i];
    char *text;
    size_t len;
    trn_err e;
    if (trn_read_file(f->abs, RTL_CFG_MAX, &text, &len, &e) != 0) {
        rtl_err_from_trn(err, &e);
        return NULL;
    }
    trn_cfg *cfg = NULL;
    if (len != f->size) damaged(f, len, err);
    else if (!(cfg = trn_cfg_parse(text, len, f->abs, &e))) rtl_err_from_trn(err, &e);
    free(text);
    return cfg;
}

static trn_cfg *read_cfg(const rtl_variant *v, rtl_err *err) { return read_cfg_role(v, "cfg", err); }

/* Maps v's file with role (a weights file) read-only: *map, *map_len. */
static int map_file(const rtl_variant *v, const char *role, void **map, size_t *map_len, rtl_err *err)
{
    int i = file_index(v, role, err);
    if (i < 0) return -1;
    const struct rtl_file *f = &v->files[i];
    int fd = open(f->abs, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return rtl_errf(err, "cannot open %s: %s", f->abs, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return rtl_errf(err, "%s: not a regular file", f->abs);
    }
    if ((uint64_t)st.st_size != f->size) {
        close(fd);
        return damaged(f, (uint64_t)st.st_size, err);
    }
    if (st.st_size < 16) {
        close(fd);
        return rtl_errf(err, "%s: the file ends at byte offset %lld inside the header (at least 16 bytes): "
                        "not a weights file", f->abs, (long long)st.st_size);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED) return rtl_errf(err, "%s: cannot map %lld bytes: %s", f->abs, (long long)st.st_size, strerror(e));
    /* start reading ahead: the first forward touches every page */
    (void)madvise(m, (size_t)st.st_size, MADV_WILLNEED);
    *map = m;
    *map_len = (size_t)st.st_size;
    return 0;
}

/* Maps v's weights file read-only into p. */
static int map_weights(struct part *p, rtl_err *err)
{
    return map_file(p->variant, "weights", &p->map, &p->map_len, err);
}

/* Builds the network of p->variant with its parameters in the mapping. */
static int part_load(struct part *p, rtl_err *err)
{
    trn_cfg *cfg = read_cfg(p->variant, err);
    if (!cfg) return -1;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.external_params = 1;
    trn_err e;
    p->net = trn_net_create(cfg, &o, &e);
    trn_cfg_free(cfg);
    if (!p->net) return rtl_err_from_trn(err, &e);
    if (map_weights(p, err) != 0) return -1;
    const char *path = rtl_variant_file(p->variant, "weights"), *cfg_path = rtl_variant_file(p->variant, "cfg");
    if (trn_weights_load_mem(p->net, p->map, p->map_len, 1, path, &e) != 0) {
        rtl_err_from_trn(err, &e);
        const char *slash = strrchr(cfg_path, '/');
        return rtl_err_prefix(err, "the weights do not fit %s", slash ? slash + 1 : cfg_path);
    }
    return 0;
}

static void part_free(struct part *p)
{
    trn_net_free(p->net);
    if (p->map) munmap(p->map, p->map_len);
    memset(p, 0, sizeof *p);
}

/* "a, b, c" of the catalog's variant ids (cut to fit). */
static void variant_ids(const rtl_catalog *cat, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < cat->nvariants && used + 1 < size; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", cat->variants[i].id);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* Plain variants: one part, whose outputs are the task's classes. */
static int open_plain(rtl_model *m, rtl_err *err)
{
    struct part *p = &m->parts[m->nparts++];
    p->variant = m->variant;
    if (part_load(p, err) != 0) return -1;
    size_t outputs = trn_net_outputs(p->net);
    if (outputs != m->classes)
        return rtl_errf(err, "%s has %zu outputs, but task '%s' has %zu labels: the cfg does not belong to "
                        "this catalog's task", rtl_variant_file(m->variant, "cfg"), outputs, m->variant->task,
                        m->classes);
    return 0;
}

/* Early exits (FlexDNN; trainer/README.md, Early exits): the trunk is a
 * plain part (files cfg, weights); the branches come from the files with
 * roles exits_cfg and exits_weights, their parameters borrowed from a
 * mapping of the latter. */
static int open_early_exit(rtl_model *m, rtl_err *err)
{
    if (open_plain(m, err) != 0) return -1;
    trn_cfg *cfg = read_cfg_role(m->variant, "exits_cfg", err);
    if (!cfg) return -1;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.external_params = 1;
    trn_err e;
    m->exits = trn_exits_create(m->parts[0].net, cfg, &o, &e);
    trn_cfg_free(cfg);
    if (!m->exits) return rtl_err_from_trn(err, &e);
    if (map_file(m->variant, "exits_weights", &m->exits_map, &m->exits_map_len, err) != 0) return -1;
    const char *path = rtl_variant_file(m->variant, "exits_weights");
    if (trn_exits_weights_load_mem(m->exits, m->exits_map, m->exits_map_len, 1, path, &e) != 0) {
        rtl_err_from_trn(err, &e);
        return rtl_err_prefix(err, "the exits' weights do not fit the exits cfg");
    }
    m->alpha = 1;
    return 0;
}

/* ---- nested (multi-capacity) models ---------------------------------- *
 *
 * One network over one mapping of the full model's weights; capacity k is
 * a channel prefix per layer (trn_net_set_capacity), read from the
 * manifest (technique_fields.capacities[], smallest first: capacity k is
 * the k-th entry, whatever its "capacity" number; its channel_index lists
 * {layer, channels}; a layer not listed keeps all its filters). A switch changes the active
 * prefix in place: an upgrade advises the kernel to read the added
 * parameter ranges (MADV_WILLNEED), a downgrade releases the dropped ones
 * (MADV_DONTNEED; pages shared with parameters still in use are kept), no
 * reload, no copy. */

static int nested_table(rtl_model *m, rtl_err *err)
{
    cJSON *tf = cJSON_Parse(m->variant->fields_json);
    const cJSON *caps = tf ? cJSON_GetObjectItemCaseSensitive(tf, "capacities") : NULL;
    int n = cJSON_GetArraySize(caps), L = trn_net_layers(m->parts[0].net), rc = 0;
    if (!cJSON_IsArray(caps) || n < 1) {
        cJSON_Delete(tf);
        return rtl_errf(err, "manifest: technique_fields.capacities is missing or empty");
    }
    m->ncap = n;
    m->nlayers = L;
    m->cap_filters = calloc((size_t)n * (size_t)L, sizeof *m->cap_filters);
    m->cap_rows = calloc((size_t)(n + 1) * (size_t)L, sizeof *m->cap_rows);
    m->cap_inc = calloc((size_t)(n + 1) * (size_t)L, sizeof *m->cap_inc);
    if (!m->cap_filters || !m->cap_rows || !m->cap_inc) rc = rtl_errf(err, "out of memory");
    for (int k = 0; k < n && rc == 0; k++) {
        const cJSON *c = cJSON_GetArrayItem(caps, k);
        const cJSON *ci = cJSON_GetObjectItemCaseSensitive(c, "channel_index"), *e;
        if (!cJSON_IsArray(ci)) {
            rc = rtl_errf(err, "manifest: capacities[%d] has no channel_index array", k);
            break;
        }
        cJSON_ArrayForEach(e, ci) {
            const cJSON *l = cJSON_GetObjectItemCaseSensitive(e, "layer");
            const cJSON *ch = cJSON_GetObjectItemCaseSensitive(e, "channels");
            if (!cJSON_IsNumber(l) || !cJSON_IsNumber(ch) || l->valueint < 0 || l->valueint >= L ||
                ch->valueint < 0) {
                rc = rtl_errf(err, "manifest: capacity %d: a channel_index entry is not {layer 0..%d, channels}",
                              k + 1, L - 1);
                break;
            }
            m->cap_filters[(size_t)k * L + l->valueint] = ch->valueint;
        }
    }
    cJSON_Delete(tf);
    trn_net *net = m->parts[0].net;
    for (int k = 0; k <= n && rc == 0; k++) {
        trn_err e;
        if (trn_net_set_capacity(net, k < n ? m->cap_filters + (size_t)k * L : NULL, &e) != 0) {
            rtl_err_from_trn(err, &e);
            rc = rtl_err_prefix(err, "capacity %d", k + 1);
            break;
        }
        for (int i = 0; i < L; i++) {
            trn_layer_info in;
            trn_net_layer_info(net, i, &in);
            m->cap_rows[(size_t)k * L + i] = in.out.c;
            m->cap_inc[(size_t)k * L + i] = in.in.c;
        }
    }
    m->capacity = n; /* the whole network: every page mapped */
    return rc;
}

/* Open like a plain variant; the largest capacity is active. */
static int open_nested(rtl_model *m, rtl_err *err)
{
    if (open_plain(m, err) != 0) return -1;
    return nested_table(m, err);
}

/* Byte range [s, e) of the file to page in (up) or out, merged with the
 * pending one; flush when not contiguous (e == 0: flush only). */
typedef struct page_run {
    struct part *p;
    int up;
    size_t s, e, page;
    uint64_t pages;
} page_run;

static void page_flush(page_run *r)
{
    if (r->e <= r->s) return;
    size_t a, b;
    if (r->up) {
        a = r->s / r->page * r->page;
        b = (r->e + r->page - 1) / r->page * r->page;
        if (b > r->p->map_len) b = r->p->map_len;
    } else {
        a = (r->s + r->page - 1) / r->page * r->page;
        b = r->e / r->page * r->page;
    }
    if (b > a) {
        (void)madvise((char *)r->p->map + a, b - a, r->up ? MADV_WILLNEED : MADV_DONTNEED);
        r->pages += b - a;
    }
    r->s = r->e = 0;
}

static void page_add(page_run *r, size_t s, size_t e)
{
    if (e <= s) return;
    /* Contiguous, or (paging in) within the pages the pending range
     * already advises: one call for both. */
    if (r->e > r->s && (r->e == s || (r->up && s / r->page <= (r->e - 1) / r->page + 1))) {
        r->e = e;
        return;
    }
    page_flush(r);
    r->s = s;
    r->e = e;
}

/* The parameter bytes active at `big` and not at `small` (rows and column
 * prefixes of every parameter), advised in (up) or out. */
static uint64_t page_diff(rtl_model *m, int small, int big, int up, uint64_t *pages)
{
    struct part *p = &m->parts[0];
    int np, L = m->nlayers;
    const trn_param *t = trn_net_params(p->net, &np);
    const int *rs = m->cap_rows + (size_t)small * L, *is = m->cap_inc + (size_t)small * L;
    const int *rb = m->cap_rows + (size_t)big * L, *ib = m->cap_inc + (size_t)big * L;
    const int *fi = m->cap_inc + (size_t)m->ncap * L;
    page_run run = {p, up, 0, 0, (size_t)sysconf(_SC_PAGESIZE), 0};
    uint64_t bytes = 0;
    for (int q = 0; q < np; q++) {
        const trn_param *x = &t[q];
        if (x->offset < 0) continue;
        int i = x->layer;
        size_t off = (size_t)x->offset, C = (size_t)x->cols;
        if (x->role != TRN_PARAM_WEIGHTS) { /* a vector: one entry per filter */
            bytes += (uint64_t)(rb[i] - rs[i]) * 4;
            page_add(&run, off + (size_t)rs[i] * 4, off + (size_t)rb[i] * 4);
            continue;
        }
        size_t cs = C * (size_t)is[i] / (size_t)fi[i], cb = C * (size_t)ib[i] / (size_t)fi[i];
        for (int r = 0; r < rb[i]; r++) {
            size_t from = r < rs[i] ? cs : 0;
            bytes += (uint64_t)(cb - from) * 4;
            page_add(&run, off + ((size_t)r * C + from) * 4, off + ((size_t)r * C + cb) * 4);
        }
    }
    page_flush(&run);
    *pages = run.pages;
    return bytes;
}

int rtl_model_capacities(const rtl_model *m) { return m->ncap; }
int rtl_model_capacity(const rtl_model *m) { return m->capacity; }

int rtl_model_set_capacity(rtl_model *m, int k, rtl_err *err)
{
    if (m->ncap == 0)
        return rtl_errf(err, "variant '%s' (technique %s) has no capacities", m->variant->id, m->variant->technique);
    if (k < 1 || k > m->ncap)
        return rtl_errf(err, "variant '%s' has capacities 1 to %d, not %d", m->variant->id, m->ncap, k);
    m->switch_in = m->switch_out = m->switch_in_pages = m->switch_out_pages = 0;
    if (k == m->capacity) return 0;
    trn_err e;
    pthread_mutex_lock(&forward_lock);
    int rc = trn_net_set_capacity(m->parts[0].net, m->cap_filters + (size_t)(k - 1) * m->nlayers, &e);
    pthread_mutex_unlock(&forward_lock);
    if (rc != 0) return rtl_err_from_trn(err, &e);
    if (k > m->capacity)
        m->switch_in = page_diff(m, m->capacity - 1, k - 1, 1, &m->switch_in_pages);
    else
        m->switch_out = page_diff(m, k - 1, m->capacity - 1, 0, &m->switch_out_pages);
    m->capacity = k;
    m->output = NULL;
    return 0;
}

void rtl_model_switch_bytes(const rtl_model *m, rtl_switch_bytes *out)
{
    out->page_in = m->switch_in;
    out->page_out = m->switch_out;
    out->advised_in = m->switch_in_pages;
    out->advised_out = m->switch_out_pages;
}

/* How each kind opens (NULL: not yet, and why). */
static const struct {
    int (*open)(rtl_model *m, rtl_err *err);
    const char *why_not;
} kinds[] = {
    [MODEL_PLAIN] = {open_plain, NULL},
    [MODEL_NESTED] = {open_nested, NULL},
    [MODEL_EARLY_EXIT] = {open_early_exit, NULL},
    [MODEL_TRUNK] = {NULL, "a shared trunk runs through its heads, which this runtime does not load yet"},
    /* A head variant is a whole network (its trunk layers are the parent's,
     * copied by prune retarget): it opens as a plain one; rtl_model_run_tasks
     * runs the shared trunk once and only the head layers per head. */
    [MODEL_HEAD] = {open_plain, NULL},
    /* A specialised model is a whole network with n+1 outputs, the last
     * "other": it opens as a plain one; the caller runs the cascade
     * (rtl_variant_cascade names the partner and the "other" class). */
    [MODEL_CASCADE] = {open_plain, NULL},
};
_Static_assert(sizeof kinds / sizeof kinds[0] == MODEL_KIND_COUNT, "every model kind says how it opens");

/* How v runs: its kind, or -1 with err when this runtime cannot load it. */
static int model_kind(const rtl_variant *v, enum model_kind *kind, rtl_err *err)
{
    size_t t = 0, nt = sizeof techniques / sizeof techniques[0];
    while (t < nt && strcmp(techniques[t].technique, v->technique) != 0) t++;
    if (t == nt)
        return rtl_errf(err, "variant '%s': unknown technique '%s' (a newer catalog format?)", v->id, v->technique);
    *kind = techniques[t].kind;
    if (!kinds[*kind].open)
        return rtl_errf(err, "variant '%s' (technique %s): %s", v->id, v->technique, kinds[*kind].why_not);
    return 0;
}

int rtl_variant_loadable(const rtl_variant *v, rtl_err *err)
{
    enum model_kind kind;
    return model_kind(v, &kind, err);
}

rtl_model *rtl_model_open(rtl_catalog *cat, const char *id, const rtl_model_options *options, rtl_err *err)
{
    const rtl_variant *v = rtl_catalog_find(cat, id);
    if (!v) {
        char ids[600];
        variant_ids(cat, ids, sizeof ids);
        rtl_errf(err, "catalog %s (version %llu) has no variant '%s'; its variants: %s", cat->id,
                 (unsigned long long)cat->version, id, ids);
        return NULL;
    }
    enum model_kind kind;
    if (model_kind(v, &kind, err) != 0) return NULL;
    rtl_model *m = calloc(1, sizeof *m);
    if (!m) {
        rtl_errf(err, "out of memory");
        return NULL;
    }
    m->cat = cat;
    m->variant = v;
    m->kind = kind;
    m->exit_taken = -1;
    m->labels = rtl_catalog_task_labels(cat, v->task, &m->classes);
    if (!m->labels) {
        rtl_errf(err, "variant '%s': its task '%s' is not among the catalog's tasks", id, v->task);
        goto fail;
    }
    if (options && options->threads > 0) trn_set_threads(options->threads);
    if (kinds[kind].open(m, err) != 0) goto fail;
    if (!(m->input = calloc(rtl_model_input_size(m), sizeof *m->input))) {
        rtl_errf(err, "out of memory");
        goto fail;
    }
    return m;
fail:
    rtl_err_prefix(err, "catalog %s, variant '%s'", cat->id, id);
    rtl_model_close(m);
    return NULL;
}

void rtl_model_close(rtl_model *m)
{
    if (!m) return;
    trn_exits_free(m->exits);
    if (m->exits_map) munmap(m->exits_map, m->exits_map_len);
    for (size_t i = 0; i < m->nparts; i++) part_free(&m->parts[i]);
    free(m->input);
    free(m->layer_ms);
    free(m->split_out);
    free(m->cap_filters);
    free(m->cap_rows);
    free(m->cap_inc);
    rtl_gtdp_cache_free(m->gtdp);
    free(m);
}

struct rtl_gtdp_cache **rtl_model_gtdp_cache(rtl_model *m) { return &m->gtdp; }
const struct rtl_gtdp_cache *rtl_model_gtdp_cache_get(const rtl_model *m) { return m->gtdp; }
void rtl_forward_lock(void) { pthread_mutex_lock(&forward_lock); }
void rtl_forward_unlock(void) { pthread_mutex_unlock(&forward_lock); }

const rtl_variant *rtl_model_variant(const rtl_model *m) { return m->variant; }
size_t rtl_model_classes(const rtl_model *m) { return m->classes; }
const char *rtl_model_label(const rtl_model *m, size_t k) { return k < m->classes ? m->labels[k] : NULL; }
const float *rtl_model_output(const rtl_model *m) { return m->output; }
const char *rtl_model_answered_by(const rtl_model *m) { return m->answered_by ? m->answered_by->id : NULL; }

void rtl_model_input_shape(const rtl_model *m, int *c, int *h, int *w)
{
    trn_shape s = trn_net_input_shape(m->parts[0].net);
    if (c) *c = s.c;
    if (h) *h = s.h;
    if (w) *w = s.w;
}

trn_net *rtl_model_net(const rtl_model *m) { return m->parts[0].net; }

size_t rtl_model_input_size(const rtl_model *m) { return trn_net_inputs(m->parts[0].net); }

uint64_t rtl_model_mapped_bytes(const rtl_model *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < m->nparts; i++) n += m->parts[i].map_len;
    return n;
}

int rtl_model_run(rtl_model *m, const float *x, rtl_err *err)
{
    if (!x) return rtl_errf(err, "variant '%s': no input", m->variant->id);
    trn_err e;
    m->output = NULL;
    m->answered_by = NULL;
    m->exit_taken = -1;
    pthread_mutex_lock(&forward_lock);
    int rc;
    if (m->exits) {
        trn_exit_result r;
        rc = trn_exits_forward(m->parts[0].net, m->exits, x, m->alpha, &r, &e);
        if (rc == 0) {
            m->output = r.probs;
            m->exit_taken = r.exit;
        }
    } else {
        rc = trn_net_forward(m->parts[0].net, x, &e);
        if (rc == 0) {
            m->output = trn_net_output(m->parts[0].net);
            m->exit_taken = 0;
        }
    }
    pthread_mutex_unlock(&forward_lock);
    if (rc != 0) return rtl_err_from_trn(err, &e);
    m->answered_by = m->variant;
    return 0;
}

int rtl_model_exits(const rtl_model *m) { return m->exits ? trn_exits_count(m->exits) : 0; }
int rtl_model_exit_taken(const rtl_model *m) { return m->exit_taken; }
int rtl_model_exit_layer(const rtl_model *m, int j) { return m->exits ? trn_exit_at(m->exits, j) : -1; }

int rtl_model_set_alpha(rtl_model *m, float alpha, rtl_err *err)
{
    if (!m->exits)
        return rtl_errf(err, "variant '%s' (technique %s) has no early exits: alpha applies to early-exit "
                        "variants only", m->variant->id, m->variant->technique);
    if (!(alpha >= 0 && alpha <= 1e6f))
        return rtl_errf(err, "variant '%s': alpha %g: give a number >= 0 (1: the lossless thresholds; "
                        "smaller: earlier exits, larger: fewer)", m->variant->id, alpha);
    m->alpha = alpha;
    return 0;
}

float rtl_model_alpha(const rtl_model *m) { return m->exits ? m->alpha : 0; }

int rtl_model_run_image(rtl_model *m, const char *path, rtl_err *err)
{
    int c, h, w;
    rtl_model_input_shape(m, &c, &h, &w);
    trn_err e;
    m->output = NULL;
    if (trn_image_load_input(path, w, h, c, m->input, &e) != 0) return rtl_err_from_trn(err, &e);
    return rtl_model_run(m, m->input, err);
}

int rtl_model_top(const rtl_model *m, size_t k, rtl_class *out, size_t *n, rtl_err *err)
{
    *n = 0;
    if (!m->output) return rtl_errf(err, "variant '%s': no result yet (run the model first)", m->variant->id);
    if (k > m->classes) k = m->classes;
    /* insertion into the sorted prefix: k is small */
    for (size_t i = 0; i < m->classes; i++) {
        float p = m->output[i];
        size_t j = *n < k ? (*n)++ : k;
        while (j > 0 && out[j - 1].prob < p) {
            if (j < k) out[j] = out[j - 1];
            j--;
        }
        if (j < k) out[j] = (rtl_class){.index = i, .prob = p, .label = m->labels[i]};
    }
    return 0;
}

int rtl_model_measure(rtl_model *m, const float *x, uint32_t warmup, uint32_t runs, rtl_latency *out,
                      rtl_err *err)
{
    return rtl_model_measure_paced(m, x, warmup, runs, 0, out, err);
}

int rtl_model_measure_paced(rtl_model *m, const float *x, uint32_t warmup, uint32_t runs, double gap_ms,
                            rtl_latency *out, rtl_err *err)
{
    if (runs < 1) return rtl_errf(err, "variant '%s': at least one timed run is needed", m->variant->id);
    if (!(gap_ms >= 0 && gap_ms <= 3.6e6))
        return rtl_errf(err, "variant '%s': the gap between runs must be 0..3600000 ms", m->variant->id);
    double *ms = malloc(runs * sizeof *ms);
    if (!ms) return rtl_errf(err, "out of memory");
    if (x) memcpy(m->input, x, rtl_model_input_size(m) * sizeof *x);
    for (uint32_t i = 0; i < warmup; i++)
        if (rtl_model_run(m, m->input, err) != 0) goto fail;
    double sum = 0;
    for (uint32_t i = 0; i < runs; i++) {
        if (gap_ms > 0) {
            struct timespec ts = {(time_t)(gap_ms / 1000), (long)((gap_ms - 1000.0 * (double)(time_t)(gap_ms / 1000)) * 1e6)};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
            }
        }
        double t0 = rtl_now_ms();
        if (rtl_model_run(m, m->input, err) != 0) goto fail;
        ms[i] = rtl_now_ms() - t0;
        sum += ms[i];
    }
    qsort(ms, runs, sizeof *ms, rtl_cmp_double);
    memset(out, 0, sizeof *out);
    snprintf(out->variant, sizeof out->variant, "%s", m->variant->id);
    snprintf(out->where, sizeof out->where, "device");
    snprintf(out->source, sizeof out->source, "measured");
    rtl_machine_describe(out->machine, sizeof out->machine);
    out->threads = trn_threads();
    out->batch = 1;
    out->warmup = warmup;
    out->runs = runs;
    out->ms_median = runs % 2 ? ms[runs / 2] : (ms[runs / 2 - 1] + ms[runs / 2]) / 2;
    out->ms_mean = sum / runs;
    out->measured_at = (int64_t)time(NULL);
    out->catalog_version = m->cat->version;
    out->gap_ms = gap_ms;
    free(ms);
    return 0;
fail:
    free(ms);
    return -1;
}

/* ---- split execution ------------------------------------------------------ */

const char *rtl_model_catalog_id(const rtl_model *m) { return m->cat->id; }

/* Layers up to the output layer: trailing [cost] layers compute nothing an
 * answer needs (trn_net_output skips them too). */
int rtl_model_layers(const rtl_model *m)
{
    trn_net *net = m->parts[0].net;
    int n = trn_net_layers(net);
    trn_layer_info li;
    while (n > 1 && trn_net_layer_info(net, n - 1, &li) == 0 && li.kind == TRN_LAYER_COST) n--;
    return n;
}

/* 1 when no layer at or after s reads a layer before s-1 (cut s possible). */
int rtl_model_cut_ok(const rtl_model *m, int s)
{
    trn_net *net = m->parts[0].net;
    int n = rtl_model_layers(m);
    if (s < 0 || s > n) return 0;
    for (int j = s; j < n; j++) {
        trn_layer_info li;
        if (trn_net_layer_info(net, j, &li) != 0) return 0;
        if (li.n_from > 8) return 0; /* refs beyond the first 8 are not listed: refuse */
        for (int k = 0; k < li.n_from; k++)
            if (li.from[k] < s - 1) return 0;
    }
    return 1;
}

size_t rtl_model_cut_floats(const rtl_model *m, int s)
{
    trn_net *net = m->parts[0].net;
    int n = rtl_model_layers(m);
    if (s < 0 || s > n) return 0;
    if (s == 0) return trn_net_inputs(net);
    trn_layer_info li;
    if (trn_net_layer_info(net, s - 1, &li) != 0) return 0;
    return (size_t)li.out.c * li.out.h * li.out.w;
}

int rtl_model_layer_cost(const rtl_model *m, int i, rtl_layer_cost *out)
{
    trn_layer_info li;
    if (i < 0 || i >= rtl_model_layers(m) || trn_net_layer_info(m->parts[0].net, i, &li) != 0) return -1;
    memset(out, 0, sizeof *out);
    out->index = i;
    snprintf(out->kind, sizeof out->kind, "%s", trn_layer_kind_name(li.kind));
    out->macs = li.macs;
    out->output_bytes = li.output_bytes;
    out->input_bytes = 4 * (uint64_t)rtl_model_cut_floats(m, i);
    out->cut_before = rtl_model_cut_ok(m, i);
    out->host_ms = m->layer_ms ? m->layer_ms[i] : 0;
    out->host_cpu_ms = out->host_ms * m->cpu_ratio;
    return 0;
}

int rtl_model_run_range(rtl_model *m, int first, int last, const float *x, size_t n, const float **out,
                        size_t *nout, rtl_err *err)
{
    int layers = rtl_model_layers(m);
    if (first < 0 || last < first || last >= layers)
        return rtl_errf(err, "variant '%s': no layer range %d..%d (it has layers 0..%d)", m->variant->id, first,
                        last, layers - 1);
    if (!rtl_model_cut_ok(m, first) || !rtl_model_cut_ok(m, last + 1))
        return rtl_errf(err, "variant '%s': layers %d..%d cannot run apart (a route or shortcut reads across "
                        "the cut; rtl plan lists the possible cuts)", m->variant->id, first, last);
    if (n != rtl_model_cut_floats(m, first))
        return rtl_errf(err, "variant '%s': layer %d takes %zu floats, not %zu", m->variant->id, first,
                        rtl_model_cut_floats(m, first), n);
    trn_err e;
    m->output = NULL;
    m->answered_by = NULL;
    pthread_mutex_lock(&forward_lock);
    int rc = trn_net_forward_range(m->parts[0].net, first, last, x, &e);
    pthread_mutex_unlock(&forward_lock);
    if (rc != 0) return rtl_err_from_trn(err, &e);
    *out = trn_net_layer_output(m->parts[0].net, last);
    *nout = rtl_model_cut_floats(m, last + 1);
    if (last == layers - 1) {
        m->output = trn_net_output(m->parts[0].net);
        m->answered_by = m->variant;
    }
    return 0;
}

static double thread_cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int rtl_model_profile_layers(rtl_model *m, const float *x, uint32_t runs, rtl_err *err)
{
    int n = rtl_model_layers(m);
    if (runs < 1) return rtl_errf(err, "variant '%s': at least one run is needed", m->variant->id);
    double *all = malloc((size_t)n * runs * sizeof *all);
    double *ms = m->layer_ms ? m->layer_ms : calloc((size_t)n, sizeof *ms);
    if (!all || !ms) {
        free(all);
        if (ms != m->layer_ms) free(ms);
        return rtl_errf(err, "out of memory");
    }
    m->layer_ms = ms;
    if (x) memcpy(m->input, x, rtl_model_input_size(m) * sizeof *x);
    trn_net *net = m->parts[0].net;
    double *cpu = calloc(2 * (size_t)runs, sizeof *cpu), *wall = cpu + runs;
    int rc = cpu ? rtl_model_run(m, m->input, err) : rtl_errf(err, "out of memory"); /* warm-up */
    for (uint32_t r = 0; rc == 0 && r < runs; r++) {
        trn_net_profile(net, 1);
        double c0 = thread_cpu_ms();
        rc = rtl_model_run(m, m->input, err);
        cpu[r] = thread_cpu_ms() - c0;
        for (int i = 0; rc == 0 && i < n; i++) {
            double f = 0;
            trn_net_layer_time(net, i, &f, NULL);
            all[(size_t)i * runs + r] = f * 1e3;
            wall[r] += f * 1e3;
        }
        trn_net_profile(net, 0);
    }
    if (rc == 0) {
        qsort(cpu, runs, sizeof *cpu, rtl_cmp_double);
        qsort(wall, runs, sizeof *wall, rtl_cmp_double);
        double c = runs % 2 ? cpu[runs / 2] : (cpu[runs / 2 - 1] + cpu[runs / 2]) / 2;
        double w = runs % 2 ? wall[runs / 2] : (wall[runs / 2 - 1] + wall[runs / 2]) / 2;
        m->cpu_ratio = w > 0 ? c / w : 1;
    }
    free(cpu);
    for (int i = 0; rc == 0 && i < n; i++) {
        qsort(all + (size_t)i * runs, runs, sizeof *all, rtl_cmp_double);
        double *v = all + (size_t)i * runs;
        ms[i] = runs % 2 ? v[runs / 2] : (v[runs / 2 - 1] + v[runs / 2]) / 2;
    }
    free(all);
    return rc;
}

int rtl_model_set_output(rtl_model *m, const float *y, size_t n, rtl_err *err)
{
    if (n != m->classes)
        return rtl_errf(err, "variant '%s': an answer of %zu floats, not %zu", m->variant->id, n, m->classes);
    if (!m->split_out && !(m->split_out = malloc(n * sizeof *y))) return rtl_errf(err, "out of memory");
    memcpy(m->split_out, y, n * sizeof *y);
    m->output = m->split_out;
    m->answered_by = m->variant;
    return 0;
}

int rtl_model_image_input(const rtl_model *m, const char *path, float *x, rtl_err *err)
{
    int c, h, w;
    rtl_model_input_shape(m, &c, &h, &w);
    trn_err e;
    if (trn_image_load_input(path, w, h, c, x, &e) != 0) return rtl_err_from_trn(err, &e);
    return 0;
}
