/* install.h: installing a catalog from its manifest and files instead of its
 * archive (private; rtl pull's delta path, see install.c and pull.c). */
#ifndef RTL_INSTALL_H
#define RTL_INSTALL_H

#include "catalog.h"

struct rtl_objects_source {
    const char *what;            /* names the catalog in messages (a URL) */
    const char *sig_text;        /* the archive's .minisig */
    size_t sig_len;
    const char *manifest;        /* manifest.json */
    size_t manifest_len;
    /* An open fd reading file f's bytes (from its start), or -1 with err.
     * Whatever it returns is checked against f's size and SHA-256. */
    int (*open_object)(void *user, const struct rtl_file *f, rtl_err *err);
    void *user;
};

/* rtl_install without the archive: the signature's trusted comment is
 * verified by its global signature with a pinned key (the archive's own
 * hash cannot be checked without it), the manifest must have the SHA-256
 * the trusted comment names, and every file the size and SHA-256 the
 * manifest names; the chain that rtl_verify_installed checks. Then the same
 * lock, version check, staging folder, fsyncs and atomic STATE switch as
 * rtl_install. *bytes (may be NULL) gets the bytes of files written. */
int rtl_install_objects(rtl_store *s, const struct rtl_objects_source *src, const rtl_install_options *options,
                        rtl_installed *out, uint64_t *bytes, rtl_err *err) RTL_MUST_CHECK;

#endif
