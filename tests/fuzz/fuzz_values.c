#include "fuzz_values.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"

int fz_is_float(uf_dtype d)
{
    return d == UF_F32 || d == UF_F16 || d == UF_BF16 || d == UF_F64;
}

size_t fz_esize(uf_dtype d)
{
    const size_t s = uf_dtype_size(d);
    return s ? s : 4;
}

double fz_dtype_max(uf_dtype d)
{
    switch (d) {
    case UF_F16:
        return 65504.0;
    case UF_BF16:
        return 0x1.fep127;
    case UF_F64:
        return DBL_MAX;
    default:
        return FLT_MAX;
    }
}

double fz_dtype_eps(uf_dtype d)
{
    switch (d) {
    case UF_F16:
        return 0x1p-11;
    case UF_BF16:
        return 0x1p-8;
    case UF_F64:
        return 0x1p-53;
    default:
        return 0x1p-24;
    }
}

double fz_dtype_tiny(uf_dtype d)
{
    return d == UF_F16 ? 0x1p-24 : d == UF_F64 ? 1e-300 : 0x1p-120;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double r)
{
    return r * (2.0 * ((double)(splitmix(s) >> 11) * 0x1p-53) - 1.0);
}

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    FZ_REQUIRE(p, "out of host memory (%zu bytes)", bytes);
    return p;
}

static void fill_bool(fz_bytes *b, unsigned char *dst, size_t n)
{
    const unsigned mode = fz_u8(b) % 3;
    const unsigned hidden = fz_u8(b); /* out of 256 */
    uint64_t s = fz_u32(b);
    for (size_t i = 0; i < n; ++i) {
        if (mode == 2) {
            dst[i] = fz_u8(b);
        } else {
            const uint64_t r = splitmix(&s);
            /* Any nonzero byte hides, not only 1. */
            dst[i] = (r & 255) < hidden ? (unsigned char)(mode ? 1 + (r >> 8) % 255 : 1) : 0;
        }
    }
}

void fz_fill(fz_bytes *b, uf_dtype d, void *dst, size_t n)
{
    if (d == UF_BOOL) {
        fill_bool(b, (unsigned char *)dst, n);
        return;
    }
    const size_t es = fz_esize(d);
    const unsigned mode = fz_u8(b) % 4;
    if (mode == 2 || !fz_is_float(d)) { /* raw bytes: every bit pattern, NaN payloads too */
        for (size_t i = 0; i < n * es; ++i)
            ((unsigned char *)dst)[i] = fz_u8(b);
        return;
    }
    const double range = ldexp(1.0, (int)(fz_u8(b) % 24) - 8);
    const unsigned density = fz_u8(b) % 8 + 1; /* specials per 16 elements */
    const double constant = mode == 3 ? fz_real(b) : 0;
    uint64_t s = fz_u32(b);
    double *v = (double *)xmalloc(n * sizeof *v);
    for (size_t i = 0; i < n; ++i) {
        if (mode == 3)
            v[i] = constant;
        else if (mode == 1 && splitmix(&s) % 16 < density)
            v[i] = fz_special((unsigned)splitmix(&s));
        else
            v[i] = uniform(&s, range);
    }
    /* Converted in an aligned buffer: dst may be any element position. */
    void *tmp = xmalloc(n * es);
    FZ_REQUIRE(uf_convert_host(tmp, d, v, UF_F64, n) == UF_OK, "uf_convert_host to dtype %d",
               (int)d);
    memcpy(dst, tmp, n * es);
    free(tmp);
    free(v);
}

void fz_widen(uf_dtype d, const void *src, size_t n, double *out)
{
    if (d == UF_BOOL) {
        for (size_t i = 0; i < n; ++i)
            out[i] = ((const unsigned char *)src)[i] != 0;
        return;
    }
    const size_t es = fz_esize(d);
    void *tmp = xmalloc(n * es);
    memcpy(tmp, src, n * es);
    FZ_REQUIRE(uf_convert_host(out, UF_F64, tmp, d, n) == UF_OK, "uf_convert_host from dtype %d",
               (int)d);
    free(tmp);
}

double *fz_widen_new(uf_dtype d, const void *src, int64_t n)
{
    double *v = (double *)xmalloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    fz_widen(d, src, (size_t)n, v);
    return v;
}
