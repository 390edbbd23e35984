/*
 * Float64 references for the activations, from torch.nn.functional's
 * definitions and the derivatives PyTorch's autograd uses at breakpoints;
 * plus each activation's breakpoints, for the boundary tests.
 */
#ifndef UF_TEST_ACTIVATION_REF_H
#define UF_TEST_ACTIVATION_REF_H

#include "unifuse.h"

/* act(x) and act'(x) in float64 with parameters a, b. */
double ar_forward(uf_activation kind, double a, double b, double x);
double ar_derivative(uf_activation kind, double a, double b, double x);

/* Writes the activation's breakpoints (at most 4) into pts; returns how many. */
int ar_breakpoints(uf_activation kind, double a, double b, double *pts);

/* Non-default parameters that are exact in every dtype, to test the
 * parameters reach the kernel. */
uf_activation_desc ar_custom(uf_activation kind);

#endif
