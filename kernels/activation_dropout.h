/*
 * Activation + dropout, forward and backward, one instantiation per
 * (UF_DT, UF_VEC); see activation_dropout.c. Each thread handles
 * UF_ACT_STEPS units of UF_ACT_UNIT consecutive elements: it loads all of
 * them first (16-byte accesses when the launcher found every pointer
 * aligned; the partial last unit element by element), then computes and
 * stores. A thread writes exactly the elements it read, so outputs may alias
 * inputs element for element.
 */
#include "kernels/dtype_bind.h"

#define UF_ACT_STEPS UF_ACT_STEPS_FOR((int)sizeof(UF_T))
#define UF_ACT_BWD_STEPS UF_ACT_BWD_STEPS_FOR((int)sizeof(UF_T))

#if UF_DT == 4
#define UF_ACT_APPLY uf_act_apply_f64
#else
#define UF_ACT_APPLY uf_act_apply_f32
#endif

UF_FN void UF_VNAME(uf_act_load)(const void *p, int64_t count, int64_t i0, UF_ACC *v)
{
    const UF_T *src = (const UF_T *)p;
    if (i0 + UF_ACT_UNIT <= count) {
        UF_UNROLL for (int q = 0; q < UF_ACT_UNIT; q += UF_VEC) UF_LOADV(&v[q], src, i0 + q);
    } else {
        UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] =
            i0 + e < count ? UF_TO_ACC(src[i0 + e]) : (UF_ACC)0;
    }
}

UF_FN void UF_VNAME(uf_act_store)(void *p, int64_t count, int64_t i0, UF_ACC *v)
{
    UF_T *dst = (UF_T *)p;
    if (i0 + UF_ACT_UNIT <= count) {
        UF_UNROLL for (int q = 0; q < UF_ACT_UNIT; q += UF_VEC) UF_STOREV(dst, i0 + q, &v[q]);
    } else {
        for (int e = 0; e < UF_ACT_UNIT && i0 + e < count; ++e)
            dst[i0 + e] = UF_FROM_ACC(v[e]);
    }
}

/* v *= the unit's dropout factor (1 / (1 - p) kept, 0 dropped); returns the
 * keep bits. */
UF_FN unsigned UF_VNAME(uf_act_drop)(const uf_activation_args *a, int64_t unit, UF_ACC *v)
{
    const unsigned bits = uf_dropout_bits(a->seed, a->offset, a->threshold, unit);
    const UF_ACC scale = (UF_ACC)a->keep_scale;
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] *= (bits >> e & 1u) ? scale : (UF_ACC)0;
    return bits;
}

UF_KERNEL(UF_VNAME(uf_act_fwd), uf_activation_args, a)
{
    const UF_ACC p0 = (UF_ACC)a.param[0], p1 = (UF_ACC)a.param[1];
    UF_BLOCKS (b) {
        UF_THREADS (t) {
            UF_ACC v[UF_ACT_STEPS][UF_ACT_UNIT];
            /* Past the end a unit loads zeros (and is not stored). */
            UF_UNROLL for (int k = 0; k < UF_ACT_STEPS; ++k) UF_VNAME(uf_act_load)(
                a.x, a.count, ((b * UF_ACT_STEPS + k) * UF_NTHREADS + t) * UF_ACT_UNIT, v[k]);
            UF_UNROLL for (int k = 0; k < UF_ACT_STEPS; ++k)
            {
                const int64_t unit = (b * UF_ACT_STEPS + k) * UF_NTHREADS + t;
                const int64_t i0 = unit * UF_ACT_UNIT;
                if (i0 >= a.count)
                    continue;
                UF_ACT_APPLY(a.kind, 0, p0, p1, v[k]);
                const unsigned bits = UF_VNAME(uf_act_drop)(&a, unit, v[k]);
                UF_VNAME(uf_act_store)(a.out, a.count, i0, v[k]);
                if (a.keep_bits)
                    ((uint8_t *)a.keep_bits)[unit] =
                        (uint8_t)(bits & uf_unit_valid_bits(a.count, i0));
            }
        }
    }
}

UF_KERNEL(UF_VNAME(uf_act_bwd), uf_activation_args, a)
{
    const UF_ACC p0 = (UF_ACC)a.param[0], p1 = (UF_ACC)a.param[1];
    const int identity = a.kind == UF_ACT_IDENTITY;
    UF_BLOCKS (b) {
        UF_THREADS (t) {
            UF_ACC g[UF_ACT_BWD_STEPS][UF_ACT_UNIT], v[UF_ACT_BWD_STEPS][UF_ACT_UNIT] = {{0}};
            UF_UNROLL for (int k = 0; k < UF_ACT_BWD_STEPS; ++k)
            {
                const int64_t i0 = ((b * UF_ACT_BWD_STEPS + k) * UF_NTHREADS + t) * UF_ACT_UNIT;
                UF_VNAME(uf_act_load)(a.dy, a.count, i0, g[k]);
                if (!identity)
                    UF_VNAME(uf_act_load)(a.x, a.count, i0, v[k]);
            }
            UF_UNROLL for (int k = 0; k < UF_ACT_BWD_STEPS; ++k)
            {
                const int64_t unit = (b * UF_ACT_BWD_STEPS + k) * UF_NTHREADS + t;
                const int64_t i0 = unit * UF_ACT_UNIT;
                if (i0 >= a.count)
                    continue;
                UF_VNAME(uf_act_drop)(&a, unit, g[k]);
                if (!identity) {
                    UF_ACT_APPLY(a.kind, 1, p0, p1, v[k]);
                    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) g[k][e] *= v[k][e];
                }
                UF_VNAME(uf_act_store)(a.out, a.count, i0, g[k]);
            }
        }
    }
}

#undef UF_ACT_APPLY
#undef UF_ACT_BWD_STEPS
#undef UF_ACT_BWD_STEPS
#include "kernels/dtype_unbind.h"
