/* Instantiates attention_forward.h for every dtype and head-dimension tile,
 * with bias, mask and dropout support (attention_forward_plain.c: without). */
#include "layer.h"
#include "kernels/attention_args.h"
#include "kernels/philox.h"
#include "kernels/attention_mask.h"

#define UF_ATT_FULL 1
#define UF_ATT_TEMPLATE "kernels/attention_forward.h"
#include "kernels/attention_instantiate.h"
