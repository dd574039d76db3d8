/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fp8 K/V (include/fa_cl.h "fp8 K/V"): OCP FP8 e4m3 / e5m2 caches with FlashAttention-3's descale
 * factors. The attention is checked against the float64 oracle on the dequantised values (each
 * code's value times its factor, in float32, as the kernels form them), so only the attention's own
 * error counts, at o's accuracy bar (tests/tolerance.h). Subsets:
 *   codes      the kernels' conversions (cl/fa_common.cl) on the device against the host's own
 *              definition of the formats: all 256 codes of each to float32, and float32 to each
 *              (every value, every tie between neighbours and an ulp either side, overflow, Inf,
 *              NaN, float32 subnormals, random floats)
 *   cases      (random and outlier-heavy codes, a NaN code) the fused path (the planner's kernel, or FA_CL_KERNEL_VARIANT; CTest also runs it
 *              with splits, kv_chunk and the emulated tensor-core families: nvidia-mma takes fp8
 *              with q and o in f16/bf16, its oracle on the values rounded as it rounds them)
 *   reference  fa_cl_reference_run on the same cases
 *   serving    a paged fp8 cache: appended rows rounded to fp8 (the bytes compared with the host's
 *              nearest code) and decoding against it, factors per (sequence, kv head)
 *   invalid    bad descale modes and buffers, fp8 for q / o, families that decline fp8 (nvidia-tf32x3,
 *              and nvidia-wgmma on the planner alone), args of callers built before the factors
 *   tiny N     case N of a tiny set, one per process (oclgrind)
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_util.h"

#ifndef FA_CL_CHECK_KERNEL_DIR
#error "FA_CL_CHECK_KERNEL_DIR: the directory of tests/kernels/fa_fp8_check.cl and cl/fa_common.cl"
#endif

/* the library's internal program builder (the check kernel is not one of its families), and the
 * planner alone on a device this machine has not (Hopper) */
#include "plan/planner.h"
#include "program/program.h"
/* a plan's own tiles: whether nvidia-mma staged the fp8 rows (FA_CL_NV STAGE_COPY) */
#include "kernels/nvidia.h"
#include "plan/plan.h"

static tu_tally fp8_tally = {"fp8", 0, 0};

#define E4 TU_E4M3
#define E5 TU_E5M2
#define F32 FA_CL_F32
#define F16 FA_CL_F16
#define BF16 FA_CL_BF16
#define DS_NONE FA_CL_DESCALE_NONE
#define DS_TENSOR FA_CL_DESCALE_TENSOR
#define DS_HEAD FA_CL_DESCALE_HEAD

/* ---- codes ------------------------------------------------------------------------------------ */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* the inputs of the float32 -> fp8 check: every finite value of both formats (both signs), the
 * midpoint of each pair of neighbours and an ulp either side, values past the largest, Inf, NaN,
 * float32 subnormals and random floats */
static size_t encode_inputs(uint32_t *x, size_t cap, tu_rng *rng)
{
    size_t n = 0;
#define PUT(f) (n < cap ? (void)(x[n++] = f32_bits(f)) : (void)0)
    const fa_cl_dtype fmt[2] = {E4, E5};
    for (int t = 0; t < 2; t++) {
        for (unsigned c = 0; c < 0x7fu; c++) {
            const double v = tu_fp8_value(fmt[t], c), w = tu_fp8_value(fmt[t], c + 1);
            if (!isfinite(v))
                break;
            PUT((float)v), PUT((float)-v);
            if (!isfinite(w))
                continue;
            const float mid = (float)((v + w) / 2); /* exact: fp8 neighbours' midpoints are floats */
            PUT(mid), PUT(-mid), PUT(nextafterf(mid, 0.0f)), PUT(nextafterf(mid, INFINITY));
        }
        const double top = tu_fp8_value(fmt[t], t == 0 ? 0x7eu : 0x7bu), step = t == 0 ? 32.0 : 8192.0;
        PUT((float)(top + step / 2)), PUT((float)(top + step / 2 - 1)), PUT((float)(top + step)), PUT((float)(-top * 3));
    }
    PUT(INFINITY), PUT(-INFINITY), PUT(NAN), PUT(-NAN), PUT(1e30f), PUT(-3.4e38f), PUT(0.0f), PUT(-0.0f);
    PUT(bits_f32(1u)), PUT(bits_f32(0x807fffffu)), PUT(0x1p-30f), PUT(0x1p-17f), PUT(0x1p-10f), PUT(-0x1.8p-10f);
    while (n < cap)
        PUT((float)((tu_rng_uniform(rng) - 0.5) * ldexp(1.0, (int)(tu_rng_next(rng) % 48) - 30)));
#undef PUT
    return n;
}

static int run_codes(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &fp8_tally;
    static const char *const files[] = {"fa_common.cl", "fa_fp8_check.cl"};
    cl_program prog = NULL;
    fa_cl_status st = fa_cl__program_get(ctx, files, TU_COUNT(files), "-DFA_DTYPE=0", 0, &prog);
    if (!tu_expect(t, st == FA_CL_SUCCESS, "check kernels build (%s)", st == FA_CL_SUCCESS ? "ok" : fa_cl_last_error(ctx)))
        return 1;
    cl_int e1, e2;
    cl_kernel kd = clCreateKernel(prog, "fa_fp8_check_decode", &e1), ke = clCreateKernel(prog, "fa_fp8_check_encode", &e2);
    clReleaseProgram(prog);
    enum { NX = 4096 };
    unsigned char codes[256], enc[2][NX];
    uint32_t dec[2][256], *x = (uint32_t *)malloc(NX * sizeof(uint32_t));
    for (int i = 0; i < 256; i++)
        codes[i] = (unsigned char)i;
    tu_rng rng;
    tu_rng_seed(&rng, 0xf8);
    const cl_int nx = x ? (cl_int)encode_inputs(x, NX, &rng) : 0, nc = 256;
    cl_mem m[7] = {tu_buffer(ctx, CL_MEM_READ_ONLY, 256, codes), tu_buffer(ctx, CL_MEM_WRITE_ONLY, 1024, NULL),
                   tu_buffer(ctx, CL_MEM_WRITE_ONLY, 1024, NULL),
                   x ? tu_buffer(ctx, CL_MEM_READ_ONLY, NX * sizeof(uint32_t), x) : NULL,
                   tu_buffer(ctx, CL_MEM_WRITE_ONLY, NX, NULL), tu_buffer(ctx, CL_MEM_WRITE_ONLY, NX, NULL), NULL};
    int ok = kd && ke && x && m[0] && m[1] && m[2] && m[3] && m[4] && m[5];
    cl_command_queue q = fa_cl_context_queue(ctx);
    const size_t g[2] = {256, NX};
    for (int k = 0; k < 2 && ok; k++) {
        cl_kernel kr = k ? ke : kd;
        cl_int err = CL_SUCCESS;
        for (int a = 0; a < 3 && err == CL_SUCCESS; a++)
            err = clSetKernelArg(kr, (cl_uint)a, sizeof(cl_mem), &m[3 * k + a]);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(kr, 3, sizeof(cl_int), k ? &nx : &nc);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(q, kr, 1, NULL, &g[k], NULL, 0, NULL, NULL);
        ok = tu_expect(t, err == CL_SUCCESS, "check kernel %d enqueued (%d)", k, (int)err);
    }
    ok = ok && tu_read(ctx, m[1], 1024, dec[0]) == 0 && tu_read(ctx, m[2], 1024, dec[1]) == 0 &&
         tu_read(ctx, m[4], NX, enc[0]) == 0 && tu_read(ctx, m[5], NX, enc[1]) == 0;
    const fa_cl_dtype fmt[2] = {E4, E5};
    for (int f = 0; f < 2 && ok; f++) {
        int bad = 0, nans = 0, infs = 0, subs = 0;
        for (int c = 0; c < 256; c++) {
            const double want = tu_fp8_value(fmt[f], (unsigned)c);
            const float got = bits_f32(dec[f][c]);
            const int same = isnan(want) ? isnan(got) : f32_bits((float)want) == dec[f][c];
            nans += isnan(want) != 0, infs += isinf(want) != 0, subs += c % 128 > 0 && c % 128 < (f ? 4 : 8);
            if (!same && bad++ < 4)
                printf("  %s code 0x%02x: got %a (bits 0x%08x), want %a\n", tu_dtype_name(fmt[f]), c, (double)got,
                       dec[f][c], want);
        }
        tu_expect(t, bad == 0, "%s: all 256 codes to float32 (%d NaN codes, %d Inf, %d subnormal, +-0): %d wrong",
                  tu_dtype_name(fmt[f]), nans, infs, subs, bad);
        bad = 0;
        for (int i = 0; i < nx; i++) {
            const unsigned want = tu_fp8_nearest(fmt[f], bits_f32(x[i]));
            const double wv = tu_fp8_value(fmt[f], want), gv = tu_fp8_value(fmt[f], enc[f][i]);
            const int same = isnan(wv) ? isnan(gv) : enc[f][i] == want;
            if (!same && bad++ < 4)
                printf("  %a -> %s: got 0x%02x, want 0x%02x\n", (double)bits_f32(x[i]), tu_dtype_name(fmt[f]),
                       enc[f][i], want);
        }
        tu_expect(t, bad == 0, "%s: %d floats to the nearest code (ties to even, saturating): %d wrong",
                  tu_dtype_name(fmt[f]), (int)nx, bad);
    }
    for (int i = 0; i < 6; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    if (kd)
        clReleaseKernel(kd);
    if (ke)
        clReleaseKernel(ke);
    free(x);
    return 0;
}

/* ---- attention on fp8 K/V -------------------------------------------------------------------- */

typedef struct fp8_case {
    tu_case c;            /* c.dtype: the descriptor's dtype */
    fa_cl_dtype ty[4];    /* q, k, v, o storage (k, v: TU_E4M3 / TU_E5M2 or a float type) */
    fa_cl_descale ds[2];  /* k's and v's descale modes */
    int outliers;         /* codes drawn over the format's whole range (log-uniform), normalised by the factor */
    int nan_key;          /* a NaN code in k (batch 0, head 0, key 5): only the rows that see it are NaN */
    int specials;         /* subnormal codes only in k's kv head 1 and v's kv head 0 (factors that make them
                             count), a NaN code in v, an Inf code in an e5m2 k */
    int copy;             /* "staged": the bytes of nvidia-mma's copies of the staged rows (FA_STAGE_COPY) */
} fp8_case;

static void case_name(const fp8_case *fc, char *buf, size_t size)
{
    static const char *const ds[3] = {"none", "tensor", "head"};
    char c[256];
    tu_case_format(&fc->c, c, sizeof c);
    snprintf(buf, size, "%s q=%s k=%s v=%s o=%s descale=%s/%s%s%s%s", c, tu_dtype_name(fc->ty[0]),
             tu_dtype_name(fc->ty[1]), tu_dtype_name(fc->ty[2]), tu_dtype_name(fc->ty[3]), ds[fc->ds[0]],
             ds[fc->ds[1]], fc->outliers ? " outliers" : "", fc->nan_key ? " NaN key" : "",
             fc->specials ? " subnormal/NaN/Inf codes" : "");
}

/* The factors of one tensor, [B, Hkv] (a TENSOR mode uses the first): around 1, or 1 / the format's
 * largest value where the codes span its range. */
static void make_factors(float *f, int64_t n, fa_cl_dtype type, int outliers, int salt)
{
    const float base = outliers ? 1.0f / (float)tu_fp8_value(type, type == E4 ? 0x7eu : 0x7bu) : 1.0f;
    for (int64_t i = 0; i < n; i++)
        f[i] = base * (0.71f + 0.137f * (float)((i + salt) % 5));
}

/* Tensor i of p: (outliers, with a factor: tests/tolerance.h's bars hold values up to about 1) every
 * code of its view redrawn, then its logical values made the dequantised ones, code value x factor
 * of its (batch, kv head) in float32, and the buffer written again. */
static int dequantise(tu_problem *p, fa_cl_context *ctx, int i, fa_cl_descale mode, const float *f, int outliers,
                      tu_rng *rng)
{
    tu_tensor *t = &p->t[i];
    const int64_t B = t->dim[0], H = t->dim[1], S = t->dim[2], D = t->dim[3];
    const unsigned top = t->dtype == E4 ? 0x7eu : 0x7bu;
    size_t n = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t d = 0; d < D; d++, n++) {
                    const size_t at = tu_tensor_index(t, b, h, s, d);
                    if (outliers && mode != DS_NONE)
                        tu_store_bits(t->dtype, t->img, at, (uint32_t)(tu_rng_next(rng) % (top + 1)) |
                                                                (tu_rng_next(rng) & 0x80u));
                    const float x = tu_load(t->dtype, t->img, at);
                    const float factor = mode == DS_NONE ? 1.0f : f[mode == DS_HEAD ? b * H + h : 0];
                    p->x[i][n] = mode == DS_NONE ? x : x * factor;
                }
    return ctx ? tu_write(ctx, p->mem[i], tu_tensor_bytes(t), t->img) : 0;
}

/* The bytes of nvidia-mma's copies of fp8 rows staged raw (FA_STAGE_COPY; 0: its synchronous
 * loaders) in plan, which ran on nvidia-mma */
static int staged_copy(const fa_cl_plan *plan) { return FA_CL_NV(&plan->tiles, STAGE_COPY); }

/* Whether desc plans on nvidia-mma with its synchronous fp8 loaders (1: they round each dequantised
 * K/V element once more, to desc.dtype, before its products: include/fa_cl.h "fp8 K/V"), or with
 * its staged rows (2: the codes' values, exact in desc.dtype, and the factors on the scores and O);
 * *copy: the staged copies' bytes */
static int plans_on_mma(fa_cl_context *ctx, const fa_cl_attention_desc *d, int *copy)
{
    fa_cl_plan *plan = NULL;
    fa_cl_plan_info info;
    const int mma = fa_cl_plan_create(ctx, d, &plan) == FA_CL_SUCCESS && fa_cl_plan_get_info(plan, &info) == FA_CL_SUCCESS &&
                    strcmp(info.kernel, "nvidia-mma") == 0;
    *copy = mma ? staged_copy(plan) : 0;
    fa_cl_plan_release(plan);
    return mma ? 1 + (*copy > 0) : 0;
}

/* "staged [sync]": the copies each case must plan (its own; 0 with "sync", FA_CL_TUNE
 * nvidia-mma:fp8_staged=0); -1 elsewhere: any */
static int want_staged = -1;

/* the values nvidia-mma multiplies: x rounded to the dtype where it runs (n of them) */
static void round_for(fa_cl_dtype dtype, int mma, float *x, size_t n)
{
    for (size_t i = 0; i < n && mma; i++)
        x[i] = tu_round(dtype, x[i]);
}

/* specials: K's kv head 1 (V's kv head 0) only subnormal codes, their factor (a factor per head)
 * large enough that a wrong value of one shows in the scores (the outputs) */
static void subnormal_head(tu_problem *p, int i, float *f, tu_rng *rng)
{
    tu_tensor *t = &p->t[1 + i];
    const int64_t B = t->dim[0], H = t->dim[1], hk = i == 0 ? 1 : 0;
    const unsigned top = t->dtype == E4 ? 7u : 3u; /* the largest subnormal mantissa */
    if (hk >= H)
        return;
    for (int64_t b = 0; b < B; b++) {
        f[b * H + hk] = i == 0 ? 150.0f : 100.0f;
        for (int64_t s = 0; s < t->dim[2]; s++)
            for (int64_t d = 0; d < t->dim[3]; d++)
                tu_store_bits(t->dtype, t->img, tu_tensor_index(t, b, hk, s, d),
                              (uint32_t)(1 + tu_rng_next(rng) % top) | (tu_rng_next(rng) & 0x80u));
    }
}

/* specials: a NaN code in V (batch 0, kv head 0, key 7, dim 2: that column of the rows that see it
 * is NaN), and in an e5m2 K +Inf (batch last, kv head 0, key 4, dim 0: the rows that see it NaN or
 * that key's weight 0, as q's sign has it) */
static int write_specials(tu_problem *p, fa_cl_context *ctx, const fp8_case *fc)
{
    tu_tensor *v = &p->t[2], *k = &p->t[1];
    const int64_t D = fc->c.D, Sk = fc->c.Sk, Hkv = fc->c.Hkv, bl = fc->c.B - 1;
    tu_store_bits(v->dtype, v->img, tu_tensor_index(v, 0, 0, 7, 2), 0x7fu);
    p->x[2][7 * (size_t)D + 2] = NAN;
    if (fc->ty[1] == E5) {
        tu_store_bits(k->dtype, k->img, tu_tensor_index(k, bl, 0, 4, 0), 0x7cu);
        p->x[1][(size_t)((bl * Hkv * Sk + 4) * D)] = INFINITY;
    }
    return tu_write(ctx, p->mem[2], tu_tensor_bytes(v), v->img) == 0 &&
           tu_write(ctx, p->mem[1], tu_tensor_bytes(k), k->img) == 0;
}

static void check_case(tu_tally *t, fa_cl_context *ctx, const fp8_case *fc, uint64_t seed, int reference)
{
    char name[400];
    case_name(fc, name, sizeof name);
    tu_problem p;
    if (tu_problem_init_types(&p, ctx, &fc->c, fc->ty, seed, 0) != 0) {
        tu_expect(t, 0, "%s: setup failed", name);
        return;
    }
    const int64_t nf = fc->c.B * fc->c.Hkv;
    const size_t no = (size_t)(fc->c.B * fc->c.Hq * fc->c.Sq * fc->c.D);
    double *ref_o = (double *)malloc(no * sizeof(double)), *ref_lse = (double *)malloc(p.lse_elems * sizeof(double));
    float *f[2] = {(float *)malloc((size_t)nf * sizeof(float)), (float *)malloc((size_t)nf * sizeof(float))};
    cl_mem fm[2] = {NULL, NULL};
    tu_rng rng;
    tu_rng_seed(&rng, seed * 7 + 1);
    int ok = ref_o && ref_lse && f[0] && f[1];
    for (int i = 0; i < 2 && ok; i++) {
        if (!tu_is_fp8(fc->ty[1 + i]))
            continue;
        make_factors(f[i], nf, fc->ty[1 + i], fc->outliers, i);
        if (fc->specials)
            subnormal_head(&p, i, f[i], &rng);
        ok = dequantise(&p, ctx, 1 + i, fc->ds[i], f[i], fc->outliers, &rng) == 0;
        if (ok && fc->ds[i] != DS_NONE)
            ok = (fm[i] = tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)(fc->ds[i] == DS_HEAD ? nf : 1) * sizeof(float),
                                    f[i])) != NULL;
    }
    if (ok && fc->specials)
        ok = write_specials(&p, ctx, fc);
    if (ok && fc->nan_key) { /* 0x7f: NaN in both formats */
        tu_store_bits(fc->ty[1], p.t[1].img, tu_tensor_index(&p.t[1], 0, 0, 5, 3), 0x7fu);
        p.x[1][5 * (size_t)fc->c.D + 3] = NAN;
        ok = tu_write(ctx, p.mem[1], tu_tensor_bytes(&p.t[1]), p.t[1].img) == 0;
    }
    if (!tu_expect(t, ok, "%s: setup of the fp8 data", name))
        goto done;
    p.desc.k_descale = fc->ds[0], p.desc.v_descale = fc->ds[1];
    int copy = 0;
    const int mma = reference ? 0 : plans_on_mma(ctx, &p.desc, &copy);
    if (want_staged >= 0 && !tu_expect(t, mma && copy == (want_staged ? fc->copy : 0),
                                       "%s: planned %s, fp8 rows staged by copies of %d bytes (want nvidia-mma, %d)",
                                       name, mma ? "nvidia-mma" : "another kernel", copy, want_staged ? fc->copy : 0))
        goto done;
    const size_t nkv = (size_t)(fc->c.B * fc->c.Hkv * fc->c.Sk * fc->c.D);
    for (int i = 1; i < 3; i++)
        round_for(fc->c.dtype, mma == 1 && tu_is_fp8(fc->ty[i]), p.x[i], nkv);
    tu_attention_f64(&p.c, p.x[0], p.x[1], p.x[2], ref_o, ref_lse);
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3], a.lse = p.lse_mem;
    a.k_descale = fm[0], a.v_descale = fm[1];
    tu_run_and_check(t, ctx, &p, &a, ref_o, ref_lse, name, reference);
done:
    for (int i = 0; i < 2; i++) {
        if (fm[i])
            clReleaseMemObject(fm[i]);
        free(f[i]);
    }
    free(ref_o);
    free(ref_lse);
    tu_problem_free(&p);
}

static const fp8_case all_cases[] = {
    /* prefill, causal, tails in both sequences; one factor each */
    {{2, 4, 2, 45, 77, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, E4, E4, F32}, {DS_TENSOR, DS_TENSOR}, 0, 1, 0, 0},
    {{2, 4, 2, 45, 77, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F16, E5, E5, F16}, {DS_TENSOR, DS_TENSOR}, 1, 0, 0, 0},
    /* a factor per (batch, kv head), strided and padded views, head_dim 40, outliers */
    {{2, 4, 4, 33, 70, 40, F16, 0, -1, -1, "CSPC", 0.0f, 1}, {F16, E5, E4, F16}, {DS_HEAD, DS_HEAD}, 1, 0, 0, 0},
    {{2, 4, 4, 33, 70, 40, BF16, 0, -1, -1, "CQSC", 0.0f, 1}, {BF16, E4, E5, BF16}, {DS_HEAD, DS_HEAD}, 0, 0, 0, 0},
    /* decode rows: GQA packing, split-KV; K scaled, V without a factor */
    {{3, 8, 2, 1, 300, 128, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, {BF16, E4, E4, BF16}, {DS_HEAD, DS_NONE}, 1, 0, 0, 0},
    {{2, 8, 2, 2, 257, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F16, E5, E5, F16}, {DS_NONE, DS_TENSOR}, 0, 1, 0, 0},
    /* head_dim 59 (tails of the 4-wide loads), only K in fp8; q in f32 under a bf16 o */
    {{1, 2, 1, 20, 50, 59, F32, 0, 8, 3, "CCCC", 0.0f, 1}, {F32, E5, F32, F32}, {DS_TENSOR, DS_NONE}, 1, 0, 0, 0},
    {{1, 4, 2, 17, 90, 96, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, E4, E5, BF16}, {DS_TENSOR, DS_HEAD}, 1, 0, 0, 0},
};

/* the n cases of list (only case `only`, where >= 0), case i seeded seed + i */
static int check_list(fa_cl_context *ctx, const fp8_case *list, int n, uint64_t seed, int only, int reference)
{
    for (int i = 0; i < n; i++)
        if (only < 0 || only == i)
            check_case(&fp8_tally, ctx, &list[i], seed + (uint64_t)i, reference);
    return 0;
}

static int run_cases(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    return check_list(ctx, all_cases, TU_COUNT(all_cases), 800, -1, 0);
}

/* nvidia-mma's fp8 rows staged raw (cp.async; emulated here) and dequantised by bit operations:
 * both formats into f16 and bf16 tiles, decode (GQA packing) and prefill, tails of seqlen_k in the
 * last block, factors per head, subnormal, NaN and Inf codes; 16-byte copies, 8 at head_dim 40
 * (rows 40 bytes apart), none at an unaligned layout ("P": the synchronous loaders) */
static const fp8_case staged_cases[] = {
    {{2, 8, 2, 1, 77, 64, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, E4, E4, F16}, {DS_HEAD, DS_HEAD}, 0, 0, 1, 16},
    {{2, 8, 2, 1, 77, 64, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, E5, E5, F16}, {DS_HEAD, DS_HEAD}, 0, 0, 1, 16},
    {{2, 8, 2, 3, 131, 128, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, {BF16, E5, E4, BF16}, {DS_HEAD, DS_HEAD}, 0, 0, 1, 16},
    {{2, 8, 2, 3, 131, 128, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, {BF16, E4, E5, BF16}, {DS_TENSOR, DS_NONE}, 1, 0, 0, 16},
    {{1, 4, 2, 70, 83, 40, F16, 1, -1, -1, "CSSC", 0.0f, 1}, {F16, E5, E4, F16}, {DS_TENSOR, DS_HEAD}, 1, 1, 0, 8},
    {{1, 4, 2, 70, 83, 40, BF16, 0, -1, -1, "CSSC", 0.0f, 1}, {BF16, E4, E4, BF16}, {DS_HEAD, DS_HEAD}, 0, 0, 1, 8},
    {{1, 4, 4, 9, 45, 32, F16, 0, -1, -1, "CPPC", 0.0f, 1}, {F16, E4, E5, F16}, {DS_HEAD, DS_TENSOR}, 0, 0, 0, 0},
};

static int run_staged(fa_cl_context *ctx, int argc, char **argv)
{
    want_staged = !(argc > 0 && strcmp(argv[0], "sync") == 0);
    return check_list(ctx, staged_cases, TU_COUNT(staged_cases), 900, argc > 0 && want_staged ? atoi(argv[0]) : -1, 0);
}

static int run_reference(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    return check_list(ctx, all_cases, TU_COUNT(all_cases), 800, -1, 1);
}

static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    static const fp8_case tiny[] = {
        {{2, 2, 1, 5, 21, 8, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, E4, E5, F32}, {DS_HEAD, DS_TENSOR}, 1, 0, 0, 0},
        {{2, 4, 2, 1, 40, 12, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, E5, E4, F16}, {DS_TENSOR, DS_HEAD}, 0, 0, 0, 0},
        /* nvidia-mma's staged rows (head_dim 16: 16-byte copies), a tail of keys, special codes */
        {{1, 4, 2, 1, 21, 16, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, E5, E4, F16}, {DS_HEAD, DS_HEAD}, 0, 0, 1, 16},
    };
    want_staged = argc > 1 && strcmp(argv[1], "staged") == 0 ? 1 : -1; /* "tiny 2 staged": nvidia-mma's */
    return check_list(ctx, tiny, TU_COUNT(tiny), 80, argc > 0 ? atoi(argv[0]) : -1, 0);
}

/* ---- serving: a paged fp8 cache, appended to and decoded against ----------------------------- */

/* "serving [page [staged|sync]]": pages of 16 rows (or `page`); with staged / sync, nvidia-mma must
 * plan (emulated here) with the fp8 rows staged (16-byte copies) / through its synchronous loaders */
static int run_serving(fa_cl_context *ctx, int argc, char **argv)
{
    tu_tally *t = &fp8_tally;
    const int PAGE = argc > 0 ? atoi(argv[0]) : 16;
    const int want = argc > 1 ? strcmp(argv[1], "staged") == 0 ? 16 : 0 : -1;
    if (PAGE < 1 || PAGE > 64)
        return 1;
    enum { B = 2, HQ = 4, HKV = 2, D = 64, SQ = 2, NEW = 2 };
    const int PER_SEQ = (64 + PAGE - 1) / PAGE, PAGES = B * PER_SEQ + 1, CAP = PER_SEQ * PAGE;
    int *table = malloc((size_t)PAGES * sizeof(int));
    const int lens[B] = {37, 50};
    const size_t pool = (size_t)PAGES * PAGE * HKV * D, nq = (size_t)B * HQ * SQ * D, nnew = (size_t)B * NEW * HKV * D;
    unsigned char *kp = malloc(pool), *vp = malloc(pool), *kp_out = malloc(pool);
    uint16_t *q16 = malloc(nq * 2), *o16 = malloc(nq * 2), *kn16 = malloc(nnew * 2), *vn16 = malloc(nnew * 2);
    float *kx = malloc((size_t)HKV * CAP * D * sizeof(float)), *vx = malloc((size_t)HKV * CAP * D * sizeof(float));
    float *qx = malloc((size_t)HQ * SQ * D * sizeof(float)), lse[B * HQ * SQ];
    double *ref_o = malloc((size_t)HQ * SQ * D * sizeof(double)), ref_lse[HQ * SQ];
    float kf[B * HKV], vf[1] = {0.043f};
    if (!table || !kp || !vp || !kp_out || !q16 || !o16 || !kn16 || !vn16 || !kx || !vx || !qx || !ref_o)
        return 1;
    tu_rng rng;
    tu_rng_seed(&rng, 0x5e7);
    for (int i = 0; i < PAGES; i++) /* the pages in a shuffled order (one left over) */
        table[i] = i;
    for (int i = PAGES - 1; i > 0; i--) {
        const int j = (int)(tu_rng_next(&rng) % (uint64_t)(i + 1)), x = table[i];
        table[i] = table[j], table[j] = x;
    }
    for (size_t i = 0; i < pool; i++) {
        kp[i] = (unsigned char)tu_fp8_nearest(E4, 3.0f * tu_rng_nonzero(&rng));
        vp[i] = (unsigned char)tu_fp8_nearest(E5, 20.0f * tu_rng_nonzero(&rng));
    }
    for (size_t i = 0; i < nq; i++)
        q16[i] = tu_f32_to_f16(tu_rng_nonzero(&rng));
    for (size_t i = 0; i < nnew; i++) { /* some past e4m3's range after the factor: they saturate */
        kn16[i] = tu_f32_to_f16((i % 97 == 5 ? 900.0f : 2.0f) * tu_rng_nonzero(&rng));
        vn16[i] = tu_f32_to_f16(tu_rng_nonzero(&rng));
    }
    for (int i = 0; i < B * HKV; i++)
        kf[i] = 0.61f + 0.23f * (float)i;
    cl_mem m[11] = {tu_buffer(ctx, CL_MEM_READ_ONLY, nq * 2, q16), tu_buffer(ctx, CL_MEM_READ_WRITE, pool, kp),
                    tu_buffer(ctx, CL_MEM_READ_WRITE, pool, vp), tu_buffer(ctx, CL_MEM_READ_WRITE, nq * 2, NULL),
                    tu_buffer(ctx, CL_MEM_READ_WRITE, sizeof lse, NULL),
                    tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof lens, lens),
                    tu_buffer(ctx, CL_MEM_READ_ONLY, (size_t)B * PER_SEQ * sizeof(int), table),
                    tu_buffer(ctx, CL_MEM_READ_ONLY, nnew * 2, kn16), tu_buffer(ctx, CL_MEM_READ_ONLY, nnew * 2, vn16),
                    tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof kf, kf), tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof vf, vf)};
    int ok = 1;
    for (int i = 0; i < 11; i++)
        ok = ok && m[i];
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, B, HQ, SQ, CAP, D, F16);
    d.heads_kv = HKV, d.causal = 1, d.page_size = PAGE, d.num_pages = PAGES, d.pages_per_seq = PER_SEQ;
    d.kv_seqlens = 1, d.seqlen_new = NEW;
    d.k_type = FA_CL_STORAGE_E4M3, d.v_type = FA_CL_STORAGE_E5M2;
    d.k_descale = DS_HEAD, d.v_descale = DS_TENSOR;
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = m[0], a.k = m[1], a.v = m[2], a.o = m[3], a.lse = m[4], a.cache_seqlens = m[5], a.block_table = m[6];
    a.k_new = m[7], a.v_new = m[8], a.k_descale = m[9], a.v_descale = m[10];
    fa_cl_plan *plan = NULL;
    fa_cl_plan_info info;
    fa_cl_status st = ok ? fa_cl_plan_create(ctx, &d, &plan) : FA_CL_ERROR_OUT_OF_MEMORY;
    ok = tu_expect(t, st == FA_CL_SUCCESS, "paged fp8 cache: plan (%s)", st ? fa_cl_last_error(ctx) : "ok");
    int mma = 0;
    if (ok && fa_cl_plan_get_info(plan, &info) == FA_CL_SUCCESS) {
        mma = strcmp(info.kernel, "nvidia-mma") == 0 ? 1 + (staged_copy(plan) > 0) : 0;
        printf("  paged fp8 cache, pages of %d: kernel %s%s, splits %d, gqa_pack %d\n", PAGE, info.kernel,
               mma == 2 ? " (fp8 rows staged)" : "", info.splits, info.gqa_pack);
        if (want >= 0)
            ok = tu_expect(t, mma && staged_copy(plan) == want, "paged fp8 cache: nvidia-mma with fp8 rows staged by "
                           "copies of %d bytes (want %d)", mma ? staged_copy(plan) : -1, want);
    }
    st = ok ? fa_cl_plan_run(plan, &a) : st;
    ok = ok && tu_expect(t, st == FA_CL_SUCCESS, "paged fp8 cache: run (%s)", st ? fa_cl_last_error(ctx) : "ok") &&
         tu_read(ctx, m[1], pool, kp_out) == 0 && tu_read(ctx, m[2], pool, vp) == 0 &&
         tu_read(ctx, m[3], nq * 2, o16) == 0 && tu_read(ctx, m[4], sizeof lse, lse) == 0;
    /* the appended rows: the code nearest x / factor (float32), x the f16 new value */
    int bad_codes = 0, saturated = 0, changed = 0;
    unsigned char *appended = calloc(pool, 1);
    ok = ok && appended;
    for (int b = 0; b < B && ok; b++)
        for (int i = 0; i < NEW; i++)
            for (int h = 0; h < HKV; h++)
                for (int c = 0; c < D; c++) {
                    const int pos = lens[b] + i;
                    const size_t at = (((size_t)table[b * PER_SEQ + pos / PAGE] * PAGE + (size_t)(pos % PAGE)) * HKV +
                                       (size_t)h) * D + (size_t)c;
                    const size_t src = (((size_t)b * NEW + (size_t)i) * HKV + (size_t)h) * D + (size_t)c;
                    const unsigned wk = tu_fp8_nearest(E4, tu_f16_to_f32(kn16[src]) / kf[b * HKV + h]);
                    const unsigned wv = tu_fp8_nearest(E5, tu_f16_to_f32(vn16[src]) / vf[0]);
                    saturated += (wk & 0x7fu) == 0x7eu;
                    appended[at] = 1;
                    if ((kp_out[at] != wk || vp[at] != wv) && bad_codes++ < 4)
                        printf("  seq %d new row %d head %d col %d: k 0x%02x (want 0x%02x), v 0x%02x (want 0x%02x)\n", b,
                               i, h, c, kp_out[at], wk, vp[at], wv);
                }
    for (size_t i = 0; i < pool && ok; i++) /* nothing else of the pool changed */
        changed += !appended[i] && kp_out[i] != kp[i];
    tu_expect(t, ok && bad_codes == 0, "appended rows rounded to fp8 (e4m3 with factors per head, %d saturated; e5m2): "
              "%d wrong codes", saturated, bad_codes);
    tu_expect(t, ok && changed == 0, "only the appended rows of the k pool changed (%d other bytes did)", changed);
    free(appended);
    /* each sequence's attention against the float64 oracle on the dequantised cache (new rows included) */
    int bad = 0;
    double worst = 0.0;
    for (int b = 0; b < B && ok; b++) {
        const int L = lens[b] + NEW;
        for (int h = 0; h < HKV; h++)
            for (int j = 0; j < L; j++)
                for (int c = 0; c < D; c++) {
                    const size_t at = (((size_t)table[b * PER_SEQ + j / PAGE] * PAGE + (size_t)(j % PAGE)) * HKV +
                                       (size_t)h) * D + (size_t)c;
                    kx[((size_t)h * L + (size_t)j) * D + (size_t)c] = (float)tu_fp8_value(E4, kp_out[at]) * kf[b * HKV + h];
                    vx[((size_t)h * L + (size_t)j) * D + (size_t)c] = (float)tu_fp8_value(E5, vp[at]) * vf[0];
                }
        round_for(F16, mma == 1, kx, (size_t)HKV * L * D);
        round_for(F16, mma == 1, vx, (size_t)HKV * L * D);
        for (size_t i = 0; i < (size_t)HQ * SQ * D; i++)
            qx[i] = tu_f16_to_f32(q16[(size_t)b * HQ * SQ * D + i]);
        const tu_case c = {1, HQ, HKV, SQ, L, D, F16, 1, -1, -1, "CCCC", 0.0f, 1};
        tu_attention_f64(&c, qx, kx, vx, ref_o, ref_lse);
        for (size_t i = 0; i < (size_t)HQ * SQ * D; i++) {
            const double got = tu_f16_to_f32(o16[(size_t)b * HQ * SQ * D + i]);
            worst = fmax(worst, fabs(got - ref_o[i]));
            bad += !fa_cl_tolerance_ok(F16, got, ref_o[i]);
        }
        for (int i = 0; i < HQ * SQ; i++)
            bad += !fa_cl_tolerance_lse_ok(lse[b * HQ * SQ + i], ref_lse[i]);
    }
    tu_expect(t, ok && bad == 0, "decoding against the paged fp8 cache vs the oracle: %d out of the f16 bar (max|err| %.2e)",
              bad, worst);
    fa_cl_plan_release(plan);
    for (int i = 0; i < 11; i++)
        if (m[i])
            clReleaseMemObject(m[i]);
    free(table), free(kp), free(vp), free(kp_out), free(q16), free(o16), free(kn16), free(vn16), free(kx), free(vx), free(qx);
    free(ref_o);
    return 0;
}

/* ---- invalid ------------------------------------------------------------------------------------ */

/* A plan of desc on a context made with FA_CL_TUNE / FA_CL_KERNEL_VARIANT set as given: its status,
 * the kernel it chose (or the message) */
static fa_cl_status plan_with_env(const fa_cl_attention_desc *d, const char *tune, const char *variant, char *what,
                                  size_t n)
{
    setenv("FA_CL_TUNE", tune, 1);
    setenv("FA_CL_KERNEL_VARIANT", variant, 1);
    fa_cl_context *c = NULL;
    fa_cl_status st = fa_cl_context_create_default(&c);
    unsetenv("FA_CL_TUNE");
    unsetenv("FA_CL_KERNEL_VARIANT");
    if (st != FA_CL_SUCCESS) {
        snprintf(what, n, "context: %s", fa_cl_last_error(NULL));
        return st;
    }
    fa_cl_plan *plan = NULL;
    st = fa_cl_plan_create(c, d, &plan);
    fa_cl_plan_info info;
    if (st == FA_CL_SUCCESS && fa_cl_plan_get_info(plan, &info) == FA_CL_SUCCESS)
        snprintf(what, n, "%s", info.kernel);
    else
        snprintf(what, n, "%s", fa_cl_last_error(c));
    fa_cl_plan_release(plan);
    fa_cl_context_release(c);
    return st;
}

static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &fp8_tally;
    char msg[400];
    const struct { fa_cl_storage q, k, o; fa_cl_descale kd, vd; int append; fa_cl_status want; const char *says; } descs[] = {
        {FA_CL_STORAGE_E4M3, 0, 0, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.q_type"},
        {0, 0, FA_CL_STORAGE_E5M2, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.o_type"},
        {0, 0, 0, DS_TENSOR, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.k_descale is set"},  /* f16 k */
        {0, FA_CL_STORAGE_E4M3, 0, 0, DS_HEAD, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.v_descale"},
        {0, FA_CL_STORAGE_E4M3, 0, (fa_cl_descale)3, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "fa_cl_descale"},
        {0, FA_CL_STORAGE_E5M2, 0, DS_HEAD, 0, 1, FA_CL_SUCCESS, ""}, /* appending into an fp8 cache */
        {0, FA_CL_STORAGE_Q8_0, 0, 0, 0, 1, FA_CL_ERROR_UNSUPPORTED, "seqlen_new"},
    };
    for (int i = 0; i < TU_COUNT(descs); i++) {
        fa_cl_attention_desc d;
        fa_cl_attention_desc_init(&d, 2, 4, 1, 64, 64, F16);
        d.q_type = descs[i].q, d.k_type = descs[i].k, d.o_type = descs[i].o;
        d.k_descale = descs[i].kd, d.v_descale = descs[i].vd;
        if (descs[i].append)
            d.kv_seqlens = 1, d.seqlen_new = 1;
        const fa_cl_status st = fa_cl_attention_desc_validate(&d, msg, sizeof msg);
        tu_expect(t, st == descs[i].want && strstr(msg, descs[i].says), "descriptor %d: %s: %s", i,
                  fa_cl_status_string(st), msg);
    }
    /* the factors' buffers: missing, short, given where no mode says so */
    const tu_case c = {2, 4, 2, 8, 24, 32, F32, 0, -1, -1, "CCCC", 0.0f, 0};
    const fa_cl_dtype ty[4] = {F32, E4, E5, F32};
    tu_problem p;
    if (tu_problem_init_types(&p, ctx, &c, ty, 3, 0) != 0)
        return 1;
    const float ones[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    cl_mem small = tu_buffer(ctx, CL_MEM_READ_ONLY, 2, ones), four = tu_buffer(ctx, CL_MEM_READ_ONLY, 16, ones);
    const struct { fa_cl_descale kd, vd; cl_mem km, vm; fa_cl_status want; const char *says; } runs[] = {
        {DS_TENSOR, DS_NONE, NULL, NULL, FA_CL_ERROR_INVALID_ARGUMENT, "args.k_descale is NULL"},
        {DS_TENSOR, DS_NONE, small, NULL, FA_CL_ERROR_BUFFER_TOO_SMALL, "k_descale"},
        {DS_NONE, DS_HEAD, NULL, small, FA_CL_ERROR_BUFFER_TOO_SMALL, "v_descale"}, /* 4 factors: 16 bytes */
        {DS_TENSOR, DS_NONE, four, four, FA_CL_ERROR_INVALID_ARGUMENT, "args.v_descale is given"},
        {DS_HEAD, DS_HEAD, four, four, FA_CL_SUCCESS, ""},
    };
    for (int i = 0; i < TU_COUNT(runs) && small && four; i++) {
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3];
        a.k_descale = runs[i].km, a.v_descale = runs[i].vm;
        p.desc.k_descale = runs[i].kd, p.desc.v_descale = runs[i].vd;
        const fa_cl_status st = fa_cl_attention_run(ctx, &p.desc, &a);
        const char *e = st == FA_CL_SUCCESS ? "" : fa_cl_last_error(ctx);
        tu_expect(t, st == runs[i].want && strstr(e, runs[i].says), "factor buffers %d: %s: %s", i,
                  fa_cl_status_string(st), e);
    }
    /* args of a caller built before the factors' fields: accepted (its factors NULL), a shorter one not */
    const size_t old_size = offsetof(fa_cl_forward_args, k_descale);
    for (int i = 0; i < 3; i++) {
        fa_cl_forward_args a;
        fa_cl_forward_args_init(&a);
        a.struct_size = old_size - (i == 2);
        a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3];
        p.desc.k_descale = i == 1 ? DS_TENSOR : DS_NONE, p.desc.v_descale = DS_NONE;
        const fa_cl_status st = fa_cl_attention_run(ctx, &p.desc, &a);
        const fa_cl_status want = i == 0 ? FA_CL_SUCCESS : FA_CL_ERROR_INVALID_ARGUMENT;
        tu_expect(t, st == want && (i != 1 || strstr(fa_cl_last_error(ctx), "args.k_descale is NULL")),
                  "args.struct_size %zu%s: %s: %s", a.struct_size, i == 1 ? " with desc.k_descale" : "",
                  fa_cl_status_string(st), st ? fa_cl_last_error(ctx) : "ok");
    }
    /* the backward takes no fp8 */
    fa_cl_backward_plan *bp = NULL;
    fa_cl_status st = fa_cl_backward_plan_create(ctx, &p.desc, &bp);
    tu_expect(t, st == FA_CL_ERROR_UNSUPPORTED, "backward of fp8 k/v: %s: %s", fa_cl_status_string(st),
              st ? fa_cl_last_error(ctx) : "planned");
    fa_cl_backward_plan_release(bp);
    /* nvidia-mma takes fp8 K/V (q and o in f16/bf16); nvidia-tf32x3 and nvidia-wgmma decline it: the
     * planner goes on to another family, and forcing one is refused naming the families that take it */
    char what[400];
    p.desc.seqlen_q = 1, p.desc.k_descale = DS_TENSOR, p.desc.v_descale = DS_NONE;
    const char *emulate = "nvidia-mma:emulate=1,nvidia-tf32x3:emulate=1";
    st = plan_with_env(&p.desc, emulate, "", what, sizeof what); /* f32: nvidia-tf32x3's dtype */
    tu_expect(t, st == FA_CL_SUCCESS && strncmp(what, "portable", 8) == 0,
              "f32 q/o, tensor-core families emulated: fp8 K/V planned on %s", what);
    st = plan_with_env(&p.desc, emulate, "nvidia-tf32x3", what, sizeof what);
    tu_expect(t, st == FA_CL_ERROR_UNSUPPORTED && strstr(what, "fp8") && strstr(what, "nvidia-mma"),
              "FA_CL_KERNEL_VARIANT=nvidia-tf32x3 on fp8 K/V: %s: %s", fa_cl_status_string(st), what);
    p.desc.dtype = F16; /* q and o in f16, what nvidia-mma takes */
    st = plan_with_env(&p.desc, emulate, "", what, sizeof what);
    tu_expect(t, st == FA_CL_SUCCESS && strcmp(what, "nvidia-mma") == 0,
              "f16 q/o, tensor-core families emulated: fp8 K/V planned on %s", what);
    /* Hopper (the planner alone): nvidia-wgmma declines fp8, nvidia-mma takes the plan */
    fa_cl__views hv;
    fa_cl_attention_desc hd;
    fa_cl_attention_desc_init(&hd, 1, 1, 4096, 4096, 128, F16);
    hd.k_type = hd.v_type = FA_CL_STORAGE_E4M3;
    if (fa_cl__desc_resolve(&hd, &hv, msg, sizeof msg) == FA_CL_SUCCESS) {
        const fa_cl__device_traits hopper = {.is_gpu = 1, .vendor = FA_CL_VENDOR_NVIDIA, .local_mem_size = 228 * 1024,
                                             .max_work_group = 1024, .arch_major = 9};
        for (int forced = 0; forced < 2; forced++) {
            fa_cl__limits lim;
            fa_cl__limits_for_device(&hopper, &lim);
            lim.forced_variant = forced ? FA_CL_KERNEL_NVIDIA_WGMMA : 0;
            fa_cl__tile_request req;
            memset(&req, 0, sizeof req);
            req.head_dim = 128, req.dtype = F16, req.seqlen_q = req.seqlen_k = req.row_keys = 4096;
            req.features = FA_CL_FEAT_KV_FP8;
            req.views = &hv;
            fa_cl__tiles tl;
            msg[0] = '\0';
            st = fa_cl__plan_tiles(&lim, &req, &tl, msg, sizeof msg);
            tu_expect(t, forced ? st == FA_CL_ERROR_UNSUPPORTED && strstr(msg, "fp8")
                                : st == FA_CL_SUCCESS && tl.variant == FA_CL_KERNEL_NVIDIA_MMA,
                      "Hopper, fp8 K/V%s: %s %s", forced ? ", nvidia-wgmma forced" : "", fa_cl_status_string(st),
                      st ? msg : tl.kernel);
        }
    }
    if (small)
        clReleaseMemObject(small);
    if (four)
        clReleaseMemObject(four);
    tu_problem_free(&p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "codes") == 0) /* the check kernel's directory holds only what it builds on */
        tu_kernel_dir_default(FA_CL_CHECK_KERNEL_DIR);
    const tu_subset subsets[] = {
        {"codes", run_codes},     {"cases", run_cases},     {"reference", run_reference},
        {"serving", run_serving}, {"invalid", run_invalid}, {"tiny", run_tiny},   {"staged", run_staged},
    };
    return tu_main(&fp8_tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
