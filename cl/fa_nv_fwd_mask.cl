/* SPDX-License-Identifier: Apache-2.0 */
/* The tensor-core forward's attention-mask tiles (FA_MASK_ASYNC): their layout in local memory
 * and the copy of a block's entries with its K and V. */
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
