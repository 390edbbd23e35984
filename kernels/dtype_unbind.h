/* Undoes dtype_bind.h so the next instantiation can bind again. */
#undef UF_DT
#undef UF_VEC
#undef UF_T
#undef UF_ACC
#undef UF_SFX
#undef UF_TO_ACC
#undef UF_FROM_ACC
#undef UF_EXP_ACC
#undef UF_SQRT_ACC
#undef UF_LOADV
#undef UF_STOREV
#undef UF_PAIRED
#undef UF_PAIR_TO_ACC
#undef UF_PAIR_FROM_ACC
