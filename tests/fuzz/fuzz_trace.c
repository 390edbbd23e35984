#include "fuzz_trace.h"

#include <stdio.h>
#include <stdlib.h>

int fz_tracing(void)
{
    static int trace = -1;
    if (trace < 0)
        trace = getenv("UF_FUZZ_TRACE") != NULL;
    return trace;
}

void fz_trace_call(const char *what, const fz_arena *a)
{
    if (!fz_tracing())
        return;
    fprintf(stderr, "call %s\n ", what);
    for (int i = 0; i < a->n; ++i) {
        const fz_tensor *t = &a->t[i];
        if (t->null)
            fprintf(stderr, " %s=NULL", t->name);
        else
            fprintf(stderr, " %s=[%lld, +%zu)", t->name, (long long)t->off, t->bytes);
    }
    fputc('\n', stderr);
}
