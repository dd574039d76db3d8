/* SPDX-License-Identifier: Apache-2.0 */
/* Plans for the fused forward pass: planning, compiling, the launch list and its scratch, and
 * running it. */
#include "plan/plan.h"
#include "program/build_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Arguments of fa_forward (cl/fa_forward_common.cl's FA_FORWARD_PARAMS), in that order; a serving
 * build (FA_SERVING) takes 12 more. */
#define FA_CL_FORWARD_ARGS 35
#define FA_CL_SERVING_ARGS 12
#define FA_CL_MODS_ARGS 4    /* FA_MODS_PARAMS: softcap in and out, the ALiBi slopes, the sinks */
#define FA_CL_MASK_ARGS 6    /* FA_MASK_PARAMS: the mask, its offset and 3 strides, 1 / scale */

/* Build the kernel family's program for the tiles chosen: sizes and storage type become -D options
 * (build_options.c, shared with the offline compile checks). */
static fa_cl_status build_kernel_entry(fa_cl_context *ctx, const fa_cl_views *v, const fa_cl_tiles *t,
                                       const char *entry, cl_kernel *out)
{
    char options[512];
    int gpu = (ctx->props.type & CL_DEVICE_TYPE_GPU) != 0;
    if (fa_cl_build_options(t, v->d.dtype, (int)v->d.head_dim, gpu, options, sizeof options) < 0)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: build options longer than %zu characters",
                           sizeof options - 1);
    const fa_cl_kernel_family *f = fa_cl_kernel_by_id(t->variant);
    if (t->variant == FA_CL_KERNEL_COMBINE) /* o's storage type and the row width only */
        snprintf(options, sizeof options, "-DFA_DTYPE=%d -DHEAD_DIM=%d%s%s", v->type[3], (int)v->d.head_dim,
                 v->d.total_q > 0 ? " -DFA_VARLEN_Q" : "", v->d.sinks ? " -DFA_SINKS" : "");
    if (t->variant == FA_CL_KERNEL_APPEND)
        snprintf(options, sizeof options, "-DFA_DTYPE=%d -DHEAD_DIM=%d%s", (int)v->d.dtype, (int)v->d.head_dim,
                 v->d.page_size > 0 ? " -DFA_PAGED" : "");
    if (t->variant == FA_CL_KERNEL_PAD_ROWS)
        snprintf(options, sizeof options, "-DHEAD_DIM=%d", (int)v->d.head_dim);
    cl_program prog;
    fa_cl_status st = fa_cl__program_get(ctx, f->files, f->nfiles, options, f->ptx_sm90a, &prog);
    if (st != FA_CL_SUCCESS)
        return st;
    cl_int err;
    if (!entry)
        entry = f->entry;
    *out = fa_cl__kernel_take(ctx, prog, entry, &err);
    clReleaseProgram(prog);
    if (!*out)
        return fa_cl__fail(ctx, err == CL_OUT_OF_HOST_MEMORY ? FA_CL_ERROR_OUT_OF_MEMORY : FA_CL_ERROR_OPENCL,
                           "clCreateKernel(%s): %s (%d)", entry, fa_cl__cl_error_name(err), (int)err);
    return FA_CL_SUCCESS;
}

/* The family's kernel (its entry) of the program built for these tiles. */
static fa_cl_status build_kernel(fa_cl_context *ctx, const fa_cl_views *v, const fa_cl_tiles *t, cl_kernel *out)
{
    return build_kernel_entry(ctx, v, t, NULL, out);
}

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

static void plan_tma(const fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl_tiles *t = &plan->tiles;
    const fa_cl_attention_desc *d = &plan->views.d;
    t->mask_tma = t->kv_tma = 0;
    if (!t->producer || t->paged || t->seqlens || t->packed || t->varlen_q || t->varlen_k || t->append_rows ||
        t->chunk_keys || t->rows_padded)
        return;
    const int64_t q_ext[3] = {d->batch, d->heads_q, d->seqlen_q}, k_ext[3] = {d->batch, d->heads_kv, d->seqlen_k};
    t->kv_tma = (ctx->env.tma & FA_CL_TMA_KV) && d->seqlen_q > 1 && d->seqlen_k > 1 &&
                tma_strides_ok(d->q_stride, q_ext, 2, 0) && tma_strides_ok(d->k_stride, k_ext, 2, 0) &&
                tma_strides_ok(d->v_stride, k_ext, 2, 0);
    const int64_t es = d->mask == FA_CL_MASK_F32 ? 4 : d->mask == FA_CL_MASK_F16 ? 2 : 1;
    t->mask_tma = (ctx->env.tma & FA_CL_TMA_MASK) && t->mask_async && t->block_kv * es % 128 == 0 &&
                  d->mask_stride[2] != 0 && tma_strides_ok(d->mask_stride, q_ext, es, 1);
    /* with K/V by TMA one work-item copies: the mask's tiles too, or none are */
    if (t->mask_async && !t->mask_tma)
        t->kv_tma = 0;
}

/* nvidia-wgmma's persistent kernel (FA_PERSISTENT, FlashAttention-3's): a work-group a compute
 * unit (the kernel's registers allow one), each taking tile after tile, so that its producer copies
 * the next tile's Q and K while the consumers finish this one, and a tile's start (5.8 us against
 * cuDNN's 3.2 at d = 128, H200 session 22 call 8) overlaps the previous. Causal tiles come from a
 * counter (dynamic, in LPT order; every 132nd, static, lost: 501 / 506 TFLOP/s against 536 / 545).
 * H200, session 23 calls 1-2, B=8 H=16 N=4096 f16 against FA_CL_PERSISTENT=0: d = 128 631.5 /
 * 625.2 against 623.5 / 620.0, causal 579.0 / 585.2 against 544.7 / 544.8, bf16 657.7 against
 * 641.4, B=64 N=512 436.6 against 364.4, B=32 N=1024 542.0 against 483.1 (causal 390.2 against
 * 319.4), GQA 32/8 N=8192 663.8 against 619.1. Not at d_pad 64 (three computing warpgroups of 160
 * registers: 357 against 450; the driver's PTX spills only 8 bytes, session 24, so not that), nor
 * 256 (no room for the O tile; with O from the accumulators instead, session 24 call 5, no spills:
 * 665.1 / 664.8 against 678.5 / 678.6, bf16 684.8 against 705.3). With a mask (its tiles by TMA) O goes out from the accumulators
 * without the O tile (session 24 call 4 against b544d44: f16 mask 550.8 / 552.7 against 534.9 /
 * 540.7, causal 495.7 against 468.6, B=32 N=1024 441.3 against 415.9, with the 24/240 registers).
 * Where the producer copies by TMA in a dense plan without splits, fewer than 2^31 tiles (the
 * counter's), and FA_CL_PERSISTENT is not 0. */
static void plan_persistent(const fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl_tiles *t = &plan->tiles;
    const fa_cl_attention_desc *d = &plan->views.d;
    t->persistent = 0;
    if (!t->kv_tma || (t->mask && !t->mask_tma) || t->splits > 1 || t->head_dim_padded != 128 ||
        ctx->env.persistent_off)
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
 * CPUs). A split plan sums at most fa_cl_chunk_keys keys per chunk where long rows need it, so
 * it never chunks launches too; its partial results must fit the device's largest allocation, or
 * the plan is not split (long rows then chunk as before). */
static fa_cl_status choose_splits(fa_cl_context *ctx, fa_cl_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    fa_cl_tiles *t = &plan->tiles;
    const int gpu = (ctx->props.type & CL_DEVICE_TYPE_GPU) != 0;
    const int slots = (int)ctx->props.compute_units * (gpu ? 2 : 1);
    const int64_t n = fa_cl_split_count(t, d->batch, d->heads_q / plan->pack, plan->pack * d->seqlen_q,
                                        plan->views.row_keys, d->seqlen_k, slots, ctx->env.splits);
    t->splits = 1;
    if (n <= 1)
        return FA_CL_SUCCESS;
    const uint64_t part_rows = (uint64_t)d->batch * (uint64_t)d->heads_q * (uint64_t)d->seqlen_q;
    const uint64_t bytes = (uint64_t)n * part_rows * ((uint64_t)d->head_dim + 1) * sizeof(float);
    if (part_rows > UINT64_MAX / 4 / ((uint64_t)d->head_dim + 1) / (uint64_t)n ||
        (uint64_t)n * part_rows * (uint64_t)d->head_dim * sizeof(float) > ctx->props.max_alloc_size ||
        n > INT32_MAX / 2) {
        if (ctx->env.splits)
            return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED,
                               "fa_cl_plan_create: FA_CL_SPLITS=%d: the partial results (%llu bytes) exceed the "
                               "device's largest allocation (%llu bytes)", ctx->env.splits, (unsigned long long)bytes,
                               (unsigned long long)ctx->props.max_alloc_size);
        return FA_CL_SUCCESS;
    }
    t->splits = (int)n;
    t->chunk_keys = 0;
    return FA_CL_SUCCESS;
}

static fa_cl_status plan_tiles_and_kernel(fa_cl_context *ctx, fa_cl_plan *plan)
{
    fa_cl_limits lim;
    fa_cl__context_limits(ctx, &lim);
    if (!fa_cl_forced_forward(&lim)) {
        /* FA_CL_KERNEL_VARIANT naming a backward family: neither it nor FA_CL_TILE, which goes with it,
         * is this plan's */
        if (lim.forced_variant)
            lim.forced_q = lim.forced_kv = lim.forced_rows = lim.forced_cols = 0;
        lim.forced_variant = 0;
    }
    const fa_cl_views *v = &plan->views;
    const fa_cl_attention_desc *d = &v->d;
    /* a head column's rows: GQA packing stacks its query heads' rows */
    fa_cl_tile_request req = {(int)d->head_dim, d->dtype, plan->pack * d->seqlen_q, d->seqlen_k, v->aligned16,
                              v->row_keys};
    lim.o_f32 = v->type[3] == FA_CL_TYPE_F32;
    char msg[512];
    /* tensors of several storage types: the portable kernels (the tensor-core ones take one), but
     * nvidia-mma takes q8_0 K and V with q and o in the dtype (it dequantises K/V as it loads) */
    const int kv_q8 = v->type[1] == FA_CL_TYPE_Q8_0 && v->type[2] == FA_CL_TYPE_Q8_0 && v->type[0] == (int)d->dtype &&
                      v->type[3] == (int)d->dtype && d->dtype != FA_CL_F32;
    if (kv_q8) {
        lim.nv_tf32 = 0;
        lim.mma_kv_q8 = 1;
        /* asynchronous copies of 8 (or 4) bytes where every K/V row's bytes start that aligned: row
         * element offsets multiples of 128 (64), i.e. 136 (68) bytes, from 16-byte aligned buffers */
        for (int w = 8; w >= 4 && !lim.mma_q8_copy; w /= 2) {
            const int64_t e = w == 8 ? 128 : 64;
            int ok = d->head_dim % e == 0 && d->k_offset % (size_t)e == 0 && d->v_offset % (size_t)e == 0;
            for (int i = 0; i < 3; i++)
                ok = ok && d->k_stride[i] % e == 0 && d->v_stride[i] % e == 0;
            lim.mma_q8_copy = ok ? w : 0;
        }
    } else if (v->mixed_types) {
        if (lim.forced_variant == FA_CL_KERNEL_NVIDIA_MMA || lim.forced_variant == FA_CL_KERNEL_NVIDIA_TF32X3)
            return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_plan_create: FA_CL_KERNEL_VARIANT=%s takes one "
                               "storage type for q, k, v and o (desc.q_type .. o_type differ): the portable kernels "
                               "take them", fa_cl_kernel_by_id(lim.forced_variant)->name);
        lim.nv_mma = lim.nv_tf32 = 0;
    }
    /* score modifiers: the portable kernels only; an attention mask: those and nvidia-mma */
    const int score_mods = d->softcap > 0 || d->alibi || d->sinks;
    if (score_mods || d->mask) {
        const int forced = lim.forced_variant;
        if ((score_mods && forced == FA_CL_KERNEL_NVIDIA_MMA) || forced == FA_CL_KERNEL_NVIDIA_TF32X3)
            return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_plan_create: FA_CL_KERNEL_VARIANT=%s takes no %s "
                               "yet: the portable kernels do", fa_cl_kernel_by_id(forced)->name,
                               score_mods ? "score modifiers (desc.softcap, desc.alibi, desc.sinks)"
                                          : "attention mask (desc.mask)");
        if (forced == FA_CL_KERNEL_PORTABLE && lim.rows_small_dims)
            return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_plan_create: FA_CL_KERNEL_VARIANT=portable with %s "
                               "is not verified on NVIDIA GPUs (it failed the H200's tests): portable-tiled takes them",
                               score_mods ? "score modifiers" : "an attention mask");
        fa_cl_limits_for_modifiers(&lim, score_mods, d->mask != FA_CL_MASK_NONE);
    }
    if (d->mask != FA_CL_MASK_NONE) {
        /* every mask row 16-byte aligned (offset and strides in bytes): the tensor-core kernel copies
         * its tiles with K and V (cl buffers and sub-buffers start aligned) */
        const int64_t es = d->mask == FA_CL_MASK_F32 ? 4 : d->mask == FA_CL_MASK_F16 ? 2 : 1;
        const int rows16 = ((int64_t)d->mask_offset * es) % 16 == 0 && (d->mask_stride[0] * es) % 16 == 0 &&
                           (d->mask_stride[1] * es) % 16 == 0 && (d->mask_stride[2] * es) % 16 == 0;
        lim.mma_mask_bytes = rows16 ? (int)es : 0;
    }
    /* head_dim not a multiple of 8 (59, 111): no q/k/v row is 16-byte aligned, and the tensor-core
     * kernel would load them synchronously (H200, d = 59: 87 TFLOP/s against 294 at d = 64). Dense
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
        d->seqlen_q > FA_CL_MMA_BLOCK_Q && !ctx->env.pad_rows_off &&
        pad_rows_max <= ctx->props.max_alloc_size / pad_row_bytes)
        req.aligned16 = 1;
    /* A compiled kernel may get fewer work-items than the device maximum (registers) or report
     * more local memory than the tiles (the compiler's own use): re-plan within what it reports. */
    for (int attempt = 0; attempt < 4; attempt++) {
        fa_cl_status st = fa_cl_plan_tiles(&lim, &req, &plan->tiles, msg, sizeof msg);
        if (st != FA_CL_SUCCESS)
            return fa_cl__fail(ctx, st, "fa_cl_plan_create: %s", msg);
        if (req.aligned16 && !v->aligned16 && plan->tiles.variant != FA_CL_KERNEL_NVIDIA_MMA &&
            plan->tiles.variant != FA_CL_KERNEL_NVIDIA_WGMMA) {
            req.aligned16 = 0; /* padded rows are for the tensor-core kernel only */
            attempt--;
            continue;
        }
        plan->tiles.rows_padded = req.aligned16 && !v->aligned16;
        plan->tiles.paged = (int)d->page_size;
        plan->tiles.seqlens = d->kv_seqlens != 0;
        plan->tiles.packed = plan->pack > 1;
        plan->tiles.varlen_q = d->total_q > 0;
        plan->tiles.varlen_k = d->total_k > 0;
        plan->tiles.append_rows = (int)d->seqlen_new;
        plan->tiles.softcap = d->softcap > 0;
        plan->tiles.alibi = d->alibi;
        plan->tiles.sinks = d->sinks;
        plan->tiles.mask = (int)d->mask;
        for (int i = 0; i < 4; i++)
            plan->tiles.types[i] = v->type[i] != (int)d->dtype ? v->type[i] + 1 : 0;
        plan->tiles.mask_pairs = d->mask &&
                                 (plan->tiles.variant == FA_CL_KERNEL_NVIDIA_MMA ||
                                  plan->tiles.variant == FA_CL_KERNEL_NVIDIA_WGMMA) && d->mask_offset % 2 == 0 &&
                                 d->mask_stride[0] % 2 == 0 && d->mask_stride[1] % 2 == 0 && d->mask_stride[2] % 2 == 0;
        if ((st = choose_splits(ctx, plan)) != FA_CL_SUCCESS)
            return st;
        plan_tma(ctx, plan);
        plan_persistent(ctx, plan);
        const int wide_kv = plan->tiles.block_kv & (plan->tiles.block_kv - 1);
        const int tall_q = plan->tiles.block_q == FA_CL_WGMMA_TALL_Q;
        if (plan->tiles.producer && (plan->tiles.head_dim_padded > 128 || wide_kv || tall_q) && !plan->tiles.kv_tma &&
            lim.wg_tma_tiles) {
            /* nvidia-wgmma's tiles that only copies by TMA feed (nvidia_wgmma.c): at d_pad 256 the
             * producer's 24 registers issue bulk tensor copies, not cp.async's addresses */
            lim.wg_tma_tiles = 0;
            attempt--;
            continue;
        }
        st = build_kernel(ctx, v, &plan->tiles, &plan->kernel);
        const int vendor = fa_cl_kernel_by_id(plan->tiles.variant)->vendor;
        if (st != FA_CL_SUCCESS && plan->tiles.variant == FA_CL_KERNEL_NVIDIA_WGMMA && !lim.forced_variant) {
            /* the sm_90a build failed (a driver whose PTX the retargeting does not know): nvidia-mma */
            if (fa_cl__first_failure(ctx, &ctx->wgmma_failed))
                fa_cl__note(ctx, "Hopper kernel (nvidia-wgmma): its sm_90a build failed on this driver, nvidia-mma "
                                 "planned instead (the reason is in fa_cl_last_error)");
            lim.nv_wgmma = 0;
            attempt--;
            continue;
        }
        if (st != FA_CL_SUCCESS && vendor && !lim.forced_variant && !plan->tiles.ptx_emulated) {
            /* the vendor kernel did not compile on this driver: portable kernels from now on (the
             * emulated build is portable code under test: its failure is reported, not hidden) */
            if (fa_cl__first_failure(ctx, &ctx->mma_failed))
                fa_cl__note(ctx, "tensor-core kernel (%s): did not build on this driver, portable kernels "
                                 "planned instead (the build log is in fa_cl_last_error)", plan->tiles.kernel);
            lim.nv_mma = 0;
            attempt--;
            continue;
        }
        if (st != FA_CL_SUCCESS)
            return st;
        size_t kwg = 0;
        cl_ulong klocal = 0;
        cl_int err = clGetKernelWorkGroupInfo(plan->kernel, ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kwg, &kwg,
                                              NULL);
        if (err == CL_SUCCESS)
            err = clGetKernelWorkGroupInfo(plan->kernel, ctx->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof klocal,
                                           &klocal, NULL);
        if (err != CL_SUCCESS) {
            fa_cl__kernel_give(ctx, plan->kernel);
            plan->kernel = NULL;
            return fa_cl__fail_cl(ctx, err, "clGetKernelWorkGroupInfo");
        }
        if (ctx->env.print_build_log)
            fprintf(stderr, "fa_cl: %s: CL_KERNEL_WORK_GROUP_SIZE %zu (planned %d), CL_KERNEL_LOCAL_MEM_SIZE %llu\n",
                    plan->tiles.kernel, kwg, plan->tiles.work_group_size, (unsigned long long)klocal);
        int wg_ok = (size_t)plan->tiles.work_group_size <= kwg;
        if (!wg_ok && plan->tiles.producer) {
            /* nvidia-wgmma's producer warpgroup gives its registers to the computing ones
             * (setmaxnreg): the driver may count the latter's for every work-item. The entry's
             * .maxnreg is what the launch needs; the size the kernel was compiled for decides. */
            size_t cwg[3] = {0, 0, 0};
            wg_ok = clGetKernelWorkGroupInfo(plan->kernel, ctx->device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof cwg,
                                             cwg, NULL) == CL_SUCCESS &&
                    cwg[0] == (size_t)plan->tiles.work_group_size;
        }
        int local_ok = klocal <= lim.local_mem_size || ctx->props.local_mem_is_global;
        if (wg_ok && local_ok) {
            /* the vendor kernels' local arrays depend on alignment (double-buffered copies): report what they use */
            if (vendor)
                plan->tiles.local_mem_bytes = (size_t)klocal;
            return FA_CL_SUCCESS;
        }
        fa_cl__kernel_give(ctx, plan->kernel);
        plan->kernel = NULL;
        if (plan->tiles.forced)
            return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT,
                               "FA_CL_TILE=%dx%d: the compiled kernel allows %zu work-items and uses %llu bytes of "
                               "local memory (device: %zu work-items, %llu bytes)",
                               plan->tiles.block_q, plan->tiles.block_kv, kwg, (unsigned long long)klocal,
                               (size_t)plan->tiles.work_group_size, (unsigned long long)lim.local_mem_size);
        if (!wg_ok)
            lim.max_work_group = kwg;
        if (!local_ok)
            lim.kernel_other_local += (size_t)(klocal - plan->tiles.local_mem_bytes);
    }
    return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED,
                       "fa_cl_plan_create: no tile fits what the compiled kernel reports for head_dim %lld",
                       (long long)d->head_dim);
}

/* The serving arguments of a FA_SERVING build (cl/fa_forward_common.cl's FA_SERVING_PARAMS), from
 * argument *n on. NULL buffers for the features a plan does not use: the kernel never reads them. */
static cl_int serving_args(const fa_cl_plan *plan, cl_kernel kr, const fa_cl_forward_args *a, cl_uint *n)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    const int split = plan->splits > 1;
    const int64_t part_row = d->heads_q * d->seqlen_q * d->head_dim;
    cl_mem mems[2] = {d->kv_seqlens ? a->cache_seqlens : NULL, d->page_size > 0 ? a->block_table : NULL};
    cl_int ints[5] = {(cl_int)d->page_size, (cl_int)d->pages_per_seq, d->page_size > 0 ? (cl_int)d->num_pages : 1,
                      plan->pack, plan->splits};
    cl_ulong split_stride = split ? (cl_ulong)d->batch * (cl_ulong)part_row : 0;
    cl_mem cu[2] = {d->total_q > 0 ? a->cu_seqlens_q : NULL, d->total_k > 0 ? a->cu_seqlens_k : NULL};
    cl_int totals[2] = {(cl_int)d->total_q, (cl_int)d->total_k};
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_ulong), &split_stride);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_mem), &cu[i]);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, (*n)++, sizeof(cl_int), &totals[i]);
    return err;
}

/* Causal plans visit the longest query blocks first (FlashAttention-3's LPT order; the kernels'
 * FA_BLOCK_COORDS): the last block of each head column of a section, then the one before, ..., so
 * that the grid ends with short blocks instead of one column's long block. A section is about a
 * wave of work-groups, one a compute unit: the blocks running together still read the K/V of
 * about as many columns as each column's blocks in turn would (1, the order before). H200, causal
 * f16 (session 22 call 3): 4 columns of 32 blocks against 1: d = 128 546.0 / 536.1 against
 * 535.0 / 532.9 TFLOP/s, d = 256 603.4 / 603.7 against 591.6 / 586.9; d = 64 8 of 22 364.7 / 362.0
 * against 352.7 / 348.3; 16 or 32 columns at once were no better, all 128 at d = 128 462. Call 4,
 * as planned against 1: d = 128 553.4 / 544.9 against 544.4 / 536.7, d = 256 614.7 / 613.0
 * against 599.8 / 602.0, B=2 N=8192 609.2 against 582.1; d = 64 (6 columns) 347.6 / 352.5
 * against 350.1 / 348.5. FA_CL_LPT_COLUMNS=n sets it (tests, experiments). */
static int lpt_columns(const fa_cl_context *ctx, const fa_cl_plan *plan, uint64_t columns)
{
    if (!plan->views.d.causal)
        return 0;
    uint64_t n = ctx->env.lpt_columns > 0 ? (uint64_t)ctx->env.lpt_columns
                                          : (uint64_t)ctx->props.compute_units / (uint64_t)plan->num_q_blocks;
    n = n < 1 ? 1 : n > columns ? columns : n;
    return (int)(n < INT32_MAX ? n : INT32_MAX);
}

/* Every argument of fa_forward for one launch, in FA_FORWARD_PARAMS order. A split plan's forward
 * writes its partial results (fp32, contiguous [splits, B, Hq, Sq, D] and [splits, B, Hq, Sq]) with
 * the LSE always on. */
static fa_cl_status forward_args(const fa_cl_plan *plan, const fa_cl_launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_views *v = &plan->views;
    const fa_cl_attention_desc *d = &v->d;
    cl_kernel kr = l->kernel;
    const int split = plan->splits > 1;
    const int64_t part_os[3] = {d->heads_q * d->seqlen_q * d->head_dim, d->seqlen_q * d->head_dim, d->head_dim};
    cl_ulong offs[4] = {d->q_offset, d->k_offset, d->v_offset, split ? 0 : d->o_offset};
    const int64_t *strides[4] = {d->q_stride, d->k_stride, d->v_stride, split ? part_os : d->o_stride};
    /* padded rows: q, k, v are the plan's contiguous copies (pad_args) */
    const int64_t dp = (d->head_dim + 7) / 8 * 8;
    const int64_t pad_qs[3] = {d->heads_q * d->seqlen_q * dp, d->seqlen_q * dp, dp};
    const int64_t pad_ks[3] = {d->heads_kv * d->seqlen_k * dp, d->seqlen_k * dp, dp};
    if (plan->tiles.rows_padded) {
        offs[0] = offs[1] = offs[2] = 0;
        strides[0] = pad_qs;
        strides[1] = strides[2] = pad_ks;
    }
    cl_int ints[5] = {(cl_int)d->heads_q, (cl_int)v->group, (cl_int)d->seqlen_q, (cl_int)d->seqlen_k,
                      plan->num_q_blocks};
    cl_int window[4] = {(cl_int)v->win_left, (cl_int)v->win_right, plan->lpt_columns, split || a->lse != NULL};
    cl_int chunk[2] = {l->kv_begin, l->kv_end};
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    cl_mem mems[5] = {a->q, a->k, a->v, split ? plan->part_o : a->o, split ? plan->part_lse : a->lse};
    if (plan->tiles.rows_padded)
        mems[0] = plan->padded[0], mems[1] = plan->padded[1], mems[2] = plan->padded[2];
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &offs[i]);
    for (int t = 0; t < 4 && err == CL_SUCCESS; t++)
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long st = strides[t][i];
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &st);
        }
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_float), &v->scale_log2);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &window[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_float), &v->scale);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &plan->scratch);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &chunk[i]);
    const int serving = fa_cl_tiles_serving(&plan->tiles), mods = fa_cl_tiles_mods(&plan->tiles);
    const cl_uint want = FA_CL_FORWARD_ARGS + (serving ? FA_CL_SERVING_ARGS : 0) + (mods ? FA_CL_MODS_ARGS : 0) +
                         (plan->tiles.mask ? FA_CL_MASK_ARGS : 0) + (plan->tiles.persistent ? 1 : 0);
    if (err == CL_SUCCESS && serving)
        err = serving_args(plan, kr, a, &n);
    if (err == CL_SUCCESS && mods) {
        /* softcap in the kernels' raw scores (q.k): s_raw <- (c / scale) tanh(s_raw scale / c) */
        const cl_float cap = d->softcap, cap_in = cap > 0 ? v->scale / cap : 0.0f, cap_out = cap > 0 ? cap / v->scale : 0.0f;
        cl_mem heads[2] = {d->alibi ? a->alibi_slopes : NULL, d->sinks ? a->sinks : NULL};
        err = clSetKernelArg(kr, n++, sizeof(cl_float), &cap_in);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_float), &cap_out);
        for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
            err = clSetKernelArg(kr, n++, sizeof(cl_mem), &heads[i]);
    }
    if (err == CL_SUCCESS && plan->tiles.mask) {
        const cl_ulong moff = d->mask_offset;
        const cl_float inv_scale = 1.0f / v->scale; /* finite: fa_cl__desc_resolve */
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &a->mask);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &moff);
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long st = d->mask_stride[i];
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &st);
        }
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, n++, sizeof(cl_float), &inv_scale);
    }
    if (err == CL_SUCCESS && plan->tiles.persistent) { /* FA_PERSISTENT_PARAMS: the tiles */
        const cl_ulong tiles = (cl_ulong)plan->num_q_blocks * (cl_ulong)d->batch * (cl_ulong)(d->heads_q / plan->pack);
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &tiles);
    }
    if (err != CL_SUCCESS)
        return fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_forward)");
    if (n != want)
        return fa_cl__fail(plan->ctx, FA_CL_ERROR_INVALID_ARGUMENT, "internal: %u of %u arguments set", n, want);
    return FA_CL_SUCCESS;
}

/* Arguments of fa_pad_rows (cl/fa_pad_rows.cl): one of q, k, v into its zero-padded copy. */
static fa_cl_status pad_args(const fa_cl_plan *plan, const fa_cl_launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    const int t = l->tensor;
    cl_mem mems[2] = {t == 0 ? a->q : t == 1 ? a->k : a->v, plan->padded[t]};
    const cl_ulong off = t == 0 ? d->q_offset : t == 1 ? d->k_offset : d->v_offset;
    const int64_t *st = t == 0 ? d->q_stride : t == 1 ? d->k_stride : d->v_stride;
    const cl_int dims[2] = {(cl_int)(t == 0 ? d->heads_q : d->heads_kv), (cl_int)(t == 0 ? d->seqlen_q : d->seqlen_k)};
    const cl_ulong rows = (cl_ulong)d->batch * (cl_ulong)dims[0] * (cl_ulong)dims[1];
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_mem), &mems[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &off);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        cl_long s = st[i];
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_long), &s);
    }
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_int), &dims[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &rows);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_pad_rows)");
}

/* Arguments of fa_append (cl/fa_append.cl): the new rows into the caller's cache. */
static fa_cl_status append_args(const fa_cl_plan *plan, const fa_cl_launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    cl_kernel kr = l->kernel;
    cl_mem mems[4] = {a->k_new, a->v_new, a->k, a->v};
    cl_ulong offs[2] = {d->k_offset, d->v_offset};
    const int64_t *st[2] = {d->k_stride, d->v_stride};
    cl_mem tables[2] = {a->cache_seqlens, d->page_size > 0 ? a->block_table : NULL};
    cl_int ints[6] = {(cl_int)d->pages_per_seq, (cl_int)d->page_size, d->page_size > 0 ? (cl_int)d->num_pages : 1,
                      (cl_int)d->seqlen_k, (cl_int)d->heads_kv, (cl_int)d->seqlen_new};
    cl_ulong rows = (cl_ulong)d->batch * (cl_ulong)d->seqlen_new * (cl_ulong)d->heads_kv;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &mems[i]);
    for (int t = 0; t < 2 && err == CL_SUCCESS; t++) {
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &offs[t]);
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long s = st[t][i];
            err = clSetKernelArg(kr, n++, sizeof(cl_long), &s);
        }
    }
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &tables[i]);
    for (int i = 0; i < 6 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &rows);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_append)");
}

/* Arguments of fa_tma_maps (cl/fa_forward_nv_mma.cl): the tensor maps into the scratch. */
static fa_cl_status tma_maps_args(const fa_cl_plan *plan, const fa_cl_launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    cl_mem mems[4] = {plan->scratch, a->q, a->k, a->v};
    const cl_ulong offs[3] = {d->q_offset, d->k_offset, d->v_offset};
    const int64_t *strides[3] = {d->q_stride, d->k_stride, d->v_stride};
    const cl_int ints[5] = {(cl_int)d->batch, (cl_int)d->heads_q, (cl_int)d->heads_kv, (cl_int)d->seqlen_q,
                            (cl_int)d->seqlen_k};
    cl_mem mask = d->mask ? a->mask : NULL;
    const cl_ulong moff = d->mask_offset;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_mem), &mems[i]);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &offs[i]);
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
            cl_long s = strides[t][i];
            err = clSetKernelArg(l->kernel, n++, sizeof(cl_long), &s);
        }
    for (int i = 0; i < 5 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_mem), &mask);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_ulong), &moff);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++) {
        cl_long s = d->mask ? d->mask_stride[i] : 0;
        err = clSetKernelArg(l->kernel, n++, sizeof(cl_long), &s);
    }
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_tma_maps)");
}

/* Arguments of fa_combine (cl/fa_combine.cl): the partial results into the caller's o and LSE. */
static fa_cl_status combine_args(const fa_cl_plan *plan, const fa_cl_launch *l, const fa_cl_forward_args *a)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    cl_kernel kr = l->kernel;
    cl_mem mems[4] = {plan->part_o, plan->part_lse, a->o, a->lse};
    cl_ulong o_off = d->o_offset;
    cl_long os[3] = {d->o_stride[0], d->o_stride[1], d->o_stride[2]};
    cl_int ints[4] = {(cl_int)d->heads_q, (cl_int)d->seqlen_q, plan->splits, a->lse != NULL};
    cl_ulong rows = (cl_ulong)d->batch * (cl_ulong)d->heads_q * (cl_ulong)d->seqlen_q;
    cl_uint n = 0;
    cl_int err = CL_SUCCESS;
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &mems[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &o_off);
    for (int i = 0; i < 3 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_long), &os[i]);
    for (int i = 0; i < 4 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &ints[i]);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_ulong), &rows);
    cl_mem cu = d->total_q > 0 ? a->cu_seqlens_q : NULL;
    cl_int total_q = (cl_int)d->total_q;
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &cu);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_int), &total_q);
    cl_mem sinks = d->sinks ? a->sinks : NULL; /* a split plan's sinks join the rows here, once */
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kr, n++, sizeof(cl_mem), &sinks);
    return err == CL_SUCCESS ? FA_CL_SUCCESS : fa_cl__fail_cl(plan->ctx, err, "clSetKernelArg(fa_combine)");
}

static fa_cl_status scratch_alloc(fa_cl_context *ctx, size_t bytes, cl_mem *out, const char *what)
{
    cl_int err;
    *out = clCreateBuffer(ctx->cl_ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    return *out ? FA_CL_SUCCESS : fa_cl__fail_cl(ctx, err, what);
}

/* The launches and scratch of a planned forward: one launch; or one per chunk of keys of a long
 * row, which leave the next a (max, compensated sum) slot per work-item row and an fp32 image of o
 * as compensated sums (f32 keeps the sums in o: cl/fa_forward_common.cl); or (split-KV) one launch
 * over all chunks in dimension 1 writing partial results, then the combine. */
static fa_cl_status make_launches(fa_cl_context *ctx, fa_cl_plan *plan)
{
    const fa_cl_attention_desc *d = &plan->views.d;
    const fa_cl_tiles *t = &plan->tiles;
    plan->num_q_blocks = (int)((plan->pack * d->seqlen_q + t->block_q - 1) / t->block_q);
    plan->splits = t->splits > 1 ? t->splits : 1;
    /* one work-group per (query block, batch * head column), flattened into dimension 0 */
    uint64_t groups = (uint64_t)plan->num_q_blocks * (uint64_t)d->batch * (uint64_t)(d->heads_q / plan->pack);
    if (groups > (uint64_t)SIZE_MAX / (uint64_t)t->work_group_size || groups > ((uint64_t)1 << 40))
        return fa_cl__fail(ctx, FA_CL_ERROR_UNSUPPORTED, "fa_cl_plan_create: %llu work-groups is too many to launch",
                           (unsigned long long)groups);
    /* persistent: a work-group a compute unit (FA_CL_PERSISTENT=n: n), at most one a tile */
    const uint64_t cus = ctx->env.persistent_groups > 0   ? (uint64_t)ctx->env.persistent_groups
                         : ctx->props.compute_units > 0 ? ctx->props.compute_units
                                                        : 1;
    const uint64_t launched = t->persistent && groups > cus ? cus : groups;
    const size_t global = (size_t)launched * (size_t)t->work_group_size;
    plan->lpt_columns = lpt_columns(ctx, plan, groups / (uint64_t)plan->num_q_blocks);
    const int64_t step = t->chunk_keys > 0 ? t->chunk_keys : d->seqlen_k;
    const int forwards = (int)((d->seqlen_k + step - 1) / step);
    /* an appending plan writes the new keys first; a padded one copies q, k, v first; then, with
     * copies by TMA, the tensor maps are written */
    const int tma = t->mask_tma || t->kv_tma;
    const int pre = plan->append != NULL ? 1 : t->rows_padded ? 3 : 0, first = pre + tma;
    plan->nlaunches = first + forwards + (plan->splits > 1);
    plan->launches = (fa_cl_launch *)calloc((size_t)plan->nlaunches, sizeof *plan->launches);
    if (!plan->launches)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_plan_create: out of host memory");
    if (t->rows_padded) {
        const int64_t dp = (d->head_dim + 7) / 8 * 8;
        for (int i = 0; i < 3; i++) {
            fa_cl_launch *l = &plan->launches[i];
            const size_t rows = (size_t)d->batch * (size_t)(i ? d->heads_kv * d->seqlen_k : d->heads_q * d->seqlen_q);
            const size_t items = rows * (size_t)(dp / 8); /* cl/fa_pad_rows.cl: 8 elements each */
            l->kernel = plan->pad;
            l->global[0] = (items + FA_CL_PAD_ROWS_WG - 1) / FA_CL_PAD_ROWS_WG * FA_CL_PAD_ROWS_WG;
            l->global[1] = 1;
            l->local = FA_CL_PAD_ROWS_WG;
            l->tensor = i;
            l->set_args = pad_args;
            const fa_cl_status st = scratch_alloc(ctx, rows * (size_t)dp * 2, &plan->padded[i],
                                                  "fa_cl_plan_create: clCreateBuffer (padded q/k/v rows)");
            if (st != FA_CL_SUCCESS)
                return st;
            plan->pad_bytes += rows * (size_t)dp * 2;
        }
    } else if (pre) {
        fa_cl_launch *l = &plan->launches[0];
        const size_t items = (size_t)d->batch * (size_t)d->seqlen_new * (size_t)d->heads_kv *
                             (size_t)((d->head_dim + 3) / 4); /* cl/fa_append.cl's D4 */
        l->kernel = plan->append;
        l->global[0] = (items + FA_CL_APPEND_WG - 1) / FA_CL_APPEND_WG * FA_CL_APPEND_WG;
        l->global[1] = 1;
        l->local = FA_CL_APPEND_WG;
        l->set_args = append_args;
    }
    fa_cl_status st = FA_CL_SUCCESS;
    if (tma) {
        fa_cl_launch *l = &plan->launches[pre];
        l->kernel = plan->tma_maps;
        l->global[0] = l->global[1] = l->local = 1;
        l->set_args = tma_maps_args;
        const size_t bytes = FA_CL_TMA_MAPS * FA_CL_TMA_MAP_BYTES + (t->persistent ? FA_CL_TILE_COUNTER_BYTES : 0);
        st = scratch_alloc(ctx, bytes, &plan->scratch,
                           "fa_cl_plan_create: clCreateBuffer (tensor maps)");
        if (st != FA_CL_SUCCESS)
            return st;
        plan->scratch_bytes = bytes; /* plan_tma: no chunks */
    }
    for (int c = 0; c < forwards; c++) {
        fa_cl_launch *l = &plan->launches[first + c];
        l->kernel = plan->kernel;
        l->global[0] = global;
        l->global[1] = (size_t)plan->splits;
        l->local = (size_t)t->work_group_size;
        l->kv_begin = (int)(c * step);
        l->kv_end = (int)((c + 1) * step < d->seqlen_k ? (c + 1) * step : d->seqlen_k);
        l->set_args = forward_args;
    }
    if (plan->splits > 1) {
        const size_t rows = (size_t)d->batch * (size_t)d->heads_q * (size_t)d->seqlen_q;
        const size_t items = rows * (size_t)((d->head_dim + 3) / 4); /* cl/fa_combine.cl's D4 */
        fa_cl_launch *l = &plan->launches[first + forwards];
        l->kernel = plan->combine;
        l->global[0] = (items + FA_CL_COMBINE_WG - 1) / FA_CL_COMBINE_WG * FA_CL_COMBINE_WG;
        l->global[1] = 1;
        l->local = FA_CL_COMBINE_WG;
        l->set_args = combine_args;
        const size_t o_bytes = (size_t)plan->splits * rows * (size_t)d->head_dim * sizeof(float);
        const size_t lse_bytes = (size_t)plan->splits * rows * sizeof(float);
        st = scratch_alloc(ctx, o_bytes, &plan->part_o, "fa_cl_plan_create: clCreateBuffer (split-KV partial O)");
        if (st == FA_CL_SUCCESS)
            st = scratch_alloc(ctx, lse_bytes, &plan->part_lse,
                               "fa_cl_plan_create: clCreateBuffer (split-KV partial LSE)");
        plan->scratch_bytes += o_bytes + lse_bytes;
    }
    if (t->chunk_keys > 0 && st == FA_CL_SUCCESS) {
        const int item_rows = fa_cl_kernel_by_id(t->variant)->vendor
                                  ? t->rows_per_item / 8 /* a lane holds 2 rows of each 16-row m-tile */
                                  : t->rows_per_item;
        /* a slot (m, l, l's compensation, -) per work-item row, then per element of o its sum's
         * compensation, and (not f32: o itself holds an f32 o's sums) the sum */
        plan->scratch_bytes = 4 * sizeof(float) * global * (size_t)item_rows;
        plan->scratch_bytes += (plan->views.type[3] != FA_CL_TYPE_F32 ? 2 : 1) * sizeof(float) * (size_t)d->batch *
                               (size_t)d->heads_q * (size_t)d->seqlen_q * (size_t)d->head_dim;
        st = scratch_alloc(ctx, plan->scratch_bytes, &plan->scratch,
                           "fa_cl_plan_create: clCreateBuffer (long rows' chunks)");
    }
    plan->scratch_bytes += plan->pad_bytes;
    return st;
}

static void plan_free(fa_cl_plan *plan)
{
    fa_cl__kernel_give(plan->ctx, plan->kernel);
    fa_cl__kernel_give(plan->ctx, plan->combine);
    fa_cl__kernel_give(plan->ctx, plan->append);
    fa_cl__kernel_give(plan->ctx, plan->pad);
    fa_cl__kernel_give(plan->ctx, plan->tma_maps);
    cl_mem mems[6] = {plan->scratch, plan->part_o, plan->part_lse, plan->padded[0], plan->padded[1], plan->padded[2]};
    for (int i = 0; i < 6; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    if (plan->last)
        clReleaseEvent(plan->last);
    free(plan->launches);
    fa_cl_lock_destroy(&plan->lock);
    free(plan);
}

/* GQA packing: where seqlen_q is small (below the tensor-core kernels' 64-row block), one
 * work-group takes every query head of a kv head, so K/V are read once per kv head
 * (FA_CL_GQA_PACK=0 never, =1 wherever heads share a kv head). */
static int gqa_pack(const fa_cl_context *ctx, const fa_cl_views *v)
{
    return fa_cl_gqa_pack(v->group, v->d.seqlen_q, ctx->env.gqa_pack);
}

fa_cl_status fa_cl__plan_make(fa_cl_context *ctx, const fa_cl_views *views, fa_cl_plan **out)
{
    *out = NULL;
    fa_cl_plan *plan = (fa_cl_plan *)calloc(1, sizeof *plan);
    if (!plan)
        return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "fa_cl_plan_create: out of host memory");
    plan->ctx = ctx;
    plan->views = *views;
    plan->refs = 1;
    plan->pack = gqa_pack(ctx, views);
    fa_cl_lock_init(&plan->lock);
    fa_cl_status st = plan_tiles_and_kernel(ctx, plan);
    if (st == FA_CL_SUCCESS && plan->tiles.splits > 1) {
        fa_cl_tiles ct = plan->tiles;
        ct.variant = FA_CL_KERNEL_COMBINE;
        st = build_kernel(ctx, views, &ct, &plan->combine);
    }
    if (st == FA_CL_SUCCESS && plan->tiles.rows_padded) {
        fa_cl_tiles pt = plan->tiles;
        pt.variant = FA_CL_KERNEL_PAD_ROWS;
        st = build_kernel(ctx, views, &pt, &plan->pad);
    }
    if (st == FA_CL_SUCCESS && (plan->tiles.mask_tma || plan->tiles.kv_tma))
        st = build_kernel_entry(ctx, views, &plan->tiles, "fa_tma_maps", &plan->tma_maps);
    if (st == FA_CL_SUCCESS && views->d.seqlen_new > 0) {
        fa_cl_tiles at = plan->tiles;
        at.variant = FA_CL_KERNEL_APPEND;
        st = build_kernel(ctx, views, &at, &plan->append);
    }
    if (st == FA_CL_SUCCESS)
        st = make_launches(ctx, plan);
    if (st != FA_CL_SUCCESS) {
        plan_free(plan);
        return st;
    }
    *out = plan;
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl_plan_create(fa_cl_context *ctx, const fa_cl_attention_desc *desc, fa_cl_plan **out)
{
    if (!out)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_create: out is NULL");
    *out = NULL;
    fa_cl_views views;
    fa_cl_status st = fa_cl__resolve_call(ctx, "fa_cl_plan_create", desc, &views);
    return st == FA_CL_SUCCESS ? fa_cl__plan_make(ctx, &views, out) : st;
}

fa_cl_status fa_cl_plan_get_info_sized(const fa_cl_plan *plan, fa_cl_plan_info *out, size_t struct_size)
{
    if (!plan || !out)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_get_info: %s is NULL",
                           !plan ? "plan" : "out");
    if (struct_size < offsetof(fa_cl_plan_info, launches))
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT,
                           "fa_cl_plan_get_info: struct_size %zu is smaller than the first version's %zu bytes",
                           struct_size, offsetof(fa_cl_plan_info, launches));
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    info.block_q = plan->tiles.block_q;
    info.block_kv = plan->tiles.block_kv;
    info.work_group_size = plan->tiles.work_group_size;
    info.head_dim_padded = plan->tiles.head_dim_padded;
    info.local_mem_bytes = plan->tiles.local_mem_bytes;
    info.local_mem_budget = plan->tiles.local_mem_budget;
    info.kernel = plan->tiles.kernel;
    info.launches = plan->nlaunches;
    info.scratch_bytes = plan->scratch_bytes;
    info.splits = plan->splits;
    info.gqa_pack = plan->pack;
    /* a caller's newer, larger struct keeps its later fields as they were; an older one gets less */
    info.struct_size = struct_size < sizeof info ? struct_size : sizeof info;
    memcpy(out, &info, info.struct_size);
    return FA_CL_SUCCESS;
}

fa_cl_status fa_cl__forward_args_check(fa_cl_context *ctx, const char *call, const fa_cl_views *views,
                                       const fa_cl_forward_args *given, fa_cl_forward_args *out)
{
    if (!given)
        return fa_cl__fail(ctx, FA_CL_ERROR_INVALID_ARGUMENT, "%s: args is NULL", call);
    char msg[300];
    fa_cl_status st = fa_cl__struct_copy(given, given->struct_size, out, sizeof *out, sizeof *out, "args", msg,
                                         sizeof msg);
    if (st != FA_CL_SUCCESS)
        return fa_cl__fail(ctx, st, "%s: %s", call, msg);
    st = fa_cl__check_buffers(ctx, views, out->q, out->k, out->v, out->o, out->lse);
    if (st == FA_CL_SUCCESS)
        st = fa_cl__check_serving_buffers(ctx, views, out);
    return st == FA_CL_SUCCESS ? fa_cl__check_wait_list(ctx, out->num_wait, out->wait) : st;
}

fa_cl_status fa_cl__enqueue_chain(fa_cl_context *ctx, fa_cl_lock *lock, int count, fa_cl_chain_fn prepare,
                                  void *data, cl_uint num_wait, const cl_event *wait, cl_event *done,
                                  cl_event *serial)
{
    fa_cl_status st = FA_CL_SUCCESS;
    fa_cl_lock_acquire(lock);
    /* the first launch's wait list: the caller's, and the previous call's last launch */
    cl_event few[8], *first_wait = (cl_event *)wait;
    cl_uint first_num = num_wait;
    if (serial && *serial) {
        first_wait = num_wait < 8 ? few : (cl_event *)malloc(((size_t)num_wait + 1) * sizeof *first_wait);
        if (!first_wait) {
            fa_cl_lock_release(lock);
            return fa_cl__fail(ctx, FA_CL_ERROR_OUT_OF_MEMORY, "enqueue: out of host memory");
        }
        for (cl_uint i = 0; i < num_wait; i++)
            first_wait[i] = wait[i];
        first_wait[first_num++] = *serial;
    }
    /* launches run in order, each after the previous one (also on an out-of-order queue) */
    cl_event prev = NULL;
    for (int i = 0; i < count && st == FA_CL_SUCCESS; i++) {
        fa_cl_chain_step s;
        memset(&s, 0, sizeof s);
        cl_event ev = NULL;
        st = prepare(data, i, &s);
        if (st == FA_CL_SUCCESS) {
            cl_int err = clEnqueueNDRangeKernel(ctx->queue, s.kernel, s.dims, NULL, s.global, s.local[0] ? s.local : NULL,
                                                i == 0 ? first_num : 1, i == 0 ? first_wait : &prev,
                                                i == count - 1 && !serial ? done : &ev);
            if (err != CL_SUCCESS) {
                char what[96];
                snprintf(what, sizeof what, "clEnqueueNDRangeKernel(%s)", s.name);
                st = fa_cl__fail_cl(ctx, err, what);
                ev = NULL;
            }
        }
        if (i == count - 1 && ev && serial) { /* the last launch: the next call's first waits for it */
            if (*serial)
                clReleaseEvent(*serial);
            *serial = ev;
            if (done && clRetainEvent(ev) == CL_SUCCESS)
                *done = ev;
            ev = NULL;
        }
        if (prev)
            clReleaseEvent(prev);
        prev = ev;
    }
    if (prev)
        clReleaseEvent(prev);
    if (first_wait != wait && first_wait != few)
        free(first_wait);
    fa_cl_lock_release(lock);
    return st;
}

/* A forward plan's launch i for one call's buffers. */
typedef struct forward_call {
    const fa_cl_plan *plan;
    const fa_cl_forward_args *args;
} forward_call;

static fa_cl_status forward_step(void *data, int i, fa_cl_chain_step *s)
{
    const forward_call *c = (const forward_call *)data;
    const fa_cl_plan *plan = c->plan;
    const fa_cl_launch *l = &plan->launches[i];
    s->kernel = l->kernel;
    s->dims = l->global[1] > 1 ? 2 : 1;
    s->global[0] = l->global[0], s->global[1] = l->global[1];
    s->local[0] = l->local, s->local[1] = 1;
    s->name = l->kernel == plan->combine  ? "fa_combine"
              : l->kernel == plan->append ? "fa_append"
              : l->kernel == plan->pad    ? "fa_pad_rows"
              : l->kernel == plan->tma_maps ? "fa_tma_maps"
                                          : "fa_forward";
    return l->set_args(plan, l, c->args);
}

fa_cl_status fa_cl__plan_enqueue(fa_cl_plan *plan, const fa_cl_forward_args *a)
{
    forward_call c = {plan, a};
    return fa_cl__enqueue_chain(plan->ctx, &plan->lock, plan->nlaunches, forward_step, &c, a->num_wait, a->wait,
                                a->done, plan->scratch_bytes > 0 ? &plan->last : NULL);
}

fa_cl_status fa_cl_plan_run(fa_cl_plan *plan, const fa_cl_forward_args *args)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_run: plan is NULL");
    fa_cl_forward_args a;
    fa_cl_status st = fa_cl__forward_args_check(plan->ctx, "fa_cl_plan_run", &plan->views, args, &a);
    return st == FA_CL_SUCCESS ? fa_cl__plan_enqueue(plan, &a) : st;
}

fa_cl_status fa_cl_plan_forward(fa_cl_plan *plan, cl_mem q, cl_mem k, cl_mem v, cl_mem o, cl_mem lse,
                                cl_uint num_wait, const cl_event *wait, cl_event *done)
{
    if (!plan)
        return fa_cl__fail(NULL, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_plan_forward: plan is NULL");
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = q, a.k = k, a.v = v, a.o = o, a.lse = lse, a.num_wait = num_wait, a.wait = wait, a.done = done;
    return fa_cl_plan_run(plan, &a);
}

void fa_cl__plan_unref(fa_cl_plan *plan)
{
    fa_cl_context *ctx = plan->ctx;
    fa_cl_lock_acquire(&ctx->lock);
    int left = --plan->refs;
    fa_cl_lock_release(&ctx->lock);
    if (left == 0)
        plan_free(plan);
}

void fa_cl_plan_release(fa_cl_plan *plan)
{
    if (plan)
        fa_cl__plan_unref(plan);
}
