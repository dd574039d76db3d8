/* SPDX-License-Identifier: Apache-2.0 */
/* The pieces both CLBlast references use (reference_common.h). */
#include "reference/reference_common.h"

#include <stdio.h>

#ifdef FA_CL_WITH_CLBLAST

static const char *const reference_files[] = {"fa_common.cl", "fa_reference.cl"};

fa_cl_status fa_cl__ref_program_get(fa_cl_context *ctx, int dtype, cl_program *out)
{
    char options[64];
    snprintf(options, sizeof options, "-DFA_DTYPE=%d", dtype);
    return fa_cl__program_get(ctx, reference_files, 2, options, 0, out);
}

static const char *clblast_status_name(CLBlastStatusCode s)
{
    switch (s) {
    case CLBlastNotImplemented: return "CLBlastNotImplemented";
    case CLBlastInvalidDimension: return "CLBlastInvalidDimension";
    case CLBlastInvalidLeadDimA: return "CLBlastInvalidLeadDimA";
    case CLBlastInvalidLeadDimB: return "CLBlastInvalidLeadDimB";
    case CLBlastInvalidLeadDimC: return "CLBlastInvalidLeadDimC";
    case CLBlastInsufficientMemoryA: return "CLBlastInsufficientMemoryA";
    case CLBlastInsufficientMemoryB: return "CLBlastInsufficientMemoryB";
    case CLBlastInsufficientMemoryC: return "CLBlastInsufficientMemoryC";
    case CLBlastInsufficientMemoryTemp: return "CLBlastInsufficientMemoryTemp";
    case CLBlastInvalidBatchCount: return "CLBlastInvalidBatchCount";
    case CLBlastInvalidLocalMemUsage: return "CLBlastInvalidLocalMemUsage";
    case CLBlastDatabaseError: return "CLBlastDatabaseError";
    case CLBlastUnknownError: return "CLBlastUnknownError";
    case CLBlastUnexpectedError: return "CLBlastUnexpectedError";
    default: break;
    }
    /* the remaining codes are OpenCL's own */
    return (int)s > -100 ? fa_cl__cl_error_name((cl_int)s) : "unknown CLBlast status";
}

fa_cl_status fa_cl__ref_enqueue_failed(fa_cl_context *ctx, cl_int err, const char *what)
{
    fa_cl_status st = fa_cl__fail_cl(ctx, err, what);
    return err == CL_OUT_OF_RESOURCES ? FA_CL_ERROR_OUT_OF_MEMORY : st;
}

fa_cl_status fa_cl__ref_step(fa_cl__ref_seq *s, cl_uint *num_wait, const cl_event **wait)
{
    *num_wait = 0;
    *wait = NULL;
    if (!s->enqueued) {
        s->enqueued = 1;
        *num_wait = s->num_wait;
        *wait = s->wait;
        return FA_CL_SUCCESS;
    }
    if (!s->ctx->queue_in_order) {
        cl_int err = clEnqueueBarrierWithWaitList(s->ctx->queue, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "%s: clEnqueueBarrierWithWaitList", s->call);
            return fa_cl__ref_enqueue_failed(s->ctx, err, what);
        }
    }
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__ref_gemm(fa_cl__ref_seq *s, const char *what, CLBlastTranspose ta, CLBlastTranspose tb, size_t m,
                             size_t n, size_t k, cl_mem a, size_t lda, size_t sa, cl_mem b, size_t ldb, size_t sb,
                             cl_mem c, size_t ldc, size_t sc, size_t batch)
{
    cl_uint nw;
    const cl_event *w;
    fa_cl_status st = fa_cl__ref_step(s, &nw, &w); /* never the first command: CLBlast takes no wait list */
    if (st != FA_CL_SUCCESS)
        return st;
    cl_command_queue queue = s->ctx->queue;
    fa_cl__lock_acquire(&s->ctx->lock);
    s->ctx->used_clblast = 1; /* context release clears CLBlast's caches */
    fa_cl__lock_release(&s->ctx->lock);
    CLBlastStatusCode bs = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, 1.0f, a, 0, lda, sa, b,
                                                      0, ldb, sb, 0.0f, c, 0, ldc, sc, batch, &queue, NULL);
    if (bs == CLBlastSuccess)
        return FA_CL_SUCCESS;
    st = (bs == CLBlastTempBufferAllocFailure || bs == CLBlastOpenCLOutOfResources ||
          bs == CLBlastOpenCLOutOfHostMemory || bs == CLBlastInvalidBufferSize)
             ? FA_CL_ERROR_OUT_OF_MEMORY
             : FA_CL_ERROR_OPENCL;
    return fa_cl__fail(s->ctx, st, "%s: CLBlastSgemmStridedBatched (%s) failed: %s (%d)", s->call, what,
                       clblast_status_name(bs), (int)bs);
}

#endif /* FA_CL_WITH_CLBLAST */
