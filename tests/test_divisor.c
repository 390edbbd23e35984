/*
 * kernels/divisor.h: the multiply-and-shift quotient equals n / d for every
 * divisor and dividend the launchers give it (1 <= d <= 2^31, 0 <= n <
 * 2^31). Host arithmetic only; needs no device.
 */
#include <stdint.h>

#include "harness.h"
#include "kernels/divisor.h"

/* Counts the n in `ns` whose quotient by d is wrong. */
static unsigned wrong_quotients(uint32_t d, const uint32_t *ns, int count)
{
    const uf_divisor v = uf_divisor_of(d);
    unsigned bad = 0;
    for (int i = 0; i < count; ++i)
        bad += UF_QUOTIENT(ns[i], v) != ns[i] / d;
    return bad;
}

/* Dividends near multiples of d and at the ends of the range, where a
 * multiplier one too small or a shift one too short first errs. */
static int dividends_for(uint32_t d, uint32_t *ns)
{
    const uint32_t top = 0x7fffffffu;
    int c = 0;
    ns[c++] = 0;
    ns[c++] = 1;
    ns[c++] = top;
    ns[c++] = top - 1;
    for (uint32_t k = 1; k <= 3; ++k) {
        const uint64_t below_top = (uint64_t)(top / d - k + 1) * d;
        if (below_top >= 1 && below_top <= top) {
            ns[c++] = (uint32_t)below_top;
            ns[c++] = (uint32_t)(below_top - 1);
        }
        if ((uint64_t)k * d <= top) {
            ns[c++] = k * d;
            ns[c++] = k * d - 1;
        }
    }
    return c;
}

static void small_divisors_every_small_dividend(void **state)
{
    (void)state;
    static uint32_t ns[70000];
    for (uint32_t n = 0; n < 70000; ++n)
        ns[n] = n;
    unsigned bad = 0;
    for (uint32_t d = 1; d <= 1100; ++d)
        bad += wrong_quotients(d, ns, 70000);
    assert_int_equal(bad, 0);
}

static void divisors_across_the_range(void **state)
{
    (void)state;
    uint32_t ns[32];
    unsigned bad = 0, tried = 0;
    /* Every power of two and its neighbours, then a spread of others. */
    for (int l = 0; l <= 31; ++l) {
        const uint32_t p = (uint32_t)1 << l;
        const uint32_t ds[] = {p - 1, p, p + 1};
        for (int i = 0; i < 3; ++i) {
            if (ds[i] == 0 || ds[i] > 0x80000000u)
                continue;
            bad += wrong_quotients(ds[i], ns, dividends_for(ds[i], ns));
            ++tried;
        }
    }
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < 200000; ++i) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        const uint32_t d = (uint32_t)((s >> 33) >> (s & 31)) + 1; /* every magnitude */
        bad += wrong_quotients(d, ns, dividends_for(d, ns));
        ++tried;
    }
    assert_true(tried > 200000);
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_divisors_every_small_dividend),
        cmocka_unit_test(divisors_across_the_range),
    };
    return TH_RUN("divisor", tests);
}
