/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2 backward on NVIDIA tensor cores (compute capability >= 8.0): the portable
 * backward's algorithm (cl/fa_backward.cl) with its products on mma.sync (cl/fa_nv_ptx.cl;
 * FA_PTX_EMULATE runs them in portable C for the tests). Three families build these units (this
 * one, cl/fa_nv_bwd_io.cl, _softmax, the atoms _tf32 or _wgmma, and the kernels _dkdv, _dq):
 * nvidia-mma-backward (f16/bf16 storage, m16n8k16) and nvidia-tf32x3-backward (f32 storage,
 * FA_DTYPE 0: every product 3xTF32 on m16n8k8, fp32-accurate, as cl/fa_forward_nv_tf32.cl).
 *
 *  - fa_backward_dkdv: one work-group per block of BLOCK_KV keys, one warp per 16 keys. K and V
 *    stay in local memory; per block of BLOCK_Q query rows (Q, dO, the rows' LSE and D in local
 *    memory) a warp computes S^T = K Q^T and dP^T = V dO^T for its keys (A fragments from K / V
 *    rows, B fragments from Q / dO rows), P^T and dS^T on the accumulators, and, with those as A
 *    fragments (the accumulator layout of n-tiles is the A fragment of their columns, as P in the
 *    forward), dV += P^T dO and dK += dS^T Q (B fragments from dO / Q columns). dK and dV stay in
 *    registers to the end.
 *  - fa_backward_dq: one work-group per block of BLOCK_Q rows, one warp per 16 rows: the forward's
 *    structure with two score products (S = Q K^T, dP = dO V^T) and dQ += dS K.
 *
 * Score modifiers and masks (FA_MODS, FA_MASK: cl/fa_backward_common.cl's fa_bw_mod_score, the
 * portable backward's) on the accumulators in fa_bw_p_ds (cl/fa_nv_bwd_softmax.cl), per query head
 * (dkdv: each step's); the sinks' gradient by fa_backward_dsink, the fourth kernel of the program.
 *
 * f16/bf16: tiles of 16-bit values, fragments by ldmatrix (.trans for the column reads); P and dS
 * are rounded to the storage type before their products, as FlashAttention-2 does.
 * f32: tiles of fp32, rows of D_PAD + 4 floats (4 mod 32 banks). Over head_dim both operands are
 * rows, read with 32-bit loads at columns t and t + 4 of each 8 (the mma's own k order); the
 * products over rows or keys take the accumulators as A fragments with the forward's k
 * permutation (slot t = element 2t, t + 4 = 2t + 1), so their B fragments are column reads at rows
 * 2t and 2t + 1. Both reads hit 32 banks with that one pitch (float2 reads would need 8 mod 32,
 * where the column reads conflict). P and dS stay fp32: split into big + small like every operand.
 * dK and dV of 16 keys x D_PAD are D_PAD floats a lane (128 at D_PAD 128): dkdv takes a query
 * block in passes of PASS_ROWS rows so that S^T and dP^T (PASS_ROWS floats a lane) fit beside them.
 * FA_BW_ROLES (the planner's choice at D_PAD 128, where one warp's 128 floats of dK and dV spilled):
 * two warps take each 16 keys, one computing S^T, P^T and dV, the other dP^T, dS^T and dK, P^T
 * passed from the first to the second through local memory (p_x: BLOCK_KV x PASS_ROWS floats);
 * each holds D_PAD floats of accumulators a lane, and no product is done twice.
 *
 * Defined by the planner: FA_DTYPE (0 f32, 1 f16, 2 bf16), HEAD_DIM, D_PAD (64 or 128), BLOCK_Q
 * and BLOCK_KV (multiples of 16, equal: one work-group size, twice that for dkdv with FA_BW_ROLES),
 * PASS_ROWS and FA_BW_ROLES (f32 only), FA_ALIGNED16
 * (every row 16-byte aligned: cp.async copies into two buffers of the streamed tiles, NBUF = 2;
 * else synchronous loads into one); FA_NATIVE_EXP. Local memory (the dkdv kernel's, the larger; E bytes an element
 * of a tile, ROW of them a row: 2 and D_PAD + 8, or 4 and D_PAD + 4):
 *     E (2 BLOCK_KV + 2 NBUF BLOCK_Q) ROW + 8 NBUF BLOCK_Q (+ 4 BLOCK_KV PASS_ROWS: p_x, twice with
 *     FA_SOFTCAP: g_x) bytes (dkdv), and
 *     E (2 NBUF BLOCK_KV + 2 BLOCK_Q) ROW bytes (dq).
 *
 * FA_WGMMA (nvidia-wgmma-backward, compute capability 9.0; cl/fa_nv_wgmma.cl): the f16/bf16 kernels
 * with one warpgroup of 4 warps per work-group (BLOCK_Q = BLOCK_KV = 64) and their products on
 * Hopper's warpgroup MMA, whose accumulators are mma.sync's layout warp by warp: S^T = K Q^T and
 * dP^T = V dO^T as m64 n64 k16 products with both operands from local memory (K-major), dV += P^T dO
 * and dK += dS^T Q with P^T and dS^T from the registers and dO, Q as MN-major operands (the same
 * tiles: a tile is K-major read along its rows, MN-major read down them); in dq, S = Q K^T and dP =
 * dO V^T, then dQ += dS K. Tiles in wgmma's layout (fa_wg_at), every row 16-byte aligned; local
 * memory the same sums with ROW = D_PAD. FA_BW_WG_PIPE: a step's S^T and dP^T (dq: S and dP) are
 * issued behind the previous step's dV and dK (dQ) products, waited for before the other buffer is
 * refilled (the planner's choice at D_PAD 128).
 */
#if FA_DTYPE != 0 && FA_DTYPE != 1 && FA_DTYPE != 2
#error "the tensor-core backward takes f32, f16 or bf16 storage"
#endif
#if D_PAD != 64 && D_PAD != 128
#error "the tensor-core backward takes D_PAD 64 or 128 (the planner declines beyond)"
#endif
#if BLOCK_Q != BLOCK_KV || BLOCK_Q % 16
#error "BLOCK_Q = BLOCK_KV, a multiple of 16"
#endif
#define WARPS (BLOCK_KV / 16)
#define WG (WARPS * 32)
#ifdef FA_BW_ROLES
#if FA_DTYPE != 0
#error "FA_BW_ROLES is the f32 kernels' (nvidia-tf32x3-backward)"
#endif
#define WARPS_KEYS 2 /* dkdv's warps per 16 keys */
#else
#define WARPS_KEYS 1
#endif
#define WG_DKDV (WG * WARPS_KEYS) /* dkdv's work-items */
#define DT (D_PAD / 8)      /* n-tiles over head_dim */
#define NTK (BLOCK_KV / 8)  /* n-tiles over a key block's keys (dq) */
#if FA_DTYPE == 0
typedef float fa_bw_elem;   /* a tile's element */
#define EPC 4               /* elements in a 16-byte chunk */
#define ROW (D_PAD + 4)     /* local row pitch in floats: conflict-free row and column reads */
#define KSTEPS (D_PAD / 8)  /* k-steps over head_dim */
#if !defined(PASS_ROWS) || PASS_ROWS % 8 || BLOCK_Q % PASS_ROWS
#error "PASS_ROWS: dkdv's rows a pass, a multiple of 8 dividing BLOCK_Q"
#endif
#define PASS PASS_ROWS
#else
typedef ushort fa_bw_elem;
#define EPC 8
#define ROW (D_PAD + 8)     /* local row pitch in halves: conflict-free ldmatrix */
#define KSTEPS (D_PAD / 16)
#define PASS BLOCK_Q
#endif
#define CH (D_PAD / EPC)    /* 16-byte chunks per row */
#define NTP (PASS / 8)      /* n-tiles over a pass's rows (dkdv) */
#ifdef FA_WGMMA
#if FA_DTYPE == 0 || !defined(FA_ALIGNED16) || HEAD_DIM % 8 || BLOCK_Q != 64
#error "FA_WGMMA takes f16/bf16, 16-byte aligned rows and one warpgroup (BLOCK_Q = BLOCK_KV = 64)"
#endif
/* element (r, EPC c) of a tile of `rows` rows; the copies' order (a warp's writes conflict-free) */
#define FA_BW_AT(r, c, rows) fa_wg_at(r, c, D_PAD, rows)
#define FA_BW_COPY_ROW(e) FA_WG_COPY_ROW(e, CH)
#define FA_BW_COPY_CHUNK(e) FA_WG_COPY_CHUNK(e, CH)
#define TILE_ROW D_PAD
#define FA_SMEM_ALIGN 1024 /* the 128-byte swizzle's pattern is the address's */
#else
#ifdef FA_BW_WG_PIPE
#error "FA_BW_WG_PIPE is FA_WGMMA's"
#endif
/* unparenthesised: only ever added to a tile pointer, as the pointer steps the kernel always took */
#define FA_BW_AT(r, c, rows) (r) * ROW + EPC * (c)
#define FA_BW_COPY_ROW(e) ((e) / CH)
#define FA_BW_COPY_CHUNK(e) ((e) % CH)
#define TILE_ROW ROW
#define FA_SMEM_ALIGN 16
#endif

#if FA_DTYPE != 0
/* accumulator tile nt (rows g, g + 8 x columns 2 t4, 2 t4 + 1) rounded into its half of the 16-bit A
 * fragment of the 16 columns it is one of, a[nt / 2] */
#define FA_BW_PACK_A(a, nt, c)                                                                         \
    do {                                                                                               \
        (a)[(nt) / 2][2 * ((nt) % 2)] = fa_pack2((c).x, (c).y);                                        \
        (a)[(nt) / 2][2 * ((nt) % 2) + 1] = fa_pack2((c).z, (c).w);                                    \
    } while (0)
#endif

/* x[0 .. n) = y[0 .. n) = 0: two tiles of scores before their products */
#define FA_BW_ZERO2(x, y, n)                                                                               \
    FA_PRAGMA_UNROLL                                                                                       \
    for (int nt = 0; nt < n; nt++)                                                                         \
        x[nt] = y[nt] = (float4)(0.0f);
