/* SPDX-License-Identifier: Apache-2.0 */
/* The fp32 tensor-core forward's loaders and kernel (nvidia-tf32x3): after its constants
 * (cl/fa_nv_tf32_config.cl, which says what the kernel is) and the online softmax (cl/fa_nv_softmax.cl). */

/* rows [first, first + count) into a local tile of pitch `pitch`, zero padded: keys of a K/V map
 * (is_kv) or query rows of a head column (map.div = seqlen_q) */
inline void fa_tf_load_tile(__local float *tile, int pitch, __global const float *src, fa_row_map map, int is_kv,
                            int first, int count, int limit, int lid)
{
    for (int e = lid; e < count * CH; e += WG) {
        int r = e / CH, c = e % CH;
        float4 x = (float4)(0.0f);
        if (first + r < limit && 4 * c < HEAD_DIM) {
            __global const float *p = src + 4 * c +
                                      (is_kv ? fa_kv_row(map, first + r)
                                             : fa_qrow(map.base, first + r, map.div, map.outer, map.stride));
#if defined(FA_ALIGNED16) && HEAD_DIM % 4 == 0
            x = *(__global const float4 *)p;
#else
            x.x = p[0];
            if (4 * c + 1 < HEAD_DIM) x.y = p[1];
            if (4 * c + 2 < HEAD_DIM) x.z = p[2];
            if (4 * c + 3 < HEAD_DIM) x.w = p[3];
#endif
        }
        *(__local float4 *)(tile + r * pitch + 4 * c) = x;
    }
}

#if defined(FA_ALIGNED16) && HEAD_DIM % 4 == 0
#define FA_ASYNC 1
#define NBUF 2
inline void fa_tf_load_tile_async(__local float *tile, int pitch, __global const float *src, fa_row_map map,
                                  int first, int limit, int lid)
{
#ifndef FA_PAGED
    if (WG % CH == 0 && BLOCK_KV * CH % WG == 0 && first + BLOCK_KV <= limit) { /* 16 bytes = 8 ushorts */
        fa_cp_rows16((__local ushort *)tile, 2 * pitch, (__global const ushort *)(src + fa_kv_row(map, first)),
                     2 * map.stride, BLOCK_KV, CH, WG, 2 * HEAD_DIM, lid);
        fa_cp_async_commit();
        return;
    }
#endif
    for (int e = lid; e < BLOCK_KV * CH; e += WG) {
        int r = e / CH, c = e % CH;
        int valid = first + r < limit && 4 * c < HEAD_DIM;
        __global const float *p = src + (valid ? fa_kv_row(map, first + r) + 4 * c : map.base);
        fa_cp_async16((__local ushort *)(tile + r * pitch + 4 * c), (__global const ushort *)p, valid);
    }
    fa_cp_async_commit();
}
#else
#define NBUF 1
#endif

/* local memory in floats: Q, then NBUF K tiles and NBUF V tiles (src/kernels/nvidia_tf32.c: fa_cl__tf32_local_bytes) */
#define KT (BLOCK_KV * QP)
#define VT (BLOCK_KV * VP)
#define SMEM_FLOATS (BLOCK_Q * QP + NBUF * (KT + VT))

inline void fa_store_two(__global float *o, ulong i, int col, float x, float y)
{
#if defined(FA_ALIGNED16) && HEAD_DIM % 4 == 0
    (void)col;
    *(__global float2 *)(o + i) = (float2)(x, y);
#else
    if (col < HEAD_DIM) o[i] = x;
    if (col + 1 < HEAD_DIM) o[i + 1] = y;
#endif
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    __local float smem[SMEM_FLOATS] __attribute__((aligned(16)));
    __local float *const q_s = smem;
    __local float *const k_s = smem + BLOCK_Q * QP;
    __local float *const v_s = k_s + NBUF * KT;
    const int warp_of_item = (int)get_local_id(0) / 32;
    FA_EMU_DECL(WARPS, warp_of_item)

    const int lid = (int)get_local_id(0);
    const int warp = lid / 32, lane = lid % 32;
    const int g = lane / 4, t4 = lane % 4;
    FA_BLOCK_COORDS
    const int wrow = warp * 16;


    const int row0 = q0 + wrow + g, row1 = row0 + 8;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    float4 acc[DT];
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        acc[dt] = (float4)(0.0f);

    int blk_lo, blk_hi, unused, unused2;
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &unused, &unused2, &blk_hi);
    FA_CLIP_KEYS(blk_lo, blk_hi);
    int clean_lo = 0, clean_hi = 0; /* keys every row of this warp sees */
    if (q0 + wrow + 16 <= nrows)
        FA_ROWS_SPAN(q0 + wrow, q0 + wrow + 15, &unused, &clean_hi, &clean_lo, &unused2);

    const int kv_first = blk_lo / BLOCK_KV * BLOCK_KV;
    FA_NV_MODS_ROWS(1) /* cl/fa_nv_mods.cl */
#ifdef FA_ASYNC
    if (kv_first < blk_hi) {
        fa_tf_load_tile_async(k_s, QP, k, kmap, kv_first, seqlen_k, lid);
        fa_tf_load_tile_async(v_s, VP, v, vmap, kv_first, seqlen_k, lid);
    }
#endif
    /* Q (its own tile) after the first block's copies are on their way: the latencies overlap;
     * the loop's first barrier makes it visible */
    const fa_row_map qmap = fa_q_map(FA_Q_HEAD0, qs1, qs2, seqlen_q);
    fa_tf_load_tile(q_s, QP, q, qmap, 0, q0, BLOCK_Q, nrows, lid);
    for (int kv0 = kv_first, it = 0; kv0 < blk_hi; kv0 += BLOCK_KV, it++) {
#ifdef FA_ASYNC
        __local const float *kc = k_s + (it & 1) * KT, *vc = v_s + (it & 1) * VT;
        fa_cp_async_wait_all();
        barrier(CLK_LOCAL_MEM_FENCE); /* this block (and Q) is in; every warp is done with the other buffer */
        if (kv0 + BLOCK_KV < blk_hi) {
            fa_tf_load_tile_async(k_s + ((it + 1) & 1) * KT, QP, k, kmap, kv0 + BLOCK_KV, seqlen_k, lid);
            fa_tf_load_tile_async(v_s + ((it + 1) & 1) * VT, VP, v, vmap, kv0 + BLOCK_KV, seqlen_k, lid);
        }
#else
        __local const float *kc = k_s, *vc = v_s;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's K and V are consumed */
        fa_tf_load_tile(k_s, QP, k, kmap, 1, kv0, BLOCK_KV, seqlen_k, lid);
        fa_tf_load_tile(v_s, VP, v, vmap, 1, kv0, BLOCK_KV, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

        /* S = Q K^T: s[nt] holds rows (g, g+8) x keys nt*8 + 2*t4 + {0,1} */
        float4 s[NT];
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NT; nt++)
            s[nt] = (float4)(0.0f);
        FA_PRAGMA_UNROLL
        for (int kk = 0; kk < KSTEPS; kk++) {
            const float2 qa = *(__local const float2 *)(q_s + (wrow + g) * QP + kk * 8 + 2 * t4);
            const float2 qb = *(__local const float2 *)(q_s + (wrow + g + 8) * QP + kk * 8 + 2 * t4);
            uint ab[4], as[4]; /* A: (g, slot t4) (g+8, t4) (g, t4+4) (g+8, t4+4) = elements 2t4, 2t4+1 */
            fa_split(qa.x, &ab[0], &as[0]);
            fa_split(qb.x, &ab[1], &as[1]);
            fa_split(qa.y, &ab[2], &as[2]);
            fa_split(qb.y, &ab[3], &as[3]);
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt++) {
                const float2 kx = *(__local const float2 *)(kc + (nt * 8 + g) * QP + kk * 8 + 2 * t4);
                uint bb0, bs0, bb1, bs1;
                fa_split(kx.x, &bb0, &bs0);
                fa_split(kx.y, &bb1, &bs1);
                fa_mma_tf32(&s[nt], as[0], as[1], as[2], as[3], bb0, bb1 FA_EMU_ARG);
                fa_mma_tf32(&s[nt], ab[0], ab[1], ab[2], ab[3], bs0, bs1 FA_EMU_ARG);
                fa_mma_tf32(&s[nt], ab[0], ab[1], ab[2], ab[3], bb0, bb1 FA_EMU_ARG);
            }
        }

        /* softcap and ALiBi (cl/fa_nv_mods.cl); then the mask, unless every row of the warp sees
         * every key of the block; scores stay raw (the scale goes into the exponent: 2^(s c - m c),
         * below) */
        FA_NV_MODS_TILE(s, 0, kv0)
        if (!(kv0 >= clean_lo && kv0 + BLOCK_KV <= clean_hi)) {
            int lo0, hi0, lo1, hi1;
            FA_ROW_RANGE(row0, &lo0, &hi0);
            FA_ROW_RANGE(row1, &lo1, &hi1);
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt++) {
                int key = kv0 + nt * 8 + 2 * t4;
                s[nt].x = (key >= lo0 && key < hi0) ? s[nt].x : -INFINITY;
                s[nt].y = (key + 1 >= lo0 && key + 1 < hi0) ? s[nt].y : -INFINITY;
                s[nt].z = (key >= lo1 && key < hi1) ? s[nt].z : -INFINITY;
                s[nt].w = (key + 1 >= lo1 && key + 1 < hi1) ? s[nt].w : -INFINITY;
            }
        }

        /* online softmax (cl/fa_nv_softmax.cl), O rescaled where a row's maximum grew */
        FA_SOFTMAX_ROWS(s, m0, m1, l0, l1, FA_SOFTMAX_RESCALE, FA_SOFTMAX_NONE)

        /* O += P V, 8 keys at a time: S tile nt is the A fragment (slot t4 = key 2t4, t4+4 = 2t4+1) */
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NT; nt++) {
            uint pb[4], ps[4];
            fa_split(s[nt].x, &pb[0], &ps[0]);
            fa_split(s[nt].z, &pb[1], &ps[1]);
            fa_split(s[nt].y, &pb[2], &ps[2]);
            fa_split(s[nt].w, &pb[3], &ps[3]);
            __local const float *v0 = vc + (nt * 8 + 2 * t4) * VP + g, *v1 = v0 + VP;
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++) {
                uint bb0, bs0, bb1, bs1;
                fa_split(v0[dt * 8], &bb0, &bs0);
                fa_split(v1[dt * 8], &bb1, &bs1);
                fa_mma_tf32(&acc[dt], ps[0], ps[1], ps[2], ps[3], bb0, bb1 FA_EMU_ARG);
                fa_mma_tf32(&acc[dt], pb[0], pb[1], pb[2], pb[3], bs0, bs1 FA_EMU_ARG);
                fa_mma_tf32(&acc[dt], pb[0], pb[1], pb[2], pb[3], bb0, bb1 FA_EMU_ARG);
            }
        }
    }

#ifdef FA_KV_CHUNKED
    /* merge with the earlier chunks (this lane's elements and partial sums); every launch but the
     * last leaves them for the next */
    {
        const int first_chunk = kv_begin == 0, last_chunk = kv_end >= seqlen_k_cap;
        const float2 f0 = fa_chunk_merge(FA_CHUNK_SLOT(0), first_chunk, last_chunk, &m0, &l0, scale_log2);
        const float2 f1 = fa_chunk_merge(FA_CHUNK_SLOT(1), first_chunk, last_chunk, &m1, &l1, scale_log2);
        FA_PRAGMA_UNROLL /* constant indices: a run-time one would put the accumulators in memory */
        for (int dt = 0; dt < DT; dt++) {
            const int col = dt * 8 + 2 * t4;
            float x[4] = {acc[dt].x, acc[dt].y, acc[dt].z, acc[dt].w};
            FA_PRAGMA_UNROLL
            for (int e = 0; e < 4; e++) {
                const int row = e < 2 ? row0 : row1, cc = col + (e & 1);
                if (row < nrows && cc < HEAD_DIM)
                    x[e] = FA_CHUNK_MERGE(row, cc, first_chunk, last_chunk, e < 2 ? f0 : f1, x[e]);
            }
            acc[dt] = (float4)(x[0], x[1], x[2], x[3]);
        }
        if (!last_chunk)
            return; /* the whole work-group: last_chunk is the launch's */
    }
#endif
    l0 += fa_shfl_xor(l0, 1 FA_EMU_ARG);
    l0 += fa_shfl_xor(l0, 2 FA_EMU_ARG);
    l1 += fa_shfl_xor(l1, 1 FA_EMU_ARG);
    l1 += fa_shfl_xor(l1, 2 FA_EMU_ARG);
    FA_NV_SINK_JOIN(sink0, row0, m0, l0) /* cl/fa_nv_mods.cl */
    FA_NV_SINK_JOIN(sink1, row1, m1, l1)
    const float inv0 = (l0 == 0.0f) ? 0.0f : FA_NV_SINK_F(sink0) / l0,
                inv1 = (l1 == 0.0f) ? 0.0f : FA_NV_SINK_F(sink1) / l1;
    const ulong obase = FA_O_HEAD0;
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++) {
        const int col = dt * 8 + 2 * t4;
        if (col < HEAD_DIM) {
            if (row0 < nrows)
                fa_store_two(o, fa_qrow(obase, row0, seqlen_q, os1, os2) + col, col, acc[dt].x * inv0,
                             acc[dt].y * inv0);
            if (row1 < nrows)
                fa_store_two(o, fa_qrow(obase, row1, seqlen_q, os1, os2) + col, col, acc[dt].z * inv1,
                             acc[dt].w * inv1);
        }
    }
    if (has_lse && t4 == 0) {
        if (row0 < nrows)
            lse[FA_LSE_INDEX(row0)] = fa_row_lse(m0, l0, scale);
        if (row1 < nrows)
            lse[FA_LSE_INDEX(row1)] = fa_row_lse(m1, l1, scale);
    }
}
