/*
 * Which keys a query row sees (causal rule and sliding window, bottom-right
 * aligned) and the bias or mask term of a logit; shared by every attention
 * kernel instantiation.
 */
#ifndef UF_ATTENTION_MASK_H
#define UF_ATTENTION_MASK_H

#include "kernels/attention_args.h"

/* Keys [*lo, *hi) may be visible to some query row in [i0, i1). */
UF_FN void uf_att_key_range(const uf_attention_args *a, int64_t i0, int64_t i1, int64_t *lo,
                            int64_t *hi)
{
    const int64_t shift = a->sk - a->sq;
    int64_t l = 0, h = a->sk;
    if (a->win_left >= 0 && i0 + shift - a->win_left > l)
        l = i0 + shift - a->win_left;
    if (a->win_right >= 0 && i1 - 1 + shift + a->win_right + 1 < h)
        h = i1 - 1 + shift + a->win_right + 1;
    *lo = l;
    *hi = h > l ? h : l;
}

/* Query rows [*lo, *hi) may see some key in [j0, j1). */
UF_FN void uf_att_query_range(const uf_attention_args *a, int64_t j0, int64_t j1, int64_t *lo,
                              int64_t *hi)
{
    const int64_t shift = a->sk - a->sq;
    int64_t l = 0, h = a->sq;
    if (a->win_right >= 0 && j0 - shift - a->win_right > l)
        l = j0 - shift - a->win_right;
    if (a->win_left >= 0 && j1 - 1 - shift + a->win_left + 1 < h)
        h = j1 - 1 - shift + a->win_left + 1;
    *lo = l;
    *hi = h > l ? h : l;
}

/* Whether every key of [j0, j1) is inside the row range and the window of
 * every query row of [i0, i1): then no logit of the tile needs a check. */
UF_FN int uf_att_tile_open(const uf_attention_args *a, int64_t i0, int64_t i1, int64_t j0,
                           int64_t j1)
{
    const int64_t shift = a->sk - a->sq;
    if (j1 > a->sk || i1 > a->sq)
        return 0;
    if (a->win_right >= 0 && j1 - 1 > i0 + shift + a->win_right)
        return 0;
    if (a->win_left >= 0 && j0 < i1 - 1 + shift - a->win_left)
        return 0;
    return 1;
}

UF_FN int uf_att_visible(const uf_attention_args *a, int64_t i, int64_t j)
{
    const int64_t d = j - i - (a->sk - a->sq);
    return i < a->sq && j < a->sk && (a->win_left < 0 || d >= -a->win_left) &&
           (a->win_right < 0 || d <= a->win_right);
}

/* Adds the bias of (b, h, i, j) to s, or makes s -inf where the mask hides
 * the key; `dtype` is the call's (a SAME bias has it). */
UF_FN float uf_att_bias(const uf_attention_args *a, int64_t b, int64_t h, int64_t i, int64_t j,
                        float s, int dtype)
{
    const int64_t at = b * a->bs[0] + h * a->bs[1] + i * a->bs[2] + j;
    switch (a->bias_kind) {
    case UF_ATT_BIAS_F32:
        return s + ((const float *)a->bias)[at];
    case UF_ATT_BIAS_SAME:
        if (dtype == UF_F16)
            return s + uf_f16_to_f32(((const uf_f16 *)a->bias)[at]);
        if (dtype == UF_BF16)
            return s + uf_bf16_to_f32(((const uf_bf16 *)a->bias)[at]);
        return s + ((const float *)a->bias)[at];
    case UF_ATT_BIAS_BOOL:
        return ((const unsigned char *)a->bias)[at] ? -INFINITY : s;
    default:
        return s;
    }
}

/* The logit of query i and key j in log2 units (times log2 e: each kernel's
 * exponent is then one 2^x), from the product s of their rows: scaled, -inf
 * where the key is not `seen`, the bias added in natural units first when
 * `full` (the kernels built for calls without bias pass 0). */
UF_FN float uf_att_logit2(const uf_attention_args *a, float s, int seen, int64_t b, int64_t h,
                          int64_t i, int64_t j, int dtype, int full)
{
    const float log2e = 1.4426950408889634f;
    if (!seen)
        return -INFINITY;
    if (!full)
        return s * (a->scale * log2e);
    return uf_att_bias(a, b, h, i, j, s * a->scale, dtype) * log2e;
}

/* The dropout rule of activation.h for element index i: kept or not. */
UF_FN int uf_att_kept(const uf_attention_args *a, int64_t index)
{
    const uint64_t i = (uint64_t)index;
    const uf_philox4 r = uf_philox_group(a->seed, a->offset, i / UF_PHILOX_GROUP);
    const uint32_t word = r.v[i % UF_PHILOX_GROUP / 2];
    return (i % 2 ? word >> 16 : word & 0xffffu) >= a->threshold;
}

#endif
