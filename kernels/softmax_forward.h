/*
 * Forward scaled masked softmax, one instantiation per (UF_DT, UF_VEC); see
 * softmax_forward.c. Three paths:
 *
 *  reg:    the row lives in registers (UF_SOFTMAX_REG_BYTES per thread);
 *          `group` threads share a row: read once, write once.
 *  stream: rows too long for registers; one block per row keeps a running
 *          (max, sum) per thread in one read, then reads again to write
 *          (the second read mostly hits L2: few rows are in flight).
 *  span:   rows longer than a block's registers: a row's chunks are held in
 *          the registers of `nchunks` blocks that run at once and exchange
 *          their (max, sum) through `partial` (softmax_forward_reg.h); read
 *          once, written once. src/softmax.c launches it with
 *          group_blocks = nchunks, and takes the next paths where the
 *          device cannot hold that many blocks at once.
 *  split:  long rows, or too few rows to fill the device: each row is cut
 *          into `nchunks` chunks of `chunk` keys, one block per chunk. The
 *          stats kernel writes each chunk's (max, sum) to `partial`; the
 *          apply kernel combines its row's partials and writes its chunk.
 *
 * Special values: hidden keys are -inf; the row maximum is taken as 0 when
 * every key is hidden so that exp(-inf - max) is 0 rather than NaN, and a
 * zero sum gives zeros. NaN spreads through the sum; +inf makes the sum NaN.
 */
#include "kernels/dtype_bind.h"

/* Where a row's keys come from; computed once per row because the mask
 * offset costs divisions. */
typedef struct UF_VNAME(uf_softmax_row) {
    const UF_T *x;
    const void *mask; /* this row's mask, NULL without one */
    int64_t last_key; /* keys after it are hidden by the causal rule */
    int64_t sk;
    UF_ACC scale;
} UF_VNAME(uf_softmax_row);

UF_FN UF_VNAME(uf_softmax_row) UF_VNAME(uf_softmax_row_at)(const uf_softmax_args *a, int64_t row)
{
    UF_VNAME(uf_softmax_row) r;
    r.x = (const UF_T *)a->x + row * a->sk;
    r.mask = NULL;
    if (a->mask_kind != UF_MASK_NONE) {
        const size_t esize = a->mask_kind == UF_MASK_ADD_SAME  ? sizeof(UF_T)
                             : a->mask_kind == UF_MASK_ADD_F32 ? sizeof(float)
                                                               : 1;
        r.mask = (const char *)a->x2 + uf_softmax_mask_offset(a, row) * (int64_t)esize;
    }
    r.last_key = uf_softmax_last_key(a, row);
    r.sk = a->sk;
    r.scale = (UF_ACC)a->scale;
    return r;
}

/* One access's inputs as loaded: UF_VEC keys of x and of the mask. Kept
 * apart from the arithmetic so that a thread can issue all its loads before
 * it waits for any (uf_softmax_fwd_reg*). */
typedef struct UF_VNAME(uf_softmax_held) {
    UF_HELD x[UF_HELD_N];
    UF_HELD m[UF_HELD_N];     /* UF_MASK_ADD_SAME */
    float mf[UF_VEC];         /* UF_MASK_ADD_F32 */
    unsigned char mb[UF_VEC]; /* UF_MASK_BOOL */
} UF_VNAME(uf_softmax_held);

/* Loads the mask's UF_VEC keys from j; `kind` is the mask kind, a
 * constant where the caller wants code without its branch. A mask of x's
 * type is read as one access, inside the row; an fp32 or bool mask key by
 * key, where `within` (a constant: shifted rows, whose first and last
 * accesses reach past the row's ends) each index kept inside [0,
 * last_key] (keys past last_key are hidden whatever their mask). */
UF_FN void UF_VNAME(uf_softmax_hold_mask)(const UF_VNAME(uf_softmax_row) * r, int kind, int64_t j,
                                          UF_VNAME(uf_softmax_held) * h, int within)
{
    if (kind == UF_MASK_ADD_SAME) {
        UF_HOLDV_KEEP(h->m, (const UF_T *)r->mask, j); /* read again by the other heads */
    } else if (kind == UF_MASK_ADD_F32 || kind == UF_MASK_BOOL) {
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e)
        {
            int64_t i = j + e;
            if (within) {
                i = i < r->last_key ? i : r->last_key;
                i = i < 0 ? 0 : i;
            }
            if (kind == UF_MASK_ADD_F32)
                h->mf[e] = ((const float *)r->mask)[i];
            else
                h->mb[e] = ((const unsigned char *)r->mask)[i];
        }
    }
}

/* The same with x's keys; where `keywise` (a constant) key by key, each
 * index kept inside the row (shifted rows whose last access may pass the
 * tensor's end; the keys outside the row are hidden). */
UF_FN void UF_VNAME(uf_softmax_hold)(const UF_VNAME(uf_softmax_row) * r, int kind, int64_t j,
                                     UF_VNAME(uf_softmax_held) * h, int within, int keywise)
{
    if (keywise) {
        UF_SOFTMAX_HOLD_KEYS(h->x, r->x, j, r->sk);
    } else {
        UF_HOLDV(h->x, r->x, j);
    }
    UF_VNAME(uf_softmax_hold_mask)(r, kind, j, h, within);
}

/* -inf for the keys z from j0 that the causal rule hides (past last_key). */
UF_FN void UF_VNAME(uf_softmax_hide_keys)(const UF_VNAME(uf_softmax_row) * r, int64_t j0, UF_ACC *z)
{
    const int64_t visible = r->last_key - j0; /* z[e] is visible while e <= visible */
    if (visible < UF_VEC - 1)
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] = e > visible ? (UF_ACC)-INFINITY : z[e];
}

/* Turns the keys z = x from j0 into logits x * scale + mask (the mask as
 * held in h), -inf where hidden. */
UF_FN void UF_VNAME(uf_softmax_mask_keys)(const UF_VNAME(uf_softmax_row) * r, int kind, int64_t j0,
                                          const UF_VNAME(uf_softmax_held) * h, UF_ACC *z)
{
    UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] *= r->scale;
    if (kind == UF_MASK_ADD_SAME) {
        UF_ACC m[UF_VEC];
        UF_HELD_TO_ACC(m, h->m);
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] += m[e];
    } else if (kind == UF_MASK_ADD_F32) {
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] += (UF_ACC)h->mf[e];
    } else if (kind == UF_MASK_BOOL) {
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] = h->mb[e] ? (UF_ACC)-INFINITY : z[e];
    }
    UF_VNAME(uf_softmax_hide_keys)(r, j0, z);
}

/* uf_softmax_mask_keys for a run of `count` consecutive keys from j in
 * memory (the CPU's vectorised loops, softmax_forward_reg.h): v holds
 * them as converted, `scale` the factor still to apply (the row's scale, or
 * 1 where the conversion applied it); `same` the run of a mask of x's type
 * converted (UF_MASK_ADD_SAME); an fp32 or bool mask is read from the
 * row's mask for the first `shown` keys, the keys the row shows, and the
 * rest become -inf. */
UF_FN void UF_VNAME(uf_softmax_mask_run)(const UF_VNAME(uf_softmax_row) * r, int kind, int64_t j,
                                         const UF_ACC *same, int shown, int count, UF_ACC scale,
                                         UF_ACC *v)
{
    if (kind == UF_MASK_ADD_SAME) {
        for (int i = 0; i < count; ++i)
            v[i] = v[i] * scale + same[i];
    } else if (kind == UF_MASK_ADD_F32) {
        const float *mask = (const float *)r->mask + j;
        for (int i = 0; i < shown; ++i)
            v[i] = v[i] * scale + (UF_ACC)mask[i];
    } else if (kind == UF_MASK_BOOL) {
        const unsigned char *mask = (const unsigned char *)r->mask + j;
        for (int i = 0; i < shown; ++i)
            v[i] = mask[i] ? (UF_ACC)-INFINITY : v[i] * scale;
    } else if (scale != (UF_ACC)1) {
        for (int i = 0; i < count; ++i)
            v[i] *= scale;
    }
    for (int i = shown; i < count; ++i)
        v[i] = (UF_ACC)-INFINITY;
}

/* Logits of the held keys from j0. */
UF_FN void UF_VNAME(uf_softmax_logits)(const UF_VNAME(uf_softmax_row) * r, int kind, int64_t j0,
                                       const UF_VNAME(uf_softmax_held) * h, UF_ACC *z)
{
    UF_HELD_TO_ACC(z, h->x);
    UF_VNAME(uf_softmax_mask_keys)(r, kind, j0, h, z);
}

/* Calls fn(kind, ...) with the mask kind as a constant, so that each kind's
 * copy of the code has none of the others' branches between its loads. */
#define UF_SOFTMAX_BY_KIND(kind, fn, ...)                                                          \
    switch (kind) {                                                                                \
    case UF_MASK_ADD_SAME:                                                                         \
        fn(UF_MASK_ADD_SAME, __VA_ARGS__);                                                         \
        break;                                                                                     \
    case UF_MASK_ADD_F32:                                                                          \
        fn(UF_MASK_ADD_F32, __VA_ARGS__);                                                          \
        break;                                                                                     \
    case UF_MASK_BOOL:                                                                             \
        fn(UF_MASK_BOOL, __VA_ARGS__);                                                             \
        break;                                                                                     \
    default:                                                                                       \
        fn(UF_MASK_NONE, __VA_ARGS__);                                                             \
        break;                                                                                     \
    }

/* Both steps for one access. */
UF_FN void UF_VNAME(uf_softmax_load_as)(int kind, const UF_VNAME(uf_softmax_row) * r, int64_t j0,
                                        UF_ACC *z)
{
    UF_VNAME(uf_softmax_held) h;
    UF_VNAME(uf_softmax_hold)(r, kind, j0, &h, 0, 0);
    UF_VNAME(uf_softmax_logits)(r, kind, j0, &h, z);
}

/* The same, for loops that take one access at a time. */
UF_FN void UF_VNAME(uf_softmax_load_logits)(const uf_softmax_args *a,
                                            const UF_VNAME(uf_softmax_row) * r, int64_t j0,
                                            UF_ACC *z)
{
    UF_SOFTMAX_BY_KIND(a->mask_kind, UF_VNAME(uf_softmax_load_as), r, j0, z)
}

/* The subtrahend that keeps exp finite-or-zero when every key is hidden. */
#define UF_MAX_REF(m) ((m) == (UF_ACC)-INFINITY ? (UF_ACC)0 : (m))

/* Thread t's online merge of a row's (max, sum) partials p[2k], p[2k + 1]
 * for k = t, t + nthreads, ... < nchunks, in that order, into *m, *s. Read
 * through UF_GROUP_READ: on the span path other blocks of the same launch
 * wrote them. */
UF_FN void UF_VNAME(uf_softmax_fold)(const UF_ACC *p, int64_t nchunks, int t, int nthreads,
                                     UF_ACC *m, UF_ACC *s)
{
    UF_ACC mt = (UF_ACC)-INFINITY, st = 0;
    for (int64_t k = t; k < nchunks; k += nthreads) {
        const UF_ACC pm = UF_GROUP_READ(UF_ACC, &p[2 * k]);
        const UF_ACC ps = UF_GROUP_READ(UF_ACC, &p[2 * k + 1]);
        const UF_ACC cm = pm > mt ? pm : mt, ref = UF_MAX_REF(cm);
        st = st * UF_EXP_ACC(mt - ref) + ps * UF_EXP_ACC(pm - ref);
        mt = cm;
    }
    *m = mt;
    *s = st;
}

/* 1/sum, with an empty row (sum 0) giving zeros and a +inf maximum NaN. */
UF_FN UF_ACC UF_VNAME(uf_softmax_inverse)(UF_ACC row_max, UF_ACC sum)
{
    if (row_max == (UF_ACC)INFINITY)
        return (UF_ACC)NAN;
    return sum == (UF_ACC)0 ? (UF_ACC)0 : (UF_ACC)1 / sum;
}

/* Folds UF_VEC logits into a running (max, sum of exp(z - max)). */
UF_FN void UF_VNAME(uf_softmax_online)(const UF_ACC *z, UF_ACC *m, UF_ACC *s)
{
    UF_ACC cm = *m;
    UF_UNROLL for (int e = 0; e < UF_VEC; ++e) cm = z[e] > cm ? z[e] : cm;
    const UF_ACC ref = UF_MAX_REF(cm);
    if (cm > *m) /* rescale the running sum to the new maximum */
        *s *= UF_EXP_ACC(*m - ref);
    UF_UNROLL for (int e = 0; e < UF_VEC; ++e) *s += UF_EXP_ACC(z[e] - ref);
    *m = cm;
}

/* One thread's running (max, sum) over keys [begin, end), thread t's
 * accesses strided by the block. */
UF_FN void UF_VNAME(uf_softmax_scan)(const uf_softmax_args *a, const UF_VNAME(uf_softmax_row) * r,
                                     int64_t begin, int64_t end, int t, int nthreads, UF_ACC *m,
                                     UF_ACC *s)
{
    *m = (UF_ACC)-INFINITY;
    *s = 0;
    for (int64_t j0 = begin + (int64_t)t * UF_VEC; j0 < end; j0 += (int64_t)nthreads * UF_VEC) {
        UF_ACC z[UF_VEC];
        UF_VNAME(uf_softmax_load_logits)(a, r, j0, z);
        UF_VNAME(uf_softmax_online)(z, m, s);
    }
}

/* Writes y = exp(z - ref) * inv over keys [begin, end), strided as above. */
UF_FN void UF_VNAME(uf_softmax_write)(const uf_softmax_args *a, const UF_VNAME(uf_softmax_row) * r,
                                      int64_t row, int64_t begin, int64_t end, int t, int nthreads,
                                      UF_ACC ref, UF_ACC inv)
{
    UF_T *y = (UF_T *)a->out + row * a->sk;
    for (int64_t j0 = begin + (int64_t)t * UF_VEC; j0 < end; j0 += (int64_t)nthreads * UF_VEC) {
        UF_ACC z[UF_VEC];
        UF_VNAME(uf_softmax_load_logits)(a, r, j0, z);
        UF_UNROLL for (int e = 0; e < UF_VEC; ++e) z[e] = UF_EXP_ACC(z[e] - ref) * inv;
        UF_STOREV(y, j0, z);
    }
}

/* Between thread loops: turns every thread's running (m, s) into the
 * block's (row_max, s) with s the block's sum relative to row_max. */
#define UF_SOFTMAX_COMBINE(m, s, row_max)                                                          \
    UF_THREADS (t) {                                                                               \
        UF_X(row_max) = UF_X(m);                                                                   \
    }                                                                                              \
    UF_BLOCK_MAX(row_max);                                                                         \
    UF_THREADS (t) {                                                                               \
        UF_X(s) *= UF_EXP_ACC(UF_X(m) - UF_MAX_REF(UF_X(row_max)));                                \
    }                                                                                              \
    UF_BLOCK_SUM(s)

/* The same within each warp: every warp's lanes end with the warp's
 * maximum and their sums relative to it (no barrier; the same bits in
 * every lane). */
#define UF_SOFTMAX_WARP_COMBINE(m, s, row_max)                                                     \
    UF_THREADS (t) {                                                                               \
        UF_X(row_max) = UF_X(m);                                                                   \
    }                                                                                              \
    UF_WARP_MAX(row_max, UF_WARP);                                                                 \
    UF_THREADS (t) {                                                                               \
        UF_X(s) *= UF_EXP_ACC(UF_X(m) - UF_MAX_REF(UF_X(row_max)));                                \
    }                                                                                              \
    UF_WARP_SUM(s, UF_WARP)

/* Register paths whose rows span the block (group > UF_WARP), between
 * thread loops: every thread's maximum m and its sum s relative to it
 * become the block's maximum and its sum relative to that in one round
 * through shared memory (two barriers, where a block max and then a block
 * sum take four); `own` becomes exp(thread max - block max), which brings
 * the thread's exps, taken against its own maximum, to the block's. */
/* Where the register paths reduce a block's maximum and sum together: in
 * fp32 and fp64 (on the H200 f32 rows of 16384 keys 85-86 -> 91% of copy);
 * the 16-bit kernels, which already spill at their 64 registers, lost 2-5
 * points with it at 128-4096 keys and keep a block max, then a block sum. */
#define UF_SOFTMAX_PAIRS ((int)sizeof(UF_T) >= 4)

#define UF_SOFTMAX_BLOCK_PAIRS(m, s, own)                                                          \
    UF_SHARED(UF_ACC, pairs_, 2 * (UF_MAX_THREADS / UF_WARP));                                     \
    UF_EXCLUSIVE(UF_ACC, wm_);                                                                     \
    UF_EXCLUSIVE(UF_ACC, ws_);                                                                     \
    UF_THREADS (t) {                                                                               \
        UF_X(wm_) = UF_X(m);                                                                       \
    }                                                                                              \
    UF_WARP_MAX(wm_, UF_WARP);                                                                     \
    UF_THREADS (t) {                                                                               \
        UF_X(ws_) = UF_X(s) * UF_EXP_ACC(UF_X(m) - UF_MAX_REF(UF_X(wm_)));                         \
    }                                                                                              \
    UF_WARP_SUM(ws_, UF_WARP);                                                                     \
    UF_BARRIER(); /* the previous row's readers of pairs_ are done */                              \
    UF_THREADS (t) {                                                                               \
        if (t % UF_WARP == 0) {                                                                    \
            pairs_[2 * (t / UF_WARP)] = UF_X(wm_);                                                 \
            pairs_[2 * (t / UF_WARP) + 1] = UF_X(ws_);                                             \
        }                                                                                          \
    }                                                                                              \
    UF_BARRIER();                                                                                  \
    UF_THREADS (t) {                                                                               \
        const int lane_ = t % UF_WARP, warps_ = UF_NTHREADS / UF_WARP;                             \
        UF_X(wm_) = lane_ < warps_ ? pairs_[2 * lane_] : (UF_ACC)-INFINITY;                        \
        UF_X(ws_) = lane_ < warps_ ? pairs_[2 * lane_ + 1] : (UF_ACC)0;                            \
    }                                                                                              \
    UF_SOFTMAX_WARP_COMBINE(wm_, ws_, own);                                                        \
    UF_THREADS (t) {                                                                               \
        const UF_ACC block_max_ = UF_X(own);                                                       \
        UF_X(own) = UF_EXP_ACC(UF_X(m) - UF_MAX_REF(block_max_));                                  \
        UF_X(m) = block_max_;                                                                      \
        UF_X(s) = UF_X(ws_);                                                                       \
    }

/* Span path, between thread loops, after the block's reductions: block b
 * stores its chunk's (m, s) in `partial` and counts itself in; once every
 * chunk of the row is in, each warp of the block (rows of at most
 * UF_SOFTMAX_WARP_FOLD_MAX chunks) or the whole block folds the row's
 * partials, a few per lane or thread, and combines them; the same bits in
 * every block of the row. m and s become the row's maximum and its sum
 * relative to this chunk's reference, so that the write step's
 * v * inverse(m, s) is exp(x - row max) / row sum. */
#define UF_SOFTMAX_SPAN_EXCHANGE(a, b, m, s)                                                       \
    UF_THREADS (t) {                                                                               \
        if (t == 0) {                                                                              \
            UF_ACC *p = (UF_ACC *)(a).partial + 2 * (b);                                           \
            p[0] = UF_X(m);                                                                        \
            p[1] = UF_X(s);                                                                        \
            uf_softmax_span_meet(&(a), (b));                                                       \
        }                                                                                          \
    }                                                                                              \
    UF_BARRIER();                                                                                  \
    UF_EXCLUSIVE(UF_ACC, part_max);                                                                \
    UF_EXCLUSIVE(UF_ACC, part_sum);                                                                \
    UF_EXCLUSIVE(UF_ACC, row_max);                                                                 \
    if ((a).nchunks <= UF_SOFTMAX_WARP_FOLD_MAX) {                                                 \
        UF_THREADS (t) {                                                                           \
            UF_VNAME(uf_softmax_fold)                                                              \
            ((const UF_ACC *)(a).partial + 2 * ((b) / (a).nchunks) * (a).nchunks, (a).nchunks,     \
             t % UF_WARP, UF_WARP, &UF_X(part_max), &UF_X(part_sum));                              \
        }                                                                                          \
        UF_SOFTMAX_WARP_COMBINE(part_max, part_sum, row_max);                                      \
    } else {                                                                                       \
        UF_THREADS (t) {                                                                           \
            UF_VNAME(uf_softmax_fold)                                                              \
            ((const UF_ACC *)(a).partial + 2 * ((b) / (a).nchunks) * (a).nchunks, (a).nchunks, t,  \
             UF_NTHREADS, &UF_X(part_max), &UF_X(part_sum));                                       \
        }                                                                                          \
        UF_SOFTMAX_COMBINE(part_max, part_sum, row_max);                                           \
    }                                                                                              \
    UF_THREADS (t) {                                                                               \
        /* An overflow to inf here means exp(x - row max) underflows: 0. */                        \
        const UF_ACC ref = UF_MAX_REF(UF_X(row_max));                                              \
        UF_X(s) = UF_X(part_sum) * UF_EXP_ACC(ref - UF_MAX_REF(UF_X(m)));                          \
        UF_X(m) = UF_X(row_max);                                                                   \
    }

/* The register path, once per share (softmax_forward_reg.h, named by
 * UF_REG_AS): UF_SOFTMAX_REG_BYTES of row per thread; UF_SOFTMAX_WIDE_BYTES
 * (fewer threads per row, fewer reductions per element; src/softmax.c
 * takes it for 16-bit rows longer than a warp's registers); on GPUs roomy
 * (one access more a thread, for rows a little past a whole number of
 * warps' shares), on CPUs narrow (short rows); on GPUs the first three
 * again for shifted rows; then the span path with UF_SOFTMAX_SPAN_BYTES,
 * without and with shared shares (softmax_args.h). */
#define UF_REG_SPAN 0
#define UF_REG_SHARED 0
#define UF_REG_BOUNDED 0
#define UF_REG_SHIFTED 0
#define UF_REG_AS reg
#define UF_REG_N (UF_SOFTMAX_REG_BYTES / (int)sizeof(UF_ACC))
#include "kernels/softmax_forward_reg.h"
#define UF_REG_AS reg_wide
#define UF_REG_N (UF_SOFTMAX_WIDE_BYTES / (int)sizeof(UF_ACC))
#include "kernels/softmax_forward_reg.h"
#if UF_SOFTMAX_HAS_ROOMY
#define UF_REG_AS reg_roomy
#define UF_REG_N UF_SOFTMAX_ROOMY_N(0)
#include "kernels/softmax_forward_reg.h"
#endif
#if UF_SOFTMAX_HAS_NARROW
#define UF_REG_AS reg_narrow
#define UF_REG_N (UF_SOFTMAX_NARROW_BYTES / (int)sizeof(UF_ACC))
#include "kernels/softmax_forward_reg.h"
#endif
/* The three register shares again for rows that start anywhere, their
 * accesses aligned to the tensor (UF_REG_SHIFTED; src/softmax.c,
 * may_shift_rows): GPUs, 16-byte accesses, fp32 and 16-bit. Kernels of
 * their own, so that the others carry none of it (with it as a kernel
 * argument, the 16-bit wide kernels spilled six times the bytes). */
#if UF_SOFTMAX_HAS_SHIFTED && UF_VEC_BYTES == 16 && UF_DT != 4
#define UF_REG_HEADER "kernels/softmax_forward_reg.h"
#define UF_SHIFTED_BACKWARD 0
#undef UF_REG_SHIFTED
#define UF_REG_SHIFTED 1
#define UF_SHIFTED_AS shifted
#include "kernels/softmax_shifted_shares.h"
/* And for ragged tensors (UF_REG_SHIFTED 2; UF_SOFTMAX_PAST_END), in 16
 * bits (src/softmax.c, UF_SOFTMAX_RAGGED). */
#if UF_SOFTMAX_RAGGED(0, UF_VEC_BYTES / UF_VEC)
#undef UF_REG_SHIFTED
#define UF_REG_SHIFTED 2
#define UF_SHIFTED_AS ragged
#include "kernels/softmax_shifted_shares.h"
#endif
#undef UF_REG_HEADER
#undef UF_SHIFTED_BACKWARD
#undef UF_REG_SHIFTED
#define UF_REG_SHIFTED 0
#endif
#undef UF_REG_SPAN
#define UF_REG_SPAN 1
#define UF_REG_AS span
#define UF_REG_N (UF_SOFTMAX_SPAN_BYTES(sizeof(UF_T)) / (int)sizeof(UF_ACC))
#include "kernels/softmax_forward_reg.h"
#undef UF_REG_SHARED
#undef UF_REG_BOUNDED
#define UF_REG_SHARED UF_SOFTMAX_SPAN_SHARED((int)sizeof(UF_T))
#define UF_REG_BOUNDED 1
#define UF_REG_AS span_kept
#define UF_REG_N (UF_SOFTMAX_SPAN_BYTES(sizeof(UF_T)) / (int)sizeof(UF_ACC))
#include "kernels/softmax_forward_reg.h"
#undef UF_REG_SPAN
#undef UF_REG_SHARED
#undef UF_REG_BOUNDED
#undef UF_REG_SHIFTED

UF_KERNEL(UF_VNAME(uf_softmax_fwd_stream), uf_softmax_args, a)
{
    UF_BLOCKS (row) {
        const UF_VNAME(uf_softmax_row) r = UF_VNAME(uf_softmax_row_at)(&a, row);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_EXCLUSIVE(UF_ACC, row_max);
        UF_THREADS (t) {
            UF_VNAME(uf_softmax_scan)(&a, &r, 0, a.sk, t, UF_NTHREADS, &UF_X(m), &UF_X(s));
        }
        UF_SOFTMAX_COMBINE(m, s, row_max);
        UF_THREADS (t) {
            const UF_ACC ref = UF_MAX_REF(UF_X(row_max));
            const UF_ACC inv = UF_VNAME(uf_softmax_inverse)(UF_X(row_max), UF_X(s));
            UF_VNAME(uf_softmax_write)(&a, &r, row, 0, a.sk, t, UF_NTHREADS, ref, inv);
        }
    }
}

UF_KERNEL(UF_VNAME(uf_softmax_fwd_split_stats), uf_softmax_args, a)
{
    UF_BLOCKS (b) {
        int64_t begin, end;
        const int64_t row = uf_softmax_chunk(&a, b, &begin, &end);
        const UF_VNAME(uf_softmax_row) r = UF_VNAME(uf_softmax_row_at)(&a, row);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_EXCLUSIVE(UF_ACC, row_max);
        UF_THREADS (t) {
            UF_VNAME(uf_softmax_scan)(&a, &r, begin, end, t, UF_NTHREADS, &UF_X(m), &UF_X(s));
        }
        UF_SOFTMAX_COMBINE(m, s, row_max);
        UF_THREADS (t) {
            if (t == 0) {
                UF_ACC *p = (UF_ACC *)a.partial + 2 * b;
                p[0] = UF_X(row_max);
                p[1] = UF_X(s);
            }
        }
    }
}

UF_KERNEL(UF_VNAME(uf_softmax_fwd_split_apply), uf_softmax_args, a)
{
    UF_BLOCKS (b) {
        int64_t begin, end;
        const int64_t row = uf_softmax_chunk(&a, b, &begin, &end);
        const UF_VNAME(uf_softmax_row) r = UF_VNAME(uf_softmax_row_at)(&a, row);
        UF_EXCLUSIVE(UF_ACC, m);
        UF_EXCLUSIVE(UF_ACC, s);
        UF_EXCLUSIVE(UF_ACC, row_max);
        UF_THREADS (t) {
            /* Every block of the row combines the same partials in the same
             * order, so all chunks agree on the row's max and sum. */
            UF_VNAME(uf_softmax_fold)
            ((const UF_ACC *)a.partial + 2 * row * a.nchunks, a.nchunks, t, UF_NTHREADS, &UF_X(m),
             &UF_X(s));
        }
        UF_SOFTMAX_COMBINE(m, s, row_max);
        UF_THREADS (t) {
            const UF_ACC ref = UF_MAX_REF(UF_X(row_max));
            const UF_ACC inv = UF_VNAME(uf_softmax_inverse)(UF_X(row_max), UF_X(s));
            UF_VNAME(uf_softmax_write)(&a, &r, row, begin, end, t, UF_NTHREADS, ref, inv);
        }
    }
}

#undef UF_MAX_REF
#undef UF_SOFTMAX_BY_KIND
#undef UF_SOFTMAX_COMBINE
#undef UF_SOFTMAX_WARP_COMBINE
#undef UF_SOFTMAX_BLOCK_PAIRS
#undef UF_SOFTMAX_PAIRS
#undef UF_SOFTMAX_SPAN_EXCHANGE
#include "kernels/dtype_unbind.h"
