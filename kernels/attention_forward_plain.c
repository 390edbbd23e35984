/* Instantiates attention_forward.h for every dtype and head-dimension tile,
 * for calls with no bias, mask or dropout (causal and windows remain). */
#include "layer.h"
#include "kernels/attention_args.h"
#include "kernels/philox.h"
#include "kernels/attention_mask.h"

#define UF_ATT_FULL 0
#define UF_ATT_TEMPLATE "kernels/attention_forward.h"
#include "kernels/attention_instantiate.h"
