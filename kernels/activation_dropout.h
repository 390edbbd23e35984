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

/* The same, called through UF_ACT_SWITCH, so `kind` is a constant here. */
UF_FN void UF_VNAME(uf_act_fwd_units)(int kind, const uf_activation_args *a, int steps,
                                      const unsigned *bits, uint32_t (*w)[UF_UNIT_WORDS])
{
    if (a->threshold != 0)
        UF_VNAME(uf_act_fwd_units_as)(kind, 1, a, steps, bits, w);
    else
        UF_VNAME(uf_act_fwd_units_as)(kind, 0, a, steps, bits, w);
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

/* The same, called through UF_ACT_SWITCH (`kind` a constant). */
UF_FN void UF_VNAME(uf_act_bwd_units)(int kind, const uf_activation_args *a, int steps,
                                      const unsigned *bits, uint32_t (*g)[UF_UNIT_WORDS],
                                      uint32_t (*w)[UF_UNIT_WORDS])
{
    if (a->threshold != 0)
        UF_VNAME(uf_act_bwd_units_as)(kind, 1, a, steps, bits, g, w);
    else
        UF_VNAME(uf_act_bwd_units_as)(kind, 0, a, steps, bits, g, w);
}

/* Unit k of thread t in logical block b, in the layer's order. */
#define UF_ACT_UNIT_OF(b, steps, k, t) UF_THREAD_ITEM(b, steps, k, t)

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
        if ((a).threshold != 0) {                                                                  \
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

UF_KERNEL_RESIDENT(UF_VNAME(uf_act_fwd), uf_activation_args, a, UF_ACT_THREADS, UF_ACT_FWD_BLOCKS)
{
    UF_BLOCKS (b) {
        UF_THREADS (t) {
            /* The keep bits first: they need only the index, so their
             * registers are not held beside the loaded units. */
            unsigned bits[UF_ACT_STEPS];
            UF_ACT_KEEP_BITS(bits, UF_ACT_STEPS, a, b, t);
            uint32_t w[UF_ACT_STEPS][UF_UNIT_WORDS];
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_STEPS; ++k) UF_VNAME(uf_unit_load)(
                a.x, UF_ACT_UNIT_OF(b, UF_ACT_STEPS, k, t) * UF_ACT_UNIT, a.count, 1, w[k]);
            UF_ACT_SWITCH(a.kind, UF_VNAME(uf_act_fwd_units), &a, UF_ACT_STEPS, bits, w)
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_STEPS; ++k)
            {
                const int64_t unit = UF_ACT_UNIT_OF(b, UF_ACT_STEPS, k, t);
                UF_VNAME(uf_unit_store)(a.out, unit * UF_ACT_UNIT, a.count, 1, w[k]);
                if (a.keep_bits && unit * UF_ACT_UNIT < a.count)
                    ((uint8_t *)a.keep_bits)[unit] =
                        (uint8_t)(bits[k] & uf_unit_valid_bits(a.count, unit * UF_ACT_UNIT));
            }
        }
    }
}

UF_KERNEL_RESIDENT(UF_VNAME(uf_act_bwd), uf_activation_args, a, UF_ACT_THREADS, UF_ACT_BWD_BLOCKS)
{
    UF_BLOCKS (b) {
        UF_THREADS (t) {
            unsigned bits[UF_ACT_BWD_STEPS];
            UF_ACT_KEEP_BITS(bits, UF_ACT_BWD_STEPS, a, b, t);
            uint32_t g[UF_ACT_BWD_STEPS][UF_UNIT_WORDS], w[UF_ACT_BWD_STEPS][UF_UNIT_WORDS];
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_BWD_STEPS; ++k)
            {
                const int64_t i0 = UF_ACT_UNIT_OF(b, UF_ACT_BWD_STEPS, k, t) * UF_ACT_UNIT;
                UF_VNAME(uf_unit_load)(a.dy, i0, a.count, 1, g[k]);
                if (a.kind != UF_ACT_IDENTITY)
                    UF_VNAME(uf_unit_load)(a.x, i0, a.count, 1, w[k]);
            }
            UF_ACT_SWITCH(a.kind, UF_VNAME(uf_act_bwd_units), &a, UF_ACT_BWD_STEPS, bits, g, w)
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_BWD_STEPS; ++k) UF_VNAME(uf_unit_store)(
                a.out, UF_ACT_UNIT_OF(b, UF_ACT_BWD_STEPS, k, t) * UF_ACT_UNIT, a.count, 1, g[k]);
        }
    }
}

#undef UF_ACT_UNIT_OF
#undef UF_ACT_KEEP_BITS
#undef UF_ACT_RUNS
#undef UF_ACT_RUN_MAX
#undef UF_ACT_APPLY_RUN
#undef UF_ACT_APPLY
#undef UF_ACT_STEPS
#undef UF_ACT_BWD_STEPS
#include "kernels/dtype_unbind.h"
