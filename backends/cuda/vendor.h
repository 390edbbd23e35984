/* Everything the shared GPU code needs from CUDA, by the names it uses. */
#ifndef UF_CUDA_VENDOR_H
#define UF_CUDA_VENDOR_H

#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string.h>

#define UF_WARP 32
#define UF_SHFL_XOR(v, mask) __shfl_xor_sync(0xffffffffu, (v), (mask))
/* Value of `lane` within the caller's group of 32 lanes. */
#define UF_SHFL(v, lane) __shfl_sync(0xffffffffu, (v), (lane), 32)
#define UF_GPU_BACKEND UF_BACKEND_CUDA
/* Most threads per block, and blocks wanted per multiprocessor. */
#define UF_VENDOR_BOUNDS(threads, blocks) __launch_bounds__((threads), (blocks))

/* A short sleep between polls of a flag another block sets (sm_70 and
 * later), so that the polling warp leaves issue slots to the others. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#define UF_VENDOR_PAUSE() __nanosleep(64)
#endif

/* The count of blocks that wait for each other (gpu/layer_gpu.h): an
 * add with acquire and release semantics, and a polling load with acquire
 * semantics, where a full fence on each side cost a round trip to L2 more
 * (sm_70 and later). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
static __device__ __forceinline__ unsigned uf_cuda_group_arrive(unsigned *p)
{
    unsigned before;
    asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(before) : "l"(p) : "memory");
    return before;
}
static __device__ __forceinline__ unsigned uf_cuda_group_poll(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
#define UF_VENDOR_GROUP_ARRIVE(p) uf_cuda_group_arrive(p)
#define UF_VENDOR_GROUP_POLL(p) uf_cuda_group_poll(p)
#endif

/* Both halves of a 32 x 32-bit product from one multiply: written in C,
 * NVVM widens the operands and ptxas emits a 64-bit multiply plus adds. */
static __device__ __forceinline__ unsigned uf_cuda_mul_hilo(unsigned a, unsigned b, unsigned *hi)
{
    unsigned long long p;
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(p) : "r"(a), "r"(b));
    *hi = (unsigned)(p >> 32);
    return (unsigned)p;
}
#define UF_VENDOR_MUL_HILO(a, b, hi) uf_cuda_mul_hilo((a), (b), (hi))

/* Products nvcc never contracts into an FMA. */
#define UF_VENDOR_MUL_RN_F32(a, b) __fmul_rn((a), (b))
#define UF_VENDOR_MUL_RN_F64(a, b) __dmul_rn((a), (b))

/* 1 / x to within an ulp: one MUFU.RCP, where the division 1.0f / x adds
 * Newton steps and a branch to a slow path for IEEE rounding. */
static __device__ __forceinline__ float uf_cuda_rcp(float x)
{
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
#define UF_VENDOR_RCP(x) uf_cuda_rcp(x)

/* Two floats to two bf16 in one instruction (sm_80 and later). */
static __device__ __forceinline__ unsigned uf_cuda_f32x2_to_bf16x2(float lo, float hi)
{
    const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);
    unsigned w;
    memcpy(&w, &b, sizeof w);
    return w;
}
#define UF_VENDOR_F32X2_TO_BF16X2(lo, hi) uf_cuda_f32x2_to_bf16x2((lo), (hi))

/* The 16x8x16 fragment product on tensor cores (sm_80 and later); its
 * layout is the one portable/fragment_layout.h states. Older targets and
 * the host pass use the shuffle emulation of gpu/fragments_gpu.h. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define UF_CUDA_DEFINE_MMA(name, type)                                                             \
    static __device__ __forceinline__ void name(float *c, const unsigned *a, const unsigned *b)    \
    {                                                                                              \
        asm("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 "                         \
            "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"                      \
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                       \
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));                   \
    }
UF_CUDA_DEFINE_MMA(uf_cuda_mma_f16, "f16")
UF_CUDA_DEFINE_MMA(uf_cuda_mma_bf16, "bf16")
#define UF_VENDOR_MMA_F16(c, a, b) uf_cuda_mma_f16((c), (a), (b))
#define UF_VENDOR_MMA_BF16(c, a, b) uf_cuda_mma_bf16((c), (a), (b))

/* 16 bytes from global to shared memory without a trip through registers
 * (cp.async), and the wait for this thread's copies. */
static __device__ __forceinline__ void uf_cuda_copy16_async(void *dst, const void *src)
{
    const unsigned at = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(at), "l"(src) : "memory");
}
static __device__ __forceinline__ void uf_cuda_async_wait(void)
{
    asm volatile("cp.async.wait_all;" ::: "memory");
}
#define UF_VENDOR_COPY16_ASYNC(dst, src) uf_cuda_copy16_async((dst), (src))
#define UF_VENDOR_ASYNC_WAIT() uf_cuda_async_wait()

/* 16 bytes that other threads will read again soon: loaded with an L2
 * policy that evicts them last. */
static __device__ __forceinline__ uint4 uf_cuda_load16_keep(const void *src)
{
    uint4 v;
    unsigned long long policy;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(src), "l"(policy));
    return v;
}
#define UF_VENDOR_LOAD16_KEEP(src) uf_cuda_load16_keep(src)
#endif

/* Asks L2 for `bytes` bytes from global memory at p (16-byte aligned, a
 * multiple of 16) without waiting for them: one instruction for a whole
 * row (sm_90 and later). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
static __device__ __forceinline__ void uf_cuda_prefetch_l2(const void *p, unsigned bytes)
{
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
}
#define UF_VENDOR_PREFETCH_L2(p, bytes) uf_cuda_prefetch_l2((p), (unsigned)(bytes))
#endif

/* Two 8x8 matrices of 16-bit values from shared memory (sm_75 and later),
 * plain or transposed: the B fragment loads of gpu/fragments_gpu.h. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
#define UF_CUDA_DEFINE_LDSM(name, op)                                                              \
    static __device__ __forceinline__ void name(unsigned *r, const void *row)                      \
    {                                                                                              \
        const unsigned at = (unsigned)__cvta_generic_to_shared(row);                               \
        asm volatile(op " {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(at));                    \
    }
UF_CUDA_DEFINE_LDSM(uf_cuda_ldsm_x2, "ldmatrix.sync.aligned.m8n8.x2.shared.b16")
UF_CUDA_DEFINE_LDSM(uf_cuda_ldsm_x2_trans, "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16")
#define UF_VENDOR_LDSM_X2(r, row) uf_cuda_ldsm_x2((r), (row))
#define UF_VENDOR_LDSM_X2_TRANS(r, row) uf_cuda_ldsm_x2_trans((r), (row))
/* Four such matrices, lanes 16-31 giving the rows of the third and fourth. */
#define UF_CUDA_DEFINE_LDSM4(name, op)                                                             \
    static __device__ __forceinline__ void name(unsigned *r, const void *row)                      \
    {                                                                                              \
        const unsigned at = (unsigned)__cvta_generic_to_shared(row);                               \
        asm volatile(op " {%0, %1, %2, %3}, [%4];"                                                 \
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])                              \
                     : "r"(at));                                                                   \
    }
UF_CUDA_DEFINE_LDSM4(uf_cuda_ldsm_x4, "ldmatrix.sync.aligned.m8n8.x4.shared.b16")
UF_CUDA_DEFINE_LDSM4(uf_cuda_ldsm_x4_trans, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16")
#define UF_VENDOR_LDSM_X4(r, row) uf_cuda_ldsm_x4((r), (row))
#define UF_VENDOR_LDSM_X4_TRANS(r, row) uf_cuda_ldsm_x4_trans((r), (row))
#endif

#endif
