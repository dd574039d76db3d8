/* SPDX-License-Identifier: Apache-2.0 */
/* AMD's matrix instructions for kernels built on them, through clang's AMDGPU builtins (what ROCm's
 * OpenCL compiler accepts), 16-bit inputs (f16 or bf16) and fp32 accumulators. FA_AMD_MATRIX picks
 * one; a wave of FA_AMD_WAVE work-items computes C (T x T) += A (T x K) B (K x T):
 *   1  RDNA3 (gfx11) WMMA, wave32: __builtin_amdgcn_wmma_f32_16x16x16_{f16,bf16}_w32, T 16, K 16
 *   2  CDNA (gfx90a, gfx94x) MFMA, wave64: __builtin_amdgcn_mfma_f32_32x32x8{f16,bf16_1k}, T 32, K 8
 *   3  CDNA MFMA, wave64: __builtin_amdgcn_mfma_f32_16x16x16{f16,bf16_1k}, T 16, K 16
 * Each lane l holds AN elements of A and of B and CN of C; element i of lane l is
 *   A[FA_AMD_A_ROW(l)][FA_AMD_AB_K(l, i)], B[FA_AMD_AB_K(l, i)][FA_AMD_B_COL(l)],
 *   C[FA_AMD_C_ROW(l, i)][FA_AMD_C_COL(l)],
 * as the vendor documents them:
 *   WMMA (AMD RDNA3 ISA reference guide, section 7.9 "Wave Matrix Multiply Accumulate"; GPUOpen,
 *   "How to accelerate AI applications on RDNA 3 using WMMA", gpuopen.com/learn/wmma_on_rdna3):
 *   lane l holds row l % 16 of A and column l % 16 of B, all 16 k; lanes 16..31 must hold the same
 *   A and B as lanes 0..15; C's element i of lane l is row 2 i + l / 16, column l % 16 (even rows in
 *   lanes 0..15, odd rows in 16..31).
 *   MFMA (AMD CDNA2 ISA guide, section 7 "Matrix Arithmetic Instructions"; AMD's matrix instruction
 *   calculator, github.com/ROCm/amd_matrix_instruction_calculator; AMD lab notes "AMD matrix cores",
 *   gpuopen.com/learn/amd-lab-notes/amd-lab-notes-matrix-cores-readme): lane l holds row l % T of A
 *   and column l % T of B, k = 4 (l / T) + i, i < 4; C's element i of lane l is column l % T, row
 *   8 (i / 4) + 4 (l / 32) + i % 4 (32 x 32) or 4 (l / 16) + i (16 x 16).
 * The kernel's work-groups are one-dimensional, so that a wave is FA_AMD_WAVE consecutive local ids,
 * and it requires the wave size where the compiler takes it (gfx11 builds are wave32 by default).
 *
 * fa_amd_mma(a, b, c FA_AMD_ARG): c (CN floats) += the product of a and b (AN 16-bit values each,
 * their bits as ushort: f16, or bf16 where FA_AMD_BF16 is 1), all in private arrays.
 *
 * FA_AMD_MATRIX_EMULATE builds the same function in portable OpenCL C with exactly these layouts, so
 * that a kernel's indexing runs and is checked on any device (PoCL, Oclgrind), as cl/fa_xmx.cl does
 * for Intel's XMX: the wave's operands go through a local scratch between two work-group barriers,
 * so every call must be reached by every work-item of the work-group. Products are summed in fp32
 * (fma) in k order; the matrix unit's order and rounding differ within the fp32 accumulation's.
 * WMMA's replicated operands are checked: where lanes 16..31 differ from lanes 0..15 the result is
 * NaN. The kernel declares the scratch with FA_AMD_DECL(work_group_size). Needs nothing from other
 * units. */
#ifndef FA_AMD_MATRIX
#error "FA_AMD_MATRIX: the matrix instruction (1 WMMA 16x16x16 wave32, 2 MFMA 32x32x8, 3 MFMA 16x16x16)"
#endif
#ifndef FA_AMD_BF16
#define FA_AMD_BF16 0
#endif

#if FA_AMD_MATRIX == 1
#define FA_AMD_WAVE 32
#define FA_AMD_T 16
#define FA_AMD_K 16
#define FA_AMD_AN 16
#define FA_AMD_CN 8
#define FA_AMD_AB_K(l, i) (i)
#define FA_AMD_C_ROW(l, i) (2 * (i) + (l) / 16)
#define FA_AMD_COPIES 2 /* lanes 0..15 and their replicas 16..31 */
#elif FA_AMD_MATRIX == 2
#define FA_AMD_WAVE 64
#define FA_AMD_T 32
#define FA_AMD_K 8
#define FA_AMD_AN 4
#define FA_AMD_CN 16
#define FA_AMD_AB_K(l, i) (4 * ((l) / 32) + (i))
#define FA_AMD_C_ROW(l, i) (8 * ((i) / 4) + 4 * ((l) / 32) + (i) % 4)
#define FA_AMD_COPIES 1
#elif FA_AMD_MATRIX == 3
#define FA_AMD_WAVE 64
#define FA_AMD_T 16
#define FA_AMD_K 16
#define FA_AMD_AN 4
#define FA_AMD_CN 4
#define FA_AMD_AB_K(l, i) (4 * ((l) / 16) + (i))
#define FA_AMD_C_ROW(l, i) (4 * ((l) / 16) + (i))
#define FA_AMD_COPIES 1
#else
#error "FA_AMD_MATRIX must be 1, 2 or 3"
#endif
#define FA_AMD_A_ROW(l) ((l) % FA_AMD_T)
#define FA_AMD_B_COL(l) ((l) % FA_AMD_T)
#define FA_AMD_C_COL(l) ((l) % FA_AMD_T)

#ifndef FA_AMD_MATRIX_EMULATE

#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#define FA_AMD_DECL(wg)
#define FA_AMD_ARG

inline void fa_amd_mma(const __private ushort *a, const __private ushort *b, __private float *c)
{
#if FA_AMD_MATRIX == 1
#if FA_AMD_BF16
    const float8 r = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(as_short16(vload16(0, a)), as_short16(vload16(0, b)),
                                                                 vload8(0, c));
#else
    const float8 r = __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(as_half16(vload16(0, a)), as_half16(vload16(0, b)),
                                                                vload8(0, c));
#endif
    vstore8(r, 0, c);
#elif FA_AMD_MATRIX == 2
#if FA_AMD_BF16
    const float16 r = __builtin_amdgcn_mfma_f32_32x32x8bf16_1k(as_short4(vload4(0, a)), as_short4(vload4(0, b)),
                                                               vload16(0, c), 0, 0, 0);
#else
    const float16 r = __builtin_amdgcn_mfma_f32_32x32x8f16(as_half4(vload4(0, a)), as_half4(vload4(0, b)),
                                                           vload16(0, c), 0, 0, 0);
#endif
    vstore16(r, 0, c);
#else
#if FA_AMD_BF16
    const float4 r = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(as_short4(vload4(0, a)), as_short4(vload4(0, b)),
                                                               vload4(0, c), 0, 0, 0);
#else
    const float4 r = __builtin_amdgcn_mfma_f32_16x16x16f16(as_half4(vload4(0, a)), as_half4(vload4(0, b)),
                                                           vload4(0, c), 0, 0, 0);
#endif
    vstore4(r, 0, c);
#endif
}

#else /* FA_AMD_MATRIX_EMULATE */

/* per wave: A (T x K, row-major) and B (K x T, row-major), each FA_AMD_COPIES times */
#define FA_AMD_EMU_HALVES (FA_AMD_COPIES * 2 * FA_AMD_T * FA_AMD_K)
#define FA_AMD_DECL(wg) __local ushort fa_amd_scratch[(wg) / FA_AMD_WAVE * FA_AMD_EMU_HALVES];
#define FA_AMD_ARG , fa_amd_scratch

inline float fa_amd_emu_value(ushort bits)
{
#if FA_AMD_BF16
    return as_float((uint)bits << 16);
#else
    return vload_half(0, (const __private half *)&bits);
#endif
}

/* The layouts once more, as the documents state them, apart from the macros above that kernels
 * index with: a kernel whose macros disagree with the documents then fails its tests here. Element i
 * of lane l: A's row (B's column) *rc and k *k; C's row *row and column *col. */
inline void fa_amd_emu_ab(int l, int i, int *rc, int *k)
{
#if FA_AMD_MATRIX == 1
    *rc = l % 16, *k = i;
#elif FA_AMD_MATRIX == 2
    *rc = l % 32, *k = 4 * (l / 32) + i;
#else
    *rc = l % 16, *k = 4 * (l / 16) + i;
#endif
}

inline void fa_amd_emu_c(int l, int i, int *row, int *col)
{
#if FA_AMD_MATRIX == 1
    *row = 2 * i + l / 16, *col = l % 16;
#elif FA_AMD_MATRIX == 2
    *row = 8 * (i / 4) + 4 * (l / 32) + i % 4, *col = l % 32;
#else
    *row = 4 * (l / 16) + i, *col = l % 16;
#endif
}

inline void fa_amd_mma(const __private ushort *a, const __private ushort *b, __private float *c,
                       __local ushort *scratch)
{
    const int lane = (int)(get_local_id(0) % FA_AMD_WAVE);
    __local ushort *sa = scratch + (get_local_id(0) / FA_AMD_WAVE) * FA_AMD_EMU_HALVES;
    __local ushort *sb = sa + FA_AMD_COPIES * FA_AMD_T * FA_AMD_K;
    const int copy = FA_AMD_COPIES == 2 ? lane / 16 : 0;
    barrier(CLK_LOCAL_MEM_FENCE); /* the previous call's reads are done */
    for (int i = 0; i < FA_AMD_AN; i++) {
        int rc, k;
        fa_amd_emu_ab(lane, i, &rc, &k);
        sa[(copy * FA_AMD_T + rc) * FA_AMD_K + k] = a[i];
        sb[(copy * FA_AMD_K + k) * FA_AMD_T + rc] = b[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < FA_AMD_CN; j++) {
        int row, col;
        fa_amd_emu_c(lane, j, &row, &col);
        float s = c[j];
        int differ = 0;
        for (int k = 0; k < FA_AMD_K; k++) {
            const ushort x = sa[row * FA_AMD_K + k], y = sb[k * FA_AMD_T + col];
#if FA_AMD_COPIES == 2
            differ |= x != sa[(FA_AMD_T + row) * FA_AMD_K + k] || y != sb[(FA_AMD_K + k) * FA_AMD_T + col];
#endif
            s = fma(fa_amd_emu_value(x), fa_amd_emu_value(y), s);
        }
        c[j] = differ ? NAN : s;
    }
}

#endif /* FA_AMD_MATRIX_EMULATE */
