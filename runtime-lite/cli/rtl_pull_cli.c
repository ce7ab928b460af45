/* rtl_pull_cli.c: `rtl pull`, catalogs over the air (a thin shell over
 * rtl_pull, see rtl.h). */
#include "rtl_cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char pull_help[] =
    "Usage: rtl pull URL [--check] [--catalog ID] [--fetch-only] [--whole-archive]\n"
    "                [--limit-rate RATE] [--retries N] [--backoff-ms MS] [--timeout S]\n"
    "                [--cacert FILE] [--allow-downgrade] [--channel NAME]\n"
    "                [--min-rate RATE] [--deadline S]\n"
    "Pulls catalogs from the publish folder at URL (http://, https:// or file://;\n"
    "written by catalog publish): verifies its signed index against the pinned keys\n"
    "(refusing an expired one, or one older than an index this device accepted),\n"
    "then for each catalog with a newer version verifies its signature, fetches its\n"
    "manifest and only the files not installed here, checks every one against the\n"
    "manifest and installs atomically, as rtl install does. Without a per-file\n"
    "layout on the server it fetches the whole archive. Interrupted downloads are\n"
    "kept in ROOT/pull/ and resumed by the next pull.\n"
    "  --check            verify the index and say which catalogs have an update;\n"
    "                     fetch nothing else\n"
    "  --catalog ID       only catalog ID (default: every catalog of the index)\n"
    "  --fetch-only       fetch and verify, install nothing (the next pull installs\n"
    "                     from what was fetched without fetching it again)\n"
    "  --whole-archive    fetch the archive even when the server has per-file objects\n"
    "  --limit-rate RATE  receive at most RATE bytes/s (suffix K, M or G: 1024s)\n"
    "  --retries N        retries per transfer after a network failure (default 4)\n"
    "  --backoff-ms MS    wait before the first retry, doubling each time (default 500)\n"
    "  --timeout S        connect time-out, and how long a transfer may stay below\n"
    "                     1 KiB/s (a quarter of --limit-rate if lower) (default 30)\n"
    "  --cacert FILE      CA certificates for https:// (default: the system's)\n"
    "  --allow-downgrade  install what the index names even if not newer\n"
    "  --channel NAME     the channel this device follows, on its first pull; later\n"
    "                     pulls refuse an index of any other channel (default: the\n"
    "                     one in ROOT/pull/channel, else the first index's). With\n"
    "                     ROOT/keys/channels/NAME.pub only that key may sign the\n"
    "                     channel's index and catalogs\n"
    "  --min-rate RATE    each file's deadline: --timeout plus its size at RATE\n"
    "                     bytes/s (suffix K, M or G; default 16K, at most half of\n"
    "                     --limit-rate)\n"
    "  --deadline S       the whole pull's deadline in seconds (default 21600: 6 h);\n"
    "                     what was received is kept for the next pull\n"
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

int cmd_pull(rtl_store *s, int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, 0, 'h'},
                                         {"check", no_argument, 0, 'c'},
                                         {"catalog", required_argument, 0, 'C'},
                                         {"fetch-only", no_argument, 0, 'f'},
                                         {"whole-archive", no_argument, 0, 'w'},
                                         {"limit-rate", required_argument, 0, 'l'},
                                         {"retries", required_argument, 0, 'r'},
                                         {"backoff-ms", required_argument, 0, 'b'},
                                         {"timeout", required_argument, 0, 't'},
                                         {"cacert", required_argument, 0, 'a'},
                                         {"allow-downgrade", no_argument, 0, 'D'},
                                         {"channel", required_argument, 0, 'n'},
                                         {"min-rate", required_argument, 0, 'm'},
                                         {"deadline", required_argument, 0, 'd'},
                                         {0, 0, 0, 0}};
    rtl_pull_options o = {0};
    optind = 0;
    int c;
    long v;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'h': printf("%s", pull_help); return 0;
        case 'c': o.check_only = 1; break;
        case 'C': o.catalog = optarg; break;
        case 'f': o.fetch_only = 1; break;
        case 'w': o.whole_archive = 1; break;
        case 'D': o.allow_downgrade = 1; break;
        case 'a': o.cacert = optarg; break;
        case 'n': o.channel = optarg; break;
        case 'm': bad = rate_opt("--min-rate", optarg, &o.min_bytes_per_s); break;
        case 'd':
            if (!(bad = uint_opt("--deadline", optarg, 1, 30 * 86400, " (seconds)", &v))) o.deadline_s = (unsigned)v;
            break;
        case 'l': bad = rate_opt("--limit-rate", optarg, &o.max_bytes_per_s); break;
        case 'r':
            if (!(bad = uint_opt("--retries", optarg, 0, 1000, "", &v))) o.retries = v == 0 ? -1 : (int)v;
            break;
        case 'b':
            if (!(bad = uint_opt("--backoff-ms", optarg, 1, 60000, "", &v))) o.backoff_ms = (unsigned)v;
            break;
        case 't':
            if (!(bad = uint_opt("--timeout", optarg, 1, 3600, " (seconds)", &v))) o.timeout_s = (unsigned)v;
            break;
        default:
            bad = 1;
            fprintf(stderr, "rtl pull: unknown option or missing value: '%s'\n", argv[optind > 1 ? optind - 1 : 0]);
        }
        if (bad) {
            fprintf(stderr, "%s", pull_help);
            return 2;
        }
    }
    if (argc - optind != 1 || (o.check_only && o.fetch_only)) {
        if (o.check_only && o.fetch_only) fprintf(stderr, "rtl: --check and --fetch-only exclude each other\n");
        fprintf(stderr, "%s", pull_help);
        return 2;
    }
    const char *url = argv[optind];
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
