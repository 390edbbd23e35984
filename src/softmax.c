/*
 * uf_softmax_forward / uf_softmax_backward: argument checks, the choice of
 * kernel path and launch shape from the device's limits, and the launch.
 */
#include <float.h>
#include <math.h>

#include "checks.h"
#include "kernels/softmax_args.h"

typedef uf_status (*uf_softmax_launcher)(const uf_launch *, const uf_softmax_args *);

enum {
    PATH_REG,
    PATH_REG_WIDE,
    PATH_REG_NARROW,
    PATH_REG_ROOMY,
    PATH_SPAN,
    PATH_SPAN_KEPT,
    PATH_STREAM,
    PATH_SPLIT_STATS,
    PATH_SPLIT_APPLY,
    NPATHS
};

#if UF_SOFTMAX_HAS_NARROW
#define UF_SM_NARROW(pass, dt, vec) uf_softmax_##pass##_reg_narrow_##dt##_v##vec##_launch
#else
#define UF_SM_NARROW(pass, dt, vec) uf_softmax_##pass##_reg_##dt##_v##vec##_launch
#endif
#if UF_SOFTMAX_HAS_ROOMY
#define UF_SM_ROOMY(pass, dt, vec) uf_softmax_##pass##_reg_roomy_##dt##_v##vec##_launch
#else
#define UF_SM_ROOMY(pass, dt, vec) uf_softmax_##pass##_reg_##dt##_v##vec##_launch
#endif
/* Indexed [backward][dtype - 1][access: element-wide, 16-byte, 8-byte][path]. */
#define UF_SM_PATHS(pass, dt, vec)                                                                 \
    {                                                                                              \
        uf_softmax_##pass##_reg_##dt##_v##vec##_launch,                                            \
            uf_softmax_##pass##_reg_wide_##dt##_v##vec##_launch, UF_SM_NARROW(pass, dt, vec),      \
            UF_SM_ROOMY(pass, dt, vec), uf_softmax_##pass##_span_##dt##_v##vec##_launch,           \
            uf_softmax_##pass##_span_kept_##dt##_v##vec##_launch,                                  \
            uf_softmax_##pass##_stream_##dt##_v##vec##_launch,                                     \
            uf_softmax_##pass##_split_stats_##dt##_v##vec##_launch,                                \
            uf_softmax_##pass##_split_apply_##dt##_v##vec##_launch                                 \
    }
#define UF_SM_ROW(pass, dt, vec, vec8)                                                             \
    {                                                                                              \
        UF_SM_PATHS(pass, dt, 1), UF_SM_PATHS(pass, dt, vec), UF_SM_PATHS(pass, dt, vec8)          \
    }
/* The 8-byte kernels where the layer builds them (instantiate_access8.h);
 * elsewhere, and for f64, the column repeats the element-wide kernels,
 * which launch_here never picks there. */
#if UF_ACCESS8_KERNELS
#define UF_SM_V8(vec) vec
#else
#define UF_SM_V8(vec) 1
#endif
static const uf_softmax_launcher launchers[2][4][3][NPATHS] = {
    {UF_SM_ROW(fwd, f32, 4, UF_SM_V8(2)), UF_SM_ROW(fwd, f16, 8, UF_SM_V8(4)),
     UF_SM_ROW(fwd, bf16, 8, UF_SM_V8(4)), UF_SM_ROW(fwd, f64, 2, 1)},
    {UF_SM_ROW(bwd, f32, 4, UF_SM_V8(2)), UF_SM_ROW(bwd, f16, 8, UF_SM_V8(4)),
     UF_SM_ROW(bwd, bf16, 8, UF_SM_V8(4)), UF_SM_ROW(bwd, f64, 2, 1)}};

#if UF_SOFTMAX_HAS_SHIFTED
/* The shifted register kernels, indexed [backward][dtype - 1][ragged
 * tensor][regular, wide, roomy] (f64 has none; the fp32 forward none for
 * ragged tensors: UF_SOFTMAX_RAGGED). */
#define UF_SM_SHIFTED(pass, as, dt, vec)                                                           \
    {                                                                                              \
        uf_softmax_##pass##_reg_##as##_##dt##_v##vec##_launch,                                     \
            uf_softmax_##pass##_reg_wide_##as##_##dt##_v##vec##_launch,                            \
            uf_softmax_##pass##_reg_roomy_##as##_##dt##_v##vec##_launch                            \
    }
#define UF_SM_SHIFTED_BOTH(pass, dt, vec)                                                          \
    {                                                                                              \
        UF_SM_SHIFTED(pass, shifted, dt, vec), UF_SM_SHIFTED(pass, ragged, dt, vec)                \
    }
static const uf_softmax_launcher shifted_launchers[2][3][2][3] = {
    {{UF_SM_SHIFTED(fwd, shifted, f32, 4), {NULL, NULL, NULL}},
     UF_SM_SHIFTED_BOTH(fwd, f16, 8),
     UF_SM_SHIFTED_BOTH(fwd, bf16, 8)},
    {UF_SM_SHIFTED_BOTH(bwd, f32, 4), UF_SM_SHIFTED_BOTH(bwd, f16, 8),
     UF_SM_SHIFTED_BOTH(bwd, bf16, 8)}};
#endif

/* One block per row rereads its row from L2 only while the rows in flight
 * fit there, and fills the device only with enough rows; longer or fewer
 * rows are split into chunks across blocks. */
#define UF_STREAM_MAX_ROW_BYTES (128 * 1024)
#define UF_STREAM_MIN_ROWS_PER_MP 2
/* Threads a row may take on the narrow register path (softmax_args.h),
 * and in the backward of rows stored in their compute type. Measured on
 * the 2-core machine against the regular path: f32 rows of 16-64 keys
 * 1.5-7x faster forward, 16-bit 1.2-6x; 8 shares lost 25% forward (f32
 * and 16-bit S = 128) and 10% in the 16-bit backward (its conversions run
 * per thread), while the f32 backward gained 2x at 8 and 1.4x at 16
 * shares (S = 128, 256). */
#define UF_SOFTMAX_NARROW_THREADS 4
#define UF_SOFTMAX_NARROW_THREADS_BWD 16
/* The backward takes a roomy kernel only where it saves at least one
 * register slot in this many (launch_here). */
#define UF_SOFTMAX_ROOMY_BWD_SHARE 20
/* Accesses per thread in one chunk of the split path. */
#define UF_SPLIT_ACCESSES 4

static int is_softmax_dtype(uf_dtype d)
{
    return d == UF_F32 || d == UF_F16 || d == UF_BF16 || d == UF_F64;
}

/* Checks what forward and backward share; sets the element count, the
 * byte count of one tensor, and the row geometry. */
static uf_status check_common(const uf_softmax_desc *d, int64_t *count, size_t *bytes)
{
    if (!d)
        return UF_ERR_NULL_POINTER;
    if (!is_softmax_dtype(d->dtype))
        return UF_ERR_BAD_DTYPE;
    if (d->ndim < 1 || d->ndim > UF_MAX_DIMS)
        return UF_ERR_BAD_SHAPE;
    uf_status st = uf_shape_count(d->shape, d->ndim, count);
    if (st != UF_OK)
        return st;
    st = uf_byte_count(*count, uf_dtype_size(d->dtype), bytes);
    if (st != UF_OK)
        return st;
    /* The scale must be finite in the compute type too (fp32 below fp64). */
    if (!isfinite(d->scale) || (d->dtype != UF_F64 && fabs(d->scale) > FLT_MAX))
        return UF_ERR_BAD_VALUE;
    return UF_OK;
}

/* Validates the mask against x and fills the kernel's broadcast map: the
 * leading (row) dimensions, collapsed where adjacent ones step alike. */
static uf_status check_mask(const uf_softmax_desc *d, uf_softmax_args *a, size_t *mask_bytes)
{
    *mask_bytes = 0;
    a->row_dims = 0;
    switch (d->mask_dtype) {
    case UF_DTYPE_NONE:
        a->mask_kind = UF_MASK_NONE;
        return UF_OK;
    case UF_BOOL:
        a->mask_kind = UF_MASK_BOOL;
        break;
    case UF_F32:
        a->mask_kind = d->dtype == UF_F32 ? UF_MASK_ADD_SAME : UF_MASK_ADD_F32;
        break;
    default:
        if (d->mask_dtype != d->dtype)
            return UF_ERR_BAD_DTYPE;
        a->mask_kind = UF_MASK_ADD_SAME;
        break;
    }
    const int mn = d->mask_ndim, n = d->ndim, lead = mn >= 1 && mn <= n ? n - mn : 0;
    if (mn < 1 || mn > n)
        return UF_ERR_BAD_SHAPE;
    for (int i = 0; i < mn; ++i) {
        const int64_t me = d->mask_shape[i], xe = d->shape[lead + i];
        if (me < 0 || (me != 1 && me != xe))
            return UF_ERR_BAD_SHAPE;
    }
    if (d->mask_shape[mn - 1] != d->shape[n - 1])
        return UF_ERR_BAD_SHAPE; /* keys are never broadcast: rows are read contiguously */
    int64_t mcount = 0;
    uf_status st = uf_shape_count(d->mask_shape, mn, &mcount);
    if (st == UF_OK)
        st = uf_byte_count(mcount, uf_dtype_size(d->mask_dtype), mask_bytes);
    if (st != UF_OK)
        return st;
    if (mcount == 0)
        return UF_OK; /* x is empty too (no launch); its extents may overflow the strides */

    /* Mask element strides of x's row dimensions (all but the last). */
    int64_t stride = d->shape[n - 1];
    int64_t mstride[UF_MAX_DIMS];
    for (int i = n - 2; i >= 0; --i) {
        const int64_t me = i >= lead ? d->mask_shape[i - lead] : 1;
        mstride[i] = me == 1 ? 0 : stride;
        stride *= me;
    }
    for (int i = 0; i < n - 1; ++i) {
        const int64_t ext = d->shape[i];
        if (ext == 1)
            continue;
        const int k = a->row_dims;
        if (k > 0 && a->mask_stride[k - 1] == mstride[i] * ext) {
            a->row_extent[k - 1] *= ext;
            a->mask_stride[k - 1] = mstride[i];
        } else {
            a->row_extent[k] = ext;
            a->mask_stride[k] = mstride[i];
            a->row_dims = k + 1;
        }
    }
    return UF_OK;
}

static int next_pow2(int64_t n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

/* The forward register path runs a persistent grid of this many times the
 * blocks the device holds at once, each block looping over rows: fewer
 * block launches, and a block's next row starts while others finish
 * (measured on the H200: +2 to +6 points of copy bandwidth; the backward,
 * which keeps more bytes in flight per thread, measured better without). */
#define UF_SOFTMAX_FWD_WAVES 4

static int64_t resident_waves(const uf_device_limits *lim, int threads)
{
    const int per_mp = lim->max_threads_per_mp / threads;
    return (int64_t)lim->multiprocessors * (per_mp > 0 ? per_mp : 1) * UF_SOFTMAX_FWD_WAVES;
}

/* A tile of one head's rows holds about this many bytes of x (forward
 * register path with a mask broadcast over heads, order_rows): long enough
 * that each head's part of the rows in flight is one long run of memory,
 * short enough that all heads pass a mask row within a few MiB of
 * traffic (16 heads: 2 MiB of x and y), which L2 still holds. */
#define UF_SOFTMAX_TILE_BYTES 65536

/* Sets the order in which the forward register path's blocks take rows
 * (softmax_args.h): with a mask broadcast over a row dimension (the heads
 * of x [B, H, Sq, Sk] with a mask [B, 1, Sq, Sk]), the heads that share a
 * mask row take it one after another instead of a head's Sq rows apart,
 * where L2 lost the mask row in between (Nsight Compute on the H200: 9 to
 * 10 of 16 heads read it again from DRAM). Rows stay in order where a
 * block's rows would straddle two heads, or the blocks do not fit 31 bits. */
static void order_rows(uf_softmax_args *a, int64_t rows_per_block, int esize)
{
    a->order_heads = 0;
    if (!UF_SOFTMAX_ORDER_ROWS(esize) || a->mask_kind == UF_MASK_NONE)
        return;
    int d = a->row_dims - 1;
    int64_t inner = 1;
    while (d >= 0 && a->mask_stride[d] != 0)
        inner *= a->row_extent[d--];
    if (d < 0 || inner == 1 || inner % rows_per_block != 0 || a->row_extent[d] > INT32_MAX ||
        a->rows / rows_per_block > INT32_MAX)
        return;
    const int64_t per_head = inner / rows_per_block; /* blocks */
    int64_t tile = UF_SOFTMAX_TILE_BYTES / (a->sk * esize) / rows_per_block;
    tile = tile < 1 ? 1 : tile < per_head ? tile : per_head;
    while (per_head % tile != 0)
        --tile;
    a->order_heads = (int)a->row_extent[d];
    a->order_tile = (uint32_t)tile;
    a->order_tiles = (uint32_t)(per_head / tile);
    a->by_tile = uf_divisor_of(a->order_tile);
    a->by_heads = uf_divisor_of((uint32_t)a->order_heads);
    a->by_tiles = uf_divisor_of(a->order_tiles);
}

/* The threads a row of `need` threads' shares takes on the register path:
 * a power of two up to a warp, whole warps beyond. */
static int64_t round_threads(int64_t need, int warp)
{
    return need <= warp ? next_pow2(need) : (need + warp - 1) / warp * warp;
}

/* Threads a row takes where a warp holds several rows: `need` at the
 * path's share, `accesses` the row's accesses, `vec` their bytes where
 * wider than an element (16 or 8), else 0. Where a
 * group's items interleave (GPUs), a thread that holds a whole row of more
 * than two 16-byte accesses reads it at the row's stride, half a 32-byte
 * sector an access; two threads a row, which split it evenly, read whole
 * sectors: fp32 rows of 16 keys forward 69 -> 95% of copy bandwidth on an
 * H100, 64 -> 74-80% on an H200 (2026-12-05). Rows of an odd number of
 * accesses keep one thread in the forward (fp32, 12 keys: 70 -> 57-62% on
 * the H200 with two). The backward, which reads two tensors a row, gains
 * from at most two accesses a thread in general (H200, fp32: 12 keys 85 ->
 * 96%, 16 keys 78 -> 102%, 32 keys 80 -> 101%); the forward does not
 * (16-bit rows of 16 and 32 keys lost 8 to 30 points on the H100: the added
 * lanes' accesses are idle work). */
static int row_group(int backward, int64_t need, int64_t accesses, int vec)
{
    const int group = next_pow2(need);
    if (!UF_GROUP_ITEMS_INTERLEAVED || group > 2)
        return group;
    if (!vec) {
        /* Element-wide accesses (a row a whole number of neither 16- nor
         * 8-byte accesses) go one at a time: at most 7 keys a thread, up to 4
         * threads a row (H200, S = 10-28: 16-bit forward 11-19 -> 21-29%
         * of copy, fp32 S = 10, 14, 18 forward 18-33 -> 40-45%; one thread
         * for 10-14 keys, or 8 threads for 36 or 44, measured slower). */
        const int per_7_keys = next_pow2((accesses + 6) / 7);
        const int want = per_7_keys < 4 ? per_7_keys : 4;
        return group > want ? group : want;
    }
    if (vec == 8) {
        /* 8-byte accesses: at most 4 a thread in the backward, 4.5 on
         * average in the forward (H200, 2026-12-06, groups of 1 to 8 threads
         * tried: fp32 rows of 10-30 keys forward and backward 24-54% less
         * time than one thread or the 16-byte rule below gave, 16-bit
         * backward rows of 12 and 20 keys 14-21% less; fp32 forward rows of
         * 18 keys lost 21% with 4 threads). */
        const int want =
            backward ? next_pow2((accesses + 3) / 4) : next_pow2((2 * accesses + 8) / 9);
        return group > want ? group : want;
    }
    const int least = backward ? next_pow2((accesses + 1) / 2)
                      : group == 1 && accesses > 2 && accesses % 2 == 0 ? 2
                                                                        : 1;
    return group > least ? group : least;
}

/* Runs the split path: partial statistics per chunk into stream-ordered
 * scratch, then every chunk's block combines its row's partials. */
static uf_status launch_split(const uf_softmax_launcher *paths, uf_softmax_args *a, uf_launch l,
                              int64_t width, int acc_size)
{
    a->chunk = (int64_t)l.threads * width * UF_SPLIT_ACCESSES;
    a->nchunks = (a->sk + a->chunk - 1) / a->chunk;
    l.blocks = a->rows * a->nchunks;
    size_t bytes = 0;
    uf_status st = uf_byte_count(l.blocks, 2 * (size_t)acc_size, &bytes);
    if (st == UF_OK)
        st = ufb_malloc_async(&a->partial, bytes, l.stream);
    if (st != UF_OK)
        return st;
    st = paths[PATH_SPLIT_STATS](&l, a);
    if (st == UF_OK)
        st = paths[PATH_SPLIT_APPLY](&l, a);
    const uf_status freed = ufb_free_async(a->partial, l.stream);
    return st != UF_OK ? st : freed;
}

/* One launch of the span path with `shares` shared shares (forward):
 * scratch per chunk two compute values, then per row a counter, zeroed.
 * UF_ERR_LAUNCH without launching when the device cannot hold nchunks
 * blocks at once. */
static uf_status launch_span_once(const uf_softmax_launcher *paths, uf_softmax_args *a, uf_launch l,
                                  int shares, int64_t per_share, int acc_size)
{
    a->shares = shares;
    a->chunk = per_share * (shares + 1);
    a->nchunks = (a->sk + a->chunk - 1) / a->chunk;
    l.blocks = a->rows * a->nchunks;
    l.group_blocks = a->nchunks;
    size_t partial_bytes = 0, count_bytes = 0, bytes = 0;
    uf_status st = uf_byte_count(l.blocks, 2 * (size_t)acc_size, &partial_bytes);
    if (st == UF_OK)
        st = uf_byte_count(a->rows, sizeof(unsigned), &count_bytes);
    if (st == UF_OK && partial_bytes > SIZE_MAX - count_bytes)
        st = UF_ERR_OVERFLOW;
    if (st != UF_OK)
        return st;
    bytes = partial_bytes + count_bytes;
    st = ufb_malloc_async(&a->partial, bytes, l.stream);
    if (st != UF_OK)
        return st;
    a->arrived = (unsigned *)((char *)a->partial + partial_bytes);
    st = ufb_memset(a->arrived, 0, count_bytes, l.stream);
    if (st == UF_OK)
        st = paths[shares ? PATH_SPAN_KEPT : PATH_SPAN](&l, a);
    const uf_status freed = ufb_free_async(a->partial, l.stream);
    return st != UF_OK ? st : freed;
}

/* Runs the span path: a row's chunks held by nchunks blocks that run at
 * once and exchange partial statistics through scratch. UF_ERR_LAUNCH
 * without launching when the device cannot hold a row's blocks at once.
 *
 * Blocks of UF_SOFTMAX_SPAN_THREADS (at most the device's largest block).
 * The blocks of a row wait for each other between their loads and their
 * stores; the more blocks a multiprocessor holds, the more of them are
 * loading or storing while others wait: on the H200 256 threads (four
 * blocks a multiprocessor) measured best, fp32 rows of 1 Mi keys forward
 * 46% of copy bandwidth against 40% with 512 and 27% with 1024.
 *
 * Chunks take the most shared shares that still leave at least as many
 * blocks as the device holds by threads (longer chunks, fewer exchanges
 * per byte; fewer blocks than that leave multiprocessors idle), and others
 * where a row's blocks would not fit the device at once with those. */
static uf_status launch_span(const uf_softmax_launcher *paths, uf_softmax_args *a, uf_launch l,
                             int backward, int access16, const uf_device_limits *lim,
                             int max_threads, int esize, int acc_size)
{
    l.threads = UF_SOFTMAX_SPAN_THREADS < max_threads ? UF_SOFTMAX_SPAN_THREADS : max_threads;
    a->group = l.threads;
    const int64_t per_share = (int64_t)l.threads * (UF_SOFTMAX_SPAN_BYTES(esize) / acc_size);
    const int most =
        backward ? UF_SOFTMAX_SPAN_SHARED_BWD(esize, access16) : UF_SOFTMAX_SPAN_SHARED(esize);
    const int64_t slots = (int64_t)lim->multiprocessors * (lim->max_threads_per_mp / l.threads);
    int shares = most;
    while (shares > 0 &&
           a->rows * ((a->sk + per_share * (shares + 1) - 1) / (per_share * (shares + 1))) < slots)
        --shares;
    /* Then more shares, then fewer (a kept kernel's shared memory may
     * leave fewer of its blocks resident than the plain kernel's). */
    const int chosen = shares;
    for (;;) {
        const uf_status st = launch_span_once(paths, a, l, shares, per_share, acc_size);
        if (st != UF_ERR_LAUNCH)
            return st;
        shares = shares >= chosen && shares < most ? shares + 1
                 : shares > chosen                 ? chosen - 1
                                                   : shares - 1;
        if (shares < 0)
            return st;
    }
}

/* The register path's launcher: `path` one of PATH_REG, PATH_REG_WIDE,
 * PATH_REG_ROOMY and PATH_REG_NARROW, its shifted kernel where `shift` is
 * 1, its ragged-tensor kernel where 2 (launch_here). */
static uf_softmax_launcher register_launcher(const uf_softmax_launcher *paths, int path, int shift,
                                             int backward, uf_dtype dtype)
{
#if UF_SOFTMAX_HAS_SHIFTED
    if (shift)
        return shifted_launchers[backward][dtype - 1][shift - 1][path == PATH_REG_WIDE    ? 1
                                                                 : path == PATH_REG_ROOMY ? 2
                                                                                          : 0];
#endif
    (void)shift;
    (void)backward;
    (void)dtype;
    return paths[path];
}

/* Whether rows whose length would leave them element-wide take 16-byte
 * accesses shifted to the tensor's access boundaries (the shifted kernels,
 * softmax_forward.h and softmax_backward.h) on a register path: on GPUs,
 * where an element-wide row loads a key an instruction (16-bit rows of
 * 130 to 257 keys at 21 to 41% of copy on the H200), with every pointer
 * 16-byte aligned, and in the forward no mask of x's type (read as whole
 * accesses, which its rows' own offsets would misalign; read key by key,
 * tried, it cost the other shifted rows 4-6% in fp32 on an H100). */
static int may_shift_rows(const uf_softmax_args *a, int esize, int align)
{
    return UF_SOFTMAX_HAS_SHIFTED && esize < 8 && align >= 16 && a->mask_kind != UF_MASK_ADD_SAME;
}

/* Chooses the path and launch shape from the row length and the device,
 * then launches. `align`: the alignment in bytes (1 to 16) every pointer
 * has; `shifting`: whether rows may be shifted (may_shift_rows). */
static uf_status launch_here(int backward, const uf_softmax_desc *d, uf_softmax_args *a, int align,
                             uf_stream stream, int shifting)
{
    uf_device_limits lim;
    uf_status st = ufb_device_limits(&lim);
    if (st != UF_OK)
        return st;
    const int esize = (int)uf_dtype_size(d->dtype);
    const int acc_size = d->dtype == UF_F64 ? 8 : 4;
    /* The widest access every row allows: 16 bytes, else 8 where the layer
     * builds such kernels (a 16-bit row of 4 keys more than a multiple of
     * 8, an fp32 row of 2 more than a multiple of 4), else 16 bytes on
     * shifted rows where they may be (may_shift_rows), else an element. */
    int access = esize;
    int shift = 0;
    if (align >= 16 && a->sk * esize % 16 == 0)
        access = 16;
    else if (UF_ACCESS8_KERNELS && esize < 8 && align >= 8 && a->sk * esize % 8 == 0)
        access = 8;
    else if (shifting && may_shift_rows(a, esize, align)) {
        /* 2: a ragged tensor, which ends inside an access (softmax_device.h,
         * UF_SOFTMAX_PAST_END), in kernels of its own: their rows past the
         * last access boundary, read key by key, cost the others spills
         * (an H100: 16-bit forward rows of 1001-4095 keys 10-15% more
         * time, backward rows 3-7%). */
        shift = a->rows * a->sk % (16 / esize) == 0  ? 1
                : UF_SOFTMAX_RAGGED(backward, esize) ? 2
                                                     : 0;
        access = shift ? 16 : esize;
    }
    const int vec = access > esize;
    const int column = access == 16 ? 1 : vec ? 2 : 0; /* of launchers */
    const int64_t width = access / esize;
    const int warp = lim.warp_size;
    const int max_threads = lim.max_threads_per_block < UF_BLOCK_LIMIT
                                ? lim.max_threads_per_block / warp * warp
                                : UF_BLOCK_LIMIT;
    /* A shifted row starts up to width - 1 keys into its first access. */
    const int64_t accesses = (a->sk + (shift ? 2 : 1) * (width - 1)) / width;
    int64_t per_thread = (UF_SOFTMAX_REG_BYTES / acc_size) / width; /* accesses */
    int64_t need = (accesses + per_thread - 1) / per_thread;        /* threads per row */
    /* 16-bit rows take the wide register path (twice the row per thread:
     * half the threads and reduction steps per element, 64 bytes of loads in
     * flight per thread) where it measured faster on the H200: a forward row
     * that needs more than 4 threads at the narrow share (S >= 128; with a
     * mask or the causal rule S = 128 to 512 gained 10 to 18 points of copy
     * bandwidth, S >= 1024 up to 40; S = 16 and 32 lost up to 25), a
     * backward row that needs more than half the largest block but no more
     * than all of it (S = 16384: 89 -> 102%; S = 1024 to 4096 lost up to 1
     * point). */
    const int wide = esize <= UF_SOFTMAX_WIDE_MAX_ESIZE &&
                     (backward ? 2 * need > max_threads && need <= max_threads : need > 4);
    if (wide) {
        per_thread = (UF_SOFTMAX_WIDE_BYTES / acc_size) / width;
        need = (accesses + per_thread - 1) / per_thread;
    }
    int reg_path = wide ? PATH_REG_WIDE : PATH_REG;
    /* Where a thread's share is longer than a GPU thread's (CPUs), short
     * rows take the narrow path (softmax_args.h). */
    const int64_t narrow_per_thread = (UF_SOFTMAX_NARROW_BYTES / acc_size) / width;
    const int64_t narrow_need = (accesses + narrow_per_thread - 1) / narrow_per_thread;
    const int narrow_max =
        backward && esize == acc_size ? UF_SOFTMAX_NARROW_THREADS_BWD : UF_SOFTMAX_NARROW_THREADS;
    if (UF_SOFTMAX_HAS_NARROW && narrow_need <= narrow_max) {
        reg_path = PATH_REG_NARROW;
        per_thread = narrow_per_thread;
        need = narrow_need;
    }
    /* One access more a thread where that leaves a row fewer register
     * slots, its threads rounded to a power of two up to a warp and to
     * warps beyond (softmax_args.h); in the backward at least a twentieth
     * fewer, UF_SOFTMAX_ROOMY_BWD_SHARE (16-bit rows of 4100 keys, 3%
     * fewer slots: 70 -> 65% of copy on the H200, 83 -> 80% on an H100,
     * where every other cell measured gained or held). Not for rows of a
     * few threads, whose groups row_group tunes. */
    const int64_t roomy_per_thread =
        UF_SOFTMAX_ROOMY_BASE_BYTES(backward, esize) / acc_size / width + 1;
    if (UF_SOFTMAX_HAS_ROOMY && reg_path != PATH_REG_NARROW && need > 4 &&
        roomy_per_thread == per_thread + 1) {
        const int64_t roomy_need = (accesses + roomy_per_thread - 1) / roomy_per_thread;
        const int64_t slots = round_threads(need, warp) * per_thread;
        const int64_t roomy_slots = round_threads(roomy_need, warp) * roomy_per_thread;
        if (roomy_need <= max_threads &&
            (need > max_threads || (backward ? UF_SOFTMAX_ROOMY_BWD_SHARE * roomy_slots <=
                                                   (UF_SOFTMAX_ROOMY_BWD_SHARE - 1) * slots
                                             : roomy_slots < slots))) {
            reg_path = PATH_REG_ROOMY;
            per_thread = roomy_per_thread;
            need = roomy_need;
        }
    }
    const uf_softmax_launcher *paths = launchers[backward][d->dtype - 1][column];
    uf_launch l = {0, 0, stream, 0, 0};
    if (need <= warp) {
        /* Up to a warp per row, several rows per block. */
        a->group = row_group(backward, need, accesses, vec ? access : 0);
        l.threads = 4 * warp <= max_threads ? 4 * warp : warp;
        const int rows_per_block = l.threads / a->group;
        l.blocks = (a->rows + rows_per_block - 1) / rows_per_block;
        l.max_grid = backward ? 0 : resident_waves(&lim, l.threads);
        order_rows(a, rows_per_block, esize);
        return register_launcher(paths, reg_path, shift, backward, d->dtype)(&l, a);
    }
    /* A row that fits a block's registers stays there, whatever its length:
     * with every load of a thread in flight together (softmax_forward_reg.h)
     * an f32 row of 16384 held by 1024 threads measured 80 -> 98% of copy
     * bandwidth with a mask and +0 to +2 without, against streaming it. */
    if (need <= max_threads) {
        /* A block per row, the row still in registers. */
        l.threads = (int)((need + warp - 1) / warp * warp);
        a->group = l.threads;
        l.blocks = a->rows;
        l.max_grid = backward ? 0 : resident_waves(&lim, l.threads);
        order_rows(a, 1, esize);
        return register_launcher(paths, reg_path, shift, backward, d->dtype)(&l, a);
    }
    /* The span, streaming and split paths take no shifted rows. */
    if (shift)
        return launch_here(backward, d, a, align, stream, 0);
    /* Longer rows stay in registers too, spread over blocks that run at
     * once, where the device holds enough of them. */
    st = launch_span(paths, a, l, backward, access == 16, &lim, max_threads, esize, acc_size);
    if (st != UF_ERR_LAUNCH)
        return st;
    l.threads = max_threads;
    a->group = l.threads;
    const int stream_ok = a->sk * esize <= UF_STREAM_MAX_ROW_BYTES &&
                          a->rows >= (int64_t)UF_STREAM_MIN_ROWS_PER_MP * lim.multiprocessors;
    if (stream_ok) {
        l.blocks = a->rows;
        return paths[PATH_STREAM](&l, a);
    }
    return launch_split(paths, a, l, width, acc_size);
}

/* launch_here on the stream's device. */
static uf_status launch(int backward, const uf_softmax_desc *d, uf_softmax_args *a, int align,
                        uf_stream stream)
{
    uf_device_scope scope;
    uf_status st = ufb_scope_enter(stream, &scope);
    if (st == UF_OK)
        st = launch_here(backward, d, a, align, stream, 1);
    return ufb_scope_leave(&scope, st);
}

static void fill_rows(const uf_softmax_desc *d, uf_softmax_args *a, int64_t count)
{
    a->sk = d->shape[d->ndim - 1];
    a->sq = d->ndim >= 2 ? d->shape[d->ndim - 2] : 1;
    a->rows = count / a->sk;
    a->scale = d->scale;
    a->causal = d->causal != 0;
    /* Quotients of row indices by multiply and shift (softmax_args.h); the
     * mask's row dimensions are filled by check_mask, before. */
    a->rows_fast = a->rows <= INT32_MAX;
    if (!a->rows_fast)
        return;
    a->by_sq = uf_divisor_of((uint32_t)a->sq);
    for (int k = 0; k < a->row_dims; ++k) {
        const int d = a->row_dims - 1 - k;
        a->inner_extent[k] = (uint32_t)a->row_extent[d];
        a->by_inner[k] = uf_divisor_of(a->inner_extent[k]);
        a->inner_stride[k] = a->mask_stride[d];
    }
}

uf_status uf_softmax_forward(const uf_softmax_desc *desc, const void *x, const void *mask, void *y,
                             uf_stream stream)
{
    int64_t count = 0;
    size_t bytes = 0, mask_bytes = 0;
    uf_softmax_args a = {0};
    uf_status st = check_common(desc, &count, &bytes);
    if (st == UF_OK)
        st = check_mask(desc, &a, &mask_bytes);
    if (st != UF_OK || count == 0)
        return st;
    if (!x || !y || (a.mask_kind != UF_MASK_NONE && !mask))
        return UF_ERR_NULL_POINTER;
    if (!uf_same_or_disjoint(x, y, bytes) || uf_ranges_overlap(y, bytes, mask, mask_bytes))
        return UF_ERR_ALIAS;
    fill_rows(desc, &a, count);
    a.x = x;
    a.x2 = a.mask_kind != UF_MASK_NONE ? mask : NULL;
    a.out = y;
    int align = uf_alignment16(x) < uf_alignment16(y) ? uf_alignment16(x) : uf_alignment16(y);
    if (a.mask_kind == UF_MASK_ADD_SAME && uf_alignment16(mask) < align)
        align = uf_alignment16(mask);
    return launch(0, desc, &a, align, stream);
}

uf_status uf_softmax_backward(const uf_softmax_desc *desc, const void *y, const void *dy, void *dx,
                              uf_stream stream)
{
    int64_t count = 0;
    size_t bytes = 0;
    uf_softmax_args a = {0};
    uf_status st = check_common(desc, &count, &bytes);
    if (st != UF_OK || count == 0)
        return st;
    if (!y || !dy || !dx)
        return UF_ERR_NULL_POINTER;
    if (!uf_same_or_disjoint(dx, dy, bytes) || !uf_same_or_disjoint(dx, y, bytes))
        return UF_ERR_ALIAS;
    fill_rows(desc, &a, count);
    a.x = y;
    a.x2 = dy;
    a.out = dx;
    int align = uf_alignment16(y) < uf_alignment16(dy) ? uf_alignment16(y) : uf_alignment16(dy);
    if (uf_alignment16(dx) < align)
        align = uf_alignment16(dx);
    return launch(1, desc, &a, align, stream);
}
