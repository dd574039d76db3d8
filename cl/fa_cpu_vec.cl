/* SPDX-License-Identifier: Apache-2.0 */
/* The cpu forward's vectors (cl/fa_cpu_forward.cl): query rows across the lanes of an OpenCL vector
 * of CPU_VW floats (4, 8 or 16: the planner's choice from the device's SIMD width), which PoCL and
 * other CPU drivers compile to SIMD registers, and an exp2 of vectors that stays vectorised. */
#if CPU_VW == 16
typedef float16 fa_rv;
typedef int16 fa_ri;
#define FA_RV_LOAD(p) vload16(0, p)
#define FA_RI_LOAD(p) vload16(0, p)
#define FA_RV_IOTA ((fa_ri)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
#define FA_RV_BITS(x) as_int16(x)
#define FA_RV_FROM_BITS(x) as_float16(x)
#define FA_RV_TO_INT(x) convert_int16(x)
#elif CPU_VW == 8
typedef float8 fa_rv;
typedef int8 fa_ri;
#define FA_RV_LOAD(p) vload8(0, p)
#define FA_RI_LOAD(p) vload8(0, p)
#define FA_RV_IOTA ((fa_ri)(0, 1, 2, 3, 4, 5, 6, 7))
#define FA_RV_BITS(x) as_int8(x)
#define FA_RV_FROM_BITS(x) as_float8(x)
#define FA_RV_TO_INT(x) convert_int8(x)
#elif CPU_VW == 4
typedef float4 fa_rv;
typedef int4 fa_ri;
#define FA_RV_LOAD(p) vload4(0, p)
#define FA_RI_LOAD(p) vload4(0, p)
#define FA_RV_IOTA ((fa_ri)(0, 1, 2, 3))
#define FA_RV_BITS(x) as_int4(x)
#define FA_RV_FROM_BITS(x) as_float4(x)
#define FA_RV_TO_INT(x) convert_int4(x)
#else
#error "CPU_VW is 4, 8 or 16"
#endif

/* a * b + c as one instruction where the device has it (CPU_FMA: CL_FP_FMA in its single-precision
 * config), else mad (PoCL compiles mad to a multiply and an add; fma without the hardware would be
 * a library call) */
#ifdef CPU_FMA
#define FA_CPU_MAD(a, b, c) fma(a, b, c)
#else
#define FA_CPU_MAD(a, b, c) mad(a, b, c)
#endif

/* 2^x for the softmax's x <= 0 (and -inf): x = n + f, f in [-0.5, 0.5], 2^f by its degree-6
 * Taylor polynomial (relative error ~1.2e-7: an ulp), 2^n added into the exponent bits; n by
 * adding and subtracting 1.5 * 2^23 (round to nearest in two additions: a driver's rint may be a
 * dozen instructions). Exactly 0 below -126 (a masked score's -inf included), so that masked keys
 * add nothing to a row's sum; NaN stays NaN (a NaN in q or k reaches the rows that see it). A
 * driver's exp2 of a vector may be a loop of scalar calls; this one is a dozen vector
 * instructions. */
inline fa_rv fa_cpu_exp2(fa_rv x)
{
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    const fa_rv c = fmax(x, (fa_rv)(-126.0f));
    const fa_rv t = c + magic;
    const fa_rv f = c - (t - magic);
    fa_rv p = (fa_rv)(1.5403530e-4f);
    p = FA_CPU_MAD(p, f, (fa_rv)(1.3333558e-3f));
    p = FA_CPU_MAD(p, f, (fa_rv)(9.6181291e-3f));
    p = FA_CPU_MAD(p, f, (fa_rv)(5.5504109e-2f));
    p = FA_CPU_MAD(p, f, (fa_rv)(2.4022651e-1f));
    p = FA_CPU_MAD(p, f, (fa_rv)(6.9314718e-1f));
    p = FA_CPU_MAD(p, f, (fa_rv)(1.0f));
    const fa_rv r = FA_RV_FROM_BITS(FA_RV_BITS(p) + ((FA_RV_BITS(t) - as_int(magic)) << 23));
    return select(select(r, (fa_rv)(0.0f), x < (fa_rv)(-126.0f)), x, isnan(x));
}

/* The larger of a and b where neither is NaN (a max without fmax's NaN handling: the row maxima
 * skip NaN scores, as fmax does, since a comparison with NaN is false). */
inline fa_rv fa_cpu_max(fa_rv a, fa_rv b) { return select(a, b, b > a); }

/* Elements i .. i + 15 of a row of q, k or v in each storage type (HEAD_DIM % 16 == 0: q8_0's 16
 * never straddle a block of 32), by FA_CPU_LD16(id). */
#if HEAD_DIM % 16 == 0
inline float16 fa_cpu_ld16_f32(__global const float *p, ulong i) { return vload16(0, p + i); }
inline float16 fa_cpu_ld16_f16(__global const half *p, ulong i) { return vload_half16(0, p + i); }
inline float16 fa_cpu_ld16_bf16(__global const ushort *p, ulong i)
{
    return as_float16(convert_uint16(vload16(0, p + i)) << 16);
}
inline float16 fa_cpu_ld16_q8(__global const uchar *p, ulong i)
{
    __global const uchar *blk = p + (i >> 5) * 34;
    const float scale = vload_half(0, (__global const half *)blk);
    return scale * convert_float16(vload16(0, (__global const char *)blk + 2 + (i & 31)));
}
#define FA_CPU_LD16(id) FA_CAT(fa_cpu_ld16_, FA_CAT(FA_SUFFIX_, id))
#endif
