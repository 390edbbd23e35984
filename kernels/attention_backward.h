/* Both backward attention kernels of one instantiation (UF_DT, UF_ATT_DP),
 * sharing its bindings; see attention_backward.c. */
#include "kernels/attention_bind.h"
#include "kernels/attention_backward_kv.h"
#include "kernels/attention_backward_q.h"
#include "kernels/attention_unbind.h"
