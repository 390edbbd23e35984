#include "fuzz_expect.h"

#include <stdio.h>

#include "fuzz_check.h"
#include "fuzz_trace.h"

void fz_expect_status(const fz_expect *e, uf_status st, const char *what)
{
    if (fz_tracing())
        fprintf(stderr, "  -> %s\n", uf_status_string(st));
    const int known = (unsigned)st <= UF_ERR_BAD_ARGUMENT;
    FZ_REQUIRE(known, "%s returned %d, not a uf_status", what, (int)st);
    if (e->must) {
        FZ_REQUIRE(st != UF_OK && (FZ_BIT(st) & (e->must | e->may)),
                   "%s returned %s; expected one of mask 0x%x", what, uf_status_string(st),
                   e->must | e->may);
    } else {
        FZ_REQUIRE(st == UF_OK || (FZ_BIT(st) & e->may), "%s returned %s; expected UF_OK%s", what,
                   uf_status_string(st),
                   e->may ? " or a status the documentation leaves open" : "");
    }
}
