/* SPDX-License-Identifier: Apache-2.0 */
/* The Hopper forward's tensor maps (FA_KV_TMA, FA_MASK_TMA): the plan's first launch writes those
 * its copies go through (cl/fa_nv_tma.cl). */
#if defined(FA_MASK_TMA) || defined(FA_KV_TMA)
/* a stride of a dim of `extent`: the tensor's where it steps, else (never stepped) `other`, so that
 * every stride is a multiple of 16 bytes */
inline ulong fa_tma_stride(long s, int extent, ulong other) { return extent > 1 ? (ulong)s : other; }

/* The plan's first launch: the tensor maps its forward copies through into the scratch (one
 * work-item; maps FA_TMA_MAP_*). Q, K, V: dims head_dim, rows, heads, batches, boxes of 64
 * columns x the block's rows. The mask: its keys, rows, heads, batches; a dim it broadcasts over
 * (stride 0) has extent 1 and is read at 0; boxes of 128 bytes of keys x BLOCK_Q rows. Columns,
 * rows and keys past the tensors' read zeros. */
__kernel void fa_tma_maps(__global float *scratch, __global const ushort *q, __global const ushort *k,
                          __global const ushort *v, ulong q_off, ulong k_off, ulong v_off, long qs0, long qs1,
                          long qs2, long ks0, long ks1, long ks2, long vs0, long vs1, long vs2, int batch, int heads_q,
                          int heads_kv, int seqlen_q, int seqlen_k, __global const uchar *mask, ulong mask_off,
                          long ms0, long ms1, long ms2)
{
    if (get_global_id(0) != 0)
        return;
    __global ulong *const maps = (__global ulong *)scratch;
#ifdef FA_PERSISTENT
    ((__global uint *)scratch)[FA_TILE_COUNTER] = 0u; /* the forward after takes its tiles from here */
#endif
    (void)q, (void)k, (void)v, (void)q_off, (void)k_off, (void)v_off, (void)qs0, (void)qs1, (void)qs2, (void)ks0,
        (void)ks1, (void)ks2, (void)vs0, (void)vs1, (void)vs2, (void)heads_kv, (void)mask, (void)mask_off, (void)ms0,
        (void)ms1, (void)ms2;
#ifdef FA_KV_TMA
    {
        const ulong q1 = (ulong)qs2 * 2, k1 = (ulong)ks2 * 2, v1 = (ulong)vs2 * 2;
        fa_tma_map_write(maps + FA_TMA_MAP_Q * 16, (ulong)(q + q_off), HEAD_DIM, (uint)seqlen_q, (uint)heads_q,
                         (uint)batch, q1, fa_tma_stride(qs1 * 2, heads_q, q1), fa_tma_stride(qs0 * 2, batch, q1), 64,
                         BLOCK_Q, 2);
        fa_tma_map_write(maps + FA_TMA_MAP_K * 16, (ulong)(k + k_off), HEAD_DIM, (uint)seqlen_k, (uint)heads_kv,
                         (uint)batch, k1, fa_tma_stride(ks1 * 2, heads_kv, k1), fa_tma_stride(ks0 * 2, batch, k1), 64,
                         BLOCK_KV, 2);
        fa_tma_map_write(maps + FA_TMA_MAP_V * 16, (ulong)(v + v_off), HEAD_DIM_V, (uint)seqlen_k, (uint)heads_kv,
                         (uint)batch, v1, fa_tma_stride(vs1 * 2, heads_kv, v1), fa_tma_stride(vs0 * 2, batch, v1), 64,
                         BLOCK_KV, 2);
    }
#endif
#ifdef FA_MASK_TMA
    {
        const ulong s1 = (ulong)ms2 * MASK_ES;
        fa_tma_map_write(maps + FA_TMA_MAP_MASK * 16, (ulong)(mask + mask_off * MASK_ES), (uint)seqlen_k,
                         (uint)seqlen_q, ms1 != 0 ? (uint)heads_q : 1u, ms0 != 0 ? (uint)batch : 1u, s1,
                         ms1 != 0 ? (ulong)ms1 * MASK_ES : s1, ms0 != 0 ? (ulong)ms0 * MASK_ES : s1, 128u / MASK_ES,
                         BLOCK_Q, MASK_ES);
    }
#endif
}
#endif
