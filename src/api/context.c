/* SPDX-License-Identifier: Apache-2.0 */
/* Contexts as the API hands them out: created on top of every layer (the common part, the
 * planner's settings, the binary cache) and released top to bottom (plans, programs, the
 * reference's caches, then the OpenCL objects). */
#include "plan/plan.h"
#include "reference/reference.h"

#include <stdio.h>

/* Notes a context starts with: for each family of vendor code this device's vendor has (or that
 * tests build emulated), whether plans may take it and, where not, why (the families' own data). */
static void context_notes(fa_cl_context *ctx)
{
    fa_cl__limits lim;
    fa_cl__context_limits(ctx, &lim);
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        const int emulated = fa_cl__family_emulated(&lim, f);
        if (!fa_cl__family_walked(f) || !fa_cl__family_vendor(f) || (f->needs.vendor != lim.dev.vendor && !emulated))
            continue;
        char why[300];
        if (fa_cl__family_available(&lim, f, why, sizeof why))
            fa_cl__note(ctx, "kernel family %s: planned where it applies%s (%s)", f->name,
                        emulated ? ", its vendor code emulated in portable OpenCL C (FA_CL_TUNE emulate=1: for tests, "
                                   "slow)"
                                 : "",
                        f->summary);
        else
            fa_cl__note(ctx, "kernel family %s: not planned: %s", f->name, why);
    }
}

fa_cl_status fa_cl_context_create(cl_context context, cl_device_id device, cl_command_queue queue,
                                  fa_cl_context **out)
{
    fa_cl_status st = fa_cl__context_open(context, device, queue, out);
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_context *ctx = *out;
    char msg[512];
    if ((st = fa_cl__env_resolve(&ctx->env, fa_cl__env_getenv, NULL, msg, sizeof msg)) != FA_CL_SUCCESS) {
        fa_cl__context_close(ctx);
        *out = NULL;
        return fa_cl__fail(NULL, st, "fa_cl_context_create: %s", msg);
    }
    fa_cl__binary_cache_open(ctx);
    context_notes(ctx);
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl_context_create_default(fa_cl_context **out)
{
    if (!out)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_context_create_default: out is NULL");
    *out = NULL;
    cl_platform_id platform;
    cl_device_id device;
    fa_cl_status st = fa_cl__default_device(&platform, &device);
    if (st != FA_CL_SUCCESS)
        return st;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform, 0};
    cl_int err = CL_SUCCESS;
    cl_context clctx = clCreateContext(props, 1, &device, NULL, NULL, &err);
    if (!clctx)
        return fa_cl__fail_cl(NULL, err, "clCreateContext");
    cl_command_queue q = clCreateCommandQueue(clctx, device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!q) {
        clReleaseContext(clctx);
        return fa_cl__fail_cl(NULL, err, "clCreateCommandQueue");
    }
    st = fa_cl_context_create(clctx, device, q, out);
    /* the fa_cl context holds its own references */
    clReleaseCommandQueue(q);
    clReleaseContext(clctx);
    return st;
}

void fa_cl_context_release(fa_cl_context *ctx)
{
    if (!ctx)
        return;
    fa_cl__plan_cache_clear(ctx);
    fa_cl__program_cache_clear(ctx);
    fa_cl__reference_release(ctx);
    fa_cl__context_close(ctx);
}
