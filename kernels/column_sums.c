/* Instantiates the column-sum reduction for every dtype. */
#include "layer.h"
#include "kernels/column_sums_args.h"

#define UF_TEMPLATE "kernels/column_sums_reduce.h"
#include "kernels/instantiate.h"
