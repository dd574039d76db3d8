/* SPDX-License-Identifier: Apache-2.0 */
/* portable-tiled: the register-tiled portable kernel GPUs get (cl/fa_forward_tiled.cl). Its tile rules. */
#include "kernels/portable.h"
#include "kernels/portable_tiled.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_fwd_coords.cl", "fa_fwd_rows.cl",
                                    "fa_fwd_chunks.cl", "fa_fwd_masks.cl", "fa_fwd_io.cl", "fa_forward_tiled.cl"};

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* O accumulators (TM x OC float4), the V chunks of one key (OC float4), scores (TM x TN), the Q and
 * K operands (TM + TN float4), P of one key (TM) and the row state m, l, lo, hi (4 x TM). IGC
 * (ocloc 22.43) spills exactly where this exceeds its budget (docs/portability.md). */
int fa_cl__tiled_private_floats(int tm, int tn, int nx, int head_dim_padded)
{
    int oc = (head_dim_padded / 4 + nx - 1) / nx;
    return 4 * tm * oc + 4 * oc + tm * tn + 4 * (tm + tn) + tm + 4 * tm;
}

size_t fa_cl__tiled_local_bytes(int block_q, int block_kv, int head_dim_padded, int cols_per_item)
{
    size_t pitch_q = (size_t)block_q + 4;
    return 4 * ((size_t)(block_q + block_kv) * (size_t)(head_dim_padded + 4) +
                (size_t)(block_kv + block_kv / cols_per_item) * pitch_q);
}

/* Largest multiple of 16 rows (up to the tiled cap) whose tile fits the local budget and whose
 * work-group the device takes, for TM rows per work-item; 0 when none does. */
static int tiled_block_q(const fa_cl__limits *lim, int tm, int tn, int bc, int dpad, size_t budget)
{
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;
    for (int r = FA_CL_TILED_MAX_BLOCK_Q; r >= 16; r -= 16)
        if ((size_t)(r / tm) * (size_t)(bc / tn) <= max_wg && fa_cl__tiled_local_bytes(r, bc, dpad, tn) <= budget)
            return r;
    return 0;
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED};

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const int dpad = out->head_dim_padded;
    /* GPUs take it (its needs), except where the device's measurements prefer the rows kernel */
    if (lim->forced_variant != FA_CL_KERNEL_PORTABLE_TILED && fa_cl__rows_kernel_preferred(lim, req, dpad)) {
        snprintf(msg, msg_size, "the rows kernel (portable) runs faster on this GPU at head_dim %d", req->head_dim);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    const size_t budget = out->local_mem_budget;
    const int tn = lim->forced_cols > 0 ? lim->forced_cols : FA_CL_TILED_TN;
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;
    int br, bc, tm, forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        tm = lim->forced_rows > 0 ? lim->forced_rows : FA_CL_TILED_TM;
        size_t need = fa_cl__tiled_local_bytes(br, bc, dpad, tn);
        if (bc % tn || br % tm || tm > 8 || tn > 16) {
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%dx%d for the tiled kernel: B_c must be a multiple of %d and B_r "
                     "of the rows (at most 8)", br, bc, tm, tn);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if (need > budget || (size_t)(br / tm) * (size_t)(bc / tn) > max_wg) {
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%dx%d for the tiled kernel needs %zu bytes of local memory and %d "
                     "work-items; the budget is %zu bytes and %zu work-items", br, bc, tm, need,
                     (br / tm) * (bc / tn), budget, max_wg);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        forced = 1;
    } else {
        /* beyond FA_CL_TILED_MAX_DIM only where asked to or where registers are known to be short */
        if (dpad > FA_CL_TILED_MAX_DIM && lim->forced_variant != FA_CL_KERNEL_PORTABLE_TILED && lim->private_floats <= 0) {
            snprintf(msg, msg_size, "the tiled kernel takes head_dim up to %d where the device's registers are not "
                     "known (got %d)", FA_CL_TILED_MAX_DIM, req->head_dim);
            return FA_CL_ERROR_UNSUPPORTED;
        }
        int64_t need_kv = round_up(req->seqlen_k > 0 ? req->seqlen_k : 1, FA_CL_TILE_ALIGN);
        int64_t need_q = round_up(req->seqlen_q > 0 ? req->seqlen_q : 1, 16);
        bc = (int)min64(32, need_kv);
        /* the most rows per work-item whose registers fit; TM = 1 (fewest) when none does */
        const int regs = lim->private_floats;
        br = 0;
        tm = FA_CL_TILED_TM;
        for (int t = FA_CL_TILED_TM; t >= 1 && br == 0; t /= 2) {
            if (regs > 0 && t > 1 && fa_cl__tiled_private_floats(t, tn, bc / tn, dpad) > regs)
                continue;
            tm = t;
            br = tiled_block_q(lim, t, tn, bc, dpad, budget);
            if (regs <= 0)
                break; /* register budget unknown: TM = FA_CL_TILED_TM only, as measured */
        }
        if (br == 0) {
            snprintf(msg, msg_size, "no tile of the tiled kernel fits head_dim %d in %zu bytes (%s)", req->head_dim,
                     budget, out->budget_source);
            return FA_CL_ERROR_UNSUPPORTED;
        }
        br = (int)min64(br, need_q);
    }
    fa_cl__tiles_set(out, &fa_cl__kernel_portable_tiled, br, bc, tm, tn, (br / tm) * (bc / tn),
                     fa_cl__tiled_local_bytes(br, bc, dpad, tn));
    out->forced = forced;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    return snprintf(out, n, " -DTM=%d -DTN=%d", t->rows_per_item, t->cols_per_item);
}

const fa_cl__kernel_family fa_cl__kernel_portable_tiled = {
    .name = "portable-tiled",
    .id = FA_CL_KERNEL_PORTABLE_TILED,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "portable OpenCL C for GPUs: TM x TN register tiles per work-item, P through local memory",
    .takes = {FA_CL_DTYPES_ALL, FA_CL_FEAT_MIXED_TYPES | FA_CL_FEAT_QO_TYPES | FA_CL_FEAT_KV_Q8 | FA_CL_FEAT_KV_FP8 |
                                    FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_SERVING | FA_CL_FEAT_HEAD_DIM_V |
                                    FA_CL_FEAT_TREE_MASK,
              FA_CL_MASKS_ALL, FA_CL_MAX_HEAD_DIM},
    .needs = {.device = FA_CL_PREFERS_GPU},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    /* unrolled up to padded head_dim 384: faster there unrolled, slower at 512 (H200, commit 4ced9f9) */
    .unroll_max_dim = 384,
};
