/*
 * The activation kernels, forward and backward, a template that
 * activation_dropout.h includes once per kind of kernel: define
 * UF_ACT_ONE_POINTER (1: a thread's units addressed from one pointer where
 * all lie within the count, the block size a constant), UF_ACT_DROP
 * (whether to draw keep bits), UF_ACT_KIND (the activation: `a.kind`, or a
 * constant for a kernel built for one activation), the unit functions
 * UF_ACT_FWD_UNITS and UF_ACT_BWD_UNITS, the kernels' names
 * UF_ACT_FWD_KERNEL and UF_ACT_BWD_KERNEL,
 * and the blocks each multiprocessor should hold of them,
 * UF_ACT_FWD_RESIDENT and UF_ACT_BWD_RESIDENT, and UF_ACT_DRAWN (a
 * preprocessor constant, 1: the forward's unit function takes the units'
 * indices and draws each unit's Philox words where it applies them; 0: it
 * takes keep bits drawn before the loads, as the backward's always does),
 * first.
 */
#if UF_ACT_DRAWN
/* Declares and fills the argument the unit functions take. */
#define UF_ACT_DRAWS_DECLARE(steps)                                                                \
    int64_t draws[steps];                                                                          \
    UF_UNROLL_HELD for (int k = 0; k < (steps); ++k) draws[k] = UF_ACT_UNIT_OF(b, steps, k, t)
/* The keep bits of unit k (index `unit`), for the optional mask output. */
#define UF_ACT_BITS_OF(k, unit)                                                                    \
    uf_dropout_byte(a.seed, a.offset, uf_dropout_cut(a.threshold), (uint64_t)(unit))
#else
#define UF_ACT_DRAWS_DECLARE(steps)                                                                \
    unsigned draws[steps];                                                                         \
    UF_ACT_KEEP_BITS(draws, steps, a, b, t)
#define UF_ACT_BITS_OF(k, unit) draws[k]
#endif
UF_KERNEL_RESIDENT(UF_ACT_FWD_KERNEL, uf_activation_args, a, UF_ACT_THREADS, UF_ACT_FWD_RESIDENT)
{
    UF_BLOCKS (b) {
        UF_THREADS (t) {
            /* The keep bits (or the units' indices) first: they need only
             * the index, so their registers are not held beside the loaded
             * units. */
            UF_ACT_DRAWS_DECLARE(UF_ACT_STEPS);
            uint32_t w[UF_ACT_STEPS][UF_UNIT_WORDS];
            const int whole = UF_ACT_WHOLE(a, b, UF_ACT_STEPS, t);
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_STEPS; ++k) UF_ACT_LOAD_UNIT(
                a.x, a.count, whole, UF_ACT_UNIT_OF(b, UF_ACT_STEPS, k, t) * UF_ACT_UNIT, w[k]);
            UF_ACT_SWITCH(UF_ACT_KIND, UF_ACT_FWD_UNITS, &a, UF_ACT_STEPS, draws, w)
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_STEPS; ++k)
            {
                const int64_t unit = UF_ACT_UNIT_OF(b, UF_ACT_STEPS, k, t);
                UF_ACT_STORE_UNIT(a.out, a.count, whole, unit * UF_ACT_UNIT, w[k]);
                if (a.keep_bits && unit * UF_ACT_UNIT < a.count)
                    ((uint8_t *)a.keep_bits)[unit] =
                        (uint8_t)(UF_ACT_BITS_OF(k, unit) &
                                  uf_unit_valid_bits(a.count, unit * UF_ACT_UNIT));
            }
        }
    }
}

UF_KERNEL_RESIDENT(UF_ACT_BWD_KERNEL, uf_activation_args, a, UF_ACT_THREADS, UF_ACT_BWD_RESIDENT)
{
    UF_BLOCKS (b) {
        UF_THREADS (t) {
            unsigned bits[UF_ACT_BWD_STEPS];
            UF_ACT_KEEP_BITS(bits, UF_ACT_BWD_STEPS, a, b, t);
            uint32_t g[UF_ACT_BWD_STEPS][UF_UNIT_WORDS], w[UF_ACT_BWD_STEPS][UF_UNIT_WORDS];
            const int whole = UF_ACT_WHOLE(a, b, UF_ACT_BWD_STEPS, t);
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_BWD_STEPS; ++k)
            {
                const int64_t i0 = UF_ACT_UNIT_OF(b, UF_ACT_BWD_STEPS, k, t) * UF_ACT_UNIT;
                UF_ACT_LOAD_UNIT(a.dy, a.count, whole, i0, g[k]);
                if (UF_ACT_KIND != UF_ACT_IDENTITY)
                    UF_ACT_LOAD_UNIT(a.x, a.count, whole, i0, w[k]);
            }
            UF_ACT_SWITCH(UF_ACT_KIND, UF_ACT_BWD_UNITS, &a, UF_ACT_BWD_STEPS, bits, g, w)
            UF_UNROLL_HELD for (int k = 0; k < UF_ACT_BWD_STEPS; ++k)
                UF_ACT_STORE_UNIT(a.out, a.count, whole,
                                  UF_ACT_UNIT_OF(b, UF_ACT_BWD_STEPS, k, t) * UF_ACT_UNIT, g[k]);
        }
    }
}

#undef UF_ACT_BWD_RESIDENT
#undef UF_ACT_FWD_RESIDENT
#undef UF_ACT_BWD_KERNEL
#undef UF_ACT_FWD_KERNEL
#undef UF_ACT_BWD_UNITS
#undef UF_ACT_FWD_UNITS
#undef UF_ACT_DROP
#undef UF_ACT_ONE_POINTER
#undef UF_ACT_KIND
#undef UF_ACT_DRAWN
#undef UF_ACT_BITS_OF
#undef UF_ACT_DRAWS_DECLARE
