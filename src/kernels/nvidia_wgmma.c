/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-wgmma: the tensor-core forward with Hopper's warpgroup MMA (cl/fa_forward_nv_mma.cl built
 * with FA_WGMMA, cl/fa_nv_wgmma.cl), compute capability 9.0, through the sm_90a PTX retargeting
 * (src/program/ptx_retarget.h). Its tile rules. */
#include "fa_cl_internal.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_nv_ptx.cl", "fa_nv_wgmma.cl",
                                    "fa_forward_nv_mma.cl"};

size_t fa_cl_wgmma_local_bytes(int block_q, int block_kv, int dim_padded, int stages)
{
    /* Q, and `stages` K and V tiles, unpadded rows of 16-bit values (core matrices) */
    return (size_t)(block_q + 2 * stages * block_kv) * (size_t)dim_padded * 2;
}

static int applies(const fa_cl_limits *lim, const fa_cl_tile_request *req)
{
    (void)req;
    return lim->nv_wgmma;
}

static fa_cl_status plan(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                         size_t msg_size)
{
    const int forced_here = lim->forced_variant == FA_CL_KERNEL_NVIDIA_WGMMA;
    /* head_dim 97..128 unless forced: below, nvidia-mma is as fast or faster (H200, session 11
     * call 4, B=8 H=16 N=4096 f16, against FA_CL_WGMMA=0: d = 128 403 against 337 TFLOP/s, d = 111
     * 282 against 230, d = 96 316 against 318, d = 80 262 against 266, d = 64 (call 3) 287 against
     * 295) */
    const int dp = req->head_dim <= 64 ? (forced_here ? 64 : 0)
                   : req->head_dim <= 128 ? (forced_here || req->head_dim > FA_CL_WGMMA_MIN_DIM ? 128 : 0)
                                          : 0;
    /* nv_mma is off for score modifiers and mixed types; q8_0 K/V and masks are nvidia-mma's */
    if (!lim->nv_wgmma || !lim->nv_mma || lim->mma_kv_q8 || lim->mma_mask || req->dtype == FA_CL_F32 ||
        !req->aligned16 || dp == 0 || req->seqlen_q <= FA_CL_WGMMA_MIN_ROWS) {
        snprintf(msg, msg_size, "needs an NVIDIA GPU of compute capability 9.0, f16/bf16 data with 16-byte aligned "
                 "rows, head_dim %d..128 (1..128 when forced), more than %d query rows, no score modifiers, mask "
                 "or quantized K/V", FA_CL_WGMMA_MIN_DIM + 1, FA_CL_WGMMA_MIN_ROWS);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    int br = req->seqlen_q > 64 ? FA_CL_WGMMA_BLOCK_Q : 64, bc = FA_CL_WGMMA_BLOCK_KV, forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if ((br != 64 && br != 128) || (bc != 64 && bc != 128) || lim->forced_rows > 0 ||
            lim->forced_cols > 0) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d for nvidia-wgmma: B_r 64 or 128 (warpgroups of 64 rows), "
                     "B_c 64 or 128, no third or fourth field", br, bc);
            return forced_here ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
    }
    const int stages = 2;
    size_t bytes = fa_cl_wgmma_local_bytes(br, bc, dp, stages);
    while (!forced && bytes > out->local_mem_budget && bc > 64) {
        bc /= 2;
        bytes = fa_cl_wgmma_local_bytes(br, bc, dp, stages);
    }
    const int wg = br / 16 * 32;
    if (bytes > out->local_mem_budget || (size_t)wg > lim->max_work_group) {
        snprintf(msg, msg_size, "%dx%d: nvidia-wgmma needs %zu bytes of local memory and %d work-items at head_dim %d; "
                 "the budget is %zu bytes, the device takes %zu work-items", br, bc, bytes, wg, req->head_dim,
                 out->local_mem_budget, lim->max_work_group);
        return forced ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
    }
    fa_cl__tensor_core_tiles(lim, req, &fa_cl_kernel_nvidia_wgmma, br, bc, 16, dp, bytes, out);
    out->forced = forced;
    out->stages = stages;
    out->kv_warps = 1;
    out->ptx_emulated = 0;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl_tiles *t, char *out, size_t n)
{
    /* two warpgroups take turns issuing their products (FA_WG_PINGPONG; H200, session 11 call 5,
     * against without: B=8 H=16 N=4096 f16 d = 128 418.7 against 401.9 TFLOP/s, causal 381.9
     * against 362.7, bf16 421.2 against 402.4, B=1 H=32 N=16384 causal 443.3 against 423.5, B=64
     * N=512 281.7 against 284.3; with padded rows, d = 111, 269.5 against 282.1: not there) */
    const int pingpong = t->block_q == 128 && !t->rows_padded;
    return snprintf(out, n, " -DWARP_ROWS=16 -DFA_WGMMA -DFA_ALIGNED16 -DFA_CP_L2=128%s%s",
                    t->rows_padded ? " -DFA_ROWS_PADDED" : "", pingpong ? " -DFA_WG_PINGPONG" : "");
}

const fa_cl_kernel_family fa_cl_kernel_nvidia_wgmma = {
    "nvidia-wgmma", FA_CL_KERNEL_NVIDIA_WGMMA, FA_CL_OP_FORWARD, "fa_forward", files, 5, 1,
    "f16/bf16 on Hopper tensor cores (compute capability 9.0): wgmma through sm_90a PTX, cp.async",
    applies, plan, options, FA_CL_UNROLL_MAX_DIM, 1};
