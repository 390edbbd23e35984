/*
 * Softmax test cases: a description of x, mask and options, a float64 host
 * reference that broadcasts the mask by its own index arithmetic, and the
 * drivers that run a case through the library and compare.
 */
#ifndef UF_TEST_SOFTMAX_CASES_H
#define UF_TEST_SOFTMAX_CASES_H

#include "harness.h"

typedef struct sm_case sm_case;

/* Changes generated host data before upload (special values, masked rows).
 * mask is NULL without a mask. */
typedef void (*sm_edit_fn)(const sm_case *c, double *x, size_t nx, double *mask, size_t nm);

struct sm_case {
    uf_softmax_desc desc;
    double lo, hi;          /* x drawn uniformly from [lo, hi] */
    double hidden_fraction; /* boolean masks: share of hidden keys; additive: share of -inf */
    size_t offset;          /* elements before each tensor's data: misaligned views */
    int in_place;           /* forward: y == x; backward: dx == dy */
    uint64_t seed;
    sm_edit_fn edit;
};

/* A case of x [shape...] with no mask, scale 1, values in [-4, 4]. */
sm_case sm_make(uf_dtype dtype, int ndim, const int64_t *shape);
/* Adds a mask of the given dtype and shape. */
void sm_set_mask(sm_case *c, uf_dtype mask_dtype, int ndim, const int64_t *shape);

/* Reference forward over host doubles; mask values broadcast from `mask`. */
void sm_reference_forward(const sm_case *c, const double *x, const double *mask, double *y);
/* Reference backward: dx = scale * y * (dy - sum(dy * y)). */
void sm_reference_backward(const sm_case *c, const double *y, const double *dy, double *dx);

/* Runs the case and returns the number of elements outside tolerance. */
size_t sm_check_forward(const sm_case *c, const char *what);
size_t sm_check_backward(const sm_case *c, const char *what);

size_t sm_count(int ndim, const int64_t *shape);

#endif
