/*
 * weights.c: Darknet .weights files.
 *
 * Format (all little-endian, as Darknet writes them on x86 and ARM):
 *   int32 major, int32 minor, int32 revision
 *   seen: uint64 when major*10 + minor >= 2 and major < 1000 and
 *         minor < 1000 (files since Darknet 0.2), else int32
 *   then, per layer in cfg order (layers with dontload/dontsave skipped),
 *   the layer's parameter arrays as float32:
 *     convolutional: biases[n], [scales[n], rolling_mean[n],
 *                    rolling_variance[n] if batch_normalize],
 *                    weights[n][c/groups][size][size]
 *     connected:     biases[out], weights[out][in],
 *                    [scales[out], rolling_mean[out], rolling_variance[out]]
 *     other layers:  nothing
 *   When major or minor > 1000, connected weights are stored transposed
 *   ([in][out]); they are transposed back on load (not when borrowed).
 * Nothing may follow the last array. We always write version 0.2.0 with a
 * 64-bit seen, i.e. a 20-byte header.
 */
#include "net.h"

#include <stdlib.h>
#include <errno.h>
#include <string.h>

typedef struct wheader {
    int32_t major, minor, revision;
    uint64_t seen;
    size_t bytes;  /* header size: 16 or 20 */
    int transpose;
} wheader;

/* The one place of Darknet's header rule (darknet's load_weights_upto:
 * (major*10 + minor) >= 2 && major < 1000 && minor < 1000), computed in
 * 64 bits so that a hostile header (major = 2^31-1) cannot overflow. */
size_t trn_weights_header_bytes(int32_t major, int32_t minor)
{
    return ((int64_t)major * 10 + minor) >= 2 && major < 1000 && minor < 1000 ? 20 : 16;
}

int trn_weights_header_transposed(int32_t major, int32_t minor)
{
    return major > 1000 || minor > 1000;
}

static void decode_header(const unsigned char *b, wheader *h)
{
    memcpy(&h->major, b, 4);
    memcpy(&h->minor, b + 4, 4);
    memcpy(&h->revision, b + 8, 4);
    h->bytes = trn_weights_header_bytes(h->major, h->minor);
    int wide = h->bytes == 20;
    if (wide) {
        memcpy(&h->seen, b + 12, 8);
    } else {
        int32_t s;
        memcpy(&s, b + 12, 4);
        h->seen = (uint64_t)(int64_t)s;
    }
    h->transpose = trn_weights_header_transposed(h->major, h->minor);
}

/* Bytes of the parameter arrays a load reads (dontload layers skipped). */
static size_t load_bytes(const trn_net *net)
{
    size_t n = 0;
    for (int i = 0; i < net->np; i++)
        if (!net->layers[net->params[i].layer].dontload) n += net->params[i].count * sizeof(float);
    return n;
}

size_t trn_weights_bytes(const trn_net *net)
{
    size_t n = 20;
    for (int i = 0; i < net->np; i++)
        if (net->params[i].offset >= 0) n += net->params[i].count * sizeof(float);
    return n;
}

/* dst (rows, cols) = transpose of src (cols, rows). */
static int transpose(float *m, int rows, int cols)
{
    size_t n = (size_t)rows * cols;
    float *t = malloc(n * sizeof *t);
    if (!t) return -1;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) t[(size_t)r * cols + c] = m[(size_t)c * rows + r];
    memcpy(m, t, n * sizeof *t);
    free(t);
    return 0;
}

static int after_load(trn_net *net, const wheader *h, const char *name, trn_err *err)
{
    net->seen = h->seen;
    if (!h->transpose) return 0;
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        if (p->role == TRN_PARAM_WEIGHTS && net->layers[p->layer].ops->weights_transposed &&
            !net->layers[p->layer].dontload && transpose(p->data, p->rows, p->cols) != 0)
            return trn_errf(err, "%s: out of memory transposing layer %d", name, p->layer);
    }
    return 0;
}

static void describe_param(const trn_net *net, const trn_param *p, char *buf, size_t size)
{
    const trn_layer *l = &net->layers[p->layer];
    snprintf(buf, size, "layer %d ([%s], cfg line %d) %s: %zu floats", p->layer, l->type, l->line,
             trn_param_role_name(p->role), p->count);
}

/* A size mismatch: too short names the first array that does not fit,
 * too long the leftover bytes. */
static int size_error(const trn_net *net, size_t have, size_t header, const char *name, trn_err *err)
{
    size_t need = header + load_bytes(net);
    if (have > need)
        return trn_errf(err, "%s: %zu bytes are left over at byte offset %zu, after the last "
                        "layer: the weights do not belong to this cfg", name, have - need, need);
    size_t off = header;
    for (int i = 0; i < net->np; i++) {
        const trn_param *p = &net->params[i];
        if (net->layers[p->layer].dontload) continue;
        size_t bytes = p->count * sizeof(float);
        if (off + bytes > have) {
            char what[200];
            describe_param(net, p, what, sizeof what);
            return trn_errf(err, "%s: the file ends at byte offset %zu inside %s, which starts at "
                            "byte offset %zu (%zu bytes needed in all): the file is truncated or "
                            "belongs to another cfg", name, have, what, off, need);
        }
        off += bytes;
    }
    return trn_errf(err, "%s: internal size error", name);
}

/* Reads the header of a buffer of len bytes into h; -1 when it is shorter. */
static int header_of(const unsigned char *b, size_t len, wheader *h, const char *name, trn_err *err)
{
    if (len < 16)
        return trn_errf(err, "%s: the file ends at byte offset %zu inside the header (at least 16 "
                        "bytes): not a weights file", name, len);
    decode_header(b, h);
    if (len < h->bytes)
        return trn_errf(err, "%s: the file ends at byte offset %zu inside the %zu-byte header of "
                        "version %d.%d", name, len, h->bytes, h->major, h->minor);
    return 0;
}

/* Whether the parameters can point into the buffer b with header h. */
static int borrow_check(const trn_net *net, const wheader *h, const unsigned char *b, const char *name, trn_err *err)
{
    if (!net->opts.infer_only)
        return trn_errf(err, "%s: borrowed weights need an inference-only network", name);
    if (h->transpose)
        return trn_errf(err, "%s: version %d.%d stores transposed connected weights, which "
                        "cannot be borrowed: load with a copy", name, h->major, h->minor);
    if ((uintptr_t)b % sizeof(float))
        return trn_errf(err, "%s: the buffer is not 4-byte aligned", name);
    for (int i = 0; i < net->np; i++)
        if (net->layers[net->params[i].layer].dontload)
            return trn_errf(err, "%s: layer %d has dontload=1: its parameters cannot be "
                            "borrowed", name, net->params[i].layer);
    return 0;
}

/* The parameters now point into a borrowed buffer. */
static void borrowed(trn_net *net)
{
    trn_net_release(net, net->param_block);
    net->param_block = NULL;
    net->borrowed = 1;
    net->borrows++;
    net->params_ready = 1;
    free(net->home); /* pointers into an earlier buffer */
    net->home = NULL;
}

int trn_weights_load_mem(trn_net *net, const void *buf, size_t len, int borrow, const char *name,
                         trn_err *err)
{
    const unsigned char *b = buf;
    wheader h;
    if (header_of(b, len, &h, name, err) != 0) return -1;
    if (len != h.bytes + load_bytes(net)) return size_error(net, len, h.bytes, name, err);
    if (borrow) {
        if (borrow_check(net, &h, b, name, err) != 0) return -1;
    } else if (!net->param_block) {
        return trn_errf(err, "%s: the network has external parameters: load with borrow=1", name);
    }
    size_t off = h.bytes;
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        if (net->layers[p->layer].dontload) continue;
        if (borrow)
            p->data = (float *)(uintptr_t)(b + off);
        else
            memcpy(p->data, b + off, p->count * sizeof(float));
        off += p->count * sizeof(float);
    }
    if (borrow) borrowed(net);
    return after_load(net, &h, name, err);
}

size_t trn_weights_prefix_bytes(const trn_net *net, int cut)
{
    size_t n = 0;
    for (int i = 0; i < net->np; i++)
        if (net->params[i].layer < cut && !net->layers[net->params[i].layer].dontload)
            n += net->params[i].count * sizeof(float);
    return n;
}

int trn_weights_borrow_fragment(trn_net *net, int cut, const void *trunk, size_t tlen, const char *tname,
                                const void *frag, size_t flen, const char *fname, trn_err *err)
{
    const unsigned char *tb = trunk, *fb = frag;
    wheader th, fh;
    if (cut < 1 || cut >= net->n)
        return trn_errf(err, "%s: cut %d is not between layer 1 and layer %d", fname, cut, net->n - 1);
    if (header_of(tb, tlen, &th, tname, err) != 0 || header_of(fb, flen, &fh, fname, err) != 0 ||
        borrow_check(net, &th, tb, tname, err) != 0 || borrow_check(net, &fh, fb, fname, err) != 0)
        return -1;
    size_t pre = trn_weights_prefix_bytes(net, cut), rest = load_bytes(net) - pre;
    if (tlen < th.bytes + pre)
        return trn_errf(err, "%s: %zu bytes, but the layers 0..%d of the fragment %s need %zu: not its trunk",
                        tname, tlen, cut - 1, fname, th.bytes + pre);
    if (flen != fh.bytes + rest)
        return trn_errf(err, "%s: %zu bytes, but its layers %d.. need %zu after the %zu-byte header: the "
                        "fragment does not belong to this cfg", fname, flen, cut, rest, fh.bytes);
    size_t toff = th.bytes, foff = fh.bytes;
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        size_t *off = p->layer < cut ? &toff : &foff;
        p->data = (float *)(uintptr_t)((p->layer < cut ? tb : fb) + *off);
        *off += p->count * sizeof(float);
    }
    borrowed(net);
    return after_load(net, &fh, fname, err);
}

int trn_weights_load(trn_net *net, const char *path, trn_err *err)
{
    if (!net->param_block)
        return trn_errf(err, "%s: the network has external or borrowed parameters: it cannot "
                        "load a copy", path);
    size_t have;
    FILE *f = trn_fopen_sized(path, &have, err);
    if (!f) return -1;
    unsigned char hb[20] = {0};
    size_t got = fread(hb, 1, have < 20 ? have : 20, f);
    if (got < 16 || got != (have < 20 ? have : 20)) {
        fclose(f);
        return trn_errf(err, "%s: the file ends at byte offset %zu inside the header (at least 16 "
                        "bytes): not a weights file", path, got);
    }
    wheader h;
    decode_header(hb, &h);
    int rc = -1;
    if (have < h.bytes) {
        trn_errf(err, "%s: the file ends at byte offset %zu inside the %zu-byte header of version "
                 "%d.%d", path, have, h.bytes, h.major, h.minor);
        goto out;
    }
    if (have != h.bytes + load_bytes(net)) {
        size_error(net, have, h.bytes, path, err);
        goto out;
    }
    if (fseek(f, (long)h.bytes, SEEK_SET) != 0) {
        trn_errf(err, "%s: cannot seek", path);
        goto out;
    }
    /* The size matches, so only an I/O error can stop the reads midway. */
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        if (net->layers[p->layer].dontload) continue;
        if (trn_fread_exact(f, p->data, p->count * sizeof(float), path, err) != 0) {
            char what[200];
            describe_param(net, p, what, sizeof what);
            trn_err_prefix(err, "reading %s", what);
            goto out;
        }
    }
    rc = after_load(net, &h, path, err);
out:
    fclose(f);
    return rc;
}

int trn_weights_write(const trn_net *net, int (*put)(void *ctx, const void *p, size_t n), void *ctx)
{
    int32_t head[3] = {0, 2, 0};
    uint64_t seen = net->seen;
    if (put(ctx, head, sizeof head) || put(ctx, &seen, sizeof seen)) return -1;
    for (int i = 0; i < net->np; i++) {
        const trn_param *p = &net->params[i];
        if (p->offset >= 0 && put(ctx, p->data, p->count * sizeof(float))) return -1;
    }
    return 0;
}

static int put_file(void *ctx, const void *p, size_t n)
{
    return fwrite(p, 1, n, ctx) == n ? 0 : -1;
}

int trn_weights_save(const trn_net *net, const char *path, trn_err *err)
{
    if (!net->params_ready)
        return trn_errf(err, "%s: the network has no parameters to save", path);
    trn_atomic a;
    if (trn_atomic_open(&a, path, err) != 0) return -1;
    if (trn_weights_write(net, put_file, a.f) != 0) {
        trn_errf(err, "cannot write %s: %s", trn_atomic_name(&a), strerror(errno));
        trn_atomic_abort(&a);
        return -1;
    }
    return trn_atomic_commit(&a, err);
}
