/*
 * A set of calls covering every kernel family, every dtype and every softmax
 * path, each with inputs kept on the host so that it can be queued again
 * exactly (in-place calls included). Tests run the set from several host
 * threads, streams or devices and require the bits of a serial run.
 */
#ifndef UF_TEST_CONCURRENT_JOBS_H
#define UF_TEST_CONCURRENT_JOBS_H

#define _POSIX_C_SOURCE 200809L /* pthread barriers under -std=c11 */
#include <pthread.h>

#include "harness.h"

enum { JOB_MAX_IN = 5, JOB_MAX_OUT = 4 };

typedef struct job_spec job_spec;

typedef struct job {
    const job_spec *spec;
    uf_softmax_desc sm;
    uf_activation_desc act;
    uf_dropout_desc drop;
    uf_epilogue_desc epi;
    uf_norm_desc norm;
    int64_t count;
    size_t in_bytes[JOB_MAX_IN], out_bytes[JOB_MAX_OUT];
    unsigned char *host_in[JOB_MAX_IN]; /* NULL where the call has no such input */
    void *dev_in[JOB_MAX_IN], *dev_out[JOB_MAX_OUT];
    int out_alias;             /* the input output 0 overwrites (in-place calls), or -1 */
    size_t result_bytes;       /* every output's bytes, one after another */
    unsigned char *want, *got; /* results of the serial run, and of the last run */
} job;

/* Number of calls in the set. */
size_t jobs_count(void);

/* Builds call `index` with inputs drawn for `thread` (threads take different
 * values, activations and seeds). No device memory yet. */
void job_make(job *j, size_t index, int thread);

/* Device buffers on the calling thread's current device; job_free_device
 * releases them (so a job can move to another device). */
void job_alloc(job *j);
void job_free_device(job *j);
void job_free(job *j);

/* Queues the job on `s`: inputs copied in, outputs filled with 0xff, the
 * call. Returns the first failing status. No cmocka inside: threads call it. */
uf_status job_run(const job *j, uf_stream s);

/* Copies every output to `host` (job->result_bytes). */
uf_status job_fetch(const job *j, unsigned char *host, uf_stream s);

/* Runs the job on the default stream of the current device and stores its
 * results as `want`; asserts that the call wrote its first output. */
void job_run_serial(job *j);

/* One host thread's share of a concurrent run. */
typedef struct job_worker {
    job *jobs;
    size_t njobs;
    int reps;
    int own_stream;    /* 0: the default stream of the thread's device */
    int stream_device; /* where the stream is created (own_stream) */
    int thread_device; /* the thread's current device while it calls */
    pthread_barrier_t *start;
    uf_status first_error;
    size_t mismatches;
    int first_mismatch; /* job index, -1 if none */
    int device_after;   /* the thread's current device after its calls */
} job_worker;

/* Thread body: `reps` rounds of every job, each compared with `want`. */
void *job_worker_main(void *arg);

/* Starts one thread per worker, joins them, reports each worker's errors
 * and mismatches on stderr and returns how many workers went wrong
 * (including a thread whose current device changed). */
size_t jobs_run_workers(job_worker *workers, int count);

#endif
