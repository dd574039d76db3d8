/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's q8_0 K/V (nvidia-mma only): the synchronous loader, and with cp.async
 * the staging of raw rows, their dequantisation into tiles, and the fragments read straight from the
 * stages (FA_Q8_FRAGS). */
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

#if defined(FA_ASYNC) && defined(FA_KV_Q8)
/* q8_0 K/V (FA_Q8_COPY = 4 or 8: the planner found every row's bytes that aligned): a block's raw
 * rows are copied asynchronously into a staging ring (NBUF stages), then dequantised into the one
 * K and one V tile right before they are used */
#define Q8_RB (HEAD_DIM / 32 * 34)               /* bytes of a q8_0 row */
#define Q8_STAGE (BLOCK_KV * Q8_RB)              /* bytes of one block's rows */
#define Q8_CHUNKS (Q8_RB / FA_Q8_COPY)           /* copies per row */
inline __attribute__((always_inline)) void fa_load_kv_q8_async(__local uchar *ks, __local uchar *vs,
                                                               __global const uchar *kg, __global const uchar *vg,
                                                               fa_row_map kmap, fa_row_map vmap, int first, int limit,
                                                               int lid)
{
#if WG >= Q8_CHUNKS
#ifdef FA_PAGED
    const int one_page = first / FA_PAGE_SIZE == (first + BLOCK_KV - 1) / FA_PAGE_SIZE;
#else
    const int one_page = 1;
#endif
    if (first + BLOCK_KV <= limit && one_page) {
        /* every row is in the sequence (and in one page: rows a stride apart), and rows are whole
         * q8_0 blocks apart (offsets and strides are multiples of 32): the first (WG / Q8_CHUNKS) *
         * Q8_CHUNKS work-items keep one column of copies each and step by rows, where the general
         * loop below divides, multiplies and reads the page table per copy */
        const int per = WG / Q8_CHUNKS; /* rows a pass */
        if (lid < per * Q8_CHUNKS) {
            const int r0 = lid / Q8_CHUNKS, c = lid % Q8_CHUNKS;
            const long kstep = kmap.stride / 32 * 34 * per, vstep = vmap.stride / 32 * 34 * per;
            __global const uchar *kp = kg + fa_kv_row(kmap, first + r0) / 32 * 34 + c * FA_Q8_COPY;
            __global const uchar *vp = vg + fa_kv_row(vmap, first + r0) / 32 * 34 + c * FA_Q8_COPY;
            FA_PRAGMA_UNROLL
            for (int i = 0; i < (BLOCK_KV + per - 1) / per; i++)
                if (BLOCK_KV % per == 0 || r0 + i * per < BLOCK_KV) {
                    fa_cp_async_small(ks + (r0 + i * per) * Q8_RB + c * FA_Q8_COPY, kp + i * kstep, 1);
                    fa_cp_async_small(vs + (r0 + i * per) * Q8_RB + c * FA_Q8_COPY, vp + i * vstep, 1);
                }
        }
        return;
    }
#endif
    for (int e = lid; e < BLOCK_KV * Q8_CHUNKS; e += WG) {
        const int r = e / Q8_CHUNKS, c = e % Q8_CHUNKS;
        const int valid = first + r < limit;
        /* rows past the limit: zeros, from an in-bounds address (the view's first row) */
        const ulong ko = (valid ? fa_kv_row(kmap, first + r) : kmap.base) / 32 * 34 + (ulong)(c * FA_Q8_COPY);
        const ulong vo = (valid ? fa_kv_row(vmap, first + r) : vmap.base) / 32 * 34 + (ulong)(c * FA_Q8_COPY);
        fa_cp_async_small(ks + r * Q8_RB + c * FA_Q8_COPY, kg + ko, valid);
        fa_cp_async_small(vs + r * Q8_RB + c * FA_Q8_COPY, vg + vo, valid);
    }
}

/* one staged block of q8_0 rows into a local tile of FA_DTYPE values. A work-item takes whole
 * q8_0 blocks (a scale, 32 values: 4 chunks of the tile) at a constant step, every load issued
 * before the conversions (a chunk of 8 values per step, index arithmetic and a local-memory round
 * trip each, cost decoding as much as the rest of the kernel on an H200: commit 1f31e42). A block's values
 * start 2 bytes past its scale: 4-byte aligned in the odd blocks of a row, 2 off in the even ones,
 * which take 9 aligned words (never a stage's last bytes: the rows are 4-byte multiples) */
#if Q8_RB % 4 != 0
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
            const int r = e / Q8_BLOCKS, b = e % Q8_BLOCKS, at = r * Q8_RB + b * 34;
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
    const int row = key * Q8_RB + t4 * (D_PAD / 4) / 32 * 34;
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
        const int row = (k0 + FA_Q8_KEY(2 * t4 + j / 2 * 8 + j % 2)) * Q8_RB + blk;
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
#endif
