/*
 * fragment.c: heads and specialised models stored as fragments on their
 * trunk (docs: catalog/README.md, Fragments; DESIGN.md's fragments decision).
 *
 * A head (prune retarget) or a specialised model (prune specialise) is its
 * parent's layers 0..cut-1, frozen and copied byte for byte, plus layers
 * trained for its own task. `catalog pack` stores such a variant, when its
 * parent is packed whole beside it, as
 *   variants/<id>/variant.cfg        the whole network's cfg (as before)
 *   variants/<id>/fragment.weights   role "fragment": the variant's own
 *                                    .weights header, then the parameter
 *                                    arrays of layers cut.. only
 * and a "fragment_of" object {trunk, version, cut, trunk_sha256}: the trunk
 * variant, the catalog version it is in, the cut and the SHA-256 of the
 * trunk's weights file, whose arrays of layers 0..cut-1 complete the
 * fragment. The trunk's bytes are compared with the variant's before it is
 * cut: a variant whose lower layers are not its parent's stays whole.
 * Nothing is written: the fragment is the source weights file with the
 * trunk's byte range left out (cat_pack_file.skip_*).
 */
#include "cat.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WEIGHTS_MAX ((size_t)1 << 31)

/* The header size of the .weights bytes b (len >= 8), or 0 when too short. */
static size_t header_bytes(const unsigned char *b, size_t len)
{
    int32_t major, minor;
    if (len < 20) return 0;
    memcpy(&major, b, 4);
    memcpy(&minor, b + 4, 4);
    return trn_weights_header_bytes(major, minor);
}

/* The bytes of the parameter arrays of cfg's layers 0..cut-1; -1 with err
 * when cfg does not build or has no layer cut. */
static int prefix_bytes(const char *cfg_path, int cut, size_t *out, int *layers, trn_err *err)
{
    trn_cfg *cfg = trn_cfg_read(cfg_path, err);
    if (!cfg) return -1;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.external_params = 1;
    trn_net *net = trn_net_create(cfg, &o, err);
    trn_cfg_free(cfg);
    if (!net) return -1;
    *layers = trn_net_layers(net);
    *out = trn_weights_prefix_bytes(net, cut);
    trn_net_free(net);
    return 0;
}

int cat_fragment_plan(const char *cfg_path, struct cat_pack_file *w, const char *trunk_weights, int cut, trn_err *err)
{
    size_t pre;
    int layers;
    if (prefix_bytes(cfg_path, cut, &pre, &layers, err) != 0) return trn_err_prefix(err, "fragment of %s", w->source);
    if (cut < 1 || cut >= layers) return 0;
    char *v = NULL, *t = NULL;
    size_t vn, tn;
    int rc = -1;
    if (trn_read_file(w->source, WEIGHTS_MAX, &v, &vn, err) != 0 ||
        trn_read_file(trunk_weights, WEIGHTS_MAX, &t, &tn, err) != 0)
        goto out;
    size_t vh = header_bytes((unsigned char *)v, vn), th = header_bytes((unsigned char *)t, tn);
    rc = 0;
    if (!vh || !th || vn < vh + pre || tn < th + pre || memcmp(v + vh, t + th, pre) != 0 || vh + pre == vn)
        goto out; /* not its trunk's bytes (or nothing after the cut): kept whole */
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (unsigned char *)v, vh);
    crypto_hash_sha256_update(&st, (unsigned char *)v + vh + pre, vn - vh - pre);
    crypto_hash_sha256_final(&st, w->sha256);
    w->skip_off = vh;
    w->skip_len = pre;
    w->size = vn - pre;
    rc = 1;
out:
    free(v);
    free(t);
    return rc;
}

/* ---- export: any variant back as a whole Darknet cfg + weights ------------- */

/* The file of var with role, or NULL. */
static const cJSON *role_file(const cJSON *var, const char *role)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(var, "files"))
        if (!strcmp(cat_json_str(f, "role", ""), role)) return f;
    return NULL;
}

/* Reads root/<path of f> after checking its size and SHA-256 against f. */
static int read_checked(const char *root, const cJSON *f, char **buf, size_t *len, char *path, size_t psize,
                        trn_err *err)
{
    uint8_t sha[32];
    char hex[65];
    snprintf(path, psize, "%s/%s", root, cat_json_str(f, "path", ""));
    if (trn_read_file(path, WEIGHTS_MAX, buf, len, err) != 0) return -1;
    crypto_hash_sha256((unsigned char *)sha, (unsigned char *)*buf, *len);
    rtl_sha256_hex(sha, hex);
    if (*len != (size_t)cat_json_num(f, "size", -1) || strcmp(hex, cat_json_str(f, "sha256", ""))) {
        free(*buf);
        *buf = NULL;
        return trn_errf(err, "%s: its size or SHA-256 is not the manifest's: the copy is damaged", path);
    }
    return 0;
}

/* The whole weights of fragment var: its header, its trunk's arrays of
 * layers 0..cut-1, then its own. */
static int whole_weights(const cJSON *m, const cJSON *var, const char *root, const char *cfg_path, char **out,
                         size_t *olen, trn_err *err)
{
    const cJSON *fo = cJSON_GetObjectItemCaseSensitive(var, "fragment_of");
    const char *tid = cat_json_str(fo, "trunk", "");
    const cJSON *tv = NULL, *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(m, "variants"))
        if (!strcmp(cat_json_str(x, "id", ""), tid)) tv = x;
    const cJSON *tw = tv ? role_file(tv, "weights") : NULL, *ff = role_file(var, "fragment");
    if (!tw || !ff || strcmp(cat_json_str(tw, "sha256", ""), cat_json_str(fo, "trunk_sha256", "")))
        return trn_errf(err, "variant '%s': its trunk '%s' is not in the catalog, or not the build it was cut "
                        "from (catalog validate says which)", cat_json_str(var, "id", ""), tid);
    int cut = (int)cat_json_num(fo, "cut", 0), layers;
    size_t pre, fn, tn;
    char *f = NULL, *t = NULL, path[4096];
    if (prefix_bytes(cfg_path, cut, &pre, &layers, err) != 0 ||
        read_checked(root, ff, &f, &fn, path, sizeof path, err) != 0 ||
        read_checked(root, tw, &t, &tn, path, sizeof path, err) != 0) {
        free(f);
        return -1;
    }
    size_t fh = header_bytes((unsigned char *)f, fn), th = header_bytes((unsigned char *)t, tn);
    int rc = -1;
    if (!fh || !th || tn < th + pre)
        trn_errf(err, "variant '%s': its fragment or trunk is not a weights file of its cfg", cat_json_str(var, "id", ""));
    else if (!(*out = malloc(fn + pre)))
        trn_errf(err, "out of memory");
    else {
        memcpy(*out, f, fh);
        memcpy(*out + fh, t + th, pre);
        memcpy(*out + fh + pre, f + fh, fn - fh);
        *olen = fn + pre;
        rc = 0;
    }
    free(f);
    free(t);
    return rc;
}

int cat_export_darknet(const char *manifest, const char *id, const char *out_dir, trn_err *err)
{
    cJSON *m = cat_json_load(manifest, (size_t)64 << 20, err);
    if (!m) return -1;
    char root[4096], cfg_path[4096], out[4200];
    snprintf(root, sizeof root, "%s", manifest);
    char *slash = strrchr(root, '/');
    if (slash) *slash = '\0';
    else strcpy(root, ".");
    const cJSON *var = NULL, *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(m, "variants"))
        if (!strcmp(cat_json_str(x, "id", ""), id)) var = x;
    const cJSON *cf = var ? role_file(var, "cfg") : NULL, *wf = var ? role_file(var, "weights") : NULL;
    char *cfg = NULL, *w = NULL;
    size_t cn, wn;
    int rc = -1;
    if (!cf)
        trn_errf(err, "%s: no variant '%s' with a cfg file (catalog inspect lists the variants)", manifest, id);
    else if (mkdir(out_dir, 0777) != 0 && errno != EEXIST)
        trn_errf(err, "cannot create the folder %s: %s", out_dir, strerror(errno));
    else if (read_checked(root, cf, &cfg, &cn, cfg_path, sizeof cfg_path, err) != 0)
        ;
    else if (wf ? read_checked(root, wf, &w, &wn, out, sizeof out, err)
                : whole_weights(m, var, root, cfg_path, &w, &wn, err))
        ;
    else if (snprintf(out, sizeof out, "%s/%s.cfg", out_dir, id), trn_write_file_atomic(out, cfg, cn, err) != 0)
        ;
    else if (snprintf(out, sizeof out, "%s/%s.weights", out_dir, id), trn_write_file_atomic(out, w, wn, err) != 0)
        ;
    else
        rc = 0;
    free(cfg);
    free(w);
    cJSON_Delete(m);
    return rc;
}
