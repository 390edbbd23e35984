/* Instantiates activation_dropout.h for every dtype and access width. */
#include "kernels/activation_funcs.h"
#include "kernels/dropout_device.h"

#define UF_TEMPLATE "kernels/activation_dropout.h"
#include "kernels/instantiate.h"
