/* Instantiates the backward attention kernels (dk/dv and dq) for every
 * dtype and head-dimension tile. */
#include "layer.h"
#include "kernels/attention_args.h"
#include "kernels/philox.h"
#include "kernels/attention_mask.h"

#define UF_ATT_TEMPLATE "kernels/attention_backward.h"
#include "kernels/attention_instantiate.h"
