/*
 * checkpoint.c: training checkpoints, everything a resumed run needs to
 * continue bit for bit.
 *
 * Format (little-endian):
 *   offset 0   "TRNCKPT1"                 magic
 *          8   uint32 version (1), uint32 0
 *         16   uint64 seed                the network's seed
 *         24   float  avg_loss, uint32 0  the running loss shown to users
 *         32   uint64 W                   bytes of the weights that follow
 *         40   W bytes                    a Darknet .weights file (seen included)
 *     40 + W   uint64 U                   floats of update arrays that follow
 *     48 + W   U float32                  the update (momentum) arrays, in
 *                                         parameter-table order
 * 48 + W + 4U  uint64 FNV-1a 64 of every byte before it
 */
#include "net.h"
#include "trn.h"

#include <stdlib.h>
#include <errno.h>
#include <string.h>

#define CKPT_MAGIC "TRNCKPT1"

typedef struct writer {
    FILE *f;
    uint64_t hash;
} writer;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

#define FNV_INIT 0xcbf29ce484222325ULL

static int put(void *ctx, const void *p, size_t n)
{
    writer *w = ctx;
    w->hash = fnv(w->hash, p, n);
    return fwrite(p, 1, n, w->f) == n ? 0 : -1;
}

static size_t update_floats(const trn_net *net)
{
    size_t n = 0;
    for (int i = 0; i < net->np; i++)
        if (net->params[i].update) n += net->params[i].count;
    return n;
}

int trn_checkpoint_save(const trn_net *net, const char *path, float avg_loss, trn_err *err)
{
    uint64_t seed = net->opts.seed;
    if (net->opts.infer_only)
        return trn_errf(err, "%s: an inference-only network has no training state", path);
    trn_atomic a;
    if (trn_atomic_open(&a, path, err) != 0) return -1;
    writer w = {a.f, FNV_INIT};
    uint32_t ver[2] = {1, 0}, pad = 0;
    uint64_t wbytes = trn_weights_bytes(net), ufloats = update_floats(net);
    int bad = put(&w, CKPT_MAGIC, 8) || put(&w, ver, sizeof ver) || put(&w, &seed, 8) ||
              put(&w, &avg_loss, 4) || put(&w, &pad, 4) || put(&w, &wbytes, 8) ||
              trn_weights_write(net, put, &w) || put(&w, &ufloats, 8);
    for (int i = 0; !bad && i < net->np; i++)
        if (net->params[i].update)
            bad = put(&w, net->params[i].update, net->params[i].count * sizeof(float));
    uint64_t h = w.hash;
    if (bad || fwrite(&h, 8, 1, a.f) != 1) {
        trn_errf(err, "cannot write %s: %s", trn_atomic_name(&a), strerror(errno));
        trn_atomic_abort(&a);
        return -1;
    }
    return trn_atomic_commit(&a, err);
}

int trn_checkpoint_load(trn_net *net, const char *path, float *avg_loss, trn_err *err)
{
    if (net->opts.infer_only || !net->param_block)
        return trn_errf(err, "%s: a checkpoint needs a training network", path);
    char *buf;
    size_t len;
    if (trn_read_file(path, 0, &buf, &len, err) != 0) return -1;
    const unsigned char *b = (const unsigned char *)buf;
    int rc = -1;
    uint32_t ver;
    uint64_t wbytes, ufloats, hash;
    if (len < 48 || memcmp(b, CKPT_MAGIC, 8) != 0) {
        trn_errf(err, "%s: not a trainer checkpoint (no %s magic at byte offset 0)", path, CKPT_MAGIC);
        goto out;
    }
    memcpy(&ver, b + 8, 4);
    if (ver != 1) {
        trn_errf(err, "%s: checkpoint version %u is not supported (this trainer reads 1)", path, ver);
        goto out;
    }
    memcpy(&wbytes, b + 32, 8);
    if (wbytes != trn_weights_bytes(net)) {
        trn_errf(err, "%s: the checkpoint records %llu bytes of weights (byte offset 32) but this "
                 "cfg has %zu: it belongs to another cfg", path,
                 (unsigned long long)wbytes, trn_weights_bytes(net));
        goto out;
    }
    if (len - 40 < wbytes + 8) {
        trn_errf(err, "%s: the file ends at byte offset %zu, inside its %llu bytes of weights "
                 "(byte offsets 40..%llu): it is truncated; delete it to start over", path, len,
                 (unsigned long long)wbytes, (unsigned long long)(40 + wbytes + 8));
        goto out;
    }
    memcpy(&ufloats, b + 40 + wbytes, 8);
    size_t want = 48 + wbytes + ufloats * 4 + 8;
    if (ufloats != update_floats(net) || len != want) {
        trn_errf(err, "%s: the file has %zu bytes where %zu were expected (update arrays at byte "
                 "offset %llu): it is truncated or belongs to another cfg", path, len, want,
                 (unsigned long long)(48 + wbytes));
        goto out;
    }
    memcpy(&hash, b + len - 8, 8);
    if (fnv(FNV_INIT, b, len - 8) != hash) {
        trn_errf(err, "%s: the checksum at byte offset %zu does not match the contents: the file "
                 "is damaged", path, len - 8);
        goto out;
    }
    if (trn_weights_load_mem(net, b + 40, wbytes, 0, path, err) != 0) goto out;
    size_t off = 48 + wbytes;
    for (int i = 0; i < net->np; i++) {
        trn_param *p = &net->params[i];
        if (!p->update) continue;
        memcpy(p->update, b + off, p->count * sizeof(float));
        off += p->count * sizeof(float);
    }
    uint64_t seed;
    memcpy(&seed, b + 16, 8);
    trn_net_reseed(net, seed);
    if (avg_loss) memcpy(avg_loss, b + 24, 4);
    rc = 0;
out:
    free(buf);
    return rc;
}
