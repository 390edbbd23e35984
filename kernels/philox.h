/*
 * Philox-4x32-10 (Salmon et al., SC'11), the counter-based generator behind
 * dropout. Pure integer arithmetic, so every backend produces the same bits;
 * the element-to-counter rule is stated in src/unifuse/activation.h.
 */
#ifndef UF_PHILOX_H
#define UF_PHILOX_H

#include <stdint.h>

#include "layer.h" /* uf_mul_hilo */

/* The round multipliers and the key schedule's increments (Weyl sequence). */
#define UF_PHILOX_M0 0xD2511F53u
#define UF_PHILOX_M1 0xCD9E8D57u
#define UF_PHILOX_W0 0x9E3779B9u
#define UF_PHILOX_W1 0xBB67AE85u

/* Elements per counter: each 32-bit word gives two 16-bit draws. */
#define UF_PHILOX_GROUP 8

/* Four 32-bit words for one counter. */
typedef struct uf_philox4 {
    uint32_t v[4];
} uf_philox4;

/* UF_PHILOX_WIDE_WORDS (a layer constant, 0 where the layer leaves it
 * undefined): 1 to hold each word in 64 bits, its low 32 the word and its
 * high 32 whatever the round left there. A round then needs no split of
 * its products: each is one 32 x 32 -> 64-bit multiply of a low half, and
 * its high word one shift. Where 64-bit lanes multiply their low halves
 * (AVX-512's vpmuludq) that spares the vectorised loop the shuffles that
 * pair even and odd 32-bit lanes. */
#ifndef UF_PHILOX_WIDE_WORDS
#define UF_PHILOX_WIDE_WORDS 0
#endif

UF_FN uf_philox4 uf_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                  uint32_t k1)
{
#if UF_PHILOX_WIDE_WORDS
    uint64_t w0 = c0, w1 = c1, w2 = c2, w3 = c3;
    UF_UNROLL for (int round = 0; round < 10; ++round)
    {
        const uint64_t p0 = (uint64_t)(uint32_t)w0 * UF_PHILOX_M0;
        const uint64_t p1 = (uint64_t)(uint32_t)w2 * UF_PHILOX_M1;
        w0 = (p1 >> 32) ^ w1 ^ k0;
        w1 = p1;
        w2 = (p0 >> 32) ^ w3 ^ k1;
        w3 = p0;
        k0 += UF_PHILOX_W0;
        k1 += UF_PHILOX_W1;
    }
    const uf_philox4 r = {{(uint32_t)w0, (uint32_t)w1, (uint32_t)w2, (uint32_t)w3}};
    return r;
#else
    UF_UNROLL for (int round = 0; round < 10; ++round)
    {
        uint32_t hi0, hi1;
        const uint32_t lo0 = uf_mul_hilo(UF_PHILOX_M0, c0, &hi0);
        const uint32_t lo1 = uf_mul_hilo(UF_PHILOX_M1, c2, &hi1);
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += UF_PHILOX_W0;
        k1 += UF_PHILOX_W1;
    }
    const uf_philox4 r = {{c0, c1, c2, c3}};
    return r;
#endif
}

/* The words for elements 8g .. 8g+7 of a call with this seed and offset. */
UF_FN uf_philox4 uf_philox_group(uint64_t seed, uint64_t offset, uint64_t g)
{
    return uf_philox4x32_10((uint32_t)g, (uint32_t)(g >> 32), (uint32_t)offset,
                            (uint32_t)(offset >> 32), (uint32_t)seed, (uint32_t)(seed >> 32));
}

#endif
