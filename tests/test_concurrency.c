/*
 * Host threads calling every kernel family at once, each on its own buffers
 * (and its own stream, or all on the default one): every result must be
 * bit-identical to the same calls made one after another. The library
 * keeps no global mutable state, so any difference is a race. CI also runs
 * this test under ThreadSanitizer (.ci/steps/sanitizers.sh).
 */
#define _POSIX_C_SOURCE 200809L /* pthread barriers under -std=c11 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activation_ref.h"
#include "softmax_cases.h"

enum { NTHREADS = 8, REPS = 3 };

typedef enum job_kind { SM_FWD, SM_BWD, ACT_FWD, ACT_BWD, DROP_FWD, DROP_BWD } job_kind;

/* One call; its inputs are copied in again before every run, so in-place
 * calls repeat exactly. */
typedef struct job_spec {
    job_kind kind;
    uf_dtype dtype;
    int ndim;
    int64_t shape[4];
    uf_dtype mask_dtype;
    int mask_ndim;
    int64_t mask_shape[4];
    int causal;
    double p;     /* dropout probability */
    int keep;     /* forward: ask for keep_bits */
    int in_place; /* the output overwrites the input it replaces */
} job_spec;

/* Every dtype in each family, and each softmax path: several rows per
 * warp, a row per block (f16 [6, 1500]), the split row with its
 * stream-ordered scratch (f32 [1, 1, 20000]), and the streamed row where
 * the device has at most 4 multiprocessors (f64 [8, 3000]; CI's CPU). */
static const job_spec specs[] = {
    {SM_FWD, UF_F32, 4, {2, 3, 17, 33}, UF_DTYPE_NONE, 0, {0}, 0, 0, 0, 0},
    {SM_FWD, UF_F16, 4, {2, 2, 64, 64}, UF_BOOL, 4, {2, 1, 64, 64}, 1, 0, 0, 0},
    {SM_FWD, UF_BF16, 3, {4, 40, 300}, UF_F32, 2, {40, 300}, 0, 0, 0, 1},
    {SM_FWD, UF_F32, 3, {1, 1, 20000}, UF_DTYPE_NONE, 0, {0}, 0, 0, 0, 0},
    {SM_FWD, UF_F64, 2, {8, 3000}, UF_F64, 1, {3000}, 0, 0, 0, 0},
    {SM_FWD, UF_F16, 2, {6, 1500}, UF_DTYPE_NONE, 0, {0}, 1, 0, 0, 0},
    {SM_BWD, UF_F32, 3, {3, 5, 100}, UF_DTYPE_NONE, 0, {0}, 0, 0, 0, 0},
    {SM_BWD, UF_F16, 2, {2, 5000}, UF_DTYPE_NONE, 0, {0}, 0, 0, 0, 0},
    {SM_BWD, UF_BF16, 2, {16, 3000}, UF_DTYPE_NONE, 0, {0}, 0, 0, 0, 1},
    {SM_BWD, UF_F64, 2, {5, 77}, UF_DTYPE_NONE, 0, {0}, 0, 0, 0, 0},
    {ACT_FWD, UF_F32, 1, {10007}, UF_DTYPE_NONE, 0, {0}, 0, 0.1, 1, 0},
    {ACT_FWD, UF_F16, 1, {4099}, UF_DTYPE_NONE, 0, {0}, 0, 0, 1, 1},
    {ACT_FWD, UF_BF16, 1, {3001}, UF_DTYPE_NONE, 0, {0}, 0, 0.5, 0, 0},
    {ACT_FWD, UF_F64, 1, {777}, UF_DTYPE_NONE, 0, {0}, 0, 0.3, 1, 0},
    {ACT_BWD, UF_F32, 1, {5003}, UF_DTYPE_NONE, 0, {0}, 0, 0.25, 0, 0},
    {ACT_BWD, UF_F16, 1, {2048}, UF_DTYPE_NONE, 0, {0}, 0, 0, 0, 1},
    {ACT_BWD, UF_BF16, 1, {999}, UF_DTYPE_NONE, 0, {0}, 0, 0.5, 0, 0},
    {ACT_BWD, UF_F64, 1, {1500}, UF_DTYPE_NONE, 0, {0}, 0, 0.1, 0, 0},
    {DROP_FWD, UF_F32, 1, {12345}, UF_DTYPE_NONE, 0, {0}, 0, 0.2, 1, 0},
    {DROP_BWD, UF_F16, 1, {4321}, UF_DTYPE_NONE, 0, {0}, 0, 0.6, 0, 1},
};
#define NJOBS (sizeof specs / sizeof specs[0])

typedef struct job {
    const job_spec *spec;
    uf_softmax_desc sm;
    uf_activation_desc act;
    uf_dropout_desc drop;
    int64_t count;
    size_t bytes, in_bytes[2], keep_bytes;
    unsigned char *host_in[2]; /* the inputs in their dtype; NULL where absent */
    void *dev_in[2], *dev_out, *dev_keep;
    unsigned char *want, *got; /* output bytes, then keep bits */
} job;

/* A thread's share: its calls, and what went wrong (written by it alone). */
typedef struct worker {
    job jobs[NJOBS];
    int own_stream;
    pthread_barrier_t *start;
    uf_status first_error;
    size_t mismatches;
    int first_mismatch; /* job index, -1 if none */
} worker;

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

/* Input k of n elements: uniform in [lo, hi]; for masks, a boolean with a
 * quarter hidden or an additive mask with some -inf. */
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
    assert_int_equal(uf_malloc(&j->dev_in[k], j->in_bytes[k]), UF_OK);
    free(v);
}

static void make_job(job *j, const job_spec *s, int thread, int index)
{
    memset(j, 0, sizeof *j);
    j->spec = s;
    th_rng r = th_seed(1000003u * (uint64_t)thread + (uint64_t)index);
    j->count = 1;
    for (int i = 0; i < s->ndim; ++i)
        j->count *= s->shape[i];
    const size_t n = (size_t)j->count;
    j->bytes = n * uf_dtype_size(s->dtype);
    if (s->kind == SM_FWD || s->kind == SM_BWD) {
        j->sm.dtype = s->dtype;
        j->sm.ndim = s->ndim;
        memcpy(j->sm.shape, s->shape, sizeof s->shape);
        j->sm.scale = 0.125 * (1 + thread);
        j->sm.causal = s->causal;
        j->sm.mask_dtype = s->mask_dtype;
        j->sm.mask_ndim = s->mask_ndim;
        memcpy(j->sm.mask_shape, s->mask_shape, sizeof s->mask_shape);
        if (s->kind == SM_FWD) {
            make_input(j, 0, n, s->dtype, -4, 4, &r);
            if (s->mask_dtype != UF_DTYPE_NONE)
                make_input(j, 1, sm_count(s->mask_ndim, s->mask_shape), s->mask_dtype, -2, 2, &r);
        } else {
            make_input(j, 0, n, s->dtype, 0, 1, &r);
            make_input(j, 1, n, s->dtype, -1, 1, &r);
        }
    } else {
        /* Threads take different activations, so that all of them run at once. */
        j->act = ar_custom((uf_activation)((thread * 7 + index) % UF_ACT_COUNT));
        j->drop.p = s->p;
        j->drop.seed = 1000 + (uint64_t)thread;
        j->drop.offset = (uint64_t)index;
        make_input(j, 0, n, s->dtype, -6, 6, &r);
        if (s->kind == ACT_BWD)
            make_input(j, 1, n, s->dtype, -1, 1, &r);
        if (s->keep)
            j->keep_bytes = (n + 7) / 8;
    }
    if (!s->in_place)
        assert_int_equal(uf_malloc(&j->dev_out, j->bytes), UF_OK);
    if (j->keep_bytes)
        assert_int_equal(uf_malloc(&j->dev_keep, j->keep_bytes), UF_OK);
    j->want = (unsigned char *)th_malloc(j->bytes + j->keep_bytes);
    j->got = (unsigned char *)th_malloc(j->bytes + j->keep_bytes);
}

/* Where the output goes: its own buffer, or over the input it replaces
 * (x for forwards, dy for backwards). */
static void *output_of(const job *j)
{
    if (!j->spec->in_place)
        return j->dev_out;
    const job_kind k = j->spec->kind;
    return j->dev_in[k == SM_BWD || k == ACT_BWD ? 1 : 0];
}

/* Queues the job on `s`: inputs copied in, outputs poisoned, the call.
 * No cmocka here: workers call it. */
static uf_status run_job(const job *j, uf_stream s)
{
    uf_status st = UF_OK;
    for (int k = 0; k < 2 && st == UF_OK; ++k)
        if (j->host_in[k])
            st = uf_memcpy(j->dev_in[k], j->host_in[k], j->in_bytes[k], UF_HOST_TO_DEVICE, s);
    if (st == UF_OK && !j->spec->in_place)
        st = uf_memset(j->dev_out, 0xff, j->bytes, s);
    if (st == UF_OK && j->dev_keep)
        st = uf_memset(j->dev_keep, 0xff, j->keep_bytes, s);
    if (st != UF_OK)
        return st;
    const job_spec *p = j->spec;
    const uf_dropout_desc *drop = p->p > 0 ? &j->drop : NULL;
    void *out = output_of(j);
    switch (p->kind) {
    case SM_FWD:
        return uf_softmax_forward(&j->sm, j->dev_in[0], j->dev_in[1], out, s);
    case SM_BWD:
        return uf_softmax_backward(&j->sm, j->dev_in[0], j->dev_in[1], out, s);
    case ACT_FWD:
        return uf_activation_forward(&j->act, drop, p->dtype, j->count, j->dev_in[0], out,
                                     j->dev_keep, s);
    case ACT_BWD:
        return uf_activation_backward(&j->act, drop, p->dtype, j->count, j->dev_in[0], j->dev_in[1],
                                      out, s);
    case DROP_FWD:
        return uf_dropout_forward(drop, p->dtype, j->count, j->dev_in[0], out, j->dev_keep, s);
    case DROP_BWD:
        return uf_dropout_backward(drop, p->dtype, j->count, j->dev_in[0], out, s);
    }
    return UF_ERR_BAD_ARGUMENT;
}

/* Copies the job's results to `host` (output, then keep bits). */
static uf_status fetch(const job *j, unsigned char *host, uf_stream s)
{
    uf_status st = uf_memcpy(host, output_of(j), j->bytes, UF_DEVICE_TO_HOST, s);
    if (st == UF_OK && j->dev_keep)
        st = uf_memcpy(host + j->bytes, j->dev_keep, j->keep_bytes, UF_DEVICE_TO_HOST, s);
    return st;
}

static void note(worker *w, uf_status st)
{
    if (st != UF_OK && w->first_error == UF_OK)
        w->first_error = st;
}

static void *work(void *arg)
{
    worker *w = (worker *)arg;
    uf_stream s = NULL;
    if (w->own_stream)
        note(w, uf_stream_create(&s));
    pthread_barrier_wait(w->start);
    for (int rep = 0; rep < REPS && w->first_error == UF_OK; ++rep) {
        for (size_t k = 0; k < NJOBS; ++k)
            note(w, run_job(&w->jobs[k], s));
        note(w, uf_stream_synchronize(s));
        for (size_t k = 0; k < NJOBS && w->first_error == UF_OK; ++k) {
            job *j = &w->jobs[k];
            note(w, fetch(j, j->got, s));
            if (memcmp(j->got, j->want, j->bytes + j->keep_bytes) != 0) {
                if (w->mismatches++ == 0)
                    w->first_mismatch = (int)k;
            }
        }
    }
    if (s)
        note(w, uf_stream_destroy(s));
    return NULL;
}

static void free_job(job *j)
{
    for (int k = 0; k < 2; ++k) {
        free(j->host_in[k]);
        uf_free(j->dev_in[k]);
    }
    uf_free(j->dev_out);
    uf_free(j->dev_keep);
    free(j->want);
    free(j->got);
}

static void run_concurrently(int own_stream)
{
    static worker workers[NTHREADS];
    pthread_barrier_t start;
    assert_int_equal(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (int t = 0; t < NTHREADS; ++t) {
        worker *w = &workers[t];
        memset(w, 0, sizeof *w);
        w->own_stream = own_stream;
        w->start = &start;
        w->first_mismatch = -1;
        for (size_t k = 0; k < NJOBS; ++k)
            make_job(&w->jobs[k], &specs[k], t, (int)k);
    }
    /* The serial run that every concurrent one must reproduce. */
    for (int t = 0; t < NTHREADS; ++t) {
        for (size_t k = 0; k < NJOBS; ++k) {
            job *j = &workers[t].jobs[k];
            assert_int_equal(run_job(j, NULL), UF_OK);
            assert_int_equal(uf_device_synchronize(), UF_OK);
            assert_int_equal(fetch(j, j->want, NULL), UF_OK);
            /* The call wrote something over the 0xff fill. */
            size_t i = 0;
            while (i < j->bytes && j->want[i] == 0xff)
                ++i;
            assert_true(i < j->bytes);
        }
    }
    pthread_t threads[NTHREADS];
    for (int t = 0; t < NTHREADS; ++t)
        assert_int_equal(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
    for (int t = 0; t < NTHREADS; ++t)
        assert_int_equal(pthread_join(threads[t], NULL), 0);
    pthread_barrier_destroy(&start);
    size_t bad = 0;
    for (int t = 0; t < NTHREADS; ++t) {
        const worker *w = &workers[t];
        if (w->first_error != UF_OK || w->mismatches)
            fprintf(stderr,
                    "# thread %d: %s, %zu results differ from the serial run (first: job %d)\n", t,
                    uf_status_string(w->first_error), w->mismatches, w->first_mismatch);
        bad += w->first_error != UF_OK || w->mismatches;
        for (size_t k = 0; k < NJOBS; ++k)
            free_job(&workers[t].jobs[k]);
    }
    assert_int_equal(bad, 0);
}

static void own_streams(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    run_concurrently(1);
}

static void default_stream(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    run_concurrently(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_streams),
        cmocka_unit_test(default_stream),
    };
    return TH_RUN("concurrency", tests);
}
