/* publish_cli.c: `catalog publish`, the folder devices pull catalogs from
 * (a thin shell over cat_publish, see cat.h). */
#include "cat.h"
#include "publish_cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char help[] =
    "Usage: catalog publish ARCHIVE [SIG] -o DEST (--key SEC [--passphrase-file F | --passphrase-env V]\n"
    "                       | --dev-key-dir DIR) [--channel NAME] [--valid-for SECONDS]\n"
    "                       [--serial N] [--no-objects] [--allow-downgrade]\n"
    "                       [--max-validity SECONDS] [--max-serial-step N]\n"
    "       catalog publish --refresh -o DEST (--key SEC ... | --dev-key-dir DIR) [--valid-for SECONDS]\n"
    "Publishes a signed catalog archive (SIG defaults to ARCHIVE.minisig) into DEST, a\n"
    "folder any static web server can serve to devices (rtl pull URL): the archive and\n"
    "its signature under DEST/<id>/, its manifest and files under DEST/objects/ named by\n"
    "SHA-256 (so devices fetch only files they lack), and DEST/index.json, the latest\n"
    "version of every catalog with a serial and an expiry time, signed with the key\n"
    "(which must be the one that signed the archive). --refresh only re-signs the index\n"
    "with a new serial and expiry: run it more often than --valid-for, or devices\n"
    "refuse the index as expired (their protection against a frozen index).\n"
    "  --channel NAME      the index's channel (default: the existing index's, else stable)\n"
    "  --valid-for SECONDS how long devices accept the index (default 604800: 7 days)\n"
    "  --serial N          the index serial (default: the existing one + 1)\n"
    "  --no-objects        archive and index only (devices fetch whole archives)\n"
    "  --dev-key-dir DIR   sign with the development key catalog pack made there\n"
    "  --max-validity S    the longest validity (--valid-for) devices accept from this\n"
    "                      channel, recorded in the signed index (default: the index's,\n"
    "                      else 7776000: 90 days; devices never accept more than 366 days)\n"
    "  --max-serial-step N how far above the serial a device accepted last the next one\n"
    "                      may be, recorded likewise (default: the index's, else 1000000)\n"
    "Channels: publish each channel into its own folder, and sign each with its own\n"
    "key (catalog keygen once per channel; sign that channel's archives with it too),\n"
    "so that a leaked beta key cannot sign a stable index. A device follows one\n"
    "channel (rtl pull --channel NAME on its first pull, recorded in ROOT/pull/channel)\n"
    "and refuses any other; to pin a channel's key, copy it to the device as\n"
    "ROOT/keys/channels/NAME.pub: then only that key may sign NAME's index and catalogs.\n";

static int usage_error(void)
{
    fputs(help, stderr);
    return 2;
}

static int num(const char *opt, const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "catalog: %s needs an integer in %lld..%lld, not '%s'\n", opt, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

int cat_cli_publish(int argc, char **argv)
{
    static const struct option lo[] = {
        {"help", no_argument, 0, 'h'},          {"key", required_argument, 0, 'k'},
        {"passphrase-file", required_argument, 0, 'F'}, {"passphrase-env", required_argument, 0, 'E'},
        {"dev-key-dir", required_argument, 0, 'd'}, {"channel", required_argument, 0, 'c'},
        {"valid-for", required_argument, 0, 'v'}, {"serial", required_argument, 0, 'n'},
        {"no-objects", no_argument, 0, 'N'},    {"refresh", no_argument, 0, 'R'},
        {"allow-downgrade", no_argument, 0, 'D'}, {"max-validity", required_argument, 0, 'V'},
        {"max-serial-step", required_argument, 0, 'S'}, {0, 0, 0, 0}};
    struct cat_publish_options o = {.objects = 1, .valid_for = 604800};
    const char *key_path = NULL, *pass_file = NULL, *pass_env = NULL, *dev_dir = NULL;
    int refresh = 0, c;
    long long v;
    optind = 1;
    opterr = 0; /* the reason is ours, named after the program and verb */
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(help, stdout); return 0;
        case 'o': o.dest = optarg; break;
        case 'k': key_path = optarg; break;
        case 'F': pass_file = optarg; break;
        case 'E': pass_env = optarg; break;
        case 'd': dev_dir = optarg; break;
        case 'c': o.channel = optarg; break;
        case 'N': o.objects = 0; break;
        case 'R': refresh = 1; break;
        case 'D': o.allow_downgrade = 1; break;
        case 'v':
            if (num("--valid-for", optarg, 1, 100LL * 365 * 86400, &v) != 0) return usage_error();
            o.valid_for = v;
            break;
        case 'V':
            if (num("--max-validity", optarg, 1, 366LL * 86400, &v) != 0) return usage_error();
            o.max_validity = v;
            break;
        case 'S':
            if (num("--max-serial-step", optarg, 1, 4294967296LL, &v) != 0) return usage_error();
            o.max_serial_step = (uint64_t)v;
            break;
        case 'n':
            if (num("--serial", optarg, 1, 9007199254740991LL, &v) != 0) return usage_error();
            o.serial = (uint64_t)v;
            break;
        default:
            fprintf(stderr, "catalog publish: unknown option or missing value: '%s'\n",
                    argv[optind > 1 ? optind - 1 : 0]);
            return usage_error();
        }
    }
    int nargs = argc - optind;
    if (!o.dest || (refresh ? nargs != 0 : (nargs < 1 || nargs > 2)) || (!key_path == !dev_dir) ||
        (pass_file && pass_env) || ((pass_file || pass_env) && !key_path)) {
        if (!key_path == !dev_dir) fprintf(stderr, "catalog: publish needs exactly one of --key and --dev-key-dir\n");
        return usage_error();
    }
    if (!refresh) {
        o.archive = argv[optind];
        if (nargs == 2) o.sig = argv[optind + 1];
    }
    trn_err err;
    char pass[1024], sec[4096];
    const char *pw = NULL;
    if (pass_file || pass_env) {
        if (cat_passphrase(pass_file, pass_env, pass, sizeof pass, &err) != 0) {
            fprintf(stderr, "catalog: error: %s\n", err.msg);
            return 1;
        }
        pw = pass;
    }
    if (dev_dir) snprintf(sec, sizeof sec, "%s/catalog-dev.key", dev_dir);
    cat_seckey *key = cat_seckey_load(key_path ? key_path : sec, pw, &err);
    if (!key) {
        fprintf(stderr, "catalog: error: %s%s\n", err.msg,
                dev_dir ? " (catalog pack --dev-key-dir makes the development key)" : "");
        return 1;
    }
    if (cat_seckey_is_development(key))
        fprintf(stderr, "catalog: WARNING: the index is signed with a DEVELOPMENT key: devices must not trust it\n");
    o.key = key;
    o.now = (int64_t)time(NULL);
    struct cat_publish_result r;
    int rc = cat_publish(&o, &r, &err);
    cat_seckey_free(key);
    if (rc != 0) {
        fprintf(stderr, "catalog: error: %s\n", err.msg);
        return 1;
    }
    char exp[64];
    time_t t = (time_t)r.expires;
    struct tm tm;
    strftime(exp, sizeof exp, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
    if (r.catalog[0])
        printf("published catalog %s version %" PRIu64 " (%" PRIu64 " objects) into %s\n", r.catalog, r.version,
               r.objects, o.dest);
    printf("index %s serial %" PRIu64 " valid until %s\n", r.channel, r.serial, exp);
    return 0;
}
