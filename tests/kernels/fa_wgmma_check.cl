/* SPDX-License-Identifier: Apache-2.0 */
/* The wgmma GEMM check (tests/test_wgmma.c): one warpgroup computes C (64 x CHECK_N, fp32) from
 * 16-bit A (64 x CHECK_K, rows along k) and B with cl/fa_nv_wgmma.cl's tiles, descriptors and
 * products, the forms the forward kernel uses (FA_WGMMA):
 *   CHECK_FORM 1 (S = Q K^T): A and B from local memory, both K-major; b holds B^T, CHECK_N rows of
 *                CHECK_K (as K's rows), C = A b^T.
 *   CHECK_FORM 2 (O = P V):   A from registers (mma.sync's A fragments), B MN-major; b holds
 *                CHECK_K rows of CHECK_N (as V's rows), C = A b; C starts from c's values (the
 *                accumulation the forward's O += P V does).
 *                CHECK_N 256 is two products of n = 128 (the forward's P V at head_dim 256: O's
 *                halves against V's column halves).
 * FA_WG_SWIZZLE picks the tiles' layout (cl/fa_nv_wgmma.cl); CHECK_N 32..128 (form 1) or 64..256
 * (form 2), CHECK_K a multiple of 16.
 * Built after fa_nv_ptx.cl and fa_nv_wgmma.cl with FA_DTYPE (1 f16, 2 bf16), through the sm_90a
 * retargeting only. */
#ifndef FA_PTX_SM90A
#error "tests/kernels/fa_wgmma_check.cl is built through the sm_90a retargeting (src/program/program.c)"
#endif
#if (CHECK_FORM == 1 && CHECK_N != 32 && CHECK_N != 64 && CHECK_N != 128) || \
    (CHECK_FORM == 2 && CHECK_N != 64 && CHECK_N != 128 && CHECK_N != 256) || CHECK_K % 16 != 0 || \
    (CHECK_FORM != 1 && CHECK_FORM != 2)
#error "CHECK_N 32..128 (form 1) or 64..256 (form 2), CHECK_K a multiple of 16, CHECK_FORM 1 or 2"
#endif
#if CHECK_N > 128 /* n of one product (a literal: the products' names are pasted from it) */
#define CHECK_PART 128
#else
#define CHECK_PART CHECK_N
#endif
#define CHECK_PARTS (CHECK_N / CHECK_PART)

/* rows x w halves from global (rows of w) into a core-matrix tile */
inline void fa_wg_check_tile(__local ushort *tile, __global const ushort *src, int rows, int w, int lid)
{
    for (int e = lid; e < rows * w / 8; e += 128) {
        const int r = e / (w / 8), c = e % (w / 8);
        *(__local uint4 *)(tile + fa_wg_at(r, c, w, rows)) = *(__global const uint4 *)(src + r * w + 8 * c);
    }
}

__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void fa_wgmma_check(__global const ushort *a, __global const ushort *b, __global float *c)
{
    __local ushort as[64 * CHECK_K] __attribute__((aligned(1024)));
    __local ushort bs[CHECK_N * CHECK_K] __attribute__((aligned(1024)));
    const int lid = (int)get_local_id(0), warp = lid / 32, g = lid % 32 / 4, t = lid % 4;
    fa_wg_check_tile(as, a, 64, CHECK_K, lid);
#if CHECK_FORM == 1
    fa_wg_check_tile(bs, b, CHECK_N, CHECK_K, lid);
#else
    fa_wg_check_tile(bs, b, CHECK_K, CHECK_N, lid);
#endif
    fa_wg_fence_proxy();
    barrier(CLK_LOCAL_MEM_FENCE);

    float d[CHECK_N / 2];
#pragma unroll
    for (int i = 0; i < CHECK_N / 2; i++) {
        const int row = 16 * warp + g + 8 * (i / 2 % 2), col = 8 * (i / 4) + 2 * t + i % 2;
        d[i] = CHECK_FORM == 2 ? c[row * CHECK_N + col] : 0.0f;
    }
#if CHECK_FORM == 1
    fa_wgmma_fence(CHECK_N)(d);
    const ulong da = fa_wg_desc_kmajor(as, CHECK_K, 64), db = fa_wg_desc_kmajor(bs, CHECK_K, CHECK_N);
#pragma unroll
    for (int kk = 0; kk < CHECK_K / 16; kk++)
        fa_wgmma_ss(CHECK_N)(d, da + fa_wg_kstep_kmajor(kk, CHECK_K, 64),
                             db + fa_wg_kstep_kmajor(kk, CHECK_K, CHECK_N), kk > 0);
#else
    uint fr[CHECK_K / 16][4];
#pragma unroll
    for (int kk = 0; kk < CHECK_K / 16; kk++) {
        /* this warp's rows 16 warp + g and + 8, columns 16 kk + 2 t (+1) and + 8 */
        __global const uint *r0 = (__global const uint *)(a + (16 * warp + g) * CHECK_K + 16 * kk + 2 * t);
        __global const uint *r1 = (__global const uint *)(a + (16 * warp + g + 8) * CHECK_K + 16 * kk + 2 * t);
        fr[kk][0] = r0[0];
        fr[kk][1] = r1[0];
        fr[kk][2] = r0[4];
        fr[kk][3] = r1[4];
        fa_wg_pin4(fr[kk]);
    }
#pragma unroll
    for (int h = 0; h < CHECK_PARTS; h++)
        fa_wgmma_fence(CHECK_PART)(d + h * (CHECK_PART / 2));
#pragma unroll
    for (int kk = 0; kk < CHECK_K / 16; kk++)
#pragma unroll
        for (int h = 0; h < CHECK_PARTS; h++) {
            /* part h: columns h CHECK_PART .., from 16-byte chunk h CHECK_PART / 8 of B's rows */
            const ulong db = fa_wg_desc_mnmajor(bs + fa_wg_at(0, h * CHECK_PART / 8, CHECK_N, CHECK_K), CHECK_N,
                                                CHECK_K);
            fa_wgmma_rs(CHECK_PART)(d + h * (CHECK_PART / 2), fr[kk][0], fr[kk][1], fr[kk][2], fr[kk][3],
                                    db + fa_wg_kstep_mnmajor(kk, CHECK_N, CHECK_K), 1);
        }
#endif
    fa_wgmma_commit();
#pragma unroll
    for (int h = 0; h < CHECK_PARTS; h++)
        fa_wgmma_wait(CHECK_PART)(d + h * (CHECK_PART / 2));
#pragma unroll
    for (int i = 0; i < CHECK_N / 2; i++) {
        const int row = 16 * warp + g + 8 * (i / 2 % 2), col = 8 * (i / 4) + 2 * t + i % 2;
        c[row * CHECK_N + col] = d[i];
    }
}
