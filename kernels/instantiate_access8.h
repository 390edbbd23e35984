/*
 * Instantiates the kernel template named by UF_TEMPLATE (a header path in
 * quotes) with 8-byte accesses for f32, f16 and bf16, where the layer
 * builds such kernels (UF_ACCESS8_KERNELS, in backends/<name>/thread_work*.h):
 * for rows whose length in bytes is a multiple of 8 but not of 16. Include
 * it before instantiate.h, which undefines UF_TEMPLATE.
 */
#ifndef UF_TEMPLATE
#error "define UF_TEMPLATE before including instantiate_access8.h"
#endif

#if UF_ACCESS8_KERNELS
#define UF_DT 1
#define UF_VEC 2
#include UF_TEMPLATE
#define UF_DT 2
#define UF_VEC 4
#include UF_TEMPLATE
#define UF_DT 3
#define UF_VEC 4
#include UF_TEMPLATE
#endif
