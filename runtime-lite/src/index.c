/*
 * index.c: the signed index of a publish folder (format at the top of
 * pull.c): parsing it and checking it against its signature's trusted
 * comment and what the device remembers. No I/O here, so that the fuzzer
 * (tests/fuzz/rtl_json_fuzz.c) links it alone.
 */
#include "pull.h"
#include "catalog.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the index ------------------------------------------------------------ */

void rtl_index_free(struct rtl_index *ix)
{
    if (!ix) return;
    free(ix->entries);
    memset(ix, 0, sizeof *ix);
}

static int ix_u64(const cJSON *o, const char *key, uint64_t *out, rtl_err *err, const char *where)
{
    return rtl_json_u64(o, key, out, err, "index.json", where);
}

/* An optional non-negative integer: 0 when absent. */
static int ix_opt_u64(const cJSON *o, const char *key, uint64_t *out, rtl_err *err)
{
    *out = 0;
    if (!cJSON_GetObjectItemCaseSensitive(o, key)) return 0;
    return ix_u64(o, key, out, err, "top level");
}

static int ix_str(const cJSON *o, const char *key, char *out, size_t size, rtl_err *err, const char *where)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
        return rtl_errf(err, "index.json: %s: \"%s\" is missing, not a string or too long", where, key);
    strcpy(out, v->valuestring);
    return 0;
}

static int ix_entry(const cJSON *o, struct rtl_index_entry *e, size_t i, rtl_err *err)
{
    char where[96], sha[80];
    snprintf(where, sizeof where, "catalogs[%zu]", i);
    if (!cJSON_IsObject(o)) return rtl_errf(err, "index.json: %s is not an object", where);
    if (ix_str(o, "catalog", e->catalog, sizeof e->catalog, err, where) != 0) return -1;
    if (!rtl_id_ok(e->catalog)) return rtl_errf(err, "index.json: %s: '%s' is not a valid catalog id", where, e->catalog);
    snprintf(where, sizeof where, "catalog '%s'", e->catalog);
    if (ix_u64(o, "version", &e->version, err, where) != 0 || ix_u64(o, "size", &e->size, err, where) != 0 ||
        ix_u64(o, "manifest_size", &e->manifest_size, err, where) != 0 ||
        ix_str(o, "archive", e->archive, sizeof e->archive, err, where) != 0 ||
        ix_str(o, "signature", e->signature, sizeof e->signature, err, where) != 0 ||
        ix_str(o, "manifest_sha256", sha, sizeof sha, err, where) != 0)
        return -1;
    if (e->version == 0) return rtl_errf(err, "index.json: %s: version 0 (versions start at 1)", where);
    if (rtl_path_check(e->archive, err) != 0 || rtl_path_check(e->signature, err) != 0)
        return rtl_err_prefix(err, "index.json: %s", where);
    if (rtl_unhex(sha, e->manifest_sha256, RTL_SHA256_BYTES) != 0)
        return rtl_errf(err, "index.json: %s: manifest_sha256 is not 64 lower-case hex digits", where);
    if (e->manifest_size == 0 || e->manifest_size > RTL_MANIFEST_MAX)
        return rtl_errf(err, "index.json: %s: manifest_size %" PRIu64 " is outside 1..%u", where, e->manifest_size,
                        RTL_MANIFEST_MAX);
    return 0;
}

int rtl_index_parse(const char *json, size_t len, struct rtl_index *out, rtl_err *err)
{
    memset(out, 0, sizeof *out);
    if (len > RTL_INDEX_MAX) return rtl_errf(err, "index.json: %zu bytes is more than the %u accepted", len, RTL_INDEX_MAX);
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    while (root && end < json + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
    if (!root || end != json + len) {
        cJSON_Delete(root);
        return rtl_errf(err, "index.json: not valid JSON");
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *cats = cJSON_GetObjectItemCaseSensitive(root, "catalogs");
    uint64_t issued = 0, expires = 0;
    int rc = -1;
    if (!cJSON_IsObject(root)) rtl_errf(err, "index.json: the top level is not an object");
    else if (rtl_json_unique_keys(root, "index.json", err) != 0)
        ;
    else if (!cJSON_IsNumber(schema) || schema->valuedouble != 1)
        rtl_errf(err, "index.json: \"schema\" is not 1: this runtime reads index schema 1 only");
    else if (ix_str(root, "channel", out->channel, sizeof out->channel, err, "top level") != 0 ||
             ix_u64(root, "serial", &out->serial, err, "top level") != 0 ||
             ix_u64(root, "issued", &issued, err, "top level") != 0 ||
             ix_u64(root, "expires", &expires, err, "top level") != 0)
        ;
    else if (!rtl_id_ok(out->channel)) rtl_errf(err, "index.json: channel '%s' is not a valid id", out->channel);
    else if (!cJSON_IsArray(cats)) rtl_errf(err, "index.json: \"catalogs\" is missing or not an array");
    else if (cJSON_GetArraySize(cats) > 10000) rtl_errf(err, "index.json: more than 10000 catalogs");
    else rc = 0;
    if (rc == 0 && (ix_opt_u64(root, "max_validity", &out->max_validity, err) != 0 ||
                    ix_opt_u64(root, "max_serial_step", &out->max_serial_step, err) != 0))
        rc = -1;
    out->issued = (int64_t)issued;
    out->expires = (int64_t)expires;
    if (rc == 0) {
        out->n = (size_t)cJSON_GetArraySize(cats);
        out->entries = calloc(out->n ? out->n : 1, sizeof *out->entries);
        if (!out->entries) rc = rtl_errf(err, "out of memory");
        size_t i = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, cats) {
            if (rc != 0) break;
            rc = ix_entry(c, &out->entries[i], i, err);
            if (rc == 0 && i > 0 && strcmp(out->entries[i - 1].catalog, out->entries[i].catalog) >= 0)
                rc = rtl_errf(err, "index.json: catalogs are not sorted by id or '%s' appears twice",
                              out->entries[i].catalog);
            i++;
        }
    }
    cJSON_Delete(root);
    if (rc != 0) rtl_index_free(out);
    return rc;
}

void rtl_utc(int64_t t, char *out, size_t size)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&tt, &tm) || !strftime(out, size, "%Y-%m-%d %H:%M:%S UTC", &tm)) snprintf(out, size, "%" PRId64, t);
}

/* The value of "key:" in a tab-separated trusted comment, or NULL. */
const char *rtl_tc_field(const char *tc, const char *key, char *out, size_t size)
{
    size_t kl = strlen(key);
    for (const char *p = tc; p && *p;) {
        const char *end = strchr(p, '\t');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == ':') {
            snprintf(out, size, "%.*s", (int)(len - kl - 1), p + kl + 1);
            return out;
        }
        p = end ? end + 1 : NULL;
    }
    return NULL;
}

/* The index's validity and serial step against what it states (at most
 * the device's caps). */
static int index_limits(const struct rtl_index *ix, uint64_t seen, rtl_err *err)
{
    uint64_t validity = ix->max_validity && ix->max_validity < RTL_INDEX_VALIDITY_CAP_S ? ix->max_validity
                                                                                      : RTL_INDEX_VALIDITY_CAP_S;
    uint64_t step = ix->max_serial_step && ix->max_serial_step < RTL_INDEX_STEP_CAP ? ix->max_serial_step
                                                                                     : RTL_INDEX_STEP_CAP;
    if (ix->expires < ix->issued || (uint64_t)(ix->expires - ix->issued) > validity)
        return rtl_errf(err, "index.json of channel %s (serial %" PRIu64 ") is valid for %" PRId64 " s from its "
                        "issue, more than the %" PRIu64 " s allowed (%s): refusing it; the publisher must re-sign "
                        "it with a shorter validity (catalog publish --refresh --valid-for)", ix->channel, ix->serial,
                        ix->expires - ix->issued, validity,
                        validity == ix->max_validity ? "its max_validity" : "this device's cap of 366 days");
    /* a first index (nothing seen) is held to the device's cap only */
    uint64_t limit = seen ? step : RTL_INDEX_STEP_CAP;
    if (ix->serial - seen > limit)
        return rtl_errf(err, "index.json of channel %s has serial %" PRIu64 ", more than %" PRIu64 " above serial %"
                        PRIu64 " that this device accepted last (the serial step allowed by %s): refusing it; a "
                        "serial that far ahead would block every later index", ix->channel, ix->serial, limit, seen,
                        seen && limit == ix->max_serial_step ? "its max_serial_step" : "this device's cap");
    return 0;
}

int rtl_index_check(const struct rtl_index *ix, const char *trusted, int64_t now, uint64_t seen, rtl_err *err)
{
    char ch[RTL_ID_MAX + 2], serial[32], expires[32], want[32];
    if (!rtl_tc_field(trusted, "index", ch, sizeof ch) || !rtl_tc_field(trusted, "serial", serial, sizeof serial) ||
        !rtl_tc_field(trusted, "expires", expires, sizeof expires))
        return rtl_errf(err, "index.json.minisig: the trusted comment has no index, serial and expires fields "
                        "(it is not the signature of an index: sign indexes with catalog publish)");
    if (strcmp(ch, ix->channel) != 0)
        return rtl_errf(err, "index.json: channel '%s' but its signature says '%s'", ix->channel, ch);
    snprintf(want, sizeof want, "%" PRIu64, ix->serial);
    if (strcmp(serial, want) != 0)
        return rtl_errf(err, "index.json: serial %s but its signature says %s", want, serial);
    snprintf(want, sizeof want, "%" PRId64, ix->expires);
    if (strcmp(expires, want) != 0)
        return rtl_errf(err, "index.json: expires %s but its signature says %s", want, expires);
    char a[48], b[48];
    if (now >= ix->expires) {
        rtl_utc(ix->expires, a, sizeof a);
        rtl_utc(now, b, sizeof b);
        return rtl_errf(err, "index.json of channel %s (serial %" PRIu64 ") expired at %s; it is now %s. Refusing "
                        "it: the server may be replaying a frozen old index, or the publisher has not re-signed "
                        "it (catalog publish --refresh); also check this device's clock",
                        ix->channel, ix->serial, a, b);
    }
    if (ix->serial < seen)
        return rtl_errf(err, "index.json of channel %s has serial %" PRIu64 ", older than serial %" PRIu64 " that "
                        "this device accepted before: the server is replaying an old index; refusing it",
                        ix->channel, ix->serial, seen);
    return index_limits(ix, seen, err);
}

