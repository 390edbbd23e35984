#include "philox_ref.h"

#include <math.h>
#include <string.h>

void pr_philox(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4])
{
    static const uint32_t mult[2] = {0xD2511F53u, 0xCD9E8D57u};
    static const uint32_t weyl[2] = {0x9E3779B9u, 0xBB67AE85u};
    uint32_t c[4], k[2] = {key[0], key[1]};
    memcpy(c, counter, sizeof c);
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            k[0] += weyl[0];
            k[1] += weyl[1];
        }
        const uint64_t a = (uint64_t)mult[0] * c[0];
        const uint64_t b = (uint64_t)mult[1] * c[2];
        const uint32_t next[4] = {(uint32_t)(b >> 32) ^ c[1] ^ k[0], (uint32_t)b,
                                  (uint32_t)(a >> 32) ^ c[3] ^ k[1], (uint32_t)a};
        memcpy(c, next, sizeof c);
    }
    memcpy(out, c, sizeof c);
}

int pr_keep(double p, uint64_t seed, uint64_t offset, uint64_t i)
{
    const uint64_t group = i / 8;
    const uint32_t counter[4] = {(uint32_t)group, (uint32_t)(group >> 32), (uint32_t)offset,
                                 (uint32_t)(offset >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t r[4];
    pr_philox(counter, key, r);
    /* Two 16-bit draws per word, the low half first; u = d / 2^16 is kept
     * when u >= p. */
    const uint32_t d = i % 2 ? r[i % 8 / 2] >> 16 : r[i % 8 / 2] & 0xffffu;
    return (double)d / 65536.0 >= p;
}

void pr_keep_bits(double p, uint64_t seed, uint64_t offset, uint64_t n, uint8_t *bits)
{
    memset(bits, 0, (size_t)((n + 7) / 8));
    for (uint64_t i = 0; i < n; ++i)
        if (pr_keep(p, seed, offset, i))
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
}
