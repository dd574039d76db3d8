/* SPDX-License-Identifier: Apache-2.0 */
/* portable-backward: the backward pass's kernels (cl/fa_backward.cl) and their tile rules. Not a
 * forward kernel: the planner walks it for backward plans only (its op), the last of them. */
#include "kernels/portable_backward.h"

#include <stdio.h>
#include <string.h>

static const char *const files[] = {"fa_common.cl", "fa_backward_common.cl", "fa_backward.cl"};

size_t fa_cl__backward_local_bytes(int block_q, int block_kv, int head_dim_padded)
{
    const size_t bq = (size_t)block_q, bk = (size_t)block_kv;
    return 4 * ((2 * bq + 2 * bk) * (size_t)(head_dim_padded + 4) + 2 * bq * (bk + 1) + 2 * bq);
}

int fa_cl__backward_private_floats(int block, int tm, int head_dim_padded)
{
    const int wg = (block / tm) * (block / tm), ng = wg / block, ac = (head_dim_padded / 4 + ng - 1) / ng;
    return 8 * ac + 2 * tm * tm + 16 * tm + 16; /* + addresses and loop state */
}

/* Rows (and keys) per work-item for a B x B tile: (B / TM)^2 work-items, a multiple of B the device
 * takes; 2 (1 at B = 8) unless the registers the device has are known to be too few for it, then
 * the TM whose work-item holds the least. 0 if none. */
static int backward_tm(int b, size_t max_wg, int head_dim_padded, int private_floats)
{
    int best = 0, best_floats = 0;
    for (int tm = b >= 16 ? 2 : 1; tm >= 1; tm--) {
        const size_t wg = (size_t)(b / tm) * (size_t)(b / tm);
        if (wg > max_wg || wg % (size_t)b)
            continue;
        const int floats = fa_cl__backward_private_floats(b, tm, head_dim_padded);
        if (private_floats <= 0 || floats <= private_floats)
            return tm;
        if (!best || floats < best_floats)
            best = tm, best_floats = floats;
    }
    return best;
}

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const int dpad = out->head_dim_padded;
    const size_t budget = out->local_mem_budget;
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;
    int b = 0, tm = 0, forced = 0;
    if (lim->forced_q > 0 || lim->forced_kv > 0) {
        b = lim->forced_q;
        tm = lim->forced_rows > 0 ? lim->forced_rows : backward_tm(b, max_wg, dpad, lim->private_floats);
        const size_t wg = tm > 0 && b % tm == 0 ? (size_t)(b / tm) * (size_t)(b / tm) : 0;
        if (lim->forced_kv != b || b % 8 || b > 64 || tm <= 0 || b % tm || wg % (size_t)b || wg > max_wg ||
            fa_cl__backward_local_bytes(b, b, dpad) > budget) {
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d for the backward: B_r = B_c, a multiple of 8 up to 64, with "
                     "(B / rows)^2 work-items a multiple of B and at most %zu, in %zu bytes of local memory",
                     lim->forced_q, lim->forced_kv, max_wg, budget);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        forced = 1;
    } else {
        const int64_t longer = req->seqlen_q > req->seqlen_k ? req->seqlen_q : req->seqlen_k;
        const int64_t need = (longer + 7) / 8 * 8;
        for (int c = FA_CL_BACKWARD_MAX_BLOCK; c >= 8 && !b; c /= 2) {
            if (c > need && c > 8)
                continue;
            const int t = backward_tm(c, max_wg, dpad, lim->private_floats);
            if (t > 0 && fa_cl__backward_local_bytes(c, c, dpad) <= budget)
                b = c, tm = t;
        }
        if (!b) {
            snprintf(msg, msg_size, "no tile of the backward fits head_dim %d in %zu bytes (%s; it needs %zu at 8 x 8)",
                     req->head_dim, budget, out->budget_source, fa_cl__backward_local_bytes(8, 8, dpad));
            return FA_CL_ERROR_UNSUPPORTED;
        }
    }
    fa_cl__tiles_set(out, &fa_cl__kernel_portable_backward, b, b, tm, tm, (b / tm) * (b / tm),
                     fa_cl__backward_local_bytes(b, b, dpad));
    out->forced = forced;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    return snprintf(out, n, " -DTM=%d -DTN=%d", t->rows_per_item, t->cols_per_item);
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED};

const fa_cl__kernel_family fa_cl__kernel_portable_backward = {
    .name = "portable-backward",
    .id = FA_CL_KERNEL_PORTABLE_BACKWARD,
    .op = FA_CL_OP_BACKWARD,
    .entry = "fa_backward_dkdv",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "the backward pass (dQ, dK, dV) on every device: D = rowsum(dO o O), then dK/dV per key block, dQ per "
               "query block, no atomics; the score modifiers and masks (the sinks' gradient by a fourth kernel)",
    .takes = {FA_CL_DTYPES_ALL, FA_CL_FEAT_VARLEN_Q | FA_CL_FEAT_VARLEN_K | FA_CL_FEAT_SEQLENS | FA_CL_FEAT_MODIFIERS,
              FA_CL_MASKS_ALL, FA_CL_MAX_HEAD_DIM_BACKWARD},
    .needs = {.device = FA_CL_ANY_DEVICE}, /* anywhere: the backward's last family */
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};
