#include "fuzz_bytes.h"

#include <float.h>
#include <math.h>
#include <string.h>

uint8_t fz_u8(fz_bytes *b)
{
    return b->pos < b->size ? b->data[b->pos++] : 0;
}

uint16_t fz_u16(fz_bytes *b)
{
    const uint16_t lo = fz_u8(b);
    return (uint16_t)(lo | (uint16_t)fz_u8(b) << 8);
}

uint32_t fz_u32(fz_bytes *b)
{
    const uint32_t lo = fz_u16(b);
    return lo | (uint32_t)fz_u16(b) << 16;
}

uint64_t fz_u64(fz_bytes *b)
{
    const uint64_t lo = fz_u32(b);
    return lo | (uint64_t)fz_u32(b) << 32;
}

double fz_special(unsigned i)
{
    static const double values[] = {
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        0.125,
        2.0,
        3.0,
        6.0,
        20.0,
        NAN,
        -NAN,
        INFINITY,
        -INFINITY,
        FLT_MAX,
        -FLT_MAX,
        0x1.fffffe0000001p127, /* above FLT_MAX, yet rounds to it in fp32 */
        0x1p128,               /* rounds to +inf in fp32 */
        DBL_MAX,
        -DBL_MAX,
        65504.0,
        65520.0 /* rounds to inf in fp16 */,
        -65520.0,
        1e30,
        -1e30,
        3e38,
        -3e38,
        0x1p60,
        -0x1p60,
        0x1p64,
        0x1p-149 /* smallest fp32 subnormal */,
        FLT_MIN,
        0x1p-1074,
        DBL_MIN,
        1e-50,
        -1e-50,
        0x1p-24,
        1.0 - 0x1p-24,
        1.0 - 0x1p-25,
        1.0 - 0x1p-53,
        0x1p-25,
        88.7,
        -88.7,
        1e-7,
        0.1,
        0.9,
        0.99};
    return values[i % (sizeof values / sizeof values[0])];
}

double fz_real(fz_bytes *b)
{
    const uint8_t tag = fz_u8(b);
    if (tag == 0)
        return 1.0;
    switch (tag % 4) {
    case 0:
    case 1:
        return ((double)fz_u16(b) - 32768.0) / 256.0;
    case 2:
        return fz_special(fz_u8(b));
    default: {
        const uint64_t bits = fz_u64(b);
        double v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    }
}

uf_dtype fz_dtype(fz_bytes *b)
{
    /* Invalid values as an integer would reach the enum from another
     * language or a corrupted struct. */
    static const int64_t invalid[] = {0, 5, 6, 7, 255, 0x7fffffff, -1, INT32_MIN};
    const uint8_t v = fz_u8(b);
    if (v < 240)
        return (uf_dtype)(1 + v % 4);
    return (uf_dtype)invalid[v % 8];
}

int64_t fz_extent(fz_bytes *b)
{
    static const int64_t large[] = {-1,
                                    INT64_MIN,
                                    INT64_MAX,
                                    (int64_t)1 << 62,
                                    (int64_t)1 << 40,
                                    ((int64_t)1 << 31) + 1,
                                    (int64_t)1 << 32};
    const uint8_t t = fz_u8(b);
    if (t < 128)
        return 1 + t % 8;
    if (t < 192)
        return 1 + fz_u16(b) % 16384;
    if (t < 208)
        return 0;
    if (t < 224)
        return large[t % 7];
    return 1;
}

int64_t fz_dim(fz_bytes *b)
{
    /* 2^61 + 1 rows of f16 fit in bytes, their fp32 statistics do not. */
    static const int64_t large[] = {-1,
                                    INT64_MIN,
                                    INT64_MAX,
                                    (int64_t)1 << 62,
                                    ((int64_t)1 << 61) + 1,
                                    (int64_t)1 << 40,
                                    ((int64_t)1 << 31) + 1,
                                    (int64_t)1 << 32};
    const uint8_t t = fz_u8(b);
    if (t < 112)
        return 1 + t % 16;
    if (t < 176)
        return 1 + fz_u16(b) % 4096;
    if (t < 192)
        return 1 + fz_u16(b) % 32768;
    if (t < 208)
        return 0;
    if (t < 224)
        return large[t % 8];
    return 1 + t % 64;
}

void fz_fit_rows(int64_t *rows, int64_t cols, int64_t cap)
{
    if (*rows < 0 || *rows > cap || cols <= 0 || cols > cap)
        return;
    if (*rows > cap / cols)
        *rows = cap / cols;
}
