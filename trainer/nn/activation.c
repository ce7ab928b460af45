/*
 * activation.c: Darknet's activation functions and their gradients, and the
 * names of the enums of trn.h.
 *
 * Formulas are Darknet's (src/activations.h); gradients are functions of
 * the activation's output y, as Darknet computes them. Differences: tanh
 * uses tanhf (Darknet's (e^2x-1)/(e^2x+1) overflows to NaN for x > 44),
 * logistic and elu use float exp.
 */
#include "net.h"
#include "portable.h"

#include <math.h>
#include <string.h>

static const char *const act_names[] = {
    [TRN_ACT_LINEAR] = "linear",   [TRN_ACT_RELU] = "relu",       [TRN_ACT_LEAKY] = "leaky",
    [TRN_ACT_LOGISTIC] = "logistic", [TRN_ACT_TANH] = "tanh",     [TRN_ACT_ELU] = "elu",
    [TRN_ACT_RAMP] = "ramp",       [TRN_ACT_LOGGY] = "loggy",     [TRN_ACT_RELIE] = "relie",
    [TRN_ACT_PLSE] = "plse",       [TRN_ACT_HARDTAN] = "hardtan", [TRN_ACT_LHTAN] = "lhtan",
    [TRN_ACT_SELU] = "selu",       [TRN_ACT_STAIR] = "stair",
};
_Static_assert(sizeof act_names / sizeof *act_names == TRN_ACT_COUNT, "an activation has no name");

const char *trn_activation_name(trn_activation a)
{
    return (unsigned)a < TRN_ACT_COUNT ? act_names[a] : "?";
}

int trn_activation_parse(const char *s)
{
    for (int i = 0; i < TRN_ACT_COUNT; i++)
        if (strcmp(s, act_names[i]) == 0) return i;
    return -1;
}

static const char *const policy_names[] = {
    [TRN_POLICY_CONSTANT] = "constant", [TRN_POLICY_STEP] = "step", [TRN_POLICY_STEPS] = "steps",
    [TRN_POLICY_EXP] = "exp",           [TRN_POLICY_POLY] = "poly", [TRN_POLICY_SIG] = "sigmoid",
};
_Static_assert(sizeof policy_names / sizeof *policy_names == TRN_POLICY_COUNT,
               "a policy has no name");

const char *trn_policy_name(trn_policy p)
{
    return (unsigned)p < TRN_POLICY_COUNT ? policy_names[p] : "?";
}

static const char *const role_names[] = {
    [TRN_PARAM_BIASES] = "biases",
    [TRN_PARAM_SCALES] = "scales",
    [TRN_PARAM_ROLLING_MEAN] = "rolling_mean",
    [TRN_PARAM_ROLLING_VARIANCE] = "rolling_variance",
    [TRN_PARAM_WEIGHTS] = "weights",
};
_Static_assert(sizeof role_names / sizeof *role_names == TRN_PARAM_ROLE_COUNT,
               "a parameter role has no name");

const char *trn_param_role_name(trn_param_role r)
{
    return (unsigned)r < TRN_PARAM_ROLE_COUNT ? role_names[r] : "?";
}

float trn_activate1(float x, trn_activation a)
{
    switch (a) {
    case TRN_ACT_LINEAR: return x;
    case TRN_ACT_RELU: return x * (x > 0);
    case TRN_ACT_LEAKY: return x > 0 ? x : 0.1f * x;
    case TRN_ACT_LOGISTIC: return 1.0f / (1.0f + trn_expf(-x));
    case TRN_ACT_TANH: return trn_tanhf(x);
    case TRN_ACT_ELU: return (x >= 0) * x + (x < 0) * (trn_expf(x) - 1);
    case TRN_ACT_RAMP: return x * (x > 0) + 0.1f * x;
    case TRN_ACT_LOGGY: return 2.0f / (1.0f + trn_expf(-x)) - 1;
    case TRN_ACT_RELIE: return x > 0 ? x : 0.01f * x;
    case TRN_ACT_PLSE:
        if (x < -4) return 0.01f * (x + 4);
        if (x > 4) return 0.01f * (x - 4) + 1;
        return 0.125f * x + 0.5f;
    case TRN_ACT_HARDTAN:
        if (x < -1) return -1;
        if (x > 1) return 1;
        return x;
    case TRN_ACT_LHTAN:
        if (x < 0) return 0.001f * x;
        if (x > 1) return 0.001f * (x - 1) + 1;
        return x;
    case TRN_ACT_SELU:
        return (x >= 0) * 1.0507f * x + (x < 0) * 1.0507f * 1.6732f * (trn_expf(x) - 1);
    case TRN_ACT_STAIR: {
        /* Darknet's int n = floor(x), without the int (no overflow for huge x) */
        float n = floorf(x);
        if (fmodf(n, 2) == 0) return floorf(x / 2);
        return (x - n) + floorf(x / 2);
    }
    case TRN_ACT_COUNT: break;
    }
    return 0;
}

float trn_gradient1(float y, trn_activation a)
{
    switch (a) {
    case TRN_ACT_LINEAR: return 1;
    case TRN_ACT_RELU: return y > 0;
    case TRN_ACT_LEAKY: return y > 0 ? 1 : 0.1f;
    case TRN_ACT_LOGISTIC: return (1 - y) * y;
    case TRN_ACT_TANH: return 1 - y * y;
    case TRN_ACT_ELU: return (y >= 0) + (y < 0) * (y + 1);
    case TRN_ACT_RAMP: return (y > 0) + 0.1f;
    case TRN_ACT_LOGGY: {
        float t = (y + 1) / 2;
        return 2 * (1 - t) * t;
    }
    case TRN_ACT_RELIE: return y > 0 ? 1 : 0.01f;
    case TRN_ACT_PLSE: return (y < 0 || y > 1) ? 0.01f : 0.125f;
    case TRN_ACT_HARDTAN: return (y > -1 && y < 1) ? 1 : 0;
    case TRN_ACT_LHTAN: return (y > 0 && y < 1) ? 1 : 0.001f;
    case TRN_ACT_SELU: return (y >= 0) * 1.0507f + (y < 0) * (y + 1.0507f * 1.6732f);
    case TRN_ACT_STAIR: return floorf(y) == y ? 0 : 1;
    case TRN_ACT_COUNT: break;
    }
    return 0;
}
