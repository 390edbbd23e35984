/* Instantiates softmax_forward.h for every dtype and access width. */
#include "kernels/softmax_device.h"

#define UF_TEMPLATE "kernels/softmax_forward.h"
#include "kernels/instantiate.h"
