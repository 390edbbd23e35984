/* The demo's part for fused attention. */
#ifndef UF_DEMO_ATTENTION_H
#define UF_DEMO_ATTENTION_H

#include "unifuse.h"

/* Prints a small causal example next to a float64 result, then times the
 * forward and backward passes; returns nonzero on failure. */
int demo_attention(uf_backend backend);

#endif
