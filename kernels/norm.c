/* Instantiates norm.h for every dtype and access width. */
#include "layer.h"
#include "kernels/activation_args.h"
#include "kernels/norm_args.h"

#define UF_TEMPLATE "kernels/norm.h"
#include "kernels/instantiate.h"
