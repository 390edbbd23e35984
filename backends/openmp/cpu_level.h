/*
 * Kernel copies for newer x86-64 instruction sets. Meson compiles the
 * kernel sources that profit (those that draw dropout masks, and the
 * softmax forward) three times:
 * for baseline x86-64, for x86-64-v3 (AVX2, FMA) and for x86-64-v4
 * (AVX-512), defining UF_CPU_ISA to v3 or v4 in the copies and
 * UF_CPU_DISPATCH in the baseline compile, whose launchers then run the
 * newest copy the CPU can execute; UF_CPU_COPIES_BUILT tells the runtime
 * (device name) that copies exist. Philox's 32 x 32 -> 64-bit products
 * vectorise 8 or 16 wide there instead of 2 (measured alone on the 2-core
 * Debian machine: 0.78 -> 1.8 G draws per second per core with AVX-512).
 * Nothing else differs between the copies: same source, same results.
 */
#ifndef UF_OPENMP_CPU_LEVEL_H
#define UF_OPENMP_CPU_LEVEL_H

/* The newest level whose copy may run: 0 (baseline), 3 or 4; at most what
 * the CPU supports, and at most UF_CPU_LEVEL from the environment (base,
 * v3 or v4), which the tests use to run every copy on one machine. */
int ufb_cpu_level(void);

#ifndef UF_CPU_COPIES_BUILT
#define UF_CPU_COPIES_BUILT 0
#endif

/* The launcher's body runs the copy for this level: name##_body_v3,
 * name##_body_v4, or the baseline name##_body. */
#define UF_CPU_RUN(name, ArgsT, d, args)                                                           \
    do {                                                                                           \
        UF_CPU_HIDDEN void name##_body_v3(const uf_kdims, const ArgsT);                            \
        UF_CPU_HIDDEN void name##_body_v4(const uf_kdims, const ArgsT);                            \
        const int level_ = ufb_cpu_level();                                                        \
        if (level_ >= 4)                                                                           \
            name##_body_v4((d), *(args));                                                          \
        else if (level_ >= 3)                                                                      \
            name##_body_v3((d), *(args));                                                          \
        else                                                                                       \
            name##_body((d), *(args));                                                             \
    } while (0)

/* The copies' bodies are internal to the library. */
#define UF_CPU_HIDDEN __attribute__((visibility("hidden")))

#define UF_CPU_PASTE_(a, b) a##_##b
#define UF_CPU_PASTE(a, b) UF_CPU_PASTE_(a, b)

#endif
