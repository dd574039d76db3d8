/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2 forward for fp32 data on NVIDIA tensor cores (compute capability >= 8.0), its
 * constants (the loaders and the kernel follow the online softmax: cl/fa_forward_nv_tf32.cl),
 * accurate to fp32: every product is 3xTF32. A value x is split into big = tf32(x) and
 * small = tf32(x - big); a*b is taken as a_small*b_big + a_big*b_small + a_big*b_big (the dropped
 * a_small*b_small is below fp32's rounding), each an mma.sync m16n8k8 with fp32 accumulation.
 *
 * NVIDIA-only through cl/fa_nv_ptx.cl (inline PTX; FA_PTX_EMULATE runs it anywhere, for tests).
 * Planned for f32 where src/kernels/nvidia_tf32.c says (FA_CL_TUNE=nvidia-tf32x3:enabled=0 turns it off).
 *
 * Each warp owns 16 query rows; Q, K and V blocks are fp32 in local memory and fragments are read
 * with 64-bit (Q, K) and 32-bit (V) local loads. The k index of an mma is free to permute as long
 * as A and B agree: k slot t holds element 2t and slot t + 4 element 2t + 1, so that Q and K
 * fragments are float2 reads, and S's accumulator layout (keys 2t, 2t + 1 of each 8) is P's A
 * fragment as it stands: P never leaves registers. Masking and the blocks' order are those of
 * cl/fa_nv_fwd_mainloop_sm80.cl, the online softmax is theirs (cl/fa_nv_softmax.cl).
 *
 * Defined by the planner: FA_DTYPE 0, HEAD_DIM, D_PAD (64 or 128), BLOCK_Q (16 per warp), BLOCK_KV
 * (a multiple of 8); FA_ALIGNED16 when every q/k/v/o row is 16-byte aligned (asynchronous copies,
 * paired stores); FA_KV_CHUNKED: long rows in chunks of keys (cl/fa_forward_common.cl).
 */
#if FA_DTYPE != 0
#error "the tf32 kernel takes f32 storage"
#endif
#if D_PAD != 64 && D_PAD != 128
#error "the tf32 kernel takes D_PAD 64 or 128 (the planner declines beyond)"
#endif

#define WARPS (BLOCK_Q / 16)
#define WG (WARPS * 32)
#define FA_ITEM_ROWS 2      /* rows of a lane: g and g + 8 */
#define QP (D_PAD + 8)      /* Q and K row pitch in floats, 8 mod 32: float2 fragment reads hit 32 banks */
#define VP (D_PAD + 4)      /* V row pitch, 4 mod 32: the column reads of V's fragments hit 32 banks */
#define CH (D_PAD / 4)      /* 16-byte chunks per row */
#define KSTEPS (D_PAD / 8)  /* k-steps of Q K^T */
#define NT (BLOCK_KV / 8)   /* n-tiles of S, k-steps of P V */
#define FA_S_KEY(nt, c) ((nt) * 8 + (c)) /* the key (past the block's first) of S's n-tile nt, column c */
#define FA_S_KEY_ORDERED 1                 /* cl/fa_nv_mods.cl */
#define DT (D_PAD / 8)      /* n-tiles of O */
