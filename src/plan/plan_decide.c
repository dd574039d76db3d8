/* SPDX-License-Identifier: Apache-2.0 */
/* A forward plan's decisions that need no device: the limits and tile request a descriptor plans
 * under, the tiles and every feature the kernel is built with (split-KV, copies by TMA, the
 * persistent kernel, padded rows), and the build options of each program the plan compiles. Pure
 * functions of the views, the limits and fa_cl__plan_device: the library (plan.c) calls them between
 * its builds, and fa_cl_info --emit calls them for the device profiles, so that the offline checks
 * (scripts/offline_compile.sh, scripts/check_kernel_tokens.sh) see exactly the library's builds. */
#include "kernels/nvidia_mma.h"   /* FA_CL_MMA_BLOCK_Q: padded rows (moves to the family) */
#include "kernels/nvidia_wgmma.h" /* FA_CL_WGMMA_TALL_Q (moves to the family) */
#include "plan/plan.h"

#include <stdio.h>

/* nvidia-wgmma's copies by TMA (FA_MASK_TMA, FA_KV_TMA; FA_CL_TMA picks which): tensor maps say
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

static void plan_tma(const fa_cl__env *env, const fa_cl__views *v, fa_cl__tiles *t)
{
    const fa_cl_attention_desc *d = &v->d;
    t->mask_tma = t->kv_tma = 0;
    if (!t->producer || t->paged || t->seqlens || t->packed || t->varlen_q || t->varlen_k || t->append_rows ||
        t->chunk_keys || t->rows_padded)
        return;
    const int64_t q_ext[3] = {d->batch, d->heads_q, d->seqlen_q}, k_ext[3] = {d->batch, d->heads_kv, d->seqlen_k};
    t->kv_tma = (env->tma & FA_CL_TMA_KV) && d->seqlen_q > 1 && d->seqlen_k > 1 &&
                tma_strides_ok(d->q_stride, q_ext, 2, 0) && tma_strides_ok(d->k_stride, k_ext, 2, 0) &&
                tma_strides_ok(d->v_stride, k_ext, 2, 0);
    const int64_t es = (int64_t)fa_cl__mask_entry_size(d->mask);
    t->mask_tma = (env->tma & FA_CL_TMA_MASK) && t->mask_async && t->block_kv * es % 128 == 0 &&
                  d->mask_stride[2] != 0 && tma_strides_ok(d->mask_stride, q_ext, es, 1);
    /* with K/V by TMA one work-item copies: the mask's tiles too, or none are */
    if (t->mask_async && !t->mask_tma)
        t->kv_tma = 0;
}

/* nvidia-wgmma's persistent kernel (FA_PERSISTENT, FlashAttention-3's): a work-group a compute
 * unit (the kernel's registers allow one), each taking tile after tile, so that its producer copies
 * the next tile's Q and K while the consumers finish this one, and a tile's start (each tile's
 * fixed cost was nearly twice cuDNN's: commit 45c0963) overlaps the previous. Causal tiles, of
 * unequal work, come from a counter in LPT order (every 132nd, static, left a ragged end). Faster
 * than FA_CL_PERSISTENT=0 on every d_pad 128 shape measured on an H200 (commit e0d134e; the table
 * is docs/performance.md's). Not at d_pad 64 (slower with three computing warpgroups or two, and
 * not from spills: commit f6eb526), nor 256 (no room for the O tile; with O from the accumulators
 * instead, 2-3% slower: commit bd8f002). With a mask (its tiles by TMA) O goes out from the
 * accumulators without the O tile (faster than the mask's non-persistent plan: commit babe56d).
 * Where the producer copies by TMA in a dense plan without splits, fewer than 2^31 tiles (the
 * counter's), and FA_CL_PERSISTENT is not 0. */
static void plan_persistent(const fa_cl__env *env, const fa_cl__views *v, fa_cl__tiles *t)
{
    const fa_cl_attention_desc *d = &v->d;
    t->persistent = 0;
    if (!t->kv_tma || (t->mask && !t->mask_tma) || t->splits > 1 || t->head_dim_padded != 128 || env->persistent_off)
        return;
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
    t->local_mem_bytes = bytes;
}

/* Split-KV: how many chunks each row's keys are computed in (FA_CL_SPLITS, or FlashAttention-2's
 * heuristic on the work-groups the device runs at once: two per compute unit on GPUs, one on
 * CPUs). A split plan sums at most fa_cl__chunk_keys keys per chunk where long rows need it, so
 * it never chunks launches too; its partial results must fit the device's largest allocation, or
 * the plan is not split (long rows then chunk as before). */
static fa_cl_status choose_splits(const fa_cl__plan_device *dev, const fa_cl__views *v, int pack, fa_cl__tiles *t,
                                  char *msg, size_t msg_size)
{
    const fa_cl_attention_desc *d = &v->d;
    const int slots = (int)dev->compute_units * (dev->is_gpu ? 2 : 1);
    const int64_t n = fa_cl__split_count(t, d->batch, d->heads_q / pack, pack * d->seqlen_q, v->row_keys, d->seqlen_k,
                                        slots, dev->env->splits);
    t->splits = 1;
    if (n <= 1)
        return FA_CL_SUCCESS;
    const uint64_t part_rows = (uint64_t)d->batch * (uint64_t)d->heads_q * (uint64_t)d->seqlen_q;
    const uint64_t bytes = (uint64_t)n * part_rows * ((uint64_t)d->head_dim + 1) * sizeof(float);
    if (part_rows > UINT64_MAX / 4 / ((uint64_t)d->head_dim + 1) / (uint64_t)n ||
        (uint64_t)n * part_rows * (uint64_t)d->head_dim * sizeof(float) > dev->max_alloc_size || n > INT32_MAX / 2) {
        if (dev->env->splits) {
            snprintf(msg, msg_size, "FA_CL_SPLITS=%d: the partial results (%llu bytes) exceed the device's largest "
                     "allocation (%llu bytes)", dev->env->splits, (unsigned long long)bytes,
                     (unsigned long long)dev->max_alloc_size);
            return FA_CL_ERROR_UNSUPPORTED;
        }
        return FA_CL_SUCCESS;
    }
    t->splits = (int)n;
    t->chunk_keys = 0;
    return FA_CL_SUCCESS;
}

int fa_cl__plan_pack(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__views *v)
{
    /* GQA packing: where seqlen_q is small (below the tensor-core kernels' 64-row block), one
     * work-group takes every query head of a kv head, so K/V are read once per kv head
     * (FA_CL_GQA_PACK=0 never, =1 wherever heads share a kv head); the backward's kernels take one */
    return op == FA_CL_OP_FORWARD ? fa_cl__gqa_pack(v->group, v->d.seqlen_q, dev->env->gqa_pack) : 1;
}

fa_cl_status fa_cl__plan_request(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__backward_views *bv,
                                 int pack, fa_cl__limits *lim, fa_cl__tile_request *req, char *msg, size_t msg_size)
{
    const fa_cl__views *v = &bv->fwd;
    if (op == FA_CL_OP_BACKWARD) {
        const fa_cl_attention_desc *d = &v->d;
        const fa_cl__tile_request r = {(int)d->head_dim, d->dtype, d->seqlen_q, d->seqlen_k, bv->aligned16,
                                       v->row_keys};
        *req = r;
        return FA_CL_SUCCESS;
    }
    if (!fa_cl__forced_forward(lim)) {
        /* FA_CL_KERNEL_VARIANT naming a backward family: neither it nor FA_CL_TILE, which goes with it,
         * is this plan's */
        if (lim->forced_variant)
            lim->forced_q = lim->forced_kv = lim->forced_rows = lim->forced_cols = 0;
        lim->forced_variant = 0;
    }
    const fa_cl_attention_desc *d = &v->d;
    /* a head column's rows: GQA packing stacks its query heads' rows */
    const fa_cl__tile_request r = {(int)d->head_dim, d->dtype, pack * d->seqlen_q, d->seqlen_k, v->aligned16,
                                  v->row_keys};
    *req = r;
    lim->o_f32 = v->type[3] == FA_CL_TYPE_F32; /* long rows' chunks follow o's accuracy */
    /* tensors of several storage types: the portable kernels (the tensor-core ones take one), but
     * nvidia-mma takes q8_0 K and V with q and o in the dtype (it dequantises K/V as it loads) */
    const int kv_q8 = v->type[1] == FA_CL_TYPE_Q8_0 && v->type[2] == FA_CL_TYPE_Q8_0 && v->type[0] == (int)d->dtype &&
                      v->type[3] == (int)d->dtype && d->dtype != FA_CL_F32;
    if (kv_q8) {
        lim->nv_tf32 = 0;
        lim->mma_kv_q8 = 1;
        /* asynchronous copies of 8 (or 4) bytes where every K/V row's bytes start that aligned: row
         * element offsets multiples of 128 (64), i.e. 136 (68) bytes, from 16-byte aligned buffers */
        for (int w = 8; w >= 4 && !lim->mma_q8_copy; w /= 2) {
            const int64_t e = w == 8 ? 128 : 64;
            int ok = d->head_dim % e == 0 && d->k_offset % (size_t)e == 0 && d->v_offset % (size_t)e == 0;
            for (int i = 0; i < 3; i++)
                ok = ok && d->k_stride[i] % e == 0 && d->v_stride[i] % e == 0;
            lim->mma_q8_copy = ok ? w : 0;
        }
    } else if (v->mixed_types) {
        if (lim->forced_variant == FA_CL_KERNEL_NVIDIA_MMA || lim->forced_variant == FA_CL_KERNEL_NVIDIA_TF32X3) {
            snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=%s takes one storage type for q, k, v and o (desc.q_type .. "
                     "o_type differ): the portable kernels take them", fa_cl__kernel_by_id(lim->forced_variant)->name);
            return FA_CL_ERROR_UNSUPPORTED;
        }
        lim->nv_mma = lim->nv_tf32 = 0;
    }
    /* score modifiers: the portable kernels only; an attention mask: those and nvidia-mma */
    const int score_mods = d->softcap > 0 || d->alibi || d->sinks;
    if (score_mods || d->mask) {
        const int forced = lim->forced_variant;
        if ((score_mods && forced == FA_CL_KERNEL_NVIDIA_MMA) || forced == FA_CL_KERNEL_NVIDIA_TF32X3) {
            snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=%s takes no %s yet: the portable kernels do",
                     fa_cl__kernel_by_id(forced)->name,
                     score_mods ? "score modifiers (desc.softcap, desc.alibi, desc.sinks)"
                                : "attention mask (desc.mask)");
            return FA_CL_ERROR_UNSUPPORTED;
        }
        if (forced == FA_CL_KERNEL_PORTABLE && lim->rows_small_dims) {
            snprintf(msg, msg_size, "FA_CL_KERNEL_VARIANT=portable with %s is not verified on NVIDIA GPUs (it failed "
                     "the H200's tests): portable-tiled takes them",
                     score_mods ? "score modifiers" : "an attention mask");
            return FA_CL_ERROR_UNSUPPORTED;
        }
        fa_cl__limits_for_modifiers(lim, score_mods, d->mask != FA_CL_MASK_NONE);
    }
    if (d->mask != FA_CL_MASK_NONE) {
        /* every mask row 16-byte aligned (offset and strides in bytes): the tensor-core kernel copies
         * its tiles with K and V (cl buffers and sub-buffers start aligned) */
        const int64_t es = (int64_t)fa_cl__mask_entry_size(d->mask);
        const int rows16 = ((int64_t)d->mask_offset * es) % 16 == 0 && (d->mask_stride[0] * es) % 16 == 0 &&
                           (d->mask_stride[1] * es) % 16 == 0 && (d->mask_stride[2] * es) % 16 == 0;
        lim->mma_mask_bytes = rows16 ? (int)es : 0;
    }
    /* head_dim not a multiple of 8 (59, 111): no q/k/v row is 16-byte aligned, and the tensor-core
     * kernel would load them synchronously (several times slower on an H200: commit eb66e6e). Dense
     * f16/bf16 prefill (more than one 64-row block a head, every key read by each: the copy is a
     * small part) instead copies q, k and v into zero-padded rows first (pad-rows launches, the
     * plan's scratch) and plans the aligned kernel; o is stored element-wise as before. Decoding,
     * caches (kv_seqlens, pages, appends) and varlen keep the direct loads, and so does a problem
     * whose copies would not fit the device's largest allocation. */
    const uint64_t pad_row_bytes = (uint64_t)(d->head_dim + 7) / 8 * 8 * 2;
    const uint64_t pad_rows_max = (uint64_t)d->batch * (uint64_t)(d->heads_q * d->seqlen_q > d->heads_kv * d->seqlen_k
                                                                      ? d->heads_q * d->seqlen_q
                                                                      : d->heads_kv * d->seqlen_k);
    if (!v->aligned16 && d->head_dim % 8 != 0 && d->dtype != FA_CL_F32 && !v->mixed_types && d->page_size == 0 &&
        d->total_q == 0 && d->total_k == 0 && d->seqlen_new == 0 && !d->kv_seqlens &&
        d->seqlen_q > FA_CL_MMA_BLOCK_Q && !dev->env->pad_rows_off &&
        pad_rows_max <= dev->max_alloc_size / pad_row_bytes)
        req->aligned16 = 1;
    return FA_CL_SUCCESS;
}

/* A backward plan's tiles (the backward families' walk) and the features its kernels are built with. */
static fa_cl_status backward_decide(const fa_cl__backward_views *bv, const fa_cl__limits *lim,
                                    const fa_cl__tile_request *req, fa_cl__tiles *t, char *msg, size_t msg_size)
{
    const fa_cl_attention_desc *d = &bv->fwd.d;
    fa_cl_status st = fa_cl__plan_backward_tiles(lim, req, t, msg, msg_size);
    if (st != FA_CL_SUCCESS)
        return st;
    t->varlen_q = d->total_q > 0; /* -DFA_VARLEN_Q, _K, FA_SEQLENS (cl/fa_backward_common.cl) */
    t->varlen_k = d->total_k > 0;
    t->seqlens = d->kv_seqlens != 0;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__plan_decide(const fa_cl__plan_device *dev, fa_cl__operation op, const fa_cl__backward_views *bv,
                                int pack, fa_cl__limits *lim, fa_cl__tile_request *req, fa_cl__tiles *t, char *msg,
                                size_t msg_size)
{
    if (op == FA_CL_OP_BACKWARD)
        return backward_decide(bv, lim, req, t, msg, msg_size);
    const fa_cl__views *v = &bv->fwd;
    const fa_cl_attention_desc *d = &v->d;
    for (;;) { /* at most three rounds: each retry below clears what caused it */
        fa_cl_status st = fa_cl__plan_tiles(lim, req, t, msg, msg_size);
        if (st != FA_CL_SUCCESS)
            return st;
        if (req->aligned16 && !v->aligned16 && t->variant != FA_CL_KERNEL_NVIDIA_MMA &&
            t->variant != FA_CL_KERNEL_NVIDIA_WGMMA) {
            req->aligned16 = 0; /* padded rows are for the tensor-core kernel only */
            continue;
        }
        t->rows_padded = req->aligned16 && !v->aligned16;
        t->paged = (int)d->page_size;
        t->seqlens = d->kv_seqlens != 0;
        t->packed = pack > 1;
        t->varlen_q = d->total_q > 0;
        t->varlen_k = d->total_k > 0;
        t->append_rows = (int)d->seqlen_new;
        t->softcap = d->softcap > 0;
        t->alibi = d->alibi;
        t->sinks = d->sinks;
        t->mask = (int)d->mask;
        for (int i = 0; i < 4; i++)
            t->types[i] = v->type[i] != (int)d->dtype ? v->type[i] + 1 : 0;
        t->mask_pairs = d->mask && (t->variant == FA_CL_KERNEL_NVIDIA_MMA || t->variant == FA_CL_KERNEL_NVIDIA_WGMMA) &&
                        d->mask_offset % 2 == 0 && d->mask_stride[0] % 2 == 0 && d->mask_stride[1] % 2 == 0 &&
                        d->mask_stride[2] % 2 == 0;
        if ((st = choose_splits(dev, v, pack, t, msg, msg_size)) != FA_CL_SUCCESS)
            return st;
        plan_tma(dev->env, v, t);
        plan_persistent(dev->env, v, t);
        const int wide_kv = t->block_kv & (t->block_kv - 1);
        const int tall_q = t->block_q == FA_CL_WGMMA_TALL_Q;
        if (t->producer && (t->head_dim_padded > 128 || wide_kv || tall_q) && !t->kv_tma && lim->wg_tma_tiles) {
            /* nvidia-wgmma's tiles that only copies by TMA feed (nvidia_wgmma.c): at d_pad 256 the
             * producer's 24 registers issue bulk tensor copies, not cp.async's addresses */
            lim->wg_tma_tiles = 0;
            continue;
        }
        return FA_CL_SUCCESS;
    }
}

int fa_cl__plan_options(const fa_cl__tiles *t, const fa_cl__views *v, int is_gpu, char *out, size_t n)
{
    const fa_cl_attention_desc *d = &v->d;
    int len;
    switch (t->variant) {
    case FA_CL_KERNEL_COMBINE: /* o's storage type and the row width only */
        len = snprintf(out, n, "-DFA_DTYPE=%d -DHEAD_DIM=%d%s%s", v->type[3], (int)d->head_dim,
                       d->total_q > 0 ? " -DFA_VARLEN_Q" : "", d->sinks ? " -DFA_SINKS" : "");
        break;
    case FA_CL_KERNEL_APPEND:
        len = snprintf(out, n, "-DFA_DTYPE=%d -DHEAD_DIM=%d%s%s", (int)d->dtype, (int)d->head_dim,
                       d->page_size > 0 ? " -DFA_PAGED" : "", FA_CL_STATUS_OPTIONS);
        break;
    case FA_CL_KERNEL_CHECK_SERVING: /* one program for every plan */
        len = snprintf(out, n, "%s", FA_CL_STATUS_OPTIONS + 1);
        break;
    case FA_CL_KERNEL_PAD_ROWS:
        len = snprintf(out, n, "-DHEAD_DIM=%d", (int)d->head_dim);
        break;
    default:
        return fa_cl__build_options(t, d->dtype, (int)d->head_dim, is_gpu, out, n);
    }
    return len < 0 || (size_t)len >= n ? -1 : len;
}
