/* SPDX-License-Identifier: Apache-2.0 */
/* FlashAttention-2 backward on NVIDIA tensor cores (compute capability >= 8.0): the portable
 * backward's algorithm (cl/fa_backward.cl) with its products on mma.sync (cl/fa_nv_ptx.cl;
 * FA_PTX_EMULATE runs them in portable C for the tests). Two families build this file:
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
 *     E (2 BLOCK_KV + 2 NBUF BLOCK_Q) ROW + 8 NBUF BLOCK_Q (+ 4 BLOCK_KV PASS_ROWS: p_x) bytes (dkdv), and
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

/* rows first .. first + count - 1 of one head (element offset base, row stride) into a tile, zeros
 * past `limit` and past HEAD_DIM (synchronous loads) */
inline void fa_bw_tile(__local fa_bw_elem *tile, __global const fa_bw_elem *src, ulong base, long stride, int first,
                       int count, int limit, int lid, int wg)
{
    for (int e = lid; e < count * CH; e += wg) {
        const int r = FA_BW_COPY_ROW(e), c = FA_BW_COPY_CHUNK(e);
        uint4 x = (uint4)(0);
        if (first + r < limit && EPC * c < HEAD_DIM) {
            __global const fa_bw_elem *p = src + base + (ulong)(first + r) * (ulong)stride + EPC * c;
#if defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0
            x = *(__global const uint4 *)p;
#else
            union {
                fa_bw_elem e[EPC];
                uint4 v;
            } t;
            for (int i = 0; i < EPC; i++)
                t.e[i] = EPC * c + i < HEAD_DIM ? p[i] : (fa_bw_elem)0;
            x = t.v;
#endif
        }
        *(__local uint4 *)(tile + FA_BW_AT(r, c, count)) = x;
    }
}

#if defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0
/* 16-byte rows: the streamed tiles (Q and dO in dkdv, K and V in dq) are copied asynchronously into
 * the other of two buffers while one is computed, FlashAttention-2's pipeline */
#define FA_BW_ASYNC 1
#define NBUF 2
/* the same rows as fa_bw_tile by cp.async, which moves 16-bit units (U of them an element): zeros
 * past `limit` and HEAD_DIM (size 0, from the in-bounds address `base`); wg work-items, a constant */
inline __attribute__((always_inline)) void fa_bw_tile_async(__local fa_bw_elem *tile, __global const fa_bw_elem *src,
                                                            ulong base, long stride, int first, int count, int limit,
                                                            int lid, int wg)
{
#ifdef FA_WGMMA
    if (first + count <= limit) {
        fa_wg_copy_rows(tile, src + base + (ulong)first * (ulong)stride, stride, count, wg, lid);
        return;
    }
#else
    const int U = (int)sizeof(fa_bw_elem) / 2;
    if (wg % CH == 0 && count * CH % wg == 0 && first + count <= limit) {
        fa_cp_rows16((__local ushort *)tile, U * ROW,
                     (__global const ushort *)(src + base + (ulong)first * (ulong)stride), U * stride, count, CH, wg,
                     U * HEAD_DIM, lid);
        return;
    }
#endif
    for (int e = lid; e < count * CH; e += wg) {
        const int r = FA_BW_COPY_ROW(e), c = FA_BW_COPY_CHUNK(e);
        const int valid = first + r < limit && EPC * c < HEAD_DIM;
        fa_cp_async16((__local ushort *)(tile + FA_BW_AT(r, c, count)),
                      (__global const ushort *)(src + (valid ? base + (ulong)(first + r) * (ulong)stride +
                                                                   EPC * (ulong)c
                                                             : base)),
                      valid);
    }
}
#else
#define NBUF 1
#endif

/* two adjacent gradient elements (col even) of the row at `row` */
inline void fa_bw_store2(__global fa_store_t *p, ulong row, int col, float x, float y)
{
#if defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0 && FA_DTYPE == 0
    *(__global float2 *)(p + row + col) = (float2)(x, y);
#elif defined(FA_ALIGNED16) && HEAD_DIM % EPC == 0
    *(__global uint *)((__global ushort *)p + row + col) = fa_pack2(x, y);
#else
    if (col < HEAD_DIM)
        fa_store1(p, row + col, x);
    if (col + 1 < HEAD_DIM)
        fa_store1(p, row + col + 1, y);
#endif
}

/* P = 2^(s scale_log2 - l) and dS = P (dP - d) on one m16n8 accumulator tile, in place of s and dp;
 * where `mask`, 0 wherever the key is not visible to the row. The tile's elements are (m, n),
 * (m, n + 1), (m + 8, n), (m + 8, n + 1): keys m and rows n in dkdv's transposed tiles (keys_m),
 * rows m and keys n in dq's. */
inline __attribute__((always_inline)) void fa_bw_p_ds(float4 *s, float4 *dp, float4 l, float4 d, float scale_log2,
                                                      int mask, int keys_m, long m, long n, int sq, int sk,
                                                      long win_left, long win_right)
{
    float4 p = (float4)(fa_ex2(s->x * scale_log2 - l.x), fa_ex2(s->y * scale_log2 - l.y),
                        fa_ex2(s->z * scale_log2 - l.z), fa_ex2(s->w * scale_log2 - l.w));
    float4 ds = p * (*dp - d);
    if (mask) {
        const long k0 = keys_m ? m : n, k1 = keys_m ? m : n + 1, k2 = keys_m ? m + 8 : n, k3 = keys_m ? m + 8 : n + 1;
        const long r0 = keys_m ? n : m, r1 = keys_m ? n + 1 : m, r2 = keys_m ? n : m + 8, r3 = keys_m ? n + 1 : m + 8;
        const int4 vis = (int4)(fa_bw_visible(k0, r0, sq, sk, win_left, win_right),
                                fa_bw_visible(k1, r1, sq, sk, win_left, win_right),
                                fa_bw_visible(k2, r2, sq, sk, win_left, win_right),
                                fa_bw_visible(k3, r3, sq, sk, win_left, win_right));
        p = select((float4)(0.0f), p, vis != 0);
        ds = select((float4)(0.0f), ds, vis != 0);
    }
    *s = p;
    *dp = ds;
}

#if FA_DTYPE != 0
/* accumulator tile nt (rows g, g + 8 x columns 2 t4, 2 t4 + 1) rounded into its half of the 16-bit A
 * fragment of the 16 columns it is one of, a[nt / 2] */
#define FA_BW_PACK_A(a, nt, c)                                                                         \
    do {                                                                                               \
        (a)[(nt) / 2][2 * ((nt) % 2)] = fa_pack2((c).x, (c).y);                                        \
        (a)[(nt) / 2][2 * ((nt) % 2) + 1] = fa_pack2((c).z, (c).w);                                    \
    } while (0)
#else
/* 3xTF32 fragments from fp32 tiles, split (cl/fa_nv_ptx.cl fa_split; g = lane / 4, t = lane % 4).
 * A (16 rows x 8 columns k0 .. k0 + 7 of rows) with p at row 0, column k0: a0 (g, t), a1 (g + 8, t),
 * a2 (g, t + 4), a3 (g + 8, t + 4), the mma's own k order */
inline void fa_tf_rows_a(__local const float *p, int g, int t, uint big[4], uint small[4])
{
    fa_split(p[g * ROW + t], &big[0], &small[0]);
    fa_split(p[(g + 8) * ROW + t], &big[1], &small[1]);
    fa_split(p[g * ROW + t + 4], &big[2], &small[2]);
    fa_split(p[(g + 8) * ROW + t + 4], &big[3], &small[3]);
}

/* B (k0 .. k0 + 7 x 8) from rows n of a tile, p at row n0, column k0: b0 (k t, n g), b1 (k t + 4, n g) */
inline void fa_tf_rows_b(__local const float *p, int g, int t, uint big[2], uint small[2])
{
    fa_split(p[g * ROW + t], &big[0], &small[0]);
    fa_split(p[g * ROW + t + 4], &big[1], &small[1]);
}

/* B from the columns of a tile in fa_tf_acc_a's k order, p at row k0, column n0: b0 (row 2t,
 * column g), b1 (row 2t + 1, column g) */
inline void fa_tf_cols_b(__local const float *p, int g, int t, uint big[2], uint small[2])
{
    fa_split(p[2 * t * ROW + g], &big[0], &small[0]);
    fa_split(p[(2 * t + 1) * ROW + g], &big[1], &small[1]);
}

/* an m16n8 accumulator tile (rows g, g + 8 x columns 2t, 2t + 1) as the A fragment of a product
 * over its 8 columns: slot t = column 2t, slot t + 4 = column 2t + 1 */
inline void fa_tf_acc_a(float4 c, uint big[4], uint small[4])
{
    fa_split(c.x, &big[0], &small[0]);
    fa_split(c.z, &big[1], &small[1]);
    fa_split(c.y, &big[2], &small[2]);
    fa_split(c.w, &big[3], &small[3]);
}

/* acc[n] += A B_n for n < count over one k-step of 8 columns: A the 16 rows of tile a, B_n the rows
 * 8 n .. 8 n + 7 of tile b (both pointers at the k-step's first column): S = Q K^T's shape */
inline __attribute__((always_inline)) void fa_tf_product_rows(float4 *acc, int count, __local const float *a,
                                                              __local const float *b, int g, int t FA_EMU_PARAM)
{
    uint ab[4], as[4];
    fa_tf_rows_a(a, g, t, ab, as);
    FA_PRAGMA_UNROLL
    for (int n = 0; n < count; n++) {
        uint bb[2], bs[2];
        fa_tf_rows_b(b + n * 8 * ROW, g, t, bb, bs);
        fa_mma_tf32x3(&acc[n], ab, as, bb, bs FA_EMU_ARG);
    }
}

/* acc[dt] += C B_dt for every n-tile dt over head_dim, over the 8 columns of accumulator tile c
 * (fa_tf_acc_a's k order): B the 8 tile rows at b read by columns: dQ += dS K's shape */
inline __attribute__((always_inline)) void fa_tf_product_cols(float4 *acc, float4 c, __local const float *b, int g,
                                                              int t FA_EMU_PARAM)
{
    uint ab[4], as[4];
    fa_tf_acc_a(c, ab, as);
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++) {
        uint bb[2], bs[2];
        fa_tf_cols_b(b + dt * 8, g, t, bb, bs);
        fa_mma_tf32x3(&acc[dt], ab, as, bb, bs FA_EMU_ARG);
    }
}
#endif

#ifdef FA_WGMMA
/* The warpgroup's two score-like products of a step, issued together (one commit group): xw = A B^T
 * and yw = C E^T, each 64 x 64 over D_PAD, from K-major tiles of 64 rows (a, c: the rows of the
 * result; bt, et: its columns) */
inline __attribute__((always_inline)) void fa_bw_wg_scores_issue(float *xw, float *yw, __local const ushort *a,
                                                                 __local const ushort *bt, __local const ushort *c,
                                                                 __local const ushort *et)
{
    const ulong da = fa_wg_desc_kmajor(a, D_PAD, 64), db = fa_wg_desc_kmajor(bt, D_PAD, 64);
    const ulong dc = fa_wg_desc_kmajor(c, D_PAD, 64), de = fa_wg_desc_kmajor(et, D_PAD, 64);
    fa_wgmma_fence_n64(xw);
    fa_wgmma_fence_n64(yw);
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++)
        fa_wgmma_ss_n64(xw, da + fa_wg_kstep_kmajor(kk, D_PAD, 64), db + fa_wg_kstep_kmajor(kk, D_PAD, 64), kk > 0);
    FA_PRAGMA_UNROLL
    for (int kk = 0; kk < KSTEPS; kk++)
        fa_wgmma_ss_n64(yw, dc + fa_wg_kstep_kmajor(kk, D_PAD, 64), de + fa_wg_kstep_kmajor(kk, D_PAD, 64), kk > 0);
    fa_wgmma_commit();
}

/* ... waited for (every product of the warpgroup) and taken as mma.sync's n-tiles (x[nt]: rows g,
 * g + 8 of the warp's 16 x columns 8 nt + 2 t4 + {0, 1}) */
inline __attribute__((always_inline)) void fa_bw_wg_scores_take(float4 *x, float4 *y, float *xw, float *yw)
{
    fa_wgmma_wait_n64(xw);
    fa_wgmma_wait_n64(yw);
    FA_PRAGMA_UNROLL
    for (int nt = 0; nt < 8; nt++) {
        x[nt] = (float4)(xw[4 * nt], xw[4 * nt + 1], xw[4 * nt + 2], xw[4 * nt + 3]);
        y[nt] = (float4)(yw[4 * nt], yw[4 * nt + 1], yw[4 * nt + 2], yw[4 * nt + 3]);
    }
}

/* acc (the warpgroup's 64 rows x D_PAD) += A B over 64 k (acc = A B where add is 0: the first
 * products set the accumulators, so that no other instruction defines them while products are in
 * flight: ptxas serialises wgmma otherwise): A from the registers (a[kk2]: mma.sync's A fragment
 * of the warp's 16 rows x k 16 kk2 ..), B the tile bt of 64 rows read MN-major (k down its rows);
 * issued and committed, not waited for */
inline __attribute__((always_inline)) void fa_bw_wg_acc(float *acc, uint a[4][4], __local const ushort *bt, int add)
{
    const ulong db = fa_wg_desc_mnmajor(bt, D_PAD, 64);
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < 4; kk2++) {
        fa_wg_pin4(a[kk2]); /* written before the fence */
    }
    fa_wgmma_fence(D_PAD)(acc);
    FA_PRAGMA_UNROLL
    for (int kk2 = 0; kk2 < 4; kk2++)
        fa_wgmma_rs(D_PAD)(acc, a[kk2][0], a[kk2][1], a[kk2][2], a[kk2][3], db + fa_wg_kstep_mnmajor(kk2, D_PAD, 64),
                           add || kk2 > 0);
    fa_wgmma_commit();
}
#endif

__kernel __attribute__((reqd_work_group_size(WG_DKDV, 1, 1)))
void fa_backward_dkdv(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    __local fa_bw_elem smem[(2 * BLOCK_KV + 2 * NBUF * BLOCK_Q) * TILE_ROW] __attribute__((aligned(FA_SMEM_ALIGN)));
    __local float l_all[NBUF * BLOCK_Q], d_all[NBUF * BLOCK_Q];
    __local fa_bw_elem *const k_s = smem, *const v_s = smem + BLOCK_KV * TILE_ROW;
    __local fa_bw_elem *const q_all = smem + 2 * BLOCK_KV * TILE_ROW, *const do_all = q_all + NBUF * BLOCK_Q * TILE_ROW;
    const int lid = (int)get_local_id(0), warp = lid / 32, lane = lid % 32, g = lane / 4, t4 = lane % 4;
    FA_EMU_DECL(WARPS * WARPS_KEYS, warp)

    const int nkb = (seqlen_k + BLOCK_KV - 1) / BLOCK_KV, heads_kv = heads_q / group;
    const ulong gid = get_group_id(0);
    const int j0 = (int)(gid % (ulong)nkb) * BLOCK_KV;
    const ulong bhk = gid / (ulong)nkb;
    const ulong hk = bhk % (ulong)heads_kv, b = bhk / (ulong)heads_kv;
    const fa_bw_seq seq = fa_bw_sequence((int)b, seqlen_q, seqlen_k, cu_q, cu_k, kv_lens, total_q, total_k);
    const int sq = seq.sq, sk = seq.sk;
    __global const fa_bw_elem *qg = (__global const fa_bw_elem *)q, *kg = (__global const fa_bw_elem *)k;
    __global const fa_bw_elem *vg = (__global const fa_bw_elem *)v, *dog = (__global const fa_bw_elem *)dout;
    const ulong kb = k_off + b * (ulong)ks0 + hk * (ulong)ks1 + (ulong)seq.k_start * (ulong)ks2;
    const ulong vb = v_off + b * (ulong)vs0 + hk * (ulong)vs1 + (ulong)seq.k_start * (ulong)vs2;
    fa_bw_tile(k_s, kg, kb, ks2, j0, BLOCK_KV, sk, lid, WG_DKDV);
    fa_bw_tile(v_s, vg, vb, vs2, j0, BLOCK_KV, sk, lid, WG_DKDV);

    const int2 rows = fa_bw_rows_seeing(j0, sq, sk, win_left, win_right);
    const int wkey = warp / WARPS_KEYS * 16; /* this warp's keys in the block */
    const long key0 = (long)j0 + wkey;       /* its first key */
#ifdef FA_BW_ROLES
    /* role 0 computes S^T, P^T and dV, role 1 dP^T, dS^T and dK, with P^T from role 0 through p_x */
    const int role = warp % 2;
    __local float4 p_x[BLOCK_KV / 16][NTP][32];
    float4 acc[DT];
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        acc[dt] = (float4)(0.0f);
#else
    float4 dk_acc[DT], dv_acc[DT];
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        dk_acc[dt] = dv_acc[dt] = (float4)(0.0f);
#endif
#ifdef FA_WGMMA
    float dkw[D_PAD / 2], dvw[D_PAD / 2]; /* the warpgroup's accumulators, dk_acc's layout: the first
                                            products set them */
#endif

    /* the steps: every query block that sees the keys, of every query head of the group in turn */
    const int q_first = rows.x / BLOCK_Q * BLOCK_Q;
    const int per_head = rows.y > q_first ? (rows.y - q_first + BLOCK_Q - 1) / BLOCK_Q : 0;
    const int steps = group * per_head;
/* step st's rows (query head hk * group + st / per_head, block st % per_head) into buffer `buf`:
 * Q and dO (by fa_bw_tile or _async: LOAD), the rows' LSE in base 2 and D */
#define FA_BW_STEP_ROWS(st, buf, LOAD)                                                                  \
    {                                                                                                   \
        const ulong h_ = hk * (ulong)group + (ulong)((st) / per_head);                                  \
        const int i0_ = q_first + ((st) % per_head) * BLOCK_Q;                                          \
        const ulong row0_ = fa_bw_lse_row0(b, h_, heads_q, seqlen_q, seq, total_q);                     \
        const ulong qh_ = q_off + b * (ulong)qs0 + h_ * (ulong)qs1 + (ulong)seq.q_start * (ulong)qs2;   \
        const ulong dh_ = do_off + b * (ulong)dos0 + h_ * (ulong)dos1 + (ulong)seq.q_start * (ulong)dos2; \
        LOAD(q_all + (buf) * BLOCK_Q * TILE_ROW, qg, qh_, qs2, i0_, BLOCK_Q, sq, lid, WG_DKDV);          \
        LOAD(do_all + (buf) * BLOCK_Q * TILE_ROW, dog, dh_, dos2, i0_, BLOCK_Q, sq, lid, WG_DKDV);       \
        for (int r = lid; r < BLOCK_Q; r += WG_DKDV) {                                                  \
            const float2 ld_ = fa_bw_row_lse_d(lse, dsum, row0_, i0_ + r, sq);                          \
            l_all[(buf) * BLOCK_Q + r] = ld_.x;                                                         \
            d_all[(buf) * BLOCK_Q + r] = ld_.y;                                                         \
        }                                                                                               \
    }
#ifdef FA_BW_ASYNC
    if (steps > 0)
        FA_BW_STEP_ROWS(0, 0, fa_bw_tile_async)
    fa_cp_async_commit();
#endif
    for (int st = 0; st < steps; st++) {
        const int i0 = q_first + (st % per_head) * BLOCK_Q, buf = st % NBUF, later = st > 0;
#ifdef FA_BW_ASYNC
        fa_cp_async_wait_all();
#ifdef FA_WGMMA
        fa_wg_fence_proxy(); /* the copies (and K, V's stores) are seen by wgmma's reads */
#endif
        barrier(CLK_LOCAL_MEM_FENCE); /* this step's rows are in; every warp is done with the other buffer */
#ifdef FA_BW_WG_PIPE
        /* this step's S^T and dP^T issued behind the previous step's dV and dK products, which must be
         * done (in every warp) before the other buffer is refilled */
        float sw[32], dpw[32];
        fa_bw_wg_scores_issue(sw, dpw, k_s, q_all + buf * BLOCK_Q * TILE_ROW, v_s, do_all + buf * BLOCK_Q * TILE_ROW);
        fa_wgmma_wait1(D_PAD)(dvw);
        fa_wgmma_wait1(D_PAD)(dkw);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        if (st + 1 < steps)
            FA_BW_STEP_ROWS(st + 1, buf ^ 1, fa_bw_tile_async)
        fa_cp_async_commit();
#else
        barrier(CLK_LOCAL_MEM_FENCE); /* every warp is done with the previous step's rows */
        FA_BW_STEP_ROWS(st, 0, fa_bw_tile)
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        __local const fa_bw_elem *const q_s = q_all + buf * BLOCK_Q * TILE_ROW;
        __local const fa_bw_elem *const do_s = do_all + buf * BLOCK_Q * TILE_ROW;
        __local const float *const l_s = l_all + buf * BLOCK_Q, *const d_s = d_all + buf * BLOCK_Q;
        FA_PRAGMA_UNROLL
        for (int p0 = 0; p0 < BLOCK_Q; p0 += PASS) {
#ifdef FA_BW_ROLES
            /* x: S^T = K Q^T (role 0) or dP^T = V dO^T (role 1), [nt] keys (g, g + 8) x rows p0 + nt * 8
             * + 2 t4 + {0, 1}; role 0 puts P^T into p_x */
            float4 x[NTP];
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++)
                x[nt] = (float4)(0.0f);
            __local const float *const xa = role ? v_s : k_s, *const xb = role ? do_s : q_s;
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++)
                fa_tf_product_rows(x, NTP, xa + wkey * ROW + kk * 8, xb + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);
            { /* P^T (role 0's; role 1 computes the same from its dP^T and drops it: no branch) */
                const long row_lo = (long)i0 + p0;
                const int mask = !fa_bw_all_visible(key0, key0 + 15, row_lo, row_lo + PASS - 1, sq, sk, win_left,
                                                    win_right);
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NTP; nt++) {
                    const int r = p0 + nt * 8 + 2 * t4;
                    float4 p = x[nt], unused = x[nt];
                    fa_bw_p_ds(&p, &unused, (float4)(l_s[r], l_s[r + 1], l_s[r], l_s[r + 1]), (float4)(0.0f),
                               scale_log2, mask, 1, key0 + g, (long)i0 + r, sq, sk, win_left, win_right);
                    if (role == 0)
                        p_x[warp / 2][nt][lane] = p;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE); /* P^T is in p_x */
            /* dV += P^T dO (role 0) or dK += dS^T Q (role 1), dS^T = P^T (dP^T - D) (0 wherever P^T is
             * masked), over the pass's rows, 8 at a time; both take P^T from p_x (on PoCL, x rewritten
             * in place here came out wrong for role 0) */
            __local const float *const xc = role ? q_s : do_s;
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++) {
                const int r = p0 + nt * 8 + 2 * t4;
                const float4 p = p_x[warp / 2][nt][lane];
                const float4 a = role ? p * (x[nt] - (float4)(d_s[r], d_s[r + 1], d_s[r], d_s[r + 1])) : p;
                fa_tf_product_cols(acc, a, xc + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);
            }
            if (BLOCK_Q / PASS > 1)
                barrier(CLK_LOCAL_MEM_FENCE); /* role 1 is done with p_x before the next pass */
#else
            /* S^T = K Q^T and dP^T = V dO^T: [nt] holds keys (g, g + 8) x rows p0 + nt * 8 + 2 t4 + {0, 1} */
            float4 st[NTP], dpt[NTP];
#if defined(FA_BW_WG_PIPE)
            fa_bw_wg_scores_take(st, dpt, sw, dpw);
#elif defined(FA_WGMMA)
            {
                float sw[32], dpw[32];
                fa_bw_wg_scores_issue(sw, dpw, k_s, q_s, v_s, do_s);
                fa_bw_wg_scores_take(st, dpt, sw, dpw);
            }
#else
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++)
                st[nt] = dpt[nt] = (float4)(0.0f);
            FA_PRAGMA_UNROLL
            for (int kk = 0; kk < KSTEPS; kk++) {
#if FA_DTYPE == 0
                fa_tf_product_rows(st, NTP, k_s + wkey * ROW + kk * 8, q_s + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);
                fa_tf_product_rows(dpt, NTP, v_s + wkey * ROW + kk * 8, do_s + p0 * ROW + kk * 8, g, t4 FA_EMU_ARG);
#else
                uint ka[4], va[4];
                fa_ldsm_x4(k_s + (wkey + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &ka[0], &ka[1], &ka[2],
                           &ka[3] FA_EMU_ARG);
                fa_ldsm_x4(v_s + (wkey + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &va[0], &va[1], &va[2],
                           &va[3] FA_EMU_ARG);
                FA_PRAGMA_UNROLL
                for (int nt = 0; nt < NTP; nt += 2) {
                    const int at = (p0 + (nt + lane / 16) * 8 + lane % 8) * ROW + kk * 16 + ((lane / 8) % 2) * 8;
                    uint b0, b1, b2, b3;
                    fa_ldsm_x4(q_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&st[nt], ka[0], ka[1], ka[2], ka[3], b0, b1 FA_EMU_ARG);
                    fa_mma(&st[nt + 1], ka[0], ka[1], ka[2], ka[3], b2, b3 FA_EMU_ARG);
                    fa_ldsm_x4(do_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&dpt[nt], va[0], va[1], va[2], va[3], b0, b1 FA_EMU_ARG);
                    fa_mma(&dpt[nt + 1], va[0], va[1], va[2], va[3], b2, b3 FA_EMU_ARG);
                }
#endif
            }
#endif
            /* P^T and dS^T in place; the per-element mask only where some of this warp's 16 keys x
             * the pass's rows is not visible */
            const long row_lo = (long)i0 + p0;
            const int mask = !fa_bw_all_visible(key0, key0 + 15, row_lo, row_lo + PASS - 1, sq, sk, win_left, win_right);
#if FA_DTYPE != 0
            uint pa[NTP / 2][4], dsa[NTP / 2][4]; /* packed as the A fragments of 16 rows each */
#endif
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++) {
                const int r = p0 + nt * 8 + 2 * t4;
                fa_bw_p_ds(&st[nt], &dpt[nt], (float4)(l_s[r], l_s[r + 1], l_s[r], l_s[r + 1]),
                           (float4)(d_s[r], d_s[r + 1], d_s[r], d_s[r + 1]), scale_log2, mask, 1, key0 + g,
                           (long)i0 + r, sq, sk, win_left, win_right);
#if FA_DTYPE != 0
                FA_BW_PACK_A(pa, nt, st[nt]);
                FA_BW_PACK_A(dsa, nt, dpt[nt]);
#endif
            }
            /* dV += P^T dO, dK += dS^T Q over the pass's rows */
#if defined(FA_WGMMA) /* (st is S^T here; later is the step's) */
            fa_bw_wg_acc(dvw, pa, do_s, later);
            fa_bw_wg_acc(dkw, dsa, q_s, later);
#ifndef FA_BW_WG_PIPE
            fa_wgmma_wait(D_PAD)(dvw); /* before the next step's copies overwrite Q and dO */
            fa_wgmma_wait(D_PAD)(dkw);
#endif
#elif FA_DTYPE == 0
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++) /* 8 rows at a time */
                fa_tf_product_cols(dv_acc, st[nt], do_s + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTP; nt++)
                fa_tf_product_cols(dk_acc, dpt[nt], q_s + (p0 + nt * 8) * ROW, g, t4 FA_EMU_ARG);
#else
            FA_PRAGMA_UNROLL
            for (int kk2 = 0; kk2 < NTP / 2; kk2++) { /* 16 rows at a time */
                FA_PRAGMA_UNROLL
                for (int dt = 0; dt < DT; dt += 2) {
                    const int at = (p0 + kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW + (dt + lane / 16) * 8;
                    uint b0, b1, b2, b3;
                    fa_ldsm_x4_trans(do_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&dv_acc[dt], pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3], b0, b1 FA_EMU_ARG);
                    fa_mma(&dv_acc[dt + 1], pa[kk2][0], pa[kk2][1], pa[kk2][2], pa[kk2][3], b2, b3 FA_EMU_ARG);
                    fa_ldsm_x4_trans(q_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                    fa_mma(&dk_acc[dt], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b0, b1 FA_EMU_ARG);
                    fa_mma(&dk_acc[dt + 1], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b2, b3 FA_EMU_ARG);
                }
            }
#endif
#endif /* FA_BW_ROLES */
        }
    }
#ifdef FA_WGMMA
    fa_wgmma_wait(D_PAD)(dvw);
    fa_wgmma_wait(D_PAD)(dkw);
    if (steps > 0) /* else no product set them: 0 */
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++) {
            dk_acc[dt] = (float4)(dkw[4 * dt], dkw[4 * dt + 1], dkw[4 * dt + 2], dkw[4 * dt + 3]);
            dv_acc[dt] = (float4)(dvw[4 * dt], dvw[4 * dt + 1], dvw[4 * dt + 2], dvw[4 * dt + 3]);
        }
#endif
    /* this lane's elements: keys g and g + 8 of the warp's 16 */
    FA_PRAGMA_UNROLL
    for (int r = 0; r < 2; r++) {
        const long key = key0 + g + 8 * r;
        if (key < seq.k_rows) {
            const ulong kr = dk_off + b * (ulong)dks0 + hk * (ulong)dks1 + (ulong)(seq.k_start + key) * (ulong)dks2;
            const ulong vr = dv_off + b * (ulong)dvs0 + hk * (ulong)dvs1 + (ulong)(seq.k_start + key) * (ulong)dvs2;
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++) {
                const int col = dt * 8 + 2 * t4;
                if (col < HEAD_DIM) {
#ifdef FA_BW_ROLES
                    const float2 x = r ? acc[dt].zw : acc[dt].xy;
                    if (role)
                        fa_bw_store2(dk, kr, col, x.x * scale, x.y * scale);
                    else
                        fa_bw_store2(dv, vr, col, x.x, x.y);
#else
                    const float2 xk = r ? dk_acc[dt].zw : dk_acc[dt].xy, xv = r ? dv_acc[dt].zw : dv_acc[dt].xy;
                    fa_bw_store2(dk, kr, col, xk.x * scale, xk.y * scale);
                    fa_bw_store2(dv, vr, col, xv.x, xv.y);
#endif
                }
            }
        }
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_backward_dq(FA_BACKWARD_PARAMS)
{
    FA_BACKWARD_ALL_USED;
    __local fa_bw_elem smem[(2 * NBUF * BLOCK_KV + 2 * BLOCK_Q) * TILE_ROW] __attribute__((aligned(FA_SMEM_ALIGN)));
    __local fa_bw_elem *const k_all = smem, *const v_all = smem + NBUF * BLOCK_KV * TILE_ROW;
    __local fa_bw_elem *const q_s = smem + 2 * NBUF * BLOCK_KV * TILE_ROW, *const do_s = q_s + BLOCK_Q * TILE_ROW;
    const int lid = (int)get_local_id(0), warp = lid / 32, lane = lid % 32, g = lane / 4, t4 = lane % 4;
    FA_EMU_DECL(WARPS, warp)

    const int nqb = (seqlen_q + BLOCK_Q - 1) / BLOCK_Q;
    const ulong gid = get_group_id(0);
    /* the last query blocks first: with a causal mask they see the most keys (a shorter tail) */
    const int i0 = (nqb - 1 - (int)(gid % (ulong)nqb)) * BLOCK_Q;
    const ulong bh = gid / (ulong)nqb;
    const ulong h = bh % (ulong)heads_q, b = bh / (ulong)heads_q, hk = h / (ulong)group;
    const fa_bw_seq seq = fa_bw_sequence((int)b, seqlen_q, seqlen_k, cu_q, cu_k, kv_lens, total_q, total_k);
    const int sq = seq.sq, sk = seq.sk;
    __global const fa_bw_elem *qg = (__global const fa_bw_elem *)q, *kg = (__global const fa_bw_elem *)k;
    __global const fa_bw_elem *vg = (__global const fa_bw_elem *)v, *dog = (__global const fa_bw_elem *)dout;
    const ulong qh = q_off + b * (ulong)qs0 + h * (ulong)qs1 + (ulong)seq.q_start * (ulong)qs2;
    const ulong dh = do_off + b * (ulong)dos0 + h * (ulong)dos1 + (ulong)seq.q_start * (ulong)dos2;
    fa_bw_tile(q_s, qg, qh, qs2, i0, BLOCK_Q, sq, lid, WG);
    fa_bw_tile(do_s, dog, dh, dos2, i0, BLOCK_Q, sq, lid, WG);

    /* this lane's rows: wrow + g and + 8; their LSE (base 2) and D */
    const int wrow = warp * 16;
    const ulong row0 = fa_bw_lse_row0(b, h, heads_q, seqlen_q, seq, total_q);
    const float2 ld0 = fa_bw_row_lse_d(lse, dsum, row0, i0 + wrow + g, sq);
    const float2 ld1 = fa_bw_row_lse_d(lse, dsum, row0, i0 + wrow + g + 8, sq);
    const int2 keys = fa_bw_keys_seen(i0, sq, sk, win_left, win_right);
    const long wr0 = (long)i0 + wrow; /* this warp's first row */
    const ulong kb = k_off + b * (ulong)ks0 + hk * (ulong)ks1 + (ulong)seq.k_start * (ulong)ks2;
    const ulong vb = v_off + b * (ulong)vs0 + hk * (ulong)vs1 + (ulong)seq.k_start * (ulong)vs2;

    float4 dq_acc[DT];
    FA_PRAGMA_UNROLL
    for (int dt = 0; dt < DT; dt++)
        dq_acc[dt] = (float4)(0.0f);
#ifdef FA_WGMMA
    float dqw[D_PAD / 2]; /* the warpgroup's accumulators, dq_acc's layout: the first product sets them */
#endif

    const int j_first = keys.x / BLOCK_KV * BLOCK_KV;
#ifdef FA_BW_ASYNC
    if (j_first < keys.y) {
        fa_bw_tile_async(k_all, kg, kb, ks2, j_first, BLOCK_KV, sk, lid, WG);
        fa_bw_tile_async(v_all, vg, vb, vs2, j_first, BLOCK_KV, sk, lid, WG);
    }
    fa_cp_async_commit();
#endif
    for (int j0 = j_first; j0 < keys.y; j0 += BLOCK_KV) {
        const int buf = ((j0 - j_first) / BLOCK_KV) % NBUF;
        __local const fa_bw_elem *const k_s = k_all + buf * BLOCK_KV * TILE_ROW;
        __local const fa_bw_elem *const v_s = v_all + buf * BLOCK_KV * TILE_ROW;
#ifdef FA_BW_ASYNC
        fa_cp_async_wait_all();
#ifdef FA_WGMMA
        fa_wg_fence_proxy(); /* the copies (and Q, dO's stores) are seen by wgmma's reads */
#endif
        barrier(CLK_LOCAL_MEM_FENCE); /* these keys are in (and Q, dO); every warp is done with the other buffer */
#ifdef FA_BW_WG_PIPE
        /* this block's S and dP issued behind the previous block's dQ product, which must be done (in
         * every warp) before the other buffer is refilled */
        float sw[32], dpw[32];
        fa_bw_wg_scores_issue(sw, dpw, q_s, k_s, do_s, v_s);
        fa_wgmma_wait1(D_PAD)(dqw);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        if (j0 + BLOCK_KV < keys.y) {
            fa_bw_tile_async(k_all + (buf ^ 1) * BLOCK_KV * TILE_ROW, kg, kb, ks2, j0 + BLOCK_KV, BLOCK_KV, sk, lid,
                             WG);
            fa_bw_tile_async(v_all + (buf ^ 1) * BLOCK_KV * TILE_ROW, vg, vb, vs2, j0 + BLOCK_KV, BLOCK_KV, sk, lid,
                             WG);
        }
        fa_cp_async_commit();
#else
        barrier(CLK_LOCAL_MEM_FENCE); /* every warp is done with the previous keys (and Q, dO are in) */
        fa_bw_tile((__local fa_bw_elem *)k_s, kg, kb, ks2, j0, BLOCK_KV, sk, lid, WG);
        fa_bw_tile((__local fa_bw_elem *)v_s, vg, vb, vs2, j0, BLOCK_KV, sk, lid, WG);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

        /* S = Q K^T and dP = dO V^T: [nt] holds rows (g, g + 8) x keys nt * 8 + 2 t4 + {0, 1} */
        float4 s[NTK], dp[NTK];
#if defined(FA_BW_WG_PIPE)
        fa_bw_wg_scores_take(s, dp, sw, dpw);
#elif defined(FA_WGMMA)
        {
            float sw[32], dpw[32];
            fa_bw_wg_scores_issue(sw, dpw, q_s, k_s, do_s, v_s);
            fa_bw_wg_scores_take(s, dp, sw, dpw);
        }
#else
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NTK; nt++)
            s[nt] = dp[nt] = (float4)(0.0f);
        FA_PRAGMA_UNROLL
        for (int kk = 0; kk < KSTEPS; kk++) {
#if FA_DTYPE == 0
            fa_tf_product_rows(s, NTK, q_s + wrow * ROW + kk * 8, k_s + kk * 8, g, t4 FA_EMU_ARG);
            fa_tf_product_rows(dp, NTK, do_s + wrow * ROW + kk * 8, v_s + kk * 8, g, t4 FA_EMU_ARG);
#else
            uint qa[4], da[4];
            fa_ldsm_x4(q_s + (wrow + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &qa[0], &qa[1], &qa[2],
                       &qa[3] FA_EMU_ARG);
            fa_ldsm_x4(do_s + (wrow + lane % 16) * ROW + kk * 16 + (lane / 16) * 8, &da[0], &da[1], &da[2],
                       &da[3] FA_EMU_ARG);
            FA_PRAGMA_UNROLL
            for (int nt = 0; nt < NTK; nt += 2) {
                const int at = ((nt + lane / 16) * 8 + lane % 8) * ROW + kk * 16 + ((lane / 8) % 2) * 8;
                uint b0, b1, b2, b3;
                fa_ldsm_x4(k_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                fa_mma(&s[nt], qa[0], qa[1], qa[2], qa[3], b0, b1 FA_EMU_ARG);
                fa_mma(&s[nt + 1], qa[0], qa[1], qa[2], qa[3], b2, b3 FA_EMU_ARG);
                fa_ldsm_x4(v_s + at, &b0, &b1, &b2, &b3 FA_EMU_ARG);
                fa_mma(&dp[nt], da[0], da[1], da[2], da[3], b0, b1 FA_EMU_ARG);
                fa_mma(&dp[nt + 1], da[0], da[1], da[2], da[3], b2, b3 FA_EMU_ARG);
            }
#endif
        }
#endif
        /* dS in place of dP */
        const int mask = !fa_bw_all_visible(j0, (long)j0 + BLOCK_KV - 1, wr0, wr0 + 15, sq, sk, win_left, win_right);
#if FA_DTYPE != 0
        uint dsa[NTK / 2][4]; /* packed as the A fragments of 16 keys each */
#endif
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NTK; nt++) {
            fa_bw_p_ds(&s[nt], &dp[nt], (float4)(ld0.x, ld0.x, ld1.x, ld1.x), (float4)(ld0.y, ld0.y, ld1.y, ld1.y),
                       scale_log2, mask, 0, wr0 + g, (long)j0 + nt * 8 + 2 * t4, sq, sk, win_left, win_right);
#if FA_DTYPE != 0
            FA_BW_PACK_A(dsa, nt, dp[nt]);
#endif
        }
        /* dQ += dS K over the block's keys */
#if defined(FA_WGMMA)
        fa_bw_wg_acc(dqw, dsa, k_s, j0 > j_first);
#ifndef FA_BW_WG_PIPE
        fa_wgmma_wait(D_PAD)(dqw); /* before the next block's copies overwrite K */
#endif
#elif FA_DTYPE == 0
        FA_PRAGMA_UNROLL
        for (int nt = 0; nt < NTK; nt++) /* 8 keys at a time */
            fa_tf_product_cols(dq_acc, dp[nt], k_s + nt * 8 * ROW, g, t4 FA_EMU_ARG);
#else
        FA_PRAGMA_UNROLL
        for (int kk2 = 0; kk2 < NTK / 2; kk2++) { /* 16 keys at a time */
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt += 2) {
                uint b0, b1, b2, b3;
                fa_ldsm_x4_trans(k_s + (kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW + (dt + lane / 16) * 8, &b0,
                                 &b1, &b2, &b3 FA_EMU_ARG);
                fa_mma(&dq_acc[dt], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b0, b1 FA_EMU_ARG);
                fa_mma(&dq_acc[dt + 1], dsa[kk2][0], dsa[kk2][1], dsa[kk2][2], dsa[kk2][3], b2, b3 FA_EMU_ARG);
            }
        }
#endif
    }
#ifdef FA_WGMMA
    fa_wgmma_wait(D_PAD)(dqw);
    if (j_first < keys.y) /* else no product set them: 0 */
        FA_PRAGMA_UNROLL
        for (int dt = 0; dt < DT; dt++)
            dq_acc[dt] = (float4)(dqw[4 * dt], dqw[4 * dt + 1], dqw[4 * dt + 2], dqw[4 * dt + 3]);
#endif
    FA_PRAGMA_UNROLL
    for (int r = 0; r < 2; r++) {
        const long row = wr0 + g + 8 * r;
        if (row < sq) {
            const ulong qr = dq_off + b * (ulong)dqs0 + h * (ulong)dqs1 + (ulong)(seq.q_start + row) * (ulong)dqs2;
            FA_PRAGMA_UNROLL
            for (int dt = 0; dt < DT; dt++) {
                const int col = dt * 8 + 2 * t4;
                const float2 x = r ? dq_acc[dt].zw : dq_acc[dt].xy;
                if (col < HEAD_DIM)
                    fa_bw_store2(dq, qr, col, x.x * scale, x.y * scale);
            }
        }
    }
}
