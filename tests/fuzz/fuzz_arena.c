#include "fuzz_arena.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FZ_ASAN 1
#endif
#ifdef FZ_ASAN
#include <sanitizer/asan_interface.h>
#define FZ_POISON(p, n) __asan_poison_memory_region((p), (n))
#define FZ_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define FZ_POISON(p, n) ((void)(p), (void)(n))
#define FZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Guard bytes before the first tensor, after the last, and between tensors
 * placed apart. */
#define FZ_GAP 64
#define FZ_ALIGN 64

/* Roles of a byte. */
enum { ROLE_GUARD = 0, ROLE_IN = 1, ROLE_OUT = 2 };

static int64_t floor_to(int64_t v, int64_t m)
{
    const int64_t r = v % m;
    return r < 0 ? v - r - m : v - r;
}

static int64_t ceil_to(int64_t v, int64_t m)
{
    return -floor_to(-v, m);
}

static uint8_t guard_byte(size_t i)
{
    return (uint8_t)(0xa5u ^ (i * 13u));
}

int fz_place(fz_arena *a, fz_bytes *b, const char *name, size_t bytes, size_t align, int output,
             int nullable)
{
    FZ_REQUIRE(a->n < FZ_MAX_TENSORS, "too many tensors");
    fz_tensor *t = &a->t[a->n];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->bytes = bytes;
    t->align = align;
    t->output = output;
    const uint8_t how = fz_u8(b);
    /* An earlier tensor to be identical to, or to overlap. */
    int ref = a->n > 0 ? (int)(fz_u8(b) % a->n) : -1;
    if (ref >= 0 && a->t[ref].null)
        ref = -1;
    const int64_t end = a->n > 0 ? a->hi : 0;
    if (how >= 192 && how < 208 && nullable) {
        t->null = 1;
    } else if (how >= 208 && how < 224 && ref >= 0) {
        t->off = floor_to(a->t[ref].off, (int64_t)align); /* same start, if aligned */
    } else if (how >= 224 && ref >= 0) {
        /* Start anywhere from one tensor length before the other to its end. */
        const int64_t span = (int64_t)(bytes > a->t[ref].bytes ? bytes : a->t[ref].bytes) + 1;
        const int64_t shift = (int64_t)(fz_u16(b) % (2 * (uint64_t)span + 1)) - span;
        t->off = floor_to(a->t[ref].off + shift, (int64_t)align);
    } else if (how >= 176 && how < 192) {
        t->off = ceil_to(end, (int64_t)align); /* adjacent: touching, not overlapping */
    } else {
        /* Apart, at an element offset of 0..7 from a 64-byte boundary, so that
         * both the vector and the scalar paths are reached. */
        t->off = ceil_to(end, FZ_ALIGN) + FZ_GAP + (int64_t)((how % 8) * align);
    }
    if (!t->null) {
        if (a->n == 0 || t->off < a->lo)
            a->lo = t->off;
        if (a->n == 0 || t->off + (int64_t)bytes > a->hi)
            a->hi = t->off + (int64_t)bytes;
    }
    return a->n++;
}

int fz_place_null(fz_arena *a, const char *name, int output)
{
    FZ_REQUIRE(a->n < FZ_MAX_TENSORS, "too many tensors");
    fz_tensor *t = &a->t[a->n];
    memset(t, 0, sizeof *t);
    t->name = name;
    t->align = 1;
    t->output = output;
    t->null = 1;
    return a->n++;
}

void fz_arena_build(fz_arena *a)
{
    /* Shift by a multiple of the alignment so element alignment is kept. */
    const int64_t shift = ceil_to(FZ_GAP - a->lo, FZ_ALIGN);
    a->size = (size_t)ceil_to(a->hi + shift + FZ_GAP, FZ_ALIGN);
    a->base = (unsigned char *)aligned_alloc(FZ_ALIGN, a->size);
    a->before = (unsigned char *)malloc(a->size);
    a->role = (unsigned char *)calloc(a->size, 1);
    FZ_REQUIRE(a->base && a->before && a->role, "out of host memory (%zu bytes)", a->size);
    for (size_t i = 0; i < a->size; ++i)
        a->base[i] = guard_byte(i);
    for (int i = 0; i < a->n; ++i) {
        fz_tensor *t = &a->t[i];
        if (t->null)
            continue;
        t->off += shift;
        for (size_t k = 0; k < t->bytes; ++k)
            a->role[(size_t)t->off + k] |= t->output ? ROLE_OUT : ROLE_IN;
    }
}

void *fz_ptr(const fz_arena *a, int i)
{
    return a->t[i].null ? NULL : a->base + a->t[i].off;
}

const void *fz_before(const fz_arena *a, int i)
{
    return a->before + a->t[i].off;
}

int fz_overlap(const fz_arena *a, int i, int j)
{
    const fz_tensor *s = &a->t[i], *t = &a->t[j];
    if (s->null || t->null || !s->bytes || !t->bytes)
        return 0;
    return s->off < t->off + (int64_t)t->bytes && t->off < s->off + (int64_t)s->bytes;
}

int fz_same(const fz_arena *a, int i, int j)
{
    return !a->t[i].null && !a->t[j].null && a->t[i].off == a->t[j].off;
}

void fz_arena_seal(fz_arena *a)
{
    for (size_t i = 0; i < a->size; ++i)
        if (a->role[i] == ROLE_OUT)
            a->base[i] = 0xff;
    memcpy(a->before, a->base, a->size);
    FZ_POISON(a->base, a->size);
    for (int i = 0; i < a->n; ++i)
        if (!a->t[i].null)
            FZ_UNPOISON(a->base + a->t[i].off, a->t[i].bytes);
}

/* Names what byte i belongs to, for the report. */
static const char *owner(const fz_arena *a, size_t i)
{
    for (int k = 0; k < a->n; ++k) {
        const fz_tensor *t = &a->t[k];
        if (!t->null && (int64_t)i >= t->off && (int64_t)i < t->off + (int64_t)t->bytes)
            return t->name;
    }
    return "guard";
}

void fz_arena_check(const fz_arena *a, uf_status st, const char *what)
{
    FZ_UNPOISON(a->base, a->size);
    if (memcmp(a->base, a->before, a->size) == 0)
        return;
    for (size_t i = 0; i < a->size; ++i) {
        if (a->base[i] == a->before[i])
            continue;
        FZ_REQUIRE(st == UF_OK, "%s returned %s but changed byte %zu (%s)", what,
                   uf_status_string(st), i, owner(a, i));
        FZ_REQUIRE(a->role[i] & ROLE_OUT, "%s changed byte %zu of %s, which it may not write", what,
                   i, owner(a, i));
    }
}

void fz_arena_free(fz_arena *a)
{
    if (a->base)
        FZ_UNPOISON(a->base, a->size);
    free(a->base);
    free(a->before);
    free(a->role);
    memset(a, 0, sizeof *a);
}
