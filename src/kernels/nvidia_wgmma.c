/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-wgmma: the tensor-core forward with Hopper's warpgroup MMA (cl/fa_forward_nv_mma.cl built
 * with FA_WGMMA, cl/fa_nv_wgmma.cl), compute capability 9.0, through the sm_90a PTX retargeting
 * (src/program/ptx_retarget.h). Its tile rules. */
#include "kernels/nvidia_wgmma.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_nv_ptx.cl", "fa_nv_wgmma.cl",
                                    "fa_nv_tma.cl", "fa_forward_nv_mma.cl"};

size_t fa_cl__wgmma_local_bytes(int block_q, int block_kv, int dim_padded, int stages, int mask_entry_bytes,
                               int producer)
{
    /* Q, and `stages` K and V tiles, unpadded rows of 16-bit values (core matrices); a mask's ring
     * of `stages` tiles, unpadded (swizzled) rows, and each row's first entry (8 bytes); with the
     * producer, 4 mbarriers a stage (8 bytes each) */
    const size_t sync = producer ? (size_t)32 * (size_t)stages : 0;
    const size_t mask = mask_entry_bytes > 0 ? (size_t)stages * (size_t)block_q * (size_t)block_kv *
                                                       (size_t)mask_entry_bytes +
                                                   (size_t)block_q * 8
                                             : 0;
    return (size_t)(block_q + 2 * stages * block_kv) * (size_t)dim_padded * 2 + mask + sync;
}

static int applies(const fa_cl__limits *lim, const fa_cl__tile_request *req)
{
    (void)req;
    return lim->nv_wgmma;
}

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const int forced_here = lim->forced_variant == FA_CL_KERNEL_NVIDIA_WGMMA;
    /* The default head_dims: where wgmma beat nvidia-mma (FA_CL_WGMMA=0) in the same H200 run
     * (commits ab18c05, 316670d): 129..256 padded to 256, 97..128, and 41..64 padded to 64 where
     * rows have more than 512 keys (at 512 it lost). Not 65..96, where
     * the padding to 128 costs what wgmma gains, nor 40 and below (even). */
    const int small = req->head_dim > FA_CL_WGMMA_SMALL_MIN_DIM && req->seqlen_k > FA_CL_WGMMA_SMALL_MIN_KEYS;
    const int dp = req->head_dim <= 64 ? (forced_here || small ? 64 : 0)
                   : req->head_dim <= 128 ? (forced_here || req->head_dim > FA_CL_WGMMA_MIN_DIM ? 128 : 0)
                   : req->head_dim <= 256 ? 256
                                          : 0;
    /* nv_mma is off for score modifiers and mixed types; q8_0 K/V, and masks whose rows are not
     * 16-byte aligned (their tiles are copied with K), are nvidia-mma's */
    const int mask_bytes = lim->mma_mask ? lim->mma_mask_bytes : 0;
    if (!lim->nv_wgmma || !lim->nv_mma || lim->mma_kv_q8 || (lim->mma_mask && mask_bytes == 0) ||
        req->dtype == FA_CL_F32 || !req->aligned16 || dp == 0 || req->seqlen_q <= FA_CL_WGMMA_MIN_ROWS) {
        snprintf(msg, msg_size, "needs an NVIDIA GPU of compute capability 9.0, f16/bf16 data with 16-byte aligned "
                 "rows, head_dim %d..64 (with more than %d keys) or %d..256 (1..256 when forced), more than %d query "
                 "rows, no score modifiers or quantized K/V, a mask only with 16-byte aligned rows",
                 FA_CL_WGMMA_SMALL_MIN_DIM + 1, FA_CL_WGMMA_SMALL_MIN_KEYS, FA_CL_WGMMA_MIN_DIM + 1,
                 FA_CL_WGMMA_MIN_ROWS);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    /* keys a block: 128, 64 at head_dim 256 (the larger block that fits beside O; faster than 32,
     * commit ee7af87); fewer where the local memory is short, down to 64 (32 at 256: an n = 32 S
     * product). At 256, where the producer copies by TMA and no mask's tiles ride along,
     * FlashAttention-3's 80, which TMA's few producer registers leave room for. Not its 176 at d_pad
     * 128 (even at N = 4096, slower where a 1024-key row's last block is a third empty), nor 192 keys
     * at d_pad 64, nor 3 stages: all measured on an H200 (commit 31cdf4a). */
    const int bc_max = dp > 128 ? FA_CL_WGMMA_BLOCK_KV / 2 : FA_CL_WGMMA_BLOCK_KV, bc_min = dp > 128 ? 32 : 64;
    const int bc_wide = dp == 256 ? FA_CL_WGMMA_WIDE_KV : 0;
    const int tma_tiles = lim->wg_tma_tiles && mask_bytes == 0; /* the producer copies by TMA, no mask's tiles */
    /* three computing warpgroups (192 rows) at d_pad 64, FlashAttention-3's there: a third less
     * K/V traffic a FLOP, a third computing warp a scheduler (faster than 128 rows on every shape
     * measured on an H200, commit d9af401). Not at d_pad 128: 160 registers a work-item are too few
     * (192 x 128 and 192 x 96 spill, 192 x 64 doubles the blocks' fixed costs) */
    const int tall = dp == 64 && lim->wg_producer && tma_tiles && req->seqlen_q > FA_CL_WGMMA_BLOCK_Q;
    int br = tall ? FA_CL_WGMMA_TALL_Q : req->seqlen_q > 64 ? FA_CL_WGMMA_BLOCK_Q : 64, bc = bc_max, forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if ((br != 64 && br != 128 && br != FA_CL_WGMMA_TALL_Q) ||
            ((bc < bc_min || bc > bc_max || (bc & (bc - 1))) && bc != bc_wide) || lim->forced_rows > 0 ||
            lim->forced_cols > 0) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d for nvidia-wgmma: B_r 64, 128 or %d (warpgroups of 64 rows), "
                     "B_c %d..%d (a power of two) or %d at head_dim %d, no third or fourth field", br, bc,
                     FA_CL_WGMMA_TALL_Q, bc_min, bc_max, bc_wide, req->head_dim);
            return forced_here ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
    }
    const int stages = 2;
    /* a producer warpgroup copying for the two computing ones (FlashAttention-3's warp
     * specialisation) with 128-row blocks up to d_padded 128: faster at every d_pad 64 and 128
     * shape measured against FA_CL_WGMMA_PRODUCER=0 on an H200 (commit a70c4c0). At d_padded 256
     * the computing warpgroups' 224 registers beside a cp.async producer are too few for O's 128
     * accumulators. With copies by TMA the producer needs fewer than 24 registers, so at 256 it
     * takes 24/240 where the plan's copies go by TMA (lim->wg_tma_tiles; plan.c clears it
     * otherwise) */
    const int producer = lim->wg_producer && ((br == 128 && (dp <= 128 || lim->wg_tma_tiles)) ||
                                              (br == FA_CL_WGMMA_TALL_Q && dp <= 128 && tma_tiles));
    if (!forced && producer && tma_tiles && bc_wide > 0 &&
        fa_cl__wgmma_local_bytes(br, bc_wide, dp, stages, 0, producer) <= out->local_mem_budget)
        bc = bc_wide;
    if ((bc == bc_wide || br == FA_CL_WGMMA_TALL_Q) && (!producer || !tma_tiles)) {
        snprintf(msg, msg_size, "FA_CL_TILE=%dx%d for nvidia-wgmma: %s need the producer warpgroup's copies by TMA "
                 "(a dense plan, FA_CL_TMA not 0), no mask%s", br, bc,
                 br == FA_CL_WGMMA_TALL_Q ? "three computing warpgroups" : "these keys a block",
                 br == FA_CL_WGMMA_TALL_Q ? " and head_dim up to 128" : "");
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    size_t bytes = fa_cl__wgmma_local_bytes(br, bc, dp, stages, mask_bytes, producer);
    while (!forced && bytes > out->local_mem_budget && bc > bc_min) {
        bc /= 2;
        bytes = fa_cl__wgmma_local_bytes(br, bc, dp, stages, mask_bytes, producer);
    }
    const int wg = br / 16 * 32 + (producer ? 128 : 0);
    if (bytes > out->local_mem_budget || (size_t)wg > lim->max_work_group) {
        snprintf(msg, msg_size, "%dx%d: nvidia-wgmma needs %zu bytes of local memory and %d work-items at head_dim %d; "
                 "the budget is %zu bytes, the device takes %zu work-items", br, bc, bytes, wg, req->head_dim,
                 out->local_mem_budget, lim->max_work_group);
        return forced ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
    }
    fa_cl__tensor_core_tiles(lim, req, &fa_cl__kernel_nvidia_wgmma, br, bc, 16, dp, bytes, out);
    out->forced = forced;
    out->stages = stages;
    out->kv_warps = 1;
    out->ptx_emulated = 0;
    out->mask_async = mask_bytes > 0;
    out->producer = producer;
    out->work_group_size = wg;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    /* two warpgroups take turns issuing their products (FA_WG_PINGPONG). It won before the producer
     * warpgroup, not with padded rows (commit ab18c05). With the producer at d_pad 128 and 256 it
     * loses: the turns make each warpgroup wait for the other's products, where the scheduler
     * already interleaves two warpgroups that never meet at a barrier. At d_pad 64 (128-row blocks:
     * masks, short rows) it still wins. Measured on an H200 (commit 5ae629f). */
    const int pingpong = t->block_q == 128 && !t->rows_padded && (!t->producer || t->head_dim_padded == 64) &&
                         !t->persistent;
    /* the producer warpgroup: 384 work-items (512 with three computing warpgroups), 168 (128)
     * registers each at entry (65536 / work-items), moved to the computing warpgroups by setmaxnreg
     * (the kernel's FA_WG_*_REGS) */
    char producer[64] = "";
    if (t->producer)
        snprintf(producer, sizeof producer, " -DFA_WG_PRODUCER -DFA_WG_MAXNREG=%d",
                 65536 / t->work_group_size / 8 * 8);
    return snprintf(out, n, " -DWARP_ROWS=16 -DFA_WGMMA -DFA_ALIGNED16 -DFA_CP_L2=128%s%s%s",
                    t->rows_padded ? " -DFA_ROWS_PADDED" : "", pingpong ? " -DFA_WG_PINGPONG" : "", producer);
}

const fa_cl__kernel_family fa_cl__kernel_nvidia_wgmma = {
    .name = "nvidia-wgmma",
    .id = FA_CL_KERNEL_NVIDIA_WGMMA,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = 6,
    .vendor = 1,
    .summary = "f16/bf16 on Hopper tensor cores (compute capability 9.0): wgmma through sm_90a PTX, cp.async",
    .applies = applies,
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .ptx_sm90a = 1,
};
