/*
 * cli_info.c: `trainer info`: the per-layer table and totals of a cfg, by
 * the cost convention of docs/design.md (MACs; bias, batch-norm, activation
 * and pooling operations separate; float32 bytes; peak live activations
 * at batch 1). --json prints the "cost" object of variant.json.
 */
#include "cli.h"
#include "clikit.h"

#include <string.h>

static void print_json(const trn_net *net)
{
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    printf("{\"macs\":%llu,\"params\":%llu,\"weight_bytes\":%llu,\"peak_activation_bytes\":%llu,"
           "\"bias_ops\":%llu,\"bn_ops\":%llu,\"act_ops\":%llu,\"pool_ops\":%llu,\"layers\":[",
           (unsigned long long)t.macs, (unsigned long long)t.params,
           (unsigned long long)t.weight_bytes, (unsigned long long)t.peak_activation_bytes,
           (unsigned long long)t.bias_ops, (unsigned long long)t.bn_ops,
           (unsigned long long)t.act_ops, (unsigned long long)t.pool_ops);
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        printf("%s{\"index\":%d,\"type\":\"%s\",\"output\":[%d,%d,%d],\"macs\":%llu,\"params\":%llu,"
               "\"output_bytes\":%llu,\"line\":%d}",
               i ? "," : "", i, trn_layer_kind_name(in.kind), in.out.c, in.out.h, in.out.w,
               (unsigned long long)in.macs, (unsigned long long)in.params,
               (unsigned long long)in.output_bytes, in.line);
    }
    printf("]}\n");
}

static void human(double v, char *buf, size_t size)
{
    const char *u = "";
    if (v >= 1e9) v /= 1e9, u = "G";
    else if (v >= 1e6) v /= 1e6, u = "M";
    else if (v >= 1e3) v /= 1e3, u = "k";
    snprintf(buf, size, *u ? "%.2f%s" : "%.0f%s", v, u);
}

static void print_table(const trn_net *net, const char *path)
{
    printf("%s: input %dx%dx%d (c x h x w), batch %d\n", path, trn_net_input_shape(net).c,
           trn_net_input_shape(net).h, trn_net_input_shape(net).w, trn_net_batch(net));
    printf("%5s %-14s %5s %16s %16s %10s %10s %10s  %s\n", "layer", "kind", "line", "input",
           "output", "params", "MACs", "out bytes", "detail");
    for (int i = 0; i < trn_net_layers(net); i++) {
        trn_layer_info in;
        trn_net_layer_info(net, i, &in);
        char is[32], os[32], p[16], m[16], ob[16], det[96] = "";
        snprintf(is, sizeof is, "%dx%dx%d", in.in.c, in.in.h, in.in.w);
        snprintf(os, sizeof os, "%dx%dx%d", in.out.c, in.out.h, in.out.w);
        human((double)in.params, p, sizeof p);
        human((double)in.macs, m, sizeof m);
        human((double)in.output_bytes, ob, sizeof ob);
        if (in.kind == TRN_LAYER_CONVOLUTIONAL)
            snprintf(det, sizeof det, "%d %dx%d/%d pad %d%s%s %s", in.filters, in.size, in.size,
                     in.stride, in.pad, in.groups > 1 ? " groups" : "", in.batch_normalize ? " bn" : "",
                     trn_activation_name(in.activation));
        else if (in.kind == TRN_LAYER_CONNECTED)
            snprintf(det, sizeof det, "%d%s %s", in.filters, in.batch_normalize ? " bn" : "",
                     trn_activation_name(in.activation));
        else if (in.kind == TRN_LAYER_MAXPOOL)
            snprintf(det, sizeof det, "%dx%d/%d padding %d", in.size, in.size, in.stride, in.pad);
        else if (in.kind == TRN_LAYER_ROUTE || in.kind == TRN_LAYER_SHORTCUT) {
            size_t o = 0;
            o += (size_t)snprintf(det + o, sizeof det - o, "from");
            for (int k = 0; k < in.n_from && k < 8 && o < sizeof det; k++)
                o += (size_t)snprintf(det + o, sizeof det - o, " %d", in.from[k]);
        }
        printf("%5d %-14s %5d %16s %16s %10s %10s %10s  %s\n", i, trn_layer_kind_name(in.kind),
               in.line, is, os, p, m, ob, det);
    }
    trn_net_totals t;
    trn_net_get_totals(net, &t);
    printf("total: %llu parameters (%.2f MB float32), %llu MACs (%.3f GFLOPs), peak activations "
           "%.2f MB at batch 1\n",
           (unsigned long long)t.params, t.weight_bytes / 1e6, (unsigned long long)t.macs,
           2.0 * t.macs / 1e9, t.peak_activation_bytes / 1e6);
    printf("       besides: %llu bias adds, %llu batch-norm ops, %llu activations, %llu pooling ops\n",
           (unsigned long long)t.bias_ops, (unsigned long long)t.bn_ops,
           (unsigned long long)t.act_ops, (unsigned long long)t.pool_ops);
}

int cli_info(int argc, char **argv)
{
    const char *cfg = NULL, *operand = NULL, *weights = NULL;
    ck_list set = {.n = 0};
    int json = 0, rc;
    const ck_opt opts[] = {
        {"--cfg", "FILE", CK_STR, &cfg, 0, 0, "the network (Darknet cfg); may be given without --cfg"},
        {"--set", "key=value", CK_LIST, &set, 0, 0, "override a [net] key first (repeatable)"},
        {"--weights", "FILE", CK_STR, &weights, 0, 0,
         "also load these Darknet .weights into the cfg: exit 1, naming the first\n"
         "array that does not fit, unless they are exactly the cfg's (a check\n"
         "before a trained model is used, e.g. make BASE_WEIGHTS=...)"},
        {"--json", NULL, CK_FLAG, &json, 0, 0,
         "print the cost object of variant.json instead:\n"
         "{\"macs\",\"params\",\"weight_bytes\",\"peak_activation_bytes\",\n"
         " \"bias_ops\",\"bn_ops\",\"act_ops\",\"pool_ops\",\n"
         " \"layers\":[{\"index\",\"type\",\"output\":[c,h,w],\"macs\",\"params\",\n"
         "            \"output_bytes\",\"line\"}]}\n"
         "(catalog/manifest.schema.json, $defs/cost)"},
        {0},
    };
    const ck_verb v = {
        "info", NULL, cli_info, "[--cfg] FILE.cfg [--set key=value]... [--weights FILE] [--json]",
        "Prints one line per layer (index, kind, cfg line, input and output c x h x w,\n"
        "parameters, MACs, output bytes) and the totals, per image.\n",
        opts, NULL,
    };
    int n = ck_parse("trainer", &v, argc, argv, &operand, 1, &rc);
    if (n < 0) return rc;
    if (cli_cfg_operand("info", &cfg, operand)) return 2;
    cli_sets sets = {0};
    if (cli_add_sets(&sets, "info", &set)) return 2;
    if (!cfg) return cli_usage("info", "no cfg given");
    int setrc = cli_check_sets("info", cfg, &sets);
    if (setrc) return setrc;
    trn_cfg *c = cli_cfg("info", cfg, &sets);
    if (!c) return 1;
    trn_net_opts o;
    trn_net_opts_defaults(&o);
    o.batch = 1;
    o.infer_only = 1;
    o.external_params = !weights; /* shapes and costs need no parameter memory */
    trn_err e;
    trn_net *net = trn_net_create(c, &o, &e);
    trn_cfg_free(c);
    if (!net) return cli_fail("info", "%s", e.msg);
    if (weights && trn_weights_load(net, weights, &e) != 0) {
        trn_net_free(net);
        return cli_fail("info", "%s (cfg %s)", e.msg, cfg);
    }
    if (json)
        print_json(net);
    else
        print_table(net, cfg);
    trn_net_free(net);
    return 0;
}
