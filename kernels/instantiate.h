/*
 * Instantiates the kernel template named by UF_TEMPLATE (a header path in
 * quotes) for every dtype, with scalar and 16-byte access. The template
 * binds its parameters through dtype_bind.h and unbinds them at its end.
 */
#ifndef UF_TEMPLATE
#error "define UF_TEMPLATE before including instantiate.h"
#endif

#define UF_DT 1
#define UF_VEC 1
#include UF_TEMPLATE
#define UF_DT 1
#define UF_VEC 4
#include UF_TEMPLATE

#define UF_DT 2
#define UF_VEC 1
#include UF_TEMPLATE
#define UF_DT 2
#define UF_VEC 8
#include UF_TEMPLATE

#define UF_DT 3
#define UF_VEC 1
#include UF_TEMPLATE
#define UF_DT 3
#define UF_VEC 8
#include UF_TEMPLATE

#define UF_DT 4
#define UF_VEC 1
#include UF_TEMPLATE
#define UF_DT 4
#define UF_VEC 2
#include UF_TEMPLATE

#undef UF_TEMPLATE
