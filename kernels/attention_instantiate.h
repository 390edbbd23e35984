/*
 * Instantiates the attention template named by UF_ATT_TEMPLATE for fp32,
 * fp16 and bf16 and every head-dimension tile (UF_ATT_DP).
 */
#ifndef UF_ATT_TEMPLATE
#error "define UF_ATT_TEMPLATE before including attention_instantiate.h"
#endif

#define UF_DT 1
#define UF_ATT_DP 32
#include UF_ATT_TEMPLATE
#define UF_DT 1
#define UF_ATT_DP 64
#include UF_ATT_TEMPLATE
#define UF_DT 1
#define UF_ATT_DP 128
#include UF_ATT_TEMPLATE
#define UF_DT 1
#define UF_ATT_DP 256
#include UF_ATT_TEMPLATE

#define UF_DT 2
#define UF_ATT_DP 32
#include UF_ATT_TEMPLATE
#define UF_DT 2
#define UF_ATT_DP 64
#include UF_ATT_TEMPLATE
#define UF_DT 2
#define UF_ATT_DP 128
#include UF_ATT_TEMPLATE
#define UF_DT 2
#define UF_ATT_DP 256
#include UF_ATT_TEMPLATE

#define UF_DT 3
#define UF_ATT_DP 32
#include UF_ATT_TEMPLATE
#define UF_DT 3
#define UF_ATT_DP 64
#include UF_ATT_TEMPLATE
#define UF_DT 3
#define UF_ATT_DP 128
#include UF_ATT_TEMPLATE
#define UF_DT 3
#define UF_ATT_DP 256
#include UF_ATT_TEMPLATE

#undef UF_ATT_TEMPLATE
