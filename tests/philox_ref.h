/*
 * A plain host implementation of Philox-4x32-10 and of unifuse's dropout
 * rule (src/unifuse/activation.h), written independently of the kernels so
 * that the tests can check every backend's masks bit for bit.
 */
#ifndef UF_TEST_PHILOX_REF_H
#define UF_TEST_PHILOX_REF_H

#include <stdint.h>

/* out = Philox-4x32-10(counter, key). */
void pr_philox(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]);

/* Whether element i of a call with (p, seed, offset) is kept. */
int pr_keep(double p, uint64_t seed, uint64_t offset, uint64_t i);

/* Fills ceil(n / 8) bytes with the keep bits of elements 0 .. n-1. */
void pr_keep_bits(double p, uint64_t seed, uint64_t offset, uint64_t n, uint8_t *bits);

#endif
