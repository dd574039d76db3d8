/* Tile planner for the portable kernel: B_r and B_c from the local-memory budget formula. */
#include "planner.h"

#include <stdio.h>
#include <string.h>

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Query rows per work-item: two when both rows' scores and outputs fit the private budget, which
 * halves local-memory reads per multiply-add; one otherwise. */
static int rows_per_item(int block_q, int block_kv, int head_dim_padded, size_t max_wg)
{
    int tm = 1;
    if (block_q % 2 == 0 && 2 * (block_kv + head_dim_padded) <= FA_CL_PRIVATE_FLOATS && block_q / 2 >= 32)
        tm = 2;
    while ((size_t)(block_q / tm) > max_wg && block_q % (tm * 2) == 0)
        tm *= 2;
    return tm;
}

fa_cl_status fa_cl_plan_tiles(const fa_cl_limits *lim, const fa_cl_tile_request *req, fa_cl_tiles *out, char *msg,
                              size_t msg_size)
{
    memset(out, 0, sizeof *out);
    if (req->head_dim <= 0 || req->head_dim > FA_CL_MAX_HEAD_DIM) {
        snprintf(msg, msg_size, "head_dim %d is outside 1..%d", req->head_dim, FA_CL_MAX_HEAD_DIM);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    const int dpad = (int)round_up(req->head_dim, FA_CL_VEC);
    const int e = 4; /* fp32 in local memory for every storage type */

    size_t budget = lim->local_mem_size;
    const char *source = "device local memory";
    if (lim->local_mem_is_global) {
        size_t cache = lim->cache_bytes ? lim->cache_bytes : FA_CL_CPU_CACHE_BUDGET;
        if (cache < budget || budget == 0) {
            budget = cache;
            source = "cache (local memory is global)";
        }
    }
    if (lim->local_mem_cap && lim->local_mem_cap < budget) {
        budget = lim->local_mem_cap;
        source = "FA_CL_LOCAL_MEM_BYTES";
    }
    budget = budget > lim->kernel_other_local ? budget - lim->kernel_other_local : 0;
    const size_t row_bytes = (size_t)e * (size_t)dpad;
    const int64_t rows_fit = (int64_t)(budget / row_bytes);
    const size_t max_wg = lim->max_work_group ? lim->max_work_group : 1;

    int br, bc, tm;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if (bc > 256 || br > 4096) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d: B_c must be <= 256 and B_r <= 4096", br, bc);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        if ((int64_t)br + bc > rows_fit) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d needs %zu bytes of local memory (e=%d, d_padded=%d) but the "
                     "budget (%s) is %zu", br, bc, (size_t)(br + bc) * row_bytes, e, dpad, source, budget);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        tm = lim->forced_rows > 0 ? lim->forced_rows : 1;
        if (br % tm) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%dx%d: B_r must be a multiple of the rows per work-item", br, bc,
                     tm);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        while (lim->forced_rows <= 0 && (size_t)(br / tm) > max_wg && br % (tm * 2) == 0)
            tm *= 2;
        if ((size_t)(br / tm) > max_wg) {
            snprintf(msg, msg_size, "FA_CL_TILE=%dx%d needs a work-group larger than the device's %zu", br, bc,
                     max_wg);
            return FA_CL_ERROR_INVALID_ARGUMENT;
        }
        out->forced = 1;
    } else {
        const int64_t need_q = round_up(req->seqlen_q > 0 ? req->seqlen_q : 1, FA_CL_TILE_ALIGN);
        const int64_t need_kv = round_up(req->seqlen_k > 0 ? req->seqlen_k : 1, FA_CL_TILE_ALIGN);
        int64_t c = min64(FA_CL_MAX_BLOCK_KV, need_kv);
        int64_t r_budget = (rows_fit - c) / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
        int64_t r_max = min64(FA_CL_MAX_BLOCK_Q, (int64_t)max_wg * 2);
        if (r_budget < c) {
            /* the budget, not the sequence, is short: equal tiles */
            int64_t b = rows_fit / 2 / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
            if (b < FA_CL_TILE_ALIGN) {
                snprintf(msg, msg_size, "local-memory budget %zu bytes (%s) cannot hold two %d-row tiles of "
                         "head_dim %d (needs %zu bytes)", budget, source, FA_CL_TILE_ALIGN, dpad,
                         (size_t)2 * FA_CL_TILE_ALIGN * row_bytes);
                return FA_CL_ERROR_UNSUPPORTED;
            }
            r_budget = b;
            c = min64(b, need_kv);
        }
        br = (int)min64(min64(r_budget, r_max), need_q);
        bc = (int)c;
        tm = rows_per_item(br, bc, dpad, max_wg);
        if ((size_t)(br / tm) > max_wg) {
            br = (int)(max_wg * (size_t)tm) / FA_CL_TILE_ALIGN * FA_CL_TILE_ALIGN;
            if (br < 1)
                br = (int)(max_wg * (size_t)tm);
        }
    }
    out->block_q = br;
    out->block_kv = bc;
    out->rows_per_item = tm;
    out->work_group_size = br / tm;
    out->head_dim_padded = dpad;
    out->elem_bytes = e;
    out->local_mem_bytes = (size_t)(br + bc) * row_bytes;
    out->local_mem_budget = budget;
    out->budget_source = source;
    return FA_CL_SUCCESS;
}
