/* Both backward attention kernels of one instantiation (UF_DT, UF_ATT_DP,
 * UF_ATT_FULL), sharing its bindings; see attention_backward.c and
 * attention_backward_plain.c. */
#include "kernels/attention_bind.h"
#if UF_ATT_FULL
#define UF_ATT_BWD_NAME(base) UF_ANAME(base)
#else
#define UF_ATT_BWD_NAME(base) UF_ANAME(base##_plain)
#endif
#include "kernels/attention_backward_kv.h"
#include "kernels/attention_backward_q.h"
#undef UF_ATT_BWD_NAME
#include "kernels/attention_unbind.h"
