/* Reproducible inputs for the demo and the benchmarks: splitmix64 mapped to
 * [lo, hi), the same numbers on every machine. */
#ifndef UF_BENCH_RANDOM_H
#define UF_BENCH_RANDOM_H

#include <stdint.h>

static inline double bench_uniform(uint64_t *state, double lo, double hi)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return lo + (hi - lo) * ((double)(z >> 11) * 0x1.0p-53);
}

#endif
