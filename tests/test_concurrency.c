/*
 * Host threads calling every kernel family at once, each on its own buffers
 * (and its own stream, or all on the default one): every result must be
 * bit-identical to the same calls made one after another. The library
 * keeps no global mutable state, so any difference is a race. CI also runs
 * this test under ThreadSanitizer (.ci/steps/sanitizers.sh).
 */
#include "concurrent_jobs.h"

#include <stdlib.h>
#include <string.h>

enum { NTHREADS = 8, REPS = 3 };

static void run_concurrently(int own_stream)
{
    const size_t njobs = jobs_count();
    job_worker workers[NTHREADS];
    for (int t = 0; t < NTHREADS; ++t) {
        job_worker *w = &workers[t];
        memset(w, 0, sizeof *w);
        w->jobs = (job *)th_malloc(njobs * sizeof *w->jobs);
        w->njobs = njobs;
        w->reps = REPS;
        w->own_stream = own_stream;
        for (size_t k = 0; k < njobs; ++k) {
            job_make(&w->jobs[k], k, t);
            job_alloc(&w->jobs[k]);
        }
    }
    /* The serial run that every concurrent one must reproduce. */
    for (int t = 0; t < NTHREADS; ++t)
        for (size_t k = 0; k < njobs; ++k)
            job_run_serial(&workers[t].jobs[k]);
    const size_t bad = jobs_run_workers(workers, NTHREADS);
    for (int t = 0; t < NTHREADS; ++t) {
        for (size_t k = 0; k < njobs; ++k)
            job_free(&workers[t].jobs[k]);
        free(workers[t].jobs);
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
