/* UF_FUZZ_TRACE=1 in the environment prints every call an input decodes to
 * (arguments, where each tensor lies) and its status. */
#ifndef UF_FUZZ_TRACE_H
#define UF_FUZZ_TRACE_H

#include "fuzz_arena.h"

int fz_tracing(void);

/* Prints `what` and the arena's layout, before the call is made. */
void fz_trace_call(const char *what, const fz_arena *a);

#endif
