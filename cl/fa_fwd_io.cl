/* SPDX-License-Identifier: Apache-2.0 */
/* The portable forward's loads and stores of 4 elements of a row, head_dim tails included. */
/* Elements 4c .. 4c+3 of one row of q or k (width HEAD_DIM) or v (HEAD_DIM_V), zero beyond the
 * width (q8_0 has no tails). */
#define FA_CHUNK_TAIL(id, width)                                                                          \
    float4 x = (float4)(0.0f);                                                                            \
    int k = 4 * c;                                                                                        \
    if (k + 0 < (width)) x.x = FA_LD1(id)(p, row_base + k + 0);                                           \
    if (k + 1 < (width)) x.y = FA_LD1(id)(p, row_base + k + 1);                                           \
    if (k + 2 < (width)) x.z = FA_LD1(id)(p, row_base + k + 2);                                           \
    if (k + 3 < (width)) x.w = FA_LD1(id)(p, row_base + k + 3);                                           \
    return x;
#if HEAD_DIM % 4 == 0
#define FA_CHUNK_BODY(id) return FA_LD4(id)(p, row_base + 4 * (ulong)c);
#else
#define FA_CHUNK_BODY(id) FA_CHUNK_TAIL(id, HEAD_DIM)
#endif
#if HEAD_DIM_V % 4 == 0
#define FA_CHUNK_BODY_V(id) return FA_LD4(id)(p, row_base + 4 * (ulong)c);
#else
#define FA_CHUNK_BODY_V(id) FA_CHUNK_TAIL(id, HEAD_DIM_V)
#endif
inline float4 fa_q_chunk(__global const fa_q_t *p, ulong row_base, int c) { FA_CHUNK_BODY(FA_Q_DTYPE) }
inline float4 fa_k_chunk(__global const fa_k_t *p, ulong row_base, int c) { FA_CHUNK_BODY(FA_K_DTYPE) }
inline float4 fa_v_chunk(__global const fa_v_t *p, ulong row_base, int c) { FA_CHUNK_BODY_V(FA_V_DTYPE) }

/* fp8 K/V: a chunk of a K or V row times the rows' descale factor (the map's), one float32
 * rounding, as it is loaded; builds without a factor leave the chunk alone */
#if defined(FA_K_DESCALE) || defined(FA_V_DESCALE)
#define FA_DESCALED(x, map) ((x) * (map).scale)
#else
#define FA_DESCALED(x, map) (x)
#endif

/* One and four output elements in the output's storage (o, or FA_SPLIT's fp32 partials). */
#define fa_ostore1 FA_ST1(FA_OUT_DTYPE)
#define fa_ostore4 FA_ST4(FA_OUT_DTYPE)

/* Elements 4c .. 4c+3 of a row of o (width HEAD_DIM_V). */
inline void fa_store_chunk(__global fa_out_t *p, ulong row_base, int c, float4 x)
{
#if HEAD_DIM_V % 4 == 0
    fa_ostore4(p, row_base + 4 * (ulong)c, x);
#else
    int k = 4 * c;
    if (k + 0 < HEAD_DIM_V) fa_ostore1(p, row_base + k + 0, x.x);
    if (k + 1 < HEAD_DIM_V) fa_ostore1(p, row_base + k + 1, x.y);
    if (k + 2 < HEAD_DIM_V) fa_ostore1(p, row_base + k + 2, x.z);
    if (k + 3 < HEAD_DIM_V) fa_ostore1(p, row_base + k + 3, x.w);
#endif
}
