/* SPDX-License-Identifier: Apache-2.0 */
/* Append (FA_CL's flash_attn_with_kvcache): the first launch of a plan with desc.seqlen_new > 0
 * copies each sequence's new key and value rows, k_new / v_new contiguous [B, seqlen_new,
 * heads_kv, head_dim], into the cache at key positions cache_seqlens[b] .. + seqlen_new - 1 (the
 * length clamped into [0, capacity] first), through the block table when the cache is paged. A
 * position at or past the capacity, or in a page whose block-table entry is outside
 * [0, num_pages), is not written (the row is dropped), so nothing outside the cache is and no other
 * sequence's page: the forward that follows attends to min(length + seqlen_new, capacity) keys.
 * A dropped row sets FA_STATUS_DROPPED_ROWS in *status where the call has one (status not NULL).
 *
 * One work-item per 4 elements of one new row of one kv head; defined by the planner: FA_DTYPE,
 * HEAD_DIM, HEAD_DIM_V (v_new's and v's rows), FA_PAGED for a paged cache, FA_STATUS_DROPPED_ROWS
 * (include/fa_cl.h's bit). Elements are copied as bits, or (FA_K_STORE / FA_V_STORE: an fp8 cache,
 * 4 e4m3, 5 e5m2; built after cl/fa_common.cl) stored as the fp8 nearest x / descale
 * (FA_K_DESCALE / FA_V_DESCALE: the fa_cl_descale of that cache; include/fa_cl.h "fp8 K/V"). */
#if FA_DTYPE == 0
typedef uint fa_bits_t;
#else
typedef ushort fa_bits_t;
#endif
/* k's rows are HEAD_DIM wide, v's HEAD_DIM_V (include/fa_cl.h "Value width"): the wider counts */
#define D4 (((HEAD_DIM > HEAD_DIM_V ? HEAD_DIM : HEAD_DIM_V) + 3) / 4)
#define FA_TO_FP8(id) FA_CAT(fa_f32_to_, FA_CAT(FA_SUFFIX_, id))
/* factor f of sequence b, kv head hk (mode 2), or the tensor's (mode 1) */
#define FA_APPEND_FACTOR(f, mode) ((f)[(mode) == 2 ? b * (ulong)heads_kv + (ulong)hk : 0])

/* element e of a new row (src) into cache element at: its bits, or its value rounded to fp8 */
#ifdef FA_K_STORE
typedef uchar fa_kc_t;
#ifdef FA_K_DESCALE
#define FA_K_PUT(at, e) k[at] = (uchar)FA_TO_FP8(FA_K_STORE)(fa_load1((__global const fa_store_t *)k_new, e) / kf)
#else
#define FA_K_PUT(at, e) k[at] = (uchar)FA_TO_FP8(FA_K_STORE)(fa_load1((__global const fa_store_t *)k_new, e))
#endif
#else
typedef fa_bits_t fa_kc_t;
#define FA_K_PUT(at, e) k[at] = k_new[e]
#endif
#ifdef FA_V_STORE
typedef uchar fa_vc_t;
#ifdef FA_V_DESCALE
#define FA_V_PUT(at, e) v[at] = (uchar)FA_TO_FP8(FA_V_STORE)(fa_load1((__global const fa_store_t *)v_new, e) / vf)
#else
#define FA_V_PUT(at, e) v[at] = (uchar)FA_TO_FP8(FA_V_STORE)(fa_load1((__global const fa_store_t *)v_new, e))
#endif
#else
typedef fa_bits_t fa_vc_t;
#define FA_V_PUT(at, e) v[at] = v_new[e]
#endif
#if defined(FA_K_DESCALE) || defined(FA_V_DESCALE)
#define FA_APPEND_DESCALE_PARAMS , __global const float *k_descale, __global const float *v_descale
#else
#define FA_APPEND_DESCALE_PARAMS
#endif

__kernel void fa_append(__global const fa_bits_t *k_new, __global const fa_bits_t *v_new, __global fa_kc_t *k,
                        __global fa_vc_t *v, ulong k_off, long ks0, long ks1, long ks2, ulong v_off, long vs0,
                        long vs1, long vs2, __global const int *seqlens, __global const int *block_table,
                        int pages_per_seq, int page_size, int num_pages, int capacity, int heads_kv, int seqlen_new,
                        ulong rows, __global uint *status FA_APPEND_DESCALE_PARAMS)
{
    const ulong gid = get_global_id(0);
    if (gid >= rows * D4)
        return;
    const ulong r = gid / D4; /* [B, seqlen_new, heads_kv] rows */
    const int c = (int)(gid % D4);
    const int hk = (int)(r % (ulong)heads_kv);
    const int i = (int)((r / (ulong)heads_kv) % (ulong)seqlen_new);
    const ulong b = r / ((ulong)heads_kv * (ulong)seqlen_new);
    const int pos = clamp(seqlens[b], 0, capacity) + i;
#ifdef FA_PAGED
    /* a write through a bad entry would land in another sequence's page: dropped instead */
    const int page = pos < capacity ? block_table[b * (ulong)pages_per_seq + (ulong)(pos / page_size)] : 0;
    const int dropped = pos >= capacity || page < 0 || page >= num_pages;
#else
    const int dropped = pos >= capacity;
#endif
    if (dropped) {
        if (status && c == 0)
            atomic_or(status, FA_STATUS_DROPPED_ROWS);
        return;
    }
#ifdef FA_PAGED
    const ulong kr = k_off + (ulong)page * (ulong)ks0 + (ulong)hk * (ulong)ks1 + (ulong)(pos % page_size) * (ulong)ks2;
    const ulong vr = v_off + (ulong)page * (ulong)vs0 + (ulong)hk * (ulong)vs1 + (ulong)(pos % page_size) * (ulong)vs2;
#else
    (void)block_table, (void)pages_per_seq, (void)page_size, (void)num_pages;
    const ulong kr = k_off + b * (ulong)ks0 + (ulong)hk * (ulong)ks1 + (ulong)pos * (ulong)ks2;
    const ulong vr = v_off + b * (ulong)vs0 + (ulong)hk * (ulong)vs1 + (ulong)pos * (ulong)vs2;
#endif
#ifdef FA_K_DESCALE
    const float kf = FA_APPEND_FACTOR(k_descale, FA_K_DESCALE);
#endif
#ifdef FA_V_DESCALE
    const float vf = FA_APPEND_FACTOR(v_descale, FA_V_DESCALE);
#endif
    for (int e = 4 * c; e < 4 * c + 4 && e < HEAD_DIM; e++)
        FA_K_PUT(kr + (ulong)e, r * HEAD_DIM + (ulong)e);
    for (int e = 4 * c; e < 4 * c + 4 && e < HEAD_DIM_V; e++)
        FA_V_PUT(vr + (ulong)e, r * HEAD_DIM_V + (ulong)e);
}
