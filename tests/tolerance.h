/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Accuracy bar of fa_cl, in ONE place: the test suite and the benchmark tool include this header.
 *
 * An output element passes when
 *     |got - ref| <= fa_cl_tolerance_abs(dtype) + fa_cl_tolerance_rel(dtype) * |ref|
 * where ref is the float64 result computed from the *rounded* inputs (the values the kernel
 * actually reads), or, when comparing the fused kernel against the unfused reference, the
 * reference's output. The kernel's output is converted to float and compared directly (the
 * reference is not rounded to the storage type first): the f16/bf16 bars include that rounding.
 *
 *   f32  : 1e-5 + 1e-4   * |ref|
 *   f16  : 1e-3 + 2e-3   * |ref|   (f16 has 11 significant bits: half an ulp is 2.4e-4 relative)
 *   bf16 : 8e-3 + 1.6e-2 * |ref|   (bf16 has 8: half an ulp is 2e-3 relative)
 *
 * fp8 K/V (e4m3, e5m2): the same bars, o's type's, with ref computed from the dequantised values
 * (each code's value times its descale factor, rounded to float32 as the kernels form it): fp8's
 * own rounding is in the data, not in the bar. tests/test_fp8.c uses random values and
 * outlier-heavy codes (drawn over the format's whole range, the factor bringing the largest to 1).
 *
 * LSE (always float32): relative 1e-4, i.e. |got - ref| <= 1e-4 * max(|ref|, 1). The floor of 1
 * makes it absolute near LSE = 0 (a row that sees one key whose score is ~0), where a relative bar
 * would ask for more than float32 can give. A row that sees no key must give -inf exactly, and
 * both must be -inf for the check to pass.
 */
#ifndef FA_CL_TOLERANCE_H
#define FA_CL_TOLERANCE_H

#include <math.h>

#include "fa_cl.h"

static inline double fa_cl_tolerance_abs(fa_cl_dtype dtype)
{
    switch (dtype) {
    case FA_CL_F32: return 1e-5;
    case FA_CL_F16: return 1e-3;
    case FA_CL_BF16: return 8e-3;
    }
    return 0.0;
}

static inline double fa_cl_tolerance_rel(fa_cl_dtype dtype)
{
    switch (dtype) {
    case FA_CL_F32: return 1e-4;
    case FA_CL_F16: return 2e-3;
    case FA_CL_BF16: return 1.6e-2;
    }
    return 0.0;
}

/* Largest |got - ref| allowed for one output element. */
static inline double fa_cl_tolerance_bound(fa_cl_dtype dtype, double ref)
{
    return fa_cl_tolerance_abs(dtype) + fa_cl_tolerance_rel(dtype) * fabs(ref);
}

/* 1 when got is within the bar of ref (NaN or Inf in got never passes unless ref is the same). */
static inline int fa_cl_tolerance_ok(fa_cl_dtype dtype, double got, double ref)
{
    if (isnan(got) || isnan(ref))
        return 0;
    if (isinf(ref) || isinf(got))
        return got == ref;
    return fabs(got - ref) <= fa_cl_tolerance_bound(dtype, ref);
}

/* Gradients (the backward's dq, dk, dv), each compared as a tensor: element e passes when
 *     |got_e - ref_e| <= fa_cl_tolerance_abs(dtype) * m + fa_cl_tolerance_rel(dtype) * |ref_e|
 * with m = max(1, max_e |ref_e|): the absolute part scales with the tensor, because dS = P (dP - D)
 * cancels, so small gradient entries carry the rounding of the large terms they are made of. */
static inline int fa_cl_tolerance_grad_ok(fa_cl_dtype dtype, double got, double ref, double max_ref)
{
    if (isnan(got) || isnan(ref))
        return 0;
    if (isinf(ref) || isinf(got))
        return got == ref;
    const double m = max_ref > 1.0 ? max_ref : 1.0;
    return fabs(got - ref) <= fa_cl_tolerance_abs(dtype) * m + fa_cl_tolerance_rel(dtype) * fabs(ref);
}

/* A tensor-core kernel (nvidia-mma, nvidia-wgmma) computes in K's and V's 16-bit type (f16 or bf16;
 * f16 for q8_0 K/V unless q is bf16) where q and/or o are stored in another (desc.q_type, o_type):
 * q is rounded to that type once, as its tile loads (ggml's CUDA kernels round an f32 Q to f16
 * the same way), and P to it before P V, as in an all-16-bit call, so that an f32 o cannot meet
 * f32's bar. o is then held to the coarser of its own type's bar and the compute type's: f16's
 * 1e-3 + 2e-3 |ref| for ggml's f32 q/o with f16 K/V. */
static inline fa_cl_dtype fa_cl_tolerance_mixed_dtype(fa_cl_dtype o_type, fa_cl_dtype compute)
{
    return fa_cl_tolerance_rel(compute) > fa_cl_tolerance_rel(o_type) ? compute : o_type;
}

/* With q rounded so (q stored in another type than the compute type), a score moves by up to
 * u scale sum |q_i k_i| (u: 2^-11 for f16, 2^-8 for bf16), which the LSE carries as it is: a row
 * that sees one key has LSE = that score. The LSE's bar is then the compute type's o bar, applied
 * to the LSE (f16: 1e-3 + 2e-3 |ref|), where the float32 bar below (1e-4 relative) would ask for
 * less than q's own rounding. */
static inline double fa_cl_tolerance_lse_rounded_q_bound(fa_cl_dtype compute, double ref)
{
    return fa_cl_tolerance_bound(compute, ref);
}

static inline double fa_cl_tolerance_lse_rel(void) { return 1e-4; }

/* Largest |got - ref| allowed for one LSE value (finite ref). */
static inline double fa_cl_tolerance_lse_bound(double ref)
{
    return fa_cl_tolerance_lse_rel() * (fabs(ref) > 1.0 ? fabs(ref) : 1.0);
}

/* 1 when the LSE passes: both -inf (a row that sees no key), or within the relative bar. */
static inline int fa_cl_tolerance_lse_ok(double got, double ref)
{
    if (isnan(got) || isnan(ref))
        return 0;
    if (isinf(ref) || isinf(got))
        return got == ref;
    return fabs(got - ref) <= fa_cl_tolerance_lse_bound(ref);
}

#endif /* FA_CL_TOLERANCE_H */
