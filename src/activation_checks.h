/* Checks of activation and dropout descriptors, shared by the entry points
 * that take them. */
#ifndef UF_ACTIVATION_CHECKS_H
#define UF_ACTIVATION_CHECKS_H

#include <stdint.h>

#include "unifuse.h"

/* Whether v is finite and within fp32's range. */
int uf_finite_f32(double v);

/* Validates an activation (NULL: identity): UF_ERR_BAD_ARGUMENT for an
 * unknown kind, UF_ERR_BAD_VALUE for a parameter outside its domain. Sets
 * the kind and the parameters it reads (others 0). */
uf_status uf_check_activation(const uf_activation_desc *act, int *kind, double param[2]);

/* Validates dropout (NULL: p = 0), UF_ERR_BAD_VALUE for p outside [0, 1] or
 * NaN; sets the 16-bit threshold and keep scale of the rule in
 * unifuse/activation.h, and the seed and offset. */
uf_status uf_check_dropout(const uf_dropout_desc *drop, uint32_t *threshold, double *keep_scale,
                           uint64_t *seed, uint64_t *offset);

#endif
