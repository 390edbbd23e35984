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

#include <math.h>
#include <string.h>

#if defined(__AVX512F__)
#define UF_CPU_VEC_BYTES 64
#define UF_CPU_F32_LANES 16
#define UF_CPU_F64_LANES 8
#elif defined(__AVX__)
#define UF_CPU_VEC_BYTES 32
#define UF_CPU_F32_LANES 8
#define UF_CPU_F64_LANES 4
#else
#define UF_CPU_VEC_BYTES 16
#define UF_CPU_F32_LANES 4
#define UF_CPU_F64_LANES 2
#endif

typedef float uf_cpu_f32v __attribute__((vector_size(UF_CPU_VEC_BYTES)));
typedef double uf_cpu_f64v __attribute__((vector_size(UF_CPU_VEC_BYTES)));

/* Lane-wise combines of two vectors (a comparison gives a mask vector of
 * same-sized integers). */
#define UF_CPU_VSELECT(m, a, b)                                                                    \
    ((__typeof__(a))(((m) & (__typeof__(m))(a)) | (~(m) & (__typeof__(m))(b))))
#define UF_CPU_VADD(a, b) ((a) + (b))
/* The maximum's accumulators start at -inf and take a value only where it
 * is greater: a NaN value never gets in, so one comparison does (x86's
 * max instruction, with its operands in this order), also where they are
 * joined and folded. The NaN test per combine cost the 16-bit forward 6%
 * of its time without a mask (2-core machine). */
#define UF_CPU_VMAX_INTO(acc, x) UF_CPU_VSELECT((x) > (acc), x, acc)

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

/* A vector of L lanes folded onto lane 0: lane k combined with lane k ^ o
 * for o = L / 2, ..., 1 (every lane ends with the whole; only lane 0 is
 * read). Shuffles of a register: no copy through memory. */
#define UF_CPU_FOLD_2(q, VC) q = VC(q, __builtin_shufflevector(q, q, 1, 0))
#define UF_CPU_FOLD_4(q, VC)                                                                       \
    q = VC(q, __builtin_shufflevector(q, q, 2, 3, 0, 1));                                          \
    q = VC(q, __builtin_shufflevector(q, q, 1, 0, 3, 2))
#define UF_CPU_FOLD_8(q, VC)                                                                       \
    q = VC(q, __builtin_shufflevector(q, q, 4, 5, 6, 7, 0, 1, 2, 3));                              \
    q = VC(q, __builtin_shufflevector(q, q, 2, 3, 0, 1, 6, 7, 4, 5));                              \
    q = VC(q, __builtin_shufflevector(q, q, 1, 0, 3, 2, 5, 4, 7, 6))
#define UF_CPU_FOLD_16(q, VC)                                                                      \
    q = VC(q,                                                                                      \
           __builtin_shufflevector(q, q, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7));   \
    q = VC(q,                                                                                      \
           __builtin_shufflevector(q, q, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11));   \
    q = VC(q,                                                                                      \
           __builtin_shufflevector(q, q, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13));   \
    q = VC(q, __builtin_shufflevector(q, q, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14))
#define UF_CPU_FOLD_(lanes, q, VC) UF_CPU_FOLD_##lanes(q, VC)
#define UF_CPU_FOLD(lanes, q, VC) UF_CPU_FOLD_(lanes, q, VC)

/* One reduction for element type T (vectors V of LANES lanes). Four
 * accumulators where the count allows: one would chain every combine on
 * the one before. The accumulators start as the first vectors of v where
 * FROM_FIRST (the sum, whose results stay bit for bit as they were), else
 * at IDENTITY in every lane (the maximum's -inf); VINTO(acc, x) takes each
 * further vector into one, VCOMBINE joins two. */
#define UF_CPU_DEFINE_THREAD_REDUCE(name, T, V, LANES, COMBINE, VCOMBINE, VINTO, FROM_FIRST,       \
                                    IDENTITY)                                                      \
    static inline __attribute__((always_inline)) T name(const T *v, int n)                         \
    {                                                                                              \
        T out;                                                                                     \
        if (n % (LANES) != 0) {                                                                    \
            UF_CPU_TREE_REDUCE(out, v, n, COMBINE);                                                \
            return out;                                                                            \
        }                                                                                          \
        V a0, a1, a2, a3, x;                                                                       \
        int i = 0;                                                                                 \
        if (FROM_FIRST) {                                                                          \
            memcpy(&a0, v, sizeof a0);                                                             \
            i = LANES;                                                                             \
        } else {                                                                                   \
            for (int l_ = 0; l_ < (LANES); ++l_)                                                   \
                a0[l_] = (IDENTITY);                                                               \
        }                                                                                          \
        if (n % (4 * (LANES)) == 0) {                                                              \
            a1 = a2 = a3 = a0;                                                                     \
            if (FROM_FIRST) {                                                                      \
                memcpy(&a1, v + (LANES), sizeof a1);                                               \
                memcpy(&a2, v + 2 * (LANES), sizeof a2);                                           \
                memcpy(&a3, v + 3 * (LANES), sizeof a3);                                           \
                i = 4 * (LANES);                                                                   \
            }                                                                                      \
            for (; i < n; i += 4 * (LANES)) {                                                      \
                memcpy(&x, v + i, sizeof x);                                                       \
                a0 = VINTO(a0, x);                                                                 \
                memcpy(&x, v + i + (LANES), sizeof x);                                             \
                a1 = VINTO(a1, x);                                                                 \
                memcpy(&x, v + i + 2 * (LANES), sizeof x);                                         \
                a2 = VINTO(a2, x);                                                                 \
                memcpy(&x, v + i + 3 * (LANES), sizeof x);                                         \
                a3 = VINTO(a3, x);                                                                 \
            }                                                                                      \
            a0 = VCOMBINE(VCOMBINE(a0, a1), VCOMBINE(a2, a3));                                     \
        }                                                                                          \
        for (; i < n; i += (LANES)) {                                                              \
            memcpy(&x, v + i, sizeof x);                                                           \
            a0 = VINTO(a0, x);                                                                     \
        }                                                                                          \
        UF_CPU_FOLD(LANES, a0, VCOMBINE);                                                          \
        return a0[0];                                                                              \
    }

UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_max_f32, float, uf_cpu_f32v, UF_CPU_F32_LANES, UF_CPU_MAX,
                            UF_CPU_VMAX_INTO, UF_CPU_VMAX_INTO, 0, -INFINITY)
UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_sum_f32, float, uf_cpu_f32v, UF_CPU_F32_LANES, UF_CPU_ADD,
                            UF_CPU_VADD, UF_CPU_VADD, 1, 0)
UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_max_f64, double, uf_cpu_f64v, UF_CPU_F64_LANES,
                            UF_CPU_MAX, UF_CPU_VMAX_INTO, UF_CPU_VMAX_INTO, 0, -INFINITY)
UF_CPU_DEFINE_THREAD_REDUCE(uf_cpu_thread_sum_f64, double, uf_cpu_f64v, UF_CPU_F64_LANES,
                            UF_CPU_ADD, UF_CPU_VADD, UF_CPU_VADD, 1, 0)

#define UF_CPU_THREAD_REDUCE(out, v, n, op)                                                        \
    ((out) = _Generic((out), float                                                                 \
                      : uf_cpu_thread_##op##_f32, double                                           \
                      : uf_cpu_thread_##op##_f64)((v), (n)))

#endif
