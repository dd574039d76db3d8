/* SPDX-License-Identifier: Apache-2.0 */
/* The TMA check (tests/test_tma.c): a tensor map written on the device (cl/fa_nv_tma.cl), then
 * boxes copied through it into local memory and written out as they landed (swizzled), for the
 * host to compare byte by byte. CHECK_ROWS: the box's rows (at most 128). Built after
 * fa_nv_ptx.cl, fa_nv_wgmma.cl and fa_nv_tma.cl, through the sm_90a retargeting only. */
#ifndef FA_PTX_SM90A
#error "tests/kernels/fa_tma_check.cl is built through the sm_90a retargeting (src/program/program.c)"
#endif
#if CHECK_ROWS < 8 || CHECK_ROWS > 128 || CHECK_ROWS % 8
#error "CHECK_ROWS: a multiple of 8 up to 128"
#endif

/* the map of a 4-d tensor at src (strides in bytes), boxes 128 bytes x CHECK_ROWS */
__kernel void fa_tma_check_map(__global ulong *map, __global const uchar *src, uint d0, uint d1, uint d2, uint d3,
                               ulong s1, ulong s2, ulong s3, int esize)
{
    if (get_global_id(0) == 0)
        fa_tma_map_write(map, (ulong)src, d0, d1, d2, d3, s1, s2, s3, 128u / (uint)esize, CHECK_ROWS, esize);
}

/* `boxes` boxes side by side along dim 0 from (c0, c1, c2, c3), into panels CHECK_ROWS x 128
 * bytes apart, then out */
__kernel __attribute__((reqd_work_group_size(128, 1, 1)))
void fa_tma_check_copy(__global const ulong *map, __global uint *out, int c0, int c1, int c2, int c3, int boxes,
                       int esize)
{
    __local uint tile[2 * CHECK_ROWS * 32] __attribute__((aligned(1024)));
    __local ulong bar;
    const int lid = (int)get_local_id(0);
    for (int e = lid; e < 2 * CHECK_ROWS * 32; e += 128)
        tile[e] = 0xdeadbeefu; /* what no copy wrote shows */
    if (lid == 0) {
        fa_mbar_init(&bar, 1);
        fa_mbar_init_fence();
    }
    fa_wg_fence_proxy();
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        fa_tma_map_acquire(map);
        fa_mbar_expect_tx(&bar, (uint)boxes * CHECK_ROWS * 128u);
        for (int b = 0; b < boxes; b++)
            fa_tma_load_4d(tile + b * CHECK_ROWS * 32, map, c0 + b * (128 / esize), c1, c2, c3, &bar);
        fa_mbar_arrive(&bar);
    }
    fa_mbar_wait(&bar, 0);
    for (int e = lid; e < boxes * CHECK_ROWS * 32; e += 128)
        out[e] = tile[e];
}
