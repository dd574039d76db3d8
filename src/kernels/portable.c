/* SPDX-License-Identifier: Apache-2.0 */
/* portable: each work-item owns whole query rows (cl/fa_forward.cl); every device runs it, and the
 * planner falls back to it. Its tile rules. */
#include "kernels/portable.h"

#include <stdio.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_fwd_coords.cl", "fa_fwd_rows.cl",
                                    "fa_fwd_chunks.cl", "fa_fwd_masks.cl", "fa_fwd_io.cl", "fa_forward.cl"};

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

int fa_cl__rows_private_floats(int rows, int block_kv, int head_dim_padded)
{
    return rows * (head_dim_padded + block_kv + 8) + 4;
}

/* Query rows per work-item: on GPUs two when both rows' scores and outputs fit the private budget,
 * which halves local-memory reads per multiply-add; one otherwise, and always one on CPUs (PoCL ran
 * 1.7x faster with one, commit 293f65f). */
static int rows_per_item(int block_q, int block_kv, int head_dim_padded, size_t max_wg, int gpu)
{
    int tm = 1;
    if (gpu && block_q % 2 == 0 && 2 * (block_kv + head_dim_padded) <= FA_CL_PRIVATE_FLOATS && block_q / 2 >= 32)
        tm = 2;
    while ((size_t)(block_q / tm) > max_wg && block_q % (tm * 2) == 0)
        tm *= 2;
    return tm;
}

static const fa_cl__tune_key tune[] = {FA_CL_TUNE_ENABLED};

int fa_cl__rows_kernel_preferred(const fa_cl__limits *lim, const fa_cl__tile_request *req, int head_dim_padded)
{
    return lim->dev.is_gpu && lim->dev.rows_small_dims && head_dim_padded <= FA_CL_GPU_ROWS_MAX_DIM &&
           !(req->features & FA_CL_FEAT_MODIFIERS) && req->mask == FA_CL_MASK_NONE;
}

/* A forced tile (FA_CL_TUNE tile): the rows per work-item given (or the fewest the work-group limit allows). */
static fa_cl_status forced_tile(const fa_cl__limits *lim, const fa_cl__tiles *out, int64_t rows_fit, size_t max_wg,
                                int *br, int *bc, int *tm, char *msg, size_t msg_size)
{
    const size_t row_bytes = (size_t)out->elem_bytes * (size_t)out->head_dim_padded;
    *br = lim->forced_q;
    *bc = lim->forced_kv;
    if (*bc > 256 || *br > 4096) {
        snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d: B_c must be <= 256 and B_r <= 4096", *br, *bc);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    if ((int64_t)*br + *bc > rows_fit) {
        snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d needs %zu bytes of local memory (e=%d, d_padded=%d) but the "
                 "budget (%s) is %zu", *br, *bc, (size_t)(*br + *bc) * row_bytes, out->elem_bytes,
                 out->head_dim_padded, out->budget_source, out->local_mem_budget);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    *tm = lim->forced_rows > 0 ? lim->forced_rows : 1;
    if (*br % *tm) {
        snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%dx%d: B_r must be a multiple of the rows per work-item", *br, *bc, *tm);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    while (lim->forced_rows <= 0 && (size_t)(*br / *tm) > max_wg && *br % (*tm * 2) == 0)
        *tm *= 2;
    if ((size_t)(*br / *tm) > max_wg) {
        snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d needs a work-group larger than the device's %zu", *br, *bc, max_wg);
        return FA_CL_ERROR_INVALID_ARGUMENT;
    }
    return FA_CL_SUCCESS;
}

static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    const int dpad = out->head_dim_padded;
    const int mods_or_mask = (req->features & FA_CL_FEAT_MODIFIERS) || req->mask != FA_CL_MASK_NONE;
    if (lim->forced_variant == FA_CL_KERNEL_PORTABLE && lim->dev.is_gpu && lim->dev.rows_small_dims && mods_or_mask) {
        snprintf(msg, msg_size, "with %s it is not verified on this GPU (it failed the H200's tests): portable-tiled "
                 "takes them", req->features & FA_CL_FEAT_MODIFIERS ? "score modifiers" : "an attention mask");
        return FA_CL_ERROR_UNSUPPORTED;
    }
    const size_t budget = out->local_mem_budget;
    const size_t row_bytes = (size_t)out->elem_bytes * (size_t)dpad;
    const int64_t rows_fit = (int64_t)(budget / row_bytes);
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;
    const int forced = lim->forced_q > 0 && lim->forced_kv > 0;
    int br, bc, tm;
    if (forced) {
        fa_cl_status st = forced_tile(lim, out, rows_fit, max_wg, &br, &bc, &tm, msg, msg_size);
        if (st != FA_CL_SUCCESS)
            return st;
    } else {
        const int64_t need_q = round_up(req->seqlen_q > 0 ? req->seqlen_q : 1, FA_CL_TILE_ALIGN);
        const int64_t need_kv = round_up(req->seqlen_k > 0 ? req->seqlen_k : 1, FA_CL_TILE_ALIGN);
        /* GPUs at head_dim <= 64: 16-key blocks leave room for two rows per work-item in registers
         * (faster than the tiled kernel there on an H200: docs/design.md, "portable") */
        const int small_gpu_rows = fa_cl__rows_kernel_preferred(lim, req, dpad);
        int64_t c = min64(small_gpu_rows ? FA_CL_GPU_ROWS_BLOCK_KV : FA_CL_MAX_BLOCK_KV, need_kv);
        int64_t r_budget = (rows_fit - c) / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
        int64_t r_max = min64(FA_CL_MAX_BLOCK_Q, (int64_t)max_wg * 2);
        if (r_budget < c) {
            /* the budget, not the sequence, is short: equal tiles */
            int64_t b = rows_fit / 2 / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
            if (b < FA_CL_TILE_ALIGN) {
                snprintf(msg, msg_size, "local-memory budget %zu bytes (%s) cannot hold two %d-row tiles of "
                         "head_dim %d (padded to %d: needs %zu bytes)", budget, out->budget_source, FA_CL_TILE_ALIGN,
                         req->head_dim, dpad, (size_t)2 * FA_CL_TILE_ALIGN * row_bytes);
                return FA_CL_ERROR_UNSUPPORTED;
            }
            r_budget = b;
            c = min64(b, need_kv);
        }
        br = (int)min64(min64(r_budget, r_max), need_q);
        bc = (int)c;
        tm = rows_per_item(br, bc, dpad, max_wg, lim->dev.is_gpu);
        if ((size_t)(br / tm) > max_wg) {
            br = (int)(max_wg * (size_t)tm) / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
            if (br < 1)
                br = (int)(max_wg * (size_t)tm);
        }
    }
    fa_cl__tiles_set(out, &fa_cl__kernel_portable, br, bc, tm, bc, br / tm, (size_t)(br + bc) * row_bytes);
    out->forced = forced;
    return FA_CL_SUCCESS;
}

static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    return snprintf(out, n, " -DROWS=%d", t->rows_per_item);
}

const fa_cl__kernel_family fa_cl__kernel_portable = {
    .name = "portable",
    .id = FA_CL_KERNEL_PORTABLE,
    .op = FA_CL_OP_FORWARD,
    .entry = "fa_forward",
    .files = files,
    .nfiles = sizeof files / sizeof files[0],
    .summary = "portable OpenCL C for any device: each work-item owns whole query rows, P stays in registers",
    .takes = {FA_CL_DTYPES_ALL, FA_CL_FEAT_MIXED_TYPES | FA_CL_FEAT_QO_TYPES | FA_CL_FEAT_KV_Q8 | FA_CL_FEAT_KV_FP8 |
                                    FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_SERVING | FA_CL_FEAT_HEAD_DIM_V |
                                    FA_CL_FEAT_TREE_MASK,
              FA_CL_MASKS_ALL, FA_CL_MAX_HEAD_DIM},
    .needs = {.device = FA_CL_ANY_DEVICE}, /* anywhere: the last family the planner tries */
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .options = options,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
};
