/*
 * The device-code layer on the CPU (OpenMP). A kernel is a loop over blocks
 * (shared among OpenMP threads) whose body is a sequence of thread loops
 * (plain sequential loops) separated by barriers (no-ops here) and
 * collectives. "Exclusive" variables are arrays indexed by the thread, so a
 * value survives from one thread loop to the next as a register does on a
 * GPU. Collectives use the GPU's index arithmetic and operation order, so a
 * wrong lane or warp index fails here too and sums round the same way.
 */
#ifndef UF_LAYER_H
#define UF_LAYER_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "openmp/cpu_level.h"
#include "openmp/fast_exp.h"
#include "portable/conversion_runs.h"
#include "portable/f16_bits.h"

#ifndef UF_WARP
#define UF_WARP 32 /* chosen at configure time: 32 or 64 */
#endif
#if UF_WARP != 32 && UF_WARP != 64
#error "UF_WARP must be 32 or 64"
#endif

/* Most threads a CPU block may have: bounds the exclusive arrays' size. */
#define UF_MAX_THREADS 256

/* Device functions are forced inline, as GPU compilers do, so that the
 * thread loops around them can be optimised as one body. */
#define UF_FN static inline __attribute__((always_inline))
#define UF_RESTRICT restrict
#define UF_EXTERN_C
/* Loops of up to 10 iterations (Philox's rounds, the elements of an access
 * or a dropout unit) unroll completely. Longer ones, such as the loop over a
 * thread's 16 register values, stay loops that gcc vectorises and then
 * unrolls up to 10 times, whereas a fully unrolled body of exp calls stays
 * scalar (measured: softmax forward 1.5x faster than with "GCC unroll 16"). */
#define UF_UNROLL _Pragma("GCC unroll 10")
#define UF_PRAGMA_(x) _Pragma(#x)
#define UF_UNROLL_BY(n) UF_PRAGMA_(GCC unroll n)
/* Loops that a GPU must unroll to keep arrays in registers (the fragment
 * loops of attention) stay loops here: unrolled, their nested bodies made
 * functions too large to compile in reasonable time under sanitizers. */
#define UF_UNROLL_REGS
/* Loops over the units a thread holds (activation + dropout: up to 64 of
 * them here): twice. Unrolled up to 10 times, the activation kernel's code
 * was a third larger and took 60% longer to compile (its f32 part 5 times
 * longer), for no speed the 2-core machine could resolve. */
#define UF_UNROLL_HELD _Pragma("GCC unroll 2")
/* Values that wait are held converted (dtype_bind.h): there are no
 * registers to save, and a 16-bit conversion is scalar code here. */
#define UF_HOLD_AS_LOADED 0

/* ---- kernels and launch ---- */
typedef struct uf_kdims {
    int64_t blocks;
    int threads;
    int team;      /* OpenMP threads running the blocks */
    int64_t chunk; /* consecutive blocks an OpenMP thread takes at a time */
} uf_kdims;

/* Fills d's team and chunk for launch l: the blocks in one contiguous
 * share per thread; or, for a launch whose blocks wait for each other
 * (uf_launch.group_blocks > 1), taken in turn by a team that runs at once,
 * as a GPU's resident grid takes them. UF_ERR_LAUNCH when no such team is
 * to be had (runtime.c). */
uf_status ufb_cpu_grid(const uf_launch *l, uf_kdims *d);
/* Gives up the processor while spinning on another block's progress. */
void ufb_cpu_pause(void);

/* Defines `name_launch(const uf_launch *, const ArgsT *)` and opens the body
 * of the kernel, which receives its arguments by value as `a`. */
#define UF_KERNEL(name, ArgsT, a) UF_KERNEL_(name, ArgsT, a, UF_MAX_THREADS)
/* The same, for a kernel that is launched with at most `max_threads`
 * threads per block (GPU compilers then give each thread more registers). */
#define UF_KERNEL_BOUNDED(name, ArgsT, a, max_threads) UF_KERNEL_(name, ArgsT, a, max_threads)
/* The same again, asking the GPU compiler to fit `min_blocks` such blocks
 * on a multiprocessor (fewer registers per thread, more warps to hide
 * latency); nothing to ask on the CPU. */
#define UF_KERNEL_RESIDENT(name, ArgsT, a, max_threads, min_blocks)                                \
    UF_KERNEL_(name, ArgsT, a, max_threads)
#if defined(UF_CPU_ISA)
/* A copy for a newer instruction set (cpu_level.h): the body alone, which
 * the baseline compile's launcher calls. */
#define UF_KERNEL_(name, ArgsT, a, max_threads) /* expands name first */                           \
    UF_CPU_HIDDEN void UF_CPU_PASTE(name##_body, UF_CPU_ISA)(const uf_kdims uf_dims_,              \
                                                             const ArgsT a);                       \
    void UF_CPU_PASTE(name##_body, UF_CPU_ISA)(const uf_kdims uf_dims_, const ArgsT a)
#else
#if defined(UF_CPU_DISPATCH)
#define UF_CPU_RUN_BODY(name, ArgsT, d, args) UF_CPU_RUN(name, ArgsT, d, args)
#else
#define UF_CPU_RUN_BODY(name, ArgsT, d, args) name##_body((d), *(args))
#endif
#define UF_KERNEL_(name, ArgsT, a, max_threads) /* expands name first */                           \
    static void name##_body(const uf_kdims uf_dims_, const ArgsT a);                               \
    uf_status name##_launch(const uf_launch *l, const ArgsT *args)                                 \
    {                                                                                              \
        if (l->threads < 1 || l->threads > (max_threads) || l->threads > UF_MAX_THREADS ||         \
            l->threads % UF_WARP != 0)                                                             \
            return UF_ERR_LAUNCH;                                                                  \
        uf_kdims d = {l->blocks, l->threads, 1, 1};                                                \
        if (ufb_cpu_grid(l, &d) != UF_OK)                                                          \
            return UF_ERR_LAUNCH;                                                                  \
        UF_CPU_RUN_BODY(name, ArgsT, d, args);                                                     \
        return UF_OK;                                                                              \
    }                                                                                              \
    static void name##_body(const uf_kdims uf_dims_, const ArgsT a)
#endif

#define UF_NTHREADS (uf_dims_.threads)

/* Loop over the logical blocks, shared among the team as ufb_cpu_grid
 * decided. */
#define UF_BLOCKS(b)                                                                               \
    _Pragma("omp parallel for num_threads(uf_dims_.team) schedule(static, uf_dims_.chunk)") for (  \
        int64_t b = 0; b < uf_dims_.blocks; ++b)

/* Loop over the threads of a block. `break` and `continue` end the current
 * thread's turn only, as they would on a GPU. */
#define UF_THREADS(t)                                                                              \
    for (int uf_tid_ = 0; uf_tid_ < uf_dims_.threads; ++uf_tid_)                                   \
        for (int t = uf_tid_, uf_once_ = 1; uf_once_; uf_once_ = 0, (void)t)

#define UF_BARRIER() ((void)0)

/* ---- logical blocks that wait for each other (uf_launch.group_blocks) ----
 * As on GPUs (gpu/layer_gpu.h): one thread of a block arrives and waits.
 * Each block runs in one OpenMP thread, so the acquiring load hands the
 * other blocks' stores to the whole block. */
UF_FN unsigned uf_group_arrive(unsigned *count)
{
    return __atomic_fetch_add(count, 1u, __ATOMIC_ACQ_REL);
}
UF_FN void uf_group_wait(unsigned *count, unsigned n)
{
    while (__atomic_load_n(count, __ATOMIC_ACQUIRE) < n)
        ufb_cpu_pause();
}
#define UF_GROUP_READ(type, p) (*(const type *)(p))

#define UF_SHARED(type, name, n) _Alignas(16) type name[n]
#define UF_EXCLUSIVE(type, name) type name[UF_MAX_THREADS]
#define UF_EXCLUSIVE_ARRAY(type, name, n) type name[UF_MAX_THREADS][n]
#define UF_X(name) (name[uf_tid_])

/* ---- 16-bit floating point storage ---- */
typedef uint16_t uf_f16;
typedef uint16_t uf_bf16;
/* One value at a time: F16C's instruction in the x86-64-v3/v4 copies (the
 * norms' units convert value by value; the bit arithmetic took most of
 * their 16-bit time), the bit arithmetic elsewhere. Equal bit for bit but
 * for NaN payloads (f16c_loops.h). */
#if defined(UF_CPU_ISA) && defined(__F16C__)
#include <immintrin.h>
UF_FN float uf_f16_to_f32(uf_f16 h)
{
    return _cvtsh_ss(h);
}
UF_FN uf_f16 uf_f32_to_f16(float f)
{
    return (uf_f16)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
#else
UF_FN float uf_f16_to_f32(uf_f16 h)
{
    return uf_f16_bits_to_f32(h);
}
UF_FN uf_f16 uf_f32_to_f16(float f)
{
    return uf_f32_to_f16_bits(f);
}
#endif
UF_FN float uf_bf16_to_f32(uf_bf16 h)
{
    return uf_bf16_bits_to_f32(h);
}
UF_FN uf_bf16 uf_f32_to_bf16(float f)
{
    return uf_f32_to_bf16_bits(f);
}

/* Pairs packed in a 32-bit word, low half first: the vector paths convert
 * two at a time, which GPUs do in one instruction. */
UF_FN void uf_f16x2_to_f32x2(uint32_t w, float *out)
{
    out[0] = uf_f16_to_f32((uf_f16)(w & 0xffffu));
    out[1] = uf_f16_to_f32((uf_f16)(w >> 16));
}
UF_FN uint32_t uf_f32x2_to_f16x2(float lo, float hi)
{
    return (uint32_t)uf_f32_to_f16(lo) | (uint32_t)uf_f32_to_f16(hi) << 16;
}
UF_FN void uf_bf16x2_to_f32x2(uint32_t w, float *out)
{
    out[0] = uf_bf16_to_f32((uf_bf16)(w & 0xffffu));
    out[1] = uf_bf16_to_f32((uf_bf16)(w >> 16));
}
UF_FN uint32_t uf_f32x2_to_bf16x2(float lo, float hi)
{
    return (uint32_t)uf_f32_to_bf16(lo) | (uint32_t)uf_f32_to_bf16(hi) << 16;
}

/* Runs of 16-bit values (conversion_runs.h). bfloat16 runs are inline
 * loops, which gcc vectorises. binary16 runs are F16C's loops
 * (f16c_loops.h): inline in the x86-64-v3/v4 kernel copies; in the
 * baseline code, calls to f16c_runs.c where ufb_cpu_level() >= 3, else
 * run inline loops of the bit arithmetic: gcc 12 vectorises no _Float16
 * conversion, and the bit arithmetic only to about a fifth of F16C's rate
 * (measured on the 2-core machine with AVX-512: 5 and 3 G values a second
 * each way, against 20). */
UF_DEFINE_RUN_TO_F32(UF_FN, uf_bf16_run_to_f32, uf_bf16_bits_to_f32)
UF_DEFINE_RUN_FROM_F32(UF_FN, uf_f32_run_to_bf16, uf_f32_to_bf16_bits)
UF_DEFINE_RUN_TO_F32(UF_FN, uf_f16_bits_run_to_f32, uf_f16_bits_to_f32)
UF_DEFINE_RUN_FROM_F32(UF_FN, uf_f32_run_to_f16_bits, uf_f32_to_f16_bits)
#if defined(UF_CPU_ISA) && defined(__F16C__)
/* The x86-64-v3/v4 copies: the runs are F16C code inline. */
#include "openmp/f16c_loops.h"
UF_DEFINE_F16C_RUNS(UF_FN, uf_f16_run_to_f32, uf_f32_run_to_f16)
#else
#if defined(__x86_64__) && defined(__GNUC__)
#define UF_CPU_F16C_RUNS 1
UF_CPU_HIDDEN void ufb_f16c_run_to_f32(float *restrict dst, const uint16_t *restrict src, int n,
                                       float s);
UF_CPU_HIDDEN void ufb_f16c_run_from_f32(uint16_t *restrict dst, const float *restrict src, int n,
                                         float s);
#else
#define UF_CPU_F16C_RUNS 0
#endif
UF_FN void uf_f16_run_to_f32(float *restrict dst, const uint16_t *restrict src, int n, float s)
{
#if UF_CPU_F16C_RUNS
    if (ufb_cpu_level() >= 3) {
        ufb_f16c_run_to_f32(dst, src, n, s);
        return;
    }
#endif
    uf_f16_bits_run_to_f32(dst, src, n, s);
}
UF_FN void uf_f32_run_to_f16(uint16_t *restrict dst, const float *restrict src, int n, float s)
{
#if UF_CPU_F16C_RUNS
    if (ufb_cpu_level() >= 3) {
        ufb_f16c_run_from_f32(dst, src, n, s);
        return;
    }
#endif
    uf_f32_run_to_f16_bits(dst, src, n, s);
}
#endif

/* ---- 16-byte vector access (callers guarantee 16-byte alignment) ---- */
#define UF_LOAD16(dst, src) memcpy((dst), (src), 16)
#define UF_STORE16(dst, src) memcpy((dst), (src), 16)
/* Data read again by other threads: no cache policy to set here. */
#define UF_LOAD16_KEEP(dst, src) UF_LOAD16((dst), (src))
/* 8-byte access (the softmax's 8-byte kernels, UF_ACCESS8_KERNELS). */
#define UF_LOAD8(dst, src) memcpy((dst), (src), 8)
#define UF_STORE8(dst, src) memcpy((dst), (src), 8)

/* ---- prefetch ----
 * UF_PREFETCH_AHEAD(p, bytes, write): asks the caches for the `bytes` that
 * start UF_PREFETCH_DISTANCE bytes past p, to be read (write 0) or written
 * (1): on a CPU, what the thread takes a few shares of a row later. The
 * cores' own prefetchers left the softmax forward waiting on memory (2-core
 * machine, S = 4096: fp32 0.39 -> 0.27 ns an element with it, 16-bit
 * 0.29 -> 0.23; 2 KiB ahead gained less, 6 and 8 KiB no more). Not in the
 * activation kernels, plain streams that the cores' prefetchers follow:
 * asked for ahead, they took 3-39% more time. Never faults, wherever it
 * points; the address is integer arithmetic, so it may pass the end of the
 * tensor. */
#define UF_PREFETCH_DISTANCE 4096
#define UF_PREFETCH_LINE 64
#if defined(__GNUC__)
#define UF_PREFETCH_AHEAD(p, bytes, write)                                                         \
    do {                                                                                           \
        const uintptr_t uf_pf_ = (uintptr_t)(const void *)(p) + UF_PREFETCH_DISTANCE;              \
        for (int64_t uf_o_ = 0; uf_o_ < (int64_t)(bytes); uf_o_ += UF_PREFETCH_LINE)               \
            __builtin_prefetch((const void *)(uf_pf_ + (uintptr_t)uf_o_), (write), 3);             \
    } while (0)
#else
#define UF_PREFETCH_AHEAD(p, bytes, write) ((void)(p))
#endif

/* UF_PREFETCH_L2(p, bytes): a GPU block's request for the row it takes
 * next (gpu/layer_gpu.h); a CPU thread's loop over rows is followed by the
 * cores' prefetchers, so it does nothing here. */
#define UF_PREFETCH_L2(p, bytes) ((void)(p), (void)(bytes))

/* ---- copies to shared memory that overlap later work (a GPU's
 * asynchronous copies; here an ordinary copy, done at once) ---- */
#define UF_COPY16_ASYNC(dst, src) memcpy((dst), (src), 16)
#define UF_ASYNC_WAIT() ((void)0)

/* ---- math ---- */
/* The low 32 bits of a * b; the high ones in *hi. */
UF_FN uint32_t uf_mul_hilo(uint32_t a, uint32_t b, uint32_t *hi)
{
    const uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}
/* Philox's words in 64-bit lanes (kernels/philox.h) where AVX-512 is
 * compiled for (the x86-64-v4 copies): on the 2-core machine the cells
 * with dropout ran 14-20% faster in f32 and 5-16% in 16 bits
 * (docs/results.md, 2026-12-05 afternoon). With AVX2 or SSE2, whose
 * vectors hold half as many 64-bit lanes, a loop of draws alone ran
 * 30-55% slower that way, so those copies keep 32-bit words. */
#if defined(__AVX512F__)
#define UF_PHILOX_WIDE_WORDS 1
#endif
/* The library is compiled as ISO C (c_std=c11), where gcc contracts no
 * product into an FMA: a plain product is already rounded on its own. The
 * x86-64-v3/v4 copies of the kernels that do not use it are compiled with
 * -ffp-contract=fast (UF_CPU_CONTRACTS, meson.build), where it would not
 * be, so there the operation is missing and such a copy fails to compile. */
#if !defined(UF_CPU_CONTRACTS)
#define UF_MUL_RN(a, b) ((a) * (b))
#endif
/* A vector division here; GPUs use their reciprocal instruction. */
#define UF_RCPF(x) (1.0f / (x))
#define UF_EXPF(x) uf_cpu_expf(x) /* vectorisable; see fast_exp.h */
/* Already within 2.6e-7 relative: libm's expf would stop loops from
 * vectorising. */
#define UF_EXPF_ACCURATE(x) uf_cpu_expf(x)
#define UF_EXP2F(x) uf_cpu_exp2f(x)
#define UF_EXP(x) exp(x)

/* ---- collectives ---- */
#include "openmp/collectives.h"

/* Each thread's `v` becomes the sum (max) over its aligned group of `width`
 * lanes; width is a power of two <= UF_WARP. Call between thread loops. */
#define UF_WARP_SUM(v, width) UF_CPU_COLLECTIVE(warp_sum, v, width)
#define UF_WARP_MAX(v, width) UF_CPU_COLLECTIVE(warp_max, v, width)
/* Each thread's `v` becomes the sum (max) over the whole block. */
#define UF_BLOCK_SUM(v) UF_CPU_COLLECTIVE(block_sum, v, UF_WARP)
#define UF_BLOCK_MAX(v) UF_CPU_COLLECTIVE(block_max, v, UF_WARP)
/* Three block sums at once (one pair of barriers on GPUs; same results as
 * three UF_BLOCK_SUM). */
#define UF_BLOCK_SUM3(a, b, c)                                                                     \
    do {                                                                                           \
        UF_BLOCK_SUM(a);                                                                           \
        UF_BLOCK_SUM(b);                                                                           \
        UF_BLOCK_SUM(c);                                                                           \
    } while (0)

/* ---- a thread's own values (see gpu/layer_gpu.h; openmp/thread_reduce.h) ---- */
#include "openmp/thread_reduce.h"
#define UF_THREAD_MAX(out, v, n) UF_CPU_THREAD_REDUCE(out, v, n, max)
#define UF_THREAD_SUM(out, v, n) UF_CPU_THREAD_REDUCE(out, v, n, sum)

/* ---- matrix fragments (portable/fragment_layout.h) ---- */
#include "openmp/fragments.h"

/* c[coff..] += a[aoff..] * b[boff..] in every fragment group: C four floats,
 * A four pairs, B two pairs per lane, all exclusive arrays. Call between
 * thread loops. The pair is a 32-bit word of two f16 (two bf16) or a
 * uf_f32x2. */
#define UF_MMA_F16(c, coff, a, aoff, b, boff) UF_CPU_MMA(f16, c, coff, a, aoff, b, boff)
#define UF_MMA_BF16(c, coff, a, aoff, b, boff) UF_CPU_MMA(bf16, c, coff, a, aoff, b, boff)
#define UF_MMA_F32(c, coff, a, aoff, b, boff) UF_CPU_MMA(f32, c, coff, a, aoff, b, boff)

#endif
