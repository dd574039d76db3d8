/* SPDX-License-Identifier: Apache-2.0 */
/* Hopper's warpgroup matrix multiply (wgmma, PTX ISA 8.0, sm_90a) for NVIDIA's OpenCL, whose
 * compiler targets sm_90: every sm_90a instruction is left as a marked comment line,
 *     // @sm90a <instruction>;
 * with the compiler's registers substituted, and the library un-comments those lines and builds
 * the PTX again for sm_90a (src/program/ptx_retarget.c). Built after cl/fa_nv_ptx.cl (FA_MMA_TYPE,
 * fa_smem_addr). No emulation: these kernels run on compute capability 9.0 only.
 *
 * Local-memory tiles: a tile of `rows` rows of w 16-bit values (rows along k for a K-major
 * operand, along n for an MN-major one), fa_wg_at(r, c, w, rows) for row r, 16-byte chunk c, in
 * one of the layouts wgmma reads (FA_WG_SWIZZLE):
 *   128 (default): FlashAttention-3's. Panels of 64 columns (128-byte rows), `rows` x 128 bytes
 *       each; in a panel row r is 128 bytes from row r - 1 and its chunk c sits at c ^ (r % 8): the
 *       128-byte swizzle, in which 8 rows' same column are 8 different bank groups. Tiles start
 *       1024-byte aligned; w a multiple of 64.
 *   0: 8 x 8 core matrices of 128 contiguous bytes, 8-row groups w * 16 bytes apart, the chunks of
 *       a group 128 bytes apart (no swizzling).
 * A warp's 16-byte copies of 8 rows of one chunk column are conflict-free in both.
 *
 * Accumulators: a warpgroup is 4 consecutive warps; warp w of it holds rows 16 w + g and + 8
 * (g = lane / 4, t = lane % 4) of the 64 x n result, d[4 j .. 4 j + 3] = (g, 8 j + 2 t),
 * (g, 8 j + 2 t + 1), (g + 8, 8 j + 2 t), (g + 8, 8 j + 2 t + 1): mma.sync's C tiles, one per 8
 * columns. The A operand from registers is mma.sync's A fragment of the warp's 16 rows. */
#ifndef FA_WG_SWIZZLE
#define FA_WG_SWIZZLE 128
#endif

/* A matrix descriptor: the start address, the byte offsets between core matrices along k
 * (leading) and along m/n (stride), in 16-byte units, and the layout (bits 62-63: 1 = 128-byte
 * swizzle). */
inline ulong fa_wg_desc(__local const ushort *p, uint lead_bytes, uint stride_bytes, ulong layout)
{
    return (ulong)((fa_smem_addr(p) & 0x3ffffu) >> 4) | ((ulong)(lead_bytes >> 4) << 16) |
           ((ulong)(stride_bytes >> 4) << 32) | (layout << 62);
}

/* For each layout: fa_wg_at; the descriptors of a K-major tile (Q and K in S = Q K^T: k along a
 * row) and of an MN-major one (V in O = P V: k down the rows); and what k-step kk adds to each
 * (16-byte units). */
#if FA_WG_SWIZZLE == 128
#define fa_wg_at(r, c, w, rows) (((c) / 8) * (rows) * 64 + (r) * 64 + (((c) % 8) ^ ((r) % 8)) * 8)
/* K-major: 8-row groups 1024 bytes apart; a k-step is 32 bytes along the row, panels rows * 128
 * bytes apart (the leading offset is unused) */
#define fa_wg_desc_kmajor(p, w, rows) fa_wg_desc((p), 16u, 1024u, 1ul)
#define fa_wg_kstep_kmajor(kk, w, rows) ((uint)((kk) / 4 * (rows) * 8 + (kk) % 4 * 2))
/* MN-major: panels along n rows * 128 bytes apart (leading), 8-row groups along k 1024 bytes */
#define fa_wg_desc_mnmajor(p, w, rows) fa_wg_desc((p), 128u * (uint)(rows), 1024u, 1ul)
#define fa_wg_kstep_mnmajor(kk, w, rows) ((uint)(kk) * 128u)
#elif FA_WG_SWIZZLE == 0
#define fa_wg_at(r, c, w, rows) (((r) / 8) * 8 * (w) + (c) * 64 + ((r) % 8) * 8)
/* K-major: neighbours in k 128 bytes apart, in m/n one 8-row group (w * 16 bytes); MN-major the
 * other way round */
#define fa_wg_desc_kmajor(p, w, rows) fa_wg_desc((p), 128u, 16u * (uint)(w), 0ul)
#define fa_wg_kstep_kmajor(kk, w, rows) ((uint)(kk) * 16u)
#define fa_wg_desc_mnmajor(p, w, rows) fa_wg_desc((p), 16u * (uint)(w), 128u, 0ul)
#define fa_wg_kstep_mnmajor(kk, w, rows) ((uint)(kk) * 2u * (uint)(w))
#else
#error "FA_WG_SWIZZLE is 128 or 0"
#endif

/* Copy e of a tile whose rows have `ch` 16-byte chunks: 8 consecutive copies fill one core matrix
 * (8 rows of one chunk column), so that a warp's writes are conflict-free and each row's 64 bytes
 * are read together. */
#define FA_WG_COPY_ROW(e, ch) ((e) / (8 * (ch)) * 8 + (e) % 8)
#define FA_WG_COPY_CHUNK(e, ch) ((e) / 8 % (ch))

/* (the kernels' copies; the GEMM check, tests/kernels/fa_wgmma_check.cl, defines neither D_PAD nor HEAD_DIM) */
#if defined(D_PAD) && defined(HEAD_DIM)
/* `rows` full rows of `width` 16-bit values (HEAD_DIM, or v's HEAD_DIM_V; `stride` elements apart
 * from src; a tile of D_PAD columns, zeros past `width`) into a tile by cp.async, copier `lid` of
 * `copiers`; rows, width and copiers are constants where it is inlined. Where the copiers cover whole 8-row groups, a
 * work-item's copies are one chunk column of rows copiers / chunks apart (a constant step); else
 * (the forward's producer warpgroup at D_PAD 256) each copy's row and chunk follow FA_WG_COPY_ROW
 * and _CHUNK. The wgmma kernels unroll every loop over D_PAD (their D_PAD is at most 256). */
inline __attribute__((always_inline)) void fa_wg_copy_rows(__local ushort *dst, __global const ushort *src,
                                                           long stride, int rows, int width, int copiers, int lid)
{
    const int ch = D_PAD / 8;
    if (copiers % (8 * ch) == 0) {
        const int r0 = FA_WG_COPY_ROW(lid, ch), c = FA_WG_COPY_CHUNK(lid, ch), cv = 8 * c < width;
        __global const ushort *p = src + (cv ? (long)r0 * stride + 8 * c : 0);
        _Pragma("unroll")
        for (int i = 0; i < rows * ch / copiers; i++)
            fa_cp_async16(dst + fa_wg_at(r0 + i * (copiers / ch), c, D_PAD, rows),
                          p + (cv ? (long)i * (copiers / ch) * stride : 0), cv);
    } else {
        _Pragma("unroll")
        for (int i = 0; i < rows * ch / copiers; i++) {
            const int e = lid + i * copiers, r = FA_WG_COPY_ROW(e, ch), c = FA_WG_COPY_CHUNK(e, ch);
            const int cv = 8 * c < width;
            fa_cp_async16(dst + fa_wg_at(r, c, D_PAD, rows), src + (cv ? (long)r * stride + 8 * c : 0), cv);
        }
    }
}
#endif

/* the accumulators as asm operands */
#define FA_WG_D16(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define FA_WG_D32(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define FA_WG_D64(d) \
    FA_WG_D32(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), \
    "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), \
    "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), \
    "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
    "+f"(d[63])
/* 8 accumulators from index i (n = 80) */
#define FA_WG_D8(d, i) \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
    "+f"(d[i + 7])
#define FA_WG_D40(d) FA_WG_D32(d), FA_WG_D8(d, 32)
#define FA_WG_R16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define FA_WG_R32 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
    "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FA_WG_R64 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
    "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, " \
    "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, " \
    "%62, %63}"
#define FA_WG_R40 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
    "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}"
#define FA_WG_MMA(n) "// @sm90a wgmma.mma_async.sync.aligned.m64n" #n "k16.f32." FA_MMA_TYPE "." FA_MMA_TYPE " "

/* d (64 x n) = A B, + d when acc != 0. ss: A (64 x 16, K-major) and B (16 x n, K-major) by
 * descriptors. rs: A from registers, B (MN-major) by descriptor. One definition a form, instantiated
 * for each width n below: D and R are the accumulators' operand and register lists (FA_WG_D<n/2>,
 * FA_WG_R<n/2>), the literals after them the numbers of the operands that follow the accumulators
 * (asm strings take them as text). */
#define FA_WG_DEFINE_SS(n, D, R, i_da, i_db, i_acc)                                                     \
    inline __attribute__((always_inline)) void fa_wgmma_ss_n##n(float *d, ulong da, ulong db, int acc)   \
    {                                                                                                   \
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #i_acc ", 0;\n\t" FA_WG_MMA(n) R            \
                     ", %" #i_da ", %" #i_db ", p, 1, 1, 0, 0;\n\t}" : D(d) : "l"(da), "l"(db), "r"(acc)); \
    }
#define FA_WG_DEFINE_RS(n, D, R, i_a0, i_a1, i_a2, i_a3, i_db, i_acc)                                   \
    inline __attribute__((always_inline)) void fa_wgmma_rs_n##n(float *d, uint a0, uint a1, uint a2, uint a3, \
                                                                ulong db, int acc)                       \
    {                                                                                                   \
        asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %" #i_acc ", 0;\n\t" FA_WG_MMA(n) R            \
                     ", {%" #i_a0 ", %" #i_a1 ", %" #i_a2 ", %" #i_a3 "}, %" #i_db ", p, 1, 1, 1;\n\t}"      \
                     : D(d) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(acc));                    \
    }
FA_WG_DEFINE_SS(32, FA_WG_D16, FA_WG_R16, 16, 17, 18)
FA_WG_DEFINE_SS(64, FA_WG_D32, FA_WG_R32, 32, 33, 34)
FA_WG_DEFINE_SS(128, FA_WG_D64, FA_WG_R64, 64, 65, 66)
FA_WG_DEFINE_SS(80, FA_WG_D40, FA_WG_R40, 40, 41, 42)
FA_WG_DEFINE_RS(64, FA_WG_D32, FA_WG_R32, 32, 33, 34, 35, 36, 37)
FA_WG_DEFINE_RS(128, FA_WG_D64, FA_WG_R64, 64, 65, 66, 67, 68, 69)

/* wgmma.fence (before the first product of a group: the accumulators and A registers were
 * written by other instructions), wgmma.wait_group 0 (every product of this warpgroup done) and
 * wait_group 1 (all but the newest commit group done), each with the accumulators as operands: the
 * instructions name no register, and this keeps the compiler's accesses of d on their side of
 * each. One definition, instantiated for each form and width. */
#define FA_WG_DEFINE_SYNC(name, insn, n, D)                                                             \
    inline __attribute__((always_inline)) void name##n(float *d)                                        \
    {                                                                                                   \
        asm volatile("// @sm90a " insn ";" : D(d) :: "memory");                                         \
    }
FA_WG_DEFINE_SYNC(fa_wgmma_fence_n, "wgmma.fence.sync.aligned", 32, FA_WG_D16)
FA_WG_DEFINE_SYNC(fa_wgmma_fence_n, "wgmma.fence.sync.aligned", 64, FA_WG_D32)
FA_WG_DEFINE_SYNC(fa_wgmma_fence_n, "wgmma.fence.sync.aligned", 128, FA_WG_D64)
FA_WG_DEFINE_SYNC(fa_wgmma_fence_n, "wgmma.fence.sync.aligned", 80, FA_WG_D40)

inline void fa_wgmma_commit(void) { asm volatile("// @sm90a wgmma.commit_group.sync.aligned;" ::: "memory"); }

FA_WG_DEFINE_SYNC(fa_wgmma_wait_n, "wgmma.wait_group.sync.aligned 0", 32, FA_WG_D16)
FA_WG_DEFINE_SYNC(fa_wgmma_wait_n, "wgmma.wait_group.sync.aligned 0", 64, FA_WG_D32)
FA_WG_DEFINE_SYNC(fa_wgmma_wait_n, "wgmma.wait_group.sync.aligned 0", 128, FA_WG_D64)
FA_WG_DEFINE_SYNC(fa_wgmma_wait_n, "wgmma.wait_group.sync.aligned 0", 80, FA_WG_D40)
FA_WG_DEFINE_SYNC(fa_wgmma_wait1_n, "wgmma.wait_group.sync.aligned 1", 32, FA_WG_D16)
FA_WG_DEFINE_SYNC(fa_wgmma_wait1_n, "wgmma.wait_group.sync.aligned 1", 64, FA_WG_D32)
FA_WG_DEFINE_SYNC(fa_wgmma_wait1_n, "wgmma.wait_group.sync.aligned 1", 128, FA_WG_D64)
FA_WG_DEFINE_SYNC(fa_wgmma_wait1_n, "wgmma.wait_group.sync.aligned 1", 80, FA_WG_D40)

/* this thread's generic-proxy writes of local memory (stores, cp.async after its wait) are seen by
 * wgmma's operand reads (the async proxy) once a barrier follows */
inline void fa_wg_fence_proxy(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/* named barrier `id` (a constant 1..15; 0 is the work-group's) among `count` work-items: wait, or
 * arrive only (constant ids: ptxas reserves every barrier for a register one) */
#define fa_bar_sync(id, count) asm volatile("bar.sync %0, %1;" :: "n"(id), "n"(count) : "memory")
#define fa_bar_arrive(id, count) asm volatile("bar.arrive %0, %1;" :: "n"(id), "n"(count) : "memory")

/* mbarriers (8 bytes of local memory each; PTX ISA 7.8, sm_90): a phase completes when `count`
 * arrivals are in; waits name the phase by its parity (the previous phase's parity is complete on
 * a fresh barrier, so a producer's first wait for a free buffer passes). Labels inside braces are
 * local to each inlined copy. */
inline void fa_mbar_init(__local ulong *b, uint count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(fa_smem_addr((__local const ushort *)b)),
                 "r"(count) : "memory");
}

inline void fa_mbar_arrive(__local ulong *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(fa_smem_addr((__local const ushort *)b))
                 : "memory");
}

/* an arrival once every cp.async this work-item issued before it has landed (one of `count`) */
inline void fa_mbar_arrive_copies(__local ulong *b)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];"
                 :: "r"(fa_smem_addr((__local const ushort *)b)) : "memory");
}

inline void fa_mbar_wait(__local ulong *b, uint parity)
{
    asm volatile("{\n\t.reg .pred p;\n\tFA_MBAR_WAIT:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n\t"
                 "@!p bra FA_MBAR_WAIT;\n\t}"
                 :: "r"(fa_smem_addr((__local const ushort *)b)), "r"(parity) : "memory");
}

/* a warpgroup's register budget from here on (sm_90a; the entry declares .maxnreg, else ptxas
 * ignores it): a constant, a multiple of 8 in 24..256 */
#define fa_setmaxnreg_inc(n) asm volatile("// @sm90a setmaxnreg.inc.sync.aligned.u32 " FA_STR(n) ";" ::: "memory")
#define fa_setmaxnreg_dec(n) asm volatile("// @sm90a setmaxnreg.dec.sync.aligned.u32 " FA_STR(n) ";" ::: "memory")

/* the n-wide forms by name */
#define FA_WG_CAT_(a, b) a##b
#define FA_WG_CAT(a, b) FA_WG_CAT_(a, b)
#define fa_wgmma_ss(n) FA_WG_CAT(fa_wgmma_ss_n, n)
#define fa_wgmma_rs(n) FA_WG_CAT(fa_wgmma_rs_n, n)
#define fa_wgmma_fence(n) FA_WG_CAT(fa_wgmma_fence_n, n)
#define fa_wgmma_wait(n) FA_WG_CAT(fa_wgmma_wait_n, n)
#define fa_wgmma_wait1(n) FA_WG_CAT(fa_wgmma_wait1_n, n)

/* four registers defined here, for the ordering of wgmma.fence after their writes */
inline __attribute__((always_inline)) void fa_wg_pin4(uint *a)
{
    asm volatile("" : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3]));
}
