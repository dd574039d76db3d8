/* SPDX-License-Identifier: Apache-2.0 */
/* Device status (fa_cl_forward_args.status): a call with a status runs this first where its plan has
 * per-sequence lengths (cache_seqlens) or pages (block_table), and ORs into *status the bits of
 * include/fa_cl.h (the host passes their values: FA_STATUS_BAD_SEQLEN, FA_STATUS_BAD_PAGE) for the
 * bad data the other kernels clamp: a length outside [0, capacity], a block-table entry that a
 * sequence's keys reach (its length clamped, plus the appended rows, at most capacity) outside
 * [0, num_pages). Reads the entries the forward and the append read, nothing else.
 *
 * One work-item per (sequence, block-table column) when paged, else per sequence. seqlens or
 * block_table is NULL where the plan has none. */
__kernel void fa_check_serving(__global uint *status, __global const int *seqlens, __global const int *block_table,
                               int capacity, int seqlen_new, int page_size, int pages_per_seq, int num_pages,
                               ulong items)
{
    const ulong gid = get_global_id(0);
    if (gid >= items)
        return;
    const int columns = block_table ? pages_per_seq : 1;
    const ulong b = gid / (ulong)columns;
    const int col = (int)(gid % (ulong)columns);
    int keys = capacity;
    if (seqlens) {
        const int len = seqlens[b];
        if (col == 0 && (len < 0 || len > capacity))
            atomic_or(status, FA_STATUS_BAD_SEQLEN);
        keys = min(clamp(len, 0, capacity) + seqlen_new, capacity);
    }
    if (block_table && (long)col * (long)page_size < (long)keys) {
        const int page = block_table[gid];
        if (page < 0 || page >= num_pages)
            atomic_or(status, FA_STATUS_BAD_PAGE);
    }
}
