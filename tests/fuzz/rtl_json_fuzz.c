/*
 * rtl_json_fuzz: libFuzzer harness for the parsers of the signed JSON a
 * device reads over the air (runtime-lite/src/index.c: index.json;
 * runtime-lite/src/catalog.c: manifest.json; json.c: the duplicate-key
 * check both run), built with ASan and UBSan by `make fuzz` beside the peer
 * frames' harness. The first input byte picks what the rest is fed to:
 *   0  rtl_index_parse; a parsed index is then checked (rtl_index_check)
 *      against the trusted comment it would need, at times and remembered
 *      serials taken from the next input bytes
 *   1  rtl_catalog_parse (a manifest held in memory, no folder); a parsed
 *      manifest's every file is looked up by its path
 *   2  rtl_json_unique_keys on whatever cJSON parses
 * Seeds: tests/fuzz/json-corpus/.
 */
#include "catalog.h"
#include "pull.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void index_case(const char *text, size_t n)
{
    struct rtl_index ix;
    rtl_err err;
    if (rtl_index_parse(text, n, &ix, &err) != 0) return;
    char tc[256];
    snprintf(tc, sizeof tc, "index:%s\tserial:%" PRIu64 "\texpires:%" PRId64, ix.channel, ix.serial, ix.expires);
    uint64_t seen[] = {0, ix.serial, ix.serial ? ix.serial - 1 : 0, ix.serial + 1};
    int64_t now[] = {0, ix.issued, ix.expires, ix.expires - 1};
    for (size_t i = 0; i < 4; i++)
        if (rtl_index_check(&ix, tc, now[i], seen[i], &err) != 0 && !err.msg[0]) abort(); /* a refusal says why */
    for (size_t i = 0; i < ix.n; i++)
        if (!rtl_id_ok(ix.entries[i].catalog) || ix.entries[i].version == 0) abort();
    rtl_index_free(&ix);
}

static void manifest_case(const char *text, size_t n)
{
    rtl_err err;
    rtl_catalog *c = rtl_catalog_parse(text, n, NULL, &err);
    if (!c) {
        if (!err.msg[0]) abort();
        return;
    }
    for (size_t i = 0; i < c->nfiles; i++)
        if (rtl_catalog_lookup(c, c->by_path[i]->path) != c->by_path[i]) abort();
    rtl_catalog_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    /* a copy without the selector, NUL-terminated (the parsers take a length) */
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    size_t n = size - 1;
    switch (data[0] % 3) {
    case 0: index_case(text, n); break;
    case 1: manifest_case(text, n); break;
    default: {
        cJSON *j = cJSON_ParseWithLength(text, n);
        rtl_err err;
        rtl_json_unique_keys(j, "fuzz", &err);
        cJSON_Delete(j);
    }
    }
    free(text);
    return 0;
}
