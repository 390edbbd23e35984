/* Instantiates epilogue.h for every dtype and access width. */
#include "kernels/activation_funcs.h"
#include "kernels/dropout_device.h"
#include "kernels/epilogue_args.h"

#define UF_TEMPLATE "kernels/epilogue.h"
#include "kernels/instantiate.h"
