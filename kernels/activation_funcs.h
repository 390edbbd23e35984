/*
 * The activation functions of activation_math.h for fp32 (uf_<name>_f32,
 * used for the f32, f16 and bf16 dtypes) and fp64 (uf_<name>_f64).
 */
#ifndef UF_ACTIVATION_FUNCS_H
#define UF_ACTIVATION_FUNCS_H

#include "layer.h"
#include "kernels/activation_args.h"

#define UF_AM_T float
#define UF_AM(fn) fn##f
#define UF_AM_NAME(name) name##_f32
#include "kernels/activation_math.h"
#undef UF_AM_T
#undef UF_AM
#undef UF_AM_NAME

#define UF_AM_T double
#define UF_AM(fn) fn
#define UF_AM_NAME(name) name##_f64
#include "kernels/activation_math.h"
#undef UF_AM_T
#undef UF_AM
#undef UF_AM_NAME

#endif
