/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-mma: FlashAttention-2 on NVIDIA tensor cores (mma.sync through inline PTX), f16/bf16 K/V (or
 * q8_0, fp8) with q and o in f32, f16 or bf16 (FA_CL_FEAT_QO_TYPES: Q converted as it loads),
 * compute capability >= 8.0 (the cl/fa_nv_fwd_*.cl units, mainloop _sm80): what it takes, its tuning keys, its rules. */
#include "kernels/nvidia_mma.h"

#include <stdio.h>
#include <string.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_fwd_coords.cl", "fa_fwd_rows.cl",
                                    "fa_fwd_chunks.cl", "fa_fwd_masks.cl", "fa_fwd_io.cl", "fa_nv_ptx.cl",
                                    "fa_nv_fwd_config.cl", "fa_nv_softmax.cl", "fa_nv_mods.cl",
                                    "fa_nv_fwd_smem.cl", "fa_nv_fwd_load.cl", "fa_nv_fwd_q8.cl", "fa_nv_fwd_cp_async.cl",
                                    "fa_nv_fwd_mask.cl", "fa_nv_fwd_epilogue.cl", "fa_nv_fwd_tile.cl",
                                    "fa_nv_fwd_mma.cl", "fa_nv_fwd_mainloop_sm80.cl"};

int fa_cl__mma_dim_padded(int head_dim)
{
    /* a multiple of 32: k-steps of 16 taken in pairs (Q in registers), n-tiles of O in pairs; 32
     * rather than a power of two so that d = 80, 96, 160, 224 waste at most 16 columns of 32. The O
     * accumulator lives in registers: no instantiation beyond FA_CL_MMA_MAX_DIM (the plan declines) */
    if (head_dim < 1 || head_dim > FA_CL_MMA_MAX_DIM)
        return 0;
    return (head_dim + 31) / 32 * 32;
}

size_t fa_cl__mma_local_bytes(int block_q, int block_kv, int dim_padded, int warp_rows, int stages, int kv_warps,
                             int stage_row_bytes, int q8)
{
    /* q8_0 or fp8 K/V copied asynchronously (stage_row_bytes > 0 a raw row): a ring of stages of
     * raw rows after everything else (cl/fa_nv_fwd_smem.cl, STAGE_HALVES), and one K and one V
     * tile they are dequantised into; q8_0 with Q in registers (FA_Q8_FRAGS: the B fragments are
     * dequantised from the stages) no tiles, and Q's tile, the stages, the slices' results and O's
     * columns put in order after the key loop (UNPERM_HALVES) each take the space in turn */
    const int q_in_registers = warp_rows == 16 && dim_padded <= FA_CL_MMA_Q_REGS_MAX_DIM;
    const int q8_frags = q8 && stage_row_bytes > 0 && q_in_registers && block_q <= 16;
    const size_t kv_rows = q8_frags ? 0 : (size_t)(2 * (stage_row_bytes > 0 ? 1 : stages)) * (size_t)block_kv;
    const size_t staged = (size_t)(2 * stages) * (size_t)block_kv * (size_t)(stage_row_bytes > 0 ? stage_row_bytes : 0);
    const size_t unpermute =
        q8_frags ? (size_t)((block_q + warp_rows - 1) / warp_rows * kv_warps) * 16 * (size_t)dim_padded * 4 : 0;
    const size_t rows = q_in_registers ? (kv_rows > (size_t)block_q ? kv_rows : (size_t)block_q)
                                       : kv_rows + (size_t)block_q;
    const size_t tiles = 2 * rows * (size_t)(dim_padded + 8);
    /* key slices: each warp but the first leaves 32 lanes x (4 + dim_padded / 2) floats */
    const size_t parts = (size_t)(kv_warps - 1) * 32 * (size_t)(4 + dim_padded / 2) * 4;
    const size_t at_once = tiles > parts ? tiles : parts;
    if (!q8_frags)
        return at_once + staged;
    size_t most = at_once > staged ? at_once : staged;
    most = most > unpermute ? most : unpermute;
    return most;
}

size_t fa_cl__mma_mask_bytes(int block_q, int block_kv, int entry_bytes, int stages)
{
    /* the ring of tiles, and each row's first entry (an 8-byte index) */
    return (size_t)stages * (size_t)block_q * (size_t)(block_kv * entry_bytes + (entry_bytes == 4 ? 32 : 16)) +
           (size_t)block_q * 8;
}

/* Its tuning keys (FA_CL_TUNE=nvidia-mma:key=value; docs/tuning.md). */
enum { KEY_ENABLED, KEY_STAGES, KEY_KV_WARPS, KEY_PAD_ROWS, KEY_FP8_STAGED, KEY_EMULATE };
static const fa_cl__tune_name kv_warps_names[] = {{"1", 1}, {"2", 2}, {"4", 4}, {NULL, 0}};
static const fa_cl__tune_key tune[] = {
    FA_CL_TUNE_ENABLED,
    {"stages", FA_CL_MMA_STAGES, 2, FA_CL_MMA_MAX_STAGES, NULL,
     "K/V buffers each with asynchronous copies: a pipeline of that many blocks", "FA_CL_MMA_STAGES"},
    {"kv_warps", 0, 1, 0, kv_warps_names,
     "warps sharing one warp's rows, each a slice of every key block, where one warp has all the rows "
     "(default 0: the planner's, 4 for up to 16 rows)", "FA_CL_MMA_KV_WARPS"},
    {"pad_rows", 1, 0, 1, NULL, "0: no zero-padded q/k/v copies where head_dim % 8 != 0 (synchronous loads)",
     "FA_CL_PAD_ROWS"},
    {"fp8_staged", 1, 0, 1, NULL,
     "0: fp8 K/V through the synchronous loaders, where 1 (default) stages their raw rows by asynchronous copies "
     "wherever the rows' alignment allows", NULL},
    FA_CL_TUNE_EMULATE,
};

/* The tiles for req (its rows 16-byte aligned or not, as given). */
static fa_cl_status plan_rows(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size)
{
    const int forced_here = lim->forced_variant == FA_CL_KERNEL_NVIDIA_MMA;
    /* a value width (FA_CL_FEAT_HEAD_DIM_V): the tiles padded to the wider row (req->head_dim), each
     * of Q, K, V zero-filled past its own width, O stored to HEAD_DIM_V; K/V loaded as 16-bit rows
     * whose widths are both multiples of 8 (no padded-rows copies, no q8_0 blocks) */
    if ((req->features & FA_CL_FEAT_HEAD_DIM_V) && req->views &&
        ((req->features & FA_CL_FEAT_KV_Q8) || req->views->d.head_dim % 8 || req->views->dv % 8)) {
        snprintf(msg, msg_size, "the tensor-core kernel takes a value width (desc.head_dim_v) with head_dim and "
                 "head_dim_v multiples of 8 and 16-bit K/V (here %lld / %lld%s)", (long long)req->views->d.head_dim,
                 (long long)req->views->dv, (req->features & FA_CL_FEAT_KV_Q8) ? ", q8_0" : "");
        return FA_CL_ERROR_UNSUPPORTED;
    }
    /* q8_0 K/V dequantised as they load; an attention mask (32-key blocks at d = 128), its tiles copied
     * with K/V where every mask row is 16-byte aligned */
    const int kv_q8 = (req->features & FA_CL_FEAT_KV_Q8) != 0, has_mask = req->mask != FA_CL_MASK_NONE;
    /* a tree mask (FA_TREE) is applied with the visibility mask (cl/fa_nv_fwd_mask.cl), which the
     * transposed 8-row decode (FA_KEYS_M) does not run, as it has no attention mask either, nor the
     * softcap and ALiBi (cl/fa_nv_mods.cl, on the scores in the untransposed layout; sinks it takes) */
    const int rowwise_masks =
        has_mask || (req->features & (FA_CL_FEAT_TREE_MASK | FA_CL_FEAT_SOFTCAP | FA_CL_FEAT_ALIBI));
    /* fp8 K and V staged raw by asynchronous copies (fp8_staged) where the rows' bytes allow
     * (stage_copy), dequantised into tiles as q8_0's; else the synchronous loaders */
    const int stage_copy = fa_cl__nv_stage_copy(req);
    const int fp8_staged = !kv_q8 && stage_copy > 0 && fa_cl__tune_value(lim, &fa_cl__kernel_nvidia_mma, KEY_FP8_STAGED);
    const int kv_staged = kv_q8 || fp8_staged;
    const size_t budget = out->local_mem_budget;
    const int dp = fa_cl__mma_dim_padded(req->head_dim);
    /* With asynchronous copies up to d = 128, 128 x 64 with 32 rows per warp where the rows fill it:
     * each K/V fragment then feeds two mma (a few rows against many keys leave such a tile empty and
     * run faster at 64 x 64 x 16); with synchronous copies 64 x 32 at d = 128. Above 128, 64 x 32:
     * the O accumulator takes the registers. All measured on an H200 (commit 49ff76f). */
    const int async_wide = (req->aligned16 || fp8_staged) && dp <= 128 && req->seqlen_q > FA_CL_MMA_BLOCK_Q;
    int br = async_wide ? FA_CL_MMA_ASYNC_BLOCK_Q : FA_CL_MMA_BLOCK_Q;
    /* decoding (a few rows, often GQA-packed): two warps of 16 rows, as a 64-row tile would be mostly
     * empty (faster on an H200, commit 27e43e3); up to 16 rows, one row tile whose key blocks
     * FA_CL_MMA_DECODE_KV_WARPS warps share */
    if (req->seqlen_q <= FA_CL_MMA_DECODE_BLOCK_Q)
        br = FA_CL_MMA_DECODE_BLOCK_Q;
    int kv_warps = 1;
    /* q8_0 K/V (kv_q8): synchronous dequantising loads, the aligned plans' tiles; staged fp8 those too */
    const int kv_wide = req->aligned16 || kv_staged;
    if (req->seqlen_q <= 16 && kv_wide && dp <= 128) {
        br = 16;
        kv_warps = FA_CL_MMA_DECODE_KV_WARPS;
    }
    int bc = (dp > 128 || (dp > 64 && !kv_wide)) ? 32 : FA_CL_MMA_BLOCK_KV;
    int wr = async_wide ? FA_CL_MMA_ASYNC_WARP_ROWS : FA_CL_MMA_WARP_ROWS;
    /* keys per block with asynchronous copies: 32 at d = 128, 64 at d <= 96 (once Q joined the first
     * copy group), each the fastest of an H200 sweep, plain, causal and masked (commits 7f30fab,
     * 197d707, 8624118). q8_0 K/V (and staged fp8, whose rows are as short) keep 64. */
    if (async_wide && dp > 96 && (!kv_staged || has_mask))
        bc = 32;
    /* above d = 128, 128 rows of 8 warps (16 each: the O accumulator takes the registers) against
     * 64 keys where the local memory holds them: a K/V tile then feeds twice the rows (faster than
     * 64 x 32 on an H200, commit 7f30fab); a smaller budget keeps 64 x 32 and shrinks that */
    if (req->aligned16 && dp > 128 && req->seqlen_q > FA_CL_MMA_BLOCK_Q && !kv_q8 && !has_mask &&
        fa_cl__mma_local_bytes(FA_CL_MMA_ASYNC_BLOCK_Q, FA_CL_MMA_BLOCK_KV, dp, FA_CL_MMA_WARP_ROWS, FA_CL_MMA_STAGES,
                              1, 0, 0) + fa_cl__nv_emulation_bytes(lim, &fa_cl__kernel_nvidia_mma, FA_CL_MMA_ASYNC_BLOCK_Q / FA_CL_MMA_WARP_ROWS) <=
            out->local_mem_budget) {
        br = FA_CL_MMA_ASYNC_BLOCK_Q;
        bc = FA_CL_MMA_BLOCK_KV;
        wr = FA_CL_MMA_WARP_ROWS;
    }
    int forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        wr = lim->forced_rows > 0 ? lim->forced_rows : FA_CL_MMA_WARP_ROWS; /* as the sweeps wrote it */
        const int eight = br == 8 && wr == 16; /* the transposed decode (checked below) */
        if ((br % 16 && !eight) || bc % 16 || br > 256 || bc > 128 || (wr != 16 && wr != 32) || (br % wr && !eight) ||
            lim->forced_cols > 0) {
            /* a tile this kernel cannot take is meant for the portable kernels, unless it was asked for */
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%dx%d for the tensor-core kernel: B_r a multiple of 16 up to 256 "
                     "(or 8 with q8_0 K/V), B_c a multiple of 16 up to 128, optional rows per warp 16 or 32 dividing "
                     "B_r, no fourth field", br, bc, wr);
            return forced_here ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
        kv_warps = 1;
    }
    /* kv_warps (experiments): key slices wherever one warp has all the rows */
    const int tuned_kv_warps = fa_cl__tune_value(lim, &fa_cl__kernel_nvidia_mma, KEY_KV_WARPS);
    if (tuned_kv_warps > 0 && br <= 16 && wr == 16)
        kv_warps = tuned_kv_warps;
    if (bc % (16 * kv_warps)) {
        snprintf(msg, msg_size, "FA_CL_TUNE nvidia-mma:kv_warps=%d: B_c %d is not a multiple of 16 keys per warp",
                 kv_warps, bc);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    /* K/V buffers each: one with synchronous copies; with asynchronous ones its stages key (default
     * FA_CL_MMA_STAGES, double buffering) */
    const int async = kv_q8 ? stage_copy > 0 : fp8_staged || req->aligned16;
    const int stages = !async ? 1 : fa_cl__tune_value(lim, &fa_cl__kernel_nvidia_mma, KEY_STAGES);
    const int q8_row_bytes = kv_q8 && async ? req->head_dim / 32 * 34 : 0;
    const int stage_row_bytes = fp8_staged ? req->head_dim : q8_row_bytes;
    if (q8_row_bytes > 0 && !forced && br == 16 && kv_warps == FA_CL_MMA_DECODE_KV_WARPS) {
        bc = FA_CL_MMA_DECODE_Q8_BLOCK_KV;
        /* at most 8 rows: the products transposed, the rows as mma's 8 columns (FA_KEYS_M), half the
         * products and half O's accumulators of a 16-row block (faster on an H200, commit bf774ae;
         * paged: see the floor below) */
        if (req->seqlen_q <= 8 && !rowwise_masks)
            br = 8;
    }
    if (br == 8 && (q8_row_bytes == 0 || dp > FA_CL_MMA_Q_REGS_MAX_DIM || rowwise_masks)) {
        snprintf(msg, msg_size, "FA_CL_TUNE tile=8x%d: B_r 8 takes q8_0 K/V copied asynchronously, head_dim <= %d and "
                 "no mask (attention or tree), softcap or ALiBi", bc, FA_CL_MMA_Q_REGS_MAX_DIM);
        return forced_here ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
    }
    /* a mask whose rows are 16-byte aligned: its tiles join the K/V copies (FA_MASK_ASYNC) */
    const int mask_bytes = async && !kv_staged ? fa_cl__nv_mask_row_bytes(req) : 0;
    const int warps = (br + wr - 1) / wr * kv_warps;
    const size_t emu = fa_cl__nv_emulation_bytes(lim, &fa_cl__kernel_nvidia_mma, warps);
    size_t bytes = fa_cl__mma_local_bytes(br, bc, dp, wr, stages, kv_warps, stage_row_bytes, kv_q8) +
                   (mask_bytes ? fa_cl__mma_mask_bytes(br, bc, mask_bytes, stages) : 0) + emu;
    /* a smaller budget (Ampere's 99 KiB at d = 256): fewer keys per block, down to 16 per warp */
    while (!forced && bytes > budget && bc > 16 * kv_warps) {
        bc /= 2;
        bytes = fa_cl__mma_local_bytes(br, bc, dp, wr, stages, kv_warps, stage_row_bytes, kv_q8) +
                (mask_bytes ? fa_cl__mma_mask_bytes(br, bc, mask_bytes, stages) : 0) + emu;
    }
    const int wg = warps * 32;
    if (bytes > budget || (size_t)wg > lim->max_work_group) {
        snprintf(msg, msg_size, "%s%dx%dx%d: the tensor-core kernel needs %zu bytes of local memory and %d work-items "
                 "at head_dim %d; the budget is %zu bytes, the device takes %zu work-items", forced ? "FA_CL_TUNE tile=" : "",
                 br, bc, wr, bytes, wg, req->head_dim, budget, lim->max_work_group);
        return forced ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
    }
    /* 8-row q8_0 decoding: local memory for at most two work-groups an SM (a third of the budget and
     * more: the device's local memory, an SM's on NVIDIA), where registers would allow three and the
     * L1, which the copies pass through, would be the rest: paged decoding ran slower with three
     * (H200, commit 973b5b4) */
    int floor_bytes = 0;
    if (br == 8) {
        const size_t third = (budget / 3 / 16 + 1) * 16;
        if (third > bytes - emu && third + emu <= budget) { /* the kernel's array; the emulation's beside it */
            floor_bytes = (int)third;
            bytes = third + emu;
        }
    }
    fa_cl__tensor_core_tiles(lim, req, &fa_cl__kernel_nvidia_mma, br, bc, wr, dp, bytes, out);
    FA_CL_NV(out, LOCAL_FLOOR) = floor_bytes;
    out->forced = forced;
    FA_CL_NV(out, STAGES) = stages;
    FA_CL_NV(out, KV_WARPS) = kv_warps;
    FA_CL_NV(out, STAGE_COPY) = stage_row_bytes > 0 ? stage_copy : 0;
    FA_CL_NV(out, MASK_ASYNC) = mask_bytes > 0;
    out->work_group_size = wg;
    return FA_CL_SUCCESS;
}

/* Padded rows first where they are worth it (kernels/nvidia.h), then req's rows. */
static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    return fa_cl__nv_plan_padded_first(lim, req, out, msg, msg_size, &fa_cl__kernel_nvidia_mma, KEY_PAD_ROWS,
                                       plan_rows);
}

static fa_cl_status finish(const fa_cl__limits *lim, fa_cl__tile_request *req, fa_cl__tiles *t, char *msg,
                           size_t msg_size)
{
    (void)lim, (void)msg, (void)msg_size;
    fa_cl__nv_mask_pairs(req, t);
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    char stages[128] = "";
    if (FA_CL_NV(t, STAGES) > 2)
        snprintf(stages, sizeof stages, " -DFA_STAGES=%d", FA_CL_NV(t, STAGES));
    if (FA_CL_NV(t, KV_WARPS) > 1)
        snprintf(stages + strlen(stages), sizeof stages - strlen(stages), " -DFA_KV_WARPS=%d", FA_CL_NV(t, KV_WARPS));
    if (FA_CL_NV(t, STAGE_COPY) > 0)
        snprintf(stages + strlen(stages), sizeof stages - strlen(stages), " -DFA_STAGE_COPY=%d", FA_CL_NV(t, STAGE_COPY));
    if (FA_CL_NV(t, LOCAL_FLOOR) > 0)
        snprintf(stages + strlen(stages), sizeof stages - strlen(stages), " -DFA_SMEM_FLOOR=%d",
                 FA_CL_NV(t, LOCAL_FLOOR));
    /* cp.async with the L2 fetching 128 bytes around each 16 (faster decoding on an H200, prefill
     * unchanged; 256 bytes was slower on paged rows: commit 6ee0d2c) */
    return snprintf(out, n, " -DWARP_ROWS=%d%s%s%s%s", t->rows_per_item,
                    FA_CL_NV(t, ALIGNED16) ? " -DFA_ALIGNED16 -DFA_CP_L2=128" : "",
                    t->rows_padded ? " -DFA_ROWS_PADDED" : "", stages, t->emulated ? " -DFA_PTX_EMULATE" : "");
}

const fa_cl__kernel_family fa_cl__kernel_nvidia_mma = {
    .name = "nvidia-mma",
    .id = FA_CL_KERNEL_NVIDIA_MMA,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "f16/bf16 on NVIDIA tensor cores (compute capability >= 8.0): mma.sync, ldmatrix, cp.async by inline PTX; "
               "q and o may be f32/f16/bf16 besides",
    /* O lives in registers (DT = D_PAD / 8 accumulator tiles a warp: 244 registers at 256): no
     * head_dim beyond FA_CL_MMA_MAX_DIM */
    .takes = {FA_CL_DTYPES_16,
              FA_CL_FEAT_QO_TYPES | FA_CL_FEAT_KV_Q8 | FA_CL_FEAT_KV_FP8 | FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_SERVING | FA_CL_FEAT_TREE_MASK |
                  FA_CL_FEAT_HEAD_DIM_V,
              FA_CL_MASKS_ALL, FA_CL_MMA_MAX_DIM},
    .needs = {.vendor = FA_CL_VENDOR_NVIDIA, .arch_min = 80},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .finish = finish,
    .options = options,
    .late_options = fa_cl__nv_late_options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};
