/*
 * Backward of the scaled softmax, one instantiation per (UF_DT, UF_VEC); see
 * softmax_backward.c. dx = scale * y * (dy - sum_j dy_j y_j), from y and dy.
 * Same paths as the forward pass: the row's y and dy in registers (of one
 * block, or of the blocks a row spans); a block per row that reads twice;
 * or rows split into chunks whose partial dots go through `partial`
 * between two kernels. Each thread rereads only the elements it
 * writes, after the row's sum is complete, so dx may equal dy or y.
 */
#include "kernels/dtype_bind.h"

UF_FN void UF_VNAME(uf_softmax_load_pair)(const uf_softmax_args *a, int64_t row, int64_t j0,
                                          UF_ACC *y, UF_ACC *dy)
{
    UF_LOADV(y, (const UF_T *)a->x + row * a->sk, j0);
    UF_LOADV(dy, (const UF_T *)a->x2 + row * a->sk, j0);
}

/* Thread t's sum of a row's partials p[k] for k = t, t + nthreads, ... <
 * nchunks, in that order. */
UF_FN UF_ACC UF_VNAME(uf_softmax_add_partials)(const UF_ACC *p, int64_t nchunks, int t,
                                               int nthreads)
{
    UF_ACC acc = 0;
    for (int64_t k = t; k < nchunks; k += nthreads)
        acc += UF_GROUP_READ(UF_ACC, &p[k]);
    return acc;
}

/* Span path, between thread loops, after the block's sum: block b stores
 * its chunk's dot in `partial` and counts itself in; once every chunk of
 * the row is in, each warp (rows of at most UF_SOFTMAX_WARP_FOLD_MAX
 * chunks) or the whole block adds the row's partials, as the forward folds
 * them (softmax_forward.h), so every block of the row holds the same dot. */
#define UF_SOFTMAX_SPAN_DOT(a, b, dot)                                                             \
    UF_THREADS (t) {                                                                               \
        if (t == 0) {                                                                              \
            ((UF_ACC *)(a).partial)[b] = UF_X(dot);                                                \
            uf_softmax_span_meet(&(a), (b));                                                       \
        }                                                                                          \
    }                                                                                              \
    UF_BARRIER();                                                                                  \
    if ((a).nchunks <= UF_SOFTMAX_WARP_FOLD_MAX) {                                                 \
        UF_THREADS (t) {                                                                           \
            UF_X(dot) = UF_VNAME(uf_softmax_add_partials)((const UF_ACC *)(a).partial +            \
                                                              ((b) / (a).nchunks) * (a).nchunks,   \
                                                          (a).nchunks, t % UF_WARP, UF_WARP);      \
        }                                                                                          \
        UF_WARP_SUM(dot, UF_WARP);                                                                 \
    } else {                                                                                       \
        UF_THREADS (t) {                                                                           \
            UF_X(dot) = UF_VNAME(uf_softmax_add_partials)((const UF_ACC *)(a).partial +            \
                                                              ((b) / (a).nchunks) * (a).nchunks,   \
                                                          (a).nchunks, t, UF_NTHREADS);            \
        }                                                                                          \
        UF_BLOCK_SUM(dot);                                                                         \
    }

/* The register path, once per share (softmax_backward_reg.h, named by
 * UF_REG_AS): UF_SOFTMAX_REG_BYTES of each row per thread in compute
 * values' size; UF_SOFTMAX_WIDE_BYTES (src/softmax.c takes it for 16-bit
 * rows longer than a warp's registers); on GPUs roomy (one access more a
 * thread), on CPUs narrow (short rows); on GPUs the first three again
 * for shifted rows; then the span path (rows longer
 * than a block's registers) with UF_SOFTMAX_SPAN_BYTES, without and with
 * shared shares (softmax_args.h). */
#define UF_REG_SPAN 0
#define UF_REG_SHARED 0
#define UF_REG_BOUNDED 0
#define UF_REG_SHIFTED 0
#define UF_REG_AS reg
#define UF_REG_N (UF_SOFTMAX_REG_BYTES / (int)sizeof(UF_ACC))
#include "kernels/softmax_backward_reg.h"
#define UF_REG_AS reg_wide
#define UF_REG_N (UF_SOFTMAX_WIDE_BYTES / (int)sizeof(UF_ACC))
#include "kernels/softmax_backward_reg.h"
#if UF_SOFTMAX_HAS_ROOMY
#define UF_REG_AS reg_roomy
#define UF_REG_N UF_SOFTMAX_ROOMY_N(1)
#include "kernels/softmax_backward_reg.h"
#endif
#if UF_SOFTMAX_HAS_NARROW
#define UF_REG_AS reg_narrow
#define UF_REG_N (UF_SOFTMAX_NARROW_BYTES / (int)sizeof(UF_ACC))
#include "kernels/softmax_backward_reg.h"
#endif
/* The first three again for rows that start anywhere (UF_REG_SHIFTED), as
 * the forward's (softmax_forward.h). */
#if UF_SOFTMAX_HAS_SHIFTED && UF_VEC_BYTES == 16 && UF_DT != 4
#define UF_REG_HEADER "kernels/softmax_backward_reg.h"
#define UF_SHIFTED_BACKWARD 1
#undef UF_REG_SHIFTED
#define UF_REG_SHIFTED 1
#define UF_SHIFTED_AS shifted
#include "kernels/softmax_shifted_shares.h"
/* And for ragged tensors (UF_REG_SHIFTED 2; UF_SOFTMAX_PAST_END). */
#undef UF_REG_SHIFTED
#define UF_REG_SHIFTED 2
#define UF_SHIFTED_AS ragged
#include "kernels/softmax_shifted_shares.h"
#undef UF_REG_HEADER
#undef UF_SHIFTED_BACKWARD
#undef UF_REG_SHIFTED
#define UF_REG_SHIFTED 0
#endif
#undef UF_REG_SPAN
#define UF_REG_SPAN 1
#define UF_REG_AS span
#define UF_REG_N (UF_SOFTMAX_SPAN_BYTES(sizeof(UF_T)) / (int)sizeof(UF_ACC))
#include "kernels/softmax_backward_reg.h"
#undef UF_REG_SHARED
#undef UF_REG_BOUNDED
#define UF_REG_SHARED UF_SOFTMAX_SPAN_SHARED_BWD((int)sizeof(UF_T), UF_VEC_BYTES == 16)
#define UF_REG_BOUNDED 1
#define UF_REG_AS span_kept
#define UF_REG_N (UF_SOFTMAX_SPAN_BYTES(sizeof(UF_T)) / (int)sizeof(UF_ACC))
#include "kernels/softmax_backward_reg.h"
#undef UF_REG_SPAN
#undef UF_REG_SHARED
#undef UF_REG_BOUNDED
#undef UF_REG_SHIFTED
#undef UF_SOFTMAX_SPAN_DOT

/* One thread's share of sum(y * dy) over keys [begin, end). */
UF_FN UF_ACC UF_VNAME(uf_softmax_dot)(const uf_softmax_args *a, int64_t row, int64_t begin,
                                      int64_t end, int t, int nthreads)
{
    UF_ACC acc = 0;
    for (int64_t j0 = begin + (int64_t)t * UF_VEC; j0 < end; j0 += (int64_t)nthreads * UF_VEC) {
        UF_ACC y[UF_VEC], dy[UF_VEC];
        UF_VNAME(uf_softmax_load_pair)(a, row, j0, y, dy);
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) acc += y[e] * dy[e];
    }
    return acc;
}

/* dx = scale * y * (dy - dot) over keys [begin, end). */
UF_FN void UF_VNAME(uf_softmax_grad)(const uf_softmax_args *a, int64_t row, int64_t begin,
                                     int64_t end, int t, int nthreads, UF_ACC dot)
{
    const UF_ACC scale = (UF_ACC)a->scale;
    UF_T *dx = (UF_T *)a->out + row * a->sk;
    for (int64_t j0 = begin + (int64_t)t * UF_VEC; j0 < end; j0 += (int64_t)nthreads * UF_VEC) {
        UF_ACC y[UF_VEC], dy[UF_VEC];
        UF_VNAME(uf_softmax_load_pair)(a, row, j0, y, dy);
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) y[e] = scale * y[e] * (dy[e] - dot);
        UF_STOREV(dx, j0, y);
    }
}

UF_KERNEL(UF_VNAME(uf_softmax_bwd_stream), uf_softmax_args, a)
{
    UF_BLOCKS (row) {
        UF_EXCLUSIVE(UF_ACC, dot);
        UF_THREADS (t) {
            UF_X(dot) = UF_VNAME(uf_softmax_dot)(&a, row, 0, a.sk, t, UF_NTHREADS);
        }
        UF_BLOCK_SUM(dot);
        UF_THREADS (t) {
            UF_VNAME(uf_softmax_grad)(&a, row, 0, a.sk, t, UF_NTHREADS, UF_X(dot));
        }
    }
}

UF_KERNEL(UF_VNAME(uf_softmax_bwd_split_stats), uf_softmax_args, a)
{
    UF_BLOCKS (b) {
        int64_t begin, end;
        const int64_t row = uf_softmax_chunk(&a, b, &begin, &end);
        UF_EXCLUSIVE(UF_ACC, dot);
        UF_THREADS (t) {
            UF_X(dot) = UF_VNAME(uf_softmax_dot)(&a, row, begin, end, t, UF_NTHREADS);
        }
        UF_BLOCK_SUM(dot);
        UF_THREADS (t) {
            if (t == 0)
                ((UF_ACC *)a.partial)[b] = UF_X(dot);
        }
    }
}

UF_KERNEL(UF_VNAME(uf_softmax_bwd_split_apply), uf_softmax_args, a)
{
    UF_BLOCKS (b) {
        int64_t begin, end;
        const int64_t row = uf_softmax_chunk(&a, b, &begin, &end);
        UF_EXCLUSIVE(UF_ACC, dot);
        UF_THREADS (t) {
            /* The same partials in the same order in every chunk's block:
             * deterministic, and every chunk agrees on the row's dot. */
            const UF_ACC *p = (const UF_ACC *)a.partial + row * a.nchunks;
            UF_ACC acc = 0;
            for (int64_t k = t; k < a.nchunks; k += UF_NTHREADS)
                acc += p[k];
            UF_X(dot) = acc;
        }
        UF_BLOCK_SUM(dot);
        UF_THREADS (t) {
            UF_VNAME(uf_softmax_grad)(&a, row, begin, end, t, UF_NTHREADS, UF_X(dot));
        }
    }
}

#include "kernels/dtype_unbind.h"
