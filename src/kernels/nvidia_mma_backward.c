/* SPDX-License-Identifier: Apache-2.0 */
/* The backward on NVIDIA tensor cores (mma.sync through inline PTX), head_dim up to 128, compute
 * capability >= 8.0: two families of one kernel (the cl/fa_nv_bwd_*.cl units) and their tile rules,
 *   nvidia-mma-backward     f16/bf16 (m16n8k16; P and dS rounded to the storage type), and
 *   nvidia-tf32x3-backward  f32, fp32-accurate: every product 3xTF32 (m16n8k8), P and dS split too.
 * The planner walks them for backward plans only (their op). */
#include "kernels/nvidia_mma_backward.h"

#include <stdio.h>
#include <string.h>

static const char *const files[] = {"fa_common.cl", "fa_nv_ptx.cl", "fa_backward_common.cl", "fa_nv_bwd_config.cl",
                                    "fa_nv_bwd_io.cl", "fa_nv_bwd_softmax.cl", "fa_nv_bwd_mma.cl",
                                    "fa_nv_bwd_dkdv.cl", "fa_nv_bwd_dq.cl"};
static const char *const files_tf32[] = {"fa_common.cl", "fa_nv_ptx.cl", "fa_backward_common.cl",
                                         "fa_nv_bwd_config.cl", "fa_nv_bwd_io.cl", "fa_nv_bwd_softmax.cl",
                                         "fa_nv_bwd_tf32.cl", "fa_nv_bwd_dkdv.cl", "fa_nv_bwd_dq.cl"};

size_t fa_cl__mma_backward_local_bytes(int block, int dim_padded, int aligned16)
{
    const size_t nbuf = aligned16 ? 2 : 1; /* cl/fa_nv_bwd_io.cl's NBUF: the streamed tiles' buffers */
    return (size_t)(2 + 2 * nbuf) * (size_t)block * (size_t)(dim_padded + 8) * 2 + 2 * nbuf * (size_t)block * 4;
}

size_t fa_cl__tf32_backward_local_bytes(int block, int dim_padded, int aligned16, int exchange_rows)
{
    const size_t nbuf = aligned16 ? 2 : 1;
    return 4 * ((size_t)(2 + 2 * nbuf) * (size_t)block * (size_t)(dim_padded + 4) + 2 * nbuf * (size_t)block +
                (size_t)block * (size_t)exchange_rows);
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED, FA_CL_TUNE_EMULATE};
static const fa_cl__tune_key tune_tf32[] = {FA_CL_TUNE_ENABLED_REPLACING("FA_CL_NV_TF32"), FA_CL_TUNE_EMULATE};

/* dkdv's rows a pass (tf32; PASS_ROWS) for blocks of b: forced, or the block, but
 * FA_CL_TF32_BACKWARD_PASS where one warp holds dK and dV of d_padded 128 */
static int tf32_pass(int forced_pass, int b, int dp, int roles)
{
    return forced_pass ? forced_pass : !roles && dp == 128 && b > FA_CL_TF32_BACKWARD_PASS ? FA_CL_TF32_BACKWARD_PASS : b;
}

/* local memory of either family's kernels at blocks of b (tf32 with roles: P^T's exchange too, and
 * with the softcap P^T times its derivative beside it: cl/fa_nv_bwd_tf32.cl) */
static size_t family_bytes(int tf32, int b, int dp, int aligned, int pass, int roles, int softcap)
{
    return tf32 ? fa_cl__tf32_backward_local_bytes(b, dp, aligned, roles ? pass * (softcap ? 2 : 1) : 0)
                : fa_cl__mma_backward_local_bytes(b, dp, aligned);
}

/* Either family's tiles: B_r = B_c = B, FA_CL_MMA_BACKWARD_BLOCK halved while its local memory does
 * not fit the budget, or FA_CL_TUNE tile=BxB (the tf32 family: BxBxPxW, P rows a pass, W warps per 16
 * keys in dkdv). A forced tile this kernel cannot take is UNSUPPORTED, meant for the portable
 * backward (which checks it), unless FA_CL_KERNEL_VARIANT forces this family: then
 * INVALID_ARGUMENT. */
static fa_cl_status plan_family(const fa_cl__limits *lim, const fa_cl__tile_request *req, const fa_cl__kernel_family *f,
                                fa_cl__tiles *out, char *msg, size_t msg_size)
{
    const int tf32 = f->id == FA_CL_KERNEL_NVIDIA_TF32_BACKWARD;
    const int dp = req->head_dim <= 64 ? 64 : 128;
    /* rows copied 16 bytes at a time (the kernel's FA_BW_ASYNC): NBUF = 2 */
    const int aligned = req->aligned16 && req->head_dim % (tf32 ? 4 : 8) == 0;
    const size_t budget = out->local_mem_budget;
    const int forced_here = lim->forced_variant == (int)f->id;
    const int softcap = (req->features & FA_CL_FEAT_SOFTCAP) != 0;
    /* tf32 at d_padded 128: one warp's dK and dV of 16 keys are 256 floats a lane, which spill;
     * two warps share the keys by role (FA_BW_ROLES), each holding one accumulator and computing no
     * product twice: faster on an H200 than one warp or two each holding half of the columns
     * (commit 73b31f1, docs/design.md) */
    int b = FA_CL_MMA_BACKWARD_BLOCK, pass = 0, forced = 0, roles = tf32 && dp == 128;
    if (lim->forced_q > 0 || lim->forced_kv > 0) {
        b = lim->forced_q;
        pass = tf32 && lim->forced_rows > 0 ? lim->forced_rows : 0;
        const int warps = tf32 && lim->forced_cols > 0 ? lim->forced_cols : roles ? 2 : 1;
        roles = warps == 2;
        if (lim->forced_kv != b || b % 16 || b > 128 || (pass && (pass % 8 || b % pass)) || warps > 2 ||
            family_bytes(tf32, b, dp, aligned, tf32_pass(pass, b, dp, roles), roles, softcap) > budget ||
            (size_t)(b / 16 * 32 * warps) > lim->max_work_group) {
            char more[32] = "";
            if (pass)
                snprintf(more, sizeof more, "x%d", pass);
            if (tf32 && lim->forced_cols > 0)
                snprintf(more + strlen(more), sizeof more - strlen(more), "x%d", lim->forced_cols);
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d%s for %s: B_r = B_c, a multiple of 16 up to 128, in %zu bytes "
                     "of local memory%s", lim->forced_q, lim->forced_kv, more, f->name, budget,
                     tf32 ? "; the third field (rows a pass) a multiple of 8 dividing it, the fourth (warps per 16 "
                            "keys in dkdv) 1 or 2" : "");
            return forced_here ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
    }
    while (!forced && b > 16 &&
           family_bytes(tf32, b, dp, aligned, tf32_pass(pass, b, dp, roles), roles, softcap) > budget)
        b /= 2;
    const size_t bytes = family_bytes(tf32, b, dp, aligned, tf32_pass(pass, b, dp, roles), roles, softcap);
    if (bytes > budget || (size_t)(b / 16 * 32 * (roles ? 2 : 1)) > lim->max_work_group) {
        snprintf(msg, msg_size, "%s needs %zu bytes of local memory at head_dim %d; the budget is %zu", f->name, bytes,
                 req->head_dim, budget);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    fa_cl__tensor_core_tiles(lim, req, f, b, b, 16, dp, bytes, out);
    out->forced = forced;
    if (tf32) { /* S^T and dP^T of a pass beside dK and dV in the registers: the whole block at once
                 * with roles (faster than passes of 32 rows at d = 128, commit 73b31f1) */
        FA_CL_NV(out, PASS_ROWS) = tf32_pass(pass, b, dp, roles);
        FA_CL_NV(out, DKDV_ROLES) = roles;
        out->main_wg_scale = roles ? 2 : 0; /* dkdv's work-group: two warps per 16 keys */
    }
    return FA_CL_SUCCESS;
}

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    return plan_family(lim, req, &fa_cl__kernel_nvidia_mma_backward, out, msg, msg_size);
}

static fa_cl_status plan_tf32(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size)
{
    return plan_family(lim, req, &fa_cl__kernel_nvidia_tf32_backward, out, msg, msg_size);
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    char pass[48] = "";
    if (FA_CL_NV(t, PASS_ROWS) > 0)
        snprintf(pass, sizeof pass, " -DPASS_ROWS=%d", FA_CL_NV(t, PASS_ROWS));
    if (FA_CL_NV(t, DKDV_ROLES))
        snprintf(pass + strlen(pass), sizeof pass - strlen(pass), " -DFA_BW_ROLES");
    return snprintf(out, n, "%s%s%s", pass, FA_CL_NV(t, ALIGNED16) ? " -DFA_ALIGNED16" : "",
                    t->emulated ? " -DFA_PTX_EMULATE" : "");
}

const fa_cl__kernel_family fa_cl__kernel_nvidia_mma_backward = {
    .name = "nvidia-mma-backward",
    .id = FA_CL_KERNEL_NVIDIA_MMA_BACKWARD,
    .op = FA_CL_OP_BACKWARD,
    .entry = "fa_backward_dkdv",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "the backward on NVIDIA tensor cores (f16/bf16, head_dim <= 128): mma.sync for the five products, dQ in "
               "its own pass",
    .takes = {FA_CL_DTYPES_16, FA_CL_FEAT_VARLEN_Q | FA_CL_FEAT_VARLEN_K | FA_CL_FEAT_SEQLENS | FA_CL_FEAT_MODIFIERS,
              FA_CL_MASKS_ALL, FA_CL_MMA_BACKWARD_MAX_DIM},
    .needs = {.vendor = FA_CL_VENDOR_NVIDIA, .arch_min = 80},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};

const fa_cl__kernel_family fa_cl__kernel_nvidia_tf32_backward = {
    .name = "nvidia-tf32x3-backward",
    .id = FA_CL_KERNEL_NVIDIA_TF32_BACKWARD,
    .op = FA_CL_OP_BACKWARD,
    .entry = "fa_backward_dkdv",
    .files = files_tf32,
    .nfiles = sizeof files_tf32 / sizeof files_tf32[0],
    .summary = "the f32 backward on NVIDIA tensor cores (head_dim <= 128), fp32 accuracy through 3xTF32 mma, P and dS "
               "unrounded, dQ in its own pass",
    .takes = {1u << FA_CL_F32, FA_CL_FEAT_VARLEN_Q | FA_CL_FEAT_VARLEN_K | FA_CL_FEAT_SEQLENS | FA_CL_FEAT_MODIFIERS,
              FA_CL_MASKS_ALL, FA_CL_MMA_BACKWARD_MAX_DIM},
    .needs = {.vendor = FA_CL_VENDOR_NVIDIA, .arch_min = 80},
    .tune = tune_tf32,
    .ntune = sizeof tune_tf32 / sizeof tune_tf32[0],
    .plan = plan_tf32,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};
