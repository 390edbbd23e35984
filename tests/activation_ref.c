#include "activation_ref.h"

#include <math.h>

static const double selu_alpha = 1.6732632423543772848170429916717;
static const double selu_lambda = 1.0507009873554804934193349852946;
static const double gelu_k = 0.7978845608028654; /* sqrt(2 / pi) */

static double logistic(double x)
{
    return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

static double softplus_ref(double x, double beta, double threshold)
{
    return x * beta > threshold ? x : log1p(exp(beta * x)) / beta;
}

double ar_forward(uf_activation kind, double a, double b, double x)
{
    if (isnan(x))
        return x;
    switch (kind) {
    case UF_ACT_IDENTITY:
        return x;
    case UF_ACT_SIGMOID:
        return logistic(x);
    case UF_ACT_LOGSIGMOID: /* -softplus(-x), without exp's overflow for x < -709 */
        return fmin(x, 0) - log1p(exp(-fabs(x)));
    case UF_ACT_TANH:
        return tanh(x);
    case UF_ACT_RELU:
        return fmax(x, 0);
    case UF_ACT_GELU:
        return x * 0.5 * erfc(-x / sqrt(2.0));
    case UF_ACT_GELU_TANH:
        return 0.5 * x * (1 + tanh(gelu_k * (x + 0.044715 * pow(x, 3))));
    case UF_ACT_SILU:
        return x * logistic(x);
    case UF_ACT_RELU6:
        return fmin(fmax(x, 0), 6);
    case UF_ACT_HARDSIGMOID:
        return fmin(fmax(x + 3, 0), 6) / 6;
    case UF_ACT_HARDTANH:
        return fmin(fmax(x, a), b);
    case UF_ACT_HARDSWISH:
        return x * fmin(fmax(x + 3, 0), 6) / 6;
    case UF_ACT_SELU:
        return x > 0 ? selu_lambda * x : selu_lambda * selu_alpha * expm1(x);
    case UF_ACT_MISH:
        return x * tanh(softplus_ref(x, 1, INFINITY));
    case UF_ACT_SOFTPLUS:
        return softplus_ref(x, a, b);
    case UF_ACT_SOFTSIGN:
        return x / (1 + fabs(x));
    case UF_ACT_TANHSHRINK:
        return x - tanh(x);
    case UF_ACT_LEAKY_RELU:
        return x > 0 ? x : a * x;
    case UF_ACT_ELU:
        return x > 0 ? x : a * expm1(x);
    case UF_ACT_CELU:
        return fmax(0, x) + fmin(0, a * expm1(x / a));
    case UF_ACT_HARDSHRINK:
        return fabs(x) <= a ? 0 : x;
    case UF_ACT_SOFTSHRINK:
        return fabs(x) <= a ? 0 : x - copysign(a, x);
    default:
        return NAN;
    }
}

double ar_derivative(uf_activation kind, double a, double b, double x)
{
    if (kind == UF_ACT_IDENTITY) /* x is not read at all */
        return 1;
    if (isnan(x))
        return x;
    switch (kind) {
    case UF_ACT_SIGMOID:
        return logistic(x) * logistic(-x);
    case UF_ACT_LOGSIGMOID:
        return logistic(-x);
    case UF_ACT_TANH:
        return 1 / (cosh(x) * cosh(x));
    case UF_ACT_RELU:
        return x > 0;
    case UF_ACT_GELU:
        return 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-x * x / 2) / sqrt(2 * 3.14159265358979323846);
    case UF_ACT_GELU_TANH: {
        const double u = gelu_k * (x + 0.044715 * x * x * x), t = tanh(u);
        const double du = gelu_k * (1 + 3 * 0.044715 * x * x), c = cosh(u);
        /* Its limit, 0, where cosh overflows (x infinite: inf / inf). */
        return 0.5 * (1 + t) + (isinf(c) ? 0 : 0.5 * x * du / (c * c));
    }
    case UF_ACT_SILU:
        return logistic(x) + x * logistic(x) * logistic(-x);
    case UF_ACT_RELU6:
        return x > 0 && x < 6;
    case UF_ACT_HARDSIGMOID:
        return fabs(x) < 3 ? 1.0 / 6 : 0;
    case UF_ACT_HARDTANH:
        return x > a && x < b;
    case UF_ACT_HARDSWISH:
        return x <= -3 ? 0 : (x >= 3 ? 1 : (2 * x + 3) / 6);
    case UF_ACT_SELU:
        return x > 0 ? selu_lambda : selu_lambda * selu_alpha * exp(x);
    case UF_ACT_MISH: {
        const double sp = softplus_ref(x, 1, INFINITY), t = tanh(sp);
        return t + x * logistic(x) / (cosh(sp) * cosh(sp));
    }
    case UF_ACT_SOFTPLUS:
        return x * a > b ? 1 : logistic(a * x);
    case UF_ACT_SOFTSIGN:
        return pow(1 + fabs(x), -2);
    case UF_ACT_TANHSHRINK:
        return tanh(x) * tanh(x);
    case UF_ACT_LEAKY_RELU:
        return x > 0 ? 1 : a;
    case UF_ACT_ELU:
        return x > 0 ? 1 : a * exp(x);
    case UF_ACT_CELU:
        return x > 0 ? 1 : exp(x / a);
    case UF_ACT_HARDSHRINK:
    case UF_ACT_SOFTSHRINK:
        return fabs(x) <= a ? 0 : 1;
    default:
        return NAN;
    }
}

int ar_breakpoints(uf_activation kind, double a, double b, double *pts)
{
    switch (kind) {
    case UF_ACT_RELU:
    case UF_ACT_LEAKY_RELU:
    case UF_ACT_ELU:
    case UF_ACT_CELU:
    case UF_ACT_SELU:
        pts[0] = 0;
        return 1;
    case UF_ACT_RELU6:
        pts[0] = 0;
        pts[1] = 6;
        return 2;
    case UF_ACT_HARDSIGMOID:
    case UF_ACT_HARDSWISH:
        pts[0] = -3;
        pts[1] = 3;
        return 2;
    case UF_ACT_HARDTANH:
        pts[0] = a;
        pts[1] = b;
        return 2;
    case UF_ACT_HARDSHRINK:
    case UF_ACT_SOFTSHRINK:
        pts[0] = -a;
        pts[1] = a;
        return 2;
    case UF_ACT_SOFTPLUS:
        pts[0] = b / a; /* where beta x meets the threshold */
        return 1;
    default:
        return 0;
    }
}

uf_activation_desc ar_custom(uf_activation kind)
{
    uf_activation_desc d = uf_activation_default(kind);
    switch (kind) {
    case UF_ACT_HARDTANH:
        d.param[0] = -2;
        d.param[1] = 3.5;
        break;
    case UF_ACT_SOFTPLUS:
        d.param[0] = 2;
        d.param[1] = 10;
        break;
    case UF_ACT_LEAKY_RELU:
        d.param[0] = 0.25;
        break;
    case UF_ACT_ELU:
        d.param[0] = 0.5;
        break;
    case UF_ACT_CELU:
        d.param[0] = 2;
        break;
    case UF_ACT_HARDSHRINK:
    case UF_ACT_SOFTSHRINK:
        d.param[0] = 1.5;
        break;
    default:
        break;
    }
    return d;
}
