/*
 * The device-code layer on GPUs, written once in the CUDA dialect. The
 * including vendor header (cuda/layer.h or hip/layer.h) has already brought
 * in the vendor's headers, the renames, UF_WARP and UF_SHFL_XOR. A logical
 * block is a thread block (looping when the grid is capped), a thread loop
 * runs once in every hardware thread, exclusive variables are registers.
 */
#ifndef UF_GPU_LAYER_H
#define UF_GPU_LAYER_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"

#define UF_BITS_FN static __host__ __device__ inline
#include "portable/conversion_runs.h"
#include "portable/f16_bits.h"

/* What a thread does while it spins on another block's progress. */
#ifndef UF_VENDOR_PAUSE
#define UF_VENDOR_PAUSE() ((void)0)
#endif

/* Most threads a GPU block may have. */
#define UF_MAX_THREADS UF_BLOCK_LIMIT
/* Physical blocks launched at most; more logical blocks loop. */
#define UF_GRID_CAP ((int64_t)1 << 20)

#define UF_FN static __device__ __forceinline__
#define UF_RESTRICT __restrict__
#define UF_EXTERN_C extern "C"
#define UF_UNROLL _Pragma("unroll")
#define UF_PRAGMA_(x) _Pragma(#x)
#define UF_UNROLL_BY(n) UF_PRAGMA_(unroll n)
/* Loops over register arrays (fragments): unrolled on GPUs, kept as loops
 * on the CPU. */
#define UF_UNROLL_REGS _Pragma("unroll")
/* Loops over the units a thread holds: unrolled, as register arrays need. */
#define UF_UNROLL_HELD _Pragma("unroll")
/* Registers are what bounds how many values a thread may hold: values that
 * wait are kept as loaded (16-bit data two to a register; dtype_bind.h). */
#define UF_HOLD_AS_LOADED 1

typedef struct uf_kdims {
    int64_t blocks;
    int threads;
} uf_kdims;

/* Maps the vendor error of the last launch to a status (gpu/runtime.c). */
extern "C" uf_status ufb_launch_status(void);
/* Launches `kernel` (params as the vendor's launch takes them) for a launch
 * with group_blocks > 1: a grid the device runs all at once (gpu/runtime.c). */
extern "C" uf_status ufb_launch_grouped(const void *kernel, const uf_launch *l, void **params,
                                        int64_t cap);

#define UF_KERNEL(name, ArgsT, a) UF_KERNEL_(name, ArgsT, a, UF_MAX_THREADS, 1)
#define UF_KERNEL_BOUNDED(name, ArgsT, a, max_threads) UF_KERNEL_(name, ArgsT, a, max_threads, 1)
#define UF_KERNEL_RESIDENT(name, ArgsT, a, max_threads, min_blocks)                                \
    UF_KERNEL_(name, ArgsT, a, max_threads, min_blocks)
#define UF_KERNEL_(name, ArgsT, a, max_threads, min_blocks) /* expands name first */               \
    __global__ void UF_VENDOR_BOUNDS(max_threads, min_blocks)                                      \
        name(const uf_kdims uf_dims_, const ArgsT a);                                              \
    extern "C" uf_status name##_launch(const uf_launch *l, const ArgsT *args)                      \
    {                                                                                              \
        if (l->threads < 1 || l->threads > (max_threads) || l->threads % 32 != 0)                  \
            return UF_ERR_LAUNCH;                                                                  \
        if (l->blocks <= 0)                                                                        \
            return UF_OK;                                                                          \
        uf_kdims d = {l->blocks, l->threads};                                                      \
        const int64_t cap =                                                                        \
            l->max_grid > 0 && l->max_grid < UF_GRID_CAP ? l->max_grid : UF_GRID_CAP;              \
        if (l->group_blocks > 1) {                                                                 \
            void *params[] = {&d, (void *)args};                                                   \
            return ufb_launch_grouped((const void *)name, l, params, cap);                         \
        }                                                                                          \
        const unsigned grid = (unsigned)(l->blocks < cap ? l->blocks : cap);                       \
        name<<<grid, (unsigned)l->threads, 0, (cudaStream_t)l->stream>>>(d, *args);                \
        return ufb_launch_status();                                                                \
    }                                                                                              \
    __global__ void UF_VENDOR_BOUNDS(max_threads, min_blocks)                                      \
        name(const uf_kdims uf_dims_, const ArgsT a)

#define UF_NTHREADS (uf_dims_.threads)

#define UF_BLOCKS(b) for (int64_t b = blockIdx.x; b < uf_dims_.blocks; b += gridDim.x)

#define UF_THREADS(t)                                                                              \
    for ([[maybe_unused]] int t = (int)threadIdx.x, uf_once_ = 1; uf_once_; uf_once_ = 0)

#define UF_BARRIER() __syncthreads()

#define UF_SHARED(type, name, n) __shared__ __align__(16) type name[n]
#define UF_EXCLUSIVE(type, name) type name
#define UF_EXCLUSIVE_ARRAY(type, name, n) type name[n]
#define UF_X(name) (name)

/* ---- logical blocks that wait for each other (uf_launch.group_blocks) ----
 * One thread of a block calls these; a barrier after them passes what they
 * made visible on to the rest of the block. uf_group_arrive counts the
 * caller in and returns the count before it: the caller's earlier stores
 * are visible to every block that sees the new count, and the stores of
 * the blocks counted before it are visible to the caller after it (the
 * last block in need not wait). */
#ifdef UF_VENDOR_GROUP_ARRIVE
UF_FN unsigned uf_group_arrive(unsigned *count)
{
    return UF_VENDOR_GROUP_ARRIVE(count);
}
#else
UF_FN unsigned uf_group_arrive(unsigned *count)
{
    __threadfence();
    const unsigned before = atomicAdd(count, 1u);
    __threadfence();
    return before;
}
#endif
/* Returns once `count` has reached n, the stores behind it visible. */
UF_FN void uf_group_wait(unsigned *count, unsigned n)
{
#ifdef UF_VENDOR_GROUP_POLL
    while (UF_VENDOR_GROUP_POLL(count) < n)
        UF_VENDOR_PAUSE();
#else
    while (*(volatile unsigned *)count < n)
        UF_VENDOR_PAUSE();
    __threadfence();
#endif
}
/* A value another block stored before its uf_group_arrive: read past this
 * multiprocessor's own cache, which may hold an older copy of the line. */
#define UF_GROUP_READ(type, p) (*(const volatile type *)(p))

/* ---- 16-bit floating point storage: raw bits, converted in registers ---- */
typedef uint16_t uf_f16;
typedef uint16_t uf_bf16;
UF_FN float uf_f16_to_f32(uf_f16 h)
{
    return __half2float(__ushort_as_half(h));
}
UF_FN uf_f16 uf_f32_to_f16(float f)
{
    return __half_as_ushort(__float2half_rn(f));
}
UF_FN float uf_bf16_to_f32(uf_bf16 h)
{
    return uf_bf16_bits_to_f32(h);
}
UF_FN uf_bf16 uf_f32_to_bf16(float f)
{
    return uf_f32_to_bf16_bits(f);
}

/* Pairs packed in a 32-bit word, low half first (one instruction each way
 * for fp16; bf16 widens by shifts and narrows through the vendor's paired
 * instruction where it has one). */
UF_FN void uf_f16x2_to_f32x2(uint32_t w, float *out)
{
    __half2 h;
    memcpy(&h, &w, sizeof w);
    const float2 f = __half22float2(h);
    out[0] = f.x;
    out[1] = f.y;
}
UF_FN uint32_t uf_f32x2_to_f16x2(float lo, float hi)
{
    const __half2 h = __floats2half2_rn(lo, hi);
    uint32_t w;
    memcpy(&w, &h, sizeof w);
    return w;
}
UF_FN void uf_bf16x2_to_f32x2(uint32_t w, float *out)
{
    out[0] = uf_f32_from_bits(w << 16);
    out[1] = uf_f32_from_bits(w & 0xffff0000u);
}
UF_FN uint32_t uf_f32x2_to_bf16x2(float lo, float hi)
{
#ifdef UF_VENDOR_F32X2_TO_BF16X2
    return UF_VENDOR_F32X2_TO_BF16X2(lo, hi);
#else
    return (uint32_t)uf_f32_to_bf16(lo) | (uint32_t)uf_f32_to_bf16(hi) << 16;
#endif
}

/* Runs of 16-bit values (conversion_runs.h): the CPU's vectorised loops,
 * which GPU kernels do not take (UF_VECTORISED_LOOPS is 0); defined so
 * that the kernels compile. */
UF_DEFINE_RUN_TO_F32(UF_FN, uf_f16_run_to_f32, uf_f16_to_f32)
UF_DEFINE_RUN_FROM_F32(UF_FN, uf_f32_run_to_f16, uf_f32_to_f16)
UF_DEFINE_RUN_TO_F32(UF_FN, uf_bf16_run_to_f32, uf_bf16_to_f32)
UF_DEFINE_RUN_FROM_F32(UF_FN, uf_f32_run_to_bf16, uf_f32_to_bf16)

/* ---- vector access: 16 bytes, or 8 (the softmax's rows whose length
 * fits no 16-byte access); callers guarantee the alignment ---- */
#define UF_LOAD_AS(type, dst, src)                                                                 \
    do {                                                                                           \
        const type uf_v_ = *(const type *)(src);                                                   \
        memcpy((dst), &uf_v_, sizeof uf_v_);                                                       \
    } while (0)
#define UF_STORE_AS(type, dst, src)                                                                \
    do {                                                                                           \
        type uf_v_;                                                                                \
        memcpy(&uf_v_, (src), sizeof uf_v_);                                                       \
        *(type *)(dst) = uf_v_;                                                                    \
    } while (0)
#define UF_LOAD16(dst, src) UF_LOAD_AS(uint4, dst, src)
#define UF_STORE16(dst, src) UF_STORE_AS(uint4, dst, src)
#define UF_LOAD8(dst, src) UF_LOAD_AS(uint2, dst, src)
#define UF_STORE8(dst, src) UF_STORE_AS(uint2, dst, src)

/* A CPU's request for data a thread takes later (openmp/layer.h); a GPU
 * hides memory latency with other warps instead. */
#define UF_PREFETCH_AHEAD(p, bytes, write) ((void)(p))

/* UF_PREFETCH_L2(p, bytes): asks the device's last cache level for the
 * `bytes` bytes at p (16-byte aligned, a multiple of 16, inside the
 * tensor), to be read later by this block; a hint that nothing waits for.
 * Where the vendor has no such request it does nothing. */
#ifdef UF_VENDOR_PREFETCH_L2
#define UF_PREFETCH_L2(p, bytes) UF_VENDOR_PREFETCH_L2((p), (bytes))
#else
#define UF_PREFETCH_L2(p, bytes) ((void)(p), (void)(bytes))
#endif

/* UF_LOAD16 for data that other threads read again soon (a softmax mask row
 * shared by the heads): the vendor's cache policy that keeps it longest,
 * where there is one. */
#ifdef UF_VENDOR_LOAD16_KEEP
#define UF_LOAD16_KEEP(dst, src)                                                                   \
    do {                                                                                           \
        const uint4 uf_v16_ = UF_VENDOR_LOAD16_KEEP(src);                                          \
        memcpy((dst), &uf_v16_, 16);                                                               \
    } while (0)
#else
#define UF_LOAD16_KEEP(dst, src) UF_LOAD16((dst), (src))
#endif

/* ---- copies to shared memory that overlap the work after them ----
 * UF_COPY16_ASYNC(dst, src): 16 bytes (both 16-byte aligned) from global to
 * shared memory; they may land any time before this thread's
 * UF_ASYNC_WAIT(), and other threads see them after a barrier that follows
 * it. Where the vendor has no such copy it is an ordinary one. */
#ifdef UF_VENDOR_COPY16_ASYNC
#define UF_COPY16_ASYNC(dst, src) UF_VENDOR_COPY16_ASYNC((dst), (src))
#define UF_ASYNC_WAIT() UF_VENDOR_ASYNC_WAIT()
#else
#define UF_COPY16_ASYNC(dst, src) (*(uint4 *)(dst) = *(const uint4 *)(src))
#define UF_ASYNC_WAIT() ((void)0)
#endif

/* ---- math ---- */
/* uf_mul_hilo(a, b, &hi): the low 32 bits of a * b, the high ones in hi. */
#ifdef UF_VENDOR_MUL_HILO
#define uf_mul_hilo(a, b, hi) UF_VENDOR_MUL_HILO((a), (b), (hi))
#else
UF_FN uint32_t uf_mul_hilo(uint32_t a, uint32_t b, uint32_t *hi)
{
    *hi = __umulhi(a, b);
    return a * b;
}
#endif
/* UF_RCPF(x): 1 / x within an ulp (not correctly rounded), for formulas
 * whose other terms carry larger errors. */
#ifdef UF_VENDOR_RCP
#define UF_RCPF(x) UF_VENDOR_RCP(x)
#else
#define UF_RCPF(x) (1.0f / (x))
#endif
/* UF_MUL_RN(a, b): a * b rounded on its own, never fused with an add that
 * follows into one FMA (both GPU compilers contract by default), for float
 * or double. Where a difference must be exactly 0 when its terms are equal
 * (LayerNorm's g - mean(g) over a row of one element, times rstd). */
UF_FN float uf_mul_rn(float a, float b)
{
    return UF_VENDOR_MUL_RN_F32(a, b);
}
UF_FN double uf_mul_rn(double a, double b)
{
    return UF_VENDOR_MUL_RN_F64(a, b);
}
#define UF_MUL_RN(a, b) uf_mul_rn((a), (b))
#define UF_EXPF(x) __expf(x)
/* exp within 2 ulp at every x (UF_EXPF is faster and looser far from 0). */
#define UF_EXPF_ACCURATE(x) expf(x)
#define UF_EXP2F(x) exp2f(x) /* one instruction with -ftz (CUDA) */
#define UF_EXP(x) exp(x)

/* ---- collectives (see openmp/collectives.h for the same order on the CPU) ---- */
UF_FN float uf_gpu_add(float a, float b)
{
    return a + b;
}
UF_FN double uf_gpu_add(double a, double b)
{
    return a + b;
}
UF_FN float uf_gpu_max(float a, float b)
{
    return fmaxf(a, b);
}
UF_FN double uf_gpu_max(double a, double b)
{
    return fmax(a, b);
}

#define UF_GPU_DEFINE_WARP(name, T, COMBINE)                                                       \
    UF_FN T name(T v, int width)                                                                   \
    {                                                                                              \
        for (int off = width / 2; off > 0; off /= 2)                                               \
            v = COMBINE(v, UF_SHFL_XOR(v, off));                                                   \
        return v;                                                                                  \
    }
UF_GPU_DEFINE_WARP(uf_warp_sum, float, uf_gpu_add)
UF_GPU_DEFINE_WARP(uf_warp_sum, double, uf_gpu_add)
UF_GPU_DEFINE_WARP(uf_warp_max, float, uf_gpu_max)
UF_GPU_DEFINE_WARP(uf_warp_max, double, uf_gpu_max)

/* Every warp reduces the per-warp results, so all threads end with the
 * block's value without a broadcast. The leading barrier protects the
 * scratch from a previous collective still being read. */
#define UF_GPU_DEFINE_BLOCK(name, warp_name, T, IDENTITY)                                          \
    UF_FN T name(T v)                                                                              \
    {                                                                                              \
        __shared__ T published[UF_MAX_THREADS / 32];                                               \
        const int lane = (int)threadIdx.x % UF_WARP;                                               \
        const int nwarps = (int)blockDim.x / UF_WARP;                                              \
        v = warp_name(v, UF_WARP);                                                                 \
        __syncthreads();                                                                           \
        if (lane == 0)                                                                             \
            published[threadIdx.x / UF_WARP] = v;                                                  \
        __syncthreads();                                                                           \
        v = lane < nwarps ? published[lane] : (IDENTITY);                                          \
        return warp_name(v, UF_WARP);                                                              \
    }
UF_GPU_DEFINE_BLOCK(uf_block_sum, uf_warp_sum, float, 0.0f)
UF_GPU_DEFINE_BLOCK(uf_block_sum, uf_warp_sum, double, 0.0)
UF_GPU_DEFINE_BLOCK(uf_block_max, uf_warp_max, float, -INFINITY)
UF_GPU_DEFINE_BLOCK(uf_block_max, uf_warp_max, double, -INFINITY)

/* Three warp sums in one butterfly: at the first step a lane keeps two of
 * the four values (a, b, c and a zero) and sends its partner the other
 * two, at the second one of its two, then reduces that one alone. Lane l
 * ends with the sum of value q = 2 * (l has bit UF_WARP / 2) + (l has bit
 * UF_WARP / 4), 3 meaning the zero: 6 shuffles instead of 15 on a warp of
 * 32, and each sum pairs the same lanes in the same order as uf_warp_sum,
 * so it rounds alike. */
#define UF_GPU_DEFINE_WARP_SUM3(T)                                                                 \
    UF_FN T uf_warp_sum3_split(T a, T b, T c, int lane)                                            \
    {                                                                                              \
        const int hi = lane & (UF_WARP / 2), mid = lane & (UF_WARP / 4);                           \
        T k0 = hi ? c : a, k1 = hi ? (T)0 : b;                                                     \
        const T s0 = hi ? a : c, s1 = hi ? b : (T)0;                                               \
        k0 += UF_SHFL_XOR(s0, UF_WARP / 2);                                                        \
        k1 += UF_SHFL_XOR(s1, UF_WARP / 2);                                                        \
        T v = mid ? k1 : k0;                                                                       \
        v += UF_SHFL_XOR(mid ? k0 : k1, UF_WARP / 4);                                              \
        for (int off = UF_WARP / 8; off > 0; off /= 2)                                             \
            v += UF_SHFL_XOR(v, off);                                                              \
        return v;                                                                                  \
    }
UF_GPU_DEFINE_WARP_SUM3(float)
UF_GPU_DEFINE_WARP_SUM3(double)

/* Three block sums behind one pair of barriers: each value rounds as
 * uf_block_sum would round it alone. Both rounds use the split butterfly;
 * the second ends with each lane fetching the three sums from the lanes
 * that hold them (an xor shuffle whose mask differs by lane). */
#define UF_GPU_DEFINE_BLOCK_SUM3(T)                                                                \
    UF_FN void uf_block_sum3(T *a, T *b, T *c)                                                     \
    {                                                                                              \
        __shared__ T published[3][UF_MAX_THREADS / 32];                                            \
        const int lane = (int)threadIdx.x % UF_WARP, warp = (int)threadIdx.x / UF_WARP;            \
        const int nwarps = (int)blockDim.x / UF_WARP;                                              \
        const int q = (lane & (UF_WARP / 2) ? 2 : 0) + (lane & (UF_WARP / 4) ? 1 : 0);             \
        __syncthreads();                                                                           \
        const T w = uf_warp_sum3_split(*a, *b, *c, lane);                                          \
        if (lane % (UF_WARP / 4) == 0 && q < 3)                                                    \
            published[q][warp] = w;                                                                \
        __syncthreads();                                                                           \
        const int in = lane < nwarps;                                                              \
        const T v =                                                                                \
            uf_warp_sum3_split(in ? published[0][lane] : (T)0, in ? published[1][lane] : (T)0,     \
                               in ? published[2][lane] : (T)0, lane);                              \
        *a = UF_SHFL_XOR(v, (q ^ 0) * (UF_WARP / 4));                                              \
        *b = UF_SHFL_XOR(v, (q ^ 1) * (UF_WARP / 4));                                              \
        *c = UF_SHFL_XOR(v, (q ^ 2) * (UF_WARP / 4));                                              \
    }
UF_GPU_DEFINE_BLOCK_SUM3(float)
UF_GPU_DEFINE_BLOCK_SUM3(double)

#define UF_WARP_SUM(v, width) ((v) = uf_warp_sum((v), (width)))
#define UF_WARP_MAX(v, width) ((v) = uf_warp_max((v), (width)))
#define UF_BLOCK_SUM(v) ((v) = uf_block_sum(v))
#define UF_BLOCK_MAX(v) ((v) = uf_block_max(v))
#define UF_BLOCK_SUM3(a, b, c) uf_block_sum3(&(a), &(b), &(c))

/* ---- a thread's own values ----
 * `out` becomes the maximum (sum) of the thread's n values v[0..n), n a
 * constant: in index order here, the values being registers. The maximum
 * passes over NaN (a NaN reaches the row through the sum). */
#define UF_THREAD_MAX(out, v, n)                                                                   \
    do {                                                                                           \
        out = -INFINITY;                                                                           \
        UF_UNROLL for (int i_ = 0; i_ < (n); ++i_) out = (v)[i_] > out ? (v)[i_] : out;            \
    } while (0)
#define UF_THREAD_SUM(out, v, n)                                                                   \
    do {                                                                                           \
        out = 0;                                                                                   \
        UF_UNROLL for (int i_ = 0; i_ < (n); ++i_) out += (v)[i_];                                 \
    } while (0)

/* ---- matrix fragments (portable/fragment_layout.h; see openmp/layer.h) ---- */
#include "gpu/fragments_gpu.h"
#define UF_MMA_F16(c, coff, a, aoff, b, boff) uf_mma_f16(&(c)[coff], &(a)[aoff], &(b)[boff])
#define UF_MMA_BF16(c, coff, a, aoff, b, boff) uf_mma_bf16(&(c)[coff], &(a)[aoff], &(b)[boff])
#define UF_MMA_F32(c, coff, a, aoff, b, boff) uf_mma_f32(&(c)[coff], &(a)[aoff], &(b)[boff])

#endif
