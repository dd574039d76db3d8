/* SPDX-License-Identifier: Apache-2.0 */
/* Storage-type helpers shared by every fa_cl kernel, and the compensated sum that merges partial
 * results. The host defines FA_DTYPE: 0 = f32, 1 = f16 (read with vload_half: no cl_khr_fp16
 * needed), 2 = bf16 (bit shifts), 3 = q8_0, 4 = fp8 e4m3, 5 = fp8 e5m2 (3..5 loads only: the
 * reference's gather). Arithmetic is always fp32. */
#ifndef FA_DTYPE
#error "FA_DTYPE must be defined by the host (0 f32, 1 f16, 2 bf16, 3 q8_0, 4 e4m3, 5 e5m2)"
#endif

inline float fa_bf16_to_f32(ushort x) { return as_float((uint)x << 16); }
/* one word of two bf16 (lo in the low half) -> two floats */
inline float2 fa_bf16x2_to_f32(uint u) { return (float2)(as_float(u << 16), as_float(u & 0xffff0000u)); }

/* Round to nearest even; NaN stays NaN (quiet bit set). */
inline ushort fa_f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

/* OCP FP8 (include/fa_cl.h FA_CL_STORAGE_E4M3 / _E5M2), exactly, by bit manipulation: every fp8
 * value is a normal float32 (the smallest subnormals are 2^-9 and 2^-16), so the conversion to
 * float32 never rounds and no device's flushing of float32 subnormals can touch it.
 * e4m3 (PyTorch's float8_e4m3fn): S.EEEE.MMM, bias 7, no Inf, S.1111.111 NaN, largest 448. */
inline float fa_e4m3_to_f32(uint x)
{
    const uint s = (x & 0x80u) << 24, em = x & 0x7fu;
    /* a normal's exponent rebiased 7 -> 127 (+120); exponent 0: m units of 2^-9 */
    const float mag = em >= 0x08u ? as_float((em << 20) + (120u << 23)) : (float)em * 0x1p-9f;
    return as_float(s | (em == 0x7fu ? 0x7fc00000u : as_uint(mag)));
}
/* e5m2 (float8_e5m2, a binary16's top byte): S.EEEEE.MM, bias 15, S.11111.00 Inf, S.11111.xx NaN */
inline float fa_e5m2_to_f32(uint x)
{
    const uint s = (x & 0x80u) << 24, em = x & 0x7fu;
    const float mag = em > 0x7cu    ? as_float(0x7fc00000u | (em & 3u) << 21)       /* NaN (quiet) */
                      : em == 0x7cu ? INFINITY
                      : em >= 0x04u ? as_float((em << 21) + (112u << 23)) /* rebias 15 -> 127 */
                                    : (float)em * 0x1p-16f;                 /* m units of 2^-16 */
    return as_float(s | as_uint(mag));
}
/* float32 -> fp8, rounding to nearest even and saturating: a finite value beyond the largest
 * finite one gives +-448 / +-57344 (CUDA's __NV_SATFINITE); NaN gives NaN; +-Inf gives +-Inf in
 * e5m2 and NaN in e4m3, which has none (an infinity never becomes finite). Below the smallest
 * normal, rint (round half to even) counts units of the subnormal step; above, the float32's
 * mantissa is rounded to 3 (2) bits by the bf16 trick, a carry stepping into the exponent. */
inline uint fa_f32_to_e4m3(float f)
{
    const uint u = as_uint(f), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return s | 0x7fu;
    if (a >= 0x43e00000u) /* >= 448 */
        return s | 0x7eu;
    if (a < 0x3c800000u) /* < 2^-6 */
        return s | (uint)rint(as_float(a) * 0x1p9f);
    return s | ((a + 0x7ffffu + ((a >> 20) & 1u) - (120u << 23)) >> 20);
}
inline uint fa_f32_to_e5m2(float f)
{
    const uint u = as_uint(f), s = (u >> 24) & 0x80u, a = u & 0x7fffffffu;
    if (a >= 0x7f800000u)
        return s | (a == 0x7f800000u ? 0x7cu : 0x7fu);
    if (a >= 0x47600000u) /* >= 57344 */
        return s | 0x7bu;
    if (a < 0x38800000u) /* < 2^-14 */
        return s | (uint)rint(as_float(a) * 0x1p16f);
    return s | ((a + 0xfffffu + ((a >> 21) & 1u) - (112u << 23)) >> 21);
}

/* Loads and stores by storage type: f32, f16 (vload_half), bf16 (bit shifts), and (loads only)
 * q8_0: ggml's blocks of 32 elements, one f16 scale then 32 int8 values (34 bytes), element i at
 * block i / 32; four elements 4k .. 4k + 3 never straddle a block. Addresses need only element
 * alignment. */
inline float fa_ld1_f32(__global const float *p, ulong i) { return p[i]; }
inline float4 fa_ld4_f32(__global const float *p, ulong i) { return vload4(0, p + i); }
inline float fa_ld1_f16(__global const half *p, ulong i) { return vload_half(0, p + i); }
inline float4 fa_ld4_f16(__global const half *p, ulong i) { return vload_half4(0, p + i); }
inline float fa_ld1_bf16(__global const ushort *p, ulong i) { return fa_bf16_to_f32(p[i]); }
inline float4 fa_ld4_bf16(__global const ushort *p, ulong i)
{
    ushort4 u = vload4(0, p + i);
    return as_float4(convert_uint4(u) << 16);
}
inline float fa_ld1_q8(__global const uchar *p, ulong i)
{
    __global const uchar *blk = p + (i >> 5) * 34;
    return vload_half(0, (__global const half *)blk) * (float)((__global const char *)blk)[2 + (i & 31)];
}
inline float4 fa_ld4_q8(__global const uchar *p, ulong i)
{
    __global const uchar *blk = p + (i >> 5) * 34;
    return vload_half(0, (__global const half *)blk) * convert_float4(vload4(0, (__global const char *)blk + 2 + (i & 31)));
}
inline float fa_ld1_e4m3(__global const uchar *p, ulong i) { return fa_e4m3_to_f32(p[i]); }
inline float4 fa_ld4_e4m3(__global const uchar *p, ulong i)
{
    const uchar4 u = vload4(0, p + i);
    return (float4)(fa_e4m3_to_f32(u.x), fa_e4m3_to_f32(u.y), fa_e4m3_to_f32(u.z), fa_e4m3_to_f32(u.w));
}
inline float fa_ld1_e5m2(__global const uchar *p, ulong i) { return fa_e5m2_to_f32(p[i]); }
inline float4 fa_ld4_e5m2(__global const uchar *p, ulong i)
{
    const uchar4 u = vload4(0, p + i);
    return (float4)(fa_e5m2_to_f32(u.x), fa_e5m2_to_f32(u.y), fa_e5m2_to_f32(u.z), fa_e5m2_to_f32(u.w));
}
inline void fa_st1_f32(__global float *p, ulong i, float x) { p[i] = x; }
inline void fa_st4_f32(__global float *p, ulong i, float4 x) { vstore4(x, 0, p + i); }
inline void fa_st1_f16(__global half *p, ulong i, float x) { vstore_half_rte(x, 0, p + i); }
inline void fa_st4_f16(__global half *p, ulong i, float4 x) { vstore_half4_rte(x, 0, p + i); }
inline void fa_st1_bf16(__global ushort *p, ulong i, float x) { p[i] = fa_f32_to_bf16(x); }
inline void fa_st4_bf16(__global ushort *p, ulong i, float4 x)
{
    vstore4((ushort4)(fa_f32_to_bf16(x.x), fa_f32_to_bf16(x.y), fa_f32_to_bf16(x.z), fa_f32_to_bf16(x.w)), 0, p + i);
}

/* A storage type id's element type and its loaders' suffix (FA_ELEM(FA_DTYPE), FA_LD4(id)...):
 * 0 f32, 1 f16 (half only ever behind a pointer, as OpenCL 1.2 allows without cl_khr_fp16),
 * 2 bf16, 3 q8_0 (bytes), 4 e4m3 and 5 e5m2 (a byte each). */
#define FA_CAT_(a, b) a##b
#define FA_CAT(a, b) FA_CAT_(a, b)
#define FA_ELEM_0 float
#define FA_ELEM_1 half
#define FA_ELEM_2 ushort
#define FA_ELEM_3 uchar
#define FA_ELEM_4 uchar
#define FA_ELEM_5 uchar
#define FA_SUFFIX_0 f32
#define FA_SUFFIX_1 f16
#define FA_SUFFIX_2 bf16
#define FA_SUFFIX_3 q8
#define FA_SUFFIX_4 e4m3
#define FA_SUFFIX_5 e5m2
#define FA_ELEM(id) FA_CAT(FA_ELEM_, id)
#define FA_LD1(id) FA_CAT(fa_ld1_, FA_CAT(FA_SUFFIX_, id))
#define FA_LD4(id) FA_CAT(fa_ld4_, FA_CAT(FA_SUFFIX_, id))
#define FA_ST1(id) FA_CAT(fa_st1_, FA_CAT(FA_SUFFIX_, id))
#define FA_ST4(id) FA_CAT(fa_st4_, FA_CAT(FA_SUFFIX_, id))

/* The descriptor's storage type (FA_DTYPE): what every tensor is unless a kernel says otherwise. */
typedef FA_ELEM(FA_DTYPE) fa_store_t;
#define fa_load1 FA_LD1(FA_DTYPE)
#define fa_load4 FA_LD4(FA_DTYPE)
#define fa_store1 FA_ST1(FA_DTYPE)
#define fa_store4 FA_ST4(FA_DTYPE)

/* A compensated sum: a value held as a pair (hi, lo) whose sum it is, |lo| at most half an ulp of
 * hi. fa_csum returns (hi + lo) fx + y fy as such a pair: the rounding errors of both products
 * (fma: exact) and of their sum (TwoSum: exact) join lo's share, and the pair is renormalised
 * (Fast2Sum), so that lo never grows into a sum that drifts itself. Merging n partial results this
 * way (long rows' chunks, split-KV's partials) costs the result a few roundings, where a plain fp32
 * sum of n partials drifts by up to n of them (n = 2^19 chunks of 2048 keys at 2^30 keys), and a
 * lo left to accumulate by about n of its own. Where a compiler fuses a product into the sum
 * (-cl-mad-enable), the TwoSum terms still give what the fused sum left out. A sum that is not
 * finite is s alone, lo 0 (TwoSum of an infinity is NaN). */
inline float2 fa_csum(float hi, float lo, float fx, float y, float fy)
{
    const float a = hi * fx, b = y * fy, s = a + b, bb = s - a;
    const float e = mad(lo, fx, (a - (s - bb)) + (b - bb) + fma(hi, fx, -a) + fma(y, fy, -b));
    const float t = s + e;
    return isfinite(t) ? (float2)(t, e - (t - s)) : (float2)(s, 0.0f);
}

/* What the forward's and the backward's score modifiers share (include/fa_cl.h "Score modifiers"). */
#ifdef FA_MODS
#ifdef FA_TANH_APPROX
/* NVIDIA's tanh.approx.f32 (FlashAttention-3's softcap: one special-function op where the rational
 * function below costs a dozen multiply-adds and a division), a measurement switch given by hand
 * on NVIDIA GPUs (FA_CL_BUILD_OPTIONS=-DFA_TANH_APPROX): its relative error, about 2^-11, moves a
 * probability by up to softcap x 2^-11 (0.5% at softcap 10), more than the f16 tests' tolerance
 * (0.001 + 0.002 |o|) may admit */
inline float fa_tanh(float x)
{
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#elif defined(FA_NATIVE_EXP)
/* GPUs: tanh(x) = 1 - 2 / (2^(2 x log2 e) + 1) on [-9, 9] (tanh(9) is 1 in float), by native exp2
 * and division: two special-function operations and three multiply-adds where the rational
 * function below takes a dozen multiply-adds and a division (its native form ran the softcap row
 * 0.49x the plain one on an H100, this one 0.59x; tanh.approx.f32 0.76x with 2^-11 relative error);
 * its absolute error is a few 2^-24 (the subtraction from 1), well inside the f16 tests' bar. The
 * forward's and the backward's kernels of one device are built alike, so both see the same tanh. */
inline float fa_tanh(float x)
{
    const float e = native_exp2(clamp(x, -9.0f, 9.0f) * 2.88539008177792681f); /* 2 log2(e) */
    return 1.0f - native_divide(2.0f, e + 1.0f);
}
#else
/* tanh as a rational function of x on [-7.9, 7.9] (Eigen's float tanh: x P(x^2) / Q(x^2), degree
 * 13 over 6, a few ulp; beyond, +-1 in float): a dozen multiply-adds and a division, where an exp
 * would double a score's transcendental cost (PoCL: +45% against +10-15%); CPUs */
inline float fa_tanh(float x)
{
    const float c = clamp(x, -7.90531110763549805f, 7.90531110763549805f), x2 = c * c;
    float p = mad(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
    p = mad(x2, p, -8.60467152213735e-11f);
    p = mad(x2, p, 5.12229709037114e-08f);
    p = mad(x2, p, 1.48572235717979e-05f);
    p = mad(x2, p, 6.37261928875436e-04f);
    p = mad(x2, p, 4.89352455891786e-03f);
    float q = mad(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
    q = mad(x2, q, 2.26843463243900e-03f);
    q = mad(x2, q, 4.89352518554385e-03f);
    return c * p / q;
}
#endif
#endif

/* The attention mask's entries (FA_MASK = the fa_cl_mask_type: 1 f32, 2 f16, 3 boolean uint8, 4
 * bf16): a value in scaled-score units, f16 through vload_half (no cl_khr_fp16), bf16 by a shift, a
 * boolean's 0 is -inf. FA_MASK_ES: bytes an entry (f16 and bf16 entries move alike; only their
 * conversion differs). */
#ifdef FA_MASK
#if FA_MASK == 1
typedef float fa_mask_t;
#define FA_MASK_ES 4
#define FA_MASK_LOAD(i) (mask[i])
#elif FA_MASK == 2
typedef half fa_mask_t;
#define FA_MASK_ES 2
#define FA_MASK_LOAD(i) vload_half(0, mask + (i))
#elif FA_MASK == 3
typedef uchar fa_mask_t;
#define FA_MASK_ES 1
#define FA_MASK_LOAD(i) (mask[i] ? 0.0f : -INFINITY)
#elif FA_MASK == 4
typedef ushort fa_mask_t;
#define FA_MASK_ES 2
#define FA_MASK_LOAD(i) fa_bf16_to_f32(mask[i])
#else
#error "FA_MASK is 1 (f32), 2 (f16), 3 (bool) or 4 (bf16)"
#endif
#endif
