/* Checks of activation and dropout descriptors, shared by every call that
 * takes them (activation, epilogue). */
#include "activation_checks.h"

#include <float.h>
#include <math.h>

int uf_finite_f32(double v)
{
    return isfinite(v) && fabs(v) <= FLT_MAX;
}

/* How many parameters each activation reads. */
static int param_count(uf_activation kind)
{
    switch (kind) {
    case UF_ACT_HARDTANH:
    case UF_ACT_SOFTPLUS:
        return 2;
    case UF_ACT_LEAKY_RELU:
    case UF_ACT_ELU:
    case UF_ACT_CELU:
    case UF_ACT_HARDSHRINK:
    case UF_ACT_SOFTSHRINK:
        return 1;
    default:
        return 0;
    }
}

uf_status uf_check_activation(const uf_activation_desc *act, int *kind, double param[2])
{
    const uf_activation_desc d = act ? *act : uf_activation_default(UF_ACT_IDENTITY);
    if ((int)d.kind < 0 || d.kind >= UF_ACT_COUNT)
        return UF_ERR_BAD_ARGUMENT;
    const int np = param_count(d.kind);
    for (int i = 0; i < np; ++i)
        if (!uf_finite_f32(d.param[i]))
            return UF_ERR_BAD_VALUE;
    const double p0 = d.param[0], p1 = d.param[1];
    if ((d.kind == UF_ACT_HARDTANH && p0 > p1) || (d.kind == UF_ACT_SOFTPLUS && p0 == 0) ||
        (d.kind == UF_ACT_CELU && p0 == 0) ||
        ((d.kind == UF_ACT_HARDSHRINK || d.kind == UF_ACT_SOFTSHRINK) && p0 < 0))
        return UF_ERR_BAD_VALUE;
    *kind = d.kind;
    param[0] = np > 0 ? p0 : 0;
    param[1] = np > 1 ? p1 : 0;
    return UF_OK;
}

uf_status uf_check_dropout(const uf_dropout_desc *drop, uint32_t *threshold, double *keep_scale,
                           uint64_t *seed, uint64_t *offset)
{
    const double p = drop ? drop->p : 0.0;
    if (!(p >= 0.0 && p <= 1.0)) /* also rejects NaN */
        return UF_ERR_BAD_VALUE;
    *threshold = (uint32_t)ceil(p * 65536.0); /* exact: p * 2^16 only shifts the exponent */
    *keep_scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
    *seed = drop ? drop->seed : 0;
    *offset = drop ? drop->offset : 0;
    return UF_OK;
}
