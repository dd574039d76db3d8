/* SPDX-License-Identifier: Apache-2.0 */
/* The tile planner: the local-memory budget, then the first kernel family of the registry that
 * applies and fits (or the one FA_CL_KERNEL_VARIANT forces), then long rows' chunks of keys. */
#include "plan/planner.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* What the tiles may use: local memory (a per-core cache share on CPUs), less FA_CL_LOCAL_MEM_BYTES
 * and what a compiled kernel reported using beside its tiles. */
size_t fa_cl__local_budget(const fa_cl__limits *lim, const char **source)
{
    size_t budget = lim->local_mem_size;
    *source = lim->local_mem_source ? lim->local_mem_source : "device local memory";
    if (lim->local_mem_is_global) {
        size_t cache = lim->cache_bytes ? lim->cache_bytes : FA_CL_CPU_CACHE_BUDGET;
        if (cache < budget || budget == 0) {
            budget = cache;
            *source = "cache (local memory is global)";
        }
    }
    if (lim->local_mem_cap && lim->local_mem_cap < budget) {
        budget = lim->local_mem_cap;
        *source = "FA_CL_LOCAL_MEM_BYTES";
    }
    return budget > lim->kernel_other_local ? budget - lim->kernel_other_local : 0;
}

/* Not turned off on the context by a failed build. */
static int family_on(const fa_cl__limits *lim, const fa_cl__kernel_family *f)
{
    return !(lim->families_off & ((uint64_t)1 << f->id));
}

fa_cl_status fa_cl__plan_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size)
{
    memset(out, 0, sizeof *out);
    if (req->head_dim <= 0 || req->head_dim > FA_CL_MAX_HEAD_DIM) {
        snprintf(msg, msg_size, "head_dim %d is outside 1..%d (the largest any kernel takes)", req->head_dim,
                 FA_CL_MAX_HEAD_DIM);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    const fa_cl__kernel_family *forced = fa_cl__forced_forward(lim);
    fa_cl_status st = FA_CL_ERROR_UNSUPPORTED;
    char why[400] = "no kernel applies";
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        if (f->op != FA_CL_OP_FORWARD || (forced ? f != forced : !family_on(lim, f) || !f->applies(lim, req)))
            continue; /* a forward plan's tiles: other operations' kernels are planned by their plans */
        memset(out, 0, sizeof *out);
        out->head_dim_padded = (req->head_dim + FA_CL_VEC - 1) / FA_CL_VEC * FA_CL_VEC;
        out->elem_bytes = 4; /* the portable kernels hold fp32 in local memory; the tensor-core ones set theirs */
        out->local_mem_budget = fa_cl__local_budget(lim, &out->budget_source);
        st = f->plan(lim, req, out, why, sizeof why);
        if (st == FA_CL_SUCCESS || st == FA_CL_ERROR_INVALID_ARGUMENT || forced)
            break;
    }
    if (st != FA_CL_SUCCESS) {
        if (forced && st == FA_CL_ERROR_UNSUPPORTED)
            snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=%s: %s", forced->name, why);
        else
            snprintf(msg, msg_size, "%s", why);
        return st;
    }
    /* long rows: chunks of keys, one launch each (cl/fa_forward_common.cl) */
    const int64_t keys = req->row_keys > 0 ? req->row_keys : req->seqlen_k;
    const int most = fa_cl__chunk_keys(lim->o_f32 ? FA_CL_F32 : req->dtype);
    const int want = lim->chunk_keys > 0 ? lim->chunk_keys : keys > most ? most : 0;
    if (want > 0) /* whole blocks: a launch's blocks never straddle two chunks */
        out->chunk_keys = want > out->block_kv ? want / out->block_kv * out->block_kv : out->block_kv;
    return FA_CL_SUCCESS;
}

/* out as a backward family's plan receives it (src/kernels/family.h) */
static void tiles_start(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out)
{
    memset(out, 0, sizeof *out);
    out->head_dim_padded = (req->head_dim + FA_CL_VEC - 1) / FA_CL_VEC * FA_CL_VEC;
    out->elem_bytes = 4;
    out->local_mem_budget = fa_cl__local_budget(lim, &out->budget_source);
    out->splits = 1;
}

fa_cl_status fa_cl__plan_backward_tiles(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out,
                                       char *msg, size_t msg_size)
{
    const fa_cl__kernel_family *forced = lim->forced_variant ? fa_cl__kernel_by_id((fa_cl__kernel_id)lim->forced_variant)
                                                            : NULL;
    const fa_cl__kernel_family *portable = fa_cl__kernel_by_id(FA_CL_KERNEL_PORTABLE_BACKWARD);
    if (forced && forced->op != FA_CL_OP_BACKWARD) /* a forward kernel's name */
        forced = forced->id == FA_CL_KERNEL_PORTABLE || forced->id == FA_CL_KERNEL_PORTABLE_TILED ? portable : NULL;
    /* the tensor-core families, in the registry's order */
    for (int i = 0; i < fa_cl__kernel_count(); i++) {
        const fa_cl__kernel_family *f = fa_cl__kernel_at(i);
        if (f->op != FA_CL_OP_BACKWARD || f == portable ||
            (forced ? f != forced : !family_on(lim, f) || !f->applies(lim, req)))
            continue;
        tiles_start(lim, req, out);
        char why[256] = "";
        const fa_cl_status st = f->plan(lim, req, out, why, sizeof why);
        if (st == FA_CL_SUCCESS || st == FA_CL_ERROR_INVALID_ARGUMENT || forced) {
            if (st == FA_CL_ERROR_UNSUPPORTED)
                snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=%s: %s", f->name, why);
            else
                snprintf(msg, msg_size, "%s", why);
            return st;
        }
    }
    tiles_start(lim, req, out);
    return portable->plan(lim, req, out, msg, msg_size);
}

int fa_cl__gqa_pack(int64_t group, int64_t seqlen_q, int env)
{
    if (group <= 1 || env < 0 || group * seqlen_q > INT32_MAX / 2)
        return 1;
    return env > 0 || seqlen_q < FA_CL_GQA_PACK_ROWS ? (int)group : 1;
}

int64_t fa_cl__split_count(const fa_cl__tiles *t, int64_t batch, int64_t head_columns, int64_t column_rows,
                          int64_t row_keys, int64_t seqlen_k, int slots, int forced)
{
    const int64_t blocks = (column_rows + t->block_q - 1) / t->block_q * batch * head_columns;
    const int64_t kv_blocks = (row_keys + t->block_kv - 1) / t->block_kv;
    int64_t n = forced > 0 ? forced : fa_cl__splits_heuristic(blocks, slots, kv_blocks);
    const int64_t chunks = t->chunk_keys > 0 ? (seqlen_k + t->chunk_keys - 1) / t->chunk_keys : 1;
    return n > 1 && chunks > n ? chunks : n; /* long rows: chunks of at most t->chunk_keys keys */
}

int fa_cl__splits_heuristic(int64_t blocks, int slots, int64_t kv_blocks)
{
    if (blocks <= 0 || slots <= 0 || (double)blocks >= 0.8 * slots)
        return 1;
    int64_t most = kv_blocks < slots ? kv_blocks : slots;
    if (most > 128)
        most = 128;
    if (most < 1)
        return 1;
    double eff[129], best = 0.0;
    for (int64_t n = 1; n <= most; n++) {
        const double waves = (double)(blocks * n) / slots;
        eff[n] = waves / ceil(waves);
        if (eff[n] > best)
            best = eff[n];
    }
    for (int64_t n = 1; n <= most; n++) {
        /* a count that gives each chunk as many key blocks as one fewer does is no better */
        const int same = n > 1 && (kv_blocks + n - 1) / n == (kv_blocks + n - 2) / (n - 1);
        if (!same && eff[n] >= 0.85 * best)
            return (int)n;
    }
    return 1;
}

void fa_cl__limits_for_modifiers(fa_cl__limits *lim, int score_mods, int mask)
{
    if (score_mods)
        lim->nv_mma = 0;
    /* the rows kernel's NVIDIA fault (two rows per work-item, head_dim 64) also hit masks: varlen
     * f32 with a boolean mask on the H200 (CHANGELOG, 0.4.0) */
    if (score_mods || mask)
        lim->rows_small_dims = 0;
    if (score_mods || mask)
        lim->nv_tf32 = 0;
    lim->mma_mask = mask;
}
