/*
 * The OpenMP layer's run conversions (uf_f16_run_to_f32 and the others,
 * conversion_runs.h, f16c_runs.c) against the scalar bit conversions of
 * portable/f16_bits.h, bit for bit: every binary16 value widened, and
 * fp32 values narrowed at every rounding boundary of binary16, beside
 * random bit patterns and the special values; runs of every length up to
 * a few vectors, at even and odd element offsets. Meson runs it at each
 * x86-64 level (UF_CPU_LEVEL), so F16C's path and the bit arithmetic are
 * both checked; built again as each kernel copy is (-march=x86-64-v3/v4),
 * it checks the copies' inline F16C runs. A CPU-layer test: GPU layers have no run conversions of
 * their own (they loop over their scalar ones).
 */
/* clang-format off: cmocka needs these first, in this order */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <string.h>

#include "layer.h"

/* splitmix64, as the harness's (which this program does not link: it
 * takes the static library, whose internals it tests, and the harness the
 * shared one). */
static uint64_t next_bits(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Equal bits; NaNs need only match in sign and the payload bits below the
 * quiet bit (F16C sets the quiet bit of a signalling binary16 NaN when it
 * widens it, the bit arithmetic keeps it clear: f16c_runs.c). */
static int same_f32(float got, float want)
{
    const uint32_t g = uf_bits_from_f32(got), w = uf_bits_from_f32(want);
    if ((w & 0x7fffffffu) > 0x7f800000u)
        return (g & 0x7fffffffu) > 0x7f800000u && (g & 0x803fffffu) == (w & 0x803fffffu);
    return g == w;
}

static void widen_every_f16(void **state)
{
    (void)state;
    static uint16_t h[65536 + 1];
    static float f[65536];
    for (int off = 0; off < 2; ++off) {
        for (int i = 0; i < 65536; ++i)
            h[off + i] = (uint16_t)i;
        memset(f, 0, sizeof f);
        uf_f16_run_to_f32(f, &h[off], 65536, 1.0f);
        int bad = 0;
        for (int i = 0; i < 65536; ++i)
            if (!same_f32(f[i], uf_f16_bits_to_f32((uint16_t)i)) && bad++ < 5)
                printf("f16 0x%04x -> 0x%08x, want 0x%08x\n", i, (unsigned)uf_bits_from_f32(f[i]),
                       (unsigned)uf_bits_from_f32(uf_f16_bits_to_f32((uint16_t)i)));
        assert_int_equal(bad, 0);
    }
}

/* fp32 values around every binary16 value and every midpoint between
 * neighbours (ties round to even), random patterns and special values. */
static size_t narrowing_inputs(float *v, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = 0; i < 0x7c00u; ++i) {
        const float lo = uf_f16_bits_to_f32((uint16_t)i);
        const float hi = uf_f16_bits_to_f32((uint16_t)(i + 1)); /* 0x7c00: inf */
        const float mid = i + 1 < 0x7c00u ? lo + (hi - lo) / 2 : 65520.0f;
        const uint32_t m = uf_bits_from_f32(mid);
        const float around[] = {lo, mid, uf_f32_from_bits(m - 1), uf_f32_from_bits(m + 1)};
        for (int s = 0; s < 2; ++s)
            for (size_t k = 0; k < sizeof around / sizeof around[0] && n < cap; ++k)
                v[n++] = s ? -around[k] : around[k];
    }
    const uint32_t special[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u,
                                0x7fbfe000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu, 0x477fe000u,
                                0x477fefffu, 0x477ff000u, 0x33000000u, 0x33000001u, 0xb3800000u};
    for (size_t k = 0; k < sizeof special / sizeof special[0] && n < cap; ++k)
        v[n++] = uf_f32_from_bits(special[k]);
    uint64_t seed = 7;
    while (n < cap)
        v[n++] = uf_f32_from_bits((uint32_t)next_bits(&seed));
    return n;
}

static void narrow_boundaries_and_random(void **state)
{
    (void)state;
    enum { cap = 0x7c00 * 8 + (1 << 18) };
    static float v[cap];
    static uint16_t h[cap + 1];
    const size_t n = narrowing_inputs(v, cap);
    for (int off = 0; off < 2; ++off) {
        memset(h, 0, sizeof h);
        uf_f32_run_to_f16(&h[off], v, (int)n, 1.0f);
        int bad = 0;
        for (size_t i = 0; i < n; ++i) {
            const uint16_t want = uf_f32_to_f16_bits(v[i]);
            if (h[off + i] != want && bad++ < 5)
                printf("f32 0x%08x -> 0x%04x, want 0x%04x\n", (unsigned)uf_bits_from_f32(v[i]),
                       h[off + i], want);
        }
        assert_int_equal(bad, 0);
    }
}

/* Short runs of each length (the vector loop's tails) leave the values
 * before and after untouched; bfloat16 runs too; with the factor 1 and
 * with one whose products round (each value converted, then multiplied;
 * multiplied, then converted). */
static void every_short_length(void **state)
{
    (void)state;
    uint64_t seed = 11;
    const float factors[] = {1.0f, 0.3f};
    for (int k = 0; k < 2; ++k)
        for (int n = 0; n <= 40; ++n) {
            const float s = factors[k];
            uint16_t h[48], back[48], hb[48], backb[48];
            float f[48], fb[48];
            for (int i = 0; i < 48; ++i) {
                const float x =
                    (float)((double)(int32_t)next_bits(&seed) * (70000.0 / 2147483648.0));
                h[i] = uf_f32_to_f16_bits(x);
                hb[i] = uf_f32_to_bf16_bits(x);
                f[i] = fb[i] = -1.0f;
                back[i] = backb[i] = 0xabcdu;
            }
            uf_f16_run_to_f32(&f[1], &h[1], n, s);
            uf_f32_run_to_f16(&back[1], &f[1], n, s);
            uf_bf16_run_to_f32(&fb[1], &hb[1], n, s);
            uf_f32_run_to_bf16(&backb[1], &fb[1], n, s);
            for (int i = 0; i < 48; ++i) {
                const int in = i >= 1 && i <= n;
                const float wf = uf_f16_bits_to_f32(h[i]) * s, wb = uf_bf16_bits_to_f32(hb[i]) * s;
                assert_true(same_f32(f[i], in ? wf : -1.0f));
                assert_int_equal(back[i], in ? uf_f32_to_f16_bits(wf * s) : 0xabcdu);
                assert_true(same_f32(fb[i], in ? wb : -1.0f));
                assert_int_equal(backb[i], in ? uf_f32_to_bf16_bits(wb * s) : 0xabcdu);
            }
        }
}

int main(void)
{
#ifdef UF_TEST_CPU_LEVEL
    /* Built as a kernel copy is (tests/meson.build), with the inline F16C
     * runs: only where the CPU runs that level's code. */
    if (ufb_cpu_level() < UF_TEST_CPU_LEVEL) {
        printf("conversion_runs: skipped, all 3 tests: this CPU runs no x86-64 level %d code\n",
               UF_TEST_CPU_LEVEL);
        return 77;
    }
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(widen_every_f16),
        cmocka_unit_test(narrow_boundaries_and_random),
        cmocka_unit_test(every_short_length),
    };
    return cmocka_run_group_tests_name("conversion_runs", tests, NULL, NULL);
}
