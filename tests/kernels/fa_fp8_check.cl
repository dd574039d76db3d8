/* SPDX-License-Identifier: Apache-2.0 */
/* The fp8 conversion check (tests/test_fp8.c "codes"): cl/fa_common.cl's conversions of OCP FP8,
 * run on the device for the host to compare bit by bit with its own definition of the formats.
 * Built after fa_common.cl (any FA_DTYPE). */

/* every code (n of them) -> the float32 bits of its e4m3 and e5m2 values */
__kernel void fa_fp8_check_decode(__global const uchar *codes, __global uint *e4m3, __global uint *e5m2, int n)
{
    const int i = (int)get_global_id(0);
    if (i < n) {
        e4m3[i] = as_uint(fa_e4m3_to_f32(codes[i]));
        e5m2[i] = as_uint(fa_e5m2_to_f32(codes[i]));
    }
}

/* floats -> their e4m3 and e5m2 codes (round to nearest even, saturating) */
__kernel void fa_fp8_check_encode(__global const uint *x, __global uchar *e4m3, __global uchar *e5m2, int n)
{
    const int i = (int)get_global_id(0);
    if (i < n) {
        e4m3[i] = (uchar)fa_f32_to_e4m3(as_float(x[i]));
        e5m2[i] = (uchar)fa_f32_to_e5m2(as_float(x[i]));
    }
}
