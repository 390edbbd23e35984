/*
 * An asynchronous GPU fault surfaces as a status from the next call that
 * synchronizes, never as an abort inside the library: a kernel is queued on
 * a pointer no allocation covers, the call returns UF_OK (queued), and the
 * synchronization returns UF_ERR_DEVICE. CUDA keeps such a fault for the
 * rest of the process, so this test has a binary of its own and runs last
 * in it. The OpenMP backend runs kernels before returning: nothing there is
 * asynchronous, and the test is skipped, saying so.
 */
#include <stdint.h>
#include <stdio.h>

#include "harness.h"

static int asynchronous_backend(void)
{
    uf_device_info info;
    if (uf_get_device_info(&info) != UF_OK)
        return 0; /* th_have_device says why */
    if (info.backend == UF_BACKEND_CPU)
        fprintf(stderr, "# the OpenMP backend has no asynchronous faults: its kernels finish "
                        "inside the call\n");
    return info.backend != UF_BACKEND_CPU;
}

static void fault_reported_by_synchronize(void **state)
{
    (void)state;
    TH_NEED_DEVICE();
    TH_SKIP_UNLESS(asynchronous_backend());
    const int64_t count = (int64_t)1 << 20;
    void *y = NULL;
    uf_stream s = NULL;
    assert_int_equal(uf_malloc(&y, (size_t)count * sizeof(float)), UF_OK);
    assert_int_equal(uf_stream_create(&s), UF_OK);
    /* Aligned, not NULL (which the checks refuse), and in no allocation. */
    const void *unmapped = (const void *)(uintptr_t)0x1000;
    const uf_activation_desc relu = uf_activation_default(UF_ACT_RELU);
    /* Queued: UF_OK. Should the fault already have happened when the launch
     * is checked, the call reports it itself. */
    const uf_status queued =
        uf_activation_forward(&relu, NULL, UF_F32, count, unmapped, y, NULL, s);
    assert_true(queued == UF_OK || queued == UF_ERR_DEVICE);
    assert_int_equal(uf_stream_synchronize(s), UF_ERR_DEVICE);
    /* The fault stays: later synchronizing calls report it too, and still
     * return rather than abort. */
    assert_int_equal(uf_device_synchronize(), UF_ERR_DEVICE);
    float host = 0;
    assert_int_equal(uf_memcpy(&host, y, sizeof host, UF_DEVICE_TO_HOST, s), UF_ERR_DEVICE);
    fprintf(stderr, "# fault reported as: %s\n", uf_status_string(UF_ERR_DEVICE));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fault_reported_by_synchronize),
    };
    return TH_RUN("async_fault", tests);
}
