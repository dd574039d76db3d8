/* SPDX-License-Identifier: Apache-2.0 */
/* A context-parallel call's errors (this thread's message slot: fa_cl_cp_last_error) and its waits
 * with a deadline; below the strategies (ring.c, all_to_all.c) and the API (cp.c). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include "cp/cp_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local char last_error[1024];

const char *fa_cl_cp_last_error(void)
{
    return last_error;
}

fa_cl_status fa_cl_cp__fail(fa_cl_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

fa_cl_status fa_cl_cp__fa_fail(const fa_cl_cp__call *c, fa_cl_status st, const char *what)
{
    return fa_cl_cp__fail(st, "fa_cl_cp_forward (rank %d): %s: %s: %s", c->rank, what, fa_cl_status_string(st),
                          fa_cl_last_error(c->ctx));
}

fa_cl_status fa_cl_cp__cl_fail(cl_int err, const char *what)
{
    return fa_cl_cp__fail(err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE
                              ? FA_CL_ERROR_OUT_OF_MEMORY : FA_CL_ERROR_OPENCL,
                          "fa_cl_cp_forward: %s: OpenCL error %d", what, (int)err);
}

int fa_cl_cp__chunk_of(const fa_cl_cp__call *c, int r, int i)
{
    return c->nchunks == 1 ? r : i == 0 ? r : 2 * c->size - 1 - r;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

fa_cl_status fa_cl_cp__wait(const fa_cl_cp__call *c, void **requests, int n, const char *what)
{
    const double deadline = now_ms() + c->timeout_ms;
    int left = 0, failed = 0;
    for (int i = 0; i < n; i++)
        left += requests[i] != NULL;
    while (left > 0 && !failed) {
        for (int i = 0; i < n && !failed; i++) {
            if (!requests[i])
                continue;
            int done = 0;
            const int rc = c->t->test(c->t->user, requests[i], &done);
            if (rc != 0) {
                requests[i] = NULL; /* a failed request is the transport's no more */
                failed = rc;
            } else if (done) {
                requests[i] = NULL;
                left--;
            }
        }
        if (left > 0 && !failed) {
            if (now_ms() > deadline)
                break;
            /* leave the cores to the device's threads (a CPU device shares them) */
            const struct timespec pause = {0, 50000};
            nanosleep(&pause, NULL);
        }
    }
    if (left == 0 && !failed)
        return FA_CL_SUCCESS;
    for (int i = 0; i < n; i++)
        if (requests[i]) {
            c->t->abandon(c->t->user, requests[i]);
            requests[i] = NULL;
        }
    if (failed)
        return fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_forward (rank %d): %s: the transport reported "
                              "error %d (a peer failed or exited)", c->rank, what, failed);
    return fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_forward (rank %d): %s: no answer from a peer within "
                          "%d ms (timeout_ms): a rank failed, exited or did not make the call", c->rank, what,
                          c->timeout_ms);
}

fa_cl_status fa_cl_cp__allreduce_max2(const fa_cl_cp__call *c, const uint64_t in[2], uint64_t out[2], const char *what)
{
    /* on the heap: a collective abandoned at the deadline may still write its buffers (they are
     * then left to it, as the staging buffers are) */
    uint64_t *buf = (uint64_t *)malloc(4 * sizeof *buf);
    if (!buf)
        return fa_cl_cp__fail(FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_cp_forward: out of host memory (%s)", what);
    memcpy(buf, in, 2 * sizeof *buf);
    buf[2] = buf[3] = 0;
    void *req = NULL;
    const int rc = c->t->iallreduce_max(c->t->user, buf, buf + 2, 2, &req);
    if (rc != 0) {
        free(buf);
        return fa_cl_cp__fail(FA_CL_ERROR_COMMUNICATION, "fa_cl_cp_forward (rank %d): %s failed (transport error %d)",
                              c->rank, what, rc);
    }
    const fa_cl_status st = fa_cl_cp__wait(c, &req, 1, what);
    if (st == FA_CL_SUCCESS) {
        memcpy(out, buf + 2, 2 * sizeof *buf);
        free(buf);
    }
    return st;
}
