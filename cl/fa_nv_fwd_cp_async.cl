/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's asynchronous loaders (cp.async): a block's K and V rows into their ring
 * buffers, and the Q tile. */
#ifdef FA_ASYNC
/* K and V rows [first, first + BLOCK_KV) into their tiles (those copy_k and copy_v, constants,
 * ask for); one commit group. The rows' places are found first, for K and V together: a paged row's table entry is a global load, and the copies
 * (asm volatile) would otherwise wait for each one in turn. Always inlined: an OpenCL C `inline`
 * function has no out-of-line definition to call. */
inline __attribute__((always_inline)) void fa_load_kv_async(__local ushort *kt, __local ushort *vt, __global const ushort *kg,
                             __global const ushort *vg, fa_row_map kmap, fa_row_map vmap, int first, int limit, int lid,
                             int copy_k, int copy_v)
{
#ifdef FA_PAGED
    int page[FA_COPIES];
    FA_PRAGMA_UNROLL
    for (int i = 0; i < FA_COPIES; i++) {
        const int e = lid + i * CP_WG, key = first + FA_COPY_ROW(e);
        page[i] = (e < BLOCK_KV * CH && key < limit) ? clamp(kmap.table[key / FA_PAGE_SIZE], 0, kmap.last) : 0;
    }
#endif
#if !defined(FA_PAGED) && defined(FA_WGMMA)
    if (first + BLOCK_KV <= limit) { /* every row is in the sequence */
        if (copy_k)
            fa_wg_cp_rows(kt, kg + kmap.base + (ulong)first * (ulong)kmap.stride, kmap.stride, HEAD_DIM, lid);
        if (copy_v)
            fa_wg_cp_rows(vt, vg + vmap.base + (ulong)first * (ulong)vmap.stride, vmap.stride, HEAD_DIM_V, lid);
        return;
    }
#elif !defined(FA_PAGED)
    if (first + BLOCK_KV <= limit) { /* every row is in the sequence */
        if (copy_k)
            fa_cp_rows16_any(kt, ROW, kg + kmap.base + (ulong)first * (ulong)kmap.stride, kmap.stride, BLOCK_KV, CH, WG,
                         HEAD_DIM, lid);
        if (copy_v)
            fa_cp_rows16_any(vt, ROW, vg + vmap.base + (ulong)first * (ulong)vmap.stride, vmap.stride, BLOCK_KV, CH, WG,
                         HEAD_DIM_V, lid);
        return;
    }
#endif
    FA_PRAGMA_UNROLL
    for (int i = 0; i < FA_COPIES; i++) {
        const int e = lid + i * CP_WG;
        if (FA_COPIES * CP_WG == BLOCK_KV * CH || e < BLOCK_KV * CH) {
            const int r = FA_COPY_ROW(e), c = FA_COPY_CHUNK(e);
            /* V's rows may be narrower or wider than K's (HEAD_DIM_V): each zero-filled past its own */
            const int valid = first + r < limit && 8 * c < HEAD_DIM, valid_v = first + r < limit && 8 * c < HEAD_DIM_V;
            /* an in-bounds address even when nothing is read: the first row of the view, column 0
             * (paged: key 0's page, which every sequence with a key has; with none, nothing is read) */
#ifdef FA_PAGED
            const ulong slot = (ulong)((first + r) % FA_PAGE_SIZE);
            const ulong ko = kmap.base + (ulong)page[i] * (ulong)kmap.outer + slot * (ulong)kmap.stride;
            const ulong vo = vmap.base + (ulong)page[i] * (ulong)vmap.outer + slot * (ulong)vmap.stride;
#else
            const ulong ko = kmap.base + (ulong)(first + r) * (ulong)kmap.stride;
            const ulong vo = vmap.base + (ulong)(first + r) * (ulong)vmap.stride;
#endif
            if (copy_k)
                fa_cp_async16(kt + FA_KV_AT(r, c), kg + (valid ? ko + 8 * c : kmap.base), valid);
            if (copy_v)
                fa_cp_async16(vt + FA_KV_AT(r, c), vg + (valid_v ? vo + 8 * c : vmap.base), valid_v);
        }
    }
}

/* Q's rows q0 .. into its tile by cp.async, rows past nrows zero-filled: copier cl of n */
inline __attribute__((always_inline)) void fa_copy_q_async(__local ushort *q_s, __global const ushort *qg,
                                                           fa_row_map qmap, int q0, int nrows, int cl, int n)
{
    for (int e = cl; e < BLOCK_Q * CH; e += n) {
        const int r = FA_COPY_ROW(e), c = FA_COPY_CHUNK(e);
        const int valid = q0 + r < nrows && 8 * c < HEAD_DIM;
        fa_cp_async16(q_s + FA_Q_AT(r, c),
                      qg + (valid ? fa_qrow(qmap.base, q0 + r, qmap.div, qmap.outer, qmap.stride) + 8 * c : qmap.base),
                      valid);
    }
}
#endif
