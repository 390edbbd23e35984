/*
 * The statuses a fuzzed call may return, worked out from the documented
 * rules (docs/api.md, the headers under src/unifuse/), not from src/: each
 * fault the input introduced adds its status to `must` (the call has to
 * fail, with one of these) or to `may` (the documentation leaves it open).
 */
#ifndef UF_FUZZ_EXPECT_H
#define UF_FUZZ_EXPECT_H

#include "unifuse.h"

typedef struct fz_expect {
    unsigned must, may;
} fz_expect;

#define FZ_BIT(st) (1u << (unsigned)(st))

/* Records the first fault for calls whose checking order is documented. */
static inline void fz_first(fz_expect *e, uf_status st)
{
    if (!e->must)
        e->must = FZ_BIT(st);
}

/* Fails (FZ_REQUIRE) unless `st` is allowed by `e`. */
void fz_expect_status(const fz_expect *e, uf_status st, const char *what);

#endif
