/* SPDX-License-Identifier: Apache-2.0 */
/* Portable FlashAttention-2 forward, register-tiled for GPUs (no vendor extensions).
 *
 * Same loop structure and local-memory budget as fa_forward.cl (Q block + ONE K/V buffer reused),
 * but work-items form an NY x NX grid: work-item (ty, tx) computes the scores of TM query rows
 * (ty*TM ..) against TN keys (tx, tx+NX, ..) of the block, and accumulates O for the same TM rows
 * over the columns (chunks tx, tx+NX, ..) of head_dim. Each loaded value then feeds TM or TN
 * multiply-adds instead of one, which is what bounds the one-row-per-work-item kernel on GPUs.
 * The price: the rows' maxima and the probabilities P of each block pass through a small local
 * buffer (B_c x B_r floats) between the two products, as in other SIMT attention kernels; S, the
 * running max/sum and O stay private. The sums l are kept per work-item (partial over its keys)
 * and added up once at the end.
 *
 * Defined by the planner (-D): FA_DTYPE, HEAD_DIM, HEAD_DIM_V where v and o rows differ (the tiles
 * then hold the wider: DK4 chunks of q and k rows, DV4 of v and o), D_PAD (the wider, a multiple
 * of 4), BLOCK_Q, BLOCK_KV, TM,
 * TN; optional FA_UNROLL, FA_NATIVE_EXP, FA_KV_CHUNKED (long rows in chunks of keys,
 * cl/fa_forward_common.cl).
 */
#define D4 (D_PAD / 4)
#define NY (BLOCK_Q / TM)
#define NX (BLOCK_KV / TN)
#define WG (NX * NY)
#define FA_ITEM_ROWS TM
#define ROW4 (D4 + 1)            /* padded row pitch of Q and K/V in float4s: spreads rows over banks */
#define PT_PITCH (BLOCK_Q + 4)   /* padded pitch of P^T and of the max exchange, in floats */
#define OC ((DV4 + NX - 1) / NX) /* output chunks per work-item */

/* partial unrolling of the two products' outer loops: more loads in flight vs registers */
#ifndef FA_QK_UNROLL
#define FA_QK_UNROLL 32 /* D4 at d = 128: full unrolling measured best on an H200 */
#endif
#ifndef FA_PV_UNROLL
#define FA_PV_UNROLL 4
#endif

/* rows [first, first + count) into a padded local tile, zero past `limit`: keys of a K/V map (one
 * loader per tensor: K and V may differ in storage type), or the query rows of a head column
 * (fa_qrow) */
#define FA_DEFINE_KV_ROWS(name, T, chunk, n4)                                                             \
    inline void name(__local float4 *tile, __global const T *src, fa_row_map map, int first, int count, int limit, \
                     int lid)                                                                             \
    {                                                                                                     \
        for (int e = lid; e < count * (n4); e += WG) {                                                    \
            int j = e / (n4), c = e % (n4);                                                               \
            float4 x = (float4)(0.0f);                                                                    \
            if (first + j < limit)                                                                        \
                x = FA_DESCALED(chunk(src, fa_kv_row(map, first + j), c), map);                           \
            tile[j * ROW4 + c] = x;                                                                       \
        }                                                                                                 \
    }
FA_DEFINE_KV_ROWS(fa_load_k_rows, fa_k_t, fa_k_chunk, DK4)
FA_DEFINE_KV_ROWS(fa_load_v_rows, fa_v_t, fa_v_chunk, DV4)

inline void fa_load_q_rows(__local float4 *tile, __global const fa_q_t *src, ulong base, long s1, long s2,
                           int seqlen_q, int first, int count, int limit, int lid)
{
    for (int e = lid; e < count * DK4; e += WG) {
        int j = e / DK4, c = e % DK4;
        float4 x = (float4)(0.0f);
        if (first + j < limit)
            x = fa_q_chunk(src, fa_qrow(base, first + j, seqlen_q, s1, s2), c);
        tile[j * ROW4 + c] = x;
    }
}

/* O += P[., j] V[j] for the work-item's TM rows where `visible` holds (i is the row index). */
#define FA_PV_KEY(j, visible)                                                                \
    {                                                                                        \
        float pv[TM];                                                                        \
        FA_PRAGMA_UNROLL                                                                     \
        for (int i = 0; i < TM; i++)                                                         \
            pv[i] = p_t[(j) * PT_PITCH + ty * TM + i];                                       \
        FA_PRAGMA_UNROLL                                                                     \
        for (int c = 0; c < OC; c++) {                                                       \
            int chunk = tx + NX * c;                                                         \
            if (OC * NX == DV4 || chunk < DV4) {                                             \
                float4 vx = kv_tile[(j) * ROW4 + chunk];                                     \
                FA_PRAGMA_UNROLL                                                             \
                for (int i = 0; i < TM; i++)                                                 \
                    if (visible)                                                             \
                        acc[i][c] = mad((float4)(pv[i]), vx, acc[i][c]);                     \
            }                                                                                \
        }                                                                                    \
    }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    __local float4 q_tile[BLOCK_Q * ROW4];
    __local float4 kv_tile[BLOCK_KV * ROW4];
    __local float p_t[BLOCK_KV * PT_PITCH];  /* P^T: p_t[key * PT_PITCH + row] */
    __local float xchg[NX * PT_PITCH];       /* per-row partial maxima (then sums) of each tx */

    const int lid = (int)get_local_id(0);
    const int tx = lid % NX, ty = lid / NX;
    FA_BLOCK_COORDS
    fa_load_q_rows(q_tile, q, FA_Q_HEAD0, qs1, qs2, seqlen_q, q0, BLOCK_Q, nrows, lid);

    float4 acc[TM][OC];
    float m[TM], l[TM];
    int lo[TM], hi[TM];
    FA_MOD_ROWS(TM)
    FA_PRAGMA_UNROLL
    for (int i = 0; i < TM; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        FA_ROW_RANGE(q0 + ty * TM + i, &lo[i], &hi[i]);
        FA_MOD_ROW_INIT(i, q0 + ty * TM + i);
        FA_PRAGMA_UNROLL
        for (int c = 0; c < OC; c++)
            acc[i][c] = (float4)(0.0f);
    }
    /* keys any row of the block sees, and [last_lo, first_hi): keys every row sees */
    int blk_lo, blk_hi, first_hi, last_lo;
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &first_hi, &last_lo, &blk_hi);
    FA_CLIP_KEYS(blk_lo, blk_hi);

    for (int kv0 = blk_lo / BLOCK_KV * BLOCK_KV; kv0 < blk_hi; kv0 += BLOCK_KV) {
        barrier(CLK_LOCAL_MEM_FENCE); /* previous V (and the Q load, first time) done */
        fa_load_k_rows(kv_tile, k, kmap, kv0, BLOCK_KV, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* S = Q K^T for the TM x TN tile, 4 head_dim elements at a time */
        float s[TM][TN];
        FA_PRAGMA_UNROLL
        for (int i = 0; i < TM; i++)
            FA_PRAGMA_UNROLL
            for (int j = 0; j < TN; j++)
                s[i][j] = 0.0f;
        FA_PRAGMA_UNROLL_N(FA_QK_UNROLL)
        for (int c = 0; c < DK4; c++) {
            float4 qv[TM], kx[TN];
            FA_PRAGMA_UNROLL
            for (int i = 0; i < TM; i++)
                qv[i] = q_tile[(ty * TM + i) * ROW4 + c];
            FA_PRAGMA_UNROLL
            for (int j = 0; j < TN; j++)
                kx[j] = kv_tile[(tx + NX * j) * ROW4 + c];
            FA_PRAGMA_UNROLL
            for (int i = 0; i < TM; i++)
                FA_PRAGMA_UNROLL
                for (int j = 0; j < TN; j++) {
                    float t = s[i][j];
                    t = mad(qv[i].x, kx[j].x, t);
                    t = mad(qv[i].y, kx[j].y, t);
                    t = mad(qv[i].z, kx[j].z, t);
                    t = mad(qv[i].w, kx[j].w, t);
                    s[i][j] = t;
                }
        }

        /* mask (raw scores; the scale is applied inside the exponent below), partial row maxima */
        float pmax[TM];
        FA_PRAGMA_UNROLL
        for (int i = 0; i < TM; i++) {
            pmax[i] = -INFINITY;
            FA_PRAGMA_UNROLL
            for (int j = 0; j < TN; j++) {
                int key = kv0 + tx + NX * j;
                /* the modified score first, then select() (a call or a load in one arm of ?:
                 * made AMD's compiler branch and spill the tiles: 3.7 KB with a mask) */
                const float y = FA_MOD_SCORE(s[i][j], i, key);
                float x = select(-INFINITY, y, (int)(key >= lo[i] && key < hi[i]));
                s[i][j] = x;
                pmax[i] = fmax(pmax[i], x);
            }
            xchg[tx * PT_PITCH + ty * TM + i] = pmax[i];
        }
        barrier(CLK_LOCAL_MEM_FENCE);

        /* row maxima over all tx; delta rescales this work-item's O and partial sums */
        FA_PRAGMA_UNROLL
        for (int i = 0; i < TM; i++) {
            float mx = m[i];
            FA_PRAGMA_UNROLL
            for (int x = 0; x < NX; x++)
                mx = fmax(mx, xchg[x * PT_PITCH + ty * TM + i]);
            float m_use = (mx == -INFINITY) ? 0.0f : mx;
            float delta = FA_EXP2((m[i] - m_use) * scale_log2); /* as in cl/fa_forward.cl */
            float sum = 0.0f;
            FA_PRAGMA_UNROLL
            for (int j = 0; j < TN; j++) {
                float p = FA_EXP2((s[i][j] - m_use) * scale_log2);
                p_t[(tx + NX * j) * PT_PITCH + ty * TM + i] = p;
                sum += p;
            }
            l[i] = mad(l[i], delta, sum);
            m[i] = mx;
            FA_PRAGMA_UNROLL
            for (int c = 0; c < OC; c++)
                acc[i][c] *= delta;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* K, the maxima and P are all consumed / published */
        fa_load_v_rows(kv_tile, v, vmap, kv0, BLOCK_KV, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* O += P V for TM rows x OC chunks. A block every row sees fully takes the plain loop;
         * elsewhere masked (row, key) pairs are skipped, not multiplied by p = 0, so a NaN/Inf in V
         * cannot reach rows that do not see its key. */
        if (kv0 >= last_lo && kv0 + BLOCK_KV <= first_hi) {
            FA_PRAGMA_UNROLL_N(FA_PV_UNROLL)
            for (int j = 0; j < BLOCK_KV; j++)
                FA_PV_KEY(j, 1)
        } else {
            FA_PRAGMA_UNROLL_N(FA_PV_UNROLL)
            for (int j = 0; j < BLOCK_KV; j++)
                FA_PV_KEY(j, kv0 + j >= lo[i] && kv0 + j < hi[i])
        }
    }

    FA_CHUNK_EPILOGUE(TM, q0 + ty * TM + i, OC, tx + NX * c) /* long rows (rows ty TM + i, chunks tx + NX c) */
    /* total sums: add the partial sums of the NX work-items sharing each row */
    barrier(CLK_LOCAL_MEM_FENCE);
    FA_PRAGMA_UNROLL
    for (int i = 0; i < TM; i++)
        xchg[tx * PT_PITCH + ty * TM + i] = l[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong obase = FA_O_HEAD0;
    barrier(CLK_LOCAL_MEM_FENCE);
    FA_PRAGMA_UNROLL
    for (int i = 0; i < TM; i++) {
        float total = 0.0f;
        FA_PRAGMA_UNROLL
        for (int x = 0; x < NX; x++)
            total += xchg[x * PT_PITCH + ty * TM + i];
        int row = q0 + ty * TM + i;
        if (row >= nrows)
            continue;
#ifdef FA_APPLY_SINKS
        /* m is the row's (every tx holds it), so each work-item rescales its own chunks alike */
        const float4 js = fa_sink_join(FA_ROW_SINK(row), m[i], total, scale_log2);
        m[i] = js.x;
        total = js.y;
        FA_PRAGMA_UNROLL
        for (int c = 0; c < OC; c++)
            acc[i][c] *= js.z;
#endif
        float inv = (total == 0.0f) ? 0.0f : 1.0f / total;
        ulong rbase = fa_qrow(obase, row, seqlen_q, os1, os2);
        FA_PRAGMA_UNROLL
        for (int c = 0; c < OC; c++) {
            int chunk = tx + NX * c;
            if (OC * NX == DV4 || chunk < DV4)
                fa_store_chunk(o, rbase, chunk, acc[i][c] * inv);
        }
        if (has_lse && tx == 0)
            lse[FA_LSE_INDEX(row)] = fa_row_lse(m[i], total, scale);
    }
}
