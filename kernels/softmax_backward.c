/* Instantiates softmax_backward.h for every dtype and access width
 * (16-byte, 8-byte and element-wide). */
#include "kernels/softmax_device.h"

#define UF_TEMPLATE "kernels/softmax_backward.h"
#include "kernels/instantiate_access8.h"
#include "kernels/instantiate.h"
