/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's q8_0 K/V (nvidia-mma only): the synchronous loader, and with cp.async
 * the staging of raw rows, their dequantisation into tiles, and the fragments read straight from the
 * stages (FA_Q8_FRAGS); and fp8 K/V's synchronous loaders. */
#ifdef FA_KV_FP8
/* rows [first, first + count) of an fp8 K or V (storage type id) into a local tile of FA_DTYPE
 * values, zero past `limit` and past HEAD_DIM: 8 elements a step, each the code's exact value
 * (cl/fa_common.cl) times the rows' descale factor (1 without one), rounded once to FA_DTYPE */
#define FA_DEFINE_TILE_FP8(name, id)                                                                      \
    inline void name(__local ushort *tile, __global const uchar *src, fa_row_map map, int first, int count, \
                     int limit, int lid)                                                                  \
    {                                                                                                     \
        for (int e = lid; e < count * CH; e += WG) {                                                      \
            const int r = e / CH, c = e % CH;                                                             \
            uint4 x = (uint4)(0);                                                                         \
            if (first + r < limit && 8 * c < HEAD_DIM) {                                                  \
                __global const uchar *p = src + fa_kv_row(map, first + r) + 8 * c;                         \
                float4 y0, y1;                                                                            \
                if (HEAD_DIM % 8 == 0) { /* two 4-byte loads (the rows need only byte alignment) */       \
                    y0 = FA_LD4(id)(p, 0) * map.scale;                                                    \
                    y1 = FA_LD4(id)(p, 4) * map.scale;                                                    \
                } else {                                                                                  \
                    float y[8];                                                                           \
                    for (int i = 0; i < 8; i++)                                                           \
                        y[i] = 8 * c + i < HEAD_DIM ? FA_LD1(id)(p, i) * map.scale : 0.0f;                \
                    y0 = (float4)(y[0], y[1], y[2], y[3]);                                                \
                    y1 = (float4)(y[4], y[5], y[6], y[7]);                                                \
                }                                                                                         \
                x = (uint4)(fa_pack2(y0.x, y0.y), fa_pack2(y0.z, y0.w), fa_pack2(y1.x, y1.y), fa_pack2(y1.z, y1.w)); \
            }                                                                                             \
            *(__local uint4 *)(tile + r * ROW + 8 * c) = x;                                               \
        }                                                                                                 \
    }
#if FA_K_DTYPE >= 4
FA_DEFINE_TILE_FP8(fa_load_k_fp8, FA_K_DTYPE)
#endif
#if FA_V_DTYPE >= 4
FA_DEFINE_TILE_FP8(fa_load_v_fp8, FA_V_DTYPE)
#endif
#endif
#ifdef FA_KV_Q8
/* rows [first, first + count) of a q8_0 K or V into a local tile of FA_DTYPE values, zero past
 * `limit`: 8 elements a step (one block's scale, 8 of its int8 values), each d * q_i rounded once */
inline void fa_load_tile_q8(__local ushort *tile, __global const uchar *src, fa_row_map map, int first, int count,
                            int limit, int lid)
{
    for (int e = lid; e < count * CH; e += WG) {
        int r = e / CH, c = e % CH;
        uint4 x = (uint4)(0);
        if (first + r < limit && 8 * c < HEAD_DIM) {
            const ulong at = fa_kv_row(map, first + r) + 8 * (ulong)c; /* an element index, 8-aligned */
            __global const uchar *blk = src + (at >> 5) * 34;
            const float d = vload_half(0, (__global const half *)blk);
            const float8 q = convert_float8(as_char8(vload4(0, (__global const ushort *)(blk + 2 + (at & 31)))));
            x = (uint4)(fa_pack2(d * q.s0, d * q.s1), fa_pack2(d * q.s2, d * q.s3), fa_pack2(d * q.s4, d * q.s5),
                        fa_pack2(d * q.s6, d * q.s7));
        }
        *(__local uint4 *)(tile + r * ROW + 8 * c) = x;
    }
}
#endif

#ifdef FA_KV_STAGED
/* q8_0 or fp8 K/V (FA_STAGE_COPY = 4, 8 or 16: the planner found every row's bytes that aligned):
 * a block's raw rows are copied asynchronously into a staging ring (NBUF stages), then dequantised
 * into the one K and one V tile right before they are used. STAGE_AT(e): the byte of element
 * index e (a row's first: q8_0's are whole blocks apart, 32 elements in 34 bytes; fp8's a byte each) */
#ifdef FA_KV_Q8
#define STAGE_RB (HEAD_DIM / 32 * 34) /* bytes of a staged row */
#define STAGE_BYTE(e) ((e) / 32 * 34)
#else
#define STAGE_RB HEAD_DIM
#define STAGE_BYTE(e) (e)
#endif
#define KV_STAGE (BLOCK_KV * STAGE_RB)              /* bytes of one block's rows */
#define STAGE_CHUNKS (STAGE_RB / FA_STAGE_COPY)     /* copies per row */
inline __attribute__((always_inline)) void fa_load_kv_staged(__local uchar *ks, __local uchar *vs,
                                                             __global const uchar *kg, __global const uchar *vg,
                                                             fa_row_map kmap, fa_row_map vmap, int first, int limit,
                                                             int lid)
{
#if WG >= STAGE_CHUNKS
#ifdef FA_PAGED
    const int one_page = first / FA_PAGE_SIZE == (first + BLOCK_KV - 1) / FA_PAGE_SIZE;
#else
    const int one_page = 1;
#endif
    if (first + BLOCK_KV <= limit) {
        /* every row is in the sequence: the first (WG / STAGE_CHUNKS) * STAGE_CHUNKS work-items keep
         * one column of copies each and step by rows, where the general loop below divides,
         * multiplies and reads the page table per copy */
        const int per = WG / STAGE_CHUNKS; /* rows a pass */
        if (lid < per * STAGE_CHUNKS && !one_page) {
            /* rows in several pages: each row's place from the page table, one read a row (the
             * general loop's read a copy made q8_0 in pages of 16 1.7x contiguous q8_0 on an H100) */
            const int r0 = lid / STAGE_CHUNKS, c = lid % STAGE_CHUNKS;
            FA_PRAGMA_UNROLL
            for (int i = 0; i < (BLOCK_KV + per - 1) / per; i++) {
                const int r = r0 + i * per;
                if (BLOCK_KV % per == 0 || r < BLOCK_KV) {
                    fa_cp_async_small(ks + r * STAGE_RB + c * FA_STAGE_COPY,
                                      kg + STAGE_BYTE(fa_kv_row(kmap, first + r)) + c * FA_STAGE_COPY, 1);
                    fa_cp_async_small(vs + r * STAGE_RB + c * FA_STAGE_COPY,
                                      vg + STAGE_BYTE(fa_kv_row(vmap, first + r)) + c * FA_STAGE_COPY, 1);
                }
            }
        } else if (lid < per * STAGE_CHUNKS) { /* in one page: rows a stride apart */
            const int r0 = lid / STAGE_CHUNKS, c = lid % STAGE_CHUNKS;
            const long kstep = STAGE_BYTE(kmap.stride) * per, vstep = STAGE_BYTE(vmap.stride) * per;
            __global const uchar *kp = kg + STAGE_BYTE(fa_kv_row(kmap, first + r0)) + c * FA_STAGE_COPY;
            __global const uchar *vp = vg + STAGE_BYTE(fa_kv_row(vmap, first + r0)) + c * FA_STAGE_COPY;
            FA_PRAGMA_UNROLL
            for (int i = 0; i < (BLOCK_KV + per - 1) / per; i++)
                if (BLOCK_KV % per == 0 || r0 + i * per < BLOCK_KV) {
                    fa_cp_async_small(ks + (r0 + i * per) * STAGE_RB + c * FA_STAGE_COPY, kp + i * kstep, 1);
                    fa_cp_async_small(vs + (r0 + i * per) * STAGE_RB + c * FA_STAGE_COPY, vp + i * vstep, 1);
                }
        }
        return;
    }
#endif
    for (int e = lid; e < BLOCK_KV * STAGE_CHUNKS; e += WG) {
        const int r = e / STAGE_CHUNKS, c = e % STAGE_CHUNKS;
        const int valid = first + r < limit;
        /* rows past the limit: zeros, from an in-bounds address (the view's first row) */
        const ulong ko = STAGE_BYTE(valid ? fa_kv_row(kmap, first + r) : kmap.base) + (ulong)(c * FA_STAGE_COPY);
        const ulong vo = STAGE_BYTE(valid ? fa_kv_row(vmap, first + r) : vmap.base) + (ulong)(c * FA_STAGE_COPY);
        fa_cp_async_small(ks + r * STAGE_RB + c * FA_STAGE_COPY, kg + ko, valid);
        fa_cp_async_small(vs + r * STAGE_RB + c * FA_STAGE_COPY, vg + vo, valid);
    }
}
#endif

#if defined(FA_KV_STAGED) && defined(FA_KV_FP8)
/* Four staged fp8 codes (a word, lowest byte first) as FA_DTYPE values, two registers of two, by
 * bit operations: each code's exact value (cl/fa_common.cl), the descale factor left out (the
 * scores and O take it: FA_FP8_K_FACTOR, FA_FP8_V_FACTOR). e5m2 is a binary16's top byte; e4m3's
 * sign and 7 exponent-mantissa bits shifted into a binary16's read 2^-8 of the value (exponent
 * bias 15 for 7; a subnormal's mantissa lands as a binary16 subnormal's), exactly: the 2^8 goes
 * with the descale factor into the scores and O (FA_FP8_POW), where a product a pair of codes and
 * its NaN selects cost e4m3 decoding twice e5m2's time on an H100; its NaN codes S.1111.111 become
 * NaN by integer operations (the low 7 bits plus one carry into bit 7: that half's exponent and
 * top mantissa bits set). bf16: through float32, exact. */
inline uint2 fa_fp8x4_to_dtype(uint w, const int id)
{
    /* the bytes into the high halves of two words' halves: (b0, b1) and (b2, b3), b << 8 each */
    const uint lo = (w << 8 & 0xff00u) | (w << 16 & 0xff000000u), hi = (w >> 8 & 0xff00u) | (w & 0xff000000u);
#if FA_DTYPE == 1
    if (id == 5)
        return (uint2)(lo, hi);
    uint2 r;
    FA_PRAGMA_UNROLL
    for (int k = 0; k < 2; k++) {
        const uint x = k ? hi : lo;
        const uint nan = ((x & 0x7f007f00u) + 0x01000100u) & 0x80008000u; /* 0x8000 where the code is NaN */
        const uint y = (x & 0x80008000u) | (x >> 1 & 0x3f803f80u) | (nan - (nan >> 6)); /* | 0x7e00 */
        if (k)
            r.y = y;
        else
            r.x = y;
    }
    return r;
#else
    (void)lo, (void)hi;
    float4 f;
    if (id == 5)
        f = (float4)(fa_e5m2_to_f32(w & 0xffu), fa_e5m2_to_f32(w >> 8 & 0xffu), fa_e5m2_to_f32(w >> 16 & 0xffu),
                     fa_e5m2_to_f32(w >> 24));
    else
        f = (float4)(fa_e4m3_to_f32(w & 0xffu), fa_e4m3_to_f32(w >> 8 & 0xffu), fa_e4m3_to_f32(w >> 16 & 0xffu),
                     fa_e4m3_to_f32(w >> 24));
    /* every fp8 value is a bf16 (3 mantissa bits at most): the top halves, exactly */
    return (uint2)((as_uint(f.x) >> 16) | (as_uint(f.y) & 0xffff0000u), (as_uint(f.z) >> 16) | (as_uint(f.w) & 0xffff0000u));
#endif
}

/* one staged block of fp8 rows (storage type id) into a local tile of FA_DTYPE values: 8 codes a
 * step (two words of the stage, a 16-byte chunk of the tile), zeros past HEAD_DIM up to D_PAD */
inline __attribute__((always_inline)) void fa_dequant_fp8(__local ushort *tile, __local const uchar *stage, const int id,
                                                          int lid)
{
    FA_PRAGMA_UNROLL
    for (int i = 0; i < (BLOCK_KV * CH + WG - 1) / WG; i++) {
        const int e = lid + i * WG;
        if ((BLOCK_KV * CH) % WG == 0 || e < BLOCK_KV * CH) {
            const int r = e / CH, c = e % CH;
            uint4 v = (uint4)(0);
            if (HEAD_DIM == D_PAD || 8 * c < HEAD_DIM) {
                const uint2 w = *(__local const uint2 *)(stage + r * STAGE_RB + 8 * c);
                const uint2 a = fa_fp8x4_to_dtype(w.x, id), b = fa_fp8x4_to_dtype(w.y, id);
                v = (uint4)(a.x, a.y, b.x, b.y);
            }
            *(__local uint4 *)(tile + r * ROW + 8 * c) = v;
        }
    }
}

/* The descale factors where the tiles hold the codes' values: K's times every score of the block
 * (before the mask and the softmax), V's times O after the key loop (linear: slices and chunks merge
 * the same) */
/* FA_FP8_POW(id): what a tile of storage type id holds, times it, is the codes' values (e4m3 in
 * f16 tiles: 2^8) */
#define FA_FP8_POW(id) ((FA_DTYPE == 1 && (id) == 4) ? 256.0f : 1.0f)
#if defined(FA_K_DESCALE) || (FA_DTYPE == 1 && FA_K_DTYPE == 4)
#define FA_FP8_K_FACTOR                          \
    FA_PRAGMA_UNROLL                             \
    for (int mt = 0; mt < MT; mt++)              \
        FA_PRAGMA_UNROLL                         \
        for (int nt = 0; nt < NT; nt++)          \
            s[mt][nt] *= kmap.scale * FA_FP8_POW(FA_K_DTYPE);
#else
#define FA_FP8_K_FACTOR
#endif
#if defined(FA_V_DESCALE) || (FA_DTYPE == 1 && FA_V_DTYPE == 4)
#define FA_FP8_V_FACTOR                          \
    FA_PRAGMA_UNROLL                             \
    for (int mt = 0; mt < MT; mt++)              \
        FA_PRAGMA_UNROLL                         \
        for (int dt = 0; dt < DT; dt++)          \
            acc[mt][dt] *= vmap.scale * FA_FP8_POW(FA_V_DTYPE);
#else
#define FA_FP8_V_FACTOR
#endif
#else /* no staged fp8: the factors are in the tiles, or there are none */
#define FA_FP8_K_FACTOR
#define FA_FP8_V_FACTOR
#endif

#if defined(FA_KV_STAGED) && defined(FA_KV_Q8)
/* one staged block of q8_0 rows into a local tile of FA_DTYPE values. A work-item takes whole
 * q8_0 blocks (a scale, 32 values: 4 chunks of the tile) at a constant step, every load issued
 * before the conversions (a chunk of 8 values per step, index arithmetic and a local-memory round
 * trip each, cost decoding as much as the rest of the kernel on an H200: commit 1f31e42). A block's values
 * start 2 bytes past its scale: 4-byte aligned in the odd blocks of a row, 2 off in the even ones,
 * which take 9 aligned words (never a stage's last bytes: the rows are 4-byte multiples) */
#if STAGE_RB % 4 != 0
#error "the staged q8_0 rows must be 4-byte aligned"
#endif
#if D_PAD != HEAD_DIM
#error "q8_0 K/V: head_dim a multiple of 32, unpadded"
#endif
#define Q8_BLOCKS (HEAD_DIM / 32)            /* q8_0 blocks a row */
#define Q8_TILE_BLOCKS (BLOCK_KV * Q8_BLOCKS) /* a tile's */
inline __attribute__((always_inline)) void fa_dequant_q8(__local ushort *tile, __local const uchar *stage, int lid)
{
    FA_PRAGMA_UNROLL
    for (int i = 0; i < (Q8_TILE_BLOCKS + WG - 1) / WG; i++) {
        const int e = lid + i * WG;
        if (Q8_TILE_BLOCKS % WG == 0 || e < Q8_TILE_BLOCKS) {
            const int r = e / Q8_BLOCKS, b = e % Q8_BLOCKS, at = r * STAGE_RB + b * 34;
            __local const uint *w = (__local const uint *)(stage + ((at + 2) & ~3));
            const int odd2 = (at + 2) & 2; /* the values 2 bytes off the word */
            uint x[9];
            FA_PRAGMA_UNROLL
            for (int k = 0; k < 8; k++)
                x[k] = w[k];
            x[8] = odd2 ? w[8] : 0u;
#if FA_DTYPE == 1
            const uint d = *(__local const ushort *)(stage + at), d2 = d | d << 16;
#else
            const float df = vload_half(0, (__local const half *)(stage + at));
#endif
            FA_PRAGMA_UNROLL
            for (int j = 0; j < 4; j++) {
                uint lo = x[2 * j], hi = x[2 * j + 1];
                if (odd2) {
                    lo = (lo >> 16) | (hi << 16);
                    hi = (hi >> 16) | (x[2 * j + 2] << 16);
                }
                uint4 v;
#if FA_DTYPE == 1
                const uint2 p0 = fa_q8x4_to_f16(lo, d2), p1 = fa_q8x4_to_f16(hi, d2);
                v = (uint4)(p0.x, p0.y, p1.x, p1.y); /* not (uint4)(p0, p1): Oclgrind 21.10 crashes on it */
#else
                const float4 q0 = convert_float4(as_char4(lo)), q1 = convert_float4(as_char4(hi));
                v = (uint4)(fa_pack2(df * q0.x, df * q0.y), fa_pack2(df * q0.z, df * q0.w),
                            fa_pack2(df * q1.x, df * q1.y), fa_pack2(df * q1.z, df * q1.w));
#endif
                *(__local uint4 *)(tile + r * ROW + 32 * b + 8 * j) = v;
            }
        }
    }
}

/* n words of staged q8_0 values from byte `at` on (2-byte aligned: 2 off a word in a row's even
 * blocks, whose values then reach into the next block, never past the row) */
inline __attribute__((always_inline)) void fa_q8_words(__local const uchar *stage, int at, uint *w, const int n)
{
    __local const uint *p = (__local const uint *)(stage + (at & ~3));
    const uint sh = (uint)(at & 2) * 8;
    uint x[D_PAD / 16 + 1];
    FA_PRAGMA_UNROLL
    for (int k = 0; k < n; k++)
        x[k] = p[k];
    x[n] = sh ? p[n] : 0u;
    FA_PRAGMA_UNROLL
    for (int k = 0; k < n; k++)
        w[k] = fa_funnel16(x[k], x[k + 1], sh);
}

/* FA_Q8_KEY(i): the key (of 16) that a k-step's position i stands for (S's n-tile i / 8, column
 * i % 8; decoding with FA_Q8_FRAGS, no mask): an order in which a warp's word loads from the stage
 * of 34 d/32-byte rows meet two to a bank where the plain order meets four (V's) or three (K's at
 * d = 64): found by search over the lanes' first words (K: key g, dims t4 d/4; V: keys 2 t4 + {0, 1,
 * 8, 9}, dims g d/8) */
#if !defined(FA_MASK) && D_PAD == 128
#define FA_Q8_KEY_ORDER 0xda258ec17940bf36UL /* 6, 3, 15, 11, 0, 4, 9, 7, 1, 12, 14, 8, 5, 2, 10, 13 */
#elif !defined(FA_MASK) && D_PAD == 64
#define FA_Q8_KEY_ORDER 0x9cb41a32670def85UL /* 5, 8, 15, 14, 13, 0, 7, 6, 2, 3, 10, 1, 4, 11, 12, 9 */
#endif
#if defined(FA_Q8_KEY_ORDER) && !defined(FA_Q8_PLAIN_ORDER)
#define FA_Q8_KEY(i) ((int)((FA_Q8_KEY_ORDER >> (4 * (i))) & 15))
#else
#define FA_Q8_KEY(i) (i)
#endif

/* K's fragments from the stage (FA_Q8_FRAGS): staged key `key`'s words of dims t4 D/4 .. + D/4 (a
 * word a k-step: dims t4 D/4 + 4 kk + {0, 1} and {2, 3} as k-step kk's positions 2 t4 + {0, 1} and
 * {8, 9}), within one q8_0 block: its scale in both halves of d2 */
inline __attribute__((always_inline)) void fa_q8_key_words(__local const uchar *kq, int key, int t4, uint *w,
                                                           uint *d2)
{
    const int row = key * STAGE_RB + t4 * (D_PAD / 4) / 32 * 34;
    fa_q8_words(kq, row + 2 + t4 * (D_PAD / 4) % 32, w, KSTEPS);
    const uint d = *(__local const ushort *)(kq + row);
    *d2 = d | d << 16;
}

/* V's fragments from the stage (FA_Q8_FRAGS): the k-step's positions 2 t4 + {0, 1} (bv[0]) and
 * + {8, 9} (bv[1]), keys k0 + FA_Q8_KEY(position), dims g D/8 + j as bv[.][j], a register of both
 * keys' values each, within one q8_0 block: a key's words byte-interleaved with its pair's, each
 * half scaled by its own key's scale */
inline __attribute__((always_inline)) void fa_q8_value_frags(__local const uchar *vq, int k0, int t4, int g,
                                                             uint bv[2][DT])
{
    const int blk = g * (D_PAD / 8) / 32 * 34;
    uint w[4][D_PAD / 32], d[4];
    FA_PRAGMA_UNROLL
    for (int j = 0; j < 4; j++) {
        const int row = (k0 + FA_Q8_KEY(2 * t4 + j / 2 * 8 + j % 2)) * STAGE_RB + blk;
        fa_q8_words(vq, row + 2 + g * (D_PAD / 8) % 32, w[j], D_PAD / 32);
        d[j] = *(__local const ushort *)(vq + row);
    }
    FA_PRAGMA_UNROLL
    for (int p = 0; p < 2; p++) {
        const uint d2 = d[2 * p] | d[2 * p + 1] << 16;
        FA_PRAGMA_UNROLL
        for (int i = 0; i < D_PAD / 32; i++) {
            const uint2 x = fa_bytes_interleave(w[2 * p][i], w[2 * p + 1][i]);
            const uint2 lo = fa_q8x4_scaled(x.x, d2), hi = fa_q8x4_scaled(x.y, d2);
            bv[p][4 * i] = lo.x;
            bv[p][4 * i + 1] = lo.y;
            bv[p][4 * i + 2] = hi.x;
            bv[p][4 * i + 3] = hi.y;
        }
    }
}

/* The q8_0 decode paths of the mma.sync mainloop, statement macros over its names as
 * cl/fa_nv_fwd_mask.cl's. With FA_Q8_FRAGS: Q's A fragments in the dims' order the stage's words
 * take (dims t4 D/4 + 4 kk + {0, 1} and {2, 3} as k-step kk's positions 2 t4 + {0, 1} and {8, 9});
 * after the key loop, O's columns back in order (n-tile dt of lane (g, t4) holds dims 2 t4 D/8 + dt
 * and that + D/8: through a row of floats a row, this warp's 16 in local memory, once every warp is
 * done with the stages, then read back as the accumulator layout has them). */
#define FA_Q8_FRAGS_Q                                                                                       \
    FA_PRAGMA_UNROLL                                                                                        \
    for (int kk = 0; kk < KSTEPS; kk++) {                                                                   \
        __local const ushort *r0 = q_s + (wrow + g) * ROW + t4 * (D_PAD / 4) + 4 * kk, *r1 = r0 + 8 * ROW;  \
        qa[kk][0] = *(__local const uint *)r0;                                                              \
        qa[kk][1] = *(__local const uint *)r1;                                                              \
        qa[kk][2] = *(__local const uint *)(r0 + 2);                                                        \
        qa[kk][3] = *(__local const uint *)(r1 + 2);                                                        \
    }
#define FA_Q8_FRAGS_UNPERM                                                   \
    fa_cp_async_wait_all();                                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                            \
    {                                                                        \
        __local float *const u = (__local float *)smem + warp * 16 * D_PAD;  \
        FA_PRAGMA_UNROLL                                                     \
        for (int dt = 0; dt < DT; dt++) {                                    \
            const int c0 = 2 * t4 * (D_PAD / 8) + dt, c1 = c0 + D_PAD / 8;   \
            u[g * D_PAD + c0] = acc[0][dt].x;                                \
            u[g * D_PAD + c1] = acc[0][dt].y;                                \
            u[(g + 8) * D_PAD + c0] = acc[0][dt].z;                          \
            u[(g + 8) * D_PAD + c1] = acc[0][dt].w;                          \
        }                                                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                        \
        FA_PRAGMA_UNROLL                                                     \
        for (int dt = 0; dt < DT; dt++) {                                    \
        const float2 a = vload2(0, u + g * D_PAD + dt * 8 + 2 * t4),         \
                     b = vload2(0, u + (g + 8) * D_PAD + dt * 8 + 2 * t4);   \
            acc[0][dt] = (float4)(a.x, a.y, b.x, b.y);                       \
        }                                                                    \
    }

/* FA_KEYS_M (BLOCK_Q 8): the block's 8 rows of Q as B fragments (Q^T, row g as column g), for every
 * k-step, dims in K's order (fa_q8_key_words); a block's S^T = K Q^T by key tiles of 16 (lane (g,
 * t4) has keys g and g + 8, A's rows; st[mt] is (key g: rows 2 t4, 2 t4 + 1; key g + 8: the same
 * rows)), its visibility mask, the online softmax by columns (a row's keys are across the 8 lanes
 * of a t4) and O^T += V^T P^T, a key tile a k-step (P^T's two 8 x 8 halves transposed are the B
 * fragment: keys 2 t4 + {0, 1}, {8, 9} of column g; V^T's A fragments of dim tile dm are rows g D/8
 * + dm (row g) and g D/8 + D/16 + dm (row g + 8), O^T's the same); after the key loop, O^T, m and l
 * into the layout of 16 rows a warp (rows g + 8 empty, never written): O^T's elements through a row
 * of floats a row, this warp's 8 in local memory (once every warp is done with the stages), m and l
 * (each row's sum over its 8 lanes) in the 9th. */
#define FA_Q8_KEYS_M_Q                                                         \
    uint qt[KSTEPS][2];                                                        \
    FA_PRAGMA_UNROLL                                                           \
    for (int kk = 0; kk < KSTEPS; kk++) {                                      \
        __local const ushort *r0 = q_s + g * ROW + t4 * (D_PAD / 4) + 4 * kk;  \
        qt[kk][0] = *(__local const uint *)r0;                                 \
        qt[kk][1] = *(__local const uint *)(r0 + 2);                           \
    }                                                                          \
    barrier(CLK_LOCAL_MEM_FENCE);
#define FA_Q8_KEYS_M_BLOCK                                                                                         \
    float4 st[KT];                                                                                                 \
    FA_PRAGMA_UNROLL                                                                                               \
    for (int mt = 0; mt < KT; mt++) {                                                                              \
        uint w[2][KSTEPS], d2[2];                                                                                  \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int h = 0; h < 2; h++)                                                                                \
            fa_q8_key_words(kq, koff + 16 * mt + FA_Q8_KEY(8 * h + g), t4, w[h], &d2[h]);                          \
        st[mt] = (float4)(0.0f);                                                                                   \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int kk = 0; kk < KSTEPS; kk++) {                                                                      \
            const uint2 a = fa_q8x4_scaled(w[0][kk], d2[0]), b = fa_q8x4_scaled(w[1][kk], d2[1]);                  \
            fa_mma(&st[mt], a.x, b.x, a.y, b.y, qt[kk][0], qt[kk][1] FA_EMU_ARG);                                  \
        }                                                                                                          \
    }                                                                                                              \
    if (!(kv0 >= clean_lo && kv0 + BLOCK_KV <= clean_hi)) {                                                        \
        int lo[2], hi[2];                                                                                          \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int r = 0; r < 2; r++)                                                                                \
            FA_ROW_RANGE(q0 + 2 * t4 + r, &lo[r], &hi[r]);                                                         \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int mt = 0; mt < KT; mt++) {                                                                          \
            const int key = kv0 + koff + 16 * mt + FA_Q8_KEY(g), key8 = kv0 + koff + 16 * mt + FA_Q8_KEY(g + 8);   \
            st[mt].x = (key >= lo[0] && key < hi[0]) ? st[mt].x : -INFINITY;                                       \
            st[mt].y = (key >= lo[1] && key < hi[1]) ? st[mt].y : -INFINITY;                                       \
            st[mt].z = (key8 >= lo[0] && key8 < hi[0]) ? st[mt].z : -INFINITY;                                     \
            st[mt].w = (key8 >= lo[1] && key8 < hi[1]) ? st[mt].w : -INFINITY;                                     \
        }                                                                                                          \
    }                                                                                                              \
    {                                                                                                              \
        float mx0 = m[0][0], mx1 = m[0][1];                                                                        \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int mt = 0; mt < KT; mt++) {                                                                          \
            mx0 = fmax(mx0, fmax(st[mt].x, st[mt].z));                                                             \
            mx1 = fmax(mx1, fmax(st[mt].y, st[mt].w));                                                             \
        }                                                                                                          \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int sh = 4; sh < 32; sh *= 2) {                                                                       \
            mx0 = fmax(mx0, fa_shfl_xor(mx0, sh FA_EMU_ARG));                                                      \
            mx1 = fmax(mx1, fa_shfl_xor(mx1, sh FA_EMU_ARG));                                                      \
        }                                                                                                          \
        const float uc0 = (mx0 == -INFINITY) ? 0.0f : mx0 * scale_log2;                                            \
        const float uc1 = (mx1 == -INFINITY) ? 0.0f : mx1 * scale_log2;                                            \
        if (mx0 != m[0][0] || mx1 != m[0][1]) {                                                                    \
            const float d0 = fa_ex2(fma(m[0][0], scale_log2, -uc0)), d1 = fa_ex2(fma(m[0][1], scale_log2, -uc1));  \
            FA_PRAGMA_UNROLL                                                                                       \
            for (int dm = 0; dm < DT / 2; dm++)                                                                    \
                acc[0][dm] *= (float4)(d0, d1, d0, d1);                                                            \
            l[0][0] *= d0;                                                                                         \
            l[0][1] *= d1;                                                                                         \
        }                                                                                                          \
        m[0][0] = mx0;                                                                                             \
        m[0][1] = mx1;                                                                                             \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int mt = 0; mt < KT; mt++) {                                                                          \
            st[mt].x = fa_ex2(fma(st[mt].x, scale_log2, -uc0));                                                    \
            st[mt].y = fa_ex2(fma(st[mt].y, scale_log2, -uc1));                                                    \
            st[mt].z = fa_ex2(fma(st[mt].z, scale_log2, -uc0));                                                    \
            st[mt].w = fa_ex2(fma(st[mt].w, scale_log2, -uc1));                                                    \
            l[0][0] += st[mt].x + st[mt].z;                                                                        \
            l[0][1] += st[mt].y + st[mt].w;                                                                        \
        }                                                                                                          \
    }                                                                                                              \
    FA_PRAGMA_UNROLL                                                                                               \
    for (int mt = 0; mt < KT; mt++) {                                                                              \
        const uint b0 = fa_movmatrix_trans(fa_pack2(st[mt].x, st[mt].y) FA_EMU_ARG);                               \
        const uint b1 = fa_movmatrix_trans(fa_pack2(st[mt].z, st[mt].w) FA_EMU_ARG);                               \
        uint bv[2][DT];                                                                                            \
        fa_q8_value_frags(vq, koff + 16 * mt, t4, g, bv);                                                          \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int dm = 0; dm < DT / 2; dm++)                                                                        \
            fa_mma(&acc[0][dm], bv[0][dm], bv[0][DT / 2 + dm], bv[1][dm], bv[1][DT / 2 + dm], b0, b1 FA_EMU_ARG);  \
    }
#define FA_Q8_KEYS_M_OUT                                                                       \
    fa_cp_async_wait_all();                                                                    \
    barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    {                                                                                          \
        __local float *const u = (__local float *)smem + warp * 16 * D_PAD;                    \
        FA_PRAGMA_UNROLL                                                                       \
        for (int r = 0; r < 2; r++)                                                            \
            FA_PRAGMA_UNROLL                                                                   \
            for (int sh = 4; sh < 32; sh *= 2)                                                 \
                l[0][r] += fa_shfl_xor(l[0][r], sh FA_EMU_ARG);                                \
        FA_PRAGMA_UNROLL                                                                       \
        for (int dm = 0; dm < DT / 2; dm++) {                                                  \
            const int c0 = g * (D_PAD / 8) + dm, c1 = c0 + D_PAD / 16;                         \
            u[2 * t4 * D_PAD + c0] = acc[0][dm].x;                                             \
            u[(2 * t4 + 1) * D_PAD + c0] = acc[0][dm].y;                                       \
            u[2 * t4 * D_PAD + c1] = acc[0][dm].z;                                             \
            u[(2 * t4 + 1) * D_PAD + c1] = acc[0][dm].w;                                       \
        }                                                                                      \
        if (g == 0)                                                                            \
            vstore4((float4)(m[0][0], l[0][0], m[0][1], l[0][1]), 0, u + 8 * D_PAD + 4 * t4);  \
        barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        FA_PRAGMA_UNROLL                                                                       \
        for (int dt = 0; dt < DT; dt++) {                                                      \
            const float2 a = vload2(0, u + g * D_PAD + dt * 8 + 2 * t4);                       \
            acc[0][dt] = (float4)(a.x, a.y, 0.0f, 0.0f);                                       \
        }                                                                                      \
        const float2 ml = vload2(0, u + 8 * D_PAD + 2 * g);                                    \
        m[0][0] = ml.x;                                                                        \
        l[0][0] = t4 == 0 ? ml.y : 0.0f;                                                       \
        m[0][1] = -INFINITY;                                                                   \
        l[0][1] = 0.0f;                                                                        \
    }
#endif
