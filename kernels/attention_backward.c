/* Instantiates the backward attention kernels (dk/dv and dq) for every
 * dtype and head-dimension tile, with bias, mask, dropout and bias-gradient
 * support (attention_backward_plain.c: without). */
#include "layer.h"
#include "kernels/attention_args.h"
#include "kernels/philox.h"
#include "kernels/attention_mask.h"

#define UF_ATT_FULL 1
#define UF_ATT_TEMPLATE "kernels/attention_backward.h"
#include "kernels/attention_instantiate.h"
