#include "checks.h"

uf_status uf_shape_count(const int64_t *shape, int ndim, int64_t *count)
{
    int64_t n = 1;
    int empty = 0;
    for (int i = 0; i < ndim; ++i) {
        if (shape[i] < 0)
            return UF_ERR_BAD_SHAPE;
        if (shape[i] == 0)
            empty = 1;
    }
    /* An empty tensor cannot overflow, whatever its other extents. */
    for (int i = 0; i < ndim && !empty; ++i) {
        if (n > INT64_MAX / shape[i])
            return UF_ERR_OVERFLOW;
        n *= shape[i];
    }
    *count = empty ? 0 : n;
    return UF_OK;
}

uf_status uf_byte_count(int64_t count, size_t size, size_t *bytes)
{
    if (count < 0 || size == 0)
        return UF_ERR_BAD_ARGUMENT;
    if ((uint64_t)count > (uint64_t)INT64_MAX / size || (uint64_t)count > SIZE_MAX / size)
        return UF_ERR_OVERFLOW;
    *bytes = (size_t)count * size;
    return UF_OK;
}

int uf_ranges_overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    if (a_bytes == 0 || b_bytes == 0)
        return 0;
    return pa < pb + b_bytes && pb < pa + a_bytes;
}

int uf_same_or_disjoint(const void *a, const void *b, size_t bytes)
{
    return a == b || !uf_ranges_overlap(a, bytes, b, bytes);
}

int uf_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

int uf_alignment16(const void *p)
{
    int align = 16;
    while (align > 1 && ((uintptr_t)p & (uintptr_t)(align - 1)) != 0)
        align /= 2;
    return align;
}
