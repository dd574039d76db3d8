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
 * HEAD_DIM, HEAD_DIM_V (v_new's and v's rows), FA_PAGED for a paged cache, FA_STATUS_DROPPED_ROWS (include/fa_cl.h's bit). Elements
 * are copied as bits. */
#if FA_DTYPE == 0
typedef uint fa_bits_t;
#else
typedef ushort fa_bits_t;
#endif
/* k's rows are HEAD_DIM wide, v's HEAD_DIM_V (include/fa_cl.h "Value width"): the wider counts */
#define D4 (((HEAD_DIM > HEAD_DIM_V ? HEAD_DIM : HEAD_DIM_V) + 3) / 4)

__kernel void fa_append(__global const fa_bits_t *k_new, __global const fa_bits_t *v_new, __global fa_bits_t *k,
                        __global fa_bits_t *v, ulong k_off, long ks0, long ks1, long ks2, ulong v_off, long vs0,
                        long vs1, long vs2, __global const int *seqlens, __global const int *block_table,
                        int pages_per_seq, int page_size, int num_pages, int capacity, int heads_kv, int seqlen_new,
                        ulong rows, __global uint *status)
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
    for (int e = 4 * c; e < 4 * c + 4 && e < HEAD_DIM; e++)
        k[kr + (ulong)e] = k_new[r * HEAD_DIM + (ulong)e];
    for (int e = 4 * c; e < 4 * c + 4 && e < HEAD_DIM_V; e++)
        v[vr + (ulong)e] = v_new[r * HEAD_DIM_V + (ulong)e];
}
