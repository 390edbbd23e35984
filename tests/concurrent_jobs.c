/* The job set of concurrent_jobs.h: specs, inputs, runs, workers. */
#include "concurrent_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation_ref.h"
#include "softmax_cases.h"

typedef enum job_kind {
    SM_FWD,
    SM_BWD,
    ACT_FWD,
    ACT_BWD,
    DROP_FWD,
    DROP_BWD,
    EPI_FWD,
    EPI_BWD,
    NORM_FWD,
    NORM_BWD
} job_kind;

struct job_spec {
    job_kind kind;
    uf_dtype dtype;
    int ndim;
    int64_t shape[4]; /* softmax: x; activation: {count}; epilogue, norm: {rows, cols} */
    uf_dtype mask_dtype;
    int mask_ndim;
    int64_t mask_shape[4];
    int causal;
    double p;     /* dropout probability */
    int keep;     /* activation forward: ask for keep_bits */
    int in_place; /* output 0 overwrites the input it replaces */
    /* Epilogue operands; for the norms bias and scale mean a bias and a
     * weight vector, and a residual the fused add. */
    uf_operand bias, scale, residual;
    uf_norm_kind norm;
};

/* Every dtype in each family, and each softmax path: several rows per
 * warp, a row per block (f16 [6, 1500]), the split row with its
 * stream-ordered scratch (f32 [1, 1, 20000]), and the streamed row where
 * the device has at most 4 multiprocessors (f64 [8, 3000]; CI's CPU). The
 * epilogue and norm backwards include their column sums and scratch. */
static const job_spec specs[] = {
    {.kind = SM_FWD, .dtype = UF_F32, .ndim = 4, .shape = {2, 3, 17, 33}},
    {.kind = SM_FWD,
     .dtype = UF_F16,
     .ndim = 4,
     .shape = {2, 2, 64, 64},
     .mask_dtype = UF_BOOL,
     .mask_ndim = 4,
     .mask_shape = {2, 1, 64, 64},
     .causal = 1},
    {.kind = SM_FWD,
     .dtype = UF_BF16,
     .ndim = 3,
     .shape = {4, 40, 300},
     .mask_dtype = UF_F32,
     .mask_ndim = 2,
     .mask_shape = {40, 300},
     .in_place = 1},
    {.kind = SM_FWD, .dtype = UF_F32, .ndim = 3, .shape = {1, 1, 20000}},
    {.kind = SM_FWD,
     .dtype = UF_F64,
     .ndim = 2,
     .shape = {8, 3000},
     .mask_dtype = UF_F64,
     .mask_ndim = 1,
     .mask_shape = {3000}},
    {.kind = SM_FWD, .dtype = UF_F16, .ndim = 2, .shape = {6, 1500}, .causal = 1},
    {.kind = SM_BWD, .dtype = UF_F32, .ndim = 3, .shape = {3, 5, 100}},
    {.kind = SM_BWD, .dtype = UF_F16, .ndim = 2, .shape = {2, 5000}},
    {.kind = SM_BWD, .dtype = UF_BF16, .ndim = 2, .shape = {16, 3000}, .in_place = 1},
    {.kind = SM_BWD, .dtype = UF_F64, .ndim = 2, .shape = {5, 77}},
    {.kind = ACT_FWD, .dtype = UF_F32, .ndim = 1, .shape = {10007}, .p = 0.1, .keep = 1},
    {.kind = ACT_FWD, .dtype = UF_F16, .ndim = 1, .shape = {4099}, .keep = 1, .in_place = 1},
    {.kind = ACT_FWD, .dtype = UF_BF16, .ndim = 1, .shape = {3001}, .p = 0.5},
    {.kind = ACT_FWD, .dtype = UF_F64, .ndim = 1, .shape = {777}, .p = 0.3, .keep = 1},
    {.kind = ACT_BWD, .dtype = UF_F32, .ndim = 1, .shape = {5003}, .p = 0.25},
    {.kind = ACT_BWD, .dtype = UF_F16, .ndim = 1, .shape = {2048}, .in_place = 1},
    {.kind = ACT_BWD, .dtype = UF_BF16, .ndim = 1, .shape = {999}, .p = 0.5},
    {.kind = ACT_BWD, .dtype = UF_F64, .ndim = 1, .shape = {1500}, .p = 0.1},
    {.kind = DROP_FWD, .dtype = UF_F32, .ndim = 1, .shape = {12345}, .p = 0.2, .keep = 1},
    {.kind = DROP_BWD, .dtype = UF_F16, .ndim = 1, .shape = {4321}, .p = 0.6, .in_place = 1},
    {.kind = EPI_FWD,
     .dtype = UF_F32,
     .ndim = 2,
     .shape = {33, 77},
     .p = 0.1,
     .bias = UF_OPERAND_ROW,
     .scale = UF_OPERAND_SCALAR,
     .residual = UF_OPERAND_FULL},
    {.kind = EPI_FWD,
     .dtype = UF_BF16,
     .ndim = 2,
     .shape = {5, 1000},
     .in_place = 1,
     .bias = UF_OPERAND_FULL,
     .scale = UF_OPERAND_ROW},
    {.kind = EPI_BWD,
     .dtype = UF_F16,
     .ndim = 2,
     .shape = {64, 130},
     .p = 0.2,
     .bias = UF_OPERAND_ROW,
     .scale = UF_OPERAND_ROW,
     .residual = UF_OPERAND_FULL},
    {.kind = EPI_BWD,
     .dtype = UF_F64,
     .ndim = 2,
     .shape = {7, 33},
     .in_place = 1,
     .bias = UF_OPERAND_FULL,
     .scale = UF_OPERAND_SCALAR},
    {.kind = NORM_FWD,
     .dtype = UF_F32,
     .ndim = 2,
     .shape = {17, 768},
     .bias = UF_OPERAND_ROW,
     .scale = UF_OPERAND_ROW,
     .residual = UF_OPERAND_FULL,
     .norm = UF_NORM_LAYER},
    {.kind = NORM_FWD,
     .dtype = UF_F16,
     .ndim = 2,
     .shape = {4, 4099},
     .in_place = 1,
     .scale = UF_OPERAND_ROW,
     .norm = UF_NORM_RMS},
    {.kind = NORM_FWD, .dtype = UF_BF16, .ndim = 2, .shape = {300, 64}, .norm = UF_NORM_LAYER},
    {.kind = NORM_BWD,
     .dtype = UF_F32,
     .ndim = 2,
     .shape = {40, 1024},
     .bias = UF_OPERAND_ROW,
     .scale = UF_OPERAND_ROW,
     .norm = UF_NORM_LAYER},
    {.kind = NORM_BWD,
     .dtype = UF_BF16,
     .ndim = 2,
     .shape = {9, 3000},
     .scale = UF_OPERAND_ROW,
     .norm = UF_NORM_RMS},
    {.kind = NORM_BWD,
     .dtype = UF_F64,
     .ndim = 2,
     .shape = {5, 100},
     .in_place = 1,
     .norm = UF_NORM_LAYER},
};
#define NSPECS (sizeof specs / sizeof specs[0])

size_t jobs_count(void)
{
    return NSPECS;
}

static unsigned char *to_dtype(const double *v, size_t n, uf_dtype dt)
{
    unsigned char *out = (unsigned char *)th_malloc(n * uf_dtype_size(dt));
    if (dt == UF_BOOL) {
        for (size_t i = 0; i < n; ++i)
            out[i] = v[i] != 0;
    } else {
        assert_int_equal(uf_convert_host(out, dt, v, UF_F64, n), UF_OK);
    }
    return out;
}

/* Input k, n elements uniform in [lo, hi]; for boolean masks, a quarter
 * hidden. */
static void make_input(job *j, int k, size_t n, uf_dtype dt, double lo, double hi, th_rng *r)
{
    double *v = (double *)th_malloc(n * sizeof *v);
    for (size_t i = 0; i < n; ++i) {
        v[i] = th_uniform(r, lo, hi);
        if (dt == UF_BOOL)
            v[i] = v[i] < 0.25;
    }
    j->host_in[k] = to_dtype(v, n, dt);
    j->in_bytes[k] = n * uf_dtype_size(dt);
    free(v);
}

/* Elements of an epilogue operand of `kind` ([cols] or like x; 0: absent). */
static size_t operand_count(uf_operand kind, int64_t rows, int64_t cols)
{
    return kind == UF_OPERAND_ROW    ? (size_t)cols
           : kind == UF_OPERAND_FULL ? (size_t)(rows * cols)
                                     : 0;
}

static void make_softmax(job *j, const job_spec *s, int thread, th_rng *r)
{
    const size_t n = (size_t)j->count;
    j->sm.dtype = s->dtype;
    j->sm.ndim = s->ndim;
    memcpy(j->sm.shape, s->shape, sizeof s->shape);
    j->sm.scale = 0.125 * (1 + thread);
    j->sm.causal = s->causal;
    j->sm.mask_dtype = s->mask_dtype;
    j->sm.mask_ndim = s->mask_ndim;
    memcpy(j->sm.mask_shape, s->mask_shape, sizeof s->mask_shape);
    if (s->kind == SM_FWD) {
        make_input(j, 0, n, s->dtype, -4, 4, r);
        if (s->mask_dtype != UF_DTYPE_NONE)
            make_input(j, 1, sm_count(s->mask_ndim, s->mask_shape), s->mask_dtype, -2, 2, r);
    } else {
        make_input(j, 0, n, s->dtype, 0, 1, r);
        make_input(j, 1, n, s->dtype, -1, 1, r);
        j->out_alias = s->in_place ? 1 : -1;
    }
    j->out_bytes[0] = n * uf_dtype_size(s->dtype);
}

static void make_activation(job *j, const job_spec *s, th_rng *r)
{
    const size_t n = (size_t)j->count;
    make_input(j, 0, n, s->dtype, -6, 6, r);
    if (s->kind == ACT_BWD) {
        make_input(j, 1, n, s->dtype, -1, 1, r);
        j->out_alias = s->in_place ? 1 : -1;
    }
    j->out_bytes[0] = n * uf_dtype_size(s->dtype);
    if (s->keep)
        j->out_bytes[1] = (n + 7) / 8;
}

static void make_epilogue(job *j, const job_spec *s, th_rng *r)
{
    const int64_t rows = s->shape[0], cols = s->shape[1];
    const size_t n = (size_t)j->count, es = uf_dtype_size(s->dtype);
    j->epi.dtype = s->dtype;
    j->epi.rows = rows;
    j->epi.cols = cols;
    j->epi.bias = s->bias;
    j->epi.act = j->act;
    j->epi.scale = s->scale;
    j->epi.scale_value = 0.75;
    j->epi.residual = s->residual;
    make_input(j, 0, n, s->dtype, -3, 3, r);
    if (s->bias != UF_OPERAND_NONE)
        make_input(j, 1, operand_count(s->bias, rows, cols), s->dtype, -1, 1, r);
    if (s->scale == UF_OPERAND_ROW)
        make_input(j, 2, (size_t)cols, s->dtype, 0.5, 2, r);
    j->out_bytes[0] = n * es;
    if (s->kind == EPI_FWD) {
        if (s->residual == UF_OPERAND_FULL)
            make_input(j, 3, n, s->dtype, -1, 1, r);
        return;
    }
    make_input(j, 3, n, s->dtype, -1, 1, r); /* dy */
    j->out_alias = s->in_place ? 3 : -1;
    j->out_bytes[1] = operand_count(s->bias, rows, cols) * es;
    j->out_bytes[2] = s->scale == UF_OPERAND_ROW ? (size_t)cols * es : 0;
    j->out_bytes[3] = s->residual == UF_OPERAND_FULL ? n * es : 0;
}

static void make_norm(job *j, const job_spec *s, th_rng *r)
{
    const int64_t rows = s->shape[0], cols = s->shape[1];
    const size_t n = (size_t)j->count, es = uf_dtype_size(s->dtype);
    const uf_dtype stats = s->dtype == UF_F64 ? UF_F64 : UF_F32;
    const int layer = s->norm == UF_NORM_LAYER;
    j->norm.kind = s->norm;
    j->norm.dtype = s->dtype;
    j->norm.rows = rows;
    j->norm.cols = cols;
    j->norm.eps = 1e-5;
    j->norm.has_weight = s->scale != UF_OPERAND_NONE;
    j->norm.has_bias = s->bias != UF_OPERAND_NONE;
    j->norm.add_residual = s->residual != UF_OPERAND_NONE;
    j->out_bytes[0] = n * es;
    if (s->kind == NORM_FWD) {
        make_input(j, 0, n, s->dtype, -2, 3, r);
        if (j->norm.add_residual)
            make_input(j, 1, n, s->dtype, -1, 1, r);
        if (j->norm.has_weight)
            make_input(j, 2, (size_t)cols, s->dtype, 0.5, 1.5, r);
        if (j->norm.has_bias)
            make_input(j, 3, (size_t)cols, s->dtype, -1, 1, r);
        j->out_bytes[1] = j->norm.add_residual ? n * es : 0;
        j->out_bytes[2] = layer ? (size_t)rows * uf_dtype_size(stats) : 0;
        j->out_bytes[3] = (size_t)rows * uf_dtype_size(stats);
        return;
    }
    make_input(j, 0, n, s->dtype, -2, 3, r); /* h */
    if (j->norm.has_weight)
        make_input(j, 1, (size_t)cols, s->dtype, 0.5, 1.5, r);
    if (layer)
        make_input(j, 2, (size_t)rows, stats, 0, 1, r);
    make_input(j, 3, (size_t)rows, stats, 0.5, 2, r);
    make_input(j, 4, n, s->dtype, -1, 1, r); /* dy */
    /* dx may replace dy only without column sums (see norm.h). */
    j->out_alias = s->in_place && !j->norm.has_weight && !j->norm.has_bias ? 4 : -1;
    j->out_bytes[1] = j->norm.has_weight ? (size_t)cols * es : 0;
    j->out_bytes[2] = j->norm.has_bias ? (size_t)cols * es : 0;
}

void job_make(job *j, size_t index, int thread)
{
    const job_spec *s = &specs[index];
    memset(j, 0, sizeof *j);
    j->spec = s;
    j->out_alias = s->in_place ? 0 : -1;
    th_rng r = th_seed(1000003u * (uint64_t)thread + (uint64_t)index);
    j->count = 1;
    for (int i = 0; i < s->ndim; ++i)
        j->count *= s->shape[i];
    /* Threads take different activations, so that all of them run at once. */
    j->act = ar_custom((uf_activation)((thread * 7 + (int)index) % UF_ACT_COUNT));
    j->drop.p = s->p;
    j->drop.seed = 1000 + (uint64_t)thread;
    j->drop.offset = (uint64_t)index;
    switch (s->kind) {
    case SM_FWD:
    case SM_BWD:
        make_softmax(j, s, thread, &r);
        break;
    case ACT_FWD:
    case ACT_BWD:
    case DROP_FWD:
    case DROP_BWD:
        make_activation(j, s, &r);
        break;
    case EPI_FWD:
    case EPI_BWD:
        make_epilogue(j, s, &r);
        break;
    case NORM_FWD:
    case NORM_BWD:
        make_norm(j, s, &r);
        break;
    }
    for (int k = 0; k < JOB_MAX_OUT; ++k)
        j->result_bytes += j->out_bytes[k];
    j->want = (unsigned char *)th_malloc(j->result_bytes);
    j->got = (unsigned char *)th_malloc(j->result_bytes);
}

void job_alloc(job *j)
{
    for (int k = 0; k < JOB_MAX_IN; ++k)
        if (j->host_in[k])
            assert_int_equal(uf_malloc(&j->dev_in[k], j->in_bytes[k]), UF_OK);
    for (int k = 0; k < JOB_MAX_OUT; ++k)
        if (j->out_bytes[k] && !(k == 0 && j->out_alias >= 0))
            assert_int_equal(uf_malloc(&j->dev_out[k], j->out_bytes[k]), UF_OK);
    if (j->out_alias >= 0)
        j->dev_out[0] = j->dev_in[j->out_alias];
}

void job_free_device(job *j)
{
    for (int k = 0; k < JOB_MAX_OUT; ++k)
        if (!(k == 0 && j->out_alias >= 0))
            uf_free(j->dev_out[k]);
    for (int k = 0; k < JOB_MAX_IN; ++k)
        uf_free(j->dev_in[k]);
    memset(j->dev_in, 0, sizeof j->dev_in);
    memset(j->dev_out, 0, sizeof j->dev_out);
}

void job_free(job *j)
{
    job_free_device(j);
    for (int k = 0; k < JOB_MAX_IN; ++k)
        free(j->host_in[k]);
    free(j->want);
    free(j->got);
}

static uf_status call(const job *j, uf_stream s)
{
    const job_spec *p = j->spec;
    void *const *in = (void *const *)j->dev_in;
    void *const *out = (void *const *)j->dev_out;
    const uf_dropout_desc *drop = p->p > 0 ? &j->drop : NULL;
    switch (p->kind) {
    case SM_FWD:
        return uf_softmax_forward(&j->sm, in[0], in[1], out[0], s);
    case SM_BWD:
        return uf_softmax_backward(&j->sm, in[0], in[1], out[0], s);
    case ACT_FWD:
        return uf_activation_forward(&j->act, drop, p->dtype, j->count, in[0], out[0], out[1], s);
    case ACT_BWD:
        return uf_activation_backward(&j->act, drop, p->dtype, j->count, in[0], in[1], out[0], s);
    case DROP_FWD:
        return uf_dropout_forward(drop, p->dtype, j->count, in[0], out[0], out[1], s);
    case DROP_BWD:
        return uf_dropout_backward(drop, p->dtype, j->count, in[0], out[0], s);
    case EPI_FWD:
        return uf_epilogue_forward(&j->epi, drop, in[0], in[1], in[2], in[3], out[0], s);
    case EPI_BWD:
        return uf_epilogue_backward(&j->epi, drop, in[0], in[1], in[2], in[3], out[0], out[1],
                                    out[2], out[3], s);
    case NORM_FWD:
        return uf_norm_forward(&j->norm, in[0], in[1], in[2], in[3], out[0], out[1], out[2], out[3],
                               s);
    case NORM_BWD:
        return uf_norm_backward(&j->norm, in[0], in[1], in[2], in[3], in[4], NULL, out[0], out[1],
                                out[2], s);
    }
    return UF_ERR_BAD_ARGUMENT;
}

uf_status job_run(const job *j, uf_stream s)
{
    uf_status st = UF_OK;
    for (int k = 0; k < JOB_MAX_IN && st == UF_OK; ++k)
        if (j->host_in[k])
            st = uf_memcpy(j->dev_in[k], j->host_in[k], j->in_bytes[k], UF_HOST_TO_DEVICE, s);
    for (int k = 0; k < JOB_MAX_OUT && st == UF_OK; ++k)
        if (j->out_bytes[k] && !(k == 0 && j->out_alias >= 0))
            st = uf_memset(j->dev_out[k], 0xff, j->out_bytes[k], s);
    return st == UF_OK ? call(j, s) : st;
}

uf_status job_fetch(const job *j, unsigned char *host, uf_stream s)
{
    uf_status st = UF_OK;
    for (int k = 0; k < JOB_MAX_OUT && st == UF_OK; ++k) {
        if (j->out_bytes[k])
            st = uf_memcpy(host, j->dev_out[k], j->out_bytes[k], UF_DEVICE_TO_HOST, s);
        host += j->out_bytes[k];
    }
    return st;
}

void job_run_serial(job *j)
{
    assert_int_equal(job_run(j, NULL), UF_OK);
    assert_int_equal(uf_device_synchronize(), UF_OK);
    assert_int_equal(job_fetch(j, j->want, NULL), UF_OK);
    /* The call wrote something over the 0xff fill. */
    size_t i = 0;
    while (i < j->out_bytes[0] && j->want[i] == 0xff)
        ++i;
    assert_true(i < j->out_bytes[0]);
}

static void note(job_worker *w, uf_status st)
{
    if (st != UF_OK && w->first_error == UF_OK)
        w->first_error = st;
}

void *job_worker_main(void *arg)
{
    job_worker *w = (job_worker *)arg;
    uf_stream s = NULL;
    if (w->own_stream) {
        note(w, uf_set_device(w->stream_device));
        note(w, uf_stream_create(&s));
    }
    note(w, uf_set_device(w->thread_device));
    pthread_barrier_wait(w->start);
    for (int rep = 0; rep < w->reps && w->first_error == UF_OK; ++rep) {
        for (size_t k = 0; k < w->njobs; ++k)
            note(w, job_run(&w->jobs[k], s));
        note(w, uf_stream_synchronize(s));
        for (size_t k = 0; k < w->njobs && w->first_error == UF_OK; ++k) {
            job *j = &w->jobs[k];
            note(w, job_fetch(j, j->got, s));
            if (memcmp(j->got, j->want, j->result_bytes) != 0 && w->mismatches++ == 0)
                w->first_mismatch = (int)k;
        }
    }
    note(w, uf_get_device(&w->device_after));
    if (s)
        note(w, uf_stream_destroy(s));
    return NULL;
}

size_t jobs_run_workers(job_worker *workers, int count)
{
    pthread_barrier_t start;
    pthread_t *threads = (pthread_t *)th_malloc((size_t)count * sizeof *threads);
    assert_int_equal(pthread_barrier_init(&start, NULL, (unsigned)count), 0);
    for (int t = 0; t < count; ++t) {
        workers[t].start = &start;
        workers[t].first_error = UF_OK;
        workers[t].mismatches = 0;
        workers[t].first_mismatch = -1;
        workers[t].device_after = -1;
        assert_int_equal(pthread_create(&threads[t], NULL, job_worker_main, &workers[t]), 0);
    }
    for (int t = 0; t < count; ++t)
        assert_int_equal(pthread_join(threads[t], NULL), 0);
    pthread_barrier_destroy(&start);
    free(threads);
    size_t bad = 0;
    for (int t = 0; t < count; ++t) {
        const job_worker *w = &workers[t];
        const int moved = w->device_after != w->thread_device;
        if (w->first_error != UF_OK || w->mismatches || moved)
            fprintf(stderr,
                    "# thread %d (device %d, stream on %d): %s, %zu results differ from the "
                    "serial run (first: job %d), current device after: %d\n",
                    t, w->thread_device, w->stream_device, uf_status_string(w->first_error),
                    w->mismatches, w->first_mismatch, w->device_after);
        bad += w->first_error != UF_OK || w->mismatches || moved;
    }
    return bad;
}
