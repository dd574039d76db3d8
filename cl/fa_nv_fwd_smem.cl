/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's local memory: where Q, the K/V tiles or q8_0 stages, the slices'
 * partial results and (persistent) the O tile live, and how much the kernel declares. */
/* Local memory, in 16-bit elements: K and V tiles (NBUF each), and Q. Q lives in registers with
 * 16 rows per warp up to D_PAD 128 (beyond, its fragments would take the O accumulator's
 * registers), and is then staged in the K/V space before the first K/V copy; src/kernels/nvidia_mma.c's
 * fa_cl__mma_local_bytes is the same sum. */
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
#define STAGE_HALVES (2 * NBUF * KV_STAGE / 2)
#define UNPERM_HALVES (WARPS * 16 * D_PAD * 2)
#elif defined(FA_KV_STAGED)
#define TILE_BUFS 1 /* the staging ring (q8_0 or fp8 rows) holds the stages (STAGE_HALVES, after the tiles) */
#define STAGE_HALVES (2 * NBUF * KV_STAGE / 2)
#else
#define TILE_BUFS NBUF
#define STAGE_HALVES 0
#endif
/* the key (past the warp's first) of S's n-tile nt, column c */
#ifdef FA_Q8_FRAGS
#define FA_S_KEY(nt, c) ((nt) / 2 * 16 + FA_Q8_KEY((nt) % 2 * 8 + (c)))
#define FA_S_KEY_ORDERED 0 /* cl/fa_nv_mods.cl: each key's own distance */
#else
#define FA_S_KEY(nt, c) ((nt) * 8 + (c))
#define FA_S_KEY_ORDERED 1
#endif
#if defined(FA_KEYS_M) && (!defined(FA_Q8_FRAGS) || defined(FA_MASK) || defined(FA_SOFTCAP) || defined(FA_ALIBI) || MT != 1)
#error "BLOCK_Q 8 takes q8_0 K/V copied asynchronously, D_PAD <= 128, mma.sync, 16 rows a warp, no mask, softcap or ALiBi"
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
#define STAGE_AT 0
#define SMEM_HALVES FA_MAX_(FA_MAX_(TILES_HALVES, STAGE_HALVES), FA_MAX_(PART_HALVES, UNPERM_HALVES))
#else
#define STAGE_AT (FA_MAX_(TILES_HALVES, PART_HALVES))
#define SMEM_HALVES (STAGE_AT + STAGE_HALVES)
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
