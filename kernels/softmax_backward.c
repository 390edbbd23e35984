/* Instantiates softmax_backward.h for every dtype and access width
 * (16-byte, element-wide, and on GPUs 8-byte). */
#include "kernels/softmax_device.h"

#define UF_TEMPLATE "kernels/softmax_backward.h"
#include "kernels/instantiate_access8.h"
#include "kernels/instantiate.h"
