/* SPDX-License-Identifier: Apache-2.0 */
/* The XMX intrinsic check (tests/test_xmx.c): C (M x N, fp32) = A (M x K) B (K x N), 16-bit A and B
 * row-major, through cl/fa_xmx.cl's intel_sub_group_*_matrix_mad_k16: each sub-group of FA_XMX_SG
 * work-items takes FA_XMX_SG columns, K in steps of 16; its operands are gathered element by element
 * into the specification's layouts (cl/fa_xmx.cl), so that the host's GEMM checks those layouts.
 * -D: FA_XMX_SG (8, 16), FA_XMX_M (1, 2, 4, 8), FA_XMX_BF16 (0 f16, 1 bf16), FA_XMX_WG (work-items
 * per work-group, a multiple of FA_XMX_SG), and FA_XMX_EMULATE where the device has no XMX. */
#if FA_XMX_M == 1
#define FA_XMX_V(t) t
#define FA_XMX_LOAD(p) (p)[0]
#define FA_XMX_STORE(v, p) ((p)[0] = (v))
#else
#define FA_XMX_V(t) FA_XMX_CAT2(t, FA_XMX_M)
#define FA_XMX_LOAD(p) FA_XMX_CAT2(vload, FA_XMX_M)(0, p)
#define FA_XMX_STORE(v, p) FA_XMX_CAT2(vstore, FA_XMX_M)(v, 0, p)
#endif
#define FA_XMX_CAT2_(a, b) a##b
#define FA_XMX_CAT2(a, b) FA_XMX_CAT2_(a, b)
#define FA_XMX_AS(t) FA_XMX_CAT2(as_, FA_XMX_V(t))
#if FA_XMX_BF16
#define FA_XMX_MAD intel_sub_group_bf16_bf16_matrix_mad_k16
#else
#define FA_XMX_MAD intel_sub_group_f16_f16_matrix_mad_k16
#endif

__kernel FA_XMX_REQD_SG __attribute__((reqd_work_group_size(FA_XMX_WG, 1, 1))) void
fa_xmx_check_gemm(__global const ushort *A, __global const ushort *B, __global float *C, int K, int N)
{
    FA_XMX_DECL(FA_XMX_WG)
    const int lane = (int)(get_local_id(0) % FA_XMX_SG);
    const int col = (int)(get_global_id(0) / FA_XMX_SG) * FA_XMX_SG + lane; /* this work-item's column n */
    FA_XMX_V(float) acc = (FA_XMX_V(float))(0.0f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        /* a: row m's elements of this work-item (sub-group 8: columns 2 lane, 2 lane + 1) */
#if FA_XMX_SG == 8
        uint aw[FA_XMX_M];
        for (int m = 0; m < FA_XMX_M; m++)
            aw[m] = A[m * K + k0 + 2 * lane] | (uint)A[m * K + k0 + 2 * lane + 1] << 16;
        const FA_XMX_V(int) a = FA_XMX_AS(int)(FA_XMX_LOAD(aw));
#else
        ushort ah[FA_XMX_M];
        for (int m = 0; m < FA_XMX_M; m++)
            ah[m] = A[m * K + k0 + lane];
        const FA_XMX_V(short) a = FA_XMX_AS(short)(FA_XMX_LOAD(ah));
#endif
        /* b: column col, rows 2i and 2i + 1 in int i */
        uint bw[8];
        for (int i = 0; i < 8; i++)
            bw[i] = B[(k0 + 2 * i) * N + col] | (uint)B[(k0 + 2 * i + 1) * N + col] << 16;
        acc = FA_XMX_MAD(a, as_int8(vload8(0, bw)), acc FA_XMX_ARG);
    }
    float c[FA_XMX_M];
    FA_XMX_STORE(acc, c);
    for (int m = 0; m < FA_XMX_M; m++)
        C[m * N + col] = c[m];
}
