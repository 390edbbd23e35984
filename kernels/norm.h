/*
 * LayerNorm / RMSNorm, one instantiation per (UF_DT, UF_VEC); see norm.c
 * and norm_args.h. Two forwards: uf_norm_fwd_held, for rows of whole
 * aligned units that fit a block's registers, reads the row once with every
 * load of a thread in flight together; uf_norm_fwd, for any row, reads it
 * twice (the second time mostly from cache), one unit at a time. The
 * backward passes read the row again from cache as well.
 *
 * Numerics: LayerNorm sums h - pivot, with pivot the row's first element,
 * so that a large common offset (mean 1e4, variance 1) costs no precision;
 * the mean is kept as pivot + d and h - mean computed as (h - pivot) - d.
 * The backward corrects the stored (rounded) mean the same way: it sums
 * h - mean as well and subtracts that row's average.
 */
#include "kernels/dtype_bind.h"

#include "kernels/column_sums.h"
#include "kernels/row_access.h"

/* Sums v over the threads of a row group. */
#define UF_NORM_REDUCE(v)                                                                          \
    do {                                                                                           \
        if (a.group <= UF_WARP)                                                                    \
            UF_WARP_SUM(v, a.group);                                                               \
        else                                                                                       \
            UF_BLOCK_SUM(v);                                                                       \
    } while (0)

/* Between thread loops of the backward: the row sums of hc and g (LayerNorm
 * only) and of g * hc, from each thread's s_h, s_g, s_gh. */
#define UF_NORM_REDUCE_BWD_SUMS()                                                                  \
    do {                                                                                           \
        if (layer && a.group > UF_WARP) {                                                          \
            UF_BLOCK_SUM3(s_h, s_g, s_gh);                                                         \
        } else {                                                                                   \
            if (layer) {                                                                           \
                UF_NORM_REDUCE(s_h);                                                               \
                UF_NORM_REDUCE(s_g);                                                               \
            }                                                                                      \
            UF_NORM_REDUCE(s_gh);                                                                  \
        }                                                                                          \
    } while (0)

/* h = x (+ residual) for one unit of a row. */
UF_FN void UF_VNAME(uf_norm_load_h)(const uf_norm_args *a, int64_t base, int64_t c0, UF_ACC *h)
{
    UF_VNAME(uf_row_load)((const UF_T *)a->x + base, c0, a->cols, a->vec, h);
    if (a->residual) {
        UF_ACC r[UF_ACT_UNIT];
        UF_VNAME(uf_row_load)((const UF_T *)a->residual + base, c0, a->cols, a->vec, r);
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) h[e] += r[e];
    }
}

/* h = x (+ the residual's rw where `residual`) of a unit held as stored. */
UF_FN void UF_VNAME(uf_norm_held_h)(int residual, const uint32_t *xw, const uint32_t *rw, UF_ACC *h)
{
    UF_VNAME(uf_unit_unpack)(xw, h);
    if (residual) {
        UF_ACC r[UF_ACT_UNIT];
        UF_VNAME(uf_unit_unpack)(rw, r);
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) h[e] += r[e];
    }
}

/* The row's first h, the LayerNorm pivot. */
UF_FN UF_ACC UF_VNAME(uf_norm_pivot)(const uf_norm_args *a, int64_t base)
{
    UF_ACC p = UF_TO_ACC(((const UF_T *)a->x)[base]);
    if (a->residual)
        p += UF_TO_ACC(((const UF_T *)a->residual)[base]);
    return p;
}

/* Weight and bias of a unit; 1 and 0 where absent (the backward passes no
 * bias). */
UF_FN void UF_VNAME(uf_norm_affine)(const uf_norm_args *a, int64_t c0, UF_ACC *w, UF_ACC *b)
{
    if (a->weight)
        UF_VNAME(uf_row_load)(a->weight, c0, a->cols, a->vec, w);
    else
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) w[e] = 1;
    if (a->bias)
        UF_VNAME(uf_row_load)(a->bias, c0, a->cols, a->vec, b);
    else
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) b[e] = 0;
}

/* Adds the first `valid` elements of a unit to a thread's moments about its
 * pivot lp: s1 += h - lp, s2 += (h - lp)^2, n += 1 each. */
UF_FN void UF_VNAME(uf_norm_moments)(const UF_ACC *h, int64_t valid, UF_ACC lp, UF_ACC *s1,
                                     UF_ACC *s2, UF_ACC *n)
{
    if (valid >= UF_ACT_UNIT) {
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
        {
            const UF_ACC x = h[e] - lp;
            *s1 += x;
            *s2 += x * x;
        }
        *n += (UF_ACC)UF_ACT_UNIT;
    } else {
        for (int e = 0; e < valid; ++e) {
            const UF_ACC x = h[e] - lp;
            *s1 += x;
            *s2 += x * x;
            *n += 1;
        }
    }
}

/* h_out (where asked for) and y of one unit from its h. */
UF_FN void UF_VNAME(uf_norm_fwd_out)(const uf_norm_args *a, int64_t base, int64_t c0, UF_ACC *h,
                                     UF_ACC p, UF_ACC dm, UF_ACC rstd)
{
    UF_ACC w[UF_ACT_UNIT], bias[UF_ACT_UNIT];
    if (a->h_out)
        UF_VNAME(uf_row_store)((UF_T *)a->h_out + base, c0, a->cols, a->vec, h);
    UF_VNAME(uf_norm_affine)(a, c0, w, bias);
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) h[e] =
        ((h[e] - p) - dm) * rstd * w[e] + bias[e];
    UF_VNAME(uf_row_store)((UF_T *)a->y + base, c0, a->cols, a->vec, h);
}

/* Between the forward's thread loops: from each thread's pivots p (the
 * row's first h) and lp (its own first h) and its moments s1, s2, n, the
 * row's statistics: LayerNorm combines the partial moments by Chan's rule in
 * two scalar reductions, so that the variance needs no further pass over
 * the row. Leaves pivot, mean (the row mean minus the pivot, LayerNorm) and
 * s (RMSNorm: the sum of squares) or m2 (LayerNorm: the centred one). */
#define UF_NORM_FWD_STATS(p_, lp_, s1_, s2_, n_)                                                   \
    do {                                                                                           \
        const UF_ACC mt = (n_) > 0 ? (s1_) / (n_) : (UF_ACC)0;                                     \
        UF_X(pivot) = (p_);                                                                        \
        UF_X(cnt) = (n_);                                                                          \
        UF_X(mean) = ((lp_) - (p_)) + mt;                                                          \
        UF_X(m2) = (s2_) - (s1_)*mt;                                                               \
        UF_X(s) = layer ? (n_) * ((lp_) - (p_)) + (s1_) : (s2_);                                   \
    } while (0)

#define UF_NORM_FWD_REDUCE()                                                                       \
    do {                                                                                           \
        UF_NORM_REDUCE(s);                                                                         \
        if (layer) {                                                                               \
            UF_THREADS (t) {                                                                       \
                const UF_ACC dm = UF_X(s) * inv_n, dev = UF_X(mean) - dm;                          \
                UF_X(m2) = UF_X(cnt) > 0 ? UF_X(m2) + UF_X(cnt) * dev * dev : (UF_ACC)0;           \
                UF_X(mean) = dm;                                                                   \
            }                                                                                      \
            UF_NORM_REDUCE(m2);                                                                    \
        }                                                                                          \
    } while (0)

/* A row's mean offset dm and rstd from the reduced statistics; the row
 * group's first thread writes mean and rstd where asked for. */
#define UF_NORM_FWD_ROW_STATS(row, dm, rstd)                                                       \
    const UF_ACC dm = layer ? UF_X(mean) : (UF_ACC)0;                                              \
    const UF_ACC rstd =                                                                            \
        (UF_ACC)1 / UF_SQRT_ACC((layer ? UF_X(m2) : UF_X(s)) * inv_n + (UF_ACC)a.eps);             \
    if (t % a.group == 0) {                                                                        \
        if (a.mean)                                                                                \
            ((UF_ACC *)a.mean)[row] = UF_X(pivot) + dm;                                            \
        if (a.rstd)                                                                                \
            ((UF_ACC *)a.rstd)[row] = rstd;                                                        \
    }

#define UF_NORM_FWD_EXCLUSIVES()                                                                   \
    UF_EXCLUSIVE(UF_ACC, pivot);                                                                   \
    UF_EXCLUSIVE(UF_ACC, s);                                                                       \
    UF_EXCLUSIVE(UF_ACC, cnt);  /* elements this thread saw */                                     \
    UF_EXCLUSIVE(UF_ACC, mean); /* their mean, minus the row pivot */                              \
    UF_EXCLUSIVE(UF_ACC, m2)    /* their sum of squares about that mean */

/* The forward for rows of any length: each thread walks its units twice,
 * the second time mostly from cache, once for its moments, once for y. */
UF_KERNEL(UF_VNAME(uf_norm_fwd), uf_norm_args, a)
{
    const int layer = a.kind == UF_NORM_LAYER;
    const int rows_per_block = UF_NTHREADS / a.group;
    const UF_ACC inv_n = (UF_ACC)1 / (UF_ACC)a.cols;
    UF_BLOCKS (b) {
        UF_NORM_FWD_EXCLUSIVES();
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / a.group;
            const int64_t c_first = (int64_t)(t % a.group) * UF_ACT_UNIT;
            UF_ACC p = 0, lp = 0, s1 = 0, s2 = 0, n = 0;
            if (row < a.rows) {
                const int64_t base = row * a.cols;
                if (layer) {
                    p = UF_VNAME(uf_norm_pivot)(&a, base);
                    lp = c_first < a.cols ? UF_VNAME(uf_norm_pivot)(&a, base + c_first) : p;
                }
                UF_UNROLL_BY(UF_NORM_UNITS)
                for (int64_t c0 = c_first; c0 < a.cols; c0 += (int64_t)a.group * UF_ACT_UNIT) {
                    UF_ACC h[UF_ACT_UNIT];
                    UF_VNAME(uf_norm_load_h)(&a, base, c0, h);
                    UF_VNAME(uf_norm_moments)(h, a.cols - c0, lp, &s1, &s2, &n);
                }
            }
            UF_NORM_FWD_STATS(p, lp, s1, s2, n);
        }
        UF_NORM_FWD_REDUCE();
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / a.group;
            if (row >= a.rows)
                continue;
            const int64_t base = row * a.cols;
            UF_NORM_FWD_ROW_STATS(row, dm, rstd)
            UF_UNROLL_BY(UF_NORM_UNITS)
            for (int64_t c0 = (int64_t)(t % a.group) * UF_ACT_UNIT; c0 < a.cols;
                 c0 += (int64_t)a.group * UF_ACT_UNIT) {
                UF_ACC h[UF_ACT_UNIT];
                UF_VNAME(uf_norm_load_h)(&a, base, c0, h);
                UF_VNAME(uf_norm_fwd_out)(&a, base, c0, h, UF_X(pivot), dm, rstd);
            }
        }
    }
}

/* The forward for rows of whole, aligned units (see uf_norm_args.whole) of
 * at most UF_NORM_HELD_THREADS threads' UF_NORM_FWD_HELD_UNITS units each: the row
 * is read once, each thread holding its units (and the residual's) as
 * stored, two 16-bit values to a register, until y is written. A unit past
 * the row's end is read at the row's last unit instead and left unused, so
 * that the loads carry no branch and are in flight together; a missing
 * weight or bias is read from the row's own x and replaced by 1 or 0, for
 * the same reason. Same arithmetic as uf_norm_fwd. */

/* Units per thread of uf_norm_fwd_held in this instantiation. */
#define UF_NORM_FWD_HELD_UNITS UF_NORM_FWD_UNITS((int)sizeof(UF_T))

/* Column of thread `lane`'s unit k, and the column it reads there. */
#define UF_NORM_HELD_COL(a_, k, lane) (((int64_t)(k) * (a_)->group + (lane)) * UF_ACT_UNIT)
#define UF_NORM_HELD_READ(c0) ((c0) < a->cols ? (c0) : a->cols - UF_ACT_UNIT)

/* Loads `lane`'s `units` units of the row at `base` of `tensor` into w. */
UF_FN void UF_VNAME(uf_norm_held_read)(const uf_norm_args *a, const void *tensor, int64_t base,
                                       int lane, int units, uint32_t *w)
{
    UF_UNROLL for (int k = 0; k < units; ++k) UF_VNAME(uf_unit_load_whole)(
        (const UF_T *)tensor + base, UF_NORM_HELD_READ(UF_NORM_HELD_COL(a, k, lane)),
        &w[k * UF_UNIT_WORDS]);
}

/* `lane`'s unit k of the weight as stored (ones where there is none), into
 * w; returns w. */
UF_FN const uint32_t *UF_VNAME(uf_norm_held_weight)(const uf_norm_args *a, int lane, int k,
                                                    uint32_t *w)
{
    if (a->weight) {
        UF_VNAME(uf_unit_load_whole)(a->weight, UF_NORM_HELD_READ(UF_NORM_HELD_COL(a, k, lane)), w);
    } else {
        UF_ACC one[UF_ACT_UNIT];
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) one[e] = 1;
        UF_VNAME(uf_unit_pack)(one, w);
    }
    return w;
}

/* y (and h_out where `h_out`) of `lane`'s held units. has_w and has_b are
 * constants at the callers that matter, so that a call with a weight and a
 * bias (or a weight alone) applies them without a select an element. */
UF_FN void UF_VNAME(uf_norm_held_out_as)(const uf_norm_args *a, int64_t base, int lane,
                                         const uint32_t *xw, const uint32_t *rw, UF_ACC p,
                                         UF_ACC dm, UF_ACC rstd, int adds, int h_out, int has_w,
                                         int has_b)
{
    const UF_T *own = (const UF_T *)a->x + base; /* stands in for a missing vector */
    const void *wv = has_w ? a->weight : own, *bv = has_b ? a->bias : own;
    UF_UNROLL for (int k = 0; k < UF_NORM_FWD_HELD_UNITS; ++k)
    {
        const int64_t c0 = UF_NORM_HELD_COL(a, k, lane);
        uint32_t vw[UF_UNIT_WORDS];
        UF_ACC h[UF_ACT_UNIT], w[UF_ACT_UNIT], b[UF_ACT_UNIT];
        UF_VNAME(uf_unit_load_whole)(wv, UF_NORM_HELD_READ(c0), vw);
        UF_VNAME(uf_unit_unpack)(vw, w);
        UF_VNAME(uf_unit_load_whole)(bv, UF_NORM_HELD_READ(c0), vw);
        UF_VNAME(uf_unit_unpack)(vw, b);
        UF_VNAME(uf_norm_held_h)(adds, &xw[k * UF_UNIT_WORDS], &rw[k * UF_UNIT_WORDS], h);
        if (h_out && c0 < a->cols) {
            UF_VNAME(uf_unit_pack)(h, vw);
            UF_VNAME(uf_unit_store_whole)((UF_T *)a->h_out + base, c0, vw);
        }
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) h[e] =
            ((h[e] - p) - dm) * rstd * (has_w ? w[e] : (UF_ACC)1) + (has_b ? b[e] : (UF_ACC)0);
        UF_VNAME(uf_unit_pack)(h, vw);
        if (c0 < a->cols)
            UF_VNAME(uf_unit_store_whole)((UF_T *)a->y + base, c0, vw);
    }
}

/* The held forward, twice: for any call (uf_norm_fwd_held), and for calls
 * with neither a residual nor h_out, whose kernel then keeps no registers
 * for them (uf_norm_fwd_held_plain). */
#define UF_NORM_HELD_RES 1
#define UF_NORM_HELD_KERNEL UF_VNAME(uf_norm_fwd_held)
#define UF_NORM_HELD_OUT UF_VNAME(uf_norm_held_out)
#include "kernels/norm_forward_held.h"
#undef UF_NORM_HELD_RES
#undef UF_NORM_HELD_KERNEL
#undef UF_NORM_HELD_OUT
#define UF_NORM_HELD_RES 0
#define UF_NORM_HELD_KERNEL UF_VNAME(uf_norm_fwd_held_plain)
#define UF_NORM_HELD_OUT UF_VNAME(uf_norm_held_plain_out)
#include "kernels/norm_forward_held.h"
#undef UF_NORM_HELD_RES
#undef UF_NORM_HELD_KERNEL
#undef UF_NORM_HELD_OUT

#undef UF_NORM_FWD_HELD_UNITS
#undef UF_NORM_FWD_EXCLUSIVES
#undef UF_NORM_FWD_ROW_STATS
#undef UF_NORM_FWD_REDUCE
#undef UF_NORM_FWD_STATS

/* hc = h - mean (stored mean) and g = dy * weight, in place (hc holds h,
 * g the weight on entry). */
UF_FN void UF_VNAME(uf_norm_bwd_centre)(UF_ACC mean, const UF_ACC *dy, UF_ACC *hc, UF_ACC *g)
{
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
    {
        hc[e] -= mean;
        /* Rounded before g - mean(g): fused into that difference, a row of
         * one element gave dx = rstd * (dy w's rounding error), up to
         * 1.5e-5 in fp32 on the H200, instead of 0. */
        g[e] = UF_MUL_RN(g[e], dy[e]);
    }
}

/* One unit of the backward: h - mean (stored mean), dy, g = dy * weight. */
UF_FN void UF_VNAME(uf_norm_bwd_unit)(const uf_norm_args *a, int64_t base, int64_t c0, UF_ACC mean,
                                      UF_ACC *hc, UF_ACC *dy, UF_ACC *g)
{
    UF_VNAME(uf_row_load)((const UF_T *)a->x + base, c0, a->cols, a->vec, hc);
    UF_VNAME(uf_row_load)((const UF_T *)a->dy + base, c0, a->cols, a->vec, dy);
    UF_ACC unused[UF_ACT_UNIT];
    UF_VNAME(uf_norm_affine)(a, c0, g, unused);
    UF_VNAME(uf_norm_bwd_centre)(mean, dy, hc, g);
}

/* The same from a unit and its weight held as stored (norm_backward_held.h). */
UF_FN void UF_VNAME(uf_norm_bwd_held_unit)(UF_ACC mean, const uint32_t *hw, const uint32_t *yw,
                                           const uint32_t *ww, UF_ACC *hc, UF_ACC *dy, UF_ACC *g)
{
    UF_VNAME(uf_unit_unpack)(hw, hc);
    UF_VNAME(uf_unit_unpack)(yw, dy);
    UF_VNAME(uf_unit_unpack)(ww, g);
    UF_VNAME(uf_norm_bwd_centre)(mean, dy, hc, g);
}

/* Adds a unit's sums of hc, g and g * hc over its first n elements (the
 * first two only for LayerNorm, the only kind that reads them). */
UF_FN void UF_VNAME(uf_norm_bwd_sums)(int layer, const UF_ACC *hc, const UF_ACC *g, int64_t n,
                                      UF_ACC *sh, UF_ACC *sg, UF_ACC *sgh)
{
    if (n >= UF_ACT_UNIT && layer) { /* a whole unit, no per-element bounds */
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
        {
            *sh += hc[e];
            *sg += g[e];
            *sgh += g[e] * hc[e];
        }
    } else if (n >= UF_ACT_UNIT) {
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
        {
            *sgh += g[e] * hc[e];
        }
    } else {
        for (int e = 0; e < n; ++e) {
            *sh += hc[e];
            *sg += g[e];
            *sgh += g[e] * hc[e];
        }
    }
}

/* A row's terms of dx, from its reduced sums. */
typedef struct UF_VNAME(uf_norm_grad_row) {
    UF_ACC mean, rstd;
    UF_ACC delta;     /* the true mean minus the stored one */
    UF_ACC delta_hat; /* delta * rstd */
    UF_ACC mean_g, mean_ghat;
} UF_VNAME(uf_norm_grad_row);

/* A row's stored mean (0 for RMSNorm) and rstd. */
#define UF_NORM_MEAN_AT(row) (layer ? ((const UF_ACC *)a.mean_in)[row] : (UF_ACC)0)
#define UF_NORM_RSTD_AT(row) (((const UF_ACC *)a.rstd_in)[row])

UF_FN UF_VNAME(uf_norm_grad_row)
    UF_VNAME(uf_norm_grad_row_of)(const uf_norm_args *a, UF_ACC mean, UF_ACC rstd, UF_ACC s_h,
                                  UF_ACC s_g, UF_ACC s_gh)
{
    const int layer = a->kind == UF_NORM_LAYER;
    const UF_ACC inv_n = (UF_ACC)a->inv_cols;
    UF_VNAME(uf_norm_grad_row) r;
    r.mean = mean;
    r.rstd = rstd;
    r.delta = layer ? s_h * inv_n : (UF_ACC)0;
    r.delta_hat = r.delta * rstd;
    r.mean_g = layer ? s_g * inv_n : (UF_ACC)0;
    /* mean(g * hhat) with hhat = (hc - delta) * rstd */
    r.mean_ghat = r.rstd * (s_gh - r.delta * s_g) * inv_n;
    return r;
}

/* dx of a unit from hc (becomes hhat) and g; dx holds dh_extra on entry
 * where `extra` says there is one. */
UF_FN void UF_VNAME(uf_norm_bwd_dx_of)(int extra, const UF_VNAME(uf_norm_grad_row) * r,
                                       const UF_ACC *g, UF_ACC *hhat, UF_ACC *dx)
{
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
    {
        /* (hc - delta) * rstd, one multiply-add on GPUs */
        hhat[e] = hhat[e] * r->rstd - r->delta_hat;
        const UF_ACC v = r->rstd * (g[e] - r->mean_g - hhat[e] * r->mean_ghat);
        dx[e] = extra ? v + dx[e] : v;
    }
}

/* Writes dx of one unit (plus dh_extra); leaves its dy and hhat in dy and
 * hhat for the column sums. */
UF_FN void UF_VNAME(uf_norm_bwd_dx)(const uf_norm_args *a, int64_t base, int64_t c0,
                                    const UF_VNAME(uf_norm_grad_row) * r, UF_ACC *dy, UF_ACC *hhat)
{
    UF_ACC g[UF_ACT_UNIT], dx[UF_ACT_UNIT];
    UF_VNAME(uf_norm_bwd_unit)(a, base, c0, r->mean, hhat, dy, g);
    if (a->dh_extra)
        UF_VNAME(uf_row_load)((const UF_T *)a->dh_extra + base, c0, a->cols, a->vec, dx);
    UF_VNAME(uf_norm_bwd_dx_of)(a->dh_extra != NULL, r, g, hhat, dx);
    UF_VNAME(uf_row_store)((UF_T *)a->y + base, c0, a->cols, a->vec, dx);
}

UF_KERNEL(UF_VNAME(uf_norm_bwd), uf_norm_args, a)
{
    const int layer = a.kind == UF_NORM_LAYER;
    const int rows_per_block = UF_NTHREADS / a.group;
    UF_BLOCKS (b) {
        /* Sums of hc = h - mean, g, g * hc (LayerNorm) or g * h (RMSNorm). */
        UF_EXCLUSIVE(UF_ACC, s_h);
        UF_EXCLUSIVE(UF_ACC, s_g);
        UF_EXCLUSIVE(UF_ACC, s_gh);
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / a.group;
            UF_ACC sh = 0, sg = 0, sgh = 0;
            if (row < a.rows) {
                const int64_t base = row * a.cols;
                const UF_ACC mean = UF_NORM_MEAN_AT(row);
                UF_UNROLL_BY(UF_NORM_UNITS)
                for (int64_t c0 = (int64_t)(t % a.group) * UF_ACT_UNIT; c0 < a.cols;
                     c0 += (int64_t)a.group * UF_ACT_UNIT) {
                    UF_ACC hc[UF_ACT_UNIT], dy[UF_ACT_UNIT], g[UF_ACT_UNIT];
                    UF_VNAME(uf_norm_bwd_unit)(&a, base, c0, mean, hc, dy, g);
                    UF_VNAME(uf_norm_bwd_sums)(layer, hc, g, a.cols - c0, &sh, &sg, &sgh);
                }
            }
            UF_X(s_h) = sh;
            UF_X(s_g) = sg;
            UF_X(s_gh) = sgh;
        }
        UF_NORM_REDUCE_BWD_SUMS();
        UF_THREADS (t) {
            const int64_t row = b * rows_per_block + t / a.group;
            if (row >= a.rows)
                continue;
            const int64_t base = row * a.cols;
            const UF_VNAME(uf_norm_grad_row) r = UF_VNAME(uf_norm_grad_row_of)(
                &a, UF_NORM_MEAN_AT(row), UF_NORM_RSTD_AT(row), UF_X(s_h), UF_X(s_g), UF_X(s_gh));
            if (a.shift && t % a.group == 0)
                ((UF_ACC *)a.shift)[row] = r.delta;
            UF_UNROLL_BY(UF_NORM_UNITS)
            for (int64_t c0 = (int64_t)(t % a.group) * UF_ACT_UNIT; c0 < a.cols;
                 c0 += (int64_t)a.group * UF_ACT_UNIT) {
                UF_ACC dy[UF_ACT_UNIT], hhat[UF_ACT_UNIT];
                UF_VNAME(uf_norm_bwd_dx)(&a, base, c0, &r, dy, hhat);
            }
        }
    }
}

/* The fused backwards' state in a logical block walking row chunk `chunk`:
 * the column sums of dy * hhat (dw) and dy (db) of each thread's
 * `units` units, the row sums, and the chunk's rows. */
#define UF_NORM_FUSED_STATE(units)                                                                 \
    UF_SHARED(UF_ACC, sums, 2 * UF_COLSUM_THREADS * UF_ACT_UNIT);                                  \
    UF_EXCLUSIVE_ARRAY(UF_ACC, dw, (units)*UF_ACT_UNIT);                                           \
    UF_EXCLUSIVE_ARRAY(UF_ACC, db, (units)*UF_ACT_UNIT);                                           \
    UF_EXCLUSIVE(UF_ACC, s_h);                                                                     \
    UF_EXCLUSIVE(UF_ACC, s_g);                                                                     \
    UF_EXCLUSIVE(UF_ACC, s_gh);                                                                    \
    const int64_t r_begin = chunk * a.chunk_rows;                                                  \
    const int64_t r_end = r_begin + a.chunk_rows < a.rows ? r_begin + a.chunk_rows : a.rows;       \
    UF_THREADS (t) {                                                                               \
        UF_UNROLL for (int i = 0; i < (units)*UF_ACT_UNIT; ++i) UF_X(dw)[i] = UF_X(db)[i] = 0;     \
    }

/* Adds a unit's dy * hhat and dy to the thread's column sums of unit k. */
#define UF_NORM_FUSED_ADD(k, dy, hhat)                                                             \
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)                                                \
    {                                                                                              \
        UF_X(dw)[(k)*UF_ACT_UNIT + e] += (dy)[e] * (hhat)[e];                                      \
        UF_X(db)[(k)*UF_ACT_UNIT + e] += (dy)[e];                                                  \
    }

/* The chunk's column sums, unit by unit: with one row slot, straight from
 * registers; else the slots' sums through `sums` (blocks of
 * UF_COLSUM_THREADS), added in slot order. */
#define UF_NORM_FUSED_COLUMNS(units)                                                               \
    for (int k = 0; a.partial && slots == 1 && k < (units); ++k) {                                 \
        UF_THREADS (t) {                                                                           \
            const int64_t c0 = ((int64_t)k * a.group + t) * UF_ACT_UNIT;                           \
            UF_ACC *out = (UF_ACC *)a.partial + chunk * 2 * a.cols;                                \
            for (int e = 0; e < UF_ACT_UNIT && c0 + e < a.cols; ++e) {                             \
                out[c0 + e] = UF_X(dw)[k * UF_ACT_UNIT + e];                                       \
                out[a.cols + c0 + e] = UF_X(db)[k * UF_ACT_UNIT + e];                              \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
    for (int k = 0; a.partial && slots > 1 && k < (units); ++k) {                                  \
        UF_THREADS (t) {                                                                           \
            UF_VNAME(uf_colsum_publish)                                                            \
            (sums, t, &UF_X(dw)[k * UF_ACT_UNIT], &UF_X(db)[k * UF_ACT_UNIT]);                     \
        }                                                                                          \
        UF_BARRIER();                                                                              \
        UF_THREADS (t) {                                                                           \
            const int64_t c0 = ((int64_t)k * a.group + t) * UF_ACT_UNIT;                           \
            if (t < a.group && c0 < a.cols)                                                        \
                UF_VNAME(uf_colsum_combine)                                                        \
            (sums, a.group, UF_NTHREADS, t, c0, a.cols, (UF_ACC *)a.partial + chunk * 2 * a.cols); \
        }                                                                                          \
        UF_BARRIER();                                                                              \
    }

/* The backward with the column sums fused in, for rows of up to
 * UF_NORM_UNITS units per thread. A logical block walks a chunk of
 * chunk_rows rows, `UF_NTHREADS / group` rows at a time (several only when
 * group <= UF_WARP), keeping each thread's column sums of dy * hhat and dy
 * in registers; at the chunk's end the row slots are added in slot order
 * into the chunk's partial sums. The row is read twice, the second time
 * from cache. Same arithmetic as uf_norm_bwd for dx. */
UF_KERNEL_BOUNDED(UF_VNAME(uf_norm_bwd_fused), uf_norm_args, a, UF_NORM_FUSED_THREADS)
{
    const int layer = a.kind == UF_NORM_LAYER;
    const int slots = UF_NTHREADS / a.group;
    UF_BLOCKS (chunk) {
        UF_NORM_FUSED_STATE(UF_NORM_UNITS);
        for (int64_t r0 = r_begin; r0 < r_end; r0 += slots) {
            UF_THREADS (t) {
                const int64_t row = r0 + t / a.group;
                UF_ACC sh = 0, sg = 0, sgh = 0;
                if (row < r_end) {
                    const int64_t base = row * a.cols;
                    const UF_ACC mean = UF_NORM_MEAN_AT(row);
                    UF_UNROLL for (int k = 0; k < UF_NORM_UNITS; ++k)
                    {
                        const int64_t c0 = ((int64_t)k * a.group + t % a.group) * UF_ACT_UNIT;
                        if (c0 >= a.cols)
                            continue;
                        UF_ACC hc[UF_ACT_UNIT], dy[UF_ACT_UNIT], g[UF_ACT_UNIT];
                        UF_VNAME(uf_norm_bwd_unit)(&a, base, c0, mean, hc, dy, g);
                        UF_VNAME(uf_norm_bwd_sums)(layer, hc, g, a.cols - c0, &sh, &sg, &sgh);
                    }
                }
                UF_X(s_h) = sh;
                UF_X(s_g) = sg;
                UF_X(s_gh) = sgh;
            }
            UF_NORM_REDUCE_BWD_SUMS();
            UF_THREADS (t) {
                const int64_t row = r0 + t / a.group;
                if (row >= r_end)
                    continue;
                const int64_t base = row * a.cols;
                const UF_VNAME(uf_norm_grad_row) r =
                    UF_VNAME(uf_norm_grad_row_of)(&a, UF_NORM_MEAN_AT(row), UF_NORM_RSTD_AT(row),
                                                  UF_X(s_h), UF_X(s_g), UF_X(s_gh));
                UF_UNROLL for (int k = 0; k < UF_NORM_UNITS; ++k)
                {
                    const int64_t c0 = ((int64_t)k * a.group + t % a.group) * UF_ACT_UNIT;
                    if (c0 >= a.cols)
                        continue;
                    UF_ACC dy[UF_ACT_UNIT], hhat[UF_ACT_UNIT];
                    UF_VNAME(uf_norm_bwd_dx)(&a, base, c0, &r, dy, hhat);
                    UF_NORM_FUSED_ADD(k, dy, hhat)
                }
            }
        }
        UF_NORM_FUSED_COLUMNS(UF_NORM_UNITS);
    }
}

/* dx of `lane`'s `units` held units of the row at base, from h and dy as
 * stored in hw and yw and the weight in ww (loaded here where ww is NULL),
 * each unit's dy * hhat and dy added to the thread's column sums dw and db.
 * `extra` (a constant where called) says whether dh_extra is added: the
 * held backward calls this twice, so that the path without dh_extra
 * carries none of its loads, registers and moves. */
UF_FN void UF_VNAME(uf_norm_held_dx)(const uf_norm_args *a, const UF_VNAME(uf_norm_grad_row) * r,
                                     int64_t base, int lane, int units, const uint32_t *hw,
                                     const uint32_t *yw, const uint32_t *ww, UF_ACC *dw, UF_ACC *db,
                                     int extra)
{
    UF_UNROLL for (int k = 0; k < units; ++k)
    {
        const int64_t c0 = UF_NORM_HELD_COL(a, k, lane);
        if (c0 >= a->cols)
            continue;
        UF_ACC hhat[UF_ACT_UNIT], dy[UF_ACT_UNIT], g[UF_ACT_UNIT], dx[UF_ACT_UNIT];
        uint32_t vw[UF_UNIT_WORDS], wk[UF_UNIT_WORDS];
        UF_VNAME(uf_norm_bwd_held_unit)
        (r->mean, &hw[k * UF_UNIT_WORDS], &yw[k * UF_UNIT_WORDS],
         ww ? &ww[k * UF_UNIT_WORDS] : UF_VNAME(uf_norm_held_weight)(a, lane, k, wk), hhat, dy, g);
        if (extra) {
            UF_VNAME(uf_unit_load_whole)((const UF_T *)a->dh_extra + base, c0, vw);
            UF_VNAME(uf_unit_unpack)(vw, dx);
        }
        UF_VNAME(uf_norm_bwd_dx_of)(extra, r, g, hhat, dx);
        UF_VNAME(uf_unit_pack)(dx, vw);
        UF_VNAME(uf_unit_store_whole)((UF_T *)a->y + base, c0, vw);
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
        {
            dw[k * UF_ACT_UNIT + e] += dy[e] * hhat[e];
            db[k * UF_ACT_UNIT + e] += dy[e];
        }
    }
}

/* How many of its row steps ahead a held backward block asks L2 for the
 * row it will take (0: never; norm_backward_held.h says which kernels do). */
#ifndef UF_NORM_PREFETCH_STEPS
#define UF_NORM_PREFETCH_STEPS 1
#endif
/* The fewest threads a row slot has for its block to ask (see
 * norm_backward_held.h). */
#define UF_NORM_PREFETCH_GROUP 256

/* Asks L2 for the h, dy and dh_extra of `row`, a row of whole units (16-byte
 * aligned rows) that this block takes later: the block's next loads then
 * wait for L2, not for memory. */
UF_FN void UF_VNAME(uf_norm_bwd_prefetch)(const uf_norm_args *a, int64_t row)
{
    const int64_t bytes = a->cols * (int64_t)sizeof(UF_T);
    UF_PREFETCH_L2((const UF_T *)a->x + row * a->cols, bytes);
    UF_PREFETCH_L2((const UF_T *)a->dy + row * a->cols, bytes);
    if (a->dh_extra)
        UF_PREFETCH_L2((const UF_T *)a->dh_extra + row * a->cols, bytes);
}

/* Loads `lane`'s units of h and dy of `row` (as stored) and the row's mean
 * and rstd: what a held backward thread keeps of a row. */
UF_FN void UF_VNAME(uf_norm_held_row)(const uf_norm_args *a, int64_t row, int lane, int units,
                                      uint32_t *hw, uint32_t *yw, UF_ACC *mean, UF_ACC *rstd)
{
    const int64_t base = row * a->cols;
    UF_VNAME(uf_norm_held_read)(a, a->x, base, lane, units, hw);
    UF_VNAME(uf_norm_held_read)(a, a->dy, base, lane, units, yw);
    *mean = a->kind == UF_NORM_LAYER ? ((const UF_ACC *)a->mean_in)[row] : (UF_ACC)0;
    *rstd = ((const UF_ACC *)a->rstd_in)[row];
}

/* The fused backward for rows of whole units, held (norm_backward_held.h):
 * 2 units per thread where the row fits UF_NORM_FUSED_THREADS threads so,
 * else 4. */
#define UF_NORM_HELD_UNITS 2
#define UF_NORM_HELD_KERNEL UF_VNAME(uf_norm_bwd_held2)
#include "kernels/norm_backward_held.h"
#define UF_NORM_HELD_UNITS 4
#define UF_NORM_HELD_KERNEL UF_VNAME(uf_norm_bwd_held4)
#include "kernels/norm_backward_held.h"

/* Column sums of dy * hhat (dweight) and dy (dbias) per row chunk. */
UF_KERNEL(UF_VNAME(uf_norm_cols), uf_norm_args, a)
{
    const int layer = a.kind == UF_NORM_LAYER;
    UF_BLOCKS (blk) {
        UF_SHARED(UF_ACC, sums, 2 * UF_COLSUM_THREADS * UF_ACT_UNIT);
        const int64_t chunk = blk / a.col_tiles, tile = blk % a.col_tiles;
        UF_THREADS (t) {
            const int64_t c0 = (tile * a.tpr + t % a.tpr) * UF_ACT_UNIT;
            /* A thread past the last column walks no rows; the bound is
             * folded into r_end so that the loop has one exit to unroll. */
            const int64_t r_stop =
                (chunk + 1) * a.chunk_rows < a.rows ? (chunk + 1) * a.chunk_rows : a.rows;
            const int64_t r_end = c0 < a.cols ? r_stop : 0;
            UF_ACC dw[UF_ACT_UNIT], db[UF_ACT_UNIT];
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) dw[e] = db[e] = 0;
            UF_UNROLL_BY(UF_NORM_UNITS)
            for (int64_t r = chunk * a.chunk_rows + t / a.tpr; r < r_end;
                 r += UF_NTHREADS / a.tpr) {
                const int64_t base = r * a.cols;
                /* (h - stored mean) - shift: the row's exact centring. */
                const UF_ACC mean = UF_NORM_MEAN_AT(r);
                const UF_ACC shift = layer ? ((const UF_ACC *)a.shift)[r] : (UF_ACC)0;
                const UF_ACC rstd = UF_NORM_RSTD_AT(r);
                UF_ACC h[UF_ACT_UNIT], dy[UF_ACT_UNIT];
                UF_VNAME(uf_row_load)((const UF_T *)a.x + base, c0, a.cols, a.vec, h);
                UF_VNAME(uf_row_load)((const UF_T *)a.dy + base, c0, a.cols, a.vec, dy);
                UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e)
                {
                    dw[e] += dy[e] * (((h[e] - mean) - shift) * rstd);
                    db[e] += dy[e];
                }
            }
            UF_VNAME(uf_colsum_publish)(sums, t, dw, db);
        }
        UF_BARRIER();
        UF_THREADS (t) {
            const int64_t c0 = (tile * a.tpr + t) * UF_ACT_UNIT;
            if (t < a.tpr && c0 < a.cols)
                UF_VNAME(uf_colsum_combine)
            (sums, a.tpr, UF_NTHREADS, t, c0, a.cols, (UF_ACC *)a.partial + chunk * 2 * a.cols);
        }
        UF_BARRIER();
    }
}

#undef UF_NORM_REDUCE_BWD_SUMS
#undef UF_NORM_REDUCE
#undef UF_NORM_FUSED_COLUMNS
#undef UF_NORM_FUSED_ADD
#undef UF_NORM_FUSED_STATE
#undef UF_NORM_RSTD_AT
#undef UF_NORM_MEAN_AT
#undef UF_NORM_HELD_READ
#undef UF_NORM_HELD_COL
#include "kernels/dtype_unbind.h"
