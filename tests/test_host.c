/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The test suite's own host helpers, no device: f16/bf16 conversion (round to nearest even,
 * subnormals, overflow, NaN), the random fill (seeded, never zero) and the float64 reference on
 * cases small enough to work out by hand. The other tests trust these.
 */
#include "test_util.h"

#include <math.h>
#include <string.h>

static tu_tally tally = {"host_helpers", 0, 0};

static void f16(float x, unsigned want)
{
    unsigned got = tu_f32_to_f16(x);
    tu_expect(&tally, got == want, "f32 %.10g -> f16 0x%04x (want 0x%04x)", (double)x, got, want);
}

static void bf16(float x, unsigned want)
{
    unsigned got = tu_f32_to_bf16(x);
    tu_expect(&tally, got == want, "f32 %.10g -> bf16 0x%04x (want 0x%04x)", (double)x, got, want);
}

int main(void)
{
    f16(1.0f, 0x3c00);
    f16(-2.0f, 0xc000);
    f16(0.0f, 0x0000);
    f16(-0.0f, 0x8000);
    f16(65504.0f, 0x7bff);
    f16(65519.0f, 0x7bff);               /* below the midpoint to 65536: stays finite */
    f16(65520.0f, 0x7c00);               /* the midpoint rounds to even: inf */
    f16(1e10f, 0x7c00);
    f16(-INFINITY, 0xfc00);
    f16(0x1p-14f, 0x0400);               /* smallest normal */
    f16(0x1p-24f, 0x0001);               /* smallest subnormal */
    f16(0x1p-25f, 0x0000);               /* half of it: tie -> even (0) */
    f16(0x1.8p-24f, 0x0002);             /* 1.5 units: tie -> even (2) */
    f16(0x1.4p-24f, 0x0001);             /* 1.25 units -> 1 */
    f16(0x1.ffcp-15f, 0x0400);           /* 1023.5 units of 2^-24: tie -> even (1024 = smallest normal) */
    f16(1.0f + 0x1p-11f, 0x3c00);        /* tie between 1 and 1+2^-10 -> even (1) */
    f16(1.0f + 3 * 0x1p-11f, 0x3c02);    /* tie between 1+2^-10 and 1+2^-9 -> even */
    f16(1.0f + 0x1p-11f + 0x1p-20f, 0x3c01); /* just above the tie */
    f16(0.1f, 0x2e66);
    {
        unsigned h = tu_f32_to_f16(NAN);
        tu_expect(&tally, (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0, "f16(NaN) = 0x%04x is a NaN", h);
    }
    bf16(1.0f, 0x3f80);
    bf16(1.0f + 0x1p-8f, 0x3f80);         /* tie -> even */
    bf16(1.0f + 3 * 0x1p-8f, 0x3f82);     /* tie -> even (up) */
    bf16(1.0f + 0x1p-8f + 0x1p-20f, 0x3f81);
    bf16(-3.0f, 0xc040);
    bf16(0x1.fffffep127f, 0x7f80);        /* FLT_MAX rounds to inf */
    {
        unsigned h = tu_f32_to_bf16(NAN);
        tu_expect(&tally, (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0, "bf16(NaN) = 0x%04x is a NaN", h);
    }
    /* round trips: every f16 value survives f16 -> f32 -> f16; bf16 likewise (NaNs excepted) */
    {
        long bad = 0;
        for (unsigned h = 0; h < 0x10000u; h++) {
            if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
                continue;
            if (tu_f32_to_f16(tu_f16_to_f32((uint16_t)h)) != h)
                bad++;
            if ((h & 0x7f80) == 0x7f80 && (h & 0x7f))
                continue;
            if (tu_f32_to_bf16(tu_bf16_to_f32((uint16_t)h)) != h)
                bad++;
        }
        tu_expect(&tally, bad == 0, "all 65536 f16 and bf16 bit patterns round-trip through f32 (%ld bad)", bad);
    }
    /* rounding to nearest: brute force against the two neighbours for many floats */
    {
        tu_rng r;
        tu_rng_seed(&r, 7);
        long bad = 0;
        for (int i = 0; i < 200000; i++) {
            float x = (float)((tu_rng_uniform(&r) - 0.5) * pow(2.0, (double)(int)(tu_rng_next(&r) % 40) - 26));
            float y = tu_round(FA_CL_F16, x), yb = tu_round(FA_CL_BF16, x);
            /* the neighbours of the result bracket x within half an ulp */
            uint16_t h = tu_f32_to_f16(x), b = tu_f32_to_bf16(x);
            double ulp_h = fabs((double)tu_f16_to_f32((uint16_t)(h + 1)) - y);
            double ulp_b = fabs((double)tu_bf16_to_f32((uint16_t)(b + 1)) - yb);
            if (fabs((double)x - y) > 0.5 * ulp_h || fabs((double)x - yb) > 0.5 * ulp_b)
                bad++;
        }
        tu_expect(&tally, bad == 0, "200000 random floats round to within half an ulp (f16, bf16): %ld bad", bad);
    }
    /* random fill: seeded (same seed, same values), never zero even in bf16 */
    {
        tu_rng a, b;
        tu_rng_seed(&a, 42);
        tu_rng_seed(&b, 42);
        int same = 1, zero = 0, in_range = 1;
        for (int i = 0; i < 100000; i++) {
            float x = tu_rng_nonzero(&a), y = tu_rng_nonzero(&b);
            same = same && x == y;
            zero += tu_round(FA_CL_BF16, x) == 0.0f || tu_round(FA_CL_F16, x) == 0.0f;
            in_range = in_range && fabsf(x) >= 0.0625f && fabsf(x) <= 1.0f;
        }
        tu_rng_seed(&b, 43);
        tu_rng_seed(&a, 42);
        int differs = tu_rng_nonzero(&a) != tu_rng_nonzero(&b);
        tu_expect(&tally, same && !zero && in_range && differs,
                  "tu_rng_nonzero: reproducible per seed, seeds differ, |x| in [1/16, 1], never 0 after rounding");
    }
    /* the float64 reference on a case worked out by hand: Sq=2, Sk=2, D=1, causal, scale 1.
     * row 0 sees key 0 only: o = v0, lse = q0*k0; row 1 sees both: p = softmax(q1*k0, q1*k1). */
    {
        tu_case c = {1, 1, 1, 2, 2, 1, FA_CL_F32, 1, -1, -1, NULL, 1.0f, 1};
        float q[2] = {0.5f, 2.0f}, k[2] = {1.0f, -1.0f}, v[2] = {3.0f, 5.0f};
        double o[2], lse[2];
        tu_attention_f64(&c, q, k, v, o, lse);
        double p0 = exp(2.0) / (exp(2.0) + exp(-2.0));
        double want1 = p0 * 3.0 + (1 - p0) * 5.0, lse1 = log(exp(2.0) + exp(-2.0));
        tu_expect(&tally, fabs(o[0] - 3.0) < 1e-15 && fabs(lse[0] - 0.5) < 1e-15 && fabs(o[1] - want1) < 1e-14 &&
                              fabs(lse[1] - lse1) < 1e-14,
                  "f64 reference, causal 2x2: o = (%.15g, %.15g) want (3, %.15g), lse = (%.15g, %.15g)", o[0], o[1],
                  want1, lse[0], lse[1]);
        /* Sq > Sk, causal: row 0 of 3 queries over 2 keys sees nothing -> 0 and -inf */
        tu_case c2 = {1, 1, 1, 3, 2, 1, FA_CL_F32, 1, -1, -1, NULL, 1.0f, 1};
        float q2[3] = {1, 1, 1};
        double o2[3], l2[3];
        tu_attention_f64(&c2, q2, k, v, o2, l2);
        tu_expect(&tally, o2[0] == 0.0 && isinf(l2[0]) && l2[0] < 0 && fabs(o2[1] - 3.0) < 1e-15 && isfinite(l2[2]),
                  "f64 reference, causal 3x2: row 0 sees nothing (o 0, lse -inf), row 1 sees key 0 only");
        /* window (0,0) and GQA 2:1: head 1 reads kv head 0 */
        tu_case c3 = {1, 2, 1, 2, 2, 1, FA_CL_F32, 0, 0, 0, NULL, 1.0f, 1};
        float q3[4] = {1, 1, 1, 1};
        double o3[4], l3[4];
        tu_attention_f64(&c3, q3, k, v, o3, l3);
        tu_expect(&tally, o3[0] == 3.0 && o3[1] == 5.0 && o3[2] == 3.0 && o3[3] == 5.0 && l3[1] == -1.0,
                  "f64 reference, window (0,0), GQA 2:1: each row sees its diagonal key of kv head 0");
    }
    /* tolerance helpers */
    {
        int ok = fa_cl_tolerance_ok(FA_CL_F32, 1.0 + 1e-4, 1.0) && !fa_cl_tolerance_ok(FA_CL_F32, 1.0 + 2e-4, 1.0) &&
                 fa_cl_tolerance_ok(FA_CL_F16, 0.0009, 0.0) && !fa_cl_tolerance_ok(FA_CL_F16, 0.0011, 0.0) &&
                 fa_cl_tolerance_ok(FA_CL_BF16, 1.02, 1.0) && !fa_cl_tolerance_ok(FA_CL_BF16, 1.03, 1.0) &&
                 !fa_cl_tolerance_ok(FA_CL_F32, NAN, 1.0) && fa_cl_tolerance_lse_ok(-INFINITY, -INFINITY) &&
                 !fa_cl_tolerance_lse_ok(-1e30, -INFINITY) && fa_cl_tolerance_lse_ok(10.0009, 10.0) &&
                 !fa_cl_tolerance_lse_ok(10.002, 10.0) && fa_cl_tolerance_lse_ok(5e-5, 0.0);
        tu_expect(&tally, ok, "tolerance.h: f32 1e-5+1e-4|ref|, f16 1e-3+2e-3|ref|, bf16 8e-3+1.6e-2|ref|, LSE rel 1e-4");
    }
    return tu_finish(&tally);
}
