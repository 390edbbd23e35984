/*
 * The dropout decision for one unit of UF_ACT_UNIT elements, shared by every
 * kernel that drops (activation forward and backward; later the epilogue and
 * attention): bit e of the result is 1 when element unit * 8 + e is kept.
 */
#ifndef UF_DROPOUT_DEVICE_H
#define UF_DROPOUT_DEVICE_H

#include "kernels/activation_args.h"
#include "kernels/philox.h"

/* An element is kept when its draw d has (d >> 8) >= threshold, which for
 * threshold >= 1 is d > uf_dropout_cut(threshold): one comparison instead
 * of a shift and a comparison. At threshold 2^24 (p = 1) the cut wraps to
 * all ones, and nothing is kept, as before. */
UF_FN uint32_t uf_dropout_cut(uint32_t threshold)
{
    return (threshold << 8) - 1u;
}

/* Keep bits of the UF_ACT_UNIT elements of unit `unit` (bit e: element
 * unit * 8 + e), for threshold != 0 (callers test it once, outside their
 * loops over units). */
UF_FN unsigned uf_dropout_bits(uint64_t seed, uint64_t offset, uint32_t threshold, int64_t unit)
{
    const uint32_t cut = uf_dropout_cut(threshold);
    unsigned bits = 0;
    UF_UNROLL for (int h = 0; h < UF_ACT_UNIT / 4; ++h)
    {
        const uf_philox4 r = uf_philox_group(seed, offset, (uint64_t)unit * (UF_ACT_UNIT / 4) + h);
        UF_UNROLL for (int w = 0; w < 4; ++w) bits |= (unsigned)(r.v[w] > cut) << (4 * h + w);
    }
    return bits;
}

/* Keep bits of Philox group g's four elements (bit w: element 4 g + w),
 * for cut = uf_dropout_cut(threshold), threshold != 0. A byte, not a word:
 * where loops are vectorised (UF_VECTORISED_LOOPS), a loop over groups
 * then runs in more lanes than uf_dropout_bits over units (measured alone
 * on the 2-core Debian machine, 2026-12-01: 0.56 -> 0.72 G elements per
 * second per core for x86-64, 1.2 -> 1.75 for x86-64-v4). */
UF_FN uint8_t uf_dropout_nibble(uint64_t seed, uint64_t offset, uint32_t cut, uint64_t g)
{
    const uf_philox4 r = uf_philox_group(seed, offset, g);
    unsigned bits = 0;
    UF_UNROLL for (int w = 0; w < 4; ++w) bits |= (unsigned)(r.v[w] > cut) << w;
    return (uint8_t)bits;
}

/* Keep bits of the UF_ACT_UNIT elements from index i0 on, for any i0: the
 * draws of up to three groups, gathered with constant indices so they stay
 * in registers. */
UF_FN unsigned uf_dropout_bits_at(uint64_t seed, uint64_t offset, uint32_t threshold, int64_t i0)
{
    if (threshold == 0)
        return 0xffu;
    const int64_t g0 = i0 / 4;
    const int shift = (int)(i0 % 4);
    const uint32_t cut = uf_dropout_cut(threshold);
    unsigned wide = 0; /* bit k: element 4 * g0 + k is kept */
    UF_UNROLL for (int h = 0; h < UF_ACT_UNIT / 4 + 1; ++h)
    {
        if (h == UF_ACT_UNIT / 4 && shift == 0)
            continue; /* aligned: two groups suffice */
        const uf_philox4 r = uf_philox_group(seed, offset, (uint64_t)(g0 + h));
        UF_UNROLL for (int w = 0; w < 4; ++w) wide |= (unsigned)(r.v[w] > cut) << (4 * h + w);
    }
    return (wide >> shift) & 0xffu;
}

/* The bits of a unit that hold elements (the last unit may be partial). */
UF_FN unsigned uf_unit_valid_bits(int64_t count, int64_t first)
{
    const int64_t n = count - first;
    return n >= UF_ACT_UNIT ? 0xffu : (1u << n) - 1u;
}

#endif
