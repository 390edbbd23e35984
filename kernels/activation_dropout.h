/*
 * Activation + dropout, forward and backward, one instantiation per
 * (UF_DT, UF_VEC); see activation_dropout.c. Each thread handles
 * UF_ACT_STEPS units of UF_ACT_UNIT consecutive elements: it loads all of
 * them first (16-byte accesses when the launcher found every pointer
 * aligned; the partial last unit element by element), then applies the
 * activation to all of them (one branch on the kind, UF_ACT_SWITCH), then
 * the dropout, then stores. A thread writes exactly the elements it read,
 * so outputs may alias inputs element for element.
 */
#include "kernels/dtype_bind.h"

#include "kernels/row_access.h"

#define UF_ACT_STEPS UF_ACT_STEPS_FOR((int)sizeof(UF_T))
#define UF_ACT_BWD_STEPS UF_ACT_BWD_STEPS_FOR((int)sizeof(UF_T))

#if UF_DT == 4
#define UF_ACT_APPLY uf_act_apply_f64
#define UF_ACT_APPLY_RUN uf_act_apply_run_f64
#elif UF_DT == 2 || UF_DT == 3
#define UF_ACT_APPLY uf_act_apply_f32to16
#define UF_ACT_APPLY_RUN uf_act_apply_run_f32to16
#else
#define UF_ACT_APPLY uf_act_apply_f32
#define UF_ACT_APPLY_RUN uf_act_apply_run_f32
#endif

/* Where loops are vectorised, a thread's binary16 units are converted to
 * compute values in one run each way (the layer's run conversions: F16C on
 * CPUs that have it), the activation applied in one loop over the run;
 * elsewhere (GPUs, and the other dtypes, whose conversions vectorise
 * inline: bfloat16 through runs measured its relu and dropout cells 5-24%
 * slower on the 2-core machine) unit by unit in registers. */
#define UF_ACT_RUN_MAX                                                                             \
    ((UF_ACT_STEPS > UF_ACT_BWD_STEPS ? UF_ACT_STEPS : UF_ACT_BWD_STEPS) * UF_ACT_UNIT)
#define UF_ACT_RUNS (UF_VECTORISED_LOOPS && UF_DT == 2)

/* A thread's `n` stored values (the words of its units) to compute values
 * and back. */
UF_FN void UF_VNAME(uf_act_run_in)(const void *w, UF_ACC *v, int n)
{
    UF_T raw[UF_ACT_RUN_MAX];
    memcpy(raw, w, (size_t)n * sizeof(UF_T));
    UF_RUN_TO_ACC(v, raw, n);
}
UF_FN void UF_VNAME(uf_act_run_out)(const UF_ACC *v, void *w, int n)
{
    UF_T raw[UF_ACT_RUN_MAX];
    UF_RUN_FROM_ACC(raw, v, n);
    memcpy(w, raw, (size_t)n * sizeof(UF_T));
}

/* v *= the dropout factor of a unit with these keep bits (1 / (1 - p)
 * kept, 0 dropped). */
UF_FN void UF_VNAME(uf_act_scale_kept)(const uf_activation_args *a, unsigned bits, UF_ACC *v)
{
    const UF_ACC scale = (UF_ACC)a->keep_scale;
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] *= (bits >> e & 1u) ? scale : (UF_ACC)0;
}

/* v *= the dropout factor of a unit whose Philox words are r (each
 * element's draw compared where it is used: no keep bits to pack and
 * unpack). */
UF_FN void UF_VNAME(uf_act_scale_drawn)(const uf_activation_args *a, const uf_philox4 *r,
                                        uint32_t cut, UF_ACC *v)
{
    const UF_ACC scale = (UF_ACC)a->keep_scale;
    UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) v[e] *=
        uf_dropout_keeps(r, cut, e) ? scale : (UF_ACC)0;
}

/* v[i] *= the dropout factor of element i of a run of n values whose
 * units have these keep bits (an inner loop per unit, which gcc vectorises
 * as it stands; one loop over i, bits[i / 8] >> i % 8, was 20-40% slower). */
UF_FN void UF_VNAME(uf_act_scale_run)(const uf_activation_args *a, const unsigned *bits, UF_ACC *v,
                                      int n)
{
    const UF_ACC scale = (UF_ACC)a->keep_scale;
    for (int k = 0; k < n / UF_ACT_UNIT; ++k) {
        const unsigned m = bits[k];
        for (int e = 0; e < UF_ACT_UNIT; ++e)
            v[k * UF_ACT_UNIT + e] *= (m >> e & 1u) ? scale : (UF_ACC)0;
    }
}

/* y = dropout(act(x)) over `steps` stored units, in place, with `drop`
 * (whether to apply the keep bits) a constant: a test inside the loop keeps
 * a CPU compiler from vectorising it. */
UF_FN void UF_VNAME(uf_act_fwd_units_as)(int kind, int drop, const uf_activation_args *a, int steps,
                                         const unsigned *bits, uint32_t (*w)[UF_UNIT_WORDS])
{
    const UF_ACC p0 = (UF_ACC)a->param[0], p1 = (UF_ACC)a->param[1];
    if (UF_ACT_RUNS) {
        const int n = steps * UF_ACT_UNIT;
        UF_ACC v[UF_ACT_RUN_MAX];
        UF_VNAME(uf_act_run_in)(w, v, n);
        UF_ACT_APPLY_RUN(kind, 0, p0, p1, v, n);
        if (drop)
            UF_VNAME(uf_act_scale_run)(a, bits, v, n);
        UF_VNAME(uf_act_run_out)(v, w, n);
        return;
    }
    UF_UNROLL_HELD for (int k = 0; k < steps; ++k)
    {
        UF_ACC v[UF_ACT_UNIT];
        UF_VNAME(uf_unit_unpack)(w[k], v);
        UF_ACT_APPLY(kind, 0, p0, p1, v);
        if (drop)
            UF_VNAME(uf_act_scale_kept)(a, bits[k], v);
        UF_VNAME(uf_unit_pack)(v, w[k]);
    }
}

/* dx = dropout(dy) * act'(x) over `steps` stored units (dx in place of dy),
 * `drop` a constant as above. */
UF_FN void UF_VNAME(uf_act_bwd_units_as)(int kind, int drop, const uf_activation_args *a, int steps,
                                         const unsigned *bits, uint32_t (*g)[UF_UNIT_WORDS],
                                         uint32_t (*w)[UF_UNIT_WORDS])
{
    const UF_ACC p0 = (UF_ACC)a->param[0], p1 = (UF_ACC)a->param[1];
    if (UF_ACT_RUNS) {
        const int n = steps * UF_ACT_UNIT;
        UF_ACC d[UF_ACT_RUN_MAX], v[UF_ACT_RUN_MAX];
        UF_VNAME(uf_act_run_in)(g, d, n);
        if (drop)
            UF_VNAME(uf_act_scale_run)(a, bits, d, n);
        if (kind != UF_ACT_IDENTITY) {
            UF_VNAME(uf_act_run_in)(w, v, n);
            UF_ACT_APPLY_RUN(kind, 1, p0, p1, v, n);
            for (int i = 0; i < n; ++i)
                d[i] *= v[i];
        }
        UF_VNAME(uf_act_run_out)(d, g, n);
        return;
    }
    UF_UNROLL_HELD for (int k = 0; k < steps; ++k)
    {
        UF_ACC d[UF_ACT_UNIT], v[UF_ACT_UNIT];
        UF_VNAME(uf_unit_unpack)(g[k], d);
        if (drop)
            UF_VNAME(uf_act_scale_kept)(a, bits[k], d);
        if (kind != UF_ACT_IDENTITY) { /* x is not read for the identity */
            UF_VNAME(uf_unit_unpack)(w[k], v);
            UF_ACT_APPLY(kind, 1, p0, p1, v);
            UF_UNROLL for (int e = 0; e < UF_ACT_UNIT; ++e) d[e] *= v[e];
        }
        UF_VNAME(uf_unit_pack)(d, g[k]);
    }
}

/* The units of the kernels that may drop (p read at run time: one copy
 * of the loop each way), of those that always do (launched where p > 0)
 * and of those that never do. */
UF_FN void UF_VNAME(uf_act_fwd_units)(int kind, const uf_activation_args *a, int steps,
                                      const unsigned *bits, uint32_t (*w)[UF_UNIT_WORDS])
{
    if (a->threshold != 0)
        UF_VNAME(uf_act_fwd_units_as)(kind, 1, a, steps, bits, w);
    else
        UF_VNAME(uf_act_fwd_units_as)(kind, 0, a, steps, bits, w);
}
UF_FN void UF_VNAME(uf_act_fwd_units_plain)(int kind, const uf_activation_args *a, int steps,
                                            const unsigned *bits, uint32_t (*w)[UF_UNIT_WORDS])
{
    UF_VNAME(uf_act_fwd_units_as)(kind, 0, a, steps, bits, w);
}
UF_FN void UF_VNAME(uf_act_bwd_units)(int kind, const uf_activation_args *a, int steps,
                                      const unsigned *bits, uint32_t (*g)[UF_UNIT_WORDS],
                                      uint32_t (*w)[UF_UNIT_WORDS])
{
    if (a->threshold != 0)
        UF_VNAME(uf_act_bwd_units_as)(kind, 1, a, steps, bits, g, w);
    else
        UF_VNAME(uf_act_bwd_units_as)(kind, 0, a, steps, bits, g, w);
}
UF_FN void UF_VNAME(uf_act_fwd_units_drop)(int kind, const uf_activation_args *a, int steps,
                                           const unsigned *bits, uint32_t (*w)[UF_UNIT_WORDS])
{
    UF_VNAME(uf_act_fwd_units_as)(kind, 1, a, steps, bits, w);
}
UF_FN void UF_VNAME(uf_act_bwd_units_drop)(int kind, const uf_activation_args *a, int steps,
                                           const unsigned *bits, uint32_t (*g)[UF_UNIT_WORDS],
                                           uint32_t (*w)[UF_UNIT_WORDS])
{
    UF_VNAME(uf_act_bwd_units_as)(kind, 1, a, steps, bits, g, w);
}
/* The units of the forward kernels that draw each unit's Philox words
 * where they apply them (units[k]: unit k's index, its Philox group), on
 * GPUs; kernels that drop always. */
UF_FN void UF_VNAME(uf_act_fwd_units_drawn)(int kind, const uf_activation_args *a, int steps,
                                            const int64_t *units, uint32_t (*w)[UF_UNIT_WORDS])
{
    const UF_ACC p0 = (UF_ACC)a->param[0], p1 = (UF_ACC)a->param[1];
    const uint32_t cut = uf_dropout_cut(a->threshold);
    UF_UNROLL_HELD for (int k = 0; k < steps; ++k)
    {
        /* The words first: they need no load, and drawn after the
         * activation they left bf16 relu waiting on its loads twice as
         * often as f16 (84.5 -> 91% of copy on the H200 this way). */
        const uf_philox4 r = uf_philox_group(a->seed, a->offset, (uint64_t)units[k]);
        UF_ACC v[UF_ACT_UNIT];
        UF_VNAME(uf_unit_unpack)(w[k], v);
        UF_ACT_APPLY(kind, 0, p0, p1, v);
        UF_VNAME(uf_act_scale_drawn)(a, &r, cut, v);
        UF_VNAME(uf_unit_pack)(v, w[k]);
    }
}
UF_FN void UF_VNAME(uf_act_bwd_units_plain)(int kind, const uf_activation_args *a, int steps,
                                            const unsigned *bits, uint32_t (*g)[UF_UNIT_WORDS],
                                            uint32_t (*w)[UF_UNIT_WORDS])
{
    UF_VNAME(uf_act_bwd_units_as)(kind, 0, a, steps, bits, g, w);
}

/* Unit k of thread t in logical block b, in the layer's order. Blocks are
 * always UF_ACT_THREADS threads (src/activation.c); the kernels addressed
 * from one pointer use that constant, so that a thread's units lie
 * constant strides apart. */
#define UF_ACT_UNIT_OF(b, steps, k, t)                                                             \
    (UF_ACT_ONE_POINTER ? UF_THREAD_ITEM_IN(b, steps, k, t, UF_ACT_THREADS)                        \
                        : UF_THREAD_ITEM(b, steps, k, t))

/* Whether thread t's `steps` units in block b lie wholly within the count
 * (its last unit is the furthest on in every order): then each is one or
 * two 16-byte accesses without a bound of its own, and their addresses
 * fixed offsets from the first. Where loops are vectorised, the bounded
 * accesses vectorise as they are. Not in the kernels with dropout for
 * every activation: there whole accesses lost 6-10 points of copy
 * bandwidth in 16 bits on the H200 (2026-12-02). */
#define UF_ACT_WHOLE(a, b, steps, t)                                                               \
    (UF_ACT_ONE_POINTER && !UF_VECTORISED_LOOPS && UF_VEC > 1 &&                                   \
     (UF_ACT_UNIT_OF(b, steps, (steps)-1, t) + 1) * UF_ACT_UNIT <= (a).count)

/* Loads (stores) the unit at element i0 of `tensor` into (from) w;
 * `whole` as UF_ACT_WHOLE. */
#define UF_ACT_LOAD_UNIT(tensor, count, whole, i0, w)                                              \
    do {                                                                                           \
        if (whole)                                                                                 \
            UF_VNAME(uf_unit_load_whole)(tensor, i0, w);                                           \
        else                                                                                       \
            UF_VNAME(uf_unit_load)(tensor, i0, count, 1, w);                                       \
    } while (0)
#define UF_ACT_STORE_UNIT(tensor, count, whole, i0, w)                                             \
    do {                                                                                           \
        if (whole)                                                                                 \
            UF_VNAME(uf_unit_store_whole)(tensor, i0, w);                                          \
        else                                                                                       \
            UF_VNAME(uf_unit_store)(tensor, i0, count, 1, w);                                      \
    } while (0)

/* bits[k] = the keep bits of unit k of thread t in block b (bit e: element
 * e of the unit), all ones without dropout; one Philox group per unit.
 * Where loops are vectorised, into bytes first (more lanes per vector); on
 * GPUs straight into words (bytes cost the H200's 16-bit kernels 2-4
 * points of copy bandwidth: more spilled registers). A macro, so that each
 * unit's index is the layer's expression of (b, k, t); a first unit plus k
 * times a stride cost as much again. */
#define UF_ACT_KEEP_BITS(bits, steps, a, b, t)                                                     \
    do {                                                                                           \
        UF_UNROLL_HELD for (int k_ = 0; k_ < (steps); ++k_)(bits)[k_] = 0xffu;                     \
        if (UF_ACT_DROP) {                                                                         \
            const uint32_t cut_ = uf_dropout_cut((a).threshold);                                   \
            if (UF_VECTORISED_LOOPS) {                                                             \
                uint8_t byte_[(steps)];                                                            \
                UF_UNROLL_HELD for (int k_ = 0; k_ < (steps); ++k_) byte_[k_] = uf_dropout_byte(   \
                    (a).seed, (a).offset, cut_, (uint64_t)UF_ACT_UNIT_OF(b, steps, k_, t));        \
                UF_UNROLL_HELD for (int k_ = 0; k_ < (steps); ++k_)(bits)[k_] = byte_[k_];         \
            } else {                                                                               \
                UF_UNROLL_HELD for (int k_ = 0; k_ < (steps); ++k_)(bits)[k_] = uf_dropout_byte(   \
                    (a).seed, (a).offset, cut_, (uint64_t)UF_ACT_UNIT_OF(b, steps, k_, t));        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

/* The kernels with dropout (src/activation.c launches them where p > 0;
 * they test p, and can run without) and the plain ones without: those
 * carry none of the dropout's code, so that their registers are allocated
 * for the activation alone. */
#define UF_ACT_ONE_POINTER 0
#define UF_ACT_DROP ((a).threshold != 0)
#define UF_ACT_KIND (a).kind
#define UF_ACT_DRAWN 0
#define UF_ACT_FWD_UNITS UF_VNAME(uf_act_fwd_units)
#define UF_ACT_BWD_UNITS UF_VNAME(uf_act_bwd_units)
#define UF_ACT_FWD_KERNEL UF_VNAME(uf_act_fwd)
#define UF_ACT_BWD_KERNEL UF_VNAME(uf_act_bwd)
#define UF_ACT_FWD_RESIDENT UF_ACT_FWD_BLOCKS
#define UF_ACT_BWD_RESIDENT UF_ACT_BWD_BLOCKS
#include "kernels/activation_kernels.h"
#define UF_ACT_ONE_POINTER 1
#define UF_ACT_DROP 0
#define UF_ACT_KIND (a).kind
#define UF_ACT_DRAWN 0
#define UF_ACT_FWD_UNITS UF_VNAME(uf_act_fwd_units_plain)
#define UF_ACT_BWD_UNITS UF_VNAME(uf_act_bwd_units_plain)
#define UF_ACT_FWD_KERNEL UF_VNAME(uf_act_fwd_plain)
#define UF_ACT_BWD_KERNEL UF_VNAME(uf_act_bwd_plain)
#define UF_ACT_FWD_RESIDENT UF_ACT_PLAIN_FWD_BLOCKS
#define UF_ACT_BWD_RESIDENT UF_ACT_PLAIN_BWD_BLOCKS
#include "kernels/activation_kernels.h"

/* The kernels with dropout built for one activation each (those
 * src/activation.c lists), for 16-bit data in 16-byte accesses: a kernel's
 * registers are allocated for the worst of the cases it holds, and the
 * switch over every activation made the 16-bit ones spill (60-100 bytes
 * at 64 registers, nvcc 13.0 for sm_90; none built for one activation). */
#if UF_VEC > 1 && (UF_DT == 2 || UF_DT == 3)
/* UF_ACT_FIXED_DRAWN: whether the forward draws each unit's keep
 * decisions where it applies them, which saved the H200 2.3 of its 20-37
 * thread instructions an element; measured there (2026-12-04), relu + dropout
 * forward gained 1.5-7 points of copy, gelu about 1, dropout alone none, silu
 * lost 1.5-2 (so it keeps the bits), and every backward lost 1-3 (they all
 * keep the bits). */
#define UF_ACT_FIXED_KIND UF_ACT_IDENTITY
#define UF_ACT_FIXED_DRAWN 1
#define UF_ACT_FIXED_FWD UF_VNAME(uf_act_fwd_identity)
#define UF_ACT_FIXED_BWD UF_VNAME(uf_act_bwd_identity)
#include "kernels/activation_fixed_kernels.h"
#define UF_ACT_FIXED_KIND UF_ACT_RELU
#define UF_ACT_FIXED_DRAWN 1
#define UF_ACT_FIXED_FWD UF_VNAME(uf_act_fwd_relu)
#define UF_ACT_FIXED_BWD UF_VNAME(uf_act_bwd_relu)
#include "kernels/activation_fixed_kernels.h"
#define UF_ACT_FIXED_KIND UF_ACT_GELU
#define UF_ACT_FIXED_DRAWN 1
#define UF_ACT_FIXED_FWD UF_VNAME(uf_act_fwd_gelu)
#define UF_ACT_FIXED_BWD UF_VNAME(uf_act_bwd_gelu)
#include "kernels/activation_fixed_kernels.h"
#define UF_ACT_FIXED_KIND UF_ACT_SILU
#define UF_ACT_FIXED_DRAWN 0
#define UF_ACT_FIXED_FWD UF_VNAME(uf_act_fwd_silu)
#define UF_ACT_FIXED_BWD UF_VNAME(uf_act_bwd_silu)
#include "kernels/activation_fixed_kernels.h"
#endif

#undef UF_ACT_STORE_UNIT
#undef UF_ACT_LOAD_UNIT
#undef UF_ACT_WHOLE
#undef UF_ACT_UNIT_OF
#undef UF_ACT_KEEP_BITS
#undef UF_ACT_RUNS
#undef UF_ACT_RUN_MAX
#undef UF_ACT_APPLY_RUN
#undef UF_ACT_APPLY
#undef UF_ACT_STEPS
#undef UF_ACT_BWD_STEPS
#include "kernels/dtype_unbind.h"
