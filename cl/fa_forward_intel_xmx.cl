/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2 forward on Intel's matrix engines (XMX): S = Q K^T and O += P V by the sub-group
 * matrix multiply-accumulate of cl/fa_xmx.cl (intel_sub_group_{f16_f16,bf16_bf16}_matrix_mad_k16:
 * acc (8 x FA_XMX_SG, fp32) += A (8 x 16) B (16 x FA_XMX_SG)), f16 or bf16 storage.
 *
 * A work-group is NR x NC sub-groups of FA_XMX_SG work-items. Sub-group (r, c) owns the 8 query rows
 * 8r .. 8r + 7 of the block (the products' M = 8) and, of each key block, the key tiles c, c + NC, ..
 * (FA_XMX_SG keys each) for S and the O column tiles c, c + NC, .. for P V. In the extension's result
 * layout work-item n of a sub-group holds column n of the tile: component m of its float8 is row m.
 * Q, K and V sit in local memory as 16-bit values (V transposed, so that a work-item's B column is
 * a row of the tile); the scores pass through local memory to one work-item per row (the "row
 * owner"), which applies the masks and modifiers of the portable units (cl/fa_fwd_masks.cl), keeps
 * the row's running maximum and sum, writes P in 16 bits for the second product and the factor
 * that rescales the row's O accumulators, which stay in the sub-groups' registers. The matrix unit
 * multiplies whole 8-row tiles: a NaN/Inf in V reaches the rows of the tile that do not see its key
 * (0 * Inf), as in the NVIDIA tensor-core kernels (docs/guarantees.md).
 *
 * Defined by the planner (-D): FA_DTYPE (1 f16, 2 bf16), HEAD_DIM, D_PAD (a multiple of
 * FA_XMX_SG * NC and of 16), BLOCK_Q (8 NR), BLOCK_KV (a multiple of FA_XMX_SG * NC and 16),
 * FA_XMX_SG, XMX_NC; FA_XMX_EMULATE where the device has no XMX (its emulation needs every work-item
 * at every product: the products' loops are uniform over the work-group). */
#define NC XMX_NC
#define NR (BLOCK_Q / 8)
#define WG (NR * NC * FA_XMX_SG)
#define QK_PITCH (D_PAD + 8)    /* Q and K rows in the tiles, 16-bit elements (even: 32-bit operand loads) */
#define VT_PITCH (BLOCK_KV + 8) /* V^T rows, P rows */
#define S_PITCH (BLOCK_KV + 1)  /* score rows (floats): row owners read across banks */
#define KEY_TILES (BLOCK_KV / (FA_XMX_SG * NC)) /* per sub-group and block */
#define O_TILES (D_PAD / (FA_XMX_SG * NC))      /* per sub-group */
#define KV_ELEMS (BLOCK_KV * QK_PITCH > D_PAD * VT_PITCH ? BLOCK_KV * QK_PITCH : D_PAD * VT_PITCH)
#define FA_ITEM_ROWS 1 /* long rows' state slots: one per work-item (row owners use theirs) */

#if FA_DTYPE == 1
#define FA_XMX_MAD intel_sub_group_f16_f16_matrix_mad_k16
#elif FA_DTYPE == 2
#define FA_XMX_MAD intel_sub_group_bf16_bf16_matrix_mad_k16
#else
#error "intel-xmx: f16 or bf16 storage only"
#endif
#if D_PAD % (FA_XMX_SG * NC) || D_PAD % 16 || BLOCK_KV % (FA_XMX_SG * NC) || BLOCK_KV % 16 || BLOCK_Q % 8
#error "intel-xmx: D_PAD and BLOCK_KV multiples of FA_XMX_SG * XMX_NC and 16, BLOCK_Q of 8"
#endif

/* 4 values as the 16-bit storage type's bits (exact: they were loaded from it) at tile[i .. i + 3] */
inline void fa_xmx_put4(__local ushort *tile, int i, float4 x)
{
#if FA_DTYPE == 1
    vstore_half4_rte(x, 0, (__local half *)(tile + i));
#else
    vstore4((ushort4)(fa_f32_to_bf16(x.x), fa_f32_to_bf16(x.y), fa_f32_to_bf16(x.z), fa_f32_to_bf16(x.w)), 0, tile + i);
#endif
}
inline void fa_xmx_put1(__local ushort *tile, int i, float x)
{
#if FA_DTYPE == 1
    vstore_half_rte(x, 0, (__local half *)(tile + i));
#else
    tile[i] = fa_f32_to_bf16(x);
#endif
}

/* Rows [first, first + count) of K (map) or of the head column's Q rows (fa_qrow) as rows of a
 * 16-bit tile, zero past `limit` and past the row width up to D_PAD. */
inline void fa_xmx_load_k(__local ushort *tile, __global const fa_k_t *src, fa_row_map map, int first, int limit,
                          int lid)
{
    for (int e = lid; e < BLOCK_KV * (D_PAD / 4); e += WG) {
        const int j = e / (D_PAD / 4), c = e % (D_PAD / 4);
        float4 x = (float4)(0.0f);
        if (first + j < limit && c < DK4)
            x = fa_k_chunk(src, fa_kv_row(map, first + j), c);
        fa_xmx_put4(tile, j * QK_PITCH + 4 * c, x);
    }
}

inline void fa_xmx_load_q(__local ushort *tile, __global const fa_q_t *src, ulong base, long s1, long s2, int seqlen_q,
                          int first, int limit, int lid)
{
    for (int e = lid; e < BLOCK_Q * (D_PAD / 4); e += WG) {
        const int j = e / (D_PAD / 4), c = e % (D_PAD / 4);
        float4 x = (float4)(0.0f);
        if (first + j < limit && c < DK4)
            x = fa_q_chunk(src, fa_qrow(base, first + j, seqlen_q, s1, s2), c);
        fa_xmx_put4(tile, j * QK_PITCH + 4 * c, x);
    }
}

/* V's rows [first, first + BLOCK_KV) transposed: tile[col * VT_PITCH + key], zero past `limit` and
 * past HEAD_DIM. */
inline void fa_xmx_load_vt(__local ushort *tile, __global const fa_v_t *src, fa_row_map map, int first, int limit,
                           int lid)
{
    for (int e = lid; e < BLOCK_KV * (D_PAD / 4); e += WG) {
        const int j = e % BLOCK_KV, c = e / BLOCK_KV;
        float4 x = (float4)(0.0f);
        if (first + j < limit && c < DV4)
            x = fa_v_chunk(src, fa_kv_row(map, first + j), c);
        fa_xmx_put1(tile, (4 * c + 0) * VT_PITCH + j, x.x);
        fa_xmx_put1(tile, (4 * c + 1) * VT_PITCH + j, x.y);
        fa_xmx_put1(tile, (4 * c + 2) * VT_PITCH + j, x.z);
        fa_xmx_put1(tile, (4 * c + 3) * VT_PITCH + j, x.w);
    }
}

/* The A operand (8 rows x 16 columns from row0, k0 of a row-major 16-bit tile) as the extension lays
 * it out: sub-group 8, component m of work-item l holds columns 2l, 2l + 1 of row m; sub-group 16,
 * column l of row m. */
#if FA_XMX_SG == 8
typedef int8 fa_xmx_a_t;
inline int8 fa_xmx_a(__local const ushort *tile, int pitch, int row0, int k0, int lane)
{
    __local const uint *p = (__local const uint *)(tile + row0 * pitch + k0) + lane;
    const int w = pitch / 2;
    return as_int8((uint8)(p[0], p[w], p[2 * w], p[3 * w], p[4 * w], p[5 * w], p[6 * w], p[7 * w]));
}
#else
typedef short8 fa_xmx_a_t;
inline short8 fa_xmx_a(__local const ushort *tile, int pitch, int row0, int k0, int lane)
{
    __local const ushort *p = tile + row0 * pitch + k0 + lane;
    return as_short8((ushort8)(p[0], p[pitch], p[2 * pitch], p[3 * pitch], p[4 * pitch], p[5 * pitch], p[6 * pitch],
                               p[7 * pitch]));
}
#endif

/* The B operand (16 rows k0 .. k0 + 15 x this work-item's column): its column is row `row` of the
 * tile (K's rows for S = Q K^T, V^T's for P V), two 16-bit values an int. */
inline int8 fa_xmx_b(__local const ushort *tile, int pitch, int row, int k0)
{
    return as_int8(vload8(0, (__local const uint *)(tile + row * pitch + k0)));
}

/* body for each element x[i] of this work-item's O tiles (row `row`, column `col`) inside the
 * rows and the row width; x[i] written back to the accumulators afterwards */
#define FA_XMX_EACH_O(body)                                                                               \
    FA_PRAGMA_UNROLL                                                                                      \
    for (int u = 0; u < O_TILES; u++) {                                                                   \
        const int col = (sc + NC * u) * FA_XMX_SG + lane;                                                 \
        float x[8];                                                                                       \
        vstore8(acc[u], 0, x);                                                                            \
        FA_PRAGMA_UNROLL                                                                                  \
        for (int i = 0; i < 8; i++) {                                                                     \
            const int row = q0 + r8 + i;                                                                  \
            if (row < nrows && col < HEAD_DIM_V) {                                                        \
                body                                                                                      \
            }                                                                                             \
        }                                                                                                 \
        acc[u] = vload8(0, x);                                                                            \
    }

__kernel FA_XMX_REQD_SG __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    __local ushort q_tile[BLOCK_Q * QK_PITCH];
    __local ushort kv_tile[KV_ELEMS];            /* K rows, then V^T */
    __local float s_tile[BLOCK_Q * S_PITCH];     /* raw scores */
    __local ushort p_tile[BLOCK_Q * VT_PITCH];   /* P in the storage type */
    __local float2 row_f[BLOCK_Q];               /* per row: O's rescale factor (the chunks' merge: both) */
    FA_XMX_DECL(WG)

    const int lid = (int)get_local_id(0);
    const int lane = lid % FA_XMX_SG, sg = lid / FA_XMX_SG;
    const int r8 = sg / NC * 8, sc = sg % NC; /* the sub-group's first row, its key / O column tiles */
    FA_BLOCK_COORDS
    fa_xmx_load_q(q_tile, q, FA_Q_HEAD0, qs1, qs2, seqlen_q, q0, nrows, lid);

    /* the row owner's state: row q0 + lid for lid < BLOCK_Q */
    const int owner = lid < BLOCK_Q;
    const int own_row = q0 + (owner ? lid : 0);
    float m = -INFINITY, l = 0.0f;
    int lo, hi;
    FA_MOD_ROWS(1)
    FA_ROW_RANGE(own_row, &lo, &hi);
    FA_MOD_ROW_INIT(0, own_row);

    float8 acc[O_TILES];
    FA_PRAGMA_UNROLL
    for (int u = 0; u < O_TILES; u++)
        acc[u] = (float8)(0.0f);

    int blk_lo, blk_hi, first_hi, last_lo;
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &first_hi, &last_lo, &blk_hi);
    FA_CLIP_KEYS(blk_lo, blk_hi);
    (void)first_hi, (void)last_lo;

    for (int kv0 = blk_lo / BLOCK_KV * BLOCK_KV; kv0 < blk_hi; kv0 += BLOCK_KV) {
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous V and P are consumed (and Q loaded, first time) */
        fa_xmx_load_k(kv_tile, k, kmap, kv0, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);

        /* S = Q K^T: the sub-group's 8 rows against its key tiles, 16 of head_dim a product */
        for (int t = 0; t < KEY_TILES; t++) {
            const int key = (sc + NC * t) * FA_XMX_SG + lane;
            float8 s = (float8)(0.0f);
            for (int k0 = 0; k0 < D_PAD; k0 += 16)
                s = FA_XMX_MAD(fa_xmx_a(q_tile, QK_PITCH, r8, k0, lane), fa_xmx_b(kv_tile, QK_PITCH, key, k0), s FA_XMX_ARG);
            float sv[8];
            vstore8(s, 0, sv);
            FA_PRAGMA_UNROLL
            for (int i = 0; i < 8; i++)
                s_tile[(r8 + i) * S_PITCH + key] = sv[i];
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* K consumed, the scores published */
        fa_xmx_load_vt(kv_tile, v, vmap, kv0, seqlen_k, lid);

        /* the row owners: masks and modifiers, the online softmax, P and O's factor */
        if (owner) {
            __local float *srow = s_tile + lid * S_PITCH;
            float mx = m;
            for (int j = 0; j < BLOCK_KV; j++) {
                const int key = kv0 + j;
                const float y = FA_MOD_SCORE(srow[j], 0, key);
                const float x = select(-INFINITY, y, (int)(key >= lo && key < hi));
                srow[j] = x;
                mx = fmax(mx, x);
            }
            const float m_use = mx == -INFINITY ? 0.0f : mx;
            const float delta = FA_EXP2((m - m_use) * scale_log2); /* as in cl/fa_forward.cl */
            float sum = 0.0f;
            for (int j = 0; j < BLOCK_KV; j++) {
                const float p = FA_EXP2((srow[j] - m_use) * scale_log2);
                fa_xmx_put1(p_tile, lid * VT_PITCH + j, p);
                sum += p;
            }
            l = mad(l, delta, sum);
            m = mx;
            row_f[lid] = (float2)(delta, 0.0f);
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* V^T, P and the factors published */

        /* O = O delta + P V: the sub-group's rows, its O column tiles, 16 keys a product */
        float dv[8];
        FA_PRAGMA_UNROLL
        for (int i = 0; i < 8; i++)
            dv[i] = row_f[r8 + i].x;
        const float8 delta8 = vload8(0, dv);
        FA_PRAGMA_UNROLL
        for (int u = 0; u < O_TILES; u++)
            acc[u] *= delta8;
        for (int k0 = 0; k0 < BLOCK_KV; k0 += 16) {
            const fa_xmx_a_t a = fa_xmx_a(p_tile, VT_PITCH, r8, k0, lane);
            FA_PRAGMA_UNROLL
            for (int u = 0; u < O_TILES; u++)
                acc[u] = FA_XMX_MAD(a, fa_xmx_b(kv_tile, VT_PITCH, (sc + NC * u) * FA_XMX_SG + lane, k0), acc[u] FA_XMX_ARG);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* every factor read */

#ifdef FA_KV_CHUNKED
    /* long rows: the row owners merge (m, l) with the earlier chunks' (cl/fa_fwd_chunks.cl), each
     * work-item its elements of O with the factors */
    const int first_chunk = kv_begin == 0, last_chunk = kv_end >= seqlen_k_cap;
    if (owner)
        row_f[lid] = fa_chunk_merge(FA_CHUNK_SLOT(0), first_chunk, last_chunk, &m, &l, scale_log2);
    barrier(CLK_LOCAL_MEM_FENCE);
    FA_XMX_EACH_O(x[i] = FA_CHUNK_MERGE(row, col, first_chunk, last_chunk, row_f[r8 + i], x[i]);)
    if (!last_chunk)
        return;
    barrier(CLK_LOCAL_MEM_FENCE); /* the merge factors read */
#endif

    /* the row owners: the sinks, 1 / l and the LSE; then every work-item stores its elements */
    if (owner) {
        float total = l;
        float f = 1.0f;
#ifdef FA_APPLY_SINKS
        const float4 js = fa_sink_join(FA_ROW_SINK(own_row), m, total, scale_log2);
        m = js.x;
        total = js.y;
        f = js.z;
#endif
        row_f[lid] = (float2)(total == 0.0f ? 0.0f : f / total, 0.0f);
        if (has_lse && own_row < nrows)
            lse[FA_LSE_INDEX(own_row)] = fa_row_lse(m, total, scale);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const ulong obase = FA_O_HEAD0;
    FA_XMX_EACH_O(fa_ostore1(o, fa_qrow(obase, row, seqlen_q, os1, os2) + (ulong)col, x[i] * row_f[r8 + i].x);)
}
