/* The demo's part for the activation, epilogue and norm kernels. */
#ifndef UF_DEMO_FUSED_H
#define UF_DEMO_FUSED_H

#include "unifuse.h"

/* Prints small checked examples and a timing; returns nonzero on failure. */
int demo_fused(uf_backend backend);

#endif
