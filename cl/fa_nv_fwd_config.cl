/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2 forward on NVIDIA tensor cores (compute capability >= 8.0), f16/bf16 storage:
 * its constants and the rules its -D options follow. The kernel is in units, concatenated in the
 * order of its families' file lists (src/kernels/nvidia_mma.c, nvidia_wgmma.c): this file, the
 * local memory (cl/fa_nv_fwd_smem.cl), the mask's tiles (_mask), the loaders (_load, _q8,
 * _cp_async), the wgmma atoms (_wgmma), the epilogue (_epilogue), the tensor maps (_tma) and the
 * tile's mainloop with the kernel (_mainloop).
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
 * Defined by the planner: FA_DTYPE (1 f16, 2 bf16: the products' type, K's and V's), HEAD_DIM, D_PAD (a
 * multiple of 32, at most 256), BLOCK_Q
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
/* Q and O in storage types of their own (FA_Q_DTYPE, FA_O_DTYPE: f32, f16 or bf16; the planner's
 * FA_CL_FEAT_QO_TYPES): Q converted to FA_DTYPE once, as its tile is loaded (FA_Q_CONVERT; never in
 * the key loop), O stored in its type by the epilogue; K and V are FA_DTYPE (or q8_0) as ever */
#if FA_Q_DTYPE > 2 || FA_O_DTYPE > 2
#error "the tensor-core kernel takes q and o in f32, f16 or bf16"
#endif
#if FA_Q_DTYPE != FA_DTYPE
#define FA_Q_CONVERT 1
#if defined(FA_KV_TMA) || defined(FA_PERSISTENT)
#error "a Q of another type than FA_DTYPE is loaded and converted, not copied by TMA"
#endif
#endif
/* K and V in q8_0 blocks (FA_K_DTYPE = FA_V_DTYPE = 3): dequantised to FA_DTYPE as they are loaded
 * into local memory (synchronous loads: a block is 34 bytes, not a 16-byte copy) */
#if FA_K_DTYPE == 3 || FA_V_DTYPE == 3
#if FA_K_DTYPE != 3 || FA_V_DTYPE != 3
#error "the tensor-core kernel takes q8_0 for both K and V"
#endif
#define FA_KV_Q8 1
#elif FA_K_DTYPE < 4 && FA_V_DTYPE < 4 && (FA_K_DTYPE != FA_DTYPE || FA_V_DTYPE != FA_DTYPE)
#error "the tensor-core kernel takes K and V in FA_DTYPE, q8_0 or fp8"
#endif
/* K and/or V in fp8 (FA_K_DTYPE / FA_V_DTYPE 4 e4m3, 5 e5m2; the other in FA_DTYPE): each element's
 * exact value times its rows' descale factor, rounded once to FA_DTYPE as the tile is loaded
 * (synchronous loads: cl/fa_nv_fwd_q8.cl) */
#if FA_K_DTYPE >= 4 || FA_V_DTYPE >= 4
#if FA_Q_DTYPE != FA_DTYPE || FA_O_DTYPE != FA_DTYPE || (FA_K_DTYPE < 4 && FA_K_DTYPE != FA_DTYPE) || \
    (FA_V_DTYPE < 4 && FA_V_DTYPE != FA_DTYPE)
#error "the tensor-core kernel takes fp8 K and/or V with everything else in FA_DTYPE"
#endif
#define FA_KV_FP8 1
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
/* FlashAttention-3's wider block at D_PAD 192 and 256, 80 keys, only copied by TMA and without a
 * mask's tiles (the planner) */
#define FA_WG_WIDE_KV (D_PAD > 128 && BLOCK_KV == 80)
#if WARP_ROWS != 16 || FA_KV_WARPS != 1 || BLOCK_Q % 64 || defined(FA_KV_Q8) || !defined(FA_ALIGNED16) || \
    (D_PAD != 64 && D_PAD != 128 && D_PAD != 192 && D_PAD != 256) ||                                   \
    (BLOCK_KV != 32 && BLOCK_KV != 64 && BLOCK_KV != 128 && !FA_WG_WIDE_KV) || (D_PAD > 128 && BLOCK_KV == 128) || \
    (FA_WG_WIDE_KV && (!defined(FA_KV_TMA) || defined(FA_MASK)))
#error "FA_WGMMA takes 16 rows a warp, 64 a warpgroup, aligned f16/bf16 rows, D_PAD 64, 128, 192 or 256, BLOCK_KV 64 or 128 (64 or 80 beyond 128)"
#endif
/* O's columns (DV_PAD, whole 64-column panels: V's rows, HEAD_DIM_V wide, may be narrower than
 * Q's and K's, which fix D_PAD), and P V's products a k-step, FA_WG_PV_PARTS(X): X(c, n) for O's
 * columns c .. c + n - 1, n a literal (the wgmma forms are named by it): one product up to 128, two
 * of 128 at 256, and 128 + 64 at 192. A product's B operand starts at a panel's first column and
 * its n covers whole panels (an MN-major operand's panels are the leading dimension's steps: one
 * starting mid-panel reads the wrong columns past it, as two n = 96 products did). V's tiles stay
 * D_PAD wide, zeros past HEAD_DIM_V; only their first DV_PAD columns are read. */
#define DV_PAD ((HEAD_DIM_V + 63) / 64 * 64)
#if DV_PAD > D_PAD
#error "FA_WGMMA: v's rows no wider than q's and k's (the planner)"
#endif
#if DV_PAD == 256
#define FA_WG_PV_PARTS(X) X(0, 128) X(128, 128)
#elif DV_PAD == 192
#define FA_WG_PV_PARTS(X) X(0, 128) X(128, 64)
#elif DV_PAD == 128
#define FA_WG_PV_PARTS(X) X(0, 128)
#else
#define FA_WG_PV_PARTS(X) X(0, 64)
#endif
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

#if (defined(FA_ALIGNED16) && (HEAD_DIM % 8 == 0 || defined(FA_ROWS_PADDED)) && !defined(FA_KV_Q8) && \
     !defined(FA_KV_FP8)) || \
    ((defined(FA_KV_Q8) || defined(FA_KV_FP8)) && defined(FA_STAGE_COPY))
/* K/V blocks are copied asynchronously (cp.async) through a ring of FA_STAGES buffers each: while
 * one block is computed, the next STAGES - 1 are in flight (decoding is bound by how many bytes
 * are in flight). */
#define FA_ASYNC 1
#ifndef FA_STAGES
#define FA_STAGES 2
#endif
#define NBUF FA_STAGES
/* q8_0 or fp8 K/V copied asynchronously (FA_STAGE_COPY: the planner found every row's bytes that
 * aligned): raw rows in a staging ring of NBUF stages each, dequantised into one K and one V tile
 * right before they are used (cl/fa_nv_fwd_q8.cl) */
#if defined(FA_KV_Q8) || defined(FA_KV_FP8)
#define FA_KV_STAGED 1
#endif
#if defined(FA_KV_FP8) && defined(FA_KV_STAGED) && (FA_K_DTYPE < 4 || FA_V_DTYPE < 4 || HEAD_DIM % 8 || \
                                                    HEAD_DIM % FA_STAGE_COPY || defined(FA_WGMMA))
#error "staged fp8 K/V: both K and V in fp8, head_dim a multiple of 8 and of the copies, mma.sync"
#endif
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
#ifdef FA_WGMMA
#define FA_COPY_ROW(e) FA_WG_COPY_ROW(e, CH)
#define FA_COPY_CHUNK(e) FA_WG_COPY_CHUNK(e, CH)
#else
#define FA_COPY_ROW(e) ((e) / CH)
#define FA_COPY_CHUNK(e) ((e) % CH)
#endif
#else
#define NBUF 1
#endif
