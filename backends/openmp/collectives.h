/*
 * CPU emulation of warp and block collectives over exclusive arrays. The
 * order of operations is the GPU layer's: a butterfly of xor shuffles within
 * each warp, then (block) one value per warp combined by a second butterfly
 * in every warp. Results therefore round exactly as on the GPU.
 */
#ifndef UF_OPENMP_COLLECTIVES_H
#define UF_OPENMP_COLLECTIVES_H

#define UF_CPU_COLLECTIVE(op, v, width)                                                            \
    _Generic((v)[0], float                                                                         \
             : uf_cpu_##op##_f32, double                                                           \
             : uf_cpu_##op##_f64)((v), UF_NTHREADS, (width))

/* One xor-shuffle butterfly over groups of `width` lanes of each warp: lane
 * l becomes COMBINE(lane l, lane l ^ off) at each step. Each pair of partner
 * lanes is updated together from both old values, in place, so that the
 * inner loop runs over contiguous lanes and vectorises (same results as a
 * copy through a temporary). */
#define UF_CPU_DEFINE_WARP(name, T, COMBINE)                                                       \
    static inline void uf_cpu_##name(T *v, int nthreads, int width)                                \
    {                                                                                              \
        for (int w0 = 0; w0 < nthreads; w0 += UF_WARP) {                                           \
            T *lane = v + w0;                                                                      \
            for (int off = width / 2; off > 0; off /= 2)                                           \
                for (int base = 0; base < UF_WARP; base += 2 * off)                                \
                    for (int i = base; i < base + off; ++i) {                                      \
                        const T lo = lane[i], hi = lane[i + off];                                  \
                        lane[i] = COMBINE(lo, hi);                                                 \
                        lane[i + off] = COMBINE(hi, lo);                                           \
                    }                                                                              \
        }                                                                                          \
    }

/* Warp butterflies, then lane 0 of each warp publishes; every warp reduces
 * the published values (identity beyond the warp count) with a butterfly.
 * Every warp starts that second butterfly from the same lanes, so it is run
 * once, on the first warp, and the result copied to the others. Warp w's
 * value moves to lane w in place: lane w * UF_WARP is read before any lane
 * at or past it is written. */
#define UF_CPU_DEFINE_BLOCK(name, warp_name, T, IDENTITY)                                          \
    static inline void uf_cpu_##name(T *v, int nthreads, int width)                                \
    {                                                                                              \
        const int nwarps = nthreads / UF_WARP;                                                     \
        uf_cpu_##warp_name(v, nthreads, width);                                                    \
        for (int w = 1; w < nwarps; ++w)                                                           \
            v[w] = v[w * UF_WARP];                                                                 \
        for (int l = nwarps; l < UF_WARP; ++l)                                                     \
            v[l] = (IDENTITY);                                                                     \
        uf_cpu_##warp_name(v, UF_WARP, width);                                                     \
        for (int t = UF_WARP; t < nthreads; ++t)                                                   \
            v[t] = v[t % UF_WARP];                                                                 \
    }

#define UF_CPU_ADD(a, b) ((a) + (b))
/* fmax's result (a NaN operand loses to a number) without a libm call. */
#define UF_CPU_MAX(a, b) ((a) > (b) || (b) != (b) ? (a) : (b))
UF_CPU_DEFINE_WARP(warp_sum_f32, float, UF_CPU_ADD)
UF_CPU_DEFINE_WARP(warp_sum_f64, double, UF_CPU_ADD)
UF_CPU_DEFINE_WARP(warp_max_f32, float, UF_CPU_MAX)
UF_CPU_DEFINE_WARP(warp_max_f64, double, UF_CPU_MAX)
UF_CPU_DEFINE_BLOCK(block_sum_f32, warp_sum_f32, float, 0.0f)
UF_CPU_DEFINE_BLOCK(block_sum_f64, warp_sum_f64, double, 0.0)
UF_CPU_DEFINE_BLOCK(block_max_f32, warp_max_f32, float, -INFINITY)
UF_CPU_DEFINE_BLOCK(block_max_f64, warp_max_f64, double, -INFINITY)

#endif
