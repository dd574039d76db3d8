/* FlashAttention-2 forward on NVIDIA tensor cores (compute capability >= 8.0), f16/bf16 storage.
 *
 * NVIDIA-only: inline PTX (mma.sync.m16n8k16, ldmatrix, shfl.sync). The planner builds this file only
 * for NVIDIA devices of compute capability >= 8.0 with f16/bf16 data, and falls back to the portable
 * kernels when it does not compile or FA_CL_VENDOR_PATH=0.
 *
 * Each warp owns 16 query rows. The Q block is staged through local memory once and kept in
 * registers as mma A fragments. Per block of BLOCK_KV keys: K and V are loaded into local memory,
 * S = Q K^T is computed with mma (B fragments by ldmatrix from K rows), the online softmax runs on
 * the accumulators (row max/sum across the 4 lanes sharing a row by shfl.sync), and the
 * probabilities, packed to f16/bf16, are used directly as the A fragments of O += P V (B fragments
 * by ldmatrix.trans from V rows): P never leaves registers. Arithmetic: fp32 accumulate.
 *
 * Defined by the planner: FA_DTYPE (1 f16, 2 bf16), HEAD_DIM, D_PAD (64 or 128), BLOCK_Q (16 per
 * warp), BLOCK_KV (multiple of 16); FA_ALIGNED16 when every row start is 16-byte aligned.
 */
#if FA_DTYPE != 1 && FA_DTYPE != 2
#error "the tensor-core kernel takes f16 or bf16 storage"
#endif

#define WARPS (BLOCK_Q / 16)
#define WG (WARPS * 32)
#define ROW (D_PAD + 8)       /* local row pitch in halves: 16-byte rows offset by 16 bytes -> conflict-free ldmatrix */
#define CH (D_PAD / 8)        /* 16-byte chunks per row */
#define KSTEPS (D_PAD / 16)   /* k-steps of Q K^T */
#define NT (BLOCK_KV / 8)     /* n-tiles of S */
#define DT (D_PAD / 8)        /* n-tiles of O */

#if FA_DTYPE == 1
#define FA_MMA_TYPE "f16"
#else
#define FA_MMA_TYPE "bf16"
#endif

inline uint fa_smem_addr(__local const ushort *p) { return (uint)(size_t)p; }

inline void fa_ldsm_x4(uint addr, uint *r0, uint *r1, uint *r2, uint *r3)
{
    uint a, b, c, d;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
    *r0 = a; *r1 = b; *r2 = c; *r3 = d;
}

inline void fa_ldsm_x4_trans(uint addr, uint *r0, uint *r1, uint *r2, uint *r3)
{
    uint a, b, c, d;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
    *r0 = a; *r1 = b; *r2 = c; *r3 = d;
}

/* acc (16x8, fp32) += A (16x16) B (16x8) */
inline void fa_mma(float4 *acc, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1)
{
    float c0 = acc->x, c1 = acc->y, c2 = acc->z, c3 = acc->w;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." FA_MMA_TYPE "." FA_MMA_TYPE ".f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    *acc = (float4)(c0, c1, c2, c3);
}

inline float fa_shfl_xor(float x, uint mask)
{
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(as_uint(x)), "r"(mask));
    return as_float(r);
}

/* two floats -> one register of two f16/bf16 (lo in the low half), round to nearest even */
inline uint fa_pack2(float lo, float hi)
{
    uint r;
#if FA_DTYPE == 1
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
#endif
    return r;
}

/* rows [first, first + count) of a [seq, D] view into a local tile of 16-bit values; zero padded.
 * FA_ALIGNED16 (planner: head_dim, strides and offsets multiples of 8 elements) allows 16-byte
 * global loads; local rows are always 16-byte aligned. */
inline void fa_load_tile(__local ushort *tile, __global const ushort *src, ulong base, long row_stride, int first,
                         int count, int limit, int lid)
{
    for (int e = lid; e < count * CH; e += WG) {
        int r = e / CH, c = e % CH;
        uint4 x = (uint4)(0);
        if (first + r < limit && 8 * c < HEAD_DIM) {
            __global const ushort *p = src + base + (ulong)(first + r) * (ulong)row_stride + 8 * c;
#if defined(FA_ALIGNED16) && HEAD_DIM % 8 == 0
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

#if defined(FA_ALIGNED16) && HEAD_DIM % 8 == 0
/* K/V blocks are copied asynchronously (cp.async, double-buffered): the next block's copy overlaps
 * this block's math. */
#define FA_ASYNC 1
#define TILE (BLOCK_KV * ROW)

/* 16 bytes global -> local without passing through registers; valid == 0 writes zeros (src-size 0) */
inline void fa_cp_async16(__local ushort *dst, __global const ushort *src, int valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(fa_smem_addr(dst)), "l"((ulong)src), "r"(valid ? 16 : 0) : "memory");
}

inline void fa_load_tile_async(__local ushort *tile, __global const ushort *src, ulong base, long row_stride,
                               int first, int limit, int lid)
{
    for (int e = lid; e < BLOCK_KV * CH; e += WG) {
        int r = e / CH, c = e % CH;
        int valid = first + r < limit && 8 * c < HEAD_DIM;
        /* an in-bounds address even when nothing is read: row 0, column 0 of this head */
        __global const ushort *p = src + base + (valid ? (ulong)(first + r) * (ulong)row_stride + 8 * c : 0);
        fa_cp_async16(tile + r * ROW + 8 * c, p, valid);
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
}
#endif

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void fa_forward(FA_FORWARD_PARAMS)
{
    __local ushort q_s[BLOCK_Q * ROW] __attribute__((aligned(16)));
#ifdef FA_ASYNC
    __local ushort k_s[2 * TILE] __attribute__((aligned(16)));
    __local ushort v_s[2 * TILE] __attribute__((aligned(16)));
#else
    __local ushort k_s[BLOCK_KV * ROW] __attribute__((aligned(16)));
    __local ushort v_s[BLOCK_KV * ROW] __attribute__((aligned(16)));
#endif

    const int lid = (int)get_local_id(0);
    const int warp = lid / 32, lane = lid % 32;
    const int g = lane / 4, t4 = lane % 4;
    FA_BLOCK_COORDS
    __global const ushort *qg = (__global const ushort *)q;
    __global const ushort *kg = (__global const ushort *)k;
    __global const ushort *vg = (__global const ushort *)v;
    const ulong kbase = k_off + b * (ulong)ks0 + (ulong)hk * (ulong)ks1;
    const ulong vbase = v_off + b * (ulong)vs0 + (ulong)hk * (ulong)vs1;

    fa_load_tile(q_s, qg, q_off + b * (ulong)qs0 + (ulong)h * (ulong)qs1, qs2, q0, BLOCK_Q, seqlen_q, lid);
    barrier(CLK_LOCAL_MEM_FENCE);

    /* this warp's 16 rows of Q as A fragments, for every k-step */
    uint qa[KSTEPS][4];
#pragma unroll
    for (int kk = 0; kk < KSTEPS; kk++)
        fa_ldsm_x4(fa_smem_addr(q_s + (warp * 16 + lane % 16) * ROW + kk * 16 + (lane / 16) * 8), &qa[kk][0],
                   &qa[kk][1], &qa[kk][2], &qa[kk][3]);

    /* the two rows this lane holds: warp*16 + g and + 8 */
    const int row0 = q0 + warp * 16 + g, row1 = row0 + 8;
    int lo0, hi0, lo1, hi1;
    fa_row_range(row0, seqlen_q, seqlen_k, win_left, win_right, &lo0, &hi0);
    fa_row_range(row1, seqlen_q, seqlen_k, win_left, win_right, &lo1, &hi1);
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    float4 acc[DT];
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
        acc[dt] = (float4)(0.0f);

    int blk_lo, blk_hi, unused;
    fa_row_range(q0, seqlen_q, seqlen_k, win_left, win_right, &blk_lo, &unused);
    fa_row_range(min(q0 + BLOCK_Q, seqlen_q) - 1, seqlen_q, seqlen_k, win_left, win_right, &unused, &blk_hi);

    const int kv_first = blk_lo / BLOCK_KV * BLOCK_KV;
#ifdef FA_ASYNC
    if (kv_first < blk_hi) {
        fa_load_tile_async(k_s, kg, kbase, ks2, kv_first, seqlen_k, lid);
        fa_load_tile_async(v_s, vg, vbase, vs2, kv_first, seqlen_k, lid);
    }
#endif
    for (int kv0 = kv_first, it = 0; kv0 < blk_hi; kv0 += BLOCK_KV, it++) {
#ifdef FA_ASYNC
        __local const ushort *kc = k_s + (it & 1) * TILE, *vc = v_s + (it & 1) * TILE;
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        barrier(CLK_LOCAL_MEM_FENCE); /* this block is in; every warp is done with the other buffer */
        if (kv0 + BLOCK_KV < blk_hi) {
            fa_load_tile_async(k_s + ((it + 1) & 1) * TILE, kg, kbase, ks2, kv0 + BLOCK_KV, seqlen_k, lid);
            fa_load_tile_async(v_s + ((it + 1) & 1) * TILE, vg, vbase, vs2, kv0 + BLOCK_KV, seqlen_k, lid);
        }
#else
        __local const ushort *kc = k_s, *vc = v_s;
        barrier(CLK_LOCAL_MEM_FENCE); /* the previous block's K and V are consumed */
        fa_load_tile(k_s, kg, kbase, ks2, kv0, BLOCK_KV, seqlen_k, lid);
        fa_load_tile(v_s, vg, vbase, vs2, kv0, BLOCK_KV, seqlen_k, lid);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif

        /* S = Q K^T: s[nt] holds rows (g, g+8) x keys nt*8 + 2*t4 + {0,1} */
        float4 s[NT];
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            s[nt] = (float4)(0.0f);
#pragma unroll
            for (int kk = 0; kk < KSTEPS; kk += 2) {
                uint b0, b1, b2, b3;
                fa_ldsm_x4(fa_smem_addr(kc + (nt * 8 + lane % 8) * ROW + kk * 16 + (lane / 8) * 8), &b0, &b1, &b2,
                           &b3);
                fa_mma(&s[nt], qa[kk][0], qa[kk][1], qa[kk][2], qa[kk][3], b0, b1);
                fa_mma(&s[nt], qa[kk + 1][0], qa[kk + 1][1], qa[kk + 1][2], qa[kk + 1][3], b2, b3);
            }
        }

        /* mask + scale, row maxima over the block and the 4 lanes sharing each row */
        float mx0 = m0, mx1 = m1;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            int key = kv0 + nt * 8 + 2 * t4;
            s[nt].x = (key >= lo0 && key < hi0) ? s[nt].x * scale_log2 : -INFINITY;
            s[nt].y = (key + 1 >= lo0 && key + 1 < hi0) ? s[nt].y * scale_log2 : -INFINITY;
            s[nt].z = (key >= lo1 && key < hi1) ? s[nt].z * scale_log2 : -INFINITY;
            s[nt].w = (key + 1 >= lo1 && key + 1 < hi1) ? s[nt].w * scale_log2 : -INFINITY;
            mx0 = fmax(mx0, fmax(s[nt].x, s[nt].y));
            mx1 = fmax(mx1, fmax(s[nt].z, s[nt].w));
        }
        mx0 = fmax(mx0, fa_shfl_xor(mx0, 1));
        mx0 = fmax(mx0, fa_shfl_xor(mx0, 2));
        mx1 = fmax(mx1, fa_shfl_xor(mx1, 1));
        mx1 = fmax(mx1, fa_shfl_xor(mx1, 2));
        float u0 = (mx0 == -INFINITY) ? 0.0f : mx0, u1 = (mx1 == -INFINITY) ? 0.0f : mx1;
        float d0 = native_exp2(m0 - u0), d1 = native_exp2(m1 - u1);
        m0 = mx0;
        m1 = mx1;
        float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            s[nt].x = native_exp2(s[nt].x - u0);
            s[nt].y = native_exp2(s[nt].y - u0);
            s[nt].z = native_exp2(s[nt].z - u1);
            s[nt].w = native_exp2(s[nt].w - u1);
            sum0 += s[nt].x + s[nt].y;
            sum1 += s[nt].z + s[nt].w;
        }
        l0 = l0 * d0 + sum0; /* partial over this lane's keys; the 4 lanes are added at the end */
        l1 = l1 * d1 + sum1;
#pragma unroll
        for (int dt = 0; dt < DT; dt++)
            acc[dt] *= (float4)(d0, d0, d1, d1);

        /* O += P V: the accumulator layout of two S tiles is the A fragment of 16 keys */
#pragma unroll
        for (int kk2 = 0; kk2 < BLOCK_KV / 16; kk2++) {
            uint a0 = fa_pack2(s[2 * kk2].x, s[2 * kk2].y), a1 = fa_pack2(s[2 * kk2].z, s[2 * kk2].w);
            uint a2 = fa_pack2(s[2 * kk2 + 1].x, s[2 * kk2 + 1].y), a3 = fa_pack2(s[2 * kk2 + 1].z, s[2 * kk2 + 1].w);
#pragma unroll
            for (int dt = 0; dt < DT; dt += 2) {
                uint b0, b1, b2, b3;
                fa_ldsm_x4_trans(fa_smem_addr(vc + (kk2 * 16 + ((lane / 8) % 2) * 8 + lane % 8) * ROW +
                                              (dt + lane / 16) * 8),
                                 &b0, &b1, &b2, &b3);
                fa_mma(&acc[dt], a0, a1, a2, a3, b0, b1);
                fa_mma(&acc[dt + 1], a0, a1, a2, a3, b2, b3);
            }
        }
    }

    l0 += fa_shfl_xor(l0, 1);
    l0 += fa_shfl_xor(l0, 2);
    l1 += fa_shfl_xor(l1, 1);
    l1 += fa_shfl_xor(l1, 2);
    const float inv0 = (l0 == 0.0f) ? 0.0f : 1.0f / l0, inv1 = (l1 == 0.0f) ? 0.0f : 1.0f / l1;
    const ulong obase = o_off + b * (ulong)os0 + (ulong)h * (ulong)os1;
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
        int col = dt * 8 + 2 * t4;
        if (row0 < seqlen_q) {
            ulong rb = obase + (ulong)row0 * (ulong)os2;
            if (col < HEAD_DIM) fa_store1(o, rb + col, acc[dt].x * inv0);
            if (col + 1 < HEAD_DIM) fa_store1(o, rb + col + 1, acc[dt].y * inv0);
        }
        if (row1 < seqlen_q) {
            ulong rb = obase + (ulong)row1 * (ulong)os2;
            if (col < HEAD_DIM) fa_store1(o, rb + col, acc[dt].z * inv1);
            if (col + 1 < HEAD_DIM) fa_store1(o, rb + col + 1, acc[dt].w * inv1);
        }
    }
    if (has_lse && t4 == 0) {
        if (row0 < seqlen_q)
            lse[bh * (ulong)seqlen_q + (ulong)row0] = (l0 == 0.0f) ? -INFINITY : (m0 + log2(l0)) * M_LN2_F;
        if (row1 < seqlen_q)
            lse[bh * (ulong)seqlen_q + (ulong)row1] = (l1 == 0.0f) ? -INFINITY : (m1 + log2(l1)) * M_LN2_F;
    }
}
