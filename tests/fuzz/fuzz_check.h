/*
 * How the fuzzer reports a broken property: a message naming the call, then
 * abort(), which libFuzzer records as a crash and saves the input for.
 */
#ifndef UF_FUZZ_CHECK_H
#define UF_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FZ_REQUIRE(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz finding (%s:%d): ", __FILE__, __LINE__);                         \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
