/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2's forward shaped for a CPU (the cpu family, src/kernels/cpu.c).
 *
 * A work-group is ONE work-item, owning BLOCK_Q query rows of a head column: no barriers and no
 * local memory; the driver runs work-groups on its cores. Every tile is private (the stack: L1/L2),
 * and the query rows lie across the lanes of CPU_VW-float vectors (cl/fa_cpu_vec.cl), NQ vectors
 * for the block's rows, so that no product needs a horizontal sum and the online softmax is
 * elementwise:
 *   - Q is read once, converted to f32 and transposed: qt[c] holds column c of every row;
 *   - a block of BLOCK_KV keys and values is converted to f32 once (kb, vb, row-major);
 *   - S = Q K^T in register tiles of NT vectors x KR keys: per head_dim column c, NT loads of qt[c]
 *     and KR broadcasts of K[j][c], NT * KR multiply-adds;
 *   - the softmax over the block's keys, per lane (row): max, 2^x, sums;
 *   - O += P V in register tiles of NT vectors x DC columns of head_dim: per key, NT loads of P
 *     and DC broadcasts of V[j][c]; O is kept transposed (ot[c]: column c of every row) and
 *     rescaled as its tile is loaded.
 * Blocks some row of the block sees only in part take the masks (a key's visibility per lane);
 * there masked (row, key) pairs keep O as it was rather than adding p = 0 times V, so that a
 * NaN or Inf in V reaches no row that cannot see its key.
 *
 * Defined by the planner (-D): FA_DTYPE, HEAD_DIM, D_PAD (HEAD_DIM rounded up to 4), BLOCK_Q (a
 * multiple of CPU_VW), BLOCK_KV (a multiple of CPU_KR), CPU_VW, CPU_NT (NQ a multiple of it),
 * CPU_KR, CPU_DC, CPU_FMA (fma() is one instruction); the shared features of
 * cl/fa_forward_common.cl (serving, modifiers, masks, chunked long rows).
 */
#define NQ (BLOCK_Q / CPU_VW)
#define DV ((D_PAD + CPU_DC - 1) / CPU_DC * CPU_DC) /* O's and V's columns, padded for the P.V tiles */
#define D4 (D_PAD / 4)
#define FA_ITEM_ROWS BLOCK_Q
#define FA_CPU_UNROLL _Pragma("unroll") /* the register tiles' loops: their arrays become registers */

/* One row of K or V (storage type id, fa_fwd_io.cl's loader chunk) into dst (f32): 16 elements at
 * a time where head_dim allows (fa_cpu_vec.cl), else chunks of 4 with the row's tail. */
#if HEAD_DIM % 16 == 0
#define FA_CPU_ROW(dst, src, row, id, chunk)                                                              \
    for (int c = 0; c < HEAD_DIM / 16; c++)                                                               \
        vstore16(FA_CPU_LD16(id)(src, (row) + 16 * (ulong)c), 0, (dst) + 16 * c);
#else
#define FA_CPU_ROW(dst, src, row, id, chunk)                                                              \
    for (int c = 0; c < D4; c++)                                                                          \
        vstore4(chunk(src, row, c), 0, (dst) + 4 * c);
#endif

/* BLOCK_KV rows of K or V from key kv0 into a private row-major f32 block of `pitch` floats a row;
 * rows past seqlen_k are zero (masked, never read from memory). One loader per tensor: K and V may
 * differ in storage type. */
#define FA_CPU_DEFINE_LOAD(name, T, id, chunk)                                                             \
    inline void name(float *blk, int pitch, __global const T *src, fa_row_map map, int kv0, int seqlen_k) \
    {                                                                                                     \
        for (int j = 0; j < BLOCK_KV; j++) {                                                              \
            float *dst = blk + j * pitch;                                                                 \
            if (kv0 + j < seqlen_k) {                                                                     \
                const ulong row = fa_kv_row(map, kv0 + j);                                                \
                FA_CPU_ROW(dst, src, row, id, chunk)                                                      \
            } else {                                                                                      \
                for (int c = 0; c < D4; c++)                                                              \
                    vstore4((float4)(0.0f), 0, dst + 4 * c);                                              \
            }                                                                                             \
        }                                                                                                 \
    }
FA_CPU_DEFINE_LOAD(fa_cpu_load_k, fa_k_t, FA_K_DTYPE, fa_k_chunk)
FA_CPU_DEFINE_LOAD(fa_cpu_load_v, fa_v_t, FA_V_DTYPE, fa_v_chunk)

/* S = Q K^T for the block: sb[j][n] = scores of key kv0 + j for the rows of vector n, in tiles of
 * CPU_NT vectors x CPU_KR keys. */
inline void fa_cpu_scores(fa_rv *sb, const fa_rv *qt, const float *kb)
{
    for (int g = 0; g < NQ; g += CPU_NT)
        for (int j0 = 0; j0 < BLOCK_KV; j0 += CPU_KR) {
            fa_rv s[CPU_KR][CPU_NT];
            FA_CPU_UNROLL
            for (int jj = 0; jj < CPU_KR; jj++)
                FA_CPU_UNROLL
                for (int n = 0; n < CPU_NT; n++)
                    s[jj][n] = (fa_rv)(0.0f);
            const float *krow = kb + j0 * D_PAD;
            for (int c = 0; c < HEAD_DIM; c++) {
                fa_rv qv[CPU_NT];
                FA_CPU_UNROLL
                for (int n = 0; n < CPU_NT; n++)
                    qv[n] = qt[c * NQ + g + n];
                FA_CPU_UNROLL
                for (int jj = 0; jj < CPU_KR; jj++) {
                    const fa_rv kx = (fa_rv)(krow[jj * D_PAD + c]);
                    FA_CPU_UNROLL
                    for (int n = 0; n < CPU_NT; n++)
                        s[jj][n] = FA_CPU_MAD(qv[n], kx, s[jj][n]);
                }
            }
            FA_CPU_UNROLL
            for (int jj = 0; jj < CPU_KR; jj++)
                FA_CPU_UNROLL
                for (int n = 0; n < CPU_NT; n++)
                    sb[(j0 + jj) * NQ + g + n] = s[jj][n];
        }
}

/* O = O * delta + P V over columns [0, DV): tiles of CPU_NT vectors x CPU_DC columns. `vis` gives
 * the lanes of vector g + n that see key j (all where the whole block is seen). */
#define FA_CPU_PV(vis)                                                                                    \
    for (int g = 0; g < NQ; g += CPU_NT)                                                                  \
        for (int c0 = 0; c0 < DV; c0 += CPU_DC) {                                                         \
            fa_rv a[CPU_DC][CPU_NT];                                                                      \
            FA_CPU_UNROLL                                                                                 \
            for (int cc = 0; cc < CPU_DC; cc++)                                                           \
                FA_CPU_UNROLL                                                                             \
                for (int n = 0; n < CPU_NT; n++)                                                          \
                    a[cc][n] = ot[(c0 + cc) * NQ + g + n] * delta[g + n];                                 \
            for (int j = 0; j < BLOCK_KV; j++) {                                                          \
                const float *vrow = vb + j * DV + c0;                                                     \
                fa_rv pv[CPU_NT];                                                                         \
                fa_ri seen[CPU_NT];                                                                       \
                FA_CPU_UNROLL                                                                             \
                for (int n = 0; n < CPU_NT; n++) {                                                        \
                    pv[n] = sb[j * NQ + g + n];                                                           \
                    seen[n] = vis;                                                                        \
                }                                                                                         \
                FA_CPU_UNROLL                                                                             \
                for (int cc = 0; cc < CPU_DC; cc++) {                                                     \
                    const fa_rv vx = (fa_rv)(vrow[cc]);                                                   \
                    FA_CPU_UNROLL                                                                         \
                    for (int n = 0; n < CPU_NT; n++)                                                      \
                        a[cc][n] = select(a[cc][n], FA_CPU_MAD(pv[n], vx, a[cc][n]), seen[n]);            \
                }                                                                                         \
            }                                                                                             \
            FA_CPU_UNROLL                                                                                 \
            for (int cc = 0; cc < CPU_DC; cc++)                                                           \
                FA_CPU_UNROLL                                                                             \
                for (int n = 0; n < CPU_NT; n++)                                                          \
                    ot[(c0 + cc) * NQ + g + n] = a[cc][n];                                                \
        }

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    fa_rv qt[D_PAD * NQ];       /* Q transposed: qt[c * NQ + n], column c of the rows of vector n */
    fa_rv ot[DV * NQ];          /* O transposed likewise (unnormalised) */
    fa_rv sb[BLOCK_KV * NQ];    /* the block's scores, then P: sb[j * NQ + n] */
    float kb[BLOCK_KV * D_PAD]; /* the K block, f32, row-major */
    float vb[BLOCK_KV * DV];    /* the V block, f32, row-major, columns past D_PAD zero */
    int lo_r[BLOCK_Q], hi_r[BLOCK_Q];

    FA_BLOCK_COORDS
    {
        float *qs = (float *)qt;
        const ulong qbase = FA_Q_HEAD0;
        for (int r = 0; r < BLOCK_Q; r++) {
            const int row = q0 + r;
            for (int c = 0; c < D4; c++) {
                const float4 x =
                    row < nrows ? fa_q_chunk(q, fa_qrow(qbase, row, seqlen_q, qs1, qs2), c) : (float4)(0.0f);
                qs[(4 * c + 0) * BLOCK_Q + r] = x.x;
                qs[(4 * c + 1) * BLOCK_Q + r] = x.y;
                qs[(4 * c + 2) * BLOCK_Q + r] = x.z;
                qs[(4 * c + 3) * BLOCK_Q + r] = x.w;
            }
        }
    }
    for (int e = 0; e < DV * NQ; e++)
        ot[e] = (fa_rv)(0.0f);
    for (int e = 0; e < BLOCK_KV * DV; e++)
        vb[e] = 0.0f; /* columns D_PAD .. DV stay zero */

    FA_MOD_ROWS(BLOCK_Q)
    for (int i = 0; i < BLOCK_Q; i++) {
        FA_ROW_RANGE(q0 + i, &lo_r[i], &hi_r[i]);
        FA_MOD_ROW_INIT(i, q0 + i);
    }
    fa_rv mv[NQ], lv[NQ];
    fa_ri lo[NQ], hi[NQ];
    for (int n = 0; n < NQ; n++) {
        mv[n] = (fa_rv)(-INFINITY);
        lv[n] = (fa_rv)(0.0f);
        lo[n] = FA_RI_LOAD(lo_r + n * CPU_VW);
        hi[n] = FA_RI_LOAD(hi_r + n * CPU_VW);
    }
    /* keys some row of the block sees, and [last_lo, first_hi): keys every row sees */
    int blk_lo, blk_hi, first_hi, last_lo;
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &first_hi, &last_lo, &blk_hi);
    FA_CLIP_KEYS(blk_lo, blk_hi);

    for (int kv0 = blk_lo / BLOCK_KV * BLOCK_KV; kv0 < blk_hi; kv0 += BLOCK_KV) {
        fa_cpu_load_k(kb, D_PAD, k, kmap, kv0, seqlen_k);
        fa_cpu_scores(sb, qt, kb);
        const int whole = kv0 >= last_lo && kv0 + BLOCK_KV <= first_hi;
#if defined(FA_MODS) || defined(FA_MASK)
        {
            float *ss = (float *)sb;
            for (int j = 0; j < BLOCK_KV; j++)
                for (int i = 0; i < BLOCK_Q; i++)
                    ss[j * BLOCK_Q + i] = FA_MOD_SCORE(ss[j * BLOCK_Q + i], i, kv0 + j);
        }
#endif
        /* online softmax on raw scores, base 2, the scale in the exponent (as cl/fa_forward.cl:
         * the difference first) */
        fa_rv delta[NQ];
        for (int n = 0; n < NQ; n++) {
            fa_rv mx = mv[n];
            if (whole) {
                for (int j = 0; j < BLOCK_KV; j++)
                    mx = fa_cpu_max(mx, sb[j * NQ + n]);
            } else {
                for (int j = 0; j < BLOCK_KV; j++) {
                    const fa_ri key = (fa_ri)(kv0 + j);
                    const fa_rv x = select((fa_rv)(-INFINITY), sb[j * NQ + n], key >= lo[n] && key < hi[n]);
                    sb[j * NQ + n] = x;
                    mx = fa_cpu_max(mx, x);
                }
            }
            const fa_rv m_use = select(mx, (fa_rv)(0.0f), mx == (fa_rv)(-INFINITY)); /* rows that saw no key yet */
            delta[n] = fa_cpu_exp2((mv[n] - m_use) * scale_log2);
            fa_rv sum = (fa_rv)(0.0f);
            for (int j = 0; j < BLOCK_KV; j++) {
                const fa_rv p = fa_cpu_exp2((sb[j * NQ + n] - m_use) * scale_log2);
                sb[j * NQ + n] = p;
                sum += p;
            }
            lv[n] = FA_CPU_MAD(lv[n], delta[n], sum);
            mv[n] = mx;
        }

        fa_cpu_load_v(vb, DV, v, vmap, kv0, seqlen_k);
        if (whole) {
            FA_CPU_PV((fa_ri)(-1))
        } else {
            FA_CPU_PV((fa_ri)(kv0 + j) >= lo[g + n] && (fa_ri)(kv0 + j) < hi[g + n])
        }
    }

    /* per row: m, l and O (acc[i][c], chunks of 4 columns) for the shared epilogues */
    float m[BLOCK_Q], l[BLOCK_Q];
    float4 acc[BLOCK_Q][D4];
    {
        const float *os = (const float *)ot;
        for (int n = 0; n < NQ; n++) {
            for (int e = 0; e < CPU_VW; e++) {
                m[n * CPU_VW + e] = ((const float *)mv)[n * CPU_VW + e];
                l[n * CPU_VW + e] = ((const float *)lv)[n * CPU_VW + e];
            }
        }
        for (int i = 0; i < BLOCK_Q; i++)
            for (int c = 0; c < D4; c++)
                acc[i][c] = (float4)(os[(4 * c + 0) * BLOCK_Q + i], os[(4 * c + 1) * BLOCK_Q + i],
                                     os[(4 * c + 2) * BLOCK_Q + i], os[(4 * c + 3) * BLOCK_Q + i]);
    }
    FA_CHUNK_EPILOGUE(BLOCK_Q, q0 + i, D4, c) /* long rows: merged with the earlier chunks */
    const ulong obase = FA_O_HEAD0;
    for (int i = 0; i < BLOCK_Q; i++) {
        const int row = q0 + i;
        if (row >= nrows)
            break;
#ifdef FA_APPLY_SINKS
        const float4 js = fa_sink_join(FA_ROW_SINK(row), m[i], l[i], scale_log2);
        m[i] = js.x;
        l[i] = js.y;
        for (int c = 0; c < D4; c++)
            acc[i][c] *= js.z;
#endif
        const float inv = l[i] == 0.0f ? 0.0f : 1.0f / l[i];
        const ulong rbase = fa_qrow(obase, row, seqlen_q, os1, os2);
        for (int c = 0; c < D4; c++)
            fa_store_chunk(o, rbase, c, acc[i][c] * inv);
        if (has_lse)
            lse[FA_LSE_INDEX(row)] = fa_row_lse(m[i], l[i], scale);
    }
}
