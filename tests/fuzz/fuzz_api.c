/*
 * libFuzzer entry point over the public API (OpenMP backend). The first
 * input byte picks an operation from the table below; the rest of the input
 * is decoded by that operation (fuzz_softmax.c, fuzz_activation.c,
 * fuzz_runtime.c, fuzz_epilogue.c, fuzz_norm.c). Every finding aborts with
 * a message; see docs/reliability.md for how CI runs it.
 */
#include <stdint.h>
#include <string.h>

#include "../philox_ref.h"
#include "fuzz_check.h"
#include "fuzz_ops.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef void (*fz_op)(fz_bytes *b, uf_stream stream);

static void softmax_forward(fz_bytes *b, uf_stream s)
{
    fz_softmax(b, 0, s);
}
static void softmax_backward(fz_bytes *b, uf_stream s)
{
    fz_softmax(b, 1, s);
}
static void activation_forward(fz_bytes *b, uf_stream s)
{
    fz_activation(b, 0, 0, s);
}
static void activation_backward(fz_bytes *b, uf_stream s)
{
    fz_activation(b, 1, 0, s);
}
static void dropout_forward(fz_bytes *b, uf_stream s)
{
    fz_activation(b, 0, 1, s);
}
static void dropout_backward(fz_bytes *b, uf_stream s)
{
    fz_activation(b, 1, 1, s);
}
static void epilogue_forward(fz_bytes *b, uf_stream s)
{
    fz_epilogue(b, 0, s);
}
static void epilogue_backward(fz_bytes *b, uf_stream s)
{
    fz_epilogue(b, 1, s);
}
static void norm_forward(fz_bytes *b, uf_stream s)
{
    fz_norm(b, 0, s);
}
static void norm_backward(fz_bytes *b, uf_stream s)
{
    fz_norm(b, 1, s);
}

/* Byte 0 modulo the table's length selects the operation; byte 0's high
 * bit passes a created stream instead of NULL. Seeds in corpus/ start with
 * these indices, so append, do not reorder. */
static const fz_op ops[] = {softmax_forward,     softmax_backward, activation_forward,
                            activation_backward, dropout_forward,  dropout_backward,
                            fz_runtime,          epilogue_forward, epilogue_backward,
                            norm_forward,        norm_backward};
#define NOPS (sizeof ops / sizeof ops[0])

static uf_stream stream;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    FZ_REQUIRE(uf_stream_create(&stream) == UF_OK, "uf_stream_create failed");
    /* The dropout oracle must itself be right: Random123's known answer for
     * Philox-4x32-10 with a zero counter and key. */
    static const uint32_t zero[4] = {0, 0, 0, 0};
    static const uint32_t want[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    uint32_t got[4];
    pr_philox(zero, zero, got);
    FZ_REQUIRE(memcmp(got, want, sizeof got) == 0, "tests/philox_ref.c fails its known answer");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size, 0};
    const uint8_t op = fz_u8(&b);
    ops[(op & 0x7f) % NOPS](&b, op & 0x80 ? stream : NULL);
    return 0;
}
