/* SPDX-License-Identifier: Apache-2.0 */
/* Portable FlashAttention-2 forward (no vendor extensions).
 *
 * One work-group per (query block, batch*head). The query block (BLOCK_Q x D_PAD, fp32) sits in
 * local memory; ONE local buffer of BLOCK_KV x D_PAD is reused: K is loaded, each work-item computes
 * the scores of its ROWS query rows against the block in registers, updates its running max m, sum l
 * and output O (all private), then V is loaded into the same buffer and P.V is accumulated straight
 * from the registers. P and S never leave private memory. O is divided by l and written once, with
 * the LSE.
 *
 * Defined by the planner (-D): FA_DTYPE, HEAD_DIM, HEAD_DIM_V where v and o rows differ (the tiles
 * then hold the wider of the two: DK4 chunks of q and k rows, DV4 of v and o), D_PAD (the wider
 * rounded up to 4), BLOCK_Q,
 * BLOCK_KV, ROWS (query rows per work-item); optional FA_UNROLL (force unrolling so the private
 * arrays stay in registers on GPUs), FA_NATIVE_EXP (native_exp2) and FA_KV_CHUNKED (long rows in chunks
 * of keys, cl/fa_forward_common.cl).
 */
#define D4 (D_PAD / 4)
#define WG (BLOCK_Q / ROWS)
#define FA_ITEM_ROWS ROWS


/* Cooperative load of BLOCK_KV rows (keys kv0 ..) into the shared K/V buffer; rows past seqlen_k
 * are zero (they are masked anyway, but must not be read from global memory). One loader per
 * tensor: K and V may differ in storage type. */
#define FA_DEFINE_KV_LOAD(name, T, chunk, n4)                                                             \
    inline void name(__local float4 *tile, __global const T *src, fa_row_map map, int kv0, int seqlen_k, int lid) \
    {                                                                                                     \
        for (int e = lid; e < BLOCK_KV * (n4); e += WG) {                                                 \
            int j = e / (n4), c = e % (n4);                                                               \
            int key = kv0 + j;                                                                            \
            float4 x = (float4)(0.0f);                                                                    \
            if (key < seqlen_k)                                                                           \
                x = FA_DESCALED(chunk(src, fa_kv_row(map, key), c), map);                                  \
            tile[j * D4 + c] = x;                                                                         \
        }                                                                                                 \
    }
FA_DEFINE_KV_LOAD(fa_load_k, fa_k_t, fa_k_chunk, DK4)
FA_DEFINE_KV_LOAD(fa_load_v, fa_v_t, fa_v_chunk, DV4)

/* O += p_j * V_j for the work-item's rows where `visible` holds (i is the row index). */
#define FA_PV_KEY(j, visible)                                                                \
    {                                                                                        \
        FA_PRAGMA_UNROLL                                                                     \
        for (int c = 0; c < DV4; c++) {                                                      \
            float4 vx = kv_tile[(j) * D4 + c];                                               \
            for (int i = 0; i < ROWS; i++)                                                   \
                if (visible)                                                                 \
                    acc[i][c] = mad((float4)(s[i][j]), vx, acc[i][c]);                       \
        }                                                                                    \
    }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    __local float4 q_tile[D4 * BLOCK_Q];   /* chunk-major: q_tile[c * BLOCK_Q + r], conflict-free per row */
    __local float4 kv_tile[BLOCK_KV * D4]; /* row-major, read by every work-item at once (broadcast) */

    const int lid = (int)get_local_id(0);
    FA_BLOCK_COORDS
    const ulong qbase = FA_Q_HEAD0;
    const ulong obase = FA_O_HEAD0;

    for (int e = lid; e < BLOCK_Q * DK4; e += WG) {
        int r = e / DK4, c = e % DK4;
        int row = q0 + r;
        float4 x = (float4)(0.0f);
        if (row < nrows)
            x = fa_q_chunk(q, fa_qrow(qbase, row, seqlen_q, qs1, qs2), c);
        q_tile[c * BLOCK_Q + r] = x;
    }

    float4 acc[ROWS][DV4];
    float m[ROWS], l[ROWS];
    int lo[ROWS], hi[ROWS];
    FA_MOD_ROWS(ROWS)
    for (int i = 0; i < ROWS; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        FA_ROW_RANGE(q0 + lid + i * WG, &lo[i], &hi[i]);
        FA_MOD_ROW_INIT(i, q0 + lid + i * WG);
#ifdef FA_UNROLL
#pragma unroll
#endif
        for (int c = 0; c < DV4; c++)
            acc[i][c] = (float4)(0.0f);
    }
    /* Keys any row of this block can see; blocks outside are skipped, not computed. Keys in
     * [last_lo, first_hi) are seen by every row (ranges move right with the row). */
    int blk_lo, blk_hi, first_hi, last_lo;
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &first_hi, &last_lo, &blk_hi);
    FA_CLIP_KEYS(blk_lo, blk_hi);
    barrier(CLK_LOCAL_MEM_FENCE);

    for (int kv0 = blk_lo / BLOCK_KV * BLOCK_KV; kv0 < blk_hi; kv0 += BLOCK_KV) {
        fa_load_k(kv_tile, k, kmap, kv0, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        float s[ROWS][BLOCK_KV];
        for (int i = 0; i < ROWS; i++)
#ifdef FA_UNROLL
#pragma unroll
#endif
            for (int j = 0; j < BLOCK_KV; j++)
                s[i][j] = 0.0f;
#ifdef FA_UNROLL
#pragma unroll 4
#endif
        for (int c = 0; c < DK4; c++) {
            float4 qv[ROWS];
            for (int i = 0; i < ROWS; i++)
                qv[i] = q_tile[c * BLOCK_Q + lid + i * WG];
#ifdef FA_UNROLL
#pragma unroll
#endif
            for (int j = 0; j < BLOCK_KV; j++) {
                float4 kx = kv_tile[j * D4 + c];
                for (int i = 0; i < ROWS; i++) {
                    float t = s[i][j];
                    t = mad(qv[i].x, kx.x, t);
                    t = mad(qv[i].y, kx.y, t);
                    t = mad(qv[i].z, kx.z, t);
                    t = mad(qv[i].w, kx.w, t);
                    s[i][j] = t;
                }
            }
        }

        /* Online softmax on raw scores s = q.k, in base 2 with the scale folded in: m_new = max(m,
         * rowmax), delta = 2^((m - m_new) c), p = 2^((s - m_new) c), l = delta l + sum(p),
         * O = delta O (+ P.V below), c = scale * log2(e). The difference comes first: it is exact
         * near the maximum (scores of |s| ~ 1e4 keep their digits), exactly 0 at it whatever c, and
         * s c never overflows; a product first, fused or not, gives 2^(+-2^k) garbage for scales
         * of ~1e30 (found by the fuzz target). */
        for (int i = 0; i < ROWS; i++) {
            float mx = m[i];
#ifdef FA_UNROLL
#pragma unroll
#endif
            for (int j = 0; j < BLOCK_KV; j++) {
                int key = kv0 + j;
                /* the modified score first, then select() (a call or a load in one arm of ?:
                 * made AMD's compiler branch and spill the tiles: 3.7 KB with a mask) */
                const float y = FA_MOD_SCORE(s[i][j], i, key);
                float x = select(-INFINITY, y, (int)(key >= lo[i] && key < hi[i]));
                s[i][j] = x;
                mx = fmax(mx, x);
            }
            float m_use = (mx == -INFINITY) ? 0.0f : mx; /* a row that has seen no key yet */
            float delta = FA_EXP2((m[i] - m_use) * scale_log2);
            float sum = 0.0f;
#ifdef FA_UNROLL
#pragma unroll
#endif
            for (int j = 0; j < BLOCK_KV; j++) {
                float p = FA_EXP2((s[i][j] - m_use) * scale_log2);
                s[i][j] = p;
                sum += p;
            }
            l[i] = mad(l[i], delta, sum);
            m[i] = mx;
#ifdef FA_UNROLL
#pragma unroll
#endif
            for (int c = 0; c < DV4; c++)
                acc[i][c] *= delta;
        }

        barrier(CLK_LOCAL_MEM_FENCE); /* every work-item is done with K */
        fa_load_v(kv_tile, v, vmap, kv0, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* A block every row sees fully takes the plain loop. Elsewhere masked (row, key) pairs are
         * skipped, not multiplied by p = 0: a NaN/Inf in V must not reach rows that cannot see it. */
        if (kv0 >= last_lo && kv0 + BLOCK_KV <= first_hi) {
#ifdef FA_UNROLL
#pragma unroll
#endif
            for (int j = 0; j < BLOCK_KV; j++)
                FA_PV_KEY(j, 1)
        } else {
#ifdef FA_UNROLL
#pragma unroll
#endif
            for (int j = 0; j < BLOCK_KV; j++)
                FA_PV_KEY(j, kv0 + j >= lo[i] && kv0 + j < hi[i])
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* every work-item is done with V before the next K */
    }

    FA_CHUNK_EPILOGUE(ROWS, q0 + lid + i * WG, DV4, c) /* long rows (rows lid + i WG, every chunk) */
    /* Normalise, then stage the block through the Q tile (each work-item only ever touched its own
     * rows there) so the global stores are coalesced. */
    FA_PRAGMA_UNROLL
    for (int i = 0; i < ROWS; i++) {
        int r = lid + i * WG;
        int row = q0 + r;
#ifdef FA_APPLY_SINKS
        const float4 js = fa_sink_join(FA_ROW_SINK(row), m[i], l[i], scale_log2);
        m[i] = js.x;
        l[i] = js.y;
        FA_PRAGMA_UNROLL
        for (int c = 0; c < DV4; c++)
            acc[i][c] *= js.z;
#endif
        float inv = (l[i] == 0.0f) ? 0.0f : 1.0f / l[i];
#ifdef FA_UNROLL
#pragma unroll
#endif
        for (int c = 0; c < DV4; c++)
            q_tile[c * BLOCK_Q + r] = acc[i][c] * inv;
        if (has_lse && row < nrows)
            lse[FA_LSE_INDEX(row)] = fa_row_lse(m[i], l[i], scale);
    }
#ifdef FA_KV_CHUNKED
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE); /* f32: o held the earlier chunks, read above */
#else
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    for (int e = lid; e < BLOCK_Q * DV4; e += WG) {
        int r = e / DV4, c = e % DV4;
        int row = q0 + r;
        if (row < nrows)
            fa_store_chunk(o, fa_qrow(obase, row, seqlen_q, os1, os2), c, q_tile[c * BLOCK_Q + r]);
    }
}
