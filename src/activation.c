/*
 * uf_activation_forward / _backward and uf_dropout_forward / _backward:
 * argument checks, the dropout threshold, the choice of scalar or 16-byte
 * kernels, and the launch.
 */
#include <float.h>
#include <math.h>

#include "activation_checks.h"
#include "checks.h"
#include "kernels/activation_args.h"

typedef uf_status (*uf_act_launcher)(const uf_launch *, const uf_activation_args *);

/* Indexed [dropout][backward][dtype - 1][vectorised]. */
#define UF_ACT_ROW(pass, dt, vec)                                                                  \
    {                                                                                              \
        uf_act_##pass##_##dt##_v1_launch, uf_act_##pass##_##dt##_v##vec##_launch                   \
    }
#define UF_ACT_PASS(pass)                                                                          \
    {                                                                                              \
        UF_ACT_ROW(pass, f32, 4), UF_ACT_ROW(pass, f16, 8), UF_ACT_ROW(pass, bf16, 8),             \
            UF_ACT_ROW(pass, f64, 2)                                                               \
    }
static const uf_act_launcher launchers[2][2][4][2] = {
    {UF_ACT_PASS(fwd_plain), UF_ACT_PASS(bwd_plain)}, {UF_ACT_PASS(fwd), UF_ACT_PASS(bwd)}};

/* The kernels with dropout built for one activation, for 16-bit data in
 * 16-byte accesses: indexed [backward][dtype f16, bf16][fixed_slot]. */
#define UF_ACT_FIXED_ROW(pass, dt)                                                                 \
    {                                                                                              \
        uf_act_##pass##_identity_##dt##_v8_launch, uf_act_##pass##_relu_##dt##_v8_launch,          \
            uf_act_##pass##_gelu_##dt##_v8_launch, uf_act_##pass##_silu_##dt##_v8_launch           \
    }
static const uf_act_launcher fixed_launchers[2][2][4] = {
    {UF_ACT_FIXED_ROW(fwd, f16), UF_ACT_FIXED_ROW(fwd, bf16)},
    {UF_ACT_FIXED_ROW(bwd, f16), UF_ACT_FIXED_ROW(bwd, bf16)}};

/* The slot of fixed_launchers that holds `kind`'s kernels, or -1. */
static int fixed_slot(int kind)
{
    switch (kind) {
    case UF_ACT_IDENTITY:
        return 0;
    case UF_ACT_RELU:
        return 1;
    case UF_ACT_GELU:
        return 2;
    case UF_ACT_SILU:
        return 3;
    default:
        return -1;
    }
}

static const char *const names[UF_ACT_COUNT] = {
    "identity",  "sigmoid", "logsigmoid", "tanh",        "relu",       "gelu",
    "gelu_tanh", "silu",    "relu6",      "hardsigmoid", "hardtanh",   "hardswish",
    "selu",      "mish",    "softplus",   "softsign",    "tanhshrink", "leaky_relu",
    "elu",       "celu",    "hardshrink", "softshrink"};

const char *uf_activation_name(uf_activation kind)
{
    return (int)kind >= 0 && kind < UF_ACT_COUNT ? names[kind] : NULL;
}

uf_activation_desc uf_activation_default(uf_activation kind)
{
    uf_activation_desc d = {kind, {0, 0}};
    switch (kind) {
    case UF_ACT_HARDTANH:
        d.param[0] = -1;
        d.param[1] = 1;
        break;
    case UF_ACT_SOFTPLUS:
        d.param[0] = 1;
        d.param[1] = 20;
        break;
    case UF_ACT_LEAKY_RELU:
        d.param[0] = 0.01;
        break;
    case UF_ACT_ELU:
    case UF_ACT_CELU:
        d.param[0] = 1;
        break;
    case UF_ACT_HARDSHRINK:
    case UF_ACT_SOFTSHRINK:
        d.param[0] = 0.5;
        break;
    default:
        break;
    }
    return d;
}

static int is_act_dtype(uf_dtype d)
{
    return d == UF_F32 || d == UF_F16 || d == UF_BF16 || d == UF_F64;
}

/* Checks shared by both passes: enums, values, count and byte size. */
static uf_status check_common(const uf_activation_desc *act, const uf_dropout_desc *drop,
                              uf_dtype dtype, int64_t count, uf_activation_args *a, size_t *bytes)
{
    if (!is_act_dtype(dtype))
        return UF_ERR_BAD_DTYPE;
    if (count < 0)
        return UF_ERR_BAD_SHAPE;
    uf_status st = uf_check_activation(act, &a->kind, a->param);
    if (st == UF_OK)
        st = uf_check_dropout(drop, &a->threshold, &a->keep_scale, &a->seed, &a->offset);
    if (st == UF_OK)
        st = uf_byte_count(count, uf_dtype_size(dtype), bytes);
    a->count = count;
    return st;
}

/* A grid of at most this many times the blocks the device holds at once,
 * each looping over logical blocks when there are more. On the H200 (64 Mi
 * elements, 2026-11-30) 16 gave f32 3-5 points of copy bandwidth over 4
 * (forward relu 88 -> 94%, backward 95 -> 100%), where every block looped
 * about four times and some once more than others, and 16-bit within 2
 * points; 1 lost 4-9 points everywhere. */
#ifndef UF_ACT_WAVES
#define UF_ACT_WAVES 16
#endif

static uf_status launch_here(int backward, uf_dtype dtype, const uf_activation_args *a, int vec_ok,
                             uf_stream stream)
{
    uf_device_limits lim;
    const uf_status st = ufb_device_limits(&lim);
    if (st != UF_OK)
        return st;
    const int per_mp = lim.max_threads_per_mp / UF_ACT_THREADS;
    const int es = (int)uf_dtype_size(dtype);
    const int steps = backward ? UF_ACT_BWD_STEPS_FOR(es) : UF_ACT_STEPS_FOR(es);
    const int64_t per_block = (int64_t)UF_ACT_THREADS * steps * UF_ACT_UNIT;
    const uf_launch l = {(a->count + per_block - 1) / per_block, UF_ACT_THREADS, stream,
                         (int64_t)lim.multiprocessors * (per_mp > 0 ? per_mp : 1) * UF_ACT_WAVES,
                         0};
    const int slot = fixed_slot(a->kind);
    if (a->threshold != 0 && vec_ok && (dtype == UF_F16 || dtype == UF_BF16) && slot >= 0)
        return fixed_launchers[backward][dtype == UF_BF16][slot](&l, a);
    return launchers[a->threshold != 0][backward][dtype - 1][vec_ok](&l, a);
}

/* launch_here on the stream's device. */
static uf_status launch(int backward, uf_dtype dtype, const uf_activation_args *a, int vec_ok,
                        uf_stream stream)
{
    uf_device_scope scope;
    uf_status st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = launch_here(backward, dtype, a, vec_ok, stream);
    return ufb_scope_leave(&scope, st);
}

uf_status uf_activation_forward(const uf_activation_desc *act, const uf_dropout_desc *drop,
                                uf_dtype dtype, int64_t count, const void *x, void *y,
                                void *keep_bits, uf_stream stream)
{
    uf_activation_args a = {0};
    size_t bytes = 0;
    uf_status st = check_common(act, drop, dtype, count, &a, &bytes);
    if (st != UF_OK || count == 0)
        return st;
    if (!x || !y)
        return UF_ERR_NULL_POINTER;
    const size_t mask_bytes = (size_t)(count / 8 + (count % 8 != 0));
    if (!uf_same_or_disjoint(x, y, bytes) ||
        (keep_bits && (uf_ranges_overlap(keep_bits, mask_bytes, x, bytes) ||
                       uf_ranges_overlap(keep_bits, mask_bytes, y, bytes))))
        return UF_ERR_ALIAS;
    a.x = x;
    a.out = y;
    a.keep_bits = keep_bits;
    return launch(0, dtype, &a, uf_aligned16(x) && uf_aligned16(y), stream);
}

uf_status uf_activation_backward(const uf_activation_desc *act, const uf_dropout_desc *drop,
                                 uf_dtype dtype, int64_t count, const void *x, const void *dy,
                                 void *dx, uf_stream stream)
{
    uf_activation_args a = {0};
    size_t bytes = 0;
    uf_status st = check_common(act, drop, dtype, count, &a, &bytes);
    if (st != UF_OK || count == 0)
        return st;
    const int reads_x = a.kind != UF_ACT_IDENTITY;
    if (!dy || !dx || (reads_x && !x))
        return UF_ERR_NULL_POINTER;
    if (!uf_same_or_disjoint(dy, dx, bytes) || (reads_x && !uf_same_or_disjoint(x, dx, bytes)))
        return UF_ERR_ALIAS;
    a.x = reads_x ? x : NULL;
    a.dy = dy;
    a.out = dx;
    const int vec_ok = uf_aligned16(a.x) && uf_aligned16(dy) && uf_aligned16(dx);
    return launch(1, dtype, &a, vec_ok, stream);
}

uf_status uf_dropout_forward(const uf_dropout_desc *drop, uf_dtype dtype, int64_t count,
                             const void *x, void *y, void *keep_bits, uf_stream stream)
{
    return uf_activation_forward(NULL, drop, dtype, count, x, y, keep_bits, stream);
}

uf_status uf_dropout_backward(const uf_dropout_desc *drop, uf_dtype dtype, int64_t count,
                              const void *dy, void *dx, uf_stream stream)
{
    return uf_activation_backward(NULL, drop, dtype, count, NULL, dy, dx, stream);
}
