/*
 * The OpenMP layer's binary16 runs through F16C for the baseline code
 * (f16c_loops.h), compiled for F16C function by function so that the rest
 * of the library stays baseline x86-64. uf_f16_run_to_f32 and
 * uf_f32_run_to_f16 (layer.h) call them where ufb_cpu_level() >= 3.
 */
#include "layer.h"

#if UF_CPU_F16C_RUNS
#include "openmp/f16c_loops.h"

#define UF_F16C __attribute__((target("avx,f16c")))

UF_DEFINE_F16C_RUNS(UF_F16C, ufb_f16c_run_to_f32, ufb_f16c_run_from_f32)
#endif
