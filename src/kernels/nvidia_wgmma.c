/* SPDX-License-Identifier: Apache-2.0 */
/* nvidia-wgmma: the tensor-core forward with Hopper's warpgroup MMA (the cl/fa_nv_fwd_*.cl units with
 * mainloop _sm90, built with FA_WGMMA, cl/fa_nv_wgmma.cl), compute capability 9.0, through the sm_90a PTX retargeting
 * (src/program/ptx_retarget.h). Its tile rules. */
#include "kernels/nvidia_wgmma.h"

#include <stdio.h>
#include <string.h>

static const char *const files[] = {"fa_common.cl", "fa_forward_common.cl", "fa_fwd_coords.cl", "fa_fwd_rows.cl",
                                    "fa_fwd_chunks.cl", "fa_fwd_masks.cl", "fa_fwd_io.cl", "fa_nv_ptx.cl",
                                    "fa_nv_wgmma.cl", "fa_nv_tma.cl", "fa_nv_fwd_config.cl", "fa_nv_softmax.cl",
                                    "fa_nv_mods.cl", "fa_nv_fwd_smem.cl", "fa_nv_fwd_load.cl", "fa_nv_fwd_wgmma.cl",
                                    "fa_nv_fwd_cp_async.cl", "fa_nv_fwd_mask.cl", "fa_nv_fwd_epilogue.cl",
                                    "fa_nv_fwd_tile.cl", "fa_nv_fwd_tma.cl", "fa_nv_fwd_producer.cl",
                                    "fa_nv_fwd_mainloop_sm90.cl"};

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

/* Its tuning keys (FA_CL_TUNE=nvidia-wgmma:key=value; docs/tuning.md). */
enum { KEY_ENABLED, KEY_PRODUCER, KEY_TMA, KEY_PERSISTENT, KEY_PAD_ROWS };
static const fa_cl__tune_name tma_names[] = {{"none", 0}, {"mask", FA_CL_WGMMA_TMA_MASK}, {"kv", FA_CL_WGMMA_TMA_KV},
                                             {"both", FA_CL_WGMMA_TMA_MASK | FA_CL_WGMMA_TMA_KV}, {NULL, 0}};
static const fa_cl__tune_name persistent_names[] = {{"cu", -1}, {NULL, 0}};
static const fa_cl__tune_key tune[] = {
    FA_CL_TUNE_ENABLED_REPLACING("FA_CL_WGMMA"),
    {"producer", 1, 0, 1, NULL, "0: no producer warpgroup (the computing warpgroups copy by cp.async)",
     "FA_CL_WGMMA_PRODUCER"},
    {"tma", FA_CL_WGMMA_TMA_MASK | FA_CL_WGMMA_TMA_KV, 0, 3, tma_names,
     "what the producer copies by TMA in dense plans: none, mask, kv or both (0..3); the rest by cp.async",
     "FA_CL_TMA"},
    {"persistent", -1, 0, 1 << 30, persistent_names,
     "the persistent kernel's work-groups: cu (one a compute unit), n (at most n), 0 (not persistent)",
     "FA_CL_PERSISTENT"},
    {"pad_rows", 1, 0, 1, NULL, "0: no zero-padded q/k/v copies where head_dim % 8 != 0", "FA_CL_PAD_ROWS"},
};

/* The tiles for req (its rows 16-byte aligned or not, as given). */
static fa_cl_status plan_rows(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                              size_t msg_size)
{
    const int forced_here = lim->forced_variant == FA_CL_KERNEL_NVIDIA_WGMMA;
    const int has_mask = req->mask != FA_CL_MASK_NONE;
    const int producer_on = fa_cl__tune_value(lim, &fa_cl__kernel_nvidia_wgmma, KEY_PRODUCER);
    /* tiles only copies by TMA feed: at d_pad 256 the producer and 80 keys a block, 192 rows at 64
     * (finish narrows this where the copies are not by TMA) */
    const int tma_tiles_on = !(req->narrowed & FA_CL_WGMMA_NO_TMA_TILES);
    /* The default head_dims: where wgmma beat nvidia-mma (nvidia-wgmma:enabled=0) in the same run:
     * 129..256 (padded to 192 or 256: whole 64-column panels) and 41..64 padded to 64 where rows have
     * more than 512 keys (at 512 it lost; H200, commits ab18c05, 316670d), and 65..128 padded to 128
     * (H100, d = 96: 511.9 TFLOP/s padded against nvidia-mma's 317.9; it lost on an H200 before the
     * producer warpgroup and TMA). Not 40 and below (even). */
    const int small = req->head_dim > FA_CL_WGMMA_SMALL_MIN_DIM && req->seqlen_k > FA_CL_WGMMA_SMALL_MIN_KEYS;
    const int dp = req->head_dim <= 64 ? (forced_here || small ? 64 : 0)
                   : req->head_dim <= 128 ? (forced_here || req->head_dim > FA_CL_WGMMA_MIN_DIM ? 128 : 0)
                   : req->head_dim <= 192 ? 192
                   : req->head_dim <= 256 ? 256
                                          : 0;
    /* a value width (FA_CL_FEAT_HEAD_DIM_V): the tiles as wide as the wider row (req->head_dim), V's
     * zero-filled past its own; O and P V only DV_PAD wide (cl/fa_nv_fwd_config.cl). Rows of
     * multiples of 8 (no padded-rows copies) */
    if ((req->features & FA_CL_FEAT_HEAD_DIM_V) && req->views &&
        (req->views->d.head_dim % 8 || req->views->dv % 8)) {
        snprintf(msg, msg_size, "nvidia-wgmma takes a value width (desc.head_dim_v) with head_dim and head_dim_v "
                 "multiples of 8 (here %lld / %lld)", (long long)req->views->d.head_dim, (long long)req->views->dv);
        return FA_CL_ERROR_UNSUPPORTED;
    }
    /* masks whose rows are not 16-byte aligned (their tiles are copied with K) are nvidia-mma's */
    const int mask_bytes = fa_cl__nv_mask_row_bytes(req);
    if ((has_mask && mask_bytes == 0) || !req->aligned16 || dp == 0 || req->seqlen_q <= FA_CL_WGMMA_MIN_ROWS) {
        snprintf(msg, msg_size, "needs 16-byte aligned rows, head_dim %d..64 (with more than %d keys) or %d..256 "
                 "(1..256 when forced), more than %d query rows, a mask only with 16-byte aligned rows",
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
    const int bc_wide = dp > 128 ? FA_CL_WGMMA_WIDE_KV : 0;
    const int tma_tiles = tma_tiles_on && mask_bytes == 0; /* the producer copies by TMA, no mask's tiles */
    /* three computing warpgroups (192 rows) at d_pad 64, FlashAttention-3's there: a third less
     * K/V traffic a FLOP, a third computing warp a scheduler (faster than 128 rows on every shape
     * measured on an H200, commit d9af401). Not at d_pad 128: 160 registers a work-item are too few
     * (192 x 128 and 192 x 96 spill, 192 x 64 doubles the blocks' fixed costs) */
    const int tall = dp == 64 && producer_on && tma_tiles && req->seqlen_q > FA_CL_WGMMA_BLOCK_Q;
    int br = tall ? FA_CL_WGMMA_TALL_Q : req->seqlen_q > 64 ? FA_CL_WGMMA_BLOCK_Q : 64, bc = bc_max, forced = 0;
    if (lim->forced_q > 0 && lim->forced_kv > 0) {
        br = lim->forced_q;
        bc = lim->forced_kv;
        if ((br != 64 && br != 128 && br != FA_CL_WGMMA_TALL_Q) ||
            ((bc < bc_min || bc > bc_max || (bc & (bc - 1))) && bc != bc_wide) || lim->forced_rows > 0 ||
            lim->forced_cols > 0) {
            snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d for nvidia-wgmma: B_r 64, 128 or %d (warpgroups of 64 rows), "
                     "B_c %d..%d (a power of two) or %d at head_dim %d, no third or fourth field", br, bc,
                     FA_CL_WGMMA_TALL_Q, bc_min, bc_max, bc_wide, req->head_dim);
            return forced_here ? FA_CL_ERROR_INVALID_ARGUMENT : FA_CL_ERROR_UNSUPPORTED;
        }
        forced = 1;
    }
    const int stages = 2;
    /* a producer warpgroup copying for the two computing ones (FlashAttention-3's warp
     * specialisation) with 128-row blocks up to d_padded 128: faster at every d_pad 64 and 128
     * shape measured against producer=0 on an H200 (commit a70c4c0). At d_padded 256
     * the computing warpgroups' 224 registers beside a cp.async producer are too few for O's 128
     * accumulators. With copies by TMA the producer needs fewer than 24 registers, so at 256 it
     * takes 24/240 where the plan's copies go by TMA (tma_tiles_on; plan.c clears it
     * otherwise) */
    const int producer = producer_on && ((br == 128 && (dp <= 128 || tma_tiles_on)) ||
                                              (br == FA_CL_WGMMA_TALL_Q && dp <= 128 && tma_tiles));
    if (!forced && producer && tma_tiles && bc_wide > 0 &&
        fa_cl__wgmma_local_bytes(br, bc_wide, dp, stages, 0, producer) <= out->local_mem_budget)
        bc = bc_wide;
    if ((bc == bc_wide || br == FA_CL_WGMMA_TALL_Q) && (!producer || !tma_tiles)) {
        snprintf(msg, msg_size, "FA_CL_TUNE tile=%dx%d for nvidia-wgmma: %s need the producer warpgroup's copies by TMA "
                 "(a dense plan, its tma key not none), no mask%s", br, bc,
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
    FA_CL_NV(out, STAGES) = stages;
    FA_CL_NV(out, KV_WARPS) = 1;
    out->emulated = 0;
    FA_CL_NV(out, MASK_ASYNC) = mask_bytes > 0;
    FA_CL_NV(out, PRODUCER) = producer;
    /* the producer warpgroup gives its registers to the computing ones (setmaxnreg): the driver may
     * count the latter's for every work-item; the entry's .maxnreg is what the launch needs */
    out->compiled_wg = producer;
    out->work_group_size = wg;
    return FA_CL_SUCCESS;
}

/* Padded rows first where they are worth it (kernels/nvidia.h), then req's rows. */
static fa_cl_status plan(const fa_cl__limits *lim, const fa_cl__tile_request *req, fa_cl__tiles *out, char *msg,
                         size_t msg_size)
{
    return fa_cl__nv_plan_padded_first(lim, req, out, msg, msg_size, &fa_cl__kernel_nvidia_wgmma, KEY_PAD_ROWS,
                                       plan_rows);
}

/* Copies by TMA (FA_MASK_TMA, FA_KV_TMA; its tma key picks which): tensor maps say
 * where every tile is, [B, H, S, d] for Q, K and V and [B|1, Hq|1, Sq, Sk] for the mask. Dense
 * plans only (packed heads, varlen, pages, appends and padded rows place rows elsewhere), in one
 * launch (the maps live in the scratch that chunked launches use), every stride that steps
 * nonzero and within the maps' 40 bits (bytes); the mask's query rows not broadcast (a box has no
 * stride 0) and its rows of a block whole 128-byte panels. */
static int tma_strides_ok(const int64_t s[3], const int64_t extent[3], int64_t es, int broadcast)
{
    int ok = 1;
    for (int i = 0; i < 3; i++) /* a broadcast dim (the mask's batches, heads) becomes extent 1 */
        ok = ok && s[i] >= 0 && s[i] < ((int64_t)1 << 40) / es && (extent[i] <= 1 || s[i] > 0 || (broadcast && i < 2));
    return ok;
}

static void plan_tma(int tma, const fa_cl__views *v, fa_cl__tiles *t)
{
    FA_CL_NV(t, MASK_TMA) = FA_CL_NV(t, KV_TMA) = 0;
    if (!v || !FA_CL_NV(t, PRODUCER) || t->paged || t->seqlens || t->packed || t->varlen_q || t->varlen_k ||
        t->append_rows || t->chunk_keys || t->rows_padded)
        return;
    /* a q of another type than the program's (types[0]) is converted as the computing warpgroups
     * load it, not copied: no Q map, and K/V's copies by TMA come with Q's (the mask's may alone) */
    const int q_by_tma = t->types[0] == 0;
    const fa_cl_attention_desc *d = &v->d;
    const int64_t q_ext[3] = {d->batch, d->heads_q, d->seqlen_q}, k_ext[3] = {d->batch, d->heads_kv, d->seqlen_k};
    FA_CL_NV(t, KV_TMA) = (tma & FA_CL_WGMMA_TMA_KV) && q_by_tma && d->seqlen_q > 1 && d->seqlen_k > 1 &&
                          tma_strides_ok(d->q_stride, q_ext, 2, 0) && tma_strides_ok(d->k_stride, k_ext, 2, 0) &&
                          tma_strides_ok(d->v_stride, k_ext, 2, 0);
    const int64_t es = (int64_t)fa_cl__mask_entry_size(d->mask);
    FA_CL_NV(t, MASK_TMA) = (tma & FA_CL_WGMMA_TMA_MASK) && FA_CL_NV(t, MASK_ASYNC) && t->block_kv * es % 128 == 0 &&
                            d->mask_stride[2] != 0 && tma_strides_ok(d->mask_stride, q_ext, es, 1);
    /* with K/V by TMA one work-item copies: the mask's tiles too, or none are */
    if (FA_CL_NV(t, MASK_ASYNC) && !FA_CL_NV(t, MASK_TMA))
        FA_CL_NV(t, KV_TMA) = 0;
}

/* The persistent kernel (FA_PERSISTENT, FlashAttention-3's): a work-group a compute
 * unit (the kernel's registers allow one), each taking tile after tile, so that its producer copies
 * the next tile's Q and K while the consumers finish this one, and a tile's start (each tile's
 * fixed cost was nearly twice cuDNN's: commit 45c0963) overlaps the previous. Causal tiles, of
 * unequal work, come from a counter in LPT order (every 132nd, static, left a ragged end). Faster
 * than persistent=0 on every d_pad 128 shape measured on an H200 (commit e0d134e; the table
 * is docs/performance.md's). Not at d_pad 64 (slower with three computing warpgroups or two, and
 * not from spills: commit f6eb526), nor 256 (no room for the O tile; with O from the accumulators
 * instead, 2-3% slower: commit bd8f002). With a mask (its tiles by TMA) O goes out from the
 * accumulators without the O tile (faster than the mask's non-persistent plan: commit babe56d).
 * Where the producer copies by TMA in a dense plan without splits, fewer than 2^31 tiles (the
 * counter's), and its persistent key is not 0 (cu: a work-group a compute unit; n: at most n). */
static void plan_persistent(int groups, const fa_cl__views *v, fa_cl__tiles *t)
{
    t->persistent = t->persistent_groups = 0;
    if (!v || !FA_CL_NV(t, KV_TMA) || (t->mask && !FA_CL_NV(t, MASK_TMA)) || t->splits > 1 ||
        t->head_dim_padded != 128 || groups == 0)
        return;
    const fa_cl_attention_desc *d = &v->d;
    const uint64_t tiles = (uint64_t)((d->seqlen_q + t->block_q - 1) / t->block_q) * (uint64_t)d->batch *
                           (uint64_t)d->heads_q; /* kv_tma: no GQA packing */
    if (tiles >= ((uint64_t)1 << 31))
        return;
    /* the O tile (rows of d_pad + 8 halves; with a mask O is stored from the accumulators); the Q
     * tile's mbarrier, two slots of the next tile and their 4 */
    const size_t o_tile = t->mask ? 0 : (size_t)t->block_q * (size_t)(t->head_dim_padded + 8) * 2;
    const size_t bytes = t->local_mem_bytes + o_tile + 56;
    if (bytes > t->local_mem_budget)
        return;
    t->persistent = 1;
    t->persistent_groups = groups > 0 ? groups : 0;
    t->local_mem_bytes = bytes;
}

/* After the planner's decisions: the mask read in pairs, copies by TMA, the persistent kernel; and
 * where the tiles are ones only copies by TMA feed but the copies are not by TMA, a re-plan without
 * such tiles. */
static fa_cl_status finish(const fa_cl__limits *lim, fa_cl__tile_request *req, fa_cl__tiles *t, char *msg,
                           size_t msg_size)
{
    (void)msg, (void)msg_size;
    fa_cl__nv_mask_pairs(req, t);
    plan_tma(fa_cl__tune_value(lim, &fa_cl__kernel_nvidia_wgmma, KEY_TMA), req->views, t);
    plan_persistent(fa_cl__tune_value(lim, &fa_cl__kernel_nvidia_wgmma, KEY_PERSISTENT), req->views, t);
    t->prologue = FA_CL_NV(t, MASK_TMA) || FA_CL_NV(t, KV_TMA);
    const int wide_kv = t->block_kv & (t->block_kv - 1);
    const int tall_q = t->block_q == FA_CL_WGMMA_TALL_Q;
    if (FA_CL_NV(t, PRODUCER) && (t->head_dim_padded > 128 || wide_kv || tall_q) && !FA_CL_NV(t, KV_TMA) &&
        !(req->narrowed & FA_CL_WGMMA_NO_TMA_TILES)) {
        /* at d_pad 256 the producer's 24 registers issue bulk tensor copies, not cp.async's addresses */
        req->narrowed |= FA_CL_WGMMA_NO_TMA_TILES;
        return FA_CL_REPLAN;
    }
    return FA_CL_SUCCESS;
}

/* The prologue (fa_tma_maps, cl/fa_nv_fwd_tma.cl): the tensor maps, and with a persistent
 * kernel the tile counter after them, into the plan's scratch. */
static size_t maps_scratch(const fa_cl__tiles *t)
{
    return FA_CL_TMA_MAPS * FA_CL_TMA_MAP_BYTES + (t->persistent ? FA_CL_TILE_COUNTER_BYTES : 0);
}

static cl_int maps_args(cl_kernel k, const fa_cl__views *v, const fa_cl_forward_args *a, cl_mem scratch)
{
    const fa_cl_attention_desc *d = &v->d;
    cl_mem mems[4] = {scratch, a->q, a->k, a->v};
    const cl_ulong offs[3] = {d->q_offset, d->k_offset, d->v_offset};
    const int64_t *strides[3] = {d->q_stride, d->k_stride, d->v_stride};
    const cl_int ints[5] = {(cl_int)d->batch, (cl_int)d->heads_q, (cl_int)d->heads_kv, (cl_int)d->seqlen_q,
                            (cl_int)d->seqlen_k};
    cl_mem mask = d->mask ? a->mask : NULL;
    const cl_ulong moff = d->mask_offset;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, n++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, n++, sizeof(cl_ulong), &offs[i]);
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long s = strides[t][i];
            err = clSetKernelArg(k, n++, sizeof(cl_long), &s);
        }
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(k, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_mem), &mask);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(k, n++, sizeof(cl_ulong), &moff);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        cl_long s = d->mask ? d->mask_stride[i] : 0;
        err = clSetKernelArg(k, n++, sizeof(cl_long), &s);
    }
    return err;
}



static int options(const fa_cl__tiles *t, char *out, size_t n)
{
    /* two warpgroups take turns issuing their products (FA_WG_PINGPONG). It won before the producer
     * warpgroup, not with padded rows (commit ab18c05). With the producer at d_pad 128 and 256 it
     * loses: the turns make each warpgroup wait for the other's products, where the scheduler
     * already interleaves two warpgroups that never meet at a barrier. At d_pad 64 (128-row blocks:
     * masks, short rows) it still wins. Measured on an H200 (commit 5ae629f). */
    const int pingpong = t->block_q == 128 && !t->rows_padded && (!FA_CL_NV(t, PRODUCER) || t->head_dim_padded == 64) &&
                         !t->persistent;
    /* the producer warpgroup: 384 work-items (512 with three computing warpgroups), 168 (128)
     * registers each at entry (65536 / work-items), moved to the computing warpgroups by setmaxnreg
     * (the kernel's FA_WG_*_REGS) */
    char producer[64] = "";
    if (FA_CL_NV(t, PRODUCER))
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
    .nfiles = sizeof files / sizeof files[0],
    .summary = "f16/bf16 on Hopper tensor cores (compute capability 9.0): wgmma through sm_90a PTX, cp.async",
    .takes = {FA_CL_DTYPES_16, FA_CL_FEAT_MODIFIERS | FA_CL_FEAT_QO_TYPES | FA_CL_FEAT_SERVING | FA_CL_FEAT_HEAD_DIM_V,
              FA_CL_MASKS_ALL, 256},
    /* compute capability 9.0 alone: later parts lack wgmma */
    .needs = {.vendor = FA_CL_VENDOR_NVIDIA, .arch_min = 90, .arch_max = 90},
    .tune = tune,
    .ntune = sizeof tune / sizeof tune[0],
    .plan = plan,
    .finish = finish,
    .options = options,
    .late_options = fa_cl__nv_late_options,
    .prologue_entry = "fa_tma_maps",
    .prologue_scratch = maps_scratch,
    .prologue_args = maps_args,
    .unroll_max_dim = FA_CL_UNROLL_MAX_DIM,
    .ptx_sm90a = 1,
};
