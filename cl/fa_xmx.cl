/* SPDX-License-Identifier: Apache-2.0 */
/* Intel's sub-group matrix multiply-accumulate (XMX, the DPAS instruction) for kernels built on it:
 * intel_sub_group_f16_f16_matrix_mad_k16 and intel_sub_group_bf16_bf16_matrix_mad_k16 of
 * cl_intel_subgroup_matrix_multiply_accumulate (Khronos OpenCL extension registry,
 * registry.khronos.org/OpenCL/extensions/intel/cl_intel_subgroup_matrix_multiply_accumulate.html,
 * revision 1.1.0). A sub-group of FA_XMX_SG work-items (8 on Xe-HPG / DG2, 16 on Xe-HPC / PVC and
 * Xe2) computes acc (M x N, fp32) += A (M x 16) B (16 x N), N = FA_XMX_SG, M = 1, 2, 4 or 8 (the
 * vector width of a and acc). The layouts, as the specification gives them:
 *   acc / result: component m of work-item n is C[m][n].
 *   b (int8 in both sizes): work-item n holds column n of B, two rows per int ("VNNI" packing):
 *     b.s(i) = B[2i][n] in its low 16 bits, B[2i+1][n] in its high 16 bits.
 *   a, sub-group 8: int (int2, int4, int8 for M rows): component m of work-item l holds
 *     A[m][2l] (low 16 bits) and A[m][2l+1] (high 16 bits).
 *   a, sub-group 16: short (short2 ...): component m of work-item l holds A[m][l].
 * The kernel requires the sub-group size (FA_XMX_REQD_SG) and its work-groups are one-dimensional,
 * so that a sub-group is FA_XMX_SG consecutive local ids.
 *
 * FA_XMX_EMULATE builds the same two functions in portable OpenCL C with exactly these layouts, so
 * that a kernel's indexing runs and is checked on any device (PoCL, Oclgrind), as cl/fa_nv_ptx.cl
 * does for NVIDIA's mma.sync. The sub-group's work-items exchange a's registers through a local
 * scratch between two work-group barriers (no sub-group functions needed): every call must be
 * reached by every work-item of the work-group. Products are summed in fp32 (fma) in k order; the
 * matrix unit's order and rounding differ within the fp32 accumulation's rounding.
 *
 * Each call takes FA_XMX_ARG last (nothing in the native build); the kernel declares the scratch
 * with FA_XMX_DECL(work_group_size). Needs nothing from other units. */
#ifndef FA_XMX_SG
#error "FA_XMX_SG: the sub-group size the kernel is built for (8 or 16)"
#endif
#if FA_XMX_SG != 8 && FA_XMX_SG != 16
#error "FA_XMX_SG must be 8 or 16"
#endif

#ifndef FA_XMX_EMULATE

#ifndef cl_intel_subgroup_matrix_multiply_accumulate
#error "cl_intel_subgroup_matrix_multiply_accumulate: not reported by this compiler (build with FA_XMX_EMULATE elsewhere)"
#endif
#define FA_XMX_REQD_SG __attribute__((intel_reqd_sub_group_size(FA_XMX_SG)))
#define FA_XMX_DECL(wg)
#define FA_XMX_ARG

#else /* FA_XMX_EMULATE */

#define FA_XMX_REQD_SG
/* 8 rows of a per work-item, as 32-bit words (sub-group 16: one 16-bit value in the low half) */
#define FA_XMX_DECL(wg) __local uint fa_xmx_scratch[(wg) * 8];
#define FA_XMX_ARG , fa_xmx_scratch
#define FA_XMX_OVLD __attribute__((overloadable))

inline float fa_xmx_f16(uint bits)
{
    const ushort h = (ushort)bits;
    return vload_half(0, (const __private half *)&h);
}

inline float fa_xmx_bf16(uint bits) { return as_float((bits & 0xffffu) << 16); }

/* acc[0..m) += A (m x 16, a's rows as this work-item holds them) B (16 x FA_XMX_SG, b as it holds
 * its column), 16-bit elements as bf16 or f16 */
inline void fa_xmx_emu_mad(const __private uint *a, int m, int8 b, __private float *acc, int bf16,
                           __local uint *scratch)
{
    const int lane = (int)(get_local_id(0) % FA_XMX_SG);
    __local uint *sg = scratch + (get_local_id(0) / FA_XMX_SG) * (8 * FA_XMX_SG);
    barrier(CLK_LOCAL_MEM_FENCE); /* the previous call's reads are done */
    for (int r = 0; r < m; r++)
        sg[r * FA_XMX_SG + lane] = a[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    uint bw[8];
    vstore8(as_uint8(b), 0, bw);
    for (int r = 0; r < m; r++) {
        float s = acc[r];
        for (int k = 0; k < 16; k++) {
#if FA_XMX_SG == 8
            const uint w = sg[r * 8 + k / 2], ah = k & 1 ? w >> 16 : w & 0xffffu; /* work-item k / 2's pair */
#else
            const uint ah = sg[r * 16 + k] & 0xffffu; /* work-item k's value */
#endif
            const uint bh = k & 1 ? bw[k / 2] >> 16 : bw[k / 2] & 0xffffu;
            s = fma(bf16 ? fa_xmx_bf16(ah) : fa_xmx_f16(ah), bf16 ? fa_xmx_bf16(bh) : fa_xmx_f16(bh), s);
        }
        acc[r] = s;
    }
}

/* The intrinsics' overloads, M = 1, 2, 4, 8: a's rows to words, the emulation, acc back. */
#if FA_XMX_SG == 8
#define FA_XMX_A_WORDS(M, a) as_uint##M(a)
#define FA_XMX_A1_WORD(a) as_uint(a)
#define FA_XMX_A_T int
#else
#define FA_XMX_A_WORDS(M, a) convert_uint##M(as_ushort##M(a))
#define FA_XMX_A1_WORD(a) (uint)as_ushort(a)
#define FA_XMX_A_T short
#endif
#define FA_XMX_CAT_(a, b) a##b
#define FA_XMX_CAT(a, b) FA_XMX_CAT_(a, b)

#define FA_XMX_EMU_1(NAME, BF16)                                                                          \
    FA_XMX_OVLD float NAME(FA_XMX_A_T a, int8 b, float acc, __local uint *scratch)                        \
    {                                                                                                     \
        uint w = FA_XMX_A1_WORD(a);                                                                       \
        fa_xmx_emu_mad(&w, 1, b, &acc, BF16, scratch);                                                    \
        return acc;                                                                                       \
    }
#define FA_XMX_EMU_M(NAME, BF16, M)                                                                       \
    FA_XMX_OVLD float##M NAME(FA_XMX_CAT(FA_XMX_A_T, M) a, int8 b, float##M acc, __local uint *scratch)    \
    {                                                                                                     \
        uint w[M];                                                                                        \
        float c[M];                                                                                       \
        vstore##M(FA_XMX_A_WORDS(M, a), 0, w);                                                            \
        vstore##M(acc, 0, c);                                                                             \
        fa_xmx_emu_mad(w, M, b, c, BF16, scratch);                                                        \
        return vload##M(0, c);                                                                            \
    }
#define FA_XMX_EMU(NAME, BF16)                                                                            \
    FA_XMX_EMU_1(NAME, BF16) FA_XMX_EMU_M(NAME, BF16, 2) FA_XMX_EMU_M(NAME, BF16, 4) FA_XMX_EMU_M(NAME, BF16, 8)

FA_XMX_EMU(intel_sub_group_f16_f16_matrix_mad_k16, 0)
FA_XMX_EMU(intel_sub_group_bf16_bf16_matrix_mad_k16, 1)

#endif /* FA_XMX_EMULATE */
