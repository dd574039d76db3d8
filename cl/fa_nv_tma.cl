/* SPDX-License-Identifier: Apache-2.0 */
/* Hopper's tensor memory accelerator (TMA) from OpenCL: tensor maps written on the device and
 * bulk tensor copies into local memory. Built after cl/fa_nv_ptx.cl and cl/fa_nv_wgmma.cl (the
 * mbarriers), through the sm_90a retargeting (tensormap.replace is sm_90a: marked lines).
 *
 * A tensor map (128 bytes, 64-byte aligned, in global memory) is what CUDA's host API
 * cuTensorMapEncodeTiled makes; OpenCL has no such call, so one work-item writes it: zeros, then
 * every field by tensormap.replace (the field encodings are PTX's, not the bit layout's, which is
 * not documented), then a release fence of the tensormap proxy. A kernel launched after that reads
 * it through `fence.proxy.tensormap::generic.acquire` once, then copies boxes with
 * cp.async.bulk.tensor, each completing on an mbarrier by its byte count (expect_tx).
 *
 * Maps here are 4-dimensional tiles of 16-bit, 8-bit or 32-bit elements (dims innermost first:
 * elements of a row, rows, then two outer dims, strides in bytes, multiples of 16; the base
 * 16-byte aligned), boxes 128 bytes wide with the 128-byte swizzle: a box of `rows` rows lands as
 * rows 128 bytes apart, row r's 16-byte chunk c at c ^ (r % 8) (cl/fa_nv_wgmma.cl's panel layout;
 * the destination 1024-byte aligned). Coordinates past the tensor (either side) read zeros. */

/* one field of dimension `ord` (a literal): 32-bit (box_dim, global_dim, element_stride) or 64-bit
 * (global_stride) */
#define FA_TMA_DIM32(m, field, ord, val)                                                                   \
    asm volatile("// @sm90a tensormap.replace.tile." field ".global.b1024.b32 [%0], " #ord ", %1;" ::"l"(m),   \
                 "r"((uint)(val)) : "memory")
#define FA_TMA_DIM64(m, field, ord, val)                                                                   \
    asm volatile("// @sm90a tensormap.replace.tile." field ".global.b1024.b64 [%0], " #ord ", %1;" ::"l"(m),   \
                 "l"((ulong)(val)) : "memory")

/* The tensor map at `map`: base (16-byte aligned), dims[0..3] (elements, innermost first),
 * strides[0..2] (bytes of dims 1..3; multiples of 16), a box of box_inner x box_rows (x 1 x 1)
 * elements of `esize` bytes (1, 2 or 4; box_inner * esize == 128). One work-item. */
inline void fa_tma_map_write(__global ulong *map, ulong base, uint d0, uint d1, uint d2, uint d3, ulong s1, ulong s2,
                             ulong s3, uint box_inner, uint box_rows, int esize)
{
    for (int i = 0; i < 16; i++)
        map[i] = 0ul;
    const ulong m = (ulong)map;
    asm volatile("// @sm90a tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" :: "l"(m), "l"(base)
                 : "memory");
    asm volatile("// @sm90a tensormap.replace.tile.rank.global.b1024.b32 [%0], 3;" :: "l"(m) : "memory");
    FA_TMA_DIM32(m, "box_dim", 0, box_inner);
    FA_TMA_DIM32(m, "box_dim", 1, box_rows);
    FA_TMA_DIM32(m, "box_dim", 2, 1);
    FA_TMA_DIM32(m, "box_dim", 3, 1);
    FA_TMA_DIM32(m, "global_dim", 0, d0);
    FA_TMA_DIM32(m, "global_dim", 1, d1);
    FA_TMA_DIM32(m, "global_dim", 2, d2);
    FA_TMA_DIM32(m, "global_dim", 3, d3);
    FA_TMA_DIM64(m, "global_stride", 0, s1);
    FA_TMA_DIM64(m, "global_stride", 1, s2);
    FA_TMA_DIM64(m, "global_stride", 2, s3);
    FA_TMA_DIM32(m, "element_stride", 0, 1);
    FA_TMA_DIM32(m, "element_stride", 1, 1);
    FA_TMA_DIM32(m, "element_stride", 2, 1);
    FA_TMA_DIM32(m, "element_stride", 3, 1);
    /* element types: PTX's .u8 0, .u16 1, .u32 2 (the bits are copied as they are) */
    if (esize == 1)
        asm volatile("// @sm90a tensormap.replace.tile.elemtype.global.b1024.b32 [%0], 0;" :: "l"(m) : "memory");
    else if (esize == 2)
        asm volatile("// @sm90a tensormap.replace.tile.elemtype.global.b1024.b32 [%0], 1;" :: "l"(m) : "memory");
    else
        asm volatile("// @sm90a tensormap.replace.tile.elemtype.global.b1024.b32 [%0], 2;" :: "l"(m) : "memory");
    asm volatile("// @sm90a tensormap.replace.tile.interleave_layout.global.b1024.b32 [%0], 0;" :: "l"(m) : "memory");
    asm volatile("// @sm90a tensormap.replace.tile.swizzle_mode.global.b1024.b32 [%0], 3;" :: "l"(m) : "memory");
    asm volatile("// @sm90a tensormap.replace.tile.fill_mode.global.b1024.b32 [%0], 0;" :: "l"(m) : "memory");
    asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
}

/* before the first copy through a map written by an earlier launch (the copying work-item) */
inline void fa_tma_map_acquire(__global const ulong *map)
{
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"((ulong)map) : "memory");
}

/* the next phase of mbarrier b also waits for `bytes` more bytes of bulk copies */
inline void fa_mbar_expect_tx(__local ulong *b, uint bytes)
{
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;"
                 :: "r"(fa_smem_addr((__local const ushort *)b)), "r"(bytes) : "memory");
}

/* the box at coordinates (c0, c1, c2, c3) (elements, innermost first) into dst (1024-byte
 * aligned), completing on mbarrier b */
inline void fa_tma_load_4d(__local void *dst, __global const ulong *map, int c0, int c1, int c2, int c3,
                           __local ulong *b)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                 :: "r"(fa_smem_addr((__local const ushort *)dst)), "l"((ulong)map), "r"(c0), "r"(c1), "r"(c2),
                 "r"(c3), "r"(fa_smem_addr((__local const ushort *)b)) : "memory");
}

/* after mbarrier.init by this work-item, before a barrier: the initialisation is seen by the bulk
 * copies' completions (the async proxy) */
inline void fa_mbar_init_fence(void) { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
