/*
 * The fuzzer's operations: each decodes one call of the public API from the
 * input, makes it on guarded memory, and checks the status and the results.
 */
#ifndef UF_FUZZ_OPS_H
#define UF_FUZZ_OPS_H

#include "fuzz_bytes.h"

/* Most elements a tensor of a call that should succeed may have: enough for
 * every softmax path (rows of up to 16384 keys) while one run stays fast. */
#define FZ_CAP 32768

void fz_softmax(fz_bytes *b, int backward, uf_stream stream);
void fz_activation(fz_bytes *b, int backward, int dropout_only, uf_stream stream);
void fz_runtime(fz_bytes *b, uf_stream stream);
void fz_epilogue(fz_bytes *b, int backward, uf_stream stream);
void fz_norm(fz_bytes *b, int backward, uf_stream stream);

#endif
