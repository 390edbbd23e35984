/*
 * Arguments of the activation + dropout kernels, shared by the launcher in
 * src/activation.c (plain C) and the kernel sources (every backend's device
 * compiler).
 */
#ifndef UF_ACTIVATION_ARGS_H
#define UF_ACTIVATION_ARGS_H

#include "backend.h"

/* Elements one thread handles together: one Philox call's worth of 16-bit
 * draws, aligned on the element index, so that a unit's keep bits fill one
 * byte and come from one call (kernels/dropout_device.h). */
#define UF_ACT_UNIT 8
/* Bytes of each input per thread in one logical block: the units of
 * UF_ACT_UNIT elements a thread loads (all of them before it uses any)
 * follow from the element size. 64 bytes: the forward's 4 units of 16-bit
 * data (2 of f32, 1 of f64); the backward reads two inputs, 64 bytes of
 * each. Units wait in their stored form (activation_dropout.h), so 16-bit
 * units cost half the registers of f32 ones. A CPU thread takes
 * UF_THREAD_WORK times as much (backend.h). */
#ifndef UF_ACT_THREAD_BYTES
#define UF_ACT_THREAD_BYTES (64 * UF_THREAD_WORK)
#endif
#ifndef UF_ACT_BWD_THREAD_BYTES
#define UF_ACT_BWD_THREAD_BYTES (64 * UF_THREAD_WORK)
#endif
#define UF_ACT_STEPS_BY(bytes, elem_size)                                                          \
    ((bytes) / (UF_ACT_UNIT * (elem_size)) > 0 ? (bytes) / (UF_ACT_UNIT * (elem_size)) : 1)
#define UF_ACT_STEPS_FOR(elem_size) UF_ACT_STEPS_BY(UF_ACT_THREAD_BYTES, elem_size)
#define UF_ACT_BWD_STEPS_FOR(elem_size) UF_ACT_STEPS_BY(UF_ACT_BWD_THREAD_BYTES, elem_size)

/* Threads per block (a multiple of every warp width, within every
 * backend's block limit), and blocks each multiprocessor should hold: the
 * register budget per thread follows (CUDA: 65536 / (256 * 4) = 64). */
#define UF_ACT_THREADS 256
#ifndef UF_ACT_FWD_BLOCKS
#define UF_ACT_FWD_BLOCKS 4
#endif
#ifndef UF_ACT_BWD_BLOCKS
#define UF_ACT_BWD_BLOCKS 4
#endif
/* The same for the kernels without dropout. */
#ifndef UF_ACT_PLAIN_FWD_BLOCKS
#define UF_ACT_PLAIN_FWD_BLOCKS 4
#endif
#ifndef UF_ACT_PLAIN_BWD_BLOCKS
#define UF_ACT_PLAIN_BWD_BLOCKS 4
#endif

/* The same for the kernels with dropout built for one activation
 * (activation_fixed_kernels.h), and whether those address a thread's units
 * from one pointer where all lie within the count. On the H200
 * (2026-12-04) the backward at 3 blocks no longer spilled (44 bytes at 4)
 * and gained 1-5 points of copy, and the single pointer 3-8 points over
 * bounded accesses in both passes (dropout alone backward: 1 point less). */
#ifndef UF_ACT_FIXED_FWD_BLOCKS
#define UF_ACT_FIXED_FWD_BLOCKS 4
#endif
#ifndef UF_ACT_FIXED_BWD_BLOCKS
#define UF_ACT_FIXED_BWD_BLOCKS 3
#endif
#ifndef UF_ACT_FIXED_ONE_POINTER
#define UF_ACT_FIXED_ONE_POINTER 1
#endif

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
    uint32_t threshold; /* drop when the 16-bit draw < threshold; 0: no dropout */
    double keep_scale;  /* 1 / (1 - p); 0 when p = 1 */
} uf_activation_args;

#define UF_ACT_DECLARE_ONE(pass, dt, vec)                                                          \
    uf_status uf_act_##pass##_##dt##_v##vec##_launch(const uf_launch *, const uf_activation_args *);
#define UF_ACT_DECLARE_PASS(pass, dt, vec)                                                         \
    UF_ACT_DECLARE_ONE(pass, dt, 1) UF_ACT_DECLARE_ONE(pass, dt, vec)
#define UF_ACT_DECLARE(dt, vec)                                                                    \
    UF_ACT_DECLARE_PASS(fwd, dt, vec)                                                              \
    UF_ACT_DECLARE_PASS(bwd, dt, vec)                                                              \
    UF_ACT_DECLARE_PASS(fwd_plain, dt, vec)                                                        \
    UF_ACT_DECLARE_PASS(bwd_plain, dt, vec)
/* The kernels for one activation: 16-bit dtypes, 16-byte access only. */
#define UF_ACT_DECLARE_FIXED(kind, dt, vec)                                                        \
    UF_ACT_DECLARE_ONE(fwd_##kind, dt, vec) UF_ACT_DECLARE_ONE(bwd_##kind, dt, vec)
#define UF_ACT_DECLARE_FIXED_ALL(dt, vec)                                                          \
    UF_ACT_DECLARE_FIXED(identity, dt, vec)                                                        \
    UF_ACT_DECLARE_FIXED(relu, dt, vec)                                                            \
    UF_ACT_DECLARE_FIXED(gelu, dt, vec)                                                            \
    UF_ACT_DECLARE_FIXED(silu, dt, vec)

#ifdef __cplusplus
extern "C" {
#endif
UF_ACT_DECLARE(f32, 4)
UF_ACT_DECLARE(f16, 8)
UF_ACT_DECLARE(bf16, 8)
UF_ACT_DECLARE(f64, 2)
UF_ACT_DECLARE_FIXED_ALL(f16, 8)
UF_ACT_DECLARE_FIXED_ALL(bf16, 8)
#ifdef __cplusplus
}
#endif

#endif
