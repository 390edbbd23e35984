/*
 * A thread's own values reduced to one on CPUs (UF_THREAD_MAX and
 * UF_THREAD_SUM of openmp/layer.h), where they are memory. The values are
 * gathered lane by lane into a vector of the widest registers the copy is
 * compiled for, whose halves then fold onto each other in registers down
 * to one value. The tree over an array that came before stored and
 * reloaded every level: each level waited for the previous one's store,
 * which cost a softmax row of 16 keys more than the rest of its work.
 * Counts that are not whole vectors keep that tree. The maximum passes
 * over NaN where there is a number, as on GPUs.
 */
#ifndef UF_OPENMP_THREAD_REDUCE_H
#define UF_OPENMP_THREAD_REDUCE_H

#include <string.h>

#if defined(__AVX512F__)
#define UF_CPU_VEC_BYTES 64
#elif defined(__AVX__)
#define UF_CPU_VEC_BYTES 32
#else
#define UF_CPU_VEC_BYTES 16
#endif

typedef float uf_cpu_f32v __attribute__((vector_size(UF_CPU_VEC_BYTES)));
typedef float uf_cpu_f32v32 __attribute__((vector_size(32)));
typedef float uf_cpu_f32v16 __attribute__((vector_size(16)));
typedef double uf_cpu_f64v __attribute__((vector_size(UF_CPU_VEC_BYTES)));
typedef double uf_cpu_f64v32 __attribute__((vector_size(32)));
typedef double uf_cpu_f64v16 __attribute__((vector_size(16)));

/* Lane-wise combines of two vectors (a comparison gives a mask vector of
 * same-sized integers). */
#define UF_CPU_VSELECT(m, a, b)                                                                    \
    ((__typeof__(a))(((m) & (__typeof__(m))(a)) | (~(m) & (__typeof__(m))(b))))
#define UF_CPU_VMAX(a, b) UF_CPU_VSELECT(((a) > (b)) | ((b) != (b)), a, b)
#define UF_CPU_VADD(a, b) ((a) + (b))

/* The tree over a copy in memory, for any count. */
#define UF_CPU_TREE_REDUCE(out, v, n, COMBINE)                                                     \
    do {                                                                                           \
        __typeof__(out) t_[(n)];                                                                   \
        int w_ = 1;                                                                                \
        while (2 * w_ < (n))                                                                       \
            w_ *= 2;                                                                               \
        for (int i_ = 0; i_ < w_; ++i_)                                                            \
            t_[i_] = (v)[i_];                                                                      \
        for (int i_ = w_; i_ < (n); ++i_)                                                          \
            t_[i_ - w_] = COMBINE(t_[i_ - w_], (v)[i_]);                                           \
        for (; w_ > 1; w_ /= 2)                                                                    \
            for (int i_ = 0; i_ < w_ / 2; ++i_)                                                    \
                t_[i_] = COMBINE(t_[i_], t_[i_ + w_ / 2]);                                         \
        out = t_[0];                                                                               \
    } while (0)

/* A wide vector `x` of type V folded to its 16-byte low half's type V16
 * in `lo` (halves combined; V32 the 32-byte type). */
#if UF_CPU_VEC_BYTES == 64
#define UF_CPU_FOLD_TO_16(x, V32, V16, lo, VCOMBINE)                                               \
    V32 h0_, h1_;                                                                                  \
    memcpy(&h0_, &(x), 32);                                                                        \
    memcpy(&h1_, (const char *)&(x) + 32, 32);                                                     \
    h0_ = VCOMBINE(h0_, h1_);                                                                      \
    V16 lo, q1_;                                                                                   \
    memcpy(&lo, &h0_, 16);                                                                         \
    memcpy(&q1_, (const char *)&h0_ + 16, 16);                                                     \
    lo = VCOMBINE(lo, q1_)
#elif UF_CPU_VEC_BYTES == 32
#define UF_CPU_FOLD_TO_16(x, V32, V16, lo, VCOMBINE)                                               \
    V16 lo, q1_;                                                                                   \
    memcpy(&lo, &(x), 16);                                                                         \
    memcpy(&q1_, (const char *)&(x) + 16, 16);                                                     \
    lo = VCOMBINE(lo, q1_)
#else
#define UF_CPU_FOLD_TO_16(x, V32, V16, lo, VCOMBINE) V16 lo = (x)
#endif

/* One reduction for element type T (vector types V, V32, V16 of it). */
#define UF_CPU_DEFINE_THREAD_REDUCE(name, T, V, V32, V16, COMBINE, VCOMBINE, LAST16)               \
    static inline __attribute__((always_inline)) T name(const T *v, int n)                         \
    {                                                                                              \
        const int lanes = (int)(sizeof(V) / sizeof(T));                                            \
        T out;                                                                                     \
        if (n % lanes != 0) {                                                                      \
            UF_CPU_TREE_REDUCE(out, v, n, COMBINE);                                                \
            return out;                                                                            \
        }                                                                                          \
        V acc, x;                                                                                  \
        memcpy(&acc, v, sizeof acc);                                                               \
        for (int i = lanes; i < n; i += lanes) {                                                   \
            memcpy(&x, v + i, sizeof x);                                                           \
            acc = VCOMBINE(acc, x);                                                                \
        }                                                                                          \
        UF_CPU_FOLD_TO_16(acc, V32, V16, q, VCOMBINE);                                             \
        LAST16(q, VCOMBINE);                                                                       \
        return q[0];                                                                               \
    }

/* The last 16 bytes to lane 0: four floats, or two doubles. */
#define UF_CPU_LAST16_F32(q, VCOMBINE)                                                             \
    q = VCOMBINE(q, __builtin_shufflevector(q, q, 2, 3, 0, 1));                                    \
    q = VCOMBINE(q, __builtin_shufflevector(q, q, 1, 0, 3, 2))
#define UF_CPU_LAST16_F64(q, VCOMBINE) q = VCOMBINE(q, __builtin_shufflevector(q, q, 1, 0))

UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_max_f32, float, uf_cpu_f32v, uf_cpu_f32v32, uf_cpu_f32v16,
                            UF_CPU_MAX, UF_CPU_VMAX, UF_CPU_LAST16_F32)
UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_sum_f32, float, uf_cpu_f32v, uf_cpu_f32v32, uf_cpu_f32v16,
                            UF_CPU_ADD, UF_CPU_VADD, UF_CPU_LAST16_F32)
UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_max_f64, double, uf_cpu_f64v, uf_cpu_f64v32,
                            uf_cpu_f64v16, UF_CPU_MAX, UF_CPU_VMAX, UF_CPU_LAST16_F64)
UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_sum_f64, double, uf_cpu_f64v, uf_cpu_f64v32,
                            uf_cpu_f64v16, UF_CPU_ADD, UF_CPU_VADD, UF_CPU_LAST16_F64)

#define UF_CPU_THREAD_REDUCE(out, v, n, op)                                                        \
    ((out) = _Generic((out), float                                                                 \
                      : uf_cpu_thread_##op##_f32, double                                           \
                      : uf_cpu_thread_##op##_f64)((v), (n)))

#endif
