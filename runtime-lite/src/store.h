/* store.h: the install root on the device (private). */
#ifndef RTL_STORE_H
#define RTL_STORE_H

#include "internal.h"

#define RTL_COPY_NAME_MAX 48
/* Device latencies of catalog <id>, beside its copies (profile.c). */
#define RTL_PROFILE_NAME "profile.json"

struct rtl_store {
    char *root;
    char *keys_dir;
    int root_fd;
    int catalogs_fd;
    int lock_fd;          /* the store lock while held, or -1 */
    rtl_log_fn log;
    void *log_user;
};

/* What catalogs/<id>/STATE names: the current and the previous copy
 * ("" when none). */
struct rtl_state {
    char current[RTL_COPY_NAME_MAX];
    char previous[RTL_COPY_NAME_MAX];
};

void rtl_log(const rtl_store *s, enum rtl_log_level level, const char *fmt, ...) RTL_PRINTF(3, 4);

/* Takes / releases the store's exclusive lock (one installer at a time). */
int rtl_store_lock(rtl_store *s, rtl_err *err);
void rtl_store_unlock(rtl_store *s);

/* Opens catalogs/<id> (creating it when create is 1; *created says whether
 * it did). Returns a directory fd or -1. A missing folder without create is
 * an error only when must_exist. */
int rtl_catdir_open(rtl_store *s, const char *id, int create, int *created, rtl_err *err);

/* Reads STATE in dirfd (all empty when there is none) / replaces it
 * atomically (temporary file, fsync, rename, fsync of the folder). */
int rtl_state_read(int dirfd, struct rtl_state *st, rtl_err *err);
int rtl_state_write(int dirfd, const struct rtl_state *st, rtl_err *err);

/* Loads every *.pub in the store's key folder and in its channels/
 * subfolder (the keys of single channels), sorted by file name, into a new
 * array the caller frees. None is an error saying where to put one. */
int rtl_keys_load(rtl_store *s, rtl_pubkey **keys, size_t *n, rtl_err *err);

/* The keys rtl pull accepts for a channel's index and catalogs: the key
 * file KEYS/channels/<channel>.pub alone when it exists (a per-channel
 * pin), else every *.pub of KEYS itself (never another channel's key).
 * where (size bytes) gets a phrase naming them for messages. */
int rtl_keys_load_channel(rtl_store *s, const char *channel, rtl_pubkey **keys, size_t *n, char *where, size_t size,
                          rtl_err *err);

/* Removes name (a file or a whole tree) inside dirfd without following
 * symbolic links. */
int rtl_remove_tree(int dirfd, const char *name, rtl_err *err);

/* Removes what no STATE names: staging folders, temporary files and copies
 * that are neither current nor previous (and not held open by a reader).
 * Called with the store lock held. */
void rtl_gc(rtl_store *s, int dirfd, const char *id);

/* Opens installed copy `name` of catalog dirfd and parses its manifest;
 * lock: take a shared lock on it for a reader. */
rtl_catalog *rtl_copy_open(rtl_store *s, int dirfd, const char *id, const char *name, int lock, rtl_err *err);

/* Fully verifies installed copy `name` (see rtl_verify_installed). */
int rtl_copy_verify(rtl_store *s, int dirfd, const char *id, const char *name, rtl_err *err);

/* The version of installed copy `name`: its manifest's, or, when the copy
 * is damaged, the one its name "v<N>.<k>" records (with a warning), so a
 * damaged copy never blocks installing a newer catalog over it. */
uint64_t rtl_copy_version(rtl_store *s, int dirfd, const char *id, const char *name);

/* Fills out from the copies st names. */
int rtl_describe(rtl_store *s, int dirfd, const char *id, const struct rtl_state *st, rtl_installed *out,
                 rtl_err *err);

/* fsync of a folder by fd; 0 or -1 with err naming `what`. */
int rtl_fsync_fd(int fd, const char *what, rtl_err *err);

#endif
