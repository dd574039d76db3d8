/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's masks on a block's raw scores s[MT][NT] (mma's accumulator layout, a
 * warp's rows wrow .. of the block, its keys koff .. of block kv0): the attention mask's terms, from
 * the mask's tiles in local memory (FA_MASK_ASYNC: their layout and copy are here too) or from
 * global memory, and the visibility mask of the causal / window / sequence bounds. */
/* FA_MASK_ASYNC (the planner: every mask row 16-byte aligned, pairs too): the block's mask entries
 * (B_r rows x B_c keys) are copied with K and V into a ring of NBUF tiles after the others, so that
 * no global load waits on the way to the row maxima; rows MASK_PITCH bytes apart, the padding chosen
 * so that a warp's pair reads hit distinct banks. src/kernels/nvidia_mma.c: fa_cl_mma_mask_bytes. */
#if defined(FA_MASK) && defined(FA_MASK_ASYNC) && defined(FA_MASK_PAIRS) && defined(FA_ASYNC) && !defined(FA_KV_STAGED)
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

/* The masks are statement macros over the mainloops' names (s, mt, nt, kv0, koff, wrow, q0, g, t4,
 * lane, mc), not functions: a function's loops are unrolled before it is inlined into the key loop,
 * whose loop-invariant code motion then hoists the unrolled address and row-range arithmetic out of
 * it (16 live registers more at a mask's tile with clang's NVPTX back end), where the mainloop's own
 * inner loops, unrolled after that pass, recompute it each block. */
#ifdef FA_MASK
/* The attention mask's terms (raw units), before the visibility mask: FA_MASK_TERMS_FAST the fast
 * path, taken by a block inside the mask's keys or (tiles) every block, else each key clamped.
 * FA_MASK_READ_LDSM: 16-bit entries in TMA's panels by ldmatrix: lanes 8i .. 8i + 7 give matrix
 * i's rows (i % 2: rows g or g + 8, i / 2: the n-tile of a pair), each lane then holds its pairs of
 * keys as the accumulators do; 8 rows of one chunk column are 8 bank groups (the swizzle).
 * FA_MASK_TILE: a lane's pair of keys of n-tile nt at byte (lane's + 8 nt entries) ^ its rows'
 * swizzle; tails too (the copies zero-filled keys past the mask's). FA_MASK_PAIRS: each lane's
 * pairs of keys as one load at a constant offset from the row's entry. */
#if defined(FA_MASK_READ_LDSM)
#define FA_MASK_TERMS_FAST                                                                                     \
    if (1) {                                                                                                   \
        FA_PRAGMA_UNROLL                                                                                       \
        for (int mt = 0; mt < MT; mt++) {                                                                      \
            const int mi = lane / 8, rr = lane % 8;                                                            \
            __local const uchar *lp = mc + (wrow + 16 * mt + rr + 8 * (mi % 2)) * MASK_ROW_STEP;               \
            const int lane_x = (16 * (mi / 2)) ^ (rr << 4);                                                    \
            FA_PRAGMA_UNROLL                                                                                   \
            for (int nt = 0; nt < NT; nt += 2) {                                                               \
                uint a0, c0, a1, c1;                                                                           \
                fa_ldsm_x4((__local const ushort *)(lp + 16 * nt / 128 * (BLOCK_Q * 128) +                     \
                                                       ((16 * nt % 128) ^ lane_x)),                            \
                           &a0, &c0, &a1, &c1 FA_EMU_ARG);                                                     \
                s[mt][nt] = mad((float4)(FA_MASK_CVT(a0), FA_MASK_CVT(c0)), (float4)(mask_scale), s[mt][nt]);  \
                s[mt][nt + 1] =                                                                                \
                    mad((float4)(FA_MASK_CVT(a1), FA_MASK_CVT(c1)), (float4)(mask_scale), s[mt][nt + 1]);      \
            }                                                                                                  \
        }                                                                                                      \
    } else
#elif defined(FA_MASK_TILE)
#define FA_MASK_TERMS_FAST                                                                \
    if (1) {                                                                              \
        FA_PRAGMA_UNROLL                                                                  \
        for (int mt = 0; mt < MT; mt++) {                                                 \
            const int r0 = wrow + 16 * mt + g;                                            \
            const int lane_at = ((koff + 2 * t4) * MASK_ES) ^ FA_MASK_SWZ(r0);            \
            __local const uchar *p0 = mc + r0 * MASK_ROW_STEP;                            \
            __local const uchar *p1 = p0 + 8 * MASK_ROW_STEP;                             \
            FA_PRAGMA_UNROLL                                                              \
            for (int nt = 0; nt < NT; nt++) {                                             \
                const int at = FA_MASK_NT(lane_at, 8 * nt * MASK_ES);                     \
                const float2 a = FA_MASK_CVT(*(__local const fa_mask_raw_t *)(p0 + at));  \
                const float2 c = FA_MASK_CVT(*(__local const fa_mask_raw_t *)(p1 + at));  \
                s[mt][nt] = mad((float4)(a, c), (float4)(mask_scale), s[mt][nt]);         \
            }                                                                             \
        }                                                                                 \
    } else
#elif defined(FA_MASK_PAIRS)
#define FA_MASK_TERMS_FAST                                                                  \
    if (kv0 + BLOCK_KV <= seqlen_k_cap) {                                                   \
        FA_PRAGMA_UNROLL                                                                    \
        for (int mt = 0; mt < MT; mt++) {                                                   \
            const ulong kfirst = (ulong)(kv0 + koff + 2 * t4);                              \
            const ulong r0 = FA_MASK_ROW(q0 + wrow + 16 * mt + g) + kfirst;                 \
            const ulong r1 = FA_MASK_ROW(q0 + wrow + 16 * mt + g + 8) + kfirst;             \
            FA_PRAGMA_UNROLL                                                                \
            for (int nt = 0; nt < NT; nt++) {                                               \
                const float2 a = FA_MASK_PAIR(r0 + 8 * nt), c = FA_MASK_PAIR(r1 + 8 * nt);  \
                s[mt][nt] = mad((float4)(a, c), (float4)(mask_scale), s[mt][nt]);           \
            }                                                                               \
        }                                                                                   \
    } else
#else
#define FA_MASK_TERMS_FAST
#endif
#define FA_MASK_TERMS                                                                                              \
FA_MASK_TERMS_FAST                                                                                                 \
    {                                                                                                              \
        FA_PRAGMA_UNROLL                                                                                           \
        for (int mt = 0; mt < MT; mt++) {                                                                          \
            const ulong r0 = FA_MASK_ROW(q0 + wrow + 16 * mt + g), r1 = FA_MASK_ROW(q0 + wrow + 16 * mt + g + 8);  \
            FA_PRAGMA_UNROLL                                                                                       \
            for (int nt = 0; nt < NT; nt++) {                                                                      \
                const int key = kv0 + koff + nt * 8 + 2 * t4;                                                      \
                s[mt][nt] += (float4)(FA_MASK_TERM(r0, key), FA_MASK_TERM(r0, key + 1), FA_MASK_TERM(r1, key),     \
                                      FA_MASK_TERM(r1, key + 1));                                                  \
            }                                                                                                      \
        }                                                                                                          \
    }
#else
#define FA_MASK_TERMS
#endif

/* The tree mask (FA_TREE, include/fa_cl.h "Tree masks"): a block that reaches the sequence's new
 * tokens (its last seqlen_q keys) is never clean, and its keys there keep their scores only where the
 * row's bit is set (cl/fa_fwd_masks.cl's fa_tree_row and fa_tree_sel, the portable kernels' own). */
#ifdef FA_TREE
#define FA_NV_TREE_BLOCK (kv0 + BLOCK_KV > seqlen_k - seqlen_q)
#define FA_NV_TREE_ROW(r) const ulong tr##r = fa_tree_row(q0 + wrow + 16 * mt + g + 8 * r, nrows, seqlen_q, b, tree_off, ts0, ts1);
#define FA_NV_TREE_SEL(x, r, key) x = fa_tree_sel(x, tree, tr##r, seqlen_k - seqlen_q, seqlen_q, key)
#else
#define FA_NV_TREE_BLOCK 0
#define FA_NV_TREE_ROW(r)
#define FA_NV_TREE_SEL(x, r, key)
#endif

/* The visibility mask, unless every row of the warp sees every key of the block: -inf where a key is
 * outside its row's visible range (the rows' ranges recomputed each block: fewer live registers);
 * scores stay raw (the scale goes into the exponent: 2^(s c - m c), cl/fa_nv_softmax.cl) */
#define FA_MASK_VISIBLE                                                                                           \
    if (!(kv0 >= clean_lo && kv0 + BLOCK_KV <= clean_hi) || FA_NV_TREE_BLOCK) {                                   \
        FA_PRAGMA_UNROLL                                                                                          \
        for (int mt = 0; mt < MT; mt++) {                                                                         \
            int lo[2], hi[2];                                                                                     \
            FA_PRAGMA_UNROLL                                                                                      \
            for (int r = 0; r < 2; r++)                                                                           \
                FA_ROW_RANGE(q0 + wrow + 16 * mt + g + 8 * r, &lo[r], &hi[r]);                                    \
            FA_NV_TREE_ROW(0) FA_NV_TREE_ROW(1)                                                                   \
            FA_PRAGMA_UNROLL                                                                                      \
            for (int nt = 0; nt < NT; nt++) {                                                                     \
                const int key = kv0 + koff + FA_S_KEY(nt, 2 * t4), key1 = kv0 + koff + FA_S_KEY(nt, 2 * t4 + 1);  \
                s[mt][nt].x = (key >= lo[0] && key < hi[0]) ? s[mt][nt].x : -INFINITY;                            \
                s[mt][nt].y = (key1 >= lo[0] && key1 < hi[0]) ? s[mt][nt].y : -INFINITY;                          \
                s[mt][nt].z = (key >= lo[1] && key < hi[1]) ? s[mt][nt].z : -INFINITY;                            \
                s[mt][nt].w = (key1 >= lo[1] && key1 < hi[1]) ? s[mt][nt].w : -INFINITY;                          \
                FA_NV_TREE_SEL(s[mt][nt].x, 0, key);                                                              \
                FA_NV_TREE_SEL(s[mt][nt].y, 0, key1);                                                             \
                FA_NV_TREE_SEL(s[mt][nt].z, 1, key);                                                              \
                FA_NV_TREE_SEL(s[mt][nt].w, 1, key1);                                                             \
            }                                                                                                     \
        }                                                                                                         \
    }
