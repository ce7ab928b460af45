/*
 * prn_impl.h: helpers shared by the prune library's files (private).
 */
#ifndef PRN_IMPL_H
#define PRN_IMPL_H

#include "prn.h"

/* The kind of a section type ([conv] and [conn] aliases included). */
prn_kind prn_section_kind(const char *type);
/* "convolutional", "connected", "local", "other". */
const char *prn_kind_word(prn_kind k);

/* Options of the networks the library builds to check and hold variants:
 * batch 1, inference only, weights drawn from seed. */
void prn_net_opts(trn_net_opts *o, uint64_t seed);
/* The pruned network keeping keep[] (prn_filters_cfg, prn_filters_copy):
 * *pcfg and *pnet (batch 1, inference only, prn_net_opts) holding src's
 * values; both NULL on an error. */
int prn_filters_net(const trn_cfg *cfg, const trn_net *src, const prn_keep *keep, int nkeep, trn_cfg **pcfg,
                    trn_net **pnet, trn_err *err);

/* A network of cfg (batch, inference only or not, seed) holding src's
 * parameter values; with keep_seen also src's count of images seen (the
 * learning-rate schedule's position). NULL with err set on failure. */
trn_net *prn_net_like(const trn_cfg *cfg, const trn_net *src, int batch, int infer_only, uint64_t seed,
                      int keep_seen, trn_err *err);

/* Builds cfg (its proxy when it has [local] sections) to check that every
 * shape is possible; the message names the variant: "variant: ...". */
int prn_check_cfg(const trn_cfg *cfg, trn_err *err);

/* A new JSON array of the ints v[0..n). NULL when out of memory. */
cJSON *prn_json_ints(const int *v, int n);

/* Seconds of the monotonic clock, and of this process's CPU time: the
 * timings the verbs record in meta.json. */
double prn_now_s(void);
double prn_cpu_s(void);

/* A formatted string (malloc'd) or NULL when out of memory. */
char *prn_strdupf(const char *fmt, ...) TRN_PRINTF(1, 2);

/* Appends to a growing malloc'd string *s (NULL to start). -1 when out of
 * memory (*s is then freed and NULL). */
int prn_appendf(char **s, const char *fmt, ...) TRN_PRINTF(2, 3);

/* One key of a training verb's --set key=value: an integer (i, in
 * lo..10000000) or a number (f, in [0, 100]). */
typedef struct prn_set_key {
    const char *name;
    int *i;
    long lo;
    float *f;
} prn_set_key;
/* Sets the key of kv among t[0..n) (mimic's and retarget's --set); -1
 * with err naming the keys on an unknown key or a bad value. */
int prn_set_kv(const prn_set_key *t, int n, const char *kv, trn_err *err);

/* The --with text of mimic and retarget (sections separated by ';', items
 * by ','; the first item of a section its type) as cfg text whose line k
 * holds the k-th item, so that messages point at items. NULL when out of
 * memory. */
char *prn_with_to_cfg(const char *with, trn_err *err);

#endif /* PRN_IMPL_H */
