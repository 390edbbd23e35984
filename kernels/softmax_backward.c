/* Instantiates softmax_backward.h for every dtype, with scalar and 16-byte
 * access. */
#include "kernels/softmax_device.h"

#define UF_DT 1
#define UF_VEC 1
#include "kernels/softmax_backward.h"
#define UF_DT 1
#define UF_VEC 4
#include "kernels/softmax_backward.h"

#define UF_DT 2
#define UF_VEC 1
#include "kernels/softmax_backward.h"
#define UF_DT 2
#define UF_VEC 8
#include "kernels/softmax_backward.h"

#define UF_DT 3
#define UF_VEC 1
#include "kernels/softmax_backward.h"
#define UF_DT 3
#define UF_VEC 8
#include "kernels/softmax_backward.h"

#define UF_DT 4
#define UF_VEC 1
#include "kernels/softmax_backward.h"
#define UF_DT 4
#define UF_VEC 2
#include "kernels/softmax_backward.h"
