/*
 * Arguments of the activation + dropout kernels, shared by the launcher in
 * src/activation.c (plain C) and the kernel sources (every backend's device
 * compiler).
 */
#ifndef UF_ACTIVATION_ARGS_H
#define UF_ACTIVATION_ARGS_H

#include "backend.h"

/* Elements one thread handles together: two Philox draws' worth, aligned on
 * the element index, so that a unit's keep bits fill one byte. */
#define UF_ACT_UNIT 8
/* Units per thread in one logical block of the forward: 64 bytes of input
 * per thread whatever the dtype (2 for f32, 4 for f16/bf16, 1 for f64);
 * loads of all of them are issued before any is used. The backward reads
 * two inputs and keeps 2 units (1 for f64): with 4 units of 16-bit data it
 * ran slower on the H200 (f16 relu 74% -> 61% of copy), its registers
 * limiting the threads in flight. */
#define UF_ACT_THREAD_BYTES 64
#define UF_ACT_STEPS_FOR(elem_size)                                                                \
    (UF_ACT_THREAD_BYTES / (UF_ACT_UNIT * (elem_size)) > 0                                         \
         ? UF_ACT_THREAD_BYTES / (UF_ACT_UNIT * (elem_size))                                       \
         : 1)
#define UF_ACT_BWD_STEPS_FOR(elem_size) ((elem_size) > 4 ? 1 : 2)

typedef struct uf_activation_args {
    const void *x;   /* forward and backward: x (backward with the identity: unused) */
    const void *dy;  /* backward: incoming gradient */
    void *out;       /* forward: y; backward: dx */
    void *keep_bits; /* forward: optional mask, one bit per element */
    int64_t count;
    int kind;           /* uf_activation */
    double param[2];    /* the activation's parameters */
    uint64_t seed;      /* dropout: Philox key */
    uint64_t offset;    /* dropout: second half of the counter */
    uint32_t threshold; /* drop when (draw >> 8) < threshold; 0: no dropout */
    double keep_scale;  /* 1 / (1 - p); 0 when p = 1 */
} uf_activation_args;

#define UF_ACT_DECLARE_ONE(pass, dt, vec)                                                          \
    uf_status uf_act_##pass##_##dt##_v##vec##_launch(const uf_launch *, const uf_activation_args *);
#define UF_ACT_DECLARE(dt, vec)                                                                    \
    UF_ACT_DECLARE_ONE(fwd, dt, 1)                                                                 \
    UF_ACT_DECLARE_ONE(fwd, dt, vec) UF_ACT_DECLARE_ONE(bwd, dt, 1) UF_ACT_DECLARE_ONE(bwd, dt, vec)

#ifdef __cplusplus
extern "C" {
#endif
UF_ACT_DECLARE(f32, 4)
UF_ACT_DECLARE(f16, 8)
UF_ACT_DECLARE(bf16, 8)
UF_ACT_DECLARE(f64, 2)
#ifdef __cplusplus
}
#endif

#endif
