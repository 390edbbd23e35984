/*
 * Exact division by a divisor fixed at launch, for numbers below 2^31: a
 * multiply and a shift instead of a division, which on GPUs costs tens of
 * instructions (Granlund and Montgomery, "Division by invariant integers
 * using multiplication", 1994: with l = ceil(log2 d) and
 * m = ceil(2^(31 + l) / d), floor(n * m / 2^(31 + l)) = floor(n / d) for
 * every 0 <= n < 2^31, and n * m < 2^63). Host code fills a uf_divisor with
 * uf_divisor_of; kernels apply it with UF_QUOTIENT. Plain C and C++: both
 * the launchers and every backend's device compiler include it.
 */
#ifndef UF_DIVISOR_H
#define UF_DIVISOR_H

#include <stdint.h>

typedef struct uf_divisor {
    uint32_t mul;
    uint32_t shift;
} uf_divisor;

/* The divisor d, 1 <= d <= 2^31. */
static inline uf_divisor uf_divisor_of(uint32_t d)
{
    uint32_t l = 0;
    while (l < 31 && ((uint32_t)1 << l) < d)
        ++l;
    const uint64_t p = (uint64_t)1 << (31 + l);
    uf_divisor v;
    v.mul = (uint32_t)((p + d - 1) / d); /* < 2^32: d > 2^(l - 1), or d = 1 */
    v.shift = 31 + l;
    return v;
}

/* n / v for 0 <= n < 2^31. */
#define UF_QUOTIENT(n, v) ((uint32_t)(((uint64_t)(uint32_t)(n) * (v).mul) >> (v).shift))

#endif
