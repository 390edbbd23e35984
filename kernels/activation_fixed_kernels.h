/*
 * The activation kernels with dropout for one activation, a template that
 * activation_dropout.h includes once per such activation: define
 * UF_ACT_FIXED_KIND (a uf_activation constant), the kernels' names
 * UF_ACT_FIXED_FWD and UF_ACT_FIXED_BWD, and UF_ACT_FIXED_DRAWN (0 or 1:
 * UF_ACT_DRAWN of activation_kernels.h, on GPUs) first. src/activation.c launches
 * them only where p > 0, so the keep bits are drawn without a test, and
 * the switch over the kind folds to the one case.
 */
#define UF_ACT_ONE_POINTER UF_ACT_FIXED_ONE_POINTER
#define UF_ACT_DROP 1
#define UF_ACT_KIND UF_ACT_FIXED_KIND
/* Where loops are vectorised, the keep bits are drawn for all units
 * first, in more lanes. */
#if UF_ACT_FIXED_DRAWN && !UF_VECTORISED_LOOPS
#define UF_ACT_DRAWN 1
#define UF_ACT_FWD_UNITS UF_VNAME(uf_act_fwd_units_drawn)
#else
#define UF_ACT_DRAWN 0
#define UF_ACT_FWD_UNITS UF_VNAME(uf_act_fwd_units_drop)
#endif
#define UF_ACT_BWD_UNITS UF_VNAME(uf_act_bwd_units_drop)
#define UF_ACT_FWD_KERNEL UF_ACT_FIXED_FWD
#define UF_ACT_BWD_KERNEL UF_ACT_FIXED_BWD
#define UF_ACT_FWD_RESIDENT UF_ACT_FIXED_FWD_BLOCKS
#define UF_ACT_BWD_RESIDENT UF_ACT_FIXED_BWD_BLOCKS
#include "kernels/activation_kernels.h"

#undef UF_ACT_FIXED_BWD
#undef UF_ACT_FIXED_FWD
#undef UF_ACT_FIXED_KIND
#undef UF_ACT_FIXED_DRAWN
