/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-mma-backward: the backward on NVIDIA tensor cores (mma.sync through inline PTX), f16/bf16,
 * head_dim up to 128, compute capability >= 8.0 (cl/fa_backward_nv_mma.cl). Its tile rules; backward
 * plans call them (src/backward/backward_plan.c), never the forward planner. */
#include "fa_cl_internal.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_nv_ptx.cl", "fa_backward_common.cl", "fa_backward_nv_mma.cl"};

size_t fa_cl_mma_backward_local_bytes(int block, int dim_padded, int aligned16)
{
    const size_t nbuf = aligned16 ? 2 : 1; /* cl/fa_backward_nv_mma.cl's NBUF: the streamed tiles' buffers */
    return (size_t)(2 + 2 * nbuf) * (size_t)block * (size_t)(dim_padded + 8) * 2 + 2 * nbuf * (size_t)block * 4;
}

static int applies(const fa_cl_limits *lim, const fa_cl_tile_request *req)
{
    return lim->nv_mma && req->dtype != FA_CL_F32 && req->head_dim <= FA_CL_MMA_BACKWARD_MAX_DIM;
}

static fa_cl_status plan(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                         size_t msg_size)
{
    if (!applies(lim, req)) {
        snprintf(msg, msg_size, "the tensor-core backward needs an NVIDIA GPU of compute capability >= 8.0, f16 or "
                 "bf16 data and head_dim <= %d", FA_CL_MMA_BACKWARD_MAX_DIM);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    const int dp = req->head_dim <= 64 ? 64 : 128;
    const int aligned = req->aligned16 && req->head_dim % 8 == 0;
    const size_t budget = out->local_mem_budget;
    int b = FA_CL_MMA_BACKWARD_BLOCK, forced = 0;
    if (lim->forced_q > 0 || lim->forced_kv > 0) {
        b = lim->forced_q;
        if (lim->forced_kv != b || b % 16 || b > 128 || fa_cl_mma_backward_local_bytes(b, dp, aligned) > budget ||
            (size_t)(b / 16 * 32) > lim->max_work_group) {
            /* a tile this kernel cannot take is meant for the portable backward (which checks it) */
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d for the tensor-core backward: B_r = B_c, a multiple of 16 up to "
                     "128, in %zu bytes of local memory", lim->forced_q, lim->forced_kv, budget);
            return FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
    }
    while (!forced && b > 16 && fa_cl_mma_backward_local_bytes(b, dp, aligned) > budget)
        b /= 2;
    const size_t bytes = fa_cl_mma_backward_local_bytes(b, dp, aligned);
    if (bytes > budget || (size_t)(b / 16 * 32) > lim->max_work_group) {
        snprintf(msg, msg_size, "the tensor-core backward needs %zu bytes of local memory at head_dim %d; the budget "
                 "is %zu", bytes, req->head_dim, budget);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    fa_cl__tensor_core_tiles(lim, req, &fa_cl_kernel_nvidia_mma_backward, b, b, 16, dp, bytes, out);
    out->forced = forced;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl_tiles *t, char *out, size_t n)
{
    return snprintf(out, n, "%s%s", t->aligned16 ? " -DFA_ALIGNED16" : "", t->ptx_emulated ? " -DFA_PTX_EMULATE" : "");
}

const fa_cl_kernel_family fa_cl_kernel_nvidia_mma_backward = {
    "nvidia-mma-backward", FA_CL_KERNEL_NVIDIA_MMA_BACKWARD, FA_CL_OP_BACKWARD, "fa_backward_dkdv", files, 4, 1,
    "the backward on NVIDIA tensor cores (f16/bf16, head_dim <= 128): mma.sync for the five products, dQ in its own "
    "pass",
    applies, plan, options, FA_CL_UNROLL_MAX_DIM, 0};
