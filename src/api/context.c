/* SPDX-License-Identifier: Apache-2.0 */
/* Contexts as the API hands them out: created on top of every layer (the common part, the
 * planner's settings, the binary cache) and released top to bottom (plans, programs, the
 * reference's caches, then the OpenCL objects). */
#include "plan/plan.h"
#include "reference/reference.h"

#include <stdio.h>

/* Notes a context starts with: which vendor kernels its plans may use. */
static void context_notes(fa_cl_context *ctx)
{
    if (ctx->env.nv_tf32 == 0 && ctx->props.is_nvidia && ctx->props.nv_cc_major >= 8)
        fa_cl__note(ctx, "fp32 on tensor cores (nvidia-tf32x3): off (FA_CL_NV_TF32=0): f32 takes the portable kernels");
    if (ctx->env.mma_emulate && !ctx->env.vendor_path_off)
        fa_cl__note(ctx, "tensor-core kernel (nvidia-mma): planned for f16/bf16 with its PTX emulated in portable "
                         "OpenCL C (FA_CL_MMA_EMULATE=1, for tests: slow)");
    else if (ctx->props.is_nvidia && ctx->props.nv_cc_major >= 8)
        fa_cl__note(ctx, ctx->env.vendor_path_off
                             ? "tensor-core kernel (nvidia-mma): off (FA_CL_VENDOR_PATH=0), portable kernels only"
                             : "tensor-core kernel (nvidia-mma): planned for f16/bf16, head_dim <= 256");
    if (ctx->props.is_nvidia && ctx->props.nv_cc_major == 9 && ctx->props.nv_cc_minor == 0 && !ctx->env.mma_emulate)
        fa_cl__note(ctx, ctx->env.wgmma != 0 && !ctx->env.vendor_path_off
                             ? "Hopper kernel (nvidia-wgmma): planned for f16/bf16 with head_dim 41..64 (rows of "
                               "more than 512 keys) or 97..256 and more than 64 query rows (wgmma through sm_90a "
                               "PTX; a producer warpgroup copies, by TMA in dense plans (at head_dim 129..256 only "
                               "there), FA_CL_WGMMA_PRODUCER=0 turns it off, FA_CL_TMA=0 copies by cp.async; "
                               "FA_CL_WGMMA=0 turns the kernel off)"
                             : ctx->env.vendor_path_off ? "Hopper kernel (nvidia-wgmma): off (FA_CL_VENDOR_PATH=0)"
                                                        : "Hopper kernel (nvidia-wgmma): off (FA_CL_WGMMA=0)");
}

fa_cl_status fa_cl_context_create(cl_context context, cl_device_id device, cl_command_queue queue,
                                  fa_cl_context **out)
{
    fa_cl_status st = fa_cl__context_open(context, device, queue, out);
    if (st != FA_CL_SUCCESS)
        return st;
    fa_cl_context *ctx = *out;
    char msg[512];
    if ((st = fa_cl__env_resolve(&ctx->env, msg, sizeof msg)) != FA_CL_SUCCESS) {
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
