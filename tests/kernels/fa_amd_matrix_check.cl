/* SPDX-License-Identifier: Apache-2.0 */
/* The AMD matrix instruction check (tests/test_amd_matrix.c): C (T x N, fp32) = A (T x K) B (K x N),
 * 16-bit A and B row-major, through cl/fa_amd_matrix.cl's fa_amd_mma: each wave takes T columns of C,
 * K in steps of the instruction's. Its operands are gathered and its results scattered element by
 * element with the layouts as the vendor documents them, written out here again rather than taken
 * from cl/fa_amd_matrix.cl's macros, so that the host's GEMM checks those layouts. -D: FA_AMD_MATRIX,
 * FA_AMD_BF16, FA_AMD_WG (work-items per work-group, a multiple of the wave), and
 * FA_AMD_MATRIX_EMULATE where the device has no such unit. */
__kernel __attribute__((reqd_work_group_size(FA_AMD_WG, 1, 1))) void
fa_amd_check_gemm(__global const ushort *A, __global const ushort *B, __global float *C, int K, int N)
{
    FA_AMD_DECL(FA_AMD_WG)
    const int l = (int)(get_local_id(0) % FA_AMD_WAVE);
    const int col0 = (int)(get_global_id(0) / FA_AMD_WAVE) * FA_AMD_T; /* this wave's first column */
    float c[FA_AMD_CN];
    for (int j = 0; j < FA_AMD_CN; j++)
        c[j] = 0.0f;
    for (int k0 = 0; k0 < K; k0 += FA_AMD_K) {
        ushort a[FA_AMD_AN], b[FA_AMD_AN];
        for (int i = 0; i < FA_AMD_AN; i++) {
#if FA_AMD_MATRIX == 1 /* row / column l % 16, every k; lanes 16..31 the same as 0..15 */
            const int r = l % 16, k = i;
#else /* row / column l % T, k = 4 (l / T) + i */
            const int r = l % FA_AMD_T, k = 4 * (l / FA_AMD_T) + i;
#endif
            a[i] = A[r * K + k0 + k];
            b[i] = B[(k0 + k) * N + col0 + r];
        }
        fa_amd_mma(a, b, c FA_AMD_ARG);
    }
    for (int j = 0; j < FA_AMD_CN; j++) {
#if FA_AMD_MATRIX == 1
        const int row = 2 * j + l / 16, col = l % 16;
#elif FA_AMD_MATRIX == 2
        const int row = 8 * (j / 4) + 4 * (l / 32) + j % 4, col = l % 32;
#else
        const int row = 4 * (l / 16) + j, col = l % 16;
#endif
        C[row * N + col0 + col] = c[j];
    }
}
