/*
 * Activation and dropout calls: kind (valid or not), parameters, dropout
 * probability, seed and offset, dtype, count, tensors placed by
 * fuzz_arena, and the status the documented checking order demands
 * (docs/api.md, "Activations and dropout", "Statuses and checking order").
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_activation.h"
#include "fuzz_arena.h"
#include "fuzz_check.h"
#include "fuzz_expect.h"
#include "fuzz_ops.h"
#include "fuzz_trace.h"
#include "fuzz_values.h"

uf_activation fz_decode_act_kind(fz_bytes *b)
{
    static const int64_t invalid[] = {-1,        UF_ACT_COUNT, UF_ACT_COUNT + 1, 255,
                                      INT32_MIN, INT32_MAX,    0x10000,          100};
    const uint8_t v = fz_u8(b);
    return (uf_activation)(v < 232 ? v % UF_ACT_COUNT : invalid[v % 8]);
}

double fz_decode_p(fz_bytes *b)
{
    static const double common[] = {0.0,  0.1,   0.25,          0.5,     0.9,           1.0,
                                    0.75, 1e-30, 1.0 - 0x1p-24, 0x1p-24, 1.0 - 0x1p-25, 0.999};
    const uint8_t t = fz_u8(b);
    return t < 192 ? common[t % 12] : fz_real(b);
}

uint64_t fz_decode_u64(fz_bytes *b)
{
    const uint8_t t = fz_u8(b);
    return t < 128 ? t : fz_u64(b);
}

static int64_t decode_count(fz_bytes *b)
{
    static const int64_t odd[] = {-1,
                                  INT64_MIN,
                                  ((int64_t)1 << 62) + 1,
                                  INT64_MAX,
                                  ((int64_t)1 << 61),
                                  ((int64_t)1 << 31) + 1,
                                  ((int64_t)1 << 32) + 7};
    const uint8_t t = fz_u8(b);
    if (t < 200)
        return 1 + fz_u16(b) % FZ_CAP;
    if (t < 210)
        return 0;
    return odd[t % 7];
}

/* Parameters each activation reads, from the table in unifuse/activation.h
 * (the oracle keeps its own copy rather than asking the library). */
static const signed char params_read[UF_ACT_COUNT] = {
    [UF_ACT_HARDTANH] = 2, [UF_ACT_SOFTPLUS] = 2,   [UF_ACT_LEAKY_RELU] = 1, [UF_ACT_ELU] = 1,
    [UF_ACT_CELU] = 1,     [UF_ACT_HARDSHRINK] = 1, [UF_ACT_SOFTSHRINK] = 1};

static int param_count(uf_activation k)
{
    return (int)k >= 0 && k < UF_ACT_COUNT ? params_read[k] : 0;
}

int fz_act_params_ok(uf_activation k, const double *prm, int narrow)
{
    double v[2];
    for (int i = 0; i < 2; ++i) {
        v[i] = narrow ? (double)(float)prm[i] : prm[i];
        if (i < param_count(k) && !(isfinite(v[i]) && fabs(v[i]) <= FLT_MAX))
            return 0;
    }
    switch (k) {
    case UF_ACT_HARDTANH:
        return v[0] <= v[1];
    case UF_ACT_SOFTPLUS:
    case UF_ACT_CELU:
        return v[0] != 0;
    case UF_ACT_HARDSHRINK:
    case UF_ACT_SOFTSHRINK:
        return v[0] >= 0;
    default:
        return 1;
    }
}

static void describe(char *s, size_t n, const char *fn, const uf_activation_desc *act,
                     const uf_dropout_desc *drop, uf_dtype dtype, int64_t count)
{
    int k = snprintf(s, n, "%s(", fn);
    if (k > 0 && (size_t)k < n)
        k += act ? snprintf(s + k, n - (size_t)k, "kind=%d param=%a,%a ", (int)act->kind,
                            act->param[0], act->param[1])
                 : snprintf(s + k, n - (size_t)k, "act=NULL ");
    if (k > 0 && (size_t)k < n)
        k += drop ? snprintf(s + k, n - (size_t)k, "p=%a seed=%llu offset=%llu ", drop->p,
                             (unsigned long long)drop->seed, (unsigned long long)drop->offset)
                  : snprintf(s + k, n - (size_t)k, "drop=NULL ");
    if (k > 0 && (size_t)k < n)
        snprintf(s + k, n - (size_t)k, "dtype=%d count=%lld)", (int)dtype, (long long)count);
}

/* The tensors of one call, by role. */
enum { T_X, T_DY, T_OUT, T_KEEP };

void fz_activation(fz_bytes *b, int backward, int dropout_only, uf_stream stream)
{
    uf_activation_desc act;
    memset(&act, 0, sizeof act);
    int act_null = 1;
    if (!dropout_only) {
        act_null = fz_u8(b) >= 240;
        act.kind = fz_decode_act_kind(b);
        const uf_activation_desc dflt = uf_activation_default(act.kind);
        for (int i = 0; i < 2; ++i)
            act.param[i] = fz_u8(b) < 128 ? dflt.param[i] : fz_real(b);
    }
    uf_dropout_desc drop;
    const int drop_null = fz_u8(b) < 48;
    drop.p = fz_decode_p(b);
    drop.seed = fz_decode_u64(b);
    drop.offset = fz_decode_u64(b);
    const uf_dtype dtype = fz_dtype(b);
    const int64_t count = decode_count(b);

    const uf_activation kind = act_null ? UF_ACT_IDENTITY : act.kind;
    const int kind_ok = (int)kind >= 0 && kind < UF_ACT_COUNT;
    FZ_REQUIRE((uf_activation_name(kind) != NULL) == kind_ok,
               "uf_activation_name(%d) disagrees with the enum", (int)kind);

    /* Steps 1 to 5 of the documented order, which need no pointer. */
    fz_expect e = {0, 0};
    size_t bytes = 0;
    const size_t es = fz_esize(dtype);
    if (!fz_is_float(dtype))
        fz_first(&e, UF_ERR_BAD_DTYPE);
    if (count < 0)
        fz_first(&e, UF_ERR_BAD_SHAPE);
    if (!kind_ok)
        fz_first(&e, UF_ERR_BAD_ARGUMENT);
    if (kind_ok && !act_null) {
        const int wide = fz_act_params_ok(kind, act.param, 0),
                  narrow = fz_act_params_ok(kind, act.param, 1);
        if (!wide && !narrow)
            fz_first(&e, UF_ERR_BAD_VALUE);
        else if (wide != narrow)
            e.may |= FZ_BIT(UF_ERR_BAD_VALUE); /* "finite in fp32" read either way */
    }
    if (!drop_null && !(drop.p >= 0 && drop.p <= 1))
        fz_first(&e, UF_ERR_BAD_VALUE);
    if (count >= 0 && (uint64_t)count > (uint64_t)INT64_MAX / es)
        fz_first(&e, UF_ERR_OVERFLOW);
    else if (count >= 0)
        bytes = (size_t)count * es;
    const int scalars_ok = !e.must && !e.may;
    if (!e.must && count > FZ_CAP)
        return; /* would be valid: too large to back here */

    const int have_data = !e.must && count > 0;
    const size_t tbytes = have_data ? bytes : 64;
    const size_t kbytes = have_data ? (size_t)(count + 7) / 8 : 16;
    fz_arena a;
    memset(&a, 0, sizeof a);
    int t[4] = {-1, -1, -1, -1};
    if (!backward) {
        t[T_X] = fz_place(&a, b, "x", tbytes, es, 0, 1);
        t[T_OUT] = fz_place(&a, b, "y", tbytes, es, 1, 1);
        t[T_KEEP] = fz_place(&a, b, "keep_bits", kbytes, 1, 1, 1);
    } else {
        if (!dropout_only)
            t[T_X] = fz_place(&a, b, "x", tbytes, es, 0, 1);
        t[T_DY] = fz_place(&a, b, "dy", tbytes, es, 0, 1);
        t[T_OUT] = fz_place(&a, b, "dx", tbytes, es, 1, 1);
    }
    fz_arena_build(&a);
    for (int r = T_X; r <= T_DY; ++r)
        if (t[r] >= 0 && !a.t[t[r]].null)
            fz_fill(b, dtype, fz_ptr(&a, t[r]), a.t[t[r]].bytes / es);
    fz_arena_seal(&a);

    /* Faults of pointers, for non-empty calls. */
    const int reads_x = backward && kind != UF_ACT_IDENTITY;
    if (count > 0) {
        const int x = t[T_X], o = t[T_OUT];
        int null = a.t[o].null, alias = 0;
        if (!backward) {
            null |= a.t[x].null;
            alias = (fz_overlap(&a, x, o) && !fz_same(&a, x, o)) ||
                    (!a.t[t[T_KEEP]].null &&
                     (fz_overlap(&a, t[T_KEEP], x) || fz_overlap(&a, t[T_KEEP], o)));
        } else {
            const int dy = t[T_DY];
            null |= a.t[dy].null || (reads_x && a.t[x].null);
            alias = fz_overlap(&a, dy, o) && !fz_same(&a, dy, o);
            /* dx may equal x, and x and dy may overlap (both only read). The
             * identity does not read x: whether its overlap with dx still
             * counts is not said. */
            if (x >= 0 && fz_overlap(&a, x, o) && !fz_same(&a, x, o)) {
                if (reads_x)
                    alias = 1;
                else
                    e.may |= FZ_BIT(UF_ERR_ALIAS);
            }
        }
        if (null)
            fz_first(&e, UF_ERR_NULL_POINTER);
        if (alias)
            fz_first(&e, UF_ERR_ALIAS);
    }

    const uf_activation_desc *ap = act_null ? NULL : &act;
    const uf_dropout_desc *dp = drop_null ? NULL : &drop;
    void *px = t[T_X] >= 0 ? fz_ptr(&a, t[T_X]) : NULL;
    void *pout = fz_ptr(&a, t[T_OUT]);
    char what[320];
    uf_status st;
    if (!backward) {
        void *pk = fz_ptr(&a, t[T_KEEP]);
        describe(what, sizeof what, dropout_only ? "dropout_forward" : "activation_forward", ap, dp,
                 dtype, count);
        fz_trace_call(what, &a);
        st = dropout_only ? uf_dropout_forward(dp, dtype, count, px, pout, pk, stream)
                          : uf_activation_forward(ap, dp, dtype, count, px, pout, pk, stream);
    } else {
        void *pdy = fz_ptr(&a, t[T_DY]);
        describe(what, sizeof what, dropout_only ? "dropout_backward" : "activation_backward", ap,
                 dp, dtype, count);
        fz_trace_call(what, &a);
        st = dropout_only ? uf_dropout_backward(dp, dtype, count, pdy, pout, stream)
                          : uf_activation_backward(ap, dp, dtype, count, px, pdy, pout, stream);
    }
    fz_arena_check(&a, st, what);
    fz_expect_status(&e, st, what);

    if (st == UF_OK && count > 0 && scalars_ok) {
        const fz_act_call c = {kind,
                               act_null ? 0 : act.param[0],
                               act_null ? 0 : act.param[1],
                               drop_null ? 0 : drop.p,
                               drop.seed,
                               drop.offset,
                               dtype,
                               count};
        double *out = fz_widen_new(dtype, fz_ptr(&a, t[T_OUT]), count);
        if (!backward) {
            double *x = fz_widen_new(dtype, fz_before(&a, t[T_X]), count);
            fz_check_activation_forward(&c, x, out, (const unsigned char *)fz_ptr(&a, t[T_KEEP]),
                                        what);
            free(x);
        } else {
            double *x = reads_x ? fz_widen_new(dtype, fz_before(&a, t[T_X]), count) : NULL;
            double *dy = fz_widen_new(dtype, fz_before(&a, t[T_DY]), count);
            fz_check_activation_backward(&c, x, dy, out, what);
            free(x);
            free(dy);
        }
        free(out);
    }
    fz_arena_free(&a);
}
