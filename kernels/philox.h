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

UF_FN uf_philox4 uf_philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                                  uint32_t k1)
{
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
}

/* The words for elements 8g .. 8g+7 of a call with this seed and offset. */
UF_FN uf_philox4 uf_philox_group(uint64_t seed, uint64_t offset, uint64_t g)
{
    return uf_philox4x32_10((uint32_t)g, (uint32_t)(g >> 32), (uint32_t)offset,
                            (uint32_t)(offset >> 32), (uint32_t)seed, (uint32_t)(seed >> 32));
}

#endif
