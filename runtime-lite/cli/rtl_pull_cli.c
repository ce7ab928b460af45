/* rtl_pull_cli.c: `rtl pull`, catalogs over the air (a thin shell over
 * rtl_pull, see rtl.h). */
#include "rtl_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char pull_about[] =
    "Pulls catalogs from the publish folder at URL (http://, https:// or file://;\n"
    "written by catalog publish): verifies its signed index against the pinned keys\n"
    "(refusing an expired one, or one older than an index this device accepted),\n"
    "then for each catalog with a newer version verifies its signature, fetches its\n"
    "manifest and only the files not installed here, checks every one against the\n"
    "manifest and installs atomically, as rtl install does. Without a per-file\n"
    "layout on the server it fetches the whole archive. Interrupted downloads are\n"
    "kept in ROOT/pull/ and resumed by the next pull.\n";

static const char pull_notes[] =
    "On a terminal, progress (bytes, rate, time left) is shown on stderr.\n"
    "Prints one line per catalog and a total; exit status 0 when every catalog\n"
    "is up to date or was updated, 1 when one failed, 2 on bad usage.\n";

/* "123", "64K", "2M", "1G" (1024s) into *out; -1 on anything else. */
static int parse_rate(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-') return -1;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1024, end++;
    else if (*end == 'M' || *end == 'm') mul = 1024 * 1024, end++;
    else if (*end == 'G' || *end == 'g') mul = 1024ull * 1024 * 1024, end++;
    if (*end || v == 0 || v > UINT64_MAX / mul) return -1;
    *out = v * mul;
    return 0;
}

static int parse_uint(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Option NAME's value ARG as a rate (parse_rate) or an integer in lo..hi
 * (parse_uint): 0, or 1 after saying on stderr what NAME needs. */
static int rate_opt(const char *name, const char *arg, uint64_t *out)
{
    if (parse_rate(arg, out) == 0) return 0;
    fprintf(stderr, "rtl: %s needs a positive number of bytes/s (suffix K, M or G), not '%s'\n", name, arg);
    return 1;
}

static int uint_opt(const char *name, const char *arg, long lo, long hi, const char *unit, long *out)
{
    if (parse_uint(arg, lo, hi, out) == 0) return 0;
    fprintf(stderr, "rtl: %s needs an integer in %ld..%ld%s, not '%s'\n", name, lo, hi, unit, arg);
    return 1;
}

/* The progress line on a terminal: at most four updates a second. */
struct progress {
    double last_s;
    int shown;
};

static void human(double b, char *out, size_t size)
{
    if (b >= 1048576) snprintf(out, size, "%.1f MiB", b / 1048576);
    else if (b >= 1024) snprintf(out, size, "%.1f KiB", b / 1024);
    else snprintf(out, size, "%.0f B", b);
}

static void show_progress(void *user, const rtl_pull_progress *p)
{
    struct progress *pr = user;
    if (pr->shown && p->elapsed_s - pr->last_s < 0.25 && p->done < p->size) return;
    pr->last_s = p->elapsed_s;
    pr->shown = 1;
    double rate = p->elapsed_s > 0 ? (double)p->received / p->elapsed_s : 0;
    char done[32], size[32], r[32], eta[32] = "?";
    human((double)p->done, done, sizeof done);
    human((double)p->size, size, sizeof size);
    human(rate, r, sizeof r);
    if (rate > 0) snprintf(eta, sizeof eta, "%.0f s", (double)(p->size - p->done) / rate);
    const char *name = strrchr(p->url, '/');
    name = name ? name + 1 : p->url;
    fprintf(stderr, "\r\033[K%.20s%s %s of %s, %s/s, %s left", name, strlen(name) > 20 ? "..." : "", done, size, r,
            eta);
}

/* rtl pull's options (the kit's table below); values are checked after
 * parsing, with the messages they always had. */
enum { P_CATALOG, P_LIMIT, P_RETRIES, P_BACKOFF, P_TIMEOUT, P_CACERT, P_CHANNEL, P_MINRATE, P_DEADLINE, P_NVALS };
struct pull_cli {
    const char *val[P_NVALS];
    int check, fetch_only, whole, downgrade;
};
#define PULL_NOPTS 15

static void pull_verb(struct pull_cli *c, ck_opt *opts, ck_verb *v)
{
    const ck_opt rows[] = {
        {"--check", NULL, CK_FLAG, &c->check, 0, 0,
         "verify the index and say which catalogs have an update;\n"
         "fetch nothing else"},
        {"--catalog", "ID", CK_STR, &c->val[P_CATALOG], 0, 0, "only catalog ID (default: every catalog of the index)"},
        {"--fetch-only", NULL, CK_FLAG, &c->fetch_only, 0, 0,
         "fetch and verify, install nothing (the next pull installs\n"
         "from what was fetched without fetching it again)"},
        {"--whole-archive", NULL, CK_FLAG, &c->whole, 0, 0,
         "fetch the archive even when the server has per-file objects"},
        {"--limit-rate", "RATE", CK_STR, &c->val[P_LIMIT], 0, 0,
         "receive at most RATE bytes/s (suffix K, M or G: 1024s)"},
        {"--retries", "N", CK_STR, &c->val[P_RETRIES], 0, 0,
         "retries per transfer after a network failure (default 4)"},
        {"--backoff-ms", "MS", CK_STR, &c->val[P_BACKOFF], 0, 0,
         "wait before the first retry, doubling each time (default 500)"},
        {"--timeout", "S", CK_STR, &c->val[P_TIMEOUT], 0, 0,
         "connect time-out, and how long a transfer may stay below 1\n"
         "KiB/s (a quarter of --limit-rate if lower) (default 30)"},
        {"--cacert", "FILE", CK_STR, &c->val[P_CACERT], 0, 0, "CA certificates for https:// (default: the system's)"},
        {"--allow-downgrade", NULL, CK_FLAG, &c->downgrade, 0, 0, "install what the index names even if not newer"},
        {"--channel", "NAME", CK_STR, &c->val[P_CHANNEL], 0, 0,
         "the channel this device follows, on its first pull; later\n"
         "pulls refuse an index of any other channel (default: the\n"
         "one in ROOT/pull/channel, else the first index's). With\n"
         "ROOT/keys/channels/NAME.pub only that key may sign the\n"
         "channel's index and catalogs"},
        {"--min-rate", "RATE", CK_STR, &c->val[P_MINRATE], 0, 0,
         "each file's deadline: --timeout plus its size at RATE\n"
         "bytes/s (suffix K, M or G; default 16K, at most half of\n"
         "--limit-rate)"},
        {"--deadline", "S", CK_STR, &c->val[P_DEADLINE], 0, 0,
         "the whole pull's deadline in seconds (default 21600: 6 h);\n"
         "what was received is kept for the next pull"},
        {0},
    };
    _Static_assert(sizeof rows <= PULL_NOPTS * sizeof rows[0], "room for every row");
    memcpy(opts, rows, sizeof rows);
    *v = (ck_verb){"pull", NULL, NULL,
                   "URL [--check] [--catalog ID] [--fetch-only] [--whole-archive]\n"
                   "                [--limit-rate RATE] [--retries N] [--backoff-ms MS] [--timeout S]\n"
                   "                [--cacert FILE] [--allow-downgrade] [--channel NAME]\n"
                   "                [--min-rate RATE] [--deadline S]",
                   pull_about, opts, pull_notes};
}

/* Value k of c into o: 0, or 1 after saying on stderr what it needs. */
static int pull_value(int k, const char *a, rtl_pull_options *o)
{
    long v;
    switch (k) {
    case P_CATALOG: o->catalog = a; return 0;
    case P_CACERT: o->cacert = a; return 0;
    case P_CHANNEL: o->channel = a; return 0;
    case P_MINRATE: return rate_opt("--min-rate", a, &o->min_bytes_per_s);
    case P_LIMIT: return rate_opt("--limit-rate", a, &o->max_bytes_per_s);
    case P_DEADLINE:
        if (uint_opt("--deadline", a, 1, 30 * 86400, " (seconds)", &v)) return 1;
        o->deadline_s = (unsigned)v;
        return 0;
    case P_RETRIES:
        if (uint_opt("--retries", a, 0, 1000, "", &v)) return 1;
        o->retries = v == 0 ? -1 : (int)v;
        return 0;
    case P_BACKOFF:
        if (uint_opt("--backoff-ms", a, 1, 60000, "", &v)) return 1;
        o->backoff_ms = (unsigned)v;
        return 0;
    default:
        if (uint_opt("--timeout", a, 1, 3600, " (seconds)", &v)) return 1;
        o->timeout_s = (unsigned)v;
        return 0;
    }
}

/* rtl pull's arguments into o and *url; 0, or -1 with *rc (0 after --help,
 * 2 after a usage error: its reason, then the help, on stderr). */
static int pull_parse(int argc, char **argv, rtl_pull_options *o, const char **url, int *rc)
{
    struct pull_cli c = {0};
    ck_opt opts[PULL_NOPTS];
    ck_verb v;
    char **av;
    pull_verb(&c, opts, &v);
    int i = sub_opts_abbrev(argc, argv, &v, 1, 1, rc, &av);
    if (i < 0) return -1;
    *url = av[i];
    free(av);
    *o = (rtl_pull_options){.check_only = c.check, .fetch_only = c.fetch_only, .whole_archive = c.whole,
                            .allow_downgrade = c.downgrade};
    *rc = 2;
    for (int k = 0; k < P_NVALS; k++)
        if (c.val[k] && pull_value(k, c.val[k], o)) return ck_help("rtl", &v, stderr), -1;
    if (o->check_only && o->fetch_only) {
        fprintf(stderr, "rtl: --check and --fetch-only exclude each other\n");
        return ck_help("rtl", &v, stderr), -1;
    }
    return 0;
}

int cmd_pull(rtl_store *s, int argc, char **argv)
{
    rtl_pull_options o;
    const char *url;
    int prc;
    if (pull_parse(argc, argv, &o, &url, &prc) != 0) return prc;
    rtl_pull_result r;
    rtl_err err;
    struct progress pr = {0};
    if (isatty(STDERR_FILENO)) {
        o.progress = show_progress;
        o.progress_user = &pr;
    }
    int rc = rtl_pull(s, url, &o, &r, &err);
    if (pr.shown) fprintf(stderr, "\r\033[K");
    for (size_t i = 0; i < r.n; i++) {
        const rtl_pull_item *it = &r.items[i];
        char from[32] = "none";
        if (it->installed_version) snprintf(from, sizeof from, "%" PRIu64, it->installed_version);
        if (!it->update)
            printf("catalog %s up to date: version %s (the index offers %" PRIu64 ")\n", it->catalog, from,
                   it->index_version);
        else if (o.check_only)
            printf("catalog %s update available: %s -> %" PRIu64 "\n", it->catalog, from, it->index_version);
        else
            printf("catalog %s %s %s -> %" PRIu64 ": fetched %" PRIu64 " bytes (%zu files), reused %" PRIu64
                   " bytes (%zu files), %s\n",
                   it->catalog, it->installed ? "installed" : it->fetched ? "fetched" : "FAILED", from,
                   it->index_version, it->bytes_fetched, it->files_fetched, it->bytes_reused, it->files_reused,
                   it->whole_archive ? "whole archive" : "per file");
    }
    if (r.serial)
        printf("index %s serial %" PRIu64 ": %" PRIu64 " bytes fetched in all, %u retries\n", r.channel, r.serial,
               r.bytes_fetched, r.retries);
    else
        printf("no index accepted: %" PRIu64 " bytes fetched in all, %u retries\n", r.bytes_fetched, r.retries);
    rtl_pull_result_free(&r);
    if (rc != 0) return fail(&err);
    return 0;
}
