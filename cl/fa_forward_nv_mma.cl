/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2 forward on NVIDIA tensor cores (compute capability >= 8.0), f16/bf16 storage.
 *
 * NVIDIA-only: inline PTX (mma.sync.m16n8k16, ldmatrix, shfl.sync, cp.async; cl/fa_nv_ptx.cl, built
 * before this file). The planner builds it only for NVIDIA devices of compute capability >= 8.0 with
 * f16/bf16 data, and falls back to the portable kernels when it does not compile or
 * FA_CL_VENDOR_PATH=0. With FA_PTX_EMULATE those primitives are portable OpenCL C and the kernel
 * runs anywhere (tests).
 *
 * Each warp owns WARP_ROWS (16 or 32) query rows, one or two m16 tiles. With 16 (and D_PAD <= 128),
 * the Q block is staged through local memory once (in the space K/V use later) and kept in
 * registers as mma A fragments; with 32, or a wider head, Q stays in local memory and each k-step's
 * A fragments are reloaded; with 32 every K/V fragment read from local memory feeds two mma
 * (FlashAttention-2's 128-row block of 4 warps). Per block of BLOCK_KV keys: K and V are loaded
 * into local memory, S = Q K^T is computed with mma (B fragments by ldmatrix from K rows), the online softmax runs on
 * the accumulators (row max/sum across the 4 lanes sharing a row by shfl.sync), and the
 * probabilities, packed to f16/bf16, are used directly as the A fragments of O += P V (B fragments
 * by ldmatrix.trans from V rows): P never leaves registers. Arithmetic: fp32 accumulate.
 *
 * A block whose keys every row of a warp sees in full (no causal/window edge, no seqlen tail) skips
 * the per-element mask.
 *
 * Defined by the planner: FA_DTYPE (1 f16, 2 bf16), HEAD_DIM, D_PAD (a multiple of 32, at most 256), BLOCK_Q
 * (a multiple of WARP_ROWS), BLOCK_KV (multiple of 16), WARP_ROWS (16 or 32, default 16), FA_STAGES (2-4,
 * default 2: K/V buffers with asynchronous copies);
 * FA_ALIGNED16 when every q/k/v/o row start is 16-byte aligned (asynchronous copies, paired stores);
 * FA_ROWS_PADDED with it: q/k/v are the plan's zero-padded copies (cl/fa_pad_rows.cl), whose rows
 * may be read up to head_dim rounded up to 8, and o (head_dim % 8 != 0) is stored element-wise;
 * FA_KV_CHUNKED: long rows in chunks of keys (cl/fa_forward_common.cl).
 *
 * FA_WGMMA (nvidia-wgmma, compute capability 9.0; cl/fa_nv_wgmma.cl, built after cl/fa_nv_ptx.cl):
 * each warpgroup of 4 warps owns 64 rows, and the products are Hopper's warpgroup MMA: S = Q K^T
 * (m64 n BLOCK_KV k16, Q and K from local memory) and O += P V (m64 n D_PAD k16, P from the
 * registers, V from local memory), into the same accumulator layout as mma.sync's; the tiles are
 * in wgmma's layouts (fa_wg_at, cl/fa_nv_wgmma.cl) instead of padded rows; software-pipelined, and
 * with FA_WG_PINGPONG the warpgroups take turns (docs/design.md, "Variant nvidia-wgmma"). It
 * takes 16-byte aligned rows, D_PAD 64, 128 or 256, BLOCK_KV 64 or 128 (80 at 256), no q8_0 K/V
 * and no key slices.
 */
#if FA_DTYPE != 1 && FA_DTYPE != 2
#error "the tensor-core kernel takes f16 or bf16 storage"
#endif
#if D_PAD % 32 != 0 || D_PAD < 32 || D_PAD > 256
#error "the tensor-core kernel takes D_PAD a multiple of 32 up to 256 (O lives in registers: the planner declines beyond)"
#endif

#ifndef WARP_ROWS
#define WARP_ROWS 16
#endif
/* K and V in q8_0 blocks (FA_K_DTYPE = FA_V_DTYPE = 3): dequantised to FA_DTYPE as they are loaded
 * into local memory (synchronous loads: a block is 34 bytes, not a 16-byte copy) */
#if FA_K_DTYPE == 3 || FA_V_DTYPE == 3
#if FA_K_DTYPE != 3 || FA_V_DTYPE != 3 || FA_Q_DTYPE != FA_DTYPE || FA_O_DTYPE != FA_DTYPE
#error "the tensor-core kernel takes q8_0 for both K and V, with q and o in FA_DTYPE"
#endif
#define FA_KV_Q8 1
#endif
#if WARP_ROWS != 16 && WARP_ROWS != 32
#error "WARP_ROWS is 16 or 32"
#endif
#define MT (WARP_ROWS / 16)   /* m16 tiles per warp */
/* FA_KV_WARPS > 1 (decoding: one m16 tile of rows): that many warps share the rows and each takes
 * its slice of every key block, so that one warp's chain of mma and softmax per block, which
 * bounds a decode work-group's time, is that much shorter; the slices merge at the end. */
#ifndef FA_KV_WARPS
#define FA_KV_WARPS 1
#endif
/* FA_KEYS_M (BLOCK_Q 8: the planner's for decoding at most 8 rows with q8_0 K/V): the products are
 * transposed, S^T = K Q^T and O^T = V^T P^T, keys and dims as mma's 16 rows and the block's 8 query
 * rows as its 8 columns. Half the products of 16 rows, where a decode block has 1-8; half O's
 * accumulators and Q's fragments in registers; P^T reaches the B fragments by movmatrix. */
#if BLOCK_Q == 8
#define FA_KEYS_M 1
#endif
#if FA_KV_WARPS > 1 && ((BLOCK_Q != 16 && BLOCK_Q != 8) || WARP_ROWS != 16 || BLOCK_KV % (16 * FA_KV_WARPS))
#error "FA_KV_WARPS > 1 takes 16 rows (or 8), one warp's, and key slices of a multiple of 16"
#endif
#define WARPS ((BLOCK_Q + WARP_ROWS - 1) / WARP_ROWS * FA_KV_WARPS)
#define WG (WARPS * 32)
#define KW (BLOCK_KV / FA_KV_WARPS) /* keys of a block one warp takes */
#define ROW (D_PAD + 8)       /* local row pitch in halves: 16-byte rows offset by 16 bytes -> conflict-free ldmatrix */
#define CH (D_PAD / 8)        /* 16-byte chunks per row */
#define KSTEPS (D_PAD / 16)   /* k-steps of Q K^T */
#define NT (KW / 8)           /* n-tiles of S (a warp's) */
#define DT (D_PAD / 8)        /* n-tiles of O */
#define FA_MMA_Q_REGS_MAX_DIM 128 /* src/planner.h FA_CL_MMA_Q_REGS_MAX_DIM */
#define FA_ITEM_ROWS (2 * MT)      /* rows of a lane: g and g + 8 of each m-tile */
#define WARP_ROWS_SEEN (BLOCK_Q < WARP_ROWS ? BLOCK_Q : WARP_ROWS) /* a warp's rows in the block */
#ifdef FA_WGMMA
#define NWG (BLOCK_Q / 64) /* computing warpgroups */
#if defined(FA_WG_PINGPONG) && NWG != 2
#error "FA_WG_PINGPONG takes two warpgroups"
#endif
/* FlashAttention-3's wider block at D_PAD 256, 80 keys, only copied by TMA and without a mask's
 * tiles (the planner) */
#define FA_WG_WIDE_KV (D_PAD == 256 && BLOCK_KV == 80)
#if WARP_ROWS != 16 || FA_KV_WARPS != 1 || BLOCK_Q % 64 || defined(FA_KV_Q8) || !defined(FA_ALIGNED16) || \
    (D_PAD != 64 && D_PAD != 128 && D_PAD != 256) ||                                                   \
    (BLOCK_KV != 32 && BLOCK_KV != 64 && BLOCK_KV != 128 && !FA_WG_WIDE_KV) || (D_PAD == 256 && BLOCK_KV == 128) || \
    (FA_WG_WIDE_KV && (!defined(FA_KV_TMA) || defined(FA_MASK)))
#error "FA_WGMMA takes 16 rows a warp, 64 a warpgroup, aligned f16/bf16 rows, D_PAD 64, 128 or 256, BLOCK_KV 64 or 128 (64 or 80 at 256)"
#endif
/* P V's products a k-step: n = D_PAD, at 256 two of n = 128 (O's halves, V's column halves) */
#if D_PAD > 128
#define PV_N 128
#else
#define PV_N D_PAD
#endif
#define PV_PARTS (D_PAD / PV_N)
/* FA_WG_PRODUCER (FlashAttention-3's warp specialisation): one more warpgroup copies Q, K, V (and
 * the mask's tiles) with cp.async or TMA, each buffer handed over by mbarriers (full: its copies
 * landed; empty: every consumer warp is done reading it), while the NWG consumer warpgroups (two;
 * three at BLOCK_Q 192, copies by TMA) only compute: no work-group barrier a block. The registers
 * move to the consumers (setmaxnreg; the entry's .maxnreg is FA_WG_MAXNREG, FA_WG_PRODUCER_REGS x
 * 128 + FA_WG_CONSUMER_REGS x 128 NWG within it x 128 (NWG + 1)). */
#ifdef FA_WG_PRODUCER
#if (NWG != 2 && NWG != 3) || !defined(FA_WG_MAXNREG) || (NWG == 3 && !defined(FA_KV_TMA))
#error "FA_WG_PRODUCER takes two computing warpgroups (BLOCK_Q 128), or three (192) copying by TMA, and FA_WG_MAXNREG"
#endif
/* The producer / computing split, by measurement on an H200: with cp.async copies the producer's
 * address arithmetic spills below 56 registers and its copies are on the critical path, so it keeps
 * 72 at D_PAD 128 and 56 at 64 (commit a70c4c0); copying by TMA it needs fewer than 24, so every
 * plan whose copies are all TMA gives the computing warpgroups 240 (commits 31cdf4a, babe56d); a
 * mask's tiles by cp.async keep 72/216 (every other split was slower). */
#ifndef FA_WG_PRODUCER_REGS /* literals: setmaxnreg takes them as text */
#if NWG == 3 /* FlashAttention-3's split for three: 24 + 3 x 160 of 512 x 128 */
#define FA_WG_PRODUCER_REGS 24
#elif defined(FA_KV_TMA) /* every copy a bulk tensor copy (a mask's tiles too: FA_KV_TMA's rule) */
#define FA_WG_PRODUCER_REGS 24
#elif D_PAD > 64
#define FA_WG_PRODUCER_REGS 72
#else
#define FA_WG_PRODUCER_REGS 56
#endif
#endif
#ifndef FA_WG_CONSUMER_REGS
#if NWG == 3
#define FA_WG_CONSUMER_REGS 160
#elif defined(FA_KV_TMA)
#define FA_WG_CONSUMER_REGS 240
#elif D_PAD > 64
#define FA_WG_CONSUMER_REGS 216
#else
#define FA_WG_CONSUMER_REGS 224
#endif
#endif
#if FA_WG_PRODUCER_REGS * 128 + FA_WG_CONSUMER_REGS * 128 * NWG > FA_WG_MAXNREG * 128 * (NWG + 1)
#error "FA_WG_PRODUCER's registers exceed the work-group's"
#endif
#define PRODUCER_ITEMS 128
/* FA_WG_PEEL: a tile's first block peeled (FlashAttention-3's first iteration): S alone, no product
 * of a zero P against a zero V; V's entries are the blocks' V only (a tile without blocks: one of
 * zeros). Faster than -DFA_WG_NO_PEEL (which keeps the product) at D_PAD 64 and 128 on an H200;
 * not at D_PAD 256, where the loop's code twice at 240 registers ran slower (commit babe56d). */
#if !defined(FA_WG_NO_PEEL) && D_PAD <= 128
#define FA_WG_PEEL 1
#endif
/* FA_KV_TMA: Q, K and V by bulk tensor copies (cl/fa_nv_tma.cl), one work-item of the producer
 * issuing them all, through the maps the plan's first launch wrote (fa_tma_maps); a full barrier
 * then waits for that work-item's arrival and the copies' bytes, not for 128 copiers */
#ifdef FA_KV_TMA
#if D_PAD % 64 != 0 || (HEAD_DIM % 8 != 0 && !defined(FA_ROWS_PADDED)) || \
    (defined(FA_MASK_ASYNC) && !defined(FA_MASK_TMA))
#error "FA_KV_TMA: whole 64-column panels, 16-byte aligned rows, a mask's tiles by TMA too"
#endif
#define FULL_ARRIVALS 1
#else
#define FULL_ARRIVALS PRODUCER_ITEMS
#endif
#endif
/* the tensor maps in the scratch (16 ulongs each; the plan writes those its build uses) */
#define FA_TMA_MAP_Q 0
#define FA_TMA_MAP_K 1
#define FA_TMA_MAP_V 2
#define FA_TMA_MAP_MASK 3
#define FA_TILE_COUNTER 128 /* FA_PERSISTENT: the tiles taken (a uint of the scratch, after the maps) */
/* element (r, 8 c) of a K/V or the Q tile: wgmma's layouts (rows of D_PAD), else rows of ROW */
#define FA_KV_AT(r, c) fa_wg_at(r, c, D_PAD, BLOCK_KV)
#define FA_Q_AT(r, c) fa_wg_at(r, c, D_PAD, BLOCK_Q)
#define TILE_ROW D_PAD
#define FA_SMEM_ALIGN 1024 /* the 128-byte swizzle's pattern is the address's */
#else
#define FA_KV_AT(r, c) ((r) * ROW + 8 * (c))
#define FA_Q_AT(r, c) ((r) * ROW + 8 * (c))
#define TILE_ROW ROW
#define FA_SMEM_ALIGN 16
#endif
/* work-items that copy K/V tiles (CP_WG), and the work-group's (WG_ALL): WG computes */
#ifdef FA_WG_PRODUCER
#define CP_WG PRODUCER_ITEMS
#define WG_ALL (WG + PRODUCER_ITEMS)
#else
#define CP_WG WG
#define WG_ALL WG
#endif

/* rows [first, first + count) into a local tile of 16-bit values, zero padded: keys of a K/V map
 * (is_kv) or query rows of a head column (map.div = seqlen_q). FA_ALIGNED16 (planner: head_dim,
 * strides and offsets multiples of 8 elements) allows 16-byte global loads; local rows are always
 * 16-byte aligned. */
inline void fa_load_tile(__local ushort *tile, __global const ushort *src, fa_row_map map, int is_kv, int first,
                         int count, int limit, int lid)
{
    for (int e = lid; e < count * CH; e += WG) {
        int r = e / CH, c = e % CH;
        uint4 x = (uint4)(0);
        if (first + r < limit && 8 * c < HEAD_DIM) {
            __global const ushort *p = src + 8 * c +
                                       (is_kv ? fa_kv_row(map, first + r)
                                              : fa_qrow(map.base, first + r, map.div, map.outer, map.stride));
#if defined(FA_ALIGNED16) && (HEAD_DIM % 8 == 0 || defined(FA_ROWS_PADDED))
            x = *(__global const uint4 *)p;
#else
            ushort t[8];
            for (int i = 0; i < 8; i++)
                t[i] = (8 * c + i < HEAD_DIM) ? p[i] : (ushort)0;
            x = as_uint4((ushort8)(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]));
#endif
        }
        *(__local uint4 *)(tile + r * ROW + 8 * c) = x;
    }
}

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

#if (defined(FA_ALIGNED16) && (HEAD_DIM % 8 == 0 || defined(FA_ROWS_PADDED)) && !defined(FA_KV_Q8)) || \
    (defined(FA_KV_Q8) && defined(FA_Q8_COPY))
/* K/V blocks are copied asynchronously (cp.async) through a ring of FA_STAGES buffers each: while
 * one block is computed, the next STAGES - 1 are in flight (decoding is bound by how many bytes
 * are in flight). */
#define FA_ASYNC 1
#ifndef FA_STAGES
#define FA_STAGES 2
#endif
#define NBUF FA_STAGES
#if defined(FA_WGMMA) && !defined(FA_WG_PRODUCER) && NBUF != 2
#error "FA_WGMMA takes 2 stages without the producer warpgroup (V trails K in two buffers)"
#endif
#if NBUF == 2
#define FA_WAIT_BLOCK() fa_cp_async_wait_all()
#elif NBUF == 3
#define FA_WAIT_BLOCK() fa_cp_async_wait_1()
#elif NBUF == 4
#define FA_WAIT_BLOCK() fa_cp_async_wait_2()
#else
#error "FA_STAGES is 2, 3 or 4"
#endif
#define FA_COPIES ((BLOCK_KV * CH + CP_WG - 1) / CP_WG) /* 16-byte copies of a tile per copying work-item */

#ifdef FA_KV_Q8
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

#ifdef FA_WGMMA
#define FA_COPY_ROW(e) FA_WG_COPY_ROW(e, CH)
#define FA_COPY_CHUNK(e) FA_WG_COPY_CHUNK(e, CH)
/* a full block of BLOCK_KV rows (`stride` elements apart from src) into a tile, by the CP_WG copiers */
#define fa_wg_cp_rows(dst, src, stride, lid) fa_wg_copy_rows((dst), (src), (stride), BLOCK_KV, CP_WG, (lid))

/* O's accumulators (D_PAD / 2 floats) fenced or waited for, in PV_N-wide parts */
inline __attribute__((always_inline)) void fa_wg_fence_o(float *ow)
{
    FA_PRAGMA_UNROLL
    for (int h = 0; h < PV_PARTS; h++)
        fa_wgmma_fence(PV_N)(ow + h * (PV_N / 2));
}

inline __attribute__((always_inline)) void fa_wg_wait_o(float *ow)
{
    FA_PRAGMA_UNROLL
    for (int h = 0; h < PV_PARTS; h++)
        fa_wgmma_wait(PV_N)(ow + h * (PV_N / 2));
}

/* O += P V for a block (its P in pa, V's tile at vt), issued and committed, not waited for; part h
 * is O's columns h PV_N .. and V's from chunk h PV_N / 8 */
inline __attribute__((always_inline)) void fa_wg_pv(float *ow, uint pa[BLOCK_KV / 16][4], __local const ushort *vt)
{
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < BLOCK_KV / 16; kk2++)
        fa_wg_pin4(pa[kk2]); /* written before the fence */
    fa_wg_fence_o(ow);
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < BLOCK_KV / 16; kk2++)
        FA_PRAGMA_UNROLL
        for (int h = 0; h < PV_PARTS; h++) {
            const ulong dv = fa_wg_desc_mnmajor(vt + fa_wg_at(0, h * PV_N / 8, D_PAD, BLOCK_KV), D_PAD,
                                                BLOCK_KV);
            fa_wgmma_rs(PV_N)(ow + h * (PV_N / 2), pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3],
                              dv + fa_wg_kstep_mnmajor(kk2, D_PAD, BLOCK_KV), 1);
        }
    fa_wgmma_commit();
}
#else
#define FA_COPY_ROW(e) ((e) / CH)
#define FA_COPY_CHUNK(e) ((e) % CH)
#endif

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
            fa_wg_cp_rows(kt, kg + kmap.base + (ulong)first * (ulong)kmap.stride, kmap.stride, lid);
        if (copy_v)
            fa_wg_cp_rows(vt, vg + vmap.base + (ulong)first * (ulong)vmap.stride, vmap.stride, lid);
        return;
    }
#elif !defined(FA_PAGED)
    if (first + BLOCK_KV <= limit) { /* every row is in the sequence */
        if (copy_k)
            fa_cp_rows16_any(kt, ROW, kg + kmap.base + (ulong)first * (ulong)kmap.stride, kmap.stride, BLOCK_KV, CH, WG,
                         HEAD_DIM, lid);
        if (copy_v)
            fa_cp_rows16_any(vt, ROW, vg + vmap.base + (ulong)first * (ulong)vmap.stride, vmap.stride, BLOCK_KV, CH, WG,
                         HEAD_DIM, lid);
        return;
    }
#endif
    FA_PRAGMA_UNROLL
    for (int i = 0; i < FA_COPIES; i++) {
        const int e = lid + i * CP_WG;
        if (FA_COPIES * CP_WG == BLOCK_KV * CH || e < BLOCK_KV * CH) {
            const int r = FA_COPY_ROW(e), c = FA_COPY_CHUNK(e);
            const int valid = first + r < limit && 8 * c < HEAD_DIM;
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
                fa_cp_async16(vt + FA_KV_AT(r, c), vg + (valid ? vo + 8 * c : vmap.base), valid);
        }
    }
}
#else
#define NBUF 1
#endif

/* Local memory, in 16-bit elements: K and V tiles (NBUF each), and Q. Q lives in registers with
 * 16 rows per warp up to D_PAD 128 (beyond, its fragments would take the O accumulator's
 * registers), and is then staged in the K/V space before the first K/V copy; src/planner.c's
 * fa_cl_mma_local_bytes is the same sum. */
#define TILE (BLOCK_KV * TILE_ROW)
#if defined(FA_KV_Q8) && defined(FA_ASYNC) && BLOCK_Q <= 16 && D_PAD <= FA_MMA_Q_REGS_MAX_DIM && !defined(FA_WGMMA)
/* q8_0 K/V while decoding (one warp's 16 rows of Q in registers, each warp its own slice of the
 * keys): the B fragments are dequantised straight from the staged rows (no pass, no tiles of
 * FA_DTYPE values, no second barrier a block; faster than the pass on an H200, commit 0904c6c).
 * Where warps share the keys (more rows) each would dequantise all of them, which made prefill
 * slower than the pass: prefill keeps it. Each lane reads whole words of
 * contiguous dims, which takes the dims in an order of its own: K's (t4 D/4 + 4 kk + {0..3} as
 * k-step kk's positions 2 t4 + {0, 1, 8, 9}, Q's A fragments the same, the sum unchanged), V's
 * (column g of n-tile dt is dim g D/8 + dt: O's columns come out permuted and are put back in
 * order through local memory after the key loop, UNPERM_HALVES). src/kernels/nvidia_mma.c:
 * fa_cl_mma_local_bytes */
#define FA_Q8_FRAGS 1
#define TILE_BUFS 0
#define KT (KW / 16) /* FA_KEYS_M: key tiles of a warp a block */
#define Q8_HALVES (2 * NBUF * Q8_STAGE / 2)
#define UNPERM_HALVES (WARPS * 16 * D_PAD * 2)
#elif defined(FA_KV_Q8) && defined(FA_ASYNC)
#define TILE_BUFS 1 /* the staging ring holds the stages (Q8_HALVES, after the tiles) */
#define Q8_HALVES (2 * NBUF * Q8_STAGE / 2)
#else
#define TILE_BUFS NBUF
#define Q8_HALVES 0
#endif
/* the key (past the warp's first) of S's n-tile nt, column c */
#ifdef FA_Q8_FRAGS
#define FA_S_KEY(nt, c) ((nt) / 2 * 16 + FA_Q8_KEY((nt) % 2 * 8 + (c)))
#else
#define FA_S_KEY(nt, c) ((nt) * 8 + (c))
#endif
#if defined(FA_KEYS_M) && (!defined(FA_Q8_FRAGS) || defined(FA_MASK) || MT != 1)
#error "BLOCK_Q 8 takes q8_0 K/V copied asynchronously, D_PAD <= 128, mma.sync, 16 rows a warp, no mask"
#endif
#define KV_HALVES (2 * TILE_BUFS * TILE)
#define Q_HALVES (BLOCK_Q * TILE_ROW)
#if MT == 1 && D_PAD <= FA_MMA_Q_REGS_MAX_DIM && !defined(FA_WGMMA)
#define FA_Q_REGS 1
#define TILES_HALVES (Q_HALVES > KV_HALVES ? Q_HALVES : KV_HALVES)
#define KV_AT 0
#else
#define TILES_HALVES (Q_HALVES + KV_HALVES)
#define KV_AT Q_HALVES
#endif
/* FA_KV_WARPS: the slices' partial results, per lane (m and l of its 2 rows, its accumulators),
 * in the tiles' space after the key loop */
#define PART_FLOATS (4 + 4 * DT)
#define PART_HALVES ((FA_KV_WARPS - 1) * 32 * PART_FLOATS * 2)
#define FA_MAX_(a, b) ((a) > (b) ? (a) : (b))
#ifdef FA_Q8_FRAGS
/* one use at a time: Q's tile (until its fragments are read), the stages, then the permutation's
 * and the slices' space */
#define Q8_AT 0
#define SMEM_HALVES FA_MAX_(FA_MAX_(TILES_HALVES, Q8_HALVES), FA_MAX_(PART_HALVES, UNPERM_HALVES))
#else
#define Q8_AT (FA_MAX_(TILES_HALVES, PART_HALVES))
#define SMEM_HALVES (Q8_AT + Q8_HALVES)
#endif

/* FA_MASK_ASYNC (the planner: every mask row 16-byte aligned, pairs too): the block's mask entries
 * (B_r rows x B_c keys) are copied with K and V into a ring of NBUF tiles after the others, so that
 * no global load waits on the way to the row maxima; rows MASK_PITCH bytes apart, the padding chosen
 * so that a warp's pair reads hit distinct banks. src/kernels/nvidia_mma.c: fa_cl_mma_mask_bytes. */
#if defined(FA_MASK) && defined(FA_MASK_ASYNC) && defined(FA_MASK_PAIRS) && defined(FA_ASYNC) && !defined(FA_KV_Q8)
#define FA_MASK_TILE 1
#define MASK_ES FA_MASK_ES /* bytes an entry */
#ifdef FA_WGMMA
/* unpadded rows (a power of two, 64 bytes or more) whose 16-byte chunks are XOR-swizzled by the
 * row instead: the padding would not fit 227 KiB beside the wgmma tiles at 128 x 128 with an f16
 * mask. Rows g and g + 8 (a lane's two) share the pattern; rows 0..7 of a chunk column land in
 * distinct banks. FA_MASK_SWZ(r): the byte offset's bits to flip in row r. */
#define MASK_PITCH (BLOCK_KV * MASK_ES)
#ifdef FA_MASK_TMA
/* FA_MASK_TMA (the producer's tiles by bulk tensor copies, cl/fa_nv_tma.cl): panels of 128-byte
 * rows, the 128-byte swizzle (cl/fa_nv_wgmma.cl's layout), a tile's 128-byte column panels
 * BLOCK_Q rows apart; one copy a panel, by one work-item, through the map the plan's first launch
 * wrote (fa_tma_maps) */
#if !defined(FA_WG_PRODUCER) || MASK_PITCH % 128 != 0
#error "FA_MASK_TMA: with the producer warpgroup, mask rows of a block a multiple of 128 bytes"
#endif
/* 16-bit entries read by ldmatrix at D_PAD 128 (8 loads a block, not 32: faster on an H200; slower at
 * D_PAD 64, so not there; commit b3df27e); -DFA_MASK_NO_LDSM turns it off */
#if FA_MASK_ES == 2 && D_PAD == 128 && !defined(FA_MASK_NO_LDSM)
#define FA_MASK_READ_LDSM 1
#endif
#define MASK_ROW_STEP 128
#define MASK_PANELS (MASK_PITCH / 128)
#define FA_MASK_SWZ(r) (((r) & 7) << 4)
#elif MASK_PITCH >= 128
#define FA_MASK_SWZ(r) (((r) & 7) << 4)
#elif MASK_PITCH == 64
#define FA_MASK_SWZ(r) ((((r) >> 1) & 3) << 4) /* two rows a 128-byte line */
#elif MASK_PITCH == 32
#define FA_MASK_SWZ(r) ((((r) >> 2) & 1) << 4) /* four */
#else
#error "FA_WGMMA's mask rows are 32 bytes or more"
#endif
#else
#define MASK_PITCH (BLOCK_KV * MASK_ES + (FA_MASK == 1 ? 32 : 16))
#define FA_MASK_SWZ(r) 0
#endif
/* byte `off` of n-tile nt past a lane's: swizzled, the bits are disjoint (one XOR a load) */
#ifdef FA_MASK_TMA
#define FA_MASK_NT(lane_at, off) ((off) / 128 * (BLOCK_Q * 128) + ((lane_at) ^ ((off) % 128)))
#elif defined(FA_WGMMA)
#define FA_MASK_NT(lane_at, off) ((lane_at) ^ (off))
#else
#define FA_MASK_NT(lane_at, off) ((lane_at) + (off))
#endif
#ifndef MASK_ROW_STEP
#define MASK_ROW_STEP MASK_PITCH /* bytes from a tile's row to the next */
#endif
#define MASK_KPC (16 / MASK_ES)                            /* keys a 16-byte copy */
#define MASK_CHUNKS (BLOCK_KV / MASK_KPC)
#define MASK_HALVES (NBUF * BLOCK_Q * MASK_PITCH / 2)
/* rows q0 .. of keys k0 .. into ring tile `buf`, from the rows' first entries (mask_rows, computed
 * once: FA_MASK_ROW's products per copy cost more than the copy); keys past the mask's are
 * zero-filled and read from in-bounds addresses (the visibility mask drops them) */
#define FA_MASK_TILE_COPY(buf, k0, cl)                                                                    \
    for (int e = (cl); e < BLOCK_Q * MASK_CHUNKS; e += CP_WG) {                                           \
        const int r_ = e / MASK_CHUNKS, k_ = (k0) + e % MASK_CHUNKS * MASK_KPC;                           \
        const int n_ = clamp(seqlen_k_cap - k_, 0, MASK_KPC);                                            \
        fa_cp_async16_bytes((__local ushort *)(mask_s + ((buf) * BLOCK_Q + r_) * MASK_PITCH +           \
                                               ((e % MASK_CHUNKS * 16) ^ FA_MASK_SWZ(r_))),               \
                            (__global const ushort *)(mask + mask_rows[r_] + (n_ > 0 ? (ulong)k_ : 0)),   \
                            n_ * MASK_ES);                                                                \
    }
#else
#define MASK_HALVES 0
#define FA_MASK_TILE_COPY(buf, k0, cl)
#endif

/* FA_PERSISTENT: the O tile has space of its own after the rest (the producer fills Q's and the
 * stages with the next tile's while the consumers store this one's); with a mask (its tiles by TMA)
 * O goes out as pairs from the accumulators, without a tile */
#ifdef FA_PERSISTENT
#if !defined(FA_WG_PRODUCER) || !defined(FA_KV_TMA) || (defined(FA_MASK) && !defined(FA_MASK_TMA)) || \
    defined(FA_SPLIT) || defined(FA_KV_CHUNKED) || defined(FA_SERVING) || defined(FA_SMEM_FLOOR) ||      \
    HEAD_DIM % 8 != 0 || D_PAD > 128
#error "FA_PERSISTENT: the producer copying by TMA, a dense plan (a mask's tiles by TMA), no splits or chunks, D_PAD <= 128"
#endif
#define O_TILE_AT (SMEM_HALVES + MASK_HALVES)
#ifdef FA_MASK
#define O_TILE_HALVES 0
#else
#define O_TILE_HALVES (BLOCK_Q * ROW)
#endif
#else
#define O_TILE_HALVES 0
#endif

/* FA_SMEM_FLOOR (bytes): local memory asked for at least this much, so that fewer work-groups
 * share an SM (and its L1, which cp.async.ca's copies pass through) than registers would allow */
#ifdef FA_SMEM_FLOOR
#define FA_SMEM_DECL_HALVES FA_MAX_(SMEM_HALVES + MASK_HALVES, FA_SMEM_FLOOR / 2)
#else
#define FA_SMEM_DECL_HALVES (SMEM_HALVES + MASK_HALVES + O_TILE_HALVES)
#endif

#ifdef FA_ASYNC
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

/* packed store of two adjacent outputs (col even; the planner's alignment makes the pair 4-byte aligned) */
inline void fa_store_pair(__global fa_out_t *o, ulong i, int col, float x, float y)
{
#ifdef FA_SPLIT
    if (col < HEAD_DIM) o[i] = x;
    if (col + 1 < HEAD_DIM) o[i + 1] = y;
#elif defined(FA_ALIGNED16) && HEAD_DIM % 8 == 0
    (void)col;
    *(__global uint *)((__global ushort *)o + i) = fa_pack2(x, y);
#else
    if (col < HEAD_DIM) fa_store1(o, i, x);
    if (col + 1 < HEAD_DIM) fa_store1(o, i + 1, y);
#endif
}

#if defined(FA_MASK_TMA) || defined(FA_KV_TMA)
/* a stride of a dim of `extent`: the tensor's where it steps, else (never stepped) `other`, so that
 * every stride is a multiple of 16 bytes */
inline ulong fa_tma_stride(long s, int extent, ulong other) { return extent > 1 ? (ulong)s : other; }

/* The plan's first launch: the tensor maps its forward copies through into the scratch (one
 * work-item; maps FA_TMA_MAP_*). Q, K, V: dims head_dim, rows, heads, batches, boxes of 64
 * columns x the block's rows. The mask: its keys, rows, heads, batches; a dim it broadcasts over
 * (stride 0) has extent 1 and is read at 0; boxes of 128 bytes of keys x BLOCK_Q rows. Columns,
 * rows and keys past the tensors' read zeros. */
__kernel void fa_tma_maps(__global float *scratch, __global const ushort *q, __global const ushort *k,
                          __global const ushort *v, ulong q_off, ulong k_off, ulong v_off, long qs0, long qs1,
                          long qs2, long ks0, long ks1, long ks2, long vs0, long vs1, long vs2, int batch, int heads_q,
                          int heads_kv, int seqlen_q, int seqlen_k, __global const uchar *mask, ulong mask_off,
                          long ms0, long ms1, long ms2)
{
    if (get_global_id(0) != 0)
        return;
    __global ulong *const maps = (__global ulong *)scratch;
#ifdef FA_PERSISTENT
    ((__global uint *)scratch)[FA_TILE_COUNTER] = 0u; /* the forward after takes its tiles from here */
#endif
    (void)q, (void)k, (void)v, (void)q_off, (void)k_off, (void)v_off, (void)qs0, (void)qs1, (void)qs2, (void)ks0,
        (void)ks1, (void)ks2, (void)vs0, (void)vs1, (void)vs2, (void)heads_kv, (void)mask, (void)mask_off, (void)ms0,
        (void)ms1, (void)ms2;
#ifdef FA_KV_TMA
    {
        const ulong q1 = (ulong)qs2 * 2, k1 = (ulong)ks2 * 2, v1 = (ulong)vs2 * 2;
        fa_tma_map_write(maps + FA_TMA_MAP_Q * 16, (ulong)(q + q_off), HEAD_DIM, (uint)seqlen_q, (uint)heads_q,
                         (uint)batch, q1, fa_tma_stride(qs1 * 2, heads_q, q1), fa_tma_stride(qs0 * 2, batch, q1), 64,
                         BLOCK_Q, 2);
        fa_tma_map_write(maps + FA_TMA_MAP_K * 16, (ulong)(k + k_off), HEAD_DIM, (uint)seqlen_k, (uint)heads_kv,
                         (uint)batch, k1, fa_tma_stride(ks1 * 2, heads_kv, k1), fa_tma_stride(ks0 * 2, batch, k1), 64,
                         BLOCK_KV, 2);
        fa_tma_map_write(maps + FA_TMA_MAP_V * 16, (ulong)(v + v_off), HEAD_DIM, (uint)seqlen_k, (uint)heads_kv,
                         (uint)batch, v1, fa_tma_stride(vs1 * 2, heads_kv, v1), fa_tma_stride(vs0 * 2, batch, v1), 64,
                         BLOCK_KV, 2);
    }
#endif
#ifdef FA_MASK_TMA
    {
        const ulong s1 = (ulong)ms2 * MASK_ES;
        fa_tma_map_write(maps + FA_TMA_MAP_MASK * 16, (ulong)(mask + mask_off * MASK_ES), (uint)seqlen_k,
                         (uint)seqlen_q, ms1 != 0 ? (uint)heads_q : 1u, ms0 != 0 ? (uint)batch : 1u, s1,
                         ms1 != 0 ? (ulong)ms1 * MASK_ES : s1, ms0 != 0 ? (ulong)ms0 * MASK_ES : s1, 128u / MASK_ES,
                         BLOCK_Q, MASK_ES);
    }
#endif
}
#endif

/* One tile (query block, head column) of the forward, by the producer's work-items (producer) or
 * the others. A function of its own so that a persistent kernel calls it in one loop a role
 * (always inlined, the role a constant there): ptxas gives the consumers their setmaxnreg
 * registers only where no code is shared with the producer. *jk, *jv: the K stages' and V entries'
 * uses so far (their stages and phases), *nq: the Q tiles copied (the producer's). */
inline __attribute__((always_inline)) void fa_forward_tile(FA_FORWARD_PARAMS, __local ushort *smem,
                                                           __local ulong *mask_rows, __local ulong *mbar,
                                                           ulong tile, int producer, int *jk_, int *jv_,
                                                           int *nq_ FA_EMU_PARAM)
{
    __local ushort *const q_s = smem;
    __local ushort *const k_s = smem + KV_AT;
    __local ushort *const v_s = smem + KV_AT + TILE_BUFS * TILE;
#if defined(FA_KV_Q8) && defined(FA_ASYNC)
    __local uchar *const kst = (__local uchar *)(smem + Q8_AT); /* K stages, then V's */
    __local uchar *const vst = kst + NBUF * Q8_STAGE;
#endif
#ifdef FA_MASK_TILE
    __local uchar *const mask_s = (__local uchar *)(smem + SMEM_HALVES);
#endif
    const int lid = (int)get_local_id(0);
    const int warp = lid / 32, lane = lid % 32;
    const int g = lane / 4, t4 = lane % 4;
#ifdef FA_WG_PRODUCER
    __local ulong *const kfull = mbar, *const kempty = mbar + NBUF, *const vfull = mbar + 2 * NBUF,
                         *const vempty = mbar + 3 * NBUF;
#ifdef FA_PERSISTENT
    __local ulong *const qempty = mbar + 4 * NBUF;
#endif
    int jk = *jk_, jv = *jv_;
#endif
    (void)mask_rows, (void)mbar, (void)tile, (void)producer, (void)jk_, (void)jv_, (void)nq_;
    FA_BLOCK_COORDS
    __global const ushort *qg = (__global const ushort *)q;
    __global const ushort *kg = (__global const ushort *)k;
    __global const ushort *vg = (__global const ushort *)v;
    const int kslice = warp % FA_KV_WARPS;        /* this warp's slice of each key block */
    const int wrow = warp / FA_KV_WARPS * WARP_ROWS; /* its first row in the block */
    const int koff = kslice * KW;                  /* its first key in a block */

    const fa_row_map qmap = fa_q_map(FA_Q_HEAD0, qs1, qs2, seqlen_q);
#if defined(FA_MASK_TILE) && !defined(FA_MASK_TMA)
    for (int r = lid; r < BLOCK_Q; r += WG)
        mask_rows[r] = FA_MASK_ROW(q0 + r);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
#ifdef FA_WG_PRODUCER
    /* Q comes with K_0 (the producer's) */
#elif defined(FA_ASYNC) && !defined(FA_Q_REGS) && !defined(FA_KV_Q8)
    /* Q in a tile of its own: copied asynchronously into the first K/V block's commit group (the
     * loop's first wait and barrier cover both), so that its latency overlaps the first block's */
#define FA_Q_ASYNC 1
    fa_copy_q_async(q_s, qg, qmap, q0, nrows, lid, WG);
#else
    fa_load_tile(q_s, qg, qmap, 0, q0, BLOCK_Q, nrows, lid);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif

#if defined(FA_Q_REGS) && defined(FA_KEYS_M)
    /* the block's 8 rows of Q as B fragments (Q^T, row g as column g), for every k-step: dims in
     * K's order (fa_q8_key_words) */
    uint qt[KSTEPS][2];
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++) {
        __local const ushort *r0 = q_s + g * ROW + t4 * (D_PAD / 4) + 4 * kk;
        qt[kk][0] = *(__local const uint *)r0;
        qt[kk][1] = *(__local const uint *)(r0 + 2);
    }
    barrier(CLK_LOCAL_MEM_FENCE); /* Q's space is the stages' from here on */
#elif defined(FA_Q_REGS)
    /* this warp's 16 rows of Q as A fragments, for every k-step */
    uint qa[KSTEPS][4];
#ifdef FA_Q8_FRAGS
    /* dims t4 D/4 + 4 kk + {0, 1} and {2, 3} as k-step kk's positions 2 t4 + {0, 1} and {8, 9} */
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++) {
        __local const ushort *r0 = q_s + (wrow + g) * ROW + t4 * (D_PAD / 4) + 4 * kk, *r1 = r0 + 8 * ROW;
        qa[kk][0] = *(__local const uint *)r0;
        qa[kk][1] = *(__local const uint *)r1;
        qa[kk][2] = *(__local const uint *)(r0 + 2);
        qa[kk][3] = *(__local const uint *)(r1 + 2);
    }
#else
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++)
        fa_ldsm_x4(q_s + (wrow + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &qa[kk][0], &qa[kk][1],
                   &qa[kk][2], &qa[kk][3] FA_EMU_ARG);
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* Q's space is K/V's from here on */
#endif

    /* the rows this lane holds: per m-tile, wrow + 16 mt + g and + 8 */
    float m[MT][2], l[MT][2];
    float4 acc[MT][DT];
    FA_PRAGMA_UNROLL
    for (int mt = 0; mt < MT; mt++) {
        FA_PRAGMA_UNROLL
        for (int r = 0; r < 2; r++) {
            m[mt][r] = -INFINITY;
            l[mt][r] = 0.0f;
        }
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++)
            acc[mt][dt] = (float4)(0.0f);
    }

    int blk_lo, blk_hi, unused, unused2;
    FA_ROWS_SPAN(q0, q0 + BLOCK_Q - 1, &blk_lo, &unused, &unused2, &blk_hi);
    FA_CLIP_KEYS(blk_lo, blk_hi);
    /* keys every row of this warp sees: [clean_lo, clean_hi) (lo and hi grow with the position) */
    int clean_lo = 0, clean_hi = 0;
    if (q0 + wrow < nrows) /* rows past nrows (zeros, never written) need no mask: FA_ROWS_SPAN drops them */
        FA_ROWS_SPAN(q0 + wrow, q0 + wrow + WARP_ROWS_SEEN - 1, &unused, &clean_hi, &clean_lo, &unused2);

    const int kv_first = blk_lo / BLOCK_KV * BLOCK_KV;
#ifdef FA_WG_PRODUCER
    if (producer) {
        /* the producer: for block i, K_i (with Q at i = 0, and the mask's tile) into K stage jk %
         * NBUF, then V_{i-1} as V entry i into V stage jv % NBUF, each once its stage's previous
         * contents are released; entry 0 is zeros */
        const int pl = lid - WG;
#ifndef FA_PERSISTENT
        fa_setmaxnreg_dec(FA_WG_PRODUCER_REGS);
#ifdef FA_KV_TMA
        if (pl != 0) /* one work-item copies everything (bulk tensor copies), the others are done */
            return;
        for (int i = 0; i < 3; i++)
            fa_tma_map_acquire((__global const ulong *)scratch + FA_TMA_MAP_Q * 16 + 16 * i);
#endif
#else
        int nq = *nq_;
#endif
#ifdef FA_KV_TMA
        __global const ulong *const maps = (__global const ulong *)scratch;
#endif
#ifdef FA_MASK_TMA
        __global const ulong *const mask_map = (__global const ulong *)scratch + FA_TMA_MAP_MASK * 16;
        const int mask_c2 = ms1 != 0 ? h : 0, mask_c3 = ms0 != 0 ? (int)b : 0; /* broadcast dims: extent 1 */
#ifndef FA_PERSISTENT /* there, once (the kernel) */
        if (pl == 0)
            fa_tma_map_acquire(mask_map);
#endif
#endif
        for (int kv0 = kv_first, i = 0;; kv0 += BLOCK_KV, i++) {
            const int more = kv0 < blk_hi;
            if (more) {
                const int st = jk % NBUF;
                fa_mbar_wait(kempty + st, ((uint)(jk / NBUF) & 1u) ^ 1u); /* the release of its last use */
#ifdef FA_MASK_TMA
                if (pl == 0) { /* first: the mask's bytes join K's stage barrier before any arrival */
                    fa_mbar_expect_tx(kfull + st, BLOCK_Q * MASK_PITCH);
                    FA_PRAGMA_UNROLL
                    for (int p = 0; p < MASK_PANELS; p++)
                        fa_tma_load_4d(mask_s + (st * MASK_PANELS + p) * BLOCK_Q * 128, mask_map, kv0 + p * (128 / MASK_ES),
                                       q0, mask_c2, mask_c3, kfull + st);
                }
#endif
#ifdef FA_KV_TMA
                /* Q (block 0) and K_i: 64-column panels of the tiles, the tensor core's layout as they land */
                fa_mbar_expect_tx(kfull + st, (i == 0 ? BLOCK_Q * D_PAD * 2 : 0) + BLOCK_KV * D_PAD * 2);
                FA_PRAGMA_UNROLL
                for (int p = 0; p < D_PAD / 64; p++)
                    fa_tma_load_4d(k_s + st * TILE + p * BLOCK_KV * 64, maps + FA_TMA_MAP_K * 16, 64 * p, kv0, hk, (int)b,
                                   kfull + st);
                if (i == 0) {
#ifdef FA_PERSISTENT
                    if (nq > 0) /* the consumers are done with the previous tile's Q */
                        fa_mbar_wait(qempty, (uint)(nq - 1) & 1u);
                    nq++;
#endif
                    FA_PRAGMA_UNROLL
                    for (int p = 0; p < D_PAD / 64; p++)
                        fa_tma_load_4d(q_s + p * BLOCK_Q * 64, maps + FA_TMA_MAP_Q * 16, 64 * p, q0, h, (int)b, kfull + st);
                }
                fa_mbar_arrive(kfull + st);
#else
                if (i == 0)
                    fa_copy_q_async(q_s, qg, qmap, q0, nrows, pl, CP_WG);
                fa_load_kv_async(k_s + st * TILE, v_s, kg, vg, kmap, vmap, kv0, seqlen_k, pl, 1, 0);
#ifndef FA_MASK_TMA
                FA_MASK_TILE_COPY(st, kv0, pl)
#endif
                fa_mbar_arrive_copies(kfull + st);
#endif
                jk++;
            }
#ifdef FA_WG_PEEL
            if (i > 0 || !more) /* V_{i-1}; a tile without blocks: one entry of zeros */
#endif
            {
                const int st = jv % NBUF;
#ifdef FA_PERSISTENT
                /* entry 0: keys past the tensor's, which TMA fills with zeros */
                fa_mbar_wait(vempty + st, ((uint)(jv / NBUF) & 1u) ^ 1u);
                fa_mbar_expect_tx(vfull + st, BLOCK_KV * D_PAD * 2);
                FA_PRAGMA_UNROLL
                for (int p = 0; p < D_PAD / 64; p++)
                    fa_tma_load_4d(v_s + st * TILE + p * BLOCK_KV * 64, maps + FA_TMA_MAP_V * 16, 64 * p,
                                   i > 0 ? kv0 - BLOCK_KV : seqlen_k, hk, (int)b, vfull + st);
                fa_mbar_arrive(vfull + st);
#else
                if (i == 0) { /* entry 0: the zeros written at the start */
                    fa_mbar_arrive(vfull);
                } else {
                    fa_mbar_wait(vempty + st, ((uint)(jv / NBUF) & 1u) ^ 1u);
#ifdef FA_KV_TMA
                    fa_mbar_expect_tx(vfull + st, BLOCK_KV * D_PAD * 2);
                    FA_PRAGMA_UNROLL
                    for (int p = 0; p < D_PAD / 64; p++)
                        fa_tma_load_4d(v_s + st * TILE + p * BLOCK_KV * 64, maps + FA_TMA_MAP_V * 16, 64 * p,
                                       kv0 - BLOCK_KV, hk, (int)b, vfull + st);
                    fa_mbar_arrive(vfull + st);
#else
                    fa_load_kv_async(k_s, v_s + st * TILE, kg, vg, kmap, vmap, kv0 - BLOCK_KV, seqlen_k, pl, 0, 1);
                    fa_mbar_arrive_copies(vfull + st);
#endif
                }
#endif
                jv++;
            }
            if (!more)
                break;
        }
#ifdef FA_PERSISTENT
        *jk_ = jk;
        *jv_ = jv;
        *nq_ = nq;
#else
        fa_cp_async_wait_all();
#endif
        return; /* past here only named barriers of the consumers' work-items */
    }
#ifndef FA_PERSISTENT
    fa_setmaxnreg_inc(FA_WG_CONSUMER_REGS);
#endif
#elif defined(FA_ASYNC)
    /* the first STAGES - 1 blocks; a commit group per block, empty past the end, so that
     * wait_group STAGES - 2 in the loop means "this block is in" */
    FA_PRAGMA_UNROLL
    for (int st = 0; st < NBUF - 1; st++) {
        if (kv_first + st * BLOCK_KV < blk_hi)
#if defined(FA_WGMMA)
        {
            fa_load_kv_async(k_s + st * TILE, v_s, kg, vg, kmap, vmap, kv_first + st * BLOCK_KV, seqlen_k, lid, 1, 0);
            FA_MASK_TILE_COPY(st, kv_first + st * BLOCK_KV, lid)
        }
#elif defined(FA_KV_Q8)
            fa_load_kv_q8_async(kst + st * Q8_STAGE, vst + st * Q8_STAGE, (__global const uchar *)k,
                                (__global const uchar *)v, kmap, vmap, kv_first + st * BLOCK_KV, seqlen_k, lid);
#else
        {
            fa_load_kv_async(k_s + st * TILE, v_s + st * TILE, kg, vg, kmap, vmap, kv_first + st * BLOCK_KV, seqlen_k, lid,
                             1, 1);
            FA_MASK_TILE_COPY(st, kv_first + st * BLOCK_KV, lid)
        }
#endif
        fa_cp_async_commit();
    }
    int cur = 0; /* this block's buffer */
#endif
#ifdef FA_WGMMA
    /* Software-pipelined (FlashAttention-3's intra-warpgroup overlap): block j's S = Q K_j^T and
     * block j-1's O += P_{j-1} V_{j-1} are issued together, and block j's softmax runs while the
     * second is computed. O lives in ow; K_j and V_{j-1} are in local memory at once, so V trails K
     * by a block in the copies: block j's commit group copies K_{j+1} and V_j. */
    float ow[D_PAD / 2];
    FA_PRAGMA_UNROLL
    for (int i = 0; i < D_PAD / 2; i++)
        ow[i] = 0.0f;
    /* The previous block's P. Every block issues and waits for the same products, the first with
     * P = 0 against a zero V tile (ptxas serialises wgmma whose waits it cannot match; predicated
     * off, it injects warpgroup.arrive, slower on an H200 at every d_pad: commit e0d134e) */
    uint pa[KW / 16][4];
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < KW / 16; kk2++)
        pa[kk2][0] = pa[kk2][1] = pa[kk2][2] = pa[kk2][3] = 0u;
#ifdef FA_WG_PINGPONG
    /* FlashAttention-3's ping-pong of two warpgroups: they take turns issuing a block's products
     * (named barriers 1 and 2), so that one's softmax runs under the other's products; the second
     * lets the first go first */
    if (warp / 4 == 1)
        fa_bar_arrive(1, 256);
#endif
#ifndef FA_WG_PRODUCER
    for (int e = lid; e < TILE / 8; e += WG)
        *(__local uint4 *)(v_s + TILE + 8 * e) = (uint4)(0u);
#endif
#endif
#ifdef FA_WG_PEEL
    /* the loop twice, unrolled: a copy for the first block (peel 1, a constant there: no predicated
     * wgmma, which ptxas serialises) that leaves after it, then the loop for the rest */
    int kv0 = kv_first;
    FA_PRAGMA_UNROLL
    for (int peel = 1; peel >= 0; peel--)
    for (; kv0 < blk_hi; kv0 += BLOCK_KV) {
#else
    for (int kv0 = kv_first; kv0 < blk_hi; kv0 += BLOCK_KV) {
#endif
#ifdef FA_WG_PRODUCER
        const int st = jk % NBUF, sv = jv % NBUF;
        __local const ushort *kc = k_s + st * TILE, *vc = v_s + sv * TILE; /* K_j, V_{j-1} */
#ifdef FA_MASK_TILE
        __local const uchar *mc = mask_s + st * BLOCK_Q * MASK_PITCH;
#endif
        fa_mbar_wait(kfull + st, (uint)(jk / NBUF) & 1u);
        fa_wg_fence_proxy(); /* the copies, seen through the mbarrier, are seen by wgmma's reads */
#elif defined(FA_ASYNC)
#ifdef FA_Q8_FRAGS
        __local const uchar *const kq = kst + cur * Q8_STAGE, *const vq = vst + cur * Q8_STAGE;
#elif defined(FA_KV_Q8)
        __local const ushort *kc = k_s, *vc = v_s;
#elif defined(FA_WGMMA)
        __local const ushort *kc = k_s + cur * TILE, *vc = v_s + (1 - cur) * TILE; /* K_j, V_{j-1} */
#else
        __local const ushort *kc = k_s + cur * TILE, *vc = v_s + cur * TILE;
#endif
#ifdef FA_MASK_TILE
        __local const uchar *mc = mask_s + cur * BLOCK_Q * MASK_PITCH; /* this block's mask entries */
#endif
        FA_WAIT_BLOCK();
#ifdef FA_WGMMA
        fa_wg_fence_proxy(); /* the copies are seen by wgmma's reads */
#endif
        barrier(CLK_LOCAL_MEM_FENCE); /* this block is in; every warp is done with the buffer refilled next */
        {
            const int ahead = kv0 + (NBUF - 1) * BLOCK_KV, buf = cur == 0 ? NBUF - 1 : cur - 1;
#if defined(FA_WGMMA)
            /* K_{j+1} where K_{j-1} was, V_j where V_{j-2} was (both read by products waited for) */
            if (ahead < blk_hi) {
                fa_load_kv_async(k_s + buf * TILE, v_s, kg, vg, kmap, vmap, ahead, seqlen_k, lid, 1, 0);
                FA_MASK_TILE_COPY(buf, ahead, lid)
            }
            fa_load_kv_async(k_s, v_s + cur * TILE, kg, vg, kmap, vmap, kv0, seqlen_k, lid, 0, 1);
#else
            if (ahead < blk_hi)
#endif
#if defined(FA_WGMMA)
#elif defined(FA_KV_Q8)
                fa_load_kv_q8_async(kst + buf * Q8_STAGE, vst + buf * Q8_STAGE, (__global const uchar *)k,
                                    (__global const uchar *)v, kmap, vmap, ahead, seqlen_k, lid);
#else
            {
                fa_load_kv_async(k_s + buf * TILE, v_s + buf * TILE, kg, vg, kmap, vmap, ahead, seqlen_k, lid, 1, 1);
                FA_MASK_TILE_COPY(buf, ahead, lid)
            }
#endif
            fa_cp_async_commit();
        }
#if defined(FA_KV_Q8) && !defined(FA_Q8_FRAGS)
        /* every warp is past the previous block's products (the barrier above): its tiles are free */
        fa_dequant_q8(k_s, kst + cur * Q8_STAGE, lid);
        fa_dequant_q8(v_s, vst + cur * Q8_STAGE, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        cur = cur == NBUF - 1 ? 0 : cur + 1;
#else
        __local const ushort *kc = k_s, *vc = v_s;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's K and V are consumed */
#ifdef FA_KV_Q8
        fa_load_tile_q8(k_s, (__global const uchar *)k, kmap, kv0, BLOCK_KV, seqlen_k, lid);
        fa_load_tile_q8(v_s, (__global const uchar *)v, vmap, kv0, BLOCK_KV, seqlen_k, lid);
#else
        fa_load_tile(k_s, kg, kmap, 1, kv0, BLOCK_KV, seqlen_k, lid);
        fa_load_tile(v_s, vg, vmap, 1, kv0, BLOCK_KV, seqlen_k, lid);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

#ifdef FA_KEYS_M
        /* S^T = K Q^T, a warp's key tile mt of 16 keys: lane (g, t4) has keys g and g + 8 (A's rows),
         * dims in Q's order; st[mt] is (key g: rows 2 t4, 2 t4 + 1; key g + 8: the same rows) */
        float4 st[KT];
        FA_PRAGMA_UNROLL
        for (int mt = 0; mt < KT; mt++) {
            uint w[2][KSTEPS], d2[2];
            FA_PRAGMA_UNROLL
            for (int h = 0; h < 2; h++)
                fa_q8_key_words(kq, koff + 16 * mt + FA_Q8_KEY(8 * h + g), t4, w[h], &d2[h]);
            st[mt] = (float4)(0.0f);
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++) {
                const uint2 a = fa_q8x4_scaled(w[0][kk], d2[0]), b = fa_q8x4_scaled(w[1][kk], d2[1]);
                fa_mma(&st[mt], a.x, b.x, a.y, b.y, qt[kk][0], qt[kk][1] FA_EMU_ARG);
            }
        }
        if (!(kv0 >= clean_lo && kv0 + BLOCK_KV <= clean_hi)) {
            int lo[2], hi[2];
            FA_PRAGMA_UNROLL
            for (int r = 0; r < 2; r++)
                FA_ROW_RANGE(q0 + 2 * t4 + r, &lo[r], &hi[r]);
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < KT; mt++) {
                const int key = kv0 + koff + 16 * mt + FA_Q8_KEY(g), key8 = kv0 + koff + 16 * mt + FA_Q8_KEY(g + 8);
                st[mt].x = (key >= lo[0] && key < hi[0]) ? st[mt].x : -INFINITY;
                st[mt].y = (key >= lo[1] && key < hi[1]) ? st[mt].y : -INFINITY;
                st[mt].z = (key8 >= lo[0] && key8 < hi[0]) ? st[mt].z : -INFINITY;
                st[mt].w = (key8 >= lo[1] && key8 < hi[1]) ? st[mt].w : -INFINITY;
            }
        }
        /* online softmax by columns: a row's keys are across the 8 lanes of a t4 */
        {
            float mx0 = m[0][0], mx1 = m[0][1];
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < KT; mt++) {
                mx0 = fmax(mx0, fmax(st[mt].x, st[mt].z));
                mx1 = fmax(mx1, fmax(st[mt].y, st[mt].w));
            }
            FA_PRAGMA_UNROLL
            for (int sh = 4; sh < 32; sh *= 2) {
                mx0 = fmax(mx0, fa_shfl_xor(mx0, sh FA_EMU_ARG));
                mx1 = fmax(mx1, fa_shfl_xor(mx1, sh FA_EMU_ARG));
            }
            const float uc0 = (mx0 == -INFINITY) ? 0.0f : mx0 * scale_log2;
            const float uc1 = (mx1 == -INFINITY) ? 0.0f : mx1 * scale_log2;
            if (mx0 != m[0][0] || mx1 != m[0][1]) {
                const float d0 = fa_ex2(fma(m[0][0], scale_log2, -uc0)), d1 = fa_ex2(fma(m[0][1], scale_log2, -uc1));
                FA_PRAGMA_UNROLL
                for (int dm = 0; dm < DT / 2; dm++)
                    acc[0][dm] *= (float4)(d0, d1, d0, d1);
                l[0][0] *= d0;
                l[0][1] *= d1;
            }
            m[0][0] = mx0;
            m[0][1] = mx1;
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < KT; mt++) {
                st[mt].x = fa_ex2(fma(st[mt].x, scale_log2, -uc0));
                st[mt].y = fa_ex2(fma(st[mt].y, scale_log2, -uc1));
                st[mt].z = fa_ex2(fma(st[mt].z, scale_log2, -uc0));
                st[mt].w = fa_ex2(fma(st[mt].w, scale_log2, -uc1));
                l[0][0] += st[mt].x + st[mt].z; /* this lane's keys; the 8 lanes are added at the end */
                l[0][1] += st[mt].y + st[mt].w;
            }
        }
        /* O^T += V^T P^T, a key tile a k-step: P^T's two 8 x 8 halves transposed are the B fragment
         * (keys 2 t4 + {0, 1}, {8, 9} of column g); V^T's A fragments of dim tile dm are rows
         * g D/8 + dm (row g) and g D/8 + D/16 + dm (row g + 8), O^T's the same */
        FA_PRAGMA_UNROLL
        for (int mt = 0; mt < KT; mt++) {
            const uint b0 = fa_movmatrix_trans(fa_pack2(st[mt].x, st[mt].y) FA_EMU_ARG);
            const uint b1 = fa_movmatrix_trans(fa_pack2(st[mt].z, st[mt].w) FA_EMU_ARG);
            uint bv[2][DT];
            fa_q8_value_frags(vq, koff + 16 * mt, t4, g, bv);
            FA_PRAGMA_UNROLL
            for (int dm = 0; dm < DT / 2; dm++)
                fa_mma(&acc[0][dm], bv[0][dm], bv[0][DT / 2 + dm], bv[1][dm], bv[1][DT / 2 + dm], b0, b1 FA_EMU_ARG);
        }
#else
        /* S = Q K^T: s[mt][nt] holds rows (g, g+8) of m-tile mt x keys nt*8 + 2*t4 + {0,1} */
        float4 s[MT][NT];
        FA_PRAGMA_UNROLL
        for (int mt = 0; mt < MT; mt++)
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt++)
                s[mt][nt] = (float4)(0.0f);
#if defined(FA_WGMMA)
        {
            /* this warpgroup's 64 rows of Q against the block's keys, k-step by k-step */
            float sw[BLOCK_KV / 2];
            const ulong dq = fa_wg_desc_kmajor(q_s + FA_Q_AT(warp / 4 * 64, 0), D_PAD, BLOCK_Q);
            const ulong dk = fa_wg_desc_kmajor(kc, D_PAD, BLOCK_KV);
#ifdef FA_WG_PINGPONG
            if (warp < 4) /* this warpgroup's turn to issue */
                fa_bar_sync(1, 256);
            else
                fa_bar_sync(2, 256);
#endif
            fa_wgmma_fence(BLOCK_KV)(sw);
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++)
                fa_wgmma_ss(BLOCK_KV)(sw, dq + fa_wg_kstep_kmajor(kk, D_PAD, BLOCK_Q),
                                      dk + fa_wg_kstep_kmajor(kk, D_PAD, BLOCK_KV), kk > 0);
            fa_wgmma_commit();
#ifdef FA_WG_PEEL
            if (peel) {
                fa_wgmma_commit(); /* an empty group: the wait below is for S all the same */
            } else
#endif
            {
#ifdef FA_WG_PRODUCER
                fa_mbar_wait(vfull + sv, (uint)(jv / NBUF) & 1u);
                fa_wg_fence_proxy();
#endif
                fa_wg_pv(ow, pa, vc);
            }
#ifdef FA_WG_PINGPONG
            if (warp < 4) /* the other's turn */
                fa_bar_arrive(2, 256);
            else
                fa_bar_arrive(1, 256);
#endif
            fa_wgmma_wait1(BLOCK_KV)(sw); /* S is in; P V may still run */
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt++)
                s[0][nt] = (float4)(sw[4 * nt], sw[4 * nt + 1], sw[4 * nt + 2], sw[4 * nt + 3]);
        }
#elif defined(FA_Q8_FRAGS)
        /* lane (g, t4): key g of n-tile nt, dims t4 D/4 .. + D/4 (within one q8_0 block: one scale),
         * a word a k-step */
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NT; nt++) {
            uint w[KSTEPS], d2;
            fa_q8_key_words(kq, koff + nt / 2 * 16 + FA_Q8_KEY(nt % 2 * 8 + g), t4, w, &d2);
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++) {
                const uint2 b = fa_q8x4_scaled(w[kk], d2);
                fa_mma(&s[0][nt], qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3], b.x, b.y FA_EMU_ARG);
            }
        }
#elif defined(FA_Q_REGS)
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NT; nt++) {
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk += 2) {
                uint b0, b1, b2, b3;
                fa_ldsm_x4(kc + (koff + nt * 8 + lane % 8) * ROW + kk * 16 + (lane / 8) * 8, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                fa_mma(&s[0][nt], qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3], b0, b1 FA_EMU_ARG);
                fa_mma(&s[0][nt], qa[kk + 1][0], qa[kk + 1][1], qa[kk + 1][2], qa[kk + 1][3], b2, b3 FA_EMU_ARG);
            }
        }
#else
        FA_PRAGMA_UNROLL
        for (int kk = 0; kk < KSTEPS; kk++) {
            uint qf[MT][4];
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++)
                fa_ldsm_x4(q_s + (wrow + 16 * mt + lane % 16) * ROW + kk * 16 + (lane / 16) * 8,
                           &qf[mt][0], &qf[mt][1], &qf[mt][2], &qf[mt][3] FA_EMU_ARG);
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt += 2) {
                /* matrices: keys of n-tile nt (k 0-7, 8-15), then of n-tile nt + 1 */
                uint b0, b1, b2, b3;
                fa_ldsm_x4(kc + (koff + (nt + lane / 16) * 8 + lane % 8) * ROW + kk * 16 + ((lane / 8) % 2) * 8,
                           &b0, &b1, &b2, &b3 FA_EMU_ARG);
                FA_PRAGMA_UNROLL
                for (int mt = 0; mt < MT; mt++) {
                    fa_mma(&s[mt][nt], qf[mt][0], qf[mt][1], qf[mt][2], qf[mt][3], b0, b1 FA_EMU_ARG);
                    fa_mma(&s[mt][nt + 1], qf[mt][0], qf[mt][1], qf[mt][2], qf[mt][3], b2, b3 FA_EMU_ARG);
                }
            }
        }
#endif

#ifdef FA_MASK
        /* the attention mask's terms (raw units), before the visibility mask below. A block inside
         * the mask's keys takes each lane's pairs of keys as one load at a constant offset from
         * the row's entry (FA_MASK_PAIRS); a tail block clamps every key. */
#ifdef FA_MASK_READ_LDSM
        if (1) {
            /* 16-bit entries in TMA's panels by ldmatrix: lanes 8i .. 8i + 7 give matrix i's rows (i % 2:
             * rows g or g + 8, i / 2: the n-tile of a pair), each lane then holds its pairs of keys as
             * the accumulators do; 8 rows of one chunk column are 8 bank groups (the swizzle) */
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++) {
                const int mi = lane / 8, rr = lane % 8;
                __local const uchar *lp = mc + (wrow + 16 * mt + rr + 8 * (mi % 2)) * MASK_ROW_STEP;
                const int lane_x = (16 * (mi / 2)) ^ (rr << 4);
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NT; nt += 2) {
                    uint a0, c0, a1, c1;
                    fa_ldsm_x4((__local const ushort *)(lp + 16 * nt / 128 * (BLOCK_Q * 128) + ((16 * nt % 128) ^ lane_x)),
                               &a0, &c0, &a1, &c1 FA_EMU_ARG);
                    s[mt][nt] = mad((float4)(FA_MASK_CVT(a0), FA_MASK_CVT(c0)), (float4)(mask_scale), s[mt][nt]);
                    s[mt][nt + 1] = mad((float4)(FA_MASK_CVT(a1), FA_MASK_CVT(c1)), (float4)(mask_scale), s[mt][nt + 1]);
                }
            }
        } else
#elif defined(FA_MASK_TILE)
        if (1) { /* tails too: the copies zero-filled keys past the mask's */
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++) {
                /* a lane's pair of keys of n-tile nt: at byte (lane's + 8 nt entries) ^ its rows' swizzle */
                const int r0 = wrow + 16 * mt + g;
                const int lane_at = ((koff + 2 * t4) * MASK_ES) ^ FA_MASK_SWZ(r0);
                __local const uchar *p0 = mc + r0 * MASK_ROW_STEP;
                __local const uchar *p1 = p0 + 8 * MASK_ROW_STEP;
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NT; nt++) {
                    const int at = FA_MASK_NT(lane_at, 8 * nt * MASK_ES);
                    const float2 a = FA_MASK_CVT(*(__local const fa_mask_raw_t *)(p0 + at));
                    const float2 c = FA_MASK_CVT(*(__local const fa_mask_raw_t *)(p1 + at));
                    s[mt][nt] = mad((float4)(a, c), (float4)(mask_scale), s[mt][nt]);
                }
            }
        } else
#elif defined(FA_MASK_PAIRS)
        if (kv0 + BLOCK_KV <= seqlen_k_cap) {
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++) {
                const ulong kfirst = (ulong)(kv0 + koff + 2 * t4);
                const ulong r0 = FA_MASK_ROW(q0 + wrow + 16 * mt + g) + kfirst;
                const ulong r1 = FA_MASK_ROW(q0 + wrow + 16 * mt + g + 8) + kfirst;
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NT; nt++) {
                    const float2 a = FA_MASK_PAIR(r0 + 8 * nt), c = FA_MASK_PAIR(r1 + 8 * nt);
                    s[mt][nt] = mad((float4)(a, c), (float4)(mask_scale), s[mt][nt]);
                }
            }
        } else
#endif
        {
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++) {
                const ulong r0 = FA_MASK_ROW(q0 + wrow + 16 * mt + g), r1 = FA_MASK_ROW(q0 + wrow + 16 * mt + g + 8);
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NT; nt++) {
                    const int key = kv0 + koff + nt * 8 + 2 * t4;
                    s[mt][nt] += (float4)(FA_MASK_TERM(r0, key), FA_MASK_TERM(r0, key + 1), FA_MASK_TERM(r1, key),
                                          FA_MASK_TERM(r1, key + 1));
                }
            }
        }
#endif
#ifdef FA_WG_PRODUCER
        if (lane == 0) /* S is in and the mask's terms read: K's stage is free */
            fa_mbar_arrive(kempty + st);
#endif
        /* mask, unless every row of the warp sees every key of the block; scores stay raw (the
         * scale goes into the exponent: 2^(s c - m c), below) */
        if (!(kv0 >= clean_lo && kv0 + BLOCK_KV <= clean_hi)) {
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++) {
                /* the visible ranges of this lane's two rows (recomputed here: fewer live registers) */
                int lo[2], hi[2];
                FA_PRAGMA_UNROLL
                for (int r = 0; r < 2; r++)
                    FA_ROW_RANGE(q0 + wrow + 16 * mt + g + 8 * r, &lo[r], &hi[r]);
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NT; nt++) {
                    const int key = kv0 + koff + FA_S_KEY(nt, 2 * t4), key1 = kv0 + koff + FA_S_KEY(nt, 2 * t4 + 1);
                    s[mt][nt].x = (key >= lo[0] && key < hi[0]) ? s[mt][nt].x : -INFINITY;
                    s[mt][nt].y = (key1 >= lo[0] && key1 < hi[0]) ? s[mt][nt].y : -INFINITY;
                    s[mt][nt].z = (key >= lo[1] && key < hi[1]) ? s[mt][nt].z : -INFINITY;
                    s[mt][nt].w = (key1 >= lo[1] && key1 < hi[1]) ? s[mt][nt].w : -INFINITY;
                }
            }
        }

        /* online softmax: row maxima over the block and the 4 lanes sharing each row */
#ifdef FA_WGMMA
        float o_scale[2]; /* this block's factors for O */
#endif
        FA_PRAGMA_UNROLL
        for (int mt = 0; mt < MT; mt++) {
            float mx0 = m[mt][0], mx1 = m[mt][1];
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt++) {
                mx0 = fmax(mx0, fmax(s[mt][nt].x, s[mt][nt].y));
                mx1 = fmax(mx1, fmax(s[mt][nt].z, s[mt][nt].w));
            }
            mx0 = fmax(mx0, fa_shfl_xor(mx0, 1 FA_EMU_ARG));
            mx0 = fmax(mx0, fa_shfl_xor(mx0, 2 FA_EMU_ARG));
            mx1 = fmax(mx1, fa_shfl_xor(mx1, 1 FA_EMU_ARG));
            mx1 = fmax(mx1, fa_shfl_xor(mx1, 2 FA_EMU_ARG));
            /* the scale folded into one fma per score: 2^(s c - u c) (FlashAttention-2's form) */
            const float uc0 = (mx0 == -INFINITY) ? 0.0f : mx0 * scale_log2;
            const float uc1 = (mx1 == -INFINITY) ? 0.0f : mx1 * scale_log2;
            /* what is held is rescaled only where a row's maximum grew (in most blocks of a long
             * row none does; a branch per warp) */
            float d0 = 1.0f, d1 = 1.0f;
            if (mx0 != m[mt][0] || mx1 != m[mt][1]) {
                d0 = fa_ex2(fma(m[mt][0], scale_log2, -uc0));
                d1 = fa_ex2(fma(m[mt][1], scale_log2, -uc1));
#ifndef FA_WGMMA /* there, once the previous block's P V is done (below) */
                FA_PRAGMA_UNROLL
                for (int dt = 0; dt < DT; dt++)
                    acc[mt][dt] *= (float4)(d0, d0, d1, d1);
#endif
            }
#ifdef FA_WGMMA
            o_scale[0] = d0;
            o_scale[1] = d1;
#endif
            m[mt][0] = mx0;
            m[mt][1] = mx1;
            float sum0 = 0.0f, sum1 = 0.0f;
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NT; nt++) {
                s[mt][nt].x = fa_ex2(fma(s[mt][nt].x, scale_log2, -uc0));
                s[mt][nt].y = fa_ex2(fma(s[mt][nt].y, scale_log2, -uc0));
                s[mt][nt].z = fa_ex2(fma(s[mt][nt].z, scale_log2, -uc1));
                s[mt][nt].w = fa_ex2(fma(s[mt][nt].w, scale_log2, -uc1));
                sum0 += s[mt][nt].x + s[mt][nt].y;
                sum1 += s[mt][nt].z + s[mt][nt].w;
            }
            l[mt][0] = l[mt][0] * d0 + sum0; /* partial over this lane's keys; the 4 lanes are added at the end */
            l[mt][1] = l[mt][1] * d1 + sum1;
        }

        /* O += P V: the accumulator layout of two S tiles is the A fragment of 16 keys */
#ifdef FA_WGMMA
        /* the previous block's P V done: O rescaled, this block's P packed for the next */
        fa_wg_wait_o(ow);
#ifdef FA_WG_PRODUCER
#ifdef FA_WG_PEEL
        if (!peel)
#endif
        {
            if (lane == 0) /* V entry j read */
                fa_mbar_arrive(vempty + sv);
            jv++;
        }
        jk++;
#endif
#ifdef FA_WG_PEEL
        if (!peel) /* O is zeros before the first block */
#endif
        if (o_scale[0] != 1.0f || o_scale[1] != 1.0f) {
            FA_PRAGMA_UNROLL
            for (int i = 0; i < D_PAD / 2; i++)
                ow[i] *= o_scale[i / 2 % 2];
        }
        FA_PRAGMA_UNROLL
        for (int kk2 = 0; kk2 < KW / 16; kk2++) {
            pa[kk2][0] = fa_pack2(s[0][2 * kk2].x, s[0][2 * kk2].y);
            pa[kk2][1] = fa_pack2(s[0][2 * kk2].z, s[0][2 * kk2].w);
            pa[kk2][2] = fa_pack2(s[0][2 * kk2 + 1].x, s[0][2 * kk2 + 1].y);
            pa[kk2][3] = fa_pack2(s[0][2 * kk2 + 1].z, s[0][2 * kk2 + 1].w);
        }
#else
        FA_PRAGMA_UNROLL
        for (int kk2 = 0; kk2 < KW / 16; kk2++) {
            uint pa[MT][4];
            FA_PRAGMA_UNROLL
            for (int mt = 0; mt < MT; mt++) {
                pa[mt][0] = fa_pack2(s[mt][2 * kk2].x, s[mt][2 * kk2].y);
                pa[mt][1] = fa_pack2(s[mt][2 * kk2].z, s[mt][2 * kk2].w);
                pa[mt][2] = fa_pack2(s[mt][2 * kk2 + 1].x, s[mt][2 * kk2 + 1].y);
                pa[mt][3] = fa_pack2(s[mt][2 * kk2 + 1].z, s[mt][2 * kk2 + 1].w);
            }
#ifdef FA_Q8_FRAGS
            /* lane (g, t4): keys 2 t4 + {0, 1} (b0) and + {8, 9} (b1) of the k-step, dims g D/8 .. + D/8
             * (column g of n-tile dt is dim g D/8 + dt), within one q8_0 block: a key's words
             * byte-interleaved with its pair's give a register of both keys' values a column */
            {
                uint bv[2][DT];
                fa_q8_value_frags(vq, koff + kk2 * 16, t4, g, bv);
                FA_PRAGMA_UNROLL
                for (int dt = 0; dt < DT; dt++)
                    fa_mma(&acc[0][dt], pa[0][0], pa[0][1], pa[0][2], pa[0][3], bv[0][dt], bv[1][dt] FA_EMU_ARG);
            }
#else
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt += 2) {
                uint b0, b1, b2, b3;
                fa_ldsm_x4_trans(vc + (koff + kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW + (dt + lane / 16) * 8, &b0,
                                 &b1, &b2, &b3 FA_EMU_ARG);
                FA_PRAGMA_UNROLL
                for (int mt = 0; mt < MT; mt++) {
                    fa_mma(&acc[mt][dt], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], b0, b1 FA_EMU_ARG);
                    fa_mma(&acc[mt][dt + 1], pa[mt][0], pa[mt][1], pa[mt][2], pa[mt][3], b2, b3 FA_EMU_ARG);
                }
            }
#endif
        }
#endif
#endif /* FA_KEYS_M */
#ifdef FA_WG_PEEL
        if (peel) { /* the first block done: the rest in the loop's second copy */
            kv0 += BLOCK_KV;
            break;
        }
#endif
    }
#ifdef FA_WGMMA
#ifdef FA_WG_PINGPONG
    if (warp / 4 == 0)
        fa_bar_sync(1, 256); /* the second's last (or, without blocks, first) turn given back */
#endif
    /* the last block's P V (its V is the last commit group's; without blocks, zeros) */
#ifdef FA_WG_PRODUCER
#ifdef FA_PERSISTENT
    if (lane == 0 && kv_first < blk_hi) /* every S product waited for: Q is free */
        fa_mbar_arrive(qempty);
#endif
    fa_mbar_wait(vfull + jv % NBUF, (uint)(jv / NBUF) & 1u);
    fa_wg_fence_proxy();
    fa_wg_pv(ow, pa, v_s + jv % NBUF * TILE);
#else
    fa_cp_async_wait_all();
    fa_wg_fence_proxy();
    barrier(CLK_LOCAL_MEM_FENCE);
    fa_wg_pv(ow, pa, v_s + (1 - cur) * TILE);
#endif
    fa_wg_wait_o(ow);
#ifdef FA_PERSISTENT
    if (lane == 0) /* the last V entry read */
        fa_mbar_arrive(vempty + jv % NBUF);
    jv++;
#endif
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        acc[0][dt] = (float4)(ow[4 * dt], ow[4 * dt + 1], ow[4 * dt + 2], ow[4 * dt + 3]);
#endif
#ifdef FA_KEYS_M
    /* O^T, m and l into the layout of 16 rows a warp (rows g + 8 empty, never written): O^T's
     * elements through a row of floats a row, this warp's 8 in local memory (once every warp is
     * done with the stages), m and l (each row's sum over its 8 lanes) in the 9th */
    fa_cp_async_wait_all();
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        __local float *const u = (__local float *)smem + warp * 16 * D_PAD;
        FA_PRAGMA_UNROLL
        for (int r = 0; r < 2; r++)
            FA_PRAGMA_UNROLL
            for (int sh = 4; sh < 32; sh *= 2)
                l[0][r] += fa_shfl_xor(l[0][r], sh FA_EMU_ARG);
        FA_PRAGMA_UNROLL
        for (int dm = 0; dm < DT / 2; dm++) {
            const int c0 = g * (D_PAD / 8) + dm, c1 = c0 + D_PAD / 16;
            u[2 * t4 * D_PAD + c0] = acc[0][dm].x;
            u[(2 * t4 + 1) * D_PAD + c0] = acc[0][dm].y;
            u[2 * t4 * D_PAD + c1] = acc[0][dm].z;
            u[(2 * t4 + 1) * D_PAD + c1] = acc[0][dm].w;
        }
        if (g == 0)
            vstore4((float4)(m[0][0], l[0][0], m[0][1], l[0][1]), 0, u + 8 * D_PAD + 4 * t4);
        barrier(CLK_LOCAL_MEM_FENCE);
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++) {
            const float2 a = vload2(0, u + g * D_PAD + dt * 8 + 2 * t4);
            acc[0][dt] = (float4)(a.x, a.y, 0.0f, 0.0f);
        }
        const float2 ml = vload2(0, u + 8 * D_PAD + 2 * g);
        m[0][0] = ml.x;
        l[0][0] = t4 == 0 ? ml.y : 0.0f; /* the 4 lanes of a row are added up at the end */
        m[0][1] = -INFINITY;
        l[0][1] = 0.0f;
    }
#elif defined(FA_Q8_FRAGS)
    /* O's columns back in order: n-tile dt of lane (g, t4) holds dims 2 t4 D/8 + dt and that + D/8;
     * through a row of floats a row, this warp's 16 in local memory (once every warp is done with
     * the stages), then read back as the accumulator layout has them */
    fa_cp_async_wait_all();
    barrier(CLK_LOCAL_MEM_FENCE);
    {
        __local float *const u = (__local float *)smem + warp * 16 * D_PAD;
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++) {
            const int c0 = 2 * t4 * (D_PAD / 8) + dt, c1 = c0 + D_PAD / 8;
            u[g * D_PAD + c0] = acc[0][dt].x;
            u[g * D_PAD + c1] = acc[0][dt].y;
            u[(g + 8) * D_PAD + c0] = acc[0][dt].z;
            u[(g + 8) * D_PAD + c1] = acc[0][dt].w;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++) {
            const float2 a = vload2(0, u + g * D_PAD + dt * 8 + 2 * t4), b = vload2(0, u + (g + 8) * D_PAD + dt * 8 + 2 * t4);
            acc[0][dt] = (float4)(a.x, a.y, b.x, b.y); /* not (float4)(a, b): Oclgrind 21.10 crashes on it */
        }
    }
#endif

#ifdef FA_Q_ASYNC
    /* A work-group without key blocks: Q's copies are still in flight, made by any work-item (not
     * only the warp of the row), and the O tile goes where they land: every work-item's must be in
     * first (the H200 found rows that see no key written with Q's values). The condition is the
     * work-group's. */
    fa_cp_async_wait_all();
    if (kv_first >= blk_hi)
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
#if FA_KV_WARPS > 1
    /* the key slices into slice 0's warp, in slice order (deterministic): its lanes hold the rows'
     * state as if one warp had seen every key; the other warps go on without rows to write (the
     * emulated primitives synchronise the work-group, so every warp runs to the end) */
#ifdef FA_ASYNC
    fa_cp_async_wait_all();
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* every warp is done with the K/V tiles */
    {
        __local float *const part = (__local float *)smem;
        if (kslice > 0) {
            __local float *p = part + ((kslice - 1) * 32 + lane) * PART_FLOATS;
            vstore4((float4)(m[0][0], m[0][1], l[0][0], l[0][1]), 0, p);
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++)
                vstore4(acc[0][dt], 0, p + 4 + 4 * dt);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kslice == 0) {
            FA_PRAGMA_UNROLL
            for (int w = 1; w < FA_KV_WARPS; w++) {
                __local const float *p = part + ((w - 1) * 32 + lane) * PART_FLOATS;
                const float4 ml = vload4(0, p);
                float f[2][2]; /* per row: the factor for this warp's state, for slice w's */
                FA_PRAGMA_UNROLL
                for (int r = 0; r < 2; r++) {
                    const float mw = r ? ml.y : ml.x, lw = r ? ml.w : ml.z;
                    const float mx = fmax(m[0][r], mw), mu = mx == -INFINITY ? 0.0f : mx;
                    f[r][0] = fa_ex2((m[0][r] - mu) * scale_log2);
                    f[r][1] = fa_ex2((mw - mu) * scale_log2);
                    l[0][r] = l[0][r] * f[r][0] + lw * f[r][1];
                    m[0][r] = mx;
                }
                FA_PRAGMA_UNROLL
                for (int dt = 0; dt < DT; dt++)
                    acc[0][dt] = acc[0][dt] * (float4)(f[0][0], f[0][0], f[1][0], f[1][0]) +
                                 vload4(0, p + 4 + 4 * dt) * (float4)(f[0][1], f[0][1], f[1][1], f[1][1]);
            }
        }
    }
    const int out_rows = kslice == 0 ? min(nrows, q0 + BLOCK_Q) : 0;
#else
    const int out_rows = min(nrows, q0 + BLOCK_Q); /* BLOCK_Q 8: a warp's rows g + 8 are not the block's */
#endif
#ifdef FA_KV_CHUNKED
    /* merge with the earlier chunks (this lane's elements and partial sums); every launch but the
     * last leaves them for the next */
    const int first_chunk = kv_begin == 0, last_chunk = kv_end >= seqlen_k_cap;
    FA_PRAGMA_UNROLL /* constant indices: a run-time one would put the accumulators in memory */
    for (int mt = 0; mt < MT; mt++)
        FA_PRAGMA_UNROLL
        for (int r = 0; r < 2; r++) {
            const int row = q0 + wrow + 16 * mt + g + 8 * r;
            const float2 f =
                fa_chunk_merge(FA_CHUNK_SLOT(2 * mt + r), first_chunk, last_chunk, &m[mt][r], &l[mt][r], scale_log2);
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++) {
                const int col = dt * 8 + 2 * t4;
                float2 x = r ? acc[mt][dt].zw : acc[mt][dt].xy;
                if (row < out_rows && col < HEAD_DIM)
                    x.x = FA_CHUNK_MERGE(row, col, first_chunk, last_chunk, f, x.x);
                if (row < out_rows && col + 1 < HEAD_DIM)
                    x.y = FA_CHUNK_MERGE(row, col + 1, first_chunk, last_chunk, f, x.y);
                if (r)
                    acc[mt][dt].zw = x;
                else
                    acc[mt][dt].xy = x;
            }
        }
    if (!last_chunk)
        return; /* the whole work-group: last_chunk is the launch's */
#endif
    const ulong obase = FA_O_HEAD0;
#if defined(FA_ALIGNED16) && HEAD_DIM % 8 == 0 && !defined(FA_SPLIT) && FA_KV_WARPS == 1 && D_PAD <= 128 && \
    !defined(FA_MASK)
    /* O through local memory (this warp's rows of a B_r x ROW tile at the start), then 16-byte
     * stores of whole row chunks (FlashAttention-2's epilogue): a quarter of the store instructions
     * of pairs from the accumulators, each a full sector. Faster on an H200 up to d = 128, most on
     * short rows; slower at d = 256 and with a mask, which keep the pairs (commit 001552f). */
#define FA_O_TILE 1
#ifdef FA_PERSISTENT
    __local ushort *const o_s = smem + O_TILE_AT;
    fa_warp_sync(); /* this warp's lanes are done reading the previous tile's rows */
#else
    __local ushort *const o_s = smem;
#endif
#if (!defined(FA_Q_ASYNC) || defined(FA_WGMMA)) && !defined(FA_PERSISTENT) /* wgmma: a warpgroup reads all its 64 rows of Q */
#ifdef FA_WG_PRODUCER
    fa_bar_sync(3, WG); /* the computing warpgroups' (the producer is gone); its copies all landed */
#else
#ifdef FA_ASYNC
    fa_cp_async_wait_all();
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* the tile overlaps K/V, which other warps may still read */
#endif
#endif
#endif
    FA_PRAGMA_UNROLL
    for (int mt = 0; mt < MT; mt++) {
        float inv[2];
        FA_PRAGMA_UNROLL
        for (int r = 0; r < 2; r++) {
            l[mt][r] += fa_shfl_xor(l[mt][r], 1 FA_EMU_ARG);
            l[mt][r] += fa_shfl_xor(l[mt][r], 2 FA_EMU_ARG);
            inv[r] = (l[mt][r] == 0.0f) ? 0.0f : 1.0f / l[mt][r];
        }
        const int row0 = q0 + wrow + 16 * mt + g, row1 = row0 + 8;
#ifdef FA_O_TILE
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++) {
            __local uint *p = (__local uint *)(o_s + (wrow + 16 * mt + g) * ROW + dt * 8 + 2 * t4);
            p[0] = fa_pack2(acc[mt][dt].x * inv[0], acc[mt][dt].y * inv[0]);
            p[4 * ROW] = fa_pack2(acc[mt][dt].z * inv[1], acc[mt][dt].w * inv[1]); /* 8 rows on */
        }
#else
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++) {
            int col = dt * 8 + 2 * t4;
            if (col < HEAD_DIM) {
                if (row0 < out_rows)
                    fa_store_pair(o, fa_qrow(obase, row0, seqlen_q, os1, os2) + col, col, acc[mt][dt].x * inv[0],
                                  acc[mt][dt].y * inv[0]);
                if (row1 < out_rows)
                    fa_store_pair(o, fa_qrow(obase, row1, seqlen_q, os1, os2) + col, col, acc[mt][dt].z * inv[1],
                                  acc[mt][dt].w * inv[1]);
            }
        }
#endif
        if (has_lse && t4 == 0) {
            FA_PRAGMA_UNROLL
            for (int r = 0; r < 2; r++) {
                const int row = row0 + 8 * r;
                if (row < out_rows)
                    lse[FA_LSE_INDEX(row)] = fa_row_lse(m[mt][r], l[mt][r], scale);
            }
        }
    }
#ifdef FA_O_TILE
    /* the warp's rows are its own (after the loop only this warp reads its rows of Q): the warp's
     * lanes exchange them, a work-group barrier where the primitives are emulated */
#ifdef FA_PTX_EMULATE
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    fa_warp_sync();
#endif
    FA_PRAGMA_UNROLL
    for (int i = 0; i < WARP_ROWS * CH / 32; i++) {
        const int e = lane + 32 * i, r = e / CH, c = e % CH;
        const int row = q0 + wrow + r;
        if (row < out_rows && 8 * c < HEAD_DIM)
            *(__global uint4 *)((__global ushort *)o + fa_qrow(obase, row, seqlen_q, os1, os2) + 8 * c) =
                *(__local const uint4 *)(o_s + (wrow + r) * ROW + 8 * c);
    }
#endif
#ifdef FA_PERSISTENT
    *jk_ = jk;
    *jv_ = jv;
#endif
}

__kernel __attribute__((reqd_work_group_size(WG_ALL, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    __local ushort smem[FA_SMEM_DECL_HALVES] __attribute__((aligned(FA_SMEM_ALIGN)));
#if defined(FA_MASK_TILE) && !defined(FA_MASK_TMA)
    __local ulong mask_rows[BLOCK_Q]; /* where each row's mask entries start */
#else
    __local ulong *const mask_rows = 0;
#endif
    const int warp_of_item = (int)get_local_id(0) / 32;
    FA_EMU_DECL(WARPS, warp_of_item)
    const int lid = (int)get_local_id(0), warp = lid / 32;
#ifdef FA_WG_PRODUCER
    /* K stage s of NBUF: full (its 128 copiers' copies landed), empty (the consumer warps done
     * with it); V the same. V's entry j is the block j - 1's V (the products trail S by a block),
     * a tile's entry 0 a zero tile: in stage 0, written here; persistent, by a copy of keys past
     * the tensor's (TMA fills them with zeros). Persistent, qempty: the consumer warps are done
     * with a tile's Q. */
    __local ulong mbar[4 * NBUF + 5];
    if (lid == 0) {
        for (int st = 0; st < NBUF; st++) {
            fa_mbar_init(mbar + st, FULL_ARRIVALS);
            fa_mbar_init(mbar + NBUF + st, WARPS);
            fa_mbar_init(mbar + 2 * NBUF + st, FULL_ARRIVALS);
            fa_mbar_init(mbar + 3 * NBUF + st, WARPS);
        }
        fa_mbar_init(mbar + 4 * NBUF, WARPS);
        for (int i = 0; i < 2; i++) {
            fa_mbar_init(mbar + 4 * NBUF + 1 + i, 1);
            fa_mbar_init(mbar + 4 * NBUF + 3 + i, WG);
        }
#if defined(FA_MASK_TMA) || defined(FA_KV_TMA)
        fa_mbar_init_fence(); /* the bulk copies' completions (the async proxy) see the barriers */
#endif
    }
#ifndef FA_PERSISTENT
    for (int e = lid; e < TILE / 8; e += WG_ALL)
        *(__local uint4 *)(smem + KV_AT + TILE_BUFS * TILE + 8 * e) = (uint4)(0u);
    fa_wg_fence_proxy();
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    __local ulong *const mbar = 0;
#endif
    int jk = 0, jv = 0, nq = 0;
#ifdef FA_PERSISTENT
    /* FlashAttention-3's persistent kernel: a loop over the tiles a role, each role's registers
     * set once; the producer's work-item 0 copies everything (bulk tensor copies). Each takes its
     * first tile by group id, the next after the groups (static), or, causal (tiles of unequal
     * work, in LPT order), from the counter the tensor maps' launch zeroed (dynamic): the producer
     * takes it once it has issued a tile's copies and hands it over in a slot of two (full: written,
     * empty: the consumers' work-items read it) */
    __local ulong next_tile[2];
    __local ulong *const tfull = mbar + 4 * NBUF + 1, *const tempty = mbar + 4 * NBUF + 3;
    const ulong groups = get_num_groups(0);
    ulong tile = get_group_id(0);
    if (warp >= WARPS) {
        fa_setmaxnreg_dec(FA_WG_PRODUCER_REGS);
        if (lid != WG)
            return;
        for (int i = 0; i < 3; i++)
            fa_tma_map_acquire((__global const ulong *)scratch + FA_TMA_MAP_Q * 16 + 16 * i);
#ifdef FA_MASK_TMA
        fa_tma_map_acquire((__global const ulong *)scratch + FA_TMA_MAP_MASK * 16);
#endif
        for (int n = 0; tile < total_tiles; n++) {
            fa_forward_tile(FA_FORWARD_NAMES, smem, mask_rows, mbar, tile, 1, &jk, &jv, &nq FA_EMU_ARG);
            tile = lpt_columns > 0 ? groups + atomic_inc((volatile __global uint *)scratch + FA_TILE_COUNTER)
                                   : tile + groups;
            fa_mbar_wait(tempty + n % 2, ((uint)(n / 2) & 1u) ^ 1u);
            next_tile[n % 2] = tile;
            fa_mbar_arrive(tfull + n % 2);
        }
        return;
    }
    fa_setmaxnreg_inc(FA_WG_CONSUMER_REGS);
    for (int n = 0; tile < total_tiles; n++) {
        fa_forward_tile(FA_FORWARD_NAMES, smem, mask_rows, mbar, tile, 0, &jk, &jv, &nq FA_EMU_ARG);
        fa_mbar_wait(tfull + n % 2, (uint)(n / 2) & 1u);
        tile = next_tile[n % 2];
        fa_mbar_arrive(tempty + n % 2);
    }
#else
    fa_forward_tile(FA_FORWARD_NAMES, smem, mask_rows, mbar, get_group_id(0), warp >= WARPS, &jk, &jv,
                    &nq FA_EMU_ARG);
#endif
}
