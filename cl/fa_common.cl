/* SPDX-License-Identifier: Apache-2.0 */
/* Storage-type helpers shared by every fa_cl kernel. The host defines FA_DTYPE:
 * 0 = f32, 1 = f16 (read with vload_half: no cl_khr_fp16 needed), 2 = bf16 (bit shifts).
 * Arithmetic is always fp32. */
#ifndef FA_DTYPE
#error "FA_DTYPE must be defined by the host (0 f32, 1 f16, 2 bf16)"
#endif

#if FA_DTYPE == 0
typedef float fa_store_t;
#elif FA_DTYPE == 1
typedef half fa_store_t; /* only ever used behind a pointer, as OpenCL 1.2 allows without cl_khr_fp16 */
#else
typedef ushort fa_store_t;
#endif

inline float fa_bf16_to_f32(ushort x) { return as_float((uint)x << 16); }

/* Round to nearest even; NaN stays NaN (quiet bit set). */
inline ushort fa_f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

inline float fa_load1(__global const fa_store_t *p, ulong i)
{
#if FA_DTYPE == 0
    return p[i];
#elif FA_DTYPE == 1
    return vload_half(0, p + i);
#else
    return fa_bf16_to_f32(p[i]);
#endif
}

/* Four consecutive elements; the address needs only element alignment. */
inline float4 fa_load4(__global const fa_store_t *p, ulong i)
{
#if FA_DTYPE == 0
    return vload4(0, p + i);
#elif FA_DTYPE == 1
    return vload_half4(0, p + i);
#else
    ushort4 u = vload4(0, p + i);
    return as_float4(convert_uint4(u) << 16);
#endif
}

inline void fa_store1(__global fa_store_t *p, ulong i, float x)
{
#if FA_DTYPE == 0
    p[i] = x;
#elif FA_DTYPE == 1
    vstore_half_rte(x, 0, p + i);
#else
    p[i] = fa_f32_to_bf16(x);
#endif
}

inline void fa_store4(__global fa_store_t *p, ulong i, float4 x)
{
#if FA_DTYPE == 0
    vstore4(x, 0, p + i);
#elif FA_DTYPE == 1
    vstore_half4_rte(x, 0, p + i);
#else
    vstore4((ushort4)(fa_f32_to_bf16(x.x), fa_f32_to_bf16(x.y), fa_f32_to_bf16(x.z), fa_f32_to_bf16(x.w)), 0, p + i);
#endif
}
