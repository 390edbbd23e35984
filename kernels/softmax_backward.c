/* Instantiates softmax_backward.h for every dtype and access width. */
#include "kernels/softmax_device.h"

#define UF_TEMPLATE "kernels/softmax_backward.h"
#include "kernels/instantiate.h"
