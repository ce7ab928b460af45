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
#include "techniques.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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

/* The technique table's runtime column (catalog/techniques.rows, generated
 * into techniques.h by mk/techniques.sh): each technique's model kind. */
#define MODEL_KIND_plain MODEL_PLAIN
#define MODEL_KIND_nested MODEL_NESTED
#define MODEL_KIND_exits MODEL_EARLY_EXIT
#define MODEL_KIND_trunk MODEL_TRUNK
#define MODEL_KIND_head MODEL_HEAD
#define MODEL_KIND_cascade MODEL_CASCADE
#define TECH_ROW(id, name, runtime, colour, verb, made, data) {name, MODEL_KIND_##runtime},
static const struct {
    const char *technique;
    enum model_kind kind;
} techniques[] = {TECHNIQUES(TECH_ROW)};
#undef TECH_ROW

#define MODEL_PARTS_MAX 8
#define RTL_CFG_MAX (16u << 20) /* as trn_cfg_read */

/* One network over one read-only mapping of its weights file. */
struct part {
    const rtl_variant *variant;
    void *map;          /* the weights file (a fragment's: its trunk's), PROT_READ */
    size_t map_len;
    rtl_catalog *cat;   /* set: map is the catalog's shared mapping */
    void *frag_map;     /* a fragment's own file (layers cut..), or NULL */
    size_t frag_len;
    trn_net *net;       /* parameters point into map (and frag_map) */
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
    int *exit_layers;          /* [exits]: the trunk layer each reads */
    /* Nested (multi-capacity) models: capacity k (1..ncap) of parts[0]. */
    int ncap, capacity;        /* 0 for other kinds */
    int async_paging;          /* rtl_model_options.async_paging */
    int nlayers;
    int *cap_filters;          /* [ncap][nlayers]: trn_net_set_capacity's arrays */
    int *cap_rows, *cap_inc;   /* [ncap + 1][nlayers]: active filters and input channels
                                * (row ncap: the whole network) */
    uint64_t switch_in, switch_out;           /* the last switch: parameter bytes */
    uint64_t switch_in_pages, switch_out_pages; /* and the page bytes advised */
    struct page_plan *plan;    /* [ncap][ncap]: capacity a -> b's ranges */
    /* batch-norm vectors per capacity (technique_fields.bn_per_capacity;
     * nested_bn): capacity k < ncap's in a mapping of the capacity_bn file,
     * bound in place of the weights file's at a switch */
    void *bn_map;
    size_t bn_map_len;
    unsigned bn_roles;         /* 0: none (a catalog from before the format) */
    const float **bn_cap;      /* [ncap]: capacity k's vectors, NULL for the largest */
    struct iovec *iov;         /* the plans' ranges of the mapping, as process_madvise takes them */
    int pidfd;                 /* this process, for process_madvise; -1: madvise per range */
    /* the pager (a thread of the model; 0: the caller's thread pages) */
    int pager, pager_stop;
    pthread_t pager_thread;
    pthread_mutex_t pager_mu;  /* guards capacity's writes, paged_cap, paged, pager_stop */
    pthread_cond_t pager_wake, pager_idle;
    int paged_cap;             /* the capacity whose pages were advised last */
    rtl_paging_stats paged;    /* what the pager (or the caller) moved so far */
    struct rtl_gtdp_cache *gtdp; /* GTDP part networks (gtdp.c), NULL before */
    trn_engine *engine;        /* its networks' engine: pool, threads (nn.h); none is shared */
};

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
static int map_rfile(const struct rtl_file *f, void **map, size_t *map_len, rtl_err *err);
static int map_file(const rtl_variant *v, const char *role, void **map, size_t *map_len, rtl_err *err)
{
    int i = file_index(v, role, err);
    return i < 0 ? -1 : map_rfile(&v->files[i], map, map_len, err);
}

/* Maps the installed file f read-only, its size checked: *map, *map_len. */
static int map_rfile(const struct rtl_file *f, void **map, size_t *map_len, rtl_err *err)
{
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

/* ---- shared mappings: a trunk's weights mapped once per catalog -------- */

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

/* Maps f once for every model of cat that asks (a trunk and the fragments
 * on it): *map, *len, until as many shared_unmap calls. */
static int shared_map(rtl_catalog *cat, const struct rtl_file *f, void **map, size_t *len, rtl_err *err)
{
    pthread_mutex_lock(&maps_lock);
    int rc = 0;
    size_t i = 0;
    while (i < cat->nmaps && cat->maps[i].file != f) i++;
    if (i == cat->nmaps) {
        struct rtl_shared_map *g = realloc(cat->maps, (cat->nmaps + 1) * sizeof *g);
        if (!g) rc = rtl_errf(err, "out of memory");
        else {
            cat->maps = g;
            g[i] = (struct rtl_shared_map){f, NULL, 0, 0};
            if ((rc = map_rfile(f, &g[i].map, &g[i].len, err)) == 0) cat->nmaps++;
        }
    }
    if (rc == 0) {
        cat->maps[i].refs++;
        *map = cat->maps[i].map;
        *len = cat->maps[i].len;
    }
    pthread_mutex_unlock(&maps_lock);
    return rc;
}

static void shared_unmap(rtl_catalog *cat, void *map)
{
    pthread_mutex_lock(&maps_lock);
    for (size_t i = 0; i < cat->nmaps; i++) {
        if (cat->maps[i].map != map || --cat->maps[i].refs > 0) continue;
        munmap(map, cat->maps[i].len);
        cat->maps[i] = cat->maps[--cat->nmaps];
        break;
    }
    pthread_mutex_unlock(&maps_lock);
}

/* Maps p's weights read-only: shared with the catalog's other models where
 * p->cat is set, p's own mapping otherwise (a nested model pages its
 * mapping). */
static int map_weights(struct part *p, rtl_err *err)
{
    int i = file_index(p->variant, "weights", err);
    if (i < 0) return -1;
    if (p->cat) return shared_map(p->cat, &p->variant->files[i], &p->map, &p->map_len, err);
    return map_rfile(&p->variant->files[i], &p->map, &p->map_len, err);
}

/* A fragment's parameters: layers 0..cut-1 in its trunk's weights (mapped
 * once per catalog), the rest in its own fragment file. */
static int fragment_load(struct part *p, rtl_catalog *cat, rtl_err *err)
{
    const rtl_variant *v = p->variant, *t = rtl_catalog_find(cat, v->trunk);
    const struct rtl_file *tw = t ? rtl_variant_role_file(t, "weights") : NULL;
    if (!tw) return rtl_errf(err, "variant '%s': its trunk '%s' has no weights file", v->id, v->trunk);
    p->cat = cat;
    if (shared_map(cat, tw, &p->map, &p->map_len, err) != 0) {
        p->cat = NULL;
        return -1;
    }
    if (map_file(v, "fragment", &p->frag_map, &p->frag_len, err) != 0) return -1;
    trn_err e;
    if (trn_weights_borrow_fragment(p->net, v->cut, p->map, p->map_len, tw->abs, p->frag_map, p->frag_len,
                                    rtl_variant_file(v, "fragment"), &e) != 0) {
        rtl_err_from_trn(err, &e);
        return rtl_err_prefix(err, "fragment of trunk '%s' at layer %d", v->trunk, v->cut);
    }
    return 0;
}

/* The options of a network whose parameters live in a file mapping: one
 * image a forward, inference only, parameters external. */
static trn_net_opts mapped_opts(const rtl_model *m)
{
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.external_params = 1;
    o.engine = m->engine;
    return o;
}

/* Builds the network of p->variant with its parameters in the mapping
 * (shared with cat's other models when cat is not NULL), on m's engine. */
static int part_load(const rtl_model *m, struct part *p, rtl_catalog *cat, rtl_err *err)
{
    trn_cfg *cfg = read_cfg(p->variant, err);
    if (!cfg) return -1;
    trn_net_opts o = mapped_opts(m);
    /* A fragment mostly runs from its cut, fed by its trunk: its lower
     * layers get buffers only if it ever runs them itself. */
    o.lazy_buffers = p->variant->trunk != NULL;
    trn_err e;
    p->net = trn_net_create(cfg, &o, &e);
    trn_cfg_free(cfg);
    if (!p->net) return rtl_err_from_trn(err, &e);
    if (p->variant->trunk) return fragment_load(p, cat, err);
    p->cat = cat;
    if (map_weights(p, err) != 0) {
        p->cat = NULL;
        return -1;
    }
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
    if (p->map && p->cat) shared_unmap(p->cat, p->map);
    else if (p->map) munmap(p->map, p->map_len);
    if (p->frag_map) munmap(p->frag_map, p->frag_len);
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
    if (part_load(m, p, m->kind == MODEL_NESTED ? NULL : m->cat, err) != 0) return -1;
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
    trn_net_opts o = mapped_opts(m);
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
    int n = trn_exits_count(m->exits);
    m->exit_layers = malloc((size_t)(n > 0 ? n : 1) * sizeof *m->exit_layers);
    if (!m->exit_layers) return rtl_errf(err, "variant '%s': out of memory", m->variant->id);
    for (int j = 0; j < n; j++) m->exit_layers[j] = trn_exit_at(m->exits, j);
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


/* ---- the paging plan and the pager ----------------------------------- *
 *
 * At open, for every ordered pair of capacities (a, b), the parameter bytes
 * active at the larger and not at the smaller are turned into page-aligned
 * ranges of the mapping (nested_plan): a downgrade releases the pages
 * holding only dropped parameters (rounding inward); an upgrade advises
 * the pages holding added parameters and none that the smaller capacity
 * uses (rounding outward, then leaving out the pages that capacity keeps
 * resident; gaps of up to PAGE_GAP such pages merged). Capacity a -> b is
 * then one process_madvise call over a precomputed list of ranges (one
 * madvise per range where the kernel refuses it): the switch walks no
 * layer and allocates nothing.
 *
 * The calls run inside rtl_model_set_capacity, on the caller's thread,
 * unless rtl_model_options.async_paging asks for a pager thread of the
 * model (started at open; when it cannot start, the caller pages): then
 * rtl_model_set_capacity returns once the network computes capacity k, and
 * the pager brings the mapping from the capacity whose pages it last
 * advised to the newest one asked (several switches made before it wakes
 * are one transition, from the first to the last). Measured on the 2-core
 * build machine, waking it costs the call more than the calls it takes
 * over (tests/bench/nested_switch.sh prints both), hence not the default.
 * Correctness never waits on it: the mapping is read-only and clean, so a
 * page released late or advised late is only faulted in again from the
 * page cache (or the file). rtl_model_paging_wait says when it finished
 * and what it moved. */

struct page_range {
    size_t off, len;
};

struct page_plan {         /* capacity a -> b (0-based), up when b > a */
    size_t first, count;   /* in m->iov */
    uint64_t bytes, pages; /* parameter bytes added/dropped; whole pages advised */
};

/* Collects ranges while the plan is built at open (growing there only). */
typedef struct page_run {
    struct page_range *v;
    size_t n, cap;
    size_t map_len;
    int up;
    size_t s, e, page;
    uint64_t pages;
    int oom;
} page_run;

/* Appends [a, b) to r's ranges (merged with the last when they touch). */
static void range_push(page_run *r, size_t a, size_t b)
{
    if (b <= a) return;
    r->pages += b - a;
    if (r->n && r->v[r->n - 1].off + r->v[r->n - 1].len == a) {
        r->v[r->n - 1].len += b - a;
        return;
    }
    if (r->n == r->cap) {
        size_t c = r->cap ? 2 * r->cap : 64;
        struct page_range *v = realloc(r->v, c * sizeof *v);
        if (!v) {
            r->oom = 1;
            return;
        }
        r->v = v;
        r->cap = c;
    }
    r->v[r->n++] = (struct page_range){a, b - a};
}

static void page_flush(page_run *r)
{
    if (r->e <= r->s) return;
    size_t a, b;
    if (r->up) {
        a = r->s / r->page * r->page;
        b = (r->e + r->page - 1) / r->page * r->page;
        if (b > r->map_len) b = r->map_len;
    } else {
        a = (r->s + r->page - 1) / r->page * r->page;
        b = r->e / r->page * r->page;
    }
    r->s = r->e = 0;
    range_push(r, a, b);
}

static void page_add(page_run *r, size_t s, size_t e)
{
    if (e <= s) return;
    /* Contiguous, or (paging in) within the pages the pending range
     * already advises: one range for both. */
    if (r->e > r->s && (r->e == s || (r->up && s / r->page <= (r->e - 1) / r->page + 1))) {
        r->e = e;
        return;
    }
    page_flush(r);
    r->s = s;
    r->e = e;
}

/* The parameter bytes active at `big` and not at `small` (rows and column
 * prefixes of every parameter, capacities 0-based, ncap = the whole
 * network) as ranges to page in (up) or out, appended to r. */
static uint64_t page_diff(const rtl_model *m, int small, int big, page_run *r)
{
    const struct part *p = &m->parts[0];
    int np, L = m->nlayers;
    const trn_param *t = trn_net_params(p->net, &np);
    const int *rs = m->cap_rows + (size_t)small * L, *is = m->cap_inc + (size_t)small * L;
    const int *rb = m->cap_rows + (size_t)big * L, *ib = m->cap_inc + (size_t)big * L;
    const int *fi = m->cap_inc + (size_t)m->ncap * L;
    uint64_t bytes = 0;
    r->pages = 0;
    for (int q = 0; q < np; q++) {
        const trn_param *x = &t[q];
        if (x->offset < 0) continue;
        int i = x->layer;
        size_t off = (size_t)x->offset, C = (size_t)x->cols;
        if (x->role != TRN_PARAM_WEIGHTS) { /* a vector: one entry per filter */
            bytes += (uint64_t)(rb[i] - rs[i]) * 4;
            page_add(r, off + (size_t)rs[i] * 4, off + (size_t)rb[i] * 4);
            continue;
        }
        size_t cs = C * (size_t)is[i] / (size_t)fi[i], cb = C * (size_t)ib[i] / (size_t)fi[i];
        for (int row = 0; row < rb[i]; row++) {
            size_t from = row < rs[i] ? cs : 0;
            bytes += (uint64_t)(cb - from) * 4;
            page_add(r, off + ((size_t)row * C + from) * 4, off + ((size_t)row * C + cb) * 4);
        }
    }
    page_flush(r);
    return bytes;
}

/* used[p] = 1 for every page of the mapping that holds a parameter byte
 * active at capacity cap (0-based). */
static void pages_used(const rtl_model *m, int cap, unsigned char *used, size_t page)
{
    int np, L = m->nlayers;
    const trn_param *t = trn_net_params(m->parts[0].net, &np);
    const int *rows = m->cap_rows + (size_t)cap * L, *inc = m->cap_inc + (size_t)cap * L;
    const int *fi = m->cap_inc + (size_t)m->ncap * L;
    memset(used, 0, (m->parts[0].map_len + page - 1) / page);
    for (int q = 0; q < np; q++) {
        const trn_param *x = &t[q];
        if (x->offset < 0) continue;
        int i = x->layer;
        size_t off = (size_t)x->offset, C = (size_t)x->cols;
        size_t c = x->role == TRN_PARAM_WEIGHTS ? C * (size_t)inc[i] / (size_t)fi[i] : (size_t)rows[i];
        size_t nr = x->role == TRN_PARAM_WEIGHTS ? (size_t)rows[i] : 1, ld = x->role == TRN_PARAM_WEIGHTS ? C : 0;
        if (c == ld) c *= nr, nr = 1; /* whole rows: one run */
        for (size_t row = 0; row < nr && c; row++) {
            size_t s = off + row * ld * 4, e = s + c * 4;
            for (size_t pg = s / page; pg <= (e - 1) / page; pg++) used[pg] = 1;
        }
    }
}

/* Appends the pages of [off, off + len) not in used to r, runs separated
 * by at most PAGE_GAP used pages merged (a used page is resident: advising
 * it again costs less than another call). */
#define PAGE_GAP 4
static void pages_unused(page_run *r, size_t off, size_t len, const unsigned char *used)
{
    size_t page = r->page, p0 = off / page, p1 = (off + len + page - 1) / page;
    for (size_t pg = p0; pg < p1;) {
        if (used[pg]) {
            pg++;
            continue;
        }
        size_t q = pg + 1;
        for (;;) {
            while (q < p1 && !used[q]) q++;
            size_t g = q;
            while (g < p1 && used[g] && g - q < PAGE_GAP) g++;
            if (g < p1 && !used[g] && g > q) q = g; /* a short gap: merged */
            else break;
        }
        range_push(r, pg * page, q * page < off + len ? q * page : off + len);
        pg = q;
    }
}

static int plan_iov(rtl_model *m, const struct page_range *ranges, size_t nranges, rtl_err *err);

/* Every transition's ranges (after nested_table). A downgrade a -> b
 * releases the whole pages holding only parameters of a that b drops; an
 * upgrade a -> b advises the pages holding parameters b adds and none that
 * a uses: a page a uses is resident already (a's runs touch it, and no
 * downgrade to a released it), so advising it again would only cost a
 * page-cache lookup per page. */
static int nested_plan(rtl_model *m, rtl_err *err)
{
    int n = m->ncap;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), npages = (m->parts[0].map_len + page - 1) / page;
    m->plan = calloc((size_t)n * (size_t)n, sizeof *m->plan);
    unsigned char *used = malloc(npages);
    page_run r = {.map_len = m->parts[0].map_len, .page = page}, out = r;
    if (!m->plan || !used) {
        free(used);
        return rtl_errf(err, "out of memory");
    }
    for (int a = 0; a < n; a++) {
        pages_used(m, a, used, page);
        for (int b = 0; b < n; b++) {
            if (a == b) continue;
            struct page_plan *pl = &m->plan[(size_t)a * n + b];
            out.up = b > a;
            pl->first = out.n;
            if (!out.up) {
                pl->bytes = page_diff(m, b, a, &out);
                pl->pages = out.pages;
            } else {
                r.n = 0;
                r.up = 1;
                pl->bytes = page_diff(m, a, b, &r);
                out.pages = 0;
                for (size_t i = 0; i < r.n && !r.oom; i++) pages_unused(&out, r.v[i].off, r.v[i].len, used);
                pl->pages = out.pages;
            }
            pl->count = out.n - pl->first;
        }
    }
    free(used);
    free(r.v);
    int rc = r.oom || out.oom ? rtl_errf(err, "out of memory") : plan_iov(m, out.v, out.n, err);
    free(out.v);
    return rc;
}

/* Advises the ranges of capacity a -> b (0-based): one process_madvise
 * call for all of them (Linux 5.10 for WILLNEED, 6.13 for DONTNEED on the
 * calling process), else, from the first refusal on, one madvise per
 * range. The advice is idempotent: a partial batch is simply redone. */
static int plan_apply(rtl_model *m, int a, int b)
{
    const struct page_plan *pl = &m->plan[(size_t)a * m->ncap + b];
    int advice = b > a ? MADV_WILLNEED : MADV_DONTNEED;
#ifdef SYS_process_madvise
    if (m->pidfd >= 0 && pl->count) {
        size_t i = pl->first, end = pl->first + pl->count;
        while (i < end) {
            size_t n = end - i < 1024 ? end - i : 1024, want = 0;
            for (size_t j = i; j < i + n; j++) want += m->iov[j].iov_len;
            long got = syscall(SYS_process_madvise, m->pidfd, m->iov + i, n, advice, 0u);
            if (got < 0 || (size_t)got != want) break;
            i += n;
        }
        if (i == end) return (int)((pl->count + 1023) / 1024);
        close(m->pidfd);
        m->pidfd = -1;
    }
#endif
    for (size_t i = pl->first; i < pl->first + pl->count; i++) (void)madvise(m->iov[i].iov_base, m->iov[i].iov_len, advice);
    return (int)pl->count;
}

/* The process_madvise batches of the plan (a process without pidfd_open
 * or process_madvise advises per range). */
static int plan_iov(rtl_model *m, const struct page_range *ranges, size_t nranges, rtl_err *err)
{
    m->pidfd = -1;
    if (!(m->iov = calloc(nranges ? nranges : 1, sizeof *m->iov))) return rtl_errf(err, "out of memory");
    for (size_t i = 0; i < nranges; i++)
        m->iov[i] = (struct iovec){(char *)m->parts[0].map + ranges[i].off, ranges[i].len};
#if defined(SYS_process_madvise) && defined(SYS_pidfd_open)
    m->pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0u);
    if (m->pidfd >= 0) (void)fcntl(m->pidfd, F_SETFD, FD_CLOEXEC);
#endif
    return 0;
}

/* Adds what a -> b moved, from t0 on, to the pager's totals (pager mutex
 * held, or no pager). */
static void paging_count(rtl_model *m, int a, int b, int syscalls, double t0)
{
    const struct page_plan *pl = &m->plan[(size_t)a * m->ncap + b];
    rtl_paging_stats *st = &m->paged;
    st->transitions++;
    st->ranges += pl->count;
    st->syscalls += (uint64_t)syscalls;
    if (b > a) st->page_in += pl->bytes, st->advised_in += pl->pages;
    else st->page_out += pl->bytes, st->advised_out += pl->pages;
    st->done_ms = rtl_now_ms();
    st->busy_ms += st->done_ms - t0;
}

static void *pager_main(void *arg)
{
    rtl_model *m = arg;
    pthread_mutex_lock(&m->pager_mu);
    for (;;) {
        while (!m->pager_stop && m->paged_cap == m->capacity) {
            pthread_cond_broadcast(&m->pager_idle);
            pthread_cond_wait(&m->pager_wake, &m->pager_mu);
        }
        if (m->pager_stop) break;
        int a = m->paged_cap - 1, b = m->capacity - 1;
        pthread_mutex_unlock(&m->pager_mu);
        double t0 = rtl_now_ms();
        int calls = plan_apply(m, a, b);
        pthread_mutex_lock(&m->pager_mu);
        paging_count(m, a, b, calls, t0);
        m->paged_cap = b + 1;
    }
    pthread_cond_broadcast(&m->pager_idle);
    pthread_mutex_unlock(&m->pager_mu);
    return NULL;
}

/* Starts the pager (no pager: the caller's thread pages). Signals stay
 * with the process's other threads. */
static void pager_start(rtl_model *m)
{
    if (pthread_mutex_init(&m->pager_mu, NULL) != 0) return;
    if (pthread_cond_init(&m->pager_wake, NULL) != 0) {
        pthread_mutex_destroy(&m->pager_mu);
        return;
    }
    if (pthread_cond_init(&m->pager_idle, NULL) != 0) {
        pthread_cond_destroy(&m->pager_wake);
        pthread_mutex_destroy(&m->pager_mu);
        return;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    m->pager = pthread_create(&m->pager_thread, NULL, pager_main, m) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!m->pager) {
        pthread_cond_destroy(&m->pager_idle);
        pthread_cond_destroy(&m->pager_wake);
        pthread_mutex_destroy(&m->pager_mu);
    }
}

static void pager_stop(rtl_model *m)
{
    if (!m->pager) return;
    pthread_mutex_lock(&m->pager_mu);
    m->pager_stop = 1;
    pthread_cond_signal(&m->pager_wake);
    pthread_mutex_unlock(&m->pager_mu);
    pthread_join(m->pager_thread, NULL);
    pthread_cond_destroy(&m->pager_idle);
    pthread_cond_destroy(&m->pager_wake);
    pthread_mutex_destroy(&m->pager_mu);
    m->pager = 0;
}

/* ---- batch-norm vectors per capacity ---------------------------------- *
 *
 * A nested model whose grown filters' old-to-new slices are trained keeps
 * the batch-norm vectors of every capacity but the largest in a file of its
 * own (role capacity_bn; technique_fields.bn_per_capacity names its format
 * version and the roles it holds; prune/README.md, "Freeze-&-grow"): a
 * 16-byte header ("CPBN", int32 version 1, int32 capacities ncap - 1,
 * uint32 roles as 1 << trn_param_role), then capacity 1, 2, ...'s vectors
 * in trn_net_vectors_count's layout (the active prefixes of the roles'
 * vectors, in table order). The file is mapped whole (a few kB: it stays
 * resident) and a switch binds the target capacity's vectors in place of
 * the weights file's (the largest capacity's), so capacity k computes what
 * it computes opened on its own. A manifest without bn_per_capacity is a
 * model of the earlier format (old-to-new slices zero, one set of
 * statistics): read as it is. */

#define BN_HEADER 16

static int bn_roles_of(const cJSON *roles, unsigned *mask, rtl_err *err)
{
    const cJSON *r;
    *mask = 0;
    cJSON_ArrayForEach(r, roles) {
        int found = 0;
        for (int q = 0; q < TRN_PARAM_ROLE_COUNT && !found; q++)
            if (q != TRN_PARAM_WEIGHTS && cJSON_IsString(r) && !strcmp(r->valuestring, trn_param_role_name(q)))
                *mask |= 1u << q, found = 1;
        if (!found)
            return rtl_errf(err, "manifest: technique_fields.bn_per_capacity.roles holds %s: not a vector role "
                            "(biases, scales, rolling_mean, rolling_variance)",
                            cJSON_IsString(r) ? r->valuestring : "a non-string");
    }
    return *mask ? 0 : rtl_errf(err, "manifest: technique_fields.bn_per_capacity.roles is missing or empty");
}

/* Checks the mapped file's header and size against the manifest and the
 * network; points bn_cap[k] at capacity k's vectors. */
static int bn_layout(rtl_model *m, const char *path, rtl_err *err)
{
    const unsigned char *b = m->bn_map;
    int32_t ver, ncap;
    uint32_t roles;
    memcpy(&ver, b + 4, 4), memcpy(&ncap, b + 8, 4), memcpy(&roles, b + 12, 4);
    if (memcmp(b, "CPBN", 4) != 0 || ver != 1)
        return rtl_errf(err, "%s: not a per-capacity batch-norm file of version 1 (header \"CPBN\", 1): the "
                        "file is damaged or newer than this runtime (rtl verify; update rtl)", path);
    if (ncap != m->ncap - 1 || roles != m->bn_roles)
        return rtl_errf(err, "%s: holds %d capacities with roles 0x%x, the manifest says %d with 0x%x: the file "
                        "belongs to another model", path, (int)ncap, (unsigned)roles, m->ncap - 1, m->bn_roles);
    trn_net *net = m->parts[0].net;
    size_t off = BN_HEADER;
    int rc = 0;
    for (int k = 0; k < m->ncap - 1 && rc == 0; k++) {
        trn_err e;
        if (trn_net_set_capacity(net, m->cap_filters + (size_t)k * m->nlayers, &e) != 0) {
            rc = rtl_err_from_trn(err, &e);
            break;
        }
        m->bn_cap[k] = (const float *)(const void *)(b + off);
        off += trn_net_vectors_count(net, m->bn_roles) * sizeof(float);
    }
    trn_err e;
    if (trn_net_set_capacity(net, NULL, &e) != 0 && rc == 0) rc = rtl_err_from_trn(err, &e);
    if (rc == 0 && off != m->bn_map_len)
        rc = rtl_errf(err, "%s: %zu bytes, but the capacities' batch-norm vectors take %zu: the file belongs to "
                      "another model or is damaged", path, m->bn_map_len, off);
    return rc;
}

static int nested_bn(rtl_model *m, rtl_err *err)
{
    cJSON *tf = cJSON_Parse(m->variant->fields_json);
    const cJSON *bn = tf ? cJSON_GetObjectItemCaseSensitive(tf, "bn_per_capacity") : NULL;
    int rc = 0;
    if (!bn || cJSON_IsFalse(bn)) goto out; /* the earlier format */
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(bn, "version");
    if (!cJSON_IsObject(bn) || !cJSON_IsNumber(ver) || ver->valuedouble != 1) {
        rc = rtl_errf(err, "variant '%s': technique_fields.bn_per_capacity is not {\"version\": 1, \"roles\": "
                      "[...]}: this runtime reads version 1 of the per-capacity batch-norm format (update rtl to "
                      "open this catalog)", m->variant->id);
        goto out;
    }
    if ((rc = bn_roles_of(cJSON_GetObjectItemCaseSensitive(bn, "roles"), &m->bn_roles, err)) != 0) goto out;
    if (!(m->bn_cap = calloc((size_t)m->ncap, sizeof *m->bn_cap))) {
        rc = rtl_errf(err, "out of memory");
        goto out;
    }
    if ((rc = map_file(m->variant, "capacity_bn", &m->bn_map, &m->bn_map_len, err)) != 0 ||
        (rc = bn_layout(m, rtl_variant_file(m->variant, "capacity_bn"), err)) != 0)
        goto out;
    trn_err e;
    if (trn_net_vectors_bind(m->parts[0].net, m->bn_roles, NULL, &e) != 0) rc = rtl_err_from_trn(err, &e);
out:
    cJSON_Delete(tf);
    return rc;
}

/* Capacity k (1-based) and its batch-norm vectors, bound in the layout of
 * capacity k (so after setting it; the forward lock, held, keeps any run
 * out between the two). */
static int switch_net(rtl_model *m, int k, trn_err *e)
{
    trn_net *net = m->parts[0].net;
    if (trn_net_set_capacity(net, m->cap_filters + (size_t)(k - 1) * m->nlayers, e) != 0) return -1;
    return m->bn_roles ? trn_net_vectors_bind(net, m->bn_roles, m->bn_cap[k - 1], e) : 0;
}

/* Open like a plain variant; the largest capacity is active. */
static int open_nested(rtl_model *m, rtl_err *err)
{
    if (open_plain(m, err) != 0 || nested_table(m, err) != 0 || nested_bn(m, err) != 0 ||
        nested_plan(m, err) != 0)
        return -1;
    m->paged_cap = m->capacity;
    if (m->async_paging) pager_start(m);
    return 0;
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
    int rc = switch_net(m, k, &e);
    if (rc != 0) return rtl_err_from_trn(err, &e);
    const struct page_plan *pl = &m->plan[(size_t)(m->capacity - 1) * m->ncap + (k - 1)];
    if (k > m->capacity) m->switch_in = pl->bytes, m->switch_in_pages = pl->pages;
    else m->switch_out = pl->bytes, m->switch_out_pages = pl->pages;
    m->output = NULL;
    if (m->pager) {
        pthread_mutex_lock(&m->pager_mu);
        m->capacity = k;
        pthread_mutex_unlock(&m->pager_mu);
        pthread_cond_signal(&m->pager_wake); /* after unlocking: the pager does not wake into a held lock */
    } else {
        double t0 = rtl_now_ms();
        int calls = plan_apply(m, m->capacity - 1, k - 1);
        paging_count(m, m->capacity - 1, k - 1, calls, t0);
        m->capacity = m->paged_cap = k;
    }
    return 0;
}

int rtl_model_paging_wait(rtl_model *m, rtl_paging_stats *out)
{
    if (m->pager) {
        pthread_mutex_lock(&m->pager_mu);
        while (m->paged_cap != m->capacity) pthread_cond_wait(&m->pager_idle, &m->pager_mu);
        if (out) *out = m->paged;
        pthread_mutex_unlock(&m->pager_mu);
    } else if (out)
        *out = m->paged;
    return m->pager;
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
     * borrowed from the parent's mapping when it is stored as a fragment,
     * part_load): it opens as a plain one; rtl_model_run_tasks runs the
     * shared trunk once and only the head layers per head. */
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
    if (!(m->engine = trn_engine_new())) {
        rtl_errf(err, "out of memory");
        goto fail;
    }
    trn_engine_set_threads(m->engine, options ? options->threads : 0);
    m->async_paging = options && options->async_paging;
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
    pager_stop(m);
    trn_exits_free(m->exits);
    free(m->exit_layers);
    if (m->exits_map) munmap(m->exits_map, m->exits_map_len);
    if (m->bn_map) munmap(m->bn_map, m->bn_map_len);
    free(m->bn_cap);
    for (size_t i = 0; i < m->nparts; i++) part_free(&m->parts[i]);
    free(m->input);
    free(m->layer_ms);
    free(m->split_out);
    free(m->cap_filters);
    free(m->cap_rows);
    free(m->cap_inc);
    free(m->plan);
    if (m->iov && m->pidfd >= 0) close(m->pidfd);
    free(m->iov);
    rtl_gtdp_cache_free(m->gtdp);
    trn_engine_free(m->engine); /* after every network that runs on it */
    free(m);
}

struct rtl_gtdp_cache **rtl_model_gtdp_cache(rtl_model *m) { return &m->gtdp; }
const struct rtl_gtdp_cache *rtl_model_gtdp_cache_get(const rtl_model *m) { return m->gtdp; }
trn_engine *rtl_model_engine(const rtl_model *m) { return m->engine; }

const rtl_variant *rtl_model_variant(const rtl_model *m) { return m->variant; }
size_t rtl_model_classes(const rtl_model *m) { return m->classes; }
const char *rtl_model_label(const rtl_model *m, size_t k) { return k < m->classes ? m->labels[k] : NULL; }
const float *rtl_model_output(const rtl_model *m) { return m->output; }

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
    for (size_t i = 0; i < m->nparts; i++) n += m->parts[i].map_len + m->parts[i].frag_len;
    return n;
}

int rtl_model_run(rtl_model *m, const float *x, rtl_err *err)
{
    if (!x) return rtl_errf(err, "variant '%s': no input", m->variant->id);
    trn_err e;
    m->output = NULL;
    m->exit_taken = -1;
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
    if (rc != 0) return rtl_err_from_trn(err, &e);
    return 0;
}

int rtl_model_exits(const rtl_model *m) { return m->exits ? trn_exits_count(m->exits) : 0; }
int rtl_model_exit_taken(const rtl_model *m) { return m->exit_taken; }
int rtl_model_exit_layer(const rtl_model *m, int j) { return m->exits ? trn_exit_at(m->exits, j) : -1; }

int rtl_model_describe(const rtl_model *m, rtl_model_info *out, size_t out_size, rtl_err *err)
{
    rtl_model_info in;
    memset(&in, 0, sizeof in); /* the padding too: callers may compare bytes */
    in.variant = m->variant;
    in.input_size = rtl_model_input_size(m);
    in.classes = m->classes;
    in.layers = rtl_model_layers(m);
    in.capacities = m->ncap;
    in.capacity = m->capacity;
    in.exits = rtl_model_exits(m);
    in.exit_layers = m->exits ? m->exit_layers : NULL;
    in.exit_taken = m->exit_taken;
    rtl_model_input_shape(m, &in.c, &in.h, &in.w);
    rtl_model_switch_bytes(m, &in.last_switch);
    return rtl_describe_copy(out, out_size, &in, sizeof in, RTL_MODEL_INFO_V1, "rtl_model_info", err);
}

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
    out->threads = trn_engine_threads(m->engine);
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
const rtl_catalog *rtl_model_catalog(const rtl_model *m) { return m->cat; }

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
    int rc = trn_net_forward_range(m->parts[0].net, first, last, x, &e);
    if (rc != 0) return rtl_err_from_trn(err, &e);
    *out = trn_net_layer_output(m->parts[0].net, last);
    *nout = rtl_model_cut_floats(m, last + 1);
    if (last == layers - 1) {
        m->output = trn_net_output(m->parts[0].net);
    }
    return 0;
}

int rtl_model_run_from_fragment(rtl_model *trunk, const rtl_model *frag, rtl_err *err)
{
    const rtl_variant *fv = frag->variant;
    int cut = fv->cut;
    if (!fv->trunk || strcmp(fv->trunk, trunk->variant->id) || !frag->output || trunk->exits ||
        cut >= rtl_model_layers(trunk) || !rtl_model_cut_ok(trunk, cut) ||
        rtl_model_cut_floats(trunk, cut) != rtl_model_cut_floats(frag, cut))
        return 0;
    const float *o;
    size_t on;
    const float *t = trn_net_layer_output(frag->parts[0].net, cut - 1);
    return rtl_model_run_range(trunk, cut, rtl_model_layers(trunk) - 1, t, rtl_model_cut_floats(trunk, cut), &o, &on,
                               err) == 0 ? 1 : -1;
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
