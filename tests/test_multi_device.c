/*
 * One process, several devices: the device API's statuses; kernels run on
 * the device of the stream they are given, whatever the calling thread's
 * current device, and leave that current device alone; host threads
 * driving two devices at once reproduce a serial run on device 0 bit for
 * bit. With one device (the OpenMP build, a one-GPU machine) the two-device
 * tests are skipped, counted and explained.
 */
#include "concurrent_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NTHREADS = 4, REPS = 2 };

static int device_count(void)
{
    int n = -1;
    assert_int_equal(uf_device_count(&n), UF_OK);
    return n;
}

/* 1 when there are two devices; says why not otherwise. */
static int two_devices(void)
{
    const int n = device_count();
    if (n < 2)
        fprintf(stderr, "# needs two devices; this backend sees %d\n", n);
    return n >= 2;
}

static void device_api(void **state)
{
    (void)state;
    assert_int_equal(uf_device_count(NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_get_device(NULL), UF_ERR_NULL_POINTER);
    assert_int_equal(uf_stream_device(NULL, NULL), UF_ERR_NULL_POINTER);
    const int n = device_count();
    assert_true(n >= 0);
    assert_int_equal(uf_set_device(n), UF_ERR_NO_DEVICE);
    assert_int_equal(uf_set_device(-1), UF_ERR_NO_DEVICE);
    TH_NEED_DEVICE();
    int first = -1, dev = -1;
    assert_int_equal(uf_get_device(&first), UF_OK);
    assert_true(first >= 0 && first < n);
    assert_int_equal(uf_set_device(n + 5), UF_ERR_NO_DEVICE);
    assert_int_equal(uf_get_device(&dev), UF_OK);
    assert_int_equal(dev, first); /* a refused change changes nothing */
    assert_int_equal(uf_stream_device(NULL, &dev), UF_OK);
    assert_int_equal(dev, first);
    for (int d = 0; d < n; ++d) {
        uf_stream s = NULL;
        assert_int_equal(uf_set_device(d), UF_OK);
        assert_int_equal(uf_get_device(&dev), UF_OK);
        assert_int_equal(dev, d);
        assert_int_equal(uf_stream_create(&s), UF_OK);
        assert_int_equal(uf_set_device(first), UF_OK);
        assert_int_equal(uf_stream_device(s, &dev), UF_OK);
        assert_int_equal(dev, d); /* the stream keeps its device */
        assert_int_equal(uf_stream_destroy(s), UF_OK);
    }
    assert_int_equal(uf_get_device(&dev), UF_OK);
    assert_int_equal(dev, first);
}

/* Builds each worker's jobs, runs them serially on device 0 for the
 * expected bits, then moves their buffers to the device the worker's calls
 * will use. */
static void prepare(job_worker *workers, int count, size_t njobs)
{
    for (int t = 0; t < count; ++t) {
        job_worker *w = &workers[t];
        w->jobs = (job *)th_malloc(njobs * sizeof *w->jobs);
        w->njobs = njobs;
        w->reps = REPS;
        const int target = w->own_stream ? w->stream_device : w->thread_device;
        for (size_t k = 0; k < njobs; ++k) {
            job *j = &w->jobs[k];
            job_make(j, k, t);
            assert_int_equal(uf_set_device(0), UF_OK);
            job_alloc(j);
            job_run_serial(j);
            job_free_device(j);
            assert_int_equal(uf_set_device(target), UF_OK);
            job_alloc(j);
        }
    }
    assert_int_equal(uf_set_device(0), UF_OK);
}

static void run_and_release(job_worker *workers, int count)
{
    const size_t bad = jobs_run_workers(workers, count);
    for (int t = 0; t < count; ++t) {
        int target = workers[t].own_stream ? workers[t].stream_device : workers[t].thread_device;
        assert_int_equal(uf_set_device(target), UF_OK);
        for (size_t k = 0; k < workers[t].njobs; ++k)
            job_free(&workers[t].jobs[k]);
        free(workers[t].jobs);
    }
    assert_int_equal(uf_set_device(0), UF_OK);
    assert_int_equal(bad, 0);
}

/* A thread whose current device is 0 runs every job on a stream and buffers
 * of device 1. */
static void kernels_follow_the_stream(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    TH_SKIP_UNLESS(two_devices());
    job_worker w;
    memset(&w, 0, sizeof w);
    w.own_stream = 1;
    w.stream_device = 1;
    w.thread_device = 0;
    prepare(&w, 1, jobs_count());
    run_and_release(&w, 1);
}

/* Four threads, two per device, all at once on their own streams; half of
 * them call from the other device. */
static void two_devices_own_streams(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    TH_SKIP_UNLESS(two_devices());
    job_worker w[NTHREADS];
    memset(w, 0, sizeof w);
    for (int t = 0; t < NTHREADS; ++t) {
        w[t].own_stream = 1;
        w[t].stream_device = t % 2;
        w[t].thread_device = t < 2 ? t % 2 : 1 - t % 2;
    }
    prepare(w, NTHREADS, jobs_count());
    run_and_release(w, NTHREADS);
}

/* The same on each device's default stream (the threads' current device). */
static void two_devices_default_streams(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    TH_SKIP_UNLESS(two_devices());
    job_worker w[NTHREADS];
    memset(w, 0, sizeof w);
    for (int t = 0; t < NTHREADS; ++t)
        w[t].thread_device = w[t].stream_device = t % 2;
    prepare(w, NTHREADS, jobs_count());
    run_and_release(w, NTHREADS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_api),
        cmocka_unit_test(kernels_follow_the_stream),
        cmocka_unit_test(two_devices_own_streams),
        cmocka_unit_test(two_devices_default_streams),
    };
    return TH_RUN("multi_device", tests);
}
