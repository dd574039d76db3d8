/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Every kernel of the library on tiny shapes, checked against float64: small enough to run under
 * Oclgrind (label oclgrind: tests/oclgrind_run.sh runs this binary as
 * `oclgrind --data-races --uninitialized --check-api ...` and fails on any report), and cheap on
 * any other device (label device).
 *
 *   test_kernels fused      the fused forward (whichever variant FA_CL_KERNEL_VARIANT / the planner
 *                           picks, tiles from FA_CL_TUNE tile / FA_CL_LOCAL_MEM_BYTES): tails on both
 *                           sides, causal with rows that see nothing, windows, GQA/MQA, f32/f16/bf16,
 *                           head_dim % 4 != 0, strided views with offsets, LSE on and off
 *   test_kernels reference  fa_cl_reference_forward: the gather / softmax / scatter kernels and
 *                           CLBlast's GEMM kernels, on the same kind of shapes
 *
 *   test_kernels fused_fresh  the fused cases, each on a fresh context (below): the runs with long
 *                           rows' chunks of keys forced (FA_CL_TUNE kv_chunk), whose plans write and
 *                           re-read a scratch buffer
 *
 * The reference subset takes a fresh context for every case. With one context, Oclgrind 21.10's
 * uninitialized-value checker reports the score matrix CLBlast's first GEMM writes as uninitialised
 * from the second fa_cl_reference_forward call on (rows past the first 8 of its output), although
 * the outputs are right (checked against float64 with different data and shapes each time) and
 * each call alone is clean; CLBlast alone, called repeatedly on one context, is clean too. Not
 * explained yet (a fresh context per call is clean, so per-context state is involved: CLBlast's
 * program cache or Oclgrind's shadow memory are the suspects). The fused kernels show the same with
 * a plan-owned scratch buffer: the second run of a case on one context reports the scratch the
 * kernel itself wrote as uninitialised, and not when the first plan's scratch is never freed (so
 * Oclgrind's shadow of reused device memory, not the kernel: a fresh context per case is clean).
 *
 * Shapes are chosen so that with FA_CL_TUNE=tile=8x8.. every kernel runs several query blocks and several
 * K/V blocks (the reused K/V buffer and its barriers), including partially visible blocks.
 */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#define F32 FA_CL_F32
#define F16 FA_CL_F16
#define BF16 FA_CL_BF16

static tu_tally tally = {"kernels", 0, 0};

static const tu_case fused_cases[] = {
    /* B  Hq Hkv Sq  Sk  D   dtype causal wl  wr  layout  scale lse */
    {1, 2, 1, 13, 21, 8, F32, 1, -1, -1, NULL, 0.0f, 1},   /* GQA 2:1, causal, tails on both sides */
    {2, 1, 1, 9, 19, 5, F16, 0, 3, 2, "PPPP", 0.0f, 1},    /* window, d % 4 = 1, padded strides + offsets */
    {1, 4, 1, 17, 9, 12, BF16, 1, -1, -1, "SSSS", 0.0f, 1}, /* MQA, causal, Sq > Sk: 8 rows see nothing, BSHD */
    {1, 1, 1, 1, 11, 7, F32, 0, -1, -1, NULL, 0.5f, 0},    /* one query row, d % 4 = 3, no LSE */
    {1, 2, 2, 18, 18, 16, F16, 1, 4, -1, "QCSP", 0.0f, 1}, /* causal + window, mixed layouts */
    {2, 4, 2, 20, 45, 16, F32, 0, -1, -1, NULL, 0.0f, 1},  /* batch 2, GQA 2:1: two K/V blocks at any tile */
    {1, 2, 2, 24, 40, 12, BF16, 1, 16, -1, "PPPP", 0.0f, 1}, /* causal window (16, -1), strided bf16 */
    {1, 1, 1, 20, 40, 16, F16, 1, -1, -1, NULL, 0.0f, 1},  /* contiguous f16, 16-byte rows (tensor-core async copies) */
    {1, 1, 1, 65, 20, 12, F16, 1, -1, -1, "PPPP", 0.0f, 1}, /* d % 8 = 4, 65 rows: tensor-core plans pad the rows first */
};

static const tu_case reference_cases[] = {
    {1, 2, 1, 13, 21, 8, F32, 1, -1, -1, NULL, 0.0f, 1},
    {2, 1, 1, 9, 19, 5, F16, 0, 3, 2, "PPPP", 0.0f, 1},
    {1, 4, 1, 17, 9, 12, BF16, 1, -1, -1, "SSSS", 0.0f, 0},
};

static void one(fa_cl_context *ctx, const char *what, int idx, const tu_case *c, int reference)
{
    tu_problem p;
    char detail[1024] = "", cs[256];
    tu_case_format(c, cs, sizeof cs);
    const double t0 = tu_now_ms();
    if (tu_problem_init(&p, ctx, c, 31u + (uint64_t)idx, 1) != 0) {
        tu_expect(&tally, 0, "%s #%d %s: setup failed", what, idx, cs);
        return;
    }
    cl_mem lse = c->lse ? p.lse_mem : NULL;
    fa_cl_status st;
    fa_cl_plan_info info;
    memset(&info, 0, sizeof info);
    if (reference) {
        st = fa_cl_reference_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], lse, 0, NULL, NULL);
    } else {
        fa_cl_plan *plan = NULL;
        st = fa_cl_plan_create(ctx, &p.desc, &plan);
        if (st == FA_CL_SUCCESS) {
            fa_cl_plan_get_info(plan, &info);
            st = fa_cl_plan_forward(plan, p.mem[0], p.mem[1], p.mem[2], p.mem[3], lse, 0, NULL, NULL);
        }
        fa_cl_plan_release(plan);
    }
    int ok = st == FA_CL_SUCCESS;
    if (!ok) {
        snprintf(detail, sizeof detail, "%s: %.400s", fa_cl_status_string(st), fa_cl_last_error(ctx));
    } else if (clFinish(fa_cl_context_queue(ctx)) != CL_SUCCESS || tu_problem_read(&p, ctx) != 0) {
        ok = 0;
        snprintf(detail, sizeof detail, "clFinish / read back failed");
    } else {
        tu_result r;
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
        ok = r.ok;
    }
    if (reference)
        tu_expect(&tally, ok, "%s #%d %s (%.0f ms): %s", what, idx, cs, tu_now_ms() - t0, detail);
    else
        tu_expect(&tally, ok, "%s #%d %s [%s %dx%d wg %d] (%.0f ms): %s", what, idx, cs,
                  info.kernel ? info.kernel : "-", info.block_q, info.block_kv, info.work_group_size,
                  tu_now_ms() - t0, detail);
    tu_problem_free(&p);
}

/* Runs case i, on a fresh context each time when asked (see the header comment). */
static int run_one(fa_cl_context **ctx, const char *subset, int i, const tu_case *c, int reference, int fresh)
{
    if (fresh && i > 0) {
        fa_cl_context_release(*ctx);
        *ctx = NULL;
        int rc = tu_context(ctx);
        if (rc != 0)
            return rc;
    }
    one(*ctx, subset, i, c, reference);
    return 0;
}

/* The cases argv names (their indices, in that order: debugging), or all of them, on a context of
 * its own (tu_main opens none here: run_one replaces it for every case when fresh). */
static int run_cases(const char *subset, const tu_case *cases, int n, int reference, int fresh, int argc,
                     char **argv)
{
    fa_cl_context *ctx = NULL;
    int rc = tu_context(&ctx);
    for (int a = 0; a < argc && rc == 0; a++) {
        int i = atoi(argv[a]);
        if (i >= 0 && i < n)
            rc = run_one(&ctx, subset, a, &cases[i], reference, fresh);
    }
    for (int i = 0; argc == 0 && i < n && rc == 0; i++)
        rc = run_one(&ctx, subset, i, &cases[i], reference, fresh);
    fa_cl_context_release(ctx);
    return rc;
}

static int subset_fused(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused;
    return run_cases("fused", fused_cases, TU_COUNT(fused_cases), 0, 0, argc, argv);
}

static int subset_fused_fresh(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused;
    return run_cases("fused_fresh", fused_cases, TU_COUNT(fused_cases), 0, 1, argc, argv);
}

static int subset_reference(fa_cl_context *unused, int argc, char **argv)
{
    (void)unused;
    return run_cases("reference", reference_cases, TU_COUNT(reference_cases), 1, 1, argc, argv);
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {
        {"fused", subset_fused}, {"fused_fresh", subset_fused_fresh}, {"reference", subset_reference},
    };
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), NULL, 0);
}
