/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-tf32x3: f32 attention on NVIDIA tensor cores with fp32 accuracy, every product as three
 * TF32 mma (cl/fa_forward_nv_tf32.cl). Its tile rules. */
#include "kernels/nvidia_tf32.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_fwd_coords.cl", "fa_fwd_rows.cl",
                                    "fa_fwd_chunks.cl", "fa_fwd_masks.cl", "fa_fwd_io.cl", "fa_nv_ptx.cl",
                                    "fa_nv_tf32_config.cl", "fa_nv_softmax.cl", "fa_nv_mods.cl", "fa_forward_nv_tf32.cl"};

size_t fa_cl__tf32_local_bytes(int block_q, int block_kv, int dim_padded, int aligned16)
{
    const size_t nbuf = aligned16 ? 2 : 1;
    return 4 * ((size_t)block_q * (size_t)(dim_padded + 8) +
                nbuf * (size_t)block_kv * (size_t)(2 * dim_padded + 12));
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED_REPLACING("FA_CL_NV_TF32"), FA_CL_TUNE_EMULATE};

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const size_t budget = out->local_mem_budget;
    const int dp = req->head_dim <= 64 ? 64 : 128;
    int br = FA_CL_TF32_BLOCK_Q, bc = FA_CL_TF32_BLOCK_KV, forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if (br % 16 || bc % 8 || br > 256 || bc > 128 || (lim->forced_rows > 0 && lim->forced_rows != 16) ||
            lim->forced_cols > 0) {
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d for the fp32 tensor-core kernel: B_r a multiple of 16 up to 256, "
                     "B_c a multiple of 8 up to 128, 16 rows per warp", br, bc);
            return lim->forced_variant == FA_CL_KERNEL_NVIDIA_TF32X3 ? FA_CL_ERROR_INVALID_ARGUMENT
                                                                     : FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
    }
    const size_t bytes = fa_cl__tf32_local_bytes(br, bc, dp, req->aligned16);
    const int wg = br / 16 * 32;
    if (bytes > budget || (size_t)wg > lim->max_work_group) {
        snprintf(msg, msg_size, "%s%dx%d: the fp32 tensor-core kernel needs %zu bytes of local memory and %d "
                 "work-items at head_dim %d; the budget is %zu bytes", forced ? "FA_CL_TUNE tile=" : "", br, bc, bytes, wg,
                 req->head_dim, budget);
        return forced ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
    }
    fa_cl__tensor_core_tiles(lim, req, &fa_cl__kernel_nvidia_tf32x3, br, bc, 16, dp, bytes, out);
    out->forced = forced;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    return snprintf(out, n, "%s%s", FA_CL_NV(t, ALIGNED16) ? " -DFA_ALIGNED16" : "", t->emulated ? " -DFA_PTX_EMULATE" : "");
}

const fa_cl__kernel_family fa_cl__kernel_nvidia_tf32x3 = {
    .name = "nvidia-tf32x3",
    .id = FA_CL_KERNEL_NVIDIA_TF32X3,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "f32 on NVIDIA tensor cores (compute capability >= 8.0, head_dim <= 128), fp32 accuracy through 3xTF32 mma",
    .takes = {1u << FA_CL_F32, FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_SERVING, 0, FA_CL_TF32_MAX_DIM},
    .needs = {.vendor = FA_CL_VENDOR_NVIDIA, .arch_min = 80},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};
