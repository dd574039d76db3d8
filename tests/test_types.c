/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Storage types (include/fa_cl.h "Storage types"): q, k, v and o each in its own type among f32,
 * f16 and bf16, and K/V in ggml's q8_0 blocks, against the float64 oracle on the values as stored
 * (q8_0: dequantised on the host, so only the attention's own error counts), at o's accuracy bar
 * (tests/tolerance.h). Subsets:
 *   cases      the fused path (the planner's kernel, or FA_CL_KERNEL_VARIANT; CTest also runs it
 *              with FA_CL_TUNE splits and kv_chunk)
 *   reference  fa_cl_reference_run on the same cases
 *   invalid    what bad storage types get: a status and a message naming the field
 *   tiny N     case N of a tiny set, one per process (oclgrind)
 *   tensor_core  q and o in f32 / bf16 over 16-bit or q8_0 K/V, asserted to plan on a tensor-core
 *              family (nvidia-mma emulated on PoCL: FA_CL_TUNE nvidia-mma:emulate=1); a skip where
 *              the planner does not walk nvidia-mma
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_util.h"

static tu_tally types_tally = {"types", 0, 0};

typedef struct type_case {
    tu_case c;          /* c.dtype: the descriptor's dtype */
    fa_cl_dtype ty[4];  /* q, k, v, o storage (TU_Q8_0 for k and v) */
    int sinks;          /* with attention sinks (a modifier on top) */
} type_case;

static void case_name(const type_case *tc, char *buf, size_t size)
{
    char c[256];
    tu_case_format(&tc->c, c, sizeof c);
    snprintf(buf, size, "%s q=%s k=%s v=%s o=%s%s", c, tu_dtype_name(tc->ty[0]), tu_dtype_name(tc->ty[1]),
             tu_dtype_name(tc->ty[2]), tu_dtype_name(tc->ty[3]), tc->sinks ? " sinks" : "");
}

/* The type the tensor-core kernels compute tc in (src/plan/plan_decide.c compute_dtype): K's and V's
 * where they are one 16-bit type; q8_0: q's if 16-bit, else the dtype if 16-bit, else f16; other
 * mixes: the dtype (the portable kernels, which compute in f32, take them). */
static fa_cl_dtype tensor_core_type(const type_case *tc)
{
    const fa_cl_dtype k = tc->ty[1], q = tc->ty[0];
    if (k != tc->ty[2])
        return tc->c.dtype;
    if (k == FA_CL_F16 || k == FA_CL_BF16)
        return k;
    if ((int)k == (int)TU_Q8_0)
        return q != FA_CL_F32 ? q : tc->c.dtype != FA_CL_F32 ? tc->c.dtype : FA_CL_F16;
    return tc->c.dtype;
}

/* One case against the oracle; the plan's kernel family (NULL where none ran). */
static const char *check_case(tu_tally *t, fa_cl_context *ctx, const type_case *tc, uint64_t seed, int reference)
{
    const char *kernel = NULL;
    char name[400];
    case_name(tc, name, sizeof name);
    tu_problem p;
    if (tu_problem_init_types(&p, ctx, &tc->c, tc->ty, seed, 0) != 0) {
        tu_expect(t, 0, "%s: setup failed", name);
        return NULL;
    }
    p.tc_compute = 1 + (int)tensor_core_type(tc);
    const size_t no = (size_t)(tc->c.B * tc->c.Hq * tc->c.Sq * tc->c.D), hq = (size_t)tc->c.Hq;
    double *ref_o = (double *)malloc(no * sizeof(double)), *ref_lse = (double *)malloc(p.lse_elems * sizeof(double));
    float *sinks = (float *)malloc(hq * sizeof(float));
    cl_mem sink_mem = NULL;
    if (!ref_o || !ref_lse || !sinks) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto done;
    }
    for (size_t h = 0; h < hq; h++)
        sinks[h] = 0.25f * (float)(h % 5) - 0.5f;
    const tu_mods mods = {0.0, NULL, tc->sinks ? sinks : NULL, NULL};
    tu_attention_f64_mods(&p.c, &mods, p.x[0], p.x[1], p.x[2], ref_o, ref_lse);
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3], a.lse = p.lse_mem;
    if (tc->sinks) {
        sink_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, hq * sizeof(float), sinks);
        if (!sink_mem) {
            tu_expect(t, 0, "%s: buffers failed", name);
            goto done;
        }
        p.desc.sinks = 1;
        a.sinks = sink_mem;
    }
    tu_run_and_check(t, ctx, &p, &a, ref_o, ref_lse, name, reference);
    kernel = p.kernel;
done:
    if (sink_mem)
        clReleaseMemObject(sink_mem);
    free(sinks);
    free(ref_o);
    free(ref_lse);
    tu_problem_free(&p);
    return kernel;
}

#define F32 FA_CL_F32
#define F16 FA_CL_F16
#define BF16 FA_CL_BF16
#define Q8 TU_Q8_0
static const type_case all_cases[] = {
    /* ggml's common case: q and o f32, k and v f16; causal, GQA, a head_dim tail, strided views */
    {{2, 4, 2, 37, 53, 40, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    {{2, 4, 2, 37, 53, 40, F32, 0, 8, 4, "SPCS", 0.0f, 1}, {F32, BF16, F16, F32}, 0},
    /* every tensor different; o in f16 (its bar), window */
    {{1, 3, 3, 64, 80, 64, F16, 0, 16, 16, "PCSP", 0.8f, 1}, {BF16, F32, F16, F16}, 0},
    /* q8_0 K/V: prefill with causal and tails in the sequences, d = 64 and 128 */
    {{2, 4, 2, 45, 77, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, Q8, Q8, F32}, 0},
    {{1, 4, 4, 70, 70, 128, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, Q8, Q8, F16}, 0},
    /* q8_0 K with f16 V, o in bf16 */
    {{2, 2, 1, 33, 100, 32, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F16, Q8, F16, BF16}, 0},
    /* decode rows (GQA packing, split-KV) against a q8_0 cache, with sinks */
    {{2, 8, 2, 1, 300, 128, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, Q8, Q8, F16}, 1},
    {{3, 4, 1, 4, 129, 64, F32, 1, -1, -1, "CHHC", 0.0f, 1}, {F32, Q8, Q8, F32}, 0},
    /* what nvidia-mma takes (q and o in the dtype, K and V q8_0): decode rows and a bf16 prefill */
    {{2, 8, 2, 1, 300, 128, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, Q8, Q8, F16}, 0},
    {{2, 8, 2, 2, 300, 64, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, {BF16, Q8, Q8, BF16}, 0}, /* 8 rows: FA_KEYS_M */
    {{1, 4, 2, 50, 90, 64, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, {BF16, Q8, Q8, BF16}, 0},
    /* rows of 34 bytes (head_dim 32): nvidia-mma's synchronous dequantising loads */
    {{2, 2, 1, 33, 100, 32, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, Q8, Q8, F16}, 0},
    /* head_dim 512, beyond the tensor-core kernels (the portable ones take it): ggml's f32 q/o with
     * f16 K/V, and q8_0 K/V under bf16 q/o, the form nvidia-mma takes up to 256 */
    {{1, 4, 2, 41, 70, 512, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    {{1, 2, 1, 30, 65, 512, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, {BF16, Q8, Q8, BF16}, 0},
};

/* What the tensor-core forward kernels take besides all-16-bit data (FA_CL_FEAT_QO_TYPES): q and o
 * in f32 or bf16 over f16, bf16 or q8_0 K/V: prefill (16-byte rows: asynchronous K/V copies; a
 * head_dim tail and strided or padded views: loads), decode rows (GQA-packed, key slices, q8_0's
 * transposed 8-row products), causal, a window; CTest adds split-KV and long rows' chunks. */
static const type_case tensor_core_cases[] = {
    /* ggml's common case: q and o f32, K/V f16 (the descriptor's dtype either) */
    {{2, 4, 2, 70, 90, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    {{2, 8, 2, 1, 300, 128, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    {{1, 4, 4, 33, 100, 40, F32, 0, 16, 0, "SCCP", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    {{3, 4, 1, 5, 129, 128, F32, 1, -1, -1, "PCCS", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    /* q bf16, o f32 over bf16 K/V; q f16, o bf16 over f16 */
    {{2, 4, 2, 50, 77, 64, BF16, 1, -1, -1, "CCCC", 0.0f, 1}, {BF16, BF16, BF16, F32}, 0},
    {{1, 4, 2, 33, 33, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, BF16, BF16, F32}, 0}, /* row 0: one key */
    {{2, 8, 2, 2, 200, 128, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, {BF16, BF16, BF16, F32}, 0},
    {{1, 2, 2, 40, 60, 96, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F16, F16, F16, BF16}, 0},
    /* q f32 over q8_0 K/V (f16 products): prefill, decode (8 rows: the transposed products), o f16 */
    {{2, 4, 2, 45, 77, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, Q8, Q8, F32}, 0},
    {{2, 8, 2, 1, 300, 128, F32, 0, -1, -1, "CCCC", 0.0f, 1}, {F32, Q8, Q8, F32}, 0},
    {{2, 8, 2, 4, 160, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, Q8, Q8, F16}, 0},
    /* prefill that Hopper plans on nvidia-wgmma (more than 64 rows, head_dim 97..256): q converted
     * by the computing warpgroups (its producer copying K/V by cp.async; at 256 no producer), and a
     * bf16 q with an f32 o (copies by TMA, the persistent kernel, o's pairs) */
    {{1, 2, 1, 200, 260, 128, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    {{1, 2, 1, 150, 200, 128, BF16, 0, -1, -1, "CCCC", 0.0f, 1}, {BF16, BF16, BF16, F32}, 0},
    {{1, 2, 1, 100, 150, 256, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
};

/* tensor_core_cases, each asserted to plan on a tensor-core family (a fallback to the portable
 * kernels fails it), where the planner walks nvidia-mma (else a skip) */
static int run_tensor_core(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    if (tu_tensor_core_skip(ctx))
        return TU_EXIT_SKIP;
    for (int i = 0; i < TU_COUNT(tensor_core_cases); i++) {
        const type_case *tc = &tensor_core_cases[i];
        const char *kernel = check_case(&types_tally, ctx, tc, 400 + (uint64_t)i, 0);
        char name[400];
        case_name(tc, name, sizeof name);
        tu_expect(&types_tally, tu_tensor_core_kernel(kernel), "%s: planned on %s (must be a tensor-core family)", name,
                  kernel ? kernel : "(none)");
    }
    return 0;
}

static int run_cases(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(all_cases); i++)
        check_case(&types_tally, ctx, &all_cases[i], 300 + (uint64_t)i, 0);
    return 0;
}

static int run_reference(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(all_cases); i++)
        check_case(&types_tally, ctx, &all_cases[i], 300 + (uint64_t)i, 1);
    return 0;
}

/* The tiny cases oclgrind runs (one per process). */
static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    static const type_case tiny[] = {
        {{1, 2, 1, 9, 21, 8, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, BF16, F32}, 0},
        {{2, 2, 1, 3, 40, 32, F16, 0, -1, -1, "CCCC", 0.0f, 1}, {F16, Q8, Q8, F32}, 1},
        /* nvidia-mma's staging ring of q8_0 rows (nvidia-mma:emulate=1): 4-byte copies, 3 blocks */
        {{1, 2, 1, 5, 150, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F16, Q8, Q8, F16}, 0},
        /* nvidia-mma's converting Q loads (FA_Q_CONVERT) and o's own stores: a head_dim tail with
         * loads (3); 16-byte rows, K/V copied asynchronously, o's f32 pairs (4) */
        {{1, 2, 1, 9, 40, 40, F32, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
        {{1, 2, 1, 5, 70, 64, F16, 1, -1, -1, "CCCC", 0.0f, 1}, {F32, F16, F16, F32}, 0},
    };
    const int only = argc > 0 ? atoi(argv[0]) : -1;
    for (int i = 0; i < TU_COUNT(tiny); i++)
        if (only < 0 || only == i)
            check_case(&types_tally, ctx, &tiny[i], 9 + (uint64_t)i, 0);
    return 0;
}

/* what bad storage types get */
static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &types_tally;
    char msg[300];
    const struct { int64_t d; fa_cl_storage q, k, o; size_t k_off; int64_t k_s2; fa_cl_status want; const char *says; } bad[] = {
        {64, FA_CL_STORAGE_Q8_0, 0, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.q_type"},   /* q8_0 is for k, v */
        {64, 0, 0, FA_CL_STORAGE_Q8_0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.o_type"},
        {64, 0, (fa_cl_storage)9, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.k_type"},
        {40, 0, FA_CL_STORAGE_Q8_0, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "whole blocks"}, /* head_dim 40 */
        {64, 0, FA_CL_STORAGE_Q8_0, 0, 16, 0, FA_CL_ERROR_INVALID_ARGUMENT, "k_offset"},    /* half a block in */
        {64, 0, FA_CL_STORAGE_Q8_0, 0, 0, 80, FA_CL_ERROR_INVALID_ARGUMENT, "k_stride"},    /* rows 80 apart */
    };
    for (int i = 0; i < TU_COUNT(bad); i++) {
        fa_cl_attention_desc d;
        fa_cl_attention_desc_init(&d, 1, 4, 8, 8, bad[i].d, FA_CL_F16);
        d.q_type = bad[i].q, d.k_type = bad[i].k, d.o_type = bad[i].o;
        d.k_offset = bad[i].k_off;
        if (bad[i].k_s2)
            d.k_stride[0] = 4 * 8 * bad[i].k_s2, d.k_stride[1] = 8 * bad[i].k_s2, d.k_stride[2] = bad[i].k_s2;
        fa_cl_status st = fa_cl_attention_desc_validate(&d, msg, sizeof msg);
        tu_expect(t, st == bad[i].want && strstr(msg, bad[i].says), "bad types %d: %s: %s", i, fa_cl_status_string(st),
                  msg);
    }
    /* appending needs k and v in dtype */
    fa_cl_attention_desc d;
    fa_cl_attention_desc_init(&d, 1, 4, 1, 64, 64, FA_CL_F16);
    d.kv_seqlens = 1, d.seqlen_new = 1, d.k_type = FA_CL_STORAGE_Q8_0;
    fa_cl_status st = fa_cl_attention_desc_validate(&d, msg, sizeof msg);
    tu_expect(t, st == FA_CL_ERROR_UNSUPPORTED && strstr(msg, "seqlen_new"), "append into q8_0: %s: %s",
              fa_cl_status_string(st), msg);
    /* a q8_0 buffer one byte short of its blocks */
    const tu_case c = {1, 2, 2, 8, 8, 32, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 0};
    const fa_cl_dtype ty[4] = {F32, Q8, Q8, F32};
    tu_problem p;
    if (tu_problem_init_types(&p, ctx, &c, ty, 1, 0) != 0)
        return 1;
    cl_mem short_k = tu_buffer(ctx, CL_MEM_READ_ONLY, 2 * 8 * 34 - 1, NULL);
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = p.mem[0], a.k = short_k, a.v = p.mem[2], a.o = p.mem[3];
    st = short_k ? fa_cl_attention_run(ctx, &p.desc, &a) : FA_CL_ERROR_OUT_OF_MEMORY;
    tu_expect(t, st == FA_CL_ERROR_BUFFER_TOO_SMALL && strstr(fa_cl_last_error(ctx), "543"),
              "q8_0 k one byte short: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    if (short_k)
        clReleaseMemObject(short_k);
    tu_problem_free(&p);
    return 0;
}

int main(int argc, char **argv)
{
    const tu_subset subsets[] = {
        {"cases", run_cases}, {"reference", run_reference}, {"invalid", run_invalid}, {"tiny", run_tiny},
        {"tensor_core", run_tensor_core},
    };
    return tu_main(&types_tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
