/* Instantiates attention_forward.h for every dtype and head-dimension tile. */
#include "layer.h"
#include "kernels/attention_args.h"
#include "kernels/philox.h"
#include "kernels/attention_mask.h"

#define UF_ATT_TEMPLATE "kernels/attention_forward.h"
#include "kernels/attention_instantiate.h"
