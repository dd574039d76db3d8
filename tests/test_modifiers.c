/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Score modifiers (include/fa_cl.h "Score modifiers"): softcap, ALiBi slopes and attention sinks,
 * alone and together, with causal masks, windows, GQA (packed for decode rows), head_dim tails and
 * every layout, against the float64 oracle on the inputs as stored (tests/oracle.c), at the
 * tolerances of tests/tolerance.h. Subsets:
 *   cases      the fused path (the planner's kernel, or FA_CL_KERNEL_VARIANT; CTest also runs it
 *              with FA_CL_SPLITS and FA_CL_KV_CHUNK, so sinks meet the combine and the chunk merge)
 *   reference  fa_cl_reference_run on the same cases
 *   invalid    what bad modifiers get: a status and a message naming the field
 *   tiny N     case N of a tiny set, one per process (oclgrind)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "test_util.h"

static tu_tally mods_tally = {"modifiers", 0, 0};

typedef struct mod_case {
    tu_case c;
    float softcap; /* 0 = none */
    int alibi, sinks;
} mod_case;

/* ALiBi's slopes for H heads (the paper's geometric series 2^(-8 (h + 1) / H)); sinks in [-1, 3] */
static void per_head(const mod_case *mc, float *slopes, float *sinks, uint64_t seed)
{
    tu_rng r;
    tu_rng_seed(&r, seed ^ 0x5151u);
    for (int64_t h = 0; h < mc->c.Hq; h++) {
        slopes[h] = (float)pow(2.0, -8.0 * (double)(h + 1) / (double)mc->c.Hq);
        sinks[h] = (float)(-1.0 + 4.0 * tu_rng_uniform(&r));
    }
}

static void mod_name(const mod_case *mc, char *buf, size_t size)
{
    char c[256];
    tu_case_format(&mc->c, c, sizeof c);
    snprintf(buf, size, "%s softcap=%g%s%s", c, (double)mc->softcap, mc->alibi ? " alibi" : "", mc->sinks ? " sinks" : "");
}

/* One case through `reference` (fa_cl_reference_run) or the fused path; checked against the oracle. */
static void check_case(tu_tally *t, fa_cl_context *ctx, const mod_case *mc, uint64_t seed, int reference)
{
    char name[400];
    mod_name(mc, name, sizeof name);
    tu_problem p;
    if (tu_problem_init(&p, ctx, &mc->c, seed, 0) != 0) {
        tu_expect(t, 0, "%s: setup failed", name);
        return;
    }
    const size_t hq = (size_t)mc->c.Hq, no = (size_t)(mc->c.B * mc->c.Hq * mc->c.Sq * mc->c.D);
    float *slopes = (float *)calloc(hq, sizeof(float)), *sinks = (float *)calloc(hq, sizeof(float));
    double *ref_o = (double *)malloc(no * sizeof(double)), *ref_lse = (double *)malloc(p.lse_elems * sizeof(double));
    cl_mem slope_mem = NULL, sink_mem = NULL;
    if (!slopes || !sinks || !ref_o || !ref_lse) {
        tu_expect(t, 0, "%s: out of host memory", name);
        goto done;
    }
    per_head(mc, slopes, sinks, seed);
    const tu_mods mods = {mc->softcap, mc->alibi ? slopes : NULL, mc->sinks ? sinks : NULL};
    tu_attention_f64_mods(&p.c, &mods, p.x[0], p.x[1], p.x[2], ref_o, ref_lse);
    slope_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, hq * sizeof(float), slopes);
    sink_mem = tu_buffer(ctx, CL_MEM_READ_ONLY, hq * sizeof(float), sinks);
    if (!slope_mem || !sink_mem || tu_problem_poison(&p, ctx) != 0) {
        tu_expect(t, 0, "%s: buffers failed", name);
        goto done;
    }
    p.desc.softcap = mc->softcap;
    p.desc.alibi = mc->alibi;
    p.desc.sinks = mc->sinks;
    fa_cl_forward_args a;
    fa_cl_forward_args_init(&a);
    a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3], a.lse = p.lse_mem;
    a.alibi_slopes = mc->alibi ? slope_mem : NULL;
    a.sinks = mc->sinks ? sink_mem : NULL;
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    info.kernel = "reference";
    fa_cl_status st;
    if (reference) {
        st = fa_cl_reference_run(ctx, &p.desc, &a);
    } else {
        fa_cl_plan *plan = NULL;
        st = fa_cl_plan_create(ctx, &p.desc, &plan);
        if (st == FA_CL_ERROR_UNSUPPORTED && strstr(fa_cl_last_error(ctx), "not verified")) {
            /* the library refuses a path it knows to be wrong there (include/fa_cl.h) */
            printf("SKIP: %s: %s\n", name, fa_cl_last_error(ctx));
            goto done;
        }
        if (st == FA_CL_SUCCESS) {
            fa_cl_plan_get_info(plan, &info);
            st = fa_cl_plan_run(plan, &a);
        }
        fa_cl_plan_release(plan);
    }
    if (st != FA_CL_SUCCESS) {
        tu_expect(t, 0, "%s: %s: %.300s", name, fa_cl_status_string(st), fa_cl_last_error(ctx));
        goto done;
    }
    if (tu_problem_read(&p, ctx) != 0) {
        tu_expect(t, 0, "%s: read failed", name);
        goto done;
    }
    tu_result res;
    tu_problem_check(&p, ref_o, ref_lse, &res);
    char detail[400];
    tu_result_format(&res, &p, detail, sizeof detail);
    tu_expect(t, res.ok, "%s [%s %dx%d splits %d launches %d]: %s", name, info.kernel, info.block_q, info.block_kv,
              info.splits, info.launches, detail);
done:
    if (slope_mem)
        clReleaseMemObject(slope_mem);
    if (sink_mem)
        clReleaseMemObject(sink_mem);
    free(slopes);
    free(sinks);
    free(ref_o);
    free(ref_lse);
    tu_problem_free(&p);
}

/* Scores of a few units (inputs scaled by the softcap cases' 3x): the softcap bends them. */
static const mod_case all_cases[] = {
    /* each modifier alone, causal with GQA and a head_dim tail, f32 */
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 1, -1, -1, "CCCC", 0.9f, 1}, 5.0f, 0, 0},
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 1, 0},
    {{2, 4, 2, 37, 53, 40, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 0, 1},
    /* all three; windows (rows that see no key get the sink's LSE), f16, strided layouts */
    {{1, 3, 3, 64, 64, 64, FA_CL_F16, 0, 8, 4, "SPCS", 0.5f, 1}, 4.0f, 1, 1},
    {{2, 2, 1, 40, 24, 32, FA_CL_F16, 1, -1, -1, "CCCC", 0.0f, 1}, 2.0f, 1, 1},
    /* decode rows: GQA packing, split-KV (the combine adds the sink), bf16, d = 128 */
    {{2, 8, 2, 1, 300, 128, FA_CL_BF16, 0, -1, -1, "CCCC", 0.0f, 1}, 10.0f, 1, 1},
    {{3, 4, 1, 4, 129, 64, FA_CL_F32, 1, -1, -1, "PCCP", 0.0f, 1}, 0.0f, 0, 1},
    /* a window wider than the keys, softcap only, d = 16 */
    {{1, 2, 2, 17, 17, 16, FA_CL_F32, 0, 100, 100, "CCCC", 0.0f, 1}, 1.0f, 0, 0},
};

static int run_cases(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(all_cases); i++)
        check_case(&mods_tally, ctx, &all_cases[i], 100 + (uint64_t)i, 0);
    return 0;
}

static int run_reference(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < TU_COUNT(all_cases); i++)
        check_case(&mods_tally, ctx, &all_cases[i], 100 + (uint64_t)i, 1);
    return 0;
}

/* The tiny cases oclgrind runs (one per process). */
static int run_tiny(fa_cl_context *ctx, int argc, char **argv)
{
    static const mod_case tiny[] = {
        {{1, 2, 1, 9, 21, 8, FA_CL_F32, 1, -1, -1, "CCCC", 0.0f, 1}, 3.0f, 1, 1},
        {{2, 4, 2, 1, 40, 16, FA_CL_F16, 0, -1, -1, "CCCC", 0.0f, 1}, 0.0f, 1, 1},
    };
    const int only = argc > 0 ? atoi(argv[0]) : -1;
    for (int i = 0; i < TU_COUNT(tiny); i++)
        if (only < 0 || only == i)
            check_case(&mods_tally, ctx, &tiny[i], 7 + (uint64_t)i, 0);
    return 0;
}

/* what bad modifiers get */
static int run_invalid(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_tally *t = &mods_tally;
    const tu_case c = {1, 4, 2, 8, 8, 16, FA_CL_F32, 0, -1, -1, "CCCC", 0.0f, 1};
    tu_problem p;
    if (tu_problem_init(&p, ctx, &c, 1, 0) != 0)
        return 1;
    char msg[300];
    const float caps[3] = {-1.0f, NAN, INFINITY};
    for (int i = 0; i < 3; i++) {
        fa_cl_attention_desc d = p.desc;
        d.softcap = caps[i];
        fa_cl_status st = fa_cl_attention_desc_validate(&d, msg, sizeof msg);
        tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT && strstr(msg, "softcap"), "softcap %g: %s: %s",
                  (double)caps[i], fa_cl_status_string(st), msg);
    }
    float small[3] = {0.1f, 0.2f, 0.3f}; /* heads_q 4: one float short */
    cl_mem three = tu_buffer(ctx, CL_MEM_READ_ONLY, sizeof small, small);
    fa_cl_forward_args a;
    const struct { int alibi, sinks, give_alibi, give_sinks; fa_cl_status want; const char *says; } bad[] = {
        {1, 0, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "alibi_slopes"}, /* desc.alibi without a buffer */
        {0, 1, 0, 0, FA_CL_ERROR_INVALID_ARGUMENT, "sinks"},
        {0, 0, 1, 0, FA_CL_ERROR_INVALID_ARGUMENT, "desc.alibi"},   /* a buffer the desc does not ask for */
        {1, 0, 1, 0, FA_CL_ERROR_BUFFER_TOO_SMALL, "alibi_slopes"}, /* 3 floats for 4 heads */
        {0, 1, 0, 1, FA_CL_ERROR_BUFFER_TOO_SMALL, "sinks"},
    };
    for (int i = 0; i < TU_COUNT(bad) && three; i++) {
        fa_cl_attention_desc d = p.desc;
        d.alibi = bad[i].alibi;
        d.sinks = bad[i].sinks;
        fa_cl_forward_args_init(&a);
        a.q = p.mem[0], a.k = p.mem[1], a.v = p.mem[2], a.o = p.mem[3];
        a.alibi_slopes = bad[i].give_alibi ? three : NULL;
        a.sinks = bad[i].give_sinks ? three : NULL;
        fa_cl_status st = fa_cl_attention_run(ctx, &d, &a);
        tu_expect(t, st == bad[i].want && strstr(fa_cl_last_error(ctx), bad[i].says), "bad case %d: %s: %s", i,
                  fa_cl_status_string(st), fa_cl_last_error(ctx));
        st = fa_cl_reference_run(ctx, &d, &a);
        tu_expect(t, st == bad[i].want || st == FA_CL_ERROR_UNSUPPORTED, "bad case %d, the reference: %s: %s", i,
                  fa_cl_status_string(st), fa_cl_last_error(ctx));
    }
    /* the positional reference call has no slopes to take */
    fa_cl_attention_desc d = p.desc;
    d.alibi = 1;
    fa_cl_status st = fa_cl_reference_forward(ctx, &d, p.mem[0], p.mem[1], p.mem[2], p.mem[3], NULL, 0, NULL, NULL);
    tu_expect(t, st == FA_CL_ERROR_INVALID_ARGUMENT || st == FA_CL_ERROR_UNSUPPORTED,
              "fa_cl_reference_forward with desc.alibi: %s: %s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    if (three)
        clReleaseMemObject(three);
    tu_problem_free(&p);
    return 0;
}

int main(int argc, char **argv)
{
    const tu_subset subsets[] = {
        {"cases", run_cases}, {"reference", run_reference}, {"invalid", run_invalid}, {"tiny", run_tiny},
    };
    return tu_main(&mods_tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
