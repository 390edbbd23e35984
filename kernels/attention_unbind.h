/* Undoes attention_bind.h. */
#include "kernels/dtype_unbind.h"
#undef UF_ATT_DP
#undef UF_ACAT_
#undef UF_ACAT
#undef UF_ANAME
#undef UF_PAIR
#undef UF_MMA
#undef UF_PAIR_OF
#undef UF_PAIR_OF2
#undef UF_PAIR_AT
#undef UF_PAIR_LO
#undef UF_PAIR_HI
#undef UF_ATT_BN_
#undef UF_ATT_BN
#undef UF_ATT_LD
#undef UF_ATT_CHUNK
