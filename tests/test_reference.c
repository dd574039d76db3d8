/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unfused CLBlast reference (fa_cl_reference_forward), subset clblast (the default):
 *  - meets the same bar as the fused kernel against the float64 reference, on a representative
 *    subset (every dtype, causal, windows, GQA, strides and offsets, LSE on and off);
 *  - the fused kernel meets that bar against it (the reference's output as |ref|);
 *  - a call whose score scratch cannot be allocated returns FA_CL_ERROR_OUT_OF_MEMORY, enqueues
 *    nothing, leaves the output alone, and the context stays usable;
 *  - invalid arguments get the same statuses and messages as the fused path;
 *  - (subset unsupported, builds with FA_CL_WITH_CLBLAST=OFF) the call is refused with
 *    FA_CL_ERROR_UNSUPPORTED and nothing else changes.
 */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define F32 FA_CL_F32
#define F16 FA_CL_F16
#define BF16 FA_CL_BF16

static tu_tally tally = {"reference", 0, 0};

static const tu_case cases[] = {
    /* B  Hq Hkv Sq    Sk   D    dtype causal wl  wr  layout scale lse */
    {2, 4, 2, 113, 203, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1},   /* GQA 2:1, causal */
    {1, 4, 1, 203, 113, 128, F16, 1, -1, -1, "SSSS", 0.0f, 1},  /* MQA, causal with rows that see nothing, BSHD */
    {2, 2, 2, 65, 17, 40, BF16, 0, 8, 8, "PPPP", 0.0f, 1},      /* window, padded strides + offsets */
    {1, 8, 1, 1, 239, 80, F32, 0, -1, -1, "QCSP", 0.0f, 1},     /* one query row, mixed layouts */
    {1, 2, 2, 64, 64, 256, F16, 1, 16, 0, "CCCC", 0.0f, 1},     /* causal + window, d = 256 */
    {1, 2, 1, 65, 90, 512, BF16, 1, -1, -1, "CCCC", 0.0f, 1},   /* d = 512 (the largest), causal, GQA */
    {1, 1, 1, 1000, 63, 96, BF16, 0, 0, -1, "HSSH", 0.0f, 1},   /* window (0,-1), Sq > Sk */
    {2, 2, 2, 17, 1, 1, F32, 0, -1, -1, "CCCC", 0.3f, 0},       /* d = 1, one key, scale given, no LSE */
    {2, 2, 2, 63, 1000, 8, F16, 0, 3, 5, "CCCC", 0.0f, 1},      /* narrow window over a long K */
};

static void line(int ok, const char *what, int idx, const tu_case *c, const char *detail)
{
    char cs[256];
    tu_case_format(c, cs, sizeof cs);
    tu_expect(&tally, ok, "%s #%d %s: %s", what, idx, cs, detail);
}

/* Run the reference on p, wait, read back. Returns the status; why filled on failure. */
static fa_cl_status run_reference(fa_cl_context *ctx, tu_problem *p, char *why, size_t n)
{
    cl_event done = NULL;
    fa_cl_status st = fa_cl_reference_forward(ctx, &p->desc, p->mem[0], p->mem[1], p->mem[2], p->mem[3],
                                              p->c.lse ? p->lse_mem : NULL, 0, NULL, &done);
    if (st != FA_CL_SUCCESS) {
        snprintf(why, n, "fa_cl_reference_forward: %s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        if (done)
            clReleaseEvent(done);
        return st;
    }
    if (done) {
        clWaitForEvents(1, &done);
        clReleaseEvent(done);
    } else {
        snprintf(why, n, "fa_cl_reference_forward returned no event although one was asked for");
        clFinish(fa_cl_context_queue(ctx));
        return FA_CL_ERROR_OPENCL;
    }
    tu_problem_read(p, ctx);
    return FA_CL_SUCCESS;
}

static void one_case(fa_cl_context *ctx, int idx, const tu_case *c)
{
    tu_problem p;
    char detail[1024] = "", why[512] = "";
    if (tu_problem_init(&p, ctx, c, 500 + (uint64_t)idx, 1) != 0) {
        line(0, "setup", idx, c, "failed");
        return;
    }
    const double t0 = tu_now_ms();
    fa_cl_status st = run_reference(ctx, &p, why, sizeof why);
    if (st != FA_CL_SUCCESS) {
        line(0, "reference vs float64", idx, c, why);
        line(0, "fused vs reference", idx, c, "skipped: no reference output");
        tu_problem_free(&p);
        return;
    }
    tu_result r;
    tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
    tu_result_format(&r, &p, detail, sizeof detail);
    snprintf(why, sizeof why, " (%.0f ms)", tu_now_ms() - t0);
    strncat(detail, why, sizeof detail - strlen(detail) - 1);
    line(r.ok, "reference vs float64", idx, c, detail);

    /* the reference's output becomes |ref| for the fused kernel */
    const size_t no = (size_t)(c->B * c->Hq * c->Sq * c->D);
    double *ro = (double *)malloc(no * sizeof(double)), *rl = (double *)malloc(p.lse_elems * sizeof(double));
    tu_problem_output(&p, ro, rl);
    const double *mask_lse = c->lse ? rl : p.ref_lse; /* which rows see no key */

    tu_problem_poison(&p, ctx);
    fa_cl_plan *plan = NULL;
    st = fa_cl_plan_create(ctx, &p.desc, &plan);
    if (st == FA_CL_SUCCESS)
        st = fa_cl_plan_forward(plan, p.mem[0], p.mem[1], p.mem[2], p.mem[3], c->lse ? p.lse_mem : NULL, 0, NULL,
                                NULL);
    fa_cl_plan_release(plan);
    if (st != FA_CL_SUCCESS) {
        snprintf(detail, sizeof detail, "fused: %s: %.300s", fa_cl_status_string(st), fa_cl_last_error(ctx));
        line(0, "fused vs reference", idx, c, detail);
    } else {
        clFinish(fa_cl_context_queue(ctx));
        tu_problem_read(&p, ctx);
        tu_problem_check(&p, ro, mask_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
        line(r.ok, "fused vs reference", idx, c, detail);
    }

    const size_t scratch = fa_cl_reference_scratch_bytes(ctx, &p.desc);
    const size_t one_head = (size_t)c->Sq * (size_t)c->Sk * 4;
    snprintf(detail, sizeof detail, "fa_cl_reference_scratch_bytes = %zu (one head's scores: %zu)", scratch, one_head);
    line(scratch >= one_head, "scratch", idx, c, detail);
    free(ro);
    free(rl);
    tu_problem_free(&p);
}

/* Are o and lse all sentinel? */
static int untouched(fa_cl_context *ctx, tu_problem *p)
{
    clFinish(fa_cl_context_queue(ctx));
    if (tu_problem_read(p, ctx) != 0)
        return 0;
    for (size_t i = 0; i < p->t[3].elems; i++)
        if (tu_load_bits(p->c.dtype, p->t[3].img, i) != tu_sentinel_bits(p->c.dtype))
            return 0;
    if (p->lse_mem)
        for (size_t i = 0; i < p->lse_elems + p->lse_slack; i++)
            if (tu_load_bits(FA_CL_F32, p->lse_img, i) != tu_sentinel_bits(FA_CL_F32))
                return 0;
    return 1;
}

static void expect_fail(fa_cl_context *ctx, tu_problem *p, const char *what, fa_cl_status got, fa_cl_status want,
                        const char *msg, const char *word, cl_event done)
{
    int out_ok = p ? untouched(ctx, p) : 1;
    int ok = got == want && msg && msg[0] && strstr(msg, word) && !done && out_ok;
    tu_expect(&tally, ok, "%-44s -> %s (want %s)%s%s msg: \"%.300s\" (must name \"%s\")", what,
              fa_cl_status_string(got), fa_cl_status_string(want), done ? " [an event came back]" : "",
              out_ok ? "" : " [output changed]", msg ? msg : "(null)", word);
    if (done)
        clReleaseEvent(done);
}

static void out_of_memory(fa_cl_context *ctx)
{
    /* B=1, H=1, Sq=Sk=200000, f32: 200000^2 * 4 bytes = 160 GB of scores for one head */
    const tu_case big = {1, 1, 1, 200000, 200000, 8, F32, 0, -1, -1, "CCCC", 0.0f, 1};
    tu_problem p;
    if (tu_problem_init(&p, ctx, &big, 3, 0) != 0) {
        tu_expect(&tally, 0, "out-of-memory case: setup failed");
        return;
    }
    size_t scratch = fa_cl_reference_scratch_bytes(ctx, &p.desc);
    printf("fa_cl_reference_scratch_bytes(200000 x 200000) = %zu\n", scratch);
    cl_event done = NULL;
    fa_cl_status st = fa_cl_reference_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0,
                                              NULL, &done);
    expect_fail(ctx, &p, "reference, 160 GB of scratch for one head", st, FA_CL_ERROR_OUT_OF_MEMORY,
                fa_cl_last_error(ctx), "", done);
    tu_problem_free(&p);

    /* the context stays usable: a small call succeeds and is right */
    const tu_case small = {1, 2, 2, 33, 47, 64, F32, 1, -1, -1, "CCCC", 0.0f, 1};
    if (tu_problem_init(&p, ctx, &small, 4, 1) != 0)
        return;
    char why[512] = "", detail[1024] = "";
    st = run_reference(ctx, &p, why, sizeof why);
    if (st == FA_CL_SUCCESS) {
        tu_result r;
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
        tu_expect(&tally, r.ok, "a small reference call after the failed one: %s", detail);
    } else {
        tu_expect(&tally, 0, "a small reference call after the failed one: %s", why);
    }
    tu_problem_free(&p);
}

static void invalid(fa_cl_context *ctx)
{
    const tu_case c = {2, 4, 2, 33, 47, 64, F16, 0, -1, -1, "CCCC", 0.0f, 1};
    tu_problem p;
    if (tu_problem_init(&p, ctx, &c, 8, 0) != 0)
        return;
    for (int t = 0; t < 3; t++) { /* read-write inputs: an overlap must be reported as one */
        clReleaseMemObject(p.mem[t]);
        p.mem[t] = tu_buffer(ctx, CL_MEM_READ_WRITE, tu_tensor_bytes(&p.t[t]), p.t[t].img);
    }
    const fa_cl_status INV = FA_CL_ERROR_INVALID_ARGUMENT;
    cl_event done = NULL;
    fa_cl_status st = fa_cl_reference_forward(NULL, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0,
                                              NULL, &done);
    expect_fail(ctx, &p, "reference(ctx NULL)", st, INV, fa_cl_last_error(NULL), "ctx", done);
    done = NULL;
    st = fa_cl_reference_forward(ctx, NULL, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
    expect_fail(ctx, &p, "reference(desc NULL)", st, INV, fa_cl_last_error(ctx), "desc", done);
    done = NULL;
    st = fa_cl_reference_forward(ctx, &p.desc, p.mem[0], NULL, p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
    expect_fail(ctx, &p, "reference(k NULL)", st, INV, fa_cl_last_error(ctx), "buffer k", done);
    done = NULL;
    st = fa_cl_reference_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[0], p.lse_mem, 0, NULL, &done);
    expect_fail(ctx, &p, "reference(o is q's buffer)", st, INV, fa_cl_last_error(ctx), "overlaps", done);
    done = NULL;
    st = fa_cl_reference_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 1, NULL, &done);
    expect_fail(ctx, &p, "reference(num_wait 1, wait NULL)", st, INV, fa_cl_last_error(ctx), "num_wait", done);
    {
        fa_cl_attention_desc d = p.desc;
        d.heads_kv = 3;
        done = NULL;
        st = fa_cl_reference_forward(ctx, &d, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
        expect_fail(ctx, &p, "reference(heads_kv 3)", st, INV, fa_cl_last_error(ctx), "heads_kv", done);
        d = p.desc;
        d.window_left = -5;
        done = NULL;
        st = fa_cl_reference_forward(ctx, &d, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
        expect_fail(ctx, &p, "reference(window_left -5)", st, INV, fa_cl_last_error(ctx), "window_left", done);
        d = p.desc;
        d.v_offset = 1;
        done = NULL;
        st = fa_cl_reference_forward(ctx, &d, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
        expect_fail(ctx, &p, "reference(v_offset 1, exact buffer)", st, FA_CL_ERROR_BUFFER_TOO_SMALL,
                    fa_cl_last_error(ctx), "buffer v", done);
        d = p.desc;
        d.batch = 0;
        size_t s = fa_cl_reference_scratch_bytes(ctx, &d);
        tu_expect(&tally, s == 0, "fa_cl_reference_scratch_bytes on an invalid descriptor = %zu (want 0)", s);
    }
    tu_problem_free(&p);
}

/* Built with FA_CL_WITH_CLBLAST=OFF: the reference refuses with UNSUPPORTED and a message saying why,
 * enqueues nothing, leaves the output alone and needs no scratch; the fused path still works. */
static int subset_unsupported(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    tu_problem p;
    if (tu_problem_init(&p, ctx, &cases[0], 5, 1) != 0) {
        tu_expect(&tally, 0, "problem setup");
        return 0;
    }
    cl_event done = NULL;
    fa_cl_status st =
        fa_cl_reference_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, &done);
    const char *msg = fa_cl_last_error(ctx);
    tu_problem_read(&p, ctx);
    tu_result r;
    tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
    tu_expect(&tally, st == FA_CL_ERROR_UNSUPPORTED && strstr(msg, "CLBlast") && done == NULL && r.unwritten > 0 &&
                          r.clobbered == 0,
              "reference without CLBlast: %s (\"%s\"), no event, output untouched", fa_cl_status_string(st), msg);
    size_t s = fa_cl_reference_scratch_bytes(ctx, &p.desc);
    tu_expect(&tally, s == 0, "fa_cl_reference_scratch_bytes without CLBlast = %zu (want 0)", s);
    st = fa_cl_attention_forward(ctx, &p.desc, p.mem[0], p.mem[1], p.mem[2], p.mem[3], p.lse_mem, 0, NULL, NULL);
    char detail[600] = "";
    if (st == FA_CL_SUCCESS && tu_problem_read(&p, ctx) == 0) {
        tu_problem_check(&p, p.ref_o, p.ref_lse, &r);
        tu_result_format(&r, &p, detail, sizeof detail);
    }
    tu_expect(&tally, st == FA_CL_SUCCESS && r.ok, "the fused path without CLBlast: %s %s", fa_cl_status_string(st),
              detail);
    tu_problem_free(&p);
    return 0;
}

/* Built with CLBlast: the cases, a scratch that cannot be allocated, invalid arguments. */
static int subset_clblast(fa_cl_context *ctx, int argc, char **argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        one_case(ctx, i, &cases[i]);
    out_of_memory(ctx);
    invalid(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    static const tu_subset subsets[] = {{"clblast", subset_clblast}, {"unsupported", subset_unsupported}};
    return tu_main(&tally, argc, argv, subsets, TU_COUNT(subsets), tu_context, TU_TIMED);
}
