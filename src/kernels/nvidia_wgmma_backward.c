/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-wgmma-backward: the tensor-core backward with Hopper's warpgroup MMA (the cl/fa_nv_bwd_*.cl units
 * built with FA_WGMMA, cl/fa_nv_wgmma.cl), compute capability 9.0, through the sm_90a PTX
 * retargeting (src/program/ptx_retarget.h). Its tile rules; the planner walks it
 * for backward plans only (its op). */
#include "kernels/nvidia_wgmma_backward.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_backward_common.cl", "fa_nv_ptx.cl", "fa_nv_wgmma.cl",
                                    "fa_nv_bwd_config.cl", "fa_nv_bwd_io.cl", "fa_nv_bwd_softmax.cl",
                                    "fa_nv_bwd_wgmma.cl", "fa_nv_bwd_dkdv.cl", "fa_nv_bwd_dq.cl"};

size_t fa_cl__wgmma_backward_local_bytes(int dim_padded)
{
    /* the dkdv kernel's (the dq kernel's lacks the floats): K and V, and two buffers each of Q and
     * dO, unpadded rows of 16-bit values (wgmma's layout); two buffers of the rows' LSE and D */
    const size_t b = FA_CL_WGMMA_BACKWARD_BLOCK;
    return 6 * b * (size_t)dim_padded * 2 + 4 * b * 4;
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED_REPLACING("FA_CL_WGMMA")};

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const int dp = req->head_dim <= 64 ? 64 : 128;
    const int b = FA_CL_WGMMA_BACKWARD_BLOCK;
    const size_t bytes = fa_cl__wgmma_backward_local_bytes(dp);
    if (req->head_dim % 8 != 0 || !req->aligned16 || (lim->forced_q > 0 && (lim->forced_q != b || lim->forced_kv != b)) ||
        bytes > out->local_mem_budget || (size_t)(b / 16 * 32) > lim->max_work_group) {
        snprintf(msg, msg_size, "needs 16-byte aligned rows, head_dim a multiple of 8 up to %d, %d x %d tiles (%zu "
                 "bytes of local memory; the budget is %zu)", FA_CL_MMA_BACKWARD_MAX_DIM, b, b, bytes,
                 out->local_mem_budget);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    fa_cl__tensor_core_tiles(lim, req, &fa_cl__kernel_nvidia_wgmma_backward, b, b, 16, dp, bytes, out);
    out->forced = lim->forced_q > 0;
    out->emulated = 0;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    /* By measurement on an H200 (commit 407dc48): at d_padded 128, where the local memory allows two
     * work-groups an SM, a step's S^T/dP^T issued behind the previous step's dV/dK (FA_BW_WG_PIPE)
     * hides their latency; at d_padded 64 .maxnreg 168 lets three work-groups share an SM without
     * spilling, which the pipelined form would (it spills there, and alone gains less). */
    return snprintf(out, n, " -DFA_WGMMA -DFA_ALIGNED16 -DFA_CP_L2=128%s",
                    t->head_dim_padded > 64 ? " -DFA_BW_WG_PIPE" : " -DFA_WG_MAXNREG=168");
}

const fa_cl__kernel_family fa_cl__kernel_nvidia_wgmma_backward = {
    .name = "nvidia-wgmma-backward",
    .id = FA_CL_KERNEL_NVIDIA_WGMMA_BACKWARD,
    .op = FA_CL_OP_BACKWARD,
    .entry = "fa_backward_dkdv",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "the backward on Hopper tensor cores (compute capability 9.0, f16/bf16, head_dim <= 128): wgmma through "
               "sm_90a PTX for the five products, dQ in its own pass",
    .takes = {FA_CL_DTYPES_16, FA_CL_FEAT_VARLEN_Q | FA_CL_FEAT_VARLEN_K | FA_CL_FEAT_SEQLENS | FA_CL_FEAT_MODIFIERS,
              FA_CL_MASKS_ALL, FA_CL_MMA_BACKWARD_MAX_DIM},
    .needs = {.vendor = FA_CL_VENDOR_NVIDIA, .arch_min = 90, .arch_max = 90},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .ptx_sm90a = 1,
};
