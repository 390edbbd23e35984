/*
 * Runtime calls: uf_convert_host, uf_memcpy and uf_memset on guarded
 * memory, and the handle and name helpers with any argument, against the
 * rules of docs/api.md ("Runtime surface", "Host conversion").
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_arena.h"
#include "fuzz_check.h"
#include "fuzz_expect.h"
#include "fuzz_ops.h"
#include "fuzz_trace.h"
#include "fuzz_values.h"

/* A count or byte size: mostly small, sometimes 0 or large enough that the
 * call must refuse it before touching memory. */
static size_t decode_size(fz_bytes *b, size_t *huge_from)
{
    const uint8_t t = fz_u8(b);
    if (t < 224)
        return 1 + fz_u16(b) % 4096;
    if (t < 240)
        return 0;
    *huge_from = 1;
    return SIZE_MAX - (size_t)(t % 4);
}

static void convert(fz_bytes *b)
{
    const uf_dtype dd = fz_dtype(b), sd = fz_dtype(b);
    size_t huge = 0;
    const size_t count = decode_size(b, &huge);
    const size_t ds = fz_esize(dd), ss = fz_esize(sd);
    fz_expect e = {0, 0};
    if (!fz_is_float(dd) || !fz_is_float(sd))
        fz_first(&e, UF_ERR_BAD_DTYPE);
    const int sized = !huge;
    fz_arena a;
    memset(&a, 0, sizeof a);
    const int src = fz_place(&a, b, "src", sized ? count * ss : 64, ss, 0, 1);
    const int dst = fz_place(&a, b, "dst", sized ? count * ds : 64, ds, 1, 1);
    fz_arena_build(&a);
    if (!a.t[src].null)
        fz_fill(b, sd, fz_ptr(&a, src), a.t[src].bytes / ss);
    fz_arena_seal(&a);
    /* The documented order: dtypes, count 0, NULL, overflow; an overlap is
     * refused too, its place against the overflow not said. */
    if (count > 0) {
        const int overlap = fz_overlap(&a, src, dst) && !(fz_same(&a, src, dst) && ds == ss);
        if (a.t[src].null || a.t[dst].null) {
            fz_first(&e, UF_ERR_NULL_POINTER);
        } else if (huge) { /* count * 8 > SIZE_MAX */
            fz_first(&e, UF_ERR_OVERFLOW);
            if (overlap)
                e.may |= FZ_BIT(UF_ERR_ALIAS);
        } else if (overlap) {
            fz_first(&e, UF_ERR_ALIAS);
        }
    }
    char what[160];
    snprintf(what, sizeof what, "convert_host(dst_dtype=%d src_dtype=%d count=%zu)", (int)dd,
             (int)sd, count);
    fz_trace_call(what, &a);
    const uf_status st = uf_convert_host(fz_ptr(&a, dst), dd, fz_ptr(&a, src), sd, count);
    fz_arena_check(&a, st, what);
    fz_expect_status(&e, st, what);
    if (st == UF_OK && count > 0 && dd == UF_F64) {
        /* float64 holds every value: converting back gives the source. */
        unsigned char *back = (unsigned char *)malloc(count * ss);
        double *wide = (double *)malloc(count * sizeof *wide);
        FZ_REQUIRE(back && wide, "out of host memory");
        memcpy(wide, fz_ptr(&a, dst), count * sizeof *wide);
        FZ_REQUIRE(uf_convert_host(back, sd, wide, UF_F64, count) == UF_OK, "%s: back", what);
        for (size_t i = 0; i < count; ++i)
            FZ_REQUIRE(wide[i] != wide[i] ||
                           memcmp(back + i * ss, (const unsigned char *)fz_before(&a, src) + i * ss,
                                  ss) == 0,
                       "%s: element %zu does not survive the round trip through f64", what, i);
        free(back);
        free(wide);
    }
    fz_arena_free(&a);
}

static void copy_or_set(fz_bytes *b, int set, uf_stream stream)
{
    static const int kinds[] = {UF_HOST_TO_DEVICE,
                                UF_DEVICE_TO_HOST,
                                UF_DEVICE_TO_DEVICE,
                                UF_HOST_TO_HOST,
                                0,
                                5,
                                -1,
                                INT_MAX};
    const uint8_t k = fz_u8(b);
    const uf_copy_kind kind = (uf_copy_kind)kinds[k < 224 ? k % 4 : 4 + k % 4];
    const int value = (int)fz_u32(b);
    size_t huge = 0;
    const size_t bytes = decode_size(b, &huge);
    if (huge && !set && kind >= UF_HOST_TO_DEVICE && kind <= UF_HOST_TO_HOST)
        return; /* a valid copy that large cannot be backed here */
    if (huge && set)
        return;
    fz_expect e = {0, 0};
    const int kind_ok = set || (kind >= UF_HOST_TO_DEVICE && kind <= UF_HOST_TO_HOST);
    fz_arena a;
    memset(&a, 0, sizeof a);
    const int src = set ? -1 : fz_place(&a, b, "src", huge ? 64 : bytes, 1, 0, 1);
    const int dst = fz_place(&a, b, "dst", huge ? 64 : bytes, 1, 1, 1);
    fz_arena_build(&a);
    if (src >= 0 && !a.t[src].null)
        fz_fill(b, UF_BOOL, fz_ptr(&a, src), a.t[src].bytes);
    fz_arena_seal(&a);
    if (!kind_ok) {
        /* Whether 0 bytes is checked before the kind is not said. */
        if (bytes == 0)
            e.may |= FZ_BIT(UF_ERR_BAD_ARGUMENT);
        else
            fz_first(&e, UF_ERR_BAD_ARGUMENT);
    }
    if (bytes > 0 && (a.t[dst].null || (src >= 0 && a.t[src].null)))
        fz_first(&e, UF_ERR_NULL_POINTER);
    char what[160];
    snprintf(what, sizeof what, "%s(kind=%d value=%d bytes=%zu)", set ? "memset" : "memcpy",
             (int)kind, value, bytes);
    fz_trace_call(what, &a);
    const uf_status st =
        set ? uf_memset(fz_ptr(&a, dst), value, bytes, stream)
            : uf_memcpy(fz_ptr(&a, dst), src >= 0 ? fz_ptr(&a, src) : NULL, bytes, kind, stream);
    fz_arena_check(&a, st, what);
    fz_expect_status(&e, st, what);
    if (st == UF_OK && bytes > 0) {
        const unsigned char *got = (const unsigned char *)fz_ptr(&a, dst);
        for (size_t i = 0; i < bytes; ++i) {
            /* OpenMP copies are memmove: overlapping ranges are defined. */
            const unsigned char want =
                set ? (unsigned char)value : ((const unsigned char *)fz_before(&a, src))[i];
            FZ_REQUIRE(got[i] == want, "%s: byte %zu is %u, want %u", what, i, got[i], want);
        }
    }
    fz_arena_free(&a);
}

/* Helpers that take any value, and handles that may be NULL. */
static void helpers(fz_bytes *b)
{
    const int v = (int)fz_u32(b);
    const char *s = uf_status_string((uf_status)v);
    FZ_REQUIRE(s && (v < 0 || v > UF_ERR_BAD_ARGUMENT) == (strcmp(s, "unknown status") == 0),
               "uf_status_string(%d) = %s", v, s ? s : "NULL");
    static const size_t sizes[] = {0, 4, 2, 2, 8, 1};
    const size_t want = v >= 0 && v <= UF_BOOL ? sizes[v] : 0;
    FZ_REQUIRE(uf_dtype_size((uf_dtype)v) == want, "uf_dtype_size(%d)", v);
    FZ_REQUIRE(uf_backend_name((uf_backend)v) != NULL, "uf_backend_name(%d) is NULL", v);
    FZ_REQUIRE(uf_stream_destroy(NULL) == UF_ERR_BAD_ARGUMENT, "uf_stream_destroy(NULL)");
    FZ_REQUIRE(uf_event_destroy(NULL) == UF_ERR_BAD_ARGUMENT, "uf_event_destroy(NULL)");
    FZ_REQUIRE(uf_event_record(NULL, NULL) == UF_ERR_BAD_ARGUMENT, "uf_event_record(NULL)");
    FZ_REQUIRE(uf_malloc(NULL, (size_t)v) == UF_ERR_NULL_POINTER, "uf_malloc(NULL)");
    uf_event e0 = NULL, e1 = NULL;
    FZ_REQUIRE(uf_event_create(&e0) == UF_OK && uf_event_create(&e1) == UF_OK, "uf_event_create");
    float ms = -1;
    FZ_REQUIRE(uf_event_record(e0, NULL) == UF_OK && uf_event_record(e1, NULL) == UF_OK,
               "uf_event_record");
    FZ_REQUIRE(uf_event_elapsed_ms(e0, e1, NULL) == UF_ERR_NULL_POINTER, "elapsed_ms(NULL ms)");
    FZ_REQUIRE(uf_event_elapsed_ms(e0, NULL, &ms) == UF_ERR_BAD_ARGUMENT, "elapsed_ms(NULL end)");
    FZ_REQUIRE(uf_event_elapsed_ms(e0, e1, &ms) == UF_OK && ms >= 0, "elapsed_ms = %g", ms);
    FZ_REQUIRE(uf_event_destroy(e0) == UF_OK && uf_event_destroy(e1) == UF_OK, "event_destroy");
}

void fz_runtime(fz_bytes *b, uf_stream stream)
{
    switch (fz_u8(b) % 4) {
    case 0:
        convert(b);
        break;
    case 1:
        copy_or_set(b, 0, stream);
        break;
    case 2:
        copy_or_set(b, 1, stream);
        break;
    default:
        helpers(b);
        break;
    }
}
