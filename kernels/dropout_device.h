/*
 * The dropout decision for one unit of UF_ACT_UNIT elements, shared by every
 * kernel that drops (activation forward and backward, the epilogue): bit e
 * of the result is 1 when element unit * 8 + e is kept. The rule is stated
 * in src/unifuse/activation.h: one Philox call draws eight elements, a
 * 16-bit draw each (the low half of word w for element 2w, the high half
 * for 2w + 1).
 */
#ifndef UF_DROPOUT_DEVICE_H
#define UF_DROPOUT_DEVICE_H

#include "kernels/activation_args.h"
#include "kernels/philox.h"

/* A unit is exactly one Philox group: the kernels draw a unit's keep bits
 * with one call. */
typedef char uf_dropout_unit_is_one_group[UF_ACT_UNIT == UF_PHILOX_GROUP ? 1 : -1];

/* An element is kept when its 16-bit draw d has d >= threshold (1 ..
 * 2^16), which is (d << 16) > uf_dropout_cut(threshold) whichever half of
 * the word d came from: one comparison per element, no mask. At threshold
 * 2^16 (p = 1) the cut wraps to all ones and nothing is kept. */
UF_FN uint32_t uf_dropout_cut(uint32_t threshold)
{
    return (threshold << 16) - 1u;
}

/* 1 when element e (0 .. 7) of the Philox group whose words are r is kept,
 * for cut = uf_dropout_cut(threshold). */
UF_FN unsigned uf_dropout_keeps(const uf_philox4 *r, uint32_t cut, int e)
{
    const uint32_t w = r->v[e / 2];
    return (e % 2 ? w : w << 16) > cut;
}

/* Keep bits of Philox group g's eight elements (bit e: element 8 g + e),
 * for cut = uf_dropout_cut(threshold), threshold != 0 (callers test it
 * once, outside their loops over units). A byte: where loops are
 * vectorised (UF_VECTORISED_LOOPS) a loop over groups then runs in more
 * lanes. */
UF_FN uint8_t uf_dropout_byte(uint64_t seed, uint64_t offset, uint32_t cut, uint64_t g)
{
    const uf_philox4 r = uf_philox_group(seed, offset, g);
    unsigned bits = 0;
    UF_UNROLL for (int w = 0; w < 4; ++w)
    {
        bits |= uf_dropout_keeps(&r, cut, 2 * w) << (2 * w);
        bits |= uf_dropout_keeps(&r, cut, 2 * w + 1) << (2 * w + 1);
    }
    return (uint8_t)bits;
}

/* Keep bits of the UF_ACT_UNIT elements from index i0 on, for any i0: the
 * draws of one group, or of two where i0 is not a multiple of eight. */
UF_FN unsigned uf_dropout_bits_at(uint64_t seed, uint64_t offset, uint32_t threshold, int64_t i0)
{
    if (threshold == 0)
        return 0xffu;
    const uint64_t g0 = (uint64_t)i0 / UF_PHILOX_GROUP;
    const int shift = (int)((uint64_t)i0 % UF_PHILOX_GROUP);
    const uint32_t cut = uf_dropout_cut(threshold);
    unsigned wide = uf_dropout_byte(seed, offset, cut, g0); /* bit k: element 8 g0 + k */
    if (shift != 0)
        wide |= (unsigned)uf_dropout_byte(seed, offset, cut, g0 + 1) << 8;
    return (wide >> shift) & 0xffu;
}

/* The bits of a unit that hold elements (the last unit may be partial). */
UF_FN unsigned uf_unit_valid_bits(int64_t count, int64_t first)
{
    const int64_t n = count - first;
    return n >= UF_ACT_UNIT ? 0xffu : (1u << n) - 1u;
}

#endif
