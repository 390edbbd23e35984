/*
 * The regular, wide and roomy register shares once more for shifted rows
 * (softmax_forward.h, softmax_backward.h): the including template defines
 * UF_REG_HEADER (its register-path header), UF_REG_SHIFTED (1: rows that
 * start anywhere, 2: the same in ragged tensors), UF_SHIFTED_AS (the
 * kernels' suffix: reg_<as>, reg_wide_<as>, reg_roomy_<as>) and
 * UF_SHIFTED_BACKWARD; UF_SHIFTED_AS is undefined at the end.
 */
#define UF_SHIFTED_PASTE_(a, b) a##b
#define UF_SHIFTED_PASTE(a, b) UF_SHIFTED_PASTE_(a, b)
#define UF_REG_AS UF_SHIFTED_PASTE(reg_, UF_SHIFTED_AS)
#define UF_REG_N (UF_SOFTMAX_REG_BYTES / (int)sizeof(UF_ACC))
#include UF_REG_HEADER
#define UF_REG_AS UF_SHIFTED_PASTE(reg_wide_, UF_SHIFTED_AS)
#define UF_REG_N (UF_SOFTMAX_WIDE_BYTES / (int)sizeof(UF_ACC))
#include UF_REG_HEADER
#define UF_REG_AS UF_SHIFTED_PASTE(reg_roomy_, UF_SHIFTED_AS)
#define UF_REG_N UF_SOFTMAX_ROOMY_N(UF_SHIFTED_BACKWARD)
#include UF_REG_HEADER
#undef UF_SHIFTED_PASTE
#undef UF_SHIFTED_PASTE_
#undef UF_SHIFTED_AS
