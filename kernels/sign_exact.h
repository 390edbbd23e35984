/*
 * Tests of an fp32 value against 0 that flushing subnormals cannot change.
 * The GPU builds flush fp32 subnormals to zero (nvcc -ftz=true, hipcc
 * -fgpu-flush-denormals-to-zero), and an fp32 comparison there sees a
 * subnormal as 0: x > 0 is false for x = 1e-40. Where a derivative jumps
 * at 0 (relu, leaky_relu, selu, elu, ...), a bf16 or f32 subnormal input
 * then took the other side's derivative on GPUs and not on CPUs. These read
 * the bits instead, so every backend gives the float64 reference's side.
 * NaN is neither above nor below zero, nor zero.
 */
#ifndef UF_SIGN_EXACT_H
#define UF_SIGN_EXACT_H

#include <stdint.h>
#include <string.h>

#include "layer.h"

UF_FN uint32_t uf_f32_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* x > 0: bits 0x00000001 (the smallest subnormal) to 0x7f800000 (+inf). */
UF_FN int uf_f32_above_zero(float x)
{
    return uf_f32_bits(x) - 1u < 0x7f800000u;
}

/* x < 0: bits 0x80000001 to 0xff800000 (-inf). */
UF_FN int uf_f32_below_zero(float x)
{
    return uf_f32_bits(x) - 0x80000001u < 0x7f800000u;
}

/* x == 0 (either sign). */
UF_FN int uf_f32_is_zero(float x)
{
    return (uf_f32_bits(x) & 0x7fffffffu) == 0;
}

#endif
