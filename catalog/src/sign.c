/* sign.c: signing catalog archives and verifying them on the build side
 * (the formats are in runtime-lite/src/sig.c; the trusted comment's fields
 * in rtl.h). */
#include "cat.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

int cat_archive_info(const char *archive, rtl_sig_info *info, trn_err *err)
{
    memset(info, 0, sizeof *info);
    info->timestamp = -1;
    rtl_err re;
    char *json;
    size_t len;
    if (rtl_archive_manifest(archive, &json, &len, &re) != 0) return trn_errf(err, "%s", re.msg);
    crypto_hash_sha256(info->manifest_sha256, (const unsigned char *)json, len);
    cJSON *m = cat_json_parse(json, len, NULL);
    free(json);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "catalog");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(m, "model");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(m, "version");
    const cJSON *sde = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "build"),
                                                        "source_date_epoch");
    int rc = 0;
    if (!cJSON_IsString(id) || !cJSON_IsString(model) || !cJSON_IsNumber(ver) || ver->valuedouble < 1 ||
        strlen(id->valuestring) > RTL_ID_MAX || strlen(model->valuestring) > RTL_ID_MAX) {
        rc = trn_errf(err, "%s: the manifest has no valid catalog, model and version", archive);
    } else {
        strcpy(info->catalog, id->valuestring);
        strcpy(info->model, model->valuestring);
        info->version = (uint64_t)ver->valuedouble;
        if (cJSON_IsNumber(sde) && sde->valuedouble >= 0) info->timestamp = (int64_t)sde->valuedouble;
        const char *base = strrchr(archive, '/');
        snprintf(info->file, sizeof info->file, "%s", base ? base + 1 : archive);
    }
    cJSON_Delete(m);
    return rc;
}

int cat_sign_archive(const cat_seckey *key, const char *archive, const char *sig_path, trn_err *err)
{
    rtl_sig_info info;
    if (cat_archive_info(archive, &info, err) != 0) return -1;
    info.development_key = cat_seckey_is_development(key);
    char trusted[RTL_TRUSTED_MAX], untrusted[RTL_COMMENT_MAX];
    rtl_pubkey pk;
    rtl_err re;
    cat_seckey_pubkey(key, &pk);
    if (rtl_trusted_format(&info, trusted, sizeof trusted, &re) != 0 ||
        rtl_untrusted_expected(&info, pk.keynum, untrusted, sizeof untrusted, &re) != 0)
        return trn_errf(err, "%s: %s", archive, re.msg);
    return cat_sign_file(key, archive, trusted, untrusted, sig_path, err);
}

int cat_verify(const char *archive, const char *sig_path, const rtl_pubkey *keys, size_t n, rtl_sig_info *info,
               int *has_fields, trn_err *err)
{
    rtl_signature sig;
    rtl_err re;
    rtl_sig_info got, want;
    if (has_fields) *has_fields = 0;
    if (rtl_sig_load(sig_path, &sig, &re) != 0) return trn_errf(err, "%s", re.msg);
    if (rtl_sig_verify_file(&sig, keys, n, archive, NULL, &re) != 0) return trn_errf(err, "%s", re.msg);
    if (rtl_untrusted_check(&sig, &re) != 0) return trn_errf(err, "%s: %s", sig_path, re.msg);
    if (rtl_trusted_parse(sig.trusted, &got, &re) != 0) {
        /* a valid minisign signature of something that is not a signed catalog */
        if (info) memset(info, 0, sizeof *info);
        return 0;
    }
    if (has_fields) *has_fields = 1;
    if (info) *info = got;
    if (cat_archive_info(archive, &want, err) != 0) return -1;
    if (memcmp(got.manifest_sha256, want.manifest_sha256, RTL_SHA256_BYTES) != 0)
        return trn_errf(err, "%s: its manifest.json is not the one the trusted comment names", archive);
    if (strcmp(got.catalog, want.catalog) != 0 || got.version != want.version ||
        (got.model[0] && strcmp(got.model, want.model) != 0))
        return trn_errf(err, "%s: the trusted comment says catalog %s version %" PRIu64 " but the manifest says "
                        "catalog %s version %" PRIu64, archive, got.catalog, got.version, want.catalog, want.version);
    return 0;
}
