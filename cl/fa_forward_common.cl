/* SPDX-License-Identifier: Apache-2.0 */
/* Pieces every forward kernel variant shares (built after fa_common.cl, before the variant's file):
 * the storage types and the kernel's parameter list (one host-side argument setter serves all
 * variants). The rest is in units after it, in this order: the tile a work-group computes
 * (cl/fa_fwd_coords.cl), where rows live (_rows), long rows in chunks (_chunks), masks and
 * modifiers (_masks), and the portable kernels' row loads and stores (_io). */

#ifdef FA_NATIVE_EXP
#define FA_EXP2(x) native_exp2(x)
#else
#define FA_EXP2(x) exp2(x)
#endif

#define FA_PRAGMA(x) _Pragma(#x)
#ifdef FA_UNROLL
#define FA_PRAGMA_UNROLL _Pragma("unroll")
#define FA_PRAGMA_UNROLL_N(n) FA_PRAGMA(unroll n)
#else
#define FA_PRAGMA_UNROLL
#define FA_PRAGMA_UNROLL_N(n)
#endif

/* The value width (include/fa_cl.h "Value width"): v's and o's rows are HEAD_DIM_V elements, q's
 * and k's HEAD_DIM; the planner passes it only where the two differ. DK4 and DV4: float4 chunks of
 * a q/k row and of a v/o row (the portable kernels' tiles hold D_PAD, the wider of the two). */
#ifndef HEAD_DIM_V
#define HEAD_DIM_V HEAD_DIM
#endif
#define DK4 ((HEAD_DIM + 3) / 4)
#define DV4 ((HEAD_DIM_V + 3) / 4)

/* Each tensor's storage type (include/fa_cl.h desc.q_type ... o_type): the descriptor's FA_DTYPE
 * unless the planner says otherwise (the portable kernels; K and V may be q8_0, e4m3 or e5m2). */
#ifndef FA_Q_DTYPE
#define FA_Q_DTYPE FA_DTYPE
#endif
#ifndef FA_K_DTYPE
#define FA_K_DTYPE FA_DTYPE
#endif
#ifndef FA_V_DTYPE
#define FA_V_DTYPE FA_DTYPE
#endif
#ifndef FA_O_DTYPE
#define FA_O_DTYPE FA_DTYPE
#endif
typedef FA_ELEM(FA_Q_DTYPE) fa_q_t;
typedef FA_ELEM(FA_K_DTYPE) fa_k_t;
typedef FA_ELEM(FA_V_DTYPE) fa_v_t;

/* The output's storage: o itself, or (FA_SPLIT) the plan's fp32 scratch of partial results. */
#ifdef FA_SPLIT
typedef float fa_out_t;
#define FA_OUT_DTYPE 0
#else
typedef FA_ELEM(FA_O_DTYPE) fa_out_t;
#define FA_OUT_DTYPE FA_O_DTYPE
#endif

/* The arguments src/plan/plan.c sets (forward_args), in this order. */
#define FA_FORWARD_PARAMS                                                                                 \
    __global const fa_q_t *q, __global const fa_k_t *k, __global const fa_v_t *v,                         \
        __global fa_out_t *o, __global float *lse, ulong q_off, ulong k_off, ulong v_off, ulong o_off,     \
        long qs0, long qs1, long qs2, long ks0, long ks1, long ks2, long vs0, long vs1, long vs2, long os0, \
        long os1, long os2, int heads_q, int group, int seqlen_q_max, int seqlen_k_cap, int num_q_blocks, \
        float scale_log2, int win_left, int win_right, int lpt_columns, int has_lse, float scale,         \
        __global float *scratch, int kv_begin, int kv_end FA_SERVING_PARAMS FA_MODS_PARAMS FA_MASK_PARAMS \
        FA_TREE_PARAMS FA_PERSISTENT_PARAMS FA_DESCALE_PARAMS
/* the same, as the arguments of a helper that takes FA_FORWARD_PARAMS */
#define FA_FORWARD_NAMES                                                                                  \
    q, k, v, o, lse, q_off, k_off, v_off, o_off, qs0, qs1, qs2, ks0, ks1, ks2, vs0, vs1, vs2, os0, os1,   \
        os2, heads_q, group, seqlen_q_max, seqlen_k_cap, num_q_blocks, scale_log2, win_left, win_right,   \
        lpt_columns, has_lse, scale, scratch, kv_begin, kv_end FA_SERVING_NAMES FA_MODS_NAMES              \
        FA_MASK_NAMES FA_TREE_NAMES FA_PERSISTENT_NAMES FA_DESCALE_NAMES

/* The serving arguments exist only in builds with a serving feature (FA_SERVING, set by the planner
 * with any of the options below): elsewhere they are constants, so that other plans keep the
 * argument list and registers they had (Intel's compiler holds kernel arguments in registers). */
#ifdef FA_SERVING
#define FA_SERVING_PARAMS                                                                                 \
    , __global const int *seqlens, __global const int *block_table, int page_size, int pages_per_seq,     \
        int num_pages, int pack, int num_splits, ulong split_stride, __global const int *cu_seqlens_q,    \
        __global const int *cu_seqlens_k, int total_q, int total_k
#define FA_SERVING_NAMES                                                                                  \
    , seqlens, block_table, page_size, pages_per_seq, num_pages, pack, num_splits, split_stride,         \
        cu_seqlens_q, cu_seqlens_k, total_q, total_k
#define FA_SERVING_DEFAULTS
#else
#define FA_SERVING_PARAMS
#define FA_SERVING_NAMES
#define FA_SERVING_DEFAULTS                                                                               \
    const int page_size = 0, pages_per_seq = 0, num_pages = 1, pack = 1, num_splits = 1, total_q = 0,     \
              total_k = 0;                                                                                \
    const ulong split_stride = 0;                                                                         \
    __global const int *const seqlens = 0, *const block_table = 0, *const cu_seqlens_q = 0,              \
                              *const cu_seqlens_k = 0;
#endif

/* The score modifiers' arguments, only in builds with one (FA_MODS: FA_SOFTCAP, FA_ALIBI,
 * FA_SINKS; include/fa_cl.h "Score modifiers"): the softcap's factors in raw-score units, the
 * per-query-head slopes and sink logits, and the ALiBi diagonal's shift (partial results). */
#ifdef FA_MODS
#define FA_MODS_PARAMS                                                                                    \
    , float softcap_in, float softcap_out, __global const float *alibi_slopes, __global const float *sinks, \
        int alibi_shift
#define FA_MODS_UNUSED (void)softcap_in, (void)softcap_out, (void)alibi_slopes, (void)sinks, (void)alibi_shift;
#define FA_MODS_NAMES , softcap_in, softcap_out, alibi_slopes, sinks, alibi_shift
#else
#define FA_MODS_PARAMS
#define FA_MODS_NAMES
#define FA_MODS_UNUSED
#endif

/* The attention mask's arguments, only in builds with one (FA_MASK = the fa_cl_mask_type: 1 f32,
 * 2 f16, 3 boolean uint8, 4 bf16; include/fa_cl.h "Score modifiers"): the buffer, the element
 * offset and strides of [batch, head, row] (0 broadcasts), and 1 / scale (the kernels add mask /
 * scale to raw scores). The entries' type and load: cl/fa_common.cl. */
#ifdef FA_MASK
#define FA_MASK_PARAMS , __global const fa_mask_t *mask, ulong mask_off, long ms0, long ms1, long ms2, float mask_scale
#define FA_MASK_UNUSED (void)mask, (void)mask_off, (void)ms0, (void)ms1, (void)ms2, (void)mask_scale;
#define FA_MASK_NAMES , mask, mask_off, ms0, ms1, ms2, mask_scale
#else
#define FA_MASK_PARAMS
#define FA_MASK_NAMES
#define FA_MASK_UNUSED
#endif

/* The tree mask's arguments, only in builds with one (FA_TREE; include/fa_cl.h "Tree masks"): uint32
 * words, the offset and the strides of [sequence, row] in words. */
#ifdef FA_TREE
#define FA_TREE_PARAMS , __global const uint *tree, ulong tree_off, long ts0, long ts1
#define FA_TREE_UNUSED (void)tree, (void)tree_off, (void)ts0, (void)ts1;
#define FA_TREE_NAMES , tree, tree_off, ts0, ts1
#else
#define FA_TREE_PARAMS
#define FA_TREE_NAMES
#define FA_TREE_UNUSED
#endif

/* The persistent kernel's argument (FA_PERSISTENT, nvidia-wgmma: cl/fa_fwd_coords.cl): the tiles
 * its work-groups take in turn. */
#ifdef FA_PERSISTENT
#define FA_PERSISTENT_PARAMS , ulong total_tiles
#define FA_PERSISTENT_NAMES , total_tiles
#else
#define FA_PERSISTENT_PARAMS
#define FA_PERSISTENT_NAMES
#endif

/* fp8 K/V's descale factors (FA_K_DESCALE / FA_V_DESCALE: include/fa_cl.h "fp8 K/V"), only in
 * builds with one: both buffers, NULL where that tensor has none (cl/fa_fwd_coords.cl reads them). */
#if defined(FA_K_DESCALE) || defined(FA_V_DESCALE)
#define FA_DESCALE_PARAMS , __global const float *k_descale, __global const float *v_descale
#define FA_DESCALE_NAMES , k_descale, v_descale
#else
#define FA_DESCALE_PARAMS
#define FA_DESCALE_NAMES
#endif
