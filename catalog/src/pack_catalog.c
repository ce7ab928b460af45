/*
 * pack_catalog.c: `catalog pack`'s run (cat_pack_catalog, cat.h): the
 * variants read and winnowed into a manifest (cat_build), then the outputs
 * in order: OUT_DIR, a development key when none is given, the archive
 * (cat_pack), its signature, manifest.json and winnowed.json last; a
 * failure removes what the run made.
 */
#include "cat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cat_addon_base_read(const char *path, cJSON **base, trn_err *err)
{
    char *text = NULL;
    size_t len = 0;
    *base = NULL;
    if (trn_read_file(path, (size_t)64 << 20, &text, &len, err) != 0) return -1;
    cJSON *m = cJSON_ParseWithLength(text, len);
    free(text);
    const cJSON *bc = cJSON_GetObjectItemCaseSensitive(m, "catalog");
    const cJSON *bver = cJSON_GetObjectItemCaseSensitive(m, "version");
    int rc = 0;
    if (!cJSON_IsString(bc) || !cJSON_IsNumber(bver) || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(m, "variants")))
        rc = trn_errf(err, "--addon-of %s: not a catalog manifest (catalog, version and variants are needed: give the "
                           "base catalog's manifest.json)", path);
    else if (cJSON_GetObjectItemCaseSensitive(m, "base"))
        rc = trn_errf(err, "--addon-of %s: that catalog is itself an add-on; give the manifest of the catalog it "
                           "extends", path);
    if (rc != 0) {
        cJSON_Delete(m);
        return -1;
    }
    *base = m;
    return 0;
}

/* The development key under dir: made once, reused after; the warning
 * that devices must not trust it goes to o->warn. */
static cat_seckey *dev_key(const struct cat_pack_catalog_options *o, const char *dir, int *made_key, trn_err *err)
{
    char sec[4096], pub[4096];
    if (snprintf(sec, sizeof sec, "%s/catalog-dev.key", dir) >= (int)sizeof sec ||
        snprintf(pub, sizeof pub, "%s/catalog-dev.pub", dir) >= (int)sizeof pub) {
        trn_errf(err, "%s: path too long", dir);
        return NULL;
    }
    struct stat st;
    int made = 0;
    if (stat(sec, &st) != 0) {
        if (trn_mkdir_p(dir, err) != 0 || cat_keygen(pub, sec, NULL, CAT_KDF_NONE, 1, 0, NULL, err) != 0) return NULL;
        made = *made_key = 1;
    }
    cat_seckey *k = cat_seckey_load(sec, NULL, err);
    if (!k) return NULL;
    rtl_pubkey pk;
    char id[17], text[16384];
    cat_seckey_pubkey(k, &pk);
    rtl_keynum_hex(pk.keynum, id);
    snprintf(text, sizeof text,
             "catalog: WARNING: ************************************************************\n"
             "catalog: WARNING: signing with the DEVELOPMENT key %s (%s, %s).\n"
             "catalog: WARNING: Devices must NOT trust it: never put %s in a\n"
             "catalog: WARNING: production device's keys folder. Sign releases with --key SEC\n"
             "catalog: WARNING: (make catalog KEY=path).\n"
             "catalog: WARNING: ************************************************************\n",
             id, sec, made ? "created now" : "made earlier", pub);
    if (o->warn) o->warn(o->user, text);
    return k;
}

/* The development key's files and its folder, when this run made them. */
static void remove_dev_key(const char *dir)
{
    char f[4200];
    snprintf(f, sizeof f, "%s/catalog-dev.key", dir);
    unlink(f);
    snprintf(f, sizeof f, "%s/catalog-dev.pub", dir);
    unlink(f);
    rmdir(dir);
}

/* The archive, its signature, manifest.json and winnowed.json; on failure
 * the first three removed where this run made them. */
static int write_outputs(const struct cat_pack_catalog_options *o, const cat_seckey *key,
                         struct cat_pack_catalog_result *r, trn_err *err)
{
    const cJSON *m = r->built.manifest;
    char *text = cat_json_print(r->built.manifest), *wtext = cat_json_print(r->built.winnowed), path[4200];
    snprintf(r->archive, sizeof r->archive, "%s/catalog-%s-%.0f.tar.zst", o->out_dir, cat_json_str(m, "model", "-"),
             cat_json_num(m, "version", -1));
    snprintf(r->signature, sizeof r->signature, "%s.minisig", r->archive);
    int64_t mtime = (int64_t)cat_json_num(cJSON_GetObjectItemCaseSensitive(m, "build"), "source_date_epoch", -1);
    struct stat st;
    int made_archive = stat(r->archive, &st) != 0, made_sig = stat(r->signature, &st) != 0;
    snprintf(path, sizeof path, "%s/manifest.json", o->out_dir);
    int made_manifest = stat(path, &st) != 0, rc = 0;
    if (!text || !wtext) rc = trn_errf(err, "out of memory");
    else if (cat_pack(r->archive, text, r->built.files, r->built.nfiles, mtime, o->zstd_level, err) != 0) rc = -1;
    else if (cat_sign_archive(key, r->archive, r->signature, err) != 0) rc = -1;
    else if (trn_write_file_atomic(path, text, strlen(text), err) != 0) rc = -1;
    else if (snprintf(path, sizeof path, "%s/winnowed.json", o->out_dir) < 0 ||
             trn_write_file_atomic(path, wtext, strlen(wtext), err) != 0) rc = -1;
    if (rc != 0) {
        if (made_archive) unlink(r->archive);
        if (made_sig) unlink(r->signature);
        snprintf(path, sizeof path, "%s/manifest.json", o->out_dir);
        if (made_manifest) unlink(path);
    }
    free(text);
    free(wtext);
    return rc;
}

int cat_pack_catalog(const struct cat_pack_catalog_options *o, struct cat_pack_catalog_result *r, trn_err *err)
{
    memset(r, 0, sizeof *r);
    int rc = cat_build(&o->build, &r->built, o->report, o->user, err);
    char devbuf[4096];
    const char *dev_dir = o->dev_key_dir;
    const cat_seckey *key = o->key;
    int made_out = 0, made_key = 0;
    struct stat st;
    if (rc == 0 && stat(o->out_dir, &st) != 0) made_out = 1;
    if (rc == 0 && trn_mkdir_p(o->out_dir, err) != 0) rc = -1;
    if (rc == 0 && !key) {
        if (!dev_dir) snprintf(devbuf, sizeof devbuf, "%s/devkey", o->out_dir), dev_dir = devbuf;
        if (!(key = r->dev_key = dev_key(o, dev_dir, &made_key, err))) rc = -1;
    }
    if (rc == 0) rc = write_outputs(o, key, r, err);
    if (rc != 0 && made_key) remove_dev_key(dev_dir);
    if (rc != 0 && made_out) rmdir(o->out_dir);
    for (size_t i = 0; rc == 0 && i < r->built.nfiles; i++) r->bytes += r->built.files[i].size;
    if (rc != 0) cat_pack_catalog_result_free(r);
    return rc;
}

void cat_pack_catalog_result_free(struct cat_pack_catalog_result *r)
{
    cat_built_free(&r->built);
    cat_seckey_free(r->dev_key);
    r->dev_key = NULL;
}
