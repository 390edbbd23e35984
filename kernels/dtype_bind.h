/*
 * Binds the instantiation parameters of a kernel template: the includer
 * defines UF_DT (a uf_dtype value: 1 f32, 2 f16, 3 bf16, 4 f64) and UF_VEC
 * (elements per access: 1, or 16 or 8 bytes' worth). This header defines
 *   UF_T        storage type        UF_ACC      compute type
 *   UF_TO_ACC   storage -> compute  UF_FROM_ACC compute -> storage
 *   UF_EXP_ACC  exp in compute type   UF_SQRT_ACC sqrt in compute type
 *   UF_VNAME(base)  base_<dtype>_v<vec>
 *   UF_LOADV(dst, p, i) / UF_STOREV(p, i, src): UF_VEC elements at p[i..]
 *   UF_VEC_BYTES  bytes per access
 *   UF_LOADVEC(dst, src) / UF_STOREVEC(dst, src): one access's bytes as
 *               stored (the layer's 16- or 8-byte access, or one element)
 *   UF_HELD, UF_HELD_N, UF_HOLDV(h, p, i), UF_HELD_TO_ACC(dst, h): one access
 *               kept until used (UF_HELD_N values of type UF_HELD): as loaded
 *               where the layer sets UF_HOLD_AS_LOADED, else converted
 *   UF_HOLDV_KEEP(h, p, i): UF_HOLDV for data other threads read again
 *               (the layer's UF_LOAD16_KEEP cache policy)
 *   UF_RUN_TO_ACC(dst, raw, n) / UF_RUN_FROM_ACC(raw, src, n): n values as
 *               stored (raw, a UF_T array) to compute values and back, in
 *               one call: the layer's run conversions for 16-bit types
 *               (vector instructions on CPUs that have them)
 *   UF_RUN_TO_ACC_TIMES(dst, raw, n, s) / UF_RUN_FROM_ACC_TIMES(raw, src, n, s):
 *               the same with each compute value times s (converted, then
 *               multiplied; multiplied, then converted) in the same pass
 * dtype_unbind.h removes them again before the next instantiation.
 */
#ifndef UF_DT
#error "define UF_DT before including dtype_bind.h"
#endif

#if UF_DT == 1
#define UF_PAIRED 0
#define UF_T float
#define UF_ACC float
#define UF_SFX f32
#define UF_TO_ACC(v) (v)
#define UF_FROM_ACC(v) (v)
#define UF_EXP_ACC(v) UF_EXPF(v)
#define UF_SQRT_ACC(v) sqrtf(v)
#elif UF_DT == 2
#define UF_PAIRED 1
#define UF_PAIR_TO_ACC(w, out) uf_f16x2_to_f32x2((w), (out))
#define UF_PAIR_FROM_ACC(lo, hi) uf_f32x2_to_f16x2((lo), (hi))
#define UF_T uf_f16
#define UF_ACC float
#define UF_SFX f16
#define UF_TO_ACC(v) uf_f16_to_f32(v)
#define UF_FROM_ACC(v) uf_f32_to_f16(v)
#define UF_EXP_ACC(v) UF_EXPF(v)
#define UF_SQRT_ACC(v) sqrtf(v)
#elif UF_DT == 3
#define UF_PAIRED 1
#define UF_PAIR_TO_ACC(w, out) uf_bf16x2_to_f32x2((w), (out))
#define UF_PAIR_FROM_ACC(lo, hi) uf_f32x2_to_bf16x2((lo), (hi))
#define UF_T uf_bf16
#define UF_ACC float
#define UF_SFX bf16
#define UF_TO_ACC(v) uf_bf16_to_f32(v)
#define UF_FROM_ACC(v) uf_f32_to_bf16(v)
#define UF_EXP_ACC(v) UF_EXPF(v)
#define UF_SQRT_ACC(v) sqrtf(v)
#elif UF_DT == 4
#define UF_PAIRED 0
#define UF_T double
#define UF_ACC double
#define UF_SFX f64
#define UF_TO_ACC(v) (v)
#define UF_FROM_ACC(v) (v)
#define UF_EXP_ACC(v) UF_EXP(v)
#define UF_SQRT_ACC(v) sqrt(v)
#else
#error "unknown UF_DT"
#endif

#if UF_DT == 2
#define UF_RUN_TO_ACC_TIMES(dst, raw, n, s) uf_f16_run_to_f32((dst), (raw), (n), (s))
#define UF_RUN_FROM_ACC_TIMES(raw, src, n, s) uf_f32_run_to_f16((raw), (src), (n), (s))
#elif UF_DT == 3
#define UF_RUN_TO_ACC_TIMES(dst, raw, n, s) uf_bf16_run_to_f32((dst), (raw), (n), (s))
#define UF_RUN_FROM_ACC_TIMES(raw, src, n, s) uf_f32_run_to_bf16((raw), (src), (n), (s))
#else
#define UF_RUN_TIMES_(dst, src, n, s)                                                              \
    do {                                                                                           \
        for (int uf_i_ = 0; uf_i_ < (n); ++uf_i_)                                                  \
            (dst)[uf_i_] = (src)[uf_i_] * (s);                                                     \
    } while (0)
#define UF_RUN_TO_ACC_TIMES(dst, raw, n, s) UF_RUN_TIMES_((dst), (raw), (n), (s))
#define UF_RUN_FROM_ACC_TIMES(raw, src, n, s) UF_RUN_TIMES_((raw), (src), (n), (s))
/* A copy: the loop of products by 1, whose arrays may overlap as far as
 * the compiler knows, took the fp32 softmax backward's short rows 1.6
 * times as long. */
#define UF_RUN_TO_ACC(dst, raw, n) memcpy((dst), (raw), (size_t)(n) * sizeof(UF_T))
#define UF_RUN_FROM_ACC(raw, src, n) memcpy((raw), (src), (size_t)(n) * sizeof(UF_T))
#endif
#ifndef UF_RUN_TO_ACC
#define UF_RUN_TO_ACC(dst, raw, n) UF_RUN_TO_ACC_TIMES((dst), (raw), (n), 1.0f)
#define UF_RUN_FROM_ACC(raw, src, n) UF_RUN_FROM_ACC_TIMES((raw), (src), (n), 1.0f)
#endif

#define UF_CAT3_(a, b, c) a##_##b##_v##c
#define UF_CAT3(a, b, c) UF_CAT3_(a, b, c)
#define UF_VNAME(base) UF_CAT3(base, UF_SFX, UF_VEC)

#define UF_VEC_BYTES (UF_VEC * (UF_DT == 1 ? 4 : UF_DT == 4 ? 8 : 2))
#if UF_VEC == 1
#define UF_LOADV(dst, p, i) ((dst)[0] = UF_TO_ACC((p)[i]))
#define UF_STOREV(p, i, src) ((p)[i] = UF_FROM_ACC((src)[0]))
#define UF_LOADVEC(dst, src) memcpy((dst), (src), sizeof(UF_T))
#define UF_STOREVEC(dst, src) memcpy((dst), (src), sizeof(UF_T))
#else
#if UF_VEC_BYTES == 16
#define UF_LOADVEC(dst, src) UF_LOAD16((dst), (src))
#define UF_STOREVEC(dst, src) UF_STORE16((dst), (src))
#elif UF_VEC_BYTES == 8
#define UF_LOADVEC(dst, src) UF_LOAD8((dst), (src))
#define UF_STOREVEC(dst, src) UF_STORE8((dst), (src))
#else
#error "UF_VEC must be 1 or fill 16 or 8 bytes"
#endif
#if UF_PAIRED /* 16-bit types: convert two per 32-bit word */
#define UF_LOADV(dst, p, i)                                                                        \
    do {                                                                                           \
        uint32_t uf_w_[UF_VEC / 2];                                                                \
        UF_LOADVEC(uf_w_, (p) + (i));                                                              \
        UF_UNROLL for (int uf_k_ = 0; uf_k_ < UF_VEC / 2; ++uf_k_)                                 \
            UF_PAIR_TO_ACC(uf_w_[uf_k_], &(dst)[2 * uf_k_]);                                       \
    } while (0)
#define UF_STOREV(p, i, src)                                                                       \
    do {                                                                                           \
        uint32_t uf_w_[UF_VEC / 2];                                                                \
        UF_UNROLL for (int uf_k_ = 0; uf_k_ < UF_VEC / 2; ++uf_k_) uf_w_[uf_k_] =                  \
            UF_PAIR_FROM_ACC((src)[2 * uf_k_], (src)[2 * uf_k_ + 1]);                              \
        UF_STOREVEC((p) + (i), uf_w_);                                                             \
    } while (0)
#else
#define UF_LOADV(dst, p, i)                                                                        \
    do {                                                                                           \
        UF_T uf_e_[UF_VEC];                                                                        \
        UF_LOADVEC(uf_e_, (p) + (i));                                                              \
        UF_UNROLL for (int uf_k_ = 0; uf_k_ < UF_VEC; ++uf_k_)(dst)[uf_k_] =                       \
            UF_TO_ACC(uf_e_[uf_k_]);                                                               \
    } while (0)
#define UF_STOREV(p, i, src)                                                                       \
    do {                                                                                           \
        UF_T uf_e_[UF_VEC];                                                                        \
        UF_UNROLL for (int uf_k_ = 0; uf_k_ < UF_VEC; ++uf_k_) uf_e_[uf_k_] =                      \
            UF_FROM_ACC((src)[uf_k_]);                                                             \
        UF_STOREVEC((p) + (i), uf_e_);                                                             \
    } while (0)
#endif
#endif

#ifndef UF_HOLD_AS_LOADED
#error "the layer must define UF_HOLD_AS_LOADED"
#endif
/* 8-byte accesses are held as compute values, so that the form held as
 * loaded has 16-byte accesses only to handle. */
#if UF_VEC == 1 || !UF_HOLD_AS_LOADED || UF_VEC_BYTES != 16
/* An access held as compute values. */
#define UF_HELD UF_ACC
#define UF_HELD_N UF_VEC
#define UF_HOLDV(h, p, i) UF_LOADV(h, p, i)
#define UF_HOLDV_KEEP(h, p, i) UF_LOADV(h, p, i)
#define UF_HELD_TO_ACC(dst, h)                                                                     \
    do {                                                                                           \
        UF_UNROLL for (int uf_k_ = 0; uf_k_ < UF_VEC; ++uf_k_)(dst)[uf_k_] = (h)[uf_k_];           \
    } while (0)
/* n values as stored (raw, UF_T) into held form, n / UF_VEC accesses: one
 * run conversion. */
#define UF_HOLD_RUN(h, raw, n) UF_RUN_TO_ACC((h), (raw), (n))
#else
/* A 16-byte access held as its four 32-bit words: 16-bit data then takes
 * half the registers that compute values would. */
#define UF_HELD uint32_t
#define UF_HELD_N 4
#define UF_HOLDV(h, p, i) UF_LOAD16((h), (p) + (i))
#define UF_HOLDV_KEEP(h, p, i) UF_LOAD16_KEEP((h), (p) + (i))
#define UF_HOLD_RUN(h, raw, n) memcpy((h), (raw), (size_t)(n) * sizeof(UF_T))
#if UF_PAIRED
#define UF_HELD_TO_ACC(dst, h)                                                                     \
    do {                                                                                           \
        UF_UNROLL for (int uf_k_ = 0; uf_k_ < 4; ++uf_k_)                                          \
            UF_PAIR_TO_ACC((h)[uf_k_], &(dst)[2 * uf_k_]);                                         \
    } while (0)
#else
#define UF_HELD_TO_ACC(dst, h) memcpy((dst), (h), 16)
#endif
#endif
