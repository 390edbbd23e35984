/* Host-side conversion between the floating dtypes, through fp64 (exact for
 * every source format) then rounded once to the destination. */
#include <math.h>
#include <string.h>

#include "checks.h"
#include "portable/f16_bits.h"

static int is_float_dtype(uf_dtype d)
{
    return d == UF_F32 || d == UF_F16 || d == UF_BF16 || d == UF_F64;
}

static double load(const void *src, uf_dtype dt, size_t i)
{
    switch (dt) {
    case UF_F32:
        return ((const float *)src)[i];
    case UF_F16:
        return uf_f16_bits_to_f32(((const uint16_t *)src)[i]);
    case UF_BF16:
        return uf_bf16_bits_to_f32(((const uint16_t *)src)[i]);
    default:
        return ((const double *)src)[i];
    }
}

/* fp64 -> fp32 rounded to odd: truncate, and set the last bit when inexact.
 * Rounding that to a 16-bit format then equals rounding the fp64 value
 * directly, because fp32 keeps more than two extra bits. */
static float round_to_odd_f32(double v)
{
    float f = (float)v;
    if (isnan(v) || (double)f == v)
        return f;
    if (fabs((double)f) > fabs(v))
        f = nextafterf(f, 0.0f);
    return uf_f32_from_bits(uf_bits_from_f32(f) | 1u);
}

static void store(void *dst, uf_dtype dt, size_t i, double v)
{
    switch (dt) {
    case UF_F32:
        ((float *)dst)[i] = (float)v;
        break;
    case UF_F16:
        ((uint16_t *)dst)[i] = uf_f32_to_f16_bits(round_to_odd_f32(v));
        break;
    case UF_BF16:
        ((uint16_t *)dst)[i] = uf_f32_to_bf16_bits(round_to_odd_f32(v));
        break;
    default:
        ((double *)dst)[i] = v;
        break;
    }
}

uf_status uf_convert_host(void *dst, uf_dtype dst_dtype, const void *src, uf_dtype src_dtype,
                          size_t count)
{
    if (!is_float_dtype(dst_dtype) || !is_float_dtype(src_dtype))
        return UF_ERR_BAD_DTYPE;
    if (count == 0)
        return UF_OK;
    if (!dst || !src)
        return UF_ERR_NULL_POINTER;
    const size_t ds = uf_dtype_size(dst_dtype), ss = uf_dtype_size(src_dtype);
    if (count > SIZE_MAX / (ds > ss ? ds : ss))
        return UF_ERR_OVERFLOW;
    if (uf_ranges_overlap(dst, count * ds, src, count * ss) && !(dst == src && ds == ss))
        return UF_ERR_ALIAS;
    for (size_t i = 0; i < count; ++i)
        store(dst, dst_dtype, i, load(src, src_dtype, i));
    return UF_OK;
}
