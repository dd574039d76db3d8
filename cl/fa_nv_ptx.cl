/* SPDX-License-Identifier: Apache-2.0 */
/* Warp-level primitives of the tensor-core kernels (cl/fa_nv_*.cl): mma.sync m16n8k16,
 * ldmatrix, shfl.sync, cvt to f16x2/bf16x2 and cp.async, as inline PTX for NVIDIA's OpenCL.
 *
 * FA_PTX_EMULATE (FA_CL_TUNE=<family>:emulate=1, for tests) builds the same functions in portable OpenCL C,
 * following the fragment layouts of the PTX ISA, so that the kernel's indexing, masking and online
 * softmax run and are checked on any device (PoCL in CI, oclgrind). A warp's lanes exchange their
 * registers through a local scratch between two work-group barriers: every call must be reached by
 * every work-item of the work-group, which the kernel's uniform loops guarantee. Products are
 * summed in fp32 in k order; the matrix unit's order differs within rounding.
 *
 * Each collective takes FA_EMU_ARG last (nothing in the PTX build); the kernel declares the scratch
 * with FA_EMU_DECL(warps, warp), and a helper that calls collectives declares FA_EMU_PARAM last.
 * Needs FA_DTYPE (1 f16, 2 bf16; 0 for the tf32 forms).
 *
 * tf32 (the fp32 kernel, cl/fa_forward_nv_tf32.cl): fa_mma_tf32 is mma.sync m16n8k8 with tf32
 * inputs; the matrix unit reads the top 19 bits of each 32-bit operand (the 13 low bits are
 * truncated), which the kernel's split relies on and the emulation reproduces.
 * Layouts (g = lane / 4, t = lane % 4): A (16x8) a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4);
 * B (8x8) b0 (k t, n g), b1 (k t+4, n g); C as for m16n8k16.
 */
#if FA_DTYPE == 1
#define FA_MMA_TYPE "f16"
#else
#define FA_MMA_TYPE "bf16" /* (f32 storage: the kernel uses the tf32 forms only) */
#endif

#ifndef FA_PTX_EMULATE

#define FA_EMU_DECL(warps, warp)
#define FA_EMU_ARG
#define FA_EMU_PARAM

inline uint fa_smem_addr(__local const ushort *p) { return (uint)(size_t)p; }
#define FA_STR_(x) #x
#define FA_STR(x) FA_STR_(x)

/* four 8x8 matrices of 16-bit values; lane i gives the address of row i % 8 of matrix i / 8 */
inline void fa_ldsm_x4(__local const ushort *p, uint *r0, uint *r1, uint *r2, uint *r3)
{
    uint a, b, c, d;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(fa_smem_addr(p)));
    *r0 = a; *r1 = b; *r2 = c; *r3 = d;
}

inline void fa_ldsm_x4_trans(__local const ushort *p, uint *r0, uint *r1, uint *r2, uint *r3)
{
    uint a, b, c, d;
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(fa_smem_addr(p)));
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

/* 2^x on the SFU with subnormal results flushed to zero. native_exp2 becomes ex2.approx.f32, for
 * which ptxas wraps every MUFU.EX2 in a range test and two conditional multiplies (subnormal
 * results); a probability below 2^-126 is 0 to the softmax either way. */
inline float fa_ex2(float x)
{
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}

inline float fa_shfl_xor(float x, uint mask)
{
    uint r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(as_uint(x)), "r"(mask));
    return as_float(r);
}

/* one register of two IEEE f16 (lo in the low half) -> two floats (an f16 attention mask's pair) */
inline float2 fa_f16x2_to_f32(uint u)
{
    float lo, hi;
    asm("{.reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h;}" : "=f"(lo), "=f"(hi) : "r"(u));
    return (float2)(lo, hi);
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

/* four int8 (a q8_0 word, lowest byte first) times an f16 scale, as two registers of two f16: each
 * byte biased by 128 becomes the mantissa of 1024 + u (0x64 above it), 1152 off gives the integer
 * exactly, and one f16 product rounds once: the value cvt(float(x) * float(d)) gives, in 3
 * instructions a pair instead of 5 */
inline uint2 fa_q8x4_to_f16(uint w, uint d2)
{
    const uint u = w ^ 0x80808080u;
    uint lo, hi;
    asm("{.reg .b32 t, m, k; mov.b32 m, 0x64646464; mov.b32 k, 0x64806480;\n\t"
        "prmt.b32 t, %2, m, 0x5140; sub.rn.f16x2 t, t, k; mul.rn.f16x2 %0, t, %3;\n\t"
        "prmt.b32 t, %2, m, 0x7362; sub.rn.f16x2 t, t, k; mul.rn.f16x2 %1, t, %3;}"
        : "=r"(lo), "=r"(hi) : "r"(u), "r"(d2));
    return (uint2)(lo, hi);
}

/* the bytes of a and b interleaved: (a0, b0, a1, b1) and (a2, b2, a3, b3), lowest first */
inline uint2 fa_bytes_interleave(uint a, uint b)
{
    uint lo, hi;
    asm("prmt.b32 %0, %2, %3, 0x5140; prmt.b32 %1, %2, %3, 0x7362;" : "=r"(lo), "=r"(hi) : "r"(a), "r"(b));
    return (uint2)(lo, hi);
}

/* the word 0 or 2 bytes into (hi:lo): sh is 0 or 16 */
inline uint fa_funnel16(uint lo, uint hi, uint sh)
{
    uint r;
    asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(lo), "r"(hi), "r"(sh));
    return r;
}

/* an 8x8 matrix of 16-bit values, lane (g, t4) holding row g's elements 2 t4 and 2 t4 + 1 (an mma
 * accumulator's pair, packed), transposed across the warp: the lane then holds row g of the
 * transpose. FA_MOVMATRIX_SHFL (experiments): two shuffles and a select instead. */
inline uint fa_movmatrix_trans(uint x)
{
    uint r;
#ifdef FA_MOVMATRIX_SHFL
    const uint lane = (uint)get_local_id(0) % 32u, g = lane / 4u, t4 = lane % 4u;
    uint a, b;
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(a) : "r"(x), "r"(8u * t4 + g / 2u));
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(b) : "r"(x), "r"(8u * t4 + 4u + g / 2u));
    r = g % 2u ? (a >> 16 | (b & 0xffff0000u)) : ((a & 0xffffu) | b << 16);
#else
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(x));
#endif
    return r;
}

/* 16 bytes global -> local without passing through registers; valid == 0 writes zeros (src-size 0).
 * FA_CP_L2=128 or 256: the L2 also fetches the rest of that many bytes around the address. */
#if defined(FA_CP_L2) && FA_CP_L2 == 256
#define FA_CP_ASYNC_INSN "cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;"
#elif defined(FA_CP_L2) && FA_CP_L2 == 128
#define FA_CP_ASYNC_INSN "cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;"
#else
#define FA_CP_ASYNC_INSN "cp.async.cg.shared.global [%0], [%1], 16, %2;"
#endif
inline void fa_cp_async16(__local ushort *dst, __global const ushort *src, int valid)
{
    asm volatile(FA_CP_ASYNC_INSN
                 :: "r"(fa_smem_addr(dst)), "l"((ulong)src), "r"(valid ? 16 : 0) : "memory");
}

/* the first `bytes` (0..16) of the 16 at src, the rest of dst zero-filled (a tail) */
inline void fa_cp_async16_bytes(__local ushort *dst, __global const ushort *src, int bytes)
{
    asm volatile(FA_CP_ASYNC_INSN :: "r"(fa_smem_addr(dst)), "l"((ulong)src), "r"(bytes) : "memory");
}

/* FA_STAGE_COPY (4, 8 or 16) bytes of staged q8_0 / fp8 rows the same way, through L1 (.ca: .cg
 * takes 16-byte copies only) */
#ifdef FA_STAGE_COPY
inline void fa_cp_async_small(__local uchar *dst, __global const uchar *src, int valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], " FA_STR(FA_STAGE_COPY) ", %2;"
                 :: "r"(fa_smem_addr((__local ushort *)dst)), "l"((ulong)src), "r"(valid ? FA_STAGE_COPY : 0) : "memory");
}
#endif

inline void fa_cp_async_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
inline void fa_cp_async_wait_all(void) { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
/* the 32 lanes of this warp meet; their local-memory writes before it are seen after it */
inline void fa_warp_sync(void) { asm volatile("bar.warp.sync -1;" ::: "memory"); }
/* all but the newest n commit groups complete (a pipeline of n + 2 stages) */
inline void fa_cp_async_wait_1(void) { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
inline void fa_cp_async_wait_2(void) { asm volatile("cp.async.wait_group 2;" ::: "memory"); }

/* acc (16x8, fp32) += A (16x8, tf32) B (8x8, tf32) */
inline void fa_mma_tf32(float4 *acc, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1)
{
    float c0 = acc->x, c1 = acc->y, c2 = acc->z, c3 = acc->w;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    *acc = (float4)(c0, c1, c2, c3);
}

#else /* FA_PTX_EMULATE */

/* per warp: 32 lanes x 6 words (the mma's A and B registers), which also holds 32 pointers */
#define FA_EMU_WORDS 192
#define FA_EMU_DECL(warps, warp)                                                                          \
    __local ulong fa_emu_scratch[(warps) * FA_EMU_WORDS / 2];                                             \
    __local uint *const fa_emu = (__local uint *)(fa_emu_scratch + (warp) * FA_EMU_WORDS / 2);
#define FA_EMU_ARG , fa_emu
#define FA_EMU_PARAM , __local uint *fa_emu /* a helper's parameter that passes the scratch on */

inline int fa_emu_lane(void) { return (int)(get_local_id(0) % 32); }

inline float fa_emu_to_f32(uint bits16)
{
#if FA_DTYPE == 1
    ushort h = (ushort)bits16;
    return vload_half(0, (const __private half *)&h);
#else
    return as_float(bits16 << 16);
#endif
}

inline uint fa_emu_from_f32(float x)
{
#if FA_DTYPE == 1
    ushort h;
    vstore_half_rte(x, 0, (__private half *)&h);
    return h;
#else
    return fa_f32_to_bf16(x);
#endif
}

inline uint fa_pack2(float lo, float hi) { return fa_emu_from_f32(lo) | (fa_emu_from_f32(hi) << 16); }

inline uint2 fa_q8x4_to_f16(uint w, uint d2)
{
    const ushort dh[2] = {(ushort)d2, (ushort)(d2 >> 16)}; /* the even bytes' scale, the odd bytes' */
    const float2 d = vload_half2(0, (const __private half *)dh);
    const float4 x = convert_float4(as_char4(w));
    return (uint2)(fa_pack2(d.x * x.x, d.y * x.y), fa_pack2(d.x * x.z, d.y * x.w));
}

inline uint2 fa_bytes_interleave(uint a, uint b)
{
    return (uint2)((a & 0xffu) | (b & 0xffu) << 8 | (a & 0xff00u) << 8 | (b & 0xff00u) << 16,
                   (a >> 16 & 0xffu) | (b >> 8 & 0xff00u) | (a >> 8 & 0xff0000u) | (b & 0xff000000u));
}

inline uint fa_funnel16(uint lo, uint hi, uint sh) { return sh ? (lo >> 16 | hi << 16) : lo; }

/* element (r, c) of the transpose is (c, r): lane (c, r / 2)'s half r % 2 */
inline uint fa_movmatrix_trans(uint x, __local uint *emu)
{
    const int lane = fa_emu_lane(), g = lane / 4, t4 = lane % 4;
    barrier(CLK_LOCAL_MEM_FENCE);
    emu[lane] = x;
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint a = emu[8 * t4 + g / 2], b = emu[8 * t4 + 4 + g / 2];
    return g % 2 ? (a >> 16 | (b & 0xffff0000u)) : ((a & 0xffffu) | b << 16);
}

inline float2 fa_f16x2_to_f32(uint u)
{
    const ushort h[2] = {(ushort)u, (ushort)(u >> 16)};
    return vload_half2(0, (const __private half *)h);
}

/* every lane publishes its row address; then reads its two elements of each of the 4 matrices:
 * plain: row lane / 4, columns 2 (lane % 4) + {0, 1}; .trans: rows 2 (lane % 4) + {0, 1}, column lane / 4 */
inline void fa_emu_ldsm(__local const ushort *p, uint r[4], int trans, __local uint *emu)
{
    __local ulong *addr = (__local ulong *)emu;
    const int lane = fa_emu_lane();
    barrier(CLK_LOCAL_MEM_FENCE);
    addr[lane] = (ulong)(size_t)p;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < 4; j++) {
        uint lo, hi;
        if (trans) {
            __local const ushort *ra = (__local const ushort *)(size_t)addr[j * 8 + 2 * (lane % 4)];
            __local const ushort *rb = (__local const ushort *)(size_t)addr[j * 8 + 2 * (lane % 4) + 1];
            lo = ra[lane / 4];
            hi = rb[lane / 4];
        } else {
            __local const ushort *row = (__local const ushort *)(size_t)addr[j * 8 + lane / 4];
            lo = row[2 * (lane % 4)];
            hi = row[2 * (lane % 4) + 1];
        }
        r[j] = lo | (hi << 16);
    }
}

inline void fa_ldsm_x4(__local const ushort *p, uint *r0, uint *r1, uint *r2, uint *r3, __local uint *emu)
{
    uint r[4];
    fa_emu_ldsm(p, r, 0, emu);
    *r0 = r[0]; *r1 = r[1]; *r2 = r[2]; *r3 = r[3];
}

inline void fa_ldsm_x4_trans(__local const ushort *p, uint *r0, uint *r1, uint *r2, uint *r3, __local uint *emu)
{
    uint r[4];
    fa_emu_ldsm(p, r, 1, emu);
    *r0 = r[0]; *r1 = r[1]; *r2 = r[2]; *r3 = r[3];
}

/* every lane's A and B registers into the warp's scratch (6 words a lane); returns the lane */
inline int fa_emu_publish(uint a0, uint a1, uint a2, uint a3, uint b0, uint b1, __local uint *emu)
{
    const int lane = fa_emu_lane();
    barrier(CLK_LOCAL_MEM_FENCE);
    emu[lane * 6 + 0] = a0;
    emu[lane * 6 + 1] = a1;
    emu[lane * 6 + 2] = a2;
    emu[lane * 6 + 3] = a3;
    emu[lane * 6 + 4] = b0;
    emu[lane * 6 + 5] = b1;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lane;
}

/* the 16-bit element of register `reg` of lane `lane`: the low one, or the high one when hi */
inline float fa_emu_elem(__local const uint *emu, int lane, int reg, int hi)
{
    return fa_emu_to_f32((emu[lane * 6 + reg] >> (16 * hi)) & 0xffffu);
}

/* PTX fragment layouts (g = lane / 4, t = lane % 4): A (16x16, row) a0 (g, 2t..2t+1), a1 (g+8, ..),
 * a2 (g, 2t+8..), a3 (g+8, 2t+8..); B (16x8, col) b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g);
 * C (16x8) c0 (g, 2t), c1 (g, 2t+1), c2 (g+8, 2t), c3 (g+8, 2t+1) */
inline void fa_mma(float4 *acc, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1, __local uint *emu)
{
    const int lane = fa_emu_publish(a0, a1, a2, a3, b0, b1, emu);
    const int g = lane / 4, t = lane % 4;
    float c[4] = {acc->x, acc->y, acc->z, acc->w};
    for (int i = 0; i < 4; i++) {
        const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float sum = c[i];
        for (int k = 0; k < 16; k++) {
            float a = fa_emu_elem(emu, (row % 8) * 4 + (k % 8) / 2, row / 8 + 2 * (k / 8), k % 2);
            float b = fa_emu_elem(emu, col * 4 + (k % 8) / 2, 4 + k / 8, k % 2);
            sum = fma(a, b, sum);
        }
        c[i] = sum;
    }
    *acc = (float4)(c[0], c[1], c[2], c[3]);
}

#ifdef FA_NATIVE_EXP
inline float fa_ex2(float x) { return native_exp2(x); }
#else
inline float fa_ex2(float x) { return exp2(x); }
#endif

inline float fa_shfl_xor(float x, uint mask, __local uint *emu)
{
    const int lane = fa_emu_lane();
    barrier(CLK_LOCAL_MEM_FENCE);
    emu[lane] = as_uint(x);
    barrier(CLK_LOCAL_MEM_FENCE);
    return as_float(emu[lane ^ (int)mask]);
}

/* synchronous here: the kernel's wait + barrier before reading holds either way */
inline void fa_cp_async16(__local ushort *dst, __global const ushort *src, int valid)
{
    *(__local uint4 *)dst = valid ? *(__global const uint4 *)src : (uint4)(0);
}

inline void fa_cp_async16_bytes(__local ushort *dst, __global const ushort *src, int bytes)
{
    __local uchar *d = (__local uchar *)dst;
    __global const uchar *p = (__global const uchar *)src;
    for (int i = 0; i < 16; i++)
        d[i] = i < bytes ? p[i] : (uchar)0;
}

#ifdef FA_STAGE_COPY
inline void fa_cp_async_small(__local uchar *dst, __global const uchar *src, int valid)
{
#if FA_STAGE_COPY == 16
    *(__local uint4 *)dst = valid ? *(__global const uint4 *)src : (uint4)(0);
#elif FA_STAGE_COPY == 8
    *(__local uint2 *)dst = valid ? *(__global const uint2 *)src : (uint2)(0);
#else
    *(__local uint *)dst = valid ? *(__global const uint *)src : 0u;
#endif
}
#endif

inline void fa_cp_async_commit(void) {}
inline void fa_cp_async_wait_all(void) {}
inline void fa_cp_async_wait_1(void) {}
inline void fa_cp_async_wait_2(void) {}

/* round to nearest, ties away from zero, at 10 mantissa bits; NaN and infinity pass */
/* the matrix unit reads the 19 tf32 bits of each register: products are exact in fp32 */
inline float fa_emu_tf32_elem(__local const uint *emu, int lane, int reg)
{
    return as_float(emu[lane * 6 + reg] & 0xffffe000u);
}

inline void fa_mma_tf32(float4 *acc, uint a0, uint a1, uint a2, uint a3, uint b0, uint b1, __local uint *emu)
{
    const int lane = fa_emu_publish(a0, a1, a2, a3, b0, b1, emu);
    const int g = lane / 4, t = lane % 4;
    float c[4] = {acc->x, acc->y, acc->z, acc->w};
    for (int i = 0; i < 4; i++) {
        const int row = g + 8 * (i / 2), col = 2 * t + i % 2;
        float sum = c[i];
        for (int k = 0; k < 8; k++) {
            float a = fa_emu_tf32_elem(emu, (row % 8) * 4 + k % 4, row / 8 + 2 * (k / 4));
            float b = fa_emu_tf32_elem(emu, col * 4 + k % 4, 4 + k / 4);
            sum = fma(a, b, sum);
        }
        c[i] = sum;
    }
    *acc = (float4)(c[0], c[1], c[2], c[3]);
}

#endif /* FA_PTX_EMULATE */

/* four int8 (bytes of w, lowest first) times f16 scales, the even bytes' in d2's low half and the
 * odd bytes' in its high half, as two registers of two FA_DTYPE values; each rounded once */
inline uint2 fa_q8x4_scaled(uint w, uint d2)
{
#if FA_DTYPE == 1
    return fa_q8x4_to_f16(w, d2);
#else
    const float2 d = fa_f16x2_to_f32(d2);
    const float4 x = convert_float4(as_char4(w));
    return (uint2)(fa_pack2(d.x * x.x, d.y * x.y), fa_pack2(d.x * x.z, d.y * x.w));
#endif
}

/* x = big + small for 3xTF32, relying on the matrix unit reading only the top 19 bits of a tf32
 * operand (it truncates; CUTLASS's round_half_ulp_truncate): big = x's bits plus half a tf32 ulp,
 * small = x - big as truncated, both passed as they are. Three operations, where cvt.rna.tf32.f32
 * costs ptxas four ALU instructions on sm_90 (two per split before). An infinite x becomes NaN. */
inline void fa_split(float x, uint *big, uint *small)
{
    const uint b = as_uint(x) + 0x1000u;
    *big = b;
    *small = as_uint(x - as_float(b & 0xffffe000u));
}

/* acc += A B to fp32 accuracy from split operands: a_small b_big + a_big b_small + a_big b_big (the
 * small terms first, while acc is smallest; a_small b_small is below fp32's rounding) */
inline void fa_mma_tf32x3(float4 *acc, const uint ab[4], const uint as[4], const uint bb[2],
                          const uint bs[2] FA_EMU_PARAM)
{
    fa_mma_tf32(acc, as[0], as[1], as[2], as[3], bb[0], bb[1] FA_EMU_ARG);
    fa_mma_tf32(acc, ab[0], ab[1], ab[2], ab[3], bs[0], bs[1] FA_EMU_ARG);
    fa_mma_tf32(acc, ab[0], ab[1], ab[2], ab[3], bb[0], bb[1] FA_EMU_ARG);
}

/* A full block of `rows` rows of 16-byte chunks (`ch` a row, at most head_dim / 8 of them real) by
 * cp.async, from src (the block's first row, `stride` elements apart) into dst (`pitch` apart).
 * With wg % ch == 0 a work-item's chunks are one column of every (wg / ch)-th row: one pointer
 * and a constant step, where the generic loop spends a 64-bit multiply and selects per copy.
 * Chunks past head_dim are zero-filled from src (in bounds). rows * ch must be a multiple of wg. */
inline __attribute__((always_inline)) void fa_cp_rows16(__local ushort *dst, int pitch, __global const ushort *src,
                                                        long stride, int rows, int ch, int wg, int head_dim, int lid)
{
    const int r0 = lid / ch, c = lid % ch, cv = 8 * c < head_dim;
    const long step = (long)(wg / ch) * stride;
    __global const ushort *p = src + (cv ? (long)r0 * stride + 8 * c : 0);
    for /* a constant count of a few: unrolled */ (int i = 0; i < rows * ch / wg; i++)
        fa_cp_async16(dst + (r0 + i * (wg / ch)) * pitch + 8 * c, p + (cv ? i * step : 0), cv);
}

/* The same for any wg and ch (the forward's rows of 12, 20, 28 chunks at head_dim 96, 160, 224): the
 * first (wg / ch) * ch work-items copy, the rest none. The fp32 and backward kernels keep the form
 * above, as measured: with this one in their place the H200 ran f32 and the backward slower
 * (commit ca89e66; two calls, not one A/B). */
inline __attribute__((always_inline)) void fa_cp_rows16_any(__local ushort *dst, int pitch, __global const ushort *src,
                                                            long stride, int rows, int ch, int wg, int head_dim,
                                                            int lid)
{
    const int per = wg / ch; /* rows a pass */
    if (lid >= per * ch)
        return;
    const int r0 = lid / ch, c = lid % ch, cv = 8 * c < head_dim;
    const long step = (long)per * stride;
    __global const ushort *p = src + (cv ? (long)r0 * stride + 8 * c : 0);
    for /* a constant count of a few: unrolled */ (int i = 0; i < (rows + per - 1) / per; i++)
        if (rows % per == 0 || r0 + i * per < rows)
            fa_cp_async16(dst + (r0 + i * per) * pitch + 8 * c, p + (cv ? i * step : 0), cv);
}
